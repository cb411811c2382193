"""Finding a note by what a user calls it: path, title, alias or file name."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from vaultmem.config import Config
from vaultmem.index import manifest as mf
from vaultmem.note import Note, iso, read_note
from vaultmem.vault import LinkResolver, NoteName, walk_notes


def note_names(config: Config) -> list[NoteName]:
    """Every note's names: titles and aliases from the manifest, file names for the rest.

    Reads no note: notes the index has not seen yet are known by their file name only.
    """
    manifest = mf.load(config.cache_dir)
    names = []
    for f in walk_notes(config):
        entry = manifest.entries.get(f.path)
        if entry is not None:
            names.append(NoteName(f.path, entry.title, entry.aliases))
        else:
            names.append(NoteName(f.path, f.path.rsplit("/", 1)[-1][:-3]))
    return names


def resolve(config: Config, name: str) -> str:
    """The vault-relative path of the note ``name`` means (NoteNotFound / AmbiguousNote)."""
    direct = name.strip().removeprefix("./")
    for candidate in (direct, direct + ".md"):
        if candidate.endswith(".md") and (config.vault / candidate).is_file():
            return candidate
    return LinkResolver(note_names(config)).resolve_name(name)


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
    """Resolve ``name`` and read the note."""
    path = resolve(config, name)
    note = read_note(config.vault, path)
    raw = (config.vault / path).read_bytes()
    return FoundNote(note, raw.decode("utf-8-sig", errors="replace"))
