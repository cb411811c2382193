"""Tune `query`'s fusion on the man-page dev split, and compare two pipelines end to end.

    python benchmarks/tune_fusion.py collect [--vault DIR]   # lists of every dev query, cached
    python benchmarks/tune_fusion.py tune                    # variants: tuned on half A
    python benchmarks/tune_fusion.py run --vault DIR --out RUN.jsonl [--no-prior] [--route what]
    python benchmarks/tune_fusion.py compare BASE.jsonl NEW.jsonl

Halves: half A is the queries with an odd qid number (q0001, q0003, ...), half B the even
ones (372 each). Everything is tuned on A; B is scored once, by the variant A chose.

`collect` reads each dev query's lists once from an indexed and embedded vault (default
bench-vaults/dev-fm: `vaultmem --vault bench-vaults/dev-fm embed` first; the vectors of
dev and dev-fm are the same fragments) and caches them in bench-vaults/fusion_lists.json:
BM25F over the whole note, note-level vectors (each note's best fragment), every note's
first fragment (the note-lead vector list, exact: brute force over all lead vectors, and
as the pipeline finds it: the leads among the nearest fragments), and offline BM25 over
title + the opening N characters (the lead keyword list) for a few N.

`tune` scores fusion variants offline (no MMR, no prior, as in earlier sessions) on half
A, then the best one and the shipped constants on half B and all 744.

`run` runs the real pipeline (`api.search`, hybrid, warm vault, prior at a fixed clock)
over every dev query and writes the benchmark's run format plus each qid's reciprocal
rank; it imports whatever vaultmem is on the path, so the code at another commit runs
with ``PYTHONPATH=<a checkout of it>``. `compare` prints MRR@10 on A, B and all of two
runs and the 95% paired bootstrap interval of the difference (10,000 resamples, seed 18).
"""

from __future__ import annotations

import argparse
import inspect
import json
import math
import sys
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import VAULTS, make_vault, queries  # noqa: E402

DEPTH = 60  # collected; variants cut lists to their own depth
KNN_FRAGMENTS = 300  # what the pipeline asks the store for at depth 30: max(64, 10 x 30)
LEAD_CHARS = (400, 800, 1000, 1200, 1600)
NOW = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)  # VAULTMEM_NOW of the earlier sessions' runs
CACHE = VAULTS / "fusion_lists.json"

Scored = list[tuple[str, float]]
Lists = dict[str, dict[str, Scored]]


def half(qid: str) -> str:
    """ "A" for an odd qid number, "B" for an even one."""
    return "A" if int(qid.lstrip("q")) % 2 else "B"


# --- collect ----------------------------------------------------------------------------


def _top(scores: Mapping[str, float], n: int = DEPTH) -> Scored:
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:n]


def _lead_bm25(config: object, paths: Sequence[str], lengths: Sequence[int]) -> object:
    """Offline BM25 (the index's k1 and b) over title + each note's opening N characters."""
    from vaultmem.index.analysis import analyse
    from vaultmem.index.lexical import BM25_B, BM25_K1
    from vaultmem.note import parse_note

    docs: dict[int, dict[str, dict[str, int]]] = {n: {} for n in lengths}
    for path in paths:
        note = parse_note(path, (config.vault / path).read_bytes())  # type: ignore[attr-defined]
        for n in lengths:
            tf: dict[str, int] = {}
            for term in analyse(f"{note.title}\n{note.body[:n]}"):
                tf[term] = tf.get(term, 0) + 1
            docs[n][path] = tf

    def scorer(n: int) -> Callable[[str], Scored]:
        table = docs[n]
        lengths_ = {p: sum(tf.values()) for p, tf in table.items()}
        avg = sum(lengths_.values()) / max(1, len(lengths_))
        df: dict[str, int] = {}
        for tf in table.values():
            for term in tf:
                df[term] = df.get(term, 0) + 1
        total = len(table)

        def run(text: str) -> Scored:
            from vaultmem.index.analysis import query_terms

            out: dict[str, float] = {}
            for term in query_terms(text):
                if term not in df:
                    continue
                idf = math.log(1 + (total - df[term] + 0.5) / (df[term] + 0.5))
                for path, tf in table.items():
                    f = tf.get(term, 0)
                    if f:
                        norm = BM25_K1 * (1 - BM25_B + BM25_B * lengths_[path] / avg)
                        out[path] = out.get(path, 0.0) + idf * f * (BM25_K1 + 1) / (f + norm)
            return _top(out)

        return run

    return {n: scorer(n) for n in lengths}


def collect(vault: Path) -> Lists:
    """Every dev query's lists (see the module docstring), cached in bench-vaults/."""
    import numpy as np

    from vaultmem.config import build
    from vaultmem.index import manifest as mf
    from vaultmem.index.lexical import LexicalIndex
    from vaultmem.index.records import fragment_map
    from vaultmem.index.vectors import VectorStore
    from vaultmem.inference.local import LocalEmbedder
    from vaultmem.retrieval.search import lexical_hits

    config = build(vault, {})
    index = LexicalIndex.open(config.cache_dir)
    embedder = LocalEmbedder()
    manifest = mf.load(config.cache_dir)
    owners = fragment_map(config, embedder.max_chars, manifest)
    hashes = sorted(owners)
    store = VectorStore.open(config.cache_dir, embedder.model_id, embedder.dimension)
    stored = store.vectors(hashes)
    hashes = [h for h in hashes if h in stored]
    matrix = np.asarray([stored[h] for h in hashes], dtype=np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    lead: dict[str, tuple[int, str]] = {}  # path -> (start line, hash) of its first fragment
    for digest in hashes:
        for path, ref in owners[digest]:
            if path not in lead or ref.start_line < lead[path][0]:
                lead[path] = (ref.start_line, digest)
    lead_hash = {path: digest for path, (_, digest) in lead.items()}
    row = {digest: i for i, digest in enumerate(hashes)}
    leads_of: dict[str, list[str]] = {}
    for path, digest in lead_hash.items():
        leads_of.setdefault(digest, []).append(path)
    lead_bm25 = _lead_bm25(config, sorted(manifest.entries), LEAD_CHARS)

    gold = queries("dev")
    qvecs = np.asarray(embedder.embed([g["query"] for g in gold]), dtype=np.float32)
    qvecs /= np.linalg.norm(qvecs, axis=1, keepdims=True)
    out: Lists = {}
    for g, qv in zip(gold, qvecs, strict=True):
        sims = matrix @ qv
        best: dict[str, float] = {}
        for digest, sim in zip(hashes, sims.tolist(), strict=True):
            for path, _ref in owners[digest]:
                if sim > best.get(path, -2.0):
                    best[path] = sim
        first = {path: float(sims[row[digest]]) for path, digest in lead_hash.items()}
        near = np.argsort(-sims)[:KNN_FRAGMENTS]
        knn: dict[str, float] = {}
        for i in near.tolist():
            for path in leads_of.get(hashes[i], ()):
                knn.setdefault(path, float(sims[i]))
        pooled = {p: 0.8 * s + 0.2 * first.get(p, s) for p, s in best.items()}
        bm25 = lexical_hits(config, g["query"], limit=DEPTH, index=index)
        lists = {
            "bm25": [(h.path, h.score) for h in bm25],
            "vec": _top(best),
            "lead_vec": _top(first),
            "lead_vec_knn": _top(knn),
            "pooled_vec": _top(pooled),
        }
        for n, run in lead_bm25.items():  # type: ignore[attr-defined]
            lists[f"lead_bm25_{n}"] = run(g["query"])
        if "lead" in inspect.signature(lexical_hits).parameters:  # the index's lead field
            hits = lexical_hits(config, g["query"], limit=DEPTH, index=index, lead=True)
            lists["lead_bm25"] = [(h.path, h.score) for h in hits]
        out[g["qid"]] = lists
    store.close()
    CACHE.write_text(json.dumps(out))
    return out


def load_lists() -> Lists:
    """The cached lists (run `collect` first)."""
    raw = json.loads(CACHE.read_text())
    return {q: {k: [(p, float(s)) for p, s in v] for k, v in d.items()} for q, d in raw.items()}


# --- fusion variants --------------------------------------------------------------------

Fuse = Callable[[Mapping[str, Scored]], list[str]]


def zsum(weights: Mapping[str, float], depth: int = 30) -> Fuse:
    """The shipped z-score fusion (vaultmem.retrieval.fusion.zscore_fuse) over named lists."""
    from vaultmem.retrieval import fusion

    def fuse(lists: Mapping[str, Scored]) -> list[str]:
        scored = [
            fusion.ScoredList(name, tuple(lists[name][:depth]), w)
            for name, w in weights.items()
            if w
        ]
        return [doc for doc, _ in fusion.zscore_fuse(scored)]

    return fuse


def rrf(weights: Mapping[str, float], k: int = 60, bonus: tuple[float, float] = (0, 0)) -> Fuse:
    """Weighted RRF with HEAD's top-rank bonus (per unit of a list's query weight)."""

    def fuse(lists: Mapping[str, Scored]) -> list[str]:
        scores: dict[str, float] = {}
        best: dict[str, int] = {}
        extra: dict[str, float] = {}
        for name, weight in weights.items():
            scale = 2.0  # HEAD: the bonus scales with the original query's weight
            for rank, (doc, _) in enumerate(lists[name][:30], start=1):
                scores[doc] = scores.get(doc, 0.0) + weight / (k + rank)
                best[doc] = min(rank, best.get(doc, rank))
                if rank <= 3:
                    b = scale * (bonus[0] if rank == 1 else bonus[1])
                    extra[doc] = max(b, extra.get(doc, 0.0))
        for doc, b in extra.items():
            scores[doc] += b
        return sorted(scores, key=lambda d: (-scores[d], best[d], d))

    return fuse


def reciprocal_ranks(lists: Lists, fuse: Fuse) -> dict[str, float]:
    """qid -> reciprocal rank of the relevant page within the top 10 (0 when missing)."""
    from vaultmem.evaluation import metrics

    gold = {g["qid"]: g["relevant"] for g in queries("dev")}
    return {qid: metrics(fuse(d)[:10], gold[qid])["mrr@10"] for qid, d in lists.items()}


def mean(values: Sequence[float]) -> float:
    """The arithmetic mean (0 for none)."""
    return sum(values) / len(values) if values else 0.0


def on(rr: Mapping[str, float], which: str) -> float:
    """MRR@10 over half A, half B or all ("all")."""
    return mean([v for q, v in rr.items() if which == "all" or half(q) == which])


def bootstrap(
    base: Mapping[str, float], new: Mapping[str, float], which: str, n: int = 10_000
) -> tuple[float, float, float]:
    """Mean difference new − base over a half (or all) and its 95% paired bootstrap CI."""
    import numpy as np

    qids = sorted(q for q in base if which == "all" or half(q) == which)
    diff = np.asarray([new.get(q, 0.0) - base[q] for q in qids])
    rng = np.random.default_rng(18)
    draws = diff[rng.integers(0, len(diff), size=(n, len(diff)))].mean(axis=1)
    low, high = np.percentile(draws, [2.5, 97.5])
    return float(diff.mean()), float(low), float(high)


HEAD_RRF = rrf({"bm25": 2.0, "vec": 3.0}, 60, (0.02, 0.01))


def variants() -> dict[str, Fuse]:
    """Every variant `tune` scores."""
    out: dict[str, Fuse] = {
        "HEAD: RRF k=60, bm25 2, vec 3, bonus": HEAD_RRF,
        "plain RRF k=60": rrf({"bm25": 1.0, "vec": 1.0}),
        "RRF k=60 + lead_vec 3, bonus": rrf(
            {"bm25": 2.0, "vec": 3.0, "lead_vec_knn": 3.0}, 60, (0.02, 0.01)
        ),
        "bm25 only": lambda d: [p for p, _ in d["bm25"]],
        "vec only": lambda d: [p for p, _ in d["vec"]],
        "lead_vec only": lambda d: [p for p, _ in d["lead_vec"]],
        "lead_bm25_800 only": lambda d: [p for p, _ in d["lead_bm25_800"]],
    }
    for wv in (1.0, 1.25, 1.5, 2.0):
        out[f"z: bm25 1, vec {wv:g}"] = zsum({"bm25": 1.0, "vec": wv})
    out["z: bm25 1, pooled_vec 1.5"] = zsum({"bm25": 1.0, "pooled_vec": 1.5})
    for lead in ("lead_vec", "lead_vec_knn"):
        for wl in (0.5, 1.0, 1.5):
            out[f"z: bm25 1, vec 1, {lead} {wl:g}"] = zsum({"bm25": 1.0, "vec": 1.0, lead: wl})
    for n in LEAD_CHARS:
        for wlb in (0.25, 0.5, 1.0):
            weights = {"bm25": 1.0, "vec": 1.0, "lead_vec_knn": 1.0, f"lead_bm25_{n}": wlb}
            out[f"z: bm25 1, vec 1, lead_vec_knn 1, lead_bm25_{n} {wlb:g}"] = zsum(weights)
    for wb in (0.75, 1.0, 1.25):
        for wv in (0.75, 1.0, 1.25):
            for wl in (0.75, 1.0, 1.25):
                for wlb in (0.5, 0.75, 1.0):
                    weights = {
                        "bm25": wb,
                        "vec": wv,
                        "lead_vec_knn": wl,
                        "lead_bm25_800": wlb,
                    }
                    out[f"z grid: {wb:g} / {wv:g} / {wl:g} / lead_bm25_800 {wlb:g}"] = zsum(weights)
    for n in (1000, 1600):
        for wlb in (0.75, 1.0, 1.25):
            weights = {"bm25": 1.0, "vec": 1.0, "lead_vec_knn": 1.0, f"lead_bm25_{n}": wlb}
            out[f"z: bm25 1, vec 1, lead_vec_knn 1, lead_bm25_{n} {wlb:g}"] = zsum(weights)
    if "lead_bm25" in next(iter(load_lists().values())):
        for wlb in (0.5, 0.75, 1.0, 1.25):
            weights = {"bm25": 1.0, "vec": 1.0, "lead_vec_knn": 1.0, "lead_bm25": wlb}
            out[f"z: bm25 1, vec 1, lead_vec_knn 1, lead field (index) {wlb:g}"] = zsum(weights)
        for wlb in (0.25, 0.5, 0.75, 1.0):  # keyword lists only (no embedder)
            out[f"z, keyword only: bm25 1, lead field (index) {wlb:g}"] = zsum(
                {"bm25": 1.0, "lead_bm25": wlb}
            )
    for depth in (20, 45, 60):
        weights = {"bm25": 1.0, "vec": 1.0, "lead_vec_knn": 1.0, "lead_bm25_800": 0.5}
        out[f"z: 1 / 1 / 1 / 0.5, depth {depth}"] = zsum(weights, depth)
    return out


def tune() -> None:
    """The variants on half A, best first; the best and the shipped one on B and all."""
    from vaultmem.retrieval import fusion

    lists = load_lists()
    base = reciprocal_ranks(lists, HEAD_RRF)
    rows = [(name, reciprocal_ranks(lists, fuse)) for name, fuse in variants().items()]
    rows.sort(key=lambda r: -on(r[1], "A"))
    print("| variant (offline, no MMR, no prior) | half A MRR@10 |")
    print("|---|---:|")
    for name, rr in rows:
        print(f"| {name} | {on(rr, 'A'):.3f} |")
    shipped = {
        "bm25": fusion.QUERY_WEIGHTS.bm25,
        "vec": fusion.QUERY_WEIGHTS.vector,
        "lead_vec_knn": fusion.QUERY_WEIGHTS.lead_vector,
        "lead_bm25": fusion.QUERY_WEIGHTS.lead_keyword,
    }
    picked = {"best on A: " + rows[0][0]: rows[0][1]}
    steps = {
        "z-score fusion, bm25 1 + vec 1": {"bm25": 1.0, "vec": 1.0},
        "z: bm25 + pooled vec (0.8 max + 0.2 first) 1": {"bm25": 1.0, "pooled_vec": 1.0},
        "z: + note-lead vectors (exact) 1": {"bm25": 1.0, "vec": 1.0, "lead_vec": 1.0},
        "z: + note-lead vectors (from the nearest fragments) 1": {
            "bm25": 1.0,
            "vec": 1.0,
            "lead_vec_knn": 1.0,
        },
    }
    for name, weights in steps.items():
        picked[name] = reciprocal_ranks(lists, zsum(weights))
    picked["shipped constants (fusion.py): + lead keyword field"] = reciprocal_ranks(
        lists, zsum(shipped)
    )
    print()
    print("| variant | A | B | all | B − HEAD (95% CI) | all − HEAD (95% CI) |")
    print("|---|---:|---:|---:|---|---|")
    print(
        f"| HEAD fusion | {on(base, 'A'):.3f} | {on(base, 'B'):.3f} | {on(base, 'all'):.3f} | | |"
    )
    for name, rr in picked.items():
        cells = []
        for which in ("B", "all"):
            d, lo, hi = bootstrap(base, rr, which)
            cells.append(f"{d:+.3f} ({lo:+.3f}..{hi:+.3f})")
        print(
            f"| {name} | {on(rr, 'A'):.3f} | {on(rr, 'B'):.3f} | {on(rr, 'all'):.3f} | "
            f"{cells[0]} | {cells[1]} |"
        )


# --- end to end -------------------------------------------------------------------------


def run(vault: Path, out: Path, *, prior: bool, route: str | None, mode: str) -> None:
    """The real pipeline over every dev query: the run file and each qid's RR."""
    import time

    from vaultmem import api
    from vaultmem.config import build
    from vaultmem.evaluation import metrics
    from vaultmem.model import SearchRequest

    config = build(vault, {})
    opened = api.OpenVault(config, warm=True)
    rows = []
    started = time.perf_counter()
    for g in queries("dev"):
        request = SearchRequest(g["query"], mode, 10, prior=prior, review=prior, route=route)
        hits = [h.path for h in api.search(opened, request, now=NOW).hits]
        rr = metrics(hits, g["relevant"])["mrr@10"]
        stems = [p.rsplit("/", 1)[-1][: -len(".md")] for p in hits]
        rows.append({"qid": g["qid"], "ranked": stems, "rr": rr})
    out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    rr_of = {r["qid"]: r["rr"] for r in rows}
    print(
        f"{mode} prior={'on' if prior else 'off'} route={route or 'detected'}: "
        f"MRR@10 A {on(rr_of, 'A'):.4f}, B {on(rr_of, 'B'):.4f}, all {on(rr_of, 'all'):.4f} "
        f"({time.perf_counter() - started:.0f} s)"
    )


def compare(base_file: Path, new_file: Path) -> None:
    """MRR@10 of two runs on A, B and all, and the paired bootstrap CI of the difference."""
    base = {r["qid"]: r["rr"] for r in map(json.loads, base_file.read_text().splitlines())}
    new = {r["qid"]: r["rr"] for r in map(json.loads, new_file.read_text().splitlines())}
    print("| split | base | new | new − base (95% paired bootstrap CI) |")
    print("|---|---:|---:|---|")
    for which in ("A", "B", "all"):
        d, lo, hi = bootstrap(base, new, which)
        print(
            f"| {which} | {on(base, which):.4f} | {on(new, which):.4f} | "
            f"{d:+.4f} ({lo:+.4f}..{hi:+.4f}) |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("collect")
    p.add_argument("--vault", type=Path, default=None)
    sub.add_parser("tune")
    p = sub.add_parser("run")
    p.add_argument("--vault", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--no-prior", action="store_true")
    p.add_argument("--route", default=None, help="force a route (what: routing off)")
    p.add_argument("--mode", default="hybrid", choices=("hybrid", "keyword", "semantic"))
    p = sub.add_parser("compare")
    p.add_argument("base", type=Path)
    p.add_argument("new", type=Path)
    args = parser.parse_args()
    if args.command == "collect":
        collect(args.vault or make_vault("dev", frontmatter=True))
    elif args.command == "tune":
        tune()
    elif args.command == "run":
        run(args.vault, args.out, prior=not args.no_prior, route=args.route, mode=args.mode)
    else:
        compare(args.base, args.new)


if __name__ == "__main__":
    main()
