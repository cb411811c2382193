"""The one way memory commands change notes: under the vault lock, atomically, re-indexed.

Every mutation (``touch``, ``pin``, ``link``, ``promote``…) goes through :func:`edit_notes`
or :func:`locked`: the vault's writer lock is held, each note is rewritten by
:func:`vaultmem.frontmatter.files.update_note` (only vaultmem's keys change; an unchanged note
is not rewritten; a note saved meanwhile is re-read), and the touched notes are
re-indexed before the lock is released so the next search sees the new state.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import PurePosixPath
from typing import Any

from vaultmem.config import Config
from vaultmem.frontmatter.files import WriteResult, update_note
from vaultmem.indexer import refresh_paths
from vaultmem.vault import LinkResolver, vault_lock

__all__ = ["Compute", "edit_notes", "locked", "wikilink"]

# compute(path, current frontmatter) -> {owned key: new value, or None to remove it}
Compute = Callable[[str, dict[Any, Any]], Mapping[str, object | None]]


@contextmanager
def locked(config: Config, what: str) -> Iterator[None]:
    """Hold the vault's writer lock (LockBusy after ``config.lock_timeout`` seconds)."""
    with vault_lock(config.cache_dir, timeout=config.lock_timeout, what=what):
        yield


def edit_notes_locked(config: Config, paths: Sequence[str], compute: Compute) -> list[WriteResult]:
    """:func:`edit_notes` for a caller that already holds the lock (no re-index)."""
    results = []
    for path in paths:

        def one(meta: dict[Any, Any], path: str = path) -> Mapping[str, object | None]:
            return compute(path, meta)

        results.append(update_note(config.vault / path, one, path, config.keys))
    return results


def edit_notes(
    config: Config, paths: Sequence[str], compute: Compute, *, what: str = "note edit"
) -> list[WriteResult]:
    """Apply ``compute`` to each note's frontmatter, then re-index the notes that changed.

    Example:
        >>> edit_notes(config, ["a.md"], lambda path, meta: {"pinned": True})  # doctest: +SKIP
    """
    with locked(config, what):
        results = edit_notes_locked(config, paths, compute)
        changed = [p for p, r in zip(paths, results, strict=True) if r.changed]
        if changed:
            refresh_paths(config, changed)
    return results


def wikilink(path: str, resolver: LinkResolver | None = None) -> str:
    """The ``"[[Name]]"`` value that points at ``path``, as Obsidian would write it.

    The file name alone when it is unique in the vault (so the link survives a move, as
    `promote` relies on), else the vault path without ``.md``. A note about to be
    written, which ``resolver`` does not know yet, is unique when no note has its name.
    """
    stem = PurePosixPath(path).stem
    if resolver is None or resolver.link_candidates(stem) in ([], [path]):
        return f"[[{stem}]]"
    return f"[[{path.removesuffix('.md')}]]"
