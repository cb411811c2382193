"""Rerankers: a cross-encoder endpoint, or a chat model asked for scores.

Both implement :class:`Reranker`: one relevance score per document, in input order,
higher is more relevant, always in ``[0, 1]``.

``EndpointReranker`` speaks the rerank API shared by llama-server, Jina, Cohere and
vLLM: ``POST {url}/v1/rerank`` with ``{model, query, documents, top_n}`` answered by
``{"results": [{"index", "relevance_score"}]}``. Some servers (llama-server among
them) return raw cross-encoder logits rather than probabilities; those are mapped
into ``[0, 1]`` with the logistic function (see :class:`RerankConfig`).

``LLMReranker`` is the fallback when only a chat model is configured: one chat call
scores every document 0–10 in a JSON reply. A reply it cannot use degrades to 0.5
for every document (no reordering) with the reason in ``last_error``.

Endpoint failures raise :class:`~vaultmem.errors.EndpointError` (one line naming the
URL, never the key) from both; the caller skips reranking, as for any optional stage.
``httpx`` (installed with ``openai``) is imported lazily.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol
from urllib.parse import urlsplit

from vaultmem.errors import EndpointError
from vaultmem.inference.http import (
    Failure,
    base_url,
    call_with_retries,
    check_endpoint,
    check_retry_settings,
    display_url,
    status_failure,
    translate_httpx_error,
)
from vaultmem.inference.llm import JSONReplyError, LLMClient, parse_json_reply

if TYPE_CHECKING:  # pragma: no cover - typing only
    import httpx

log = logging.getLogger(__name__)

_ROLE = "rerank endpoint"


class Reranker(Protocol):
    """Scores documents for a query with a model finer than retrieval's."""

    def rerank(self, query: str, documents: Sequence[str], top_n: int | None = None) -> list[float]:
        """One score in ``[0, 1]`` per document, in input order; higher is more relevant.

        With ``top_n``, only the ``top_n`` best documents keep their score; the others
        get 0.0 (servers then send back only the best, saving work and bandwidth).
        """
        ...


# -- scores -------------------------------------------------------------------------------


def logistic(x: float) -> float:
    """``1 / (1 + e^-x)``, without overflow for large ``|x|``; NaN maps to 0.0."""
    if math.isnan(x):
        return 0.0
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    z = math.exp(x)
    return z / (1.0 + z)


def keep_top_n(scores: list[float], top_n: int | None) -> list[float]:
    """``scores`` with all but the ``top_n`` best set to 0.0 (ties: earlier input wins)."""
    if top_n is None or top_n >= len(scores):
        return scores
    best = sorted(range(len(scores)), key=lambda i: (-scores[i], i))[:top_n]
    keep = set(best)
    return [s if i in keep else 0.0 for i, s in enumerate(scores)]


def _check_top_n(top_n: int | None) -> None:
    if top_n is not None and (isinstance(top_n, bool) or top_n < 1):
        raise ValueError("top_n must be a positive integer or None")


# -- endpoint reranker ----------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class RerankConfig:
    """How to reach one rerank endpoint.

    ``api_key`` is excluded from ``repr`` and sent as ``Authorization: Bearer`` only
    when set. ``batch_size`` caps documents per request (servers limit them); more
    are sent in several requests, scored on the same scale. ``max_chars`` truncates
    each document (the cross-encoder's window is small anyway).

    ``normalise`` says how raw scores become ``[0, 1]``:

    * ``"auto"`` (default): the logistic function once a server has returned any
      score outside ``[0, 1]`` (those are logits); from then on every reply of this
      reranker is mapped the same way, so scores stay comparable across queries.
    * ``"logistic"``: always map (servers known to return logits).
    * ``"none"``: scores are probabilities already; clamped to ``[0, 1]``.
    """

    url: str
    model: str
    api_key: str | None = field(default=None, repr=False)
    timeout: float = 30.0
    max_retries: int = 3
    batch_size: int = 64
    max_chars: int = 4000
    normalise: Literal["auto", "logistic", "none"] = "auto"
    backoff_base: float = 0.5
    backoff_max: float = 30.0

    def __post_init__(self) -> None:
        check_endpoint(self.url, self.model, _ROLE)
        check_retry_settings(
            _ROLE,
            max_retries=self.max_retries,
            timeout=self.timeout,
            backoff_base=self.backoff_base,
            backoff_max=self.backoff_max,
        )
        for name in ("batch_size", "max_chars"):
            if getattr(self, name) < 1:
                raise EndpointError(f"{_ROLE}: {name} must be at least 1")
        if self.normalise not in ("auto", "logistic", "none"):
            raise EndpointError(f"{_ROLE}: normalise must be 'auto', 'logistic' or 'none'")


def rerank_url(url: str) -> str:
    """The POST URL: ``{root}/v1/rerank``, ``{base}/rerank`` for a URL with a path
    (``…/v1``), or the URL itself when it already ends in ``/rerank``."""
    base = base_url(url)
    if urlsplit(base).path.rstrip("/").endswith(("/rerank", "/reranking")):
        return base
    return base + "/rerank"


class EndpointReranker:
    """A :class:`Reranker` over a ``/v1/rerank`` endpoint. Thread-safe."""

    def __init__(self, config: RerankConfig) -> None:
        self.config = config
        self._endpoint = rerank_url(config.url)
        self._url = display_url(self._endpoint)
        self._client: httpx.Client | None = None
        self._client_lock = threading.Lock()
        self._logits = config.normalise == "logistic"

    def __repr__(self) -> str:
        return f"EndpointReranker(url={self._url!r}, model={self.config.model!r})"

    @property
    def url(self) -> str:
        """The POST URL as shown in messages (no credentials)."""
        return self._url

    def rerank(self, query: str, documents: Sequence[str], top_n: int | None = None) -> list[float]:
        """Scores in ``[0, 1]`` per document, input order (see :class:`Reranker`).

        Raises :class:`EndpointError` (one line naming the URL) when a request still
        fails after ``max_retries`` retries of 429/5xx/timeouts, fails in a way a retry
        cannot fix (4xx), or the reply is malformed.
        """
        if isinstance(documents, str):  # a lone string is a sequence of characters
            raise TypeError("rerank() takes a sequence of documents, not a string")
        _check_top_n(top_n)
        if not documents:
            return []
        docs = [self._prepare(d) for d in documents]
        size = self.config.batch_size
        raw: dict[int, float] = {}
        if len(docs) <= size:
            # One request: let the server cut to top_n itself.
            raw = self._request_batch(query, docs, 0, top_n)
        else:
            # Several requests: each must score all of its documents, or the cut to
            # top_n would be per batch instead of overall.
            for offset in range(0, len(docs), size):
                raw.update(self._request_batch(query, docs[offset : offset + size], offset, None))
        # Decided over the whole reply (all batches), so one query's documents are
        # never on two scales.
        if self.config.normalise == "auto" and any(not 0.0 <= s <= 1.0 for s in raw.values()):
            self._logits = True
        mapped = {i: self._to_unit(s) for i, s in raw.items()}
        # Documents the server left out (beyond top_n) rank below every returned one.
        scores = [mapped.get(i, 0.0) for i in range(len(docs))]
        return keep_top_n(scores, top_n)

    def close(self) -> None:
        """Close the HTTP connection pool (a later call opens a new one)."""
        with self._client_lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    def __enter__(self) -> EndpointReranker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals --------------------------------------------------------------------

    def _prepare(self, text: str) -> str:
        text = str(text)[: self.config.max_chars]
        # Some servers reject empty documents, failing the whole request for one.
        return text if text.strip() else " "

    def _to_unit(self, score: float) -> float:
        if self._logits:
            return logistic(score)
        if math.isnan(score):
            return 0.0
        return min(1.0, max(0.0, score))

    def _get_client(self) -> httpx.Client:
        with self._client_lock:
            if self._client is None:
                try:
                    import httpx
                except ImportError:
                    raise EndpointError(
                        f"{_ROLE} {self._url}: the 'httpx' package is not installed"
                    ) from None
                headers = {"Accept": "application/json"}
                if self.config.api_key:
                    headers["Authorization"] = f"Bearer {self.config.api_key}"
                self._client = httpx.Client(
                    timeout=httpx.Timeout(self.config.timeout), headers=headers
                )
            return self._client

    def _request_batch(
        self, query: str, docs: list[str], offset: int, top_n: int | None
    ) -> dict[int, float]:
        """Raw scores by overall document index for one batch (retried)."""
        payload = {
            "model": self.config.model,
            "query": query,
            "documents": docs,
            "top_n": min(top_n, len(docs)) if top_n is not None else len(docs),
        }
        scores = call_with_retries(
            lambda: self._post(payload, len(docs)),
            label=f"{_ROLE} {self._url}",
            max_retries=self.config.max_retries,
            backoff_base=self.config.backoff_base,
            backoff_max=self.config.backoff_max,
            api_key=self.config.api_key,
            logger=log,
            endpoint=self.config.url,
        )
        return {offset + i: s for i, s in scores.items()}

    def _post(self, payload: dict[str, Any], count: int) -> dict[int, float]:
        """One HTTP request; raw scores by batch index, or raises ``Failure``."""
        client = self._get_client()
        try:
            response = client.post(self._endpoint, json=payload)
        except Exception as exc:  # every httpx failure is translated below
            raise translate_httpx_error(exc, self.config.timeout) from None
        try:
            body: Any = response.json()
        except ValueError:
            body = response.text
        if response.status_code >= 400:
            raise status_failure(response.status_code, body, response.headers)
        return _parse_results(body, count)


def _parse_results(body: Any, count: int) -> dict[int, float]:
    """``{index: score}`` from a rerank reply; tolerates the ``data``/bare-list and
    ``score`` spellings some servers (TEI, older vLLM) use."""
    items = body.get("results", body.get("data")) if isinstance(body, dict) else body
    if not isinstance(items, list):
        raise Failure("malformed response (no results list)", retryable=False)
    scores: dict[int, float] = {}
    for item in items:
        if not isinstance(item, dict):
            raise Failure("malformed response (result is not an object)", retryable=False)
        index = item.get("index")
        score = item.get("relevance_score", item.get("score"))
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < count:
            raise Failure(
                f"malformed response (result index {index!r} for {count} documents)",
                retryable=False,
            )
        if isinstance(score, bool) or not isinstance(score, int | float):
            raise Failure(f"malformed response (score {score!r} is not a number)", retryable=False)
        scores[index] = float(score)
    return scores


# -- LLM reranker -----------------------------------------------------------------------------

_LLM_SYSTEM = (
    "You judge how relevant documents are to a search query. Score every document "
    "from 0 (irrelevant) to 10 (directly answers the query). Reply with a JSON object "
    'only, no prose: {"scores": [s1, s2, ...]} with exactly one integer per document, '
    "in the order the documents are given."
)


class LLMReranker:
    """A :class:`Reranker` asking a chat model to score documents 0–10 in one reply.

    A reply it cannot use (no JSON, wrong number of scores, non-numbers) gives 0.5 to
    every document — the retrieval order then stands — and sets :attr:`last_error`;
    a usable reply clears it. Endpoint failures raise :class:`EndpointError`.
    More than ``batch_size`` documents are scored in several calls (models lose
    count over long lists); one unusable reply degrades the whole query.
    """

    def __init__(self, llm: LLMClient, *, max_chars: int = 1000, batch_size: int = 30) -> None:
        if max_chars < 1 or batch_size < 1:
            raise ValueError("max_chars and batch_size must be at least 1")
        self.llm = llm
        self.max_chars = max_chars
        self.batch_size = batch_size
        self.last_error: str | None = None

    def __repr__(self) -> str:
        return f"LLMReranker({self.llm!r})"

    @property
    def degraded(self) -> bool:
        """Whether the last :meth:`rerank` fell back to uniform 0.5 scores."""
        return self.last_error is not None

    def rerank(self, query: str, documents: Sequence[str], top_n: int | None = None) -> list[float]:
        """Scores in ``[0, 1]`` (the model's 0–10 divided by 10), input order.

        ``top_n`` is applied here (see :class:`Reranker`), except to a degraded result,
        which stays 0.5 everywhere so that it reorders nothing.
        """
        if isinstance(documents, str):
            raise TypeError("rerank() takes a sequence of documents, not a string")
        _check_top_n(top_n)
        self.last_error = None
        if not documents:
            return []
        scores: list[float] = []
        for offset in range(0, len(documents), self.batch_size):
            batch = documents[offset : offset + self.batch_size]
            got = self._score_batch(query, batch)
            if isinstance(got, str):
                self.last_error = f"llm reranker: {got}"
                log.info("%s; scores left at 0.5", self.last_error)
                return [0.5] * len(documents)
            scores.extend(got)
        return keep_top_n(scores, top_n)

    def _score_batch(self, query: str, batch: Sequence[str]) -> list[float] | str:
        """Scores in [0, 1] for one batch, or the reason the reply was unusable."""
        parts = [f"Query: {query}", ""]
        for i, doc in enumerate(batch, 1):
            text = str(doc)[: self.max_chars]
            parts.append(f'<document n="{i}">\n{text}\n</document>')
        parts.append(f"\nReturn the JSON object with exactly {len(batch)} scores.")
        messages = [
            {"role": "system", "content": _LLM_SYSTEM},
            {"role": "user", "content": "\n".join(parts)},
        ]
        # Room for the numbers even when the configured budget is small.
        budget = max(self.llm.config.max_tokens, 32 + 8 * len(batch))
        reply = self.llm.chat(
            messages, json_mode=True, max_tokens=budget, schema=_schema(len(batch))
        )
        return _scores_from_reply(reply, len(batch))


def _schema(count: int) -> dict[str, Any]:
    """The reply shape, so grammar-constrained servers (llama.cpp) answer exactly it."""
    score = {"type": "integer", "minimum": 0, "maximum": 10}
    scores = {"type": "array", "items": score, "minItems": count, "maxItems": count}
    return {"type": "object", "properties": {"scores": scores}, "required": ["scores"]}


def _scores_from_reply(reply: str, count: int) -> list[float] | str:
    """The 0–10 scores in ``reply`` mapped to [0, 1], or why they cannot be used."""
    try:
        value: Any = parse_json_reply(reply, expect=dict)
    except JSONReplyError:
        try:
            value = parse_json_reply(reply, expect=list)  # a bare [..] is fine too
        except JSONReplyError as exc:
            return str(exc)
    raw = value.get("scores") if isinstance(value, dict) else value
    if isinstance(value, dict) and raw is None:
        # Some models rename the key; a single list value is unambiguous.
        lists = [v for v in value.values() if isinstance(v, list)]
        raw = lists[0] if len(lists) == 1 else None
    if not isinstance(raw, list):
        return 'reply has no "scores" list'
    if len(raw) != count:
        return f"reply has {len(raw)} scores for {count} documents"
    scores: list[float] = []
    for item in raw:
        # Models sometimes answer [{"document": 1, "score": 7}, …] despite the prompt.
        number = item.get("score") if isinstance(item, dict) else item
        if isinstance(number, str):
            try:
                number = float(number)
            except ValueError:
                return f"score {number!r} is not a number"
        if isinstance(number, bool) or not isinstance(number, int | float):
            return f"score {number!r} is not a number"
        if math.isnan(number):
            return "score is NaN"
        scores.append(min(10.0, max(0.0, float(number))) / 10.0)
    return scores
