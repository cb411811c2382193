"""`vaultmem bootstrap PATH`: init, index (with embeddings), then `hooks install` for the
agents found on the machine; ``--dry-run`` shows every change first; a second run
changes nothing and says so."""

from __future__ import annotations

import json
import os
import shutil
import tomllib
from pathlib import Path

import pytest
from conftest import EXAMPLE_VAULT
from typer.testing import CliRunner


@pytest.fixture
def notes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder of notes that is not a vault yet; no agent command on PATH."""
    target = tmp_path / "notes"
    shutil.copytree(EXAMPLE_VAULT, target, ignore=shutil.ignore_patterns(".vaultmem*"))
    monkeypatch.setenv("PATH", str(tmp_path / "no-agents-here"))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    return target


def _home() -> Path:
    return Path(os.environ["HOME"])


def bootstrap(*args: str, ok: bool = True):  # noqa: ANN201
    from vaultmem.cli import app

    result = CliRunner().invoke(app, ["bootstrap", *args])
    if ok:
        assert result.exit_code == 0, (result.stdout, result.stderr, result.exception)
    return result


def _tree(*roots: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``roots`` with its size and mtime."""
    found = {}
    for root in roots:
        for path in root.rglob("*"):
            if path.is_file():
                info = path.stat()
                found[str(path)] = (info.st_size, info.st_mtime_ns)
    return found


def test_dry_run_shows_every_change_and_writes_nothing(notes: Path) -> None:
    (_home() / ".claude").mkdir()
    before = _tree(notes, _home())
    out = bootstrap(str(notes), "--dry-run").stdout
    assert _tree(notes, _home()) == before
    assert not (notes / ".vaultmem").exists()
    lines = out.splitlines()
    assert lines[0] == "init: would create .vaultmem.toml, .vaultmem/.gitignore"
    assert lines[1].startswith("index: would read 53 notes (53 new, 0 changed)")
    assert "hooks: Claude Code" in lines
    settings = _home() / ".claude" / "settings.json"
    assert f"--- {settings} (before)" in out and "hook pre-tool" in out
    assert lines[-1] == "dry run: nothing was written"


def test_bootstrap_sets_up_the_vault_and_the_agents_found_and_is_idempotent(
    notes: Path,
) -> None:
    for folder in (".claude", ".codex", ".gemini"):
        (_home() / folder).mkdir()
    out = bootstrap(str(notes)).stdout
    assert "init: created .vaultmem.toml, .vaultmem/.gitignore" in out
    assert "index: 53 added, 0 updated, 0 unchanged, 0 removed" in out
    assert "hooks: Claude Code, Codex CLI, Gemini CLI" in out
    assert out.splitlines()[-1].startswith(f"bootstrapped {notes.resolve()}")
    # The vault is searchable; each agent is wired to it by its absolute path.
    from vaultmem.cli import app

    found = CliRunner().invoke(app, ["--vault", str(notes), "search", "pgbouncer", "--json"])
    assert "research/PgBouncer connection pooling.md" in found.stdout
    hooks = json.loads((_home() / ".claude" / "settings.json").read_text("utf-8"))["hooks"]
    assert set(hooks) >= {"UserPromptSubmit", "SessionStart", "PreCompact", "PreToolUse"}
    command = hooks["PreToolUse"][0]["hooks"][0]["command"]
    assert command.endswith(f"--vault {notes.resolve()} hook pre-tool")
    codex = tomllib.loads((_home() / ".codex" / "config.toml").read_text("utf-8"))
    assert codex["mcp_servers"]["vaultmem"]["args"][-3:] == ["--vault", str(notes.resolve()), "mcp"]
    gemini = json.loads((_home() / ".gemini" / "settings.json").read_text("utf-8"))
    assert gemini["mcpServers"]["vaultmem"]["args"][-1] == "mcp"
    # Again: nothing changes, not a byte, and it says so (and a dry run says so too).
    before = _tree(notes, _home())
    again = bootstrap(str(notes)).stdout
    assert again.splitlines()[-1] == f"nothing changed: {notes.resolve()} was already bootstrapped"
    assert "init: unchanged" in again and "0 added, 0 updated, 53 unchanged" in again
    assert again.count("unchanged: ") == 3
    dry = bootstrap(str(notes), "--dry-run").stdout
    assert dry.splitlines()[-1] == "dry run: nothing would change"
    changed = {p for p, v in _tree(notes, _home()).items() if before.get(p) != v}
    # Only the cache's own bookkeeping may move (the index run's stamps and lock).
    assert all("/.vaultmem/" in p for p in changed), changed


def test_without_an_agent_it_sets_the_vault_up_and_says_no_agent_was_found(
    notes: Path,
) -> None:
    out = bootstrap(str(notes)).stdout
    assert "hooks: no agent found" in out
    assert not (_home() / ".claude").exists()
    # Naming one wires it even when it is not installed yet.
    named = bootstrap(str(notes), "--agent", "claude").stdout
    assert "hooks: Claude Code" in named and (_home() / ".claude" / "settings.json").exists()


def test_an_agent_command_on_path_counts_as_found(
    notes: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "gemini"
    fake.write_text("#!/bin/sh\nexit 0\n", "utf-8")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    out = bootstrap(str(notes), "--no-hooks").stdout
    assert "hooks: no agent found" in out  # --no-hooks wires none
    out = bootstrap(str(notes)).stdout
    assert "hooks: Gemini CLI" in out
    assert (_home() / ".gemini" / "settings.json").exists()


def test_bad_input_is_one_line(notes: Path, tmp_path: Path) -> None:
    missing = bootstrap(str(tmp_path / "nowhere"), ok=False)
    assert missing.exit_code == 1
    assert missing.stderr == f"vaultmem: error: {tmp_path / 'nowhere'} is not a folder " + (
        "(create it, or point at your notes)\n"
    )
    unknown = bootstrap(str(notes), "--agent", "cursor", ok=False)
    assert unknown.exit_code == 2 and "cursor" in unknown.stderr
    assert not (notes / ".vaultmem.toml").exists()
