"""Whether the user trusts a vault's own files: ``vaultmem trust``, kept outside the vault.

A vault travels through git, so its ``.vaultmem.toml`` and ``.vaultmem.d/`` may have been
written by someone else (SPEC principle 10). Until the user trusts the vault, its config
may only narrow what is indexed (:mod:`vaultmem.config` ignores the keys that route data
or name paths) and its template overrides are not used (:mod:`vaultmem.prompts`).

Trust is recorded as direnv records ``allow``: in the user's config folder, never in the
vault, one record per vault named by a hash of the vault's real path, holding a digest of
what trust covers (``.vaultmem.toml``, everything under ``.vaultmem.d/`` and the legacy
``.vaultmem/templates/``: names, bytes and link targets). A pull that changes any of
them changes the digest, so the vault is untrusted again until the user looks and runs
``vaultmem trust`` once more. A record another user could have written (not ours, a
link, writable by others) counts for nothing.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from vaultmem.errors import ConfigError

__all__ = [
    "COVERED",
    "TrustState",
    "revoke",
    "trust",
    "trust_folder",
    "trust_state",
    "vault_digest",
]

# What trust covers, relative to the vault: the files a pull can change that vaultmem
# reads as configuration or templates (the legacy override folder sits in the cache).
COVERED = (".vaultmem.toml", ".vaultmem.d", ".vaultmem/templates")
_DIGEST_VERSION = b"vaultmem-trust-1\0"
Status = Literal["trusted", "changed", "untrusted"]


def trust_folder(env: Mapping[str, str]) -> Path:
    """Where trust records live: ``$XDG_CONFIG_HOME/vaultmem/trusted`` (else
    ``~/.config/vaultmem/trusted``), beside the user config and never inside a vault."""
    base = env.get("XDG_CONFIG_HOME") or str(Path(env.get("HOME", "~")) / ".config")
    return Path(base).expanduser() / "vaultmem" / "trusted"


def vault_digest(vault: Path) -> str:
    """The sha256 of what trust covers in ``vault`` (see :data:`COVERED`): each entry's
    path and kind, a file's bytes, a link's target (never followed). Unreadable entries
    count by their error, so they change the digest rather than vanish from it."""
    digest = hashlib.sha256(_DIGEST_VERSION)
    for name in COVERED:
        _feed(digest, vault, name)
    return digest.hexdigest()


def _feed(digest: Any, vault: Path, rel: str) -> None:
    path = vault / rel
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        digest.update(f"E {rel} {exc.errno}\0".encode())
        return
    if stat.S_ISLNK(info.st_mode):
        digest.update(f"L {rel}\0".encode() + os.fsencode(os.readlink(path)) + b"\0")
    elif stat.S_ISDIR(info.st_mode):
        digest.update(f"D {rel}\0".encode())
        try:
            children = sorted(os.listdir(path))
        except OSError as exc:
            digest.update(f"E {rel} {exc.errno}\0".encode())
            return
        for child in children:
            _feed(digest, vault, f"{rel}/{child}")
    elif stat.S_ISREG(info.st_mode):
        try:
            data = _read_file(path)
        except OSError as exc:
            digest.update(f"E {rel} {exc.errno}\0".encode())
            return
        digest.update(f"F {rel} {len(data)}\0".encode() + data)
    else:
        digest.update(f"O {rel} {stat.S_IFMT(info.st_mode)}\0".encode())


def _read_file(path: Path) -> bytes:
    # O_NOFOLLOW: the entry was a file when listed; a link swapped in since is not read.
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as fh:
        return fh.read()


@dataclass(frozen=True)
class TrustState:
    """A vault's trust: ``trusted`` (recorded, and nothing covered changed since),
    ``changed`` (recorded for other contents: re-asked) or ``untrusted``; ``since``: when
    the user trusted it (ISO 8601, "" when never)."""

    vault: Path
    status: Status
    since: str = ""
    digest: str = ""  # of the covered files now (computed for a recorded vault)

    @property
    def trusted(self) -> bool:
        """Whether the vault's own files are used as the user's."""
        return self.status == "trusted"


def _record_path(folder: Path, vault: Path) -> Path:
    name = hashlib.sha256(os.fsencode(str(vault)) + b"\n").hexdigest()
    return folder / f"{name}.json"


def _own_private(info: os.stat_result) -> bool:
    """Written by this user alone: owned by them, writable by nobody else."""
    return info.st_uid == os.getuid() and not info.st_mode & 0o022


def _read_record(folder: Path, vault: Path) -> dict[str, str] | None:
    """The record of ``vault`` when this user wrote it (None otherwise)."""
    path = _record_path(folder, vault)
    try:
        if not _own_private(os.stat(folder)):
            return None
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fh.fileno())
        if not stat.S_ISREG(info.st_mode) or not _own_private(info):
            return None
        try:
            data = json.loads(fh.read(65536))
        except ValueError:
            return None
    if not isinstance(data, dict) or data.get("vault") != str(vault):
        return None
    return {k: str(v) for k, v in data.items()}


def trust_state(folder: Path, vault: Path, digest: str | None = None) -> TrustState:
    """Whether the user trusts ``vault`` (its real path) now; ``digest``: its
    :func:`vault_digest` when the caller has it already.

    Example:
        >>> trust_state(trust_folder(os.environ), Path("/home/me/notes")).status  # doctest: +SKIP
        'trusted'
    """
    record = _read_record(folder, vault)
    if record is None:
        return TrustState(vault, "untrusted")
    since = record.get("trusted", "")
    now = digest or vault_digest(vault)
    return TrustState(vault, "trusted" if record.get("digest") == now else "changed", since, now)


def _private_folder(folder: Path) -> None:
    """Create the record folder (0700) or check the one there; ConfigError when another
    user could write to it."""
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = os.lstat(folder)
    except OSError as exc:
        raise ConfigError(f"cannot use {folder}: {exc.strerror}") from None
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        raise ConfigError(f"cannot use {folder}: it is not a folder")
    if not _own_private(info):
        raise ConfigError(
            f"cannot use {folder}: another user owns it or may write to it (chmod 700 it)"
        )


def trust(folder: Path, vault: Path, now: datetime) -> TrustState:
    """Record that the user trusts ``vault`` as its covered files are now (0600, atomic).

    Example:
        >>> trust(trust_folder(os.environ), vault, now).status  # doctest: +SKIP
        'trusted'
    """
    _private_folder(folder)
    since = now.isoformat(timespec="seconds")
    data = {"vault": str(vault), "digest": vault_digest(vault), "trusted": since}
    path = _record_path(folder, vault)
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh)
            fh.write("\n")
        os.replace(temp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise ConfigError(f"cannot write {path}: {exc.strerror}") from None
    return TrustState(vault, "trusted", since, data["digest"])


def revoke(folder: Path, vault: Path) -> bool:
    """Forget the user's trust in ``vault``; whether there was a record to remove."""
    try:
        os.unlink(_record_path(folder, vault))
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise ConfigError(f"cannot remove the trust of {vault}: {exc.strerror}") from None
    return True
