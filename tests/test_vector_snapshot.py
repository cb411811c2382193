"""The flat vector snapshot one-shot reads use instead of Chroma: served only while no
write came since, never stale, never another model's, never a planted one."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from conftest import run_vaultmem
from test_vectors import hash_ids, unit_vectors

from tests.conftest import copy_indexed
from vaultmem.config import build
from vaultmem.index import vector_snapshot
from vaultmem.index.vector_reads import StoredVectors
from vaultmem.index.vectors import ChromaConfig, VectorStore, collection_name
from vaultmem.inference.local import LocalEmbedder

MODEL = LocalEmbedder().model_id  # what `vsearch` embeds with by default
DIM = 384
NAME = collection_name(MODEL, DIM)
QUERY = "redis failover"

# One-shot `vsearch` as a whole process (no server runs), reporting on stderr whether
# chromadb was imported.
ONE_SHOT = textwrap.dedent(
    """
    import atexit, sys
    atexit.register(lambda: print("chromadb imported:", "chromadb" in sys.modules,
                                  file=sys.stderr))
    sys.argv = ["vaultmem", "--vault", sys.argv[1], "vsearch", sys.argv[2], "--json"]
    from vaultmem.entry import main
    main()
    """
)


def one_shot(vault: Path, query: str = QUERY) -> tuple[list[tuple[str, float]], bool]:
    """(hits as (path, score), whether chromadb was imported) of a one-shot `vsearch`."""
    done = subprocess.run(
        [sys.executable, "-c", ONE_SHOT, str(vault), query],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    hits = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    imported = "chromadb imported: True" in done.stderr
    assert imported or "chromadb imported: False" in done.stderr, done.stderr
    return [(h["path"], h["score"]) for h in hits], imported


def same(a: list[tuple[str, float]], b: list[tuple[str, float]]) -> bool:
    """The same notes in the same order, at the same scores (to float32 noise: Chroma and
    the snapshot round a cosine differently in its last bits)."""
    return [p for p, _ in a] == [p for p, _ in b] and all(
        abs(x - y) < 1e-5 for (_, x), (_, y) in zip(a, b, strict=True)
    )


def chroma_answer(vault: Path, query: str = QUERY) -> list[tuple[str, float]]:
    """The same `vsearch` answered by Chroma's own query: a write holding the collection's
    lock leaves no current snapshot, and none can be built while it is held."""
    with vector_snapshot.writing(vault / ".vaultmem", NAME):
        hits, imported = one_shot(vault, query)
    assert imported
    return hits


def snapshot_files(vault: Path) -> list[Path]:
    folder = vault / ".vaultmem" / "vectors" / "snapshots"
    return sorted(folder.glob(f"{NAME}.*.npy")) + sorted(folder.glob(f"{NAME}.*.ids"))


@pytest.fixture
def embedded(embedded_example: Path, tmp_path: Path, vectors_on: None) -> Path:
    """A private copy of the embedded example vault (cache included)."""
    target = tmp_path / "vault"
    copy_indexed(embedded_example, target)
    return target


def test_a_current_snapshot_serves_one_shot_vsearch_without_chromadb(embedded: Path) -> None:
    by_chroma = chroma_answer(embedded)
    first, imported = one_shot(embedded)  # no current snapshot: Chroma, then one is built
    assert imported and len(snapshot_files(embedded)) == 2
    second, imported = one_shot(embedded)
    assert not imported
    # The first was Chroma's answer, the second the snapshot's: equal to float32 noise.
    assert same(first, by_chroma) and same(second, first)
    assert by_chroma[0][0] in (
        "decisions/Redis for caching.md",
        "reference/Runbook - Redis failover.md",
    )


def test_a_write_from_another_process_makes_the_snapshot_stale(embedded: Path) -> None:
    one_shot(embedded)  # builds the snapshot
    note = embedded / "inbox" / "Quokka sightings.md"
    note.write_text("# Quokka sightings\n\nA quokka on Rottnest island smiled at the ferry.\n")
    for command in ("index", "embed"):  # another process writes the new note's vectors
        assert run_vaultmem(embedded, command).returncode == 0
    # The sweep filed a snapshot of what it wrote (issue 30): the next one-shot read
    # finds the new note without opening Chroma, never the snapshot from before.
    hits, imported = one_shot(embedded, "quokka on rottnest island")
    assert hits[0][0] == "inbox/Quokka sightings.md", "a snapshot older than the write"
    assert not imported


def test_a_delete_from_another_process_makes_the_snapshot_stale(embedded: Path) -> None:
    config = build(embedded, {})
    cache = config.cache_dir
    with StoredVectors.open(cache, MODEL, DIM) as reader:
        assert reader.from_snapshot
        before = reader.count()
    (embedded / "inbox" / "Redis memory at 80 percent.md").unlink()
    for command in ("index", "embed"):  # the note's vectors are deleted by `embed`
        assert run_vaultmem(embedded, command).returncode == 0
    with VectorStore.open(cache, MODEL, DIM) as store:
        stored = store.ids()
    assert len(stored) < before
    with StoredVectors.open(cache, MODEL, DIM) as reader:
        assert reader.from_snapshot and reader.count() == len(stored)
        snapshot = vector_snapshot.current(cache, NAME, MODEL, DIM)
        assert snapshot is not None and set(snapshot.ids) == stored


def test_a_long_lived_reader_follows_writes(tmp_path: Path) -> None:
    """The server's reader: a write from another process is seen by its next query."""
    cache, ids, vectors = stored_in(tmp_path, 40, 30, seed=1)
    with StoredVectors.open(cache, "m", 16) as reader:
        assert reader.from_snapshot and reader.count() == 30
        writer = textwrap.dedent(
            f"""
            import numpy as np
            from pathlib import Path
            from vaultmem.index.vectors import VectorStore
            with VectorStore.open(Path({str(cache)!r}), "m", 16) as store:
                store.upsert({ids[30:]!r}, np.array({vectors[30:].tolist()!r}))
                store.delete({ids[:5]!r})
            """
        )
        subprocess.run([sys.executable, "-c", writer], check=True, timeout=120)
        assert reader.count() == 35
        nearest = reader.query_many(vectors[35:36], 1)[0]
        assert nearest[0][0] == ids[35] and nearest[0][1] == pytest.approx(1.0, abs=1e-6)
        assert reader.vectors({ids[0], ids[39]}).keys() == {ids[39]}
        assert reader.from_snapshot


@pytest.mark.slow  # a killed writer
def test_a_write_that_crashed_half_way_is_never_hidden(tmp_path: Path) -> None:
    """A writer killed after its vectors reached Chroma, before it could finish: the
    snapshot taken before it is not served; the next reader builds one with them."""
    cache, ids, vectors = stored_in(tmp_path, 12, 10, seed=2)
    assert vector_snapshot.current(cache, collection_name("m", 16), "m", 16) is None
    with StoredVectors.open(cache, "m", 16) as reader:
        assert reader.from_snapshot and reader.count() == 10  # built now
    name = collection_name("m", 16)
    crash = textwrap.dedent(
        f"""
        import os
        import numpy as np
        from pathlib import Path
        from vaultmem.index import vector_snapshot
        from vaultmem.index.vectors import VectorStore
        store = VectorStore.open(Path({str(cache)!r}), "m", 16)
        with vector_snapshot.writing(Path({str(cache)!r}), {name!r}):
            rows = np.array({vectors[10:].tolist()!r})
            store._collection.upsert(ids={ids[10:]!r}, embeddings=rows)
            os._exit(9)
        """
    )
    done = subprocess.run([sys.executable, "-c", crash], timeout=120, check=False)
    assert done.returncode == 9
    assert vector_snapshot.current(cache, name, "m", 16) is None
    with StoredVectors.open(cache, "m", 16) as reader:
        assert reader.count() == 12 and reader.from_snapshot
        assert reader.query_many(vectors[11:12], 1)[0][0][0] == ids[11]


def test_a_damaged_snapshot_is_ignored_and_rewritten(embedded: Path) -> None:
    by_chroma = chroma_answer(embedded)
    one_shot(embedded)
    cache = embedded / ".vaultmem"
    matrix_file, ids_file = snapshot_files(embedded)
    good_matrix, good_ids = matrix_file.read_bytes(), ids_file.read_bytes()
    matrix_file.write_bytes(good_matrix[: len(good_matrix) // 2])  # truncated
    hits, imported = one_shot(embedded)
    assert imported and same(hits, by_chroma)
    assert matrix_file.read_bytes() == good_matrix  # rewritten, whole
    with VectorStore.open(cache, MODEL, DIM) as store:
        probe = store.all_vectors()[1][:5]
        expected = store.query_many(probe, 10)
    damages = [
        lambda: matrix_file.write_bytes(b"\x93NUMPY garbage"),
        lambda: np.save(matrix_file, np.array([{"x": 1}], dtype=object), allow_pickle=True),
        lambda: np.save(matrix_file, np.zeros((3, DIM), dtype=np.float32)),
        lambda: np.save(matrix_file, with_row(good_matrix, 3, np.nan)),
        lambda: np.save(matrix_file, with_row(good_matrix, 4, 0.0)),
        lambda: ids_file.write_text("{not json"),
        lambda: ids_file.write_text(json.dumps({**json.loads(good_ids), "ids": ["x"] * 3})),
    ]
    for damage in damages:
        damage()
        assert vector_snapshot.current(cache, NAME, MODEL, DIM) is None
        with StoredVectors.open(cache, MODEL, DIM) as reader:
            assert reader.from_snapshot  # rebuilt
            got = reader.query_many(probe, 10)
        assert [[i for i, _ in g] for g in got] == [[i for i, _ in e] for e in expected]
        assert (matrix_file.read_bytes(), ids_file.read_bytes()) == (good_matrix, good_ids)
    hits, imported = one_shot(embedded)
    assert not imported and same(hits, by_chroma)


def with_row(npy: bytes, row: int, value: float) -> np.ndarray:
    """The matrix saved in ``npy`` with one row set to ``value`` throughout."""
    matrix = np.load(io.BytesIO(npy))
    matrix[row] = value
    return matrix


def poisoned(vault: Path) -> None:
    """Turn the snapshot into one that ranks other notes first (ids shuffled)."""
    ids_file = snapshot_files(vault)[1]
    head = json.loads(ids_file.read_text())
    head["ids"] = head["ids"][::-1]
    ids_file.write_text(json.dumps(head))


def test_a_planted_snapshot_is_never_served(embedded: Path, tmp_path: Path) -> None:
    by_chroma = chroma_answer(embedded)
    one_shot(embedded)
    cache = embedded / ".vaultmem"
    folder = cache / "vectors" / "snapshots"
    with VectorStore.open(cache, MODEL, DIM) as store:
        probe = store.all_vectors()[1][:5]
        expected = [[i for i, _ in hits] for hits in store.query_many(probe, 10)]

    def served_right() -> bool:
        assert vector_snapshot.current(cache, NAME, MODEL, DIM) is None  # refused
        with StoredVectors.open(cache, MODEL, DIM) as reader:
            got = [[i for i, _ in hits] for hits in reader.query_many(probe, 10)]
            return reader.from_snapshot and got == expected  # rebuilt from Chroma

    # What another user could have written: files or a folder others may write.
    poisoned(embedded)
    for path in snapshot_files(embedded):
        path.chmod(0o666)
    assert served_right()
    assert all(p.stat().st_mode & 0o777 == 0o600 for p in snapshot_files(embedded))
    poisoned(embedded)
    folder.chmod(0o777)
    assert served_right() and folder.stat().st_mode & 0o777 == 0o700
    if os.getuid() == 0:  # root can plant a file owned by another user
        poisoned(embedded)
        for path in snapshot_files(embedded):
            os.chown(path, 12345, 12345)
        assert served_right()
        assert all(p.stat().st_uid == 0 for p in snapshot_files(embedded))
    # A folder that is a link to somewhere else, through the command line.
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(folder, elsewhere)
    shutil.rmtree(folder)
    folder.symlink_to(elsewhere, target_is_directory=True)
    poisoned(embedded)  # through the link
    planted = {p.name: p.read_bytes() for p in elsewhere.iterdir()}
    hits, imported = one_shot(embedded)
    assert imported and same(hits, by_chroma)
    assert not folder.is_symlink() and folder.is_dir()
    assert {p.name: p.read_bytes() for p in elsewhere.iterdir()} == planted  # left alone


def test_a_snapshot_of_a_replaced_store_is_never_served(embedded: Path) -> None:
    one_shot(embedded)
    cache = embedded / ".vaultmem"
    assert vector_snapshot.current(cache, NAME, MODEL, DIM) is not None
    database = cache / "chroma" / "chroma.sqlite3"
    copy = database.with_name("copy.sqlite3")
    shutil.copy2(database, copy)
    os.replace(copy, database)  # the same bytes, another file: restored from a backup
    assert vector_snapshot.current(cache, NAME, MODEL, DIM) is None
    (cache / "chroma" / "vaultmem-store.id").write_text("0123456789abcdef")
    assert vector_snapshot.current(cache, NAME, MODEL, DIM) is None


def test_models_and_dimensions_never_mix(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    pairs = [("model-a", 16), ("model-a", 8), ("model-b", 16)]
    stored = {}
    for seed, (model, dim) in enumerate(pairs):
        ids, vectors = hash_ids(20, salt=f"{model}{dim}"), unit_vectors(20, dim, seed=seed)
        with VectorStore.open(cache, model, dim) as store:
            store.upsert(ids, vectors)
        stored[(model, dim)] = (ids, vectors)
    for model, dim in pairs:
        ids, vectors = stored[(model, dim)]
        with StoredVectors.open(cache, model, dim) as reader:
            assert reader.from_snapshot and reader.count() == 20
            got = reader.query_many(vectors[:3], 20)
            assert all({i for i, _ in hits} == set(ids) for hits in got)
    # Another model's snapshot filed under this one's name and generation is refused.
    folder = cache / "vectors" / "snapshots"
    a16, a8, b16 = (collection_name(m, d) for m, d in pairs)
    for other in (a8, b16):
        generation = (folder / f"{a16}.generation").read_text().strip()
        theirs = (folder / f"{other}.generation").read_text().strip()
        for suffix in ("npy", "ids"):
            shutil.copy2(
                folder / f"{other}.{theirs}.{suffix}", folder / f"{a16}.{generation}.{suffix}"
            )
        assert vector_snapshot.current(cache, a16, "model-a", 16) is None
        with StoredVectors.open(cache, "model-a", 16) as reader:
            got = reader.query_many(stored[("model-a", 16)][1][:1], 50)[0]
            assert {i for i, _ in got} == set(stored[("model-a", 16)][0])


def test_snapshot_ranks_by_exact_cosine(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    ids, vectors = hash_ids(500), unit_vectors(500, 32, seed=3)
    scaled = vectors * np.linspace(0.5, 3.0, 500, dtype=np.float32)[:, None]  # not unit
    with VectorStore.open(cache, "m", 32) as store:
        store.upsert(ids, scaled)
        queries = unit_vectors(20, 32, seed=4) * 2.5
        with StoredVectors.open(cache, "m", 32) as reader:
            assert reader.from_snapshot
            got = reader.query_many(queries, 10)
            assert reader.vectors({ids[7]})[ids[7]] == store.vectors([ids[7]])[ids[7]]
        chroma = store.query_many(queries, 10)
    unit_q = queries / np.linalg.norm(queries, axis=1, keepdims=True)
    exact = unit_q @ vectors.T
    for row, hits, theirs in zip(exact, got, chroma, strict=True):
        best = np.argsort(-row, kind="stable")[:10]
        assert [i for i, _ in hits] == [ids[j] for j in best]
        assert [s for _, s in hits] == pytest.approx([float(row[j]) for j in best], abs=1e-5)
        assert {i for i, _ in theirs} == {i for i, _ in hits}  # Chroma agrees here


@pytest.mark.slow  # a real Chroma server
def test_a_chroma_server_has_no_snapshot(chroma_server, tmp_path: Path) -> None:  # noqa: ANN001
    config = ChromaConfig(host=chroma_server.host, port=chroma_server.port, token="test-token")
    cache = tmp_path / "cache"
    ids, vectors = hash_ids(10, salt="server"), unit_vectors(10, 16, seed=5)
    model = f"server-{os.getpid()}-{tmp_path.name}"
    with VectorStore.open(cache, model, 16, config) as store:
        store.upsert(ids, vectors)
    with StoredVectors.open(cache, model, 16, config) as reader:
        assert not reader.from_snapshot and reader.count() == 10
        assert reader.query_many(vectors[:1], 1)[0][0][0] == ids[0]
    assert not (cache / "vectors" / "snapshots").exists()


def stored_in(tmp_path: Path, n: int, first: int, seed: int) -> tuple[Path, list[str], np.ndarray]:
    """(cache, ids, vectors): ``n`` ids and 16-d vectors, the first ``first`` stored for
    model "m" in a new embedded store under ``tmp_path``."""
    cache = tmp_path / "cache"
    ids, vectors = hash_ids(n), unit_vectors(n, 16, seed=seed)
    with VectorStore.open(cache, "m", 16) as store:
        store.upsert(ids[:first], vectors[:first])
    return cache, ids, vectors
