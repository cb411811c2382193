"""What vaultmem reads out of a markdown body: headings, wikilinks and inline tags.

Headings and code regions are markdown-it-py's block parser's (the ``zero`` preset with
ATX and setext headings, fences and indented code), so a ``# comment`` in a fenced shell
snippet is not a heading and a ``[[link]]`` inside code is not a link. A line scanner
(:func:`_scanned_blocks`) finds them as that parser does for any body without a tab in a
line's indent, a carriage return or a NUL (the parser's rules differ there in ways not
worth copying); such bodies go to markdown-it itself. The scanner was a fifth of a cold
index's CPU as markdown-it, and tests compare the two on generated bodies.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from markdown_it import MarkdownIt

WIKILINK_RE = re.compile(
    r"(?P<embed>!?)\[\[(?P<target>[^\[\]|#\n^]*)"
    r"(?:[#^](?P<heading>[^\[\]|\n]*))?(?:\|(?P<alias>[^\[\]\n]*))?\]\]"
)
# Obsidian tags: '#' after whitespace or line start, letters/digits/_/-//, not all digits.
TAG_RE = re.compile(r"(?<![^\s(])#(?P<tag>[\w][\w\-/]*)")
INLINE_CODE_RE = re.compile(r"(`+)(?:(?!\1).)+?\1")


@dataclass(frozen=True)
class Heading:
    """A markdown heading; ``line`` is 1-based within the body."""

    level: int
    text: str
    line: int


@dataclass(frozen=True)
class WikiLink:
    """An Obsidian ``[[target#heading|alias]]`` (or ``![[embed]]``) link."""

    target: str
    heading: str | None
    alias: str | None
    embed: bool
    line: int


@dataclass(frozen=True)
class Outline:
    """The structure of a body: headings, links, inline tags, and lines inside code."""

    headings: tuple[Heading, ...]
    links: tuple[WikiLink, ...]
    tags: tuple[str, ...]
    code_lines: frozenset[int]


@lru_cache(maxsize=1)
def _block_parser() -> MarkdownIt:
    from markdown_it import MarkdownIt

    md = MarkdownIt("zero").enable(["heading", "lheading", "fence", "code"])
    md.core.ruler.disable(["inline", "text_join"], ignoreInvalid=True)
    return md


def normalise_tag(tag: str) -> str:
    """Tags compare case-insensitively and without the leading ``#`` (as in Obsidian)."""
    return tag.strip().lstrip("#").strip().lower()


def outline(body: str) -> Outline:
    """Parse ``body`` once and return its headings, wikilinks, inline tags and code lines.

    Example:
        >>> outline("# Title\\n\\nSee [[Other|that]] #infra/k8s\\n").links[0].target
        'Other'
    """
    blocks = _scanned_blocks(body)
    headings, code = blocks if blocks is not None else _parsed_blocks(body)
    links: list[WikiLink] = []
    tags: dict[str, None] = {}
    heading_lines = {h.line for h in headings}
    for number, line in enumerate(body.splitlines(), start=1):
        if number in code or ("[[" not in line and "#" not in line):
            continue
        if "`" in line:
            line = INLINE_CODE_RE.sub(" ", line)
        for m in WIKILINK_RE.finditer(line):
            target = m.group("target").strip()
            if not target:
                continue
            heading = m.group("heading")
            alias = m.group("alias")
            links.append(
                WikiLink(
                    target=target,
                    heading=heading.strip() if heading else None,
                    alias=alias.strip() if alias else None,
                    embed=bool(m.group("embed")),
                    line=number,
                )
            )
        if "#" in line:
            if number in heading_lines:
                # An ATX heading's own '#' marks are not a tag; tags after its text are.
                line = line.lstrip().lstrip("#")
            _collect_tags(line, tags)
    return Outline(tuple(headings), tuple(links), tuple(tags), frozenset(code))


def _parsed_blocks(body: str) -> tuple[list[Heading], set[int]]:
    """Headings and the 1-based lines inside code, from markdown-it's block parser."""
    tokens = _block_parser().parse(body)
    headings: list[Heading] = []
    code: set[int] = set()
    for i, tok in enumerate(tokens):
        if tok.map is None:
            continue
        if tok.type == "heading_open":
            text = tokens[i + 1].content.strip() if i + 1 < len(tokens) else ""
            headings.append(Heading(int(tok.tag[1:]), text, tok.map[0] + 1))
        elif tok.type in ("fence", "code_block"):
            code.update(range(tok.map[0] + 1, tok.map[1] + 1))
    return headings, code


_ATX_RE = re.compile(r" {0,3}(#{1,6})(?:[ \t]|$)")
_FENCE_RE = re.compile(r" {0,3}(`{3,}|~{3,})")
_UNDERLINE_RE = re.compile(r" {0,3}(=+|-+)[ \t]*$")


def _lines(body: str) -> list[str] | None:
    """The parser's lines, or None where the scanner would not be exact."""
    if "\r" in body or "\0" in body or ("\t" in body and re.search(r"(?m)^ *\t", body)):
        return None
    lines = body.split("\n")
    if lines and not lines[-1].strip(" \t"):
        lines.pop()  # "" after a final newline; a last line of blanks is no line either
    return lines


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _blank(line: str) -> bool:
    return not line.strip(" \t")


def _scanned_blocks(body: str) -> tuple[list[Heading], set[int]] | None:
    """What :func:`_parsed_blocks` gives, from a scan of the lines (None: not exact here).

    Blocks as the parser's rules take them, in its order: indented code, a fence, an ATX
    heading, then a paragraph, which is a setext heading when its run ends at an
    underline.
    """
    lines = _lines(body)
    if lines is None:
        return None
    headings: list[Heading] = []
    code: set[int] = set()
    n, i = len(lines), 0
    while i < n:
        line = lines[i]
        if _blank(line):
            i += 1
            continue
        if _indent(line) >= 4:
            end = _code_end(lines, i)
        elif (fence := _fence(line)) is not None:
            end = _fence_end(lines, i, *fence)
        elif atx := _ATX_RE.match(line):
            headings.append(Heading(len(atx.group(1)), _atx_text(line, atx.end(1)), i + 1))
            i += 1
            continue
        else:
            i = _paragraph(lines, i, headings)
            continue
        code.update(range(i + 1, end + 1))
        i = end
    return headings, code


def _code_end(lines: list[str], start: int) -> int:
    """The line after an indented code block: its last indented line, blank lines between."""
    last = j = start + 1
    while j < len(lines):
        if _blank(lines[j]):
            j += 1
        elif _indent(lines[j]) >= 4:
            j += 1
            last = j
        else:
            break
    return last


def _fence(line: str) -> tuple[str, int] | None:
    """(marker, length) of an opening fence; a backtick fence's info may hold no backtick."""
    m = _FENCE_RE.match(line)
    if m is None or (m.group(1)[0] == "`" and "`" in line[m.end() :]):
        return None
    return m.group(1)[0], len(m.group(1))


def _fence_end(lines: list[str], start: int, marker: str, length: int) -> int:
    """The line after a fence: its closing line, or the end of the body when unclosed."""
    for j in range(start + 1, len(lines)):
        text = lines[j].lstrip(" ")
        if len(lines[j]) - len(text) >= 4 or not text.startswith(marker):
            continue
        rest = text.lstrip(marker)
        if len(text) - len(rest) >= length and not rest.strip(" \t"):
            return j + 1
    return len(lines)


def _atx_text(line: str, start: int) -> str:
    """An ATX heading's text: a closing run of ``#`` after a space is not part of it."""
    end = len(line.rstrip(" \t"))
    end = max(end, start)
    hashes = len(line[start:end].rstrip("#"))
    if hashes > 0 and line[start + hashes - 1] in " \t":
        end = start + hashes
    return line[start:end].strip()


def _interrupts(line: str) -> bool:
    """A line that ends a paragraph without a blank line: a fence or an ATX heading."""
    return _fence(line) is not None or _ATX_RE.match(line) is not None


def _paragraph(lines: list[str], start: int, headings: list[Heading]) -> int:
    """Take the paragraph at ``start`` (a setext heading if an underline ends its run)."""
    j = start + 1
    while j < len(lines) and not _blank(lines[j]):
        line = lines[j]
        if _indent(line) <= 3:
            underline = _UNDERLINE_RE.match(line)
            if underline:
                level = 1 if underline.group(1)[0] == "=" else 2
                text = "\n".join(lines[start:j]).strip()
                headings.append(Heading(level, text, start + 1))
                return j + 1
            if _interrupts(line):
                return j
        j += 1
    return j


def _collect_tags(line: str, into: dict[str, None]) -> None:
    for m in TAG_RE.finditer(line):
        tag = m.group("tag").rstrip("/-")
        if tag and not tag.isdigit():
            into.setdefault(normalise_tag(tag), None)


def expand_tag(tag: str) -> list[str]:
    """A nested tag and its parents: ``a/b/c`` → ``a``, ``a/b``, ``a/b/c`` (Obsidian search)."""
    parts = normalise_tag(tag).split("/")
    return ["/".join(parts[: i + 1]) for i in range(len(parts)) if parts[i]]
