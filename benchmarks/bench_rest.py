"""REST round trip of `search` against the same search in process.

    python benchmarks/bench_rest.py [--rounds N]

Starts `vaultmem serve` on a copy of the dev vault (978 man pages; example-vault/ when
../shared/bench is missing), indexed, keyword search, no embedder. Then, after 20
warm-up queries each:

- REST: p50/p95 of ``POST /v1/search`` (``{"query": q}``, 10 hits with snippets) over one
  httpx keep-alive connection, the time the client sees (JSON encode, HTTP, decode);
- in process: p50/p95 of ``api.search`` on a warm ``OpenVault`` of the same vault;
- the HTTP floor: ``GET /v1/health`` on the same connection (no vault work).

Every dev query (744) is timed ``--rounds`` times (default 1), REST and in-process runs
interleaved query by query so both see the same machine load.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx
from common import BENCH, REPO, make_vault, percentile, queries

from vaultmem import api
from vaultmem.config import build
from vaultmem.indexer import index_vault
from vaultmem.model import SearchRequest

TOKEN = "bench-rest-token"


def corpus() -> tuple[str, Path, list[str]]:
    """The vault to copy and its queries: the dev split, or example-vault/."""
    if BENCH.exists():
        return "dev vault (978 notes)", make_vault("dev"), [q["query"] for q in queries()]
    lines = (REPO / "tests" / "data" / "example_queries.jsonl").read_text().splitlines()
    return (
        "example-vault (53 notes)",
        REPO / "example-vault",
        [json.loads(x)["query"] for x in lines],
    )


def serve(vault: Path, port: int) -> subprocess.Popen[bytes]:
    """`vaultmem serve` on ``port``, once it answers."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("VAULTMEM_")}
    env.update(VAULTMEM_EMBEDDER="none", VAULTMEM_SERVE_TOKEN=TOKEN)
    args = [sys.executable, "-m", "vaultmem", "--vault", str(vault), "serve", "--port", str(port)]
    process = subprocess.Popen(args, env=env, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/v1/health", timeout=1).status_code == 200:
                return process
        except httpx.TransportError:
            time.sleep(0.1)
    process.kill()
    raise SystemExit("the server did not answer in 60 s")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def measure(
    vault: Path, qs: list[str], rounds: int
) -> tuple[list[float], list[float], list[float]]:
    """Milliseconds per query: REST round trips and in-process calls, interleaved; and
    ``GET /v1/health`` round trips (HTTP and the guard, no vault work)."""
    port = free_port()
    server = serve(vault, port)
    warm = api.OpenVault(build(vault, {"embedder": "none"}), warm=True)
    headers = {"Authorization": f"Bearer {TOKEN}"}
    rest, local, floor = [], [], []
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", headers=headers) as client:
            for i, q in enumerate(qs[:20] + qs * rounds):
                start = time.perf_counter()
                response = client.post("/v1/search", json={"query": q})
                response.raise_for_status()
                response.json()
                took_rest = (time.perf_counter() - start) * 1000
                start = time.perf_counter()
                api.search(warm, SearchRequest(q), now=datetime.now(UTC))
                took_local = (time.perf_counter() - start) * 1000
                start = time.perf_counter()
                client.get("/v1/health").raise_for_status()
                took_floor = (time.perf_counter() - start) * 1000
                if i >= 20:  # after the warm-up
                    rest.append(took_rest)
                    local.append(took_local)
                    floor.append(took_floor)
    finally:
        warm.close()
        server.terminate()
        server.wait(timeout=30)
    return rest, local, floor


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=1, help="Times each query is timed.")
    args = parser.parse_args()
    name, source, qs = corpus()
    with tempfile.TemporaryDirectory() as tmp:
        vault = Path(tmp) / "vault"
        shutil.copytree(source, vault, ignore=shutil.ignore_patterns(".vaultmem"))
        index_vault(build(vault, {"embedder": "none"}))
        rest, local, floor = measure(vault, qs, args.rounds)
    print(f"{name}, {len(rest)} queries after 20 warm-up, keyword search, 10 hits\n")
    print("| measure | p50 ms | p95 ms |")
    print("|---|---:|---:|")
    print(
        f"| REST `POST /v1/search`, httpx keep-alive | {percentile(rest, 50):.2f} | "
        f"{percentile(rest, 95):.2f} |"
    )
    print(
        f"| in process `api.search`, warm OpenVault | {percentile(local, 50):.2f} | "
        f"{percentile(local, 95):.2f} |"
    )
    print(
        f"| REST `GET /v1/health` (HTTP floor) | {percentile(floor, 50):.2f} | "
        f"{percentile(floor, 95):.2f} |"
    )
    overhead = percentile(rest, 50) - percentile(local, 50)
    print(f"\nREST overhead at p50: {overhead:.2f} ms")


if __name__ == "__main__":
    main()
