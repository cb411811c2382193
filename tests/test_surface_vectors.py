"""Surfacing in process with vectors (issue 30, item 4): a hook without a server reads the
flat vector snapshot and the cached int8 model, never Chroma, and falls back to keywords
when either is missing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import Cli, copy_indexed
from vaultmem import config as vconfig
from vaultmem.agent.surface import cheap_backends
from vaultmem.index import vector_snapshot
from vaultmem.index.vectors import collection_name

PROMPT = "the cache layer lost every user session when a node was replaced"


@pytest.fixture
def embedded(embedded_example: Path, tmp_path: Path, vectors_on: None) -> Path:
    vault = tmp_path / "vault"
    copy_indexed(embedded_example, vault)
    return vault


def _config(vault: Path) -> vconfig.Config:
    return vconfig.build(vault, {})


def test_the_embed_sweep_leaves_a_snapshot_and_a_hook_uses_vectors(
    cli: Cli, vectors_on: None
) -> None:
    cli("index")  # keywords, then the embed sweep
    config = _config(cli.vault)
    backends = cheap_backends(config, None)
    assert backends.embedder is not None
    name = collection_name(backends.embedder.model_id, backends.embedder.dimension)
    assert vector_snapshot.filed(config.cache_dir, name)
    # Without the snapshot the hook would have to open Chroma: keywords only instead.
    for path in (config.cache_dir / "vectors" / "snapshots").glob("*.npy"):
        path.unlink()
    assert cheap_backends(config, None).embedder is None
    assert cheap_backends(config, True).embedder is not None  # asked for: always


def test_surface_in_process_searches_vectors_without_chroma(embedded: Path) -> None:
    # A copy is another store (the snapshot names its database's inode): the first read
    # files a snapshot of it, as `embed` does after a sweep.
    assert not cheap_backends(_config(embedded), None).embedder
    Cli(embedded)("vsearch", "caching layer")
    assert cheap_backends(_config(embedded), None).embedder
    # A whole process, no server: the block must come with cosines, and chromadb must
    # not be imported on the way.
    code = (
        "import sys, json; from vaultmem.cli import run; sys.argv = ['vaultmem', '--vault', "
        f"{str(embedded)!r}, 'surface', {PROMPT!r}, '--json']\n"
        "try:\n    run()\nexcept SystemExit:\n    pass\n"
        "loaded = [m for m in ('chromadb', 'onnxruntime') if m in sys.modules]\n"
        "print(' '.join(loaded), file=sys.stderr)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    # The model ran (the prompt was embedded); Chroma was never imported.
    assert done.stderr.strip().splitlines()[-1] == "onnxruntime", done.stderr
    out = json.loads(done.stdout)
    assert "decisions/Redis for caching.md" in [n["path"] for n in out["notes"]]


def test_a_keyword_vault_surfaces_as_before(cli: Cli) -> None:
    cli("index")
    assert cheap_backends(_config(cli.vault), None).embedder is None
