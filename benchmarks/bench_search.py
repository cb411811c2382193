"""Search quality and latency of `vaultmem search` (BM25F).

    python benchmarks/bench_search.py

- quality: recall@1/5/10, MRR@10, nDCG@10 on the dev vault (744 queries, score.py);
- in-process latency p50/p95 of the 744 dev queries against the scale vault;
- whole-process `vaultmem search` time, median of 10 runs, on the scale vault.
"""

from __future__ import annotations

import subprocess
import sys
import time

from common import make_vault, median, note_id, percentile, queries, score

from vaultmem.config import build
from vaultmem.index.lexical import LexicalIndex
from vaultmem.indexer import index_vault
from vaultmem.retrieval.search import search


def quality() -> dict:
    """Score `search` on the dev vault with the benchmark's own score.py."""
    vault = make_vault("dev")
    config = build(vault, {})
    index_vault(config)
    index = LexicalIndex.open(config.cache_dir)
    run = [
        {
            "qid": q["qid"],
            "ranked": [note_id(h.path) for h in search(config, q["query"], index=index)],
        }
        for q in queries()
    ]
    return score(run)


def latency() -> tuple[float, float, list[float]]:
    """In-process latency (ms) of every dev query on the scale vault, hits with snippets."""
    vault = make_vault("scale")
    config = build(vault, {})
    index_vault(config)
    index = LexicalIndex.open(config.cache_dir)
    qs = queries()
    for q in qs[:20]:  # warm the searcher, stemmer cache and OS page cache
        search(config, q["query"], index=index)
    times = []
    for q in qs:
        start = time.perf_counter()
        search(config, q["query"], index=index)
        times.append((time.perf_counter() - start) * 1000)
    return percentile(times, 50), percentile(times, 95), times


def whole_process(runs: int = 10) -> float:
    """Median seconds of `vaultmem search` as a fresh process on the scale vault."""
    vault = make_vault("scale")
    times = []
    for q in queries()[:runs]:
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "vaultmem", "--vault", str(vault), "search", q["query"]],
            check=True,
            capture_output=True,
        )
        times.append(time.perf_counter() - start)
    return median(times)


def main() -> None:
    s = quality()
    p50, p95, _ = latency()
    proc = whole_process()
    print("| measure | value | target |")
    print("|---|---:|---|")
    for key in ("recall@1", "recall@5", "recall@10", "mrr@10", "ndcg@10"):
        target = "≥ 0.768 (plain BM25)" if key == "mrr@10" else ""
        print(f"| dev {key} | {s[key]:.3f} | {target} |")
    print(f"| in-process search p50 / p95 (scale vault) | {p50:.1f} / {p95:.1f} ms | p50 ≤ 30 ms |")
    print(f"| whole-process `vaultmem search`, median of 10 | {proc:.2f} s | ≤ 0.6 s |")


if __name__ == "__main__":
    main()
