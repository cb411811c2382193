"""Writes at scale: does a one-note write cost what it changes, on a 95,556-note vault?

Measures whole processes (`python -m vaultmem ...`), median of several runs, in one run
of this script:

- `pin`/`unpin` of one note on the big vault against the same on example-vault (target:
  within 1.5x), with peak RSS;
- no-op `index` and `status` on the big vault,

each for the current code and for the baseline (``baseline_tree()``, the release before
the SQLite manifest), which keeps its own index of the same vault in its own cache dir.

The big vault is ``make_vault.py --copies 6 --frontmatter`` of the scale corpus, made
once under bench-vaults/scale6; each cache is indexed once (minutes) and reused.

Usage:
    python benchmarks/bench_write_scale.py [--runs 7]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from common import BENCH, MANPAGES, REPO, VAULTS, baseline_tree, median

BIG = VAULTS / "scale6"
SMALL = VAULTS / "example-write"
CACHES = VAULTS / "caches"
BIG_NOTE = "man1/ls.1-0.md"
SMALL_NOTE = "decisions/Redis for caching.md"


def big_vault() -> Path:
    """The 95,556-note vault, written once."""
    if not (BIG / ".made").exists():
        subprocess.run(
            [
                sys.executable,
                str(BENCH / "make_vault.py"),
                str(MANPAGES / "scale" / "corpus.jsonl"),
                str(BIG),
                "--copies",
                "6",
                "--frontmatter",
                "--force",
            ],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        (BIG / ".made").write_text("ok\n")
    return BIG


def small_vault() -> Path:
    """A copy of example-vault/ (its notes get pinned and unpinned)."""
    if not SMALL.exists():
        shutil.copytree(REPO / "example-vault", SMALL, ignore=shutil.ignore_patterns(".vaultmem"))
    return SMALL


def run(code: Path, vault: Path, cache: Path, *args: str) -> tuple[float, int]:
    """Run vaultmem once; (wall seconds, peak RSS in MiB) of that process alone.

    Peak RSS comes from /usr/bin/time: a child's own ru_maxrss starts at its forking
    parent's, which would hide a small process's peak.
    """
    env = {**os.environ, "PYTHONPATH": str(code), "VAULTMEM_EMBEDDER": "none"}
    cmd = [sys.executable, "-m", "vaultmem", "--vault", str(vault), "--cache-dir", str(cache)]
    rss_file = VAULTS / "rss.txt"
    started = time.perf_counter()
    done = subprocess.run(
        ["/usr/bin/time", "-o", str(rss_file), "-f", "%M", *cmd, *args],
        env=env,
        cwd=code,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed: {done.stderr}")
    return seconds, int(rss_file.read_text().split()[-1]) // 1024


def ensure_index(code: Path, vault: Path, cache: Path) -> None:
    """Index once (a cold index of the big vault takes minutes), then bring it current."""
    run(code, vault, cache, "index", "--no-embed", "-q")


def pins(code: Path, vault: Path, cache: Path, note: str, runs: int) -> tuple[float, int]:
    """Median seconds and max peak RSS of `pin`/`unpin` of one note, alternated."""
    times, peak = [], 0
    for i in range(runs):
        seconds, rss = run(code, vault, cache, "unpin" if i % 2 else "pin", note)
        times.append(seconds)
        peak = max(peak, rss)
    return median(times), peak


def repeat(code: Path, vault: Path, cache: Path, runs: int, *args: str) -> float:
    """Median seconds of a command."""
    return median([run(code, vault, cache, *args)[0] for _ in range(runs)])


def main() -> None:
    """Print one table row per code version and a ratio line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    codes = {"baseline 83064f7": baseline_tree(), "current": REPO}
    big, small = big_vault(), small_vault()
    print(f"big vault: {sum(1 for _ in big.rglob('*.md'))} notes; runs: {args.runs}")
    print("code              pin big  RSS   pin small  RSS   ratio  no-op index  status")
    for label, code in codes.items():
        tag = "base" if code != REPO else "new"
        big_cache, small_cache = CACHES / f"scale6-{tag}", CACHES / f"example-{tag}"
        for vault, cache in ((big, big_cache), (small, small_cache)):
            ensure_index(code, vault, cache)
        pin_big, rss_big = pins(code, big, big_cache, BIG_NOTE, args.runs)
        pin_small, rss_small = pins(code, small, small_cache, SMALL_NOTE, args.runs)
        ensure_index(code, big, big_cache)  # the other code's pins changed a note's stat
        noop = repeat(code, big, big_cache, args.runs, "index", "--no-embed", "-q")
        status = repeat(code, big, big_cache, args.runs, "status")
        print(
            f"{label:16} {pin_big:6.2f}s {rss_big:4d}M {pin_small:8.2f}s {rss_small:4d}M "
            f"{pin_big / pin_small:5.2f}x {noop:10.2f}s {status:6.2f}s"
        )


if __name__ == "__main__":
    main()
