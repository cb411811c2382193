"""Merging a note that two clones of the vault changed: git's merge driver for notes.

:mod:`.rules` merges vaultmem's own frontmatter keys by what they mean (the one table of
per-key semantics); :mod:`.driver` merges a whole note (the owned keys by those rules,
every other byte by git's three-way text merge); :mod:`.registration` wires the driver
into a repository (``.gitattributes`` and the clone's config) and checks that it is.
Nothing is imported here, so the frontmatter layer can use :mod:`vaultmem.conflict_markers`
without loading the rules.
"""
