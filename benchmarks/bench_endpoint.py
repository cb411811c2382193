"""Batched, concurrent endpoint embedding vs one request per text.

Runs against the local fake OpenAI server (tests/fake_openai_server.py) with a fixed
added latency per request, which is what dominates a real remote endpoint for short
texts: (a) one input per request, sequentially; (b) OpenAIEmbedder's batches with
several requests in flight. Prints both wall times and the speed-up (target >= 10x).

    .venv/bin/python benchmarks/bench_endpoint.py [--n 2000] [--latency 0.05]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from fake_openai_server import FakeOpenAIServer  # noqa: E402

from vaultmem.inference.remote import EndpointConfig, OpenAIEmbedder  # noqa: E402


def _texts(n: int) -> list[str]:
    topics = ["deploy", "database", "meeting", "budget", "release", "incident", "design"]
    return [f"note {i}: {topics[i % len(topics)]} decision taken on day {i % 31}" for i in range(n)]


def _run(url: str, texts: list[str], batch_size: int, concurrency: int) -> float:
    emb = OpenAIEmbedder(
        EndpointConfig(
            url=url,
            model="fake-embed",
            batch_size=batch_size,
            concurrency=concurrency,
        )
    )
    emb.embed(texts[:1])  # warm-up: client creation and the openai import are not timed
    start = time.perf_counter()
    vecs = emb.embed(texts)
    elapsed = time.perf_counter() - start
    assert len(vecs) == len(texts)
    return elapsed


def main() -> None:
    """Run both modes and print the timings."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2000, help="number of short texts")
    ap.add_argument("--latency", type=float, default=0.05, help="seconds added per request")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--concurrency", type=int, default=4)
    args = ap.parse_args()

    texts = _texts(args.n)
    with FakeOpenAIServer(dim=384, latency=args.latency) as server:
        seq = _run(server.url, texts, batch_size=1, concurrency=1)
        n_seq = len(server.embedding_requests()) - 1
        server.requests.clear()
        bat = _run(server.url, texts, batch_size=args.batch_size, concurrency=args.concurrency)
        n_bat = len(server.embedding_requests()) - 1

    print(f"{args.n} texts, {args.latency * 1000:.0f} ms added per request")
    print(
        f"(a) one per request, sequential : {seq:7.2f} s  ({n_seq} requests, "
        f"{args.n / seq:7.0f} texts/s)"
    )
    print(
        f"(b) batch {args.batch_size}, {args.concurrency} in flight    : {bat:7.2f} s  "
        f"({n_bat} requests, {args.n / bat:7.0f} texts/s)"
    )
    print(f"speed-up: {seq / bat:.1f}x")


if __name__ == "__main__":
    main()
