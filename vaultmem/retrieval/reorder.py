"""`reorder`: the query stages that reorder the fused candidate pool.

Rerank the candidates' fragments (:func:`rerank_stage`; the blend and MMR arithmetic are
:mod:`vaultmem.retrieval.fusion`'s, :func:`demoted_ids` tells which MMR set aside), the
bounded memory prior (:func:`memory_stage`, :mod:`vaultmem.retrieval.memory_rank`) and
the intent route (:func:`route_stage`, :mod:`vaultmem.retrieval.routing`); each
returns its new order with the :class:`~vaultmem.retrieval.query_types.Stage` it ran as.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from vaultmem.config import Config
from vaultmem.errors import VaultmemError
from vaultmem.index.lexical import LexicalIndex
from vaultmem.model import Filters
from vaultmem.retrieval import fusion, memory_rank, routing
from vaultmem.retrieval.memory_rank import Ranked, RankingOptions
from vaultmem.retrieval.query_types import NO_RERANKER, Backends, QueryOptions, Stage, Status
from vaultmem.retrieval.routing import Reach, Route
from vaultmem.retrieval.search import version_terms

if TYPE_CHECKING:
    from vaultmem.index.manifest import Entry

__all__ = [
    "Routed",
    "demoted_ids",
    "memory_stage",
    "rerank_query",
    "rerank_stage",
    "route_stage",
]


def rerank_query(text: str, intent: str | None) -> str:
    """What the reranker is asked: the query, with the intent when there is one."""
    return f"{text}\nIntent: {intent}" if intent else text


def rerank_stage(
    backends: Backends,
    options: QueryOptions,
    query_text: str,
    pool: Sequence[str],
    texts: Mapping[str, str],
) -> tuple[dict[str, float], Stage]:
    """Rerank scores of the first ``options.candidates`` of ``pool`` by their fragment
    (``texts``); none, with the reason, when reranking is off, missing or failed."""
    if not options.rerank:
        return {}, Stage("rerank", "off", "--no-rerank")
    reranker = backends.reranker
    if reranker is None:
        # No reranker configured is the default, not a degradation: told in --explain only.
        status: Status = "off" if backends.reranker_note == NO_RERANKER else "skipped"
        return {}, Stage("rerank", status, f"{backends.reranker_note}: fused order kept")
    chosen = [doc for doc in pool[: options.candidates] if texts.get(doc)]
    if not chosen:
        return {}, Stage("rerank", "off", "no candidate to rerank")
    # Only here: a search without a reranker never loads the chat and rerank clients.
    from vaultmem.inference.rerank import EndpointReranker, LLMReranker

    try:
        scores = reranker.rerank(query_text, [texts[doc] for doc in chosen])
    except VaultmemError as exc:
        down = getattr(exc, "endpoint", "")
        return {}, Stage("rerank", "failed", f"{exc}: fused order kept", down)
    if isinstance(reranker, LLMReranker) and reranker.degraded:
        return {}, Stage("rerank", "failed", f"{reranker.last_error}: fused order kept")
    if isinstance(reranker, EndpointReranker):
        who = f"rerank endpoint {reranker.url} ({reranker.config.model})"
    elif isinstance(reranker, LLMReranker):
        who = f"llm {reranker.llm.url} ({reranker.llm.config.model}) scoring 0-10"
    else:
        who = type(reranker).__name__
    return dict(zip(chosen, scores, strict=True)), Stage(
        "rerank", "ran", f"{who}: {len(chosen)} fragments scored"
    )


def demoted_ids(order: Sequence[str], texts: Mapping[str, str]) -> set[str]:
    """Which ids of :func:`fusion.mmr_demote`'s output it set aside.

    Its output is the kept ids then the demoted ones; walking it and keeping what is not a
    near-duplicate of an id kept so far reproduces exactly that split.
    """
    kept: list[frozenset[tuple[str, str]]] = []
    out: set[str] = set()
    for doc in order:
        grams = fusion.bigrams(texts.get(doc, ""))
        if any(fusion.jaccard(grams, k) > fusion.MMR_THRESHOLD for k in kept):
            out.add(doc)
        else:
            kept.append(grams)
    return out


def memory_stage(
    config: Config,
    index: LexicalIndex,
    final: list[tuple[str, float]],
    text: str,
    options: QueryOptions,
    texts: Mapping[str, str],
    demoted: Collection[str] = (),
) -> tuple[list[tuple[str, float]], dict[str, Ranked], Stage]:
    """The memory prior and review slots over the final order, each result scored by
    what the prior ranked it by. Near-duplicate fragments (``texts``; MMR's test) count
    as equally relevant where two notes contradict each other; the ``demoted`` ones
    (MMR's) stay below the rest."""
    if options.ranking is None:
        return final, {}, Stage("memory", "off", "--no-prior --no-review: retrieval order kept")
    ranking = replace(options.ranking, show_status=options.filters.status)
    entries = index.entries(doc for doc, _ in final)
    versions = version_terms(config, text, index)
    grams = {doc: fusion.bigrams(texts.get(doc, "")) for doc, _ in final}

    def alike(a: str, b: str) -> bool:
        return fusion.jaccard(grams[a], grams[b]) > fusion.MMR_THRESHOLD

    kept = memory_rank.rank(
        final, entries, text, ranking, options.limit, versions, alike, below=demoted
    )
    ordered = [(r.path, r.score) for r in kept]
    return ordered, {r.path: r for r in kept}, Stage("memory", "ran", _memory_detail(kept, ranking))


def _memory_detail(kept: Sequence[Ranked], ranking: RankingOptions) -> str:
    reviews = sum(1 for r in kept if r.review)
    return (
        f"prior weight {ranking.weight:g}; {sum(1 for r in kept if r.pinned)} pinned, "
        f"{sum(1 for r in kept if r.superseded)} superseded, "
        f"{sum(1 for r in kept if r.newer_version)} below a newer version, {reviews} for review "
        f"(share {ranking.review_share:g})"
    )


@dataclass(frozen=True)
class Routed:
    """What the intent route did: the new order and what each result needs from it."""

    route: Route
    order: list[tuple[str, float]]
    stage: Stage
    entries: Mapping[str, Entry] = field(default_factory=dict)
    reached: Mapping[str, Reach] = field(default_factory=dict)
    dates: Mapping[str, str] = field(default_factory=dict)


def route_stage(
    config: Config,
    index: LexicalIndex,
    route: Route,
    final: list[tuple[str, float]],
    memory: Mapping[str, Ranked],
    options: QueryOptions,
) -> Routed:
    """``final`` reordered by the route (``what``: untouched)."""
    said = f"{route.name} ({route.rule})"
    if route.name == "what" or (route.name == "entity" and route.entity is None):
        why = "pipeline order kept" if route.name == "what" else "no note by that name: order kept"
        return Routed(route, final, Stage("route", "ran", f"{said}: {why}"))
    # The memory prior's score where it ran: it already holds superseded notes down.
    top = max((score for _, score in final), default=0.0) or 1.0
    ranked = [(doc, memory[doc].score if doc in memory else score / top) for doc, score in final]
    entries = index.entries(doc for doc, _ in ranked)
    if route.name == "when":
        order, found = routing.route_when(ranked, entries, options.limit, route.oldest_first)
        dates = {doc: day.isoformat() for doc, (day, _) in found.items()}
        detail = f"{said}: {len(dates)} dated note(s), {route.as_json()['order']}"
        return Routed(route, order, Stage("route", "ran", detail), entries, dates=dates)
    from vaultmem.index.graph import LinkGraph
    from vaultmem.retrieval.vsearch import passes

    graph = LinkGraph.load(config)
    if route.entity is None:
        reach = routing.why_reach(graph, ranked)
    else:
        reach = routing.entity_links(graph, route.entity)
    wanted = {*reach, *([route.entity] if route.entity else [])}
    entries = {**entries, **index.entries(p for p in wanted if p not in entries)}
    tagged = _tagged_entries(config, wanted, options.filters)

    def shown(path: str) -> bool:
        entry = tagged.get(path, entries.get(path))
        return (
            path in entries and entry is not None and passes(config, path, entry, options.filters)
        )

    reach = {p: r for p, r in reach.items() if shown(p)}
    if route.entity is None:
        order = routing.route_why(ranked, entries, graph, reach)
        detail = f"{said}: {len(reach)} note(s) reached over {', '.join(routing.WHY_LINKS)}"
    elif not shown(route.entity):
        return Routed(route, final, Stage("route", "ran", f"{said}: the note is filtered out"))
    else:
        order = routing.route_entity(ranked, route.entity, reach)
        detail = f"{said}: {route.entity} first, {len(reach)} linked note(s)"
    return Routed(route, order, Stage("route", "ran", detail), entries, reach)


def _tagged_entries(config: Config, paths: set[str], filters: Filters) -> dict[str, Entry]:
    """The manifest's entries of ``paths`` when a tag filter needs them ({} otherwise): the
    keyword index stores no tags, so a linked note it describes would never pass ``--tag``."""
    if not filters.tag or not paths:
        return {}
    from vaultmem.index import manifest as mf

    store = mf.open_reader(config.cache_dir)
    if store is None:
        return {}
    with store:
        return store.get_many(paths)
