"""`query_lists`: the retrieval lists of the query pipeline, the input of z-score fusion.

The keyword probe's verdict (:func:`strong_signal_stage`), then BM25 over the whole
note and its lead, per lexical variant (:func:`bm25_lists`), and vectors of each note's
best fragment and its lead, per semantic variant and the hypothetical passage
(:func:`vector_lists`), each collected with its weight in :class:`Lists`, which fuses
them (:func:`vaultmem.retrieval.fusion.zscore_fuse`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from vaultmem.config import Config
from vaultmem.errors import VaultmemError
from vaultmem.index.lexical import LexicalHit, LexicalIndex
from vaultmem.model import Filters, Hit
from vaultmem.retrieval import fusion
from vaultmem.retrieval.query_types import (
    MAX_QUERY_CHARS,
    NO_EMBEDDER,
    Backends,
    Expansion,
    ListSpec,
    Stage,
)

__all__ = [
    "Found",
    "Lists",
    "bm25_lists",
    "confidence_detail",
    "steering_text",
    "strong_signal_stage",
    "vector_lists",
]


@dataclass
class Found:
    """What the retrieval lists know about one note."""

    title: str
    type: str
    status: str
    vector_span: tuple[int, int] | None = None  # the best vector hit's fragment
    vector_score: float = -2.0


@dataclass
class Lists:
    """Every retrieval list so far: its spec, its ranked ``(path, score)`` pairs, and what
    the lists know about each note they hold."""

    specs: list[ListSpec] = field(default_factory=list)
    ranked: list[list[tuple[str, float]]] = field(default_factory=list)
    found: dict[str, Found] = field(default_factory=dict)

    def add_bm25(self, name: str, text: str, weight: float, hits: Sequence[LexicalHit]) -> None:
        """Add a keyword list."""
        self._add(ListSpec(name, "bm25", text, weight), [(h.path, h.score) for h in hits])
        for h in hits:
            self.found.setdefault(h.path, Found(h.title, h.type, h.status))

    def add_vec(self, name: str, text: str, weight: float, hits: Sequence[Hit]) -> None:
        """Add a vector list; each note keeps the fragment span of its best vector hit."""
        self._add(ListSpec(name, "vec", text, weight), [(h.path, h.score) for h in hits])
        for h in hits:
            found = self.found.setdefault(h.path, Found(h.title, h.type, h.status))
            if h.score > found.vector_score and h.line_end is not None:
                found.vector_score = h.score
                found.vector_span = (h.line, h.line_end)

    def _add(self, spec: ListSpec, ranked: list[tuple[str, float]]) -> None:
        scale = fusion.list_scale([score for _, score in ranked])
        self.specs.append(replace(spec, hits=len(ranked), scale=scale))
        self.ranked.append(ranked)

    def fuse(self) -> list[tuple[str, float]]:
        """Every list, z-score fused (:func:`fusion.zscore_fuse`)."""
        return fusion.zscore_fuse(
            [
                fusion.ScoredList(spec.name, tuple(ranked), spec.weight)
                for spec, ranked in zip(self.specs, self.ranked, strict=True)
            ]
        )


def steering_text(text: str, intent: str) -> str:
    """The query with the searcher's intent after it: what the intent lists search for.

    Without an LLM or a reranker the intent has no model to steer, so it steers the
    retrieval lists themselves: a note that matches the query *and* the intent rises.
    """
    return f"{text}\n{intent}"[:MAX_QUERY_CHARS]


def confidence_detail(scores: Sequence[float]) -> str:
    """The probe's top two BM25 scores with their confidence, for the stage detail."""
    ranked = sorted(scores, reverse=True)[:2]
    parts = [f"{s:.2f} (confidence {fusion.bm25_confidence(s):.3f})" for s in ranked]
    labels = ("top", "next")
    return ", ".join(f"{label} {part}" for label, part in zip(labels, parts, strict=False))


def strong_signal_stage(scores: Sequence[float], intent: str | None) -> Stage:
    """Whether the probe's keyword match is clear enough to skip expansion, and why."""
    if intent:
        return Stage("strong-signal", "off", "an intent was given: expansion always runs")
    if not scores:
        return Stage("strong-signal", "ran", "no keyword hits: not strong")
    ranked = sorted(scores, reverse=True)
    c1 = fusion.bm25_confidence(ranked[0])
    c2 = fusion.bm25_confidence(ranked[1]) if len(ranked) > 1 else 0.0
    strong = fusion.strong_signal(scores)
    verdict = "strong" if strong else "not strong"
    return Stage(
        "strong-signal",
        "ran",
        f"{verdict}: top {c1:.3f} (needs ≥ {fusion.STRONG_SIGNAL_SCORE}), gap {c1 - c2:.3f} "
        f"(needs ≥ {fusion.STRONG_SIGNAL_GAP})",
    )


def bm25_lists(
    config: Config,
    index: LexicalIndex,
    lists: Lists,
    text: str,
    probe: list[LexicalHit],
    expansion: Expansion | None,
    depth: int,
    filters: Filters,
    intent: str | None = None,
    weights: fusion.ListWeights | None = None,
) -> Stage:
    """Add the BM25 lists to ``lists``: the probe, the lead field, the query steered by the
    intent, each lexical variant (``weights``: :data:`fusion.QUERY_WEIGHTS` unless given)."""
    from vaultmem.retrieval.search import lexical_hits

    weights = weights or fusion.QUERY_WEIGHTS
    lists.add_bm25("bm25:original", text, weights.bm25, probe)
    lead = lexical_hits(config, text, limit=depth, filters=filters, index=index, lead=True)
    lists.add_bm25("bm25:lead", text, weights.lead_keyword, lead)
    if intent:
        steered = steering_text(text, intent)
        hits = lexical_hits(config, steered, limit=depth, filters=filters, index=index)
        lists.add_bm25("bm25:intent", steered, fusion.INTENT_WEIGHT, hits)
    weight = fusion.VARIANT_SHARE * weights.bm25
    for n, variant in enumerate(expansion.lexical if expansion else (), start=1):
        hits = lexical_hits(config, variant, limit=depth, filters=filters, index=index)
        lists.add_bm25(f"bm25:lex-{n}", variant, weight, hits)
    names = [f"{s.name.split(':')[1]} ({s.hits})" for s in lists.specs if s.kind == "bm25"]
    return Stage("bm25", "ran", f"{len(names)} list(s): {', '.join(names)}")


def vector_lists(
    config: Config,
    backends: Backends,
    lists: Lists,
    text: str,
    expansion: Expansion | None,
    depth: int,
    filters: Filters,
    intent: str | None = None,
    weights: fusion.ListWeights | None = None,
) -> Stage:
    """Add the vector lists to ``lists`` (original, note lead, the query steered by the
    intent, semantic variants, hypothetical passage) in one embedding call; BM25 only
    when that cannot run (``weights``: :data:`fusion.QUERY_WEIGHTS` unless given)."""
    weights = weights or fusion.QUERY_WEIGHTS
    embedder = backends.embedder
    if embedder is None:
        # Vectors the user turned off (or never set up) are a choice, not a degradation.
        chosen = config.embedder == "none" or backends.embedder_note == NO_EMBEDDER
        return Stage(
            "vectors", "off" if chosen else "skipped", f"{backends.embedder_note}: BM25 only"
        )
    queries: list[tuple[str, str, float]] = [("vec:original", text, weights.vector)]
    if intent:
        queries.append(("vec:intent", steering_text(text, intent), fusion.INTENT_WEIGHT))
    weight = fusion.VARIANT_SHARE * weights.vector
    if expansion is not None:
        for n, variant in enumerate(expansion.semantic, start=1):
            queries.append((f"vec:sem-{n}", variant, weight))
        if expansion.hypothetical:
            queries.append(("vec:hyde", expansion.hypothetical, weight))
    from vaultmem.index.records import read_record, record_path
    from vaultmem.retrieval.vsearch import embed_and_open

    # An opened vector index (a warm caller) has vectors; else check cheaply before the
    # model loads or the endpoint is called: nothing to search without them.
    if backends.vectors is None and not read_record(
        record_path(config.cache_dir, embedder.model_id)
    ):
        from vaultmem.index import manifest as mf

        if not mf.read(config.cache_dir, 0, mf.Store.count):
            return Stage("vectors", "off", "the vault has no notes yet")  # nothing to embed
        why = f"no vectors for model {embedder.model_id} yet: run `vaultmem embed`"
        return Stage("vectors", "skipped", f"{why}: BM25 only")
    texts = [q[:MAX_QUERY_CHARS] for _, q, _ in queries]
    try:
        # One embedding call for every text: a single batch, one request to an endpoint.
        if backends.vectors is not None:
            vectors = embedder.embed(texts, query=True)
            found = backends.vectors.nearest_with_leads(vectors, limit=depth, filters=filters)
        else:
            vectors, opened = embed_and_open(config, embedder, texts)
            with opened:
                found = opened.nearest_with_leads(vectors, limit=depth, filters=filters)
    except VaultmemError as exc:  # no vectors yet, endpoint down, store trouble
        return Stage("vectors", "failed", f"{exc}: BM25 only", getattr(exc, "endpoint", ""))
    for (name, query_text, weight), (hits, leads) in zip(queries, found, strict=True):
        lists.add_vec(name, query_text, weight, hits)
        if name == "vec:original":  # the note-lead list: of the original query only
            lists.add_vec("vec:lead", query_text, weights.lead_vector, leads)
    names = [f"{s.name.split(':')[1]} ({s.hits})" for s in lists.specs if s.kind == "vec"]
    return Stage("vectors", "ran", f"{len(names)} list(s), {embedder.model_id}: {', '.join(names)}")
