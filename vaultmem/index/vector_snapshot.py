"""A read-only flat copy of one vector collection, so a one-shot read needs no Chroma.

Importing chromadb costs about a second, more than all the rest of a one-shot `vsearch`.
A snapshot holds a collection's vectors as a plain ``.npy`` matrix beside its ids, and
answers nearest-neighbour queries by exact cosine (a numpy product over every vector;
Chroma's HNSW is approximate), so a read served from it is as good or better.

Files, in ``<cache>/vectors/snapshots/`` (private: this user's, mode 0700), per collection:

- ``<collection>.generation``: 16 hex digits naming the collection's contents. Every
  write through :class:`~vaultmem.index.vectors.VectorStore` sets a fresh one *before*
  it touches Chroma (:func:`writing`), under the lock.
- ``<collection>.lock``: the ``flock`` each write holds, and each snapshot build.
- ``<collection>.<generation>.npy``: float32 ``(count, dimension)``, the vectors exactly as
  Chroma returns them, one row per id.
- ``<collection>.<generation>.ids``: JSON: what the snapshot is of (model, dimension,
  generation, the store it was read from) and its ids in row order. Written last, so a
  snapshot exists only once both files do.

Why a served snapshot is never older than a completed write: a snapshot is built only
under the lock, from Chroma's contents read under the lock, and filed under the
generation found then; a write holds the same lock and moves the generation on before it
writes. So a snapshot whose generation is the current one was read after every write
that has begun, and a write that crashed half-way left a generation no snapshot has
(the next reader builds one from what the crash left in Chroma). A reader takes no lock:
it reads the generation, then the snapshot filed under it; a write that starts after that
read is one the reader may miss, as a Chroma query an instant earlier would.

A snapshot also records which store it was read from (the store's id mark and the inode
of its database): one of a deleted or replaced store is never served. Only embedded
stores have snapshots (a Chroma server has other clients, whose writes vaultmem cannot
see), and only writes through :class:`VectorStore` move the generation: another program
writing into the same Chroma files, or a vaultmem older than snapshots, is not seen
until the next write through vaultmem.

Everything is a cache: a snapshot that is missing, damaged, of another model or
dimension, in a folder or file another user could have planted, or that fails any check
reads as absent, and the reader falls back to Chroma and builds a new one.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import re
import secrets
import stat
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import cached_property
from pathlib import Path
from typing import TypeAlias

import numpy as np

from vaultmem.atomic import atomic_write
from vaultmem.errors import IndexStateError, VaultmemError
from vaultmem.index.records import CHROMA_DIR, RECORDS_DIR, STORE_DATABASE, store_id
from vaultmem.index.records import store_looks_sound as _store_looks_sound
from vaultmem.vault import make_cache, vault_lock

__all__ = [
    "SNAPSHOT_DIR",
    "Snapshot",
    "Vector",
    "Vectors",
    "as_matrix",
    "current",
    "discard",
    "rebuild",
    "state",
    "store_identity",
    "writing",
]

Vector: TypeAlias = Sequence[float] | np.ndarray
Vectors: TypeAlias = Sequence[Vector] | np.ndarray

SNAPSHOT_DIR = "snapshots"  # inside the vector records' folder (RECORDS_DIR)
_FORMAT = 1
_GENERATION = re.compile(r"[0-9a-f]{16}")
# A write waits this long for a snapshot build (a full read of the collection) to end.
_WRITE_WAIT_S = 120.0
# Matrices above this size are mapped rather than read: pages come in as the product
# needs them, and a server holding the snapshot shares them with the page cache.
_MMAP_BYTES = 8 << 20
# Queries multiplied at once: bounds the (queries x vectors) score block in memory.
_QUERY_BLOCK = 256


# -- checking vectors --------------------------------------------------------------------


def as_matrix(embeddings: Vectors, *, dimension: int, model_id: str, where: str) -> np.ndarray:
    """``embeddings`` as a float32 ``(n, dimension)`` matrix, refused when unusable.

    Chroma would store a NaN or a zero vector and then answer with garbage (cosine
    normalisation divides by the norm), and its dimension error names no model; the
    snapshot's product would do the same. One check for both, before either sees them.
    """
    if isinstance(embeddings, np.ndarray):
        matrix = embeddings.astype(np.float32, copy=False)
    else:
        rows = list(embeddings)
        if not rows:
            return np.zeros((0, dimension), dtype=np.float32)
        lengths = {len(r) for r in rows}
        if len(lengths) != 1:
            raise IndexStateError(
                f"{where}: vectors of mixed lengths {sorted(lengths)} for model "
                f"{model_id!r} (dimension {dimension})"
            )
        matrix = np.asarray(rows, dtype=np.float32)
    if matrix.ndim == 1 and matrix.size == 0:
        matrix = matrix.reshape(0, dimension)
    if matrix.ndim != 2:
        raise VaultmemError(f"expected a list of vectors, got an array of shape {matrix.shape}")
    if matrix.shape[0] and matrix.shape[1] != dimension:
        raise IndexStateError(
            f"{where}: got {matrix.shape[1]}-dimensional vectors for model "
            f"{model_id!r}, whose collection holds {dimension}-dimensional ones; "
            "the embedder's model or dimension changed without the configured model id"
        )
    if not np.isfinite(matrix).all():
        raise VaultmemError("an embedding contains NaN or infinity")
    if matrix.shape[0] and not (np.linalg.norm(matrix, axis=1) > 0).all():
        raise VaultmemError("an embedding is the zero vector (cosine is undefined)")
    return matrix


# -- the snapshot ------------------------------------------------------------------------


class Snapshot:
    """One collection's vectors at one generation, searched by exact cosine."""

    def __init__(
        self,
        cache_dir: Path,
        collection: str,
        generation: str,
        identity: str,
        ids: Sequence[str],
        matrix: np.ndarray,
        norms: np.ndarray,
    ) -> None:
        """Use :func:`current` or :func:`rebuild` (they check the rows: ``norms``, each
        row's, are finite and non-zero)."""
        self.cache_dir = cache_dir
        self.collection = collection
        self.generation = generation
        self.identity = identity
        self.ids = tuple(ids)
        self.matrix = matrix
        self._scale = (1.0 / norms).astype(np.float32)

    @property
    def count(self) -> int:
        """Number of vectors."""
        return len(self.ids)

    def fresh(self) -> bool:
        """Whether this is still the collection's current contents (no write since)."""
        folder = _folder(self.cache_dir)
        return (
            _trusted(folder)
            and _read_generation(folder, self.collection) == self.generation
            and store_identity(self.cache_dir) == self.identity
        )

    def query_many(self, queries: np.ndarray, k: int) -> list[list[tuple[str, float]]]:
        """The ``k`` nearest ids to each row of ``queries`` (checked by :func:`as_matrix`)
        as (id, cosine similarity), best first; ties in id order."""
        n = self.count
        if k <= 0 or n == 0:
            return [[] for _ in range(len(queries))]
        k = min(k, n)
        unit = queries / np.linalg.norm(queries, axis=1, keepdims=True)
        out: list[list[tuple[str, float]]] = []
        for start in range(0, len(unit), _QUERY_BLOCK):
            scores = (unit[start : start + _QUERY_BLOCK] @ self.matrix.T) * self._scale
            if k < n:
                tops = np.argpartition(-scores, k - 1, axis=1)[:, :k]
            else:
                tops = np.broadcast_to(np.arange(n), scores.shape)
            for row, top in zip(scores, tops, strict=True):
                found = row[top]
                order = np.lexsort((top, -found))  # best first, then row (= id) order
                out.append(
                    [(self.ids[top[i]], min(1.0, max(-1.0, float(found[i])))) for i in order]
                )
        return out

    def vectors(self, ids: Iterable[str]) -> dict[str, list[float]]:
        """The stored vectors of ``ids`` (ids not stored are left out)."""
        rows = self._rows
        # One row read at a time: element by element, a memory-mapped matrix costs
        # a Python call per float.
        return {i: np.asarray(self.matrix[rows[i]]).tolist() for i in ids if i in rows}

    @cached_property
    def _rows(self) -> dict[str, int]:
        return {id_: row for row, id_ in enumerate(self.ids)}


# How much of an ids file holds its head (format, collection, model, dimension,
# generation, store: a few hundred bytes) before the ids.
_HEAD_BYTES = 2048


def store_identity(cache_dir: Path) -> str:
    """Which embedded store this is: its id mark and its database's inode ("" when the
    database is missing or does not look like one: nothing may be served for it)."""
    if not _store_looks_sound(cache_dir):
        return ""
    try:
        inode = os.stat(cache_dir / CHROMA_DIR / STORE_DATABASE).st_ino
    except OSError:
        return ""
    return f"{store_id(cache_dir) or '-'}:{inode}"


def state(cache_dir: Path, collection: str) -> str:
    """The collection's generation and store, as one string that changes with every write
    and store replacement ("" when the store's database is missing or unsound: no
    snapshot can be built or served)."""
    identity = store_identity(cache_dir)
    if not identity:
        return ""
    folder = _folder(cache_dir)
    generation = _read_generation(folder, collection) if _trusted(folder) else ""
    return f"{generation or '-'}@{identity}"


def current(cache_dir: Path, collection: str, model_id: str, dimension: int) -> Snapshot | None:
    """The collection's snapshot if one of its current generation is on disk and sound;
    None otherwise (the caller reads Chroma). Never imports chromadb, never raises for
    what it finds on disk."""
    folder = _folder(cache_dir)
    if not _trusted(folder):
        return None
    generation = _read_generation(folder, collection)
    identity = store_identity(cache_dir)
    if not generation or not identity:
        return None
    return _load(cache_dir, collection, model_id, dimension, generation, identity)


def filed(cache_dir: Path, collection: str) -> bool:
    """Whether a snapshot of the collection's current generation, of this very store, is on
    disk: a cheap look (the generation file and the head of the ids file, which
    :func:`_write` puts before the ids) for a caller that must not open Chroma, such as a
    hook. :func:`current` checks the files whole when it reads them."""
    folder = _folder(cache_dir)
    if not _trusted(folder):
        return False
    generation = _read_generation(folder, collection)
    identity = store_identity(cache_dir)
    if not generation or not identity:
        return False
    ids_file, matrix_file = _files(folder, collection, generation)
    try:
        fd = os.open(ids_file, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        try:
            head = os.read(fd, _HEAD_BYTES)
        finally:
            os.close(fd)
    except OSError:
        return False
    return matrix_file.is_file() and f'"store":{json.dumps(identity)}'.encode() in head


def rebuild(
    cache_dir: Path,
    collection: str,
    model_id: str,
    dimension: int,
    read_all: Callable[[], tuple[list[str], np.ndarray]],
    opened: str,
) -> Snapshot | None:
    """A snapshot of the collection's current contents, written for the next reader.

    ``read_all`` returns every (id, vector) of the collection; it is called under the
    collection's lock, so no write runs meanwhile. ``opened`` is the
    :func:`store_identity` read just *before* the client behind ``read_all`` was opened:
    a store replaced since (the client may still read the old one) gets no snapshot.
    None, and nothing written, when a write holds the lock (it is about to change the
    contents), when the store was replaced, when the cache cannot be written, or when
    Chroma holds vectors no cosine can be taken of. Errors of ``read_all`` (Chroma's)
    are raised.
    """
    folder = _own_folder(cache_dir)
    if folder is None:
        return None
    with contextlib.ExitStack() as held:
        try:
            held.enter_context(
                vault_lock(folder, timeout=0, what="vector snapshot", name=f"{collection}.lock")
            )
        except VaultmemError:  # LockBusy: a write is on; or the lock file cannot be made
            return None
        identity = store_identity(cache_dir)
        if not identity or identity != opened:
            return None
        try:
            generation = _read_generation(folder, collection)
            if not generation:  # never written through this vaultmem: name its contents
                generation = _new_generation(folder, collection)
        except OSError:
            return None
        found = _load(cache_dir, collection, model_id, dimension, generation, identity)
        if found is not None:  # another reader built it a moment ago
            return found
        ids, matrix = read_all()
        matrix = np.ascontiguousarray(matrix, dtype=np.float32)
        norms = _checked_norms(ids, matrix, dimension)
        if norms is None:
            return None
        try:
            _write(folder, collection, generation, identity, model_id, dimension, ids, matrix)
        except OSError:  # a full disk, a read-only cache: Chroma goes on serving
            return None
        _remove_others(folder, collection, generation)
        return Snapshot(cache_dir, collection, generation, identity, ids, matrix, norms)
    return None  # pragma: no cover (the with block always returns)


@contextlib.contextmanager
def writing(cache_dir: Path, collection: str) -> Iterator[None]:
    """Hold the collection's lock around a write to it, its generation moved on first.

    From the moment this enters, no snapshot taken before is current; none can be taken
    until the write is done (the lock), and none taken while it ran is ever current.
    Raises ``IndexStateError`` when the snapshot folder is not this user's own and cannot
    be made so (a snapshot in it could not be invalidated).
    """
    folder = _own_folder(cache_dir)
    if folder is None:
        raise IndexStateError(
            f"{_folder(cache_dir)} is not this user's private folder; remove it "
            "(vector snapshots are rebuilt from the store)"
        )
    with vault_lock(folder, timeout=_WRITE_WAIT_S, what="vector write", name=f"{collection}.lock"):
        _new_generation(folder, collection)
        yield
        # Moved on again once the write is done, so a reader that found the lock held
        # (and no snapshot to build) sees that there is one to build now. A write that
        # failed leaves the first: no snapshot has it, the next reader builds one.
        _new_generation(folder, collection)


def discard(cache_dir: Path) -> None:
    """Delete every snapshot and generation of ``cache_dir`` (its store is being deleted)."""

    from vaultmem.cache_folder import remove_tree

    folder = _folder(cache_dir)
    if folder.exists() or folder.is_symlink():
        remove_tree(cache_dir, folder)


# -- files -------------------------------------------------------------------------------


def _folder(cache_dir: Path) -> Path:
    return Path(cache_dir) / RECORDS_DIR / SNAPSHOT_DIR


def _trusted(folder: Path) -> bool:
    """Whether ``folder`` is a real folder of this user's that nobody else may write."""
    try:
        info = os.lstat(folder)
    except OSError:
        return False
    return _private(info) and stat.S_ISDIR(info.st_mode)


def _private(info: os.stat_result) -> bool:
    """Owned by this user and writable by nobody else (a plain file's or folder's stat)."""
    return info.st_uid == os.getuid() and not info.st_mode & 0o022


def _own_folder(cache_dir: Path) -> Path | None:
    """The snapshot folder, created private if missing; one that was not private (a link,
    another user's, open to others: anything in it may be planted) is replaced by an
    empty one. None when it cannot be made so."""
    folder = _folder(cache_dir)
    if _trusted(folder):
        return folder
    with contextlib.suppress(OSError):
        make_cache(Path(cache_dir))
        folder.parent.mkdir(exist_ok=True)
        if os.path.lexists(folder):
            discard(cache_dir)
        folder.mkdir(mode=0o700)
    return folder if _trusted(folder) else None


def _generation_file(folder: Path, collection: str) -> Path:
    return folder / f"{collection}.generation"


def _read_generation(folder: Path, collection: str) -> str:
    """The collection's current generation ("" when unknown: no snapshot is current)."""
    try:
        text = _read_private(_generation_file(folder, collection), 64).decode("ascii").strip()
    except (OSError, ValueError):
        return ""
    return text if _GENERATION.fullmatch(text) else ""


def _new_generation(folder: Path, collection: str) -> str:
    generation = secrets.token_hex(8)
    atomic_write(_generation_file(folder, collection), generation.encode("ascii"), mode=0o600)
    return generation


def _files(folder: Path, collection: str, generation: str) -> tuple[Path, Path]:
    """(the ids file, the matrix file) of one generation's snapshot."""
    stem = f"{collection}.{generation}"
    return folder / f"{stem}.ids", folder / f"{stem}.npy"


def _read_private(path: Path, limit: int) -> bytes:
    """The bytes of a regular file of this user's that nobody else may write (OSError or
    ValueError otherwise), not following a link; at most ``limit`` bytes."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or not _private(info):
            raise ValueError(f"{path.name} is not a private regular file")
        if info.st_size > limit:
            raise ValueError(f"{path.name} is too large")
        with os.fdopen(os.dup(fd), "rb") as fh:
            return fh.read(limit + 1)
    finally:
        os.close(fd)


def _load(
    cache_dir: Path,
    collection: str,
    model_id: str,
    dimension: int,
    generation: str,
    identity: str,
) -> Snapshot | None:
    """The snapshot filed under ``generation`` when it is what it must be; else None."""
    ids_file, matrix_file = _files(_folder(cache_dir), collection, generation)
    try:
        head = json.loads(_read_private(ids_file, 1 << 31))
        expected = _head(collection, model_id, dimension, generation, identity)
        if not isinstance(head, dict) or any(head.get(k) != v for k, v in expected.items()):
            return None
        ids = head.get("ids")
        if not isinstance(ids, list) or not all(isinstance(i, str) and i for i in ids):
            return None
        info = os.lstat(matrix_file)
        if not stat.S_ISREG(info.st_mode) or not _private(info):
            return None
        mapped = info.st_size > _MMAP_BYTES
        matrix = np.load(matrix_file, mmap_mode="r" if mapped else None, allow_pickle=False)
        norms = _checked_norms(ids, matrix, dimension)
        if norms is None:
            return None
        return Snapshot(cache_dir, collection, generation, identity, ids, matrix, norms)
    except Exception:  # a damaged or planted file of any shape: read as absent  # noqa: BLE001
        return None


def _head(
    collection: str, model_id: str, dimension: int, generation: str, identity: str
) -> dict[str, object]:
    """What an ids file says its snapshot is of (besides the ids)."""
    return {
        "format": _FORMAT,
        "collection": collection,
        "model": model_id,
        "dimension": dimension,
        "generation": generation,
        "store": identity,
    }


def _checked_norms(ids: Sequence[str], matrix: np.ndarray, dimension: int) -> np.ndarray | None:
    """Each row's norm, when there are unique ids and one float32 row of ``dimension`` for
    each, every row finite and non-zero; None otherwise."""
    if matrix.dtype != np.float32 or matrix.ndim != 2 or matrix.shape != (len(ids), dimension):
        return None
    if len(set(ids)) != len(ids):
        return None
    norms = np.linalg.norm(matrix, axis=1).astype(np.float32, copy=False)
    if not (np.isfinite(norms).all() and (norms > 0).all()):
        return None
    return norms


def _write(
    folder: Path,
    collection: str,
    generation: str,
    identity: str,
    model_id: str,
    dimension: int,
    ids: Sequence[str],
    matrix: np.ndarray,
) -> None:
    """The matrix, then the ids file that completes the snapshot, each atomically."""
    import io

    ids_file, matrix_file = _files(folder, collection, generation)
    buffer = io.BytesIO()
    np.save(buffer, matrix, allow_pickle=False)
    atomic_write(matrix_file, buffer.getvalue(), mode=0o600)
    head = {**_head(collection, model_id, dimension, generation, identity), "ids": list(ids)}
    atomic_write(ids_file, json.dumps(head, separators=(",", ":")).encode("utf-8"), mode=0o600)


def _remove_others(folder: Path, collection: str, generation: str) -> None:
    """Delete the collection's snapshots of other generations (a reader that has one
    mapped keeps its pages until it lets go)."""
    keep = set(_files(folder, collection, generation))
    for suffix in ("ids", "npy"):
        for path in folder.glob(f"{glob.escape(collection)}.*.{suffix}"):
            if path not in keep:
                with contextlib.suppress(OSError):
                    path.unlink()
