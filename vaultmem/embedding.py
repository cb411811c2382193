"""`embed`: the resumable sweep that gives every fragment a vector for the current model.

Vectors are keyed by fragment content hash, so the sweep is idempotent: whatever a killed
run stored stays stored, and the next run embeds only what is still missing. Which note
owns which fragments lives in ``fragments.json`` (keyed by note content hash, so a moved
or renamed note keeps its fragments and vectors). A per-model record of the ids known to
be stored lets a sweep with nothing to do finish without opening Chroma or a model.

Every one of these files is a cache: one that is missing, truncated or garbage is
rebuilt from the vault (and the vector store from the notes), and the report says so.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from vaultmem.atomic import atomic_write
from vaultmem.config import Config
from vaultmem.errors import EndpointError, IndexStateError, NoteError
from vaultmem.fragments import Fragment, fragments
from vaultmem.index import manifest as mf
from vaultmem.inference.base import Embedder
from vaultmem.note import Note, parse_note
from vaultmem.vault import vault_lock

if TYPE_CHECKING:
    from vaultmem.index.vectors import VectorStore

Progress = Callable[[int, int], None]
FRAGMENTS_FILE = "fragments.json"
RECORDS_DIR = "vectors"
CHROMA_DIR = "chroma"
# Written into the embedded store when vaultmem creates it, and into each vector record:
# a record names the store it describes, so one of a deleted or replaced store is void.
STORE_MARK = "vaultmem-store.id"
_FRAGMENT_ID = re.compile(r"[0-9a-f]{40}")
_SQLITE_MAGIC = b"SQLite format 3\x00"
_STORE_VOID = "the vector store was missing, replaced or damaged"
# Vectors are stored after every chunk: a killed sweep loses at most one chunk of work
# (64 fragments: seconds locally, one or two requests to an endpoint).
CHUNK = 64


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
        refs = [
            FragmentRef(f.hash, f.start_line, f.end_line, " > ".join(f.heading_path)) for f in frags
        ]
        self._data[self._key(content_hash)] = [
            [r.hash, r.start_line, r.end_line, r.heading] for r in refs
        ]
        return refs

    def prune(self, content_hashes: Iterable[str]) -> None:
        """Forget notes (of this fragment size) that no longer exist."""
        keep = {self._key(h) for h in content_hashes}
        prefix = f"{self.max_chars}:"
        self._data = {k: v for k, v in self._data.items() if not k.startswith(prefix) or k in keep}

    def save(self) -> None:
        """Write the cache atomically."""
        atomic_write(self.path, json.dumps(self._data, separators=(",", ":")).encode())


def record_path(cache_dir: Path, model_id: str) -> Path:
    """The file listing the vector ids known to be stored for ``model_id``."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", model_id).strip("-")[:60]
    digest = hashlib.sha1(model_id.encode()).hexdigest()[:8]
    return cache_dir / RECORDS_DIR / f"{slug}-{digest}.ids"


def read_record(path: Path) -> set[str]:
    """Ids recorded as stored (empty when there is no record or it is damaged)."""
    return _parse_record(path)[0]


def _parse_record(path: Path) -> tuple[set[str], str, str]:
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
    path.parent.mkdir(parents=True, exist_ok=True)
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


def _store_looks_sound(cache_dir: Path) -> bool:
    """A cheap look at the embedded store's database (no chromadb import)."""
    db = cache_dir / CHROMA_DIR / "chroma.sqlite3"
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


def _append_record(path: Path, model_id: str, ids: Iterable[str], store: str) -> None:
    if not path.exists():
        write_record(path, model_id, (), store)
    with path.open("a", encoding="ascii") as fh:
        fh.write("".join(f"{i}\n" for i in ids))
        fh.flush()
        os.fsync(fh.fileno())


@dataclass(frozen=True)
class EmbedReport:
    """What one sweep did."""

    model: str
    notes: int
    fragments: int
    embedded: int
    removed: int
    skipped: tuple[str, ...]
    seconds: float
    other_models: tuple[str, ...] = ()  # models with vectors too: a model switch, explained
    healed: str = ""  # damaged caches found and rebuilt ("" when none was)

    def as_json(self) -> dict[str, object]:
        """The ``--json`` shape."""
        return {
            "model": self.model,
            "notes": self.notes,
            "fragments": self.fragments,
            "embedded": self.embedded,
            "removed": self.removed,
            "skipped": list(self.skipped),
            "seconds": round(self.seconds, 3),
            "other_models": list(self.other_models),
            "healed": self.healed,
        }

    @property
    def summary(self) -> str:
        """The one-line summary `embed` prints."""
        line = (
            f"{self.embedded} fragments embedded, {self.fragments - self.embedded} already "
            f"current, {self.removed} removed ({self.notes} notes, model {self.model}) "
            f"in {self.seconds:.2f}s"
        )
        if self.other_models:
            # A model switch: say why everything was embedded again, and what is kept.
            line += (
                f"; vectors of {', '.join(self.other_models)} are kept apart in their own "
                "collection and never mixed with these"
            )
        return line


@dataclass
class _Plan:
    refs: dict[str, list[FragmentRef]] = field(default_factory=dict)  # note path → refs
    texts: dict[str, str] = field(default_factory=dict)  # fragment hash → text, when read
    skipped: list[str] = field(default_factory=list)

    def wanted(self) -> set[str]:
        return {r.hash for refs in self.refs.values() for r in refs}


def _read(config: Config, path: str, entry: mf.Entry) -> Note | None:
    try:
        raw = (config.vault / path).read_bytes()
        note = parse_note(path, raw)
    except (OSError, NoteError):
        return None
    # Edited since the last index: the lexical index is stale too; the next index fixes both.
    return note if note.content_hash == entry.hash else None


def _plan(config: Config, manifest: mf.Manifest, cache: FragmentCache) -> _Plan:
    plan = _Plan()
    for path, entry in manifest.entries.items():
        refs = cache.get(entry.hash)
        if refs is None:
            note = _read(config, path, entry)
            if note is None:
                plan.skipped.append(path)
                continue
            frags = note_fragments(note, cache.max_chars)
            refs = cache.put(entry.hash, frags)
            plan.texts.update((f.hash, f.text) for f in frags)
        plan.refs[path] = refs
    return plan


def _texts_for(
    config: Config, manifest: mf.Manifest, plan: _Plan, missing: set[str], max_chars: int
) -> dict[str, str]:
    """Text of every missing fragment, re-reading the notes whose fragments were cached."""
    texts = {h: plan.texts[h] for h in missing if h in plan.texts}
    for path, refs in plan.refs.items():
        if len(texts) == len(missing):
            break
        if not any(r.hash in missing and r.hash not in texts for r in refs):
            continue
        note = _read(config, path, manifest.entries[path])
        if note is not None:
            texts.update(
                (f.hash, f.text) for f in note_fragments(note, max_chars) if f.hash in missing
            )
    return texts


def _chunks(items: list[tuple[str, str]], size: int) -> Iterator[list[tuple[str, str]]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def embed_vault(
    config: Config,
    embedder: Embedder,
    *,
    force: bool = False,
    progress: Progress | None = None,
    chunk: int = CHUNK,
) -> EmbedReport:
    """Embed every fragment of the indexed notes that lacks a vector for this model.

    Takes the vault's embed lock without waiting (LockBusy, exit 75, when another sweep
    runs). ``force`` re-embeds everything.

    Example:
        >>> embed_vault(config, LocalEmbedder()).summary  # doctest: +SKIP
    """
    started = time.perf_counter()
    cache_dir = config.cache_dir
    with vault_lock(cache_dir, timeout=0, what="embed", name="embed.lock"):
        manifest = mf.load(cache_dir)
        if not manifest.entries:
            raise IndexStateError("the vault is not indexed yet: run `vaultmem index`")
        frag_cache = FragmentCache.load(cache_dir, embedder.max_chars)
        plan = _plan(config, manifest, frag_cache)
        wanted = plan.wanted()
        record = record_path(cache_dir, embedder.model_id)
        first_sweep = not record.exists()
        known, recorded_store, record_problem = _parse_record(record)
        healed = [why for why in (frag_cache.damaged, record_problem) if why]
        if not config.chroma.host and not _record_holds(cache_dir, recorded_store):
            if known and recorded_store:
                healed.append(_STORE_VOID)
            known = set()  # the store was deleted, replaced or damaged: the record is void
        embedded = removed = 0
        if force or config.chroma.host or wanted - known or known - wanted:
            embedded, removed, store_problem = _sweep(
                config, embedder, manifest, plan, wanted, force, record, progress, chunk
            )
            if store_problem:  # the precise reason replaces the guess
                healed = [h for h in healed if h != _STORE_VOID] + [store_problem]
        frag_cache.prune(e.hash for e in manifest.entries.values())
        frag_cache.save()
    return EmbedReport(
        model=embedder.model_id,
        notes=len(plan.refs),
        fragments=len(wanted),
        embedded=embedded,
        removed=removed,
        skipped=tuple(plan.skipped),
        seconds=time.perf_counter() - started,
        other_models=tuple(m for m in recorded_models(cache_dir) if m != embedder.model_id)
        if first_sweep
        else (),
        healed="; ".join(healed),
    )


def _record_holds(cache_dir: Path, recorded_store: str) -> bool:
    """Whether a record naming ``recorded_store`` still describes the embedded store."""
    return (
        bool(recorded_store)
        and recorded_store == store_id(cache_dir)
        and (_store_looks_sound(cache_dir))
    )


def _sweep(
    config: Config,
    embedder: Embedder,
    manifest: mf.Manifest,
    plan: _Plan,
    wanted: set[str],
    force: bool,
    record: Path,
    progress: Progress | None,
    chunk: int,
) -> tuple[int, int, str]:
    """Embed what the store lacks, drop what no note uses.

    Returns (embedded, removed, why the store had to be rebuilt: "" when it did not).
    """
    store, stored, healed = _open_store(config, embedder)
    mark = "" if config.chroma.host else _mark_store(config.cache_dir)
    try:
        missing = set(wanted) if force else wanted - stored
        write_record(record, embedder.model_id, stored & wanted, mark)
        texts = _texts_for(config, manifest, plan, missing, embedder.max_chars)
        # Length order keeps every batch's padding short; ties by id for determinism.
        todo = sorted(texts.items(), key=lambda item: (len(item[1]), item[0]))
        done = 0
        for part in _chunks(todo, chunk):
            vectors = embedder.embed([text for _, text in part])
            ids = [h for h, _ in part]
            store.upsert(ids, vectors)
            _append_record(record, embedder.model_id, ids, mark)
            done += len(part)
            if progress is not None:
                progress(done, len(todo))
        orphans = stored - wanted
        if orphans:
            store.delete(orphans)
        write_record(record, embedder.model_id, (stored | set(texts)) & wanted, mark)
        return done, len(orphans), healed
    finally:
        store.close()


def _open_store(config: Config, embedder: Embedder) -> tuple[VectorStore, set[str], str]:
    """The model's store and its ids; an embedded store that cannot be read is rebuilt.

    Returns (store, stored ids, why it was rebuilt: "" when it was not). A Chroma
    server's errors are the server's business and are raised as they are.
    """
    from vaultmem.index.vectors import VectorStore

    dimension = embedder.dimension  # may ask an endpoint: its failure is not the store's

    def opened() -> tuple[VectorStore, set[str]]:
        store = VectorStore.open(config.cache_dir, embedder.model_id, dimension, config.chroma)
        try:
            return store, store.ids()
        except BaseException:
            store.close()
            raise

    try:
        return (*opened(), "")
    except (KeyboardInterrupt, SystemExit, EndpointError):
        raise
    except BaseException as exc:  # chromadb's Rust core panics with a BaseException
        if config.chroma.host:
            raise
        why = f"the vector store was unreadable ({exc})"
    _wipe_store(config.cache_dir)
    return (*opened(), why)


def _wipe_store(cache_dir: Path) -> None:
    """Delete the embedded store and every record describing it (all are derivable)."""
    from vaultmem.index.vectors import discard_embedded

    discard_embedded(cache_dir)
    for path in (cache_dir / RECORDS_DIR).glob("*.ids"):
        path.unlink(missing_ok=True)


def _mark_store(cache_dir: Path) -> str:
    """The embedded store's id, written into it first if it has none."""
    found = store_id(cache_dir)
    if found:
        return found
    made = secrets.token_hex(8)
    atomic_write(cache_dir / CHROMA_DIR / STORE_MARK, made.encode("ascii"))
    return made


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
