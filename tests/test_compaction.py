"""Memory that survives compaction: `hook pre-compact` writes the session's state into the
vault at once, `hook session-start` with ``source: compact`` gives it back in
``<vault-postcompact>`` (ClawMem's four parts and budgets).

Whole hook processes fed Claude Code's PreCompact and SessionStart payloads
(tests/data/claude/pre_compact.json, session_start_compact.json) and a realistic session
transcript (tests/data/claude/transcript_refunds.jsonl: edits, a decision, a pasted
connection string, open questions).
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest
from conftest import Cli

from tests.test_hooks import DATA, SESSION, claude_output, log_lines, payload, run_hook

PASSWORD = "Wint3rIsC0ming!"


@pytest.fixture
def indexed(cli: Cli) -> Path:
    cli("index")
    return cli.vault


def _compact(vault: Path, transcript: Path) -> float:
    """Run the PreCompact hook; its wall time."""
    stdin = payload("pre_compact", cwd="/home/dev/harbor", transcript_path=transcript)
    started = time.monotonic()
    result = run_hook("pre-compact", stdin, "--vault", str(vault))
    assert (result.returncode, result.stdout) == (0, "")
    return time.monotonic() - started


def _state_notes(vault: Path) -> list[Path]:
    return sorted((vault / "handoffs").glob("*compaction*.md"))


def _postcompact(vault: Path, **fields: str) -> str:
    out = claude_output(
        run_hook("session-start", payload("session_start_compact", **fields), "--vault", str(vault))
    )
    assert out is not None and out["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    return str(out["hookSpecificOutput"]["additionalContext"])


def test_pre_compact_writes_the_sessions_state_into_the_vault_at_once(
    indexed: Path, tmp_path: Path
) -> None:
    transcript = tmp_path / f"{SESSION}.jsonl"
    shutil.copy(DATA / "transcript_refunds.jsonl", transcript)
    took = _compact(indexed, transcript)
    assert took < 5, f"PreCompact took {took:.2f} s"
    (note,) = _state_notes(indexed)
    text = note.read_text("utf-8")
    assert text.startswith("---\ntype: progress\ntags:\n  - compaction\n")
    assert f"session: {SESSION}\n" in text and "project: harbor\n" in text
    assert "We decided to store the reason as a nullable text column" in text
    files = text.split("## Files being worked on\n\n", 1)[1].split("\n\n", 1)[0]
    assert files.splitlines() == [  # latest first, relative to the project
        "- `harbor/api/refunds.py`",
        "- `harbor/billing/refunds.py`",
        "- `harbor/settings.py`",
        "- `db/migrations/versions/0042_add_refund_reason.py`",
    ]
    questions = text.split("## Open questions\n\n", 1)[1]
    assert "- Should the threshold be per merchant instead of global?" in questions
    assert "- TODO: backfill a reason for the 37 existing large refunds." in questions
    lines = log_lines(indexed / ".vaultmem" / "hooks.log")
    assert f"wrote the compaction state to handoffs/{note.name}" in lines[0]
    assert "started extract and handoff" in lines[1]  # the capture job still runs after it
    # The state note is indexed: search finds it.
    found = Cli(indexed)("search", "nullable text column reason enum", "--json").stdout
    assert f"handoffs/{note.name}" in found


def test_no_secret_of_the_transcript_reaches_the_vault(indexed: Path, tmp_path: Path) -> None:
    transcript = tmp_path / f"{SESSION}.jsonl"
    shutil.copy(DATA / "transcript_refunds.jsonl", transcript)
    # The state holds the first request too when it is the last one.
    lines = transcript.read_text("utf-8").splitlines()
    transcript.write_text("\n".join([*lines[:1], *lines[1:3]]) + "\n", "utf-8")
    _compact(indexed, transcript)
    (note,) = _state_notes(indexed)
    text = note.read_text("utf-8")
    assert "Refunds over 500 EUR need a reason recorded" in text
    assert PASSWORD not in text and "[REDACTED]" in text


def test_session_start_after_compaction_gives_back_the_state_within_budget(
    indexed: Path, tmp_path: Path
) -> None:
    transcript = tmp_path / f"{SESSION}.jsonl"
    shutil.copy(DATA / "transcript_refunds.jsonl", transcript)
    _compact(indexed, transcript)
    (note,) = _state_notes(indexed)
    context = _postcompact(indexed)
    assert context.startswith("<vault-postcompact>\n") and context.endswith("</vault-postcompact>")
    assert len(context) / 4 <= 1200
    parts = context.split("\n\n")
    state = next(p for p in parts if p.startswith("Session state before compaction"))
    assert f"(handoffs/{note.name})" in state and len(state) / 4 <= 600
    assert "Should the threshold be per merchant instead of global?" in state
    assert "- `harbor/api/refunds.py`" in state
    decisions = next(p for p in parts if p.startswith("Recent decisions:"))
    assert "Helm charts over Kustomize (decisions/Helm charts over Kustomize.md, 2026-10-20)" in (
        decisions
    )
    assert len(decisions) / 4 <= 400
    antipatterns = next(p for p in parts if p.startswith("Antipatterns:"))
    assert antipatterns.count("- Avoid: ") >= 1 and len(antipatterns) / 4 <= 150
    context_part = next(p for p in parts if p.startswith("Vault context:"))
    assert len(context_part) / 4 <= 200
    # The ordinary brief is not repeated after a compaction.
    assert "Pinned notes" not in context


def test_antipatterns_scoped_to_the_files_being_worked_on_come_first(
    cli: Cli, tmp_path: Path
) -> None:
    note = cli.vault / "antipatterns" / "Editing applied migrations.md"
    note.write_text(
        '---\ntype: antipattern\napplies_to: ["migrations/**"]\ncreated: 2020-01-01\n---\n'
        "# Editing applied migrations\n\nNever edit a migration that ran anywhere.\n",
        "utf-8",
    )
    cli("index")
    transcript = tmp_path / f"{SESSION}.jsonl"
    shutil.copy(DATA / "transcript_refunds.jsonl", transcript)
    _compact(cli.vault, transcript)
    antipatterns = next(
        p for p in _postcompact(cli.vault).split("\n\n") if p.startswith("Antipatterns:")
    )
    first = antipatterns.splitlines()[1]
    path = "antipatterns/Editing applied migrations.md"
    assert first == f"- Avoid: Editing applied migrations ({path})"


def test_a_second_compaction_rewrites_the_state_unless_someone_edited_it(
    indexed: Path, tmp_path: Path
) -> None:
    transcript = tmp_path / f"{SESSION}.jsonl"
    lines = (DATA / "transcript_refunds.jsonl").read_text("utf-8").splitlines(keepends=True)
    transcript.write_text("".join(lines[:6]), "utf-8")
    _compact(indexed, transcript)
    (note,) = _state_notes(indexed)
    assert "harbor/api/refunds.py" not in note.read_text("utf-8")
    # The session goes on and compacts again: the same note, brought up to date.
    transcript.write_text("".join(lines), "utf-8")
    _compact(indexed, transcript)
    assert _state_notes(indexed) == [note]
    assert "- `harbor/api/refunds.py`" in note.read_text("utf-8")
    # A person adds a line to it: the next compaction leaves their note alone.
    edited = note.read_text("utf-8") + "\nAsk Ana about the backfill.\n"
    note.write_text(edited, "utf-8")
    _compact(indexed, transcript)
    assert note.read_text("utf-8") == edited
    notes = _state_notes(indexed)
    assert len(notes) == 2
    (newer,) = [n for n in notes if n != note]
    assert "Should the threshold be per merchant" in newer.read_text("utf-8")
    assert f"(handoffs/{newer.name})" in _postcompact(indexed)


def test_session_start_after_compaction_without_a_state_still_says_what_it_has(
    indexed: Path,
) -> None:
    context = _postcompact(indexed, session_id="a-session-never-compacted")
    assert context.startswith("<vault-postcompact>")
    assert "Session state before compaction" not in context
    assert "\n\nRecent decisions:\n- " in context and len(context) / 4 <= 1200


def test_a_transcript_with_nothing_to_keep_writes_no_note(indexed: Path, tmp_path: Path) -> None:
    transcript = tmp_path / f"{SESSION}.jsonl"
    transcript.write_text('{"type": "summary", "summary": "x", "leafUuid": "u"}\n', "utf-8")
    _compact(indexed, transcript)
    assert _state_notes(indexed) == []
    assert "no compaction state to keep" in log_lines(indexed / ".vaultmem" / "hooks.log")[0]
