"""`handoff`: the note a session leaves for the next one, with and without an LLM."""

from __future__ import annotations

import json
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
        "- Done: sessions now live in Redis (db 2) with a 14-day TTL, and the adapter is in "
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
    path = cli("handoff", str(SESSION)).stdout.splitlines()[-1]
    _, body = _note(vault, path)
    assert "Asked: I prefer small commits" in body and "## Done" not in body
