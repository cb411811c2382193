"""The models folder of a vault's cache (``<cache>/models/``): what vaultmem derives from
the shipped model once and keeps for later processes (:mod:`vaultmem.inference.quantized`,
:mod:`vaultmem.inference.prepared`).

A file there is loaded as a model, so the folder and its files must be this user's and
writable by nobody else: another local user must not be able to plant a graph for
onnxruntime to parse. A folder or file that is not is neither read nor written.
"""

from __future__ import annotations

import os
import stat
from contextlib import suppress
from pathlib import Path

from vaultmem.atomic import atomic_write
from vaultmem.client import trust_problem
from vaultmem.vault import make_cache

MODELS_DIR = "models"


def private_folder(folder: Path) -> Path | None:
    """``folder`` (made, 0700, inside the vault's cache) when it and the cache are this
    user's and writable by nobody else; None otherwise."""
    try:
        make_cache(folder.parent)
        with suppress(FileExistsError):
            folder.mkdir(mode=0o700)
        for path in (folder.parent, folder):
            info = os.lstat(path)
            if not stat.S_ISDIR(info.st_mode) or trust_problem(str(path), info):
                return None
    except OSError:
        return None
    return folder


def read_private(path: Path, limit: int | None = None) -> bytes | None:
    """The bytes of ``path`` when it is a regular file (not a link) of this user's that
    nobody else may write; None otherwise (or when longer than ``limit``)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or trust_problem(str(path), info):
            return None
        if limit is not None and info.st_size > limit:
            return None
        with os.fdopen(os.dup(fd), "rb") as fh:
            return fh.read()
    except OSError:
        return None
    finally:
        os.close(fd)


def write_private(path: Path, data: bytes) -> None:
    """Write ``path`` atomically, 0600. A link (or anything else not a regular file) in
    its place is removed first, so that the write never goes through it."""
    with suppress(FileNotFoundError):
        if not stat.S_ISREG(os.lstat(path).st_mode):
            os.unlink(path)
    atomic_write(path, data, mode=0o600)
