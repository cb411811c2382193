"""MCP round trip of `vaultmem mcp` over stdio: tool call to result, as an agent sees it.

    python benchmarks/bench_mcp.py

The SDK's own stdio client starts `python -m vaultmem --vault V mcp` (V: the dev vault
when ../shared/bench exists, else a temp copy of example-vault), calls `search` (keyword
mode, limit 5, compact hits) for every query after 20 warm-up calls, and reports p50/p95
of the round trip next to the same searches in process (`api.search` on a warm
`OpenVault`, interleaved query by query): the difference is what the protocol, the JSON
and the pipe cost.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import anyio
from common import BENCH, REPO, make_vault, percentile, queries
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from vaultmem import api
from vaultmem.config import build
from vaultmem.indexer import index_vault
from vaultmem.model import SearchRequest

WARMUP = 20
LIMIT = 5


def vault_and_queries() -> tuple[Path, list[str], str]:
    """The dev vault and its 744 queries, else example-vault and its gold queries."""
    if BENCH.is_dir():
        return make_vault("dev"), [q["query"] for q in queries()], "dev vault"
    target = Path(tempfile.mkdtemp()) / "vault"
    shutil.copytree(REPO / "example-vault", target, ignore=shutil.ignore_patterns(".vaultmem"))
    gold = (REPO / "tests" / "data" / "example_queries.jsonl").read_text("utf-8").splitlines()
    return target, [json.loads(line)["query"] for line in gold if line.strip()], "example-vault"


async def measure(vault: Path, texts: list[str]) -> tuple[float, list[float], list[float]]:
    """Seconds from spawn to an initialized session; then, interleaved (so the load of a
    shared machine weighs on both alike), each search's MCP round trip and the same search
    in process (ms each)."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "vaultmem", "--vault", str(vault), "mcp"],
        env={**os.environ, "VAULTMEM_EMBEDDER": "none"},
    )
    opened = api.OpenVault(build(vault, {"embedder": "none"}), warm=True)
    now = datetime.now(UTC)
    start = time.perf_counter()
    async with Client(params, mode="legacy") as client:
        ready = time.perf_counter() - start

        async def remote(text: str) -> None:
            args = {"query": text, "mode": "keyword", "limit": LIMIT}
            result = await client.call_tool("search", args)
            assert not result.is_error, result.content

        def local(text: str) -> None:
            api.search(opened, SearchRequest(text, limit=LIMIT), now=now)

        for text in texts[:WARMUP]:
            await remote(text)
            local(text)
        stdio, in_process = [], []
        for text in texts:
            begin = time.perf_counter()
            await remote(text)
            middle = time.perf_counter()
            local(text)
            stdio.append((middle - begin) * 1000)
            in_process.append((time.perf_counter() - middle) * 1000)
    opened.close()
    return ready, stdio, in_process


def main() -> None:
    vault, texts, name = vault_and_queries()
    index_vault(build(vault, {"embedder": "none"}))
    ready, stdio, local = anyio.run(measure, vault, texts)
    print(f"{name}, {len(texts)} queries after {WARMUP} warm-up, `search` keyword, limit {LIMIT}")
    print("| measure | p50 | p95 |")
    print("|---|---:|---:|")
    print(
        f"| MCP round trip over stdio | {percentile(stdio, 50):.2f} ms | "
        f"{percentile(stdio, 95):.2f} ms |"
    )
    print(
        f"| same search in process (api.search) | {percentile(local, 50):.2f} ms | "
        f"{percentile(local, 95):.2f} ms |"
    )
    print(f"| spawn to initialized session | {ready * 1000:.0f} ms | |")


if __name__ == "__main__":
    main()
