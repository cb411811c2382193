"""Warm keyword search at scale (issue 21, item 3): Whoosh's scoring against the cached
postings of ``vaultmem.index.impact``, side by side in one process.

    python benchmarks/bench_warm_search.py [--vaults dev,scale,scale6] [--sample 300]

For each vault, two warm ``OpenVault`` (as the server holds, ``warm_up`` run) on the same
index, one with the fast path turned off (``lexical().fast = False``: Whoosh scores),
and for each query, alternating which goes first:

- ``api.search`` (keyword, memory prior and snippets: what the server answers), wall and
  CPU (thread) time, p50/p95;
- the BM25 stage alone, ``LexicalIndex.search(limit=30)`` (the depth the prior reorders);
- exactness: the top 10 of ``LexicalIndex.search`` (paths, order, scores) from both,
  and from Whoosh collecting every match (``limit=None``: the BM25F the fast path
  computes; today's Whoosh path prunes, and its pruned matchers can mis-add a
  document's terms), and ``api.search``'s hits (paths) from both; each difference is
  counted, and the first few where the two paths differ are shown.

The fast path starts with nothing cached: its first pass over the queries reads every
term's postings the first time it is asked ("cold"); the second pass is the steady state
of a long-running server ("warm"). RSS is read before the fast path's first query and
after its last; ``cached`` is what its posting store holds.

Vaults: ``dev`` (978 notes, bench-vaults/dev), ``scale`` (15,926, bench-vaults/scale),
``scale6`` (95,556: ``make_vault.py --copies 6 --frontmatter`` of the scale corpus,
bench-vaults/scale6, its cache bench-vaults/caches/scale6-new as bench_write_scale.py
makes it). Each is made and indexed once (the 95k one takes minutes). ``--sample``: how
many of the 744 dev queries run at 95k (seeded; all of them on the others).
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from common import VAULTS, make_vault, percentile, queries

from vaultmem import api
from vaultmem import config as vconfig
from vaultmem.index.lexical import LexicalIndex, _mask, build_query
from vaultmem.model import Filters, SearchRequest

CACHES = VAULTS / "caches"


def _vault(name: str) -> tuple[Path, Path]:
    """A benchmark vault and its cache folder, made and indexed once."""
    if name == "scale6":
        sys.path.insert(0, str(Path(__file__).parent))
        from bench_write_scale import big_vault

        vault, cache = big_vault(), CACHES / "scale6-new"
    else:
        vault = make_vault(name)
        cache = vault / ".vaultmem"
    env = {**os.environ, "VAULTMEM_EMBEDDER": "none"}
    command = [sys.executable, "-m", "vaultmem", "--vault", str(vault)]
    command += ["--cache-dir", str(cache.resolve()), "index", "--no-embed", "-q"]
    subprocess.run(command, env=env, check=True)
    return vault, cache


def _open(vault: Path, cache: Path, *, fast: bool) -> api.OpenVault:
    env = {k: v for k, v in os.environ.items() if not k.startswith("VAULTMEM_")}
    env["VAULTMEM_EMBEDDER"] = "none"
    cfg = vconfig.load(
        vault_flag=str(vault), env=env, cwd=Path.cwd(), overrides={"cache_dir": str(cache)}
    )
    opened = api.OpenVault(cfg, warm=True)
    opened.warm_up()
    opened.lexical().fast = fast
    return opened


def _every_match(index: LexicalIndex, text: str, limit: int) -> list[tuple[str, float]]:
    """Whoosh's BM25F top ``limit`` with every match collected (no pruning), equal scores
    by path: what ``search`` would answer if Whoosh's top-k collector never swapped its
    union matchers for intersections (which can mis-add a document's terms)."""
    query = build_query(text, index._prefixed)
    if query is None:
        return []
    results = index.searcher().search(query, limit=None, mask=_mask(Filters()))
    hits = sorted(((r["path"], float(r.score)) for r in results), key=lambda h: (-h[1], h[0]))
    return hits[:limit]


def _rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def bench(name: str, texts: list[str]) -> None:
    """Print one vault's table rows."""
    vault, cache = _vault(name)
    whoosh, fast = _open(vault, cache, fast=False), _open(vault, cache, fast=True)
    notes = whoosh.lexical().doc_count()
    now = datetime.now(UTC)

    def searched(opened: api.OpenVault, text: str) -> list[str]:
        result = api.search(opened, SearchRequest(text, mode="keyword"), now=now)
        return [hit.path for hit in result.hits]

    for text in texts[:20]:  # both: OS page cache, stemmer, snippets of the usual hits
        searched(whoosh, text)
        whoosh.lexical().search(text, limit=30)
    rss_before = _rss_mib()
    times: dict[str, tuple[list[float], list[float]]] = {}

    def timed(measure: str, call: Callable[[], object]) -> object:
        wall, cpu = time.perf_counter(), time.thread_time()
        out = call()
        walls, cpus = times.setdefault(measure, ([], []))
        walls.append((time.perf_counter() - wall) * 1000)
        cpus.append((time.thread_time() - cpu) * 1000)
        return out

    differ = {
        "fast vs Whoosh collecting every match, top 10": 0,
        "fast vs Whoosh as searched today (pruned top-k), top 10": 0,
        "Whoosh today vs Whoosh collecting every match, top 10": 0,
        "fast vs Whoosh today, api.search hits": 0,
    }
    shown: list[str] = []
    # Cold: the fast path's store starts empty; its BM25 stage runs first, so it reads
    # each term's postings the first time a query asks for it. Whoosh keeps nothing
    # between queries: one pass measures it.
    for i, text in enumerate(texts):
        answers = {}
        for opened in (whoosh, fast) if i % 2 else (fast, whoosh):
            kind = "fast, cold" if opened is fast else "Whoosh"
            index = opened.lexical()
            timed(f"BM25 stage, {kind}", lambda i=index, t=text: i.search(t, limit=30))
            hits = searched(opened, text)
            if opened is whoosh:
                timed("api.search, Whoosh", lambda t=text: searched(whoosh, t))
            top = [(h.path, h.score) for h in index.search(text, limit=10)]
            answers[opened is fast] = (top, hits)
        exhaustive = _every_match(whoosh.lexical(), text, 10)
        fast_top, today_top = answers[True][0], answers[False][0]
        differ["fast vs Whoosh collecting every match, top 10"] += fast_top != exhaustive
        differ["fast vs Whoosh as searched today (pruned top-k), top 10"] += fast_top != today_top
        differ["Whoosh today vs Whoosh collecting every match, top 10"] += today_top != exhaustive
        differ["fast vs Whoosh today, api.search hits"] += answers[True][1] != answers[False][1]
        if fast_top != today_top and len(shown) < 5:
            missed = [hit for hit in fast_top if hit not in today_top]
            shown.append(f"  {text!r}: Whoosh today misses {missed}")
    for text in texts:  # warm: a server that has answered these words before
        index = fast.lexical()
        timed("BM25 stage, fast, warm", lambda i=index, t=text: i.search(t, limit=30))
        timed("api.search, fast, warm", lambda t=text: searched(fast, t))
    print(
        f"\n{name}: {notes} notes, {len(texts)} queries, load {os.getloadavg()[0]:.1f}; "
        f"RSS {rss_before:.0f} → {_rss_mib():.0f} MiB "
        f"(posting store {fast.lexical().cached_bytes / 2**20:.1f} MiB)"
    )
    print("| measure | wall p50 | wall p95 | CPU p50 | CPU p95 |")
    print("|---|---:|---:|---:|---:|")
    for measure in sorted(times):
        walls, cpus = times[measure]
        print(
            f"| {measure} | {percentile(walls, 50):.2f} | {percentile(walls, 95):.2f} "
            f"| {percentile(cpus, 50):.2f} | {percentile(cpus, 95):.2f} |"
        )
    for what, count in differ.items():
        print(f"differences, {what}: {count} of {len(texts)}")
    print("\n".join(shown))
    whoosh.close()
    fast.close()


def memory(name: str, texts: list[str], *, fast: bool) -> None:
    """RSS of a process holding one warm vault of one kind: after ``warm_up``, after the
    queries, and after them again (run as its own process by :func:`main`)."""
    vault, cache = _vault(name)
    opened = _open(vault, cache, fast=fast)
    now = datetime.now(UTC)
    marks = [_rss_mib()]
    for _ in range(2):
        for text in texts:
            api.search(opened, SearchRequest(text, mode="keyword"), now=now)
        marks.append(_rss_mib())
    kind = "fast" if fast else "Whoosh"
    cached = opened.lexical().cached_bytes / 2**20
    print(
        f"RSS, {kind}: {marks[0]:.0f} MiB warmed up, {marks[1]:.0f} after {len(texts)} "
        f"queries, {marks[2]:.0f} after them again (posting store {cached:.1f} MiB)"
    )


def main() -> None:
    """Run each vault named in --vaults; RSS in a process of its own per path."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vaults", default="dev,scale,scale6")
    parser.add_argument("--sample", type=int, default=300, help="dev queries run at 95k")
    parser.add_argument("--memory", choices=["fast", "whoosh"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    texts = [q["query"] for q in queries()]
    for name in args.vaults.split(","):
        chosen = texts if name != "scale6" else random.Random(21).sample(texts, args.sample)
        if args.memory:
            memory(name, chosen, fast=args.memory == "fast")
            continue
        bench(name, chosen)
        for kind in ("whoosh", "fast"):
            command = [sys.executable, __file__, "--vaults", name, "--sample", str(args.sample)]
            subprocess.run([*command, "--memory", kind], check=True)


if __name__ == "__main__":
    main()
