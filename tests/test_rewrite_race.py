"""The write protocol under real concurrency: a user's save or appended line is never lost.

An editor-style saver (read, add a line, temp file, ``os.replace``) and an appender
(``open(p, "a")``) run in their own processes while vaultmem rewrites the same note in a
loop, in-process and as whole ``python -m vaultmem`` runs. The long version of these runs
is ``benchmarks/bench_write_race.py``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import run_vaultmem
from race_scripts import APPENDER, HELM, SAVER

from vaultmem.errors import ConflictError, VaultmemError
from vaultmem.frontmatter.files import update_note
from vaultmem.frontmatter.scan import parse_meta

REPO = Path(__file__).resolve().parent.parent


def _toggle_pin(meta: dict[Any, Any]) -> dict[str, object | None]:
    return {"pinned": None if meta.get("pinned") else True}


def _bump(meta: dict[Any, Any]) -> dict[str, object | None]:
    return {"use_count": int(meta.get("use_count") or 0) + 1}


def _leftovers(folder: Path) -> list[str]:
    """Temp files of vaultmem (``.<name>.<random>.tmp``) left in ``folder``."""
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(".") and ".md." in p.name)


def _race(
    vault: Path,
    script: str,
    count: int,
    every: float,
    compute: Callable[[dict[Any, Any]], dict[str, object | None]],
    commands: list[str],
) -> tuple[int, int]:
    """Run ``script`` against the Helm note while ``compute`` is written back in a loop,
    with one whole-process ``vaultmem <command> HELM`` every few rounds; (writes, runs)."""
    note = vault / HELM
    proc = subprocess.Popen([sys.executable, "-c", script, str(note), str(count), str(every)])
    writes = rounds = 0
    pending = list(commands)
    try:
        while proc.poll() is None:
            rounds += 1
            # "Being edited; try again" is allowed; losing a save is not.
            with contextlib.suppress(ConflictError):
                writes += update_note(note, compute, HELM).changed
            if pending and rounds % 10 == 0:
                done = run_vaultmem(vault, pending.pop(0), HELM)
                assert done.returncode in (0, 75), done.stderr
                assert "Traceback" not in done.stderr
    finally:
        proc.wait(timeout=120)
    assert proc.returncode == 0
    return writes, len(commands) - len(pending)


def test_editor_saves_survive_pin_and_unpin(vault: Path) -> None:
    count = 300
    writes, runs = _race(vault, SAVER, count, 0.005, _toggle_pin, ["pin", "unpin", "pin"])
    raw = (vault / HELM).read_bytes()
    missing = [i for i in range(count) if b"marker %d\n" % i not in raw]
    assert missing == [], f"{len(missing)} of {count} saves lost"
    parse_meta(raw, HELM)  # the frontmatter still parses
    assert writes >= 10 and runs >= 1
    assert _leftovers(vault / "decisions") == []


def test_appended_lines_survive_touch(vault: Path) -> None:
    count = 600
    writes, runs = _race(vault, APPENDER, count, 0.002, _bump, ["touch", "touch"])
    raw = (vault / HELM).read_bytes()
    missing = [i for i in range(count) if b"appended %d\n" % i not in raw]
    assert missing == [], f"{len(missing)} of {count} appended lines lost"
    meta, _ = parse_meta(raw, HELM)
    assert meta["use_count"] >= writes >= 10 and runs >= 1
    assert _leftovers(vault / "decisions") == []


# --------------------------------------------------------------------------- refusals


@pytest.fixture(params=["exchange+lease", "exchange", "replace"])
def protocol(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each way rewrite can run: Linux with leases, Linux without leases (fs.leases-enable
    = 0, a file system that refuses them), and a platform without renameat2."""
    import vaultmem.atomic as atomic

    if atomic._RENAMEAT2 is None and request.param != "replace":
        pytest.skip("no renameat2 here")
    if request.param == "exchange":
        monkeypatch.setattr(atomic, "fcntl", None)
    elif request.param == "replace":
        monkeypatch.setattr(atomic, "_RENAMEAT2", None)
    return str(request.param)


def test_a_refusing_transform_changes_nothing(tmp_path: Path) -> None:
    from vaultmem.atomic import rewrite

    note = tmp_path / "n.md"
    note.write_bytes(b"body\n")
    os.utime(note, ns=(1_000_000_000, 1_000_000_000))

    def refuse(raw: bytes) -> bytes:
        raise VaultmemError("n.md: no")

    with pytest.raises(VaultmemError, match="no"):
        rewrite(note, refuse, "n.md")
    assert note.read_bytes() == b"body\n"
    assert note.stat().st_mtime_ns == 1_000_000_000
    assert sorted(p.name for p in tmp_path.iterdir()) == ["n.md"]


def test_an_unchanged_note_is_not_written(tmp_path: Path) -> None:
    from vaultmem.atomic import rewrite

    note = tmp_path / "n.md"
    note.write_bytes(b"body\n")
    os.utime(note, ns=(1_000_000_000, 1_000_000_000))
    result = rewrite(note, lambda raw: raw, "n.md")
    assert not result.changed and result.reapplied == 0
    assert note.stat().st_mtime_ns == 1_000_000_000


def _editor_save(note: Path, data: bytes) -> None:
    tmp = note.with_name(".editor-save.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, note)


def test_a_save_between_read_and_write_is_kept_and_reapplied(tmp_path: Path, protocol: str) -> None:
    from vaultmem.atomic import rewrite

    note = tmp_path / "n.md"
    note.write_bytes(b"one\n")
    seen: list[bytes] = []

    def stamp(raw: bytes) -> bytes:
        seen.append(raw)
        if len(seen) == 1:
            _editor_save(note, b"one\nthe user's line\n")
        return b"vaultmem\n" + raw.removeprefix(b"vaultmem\n")

    result = rewrite(note, stamp, "n.md")
    assert note.read_bytes() == b"vaultmem\none\nthe user's line\n"
    assert result.changed and result.reapplied == 1
    assert result.before == b"one\nthe user's line\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["n.md"]


def test_a_note_that_keeps_changing_exits_75_with_the_users_bytes(
    vault: Path, protocol: str
) -> None:
    from vaultmem.atomic import MAX_ATTEMPTS, rewrite

    note = vault / HELM
    saves = 0

    def stamp(raw: bytes) -> bytes:
        nonlocal saves
        saves += 1
        _editor_save(note, b"the user's save %d\n" % saves)
        return b"vaultmem\n" + raw

    with pytest.raises(ConflictError, match="note is being edited; try again") as info:
        rewrite(note, stamp, HELM)
    assert info.value.exit_code == 75
    assert saves > MAX_ATTEMPTS
    assert note.read_bytes() == b"the user's save %d\n" % saves
    assert _leftovers(note.parent) == []


def test_an_interrupt_after_a_concurrent_save_leaves_the_users_bytes(
    tmp_path: Path, protocol: str
) -> None:
    from vaultmem.atomic import rewrite

    note = tmp_path / "n.md"
    note.write_bytes(b"one\n")
    calls = 0

    def stamp(raw: bytes) -> bytes:
        nonlocal calls
        calls += 1
        if calls == 1:
            _editor_save(note, b"one\ntwo\n")
            return b"vaultmem\n" + raw
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        rewrite(note, stamp, "n.md")
    assert note.read_bytes() == b"one\ntwo\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["n.md"]


def test_a_read_only_note_is_one_line_and_untouched(vault: Path) -> None:
    note = vault / HELM
    before = note.read_bytes()
    note.chmod(0o444)
    done = run_vaultmem(vault, "pin", HELM)
    assert done.returncode == 1
    assert (
        done.stderr.strip()
        == f"vaultmem: error: {HELM}: note is read-only (no write permission); left unchanged"
    )
    assert note.read_bytes() == before
    assert stat.S_IMODE(note.stat().st_mode) == 0o444
    assert _leftovers(note.parent) == []


_NOBODY_WRITE = r"""
import sys
from pathlib import Path
from vaultmem.atomic import rewrite
from vaultmem.errors import VaultmemError
try:
    rewrite(Path(sys.argv[1]), lambda raw: raw + b"x\n", "n.md")
except VaultmemError as exc:
    print(exc)
"""


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root")
def test_a_folder_that_refuses_the_temp_file_is_one_line() -> None:
    # As root every folder is writable: the writer runs as nobody (uid 65534) instead.
    folder = Path(tempfile.mkdtemp(prefix="vaultmem-ro-"))
    try:
        folder.chmod(0o755)
        note = folder / "n.md"
        note.write_bytes(b"body\n")
        note.chmod(0o666)  # the note itself is writable; its folder is not
        python = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
        env = {"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}
        probe = subprocess.run([python, "-c", "import vaultmem.atomic"], user=65534, env=env)
        if probe.returncode != 0:
            pytest.skip("no interpreter that uid 65534 can run")
        done = subprocess.run(
            [python, "-c", _NOBODY_WRITE, str(note)],
            user=65534,
            env=env,
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
        assert (
            done.stdout.strip() == f"cannot write {folder}: Permission denied (n.md left unchanged)"
        )
        assert note.read_bytes() == b"body\n"
        assert sorted(p.name for p in folder.iterdir()) == ["n.md"]
    finally:
        shutil.rmtree(folder)


def test_mode_and_symlink_are_kept(tmp_path: Path) -> None:
    from vaultmem.atomic import rewrite

    real = tmp_path / "real.md"
    real.write_bytes(b"body\n")
    real.chmod(0o640)
    link = tmp_path / "link.md"
    link.symlink_to(real)
    result = rewrite(link, lambda raw: raw + b"more\n", "link.md")
    assert result.path == real and link.is_symlink()
    assert real.read_bytes() == b"body\nmore\n"
    assert stat.S_IMODE(real.stat().st_mode) == 0o640


# --------------------------------------------------------------------------- create_new


def test_create_new_never_clobbers(tmp_path: Path) -> None:
    from vaultmem.atomic import create_new

    note = tmp_path / "n.md"
    create_new(note, b"first\n")
    assert note.read_bytes() == b"first\n"
    with pytest.raises(FileExistsError):
        create_new(note, b"second\n")
    assert note.read_bytes() == b"first\n"
    dangling = tmp_path / "d.md"
    dangling.symlink_to(tmp_path / "nowhere.md")
    with pytest.raises(FileExistsError):
        create_new(dangling, b"x\n")
    assert not (tmp_path / "nowhere.md").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.md", "n.md"]
