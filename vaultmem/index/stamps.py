"""What `index` saw of the vault's folders, so that a search can tell, cheaply, that notes
changed since: the stale-index hint of `search`, `vsearch` and `query`.

A note created, deleted or renamed, by anything (Obsidian, git, another editor), changes
its folder's mtime. `index` records, in the manifest's meta row, the mtime of every folder
that holds a note and of each folder above one up to the vault's top, and of the
:data:`RECENT_NOTES` notes modified last; :func:`changes` stats exactly those and names the
ones that differ. No walk of the vault: one meta read and one ``stat`` per recorded folder
and recent note (a vault of 100k notes in 5k folders: about 5 ms).

A hint, never a verdict (`vaultmem status` compares every note). It misses:

- a note edited in place (saved into the same file, so its folder's entries stay as they
  were) unless it is one of the recent notes, which are the ones being worked on;
- a note put in a folder that held no note at the last index, inside another such folder
  (only folders with notes, and those above them, are recorded);
- a change in a folder vaultmem itself wrote into afterwards: a write command re-records
  the folders it wrote in (:func:`rerecorded`), as its re-index leaves them current.

A folder whose mtime moved is then listed (:func:`confirmed`: one ``scandir`` of each
such folder, none of the others) and named only when what the walk would take from it
differs from what the index knows there: a file added or removed beside the notes (an
editor's swap file, ``.vaultmem.toml`` saved by renaming, a new ``.git/``) is not a change
of notes, and a note `index` could not parse (known from its record of skipped notes)
is not new again until it changes.
"""

from __future__ import annotations

import heapq
import json
import os
import posixpath
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from vaultmem.vault import FileStat, NoteRules

RECENT_NOTES = 16
TOP = ""  # the vault's own folder, as a recorded folder's name


@dataclass(frozen=True)
class Stamps:
    """Recorded mtimes (ns): of the note folders and those above them (vault-relative,
    :data:`TOP` for the vault's own), and of the notes modified last."""

    folders: Mapping[str, int]
    notes: Mapping[str, int]

    def dump(self) -> str:
        """As the manifest's ``stamps`` meta value."""
        return json.dumps({"folders": dict(self.folders), "notes": dict(self.notes)})

    @classmethod
    def parse(cls, text: str) -> Stamps | None:
        """From the meta value; None when there is none (an index by an older vaultmem)
        or it cannot be read."""
        if not text:
            return None
        try:
            data = json.loads(text)
            return cls(dict(data["folders"]), dict(data["notes"]))
        except (ValueError, TypeError, KeyError):
            return None


def _folders(paths: Iterable[str]) -> set[str]:
    """The folders of ``paths`` and every folder above them, the vault's top included."""
    found = {TOP}
    for path in paths:
        folder = posixpath.dirname(path)
        while folder and folder not in found:
            found.add(folder)
            folder = posixpath.dirname(folder)
    return found


def _mtime(root: Path | str, path: str) -> int | None:
    try:
        return os.stat(os.path.join(root, path)).st_mtime_ns  # "": the vault's own folder
    except OSError:
        return None


def taken(root: Path, files: Sequence[FileStat]) -> Stamps:
    """The stamps of a walk that found ``files``: call it right after the walk, so that a
    note written while the notes are read shows as a change."""
    folders = {f: m for f in _folders(f.path for f in files) if (m := _mtime(root, f)) is not None}
    recent = heapq.nlargest(RECENT_NOTES, files, key=lambda f: (f.mtime_ns, f.path))
    return Stamps(folders, {f.path: f.mtime_ns for f in recent})


def rerecorded(
    stamps: Stamps, root: Path, written: Iterable[str], removed: Iterable[str]
) -> Stamps:
    """``stamps`` after vaultmem wrote ``written`` and removed ``removed`` and re-indexed
    them: the folders they lie in, with any folder the write created and the one holding
    it, and the written notes among the recent ones, as they are now."""
    folders, notes = dict(stamps.folders), dict(stamps.notes)
    written, removed = list(written), list(removed)
    for path in [*written, *removed]:
        folder = posixpath.dirname(path)
        while True:
            known = folder in folders
            mtime = _mtime(root, folder)
            if mtime is None:
                folders.pop(folder, None)
            else:
                folders[folder] = mtime
            if known or folder == TOP:
                break
            folder = posixpath.dirname(folder)  # a new folder changed the one holding it
    for path in removed:
        notes.pop(path, None)
    for path in written:
        mtime = _mtime(root, path)
        if mtime is not None:
            notes[path] = mtime
    recent = heapq.nlargest(RECENT_NOTES, notes.items(), key=lambda item: (item[1], item[0]))
    return Stamps(folders, dict(recent))


def changes(stamps: Stamps | None, root: Path) -> tuple[str, ...]:
    """The recorded folders (``"inbox/"``; the vault's top: ``"./"``) and notes whose mtime
    is no longer the one recorded, or that are gone; empty without stamps."""
    if stamps is None:
        return ()
    top = str(root)  # os.path.join of text: a tenth of pathlib's cost, a stat per entry
    folders = [f for f, mtime in stamps.folders.items() if _mtime(top, f) != mtime]
    notes = [path for path, mtime in stamps.notes.items() if _mtime(top, path) != mtime]
    return tuple([f"{f}/" if f else "./" for f in sorted(folders)] + sorted(notes))


def confirmed(
    found: Sequence[str],
    rules: NoteRules,
    recorded: Iterable[str],
    known: Callable[[str], set[str]],
) -> tuple[str, ...]:
    """Those of ``found`` (:func:`changes`) that are changes of notes.

    A folder (``"inbox/"``, ``"./"``) stays when a listing of it differs from what the
    index knows: a note file whose name ``known(folder)`` lacks (the notes the index has
    there, and those it skipped), one it has that is gone, a folder of ``recorded`` (that
    held notes) that is gone, or a new folder that holds a note. A recent note found
    changed always stays.
    """
    folders = set(recorded)
    out = []
    for item in found:
        if not item.endswith("/"):
            out.append(item)
            continue
        folder = "" if item == "./" else item[:-1]
        if _listing_differs(rules, folder, folders, known):
            out.append(item)
    return tuple(out)


def _listing_differs(
    rules: NoteRules, folder: str, recorded: set[str], known: Callable[[str], set[str]]
) -> bool:
    notes, subfolders = _listing(rules, folder)
    if notes is None:
        return True  # the folder itself is gone or unreadable
    below = {f for f in recorded if f and posixpath.dirname(f) == folder}
    if notes != known(folder) or below - subfolders:
        return True
    return any(_holds_a_note(rules, sub) for sub in subfolders - below)


def _listing(rules: NoteRules, folder: str) -> tuple[set[str] | None, set[str]]:
    """(the names of the notes directly in ``folder``, the vault paths of the folders in
    it the walk enters); (None, set()) when it cannot be listed."""
    notes: set[str] = set()
    subfolders: set[str] = set()
    try:
        entries = list(os.scandir(rules.root / folder if folder else rules.root))
    except OSError:
        return None, subfolders
    for entry in entries:
        rel = f"{folder}/{entry.name}" if folder else entry.name
        kind = rules.entry_kind(rel, entry)
        if kind == "note":
            notes.add(entry.name)
        elif kind == "folder":
            subfolders.add(rel)
    return notes, subfolders


def _holds_a_note(rules: NoteRules, folder: str) -> bool:
    """Whether the walk finds a note in ``folder`` or below (a folder new since `index`)."""
    notes, subfolders = _listing(rules, folder)
    return bool(notes) or any(_holds_a_note(rules, sub) for sub in subfolders)
