"""The manifest: what the sidecar indexes hold, per note, so `index` only touches changes.

It lives in the cache (``manifest.json``) and is saved last, atomically: a crash mid-index
leaves the previous manifest, and the next run redoes the notes it did not record.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any

from vaultmem.atomic import atomic_write
from vaultmem.errors import IndexStateError
from vaultmem.frontmatter import OWNED_KEYS
from vaultmem.note import Note, iso
from vaultmem.vault import FileStat

SCHEMA = 3
FILE_NAME = "manifest.json"


@dataclass(frozen=True)
class Entry:
    """What the indexes know about one note."""

    mtime_ns: int
    size: int
    hash: str
    title: str
    aliases: tuple[str, ...] = ()
    type: str = "note"
    status: str = "active"
    tags: tuple[str, ...] = ()
    # vaultmem's own frontmatter keys as JSON values (dates as ISO text), and the note's
    # quality score: what ranking, `review`, `promote` and `gc` need without reading notes.
    memory: Mapping[str, Any] = field(default_factory=dict)
    quality: float = 0.0


@dataclass(frozen=True)
class Manifest:
    """Every indexed note's entry, plus when the last index finished."""

    entries: Mapping[str, Entry] = field(default_factory=dict)
    last_index: str | None = None
    lexical_schema: int = 0


@dataclass(frozen=True)
class Plan:
    """What an index run has to do, from comparing the walk with the manifest."""

    new: tuple[FileStat, ...]
    changed: tuple[FileStat, ...]  # stat differs: hash to see whether the content did
    unchanged: tuple[FileStat, ...]
    removed: tuple[str, ...]


def load(cache_dir: Path) -> Manifest:
    """The saved manifest, or an empty one (first run, or a cache wiped by hand)."""
    path = cache_dir / FILE_NAME
    try:
        data = json.loads(path.read_bytes())
    except FileNotFoundError:
        return Manifest()
    except (OSError, ValueError) as exc:
        raise IndexStateError(
            f"{path}: unreadable manifest ({exc}); run `vaultmem index --rebuild`"
        ) from None
    if data.get("schema") != SCHEMA:
        return Manifest()
    entries = {path: _entry(raw) for path, raw in data.get("notes", {}).items()}
    return Manifest(entries, data.get("last_index"), int(data.get("lexical_schema", 0)))


def _entry(raw: Mapping[str, Any]) -> Entry:
    return Entry(
        mtime_ns=int(raw["mtime_ns"]),
        size=int(raw["size"]),
        hash=str(raw["hash"]),
        title=str(raw.get("title", "")),
        aliases=tuple(raw.get("aliases", ())),
        type=str(raw.get("type", "note")),
        status=str(raw.get("status", "active")),
        tags=tuple(raw.get("tags", ())),
        memory=dict(raw.get("memory", {})),
        quality=float(raw.get("quality", 0.0)),
    )


def save(cache_dir: Path, manifest: Manifest) -> None:
    """Write the manifest atomically (sorted keys: stable, diffable when debugging)."""
    notes = {}
    for path in sorted(manifest.entries):
        notes[path] = asdict(manifest.entries[path])
    data = {
        "schema": SCHEMA,
        "last_index": manifest.last_index,
        "lexical_schema": manifest.lexical_schema,
        "notes": notes,
    }
    cache_dir.mkdir(parents=True, exist_ok=True)
    atomic_write(cache_dir / FILE_NAME, json.dumps(data, ensure_ascii=False).encode("utf-8"))


def entry_for(note: Note) -> Entry:
    """The manifest entry of a freshly parsed note."""
    return Entry(
        note.mtime_ns,
        note.size,
        note.content_hash,
        note.title,
        note.aliases,
        note.type,
        note.status,
        note.tags,
        memory_keys(note.meta),
        note.quality,
    )


def memory_keys(meta: Mapping[Any, Any]) -> dict[str, Any]:
    """vaultmem's own keys of a frontmatter, as JSON values (dates become ISO text)."""
    return {key: _jsonable(meta[key]) for key in OWNED_KEYS if key in meta}


def _jsonable(value: Any) -> Any:
    if isinstance(value, date | datetime):
        return iso(value)
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def plan(manifest: Manifest, files: Iterable[FileStat]) -> Plan:
    """Compare the walk with the manifest using stat data only (no file is read here)."""
    new, changed, unchanged = [], [], []
    seen = set()
    for f in files:
        seen.add(f.path)
        old = manifest.entries.get(f.path)
        if old is None:
            new.append(f)
        elif old.mtime_ns == f.mtime_ns and old.size == f.size:
            unchanged.append(f)
        else:
            changed.append(f)
    removed = tuple(sorted(set(manifest.entries) - seen))
    return Plan(tuple(new), tuple(changed), tuple(unchanged), removed)
