"""How each of vaultmem's own frontmatter keys merges when two clones changed a note.

:data:`RULES` is the one table of per-key merge semantics: every key of
:data:`vaultmem.properties.OWNED_KEYS` has exactly one :class:`Rule` (a test checks it),
and :func:`merge_owned` applies them. A key that only one side changed takes that side's
value, as in any three-way merge; a rule decides when both sides changed a key (for the
keys that add up, also when both changed it to the same value: two machines that each
counted one use from a base of 1 both say 2, and the note has been used 3 times):

- counters (``use_count``…) add both sides' deltas to the base: base 1, one side 3, the
  other 2 → 4 (each side counted its own uses);
- ``last_*`` times take the later; ``created`` keeps the base's (vaultmem never rewrites
  it), else the earlier;
- ``strength`` grows only by cross-domain use, so it is the base plus both deltas, capped
  at :data:`vaultmem.scores.MAX_STRENGTH`;
- ``confidence`` cannot be recomputed from the other keys (nothing counts confirmations
  or contradictions; ``last_confirmed`` dates only the last one), so each side's change is
  read back as the vaultmem steps that explain it (n confirmations, or n contradictions,
  :func:`vaultmem.confidence.confirmed` / :func:`~vaultmem.confidence.contradicted`) and both
  sides' steps are replayed on the base, confirmations first: a contradiction raised on
  one machine is not washed out by confirmations made on the other. A side no steps
  explain was set by hand; the other side's steps are replayed on that value;
- typed link lists take the union, minus what either side removed (links compare by the
  note they name, case-insensitively, as Obsidian resolves them);
- the flags ``pinned``, ``status`` and ``snoozed_until`` merge together with the key that
  keeps their undo line (:data:`vaultmem.properties.UNDO_KEYS`), so an undo still gives
  back the right line. A flag command writes no time, and git gives the driver none, so
  "newer" is read from the only clock a note carries: the side whose latest
  ``last_used``/``last_review``/``last_confirmed`` is later, and later than the base's,
  used the note last, and its flags stand. Two snoozes keep the later end. When the times
  tell nothing apart (neither side used the note since the base, or both at the same
  second), the driver refuses: a conflict region for those keys, reported;
- ``type``, ``half_life`` and the rule keys ``applies_to`` and ``enforce`` are a
  person's choice, and ``archived_from`` (where `gc` took the note from) has one right
  value: both changed differently is a conflict.
- ``type`` and ``half_life`` are a person's choice: both changed differently is a conflict;
  so are ``source_session``/``source_project``/``source_time`` (written once, by
  `extract`) and ``confidence_lost`` (two contradictions of one note on two machines);
- ``needs_review`` merges as a list of links (each item names the note it is about).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal, InvalidOperation
from enum import Enum
from typing import Any

from vaultmem.confidence import confirmed, contradicted
from vaultmem.frontmatter.owned import owned_problem
from vaultmem.frontmatter.render import same_value
from vaultmem.memory_state import as_int, parse_time, stored_confidence
from vaultmem.note import link_targets
from vaultmem.properties import OWNED_KEYS, UNDO_KEYS
from vaultmem.scores import MAX_STRENGTH
from vaultmem.vocabulary import LINK_TYPES

__all__ = ["MISSING", "RULES", "KeyConflict", "OwnedMerge", "Rule", "merge_owned"]


class Rule(Enum):
    """How an owned key merges when both sides changed it differently."""

    COUNT = "base plus both sides' deltas"
    LATEST = "the later time"
    CREATED = "the base's, else the earlier"
    STRENGTH = "base plus both deltas, capped"
    CONFIDENCE = "both sides' confirmation/contradiction steps replayed on the base"
    LINKS = "union minus what either side removed"
    NEWER = "the side that used the note last (with its undo key)"
    LATER_END = "the later end; else as NEWER (with its undo key)"
    UNDO = "travels with its flag"
    ONE_SIDE = "a conflict"


# The one table of merge semantics, one row per owned key.
RULES: Mapping[str, Rule] = {
    "type": Rule.ONE_SIDE,
    "confidence": Rule.CONFIDENCE,
    "confidence_lost": Rule.ONE_SIDE,
    "half_life": Rule.ONE_SIDE,
    "pinned": Rule.NEWER,
    "snoozed_until": Rule.LATER_END,
    "status": Rule.NEWER,
    "archived_from": Rule.ONE_SIDE,
    **dict.fromkeys(UNDO_KEYS.values(), Rule.UNDO),
    "strength": Rule.STRENGTH,
    "use_count": Rule.COUNT,
    "last_used": Rule.LATEST,
    "created": Rule.CREATED,
    "review_count": Rule.COUNT,
    "last_review": Rule.LATEST,
    "cross_domain_count": Rule.COUNT,
    "last_confirmed": Rule.LATEST,
    # Rule keys are a person's, like type: both changed differently is a conflict.
    "applies_to": Rule.ONE_SIDE,
    "enforce": Rule.ONE_SIDE,
    "source_session": Rule.ONE_SIDE,
    "source_project": Rule.ONE_SIDE,
    "source_time": Rule.ONE_SIDE,
    "needs_review": Rule.LINKS,
    **dict.fromkeys(LINK_TYPES, Rule.LINKS),
}


# The keys that date a side's last use of the note: what "newer" is read from.
_CLOCK_KEYS = tuple(key for key, rule in RULES.items() if rule is Rule.LATEST)

# Rules whose sides' changes add up: two sides that each counted one use from the same
# base hold equal values, and the merge holds both uses.
_ADDITIVE = frozenset({Rule.COUNT, Rule.STRENGTH, Rule.CONFIDENCE})


class _Missing:
    """The value of a key a side does not have."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()

# A group's values on one side, in the group's key order.
_Values = tuple[Any, ...]


@dataclass(frozen=True)
class KeyConflict:
    """Owned keys both sides changed that no rule settles: the merge leaves a conflict
    region for them (ours and theirs), and ``why`` says what a person must decide."""

    keys: tuple[str, ...]
    why: str


@dataclass(frozen=True)
class OwnedMerge:
    """The merged owned keys: ``values`` holds every key present after the merge (ours'
    value for a key of a conflict); a key absent from it is absent from the note."""

    values: Mapping[str, Any]
    conflicts: tuple[KeyConflict, ...] = ()


@dataclass(frozen=True)
class _Sides:
    """The three frontmatters, and when each side last used the note."""

    base: Mapping[Any, Any]
    ours: Mapping[Any, Any]
    theirs: Mapping[Any, Any]

    def used(self, meta: Mapping[Any, Any]) -> datetime | None:
        """The latest time of the ``LATEST`` keys of ``meta``: when that side last used
        the note, as far as the note says."""
        times = [t for key in _CLOCK_KEYS if (t := _time(key, meta.get(key, MISSING))) is not None]
        return max(times) if times else None


def merge_owned(
    base: Mapping[Any, Any], ours: Mapping[Any, Any], theirs: Mapping[Any, Any]
) -> OwnedMerge:
    """Merge vaultmem's keys of three parsed frontmatters (base, ours, theirs) by
    :data:`RULES`; keys of anyone else are not looked at.

    Example:
        >>> merge_owned({"use_count": 1}, {"use_count": 3}, {"use_count": 2}).values
        {'use_count': 4}
    """
    sides = _Sides(base, ours, theirs)
    values: dict[str, Any] = {}
    conflicts: list[KeyConflict] = []
    for keys in _groups():
        o, a, b = (tuple(meta.get(k, MISSING) for k in keys) for meta in (base, ours, theirs))
        rule = RULES[keys[0]]
        merged: _Values | KeyConflict
        if _same(b, o) or (_same(a, b) and rule not in _ADDITIVE):
            merged = a
        elif _same(a, o):
            merged = b
        else:
            merged = _RESOLVERS[rule](keys, o, a, b, sides)
        if isinstance(merged, KeyConflict):
            conflicts.append(merged)
            merged = a
        values.update((k, v) for k, v in zip(keys, merged, strict=True) if v is not MISSING)
    return OwnedMerge(values, tuple(conflicts))


def _groups() -> Iterator[tuple[str, ...]]:
    """The owned keys in merge units: a flag with the key that keeps its undo line."""
    for key in OWNED_KEYS:
        if RULES[key] is Rule.UNDO:
            continue
        yield (key, UNDO_KEYS[key]) if key in UNDO_KEYS else (key,)


def _same(a: _Values, b: _Values) -> bool:
    return all(
        (x is MISSING) == (y is MISSING) and (x is MISSING or same_value(x, y))
        for x, y in zip(a, b, strict=True)
    )


def _valid(key: str, value: Any) -> bool:
    """Whether the memory code reads ``value`` (an invalid value counts as absent)."""
    return value is not MISSING and value is not None and owned_problem(key, value) is None


def _time(key: str, value: Any) -> datetime | None:
    return parse_time(value) if _valid(key, value) else None


def _shown(values: _Values) -> str:
    shown = ["-" if v is MISSING else str(v) for v in values[:1]]
    return shown[0] if shown else "-"


# --------------------------------------------------------------------------- rules

_Resolver = Callable[[tuple[str, ...], _Values, _Values, _Values, _Sides], "_Values | KeyConflict"]


def _count(keys: tuple[str, ...], o: _Values, a: _Values, b: _Values, _s: _Sides) -> _Values:
    def n(v: _Values) -> int:
        return max(as_int(v[0]), 0) if _valid(keys[0], v[0]) else 0

    return (max(0, n(a) + n(b) - n(o)),)


def _latest(
    keys: tuple[str, ...], _o: _Values, a: _Values, b: _Values, _s: _Sides
) -> _Values | KeyConflict:
    ta, tb = _time(keys[0], a[0]), _time(keys[0], b[0])
    if ta is None and tb is None:
        return KeyConflict(keys, f"both sides changed it ({_shown(a)} / {_shown(b)}), to no time")
    if tb is None or (ta is not None and ta >= tb):
        return a
    return b


def _created(
    keys: tuple[str, ...], o: _Values, a: _Values, b: _Values, s: _Sides
) -> _Values | KeyConflict:
    if _time(keys[0], o[0]) is not None:
        return o
    ta, tb = _time(keys[0], a[0]), _time(keys[0], b[0])
    if ta is None and tb is None:
        return KeyConflict(keys, f"both sides changed it ({_shown(a)} / {_shown(b)}), to no date")
    if tb is None or (ta is not None and ta <= tb):
        return a
    return b


def _decimal(key: str, value: Any, default: Decimal) -> Decimal:
    if not _valid(key, value):
        return default
    try:
        return Decimal(repr(float(value)))
    except (InvalidOperation, ValueError):
        return default


def _strength(keys: tuple[str, ...], o: _Values, a: _Values, b: _Values, _s: _Sides) -> _Values:
    # Decimal sums of the written values: 1.1 + 0.1 stays 1.2 in git, not 1.2000000000000002.
    one = Decimal(1)
    da, db, do = (_decimal(keys[0], v[0], one) for v in (a, b, o))
    return (float(min(Decimal(repr(MAX_STRENGTH)), da + db - do)),)


_MAX_STEPS = 64
_TOLERANCE = 5e-7  # confidence is written rounded to 6 digits


def _steps(base: float, value: float) -> tuple[int, int] | None:
    """(confirmations, contradictions) that take ``base`` to ``value`` by one kind of
    vaultmem step alone; None when no such steps do (a value set by hand, or both kinds)."""
    if abs(value - base) <= _TOLERANCE:
        return (0, 0)
    up = value > base
    step = confirmed if up else contradicted
    current = base
    for n in range(1, _MAX_STEPS + 1):
        following = step(current)
        if abs(following - value) <= _TOLERANCE:
            return (n, 0) if up else (0, n)
        if abs(following - current) <= _TOLERANCE or (
            following > value if up else following < value
        ):
            return None
        current = following
    return None


def _replayed(start: float, steps: tuple[int, int]) -> float:
    value = start
    for _ in range(steps[0]):
        value = confirmed(value)
    for _ in range(steps[1]):
        value = contradicted(value)
    return value


def _confidence(
    keys: tuple[str, ...], o: _Values, a: _Values, b: _Values, _s: _Sides
) -> _Values | KeyConflict:
    def c(v: _Values) -> float:
        return stored_confidence({} if v[0] is MISSING else {keys[0]: v[0]})

    base, ours, theirs = c(o), c(a), c(b)
    by_ours, by_theirs = _steps(base, ours), _steps(base, theirs)
    if by_ours is not None and by_theirs is not None:
        both = (by_ours[0] + by_theirs[0], by_ours[1] + by_theirs[1])
        return (_replayed(base, both),)
    if by_ours is not None:
        return (_replayed(theirs, by_ours),)
    if by_theirs is not None:
        return (_replayed(ours, by_theirs),)
    return KeyConflict(
        keys, f"both sides set it by hand ({_shown(a)} / {_shown(b)}); no vaultmem steps explain it"
    )


def _link_items(value: Any) -> list[str] | None:
    if value is MISSING or value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return list(value)
    return None


def _link_identity(item: str) -> str:
    targets = link_targets(item) or (item.strip(),)
    return "|".join(t.lower().removesuffix(".md") for t in targets)


def _links(
    keys: tuple[str, ...], o: _Values, a: _Values, b: _Values, _s: _Sides
) -> _Values | KeyConflict:
    base, ours, theirs = (_link_items(v[0]) for v in (o, a, b))
    if base is None or ours is None or theirs is None:
        return KeyConflict(keys, "both sides changed it, and one is not a list of links")
    have = {_link_identity(x) for x in ours}, {_link_identity(x) for x in theirs}
    removed = {i for i in map(_link_identity, base) if i not in have[0] or i not in have[1]}
    merged: dict[str, str] = {}
    for item in (*ours, *theirs):
        identity = _link_identity(item)
        if identity not in removed:
            merged.setdefault(identity, item)
    if not merged:
        # A list left empty loses its key, as `unlink` leaves it (ours' own `[]` stays).
        return ([],) if a[0] == [] else (MISSING,)
    return (list(merged.values()),)


def _newer(
    keys: tuple[str, ...], o: _Values, a: _Values, b: _Values, s: _Sides
) -> _Values | KeyConflict:
    base, ours, theirs = s.used(s.base), s.used(s.ours), s.used(s.theirs)
    if ours is not None and (theirs is None or ours > theirs) and (base is None or ours > base):
        return a
    if theirs is not None and (ours is None or theirs > ours) and (base is None or theirs > base):
        return b
    return KeyConflict(
        keys,
        f"both sides changed it ({_shown(a)} / {_shown(b)}) and none of "
        f"{', '.join(_CLOCK_KEYS)} says which side used the note later",
    )


def _later_end(
    keys: tuple[str, ...], o: _Values, a: _Values, b: _Values, s: _Sides
) -> _Values | KeyConflict:
    ta, tb = _time(keys[0], a[0]), _time(keys[0], b[0])
    if ta is not None and tb is not None:
        return a if ta >= tb else b
    return _newer(keys, o, a, b, s)


def _one_side(
    keys: tuple[str, ...], _o: _Values, a: _Values, b: _Values, _s: _Sides
) -> KeyConflict:
    return KeyConflict(keys, f"both sides changed it ({_shown(a)} / {_shown(b)})")


_RESOLVERS: Mapping[Rule, _Resolver] = {
    Rule.COUNT: _count,
    Rule.LATEST: _latest,
    Rule.CREATED: _created,
    Rule.STRENGTH: _strength,
    Rule.CONFIDENCE: _confidence,
    Rule.LINKS: _links,
    Rule.NEWER: _newer,
    Rule.LATER_END: _later_end,
    Rule.ONE_SIDE: _one_side,
}
