"""Capture quality of `extract`: recall and precision against hand-written gold memories.

    python benchmarks/bench_capture.py                    # own set (tuned on)
    python benchmarks/bench_capture.py --set round1       # round 1: written apart, seen since
    python benchmarks/bench_capture.py --set round2       # round 2's held-back set, seen since
    python benchmarks/bench_capture.py --set round3       # round 3's held-back set, seen since
    python benchmarks/bench_capture.py --set round4       # round 4's held-back set, seen since
    python benchmarks/bench_capture.py --data DIR         # any other set, e.g. a held-back one
    python benchmarks/bench_capture.py [...] [--llm] [--verbose]

The sets: **own** (``benchmarks/data/capture``, built from ``src/`` by ``build.py``; the
rules were tuned on it), **round1** (``benchmarks/data/capture/round1``: written apart,
scored once as held-back in round 1 of issue 31, and seen since, so no longer held back),
**round2**, **round3** and **round4** (``benchmarks/data/capture/round2`` …
``round4``: the held-back sets of rounds 2 to 4, each written apart, scored once at its
round's end, seen since).
A held-back set lives outside the repository and is named with ``--data``; ``--verbose``
lists its misses and noise, so whoever tunes the rules should not read that output.

A set's folder holds Claude Code JSONL sessions (``session-*.jsonl``) and ``gold.jsonl``,
one line per session::

    {"session": "session-01-...", "memories": [{"type", "text", "keywords"}],
     "not_memories": ["..."]}

(``session`` names its transcript, with or without ``.jsonl``.)

Each session is run through :func:`vaultmem.agent.extract.extract_transcript` as a dry run
(what would be written, nothing is) on a fresh copy of example-vault: the phrase rules
("rules"), the rules with the learned layer on the in-process MiniLM ("rules+semantic",
:mod:`vaultmem.agent.capture_learned`, what ``[capture] semantic`` turns on;
``--no-semantic`` skips it; its one-time model load and prototype fit happen before the
timed sessions and are printed apart; its weights are fitted on the four sets here, so
only a set outside them is a held-back score, and ``benchmarks/capture_learn.py`` gives
the leave-one-set-out estimate), and with
``--llm`` also SmolLM2-135M on llama-cpp-python's server (the endpoint the tests
start; ``--llm-only`` skips the rules run).

**Matching.** A captured memory *holds* a gold memory of the same session when every
keyword of the gold memory is in the captured text. A keyword is cut into words (runs of
letters, digits and ``_``: ``os.path`` is ``os`` + ``path``, ``1.8%`` is ``1`` + ``8``),
and each word must equal a word of the captured text, compared case-insensitively, without
accents, and stem-tolerant: both sides lose one ending of ``-ing -ed -es -en -er -s -e``
when at least three letters remain (``migrations`` = ``migration``, ``Deployments`` =
``deployment``). Word order does not matter. A keyword word in a script written without
spaces (Japanese, Chinese, Korean, Thai) is held as a substring of the capture.

- **recall** = gold memories held by at least one capture / gold memories;
- **precision** = captures that hold at least one gold memory / captures (a second
  capture of a memory already held counts as correct, and is reported as a duplicate);
- **traps** = captures that share ≥ 60% of the content words of one of the session's
  ``not_memories`` (the hypotheticals, rejected options, quotes and tool output planted
  in it), a subset of the false positives;
- **type agreement** = held gold memories whose first holding capture has the gold type.

A captured memory is at most 600 characters (`extract` refuses longer ones), so a capture
cannot hold a whole conversation's keywords.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import sys
import tempfile
import time
import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from vaultmem.agent.extract import extract_transcript  # noqa: E402
from vaultmem.config import load  # noqa: E402
from vaultmem.inference.base import Embedder  # noqa: E402

DATA = REPO / "benchmarks" / "data" / "capture"
SETS = {
    "own": DATA,
    "round1": DATA / "round1",
    "round2": DATA / "round2",
    "round3": DATA / "round3",
    "round4": DATA / "round4",
}
NOW = datetime(2026, 12, 1, tzinfo=UTC)
_WORD_RE = re.compile(r"\w+")
# Kana, CJK ideographs, Hangul, Thai: their words are not spaced apart.
_UNSPACED = re.compile(r"[\u0e00-\u0e7f\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")
_ENDINGS = ("ing", "ed", "es", "en", "er", "s", "e")
_STOP_WORDS = "a an and are as at be but by for from i if in is it its of on or so that the this"
_STOP = frozenset(_STOP_WORDS.split())


def _plain(word: str) -> str:
    decomposed = unicodedata.normalize("NFKD", word.lower())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def stem(word: str) -> str:
    """``word`` lower-cased, without accents, less one common ending."""
    word = _plain(word)
    for ending in _ENDINGS:
        if word.endswith(ending) and len(word) - len(ending) >= 3:
            return word[: -len(ending)]
    return word


def words(text: str) -> set[str]:
    """The stems of the words of ``text``."""
    return {stem(w) for w in _WORD_RE.findall(text)}


def holds(captured: str, keywords: list[str]) -> bool:
    """Whether ``captured`` holds every keyword (see the module docstring)."""
    have = words(captured)
    plain = unicodedata.normalize("NFKC", captured.lower())

    def held(word: str) -> bool:
        if _UNSPACED.search(word):  # a script written without spaces: a substring
            return unicodedata.normalize("NFKC", word.lower()) in plain
        return stem(word) in have

    return all(held(w) for k in keywords for w in _WORD_RE.findall(k))


def trap_hit(captured: str, trap: str) -> bool:
    """Whether ``captured`` shares ≥ 60% of the content words of ``trap``."""
    want = words(trap) - _STOP
    return bool(want) and len(want & words(captured)) / len(want) >= 0.6


@dataclass
class Score:
    """Counts over sessions."""

    gold: int = 0
    held: int = 0
    captured: int = 0
    correct: int = 0
    duplicates: int = 0
    traps: int = 0
    typed: int = 0
    seconds: list[float] = field(default_factory=list)
    misses: list[str] = field(default_factory=list)
    noise: list[str] = field(default_factory=list)

    @property
    def recall(self) -> float:
        return self.held / self.gold if self.gold else 0.0

    @property
    def precision(self) -> float:
        return self.correct / self.captured if self.captured else 1.0


def score_session(score: Score, gold: dict, captured: list[tuple[str, str]]) -> None:
    """Add one session's captures (type, text) to ``score``."""
    memories = gold["memories"]
    score.gold += len(memories)
    held_by: dict[int, str] = {}
    for kind, text in captured:
        score.captured += 1
        hit = [i for i, m in enumerate(memories) if holds(text, m["keywords"])]
        if hit:
            score.correct += 1
            if all(i in held_by for i in hit):
                score.duplicates += 1
            for i in hit:
                held_by.setdefault(i, kind)
        else:
            score.noise.append(f"{gold['session']}: [{kind}] {text}")
            if any(trap_hit(text, t) for t in gold.get("not_memories", [])):
                score.traps += 1
    score.held += len(held_by)
    score.typed += sum(1 for i, kind in held_by.items() if memories[i]["type"] == kind)
    for i, m in enumerate(memories):
        if i not in held_by:
            score.misses.append(f"{gold['session']}: [{m['type']}] {m['text']}")


def transcript_of(data: Path, session: str) -> Path:
    """The transcript a gold line's ``session`` names (with or without ``.jsonl``)."""
    return data / (session if session.endswith(".jsonl") else f"{session}.jsonl")


@contextmanager
def scratch_vault() -> Iterator[Path]:
    """A fresh copy of example-vault (its cache left behind)."""
    with tempfile.TemporaryDirectory() as tmp:
        vault = Path(tmp) / "vault"
        shutil.copytree(REPO / "example-vault", vault, ignore=shutil.ignore_patterns(".vaultmem"))
        yield vault


def run(data: Path, llm_url: str | None, semantic: Embedder | None = None) -> Score:
    """Score every session of ``data`` with the rules (``llm_url`` None; with
    ``semantic``, the semantic layer too) or the model."""
    from vaultmem.inference.llm import LLMClient, LLMConfig

    golds = [json.loads(line) for line in (data / "gold.jsonl").read_text().splitlines() if line]
    score = Score()
    with scratch_vault() as vault:
        config = load(vault_flag=str(vault), env={"HOME": str(vault.parent)}, cwd=vault)
        llm = LLMClient(LLMConfig(url=llm_url, model="smollm2", timeout=300)) if llm_url else None
        for gold in golds:
            transcript = transcript_of(data, gold["session"])
            start = time.perf_counter()
            report = extract_transcript(
                config, transcript, llm=llm, now=NOW, dry_run=True, semantic=semantic
            )
            score.seconds.append(time.perf_counter() - start)
            captured = [(m.candidate.type, m.candidate.text) for m in report.memories]
            score_session(score, gold, captured)
    return score


def _warm_minilm() -> Embedder:
    """The in-process MiniLM with the semantic layer's classifier fitted (timed apart)."""
    from vaultmem.agent.capture_vectors import classify
    from vaultmem.inference.local import LocalEmbedder

    embedder = LocalEmbedder()
    start = time.perf_counter()
    classify(["We deploy from the main branch."], embedder)
    print(f"semantic layer: model load and prototype fit {time.perf_counter() - start:.2f} s")
    return embedder


def _row(label: str, s: Score) -> str:
    return (
        f"| {label} | {s.gold} | {s.captured} | {s.held} | {s.recall:.2f} | {s.precision:.2f} "
        f"| {s.duplicates} | {s.traps} | {s.typed}/{s.held} | "
        f"{statistics.median(s.seconds) * 1000:.0f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--set", choices=sorted(SETS), default="own", help="a set in the repository (own)"
    )
    where.add_argument("--data", type=Path, help="a set's folder (sessions and gold.jsonl)")
    parser.add_argument("--llm", action="store_true", help="also run SmolLM2 (llama-cpp)")
    parser.add_argument("--llm-only", action="store_true", help="only the SmolLM2 run")
    parser.add_argument("--no-semantic", action="store_true", help="skip the rules+semantic run")
    parser.add_argument("-v", "--verbose", action="store_true", help="list misses and noise")
    args = parser.parse_args()
    data = (args.data or SETS[args.set]).resolve()
    if not (data / "gold.jsonl").is_file():
        parser.error(f"{data}: no gold.jsonl there (a set is sessions plus gold.jsonl)")
    runs: list[tuple[str, Score]] = []
    if not args.llm_only:
        runs.append(("rules", run(data, None)))
        if not args.no_semantic:
            runs.append(("rules+semantic", run(data, None, _warm_minilm())))
    if args.llm or args.llm_only:
        from bench_expansion import smollm2_server

        with smollm2_server(n_ctx=4096) as url:
            runs.append(("SmolLM2-135M", run(data, url)))
    sessions = len((data / "gold.jsonl").read_text().splitlines())
    print(f"{data.relative_to(REPO) if data.is_relative_to(REPO) else data}: {sessions} sessions")
    print("| path | gold | captured | held | recall | precision | dup | traps | type | p50 ms |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for label, s in runs:
        print(_row(label, s))
    if args.verbose:
        for label, s in runs:
            print(f"\n## {label}: missed\n" + "\n".join(s.misses))
            print(f"\n## {label}: noise\n" + "\n".join(s.noise))


if __name__ == "__main__":
    main()
