"""The thin client: hand a read-only command to a running `vaultmem serve` for the vault.

A whole-process `vaultmem search` pays for its imports (typer, the indexes, chromadb,
the embedding model) on every call. When `vaultmem serve` runs for the vault it
advertises a Unix socket in ``<cache>/server.json``; this module, imported by the
console entry point before anything else of vaultmem, finds that file from the
arguments alone (no configuration is parsed), sends the arguments, working folder, the
environment variables the command reads (:data:`vaultmem.environment.COMMAND_ENV`, and
no others: never an API key or token of the shell's) and stdin, and replays the
server's stdout, stderr and exit code. The server runs the same command-line app
(:mod:`vaultmem.servers.forward`), so the answer is the one the command would give in
this process: the vault, the cache and every option are resolved there, from what this
process sent.

Before it sends anything, the client makes the server prove it is this vault's own
(:func:`trusted_server`): the advertisement and the lock file are this user's and
writable by nobody else, the advertised pid is alive and holds ``<cache>/server.lock``
(through the descriptor it advertises: ``/proc/PID/fdinfo/FD`` lists the locks an open
file holds), the socket and its folder are this user's and writable by nobody
else, and the process at the other end of the connected socket is that pid, running as
this user (``SO_PEERCRED``). A cache another user can write to could otherwise point the
CLI, and `hook prompt` with it the agent's context, at that user's listener. A server
that fails a check is not used: one ``vaultmem: warning:`` line on stderr, and the
command runs in process. (An advertisement whose pid is gone is a killed server's: it
is skipped without a word.)

Only ``search``, ``vsearch``, ``query``, ``surface``, ``hook prompt`` and ``hook
pre-tool`` are handed over (reads; `surface` and `hook prompt` append to the surfacing
log, `hook pre-tool` marks the rules it showed in the session). Anything this module
is unsure of (a named vault, a moved cache, a stream that is not UTF-8, a terminal on
stdin) is run in process, and so is every failure: no server, a stale file, a refused or
slow connection, a declined request, a server gone mid-answer. ``VAULTMEM_NO_SERVER=1``
turns forwarding off; so does a system without ``SO_PEERCRED`` (Linux has it), and a
``VAULTMEM_*`` variable vaultmem does not know (it is not forwarded, and the command run
here warns of it).

Standard library only, and only what the interpreter has loaded already or loads fast:
this path must cost a few milliseconds over Python's own start-up.
"""

from __future__ import annotations

import io
import json
import os
import socket
import stat
import sys
import time
from collections.abc import Mapping

from vaultmem import __version__
from vaultmem.environment import COMMAND_ENV, ENV_PREFIX, KNOWN_ENV

FORWARDED = frozenset({"search", "vsearch", "query", "surface"})
ADVERTISEMENT = "server.json"
LOCK_NAME = "server.lock"
CONNECT_S = 0.05
# How long an answer may take in all before the command runs here instead. Claude Code
# stops `hook prompt` at 8 s (agent/hooks.py), and the in-process fallback needs its
# start-up, the vault and maybe the embedding model (1-3 s cold): a warm server answers
# in tens of milliseconds, so one that has not answered in 1 s is not waited for.
ANSWER_S = {"search": 10.0, "vsearch": 30.0, "query": 120.0, "surface": 10.0, "hook": 1.0}
MAX_ANSWER = 64 * 1024 * 1024
MAX_ADVERTISEMENT = 64 * 1024
_ROOT_VALUED = ("--vault", "-V", "--cache-dir")


class _Fallback(Exception):
    """Run the command in this process instead."""


class Untrusted(Exception):
    """The advertised server cannot prove it is this vault's own (the message says why):
    warn, and run the command in this process."""


def split_roots(argv: list[str]) -> tuple[dict[str, str], list[str]] | None:
    """The root options' values (``--vault``, ``--cache-dir``) and the arguments from the
    command word on; None when a root option is one this module does not understand."""
    roots: dict[str, str] = {}
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in _ROOT_VALUED:
            if i + 1 >= len(argv):
                return None
            roots["--vault" if arg == "-V" else arg] = argv[i + 1]
            i += 2
        elif arg.startswith(("--vault=", "--cache-dir=")):
            name, _, value = arg.partition("=")
            roots[name] = value
            i += 1
        elif arg.startswith("-V") and len(arg) > 2:
            roots["--vault"] = arg[2:]
            i += 1
        elif arg.startswith("-"):
            return None  # --version, --help, an unknown option: the app answers
        else:
            break
    return roots, argv[i:]


def command_of(argv: list[str]) -> tuple[str, dict[str, str], list[str]] | None:
    """The forwarded command word, the root options' values and the command's own
    arguments; None when the command is not one to forward (or the root options are
    not ones this module understands)."""
    split = split_roots(argv)
    if split is None or not split[1]:
        return None
    roots, (word, *rest) = split
    if word == "hook":
        return (word, roots, rest) if rest[:1] in (["prompt"], ["pre-tool"]) else None
    return (word, roots, rest) if word in FORWARDED else None


def _surface_reads_stdin(args: list[str]) -> bool:
    """Whether `surface ARGS` reads its prompt from stdin (no PROMPT, or ``-``)."""
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in ("-h", "--help"):
            return False
        if arg == "--":
            return args[i + 1 : i + 2] in ([], ["-"])
        if arg in ("--session", "--budget", "--profile"):
            i += 2
            continue
        if arg.startswith("-") and arg != "-":
            i += 1
            continue
        return arg == "-"
    return True


def _vault_dir(roots: dict[str, str], env: Mapping[str, str], cwd: str) -> str:
    """The vault folder as `vaultmem.config` would find it, when that is cheap to know."""
    choice = roots.get("--vault") or env.get("VAULTMEM_VAULT")
    if choice:
        path = os.path.join(cwd, os.path.expanduser(choice))
        if not os.path.isdir(path):
            raise _Fallback  # a named vault: only the configuration knows where it is
        return os.path.realpath(path)
    here = os.path.realpath(cwd)
    while True:
        if os.path.isfile(os.path.join(here, ".vaultmem.toml")) or os.path.isdir(
            os.path.join(here, ".obsidian")
        ):
            return here
        parent = os.path.dirname(here)
        if parent == here:
            raise _Fallback
        here = parent


def cache_dir(roots: dict[str, str], env: Mapping[str, str], cwd: str) -> str:
    """Where the vault's cache (and the server's advertisement) most likely is.

    A wrong guess costs nothing but speed: the server resolves the configuration again
    from this process's arguments, folder and environment, and runs whatever they name.
    """
    chosen = roots.get("--cache-dir") or env.get("VAULTMEM_CACHE_DIR") or ".vaultmem"
    chosen = os.path.expanduser(chosen)
    if os.path.isabs(chosen):
        return chosen
    return os.path.join(_vault_dir(roots, env, cwd), chosen)


def _utf8(stream: object) -> bool:
    encoding = getattr(stream, "encoding", None) or ""
    return encoding.lower().replace("_", "-") in ("utf-8", "utf8")


def _read_stdin(word: str, rest: list[str]) -> bytes | None:
    """What the command would read from stdin (read now, kept for a fallback)."""
    if word == "hook" or (word == "surface" and _surface_reads_stdin(rest)):
        if sys.stdin is None or sys.stdin.isatty() or not _utf8(sys.stdin):
            raise _Fallback  # typed input, or bytes this module would have to re-decode
        return sys.stdin.buffer.read()
    return None


def trust_problem(path: str, info: os.stat_result) -> str | None:
    """Why a file or folder another local user could have planted or could swap is not
    this user's own (owned by another uid, or writable by group or others); None when it
    is. The one rule for the advertisement, the server lock, the socket and its folder,
    here and in the server that creates them."""
    if info.st_uid != os.getuid():
        return f"{shown(path)} is owned by uid {info.st_uid}"
    if info.st_mode & 0o022:
        return f"{shown(path)} is writable by other users (mode {info.st_mode & 0o777:03o})"
    return None


def shown(text: str) -> str:
    """``text`` for one line of output: control characters escaped (a planted path must
    not be able to write lines of its own)."""
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)


def _private_file(path: str, kind: int, what: str) -> os.stat_result:
    info = os.lstat(path)
    if stat.S_IFMT(info.st_mode) != kind:
        raise Untrusted(f"{shown(path)} is not a {what}")
    problem = trust_problem(path, info)
    if problem:
        raise Untrusted(problem)
    return info


def read_advertisement(cache: str) -> dict[str, object]:
    """The advertisement's fields, read without following a link and only when the file
    is this user's and writable by nobody else (Untrusted otherwise; FileNotFoundError
    when there is none; ValueError when it is not a JSON object)."""
    path = os.path.join(cache, ADVERTISEMENT)
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise Untrusted(f"{shown(path)} cannot be opened as a file ({exc.strerror})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise Untrusted(f"{shown(path)} is not a regular file")
        problem = trust_problem(path, info)
        if problem:
            raise Untrusted(problem)
        data = os.read(fd, MAX_ADVERTISEMENT + 1)
    finally:
        os.close(fd)
    found = json.loads(data) if len(data) <= MAX_ADVERTISEMENT else None
    if not isinstance(found, dict):
        raise ValueError("not a JSON object")
    return found


def holds_flock(pid: int, fd: int, path: str) -> bool:
    """Whether process ``pid`` holds an exclusive flock on the file at ``path`` through
    its descriptor ``fd`` (the kernel lists each lock an open file holds in
    ``/proc/PID/fdinfo/FD``; reading it is cheap, unlike ``/proc/locks``, which stalls
    every file lock of the system for milliseconds). Without ``/proc`` (not Linux):
    whether anyone holds it."""
    info = os.lstat(path)
    key = f"{os.major(info.st_dev):02x}:{os.minor(info.st_dev):02x}:{info.st_ino}"
    try:
        with open(f"/proc/{pid}/fdinfo/{fd}", "rb") as file:
            text = file.read().decode("ascii", "replace")
    except OSError:
        return not os.path.isdir("/proc/self/fdinfo") and flock_held(path)
    # "lock:\t1: FLOCK  ADVISORY  WRITE 1234 fe:00:5309333 0 EOF"
    wanted = ["lock:", "FLOCK", "ADVISORY", "WRITE", str(pid), key]
    for line in text.splitlines():
        parts = line.split()
        if len(parts) > 6 and [parts[0], *parts[2:7]] == wanted:
            return True
    return False


def flock_held(path: str) -> bool:
    """Whether some process holds a flock on ``path`` (OSError when it cannot be opened;
    a link is not followed)."""
    import fcntl

    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def _holds_lock(cache: str, pid: int, fd: object) -> None:
    path = os.path.join(cache, LOCK_NAME)
    try:
        _private_file(path, stat.S_IFREG, "regular file")
    except FileNotFoundError:
        raise Untrusted(f"{shown(path)} is missing") from None
    if not isinstance(fd, int) or isinstance(fd, bool) or fd < 0:
        raise Untrusted("it names no lock descriptor (an older server? restart it)")
    if not holds_flock(pid, fd, path):
        raise Untrusted(f"pid {pid} does not hold {shown(path)}")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        raise Untrusted(f"pid {pid} belongs to another user") from None
    return True


def trusted_server(cache: str, *, need_socket: bool = True) -> tuple[int, str | None] | None:
    """The pid and socket of the server advertised in ``cache`` once the files prove it
    is this vault's own (see the module doc; the connected peer is checked by
    :func:`peer_problem`); None when there is no live server to try: no advertisement, a
    killed server's, or (with ``need_socket``) one that has no socket. Untrusted when a
    check fails."""
    try:
        found = read_advertisement(cache)
    except FileNotFoundError:
        return None
    except ValueError:
        raise Untrusted(f"{shown(os.path.join(cache, ADVERTISEMENT))} is not valid") from None
    pid, path = found.get("pid"), found.get("socket")
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        raise Untrusted("it names no pid")
    if path is None and need_socket:
        return None  # a server without CLI forwarding
    if path is not None and (not isinstance(path, str) or not os.path.isabs(path)):
        raise Untrusted("it names no socket")
    if not _alive(pid):
        return None
    _holds_lock(cache, pid, found.get("lock_fd"))
    if path is None:
        return pid, None
    try:
        _private_file(path, stat.S_IFSOCK, "socket")
        folder = os.path.dirname(path)
        problem = trust_problem(folder, os.stat(folder))
    except FileNotFoundError:
        raise Untrusted(f"{shown(path)} is missing") from None
    if problem:
        raise Untrusted(problem)  # another user could swap the socket for their own
    return pid, path


def peer_problem(conn: socket.socket, pid: int) -> str | None:
    """Why the process at the other end of ``conn`` is not pid ``pid`` running as this
    user (``SO_PEERCRED``: the kernel's word, not a file's); None when it is."""
    raw = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)
    peer = int.from_bytes(raw[0:4], sys.byteorder, signed=True)
    uid = int.from_bytes(raw[4:8], sys.byteorder)
    if uid != os.getuid() or peer != pid:
        return f"the socket is served by pid {peer} (uid {uid}), not by pid {pid}"
    return None


def _exchange(
    path: str, pid: int, request: dict[str, object], stdin: bytes | None, answer_s: float
) -> dict[str, object]:
    """Connect, check the peer, send one request and read the whole answer (EOF ends it)
    within ``answer_s`` seconds in all."""
    deadline = time.monotonic() + answer_s
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(CONNECT_S)
        conn.connect(path)
        problem = peer_problem(conn, pid)
        if problem:
            raise Untrusted(problem)  # closed unsent: that listener learns nothing
        if stdin is not None:
            request["stdin"] = stdin.decode("utf-8", "surrogateescape")
        line = json.dumps(request, ensure_ascii=False).encode("utf-8", "surrogateescape")
        conn.settimeout(answer_s)
        conn.sendall(line)
        conn.shutdown(socket.SHUT_WR)
        chunks, size = [], 0
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise _Fallback  # a server that trickles is as slow as one that stalls
            conn.settimeout(left)
            chunk = conn.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if size > MAX_ANSWER:
                raise _Fallback
    answer = json.loads(b"".join(chunks))
    if not isinstance(answer, dict) or not isinstance(answer.get("code"), int):
        raise _Fallback  # a decline, or the server died before answering
    output = answer.get("output")
    if not isinstance(output, list) or not all(
        isinstance(part, list) and len(part) == 2 and part[0] in (1, 2) and isinstance(part[1], str)
        for part in output
    ):
        raise _Fallback
    return answer


def forwarded_env(env: Mapping[str, str]) -> dict[str, str]:
    """The variables of ``env`` a forwarded command reads (:data:`COMMAND_ENV`), and only
    those."""
    return {name: env[name] for name in COMMAND_ENV if name in env}


def _replay(answer: dict[str, object]) -> int:
    """Write the server's output in the order it was written; the exit code."""
    streams = {1: sys.stdout, 2: sys.stderr}
    for fd, text in answer["output"]:  # type: ignore[attr-defined]
        stream = streams[fd]
        stream.buffer.write(text.encode("utf-8", "surrogateescape"))
        stream.flush()
    return int(answer["code"])  # type: ignore[call-overload]


def forward(argv: list[str]) -> int | None:
    """Run ``argv`` (the arguments after the program name) through the vault's server;
    its exit code, or None when the command must run in this process. stdin read here
    for the request is put back on ``sys.stdin`` for that case."""
    env = os.environ
    if env.get("VAULTMEM_NO_SERVER", "") not in ("", "0") or not hasattr(socket, "SO_PEERCRED"):
        return None
    if any(name.startswith(ENV_PREFIX) and name not in KNOWN_ENV for name in env):
        return None  # a misspelt variable is not forwarded: run here, where it is warned of
    found = command_of(argv)
    if found is None or not (_utf8(sys.stdout) and _utf8(sys.stderr)):
        return None
    word, roots, rest = found
    data: bytes | None = None
    cache = ""
    try:
        cwd = os.getcwd()
        cache = cache_dir(roots, env, cwd)
        server = trusted_server(cache)
        if server is None or server[1] is None:
            raise _Fallback
        data = _read_stdin(word, rest)
        request: dict[str, object] = {
            "argv": argv,
            "cwd": cwd,
            "env": forwarded_env(env),
            "stdin": None,
            "stdin_errors": sys.stdin.errors if data is not None else None,
            "version": __version__,
        }
        answer = _exchange(server[1], server[0], request, data, ANSWER_S[word])
    except Untrusted as exc:
        where = shown(os.path.join(cache, ADVERTISEMENT))
        sys.stderr.write(f"vaultmem: warning: not using the server advertised in {where}: ")
        sys.stderr.write(f"{exc}; running here\n")
        sys.stderr.flush()
        _put_back(data)
        return None
    except (_Fallback, OSError, ValueError, KeyError, TypeError, AttributeError):
        # OSError covers no file, refused, timeout, a reset; ValueError a torn answer.
        _put_back(data)
        return None
    try:
        return _replay(answer)
    except BrokenPipeError:
        # `vaultmem search … | head` closing the pipe is not an error (as in process).
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _put_back(data: bytes | None) -> None:
    """Put the stdin read for the request back, for the command run in this process."""
    if data is not None:
        sys.stdin = io.TextIOWrapper(
            io.BytesIO(data), encoding=sys.stdin.encoding, errors=sys.stdin.errors
        )
