"""The cache folder is vaultmem's own: the one gate every cache use passes.

The cache holds the notes' text and the indexes' files, some of which the index libraries
read back with :mod:`pickle` (Whoosh's table of contents, Chroma's segment metadata): a
cache someone else made or can write to would read another user's data, or run their
code. So a cache folder is used only when it is

- a real folder (never a symlink) owned by this user, that nobody else may write to;
- vaultmem's: it carries vaultmem's ``CACHEDIR.TAG`` (the Cache Directory Tagging
  Specification's file, so backup tools skip the cache too), which records the folder it
  was made for (device and inode). A marker copied in (a clone, an archive, ``cp -r``)
  names another folder and counts for nothing.

A folder without a valid marker is adopted (marked) only when it looks like what an
older vaultmem made: this user's, private, and a vault's ``.vaultmem/``, or empty, or
holding vaultmem's manifest; and, inside a git work tree, none of its files tracked by git
(a cache must never arrive with a pull). Anything else is refused in one line. Adopting
never reads what the folder holds: an archive, a sync tool or ``cp -r`` delivers such a
folder as readily as an older vaultmem leaves it, so everything in it but the legacy
template overrides (``templates/``, the user's, used only once the vault is trusted) is
deleted first, and ``index`` builds the indexes again. Whatever
vaultmem deletes lies inside a marked cache (:func:`remove_tree`); new folders are 0700,
and :func:`tighten` makes files 0600 where a library wrote them with the umask's mode.
"""

from __future__ import annotations

import errno
import os
import stat
from contextlib import suppress
from pathlib import Path

__all__ = [
    "MARKER",
    "CacheRefused",
    "cache_problem",
    "mark_copy",
    "own_cache",
    "remove_tree",
    "settle_cache",
    "tighten",
]

MARKER = "CACHEDIR.TAG"
DEFAULT_NAME = ".vaultmem"  # the cache's folder in a vault, unless configured elsewhere
_SIGNATURE = "Signature: 8a477f597d28d172789f06886806bc55"
_OURS = "# This file is a cache directory tag created by vaultmem: its indexes of a vault."
_FOLDER = "# vaultmem-cache-folder: "
# Where the cache keeps the stamp of the git index it last found tracking nothing in it.
_CHECKED = "git-index.checked"
# Files an older vaultmem's cache holds for sure once anything was indexed.
_SIGNS = ("manifest.sqlite", "manifest.json")
# Where an older vaultmem read the user's template overrides from (prompts.py).
_LEGACY_TEMPLATES = "templates"


class CacheRefused(OSError):
    """The cache folder may not be used (one line: why)."""


def _marker_text(info: os.stat_result) -> str:
    return f"{_SIGNATURE}\n{_OURS}\n{_FOLDER}{info.st_dev}:{info.st_ino}\n"


def _marked(path: Path, info: os.stat_result) -> bool:
    """Whether ``path`` carries vaultmem's marker, made for this very folder."""
    try:
        fd = os.open(path / MARKER, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return False
    with os.fdopen(fd, "rb") as fh:
        mine = os.fstat(fh.fileno())
        if not stat.S_ISREG(mine.st_mode) or mine.st_uid != os.getuid():
            return False
        text = fh.read(512).decode("utf-8", "replace")
    return text == _marker_text(info)


def _adoptable(path: Path) -> str | None:
    """Why an unmarked folder cannot be taken as an older vaultmem's cache (None: it can)."""
    try:
        names = os.listdir(path)
    except OSError as exc:
        return f"cannot list it: {exc.strerror}"
    # A folder named as vaultmem names the cache in a vault is the older vaultmem's (or
    # the user's template overrides, which lived there); elsewhere it must show it.
    if names and not _looks_like_ours(path):
        return (
            "it holds files vaultmem did not make (no vaultmem CACHEDIR.TAG): "
            "choose an empty or new folder"
        )
    return _tracked_problem(path) if names else None


def cache_problem(path: Path) -> str | None:
    """Why vaultmem may not use ``path`` as its cache (None: it may; a folder that does
    not exist yet is made by :func:`own_cache`). Reads only."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return exc.strerror or str(exc)
    problem, marked = _checked(path, info)
    if problem:
        return problem
    return _pulled_into(path) if marked else _adoptable(path)


def settle_cache(path: Path) -> str | None:
    """:func:`cache_problem`, and an unmarked folder vaultmem may adopt adopted at once
    (emptied, then marked): every door calls it as it loads its configuration, so no
    command reads an index file from a folder vaultmem did not mark, whoever delivered it.

    Example:
        >>> settle_cache(Path("vault/.vaultmem"))  # doctest: +SKIP
    """
    problem = cache_problem(path)
    if problem is not None:
        return problem
    try:
        if os.path.isdir(path) and not _marked(path, os.lstat(path)):
            own_cache(path)
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


def _checked(path: Path, info: os.stat_result) -> tuple[str | None, bool]:
    """What the folder's own status says: why it may not be used, and whether it carries
    vaultmem's marker for itself."""
    if stat.S_ISLNK(info.st_mode):
        return "it is a symlink (a cache must be a real folder of yours)", False
    if not stat.S_ISDIR(info.st_mode):
        return "it is not a folder", False
    if info.st_uid != os.getuid():
        return f"it belongs to uid {info.st_uid}, not to you", False
    if info.st_mode & 0o022:
        return f"other users may write to it (chmod 700 {path})", False
    return None, _marked(path, info)


def own_cache(path: Path) -> Path:
    """The cache folder, made private (0700) and marked when missing, an older vaultmem's
    marked, checked either way; :class:`CacheRefused` when it may not be used (another
    user's, a symlink, a folder vaultmem did not make). Raises OSError when it cannot be
    made (a file in the way: NotADirectoryError)."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        with suppress(FileExistsError):  # another process made it a moment ago
            path.mkdir(mode=0o700)
        info = os.lstat(path)
    if stat.S_ISREG(info.st_mode):
        raise NotADirectoryError(errno.ENOTDIR, "it is not a folder", str(path))
    problem, marked = _checked(path, info)
    if marked:
        problem = _pulled_into(path)
        if not problem:
            return path
    elif (outer := _enclosing_cache(path)) is not None:
        if not _marked(outer, os.lstat(outer)):  # its cache is the one to adopt
            own_cache(outer)
            path.mkdir(mode=0o700, parents=True, exist_ok=True)
        return path
    problem = problem or _adoptable(path)
    if problem:
        raise CacheRefused(errno.EPERM, problem, str(path))
    _adopt(path, info)
    return path


def _adopt(path: Path, info: os.stat_result) -> None:
    """Mark an unmarked folder as vaultmem's cache, emptied of everything but the legacy
    template overrides: whoever made it, none of its files is read (the index libraries
    unpickle theirs)."""
    os.chmod(path, 0o700)
    for name in os.listdir(path):
        if name == _LEGACY_TEMPLATES:
            continue
        entry = path / name
        if entry.is_dir() and not entry.is_symlink():
            import shutil

            shutil.rmtree(entry, ignore_errors=True)
        else:
            with suppress(OSError):
                os.unlink(entry)
    tighten(path)  # the overrides, made with the umask's modes
    _write_marker(path, info)


def _git_index(start: Path) -> Path | None:
    """The index file of the git work tree holding ``start`` (None: in none)."""
    for folder in (start, *start.parents):
        dot = folder / ".git"
        try:
            info = os.lstat(dot)
        except FileNotFoundError:
            continue
        except OSError:
            return None
        if stat.S_ISDIR(info.st_mode):
            return dot / "index"
        try:  # a linked work tree or a submodule: "gitdir: PATH"
            text = dot.read_text("utf-8", "replace")[:4096]
        except OSError:
            return None
        gitdir = text.removeprefix("gitdir:").strip() if text.startswith("gitdir:") else ""
        return (folder / gitdir / "index") if gitdir else None
    return None


def _pulled_into(path: Path) -> str | None:
    """Why a marked cache may not be read: git tracks files in it, so a pull (or a
    checkout) may have written its index files (None: it tracks none). Asked of git only
    when the repository's index changed since the last answer, which the cache keeps in
    :data:`_CHECKED`: a ``stat`` or two per command otherwise."""
    index = _git_index(path.parent)
    if index is None:
        return None
    try:
        info = os.stat(index)
    except OSError:
        return None
    stamp = f"{info.st_dev}:{info.st_ino}:{info.st_size}:{info.st_mtime_ns}\n"
    checked = path / _CHECKED
    try:
        fd = os.open(checked, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as fh:
            if fh.read(256) == stamp.encode():
                return None
    except OSError:
        pass
    problem = _tracked_problem(path)
    if problem is None:
        with suppress(OSError):  # a read-only cache asks git again next time
            _write_private(checked, stamp)
    return problem


def _tracked_problem(path: Path) -> str | None:
    from vaultmem.git_runner import tracked

    files = tracked(path)
    if not files:
        return None
    return (
        f"git tracks files in it ({files[0]}…): a cache never comes with a clone or a pull; "
        f"remove it from git (git rm -r --cached) and delete it"
    )


def _enclosing_cache(path: Path, depth: int = 3) -> Path | None:
    """The cache (a few levels up at most) that vaultmem may use and ``path`` is a folder
    of, marked or to be adopted: the cache's own sub-folders (``vectors/snapshots``) carry
    no marker, and the modules that keep them check what they read there themselves."""
    for parent in list(path.parents)[:depth]:
        try:
            info = os.lstat(parent)
        except OSError:
            return None
        problem, marked = _checked(parent, info)
        if problem:
            return None
        if marked or (_looks_like_ours(parent) and _adoptable(parent) is None):
            return parent
    return None


def _looks_like_ours(path: Path) -> bool:
    """Whether an unmarked folder shows an older vaultmem made it: a vault's
    ``.vaultmem/``, vaultmem's manifest, or the ``.gitignore`` of ``*`` it wrote first."""
    if path.name == DEFAULT_NAME or any((path / name).exists() for name in _SIGNS):
        return True
    try:
        return (path / ".gitignore").read_bytes() == b"*\n"
    except OSError:
        return False


def mark_copy(path: Path) -> None:
    """Mark the cache folder ``path``, a copy this user made of a cache of theirs (``cp
    -r`` of a vault they indexed), as made for its new place, so its indexes are read as
    they are instead of emptied. For tools that copy a vault they built themselves (the
    tests, the benchmarks); never for a folder that came from anywhere else.

    Example:
        >>> mark_copy(Path("copy/.vaultmem"))  # doctest: +SKIP
    """
    _write_marker(path, os.lstat(path))


def _write_marker(path: Path, info: os.stat_result) -> None:
    _write_private(path / MARKER, _marker_text(info))


def _write_private(target: Path, text: str) -> None:
    """``target`` holding ``text``, 0600, replaced atomically (never through a link)."""
    temp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(temp, target)
    except BaseException:
        with suppress(OSError):
            os.unlink(temp)
        raise


def remove_tree(cache_dir: Path, path: Path) -> None:
    """Delete the folder ``path`` (a link: just the link), which must lie inside the
    marked cache ``cache_dir``; CacheRefused otherwise, and nothing is deleted."""
    try:
        info = os.lstat(cache_dir)
    except OSError as exc:
        raise CacheRefused(exc.errno or errno.ENOENT, "no cache folder", str(cache_dir)) from None
    # The folder holding ``path`` is the cache or lies in it, links resolved.
    parent = os.path.realpath(os.path.dirname(os.path.abspath(path)))
    inside = Path(parent).is_relative_to(os.path.realpath(cache_dir))
    if not inside or stat.S_ISLNK(info.st_mode) or not _marked(cache_dir, info):
        raise CacheRefused(errno.EPERM, "not inside a marked vaultmem cache", str(path))
    if os.path.islink(path) or os.path.isfile(path):
        with suppress(FileNotFoundError):
            os.unlink(path)
        return
    import shutil

    shutil.rmtree(path, ignore_errors=True)


def tighten(cache_dir: Path) -> None:
    """Make every file under the cache 0600 and every folder 0700 where others may read
    it (the index libraries create theirs with the umask's modes); one others may write
    is left as it is, links too; errors are ignored."""
    for root, folders, files in os.walk(cache_dir):
        for name in folders:
            _chmod(os.path.join(root, name), 0o700)
        for name in files:
            _chmod(os.path.join(root, name), 0o600)


def _chmod(path: str, mode: int) -> None:
    with suppress(OSError):
        info = os.lstat(path)
        kind = stat.S_ISDIR(info.st_mode) or stat.S_ISREG(info.st_mode)  # never a link
        bits = stat.S_IMODE(info.st_mode)
        # Only what others may read: what others may write could hold their files, and
        # is left for the checks that refuse it, never made to look private.
        if kind and bits & 0o077 and not bits & 0o022:
            os.chmod(path, mode)
