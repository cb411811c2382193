"""The quality score's signal words in a cold index: lowercased text with case-sensitive
patterns (now) against the case-insensitive patterns (before issue 21).

    python benchmarks/bench_quality.py [--vault /tmp/devvault] [--repeats 5]

Each round rebuilds the index of the vault in this process with one worker (so cProfile
sees every note), once with each variant, interleaved; "before" swaps the old function
in. Prints the median CPU seconds of the whole cold index, the median cumulative seconds
cProfile gives ``quality_breakdown`` and the signal-word matching in it, and whether the
two variants stored the same quality score for every note.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import re
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common import make_vault  # noqa: E402

from vaultmem import quality as ql  # noqa: E402
from vaultmem.config import build  # noqa: E402
from vaultmem.index import manifest as mf  # noqa: E402
from vaultmem.indexer import index_vault  # noqa: E402

_DECISION_IGNORECASE = re.compile(ql._DECISION_WORDS, re.IGNORECASE)
_CORRECTION_IGNORECASE = re.compile(ql._CORRECTION_WORDS, re.IGNORECASE)


def before(text: str) -> tuple[set[str], set[str]]:
    """The signal words as quality_breakdown found them before issue 21."""
    decisions = {m.group(1).lower() for m in _DECISION_IGNORECASE.finditer(text)}
    return decisions, {m.group(1).lower() for m in _CORRECTION_IGNORECASE.finditer(text)}


def cold_index(vault: Path, profile: bool) -> tuple[float, dict[str, float], dict[str, float]]:
    """(CPU seconds, {function: cumulative seconds} when profiled, {note: quality})."""
    config = build(vault, {})
    cpu = time.process_time()
    profiler = cProfile.Profile() if profile else None
    if profiler:
        profiler.enable()
    index_vault(config, rebuild=True, workers=1)
    if profiler:
        profiler.disable()
    cpu = time.process_time() - cpu
    cumulative: dict[str, float] = {}
    if profiler:
        stats = pstats.Stats(profiler)
        for (_file, _line, name), row in stats.stats.items():  # type: ignore[attr-defined]
            if name in ("quality_breakdown", "signal_words", "before"):
                cumulative[name] = cumulative.get(name, 0.0) + row[3]
    scores = {path: e.quality for path, e in mf.load(config.cache_dir).entries.items()}
    return cpu, cumulative, scores


def main() -> None:
    """Run the interleaved rounds and print a table."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--vault", type=Path, default=None, help="default: the dev vault")
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    vault = args.vault or make_vault("dev")
    now = ql.signal_words
    cpu: dict[str, list[float]] = {"before": [], "now": []}
    prof: dict[str, list[dict[str, float]]] = {"before": [], "now": []}
    scores: dict[str, dict[str, float]] = {}
    for _ in range(args.repeats):
        for variant, fn in (("before", before), ("now", now)):
            ql.signal_words = fn  # quality_breakdown looks the name up at each call
            cpu[variant].append(cold_index(vault, profile=False)[0])
            _, cumulative, scores[variant] = cold_index(vault, profile=True)
            prof[variant].append(cumulative)
    ql.signal_words = now
    notes = len(scores["now"])
    same = scores["before"] == scores["now"]
    print(f"vault {vault}: {notes} notes; quality identical for every note: {same}")
    print()
    print(f"| measure (median of {args.repeats}, one worker) | before | now |")
    print("|---|---:|---:|")

    def med(variant: str, name: str) -> float:
        return statistics.median(p.get(name, 0.0) for p in prof[variant])

    b, n = statistics.median(cpu["before"]), statistics.median(cpu["now"])
    print(f"| cold index, CPU seconds | {b:.2f} | {n:.2f} |")
    q_b, q_n = med("before", "quality_breakdown"), med("now", "quality_breakdown")
    print(f"| `quality_breakdown`, cumulative s under cProfile | {q_b:.2f} | {q_n:.2f} |")
    w_b, w_n = med("before", "before"), med("now", "signal_words")
    print(f"| signal words in it, cumulative s under cProfile | {w_b:.2f} | {w_n:.2f} |")


if __name__ == "__main__":
    main()
