"""`hooks install --scope project` writes hooks a teammate can run: `vaultmem` from PATH,
the vault relative to the project, and one line of context where vaultmem is missing.

Each written command runs as Claude Code runs it: through the shell, the event on
stdin, from another folder and another HOME than the install's, with a PATH that holds
a real `vaultmem` script or none.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import Cli

DATA = Path(__file__).parent / "data" / "claude"
SYSTEM_PATH = "/usr/bin:/bin"
EVENTS = {
    "UserPromptSubmit": "user_prompt_submit",
    "SessionStart": "session_start",
    "PreCompact": "pre_compact",
    "SessionEnd": "session_end",
    "PreToolUse": "pre_tool_use_edit",
}


def _payload(name: str, **fields: Any) -> str:
    data = json.loads((DATA / f"{name}.json").read_text("utf-8"))
    data.update({k: str(v) for k, v in fields.items()})
    return json.dumps(data)


def _commands(settings: Path) -> dict[str, str]:
    """Claude Code event -> the command of vaultmem's handler."""
    hooks = json.loads(settings.read_text("utf-8"))["hooks"]
    return {event: groups[-1]["hooks"][-1]["command"] for event, groups in hooks.items()}


def _run(command: str, stdin: str, *, path: str, cwd: Path, home: Path, **env: str):  # noqa: ANN202
    """The command through /bin/sh, as Claude Code runs a hook: a fresh process, the
    event on stdin, nothing of this machine's environment but what is given."""
    keep = {k: v for k, v in os.environ.items() if k.startswith("VAULTMEM_")}
    return subprocess.run(
        ["/bin/sh", "-c", command],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        env={**keep, "PATH": path, "HOME": str(home), **env},
        check=False,
    )


@pytest.fixture
def project(cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project folder holding the vault (``vault/``), its hooks installed for the team."""
    cli("index")
    monkeypatch.chdir(tmp_path)
    done = cli("hooks", "install", "--claude", "--scope", "project", "--mcp", "stdio")
    assert "installed vaultmem hooks in" in done.stdout and "note:" not in done.stdout
    return tmp_path


def _venv_bin() -> str:
    bin_dir = str(Path(sys.executable).parent)
    assert shutil.which("vaultmem", path=bin_dir), "no vaultmem script next to this Python"
    return bin_dir


def test_project_hooks_name_nothing_of_this_machine(project: Path) -> None:
    text = (project / ".claude" / "settings.json").read_text("utf-8")
    assert str(project) not in text and sys.executable not in text
    assert str(Path(sys.executable).parent) not in text
    commands = _commands(project / ".claude" / "settings.json")
    assert set(commands) == set(EVENTS)
    assert commands["UserPromptSubmit"].endswith(
        'exec vaultmem --vault "${CLAUDE_PROJECT_DIR:-$PWD}"/vault hook prompt'
    )
    # The shared .mcp.json starts `vaultmem` from PATH on the project's vault too.
    server = json.loads((project / ".mcp.json").read_text("utf-8"))["mcpServers"]["vaultmem"]
    assert server["command"] == "vaultmem"
    assert server["args"] == ["--vault", "${CLAUDE_PROJECT_DIR:-.}/vault", "mcp"]


def test_a_teammate_with_vaultmem_on_path_gets_the_context(
    project: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    commands = _commands(project / ".claude" / "settings.json")
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    home = tmp_path_factory.mktemp("teammate")
    path = f"{_venv_bin()}:{SYSTEM_PATH}"
    stdin = _payload("user_prompt_submit", cwd=project)
    # Claude Code gives the project folder in $CLAUDE_PROJECT_DIR; the hook runs elsewhere.
    result = _run(
        commands["UserPromptSubmit"],
        stdin,
        path=path,
        cwd=elsewhere,
        home=home,
        CLAUDE_PROJECT_DIR=str(project),
    )
    assert result.returncode == 0, result.stderr
    context = json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "(research/PgBouncer connection pooling.md, line " in context
    # Without the variable (older Claude Code), from the project folder it runs in (in
    # another session: a note is shown once a session).
    stdin = _payload("user_prompt_submit", cwd=project, session_id="another-session")
    again = _run(commands["UserPromptSubmit"], stdin, path=path, cwd=project, home=home)
    assert again.returncode == 0 and json.loads(again.stdout) == json.loads(result.stdout)
    brief = _run(
        commands["SessionStart"],
        _payload("session_start", cwd=project),
        path=path,
        cwd=project,
        home=home,
    )
    assert brief.returncode == 0, brief.stderr
    assert "Pinned" in json.loads(brief.stdout)["hookSpecificOutput"]["additionalContext"]


def test_without_vaultmem_session_start_says_so_once_and_nothing_breaks(
    project: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    if shutil.which("vaultmem", path=SYSTEM_PATH):
        pytest.skip("a vaultmem is installed system-wide")
    commands = _commands(project / ".claude" / "settings.json")
    home = tmp_path_factory.mktemp("teammate")
    outputs = {}
    for event, name in EVENTS.items():
        result = _run(
            commands[event],
            _payload(name, cwd=project),
            path=SYSTEM_PATH,
            cwd=project,
            home=home,
            CLAUDE_PROJECT_DIR=str(project),
        )
        assert (result.returncode, result.stderr) == (0, ""), event
        outputs[event] = result.stdout
    # One line, in the agent's context, from SessionStart only: once a session.
    (line,) = outputs.pop("SessionStart").splitlines()
    specific = json.loads(line)["hookSpecificOutput"]
    assert specific["hookEventName"] == "SessionStart"
    assert specific["additionalContext"].startswith("vaultmem is not installed on this machine")
    assert "pip install ." in specific["additionalContext"]
    assert outputs == {"UserPromptSubmit": "", "PreCompact": "", "SessionEnd": "", "PreToolUse": ""}


def test_project_hooks_are_idempotent_seen_by_status_and_uninstalled(
    cli: Cli, project: Path
) -> None:
    settings = project / ".claude" / "settings.json"
    stamp = settings.stat().st_mtime_ns
    again = cli("hooks", "install", "--claude", "--scope", "project")
    assert f"unchanged: {settings}" in again.stdout and settings.stat().st_mtime_ns == stamp
    line = next(x for x in cli("hooks", "status").stdout.splitlines() if x.startswith("project:"))
    assert "UserPromptSubmit, SessionStart, PreCompact, SessionEnd" in line
    assert f"ok (vaultmem, vault {cli.vault.resolve()})" in line
    cli("hooks", "uninstall", "--claude", "--scope", "project")
    assert json.loads(settings.read_text("utf-8")) == {}
    assert json.loads((project / ".mcp.json").read_text("utf-8")) == {"mcpServers": {}}


def test_a_vault_outside_the_project_is_left_to_each_teammate(
    cli: Cli, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = tmp_path_factory.mktemp("repo")
    monkeypatch.chdir(elsewhere)
    done = cli("hooks", "install", "--claude", "--scope", "project")
    assert "outside this project" in done.stdout and "VAULTMEM_VAULT" in done.stdout
    commands = _commands(elsewhere / ".claude" / "settings.json")
    assert commands["UserPromptSubmit"].endswith("; exec vaultmem hook prompt")
    assert str(cli.vault) not in (elsewhere / ".claude" / "settings.json").read_text("utf-8")


def test_user_and_local_scopes_keep_absolute_paths(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    cli("hooks", "install", "--claude", "--scope", "local")
    command = _commands(tmp_path / ".claude" / "settings.local.json")["UserPromptSubmit"]
    assert command.endswith(f"--vault {cli.vault.resolve()} hook prompt")
    assert Path(command.split()[0]).is_absolute()
