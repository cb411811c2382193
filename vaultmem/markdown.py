"""What vaultmem reads out of a markdown body: headings, wikilinks and inline tags.

Headings and code regions come from markdown-it-py's block parser, so a ``# comment`` in a
fenced shell snippet is not a heading and a ``[[link]]`` inside code is not a link.
Only the block stage runs: inline parsing is not needed and would triple the cost.
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


def _collect_tags(line: str, into: dict[str, None]) -> None:
    for m in TAG_RE.finditer(line):
        tag = m.group("tag").rstrip("/-")
        if tag and not tag.isdigit():
            into.setdefault(normalise_tag(tag), None)


def expand_tag(tag: str) -> list[str]:
    """A nested tag and its parents: ``a/b/c`` → ``a``, ``a/b``, ``a/b/c`` (Obsidian search)."""
    parts = normalise_tag(tag).split("/")
    return ["/".join(parts[: i + 1]) for i in range(len(parts)) if parts[i]]
