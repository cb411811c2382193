"""The vault on disk: which files are notes, the writer lock, and link/name resolution."""

from __future__ import annotations

import errno
import fcntl
import os
import posixpath
import re
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath

from vaultmem.cache_folder import own_cache, tighten
from vaultmem.config import Config
from vaultmem.errors import AmbiguousNote, LockBusy, NoteError, NoteNotFound, VaultmemError

# Never read, whatever the globs say (SPEC §3).
# ``.vaultmem.d`` holds what a person configures (template overrides): never notes.
NEVER_READ = frozenset({".obsidian", ".git", ".trash", ".vaultmem", ".vaultmem.d"})


def expand_braces(pattern: str) -> list[str]:
    """Expand shell-style braces: ``{docs,memory}/**`` → ``docs/**``, ``memory/**``."""
    m = re.search(r"\{([^{}]*)\}", pattern)
    if not m:
        return [pattern]
    head, tail = pattern[: m.start()], pattern[m.end() :]
    out: list[str] = []
    for option in m.group(1).split(","):
        out.extend(expand_braces(head + option + tail))
    return out


def _glob_regex(pattern: str) -> str:
    i, out = 0, []
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[":
            end = pattern.find("]", i + 1)
            if end == -1:
                out.append(re.escape("["))
                i += 1
            else:
                body = pattern[i + 1 : end].replace("\\", "\\\\")
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append(f"[{body}]")
                i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return "".join(out)


def compile_globs(patterns: Iterable[str]) -> Callable[[str], bool]:
    """A matcher for vault-relative POSIX paths; ``**`` spans folders, braces expand."""
    regexes = [_glob_regex(p.lstrip("/")) for pat in patterns for p in expand_braces(pat)]
    if not regexes:
        return lambda _path: False
    combined = re.compile("^(?:" + "|".join(regexes) + ")$")
    return lambda path: combined.match(path) is not None


@dataclass(frozen=True)
class FileStat:
    """A candidate note file found by the walk."""

    path: str
    mtime_ns: int
    size: int


class NoteRules:
    """Which vault paths are notes: one rule for the walk and for :func:`note_path`."""

    def __init__(self, config: Config) -> None:
        self.root = config.vault
        self.include = compile_globs(config.include)
        self.exclude = compile_globs(config.exclude)
        self._patterns = config.exclude
        self._include = config.include
        self.cache = config.cache_dir.resolve()

    def _pattern(self, *paths: str) -> str:
        """The exclude glob that matches one of ``paths`` (for a message)."""
        for pattern in self._patterns:
            if any(compile_globs([pattern])(p) for p in paths):
                return pattern
        return ", ".join(self._patterns)

    def folder_refusal(self, rel: str) -> str | None:
        """Why the walk does not enter the real folder ``rel`` (None: it does)."""
        if self.exclude(rel + "/") or self.exclude(rel + "/x"):
            return f"excluded by {self._pattern(rel + '/', rel + '/x')!r}"
        name = rel.rsplit("/", 1)[-1]
        if name in NEVER_READ:
            return f"{name}/ is never read"
        if (self.root / rel).resolve() == self.cache:
            return "it holds the index cache"
        return None

    def path_refusal(self, rel: str) -> str | None:
        """Why the walk never reaches ``rel`` (None: it does): the first folder above it
        that it does not enter, a symlinked folder included."""
        parts = rel.split("/")
        for depth in range(1, len(parts)):
            folder = "/".join(parts[:depth])
            why = self.folder_refusal(folder)
            if why is None and os.path.islink(self.root / folder):
                why = f"{folder}/ is a symlinked folder"
            if why is not None:
                return why
        return None

    def file_refusal(self, rel: str) -> str | None:
        """Why the file ``rel`` (in a folder the walk enters) is not a note (None: it is)."""
        if not self.include(rel):
            return f"not matched by include {list(self._include)!r}"
        if self.exclude(rel):
            return f"excluded by {self._pattern(rel)!r}"
        return None

    def entry_kind(self, rel: str, entry: os.DirEntry[str]) -> str | None:
        """What the walk makes of the folder entry ``entry`` at ``rel``: ``"folder"`` (it
        enters it), ``"note"`` (it reads it) or None (neither)."""
        if entry.is_dir(follow_symlinks=False):
            return "folder" if self.folder_refusal(rel) is None else None
        if (
            entry.is_file()
            and self.file_refusal(rel) is None
            and not (entry.is_symlink() and self.real_refusal(rel))
        ):
            return "note"
        return None

    def real_refusal(self, rel: str) -> str | None:
        """Why the symlinked file ``rel`` is not a note by where it really points (None:
        it is, or ``rel`` is no symlink).

        A cloned vault can hold ``gitcfg.md -> .git/config``: the link passes the globs,
        its target must too. A target inside the vault is judged as a note path of its
        own; one outside as if its file sat where the link is (``notes/x.md ->
        ~/work/id_rsa`` is ``notes/id_rsa``: no note), never under a hidden folder
        (``~/.ssh/``) and never in the cache, wherever that lies.
        """
        full = self.root / rel
        if not os.path.islink(full):
            return None
        real = os.path.realpath(full)
        if _inside(real, str(self.cache)):
            return f"it is a symlink into the index cache ({real})"
        root = str(self.root.resolve())
        if _inside(real, root):
            target = Path(os.path.relpath(real, root)).as_posix()
            why = self.path_refusal(target) or self.file_refusal(target)
            return None if why is None else f"it is a symlink to {target}: {why}"
        # Outside, every hidden folder is off limits: ~/.ssh, ~/.aws and ~/.config hold
        # credentials, and a cloned vault's author chooses where its links point.
        hidden = [part for part in Path(real).parts if part.startswith(".")]
        if hidden:
            return f"it is a symlink to {real}, under {hidden[0]}/"
        placed = posixpath.join(posixpath.dirname(rel), os.path.basename(real))
        why = self.file_refusal(placed)
        return None if why is None else f"it is a symlink to {real}: {why}"


def walk_notes(config: Config) -> Iterator[FileStat]:
    """Every note file of the vault: include globs minus exclude globs, hidden folders skipped.

    A symlinked folder is not entered; a symlinked file is read when its real path is a
    note too (:meth:`NoteRules.real_refusal`: never ``.git/config`` behind ``x.md``),
    inside the vault or out (Obsidian shows it too), but :func:`note_path` lets vaultmem
    write it only when its real path is inside the vault.
    """
    root = config.vault
    rules = NoteRules(config)
    stack = [""]
    while stack:
        rel_dir = stack.pop()
        try:
            entries = list(os.scandir(root / rel_dir if rel_dir else root))
        except OSError:
            continue
        for entry in sorted(entries, key=lambda e: e.name):
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            kind = rules.entry_kind(rel, entry)
            if kind == "folder":
                stack.append(rel)
            elif kind == "note":
                st = entry.stat()
                yield FileStat(rel, st.st_mtime_ns, st.st_size)


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def vault_relative(vault: Path, name: str) -> str:
    """``name`` as a normalised vault-relative path; NoteError when it leaves the vault.

    ``..`` is fine while it stays inside (``inbox/../memory/x.md``); an absolute path is
    fine when it lies in the vault, through the vault's real path or the one given.
    """
    if not os.path.isabs(name):
        rel = posixpath.normpath(name)
        if rel == ".." or rel.startswith("../"):
            raise NoteError(f"{name} is outside the vault")
        return rel
    absolute = os.path.normpath(name)
    real = os.path.join(os.path.realpath(os.path.dirname(absolute)), os.path.basename(absolute))
    for root in dict.fromkeys((str(vault), str(vault.resolve()))):
        for candidate in (absolute, real):
            if _inside(candidate, root):
                return Path(os.path.relpath(candidate, root)).as_posix()
    raise NoteError(f"{name} is outside the vault")


def note_path(config: Config, name: str, *, write: bool) -> str:
    """The vault path of the note file ``name``, or NoteError saying why it is not one.

    The one gate for note paths typed by a user: the file must lie inside the vault (see
    :func:`vault_relative`) and be one :func:`walk_notes` would index: matched by the
    include globs, not excluded, not under a never-read, excluded or symlinked folder or
    the cache. A symlinked note must be a note by its real path too
    (:meth:`NoteRules.real_refusal`): one that points outside the vault is read, and with
    ``write`` refused.
    """
    rel = vault_relative(config.vault, name)
    rules = NoteRules(config)
    why = rules.path_refusal(rel) or rules.file_refusal(rel) or rules.real_refusal(rel)
    if why is not None:
        raise NoteError(f"{name} is not a note of this vault ({why})")
    if write:
        real = os.path.realpath(config.vault / rel)
        if not _inside(real, str(config.vault.resolve())):
            raise NoteError(
                f"{name} is a symlink to {real}, outside the vault; vaultmem does not write it"
            )
    return rel


def in_collection(path: str, config: Config, name: str) -> bool:
    """Whether ``path`` belongs to the configured collection ``name``."""
    coll = config.collection(name)
    prefix = coll.path + "/" if coll.path else ""
    if not path.startswith(prefix):
        return False
    inner = path[len(prefix) :]
    return compile_globs(coll.include)(inner) and not compile_globs(coll.exclude)(inner)


# Descriptors of the locks this process holds. A forked worker inherits them, and an
# inherited copy keeps the flock held after its parent dies (issue 9: orphaned workers
# held the index lock for minutes): workers close them with `close_inherited_locks`.
_HELD_LOCKS: set[int] = set()


@dataclass(frozen=True)
class LockHolder:
    """Who holds a vault lock, as the holder wrote it into the lock file."""

    pid: int
    what: str
    since: datetime | None

    def describe(self) -> str:
        """``pid 1234, `index`, since 12:03:44`` (local time)."""
        text = f"pid {self.pid}, `{self.what}`"
        if self.since is not None:
            text += f", since {self.since.astimezone().strftime('%H:%M:%S')}"
        return text


def close_inherited_locks() -> None:
    """In a forked child: close its copies of the parent's lock descriptors.

    The flock belongs to the parent's open file description, so the parent keeps the
    lock; the child only stops being able to keep it alive once the parent is gone.
    """
    for fd in _HELD_LOCKS:
        with suppress(OSError):
            os.close(fd)
    _HELD_LOCKS.clear()


def read_lock_holder(lock_file: Path) -> LockHolder | None:
    """The holder recorded in ``lock_file`` (``"<pid> <ISO time> <what>"``), if readable."""
    try:
        text = lock_file.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None
    pid, _, rest = text.partition(" ")
    if not pid.isdigit():
        return None
    stamp, _, what = rest.partition(" ")
    try:
        since: datetime | None = datetime.fromisoformat(stamp)
    except ValueError:
        since, what = None, rest  # written by vaultmem <= 0.x: "<pid> <what>"
    return LockHolder(int(pid), what or "?", since)


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie (another user's counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie (exited, not yet reaped) holds no descriptor
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return True
    return stat.rpartition(")")[2].split()[:1] != ["Z"]


def _pids_with_open(path: Path) -> list[int]:
    """Processes (other than this one) with ``path`` open, from /proc; [] where there is none."""
    try:
        target = os.stat(path)
        procs = os.listdir("/proc")
    except OSError:
        return []
    found = []
    for name in procs:
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            fds = os.listdir(f"/proc/{name}/fd")
        except OSError:
            continue  # gone, or another user's
        for fd in fds:
            try:
                st = os.stat(f"/proc/{name}/fd/{fd}")
            except OSError:
                continue
            if (st.st_dev, st.st_ino) == (target.st_dev, target.st_ino):
                found.append(int(name))
                break
    return sorted(found)


@dataclass(frozen=True)
class LockState:
    """Who holds a vault lock now: nobody, its recorded holder, or an orphan.

    ``holder`` is what the file records: when the lock is free, the last process that
    held it (long gone, and harmless: the flock died with it). ``orphans`` are processes
    keeping a held lock whose recorded holder has exited (forked workers that outlived it).
    """

    held: bool
    holder: LockHolder | None = None
    holder_alive: bool = False
    orphans: tuple[int, ...] = ()

    def busy_message(self, kind: str) -> str:
        """The one-line LockBusy message for a held lock (``kind``: index, embed…)."""
        holder = self.holder
        if holder is not None and self.holder_alive:
            return (
                f"another vaultmem process ({holder.describe()}) holds the vault's {kind} lock; "
                "try again later"
            )
        if holder is None or not self.orphans:
            # Unrecorded, or the recorded holder is gone and a new one has not written its pid.
            return f"another vaultmem process holds the vault's {kind} lock; try again later"
        pids = ", ".join(str(p) for p in self.orphans)
        return (
            f"the vault's {kind} lock is held by process {pids}, left behind by a vaultmem "
            f"process that has exited ({holder.describe()}); stop it (`kill {pids}`) and retry"
        )


def _held(lock_file: Path) -> LockState:
    """The state of a lock known to be held: its recorded holder, alive or not, and orphans."""
    holder = read_lock_holder(lock_file)
    if holder is None:
        return LockState(held=True)
    if pid_alive(holder.pid):
        return LockState(True, holder, holder_alive=True)
    return LockState(True, holder, orphans=tuple(_pids_with_open(lock_file)))


def _busy_message(lock_file: Path, kind: str) -> str:
    """Name the holder; when the recorded holder is dead, name the orphan keeping the lock."""
    return _held(lock_file).busy_message(kind)


def lock_state(cache_dir: Path, name: str = "lock") -> LockState:
    """Whether the lock ``cache_dir/name`` is held and by whom; creates and records nothing.

    Probed by taking the flock for an instant without waiting (a writer starting in that
    instant finds it busy, as it would with any other holder).
    """
    path = cache_dir / name
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return LockState(held=False)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno not in (errno.EAGAIN, errno.EACCES):
            raise
        return _held(path)
    finally:
        os.close(fd)  # releases the probe's flock, if it got it
    return LockState(held=False, holder=read_lock_holder(path))


def make_cache(cache_dir: Path) -> Path:
    """The cache folder, created if missing: vaultmem's own, private (0700), git-ignored.

    The one place a cache comes to exist, whichever command writes first. It holds the
    notes' text (the keyword index, snippets, fragments), the server's token and socket,
    so nobody but its user may enter it, whatever the umask or the notes' own modes; and
    it is used only when it is a real folder of this user's that vaultmem made (see
    :mod:`vaultmem.cache_folder`). Raises OSError (a file in the way:
    NotADirectoryError; a folder that may not be used: CacheRefused, its one line).
    """
    own_cache(cache_dir)
    ignore = cache_dir / ".gitignore"
    if not ignore.exists():
        # The cache is disposable: keep it out of git even in a vault never `init`ed.
        ignore.write_text("*\n", encoding="utf-8")
    return cache_dir


def _open_lock_file(cache_dir: Path, name: str) -> int:
    """Create the cache folder and open its lock file; one-line errors when unusable."""
    try:
        if cache_dir.exists() and not cache_dir.is_dir():
            raise VaultmemError(f"cannot use the cache folder {cache_dir}: it is not a folder")
        make_cache(cache_dir)
        return os.open(cache_dir / name, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise VaultmemError(f"cannot use the cache folder {cache_dir}: {reason}") from None


def _record_holder(fd: int, what: str) -> None:
    stamp = datetime.now(UTC).isoformat(timespec="seconds")
    with suppress(OSError):  # a full disk must not fail a lock we already hold
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()} {stamp} {what}\n".encode(), 0)


@contextmanager
def vault_lock(
    cache_dir: Path, *, timeout: float, what: str = "index", name: str = "lock"
) -> Iterator[None]:
    """Hold the per-vault writer lock; LockBusy after ``timeout`` seconds (0 = don't wait).

    Readers never take it. The lock is an ``flock`` on ``cache_dir/name``, so it dies with
    the last descriptor of its holder: a killed holder's lock is free at once, and no
    stale file blocks anyone. The holder writes ``"<pid> <time> <what>"`` into the file
    so a busy message can name it. ``name`` picks another lock file: the embedding sweep
    has its own, so a long sweep never blocks `index` or note edits.
    """
    kind = "index" if name == "lock" else name.removesuffix(".lock")
    fd = _open_lock_file(cache_dir, name)
    _HELD_LOCKS.add(fd)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EAGAIN, errno.EACCES):
                    raise VaultmemError(f"cannot lock {cache_dir}: {exc.strerror}") from None
                if time.monotonic() >= deadline:
                    raise LockBusy(_busy_message(cache_dir / name, kind)) from None
                time.sleep(0.05)
        _record_holder(fd, what)
        yield
        # The index libraries write with the umask's modes: the cache's files are 0600.
        tighten(cache_dir)
    finally:
        _HELD_LOCKS.discard(fd)
        os.close(fd)


@dataclass(frozen=True)
class NoteName:
    """What a note can be called by: its path, title and aliases."""

    path: str
    title: str
    aliases: tuple[str, ...] = ()


def strip_md(name: str) -> str:
    """``name`` without a trailing ``.md`` (any case)."""
    return name[:-3] if name.lower().endswith(".md") else name


class LinkResolver:
    """Resolve ``[[links]]`` and user-typed names to note paths, the way Obsidian does."""

    def __init__(self, names: Sequence[NoteName]) -> None:
        self._names = list(names)
        self._by_path = {n.path.lower(): n.path for n in names}
        self._by_stem: dict[str, list[str]] = {}
        self._by_alias: dict[str, list[str]] = {}
        self._by_title: dict[str, list[str]] = {}
        for n in names:
            self._by_stem.setdefault(PurePosixPath(n.path).stem.lower(), []).append(n.path)
            for alias in n.aliases:
                self._by_alias.setdefault(alias.strip().lower(), []).append(n.path)
            self._by_title.setdefault(n.title.strip().lower(), []).append(n.path)

    def link_candidates(self, target: str) -> list[str]:
        """Every note a link target could mean, best first."""
        key = strip_md(target.strip().lstrip("/")).lower()
        if not key:
            return []
        exact = self._by_path.get(key + ".md") or self._by_path.get(key)
        if exact:
            return [exact]
        if "/" in key:
            suffix = "/" + key + ".md"
            return sorted(p for lp, p in self._by_path.items() if lp.endswith(suffix))
        stems = self._by_stem.get(key, [])
        if stems:
            # Obsidian's shortest-path rule: the file nearest the root wins a bare name.
            return sorted(stems, key=lambda p: (p.count("/"), len(p), p))
        return sorted(set(self._by_alias.get(key, [])))

    def resolve_link(self, target: str, source: str | None = None) -> str | None:
        """The note a ``[[target]]`` written in ``source`` points to, or None (dangling)."""
        found = self.link_candidates(target)
        if source and len(found) > 1:
            folder = str(PurePosixPath(source).parent)
            same = [p for p in found if str(PurePosixPath(p).parent) == folder]
            if same:
                return same[0]
        return found[0] if found else None

    def resolve_name(self, name: str) -> str:
        """A user-typed note name (path, title, alias or file name) → its path.

        Raises NoteNotFound, or AmbiguousNote listing every candidate.
        """
        key = strip_md(name.strip().lstrip("/").removeprefix("./")).lower()
        exact = self._by_path.get(key + ".md") or self._by_path.get(key)
        if exact:
            return exact
        for table in (self._by_title, self._by_alias, self._by_stem):
            found = sorted(set(table.get(key, [])))
            if len(found) == 1:
                return found[0]
            if len(found) > 1:
                listing = ", ".join(found)
                raise AmbiguousNote(f"{name!r} matches {len(found)} notes: {listing}")
        if "/" in key:
            found = self.link_candidates(key)
            if len(found) == 1:
                return found[0]
        raise NoteNotFound(f"no note called {name!r} (try a path, a title or an alias)")
