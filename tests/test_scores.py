"""Tests of vaultmem.scores: numbers worked out by hand, boundaries, properties."""

from __future__ import annotations

import math
from datetime import UTC, date, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vaultmem import quality as ql
from vaultmem import scores as sc
from vaultmem import vocabulary
from vaultmem.scores import MemoryState, memory_state

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
DAY = timedelta(days=1)


def days_ago(n: float) -> datetime:
    return NOW - timedelta(days=n)


# --- effective half-life and recency ---------------------------------------------------


def test_effective_half_life_by_hand() -> None:
    # use_count 0: ln(1) = 0, no stretch.
    assert sc.effective_half_life(timedelta(days=60), 0) == timedelta(days=60)
    # use_count 1: 30 · (1 + 0.5·ln 2) = 30 · 1.3465736 = 40.397 days.
    h = sc.effective_half_life(timedelta(days=30), 1)
    assert h is not None
    assert h.total_seconds() / 86400 == pytest.approx(40.3972077, rel=1e-7)
    # The stretch caps at 3x (1 + 0.5·ln(1+u) reaches 3 at u = e^4 − 1 ≈ 53.6).
    assert sc.effective_half_life(timedelta(days=10), 53) < timedelta(days=30)  # type: ignore[operator]
    assert sc.effective_half_life(timedelta(days=10), 54) == timedelta(days=30)
    assert sc.effective_half_life(timedelta(days=10), 10_000) == timedelta(days=30)
    # never stays never; a negative (hand-edited) count is treated as 0.
    assert sc.effective_half_life(None, 5) is None
    assert sc.effective_half_life(timedelta(days=10), -7) == timedelta(days=10)


def test_recency_by_hand() -> None:
    note = memory_state(type="note", created=days_ago(60))  # 60d, use_count 0
    assert sc.recency(note, NOW) == pytest.approx(0.5, abs=1e-12)
    # Used heavily: h_eff = 3 · 60 = 180 days, so 180 days after last use is one half-life.
    busy = memory_state(type="note", use_count=100, last_used=days_ago(180))
    assert sc.recency(busy, NOW) == pytest.approx(0.5, abs=1e-12)
    # use_count 1, 30d: h_eff = 40.397 d; after 40.397 days recency is 0.5.
    handoff = memory_state(type="handoff", use_count=1, last_used=days_ago(40.3972077))
    assert sc.recency(handoff, NOW) == pytest.approx(0.5, abs=1e-7)
    # Just touched: 1.0. Never-decaying type: 1.0 whatever the age.
    assert sc.recency(memory_state(last_used=NOW), NOW) == 1.0
    assert sc.recency(memory_state(type="decision", created=days_ago(5000)), NOW) == 1.0


def test_age_uses_latest_anchor() -> None:
    state = memory_state(
        type="note", created=days_ago(300), last_used=days_ago(200), mtime=days_ago(60)
    )
    assert state.age(NOW) == timedelta(days=60)
    assert sc.recency(state, NOW) == pytest.approx(0.5)
    # No timestamps at all: treated as just seen.
    assert sc.elapsed(NOW) == timedelta(0)
    # Future timestamps (clock skew) give age 0, not a negative one.
    assert sc.elapsed(NOW, mtime=NOW + DAY) == timedelta(0)


def test_naive_aware_and_date_mix() -> None:
    naive_created = datetime(2025, 5, 31, 12, 0)  # naive = UTC
    assert sc.elapsed(NOW, created=naive_created) == DAY
    assert sc.elapsed(NOW.replace(tzinfo=None), created=days_ago(2)) == 2 * DAY
    plus2 = timezone(timedelta(hours=2))
    assert sc.elapsed(NOW, last_used=datetime(2025, 6, 1, 14, 0, tzinfo=plus2)) == timedelta(0)
    assert sc.to_utc(date(2025, 6, 1)) == datetime(2025, 6, 1, tzinfo=UTC)
    state = memory_state(created=date(2025, 5, 1))
    assert state.created == datetime(2025, 5, 1, tzinfo=UTC)


# --- decay score -----------------------------------------------------------------------


def test_spec_example_three_day_note_scores_half() -> None:
    # SPEC/issue example: 3-day half-life, unused for 3 days, use_count 1, strength 1 → 0.5.
    # This holds because the decay score's λ uses the plain half-life h (CortexGraph's
    # λ = ln 2 / halflife); ClawMem's stretched h_eff only shapes recency. See
    # scores.decay_value for the reasoning.
    state = memory_state(half_life="3d", use_count=1, strength=1.0, last_used=days_ago(3))
    assert sc.decay_score(state, NOW) == pytest.approx(0.5, abs=1e-12)
    # The literal "λ = ln 2 / h_eff" reading would give 2^(−3/4.0397) = 0.5977 instead.
    literal = sc.decay_score(state, NOW, stretch_half_life=True)
    assert literal == pytest.approx(0.5976506875, abs=1e-9)
    # CortexGraph: "drops to 50% of its current value after 3 days" — for any use_count.
    for uses in (1, 4, 25):
        s0 = sc.decay_value(timedelta(0), timedelta(days=3), uses, 1.3)
        s3 = sc.decay_value(3 * DAY, timedelta(days=3), uses, 1.3)
        assert s3 / s0 == pytest.approx(0.5)


def test_decay_score_by_hand() -> None:
    # 4^0.6 · e^(−ln2 · 20/10) · 1.5 = 2.29740 · 0.25 · 1.5 = 0.861524
    s = sc.decay_value(20 * DAY, timedelta(days=10), 4, 1.5)
    assert s == pytest.approx(0.8615237662, abs=1e-9)
    # use_count 0 counts as 1: max(use_count, 1)^β.
    assert sc.decay_value(10 * DAY, timedelta(days=10), 0, 1.0) == pytest.approx(0.5)
    # Fresh note: 1^β · e^0 · 1 = 1.0.
    assert sc.decay_score(memory_state(created=NOW), NOW) == 1.0
    # never: no decay, s = max(u,1)^β · strength.
    assert sc.decay_value(1000 * DAY, None, 32, 2.0) == pytest.approx(32**0.6 * 2.0)
    # Strength is clamped to [1, 2]: a hand-edited 50 counts as 2, 0.2 as 1.
    assert sc.decay_value(timedelta(0), timedelta(days=1), 1, 50.0) == 2.0
    assert sc.decay_value(timedelta(0), timedelta(days=1), 1, 0.2) == 1.0
    assert sc.decay_value(timedelta(0), timedelta(days=1), 1, float("nan")) == 1.0


# --- promotion -------------------------------------------------------------------------


def test_promote_by_score() -> None:
    fresh = memory_state(half_life="3d", created=NOW)
    assert sc.should_promote(fresh, NOW)  # s = 1.0 ≥ 0.65
    assert sc.promotion_reason(fresh, NOW) == "score 1.000 >= 0.65"
    # 3d note, 3 days unused, u=1 → s = 0.5 < 0.65; too few uses → not promoted.
    stale = memory_state(half_life="3d", use_count=1, created=days_ago(3), last_used=days_ago(3))
    assert not sc.should_promote(stale, NOW)


def test_promote_by_count_within_14_days() -> None:
    # 5 uses, created 10 days ago, last used 9 days ago: s = 5^0.6 · 2^(−3) = 0.328 < 0.65,
    # but use_count ≥ 5 within 14 days of creation.
    state = memory_state(half_life="3d", use_count=5, created=days_ago(10), last_used=days_ago(9))
    assert sc.decay_score(state, NOW) == pytest.approx(0.3283159756)
    reason = sc.promotion_reason(state, NOW)
    assert reason is not None and reason.startswith("use_count 5 >= 5 within 14 days")
    # Four uses are not enough.
    fewer = memory_state(half_life="3d", use_count=4, created=days_ago(10), last_used=days_ago(9))
    assert not sc.should_promote(fewer, NOW)


def test_no_promote_by_count_after_14_days() -> None:
    # Created 20 days ago, last (5th) use on day 15 — outside the window; 1d half-life so
    # s = 5^0.6 · 2^(−5) = 0.082 < 0.65.
    state = memory_state(half_life="1d", use_count=5, created=days_ago(20), last_used=days_ago(5))
    assert sc.decay_score(state, NOW) == pytest.approx(0.0820789939)
    assert not sc.should_promote(state, NOW)


def test_promote_by_count_when_all_uses_fell_in_window() -> None:
    # All six uses happened in the first 10 days (last_used − created = 10d ≤ 14d), and
    # `promote` only runs on day 30: still promoted, the uses were inside the window.
    state = memory_state(half_life="1d", use_count=6, created=days_ago(30), last_used=days_ago(20))
    assert sc.should_promote(state, NOW)
    # Without `created` only the score rule can apply.
    orphan = memory_state(half_life="1d", use_count=6, last_used=days_ago(20))
    assert not sc.should_promote(orphan, NOW)


# --- forgetting ------------------------------------------------------------------------


def test_forget_threshold() -> None:
    # 1d half-life, u=1: s = 2^(−Δt). s(4.30d) = 0.0508 ≥ 0.05, s(4.35d) = 0.0490 < 0.05.
    kept = memory_state(type="observation", half_life="1d", use_count=1, last_used=days_ago(4.30))
    gone = memory_state(type="observation", half_life="1d", use_count=1, last_used=days_ago(4.35))
    assert sc.decay_score(kept, NOW) == pytest.approx(0.0507657748)
    assert not sc.should_forget(kept, NOW)
    assert sc.should_forget(gone, NOW)


def test_pinned_never_forgotten() -> None:
    state = memory_state(type="observation", half_life="1d", pinned=True, last_used=days_ago(99))
    assert sc.decay_score(state, NOW) < 0.05
    assert not sc.should_forget(state, NOW)


@pytest.mark.parametrize("note_type", ["decision", "hub", "antipattern", "preference", "Hub"])
def test_durable_types_never_forgotten(note_type: str) -> None:
    # Even with a short half-life written in their frontmatter (e.g. by `remember`).
    state = memory_state(type=note_type, half_life="1h", created=days_ago(365))
    assert sc.decay_score(state, NOW) < 1e-100
    assert not sc.should_forget(state, NOW)
    # With their default half-life they do not decay at all.
    assert sc.decay_score(memory_state(type=note_type, created=days_ago(365)), NOW) == 1.0


def test_non_durable_types_can_be_forgotten() -> None:
    for note_type in ("note", "project", "research", "progress", "handoff", "observation", "x"):
        state = memory_state(type=note_type, created=days_ago(5000))
        assert sc.should_forget(state, NOW), note_type


# --- review priority -------------------------------------------------------------------


def test_review_priority_danger_zone() -> None:
    assert sc.review_priority(0.15) == 0.0
    assert sc.review_priority(0.35) == pytest.approx(0.0, abs=1e-12)
    assert sc.review_priority(0.25) == pytest.approx(1.0)
    # x = 0.25 → 1 − 4·(0.25)² = 0.75; symmetric at 0.30.
    assert sc.review_priority(0.20) == pytest.approx(0.75)
    assert sc.review_priority(0.30) == pytest.approx(0.75)
    for outside in (0.0, 0.1499, 0.3501, 0.65, 3.0, -1.0, float("nan")):
        assert sc.review_priority(outside) == 0.0


@given(st.floats(min_value=-1.0, max_value=5.0, allow_nan=False))
def test_review_priority_bounds(score: float) -> None:
    p = sc.review_priority(score)
    assert 0.0 <= p <= 1.0
    if not 0.15 <= score <= 0.35:
        assert p == 0.0


# --- cross-domain ----------------------------------------------------------------------


def test_jaccard_cases() -> None:
    assert sc.jaccard({"a", "b"}, {"b", "c"}) == pytest.approx(1 / 3)
    assert sc.jaccard(["a"], ["a"]) == 1.0
    assert sc.jaccard([], []) == 0.0
    assert sc.jaccard(["#Python", " python "], ["python"]) == 1.0  # Obsidian-style compare
    assert sc.jaccard("foo", ["foo", "bar"]) == 0.5  # a single string is one tag


def test_cross_domain_detection() -> None:
    # CortexGraph's example: no overlap at all.
    assert sc.is_cross_domain(["security", "jwt", "preferences"], ["api", "auth", "backend"])
    # 1/6 < 0.3 → cross-domain; 1/3 ≥ 0.3 → same domain.
    assert sc.is_cross_domain(["a", "b", "c"], ["c", "d", "e", "f"])
    assert not sc.is_cross_domain(["a", "b"], ["b", "c"])
    # Exactly 0.3 (3/10) is not below the threshold.
    assert not sc.is_cross_domain(list("abcdefghij"), ["a", "b", "c"])
    # Nothing to compare → not cross-domain.
    assert not sc.is_cross_domain([], ["api"])
    assert not sc.is_cross_domain(["api"], None)


def test_cross_domain_strength_cap() -> None:
    assert sc.cross_domain_strength(1.0, ["x"], ["y"]) == pytest.approx(1.1)
    assert sc.cross_domain_strength(1.95, ["x"], ["y"]) == 2.0
    assert sc.cross_domain_strength(2.0, ["x"], ["y"]) == 2.0
    assert sc.cross_domain_strength(1.3, ["x"], ["x"]) == 1.3  # same domain: unchanged


def test_reinforce() -> None:
    r = sc.reinforce(
        now=NOW,
        use_count=2,
        review_count=1,
        cross_domain_count=0,
        strength=1.0,
        note_tags=["jwt"],
        context_tags=["css"],
    )
    assert (r.use_count, r.review_count, r.cross_domain_count) == (3, 2, 1)
    assert r.strength == pytest.approx(1.1)
    assert r.last_used == r.last_review == NOW
    assert r.cross_domain
    same = sc.reinforce(now=NOW, strength=1.95, strength_boost=0.2)
    assert same.strength == 2.0 and same.cross_domain_count == 0 and not same.cross_domain


# --- half-life parsing and defaults ----------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("30d", timedelta(days=30)),
        ("12h", timedelta(hours=12)),
        ("90m", timedelta(minutes=90)),
        ("2w", timedelta(days=14)),
        ("1.5d", timedelta(hours=36)),
        (" 3 days ", timedelta(days=3)),
        ("12 Hours", timedelta(hours=12)),
        ("45", timedelta(days=45)),
        (30, timedelta(days=30)),
        (0.5, timedelta(hours=12)),
        (timedelta(days=2), timedelta(days=2)),
        ("never", None),
        ("NEVER", None),
        ("inf", None),
        (float("inf"), None),
    ],
)
def test_parse_half_life(text: str | float | timedelta, expected: timedelta | None) -> None:
    assert sc.parse_half_life(text) == expected


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "   ",
        "abc",
        "3x",
        "d",
        "-3d",
        "0",
        "0d",
        "3d4h",
        "1e3d",
        0,
        -1,
        float("nan"),
        True,
        timedelta(0),
        10**20,
    ],
)
def test_parse_half_life_errors(bad: object) -> None:
    with pytest.raises(ValueError, match="invalid half-life") as info:
        sc.parse_half_life(bad)  # type: ignore[arg-type]
    assert repr(bad) in str(info.value)


def test_parse_half_life_error_message_is_helpful() -> None:
    with pytest.raises(ValueError) as info:
        sc.parse_half_life("3x")
    message = str(info.value)
    assert "'3x'" in message and "unknown unit 'x'" in message
    assert "30d" in message and "never" in message


def test_format_half_life_round_trip() -> None:
    for text in ("3d", "30d", "12h", "90m", "never", "14d", "1.5d"):
        parsed = sc.parse_half_life(text)
        assert sc.parse_half_life(sc.format_half_life(parsed)) == parsed
    assert sc.format_half_life(timedelta(days=14)) == "14d"
    assert sc.format_half_life(timedelta(hours=36)) == "36h"
    assert sc.format_half_life(None) == "never"


def test_default_half_life_by_type() -> None:
    table = {
        "decision": None,
        "hub": None,
        "antipattern": None,
        "preference": None,
        "project": 120,
        "research": 90,
        "note": 60,
        "progress": 45,
        "handoff": 30,
        "observation": 14,
    }
    for note_type, days in table.items():
        expected = None if days is None else timedelta(days=days)
        assert sc.default_half_life(note_type) == expected, note_type
        assert memory_state(type=note_type).half_life == expected
    assert sc.default_half_life("Decision") is None
    assert sc.default_half_life("tweet") == timedelta(days=60)  # unknown → note's
    assert sc.default_half_life(None) == timedelta(days=60)
    assert set(vocabulary.NOTE_TYPES) == set(table)
    assert {"decision", "hub", "antipattern", "preference"} == vocabulary.DURABLE_TYPES


def test_memory_state_explicit_half_life_beats_type() -> None:
    assert memory_state(type="decision", half_life="3d").half_life == timedelta(days=3)
    assert memory_state(type="observation", half_life="never").half_life is None
    with pytest.raises(ValueError):
        memory_state(half_life="soon")
    # MemoryState itself is frozen.
    with pytest.raises(AttributeError):
        MemoryState().use_count = 3  # type: ignore[misc]


# --- quality ---------------------------------------------------------------------------


def test_quality_plain_text_length_only() -> None:
    body = "lorem ipsum " * 70  # ≥ 800 chars, no structure, no signal words, no meta
    q = ql.quality_breakdown(body)
    assert (q.length, q.structure, q.signal, q.frontmatter) == (1.0, 0.0, 0.0, 0.0)
    assert q.score == pytest.approx(0.30)
    assert ql.quality("") == 0.0
    assert ql.quality("lorem ipsum " * 33) == pytest.approx(0.30 * 395 / 800)


def test_quality_rich_note_scores_high() -> None:
    body = (
        "# Release process\n\n## Decision\n\nWe decided to tag first because the rationale "
        "is reproducibility. Actually the old way was wrong; avoid force-pushes.\n\n"
        "- build\n- tag\n- publish\n" + "details " * 100
    )
    meta = {"title": "Release", "tags": ["ops"], "type": "decision", "related": ["[[CI]]"]}
    q = ql.quality_breakdown(body, meta)
    assert q.structure == 1.0 and q.signal == 1.0 and q.frontmatter == 1.0
    assert q.length == 1.0 and q.score == pytest.approx(1.0)


def test_quality_ignores_headings_in_code_fences() -> None:
    body = "```\n# not a heading\n- not an item\n```\n# real heading\n"
    q = ql.quality_breakdown(body)
    assert q.structure == pytest.approx(0.25)  # one heading of two, no list items


def test_quality_long_notes_taper() -> None:
    assert ql.quality_breakdown("x" * 16000).length == pytest.approx(0.75)
    assert ql.quality_breakdown("x" * 64000).length == 0.5


def test_quality_empty_meta_values_do_not_count() -> None:
    meta: dict[str, object] = {"title": "", "tags": [], "aliases": None, "type": "note"}
    assert ql.quality_breakdown("x", meta).frontmatter == pytest.approx(0.25)


@given(
    st.text(max_size=3000),
    st.dictionaries(
        st.sampled_from(["title", "tags", "x"]), st.one_of(st.none(), st.text(max_size=5))
    ),
)
def test_quality_in_unit_interval(body: str, meta: dict[str, str | None]) -> None:
    assert 0.0 <= ql.quality(body, meta) <= 1.0


# --- properties ------------------------------------------------------------------------

half_lives = st.one_of(
    st.none(), st.timedeltas(min_value=timedelta(minutes=1), max_value=timedelta(days=3650))
)
ages = st.timedeltas(min_value=timedelta(0), max_value=timedelta(days=36500))
counts = st.integers(min_value=0, max_value=10_000)


@given(ages, half_lives, counts)
def test_recency_in_unit_interval(delta: timedelta, h: timedelta | None, uses: int) -> None:
    r = sc.recency_value(delta, sc.effective_half_life(h, uses))
    assert 0.0 < r <= 1.0


@given(ages, ages, half_lives, counts)
def test_recency_monotone_in_age(
    a: timedelta, b: timedelta, h: timedelta | None, uses: int
) -> None:
    lo, hi = sorted((a, b))
    h_eff = sc.effective_half_life(h, uses)
    assert sc.recency_value(hi, h_eff) <= sc.recency_value(lo, h_eff)


@given(ages, half_lives, counts, counts, st.floats(min_value=1.0, max_value=2.0), st.booleans())
def test_decay_monotone_in_use_count(
    delta: timedelta, h: timedelta | None, u1: int, u2: int, strength: float, stretch: bool
) -> None:
    lo, hi = sorted((u1, u2))
    s_lo = sc.decay_value(delta, h, lo, strength, stretch_half_life=stretch)
    s_hi = sc.decay_value(delta, h, hi, strength, stretch_half_life=stretch)
    assert s_lo <= s_hi
    assert s_lo >= 0.0 and math.isfinite(s_hi)


@given(ages, ages, half_lives, counts)
def test_decay_monotone_in_age(a: timedelta, b: timedelta, h: timedelta | None, uses: int) -> None:
    lo, hi = sorted((a, b))
    assert sc.decay_value(hi, h, uses, 1.0) <= sc.decay_value(lo, h, uses, 1.0)


@given(
    st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2040, 1, 1)),
    st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2040, 1, 1)),
    st.booleans(),
)
def test_elapsed_never_negative_and_mixes_kinds(a: datetime, b: datetime, aware: bool) -> None:
    now = a.replace(tzinfo=UTC) if aware else a
    assert sc.elapsed(now, created=b) >= timedelta(0)
