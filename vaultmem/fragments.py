"""Heading-aware fragments of a note body, the units that get embedded (SPEC §6, §8).

A note is cut into sections at its headings (found by markdown-it-py, so ``#`` lines in
code fences are not headings), tiny neighbouring sections are packed together, and
sections longer than ``max_chars`` are split into overlapping windows at the best
available boundary. Each fragment records the file lines it came from, so a hit can
be shown with line numbers, and a sha1 of exactly the text that gets embedded, so the
index embeds a fragment once however often its note is renamed or re-indexed.

The function is pure and deterministic: same arguments, same fragments, same hashes.
"""

from __future__ import annotations

import hashlib
import re
from bisect import bisect_right
from dataclasses import dataclass
from functools import cache
from itertools import accumulate
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from markdown_it import MarkdownIt

__all__ = ["Fragment", "PATH_SEPARATOR", "fragments", "heading_text"]

PATH_SEPARATOR = " > "


# Built on first use: importing markdown-it and building a parser costs ~15 ms, which a
# process that only reads fragment records (a search, a hook) must not pay.
@cache
def _block_md() -> MarkdownIt:
    from markdown_it import MarkdownIt

    # Block structure is all we need: the inline pass (emphasis, links…) is half of
    # markdown-it's time and tells us nothing about where headings are.
    return MarkdownIt("commonmark").disable(["inline", "text_join"])


@cache
def _inline_md() -> MarkdownIt:
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark")


# A top-level heading line starts with ≤3 spaces then '#' (ATX) or is an underline of
# '=' / '-' (setext). A body with no such line has no headings: skip the parser.
_MAYBE_HEADING = re.compile(r"^ {0,3}[#=-]", re.MULTILINE)
_WIKILINK = re.compile(r"\[\[([^\]|#]*)(?:#[^\]|]*)?(?:\|([^\]]*))?\]\]")
_INLINE_MARKUP = frozenset("*_`[]<>!\\&")


@dataclass(frozen=True)
class Fragment:
    """One embeddable piece of a note.

    ``heading_path``: titles of the headings enclosing the fragment, outermost first
    (``("Release process", "Rollback")``); for a fragment spanning several sections, the
    path they share. ``start_line``/``end_line``: 1-based, inclusive line numbers in the
    *file*, of the first and last non-blank characters of the fragment. ``text``: what
    gets embedded — a prefix line ``Title > Heading > Sub`` then the section text.
    ``hash``: sha1 hex of ``text`` (UTF-8).
    """

    hash: str
    heading_path: tuple[str, ...]
    start_line: int
    end_line: int
    text: str


@dataclass(frozen=True)
class _Section:
    """A run of lines from one heading to the next: char offsets into the body."""

    start: int  # offset of the section's first line (its heading line)
    first: int  # offset of its first non-blank character
    last: int  # offset just past its last non-blank character
    path: tuple[str, ...]


def _squash(text: str) -> str:
    """Collapse runs of whitespace (titles and headings go on one prefix line)."""
    return " ".join(text.split())


def heading_text(source: str) -> str:
    """Plain text of a heading's inline markdown: ``Use **uv** [[Tools|tools]]`` →
    ``Use uv tools``. Wikilinks show their alias (else their target); emphasis, code
    and link markup are dropped.
    """
    text = _WIKILINK.sub(lambda m: m.group(2) or m.group(1), source)
    if _INLINE_MARKUP.isdisjoint(text):
        return _squash(text)  # the common case: no markup, no parser call
    parts: list[str] = []
    for token in _inline_md().parseInline(text):
        for child in token.children or []:
            if child.type in ("text", "code_inline", "image"):
                parts.append(child.content)
            elif child.type in ("softbreak", "hardbreak"):
                parts.append(" ")
    return _squash("".join(parts)) or _squash(text)


def _headings(src: str) -> list[tuple[int, int, str]]:
    """(line index, level, title) of each top-level heading, in order.

    Headings nested in blockquotes or list items (token level > 0) do not cut the note:
    they belong to the block around them.
    """
    if _MAYBE_HEADING.search(src) is None:
        return []
    tokens = _block_md().parse(src)
    found: list[tuple[int, int, str]] = []
    for i, token in enumerate(tokens):
        if token.type == "heading_open" and token.level == 0 and token.map is not None:
            inline = tokens[i + 1]
            found.append((token.map[0], int(token.tag[1:]), heading_text(inline.content)))
    return found


def _common_prefix(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[str, ...]:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return a[:n]


def _sections(src: str, line_starts: list[int]) -> list[_Section]:
    """Cut the body at each top-level heading; blank sections are dropped."""
    heads = _headings(src)
    bounds: list[tuple[int, tuple[str, ...]]] = []
    if not heads or heads[0][0] > 0:
        bounds.append((0, ()))  # the preamble before the first heading
    stack: list[tuple[int, str]] = []
    for line, level, title in heads:
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, title))
        bounds.append((line_starts[line], tuple(t for _, t in stack)))
    sections: list[_Section] = []
    for k, (start, path) in enumerate(bounds):
        end = bounds[k + 1][0] if k + 1 < len(bounds) else len(src)
        chunk = src[start:end]
        stripped = chunk.lstrip()
        if not stripped:
            continue
        first = start + len(chunk) - len(stripped)
        last = start + len(chunk.rstrip())
        sections.append(_Section(start, first, last, path))
    return sections


def _group(sections: list[_Section], max_chars: int, min_chars: int) -> list[list[_Section]]:
    """Pack neighbouring sections so no fragment is a stub.

    A section joins the group before it when that group is still tiny (< min_chars: a
    bare heading or a one-liner leads into what follows, even a long section, which is
    then windowed), or when the section itself is tiny and the two fit in max_chars.
    The group's fragments carry the heading path its sections share — their parent.
    """
    groups: list[list[_Section]] = []
    for sec in sections:
        if groups:
            group = groups[-1]
            group_size = group[-1].last - group[0].first
            combined = sec.last - group[0].first
            sec_size = sec.last - sec.first
            if group_size < min_chars or (sec_size < min_chars and combined <= max_chars):
                group.append(sec)
                continue
        groups.append([sec])
    return groups


def _cut(src: str, a: int, lo: int, hi: int, section_starts: list[int]) -> int:
    """Where a window that starts at ``a`` should end, in ``[lo, hi]`` (char offsets).

    Preference: a section boundary, a paragraph break (blank line), a line break, a
    space — never inside a word if there is any other choice; a hard cut at ``hi``
    for one giant word or line (or for scripts written without spaces).
    """
    k = bisect_right(section_starts, hi) - 1
    if k >= 0 and section_starts[k] > lo:
        return section_starts[k]
    p = src.rfind("\n\n", lo, hi)
    if p >= 0:
        return p + 1
    p = src.rfind("\n", lo, hi)
    if p >= 0:
        return p + 1
    p = max(src.rfind(" ", lo, hi), src.rfind("\t", lo, hi))
    if p >= 0:
        return p + 1
    return hi


def _overlap_start(src: str, a: int, b: int, ovl: int) -> int:
    """Start of the window after ``[a, b)``: about ``ovl`` characters before ``b``,
    moved to the nearest line start (else word start) within ±ovl/2, so the shared
    text begins at a clean boundary. Always in ``(a, b]``.
    """
    if ovl <= 0:
        return b
    target = b - ovl
    lo = max(a + 1, target - ovl // 2)
    hi = max(lo, b - max(1, ovl // 2))
    for sep in ("\n", " "):
        after = src.find(sep, max(target - 1, lo - 1), hi)
        before = src.rfind(sep, lo - 1, target)
        candidates = [p + 1 for p in (after, before) if p >= 0 and lo <= p + 1 <= hi]
        if candidates:
            return min(candidates, key=lambda x: (abs(x - target), x))
    return min(max(target, a + 1), b)


def fragments(
    body: str,
    *,
    title: str,
    body_start_line: int = 1,
    max_chars: int = 1000,
    overlap: float = 0.15,
    min_chars: int | None = None,
) -> list[Fragment]:
    """Split a note body into heading-aware fragments for embedding.

    ``body``: the note's markdown after its frontmatter. ``title``: the note's title, put
    on the prefix line of every fragment. ``body_start_line``: the file line number of the
    body's first line (1 when there is no frontmatter), so spans are file lines.
    ``max_chars``: most characters of note text per fragment (the prefix line comes on
    top); ``overlap``: fraction of ``max_chars`` that consecutive windows of a long section
    share (~15%); ``min_chars``: sections shorter than this are packed with a neighbour
    (default ``max_chars // 4``).

    Line endings ``\\r\\n`` and ``\\r`` count as one line break each, as in markdown-it.
    A body with no text gives one fragment holding just the title (none if the title is
    empty too). Fragments are never empty and come in document order.
    """
    if max_chars < 16:
        raise ValueError(f"max_chars must be at least 16, got {max_chars}")
    if not 0.0 <= overlap < 0.5:
        raise ValueError(f"overlap must be in [0, 0.5), got {overlap}")
    if min_chars is None:
        min_chars = max_chars // 4

    title = _squash(title)
    src = body.replace("\r\n", "\n").replace("\r", "\n")
    lines = src.split("\n")
    line_starts = [0, *accumulate(len(line) + 1 for line in lines[:-1])]

    def prefix(path: tuple[str, ...]) -> str:
        # A first heading equal to the title (the usual "# Title") is not repeated.
        if path and title and path[0].casefold() == title.casefold():
            path = path[1:]
        return PATH_SEPARATOR.join(p for p in (title, *path) if p)

    sections = _sections(src, line_starts)
    if not sections:
        if not title:
            return []
        return [Fragment(_sha1(title), (), body_start_line, body_start_line, title)]

    ovl = int(overlap * max_chars)
    out: list[Fragment] = []

    def emit(group: list[_Section], starts: list[int], a: int, b: int) -> None:
        seg = src[a:b]
        stripped = seg.strip()
        if not stripped:
            return
        first = a + len(seg) - len(seg.lstrip())
        last = a + len(seg.rstrip()) - 1
        first_line = bisect_right(line_starts, first) - 1
        # Keep the first line's indentation (code, nested lists) when it is in the window.
        text_start = max(a, line_starts[first_line])
        path = group[bisect_right(starts, first) - 1].path
        for sec in group[bisect_right(starts, first) : bisect_right(starts, last)]:
            path = _common_prefix(path, sec.path)
        head = prefix(path)
        piece = src[text_start : last + 1]
        text = f"{head}\n{piece}" if head else piece
        out.append(
            Fragment(
                hash=_sha1(text),
                heading_path=path,
                start_line=body_start_line + first_line,
                end_line=body_start_line + bisect_right(line_starts, last) - 1,
                text=text,
            )
        )

    for group in _group(sections, max_chars, min_chars):
        starts = [sec.start for sec in group]
        # Window the group's text from the line of its first non-blank character.
        a = line_starts[bisect_right(line_starts, group[0].first) - 1]
        end = group[-1].last
        prev_end = a
        while end - a > max_chars:
            lo = max(a + max_chars // 2, prev_end + 1)
            b = _cut(src, a, lo, a + max_chars, starts)
            emit(group, starts, a, b)
            prev_end = b
            a = _overlap_start(src, a, b, ovl)
        emit(group, starts, a, end)
    return out


def _sha1(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()
