"""Every memory formula of SPEC §5, as pure functions.

Nothing here reads the clock, the disk or the config: every time-dependent function
takes ``now`` (and the note's ``created`` / ``last_used`` / ``mtime``) as arguments, so
callers and tests decide what "now" is. Thresholds are module constants with the spec's
values; functions take them as keyword arguments where a config may override them.

Time handling: datetimes may be naive or aware (YAML gives both, ``os.stat`` gives
POSIX seconds). Every datetime is normalised by :func:`to_utc` before arithmetic;
a naive datetime is taken to be UTC and a bare ``date`` means midnight UTC, so mixing
kinds never raises ``TypeError``. Timestamps in the future (clock skew, a synced vault)
count as "now": elapsed time is never negative.

Origins: the effective half-life and recency come from ClawMem, the decay score,
promotion/forget thresholds, danger zone and cross-domain boost from CortexGraph, the
half-lives by type from ClawMem's table (SPEC §4).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from vaultmem.vocabulary import DEFAULT_HALF_LIVES, DEFAULT_TYPE, DURABLE_TYPES

# --- constants (SPEC §4, §5) ---------------------------------------------------------

BETA = 0.6  # CortexGraph's use-count exponent: sub-linear reward for repetition
MAX_HALF_LIFE_STRETCH = 3.0  # ClawMem: frequent use stretches a half-life at most 3x
PROMOTE_THRESHOLD = 0.65
PROMOTE_USE_COUNT = 5
PROMOTE_WINDOW = timedelta(days=14)
FORGET_THRESHOLD = 0.05
DANGER_ZONE = (0.15, 0.35)
CROSS_DOMAIN_JACCARD = 0.3  # below this tag overlap a use counts as cross-domain
CROSS_DOMAIN_BOOST = 0.1
MIN_STRENGTH = 1.0
MAX_STRENGTH = 2.0


# --- time ----------------------------------------------------------------------------


def to_utc(value: date | datetime) -> datetime:
    """Return ``value`` as an aware UTC datetime.

    Naive datetimes are taken to be UTC; a ``date`` is midnight UTC of that day. This is
    the single place where kinds of time are reconciled, so no formula ever subtracts a
    naive datetime from an aware one.
    """
    if isinstance(value, datetime):
        if value.tzinfo is None or value.tzinfo.utcoffset(value) is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)
    return datetime(value.year, value.month, value.day, tzinfo=UTC)


def elapsed(
    now: datetime,
    *,
    last_used: datetime | None = None,
    created: datetime | None = None,
    mtime: datetime | None = None,
) -> timedelta:
    """``Δt = now − max(last_used, created, mtime)``, never negative.

    Missing timestamps are ignored; with none at all the note counts as just seen
    (``Δt = 0``), matching the spec's "created: first seen" default. A timestamp after
    ``now`` gives 0 rather than a negative age, so recency stays within (0, 1].
    """
    anchors = [to_utc(t) for t in (last_used, created, mtime) if t is not None]
    if not anchors:
        return timedelta(0)
    return max(to_utc(now) - max(anchors), timedelta(0))


# --- half-lives ----------------------------------------------------------------------

_UNIT_SECONDS = {
    "m": 60.0,
    "min": 60.0,
    "mins": 60.0,
    "minute": 60.0,
    "minutes": 60.0,
    "h": 3600.0,
    "hr": 3600.0,
    "hrs": 3600.0,
    "hour": 3600.0,
    "hours": 3600.0,
    "d": 86400.0,
    "day": 86400.0,
    "days": 86400.0,
    "w": 604800.0,
    "wk": 604800.0,
    "week": 604800.0,
    "weeks": 604800.0,
}
_NEVER = frozenset({"never", "inf", "infinity", "∞"})
_DURATION_RE = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*([a-zA-Z]*)\s*$")
_HALF_LIFE_HELP = (
    "expected a positive number of days, or a number with a unit "
    "d/h/m/w (e.g. 30d, 12h, 90m, 2w), or 'never'"
)


def parse_half_life(value: str | int | float | timedelta) -> timedelta | None:
    """Parse a frontmatter half-life: ``30d``, ``12h``, ``90m``, ``2w``, ``never``.

    Bare numbers (``30``, ``1.5``, ``"45"``) are days. Units are case-insensitive and may
    be spelled out (``3 days``, ``12 hours``). ``never`` (also ``inf``/``∞``) returns
    ``None``: no decay. A ``timedelta`` passes through (validated).

    Raises ``ValueError`` naming the bad value for anything else, including zero or
    negative durations (a zero half-life would divide by zero in λ = ln 2 / h) and
    booleans (YAML ``half_life: yes`` is a mistake, not one day).
    """
    if isinstance(value, bool):
        raise ValueError(f"invalid half-life {value!r}: {_HALF_LIFE_HELP}")
    if isinstance(value, timedelta):
        if value <= timedelta(0):
            raise ValueError(f"invalid half-life {value!r}: must be positive")
        return value
    if isinstance(value, int | float):
        if math.isinf(value) and value > 0:
            return None
        if math.isnan(value) or value <= 0:
            raise ValueError(f"invalid half-life {value!r}: {_HALF_LIFE_HELP}")
        try:
            return timedelta(days=value)
        except OverflowError:
            raise ValueError(f"invalid half-life {value!r}: too large") from None
    if not isinstance(value, str):
        raise ValueError(f"invalid half-life {value!r}: {_HALF_LIFE_HELP}")
    text = value.strip().lower()
    if text in _NEVER:
        return None
    match = _DURATION_RE.match(text)
    if match is None:
        raise ValueError(f"invalid half-life {value!r}: {_HALF_LIFE_HELP}")
    number, unit = float(match.group(1)), match.group(2)
    seconds = _UNIT_SECONDS["d"] if unit == "" else _UNIT_SECONDS.get(unit)
    if seconds is None:
        raise ValueError(f"invalid half-life {value!r}: unknown unit {unit!r}; {_HALF_LIFE_HELP}")
    if number <= 0:
        raise ValueError(f"invalid half-life {value!r}: must be positive")
    try:
        return timedelta(seconds=number * seconds)
    except OverflowError:
        raise ValueError(f"invalid half-life {value!r}: too large") from None


def format_half_life(half_life: timedelta | None) -> str:
    """The shortest exact spelling of a half-life for frontmatter: ``3d``, ``12h``, ``never``.

    Inverse of :func:`parse_half_life` on whole weeks/days/hours/minutes, so a write-back
    round-trips without a diff; other durations fall back to fractional days.
    """
    if half_life is None:
        return "never"
    seconds = half_life.total_seconds()
    # Days before weeks: the spec's own table speaks in days (14d, not 2w).
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds / 86400:g}d"


def default_half_life(note_type: str | None) -> timedelta | None:
    """Half-life by type (SPEC §4); ``None`` means never decays.

    decision, hub, antipattern, preference: never; project 120d; research 90d; note 60d;
    progress 45d; handoff 30d; observation 14d. Unknown or missing types get note's 60d
    (a typo in ``type:`` must not make a note immortal).
    """
    key = (note_type or DEFAULT_TYPE).strip().lower()
    return DEFAULT_HALF_LIVES.get(key, DEFAULT_HALF_LIVES[DEFAULT_TYPE])


def is_durable(note_type: str | None) -> bool:
    """True for the never-decaying types (decision, hub, antipattern, preference)."""
    return (note_type or DEFAULT_TYPE).strip().lower() in DURABLE_TYPES


def effective_half_life(half_life: timedelta | None, use_count: int) -> timedelta | None:
    """ClawMem's stretch: ``h_eff = h · min(3, 1 + 0.5·ln(1 + use_count))``.

    Frequent use stretches the half-life, at most 3x (reached at use_count ≈ 54).
    ``None`` (never) stays ``None``. Negative counts (a hand-edited frontmatter) count
    as 0 so the logarithm is always defined.
    """
    if half_life is None:
        return None
    factor = min(MAX_HALF_LIFE_STRETCH, 1.0 + 0.5 * math.log1p(max(use_count, 0)))
    return half_life * factor


# --- the note's memory state -----------------------------------------------------------


@dataclass(frozen=True)
class MemoryState:
    """What the formulas need to know about one note, already parsed and resolved.

    ``half_life`` is the resolved half-life (frontmatter value, else the type's default);
    ``None`` means never decays. Use :func:`memory_state` to build one from raw values.
    """

    type: str = DEFAULT_TYPE
    half_life: timedelta | None = DEFAULT_HALF_LIVES[DEFAULT_TYPE]
    use_count: int = 0
    strength: float = 1.0
    pinned: bool = False
    created: datetime | None = None
    last_used: datetime | None = None
    mtime: datetime | None = None

    def age(self, now: datetime) -> timedelta:
        """Δt of the recency and decay formulas, see :func:`elapsed`."""
        return elapsed(now, last_used=self.last_used, created=self.created, mtime=self.mtime)


def memory_state(
    *,
    type: str | None = None,
    half_life: str | int | float | timedelta | None = None,
    use_count: int = 0,
    strength: float = 1.0,
    pinned: bool = False,
    created: date | datetime | None = None,
    last_used: date | datetime | None = None,
    mtime: date | datetime | None = None,
) -> MemoryState:
    """Build a :class:`MemoryState`, resolving an absent half-life from the type.

    Here ``half_life=None`` means *absent* (use the type's default); write ``"never"``
    for no decay. Raises ``ValueError`` for an unparsable half-life.
    """
    note_type = (type or DEFAULT_TYPE).strip().lower() or DEFAULT_TYPE
    resolved = default_half_life(note_type) if half_life is None else parse_half_life(half_life)
    return MemoryState(
        type=note_type,
        half_life=resolved,
        use_count=use_count,
        strength=strength,
        pinned=pinned,
        created=None if created is None else to_utc(created),
        last_used=None if last_used is None else to_utc(last_used),
        mtime=None if mtime is None else to_utc(mtime),
    )


def clamp_strength(strength: float) -> float:
    """Strength lives in [1.0, 2.0] (CortexGraph); out-of-range or NaN input is clamped.

    A hand-edited ``strength: 50`` must not let one note dominate every score.
    """
    if math.isnan(strength):
        return MIN_STRENGTH
    return min(MAX_STRENGTH, max(MIN_STRENGTH, strength))


# --- recency and decay -----------------------------------------------------------------


def recency_value(delta: timedelta, half_life_eff: timedelta | None) -> float:
    """``2^(−Δt / h_eff)``; 1.0 when the half-life is never. Result in (0, 1].

    Computed as ``exp2`` of a non-positive exponent, so it underflows towards 0 for
    enormous ages but is clamped to the smallest positive float to stay in (0, 1].
    """
    if half_life_eff is None:
        return 1.0
    ratio = max(delta, timedelta(0)) / half_life_eff
    return max(2.0 ** (-ratio), math.ulp(0.0))


def recency(state: MemoryState, now: datetime) -> float:
    """Recency prior of SPEC §5: ``2^(−Δt / h_eff)`` with ClawMem's stretched half-life.

    ``Δt = now − max(last_used, created, mtime)``; ``h_eff`` from
    :func:`effective_half_life`. Notes that never decay score 1.0.
    """
    return recency_value(state.age(now), effective_half_life(state.half_life, state.use_count))


def age_recency(state: MemoryState, now: datetime) -> float:
    """How recent a note is, for a query that asks for what is recent ("latest…"):
    :func:`recency`, except that a note that never decays is aged at the default type's
    half-life (60 days) instead of scoring 1.0. Never decaying says a note stays true,
    not that it is new: a pinned hub from two months ago is not "the latest".
    """
    half_life = state.half_life or DEFAULT_HALF_LIVES[DEFAULT_TYPE]
    return recency_value(state.age(now), effective_half_life(half_life, state.use_count))


def decay_value(
    delta: timedelta,
    half_life: timedelta | None,
    use_count: int,
    strength: float,
    *,
    beta: float = BETA,
    stretch_half_life: bool = False,
) -> float:
    """CortexGraph's score ``s = max(use_count, 1)^β · e^(−λΔt) · strength``, ``λ = ln 2 / h``.

    Which half-life sets λ: the plain one, ``h`` (default). SPEC §5 writes
    ``λ = ln 2 / h_eff``, but its own worked example — "a 3-day half-life note unused for
    3 days with use_count 1 and strength 1 scores 0.5" — only holds with ``h``: with
    ``h_eff`` it is ``e^(−ln 2 · 3/4.04) = 0.598``. We keep both formulas as written and
    give each to the system it came from: ClawMem's stretch shapes the *recency* prior
    (:func:`recency`), while CortexGraph's score keeps CortexGraph's λ, exactly as its
    seed defines it ("λ = ln(2) / halflife; a memory's score will drop to 50% of its
    current value after 3 days without access" — true for every use_count this way).
    It also avoids rewarding use twice: the score already grows with ``use_count^β``;
    stretching λ too would make a note touched ten times practically immortal to gc.
    ``stretch_half_life=True`` gives the literal ``h_eff`` reading, for comparison.

    ``never`` half-lives give ``e^0 = 1``, so ``s = max(use_count,1)^β · strength``.
    """
    h = effective_half_life(half_life, use_count) if stretch_half_life else half_life
    base = max(use_count, 1) ** beta * clamp_strength(strength)
    if h is None:
        return base
    lam_dt = math.log(2.0) * (max(delta, timedelta(0)) / h)
    return base * math.exp(-lam_dt)


def decay_score(
    state: MemoryState, now: datetime, *, beta: float = BETA, stretch_half_life: bool = False
) -> float:
    """The note's decay score ``s`` at ``now`` (see :func:`decay_value` for the formula).

    Δt is measured from the latest of last_used, created and mtime, like recency: an
    edit by hand is a use of the note, and a note is never older than its last touch.
    """
    return decay_value(
        state.age(now),
        state.half_life,
        state.use_count,
        state.strength,
        beta=beta,
        stretch_half_life=stretch_half_life,
    )


# --- lifecycle tests -------------------------------------------------------------------


def promotion_reason(
    state: MemoryState,
    now: datetime,
    *,
    threshold: float = PROMOTE_THRESHOLD,
    use_count: int = PROMOTE_USE_COUNT,
    window: timedelta = PROMOTE_WINDOW,
    beta: float = BETA,
) -> str | None:
    """Why ``state`` should be promoted at ``now``, or ``None`` if it should not.

    Promote when ``s ≥ 0.65`` (score), or when ``use_count ≥ 5`` within 14 days of
    ``created`` (usage). The usage rule holds if the note is still inside its window
    (``now − created ≤ 14 d``, CortexGraph's check), or if its last use was (then every
    counted use happened inside the window, even if `promote` runs later). Without
    ``created`` only the score rule applies.

    Note: a fresh note (Δt = 0, use_count 0, strength 1) scores exactly 1.0 and so passes
    the score rule; choosing which notes are candidates at all (status, folder, minimum
    age) is the caller's business.
    """
    score = decay_score(state, now, beta=beta)
    if score >= threshold:
        return f"score {score:.3f} >= {threshold:g}"
    if state.use_count >= use_count and state.created is not None:
        created = to_utc(state.created)
        in_window = to_utc(now) - created <= window
        used_in_window = state.last_used is not None and to_utc(state.last_used) - created <= window
        if in_window or used_in_window:
            days = window.total_seconds() / 86400
            return f"use_count {state.use_count} >= {use_count} within {days:g} days of creation"
    return None


def should_promote(state: MemoryState, now: datetime) -> bool:
    """True when :func:`promotion_reason` gives a reason."""
    return promotion_reason(state, now) is not None


def should_forget(
    state: MemoryState, now: datetime, *, threshold: float = FORGET_THRESHOLD, beta: float = BETA
) -> bool:
    """gc test: ``s < 0.05``, not pinned, and the type is not durable.

    Durable types (decision, hub, antipattern, preference) are never forgotten, even if
    their frontmatter carries a finite half-life; pinned notes neither.
    """
    if state.pinned or is_durable(state.type):
        return False
    return decay_score(state, now, beta=beta) < threshold


def review_priority(score: float, *, zone: tuple[float, float] = DANGER_ZONE) -> float:
    """Natural spaced repetition: priority of a note whose decay score is ``score``.

    Inside the danger zone ``[lo, hi]`` (default [0.15, 0.35]): ``x = (s − lo)/(hi − lo)``,
    ``p = 1 − 4(x − 0.5)²`` — 0 at the edges, 1 at the midpoint 0.25. Outside: 0.
    """
    lo, hi = zone
    if math.isnan(score) or score < lo or score > hi:
        return 0.0
    x = (score - lo) / (hi - lo)
    return min(1.0, max(0.0, 1.0 - 4.0 * (x - 0.5) ** 2))


# --- cross-domain use -----------------------------------------------------------------


def normalize_tags(tags: Iterable[str] | str | None) -> frozenset[str]:
    """Tags as Obsidian compares them: no leading ``#``, lower-cased, blanks dropped.

    A single string is one tag (YAML ``tags: foo``), not a set of characters.
    """
    if tags is None:
        return frozenset()
    if isinstance(tags, str):
        tags = [tags]
    out = set()
    for tag in tags:
        # Same rule as vaultmem.markdown.normalise_tag, so inline and frontmatter tags meet.
        norm = str(tag).strip().lstrip("#").strip().lower()
        if norm:
            out.add(norm)
    return frozenset(out)


def jaccard(a: Iterable[str] | str | None, b: Iterable[str] | str | None) -> float:
    """``|A ∩ B| / |A ∪ B|`` of normalised tag sets; 0.0 when both are empty."""
    sa, sb = normalize_tags(a), normalize_tags(b)
    union = sa | sb
    if not union:
        return 0.0
    return len(sa & sb) / len(union)


def is_cross_domain(
    note_tags: Iterable[str] | str | None,
    context_tags: Iterable[str] | str | None,
    *,
    threshold: float = CROSS_DOMAIN_JACCARD,
) -> bool:
    """CortexGraph: a use is cross-domain when tag Jaccard < 0.3.

    With no tags on either side there is nothing to compare, so it is not cross-domain
    (as in CortexGraph) — otherwise every untagged note would gain strength on each use.
    """
    if not normalize_tags(note_tags) or not normalize_tags(context_tags):
        return False
    return jaccard(note_tags, context_tags) < threshold


def cross_domain_strength(
    strength: float,
    note_tags: Iterable[str] | str | None,
    context_tags: Iterable[str] | str | None,
    *,
    boost: float = CROSS_DOMAIN_BOOST,
) -> float:
    """``strength + 0.1`` (capped at 2.0) for a cross-domain use, else ``strength``."""
    if is_cross_domain(note_tags, context_tags):
        return min(MAX_STRENGTH, clamp_strength(strength) + boost)
    return strength


@dataclass(frozen=True)
class Reinforcement:
    """New values of the usage keys after one reinforcement (``touch``/``observe``)."""

    use_count: int
    review_count: int
    cross_domain_count: int
    strength: float
    last_used: datetime
    last_review: datetime
    cross_domain: bool


def reinforce(
    *,
    now: datetime,
    use_count: int = 0,
    review_count: int = 0,
    cross_domain_count: int = 0,
    strength: float = 1.0,
    note_tags: Iterable[str] | str | None = None,
    context_tags: Iterable[str] | str | None = None,
    strength_boost: float = 0.0,
) -> Reinforcement:
    """SPEC §5 reinforce: ``last_used = last_review = now``, ``use_count += 1``,
    ``review_count += 1``, optional ``strength += strength_boost``; a cross-domain use
    (see :func:`is_cross_domain`) adds 0.1 more and ``cross_domain_count += 1``.
    Strength stays within [1.0, 2.0].
    """
    cross = is_cross_domain(note_tags, context_tags)
    new_strength = clamp_strength(strength) + max(strength_boost, 0.0)
    if cross:
        new_strength += CROSS_DOMAIN_BOOST
    at = to_utc(now)
    return Reinforcement(
        use_count=max(use_count, 0) + 1,
        review_count=max(review_count, 0) + 1,
        cross_domain_count=max(cross_domain_count, 0) + (1 if cross else 0),
        strength=min(MAX_STRENGTH, new_strength),
        last_used=at,
        last_review=at,
        cross_domain=cross,
    )


# --- memory-aware ranking ----------------------------------------------------------------

# The prior moves a result by at most ±PRIOR_WEIGHT/2 of the top result's relevance (1.0).
# Set by the benchmark (BENCHMARKS.md, `bench_query.py sweep` on the dev vault with
# frontmatter): the largest weight that costs query at most 1% MRR@10, half the 2% the
# spec allows, because that vault's recency signal is nearly flat (every note is months
# old) and real vaults, with more spread, see the prior move more results.
PRIOR_WEIGHT = 0.2
# Recency-seeking queries ("latest", "last time") let recency dominate the prior and
# double its reach: the user asked for time to matter.
RECENCY_QUERY_WEIGHT = 0.4
_RECENCY_RE = re.compile(
    r"\b(latest|last\s+time|lately|yesterday|today|recent|recently|newest|most\s+recent|"
    r"this\s+week|last\s+week|current|currently|now)\b",
    re.IGNORECASE,
)


def asks_for_recency(text: str) -> bool:
    """Whether a query asks for what is recent ("latest", "last time", "yesterday"…)."""
    return _RECENCY_RE.search(text) is not None


def memory_prior(
    recency: float, confidence: float, quality: float, *, recency_query: bool = False
) -> float:
    """The memory prior in [0, 1]: ``0.4·recency + 0.3·confidence + 0.3·quality``.

    For a recency-seeking query: ``0.8·recency + 0.1·confidence + 0.1·quality``.
    Inputs are clamped to [0, 1].
    """
    r, c, q = (min(1.0, max(0.0, v)) for v in (recency, confidence, quality))
    if recency_query:
        return 0.8 * r + 0.1 * c + 0.1 * q
    return 0.4 * r + 0.3 * c + 0.3 * q


# What a pin adds, as a share of the prior's weight: +0.1 at the default weight 0.2, kept
# over ClawMem's +0.3 by benchmarks/bench_pins.py (BENCHMARKS.md): with a twentieth of the
# man-page dev notes pinned, +0.3 put a pinned note that is not the answer first for one
# query in five and cost the queries whose answer is not pinned 9% MRR@10 (0.791 → 0.717;
# +0.1: 1.3%), far past the 2% the memory prior may cost.
PIN_SHARE = 0.5


def ranked_score(
    relevance: float,
    prior: float,
    *,
    weight: float = PRIOR_WEIGHT,
    pinned: bool = False,
    superseded: bool = False,
    pin_bonus: float | None = None,
) -> float:
    """Relevance first: ``relevance + weight·(prior − 0.5)``, plus ``pin_bonus`` when
    pinned (default ``weight·PIN_SHARE``, i.e. ``weight/2``), minus ``weight`` when
    superseded.

    ``relevance`` is the retrieval score normalised to [0, 1] (top result = 1). A note
    therefore overtakes another only when their relevances differ by less than the
    weight: the bound that keeps memory signals from burying a relevant note.
    """
    score = relevance + weight * (prior - 0.5)
    if pinned:
        score += weight * PIN_SHARE if pin_bonus is None else pin_bonus
    if superseded:
        score -= weight
    return score


# --- versions of one memory ------------------------------------------------------------

# A memory restated later (an agent that wrote "port 3100" without --supersedes on the
# "port 3000" note) leaves two active notes that answer the same question; recency cannot
# order them when their type never decays (decisions, preferences). Two results are
# versions of one memory when they share most of their tags and answer the query with the
# same words. Set on the memory-evolution benchmark (BENCHMARKS.md): no looser value of
# either overlap moved a note above an answer about another subject there.
VERSION_TAG_OVERLAP = 0.5
VERSION_TERM_OVERLAP = 0.5
# The newer note must hold most of the older one's query weight: a newer note that lacks
# the query's rarest word ("tests" in "which test style does the user prefer?") answers a
# neighbouring question, not this one.
VERSION_COVERAGE = 0.8


def restates(older: frozenset[str], newer: frozenset[str], weights: Mapping[str, float]) -> bool:
    """Whether a newer note answers a query as an older one does: the query terms each
    holds overlap by at least ``VERSION_TERM_OVERLAP`` (Jaccard), and the newer holds at
    least ``VERSION_COVERAGE`` of the older's term weight (a term without a weight
    weighs 1).

    Example:
        >>> restates(frozenset({"port", "notif"}), frozenset({"port", "notif", "servic"}), {})
        True
    """
    union = older | newer
    if not older or len(older & newer) < VERSION_TERM_OVERLAP * len(union):
        return False
    weight = sum(weights.get(t, 1.0) for t in older)
    return sum(weights.get(t, 1.0) for t in newer) >= VERSION_COVERAGE * weight


def same_subject_tags(a: Iterable[str], b: Iterable[str]) -> bool:
    """Tags that put two memories on one subject: at least one shared and a Jaccard of at
    least ``VERSION_TAG_OVERLAP``; untagged memories never are (nothing says their subject).
    """
    return bool(normalize_tags(a) & normalize_tags(b)) and jaccard(a, b) >= VERSION_TAG_OVERLAP


def tagged_apart(a: Iterable[str], b: Iterable[str]) -> bool:
    """Whether two notes' tags say they are about different subjects: both tagged, and
    not on one subject (:func:`same_subject_tags`). Alike words then do not make them
    duplicates: "the checkout service listens on port 3100" and the same about billing.
    """
    return bool(normalize_tags(a)) and bool(normalize_tags(b)) and not same_subject_tags(a, b)
