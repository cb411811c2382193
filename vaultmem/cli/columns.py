"""Columns a terminal lines up: text measured in the cells it takes, not in characters.

A CJK character takes two cells of a terminal and a combining accent none, so padding
by ``len`` misaligns every row holding one (``review``, ``vaults``).
"""

from __future__ import annotations

import unicodedata


def cells(text: str) -> int:
    """The terminal cells ``text`` takes: 2 for wide and full-width characters, 0 for
    combining marks and zero-width characters, 1 for the rest.

    Example:
        >>> cells("渡辺.md"), cells("cafe\\u0301")
        (7, 4)
    """
    total = 0
    for char in text:
        if unicodedata.combining(char) or unicodedata.category(char) in ("Mn", "Me", "Cf"):
            continue
        total += 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1
    return total


def left(text: str, width: int) -> str:
    """``text`` padded with spaces to ``width`` cells (as ``str.ljust`` pads characters)."""
    return text + " " * max(width - cells(text), 0)
