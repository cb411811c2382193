"""One note at a time: reinforcement (`touch`, `observe`) and lifecycle flags
(`pin`/`unpin`, `snooze`/`unsnooze`, `forget`/`restore`).

Each inverse is an undo: the line its command replaced (a user's `status: reading  # mine`)
is kept in the note itself (``status_before``, :data:`vaultmem.properties.UNDO_KEYS`) and
given back exactly; a line the user changed by hand since is theirs and stays.

Every function here changes notes only through :mod:`vaultmem.memory.writeback`: under
the vault lock, only vaultmem's own keys, nothing rewritten when nothing changes, and
the changed notes re-indexed before the lock is released. Scores come from
:mod:`vaultmem.scores`; the state they are computed on is built from the frontmatter
read at write time, never from a possibly stale manifest.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

from vaultmem.confidence import confirmed, contradicted
from vaultmem.config import Config
from vaultmem.frontmatter.edit import KeyLines, ReplacedLines
from vaultmem.frontmatter.files import WriteResult
from vaultmem.frontmatter.owned import owned_problem
from vaultmem.index import manifest as mf
from vaultmem.indexer import refresh_paths
from vaultmem.memory.writeback import Compute, edit_notes, edit_notes_locked, locked
from vaultmem.memory_state import (
    DEFAULT_CONFIDENCE,
    as_float,
    as_int,
    note_memory,
    parse_time,
    stored_confidence,
)
from vaultmem.note import Note, read_note
from vaultmem.properties import UNDO_KEYS
from vaultmem.scores import (
    MemoryState,
    normalize_tags,
    parse_half_life,
    reinforce,
    to_utc,
)
from vaultmem.surface_log import surfaced_in_session

__all__ = [
    "Change",
    "Reinforced",
    "contradiction",
    "contradiction_undone",
    "forget_notes",
    "lost_confidence",
    "older_note",
    "pin_notes",
    "reinforce_locked",
    "reinforce_notes",
    "restore_notes",
    "snooze_notes",
    "snooze_until",
    "state_from_meta",
    "unpin_notes",
    "unsnooze_notes",
]

# Strength is written rounded: 1.1 + 0.1 would otherwise land in git as 1.2000000000000002.
_STRENGTH_DIGITS = 6


# --------------------------------------------------------------------------- state


def _type_of(meta: Mapping[Any, Any]) -> str:
    """The note's type exactly as :attr:`vaultmem.note.Note.type` reads it."""
    value = meta.get("type")
    return str(value).strip().lower() if value else "note"


def state_from_meta(meta: Mapping[Any, Any], mtime_ns: int = 0) -> MemoryState:
    """The :class:`MemoryState` of a note from its parsed frontmatter (and file mtime).

    Goes through the same lenient reading as the manifest view
    (:func:`vaultmem.memory_state.note_memory`), so a score printed by `touch` is the
    score ranking, `promote` and `gc` see for the same frontmatter.
    """
    entry = mf.Entry(
        mtime_ns=mtime_ns,
        size=0,
        hash="",
        title="",
        type=_type_of(meta),
        memory=mf.memory_keys(meta),
    )
    return note_memory("", entry).state


def _to_second(now: datetime) -> datetime:
    # Frontmatter keeps whole seconds; scoring the value as it will read back keeps the
    # printed "after" score equal to what the next command computes.
    return to_utc(now).replace(microsecond=0)


# --------------------------------------------------------------------------- reinforce


@dataclass(frozen=True)
class Reinforced:
    """One reinforcement of one note: usage, decay score and confidence before and after.

    ``confidence_before``/``confidence`` are the stored values (0.5 when absent);
    ``confirmed`` says whether this reinforcement was a confirmation.
    """

    path: str
    use_count_before: int
    use_count: int
    strength_before: float
    strength: float
    cross_domain: bool
    score_before: float
    score_after: float
    confidence_before: float = DEFAULT_CONFIDENCE
    confidence: float = DEFAULT_CONFIDENCE
    confirmed: bool = False
    updates: Mapping[str, object] = field(default_factory=dict)

    def as_json(self) -> dict[str, object]:
        """The ``--json`` shape of `touch` / `observe`."""
        return {
            "path": self.path,
            "changed": True,
            "use_count_before": self.use_count_before,
            "use_count": self.use_count,
            "strength_before": self.strength_before,
            "strength": self.strength,
            "cross_domain": self.cross_domain,
            "score_before": round(self.score_before, 6),
            "score_after": round(self.score_after, 6),
            "confidence_before": self.confidence_before,
            "confidence": self.confidence,
            "confirmed": self.confirmed,
        }


def _reinforcement(
    meta: Mapping[Any, Any], now: datetime, note_tags: Iterable[str], context: Iterable[str]
) -> dict[str, object]:
    """The owned-key updates of one reinforcement (SPEC §5), only keys that change."""
    r = reinforce(
        now=now,
        use_count=max(as_int(meta.get("use_count")), 0),
        review_count=max(as_int(meta.get("review_count")), 0),
        cross_domain_count=max(as_int(meta.get("cross_domain_count")), 0),
        strength=as_float(meta.get("strength"), 1.0),
        note_tags=list(note_tags),
        context_tags=list(context),
    )
    updates: dict[str, object] = {
        "use_count": r.use_count,
        "last_used": r.last_used,
        "review_count": r.review_count,
        "last_review": r.last_review,
    }
    if r.cross_domain:
        # Without a boost strength and cross_domain_count keep their values: writing
        # `strength: 1.0` into every touched note would only add diff noise.
        updates["strength"] = round(r.strength, _STRENGTH_DIGITS)
        updates["cross_domain_count"] = r.cross_domain_count
    return updates


def _confirmation(meta: Mapping[Any, Any], now: datetime) -> dict[str, object]:
    """The owned-key updates of a confirmation: confidence one step toward 1, and
    ``last_confirmed = now`` (which restarts the fading of unconfirmed trust)."""
    return {"confidence": confirmed(stored_confidence(meta)), "last_confirmed": now}


def reinforce_locked(
    config: Config,
    paths: Sequence[str],
    now: datetime,
    context_tags: Iterable[str] = (),
    *,
    confirm: Collection[str] = (),
) -> list[Reinforced]:
    """:func:`reinforce_notes` for a caller that holds the vault lock (no re-index).

    ``confirm``: the paths (among ``paths``) whose reinforcement is also a confirmation.
    The caller re-indexes the returned paths (``refresh_paths``) before releasing the lock.
    """
    now = _to_second(now)
    context = sorted(normalize_tags(list(context_tags)))
    unique = list(dict.fromkeys(paths))
    notes = {path: read_note(config.vault, path, config.keys) for path in unique}
    done: dict[str, Reinforced] = {}

    def compute(path: str, meta: dict[Any, Any]) -> Mapping[str, object | None]:
        note = notes[path]
        before = state_from_meta(meta, note.mtime_ns)
        updates = _reinforcement(meta, now, note.tags, context)
        if path in confirm:
            updates |= _confirmation(meta, now)
        after = state_from_meta({**meta, **updates}, note.mtime_ns)
        # Overwritten when update_note retries on a concurrent save: the last one counts.
        done[path] = Reinforced(
            path=path,
            use_count_before=before.use_count,
            use_count=after.use_count,
            strength_before=before.strength,
            strength=after.strength,
            cross_domain="cross_domain_count" in updates,
            score_before=config.tuning.score(before, now),
            score_after=config.tuning.score(after, now),
            confidence_before=stored_confidence(meta),
            confidence=stored_confidence({**meta, **updates}),
            confirmed=path in confirm,
            updates=updates,
        )
        return updates

    edit_notes_locked(config, unique, compute)
    return [done[path] for path in unique]


def reinforce_notes(
    config: Config,
    paths: Sequence[str],
    now: datetime,
    context_tags: Iterable[str] = (),
    *,
    confirm: bool = False,
    session: str | None = None,
) -> list[Reinforced]:
    """Reinforce notes (SPEC §5): ``use_count``/``review_count`` + 1, ``last_used`` and
    ``last_review`` = ``now``; a use whose ``context_tags`` barely overlap the note's tags
    (Jaccard < 0.3) also adds 0.1 strength and counts a cross-domain use.

    A reinforcement is also a *confirmation* of every note when ``confirm``, and of the
    notes the surfacing log shows were surfaced in ``session`` (surfaced, then used: the
    agent relied on what vaultmem offered). A confirmation raises ``confidence`` one step
    toward 1 (:func:`vaultmem.confidence.confirmed`) and sets ``last_confirmed = now``.

    ``created`` is never written (a note without it stays without it). Takes the vault
    lock and re-indexes the notes.

    Example:
        >>> reinforce_notes(config, ["inbox/a.md"], now, ["payments"])  # doctest: +SKIP
        >>> reinforce_notes(config, ["inbox/a.md"], now, confirm=True)  # doctest: +SKIP
    """
    chosen: Collection[str] = ()
    if confirm:
        chosen = frozenset(paths)
    elif session is not None:
        chosen = surfaced_in_session(config, session)
    with locked(config, "touch"):
        try:
            return reinforce_locked(config, paths, now, context_tags, confirm=chosen)
        finally:
            # Also after a failure on a later note: the ones written are indexed.
            refresh_paths(config, paths)


# --------------------------------------------------------------------------- contradiction


def older_note(config: Config, a: str, b: str) -> str | None:
    """Of two notes, the older: the earlier ``created``, else the earlier file mtime
    (a note without ``created`` is compared by mtime on both sides); None on a tie.

    Call it under the vault lock, before either note is written.
    """
    ages = {path: _born(read_note(config.vault, path, config.keys)) for path in (a, b)}
    if ages[a] == ages[b]:
        return None
    return a if ages[a] < ages[b] else b


def _born(note: Note) -> tuple[float, int]:
    created = parse_time(note.owned.get("created"))
    when = created.timestamp() if created is not None else note.mtime_ns / 1e9
    return (when, note.mtime_ns)


def contradiction(meta: Mapping[Any, Any]) -> dict[str, object]:
    """The owned-key update of a contradiction: ``confidence`` 0.25 lower, floor 0.2
    (:func:`vaultmem.confidence.contradicted`), and what it took added to
    ``confidence_lost`` so that `unlink` can give it back."""
    before = stored_confidence(meta)
    after = contradicted(before)
    if after == before:
        return {}
    lost = round(lost_confidence(meta) + before - after, 6)
    return {"confidence": after, "confidence_lost": lost}


def lost_confidence(meta: Mapping[Any, Any]) -> float:
    """What contradictions still linked took from the note's confidence (0 when none)."""
    value = meta.get("confidence_lost")
    if owned_problem("confidence_lost", value) is not None or value is None or value == "":
        return 0.0
    return float(value)


def contradiction_undone(meta: Mapping[Any, Any], left: int) -> dict[str, object | None]:
    """The owned-key update when a ``contradicts`` link of the note goes, ``left`` such
    links remaining: its share of ``confidence_lost`` given back (all of it when none is
    left), bounded by 1."""
    lost = lost_confidence(meta)
    if lost <= 0:
        return {}
    back = lost if left <= 0 else round(lost / (left + 1), 6)
    after = min(1.0, stored_confidence(meta) + back)
    rest = round(lost - back, 6)
    return {"confidence": round(after, 6), "confidence_lost": rest if rest > 0 else None}


# --------------------------------------------------------------------------- flags


@dataclass(frozen=True)
class Change:
    """What a lifecycle command did to one note: the keys it sets, before and after.

    ``before``/``after`` hold only the keys the command manages, as JSON values (ISO text
    for dates; ``None`` = the key is absent): its key, and the key that keeps the line it
    replaced (``status_before``…) when the note has that on either side.
    """

    path: str
    action: str
    changed: bool
    before: Mapping[str, Any]
    after: Mapping[str, Any]
    moved_to: str = ""  # where `restore` moved an archived note back to

    def as_json(self) -> dict[str, object]:
        """The ``--json`` shape of `pin`, `snooze`, `forget` and their inverses."""
        shape: dict[str, object] = {
            "path": self.path,
            "action": self.action,
            "changed": self.changed,
            "before": dict(self.before),
            "after": dict(self.after),
        }
        if self.moved_to:
            shape["moved_to"] = self.moved_to
        return shape


def _change(action: str, flag: _Flag, result: WriteResult, path: str) -> Change:
    before = mf.memory_keys(result.before)
    after = mf.memory_keys(result.after)
    # The saved-lines key is shown when the note has it on either side.
    keys = [flag.key] + [flag.saved] * (flag.saved in before or flag.saved in after)
    return Change(
        path=path,
        action=action,
        changed=result.changed,
        before={k: before.get(k) for k in keys},
        after={k: after.get(k) for k in keys},
    )


@dataclass(frozen=True)
class _Flag:
    """A key a lifecycle command sets and its inverse takes back.

    ``ours`` tells a value the command writes (``status: forgotten``) from a user's own;
    None where it cannot (``snoozed_until`` holds any date), and then the absence of a
    prior line is saved too (as ``""``), so that the saved key alone says a vaultmem
    value stands.
    """

    key: str
    ours: Callable[[Any], bool] | None

    @property
    def saved(self) -> str:
        """The key that keeps the line this command replaced (``status_before``…)."""
        return UNDO_KEYS[self.key]


_STATUS = _Flag("status", lambda v: isinstance(v, str) and v.strip().lower() == "forgotten")
_PINNED = _Flag("pinned", lambda v: v is True)
_SNOOZED = _Flag("snoozed_until", None)


def _saved_line(meta: Mapping[Any, Any], flag: _Flag) -> str | None:
    """The line the flag's command replaced: text, ``""`` when there was none, None when
    nothing (valid) is saved."""
    if flag.saved not in meta:
        return None
    value = meta[flag.saved]
    if value is None or value == "":
        return ""
    return value if owned_problem(flag.saved, value) is None else None


def _set_flag(flag: _Flag, value: object) -> Compute:
    """Set ``flag.key`` to ``value``, saving the line it replaces for the inverse.

    A value the command wrote already stays with the line saved first (forget twice keeps
    the first prior value); a note without the key saves nothing (its inverse removes the
    key), except where ``ours`` cannot tell (see :class:`_Flag`).
    """

    def compute(_path: str, meta: dict[Any, Any]) -> Mapping[str, object | None]:
        present = flag.key in meta
        if flag.ours is not None and present and flag.ours(meta[flag.key]):
            return {}
        if flag.ours is None and present and _saved_line(meta, flag) is not None:
            return {flag.key: value}
        if present:
            return {flag.key: value, flag.saved: ReplacedLines(flag.key)}
        return {flag.key: value, flag.saved: "" if flag.ours is None else None}

    return compute


def _take_back(flag: _Flag) -> Compute:
    """The inverse of :func:`_set_flag`: the saved line back, exactly, and its copy gone.

    Nothing saved (or a saved value that is not a line): the key is removed, as always. A
    key the user changed or removed by hand since (no longer ``ours``): their line stays
    as it is and only the saved copy goes; a later call removes the key.
    """

    def compute(_path: str, meta: dict[Any, Any]) -> Mapping[str, object | None]:
        saved = _saved_line(meta, flag)
        if saved is None:
            return {flag.key: None, flag.saved: None}
        current = meta.get(flag.key)
        if flag.key not in meta or (flag.ours is not None and not flag.ours(current)):
            return {flag.saved: None}
        return {flag.key: KeyLines(saved) if saved else None, flag.saved: None}

    return compute


def _flag_notes(
    config: Config, paths: Sequence[str], action: str, flag: _Flag, compute: Compute
) -> list[Change]:
    """Apply one flag command to every note, under the lock."""
    unique = list(dict.fromkeys(paths))
    results = edit_notes(config, unique, compute, what=action)
    return [_change(action, flag, r, p) for p, r in zip(unique, results, strict=True)]


def pin_notes(config: Config, paths: Sequence[str]) -> list[Change]:
    """``pinned: true``: always eligible for surfacing, ranked a little higher, never gc'd.

    A user's own ``pinned`` line (``pinned: false  # review later``) is kept in
    ``pinned_before`` for :func:`unpin_notes`.
    """
    return _flag_notes(config, paths, "pin", _PINNED, _set_flag(_PINNED, True))


def unpin_notes(config: Config, paths: Sequence[str]) -> list[Change]:
    """Undo `pin`: the ``pinned`` line it replaced comes back exactly; without one,
    ``pinned`` is removed (absent means not pinned)."""
    return _flag_notes(config, paths, "unpin", _PINNED, _take_back(_PINNED))


def snooze_notes(config: Config, paths: Sequence[str], until: date | datetime) -> list[Change]:
    """``snoozed_until: until``: hidden from `surface` until then (search still finds it).

    The ``snoozed_until`` line the first snooze replaced (or ``""``: none) is kept in
    ``snoozed_until_before`` for :func:`unsnooze_notes`.
    """
    return _flag_notes(config, paths, "snooze", _SNOOZED, _set_flag(_SNOOZED, until))


def unsnooze_notes(config: Config, paths: Sequence[str]) -> list[Change]:
    """Undo `snooze`: the ``snoozed_until`` line the first snooze replaced comes back
    exactly; without one, ``snoozed_until`` is removed."""
    return _flag_notes(config, paths, "unsnooze", _SNOOZED, _take_back(_SNOOZED))


def forget_notes(config: Config, paths: Sequence[str]) -> list[Change]:
    """``status: forgotten``: left out of every result unless asked for by status.

    The note stays on disk (and in git); the ``status`` line it had (``status: reading
    # mine``, ``status: superseded``) is kept in ``status_before``, and `restore` undoes it.
    """
    return _flag_notes(config, paths, "forget", _STATUS, _set_flag(_STATUS, "forgotten"))


def restore_notes(config: Config, paths: Sequence[str]) -> list[Change]:
    """Undo `forget`: the ``status`` line it replaced comes back exactly (a superseded
    note is superseded again). Without a saved line ``status`` is removed, whatever it was
    (absent means active). A status changed by hand since `forget` stays as it is.

    Undo `gc`'s archive too: an archived note moves back to the folder it came from
    (:func:`vaultmem.memory.sweeps.archive_origin`), its status line comes back and
    ``archived_from`` goes; ``moved_to`` says where it went.
    """
    unique = list(dict.fromkeys(paths))
    if not any(_origin(config, path) for path in unique):
        return _flag_notes(config, unique, "restore", _STATUS, _take_back(_STATUS))
    return _restore_archived(config, unique)


_ARCHIVED = _Flag("status", lambda v: isinstance(v, str) and v.strip().lower() == "archived")


def _origin(config: Config, path: str) -> str | None:
    """Where `restore` moves the note at ``path`` (None: it stays where it is)."""
    from vaultmem.memory.sweeps import archive_origin

    return archive_origin(config, path, read_note(config.vault, path, config.keys).owned)


def _restore_archived(config: Config, paths: Sequence[str]) -> list[Change]:
    """`restore` where some notes move back from the archive, under one lock (each note
    looked at again under it)."""
    from vaultmem.memory.sweeps import ARCHIVED_FROM, move_note

    take_back = _take_back(_ARCHIVED)
    done: list[Change] = []
    written, removed = [], []
    with locked(config, "restore"):
        for path in paths:
            origin = _origin(config, path)
            if origin is None:
                (result,) = edit_notes_locked(config, [path], _take_back(_STATUS))
                done.append(_change("restore", _STATUS, result, path))
                written += [path] * result.changed
                continue

            def compute(meta: dict[Any, Any], path: str = path) -> Mapping[str, object | None]:
                return {**take_back(path, meta), ARCHIVED_FROM: None}

            result = move_note(config, path, origin, compute)
            change = _change("restore", _STATUS, result, path)
            done.append(dataclasses.replace(change, changed=True, moved_to=origin))
            written.append(origin)
            removed.append(path)
        if written or removed:
            refresh_paths(config, written, removed=removed)
    return done


# --------------------------------------------------------------------------- snooze time

_UNTIL_HELP = "expected an ISO date (2026-12-01) or datetime (2026-12-01T09:00:00Z)"


def _parse_until(text: str) -> date | datetime:
    value = text.strip()
    try:
        if len(value) <= 10:
            return date.fromisoformat(value)
        return to_utc(datetime.fromisoformat(value.replace("Z", "+00:00"))).replace(microsecond=0)
    except ValueError:
        raise ValueError(f"invalid date {text!r}: {_UNTIL_HELP}") from None


def _parse_for(text: str, now: datetime) -> datetime:
    duration = parse_half_life(text)
    if duration is None:
        raise ValueError(f"invalid duration {text!r}: a snooze needs an end (e.g. 30d, 12h)")
    try:
        return _to_second(now) + duration
    except OverflowError:
        raise ValueError(f"invalid duration {text!r}: too large") from None


def snooze_until(now: datetime, *, until: str | None, for_: str | None) -> datetime:
    """When a snooze ends, from exactly one of ``until`` (ISO date/datetime) or ``for_``
    (a duration such as ``30d``, ``12h``, ``2w``).

    Always a UTC datetime, ``snoozed_until``'s one property type: a date is its midnight
    UTC (``snoozed_until: 2026-12-01T00:00:00Z``), so Obsidian sees one type. Raises
    ``ValueError`` with a one-line reason for both or neither given, an unreadable value,
    or an end that is not after ``now``.
    """
    if (until is None) == (for_ is None):
        raise ValueError("give exactly one of --until DATE or --for DURATION")
    end = _parse_until(until) if until is not None else _parse_for(str(for_), now)
    if to_utc(end) <= to_utc(now):
        raise ValueError(f"{until or for_!r} is not in the future (now is {now:%Y-%m-%d %H:%M}Z)")
    return to_utc(end)
