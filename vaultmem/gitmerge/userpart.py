"""The user's part of a note: what the merge driver hands to git, and how vaultmem's lines
come back into git's result.

git merges each side's note *as if vaultmem had written nothing since the base*: in
every version, the lines of each owned key the base has are replaced by placeholders
for the base's lines of that key (one per line, naming the key, the same text in all
three versions); keys a side added are left out, and keys a side removed keep their
placeholders where the base had them. Everything else (the user's keys and comments,
the BOM, the fences, the line endings, the body) is there byte for byte. So git's merge
of the user's part is git's own: the same bytes when it is clean, the same conflict
regions and markers when it is not, and vaultmem's lines keep the user's edits apart
exactly as far as they are in the base. A value vaultmem changed in place, a key it
appended or removed, is no change to git at all.

(Where a side both removed vaultmem's keys and changed the user's lines right around
them, where the removed lines stood among the new ones is a guess: before them, when
the base had them before its changed lines.)

After the merge (:func:`put_back`) the placeholders are taken out and the merged owned
keys go where git's merge put their placeholders; a key the base did not have goes
after the key before it in ours, else after the line it followed in ours. Keys keep
ours' order, and never land inside a conflict region or a user's multi-line value.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from vaultmem.conflict_markers import conflict_regions
from vaultmem.frontmatter.layout import OwnedLines, frontmatter_lines, owned_lines
from vaultmem.frontmatter.scan import Parts, parse_meta, split
from vaultmem.properties import KeyScheme

__all__ = ["Block", "Version", "placeholder", "put_back", "sent_lines"]

_TOKEN = "@@vaultmem"


def placeholder(texts: Sequence[bytes]) -> str:
    """The placeholders' prefix: one that none of ``texts`` contains."""
    token, n = _TOKEN, 1
    while any(token.encode() in text for text in texts):
        n += 1
        token = f"{_TOKEN}{n}"
    return token


def _ending(line: str) -> str:
    return line[len(line.rstrip("\r\n")) :] or "\n"


@dataclass(frozen=True)
class Block:
    """Lines to put back into git's result: an owned key's (or a conflict region for
    ``key``), ``anchor`` how many of ours' other frontmatter lines come before them."""

    anchor: int
    key: str
    text: str


@dataclass(frozen=True)
class Version:
    """One version of a note: its parts, its owned keys' lines under vaultmem's names,
    and the values of the owned names (``meta``, by their names in the note).

    Only the frontmatter is read (a conflict left in the body of a criss-cross merge's
    base is text like any other), and of its values only the owned names' are loaded:
    the user's are git's to merge, never interpreted (and a large frontmatter costs
    one YAML scan, not a load).
    """

    raw: bytes
    parts: Parts
    meta: Mapping[Any, Any]
    owned: OwnedLines

    @classmethod
    def read(cls, raw: bytes, source: str, keys: KeyScheme, parts: Parts | None = None) -> Version:
        """Split ``raw`` (unless ``parts`` are its parts already), find its owned keys'
        lines and load their values. ``NoteError`` when the frontmatter does not parse,
        or has a key twice."""
        parts = split(raw, source) if parts is None else parts
        found = owned_lines(parts, source, keys.keys_of)
        spans = tuple((keys.keys_of[name], first, last) for name, first, last in found.spans)
        lines = found.lines
        text = "".join("".join(lines[first : last + 1]) for _key, first, last in found.spans)
        if "*" in (parts.frontmatter or "") or "<<" in (parts.frontmatter or ""):
            text = parts.frontmatter or ""  # an alias may name an anchor anywhere: load all
        head = Parts(parts.bom, parts.newline, text, parts.closing or "---\n", b"", 1, 1)
        meta, _ = parse_meta(head.to_bytes(), source)
        named = {name: meta[name] for name in keys.keys_of if name in meta}
        return cls(raw, parts, named, OwnedLines(lines, spans))

    def owned_note(self) -> bytes:
        """A note of this version's owned lines alone (what the editor rewrites)."""
        text = "".join(line for line, key, _ in self.labelled if key is not None)
        newline = self.parts.newline
        return f"---{newline}{text}---{newline}".encode()

    def without(self, held: frozenset[str]) -> Version:
        """This version with the ``held`` keys' lines counted as the user's."""
        spans = tuple(span for span in self.owned.spans if span[0] not in held)
        return Version(self.raw, self.parts, self.meta, OwnedLines(self.owned.lines, spans))

    @cached_property
    def labelled(self) -> list[tuple[str, str | None, int]]:
        """Each frontmatter line with the owned key it belongs to (None: the user's) and
        its index among that key's lines."""
        out: list[tuple[str, str | None, int]] = [(line, None, 0) for line in self.owned.lines]
        for key, first, last in self.owned.spans:
            for i in range(first, last + 1):
                out[i] = (self.owned.lines[i], key, i - first)
        return out

    @property
    def kept(self) -> list[str]:
        """The frontmatter lines that are not an owned key's."""
        return [line for line, key, _ in self.labelled if key is None]

    def lines_of(self, keys: Sequence[str]) -> str:
        """The lines of ``keys`` as written, in the note's order."""
        lines = self.owned.lines
        return "".join(
            "".join(lines[first : last + 1]) for key, first, last in self.owned.spans if key in keys
        )

    def blocks(self) -> list[Block]:
        """Each owned key's lines, in order."""
        out: list[Block] = []
        kept = 0
        for line, key, i in self.labelled:
            if key is None:
                kept += 1
            elif i == 0:
                out.append(Block(kept, key, line))
            else:
                out[-1] = Block(kept, key, out[-1].text + line)
        return out


# --------------------------------------------------------------------------- to git


def _placeholders(base: Version, token: str) -> dict[str, list[str]]:
    """The placeholder lines of each owned key of the base."""
    out: dict[str, list[str]] = {}
    for line, key, i in base.labelled:
        if key is not None:
            out.setdefault(key, []).append(f"{token} {key} {i}{_ending(line)}")
    return out


def sent_lines(base: Version, side: Version, token: str) -> list[str]:
    """The frontmatter lines git gets for ``side`` (``base`` itself for the base): its
    user lines, with the base's placeholders for each owned key (see the module
    docstring)."""
    held = _placeholders(base, token)
    out: list[str] = []
    for line, key, i in side.labelled:
        if key is None:
            out.append(line)
        elif i == 0:
            out += held.get(key, [])
    missing = set(held) - {key for _, key, _ in side.labelled}
    if not missing:
        return out
    # Keys the side removed: their placeholders where the base had them.
    ref = [line if key is None else held[key][i] for line, key, i in base.labelled]
    gone = {line for line in ref if _key_of(line, token) in missing}
    result: list[str] = []
    matcher = difflib.SequenceMatcher(None, ref, out, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        ghosts = [line for line in ref[i1:i2] if line in gone]
        if tag == "equal" or not ghosts:
            result += out[j1:j2]
            continue
        lead = 0
        while i1 + lead < i2 and ref[i1 + lead] in gone:
            lead += 1
        result += ghosts[:lead] + out[j1:j2] + ghosts[lead:]
    return result


def _key_of(line: str, token: str) -> str | None:
    """The owned key a placeholder line stands for (None: not a placeholder)."""
    if not line.startswith(token + " "):
        return None
    return line.split(" ", 2)[1]


def _is_placeholder(line: str, token: str) -> bool:
    return _key_of(line, token) is not None


def user_part(version: Version, lines: Sequence[str], base: Version) -> bytes:
    """The note's bytes with ``lines`` for its frontmatter.

    The fences are vaultmem's where they hold nothing of the user's: a block a side's
    vaultmem created (the base has none) is no part of its user part, and a block of
    vaultmem's keys alone that a side's vaultmem emptied and removed still is (it is the
    base's).
    """
    parts = version.parts
    if parts.frontmatter is None:
        if base.parts.frontmatter is None or base.kept or not lines:
            return version.raw
        head = "---" + base.parts.newline + "".join(lines) + base.parts.closing
        return parts.bom + head.encode("utf-8") + parts.body
    if base.parts.frontmatter is None and not version.kept:
        return parts.bom + parts.body
    return parts.with_frontmatter("".join(lines))


# --------------------------------------------------------------------------- from git


def _continues(line: str) -> bool:
    """Whether a frontmatter line continues the key above it (an indented line, or an
    item of a list written at the key's own indentation)."""
    return line[:1] in (" ", "\t") or (line.startswith("-") and not line.startswith("---"))


def _after(ours_sent: Sequence[str | None], merged: Sequence[str | None]) -> dict[int, int]:
    """Where each of ours' user lines went in git's result (placeholders as None): the
    index of the result line after it, after what replaced it, or where it was when it
    was deleted, counted among the result's user lines."""
    kept_at: dict[int, int] = {}
    for i, sent in enumerate(ours_sent):
        if sent is not None:
            kept_at[i] = len(kept_at)
    stripped = [0]
    for got in merged:
        stripped.append(stripped[-1] + (got is not None))
    after: dict[int, int] = {}
    matcher = difflib.SequenceMatcher(None, list(ours_sent), list(merged), autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        for i in range(i1, i2):
            if i not in kept_at:
                continue
            j = j1 + (i - i1) + 1 if tag == "equal" else (j2 if tag == "replace" else j1)
            after[kept_at[i]] = stripped[j]
    return after


def put_back(merged: bytes, token: str, ours_sent: Sequence[str], blocks: Sequence[Block]) -> bytes:
    """git's result with its placeholders taken out and ``blocks`` (the merged owned
    keys, in ours' order) put back (see the module docstring)."""
    parts = split(merged)
    if parts.frontmatter is None or token.encode() in parts.body:
        return _by_first_placeholder(merged, token, blocks)
    lines = frontmatter_lines(parts.frontmatter)
    kept = [line for line in lines if not _is_placeholder(line, token)]
    found: dict[str, int] = {}
    n = 0
    for line in lines:
        if _is_placeholder(line, token):
            found.setdefault(line.split(" ", 2)[1], n)
        else:
            n += 1
    sent = [None if _is_placeholder(line, token) else line for line in ours_sent]
    got = [None if _is_placeholder(line, token) else line for line in lines]
    after: dict[int, int] | None = None  # computed when a key has no placeholder
    regions = conflict_regions("".join(kept))
    inserted: dict[int, list[str]] = {}
    floor, previous = 0, None
    for block in blocks:
        if block.key in found:
            at = found[block.key]
        elif previous is not None and previous.anchor == block.anchor:
            at = floor  # right after the key it followed in ours
        else:
            if after is None:
                after = _after(sent, got)
            at = 0 if block.anchor == 0 else after.get(block.anchor - 1, len(kept))
            while block.anchor and at < len(kept) and _continues(kept[at]):
                at += 1
        for first, last in regions:
            if first < at <= last:
                at = first
        floor = at = max(at, floor)  # ours' order, whatever git did to the lines around
        previous = block
        inserted.setdefault(at, []).append(block.text)
    out: list[str] = []
    for i in range(len(kept) + 1):
        out += inserted.get(i, [])
        if i < len(kept):
            out.append(kept[i])
    if not out and len(kept) < len(lines):
        return parts.bom + parts.body  # only vaultmem's keys held the block, and none is left
    return parts.with_frontmatter("".join(out))


def _by_first_placeholder(merged: bytes, token: str, blocks: Sequence[Block]) -> bytes:
    """git's result where it has no frontmatter block to put the keys in: the keys where
    its first placeholder is (a conflict region holds the opening fence: the person who
    settles it sees them), else in a new block at the top."""
    text = "".join(block.text for block in blocks).encode("utf-8")
    pattern = re.compile(re.escape(token.encode()) + rb" [^\r\n]*(?:\r\n|\r|\n)")
    first = pattern.search(merged)
    if first is None:
        if not text:
            return merged
        parts = split(merged)
        head = ("---" + parts.newline).encode()
        return parts.bom + head + text + head + parts.body
    return pattern.sub(b"", merged[: first.start()] + text + merged[first.start() :])
