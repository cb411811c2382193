"""Memory dynamics: notes that decay, get reinforced, pinned, promoted, archived, linked.

Everything here reads and writes the vault's frontmatter through the write-back layer
(:mod:`vaultmem.memory.writeback`); the formulas live in :mod:`vaultmem.scores`.
"""
