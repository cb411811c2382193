"""Surfacing on agent prompts over example-vault (issue 18): hit rate, abstention, cost.

The prompts are ``benchmarks/data/surface_prompts.jsonl`` (215, written as people type
into a coding agent: 156 with an answer in the vault, 59 that deserve silence; split A for
tuning, B for reporting; 30 of them in five sessions). Each prompt runs through
:func:`vaultmem.agent.surface.surface` in file order, a session's turns in one session
(every other prompt in a session of its own), on a fresh copy of example-vault:

- a prompt with an answer is a **hit** when one of its ``expect`` notes is in the block, or
  (a later turn of a session) was shown earlier in that session: repeats are left out of
  the block on purpose;
- a prompt without one is an **abstention** when the block is empty.

Modes: ``process`` (what a hook gets with no server: since issue 30, keywords and the
in-process MiniLM vectors once `index` has left their snapshot), ``warm`` (the same
vectors through the server's embedder: what every hook gets while ``vaultmem serve``
runs), and ``keyword`` (no embedder at all, for reference; ``both`` runs process and
warm). Then block sizes, and the
whole-process latency of ``vaultmem hook prompt`` (median and p95 of ``--runs`` prompts)
without a server and through a running one.

    python benchmarks/bench_surface_prompts.py [--split A|B|all]
        [--mode keyword|process|warm|both]
        [--runs 20] [--skip-latency] [--misses] [--profile quiet|normal|deep]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from common import REPO, percentile

PROMPTS = REPO / "benchmarks" / "data" / "surface_prompts.jsonl"
NOW = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
NOW_ENV = "2026-12-01T09:00:00Z"


@dataclass(frozen=True)
class Outcome:
    """One prompt's result."""

    prompt: dict
    shown: tuple[str, ...]
    tokens: int
    reason: str
    ok: bool


def load(split: str) -> list[dict]:
    """The prompts of ``split`` (A, B or all), in file order."""
    rows = [json.loads(line) for line in PROMPTS.read_text().splitlines() if line.strip()]
    return [r for r in rows if split == "all" or r["split"] == split]


def fresh_vault(vectors: bool) -> Path:
    """A copy of example-vault, indexed (and embedded with MiniLM when ``vectors``)."""
    target = Path(tempfile.mkdtemp(prefix="surface-bench-")) / "vault"
    shutil.copytree(REPO / "example-vault", target, ignore=shutil.ignore_patterns(".vaultmem"))
    env = _env(vectors)
    cmd = [sys.executable, "-m", "vaultmem", "--vault", str(target), "index"]
    subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL)
    return target


def _env(vectors: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("VAULTMEM_")}
    env["VAULTMEM_NOW"] = NOW_ENV
    if not vectors:
        env["VAULTMEM_EMBEDDER"] = "none"
    return env


def open_fresh(vectors: bool) -> tuple[Path, Any, Any, Any]:
    """A fresh indexed vault (:func:`fresh_vault`) with its config, keyword index and
    the backends a mode searches with (keyword only, or the in-process MiniLM too)."""
    from vaultmem import config as vconfig
    from vaultmem.index.lexical import LexicalIndex
    from vaultmem.retrieval.query_types import Backends

    vault = fresh_vault(vectors)
    config = vconfig.load(vault_flag=str(vault), env=_env(vectors), cwd=vault, overrides={})
    index = LexicalIndex.open(config.cache_dir)
    backends = Backends()
    if vectors:
        from vaultmem.inference.embedders import embedder_for

        backends = Backends(embedder=embedder_for(config))
    return vault, config, index, backends


def run(prompts: Iterable[dict], mode: str, profile: str | None = None) -> list[Outcome]:
    """Every prompt through `surface` (with ``profile``, None: the default), sessions in
    order, on a fresh vault, as ``mode`` searches: ``keyword`` (no embedder), ``process``
    (what a hook without a server picks: :func:`~vaultmem.agent.surface.cheap_backends`)
    or ``warm`` (the server's embedder)."""
    from vaultmem.agent import surface as sf

    vault, config, index, backends = open_fresh(mode != "keyword")
    if mode == "process":
        backends = sf.cheap_backends(config, None)
        assert backends.embedder is not None, "the hook would search keywords only"
    seen: dict[str, set[str]] = {}
    out = []
    for n, row in enumerate(prompts):
        session = row["session"] or f"single-{n}"
        request = sf.SurfaceRequest(row["prompt"], session=session, profile=profile)
        result = sf.surface(config, request, now=NOW, index=index, backends=backends)
        shown = tuple(note.path for note in result.notes)
        before = seen.setdefault(session, set())
        if row["expect"]:
            ok = any(p in shown or p in before for p in row["expect"])
        else:
            ok = not result.context
        before.update(shown)
        out.append(Outcome(row, shown, sf.estimate_tokens(result.context), result.reason, ok))
    shutil.rmtree(vault.parent, ignore_errors=True)
    return out


def summary(outcomes: list[Outcome]) -> dict[str, object]:
    """Hit rate, abstention and block sizes of one mode."""
    answer = [o for o in outcomes if o.prompt["expect"]]
    silent = [o for o in outcomes if not o.prompt["expect"]]
    on_topic = [o for o in silent if o.prompt["note"].startswith("on-topic-sounding")]
    tokens = sorted(o.tokens for o in outcomes if o.tokens)
    return {
        "hit_rate": round(sum(o.ok for o in answer) / max(len(answer), 1), 3),
        "abstention": round(sum(o.ok for o in silent) / max(len(silent), 1), 3),
        "abstention_on_topic": round(sum(o.ok for o in on_topic) / max(len(on_topic), 1), 3),
        "prompts": f"{len(answer)} with an answer, {len(silent)} silent",
        "blocks": len(tokens),
        "block_tokens_median": statistics.median(tokens) if tokens else 0,
        "block_tokens_p95": percentile(tokens, 95) if tokens else 0,
    }


def misses(outcomes: list[Outcome]) -> list[str]:
    """One line per wrong answer, for tuning."""
    lines = []
    for o in outcomes:
        if not o.ok:
            want = o.prompt["expect"] or ["(silence)"]
            got = ", ".join(o.shown) or f"(nothing: {o.reason})"
            lines.append(
                f"{o.prompt['id']} {o.prompt['prompt'][:70]!r}\n   want {want[0]}\n   got  {got}"
            )
    return lines


CPU: list[float] = []  # the CPU seconds (user + system) of each command _timed ran


def _timed(cmd: list[str], env: dict[str, str], stdin: bytes) -> float:
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, env=env, input=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return wall


def latency(prompts: list[dict], runs: int) -> dict[str, object]:
    """`hook prompt` whole-process: no server (keyword only) and through `serve`."""
    vault = fresh_vault(vectors=True)
    chosen = [p for p in prompts if p["expect"]][:runs]
    cmd = [sys.executable, "-m", "vaultmem", "--vault", str(vault), "hook", "prompt"]
    cold_env = {**_env(vectors=True), "VAULTMEM_NO_SERVER": "1"}
    events = [json.dumps({"prompt": p["prompt"], "session_id": "lat"}).encode() for p in chosen]
    bare = [_timed([sys.executable, "-c", "pass"], cold_env, b"") for _ in chosen]
    bare_cpu = CPU[-len(chosen) :]
    # A shared machine's wall times swing with its load; CPU seconds much less.
    cold = [_timed(cmd, cold_env, e) for e in events]
    cold_cpu = CPU[-len(events) :]
    serve = [sys.executable, "-m", "vaultmem", "--vault", str(vault), "serve", "--background"]
    # What a SessionStart-launched server costs the first prompt: its start (it returns
    # once it answers) and its first answer (which loads the model).
    started = time.perf_counter()
    subprocess.run([*serve, "--port", "0"], check=True, env=_env(True), stdout=subprocess.DEVNULL)
    serve_start = time.perf_counter() - started
    try:
        first = _timed(cmd, _env(True), events[0])  # the server's first answer warms its model
        warm = [_timed(cmd, _env(True), e) for e in events]
    finally:
        stop = [sys.executable, "-m", "vaultmem", "--vault", str(vault), "serve", "stop"]
        subprocess.run(stop, env=_env(True), stdout=subprocess.DEVNULL)
        shutil.rmtree(vault.parent, ignore_errors=True)

    def ms(values: list[float]) -> dict[str, float]:
        return {
            "p50_ms": round(statistics.median(values) * 1000, 1),
            "p95_ms": round(percentile(sorted(values), 95) * 1000, 1),
        }

    return {
        "python -c pass": ms(bare),
        "python -c pass, CPU": ms(bare_cpu),
        "no server": ms(cold),
        "no server, CPU": ms(cold_cpu),
        "through serve": ms(warm),
        "serve start, s": round(serve_start, 2),
        "first prompt through a just-started serve, s": round(serve_start + first, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--split", default="all", choices=["A", "B", "all"])
    parser.add_argument("--mode", default="both", choices=["keyword", "process", "warm", "both"])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--skip-latency", action="store_true")
    parser.add_argument("--misses", action="store_true", help="print every wrong answer")
    parser.add_argument("--profile", choices=["quiet", "normal", "deep"], help="default: normal")
    args = parser.parse_args()
    prompts = load(args.split)
    report: dict[str, object] = {"split": args.split, "profile": args.profile or "normal"}
    modes = ["process", "warm"] if args.mode == "both" else [args.mode]
    for mode in modes:
        outcomes = run(prompts, mode, profile=args.profile)
        report[mode] = summary(outcomes)
        if args.misses:
            print(f"--- {mode}: misses")
            print("\n".join(misses(outcomes)))
    if not args.skip_latency:
        report["hook_latency"] = latency(prompts, args.runs)
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
