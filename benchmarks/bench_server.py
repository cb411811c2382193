"""Warm by default: `vaultmem serve` against whole-process commands.

    python benchmarks/bench_server.py [--runs 20] [--warm-queries 744]

- whole process, median of ``--runs`` runs, interleaved with a bare ``python -c pass`` of
  the same interpreter: `search`, `vsearch`, `query`, `hook prompt`, each through a
  running server and without one (``VAULTMEM_NO_SERVER=1``);
- warm latency inside the server (``api.search`` on its warm ``OpenVault``, after a
  warm-up): keyword, semantic and hybrid (no LLM: expansion and reranking off) p50/p95
  over the dev queries.

The vault is the dev corpus (../shared/bench, with frontmatter) and the MiniLM vectors of
``bench-vaults/caches/surface-dev``, copied to ``bench-vaults/caches/server-dev`` (the
server writes its advertisement and logs there). Without ../shared/bench: example-vault,
embedded into a temp cache.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from common import BENCH, REPO, VAULTS, make_vault, median, percentile, queries

from vaultmem.cache_folder import mark_copy

PY = sys.executable


def _setup() -> tuple[Path, Path, list[str]]:
    """The vault, its cache and the query texts."""
    if BENCH.is_dir():
        vault = make_vault("dev", frontmatter=True)
        cache = VAULTS / "caches" / "server-dev"
        source = VAULTS / "caches" / "surface-dev"
        if not cache.exists() and source.exists():
            shutil.copytree(source, cache)
            mark_copy(cache)  # the surfacing bench's cache, copied: read as it is
        texts = [q["query"] for q in queries()]
    else:
        vault = REPO / "example-vault"
        cache = Path(tempfile.mkdtemp()) / "cache"
        texts = [
            json.loads(line)["query"]
            for line in (REPO / "tests/data/example_queries.jsonl").read_text().splitlines()
            if line.strip()
        ]
    base = [PY, "-m", "vaultmem", "--vault", str(vault), "--cache-dir", str(cache)]
    env = _env(no_server=True)
    subprocess.run([*base, "index"], check=True, env=env, capture_output=True)
    subprocess.run([*base, "embed"], check=True, env=env, capture_output=True)
    return vault, cache, texts


def _env(*, no_server: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("VAULTMEM_")}
    if no_server:
        env["VAULTMEM_NO_SERVER"] = "1"
    return env


def _timed(args: list[str], env: dict[str, str], stdin: bytes = b"") -> float:
    start = time.perf_counter()
    subprocess.run(args, input=stdin, env=env, capture_output=True, check=True)
    return (time.perf_counter() - start) * 1000


def whole_process(vault: Path, cache: Path, texts: list[str], runs: int) -> dict[str, float]:
    """Median ms of each command line, through the server and without; and bare Python.

    All runs through the server come first: an in-process `vsearch` opens the vector
    store, which writes to its database, and the server then reopens the store once.
    """
    base = [PY, "-m", "vaultmem", "--vault", str(vault), "--cache-dir", str(cache)]
    times: dict[str, list[float]] = {"python -c pass": []}
    for server in (True, False):
        env = _env(no_server=not server)
        tag = "server" if server else "no server"
        for i in range(runs):
            text = texts[i % len(texts)]
            times["python -c pass"].append(_timed([PY, "-c", "pass"], _env(no_server=True)))
            for word in ("search", "vsearch", "query"):
                times.setdefault(f"{word} ({tag})", []).append(
                    _timed([*base, word, text, "--json"], env)
                )
            event = {
                "session_id": f"bench-{tag}-{i}-{time.time_ns()}",
                "cwd": str(vault),
                "hook_event_name": "UserPromptSubmit",
                "prompt": text,
            }
            times.setdefault(f"hook prompt ({tag})", []).append(
                _timed([*base, "hook", "prompt"], env, json.dumps(event).encode())
            )
    return {name: median(values) for name, values in times.items()}


def warm_latency(vault: Path, cache: Path, texts: list[str], count: int) -> dict[str, tuple]:
    """p50/p95 ms of api.search per mode on one warm OpenVault, warmed up as the server
    does at start (``OpenVault.warm_up``), then after 20 warm-up queries."""
    from vaultmem import api, config
    from vaultmem.model import SearchRequest

    cfg = config.load(
        vault_flag=str(vault),
        env=_env(no_server=True),
        cwd=Path.cwd(),
        overrides={"cache_dir": str(cache)},
    )
    vault_open = api.OpenVault(cfg, warm=True)
    vault_open.warm_up()
    out = {}
    for mode in ("keyword", "semantic", "hybrid"):

        def one(text: str, mode: str = mode) -> None:
            request = SearchRequest(text, mode=mode, expand=False, rerank=False)
            api.search(vault_open, request, now=datetime.now(UTC))

        for text in texts[:20]:
            one(text)
        samples = []
        for text in texts[:count]:
            start = time.perf_counter()
            one(text)
            samples.append((time.perf_counter() - start) * 1000)
        out[mode] = (percentile(samples, 50), percentile(samples, 95), len(samples))
    vault_open.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--warm-queries", type=int, default=744)
    args = parser.parse_args()
    vault, cache, texts = _setup()
    base = [PY, "-m", "vaultmem", "--vault", str(vault), "--cache-dir", str(cache)]
    started = subprocess.run(
        [*base, "serve", "--background", "--port", "0", "--json"],
        check=True,
        capture_output=True,
        env=_env(no_server=True),
    )
    pid = json.loads(started.stdout)["pid"]
    try:
        # The server opens the searcher, the vectors and the model in the background.
        subprocess.run([*base, "query", "warm up"], env=_env(no_server=False), capture_output=True)
        whole = whole_process(vault, cache, texts, args.runs)
    finally:
        os.kill(pid, signal.SIGTERM)
    warm = warm_latency(vault, cache, texts, args.warm_queries)
    bare = whole["python -c pass"]
    print(f"vault: {vault} ({len(texts)} queries); {args.runs} runs each\n")
    print("| whole process | median ms | × python -c pass |")
    print("|---|---:|---:|")
    for name, ms in whole.items():
        print(f"| {name} | {ms:.1f} | {ms / bare:.2f}× |")
    print("\n| warm, in the server (api.search) | p50 ms | p95 ms | queries |")
    print("|---|---:|---:|---:|")
    names = {"keyword": "search", "semantic": "vsearch", "hybrid": "query (no LLM)"}
    for mode, (p50, p95, n) in warm.items():
        print(f"| {names[mode]} | {p50:.2f} | {p95:.2f} | {n} |")


if __name__ == "__main__":
    main()
