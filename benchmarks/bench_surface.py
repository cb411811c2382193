"""Surfacing quality and cost on the man-page dev vault (issue 10).

Every dev query is a prompt that should surface its note; every prompt of
``bench/prompts/offtopic.jsonl`` should surface nothing. One retrieval pass per prompt
(:func:`vaultmem.agent.surface.candidates`), then the shipped speak decision
(:func:`~vaultmem.agent.speak.select`) and the same with its bias moved by ``SHIFTS``
(more or less willing to speak) are scored in process, so the curve costs seconds. The
decision was fit on agent prompts over example-vault (bench_surface_prompts.py), not on
these one-line man-page descriptions.
Then the whole-process latency of ``vaultmem surface PROMPT`` (median of 20) against a
bare ``python -c "import json"`` in the same run.

    python benchmarks/bench_surface.py [--runs 20] [--skip-latency] [--vectors | --vault DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from common import BENCH, VAULTS, make_vault, note_id, queries

from vaultmem import config as vconfig
from vaultmem.agent import speak
from vaultmem.agent import surface as sf
from vaultmem.index.lexical import LexicalIndex
from vaultmem.vocabulary import DEFAULT_SURFACE_PROFILE, SURFACE_PROFILES

CACHE = VAULTS / "caches" / "surface-dev"
SHIFTS = [-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0]
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
    cfg: vconfig.Config, prompts: list[str], vectors: bool | None
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


def _model(found: list[sf.Candidate], shift: float) -> speak.SpeakModel:
    base = speak.VECTOR_MODEL if any(c.cosine is not None for c in found) else speak.KEYWORD_MODEL
    return replace(base, bias=base.bias + shift)


def _block(
    cfg, decision, found, shift=0.0, budget=SURFACE_PROFILES[DEFAULT_SURFACE_PROFILE].tokens
):
    if decision.reason or not found:
        return "", []
    chosen = speak.select(found, forced=decision.forced, model=_model(found, shift))
    return sf.build_block(cfg, chosen, budget)


def _row(cfg, dev, dev_runs, off_runs, shift) -> dict:
    hit = sum(
        any(note_id(c.hit.path) in q["relevant"] for c in _block(cfg, *r, shift)[1])
        for q, r in zip(dev, dev_runs, strict=True)
    )
    quiet = sum(not _block(cfg, *r, shift)[0] for r in off_runs)
    return {
        "bias_shift": shift,
        "hit_rate": round(hit / len(dev), 4),
        "abstention": round(quiet / len(off_runs), 4),
    }


def sizes(cfg, runs) -> dict:
    blocks = [_block(cfg, *r) for r in runs]
    shown = sorted(sf.estimate_tokens(text) for text, _ in blocks if text)
    p95 = shown[min(len(shown) - 1, int(0.95 * len(shown)))] if shown else 0
    return {
        "blocks": len(shown),
        "median_tokens": statistics.median(shown) if shown else 0,
        "p95_tokens": p95,
        "median_notes": statistics.median([len(kept) for _, kept in blocks if kept] or [0]),
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
    parser.add_argument(
        "--vault",
        type=Path,
        help="the dev vault with frontmatter, indexed and embedded in its own cache: "
        "vectors as a hook in process uses them (the quality sweep only)",
    )
    args = parser.parse_args()
    if args.vault:
        # An indexed and embedded vault with its own cache, searched as a hook without a
        # server searches it (vectors when their snapshot is current).
        vault = args.vault
        cfg = vconfig.load(vault_flag=str(vault), env=dict(os.environ), cwd=vault, overrides={})
        args.vectors = None
    else:
        vault = make_vault("dev", frontmatter=True)
        _index(vault)
        cfg = _config(vault, args.vectors)
    dev = queries("dev")
    off = [json.loads(x)["prompt"] for x in (BENCH / "prompts" / "offtopic.jsonl").open()]
    start = time.perf_counter()
    dev_runs = _passes(cfg, [q["query"] for q in dev], args.vectors)
    off_runs = _passes(cfg, off, args.vectors)
    retrieval_s = time.perf_counter() - start
    rows = [_row(cfg, dev, dev_runs, off_runs, shift) for shift in SHIFTS]
    for row in rows:
        print(json.dumps(row))
    report = {
        "shipped": next(r for r in rows if r["bias_shift"] == 0.0),
        "dev_blocks": sizes(cfg, dev_runs),
        "leaks": [p for p, r in zip(off, off_runs, strict=True) if _block(cfg, *r)[0]],
        "retrieval_s_per_prompt": round(retrieval_s / (len(dev) + len(off)), 4),
    }
    if not args.skip_latency:
        report["latency"] = latency(vault, dev[0]["query"], args.runs, args.vectors)
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
