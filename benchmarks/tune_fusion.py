"""Tune `query`'s fusion on the dev split: RRF k, list weights, top-rank bonus.

Collects every dev query's BM25 and vector lists once (cached in bench-vaults/), then
scores fusion variants offline with the benchmark's metrics. The pipeline's later stages
(no reranker: normalised fused order; MMR) are left out here; the chosen variant is then
checked end to end with `vaultmem eval`.

    python benchmarks/tune_fusion.py            # table of variants, best MRR first
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import VAULTS, make_vault, queries  # noqa: E402

from vaultmem.config import build  # noqa: E402
from vaultmem.evaluation import metrics  # noqa: E402

DEPTH = 60
Lists = dict[str, dict[str, list[tuple[str, float]]]]


def collect() -> Lists:
    """{qid: {"bm25": [(path, score)], "vec": [(path, cosine)]}} for every dev query."""
    cache = VAULTS / "fusion_lists.json"
    if cache.exists():
        raw = json.loads(cache.read_text())
        return {q: {k: [tuple(x) for x in v] for k, v in d.items()} for q, d in raw.items()}  # type: ignore[misc]
    from vaultmem.index.lexical import LexicalIndex
    from vaultmem.inference.local import LocalEmbedder
    from vaultmem.retrieval.search import lexical_hits
    from vaultmem.retrieval.vsearch import VectorIndex

    config = build(make_vault("dev"), {})
    index = LexicalIndex.open(config.cache_dir)
    embedder = LocalEmbedder()
    vectors = VectorIndex(config, embedder)
    gold = queries("dev")
    qvecs = embedder.embed([g["query"] for g in gold])
    out: Lists = {}
    for g, vec in zip(gold, qvecs, strict=True):
        bm25 = lexical_hits(config, g["query"], limit=DEPTH, index=index)
        vec_hits = vectors.nearest_many([vec], limit=DEPTH)[0]
        out[g["qid"]] = {
            "bm25": [(h.path, h.score) for h in bm25],
            "vec": [(h.path, h.score) for h in vec_hits],
        }
    cache.write_text(json.dumps(out))
    return out


Fuse = Callable[[Sequence[tuple[str, float]], Sequence[tuple[str, float]]], list[str]]


def rrf_variant(k: float, wb: float, wv: float, bonus: tuple[float, float] = (0, 0)) -> Fuse:
    def fuse(bm25: Sequence[tuple[str, float]], vec: Sequence[tuple[str, float]]) -> list[str]:
        scores: dict[str, float] = {}
        best: dict[str, int] = {}
        for weight, ranked in ((wb, bm25), (wv, vec)):
            for rank, (doc, _) in enumerate(ranked, start=1):
                scores[doc] = scores.get(doc, 0.0) + weight / (k + rank)
                best[doc] = min(rank, best.get(doc, rank))
        for doc, rank in best.items():
            scores[doc] += bonus[0] if rank == 1 else bonus[1] if rank <= 3 else 0.0
        return sorted(scores, key=lambda d: (-scores[d], best[d], d))

    return fuse


def evaluate(lists: Lists, fuse: Fuse) -> dict[str, float]:
    gold = {g["qid"]: g["relevant"] for g in queries("dev")}
    totals: dict[str, float] = {}
    for qid, d in lists.items():
        for name, value in metrics(fuse(d["bm25"], d["vec"])[:10], gold[qid]).items():
            totals[name] = totals.get(name, 0.0) + value
    return {name: value / len(lists) for name, value in totals.items()}


def main() -> None:
    lists = collect()
    variants: dict[str, Fuse] = {
        "bm25 only": lambda b, v: [d for d, _ in b],
        "vec only": lambda b, v: [d for d, _ in v],
    }
    for k in (10, 20, 30, 40, 60):
        for wb, wv in ((1, 1), (1, 1.25), (1, 1.5), (1, 2)):
            variants[f"rrf k={k} w={wb}:{wv}"] = rrf_variant(k, wb, wv)
    for k in (20, 40, 60):
        for bonus in ((0.05, 0.02), (0.02, 0.01)):
            variants[f"rrf k={k} w=1:1.5 bonus={bonus}"] = rrf_variant(k, 1, 1.5, bonus)
    rows = [(name, evaluate(lists, fuse)) for name, fuse in variants.items()]
    rows.sort(key=lambda r: -r[1]["mrr@10"])
    print("| variant | recall@1 | recall@5 | recall@10 | mrr@10 | ndcg@10 |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, m in rows:
        cells = " | ".join(
            f"{m[k]:.3f}" for k in ("recall@1", "recall@5", "recall@10", "mrr@10", "ndcg@10")
        )
        print(f"| {name} | {cells} |")


if __name__ == "__main__":
    main()
