"""Finding a note by what a user calls it: path, title, alias or file name."""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from vaultmem.config import Config
from vaultmem.errors import NoteNotFound, VaultmemError
from vaultmem.frontmatter.scan import check_encoding
from vaultmem.index import manifest as mf
from vaultmem.model import check_text
from vaultmem.note import Note, iso, parse_note, read_raw
from vaultmem.vault import (
    LinkResolver,
    NoteName,
    note_path,
    strip_md,
    vault_relative,
    walk_notes,
)


def note_names(config: Config, *, read_unindexed: bool = False) -> list[NoteName]:
    """Every note's names: titles and aliases from the manifest, file names for the rest.

    Reads no note, unless ``read_unindexed``: then the notes the index has not seen yet
    are read for their title and aliases too (a name lookup that missed tries again so,
    since a note written by `remember` a moment ago is known by title before `index`).
    """
    none: dict[str, tuple[str, tuple[str, ...]]] = {}
    known = mf.read(config.cache_dir, none, mf.Store.names)
    names = []
    for f in walk_notes(config):
        entry = known.get(f.path)
        if entry is not None:
            names.append(NoteName(f.path, *entry))
        elif read_unindexed and (read := _read_names(config, f.path)) is not None:
            names.append(read)
        else:
            names.append(NoteName(f.path, f.path.rsplit("/", 1)[-1][:-3]))
    return names


def _read_names(config: Config, path: str) -> NoteName | None:
    try:
        raw, st = read_raw(config.vault, path)
        note = parse_note(path, raw, mtime_ns=st.st_mtime_ns, size=st.st_size)
    except (OSError, VaultmemError):
        return None
    return NoteName(path, note.title, note.aliases)


def resolve(config: Config, name: str, *, write: bool = False) -> str:
    """The vault-relative path of the note ``name`` means (NoteNotFound / AmbiguousNote).

    Whatever ``name`` is (a path, absolute or relative, a title, an alias, a file name),
    the answer passes :func:`~vaultmem.vault.note_path`, so it is a note of this vault;
    ``write`` is for commands that will change the note. Every door's note names come
    through here, so a name no note can have (a NUL, half a surrogate pair) is refused
    here, a RequestError.
    """
    check_text(name, "note name")
    direct = name.strip().removeprefix("./")
    for candidate in (direct, direct + ".md"):
        if candidate.endswith(".md") and (config.vault / candidate).is_file():
            return note_path(config, candidate, write=write)
    try:
        found = LinkResolver(note_names(config)).resolve_name(name)
    except NoteNotFound:
        vault_relative(config.vault, direct)  # a path out of the vault says so
        # Notes not indexed yet are known by file name only: read them and try again.
        names = note_names(config, read_unindexed=True)
        try:
            found = LinkResolver(names).resolve_name(name)
        except NoteNotFound:
            raise NoteNotFound(not_found(name, names)) from None
    return note_path(config, found, write=write)


def matching(names: Sequence[NoteName], text: str) -> list[str]:
    """The paths of the notes whose title, an alias or path holds ``text`` (any case),
    those it begins first, then the shorter titles."""
    key = " ".join(strip_md(text.strip()).lower().split())
    if not key:
        return []
    ranked = []
    for n in names:
        spellings = [" ".join(x.lower().split()) for x in (n.title, *n.aliases, strip_md(n.path))]
        if any(key in x for x in spellings):
            starts = any(
                x.startswith(key) or x.rsplit("/", 1)[-1].startswith(key) for x in spellings
            )
            ranked.append((not starts, len(n.title), n.path))
    return [path for *_, path in sorted(ranked)]


def suggestions(names: Sequence[NoteName], name: str, limit: int = 5) -> list[str]:
    """What a user who typed ``name`` could mean: the notes :func:`matching` it, else those
    whose title, alias or file name is spelt alike; each shown by its title (its path when
    another note has the same title)."""
    found = matching(names, name)
    if not found:
        key = strip_md(name.strip()).lower()
        spelt: dict[str, str] = {}
        for n in names:
            for spelling in (n.title, *n.aliases, PurePosixPath(n.path).stem):
                spelt.setdefault(spelling.lower(), n.path)
        close = difflib.get_close_matches(key, list(spelt), n=limit, cutoff=0.6)
        found = list(dict.fromkeys(spelt[c] for c in close))
    titles = {n.path: n.title for n in names}
    shared = Counter(n.title.strip().lower() for n in names)
    return [
        titles[p] if titles[p] and shared[titles[p].strip().lower()] == 1 else p
        for p in found[:limit]
    ]


def not_found(name: str, names: Sequence[NoteName]) -> str:
    """The message for a name that finds no note, with the notes it could mean.

    Example:
        >>> not_found("Redis", [NoteName("decisions/Redis for caching.md", "Redis for caching")])
        "no note called 'Redis'; did you mean 'Redis for caching'?"
    """
    found = [repr(x) for x in suggestions(names, name)]
    if not found:
        return f"no note called {name!r} (try a path, a title or an alias)"
    listing = found[0] if len(found) == 1 else f"{', '.join(found[:-1])} or {found[-1]}"
    return f"no note called {name!r}; did you mean {listing}?"


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return iso(value)


@dataclass(frozen=True)
class FoundNote:
    """A note as `get` shows it."""

    note: Note
    text: str

    def as_json(self) -> dict[str, Any]:
        """``get --json``: frontmatter (JSON-safe), body and what vaultmem read from it."""
        n = self.note
        return {
            "path": n.path,
            "title": n.title,
            "frontmatter": _plain(dict(n.meta)),
            "body": n.body,
            "tags": list(n.tags),
            "aliases": list(n.aliases),
            "warnings": list(n.warnings),
            "links": [
                {
                    "target": link.target,
                    "heading": link.heading,
                    "alias": link.alias,
                    "embed": link.embed,
                    "line": link.line,
                }
                for link in n.links
            ],
        }


def find_note(config: Config, name: str) -> FoundNote:
    """Resolve ``name`` and read the note (once: the text shown is the text parsed)."""
    path = resolve(config, name)
    raw, st = read_raw(config.vault, path)
    note = parse_note(path, raw, mtime_ns=st.st_mtime_ns, size=st.st_size, keys=config.keys)
    return FoundNote(note, check_encoding(raw, path))
