"""Merge one note three ways: vaultmem's keys by meaning, everything else as git would.

:func:`merge_note` is what `vaultmem merge-driver` runs for git. The owned keys are
merged by :func:`vaultmem.gitmerge.rules.merge_owned` and written into ours with the
frontmatter editor (:func:`vaultmem.frontmatter.edit.apply`), so they keep ours' place, order,
comments and vaultmem's own style, and a later vaultmem write round-trips. Everything
else (the user's own keys, their comments, the body) goes through ``git merge-file`` with
the owned keys' lines taken out of all three versions, so a counter that both machines
bumped is never a conflict, and a real conflict in the text is left with git's markers.
The owned lines are then put back where ours had them: after the line that preceded them
in ours, found in the merged text by a line diff (past the lines that continue that key,
and before a conflict region rather than inside it).

Under a key prefix (``[keys] prefix`` of the vault's ``.vaultmem.toml``) the owned keys
are found by their names in the notes (``vm_use_count``) and merged by the same rules:
``keys`` (a :class:`vaultmem.properties.KeyScheme`) maps the names both ways.

A note that cannot be merged by meaning (a side that does not parse: a conflict left in
the base of a criss-cross merge, hostile YAML, a key written twice) is merged as plain
text, whole, and the result says why.
"""

from __future__ import annotations

import difflib
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vaultmem.conflict_markers import conflict_regions
from vaultmem.errors import NoteError, VaultmemError
from vaultmem.frontmatter.edit import apply
from vaultmem.frontmatter.layout import OwnedLines, frontmatter_lines, owned_lines
from vaultmem.frontmatter.render import same_value
from vaultmem.frontmatter.scan import Parts, parse_meta, split
from vaultmem.gitmerge.rules import MISSING, KeyConflict, OwnedMerge, merge_owned
from vaultmem.properties import BARE, OWNED_KEYS, KeyScheme

__all__ = ["CONFLICT_STYLES", "Labels", "MergeResult", "TextMergeError", "merge_note", "text_merge"]

# git's merge.conflictStyle values; diff3 and zdiff3 also show the base's lines.
CONFLICT_STYLES = ("merge", "diff3", "zdiff3")


class TextMergeError(VaultmemError):
    """``git merge-file`` could not merge the texts (a binary file, git missing)."""


@dataclass(frozen=True)
class Labels:
    """What the conflict markers say after ``<<<<<<<``, ``|||||||`` and ``>>>>>>>``."""

    ours: str = "ours"
    base: str = "base"
    theirs: str = "theirs"


@dataclass(frozen=True)
class MergeResult:
    """A merged note: its bytes, and one line per conflict left in them for a person.

    ``fallback`` says why the note was merged as plain text ("" when by meaning).
    """

    text: bytes
    conflicts: tuple[str, ...]
    fallback: str = ""

    @property
    def clean(self) -> bool:
        """Whether no conflict region was left."""
        return not self.conflicts


def merge_note(
    base: bytes,
    ours: bytes,
    theirs: bytes,
    path: str,
    *,
    style: str = "merge",
    labels: Labels = Labels(),  # noqa: B008 - frozen
    keys: KeyScheme = BARE,
) -> MergeResult:
    """Merge three versions of the note at ``path`` (base, ours, theirs); ``keys`` names
    vaultmem's keys in the note (the vault's ``Config.keys``).

    Whatever keeps the note from being merged by meaning, it is merged as plain text
    (``fallback`` says why): git would otherwise take a driver's failure for a conflict
    and keep ours alone. Raises :class:`TextMergeError` only when even git's text merge
    fails (binary data).

    Example:
        >>> merge_note(b"---\\nuse_count: 1\\n---\\n", b"---\\nuse_count: 3\\n---\\n",
        ...            b"---\\nuse_count: 2\\n---\\n", "a.md").text
        b'---\\nuse_count: 4\\n---\\n'
    """
    try:
        return _by_meaning(base, ours, theirs, path, style, labels, keys)
    except TextMergeError:
        raise
    except Exception as exc:  # noqa: BLE001 - whatever fails, git's text merge still runs
        # A driver that exits non-zero without markers would leave ours as the result.
        text, regions = text_merge(ours, base, theirs, style=style, labels=labels)
        conflicts = (f"{path}: {regions} conflict region(s) left by git's text merge",)
        return MergeResult(text, conflicts if regions else (), fallback=str(exc))


def text_merge(
    ours: bytes,
    base: bytes,
    theirs: bytes,
    *,
    style: str = "merge",
    labels: Labels = Labels(),  # noqa: B008 - frozen
) -> tuple[bytes, int]:
    """``git merge-file`` of three texts: the merged bytes and how many conflict regions
    it left (with markers, in ``style``)."""
    with tempfile.TemporaryDirectory(prefix="vaultmem-merge-") as tmp:
        files = []
        for name, data in (("ours", ours), ("base", base), ("theirs", theirs)):
            file = Path(tmp, name)
            file.write_bytes(data)
            files.append(str(file))
        command = ["git", "merge-file", "-p", "-L", labels.ours, "-L", labels.base]
        command += ["-L", labels.theirs]
        if style in ("diff3", "zdiff3"):
            command.append(f"--{style}")
        try:
            done = subprocess.run([*command, *files], capture_output=True, check=False)
        except OSError as exc:
            raise TextMergeError(f"cannot run git merge-file: {exc.strerror}") from None
    if not 0 <= done.returncode <= 127:
        why = done.stderr.decode("utf-8", "replace").strip() or f"exit {done.returncode}"
        raise TextMergeError(f"git merge-file failed: {why}")
    return done.stdout, done.returncode


# --------------------------------------------------------------------------- versions


@dataclass(frozen=True)
class _Version:
    """One version of the note, split into what vaultmem owns and the rest. ``meta`` and
    ``owned`` speak vaultmem's key names (``use_count``), whatever the note calls them."""

    meta: Mapping[str, Any]
    parts: Parts
    owned: OwnedLines

    @classmethod
    def read(cls, raw: bytes, source: str, keys: KeyScheme) -> _Version:
        meta, parts = parse_meta(raw, source)
        found = owned_lines(parts, source, keys.keys_of)
        spans = tuple((keys.keys_of[name], first, last) for name, first, last in found.spans)
        return cls(_by_key(meta, keys), parts, OwnedLines(found.lines, spans))

    def _is_owned(self) -> list[bool]:
        flags = [False] * len(self.owned.lines)
        for _key, first, last in self.owned.spans:
            flags[first : last + 1] = [True] * (last + 1 - first)
        return flags

    @property
    def kept(self) -> list[str]:
        """The frontmatter lines that are not an owned key's."""
        lines = zip(self.owned.lines, self._is_owned(), strict=True)
        return [line for line, owned in lines if not owned]

    def stripped(self) -> bytes:
        """The note without its owned keys' lines (without the block, when only those
        were in it)."""
        if self.parts.frontmatter is None:
            return self.parts.to_bytes()
        kept = "".join(self.kept)
        if not kept and self.owned.spans:
            return self.parts.with_frontmatter(None)
        return self.parts.with_frontmatter(kept)

    def lines_of(self, keys: Sequence[str]) -> str:
        """The lines of ``keys`` as written, in the note's order."""
        lines = self.owned.lines
        return "".join(
            "".join(lines[first : last + 1]) for key, first, last in self.owned.spans if key in keys
        )

    def blocks(self) -> list[tuple[int, str, str]]:
        """(anchor, key, lines) of each owned key: the index in :attr:`kept` of the line
        written before it (-1: none), the key, and its lines."""
        owned = self._is_owned()
        out = []
        for key, first, last in self.owned.spans:
            anchor = sum(1 for flag in owned[:first] if not flag) - 1
            out.append((anchor, key, "".join(self.owned.lines[first : last + 1])))
        return out


# --------------------------------------------------------------------------- merging


def _by_key(meta: Mapping[Any, Any], keys: KeyScheme) -> dict[str, Any]:
    """The owned keys' values of a frontmatter under vaultmem's names: every value the
    owned lines hold (with bare names, a user's ``status: reading`` too: those lines are
    merged here, as they always were)."""
    return {key: meta[name] for key, name in keys.names.items() if name in meta}


def _by_meaning(
    base_raw: bytes,
    ours_raw: bytes,
    theirs_raw: bytes,
    path: str,
    style: str,
    labels: Labels,
    keys: KeyScheme,
) -> MergeResult:
    base = _Version.read(base_raw, f"{path} (base)", keys)
    ours = _Version.read(ours_raw, f"{path} (ours)", keys)
    theirs = _Version.read(theirs_raw, f"{path} (theirs)", keys)
    owned = merge_owned(base.meta, ours.meta, theirs.meta)
    updates = {keys.names[key]: value for key, value in _updates(ours.meta, owned).items()}
    edited = apply(ours_raw, updates, path, names=keys.keys_of)
    written = _Version.read(edited, path, keys)
    merged, regions = text_merge(
        written.stripped(), base.stripped(), theirs.stripped(), style=style, labels=labels
    )
    blocks = _with_conflicts(written, base, theirs, owned.conflicts, style, labels)
    result = _put_back(merged, written, blocks, path)
    conflicts = [
        f"{path}: {', '.join(c.keys)}: {c.why}; left a conflict region" for c in owned.conflicts
    ]
    if regions:
        conflicts.append(
            f"{path}: {regions} conflict region(s) in what vaultmem does not own (your keys "
            "or the body), left with git's markers"
        )
    _check(result, owned, path, keys)
    return MergeResult(result, tuple(conflicts))


def _updates(ours: Mapping[Any, Any], owned: OwnedMerge) -> dict[str, object | None]:
    """The edits that turn ours' owned keys into the merged ones."""
    updates: dict[str, object | None] = {}
    for key in OWNED_KEYS:
        want, have = owned.values.get(key, MISSING), ours.get(key, MISSING)
        if want is MISSING:
            if have is not MISSING:
                updates[key] = None
        elif have is MISSING or not same_value(want, have):
            updates[key] = want
    return updates


def _with_conflicts(
    written: _Version,
    base: _Version,
    theirs: _Version,
    conflicts: Sequence[KeyConflict],
    style: str,
    labels: Labels,
) -> list[tuple[int, str]]:
    """Ours' owned blocks as (anchor, text), the keys of each conflict replaced by one
    conflict region (ours' lines, then theirs') where ours had the first of them."""
    newline = written.parts.newline
    out: list[tuple[int, str]] = []
    placed: set[int] = set()
    regions: dict[int, str] = {}
    for i, conflict in enumerate(conflicts):
        region = [f"<<<<<<< {labels.ours}{newline}", written.lines_of(conflict.keys)]
        if style in ("diff3", "zdiff3"):
            region += [f"||||||| {labels.base}{newline}", base.lines_of(conflict.keys)]
        region += [f"======={newline}", theirs.lines_of(conflict.keys)]
        region.append(f">>>>>>> {labels.theirs}{newline}")
        regions[i] = "".join(region)
    for anchor, key, text in written.blocks():
        n = next((j for j, c in enumerate(conflicts) if key in c.keys), None)
        if n is None:
            out.append((anchor, text))
        elif n not in placed:
            placed.add(n)
            out.append((anchor, regions[n]))
    last = len(written.kept) - 1
    out += [(last, regions[n]) for n in regions if n not in placed]
    return out


def _continues(line: str) -> bool:
    """Whether a frontmatter line continues the key above it (an indented line, or an
    item of a list written at the key's own indentation)."""
    return line[:1] in (" ", "\t") or (line.startswith("-") and not line.startswith("---"))


def _put_back(merged: bytes, written: _Version, blocks: list[tuple[int, str]], path: str) -> bytes:
    """The merged text with ours' owned lines put back (see the module docstring)."""
    if not blocks:
        return merged
    parts = split(merged, path)
    if parts.frontmatter is None:
        newline = written.parts.newline
        head = "---" + newline + "".join(text for _, text in blocks) + "---" + newline
        return parts.bom + head.encode("utf-8") + parts.body
    lines = frontmatter_lines(parts.frontmatter)
    # Where each line of ours' kept lines went: after it when it is still there, after
    # what replaced it, or where it was when it was deleted.
    after: dict[int, int] = {}
    matcher = difflib.SequenceMatcher(None, written.kept, lines, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        for i in range(i1, i2):
            after[i] = j1 + (i - i1) + 1 if tag == "equal" else (j2 if tag == "replace" else j1)
    regions = conflict_regions(parts.frontmatter)

    def position(anchor: int) -> int:
        at = after.get(anchor, 0)
        while anchor >= 0 and at < len(lines) and _continues(lines[at]):
            at += 1
        for first, last in regions:
            if first < at <= last:
                at = first
        return at

    inserted: dict[int, list[str]] = {}
    for anchor, text in blocks:
        inserted.setdefault(position(anchor), []).append(text)
    out: list[str] = []
    for i in range(len(lines) + 1):
        out += inserted.get(i, [])
        if i < len(lines):
            out.append(lines[i])
    return parts.with_frontmatter("".join(out))


def _check(result: bytes, owned: OwnedMerge, path: str, keys: KeyScheme) -> None:
    """Refuse a merge whose frontmatter does not read back as merged (then the note is
    merged as plain text): parsed where no conflict region is left in it, every owned
    key as the rules said, and editable by vaultmem (no key twice)."""
    parts = split(result, path)
    if parts.frontmatter is None or conflict_regions(parts.frontmatter):
        return
    head = Parts(parts.bom, parts.newline, parts.frontmatter, parts.closing, b"", 1, 1)
    written, _ = parse_meta(head.to_bytes(), path)
    owned_lines(head, path, keys.keys_of)
    meta = _by_key(written, keys)
    wrong = [
        key
        for key in OWNED_KEYS
        if (key in meta) != (key in owned.values)
        or (key in meta and not same_value(meta[key], owned.values[key]))
    ]
    if wrong and not owned.conflicts:
        raise NoteError(f"{path}: the merged keys would not read back ({', '.join(wrong)})")
