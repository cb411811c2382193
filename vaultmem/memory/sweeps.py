"""Vault-wide memory sweeps: `review` and `gc` (SPEC §5), and what `promote` shares.

Each sweep brings the manifest up to date (:func:`vaultmem.indexer.index_vault`, which is
incremental), reads every note's memory state from it (no note is opened to decide), and
applies the formulas of :mod:`vaultmem.scores` at an explicit ``now``. `gc` (and
`promote`, :mod:`vaultmem.memory.promotion`) then move (or delete) files under the vault
lock and re-index what moved, so a search run right after already sees the notes at
their new paths. The helpers for that (a free path, a note re-read under the lock, a
move that marks the note or leaves it where it was) are here, shared by both.

**Statuses.** `gc` collects ``active``, ``promoted`` and ``superseded`` notes (a
superseded note is the most natural thing to let go); it never touches ``archived`` or
``forgotten`` notes (a user's explicit decision, which `restore` expects to find in
place) nor any status it does not know (a user's own meaning). `review` lists ``active``
and ``promoted`` notes; `promote` takes inbox notes whose status is ``active``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import Any

from vaultmem.config import Config
from vaultmem.errors import NoteError, VaultmemError
from vaultmem.frontmatter.edit import ReplacedLines
from vaultmem.frontmatter.files import WriteResult, update_note
from vaultmem.frontmatter.owned import owned_problem
from vaultmem.git_runner import git
from vaultmem.index import manifest as mf
from vaultmem.indexer import index_vault, refresh_paths
from vaultmem.memory.writeback import locked
from vaultmem.memory_state import note_memory
from vaultmem.note import parse_note
from vaultmem.properties import UNDO_KEYS
from vaultmem.scores import to_utc
from vaultmem.tuning import DEFAULT_TUNING, MemoryTuning
from vaultmem.vault import note_path

__all__ = [
    "ARCHIVED_FROM",
    "COLLECTABLE_STATUSES",
    "REVIEWABLE_STATUSES",
    "Failure",
    "archive_origin",
    "archived",
    "GcItem",
    "GcReport",
    "ReviewItem",
    "review_flags",
    "deletion_blockers",
    "free_path",
    "fresh_entry",
    "gc",
    "gc_candidates_from",
    "join_path",
    "move_note",
    "review_queue",
    "review_queue_from",
    "taken_in",
    "under",
]

COLLECTABLE_STATUSES = frozenset({"active", "promoted", "superseded"})
# The owned key that says where `gc` took a note from.
ARCHIVED_FROM = "archived_from"
REVIEWABLE_STATUSES = frozenset({"active", "promoted"})

# Paths per git invocation: well under any command-line limit.
_GIT_CHUNK = 200


@dataclass(frozen=True)
class Failure:
    """A note a sweep could not handle, and why (one line)."""

    path: str
    reason: str


# --------------------------------------------------------------------------- helpers


def under(path: str, folder: str) -> bool:
    """Whether vault path ``path`` lies in ``folder`` (recursively; ``""`` is the root)."""
    return not folder or path.startswith(folder.rstrip("/") + "/")


def join_path(folder: str, rel: str) -> str:
    """Vault path ``rel`` inside ``folder`` (``""`` is the root)."""
    return f"{folder.rstrip('/')}/{rel}" if folder else rel


def free_path(path: str, taken: Callable[[str], bool]) -> str:
    """``path``, or ``stem-2.md``, ``stem-3.md``… in the same folder when it is taken."""
    if not taken(path):
        return path
    pure = PurePosixPath(path)
    n = 2
    while True:
        candidate = str(pure.with_name(f"{pure.stem}-{n}{pure.suffix}"))
        if not taken(candidate):
            return candidate
        n += 1


def taken_in(config: Config, entries: Mapping[str, mf.Entry]) -> Callable[[str], bool]:
    """A "is this path in use?" test: an indexed note (any case) or any file on disk."""
    known = {p.lower() for p in entries}
    return lambda path: path.lower() in known or os.path.lexists(config.vault / path)


def fresh_entry(config: Config, path: str, entry: mf.Entry) -> mf.Entry | None:
    """The note's entry as it is on disk now (None when it is gone or unreadable).

    The manifest was read before the lock was taken; a note saved in between is
    re-parsed so a sweep never acts on a state the note no longer has.
    """
    full = config.vault / path
    try:
        st = os.stat(full)
        if (st.st_mtime_ns, st.st_size) == (entry.mtime_ns, entry.size):
            return entry
        raw = full.read_bytes()
        return mf.entry_for(parse_note(path, raw, mtime_ns=st.st_mtime_ns, keys=config.keys))
    except (OSError, NoteError):
        return None


def move_note(
    config: Config,
    old: str,
    new: str,
    updates: Mapping[str, object] | Callable[[dict[Any, Any]], Mapping[str, object | None]],
) -> WriteResult:
    """Move a note and set owned keys on it (``updates``, or a function of its owned keys
    that gives them); on any failure it is back where it was.

    The caller holds the vault lock. The frontmatter is written after the move (through
    :func:`update_note`: only owned keys change), and a failed write moves it back, so a
    note is either moved and marked or untouched.
    """
    note_path(config, old, write=True)  # a symlink out of the vault is not written
    src, dst = config.vault / old, config.vault / new
    if os.path.lexists(dst):
        raise NoteError(f"{new}: already exists")
    try:
        dst.parent.mkdir(parents=True, exist_ok=True)
        os.rename(src, dst)
    except OSError as exc:
        raise NoteError(f"{old}: cannot move to {new}: {exc.strerror or exc}") from None
    compute = updates if callable(updates) else (lambda _meta: updates)
    try:
        return update_note(dst, compute, new, config.keys)
    except VaultmemError:
        os.rename(dst, src)
        raise


# --------------------------------------------------------------------------- archive


def archived(path: str) -> dict[str, object]:
    """What `gc` writes on a note it archives from ``path``: ``status: archived``, the
    status line it replaces (kept for `restore`, as `forget` keeps it), and where it was
    (``archived_from``): the vault is the only state of where a restore puts it back."""
    return {"status": "archived", UNDO_KEYS["status"]: ReplacedLines("status"), ARCHIVED_FROM: path}


def archive_origin(config: Config, path: str, owned: Mapping[str, Any]) -> str | None:
    """Where `restore` moves the archived note at ``path`` (its owned keys ``owned``) back
    to: the folder ``archived_from`` names, under a free name there; for a note `gc`
    archived before it recorded that, the path it has under the archive folder. None: the
    note is not archived, or is where it came from. NoteError when the recorded place is
    no note path of this vault (the note may come from someone else's clone)."""
    status = owned.get("status")
    if not (isinstance(status, str) and status.strip().lower() == "archived"):
        return None
    origin = owned.get(ARCHIVED_FROM)
    if not isinstance(origin, str) or owned_problem(ARCHIVED_FROM, origin) is not None:
        folder = config.archive_folder
        origin = path[len(folder) + 1 :] if folder and under(path, folder) else None
    if not origin or origin == path:
        return None
    try:
        origin = note_path(config, origin, write=True)
    except NoteError as exc:
        raise NoteError(f"{path}: cannot restore it to where it came from: {exc}") from None
    return free_path(origin, lambda p: os.path.lexists(config.vault / p))


# --------------------------------------------------------------------------- review


@dataclass(frozen=True)
class ReviewItem:
    """A note worth a look: in the danger zone, before it fades (SPEC §5 review
    priority), or flagged for a person (``flags``: its ``needs_review`` lines, such as a
    contradiction `extract` found or a model's claim it did not act on)."""

    path: str
    title: str
    score: float
    priority: float
    flags: tuple[str, ...] = ()


def review_flags(memory: Mapping[str, object]) -> tuple[str, ...]:
    """A note's ``needs_review`` lines (owned keys as the manifest keeps them)."""
    value = memory.get("needs_review")
    items = [value] if isinstance(value, str) else value if isinstance(value, list) else []
    return tuple(str(item) for item in items if isinstance(item, str) and item.strip())


def review_queue_from(
    entries: Mapping[str, mf.Entry],
    now: datetime,
    limit: int | None = None,
    tuning: MemoryTuning = DEFAULT_TUNING,
) -> list[ReviewItem]:
    """The review queue computed from an already loaded manifest (``path → Entry``).

    Notes with status active or promoted: first those flagged for review
    (``needs_review``), then those with ``review_priority(decay_score) > 0`` (score inside
    [0.15, 0.35]) not snoozed past ``now``; highest priority first, ties broken by the
    lower score (closer to being lost), then by path. ``limit`` keeps the first N.
    """
    at = to_utc(now)
    items = []
    for path, entry in entries.items():
        memory = note_memory(path, entry)
        if memory.status not in REVIEWABLE_STATUSES:
            continue
        flags = review_flags(entry.memory)
        if memory.snoozed(at) and not flags:
            continue
        score = tuning.score(memory.state, at)
        priority = tuning.review_priority(memory.state, at)
        if priority > 0 or flags:
            items.append(ReviewItem(path, memory.title, score, priority, flags))
    items.sort(key=lambda item: (not item.flags, -item.priority, item.score, item.path))
    return items if limit is None else items[: max(limit, 0)]


def review_queue(config: Config, now: datetime, limit: int | None = None) -> list[ReviewItem]:
    """The review queue of the vault of ``config`` (indexes first; reads no note).

    Example:
        >>> [item.path for item in review_queue(config, now, limit=3)]  # doctest: +SKIP
        ['inbox/Redis memory at 80 percent.md']
    """
    index_vault(config)
    return review_queue_from(mf.load(config.cache_dir).entries, now, limit, config.tuning)


# --------------------------------------------------------------------------- gc


@dataclass(frozen=True)
class GcItem:
    """One note `gc` collects: ``action`` is "archive" (to ``target``) or "delete";
    ``why`` says why a requested delete became an archive."""

    path: str
    score: float
    action: str
    target: str | None = None
    why: str = ""


@dataclass(frozen=True)
class GcReport:
    """What one `gc` run did, or would do with ``dry_run``."""

    items: tuple[GcItem, ...]
    failed: tuple[Failure, ...]
    dry_run: bool


def _collectable(path: str, entry: mf.Entry, now: datetime, tuning: MemoryTuning) -> float | None:
    """The note's score when gc should collect it, else None (see the module docstring)."""
    memory = note_memory(path, entry)
    if memory.status not in COLLECTABLE_STATUSES or not tuning.forgets(memory.state, now):
        return None
    return tuning.score(memory.state, now)


def gc_candidates_from(
    entries: Mapping[str, mf.Entry],
    now: datetime,
    *,
    archive_folder: str,
    folders: Sequence[str] = (),
    tuning: MemoryTuning = DEFAULT_TUNING,
) -> list[tuple[str, float]]:
    """(path, score) of every note gc collects at ``now``, by path.

    ``scores.should_forget``: ``s < 0.05``, not pinned, type not durable; status active,
    promoted or superseded; not already under ``archive_folder``; under one of
    ``folders`` when any are given.
    """
    out = []
    for path in sorted(entries):
        if archive_folder and under(path, archive_folder):
            continue
        if folders and not any(under(path, f) for f in folders):
            continue
        score = _collectable(path, entries[path], now, tuning)
        if score is not None:
            out.append((path, score))
    return out


def _git_paths(vault: Path, args: Sequence[str], paths: Sequence[str]) -> set[str]:
    """The NUL-separated paths a git listing prints for ``paths`` (empty on failure)."""
    found: set[str] = set()
    for i in range(0, len(paths), _GIT_CHUNK):
        done = git(vault, *args, "--", *paths[i : i + _GIT_CHUNK])
        if done is not None and done.returncode == 0:
            found.update(
                p.decode("utf-8", "surrogateescape") for p in done.stdout.split(b"\0") if p
            )
    return found


def deletion_blockers(vault: Path, paths: Sequence[str]) -> dict[str, str]:
    """Why each of ``paths`` may not be deleted (absent from the result: it may be).

    A note may be deleted only when git can give it back: the vault is (inside) a git
    work tree, the file is in ``HEAD``, and it holds no change git has not committed,
    staged or not. Paths are vault-relative; git runs in the vault, as plumbing only: a
    porcelain ``git diff`` (and ``diff-index`` against the work tree) re-reads changed
    files through the clean filters the repository's config names, so the file on disk
    is compared with the index here, byte for byte (:func:`_unstaged`).
    """
    probe = git(vault, "rev-parse", "--is-inside-work-tree")
    if probe is None or probe.returncode != 0 or probe.stdout.strip() != b"true":
        return {p: "the vault is not a git repository" for p in paths}
    committed = _git_paths(vault, ["ls-tree", "-r", "-z", "--name-only", "HEAD"], paths)
    staged = _git_paths(vault, ["diff-index", "--cached", "--name-only", "-z", "HEAD"], paths)
    changed = staged | _unstaged(vault, paths)
    blockers = {}
    for path in paths:
        if path not in committed:
            blockers[path] = "not committed to git"
        elif path in changed:
            blockers[path] = "has changes not committed to git"
    return blockers


def _unstaged(vault: Path, paths: Sequence[str]) -> set[str]:
    """The ``paths`` whose bytes on disk are not the blob the index holds for them (a
    filtered repository's notes count as changed: kept, never deleted by mistake)."""
    import hashlib

    form = git(vault, "rev-parse", "--show-object-format")
    algorithm = "sha256" if form is not None and form.stdout.strip() == b"sha256" else "sha1"
    changed = set()
    for i in range(0, len(paths), _GIT_CHUNK):
        done = git(vault, "ls-files", "-s", "-z", "--", *paths[i : i + _GIT_CHUNK])
        if done is None or done.returncode != 0:
            return set(paths)
        for entry in done.stdout.split(b"\0"):
            head, tab, name = entry.partition(b"\t")
            if not tab:
                continue
            path = name.decode("utf-8", "surrogateescape")
            try:
                data = (vault / path).read_bytes()
            except OSError:
                changed.add(path)
                continue
            blob = hashlib.new(algorithm, b"blob %d\0" % len(data) + data).hexdigest()
            if blob.encode() != head.split()[1]:
                changed.add(path)
    return changed


def _plan_gc(
    config: Config,
    entries: Mapping[str, mf.Entry],
    candidates: Sequence[tuple[str, float]],
    *,
    delete: bool,
    force: bool,
) -> list[GcItem]:
    """What to do with each candidate: delete when asked and allowed, else archive."""
    paths = [path for path, _ in candidates]
    blockers = deletion_blockers(config.vault, paths) if delete and not force else {}
    taken = taken_in(config, entries)
    planned: set[str] = set()
    items = []
    for path, score in candidates:
        if delete and path not in blockers:
            items.append(GcItem(path, score, "delete"))
            continue
        target = free_path(
            join_path(config.archive_folder, path), lambda p: taken(p) or p.lower() in planned
        )
        planned.add(target.lower())
        why = f"not deleted: {blockers[path]}" if path in blockers else ""
        items.append(GcItem(path, score, "archive", target, why))
    return items


def gc(
    config: Config,
    now: datetime,
    *,
    dry_run: bool = False,
    delete: bool = False,
    force: bool = False,
    folders: Sequence[str] = (),
) -> GcReport:
    """Collect the notes that decayed below the forget threshold (see
    :func:`gc_candidates_from`); only under ``folders`` when any are given.

    Each moves to ``<archive>/<its path>`` with ``status: archived`` and where it came
    from (:func:`archived`: `restore` moves it back there). With ``delete`` a
    note is deleted instead when git can give it back (:func:`deletion_blockers`), or
    always with ``force``; one that fails the check is archived, and its item says why.
    ``dry_run`` changes nothing in the vault (only the index cache is refreshed).

    Example:
        >>> [(i.path, i.action) for i in gc(config, now, dry_run=True).items]  # doctest: +SKIP
        [('inbox/Redis memory at 80 percent.md', 'archive')]
    """
    index_vault(config)
    entries = mf.load(config.cache_dir).entries
    folders = [f.strip("/") for f in folders if f.strip("/")]
    candidates = gc_candidates_from(
        entries, now, archive_folder=config.archive_folder, folders=folders, tuning=config.tuning
    )
    if dry_run or not candidates:
        items = _plan_gc(config, entries, candidates, delete=delete, force=force)
        return GcReport(tuple(items), (), dry_run)
    with locked(config, "gc"):
        items = _plan_gc(config, entries, candidates, delete=delete, force=force)
        done, failed = _carry_out_gc(config, entries, items, now)
        archived = [item.target for item in done if item.target is not None]
        if done:
            refresh_paths(config, archived, removed=[item.path for item in done])
    return GcReport(tuple(done), tuple(failed), False)


def _carry_out_gc(
    config: Config, entries: Mapping[str, mf.Entry], items: Iterable[GcItem], now: datetime
) -> tuple[list[GcItem], list[Failure]]:
    """Archive or delete each planned note (re-checked on disk first); lock held."""
    done, failed = [], []
    for item in items:
        entry = fresh_entry(config, item.path, entries[item.path])
        if entry is None or _collectable(item.path, entry, now, config.tuning) is None:
            failed.append(Failure(item.path, "changed on disk since indexing; left as is"))
            continue
        try:
            if item.target is None:
                _delete(config, item.path)
            else:
                move_note(config, item.path, item.target, archived(item.path))
        except VaultmemError as exc:
            failed.append(Failure(item.path, str(exc)))
            continue
        done.append(item)
    return done, failed


def _delete(config: Config, path: str) -> None:
    try:
        os.unlink(config.vault / path)
    except OSError as exc:
        raise NoteError(f"{path}: cannot delete: {exc.strerror or exc}") from None
