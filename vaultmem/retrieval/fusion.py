"""The arithmetic of the hybrid ``query`` pipeline (SPEC §6), as pure functions.

Nothing here reads the vault, an index or a model: each stage takes plain ids, scores and
texts and returns new lists, so the numbers can be checked by hand (tests/test_fusion.py)
and ``--explain`` can show exactly what each stage did.

Stages, in pipeline order:

1. :func:`strong_signal` — the BM25 probe's bypass test (skip query expansion).
2. :func:`rrf` — reciprocal rank fusion of the BM25 and vector lists of the original query
   (weight 2) and of each expansion variant (weight 1), k = 60.
3. :func:`candidates` — keep the best ``CANDIDATE_LIMIT`` (30) for reranking.
4. :func:`blend` — position-aware blend of the fused score with the reranker's score.
5. :func:`mmr_demote` — move near-duplicates (word-bigram Jaccard > 0.6) below the rest.

The bounded memory prior sits between 4 and 5 and lives elsewhere.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, TypeVar

__all__ = [
    "BLEND_BANDS",
    "BLEND_TAIL_WEIGHT",
    "BM25_SATURATION_K",
    "CANDIDATE_LIMIT",
    "MMR_THRESHOLD",
    "ORIGINAL_WEIGHT",
    "RRF_K",
    "STRONG_SIGNAL_GAP",
    "STRONG_SIGNAL_SCORE",
    "VARIANT_WEIGHT",
    "RankedList",
    "bigrams",
    "blend",
    "bm25_confidence",
    "candidates",
    "jaccard",
    "mmr_demote",
    "normalise",
    "position_weight",
    "rrf",
    "strong_signal",
]

# --- constants (SPEC §6) ---------------------------------------------------------------

STRONG_SIGNAL_SCORE = 0.85
STRONG_SIGNAL_GAP = 0.15
# k in s / (s + k): the BM25 score that maps to confidence 0.5. QMD uses 1 for SQLite FTS5
# bm25(); vaultmem's Whoosh BM25F scores sit on a similar scale (about 3–10 for real hits
# on the example vault), so the same constant is kept until the eval says otherwise.
BM25_SATURATION_K = 1.0

RRF_K = 60
ORIGINAL_WEIGHT = 2.0
VARIANT_WEIGHT = 1.0
# Tuned on the man-page dev split (BENCHMARKS.md, benchmarks/tune_fusion.py): vector
# lists count 1.5x a keyword list of the same query (MiniLM alone beats BM25 there,
# MRR 0.837 vs 0.786), and a note that tops a list gets a bonus (QMD's top-rank bonus),
# per unit of that list's weight: +0.02 for rank 1, +0.01 for ranks 2-3.
VECTOR_WEIGHT_FACTOR = 1.5
TOP_RANK_BONUS = (0.02, 0.01)
CANDIDATE_LIMIT = 30

# (last position of the band, retrieval weight). Positions are 1-based.
BLEND_BANDS: tuple[tuple[int, float], ...] = ((3, 0.75), (10, 0.60))
BLEND_TAIL_WEIGHT = 0.40

MMR_THRESHOLD = 0.6

# Thresholds are "≥" in the spec, but differences of confidences right at the boundary can
# land one ulp below it: c(19) − c(4) = 0.95 − 0.8 == 0.1499999999999999 in floats. A
# tolerance far below any meaningful score difference keeps the boundary inclusive.
_EPS = 1e-12

_WORD = re.compile(r"\w+")

T = TypeVar("T")


# --- normalisation and the strong-signal bypass ----------------------------------------


def normalise(scores: Sequence[float]) -> list[float]:
    """Min-max normalise scores to [0, 1], keeping their order.

    ``n_i = (s_i − min) / (max − min)``.

    When every score is equal (one score, or a tie across the whole set) the span is 0 and
    every item gets **1.0**: each is the best match in its set, and 0 would make a lone
    candidate look irrelevant to whatever it is blended with. An empty input gives ``[]``.
    """
    if not scores:
        return []
    low, high = min(scores), max(scores)
    span = high - low
    if span <= 0:
        return [1.0] * len(scores)
    return [(s - low) / span for s in scores]


def bm25_confidence(score: float, k: float = BM25_SATURATION_K) -> float:
    """Map one raw BM25 score onto [0, 1): ``c = s / (s + k)`` (0 for ``s ≤ 0``).

    Monotone and query-independent: the same score always means the same confidence,
    whatever else the query matched. That is what lets a fixed threshold (0.85) mean
    "this keyword match is strong", which a per-query normalisation cannot (see
    :func:`strong_signal`). With k = 1, 0.85 is reached at s = 0.85/0.15 ≈ 5.67.
    """
    if k <= 0:
        raise ValueError(f"k must be positive, got {k}")
    s = max(score, 0.0)  # BM25 is never below 0 for a real match; treat anything else as none
    return s / (s + k)


def strong_signal(
    scores: Sequence[float],
    *,
    threshold: float = STRONG_SIGNAL_SCORE,
    gap: float = STRONG_SIGNAL_GAP,
    k: float = BM25_SATURATION_K,
    has_intent: bool = False,
) -> bool:
    """Whether the BM25 probe is strong enough to skip query expansion.

    ``scores`` are the probe's raw BM25 scores (higher is better, any order). With
    ``c(s) = s / (s + k)`` (:func:`bm25_confidence`), ``c1`` the best and ``c2`` the second
    best (0 when there is only one hit)::

        strong  ⇔  no intent  ∧  c1 ≥ threshold  ∧  c1 − c2 ≥ gap

    Why the saturating map and not min-max or division by the max: both of those make the
    top score 1.0 by construction, so the 0.85 threshold tests nothing and the rule
    collapses to a ratio between the first two hits — it would fire for a query whose best
    hit is weak but merely twice the next one, and always for a single weak hit. QMD does
    the same (``|s| / (1 + |s|)`` on FTS5 scores, then ``top ≥ 0.85`` and
    ``top − second ≥ 0.15``). The saturation also makes the gap conservative at the top:
    at c1 = 0.9 (s = 9) the runner-up must be at or below s = 3, so the bypass fires only
    on a clear, high keyword hit, and expansion (the safe path) runs otherwise.

    An intent (``--intent``) always disables the bypass: an intent says the query is
    ambiguous, so keyword confidence alone is not enough. No hits → False.
    """
    if has_intent or not scores:
        return False
    ranked = sorted(scores, reverse=True)
    top = bm25_confidence(ranked[0], k)
    second = bm25_confidence(ranked[1], k) if len(ranked) > 1 else 0.0
    return top >= threshold - _EPS and (top - second) >= gap - _EPS


# --- reciprocal rank fusion -------------------------------------------------------------


@dataclass(frozen=True)
class RankedList:
    """One retrieval list for fusion: ids best first, and the list's weight in RRF.

    ``name`` is for ``--explain`` (e.g. ``"bm25:original"``, ``"vec:variant-2"``). An id
    repeated in ``ids`` counts once, at its best (first) rank.
    """

    name: str
    ids: tuple[str, ...]
    weight: float
    # The weight the top-rank bonus scales with; None: ``weight``. The pipeline gives a
    # vector list its query's weight here, so the 1.5x vector factor is not paid twice.
    bonus_weight: float | None = None

    def __post_init__(self) -> None:
        # Accept any sequence at construction but store a tuple, so the value stays hashable
        # and immutable like the rest of the frozen dataclass.
        object.__setattr__(self, "ids", tuple(self.ids))
        if not math.isfinite(self.weight) or self.weight < 0:
            raise ValueError(f"weight must be finite and ≥ 0, got {self.weight}")


def rrf(
    lists: Sequence[RankedList], k: int = RRF_K, bonus: tuple[float, float] = (0.0, 0.0)
) -> list[tuple[str, float]]:
    """Weighted reciprocal rank fusion.

    ``score(d) = Σ_lists weight_L / (k + rank_L(d))``, rank starting at 1, summed over the
    lists that contain d. With k = 60 and weights 2 (original query) and 1 (variants), a
    document first in both original lists scores 2/61 + 2/61 = 0.06557…

    ``bonus = (b1, b3)`` adds a top-rank bonus once per document: the largest of
    ``w_L · b1`` over lists where it ranks 1st and ``w_L · b3`` where it ranks 2nd or
    3rd, ``w_L`` being the list's ``bonus_weight`` (default: its weight). With (0.02,
    0.01) the document above also gets 2 · 0.02 = 0.04.

    Returns every id that appears in any list, best first. Ties (equal scores) are broken
    by the best rank the id reached in any list (a list's top hit beats an id that only
    accumulated lower ranks), then by id, so the output never depends on list order.

    The per-id sum uses ``math.fsum`` so it is correctly rounded: the same contributions
    give bit-identical scores whatever order the lists come in, which keeps ties exact.
    """
    if k < 0:
        raise ValueError(f"k must be ≥ 0, got {k}")
    contributions: dict[str, list[float]] = {}
    best_rank: dict[str, int] = {}
    top: dict[str, float] = {}
    for ranked in lists:
        seen: set[str] = set()
        for rank, doc in enumerate(ranked.ids, start=1):
            if doc in seen:
                continue
            seen.add(doc)
            contributions.setdefault(doc, []).append(ranked.weight / (k + rank))
            best_rank[doc] = min(rank, best_rank.get(doc, rank))
            if rank <= 3:
                scale = ranked.weight if ranked.bonus_weight is None else ranked.bonus_weight
                extra = scale * (bonus[0] if rank == 1 else bonus[1])
                top[doc] = max(extra, top.get(doc, 0.0))
    fused = [(doc, math.fsum([*parts, top.get(doc, 0.0)])) for doc, parts in contributions.items()]
    fused.sort(key=lambda item: (-item[1], best_rank[item[0]], item[0]))
    return fused


def candidates(fused: Sequence[T], limit: int = CANDIDATE_LIMIT) -> list[T]:
    """The first ``limit`` fused results: the set the reranker sees (SPEC default 30)."""
    if limit < 0:
        raise ValueError(f"limit must be ≥ 0, got {limit}")
    return list(fused[:limit])


# --- position-aware blending ------------------------------------------------------------


def position_weight(position: int) -> float:
    """Retrieval weight ``w(p)`` for fused position p (1-based).

    ``w = 0.75`` for p ≤ 3, ``0.60`` for 4 ≤ p ≤ 10, ``0.40`` beyond. The top of the fused
    list is where BM25 and vectors agree most, so the reranker may only nudge it; further
    down the reranker gets more say, so it can rescue a good note retrieval under-ranked.
    """
    if position < 1:
        raise ValueError(f"positions start at 1, got {position}")
    for last, weight in BLEND_BANDS:
        if position <= last:
            return weight
    return BLEND_TAIL_WEIGHT


def blend(
    fused: Sequence[tuple[str, float]],
    rerank: Mapping[str, float],
    *,
    retrieval: Literal["score", "rank"] = "score",
) -> list[tuple[str, float]]:
    """Blend retrieval with the reranker, trusting retrieval more near the top.

    For the note at fused position p (1-based, the order of ``fused``)::

        final = w(p) · r_p + (1 − w(p)) · rerank[id]          (see position_weight)

    ``r_p`` is the retrieval score on [0, 1]:

    - ``"score"`` (default): the fused score min-max normalised over ``fused``
      (:func:`normalise`). SPEC §5 ranks by "the relevance score (fused, normalised to
      [0,1])", and it keeps what RRF measured — a note found by many lists stays ahead of
      one that scraped in — while spreading the candidates over the whole range so the
      reranker can still reorder them.
    - ``"rank"``: ``r_p = 1 / p``, as QMD does. Kept for the eval to compare. Its drop from
      1 to 1/2 is so steep that position 1 can never be overtaken: 0.75 · (1 − 1/2) =
      0.375 exceeds the most the reranker can add (0.25 · 1).

    Rerank scores are expected on [0, 1] (a cross-encoder's sigmoid, an LLM's yes
    probability); the caller maps them there. A note with no rerank score (the reranker
    skipped or failed on it) keeps its retrieval score alone (w = 1) rather than being
    treated as a 0 from the reranker. Ids in ``rerank`` but not in ``fused`` are ignored.

    Returns the same ids, best first; equal finals keep their fused order.
    """
    ids = [doc for doc, _ in fused]
    if len(set(ids)) != len(ids):
        raise ValueError("fused results must not repeat an id")
    if retrieval == "score":
        base = normalise([score for _, score in fused])
    elif retrieval == "rank":
        base = [1.0 / p for p in range(1, len(fused) + 1)]
    else:
        raise ValueError(f"retrieval must be 'score' or 'rank', got {retrieval!r}")
    blended: list[tuple[str, float]] = []
    for position, (doc, r) in enumerate(zip(ids, base, strict=True), start=1):
        if doc in rerank:
            w = position_weight(position)
            blended.append((doc, w * r + (1.0 - w) * rerank[doc]))
        else:
            blended.append((doc, r))
    # sorted() is stable, so equal finals stay in fused order.
    return sorted(blended, key=lambda item: -item[1])


# --- MMR diversity ----------------------------------------------------------------------


def bigrams(text: str) -> frozenset[tuple[str, str]]:
    """The set of adjacent lowercase word pairs in ``text`` (words are ``\\w+`` runs).

    "The quick fox" → {("the", "quick"), ("quick", "fox")}. Fewer than two words → empty.
    """
    words = _WORD.findall(text.lower())
    return frozenset(zip(words, words[1:], strict=False))


def jaccard(a: frozenset[T] | set[T], b: frozenset[T] | set[T]) -> float:
    """``|A ∩ B| / |A ∪ B|``; 0.0 when both are empty (nothing shared, nothing to compare)."""
    union = len(a | b)
    if union == 0:
        return 0.0
    return len(a & b) / union


def mmr_demote(
    items: Sequence[tuple[str, float]],
    texts: Mapping[str, str],
    threshold: float = MMR_THRESHOLD,
) -> list[tuple[str, float]]:
    """Move near-duplicates below the distinct results; never drop anything.

    Walk the items in score order (ties keep their input order). An item whose word-bigram
    Jaccard (:func:`bigrams`, :func:`jaccard`) with any item already **kept** exceeds
    ``threshold`` (strictly: 0.6 itself is not a duplicate) is set aside; the result is the
    kept items followed by the set-aside ones, each group in score order.

    Only kept items are compared against: an item that resembles a demoted one but none of
    the kept adds something the reader has not seen yet, so it stays. Scores are returned
    unchanged (``--explain`` shows what each stage gave), so after this stage the list
    order, not the score, is the ranking. An id missing from ``texts`` has no bigrams and is
    never a duplicate.
    """
    ordered = sorted(items, key=lambda item: -item[1])
    grams = {doc: bigrams(texts.get(doc, "")) for doc, _ in ordered}
    kept: list[tuple[str, float]] = []
    demoted: list[tuple[str, float]] = []
    for doc, score in ordered:
        mine = grams[doc]
        if any(jaccard(mine, grams[other]) > threshold for other, _ in kept):
            demoted.append((doc, score))
        else:
            kept.append((doc, score))
    return kept + demoted
