"""Surfacing quality and cost on the man-page dev vault (issue 10).

Every dev query is a prompt that should surface its note; every prompt of
``bench/prompts/offtopic.jsonl`` should surface nothing. One retrieval pass per prompt
(:func:`vaultmem.agent.surface.candidates`), then the floor and relative cut-off are
swept in process (:func:`~vaultmem.agent.surface.select`), so the curve costs seconds.
Then the whole-process latency of ``vaultmem surface PROMPT`` (median of 20) against a
bare ``python -c "import json"`` in the same run.

    python benchmarks/bench_surface.py [--runs 20] [--skip-latency]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from common import BENCH, VAULTS, make_vault, note_id, queries

from vaultmem import config as vconfig
from vaultmem.agent import surface as sf
from vaultmem.index.lexical import LexicalIndex

CACHE = VAULTS / "caches" / "surface-dev"
FLOORS = [0.0, 0.3, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.8]
COSINES = [0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 1.1]
CUTOFFS = [0.0, 0.5, 0.6, 0.7, 0.85]
ENV = {**os.environ, "VAULTMEM_EMBEDDER": "none"}


def _config(vault: Path, vectors: bool) -> vconfig.Config:
    env = {k: v for k, v in ENV.items() if k != "VAULTMEM_EMBEDDER"} if vectors else ENV
    return vconfig.load(
        vault_flag=str(vault), env=env, cwd=Path.cwd(), overrides={"cache_dir": str(CACHE)}
    )


def _index(vault: Path) -> None:
    cmd = [sys.executable, "-m", "vaultmem", "--vault", str(vault), "--cache-dir", str(CACHE)]
    subprocess.run([*cmd, "index"], check=True, env=ENV, stdout=subprocess.DEVNULL)


def _passes(
    cfg: vconfig.Config, prompts: list[str], vectors: bool
) -> list[tuple[sf.Gate, list[sf.Candidate]]]:
    index = LexicalIndex.open(cfg.cache_dir)
    backends = sf.cheap_backends(cfg, vectors)
    now = datetime.now(UTC)
    out = []
    for prompt in prompts:
        decision = sf.gate(prompt)
        found = (
            []
            if decision.reason
            else sf.candidates(cfg, decision.text, now=now, index=index, backends=backends)
        )
        out.append((decision, found))
    return out


def _block(cfg, decision, found, floor, cutoff, cosine=sf.COSINE_FLOOR, budget=sf.DEFAULT_BUDGET):
    if decision.reason:
        return "", []
    bar = floor * (sf.FORCED_FLOOR_FACTOR if decision.forced else 1.0)
    chosen = sf.select(found, floor=bar, cutoff=cutoff, cosine_floor=cosine)
    return sf.build_block(cfg, chosen, budget)


def _row(cfg, dev, dev_runs, off_runs, floor, cutoff, cosine) -> dict:
    hit = sum(
        any(note_id(c.hit.path) in q["relevant"] for c in _block(cfg, *r, floor, cutoff, cosine)[1])
        for q, r in zip(dev, dev_runs, strict=True)
    )
    quiet = sum(not _block(cfg, *r, floor, cutoff, cosine)[0] for r in off_runs)
    return {
        "floor": floor,
        "cutoff": cutoff,
        "cosine": cosine,
        "hit_rate": round(hit / len(dev), 4),
        "abstention": round(quiet / len(off_runs), 4),
    }


def sweep(cfg, dev, dev_runs, off_runs, vectors: bool) -> list[dict]:
    rows = [
        _row(cfg, dev, dev_runs, off_runs, floor, cutoff, sf.COSINE_FLOOR)
        for cutoff in CUTOFFS
        for floor in FLOORS
    ]
    if vectors:
        rows += [
            _row(cfg, dev, dev_runs, off_runs, floor, sf.RELATIVE_CUTOFF, cosine)
            for floor in (sf.COVERAGE_FLOOR, 0.6, 0.65, 0.7, 1.1)
            for cosine in COSINES
        ]
    return rows


def sizes(cfg, runs, floor, cutoff) -> dict:
    tokens = [sf.estimate_tokens(_block(cfg, *r, floor, cutoff)[0]) for r in runs]
    shown = sorted(t for t in tokens if t)
    p95 = shown[min(len(shown) - 1, int(0.95 * len(shown)))] if shown else 0
    return {
        "blocks": len(shown),
        "median_tokens": statistics.median(shown) if shown else 0,
        "p95_tokens": p95,
        "median_notes": statistics.median(
            [
                len(_block(cfg, *r, floor, cutoff)[1])
                for r in runs
                if _block(cfg, *r, floor, cutoff)[1]
            ]
            or [0]
        ),
    }


def _median_run(cmd: list[str], runs: int, env: dict) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def latency(vault: Path, prompt: str, runs: int, vectors: bool) -> dict:
    base = [sys.executable, "-m", "vaultmem", "--vault", str(vault), "--cache-dir", str(CACHE)]
    env = {k: v for k, v in ENV.items() if k != "VAULTMEM_EMBEDDER"} if vectors else ENV
    flag = ["--vectors"] if vectors else []
    bare = _median_run([sys.executable, "-c", "import json"], runs, env)
    hit = _median_run([*base, "surface", prompt, *flag], runs, env)
    gated = _median_run([*base, "surface", "thanks!", *flag], runs, env)
    return {
        "bare_python_s": round(bare, 4),
        "surface_s": round(hit, 4),
        "surface_gated_s": round(gated, 4),
        "ratio": round(hit / bare, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--skip-latency", action="store_true")
    parser.add_argument(
        "--vectors", action="store_true", help="BM25 + the local MiniLM (run `embed` first)"
    )
    args = parser.parse_args()
    vault = make_vault("dev", frontmatter=True)
    _index(vault)
    cfg = _config(vault, args.vectors)
    dev = queries("dev")
    off = [json.loads(x)["prompt"] for x in (BENCH / "prompts" / "offtopic.jsonl").open()]
    start = time.perf_counter()
    dev_runs = _passes(cfg, [q["query"] for q in dev], args.vectors)
    off_runs = _passes(cfg, off, args.vectors)
    retrieval_s = time.perf_counter() - start
    rows = sweep(cfg, dev, dev_runs, off_runs, args.vectors)
    for row in rows:
        print(json.dumps(row))
    chosen = {"floor": sf.COVERAGE_FLOOR, "cutoff": sf.RELATIVE_CUTOFF}
    mine = next(
        r for r in rows if r["floor"] == chosen["floor"] and r["cutoff"] == chosen["cutoff"]
    )
    report = {
        "chosen": mine,
        "dev_blocks": sizes(cfg, dev_runs, **chosen),
        "leaks": [p for p, r in zip(off, off_runs, strict=True) if _block(cfg, *r, **chosen)[0]],
        "retrieval_s_per_prompt": round(retrieval_s / (len(dev) + len(off)), 4),
    }
    if not args.skip_latency:
        report["latency"] = latency(vault, dev[0]["query"], args.runs, args.vectors)
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
