"""A note's memory state, read from the manifest (no note is opened).

The index records vaultmem's own frontmatter keys per note (``Entry.memory``), so ranking,
`review`, `promote` and `gc` see every note's state from one JSON file. Values written by
hand may be malformed: a value :func:`vaultmem.frontmatter.owned.owned_problem` rejects counts
as absent (and the note reports it), because one odd note must not stop a sweep over the
vault.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

from vaultmem.confidence import effective_confidence
from vaultmem.frontmatter.owned import iso_time, owned_problem
from vaultmem.index import manifest as mf
from vaultmem.note import link_targets
from vaultmem.scores import MemoryState, default_half_life, parse_half_life, to_utc

__all__ = [
    "NoteMemory",
    "as_float",
    "as_int",
    "note_memory",
    "parse_time",
    "stored_confidence",
]

DEFAULT_CONFIDENCE = 0.5


# Statuses of notes that stay on disk but are no longer live memories.
RETIRED_STATUSES = frozenset({"forgotten", "archived", "superseded"})


@dataclass(frozen=True)
class NoteMemory:
    """Everything the memory features know about one note."""

    path: str
    title: str
    type: str
    status: str
    pinned: bool
    confidence: float
    quality: float
    snoozed_until: datetime | None
    tags: tuple[str, ...]
    superseded_by: tuple[str, ...]
    state: MemoryState
    last_confirmed: datetime | None = None
    # The file's mtime when the note has no ``created``: the spec's "created: first seen".
    first_seen: datetime | None = None
    # The frontmatter names a ``type``: a memory, not a document that defaults to "note".
    typed: bool = False

    def effective_confidence(self, now: datetime) -> float:
        """The confidence ranking uses at ``now``: the stored value, faded while nobody
        confirms it, unless the note's type never fades
        (:func:`vaultmem.confidence.effective_confidence`)."""
        return effective_confidence(
            self.confidence,
            now=now,
            last_confirmed=self.last_confirmed,
            created=self.state.created,
            mtime=self.first_seen,
            note_type=self.type,
        )

    @property
    def retired(self) -> bool:
        """Forgotten, archived or superseded: kept on disk, out of memory's way."""
        return self.status in RETIRED_STATUSES or bool(self.superseded_by)

    @property
    def stated(self) -> datetime | None:
        """When the memory was last stated: written (``created``) or confirmed since."""
        times = [t for t in (self.state.created, self.last_confirmed) if t is not None]
        return max(times) if times else None

    def snoozed(self, now: datetime) -> bool:
        """Whether the note is hidden from surfacing and review at ``now``."""
        return self.snoozed_until is not None and self.snoozed_until > now


def parse_time(value: Any) -> datetime | None:
    """A frontmatter date/datetime (or ISO text) as aware UTC; None when absent or bad."""
    if isinstance(value, datetime | date):
        return to_utc(value)
    if not isinstance(value, str):
        return None
    parsed = iso_time(value)
    return None if parsed is None else to_utc(parsed)


def as_float(value: Any, default: float) -> float:
    """A number from frontmatter, or ``default`` for anything else (bools included)."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return default
    try:
        number = float(value)
    except ValueError:
        return default
    return default if math.isnan(number) else number


def as_int(value: Any, default: int = 0) -> int:
    """A count from frontmatter, or ``default``."""
    number = as_float(value, float(default))
    return int(number) if math.isfinite(number) else default


def stored_confidence(memory: Mapping[Any, Any]) -> float:
    """A note's ``confidence`` key as written, in [0, 1]; 0.5 when absent or invalid."""
    value = memory.get("confidence")
    if owned_problem("confidence", value) is not None:
        return DEFAULT_CONFIDENCE
    return min(1.0, max(0.0, as_float(value, DEFAULT_CONFIDENCE)))


def _half_life(memory: Mapping[str, Any], note_type: str) -> Any:
    raw = memory.get("half_life")
    if raw is None:
        return default_half_life(note_type)
    try:
        return parse_half_life(raw)
    except ValueError:
        return default_half_life(note_type)


def note_memory(path: str, entry: mf.Entry) -> NoteMemory:
    """The memory view of one manifest entry.

    The file's mtime stands in for ``created`` only when the note has neither ``created``
    nor ``last_used``: the spec's "created: first seen". An mtime is not a use of the
    note here, because git checkouts, syncs and vaultmem's own write-backs all reset it.
    """
    memory = {k: v for k, v in entry.memory.items() if owned_problem(k, v) is None}
    note_type = entry.type or "note"
    created = parse_time(memory.get("created"))
    last_used = parse_time(memory.get("last_used"))
    first_seen = None
    if created is None and entry.mtime_ns:
        first_seen = datetime.fromtimestamp(entry.mtime_ns / 1e9, tz=UTC)
    mtime = first_seen if last_used is None else None
    state = MemoryState(
        type=note_type,
        half_life=_half_life(memory, note_type),
        use_count=max(as_int(memory.get("use_count")), 0),
        strength=as_float(memory.get("strength"), 1.0),
        pinned=memory.get("pinned") is True,
        created=created,
        last_used=last_used,
        mtime=mtime,
    )
    return NoteMemory(
        path=path,
        title=entry.title,
        type=note_type,
        status=entry.status or "active",
        pinned=state.pinned,
        confidence=stored_confidence(memory),
        quality=entry.quality,
        snoozed_until=parse_time(memory.get("snoozed_until")),
        tags=entry.tags,
        superseded_by=link_targets(memory.get("superseded_by")),
        state=state,
        last_confirmed=parse_time(memory.get("last_confirmed")),
        first_seen=first_seen,
        typed="type" in memory,
    )
