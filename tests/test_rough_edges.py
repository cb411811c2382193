"""Issue 22: six rough edges of the command line, each checked as a user meets it.

`get` of several notes, `init` under a missing parent, usage errors of `hooks` exiting 2,
`review`'s column header, a hook that cannot open its vault saying so once a session,
and `remember` without a title deriving one from its text.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest
from conftest import Cli
from typer.testing import CliRunner

REDIS = "decisions/Redis for caching.md"

# --------------------------------------------------------------------------- get A B C


def test_get_prints_several_notes_each_under_its_path(cli: Cli) -> None:
    redis = cli("get", "Redis for caching").stdout
    harbor = cli("get", "Harbor").stdout
    out = cli("get", "Redis for caching", "Harbor").stdout
    assert out == f"==> {REDIS} <==\n{redis}\n==> Harbor.md <==\n{harbor}"


def test_get_json_prints_one_object_per_note(cli: Cli) -> None:
    each = [cli.json_lines("get", name)[0] for name in ("Harbor", "Redis for caching")]
    assert cli.json_lines("get", "Harbor", "Redis for caching") == each
    assert [note["path"] for note in each] == ["Harbor.md", REDIS]


def test_get_names_each_missing_note_and_still_prints_the_others(cli: Cli) -> None:
    result = cli("get", "Redis for caching", "no such note", "Harbor", "nor this", ok=False)
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        "vaultmem: error: no note called 'no such note' (try a path, a title or an alias)",
        "vaultmem: error: no note called 'nor this' (try a path, a title or an alias)",
    ]
    assert f"==> {REDIS} <==\n" in result.stdout and "==> Harbor.md <==\n" in result.stdout
    found = cli("get", "--json", "nor this", "Harbor", ok=False)
    assert found.exit_code == 1
    assert [json.loads(line)["path"] for line in found.stdout.splitlines()] == ["Harbor.md"]


# --------------------------------------------------------------------------- init


def test_init_refuses_a_missing_parent_unless_asked_to_create_it(tmp_path: Path) -> None:
    from vaultmem.cli import app

    target = tmp_path / "nonexistent" / "dir" / "x"
    refused = CliRunner().invoke(app, ["init", str(target)])
    assert refused.exit_code == 1
    assert refused.stderr == (
        f"vaultmem: error: cannot make {target} a vault: {target.parent} does not exist "
        "(--parents creates it too)\n"
    )
    assert not (tmp_path / "nonexistent").exists()
    made = CliRunner().invoke(app, ["init", str(target), "--parents"])
    assert made.exit_code == 0, made.stderr
    assert (target / ".vaultmem.toml").is_file()
    # The folder itself, under a parent that exists, needs no flag.
    assert CliRunner().invoke(app, ["init", str(tmp_path / "fresh")]).exit_code == 0


# --------------------------------------------------------------------------- usage: exit 2


@pytest.mark.parametrize(
    "args",
    [
        ["install", "--claude", "--scope", "bogus"],
        ["install"],
        ["uninstall", "--scope", "bogus"],
        ["install", "--codex", "--scope", "local"],
        ["uninstall", "--gemini", "--scope", "local"],
    ],
    ids=lambda args: "-".join(a.strip("-") for a in args),
)
def test_hooks_usage_errors_exit_2_and_write_nothing(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    before = sorted(Path(os.environ["HOME"]).rglob("*"))
    result = cli("hooks", *args, ok=False)
    assert result.exit_code == 2, result.stderr
    assert "Error: " in result.stderr and "Usage: vaultmem hooks" in result.stderr
    assert sorted(Path(os.environ["HOME"]).rglob("*")) == before
    assert not any((tmp_path / name).exists() for name in (".claude", ".codex", ".gemini"))


# --------------------------------------------------------------------------- review


def test_review_has_a_header_aligned_with_its_columns(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VAULTMEM_NOW", "2026-12-20T00:00:00Z")  # a few example notes fade
    header, *rows = cli("review").stdout.splitlines()
    assert header.split() == ["priority", "score", "path", "title"]
    assert len(rows) == len(cli.json_lines("review")) >= 2
    for row, item in zip(rows, cli.json_lines("review"), strict=True):
        # Numbers end under their heading's last letter; path and title start under theirs.
        assert float(row[: len("priority")]) == pytest.approx(item["priority"], abs=0.006)
        assert row[len("priority") - 1] != " "
        score = header.index("score")
        assert float(row[score - 2 : score + len("score")]) == pytest.approx(
            item["score"], abs=6e-4
        )
        assert row[score - 2 : score] == "  " and row[score] != " "
        assert row[header.index("path") :].startswith(item["path"] + "  ")
        assert row[header.index("title") :] == item["title"]


# --------------------------------------------------------------------------- hooks: no vault


def _hook(event: str, payload: dict[str, str], vault: str) -> tuple[int, str]:
    from vaultmem.cli import app

    args = ["--vault", vault, "hook", event]
    result = CliRunner().invoke(app, args, input=json.dumps(payload))
    return result.exit_code, result.stdout


def test_a_hook_without_its_vault_says_so_once_a_session(
    vault: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    project = tmp_path / "project"  # the session's folder holds no notes/
    project.mkdir()
    prompt = {"session_id": "s1", "cwd": str(project), "prompt": "how do we pool connections?"}
    code, out = _hook("prompt", prompt, "notes")
    assert code == 0
    said = json.loads(out)["hookSpecificOutput"]
    assert said["hookEventName"] == "UserPromptSubmit"
    assert "vault 'notes' is not a folder" in said["additionalContext"]
    assert f"looked for from {project}" in said["additionalContext"]
    assert _hook("prompt", prompt, "notes") == (0, "")  # said already in s1
    assert _hook("session-start", {**prompt, "prompt": ""}, "notes") == (0, "")
    # A new session is told again, by its first hook that adds context.
    other = {"session_id": "s2", "cwd": str(project)}
    assert _hook("session-end", other, "notes") == (0, "")
    code, out = _hook("session-start", other, "notes")
    assert json.loads(out)["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert _hook("prompt", {**other, "prompt": "how do we pool connections?"}, "notes")[1] == ""
    log = (tmp_path / "cache" / "vaultmem" / "hooks.log").read_text("utf-8")
    assert log.count("failed: ConfigError: vault 'notes' is not a folder") == 6
    # The same relative --vault from a session whose folder holds it: no notice.
    found = {"session_id": "s3", "cwd": str(vault.parent), "prompt": "ok"}
    assert _hook("prompt", found, vault.name) == (0, "")


# --------------------------------------------------------------------------- remember


@pytest.mark.parametrize(
    ("text", "title"),
    [
        ("No deploys on Fridays after 3pm.", "No deploys on Fridays after 3pm"),
        (
            "We moved sessions to Redis. Memcached lost them on every node replacement.",
            "We moved sessions to Redis",
        ),
        (
            "Deploy freeze: no deploys on Fridays after 3pm, hotfixes need two approvals.",
            "Deploy freeze: no deploys on Fridays after 3pm",
        ),
        (
            "pgbouncer needs `server_reset_query` set to DISCARD ALL when pool_mode is "
            "transaction, otherwise prepared statements leak",
            "pgbouncer needs server_reset_query set to DISCARD ALL",
        ),
        (
            "Use [[Redis for caching|Redis]] for rate limits, e.g. per merchant.",
            "Use Redis for rate limits, e.g. per merchant",
        ),
        ("Supercalifragilistic" * 4, "Supercalifragilistic" * 3),
        ("# Release checklist\n\nTag, build, deploy.", "Release checklist"),
        ("- first point\n- second point", "first point"),
        ("Rates are 3.5 per cent now!!", "Rates are 3.5 per cent now"),
    ],
)
def test_derive_title(text: str, title: str) -> None:
    from vaultmem.memory.remember import derive_title

    assert derive_title(text) == title
    assert len(title) <= 60 and title[-1].isalnum()


def test_remember_without_title_gets_a_heading_and_a_file_name_from_its_first_sentence(
    cli: Cli, vault: Path
) -> None:
    text = "We moved sessions to Redis. Memcached lost them on every node replacement."
    path = cli("remember", text).stdout.splitlines()[-1]
    assert path == "inbox/we-moved-sessions-to-redis.md"
    note = json.loads(cli("get", path, "--json").stdout)
    assert note["title"] == "We moved sessions to Redis" and "title" not in note["frontmatter"]
    assert note["body"] == f"# We moved sessions to Redis\n\n{text}\n"
    # A text with its own heading keeps it, alone.
    own = "# Release checklist\n\nTag, build, deploy."
    path = cli("remember", own).stdout.splitlines()[-1]
    assert path == "inbox/release-checklist.md"
    assert json.loads(cli("get", path, "--json").stdout)["body"] == own + "\n"


def test_every_front_end_gets_the_derived_title(vault: Path) -> None:
    """Below the front ends: the api call MCP and REST make, and `extract`'s rules."""
    from vaultmem import api
    from vaultmem.config import build
    from vaultmem.model import RememberRequest

    config = build(vault, {})
    opened = api.OpenVault(config)
    try:
        text = "Webhook retries back off to 10 minutes, then the event is parked."
        done = api.remember(opened, RememberRequest(text), now=datetime.now(UTC))
    finally:
        opened.close()
    assert done.path == "inbox/webhook-retries-back-off-to-10-minutes.md"
    assert (
        (vault / done.path)
        .read_text("utf-8")
        .endswith(f"---\n# Webhook retries back off to 10 minutes\n\n{text}\n")
    )
    transcript = vault.parent / "session.md"
    transcript.write_text(
        "**User:** what now?\n\n**Assistant:** We decided to park webhook events after "
        "three failed retries, because the queue backs up.\n",
        "utf-8",
    )
    report = json.loads(Cli(vault)("extract", str(transcript), "--json").stdout)
    (memory,) = report["memories"]
    assert memory["path"] == "inbox/we-decided-to-park-webhook-events-after-three-failed-retries.md"
    heading = (vault / memory["path"]).read_text("utf-8").split("---\n", 2)[2].splitlines()[0]
    assert heading == "# We decided to park webhook events after three failed retries"
