"""The server side of the thin client: run a forwarded command line in this process.

:mod:`vaultmem.client` sends one JSON request over the server's Unix socket::

    {"argv": [...], "cwd": "...", "env": {...}, "stdin": "..." | null,
     "stdin_errors": "strict", "version": "0.1.0"}

(``env``: the variables of :data:`vaultmem.environment.COMMAND_ENV` the client has)

and reads to EOF one answer: ``{"output": [[1, "text"], [2, "text"], ...], "code": N}``
(stdout and stderr chunks in the order the command wrote them), or ``{"decline": why}``
(the client then runs the command itself).

The command runs through the same typer app as in the client's own process, with its
arguments, working folder, stdin and the variables of ``COMMAND_ENV`` swapped in (each
one the client has is set, each one it has not is unset; no other variable of the
request is applied, and the server's own others stay), so every rule (vault
discovery, configuration, usage errors, --help, exit codes) is the CLI's, not a copy.
The one difference is :data:`vaultmem.cli.warm_vaults`: when the request resolves to the
served vault's configuration the command gets the server's warm
:class:`~vaultmem.api.OpenVault`; anything else (another vault, other settings) gets a
fresh one, as it would in process. Swapping the process's streams, environment and
folder is process-wide, so one forwarded command runs at a time (:data:`RUN_LOCK`); the
REST and MCP routes in other threads never read them.

Only this user's processes are answered: the socket is 0600 in a folder nobody else can
write (:func:`socket_path`), and each connection's peer uid is checked (``SO_PEERCRED``).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import socket
import socketserver
import stat
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from vaultmem import __version__
from vaultmem.api import OpenVault
from vaultmem.client import trust_problem
from vaultmem.environment import COMMAND_ENV

# The commands a server answers (the client sends no others; a request for another is
# declined so a mismatched client cannot make the server write).
FORWARDED = frozenset({"search", "vsearch", "query", "surface", "hook"})
MAX_REQUEST = 16 * 1024 * 1024
RUN_LOCK = threading.Lock()
Log = Callable[[str], None]


class _Sink(io.RawIOBase):
    """Collects what one stream writes, tagged with its fd, in one shared ordered list."""

    def __init__(self, fd: int, parts: list[list[Any]]) -> None:
        self.fd = fd
        self.parts = parts

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        chunk = bytes(data)
        if self.parts and self.parts[-1][0] == self.fd:
            self.parts[-1][1] += chunk
        else:
            self.parts.append([self.fd, chunk])
        return len(chunk)


def _stream(fd: int, parts: list[list[Any]], errors: str) -> io.TextIOWrapper:
    # write_through: every write reaches the sink at once, so stdout and stderr keep
    # their relative order.
    sink: Any = _Sink(fd, parts)
    return io.TextIOWrapper(sink, encoding="utf-8", errors=errors, write_through=True)


@contextlib.contextmanager
def _swapped(request: dict[str, Any], parts: list[list[Any]]) -> Iterator[None]:
    """The request's folder, environment and streams for the duration of one command."""
    saved = (dict(os.environ), os.getcwd(), sys.stdin, sys.stdout, sys.stderr)
    stdin = (request.get("stdin") or "").encode("utf-8", "surrogateescape")
    given = request["env"]
    os.chdir(request["cwd"])
    try:
        for name in COMMAND_ENV:
            value = given.get(name)
            if isinstance(value, str):
                os.environ[name] = value
            else:
                os.environ.pop(name, None)
        sys.stdin = io.TextIOWrapper(
            io.BytesIO(stdin), encoding="utf-8", errors=request.get("stdin_errors") or "strict"
        )
        sys.stdout = _stream(1, parts, "strict")
        sys.stderr = _stream(2, parts, "backslashreplace")
        yield
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        env, cwd, sys.stdin, sys.stdout, sys.stderr = saved
        os.environ.clear()
        os.environ.update(env)
        os.chdir(cwd)


def _exit_code(exc: SystemExit, parts: list[list[Any]]) -> int:
    """The process exit status ``exc`` would give, as Python's own exit handling does."""
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code
    parts.append([2, f"{exc.code}\n".encode()])
    return 1


def run_command(request: dict[str, Any], vault: OpenVault) -> dict[str, Any]:
    """Run one forwarded command line on the served ``vault``; the answer for the client
    (see the module doc)."""
    from vaultmem.cli import app, warm_vaults

    argv = request.get("argv")
    if request.get("version") != __version__:
        return {"decline": f"server runs vaultmem {__version__}"}
    if not isinstance(argv, list) or not _forwardable(argv):
        return {"decline": "not a forwarded command"}
    if not isinstance(request.get("env"), dict) or not os.path.isdir(str(request.get("cwd"))):
        return {"decline": "no such folder"}
    parts: list[list[Any]] = []
    fresh: list[OpenVault] = []

    def opener(config: Any) -> OpenVault:
        # The served vault for its own configuration; anything else (another vault, other
        # settings) opens what the command would have opened in its own process.
        if config == vault.config:
            return vault
        fresh.append(OpenVault(config))
        return fresh[-1]

    with RUN_LOCK, _swapped(request, parts):
        token = warm_vaults.set(opener)
        try:
            app(args=argv, prog_name="vaultmem")
            code = 0
        except SystemExit as exc:
            code = _exit_code(exc, parts)
        except Exception as exc:  # noqa: BLE001 - a bug: the client shows its own traceback
            return {"decline": f"{type(exc).__name__}: {exc}"}
        finally:
            warm_vaults.reset(token)
            for opened in fresh:
                opened.close()
    output = [[fd, chunk.decode("utf-8", "surrogateescape")] for fd, chunk in parts]
    return {"output": output, "code": code}


def _forwardable(argv: list[str]) -> bool:
    """Whether the client's own rule (:func:`vaultmem.client.command_of`) allows it."""
    from vaultmem.client import command_of

    found = command_of([str(arg) for arg in argv])
    return found is not None and found[0] in FORWARDED


def peer_uid(conn: socket.socket) -> int:
    """The uid of the process at the other end of a Unix socket (``SO_PEERCRED``; where
    the system has none, the socket's 0600 mode is the only check, and this user's)."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return os.getuid()
    raw = conn.getsockopt(socket.SOL_SOCKET, option, 12)
    return int.from_bytes(raw[4:8], sys.byteorder)


def _gone(conn: socket.socket) -> bool:
    """Whether the client has closed its end (it gave up waiting and runs the command
    itself): its answer would be dropped, and a second run would log twice."""
    import select

    poller = select.poll()
    poller.register(conn, select.POLLHUP)
    return any(event & select.POLLHUP for _fd, event in poller.poll(0))


class _Handler(socketserver.StreamRequestHandler):
    server: ForwardServer

    def handle(self) -> None:
        started = time.perf_counter()
        if peer_uid(self.connection) != os.getuid():
            self.server.log("refused a connection of another user")
            return
        raw = self.rfile.read(MAX_REQUEST + 1)
        try:
            request = json.loads(raw) if len(raw) <= MAX_REQUEST else None
        except ValueError:
            request = None
        if self.server.delay:
            time.sleep(self.server.delay)  # tests: a server that stalls or dies mid-request
        if not isinstance(request, dict):
            answer: dict[str, Any] = {"decline": "bad request"}
        elif _gone(self.connection):
            answer = {"decline": "the client gave up waiting"}
        else:
            answer = run_command(request, self.server.vault)
        what = f"exit {answer['code']}" if "code" in answer else f"declined ({answer['decline']})"
        ms = (time.perf_counter() - started) * 1000
        # Logged before the answer goes out: a client holding it finds its line in the log.
        self.server.log(f"forwarded {_command_word(request)}: {what} in {ms:.1f} ms")
        data = json.dumps(answer, ensure_ascii=False).encode("utf-8", "surrogateescape")
        with contextlib.suppress(OSError):  # the client gave up waiting: drop the answer
            self.wfile.write(data)


def _command_word(request: Any) -> str:
    """The command a request ran, for the log (never its arguments: they hold prompts)."""
    from vaultmem.client import command_of

    argv = request.get("argv") if isinstance(request, dict) else None
    found = command_of([str(a) for a in argv]) if isinstance(argv, list) else None
    return "?" if found is None else found[0]


class ForwardServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    """The Unix-socket listener of `vaultmem serve` (mode 0600: only its user connects).

    ``delay``: seconds to wait before running each command (tests kill a server then).
    """

    daemon_threads = True

    def __init__(self, path: Path, vault: OpenVault, *, log: Log, delay: float = 0.0) -> None:
        self.vault = vault
        self.log = log
        self.delay = delay
        with contextlib.suppress(FileNotFoundError):
            path.unlink()  # a dead server's: the caller holds the server lock
        mask = os.umask(0o177)
        try:
            super().__init__(str(path), _Handler)
        finally:
            os.umask(mask)
        self.path = path
        info = path.lstat()
        self.identity = (info.st_dev, info.st_ino)

    def start(self) -> threading.Thread:
        """Serve in a daemon thread; :meth:`stop` ends it."""
        thread = threading.Thread(target=self.serve_forever, name="vaultmem-forward", daemon=True)
        thread.start()
        return thread

    def stop(self) -> None:
        """Stop accepting, close the socket and remove its file (when the file is still
        this listener's: a server started since may have put its own there)."""
        self.shutdown()
        self.server_close()
        with contextlib.suppress(FileNotFoundError):
            info = self.path.lstat()
            if (info.st_dev, info.st_ino) == self.identity:
                self.path.unlink()


def socket_path(cache_dir: Path) -> Path:
    """``<cache>/server.sock`` when the cache folder is this user's and nobody else can
    write to it (the client refuses a socket another user could swap), else, and when
    that path is too long for AF_UNIX (108 bytes on Linux), a private one:
    ``$XDG_RUNTIME_DIR`` or the temp folder, ``vaultmem-UID/``."""
    path = cache_dir / "server.sock"
    if len(os.fsencode(path)) < 100 and trust_problem(str(cache_dir), cache_dir.stat()) is None:
        return path
    folder = _runtime_folder()
    folder.mkdir(mode=0o700, exist_ok=True)
    info = folder.lstat()
    if info.st_uid != os.getuid() or info.st_mode & 0o077 or not stat.S_ISDIR(info.st_mode):
        raise OSError(f"{folder} is not private to this user")
    return folder / _private_name(cache_dir)


def is_socket_of(cache_dir: Path, path: Path) -> bool:
    """Whether ``path`` is where :func:`socket_path` puts the socket of ``cache_dir``'s
    server (so removing a dead server's socket never removes anything else)."""
    return path in (cache_dir / "server.sock", _runtime_folder() / _private_name(cache_dir))


def _runtime_folder() -> Path:
    import tempfile

    base = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
    return Path(base) / f"vaultmem-{os.getuid()}"


def _private_name(cache_dir: Path) -> str:
    import hashlib

    return hashlib.sha256(os.fsencode(cache_dir)).hexdigest()[:20] + ".sock"


def socket_available() -> bool:
    """Whether this platform has Unix sockets (forwarding is off without them)."""
    return hasattr(socket, "AF_UNIX")
