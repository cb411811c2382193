"""Merge one note three ways: git's merge of the user's part, vaultmem's rules for its keys.

:func:`merge_note` is what `vaultmem merge-driver` runs for git. The note's user part
(every key that is not vaultmem's, every comment, the body; :mod:`.userpart`) is merged
by ``git merge-file`` itself, with vaultmem's lines held still as placeholders: where
git merges it cleanly the driver does too, with the same bytes, and where git leaves
conflict regions the driver leaves the same ones, with git's markers, and exits
non-zero. vaultmem's own keys are merged by :func:`vaultmem.gitmerge.rules.merge_owned`,
written into ours with the frontmatter editor (:func:`vaultmem.frontmatter.edit.apply`,
so they keep ours' order, comments and style, and a later vaultmem write round-trips),
and put back where git's merge kept their placeholders.

A bare owned name that holds the user's value in any of the three versions (``status:
reading``, ``created: 2019``: :func:`vaultmem.frontmatter.owned.users_value`) is the
user's key in all three: git merges it, and two different edits of it are a conflict,
as they are in git.

Under a key prefix (``[keys] prefix`` of the vault's ``.vaultmem.toml``) the owned keys
are found by their names in the notes (``vm_use_count``) and merged by the same rules:
``keys`` (a :class:`vaultmem.properties.KeyScheme`) maps the names both ways.

A note whose frontmatter is larger than :data:`MAX_PARSED` bytes in any version, or that
cannot be merged by meaning (a frontmatter that does not parse, hostile YAML, a key
written twice), is merged as git merges text, whole, and the result says why.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vaultmem.conflict_markers import conflict_regions
from vaultmem.errors import NoteError, VaultmemError
from vaultmem.frontmatter.edit import apply
from vaultmem.frontmatter.owned import users_value
from vaultmem.frontmatter.render import same_value
from vaultmem.frontmatter.scan import Parts, frontmatter_size, split
from vaultmem.git_runner import git
from vaultmem.gitmerge.rules import MISSING, KeyConflict, OwnedMerge, merge_owned
from vaultmem.gitmerge.userpart import (
    Block,
    Version,
    placeholder,
    put_back,
    sent_lines,
    user_part,
)
from vaultmem.properties import BARE, OWNED_KEYS, KeyScheme

__all__ = [
    "CONFLICT_STYLES",
    "MAX_PARSED",
    "Labels",
    "MergeResult",
    "TextMergeError",
    "merge_note",
    "text_merge",
]

# git's merge.conflictStyle values; diff3 and zdiff3 also show the base's lines.
CONFLICT_STYLES = ("merge", "diff3", "zdiff3")

# The most frontmatter (bytes, in any one version) the driver parses. Above it the note
# merges as git merges text: reading YAML costs far more per byte than git's merge (a
# 10 MB frontmatter took 166 s and 1.16 GB), and up to this size the driver takes at most
# about twice git's time (BENCHMARKS.md). A typical note's frontmatter is a few hundred
# bytes (example-vault's largest: 325).
MAX_PARSED = 4 * 1024


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
    why = _too_big((base, ours, theirs))
    parts: list[Parts] = []
    if not why:
        try:
            parts = [split(text, path) for text in (base, ours, theirs)]
        except NoteError as exc:
            why = str(exc)
    if not why:
        try:
            return _by_meaning((base, ours, theirs), parts, path, style, labels, keys)
        except TextMergeError:
            raise
        except Exception as exc:  # noqa: BLE001 - whatever fails, git's text merge still runs
            why = str(exc)
    # A driver that exits non-zero without markers would leave ours as the result.
    text, regions = text_merge(ours, base, theirs, style=style, labels=labels)
    conflicts = (f"{path}: {regions} conflict region(s) left by git's text merge",)
    return MergeResult(text, conflicts if regions else (), fallback=why)


def _too_big(texts: Sequence[bytes]) -> str:
    """Why the note is not parsed: a frontmatter over :data:`MAX_PARSED` ("" when none
    is)."""
    for text in texts:
        size = frontmatter_size(text)
        if size > MAX_PARSED:
            return (
                f"its frontmatter is {size / 1024:.0f} KiB, over the {MAX_PARSED // 1024} KiB "
                "the driver parses; vaultmem's keys merged as text too"
            )
    return ""


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
        command = ["merge-file", "-p", "-L", labels.ours, "-L", labels.base]
        command += ["-L", labels.theirs]
        if style in ("diff3", "zdiff3"):
            command.append(f"--{style}")
        # Through the one git runner: no program the repository's config names runs.
        done = git(Path(tmp), *command, *files)
        if done is None:
            raise TextMergeError("cannot run git merge-file (is git installed?)")
    if not 0 <= done.returncode <= 127:
        why = done.stderr.decode("utf-8", "replace").strip() or f"exit {done.returncode}"
        raise TextMergeError(f"git merge-file failed: {why}")
    return done.stdout, done.returncode


# --------------------------------------------------------------------------- merging


def _held(versions: Sequence[Version], keys: KeyScheme) -> frozenset[str]:
    """The owned keys whose bare name holds the user's value in some version: the user's
    keys in all three."""
    held = set()
    for key in OWNED_KEYS:
        name = keys.names[key]
        if keys.bare(key) and any(
            name in v.meta and users_value(key, v.meta[name]) for v in versions
        ):
            held.add(key)
    return frozenset(held)


def _owned(meta: Mapping[Any, Any], keys: KeyScheme, held: frozenset[str]) -> dict[str, Any]:
    """The owned keys' values of a frontmatter under vaultmem's names, held keys left out."""
    return {key: meta[name] for key, name in keys.names.items() if name in meta and key not in held}


def _by_meaning(
    raws: tuple[bytes, bytes, bytes],
    parts: Sequence[Parts],
    path: str,
    style: str,
    labels: Labels,
    keys: KeyScheme,
) -> MergeResult:
    sides = ("base", "ours", "theirs")
    read = [
        Version.read(raw, f"{path} ({side})", keys, part)
        for raw, part, side in zip(raws, parts, sides, strict=True)
    ]
    held = _held(read, keys)
    base, ours, theirs = (v.without(held) for v in read)
    owned = merge_owned(*(_owned(v.meta, keys, held) for v in (base, ours, theirs)))
    updates = {
        keys.names[key]: value
        for key, value in _updates(_owned(ours.meta, keys, held), owned).items()
    }
    # The editor rewrites ours' owned lines alone: the same lines, at a fraction of the
    # cost of the whole note (anchors: where each key stands among ours' user lines).
    edited = ours.owned_note()
    if updates:
        edited = apply(edited, updates, path, names=keys.keys_of)
    written = Version.read(edited, path, keys)
    anchors = {block.key: block.anchor for block in ours.blocks()}
    end = len(ours.kept)
    blocks = [Block(anchors.get(b.key, end), b.key, b.text) for b in written.blocks()]
    token = placeholder(raws)
    sent = [sent_lines(base, v, token) for v in (base, ours, theirs)]
    merged, regions = text_merge(
        user_part(ours, sent[1], base),
        user_part(base, sent[0], base),
        user_part(theirs, sent[2], base),
        style=style,
        labels=labels,
    )
    blocks = _with_conflicts(blocks, end, (written, base, theirs), owned.conflicts, style, labels)
    result = put_back(merged, token, sent[1], blocks)
    if not _reads_back(result, owned, keys, held):
        # Every key at the end of the block: a place that reads back when another does not.
        result = put_back(merged, token, sent[1], [Block(end, "", b.text) for b in blocks])
        if not _reads_back(result, owned, keys, held):
            without = put_back(merged, token, sent[1], [])
            if _reads_back(without, OwnedMerge({}), keys, held):
                raise NoteError(f"{path}: the merged keys would not read back")
    conflicts = [
        f"{path}: {', '.join(c.keys)}: {c.why}; left a conflict region" for c in owned.conflicts
    ]
    if regions:
        conflicts.append(
            f"{path}: {regions} conflict region(s) in what is yours (your keys or the body), "
            "left with git's markers, as git would"
        )
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
    blocks: Sequence[Block],
    end: int,
    versions: tuple[Version, Version, Version],
    conflicts: Sequence[KeyConflict],
    style: str,
    labels: Labels,
) -> list[Block]:
    """Ours' merged ``blocks``, the keys of each conflict replaced by one conflict region
    (``versions``: written (ours merged), base and theirs; ours' lines, then theirs') where
    ours had the first of them, else at the end (anchor ``end``)."""
    written, base, theirs = versions
    newline = written.parts.newline
    out: list[Block] = []
    placed: set[int] = set()
    regions: dict[int, str] = {}
    for i, conflict in enumerate(conflicts):
        region = [f"<<<<<<< {labels.ours}{newline}", written.lines_of(conflict.keys)]
        if style in ("diff3", "zdiff3"):
            region += [f"||||||| {labels.base}{newline}", base.lines_of(conflict.keys)]
        region += [f"======={newline}", theirs.lines_of(conflict.keys)]
        region.append(f">>>>>>> {labels.theirs}{newline}")
        regions[i] = "".join(region)
    for block in blocks:
        n = next((j for j, c in enumerate(conflicts) if block.key in c.keys), None)
        if n is None:
            out.append(block)
        elif n not in placed:
            placed.add(n)
            out.append(Block(block.anchor, block.key, regions[n]))
    out += [Block(end, conflicts[n].keys[0], regions[n]) for n in regions if n not in placed]
    return out


def _reads_back(result: bytes, owned: OwnedMerge, keys: KeyScheme, held: frozenset[str]) -> bool:
    """Whether the merged owned keys read back from ``result`` as the rules merged them,
    each once (not checked where a conflict region is left in the frontmatter)."""
    parts = split(result)
    if parts.frontmatter is None or conflict_regions(parts.frontmatter):
        return True
    try:
        version = Version.read(result, "merged", keys, parts)
    except NoteError:
        return False
    meta = _owned(version.meta, keys, held)
    counts: dict[str, int] = {}
    for key, _first, _last in version.owned.spans:
        counts[key] = counts.get(key, 0) + 1
    return all(
        (key in meta) == (key in owned.values)
        and (key not in meta or (same_value(meta[key], owned.values[key]) and counts[key] == 1))
        for key in OWNED_KEYS
        if key not in held
    )
