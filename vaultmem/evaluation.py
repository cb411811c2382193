"""`eval`: retrieval quality of each search mode against gold queries.

Gold lines are ``{"qid", "query", "relevant": [note ids or paths]}`` (the format of the
benchmark's ``queries.jsonl``). A relevant entry matches a hit by vault path, by path
without ``.md``, or by file stem (``cp.1`` matches ``man1/cp.1.md``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from vaultmem.errors import VaultmemError

METRICS = ("recall@1", "recall@5", "recall@10", "mrr@10", "ndcg@10")


@dataclass(frozen=True)
class GoldQuery:
    """One gold query and the notes that answer it."""

    qid: str
    query: str
    relevant: tuple[str, ...]


def read_gold(path: Path) -> list[GoldQuery]:
    """Parse a gold JSONL file; a bad line is a one-line error naming file and line."""
    out = []
    try:
        lines = path.read_text("utf-8").splitlines()
    except OSError as exc:
        raise VaultmemError(f"{path}: cannot read: {exc.strerror}") from None
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            relevant = row["relevant"]
            if isinstance(relevant, str):
                relevant = [relevant]
            out.append(GoldQuery(str(row.get("qid", number)), str(row["query"]), tuple(relevant)))
        except (ValueError, KeyError, TypeError) as exc:
            raise VaultmemError(
                f"{path}:{number}: not a gold line ({exc}); expected "
                '{"qid": ..., "query": ..., "relevant": [...]}'
            ) from None
    if not out:
        raise VaultmemError(f"{path}: no gold queries")
    return out


def note_keys(path: str) -> set[str]:
    """Every name a gold line may use for the note at ``path``."""
    pure = PurePosixPath(path)
    return {path, str(pure.with_suffix("")), pure.stem}


def ranks_of(ranked: Sequence[str], relevant: Iterable[str]) -> list[int]:
    """1-based ranks at which relevant notes appear in ``ranked`` (paths)."""
    wanted = set(relevant)
    return [i for i, path in enumerate(ranked, start=1) if note_keys(path) & wanted]


def metrics(ranked: Sequence[str], relevant: Sequence[str]) -> dict[str, float]:
    """recall@1/5/10, MRR@10 and nDCG@10 (binary gains) of one ranked list.

    Example:
        >>> metrics(["a.md", "b.md"], ["b"])["mrr@10"]
        0.5
    """
    found = ranks_of(ranked[:10], relevant)
    n = max(1, len(set(relevant)))
    dcg = sum(1 / math.log2(r + 1) for r in found)
    ideal = sum(1 / math.log2(i + 1) for i in range(1, min(n, 10) + 1))
    return {
        "recall@1": sum(1 for r in found if r <= 1) / n,
        "recall@5": sum(1 for r in found if r <= 5) / n,
        "recall@10": len(found) / n,
        "mrr@10": 1 / found[0] if found else 0.0,
        "ndcg@10": dcg / ideal if ideal else 0.0,
    }


@dataclass(frozen=True)
class ModeResult:
    """Mean metrics of one mode, and the queries it missed in the top k."""

    mode: str
    scores: Mapping[str, float]
    misses: tuple[GoldQuery, ...]
    seconds: float


def evaluate(
    gold: Sequence[GoldQuery],
    run: Callable[[str], list[str]],
    *,
    mode: str,
    k: int = 10,
    clock: Callable[[], float] | None = None,
) -> ModeResult:
    """Run every gold query through ``run`` (query → ranked paths) and average the metrics."""
    import time

    tick = clock or time.perf_counter
    started = tick()
    totals = dict.fromkeys(METRICS, 0.0)
    misses = []
    for q in gold:
        ranked = run(q.query)[:k]
        for name, value in metrics(ranked, q.relevant).items():
            totals[name] += value
        if not ranks_of(ranked, q.relevant):
            misses.append(q)
    count = len(gold)
    return ModeResult(
        mode,
        {name: total / count for name, total in totals.items()},
        tuple(misses),
        tick() - started,
    )
