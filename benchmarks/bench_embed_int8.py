"""The int8-compute MiniLM against the shipped graph (issue 21): speed, agreement, quality.

    python benchmarks/bench_embed_int8.py [-n 600] [--repeats 5] [--vault /tmp/devvault]
    python benchmarks/bench_embed_int8.py --sweep        # threads x token budgets, int8
    python benchmarks/bench_embed_int8.py --no-mrr       # speed and cosine only (minutes less)

Speed: the same real ~700-1000-character fragments of the dev corpus (as in
bench_embed_local.py), embedded by ``LocalEmbedder(int8=False)`` (the shipped graph: fp32
products of dequantised weights, what vaultmem ran before) and ``LocalEmbedder(int8=True)`` (the
int8-compute model), repeats interleaved; the medians of fragments per CPU-second (this
process's CPU time, so other load on a shared machine counts less than in wall time) and
per wall second. Agreement: mean and minimum cosine between the two models' vectors of the
fragments and of the 744 dev queries. Cost of first use: deriving the model into an
empty cache, then loading it from the cache. Quality: the dev vault indexed, embedded by
each model (their vectors are stored apart, under their model ids), and ``vsearch`` MRR@10
of the 744 dev queries by each, scored by the benchmark's score.py.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
from bench_embed_local import DEFAULT_CORPUS, fragments  # noqa: E402
from common import make_vault, note_id, queries, score  # noqa: E402

from vaultmem.inference import local  # noqa: E402
from vaultmem.inference.local import LocalEmbedder  # noqa: E402


def cpu_and_wall(embedder: LocalEmbedder, texts: Sequence[str]) -> tuple[float, float, np.ndarray]:
    """(CPU seconds, wall seconds, vectors) of one embed call."""
    c0, w0 = time.process_time(), time.perf_counter()
    vectors = np.asarray(embedder.embed(list(texts)), dtype=np.float32)
    return time.process_time() - c0, time.perf_counter() - w0, vectors


def first_use() -> None:
    """Derive into an empty cache, then load from it, each in a fresh process state."""
    from vaultmem.inference import quantized

    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp) / ".vaultmem"
        for what in ("derive into an empty cache", "read and check the cached model"):
            c0, w0 = time.process_time(), time.perf_counter()
            got = quantized.load_or_derive(cache, local.model_path(), local.source_sha256())
            cpu, wall = time.process_time() - c0, time.perf_counter() - w0
            print(f"  {what}: {wall:.2f} s wall, {cpu:.2f} CPU s (built: {got.built})")


def speed(args: argparse.Namespace, texts: list[str]) -> dict[str, np.ndarray]:
    """Interleaved repeats of both models; prints the rates, returns the vectors."""
    models = {
        "shipped graph (before)": LocalEmbedder(
            args.batch_size, args.threads, args.batch_tokens, int8=False
        ),
        "int8 compute (now)": LocalEmbedder(
            args.batch_size, args.threads, args.batch_tokens, int8=True
        ),
    }
    assert models["int8 compute (now)"].int8, "the onnx package is needed for the int8 model"
    for emb in models.values():  # sessions, arenas and the int8 model made outside the timings
        emb.embed(texts[:64])
    runs: dict[str, list[tuple[float, float]]] = {k: [] for k in models}
    vectors: dict[str, np.ndarray] = {}
    for _ in range(args.repeats):
        for name, emb in models.items():
            cpu, wall, vectors[name] = cpu_and_wall(emb, texts)
            runs[name].append((cpu, wall))
    rates = {}
    for name, r in runs.items():
        cpu = statistics.median(x[0] for x in r)
        wall = statistics.median(x[1] for x in r)
        rates[name] = len(texts) / cpu
        print(
            f"  {name}: {len(texts) / cpu:.1f} fragments per CPU-second, "
            f"{len(texts) / wall:.1f} per wall second (CPU s {', '.join(f'{x[0]:.2f}' for x in r)})"
        )
    before, now = rates.values()
    print(f"  ratio: {now / before:.2f}x per CPU-second")
    return vectors


def sweep(texts: list[str], repeats: int) -> None:
    """The int8 model at 1 and 2 threads and several padded-token budgets."""
    settings = [(t, b) for t in (1, 2) for b in (256, 512, 1024, 2048)]
    embs = {s: LocalEmbedder(threads=s[0], batch_tokens=s[1], int8=True) for s in settings}
    for emb in embs.values():
        emb.embed(texts[:64])
    runs: dict[tuple[int, int], list[tuple[float, float]]] = {s: [] for s in settings}
    for _ in range(repeats):
        for s, emb in embs.items():
            runs[s].append(cpu_and_wall(emb, texts)[:2])
    print("| threads | batch tokens | fragments / CPU-s | fragments / wall s |")
    print("|---:|---:|---:|---:|")
    for (t, b), r in runs.items():
        cpu = statistics.median(x[0] for x in r)
        wall = statistics.median(x[1] for x in r)
        print(f"| {t} | {b} | {len(texts) / cpu:.1f} | {len(texts) / wall:.1f} |")


def cosines(a: np.ndarray, b: np.ndarray) -> str:
    """Mean and minimum row cosine of two unit-vector matrices."""
    c = np.sum(a * b, axis=1)
    return f"mean {c.mean():.5f}, min {c.min():.5f}, 5th percentile {np.percentile(c, 5):.5f}"


def mrr(vault: Path) -> None:
    """Index and embed the vault with each model; vsearch MRR@10 of the dev queries."""
    from vaultmem.config import build
    from vaultmem.embedding import embed_vault
    from vaultmem.indexer import index_vault
    from vaultmem.retrieval.vsearch import VectorIndex, vsearch

    config = build(vault, {})
    index_vault(config)
    qs = queries()
    for name, emb in (
        ("shipped graph (before)", LocalEmbedder(int8=False)),
        ("int8 compute ([embed] int8)", LocalEmbedder(cache_dir=config.cache_dir, int8=True)),
    ):
        c0, w0 = time.process_time(), time.perf_counter()
        report = embed_vault(config, emb)
        cpu, wall = time.process_time() - c0, time.perf_counter() - w0
        run = []
        with VectorIndex(config, emb) as index:
            for q in qs:
                hits = vsearch(config, q["query"], emb, index=index)
                run.append({"qid": q["qid"], "ranked": [note_id(h.path) for h in hits]})
        s = score(run)
        print(
            f"  {name} [{emb.model_id}]: embedded {report.embedded} fragments in {wall:.0f} s "
            f"wall / {cpu:.0f} CPU s; vsearch MRR@10 {s['mrr@10']:.4f}, recall@1 "
            f"{s['recall@1']:.4f}, recall@10 {s['recall@10']:.4f}, nDCG@10 {s['ndcg@10']:.4f}"
        )


def main() -> None:
    """Run what the flags ask for and print it."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("-n", type=int, default=600, help="number of fragments")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--batch-size", type=int, default=local.DEFAULT_BATCH_SIZE)
    ap.add_argument("--batch-tokens", type=int, default=None, help="default: each model's own")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--vault", type=Path, default=None, help="default: the dev vault")
    ap.add_argument("--sweep", action="store_true")
    ap.add_argument("--no-mrr", action="store_true")
    args = ap.parse_args()
    texts = fragments(DEFAULT_CORPUS, args.n)
    print(f"{len(texts)} fragments; cpus {os.cpu_count()}; load avg {os.getloadavg()[0]:.2f}")
    if args.sweep:
        sweep(texts, args.repeats)
        return
    print("first use:")
    first_use()
    print("speed (medians of interleaved repeats):")
    vectors = speed(args, texts)
    before, now = vectors.values()
    print(f"cosine, shipped vs int8, {len(texts)} fragments: {cosines(before, now)}")
    qtexts = [q["query"] for q in queries()]
    qa = np.asarray(LocalEmbedder(int8=False).embed(qtexts), dtype=np.float32)
    qb = np.asarray(LocalEmbedder(int8=True).embed(qtexts), dtype=np.float32)
    print(f"cosine, shipped vs int8, {len(qtexts)} dev queries: {cosines(qa, qb)}")
    if not args.no_mrr:
        print("dev vsearch:")
        mrr(args.vault or make_vault("dev"))
    print(f"load avg at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
