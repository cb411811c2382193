"""Whether `surface` speaks, and of which notes: one decision over the candidate list.

`query` ranks the prompt's candidates (:func:`vaultmem.agent.surface.candidates`); this
module judges the list as a whole (:class:`SpeakModel`: the first note's BM25 scores, how
much of the prompt the first and the shown notes hold, word pairs held side by side,
and with vectors the cosines) and picks the notes to show in the fused order. Pure but
for :func:`coverages`, which reads the keyword index's postings.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from vaultmem.vocabulary import DEFAULT_SURFACE_PROFILE, SURFACE_PROFILES, SurfaceProfile

if TYPE_CHECKING:
    from vaultmem.index.lexical import LexicalIndex
    from vaultmem.model import Hit

__all__ = [
    "KEYWORD_MODEL",
    "RELATIVE_CUTOFF",
    "SHOW_LIMIT",
    "VECTOR_MODEL",
    "Candidate",
    "Coverage",
    "SpeakModel",
    "coverages",
    "select",
    "shared_pairs",
]

# Whether to speak is one logistic decision over the candidate list (SpeakModel), fit on
# split A of benchmarks/data/surface_prompts.jsonl and reported on split B
# (benchmarks/tune_surface.py). Then at most the profile's notes (SurfaceProfile.notes),
# in the fused order, each with at least RELATIVE_CUTOFF of the first one's fused score
# (no hit the benchmark wants was below 0.33). The decision itself reads the first
# SHOW_LIMIT notes, the list it was fit on, whatever the profile shows.
SHOW_LIMIT = 3
RELATIVE_CUTOFF = 0.3
# More shared word pairs than this say no more (the fit's cap).
PHRASE_CAP = 2
# How much of a note the word-pair signal reads (the opening 20k characters).
NOTE_CHARS = 20_000


@dataclass(frozen=True)
class Candidate:
    """A retrieved note with its query coverage (the relevance the floor compares)."""

    hit: Hit
    coverage: float
    pinned: bool = False
    rarest: float = 0.0  # Coverage.rarest
    phrases: int = 0  # prompt word pairs the note holds side by side (the shown notes only)
    cosine: float | None = None  # the vector list's similarity, when vectors ran
    fused: float | None = None  # the z-score fusion sum (None: reached over the graph)
    bm25: float | None = None  # the keyword list's raw BM25 score (None: not in it)
    lead: float | None = None  # BM25 over the note's title and opening (None: not in it)
    # The note's text, read once for the word pairs and the block's excerpt ("" beyond
    # the notes that can be shown, or when it cannot be read).
    text: str = ""


def _idf(searcher: Any, term: str, total: int) -> float:
    # A term the vault never saw weighs like the rarest word: the prompt is about
    # something the vault does not hold.
    df = searcher.doc_frequency("text", term)
    return math.log(1 + (total + 1) / (df + 0.5))


def _contains(searcher: Any, docnum: int, term: str) -> bool:
    try:
        postings = searcher.postings("text", term)
    except Exception:  # whoosh raises TermNotFound (a KeyError) for an unknown term
        return False
    postings.skip_to(docnum)
    return bool(postings.is_active() and postings.id() == docnum)


@dataclass(frozen=True)
class Coverage:
    """How much of a prompt a note holds: ``share``, the IDF-weighted share of the
    prompt's distinct terms (0–1; a term the vault never saw weighs as the rarest), and
    ``rarest``, the IDF of the rarest prompt term the note holds over the most any term
    can have (0–1: a name only this note holds, "ElastiCache", is near 1)."""

    share: float = 0.0
    rarest: float = 0.0


def coverages(index: LexicalIndex, text: str, paths: Sequence[str]) -> dict[str, Coverage]:
    """Each note's :class:`Coverage` of the query."""
    from vaultmem.index.analysis import query_terms

    terms = sorted(set(query_terms(text[:2000])))
    if not terms or not paths:
        return dict.fromkeys(paths, Coverage())
    searcher = index.searcher()
    total = max(searcher.doc_count(), 1)
    weights = {t: _idf(searcher, t, total) for t in terms}
    whole = sum(weights.values())
    ceiling = math.log(1 + (total + 1) / 0.5)
    out: dict[str, Coverage] = {}
    for path in paths:
        docnum = searcher.document_number(path=path)
        if docnum is None:
            out[path] = Coverage()
            continue
        held = [w for t, w in weights.items() if _contains(searcher, docnum, t)]
        out[path] = Coverage(sum(held) / whole, max(held, default=0.0) / ceiling)
    return out


def _pairs(text: str) -> set[tuple[str, str]]:
    from vaultmem.index.analysis import query_terms

    terms = query_terms(text)
    return {(a, b) for a, b in zip(terms, terms[1:], strict=False) if a != b}


def shared_pairs(prompt: str, note: str) -> int:
    """How many pairs of consecutive prompt terms (stemmed, stop words out) the note text
    holds side by side: "ElastiCache primary" in a runbook says more than each word apart.

    Example:
        >>> shared_pairs("the redis primary failed", "When the Redis primary fails, ...")
        2
    """
    return len(_pairs(prompt[:2000]) & _pairs(note[:NOTE_CHARS]))


@dataclass(frozen=True)
class SpeakModel:
    """The speak decision's weights: speak when ``bias + Σ weight · signal ≥ 0``.

    The signals are the candidate list's, never one note's alone: the first note's BM25
    and lead BM25 (as ``log(1 + score)``), its coverage, the best coverage of the shown
    notes and how rare the rarest prompt word the first holds is (:class:`Coverage`),
    the most prompt word pairs a shown note holds side by side (:func:`shared_pairs`),
    the best cosine of the shown notes and the first one's lead over the second (vectors
    only), and whether the prompt asks the vault outright ("what did we decide").
    Nothing about the session enters: the same prompt gets the same decision.
    """

    bias: float
    keyword: float
    lead: float
    coverage: float
    coverage_best: float
    forced: float
    rarest: float = 0.0
    phrases: float = 0.0
    cosine: float = 0.0
    cosine_gap: float = 0.0

    def score(self, found: Sequence[Candidate], forced: bool) -> float:
        """The decision's margin for ``found`` (best first): ≥ 0 speaks."""
        if not found:
            return -math.inf
        first, shown = found[0], found[:SHOW_LIMIT]
        cosines = [c.cosine or 0.0 for c in found[:2]] + [0.0]
        return (
            self.bias
            + self.keyword * math.log1p(first.bm25 or 0.0)
            + self.lead * math.log1p(first.lead or 0.0)
            + self.coverage * first.coverage
            + self.coverage_best * max(c.coverage for c in shown)
            + self.forced * float(forced)
            + self.rarest * first.rarest
            + self.phrases * min(PHRASE_CAP, max(c.phrases for c in shown))
            + self.cosine * max(c.cosine or 0.0 for c in shown)
            + self.cosine_gap * (cosines[0] - cosines[1])
        )


# Fit on split A (logistic regression, threshold at the best min(hit rate, abstention));
# `python benchmarks/tune_surface.py fit` prints them.
KEYWORD_MODEL = SpeakModel(
    bias=-8.089,
    keyword=1.346,
    lead=1.052,
    coverage=-0.327,
    coverage_best=1.34,
    rarest=2.682,
    phrases=1.743,
    forced=1.487,
)
VECTOR_MODEL = SpeakModel(
    bias=-4.541,
    keyword=0.429,
    lead=0.015,
    coverage=0.397,
    coverage_best=2.374,
    phrases=0.758,
    forced=1.194,
    cosine=5.81,
    cosine_gap=1.539,
)


def select(
    found: Sequence[Candidate],
    *,
    forced: bool = False,
    model: SpeakModel | None = None,
    profile: SurfaceProfile = SURFACE_PROFILES[DEFAULT_SURFACE_PROFILE],
) -> list[Candidate]:
    """The notes to speak of: none unless the list as a whole clears the decision (its
    margin at least ``profile.floor``), then the first ``profile.notes`` in the fused
    order that keep :data:`RELATIVE_CUTOFF` of the first one's fused score.

    ``model`` defaults to :data:`VECTOR_MODEL` when vectors ran (some candidate has a
    cosine), else :data:`KEYWORD_MODEL`. Which notes the session already saw is not
    asked here: the caller leaves them out of the block, after deciding.
    """
    if not found:
        return []
    chosen = model or (VECTOR_MODEL if any(c.cosine is not None for c in found) else KEYWORD_MODEL)
    if chosen.score(found, forced) < profile.floor:
        return []
    top = found[0].fused
    shown = found[: profile.notes]
    if top is None or top <= 0:
        return list(shown)
    return [c for c in shown if c.fused is None or c.fused >= RELATIVE_CUTOFF * top]
