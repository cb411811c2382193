"""Memory-aware ranking: a bounded prior over relevance, supersession, and review slots.

Relevance comes first (SPEC §2.3). A ranked list of ``(path, score)`` from any retrieval
mode is normalised so the top result has relevance 1; each note's memory prior
(recency, confidence as faded since its last confirmation, quality;
:func:`vaultmem.scores.memory_prior`) and pin move it by
at most the prior weight (:func:`vaultmem.scores.ranked_score`). Superseded notes lose a
full weight, and when their successor is found too they are listed just below it, at its
score. Forgotten and archived notes never appear (unless the caller asked for that
status).

Contradictions: of two results linked ``contradicts``, the one stated later is listed
first when the two are about equally relevant (the later within
:data:`CONTRADICTION_TIE` of the earlier's relevance, or near-duplicates by the caller's
``alike``): the contradicted note lost confidence, but the prior is bounded, and on a
near tie it must not keep the stale fact on top. The later note takes the earlier's place
and score; ``--explain`` names it.

Every result's ``score`` is the one it is ranked by, so scores fall down the list;
:attr:`Ranked.scaled` gives it in the retrieval's units (BM25, cosine): relevance 1 is
the best retrieval score, and without a prior a result scores its retrieval score.

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

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from functools import cache
from pathlib import PurePosixPath

from vaultmem import scores
from vaultmem.index.manifest import Entry
from vaultmem.memory_state import NoteMemory, note_memory
from vaultmem.model import HIDDEN_STATUSES, Hit
from vaultmem.note import link_targets
from vaultmem.tuning import DEFAULT_TUNING, MemoryTuning

__all__ = [
    "CONTRADICTION_TIE",
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
# Two notes that contradict each other are "about equally relevant" when the later one's
# relevance is at least this share of the earlier's: a restatement of one fact differs in
# a word or two (26.31 against 26.55 BM25), a note on another side of it far more.
CONTRADICTION_TIE = 0.9


@dataclass(frozen=True)
class RankingOptions:
    """How memory signals shape one ranking. ``weight`` 0 turns the prior off,
    ``review_share`` 0 turns review slots off."""

    now: datetime
    weight: float = scores.PRIOR_WEIGHT
    review_share: float = REVIEW_SHARE
    show_status: str | None = None  # a --status filter: that hidden status may show
    tuning: MemoryTuning = DEFAULT_TUNING  # β and the danger zone of review


@dataclass(frozen=True)
class Ranked:
    """One result after memory-aware ranking, with what moved it.

    ``score``: what the result is ranked by, on the relevance scale (best retrieval
    score = 1); ``relevance`` the retrieval part of it, ``prior`` the memory prior from
    ``recency``, ``confidence`` and ``quality`` (None: the note has no memory state) at
    ``weight``. ``retrieval`` is the score it came in with and ``position`` its rank
    there (1-based); ``scale`` the best retrieval score.
    """

    path: str
    score: float
    relevance: float
    prior: float
    pinned: bool = False
    superseded: bool = False
    review: bool = False
    newer_version: str = ""  # the path of the newer version listed above this one
    successor: str = ""  # the note that superseded it, listed just above it
    contradicted_by: str = ""  # the later note that contradicts it, listed above it
    retrieval: float = 0.0
    position: int = 0
    scale: float = 1.0
    weight: float = 0.0
    recency: float | None = None
    confidence: float | None = None
    quality: float | None = None

    @property
    def scaled(self) -> float:
        """The ranking score in the retrieval's units (BM25, cosine, fused)."""
        return self.score * self.scale

    def as_json(self) -> dict[str, object]:
        """What the prior did, for ``--explain --json``: the retrieval score and rank it
        came in with, its relevance, the prior and its parts, the score it ranks by
        (``score``, relevance scale; ``scaled``, retrieval units) and what moved it."""
        parts = {"recency": self.recency, "confidence": self.confidence, "quality": self.quality}
        return {
            "retrieval": round(self.retrieval, 6),
            "position": self.position,
            "relevance": round(self.relevance, 6),
            "prior": round(self.prior, 6),
            "factors": {k: None if v is None else round(v, 6) for k, v in parts.items()},
            "weight": self.weight,
            "score": round(self.score, 6),
            "scaled": round(self.scaled, 6),
            "pinned": self.pinned,
            "superseded": self.superseded,
            "review": self.review,
            "newer_version": self.newer_version or None,
            "successor": self.successor or None,
            "contradicted_by": self.contradicted_by or None,
        }


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


def _scale(ranked: Sequence[tuple[str, float]]) -> float:
    """The best retrieval score: relevance 1 (any positive number; 1 when none is)."""
    top = max((score for _, score in ranked), default=0.0)
    return top if top > 0 else 1.0


def _relevances(ranked: Sequence[tuple[str, float]]) -> list[float]:
    top = max((score for _, score in ranked), default=0.0)
    if top <= 0:
        return [1.0 for _ in ranked]
    return [max(0.0, score / top) for _, score in ranked]


def _score(
    came: tuple[str, float, int],
    relevance: float,
    scale: float,
    memory: NoteMemory | None,
    recent: bool,
    options: RankingOptions,
) -> Ranked:
    """One result scored: ``came`` is its path, retrieval score and rank there."""
    path, retrieval, position = came
    if memory is None:
        return Ranked(
            path, relevance, relevance, 0.5, retrieval=retrieval, position=position, scale=scale
        )
    # A query for what is recent weighs how recent a note is, not whether it decays; a
    # pin still counts at the prior's own weight, not at the raised one.
    age = scores.age_recency if recent else scores.recency
    recency = age(memory.state, options.now)
    confidence = memory.effective_confidence(options.now)
    prior = scores.memory_prior(recency, confidence, memory.quality, recency_query=recent)
    superseded = memory.status == "superseded" or bool(memory.superseded_by)
    weight = options.weight
    if recent and weight > 0:
        weight = max(weight, scores.RECENCY_QUERY_WEIGHT)
    final = scores.ranked_score(
        relevance,
        prior,
        weight=weight,
        pinned=memory.pinned,
        superseded=superseded,
        # A recency query raises the prior's weight, not the pin's (a pinned hub must not
        # outrank the handoffs such a query asks for).
        pin_bonus=options.weight * scores.PIN_SHARE if weight != options.weight else None,
    )
    return Ranked(
        path,
        final,
        relevance,
        prior,
        memory.pinned,
        superseded,
        retrieval=retrieval,
        position=position,
        scale=scale,
        weight=weight,
        recency=recency,
        confidence=confidence,
        quality=memory.quality,
    )


def _names(path: str) -> set[str]:
    return {PurePosixPath(path).stem.lower(), path.removesuffix(".md").lower()}


def _take_place(out: list[Ranked], at: int, j: int, older: Ranked) -> None:
    """Move ``out[j]`` (listed below ``at``) to ``at``, taking the score of ``older``, the
    result there, when it is higher; ``older`` goes just below. Scores still fall down
    the list, and a route that sorts by score (why) keeps the moved note first. For a
    later version of the same memory or fact, never for a successor (see
    :func:`_below_successors`)."""
    moved = out.pop(j)
    out[at] = older
    out.insert(at, replace(moved, score=max(moved.score, older.score)))


def _below_successors(order: list[Ranked], memories: Mapping[str, NoteMemory]) -> list[Ranked]:
    """List each superseded note just below its lowest-placed successor, at that
    successor's score (so scores still fall down the list, and a route that sorts by
    score keeps the current note first). The successor keeps its own place: lifting it
    to the superseded note's would put a note about something else first ("ledger
    ownership handed to Mei" for "what is Henrik responsible for?")."""
    out = list(order)
    for _ in range(len(out)):  # a chain of successors settles in as many passes
        moved = False
        for path in [r.path for r in out]:
            memory = memories.get(path)
            if memory is None or not memory.superseded_by:
                continue
            wanted = {t.lower() for t in memory.superseded_by}
            at = next(i for i, r in enumerate(out) if r.path == path)
            successors = [i for i, other in enumerate(out) if _names(other.path) & wanted]
            if successors and max(successors) > at:
                last = max(successors)
                item = out.pop(at)  # the successor shifts up by one, to last - 1
                successor = out[last - 1]
                score = min(item.score, successor.score)
                out.insert(last, replace(item, score=score, successor=successor.path))
                moved = True
        if not moved:
            break
    return out


def _contradicting(entry: Entry | None) -> set[str]:
    """The names a note's ``contradicts`` list holds, lowercased."""
    if entry is None:
        return set()
    return {t.lower() for t in link_targets(entry.memory.get("contradicts"))}


def _later_contradicting_first(
    order: list[Ranked],
    memories: Mapping[str, NoteMemory],
    entries: Mapping[str, Entry],
    alike: Callable[[str, str], bool] | None,
) -> list[Ranked]:
    """List a note stated later before an earlier one it contradicts (or that contradicts
    it) when the two are about equally relevant (module docstring)."""
    links = {r.path: _contradicting(entries.get(r.path)) for r in order}
    if not any(links.values()):
        return order
    out = list(order)
    for i in range(len(out)):
        # Each move puts a note stated strictly later at ``i``, so the loop ends.
        while (j := _later_contradiction(out, i, memories, links, alike)) is not None:
            _take_place(out, i, j, replace(out[i], contradicted_by=out[j].path))
    return out


def _later_contradiction(
    out: list[Ranked],
    i: int,
    memories: Mapping[str, NoteMemory],
    links: Mapping[str, set[str]],
    alike: Callable[[str, str], bool] | None,
) -> int | None:
    """The position (below ``i``) of the latest-stated note contradicting ``out[i]``
    about as relevantly, or None."""
    earlier = memories.get(out[i].path)
    if earlier is None or earlier.stated is None:
        return None
    names = _names(out[i].path)
    found = []
    for j in range(i + 1, len(out)):
        other = out[j]
        later = memories.get(other.path)
        if later is None or later.stated is None or later.stated <= earlier.stated:
            continue
        if not (links[out[i].path] & _names(other.path) or links[other.path] & names):
            continue
        tie = other.relevance >= CONTRADICTION_TIE * out[i].relevance
        if tie or (alike is not None and alike(out[i].path, other.path)):
            found.append((later.stated, j))
    return max(found)[1] if found else None


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
            _take_place(out, i, j, replace(out[i], newer_version=out[j].path))
    return out


def _in_danger_zone(memory: NoteMemory | None, now: datetime, tuning: MemoryTuning) -> float:
    if memory is None or memory.status not in ("active", "promoted"):
        return 0.0
    if memory.snoozed(now):
        return 0.0
    return tuning.review_priority(memory.state, now)


def _with_review(
    order: list[Ranked],
    memories: Mapping[str, NoteMemory],
    limit: int,
    options: RankingOptions,
) -> list[Ranked]:
    """Mark danger-zone results and give up to ``review_share`` of the slots to them."""
    priority = {
        r.path: _in_danger_zone(memories.get(r.path), options.now, options.tuning) for r in order
    }
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
    alike: Callable[[str, str], bool] | None = None,
    below: Collection[str] = (),
) -> list[Ranked]:
    """Re-rank ``ranked`` (best first, any score scale) with the notes' memory state.

    ``entries`` gives each path's memory keys (the manifest, or
    :meth:`LexicalIndex.entries`); a path without an entry keeps its relevance.
    ``terms``: the query's words, for listing newer versions of a memory first (None:
    that rule is off). ``alike``: whether two results are near-duplicates (then about
    equally relevant, whatever their scores say). ``below``: results listed after all the
    others whatever their scores (near-duplicates MMR set aside: the prior reorders each
    group, never one into the other). Returns at most ``limit`` results.

    Example:
        >>> rank([("a.md", 12.0), ("b.md", 11.9)], entries, "cache", opts, 10)  # doctest: +SKIP
    """
    memories = {p: note_memory(p, entries[p]) for p, _ in ranked if p in entries}
    scale = _scale(ranked)
    recent = scores.asks_for_recency(text)
    scored = []
    for n, ((path, score), relevance) in enumerate(zip(ranked, _relevances(ranked), strict=True)):
        memory = memories.get(path)
        status = memory.status if memory else "active"
        if status in HIDDEN_STATUSES and status != options.show_status:
            continue
        scored.append(_score((path, score, n + 1), relevance, scale, memory, recent, options))
    if options.weight > 0:
        order = sorted(
            enumerate(scored), key=lambda item: (item[1].path in below, -item[1].score, item[0])
        )
        scored = _below_successors([r for _, r in order], memories)
        scored = _later_contradicting_first(scored, memories, entries, alike)
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
    """:func:`rank` for finished hits: reordered, marked ``review``, each scored by what
    it ranks by (:attr:`Ranked.scaled`, the hits' own units).

    ``options`` None leaves the hits as they came (``--no-prior --no-review``).
    """
    if options is None:
        return list(hits[:limit])
    by_path = {h.path: h for h in hits}
    ranked = rank([(h.path, h.score) for h in hits], entries, text, options, limit, terms)
    return [replace(by_path[r.path], score=r.scaled, review=r.review) for r in ranked]
