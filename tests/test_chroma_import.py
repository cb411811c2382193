"""chromadb imported lighter (vaultmem.index.chroma_import) is still chromadb: it stores
and finds vectors, its decorator checks still run, and httpx is whole afterwards."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = r"""
import sys
from vaultmem.index.vectors import _import_chromadb

chromadb = _import_chromadb()
assert "httpx._main" not in sys.modules, "httpx's CLI was imported"
import dis
checker = sys.modules["overrides.overrides"]
assert checker.dis is dis, "the disassembly cache outlived the import"

# The checks still run: an @override with no base method is refused.
from overrides import EnforceOverrides, override
try:
    class Bad(EnforceOverrides):
        @override
        def nothing_to_override(self): ...
except TypeError:
    pass
else:
    raise AssertionError("overrides stopped checking")

client = chromadb.PersistentClient(path=sys.argv[1])
collection = client.create_collection("col", metadata={"hnsw:space": "cosine"})
collection.add(ids=["a", "b"], embeddings=[[1.0, 0.0], [0.0, 1.0]])
found = collection.query(query_embeddings=[[0.9, 0.1]], n_results=1)
assert found["ids"] == [["a"]], found

import httpx._main  # the real CLI module is still importable later
print("ok")
"""


def test_light_chromadb_import_is_still_chromadb(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path / "chroma")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
