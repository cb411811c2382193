"""A real Chroma server for tests: the ``chroma`` console script that ships with chromadb.

Importable fixture module. Wire it into ``tests/conftest.py`` with::

    from chroma_server import chroma_server  # noqa: F401  (re-exported fixture)

(``tests/`` is on ``sys.path`` under pytest's default rootdir import mode.) Tests then
take ``chroma_server`` as an argument and get a :class:`ChromaServer` with ``host`` and
``port``. The server starts once per session, on a free port, with its data in a
session temporary directory, and is stopped at the end. ``start_chroma_server`` starts
an extra one for tests that need to kill a server.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

HOST = "127.0.0.1"
STARTUP_TIMEOUT_S = 60.0


@dataclass
class ChromaServer:
    """A running ``chroma run`` subprocess."""

    host: str
    port: int
    path: Path
    process: subprocess.Popen[bytes]
    log_path: Path
    startup_s: float

    def log_tail(self, chars: int = 3000) -> str:
        """The end of the server's output (for failure messages)."""
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL after 10 s)."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


def chroma_executable() -> Path:
    """The ``chroma`` console script of the running interpreter's environment."""
    return Path(sys.executable).parent / "chroma"


def free_port() -> int:
    """A TCP port nothing listens on right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def _heartbeat(host: str, port: int) -> bool:
    try:
        url = f"http://{host}:{port}/api/v2/heartbeat"
        with urllib.request.urlopen(url, timeout=2) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError, ValueError):
        return False


def start_chroma_server(path: Path, timeout: float = STARTUP_TIMEOUT_S) -> ChromaServer:
    """Start ``chroma run`` on a free port with data under ``path``; wait for its heartbeat."""
    exe = chroma_executable()
    if not exe.exists():
        pytest.skip(f"no chroma console script at {exe}")
    path.mkdir(parents=True, exist_ok=True)
    port = free_port()
    log_path = path.parent / f"{path.name}-server.log"
    env = dict(os.environ, ANONYMIZED_TELEMETRY="False")
    started = time.monotonic()
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [str(exe), "run", "--path", str(path), "--host", HOST, "--port", str(port)],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
        )
    server = ChromaServer(HOST, port, path, process, log_path, 0.0)
    deadline = started + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(
                f"chroma server exited with {process.returncode}:\n{server.log_tail()}"
            )
        if _heartbeat(HOST, port):
            server.startup_s = time.monotonic() - started
            return server
        time.sleep(0.1)
    server.stop()
    raise RuntimeError(f"chroma server not up after {timeout:.0f} s:\n{server.log_tail()}")


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChromaServer]:
    """One real Chroma server for the whole test session."""
    server = start_chroma_server(tmp_path_factory.mktemp("chroma-server") / "data")
    try:
        yield server
    finally:
        server.stop()
