"""An opened vault: what the operations of :mod:`vaultmem.api` share.

An :class:`OpenVault` keeps what is costly to open (the keyword index's searcher, the
embedding model, the vector store) and notices when another process changed it: a new
index generation or an incremental update reopens the searcher, a finished embed sweep
reopens the vector store, a changed manifest reloads the notes' memory state. A command
run once makes one and drops it; a server keeps one for as long as it runs.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeVar

from vaultmem.config import Config
from vaultmem.errors import ConfigError, EndpointError, VaultmemError

if TYPE_CHECKING:
    from vaultmem.index.lexical import LexicalIndex
    from vaultmem.inference.base import Embedder
    from vaultmem.retrieval.query_types import Backends
    from vaultmem.retrieval.search import SnippetCache
    from vaultmem.retrieval.vsearch import VectorIndex

__all__ = ["OpenVault", "vault_locked"]

_Stamp = tuple[tuple[int, int] | None, ...]
_Op = TypeVar("_Op", bound=Callable[..., Any])


def _stat(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size)


def vault_locked(operation: _Op) -> _Op:
    """Run an operation holding its vault's lock: one request at a time uses the open
    searcher, store and model, and writes by one server happen one after another."""

    @functools.wraps(operation)
    def run(vault: OpenVault, *args: Any, **kwargs: Any) -> Any:
        with vault.lock:
            return operation(vault, *args, **kwargs)

    return run  # type: ignore[return-value]


class OpenVault:
    """A vault's indexes and models, opened on first use and kept while they are current.

    ``warm``: a long-lived process (a server) holds it, so loading the embedding model
    once is cheap per request and `surface` searches vectors too. Every operation of
    :mod:`vaultmem.api` takes ``lock``: one request at a time uses the open searcher and
    store.

    Example:
        >>> vault = OpenVault(config)  # doctest: +SKIP
        >>> api.search(vault, SearchRequest("redis"), now=now).hits[0].path  # doctest: +SKIP
    """

    def __init__(self, config: Config, *, warm: bool = False) -> None:
        self.config = config
        self.warm = warm
        self.lock = threading.RLock()
        self._lexical: LexicalIndex | None = None
        self._lexical_at: tuple[_Stamp, str] | None = None
        self._embedder: Embedder | None = None
        self._embedder_error: Exception | None = None
        self._embedder_loaded = False
        self._backends: Backends | None = None
        self._vectors: VectorIndex | None = None
        self._vectors_at: tuple[_Stamp, _Stamp] | None = None
        self._has_vectors: tuple[tuple[int, int] | None, bool] | None = None
        self.snippets: SnippetCache | None = None
        if warm:
            from vaultmem.retrieval.search import SnippetCache

            self.snippets = SnippetCache()

    # --- what changes under us -----------------------------------------------------------

    def _manifest_stamp(self) -> _Stamp:
        from vaultmem.index.manifest import FILE_NAME

        base = os.path.join(self.config.cache_dir, FILE_NAME)
        return (_stat(base), _stat(base + "-wal"))

    def _store_stamp(self, embedder: Embedder) -> _Stamp:
        from vaultmem.index.records import CHROMA_DIR, STORE_DATABASE, record_path

        record = _stat(str(record_path(self.config.cache_dir, embedder.model_id)))
        if self.config.chroma.host:
            return (record,)
        db = os.path.join(self.config.cache_dir, CHROMA_DIR, STORE_DATABASE)
        return (record, _stat(db), _stat(db + "-wal"))

    def _owners_stamp(self) -> _Stamp:
        """What says which note owns which vector: the manifest (a write files its notes'
        fragment rows in the commit of their note rows), and an older vaultmem's
        ``fragments.json`` while readers still read it (the next write or sweep moves it)."""
        from vaultmem.index.records import LEGACY_FRAGMENTS_FILE

        legacy = _stat(os.path.join(self.config.cache_dir, LEGACY_FRAGMENTS_FILE))
        return (*self._manifest_stamp(), legacy)

    def check_cache(self) -> None:
        """Refuse, in one line, to (re)open the indexes of a cache that is no longer
        vaultmem's own (:func:`vaultmem.cache_folder.settle_cache`): a server keeps its
        vault open while pulls land, and the index libraries unpickle their files."""
        from vaultmem.cache_folder import settle_cache

        problem = settle_cache(self.config.cache_dir)
        if problem:
            raise VaultmemError(f"cannot use the cache folder {self.config.cache_dir}: {problem}")

    # --- the keyword index ---------------------------------------------------------------

    def lexical(self) -> LexicalIndex:
        """The live keyword index, reopened when another process rebuilt or updated it."""
        from vaultmem.index import manifest as mf
        from vaultmem.index.lexical import LexicalIndex

        stamp = self._manifest_stamp()
        if self._lexical is not None and self._lexical_at and self._lexical_at[0] == stamp:
            return self._lexical
        self.check_cache()
        generation = mf.read_state(self.config.cache_dir).generation
        if self._lexical is not None and self._lexical_at and self._lexical_at[1] == generation:
            self._lexical.refresh()
        else:
            self._close_lexical()
            # A warm vault searches again and again: postings cached as arrays (the
            # same answers as Whoosh's, vaultmem.index.impact) pay for themselves.
            self._lexical = LexicalIndex.open(self.config.cache_dir, fast=self.warm)
        self._lexical_at = (stamp, generation)
        return self._lexical

    def _close_lexical(self) -> None:
        if self._lexical is not None:
            self._lexical.close()
        self._lexical, self._lexical_at = None, None

    # --- models and vectors --------------------------------------------------------------

    def embedder(self, *, required: bool = False) -> Embedder | None:
        """The configured embedder (loaded once); ``required``: an error when there is none."""
        if not self._embedder_loaded:
            from vaultmem.inference.embedders import embedder_for

            try:
                self._embedder = embedder_for(self.config)
            except (ConfigError, EndpointError) as exc:
                self._embedder_error = exc
            self._embedder_loaded = True
        if required and self._embedder_error is not None:
            raise self._embedder_error
        if required and self._embedder is None:
            raise ConfigError('no embedder configured (embedder = "none"); vectors are off')
        return self._embedder

    def has_vectors(self) -> bool:
        """Whether the vault has vectors of the configured embedder (no model is loaded)."""
        from vaultmem.index.records import read_record, record_path

        embedder = self.embedder()
        if embedder is None:
            return False
        record = record_path(self.config.cache_dir, embedder.model_id)
        stamp = _stat(str(record))
        if self._has_vectors is None or self._has_vectors[0] != stamp:
            # Reading a large record costs tens of ms: once per change of the file.
            self._has_vectors = (stamp, bool(read_record(record)))
        return self._has_vectors[1]

    def duplicate_embedder(self) -> Embedder | None:
        """The embedder `remember` compares new text with (cosine near duplicates), when the
        vault has vectors of it; else None (word shingles only)."""
        return self.embedder() if self.has_vectors() else None

    def vectors(self, embedder: Embedder) -> VectorIndex:
        """The vector side, reopened after an embed sweep, reloaded after a note changed."""
        from vaultmem.retrieval.vsearch import VectorIndex

        store, owners = self._store_stamp(embedder), self._owners_stamp()
        current = self._vectors
        if current is not None and current.embedder is embedder and self._vectors_at:
            if self._vectors_at == (store, owners):
                return current
            if self._vectors_at[0] == store:
                self.check_cache()
                current.reload()
                self._vectors_at = (store, owners)
                return current
        self._close_vectors()
        self.check_cache()
        self._vectors = VectorIndex(self.config, embedder)
        # Opening the store writes to its database: stamp the database after opening, or
        # every request would see a change and reopen (the record, before: a sweep that
        # lands meanwhile is seen next time).
        self._vectors_at = ((store[0], *self._store_stamp(embedder)[1:]), owners)
        return self._vectors

    def _close_vectors(self) -> None:
        if self._vectors is not None:
            self._vectors.close()
        self._vectors, self._vectors_at = None, None

    def backends(self) -> Backends:
        """The query pipeline's models (embedder, LLM, reranker) with the open vectors."""
        from vaultmem.retrieval.query_types import backends_for

        if self._backends is None:
            self._backends = backends_for(self.config)
            if self._backends.embedder is not None:
                # One embedder per vault: the query's and vsearch's share a loaded model.
                self._embedder, self._embedder_loaded = self._backends.embedder, True
        embedder = self._backends.embedder
        if embedder is None or not self.warm:
            return self._backends  # a single query opens the vectors itself, if it gets there
        try:
            return replace(self._backends, vectors=self.vectors(embedder))
        except VaultmemError:
            return self._backends  # the query tries again and records why vectors were skipped

    def warm_up(self) -> list[str]:
        """Open the searcher, and the vectors and the model when the vault has vectors,
        then analyse the most recently changed notes for snippets, so early requests do
        not pay for any of it. For a background thread of a server; returns what failed.

        The searcher and the model are opened under the lock (a request waits for them
        rather than opening them twice); notes are analysed outside it, one at a time.
        """
        problems: list[str] = []
        with self.lock:
            try:
                self.lexical()
                if self.has_vectors():
                    embedder = self.backends().embedder
                    if embedder is not None:
                        embedder.embed(["warm-up"])
            except (VaultmemError, OSError) as exc:
                problems.append(str(exc))
        if self.snippets is not None:
            from vaultmem.vault import walk_notes

            try:
                notes = sorted(walk_notes(self.config), key=lambda f: -f.mtime_ns)
            except OSError as exc:
                return [*problems, str(exc)]
            for found in notes[: self.snippets.size]:
                self.snippets.line_map(self.config.vault, found.path)
        return problems

    def close(self) -> None:
        """Release the searcher and the vector store."""
        with self.lock:
            self._close_lexical()
            self._close_vectors()
