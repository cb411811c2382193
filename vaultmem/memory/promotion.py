"""`promote`: inbox notes that earned it move to the memory folder (SPEC §5).

The sweep brings the manifest up to date, reads every inbox note's memory state from it
(no note is opened to decide), and applies the formulas of :mod:`vaultmem.scores` at an
explicit ``now``; the notes then move under the vault lock, links to them are rewritten
(:mod:`vaultmem.memory.relink`) and what moved is re-indexed, so a search run right
after already sees the notes at their new paths. The machinery it shares with `gc`
lives in :mod:`vaultmem.memory.sweeps`.

**Promotion rule.** SPEC §5 (after CortexGraph) promotes when ``s ≥ 0.65``, or when
``use_count ≥ 5`` within 14 days of ``created``. Read literally, the score rule promotes
every new memory the moment it is written: a note nobody has used scores
``max(0, 1)^β · e^0 · 1 = 1.0`` and stays at or above 0.65 for its first 0.62 half-lives
(1.86 days with the 3-day short-term half-life). CortexGraph has the same flaw (its
``(use_count + 1)^β`` is also 1 for a fresh memory). For a note that was never used the
score measures nothing but youth, so here the score rule counts only for a note that
has been used at least once (``use_count ≥ 1``) and has existed for at least
:data:`PROMOTE_MIN_AGE` (one day: it has to outlive the session that wrote it). It then
means what CortexGraph meant: still strong, because it keeps being used. The usage rule
applies exactly as written; five uses within 14 days are evidence on their own.

**Statuses.** `promote` takes inbox notes whose status is ``active`` (or unset).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from vaultmem.config import Config
from vaultmem.errors import VaultmemError
from vaultmem.index import manifest as mf
from vaultmem.indexer import index_vault, refresh_paths
from vaultmem.memory.relink import Relink, relink
from vaultmem.memory.sweeps import (
    Failure,
    free_path,
    fresh_entry,
    join_path,
    move_note,
    taken_in,
    under,
)
from vaultmem.memory.writeback import locked
from vaultmem.memory_state import NoteMemory, note_memory
from vaultmem.scores import (
    MemoryState,
    default_half_life,
    format_half_life,
    to_utc,
)
from vaultmem.tuning import DEFAULT_TUNING, MemoryTuning

__all__ = [
    "PROMOTABLE_STATUSES",
    "PROMOTE_MIN_AGE",
    "PromoteReport",
    "Promotion",
    "note_age",
    "plan_promotions_from",
    "promote",
    "promotion_decision",
]

PROMOTE_MIN_AGE = timedelta(days=1)
PROMOTABLE_STATUSES = frozenset({"active"})


@dataclass(frozen=True)
class Promotion:
    """One note `promote` moves (or would move) from the inbox to the memory folder."""

    path: str
    target: str
    reason: str
    score: float


@dataclass(frozen=True)
class PromoteReport:
    """What one `promote` run did, or would do with ``dry_run``."""

    promoted: tuple[Promotion, ...]
    relinked: tuple[Relink, ...]
    failed: tuple[Failure, ...]
    dry_run: bool


def note_age(memory: NoteMemory, entry: mf.Entry, now: datetime) -> timedelta:
    """How long the note has existed at ``now``: since ``created``, else its file's mtime."""
    born = memory.state.created or memory.state.mtime
    if born is None:
        born = datetime.fromtimestamp(entry.mtime_ns / 1e9, tz=UTC)
    return max(to_utc(now) - born, timedelta(0))


def promotion_decision(
    state: MemoryState,
    now: datetime,
    *,
    age: timedelta,
    min_age: timedelta = PROMOTE_MIN_AGE,
    tuning: MemoryTuning = DEFAULT_TUNING,
) -> str | None:
    """Why a short-term note should be promoted at ``now`` (the reason text), or None.

    The usage rule (``use_count ≥ 5`` within 14 days of ``created``) always applies; the
    score rule (``s ≥ 0.65``) only to a note used at least once and at least ``min_age``
    old — see the module docstring for why an unused note's score proves nothing. The
    numbers are ``tuning``'s (the ``[memory]`` keys).
    """
    score_rule = state.use_count >= 1 and age >= min_age
    return tuning.promotion_reason(state, now, score_rule=score_rule)


def _promotion_of(
    path: str, entry: mf.Entry, now: datetime, min_age: timedelta, tuning: MemoryTuning
) -> tuple[str, float] | None:
    """(reason, score) when the inbox note ``path`` is due for promotion, else None."""
    memory = note_memory(path, entry)
    if memory.status not in PROMOTABLE_STATUSES:
        return None
    age = note_age(memory, entry, now)
    reason = promotion_decision(memory.state, now, age=age, min_age=min_age, tuning=tuning)
    return None if reason is None else (reason, tuning.score(memory.state, now))


def plan_promotions_from(
    entries: Mapping[str, mf.Entry],
    now: datetime,
    *,
    inbox_folder: str,
    memory_folder: str,
    min_age: timedelta = PROMOTE_MIN_AGE,
    taken: Callable[[str], bool] | None = None,
    tuning: MemoryTuning = DEFAULT_TUNING,
) -> list[Promotion]:
    """The promotions due at ``now`` among the notes under ``inbox_folder``, by path.

    A note keeps its file name (and its sub-folder below the inbox), so ``[[Name]]``
    links still find it; when that path is ``taken`` (default: by an indexed note) the
    name gets ``-2``, ``-3``… and links to it are rewritten by :func:`relink`.
    """
    known = {p.lower() for p in entries}
    in_use = taken or (lambda path: path.lower() in known)
    planned: set[str] = set()
    plan = []
    for path in sorted(entries):
        in_memory = bool(memory_folder) and under(path, memory_folder)
        if in_memory or not under(path, inbox_folder):
            continue
        due = _promotion_of(path, entries[path], now, min_age, tuning)
        if due is None:
            continue
        rel = path[len(inbox_folder.rstrip("/")) + 1 :] if inbox_folder else path
        target = free_path(
            join_path(memory_folder, rel), lambda p: in_use(p) or p.lower() in planned
        )
        planned.add(target.lower())
        plan.append(Promotion(path, target, due[0], due[1]))
    return plan


def _promoted_keys(meta_type: Any) -> dict[str, object]:
    """The owned keys a promoted note gets: its status, and its type's long half-life."""
    half_life = format_half_life(default_half_life(str(meta_type or "") or None))
    return {"status": "promoted", "half_life": half_life}


def promote(
    config: Config, now: datetime, *, dry_run: bool = False, min_age: timedelta = PROMOTE_MIN_AGE
) -> PromoteReport:
    """Promote the inbox notes that earned it (see the module docstring for the rule).

    Each moves to the memory folder with ``status: promoted`` and its type's default
    half-life; links that named it by path are rewritten (:func:`relink`), and the index
    follows. ``dry_run`` changes nothing in the vault and reports the same plan.

    Example:
        >>> [p.target for p in promote(config, now, dry_run=True).promoted]  # doctest: +SKIP
        ['memory/Redis memory at 80 percent.md']
    """
    index_vault(config)
    entries = mf.load(config.cache_dir).entries
    plan = plan_promotions_from(
        entries,
        now,
        inbox_folder=config.inbox_folder,
        memory_folder=config.memory_folder,
        min_age=min_age,
        taken=taken_in(config, entries),
        tuning=config.tuning,
    )
    if dry_run or not plan:
        moves = {p.path: p.target for p in plan}
        relinked, failed = relink(config, entries, moves, write=False)
        return PromoteReport(tuple(plan), tuple(relinked), tuple(failed), dry_run)
    with locked(config, "promote"):
        done, failed = _carry_out_promotions(config, entries, plan, now, min_age)
        moves = {p.path: p.target for p in done}
        relinked, relink_failed = relink(config, entries, moves, write=True)
        changed = [*moves.values(), *(r.path for r in relinked)]
        if moves:
            refresh_paths(config, changed, removed=list(moves))
    return PromoteReport(tuple(done), tuple(relinked), (*failed, *relink_failed), False)


def _carry_out_promotions(
    config: Config,
    entries: Mapping[str, mf.Entry],
    plan: Sequence[Promotion],
    now: datetime,
    min_age: timedelta,
) -> tuple[list[Promotion], list[Failure]]:
    """Move each planned note (re-checked on disk first); the caller holds the lock."""
    done, failed = [], []
    for item in plan:
        entry = fresh_entry(config, item.path, entries[item.path])
        due = _promotion_of(item.path, entry, now, min_age, config.tuning) if entry else None
        if entry is None or due is None:
            failed.append(Failure(item.path, "changed on disk since indexing; not promoted"))
            continue
        try:
            move_note(config, item.path, item.target, _promoted_keys(entry.type))
        except VaultmemError as exc:
            failed.append(Failure(item.path, str(exc)))
            continue
        done.append(item)
    return done, failed
