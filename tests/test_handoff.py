"""`handoff`: the note a session leaves for the next one, with and without an LLM."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import Cli
from vaultmem.note import parse_note

DATA = Path(__file__).parent / "data" / "transcripts"
SESSION = DATA / "session.jsonl"


def _note(vault: Path, path: str) -> tuple[dict, str]:
    note = parse_note(path, (vault / path).read_bytes())
    return note.meta, note.body


def _section(body: str, name: str) -> list[str]:
    part = body.split(f"## {name}\n", 1)[1].split("\n## ", 1)[0]
    return [line for line in part.splitlines() if line.strip()]


def test_handoff_without_an_llm_comes_from_the_transcript(
    vault: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VAULTMEM_NOW", "2026-11-30T15:00:00Z")
    extracted = json.loads(cli("extract", str(SESSION), "--json").stdout)
    out = cli("handoff", str(SESSION), "--project", "harbor").stdout
    path = out.splitlines()[-1]
    assert path == "handoffs/2026-11-30 harbor.md"
    meta, body = _note(vault, path)
    assert meta["type"] == "handoff" and meta["project"] == "harbor"
    assert meta["session"] == "4f1c2a7e-9b3d-4e8a-a1f0-6c2d9e7b5a31"
    stems = [Path(m["path"]).stem for m in extracted["memories"]]
    assert meta["related"] == [f"[[{s}]]" for s in stems]
    assert body.startswith("# Handoff 2026-11-30 — harbor\n")
    assert _section(body, "Request")[0].startswith("I prefer small commits over one big squash.")
    assert _section(body, "Investigated") == [
        "- Read app/sessions.py",
        "- Grep SESSION_BACKEND in /home/dev/harbor",
    ]
    assert _section(body, "Learned") == [f"- [[{s}]]" for s in stems]
    assert _section(body, "Done") == [
        "- sessions now live in Redis (db 2) with a 14-day TTL, and the adapter is in "
        "app/redis_sessions.py."
    ]
    assert _section(body, "Files changed") == ["- `app/settings.py`", "- `app/redis_sessions.py`"]
    assert _section(body, "Next steps") == [
        "- run the k6 login test on staging before the production deploy."
    ]
    # An unchanged transcript gets no second note.
    assert cli("handoff", str(SESSION)).stdout.splitlines()[-1] == path
    assert len(list((vault / "handoffs").glob("2026-11-30*"))) == 1


def test_handoff_is_found_by_search(vault: Path, cli: Cli) -> None:
    cli("index")
    path = cli("handoff", str(SESSION), "--project", "harbor").stdout.splitlines()[-1]
    hits = cli.json_lines("search", "k6 login test staging")
    assert path in [h["path"] for h in hits]


def test_handoff_with_an_llm(
    vault: Path,
    cli: Cli,
    fake_openai,
    monkeypatch: pytest.MonkeyPatch,  # noqa: ANN001
) -> None:
    monkeypatch.setenv("VAULTMEM_LLM_URL", fake_openai.base_url)
    monkeypatch.setenv("VAULTMEM_LLM_MODEL", "fake-chat")
    monkeypatch.setenv("VAULTMEM_NOW", "2026-11-30T15:00:00Z")
    reply = {
        "request": "Find why logins drop after every deploy and fix it.",
        "investigated": ["The session backend setting in app/settings.py"],
        "learned": ["Sessions lived in the in-process cache, so each deploy dropped them."],
        "done": ["Sessions moved to Redis db 2 with a 14-day TTL."],
        "next_steps": ["Run the k6 login test on staging.", "Deploy to production."],
    }
    fake_openai.chat_replies.append(json.dumps(reply))
    got = json.loads(cli("handoff", str(SESSION), "--json").stdout)
    assert got["mode"] == "llm"
    meta, body = _note(vault, got["path"])
    assert got["path"] == "handoffs/2026-11-30 find why logins drop after every.md"
    assert _section(body, "Request") == [reply["request"]]
    assert _section(body, "Investigated") == [f"- {x}" for x in reply["investigated"]]
    assert _section(body, "Learned") == [f"- {x}" for x in reply["learned"]]
    assert _section(body, "Done") == [f"- {x}" for x in reply["done"]]
    # Files changed come from the tool calls, never from the model.
    assert _section(body, "Files changed") == ["- `app/settings.py`", "- `app/redis_sessions.py`"]
    assert _section(body, "Next steps") == [f"- {x}" for x in reply["next_steps"]]
    (chat,) = [r for r in fake_openai.requests if r.path.endswith("/chat/completions")]
    assert chat.body["response_format"]["schema"]["required"] == [
        "request", "investigated", "learned", "done", "next_steps"
    ]  # fmt: skip
    assert "app/settings.py" in chat.body["messages"][0]["content"]


def test_handoff_folder_outside_the_vault_is_refused(vault: Path, cli: Cli) -> None:
    result = cli("handoff", str(SESSION), "--folder", "../elsewhere", ok=False)
    assert result.exit_code != 0
    assert "inside the vault" in result.stderr
    assert not (vault.parent / "elsewhere").exists()


def test_vault_override_of_the_handoff_template(vault: Path, cli: Cli) -> None:
    override = vault / ".vaultmem" / "templates" / "handoff.md.j2"
    override.parent.mkdir(parents=True)
    override.write_text("---\n{{ frontmatter }}---\n# {{ title }}\n\nAsked: {{ request }}\n")
    cli("trust")  # a vault's templates are used once the user trusts it
    path = cli("handoff", str(SESSION)).stdout.splitlines()[-1]
    _, body = _note(vault, path)
    assert "Asked: I prefer small commits" in body and "## Done" not in body


# --------------------------------------------------------------------------- repeated handoffs


def _copy(tmp_path: Path) -> Path:
    transcript = tmp_path / "tx.jsonl"
    transcript.write_bytes(SESSION.read_bytes())
    return transcript


def _handoffs(vault: Path) -> list[str]:
    return sorted(p.name for p in (vault / "handoffs").glob("2026-11-30*"))


@pytest.fixture
def day(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VAULTMEM_NOW", "2026-11-30T15:00:00Z")


def test_repeated_handoff_of_an_unchanged_transcript_writes_one_note(
    vault: Path, cli: Cli, tmp_path: Path, day: None
) -> None:
    transcript = _copy(tmp_path)
    first = cli("handoff", str(transcript), "--project", "demo")
    for _ in range(2):
        again = cli("handoff", str(transcript), "--project", "demo")
        assert again.stdout == first.stdout == "handoffs/2026-11-30 demo.md\n"
        assert again.stderr == "transcript unchanged since the last handoff\n"
    assert _handoffs(vault) == ["2026-11-30 demo.md"]
    meta, _ = _note(vault, "handoffs/2026-11-30 demo.md")
    assert meta["transcript_sha256"] == hashlib.sha256(transcript.read_bytes()).hexdigest()


@pytest.mark.parametrize(
    "steps",
    [
        ["handoff", "extract", "handoff", "extract", "handoff"],
        ["handoff", "extract", "extract", "handoff", "handoff"],
        ["handoff", "handoff", "extract", "extract", "handoff"],
    ],
)
def test_extract_and_handoff_in_any_order_leave_one_handoff(
    vault: Path, cli: Cli, tmp_path: Path, day: None, steps: list[str]
) -> None:
    transcript = _copy(tmp_path)
    for step in steps:
        cli(step, str(transcript), *(["--project", "demo"] if step == "handoff" else []))
    assert _handoffs(vault) == ["2026-11-30 demo.md"]
    assert json.loads(cli("extract", str(transcript), "--json").stdout)["entries"] == 0


def test_a_cleared_cache_brings_no_duplicate(
    vault: Path, cli: Cli, tmp_path: Path, day: None
) -> None:
    transcript = _copy(tmp_path)
    path = cli("handoff", str(transcript), "--project", "demo").stdout.splitlines()[-1]
    shutil.rmtree(vault / ".vaultmem")
    got = json.loads(cli("handoff", str(transcript), "--project", "demo", "--json").stdout)
    assert (got["path"], got["created"], got["mode"]) == (path, False, "unchanged")
    assert _handoffs(vault) == ["2026-11-30 demo.md"]
    # ...and the cache knows it again: no folder scan needed the next time.
    again = cli("handoff", str(transcript), "--project", "demo")
    assert again.stderr == "transcript unchanged since the last handoff\n"


def test_a_grown_transcript_gets_one_new_handoff(
    vault: Path, cli: Cli, tmp_path: Path, day: None
) -> None:
    transcript = _copy(tmp_path)
    cli("handoff", str(transcript), "--project", "demo")
    with transcript.open("a") as fh:
        line = {"type": "user", "message": {"role": "user", "content": "Also bump the TTL."}}
        fh.write(json.dumps(line) + "\n")
    grown = cli("handoff", str(transcript), "--project", "demo").stdout.splitlines()[-1]
    assert grown == "handoffs/2026-11-30 demo 2.md"
    assert _section(_note(vault, grown)[1], "Request") == ["Also bump the TTL."]
    cli("handoff", str(transcript), "--project", "demo")
    cli("extract", str(transcript))
    cli("handoff", str(transcript), "--project", "demo")
    assert _handoffs(vault) == ["2026-11-30 demo 2.md", "2026-11-30 demo.md"]
