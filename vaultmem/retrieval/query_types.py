"""`query_types`: the request and result values of :func:`vaultmem.retrieval.query.query`.

What a query is asked with (:class:`QueryOptions`, the optional models in
:class:`Backends`, built from the config by :func:`backends_for`) and what it hands
back (:class:`QueryResult`: hits, a :class:`Trace` per hit and a :class:`Stage` per
pipeline stage), with the JSON each value gives ``query --explain --json``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from vaultmem.config import Config
from vaultmem.errors import ConfigError, EndpointError
from vaultmem.inference.base import Embedder
from vaultmem.model import Filters, Hit
from vaultmem.retrieval import fusion
from vaultmem.retrieval.memory_rank import Ranked, RankingOptions
from vaultmem.retrieval.routing import Reach, Route

if TYPE_CHECKING:
    # Only named in annotations: a keyword search or a hook never loads the chat client.
    from vaultmem.inference.llm import LLMClient
    from vaultmem.inference.rerank import Reranker
    from vaultmem.retrieval.vsearch import VectorIndex

__all__ = [
    "MAX_QUERY_CHARS",
    "NO_EMBEDDER",
    "NO_RERANKER",
    "Backends",
    "Expansion",
    "ListSpec",
    "QueryOptions",
    "QueryResult",
    "Stage",
    "StageScore",
    "Status",
    "Trace",
    "backends_for",
]

Status = Literal["ran", "bypassed", "off", "skipped", "failed"]
NO_EMBEDDER = "no embedder configured"
NO_RERANKER = (
    "no reranker or LLM configured (set VAULTMEM_RERANK_URL and VAULTMEM_RERANK_MODEL, "
    "or [rerank] url and model; an LLM alone reranks too)"
)
MAX_QUERY_CHARS = 4000

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
    # The endpoint (``scheme://host:port``) found unreachable, when that is why the stage
    # failed: the CLI says one line for every stage one dead endpoint cost.
    endpoint: str = ""

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
    # The original query's list weights; None: fusion.QUERY_WEIGHTS (surfacing: its own).
    weights: fusion.ListWeights | None = None


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
    from vaultmem.inference.llm import LLMClient, LLMConfig
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
