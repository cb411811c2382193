"""Errors a user can cause by their files' permissions or encodings: one line, exit 1.

Each case runs the real `python -m vaultmem` in a subprocess. Root ignores file modes,
so under root the subprocess runs without CAP_DAC_OVERRIDE (and its read and owner
siblings): root then obeys the modes like any user. A user id such as 65534 would do
too, but the interpreter may live where that user cannot reach it (``/root/.pyenv``).
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import EXAMPLE_VAULT

_PR_CAPBSET_DROP = 24
# CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER.
_FILE_MODE_CAPS = (1, 2, 3)


def _obey_file_modes() -> None:
    """In the child, before exec: give up the capabilities that let root ignore modes."""
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in _FILE_MODE_CAPS:
        if libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def vaultmem(vault: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``python -m vaultmem --vault VAULT ARGS`` as a user whose file modes count."""
    return subprocess.run(
        [sys.executable, "-m", "vaultmem", "--vault", str(vault), *args],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        preexec_fn=_obey_file_modes if os.geteuid() == 0 else None,
        timeout=120,
        check=False,
    )


def one_line_error(result: subprocess.CompletedProcess[str], *words: str) -> str:
    """The one stderr line of a command that failed cleanly (exit 1), holding ``words``."""
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 1, (result.returncode, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("vaultmem: error: "), lines[0]
    for word in words:
        assert word in lines[0], (word, lines[0])
    return lines[0]


def _read_only(*roots: Path) -> None:
    for root in roots:
        for path in [root, *root.rglob("*")]:
            path.chmod(0o555 if path.is_dir() else 0o444)


@pytest.fixture
def vault(tmp_path: Path) -> Iterator[Path]:
    """A copy of example-vault/ whose modes are given back for clean-up."""
    target = tmp_path / "vault"
    shutil.copytree(EXAMPLE_VAULT, target, ignore=shutil.ignore_patterns(".vaultmem"))
    yield target
    for path in [target, *target.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)


def _snapshot(vault: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in sorted(vault.rglob("*.md")) if p.is_file()}


def test_a_read_only_vault(vault: Path) -> None:
    _read_only(vault)
    before = _snapshot(vault)
    one_line_error(vaultmem(vault, "index"), ".vaultmem", "Permission denied")
    one_line_error(vaultmem(vault, "pin", "Harbor"), "Permission denied")
    one_line_error(vaultmem(vault, "remember", "quokkas nap at noon"), "Permission denied")
    assert _snapshot(vault) == before


def test_a_read_only_cache(vault: Path) -> None:
    assert vaultmem(vault, "index").returncode == 0
    _read_only(vault / ".vaultmem")
    with (vault / "Harbor.md").open("a", encoding="utf-8") as fh:
        fh.write("\nquokka\n")
    before = _snapshot(vault)
    one_line_error(vaultmem(vault, "index"), ".vaultmem", "Permission denied")
    one_line_error(vaultmem(vault, "pin", "Harbor"), ".vaultmem", "Permission denied")
    assert _snapshot(vault) == before
    # Reading needs no write: search, get by title and status still answer.
    found = vaultmem(vault, "search", "harbor registry", "--json")
    assert found.returncode == 0 and "Harbor.md" in found.stdout, found.stderr
    assert vaultmem(vault, "get", "Harbor").returncode == 0
    assert vaultmem(vault, "status").returncode == 0


def test_read_only_notes(vault: Path) -> None:
    assert vaultmem(vault, "index").returncode == 0
    _read_only(vault / "decisions", vault / "inbox")
    before = _snapshot(vault)
    one_line_error(vaultmem(vault, "touch", "Redis for caching"), "decisions")
    one_line_error(vaultmem(vault, "pin", "Redis for caching"), "decisions")
    one_line_error(vaultmem(vault, "remember", "quokkas nap at noon"), "inbox")
    assert _snapshot(vault) == before


def test_a_config_file_that_is_not_utf8(vault: Path, tmp_path: Path) -> None:
    (vault / ".vaultmem.toml").write_bytes(b"lock_timeout = 3  # caf\xe9\n")
    one_line_error(vaultmem(vault, "status"), ".vaultmem.toml: not UTF-8 text")
    (vault / ".vaultmem.toml").unlink()
    user = tmp_path / "user.toml"
    user.write_bytes(b"\xff\xfe[\x00v\x00]\x00")
    one_line_error(vaultmem(vault, "status", VAULTMEM_CONFIG=str(user)), f"{user}: not UTF-8")


def test_config_warnings_are_printed_once(vault: Path) -> None:
    (vault / ".vaultmem.toml").write_text("lock_timout = 3\n", encoding="utf-8")
    result = vaultmem(vault, "status")
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines() == [
        "vaultmem: warning: unknown key 'lock_timout' in .vaultmem.toml; "
        "did you mean 'lock_timeout'?"
    ]


def test_any_other_os_error_is_one_line(tmp_path: Path) -> None:
    """The boundary's backstop: `init` in a read-only folder has no message of its own."""
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    result = vaultmem(tmp_path, "init", str(folder))
    folder.chmod(0o755)
    line = one_line_error(result)
    assert line == f"vaultmem: error: cannot write {folder}/.vaultmem.toml: Permission denied"
    assert list(folder.iterdir()) == []


@pytest.mark.parametrize("text", ["- item", "- hello there", "-5 °C at night", "--- a rule"])
def test_a_memory_may_start_with_a_dash(vault: Path, text: str) -> None:
    from tests.conftest import Cli

    cli = Cli(vault)
    path = cli("remember", text, "--tags", "ops").stdout.splitlines()[-1]
    assert (vault / path).read_text(encoding="utf-8").rstrip().endswith(text)
    titled = cli("remember", "--title", "- dashed title", "--", text + " again").stdout
    assert titled.splitlines()[-1] == "inbox/dashed-title.md"
    # A misspelt option is still a usage error, not a memory.
    assert cli("remember", "--titel", ok=False).exit_code == 2
