"""Memory-aware ranking: a bounded prior over relevance, supersession, and review slots.

Relevance comes first (SPEC §2.3). A ranked list of ``(path, score)`` from any retrieval
mode is normalised so the top result has relevance 1; each note's memory prior
(recency, confidence as faded since its last confirmation, quality;
:func:`vaultmem.scores.memory_prior`) and pin move it by
at most the prior weight (:func:`vaultmem.scores.ranked_score`). Superseded notes lose a
full weight and are placed below their successor when both are found. Forgotten and
archived notes never appear (unless the caller asked for that status).

Versions of one memory: a memory restated later without ``supersedes`` (the port that
moved, the owner who changed) leaves two active notes that answer the same question, and
recency cannot order them when their type never decays. Among the results shown, an
active typed memory that a newer one restates (same type, tags on one subject, the same
query words: :func:`vaultmem.scores.restates`) is listed just below it, unless it is
pinned or was confirmed after the newer one was written. ``--explain`` names the newer
version.

Review blending (CortexGraph's natural spaced repetition): up to ``review_share`` of the
result slots go to notes in the decay danger zone that match the query well (relevance
≥ ``REVIEW_MIN_RELEVANCE``), taken from below the cut, so using a result reinforces a
memory that is about to fade. Every danger-zone result is marked ``review``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from functools import cache
from pathlib import PurePosixPath

from vaultmem import scores
from vaultmem.index.manifest import Entry
from vaultmem.memory_state import NoteMemory, note_memory
from vaultmem.model import HIDDEN_STATUSES, Hit

__all__ = [
    "REVIEW_MIN_RELEVANCE",
    "REVIEW_SHARE",
    "NoteWords",
    "QueryTerms",
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
    newer_version: str = ""  # the path of the newer version listed above this one


@dataclass(frozen=True)
class NoteWords:
    """What the versions rule reads of a note: the query terms it holds (from its title,
    aliases, tags and body) and its tags."""

    terms: frozenset[str]
    tags: frozenset[str]


@dataclass(frozen=True)
class QueryTerms:
    """A query's words as the versions rule compares two notes by them.

    ``weigh``: each analysed query term (question words dropped) and its weight, the
    keyword index's IDF where there is one, else 1; asked for only when two typed
    memories on one subject are compared, so most searches never look terms up.
    ``read``: a note's :class:`NoteWords`, called only for the typed memories compared.
    """

    weigh: Callable[[], Mapping[str, float]]
    read: Callable[[str], NoteWords]


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
    """Move each superseded note to just below its successor when the successor is listed.

    The successor takes the superseded note's score when that is higher, so a route that
    sorts by score (why) keeps the current note first.
    """
    out = list(order)
    for path in [r.path for r in order]:
        memory = memories.get(path)
        if memory is None or not memory.superseded_by:
            continue
        wanted = {t.lower() for t in memory.superseded_by}
        at = next(i for i, r in enumerate(out) if r.path == path)
        item = out[at]
        successors = [i for i, other in enumerate(out) if _names(other.path) & wanted]
        if successors and max(successors) > at:
            last = max(successors)
            out[last] = replace(out[last], score=max(out[last].score, item.score))
            out.pop(at)
            out.insert(last, item)  # the successor shifted up by one
    return out


def _restated(
    older: NoteMemory,
    newer: NoteMemory,
    read: Callable[[str], NoteWords],
    weigh: Callable[[], Mapping[str, float]],
) -> bool:
    """Whether ``newer`` is a later version of the memory ``older`` holds, for this query."""
    if not (older.typed and newer.typed) or older.type != newer.type:
        return False
    if older.retired or newer.retired or older.pinned:
        return False
    if older.stated is None or newer.stated is None or newer.stated <= older.stated:
        return False
    old, new = read(older.path), read(newer.path)
    if not scores.same_subject_tags(old.tags, new.tags):
        return False
    return scores.restates(old.terms, new.terms, weigh())


def _newest_version(
    out: list[Ranked],
    i: int,
    head: int,
    memories: Mapping[str, NoteMemory],
    restated: Callable[[NoteMemory, NoteMemory], bool],
) -> int | None:
    """The position (after ``i``, before ``head``) of the newest version of ``out[i]``."""
    older = memories.get(out[i].path)
    if older is None:
        return None
    found = [
        (m.stated, j)
        for j in range(i + 1, head)
        if (m := memories.get(out[j].path)) is not None and restated(older, m)
    ]
    return max(found)[1] if found else None


def _versions_first(
    order: list[Ranked], memories: Mapping[str, NoteMemory], terms: QueryTerms, head: int
) -> list[Ranked]:
    """Within the first ``head`` results, list each memory's newest version before it."""
    read, weigh = cache(terms.read), cache(terms.weigh)

    def restated(older: NoteMemory, newer: NoteMemory) -> bool:
        return _restated(older, newer, read, weigh)

    out = list(order)
    head = min(head, len(out))
    for i in range(head):
        # Each move puts a strictly newer memory at ``i``, so the loop ends.
        while (j := _newest_version(out, i, head, memories, restated)) is not None:
            newer, older = out.pop(j), out[i]
            out[i] = replace(older, newer_version=newer.path)
            # The newer version takes the older's place and score: a route that sorts by
            # score (why) keeps it first.
            out.insert(i, replace(newer, score=max(newer.score, older.score)))
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
    return replace(item, review=True) if review else item


def rank(
    ranked: Sequence[tuple[str, float]],
    entries: Mapping[str, Entry],
    text: str,
    options: RankingOptions,
    limit: int,
    terms: QueryTerms | None = None,
) -> list[Ranked]:
    """Re-rank ``ranked`` (best first, any score scale) with the notes' memory state.

    ``entries`` gives each path's memory keys (the manifest, or
    :meth:`LexicalIndex.entries`); a path without an entry keeps its relevance.
    ``terms``: the query's words, for listing newer versions of a memory first (None:
    that rule is off). Returns at most ``limit`` results.

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
        if terms is not None:
            scored = _versions_first(scored, memories, terms, limit)
    if options.review_share > 0:
        return _with_review(scored, memories, limit, options)
    return scored[:limit]


def rank_hits(
    hits: Sequence[Hit],
    entries: Mapping[str, Entry],
    text: str,
    options: RankingOptions | None,
    limit: int,
    terms: QueryTerms | None = None,
) -> list[Hit]:
    """:func:`rank` for finished hits: reordered and marked ``review``; scores unchanged.

    ``options`` None leaves the hits as they came (``--no-prior --no-review``).
    """
    if options is None:
        return list(hits[:limit])
    by_path = {h.path: h for h in hits}
    ranked = rank([(h.path, h.score) for h in hits], entries, text, options, limit, terms)
    return [replace(by_path[r.path], review=r.review) for r in ranked]
