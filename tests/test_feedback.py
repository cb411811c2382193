"""The feedback loop: notes surfaced in a session and then used are reinforced once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.conftest import Cli

SESSION = "5e2b7c1a-0000-4000-8000-00000000feed"
PROMPT = "how do we pool connections with pgbouncer in transaction mode"
POOLING = "research/PgBouncer connection pooling.md"
POSTGRES = "daily/2026-11-17.md"  # the third note surfaced
HANDOFF = "handoffs/2026-10-30 pgbouncer rollout.md"
NOW = "2026-12-01T10:00:00Z"


def _line(role: str, content: object, **extra: object) -> str:
    entry = {"type": role, "sessionId": SESSION, "isSidechain": False, **extra}
    entry["message"] = {"role": role, "content": content}
    return json.dumps(entry)


def _transcript(tmp_path: Path, *assistant: object, user: str = PROMPT) -> Path:
    path = tmp_path / "session.jsonl"
    lines = [_line("user", user)] + [_line("assistant", content) for content in assistant]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _meta(vault: Path, path: str) -> dict:
    text = (vault / path).read_text(encoding="utf-8")
    return yaml.safe_load(text.split("---")[1]) if text.startswith("---") else {}


@pytest.fixture
def surfaced(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The notes `surface` showed for the prompt in the session."""
    monkeypatch.setenv("VAULTMEM_NOW", NOW)
    cli("index")
    out = json.loads(cli("surface", PROMPT, "--session", SESSION, "--json").stdout)
    shown = [n["path"] for n in out["notes"]]
    assert POOLING in shown and POSTGRES in shown and HANDOFF in shown, shown
    return shown


def test_a_note_named_opened_or_quoted_is_reinforced_once(
    cli: Cli, vault: Path, tmp_path: Path, surfaced: list[str]
) -> None:
    transcript = _transcript(
        tmp_path,
        "Per the PgBouncer connection pooling note, transaction mode breaks prepared statements.",
        [{"type": "tool_use", "name": "Read", "input": {"file_path": str(vault / HANDOFF)}}],
    )
    before = {p: _meta(vault, p).get("use_count", 0) for p in surfaced}
    done = json.loads(cli("feedback", str(transcript), "--json").stdout)
    assert done["session"] == SESSION and done["surfaced"] == surfaced
    signs = {u["path"]: u["sign"] for u in done["used"]}
    assert signs == {POOLING: "title", HANDOFF: "opened"}
    assert done["reinforced"] == [p for p in surfaced if p in signs]
    for path in surfaced:
        meta = _meta(vault, path)
        gained = meta.get("use_count", 0) - before[path]
        assert gained == (1 if path in signs else 0), path
    assert str(_meta(vault, POOLING)["last_used"]).startswith("2026-12-01")
    # Surfaced, then used: a confirmation too.
    assert "last_confirmed" in _meta(vault, POOLING)
    # A second run (PreCompact, then SessionEnd) reinforces nothing more.
    again = json.loads(cli("feedback", str(transcript), "--json").stdout)
    assert again["reinforced"] == []
    assert _meta(vault, POOLING)["use_count"] == before[POOLING] + 1
    # And the timeline shows the use.
    events = cli.json_lines("timeline", POOLING, "--around", "0")
    assert any(e["kind"] == "used" and e["when"].startswith("2026-12-01") for e in events)


def test_a_repeated_phrase_counts_and_the_cap_holds(
    cli: Cli, vault: Path, tmp_path: Path, surfaced: list[str]
) -> None:
    from vaultmem.agent.feedback import _words

    body = (vault / POSTGRES).read_text(encoding="utf-8").split("---", 2)[-1]
    phrase = " ".join(_words(body)[30:37])  # seven words in a row of the note
    transcript = _transcript(
        tmp_path,
        f"As the team wrote: {phrase}.",
        "Also see research/PgBouncer connection pooling.md",
    )
    done = json.loads(cli("feedback", str(transcript), "--max", "1", "--json").stdout)
    assert {u["path"]: u["sign"] for u in done["used"]} == {POOLING: "path", POSTGRES: "phrase"}
    assert len(done["reinforced"]) == 1
    # The cap is per session: another run with room for one more takes the other.
    more = json.loads(cli("feedback", str(transcript), "--max", "2", "--json").stdout)
    assert len(more["reinforced"]) == 1 and more["reinforced"] != done["reinforced"]


def test_the_block_and_the_users_words_are_no_sign_of_use(
    cli: Cli, tmp_path: Path, surfaced: list[str]
) -> None:
    block = "<vault-context>\n- PgBouncer connection pooling (research/PgBouncer ...)\n"
    transcript = _transcript(
        tmp_path,
        "Sure, let me look at the orders service.",
        user=f"{PROMPT}\n{block}Use Postgres as primary store, and PgBouncer connection pooling",
    )
    done = json.loads(cli("feedback", str(transcript), "--dry-run", "--json").stdout)
    assert done["used"] == [] and done["reinforced"] == []


def test_dry_run_writes_nothing_and_no_session_is_one_line(
    cli: Cli, vault: Path, tmp_path: Path, surfaced: list[str]
) -> None:
    transcript = _transcript(tmp_path, "The PgBouncer connection pooling note says so.")
    before = (vault / POOLING).read_bytes()
    done = cli("feedback", str(transcript), "--dry-run")
    assert f"would reinforce {POOLING} (used: title)" in done.stdout
    assert (vault / POOLING).read_bytes() == before
    text = tmp_path / "session.md"
    text.write_text("User: hi\nAssistant: PgBouncer connection pooling\n", encoding="utf-8")
    bad = cli("feedback", str(text), ok=False)
    assert bad.exit_code == 1
    assert bad.stderr.strip() == f"vaultmem: error: {text} names no session: give --session ID"


def test_the_capture_job_runs_feedback_first() -> None:
    from vaultmem.agent.hooks import capture_commands

    commands = capture_commands("python", ["--vault", "/v"], Path("/t.jsonl"), "s1")
    assert [c[5] for c in commands] == ["feedback", "extract", "handoff"]
    assert commands[0][-2:] == ["--session", "s1"]
    assert [c[5] for c in capture_commands("python", ["--vault", "/v"], Path("/t"))] == [
        "extract",
        "handoff",
    ]
