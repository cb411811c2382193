"""Tests of vaultmem.retrieval.fusion: numbers worked out by hand, boundaries, properties."""

from __future__ import annotations

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from vaultmem.retrieval import fusion as fu
from vaultmem.retrieval.fusion import (
    ListScale,
    ScoredList,
    blend,
    mmr_demote,
    strong_signal,
    zscore_fuse,
)

# --- normalise ---------------------------------------------------------------------------


def test_normalise_by_hand() -> None:
    # min 1, max 3, span 2: (3−1)/2 = 1, (1−1)/2 = 0, (2−1)/2 = 0.5.
    assert fu.normalise([3.0, 1.0, 2.0]) == [1.0, 0.0, 0.5]
    # RRF-sized numbers: span 0.05 − 0.03 = 0.02; (0.04 − 0.03)/0.02 = 0.5.
    assert fu.normalise([0.05, 0.04, 0.03]) == pytest.approx([1.0, 0.5, 0.0])


def test_normalise_degenerate_sets() -> None:
    assert fu.normalise([]) == []
    # One score, or all equal: span 0, every item is the best of its set → 1.0.
    assert fu.normalise([0.2]) == [1.0]
    assert fu.normalise([4.0, 4.0, 4.0]) == [1.0, 1.0, 1.0]


@given(st.lists(st.floats(min_value=-1e6, max_value=1e6), max_size=30))
def test_normalise_properties(scores: list[float]) -> None:
    out = fu.normalise(scores)
    assert len(out) == len(scores)
    assert all(0.0 <= n <= 1.0 for n in out)
    # Order-preserving: a higher score never gets a lower normalised score.
    pairs = sorted(zip(scores, out, strict=True))
    assert all(a[1] <= b[1] for a, b in zip(pairs, pairs[1:], strict=False))
    if scores:
        assert max(out) == 1.0


# --- BM25 confidence and the strong-signal bypass ----------------------------------------


def test_bm25_confidence_by_hand() -> None:
    # s / (s + 1): 9 → 9/10, 3 → 3/4, 4 → 4/5, 19 → 19/20.
    assert fu.bm25_confidence(9.0) == 0.9
    assert fu.bm25_confidence(3.0) == 0.75
    assert fu.bm25_confidence(4.0) == 0.8
    assert fu.bm25_confidence(19.0) == 0.95
    # k = 2: 9/11 = 0.8181…
    assert fu.bm25_confidence(9.0, k=2.0) == pytest.approx(0.8181818)
    # No match, or a negative score, is no evidence.
    assert fu.bm25_confidence(0.0) == 0.0
    assert fu.bm25_confidence(-2.0) == 0.0
    with pytest.raises(ValueError):
        fu.bm25_confidence(1.0, k=0.0)


def test_strong_signal_gap_boundary() -> None:
    # c(9) = 0.9, c(3) = 0.75: top ≥ 0.85 and gap 0.9 − 0.75 = 0.15 → exactly at the gap.
    assert strong_signal([9.0, 3.0])
    # c(3.1) = 3.1/4.1 = 0.7561: gap 0.1439 < 0.15.
    assert not strong_signal([9.0, 3.1])
    # c(19) = 0.95, c(4) = 0.8: gap 0.15 by hand, 0.1499999999999999 in floats; "≥" holds.
    assert 0.95 - 0.8 < 0.15
    assert strong_signal([19.0, 4.0])
    # Order of the input does not matter.
    assert strong_signal([3.0, 9.0])


def test_strong_signal_score_boundary() -> None:
    # One hit: the runner-up counts as 0, so only the threshold matters.
    # c(17/3) = (17/3)/(20/3) = 17/20 = 0.85 → at the threshold.
    assert strong_signal([17 / 3])
    # c(5.6) = 5.6/6.6 = 0.8485 < 0.85.
    assert not strong_signal([5.6])
    assert not strong_signal([5.6, 0.0])


def test_strong_signal_off_cases() -> None:
    assert not strong_signal([])
    # --intent disables the bypass however strong the hit.
    assert not strong_signal([9.0, 3.0], has_intent=True)
    assert not strong_signal([100.0], has_intent=True)
    # A larger k makes the same scores weaker: 9/11 = 0.818 < 0.85.
    assert not strong_signal([9.0, 3.0], k=2.0)
    # Custom thresholds: c(9) = 0.9 ≥ 0.9, gap 0.15 < 0.2.
    assert not strong_signal([9.0, 3.0], threshold=0.9, gap=0.2)
    assert strong_signal([9.0, 3.0], threshold=0.9, gap=0.15)


def test_strong_signal_is_absolute_not_relative() -> None:
    # Scores of a real weak query on the example vault ("who owns billing"): the best hit
    # is 1.54× the next, which a max-normalisation would call a gap of 0.35, but
    # c(5.218) = 5.218/6.218 = 0.839 is under 0.85, so expansion still runs.
    assert not strong_signal([5.218, 3.394, 3.332])


# --- z-score fusion ------------------------------------------------------------------------


def test_list_scale_by_hand() -> None:
    # [3, 1, 2]: floor 1, mean 2, variance (1 + 1 + 0)/3 = 2/3, sd √(2/3) = 0.816497.
    scale = fu.list_scale([3.0, 1.0, 2.0])
    assert scale.floor == 1.0
    assert scale.sd == pytest.approx(0.81649658)
    # (3 − 1)/0.816497 = 2.449490: two points above the floor, in standard deviations.
    assert scale.lift(3.0) == pytest.approx(2.44948974)
    assert fu.list_scale([]) == ListScale(0.0, 0.0)
    # All equal: no spread, every item one step above an id the list lacks.
    assert fu.list_scale([0.7, 0.7]).sd == 0.0
    assert fu.list_scale([0.7]).lift(0.7) == 1.0


def test_list_scale_ignores_rounding_noise() -> None:
    # 0.1 + 0.2 and 0.3 differ in the last bit: a tie, not a spread of 5.5e-17 that would
    # turn the tie into a difference of one standard deviation.
    assert fu.list_scale([0.1 + 0.2, 0.3]).sd == 0.0


def test_lifts_by_hand() -> None:
    lifted = fu.lifts([("a", 3.0), ("b", 1.0), ("c", 2.0)])
    assert lifted == pytest.approx({"a": 2.44948974, "b": 0.0, "c": 1.22474487})
    # The z-score shifted by the lowest z: z(a) − z(b) = (3 − 2)/sd − (1 − 2)/sd.
    sd = (2 / 3) ** 0.5
    assert lifted["a"] == pytest.approx((3 - 2) / sd - (1 - 2) / sd)
    # A repeated id counts once, with its first score: b's 9.0 is ignored.
    assert fu.lifts([("a", 2.0), ("b", 1.0), ("b", 9.0)]) == {"a": 2.0, "b": 0.0}
    # One hit: it matched, nothing to rank it against.
    assert fu.lifts([("only", 0.42)]) == {"only": 1.0}


def test_zscore_fuse_two_lists_by_hand() -> None:
    # L1 = a 3, b 1, c 2 (floor 1, sd 0.8165); L2 = b 0.9, d 0.5 (floor 0.5, mean 0.7,
    # sd 0.2), weight 2. a = 2.449; b = 0 + 2 · (0.9 − 0.5)/0.2 = 4; c = 1.225; d = 0.
    out = zscore_fuse(
        [
            ScoredList("bm25:original", (("a", 3.0), ("b", 1.0), ("c", 2.0)), 1.0),
            ScoredList("vec:original", (("b", 0.9), ("d", 0.5)), 2.0),
        ]
    )
    assert [doc for doc, _ in out] == ["b", "a", "c", "d"]
    assert dict(out) == pytest.approx({"b": 4.0, "a": 2.44948974, "c": 1.22474487, "d": 0.0})


def test_zscore_fuse_keeps_how_far_ahead_a_top_hit_is() -> None:
    # What rank fusion cannot see: x leads the keyword list by a landslide, y is first in
    # the vector list by a hair. Ranks alone make them equal (1st and 2nd in one list
    # each); the scores say x. Keyword: x 10, y 2, z 1 (floor 1, mean 13/3, sd 4.0277);
    # vector: y 0.61, x 0.60, z 0.30 (floor 0.30, mean 0.5033, sd 0.14384).
    keyword = ScoredList("bm25:original", (("x", 10.0), ("y", 2.0), ("z", 1.0)), 1.0)
    vector = ScoredList("vec:original", (("y", 0.61), ("x", 0.60), ("z", 0.30)), 1.0)
    fused = dict(zscore_fuse([keyword, vector]))
    # x = 9/4.0277 + 0.30/0.14384 = 2.2345 + 2.0857 = 4.3202
    assert fused["x"] == pytest.approx(4.3202, abs=1e-4)
    # y = 1/4.0277 + 0.31/0.14384 = 0.2483 + 2.1552 = 2.4035
    assert fused["y"] == pytest.approx(2.4035, abs=1e-4)
    assert fused["z"] == 0.0


def test_zscore_fuse_ties_break_by_best_rank_then_id() -> None:
    # A list of two scores 2 and 1 (floor 1, sd 0.5) lifts its leader by 2: b leads list
    # x, c leads list y, both at 2 with best rank 1, so by id; "0" is last in both (0).
    lists = [
        ScoredList("x", (("b", 2.0), ("0", 1.0)), 1.0),
        ScoredList("y", (("c", 2.0), ("0", 1.0)), 1.0),
    ]
    assert zscore_fuse(lists) == [("b", 2.0), ("c", 2.0), ("0", 0.0)]
    # Same score and best rank: by id, whatever the list order.
    swapped = [ScoredList("x", (("a", 1.0),), 1.0), ScoredList("y", (("b", 1.0),), 1.0)]
    assert zscore_fuse(swapped) == zscore_fuse(swapped[::-1]) == [("a", 1.0), ("b", 1.0)]


def test_zscore_fuse_empty_and_degenerate_inputs() -> None:
    assert zscore_fuse([]) == []
    assert zscore_fuse([ScoredList("bm25:original", (), 1.0)]) == []
    # A weight-0 list still puts its ids in the output, with score 0.
    assert zscore_fuse([ScoredList("off", (("a", 5.0),), 0.0)]) == [("a", 0.0)]


def test_scored_list_validation() -> None:
    # Any sequence is stored as a tuple of (str, float).
    made = ScoredList("x", [("a", 1)], 1.0)  # type: ignore[list-item]
    assert made.items == (("a", 1.0),)
    with pytest.raises(ValueError):
        ScoredList("x", (("a", 1.0),), -1.0)
    with pytest.raises(ValueError):
        ScoredList("x", (("a", 1.0),), float("nan"))
    with pytest.raises(ValueError):
        ScoredList("x", (("a", float("inf")),), 1.0)


def test_candidates_limit() -> None:
    fused = [(str(i), 1.0 / (i + 1)) for i in range(40)]
    assert len(fu.candidates(fused)) == fu.CANDIDATE_LIMIT == 30
    assert fu.candidates(fused, 5) == fused[:5]
    assert fu.candidates(fused[:3]) == fused[:3]
    assert fu.candidates(fused, 0) == []
    with pytest.raises(ValueError):
        fu.candidates(fused, -1)


_IDS = st.sampled_from([f"n{i}" for i in range(12)])
_SCORED = st.builds(
    ScoredList,
    name=st.sampled_from(["bm25:original", "vec:original", "bm25:lead", "vec:lead"]),
    items=st.lists(
        st.tuples(_IDS, st.floats(min_value=-1.0, max_value=30.0, allow_nan=False)),
        max_size=10,
    ).map(tuple),
    weight=st.sampled_from([0.0, 0.5, 1.0, 2.0]),
)


@given(st.lists(_SCORED, max_size=6))
def test_zscore_fuse_properties(lists: list[ScoredList]) -> None:
    out = zscore_fuse(lists)
    ids = [doc for doc, _ in out]
    union = {doc for ranked in lists for doc, _ in ranked.items}
    # A permutation of the union of the ids: each exactly once.
    assert len(ids) == len(set(ids)) == len(union)
    assert set(ids) == union
    # Scores non-increasing and never below 0 (nothing sits under a list's floor).
    scores = [score for _, score in out]
    assert all(a >= b for a, b in zip(scores, scores[1:], strict=False))
    assert all(score >= 0 for score in scores)
    # The order of the lists does not matter (fsum makes the sums bit-identical).
    assert zscore_fuse(list(reversed(lists))) == out


@given(
    st.lists(st.floats(min_value=0.0, max_value=30.0), min_size=2, max_size=10),
    st.floats(min_value=0.1, max_value=10.0),
    st.floats(min_value=-5.0, max_value=5.0),
)
def test_lifts_do_not_depend_on_a_list_s_scale(
    scores: list[float], factor: float, shift: float
) -> None:
    # What standardising is for: BM25 (3-15) and cosine (0.2-0.7) lists weigh alike.
    assume(max(scores) - min(scores) > 1e-3)  # a spread, not a tie within rounding
    items = [(f"n{i}", s) for i, s in enumerate(scores)]
    moved = [(doc, s * factor + shift) for doc, s in items]
    assert fu.lifts(moved) == pytest.approx(fu.lifts(items), abs=1e-6)


# --- position-aware blending -------------------------------------------------------------


def test_position_weight_bands() -> None:
    assert [fu.position_weight(p) for p in (1, 2, 3)] == [0.75, 0.75, 0.75]
    assert [fu.position_weight(p) for p in (4, 7, 10)] == [0.60, 0.60, 0.60]
    assert [fu.position_weight(p) for p in (11, 30, 1000)] == [0.40, 0.40, 0.40]
    with pytest.raises(ValueError):
        fu.position_weight(0)


def test_blend_at_band_edges_by_hand() -> None:
    # Fused scores already span [0, 1], so min-max leaves them as they are.
    norm = [1.0, 0.9375, 0.875, 0.8125, 0.75, 0.6875, 0.625, 0.5625, 0.5, 0.4375, 0.375, 0.0]
    fused = [(f"p{i}", s) for i, s in enumerate(norm, start=1)]
    rerank = {"p3": 0.5, "p4": 0.25, "p10": 1.0, "p11": 0.75}
    out = blend(fused, rerank)
    final = dict(out)
    # p3 (w 0.75): 0.75·0.875 + 0.25·0.5 = 0.65625 + 0.125 = 0.78125
    assert final["p3"] == pytest.approx(0.78125)
    # p4 (w 0.60): 0.60·0.8125 + 0.40·0.25 = 0.4875 + 0.1 = 0.5875
    assert final["p4"] == pytest.approx(0.5875)
    # p10 (w 0.60): 0.60·0.4375 + 0.40·1.0 = 0.2625 + 0.4 = 0.6625
    assert final["p10"] == pytest.approx(0.6625)
    # p11 (w 0.40): 0.40·0.375 + 0.60·0.75 = 0.15 + 0.45 = 0.6
    assert final["p11"] == pytest.approx(0.6)
    # No rerank score → retrieval alone (w = 1).
    assert final["p1"] == 1.0 and final["p7"] == 0.625 and final["p12"] == 0.0
    # p10 overtakes p7 (0.6625 > 0.625) and p11 overtakes p4 (0.6 > 0.5875).
    assert [doc for doc, _ in out] == [
        "p1", "p2", "p3", "p5", "p6", "p10", "p7", "p11", "p4", "p8", "p9", "p12",
    ]  # fmt: skip


def test_blend_normalises_fused_scores() -> None:
    # RRF-sized scores: normalised to 1, 0.5, 0 (span 0.02).
    fused = [("a", 0.05), ("b", 0.04), ("c", 0.03)]
    out = dict(blend(fused, {"a": 0.0, "b": 1.0, "c": 1.0}))
    # a: 0.75·1 + 0.25·0 = 0.75; b: 0.75·0.5 + 0.25·1 = 0.625; c: 0.75·0 + 0.25·1 = 0.25
    assert out == pytest.approx({"a": 0.75, "b": 0.625, "c": 0.25})
    # A lone candidate normalises to 1.0: 0.75·1 + 0.25·0.2 = 0.8.
    assert blend([("a", 0.03)], {"a": 0.2}) == [("a", pytest.approx(0.8))]


def test_blend_rank_mode_by_hand() -> None:
    fused = [("a", 0.05), ("b", 0.04), ("c", 0.03)]
    out = blend(fused, {"a": 0.0, "b": 1.0, "c": 1.0}, retrieval="rank")
    # a: 0.75·1/1 + 0.25·0 = 0.75; b: 0.75·1/2 + 0.25·1 = 0.625; c: 0.75·1/3 + 0.25 = 0.5.
    assert out == [("a", 0.75), ("b", 0.625), ("c", pytest.approx(0.5))]
    with pytest.raises(ValueError):
        blend(fused, {}, retrieval="bogus")  # type: ignore[arg-type]


def test_blend_edge_cases() -> None:
    assert blend([], {}) == []
    # Equal finals keep fused order; rerank ids outside fused are ignored.
    assert blend([("b", 0.5), ("a", 0.5)], {"zzz": 1.0}) == [("b", 1.0), ("a", 1.0)]
    with pytest.raises(ValueError):
        blend([("a", 0.5), ("a", 0.4)], {})


@st.composite
def _fused_and_rerank(draw: st.DrawFn) -> tuple[list[tuple[str, float]], dict[str, float]]:
    lists = draw(st.lists(_SCORED, max_size=6))
    fused = zscore_fuse(lists)
    unit = st.floats(min_value=0.0, max_value=1.0)
    rerank = {doc: draw(unit) for doc, _ in fused if draw(st.booleans())}
    return fused, rerank


@given(_fused_and_rerank(), st.sampled_from(["score", "rank"]))
def test_blend_properties(
    case: tuple[list[tuple[str, float]], dict[str, float]], retrieval: str
) -> None:
    fused, rerank = case
    out = blend(fused, rerank, retrieval=retrieval)  # type: ignore[arg-type]
    # Same ids, each once.
    assert sorted(doc for doc, _ in out) == sorted(doc for doc, _ in fused)
    assert all(0.0 <= score <= 1.0 for _, score in out)
    finals = [score for _, score in out]
    assert all(a >= b for a, b in zip(finals, finals[1:], strict=False))
    # Without a reranker the fused order is kept.
    assert [doc for doc, _ in blend(fused, {}, retrieval=retrieval)] == [d for d, _ in fused]  # type: ignore[arg-type]


# --- bigrams, Jaccard and MMR ------------------------------------------------------------

FOX = "The quick brown fox jumps over the lazy dog"
CAT = "the quick brown fox jumps over the lazy cat"
POOL = "Postgres connection pooling with PgBouncer"


def test_bigrams_by_hand() -> None:
    assert fu.bigrams("The quick, quick fox!") == {
        ("the", "quick"),
        ("quick", "quick"),
        ("quick", "fox"),
    }
    assert fu.bigrams("alone") == frozenset()
    assert fu.bigrams("") == frozenset()
    # 9 words → 8 bigrams, all distinct.
    assert len(fu.bigrams(FOX)) == 8


def test_jaccard_by_hand() -> None:
    # FOX and CAT share 7 bigrams (all but lazy-dog / lazy-cat): 7 / (8 + 8 − 7) = 7/9.
    assert fu.jaccard(fu.bigrams(FOX), fu.bigrams(CAT)) == pytest.approx(7 / 9)  # 0.778
    assert fu.jaccard(fu.bigrams(FOX), fu.bigrams(POOL)) == 0.0
    assert fu.jaccard(frozenset(), frozenset()) == 0.0
    assert fu.jaccard({1, 2}, {2, 3}) == pytest.approx(1 / 3)


def test_mmr_demotes_near_duplicate_below_distinct_item() -> None:
    items = [("fox", 0.9), ("cat", 0.8), ("pool", 0.7)]
    texts = {"fox": FOX, "cat": CAT, "pool": POOL}
    # cat vs fox: 7/9 = 0.778 > 0.6 → demoted below pool; still present, score unchanged.
    assert mmr_demote(items, texts) == [("fox", 0.9), ("pool", 0.7), ("cat", 0.8)]
    # With a looser threshold (0.8 > 0.778) nothing moves.
    assert mmr_demote(items, texts, threshold=0.8) == items


def test_mmr_threshold_is_strict() -> None:
    # "a b c d e" vs "a b c d f": bigrams ab bc cd de / ab bc cd df → 3 / 5 = 0.6 exactly,
    # which is not > 0.6, so nothing is demoted.
    items = [("x", 0.9), ("y", 0.8), ("z", 0.7)]
    texts = {"x": "a b c d e", "y": "a b c d f", "z": "p q r"}
    assert fu.jaccard(fu.bigrams(texts["x"]), fu.bigrams(texts["y"])) == 0.6
    assert mmr_demote(items, texts) == items


def test_mmr_compares_only_with_kept_items() -> None:
    # A = w1..w6 (5 bigrams); B = w1..w5 x: shares 4 of A's, union 6 → 4/6 = 0.667 → demoted.
    # D = w2 w3 w4 w5 x y: vs A shares w2w3 w3w4 w4w5 → 3/7 = 0.43; vs B shares those and
    # w5x → 4/6 = 0.667, but B was demoted, so D stays among the kept.
    texts = {"A": "w1 w2 w3 w4 w5 w6", "B": "w1 w2 w3 w4 w5 x", "D": "w2 w3 w4 w5 x y"}
    items = [("A", 0.9), ("B", 0.8), ("D", 0.7)]
    assert mmr_demote(items, texts) == [("A", 0.9), ("D", 0.7), ("B", 0.8)]


def test_mmr_walks_in_score_order_and_handles_gaps() -> None:
    # Input not sorted: walked as fox (0.9), cat (0.8); cat demoted. An id without text has
    # no bigrams and is never a duplicate.
    items = [("cat", 0.8), ("ghost", 0.5), ("fox", 0.9)]
    assert mmr_demote(items, {"fox": FOX, "cat": CAT}) == [
        ("fox", 0.9),
        ("ghost", 0.5),
        ("cat", 0.8),
    ]
    assert mmr_demote([], {}) == []
    # Two identical texts: the lower-scored copy goes last.
    same = [("a", 0.9), ("b", 0.8), ("c", 0.1)]
    assert mmr_demote(same, {"a": FOX, "b": FOX, "c": POOL}) == [
        ("a", 0.9),
        ("c", 0.1),
        ("b", 0.8),
    ]


_WORDS = st.lists(st.sampled_from(["alpha", "beta", "gamma", "delta"]), max_size=6).map(" ".join)


@given(
    st.dictionaries(_IDS, st.tuples(st.floats(min_value=0.0, max_value=1.0), _WORDS), max_size=10)
)
def test_mmr_properties(data: dict[str, tuple[float, str]]) -> None:
    items = [(doc, score) for doc, (score, _) in data.items()]
    texts = {doc: text for doc, (_, text) in data.items()}
    out = mmr_demote(items, texts)
    # Demoted, never dropped: the same (id, score) pairs.
    assert sorted(out) == sorted(items)
    if items:
        # The best item is never demoted.
        assert out[0][1] == max(score for _, score in items)


def test_pool_lead_blends_the_best_fragment_with_the_lead() -> None:
    assert fu.pool_lead(0.6, 0.4) == pytest.approx(0.7 * 0.6 + 0.3 * 0.4)  # 0.54
    assert fu.pool_lead(0.5, 0.5) == pytest.approx(0.5)  # the lead is the best
    # A lead above the best cannot be (it is one of the note's fragments): capped.
    assert fu.pool_lead(0.5, 0.9) == pytest.approx(0.5)


def test_keep_below_moves_the_set_aside_ids_after_the_rest() -> None:
    order = [("a", 1.0), ("b", 0.9), ("c", 0.8), ("d", 0.1)]
    assert fu.keep_below(order, {"b"}) == [("a", 1.0), ("c", 0.8), ("d", 0.1), ("b", 0.9)]
    assert fu.keep_below(order, set()) == order
