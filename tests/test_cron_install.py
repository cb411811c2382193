"""`vaultmem cron --install/--uninstall`: vaultmem's block merged into the user's crontab
(and the systemd units written and enabled), everything else kept byte for byte.

`crontab` and `systemctl` are real programs here: small shell scripts first on PATH that
keep the table in a temp file and log what they were asked, as the real ones would do
with the spool and the user manager.
"""

from __future__ import annotations

import os
import shlex
import shutil
from pathlib import Path

import pytest
from conftest import Cli

from vaultmem.cron import unit_name

USER_TABLE = (
    b"# my own jobs\n"
    b"MAILTO=me@example.com\n"
    b"0 * * * * /usr/bin/backup --tag '100\\%' \xe2\x80\x94 done\n"
    b"\n"
    b"@reboot /usr/bin/true\n"
)


def _script(folder: Path, name: str, body: str) -> Path:
    folder.mkdir(exist_ok=True)
    path = folder / name
    path.write_text("#!/bin/sh\n" + body, "utf-8")
    path.chmod(0o755)
    return path


@pytest.fixture
def bin_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder first on PATH for the fake schedulers (systemctl: none unless a test adds it)."""
    folder = tmp_path / "bin"
    folder.mkdir()
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}/nonexistent")
    return folder


@pytest.fixture
def table(bin_dir: Path, tmp_path: Path) -> Path:
    """The file a real `crontab` program on PATH keeps the user's table in (absent: the
    user has no crontab, and `crontab -l` says so and exits 1, as cron's does)."""
    path = tmp_path / "spool" / "me"
    path.parent.mkdir()
    cat, spool = shlex.quote(shutil.which("cat") or "/bin/cat"), shlex.quote(str(path))
    _script(
        bin_dir,
        "crontab",
        f"""case "$1" in
  -l) if [ ! -f {spool} ]; then echo "no crontab for me" >&2; exit 1; fi
      exec {cat} {spool} ;;
  -) exec {cat} > {spool} ;;
  *) echo "usage: crontab [-l | -]" >&2; exit 2 ;;
esac
""",
    )
    return path


def _vault(tmp_path: Path, name: str) -> Cli:
    folder = tmp_path / name
    folder.mkdir(parents=True)
    (folder / ".vaultmem.toml").write_text("", "utf-8")
    return Cli(folder)


def _blocks(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("# >>> vaultmem ")]


def test_install_merges_one_block_per_vault_and_uninstall_gives_the_table_back(
    tmp_path: Path, table: Path
) -> None:
    table.write_bytes(USER_TABLE)
    notes, work = _vault(tmp_path, "my notes"), _vault(tmp_path, "work")

    first = notes("cron", "--install")
    assert first.stdout.startswith(f"# >>> vaultmem {notes.vault} >>>\n")
    assert first.stdout.endswith(f"# <<< vaultmem {notes.vault} <<<\n")
    assert f"installed: 3 jobs for {notes.vault}" in first.stderr
    assert len(first.stderr.splitlines()) == 1
    # The jobs are the ones `cron` prints, and the user's lines come first, untouched.
    printed = [line for line in notes("cron").stdout.splitlines() if line[:1] not in ("#", "")]
    assert [line for line in first.stdout.splitlines() if line[:1] not in ("#", "")] == printed
    assert table.read_bytes() == USER_TABLE + first.stdout.encode()

    again = notes("cron", "--install")
    assert "already installed" in again.stderr and again.stdout == first.stdout
    assert table.read_bytes() == USER_TABLE + first.stdout.encode()

    work("cron", "--install")
    both = table.read_bytes().decode()
    assert _blocks(both) == [
        f"# >>> vaultmem {notes.vault} >>>",
        f"# >>> vaultmem {work.vault} >>>",
    ]

    removed = notes("cron", "--uninstall")
    assert f"removed the block for {notes.vault}" in removed.stderr
    assert _blocks(table.read_bytes().decode()) == [f"# >>> vaultmem {work.vault} >>>"]
    assert table.read_bytes().startswith(USER_TABLE)
    work("cron", "--uninstall")
    assert table.read_bytes() == USER_TABLE
    gone = work("cron", "--uninstall")
    assert "no vaultmem block" in gone.stderr and table.read_bytes() == USER_TABLE


def test_install_without_a_crontab_yet_creates_one(tmp_path: Path, table: Path) -> None:
    notes = _vault(tmp_path, "notes")
    assert not table.exists()
    done = notes("cron", "--install")
    assert table.read_text("utf-8") == done.stdout
    notes("cron", "--uninstall")
    assert table.read_bytes() == b""


def test_a_changed_block_is_replaced_in_place(tmp_path: Path, table: Path) -> None:
    notes = _vault(tmp_path, "notes")
    start, end = f"# >>> vaultmem {notes.vault} >>>", f"# <<< vaultmem {notes.vault} <<<"
    before, after = b"1 1 * * * /usr/bin/first\n", b"2 2 * * * /usr/bin/last\n"
    old = f"{start}\n30 3 * * * /old/vaultmem promote\n{end}\n".encode()
    table.write_bytes(before + old + after)
    done = notes("cron", "--install")
    assert "updated: 3 jobs" in done.stderr
    assert table.read_bytes() == before + done.stdout.encode() + after
    assert b"/old/vaultmem" not in table.read_bytes()


def test_a_table_that_ends_without_a_newline_keeps_its_last_line(
    tmp_path: Path, table: Path
) -> None:
    notes = _vault(tmp_path, "notes")
    table.write_bytes(b"5 5 * * * /usr/bin/mine")
    done = notes("cron", "--install")
    assert table.read_bytes() == b"5 5 * * * /usr/bin/mine\n" + done.stdout.encode()


def test_lines_pasted_by_hand_before_are_pointed_out(tmp_path: Path, table: Path) -> None:
    notes = _vault(tmp_path, "notes")
    pasted = notes("cron").stdout
    table.write_text(pasted, "utf-8")
    done = notes("cron", "--install")
    strays = [line for line in done.stderr.splitlines() if "outside the block" in line]
    assert len(strays) == 4  # the heading and the three jobs
    assert table.read_text("utf-8") == pasted + done.stdout  # reported, not deleted


def test_a_block_without_its_end_line_is_an_error_and_nothing_is_written(
    tmp_path: Path, table: Path
) -> None:
    notes = _vault(tmp_path, "notes")
    broken = f"0 0 * * * /usr/bin/x\n# >>> vaultmem {notes.vault} >>>\n30 3 * * * y\n".encode()
    table.write_bytes(broken)
    for flag in ("--install", "--uninstall"):
        failed = notes("cron", flag, ok=False)
        assert failed.exit_code == 1, failed.stderr
        assert "crontab -e" in failed.stderr and len(failed.stderr.splitlines()) == 1
    assert table.read_bytes() == broken


def test_a_crontab_that_cannot_be_read_is_one_line_and_left_alone(
    tmp_path: Path, bin_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _script(
        bin_dir, "crontab", 'echo "crontab: cannot open the spool: Permission denied" >&2\nexit 1\n'
    )
    failed = _vault(tmp_path, "notes")("cron", "--install", ok=False)
    assert failed.exit_code == 1
    assert failed.stderr == (
        "vaultmem: error: `crontab -l` failed (exit 1): crontab: cannot open the spool: "
        "Permission denied\n"
    )
    missing = tmp_path / "empty-bin"
    missing.mkdir()
    monkeypatch.setenv("PATH", str(missing))
    gone = _vault(tmp_path, "other")("cron", "--install", ok=False)
    assert gone.exit_code == 1 and "cannot run crontab" in gone.stderr


def test_install_and_uninstall_together_is_a_usage_error(tmp_path: Path, table: Path) -> None:
    done = _vault(tmp_path, "notes")("cron", "--install", "--uninstall", ok=False)
    assert done.exit_code == 2 and "not both" in done.stderr
    assert not table.exists()


# --- systemd ------------------------------------------------------------------------------


@pytest.fixture
def systemctl(bin_dir: Path, tmp_path: Path) -> Path:
    """A `systemctl` on PATH that logs each call (one line of arguments) and succeeds."""
    log = tmp_path / "systemctl.log"
    _script(bin_dir, "systemctl", f'echo "$*" >> {shlex.quote(str(log))}\n')
    return log


def _units() -> Path:
    return Path(os.environ["XDG_CONFIG_HOME"]) / "systemd" / "user"


def test_systemd_install_writes_and_enables_the_units_and_uninstall_removes_them(
    tmp_path: Path, systemctl: Path
) -> None:
    notes = _vault(tmp_path, "notes")
    folder, name = _units(), unit_name(notes.vault)
    done = notes("cron", "--systemd", "--install")
    service, timer = folder / f"{name}.service", folder / f"{name}.timer"
    assert service.read_text("utf-8") + "\n" + timer.read_text("utf-8") == done.stdout
    assert done.stdout == notes("cron", "--systemd").stdout
    assert systemctl.read_text("utf-8").splitlines() == [
        "--user daemon-reload",
        f"--user enable --now {name}.timer",
    ]
    assert f"installed {name}.service, {name}.timer in {folder}" in done.stderr
    assert len(done.stderr.splitlines()) == 1

    again = notes("cron", "--systemd", "--install")
    assert again.stderr.startswith("vaultmem: unchanged ")

    removed = notes("cron", "--systemd", "--uninstall")
    assert not service.exists() and not timer.exists()
    assert systemctl.read_text("utf-8").splitlines()[-2:] == [
        f"--user disable --now {name}.timer",
        "--user daemon-reload",
    ]
    assert removed.stderr.startswith(f"vaultmem: removed {name}.service, {name}.timer")
    assert "no vaultmem units" in notes("cron", "--systemd", "--uninstall").stderr


def test_systemd_install_without_systemctl_says_so_in_one_line(
    tmp_path: Path, bin_dir: Path
) -> None:
    notes = _vault(tmp_path, "notes")
    done = notes("cron", "--systemd", "--install")
    assert (_units() / f"{unit_name(notes.vault)}.timer").is_file()
    assert done.stderr.startswith("vaultmem: systemctl not found: installed ")
    assert len(done.stderr.splitlines()) == 1


def test_systemd_install_fails_when_systemctl_does(tmp_path: Path, bin_dir: Path) -> None:
    _script(bin_dir, "systemctl", 'echo "Failed to connect to bus: No medium found" >&2\nexit 1\n')
    notes = _vault(tmp_path, "notes")
    failed = notes("cron", "--systemd", "--install", ok=False)
    assert failed.exit_code == 1
    assert "`systemctl --user daemon-reload` failed: Failed to connect to bus" in failed.stderr


def test_systemd_units_of_another_vault_of_the_same_name_are_not_overwritten(
    tmp_path: Path, systemctl: Path
) -> None:
    first, second = _vault(tmp_path / "a", "notes"), _vault(tmp_path / "b", "notes")
    first("cron", "--systemd", "--install")
    service = _units() / f"{unit_name(first.vault)}.service"
    kept = service.read_bytes()
    for flag in ("--install", "--uninstall"):
        failed = second("cron", "--systemd", flag, ok=False)
        assert failed.exit_code == 1 and "is not the unit of the vault" in failed.stderr
    assert service.read_bytes() == kept
