"""`vaultmem serve`: one long-lived process that keeps a vault warm for every front end.

One :class:`~vaultmem.api.OpenVault` (warm: the searcher, the vector store and the
embedding model stay open, reopened when another process changes the index) serves:

- the REST API (:func:`vaultmem.servers.rest.rest_app`) on uvicorn, with the MCP
  streamable-HTTP endpoint mounted at ``/mcp``;
- the CLI's forwarded commands on a Unix socket (:mod:`vaultmem.servers.forward`), so
  `vaultmem search` with a server up costs a socket round trip, not the imports;
- with ``watch``, a :class:`~vaultmem.watcher.VaultWatcher` thread keeping the index current.

It advertises itself in ``<cache>/server.json`` (pid, socket, url, port, vault, started,
how clients authenticate; never the token) and holds ``<cache>/server.lock`` while it
runs, so a second server for the same cache is refused and a file left by a killed
server is told apart from a live one (:func:`running` checks, as the thin client does,
that the advertisement is this user's and that its pid holds the lock). SIGINT or
SIGTERM stops it cleanly: the listeners close, the watcher stops, the file is removed.
So does losing its advertisement or its lock (the cache removed, or replaced, under
it): it checks every :data:`WATCH_S` seconds and stops with one log line, so a server
nobody can find never keeps running beside the next one. :func:`server_processes`
finds every vaultmem server running for a vault (for `doctor`), advertised or not.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vaultmem.api import OpenVault
from vaultmem.client import (
    ADVERTISEMENT,
    LOCK_NAME,
    Untrusted,
    flock_held,
    read_advertisement,
    trust_problem,
    trusted_server,
)
from vaultmem.config import Config
from vaultmem.errors import VaultmemError
from vaultmem.vault import make_cache

if TYPE_CHECKING:
    from vaultmem.servers.vault_choice import VaultChoice

LOG_NAME = "server.log"
MCP_PATH = "/mcp"
START_TIMEOUT_S = 30.0
# How often a server checks that its advertisement and lock are still the ones it made.
WATCH_S = 1.0
Log = Callable[[str], None]


@dataclass(frozen=True)
class ServeOptions:
    """How to serve: where to listen, the bearer token, whether to watch the vault.

    ``forward_delay``: seconds each forwarded command waits first (tests kill a server then).
    ``idle_timeout``: seconds without a request (forwarded, REST or MCP) after which the
    server stops on its own (None: never): a server a hook started must not outlive use.
    """

    host: str = "127.0.0.1"
    port: int = 0
    token: str | None = None
    auth: str = "none"  # where the token came from (vaultmem.servers.auth.Source)
    watch: bool = False
    forward_delay: float = 0.0
    idle_timeout: float | None = None


class Activity:
    """When the server last answered a request (monotonic seconds), for the idle timeout."""

    def __init__(self) -> None:
        self._last = time.monotonic()

    def touch(self) -> None:
        """A request came."""
        self._last = time.monotonic()

    def idle(self) -> float:
        """Seconds since the last request (or since the server started)."""
        return time.monotonic() - self._last


@dataclass(frozen=True)
class Running:
    """A live server, as its advertisement describes it."""

    pid: int
    url: str
    port: int
    socket: str | None
    vault: str
    started: str
    auth: str = "vault"
    lock_fd: int | None = None  # the descriptor holding server.lock (clients check it)
    # Whether the port was asked for (`--port N`): the URL then outlives this server. A
    # server on any free port (the one a hook starts) gets another port each time.
    stable: bool = False

    def as_json(self) -> dict[str, object]:
        """The advertisement's fields."""
        return asdict(self)


def serving(cache_dir: Path) -> bool:
    """Whether a server holds this cache's server lock (a killed one, even a zombie not
    yet reaped, holds it no more; a reused pid never does)."""
    try:
        return flock_held(str(cache_dir / LOCK_NAME))
    except OSError:
        return False


def running(cache_dir: Path) -> Running | None:
    """The server advertised for this cache, or None (no file, a killed server's, or one
    that cannot prove it is this vault's own: see :func:`advertised`)."""
    return advertised(cache_dir)[0]


def advertised(cache_dir: Path) -> tuple[Running | None, str]:
    """The server advertised for this cache once the thin client's checks pass (the file
    is this user's, its pid alive and holding the lock; a socket, when it names one,
    this user's in a folder nobody else writes to), or None and why not ("" when there
    is simply no live server)."""
    try:
        if trusted_server(str(cache_dir), need_socket=False) is None:
            return None, ""
        data: dict[str, Any] = read_advertisement(str(cache_dir))
        found = Running(
            pid=data["pid"],
            url=str(data.get("url") or ""),
            port=int(data.get("port") or 0),
            socket=data.get("socket"),
            vault=str(data.get("vault") or ""),
            started=str(data.get("started") or ""),
            auth=str(data.get("auth") or "vault"),
            lock_fd=data.get("lock_fd"),
            stable=bool(data.get("stable")),
        )
    except Untrusted as exc:
        return None, str(exc)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return None, f"unreadable: {exc}"
    return found, ""


class ServerRunning(VaultmemError):
    """A server already runs for this vault's cache."""


def server_running(cache_dir: Path) -> ServerRunning:
    """The error for a second server on ``cache_dir``, naming the first."""
    found = running(cache_dir)
    where = f" (pid {found.pid}, {found.url})" if found else ""
    return ServerRunning(f"a server already runs for {cache_dir}{where}")


@contextlib.contextmanager
def _server_lock(cache_dir: Path) -> Iterator[tuple[int, int, int]]:
    """Held for the server's life; a second server for the same cache is refused. The
    file is this user's and private (0600, no link followed): another user who could
    open it could hold the lock and pass for a server. Yields its (device, inode) and
    the descriptor that holds it (advertised: clients check that it does)."""
    path = cache_dir / LOCK_NAME
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        raise VaultmemError(f"cannot open {path}: {exc.strerror}") from None
    try:
        info = os.fstat(fd)
        problem = trust_problem(str(path), info)
        if problem:
            raise VaultmemError(f"refusing the server lock: {problem}; remove it")
        if info.st_mode & 0o077:
            os.fchmod(fd, 0o600)  # an older server's 0644: others could open it and hold it
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise server_running(cache_dir) from None
        yield info.st_dev, info.st_ino, fd
    finally:
        os.close(fd)


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        info = path.lstat()
    except OSError:
        return None
    return info.st_dev, info.st_ino


def _lost(cache_dir: Path, advert: tuple[int, int] | None, lock: tuple[int, ...]) -> str:
    """Why this server is no longer the one its cache names ("" while it is)."""
    if _identity(cache_dir / ADVERTISEMENT) != advert:
        return f"{cache_dir / ADVERTISEMENT} was removed or replaced"
    if _identity(cache_dir / LOCK_NAME) != lock[:2]:
        return f"{cache_dir / LOCK_NAME} was removed or replaced"
    return ""


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


def _app(vaults: VaultChoice, options: ServeOptions, port: int, activity: Activity) -> Any:
    """The REST API with the MCP endpoint mounted at /mcp (its tools may name the user's
    other vaults); every HTTP request counts as activity."""
    from vaultmem.servers.mcp import http_app, make_server
    from vaultmem.servers.rest import default_allowed_hosts, rest_app

    vault = vaults.main
    mcp = http_app(make_server(vaults), path="/", host=options.host)
    app = _exact_mount(
        rest_app(
            vault,
            token=options.token,
            allowed_hosts=default_allowed_hosts(options.host, port),
            extra_mounts={MCP_PATH: mcp},
        ),
        MCP_PATH,
    )

    async def counted(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            activity.touch()
        await app(scope, receive, send)

    return counted


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
    """Write the advertisement: private (0600) from its first byte and whole, so a client
    that reads it while the server starts never sees an empty file; renamed into place,
    which replaces a link planted there rather than writing where it points."""
    import tempfile

    data = json.dumps(found.as_json(), indent=2) + "\n"
    fd, temp = tempfile.mkstemp(prefix=".server.json.", dir=cache_dir)  # O_EXCL, 0600
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temp, cache_dir / ADVERTISEMENT)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


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
    named: tuple[Mapping[str, Path], Callable[[Path], OpenVault]] | None = None,
) -> None:
    """Serve ``config``'s vault until SIGINT or SIGTERM (KeyboardInterrupt here), then
    close everything and remove the advertisement. ``named``: the user's named vaults
    (name → folder) and how to open one, for the MCP tools' ``vault`` argument.

    ``log`` gets one line per forwarded command, watcher batch and warning; ``on_ready``
    the advertisement once every listener accepts. It also stops, logging why, when its
    advertisement or its lock file is removed or replaced. Raises ServerRunning when a
    server already runs for this cache, ConfigError for a non-loopback host without a
    token.
    """
    from vaultmem.inference.http import BREAKERS, SERVER_BREAKER_S
    from vaultmem.servers.rest import check_bind

    check_bind(options.host, options.token)
    BREAKERS.window = SERVER_BREAKER_S  # a dead endpoint is tried again a minute later
    cache_dir = make_cache(config.cache_dir)
    activity = Activity()

    def counted_log(line: str) -> None:
        activity.touch()  # the forwarding socket logs one line per command it answers
        log(line)

    with _server_lock(cache_dir) as lock, contextlib.ExitStack() as stack:
        vault = OpenVault(config, warm=True)
        stack.callback(vault.close)
        sock = _listen(options.host, options.port)
        stack.callback(sock.close)
        port = sock.getsockname()[1]
        forward_path = _start_forwarding(cache_dir, vault, options, counted_log, stack)
        from vaultmem.servers.vault_choice import VaultChoice

        vaults = VaultChoice(vault, *(named or ({}, None)))
        stack.callback(vaults.close)
        server = _start_http(_app(vaults, options, port, activity), sock, stack)
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
            auth=options.auth,
            lock_fd=lock[2],
            stable=options.port != 0,
        )
        _advertise(cache_dir, found)
        stack.callback(_withdraw, cache_dir)
        advert = _identity(cache_dir / ADVERTISEMENT)
        on_ready(found)
        with contextlib.suppress(KeyboardInterrupt):
            while server.is_alive():
                server.join(WATCH_S)
                lost = _lost(cache_dir, advert, lock)
                if lost:
                    log(f"stopping: {lost}; nobody can find this server any more")
                    break
                if options.idle_timeout is not None and activity.idle() > options.idle_timeout:
                    log(f"stopping: no request for {options.idle_timeout:g} s (--idle-timeout)")
                    break


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


def start_detached(
    args: list[str], config: Config, env: dict[str, str]
) -> tuple[subprocess.Popen[bytes], Path]:
    """Start the `serve` command line ``args`` in a session of its own (no terminal, its
    output appended to ``<cache>/server.log``) and return at once: the process, the log.

    `serve --background` then waits for its advertisement; the SessionStart hook does not
    (the hook must not wait on a model loading).
    """
    log_path = make_cache(config.cache_dir) / LOG_NAME
    with open_log(log_path) as log:
        child = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            env=env,
            cwd=config.vault,
            start_new_session=True,
        )
    return child, log_path


def open_log(path: Path) -> Any:
    """The server log, opened to append without following a link planted in its place,
    private to this user (it names the notes the server touched)."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o600)
    except OSError as exc:
        raise VaultmemError(f"cannot open {path}: {exc.strerror}") from None
    info = os.fstat(fd)
    if info.st_uid != os.getuid():
        os.close(fd)
        raise VaultmemError(f"refusing {path}: it is owned by uid {info.st_uid}; remove it")
    return os.fdopen(fd, "ab")


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


@dataclass(frozen=True)
class ServerProcess:
    """A vaultmem server process of this user running for a vault (found in ``/proc``).

    ``command``: ``serve``, ``mcp`` or ``mcp --http``; ``holds_lock``: it holds the
    cache's server lock open (the file there now, or one removed under it).
    """

    pid: int
    command: str
    holds_lock: bool


def server_processes(vault: Path, cache_dir: Path) -> list[ServerProcess]:
    """Every `vaultmem serve` and `vaultmem mcp` of this user running for ``vault``: the
    ones holding ``<cache>/server.lock`` open, and the ones whose command line names the
    vault (``--vault``, ``VAULTMEM_VAULT``, else found upward from their folder; a named
    vault is not resolved). [] where there is no ``/proc``."""
    from vaultmem.agent.claude_settings import vaultmem_args
    from vaultmem.client import split_roots

    lock = str(cache_dir / LOCK_NAME)
    try:
        pids = sorted(int(name) for name in os.listdir("/proc") if name.isdigit())
    except OSError:
        return []
    found = []
    for pid in pids:
        try:
            if pid == os.getpid() or os.stat(f"/proc/{pid}").st_uid != os.getuid():
                continue
            with open(f"/proc/{pid}/cmdline", "rb") as file:
                words = [os.fsdecode(w) for w in file.read().split(b"\0") if w]
        except OSError:
            continue
        args = vaultmem_args(words)
        split = split_roots(args) if args is not None else None
        command = _server_command(split[1]) if split else None
        if split is None or command is None:
            continue
        holds = _holds_open(pid, lock)
        if holds or _vault_of(pid, split[0].get("--vault")) == vault.resolve():
            found.append(ServerProcess(pid, command, holds))
    return found


def _server_command(args: list[str]) -> str | None:
    """``serve``, ``mcp`` or ``mcp --http`` when ``args`` (from the command word on) run
    a server, else None (`serve status`, `serve stop`, any other command)."""
    if args[:1] == ["serve"] and not (args[1:2] and args[1] in ("stop", "status", "token")):
        return "serve"
    if args[:1] == ["mcp"]:
        return "mcp --http" if "--http" in args[1:] else "mcp"
    return None


def _holds_open(pid: int, path: str) -> bool:
    """Whether process ``pid`` has ``path`` open (or had it, before it was removed)."""
    folder = f"/proc/{pid}/fd"
    try:
        names = os.listdir(folder)
    except OSError:
        return False
    for name in names:
        try:
            target = os.readlink(f"{folder}/{name}")
        except OSError:
            continue
        if target in (path, f"{path} (deleted)"):
            return True
    return False


def _vault_of(pid: int, flag: str | None) -> Path | None:
    """The vault folder process ``pid`` serves, as far as its arguments, environment and
    folder tell (None when they name a vault this cannot resolve)."""
    from vaultmem.config import find_vault

    try:
        cwd = os.readlink(f"/proc/{pid}/cwd")
        with open(f"/proc/{pid}/environ", "rb") as file:
            environ = file.read().split(b"\0")
    except OSError:
        return None
    prefix = b"VAULTMEM_VAULT="
    named = next((os.fsdecode(e[len(prefix) :]) for e in environ if e.startswith(prefix)), "")
    choice = flag or named
    if not choice:
        return find_vault(Path(cwd))
    path = Path(cwd, os.path.expanduser(choice))
    return path.resolve() if path.is_dir() else None
