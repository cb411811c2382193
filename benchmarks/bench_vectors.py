"""Vectors on the dev vault: the `embed` sweep, a no-op sweep, Chroma recall against exact
cosine, `vsearch` quality beside `search`, and in-process `vsearch` latency.

    python benchmarks/bench_vectors.py            # embeds the dev vault once (minutes)
    python benchmarks/bench_vectors.py --fresh    # drop the vectors first and re-embed

The sweep runs as a whole `vaultmem embed` process so its time and peak memory are what
cron would see. Recall@10 compares Chroma's HNSW top 10 with brute-force cosine over the
very vectors stored, for the 744 dev queries.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import time

import numpy as np
from common import make_vault, note_id, percentile, queries, score

from vaultmem.config import build
from vaultmem.index.lexical import LexicalIndex
from vaultmem.index.vectors import VectorStore
from vaultmem.indexer import index_vault
from vaultmem.inference.local import LocalEmbedder
from vaultmem.retrieval.search import search
from vaultmem.retrieval.vsearch import VectorIndex, vsearch


def run_embed(vault: object) -> tuple[dict, float, float]:
    """(report, wall seconds, peak RSS MiB) of `vaultmem embed` as its own process."""
    start = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-m", "vaultmem", "--vault", str(vault), "embed", "--json"],
        check=True,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return json.loads(out.stdout), wall, peak


def chroma_recall(config: object, embedder: LocalEmbedder, qvecs: np.ndarray) -> float:
    """Mean overlap of Chroma's top 10 with exact cosine top 10 over the stored vectors."""
    store = VectorStore.open(
        config.cache_dir,  # type: ignore[attr-defined]
        embedder.model_id,
        embedder.dimension,
        config.chroma,  # type: ignore[attr-defined]
    )
    try:
        ids = sorted(store.ids())
        stored = store.vectors(ids)
        matrix = np.array([stored[i] for i in ids], dtype=np.float32)
        exact = np.argsort(-(qvecs @ matrix.T), axis=1)[:, :10]
        approx = store.query_many(qvecs, 10)
    finally:
        store.close()
    overlaps = [
        len({ids[j] for j in row} & {i for i, _ in got}) / 10
        for row, got in zip(exact, approx, strict=True)
    ]
    return float(np.mean(overlaps))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--fresh", action="store_true")
    args = ap.parse_args()
    vault = make_vault("dev")
    config = build(vault, {})
    index_vault(config)
    if args.fresh:
        shutil.rmtree(vault / ".vaultmem" / "chroma", ignore_errors=True)
        shutil.rmtree(vault / ".vaultmem" / "vectors", ignore_errors=True)
    report, wall, peak = run_embed(vault)
    print(f"embed: {report} in {wall:.1f}s, peak {peak:.0f} MiB")
    noop = []
    for _ in range(5):
        r, w, _ = run_embed(vault)
        assert r["embedded"] == 0
        noop.append(w)
    embedder = LocalEmbedder()
    qs = queries()
    qvecs = np.array(embedder.embed([q["query"] for q in qs]), dtype=np.float32)
    recall = chroma_recall(config, embedder, qvecs)
    index = LexicalIndex.open(config.cache_dir)
    vindex = VectorIndex(config, embedder)
    lex_run, vec_run, times = [], [], []
    for q in qs[:20]:
        vsearch(config, q["query"], embedder, index=vindex)
    for q in qs:
        lex_run.append(
            {
                "qid": q["qid"],
                "ranked": [note_id(h.path) for h in search(config, q["query"], index=index)],
            }
        )
        start = time.perf_counter()
        hits = vsearch(config, q["query"], embedder, index=vindex)
        times.append((time.perf_counter() - start) * 1000)
        vec_run.append({"qid": q["qid"], "ranked": [note_id(h.path) for h in hits]})
    lex, vec = score(lex_run), score(vec_run)
    rate = report["embedded"] / wall if report["embedded"] else float("nan")
    print()
    print("| measure | value | target |")
    print("|---|---:|---|")
    frags = report["fragments"]
    p50, p95 = percentile(times, 50), percentile(times, 95)
    print(f"| `embed` of the dev vault ({frags} fragments) | {wall:.0f} s, {rate:.1f}/s | |")
    print(f"| `embed` peak memory | {peak:.0f} MiB | report |")
    print(f"| no-op `embed`, median of 5 | {sorted(noop)[2]:.2f} s | < 1 s |")
    print(f"| Chroma recall@10 vs exact cosine, 744 queries | {recall:.4f} | ≥ 0.98 |")
    print(f"| in-process `vsearch` p50 / p95 | {p50:.1f} / {p95:.1f} ms | p50 ≤ 40 ms |")
    print()
    keys = ("recall@1", "recall@5", "recall@10", "mrr@10", "ndcg@10")
    print("| mode | recall@1 | recall@5 | recall@10 | MRR@10 | nDCG@10 |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, s in (("search", lex), ("vsearch", vec)):
        print(f"| {name} | " + " | ".join(f"{s[k]:.3f}" for k in keys) + " |")


if __name__ == "__main__":
    main()
