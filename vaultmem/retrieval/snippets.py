"""The best matching line of a note for a query: what a hit shows, with its line number."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from vaultmem.index.analysis import analyse

MAX_SNIPPET = 200
# A line of Obsidian tags only ("#postgres #pgbouncer"): it repeats the note's tags, so it
# matches the query words a note is tagged with and says nothing about them.
_TAG_LINE = re.compile(r"^\s*(?:#[^\s#][^\s]*\s*)+$")


def is_tag_line(line: str) -> bool:
    """Whether ``line`` holds nothing but ``#tags``.

    Example:
        >>> is_tag_line("#postgres #db/pgbouncer"), is_tag_line("# Postgres")
        (True, False)
    """
    return _TAG_LINE.match(line) is not None


@dataclass(frozen=True)
class Snippet:
    """One line of a note (1-based file line number) trimmed around its first match."""

    text: str
    line: int


def _trim(line: str, needles: Sequence[str]) -> str:
    line = " ".join(line.split())
    if len(line) <= MAX_SNIPPET:
        return line
    lower = line.lower()
    hits = [lower.find(n) for n in needles if lower.find(n) >= 0]
    start = max(0, min(hits) - MAX_SNIPPET // 4) if hits else 0
    end = start + MAX_SNIPPET
    text = line[start:end].strip()
    return ("…" if start > 0 else "") + text + ("…" if end < len(line) else "")


def best_line(lines: Sequence[str], terms: Sequence[str], *, first_line: int = 1) -> Snippet:
    """Pick the line (from ``first_line`` on) matching the most distinct query ``terms``.

    ``terms`` are analysed (stemmed) query terms; ties go to the earliest line, a line of
    tags only never counts as a match, and a note with no matching line shows its first
    non-blank line.
    """
    wanted = set(terms)
    # A cheap substring test on each stem's head skips most lines before analysis.
    heads = [t[:4] for t in wanted if t]
    best: tuple[float, int] | None = None
    fallback: int | None = None
    for number in range(max(first_line, 1), len(lines) + 1):
        raw = lines[number - 1]
        if not raw.strip():
            continue
        if fallback is None and raw.strip() not in ("---",) and not is_tag_line(raw):
            fallback = number
        lower = raw.lower()
        if not any(h in lower for h in heads):
            continue
        if is_tag_line(raw):
            continue
        found = set(analyse(raw)) & wanted
        # A heading only repeats what the result's title line shows: a body line with as
        # many matches is the better snippet.
        score = len(found) - (0.5 if raw.lstrip().startswith("#") else 0.0)
        if found and (best is None or score > best[0]):
            best = (score, number)
            if score == len(wanted):
                break
    number = best[1] if best else (fallback or max(first_line, 1))
    text = lines[number - 1] if 0 < number <= len(lines) else ""
    return Snippet(_trim(text.rstrip("\r"), heads), number)


@dataclass(frozen=True)
class LineMap:
    """One note's lines with, for every stem, the lines holding it: the best line for any
    query without analysing the note again. A long-lived process keeps one per note it
    has shown (:class:`~vaultmem.retrieval.search.SnippetCache`); :meth:`best` answers
    exactly as :func:`best_line` does.
    """

    lines: tuple[str, ...]
    lowered: tuple[str, ...]
    first_line: int
    stems: Mapping[str, tuple[int, ...]]
    first_text: int | None

    @classmethod
    def build(cls, lines: Sequence[str], first_line: int = 1) -> LineMap:
        """Analyse every line from ``first_line`` on, once."""
        start = max(first_line, 1)
        where: dict[str, list[int]] = {}
        fallback = None
        for number in range(start, len(lines) + 1):
            raw = lines[number - 1]
            stripped = raw.strip()
            if not stripped:
                continue
            if fallback is None and stripped != "---" and not is_tag_line(raw):
                fallback = number
            for stem in set(analyse(raw)):
                where.setdefault(stem, []).append(number)
        return cls(
            tuple(lines),
            tuple(line.lower() for line in lines),
            start,
            {stem: tuple(numbers) for stem, numbers in where.items()},
            fallback,
        )

    def best(self, terms: Sequence[str]) -> Snippet:
        """The line :func:`best_line` picks for ``terms``: most distinct terms, a heading
        half a term less, the earliest of equals; the first text line when none match."""
        wanted = set(terms)
        heads = [t[:4] for t in wanted if t]
        counts = Counter(n for t in wanted for n in self.stems.get(t, ()))
        best: tuple[float, int] | None = None
        for number in sorted(counts):
            lower = self.lowered[number - 1]
            if not any(h in lower for h in heads) or is_tag_line(lower):
                continue  # best_line skips such a line: so does this
            score = counts[number] - (0.5 if lower.lstrip().startswith("#") else 0.0)
            if best is None or score > best[0]:
                best = (score, number)
        number = best[1] if best else (self.first_text or self.first_line)
        text = self.lines[number - 1] if 0 < number <= len(self.lines) else ""
        return Snippet(_trim(text.rstrip("\r"), heads), number)
