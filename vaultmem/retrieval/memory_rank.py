"""Memory-aware ranking: a bounded prior over relevance, supersession, and review slots.

Relevance comes first (SPEC §2.3). A ranked list of ``(path, score)`` from any retrieval
mode is normalised so the top result has relevance 1; each note's memory prior
(recency, confidence as faded since its last confirmation, quality;
:func:`vaultmem.scores.memory_prior`) and pin move it by
at most the prior weight (:func:`vaultmem.scores.ranked_score`). Superseded notes lose a
full weight and are placed below their successor when both are found. Forgotten and
archived notes never appear (unless the caller asked for that status).

Review blending (CortexGraph's natural spaced repetition): up to ``review_share`` of the
result slots go to notes in the decay danger zone that match the query well (relevance
≥ ``REVIEW_MIN_RELEVANCE``), taken from below the cut, so using a result reinforces a
memory that is about to fade. Every danger-zone result is marked ``review``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import PurePosixPath

from vaultmem import scores
from vaultmem.index.manifest import Entry
from vaultmem.memory_state import NoteMemory, note_memory
from vaultmem.model import HIDDEN_STATUSES, Hit

__all__ = [
    "REVIEW_MIN_RELEVANCE",
    "REVIEW_SHARE",
    "Ranked",
    "RankingOptions",
    "rank",
    "rank_hits",
]

REVIEW_SHARE = 0.3
# A review candidate must match the query about as well as the results it displaces.
REVIEW_MIN_RELEVANCE = 0.5


@dataclass(frozen=True)
class RankingOptions:
    """How memory signals shape one ranking. ``weight`` 0 turns the prior off,
    ``review_share`` 0 turns review slots off."""

    now: datetime
    weight: float = scores.PRIOR_WEIGHT
    review_share: float = REVIEW_SHARE
    show_status: str | None = None  # a --status filter: that hidden status may show


@dataclass(frozen=True)
class Ranked:
    """One result after memory-aware ranking, with what moved it."""

    path: str
    score: float
    relevance: float
    prior: float
    pinned: bool = False
    superseded: bool = False
    review: bool = False


def _relevances(ranked: Sequence[tuple[str, float]]) -> list[float]:
    top = max((score for _, score in ranked), default=0.0)
    if top <= 0:
        return [1.0 for _ in ranked]
    return [max(0.0, score / top) for _, score in ranked]


def _score(
    path: str, relevance: float, memory: NoteMemory | None, text: str, options: RankingOptions
) -> Ranked:
    if memory is None:
        return Ranked(path, relevance, relevance, 0.5)
    recent = scores.asks_for_recency(text)
    prior = scores.memory_prior(
        scores.recency(memory.state, options.now),
        memory.effective_confidence(options.now),
        memory.quality,
        recency_query=recent,
    )
    superseded = memory.status == "superseded" or bool(memory.superseded_by)
    weight = options.weight
    if recent and weight > 0:
        weight = max(weight, scores.RECENCY_QUERY_WEIGHT)
    final = scores.ranked_score(
        relevance, prior, weight=weight, pinned=memory.pinned, superseded=superseded
    )
    return Ranked(path, final, relevance, prior, memory.pinned, superseded)


def _names(path: str) -> set[str]:
    return {PurePosixPath(path).stem.lower(), path.removesuffix(".md").lower()}


def _below_successors(order: list[Ranked], memories: Mapping[str, NoteMemory]) -> list[Ranked]:
    """Move each superseded note to just below its successor when the successor is listed."""
    out = list(order)
    for item in order:
        memory = memories.get(item.path)
        if memory is None or not memory.superseded_by:
            continue
        wanted = {t.lower() for t in memory.superseded_by}
        at = out.index(item)
        successors = [i for i, other in enumerate(out) if _names(other.path) & wanted]
        if successors and max(successors) > at:
            out.pop(at)
            out.insert(max(successors), item)  # the successor shifted up by one
    return out


def _in_danger_zone(memory: NoteMemory | None, now: datetime) -> float:
    if memory is None or memory.status not in ("active", "promoted"):
        return 0.0
    if memory.snoozed(now):
        return 0.0
    return scores.review_priority(scores.decay_score(memory.state, now))


def _with_review(
    order: list[Ranked],
    memories: Mapping[str, NoteMemory],
    limit: int,
    options: RankingOptions,
) -> list[Ranked]:
    """Mark danger-zone results and give up to ``review_share`` of the slots to them."""
    priority = {r.path: _in_danger_zone(memories.get(r.path), options.now) for r in order}
    shown, rest = order[:limit], order[limit:]
    slots = int(limit * options.review_share) - sum(1 for r in shown if priority[r.path] > 0)
    extra = sorted(
        (r for r in rest if priority[r.path] > 0 and r.relevance >= REVIEW_MIN_RELEVANCE),
        key=lambda r: -priority[r.path],
    )[: max(slots, 0)]
    drop = len(shown) + len(extra) - limit
    for i in range(len(shown) - 1, -1, -1):
        # Review slots replace the lowest results that are not themselves reviews.
        if drop <= 0:
            break
        if priority[shown[i].path] <= 0:
            shown.pop(i)
            drop -= 1
    shown = shown + extra
    return [_mark(r, priority[r.path] > 0) for r in shown]


def _mark(item: Ranked, review: bool) -> Ranked:
    if not review:
        return item
    return Ranked(
        item.path, item.score, item.relevance, item.prior, item.pinned, item.superseded, True
    )


def rank(
    ranked: Sequence[tuple[str, float]],
    entries: Mapping[str, Entry],
    text: str,
    options: RankingOptions,
    limit: int,
) -> list[Ranked]:
    """Re-rank ``ranked`` (best first, any score scale) with the notes' memory state.

    ``entries`` gives each path's memory keys (the manifest, or
    :meth:`LexicalIndex.entries`); a path without an entry keeps its relevance.
    Returns at most ``limit`` results.

    Example:
        >>> rank([("a.md", 12.0), ("b.md", 11.9)], entries, "cache", opts, 10)  # doctest: +SKIP
    """
    memories = {p: note_memory(p, entries[p]) for p, _ in ranked if p in entries}
    visible = []
    for (path, score), relevance in zip(ranked, _relevances(ranked), strict=True):
        memory = memories.get(path)
        status = memory.status if memory else "active"
        if status in HIDDEN_STATUSES and status != options.show_status:
            continue
        visible.append((path, score, relevance))
    scored = [_score(p, rel, memories.get(p), text, options) for p, _, rel in visible]
    if options.weight > 0:
        order = sorted(enumerate(scored), key=lambda item: (-item[1].score, item[0]))
        scored = _below_successors([r for _, r in order], memories)
    if options.review_share > 0:
        return _with_review(scored, memories, limit, options)
    return scored[:limit]


def rank_hits(
    hits: Sequence[Hit],
    entries: Mapping[str, Entry],
    text: str,
    options: RankingOptions | None,
    limit: int,
) -> list[Hit]:
    """:func:`rank` for finished hits: reordered and marked ``review``; scores unchanged.

    ``options`` None leaves the hits as they came (``--no-prior --no-review``).
    """
    if options is None:
        return list(hits[:limit])
    by_path = {h.path: h for h in hits}
    ranked = rank([(h.path, h.score) for h in hits], entries, text, options, limit)
    return [replace(by_path[r.path], review=r.review) for r in ranked]
