"""Git runs no program a vault brings (issue 27): a vault delivered with its own
``.git/config`` (an archive, a synced folder) names programs git would run: an fsmonitor
hook on every command that reads the index, a clean filter when a porcelain command
refreshes it. vaultmem's git calls (doctor, timeline, gc --delete, git setup) run none.
"""

from __future__ import annotations

import json
import os
import subprocess
import tarfile
from pathlib import Path

import pytest

from tests import test_merge_driver
from tests.conftest import run_git, run_vaultmem
from tests.test_merge_driver import Machine
from tests.test_merge_driver import git as mgit
from tests.test_sweeps import DECAYED, NOW, iso, write

# Two clones of example-vault/ with the driver set up (the merge driver tests' fixture).
two_clones = test_merge_driver.machines


@pytest.fixture
def delivered(tmp_path: Path) -> tuple[Path, Path]:
    """A vault in git, packed by its author with a hostile .git/config, unpacked by the
    user: (the unpacked vault, the folder the planted programs leave proof in)."""
    author = tmp_path / "author" / "notes"
    author.mkdir(parents=True)
    write(author, "inbox/stale.md", "gone soon", type="observation", **DECAYED)
    write(author, "decisions/keep.md", "a decision", type="decision")
    (author / ".gitattributes").write_text("*.md filter=evil\n", "utf-8")
    run_git(author, "init", "-q", "-b", "main")
    run_git(author, "add", "-A")
    run_git(author, "commit", "-q", "-m", "notes")
    proof = tmp_path / "proof"
    proof.mkdir()
    with (author / ".git" / "config").open("a", encoding="utf-8") as fh:
        fh.write(
            f'[core]\n\tfsmonitor = "touch {proof}/fsmonitor; false"\n'
            f'[filter "evil"]\n\tclean = "touch {proof}/clean-filter; cat"\n'
            f'[log]\n\tshowSignature = true\n[gpg]\n\tprogram = "touch {proof}/gpg"\n'
            f'[core]\n\tpager = "touch {proof}/pager; cat"\n'
        )
    # Changed on disk since the commit: a porcelain `git diff` would re-read it through
    # the clean filter.
    stale = author / "inbox" / "stale.md"
    os.utime(stale, (stale.stat().st_atime, stale.stat().st_mtime + 5))
    archive = tmp_path / "notes.tar"
    with tarfile.open(archive, "w") as tar:
        tar.add(author, arcname="notes")
    for where in ("tried", "user"):
        with tarfile.open(archive) as tar:
            tar.extractall(tmp_path / where, filter="tar")
    # Proof, on a copy, that the planted config works as the attack needs: plain git
    # runs its programs.
    tried = tmp_path / "tried" / "notes"
    subprocess.run(["git", "-C", str(tried), "status"], capture_output=True, check=False)
    assert sorted(p.name for p in proof.iterdir()) == ["clean-filter", "fsmonitor"]
    for planted in proof.iterdir():
        planted.unlink()
    return tmp_path / "user" / "notes", proof


def test_no_vaultmem_git_call_runs_a_program_of_the_vaults_git_config(
    delivered: tuple[Path, Path],
) -> None:
    vault, proof = delivered
    env = {**os.environ, "VAULTMEM_NOW": iso(NOW)}
    assert run_vaultmem(vault, "index", env=env).returncode == 0

    def ran(*args: str) -> str:
        done = run_vaultmem(vault, *args, env=env)
        assert sorted(p.name for p in proof.iterdir()) == [], f"vaultmem {' '.join(args)}"
        return done.stdout

    assert "this clone has no merge driver" in ran("doctor")  # it did ask git
    assert "committed" in ran("timeline", "decisions/keep.md")
    # Touched since the commit, the same bytes: git can give it back, so it may go.
    assert ran("gc", "--delete", "--dry-run").split() == ["delete", "0.0098", "inbox/stale.md"]
    assert "merge.vaultmem.driver" in ran("git", "setup")


def test_a_note_named_like_an_option_merges_as_a_note(
    two_clones: tuple[Machine, Machine],
) -> None:
    a, b = two_clones
    note = "-h.md"
    (a.vault / note).write_text("---\nuse_count: 1\n---\nA note named -h.\n", "utf-8")
    assert a.sync().returncode == 0 and b.sync().returncode == 0
    (a.vault / note).write_text("---\nuse_count: 3\n---\nA note named -h.\n", "utf-8")
    (b.vault / note).write_text("---\nuse_count: 2\n---\nA note named -h.\n", "utf-8")
    assert a.sync().returncode == 0
    assert b.sync().returncode == 0
    # Both sides' uses counted: the driver merged the note, it did not print its --help.
    assert (b.vault / note).read_text("utf-8").startswith("---\nuse_count: 4\n")


def test_doctor_warns_of_a_driver_registered_without_the_separator(
    two_clones: tuple[Machine, Machine],
) -> None:
    a, _ = two_clones
    old = "vaultmem merge-driver %O %A %B %P"
    mgit(a.vault, "config", "--local", "merge.vaultmem.driver", old)
    report = json.loads(a.cli("doctor", "--json", ok=False).stdout)
    (finding,) = [f for f in report["findings"] if "has no `--`" in f["message"]]
    assert finding["severity"] == "warn" and finding["fix"] == "vaultmem git setup"
    assert "merge.vaultmem.driver" in a.cli("git", "setup").stdout
