"""The arithmetic of the hybrid ``query`` pipeline (SPEC §6), as pure functions.

Nothing here reads the vault, an index or a model: each stage takes plain ids, scores and
texts and returns new lists, so the numbers can be checked by hand (tests/test_fusion.py)
and ``--explain`` can show exactly what each stage did.

Stages, in pipeline order:

1. :func:`strong_signal` — the BM25 probe's bypass test (skip query expansion).
2. :func:`zscore_fuse` — weighted z-score fusion of the retrieval lists: BM25 over the
   whole note and over its lead (title + opening), vectors of each note's best fragment
   and of its first fragment (the note lead), for the original query and at half weight
   for each expansion variant.
3. :func:`candidates` — keep the best ``CANDIDATE_LIMIT`` (30) for reranking.
4. :func:`blend` — position-aware blend of the fused score with the reranker's score.
5. :func:`mmr_demote` — move near-duplicates (word-bigram Jaccard > 0.6) below the rest.

The bounded memory prior sits between 4 and 5 and lives elsewhere.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, TypeVar

__all__ = [
    "BLEND_BANDS",
    "BLEND_TAIL_WEIGHT",
    "BM25_SATURATION_K",
    "CANDIDATE_LIMIT",
    "INTENT_WEIGHT",
    "MMR_THRESHOLD",
    "LEAD_POOL_WEIGHT",
    "QUERY_WEIGHTS",
    "SURFACE_WEIGHTS",
    "ListWeights",
    "STRONG_SIGNAL_GAP",
    "STRONG_SIGNAL_SCORE",
    "VARIANT_SHARE",
    "ListScale",
    "ScoredList",
    "bigrams",
    "blend",
    "bm25_confidence",
    "candidates",
    "jaccard",
    "keep_below",
    "lifts",
    "list_scale",
    "mmr_demote",
    "normalise",
    "pool_lead",
    "position_weight",
    "strong_signal",
    "zscore_fuse",
]

# --- constants (SPEC §6) ---------------------------------------------------------------

STRONG_SIGNAL_SCORE = 0.85
STRONG_SIGNAL_GAP = 0.15
# k in s / (s + k): the BM25 score that maps to confidence 0.5. QMD uses 1 for SQLite FTS5
# bm25(); vaultmem's Whoosh BM25F scores sit on a similar scale (about 3–10 for real hits
# on the example vault), so the same constant is kept until the eval says otherwise.
BM25_SATURATION_K = 1.0

# List weights of z-score fusion (:func:`zscore_fuse`), tuned on half A of the man-page
# dev split (odd qids) and scored once on half B (`benchmarks/tune_fusion.py tune`;
# BENCHMARKS.md): equal weights were as good as any on A (MRR@10 0.901 offline; no
# weight of 0.75-1.25 on any list did better than noise), and on B the four lists score
# 0.912 against 0.876 for the reciprocal rank fusion they replace (+0.036, 95% paired
# bootstrap CI +0.015..+0.056). End to end, as shipped: 0.906 on all 744 (was 0.863).
#
# Issue 30 measured them on three genres (benchmarks/tune_query.py, end to end): the
# note-lead lists (a note's title and opening) say what a whole note is about, which is
# what a man-page query asks, but a documentation question asks for a detail deep in a
# long page, whose opening is about something broader. Equal weights let the leads of
# short pages outvote it: on the documentation corpus's tune half the vector lead list
# alone cost 0.07 MRR@10. Leads at 0.75 and the best-fragment vector list at 1.25:
# docs tune 0.880 → 0.928, man-page dev 0.905 → 0.907, example-vault 0.926 either way.
#
# Surfacing keeps equal weights: on the agent prompts' tuning split (A) they surface one
# wanted note more than these (0.797 against 0.785 hits, abstention equal): a prompt is
# about a whole note more often than a documentation question is.


@dataclass(frozen=True)
class ListWeights:
    """The weights of the original query's lists in fusion (variants weigh
    :data:`VARIANT_SHARE` of their kind's)."""

    bm25: float = 1.0
    vector: float = 1.0
    lead_keyword: float = 1.0
    lead_vector: float = 1.0


QUERY_WEIGHTS = ListWeights(bm25=1.0, vector=1.25, lead_keyword=0.75, lead_vector=0.75)
SURFACE_WEIGHTS = ListWeights()
# A "when" question asks for an event, which a whole note records (a handoff, a daily
# note): its lead says so, so the leads weigh as much as the rest there.
EVENT_WEIGHTS = ListWeights()


def route_weights(route: str) -> ListWeights:
    """The list weights of a query on ``route`` (routing's names: what, why, when, entity)."""
    return EVENT_WEIGHTS if route == "when" else QUERY_WEIGHTS


# An expansion variant's lists weigh this share of the original query's.
VARIANT_SHARE = 0.5
# The lists of the query steered by ``--intent`` (its words after the query's): the
# searcher said what they are after, so these weigh as an original list, not a variant.
INTENT_WEIGHT = 1.0
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


# A note's vector score in `vsearch`: its best fragment's cosine pooled with its lead's
# (the fragment that opens it). Tuned offline on the tune halves (benchmarks/
# tune_fragments.py, BENCHMARKS.md): lead share 0.3 lifted MiniLM MRR@10 from 0.837 to
# 0.865 on the man-page dev split, 0.794 to 0.809 on the docs tune half, and left
# example-vault where it was (0.2: +0.015 / +0.029 / -0.015; 0.4: +0.031 / -0.021 / 0).
LEAD_POOL_WEIGHT = 0.3

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


# --- z-score fusion ---------------------------------------------------------------------


@dataclass(frozen=True)
class ScoredList:
    """One retrieval list for fusion: ``(id, raw score)`` best first, and its weight.

    ``name`` is for ``--explain`` (``"bm25:original"``, ``"vec:lead"``, …). Scores are the
    list's own (BM25, cosine): fusion puts each list on its own scale (:func:`lifts`). An
    id repeated in ``items`` counts once, with its first (best) score.
    """

    name: str
    items: tuple[tuple[str, float], ...]
    weight: float

    def __post_init__(self) -> None:
        # Accept any sequence at construction but store a tuple, so the value stays hashable
        # and immutable like the rest of the frozen dataclass.
        object.__setattr__(self, "items", tuple((str(d), float(s)) for d, s in self.items))
        if not math.isfinite(self.weight) or self.weight < 0:
            raise ValueError(f"weight must be finite and ≥ 0, got {self.weight}")
        if not all(math.isfinite(s) for _, s in self.items):
            raise ValueError(f"list {self.name!r} has a score that is not finite")


@dataclass(frozen=True)
class ListScale:
    """How one list's raw scores were put on the shared scale: ``(s − floor) / sd``."""

    floor: float  # the list's lowest score
    sd: float  # the standard deviation of its scores (population); 0: all equal

    def lift(self, score: float) -> float:
        """The score's height above the floor in standard deviations (1 when sd is 0)."""
        return (score - self.floor) / self.sd if self.sd > 0 else 1.0

    def as_json(self) -> dict[str, float]:
        """``{"floor", "sd"}`` rounded for display."""
        return {"floor": round(self.floor, 6), "sd": round(self.sd, 6)}


def list_scale(scores: Sequence[float]) -> ListScale:
    """The floor (minimum) and population standard deviation of ``scores``.

    ``[3, 1, 2]``: floor 1, mean 2, sd √(2/3) ≈ 0.8165. Empty: floor 0, sd 0.
    """
    if not scores:
        return ListScale(0.0, 0.0)
    mean = math.fsum(scores) / len(scores)
    var = math.fsum((s - mean) ** 2 for s in scores) / len(scores)
    # A spread of rounding noise is no spread: equal scores summed in another order differ
    # in the last bits, and dividing by that would turn a tie into a landslide.
    sd = math.sqrt(var) if var > (1e-9 * max(1.0, abs(mean))) ** 2 else 0.0
    return ListScale(min(scores), sd)


def lifts(items: Sequence[tuple[str, float]]) -> dict[str, float]:
    """Each id's z-score above the list's lowest: ``(s − min) / sd`` (first score per id).

    This is the list's z-score ``(s − mean) / sd`` shifted by the lowest z, so a list's
    bottom item gets 0, exactly what an id the list does not hold gets (its true score is
    at most the floor: the list stopped there). A list whose scores are all equal (one
    hit, or a tie) cannot rank what it holds: each of its items gets 1, one standard
    step above an id it does not hold.

    ``[("a", 3), ("b", 1), ("c", 2)]`` → a 2/0.8165 = 2.449, b 0, c 1.225.
    """
    first: dict[str, float] = {}
    for doc, score in items:
        first.setdefault(doc, score)
    scale = list_scale(list(first.values()))
    return {doc: scale.lift(score) for doc, score in first.items()}


def zscore_fuse(lists: Sequence[ScoredList]) -> list[tuple[str, float]]:
    """Weighted z-score fusion: ``F(d) = Σ_L w_L · (s_L(d) − min_L) / sd_L``.

    Each list's raw scores are standardised on their own (:func:`lifts`: BM25 scores of
    3–15 and cosines of 0.2–0.7 become steps of one standard deviation), then summed with
    the list weights over the lists that hold d; a list that does not hold d adds 0.
    Unlike reciprocal rank fusion it keeps how far ahead a list's top hit is: a clear
    first place in one list counts more than a close one.

    Two lists by hand, weights 1 and 2: L1 = a 3, b 1, c 2 (floor 1, sd 0.8165) and
    L2 = b 0.9, d 0.5 (floor 0.5, sd 0.2): a = 2/0.8165 = 2.449, b = 0 + 2·2 = 4,
    c = 1.225, d = 0 → b, a, c, d.

    Returns every id that appears in any list, best first. Ties are broken by the best
    rank the id reached in any list, then by id, so the output never depends on list
    order; the per-id sum uses ``math.fsum``, so the same parts give the same bits.
    """
    parts: dict[str, list[float]] = {}
    best_rank: dict[str, int] = {}
    for ranked in lists:
        for doc, lift in lifts(ranked.items).items():
            parts.setdefault(doc, []).append(ranked.weight * lift)
        for rank, (doc, _) in enumerate(ranked.items, start=1):
            best_rank[doc] = min(rank, best_rank.get(doc, rank))
    fused = [(doc, math.fsum(p)) for doc, p in parts.items()]
    fused.sort(key=lambda item: (-item[1], best_rank[item[0]], item[0]))
    return fused


def pool_lead(best: float, lead: float, weight: float = LEAD_POOL_WEIGHT) -> float:
    """A note's vector score from its best fragment's cosine and its lead's:
    ``(1 − w)·best + w·lead``. The lead is one of the note's fragments, so
    ``lead ≤ best`` and the pooled score is at most the best: 0.6 and 0.4 at w = 0.3 →
    0.54; a note whose best fragment is its lead keeps its cosine."""
    return (1.0 - weight) * best + weight * min(lead, best)


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
      [0,1])", and it keeps what fusion measured — a note found by many lists stays ahead of
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


def keep_below(
    items: Sequence[tuple[str, float]], below: Collection[str]
) -> list[tuple[str, float]]:
    """``items`` (``(id, score)`` pairs) with the ids in ``below`` moved after the rest,
    each group in its order: what MMR set aside stays set aside through the stages that
    reorder by score after it (the memory prior, an intent route)."""
    return [i for i in items if i[0] not in below] + [i for i in items if i[0] in below]
