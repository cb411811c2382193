"""Memory dynamics: notes that decay, get reinforced, pinned, promoted, archived, linked.

Everything here reads and writes the vault's frontmatter through the write-back layer
(:mod:`vaultmem.memory.writeback`); the formulas live in :mod:`vaultmem.scores`.

A feature layer: it may import the indexer, retrieval, the stores and models and core
values; never :mod:`vaultmem.agent`, the API or a front end.
"""
