"""`query` and `hook prompt` latency of several codes, side by side on example-vault.

    python benchmarks/bench_side_by_side.py --before DIR [--before DIR2 ...]
        [--prompts 15] [--only query|warm|hook]

Each ``--before DIR`` is a tree holding another commit's ``vaultmem/`` package (``git
archive REV | tar -x -C DIR``, then ``python -m compileall -q DIR/vaultmem`` so that it
loads from bytecode as an installed package does); it runs with ``PYTHONPATH=DIR``. Each
code gets its own copy of example-vault, indexed and embedded (MiniLM) by that code. Then,
over the agent prompts of ``benchmarks/data/surface_prompts.jsonl`` that want a note,
rotating which code goes first:

- ``query PROMPT -n 10`` as a whole process without a server (median of ``--prompts``);
- ``api.search`` hybrid in one warm process per code (median of 40, after 5 warm-ups);
- ``hook prompt`` as a whole process without a server (median of 2 × ``--prompts``, each
  prompt in a session of its own).

Whole processes report wall time and CPU time (user + system of the child, its threads
included): on a shared machine the wall time swings with the load, the CPU much less.
Ratios are against the first ``--before``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import REPO

PROMPTS = REPO / "benchmarks" / "data" / "surface_prompts.jsonl"
NOW = "2026-12-01T09:00:00Z"
#: Every process runs from here: ``python -m`` puts its working folder first on the path,
#: so run from a checkout it would import that checkout's vaultmem whatever PYTHONPATH says.
NEUTRAL = Path(tempfile.gettempdir())
WARM = """
import json, statistics, sys, time
from datetime import UTC, datetime
from pathlib import Path
from vaultmem import api
from vaultmem.config import build
from vaultmem.model import SearchRequest
prompts = json.loads(sys.argv[2])
vault = api.OpenVault(build(Path(sys.argv[1]), {}), warm=True)
now = datetime(2026, 12, 1, tzinfo=UTC)
for p in prompts[:5]:
    api.search(vault, SearchRequest(p, "hybrid", 10), now=now)
times = []
for p in prompts:
    start = time.perf_counter()
    api.search(vault, SearchRequest(p, "hybrid", 10), now=now)
    times.append(time.perf_counter() - start)
print(statistics.median(times))
"""


def _env(tree: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("VAULTMEM_")}
    # Every tree loads the bytecode compiled at the start (_compiled), as an installed
    # package does; none is written while timing.
    env.update(VAULTMEM_NO_SERVER="1", VAULTMEM_NOW=NOW, PYTHONDONTWRITEBYTECODE="1")
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    return env


def _compiled(tree: Path | None) -> None:
    """Compile a tree's package once (pip does at install; without it every process
    compiles the modules it imports from source)."""
    package = (tree or REPO) / "vaultmem"
    cmd = [sys.executable, "-m", "compileall", "-q", str(package)]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


def _check_runs_own(tree: Path | None) -> None:
    """Stop unless ``python -m vaultmem`` with ``tree``'s environment imports its package."""
    cmd = [sys.executable, "-c", "import vaultmem; print(vaultmem.__file__)"]
    done = subprocess.run(cmd, env=_env(tree), capture_output=True, text=True, cwd=NEUTRAL)
    found = Path(done.stdout.strip()).resolve().parent.parent
    if found != (tree or REPO).resolve():
        sys.exit(f"{tree or 'this tree'}: imports vaultmem from {found}")


def _vault(tree: Path | None) -> Path:
    target = Path(tempfile.mkdtemp(prefix="side-by-side-")) / "vault"
    shutil.copytree(REPO / "example-vault", target, ignore=shutil.ignore_patterns(".vaultmem"))
    for step in ("index", "embed"):
        cmd = [sys.executable, "-m", "vaultmem", "--vault", str(target), step, "-q"]
        subprocess.run(cmd, check=True, env=_env(tree), capture_output=True, cwd=NEUTRAL)
    return target


def _timed(cmd: list[str], env: dict[str, str], stdin: bytes | None = None) -> tuple[float, float]:
    """Wall and CPU seconds (user + system, threads included) of one whole process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, env=env, input=stdin, capture_output=True, check=True, cwd=NEUTRAL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", type=Path, action="append", required=True)
    parser.add_argument("--prompts", type=int, default=15)
    parser.add_argument("--only", action="append", choices=["query", "warm", "hook"])
    args = parser.parse_args()
    measures = args.only or ["query", "warm", "hook"]
    rows = [json.loads(line) for line in PROMPTS.read_text().splitlines() if line.strip()]
    prompts = [r["prompt"] for r in rows if r["expect"]]
    codes: dict[str, Path | None] = {str(tree): tree for tree in args.before}
    codes["this tree"] = None
    for tree in codes.values():
        _compiled(tree)
    for tree in codes.values():
        _check_runs_own(tree)
    vaults = {name: _vault(tree) for name, tree in codes.items()}
    times: dict[str, dict[str, list[float]]] = {name: {} for name in codes}
    names = list(codes)
    for n, prompt in enumerate(prompts[: args.prompts]):
        order = names[n % len(names) :] + names[: n % len(names)]
        for name in order:
            base = [sys.executable, "-m", "vaultmem", "--vault", str(vaults[name])]
            env = _env(codes[name])
            got = times[name]
            if "query" in measures:
                wall, cpu = _timed([*base, "query", prompt, "-n", "10"], env)
                got.setdefault("query", []).append(wall)
                got.setdefault("query CPU", []).append(cpu)
            if "hook" in measures:
                for k in range(2):
                    event = {"prompt": prompt, "session_id": f"lat-{n}-{k}"}
                    wall, cpu = _timed([*base, "hook", "prompt"], env, json.dumps(event).encode())
                    got.setdefault("hook", []).append(wall)
                    got.setdefault("hook CPU", []).append(cpu)
    if "warm" in measures:
        for name in codes:
            cmd = [sys.executable, "-c", WARM, str(vaults[name]), json.dumps(prompts[:40])]
            env = _env(codes[name])
            done = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=NEUTRAL)
            times[name]["warm"] = [float(done.stdout)]
    for measure in times[names[0]]:
        first = statistics.median(times[names[0]][measure])
        said = []
        for name in names:
            value = statistics.median(times[name][measure])
            said.append(f"{name} {value * 1000:.0f} ms ({value / first:.2f})")
        print(f"{measure}: " + ", ".join(said))
    for vault in vaults.values():
        shutil.rmtree(vault.parent, ignore_errors=True)


if __name__ == "__main__":
    main()
