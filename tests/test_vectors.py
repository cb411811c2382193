"""The Chroma vector store: embedded and against a real Chroma server."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

# The fixture is re-exported here so this module runs on its own; once conftest.py
# imports it too, this import may go.
from chroma_server import ChromaServer, free_port, start_chroma_server

from vaultmem.errors import EndpointError, IndexStateError, VaultmemError
from vaultmem.index.vectors import ChromaConfig, VectorStore, collection_name

REPO = Path(__file__).resolve().parents[1]
StoreFactory = Callable[..., VectorStore]


def unit_vectors(n: int, dim: int, seed: int) -> np.ndarray:
    """``n`` random unit vectors (float32)."""
    rng = np.random.default_rng(seed)
    matrix = rng.normal(size=(n, dim)).astype(np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


def hash_ids(n: int, salt: str = "") -> list[str]:
    """Content-hash-like hex ids."""
    import hashlib

    return [hashlib.sha256(f"{salt}{i}".encode()).hexdigest() for i in range(n)]


def brute_force(matrix: np.ndarray, ids: list[str], query: np.ndarray, k: int) -> list[str]:
    sims = matrix @ query
    return [ids[i] for i in np.argsort(-sims, kind="stable")[:k]]


@pytest.fixture(autouse=True)
def no_default_embedding_function(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail loudly if anything would run Chroma's downloading default embedder."""
    from chromadb.utils.embedding_functions import onnx_mini_lm_l6_v2

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("Chroma's default embedding function was called")

    monkeypatch.setattr(onnx_mini_lm_l6_v2.ONNXMiniLM_L6_V2, "__call__", refuse)


@pytest.fixture(params=["embedded", "server"])
def open_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreFactory]:
    """Opens stores on the embedded backend or the session's Chroma server.

    Model ids get a per-test suffix because the server is shared by every test.
    """
    opened: list[VectorStore] = []
    if request.param == "server":
        server: ChromaServer = request.getfixturevalue("chroma_server")
        config = ChromaConfig(host=server.host, port=server.port, token="test-token")
    else:
        config = ChromaConfig()
    suffix = uuid.uuid4().hex[:8]

    def factory(model: str = "test-model", dim: int = 16) -> VectorStore:
        store = VectorStore.open(tmp_path / "cache", f"{model}-{suffix}", dim, config)
        opened.append(store)
        return store

    yield factory
    for store in opened:
        store.close()


# -- naming and import hygiene ----------------------------------------------------------


@pytest.mark.parametrize(
    "model",
    [
        "all-MiniLM-L6-v2",
        "sentence-transformers/all-MiniLM-L6-v2",
        "BAAI/bge-m3",
        "x",
        "..weird..name..",
        "///",
        "Ünïcödé model",
        "a" * 2000,
    ],
)
def test_collection_name_follows_chroma_rules(model: str) -> None:
    name = collection_name(model, 384)
    assert 3 <= len(name) <= 512
    assert re.fullmatch(r"[a-zA-Z0-9][a-zA-Z0-9._-]*[a-zA-Z0-9]", name)
    assert ".." not in name


def test_collection_names_differ_when_slugs_collide() -> None:
    assert collection_name("BAAI/bge", 384) != collection_name("baai-bge", 384)
    assert collection_name("m", 384) != collection_name("m", 768)
    assert collection_name("m", 384) == collection_name("m", 384)


def test_importing_the_module_does_not_import_chromadb() -> None:
    code = "import sys, vaultmem.index.vectors; assert 'chromadb' not in sys.modules"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=60)


def test_config_repr_hides_token() -> None:
    assert "s3cret" not in repr(ChromaConfig(host="h", token="s3cret"))


# -- round trip on both backends --------------------------------------------------------


def test_round_trip(open_store: StoreFactory) -> None:
    store = open_store(dim=16)
    vectors = unit_vectors(200, 16, seed=1)
    ids = hash_ids(200)
    assert store.count() == 0
    assert store.query(vectors[0], 5) == []  # empty store
    assert store.missing(ids) == set(ids)

    store.upsert(ids, vectors)
    assert store.count() == 200
    assert store.missing(ids) == set()
    assert store.missing([*ids[:3], "not-there"]) == {"not-there"}
    assert store.ids() == set(ids)

    best = store.query(vectors[7], 3)
    assert best[0][0] == ids[7]
    assert best[0][1] == pytest.approx(1.0, abs=1e-5)
    assert [s for _, s in best] == sorted((s for _, s in best), reverse=True)

    everything = store.query(vectors[0], 1000)  # k beyond the count is fine
    assert len(everything) == 200

    store.delete(ids[:50] + ["never-stored"])
    assert store.count() == 150
    assert store.missing(ids) == set(ids[:50])
    assert ids[7] not in {i for i, _ in store.query(vectors[7], 10)}

    # Re-upserting an id replaces its vector; a repeated id within one call is fine.
    store.upsert([ids[60], ids[60]], np.stack([vectors[0], vectors[0]]))
    assert store.count() == 150
    assert store.query(vectors[0], 1)[0][0] == ids[60]

    assert store.query(vectors[0], 0) == []
    assert store.query_many([], 5) == []

    # Opening the same model again (a second client) finds the same collection.
    again = open_store(dim=16)
    assert again.count() == 150
    assert again.missing(ids) == set(ids[:50])


def test_query_order_matches_brute_force(open_store: StoreFactory) -> None:
    store = open_store(dim=32)
    vectors = unit_vectors(400, 32, seed=2)
    ids = hash_ids(400)
    store.upsert(ids, vectors)
    queries = unit_vectors(25, 32, seed=3)
    results = store.query_many(queries, 10)
    assert len(results) == 25
    for query, got in zip(queries, results, strict=True):
        assert [i for i, _ in got] == brute_force(vectors, ids, query, 10)
        exact = {ids[j]: float(vectors[j] @ query) for j in range(400)}
        for id_, sim in got:
            assert sim == pytest.approx(exact[id_], abs=1e-4)


def test_lists_accepted_as_well_as_arrays(open_store: StoreFactory) -> None:
    store = open_store(dim=4)
    store.upsert(["a1", "b2"], [[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0]])
    got = store.query([0.9, 0.1, 0.0, 0.0], 2)
    assert [i for i, _ in got] == ["a1", "b2"]


def test_chunking_of_large_calls(open_store: StoreFactory) -> None:
    store = open_store(dim=8)
    store._batch = 7  # force many round trips; the public result must not change
    vectors = unit_vectors(100, 8, seed=4)
    ids = hash_ids(100)
    store.upsert(ids, vectors)
    assert store.count() == 100
    assert store.ids() == set(ids)
    assert store.missing([*ids, *hash_ids(30, salt="new")]) == set(hash_ids(30, salt="new"))
    assert len(store.query_many(vectors[:20], 3)) == 20
    store.delete(ids[:40])
    assert store.count() == 60


def test_bad_vectors_are_refused(open_store: StoreFactory) -> None:
    store = open_store(dim=4)
    with pytest.raises(IndexStateError, match="3-dimensional"):
        store.upsert(["a1"], [[1.0, 0.0, 0.0]])
    with pytest.raises(IndexStateError):
        store.query([1.0, 0.0], 3)
    with pytest.raises(VaultmemError, match="NaN"):
        store.upsert(["a1"], [[float("nan"), 0.0, 0.0, 1.0]])
    with pytest.raises(VaultmemError, match="zero vector"):
        store.upsert(["a1"], [[0.0, 0.0, 0.0, 0.0]])
    with pytest.raises(VaultmemError, match="2 ids but 1 vectors"):
        store.upsert(["a1", "b2"], [[1.0, 0.0, 0.0, 0.0]])
    assert store.count() == 0


def test_server_answers_like_embedded(tmp_path: Path, chroma_server: ChromaServer) -> None:
    vectors = unit_vectors(300, 24, seed=5)
    ids = hash_ids(300)
    queries = unit_vectors(15, 24, seed=6)
    model = f"same-{uuid.uuid4().hex[:8]}"
    embedded = VectorStore.open(tmp_path, model, 24)
    remote = VectorStore.open(
        tmp_path, model, 24, ChromaConfig(host=chroma_server.host, port=chroma_server.port)
    )
    try:
        embedded.upsert(ids, vectors)
        remote.upsert(ids, vectors)
        local_results = embedded.query_many(queries, 10)
        remote_results = remote.query_many(queries, 10)
        for mine, theirs in zip(local_results, remote_results, strict=True):
            assert [i for i, _ in mine] == [i for i, _ in theirs]
            assert [s for _, s in mine] == pytest.approx([s for _, s in theirs], abs=1e-5)
    finally:
        embedded.close()
        remote.close()


# -- persistence and isolation (embedded) -----------------------------------------------


def test_reopen_in_process_sees_the_same_data(tmp_path: Path) -> None:
    vectors = unit_vectors(120, 16, seed=7)
    ids = hash_ids(120)
    with VectorStore.open(tmp_path, "m", 16) as store:
        store.upsert(ids, vectors)
        before = store.query(vectors[3], 5)
    with pytest.raises(IndexStateError, match="closed"):
        store.count()
    with VectorStore.open(tmp_path, "m", 16) as again:
        assert again.count() == 120
        assert again.ids() == set(ids)
        assert [i for i, _ in again.query(vectors[3], 5)] == [i for i, _ in before]


def test_another_process_sees_the_data(tmp_path: Path) -> None:
    """Written by a child process that exits without closing; read back here, and back."""
    vectors = unit_vectors(150, 16, seed=8)
    np.save(tmp_path / "v.npy", vectors)
    child = textwrap.dedent(
        f"""
        import hashlib, sys
        from pathlib import Path
        import numpy as np
        from vaultmem.index.vectors import VectorStore
        cache = Path({str(tmp_path / "cache")!r})  # a cache folder of vaultmem's own
        vectors = np.load(cache.parent / "v.npy")
        ids = [hashlib.sha256(str(i).encode()).hexdigest() for i in range(150)]
        store = VectorStore.open(cache, "m", 16)
        if sys.argv[1] == "write":
            store.upsert(ids, vectors)
        else:
            assert store.count() == 160, store.count()
            assert store.query(vectors[9], 1)[0][0] == ids[9]
        """
    )
    env = dict(os.environ, PYTHONPATH=str(REPO))
    subprocess.run([sys.executable, "-c", child, "write"], check=True, env=env, timeout=120)
    with VectorStore.open(tmp_path / "cache", "m", 16) as store:
        assert store.count() == 150
        assert store.query(vectors[9], 1)[0][0] == hash_ids(150)[9]
        store.upsert(hash_ids(10, salt="x"), unit_vectors(10, 16, seed=9))
    subprocess.run([sys.executable, "-c", child, "read"], check=True, env=env, timeout=120)


def test_models_are_separate_collections(tmp_path: Path) -> None:
    ids = hash_ids(30)
    with (
        VectorStore.open(tmp_path, "model-a", 8) as a,
        VectorStore.open(tmp_path, "model-b", 8) as b,
    ):
        a.upsert(ids, unit_vectors(30, 8, seed=10))
        b.upsert(ids[:5], unit_vectors(5, 8, seed=11))
        assert a.count() == 30
        assert b.count() == 5
        assert b.missing(ids) == set(ids[5:])
        assert len(b.query(unit_vectors(1, 8, seed=12)[0], 100)) == 5
        assert a.models() == [("model-a", 8, 30), ("model-b", 8, 5)]


def test_same_model_other_dimension_is_its_own_collection(tmp_path: Path) -> None:
    with VectorStore.open(tmp_path, "m", 8) as small:
        small.upsert(hash_ids(10), unit_vectors(10, 8, seed=13))
    with VectorStore.open(tmp_path, "m", 16) as big:
        assert big.count() == 0
        assert big.models() == [("m", 8, 10), ("m", 16, 0)]


def test_reopening_a_collection_with_another_dimension_fails(tmp_path: Path) -> None:
    """A collection whose record says another dimension is refused, not mixed into."""
    with VectorStore.open(tmp_path, "m", 8) as store:
        store.upsert(hash_ids(10), unit_vectors(10, 8, seed=14))
        # Put the 8-d collection where the 16-d one of the same model would be.
        store._collection.modify(name=collection_name("m", 16))
    with pytest.raises(IndexStateError, match="dimension 8.*'m' at 16"):
        VectorStore.open(tmp_path, "m", 16)


def test_a_foreign_collection_under_our_name_is_refused(tmp_path: Path) -> None:
    import chromadb
    from chromadb.config import Settings

    from vaultmem.vault import make_cache

    path = make_cache(tmp_path / ".vaultmem") / "chroma"  # in a vault's cache
    client = chromadb.PersistentClient(
        path=str(path.resolve()), settings=Settings(anonymized_telemetry=False, allow_reset=False)
    )
    client.create_collection(
        collection_name("m", 8), metadata={"hnsw:space": "l2"}, embedding_function=None
    )
    client.close()  # type: ignore[attr-defined]  # Client has it, ClientAPI does not
    with pytest.raises(IndexStateError, match="records model None"):
        VectorStore.open(tmp_path / ".vaultmem", "m", 8)


# -- server failures --------------------------------------------------------------------


def test_unreachable_server_is_one_clean_error(tmp_path: Path) -> None:
    port = free_port()
    config = ChromaConfig(host="127.0.0.1", port=port, token="tok-VERY-SECRET")
    with pytest.raises(EndpointError) as caught:
        VectorStore.open(tmp_path, "m", 8, config)
    message = str(caught.value)
    assert f"127.0.0.1:{port}" in message
    assert "refused" in message.lower()
    assert "VERY-SECRET" not in message
    assert "\n" not in message
    assert caught.value.__cause__ is None
    assert caught.value.__suppress_context__


def test_server_dying_mid_use_is_an_endpoint_error(tmp_path: Path) -> None:
    server = start_chroma_server(tmp_path / "dying")
    try:
        config = ChromaConfig(host=server.host, port=server.port, token="tok-VERY-SECRET")
        store = VectorStore.open(tmp_path, "m", 8, config)
        store.upsert(hash_ids(5), unit_vectors(5, 8, seed=15))
        server.stop()
        for call in (store.count, lambda: store.query(unit_vectors(1, 8, seed=16)[0], 3)):
            with pytest.raises(EndpointError) as caught:
                call()
            assert f"{server.host}:{server.port}" in str(caught.value)
            assert "VERY-SECRET" not in str(caught.value)
        store.close()
    finally:
        server.stop()
