"""Whole-process time of `timeline` on a big vault (issue 12, item 3).

    python benchmarks/bench_timeline.py [--vault PATH] [--cache-dir PATH] [--note NOTE]
                                        [--runs 5] [--since 30d]

Runs each case ``--runs`` times as a real process (``python -m vaultmem``, output to a
pipe that is counted and dropped) and prints the median wall time, and the number of
events printed:

- ``timeline --since 30d`` (and with ``-n 20``, and ``--json``): the manifest and one
  ``git log``, no note opened;
- ``timeline NOTE`` (``--around 7d``, the default) and ``timeline NOTE --around 0``.

The vault defaults to ``bench-vaults/scale6`` (95k man-page notes) when it exists, else
``bench-vaults/dev-fm``. The cache must be indexed by this code's ``index`` (a manifest of
another schema reads as empty); it is only read, except that the first ``timeline NOTE``
writes the link graph (``graph.json``) into it, so that first run is reported apart as
"cold". The note defaults to the indexed note with the most links written in it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
VAULTS = REPO / "bench-vaults"


def _default_vault() -> Path:
    scale = VAULTS / "scale6"
    return scale if scale.is_dir() else VAULTS / "dev-fm"


def _busiest_note(cache_dir: Path) -> str:
    """The indexed note with the most links written in it."""
    from vaultmem.index import manifest as mf

    entries = mf.load(cache_dir).entries
    if not entries:
        sys.exit(f"{cache_dir}: no manifest of this schema; run `vaultmem index` into it first")
    return max(entries, key=lambda path: (len(entries[path].links), path))


def _run(command: list[str]) -> tuple[float, int]:
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} exited {done.returncode}: {done.stderr.decode()[-500:]}")
    return elapsed, done.stdout.count(b"\n")


def main() -> None:
    """Time each case and print one line per case."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vault", type=Path, default=_default_vault())
    parser.add_argument("--cache-dir", type=Path, default=None)
    parser.add_argument("--note", default=None)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--since", default="30d")
    args = parser.parse_args()
    cache_dir = args.cache_dir or args.vault / ".vaultmem"
    note = args.note or _busiest_note(cache_dir)
    base = [sys.executable, "-m", "vaultmem", "--vault", str(args.vault)]
    base += ["--cache-dir", str(cache_dir)]
    os.environ.setdefault("VAULTMEM_EMBEDDER", "none")
    cases = {
        f"timeline --since {args.since}": ["timeline", "--since", args.since],
        f"timeline --since {args.since} -n 20": ["timeline", "--since", args.since, "-n", "20"],
        f"timeline --since {args.since} --json": ["timeline", "--since", args.since, "--json"],
        "timeline NOTE": ["timeline", note],
        "timeline NOTE --around 0": ["timeline", note, "--around", "0"],
    }
    print(f"vault {args.vault} (cache {cache_dir}), NOTE = {note!r}, {args.runs} runs")
    cold, _ = _run(base + cases["timeline NOTE"])
    print(f"{'timeline NOTE (first run: graph built)':42} {cold:7.3f} s")
    for name, extra in cases.items():
        times, lines = zip(*(_run(base + extra) for _ in range(args.runs)), strict=True)
        print(f"{name:42} {statistics.median(times):7.3f} s  median  {lines[0]:7d} events")


if __name__ == "__main__":
    main()
