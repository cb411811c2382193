"""Fit the learned capture layer, and estimate how it does on talk nobody here wrote.

    python benchmarks/capture_learn.py              # leave-one-set-out table (the estimate)
    python benchmarks/capture_learn.py --curve      # ... and its precision/recall curve
    python benchmarks/capture_learn.py --write      # fit on all four sets, write the weights
    python benchmarks/capture_learn.py --check      # the shipped weights are what --write gives

The four labelled capture sets (own, round1, round2, round3; ``bench_capture.py``) give
the training table: every candidate sentence of :func:`vaultmem.agent.capture_learned.
features` (what the user says, or an assistant's proposal the user accepts, that no phrase
rule takes), labelled 1 when it holds a gold memory's keywords (``bench_capture.holds``)
and 0 otherwise (the planted traps, and every other sentence). A logistic regression with
both classes weighted alike is fitted on its features.

**Leave-one-set-out.** For each set, the model is fitted on the other three and the set
is scored as ``bench_capture.py`` scores it: the captures are the rules' memories plus the
layer's (:func:`vaultmem.agent.capture_rules.spot`, reversals applied), one per content
key, as `extract --dry-run` gives them. Rows: the rules alone, the prototype layer of
:mod:`vaultmem.agent.capture_vectors` (``[capture] semantic`` before the learned layer;
fitted on no set), and the learned layer at each threshold. The operating point is the
highest mean recall with mean precision ≥ 0.90 (else ≥ 0.85), over the four held-out sets.
``--write`` fits on all four sets with that threshold and writes
``vaultmem/data/capture_classifier.json``; the fit is deterministic (up to the last digits
of float sums), so ``--check`` (and
``tests/test_capture_learned.py``) can tell whether the shipped file is what it gives.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from bench_capture import SETS, Score, holds, score_session, transcript_of  # noqa: E402

from vaultmem.agent.capture_learned import (  # noqa: E402
    CLASSIFIER_FILE,
    Classifier,
    Sentence,
    features,
    settle,
)
from vaultmem.agent.capture_rules import Said, Spotted, spot  # noqa: E402
from vaultmem.agent.capture_vectors import semantic_spotted  # noqa: E402
from vaultmem.agent.extract import turn_chunks  # noqa: E402
from vaultmem.agent.transcript import read_entries  # noqa: E402
from vaultmem.memory.remember import content_key  # noqa: E402

# Chosen by the leave-one-set-out mean among 0.01, 0.1, 0.3 and 1.0 (and with the frame
# vector's 384 numbers as features too, which did no better: the prototype verdict on the
# frame, one feature, carries what they add).
L2 = 0.1
THRESHOLDS = tuple(round(0.5 + 0.025 * i, 3) for i in range(20))
RULE_THRESHOLDS = (0.0, 0.2, 0.4, 0.5, 0.6, 0.7, 0.8)
GRID = tuple((t, r) for t in THRESHOLDS for r in RULE_THRESHOLDS)
TARGET, FALLBACK = 0.90, 0.85


class CachedEmbedder:
    """The in-process MiniLM, each text embedded once per process."""

    def __init__(self) -> None:
        from vaultmem.inference.local import LocalEmbedder

        self.inner = LocalEmbedder()
        self.cache: dict[str, list[float]] = {}

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    @property
    def max_chars(self) -> int:
        return self.inner.max_chars

    def embed(self, texts: Sequence[str], *, query: bool = False) -> list[list[float]]:
        todo = sorted({t for t in texts if t not in self.cache})
        for text, vector in zip(todo, self.inner.embed(todo) if todo else [], strict=True):
            self.cache[text] = vector
        return [self.cache[t] for t in texts]


@dataclass
class Chunk:
    """One chunk of a session: its turns, candidates, their features and labels."""

    turns: tuple[Said, ...]
    found: list[Sentence]
    spotted: list[Spotted | None]  # the rule's memory, None for a candidate
    verdicts: list[Any]
    labels: list[int]


@dataclass
class Session:
    gold: dict[str, Any]
    chunks: list[Chunk]
    weight: float = 1.0  # each set weighs alike in the fit, however many candidates it has


def _label(text: str, gold: dict[str, Any]) -> int:
    return int(any(holds(text, m["keywords"]) for m in gold["memories"]))


@lru_cache(maxsize=1)
def embedder() -> CachedEmbedder:
    return CachedEmbedder()


def load_set(name: str) -> list[Session]:
    """The sessions of set ``name`` with their candidates' features and labels."""
    data = SETS[name]
    golds = [json.loads(line) for line in (data / "gold.jsonl").read_text().splitlines() if line]
    out: list[Session] = []
    for gold in golds:
        chunks: list[Chunk] = []
        for chunk in turn_chunks(read_entries(transcript_of(data, gold["session"]))):
            found, spotted, verdicts = features(chunk.turns, embedder())
            labels = [_label(s.memory_text, gold) for s in found]
            chunks.append(Chunk(chunk.turns, found, spotted, verdicts, labels))
        out.append(Session(gold, chunks))
    rows = sum(len(c.found) for session in out for c in session.chunks)
    for session in out:
        session.weight = 1000 / rows
    return out


def table(sessions: Sequence[Session]) -> tuple[Any, Any, Any]:
    """Features, labels and weights of every candidate of ``sessions``."""
    rows = [s.cues for se in sessions for c in se.chunks for s in c.found]
    labels = [y for se in sessions for c in se.chunks for y in c.labels]
    weights = [se.weight for se in sessions for c in se.chunks for _ in c.found]
    return np.asarray(rows), np.asarray(labels, float), np.asarray(weights)


def fit(
    sessions: Sequence[Session], threshold: float, rule_threshold: float, *, l2: float = L2
) -> Classifier:
    """The logistic regression on ``sessions``' candidates (deterministic)."""
    cues, y, weight = table(sessions)
    mean = cues.mean(axis=0)
    scale = cues.std(axis=0)
    scale[scale < 1e-9] = 1.0
    x = (cues - mean) / scale
    share = float(y.mean())
    balance = np.where(y == 1, 0.5 / share, 0.5 / (1 - share)) * weight / weight.mean()
    weights = np.zeros(x.shape[1])
    bias = 0.0
    for _ in range(3000):
        error = (1 / (1 + np.exp(-(x @ weights + bias))) - y) * balance
        weights -= 0.5 * (x.T @ error / len(y) + l2 * weights)
        bias -= 0.5 * float(error.mean())

    def r(values: Any) -> tuple[float, ...]:
        return tuple(round(float(v), 6) for v in values)

    return Classifier(
        r(mean),
        r(scale),
        r(weights),
        round(bias, 6),
        threshold,
        rule_threshold,
    )


def score(sessions: Sequence[Session], mode: str, model: Classifier | None = None) -> Score:
    """``sessions`` scored as ``bench_capture.py`` does, with captures of ``mode``:
    "rules", "prototypes" (the layer of capture_vectors) or "learned" (``model``)."""
    total = Score()
    for session in sessions:
        captured: list[tuple[str, str]] = []
        seen: set[str] = set()
        for chunk in session.chunks:
            if mode == "learned" and model is not None and chunk.found:
                chances = list(model.scores([s.cues for s in chunk.found]))
                found = settle(
                    chunk.turns, chunk.found, chunk.spotted, chunk.verdicts, chances, model
                )
            elif mode == "prototypes":
                found = spot(chunk.turns, semantic_spotted(chunk.turns, embedder()))
            else:
                found = spot(chunk.turns)
            for kind, text in [(s.kind, s.text) for s in found]:
                key = content_key(text)
                if key and key not in seen:
                    seen.add(key)
                    captured.append((kind, text))
        score_session(total, session.gold, captured)
    return total


def _with(model: Classifier, threshold: float, rule_threshold: float) -> Classifier:
    return replace(model, threshold=threshold, rule_threshold=rule_threshold)


def loso(sets: dict[str, list[Session]]) -> dict[str, dict[str, Score]]:
    """Per held-out set: the rules, the prototype layer, and the learned layer fitted on
    the other sets at each of :data:`THRESHOLDS` (keys ``learned@t``)."""
    out: dict[str, dict[str, Score]] = {}
    for name, held in sets.items():
        rest = [s for other, sessions in sets.items() if other != name for s in sessions]
        model = fit(rest, THRESHOLDS[0], RULE_THRESHOLDS[0])
        row = {"rules": score(held, "rules"), "prototypes": score(held, "prototypes")}
        for t, r in GRID:
            row[f"learned@{t}/{r}"] = score(held, "learned", _with(model, t, r))
        out[name] = row
    return out


def mean(results: dict[str, dict[str, Score]], key: str) -> tuple[float, float]:
    """Mean recall and precision over the held-out sets."""
    rows = [r[key] for r in results.values()]
    return (
        sum(s.recall for s in rows) / len(rows),
        sum(s.precision for s in rows) / len(rows),
    )


def _key(point: tuple[float, float]) -> str:
    return f"learned@{point[0]}/{point[1]}"


def operating_point(results: dict[str, dict[str, Score]]) -> tuple[tuple[float, float], float]:
    """((threshold, rule threshold), the precision floor met): highest mean recall at mean
    precision ≥ :data:`TARGET`, else ≥ :data:`FALLBACK`, else the most precise point."""
    for floor in (TARGET, FALLBACK):
        ok = [g for g in GRID if mean(results, _key(g))[1] >= floor]
        if ok:
            return max(ok, key=lambda g: (mean(results, _key(g))[0], g)), floor
    return max(GRID, key=lambda g: mean(results, _key(g))[1]), 0.0


def load_all() -> dict[str, list[Session]]:
    return {name: load_set(name) for name in ("own", "round1", "round2", "round3")}


def _cell(s: Score) -> str:
    return f"{s.recall:.2f} / {s.precision:.2f}"


def report(results: dict[str, dict[str, Score]], curve: bool) -> tuple[float, float]:
    point, floor = operating_point(results)
    names = list(results)
    print("| held-out set | " + " | ".join(names) + " | mean |")
    print("|---|" + "---:|" * (len(names) + 1))
    keys = [("rules", "rules"), ("prototypes", "rules + prototype layer (old)")]
    keys.append((_key(point), f"rules + learned layer @ {point[0]} (rules @ {point[1]})"))
    for key, label in keys:
        cells = [_cell(results[n][key]) for n in names]
        r, p = mean(results, key)
        print(f"| {label} | " + " | ".join(cells) + f" | {r:.2f} / {p:.2f} |")
    print(f"(recall / precision; operating point: mean precision >= {floor:.2f})")
    if curve:
        print("\n| threshold | rule threshold | mean recall | mean precision |")
        print("|---:|---:|---:|---:|")
        for g in GRID:
            r, p = mean(results, _key(g))
            print(f"| {g[0]} | {g[1]} | {r:.3f} | {p:.3f} |")
    return point


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--curve", action="store_true", help="print the threshold curve")
    what = parser.add_mutually_exclusive_group()
    what.add_argument("--write", action="store_true", help="fit on all sets, write the file")
    what.add_argument("--check", action="store_true", help="the shipped file is what --write gives")
    args = parser.parse_args()
    sets = load_all()
    point = report(loso(sets), args.curve)
    if args.write or args.check:
        model = fit([s for sessions in sets.values() for s in sessions], *point)
        text = json.dumps(model.to_json(), indent=1) + "\n"
        if args.write:
            CLASSIFIER_FILE.write_text(text, encoding="utf-8")
            print(f"wrote {CLASSIFIER_FILE.relative_to(REPO)} (thresholds {point})")
        elif not _same(json.loads(CLASSIFIER_FILE.read_text(encoding="utf-8")), model.to_json()):
            sys.exit(f"{CLASSIFIER_FILE.relative_to(REPO)} differs from what --write gives")
        else:
            print("shipped classifier: as --write gives it")


def _same(shipped: Any, fitted: Any) -> bool:
    """Whether two classifier files agree: the same names, thresholds and shape, and
    every number within 1e-4 (the embeddings' float sums may differ in the last digits
    between machines and thread counts)."""
    if isinstance(shipped, dict) and isinstance(fitted, dict):
        same_keys = shipped.keys() == fitted.keys()
        return same_keys and all(_same(shipped[k], fitted[k]) for k in shipped)
    if isinstance(shipped, list) and isinstance(fitted, list):
        return len(shipped) == len(fitted) and all(map(_same, shipped, fitted))
    if isinstance(shipped, float) or isinstance(fitted, float):
        return abs(float(shipped) - float(fitted)) <= 1e-4
    return bool(shipped == fitted)


if __name__ == "__main__":
    main()
