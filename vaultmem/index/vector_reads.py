"""Reading one model's stored vectors: from its flat snapshot while that is current, else
from Chroma, which then refreshes the snapshot for the next reader.

A one-shot `vsearch` or `query` whose snapshot is current never imports chromadb
(:mod:`vaultmem.index.vector_snapshot`); one that finds it stale (vectors were written
since) opens Chroma, reads the collection whole under its lock and files a new snapshot,
which it then answers from too, so the first read after a write and every one after it
rank alike: by exact cosine. While a write holds the lock, Chroma's own (HNSW) query
answers. A long-lived reader (the server's) checks before every query that its snapshot
is still current, and moves to the new one when it is not.

A Chroma server (``chroma.host``) has no snapshot: other clients may write to it unseen.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from vaultmem.config import ChromaConfig
from vaultmem.errors import VaultmemError
from vaultmem.index import vector_snapshot
from vaultmem.index.vector_snapshot import Snapshot, Vectors, as_matrix
from vaultmem.index.vectors import collection_name, store_where

if TYPE_CHECKING:
    from vaultmem.index.vectors import VectorStore

__all__ = ["StoredVectors"]


class StoredVectors:
    """The read side of one (model, dimension) collection: snapshot first, Chroma second."""

    def __init__(
        self, cache_dir: Path, model_id: str, dimension: int, chroma: ChromaConfig
    ) -> None:
        """Use :meth:`open`, which also finds (or builds) the snapshot."""
        self.cache_dir = Path(cache_dir)
        self.model_id = model_id
        self.dimension = dimension
        self.name = collection_name(model_id, dimension)
        self.where = store_where(self.cache_dir, chroma)
        self._chroma = chroma
        self._snapshot: Snapshot | None = None
        self._store: VectorStore | None = None
        self._gave_up: str | None = None  # the state() no snapshot could be built for
        self._opened_identity = ""  # the store's identity when Chroma was opened

    @classmethod
    def open(
        cls,
        cache_dir: Path,
        model_id: str,
        dimension: int,
        chroma: ChromaConfig | None = None,
    ) -> StoredVectors:
        """The vectors of ``model_id`` at ``dimension``, ready to read.

        Raises what :meth:`VectorStore.open <vaultmem.index.vectors.VectorStore.open>`
        raises when Chroma must be opened (no current snapshot) and cannot be.
        """
        if not model_id:
            raise VaultmemError("embedding model id is empty")
        if dimension <= 0:
            raise VaultmemError(f"embedding dimension must be positive, got {dimension}")
        reader = cls(cache_dir, model_id, dimension, chroma or ChromaConfig())
        try:
            if reader._current() is None:
                reader._chroma_store()  # Chroma answers: its errors are the open's
        except BaseException:
            reader.close()
            raise
        return reader

    @property
    def from_snapshot(self) -> bool:
        """Whether the last read was answered from the snapshot (not Chroma's query)."""
        return self._snapshot is not None

    def count(self) -> int:
        """Number of vectors stored for this model."""
        snapshot = self._current()
        return snapshot.count if snapshot is not None else self._chroma_store().count()

    def query_many(self, embeddings: Vectors, k: int) -> list[list[tuple[str, float]]]:
        """The ``k`` nearest ids to each vector as (id, cosine similarity), best first, one
        list per vector (as :meth:`VectorStore.query_many`)."""
        snapshot = self._current()
        if snapshot is None:
            return self._chroma_store().query_many(embeddings, k)
        matrix = as_matrix(
            embeddings, dimension=self.dimension, model_id=self.model_id, where=self.where
        )
        return snapshot.query_many(matrix, k)

    def vectors(self, ids: set[str]) -> dict[str, list[float]]:
        """The stored vectors of ``ids`` (ids not stored are left out)."""
        snapshot = self._current()
        if snapshot is None:
            return self._chroma_store().vectors(ids)
        return snapshot.vectors(ids)

    def models(self) -> list[tuple[str, int, int]]:
        """Every vaultmem collection in the store: (model id, dimension, count), sorted
        (opens Chroma: asked only when this model has no vectors)."""
        return self._chroma_store().models()

    def close(self) -> None:
        """Release Chroma, if it was opened, and the snapshot."""
        self._snapshot = None
        self._release_chroma()

    def __enter__(self) -> StoredVectors:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _current(self) -> Snapshot | None:
        """The current snapshot: the one held while no write came since, else the one on
        disk, else one built now from Chroma; None when Chroma must answer."""
        if self._chroma.host:
            return None
        snapshot = self._snapshot
        if snapshot is not None and snapshot.fresh():
            return snapshot
        args = (self.cache_dir, self.name, self.model_id, self.dimension)
        snapshot = vector_snapshot.current(*args)
        state = "" if snapshot is not None else vector_snapshot.state(self.cache_dir, self.name)
        if state and state != self._gave_up:
            store = self._chroma_store()
            snapshot = vector_snapshot.rebuild(*args, store.all_vectors, self._opened_identity)
            if snapshot is not None:
                # Let Chroma go: an embedded client keeps what it read in memory and goes
                # wrong once another process writes, and the snapshot serves from now on.
                self._release_chroma()
            else:
                # Not built (a write held the lock, the cache refused the files, Chroma
                # holds vectors no cosine can be taken of): Chroma answers until the next
                # write, rather than a whole read of the collection before every query.
                self._gave_up = vector_snapshot.state(self.cache_dir, self.name)
        self._snapshot = snapshot
        return snapshot

    def _release_chroma(self) -> None:
        store, self._store = self._store, None
        if store is not None:
            store.close()

    def _chroma_store(self) -> VectorStore:
        if self._store is None:
            from vaultmem.index.vectors import VectorStore

            # Before opening: a store replaced after this read gets no snapshot from it.
            self._opened_identity = vector_snapshot.store_identity(self.cache_dir)
            self._store = VectorStore.open(
                self.cache_dir, self.model_id, self.dimension, self._chroma
            )
        return self._store
