"""Which fragments each note has, and which of them have vectors: the manifest's fragment
rows and vaultmem's own files beside the vector store (one ``vectors/<model>.ids`` record
per model, the store's id mark). Reading them needs no model and no Chroma, so `status`,
`doctor` and the search commands can tell cheaply what is embedded.

All of it is a cache: a row or file that is missing, truncated or garbage reads as empty
(or void), and the embed sweep rebuilds it from the vault.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vaultmem.atomic import atomic_write
from vaultmem.config import Config
from vaultmem.errors import IndexStateError
from vaultmem.fragments import Fragment, fragments
from vaultmem.index import manifest as mf
from vaultmem.note import Note
from vaultmem.vault import make_cache

# Where an older vaultmem kept every note's fragments, in one file that each write read
# and replaced whole; now rows of the manifest. Moved there by the first write or sweep.
LEGACY_FRAGMENTS_FILE = "fragments.json"
RECORDS_DIR = "vectors"
CHROMA_DIR = "chroma"
STORE_DATABASE = "chroma.sqlite3"  # the embedded store's database, inside CHROMA_DIR
# Written into the embedded store when vaultmem creates it, and into each vector record:
# a record names the store it describes, so one of a deleted or replaced store is void.
STORE_MARK = "vaultmem-store.id"
_FRAGMENT_ID = re.compile(r"[0-9a-f]{40}")
_SQLITE_MAGIC = b"SQLite format 3\x00"


@dataclass(frozen=True)
class FragmentRef:
    """Where one fragment of a note lies; its vector is keyed by ``hash``."""

    hash: str
    start_line: int
    end_line: int
    heading: str = ""


def note_fragments(note: Note, max_chars: int) -> list[Fragment]:
    """The embeddable fragments of a note.

    A title taken from the file name is left out of the text, so renaming such a note
    does not change its fragments (and does not re-embed it).
    """
    title = "" if note.title_source == "file" else note.title
    return fragments(
        note.body, title=title, body_start_line=note.body_start_line, max_chars=max_chars
    )


_Rows = list[list[object]]  # a note's fragment refs as stored: [[hash, start, end, heading]]


class FragmentCache:
    """content hash → fragment refs, at one fragment size, for every note content the
    sweep has split: the manifest's fragment rows (or, until the first write or sweep
    moves it there, an older vaultmem's ``fragments.json``).

    Rows are decoded as they are asked for; one that does not decode reads as unknown (the
    note is split again) and is counted in :attr:`damaged`.
    """

    def __init__(
        self,
        cache_dir: Path,
        max_chars: int,
        rows: Mapping[str, str | _Rows],
        problem: str = "",
    ) -> None:
        self.cache_dir = cache_dir
        self.max_chars = max_chars
        self._rows = dict(rows)  # content hash → refs (JSON text as read, or decoded)
        self._new: dict[str, str] = {}  # rows split by this sweep, as JSON, to save
        self._bad: set[str] = set()
        self._problem = problem

    @classmethod
    def load(cls, cache_dir: Path, max_chars: int) -> FragmentCache:
        """This size's rows (none when the vault was never swept: only a cache)."""
        rows: Mapping[str, str | _Rows]
        try:
            rows = mf.read(cache_dir, {}, lambda store: store.fragment_rows(max_chars))
        except IndexStateError:  # an unreadable manifest: `index` rebuilds it, rows and all
            rows = {}
        problem = ""
        if not rows:
            legacy, problem = _read_legacy(cache_dir)
            prefix = f"{max_chars}:"
            found = (legacy or {}).items()
            rows = {key[len(prefix) :]: refs for key, refs in found if key.startswith(prefix)}
        return cls(cache_dir, max_chars, rows, problem)

    @property
    def damaged(self) -> str:
        """Why rows read so far were unusable ("" when they were fine)."""
        bad = f"{len(self._bad)} fragment rows were unreadable" if self._bad else ""
        return "; ".join(why for why in (self._problem, bad) if why)

    def get(self, content_hash: str) -> list[FragmentRef] | None:
        """The fragments of a note with this content, if known."""
        refs = self._rows.get(content_hash)
        if refs is None:
            return None
        try:
            rows: Any = json.loads(refs) if isinstance(refs, str) else refs
            return [FragmentRef(str(r[0]), int(r[1]), int(r[2]), str(r[3])) for r in rows]
        except (TypeError, ValueError, IndexError, KeyError):
            self._bad.add(content_hash)  # a damaged row: the note is split again
            return None

    def put(self, content_hash: str, frags: Iterable[Fragment]) -> list[FragmentRef]:
        """Remember a note's fragments (saved by :meth:`save`); returns their refs."""
        refs = _refs(frags)
        self._rows[content_hash] = rows = _rows(refs)
        self._new[content_hash] = _json(rows)
        return refs

    def save(self) -> None:
        """Write the rows split since loading, and drop this size's rows of content no
        note holds now, in one manifest commit.

        The manifest says what is indexed at that moment, so a note a write re-linked
        meanwhile keeps its new row, and its old one goes. Nothing is saved when the
        manifest has gone (the next `index` rebuilds it, and the next sweep splits again).
        """
        store = mf.open_reader(self.cache_dir)
        if store is None:
            return
        with store:
            try:
                if store.current():
                    with store.transaction():
                        rows = ((self.max_chars, c, r) for c, r in self._new.items())
                        store.put_fragments(rows)
                        store.prune_fragments(self.max_chars)
            except sqlite3.Error as exc:
                raise mf.damaged(store.path, exc) from None


def _json(rows: _Rows) -> str:
    return json.dumps(rows, separators=(",", ":"))


def _read_legacy(cache_dir: Path) -> tuple[dict[str, _Rows] | None, str]:
    """The rows of an older vaultmem's ``fragments.json`` (None when there is none) and why
    it was unusable ("" when it was fine)."""
    try:
        data = json.loads((cache_dir / LEGACY_FRAGMENTS_FILE).read_bytes())
    except FileNotFoundError:
        return None, ""
    except (OSError, ValueError) as exc:
        return {}, f"{LEGACY_FRAGMENTS_FILE} was unreadable ({exc})"
    if not isinstance(data, dict):
        return {}, f"{LEGACY_FRAGMENTS_FILE} was not a fragment cache"
    return data, ""


def migrate_fragments(store: mf.Store, cache_dir: Path, *, heal: bool) -> str:
    """Move an older vaultmem's ``fragments.json`` into the manifest and remove it.

    Rows the manifest has already win (they are newer); rows of content no note holds
    are dropped. Returns why the file was unusable ("" when it was fine or absent); an
    unusable file is removed only when ``heal`` (the embed sweep, which reports it: a
    write leaves it to the sweep). Call outside a transaction.
    """
    legacy, problem = _read_legacy(cache_dir)
    if legacy is None:
        return ""
    rows = []
    for key, refs in legacy.items():
        size, _, content = key.partition(":")
        if size.isdigit() and content and isinstance(refs, list):
            rows.append((int(size), content, _json(refs)))
    if rows:
        with store.transaction():
            store.put_fragments(rows, keep=True)
            store.prune_fragments()
    if heal or not problem:
        with contextlib.suppress(FileNotFoundError):
            (cache_dir / LEGACY_FRAGMENTS_FILE).unlink()
    return problem


def _refs(frags: Iterable[Fragment]) -> list[FragmentRef]:
    return [
        FragmentRef(f.hash, f.start_line, f.end_line, " > ".join(f.heading_path)) for f in frags
    ]


def _rows(refs: Iterable[FragmentRef]) -> _Rows:
    """Refs as the fragment rows store them."""
    return [[r.hash, r.start_line, r.end_line, r.heading] for r in refs]


class FragmentRelink:
    """The fragments of notes a write re-indexed, filed under their new content hash.

    Fragment rows are keyed by a note's whole content, so any write (a touch, a pin, a
    link) files the note under a key that has no row, and the note would have no vectors
    until the next `embed`. Vectors are keyed by fragment text, though: a fragment whose
    text the write left alone keeps its vector once the note's new content names it. So
    each re-indexed note is split again at every fragment size that has rows (one per
    embedder that swept the vault: no model is needed) and filed under its new hash, in
    the manifest commit that records the note; a changed fragment gets a hash no vector
    has yet, and `embed` embeds only that. Nothing is embedded here, and only the rows
    of the written notes are read or written, however big the vault.

    A vault never swept has no rows, and then this files nothing.
    """

    def __init__(self, store: mf.Store, cache_dir: Path) -> None:
        """Nothing is read until a note is filed (an `index` that changes nothing reads
        no rows)."""
        self._store = store
        self._cache_dir = cache_dir
        self._sizes: list[int] | None = None
        self._failed: Exception | None = None
        self._rows: dict[tuple[int, str], str] = {}  # (size, content hash) → refs JSON

    def _known_sizes(self) -> list[int]:
        if self._sizes is None:
            try:
                self._sizes = self._store.fragment_sizes()
                if not self._sizes and (self._cache_dir / LEGACY_FRAGMENTS_FILE).exists():
                    migrate_fragments(self._store, self._cache_dir, heal=False)
                    self._sizes = self._store.fragment_sizes()
            except (sqlite3.Error, OSError) as exc:
                self._failed, self._sizes = exc, []
        return self._sizes

    def add(self, note: Note) -> None:
        """File ``note``'s fragments under its content hash, at every size."""
        for size in self._known_sizes():
            try:
                frags = note_fragments(note, size)
            except ValueError:  # a size no embedder has (a garbled row): not ours to fill
                continue
            self._rows[(size, note.content_hash)] = _json(_rows(_refs(frags)))

    def save(self, obsolete: Iterable[str]) -> None:
        """Write the new rows, and drop those of content no note has any more.

        ``obsolete``: the content hashes the re-indexed notes had before (a note can share
        its content with another, which keeps the row). Call inside the transaction that
        wrote the notes' rows, after them: a failure here is rolled back alone and raised.
        """
        if self._failed is not None:
            raise self._failed
        sizes = self._sizes if self._sizes is not None else self._store.fragment_sizes()
        gone = set(obsolete) - {content for _, content in self._rows}
        if not sizes or (not self._rows and not gone):
            return
        with self._store.savepoint():
            self._store.put_fragments((s, c, refs) for (s, c), refs in self._rows.items())
            self._store.drop_unheld_fragments(gone)


def record_path(cache_dir: Path, model_id: str) -> Path:
    """The file listing the vector ids known to be stored for ``model_id``."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", model_id).strip("-")[:60]
    digest = hashlib.sha1(model_id.encode()).hexdigest()[:8]
    return cache_dir / RECORDS_DIR / f"{slug}-{digest}.ids"


def read_record(path: Path) -> set[str]:
    """Ids recorded as stored (empty when there is no record or it is damaged)."""
    return parse_record(path)[0]


def parse_record(path: Path) -> tuple[set[str], str, str]:
    """(ids, the store id it describes, why it is void: "" when sound)."""
    try:
        lines = path.read_bytes().decode("ascii").split("\n")
    except FileNotFoundError:
        return set(), "", ""
    except (OSError, ValueError) as exc:
        return set(), "", f"vector record {path.name} was unreadable ({exc})"
    ids, store = set(), ""
    for line in lines[:-1] if lines and not lines[-1] else lines:
        if line.startswith("# store "):
            store = line[len("# store ") :].strip()
        elif not line.startswith("#") and not _FRAGMENT_ID.fullmatch(line):
            return set(), "", f"vector record {path.name} was damaged"
        elif not line.startswith("#"):
            ids.add(line)
    return ids, store, ""


def write_record(path: Path, model_id: str, ids: Iterable[str], store: str = "") -> None:
    """Replace the record (first line names the model, for `status`; then the store)."""
    make_cache(path.parent.parent)  # see record_path
    path.parent.mkdir(exist_ok=True)
    body = "".join(f"{i}\n" for i in sorted(ids))
    head = f"# {model_id}\n" + (f"# store {store}\n" if store else "")
    atomic_write(path, f"{head}{body}".encode("ascii", "replace"))


def store_id(cache_dir: Path) -> str:
    """The id vaultmem wrote into its embedded store ("" when it has none)."""
    try:
        text = (cache_dir / CHROMA_DIR / STORE_MARK).read_bytes().decode("ascii").strip()
    except (OSError, ValueError):
        return ""
    return text if re.fullmatch(r"[0-9a-f]{16}", text) else ""


def store_looks_sound(cache_dir: Path) -> bool:
    """A cheap look at the embedded store's database (no chromadb import)."""
    db = cache_dir / CHROMA_DIR / STORE_DATABASE
    try:
        with db.open("rb") as fh:
            header = fh.read(100)
        size = db.stat().st_size
    except OSError:
        return False
    if len(header) < 100 or not header.startswith(_SQLITE_MAGIC):
        return False
    page = int.from_bytes(header[16:18], "big") or 65536
    return size >= page * int.from_bytes(header[28:32], "big")


def recorded_models(cache_dir: Path) -> list[str]:
    """Every model id that has a vector record in this cache."""
    out = []
    for path in sorted((cache_dir / RECORDS_DIR).glob("*.ids")):
        with path.open(encoding="ascii", errors="replace") as fh:
            first = fh.readline()
        if first.startswith("# "):
            out.append(first[2:].strip())
    return out


def append_record(path: Path, model_id: str, ids: Iterable[str], store: str) -> None:
    if not path.exists():
        write_record(path, model_id, (), store)
    with path.open("a", encoding="ascii") as fh:
        fh.write("".join(f"{i}\n" for i in ids))
        fh.flush()
        os.fsync(fh.fileno())


def fragment_map(
    config: Config, max_chars: int, manifest: mf.Manifest | None = None
) -> dict[str, list[tuple[str, FragmentRef]]]:
    """fragment hash → [(note path, ref)] for every indexed note with known fragments.

    Pass ``manifest`` when the caller has already loaded it.
    """
    manifest = manifest if manifest is not None else mf.load(config.cache_dir)
    cache = FragmentCache.load(config.cache_dir, max_chars)
    out: dict[str, list[tuple[str, FragmentRef]]] = {}
    for path, entry in manifest.entries.items():
        for ref in cache.get(entry.hash) or ():
            out.setdefault(ref.hash, []).append((path, ref))
    return out


def coverage(
    config: Config, model_id: str, max_chars: int, hashes: Mapping[str, str] | None = None
) -> Mapping[str, int]:
    """Fragments embedded for ``model_id`` out of those known, and notes not yet split.

    ``hashes`` is path → content hash of the indexed notes (read from the manifest when
    not given). Reads only vaultmem's own files (no Chroma, no model): cheap enough for
    `status`.
    """
    if hashes is None:
        hashes = {p: e.hash for p, e in mf.load(config.cache_dir).entries.items()}
    cache = FragmentCache.load(config.cache_dir, max_chars)
    wanted: set[str] = set()
    unsplit = 0
    for content in hashes.values():
        refs = cache.get(content)
        if refs is None:
            unsplit += 1
        else:
            wanted.update(r.hash for r in refs)
    stored = read_record(record_path(config.cache_dir, model_id))
    return {"embedded": len(wanted & stored), "fragments": len(wanted), "unsplit_notes": unsplit}
