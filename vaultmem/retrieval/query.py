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
module fetches the lists, calls the optional models and records what every stage did,
so ``--explain`` can show each result's rank and score at every stage and every skipped
stage with its reason.

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

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Literal

from vaultmem.atomic import atomic_write
from vaultmem.config import Config
from vaultmem.errors import ConfigError, EndpointError, NoteError, VaultmemError
from vaultmem.index.lexical import LexicalHit, LexicalIndex, analyse, query_terms
from vaultmem.inference.base import Embedder
from vaultmem.inference.llm import JSONReplyError, LLMClient, parse_json_reply
from vaultmem.inference.rerank import Reranker
from vaultmem.model import ROUTES, Filters, Hit, has_words
from vaultmem.retrieval import fusion, memory_rank, routing
from vaultmem.retrieval.memory_rank import Ranked, RankingOptions
from vaultmem.retrieval.routing import Reach, Route
from vaultmem.retrieval.search import version_terms
from vaultmem.retrieval.snippets import MAX_SNIPPET, best_line
from vaultmem.vault import make_cache

if TYPE_CHECKING:
    from vaultmem.index.manifest import Entry
    from vaultmem.retrieval.vsearch import VectorIndex

__all__ = [
    "Backends",
    "Expansion",
    "ListSpec",
    "QueryOptions",
    "QueryResult",
    "Stage",
    "StageScore",
    "Trace",
    "backends_for",
    "expand",
    "expansion_cache_path",
    "parse_expansion",
    "query",
]

EXPAND_TEMPLATE = "prompts/expand.j2"
LEXICAL_VARIANTS = 2  # asked of the model
SEMANTIC_VARIANTS = 2
MAX_VARIANTS = 3  # accepted per kind, whatever the model sends
MAX_VARIANT_CHARS = 300
MAX_HYPOTHETICAL_CHARS = 2000
MAX_QUERY_CHARS = 4000
# Fragment size when no embedder says otherwise: the in-process MiniLM's (see local.py).
DEFAULT_FRAGMENT_CHARS = 1000
CACHE_DIR = "llm"

Status = Literal["ran", "bypassed", "off", "skipped", "failed"]
NO_EMBEDDER = "no embedder configured"
NO_RERANKER = (
    "no reranker or LLM configured (set VAULTMEM_RERANK_URL and VAULTMEM_RERANK_MODEL, "
    "or [rerank] url and model; an LLM alone reranks too)"
)


# --- values handed to the CLI ------------------------------------------------------------


@dataclass(frozen=True)
class Stage:
    """What one pipeline stage did.

    ``status``: ``ran``; ``bypassed`` (the strong keyword signal made expansion
    unnecessary); ``off`` (turned off by a flag, or not applicable); ``skipped`` (its
    model is not configured); ``failed`` (its model or template failed; the pipeline went
    on without it). The last two are degradations: the CLI prints each as one stderr line.
    """

    name: str
    status: Status
    detail: str = ""

    @property
    def degraded(self) -> bool:
        """Whether the stage is missing for want of a model, or because one failed."""
        return self.status in ("skipped", "failed")

    def as_json(self) -> dict[str, object]:
        """``{"stage", "status", "detail"}``."""
        return {"stage": self.name, "status": self.status, "detail": self.detail}


@dataclass(frozen=True)
class StageScore:
    """A result's 1-based rank and score at one stage."""

    rank: int
    score: float

    def as_json(self) -> dict[str, object]:
        """``{"rank", "score"}`` with the score rounded for display."""
        return {"rank": self.rank, "score": round(self.score, 6)}


@dataclass(frozen=True)
class ListSpec:
    """One retrieval list fed to fusion: which retriever, what text, which weight, and
    how fusion scaled its scores (a note's part of the fused score is
    ``weight · (score − floor) / sd``; :func:`fusion.zscore_fuse`)."""

    name: str  # "bm25:original", "bm25:lead", "vec:lead", "vec:sem-1", "vec:hyde", …
    kind: Literal["bm25", "vec"]
    text: str
    weight: float
    hits: int = 0
    scale: fusion.ListScale = fusion.ListScale(0.0, 0.0)

    def as_json(self) -> dict[str, object]:
        """``{"name", "kind", "text", "weight", "hits", "floor", "sd"}``."""
        return {
            "name": self.name,
            "kind": self.kind,
            "text": self.text,
            "weight": self.weight,
            "hits": self.hits,
            **self.scale.as_json(),
        }


@dataclass(frozen=True)
class Trace:
    """One result's path through the pipeline (for ``--explain``).

    ``lists`` has an entry for every retrieval list, in :attr:`QueryResult.lists` order,
    ``None`` where the note was not in that list. ``rerank`` is ``None`` when reranking
    did not run or the note was beyond the candidate limit; ``fused`` and ``blended`` are
    ``None`` for a note the route reached over the link graph (``reached`` says how).
    ``fragment`` is the line span of the fragment that was reranked and shown,
    ``fragment_source`` how it was chosen
    (``vector``: the best vector hit named it; ``lexical``: most query/intent words;
    ``none``: the note could not be read).
    """

    lists: tuple[tuple[str, StageScore | None], ...]
    fused: StageScore | None
    rerank: StageScore | None
    blended: StageScore | None
    final: StageScore
    fragment: tuple[int, int] | None = None
    fragment_source: str = "none"
    demoted: bool = False
    memory: Ranked | None = None  # what the memory prior did (None: it did not run)
    reached: Reach | None = None  # the intent route's graph path to the note, if it took one
    # The note's rank and score going into the memory prior (after MMR) and coming out
    # (None: the prior did not run, or the note came in below the results it ranked).
    before_prior: StageScore | None = None
    after_prior: StageScore | None = None

    def as_json(self) -> dict[str, object]:
        """The per-result part of ``query --explain --json``'s ``explain`` object.

        ``retrieval`` maps every list name to the note's rank and raw score in it (BM25 or
        cosine), ``null`` where absent; then fused (z-score sum), rerank, blended and
        final; ``memory`` holds the prior and the rank and score before and after it.
        """
        return {
            "retrieval": {name: (s.as_json() if s else None) for name, s in self.lists},
            "fused": self.fused.as_json() if self.fused else None,
            "rerank": self.rerank.as_json() if self.rerank else None,
            "blended": self.blended.as_json() if self.blended else None,
            "final": self.final.as_json(),
            "fragment": list(self.fragment) if self.fragment else None,
            "fragment_source": self.fragment_source,
            "demoted": self.demoted,
            "memory": _memory_json(self.memory, self.before_prior, self.after_prior),
            "reached": self.reached.as_json() if self.reached else None,
        }


def _memory_json(
    item: Ranked | None, before: StageScore | None, after: StageScore | None
) -> dict[str, object] | None:
    if item is None:
        return None
    return {
        "before": before.as_json() if before else None,
        "after": after.as_json() if after else None,
        **item.as_json(),
    }


@dataclass(frozen=True)
class Expansion:
    """The llm's variants of a query. ``cached``: read from the expansion cache."""

    lexical: tuple[str, ...] = ()
    semantic: tuple[str, ...] = ()
    hypothetical: str = ""
    cached: bool = False

    def as_json(self) -> dict[str, object]:
        """``{"lexical", "semantic", "hypothetical", "cached"}``."""
        return {
            "lexical": list(self.lexical),
            "semantic": list(self.semantic),
            "hypothetical": self.hypothetical,
            "cached": self.cached,
        }


@dataclass(frozen=True)
class QueryResult:
    """Results best first, each with its :class:`Trace`; and what every stage did."""

    hits: tuple[Hit, ...]
    traces: tuple[Trace, ...]
    stages: tuple[Stage, ...]
    lists: tuple[ListSpec, ...] = ()
    expansion: Expansion | None = None
    route: Route | None = None

    @property
    def degraded(self) -> tuple[Stage, ...]:
        """The stages that were skipped or failed (one stderr line each in the CLI)."""
        return tuple(s for s in self.stages if s.degraded)

    def stage(self, name: str) -> Stage | None:
        """The record of the stage called ``name``, if it was reached."""
        return next((s for s in self.stages if s.name == name), None)

    def explain_json(self) -> dict[str, object]:
        """Stages, retrieval lists and the expansion: the query-wide part of ``--explain``."""
        return {
            "stages": [s.as_json() for s in self.stages],
            "lists": [spec.as_json() for spec in self.lists],
            "expansion": self.expansion.as_json() if self.expansion else None,
            "route": self.route.as_json() if self.route else None,
        }


@dataclass(frozen=True)
class QueryOptions:
    """Knobs of one query (the CLI flags).

    ``candidates``: how many fused results the reranker sees (SPEC default 30).
    ``intent``: what the searcher is after; steers expansion, fragment choice and the
    rerank query, and disables the strong-signal bypass; a route word (why, when,
    entity, what) selects that route instead. ``route``: the intent route (None: the
    intent's route word, else detected from the question). ``expand``: LLM query expansion
    is opt-in (``--expand``, ``[query] expand = true``). ``rerank``: False turns the
    stage off (``--no-rerank``).
    """

    limit: int = 10
    candidates: int = fusion.CANDIDATE_LIMIT
    intent: str | None = None
    route: str | None = None
    expand: bool = False
    rerank: bool = True
    filters: Filters = field(default_factory=Filters)
    ranking: RankingOptions | None = None  # memory prior and review slots; None: off


@dataclass(frozen=True)
class Backends:
    """The optional models of a query; each ``None`` with the reason in its ``*_note``."""

    embedder: Embedder | None = None
    llm: LLMClient | None = None
    reranker: Reranker | None = None
    # An opened vector index a long-lived caller keeps (eval, benchmarks); else per query.
    vectors: VectorIndex | None = None
    embedder_note: str = NO_EMBEDDER
    llm_note: str = (
        "no LLM configured (set VAULTMEM_LLM_URL and VAULTMEM_LLM_MODEL, or [llm] url and model)"
    )
    reranker_note: str = NO_RERANKER


def backends_for(config: Config) -> Backends:
    """The embedder, llm client and reranker ``config`` asks for; nothing is loaded yet.

    The reranker is the ``/v1/rerank`` endpoint when ``[rerank] url`` is set, else the
    chat model scoring fragments (:class:`~vaultmem.inference.rerank.LLMReranker`) when
    an ``[llm]`` is configured, else none. A role configured wrongly (a URL without a
    model, a bad URL) becomes a missing role with the reason, not an error: the query
    runs on without it.

    Example:
        >>> backends_for(config).reranker  # doctest: +SKIP
    """
    from vaultmem.inference.base import client_config
    from vaultmem.inference.embedders import embedder_for
    from vaultmem.inference.llm import LLMConfig
    from vaultmem.inference.rerank import EndpointReranker, LLMReranker, RerankConfig

    notes: dict[str, Any] = {}
    embedder: Embedder | None = None
    try:
        embedder = embedder_for(config)
        if embedder is None:
            notes["embedder_note"] = 'vectors are off (embedder = "none")'
    except (ConfigError, EndpointError) as exc:
        notes["embedder_note"] = str(exc)

    llm: LLMClient | None = None
    role = config.llm
    if role.url or role.model:
        try:
            llm = LLMClient(client_config(LLMConfig, role))
        except EndpointError as exc:
            notes["llm_note"] = str(exc)

    reranker: Reranker | None = None
    rr = config.rerank
    if rr.url or rr.model:
        try:
            reranker = EndpointReranker(client_config(RerankConfig, rr))
        except EndpointError as exc:
            notes["reranker_note"] = str(exc)
    elif llm is not None:
        reranker = LLMReranker(llm)
    return Backends(embedder=embedder, llm=llm, reranker=reranker, **notes)


# --- expansion ---------------------------------------------------------------------------

_KEYS = {
    "lexical": ("lexical", "lex", "keywords", "keyword"),
    "semantic": ("semantic", "vec", "vector", "paraphrases"),
    "hypothetical": ("hypothetical", "hyde", "passage", "answer"),
}


def _field(value: Mapping[str, Any], kind: str) -> Any:
    for key in _KEYS[kind]:
        if key in value:
            return value[key]
    return None


def _clean(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text[:limit].rstrip()


def _variants(raw: Any, original: str) -> tuple[str, ...]:
    """Usable variant strings: strings only, squeezed, de-duplicated, not the query."""
    items = [raw] if isinstance(raw, str) else raw if isinstance(raw, list) else []
    seen = {" ".join(original.lower().split())}
    out: list[str] = []
    for item in items:
        if not isinstance(item, str):
            continue
        text = _clean(item, MAX_VARIANT_CHARS)
        key = text.lower()
        if text and key not in seen:
            seen.add(key)
            out.append(text)
        if len(out) >= MAX_VARIANTS:
            break
    return tuple(out)


def parse_expansion(reply: str, original: str) -> Expansion:
    """The :class:`Expansion` in an llm reply; :class:`JSONReplyError` when there is none.

    Tolerates what models do: code fences, ``<think>`` blocks, prose around the JSON,
    a lone string where a list was asked for, QMD's key names (``lex``, ``vec``,
    ``hyde``), extra keys, non-string items (dropped), variants equal to the query
    (dropped). A reply with no usable variant at all is an error.

    Example:
        >>> parse_expansion('{"lexical": ["redis ttl"], "semantic": [], "hypothetical": ""}',
        ...                 "cache").lexical
        ('redis ttl',)
    """
    value = parse_json_reply(reply, expect=dict)
    hypothetical = _field(value, "hypothetical")
    if isinstance(hypothetical, list):
        hypothetical = next((h for h in hypothetical if isinstance(h, str)), "")
    hyde = _clean(hypothetical, MAX_HYPOTHETICAL_CHARS) if isinstance(hypothetical, str) else ""
    expansion = Expansion(
        lexical=_variants(_field(value, "lexical"), original),
        semantic=_variants(_field(value, "semantic"), original),
        hypothetical=hyde,
    )
    if not (expansion.lexical or expansion.semantic or expansion.hypothetical):
        keys = ", ".join(sorted(map(str, value))) or "none"
        raise JSONReplyError(f"no lexical, semantic or hypothetical variants (keys: {keys})")
    return expansion


def expansion_cache_path(cache_dir: Path, model: str, prompt: str) -> Path:
    """``<cache>/llm/expand-<sha256(model, prompt)>.json``: one file per model and prompt."""
    digest = hashlib.sha256(f"{model}\n{prompt}".encode()).hexdigest()
    return cache_dir / CACHE_DIR / f"expand-{digest}.json"


def _read_cached(path: Path, original: str) -> Expansion | None:
    try:
        data = json.loads(path.read_bytes())
        found = parse_expansion(json.dumps(data["expansion"]), original)
    except (OSError, ValueError, KeyError, TypeError):
        return None  # missing or damaged: it is only a cache
    return Expansion(found.lexical, found.semantic, found.hypothetical, cached=True)


def _write_cached(path: Path, model: str, original: str, expansion: Expansion) -> None:
    payload = {"model": model, "query": original, "expansion": expansion.as_json()}
    payload["expansion"].pop("cached")  # type: ignore[attr-defined]
    try:
        make_cache(path.parent.parent)  # see expansion_cache_path
        path.parent.mkdir(exist_ok=True)
        atomic_write(path, json.dumps(payload, ensure_ascii=False, indent=1).encode())
    except OSError:
        pass  # an unwritable cache costs a request next time, nothing more


def _strings(count: int) -> dict[str, object]:
    return {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": count}


# The reply shape, sent with JSON mode: llama.cpp servers turn it into a grammar.
EXPANSION_SCHEMA: dict[str, object] = {
    "type": "object",
    "properties": {
        "lexical": _strings(LEXICAL_VARIANTS),
        "semantic": _strings(SEMANTIC_VARIANTS),
        "hypothetical": {"type": "string"},
    },
    "required": ["lexical", "semantic", "hypothetical"],
}


def expand(config: Config, llm: LLMClient, text: str, intent: str | None = None) -> Expansion:
    """Ask the llm for variants of ``text`` (prompt: ``templates/prompts/expand.j2``).

    Answers from the cache when this model saw this exact prompt before (the intent is
    part of the prompt, so it is part of the key). Only a usable reply is cached, so a
    malformed one is asked again next time. Raises :class:`EndpointError` (endpoint
    failed), :class:`JSONReplyError` (unusable reply) or
    :class:`~vaultmem.errors.TemplateError` (a broken vault override).

    Example:
        >>> expand(config, llm, "that caching decision").semantic  # doctest: +SKIP
    """
    from vaultmem.prompts import render

    prompt = render(
        config,
        EXPAND_TEMPLATE,
        query=text,
        intent=intent,
        lexical_count=LEXICAL_VARIANTS,
        semantic_count=SEMANTIC_VARIANTS,
    )
    model = llm.config.model
    path = expansion_cache_path(config.cache_dir, model, prompt)
    cached = _read_cached(path, text)
    if cached is not None:
        return cached
    reply = llm.chat([{"role": "user", "content": prompt}], json_mode=True, schema=EXPANSION_SCHEMA)
    expansion = parse_expansion(reply, text)
    _write_cached(path, model, text, expansion)
    return expansion


# --- the pipeline ------------------------------------------------------------------------


@dataclass
class _Found:
    """What the retrieval lists know about one note."""

    title: str
    type: str
    status: str
    vector_span: tuple[int, int] | None = None  # the best vector hit's fragment
    vector_score: float = -2.0


@dataclass
class _Lists:
    specs: list[ListSpec] = field(default_factory=list)
    ranked: list[list[tuple[str, float]]] = field(default_factory=list)
    found: dict[str, _Found] = field(default_factory=dict)

    def add_bm25(self, name: str, text: str, weight: float, hits: Sequence[LexicalHit]) -> None:
        self._add(ListSpec(name, "bm25", text, weight), [(h.path, h.score) for h in hits])
        for h in hits:
            self.found.setdefault(h.path, _Found(h.title, h.type, h.status))

    def add_vec(self, name: str, text: str, weight: float, hits: Sequence[Hit]) -> None:
        self._add(ListSpec(name, "vec", text, weight), [(h.path, h.score) for h in hits])
        for h in hits:
            found = self.found.setdefault(h.path, _Found(h.title, h.type, h.status))
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


def _confidence_detail(scores: Sequence[float]) -> str:
    ranked = sorted(scores, reverse=True)[:2]
    parts = [f"{s:.2f} (confidence {fusion.bm25_confidence(s):.3f})" for s in ranked]
    labels = ("top", "next")
    return ", ".join(f"{label} {part}" for label, part in zip(labels, parts, strict=False))


def _strong_signal_stage(scores: Sequence[float], intent: str | None) -> Stage:
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


EXPANSION_OFF = (
    "off: opt-in with --expand or [query] expand = true (a small local model, SmolLM2, "
    "cost 5.9% MRR@10 on the benchmark)"
)


def _expansion_stage(
    config: Config,
    backends: Backends,
    text: str,
    intent: str | None,
    options: QueryOptions,
    strong: bool,
) -> tuple[Expansion | None, Stage]:
    if not options.expand:
        return None, Stage("expansion", "off", EXPANSION_OFF)
    if strong:
        return None, Stage("expansion", "bypassed", "strong keyword signal")
    if backends.llm is None:
        return None, Stage("expansion", "skipped", backends.llm_note)
    try:
        found = expand(config, backends.llm, text, intent)
    except JSONReplyError as exc:
        return None, Stage("expansion", "failed", f"unusable LLM reply: {exc}")
    except VaultmemError as exc:  # endpoint failure, broken template override
        return None, Stage("expansion", "failed", str(exc))
    counts = (
        f"{len(found.lexical)} lexical, {len(found.semantic)} semantic variants"
        f"{', a hypothetical passage' if found.hypothetical else ''}"
    )
    return found, Stage("expansion", "ran", counts + (" (cached)" if found.cached else ""))


def _bm25_lists(
    config: Config,
    index: LexicalIndex,
    lists: _Lists,
    text: str,
    probe: list[LexicalHit],
    expansion: Expansion | None,
    depth: int,
    filters: Filters,
) -> Stage:
    from vaultmem.retrieval.search import lexical_hits

    lists.add_bm25("bm25:original", text, fusion.BM25_LIST_WEIGHT, probe)
    lead = lexical_hits(config, text, limit=depth, filters=filters, index=index, lead=True)
    lists.add_bm25("bm25:lead", text, fusion.LEAD_KEYWORD_WEIGHT, lead)
    weight = fusion.VARIANT_SHARE * fusion.BM25_LIST_WEIGHT
    for n, variant in enumerate(expansion.lexical if expansion else (), start=1):
        hits = lexical_hits(config, variant, limit=depth, filters=filters, index=index)
        lists.add_bm25(f"bm25:lex-{n}", variant, weight, hits)
    names = [f"{s.name.split(':')[1]} ({s.hits})" for s in lists.specs if s.kind == "bm25"]
    return Stage("bm25", "ran", f"{len(names)} list(s): {', '.join(names)}")


def _vector_lists(
    config: Config,
    backends: Backends,
    lists: _Lists,
    text: str,
    expansion: Expansion | None,
    depth: int,
    filters: Filters,
) -> Stage:
    embedder = backends.embedder
    if embedder is None:
        # Vectors the user turned off (or never set up) are a choice, not a degradation.
        chosen = config.embedder == "none" or backends.embedder_note == NO_EMBEDDER
        return Stage(
            "vectors", "off" if chosen else "skipped", f"{backends.embedder_note}: BM25 only"
        )
    queries: list[tuple[str, str, float]] = [("vec:original", text, fusion.VECTOR_LIST_WEIGHT)]
    weight = fusion.VARIANT_SHARE * fusion.VECTOR_LIST_WEIGHT
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
        why = f"no vectors for model {embedder.model_id} yet: run `vaultmem embed`"
        return Stage("vectors", "skipped", f"{why}: BM25 only")
    texts = [q[:MAX_QUERY_CHARS] for _, q, _ in queries]
    try:
        # One embedding call for every text: a single batch, one request to an endpoint.
        if backends.vectors is not None:
            vectors = embedder.embed(texts)
            found = backends.vectors.nearest_with_leads(vectors, limit=depth, filters=filters)
        else:
            vectors, opened = embed_and_open(config, embedder, texts)
            with opened:
                found = opened.nearest_with_leads(vectors, limit=depth, filters=filters)
    except VaultmemError as exc:  # no vectors yet, endpoint down, store trouble
        return Stage("vectors", "failed", f"{exc}: BM25 only")
    for (name, query_text, weight), (hits, leads) in zip(queries, found, strict=True):
        lists.add_vec(name, query_text, weight, hits)
        if name == "vec:original":  # the note-lead list: of the original query only
            lists.add_vec("vec:lead", query_text, fusion.LEAD_VECTOR_WEIGHT, leads)
    names = [f"{s.name.split(':')[1]} ({s.hits})" for s in lists.specs if s.kind == "vec"]
    return Stage("vectors", "ran", f"{len(names)} list(s), {embedder.model_id}: {', '.join(names)}")


@dataclass(frozen=True)
class _Piece:
    """One fragment of a note: its file line span and the text the reranker reads."""

    start_line: int
    end_line: int
    text: str


class _Fragments:
    """The fragments of candidate notes, from the embed sweep's cache where it has them.

    The fragment rows in the manifest (keyed by note content hash) give line spans without
    parsing markdown, ~10x cheaper per note than splitting it again; a note it lacks (no
    embedder, or edited since the last sweep) is split here, as the sweep would split it.
    """

    def __init__(self, config: Config, max_chars: int) -> None:
        from vaultmem.index.records import FragmentCache

        self.config = config
        self.max_chars = max_chars
        self.cache = FragmentCache.load(config.cache_dir, max_chars)
        self._entries: dict[str, Entry] = {}

    def prefetch(self, paths: Sequence[str]) -> None:
        """Read the manifest rows of ``paths`` at once (one connection, not one each)."""
        from vaultmem.index import manifest as mf

        # The candidates' rows only: loading every entry would cost a big vault a second.
        none: dict[str, Entry] = {}
        self._entries.update(mf.read(self.config.cache_dir, none, lambda s: s.get_many(paths)))

    def of(self, path: str) -> list[_Piece]:
        """The note's fragments in order (empty when it cannot be read)."""
        from vaultmem.index import manifest as mf

        entry = self._entries.get(path) or mf.get_entry(self.config.cache_dir, path)
        refs = self.cache.get(entry.hash) if entry is not None else None
        if not refs:
            return self._split(path)
        try:
            text = (self.config.vault / path).read_text("utf-8-sig", errors="replace")
        except OSError:
            return []
        lines = text.splitlines()
        title = entry.title if entry is not None else ""
        pieces = []
        for ref in refs:
            # The same "Title > Heading" line the embedded text starts with.
            head = ref.heading if ref.heading.startswith(title) else f"{title} > {ref.heading}"
            body = "\n".join(lines[ref.start_line - 1 : ref.end_line])
            pieces.append(_Piece(ref.start_line, ref.end_line, f"{head.strip(' >')}\n{body}"))
        return pieces

    def _split(self, path: str) -> list[_Piece]:
        from vaultmem.index.records import note_fragments
        from vaultmem.note import parse_note

        try:
            raw = (self.config.vault / path).read_bytes()
            note = parse_note(path, raw, keys=self.config.keys)
            frags = note_fragments(note, self.max_chars)
        except (OSError, NoteError, ValueError):
            return []
        return [_Piece(f.start_line, f.end_line, f.text) for f in frags]


def _choose_fragment(
    frags: Sequence[_Piece], span: tuple[int, int] | None, terms: set[str]
) -> tuple[_Piece | None, str]:
    """The fragment a vector hit named, else the one sharing most query/intent words."""
    if not frags:
        return None, "none"
    if span is not None:
        for frag in frags:
            if (frag.start_line, frag.end_line) == span:
                return frag, "vector"
    # max() keeps the first of equal counts: ties go to the earlier fragment.
    best = max(frags, key=lambda f: len(terms & set(analyse(f.text))))
    return best, "lexical"


def _snippet(
    config: Config, path: str, frag: _Piece | None, terms: list[str]
) -> tuple[str, int, int | None]:
    """``(text, line, line_end)``: the fragment's best matching line, else its text."""
    if frag is None:
        return "", 0, None
    try:
        lines = (config.vault / path).read_text("utf-8-sig", errors="replace").splitlines()
    except OSError:
        return "", 0, None
    window = lines[: frag.end_line]
    best = best_line(window, terms, first_line=frag.start_line)
    raw = window[best.line - 1] if 0 < best.line <= len(window) else ""
    if set(analyse(raw)) & set(terms):
        return best.text, best.line, best.line
    # No query word in the fragment (a paraphrase hit): show its words, as vsearch does.
    span = [ln for ln in lines[frag.start_line - 1 : frag.end_line] if ln.strip()]
    prose = [ln for ln in span if not ln.lstrip().startswith("#")] or span
    text = " ".join(" ".join(prose).split())
    if len(text) > MAX_SNIPPET:
        text = text[: MAX_SNIPPET - 1].rstrip() + "…"
    return text, frag.start_line, frag.end_line


def _rerank_query(text: str, intent: str | None) -> str:
    return f"{text}\nIntent: {intent}" if intent else text


def _rerank_stage(
    backends: Backends,
    options: QueryOptions,
    query_text: str,
    pool: Sequence[str],
    texts: Mapping[str, str],
) -> tuple[dict[str, float], Stage]:
    from vaultmem.inference.rerank import EndpointReranker, LLMReranker

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
    try:
        scores = reranker.rerank(query_text, [texts[doc] for doc in chosen])
    except VaultmemError as exc:
        return {}, Stage("rerank", "failed", f"{exc}: fused order kept")
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


def _demoted(order: Sequence[str], texts: Mapping[str, str]) -> set[str]:
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


def _memory_stage(
    config: Config,
    index: LexicalIndex,
    final: list[tuple[str, float]],
    text: str,
    options: QueryOptions,
    texts: Mapping[str, str],
) -> tuple[list[tuple[str, float]], dict[str, Ranked], Stage]:
    """The memory prior and review slots over the final order, each result scored by
    what the prior ranked it by. Near-duplicate fragments (``texts``; MMR's test) count
    as equally relevant where two notes contradict each other."""
    if options.ranking is None:
        return final, {}, Stage("memory", "off", "--no-prior --no-review: retrieval order kept")
    ranking = replace(options.ranking, show_status=options.filters.status)
    entries = index.entries(doc for doc, _ in final)
    versions = version_terms(config, text, index)
    grams = {doc: fusion.bigrams(texts.get(doc, "")) for doc, _ in final}

    def alike(a: str, b: str) -> bool:
        return fusion.jaccard(grams[a], grams[b]) > fusion.MMR_THRESHOLD

    kept = memory_rank.rank(final, entries, text, ranking, options.limit, versions, alike)
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
class _Routed:
    """What the intent route did: the new order and what each result needs from it."""

    route: Route
    order: list[tuple[str, float]]
    stage: Stage
    entries: Mapping[str, Entry] = field(default_factory=dict)
    reached: Mapping[str, Reach] = field(default_factory=dict)
    dates: Mapping[str, str] = field(default_factory=dict)


def _resolver(config: Config) -> Callable[[str], str | None]:
    """A name → note path function for entity detection (None when no note has it)."""
    from vaultmem.lookup import resolve

    def find(name: str) -> str | None:
        try:
            return resolve(config, name)
        except VaultmemError:  # not found, ambiguous, or a path outside the vault
            return None

    return find


def _route_stage(
    config: Config,
    index: LexicalIndex,
    route: Route,
    final: list[tuple[str, float]],
    memory: Mapping[str, Ranked],
    options: QueryOptions,
) -> _Routed:
    """``final`` reordered by the route (``what``: untouched)."""
    said = f"{route.name} ({route.rule})"
    if route.name == "what" or (route.name == "entity" and route.entity is None):
        why = "pipeline order kept" if route.name == "what" else "no note by that name: order kept"
        return _Routed(route, final, Stage("route", "ran", f"{said}: {why}"))
    # The memory prior's score where it ran: it already holds superseded notes down.
    top = max((score for _, score in final), default=0.0) or 1.0
    ranked = [(doc, memory[doc].score if doc in memory else score / top) for doc, score in final]
    entries = index.entries(doc for doc, _ in ranked)
    if route.name == "when":
        order, found = routing.route_when(ranked, entries, options.limit, route.oldest_first)
        dates = {doc: day.isoformat() for doc, (day, _) in found.items()}
        detail = f"{said}: {len(dates)} dated note(s), {route.as_json()['order']}"
        return _Routed(route, order, Stage("route", "ran", detail), entries, dates=dates)
    from vaultmem.index.graph import LinkGraph
    from vaultmem.retrieval.vsearch import passes

    graph = LinkGraph.load(config)
    if route.entity is None:
        reach = routing.why_reach(graph, ranked)
    else:
        reach = routing.entity_links(graph, route.entity)
    wanted = {*reach, *([route.entity] if route.entity else [])}
    entries = {**entries, **index.entries(p for p in wanted if p not in entries)}

    def shown(path: str) -> bool:
        return path in entries and passes(config, path, entries[path], options.filters)

    reach = {p: r for p, r in reach.items() if shown(p)}
    if route.entity is None:
        order = routing.route_why(ranked, entries, graph, reach)
        detail = f"{said}: {len(reach)} note(s) reached over {', '.join(routing.WHY_LINKS)}"
    elif not shown(route.entity):
        return _Routed(route, final, Stage("route", "ran", f"{said}: the note is filtered out"))
    else:
        order = routing.route_entity(ranked, route.entity, reach)
        detail = f"{said}: {route.entity} first, {len(reach)} linked note(s)"
    return _Routed(route, order, Stage("route", "ran", detail), entries, reach)


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
            f"{len(probe)} keyword hits" + (f"; {_confidence_detail(scores)}" if scores else ""),
        )
    )
    signal = _strong_signal_stage(scores, intent)
    stages.append(signal)
    strong = fusion.strong_signal(scores, has_intent=intent is not None)
    expansion, stage = _expansion_stage(config, backends, text, intent, options, strong)
    stages.append(stage)

    lists = _Lists()
    stages.append(_bm25_lists(config, index, lists, text, probe, expansion, depth, filters))
    stages.append(_vector_lists(config, backends, lists, text, expansion, depth, filters))

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
    fragments = _Fragments(config, max_chars)
    chosen: dict[str, tuple[_Piece | None, str]] = {}
    fragments.prefetch([doc for doc, _ in pool])
    for doc, _ in pool:
        frags = fragments.of(doc)
        chosen[doc] = _choose_fragment(frags, lists.found[doc].vector_span, term_set)
    texts = {doc: frag.text for doc, (frag, _) in chosen.items() if frag is not None}

    pool_ids = [doc for doc, _ in pool]
    rerank, stage = _rerank_stage(backends, options, _rerank_query(text, intent), pool_ids, texts)
    stages.append(stage)
    blended = fusion.blend(pool, rerank)
    if rerank:
        stages.append(
            Stage("blend", "ran", "retrieval weight 0.75 (ranks 1-3), 0.60 (4-10), 0.40 beyond")
        )
    else:
        stages.append(Stage("blend", "off", "no rerank scores: normalised fused scores"))
    final = fusion.mmr_demote(blended, texts)
    demoted = _demoted([doc for doc, _ in final], texts)
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
    final, memory, stage = _memory_stage(config, index, final, text, ranked_for, texts)
    stages.append(stage)
    after_prior = {
        doc: StageScore(rank, memory[doc].score)
        for rank, (doc, _) in enumerate(final, start=1)
        if doc in memory
    }
    routed = _route_stage(config, index, route, final, memory, options)
    final = routed.order
    stages.append(routed.stage)
    for doc, _ in final[: options.limit]:
        if doc not in chosen:  # reached over the graph: no retrieval list had it
            entry = routed.entries[doc]
            lists.found[doc] = _Found(entry.title, entry.type, entry.status)
            chosen[doc] = _choose_fragment(fragments.of(doc), None, term_set)

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
        snippet, line, line_end = _snippet(config, doc, frag, snippet_terms)
        title = info.title or PurePosixPath(doc).stem
        review = doc in memory and memory[doc].review
        day = routed.dates.get(doc)
        hits.append(
            Hit(doc, title, score, snippet, line, info.type, info.status, line_end, review, day)
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
