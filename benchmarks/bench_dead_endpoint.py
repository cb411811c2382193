"""What a dead inference endpoint adds to a whole-process `query` (issue 32, item 7).

On a temp copy of ``example-vault/`` (keyword index only: ``VAULTMEM_EMBEDDER=none``, so
the model's load does not drown the difference), runs ``vaultmem query QUESTION
--expand -n 3`` N times for each setup, interleaved, and prints each setup's median
wall time and what it adds to the first:

- ``none``: no LLM and no reranker configured (the baseline);
- ``refused llm``: ``[llm]`` on a closed port of 127.0.0.1 (expansion and reranking);
- ``refused llm + rerank``: that, and ``[rerank]`` on another closed port;
- ``dns llm``: ``[llm]`` at a host name that does not resolve (``*.invalid``).

Every endpoint keeps its default retries (``max_retries = 5``). ``--before PATH`` (the
root of a checkout of earlier code, e.g. ``git archive 32a09eb | tar -x -C PATH``) runs
the same setups with that code too, in the same loop (``--before-runs`` of them: the
earlier code retried each dead stage for about 12 s).

    python benchmarks/bench_dead_endpoint.py [--runs 9] [--before PATH] [--before-runs 2]
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
QUESTION = "why did we pick redis for caching"


def closed_port() -> int:
    """A port of 127.0.0.1 nothing listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def setups() -> dict[str, dict[str, str]]:
    """Each setup's endpoint variables."""
    llm, rerank = f"http://127.0.0.1:{closed_port()}", f"http://127.0.0.1:{closed_port()}"
    dead_llm = {"VAULTMEM_LLM_URL": llm, "VAULTMEM_LLM_MODEL": "m"}
    return {
        "none": {},
        "refused llm": dead_llm,
        "refused llm + rerank": {
            **dead_llm,
            "VAULTMEM_RERANK_URL": rerank,
            "VAULTMEM_RERANK_MODEL": "r",
        },
        "dns llm": {
            "VAULTMEM_LLM_URL": "http://vaultmem-bench.invalid:8080",
            "VAULTMEM_LLM_MODEL": "m",
        },
    }


def run(vault: Path, extra: dict[str, str], code: Path | None) -> float:
    """Wall seconds of one `vaultmem query` (``code``: another checkout's root)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("VAULTMEM_")}
    env |= {"VAULTMEM_EMBEDDER": "none", "VAULTMEM_NO_SERVER": "1", **extra}
    if code is not None:
        env["PYTHONPATH"] = str(code)
    start = time.perf_counter()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "vaultmem",
            "--vault",
            str(vault),
            "query",
            QUESTION,
            "--expand",
            "-n",
            "3",
        ],
        cwd=vault.parent,  # not the repository: its vaultmem/ would shadow PYTHONPATH's
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    took = time.perf_counter() - start
    if done.returncode != 0 or "Redis for caching" not in done.stdout:
        raise SystemExit(f"query failed ({done.returncode}): {done.stderr}")
    return took


def main() -> None:
    """Run every setup, interleaved, and print the medians."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--before", type=Path, default=None, help="a checkout of earlier code")
    ap.add_argument("--before-runs", type=int, default=2)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        vault = Path(tmp) / "vault"
        shutil.copytree(REPO / "example-vault", vault, ignore=shutil.ignore_patterns(".vaultmem"))
        env = {**os.environ, "VAULTMEM_EMBEDDER": "none"}
        subprocess.run(
            [sys.executable, "-m", "vaultmem", "--vault", str(vault), "index", "-q"],
            env=env,
            check=True,
        )
        cases = setups()
        codes: list[tuple[str, Path | None, int]] = [("this code", None, args.runs)]
        if args.before is not None:
            codes.append(("before", args.before.resolve(), args.before_runs))
        times: dict[tuple[str, str], list[float]] = {}
        for n in range(max(r for *_, r in codes)):
            for label, code, runs in codes:
                if n >= runs:
                    continue
                for name, extra in cases.items():
                    times.setdefault((label, name), []).append(run(vault, extra, code))
        print("| code | setup | runs | median s | added s |")
        print("|---|---|---:|---:|---:|")
        for label, _code, _runs in codes:
            base = statistics.median(times[(label, "none")])
            for name in cases:
                found = times[(label, name)]
                mid = statistics.median(found)
                print(f"| {label} | {name} | {len(found)} | {mid:.2f} | {mid - base:+.2f} |")


if __name__ == "__main__":
    main()
