"""`vaultmem serve`: one long-lived process that keeps a vault warm for every front end.

One :class:`~vaultmem.api.OpenVault` (warm: the searcher, the vector store and the
embedding model stay open, reopened when another process changes the index) serves:

- the REST API (:func:`vaultmem.servers.rest.rest_app`) on uvicorn, with the MCP
  streamable-HTTP endpoint mounted at ``/mcp``;
- the CLI's forwarded commands on a Unix socket (:mod:`vaultmem.servers.forward`), so
  `vaultmem search` with a server up costs a socket round trip, not the imports;
- with ``watch``, a :class:`~vaultmem.watcher.VaultWatcher` thread keeping the index current.

It advertises itself in ``<cache>/server.json`` (pid, socket, url, port, vault, started;
never the token) and holds ``<cache>/server.lock`` while it runs, so a second server
for the same cache is refused and a file left by a killed server is told apart from a
live one (:func:`running` checks the pid). SIGINT or SIGTERM stops it cleanly: the
listeners close, the watcher stops, the file is removed.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from vaultmem.api import OpenVault
from vaultmem.client import ADVERTISEMENT
from vaultmem.config import Config
from vaultmem.errors import VaultmemError

LOCK_NAME = "server.lock"
LOG_NAME = "server.log"
MCP_PATH = "/mcp"
START_TIMEOUT_S = 30.0
Log = Callable[[str], None]


@dataclass(frozen=True)
class ServeOptions:
    """How to serve: where to listen, the bearer token, whether to watch the vault.

    ``forward_delay``: seconds each forwarded command waits first (tests kill a server then).
    """

    host: str = "127.0.0.1"
    port: int = 0
    token: str | None = None
    watch: bool = False
    forward_delay: float = 0.0


@dataclass(frozen=True)
class Running:
    """A live server, as its advertisement describes it."""

    pid: int
    url: str
    port: int
    socket: str | None
    vault: str
    started: str

    def as_json(self) -> dict[str, object]:
        """The advertisement's fields."""
        return asdict(self)


def serving(cache_dir: Path) -> bool:
    """Whether a server holds this cache's server lock (a killed one, even a zombie not
    yet reaped, holds it no more; a reused pid never does)."""
    try:
        fd = os.open(cache_dir / LOCK_NAME, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def running(cache_dir: Path) -> Running | None:
    """The server advertised for this cache, or None (no file, unreadable, stale)."""
    from vaultmem.vault import pid_alive

    try:
        data = json.loads((cache_dir / ADVERTISEMENT).read_text(encoding="utf-8"))
        found = Running(**{name: data[name] for name in Running.__dataclass_fields__})
    except (OSError, ValueError, KeyError, TypeError):
        return None
    alive = isinstance(found.pid, int) and pid_alive(found.pid) and serving(cache_dir)
    return found if alive else None


class ServerRunning(VaultmemError):
    """A server already runs for this vault's cache."""


def server_running(cache_dir: Path) -> ServerRunning:
    """The error for a second server on ``cache_dir``, naming the first."""
    found = running(cache_dir)
    where = f" (pid {found.pid}, {found.url})" if found else ""
    return ServerRunning(f"a server already runs for {cache_dir}{where}")


@contextlib.contextmanager
def _server_lock(cache_dir: Path) -> Iterator[None]:
    """Held for the server's life; a second server for the same cache is refused."""
    with open(cache_dir / LOCK_NAME, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise server_running(cache_dir) from None
        yield


def _listen(host: str, port: int) -> socket.socket:
    """The bound TCP socket (port 0: a free one), before uvicorn starts."""
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        raise VaultmemError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    sock.listen(128)
    sock.set_inheritable(False)
    return sock


def _app(vault: OpenVault, options: ServeOptions, port: int) -> Any:
    """The REST API with the MCP endpoint mounted at /mcp."""
    from vaultmem.servers.mcp import http_app, make_server
    from vaultmem.servers.rest import default_allowed_hosts, rest_app

    mcp = http_app(make_server(vault), path="/", host=options.host)
    app = rest_app(
        vault,
        token=options.token,
        allowed_hosts=default_allowed_hosts(options.host, port),
        extra_mounts={MCP_PATH: mcp},
    )
    return _exact_mount(app, MCP_PATH)


def _exact_mount(app: Any, path: str) -> Any:
    """``path`` itself served like ``path/``: MCP clients POST to the URL they were given,
    and most do not follow the redirect Starlette answers for a mount's bare path."""

    async def wrapped(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] == path:
            scope = {**scope, "path": path + "/", "raw_path": (path + "/").encode()}
        await app(scope, receive, send)

    return wrapped


def _url(host: str, port: int) -> str:
    name = host.strip("[]")
    if name in ("0.0.0.0", "::", ""):
        name = "127.0.0.1"
    return f"http://[{name}]:{port}" if ":" in name else f"http://{name}:{port}"


def _prewarm(vault: OpenVault, log: Log) -> None:
    """Warm the vault up (:meth:`OpenVault.warm_up`), logging what failed."""
    for problem in vault.warm_up():
        log(f"warm-up: {problem}")


def _watcher(config: Config, vault: OpenVault, log: Log) -> Callable[[], None]:
    """Start the watcher thread; the function that stops it."""
    from vaultmem.watcher import VaultWatcher

    watcher = VaultWatcher(
        config,
        embedder=vault.embedder(),
        on_batch=lambda batch: log(batch.summary),
        on_warning=lambda line: log(f"watch: {line}"),
    )
    stop = threading.Event()

    def run() -> None:
        try:
            watcher.run(stop)
        except Exception as exc:  # noqa: BLE001 - the server keeps serving; say why it stopped
            log(f"watch stopped: {type(exc).__name__}: {exc}")

    thread = threading.Thread(target=run, name="vaultmem-watch", daemon=True)
    thread.start()

    def halt() -> None:
        stop.set()
        thread.join(10)

    return halt


def _advertise(cache_dir: Path, found: Running) -> None:
    from vaultmem.atomic import atomic_write

    # Only its user may read where the socket is; written whole, so a client that reads
    # it while the server starts never sees an empty file.
    data = json.dumps(found.as_json(), indent=2) + "\n"
    atomic_write(cache_dir / ADVERTISEMENT, data.encode(), mode=0o600)


def _withdraw(cache_dir: Path) -> None:
    """Remove the advertisement if it is still this process's."""
    path = cache_dir / ADVERTISEMENT
    with contextlib.suppress(OSError, ValueError, KeyError):
        if json.loads(path.read_text(encoding="utf-8"))["pid"] == os.getpid():
            path.unlink()


def serve(
    config: Config,
    options: ServeOptions,
    *,
    log: Log,
    on_ready: Callable[[Running], None] = lambda found: None,
) -> None:
    """Serve ``config``'s vault until SIGINT or SIGTERM (KeyboardInterrupt here), then
    close everything and remove the advertisement.

    ``log`` gets one line per forwarded command, watcher batch and warning; ``on_ready``
    the advertisement once every listener accepts. Raises ServerRunning when a server
    already runs for this cache, ConfigError for a non-loopback host without a token.
    """
    from vaultmem.servers.rest import check_bind

    check_bind(options.host, options.token)
    cache_dir = config.cache_dir
    cache_dir.mkdir(parents=True, exist_ok=True)
    with _server_lock(cache_dir), contextlib.ExitStack() as stack:
        vault = OpenVault(config, warm=True)
        stack.callback(vault.close)
        sock = _listen(options.host, options.port)
        stack.callback(sock.close)
        port = sock.getsockname()[1]
        forward_path = _start_forwarding(cache_dir, vault, options, log, stack)
        server = _start_http(_app(vault, options, port), sock, stack)
        threading.Thread(target=_prewarm, args=(vault, log), daemon=True).start()
        if options.watch:
            stack.callback(_watcher(config, vault, log))
        found = Running(
            pid=os.getpid(),
            url=_url(options.host, port),
            port=port,
            socket=forward_path,
            vault=str(config.vault),
            started=datetime.now(UTC).isoformat(timespec="seconds"),
        )
        _advertise(cache_dir, found)
        stack.callback(_withdraw, cache_dir)
        on_ready(found)
        with contextlib.suppress(KeyboardInterrupt):
            while server.is_alive():
                server.join(0.5)


def _start_forwarding(
    cache_dir: Path, vault: OpenVault, options: ServeOptions, log: Log, stack: contextlib.ExitStack
) -> str | None:
    """The forwarding socket's path, or None when this system cannot have one."""
    from vaultmem.servers.forward import ForwardServer, socket_available, socket_path

    if not socket_available():
        return None
    try:
        path = socket_path(cache_dir)
        listener = ForwardServer(path, vault, log=log, delay=options.forward_delay)
    except OSError as exc:
        log(f"no CLI forwarding: {exc}")
        return None
    listener.start()
    stack.callback(listener.stop)
    return str(path)


def _start_http(app: Any, sock: socket.socket, stack: contextlib.ExitStack) -> threading.Thread:
    """uvicorn in a thread (the main thread keeps the signals); returns once it accepts."""
    import uvicorn

    server = uvicorn.Server(
        uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on")
    )
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, name="vaultmem-http", daemon=True
    )
    thread.start()

    def halt() -> None:
        server.should_exit = True
        thread.join(10)

    stack.callback(halt)
    deadline = time.monotonic() + START_TIMEOUT_S
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise VaultmemError("the HTTP server did not start (see the lines above)")
        time.sleep(0.01)
    return thread


def quiet_loggers(stream: Any) -> None:
    """vaultmem's and uvicorn's log records to ``stream`` (the real stderr), never to a
    forwarded command's captured stderr."""
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s: %(message)s"))
    for name in ("vaultmem", "mcp"):
        logger = logging.getLogger(name)
        logger.addHandler(handler)
        logger.propagate = False
        logger.setLevel(logging.WARNING)
