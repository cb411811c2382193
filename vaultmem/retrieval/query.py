"""`query`: the hybrid retrieval pipeline of SPEC §6, as orchestration over pure stages.

::

    BM25 probe (original query, candidates deep)
      → strong-signal bypass (skip expansion when the keyword match is clear; never with
        an intent)
      → query expansion by the llm role (lexical variants, semantic variants, one
        hypothetical answer passage; jinja2 prompt; JSON reply; cached per model+prompt)
      → retrieval lists: BM25 over the whole note and over its lead (title + opening),
        vectors of each note's best fragment and of its first one (the note lead), for
        the original query; BM25 per lexical variant, vectors per semantic variant and
        the hypothetical passage, at half weight
      → z-score fusion (each list standardised, weighted sum) → candidate limit (30)
      → rerank the best fragment of each candidate (cross-encoder endpoint, else the
        chat model, else skipped)
      → position-aware blend → MMR demotion of near-duplicates → memory prior
      → intent route (why / when / entity reorder and add linked notes; what keeps
        the order: :mod:`vaultmem.retrieval.routing`) → results

The arithmetic lives in :mod:`vaultmem.retrieval.fusion` (pure, hand-checked); this
module runs the stages in order and records what every stage did, so ``--explain`` can
show each result's rank and score at every stage and every skipped stage with its
reason. The stages live beside it: :mod:`~vaultmem.retrieval.expansion`,
:mod:`~vaultmem.retrieval.query_lists` (the retrieval lists),
:mod:`~vaultmem.retrieval.fragment_choice` (each candidate's fragment and snippet),
:mod:`~vaultmem.retrieval.reorder` (rerank, MMR, memory prior, route); the request and
result values are :mod:`~vaultmem.retrieval.query_types`'.

Degrade, don't die: no llm → no expansion; no reranker → fused order; no embedder (or no
vectors yet, or an unreachable endpoint) → keyword lists only; a keyword index built
before the lead field → no lead keyword list. A malformed LLM reply, a
failing endpoint or a broken prompt template skips its stage with a :class:`Stage` whose
status is ``skipped``/``failed``; nothing here raises for them. The caller (the CLI)
prints those as one stderr line each. Filters apply to every list (the lexical index's
filters, :func:`~vaultmem.retrieval.vsearch.passes` for vectors), so every later stage
sees filtered notes only.

The bounded memory prior of SPEC §5 runs after MMR (:mod:`vaultmem.retrieval.memory_rank`):
it moves a result by at most its weight, and ``--explain`` shows each result's rank and
score before and after it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import PurePosixPath

from vaultmem.config import Config
from vaultmem.errors import VaultmemError
from vaultmem.index.analysis import query_terms
from vaultmem.index.lexical import LexicalIndex
from vaultmem.model import ROUTES, Hit, has_words
from vaultmem.retrieval import fusion, routing
from vaultmem.retrieval.expansion import expansion_stage
from vaultmem.retrieval.fragment_choice import (
    DEFAULT_FRAGMENT_CHARS,
    Fragments,
    Piece,
    choose_fragment,
    fragment_snippet,
)
from vaultmem.retrieval.query_lists import (
    Found,
    Lists,
    bm25_lists,
    confidence_detail,
    strong_signal_stage,
    vector_lists,
)
from vaultmem.retrieval.query_types import (
    MAX_QUERY_CHARS,
    Backends,
    QueryOptions,
    QueryResult,
    Stage,
    StageScore,
    Trace,
)
from vaultmem.retrieval.reorder import (
    demoted_ids,
    memory_stage,
    rerank_query,
    rerank_stage,
    route_stage,
)

__all__ = ["query"]


def _resolver(config: Config) -> Callable[[str], str | None]:
    """A name → note path function for entity detection (None when no note has it)."""
    from vaultmem.lookup import resolve

    def find(name: str) -> str | None:
        try:
            return resolve(config, name)
        except VaultmemError:  # not found, ambiguous, or a path outside the vault
            return None

    return find


def _ranks(items: Sequence[tuple[str, float]]) -> dict[str, StageScore]:
    return {doc: StageScore(rank, score) for rank, (doc, score) in enumerate(items, start=1)}


def query(
    config: Config,
    text: str,
    *,
    backends: Backends | None = None,
    options: QueryOptions | None = None,
    index: LexicalIndex | None = None,
) -> QueryResult:
    """Run the hybrid pipeline (module docstring) and return the results with their traces.

    ``backends`` defaults to none at all (BM25 only); the CLI passes
    :func:`backends_for` of the config. Never raises for a missing or failing model:
    each such stage is recorded in :attr:`QueryResult.stages` and skipped. A missing
    keyword index is an error (``run vaultmem index``), as for ``search``.

    Example:
        >>> r = query(config, "why redis", backends=backends_for(config))  # doctest: +SKIP
        >>> [h.path for h in r.hits], [s.name for s in r.degraded]  # doctest: +SKIP
    """
    backends = backends or Backends()
    options = options or QueryOptions()
    text = text[:MAX_QUERY_CHARS]
    intent = " ".join((options.intent or "").split()) or None
    route_word = options.route
    if intent is not None and intent.lower() in ROUTES:
        # A route word names a route; it is not a description to steer the models with.
        route_word, intent = route_word or intent.lower(), None
    if not has_words(text):
        return QueryResult((), (), (Stage("probe", "off", "empty query: nothing to search"),))
    from vaultmem.retrieval.search import lexical_hits

    index = index or LexicalIndex.open(config.cache_dir)
    route = routing.detect(text, route_word, _resolver(config))
    depth = max(options.candidates, options.limit)
    filters = options.filters
    stages: list[Stage] = []

    probe = lexical_hits(config, text, limit=depth, filters=filters, index=index)
    scores = [h.score for h in probe]
    stages.append(
        Stage(
            "probe",
            "ran",
            f"{len(probe)} keyword hits" + (f"; {confidence_detail(scores)}" if scores else ""),
        )
    )
    signal = strong_signal_stage(scores, intent)
    stages.append(signal)
    strong = fusion.strong_signal(scores, has_intent=intent is not None)
    expansion, stage = expansion_stage(config, backends, text, intent, options, strong)
    stages.append(stage)

    lists = Lists()
    steer = (intent, options.weights or fusion.route_weights(route.name))
    stages.append(bm25_lists(config, index, lists, text, probe, expansion, depth, filters, *steer))
    stages.append(vector_lists(config, backends, lists, text, expansion, depth, filters, *steer))

    fused = lists.fuse()
    weights = ", ".join(f"{spec.name} {spec.weight:g}" for spec in lists.specs)
    stages.append(
        Stage(
            "fusion",
            "ran",
            f"z-score sum over {len(lists.specs)} list(s) ({weights}): {len(fused)} notes",
        )
    )
    pool = fusion.candidates(fused, depth)
    stages.append(
        Stage(
            "candidates",
            "ran",
            f"{min(len(pool), options.candidates)} of {len(fused)} "
            f"kept for reranking (--candidates {options.candidates})",
        )
    )

    # The best fragment of every pooled note: what the reranker reads, what MMR compares,
    # and what the result shows.
    max_chars = backends.embedder.max_chars if backends.embedder else DEFAULT_FRAGMENT_CHARS
    terms = query_terms(f"{text} {intent or ''}"[:2000])
    term_set = set(terms)
    fragments = Fragments(config, max_chars)
    chosen: dict[str, tuple[Piece | None, str]] = {}
    fragments.prefetch([doc for doc, _ in pool])
    for doc, _ in pool:
        frags = fragments.of(doc)
        chosen[doc] = choose_fragment(frags, lists.found[doc].vector_span, term_set)
    texts = {doc: frag.text for doc, (frag, _) in chosen.items() if frag is not None}

    pool_ids = [doc for doc, _ in pool]
    rerank, stage = rerank_stage(backends, options, rerank_query(text, intent), pool_ids, texts)
    stages.append(stage)
    blended = fusion.blend(pool, rerank)
    if rerank:
        stages.append(
            Stage("blend", "ran", "retrieval weight 0.75 (ranks 1-3), 0.60 (4-10), 0.40 beyond")
        )
    else:
        stages.append(Stage("blend", "off", "no rerank scores: normalised fused scores"))
    final = fusion.mmr_demote(blended, texts)
    demoted = demoted_ids([doc for doc, _ in final], texts)
    stages.append(
        Stage(
            "mmr",
            "ran",
            f"{len(demoted)} near-duplicate(s) demoted (bigram Jaccard > {fusion.MMR_THRESHOLD})",
        )
    )

    # A route reorders more than it shows: the prior ranks the whole pool for it.
    ranked_for = options if route.name == "what" else replace(options, limit=depth)
    before_prior = _ranks(final)
    final, memory, stage = memory_stage(config, index, final, text, ranked_for, texts, demoted)
    stages.append(stage)
    after_prior = {
        doc: StageScore(rank, memory[doc].score)
        for rank, (doc, _) in enumerate(final, start=1)
        if doc in memory
    }
    routed = route_stage(config, index, route, final, memory, options)
    # A route reorders by score: what MMR set aside stays below what it kept, unless the
    # prior put it first as the later statement of a fact or memory (it took the place
    # of the note it restates or contradicts).
    took_place = {m.contradicted_by or m.newer_version for m in memory.values()}
    final = fusion.keep_below(routed.order, demoted - took_place)
    stages.append(routed.stage)
    for doc, _ in final[: options.limit]:
        if doc not in chosen:  # reached over the graph: no retrieval list had it
            entry = routed.entries[doc]
            lists.found[doc] = Found(entry.title, entry.type, entry.status)
            chosen[doc] = choose_fragment(fragments.of(doc), None, term_set)

    list_ranks = [_ranks(ranked) for ranked in lists.ranked]
    fused_ranks = _ranks(fused)
    rerank_ranks = _ranks(sorted(rerank.items(), key=lambda item: -item[1]))
    blended_ranks = _ranks(blended)
    final_ranks = _ranks(final)
    snippet_terms = query_terms(text[:2000])
    hits: list[Hit] = []
    traces: list[Trace] = []
    for doc, score in final[: options.limit]:
        info = lists.found[doc]
        frag, source = chosen[doc]
        snippet, line, line_end = fragment_snippet(config, doc, frag, snippet_terms)
        title = info.title or PurePosixPath(doc).stem
        review = doc in memory and memory[doc].review
        day = routed.dates.get(doc)
        hits.append(
            Hit(
                doc,
                title,
                score,
                snippet,
                line,
                info.type,
                info.status,
                line_end,
                review,
                day,
                score_kind="relevance",
            )
        )
        traces.append(
            Trace(
                lists=tuple(
                    (spec.name, ranks.get(doc))
                    for spec, ranks in zip(lists.specs, list_ranks, strict=True)
                ),
                fused=fused_ranks.get(doc),
                rerank=rerank_ranks.get(doc),
                blended=blended_ranks.get(doc),
                final=final_ranks[doc],
                fragment=(frag.start_line, frag.end_line) if frag else None,
                fragment_source=source,
                demoted=doc in demoted,
                memory=memory.get(doc),
                reached=routed.reached.get(doc),
                before_prior=before_prior.get(doc) if doc in memory else None,
                after_prior=after_prior.get(doc),
            )
        )
    return QueryResult(
        tuple(hits), tuple(traces), tuple(stages), tuple(lists.specs), expansion, routed.route
    )
