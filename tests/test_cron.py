"""`vaultmem cron`: the printed lines run as printed, in a vault whose path needs quoting."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import Cli

from tests.conftest import copy_indexed
from vaultmem.cron import BUSY, crontab, systemd_quote
from vaultmem.vault import vault_lock

# A path a shell would split, expand or end a quote at, if anything were left unquoted.
AWKWARD = "my vault's $HOME `x`"


def jobs(text: str) -> dict[str, str]:
    """Crontab lines as the shell gets them (schedule stripped), by their first command."""
    out = {}
    for line in text.splitlines():
        if line.strip() and not line.startswith("#"):
            command = line.split(None, 5)[5]
            words = shlex.split(command.replace("\\%", "%"))
            assert Path(words[0]).is_absolute(), words[0]  # cron's PATH is short
            out[words[words.index("--vault") + 2]] = command
    return out


def cron_env() -> dict[str, str]:
    """Roughly what cron gives a job: HOME, a short PATH, and nothing of ours."""
    return {"HOME": os.environ["HOME"], "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}


def sh(command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["sh", "-c", command],
        capture_output=True,
        text=True,
        timeout=120,
        env=cron_env(),
        cwd="/",
        check=False,
    )


@pytest.fixture
def awkward(embedded_example: Path, tmp_path: Path) -> Cli:
    """A copy of the embedded example vault under a path that needs quoting."""
    target = tmp_path / AWKWARD
    copy_indexed(embedded_example, target)
    return Cli(target)


def status(cli: Cli) -> dict:
    return json.loads(cli("status", "--json").stdout)


def test_the_printed_lines_run_the_sweep_promote_and_gc(awkward: Cli, vectors_on: None) -> None:
    note = awkward.vault / "Harbor.md"
    note.write_text(note.read_text("utf-8") + "\nA new paragraph about tide tables.\n", "utf-8")
    awkward("index", "--no-embed")
    (before,) = status(awkward)["embeddings"].values()
    # The edited note is split (its unchanged fragments keep their vectors), but its new
    # fragment waits for the sweep.
    assert before["embedded"] < before["fragments"]
    text = awkward("cron").stdout
    assert "75 busy" in text and "0 done" in text and "1 error" in text
    lines = jobs(text)
    assert set(lines) == {"index", "promote", "gc"}

    sweep = sh(lines["index"])
    assert (sweep.returncode, sweep.stdout, sweep.stderr) == (0, "", "")
    (after,) = status(awkward)["embeddings"].values()
    assert after["unsplit_notes"] == 0 and after["embedded"] == after["fragments"]

    promote = sh(lines["promote"])  # nothing has earned it: nothing for cron to mail
    assert (promote.returncode, promote.stdout, promote.stderr) == (0, "", "")
    gc = sh(lines["gc"])  # four inbox notes of the example have faded by now
    assert gc.returncode == 0 and gc.stdout.count("archive ") == 4, gc.stdout
    assert "would archive 4" in gc.stderr


def test_a_cron_job_with_nothing_to_do_prints_nothing(awkward: Cli, vectors_on: None) -> None:
    """cron mails whatever a job prints: each job is silent when it changes nothing, and
    says what it did when it does."""
    lines = jobs(awkward("cron").stdout)
    awkward("gc")  # archive them, as a person reading the report would
    awkward("index", "--no-embed")
    for job in ("index", "promote", "gc"):
        done = sh(lines[job])
        assert (done.returncode, done.stdout, done.stderr) == (0, "", ""), (job, done)

    title = "Tide tables come from the harbour office"
    awkward("remember", title)
    for _ in range(5):
        awkward("touch", title)
    promote = sh(lines["promote"])
    assert promote.returncode == 0, promote.stderr
    assert "→ memory/tide-tables-come-from-the-harbour-office.md" in promote.stdout
    assert "promoted 1 note(s)" in promote.stderr


def test_the_sweep_exits_75_while_another_sweep_holds_the_lock(awkward: Cli) -> None:
    sweep = jobs(awkward("cron").stdout)["index"]
    with vault_lock(awkward.vault / ".vaultmem", timeout=0, what="embed", name="embed.lock"):
        busy = sh(sweep)
    assert busy.returncode == BUSY, busy.stderr
    assert "embed lock" in busy.stderr


def test_a_percent_sign_is_escaped_for_cron() -> None:
    text = crontab(["/usr/bin/vaultmem"], Path("/v/100%"), ["--vault", "/v/100%"])
    assert "--vault /v/100\\% " in text
    assert "%" not in "".join(jobs(text).values()).replace("\\%", "")


def test_the_systemd_units_are_valid_and_quote_the_vault(awkward: Cli) -> None:
    text = awkward("cron", "--systemd").stdout
    service, timer = text.split("\n\n# ~/.config/systemd/user/")
    assert "SuccessExitStatus=75" in service and "OnCalendar=*:0/15" in timer
    quoted = systemd_quote(str(awkward.vault))
    assert f"--vault {quoted} index --no-embed --quiet" in service
    assert "$$HOME" in quoted  # systemd would expand a single $
    assert systemd_quote('a"b\\c%d') == '"a\\"b\\\\c%%d"'
    verify = shutil.which("systemd-analyze")
    if verify is None:
        return
    name = service.splitlines()[0].rsplit("/", 1)[1].removesuffix(".service")
    folder = awkward.vault.parent / "units"
    folder.mkdir()
    (folder / f"{name}.service").write_text(service + "\n")
    (folder / f"{name}.timer").write_text("# " + timer)
    units = [str(folder / f"{name}.service"), str(folder / f"{name}.timer")]
    checked = subprocess.run(
        [verify, "verify", *units], capture_output=True, text=True, check=False
    )
    assert checked.returncode == 0, checked.stderr


def as_cron_reads(command: str) -> tuple[str, str]:
    """What cron (vixie cron, cronie) makes of a crontab line's command: the command the
    shell runs and the text it gets on stdin. An unescaped ``%`` ends the command (the rest,
    its ``%`` as newlines, is stdin); ``\\%`` is a ``%``; any other backslash stays."""
    out, escaped = [], False
    for i, ch in enumerate(command):
        if escaped:
            escaped = False
            if ch == "%":
                out[-1] = "%"
                continue
        elif ch == "\\":
            escaped = True
        elif ch == "%":
            return "".join(out), command[i + 1 :].replace("%", "\n")
        out.append(ch)
    return "".join(out), ""


def test_a_vault_path_with_a_line_break_gets_no_cron_line(tmp_path: Path) -> None:
    # A folder name that, printed as it is, adds a job of its own to the crontab.
    vault = tmp_path / "notes\n* * * * * touch vaultmem-injected #"
    vault.mkdir()
    (vault / ".vaultmem.toml").write_text("", "utf-8")
    for args, what in ((["cron"], "a crontab line"), (["cron", "--systemd"], "a systemd unit")):
        done = Cli(vault)(*args, ok=False)
        assert done.exit_code == 1 and done.stdout == ""
        assert done.stderr.splitlines() == [
            f"vaultmem: error: cannot write {what} for {str(vault.resolve())!r}: it holds a "
            "line break, which cannot be quoted there (rename the folder)"
        ]


def test_a_backslash_before_a_percent_sign_is_refused_for_cron_only(tmp_path: Path) -> None:
    vault = tmp_path / "100\\%done"
    vault.mkdir()
    (vault / ".vaultmem.toml").write_text("", "utf-8")
    done = Cli(vault)("cron", ok=False)
    assert done.exit_code == 1 and len(done.stderr.splitlines()) == 1
    assert "a backslash before % cannot be quoted in a crontab" in done.stderr
    units = Cli(vault)("cron", "--systemd").stdout
    assert f"--vault {systemd_quote(str(vault.resolve()))} " in units


def test_a_percent_sign_reaches_the_shell_as_it_is() -> None:
    text = crontab(["/usr/bin/vaultmem"], Path("/v/100%"), ["--vault", "/v/100%"])
    for line in jobs(text).values():
        command, stdin = as_cron_reads(line)
        assert stdin == "" and shlex.split(command)[2] == "/v/100%"
