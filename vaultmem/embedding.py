"""`embed`: the resumable sweep that gives every fragment a vector for the current model.

Vectors are keyed by fragment content hash, so the sweep is idempotent: whatever a killed
run stored stays stored, and the next run embeds only what is still missing. Which note
owns which fragments lives in the manifest's fragment rows (keyed by note content hash,
so a moved or renamed note keeps its fragments and vectors). A per-model record of the
ids known to be stored lets a sweep with nothing to do finish without opening Chroma or
a model.

All of it is a cache: a row or file that is missing, truncated or garbage is rebuilt
from the vault (and the vector store from the notes), and the report says so.
"""

from __future__ import annotations

import secrets
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from vaultmem.atomic import atomic_write
from vaultmem.config import Config
from vaultmem.errors import EndpointError, NoteError, VaultmemError
from vaultmem.index import manifest as mf
from vaultmem.index.records import (
    CHROMA_DIR,
    RECORDS_DIR,
    STORE_MARK,
    FragmentCache,
    FragmentRef,
    append_record,
    fragment_map,
    migrate_fragments,
    note_fragments,
    parse_record,
    record_path,
    recorded_models,
    store_id,
    store_looks_sound,
    write_record,
)
from vaultmem.inference.base import Embedder
from vaultmem.note import Note, parse_note
from vaultmem.vault import vault_lock

if TYPE_CHECKING:
    from vaultmem.index.vectors import VectorStore

Progress = Callable[[int, int], None]
_STORE_VOID = "the vector store was missing, replaced or damaged"
# Vectors are stored after every chunk: a killed sweep loses at most one chunk of work
# (64 fragments: seconds locally, one or two requests to an endpoint).
CHUNK = 64


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
        note = parse_note(path, raw, keys=config.keys)
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
        if not manifest.entries and not manifest.generation:
            raise mf.not_indexed()  # indexed with no notes (a new vault): nothing to embed
        legacy_problem = _migrate_fragments(cache_dir)
        frag_cache = FragmentCache.load(cache_dir, embedder.max_chars)
        plan = _plan(config, manifest, frag_cache)
        wanted = plan.wanted()
        record = record_path(cache_dir, embedder.model_id)
        first_sweep = not record.exists()
        known, recorded_store, record_problem = parse_record(record)
        healed = [why for why in (legacy_problem, frag_cache.damaged, record_problem) if why]
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
            _refresh_snapshot(config, embedder)
        _prepare(embedder)
        # A note written during the sweep was re-linked under its new content: kept.
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


def _migrate_fragments(cache_dir: Path) -> str:
    """An older vaultmem's ``fragments.json`` moved into the manifest; why it was unusable
    ("" when it was fine or absent)."""
    store = mf.open_reader(cache_dir)
    if store is None:
        return ""
    with store:
        try:
            return migrate_fragments(store, cache_dir, heal=True)
        except sqlite3.Error as exc:
            raise mf.damaged(store.path, exc) from None


def _record_holds(cache_dir: Path, recorded_store: str) -> bool:
    """Whether a record naming ``recorded_store`` still describes the embedded store."""
    return (
        bool(recorded_store)
        and recorded_store == store_id(cache_dir)
        and (store_looks_sound(cache_dir))
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
            append_record(record, embedder.model_id, ids, mark)
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


def _prepare(embedder: Embedder) -> None:
    """Let an in-process model file what makes a later one-shot load cheap (the shipped
    graph's optimised copy, :meth:`~vaultmem.inference.local.LocalEmbedder.prepare`); a
    failure only leaves a hook's prompt on the slower load."""
    prepare = getattr(embedder, "prepare", None)
    if prepare is not None:
        with suppress(VaultmemError):
            prepare()


def _refresh_snapshot(config: Config, embedder: Embedder) -> None:
    """File the flat snapshot of what the sweep left, so that the next one-shot read (a
    `vsearch`, a hook's prompt) needs no Chroma; a snapshot that cannot be built now is
    built by the first reader, as before."""
    if config.chroma.host:
        return  # a Chroma server has no snapshot
    from vaultmem.index.vector_reads import StoredVectors

    try:
        with StoredVectors.open(
            config.cache_dir, embedder.model_id, embedder.dimension, config.chroma
        ) as reader:
            reader.count()
    except VaultmemError:
        return


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


# -- health, for `doctor` -----------------------------------------------------------------


@dataclass(frozen=True)
class VectorCheck:
    """One collection of the vector store, compared with the indexed notes (for `doctor`).

    Only the configured model's collection (``current``) is compared: another model's
    vectors are kept apart on purpose (switching back costs nothing) and never pruned.
    """

    model: str
    dimension: int
    stored: int
    current: bool
    orphans: int = 0  # stored vectors that no indexed fragment owns
    missing: int = 0  # fragments of indexed notes without a vector
    unrecorded: int = 0  # listed as stored by the record but absent: no sweep would add them


def check_vectors(config: Config, model_id: str | None, max_chars: int) -> list[VectorCheck]:
    """Every vaultmem collection in the store; ``model_id``'s compared with the notes.

    Opens Chroma, never a model. Raises IndexStateError (EndpointError for a server)
    when the store cannot be read.
    """
    from vaultmem.index.vectors import VectorStore, stored_models

    wanted = set(fragment_map(config, max_chars)) if model_id else set()
    out = []
    for model, dim, count in stored_models(config.cache_dir, config.chroma):
        if model != model_id:
            out.append(VectorCheck(model, dim, count, current=False))
            continue
        with VectorStore.open(config.cache_dir, model, dim, config.chroma) as store:
            ids = store.ids()
        lost = _unrecorded(config, model, ids)[0]
        out.append(
            VectorCheck(model, dim, len(ids), True, len(ids - wanted), len(wanted - ids), len(lost))
        )
    return out


def _unrecorded(config: Config, model_id: str, ids: set[str]) -> tuple[set[str], set[str], str]:
    """(ids the record lists that ``ids`` lacks, the record's ids, its store mark).

    Only a record the sweep trusts matters: it skips what the record lists.
    """
    known, mark, _ = parse_record(record_path(config.cache_dir, model_id))
    if config.chroma.host or not _record_holds(config.cache_dir, mark):
        return set(), known, mark
    return known - ids, known, mark


def prune_vectors(config: Config, model_id: str, max_chars: int) -> tuple[int, int]:
    """Drop ``model_id``'s vectors that no indexed fragment owns, and strike from its record
    the ids the store lacks (so the next `embed` adds them). Never embeds.

    Takes the embed lock without waiting (LockBusy while a sweep runs). Returns
    (vectors dropped, record ids struck).
    """
    from vaultmem.index.vectors import VectorStore, stored_models

    dropped = struck = 0
    with vault_lock(config.cache_dir, timeout=0, what="doctor", name="embed.lock"):
        wanted = set(fragment_map(config, max_chars))
        for model, dim, _ in stored_models(config.cache_dir, config.chroma):
            if model != model_id:
                continue
            with VectorStore.open(config.cache_dir, model, dim, config.chroma) as store:
                ids = store.ids()
                orphans = ids - wanted
                store.delete(orphans)
            lost, known, mark = _unrecorded(config, model, ids - orphans)
            if lost or known & orphans:
                keep = known & (ids - orphans)
                write_record(record_path(config.cache_dir, model), model, keep, mark)
            dropped, struck = dropped + len(orphans), struck + len(lost)
    return dropped, struck


def discard_store(config: Config) -> None:
    """Delete an embedded store that cannot be read, and its records, under the embed lock
    (LockBusy while a sweep runs); the next `embed` rebuilds both from the notes."""
    with vault_lock(config.cache_dir, timeout=0, what="doctor", name="embed.lock"):
        _wipe_store(config.cache_dir)
