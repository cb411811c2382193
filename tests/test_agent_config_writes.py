"""`hooks install` writes an agent's configuration as the user keeps it, and only there
(issue 27): never through a symlink out of the file's scope (a cloned project's
``.claude/settings.json -> ~/.bashrc``), never over a read-only file, CRLF and a missing
final newline kept; Gemini's commented settings.json edited with its comments.

Each target is tried: Claude Code's settings and ``.mcp.json``, Codex's config.toml and
Gemini's settings.json.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from conftest import Cli

from tests import test_warm
from tests.test_warm import Served

# `serve --background --port 0` on a vault, stopped after the test (test_warm's fixture).
serve_at = test_warm.serve_at

# (install flags, the project file each writes)
TARGETS = {
    "claude settings": (["--claude"], ".claude/settings.json"),
    "claude .mcp.json": (["--claude", "--mcp", "stdio"], ".mcp.json"),
    "codex": (["--codex"], ".codex/config.toml"),
    "gemini": (["--gemini"], ".gemini/settings.json"),
}


@pytest.fixture
def project(cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The project folder holding the vault (at vault/), as the working folder."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _install(cli: Cli, *flags: str, ok: bool = True):  # noqa: ANN202
    return cli("hooks", "install", *flags, "--scope", "project", ok=ok)


def _refused(done: object, line: str) -> None:
    assert getattr(done, "exit_code") == 1  # noqa: B009 - click's Result
    assert getattr(done, "stderr").splitlines() == [f"vaultmem: error: {line}"]  # noqa: B009


@pytest.mark.parametrize("target", list(TARGETS))
def test_a_target_that_links_out_of_the_project_is_refused(
    cli: Cli, project: Path, tmp_path_factory: pytest.TempPathFactory, target: str
) -> None:
    flags, rel = TARGETS[target]
    # A file of the user's that the agent's config parses: their own settings, say.
    outside = tmp_path_factory.mktemp("outside") / "victim"
    mine = "# the user's own file\n" if rel.endswith(".toml") else '{"permissions": {}}\n'
    outside.write_text(mine, "utf-8")
    link = project / rel
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(outside)
    done = _install(cli, *flags, ok=False)
    _refused(
        done,
        f"{link} leads out of {project} (to {outside}) through a symlink; nothing was written",
    )
    assert outside.read_text("utf-8") == mine
    assert sorted(p.name for p in outside.parent.iterdir()) == ["victim"]


def test_a_folder_that_links_out_of_the_project_is_refused(
    cli: Cli, project: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    (project / ".claude").symlink_to(elsewhere)
    done = _install(cli, "--claude", ok=False)
    target = elsewhere / "settings.json"
    _refused(
        done,
        f"{project / '.claude' / 'settings.json'} leads out of {project} (to {target}) "
        "through a symlink; nothing was written",
    )
    assert list(elsewhere.iterdir()) == []


@pytest.mark.parametrize("target", list(TARGETS))
def test_a_read_only_target_is_not_replaced(cli: Cli, project: Path, target: str) -> None:
    flags, rel = TARGETS[target]
    path = project / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "" if path.suffix == ".toml" else "{}\n"
    path.write_text(text, "utf-8")
    path.chmod(0o444)
    before = path.stat()
    done = _install(cli, *flags, ok=False)
    _refused(
        done, f"{path} is read-only (chmod u+w it to let vaultmem change it); nothing was written"
    )
    after = path.stat()
    assert (after.st_ino, after.st_mtime_ns, stat.S_IMODE(after.st_mode)) == (
        before.st_ino,
        before.st_mtime_ns,
        0o444,
    )
    assert path.read_text("utf-8") == text


@pytest.mark.parametrize("target", list(TARGETS))
def test_crlf_and_a_missing_final_newline_are_kept(cli: Cli, project: Path, target: str) -> None:
    flags, rel = TARGETS[target]
    path = project / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".toml":
        original = '# mine\r\nmodel = "o3"'
    else:
        original = '{\r\n  "mine": {\r\n    "kept": true\r\n  }\r\n}'
    path.write_bytes(original.encode())
    _install(cli, *flags)
    data = path.read_bytes()
    assert b"vaultmem" in data
    assert data.count(b"\n") == data.count(b"\r\n") > 2
    assert not data.endswith(b"\n")
    if path.suffix != ".toml":
        assert json.loads(data)["mine"] == {"kept": True}


GEMINI_SETTINGS = """// Gemini CLI settings: comments are fine here.
{
  "theme": "GitHub", // the light one
  /* MCP servers I use */
  "mcpServers": {
    "docs": { "command": "npx", "args": ["-y", "docs-server"], }, // trailing commas too
  },
}
"""


def test_geminis_commented_settings_keep_their_comments(cli: Cli) -> None:
    path = Path(os.environ["HOME"]) / ".gemini" / "settings.json"
    path.parent.mkdir(parents=True)
    path.write_text(GEMINI_SETTINGS, "utf-8")
    done = cli("hooks", "install", "--gemini")
    assert f"registered vaultmem's MCP server (stdio) for gemini in {path}" in done.stdout
    text = path.read_text("utf-8")
    for line in GEMINI_SETTINGS.splitlines():
        assert line in text  # every comment and line of the user's stays
    from vaultmem.agent.jsonc import loads

    servers = loads(text)["mcpServers"]
    assert servers["docs"] == {"command": "npx", "args": ["-y", "docs-server"]}
    assert servers["vaultmem"]["args"][-3:] == ["--vault", str(cli.vault.resolve()), "mcp"]
    assert "unchanged" in cli("hooks", "install", "--gemini").stdout
    assert "gemini user MCP: " in cli("hooks", "status").stdout
    cli("hooks", "uninstall", "--gemini")
    assert path.read_text("utf-8") == GEMINI_SETTINGS


@pytest.mark.slow  # a real `serve`
def test_mcp_http_names_a_stable_endpoint_not_a_hook_servers_free_port(
    cli: Cli, serve_at: Served
) -> None:
    cli("index")
    info = serve_at(cli.vault)  # as the SessionStart hook starts it: any free port
    assert info["port"] != 8765
    cli("hooks", "install", "--claude", "--mcp", "http")
    claude = json.loads((Path(os.environ["HOME"]) / ".claude.json").read_text("utf-8"))
    assert claude["mcpServers"]["vaultmem"]["url"] == "http://127.0.0.1:8765/mcp"
    cli("hooks", "install", "--gemini", "--mcp", "http")
    gemini = json.loads((Path(os.environ["HOME"]) / ".gemini/settings.json").read_text("utf-8"))
    assert gemini["mcpServers"]["vaultmem"]["httpUrl"] == "http://127.0.0.1:8765/mcp"
