"""Fit `surface`'s speak decision on split A of the agent prompts; score it on split B.

    python benchmarks/tune_surface.py fit      # both modes: weights, A and B at the fit
    python benchmarks/tune_surface.py curve    # hit rate / abstention as the bias moves

Every prompt of ``benchmarks/data/surface_prompts.jsonl`` goes through the gates and
:func:`vaultmem.agent.surface.candidates` once per mode (``process``: keyword only;
``warm``: keyword + the in-process MiniLM), on a fresh copy of example-vault. The
signals of :class:`vaultmem.agent.speak.SpeakModel` are read off each candidate list,
and a logistic regression (L2 0.02, standardised inputs, 20,000 gradient steps) is fit
on split A to predict "one of the first three notes is a note the prompt wants". The
threshold is the one with the best min(hit rate, abstention) on A (ties: the best sum);
B is scored once with it. Gated prompts count as abstaining, as in
bench_surface_prompts.py. Sessions are ignored here: the decision never looks at them.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
from pathlib import Path

import numpy as np
from bench_surface_prompts import NOW, load, open_fresh

from vaultmem.agent import speak
from vaultmem.agent import surface as sf

SIGNALS = {
    "process": ["keyword", "lead", "coverage", "coverage_best", "rarest", "phrases", "forced"],
    "warm": [
        "keyword",
        "lead",
        "coverage",
        "coverage_best",
        "phrases",
        "forced",
        "cosine",
        "cosine_gap",
    ],
}


def signals(found: list[sf.Candidate], forced: bool) -> dict[str, float]:
    """The decision's inputs for one candidate list (SpeakModel.score's terms)."""
    first, shown = found[0], found[: speak.SHOW_LIMIT]
    cosines = [c.cosine or 0.0 for c in found[:2]] + [0.0]
    return {
        "keyword": math.log1p(first.bm25 or 0.0),
        "lead": math.log1p(first.lead or 0.0),
        "coverage": first.coverage,
        "coverage_best": max(c.coverage for c in shown),
        "rarest": first.rarest,
        "phrases": min(speak.PHRASE_CAP, max(c.phrases for c in shown)),
        "forced": float(forced),
        "cosine": max(c.cosine or 0.0 for c in shown),
        "cosine_gap": cosines[0] - cosines[1],
    }


def collect(mode: str) -> list[dict]:
    """One row per prompt: its split, whether it wants a note, the gate, the signals."""
    vault, config, index, backends = open_fresh(vectors=mode == "warm")
    rows = []
    for prompt in load("all"):
        decision = sf.gate(prompt["prompt"])
        row = {"split": prompt["split"], "wants": bool(prompt["expect"]), "signals": None}
        if not decision.reason:
            found = sf.candidates(config, decision.text, now=NOW, index=index, backends=backends)
            if found:
                shown = [c.hit.path for c in found[: speak.SHOW_LIMIT]]
                row["signals"] = signals(found, decision.forced)
                row["found"] = any(p in shown for p in prompt["expect"])
        rows.append(row)
    shutil.rmtree(vault.parent, ignore_errors=True)
    return rows


def collect_manpages(vault: Path) -> list[dict]:
    """The one-line prompts (issue 30): each man-page dev query should surface its page,
    each prompt of ../shared/bench/prompts/offtopic.jsonl nothing. Split "A" (tune) is
    the odd qids and odd off-topic ids, "B" the even ones. ``vault``: the dev vault with
    frontmatter, indexed and embedded (with its snapshot current)."""
    from common import BENCH, note_id, queries

    from vaultmem.config import build
    from vaultmem.index.lexical import LexicalIndex

    config = build(vault, {})
    index = LexicalIndex.open(config.cache_dir)
    backends = sf.cheap_backends(config, None)
    assert backends.embedder is not None, "embed the vault first (its snapshot current)"
    prompts = [
        (q["query"], {q["relevant"][0]}, "A" if int(q["qid"].lstrip("q")) % 2 else "B")
        for q in queries("dev")
    ]
    for line in (BENCH / "prompts" / "offtopic.jsonl").read_text().splitlines():
        row = json.loads(line)
        prompts.append((row["prompt"], set(), "A" if int(row["id"][3:]) % 2 else "B"))
    rows = []
    for text, wanted, split in prompts:
        decision = sf.gate(text)
        row = {"split": split, "wants": bool(wanted), "signals": None, "set": "man"}
        if not decision.reason:
            found = sf.candidates(config, decision.text, now=NOW, index=index, backends=backends)
            if found:
                row["signals"] = signals(found, decision.forced)
                row["found"] = any(note_id(c.hit.path) in wanted for c in found[: speak.SHOW_LIMIT])
        rows.append(row)
    return rows


def _matrix(rows: list[dict], names: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    searched = [r for r in rows if r["signals"] is not None]
    x = np.array([[r["signals"][n] for n in names] for r in searched])
    wants = np.array([r["wants"] for r in searched])
    found = np.array([r.get("found", False) for r in searched])
    return x, wants, found


def rates(rows: list[dict], names: list[str], weights: np.ndarray, bias: float) -> tuple:
    """(hit rate, abstention) of ``rows`` under the decision ``bias + x · weights ≥ 0``."""
    x, wants, found = _matrix(rows, names)
    speaks = x @ weights + bias >= 0 if len(x) else np.array([], dtype=bool)
    answered = sum(r["wants"] for r in rows)
    silent = sum(not r["wants"] for r in rows)
    gated = sum(1 for r in rows if not r["wants"] and r["signals"] is None)
    hits = int((speaks & wants & found).sum())
    quiet = gated + int((~speaks & ~wants).sum())
    return hits / max(answered, 1), quiet / max(silent, 1)


def fit(rows: list[dict], names: list[str]) -> tuple[np.ndarray, float]:
    """Logistic weights (in the signals' own units) and the bias at the chosen threshold."""
    x, wants, found = _matrix(rows, names)
    mu, sd = x.mean(0), x.std(0) + 1e-9
    z = (x - mu) / sd
    target = (wants & found).astype(float)
    w, b = np.zeros(z.shape[1]), 0.0
    for _ in range(20_000):
        p = 1 / (1 + np.exp(-(z @ w + b)))
        g = p - target
        w -= 0.1 * (z.T @ g / len(target) + 0.02 * w)
        b -= 0.1 * g.mean()
    weights = w / sd
    bias = b - weights @ mu
    margins = sorted(set(np.round(x @ weights + bias, 4)))

    def quality(threshold: float) -> tuple[float, float]:
        hit, abstain = rates(rows, names, weights, bias - threshold)
        return min(hit, abstain), hit + abstain

    return weights, bias - max(margins, key=quality)


def fit_both(vault: Path) -> None:
    """Fit the vector decision on the agent prompts' split A and the one-line prompts' half
    A together; print its weights and the rates of every set and split, with the shipped
    model's beside them."""
    names = SIGNALS["warm"]
    agent = collect("warm")
    man = collect_manpages(vault)
    tune = [r for r in agent + man if r["split"] == "A"]
    weights, bias = fit(tune, names)
    shown = ", ".join(f"{n}={w:.3f}" for n, w in zip(names, weights, strict=True))
    print(f"fit on agent A + one-line A: bias={bias:.3f}, {shown}")
    shipped = speak.VECTOR_MODEL
    old = np.array([getattr(shipped, n) for n in names])
    for label, (w, b) in {"fitted": (weights, bias), "shipped": (old, shipped.bias)}.items():
        for shift in [-0.5, -0.25, 0.0, 0.25, 0.5]:
            cells = []
            for name, rows in (("agent", agent), ("one-line", man)):
                for split in ("A", "B"):
                    part = [r for r in rows if r["split"] == split]
                    hit, quiet = rates(part, names, w, b + shift)
                    cells.append(f"{name} {split} {hit:.3f}/{quiet:.3f}")
            print(f"  {label} bias {shift:+.2f}: " + " | ".join(cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=["fit", "curve", "both"])
    parser.add_argument("--vault", type=Path, help="both: the embedded man-page dev vault")
    args = parser.parse_args()
    if args.command == "both":
        fit_both(args.vault)
        return
    for mode, names in SIGNALS.items():
        rows = collect(mode)
        a = [r for r in rows if r["split"] == "A"]
        b = [r for r in rows if r["split"] == "B"]
        weights, bias = fit(a, names)
        shown = ", ".join(f"{n}={w:.3f}" for n, w in zip(names, weights, strict=True))
        print(f"{mode}: bias={bias:.3f}, {shown}")
        shifts = [-1.0, -0.5, -0.25, 0.0, 0.25, 0.5, 1.0] if args.command == "curve" else [0.0]
        for shift in shifts:
            ha, qa = rates(a, names, weights, bias + shift)
            hb, qb = rates(b, names, weights, bias + shift)
            print(
                f"  bias {shift:+.2f}: A hit {ha:.3f} abstention {qa:.3f} | "
                f"B hit {hb:.3f} abstention {qb:.3f}"
            )


if __name__ == "__main__":
    main()
