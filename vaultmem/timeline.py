"""What happened around a note, or in a window of time: `timeline` (issue 12).

Events come from what the vault already records, never from a log of our own:

- ``created``: the note's ``created`` key (else, around one note, its first commit);
- ``changed``: the file's mtime as the manifest last saw it;
- ``used``: ``last_used`` and ``last_review``;
- ``committed``: commit dates touching the file, when the vault is in a git repository;
- ``linked``: a note linked to or from the focus note, dated when the later of the two
  appeared (the earliest moment the link can have been written, and the moment
  `remember --supersedes`/`--refines` and handoffs do write it).

A window (:func:`window_timeline`) reads the manifest and runs one ``git log``: no note
file is opened, so it stays fast on a vault of 100k notes. Git is optional: no git, not a
repository, or a ``git log`` that fails or times out leaves the git events out and
``Timeline.git`` false. The core returns data; `vaultmem timeline` prints it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal, NamedTuple

from vaultmem.config import Config
from vaultmem.errors import RequestError
from vaultmem.git_runner import git
from vaultmem.index import manifest as mf
from vaultmem.memory_state import parse_time
from vaultmem.model import check_limit, check_text
from vaultmem.scores import parse_half_life

__all__ = [
    "KINDS",
    "Event",
    "Timeline",
    "TimelineRequest",
    "note_timeline",
    "parse_around",
    "parse_when",
    "window_bound",
    "window_timeline",
]

Kind = Literal["created", "changed", "used", "linked", "committed"]
# Also the order of events that share a timestamp: a note is created before it is changed.
KINDS: tuple[Kind, ...] = ("created", "committed", "changed", "linked", "used")
DEFAULT_AROUND = timedelta(days=7)
MAX_AROUND = timedelta(days=36500)
GIT_TIMEOUT_S = 20.0
# Starts each commit in `git log` output; cannot occur in a sha, date or path.
_RS = "\x1e"
_FORMAT = "--format=" + "%x1e%H%x09%aI%x09%s"


@dataclass(frozen=True)
class Event:
    """One dated thing that happened to a note."""

    when: datetime  # aware, UTC
    kind: Kind
    path: str
    title: str
    detail: str

    def as_json(self) -> dict[str, Any]:
        """``{when, kind, path, title, detail}``; ``when`` is ISO 8601 UTC (``…Z``)."""
        return {
            "when": _iso(self.when),
            "kind": self.kind,
            "path": self.path,
            "title": self.title,
            "detail": self.detail,
        }


def _iso(when: datetime) -> str:
    """ISO 8601 UTC to the second: ``2026-11-05T12:00:00Z``."""
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class Timeline:
    """Events in time order (oldest first); ``note`` is the focus note (None: a window);
    ``git`` says whether git history was read."""

    events: tuple[Event, ...]
    note: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    git: bool = False
    # Events a limit left out: those before the ones shown, and those after them.
    earlier: int = 0
    later: int = 0

    def as_json(self) -> dict[str, Any]:
        """``{note, since, until, git, earlier, later, events}`` (dates ISO 8601 UTC, or
        null; ``earlier``/``later``: events a limit left out on either side)."""
        return {
            "note": self.note,
            "since": _iso(self.since) if self.since else None,
            "until": _iso(self.until) if self.until else None,
            "git": self.git,
            "earlier": self.earlier,
            "later": self.later,
            "events": [e.as_json() for e in self.events],
        }


@dataclass(frozen=True)
class TimelineRequest:
    """One timeline as any front end asks for it: around ``note`` (a path, title, alias
    or file name) or, without one, in the window ``since``..``until`` (ISO dates or
    durations back from now: ``30d``; either may narrow a note's timeline too).
    ``around``: with a note, how close other notes' dates must be (``7d``; ``0``: none);
    ``newest_first``; ``limit``: at most that many events (None: all).

    Example:
        >>> TimelineRequest(since="30d", limit=20).window(now)  # doctest: +SKIP
        (datetime(2026, 11, 1, ...), None)
    """

    note: str | None = None
    since: str | None = None
    until: str | None = None
    around: str = "7d"
    newest_first: bool = False
    limit: int | None = None

    def __post_init__(self) -> None:
        for name in ("note", "since", "until"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise RequestError(f"{name} must be non-empty text, not {value!r}")
            check_text(value, name)
        if self.note is None and self.since is None and self.until is None:
            raise RequestError("give a note, or since and/or until")
        if not isinstance(self.around, str):
            raise RequestError(f"around must be a duration such as 7d, not {self.around!r}")
        check_text(self.around, "around")
        if self.limit is not None:
            check_limit(self.limit, most=None)  # a window of a big vault is 100k events

    def window(self, now: datetime) -> tuple[datetime | None, datetime | None]:
        """``since`` and ``until`` as datetimes (RequestError naming a bad one)."""
        since = window_bound("since", self.since, now)
        return since, window_bound("until", self.until, now, end=True)

    def around_span(self) -> timedelta:
        """``around`` as a duration (RequestError when it is not one)."""
        try:
            return parse_around(self.around)
        except ValueError as exc:
            raise RequestError(f"around: {exc}") from None


def window_bound(
    name: str, text: str | None, now: datetime, *, end: bool = False
) -> datetime | None:
    """One bound of a request's window (see :func:`parse_when`), RequestError naming
    ``name`` if bad: a timeline's, and a search's ``since``/``until``."""
    if text is None:
        return None
    try:
        return parse_when(text, now, end=end)
    except ValueError as exc:
        raise RequestError(f"{name}: {exc}") from None
    except OverflowError:  # 0001-01-01T00:00+14:00 in UTC, the day after 9999-12-31
        raise RequestError(f"{name}: {text!r} is out of the calendar's range") from None


@dataclass(frozen=True)
class _Commit:
    sha: str
    when: datetime
    subject: str
    paths: tuple[str, ...]


class _Row(NamedTuple):
    """What `timeline` knows of a note: the manifest's :meth:`~mf.Store.dates` row."""

    path: str
    title: str
    type: str
    mtime_ns: int
    created: Any
    last_used: Any
    last_review: Any


# --------------------------------------------------------------------------- dates


def parse_when(text: str, now: datetime, *, end: bool = False) -> datetime:
    """A bound of a window: an ISO date or datetime, or a duration back from ``now``
    (``30d``, ``2w``, ``12h``). A bare date is its midnight UTC, or with ``end`` the
    midnight after it, so ``--until 2026-11-30`` includes that day. ValueError names
    the bad value."""
    value = text.strip()
    when = parse_time(value)
    if when is not None:
        return when + timedelta(days=1) if end and len(value) == 10 else when
    try:
        # A bare number would read as days; "2026" is more likely a year: ask for a unit.
        back = None if value.replace(".", "", 1).isdigit() else parse_half_life(value)
    except ValueError:
        back = None
    if back is None:
        raise ValueError(
            f"invalid date {text!r}: expected an ISO date (2026-11-01), datetime "
            "(2026-11-01T09:00:00Z) or a duration back from now (30d, 2w, 12h)"
        )
    try:
        return now - back
    except OverflowError:
        raise ValueError(f"invalid date {text!r}: too far back") from None


def parse_around(text: str) -> timedelta:
    """``--around``: a duration (``7d``, ``36h``) of at most a century; ``0`` turns
    nearby notes off."""
    if text.strip() in ("0", "0d"):
        return timedelta(0)
    duration = parse_half_life(text)
    if duration is None:
        raise ValueError(f"invalid duration {text!r}: expected e.g. 7d, 36h or 0")
    if duration > MAX_AROUND:
        # Past the calendar's end for a date of today: say so, never an OverflowError.
        raise ValueError(f"{text!r} is too long: at most {MAX_AROUND.days}d (a century)")
    return duration


def centred(events: Sequence[Event], path: str, limit: int) -> tuple[list[Event], int, int]:
    """At most ``limit`` of ``events`` (oldest first), centred on the note at ``path``
    (its ``created`` event, else its first): (the events kept, how many earlier and how
    many later ones were left out)."""
    if len(events) <= limit:
        return list(events), 0, 0
    own = [i for i, e in enumerate(events) if e.path == path]
    born = [i for i in own if events[i].kind == "created"]
    anchor = (born or own or [0])[0]
    start = min(max(anchor - (limit - 1) // 2, 0), len(events) - limit)
    return list(events[start : start + limit]), start, len(events) - start - limit


# --------------------------------------------------------------------------- git


def _git_log(vault: Path, args: Sequence[str], timeout: float) -> list[_Commit] | None:
    """``git log ARGS`` run in the vault, paths relative to it; None when there is no
    git, the vault is not in a repository, or git fails or runs past ``timeout``."""
    # -z: names NUL-separated and never quoted (git quotes `"`, tabs and newlines in a
    # name even with core.quotepath off, and a quoted name matches no note).
    log = ["-c", "core.quotepath=off", "log", "-z", "--no-ext-diff", "--no-textconv", _FORMAT]
    done = git(vault, *log, *args, timeout=timeout)
    if done is None or done.returncode != 0:
        return None
    return _commits(done.stdout.decode("utf-8", "replace"))


def _commits(text: str) -> list[_Commit]:
    found = []
    for chunk in text.split(_RS)[1:]:
        # With -z: the header, a NUL, a newline, then the names, each ending in a NUL.
        head, _, names = chunk.partition("\0")
        sha, date, subject = (head.split("\t", 2) + ["", ""])[:3]
        when = parse_time(date)
        if when is not None:
            listed = names.removeprefix("\n").split("\0")
            paths = tuple(name for name in listed if name.endswith(".md"))
            found.append(_Commit(sha, when, subject, paths))
    return found


def _span_log(
    vault: Path, since: datetime | None, until: datetime | None, timeout: float
) -> list[_Commit] | None:
    """Every commit in the window with the notes it touched: one ``git log`` call."""
    bounds = [f"--since={_iso(since)}"] if since else []
    bounds += [f"--until={_iso(until)}"] if until else []
    return _git_log(vault, [*bounds, "--name-only", "--relative", "--", "."], timeout)


def _commit_event(commit: _Commit, path: str, title: str, suffix: str = "") -> Event:
    detail = f"{commit.sha[:10]} {commit.subject}".strip() + suffix
    return Event(commit.when, "committed", path, title, detail)


# --------------------------------------------------------------------------- events


def _rows(config: Config) -> dict[str, _Row]:
    """Every indexed note's dates (empty when the vault was never indexed)."""
    none: list[tuple[str, str, str, int, Any, Any, Any]] = []
    return {row[0]: _Row(*row) for row in mf.read(config.cache_dir, none, mf.Store.dates)}


def _entry_events(
    row: _Row, suffix: str = "", since: datetime | None = None, until: datetime | None = None
) -> list[Event]:
    """What the manifest says happened to one note, between ``since`` and ``until``:
    created, changed, used. (Only those events are built: a window of a big vault.)"""
    written: list[tuple[Any, Kind, str]] = [
        (row.created, "created", row.type),
        (row.last_used, "used", "last used"),
        (row.last_review, "used", "reviewed"),
    ]
    found = [(parse_time(v), kind, what) for v, kind, what in written if v is not None]
    found.append((datetime.fromtimestamp(row.mtime_ns / 1e9, tz=UTC), "changed", "file modified"))
    return [
        Event(when, kind, row.path, row.title, what + suffix)
        for when, kind, what in found
        if when is not None and _within(when, since, until)
    ]


def _within(when: datetime, since: datetime | None, until: datetime | None) -> bool:
    return (since is None or when >= since) and (until is None or when <= until)


_RANK = {kind: rank for rank, kind in enumerate(KINDS)}


def _ordered(
    events: Iterable[Event], since: datetime | None, until: datetime | None
) -> tuple[Event, ...]:
    kept = [e for e in events if _within(e.when, since, until)]
    return tuple(sorted(kept, key=lambda e: (e.when, _RANK[e.kind], e.path, e.detail)))


def window_timeline(
    config: Config,
    since: datetime | None,
    until: datetime | None,
    *,
    git_timeout: float = GIT_TIMEOUT_S,
) -> Timeline:
    """Every note created, changed, used or committed between ``since`` and ``until``
    (either may be None: open). Reads the manifest and one ``git log``; opens no note.

    Example:
        >>> window_timeline(config, now - timedelta(days=30), now).events[0]  # doctest: +SKIP
        Event(when=..., kind='created', path='decisions/Redis for caching.md', ...)
    """
    entries = _rows(config)
    if not entries and mf.read_state(config.cache_dir).last_index is None:
        # A window reads only the index: "no events" would hide why.
        raise mf.not_indexed()
    events = [e for row in entries.values() for e in _entry_events(row, "", since, until)]
    commits = _span_log(config.vault, since, until, git_timeout)
    for commit in commits or ():
        for path in commit.paths:
            entry = entries.get(path)
            if entry is not None:
                events.append(_commit_event(commit, path, entry.title))
    return Timeline(_ordered(events, since, until), None, since, until, commits is not None)


# --------------------------------------------------------------------------- one note


def _linked(config: Config, path: str) -> dict[str, list[str]]:
    """Each note linked to or from ``path`` (the cached link graph): how, as
    ``supersedes →`` (written in ``path``) or ``← wikilink`` (written in the other)."""
    from vaultmem.index.graph import LinkGraph

    found: dict[str, list[str]] = {}
    for edge in LinkGraph.load(config).neighbours(path):
        if edge.source == path:
            found.setdefault(edge.target, []).append(f"{edge.type} →")
        else:
            found.setdefault(edge.source, []).append(f"← {edge.type}")
    found.pop(path, None)
    return found


def _own_events(
    path: str, entry: _Row, history: list[_Commit] | None
) -> tuple[list[Event], datetime]:
    """The focus note's events and when it was born (``created``, else its first
    commit, else its mtime). Without ``created``, the first commit is its creation."""
    events = _entry_events(entry)
    commits = sorted(history or (), key=lambda c: c.when)
    for commit in commits:
        renamed = f" (as {commit.paths[0]})" if commit.paths and commit.paths[0] != path else ""
        events.append(_commit_event(commit, path, entry.title, renamed))
    born = parse_time(entry.created)
    if born is None and commits:
        born = commits[0].when
        events.append(Event(born, "created", path, entry.title, "first commit"))
    return events, born or min(e.when for e in events)


def _windows(dates: Iterable[datetime], around: timedelta) -> list[tuple[datetime, datetime]]:
    """``[d - around, d + around]`` for each date, overlapping ones merged."""
    merged: list[tuple[datetime, datetime]] = []
    for date in sorted(set(dates)):
        start, end = date - around, date + around
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _nearby(
    entries: Mapping[str, _Row],
    windows: list[tuple[datetime, datetime]],
    commits: Iterable[_Commit],
    skip: set[str],
) -> list[Event]:
    """Notes created, changed or committed inside one of ``windows``."""

    def inside(when: datetime) -> bool:
        return any(start <= when <= end for start, end in windows)

    events = [
        e
        for path, row in entries.items()
        if path not in skip
        for e in _entry_events(row, " (nearby)", windows[0][0], windows[-1][1])
        if e.kind != "used" and inside(e.when)
    ]
    for commit in commits:
        if inside(commit.when):
            events.extend(
                _commit_event(commit, p, entries[p].title, " (nearby)")
                for p in commit.paths
                if p in entries and p not in skip
            )
    return events


def _linked_events(
    config: Config, path: str, born: datetime, entries: Mapping[str, _Row], timeout: float
) -> tuple[list[Event], set[str]]:
    """A ``linked`` event for each note linked to or from ``path`` (dated when the later
    of the two was born), and that note's own events; and the set of those notes."""
    linked = _linked(config, path)
    known = {p: entries[p] for p in linked if p in entries}
    args = ["--name-only", "--relative", "--", *known]
    log = (_git_log(config.vault, args, timeout) or []) if known else []
    events: list[Event] = []
    for other, entry in known.items():
        how = ", ".join(linked[other])
        mine = _entry_events(entry, f" (linked: {how})")
        mine += [
            _commit_event(c, other, entry.title, f" (linked: {how})")
            for c in log
            if other in c.paths
        ]
        other_born = min(e.when for e in mine if e.kind != "used")
        events.append(Event(max(born, other_born), "linked", other, entry.title, how))
        events.extend(mine)
    return events, set(known)


def note_timeline(
    config: Config,
    path: str,
    *,
    around: timedelta = DEFAULT_AROUND,
    since: datetime | None = None,
    until: datetime | None = None,
    git_timeout: float = GIT_TIMEOUT_S,
) -> Timeline:
    """What happened around the note at ``path``: its own events (with its git history,
    renames followed), the notes linked to and from it (a ``linked`` event each, and
    their own events), and the notes created, changed or committed within ``around`` of
    its own dates (``timedelta(0)``: none). ``since``/``until`` narrow the result.

    Example:
        >>> note_timeline(config, "decisions/Redis for caching.md").events[0]  # doctest: +SKIP
        Event(when=..., kind='created', path='decisions/Memcached for session cache.md', ...)
    """
    entries = _rows(config)
    entry = entries.get(path) or _unindexed(config, path)
    follow = ["--follow", "--name-only", "--relative", "--", path]
    history = _git_log(config.vault, follow, git_timeout)
    events, born = _own_events(path, entry, history)
    linked, neighbours = _linked_events(config, path, born, entries, git_timeout)
    events += linked
    if around > timedelta(0):
        # A checkout or sync resets every mtime: with git history, commits say when it changed.
        anchors = ("created", "committed") if history else ("created", "committed", "changed")
        windows = _windows((e.when for e in events if e.path == path and e.kind in anchors), around)
        span = (
            _span_log(config.vault, windows[0][0], windows[-1][1], git_timeout) if windows else []
        )
        events += _nearby(entries, windows, span or (), {path, *neighbours})
    return Timeline(_ordered(events, since, until), path, since, until, history is not None)


def _unindexed(config: Config, path: str) -> _Row:
    """A note the index has not seen yet: read it once (the only file `timeline` opens)."""
    from vaultmem.note import read_note

    note = read_note(config.vault, path, config.keys)
    dates = (note.owned.get(key) for key in ("created", "last_used", "last_review"))
    return _Row(path, note.title, note.type, note.mtime_ns, *dates)
