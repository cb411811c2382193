"""Hybrid `query` latency, and what the memory prior does to quality and speed.

    python benchmarks/bench_query.py            # all three parts
    python benchmarks/bench_query.py latency    # one part: latency|prior|sweep|search-cost

- latency: in-process `query` (local embedder, no LLM, no reranker, memory prior on) on
  every dev query after 20 warm-up queries: p50/p95 ms;
- prior: recall/MRR/nDCG of search, vsearch and query on the dev vault made with
  `make_vault.py --frontmatter` (random but deterministic `created` dates), with the
  memory prior and review slots (the defaults) and without them;
- sweep: MRR@10 of search and query on dev-fm for prior weights 0 to 0.3;
- search-cost: in-process `search` on the scale vault with and without the prior (the
  prior reorders 30 candidates instead of returning 10), medians and their ratio.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime

from common import make_vault, median, percentile, queries

from vaultmem.config import build
from vaultmem.evaluation import metrics
from vaultmem.index.lexical import LexicalIndex
from vaultmem.indexer import index_vault
from vaultmem.retrieval.memory_rank import RankingOptions
from vaultmem.retrieval.search import search

NOW = datetime(2026, 11, 30, tzinfo=UTC)  # fixed, so runs on other days agree
METRICS = ("recall@1", "recall@5", "recall@10", "mrr@10", "ndcg@10")


def _query_runner(
    ranking: RankingOptions | None, *, frontmatter: bool = False
) -> Callable[[str], list[str]]:
    from vaultmem.inference.local import LocalEmbedder
    from vaultmem.retrieval.query import Backends, QueryOptions, query
    from vaultmem.retrieval.vsearch import VectorIndex

    config = build(make_vault("dev", frontmatter=frontmatter), {})
    index = LexicalIndex.open(config.cache_dir)
    embedder = LocalEmbedder()
    backends = Backends(embedder=embedder, vectors=VectorIndex(config, embedder))
    options = QueryOptions(limit=10, ranking=ranking)

    def run(text: str) -> list[str]:
        return [
            h.path
            for h in query(config, text, backends=backends, options=options, index=index).hits
        ]

    return run


def latency() -> None:
    run = _query_runner(RankingOptions(now=NOW))
    qs = queries()
    for q in qs[:20]:
        run(q["query"])
    times = []
    for q in qs:
        start = time.perf_counter()
        run(q["query"])
        times.append((time.perf_counter() - start) * 1000)
    print(
        f"query latency, dev vault, {len(qs)} queries: p50 {percentile(times, 50):.1f} ms, "
        f"p95 {percentile(times, 95):.1f} ms (target p50 ≤ 120 ms)"
    )


def _runners(ranking: RankingOptions | None) -> dict[str, Callable[[str], list[str]]]:
    from vaultmem.inference.local import LocalEmbedder
    from vaultmem.retrieval.vsearch import VectorIndex, vsearch

    config = build(make_vault("dev", frontmatter=True), {})
    index = LexicalIndex.open(config.cache_dir)
    embedder = LocalEmbedder()
    vectors = VectorIndex(config, embedder)
    return {
        "search": lambda t: [h.path for h in search(config, t, index=index, ranking=ranking)],
        "vsearch": lambda t: [
            h.path for h in vsearch(config, t, embedder, index=vectors, ranking=ranking)
        ],
        "query": _query_runner(ranking, frontmatter=True),
    }


def prior() -> None:
    config = build(make_vault("dev", frontmatter=True), {})
    index_vault(config)  # keyword index; vectors: `vaultmem --vault bench-vaults/dev-fm embed`
    gold = queries()
    print("| mode | ranking | " + " | ".join(METRICS) + " |")
    print("|---|---|" + "---:|" * len(METRICS))
    for label, ranking in (
        ("relevance only", None),
        ("prior + review", RankingOptions(now=NOW)),
        ("prior only", RankingOptions(now=NOW, review_share=0.0)),
    ):
        for mode, run in _runners(ranking).items():
            totals = dict.fromkeys(METRICS, 0.0)
            for q in gold:
                for name, value in metrics(run(q["query"]), q["relevant"]).items():
                    totals[name] += value
            cells = " | ".join(f"{totals[m] / len(gold):.3f}" for m in METRICS)
            print(f"| {mode} | {label} | {cells} |", flush=True)


def sweep() -> None:
    """MRR@10 of search and query on dev-fm for several prior weights (no review slots).

    The pipelines run once without ranking, keeping 30 candidates; the ranking is then
    applied to those lists exactly as the pipeline applies it.
    """
    from vaultmem.inference.local import LocalEmbedder
    from vaultmem.retrieval.memory_rank import rank
    from vaultmem.retrieval.query import Backends, QueryOptions, query
    from vaultmem.retrieval.search import lexical_hits
    from vaultmem.retrieval.vsearch import VectorIndex

    config = build(make_vault("dev", frontmatter=True), {})
    index = LexicalIndex.open(config.cache_dir)
    embedder = LocalEmbedder()
    backends = Backends(embedder=embedder, vectors=VectorIndex(config, embedder))
    gold = queries()
    pools: dict[str, list[list[tuple[str, float]]]] = {"search": [], "query": []}
    for q in gold:
        hits = lexical_hits(config, q["query"], limit=30, index=index)
        pools["search"].append([(h.path, h.score) for h in hits])
        result = query(config, q["query"], backends=backends,
                       options=QueryOptions(limit=30), index=index)  # fmt: skip
        pools["query"].append([(h.path, h.score) for h in result.hits])
    print("| prior weight | search MRR@10 | query MRR@10 |")
    print("|---:|---:|---:|")
    for weight in (0.0, 0.05, 0.1, 0.15, 0.2, 0.3):
        opts = RankingOptions(now=NOW, weight=weight, review_share=0.0)
        cells = []
        for mode in ("search", "query"):
            total = 0.0
            for q, pool in zip(gold, pools[mode], strict=True):
                entries = index.entries(p for p, _ in pool)
                ranked = [r.path for r in rank(pool, entries, q["query"], opts, 10)]
                total += metrics(ranked, q["relevant"])["mrr@10"]
            cells.append(f"{total / len(gold):.3f}")
        print(f"| {weight:g} | {' | '.join(cells)} |", flush=True)


def search_cost() -> None:
    config = build(make_vault("scale"), {})
    index_vault(config)
    index = LexicalIndex.open(config.cache_dir)
    qs = queries()
    out = {}
    for label, ranking in (("plain", None), ("prior", RankingOptions(now=NOW))):
        for q in qs[:20]:
            search(config, q["query"], index=index, ranking=ranking)
        times = []
        for q in qs:
            start = time.perf_counter()
            search(config, q["query"], index=index, ranking=ranking)
            times.append((time.perf_counter() - start) * 1000)
        out[label] = (median(times), percentile(times, 95))
        print(f"search on scale, {label}: p50 {out[label][0]:.1f} ms, p95 {out[label][1]:.1f} ms")
    print(f"ratio prior/plain p50: {out['prior'][0] / out['plain'][0]:.2f}")


def main() -> None:
    parts = {"latency": latency, "prior": prior, "sweep": sweep, "search-cost": search_cost}
    for name in sys.argv[1:] or list(parts):
        parts[name]()


if __name__ == "__main__":
    main()
