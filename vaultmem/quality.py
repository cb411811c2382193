"""A note's quality score (SPEC §5): structure, decision and correction words, rich
frontmatter and links, each in [0, 1], weighted. A pure function of the text and the
frontmatter, as :mod:`vaultmem.scores`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from vaultmem.vocabulary import LINK_TYPES

_FENCE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_HEADING_RE = re.compile(r"^ {0,3}#{1,6}(?:[ \t]|$)")
_LIST_RE = re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)])[ \t]+\S")
# The decision and correction phrases, lowercase, in the order the patterns try them.
_DECISIONS = (
    "decided", "decide", "decision", "chose", "chosen", "choose", "agreed", "we will",
    "we'll", "going with", "opted", "rationale", "trade-offs", "trade-off", "tradeoffs",
    "tradeoff", "because", "in favour of", "in favor of", "settled on",
)  # fmt: skip
_CORRECTIONS = (
    "actually", "correction", "corrected", "wrong", "mistaken", "mistake", "incorrect",
    "fixed", "instead", "don't", "do not", "never", "avoid", "should not", "shouldn't",
    "turns out", "gotcha", "pitfall", "regression", "root cause", "workaround",
)  # fmt: skip
# For a text that lower() cannot stand for (below): both lists in one IGNORECASE scan,
# group 1 a decision phrase, group 2 a correction phrase.
_SIGNAL_ANY_CASE_RE = re.compile(
    rf"\b(?:({'|'.join(map(re.escape, _DECISIONS))})"
    rf"|({'|'.join(map(re.escape, _CORRECTIONS))}))\b",
    re.IGNORECASE,
)
_WORD_RE = re.compile(r"\w")
# Other texts are lowercased once and each phrase is looked for with str.find and a word
# boundary check each side: the phrases' \b-delimited matches, at a tenth of a regex
# scan's cost. No phrase holds another list's phrase after an inner word boundary, so a
# match can't hide another (as a regex scan's non-overlapping matches could).
# "İ" lowers to two characters ("i" and a combining dot, which is no word character, so
# word boundaries move), and IGNORECASE matches "ı" to "i" and "ſ" to "s", which lower()
# leaves as they are. Those texts take the IGNORECASE pattern; tests/test_quality.py
# checks every code point for this list.
_LOWER_UNSAFE_RE = re.compile("[\u0130\u0131\u017f]")
_RICH_KEYS = (
    "title",
    "tags",
    "aliases",
    "type",
    "created",
    "source",
    "description",
    "summary",
    "confidence",
)
_LINK_KEYS = LINK_TYPES


@dataclass(frozen=True)
class Quality:
    """The parts of a note's quality score, each in [0, 1], and their weighted total."""

    length: float
    structure: float
    signal: float
    frontmatter: float
    score: float


def _filled(value: Any) -> bool:
    """A frontmatter value that says something (not None, '', [], {})."""
    if value is None:
        return False
    if isinstance(value, str | list | tuple | dict | set):
        return len(value) > 0
    return True


def signal_words(text: str) -> tuple[set[str], set[str]]:
    """The distinct decision words and correction words in ``text``, lowercased.

    Example:
        >>> decisions, corrections = signal_words("We DECIDED on it because... actually, never.")
        >>> sorted(decisions), sorted(corrections)
        (['because', 'decided'], ['actually', 'never'])
    """
    if text.isascii() or _LOWER_UNSAFE_RE.search(text) is None:
        lowered = text.lower()
        decisions = {p for p in _DECISIONS if p in lowered and _bounded(lowered, p)}
        return decisions, {p for p in _CORRECTIONS if p in lowered and _bounded(lowered, p)}
    found = _SIGNAL_ANY_CASE_RE.findall(text)
    return {d.lower() for d, _ in found if d}, {c.lower() for _, c in found if c}


def _bounded(text: str, phrase: str) -> bool:
    """Whether ``phrase`` occurs in ``text`` with no word character on either side."""
    start = text.find(phrase)
    while start >= 0:
        end = start + len(phrase)
        if not (start and _WORD_RE.match(text, start - 1)) and not _WORD_RE.match(text, end):
            return True
        start = text.find(phrase, start + 1)
    return False


def quality_breakdown(body: str, meta: Mapping[str, Any] | None = None) -> Quality:
    """Quality of a note in [0, 1] (ClawMem's signals), with its parts.

    ``score = 0.30·length + 0.25·structure + 0.20·signal + 0.25·frontmatter`` where, with
    ``L`` = characters of the stripped body:

    - ``length = min(1, L/800)`` up to 8,000 characters; longer notes taper as
      ``max(0.5, 1 − 0.25·log2(L/8000))`` (0.75 at 16k, 0.5 from 32k): a stub says
      little, a dump says too much for one memory.
    - ``structure = 0.5·min(1, headings/2) + 0.5·min(1, list_items/3)``, counting ATX
      headings and bullet/numbered list items outside fenced code.
    - ``signal = min(1, (D + C)/3)`` with ``D``/``C`` the numbers of *distinct* decision
      words (decided, chose, rationale, trade-off, because…) and correction words
      (actually, wrong, instead, avoid, turns out, workaround…) present, so repeating
      one word does not inflate it.
    - ``frontmatter = min(1, K/4)`` with ``K`` the filled keys among title, tags,
      aliases, type, created, source, description, summary, confidence, plus one if any
      typed link (supersedes, related, …) is filled.
    """
    text = body.strip()
    size = len(text)
    if size <= 8000:
        length = min(1.0, size / 800.0)
    else:
        length = max(0.5, 1.0 - 0.25 * math.log2(size / 8000.0))

    headings = items = 0
    fence: str | None = None
    for line in text.splitlines():
        opened = _FENCE_RE.match(line)
        if fence is not None:
            # A fence closes with the same character, at least as long (CommonMark).
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = None
            continue
        if opened:
            fence = opened.group(1)
        elif _HEADING_RE.match(line):
            headings += 1
        elif _LIST_RE.match(line):
            items += 1
    structure = 0.5 * min(1.0, headings / 2.0) + 0.5 * min(1.0, items / 3.0)

    decisions, corrections = signal_words(text)
    signal = min(1.0, (len(decisions) + len(corrections)) / 3.0)

    meta = meta or {}
    keys = sum(1 for key in _RICH_KEYS if _filled(meta.get(key)))
    keys += 1 if any(_filled(meta.get(key)) for key in _LINK_KEYS) else 0
    frontmatter = min(1.0, keys / 4.0)

    score = 0.30 * length + 0.25 * structure + 0.20 * signal + 0.25 * frontmatter
    return Quality(length, structure, signal, frontmatter, min(1.0, max(0.0, score)))


def quality(body: str, meta: Mapping[str, Any] | None = None) -> float:
    """Quality score in [0, 1]; see :func:`quality_breakdown` for the exact formula."""
    return quality_breakdown(body, meta).score
