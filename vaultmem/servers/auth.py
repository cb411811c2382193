"""Who may call a vault's HTTP servers: the vault's bearer token, or an explicit --no-auth.

`serve` and `mcp --http` require ``Authorization: Bearer <token>`` on every request but
``/v1/health`` and the docs, on loopback too: another user of the machine can reach
127.0.0.1 as well as its owner. The token is ``--token`` or ``VAULTMEM_SERVE_TOKEN``
when given, else the vault's own, kept in ``<cache>/server.token``: made on first use
(:func:`secrets.token_urlsafe`, 0600 from its first byte, put in place with a hard link
so no reader ever sees it half written) and refused when another user owns it or may
read it. ``--no-auth`` serves without a token, on loopback only (:func:`check_bind`
refuses it elsewhere). `vaultmem serve token` prints the token for curl; `hooks install
--mcp http` writes it into Claude Code's MCP config.

Standard library only: `hooks install` and `doctor` read the token without the servers.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from vaultmem.errors import ConfigError, RequestError
from vaultmem.vault import make_cache

TOKEN_NAME = "server.token"
TOKEN_ENV = "VAULTMEM_SERVE_TOKEN"
Source = Literal["vault", "given", "none"]


@dataclass(frozen=True)
class ServerAuth:
    """The token a server requires (None: none, with --no-auth) and where it came from:
    ``vault`` (the token file), ``given`` (--token or VAULTMEM_SERVE_TOKEN), ``none``."""

    token: str | None
    source: Source

    def __repr__(self) -> str:
        # The token must never reach logs or tracebacks through a repr.
        return f"ServerAuth(token={'***' if self.token else None}, source={self.source!r})"


def describe(source: str) -> str:
    """How a client authenticates to a server whose auth came from ``source``, in words."""
    if source == "none":
        return "no token (--no-auth: anyone on this machine can call it)"
    if source == "given":
        return "the token it was started with (--token or VAULTMEM_SERVE_TOKEN)"
    return "the vault's token (`vaultmem serve token` prints it)"


def token_path(cache_dir: Path) -> Path:
    """``<cache>/server.token``."""
    return cache_dir / TOKEN_NAME


def server_auth(cache_dir: Path, *, given: str | None, no_auth: bool) -> ServerAuth:
    """The auth a server for ``cache_dir`` runs with: ``given`` (a --token value), none
    with ``no_auth``, else the vault's token (made now when there is none yet).

    Example:
        >>> server_auth(Path("vault/.vaultmem"), given=None, no_auth=True)
        ServerAuth(token=None, source='none')
    """
    if no_auth:
        if given:
            raise RequestError(f"--no-auth contradicts --token (or {TOKEN_ENV}): choose one")
        return ServerAuth(None, "none")
    if given:
        return ServerAuth(given, "given")
    return ServerAuth(vault_token(cache_dir), "vault")


def vault_token(cache_dir: Path, *, create: bool = True) -> str:
    """The vault's token from ``<cache>/server.token``, made when missing (with
    ``create``); ConfigError when the file is not this user's private regular file."""
    path = token_path(cache_dir)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        if not create:
            raise ConfigError(
                f"no token yet in {path} (`vaultmem serve` or `vaultmem serve token` makes it)"
            ) from None
        return _create(path)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the token ({exc.strerror}); remove it") from None
    try:
        problem = token_problem(path, os.fstat(fd))
        if problem:
            raise ConfigError(f"refusing the token in {path}: {problem}; remove it")
        text = os.read(fd, 4096).decode("ascii", "replace").strip()
    finally:
        os.close(fd)
    if not text or any(not c.isprintable() or c.isspace() for c in text):
        raise ConfigError(f"{path} holds no token; remove it and a new one is made")
    return text


def token_problem(path: Path, info: os.stat_result) -> str | None:
    """Why a token file may not be used: not a regular file, another user's, or readable
    (or writable) by group or others; None when it is fine."""
    if not stat.S_ISREG(info.st_mode):
        return "it is not a regular file"
    if info.st_uid != os.getuid():
        return f"it is owned by uid {info.st_uid}"
    if info.st_mode & 0o077:
        return f"other users may read it (mode {info.st_mode & 0o777:03o})"
    return None


def _create(path: Path) -> str:
    """A new token, written whole into a private temp file, then linked into place (a
    second process making one at the same moment loses, and reads the winner's)."""
    import tempfile

    make_cache(path.parent)
    token = secrets.token_urlsafe(32)
    fd, temp = tempfile.mkstemp(prefix=".server.token.", dir=path.parent)  # O_EXCL, 0600
    try:
        with os.fdopen(fd, "w", encoding="ascii") as file:
            file.write(token + "\n")
            file.flush()
            os.fsync(file.fileno())
        try:
            os.link(temp, path)
        except FileExistsError:
            return vault_token(path.parent, create=False)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(temp)
    return token
