"""Atomic file replacement: a reader (Obsidian, git, another vaultmem) sees either the old
bytes or the new bytes of a note, never a half-written file."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

__all__ = ["atomic_write"]


def _default_mode() -> int:
    """The mode a plain ``open(path, "w")`` would give a new file under the current umask."""
    # /proc avoids the os.umask() set-and-restore dance, which races with other threads.
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return 0o666 & ~int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


def atomic_write(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically.

    The bytes go to a temporary file in the same folder (so the final ``os.replace`` is a
    rename within one file system), are flushed and fsynced, get the permission bits of
    the file they replace (or the umask default for a new file), and then take its place.
    When ``path`` is a symlink the file it points to is replaced and the link is kept.
    On any failure the temporary file is removed and the original is left as it was.
    """
    target = Path(path)
    if target.is_symlink():
        # Replacing the link itself would turn a linked note into a detached copy.
        target = Path(os.path.realpath(target))
    folder = target.parent
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        mode = _default_mode()

    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        # mkstemp creates 0600; a note must keep the bits the user gave it.
        os.chmod(tmp_name, mode)
        os.replace(tmp_name, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)
        raise

    # Make the rename itself durable; not every platform can open a directory.
    try:
        dir_fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)
