"""Memory sweeps at scale: whole-process `gc --dry-run` and `promote --dry-run` on the
scale vault with frontmatter (16k notes), and `touch` on one note of a copy of dev-fm.

    python benchmarks/bench_memory.py [--repeat 5]

Every measure is a whole `vaultmem` process (start-up, the incremental index that each
sweep begins with, the manifest, the output), run once to warm up and then ``--repeat``
times; the table shows the median. The index is brought up to date first (a cold index
of scale-fm takes about 40 s), so the sweeps measure the no-op index plus their own
work. `touch` writes, so it runs on a copy of dev-fm in a temporary folder: the bench
vaults are never modified (only their `.vaultmem/` cache is).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import REPO, make_vault, median

EXE = REPO / ".venv" / "bin" / "vaultmem"
TARGET_SWEEP_S = 5.0


def command() -> list[str]:
    """The vaultmem executable (the venv's console script, else this Python's module)."""
    return [str(EXE)] if EXE.exists() else [sys.executable, "-m", "vaultmem"]


def env() -> dict[str, str]:
    """No embedding and the real clock: what a cron sweep sees."""
    out = {k: v for k, v in os.environ.items() if not k.startswith("VAULTMEM_")}
    out["VAULTMEM_EMBEDDER"] = "none"
    return out


def run(vault: Path, *args: str) -> tuple[float, subprocess.CompletedProcess[str]]:
    """(wall seconds, finished process) of one `vaultmem --vault VAULT ARGS…`."""
    start = time.perf_counter()
    done = subprocess.run(
        [*command(), "--vault", str(vault), *args],
        capture_output=True,
        text=True,
        env=env(),
        check=False,
    )
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"vaultmem {' '.join(args)} failed ({done.returncode}): {done.stderr}")
    return wall, done


def timed(vault: Path, repeat: int, *args: str) -> tuple[float, list[float]]:
    """Median wall time over ``repeat`` runs after one warm-up, and every run's time."""
    run(vault, *args)
    times = [run(vault, *args)[0] for _ in range(repeat)]
    return median(times), times


def count_json(vault: Path, *args: str) -> int:
    """How many JSON lines (planned notes) a command prints."""
    out = run(vault, *args, "--json")[1].stdout
    return sum(1 for line in out.splitlines() if line.strip() and json.loads(line))


def has_touch() -> bool:
    """Whether this checkout's CLI has a `touch` command yet."""
    done = subprocess.run(
        [*command(), "touch", "--help"], capture_output=True, text=True, env=env(), check=False
    )
    return done.returncode == 0


def bench_touch(repeat: int) -> tuple[float, list[float], str] | None:
    """Median whole-process `touch` of one note on a throwaway copy of dev-fm."""
    if not has_touch():
        return None
    source = make_vault("dev", frontmatter=True)
    with tempfile.TemporaryDirectory(prefix="vaultmem-bench-touch-") as tmp:
        vault = Path(tmp) / "dev-fm"
        shutil.copytree(source, vault, ignore=shutil.ignore_patterns(".vaultmem"))
        run(vault, "index", "--no-embed")
        pages = sorted((vault / "man1").glob("*.md"))
        rel = str(pages[len(pages) // 2].relative_to(vault))
        med, times = timed(vault, repeat, "touch", rel)
        return med, times, rel


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    scale = make_vault("scale", frontmatter=True)
    notes = sum(1 for p in scale.rglob("*.md") if ".vaultmem" not in p.parts)
    print(f"vault: {scale} ({notes} notes), cpus: {os.cpu_count()}, repeat: {args.repeat}")
    wall, done = run(scale, "index", "--no-embed")
    print(f"  index before the sweeps: {wall:.1f}s  [{done.stdout.strip()}]")
    rows = []
    for sweep in (("gc", "--dry-run"), ("promote", "--dry-run")):
        med, times = timed(scale, args.repeat, *sweep)
        planned = count_json(scale, *sweep)
        print(f"  {' '.join(sweep)}: {', '.join(f'{t:.2f}' for t in times)}  ({planned} planned)")
        rows.append((f"`{' '.join(sweep)}` on scale-fm ({planned} notes planned)", med))
    touch = bench_touch(args.repeat)
    if touch is None:
        print("  touch: this checkout has no `touch` command yet; not measured")
    else:
        med, times, rel = touch
        print(f"  touch {rel}: {', '.join(f'{t:.2f}' for t in times)}")
    print()
    print("| measure (whole process, median) | time | target |")
    print("|---|---:|---|")
    for label, med in rows:
        print(f"| {label} | {med:.2f} s | < {TARGET_SWEEP_S:g} s |")
    if touch is None:
        print("| `touch` one note of dev-fm (copy) | not measured (no `touch` yet) | |")
    else:
        print(f"| `touch` one note of dev-fm (copy, 978 notes) | {touch[0]:.2f} s | report |")


if __name__ == "__main__":
    main()
