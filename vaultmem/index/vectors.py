"""A pure vector store over Chroma: ids (fragment content hashes) and vectors, nothing else.

Vectors are keyed by the hex content hash of their fragment, so the same text always has
the same id and a renamed note with unchanged content keeps its vectors. Which note owns
which hashes is vaultmem's manifest's business, not this module's.

One Chroma collection holds the vectors of one (embedding model, dimension) pair and its
name is derived from both, so vectors of different models, or of one model truncated to
different dimensions, never mix. The collection's metadata records the pair too; a
collection whose record (or stored vector length, or metric) disagrees with what its
name promises is refused with an ``IndexStateError`` rather than mixed into.

``chromadb`` is imported lazily (inside methods) because importing it costs about a
second and commands that never touch vectors must not pay for it. Embeddings are always
passed explicitly and every collection is opened with ``embedding_function=None``:
Chroma's default embedding function downloads a model at run time.

Every write to an embedded store moves the collection's snapshot generation on first
(:func:`vaultmem.index.vector_snapshot.writing`), so a one-shot read never serves a flat
snapshot older than a completed write; :mod:`vaultmem.index.vector_reads` chooses.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import re
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from vaultmem.cache_folder import remove_tree
from vaultmem.config import ChromaConfig
from vaultmem.errors import EndpointError, IndexStateError, VaultmemError
from vaultmem.index import vector_snapshot
from vaultmem.index.records import STORE_DATABASE, STORE_MARK
from vaultmem.index.vector_snapshot import Vector, Vectors
from vaultmem.vault import make_cache

if TYPE_CHECKING:
    from chromadb.api import ClientAPI
    from chromadb.api.collection_configuration import CreateCollectionConfiguration
    from chromadb.api.models.Collection import Collection
    from chromadb.api.types import Include

__all__ = ["ChromaConfig", "Vector", "Vectors", "VectorStore", "collection_name", "store_where"]

# Every vaultmem collection's name starts with this, so `models()` can tell ours apart
# from whatever else lives on a shared Chroma server.
_PREFIX = "vm-"
_META_MODEL = "vaultmem_model"
_META_DIM = "vaultmem_dim"

# HNSW parameters chosen for recall over build speed: the vault is small next to what
# HNSW is built for, and a missed fragment is worse than a few milliseconds. Measured
# by benchmarks/bench_chroma_recall.py (recall@10 against brute force).
_HNSW: dict[str, Any] = {
    "space": "cosine",
    "ef_construction": 200,
    "ef_search": 200,
    "max_neighbors": 32,
}

# A single Chroma request stays well below any server's body limit at this size even
# for 3072-d vectors; the client's own max batch size caps it further.
_MAX_CHUNK = 4096
_HEARTBEAT_TIMEOUT_S = 10.0
_REQUEST_TIMEOUT_S = 300.0


def collection_name(model_id: str, dimension: int) -> str:
    """The Chroma collection name for one (model, dimension) pair.

    Readable slug plus a hash of the exact model id: slugs of different ids can collide
    ("BAAI/bge" and "baai-bge"), hashes practically cannot. The result satisfies
    Chroma's rules (3-512 chars of [a-zA-Z0-9._-], alphanumeric at both ends, no "..").
    """
    slug = re.sub(r"[^a-z0-9]+", "-", model_id.lower()).strip("-")[:64].strip("-") or "model"
    digest = hashlib.sha256(model_id.encode("utf-8")).hexdigest()[:10]
    return f"{_PREFIX}{slug}-{dimension}d-{digest}"


def _quiet_chromadb() -> None:
    """Keep chromadb's loggers out of vaultmem's output unless a user configured them."""
    for name in ("chromadb", "posthog", "httpx", "httpcore"):
        logger = logging.getLogger(name)
        if logger.level == logging.NOTSET:
            logger.setLevel(logging.ERROR)


def _settings() -> Any:
    """Chroma settings shared by every client vaultmem creates.

    Embedded clients are cached by chromadb per path and a second client on the same path
    with *different* settings is refused, so these must be the same every time.
    """
    from chromadb.config import Settings

    return Settings(anonymized_telemetry=False, allow_reset=False)


class VectorStore:
    """Vectors of one embedding model in one Chroma collection, keyed by fragment hash."""

    def __init__(
        self,
        client: ClientAPI,
        collection: Collection,
        *,
        model_id: str,
        dimension: int,
        where: str,
        chroma: ChromaConfig,
        cache_dir: Path | None = None,
    ) -> None:
        """Use :meth:`open`; this only wires already-validated parts together.

        ``cache_dir``: where an embedded store's snapshots live (None for a server).
        """
        self._client: ClientAPI | None = client
        self._collection = collection
        self.model_id = model_id
        self.dimension = dimension
        self.where = where
        self.name = collection.name
        self._chroma = chroma
        self._cache_dir = cache_dir
        try:
            batch = int(client.get_max_batch_size())
        except Exception:  # an old server without the endpoint: fall back to a safe size
            batch = 1000
        self._batch = max(1, min(batch, _MAX_CHUNK))

    # -- opening and closing ------------------------------------------------------------

    @classmethod
    def open(
        cls,
        cache_dir: Path,
        model_id: str,
        dimension: int,
        chroma: ChromaConfig | None = None,
    ) -> VectorStore:
        """Open (creating if needed) the collection for ``model_id`` at ``dimension``.

        Embedded under ``cache_dir/"chroma"`` unless ``chroma.host`` names a server.
        Raises ``EndpointError`` when a server cannot be reached and ``IndexStateError``
        when the collection exists but records another model, dimension or metric.
        """
        chroma = chroma or ChromaConfig()
        if not model_id:
            raise VaultmemError("embedding model id is empty")
        if dimension <= 0:
            raise VaultmemError(f"embedding dimension must be positive, got {dimension}")
        client, where = _connect(cache_dir, chroma)
        name = collection_name(model_id, dimension)
        try:
            with _translate(where, chroma, "opening collection " + name):
                collection = client.get_or_create_collection(
                    name,
                    configuration=cast("CreateCollectionConfiguration", {"hnsw": dict(_HNSW)}),
                    metadata={_META_MODEL: model_id, _META_DIM: dimension},
                    embedding_function=None,
                )
            _check_collection(collection, model_id, dimension, where)
        except BaseException:
            _close_client(client)
            raise
        return cls(
            client,
            collection,
            model_id=model_id,
            dimension=dimension,
            where=where,
            chroma=chroma,
            cache_dir=None if chroma.host else Path(cache_dir),
        )

    def close(self) -> None:
        """Release the client; for an embedded store this frees chromadb's cached system.

        chromadb shares one system per path within a process and stops it when its last
        client closes, so a store opened again after ``close`` reads the files afresh.
        """
        client, self._client = self._client, None
        if client is not None:
            _close_client(client)

    def __enter__(self) -> VectorStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- reading ------------------------------------------------------------------------

    def count(self) -> int:
        """Number of vectors stored for this model."""
        with self._guard("counting vectors"):
            return int(self._live().count())

    def missing(self, ids: Iterable[str]) -> set[str]:
        """The ids among ``ids`` that have no vector yet (what an embed sweep must do)."""
        wanted = _unique(ids)
        found: set[str] = set()
        collection = self._live()
        with self._guard("looking up vectors"):
            for chunk in _chunks(wanted, self._batch):
                got = collection.get(ids=chunk, include=[])
                found.update(got["ids"])
        return set(wanted) - found

    def ids(self) -> set[str]:
        """Every id stored for this model (for garbage collection against the manifest)."""
        return {id_ for page in self._pages([], "listing vectors") for id_ in page["ids"]}

    def vectors(self, ids: Iterable[str]) -> dict[str, list[float]]:
        """The stored vectors of ``ids`` (ids not stored are left out)."""
        out: dict[str, list[float]] = {}
        collection = self._live()
        with self._guard("reading vectors"):
            for part in _chunks(_unique(ids), self._batch):
                got = collection.get(ids=part, include=["embeddings"])
                embeddings = got["embeddings"]
                if embeddings is None:
                    continue
                for id_, vector in zip(got["ids"], embeddings, strict=True):
                    out[id_] = [float(x) for x in vector]
        return out

    def all_vectors(self) -> tuple[list[str], np.ndarray]:
        """Every (id, vector) stored for this model: ids sorted, one float32 row each (for
        a snapshot, :func:`vaultmem.index.vector_snapshot.rebuild`)."""
        ids: list[str] = []
        rows = [np.zeros((0, self.dimension), dtype=np.float32)]
        for page in self._pages(["embeddings"], "reading vectors"):
            if page["ids"]:
                ids.extend(page["ids"])
                rows.append(np.asarray(page["embeddings"], dtype=np.float32))
        order = sorted(range(len(ids)), key=ids.__getitem__)
        return [ids[i] for i in order], np.concatenate(rows)[order]

    def query(self, embedding: Vector, k: int) -> list[tuple[str, float]]:
        """The ``k`` nearest ids to ``embedding`` as (id, cosine similarity), best first."""
        return self.query_many([embedding], k)[0]

    def query_many(self, embeddings: Vectors, k: int) -> list[list[tuple[str, float]]]:
        """:meth:`query` for several vectors at once, one result list per input, in order.

        ``k`` above the number of stored vectors returns them all; an empty store gives
        empty lists. Similarity is ``1 - cosine distance``, in [-1, 1].
        """
        matrix = self._matrix(embeddings)
        if k <= 0 or len(matrix) == 0:
            return [[] for _ in range(len(matrix))]
        collection = self._live()
        results: list[list[tuple[str, float]]] = []
        with self._guard("querying vectors"):
            for start in range(0, len(matrix), self._batch):
                block = matrix[start : start + self._batch]
                got = collection.query(
                    query_embeddings=list(block), n_results=k, include=["distances"]
                )
                distances = got["distances"] or [[] for _ in got["ids"]]
                for ids, dists in zip(got["ids"], distances, strict=True):
                    # Clipped: float32 rounding gives a vector 1.0000001 with itself.
                    pairs = [(i, _similarity(d)) for i, d in zip(ids, dists, strict=True)]
                    # Chroma returns nearest first already; sorting again makes "best
                    # first" a property of this module rather than of a Chroma version.
                    pairs.sort(key=lambda p: p[1], reverse=True)
                    results.append(pairs)
        return results

    def models(self) -> list[tuple[str, int, int]]:
        """Every vaultmem collection in this Chroma: (model id, dimension, count), sorted."""
        client = self._live_client()
        with self._guard("listing collections"):
            return _our_collections(client)

    # -- writing ------------------------------------------------------------------------

    def upsert(self, ids: Sequence[str], embeddings: Vectors) -> None:
        """Store one vector per id, replacing any vector already stored under that id."""
        matrix = self._matrix(embeddings)
        if len(ids) != len(matrix):
            raise VaultmemError(f"upsert got {len(ids)} ids but {len(matrix)} vectors")
        # Ids are content hashes, so a repeated id carries the same text; Chroma refuses
        # duplicates within one call, so keep the last of each.
        last: dict[str, int] = {}
        for row, id_ in enumerate(ids):
            _check_id(id_)
            last[id_] = row
        keep_ids = list(last)
        rows = np.fromiter(last.values(), dtype=np.int64, count=len(last))
        matrix = matrix[rows]
        collection = self._live()
        if not keep_ids:
            return
        with self._writing(), self._guard("storing vectors"):
            for start in range(0, len(keep_ids), self._batch):
                stop = start + self._batch
                collection.upsert(ids=keep_ids[start:stop], embeddings=matrix[start:stop])

    def delete(self, ids: Iterable[str]) -> None:
        """Remove the vectors of ``ids``; ids that are not stored are ignored."""
        wanted = _unique(ids)
        collection = self._live()
        if not wanted:
            return
        with self._writing(), self._guard("deleting vectors"):
            for chunk in _chunks(wanted, self._batch):
                collection.delete(ids=chunk)

    # -- internals ----------------------------------------------------------------------

    def _live(self) -> Collection:
        self._live_client()
        return self._collection

    def _live_client(self) -> ClientAPI:
        if self._client is None:
            raise IndexStateError(f"{self.where}: the vector store is closed")
        return self._client

    def _pages(self, include: Include, action: str) -> Iterator[Any]:
        """Every stored entry with ``include``, one Chroma ``get`` page at a time."""
        collection = self._live()
        with self._guard(action):
            offset = 0
            while True:
                got = collection.get(include=include, limit=self._batch, offset=offset)
                yield got
                if len(got["ids"]) < self._batch:
                    return
                offset += len(got["ids"])

    @contextmanager
    def _guard(self, action: str) -> Iterator[None]:
        with _translate(self.where, self._chroma, action):
            yield

    def _writing(self) -> contextlib.AbstractContextManager[None]:
        """Around a write: an embedded store's snapshot generation moved on first."""
        if self._cache_dir is None:
            return contextlib.nullcontext()
        return vector_snapshot.writing(self._cache_dir, self.name)

    def _matrix(self, embeddings: Vectors) -> np.ndarray:
        """Validate vectors as a float32 (n, dimension) matrix before Chroma sees them."""
        return vector_snapshot.as_matrix(
            embeddings, dimension=self.dimension, model_id=self.model_id, where=self.where
        )


def stored_models(
    cache_dir: Path, chroma: ChromaConfig | None = None
) -> list[tuple[str, int, int]]:
    """:meth:`VectorStore.models` without opening a collection (for `doctor`).

    An embedded store that was never created is not created: the answer is then [].
    """
    chroma = chroma or ChromaConfig()
    if not chroma.host and not (Path(cache_dir) / "chroma").is_dir():
        return []
    client, where = _connect(cache_dir, chroma)
    try:
        with _translate(where, chroma, "listing collections"):
            return _our_collections(client)
    finally:
        _close_client(client)


def _our_collections(client: ClientAPI) -> list[tuple[str, int, int]]:
    """Every vaultmem collection of a client: (model id, dimension, count), sorted."""
    out: list[tuple[str, int, int]] = []
    for collection in client.list_collections():
        meta = collection.metadata or {}
        model, dim = meta.get(_META_MODEL), meta.get(_META_DIM)
        if not collection.name.startswith(_PREFIX) or not isinstance(model, str):
            continue
        if not isinstance(dim, int):
            continue
        out.append((model, dim, int(collection.count())))
    return sorted(out)


# -- clients ----------------------------------------------------------------------------


def _connect(cache_dir: Path, chroma: ChromaConfig) -> tuple[ClientAPI, str]:
    """A client of the configured Chroma (embedded under ``cache_dir`` unless a server is
    named), and how messages name it."""
    _quiet_chromadb()
    where = store_where(cache_dir, chroma)
    if chroma.host:
        return _http_client(chroma, where), where
    path = (Path(cache_dir) / "chroma").resolve()
    if (path / STORE_MARK).exists() and not (path / STORE_DATABASE).exists():
        # Opening would create an empty database under the old mark, and the vector
        # records (which name that mark) would go on vouching for every vector.
        raise IndexStateError(f"{where}: cannot open: its database {STORE_DATABASE} is missing")
    return _persistent_client(path, where), where


def store_where(cache_dir: Path, chroma: ChromaConfig) -> str:
    """How messages name the configured store: a Chroma server, or the embedded path."""
    if chroma.host:
        return f"Chroma server {_hostport(chroma)}"
    return f"vector store {(Path(cache_dir) / 'chroma').resolve()}"


def _hostport(chroma: ChromaConfig) -> str:
    host = chroma.host or ""
    return f"[{host}]:{chroma.port}" if ":" in host else f"{host}:{chroma.port}"


def _import_chromadb() -> Any:
    """chromadb, imported with signals held (a signal inside a C extension's import would
    pose as an ImportError), lightened (:mod:`vaultmem.index.chroma_import`)."""
    from vaultmem.index.chroma_import import light_chromadb
    from vaultmem.interrupts import deferred

    with deferred(), light_chromadb():
        import chromadb
    return chromadb


def _persistent_client(path: Path, where: str) -> ClientAPI:
    """An embedded client on ``path`` (chromadb shares one system per path in a process)."""
    chromadb = _import_chromadb()
    try:
        make_cache(path.parent)
        path.mkdir(exist_ok=True)
        return chromadb.PersistentClient(path=str(path), settings=_settings())
    except Exception as exc:
        _forget_failed_system(path)
        raise IndexStateError(f"{where}: cannot open: {_describe(exc, None)}") from None


def _forget_failed_system(path: Path) -> None:
    """Drop chromadb's memory of a system on ``path`` that failed to start.

    chromadb caches a new system per path *before* starting it; one whose start failed
    (a damaged database) stays cached, held by no client, and the next open in this
    process would reuse it and fail even after `embed` rebuilt the store on disk.
    """
    from chromadb.api.shared_system_client import SharedSystemClient

    key = str(path)
    with SharedSystemClient._refcount_lock:
        if key in SharedSystemClient._identifier_to_refcount:
            return
        system = SharedSystemClient._identifier_to_system.pop(key, None)
    if system is not None:
        with suppress(Exception):
            system.stop()


def _http_client(chroma: ChromaConfig, where: str) -> ClientAPI:
    """A client of a Chroma server, checked with a bounded heartbeat first.

    chromadb's own HTTP session has no timeout at all, so an unreachable host would hang
    a cron job; the heartbeat (10 s) fails fast with a clear message instead.
    """
    import httpx

    chromadb = _import_chromadb()
    headers: dict[str, str] = {}
    if chroma.token:
        # Chroma's token auth reads "Authorization: Bearer" by default; Chroma Cloud and
        # servers configured for it read "X-Chroma-Token". Sending both serves either.
        headers = {"Authorization": f"Bearer {chroma.token}", "X-Chroma-Token": chroma.token}
    scheme = "https" if chroma.ssl else "http"
    url = f"{scheme}://{_hostport(chroma)}/api/v2/heartbeat"
    try:
        response = httpx.get(url, headers=headers, timeout=_HEARTBEAT_TIMEOUT_S)
    except Exception as exc:
        raise EndpointError(f"{where} is unreachable: {_describe(exc, chroma.token)}") from None
    if response.status_code in (401, 403):
        raise EndpointError(f"{where} refused the token (HTTP {response.status_code})")
    if response.status_code >= 400:
        raise EndpointError(f"{where} heartbeat failed: HTTP {response.status_code}")
    with _translate(where, chroma, "connecting"):
        client = chromadb.HttpClient(
            host=chroma.host or "localhost",
            port=chroma.port,
            ssl=chroma.ssl,
            headers=dict(headers),
            settings=_settings(),
        )
    # Bound every later request too (private attribute; skipped if chromadb changes).
    session = getattr(getattr(client, "_server", None), "_session", None)
    if isinstance(session, httpx.Client):
        session.timeout = httpx.Timeout(_REQUEST_TIMEOUT_S, connect=_HEARTBEAT_TIMEOUT_S)
    return client


def discard_embedded(cache_dir: Path) -> None:
    """Delete the embedded store under ``cache_dir`` and chromadb's memory of it.

    chromadb keeps one system per path for the life of the process, and one that failed
    to open stays broken: a store re-created at the same path must not reuse it.
    """
    from chromadb.api.shared_system_client import SharedSystemClient

    path = str((Path(cache_dir) / "chroma").resolve())
    SharedSystemClient._identifier_to_system.pop(path, None)
    with suppress(AttributeError):
        SharedSystemClient._identifier_to_refcount.pop(path, None)
    vector_snapshot.discard(Path(cache_dir))
    remove_tree(Path(cache_dir), Path(path))


def _close_client(client: ClientAPI) -> None:
    close = getattr(client, "close", None)
    if callable(close):
        # Closing must never mask the error that made us close.
        with suppress(Exception):
            close()


def _check_collection(collection: Collection, model_id: str, dimension: int, where: str) -> None:
    """Refuse a collection that records another model, dimension or distance metric."""
    meta = collection.metadata or {}
    got_model, got_dim = meta.get(_META_MODEL), meta.get(_META_DIM)
    if got_model != model_id or got_dim != dimension:
        raise IndexStateError(
            f"{where}: collection {collection.name!r} records model {got_model!r} at "
            f"dimension {got_dim!r}, not {model_id!r} at {dimension}; it was not written by "
            "this vaultmem configuration (remove it or use another Chroma path/database)"
        )
    # Chroma learns a collection's dimension from its first vectors; trust it over our
    # metadata if someone wrote other vectors into it.
    stored_dim = getattr(getattr(collection, "_model", None), "dimension", None)
    if isinstance(stored_dim, int) and stored_dim != dimension:
        raise IndexStateError(
            f"{where}: collection {collection.name!r} holds {stored_dim}-dimensional "
            f"vectors but is recorded as {dimension}-dimensional for {model_id!r}; "
            "rebuild the vectors (delete the collection and re-run embed)"
        )
    hnsw = (collection.configuration_json or {}).get("hnsw") or {}
    space = hnsw.get("space")
    if space is not None and space != "cosine":
        raise IndexStateError(
            f"{where}: collection {collection.name!r} uses {space!r} distance, not cosine"
        )


# -- errors -----------------------------------------------------------------------------


@contextmanager
def _translate(where: str, chroma: ChromaConfig, action: str) -> Iterator[None]:
    """Turn chromadb/httpx failures into one-line vaultmem errors without the token.

    ``from None`` drops the chained traceback: httpx exceptions carry the request, and
    the request carries the auth header.
    """
    try:
        yield
    except VaultmemError:
        raise
    except Exception as exc:
        cause = _describe(exc, chroma.token)
        if chroma.host and not _is_not_found(exc):
            raise EndpointError(f"{where}: {action} failed: {cause}") from None
        raise IndexStateError(f"{where}: {action} failed: {cause}") from None


def _is_not_found(exc: BaseException) -> bool:
    return type(exc).__name__ == "NotFoundError"


def _describe(exc: BaseException, token: str | None) -> str:
    """``str(exc)``, falling back to its cause (chromadb wraps httpx errors in ValueError)."""
    text = str(exc).strip()
    inner = exc.__cause__ or exc.__context__
    if inner is not None and str(inner).strip() and str(inner).strip() not in text:
        text = f"{text} ({str(inner).strip()})" if text else str(inner).strip()
    text = text or type(exc).__name__
    text = " ".join(text.split())  # one line, whatever the server sent
    if token:
        text = text.replace(token, "***")
    return text


# -- helpers ----------------------------------------------------------------------------


def _check_id(id_: str) -> None:
    if not isinstance(id_, str) or not id_:
        raise VaultmemError(f"vector ids must be non-empty strings, got {id_!r}")


def _unique(ids: Iterable[str]) -> list[str]:
    """Ids in first-seen order without repeats (Chroma rejects duplicates in one call)."""
    out = list(dict.fromkeys(ids))
    for id_ in out:
        _check_id(id_)
    return out


def _similarity(distance: float) -> float:
    return min(1.0, max(-1.0, 1.0 - float(distance)))


def _chunks(items: Sequence[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield list(items[start : start + size])
