"""A note: one markdown file of the vault, parsed into what the indexes and commands need."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from functools import cached_property
from pathlib import Path, PurePosixPath
from typing import Any

from vaultmem.errors import NoteError
from vaultmem.frontmatter.layout import duplicate_keys
from vaultmem.frontmatter.owned import owned_problem, owned_warnings
from vaultmem.frontmatter.scan import parse_meta
from vaultmem.markdown import Heading, WikiLink, normalise_tag, outline
from vaultmem.properties import BARE, KeyScheme
from vaultmem.vocabulary import LINK_TYPES


@dataclass(frozen=True)
class Note:
    """A parsed note. ``path`` is its identity: vault-relative, POSIX style."""

    path: str
    title: str
    title_source: str  # "frontmatter", "heading" or "file": a file-name title moves on rename
    meta: Mapping[str, Any]
    body: str
    body_start_line: int
    headings: tuple[Heading, ...]
    tags: tuple[str, ...]
    aliases: tuple[str, ...]
    links: tuple[WikiLink, ...]
    content_hash: str
    mtime_ns: int
    size: int
    # Owned keys whose value is invalid, one line each (``created: '2026-13-45' is not a
    # date (line 3); treated as absent``); the memory code reads those keys as absent.
    # Also a top-level key written twice (YAML keeps the last; a union merge does that).
    warnings: tuple[str, ...] = ()
    # vaultmem's own keys under its names (``status`` for a ``vm_status`` under a prefix),
    # without a user's value under an owned name (``status: reading``): what the memory
    # code reads. ``meta`` is the frontmatter as written, the user's keys included.
    owned: Mapping[str, Any] = field(default_factory=dict)
    # Owned keys whose own name holds the user's value (bare ``status: reading``).
    held: frozenset[str] = frozenset()

    @property
    def stem(self) -> str:
        """The file name without ``.md`` (what a ``[[link]]`` names)."""
        return PurePosixPath(self.path).stem

    @property
    def folder(self) -> str:
        """The vault-relative folder, ``""`` at the root."""
        parent = str(PurePosixPath(self.path).parent)
        return "" if parent == "." else parent

    @property
    def type(self) -> str:
        """The memory type (``note`` when unset, invalid or the user's: ``type: book``)."""
        return _word(self.owned, "type") or "note"

    @property
    def status(self) -> str:
        """The lifecycle status (``active`` when unset or invalid).

        A user's own status (``status: reading``) is given as written: it means nothing to
        ranking, and no sweep (`review`, `promote`, `gc`) takes a note that is not in one
        of vaultmem's statuses, so none ever has to overwrite it.
        """
        if "status" in self.held:
            return str(self.meta.get("status")).strip().lower()
        return _word(self.owned, "status") or "active"

    @cached_property
    def quality(self) -> float:
        """ClawMem's quality score of the note (see :func:`vaultmem.quality.quality`)."""
        from vaultmem.quality import quality

        # vaultmem's own values under their own names, whatever the prefix: the score reads
        # `type`, `created`, `confidence` and the link keys.
        return quality(self.body, {**self.meta, **self.owned})

    @property
    def created(self) -> str | None:
        """The ``created`` value as ISO 8601 text, if any."""
        return iso(self.owned.get("created"))


def _word(meta: Mapping[str, Any], key: str) -> str:
    """An owned text key, lower-cased; ``""`` when absent or invalid."""
    value = meta.get(key)
    if value is None or owned_problem(key, value) is not None:
        return ""
    return str(value).strip().lower()


def iso(value: Any) -> str | None:
    """A frontmatter date, datetime or string as ISO 8601 text (None when absent)."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime | date):
        return value.isoformat()
    return str(value)


def content_hash(raw: bytes) -> str:
    """The hash that identifies a note's content (manifest, change detection)."""
    return hashlib.blake2b(raw, digest_size=16).hexdigest()


def _string_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        # Obsidian accepts "a, b" and "a b" for tags; commas are the safe split.
        parts = value.split(",") if "," in value else value.split()
        return [p.strip() for p in parts if p.strip()]
    if isinstance(value, list | tuple):
        return [str(v).strip() for v in value if v is not None and str(v).strip()]
    return [str(value)]


def _first_h1(headings: tuple[Heading, ...]) -> str | None:
    for heading in headings:
        if heading.level == 1 and heading.text:
            return heading.text
    return None


def _title(meta: Mapping[str, Any], headings: tuple[Heading, ...], path: str) -> tuple[str, str]:
    given = meta.get("title")
    if given not in (None, "") and str(given).strip():
        return str(given).strip(), "frontmatter"
    h1 = _first_h1(headings)
    if h1:
        return h1, "heading"
    return PurePosixPath(path).stem, "file"


def parse_note(
    path: str,
    raw: bytes,
    *,
    mtime_ns: int = 0,
    size: int | None = None,
    keys: KeyScheme = BARE,
) -> Note:
    """Parse a note's bytes. Raises NoteError (naming ``path`` and the line) when it can't:
    a note that is not UTF-8 (:func:`vaultmem.frontmatter.scan.check_encoding`), malformed or
    hostile frontmatter. Invalid owned values do not fail the note: they are listed in
    ``Note.warnings``. ``keys`` names vaultmem's keys in the note (``Config.keys``).

    Example:
        >>> parse_note("a/B.md", b"---\\ntags: [x]\\n---\\n# Hello\\n").title
        'Hello'
    """
    meta, parts = parse_meta(raw, path)
    body = parts.body.decode("utf-8")  # parse_meta checked the whole note is UTF-8
    shape = outline(body)
    tags = dict.fromkeys(normalise_tag(t) for t in _string_list(meta.get("tags")))
    tags.update(dict.fromkeys(shape.tags))
    tags.pop("", None)
    aliases = tuple(_string_list(meta.get("aliases") or meta.get("alias")))
    title, source = _title(meta, shape.headings, path)
    return Note(
        path=path,
        title=title,
        title_source=source,
        meta=meta,
        body=body,
        body_start_line=parts.body_line,
        headings=shape.headings,
        tags=tuple(tags),
        aliases=aliases,
        links=shape.links,
        content_hash=content_hash(raw),
        mtime_ns=mtime_ns,
        size=len(raw) if size is None else size,
        warnings=owned_warnings(meta, parts, keys) + duplicate_keys(parts),
        owned=keys.owned_view(meta),
        held=frozenset(k for k, _ in keys.user_keys(meta) if keys.bare(k)),
    )


def read_raw(root: Path, path: str) -> tuple[bytes, os.stat_result]:
    """The bytes and stat of the note at vault-relative ``path`` (NoteError when unreadable)."""
    full = root / path
    try:
        return full.read_bytes(), os.stat(full)
    except FileNotFoundError:
        raise NoteError(f"{path}: no such note") from None
    except OSError as exc:
        raise NoteError(f"{path}: cannot read: {exc.strerror}") from None


def read_note(root: Path, path: str, keys: KeyScheme = BARE) -> Note:
    """Read and parse the note at vault-relative ``path`` under ``root``."""
    raw, st = read_raw(root, path)
    return parse_note(path, raw, mtime_ns=st.st_mtime_ns, size=st.st_size, keys=keys)


WIKILINK = "wikilink"  # the type of a body [[link]] (or ![[embed]])


def link_targets(value: Any) -> tuple[str, ...]:
    """The targets of a typed-link value: ``"[[A]]"``, ``["[[A|alias]]", "B"]`` → A, B."""
    items = value if isinstance(value, list | tuple) else [value]
    out = []
    for item in items:
        if not isinstance(item, str):
            continue
        text = item.strip()
        if text.startswith("[[") and text.endswith("]]"):
            text = text[2:-2]
        text = text.split("|", 1)[0].split("#", 1)[0].strip()
        if text:
            out.append(text)
    return tuple(out)


def link_texts(meta: Mapping[Any, Any], links: Iterable[WikiLink]) -> tuple[tuple[str, str], ...]:
    """A note's links as written, ``(type, target)``: typed keys first, then body links.

    Targets carry no ``#heading`` or ``|alias``; what `index` stores for the graph.
    """
    typed = [(t, x) for t in LINK_TYPES if t in meta for x in link_targets(meta[t])]
    body = [(WIKILINK, link.target) for link in links if link.target.strip()]
    return tuple(dict.fromkeys(typed + body))
