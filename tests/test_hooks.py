"""Claude Code hooks end to end: `hook EVENT` as Claude Code runs it, and `hooks install`.

Hook runs are whole processes fed the exact payloads Claude Code sends (tests/data/claude/),
their stdout parsed as Claude Code parses it: JSON on exit 0.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import Cli

DATA = Path(__file__).parent / "data" / "claude"
SESSION = "4f1c2a7e-9b3d-4e8a-a1f0-6c2d9e7b5a31"


def payload(name: str, **fields: Any) -> str:
    """A fixture payload with ``fields`` replaced (cwd, transcript_path, prompt…)."""
    data = json.loads((DATA / f"{name}.json").read_text("utf-8"))
    data.update({k: str(v) if isinstance(v, Path) else v for k, v in fields.items()})
    return json.dumps(data)


def run_hook(
    event: str, stdin: str, *args: str, launcher: list[str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run a hook the way Claude Code does: a fresh process, the event on stdin."""
    env = {k: v for k, v in os.environ.items() if k != "XDG_CACHE_HOME"}
    command = launcher or [sys.executable, "-m", "vaultmem"]
    return subprocess.run(
        [*command, *args, "hook", event],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=cwd,
        check=False,
    )


def claude_output(result: subprocess.CompletedProcess[str]) -> dict[str, Any] | None:
    """What Claude Code takes from a hook: exit 0, then stdout as JSON (None when empty)."""
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout) if result.stdout.strip() else None


def log_lines(path: Path) -> list[str]:
    return path.read_text("utf-8").splitlines() if path.exists() else []


@pytest.fixture
def indexed(cli: Cli) -> Path:
    cli("index")
    return cli.vault


def test_the_installed_script_answers_a_prompt_with_additional_context(
    indexed: Path, tmp_path: Path
) -> None:
    script = shutil.which("vaultmem", path=str(Path(sys.executable).parent))
    assert script is not None, "the vaultmem script is not installed next to this Python"
    # Claude Code runs hooks in the project folder; the vault is found from the payload's cwd.
    project = indexed / "projects"
    result = run_hook(
        "prompt", payload("user_prompt_submit", cwd=project), launcher=[script], cwd=tmp_path
    )
    out = claude_output(result)
    assert out is not None and set(out) == {"hookSpecificOutput"}
    specific = out["hookSpecificOutput"]
    assert specific["hookEventName"] == "UserPromptSubmit"
    assert "<vault-context>" in specific["additionalContext"]
    assert "(research/PgBouncer connection pooling.md, line " in specific["additionalContext"]


def test_an_acknowledgement_gets_nothing(indexed: Path) -> None:
    result = run_hook(
        "prompt", payload("user_prompt_submit", prompt="ok thanks"), "--vault", str(indexed)
    )
    assert claude_output(result) is None and result.stdout == ""


def test_session_start_gets_the_brief(indexed: Path) -> None:
    result = run_hook("session-start", payload("session_start", cwd=indexed / "projects"))
    out = claude_output(result)
    assert out is not None
    assert out["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert "Pinned" in out["hookSpecificOutput"]["additionalContext"]


def _damage_index(vault: Path) -> None:
    for path in (vault / ".vaultmem").rglob("*"):
        if path.is_file() and path.name != "lock":
            path.write_bytes(b"\x00garbage" * 64)


@pytest.mark.parametrize(
    ("case", "event"),
    [
        ("garbage stdin", "prompt"),
        ("not an object", "session-start"),
        ("no vault", "prompt"),
        ("no vault", "session-end"),
        ("damaged index", "prompt"),
        ("never indexed", "prompt"),
        ("unknown event", "post-tool-use"),
    ],
)
def test_a_failing_hook_exits_0_silently_with_one_log_line(
    vault: Path, tmp_path: Path, case: str, event: str
) -> None:
    stdin = payload("user_prompt_submit", cwd=vault)
    args = ["--vault", str(vault)]
    log = vault / ".vaultmem" / "hooks.log"
    if case == "garbage stdin":
        stdin = "{not json"
    elif case == "not an object":
        stdin = "[1, 2]"
    elif case == "no vault":
        stdin, args = payload("user_prompt_submit", cwd=tmp_path), []
        log = Path(os.environ["HOME"]) / ".cache" / "vaultmem" / "hooks.log"
    elif case == "damaged index":
        Cli(vault)("index")
        _damage_index(vault)
    before = len(log_lines(log))
    result = run_hook(event, stdin, *args, cwd=tmp_path)
    said = claude_output(result)
    if case == "no vault" and event == "prompt":
        # Also said once a session in the agent's context (tests/test_rough_edges.py).
        assert "cannot open their vault" in said["hookSpecificOutput"]["additionalContext"]
    else:
        assert (result.returncode, result.stdout) == (0, "")
    added = log_lines(log)[before:]
    assert len(added) == 1 and f"hook {event}: failed" in added[0], added


@pytest.mark.parametrize("stdin", ["garbage", "", None])
def test_stop_prints_nothing_ever(indexed: Path, stdin: str | None) -> None:
    text = payload("stop", cwd=indexed) if stdin is None else stdin
    result = run_hook("stop", text, "--vault", str(indexed))
    assert (result.returncode, result.stdout) == (0, "")


def _finished(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state == "Z"


@pytest.mark.parametrize(
    ("event", "fixture"), [("pre-compact", "pre_compact"), ("session-end", "session_end")]
)
def test_capture_hooks_return_at_once_and_the_detached_job_runs(
    indexed: Path, tmp_path: Path, event: str, fixture: str
) -> None:
    transcript = tmp_path / f"{SESSION}.jsonl"
    shutil.copy(DATA / "transcript.jsonl", transcript)
    stdin = payload(fixture, cwd=indexed, transcript_path=transcript)
    started = time.monotonic()
    result = run_hook(event, stdin, "--vault", str(indexed))
    took = time.monotonic() - started
    assert (result.returncode, result.stdout) == (0, "")
    # SessionEnd hooks get about 1.5 s; PreCompact (10 s) first writes the compaction
    # state, synchronously (tests/test_compaction.py), then starts the same job.
    limit = 1.5 if event == "session-end" else 5.0
    assert took < limit, f"{event} took {took:.2f} s"
    line = log_lines(indexed / ".vaultmem" / "hooks.log")[-1]
    assert f"hook {event}: started extract and handoff of {transcript}" in line
    pid = int(line.rsplit("(pid ", 1)[1].rstrip(")"))
    deadline = time.monotonic() + 120
    while not _finished(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _finished(pid), "the capture job is still running after 120 s"
    jobs = (indexed / ".vaultmem" / "hooks-jobs.log").read_text("utf-8")
    assert "Traceback" not in jobs, jobs
    from typer.main import get_command

    from vaultmem.cli import app

    if {"extract", "handoff"} <= set(get_command(app).commands):  # type: ignore[attr-defined]
        # Both ran on this transcript: the handoff note names the session's files.
        notes = [p for p in indexed.rglob("*.md") if "pgbouncer.ini" in p.read_text("utf-8")]
        assert notes, jobs
    else:
        assert jobs.count("No such command") == 2, jobs


def test_a_missing_transcript_starts_nothing(indexed: Path, tmp_path: Path) -> None:
    stdin = payload("session_end", cwd=indexed, transcript_path=tmp_path / "gone.jsonl")
    result = run_hook("session-end", stdin, "--vault", str(indexed))
    assert (result.returncode, result.stdout) == (0, "")
    (line,) = log_lines(indexed / ".vaultmem" / "hooks.log")
    assert "no transcript" in line
    assert not (indexed / ".vaultmem" / "hooks-jobs.log").exists()


# --- hooks install / uninstall / status ------------------------------------------------


def _settings(home: Path, name: str) -> Path:
    target = home / ".claude" / "settings.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(DATA / name, target)
    return target


def _ours(settings: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    from vaultmem.agent.claude_settings import vaultmem_event

    return {
        event: [h for g in groups for h in g["hooks"] if vaultmem_event(h.get("command"))]
        for event, groups in settings["hooks"].items()
    }


def test_install_keeps_everything_else_and_is_idempotent(cli: Cli) -> None:
    home = Path(os.environ["HOME"])
    path = _settings(home, "settings_user.json")
    original = json.loads(path.read_text("utf-8"))
    result = cli("hooks", "install", "--claude")
    assert "installed vaultmem hooks" in result.stdout
    installed = json.loads(path.read_text("utf-8"))
    # Every key other than hooks survives in value and in order; every other hook too.
    assert list(installed) == list(original)
    assert {k: v for k, v in installed.items() if k != "hooks"} == {
        k: v for k, v in original.items() if k != "hooks"
    }
    for event, groups in original["hooks"].items():
        assert installed["hooks"][event][: len(groups)] == groups
    ours = _ours(installed)
    assert {e: len(h) for e, h in ours.items() if h} == {
        "UserPromptSubmit": 1,
        "SessionStart": 1,
        "PreCompact": 1,
        "SessionEnd": 1,
        "PreToolUse": 1,
    }
    prompt = ours["UserPromptSubmit"][0]
    assert prompt["type"] == "command" and prompt["timeout"] == 8
    assert prompt["command"].endswith(f"--vault {cli.vault.resolve()} hook prompt")
    backup = path.with_name("settings.json.vaultmem-backup")
    assert json.loads(backup.read_text("utf-8")) == original
    # A second install changes nothing, not even the file's time.
    stamp = path.stat().st_mtime_ns
    again = cli("hooks", "install", "--claude")
    assert "unchanged" in again.stdout and path.stat().st_mtime_ns == stamp
    # uninstall gives back the original value.
    cli("hooks", "uninstall", "--claude")
    assert json.loads(path.read_text("utf-8")) == original


def test_install_into_a_project_without_hooks_and_uninstall_drops_what_it_added(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    local = tmp_path / ".claude" / "settings.local.json"
    cli("hooks", "install", "--claude", "--scope", "local")
    assert set(json.loads(local.read_text("utf-8"))["hooks"]) == {
        "UserPromptSubmit",
        "SessionStart",
        "PreCompact",
        "SessionEnd",
        "PreToolUse",
    }
    assert not local.with_name("settings.local.json.vaultmem-backup").exists()
    cli("hooks", "uninstall", "--claude", "--scope", "local")
    assert json.loads(local.read_text("utf-8")) == {}
    project = tmp_path / ".claude" / "settings.json"
    shutil.copy(DATA / "settings_project.json", project)
    original = json.loads(project.read_text("utf-8"))
    cli("hooks", "install", "--claude", "--scope", "project")
    assert json.loads(project.read_text("utf-8"))["hooks"]["Stop"] == original["hooks"]["Stop"]
    cli("hooks", "uninstall", "--scope", "project")
    assert json.loads(project.read_text("utf-8")) == original


def test_install_replaces_an_old_vaultmem_command(cli: Cli, tmp_path: Path) -> None:
    home = Path(os.environ["HOME"])
    path = _settings(home, "settings_project.json")
    data = json.loads(path.read_text("utf-8"))
    old = {"type": "command", "command": "/old/venv/bin/vaultmem --vault /old hook prompt"}
    data["hooks"]["UserPromptSubmit"] = [{"matcher": "", "hooks": [old, dict(old)]}]
    path.write_text(json.dumps(data), "utf-8")
    cli("hooks", "install", "--claude")
    (prompt,) = _ours(json.loads(path.read_text("utf-8")))["UserPromptSubmit"]
    assert "/old" not in prompt["command"] and prompt["timeout"] == 8


def test_dry_run_prints_a_diff_and_writes_nothing(cli: Cli) -> None:
    home = Path(os.environ["HOME"])
    path = _settings(home, "settings_user.json")
    before = path.read_bytes()
    result = cli("hooks", "install", "--claude", "--dry-run")
    assert result.stdout.startswith(f"--- {path} (before)\n+++ {path} (after)\n")
    assert '+            "command": ' in result.stdout and "hook prompt" in result.stdout
    assert path.read_bytes() == before
    assert not path.with_name("settings.json.vaultmem-backup").exists()


def test_invalid_settings_are_refused_and_left_alone(cli: Cli) -> None:
    home = Path(os.environ["HOME"])
    path = home / ".claude" / "settings.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"permissions": {"allow": [}', "utf-8")
    result = cli("hooks", "install", "--claude", ok=False)
    assert result.exit_code == 1
    (line,) = result.stderr.splitlines()
    assert "not valid JSON" in line and str(path) in line
    assert path.read_text("utf-8") == '{"permissions": {"allow": [}'
    assert sorted(p.name for p in path.parent.iterdir()) == ["settings.json"]


def test_install_needs_the_agent_named(cli: Cli) -> None:
    result = cli("hooks", "install", ok=False)
    assert result.exit_code == 2 and "--claude" in result.stderr


def test_status_says_where_the_hooks_are_and_whether_they_run(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    cli("hooks", "install", "--claude")
    lines = cli("hooks", "status").stdout.splitlines()
    assert lines[0].startswith("user: ") and "UserPromptSubmit, SessionStart" in lines[0]
    assert "ok (" in lines[0]
    assert lines[1].startswith("project: ") and lines[1].endswith("no file")
    shutil.rmtree(cli.vault)
    assert "BROKEN (vault" in cli("hooks", "status").stdout.splitlines()[0]


def test_a_hook_without_its_surfacing_module_still_exits_0(indexed: Path, tmp_path: Path) -> None:
    # An install broken half-way (a module missing) must not break the agent either.
    code = (
        "import sys; sys.modules['vaultmem.agent.surface'] = None; "
        "sys.argv = ['vaultmem'] + sys.argv[1:]; from vaultmem.entry import main; main()"
    )
    stdin = payload("user_prompt_submit", cwd=indexed)
    result = run_hook("prompt", stdin, launcher=[sys.executable, "-c", code], cwd=tmp_path)
    assert (result.returncode, result.stdout) == (0, "")
    (line,) = log_lines(indexed / ".vaultmem" / "hooks.log")
    assert "ImportError" in line or "ModuleNotFoundError" in line


# ----------------------------------------------------------------------------- MCP


def _claude_json(home: Path) -> Path:
    """~/.claude.json as Claude Code keeps it: its own state beside the servers, 0600."""
    path = home / ".claude.json"
    state = {"numStartups": 3, "mcpServers": {"other": {"type": "stdio", "command": "x"}}}
    path.write_text(json.dumps(state, indent=2) + "\n", "utf-8")
    path.chmod(0o600)
    return path


def test_install_mcp_http_writes_the_token_header_and_uninstall_removes_it(cli: Cli) -> None:
    home = Path(os.environ["HOME"])
    path = _claude_json(home)
    original = json.loads(path.read_text("utf-8"))
    dry = cli("hooks", "install", "--claude", "--mcp", "http", "--dry-run")
    token = cli("serve", "token").stdout.strip()
    assert '"Authorization": "Bearer ***"' in dry.stdout and token not in dry.stdout
    assert json.loads(path.read_text("utf-8")) == original
    done = cli("hooks", "install", "--claude", "--mcp", "http")
    assert f"registered vaultmem's MCP server (http) in {path}" in done.stdout
    data = json.loads(path.read_text("utf-8"))
    assert (
        data["numStartups"] == 3 and data["mcpServers"]["other"] == original["mcpServers"]["other"]
    )
    assert data["mcpServers"]["vaultmem"] == {
        "type": "http",
        "url": "http://127.0.0.1:8765/mcp",
        "headers": {"Authorization": f"Bearer {token}"},
    }
    assert path.stat().st_mode & 0o777 == 0o600
    backup = path.with_name(".claude.json.vaultmem-backup")
    assert backup.stat().st_mode & 0o777 == 0o600  # Claude Code's state stays private
    assert json.loads(backup.read_text("utf-8")) == original
    again = cli("hooks", "install", "--claude", "--mcp", "http")
    assert f"unchanged: {path}" in again.stdout
    cli("hooks", "uninstall", "--claude")
    assert json.loads(path.read_text("utf-8")) == original


def test_install_mcp_never_writes_the_token_into_a_shared_file(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    done = cli("hooks", "install", "--claude", "--scope", "project", "--mcp", "http")
    shared = tmp_path / ".mcp.json"
    entry = json.loads(shared.read_text("utf-8"))["mcpServers"]["vaultmem"]
    assert entry["headers"] == {"Authorization": "Bearer ${VAULTMEM_SERVE_TOKEN}"}
    token = cli("serve", "token").stdout.strip()
    assert token not in shared.read_text("utf-8")
    assert "VAULTMEM_SERVE_TOKEN" in done.stdout.splitlines()[-1]
    cli("hooks", "uninstall", "--claude", "--scope", "project")
    assert json.loads(shared.read_text("utf-8")) == {"mcpServers": {}}


def test_install_mcp_stdio_for_the_local_scope(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    home = Path(os.environ["HOME"])
    path = _claude_json(home)
    cli("hooks", "install", "--claude", "--scope", "local", "--mcp", "stdio")
    data = json.loads(path.read_text("utf-8"))
    entry = data["projects"][str(tmp_path)]["mcpServers"]["vaultmem"]
    assert entry["type"] == "stdio" and entry["args"][-3:] == ["--vault", str(cli.vault), "mcp"]
    assert "vaultmem (stdio, " in cli("hooks", "status").stdout
    cli("hooks", "uninstall", "--claude", "--scope", "local")
    assert (
        "vaultmem"
        not in json.loads(path.read_text("utf-8"))["projects"][str(tmp_path)]["mcpServers"]
    )


def test_install_mcp_http_refuses_a_file_others_may_read(cli: Cli) -> None:
    path = _claude_json(Path(os.environ["HOME"]))
    path.chmod(0o644)
    before = path.read_bytes()
    refused = cli("hooks", "install", "--claude", "--mcp", "http", ok=False)
    assert refused.exit_code == 1
    assert refused.stderr == (
        f"vaultmem: error: not writing the token: {path} is readable by other users "
        "(chmod 600 it first) (or use --mcp stdio)\n"
    )
    assert path.read_bytes() == before
