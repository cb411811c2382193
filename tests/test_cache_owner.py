"""The cache is vaultmem's own (issue 27): a cache folder is used only when it is a real
folder of this user's, nobody else may write to it, and vaultmem made it (its marker);
vaultmem deletes only inside such a cache; its files are 0600 and its folders 0700.

Built as an attacker would: the other user (uid 65534, a real process) makes the folder
first, or the cache is a link to theirs, or it arrives committed in the vault's git
history. And as an upgrade meets it: an older vaultmem's unmarked cache is adopted, emptied.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import EXAMPLE_VAULT, run_git, run_vaultmem
from tests.foreign_vault import Shared, shared_vault
from tests.test_trust import OTHER, run_as_other

pytestmark = pytest.mark.skipif(os.getuid() != 0, reason="needs root to act as another user")

# The other user makes the folder a victim's configuration names, in a place both reach.
_MAKE = """
import os, sys
folder = sys.argv[1]
os.mkdir(folder)
os.chmod(folder, 0o777)
os.mkdir(os.path.join(folder, "whoosh-theirs"))
open(os.path.join(folder, "whoosh-theirs", "data"), "w").write("the other user's")
"""


@pytest.fixture
def shared_place() -> Iterator[Path]:
    """A folder every user may write to, as /tmp (sticky)."""
    place = Path(tempfile.mkdtemp(prefix="vaultmem-owner-"))
    place.chmod(0o1777)
    try:
        yield place
    finally:
        shutil.rmtree(place, ignore_errors=True)


def _vault(place: Path) -> Path:
    vault = place / "vault"
    shutil.copytree(EXAMPLE_VAULT, vault, ignore=shutil.ignore_patterns(".vaultmem"))
    return vault


def _refused(done: object, cache: Path, why: str) -> None:
    assert getattr(done, "returncode") == 1  # noqa: B009 - a CompletedProcess
    stderr = getattr(done, "stderr")  # noqa: B009
    assert stderr.splitlines() == [f"vaultmem: error: cannot use the cache folder {cache}: {why}"]


def test_a_cache_folder_another_user_made_first_is_never_used(shared_place: Path) -> None:
    vault = _vault(shared_place)
    cache = shared_place / "cache"
    run_as_other(_MAKE, str(cache))
    env = {**os.environ, "VAULTMEM_CACHE_DIR": str(cache)}
    for command in (["index", "--rebuild"], ["search", "redis"], ["status"]):
        _refused(
            run_vaultmem(vault, *command, env=env), cache, f"it belongs to uid {OTHER}, not to you"
        )
    assert sorted(p.name for p in cache.rglob("*")) == ["data", "whoosh-theirs"]


def test_a_cache_owned_by_another_uid_is_refused(shared_place: Path) -> None:
    vault = _vault(shared_place)
    assert run_vaultmem(vault, "index").returncode == 0
    cache = vault / ".vaultmem"
    for path in [cache, *cache.rglob("*")]:
        os.chown(path, OTHER, OTHER, follow_symlinks=False)
    _refused(
        run_vaultmem(vault, "search", "redis"), cache, f"it belongs to uid {OTHER}, not to you"
    )


def test_a_symlinked_cache_is_refused(shared_place: Path) -> None:
    vault = _vault(shared_place)
    theirs = shared_place / "theirs"
    run_as_other(_MAKE, str(theirs))
    (vault / ".vaultmem").symlink_to(theirs)
    done = run_vaultmem(vault, "index", "--rebuild")
    _refused(done, vault / ".vaultmem", "it is a symlink (a cache must be a real folder of yours)")
    assert sorted(p.name for p in theirs.rglob("*")) == ["data", "whoosh-theirs"]


def test_a_group_writable_cache_is_refused(shared_place: Path) -> None:
    vault = _vault(shared_place)
    assert run_vaultmem(vault, "index").returncode == 0
    cache = vault / ".vaultmem"
    cache.chmod(0o770)
    _refused(
        run_vaultmem(vault, "search", "x"),
        cache,
        f"other users may write to it (chmod 700 {cache})",
    )


def test_a_folder_vaultmem_did_not_make_is_neither_used_nor_emptied(tmp_path: Path) -> None:
    vault = _vault(tmp_path)
    mine = tmp_path / "documents"
    (mine / "whoosh-notes").mkdir(parents=True)
    (mine / "whoosh-notes" / "draft.txt").write_text("mine", "utf-8")
    env = {**os.environ, "VAULTMEM_CACHE_DIR": str(mine)}
    done = run_vaultmem(vault, "index", "--rebuild", env=env)
    _refused(
        done,
        mine,
        "it holds files vaultmem did not make (no vaultmem CACHEDIR.TAG): "
        "choose an empty or new folder",
    )
    assert (mine / "whoosh-notes" / "draft.txt").read_text("utf-8") == "mine"


def test_a_cache_committed_to_the_vaults_git_is_never_read(tmp_path: Path) -> None:
    shared: Shared = shared_vault(tmp_path)
    # Alice indexes, then commits her cache (pickles Whoosh and Chroma read back), marker too.
    assert run_vaultmem(shared.alice, "index").returncode == 0
    run_git(shared.alice, "add", "-f", ".vaultmem")
    shared.attack({}, "share my index")
    cache = shared.bob / ".vaultmem"
    assert (cache / "manifest.sqlite").is_file() and (cache / "CACHEDIR.TAG").is_file()
    done = run_vaultmem(shared.bob, "search", "redis")
    assert done.returncode == 1
    assert "git tracks files in it (.gitignore…)" in done.stderr
    assert len(done.stderr.splitlines()) == 1


def test_an_older_vaultmems_cache_is_adopted_and_made_private(tmp_path: Path) -> None:
    vault = _vault(tmp_path)
    assert run_vaultmem(vault, "index").returncode == 0
    cache = vault / ".vaultmem"
    # As an older vaultmem left it: no marker, the umask's modes.
    (cache / "CACHEDIR.TAG").unlink()
    for path in cache.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    cache.chmod(0o755)
    # Whoever left it, nothing in it is read: it is emptied, then marked.
    found = run_vaultmem(vault, "search", "redis caching")
    assert found.returncode == 1 and "not indexed yet" in found.stderr
    assert not (cache / "manifest.sqlite").exists()
    assert run_vaultmem(vault, "index").returncode == 0
    found = run_vaultmem(vault, "search", "redis caching")
    assert found.returncode == 0 and "Redis" in found.stdout
    assert run_vaultmem(vault, "remember", "An adopted cache keeps working.").returncode == 0
    assert "vaultmem" in (cache / "CACHEDIR.TAG").read_text("utf-8")
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700
    loose = [p for p in cache.rglob("*") if stat.S_IMODE(p.lstat().st_mode) & 0o077]
    assert loose == []


def test_the_cache_files_are_0600_and_its_folders_0700(tmp_path: Path) -> None:
    vault = _vault(tmp_path)
    before = os.umask(0o022)
    try:
        assert run_vaultmem(vault, "index").returncode == 0
        assert run_vaultmem(vault, "pin", "decisions/Redis for caching.md").returncode == 0
    finally:
        os.umask(before)
    cache = vault / ".vaultmem"
    modes = {
        str(p.relative_to(cache)): oct(stat.S_IMODE(p.lstat().st_mode))
        for p in [cache, *cache.rglob("*")]
    }
    assert {m for m in modes.values()} <= {"0o600", "0o700"}, modes


def test_a_pull_that_writes_into_the_cache_stops_it_being_read(tmp_path: Path) -> None:
    shared: Shared = shared_vault(tmp_path)
    assert run_vaultmem(shared.bob, "index").returncode == 0  # Bob's cache, marked
    assert run_vaultmem(shared.bob, "search", "redis").returncode == 0
    # Alice commits her index files (not the marker) over the ones Bob's cache holds.
    assert run_vaultmem(shared.alice, "index").returncode == 0
    run_git(shared.alice, "add", "-f", ".vaultmem")
    run_git(shared.alice, "rm", "-q", "--cached", ".vaultmem/CACHEDIR.TAG")
    shared.attack({}, "share my index")
    cache = shared.bob / ".vaultmem"
    assert "vaultmem" in (cache / "CACHEDIR.TAG").read_text("utf-8")  # still Bob's
    done = run_vaultmem(shared.bob, "search", "redis")
    assert done.returncode == 1 and len(done.stderr.splitlines()) == 1
    assert f"cannot use the cache folder {cache}: git tracks files in it" in done.stderr
