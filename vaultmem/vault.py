"""The vault on disk: which files are notes, the writer lock, and link/name resolution."""

from __future__ import annotations

import errno
import fcntl
import os
import re
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from vaultmem.config import Config
from vaultmem.errors import AmbiguousNote, LockBusy, NoteNotFound, VaultmemError

# Never read, whatever the globs say (SPEC §3).
NEVER_READ = frozenset({".obsidian", ".git", ".trash", ".vaultmem"})


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


def walk_notes(config: Config) -> Iterator[FileStat]:
    """Every note file of the vault: include globs minus exclude globs, hidden folders skipped."""
    root = config.vault
    include = compile_globs(config.include)
    exclude = compile_globs(config.exclude)
    cache = config.cache_dir.resolve()
    stack = [""]
    while stack:
        rel_dir = stack.pop()
        try:
            entries = list(os.scandir(root / rel_dir if rel_dir else root))
        except OSError:
            continue
        for entry in sorted(entries, key=lambda e: e.name):
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            if entry.is_dir(follow_symlinks=False):
                if entry.name in NEVER_READ or exclude(rel + "/") or exclude(rel + "/x"):
                    continue
                if Path(entry.path).resolve() == cache:
                    continue
                stack.append(rel)
            elif entry.is_file() and include(rel) and not exclude(rel):
                st = entry.stat()
                yield FileStat(rel, st.st_mtime_ns, st.st_size)


def in_collection(path: str, config: Config, name: str) -> bool:
    """Whether ``path`` belongs to the configured collection ``name``."""
    coll = config.collection(name)
    prefix = coll.path + "/" if coll.path else ""
    if not path.startswith(prefix):
        return False
    inner = path[len(prefix) :]
    return compile_globs(coll.include)(inner) and not compile_globs(coll.exclude)(inner)


@contextmanager
def vault_lock(
    cache_dir: Path, *, timeout: float, what: str = "index", name: str = "lock"
) -> Iterator[None]:
    """Hold the per-vault writer lock; LockBusy after ``timeout`` seconds (0 = don't wait).

    Readers never take it. The lock is an ``flock`` so a killed holder releases it.
    ``name`` picks another lock file: the embedding sweep has its own, so a long sweep
    never blocks `index` or note edits.
    """
    cache_dir.mkdir(parents=True, exist_ok=True)
    ignore = cache_dir / ".gitignore"
    if not ignore.exists():
        # The cache is disposable: keep it out of git even in a vault never `init`ed.
        ignore.write_text("*\n", encoding="utf-8")
    fd = os.open(cache_dir / name, os.O_RDWR | os.O_CREAT, 0o644)
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
                    raise LockBusy(
                        f"another vaultmem process holds the vault's {what} lock; try again later"
                    ) from None
                time.sleep(0.05)
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()} {what}\n".encode())
        yield
    finally:
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
