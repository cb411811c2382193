"""`watch`: keep the indexes current while the vault changes on disk.

A :class:`VaultWatcher` watches the vault folder recursively (watchfiles, inotify on
Linux), gathers file events until the vault has been quiet for ``debounce_ms`` (a
``git checkout`` touching a thousand notes is one batch), then runs one incremental
:func:`~vaultmem.indexer.index_vault` pass and, when an embedder is configured, one
embedding sweep. The first thing it does is such a pass, so a watcher started on a
stale vault catches up before it waits.

Events are judged by the vault's own note rules (:class:`~vaultmem.vault.NoteRules`):
the cache folder, ``.git/``, ``.obsidian/``, excluded folders, non-note files and
editor temp files never start a batch. The index and the sweep write only into the
cache, so the watcher never wakes itself; notes written by vaultmem commands (`touch`,
`remember`) are picked up like any edit, a cheap no-op since they refreshed the index
themselves.

Each batch is a full stat-only walk, not a list of the named paths: a folder renamed
or deleted in one event, or an event the kernel dropped, is still seen (a no-op pass
over 1,000 notes is ~10 ms; over 95,000, ~1 s).

A busy index lock (another `vaultmem index`) is retried every ``debounce_ms`` until it
is free; the batch is not dropped. A failed embedding sweep (missing model, endpoint
down, another sweep running) is reported once through ``on_warning`` and retried with
the next batch; the keyword index stays current meanwhile.

Reusable in a thread (the REST server runs it beside its requests)::

    stop = threading.Event()
    watcher = VaultWatcher(config, on_batch=print_batch, on_warning=log)
    thread = threading.Thread(target=watcher.run, args=(stop,), daemon=True)
    thread.start()
    ...
    stop.set()  # run() returns within ~50 ms, or when the batch in progress ends
    thread.join()

Nothing here prints: batches and warnings go to the callbacks.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from watchfiles import DefaultFilter, watch

from vaultmem.config import Config
from vaultmem.errors import LockBusy, VaultmemError
from vaultmem.indexer import IndexReport, index_vault
from vaultmem.vault import NoteRules

if TYPE_CHECKING:
    from vaultmem.embedding import EmbedReport
    from vaultmem.inference.base import Embedder

DEFAULT_DEBOUNCE_MS = 300
# How often the event loop looks for new events and for the stop event.
STEP_MS = 50
# A vault that never goes quiet (a sync client writing for minutes) still gets a batch
# this often.
MAX_WAIT_S = 5.0
# A failed sweep is retried with the next batch, or after this long without one.
EMBED_RETRY_S = 60.0
# Short-lived files no note rule would index but a vanished-path rule would count:
# editors' (watchfiles' own list: swap, backup, lock files) and vaultmem's atomic writes
# (a hidden name ending in .tmp beside the note).
_TEMP_NAMES = (
    *(re.compile(p) for p in DefaultFilter.ignore_entity_patterns),
    re.compile(r"^\..*\.tmp$"),
)

BatchCallback = Callable[["WatchBatch"], None]
WarningCallback = Callable[[str], None]


@dataclass(frozen=True)
class WatchBatch:
    """One pass of the watcher: what the keyword index and the sweep did."""

    initial: bool  # the catch-up pass run at start
    events: int  # file events that led to this pass (0 for the initial one)
    index: IndexReport
    embed: EmbedReport | None  # None: no sweep ran (vectors off, --no-embed, nothing new)
    embed_error: str  # why the sweep failed ("" when it did not)
    seconds: float

    @property
    def changed(self) -> int:
        """Notes added or updated."""
        return self.index.added + self.index.updated

    @property
    def summary(self) -> str:
        """``indexed 3 changed, 1 removed in 45 ms`` (plus the sweep, when one ran)."""
        line = (
            f"indexed {self.changed} changed, {self.index.removed} removed "
            f"in {self.seconds * 1000:.0f} ms"
        )
        if self.embed is not None and (self.embed.embedded or self.embed.removed):
            line += f"; {self.embed.embedded} fragments embedded, {self.embed.removed} removed"
        return line

    def as_json(self) -> dict[str, object]:
        """The ``watch --json`` line."""
        return {
            "initial": self.initial,
            "events": self.events,
            "changed": self.changed,
            "added": self.index.added,
            "updated": self.index.updated,
            "removed": self.index.removed,
            "unchanged": self.index.unchanged,
            "skipped": [{"path": s.path, "reason": s.reason} for s in self.index.skipped],
            "rebuilt": self.index.rebuilt,
            "healed": self.index.healed,
            "embedding": None if self.embed is None else self.embed.as_json(),
            "embed_error": self.embed_error,
            "ms": round(self.seconds * 1000, 1),
        }


class EventFilter:
    """Which file events can change what the index holds, by the vault's note rules."""

    def __init__(self, config: Config) -> None:
        self._rules = NoteRules(config)
        self._roots = tuple(dict.fromkeys((str(config.vault), str(config.vault.resolve()))))
        self._caches = tuple(
            dict.fromkeys((str(config.cache_dir), str(config.cache_dir.resolve())))
        )

    def relevant(self, paths: Iterable[str]) -> set[str]:
        """The vault-relative paths among ``paths`` (absolute) that call for a pass."""
        out = set()
        for path in paths:
            rel = self._relative(path)
            if rel is not None and self._counts(path, rel):
                out.add(rel)
        return out

    def _relative(self, path: str) -> str | None:
        if any(path == c or path.startswith(c + os.sep) for c in self._caches):
            return None
        for root in self._roots:
            if path.startswith(root + os.sep):
                return path[len(root) + 1 :].replace(os.sep, "/")
        return None  # the vault folder itself, or outside it

    def _counts(self, path: str, rel: str) -> bool:
        rules = self._rules
        if rules.path_refusal(rel) is not None:
            return False  # under .git/, .obsidian/, the cache, an excluded folder
        if rules.file_refusal(rel) is None:
            return True  # a note: written, created, deleted or renamed
        if _is_temp(rel.rpartition("/")[2]):
            return False
        # A folder may hold notes; a vanished path may have been one (renamed away).
        maybe_folder = os.path.isdir(path) or not os.path.lexists(path)
        return maybe_folder and rules.path_refusal(rel + "/") is None


def _is_temp(name: str) -> bool:
    """An editor's or vaultmem's short-lived file (swap, backup, lock, atomic temp)."""
    return any(p.search(name) for p in _TEMP_NAMES)


class VaultWatcher:
    """Keeps a vault's indexes current until stopped; see the module docstring.

    ``embed``: run the embedding sweep after each pass that changed notes (when an
    embedder is configured; ``embedder`` shares one already loaded, as a server does).
    ``on_batch`` receives every :class:`WatchBatch`; ``on_warning`` one line for each new
    problem (a note skipped, a sweep failed, the lock busy), not repeated while it lasts.
    """

    def __init__(
        self,
        config: Config,
        *,
        debounce_ms: int = DEFAULT_DEBOUNCE_MS,
        embed: bool = True,
        embedder: Embedder | None = None,
        on_batch: BatchCallback | None = None,
        on_warning: WarningCallback | None = None,
    ) -> None:
        # Never wait inside the lock: a busy lock is retried by the event loop, which
        # keeps watching for events and for the stop event meanwhile.
        self.config = replace(config, lock_timeout=0)
        # watchfiles yields events once none came for one step; the rest of the quiet
        # period is waited here, from that yield.
        self.quiet_s = max(debounce_ms - STEP_MS, STEP_MS) / 1000
        self.embedder = embedder if embedder is not None or not embed else _configured(config)
        self.on_batch = on_batch
        self.on_warning = on_warning
        self._filter = EventFilter(config)
        self._told: dict[str, set[str]] = {}  # warnings given, by kind, still true
        self._embed_failed_at: float | None = None  # a sweep is owed since it failed

    def run(self, stop: threading.Event) -> None:
        """Watch until ``stop`` is set (or KeyboardInterrupt, in the main thread).

        Errors other than a busy lock or a failed sweep (an unusable cache folder) end
        the run by raising; the lock is never left held.
        """
        events = watch(
            self.config.vault,
            watch_filter=None,
            debounce=int(MAX_WAIT_S * 1000),
            step=STEP_MS,
            rust_timeout=int(self.quiet_s * 1000),
            yield_on_timeout=True,
            stop_event=stop,
            raise_interrupt=True,
        )
        # The first yield comes once the watch is in place (after a quiet period or the
        # first events), so the catch-up pass cannot miss an edit made while it runs.
        pending: set[str] = set()
        first = last = 0.0
        initial = True
        with contextlib.closing(events):
            for changes in events:
                now = time.monotonic()
                relevant = self._filter.relevant(path for _, path in changes)
                if relevant:
                    first = first if pending else now
                    pending |= relevant
                    last = now
                quiet = now - last >= self.quiet_s or now - first >= MAX_WAIT_S
                if stop.is_set():
                    break
                if initial or (pending and quiet):
                    if self._batch(initial=initial, events=len(pending)):
                        pending.clear()
                        initial = False
                elif self._embed_failed_at is not None and now - self._embed_failed_at > (
                    EMBED_RETRY_S
                ):
                    self._batch(initial=False, events=0, report_idle=False)

    def _batch(self, *, initial: bool, events: int, report_idle: bool = True) -> bool:
        """One index pass (and sweep); False when the index lock is busy (retry later).

        ``report_idle``: report a pass that changed nothing and ran no sweep too.
        """
        started = time.perf_counter()
        try:
            report = index_vault(self.config)
        except LockBusy as exc:
            why = str(exc).removesuffix("; try again later")
            self._tell("lock", {f"waiting for the index lock: {why}"})
            return False
        self._tell("lock", set())
        self._tell("skip", {f"skipped {s.reason}" for s in report.skipped})
        touched = bool(report.added or report.updated or report.removed or report.rebuilt)
        embedded, error = None, ""
        owed = self._embed_failed_at is not None
        if self.embedder is not None and (initial or touched or owed):
            embedded, error = self._sweep()
        batch = WatchBatch(
            initial=initial,
            events=events,
            index=report,
            embed=embedded,
            embed_error=error,
            seconds=time.perf_counter() - started,
        )
        if self.on_batch is not None and (report_idle or touched or embedded is not None):
            self.on_batch(batch)
        return True

    def _sweep(self) -> tuple[EmbedReport | None, str]:
        """Run the embedding sweep; (report, "") or (None, why it failed)."""
        from vaultmem.embedding import embed_vault

        assert self.embedder is not None
        try:
            report = embed_vault(self.config, self.embedder)
        except VaultmemError as exc:  # EndpointError, LockBusy, a store it cannot open
            self._embed_failed_at = time.monotonic()
            # One warning while the same endpoint stays down: the breaker's later refusals
            # say the same thing in other words ("not tried again for 60 s").
            told = self._told.get("embed", set())
            endpoint = getattr(exc, "endpoint", "")
            if not (endpoint and any(endpoint in line for line in told)):
                self._tell("embed", {f"embeddings skipped: {exc}"})
            return None, str(exc)
        self._embed_failed_at = None
        self._tell("embed", set())
        return report, ""

    def _tell(self, kind: str, problems: set[str]) -> None:
        """Warn of each of ``problems`` (the current ones of ``kind``) not told before."""
        for line in sorted(problems - self._told.get(kind, set())):
            if self.on_warning is not None:
                self.on_warning(line)
        self._told[kind] = problems


def _configured(config: Config) -> Embedder | None:
    from vaultmem.inference.embedders import embedder_for

    return embedder_for(config)


def watch_vault(
    config: Config,
    *,
    stop_event: threading.Event,
    debounce_ms: int = DEFAULT_DEBOUNCE_MS,
    embed: bool = True,
    on_batch: BatchCallback | None = None,
    on_warning: WarningCallback | None = None,
) -> None:
    """Watch the vault of ``config`` until ``stop_event`` is set (see :class:`VaultWatcher`).

    Example:
        >>> watch_vault(config, stop_event=threading.Event(), on_batch=print)  # doctest: +SKIP
    """
    VaultWatcher(
        config, debounce_ms=debounce_ms, embed=embed, on_batch=on_batch, on_warning=on_warning
    ).run(stop_event)
