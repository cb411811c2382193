"""Hybrid `query` latency, and what the memory prior does to quality and speed.

    python benchmarks/bench_query.py            # every part
    python benchmarks/bench_query.py latency    # one part: latency|oneshot|prior|sweep|search-cost
    python benchmarks/bench_query.py latency oneshot --vault DIR   # on an embedded copy

- latency: in-process `query` (local embedder, no LLM, no reranker, memory prior on) on
  every dev query after 20 warm-up queries: median/p95 ms (`--vault`: that vault instead
  of bench-vaults/dev);
- oneshot: whole-process `vaultmem --vault DIR query TEXT -n 10` for the first
  ``--oneshot`` (30) dev queries after 3 warm-up runs: median and p95 seconds;
- prior: recall/MRR/nDCG of search, vsearch and query on the dev vault made with
  `make_vault.py --frontmatter` (random but deterministic `created` dates), with the
  memory prior and review slots (the defaults) and without them;
- sweep: MRR@10 of search and query on dev-fm for prior weights 0 to 0.3;
- search-cost: in-process `search` on the scale vault with and without the prior (the
  prior reorders 30 candidates instead of returning 10), medians and their ratio.

latency and oneshot compare side by side with ``--against CHECKOUT [--against-vault
DIR]``: the code of another commit (``git archive REV | tar -x -C CHECKOUT``) runs with
``PYTHONPATH`` at it, each query alternating between the two (latency: two warm worker
processes), so load from anything else on the machine falls on both alike; the report
gives the ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

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
    ranking: RankingOptions | None, *, frontmatter: bool = False, vault: Path | None = None
) -> Callable[[str], list[str]]:
    from vaultmem.inference.local import LocalEmbedder
    from vaultmem.retrieval.query import query
    from vaultmem.retrieval.query_types import Backends, QueryOptions
    from vaultmem.retrieval.vsearch import VectorIndex

    config = build(vault or make_vault("dev", frontmatter=frontmatter), {})
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


def _sides() -> list[tuple[str, dict[str, str], Path]]:
    """(label, environment, vault) of each code measured: this one, and with
    ``--against PATH`` the code at PATH too (on ``--against-vault``, else the same vault)."""
    vault = ARGS.vault or make_vault("dev")
    env = {**os.environ, "VAULTMEM_NOW": NOW.strftime("%Y-%m-%dT%H:%M:%SZ")}
    sides = [("this code", env, vault)]
    if ARGS.against:
        other = {**env, "PYTHONPATH": str(ARGS.against)}
        sides.append((f"code at {ARGS.against}", other, ARGS.against_vault or vault))
    return sides


def _report(label: str, times: dict[str, list[float]], unit: str, scale: float) -> None:
    base = None
    for side, values in times.items():
        p50 = median(values) * scale
        ratio = f", {p50 / base:.3f}x the first" if base else ""
        base = base or p50
        print(
            f"{label}, {side}: median {p50:.{3 if unit == 's' else 1}f} {unit}, "
            f"p95 {percentile(values, 95) * scale:.{3 if unit == 's' else 1}f} {unit}{ratio}"
        )


def latency() -> None:
    """In-process `query` of each side in its own worker process, queries alternating
    between them (the order flips every query), so both see the same machine."""
    workers = {}
    for label, env, vault in _sides():
        args = [sys.executable, __file__, "worker", "--vault", str(vault)]
        workers[label] = subprocess.Popen(
            args, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )

    def ask(label: str, text: str) -> float:
        worker = workers[label]
        assert worker.stdin is not None and worker.stdout is not None
        worker.stdin.write(json.dumps(text) + "\n")
        worker.stdin.flush()
        return float(worker.stdout.readline())

    qs = queries()
    labels = list(workers)
    for q in qs[:20]:
        for label in labels:
            ask(label, q["query"])
    times: dict[str, list[float]] = {label: [] for label in labels}
    for i, q in enumerate(qs):
        for label in labels if i % 2 == 0 else labels[::-1]:
            times[label].append(ask(label, q["query"]))
    for worker in workers.values():
        assert worker.stdin is not None
        worker.stdin.close()
        worker.wait()
    _report(f"query latency, warm, {len(qs)} dev queries", times, "ms", 1.0)


def worker() -> None:
    """One side of `latency`: a JSON query text a line in, its wall milliseconds out."""
    run = _query_runner(RankingOptions(now=NOW), vault=ARGS.vault)
    for line in sys.stdin:
        start = time.perf_counter()
        run(json.loads(line))
        print(f"{(time.perf_counter() - start) * 1000:.3f}", flush=True)


def oneshot() -> None:
    """Whole-process `vaultmem query` (model load, index and store opening included), each
    query run by every side in turn (the order flips every query)."""
    exe = str(Path(sys.executable).parent / "vaultmem")  # the console script
    sides = _sides()

    def once(env: dict[str, str], vault: Path, text: str) -> float:
        start = time.perf_counter()
        args = [exe, "--vault", str(vault), "query", text, "-n", "10", "--quiet"]
        subprocess.run(args, check=True, env=env, stdout=subprocess.DEVNULL)
        return time.perf_counter() - start

    qs = queries()[: ARGS.oneshot]
    for q in qs[:3]:
        for _, env, vault in sides:
            once(env, vault, q["query"])
    times: dict[str, list[float]] = {label: [] for label, _, _ in sides}
    for i, q in enumerate(qs):
        for label, env, vault in sides if i % 2 == 0 else sides[::-1]:
            times[label].append(once(env, vault, q["query"]))
    _report(f"one-shot `vaultmem query`, {len(qs)} dev queries", times, "s", 1.0)


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
    from vaultmem.retrieval.query import query
    from vaultmem.retrieval.query_types import Backends, QueryOptions
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


ARGS = argparse.Namespace(vault=None, oneshot=30, against=None, against_vault=None)


def main() -> None:
    global ARGS
    parts = {
        "latency": latency,
        "oneshot": oneshot,
        "worker": worker,
        "prior": prior,
        "sweep": sweep,
        "search-cost": search_cost,
    }
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("parts", nargs="*", metavar="PART", help=", ".join(parts))
    parser.add_argument("--vault", type=Path, default=None, help="an indexed, embedded vault")
    parser.add_argument("--oneshot", type=int, default=30, help="queries for `oneshot`")
    parser.add_argument("--against", type=Path, default=None, help="a checkout to compare with")
    parser.add_argument("--against-vault", type=Path, default=None, help="its vault copy")
    ARGS = parser.parse_args()
    unknown = [name for name in ARGS.parts if name not in parts]
    if unknown:
        parser.error(f"unknown part {unknown[0]!r}: one of {', '.join(parts)}")
    for name in ARGS.parts or [p for p in parts if p != "worker"]:
        parts[name]()


if __name__ == "__main__":
    main()
