"""The cache holds the notes' text (keyword index, snippets, fragments), the server token
and its socket: whatever the umask or the notes' own modes, nobody but its user may read
it. Checked for real, as another uid (65534) trying to read every file the cache holds.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import EXAMPLE_VAULT, run_vaultmem
from tests.test_trust import run_as_other

pytestmark = pytest.mark.skipif(os.getuid() != 0, reason="needs root to act as another user")

# Run as the other user: which files under the cache it could open, and whether it could
# list the cache at all.
_PROBE = """
import json, os, sys
cache, files = sys.argv[1], json.loads(sys.argv[2])
out = {"listed": True, "read": []}
try:
    os.listdir(cache)
except OSError:
    out["listed"] = False
for name in files:
    try:
        with open(os.path.join(cache, name), "rb") as fh:
            fh.read(1)
        out["read"].append(name)
    except OSError:
        pass
print(json.dumps(out))
"""


@pytest.fixture
def shared_place() -> Iterator[Path]:
    """A folder every user may enter (pytest's own temp folder is private to root), and
    the usual umask (022) for the commands run meanwhile, whatever the runner's."""
    place = Path(tempfile.mkdtemp(prefix="vaultmem-private-"))
    place.chmod(0o755)
    before = os.umask(0o022)
    try:
        yield place
    finally:
        os.umask(before)
        shutil.rmtree(place, ignore_errors=True)


def _private_vault(place: Path) -> Path:
    vault = place / "vault"
    shutil.copytree(EXAMPLE_VAULT, vault, ignore=shutil.ignore_patterns(".vaultmem"))
    for path in [vault, *vault.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o600)  # notes private, folders open
    return vault


def _probe(cache: Path) -> dict:
    files = [str(p.relative_to(cache)) for p in cache.rglob("*") if p.is_file()]
    assert files, "the cache is empty"
    return json.loads(run_as_other(_PROBE, str(cache), json.dumps(files), timeout=60))


@pytest.mark.parametrize("first", ["index", "init", "remember"])
def test_a_private_vault_gets_a_cache_nobody_else_can_read(shared_place: Path, first: str) -> None:
    vault = _private_vault(shared_place)
    args = {"index": ["index"], "init": ["init", str(vault)], "remember": ["remember", "x y z"]}
    assert run_vaultmem(vault, *args[first]).returncode == 0
    assert run_vaultmem(vault, "index").returncode == 0
    cache = vault / ".vaultmem"
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700
    seen = _probe(cache)
    assert seen == {"listed": False, "read": []}, seen


def test_a_moved_cache_is_private_too(shared_place: Path) -> None:
    vault = _private_vault(shared_place)
    cache = shared_place / "caches" / "work"
    env = {**os.environ, "VAULTMEM_CACHE_DIR": str(cache), "VAULTMEM_EMBEDDER": "none"}
    assert run_vaultmem(vault, "index", env=env).returncode == 0
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700
    assert _probe(cache) == {"listed": False, "read": []}
