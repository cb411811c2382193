"""Intent routing for `query`: which question is asked, and how its answer is ordered.

Four routes (:data:`~vaultmem.model.ROUTES`):

- ``why``: decisions and their rationale. The best hits seed a beam over the typed links
  of :data:`WHY_LINKS` (both directions: the note that superseded a hit counts), two hops
  at most, each hop worth :data:`HOP_DISCOUNT` of the note it came from. Decisions get
  :data:`DECISION_BOOST`, and a current note always comes before the note it superseded.
- ``when``: the dated notes (a date at the start of the file name, else ``created``,
  else ``last_used``) about as relevant as the best hit (within :data:`WHEN_BAND` of its
  score) in time order: newest first, oldest first when the question asks for the
  first, earliest, or when something started or began. They take the best hit's score;
  every other hit keeps its place and score below them, so a date never lifts a note
  over a clearly more relevant one.
- ``entity``: the note the question names (title or alias) first, then the others by
  score, a note linking to or from it scoring at least :data:`HOP_DISCOUNT` of it.
- ``what``: the pipeline's order untouched.

The route comes from ``--intent why|when|entity|what``, else from the question by the
rules of :func:`detect` (each names itself in ``--explain``). Every route returns its
order with the score it ranked by, best first and never rising down the list. Everything
here is pure: the caller hands in the ordered hits, their manifest entries and the link
graph.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import PurePosixPath

from vaultmem.index.graph import LinkGraph
from vaultmem.index.manifest import Entry
from vaultmem.model import ROUTES

__all__ = [
    "DECISION_BOOST",
    "HOP_DISCOUNT",
    "Reach",
    "Route",
    "WHEN_BAND",
    "WHY_LINKS",
    "beam",
    "detect",
    "entity_links",
    "note_date",
    "route_entity",
    "route_when",
    "route_why",
    "why_reach",
]

# Links that carry a rationale: what replaced, caused, contradicted or refined a decision.
WHY_LINKS = ("supersedes", "superseded_by", "caused_by", "contradicts", "refines")
# Half the parent's score per hop: a direct neighbour of the best hit lands among hits
# half as relevant, a second hop below the strong direct matches, never above them.
HOP_DISCOUNT = 0.5
MAX_HOPS = 2
SEEDS = 3  # the best hits the beam starts from
BEAM_WIDTH = 5  # notes kept per hop
# Enough to lift a decision over a plain note of similar relevance, not over a far better one.
DECISION_BOOST = 1.25
SUPERSEDING = ("supersedes", "superseded_by")
# A dated note is put in time order when it scores at least this share of the best hit:
# the question is about a topic first, its dates second. At 0.5 the newest of many
# half-relevant notes came first ("when did we start rolling out PgBouncer on staging?"
# listed a later daily note over the rollout handoff); the example vault and the
# memory-evolution benchmark put the notes worth reordering within 10%, and the next
# (another topic sharing words: "Release process" for the PgBouncer rollout) at 13%.
WHEN_BAND = 0.9


@dataclass(frozen=True)
class Route:
    """The route of one query and the rule that chose it.

    ``entity``: the path of the named note (entity route). ``oldest_first``: the when
    route's order.
    """

    name: str
    rule: str
    entity: str | None = None
    oldest_first: bool = False

    def as_json(self) -> dict[str, object]:
        """``{"route", "rule", "entity", "order"}`` for ``--explain --json``."""
        out: dict[str, object] = {"route": self.name, "rule": self.rule}
        if self.entity is not None:
            out["entity"] = self.entity
        if self.name == "when":
            out["order"] = "oldest first" if self.oldest_first else "newest first"
        return out


@dataclass(frozen=True)
class Reach:
    """How a note not found by retrieval was reached over the graph."""

    path: str
    score: float
    link: str  # the link type followed
    origin: str  # the note it was reached from
    hop: int
    backlink: bool = False  # the link is written in the reached note, not in the origin

    def describe(self) -> str:
        """``via supersedes from decisions/X.md, hop 1`` (``backlink`` when reversed)."""
        back = " (backlink)" if self.backlink else ""
        return f"via {self.link}{back} from {self.origin}, hop {self.hop}"

    def as_json(self) -> dict[str, object]:
        """``{"link", "from", "hop", "backlink", "text"}``."""
        return {
            "link": self.link,
            "from": self.origin,
            "hop": self.hop,
            "backlink": self.backlink,
            "text": self.describe(),
        }


# --- detection -----------------------------------------------------------------------------

# Anchored at the start (or whole phrases) so a man page's "update" or "helper when
# working" is not a date question: only questions that ask why/when route.
_WHY = (
    (re.compile(r"^\s*why\b", re.I), "starts with 'why'"),
    (re.compile(r"^\s*how come\b", re.I), "starts with 'how come'"),
    (re.compile(r"^\s*what led (us )?to\b", re.I), "starts with 'what led to'"),
    (re.compile(r"\b(reasons?|rationale) (for|behind|of)\b", re.I), "asks for the reason"),
)
_WHEN = (
    (re.compile(r"^\s*since when\b", re.I), "starts with 'since when'"),
    # "When is the staging database reset?" asks for a schedule the notes state, not
    # for an event to place in time: present and future tenses stay on the what route.
    (
        re.compile(r"^\s*when\b(?!\s+(is|are|does|do|will|should|can|must)\b)", re.I),
        "starts with 'when' (not 'when is/does/will')",
    ),
    (re.compile(r"^\s*(on |at )?what (date|day)\b", re.I), "starts with 'what date'"),
    (re.compile(r"\bhow long ago\b", re.I), "asks 'how long ago'"),
    (re.compile(r"\btimeline\b", re.I), "asks for a timeline"),
)
_ENTITY = re.compile(
    r"^\s*(what do (we|i|you) know about|who is|who's|who was|tell me about)"
    r"\s+(?P<name>.+?)[\s?.!]*$",
    re.I,
)
_ENTITY_RULE = "names a note: 'who is/what do we know about/tell me about X'"
# Oldest first: the question asks when something started, not where it stands.
_FIRST = re.compile(
    r"\b(first|earliest|oldest|originally|initially|start|started|starting|begin|began|"
    r"begun|beginning)\b",
    re.I,
)


def detect(
    text: str, intent: str | None, resolve: Callable[[str], str | None] | None = None
) -> Route:
    """The route of a question: ``intent`` when it is a route word, else by rule.

    ``resolve`` maps a name to a note path (None: no such note); the entity rule fires
    only when the name after "who is" (etc.) is a note's title, alias or file name.

    Example:
        >>> detect("Why did we drop Memcached?", None).name
        'why'
    """
    word = (intent or "").strip().lower()
    first = bool(_FIRST.search(text))
    if word in ROUTES:
        entity = _entity(text, resolve) if word == "entity" else None
        if word == "entity" and entity is None and resolve is not None:
            entity = resolve(text.strip(" ?.!"))
        return Route(word, f"--intent {word}", entity, oldest_first=first)
    for pattern, rule in _WHY:
        if pattern.search(text):
            return Route("why", rule)
    for pattern, rule in _WHEN:
        if pattern.search(text):
            return Route("when", rule, oldest_first=first)
    entity = _entity(text, resolve)
    if entity is not None:
        return Route("entity", _ENTITY_RULE, entity)
    return Route("what", "default: no why/when/entity rule matched")


def _entity(text: str, resolve: Callable[[str], str | None] | None) -> str | None:
    found = _ENTITY.match(text)
    if found is None or resolve is None:
        return None
    name = found.group("name").strip()
    for candidate in (name, re.sub(r"^(the|our)\s+", "", name, flags=re.I)):
        path = resolve(candidate)
        if path is not None:
            return path
    return None


# --- the graph walk --------------------------------------------------------------------------


def _step(
    graph: LinkGraph, path: str, types: Collection[str] | None
) -> list[tuple[str, str, bool]]:
    """``(other note, link type, backlink)`` of every edge at ``path``, written ones first."""
    out, back = [], []
    for edge in graph.neighbours(path, types):
        if edge.source == path and edge.target != path:
            out.append((edge.target, edge.type, False))
        elif edge.target == path and edge.source != path:
            back.append((edge.source, edge.type, True))
    return out + back


def beam(
    graph: LinkGraph,
    seeds: Sequence[tuple[str, float]],
    types: Collection[str],
    *,
    hops: int = MAX_HOPS,
    width: int = BEAM_WIDTH,
    discount: float = HOP_DISCOUNT,
) -> dict[str, Reach]:
    """Notes reached from ``seeds`` over links of ``types``, each with its best path.

    A reached note scores its origin's score times ``discount`` (per hop); each hop keeps
    the ``width`` best. Seeds themselves are never in the answer.

    Example:
        >>> beam(graph, [("decisions/B.md", 1.0)], ["supersedes"])  # doctest: +SKIP
        {'decisions/A.md': Reach('decisions/A.md', 0.5, 'supersedes', 'decisions/B.md', 1, True)}
    """
    seen = {path for path, _ in seeds}
    found: dict[str, Reach] = {}
    frontier = list(seeds)
    for hop in range(1, hops + 1):
        layer: dict[str, Reach] = {}
        for origin, score in frontier:
            for other, link, backlink in _step(graph, origin, types):
                if other in seen:
                    continue
                reach = Reach(other, score * discount, link, origin, hop, backlink)
                if other not in layer or reach.score > layer[other].score:
                    layer[other] = reach
        kept = sorted(layer.values(), key=lambda r: (-r.score, r.path))[:width]
        found.update((r.path, r) for r in kept)
        seen.update(r.path for r in kept)
        frontier = [(r.path, r.score) for r in kept]
    return found


# --- the routes ---------------------------------------------------------------------------


def _current_first(order: list[tuple[str, float]], graph: LinkGraph) -> list[tuple[str, float]]:
    """``order`` with every note moved before any note it superseded, taking that
    note's score when it is higher (so the scores still fall down the list)."""
    out = list(order)
    for old, _ in order:
        newer = [
            edge.source if edge.type == "supersedes" else edge.target
            for edge in graph.neighbours(old, SUPERSEDING)
            if (edge.type == "supersedes" and edge.target == old)
            or (edge.type == "superseded_by" and edge.source == old)
        ]
        for new in newer:
            at = {doc: i for i, (doc, _) in enumerate(out)}
            if new in at and at[new] > at[old]:
                doc, score = out.pop(at[new])
                out.insert(at[old], (doc, max(score, out[at[old]][1])))
    return out


def why_reach(graph: LinkGraph, ranked: Sequence[tuple[str, float]]) -> dict[str, Reach]:
    """The notes the why beam reaches from the best :data:`SEEDS` hits over :data:`WHY_LINKS`.

    A seed linked from a better seed is reached too (say the old decision ranks third,
    under the one that superseded it): its path is what ``--explain`` shows.
    """
    seeds = list(ranked[:SEEDS])
    found = beam(graph, seeds, WHY_LINKS)
    for n, (origin, score) in enumerate(seeds):
        later = {path for path, _ in seeds[n + 1 :]} - set(found)
        for other, link, backlink in _step(graph, origin, WHY_LINKS):
            if other in later:
                found[other] = Reach(other, score * HOP_DISCOUNT, link, origin, 1, backlink)
                later.discard(other)
    return found


def route_why(
    ranked: Sequence[tuple[str, float]],
    entries: Mapping[str, Entry],
    graph: LinkGraph,
    reached: Mapping[str, Reach],
) -> list[tuple[str, float]]:
    """The why order: decisions boosted, ``reached`` notes added, current before superseded.

    ``ranked``: the pipeline's order with scores on [0, 1] (higher is better);
    ``reached``: :func:`why_reach`'s notes that may be shown; ``entries`` gives types.
    Returns the new order with route scores.
    """
    scores = dict(ranked)
    for path, reach in reached.items():
        scores[path] = max(scores.get(path, 0.0), reach.score)

    def boosted(doc: str) -> float:
        entry = entries.get(doc)
        return scores[doc] * (DECISION_BOOST if entry and entry.type == "decision" else 1.0)

    order = sorted(scores, key=lambda doc: -boosted(doc))  # stable: pipeline order on ties
    return _current_first([(doc, boosted(doc)) for doc in order], graph)


_DATE_NAME = re.compile(r"^(\d{4}-\d{2}-\d{2})\b")


def _parse_day(value: object) -> date | None:
    if not isinstance(value, str):
        return None
    try:
        return date.fromisoformat(value[:10])
    except ValueError:
        return None


def note_date(path: str, entry: Entry | None) -> tuple[date, str] | None:
    """The date a note stands for and where it came from, or None for an undated note.

    The file name's leading ISO date (daily notes, handoffs, incidents), else the owned
    ``created``, else ``last_used``.

    Example:
        >>> note_date("daily/2026-10-14.md", None)
        (datetime.date(2026, 10, 14), 'file name')
    """
    named = _DATE_NAME.match(PurePosixPath(path).stem)
    if named and (day := _parse_day(named.group(1))) is not None:
        return day, "file name"
    memory = entry.memory if entry is not None else {}
    for key in ("created", "last_used"):
        day = _parse_day(memory.get(key))
        if day is not None:
            return day, key
    return None


def route_when(
    ranked: Sequence[tuple[str, float]],
    entries: Mapping[str, Entry],
    limit: int,
    oldest_first: bool = False,
) -> tuple[list[tuple[str, float]], dict[str, tuple[date, str]]]:
    """The when order: the dated notes about as relevant as the best hit in time order,
    then the rest as ranked.

    About as relevant: among the best ``2 × limit`` and scoring at least
    :data:`WHEN_BAND` of the best hit (after the memory prior), so a date only orders
    notes the question fits alike, never one over a clearly more relevant note. The
    ordered notes take the best hit's score: the route ranks them as its equals, by date.
    Returns the new order and the date (and its source) of every dated note in it.
    """
    top = max((score for _, score in ranked), default=0.0)
    dates = {doc: d for doc, _ in ranked if (d := note_date(doc, entries.get(doc))) is not None}
    head = [item for item in ranked[: 2 * limit] if item[0] in dates and item[1] >= WHEN_BAND * top]
    head.sort(key=lambda item: dates[item[0]][0], reverse=not oldest_first)
    taken = {doc for doc, _ in head}
    rest = [item for item in ranked if item[0] not in taken]
    # Ranked as equals with the best hit (which may be undated: it then follows them).
    return [(doc, top) for doc, _ in head] + rest, dates


def entity_links(graph: LinkGraph, entity: str) -> dict[str, Reach]:
    """The notes linking to or from ``entity`` (any link type), written links first."""
    linked: dict[str, Reach] = {}
    for other, link, backlink in _step(graph, entity, None):
        if other not in linked:
            linked[other] = Reach(other, HOP_DISCOUNT, link, entity, 1, backlink)
    return linked


def route_entity(
    ranked: Sequence[tuple[str, float]], entity: str, linked: Mapping[str, Reach]
) -> list[tuple[str, float]]:
    """The entity order: the named note first, then every other hit and ``linked`` note
    by score.

    The named note takes the best score; a note linking to or from it scores at least
    :data:`HOP_DISCOUNT` of that (a first hop, as in the why beam), so its neighbours
    come before the hits that merely share words with the question, never before the
    more relevant ones. Ties keep the pipeline's order, then linked notes in link order.
    """
    scores = dict(ranked)
    top = max(scores.values(), default=1.0) or 1.0
    best = max(scores.get(entity, top), top)
    near = {doc: max(scores.get(doc, 0.0), HOP_DISCOUNT * best) for doc in linked if doc != entity}
    others = [(doc, near.pop(doc, score)) for doc, score in ranked if doc != entity]
    rest = sorted([*others, *near.items()], key=lambda item: -item[1])  # stable
    return [(entity, best), *rest]
