"""Throughput of the in-process MiniLM embedder against a naive batching loop.

Both variants run the same int8 model file and the same tokenizer (truncation at 256
tokens) and produce the same vectors; only the batching and session set-up differ:

  (a) naive: an onnxruntime session with default options, batches of 32 taken in
      document order, each padded to its own longest text;
  (b) LocalEmbedder: length-sorted batches (each padded to its longest) cut by its
      text and padded-token budgets, one intra-op thread per core, no thread spinning,
      basic graph optimisation.

Texts are real: bodies of the man-page corpus cut into ~700-1000-character fragments
(the size vaultmem's fragmenter produces for this model). Repeats of (a) and (b) are
interleaved so that background load on a shared machine hits both alike; the medians,
their ratio and each variant's peak RSS are printed.

    python benchmarks/bench_embed_local.py [-n 1000] [--repeats 3] [--threads T]
    python benchmarks/bench_embed_local.py --sweep 256,512,2048   # (b) at several token budgets

On a shared machine, compare the "cpu" rates too: they count CPU seconds, not wall time,
so they show the work each variant does regardless of what else runs.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from vaultmem.inference import local  # noqa: E402
from vaultmem.inference.local import LocalEmbedder  # noqa: E402

DEFAULT_CORPUS = Path("/work/shared/bench/manpages/dev/corpus.jsonl")
NAIVE_BATCH = 32


def fragments(corpus: Path, n: int, lo: int = 700, hi: int = 1000) -> list[str]:
    """Cut note bodies at line boundaries into fragments of lo..hi characters."""
    out: list[str] = []
    with corpus.open(encoding="utf-8") as fh:
        for line in fh:
            cur = ""
            for ln in json.loads(line)["body"].splitlines(keepends=True):
                while len(ln) > hi:  # a single huge line: cut it hard
                    out.append(ln[:900])
                    ln = ln[900:]
                if len(cur) + len(ln) > hi:
                    if len(cur) >= lo:
                        out.append(cur)
                    cur = ""
                cur += ln
                if len(cur) >= 900:
                    out.append(cur)
                    cur = ""
            if len(cur) >= lo:
                out.append(cur)
            if len(out) >= n:
                break
    out = [c for c in out if lo <= len(c) <= hi]
    if len(out) < n:
        print(f"note: corpus gave only {len(out)} fragments", file=sys.stderr)
    return out[:n]


def naive_embedder(threads: int | None) -> Callable[[Sequence[str]], Any]:
    """Variant (a): default ORT session, document-order batches of 32."""
    import numpy as np
    import onnxruntime as ort

    opts = ort.SessionOptions()
    if threads is not None:  # else ORT's default: one thread per physical core
        opts.intra_op_num_threads = threads
    session = ort.InferenceSession(
        local.model_path(), sess_options=opts, providers=["CPUExecutionProvider"]
    )
    tokenizer = local._load_tokenizer()  # same truncation at 256, no fixed padding

    def embed(texts: Sequence[str]) -> Any:
        vecs = []
        for start in range(0, len(texts), NAIVE_BATCH):
            encs = tokenizer.encode_batch(list(texts[start : start + NAIVE_BATCH]))
            width = max(len(e.ids) for e in encs)
            ids = np.zeros((len(encs), width), dtype=np.int64)
            mask = np.zeros_like(ids)
            for row, e in enumerate(encs):
                ids[row, : len(e.ids)] = e.ids
                mask[row, : len(e.ids)] = 1
            feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            (hidden,) = session.run(None, feeds)
            m = mask[:, :, None].astype(np.float32)
            v = (hidden * m).sum(1) / m.sum(1)
            vecs.append(v / np.linalg.norm(v, axis=1, keepdims=True))
        return np.concatenate(vecs)

    return embed


def peak_rss_mib() -> float:
    """This process's peak resident memory in MiB.

    VmHWM belongs to the address space, which exec replaces; ru_maxrss (the fallback
    off Linux) survives fork+exec, so a child would report its parent's peak.
    """
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child_peak_rss(variant: str, args: argparse.Namespace) -> float:
    """Peak RSS of a fresh process that loads one variant and embeds the texts once.

    A separate process, because onnxruntime's allocator keeps its arena after a run,
    so in one process the second variant would inherit the first one's peak.
    """
    cmd = [sys.executable, __file__, "--child", variant, "-n", str(args.n)]
    cmd += ["--corpus", str(args.corpus), "--batch-size", str(args.batch_size)]
    cmd += ["--batch-tokens", str(args.batch_tokens)]
    for flag, value in (("--threads", args.threads), ("--naive-threads", args.naive_threads)):
        if value is not None:
            cmd += [flag, str(value)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return float(out.stdout.split()[-1])


def timed(fn: Callable[[Sequence[str]], Any], texts: Sequence[str]) -> tuple[float, float, Any]:
    """(wall seconds, process CPU seconds, result) of one call."""
    w0, c0 = time.perf_counter(), time.process_time()
    result = fn(texts)
    return time.perf_counter() - w0, time.process_time() - c0, result


def main() -> None:
    """Run the comparison (or a batch-size sweep of variant b) and print a summary."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("-n", type=int, default=1000, help="number of fragments")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=local.DEFAULT_BATCH_SIZE)
    ap.add_argument("--batch-tokens", type=int, default=local.DEFAULT_BATCH_TOKENS)
    ap.add_argument("--threads", type=int, default=None, help="intra-op threads for (b)")
    ap.add_argument("--naive-threads", type=int, default=None, help="intra-op threads for (a)")
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--sweep", default="", help="comma-separated token budgets; (b) only")
    ap.add_argument("--no-rss", action="store_true", help="skip the peak-RSS child runs")
    ap.add_argument("--child", choices=["a", "b"], help=argparse.SUPPRESS)
    args = ap.parse_args()

    import numpy as np

    texts = fragments(args.corpus, args.n)
    if args.child:  # peak-RSS probe: one variant, one pass, print MiB
        if args.child == "a":
            naive_embedder(args.naive_threads)(texts)
        else:
            LocalEmbedder(args.batch_size, args.threads, args.batch_tokens).embed(texts)
        print(f"{peak_rss_mib():.1f}")
        return
    tokenizer = local._load_tokenizer()
    lengths = [len(e.ids) for e in tokenizer.encode_batch(texts)]
    print(
        f"{len(texts)} fragments, mean {statistics.mean(map(len, texts)):.0f} chars, "
        f"tokens mean {statistics.mean(lengths):.0f} / min {min(lengths)} / max {max(lengths)} "
        f"({sum(n == local.MAX_TOKENS for n in lengths)} truncated); cpus {os.cpu_count()}; "
        f"load avg {os.getloadavg()[0]:.2f}"
    )

    if args.sweep:
        warm = texts[:64]
        budgets = [int(x) for x in args.sweep.split(",")]
        embs = {b: LocalEmbedder(args.batch_size, args.threads, b) for b in budgets}
        for emb in embs.values():
            emb.embed(warm)
        runs: dict[int, list[tuple[float, float]]] = {b: [] for b in budgets}
        for _ in range(args.repeats):
            for b, emb in embs.items():  # interleaved, as below
                runs[b].append(timed(emb.embed, texts)[:2])
        for b, r in runs.items():
            wall = statistics.median(x[0] for x in r)
            cpu = statistics.median(x[1] for x in r)
            print(
                f"  batch_tokens {b:5d}: {len(texts) / wall:7.1f} fragments/s wall, "
                f"{len(texts) / cpu:7.1f} per cpu-second"
            )
        return

    naive = naive_embedder(args.naive_threads)
    fast = LocalEmbedder(args.batch_size, args.threads, args.batch_tokens)
    variants: dict[str, Callable[[Sequence[str]], Any]] = {"a": naive, "b": fast.embed}
    # Warm both (session creation, allocator arenas) outside the timings.
    for fn in variants.values():
        fn(texts[:64])

    walls: dict[str, list[float]] = {"a": [], "b": []}
    cpus: dict[str, list[float]] = {"a": [], "b": []}
    results: dict[str, Any] = {}
    for _ in range(args.repeats):
        for name, fn in variants.items():  # interleaved: a, b, a, b, ...
            wall, cpu, results[name] = timed(fn, texts)
            walls[name].append(wall)
            cpus[name].append(cpu)
    both_peak = peak_rss_mib()
    peaks = {k: (0.0 if args.no_rss else child_peak_rss(k, args)) for k in variants}

    agree = float(np.mean(np.sum(np.asarray(results["a"]) * np.asarray(results["b"]), axis=1)))
    labels = {
        "a": f"(a) naive: doc order, batch {NAIVE_BATCH}, threads "
        f"{args.naive_threads or 'ORT default'}",
        "b": f"(b) LocalEmbedder: sorted, <= {fast.batch_size} texts / "
        f"{fast.batch_tokens} tokens, {fast.threads} threads",
    }
    rate = {k: len(texts) / statistics.median(v) for k, v in walls.items()}
    cpu_rate = {k: len(texts) / statistics.median(v) for k, v in cpus.items()}
    for k in ("a", "b"):
        print(labels[k])
        print(
            f"    {rate[k]:7.1f} fragments/s (wall median {statistics.median(walls[k]):.2f} s "
            f"of {', '.join(f'{w:.2f}' for w in walls[k])}); "
            f"{cpu_rate[k]:.1f} per cpu-second"
            + ("" if args.no_rss else f"; peak RSS alone {peaks[k]:.0f} MiB")
        )
    print(
        f"speed-up (b)/(a): {rate['b'] / rate['a']:.2f}x wall, "
        f"{cpu_rate['b'] / cpu_rate['a']:.2f}x cpu;  mean cosine a vs b: {agree:.6f};  "
        f"load avg now {os.getloadavg()[0]:.2f}"
    )
    print(f"peak RSS of this process (both variants loaded): {both_peak:.0f} MiB")


if __name__ == "__main__":
    main()
