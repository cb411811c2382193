"""`index`: bring the sidecar indexes in line with the vault, touching only what changed.

Flow: walk (stat only) → manifest plan → read and hash files whose stat changed →
parse changed notes → lexical upsert/delete → the changed manifest rows, last.
A cold build of a large vault parses and writes in one process per core, each process
producing its own Whoosh segment; the parent attaches them in a single commit.

A rebuild writes a new generation of the keyword index beside the live one; the manifest
transaction that records its rows and generation makes it live, so a rebuild killed at
any point leaves the old index answering. An index the manifest cannot vouch for
(missing, changed outside vaultmem, a different note count, an interrupted write) is
rebuilt by the next run, which says why.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

from vaultmem.config import Config
from vaultmem.errors import IndexStateError, NoteError, VaultmemError, VaultmemWarning
from vaultmem.index import lexical, stamps
from vaultmem.index import manifest as mf
from vaultmem.index.graph import LinkGraph
from vaultmem.index.lexical import LexicalIndex
from vaultmem.index.lexical_schema import SCHEMA_VERSION
from vaultmem.index.records import FragmentRelink
from vaultmem.note import Note, content_hash, parse_note
from vaultmem.properties import BARE, KeyScheme
from vaultmem.vault import FileStat, vault_lock, walk_notes
from vaultmem.workers import Report, run_forked

Progress = Callable[[int, int], None]
# Below this many notes to parse, worker processes cost more than they save.
PARALLEL_MIN_NOTES = 400


@dataclass(frozen=True)
class Skipped:
    """A note that could not be indexed, and why (one line)."""

    path: str
    reason: str


@dataclass(frozen=True)
class IndexReport:
    """What one `index` run did."""

    added: int
    updated: int
    unchanged: int
    removed: int
    skipped: tuple[Skipped, ...]
    seconds: float
    bytes_read: int
    rebuilt: bool
    healed: str = ""  # what was found damaged and rebuilt ("" when nothing was)
    # (path, warning) of each note indexed by this run with a warning (Note.warnings): an
    # invalid owned value, a key written twice.
    warnings: tuple[tuple[str, str], ...] = ()

    @property
    def summary(self) -> str:
        """The one-line summary `index` always prints."""
        return (
            f"{self.added} added, {self.updated} updated, {self.unchanged} unchanged, "
            f"{self.removed} removed, {len(self.skipped)} skipped in {self.seconds:.2f}s"
        )


@dataclass
class _Parsed:
    """Manifest entries and failures gathered while parsing a batch of notes."""

    entries: dict[str, mf.Entry] = field(default_factory=dict)
    skipped: list[Skipped] = field(default_factory=list)
    bytes_read: int = 0
    keys: KeyScheme = BARE  # how vaultmem's keys are named in the notes (Config.keys)

    def notes(
        self, root: Path, items: Iterable[tuple[FileStat, bytes | None]], tick: Callable[[], None]
    ) -> Iterator[Note]:
        """Parse each item (reading the file when no bytes are given), skipping failures."""
        for f, raw in items:
            tick()
            if raw is None:
                try:
                    raw = (root / f.path).read_bytes()
                except OSError:
                    continue  # vanished since the walk: the next run sees it gone
            self.bytes_read += len(raw)
            try:
                note = parse_note(f.path, raw, mtime_ns=f.mtime_ns, size=f.size, keys=self.keys)
            except NoteError as exc:
                self.skipped.append(Skipped(f.path, str(exc)))
                continue
            self.entries[f.path] = mf.entry_for(note)
            yield note


def _changed_content(
    root: Path,
    changed: Iterable[FileStat],
    old: Mapping[str, mf.Entry],
    entries: dict[str, mf.Entry],
) -> list[tuple[FileStat, bytes | None]]:
    """Hash files whose stat changed; those with the same content only get a new stat."""
    out: list[tuple[FileStat, bytes | None]] = []
    for f in changed:
        try:
            raw = (root / f.path).read_bytes()
        except OSError:
            continue  # vanished: its row stays until the next run sees it gone
        prev = old[f.path]
        if content_hash(raw) == prev.hash:
            # Touched but not edited (git checkout, sync): record the new stat only.
            entries[f.path] = replace(prev, mtime_ns=f.mtime_ns, size=f.size)
        else:
            out.append((f, raw))
    return out


class IndexNotRefreshed(VaultmemWarning):
    """A write command changed notes but could not refresh the keyword index."""


def index_vault(
    config: Config,
    *,
    rebuild: bool = False,
    progress: Progress | None = None,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
    workers: int | None = None,
) -> IndexReport:
    """Index the vault of ``config`` incrementally (or from scratch with ``rebuild``).

    A damaged cache (manifest, keyword index) is rebuilt; the report's ``healed`` says
    what was wrong.

    Example:
        >>> index_vault(config).summary  # doctest: +SKIP
        '53 added, 0 updated, 0 unchanged, 0 removed, 0 skipped in 0.41s'
    """
    started = time.perf_counter()
    cache = config.cache_dir
    run = _Run(config, progress, now(), workers)
    with vault_lock(cache, timeout=config.lock_timeout, what="index"):
        orphaned = not (cache / mf.FILE_NAME).exists() and lexical.has_generations(cache)
        store, healed = mf.open_writer(cache)
        with store:
            state = store.state()
            live = bool(state.generation) and state.lexical_schema == SCHEMA_VERSION
            healed = healed or _unsound(cache, store, state, live=live, orphaned=orphaned)
            if rebuild or healed or not live:
                report = run.rebuild(store, state)
            else:
                report = run.update(store, state)
                if state.pending:
                    healed = _count_problem(_doc_count(cache, state), store.count())
                    if healed:  # the interrupted update left notes no walk can redo
                        report = run.rebuild(store, store.state())
    # Resolve the links of this generation now, rather than in the first command to read them.
    LinkGraph.load(config)
    return replace(report, seconds=time.perf_counter() - started, healed=healed)


def _unsound(cache: Path, store: mf.Store, state: mf.State, *, live: bool, orphaned: bool) -> str:
    """Why the live keyword index cannot be trusted ("" when it can), read cheaply.

    ``orphaned``: keyword indexes lay on disk without a manifest to name one of them.
    """
    if orphaned:
        return "the manifest was missing"
    if not live:
        return ""  # never indexed, or by another schema: rebuilt without complaint
    if state.dirty:
        return state.dirty
    directory = lexical.location(cache, state.generation)
    if not state.pending:  # an interrupted update changed the files: no fingerprint holds
        problem = lexical.check(directory, state.fingerprint)
        if problem:
            return f"keyword index {problem}"
    try:
        held = LexicalIndex.open_dir(directory).doc_count()
    except IndexStateError as exc:
        return str(exc)
    return "" if state.pending else _count_problem(held, store.count())


def index_problem(cache: Path) -> str:
    """Why the next `index` would rebuild the keyword index ("" when it would not), found
    the way `index` finds it but without the lock or any write (opens the index to count)."""
    orphaned = not (cache / mf.FILE_NAME).exists() and lexical.has_generations(cache)
    try:
        store = mf.open_reader(cache)
    except IndexStateError as exc:
        return str(exc)
    if store is None:
        return "the manifest was missing" if orphaned else ""
    with store:
        try:
            state = store.state()
            live = bool(state.generation) and state.lexical_schema == SCHEMA_VERSION
            return _unsound(cache, store, state, live=live, orphaned=orphaned)
        except sqlite3.Error as exc:
            return str(mf.damaged(store.path, exc))


def _count_problem(held: int, rows: int) -> str:
    return "" if held == rows else f"keyword index holds {held} notes, the manifest {rows}"


def _doc_count(cache: Path, state: mf.State) -> int:
    return LexicalIndex.open_dir(lexical.location(cache, state.generation)).doc_count()


@dataclass(frozen=True)
class _Run:
    """One `index` run's inputs: the two ways to bring the indexes up to date."""

    config: Config
    progress: Progress | None
    started: datetime
    workers: int | None

    def rebuild(self, store: mf.Store, state: mf.State) -> IndexReport:
        """Build a new generation beside the live one; one transaction makes it live."""
        cache = self.config.cache_dir
        generation = lexical.new_generation()
        index = LexicalIndex.create(lexical.location(cache, generation))
        todo: list[tuple[FileStat, bytes | None]] = [(f, None) for f in walk_notes(self.config)]
        seen = stamps.taken(self.config.vault, [f for f, _ in todo])
        procs = self.workers if self.workers is not None else (os.cpu_count() or 1)
        if procs > 1 and len(todo) >= PARALLEL_MIN_NOTES:
            parsed = _build_parallel(
                index, self.config.vault, todo, procs, self.progress, self.config.keys
            )
        else:
            parsed = _Parsed(keys=self.config.keys)
            tick = _ticker(len(todo), self.progress)
            index.update(parsed.notes(self.config.vault, todo, tick), fresh=True)
        with store.transaction():
            store.clear()
            store.upsert(parsed.entries)
            store.set_meta(
                generation=generation,
                fingerprint=lexical.fingerprint(index.directory),
                dirty="",
                pending="",
                last_index=self._stamp(),
                lexical_schema=SCHEMA_VERSION,
                stamps=seen.dump(),
                skipped=_skipped_meta(parsed, todo),
            )
        lexical.remove_generations(cache, generation)
        return _report(parsed, updated=0, unchanged=0, removed=0, rebuilt=True)

    def update(self, store: mf.Store, state: mf.State) -> IndexReport:
        """Re-index the notes whose stat changed; write only the rows that did."""
        cache = self.config.cache_dir
        lexical.remove_generations(cache, state.generation)  # left by a killed rebuild
        stats = store.stats()
        plan = mf.plan(stats, walk_notes(self.config))
        seen = stamps.taken(self.config.vault, [*plan.new, *plan.changed, *plan.unchanged])
        touched: dict[str, mf.Entry] = {}
        old = store.get_many(f.path for f in plan.changed)
        todo: list[tuple[FileStat, bytes | None]] = [(f, None) for f in plan.new]
        todo += _changed_content(self.config.vault, plan.changed, old, touched)
        parsed = _Parsed(keys=self.config.keys)
        directory = lexical.location(cache, state.generation)
        relink = FragmentRelink(store, cache)
        if todo or plan.removed:
            store.mark_pending()
            index = LexicalIndex.open_dir(directory)
            tick = _ticker(len(todo), self.progress)
            notes = _relinked(parsed.notes(self.config.vault, todo, tick), relink)
            index.update(notes, remove=plan.removed)
        fingerprint = state.fingerprint
        if todo or plan.removed or state.pending:
            fingerprint = lexical.fingerprint(directory)
        obsolete = [old[f.path].hash for f, _ in todo if f.path in old]
        obsolete += [e.hash for e in store.get_many(plan.removed).values()]
        with store.transaction():
            store.upsert({**touched, **parsed.entries})
            store.delete(plan.removed)
            _save_relinked(relink, obsolete)
            store.set_meta(
                fingerprint=fingerprint,
                pending="",
                last_index=self._stamp(),
                stamps=seen.dump(),
                skipped=_skipped_meta(parsed, todo),
            )
        updated = sum(1 for p in parsed.entries if p in stats)
        unchanged = store.count() - len(parsed.entries)
        return _report(parsed, updated, unchanged, len(plan.removed), rebuilt=False)

    def _stamp(self) -> str:
        return self.started.isoformat(timespec="seconds")


def _skipped_meta(parsed: _Parsed, todo: Iterable[tuple[FileStat, bytes | None]]) -> str:
    """The manifest's record of the notes this run could not parse (every one is read
    again by each run, having no row, or a row of other content): path → [mtime, size]."""
    failed = {s.path for s in parsed.skipped}
    found = {f.path: [f.mtime_ns, f.size] for f, _ in todo if f.path in failed}
    return json.dumps(found, sort_keys=True) if found else ""


def _report(
    parsed: _Parsed, updated: int, unchanged: int, removed: int, *, rebuilt: bool
) -> IndexReport:
    return IndexReport(
        added=len(parsed.entries) - updated,
        updated=updated,
        unchanged=unchanged,
        removed=removed,
        skipped=tuple(parsed.skipped),
        seconds=0.0,
        bytes_read=parsed.bytes_read,
        rebuilt=rebuilt,
        warnings=tuple((p, w) for p, e in sorted(parsed.entries.items()) for w in e.warnings),
    )


def _ticker(total: int, progress: Progress | None) -> Callable[[], None]:
    done = 0

    def tick() -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(done, total)

    return tick


# The parallel build: each worker process (vaultmem.workers) writes one Whoosh segment.
_TICK_EVERY = 25


def _segment_job(
    directory: Path,
    root: Path,
    keys: KeyScheme,
    items: Sequence[tuple[FileStat, bytes | None]],
    report: Report,
) -> tuple[Any, _Parsed]:
    """Worker side: parse ``items`` and write them as one unattached segment."""
    parsed = _Parsed(keys=keys)
    count = 0

    def tick() -> None:
        nonlocal count
        count += 1
        if count % _TICK_EVERY == 0:
            report(_TICK_EVERY)

    segment = LexicalIndex.write_segment(directory, parsed.notes(root, items, tick))
    report(count % _TICK_EVERY)
    return segment, parsed


def _build_parallel(
    index: LexicalIndex,
    root: Path,
    todo: list[tuple[FileStat, bytes | None]],
    procs: int,
    progress: Progress | None,
    keys: KeyScheme = BARE,
) -> _Parsed:
    """Parse and write ``todo`` in ``procs`` processes, one segment each, then attach."""
    # Interleave so each worker gets a similar mix of small and large notes.
    chunks = [todo[i::procs] for i in range(procs)]
    done = 0

    def advanced(n: int) -> None:
        nonlocal done
        done += n
        if progress is not None:
            progress(done, len(todo))

    jobs = [partial(_segment_job, index.directory, root, keys, chunk) for chunk in chunks]
    results = run_forked(jobs, advanced)
    index.attach_segments([segment for segment, _ in results if segment is not None])
    merged = _Parsed()
    for _, part in results:
        merged.entries.update(part.entries)
        merged.skipped.extend(part.skipped)
        merged.bytes_read += part.bytes_read
    return merged


def refresh_paths(config: Config, paths: Iterable[str], removed: Iterable[str] = ()) -> None:
    """Re-index just ``paths`` (and drop ``removed``) after vaultmem itself wrote them.

    The caller holds the vault lock. A vault that was never indexed is left alone: the
    first `index` will see everything. Commands that edit notes call this so a search run
    right after `forget` or `promote` already sees the new state. Only the rows of these
    notes are read and written.

    The notes are already written when this runs, so a damaged index is no reason to
    fail: the refresh is skipped with an :class:`IndexNotRefreshed` warning, the index is
    marked for the next `index` to rebuild, and the command succeeds.
    """
    try:
        store = mf.open_reader(config.cache_dir)
    except IndexStateError as exc:
        _not_refreshed(str(exc))
        return
    if store is None:
        return
    with store:
        try:
            _refresh(config, store, paths, removed)
        except (VaultmemError, sqlite3.Error, OSError) as exc:
            _give_up(store, str(exc))
        except Exception as exc:  # whoosh raises many kinds on a damaged index
            _give_up(store, f"{type(exc).__name__}: {exc}")


def _refresh(config: Config, store: mf.Store, paths: Iterable[str], removed: Iterable[str]) -> None:
    state = store.state()
    if not state.generation or state.lexical_schema != SCHEMA_VERSION:
        return
    if state.dirty:  # already marked for the next `index` to rebuild
        _not_refreshed(state.dirty)
        return
    directory = lexical.location(config.cache_dir, state.generation)
    problem = "" if state.pending else lexical.check(directory, state.fingerprint)
    if problem:
        raise IndexStateError(f"keyword index {problem}")
    gone = set(removed)
    todo: list[tuple[FileStat, bytes | None]] = []
    for path in dict.fromkeys(paths):
        try:
            st = os.stat(config.vault / path)
        except FileNotFoundError:
            gone.add(path)
            continue
        todo.append((FileStat(path, st.st_mtime_ns, st.st_size), None))
    parsed = _Parsed(keys=config.keys)
    relink = FragmentRelink(store, config.cache_dir)
    obsolete = [e.hash for e in store.get_many([*(f.path for f, _ in todo), *gone]).values()]
    store.mark_pending()
    index = LexicalIndex.open_dir(directory)
    try:
        notes = _relinked(parsed.notes(config.vault, todo, lambda: None), relink)
        index.update(notes, remove=sorted(gone))
    finally:
        index.close()
    with store.transaction():
        store.upsert(parsed.entries)
        store.delete(gone)
        # The notes keep the vectors of every fragment whose text the write left alone.
        _save_relinked(relink, obsolete)
        # An update interrupted before this one is still owed to the next `index`.
        pending = "1" if state.pending else ""
        store.set_meta(fingerprint=lexical.fingerprint(directory), pending=pending)
        # The folders written in stay current for the stale-index hint (index.stamps).
        recorded = stamps.Stamps.parse(state.stamps)
        if recorded is not None:
            written = [f.path for f, _ in todo]
            after = stamps.rerecorded(recorded, config.vault, written, gone)
            store.set_meta(stamps=after.dump())


def _save_relinked(relink: FragmentRelink, obsolete: Iterable[str]) -> None:
    """Save the re-linked fragments in the notes' manifest commit; a failure costs only
    vectors until the next `embed` (the keyword index is sound), so it is a warning,
    never a reason to rebuild."""
    try:
        relink.save(obsolete)
    except (VaultmemError, sqlite3.Error, OSError) as exc:
        warnings.warn(
            IndexNotRefreshed(
                f"notes indexed, but their fragments were not re-linked to their vectors "
                f"({exc}); run `vaultmem embed`"
            ),
            stacklevel=3,
        )


def _relinked(notes: Iterable[Note], relink: FragmentRelink) -> Iterator[Note]:
    """``notes``, each filed with ``relink`` on its way to the keyword index."""
    for note in notes:
        relink.add(note)
        yield note


def _give_up(store: mf.Store, why: str) -> None:
    """Mark the index for rebuilding (if the manifest still takes a write) and warn."""
    with contextlib.suppress(sqlite3.Error):
        store.mark_dirty(f"a write command could not refresh the keyword index ({why})")
    _not_refreshed(why)


def _not_refreshed(why: str) -> None:
    warnings.warn(
        IndexNotRefreshed(
            f"notes written, but the keyword index was not refreshed ({why}); run `vaultmem index`"
        ),
        stacklevel=3,
    )
