"""`watch`: how soon a saved note is searchable, and how a 1,000-note burst is handled.

    python benchmarks/bench_watch.py [--edits 50] [--burst 1000] [--debounce 300]

Runs the real ``vaultmem watch --json --no-embed`` as a subprocess on a fresh copy of the
dev vault (978 man pages with frontmatter, under bench-vaults/watch), waits for its
catch-up pass, then:

- edits: appends a new word to a note, closes it, and polls an in-process keyword
  ``search`` (``vaultmem.retrieval.search.search``, every 5 ms) until the note is found;
  the time from the close to the first hit, per edit, one edit at a time;
- burst: writes ``--burst`` new notes into a new folder as fast as Python can, then
  polls until a search for their shared word returns all of them; the time from the
  first and from the last write, and how many batches the watcher ran for it.

Keyword index only (--no-embed): this measures the watcher, not an embedding model.
"""

from __future__ import annotations

import argparse
import json
import queue
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from common import VAULTS, make_vault, median, percentile

from vaultmem.config import build
from vaultmem.errors import IndexStateError
from vaultmem.retrieval.search import search

WORK = VAULTS / "watch"


class Watcher:
    """The `vaultmem watch --json` subprocess and its batch lines."""

    def __init__(self, vault: Path, debounce: int) -> None:
        cmd = [sys.executable, "-m", "vaultmem", "--vault", str(vault), "watch"]
        self.proc = subprocess.Popen(
            [*cmd, "--json", "--no-embed", "--debounce", str(debounce)],
            stdout=subprocess.PIPE,
            text=True,
        )
        self.batches: queue.Queue[dict] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.batches.put(json.loads(line))

    def drain(self, settle: float) -> list[dict]:
        """Every batch that arrives until none has for ``settle`` seconds."""
        out = []
        while True:
            try:
                out.append(self.batches.get(timeout=settle))
            except queue.Empty:
                return out

    def stop(self) -> int:
        self.proc.terminate()
        return self.proc.wait(timeout=30)


REFUSED: list[str] = []  # searches that failed while the watcher was writing


def until(found: Callable[[], bool], timeout: float = 60) -> float:
    """Poll ``found`` every 5 ms; the monotonic time it first held."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if found():
                return time.monotonic()
        except IndexStateError as exc:
            REFUSED.append(str(exc))
        if time.monotonic() > deadline:
            raise TimeoutError("never became searchable")
        time.sleep(0.005)


def edits(vault: Path, watcher: Watcher, n: int) -> tuple[list[float], list[float]]:
    """(save→searchable seconds, the batches' own index ms) for ``n`` one-note edits."""
    config = build(vault, {})
    notes = sorted(p for p in (vault / "man1").glob("*.md"))[:n]
    latency, index_ms = [], []
    for i, note in enumerate(notes):
        word = f"wbench{i}quux"
        with note.open("a", encoding="utf-8") as fh:
            fh.write(f"\n{word}\n")
        saved = time.monotonic()
        hit = until(lambda w=word: bool(search(config, w, limit=1)))
        latency.append(hit - saved)
        index_ms += [b["ms"] for b in watcher.drain(0.1) if b["changed"]]
    return latency, index_ms


def burst(vault: Path, watcher: Watcher, n: int) -> dict[str, float]:
    """Write ``n`` new notes at once; when all are searchable, and in how many batches."""
    config = build(vault, {})
    folder = vault / "burst"
    folder.mkdir()
    started = time.monotonic()
    for i in range(n):
        (folder / f"b{i}.md").write_text(f"# Burst {i}\n\nwburstall note number {i}.\n")
    written = time.monotonic()
    done = until(lambda: len(search(config, "wburstall", limit=n + 10)) == n)
    batches = [b for b in watcher.drain(1.0) if b["changed"] or b["removed"]]
    return {
        "write_s": written - started,
        "from_first_s": done - started,
        "from_last_s": done - written,
        "batches": len(batches),
        "index_ms": sum(b["ms"] for b in batches),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edits", type=int, default=50)
    parser.add_argument("--burst", type=int, default=1000)
    parser.add_argument("--debounce", type=int, default=300)
    args = parser.parse_args()

    shutil.rmtree(WORK, ignore_errors=True)
    shutil.copytree(make_vault("dev", frontmatter=True), WORK)
    shutil.rmtree(WORK / ".vaultmem", ignore_errors=True)
    watcher = Watcher(WORK, args.debounce)
    try:
        initial = watcher.batches.get(timeout=300)
        watcher.drain(1.0)
        latency, index_ms = edits(WORK, watcher, args.edits)
        result = burst(WORK, watcher, args.burst)
    finally:
        code = watcher.stop()
    ms = [x * 1000 for x in latency]
    print(f"vault: {initial['added']} notes, catch-up pass {initial['ms']:.0f} ms")
    print(f"debounce (quiet period): {args.debounce} ms; exit status on SIGTERM: {code}")
    print(
        f"save -> searchable, {len(ms)} edits: p50 {median(ms):.0f} ms, "
        f"p90 {percentile(ms, 90):.0f} ms, max {max(ms):.0f} ms "
        f"(index pass p50 {median(index_ms):.0f} ms)"
    )
    print(
        f"burst of {args.burst} notes: written in {result['write_s']:.2f} s; all searchable "
        f"{result['from_first_s']:.2f} s after the first write, "
        f"{result['from_last_s']:.2f} s after the last; {result['batches']} batch(es), "
        f"{result['index_ms']:.0f} ms indexing"
    )
    print(f"searches refused while the watcher wrote: {len(REFUSED)} {REFUSED[:1]}")


if __name__ == "__main__":
    main()
