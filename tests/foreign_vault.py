"""Helpers for the tests of issue 27, which build their cases as an attacker would: a
hostile change committed by another person to a shared (bare) repository and pulled into
the user's clone with real git, and real listeners on 127.0.0.1 standing in for the
attacker's endpoints.

Not a test module: the test files import it.
"""

from __future__ import annotations

import shutil
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from tests.conftest import EXAMPLE_VAULT, run_git


@dataclass
class Shared:
    """A vault shared through a bare repository: ``alice`` (the other person's clone,
    the attacker) and ``bob`` (the user's)."""

    origin: Path
    alice: Path
    bob: Path

    def attack(self, files: dict[str, str], message: str = "tweak the vault") -> None:
        """Alice commits ``files`` (vault-relative path → text) and pushes; Bob pulls."""
        for rel, text in files.items():
            path = self.alice / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, "utf-8")
        run_git(self.alice, "add", "-A")
        run_git(self.alice, "commit", "-q", "-m", message)
        run_git(self.alice, "push", "-q", "origin", "main")
        run_git(self.bob, "pull", "-q", "--no-rebase", "origin", "main")


def shared_vault(tmp_path: Path) -> Shared:
    """example-vault/ committed by Alice to a bare repository, and Bob's clone of it."""
    origin = tmp_path / "origin.git"
    alice = tmp_path / "alice"
    shutil.copytree(EXAMPLE_VAULT, alice, ignore=shutil.ignore_patterns(".vaultmem"))
    run_git(tmp_path, "init", "-q", "--bare", "-b", "main", str(origin))
    run_git(alice, "init", "-q", "-b", "main")
    run_git(alice, "add", "-A")
    run_git(alice, "commit", "-q", "-m", "the vault")
    run_git(alice, "remote", "add", "origin", str(origin))
    run_git(alice, "push", "-q", "origin", "main")
    run_git(tmp_path, "clone", "-q", str(origin), "bob")
    return Shared(origin, alice, tmp_path / "bob")


@dataclass
class Heard:
    """One request a :class:`Listener` received."""

    method: str
    path: str
    authorization: str | None
    body: bytes


@dataclass
class Listener:
    """A real HTTP listener on 127.0.0.1 that records every request (any method) and
    answers 500: the attacker's endpoint."""

    heard: list[Heard] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None

    def __enter__(self) -> Listener:
        heard = self.heard

        class Handler(BaseHTTPRequestHandler):
            def _any(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                auth = self.headers.get("Authorization")
                heard.append(Heard(self.command, self.path, auth, body))
                self.send_response(500)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _any  # noqa: N815

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    @property
    def port(self) -> int:
        assert self._server is not None
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def keys(self) -> Iterator[str]:
        """The credentials it was sent in Authorization headers (vaultmem's placeholder for
        "no key", which the openai client needs to start, is none)."""
        placeholder = "Bearer vaultmem-no-key"
        return (h.authorization for h in self.heard if h.authorization not in (None, placeholder))
