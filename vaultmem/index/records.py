"""Which fragments each note has, and which of them have vectors: vaultmem's own files
beside the vector store (``fragments.json``, one ``vectors/<model>.ids`` record per
model, the store's id mark). Reading them needs no model and no Chroma, so `status`,
`doctor` and the search commands can tell cheaply what is embedded.

Every one of these files is a cache: one that is missing, truncated or garbage reads as
empty (or void), and the embed sweep rebuilds it from the vault.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from vaultmem.atomic import atomic_write
from vaultmem.config import Config
from vaultmem.fragments import Fragment, fragments
from vaultmem.index import manifest as mf
from vaultmem.note import Note
from vaultmem.vault import make_cache, vault_lock

FRAGMENTS_FILE = "fragments.json"
# Held only while ``fragments.json`` is read, merged and replaced: by a write that
# re-links its notes' fragments and by the embed sweep's final save, so neither loses
# what the other wrote meanwhile.
FRAGMENTS_LOCK = "fragments.lock"
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


class FragmentCache:
    """``{max_chars:content_hash: [fragment refs]}`` for every note the sweep has seen."""

    def __init__(
        self,
        path: Path,
        max_chars: int,
        data: dict[str, list[list[object]]],
        damaged: str = "",
    ) -> None:
        self.path = path
        self.max_chars = max_chars
        self._data = data
        self.damaged = damaged  # why the file on disk was unusable ("" when it was fine)

    @classmethod
    def load(cls, cache_dir: Path, max_chars: int) -> FragmentCache:
        """Read the cache (empty when missing or unreadable: it is only a cache)."""
        path = cache_dir / FRAGMENTS_FILE
        try:
            data = json.loads(path.read_bytes())
        except FileNotFoundError:
            return cls(path, max_chars, {})
        except (OSError, ValueError) as exc:
            return cls(path, max_chars, {}, f"{FRAGMENTS_FILE} was unreadable ({exc})")
        if not isinstance(data, dict):
            return cls(path, max_chars, {}, f"{FRAGMENTS_FILE} was not a fragment cache")
        return cls(path, max_chars, data)

    def _key(self, content_hash: str) -> str:
        return f"{self.max_chars}:{content_hash}"

    def get(self, content_hash: str) -> list[FragmentRef] | None:
        """The fragments of a note with this content, if known."""
        rows = self._data.get(self._key(content_hash))
        if rows is None:
            return None
        try:
            return [FragmentRef(str(r[0]), int(r[1]), int(r[2]), str(r[3])) for r in rows]  # type: ignore[call-overload]
        except (TypeError, ValueError, IndexError, KeyError):
            return None  # a damaged row: the note is split again

    def put(self, content_hash: str, frags: Iterable[Fragment]) -> list[FragmentRef]:
        """Remember a note's fragments; returns their refs."""
        refs = _refs(frags)
        self._data[self._key(content_hash)] = _rows(refs)
        return refs

    def prune(self, content_hashes: Iterable[str]) -> None:
        """Forget notes (of this fragment size) that no longer exist."""
        keep = {self._key(h) for h in content_hashes}
        prefix = f"{self.max_chars}:"
        self._data = {k: v for k, v in self._data.items() if not k.startswith(prefix) or k in keep}

    def save(self) -> None:
        """Write the cache atomically."""
        atomic_write(self.path, json.dumps(self._data, separators=(",", ":")).encode())

    def save_merged(self, live: Callable[[], Iterable[str]], timeout: float) -> None:
        """Write the cache, keeping what writes re-linked since it was loaded.

        Under the fragments lock, this size's rows are laid over what the file holds now
        (other sizes are other sweeps' business: kept as they are on disk), then this size
        is pruned to ``live()``: the content hashes indexed at this moment (a note
        touched during the sweep has a new one).
        """
        prefix = f"{self.max_chars}:"
        mine = {key: rows for key, rows in self._data.items() if key.startswith(prefix)}
        with vault_lock(self.path.parent, timeout=timeout, what="embed", name=FRAGMENTS_LOCK):
            self._data = {**_read_data(self.path), **mine}
            self.prune(live())
            self.save()


def _read_data(path: Path) -> dict[str, list[list[object]]]:
    """The rows of ``fragments.json`` ({} when it is missing or unusable: only a cache)."""
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _file_stamp(path: Path) -> tuple[int, int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_size)


def _refs(frags: Iterable[Fragment]) -> list[FragmentRef]:
    return [
        FragmentRef(f.hash, f.start_line, f.end_line, " > ".join(f.heading_path)) for f in frags
    ]


def _rows(refs: Iterable[FragmentRef]) -> list[list[object]]:
    """Refs as ``fragments.json`` stores them."""
    return [[r.hash, r.start_line, r.end_line, r.heading] for r in refs]


class FragmentRelink:
    """The fragments of notes a write re-indexed, filed under their new content hash.

    ``fragments.json`` is keyed by a note's whole content, so any write (a touch, a pin,
    a link) files the note under a key the cache lacks, and the note would have no
    vectors until the next `embed`. Vectors are keyed by fragment text, though: a
    fragment whose text the write left alone keeps its vector once the note's new
    content names it. So each re-indexed note is split again at every fragment size the
    cache holds (one per embedder that swept the vault: no model is needed) and filed
    under its new hash; a changed fragment gets a hash no vector has yet, and `embed`
    embeds only that. Nothing is embedded here.

    A vault never swept has no cache, and then this does nothing at all.
    """

    def __init__(self, cache_dir: Path) -> None:
        """Nothing is read until a note is filed (an `index` that changes nothing reads
        no cache)."""
        self._path = cache_dir / FRAGMENTS_FILE
        self._loaded: tuple[tuple[int, int, int] | None, dict[str, list[list[object]]]] | None
        self._loaded = None
        self._sizes: list[int] = []
        self._rows: dict[str, list[list[object]]] = {}

    def sizes(self) -> list[int]:
        """The fragment sizes the cache holds notes of, read once (no lock: a read)."""
        if self._loaded is None:
            stamp = _file_stamp(self._path)
            self._loaded = (stamp, _read_data(self._path) if stamp is not None else {})
            found = {key.partition(":")[0] for key in self._loaded[1]}
            self._sizes = sorted(int(size) for size in found if size.isdigit())
        return self._sizes

    def add(self, note: Note) -> None:
        """File ``note``'s fragments under its content hash, at every size."""
        for size in self.sizes():
            try:
                frags = note_fragments(note, size)
            except ValueError:  # a size no embedder has (a garbled key): not ours to fill
                continue
            self._rows[f"{size}:{note.content_hash}"] = _rows(_refs(frags))

    def save(
        self, obsolete: Iterable[str], live: Callable[[], Collection[str]], timeout: float
    ) -> None:
        """Write the new rows, and drop those of content no note has any more.

        ``obsolete``: the content hashes the re-indexed notes had before; ``live()`` the
        hashes indexed now (asked only when some may be dropped: a note can share its
        content with another, which still needs the row).
        """
        sizes = self.sizes()
        if not sizes:
            return
        gone = set(obsolete) - {key.partition(":")[2] for key in self._rows}
        if gone:
            gone -= set(live())
        if not self._rows and not gone:
            return
        assert self._loaded is not None
        stamp, data = self._loaded
        with vault_lock(self._path.parent, timeout=timeout, what="write", name=FRAGMENTS_LOCK):
            if _file_stamp(self._path) != stamp:  # a sweep or another write saved it since
                data = _read_data(self._path)
            data.update(self._rows)
            for size in sizes:
                for content in gone:
                    data.pop(f"{size}:{content}", None)
            atomic_write(self._path, json.dumps(data, separators=(",", ":")).encode())


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
