"""`vaultmem watch`: real file events on a temp vault, the real command as a subprocess."""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import run_vaultmem

from vaultmem.config import build
from vaultmem.vault import vault_lock

pytestmark = pytest.mark.slow  # a real `watch` process following edits

Batch = dict[str, Any]


class Watch:
    """A running ``vaultmem watch --json``, its batches read as they come."""

    def __init__(self, vault: Path, *args: str, env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "vaultmem", "--vault", str(vault), "watch", "--json", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.batches: queue.Queue[Batch] = queue.Queue()
        self.stderr: list[str] = []
        threading.Thread(target=self._read_out, daemon=True).start()
        threading.Thread(target=self._read_err, daemon=True).start()

    def _read_out(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.batches.put(json.loads(line))

    def _read_err(self) -> None:
        assert self.proc.stderr is not None
        self.stderr.extend(self.proc.stderr)

    def until(self, done: Callable[[list[Batch]], bool], timeout: float = 15) -> list[Batch]:
        """Batches read until ``done`` holds for them; fails after ``timeout`` seconds."""
        seen: list[Batch] = []
        deadline = time.monotonic() + timeout
        while not done(seen):
            left = deadline - time.monotonic()
            try:
                seen.append(self.batches.get(timeout=max(left, 0.01)))
            except queue.Empty:
                pytest.fail(f"no such batch in {timeout}s: {seen}, stderr {self.stderr}")
        return seen

    def none_within(self, seconds: float) -> None:
        """No batch comes in ``seconds``."""
        with pytest.raises(queue.Empty):
            extra = self.batches.get(timeout=seconds)
            pytest.fail(f"unexpected batch {extra}")

    def stop(self, sig: int = signal.SIGTERM) -> int:
        """Send ``sig`` and wait for the exit status."""
        self.proc.send_signal(sig)
        return self.proc.wait(timeout=10)


@pytest.fixture
def watching(vault: Path) -> Iterator[Watch]:
    w = Watch(vault, "--no-embed")
    try:
        w.until(lambda b: any(x["initial"] for x in b))
        yield w
    finally:
        if w.proc.poll() is None:
            w.proc.kill()
            w.proc.wait()


def changed(n: int) -> Callable[[list[Batch]], bool]:
    return lambda batches: sum(int(b["changed"]) for b in batches) >= n


def removed(n: int) -> Callable[[list[Batch]], bool]:
    return lambda batches: sum(int(b["removed"]) for b in batches) >= n


def paths(vault: Path, query: str) -> list[str]:
    out = run_vaultmem(vault, "search", query, "--json", "-n", "20")
    assert out.returncode == 0, out.stderr
    return [json.loads(line)["path"] for line in out.stdout.splitlines()]


def searches(vault: Path, queries: list[str]) -> list[list[str]]:
    """Every hit of each query (``search --json`` without the score), in path order.

    Order and scores are left out: an incremental index keeps replaced and deleted
    documents in its BM25 statistics until Whoosh merges their segments, so scores drift
    a little from a rebuild's (plain `vaultmem index` does the same).
    """
    found = []
    for query in queries:
        out = run_vaultmem(vault, "search", query, "--json", "-n", "1000", "--no-prior")
        assert out.returncode == 0, out.stderr
        rows = [json.loads(line) for line in out.stdout.splitlines()]
        found.append(sorted(json.dumps({**r, "score": None}) for r in rows))
    return found


def test_watch_follows_edits_renames_deletes_and_a_burst(
    vault: Path, watching: Watch, tmp_path: Path
) -> None:
    note = vault / "inbox" / "watched.md"
    note.write_text("# Watched\n\nThe quokkaberry harvest starts in May.\n")
    watching.until(changed(1))
    assert paths(vault, "quokkaberry") == ["inbox/watched.md"]
    # A vaultmem write is a note change like any other: one batch (a no-op, since
    # `touch` refreshed the index itself); the watcher's own writes land in the cache,
    # which it ignores, so no batch follows.
    assert run_vaultmem(vault, "touch", "inbox/watched.md").returncode == 0
    (after_touch,) = watching.until(lambda b: len(b) == 1)
    assert (after_touch["changed"], after_touch["removed"]) == (0, 0)
    watching.none_within(1.0)

    note.write_text("# Watched\n\nThe wombatique harvest starts in May.\n")
    watching.until(changed(1))
    assert paths(vault, "wombatique") == ["inbox/watched.md"]
    assert paths(vault, "quokkaberry") == []

    (vault / "archive").mkdir(exist_ok=True)
    note.rename(vault / "archive" / "moved.md")
    watching.until(removed(1))
    assert paths(vault, "wombatique") == ["archive/moved.md"]

    victim = vault / "decisions" / "Redis for caching.md"
    assert "decisions/Redis for caching.md" in paths(vault, "redis")
    victim.unlink()
    watching.until(removed(1))
    assert "decisions/Redis for caching.md" not in paths(vault, "redis")

    burst = vault / "burst"
    burst.mkdir()
    for i in range(500):
        (burst / f"note {i}.md").write_text(f"# Burst {i}\n\nkiwano{i} rides the burst.\n")
    batches = watching.until(changed(500), timeout=30)
    assert len(batches) <= 3, batches
    assert paths(vault, "kiwano499") == ["burst/note 499.md"]

    # What the watcher built answers like an index built from scratch.
    fresh = tmp_path / "fresh"
    shutil.copytree(vault, fresh, ignore=shutil.ignore_patterns(".vaultmem"))
    assert run_vaultmem(fresh, "index", "--rebuild", "--no-embed").returncode == 0
    queries = ["wombatique", "redis", "deploy postgres", "caching decision", "kiwano3 burst"]
    assert searches(vault, queries) == searches(fresh, queries)

    shutil.rmtree(burst)  # files and their folder at once
    watching.until(removed(500), timeout=30)
    assert paths(vault, "kiwano7") == []

    assert watching.stop(signal.SIGTERM) == 0
    assert "Traceback" not in "".join(watching.stderr)
    # The lock is free at once: an index that will not wait succeeds.
    env = {**os.environ, "VAULTMEM_LOCK_TIMEOUT": "0"}
    assert run_vaultmem(vault, "index", "--no-embed", env=env).returncode == 0


def test_a_busy_lock_holds_the_batch_until_it_is_free(vault: Path, watching: Watch) -> None:
    config = build(vault, {})
    with vault_lock(config.cache_dir, timeout=5, what="test"):
        (vault / "inbox" / "late.md").write_text("# Late\n\nA pomelozzi note.\n")
        watching.none_within(1.5)  # waited for, not dropped and not crashed
    watching.until(changed(1))
    assert paths(vault, "pomelozzi") == ["inbox/late.md"]
    assert any("waiting for the index lock" in line for line in watching.stderr)
    assert watching.stop(signal.SIGINT) == 0
    assert "Traceback" not in "".join(watching.stderr)


def test_ignored_paths_start_no_batch(vault: Path, watching: Watch) -> None:
    (vault / ".obsidian").mkdir(exist_ok=True)
    (vault / ".obsidian" / "workspace.json").write_text("{}")
    (vault / ".git").mkdir(exist_ok=True)
    (vault / ".git" / "index.md").write_text("# not a note\n")
    (vault / "inbox" / "picture.png").write_bytes(b"\x89PNG")
    (vault / "inbox" / ".watched.md.swp").write_bytes(b"vim")
    watching.none_within(1.0)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_an_unreachable_endpoint_is_one_warning_and_indexing_goes_on(vault: Path) -> None:
    env = {
        **os.environ,
        "VAULTMEM_EMBEDDER": "endpoint",
        "VAULTMEM_EMBED_URL": f"http://127.0.0.1:{_closed_port()}/v1",
        "VAULTMEM_EMBED_MODEL": "nothing-there",
        "VAULTMEM_EMBED_MAX_RETRIES": "0",
    }
    w = Watch(vault, env=env)
    try:
        first = w.until(lambda b: bool(b))[0]
        assert first["initial"] and first["embed_error"] and first["embedding"] is None
        for word in ("feijoabird", "jabuticat"):
            (vault / "inbox" / f"{word}.md").write_text(f"# {word}\n\n{word} here.\n")
            w.until(changed(1))
            assert paths(vault, word) == [f"inbox/{word}.md"]
        assert w.stop() == 0
    finally:
        if w.proc.poll() is None:
            w.proc.kill()
    warned = [line for line in w.stderr if "embeddings skipped" in line]
    assert len(warned) == 1, w.stderr


def test_the_watcher_runs_in_a_thread_and_stops_on_its_event(vault: Path) -> None:
    from vaultmem.watcher import VaultWatcher, WatchBatch

    got: queue.Queue[WatchBatch] = queue.Queue()
    watcher = VaultWatcher(build(vault, {}), embed=False, on_batch=got.put)
    stop = threading.Event()
    thread = threading.Thread(target=watcher.run, args=(stop,))
    thread.start()
    try:
        assert got.get(timeout=15).initial
        (vault / "inbox" / "threaded.md").write_text("# Threaded\n\nA tamarillo note.\n")
        batch = got.get(timeout=15)
        assert (batch.changed, batch.index.removed) == (1, 0)
        assert batch.summary.startswith("indexed 1 changed, 0 removed in ")
    finally:
        stop.set()
        thread.join(timeout=5)
    assert not thread.is_alive()
    assert paths(vault, "tamarillo") == ["inbox/threaded.md"]


def test_a_search_while_a_batch_is_being_written_is_answered(vault: Path) -> None:
    """A reader that opens the index between a writer's Whoosh commit and its manifest
    commit (seconds, for the pass over a burst) used to be told the index was damaged."""
    from vaultmem.index import lexical
    from vaultmem.index import manifest as mf
    from vaultmem.index.lexical import LexicalIndex
    from vaultmem.note import read_note

    assert run_vaultmem(vault, "index", "--no-embed").returncode == 0
    note = vault / "inbox" / "midway.md"
    note.write_text("# Midway\n\nA salak note.\n")
    cache = build(vault, {}).cache_dir
    store, _ = mf.open_writer(cache)
    with store:  # what an index pass has done when its manifest commit is still to come
        store.mark_pending()
        index = LexicalIndex.open_dir(lexical.location(cache, store.state().generation))
        index.update([read_note(vault, "inbox/midway.md")])
        index.close()
    assert paths(vault, "salak") == ["inbox/midway.md"]
