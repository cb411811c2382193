"""`query` and `hook prompt` latency of two codes, side by side on example-vault.

    python benchmarks/bench_side_by_side.py --before DIR [--prompts 15]

``--before DIR`` is a tree holding another commit's ``vaultmem/`` package (``git worktree
add DIR REV``); it runs with ``PYTHONPATH=DIR``. Each code gets its own copy of
example-vault, indexed and embedded (MiniLM) by that code. Then, over the agent prompts of
``benchmarks/data/surface_prompts.jsonl`` that want a note, alternating which code goes
first:

- ``query PROMPT -n 10`` as a whole process without a server (median of ``--prompts``);
- ``api.search`` hybrid in one warm process per code (median of 40, after 5 warm-ups);
- ``hook prompt`` as a whole process without a server (median of 2 × ``--prompts``).
"""

from __future__ import annotations

import argparse
import json
import os
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
    # No bytecode written into the other tree (it may be a checkout to leave untouched).
    env.update(VAULTMEM_NO_SERVER="1", VAULTMEM_NOW=NOW, PYTHONDONTWRITEBYTECODE="1")
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    return env


def _vault(tree: Path | None) -> Path:
    target = Path(tempfile.mkdtemp(prefix="side-by-side-")) / "vault"
    shutil.copytree(REPO / "example-vault", target, ignore=shutil.ignore_patterns(".vaultmem"))
    for step in ("index", "embed"):
        cmd = [sys.executable, "-m", "vaultmem", "--vault", str(target), step, "-q"]
        subprocess.run(cmd, check=True, env=_env(tree), capture_output=True)
    return target


def _timed(cmd: list[str], env: dict[str, str], stdin: bytes | None = None) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, env=env, input=stdin, capture_output=True, check=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", type=Path, required=True)
    parser.add_argument("--prompts", type=int, default=15)
    args = parser.parse_args()
    rows = [json.loads(line) for line in PROMPTS.read_text().splitlines() if line.strip()]
    prompts = [r["prompt"] for r in rows if r["expect"]]
    codes = {"before": args.before, "after": None}
    vaults = {name: _vault(tree) for name, tree in codes.items()}
    times: dict[str, dict[str, list[float]]] = {name: {} for name in codes}
    for n, prompt in enumerate(prompts[: args.prompts]):
        order = list(codes) if n % 2 == 0 else list(reversed(codes))
        for name in order:
            base = [sys.executable, "-m", "vaultmem", "--vault", str(vaults[name])]
            env = _env(codes[name])
            got = times[name]
            got.setdefault("query", []).append(_timed([*base, "query", prompt, "-n", "10"], env))
            event = json.dumps({"prompt": prompt, "session_id": "lat"}).encode()
            for _ in range(2):
                got.setdefault("hook", []).append(_timed([*base, "hook", "prompt"], env, event))
    for name in codes:
        cmd = [sys.executable, "-c", WARM, str(vaults[name]), json.dumps(prompts[:40])]
        done = subprocess.run(cmd, env=_env(codes[name]), capture_output=True, text=True)
        times[name]["warm"] = [float(done.stdout)]
    for measure in ("query", "warm", "hook"):
        before, after = (statistics.median(times[n][measure]) for n in codes)
        print(
            f"{measure}: before {before * 1000:.0f} ms, after {after * 1000:.0f} ms, "
            f"ratio {after / before:.2f}"
        )
    for vault in vaults.values():
        shutil.rmtree(vault.parent, ignore_errors=True)


if __name__ == "__main__":
    main()
