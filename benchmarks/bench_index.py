"""Indexing speed: cold index, no-op index and a 10-note update of the scale vault.

    python benchmarks/bench_index.py [--corpus scale] [--repeat 3]

Each run is a whole `vaultmem index` process (lexical only), so start-up and the
manifest are included; peak memory is the largest RSS of the process or its workers.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from common import make_vault, median


def run_index(vault: Path, *extra: str) -> tuple[float, float, str]:
    """(seconds, peak RSS MiB of this run's processes, summary line)."""
    script = (
        "import resource, sys, time\n"
        "from vaultmem.cli import app\n"
        "t = time.perf_counter()\n"
        "try:\n"
        "    app(sys.argv[1:], prog_name='vaultmem')\n"
        "except SystemExit:\n"
        "    pass\n"
        "own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
        "print('BENCH', time.perf_counter() - t, max(own, kids) / 1024, file=sys.stderr)\n"
    )
    start = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", script, "--vault", str(vault), "index", "--no-embed", *extra],
        capture_output=True,
        text=True,
        check=True,
    )
    wall = time.perf_counter() - start
    bench = [line for line in out.stderr.splitlines() if line.startswith("BENCH")][-1].split()
    return wall, float(bench[2]), out.stdout.strip()


def tree_size(vault: Path) -> tuple[int, int]:
    """(notes, bytes) of the markdown files in the vault."""
    notes = [p for p in vault.rglob("*.md") if ".vaultmem" not in p.parts]
    return len(notes), sum(p.stat().st_size for p in notes)


def touch_ten(vault: Path, round_: int) -> None:
    """Append a line to ten notes (a real content change)."""
    notes = sorted(p for p in vault.rglob("*.md") if ".vaultmem" not in p.parts)[::1500][:10]
    for p in notes:
        with p.open("a", encoding="utf-8") as fh:
            fh.write(f"\nbenchmark edit {round_}\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--corpus", default="scale")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    vault = make_vault(args.corpus)
    notes, size = tree_size(vault)
    print(f"vault: {vault} ({notes} notes, {size / 1e6:.1f} MB), cpus: {os.cpu_count()}")
    cold, peaks = [], []
    for _ in range(args.repeat):
        shutil.rmtree(vault / ".vaultmem", ignore_errors=True)
        wall, peak, summary = run_index(vault)
        cold.append(wall)
        peaks.append(peak)
        print(f"  cold: {wall:.2f}s peak {peak:.0f} MiB  [{summary}]")
    noop = []
    for _ in range(args.repeat * 2):
        wall, _peak, summary = run_index(vault)
        noop.append(wall)
    print(f"  no-op runs: {', '.join(f'{x:.2f}' for x in noop)}  [{summary}]")
    update = []
    for i in range(args.repeat):
        touch_ten(vault, i)
        wall, _peak, summary = run_index(vault)
        update.append(wall)
    print(f"  10-note updates: {', '.join(f'{x:.2f}' for x in update)}  [{summary}]")
    c = median(cold)
    print()
    print("| measure | median | target |")
    print("|---|---:|---|")
    print(f"| cold index, whole process | {c:.1f} s | |")
    print(
        f"| cold index rate | {notes / c:.0f} notes/s, {size / 1e6 / c:.2f} MB/s | ≥ 250 notes/s |"
    )
    print(f"| cold index peak memory | {median(peaks):.0f} MiB | report |")
    print(f"| no-op index | {median(noop):.2f} s ({median(noop) / c:.1%} of cold) | ≤ 2 s, ≤ 5% |")
    extra = median(update) - median(noop)
    print(f"| 10 notes changed | {median(update):.2f} s ({extra:+.2f} s vs no-op) | ∝ 10 |")


if __name__ == "__main__":
    main()
