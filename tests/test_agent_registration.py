"""`hooks install --codex/--gemini`: vaultmem's MCP server in Codex CLI's config.toml and
Gemini CLI's settings.json, merged, idempotent, backed up, uninstalled, every other byte
(TOML) or value (JSON) of the user's file kept."""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path

import pytest
from conftest import Cli

CODEX_CONFIG = """# my Codex setup
model = "o3"  # the default

[mcp_servers.docs]
command = "npx"
args = ["-y", "docs-server"]

[mcp_servers.docs.env]
API_KEY = "value"

# profiles, kept as written
[profiles.fast]
model = "o4-mini"
"""


def _home() -> Path:
    return Path(os.environ["HOME"])


def _codex(home: Path, text: str = CODEX_CONFIG) -> Path:
    path = home / ".codex" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, "utf-8")
    return path


def _gemini(home: Path) -> tuple[Path, dict]:
    path = home / ".gemini" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    settings = {
        "ui": {"theme": "GitHub"},
        "mcpServers": {"other": {"command": "x", "args": []}},
        "unknownKey": [1, 2],
    }
    path.write_text(json.dumps(settings, indent=2) + "\n", "utf-8")
    return path, settings


def test_codex_gets_one_table_and_every_other_byte_is_kept(cli: Cli) -> None:
    path = _codex(_home())
    done = cli("hooks", "install", "--codex")
    assert f"registered vaultmem's MCP server (stdio) for codex in {path}" in done.stdout
    text = path.read_text("utf-8")
    assert text.startswith(CODEX_CONFIG)
    entry = tomllib.loads(text)["mcp_servers"]["vaultmem"]
    assert Path(entry["command"]).is_absolute()  # the user scope: this machine's paths
    assert entry["args"][-3:] == ["--vault", str(cli.vault.resolve()), "mcp"]
    assert tomllib.loads(text)["mcp_servers"]["docs"]["env"] == {"API_KEY": "value"}
    backup = path.with_name("config.toml.vaultmem-backup")
    assert backup.read_text("utf-8") == CODEX_CONFIG
    stamp = path.stat().st_mtime_ns
    again = cli("hooks", "install", "--codex")
    assert f"unchanged: {path}" in again.stdout and path.stat().st_mtime_ns == stamp
    assert "codex user MCP: " in cli("hooks", "status").stdout
    cli("hooks", "uninstall", "--codex")
    assert path.read_text("utf-8") == CODEX_CONFIG


def test_codex_table_is_replaced_in_place_and_http_names_the_token_variable(cli: Cli) -> None:
    old = CODEX_CONFIG.replace(
        "# profiles", '[mcp_servers.vaultmem]\ncommand = "/old/vaultmem"\n\n# profiles'
    )
    path = _codex(_home(), old)
    dry = cli("hooks", "install", "--codex", "--mcp", "http", "--dry-run")
    assert '-command = "/old/vaultmem"' in dry.stdout
    assert '+bearer_token_env_var = "VAULTMEM_SERVE_TOKEN"' in dry.stdout
    assert path.read_text("utf-8") == old
    done = cli("hooks", "install", "--codex", "--mcp", "http")
    assert "VAULTMEM_SERVE_TOKEN" in done.stdout.splitlines()[-1]
    text = path.read_text("utf-8")
    assert text.index("[mcp_servers.vaultmem]") < text.index("# profiles")
    assert tomllib.loads(text)["mcp_servers"]["vaultmem"] == {
        "url": "http://127.0.0.1:8765/mcp",
        "bearer_token_env_var": "VAULTMEM_SERVE_TOKEN",
    }
    token = cli("serve", "token").stdout.strip()
    assert token not in text
    cli("hooks", "uninstall", "--codex")
    assert path.read_text("utf-8") == CODEX_CONFIG


def test_codex_home_is_where_codex_keeps_its_config(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-home"))
    cli("hooks", "install", "--codex")
    path = tmp_path / "codex-home" / "config.toml"
    assert "vaultmem" in tomllib.loads(path.read_text("utf-8"))["mcp_servers"]
    assert not (_home() / ".codex").exists()


@pytest.mark.parametrize(
    "text",
    ['model = "o3"\n[broken\n', 'mcp_servers = { docs = { command = "npx" } }\n'],
    ids=["invalid", "inline-table"],
)
def test_codex_config_vaultmem_cannot_edit_safely_is_left_alone(cli: Cli, text: str) -> None:
    path = _codex(_home(), text)
    refused = cli("hooks", "install", "--codex", ok=False)
    assert refused.exit_code == 1 and "nothing was written" in refused.stderr
    assert path.read_text("utf-8") == text
    assert sorted(p.name for p in path.parent.iterdir()) == ["config.toml"]


def test_gemini_gets_mcp_servers_vaultmem_and_uninstall_gives_the_file_back(cli: Cli) -> None:
    path, original = _gemini(_home())
    cli("hooks", "install", "--gemini")
    data = json.loads(path.read_text("utf-8"))
    assert list(data) == list(original) and data["ui"] == original["ui"]
    assert data["mcpServers"]["other"] == original["mcpServers"]["other"]
    entry = data["mcpServers"]["vaultmem"]
    assert set(entry) == {"command", "args"}
    assert entry["args"][-3:] == ["--vault", str(cli.vault.resolve()), "mcp"]
    assert json.loads(path.with_name("settings.json.vaultmem-backup").read_text()) == original
    assert "unchanged" in cli("hooks", "install", "--gemini").stdout
    cli("hooks", "install", "--gemini", "--mcp", "http")
    http = json.loads(path.read_text("utf-8"))["mcpServers"]["vaultmem"]
    assert http == {
        "httpUrl": "http://127.0.0.1:8765/mcp",
        "headers": {"Authorization": "Bearer ${VAULTMEM_SERVE_TOKEN}"},
    }
    assert "gemini user MCP: " in cli("hooks", "status").stdout
    cli("hooks", "uninstall", "--gemini")
    assert json.loads(path.read_text("utf-8")) == original


def test_all_three_agents_at_once_and_project_scope_is_portable(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the project holds the vault, at vault/
    cli("hooks", "install", "--claude", "--codex", "--gemini", "--scope", "project")
    assert (tmp_path / ".claude" / "settings.json").is_file()
    codex = tomllib.loads((tmp_path / ".codex" / "config.toml").read_text("utf-8"))
    gemini = json.loads((tmp_path / ".gemini" / "settings.json").read_text("utf-8"))
    portable = {"command": "vaultmem", "args": ["--vault", "vault", "mcp"]}
    assert codex["mcp_servers"]["vaultmem"] == portable
    assert gemini["mcpServers"]["vaultmem"] == portable
    cli("hooks", "uninstall", "--codex", "--gemini", "--scope", "project")
    assert (tmp_path / ".codex" / "config.toml").read_text("utf-8") == ""
    assert json.loads((tmp_path / ".gemini" / "settings.json").read_text()) == {"mcpServers": {}}
    # The Claude Code hooks were not named, so they stay.
    assert "hooks" in json.loads((tmp_path / ".claude" / "settings.json").read_text())


def test_a_shared_config_refuses_a_vault_outside_the_project(
    cli: Cli, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path_factory.mktemp("repo"))
    refused = cli("hooks", "install", "--codex", "--scope", "project", ok=False)
    assert refused.exit_code == 1 and "outside this project" in refused.stderr
    assert not Path(".codex").exists()
    local = cli("hooks", "install", "--gemini", "--scope", "local", ok=False)
    assert local.exit_code == 2 and "no 'local' scope" in local.stderr


def test_uninstall_of_an_agent_never_configured_writes_nothing(cli: Cli) -> None:
    result = cli("hooks", "uninstall", "--codex", "--gemini")
    assert result.stdout.count("unchanged: ") == 2
    assert not (_home() / ".codex").exists() and not (_home() / ".gemini").exists()


def test_the_token_variable_is_the_servers() -> None:
    from vaultmem.agent.agent_configs import TOKEN_VARIABLE
    from vaultmem.servers.auth import TOKEN_ENV

    assert TOKEN_VARIABLE == TOKEN_ENV
