"""Passwords by their shape alone: a word that mixes cases, digits and a symbol.

People give passwords in words no table lists ("pasa: X", a loanword in a script of its
own, a chat abbreviation), and tools print them with nothing around them. What a person
or a generator makes for a password still has a shape that ordinary text seldom has: at
least eight characters holding a lower-case letter, a capital, a digit and a symbol
(``Tundra#Raven62``, ``G4*5#9m0P#cO!``). :func:`shape_spans` redacts such a word
wherever it stands, unless it is something else with that shape:

- a path, a URL, an address (``admin@Web01``), a name assigned a value
  (``retryCount=3``), a reference (``$Env1``, ``%AppData%``), URL-encoded text;
- code: an operator (``->``, ``::``, ``+=``, ``&&``), emphasis (``**Note2:**``).

The rule was measured on ordinary text that holds a lot of syntax: the man pages of a
Linux distribution and a documentation vault (``benchmarks/bench_redaction_shape.py``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

__all__ = ["shape_spans"]

Span = tuple[int, int]

# A word: ASCII up to a blank, a quote, a bracket, a comma or a semicolon (a password
# typed inside text of another script stands apart: パスはGJ%Cu3iCH%i2cなので).
_WORD = re.compile(r"[!#-&*-+\--:=?-Z\\^_a-z~]{8,64}")
_SYMBOLS = frozenset("!#$%^&*?~=@")
_OPERATORS = re.compile(
    r"->|::|=>|==|!=|&&|\+\+|[-+*/%&|^]=|<=|>=|\?\.|\?\?|\*\*|__|\.\.|@@|##|A-Z|a-z|0-9"
)
_NOT_A_PASSWORD = re.compile(
    r"[/\\]|://"  # a path, a URL
    r"|^[\w.-]{2,}@[\w.-]+$|@[\w-]+\.[A-Za-z]"  # user@host, an address
    r"|^[-^]"  # a flag (--size=1K), a pattern (^A-Z)
    r"|^[A-Za-z_][\w.-]*=(?!=)"  # name=value
    r"|^[$%@#][A-Za-z_{(]|\$[{(]"  # $VAR, %VAR%, @decorator, #anchor, ${x}, $(cmd)
    r"|%[0-9A-Fa-f]{2}|%[?%]|%\w*\.%"  # URL-encoded, a format string (%N.%h, %?%p)
    r"|0x[0-9A-Fa-f]|[&?]\w+=|#L\d"  # a hex number, a query string, a line anchor
    r"|^[=_#@]|:.*:.*:"  # a word that starts as a name's part; fields between colons
)
# A format directive (%s, %-5d, %.2f), a colour (#FF0000)
_DIRECTIVE = re.compile(r"%[-+ #0]*\d*(?:\.\d*)?[sdfrxXi](?![A-Za-z0-9])|#[0-9A-Fa-f]{6}\b")
# Words with one kind of symbol that are names: api.v1#Message, Main$1.run, 22.04~1 (a '.'
# and one symbol), RFC6749#Token, Class#method (a '#' before a name), Integer*-1, .*Ultra-5,
# numpy._64Bit* (a '*' at an edge or in a formula), Super-Duper-XL500! (a '!' that ends
# words joined by '-'), Stephen~2 (a short name).
_ONE_SYMBOL = {
    "#": re.compile(r"#(?:[A-Z][a-z]+)+$|#[a-z]{4,}$|#.*[_-]|[_-].*#|^[A-Z]+\d*#"),
    "*": re.compile(r"^\*|\*-?\d{0,2}$|[-+]"),
    "!": re.compile(r"-.*!$"),
    "~": re.compile(r"~\d+$"),
}
_EDGES = ".,:;)"


def shape_spans(text: str) -> Iterator[Span]:
    """The words of ``text`` shaped like a password (see the module's docstring)."""
    if not any(c in text for c in _SYMBOLS):
        return
    for m in _WORD.finditer(text):
        word = m.group()
        start, end = m.start(), m.end()
        while end > start and text[end - 1] in _EDGES:
            end -= 1
        while start < end and text[start] in "*&":  # a pointer, a reference
            start += 1
        word = text[start:end]
        if len(word) >= 8 and _shaped(word):
            yield start, end


def _shaped(word: str) -> bool:
    """Whether ``word`` holds a lower-case letter, a capital, a digit and a symbol, and
    is not one of the things with that shape that are no password."""
    if not any(c in _SYMBOLS and c != "=" for c in word):
        return False  # '=' alone: an assignment, base64 padding
    if not (
        any(c.islower() for c in word)
        and any(c.isupper() for c in word)
        and any(c.isdigit() for c in word)
    ):
        return False
    if not word.isascii() or _OPERATORS.search(word) or _NOT_A_PASSWORD.search(word):
        return False
    if _DIRECTIVE.search(word):
        return False
    kinds = {c for c in word if c in _SYMBOLS}
    if len(kinds) == 1:
        (kind,) = kinds
        rule = _ONE_SYMBOL.get(kind)
        if ("." in word and kind in "#$~!*") or (rule is not None and rule.search(word)):
            return False
    return sum(c.isalnum() for c in word) >= 6
