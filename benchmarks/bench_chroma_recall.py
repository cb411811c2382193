"""Recall@k of Chroma's HNSW (as vaultmem configures it) against exact cosine search.

Builds a clustered set of unit vectors shaped loosely like sentence embeddings (a shared
direction every vector leans toward, topic clusters of Zipf-like sizes, per-vector
noise), stores them through ``vaultmem.index.vectors.VectorStore`` in a temporary
directory, queries with fresh vectors from the same mixture, and compares the top k to
brute force in numpy. The target is recall@10 >= 0.98.

    .venv/bin/python benchmarks/bench_chroma_recall.py            # 12,000 x 384, 744 queries
    .venv/bin/python benchmarks/bench_chroma_recall.py --ef-search 100 --m 16   # Chroma defaults
    .venv/bin/python benchmarks/bench_chroma_recall.py --host 127.0.0.1 --port 8000
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from vaultmem.index import vectors  # noqa: E402
from vaultmem.index.vectors import ChromaConfig, VectorStore  # noqa: E402


def clustered_unit_vectors(
    n: int, dim: int, clusters: int, rng: np.random.Generator, centers: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """``n`` unit vectors from a mixture of ``clusters`` topics; returns (vectors, centers).

    Within a topic the cosine to the topic centre is about 0.75, and every vector shares
    a common direction (real embedding spaces are anisotropic), which makes neighbours
    crowd together: harder for HNSW than uniform random vectors.
    """
    if centers is None:
        common = rng.normal(size=dim)
        common /= np.linalg.norm(common)
        raw = rng.normal(size=(clusters, dim))
        raw /= np.linalg.norm(raw, axis=1, keepdims=True)
        centers = raw + 0.6 * common
        centers /= np.linalg.norm(centers, axis=1, keepdims=True)
    weights = 1.0 / np.arange(1, len(centers) + 1) ** 0.8  # Zipf-like topic sizes
    weights /= weights.sum()
    topic = rng.choice(len(centers), size=n, p=weights)
    sigma = 0.9 / np.sqrt(dim)  # noise norm ~0.9 against a unit centre -> cos ~0.75
    points = centers[topic] + rng.normal(scale=sigma, size=(n, dim))
    points /= np.linalg.norm(points, axis=1, keepdims=True)
    return points.astype(np.float32), centers


def main() -> int:
    """Run the benchmark and print recall and timings; exit 1 below the target."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=12_000)
    parser.add_argument("--queries", type=int, default=744)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--clusters", type=int, default=150)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--target", type=float, default=0.98)
    parser.add_argument("--ef-search", type=int, default=None, help="override vaultmem's")
    parser.add_argument("--ef-construction", type=int, default=None)
    parser.add_argument("--m", type=int, default=None, help="HNSW max_neighbors override")
    parser.add_argument("--host", default=None, help="a Chroma server instead of embedded")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args()

    # Overrides go into the module's HNSW settings, which open() uses on creation.
    for key, value in (
        ("ef_search", args.ef_search),
        ("ef_construction", args.ef_construction),
        ("max_neighbors", args.m),
    ):
        if value is not None:
            vectors._HNSW[key] = value
    print(f"HNSW settings: {vectors._HNSW}")

    rng = np.random.default_rng(args.seed)
    data, centers = clustered_unit_vectors(args.n, args.dim, args.clusters, rng)
    queries, _ = clustered_unit_vectors(args.queries, args.dim, args.clusters, rng, centers)
    ids = [hashlib.sha256(f"fragment-{i}".encode()).hexdigest() for i in range(args.n)]

    started = time.perf_counter()
    sims = queries @ data.T
    exact = np.argsort(-sims, axis=1)[:, : args.k]
    exact_s = time.perf_counter() - started

    # Unique model id per run so a shared server never mixes runs.
    model = f"bench-{args.seed}-{time.time_ns()}"
    with tempfile.TemporaryDirectory(prefix="vm-bench-") as tmp:
        store = VectorStore.open(
            Path(tmp), model, args.dim, ChromaConfig(host=args.host, port=args.port)
        )
        try:
            started = time.perf_counter()
            store.upsert(ids, data)
            upsert_s = time.perf_counter() - started

            started = time.perf_counter()
            got = store.query_many(queries, args.k)
            batch_s = time.perf_counter() - started

            started = time.perf_counter()
            for q in queries[:100]:
                store.query(q, args.k)
            single_ms = (time.perf_counter() - started) / min(100, len(queries)) * 1000
            count = store.count()
        finally:
            store.close()

    position = {id_: i for i, id_ in enumerate(ids)}
    hits = 0
    top1 = 0
    for row, result in enumerate(got):
        found = {position[id_] for id_, _ in result}
        hits += len(found & set(exact[row].tolist()))
        top1 += bool(result) and position[result[0][0]] == exact[row][0]
    recall = hits / (len(got) * args.k)
    where = f"server {args.host}:{args.port}" if args.host else "embedded"
    print(f"{count} vectors x {args.dim}-d ({args.clusters} clusters), {len(got)} queries, {where}")
    print(f"recall@{args.k}: {recall:.4f}   top-1 agreement: {top1 / len(got):.4f}")
    print(
        f"upsert: {upsert_s:.1f} s ({args.n / upsert_s:,.0f}/s)   "
        f"query_many: {batch_s:.2f} s ({batch_s / len(got) * 1000:.2f} ms/query)   "
        f"single query: {single_ms:.2f} ms   numpy brute force: {exact_s:.2f} s"
    )
    if recall < args.target:
        print(f"BELOW TARGET {args.target}")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
