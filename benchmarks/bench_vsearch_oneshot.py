"""One-shot `vsearch` (no server): the flat vector snapshot against Chroma (issue 21, 4b).

Two parts:

1. Exactness on the man-page dev vault: the top 10 of `vsearch` for the 744 dev queries,
   answered by the snapshot (exact cosine) and by Chroma's HNSW query (the snapshot made
   stale and its lock held, so Chroma answers, as it does while a write runs), raw cosine
   order and with the memory prior; MRR@10 of each and how many top-10 lists differ.
2. Wall time of a whole `vaultmem --vault V vsearch "redis failover"` process, median of
   ``--runs``, interleaved: this code with a current snapshot, this code on the first
   read after a write (Chroma opened, the snapshot rebuilt), and, with ``--before PATH``
   (a checkout of earlier code: ``git worktree add /tmp/old REV``), the earlier code.

    python benchmarks/bench_vsearch_oneshot.py --vault /tmp/dev-copy --before /tmp/old
    python benchmarks/bench_vsearch_oneshot.py --example-only --before /tmp/old

``--vault`` must be indexed and embedded already (default: the dev vault, indexed and
embedded here, which takes minutes the first time).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from common import REPO, make_vault, note_id, queries, score

from vaultmem.config import build
from vaultmem.embedding import embed_vault
from vaultmem.index import vector_snapshot
from vaultmem.index.vectors import collection_name
from vaultmem.indexer import index_vault
from vaultmem.inference.local import LocalEmbedder
from vaultmem.retrieval.memory_rank import RankingOptions
from vaultmem.retrieval.vsearch import VectorIndex

QUERY = "redis failover"


def exactness(vault: Path) -> None:
    """Top-10 lists of the dev queries, snapshot against Chroma, and their MRR@10."""
    config = build(vault, {})
    embedder = LocalEmbedder()
    name = collection_name(embedder.model_id, embedder.dimension)
    qs = queries("dev")
    vectors = embedder.embed([q["query"] for q in qs], query=True)
    now = datetime(2026, 6, 1, tzinfo=UTC)
    orders = {"raw cosine": None, "memory prior": RankingOptions(now=now)}

    def runs(index: VectorIndex) -> dict[str, list[dict]]:
        out = {}
        for label, rank in orders.items():
            out[label] = [
                {
                    "qid": q["qid"],
                    "ranked": [
                        note_id(h.path) for h in index.ranked(v, q["query"], limit=10, ranking=rank)
                    ],
                }
                for q, v in zip(qs, vectors, strict=True)
            ]
        return out

    # A held write lock: no snapshot is current and none can be built, so Chroma answers.
    with vector_snapshot.writing(config.cache_dir, name), VectorIndex(config, embedder) as index:
        assert not index._store.from_snapshot
        by_chroma = runs(index)
    with VectorIndex(config, embedder) as index:
        assert index._store.from_snapshot
        by_snapshot = runs(index)
    print(f"\n{len(qs)} dev queries, top 10 of `vsearch`:\n")
    print("| order | MRR@10 Chroma (HNSW) | MRR@10 snapshot (exact) | top-10 lists that differ |")
    print("|---|---:|---:|---:|")
    for label in orders:
        a, b = by_chroma[label], by_snapshot[label]
        differ = sum(x["ranked"] != y["ranked"] for x, y in zip(a, b, strict=True))
        mrr_a, mrr_b = score(a)["mrr@10"], score(b)["mrr@10"]
        print(f"| {label} | {mrr_a:.4f} | {mrr_b:.4f} | {differ} of {len(a)} |")


def _command(vault: Path) -> list[str]:
    return [sys.executable, "-m", "vaultmem", "--vault", str(vault), "vsearch", QUERY]


def _run(command: list[str], code: Path) -> float:
    env = {**os.environ, "PYTHONPATH": str(code)}
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, env=env, cwd=code)
    return time.perf_counter() - start


def wall_times(vault: Path, before: Path | None, runs: int) -> None:
    """Median wall time of a one-shot `vsearch`, interleaved across the cases."""
    config = build(vault, {})
    embedder = LocalEmbedder()
    name = collection_name(embedder.model_id, embedder.dimension)
    command = _command(vault)
    times: dict[str, list[float]] = {"snapshot current": [], "first after a write": []}
    if before is not None:
        times["before (Chroma)"] = []
    _run(command, REPO)  # builds the snapshot
    for _ in range(runs):
        times["snapshot current"].append(_run(command, REPO))
        with vector_snapshot.writing(config.cache_dir, name):
            pass  # what a write does to the snapshot: it is stale now
        times["first after a write"].append(_run(command, REPO))
        if before is not None:
            times["before (Chroma)"].append(_run(command, before))
    print(f"\none-shot `vsearch {QUERY!r}` on {vault.name}, median of {runs}:\n")
    print("| case | median wall | min |")
    print("|---|---:|---:|")
    for label, values in times.items():
        print(f"| {label} | {statistics.median(values):.2f} s | {min(values):.2f} s |")


def _example_vault() -> Path:
    target = Path(tempfile.mkdtemp(prefix="vaultmem-oneshot-")) / "vault"
    shutil.copytree(REPO / "example-vault", target, ignore=shutil.ignore_patterns(".vaultmem"))
    config = build(target, {})
    index_vault(config)
    embed_vault(config, LocalEmbedder())
    return target


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vault", type=Path, help="an indexed and embedded dev vault")
    ap.add_argument("--before", type=Path, help="a checkout of earlier code")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--example-only", action="store_true", help="times on example-vault only")
    args = ap.parse_args()
    wall_times(_example_vault(), args.before, args.runs)
    if args.example_only:
        return
    vault = args.vault
    if vault is None:
        vault = make_vault("dev")
        config = build(vault, {})
        index_vault(config)
        embed_vault(config, LocalEmbedder())
    wall_times(vault, args.before, args.runs)
    exactness(vault)


if __name__ == "__main__":
    main()
