"""Finding a note by what a user calls it: path, title, alias or file name."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from vaultmem.config import Config
from vaultmem.errors import NoteNotFound, VaultmemError
from vaultmem.frontmatter.scan import check_encoding
from vaultmem.index import manifest as mf
from vaultmem.model import check_text
from vaultmem.note import Note, iso, parse_note, read_raw
from vaultmem.vault import LinkResolver, NoteName, note_path, vault_relative, walk_notes


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
        found = LinkResolver(note_names(config, read_unindexed=True)).resolve_name(name)
    return note_path(config, found, write=write)


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
