"""`index`: bring the sidecar indexes in line with the vault, touching only what changed.

Flow: walk (stat only) → manifest plan → read and hash files whose stat changed →
parse changed notes → lexical upsert/delete → manifest saved last, atomically.
A cold build of a large vault parses and writes in one process per core, each process
producing its own Whoosh segment; the parent attaches them in a single commit.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, wait
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from vaultmem.config import Config
from vaultmem.errors import NoteError
from vaultmem.index import manifest as mf
from vaultmem.index.lexical import SCHEMA_VERSION, LexicalIndex
from vaultmem.note import Note, content_hash, parse_note
from vaultmem.vault import FileStat, vault_lock, walk_notes

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
                note = parse_note(f.path, raw, mtime_ns=f.mtime_ns, size=f.size)
            except NoteError as exc:
                self.skipped.append(Skipped(f.path, str(exc)))
                continue
            self.entries[f.path] = mf.entry_for(note)
            yield note


def _changed_content(
    root: Path, plan: mf.Plan, old: mf.Manifest, entries: dict[str, mf.Entry]
) -> list[tuple[FileStat, bytes | None]]:
    """Hash files whose stat changed; those with the same content only get a new stat."""
    out: list[tuple[FileStat, bytes | None]] = []
    for f in plan.changed:
        try:
            raw = (root / f.path).read_bytes()
        except OSError:
            continue
        prev = old.entries[f.path]
        if content_hash(raw) == prev.hash:
            # Touched but not edited (git checkout, sync): record the new stat only.
            entries[f.path] = replace(prev, mtime_ns=f.mtime_ns, size=f.size)
        else:
            out.append((f, raw))
    return out


def index_vault(
    config: Config,
    *,
    rebuild: bool = False,
    progress: Progress | None = None,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
    workers: int | None = None,
) -> IndexReport:
    """Index the vault of ``config`` incrementally (or from scratch with ``rebuild``).

    Example:
        >>> index_vault(config).summary  # doctest: +SKIP
        '53 added, 0 updated, 0 unchanged, 0 removed, 0 skipped in 0.41s'
    """
    started = time.perf_counter()
    cache = config.cache_dir
    with vault_lock(cache, timeout=config.lock_timeout, what="index"):
        old = mf.load(cache)
        fresh = rebuild or old.lexical_schema != SCHEMA_VERSION or not old.entries
        if fresh:
            LexicalIndex.destroy(cache)
            old = mf.Manifest()
        plan = mf.plan(old, walk_notes(config))
        entries = {f.path: old.entries[f.path] for f in plan.unchanged}
        todo = [(f, None) for f in plan.new] + _changed_content(config.vault, plan, old, entries)
        removed = list(plan.removed)
        parsed = _Parsed()
        if todo or removed or fresh:
            index = LexicalIndex.open(cache, create=True)
            procs = workers if workers is not None else (os.cpu_count() or 1)
            if fresh and procs > 1 and len(todo) >= PARALLEL_MIN_NOTES:
                parsed = _build_parallel(index, config.vault, todo, procs, progress)
            else:
                tick = _ticker(len(todo), progress)
                notes = parsed.notes(config.vault, todo, tick)
                index.update(notes, remove=() if fresh else removed, fresh=fresh)
        for skip in parsed.skipped:
            # A note that no longer parses keeps its last good index entry until fixed.
            if skip.path in old.entries:
                entries[skip.path] = old.entries[skip.path]
        entries.update(parsed.entries)
        mf.save(cache, mf.Manifest(entries, now().isoformat(timespec="seconds"), SCHEMA_VERSION))
    updated = sum(1 for p in parsed.entries if p in old.entries)
    return IndexReport(
        added=len(parsed.entries) - updated,
        updated=updated,
        unchanged=len(entries) - len(parsed.entries),
        removed=len(removed),
        skipped=tuple(parsed.skipped),
        seconds=time.perf_counter() - started,
        bytes_read=parsed.bytes_read,
        rebuilt=fresh,
    )


def _ticker(total: int, progress: Progress | None) -> Callable[[], None]:
    done = 0

    def tick() -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(done, total)

    return tick


# Worker side of the parallel build. The queue is inherited at fork, not pickled.
_PROGRESS_QUEUE: Any = None
_TICK_EVERY = 25


def _init_worker(progress_queue: Any) -> None:
    global _PROGRESS_QUEUE
    _PROGRESS_QUEUE = progress_queue


def _segment_job(
    directory: Path, root: Path, items: Sequence[tuple[FileStat, bytes | None]]
) -> tuple[Any, _Parsed]:
    parsed = _Parsed()
    count = 0

    def tick() -> None:
        nonlocal count
        count += 1
        if count % _TICK_EVERY == 0 and _PROGRESS_QUEUE is not None:
            _PROGRESS_QUEUE.put(_TICK_EVERY)

    segment = LexicalIndex.write_segment(directory, parsed.notes(root, items, tick))
    if _PROGRESS_QUEUE is not None:
        _PROGRESS_QUEUE.put(count % _TICK_EVERY)
    return segment, parsed


def _build_parallel(
    index: LexicalIndex,
    root: Path,
    todo: list[tuple[FileStat, bytes | None]],
    procs: int,
    progress: Progress | None,
) -> _Parsed:
    """Parse and write ``todo`` in ``procs`` processes, one segment each, then attach."""
    ctx = multiprocessing.get_context("fork")
    progress_queue = ctx.Queue()
    # Interleave so each worker gets a similar mix of small and large notes.
    chunks = [todo[i::procs] for i in range(procs)]
    done = 0
    with ProcessPoolExecutor(
        max_workers=procs, mp_context=ctx, initializer=_init_worker, initargs=(progress_queue,)
    ) as pool:
        futures = [pool.submit(_segment_job, index.directory, root, c) for c in chunks]
        pending = set(futures)
        while pending:
            _, pending = wait(pending, timeout=0.1)
            while True:
                try:
                    done += progress_queue.get_nowait()
                except queue.Empty:
                    break
                if progress is not None:
                    progress(done, len(todo))
        results = [f.result() for f in futures]
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
    right after `forget` or `promote` already sees the new state.
    """
    cache = config.cache_dir
    old = mf.load(cache)
    if not old.entries or old.lexical_schema != SCHEMA_VERSION:
        return
    gone = set(removed)
    todo: list[tuple[FileStat, bytes | None]] = []
    for path in dict.fromkeys(paths):
        try:
            st = os.stat(config.vault / path)
        except FileNotFoundError:
            gone.add(path)
            continue
        todo.append((FileStat(path, st.st_mtime_ns, st.st_size), None))
    parsed = _Parsed()
    index = LexicalIndex.open(cache, create=True)
    try:
        index.update(parsed.notes(config.vault, todo, lambda: None), remove=sorted(gone))
    finally:
        index.close()
    entries = {p: e for p, e in old.entries.items() if p not in gone}
    entries.update(parsed.entries)
    mf.save(cache, mf.Manifest(entries, old.last_index, old.lexical_schema))
