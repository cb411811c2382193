"""The REST API: the operations of :mod:`vaultmem.api` over HTTP, with OpenAPI docs.

:func:`rest_app` builds the ASGI application `vaultmem serve` runs on uvicorn. Every
route is a thin shell: it turns a JSON body into a request value of :mod:`vaultmem.model`
(which validates it), calls one function of :mod:`vaultmem.api` in a worker thread (the
api blocks; the vault's lock serialises) and answers its ``as_json()``. Errors are JSON
``{"error": "<the line the CLI prints after 'vaultmem: error: '>"}``; no traceback ever
reaches a client.

Security, in the order it is checked (:class:`Guard`, outermost, so it covers mounted
apps and the docs too):

- ``Host`` must be one of ``allowed_hosts`` (421): a page whose DNS name was rebound to
  127.0.0.1 sends its own name, so it cannot talk to a loopback server;
- ``Origin``, when sent, must be ``http(s)://`` one of those hosts (403);
- ``Authorization: Bearer <token>`` when a token is set, compared in constant time (401
  with ``WWW-Authenticate: Bearer``); ``/v1/health`` and the docs need none;
- the body is read before any route parses it, counting bytes (413 past ``max_body``,
  whatever ``Content-Length`` says).

:func:`check_bind` refuses a non-loopback address without a token; `serve` and
`mcp --http` call it before they bind.

Statuses (:data:`vaultmem.servers.schema.STATUS`, one table: the handlers answer from
it, and every route's documented responses are made of it): RequestError and NoteError
(a bad request, a name outside the vault) 422; NoteNotFound 404; AmbiguousNote,
IndexStateError, ConfigError (the vault cannot answer this as it is: not indexed, no
embedder) 409; LockBusy and ConflictError 503 with ``Retry-After``; EndpointError 502;
any other error 500 with its line (a bug: 500 with no detail, the traceback in the
server's log). A body that is no JSON object (not JSON or UTF-8, an array, empty,
another Content-Type) is a 422 saying so; unknown routes 404, wrong methods 405 with
``Allow``. The OpenAPI document has the bearer scheme (with a token) and the bodies of
:mod:`vaultmem.servers.schema`.

FastAPI and pydantic are imported by the servers only: no other command pays for them.
"""

from __future__ import annotations

import errno
import hmac
import ipaddress
import json
import logging
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from datetime import UTC, datetime
from typing import Any

from fastapi import APIRouter, Depends, FastAPI, Query, Request
from fastapi import Path as PathParam
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from fastapi.security import HTTPBearer
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from vaultmem import __version__, api
from vaultmem.api import OpenVault
from vaultmem.errors import (
    AmbiguousNote,
    ConfigError,
    ConflictError,
    EndpointError,
    IndexStateError,
    LockBusy,
    NoteError,
    NoteNotFound,
    RequestError,
    VaultmemError,
)
from vaultmem.model import NOTE_ACTIONS, TEXT_PATTERN, parse_tags
from vaultmem.servers.schema import (
    FlagBody,
    ReinforceBody,
    RememberBody,
    SearchBody,
    SimilarBody,
    SnoozeBody,
    SurfaceBody,
    TimelineBody,
    answers,
    guard_answers,
    status_for,
)

log = logging.getLogger("vaultmem.serve")

MAX_BODY = 1_000_000
# Need no token: they say nothing of the vault ("ok", and the API's own shape).
PUBLIC_PATHS = frozenset({"/v1/health", "/docs", "/docs/oauth2-redirect", "/openapi.json"})
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
RETRY_AFTER = "1"

# ----------------------------------------------------------------------------- binding


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or address to bind) only accepts this machine's connections."""
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: str | None) -> None:
    """Refuse (RequestError: a usage error, exit 2) to listen on a non-loopback ``host``
    without a bearer token: no token is what --no-auth asks for
    (:func:`vaultmem.servers.auth.server_auth`), and that is for loopback only.

    Example:
        >>> check_bind("127.0.0.1", None)
        >>> check_bind("0.0.0.0", "s3cret")
    """
    if not token and not is_loopback(host):
        raise RequestError(
            f"refusing to bind {host} without a token: --no-auth is for loopback only"
        )


def default_allowed_hosts(host: str, port: int) -> tuple[str, ...]:
    """The ``Host`` values a server bound to ``host:port`` answers.

    Loopback: ``127.0.0.1:PORT``, ``localhost:PORT``, ``[::1]:PORT``; the bound address
    adds itself (another loopback address, such as 127.0.0.2, or any other). A wildcard
    bind (0.0.0.0, ::) answers any name (``*``): it needs a token, and a rebound page
    cannot send the token.

    Example:
        >>> default_allowed_hosts("127.0.0.2", 8765)
        ('127.0.0.1:8765', 'localhost:8765', '[::1]:8765', '127.0.0.2:8765')
    """
    name = host.strip().strip("[]").lower()
    if name in ("0.0.0.0", "::", ""):
        return ("*",)
    names = [f"{loop}:{port}" for loop in LOOPBACK_NAMES]
    own = f"[{name}]:{port}" if ":" in name else f"{name}:{port}"
    return tuple(names if own in names else [*names, own])


def _host_allowed(host: str, allowed: frozenset[str]) -> bool:
    """``host[:port]`` against the allowed entries; an entry without a port allows any."""
    host = host.strip().lower()
    if not host:
        return False
    if "*" in allowed or host in allowed:
        return True
    name = host.rsplit(":", 1)[0] if host.rfind(":") > host.rfind("]") else host
    return name in allowed


def _origin_allowed(origin: str, allowed: frozenset[str]) -> bool:
    scheme, sep, rest = origin.strip().lower().partition("://")
    return bool(sep) and scheme in ("http", "https") and _host_allowed(rest, allowed)


# ----------------------------------------------------------------------------- the guard


def _error(status: int, message: str, headers: Mapping[str, str] | None = None) -> Response:
    body = json.dumps({"error": message}, ensure_ascii=False).encode()
    return Response(body, status, headers=dict(headers or {}), media_type="application/json")


class _BodyTooLarge(Exception):
    pass


class Guard:
    """Host, Origin, bearer token and body size, checked before ``app`` sees a request:
    wrap any ASGI app in it (`mcp --http` wraps the MCP app; :func:`rest_app` its own)."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        token: str | None,
        allowed_hosts: Sequence[str],
        max_body: int = MAX_BODY,
    ) -> None:
        self.app = app
        self.token = token.encode() if token else None
        self.allowed = frozenset(h.strip().lower() for h in allowed_hosts)
        self.max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":
            await send({"type": "websocket.close", "code": 1008})  # no websocket routes
            return
        headers = Headers(scope=scope)
        refusal = self._refusal(scope, headers)
        if refusal is None:
            try:
                receive = await self._buffered(headers, receive)
            except _BodyTooLarge:
                refusal = _error(413, f"request body is larger than {self.max_body} bytes")
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _refusal(self, scope: Scope, headers: Headers) -> Response | None:
        if not _host_allowed(headers.get("host", ""), self.allowed):
            return _error(421, "this server does not answer for that Host")
        origin = headers.get("origin")
        if origin is not None and not _origin_allowed(origin, self.allowed):
            return _error(403, "cross-origin requests are refused")
        if self.token is None or scope.get("path") in PUBLIC_PATHS:
            return None
        scheme, _, given = headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), self.token):
            return None
        why = "a bearer token is required" if not given else "the bearer token is wrong"
        return _error(401, why, {"WWW-Authenticate": 'Bearer realm="vaultmem"'})

    async def _buffered(self, headers: Headers, receive: Receive) -> Receive:
        """The whole body, read and counted now, replayed to the app (then the client's
        own messages: a stream's disconnect)."""
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_body:
            raise _BodyTooLarge
        chunks: list[bytes] = []
        size = 0
        message: Message = {"type": "http.request", "body": b""}
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break
            size += len(message.get("body", b""))
            if size > self.max_body:
                raise _BodyTooLarge
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                message = {"type": "http.request", "body": b"".join(chunks), "more_body": False}
                break
        pending = [message]

        async def replay() -> Message:
            return pending.pop() if pending else await receive()

        return replay


# ----------------------------------------------------------------------------- errors


async def _on_vaultmem_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, VaultmemError)
    status = status_for(exc)
    if status >= 500:
        log.error("%s %s: %s", request.method, request.url.path, exc)
    return _error(status, str(exc), {"Retry-After": RETRY_AFTER} if status == 503 else None)


_JSON_TYPES = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}


async def _on_invalid(request: Request, exc: Exception) -> Response:
    """A body or parameter pydantic refused: one line naming the field, as the model's."""
    assert isinstance(exc, RequestValidationError)
    first = exc.errors()[0] if exc.errors() else {}
    if first.get("type") == "json_invalid":
        return _error(422, f"the body is not valid JSON: {first.get('ctx', {}).get('error')}")
    if tuple(first.get("loc", ())) == ("body",):
        if not _is_json(request):
            return _error(422, "send a JSON object with Content-Type: application/json")
        if first.get("type") == "missing":
            return _error(422, "the body is empty: send a JSON object")
        kind = _JSON_TYPES.get(type(first.get("input")), "number")
        return _error(422, f"the body must be a JSON object, not {kind}")
    where = ".".join(str(p) for p in first.get("loc", ())[1:]) or "request"
    return _error(422, f"{where}: {first.get('msg', 'invalid request')}")


def _is_json(request: Request) -> bool:
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    return kind == "application/json" or kind.endswith("+json")


async def _on_http(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    cause = exc.__cause__
    if exc.status_code == 400 and cause is not None:
        # FastAPI's 400 for a body json.loads failed on other than with a JSONDecodeError:
        # bytes that are not UTF-8, nesting deeper than Python recurses. Not JSON: a 422.
        if isinstance(cause, UnicodeDecodeError):
            why = f"not UTF-8 ({cause.reason})"
        else:
            why = "nested too deeply" if isinstance(cause, RecursionError) else str(cause)
        return _error(422, f"the body is not valid JSON: {why}")
    return _error(exc.status_code, str(exc.detail), exc.headers)


async def _on_os_error(request: Request, exc: Exception) -> Response:
    from vaultmem.errors import os_error_line

    assert isinstance(exc, OSError)
    if exc.errno == errno.ENAMETOOLONG:
        return _error(422, os_error_line(exc))  # a name no file system holds: the client's
    log.error("%s %s: %s", request.method, request.url.path, exc)
    return _error(500, os_error_line(exc))


async def _on_bug(request: Request, exc: Exception) -> Response:
    # Starlette re-raises after this answer: uvicorn logs the traceback, the client gets none.
    return _error(500, "internal error (the server log has the details)")


# ----------------------------------------------------------------------------- routes


def _json(data: object) -> Response:
    return Response(json.dumps(data, ensure_ascii=False).encode(), media_type="application/json")


def _now() -> datetime:
    return datetime.now(UTC)


_LINES = "With start and/or end (1-based, inclusive): `excerpt`, those lines of the file."
_START = Query(None, description=_LINES, json_schema_extra={"minimum": 1})
_END = Query(None, description=_LINES, json_schema_extra={"minimum": 1})
_NAMES = "Path, title, alias or file name."
_NAME_IN_PATH = PathParam(description=_NAMES, json_schema_extra={"pattern": TEXT_PATTERN})
_NAME = Query(description=_NAMES, json_schema_extra={"pattern": TEXT_PATTERN})

# What a route that resolves note names, or embeds text, can raise besides its own.
_NAMED = (RequestError, NoteError, NoteNotFound, AmbiguousNote, LockBusy)
_EMBEDS = (ConfigError, EndpointError)
_WRITES = (*_NAMED, IndexStateError, ConflictError)


def _read_routes(vault: OpenVault, router: APIRouter) -> None:
    @router.post(
        "/search",
        summary="Search: keyword, semantic or hybrid",
        responses=answers(RequestError, IndexStateError, LockBusy, *_EMBEDS),
    )
    def search(body: SearchBody) -> Response:
        """Hits best first, as `search --json` prints them, and hybrid stages skipped."""
        return _json(api.search(vault, body.value(), now=_now()).as_json())

    def read(name: str, start: int | None, end: int | None) -> Response:
        found = api.get(vault, name)
        data = found.as_json()
        if start is not None or end is not None:
            data["excerpt"] = api.excerpt(found.text, start, end)
        return _json(data)

    @router.get(
        "/notes/{name:path}",
        summary="A note by path (or title, alias)",
        responses=answers(*_NAMED),
    )
    def note_at(
        name: str = _NAME_IN_PATH, start: int | None = _START, end: int | None = _END
    ) -> Response:
        """`get --json`: frontmatter, body, tags, aliases, links (and `excerpt`)."""
        return read(name, start, end)

    @router.get("/note", summary="A note by title, alias or path", responses=answers(*_NAMED))
    def note_named(
        name: str = _NAME, start: int | None = _START, end: int | None = _END
    ) -> Response:
        """`get --json` for a name that is awkward in a path."""
        return read(name, start, end)

    @router.get(
        "/links",
        summary="A note's typed links, wikilinks and backlinks",
        responses=answers(*_NAMED, IndexStateError),
    )
    def links(name: str = _NAME) -> Response:
        """`links --json`."""
        return _json(api.links(vault, name).as_json())

    @router.post(
        "/similar",
        summary="Notes closest in meaning to a note",
        responses=answers(*_NAMED, IndexStateError, *_EMBEDS),
    )
    def similar(body: SimilarBody) -> Response:
        """`similar --json` (needs vectors)."""
        filters = body.filters.value()
        hits = api.similar(vault, body.name, limit=body.limit, filters=filters, now=_now())
        return _json({"hits": [hit.as_json() for hit in hits]})

    @router.post(
        "/surface",
        summary="The context block for one prompt",
        responses=answers(RequestError, IndexStateError, LockBusy, *_EMBEDS),
    )
    def surface(body: SurfaceBody) -> Response:
        """`surface --json`: the block ("" when abstaining), its notes and the reason."""
        return _json(api.surface(vault, body.value(), now=_now()).as_json())

    @router.post(
        "/timeline",
        summary="What happened around a note, or in a window",
        responses=answers(*_NAMED, IndexStateError),
    )
    def timeline(body: TimelineBody) -> Response:
        """`timeline --json` as one object: {note, since, until, git, events}."""
        return _json(api.timeline(vault, body.value(), now=_now()).as_json())

    @router.get(
        "/status",
        summary="Notes, index state, staleness, embedding coverage",
        responses=answers(IndexStateError, LockBusy, *_EMBEDS),
    )
    def status() -> Response:
        """`status --json`."""
        return _json(api.status(vault).as_json())


def _write_routes(vault: OpenVault, router: APIRouter) -> None:
    @router.post(
        "/remember",
        summary="Write a short-term memory",
        responses=answers(*_WRITES, *_EMBEDS),
    )
    def remember(body: RememberBody) -> Response:
        """`remember --json`: the new note, or the duplicate it reinforced."""
        return _json(api.remember(vault, body.value(), now=_now()).as_json())

    @router.post(
        "/reinforce",
        summary="Touch notes (or observe them, with tags)",
        responses=answers(*_WRITES),
    )
    def reinforce(body: ReinforceBody) -> Response:
        """`touch --json` / `observe --json`, one entry per note."""
        tags = parse_tags(body.tags)
        done = api.reinforce(vault, body.notes, now=_now(), context_tags=tags)
        return _json({"notes": [r.as_json() for r in done]})

    for action in NOTE_ACTIONS:
        router.add_api_route(
            f"/{action}",
            _flag_route(vault, action),
            methods=["POST"],
            summary=f"{action.capitalize()} notes",
            operation_id=action,
            responses=answers(*_WRITES),
        )


def _flag_route(vault: OpenVault, action: str) -> Callable[..., Response]:
    if action == "snooze":

        def snooze(body: SnoozeBody) -> Response:
            done = api.change(
                vault, action, body.notes, now=_now(), until=body.until, for_=body.for_
            )
            return _json({"notes": [c.as_json() for c in done]})

        snooze.__doc__ = "`snooze --json`, one entry per note."
        return snooze

    def flag(body: FlagBody) -> Response:
        done = api.change(vault, action, body.notes, now=_now())
        return _json({"notes": [c.as_json() for c in done]})

    flag.__doc__ = f"`{action} --json`, one entry per note."
    return flag


# ----------------------------------------------------------------------------- the app


def rest_app(
    vault: OpenVault,
    *,
    token: str | None,
    allowed_hosts: Sequence[str],
    max_body: int = MAX_BODY,
    extra_mounts: Mapping[str, ASGIApp] | None = None,
) -> ASGIApp:
    """The REST API over ``vault`` (a warm :class:`~vaultmem.api.OpenVault` the caller
    keeps and closes), behind the Host/Origin/token/size guard.

    ``allowed_hosts``: ``Host`` values answered (see :func:`default_allowed_hosts`; ``*``
    any, an entry without a port any port). ``extra_mounts``: path → ASGI app mounted
    beside the API (the MCP streamable-HTTP app); their lifespans run with the server's.

    Example:
        >>> app = rest_app(OpenVault(config, warm=True), token=None,
        ...                allowed_hosts=default_allowed_hosts("127.0.0.1", 8765))  # doctest: +SKIP
        >>> uvicorn.run(app, host="127.0.0.1", port=8765)  # doctest: +SKIP
    """
    mounts = dict(extra_mounts or {})
    app = FastAPI(
        title="vaultmem",
        version=__version__,
        summary="Memory for AI agents, kept in an Obsidian vault: the CLI's operations as JSON.",
        lifespan=_lifespans(mounts),
        redoc_url=None,
    )
    for kind, handler in (
        (VaultmemError, _on_vaultmem_error),
        (RequestValidationError, _on_invalid),
        (HTTPException, _on_http),
        (OSError, _on_os_error),
        (Exception, _on_bug),
    ):
        app.add_exception_handler(kind, handler)
    # The bearer scheme, declared where the guard checks it (all but health and the docs).
    secured = token is not None
    router = APIRouter(
        prefix="/v1",
        dependencies=[Depends(HTTPBearer(auto_error=False))] if secured else [],
        responses=guard_answers(secured=secured, max_body=max_body),
    )
    _read_routes(vault, router)
    _write_routes(vault, router)
    app.include_router(router)
    app.add_api_route(
        "/v1/health",
        _health,
        methods=["GET"],
        summary="Liveness (no token)",
        responses=guard_answers(secured=False, max_body=max_body),
    )
    for path, sub in mounts.items():
        app.mount(path, sub)
    return Guard(app, token=token, allowed_hosts=allowed_hosts, max_body=max_body)


def _health() -> Response:
    """``{"status": "ok"}``: the server answers (nothing of the vault)."""
    return _json({"status": "ok"})


def _lifespans(mounts: Mapping[str, ASGIApp]) -> Callable[[FastAPI], Any]:
    """Run the mounted apps' lifespans (Starlette does not): the MCP app's session manager
    starts and stops with the server."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            for sub in mounts.values():
                context = getattr(getattr(sub, "router", None), "lifespan_context", None)
                if context is not None:
                    await stack.enter_async_context(context(sub))
            yield

    return lifespan
