"""Whole-process time of `consolidate --dry-run` on big vaults (issue 12, item 4).

    python benchmarks/bench_consolidate.py [--vault PATH --cache PATH] [--runs 3]
                                           [--folder F]... [--vectors]

For each vault (default: ``bench-vaults/dev-fm`` with a copy of the
``bench-vaults/caches/surface-dev`` cache, which has MiniLM vectors, then
``bench-vaults/scale6`` with a copy of ``caches/scale6-new`` when both exist), the cache
is copied to a temp folder (the originals are never written), brought up to date with
`index` once, and ``consolidate --dry-run --folder FOLDER --json`` runs ``--runs`` times
as a real process. Printed: median wall time, the notes compared and the clusters found
by action. The man-page vaults have no inbox or memory folder: the default run measures
the fixed cost (manifest, index check); ``--folder .`` on dev-fm makes every note a
candidate (the worst case), and on scale6 folders of 1-2k notes stand for a big memory
folder (95k whole man pages do not fit the shingle join in this machine's memory).

Shingles always (``VAULTMEM_EMBEDDER=none``); ``--vectors`` also times the cosine path
with the configured (default: in-process MiniLM) embedder's stored vectors.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from vaultmem.cache_folder import mark_copy

REPO = Path(__file__).resolve().parent.parent
VAULTS = REPO / "bench-vaults"
# (vault, cache, folders): "" runs without --folder (the inbox and memory folders,
# absent from the man-page vaults: the fixed cost of a big vault with few memories).
CASES = [
    (VAULTS / "dev-fm", VAULTS / "caches" / "surface-dev", ["", "."]),
    (VAULTS / "scale6", VAULTS / "caches" / "scale6-new", ["", "man8", "man7"]),
]


def _cmd(vault: Path, cache: Path, *args: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "vaultmem",
        "--vault",
        str(vault),
        "--cache-dir",
        str(cache),
        *args,
    ]


def _env(vectors: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "VAULTMEM_EMBEDDER"}
    return env if vectors else {**env, "VAULTMEM_EMBEDDER": "none"}


def _time(
    command: list[str], env: dict[str, str]
) -> tuple[float, subprocess.CompletedProcess[str]]:
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} exited {done.returncode}: {done.stderr[-800:]}")
    return elapsed, done


def bench(vault: Path, cache: Path, runs: int, folders: list[str], vectors: bool) -> None:
    """Copy ``cache``, index once, time the dry runs; print one line per similarity."""
    with tempfile.TemporaryDirectory(prefix="bench-consolidate-") as tmp:
        copy = Path(tmp) / "cache"
        shutil.copytree(cache, copy, ignore=shutil.ignore_patterns("*.lock", "lock"))
        mark_copy(copy)  # a cache of ours, copied: read as it is
        took, _ = _time(_cmd(vault, copy, "index"), _env(False))
        print(f"{vault.name}: cache {cache.name} copied, index brought up to date in {took:.1f}s")
        for folder, use_vectors in itertools.product(folders, [False, True][: 1 + vectors]):
            env = _env(use_vectors)
            args = ["consolidate", "--dry-run", "--json", *(["--folder", folder] if folder else [])]
            times, done = [], None
            for _ in range(runs):
                elapsed, done = _time(_cmd(vault, copy, *args), env)
                times.append(elapsed)
            assert done is not None
            plan = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
            actions = Counter(c["action"] for c in plan)
            summary = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else ""
            kind = "vectors" if use_vectors else "shingles"
            print(
                f"  {folder or '(default)'} {kind}: median {statistics.median(times):.2f}s "
                f"(min {min(times):.2f}s, {runs} runs); {dict(actions)}; {summary}"
            )


def main() -> None:
    """Run the cases that exist."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vault", type=Path)
    parser.add_argument("--cache", type=Path)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--folder", action="append", help="repeatable; default per vault")
    parser.add_argument("--vectors", action="store_true")
    args = parser.parse_args()
    cases = [(args.vault, args.cache, [""])] if args.vault and args.cache else CASES
    for vault, cache, folders in cases:
        if vault.is_dir() and cache.is_dir():
            bench(vault, cache, args.runs, args.folder or folders, args.vectors)
        else:
            print(f"{vault.name}: skipped ({vault} or {cache} missing)")


if __name__ == "__main__":
    main()
