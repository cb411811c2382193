"""What a pin's ranking bonus costs and buys (issue 32, item 12: ClawMem's +0.3 or ours).

On the man-page dev split made with frontmatter (`make_vault.py --frontmatter`, 978 notes,
744 queries, keyword index only), every twentieth note by path is pinned (in the index
entries the ranking reads; no note is written), and keyword search ranks each query's
30 candidates with the memory prior (weight 0.2, no review slots, `now` fixed) for each
pin bonus: none, vaultmem's (+0.1 = weight/2) and ClawMem's (+0.3). It prints MRR@10
and recall@1 apart for the queries whose answer is a pinned note (what a pin is for) and
for the others (what it may cost them), and how often a pinned note that is not the
answer is ranked first.

    python benchmarks/bench_pins.py [--every 20]
"""

from __future__ import annotations

import argparse
import functools
from dataclasses import replace
from datetime import UTC, datetime

from common import make_vault, queries

from vaultmem import scores
from vaultmem.config import build
from vaultmem.evaluation import metrics
from vaultmem.index import manifest as mf
from vaultmem.index.lexical import LexicalIndex
from vaultmem.indexer import index_vault
from vaultmem.retrieval.memory_rank import RankingOptions, rank
from vaultmem.retrieval.search import lexical_hits

NOW = datetime(2026, 11, 30, tzinfo=UTC)
BONUSES = (("none", 0.0), ("vaultmem +0.1", 0.1), ("ClawMem +0.3", 0.3))


def main() -> None:
    """Rank the pools once per bonus and print the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--every", type=int, default=20, help="pin every Nth note by path")
    args = ap.parse_args()
    config = build(make_vault("dev", frontmatter=True), {"embedder": "none"})
    index_vault(config)
    index = LexicalIndex.open(config.cache_dir)
    gold = queries()
    pools = [
        [(h.path, h.score) for h in lexical_hits(config, q["query"], limit=30, index=index)]
        for q in gold
    ]
    entries = dict(mf.load(config.cache_dir).entries)
    pinned = set(sorted(entries)[:: args.every])
    entries = {
        p: replace(e, memory={**e.memory, "pinned": True}) if p in pinned else e
        for p, e in entries.items()
    }
    answers_pinned = [any(note in pinned for note in _relevant(q, entries)) for q in gold]
    options = RankingOptions(now=NOW, review_share=0.0)
    plain = scores.ranked_score
    print(f"{len(pinned)} of {len(entries)} notes pinned; "
          f"{sum(answers_pinned)} of {len(gold)} queries have a pinned answer")  # fmt: skip
    print("| pin bonus | MRR@10, answer pinned | MRR@10, answer not pinned | recall@1, not "
          "pinned | a pinned non-answer ranked first |")  # fmt: skip
    print("|---|---:|---:|---:|---:|")
    for label, bonus in BONUSES:
        scores.ranked_score = functools.partial(plain, pin_bonus=bonus)  # type: ignore[assignment]
        sums = {True: [0.0, 0.0, 0], False: [0.0, 0.0, 0]}
        stolen = 0
        for q, pool, pin_answer in zip(gold, pools, answers_pinned, strict=True):
            ranked = [r.path for r in rank(pool, entries, q["query"], options, 10)]
            got = metrics(ranked, q["relevant"])
            part = sums[pin_answer]
            part[0] += got["mrr@10"]
            part[1] += got["recall@1"]
            part[2] += 1
            relevant = set(_relevant(q, entries))
            if ranked and ranked[0] in pinned and ranked[0] not in relevant:
                stolen += 1
        scores.ranked_score = plain  # type: ignore[assignment]
        on, off = sums[True], sums[False]
        print(
            f"| {label} | {on[0] / max(on[2], 1):.3f} | {off[0] / off[2]:.3f} | "
            f"{off[1] / off[2]:.3f} | {stolen} of {len(gold)} |",
            flush=True,
        )


def _relevant(query: dict, entries: dict) -> list[str]:
    """The note paths of a query's relevant ids (``man1/cp.1.md`` for ``cp.1``)."""
    wanted = set(query["relevant"])
    return [p for p in entries if p.rsplit("/", 1)[-1][: -len(".md")] in wanted]


if __name__ == "__main__":
    main()
