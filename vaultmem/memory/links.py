"""Typed links between notes: `link`, `unlink`, `links` (SPEC §4).

A typed link is an owned frontmatter key holding a list of ``"[[Note]]"`` strings, so
Obsidian's graph view draws it. The vocabulary is closed (:data:`LINK_TYPES`). Paired
types are written on both ends (:data:`PAIRED`): ``supersedes`` ↔ ``superseded_by``, and
the symmetric ``related`` and ``contradicts``; the other types are one-way. Linking with
``supersedes``/``superseded_by`` also marks the older note ``status: superseded``, as
`remember --supersedes` does. Both notes are edited under one lock acquisition.

Backlinks come from the link graph (:mod:`vaultmem.index.graph`) when the index is current
(a row for every note file, each with the file's stat). Otherwise they are found by one
pass over every note's raw bytes, so that they are right even before `index` has run: a
note can only link to NOTE if its frontmatter or one of its ``[[…]]`` spans contains,
case-insensitively, NOTE's file stem or one of its aliases (every link spelling that
resolves to NOTE does), so only those few notes are parsed.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from vaultmem.config import Config
from vaultmem.errors import NoteError, VaultmemError
from vaultmem.frontmatter.files import WriteResult
from vaultmem.frontmatter.scan import BOM
from vaultmem.index import manifest as mf
from vaultmem.index.graph import LinkGraph, index_current
from vaultmem.indexer import refresh_paths
from vaultmem.lookup import note_names
from vaultmem.memory.writeback import edit_notes_locked, locked, wikilink
from vaultmem.note import WIKILINK, Note, link_targets, parse_note, read_note
from vaultmem.properties import OWNED_KEYS
from vaultmem.vault import LinkResolver, NoteName
from vaultmem.vocabulary import LINK_INVERSES, LINK_TYPES

if TYPE_CHECKING:
    from vaultmem.retrieval.vsearch import VectorIndex

__all__ = [
    "LINK_TYPES",
    "PAIRED",
    "SUGGEST_THRESHOLD",
    "SUPERSEDED",
    "Backlink",
    "DanglingLink",
    "LinkChange",
    "LinkRef",
    "NoteLinks",
    "Suggestion",
    "dangling_links",
    "link",
    "link_all",
    "links_of",
    "suggest_links",
    "unlink",
    "write_suggestions",
]

# The type written on the other end of a link; types not listed here are one-way.
PAIRED: Mapping[str, str] = {
    "supersedes": "superseded_by",
    "superseded_by": "supersedes",
    "related": "related",
    "contradicts": "contradicts",
}

SUPERSEDED = "superseded"
# The owned key holding lines for a person to check; a link settled by hand drops the
# lines that name the other note.
REVIEW_KEY = "needs_review"
# Statuses that say more than "superseded" about where a note is; linking keeps them.
_KEPT_STATUSES = frozenset({"archived", "forgotten", SUPERSEDED})

# What one end of a link edit computes: (frontmatter, resolver) -> owned-key updates.
_Side = Callable[[dict[Any, Any], LinkResolver], dict[str, object | None]]
# "[[" and what follows up to the closing bracket: where a body link's target is.
_LINK_START_RE = re.compile(rb"\[\[[^\]\n]*")
_CLOSING_RE = re.compile(rb"^(?:---|\.\.\.)\r?$", re.MULTILINE)


@dataclass(frozen=True)
class LinkChange:
    """What `link`/`unlink` did: every ``(path, key)`` it rewrote (empty: nothing to do)."""

    source: str
    target: str
    type: str | None
    edits: tuple[tuple[str, str], ...]

    @property
    def changed(self) -> bool:
        """Whether any note was rewritten."""
        return bool(self.edits)

    @property
    def written(self) -> tuple[str, ...]:
        """The notes rewritten, source first."""
        return tuple(dict.fromkeys(path for path, _ in self.edits))


@dataclass(frozen=True)
class LinkRef:
    """One link as written (``target``) and the note it resolves to (None: dangling)."""

    target: str
    path: str | None

    def as_json(self) -> dict[str, Any]:
        """``{target, path}``; ``path`` is null for a dangling link."""
        return {"target": self.target, "path": self.path}


@dataclass(frozen=True)
class Backlink:
    """A note pointing at another: ``via`` is a link type or ``"wikilink"`` (body link)."""

    path: str
    via: str

    @property
    def inverse(self) -> str:
        """What the link says from the note it points at (``fixed_by`` → ``fixes``: this
        note fixes the one linking here); ``via`` itself for a body link."""
        return LINK_INVERSES.get(self.via, self.via)

    def as_json(self) -> dict[str, Any]:
        """``{path, via}``."""
        return {"path": self.path, "via": self.via}


@dataclass(frozen=True)
class NoteLinks:
    """A note's typed links (by type), body wikilinks, and the notes linking to it."""

    path: str
    title: str
    typed: Mapping[str, tuple[LinkRef, ...]]
    wikilinks: tuple[LinkRef, ...]
    backlinks: tuple[Backlink, ...]

    def as_json(self) -> dict[str, Any]:
        """``{path, title, typed: {type: [{target, path}]}, wikilinks, backlinks}``."""
        return {
            "path": self.path,
            "title": self.title,
            "typed": {t: [r.as_json() for r in refs] for t, refs in self.typed.items()},
            "wikilinks": [r.as_json() for r in self.wikilinks],
            "backlinks": [b.as_json() for b in self.backlinks],
        }


# --------------------------------------------------------------------------- editing


def _check_type(link_type: str) -> None:
    if link_type not in LINK_TYPES:
        raise VaultmemError(
            f"unknown link type {link_type!r}; valid types: {', '.join(LINK_TYPES)}"
        )


def _items(meta: Mapping[Any, Any], key: str, source: str) -> list[str]:
    """The link strings under ``key``; a value vaultmem could not rewrite faithfully is
    refused (an unquoted ``[[Note]]`` reads as a nested YAML list, for one)."""
    value = meta.get(key)
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return list(value)
    raise NoteError(
        f'{source}: {key!r} is not a list of links (write each as a quoted "[[Note]]"); '
        "fix it by hand"
    )


def _points_at(item: str, target: str, source: str, resolver: LinkResolver) -> bool:
    return any(resolver.resolve_link(t, source) == target for t in link_targets(item))


def _added(
    meta: Mapping[Any, Any], key: str, target: str, source: str, resolver: LinkResolver
) -> dict[str, object | None]:
    """``{key: list + [[target]]}``, or nothing when a link to ``target`` is already there."""
    items = _items(meta, key, source)
    if any(_points_at(item, target, source, resolver) for item in items):
        return {}
    return {key: [*items, wikilink(target, resolver)]}


def _removed(
    meta: Mapping[Any, Any], keys: Iterable[str], target: str, source: str, resolver: LinkResolver
) -> dict[str, object | None]:
    """Each key of ``keys`` without its links to ``target`` (None when none are left)."""
    updates: dict[str, object | None] = {}
    for key in keys:
        if key not in meta:
            continue
        items = _items(meta, key, source)
        kept = [item for item in items if not _points_at(item, target, source, resolver)]
        if len(kept) != len(items):
            updates[key] = kept or None
    return updates


def _superseded(meta: Mapping[Any, Any]) -> dict[str, object | None]:
    status = str(meta.get("status") or "active").strip().lower()
    return {} if status in _KEPT_STATUSES else {"status": SUPERSEDED}


def _edits(paths: tuple[str, str], results: list[WriteResult]) -> tuple[tuple[str, str], ...]:
    out: list[tuple[str, str]] = []
    for path, result in zip(paths, results, strict=True):
        keys = [k for k in OWNED_KEYS if result.before.get(k) != result.after.get(k)]
        out.extend((path, k) for k in keys)
    return tuple(out)


def _edit_pair(
    config: Config, a: str, b: str, sides: Mapping[str, _Side], what: str
) -> tuple[tuple[str, str], ...]:
    """Apply ``sides[path](meta, resolver)`` to both notes under one lock, re-index them."""
    if a == b:
        raise NoteError(f"{a}: a note cannot link to itself")
    with locked(config, what):
        resolver = LinkResolver(note_names(config))
        paths = (a, b)
        results = edit_notes_locked(config, paths, lambda path, meta: sides[path](meta, resolver))
        changed = [p for p, r in zip(paths, results, strict=True) if r.changed]
        if changed:
            refresh_paths(config, changed)
    return _edits(paths, results)


def link(config: Config, a_path: str, b_path: str, link_type: str = "related") -> LinkChange:
    """Add ``"[[B]]"`` to A's ``link_type`` list, and the paired link on B when the type
    is paired. ``supersedes`` marks B superseded, ``superseded_by`` marks A (an archived
    or forgotten note keeps its status). ``contradicts`` lowers the older note's
    confidence (:func:`_lowering_older`). A link already present, in any spelling that
    resolves to the same note, is not written again.

    Example:
        >>> link(config, "decisions/New.md", "decisions/Old.md", "supersedes")  # doctest: +SKIP
    """
    sides = _link_sides(config, a_path, b_path, link_type)
    edits = _edit_pair(config, a_path, b_path, sides, "link")
    return LinkChange(a_path, b_path, link_type, edits)


def link_all(
    config: Config,
    a_path: str,
    targets: Sequence[tuple[str, str]],
    then: Callable[[str, dict[Any, Any]], dict[str, object | None]] | None = None,
) -> tuple[LinkChange, ...]:
    """:func:`link` from A to each ``(B, link type)`` of ``targets``, then ``then`` on A's
    frontmatter (more owned-key updates), under one lock acquisition and one re-index
    (what `extract` writes for a new memory).

    Example:
        >>> link_all(config, "inbox/n.md", [("decisions/Old.md", "contradicts")])  # doctest: +SKIP
    """
    done: list[LinkChange] = []
    changed: list[str] = []
    with locked(config, "link"):
        resolver = LinkResolver(note_names(config))
        try:
            for b_path, link_type in targets:
                if b_path == a_path:
                    raise NoteError(f"{a_path}: a note cannot link to itself")
                sides = _link_sides(config, a_path, b_path, link_type)
                paths = (a_path, b_path)
                results = edit_notes_locked(config, paths, _applying(sides, resolver))
                changed += [p for p, r in zip(paths, results, strict=True) if r.changed]
                done.append(LinkChange(a_path, b_path, link_type, _edits(paths, results)))
            if then is not None and edit_notes_locked(config, [a_path], then)[0].changed:
                changed.append(a_path)
        finally:
            if changed:
                refresh_paths(config, list(dict.fromkeys(changed)))
    return tuple(done)


def _applying(
    sides: Mapping[str, _Side], resolver: LinkResolver
) -> Callable[[str, dict[Any, Any]], dict[str, object | None]]:
    return lambda path, meta: sides[path](meta, resolver)


def _link_sides(config: Config, a_path: str, b_path: str, link_type: str) -> dict[str, _Side]:
    """What `link` writes on each end (see :func:`link`)."""
    _check_type(link_type)
    pair = PAIRED.get(link_type)

    def on_a(meta: dict[Any, Any], resolver: LinkResolver) -> dict[str, object | None]:
        updates = _added(meta, link_type, b_path, a_path, resolver)
        if link_type in ("supersedes", "superseded_by"):
            # A replacement decided by hand settles the review lines about the pair.
            updates |= _unflagged(meta, b_path, a_path, resolver)
        return updates | (_superseded(meta) if link_type == "superseded_by" else {})

    def on_b(meta: dict[Any, Any], resolver: LinkResolver) -> dict[str, object | None]:
        updates = _added(meta, pair, a_path, b_path, resolver) if pair else {}
        return updates | (_superseded(meta) if link_type == "supersedes" else {})

    sides: dict[str, _Side] = {a_path: on_a, b_path: on_b}
    if link_type == "contradicts":
        sides = _lowering_older(config, a_path, b_path, sides)
    return sides


# --- confidence (SPEC §5): a contradiction lowers the older note's confidence ----------


def _lowering_older(config: Config, a: str, b: str, sides: Mapping[str, _Side]) -> dict[str, _Side]:
    """``sides`` that also lower the older note's confidence by 0.25 (floor 0.2) when its
    own ``contradicts`` list gains the link, so a contradiction counts once however often
    it is linked. Which note is older (``created``, else mtime) is decided once, under the
    lock, before either note is written; on a tie neither is lowered."""
    from functools import cache

    from vaultmem.memory.notes import contradiction, older_note

    older = cache(lambda: older_note(config, a, b))

    def side(path: str) -> _Side:
        def run(meta: dict[Any, Any], resolver: LinkResolver) -> dict[str, object | None]:
            updates = sides[path](meta, resolver)
            if "contradicts" in updates and older() == path:
                return updates | contradiction(meta)
            return updates

        return run

    return {path: side(path) for path in (a, b)}


# --- end of the confidence hook ---------------------------------------------------------


def unlink(config: Config, a_path: str, b_path: str, link_type: str | None = None) -> LinkChange:
    """Remove A's links to B of ``link_type`` (every type when None) and their pairs on B.

    A list left empty loses its key. A note's ``status`` is left as it is, even when a
    ``supersedes`` link goes. B's one-way links to A are B's own: ``unlink(B, A)``. A
    ``contradicts`` link that goes gives back the confidence it took
    (:func:`vaultmem.memory.notes.contradiction_undone`), and review lines naming the
    other note (``needs_review``) are settled on both.

    Example:
        >>> unlink(config, "decisions/New.md", "decisions/Old.md")  # doctest: +SKIP
    """
    if link_type is not None:
        _check_type(link_type)
    types = LINK_TYPES if link_type is None else (link_type,)
    pairs = [PAIRED[t] for t in types if t in PAIRED]

    from functools import cache

    from vaultmem.memory.notes import older_note

    # Only the older note of the pair lost confidence to the link (see `link`).
    older = cache(lambda: older_note(config, a_path, b_path))

    def on_a(meta: dict[Any, Any], resolver: LinkResolver) -> dict[str, object | None]:
        updates = _removed(meta, types, b_path, a_path, resolver)
        return _settled(meta, updates, b_path, a_path, resolver, older)

    def on_b(meta: dict[Any, Any], resolver: LinkResolver) -> dict[str, object | None]:
        updates = _removed(meta, pairs, a_path, b_path, resolver)
        return _settled(meta, updates, a_path, b_path, resolver, older)

    edits = _edit_pair(config, a_path, b_path, {a_path: on_a, b_path: on_b}, "unlink")
    return LinkChange(a_path, b_path, link_type, edits)


def _settled(
    meta: Mapping[Any, Any],
    updates: dict[str, object | None],
    other: str,
    source: str,
    resolver: LinkResolver,
    older: Callable[[], str | None],
) -> dict[str, object | None]:
    """``updates`` of an unlink on ``source``, plus: the confidence a removed
    ``contradicts`` link took given back (``source`` being the older note of the pair),
    and the review lines naming ``other`` dropped (the link was settled)."""
    from vaultmem.memory.notes import contradiction_undone

    if not updates:
        return updates
    if "contradicts" in updates and older() == source:
        left = updates["contradicts"]
        updates = updates | contradiction_undone(meta, len(left) if isinstance(left, list) else 0)
    return updates | _unflagged(meta, other, source, resolver)


_INLINE_LINK_RE = re.compile(r"\[\[([^\]|#]+)")


def _unflagged(
    meta: Mapping[Any, Any], other: str, source: str, resolver: LinkResolver
) -> dict[str, object | None]:
    """``needs_review`` without the lines whose links name ``other`` (None: none left)."""
    if REVIEW_KEY not in meta:
        return {}
    value = meta[REVIEW_KEY]
    items = [value] if isinstance(value, str) else list(value) if isinstance(value, list) else []
    kept = [
        item
        for item in items
        if not any(
            resolver.resolve_link(m.group(1).strip(), source) == other
            for m in _INLINE_LINK_RE.finditer(str(item))
        )
    ]
    return {} if len(kept) == len(items) else {REVIEW_KEY: kept or None}


# --------------------------------------------------------------------------- reading


def _refs(targets: Iterable[str], source: str, resolver: LinkResolver) -> tuple[LinkRef, ...]:
    """Each distinct link once (by the note it reaches, else by its text), first spelling kept."""
    seen: dict[str, LinkRef] = {}
    for target in targets:
        path = resolver.resolve_link(target, source)
        seen.setdefault(path or "\0" + target.lower(), LinkRef(target, path))
    return tuple(seen.values())


def _typed(
    meta: Mapping[Any, Any], source: str, resolver: LinkResolver
) -> dict[str, tuple[LinkRef, ...]]:
    return {
        t: _refs(link_targets(meta[t]), source, resolver)
        for t in LINK_TYPES
        if t in meta and link_targets(meta[t])
    }


def _needles(path: str, aliases: Iterable[str]) -> tuple[str, ...]:
    """Lower-cased strings one of which every link resolving to ``path`` must contain."""
    names = [PurePosixPath(path).stem, *aliases]
    return tuple(dict.fromkeys(n.strip().lower() for n in names if n.strip()))


def _frontmatter_bytes(raw: bytes) -> bytes:
    """The frontmatter block's bytes, found without decoding or copying the body."""
    data = raw.removeprefix(BOM)
    if not data.startswith(b"---"):
        return b""
    closing = _CLOSING_RE.search(data, 3)
    return data[: closing.start()] if closing else b""


def _link_text(raw: bytes) -> str:
    """The only text a link to another note can be in, lower-cased: the frontmatter (a
    typed link may be unbracketed) and each ``[[…`` up to its ``]``."""
    pieces = [_frontmatter_bytes(raw), *_LINK_START_RE.findall(raw)]
    return b"\n".join(pieces).decode("utf-8", errors="replace").lower()


def _links_from(note: Note, target: str, resolver: LinkResolver) -> list[Backlink]:
    """How ``note`` points at ``target``: each link type, then ``wikilink`` for its body."""
    vias = [
        t
        for t in LINK_TYPES
        if t in note.owned
        and any(resolver.resolve_link(x, note.path) == target for x in link_targets(note.owned[t]))
    ]
    if any(resolver.resolve_link(x.target, note.path) == target for x in note.links):
        vias.append(WIKILINK)
    return [Backlink(note.path, via) for via in vias]


def _backlinks(
    config: Config, note: Note, paths: Iterable[str], resolver: LinkResolver
) -> tuple[Backlink, ...]:
    """Every link to ``note`` from the other notes of ``paths``.

    Only notes whose link text contains the note's stem or an alias are parsed: on a
    16k-note vault that is one read of each file plus a handful of parses.
    """
    needles = _needles(note.path, note.aliases)
    root = str(config.vault)
    found: list[Backlink] = []
    for path in paths:
        if path == note.path:
            continue
        try:
            with open(os.path.join(root, path), "rb") as fh:
                raw = fh.read()
            text = _link_text(raw)
            if not any(needle in text for needle in needles):
                continue
            other = parse_note(path, raw, keys=config.keys)
        except (OSError, NoteError):
            continue  # unreadable or malformed: it links nowhere we can tell
        found.extend(_links_from(other, note.path, resolver))
    return tuple(sorted(found, key=lambda b: b.path))


def _graph_backlinks(config: Config, path: str) -> tuple[Backlink, ...]:
    """The backlinks of ``path`` from the link graph, as :func:`_backlinks` orders them."""
    vias: dict[str, set[str]] = {}
    for edge in LinkGraph.load(config).into(path):
        vias.setdefault(edge.source, set()).add(edge.type)
    order = (*LINK_TYPES, WIKILINK)
    return tuple(Backlink(src, via) for src in sorted(vias) for via in order if via in vias[src])


def _indexed_names(config: Config) -> list[NoteName]:
    none: dict[str, tuple[str, tuple[str, ...]]] = {}
    known = mf.read(config.cache_dir, none, mf.Store.names)
    return [NoteName(p, title, aliases) for p, (title, aliases) in known.items()]


def links_of(config: Config, path: str) -> NoteLinks:
    """The note's typed links, body wikilinks and backlinks, each resolved (or dangling).

    Example:
        >>> links_of(config, "decisions/Redis for caching.md").backlinks[0]  # doctest: +SKIP
        Backlink(path='Harbor.md', via='wikilink')
    """
    note = read_note(config.vault, path, config.keys)
    current = index_current(config)
    # A current index has a row for every note file: its names need no second walk.
    known = _indexed_names(config) if current else note_names(config)
    # The note's own aliases come from the file: links by alias resolve before `index`.
    names = [n for n in known if n.path != path]
    names.append(NoteName(path, note.title, note.aliases))
    resolver = LinkResolver(names)
    if current:
        backlinks = _graph_backlinks(config, path)
    else:
        backlinks = _backlinks(config, note, (n.path for n in names), resolver)
    return NoteLinks(
        path=path,
        title=note.title,
        typed=_typed(note.owned, path, resolver),
        wikilinks=_refs((x.target for x in note.links), path, resolver),
        backlinks=backlinks,
    )


@dataclass(frozen=True)
class DanglingLink:
    """A typed link (``type: "[[target]]"`` in ``path``) that resolves to no note."""

    path: str
    type: str
    target: str


def dangling_links(config: Config, memory: Mapping[str, Mapping[str, Any]]) -> list[DanglingLink]:
    """The typed links that resolve to no note, read from what the index holds.

    ``memory`` is path → owned keys of each indexed note (the manifest's ``Entry.memory``);
    names come from :func:`~vaultmem.lookup.note_names`, so a link resolves as `links` does.
    """
    resolver = LinkResolver(note_names(config))
    return [
        DanglingLink(path, link_type, target)
        for path, keys in sorted(memory.items())
        for link_type in LINK_TYPES
        if link_type in keys
        for target in link_targets(keys[link_type])
        if resolver.resolve_link(target, path) is None
    ]


# --------------------------------------------------------------------------- suggesting

# Cosine at or above which a vector neighbour is offered as a `related` link. On
# example-vault with the default MiniLM, 23 pairs of notes are this close: 17 are linked
# by hand already and the other 6 are plausible links (a daily note and the decision it
# records). At 0.75 all 9 pairs are linked already: nothing would be left to suggest; at
# 0.65 two in five are. Duplicates sit higher (`remember` refines at 0.92): a suggestion
# is a neighbour, not a copy. Other models spread cosines differently: --threshold.
SUGGEST_THRESHOLD = 0.70


@dataclass(frozen=True)
class Suggestion:
    """A note close in meaning to another and not linked to it either way."""

    path: str
    title: str
    similarity: float  # cosine of its best fragment with the note's mean vector

    def as_json(self) -> dict[str, Any]:
        """``{path, title, similarity}``."""
        return {"path": self.path, "title": self.title, "similarity": round(self.similarity, 4)}


def linked_paths(config: Config, path: str) -> set[str]:
    """Every note ``path`` links to or is linked from (typed links and wikilinks)."""
    found = links_of(config, path)
    refs = [*(r for refs in found.typed.values() for r in refs), *found.wikilinks]
    return {r.path for r in refs if r.path} | {b.path for b in found.backlinks}


def suggest_links(
    config: Config,
    path: str,
    index: VectorIndex,
    *,
    threshold: float = SUGGEST_THRESHOLD,
    limit: int = 10,
) -> tuple[Suggestion, ...]:
    """Up to ``limit`` vector neighbours of ``path`` at cosine ≥ ``threshold`` that it is
    not linked with in either direction, nearest first. Writes nothing.

    Example:
        >>> suggest_links(config, "decisions/Redis for caching.md", index)  # doctest: +SKIP
    """
    from vaultmem.retrieval.vsearch import similar

    linked = linked_paths(config, path)
    hits = similar(config, path, index.embedder, limit=limit + len(linked), index=index)
    fresh = [h for h in hits if h.path not in linked and h.score >= threshold]
    return tuple(Suggestion(h.path, h.title, h.score) for h in fresh[:limit])


def write_suggestions(
    config: Config, path: str, suggestions: Iterable[Suggestion]
) -> tuple[LinkChange, ...]:
    """Store each suggestion as a ``related`` link (written on both notes)."""
    return tuple(link(config, path, s.path, "related") for s in suggestions)
