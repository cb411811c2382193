"""How vaultmem writes files: a reader sees the old bytes or the new bytes, never a mix, and
a note the user saves while vaultmem rewrites it is never lost.

Three primitives, one temp-file mechanism (same folder, fsynced, permission bits kept):

- :func:`atomic_write` replaces a file vaultmem owns (manifest, caches).
- :func:`rewrite` applies a transform to a note the user may be editing at that moment.
- :func:`create_new` creates a note and never clobbers a file that appeared at its path.

How :func:`rewrite` keeps a concurrent save, on Linux:

1. Read the note, apply the transform, write the result to a temp file and take a write
   lease on it (``F_SETLEASE``): while held, no other process has that file open, and one
   that opens it waits until the lease is released.
2. Swap the temp file and the note with ``renameat2(RENAME_EXCHANGE)``: the note's name now
   holds our file, the temp name holds the displaced one, and nothing is deleted.
3. Wait until no other process has the displaced file open (a write lease on it succeeds
   only then), read it, and compare it with the bytes the transform was applied to. An
   appender that still held the old file open has finished by then, and nobody can newly
   open it by path (it lives under a hidden temp name).
4. Equal: done. Different (someone saved or appended between step 1 and step 2): apply the
   transform to the displaced bytes and write the result into our file in place. That is
   safe because our lease guarantees nobody else has it open; anyone who opened the note
   since the swap is waiting for the lease and then sees the final bytes. A second swap
   would be worse: a process waiting on our file would be left holding the swapped-out one.
   If an editor replaced the note meanwhile, start over from its bytes; after
   ``MAX_ATTEMPTS`` rounds give up with ``ConflictError`` (exit 75), the user's bytes in place.

What is left, on Linux: a process that looked up the note's path before the swap but was
descheduled until after vaultmem's check opens the displaced file and writes to it
unseen (a few microseconds between a path lookup and the open, which must straddle the
whole check). A process that keeps the note open for over two seconds (a viewer holding
it) is waited for no longer: the displaced file is then re-read until two reads agree,
and a write it makes after that is lost. A power loss while the final bytes are written
in place (step 4, only after a concurrent save) can tear the note; the user's version is
then still on disk under the temp name.

Without leases (``/proc/sys/fs/leases-enable`` is 0, or a file system or owner that
refuses them) the displaced file is read at once after the swap; when it is what the
transform was applied to it is re-read until two reads agree (for an appender that
still held it), and a conflict swaps the user's file straight back and starts over.
What is left there: an appender that writes after those reads loses its line, and a
save based on vaultmem's first version in the microseconds before a swap-back wins over
the displaced one. Without ``renameat2`` (not Linux, or a file system without
``RENAME_EXCHANGE``) the note is re-read just before ``os.replace``: a save landing
between that read and the rename is lost, and so is a line appended to the replaced
file after it.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import signal
import stat
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from vaultmem.errors import ConflictError, NoteError

try:
    import fcntl
except ImportError:  # not POSIX: no leases, and no renameat2 either
    fcntl = None  # type: ignore[assignment]

__all__ = ["MAX_ATTEMPTS", "RewriteResult", "atomic_write", "create_new", "rewrite"]

# Rounds of a rewrite before a note that keeps changing gets "being edited; try again".
MAX_ATTEMPTS = 5
# How long a rewrite waits for other processes to close a displaced note.
_QUIET_WAIT = 2.0
_POLL = 0.001

_AT_FDCWD = -100
_RENAME_EXCHANGE = 2
_F_SETSIG = 10  # Linux; not exported by Python's fcntl everywhere
# renameat2 exists but this file system (or kernel) cannot exchange: replace instead.
_NO_EXCHANGE = frozenset({errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP})
# os.link is refused on file systems without hard links (FAT, some FUSE mounts).
_NO_LINKS = frozenset({errno.EPERM, errno.EOPNOTSUPP, errno.ENOSYS, errno.EXDEV, errno.EMLINK})


def _renameat2() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        func = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):  # glibc < 2.28, musl without it
        return None
    func.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    func.restype = ctypes.c_int
    return func


_RENAMEAT2 = _renameat2()


# --------------------------------------------------------------------------- small helpers


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


def _temp_file(folder: Path, name: str, data: bytes, mode: int) -> tuple[int, str]:
    """A hidden temp file in ``folder`` holding ``data`` with ``mode``, on disk; (fd, path).

    The descriptor stays open (read-write) for the caller; on failure nothing is left.
    """
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=folder)
    try:
        _write_at(fd, data)
        # mkstemp creates 0600; a note must keep the bits the user gave it.
        os.fchmod(fd, mode)
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return fd, tmp


def _write_at(fd: int, data: bytes) -> None:
    """Write all of ``data`` at offset 0 and cut the file there."""
    view, done = memoryview(data), 0
    while done < len(data):
        done += os.pwrite(fd, view[done:], done)
    os.ftruncate(fd, len(data))


def _read_fd(fd: int) -> bytes:
    chunks, offset = [], 0
    while chunk := os.pread(fd, 1 << 20, offset):
        chunks.append(chunk)
        offset += len(chunk)
    return b"".join(chunks)


def _fsync_dir(folder: Path) -> None:
    """Make renames in ``folder`` durable; not every platform can open a directory."""
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


def _real_path(path: Path) -> Path:
    """The file a write must change: a symlinked note is written through to its target."""
    # Replacing the link itself would turn a linked note into a detached copy.
    return Path(os.path.realpath(path)) if path.is_symlink() else path


# --------------------------------------------------------------------------- atomic_write


def atomic_write(path: Path, data: bytes, *, mode: int | None = None) -> None:
    """Replace ``path`` with ``data`` atomically (for files vaultmem owns).

    The bytes go to a temporary file in the same folder (so the final ``os.replace`` is a
    rename within one file system), are flushed and fsynced, get ``mode`` or else the
    permission bits of the file they replace (or the umask default for a new file), and
    then take its place.
    When ``path`` is a symlink the file it points to is replaced and the link is kept.
    On any failure the temporary file is removed and the original is left as it was.
    Notes the user may be editing go through :func:`rewrite` instead.
    """
    target = _real_path(Path(path))
    if mode is None:
        try:
            mode = stat.S_IMODE(os.stat(target).st_mode)
        except FileNotFoundError:
            mode = _default_mode()
    fd, tmp = _temp_file(target.parent, target.name, data, mode)
    try:
        os.close(fd)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    _fsync_dir(target.parent)


# --------------------------------------------------------------------------- create_new


def create_new(path: Path, data: bytes, source: str | None = None) -> None:
    """Create the file ``path`` holding ``data``; ``FileExistsError`` if anything is there.

    The bytes are written and fsynced under a temp name, then hard-linked to ``path``
    (``link`` fails when the name exists, so a note that appeared meanwhile is never
    clobbered) and the temp name is removed. On file systems without hard links the file
    is created with ``O_EXCL`` instead (exclusive too, but a reader may see it half
    written). A folder that cannot be written raises a one-line ``NoteError``.
    """
    path = Path(path)
    source = source or str(path)
    fd, tmp = _temp_for(path, data, _default_mode(), f"{source} not created")
    try:
        os.close(fd)
        try:
            os.link(tmp, path)
        except FileExistsError:
            raise
        except OSError as exc:
            if exc.errno not in _NO_LINKS:
                raise NoteError(f"{source}: cannot create note: {exc.strerror or exc}") from None
            _create_exclusive(path, data, source)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
    _fsync_dir(path.parent)


def _create_exclusive(path: Path, data: bytes, source: str) -> None:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, _default_mode())
    except FileExistsError:
        raise
    except OSError as exc:
        raise NoteError(f"{source}: cannot create note: {exc.strerror or exc}") from None
    try:
        _write_at(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def _temp_for(path: Path, data: bytes, mode: int, outcome: str) -> tuple[int, str]:
    """:func:`_temp_file` beside ``path``, with a folder that refuses it as one line."""
    try:
        return _temp_file(path.parent, path.name, data, mode)
    except OSError as exc:
        raise NoteError(f"cannot write {path.parent}: {exc.strerror or exc} ({outcome})") from None


# --------------------------------------------------------------------------- rewrite


@dataclass(frozen=True)
class RewriteResult:
    """What :func:`rewrite` did.

    ``path`` is the file written (a symlink's target), ``changed`` whether vaultmem's
    transform changed the note's bytes, ``before`` the bytes the (last) transform was
    applied to, ``after`` the bytes left in the note, and ``reapplied`` how many times a
    concurrent save was detected and the transform applied again to the user's bytes.
    """

    path: Path
    changed: bool
    before: bytes
    after: bytes
    reapplied: int = 0


def rewrite(path: Path, transform: Callable[[bytes], bytes], source: str) -> RewriteResult:
    """Apply ``transform`` to the note at ``path`` without losing a concurrent save.

    ``transform`` maps the note's bytes to the new bytes; it may be called again on bytes
    the user saved meanwhile, and may raise a ``VaultmemError`` to refuse (nothing is
    written). It must depend on its bytes alone and never open the note: when it runs on
    a concurrent save vaultmem holds a lease on the note, and an open from this process
    would wait out the kernel's lease-break time (45 s). When it returns its input the
    note is not written (its mtime stays). A note whose permission bits deny writing, or a
    folder that refuses the temp file, gives a one-line ``NoteError`` with no byte
    changed. A note that keeps changing gives ``ConflictError`` (exit 75) with the user's
    latest bytes in place. The protocol and what it cannot guarantee are described in this
    module's docstring.
    """
    target = _real_path(Path(path))
    base = _read_note(target, source)
    new = transform(base)
    if new == base:
        return RewriteResult(target, False, base, base)
    try:
        job = _Rewrite(target, transform, source, _writable_mode(target, source))
        for _ in range(MAX_ATTEMPTS):
            newer = job.attempt(base, new)
            if newer is None:
                _fsync_dir(target.parent)
                return job.result
            # Someone saved between our read and our write; their bytes are in place.
            job.reapplied += 1
            base, new = newer, transform(newer)
            if new == base:
                return RewriteResult(target, False, base, base, job.reapplied)
    except OSError as exc:
        raise NoteError(f"{source}: cannot write note: {exc.strerror or exc}") from None
    raise ConflictError(f"{source}: note is being edited; try again")


def _read_note(path: Path, source: str) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise NoteError(f"{source}: note not found") from None
    except OSError as exc:
        raise NoteError(f"{source}: cannot read note: {exc.strerror or exc}") from None


def _writable_mode(path: Path, source: str) -> int:
    """The note's permission bits; a one-line refusal when they deny writing."""
    # Checked explicitly: a rename ignores the file's own bits (and root ignores them all),
    # yet a user who made a note read-only meant vaultmem too.
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise _deleted(source) from None
    if not st.st_mode & stat.S_IWUSR or not os.access(path, os.W_OK):
        raise NoteError(f"{source}: note is read-only (no write permission); left unchanged")
    return stat.S_IMODE(st.st_mode)


def _deleted(source: str) -> ConflictError:
    return ConflictError(f"{source}: the note was deleted while vaultmem was updating it")


class _Rewrite:
    """One :func:`rewrite` call: its settings, its result, and how often it re-applied."""

    def __init__(
        self, target: Path, transform: Callable[[bytes], bytes], source: str, mode: int
    ) -> None:
        self.target, self.transform, self.source, self.mode = target, transform, source, mode
        self.reapplied = 0
        self.keep_tmp = False
        self.result = RewriteResult(target, False, b"", b"")

    def attempt(self, base: bytes, new: bytes) -> bytes | None:
        """Put ``new`` (made from ``base``) in place; None when done, else the user's newer
        bytes, left in place, to transform again."""
        fd, tmp = _temp_for(self.target, new, self.mode, f"{self.source} left unchanged")
        self.keep_tmp = False
        try:
            if _RENAMEAT2 is not None:
                # Leased before the swap, so nobody can open it by the note's name unseen.
                leased = _lease(fd) is True
                try:
                    _exchange(tmp, self.target)
                except OSError as exc:
                    if exc.errno == errno.ENOENT:
                        raise _deleted(self.source) from None
                    if exc.errno not in _NO_EXCHANGE:
                        raise
                else:
                    return self._settle(fd, tmp, base, new, leased)
            return self._replace(tmp, base, new)
        finally:
            os.close(fd)
            if not self.keep_tmp:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp)

    def _replace(self, tmp: str, base: bytes, new: bytes) -> bytes | None:
        """No exchange here: compare just before the rename (a save in between is lost)."""
        current = _read_note(self.target, self.source)
        if current != base:
            return current
        os.replace(tmp, self.target)
        self.result = RewriteResult(self.target, True, base, new, self.reapplied)
        return None

    def _settle(self, fd: int, tmp: str, base: bytes, new: bytes, leased: bool) -> bytes | None:
        """After the swap: keep the displaced file's changes (``tmp`` now names it)."""
        settled = False
        try:
            with _quiet(tmp, leased) as theirs:
                if theirs == base and not leased:
                    # Ours is in place and right; an appender that still held the old file
                    # may write yet: watch it for a few milliseconds.
                    theirs = _steady(tmp)
                if theirs == base:
                    os.unlink(tmp)
                    settled = True
                    self.result = RewriteResult(self.target, True, base, new, self.reapplied)
                    return None
                if not leased:
                    newer = self._swap_back(fd, tmp, theirs)
                    settled = True
                    return newer
                return self._fix_in_place(fd, theirs, tmp)
        except BaseException:
            # The user's (displaced) file back under the note's name; if even that fails,
            # keep the temp file: it may be the only copy of their last save.
            self.keep_tmp = not settled and not self._restore(fd, tmp)
            raise

    def _swap_back(self, fd: int, tmp: str, theirs: bytes) -> bytes:
        """Without a lease: their file back under the note's name, to redo from it."""
        _exchange(tmp, self.target)
        if _same_file(fd, tmp):
            return theirs
        # A save replaced ours in the moment it was exposed: it is the newest; put it back.
        _exchange(tmp, self.target)
        return _read_note(self.target, self.source)

    def _fix_in_place(self, fd: int, theirs: bytes, tmp: str) -> bytes | None:
        """Write the transform of ``theirs`` into our leased file, which holds the name."""
        self.reapplied += 1
        try:
            final = self.transform(theirs)
        except BaseException:
            _write_at(fd, theirs)  # a refusal leaves exactly the user's bytes
            os.fsync(fd)
            os.unlink(tmp)
            raise
        _write_at(fd, final)
        os.fsync(fd)
        os.unlink(tmp)  # only now: until the fsync their bytes were safe under tmp
        if not _same_file(fd, self.target):
            # An editor replaced the note while we fixed ours: start over from its bytes.
            return _read_note(self.target, self.source)
        self.result = RewriteResult(self.target, final != theirs, theirs, final, self.reapplied)
        return None

    def _restore(self, fd: int, tmp: str) -> bool:
        """After a failure mid-settle: the displaced (user's) file back under the note's
        name, our file under ``tmp`` to be removed. False when that failed."""
        if not os.path.exists(tmp) or not _same_file(fd, self.target):
            return True  # already resolved: nothing of the user's is under tmp
        try:
            _exchange(tmp, self.target)
        except OSError:
            return False
        return True


def _exchange(a: str | Path, b: str | Path) -> None:
    """Atomically swap the two names (renameat2 RENAME_EXCHANGE); OSError with its errno."""
    assert _RENAMEAT2 is not None
    if _RENAMEAT2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return
    err = ctypes.get_errno()
    raise OSError(err, os.strerror(err), os.fspath(b))


def _same_file(fd: int, path: str | Path) -> bool:
    """Whether ``path`` names the file open as ``fd`` (stat only: opening it would break
    our own lease)."""
    mine = os.fstat(fd)
    try:
        there = os.stat(path)
    except FileNotFoundError:
        return False
    return (mine.st_dev, mine.st_ino) == (there.st_dev, there.st_ino)


def _lease(fd: int) -> bool | None:
    """Take a write lease on ``fd``: True, False when another process has the file open,
    None when leases are not available for it."""
    if fcntl is None or not hasattr(fcntl, "F_SETLEASE"):
        return None
    try:
        # A lease break is announced by a signal, SIGIO by default, which would kill us;
        # SIGURG's default action is to ignore it. We poll F_GETLEASE instead.
        fcntl.fcntl(fd, _F_SETSIG, signal.SIGURG)
        fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_WRLCK)
    except OSError as exc:
        return False if exc.errno == errno.EAGAIN else None
    return True


def _lease_held(fd: int) -> bool:
    """Whether our write lease is intact (no process is waiting to open the file)."""
    return bool(fcntl.fcntl(fd, fcntl.F_GETLEASE) == fcntl.F_WRLCK)


@contextlib.contextmanager
def _quiet(name: str, use_lease: bool) -> Iterator[bytes]:
    """The bytes of the displaced file ``name`` once no other process has it open.

    With leases the lease is held while the caller decides, so nobody can open the file
    meanwhile. After ``_QUIET_WAIT`` of someone holding it open, or when leases do not
    work for it, it is re-read until two reads agree. Without a lease on our own file
    (``use_lease`` false) it is read at once: ours may be a stale version in plain view.
    """
    deadline = time.monotonic() + _QUIET_WAIT
    while use_lease:
        fd = os.open(name, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        try:
            got = _lease(fd)
            if got is None:
                break
            if got:
                data = _read_fd(fd)
                if _lease_held(fd):
                    yield data
                    return
        finally:
            os.close(fd)  # drops the lease
        if time.monotonic() > deadline:
            break
        time.sleep(_POLL)
    yield _steady(name) if use_lease else Path(name).read_bytes()


def _steady(name: str) -> bytes:
    """Re-read ``name`` until two reads a few milliseconds apart agree (bounded)."""
    data = Path(name).read_bytes()
    for _ in range(20):
        time.sleep(2 * _POLL)
        again = Path(name).read_bytes()
        if again == data:
            return data
        data = again
    return data
