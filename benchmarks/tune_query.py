"""Tune `query` end to end on any corpus: variants of its constants, run through the real
pipeline (``api.search`` hybrid, warm vault, memory prior and review slots at a fixed
clock), with the query vectors embedded once and reused by every variant.

    python benchmarks/tune_query.py --vault V --queries Q.jsonl [--sample 5:1,3]
        [--variant NAME ...] [--lists] [--json]

``--sample M:R1,R2``: only the queries whose qid number modulo M is one of R1, R2 (the
man-page dev split's exploration sample: ``5:1,3``, 298 of 744 queries). ``--variant``:
one of :data:`VARIANTS` (repeatable; default: all), always after ``shipped``. ``--lists``:
for the shipped pipeline, where each query's relevant note stood in each fused list and
in the end, and the MRR@10 each list alone would give. Prints MRR@10, recall@10,
recall@1 per variant, and the queries a variant moved (better / worse against shipped).

A variant patches module constants or functions of this process's vaultmem: nothing here
is a shipped code path, and each variant is undone before the next.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

NOW = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


@contextmanager
def patched(target: Any, name: str, value: Any) -> Iterator[None]:
    """``target.name`` set to ``value`` for the block."""
    old = getattr(target, name)
    setattr(target, name, value)
    try:
        yield
    finally:
        setattr(target, name, old)


def _weights(**values: float) -> Callable[[], Any]:
    from contextlib import ExitStack

    from vaultmem.retrieval import fusion

    # The names of the weights (as the variants spell them) in fusion.ListWeights.
    fields = {
        "BM25_LIST_WEIGHT": "bm25",
        "VECTOR_LIST_WEIGHT": "vector",
        "LEAD_KEYWORD_WEIGHT": "lead_keyword",
        "LEAD_VECTOR_WEIGHT": "lead_vector",
    }

    @contextmanager
    def apply() -> Iterator[None]:
        changed = replace(fusion.QUERY_WEIGHTS, **{fields[k]: v for k, v in values.items()})
        with ExitStack() as stack:
            stack.enter_context(patched(fusion, "QUERY_WEIGHTS", changed))
            yield

    return apply


def _pooled_vectors() -> Any:
    """The vector list of each query scored by the note's pooled score (best with lead)."""
    from vaultmem.retrieval import vsearch

    original = vsearch.VectorIndex.nearest_with_leads

    def pooled(self: Any, vectors: Any, *, limit: int, filters: Any = None) -> Any:
        from vaultmem.model import Filters

        out = original(self, vectors, limit=limit, filters=filters or Filters())
        return [
            (self.with_leads(v, hits), leads) for v, (hits, leads) in zip(vectors, out, strict=True)
        ]

    return patched(vsearch.VectorIndex, "nearest_with_leads", pooled)


@contextmanager
def _both(first: Any, second: Any) -> Iterator[None]:
    with first, second:
        yield


def _prior(weight: float) -> Callable[[Any], Any]:
    def apply(config: Any) -> Any:
        return replace(config, prior_weight=weight)

    return apply


VARIANTS: dict[str, Callable[[], Any]] = {
    "vec 1.25": _weights(VECTOR_LIST_WEIGHT=1.25),
    "vec 0.75": _weights(VECTOR_LIST_WEIGHT=0.75),
    "bm25 1.25": _weights(BM25_LIST_WEIGHT=1.25),
    "bm25 0.75": _weights(BM25_LIST_WEIGHT=0.75),
    "lead vec 1.25": _weights(LEAD_VECTOR_WEIGHT=1.25),
    "lead vec 0.75": _weights(LEAD_VECTOR_WEIGHT=0.75),
    "lead bm25 1.25": _weights(LEAD_KEYWORD_WEIGHT=1.25),
    "lead bm25 0.75": _weights(LEAD_KEYWORD_WEIGHT=0.75),
    "pooled vec": _pooled_vectors,
    "pooled vec, no lead vec": lambda: _both(_pooled_vectors(), _lists(1, 1, 1, 0)()),
    "pooled vec, lead vec 0.5": lambda: _both(_pooled_vectors(), _lists(1, 1, 1, 0.5)()),
    "no lead vec": _weights(LEAD_VECTOR_WEIGHT=0.0),
}


def _lists(bm25: float, lead_bm25: float, vec: float, lead_vec: float) -> Callable[[], Any]:
    """The four list weights at once (``--variant w=1,0.75,1.25,0.75`` names them)."""
    return _weights(
        BM25_LIST_WEIGHT=bm25,
        LEAD_KEYWORD_WEIGHT=lead_bm25,
        VECTOR_LIST_WEIGHT=vec,
        LEAD_VECTOR_WEIGHT=lead_vec,
    )


#: Variants of the configuration rather than of the code.
CONFIG_VARIANTS: dict[str, Callable[[Any], Any]] = {
    "no prior": _prior(0.0),
    "prior 0.1": _prior(0.1),
    "prior 0.3": _prior(0.3),
}


def load(path: Path, sample: str | None) -> list[dict[str, Any]]:
    """The gold queries of ``path`` (only the ``--sample`` share)."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    if not sample:
        return rows
    mod, rest = sample.split(":")
    keep = {int(r) for r in rest.split(",")}
    return [r for r in rows if int("".join(c for c in r["qid"] if c.isdigit())) % int(mod) in keep]


class CachedEmbedder:
    """The vault's embedder with every text it was given before answered from memory."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.seen: dict[str, list[float]] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def warm(self, texts: list[str]) -> None:
        """Embed ``texts`` in batches now."""
        todo = [t for t in dict.fromkeys(texts) if t not in self.seen]
        for start in range(0, len(todo), 64):
            part = todo[start : start + 64]
            self.seen.update(zip(part, self.inner.embed(part, query=True), strict=True))

    def embed(self, texts: Any, *, query: bool = False) -> list[list[float]]:
        """Vectors of ``texts``, from memory where they were embedded before."""
        missing = [t for t in texts if t not in self.seen]
        if missing:
            self.warm(missing)
        return [self.seen[t] for t in texts]


def _open(vault: Path, change: Callable[[Any], Any] | None, embedder: Any) -> Any:
    from vaultmem import api
    from vaultmem import config as vconfig

    env = {k: v for k, v in os.environ.items() if not k.startswith("VAULTMEM_")}
    config = vconfig.load(vault_flag=str(vault), env=env, cwd=vault, overrides={})
    if change is not None:
        config = change(config)
    opened = api.OpenVault(config, warm=True)
    opened._embedder, opened._embedder_loaded = embedder, True  # the cached one
    return opened


def run(vault: Any, gold: list[dict[str, Any]]) -> dict[str, list[str]]:
    """qid → the ranked paths `query` returns (top 10)."""
    from vaultmem import api
    from vaultmem.model import SearchRequest

    out = {}
    for g in gold:
        result = api.search(vault, SearchRequest(g["query"], "hybrid", 10), now=NOW)
        out[g["qid"]] = [h.path for h in result.hits]
    return out


def scores(ranked: dict[str, list[str]], gold: list[dict[str, Any]]) -> dict[str, dict]:
    """qid → its metrics."""
    from vaultmem.evaluation import metrics

    return {g["qid"]: metrics(ranked[g["qid"]], g["relevant"]) for g in gold}


def summary(per: dict[str, dict]) -> dict[str, float]:
    """Mean MRR@10, recall@10 and recall@1."""
    n = max(len(per), 1)
    keys = ("mrr@10", "recall@10", "recall@1")
    return {k: round(sum(m[k] for m in per.values()) / n, 4) for k in keys}


def list_ranks(vault: Any, gold: list[dict[str, Any]], dump: Path | None = None) -> None:
    """Where each query's relevant note stood in each fused list, for the shipped code
    (``dump``: every query's lists, scores included, and its final ranking, as JSON)."""
    from vaultmem.evaluation import metrics
    from vaultmem.retrieval import query_lists

    captured: list[tuple[list[str], list[list[str]]]] = []
    lists: list[dict[str, Any]] = []
    fuse = query_lists.Lists.fuse

    def capture(self: Any) -> Any:
        fused = fuse(self)
        names = [s.name for s in self.specs]
        captured.append((names, [[p for p, _ in r] for r in self.ranked] + [[p for p, _ in fused]]))
        lists.append({n: r for n, r in zip(names, self.ranked, strict=True)})
        return fused

    per_list: dict[str, list[float]] = {}
    with patched(query_lists.Lists, "fuse", capture):
        ranked = run(vault, gold)
    if dump is not None:
        rows_out = [
            {"qid": g["qid"], "relevant": g["relevant"], "lists": got, "final": ranked[g["qid"]]}
            for g, got in zip(gold, lists, strict=True)
        ]
        dump.write_text(json.dumps(rows_out))
    rows = []
    for g, (names, lists) in zip(gold, captured, strict=True):
        ranks = {}
        labels = [*names, "fused", "final"]
        for name, paths in zip(labels, [*lists, ranked[g["qid"]]], strict=True):
            rr = metrics(paths[:10], g["relevant"])["mrr@10"]
            per_list.setdefault(name, []).append(rr)
            ranks[name] = round(1 / rr) if rr else None
        rows.append({"qid": g["qid"], "query": g["query"], **ranks})
    for name, rrs in per_list.items():
        print(f"  {name:16s} MRR@10 alone {sum(rrs) / len(rrs):.4f}")
    worse = [r for r in rows if r["final"] != 1]
    print(f"  {len(worse)} queries not at rank 1:")
    for r in worse:
        print("   ", json.dumps(r, ensure_ascii=False))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--vault", type=Path, required=True)
    parser.add_argument("--queries", type=Path, required=True)
    parser.add_argument("--sample")
    parser.add_argument("--variant", action="append", default=[])
    parser.add_argument("--lists", action="store_true")
    parser.add_argument("--dump", type=Path, help="--lists: write every query's lists here")
    args = parser.parse_args()
    os.environ.setdefault("VAULTMEM_NOW", NOW.isoformat().replace("+00:00", "Z"))
    gold = load(args.queries, args.sample)
    from vaultmem import config as vconfig
    from vaultmem.inference.embedders import embedder_for

    env = {k: v for k, v in os.environ.items() if not k.startswith("VAULTMEM_")}
    base = vconfig.load(vault_flag=str(args.vault), env=env, cwd=args.vault, overrides={})
    embedder = CachedEmbedder(embedder_for(base))
    embedder.warm([g["query"] for g in gold])
    vault = _open(args.vault, None, embedder)
    if args.lists:
        list_ranks(vault, gold, args.dump)
        return
    shipped = scores(run(vault, gold), gold)
    print(json.dumps({"variant": "shipped", "queries": len(gold), **summary(shipped)}))
    names = args.variant or [*VARIANTS, *CONFIG_VARIANTS]
    for name in names:
        if name.startswith("w="):
            VARIANTS[name] = _lists(*(float(w) for w in name[2:].split(",")))
        if name in CONFIG_VARIANTS:
            per = scores(run(_open(args.vault, CONFIG_VARIANTS[name], embedder), gold), gold)
        else:
            with VARIANTS[name]():
                vault = _open(args.vault, None, embedder)
                per = scores(run(vault, gold), gold)
        better = [q for q in per if per[q]["mrr@10"] > shipped[q]["mrr@10"] + 1e-9]
        worse = [q for q in per if per[q]["mrr@10"] < shipped[q]["mrr@10"] - 1e-9]
        line = {"variant": name, **summary(per), "better": len(better), "worse": len(worse)}
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    main()
