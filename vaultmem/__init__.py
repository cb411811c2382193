"""vaultmem: a memory toolkit for AI agents over an Obsidian markdown vault."""

__version__ = "0.1.0"
