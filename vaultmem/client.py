"""The thin client: hand a read-only command to a running `vaultmem serve` for the vault.

A whole-process `vaultmem search` pays for its imports (typer, the indexes, chromadb,
the embedding model) on every call. When `vaultmem serve` runs for the vault it
advertises a Unix socket in ``<cache>/server.json``; this module, imported by the
console entry point before anything else of vaultmem, finds that file from the
arguments alone (no configuration is parsed), sends the arguments, working folder,
environment and stdin as they are, and replays the server's stdout, stderr and exit
code. The server runs the same command-line app (:mod:`vaultmem.servers.forward`), so
the answer is the one the command would give in this process: the vault, the cache
and every option are resolved there, from what this process sent.

Only ``search``, ``vsearch``, ``query``, ``surface`` and ``hook prompt`` are handed over
(reads; `surface` and `hook prompt` append to the surfacing log). Anything this module
is unsure of (a named vault, a moved cache, a stream that is not UTF-8, a terminal on
stdin) is run in process, and so is every failure: no server, a stale file, a refused or
slow connection, a declined request, a server gone mid-answer. ``VAULTMEM_NO_SERVER=1``
turns forwarding off.

Standard library only, and only what the interpreter has loaded already or loads fast:
this path must cost a few milliseconds over Python's own start-up.
"""

from __future__ import annotations

import io
import json
import os
import socket
import sys

from vaultmem import __version__

FORWARDED = frozenset({"search", "vsearch", "query", "surface"})
ADVERTISEMENT = "server.json"
CONNECT_S = 0.05
# How long an answer may take before the command runs here instead. `hook prompt` must
# stay well inside Claude Code's 8 s hook timeout, fallback included.
ANSWER_S = {"search": 10.0, "vsearch": 30.0, "query": 120.0, "surface": 10.0, "hook": 4.0}
MAX_ANSWER = 64 * 1024 * 1024
_ROOT_VALUED = ("--vault", "-V", "--cache-dir")


class _Fallback(Exception):
    """Run the command in this process instead."""


def command_of(argv: list[str]) -> tuple[str, dict[str, str], list[str]] | None:
    """The forwarded command word, the root options' values and the command's own
    arguments; None when the command is not one to forward (or the root options are
    not ones this module understands)."""
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
    if i >= len(argv):
        return None
    word, rest = argv[i], argv[i + 1 :]
    if word == "hook":
        return (word, roots, rest) if rest[:1] == ["prompt"] else None
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
        if arg in ("--session", "--budget"):
            i += 2
            continue
        if arg.startswith("-") and arg != "-":
            i += 1
            continue
        return arg == "-"
    return True


def _vault_dir(roots: dict[str, str], env: dict[str, str], cwd: str) -> str:
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


def cache_dir(roots: dict[str, str], env: dict[str, str], cwd: str) -> str:
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


def _socket_path(cache: str) -> str:
    with open(os.path.join(cache, ADVERTISEMENT), encoding="utf-8") as file:
        found = json.load(file).get("socket")
    if not isinstance(found, str) or not found:
        raise _Fallback
    return found


def _exchange(path: str, request: bytes, answer_s: float) -> dict[str, object]:
    """Send one request and read the whole answer (EOF ends it)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(CONNECT_S)
        conn.connect(path)
        conn.settimeout(answer_s)
        conn.sendall(request)
        conn.shutdown(socket.SHUT_WR)
        chunks, size = [], 0
        while chunk := conn.recv(65536):
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
    env = dict(os.environ)
    if env.get("VAULTMEM_NO_SERVER", "") not in ("", "0"):
        return None
    found = command_of(argv)
    if found is None or not (_utf8(sys.stdout) and _utf8(sys.stderr)):
        return None
    word, roots, rest = found
    data: bytes | None = None
    try:
        cwd = os.getcwd()
        path = _socket_path(cache_dir(roots, env, cwd))
        data = _read_stdin(word, rest)
        request = {
            "argv": argv,
            "cwd": cwd,
            "env": env,
            "stdin": None if data is None else data.decode("utf-8", "surrogateescape"),
            "stdin_errors": sys.stdin.errors if data is not None else None,
            "version": __version__,
        }
        line = json.dumps(request, ensure_ascii=False).encode("utf-8", "surrogateescape")
        answer = _exchange(path, line, ANSWER_S[word])
    except (_Fallback, OSError, ValueError, KeyError, TypeError, AttributeError):
        # OSError covers no file, refused, timeout, a reset; ValueError a torn answer.
        if data is not None:
            sys.stdin = io.TextIOWrapper(
                io.BytesIO(data), encoding=sys.stdin.encoding, errors=sys.stdin.errors
            )
        return None
    try:
        return _replay(answer)
    except BrokenPipeError:
        # `vaultmem search … | head` closing the pipe is not an error (as in process).
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
