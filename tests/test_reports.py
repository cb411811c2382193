"""`curate` and `reflect` (issue 31): ClawMem's curator as proposals with exact commands,
never applying a forget; and the reflection over recent work."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.conftest import Cli
from vaultmem.note import parse_note

NOW = "2026-12-01T12:00:00Z"


@pytest.fixture(autouse=True)
def _pinned_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VAULTMEM_NOW", NOW)


def _write(vault: Path, path: str, meta: str, body: str) -> None:
    (vault / path).parent.mkdir(parents=True, exist_ok=True)
    (vault / path).write_text(f"---\n{meta.strip()}\n---\n{body}\n")


def _meta(vault: Path, path: str) -> dict:
    return parse_note(path, (vault / path).read_bytes()).meta


def _run(command: str) -> None:
    """Run a proposed command line exactly as printed (it names its vault)."""
    from vaultmem.cli import app

    args = shlex.split(command)
    assert args[0] == "vaultmem"
    result = CliRunner().invoke(app, args[1:])
    assert result.exit_code == 0, result.output


def _proposals(report: dict, kind: str) -> dict[str, dict]:
    return {p["paths"][0]: p for p in report["proposals"] if p["kind"] == kind}


def test_curate_proposes_with_exact_commands_and_never_forgets(vault: Path, cli: Cli) -> None:
    _write(
        vault,
        "decisions/Trunk based development.md",
        "type: decision\ncreated: 2026-06-01T00:00:00Z\nconfidence: 0.9\n"
        "last_confirmed: 2026-11-20T00:00:00Z",
        "# Trunk based development\n\nEveryone merges to main daily behind flags.",
    )
    _write(
        vault,
        "handoffs/2026-07-01 search spike.md",
        "type: handoff\ncreated: 2026-07-01T00:00:00Z",
        "# Handoff 2026-07-01 search spike\n\nTried Meilisearch for the admin search.",
    )
    _write(
        vault,
        "inbox/old scratch idea.md",
        "type: note\ncreated: 2026-01-10T00:00:00Z\nconfidence: 0.25",
        "# Old scratch idea\n\nMaybe a GraphQL gateway in front of the admin API.",
    )
    for n in (1, 2):
        _write(
            vault,
            f"inbox/webhook retries {n}.md",
            "type: observation\ncreated: 2026-11-25T00:00:00Z",
            "Provider webhooks are retried for 72 hours with exponential backoff.",
        )
    report = json.loads(cli("curate", "--json").stdout)
    assert report["health"] == "GOOD"
    assert {p["name"]: p["status"] for p in report["probes"]} == {
        "index": "pass",
        "keyword": "pass",
        "vector": "skip",  # the test vault has no vectors
        "lifecycle": "pass",
        "links": "pass",
    }
    pins = _proposals(report, "pin")
    snoozes = _proposals(report, "snooze")
    forgets = _proposals(report, "forget")
    assert "decisions/Trunk based development.md" in pins
    assert snoozes["handoffs/2026-07-01 search spike.md"]["reason"].startswith(
        "a handoff unused for 154 days"
    )
    assert list(forgets) == ["inbox/old scratch idea.md"]
    (cluster,) = [p for p in report["proposals"] if p["kind"] == "consolidate"]
    assert sorted(cluster["paths"]) == ["inbox/webhook retries 1.md", "inbox/webhook retries 2.md"]
    broken = _proposals(report, "broken_link")
    assert "[[Load testing plan]]" in broken["handoffs/2026-11-12 release 2.8.md"]["reason"]
    assert broken["handoffs/2026-11-12 release 2.8.md"]["commands"] == []
    # A report, not an action: curate changed no note, and above all forgot nothing.
    assert _meta(vault, "inbox/old scratch idea.md").get("status") is None
    assert "pinned" not in _meta(vault, "decisions/Trunk based development.md")
    # The commands are exact: run as printed, they do what the proposal says.
    (pin,) = pins["decisions/Trunk based development.md"]["commands"]
    (snooze,) = snoozes["handoffs/2026-07-01 search spike.md"]["commands"]
    (forget,) = forgets["inbox/old scratch idea.md"]["commands"]
    assert forget == f"vaultmem --vault {vault} forget 'inbox/old scratch idea.md'"
    _run(pin)
    _run(snooze)
    assert _meta(vault, "decisions/Trunk based development.md")["pinned"] is True
    assert str(_meta(vault, "handoffs/2026-07-01 search spike.md")["snoozed_until"]).startswith(
        "2026-12-31"
    )
    again = json.loads(cli("curate", "--json").stdout)
    assert "decisions/Trunk based development.md" not in _proposals(again, "pin")
    assert "handoffs/2026-07-01 search spike.md" not in _proposals(again, "snooze")


def test_curate_lists_flags_orphans_and_a_failing_probe(vault: Path, cli: Cli) -> None:
    _write(
        vault,
        "inbox/go with rq.md",
        "type: decision\ncreated: 2026-11-30T00:00:00Z\nsource_session: s-1\n"
        'needs_review:\n  - "contradicts [[Redis for caching]]: keep one or unlink"',
        "Go with RQ for background jobs.",
    )
    _write(
        vault,
        "inbox/lonely fact.md",
        "type: observation\ncreated: 2026-11-30T00:00:00Z",
        "The staging cluster has two nodes.",
    )
    # A typed link that resolves nowhere fails the links probe.
    _write(
        vault,
        "decisions/Queue choice.md",
        'type: decision\ncreated: 2026-11-01T00:00:00Z\nsupersedes: ["[[Nowhere note]]"]',
        "# Queue choice\n\nRabbitMQ for ingest.",
    )
    out = cli("curate").stdout
    assert "retrieval health: DEGRADED (3/4 probes)" in out
    assert "fail  links: 1 of" in out
    report = json.loads(cli("curate", "--json").stdout)
    (review,) = [p for p in report["proposals"] if p["kind"] == "review"]
    assert review["paths"] == ["inbox/go with rq.md", "decisions/Redis for caching.md"]
    assert review["commands"][1] == (
        f"vaultmem --vault {vault} unlink 'inbox/go with rq.md' 'decisions/Redis for caching.md'"
    )
    orphans = _proposals(report, "orphan")
    assert "inbox/lonely fact.md" in orphans
    assert report["counts"]["flagged"] == 1


def test_reflect_finds_themes_antipatterns_use_and_clusters(
    vault: Path, cli: Cli, tmp_path: Path
) -> None:
    for n, text in enumerate(
        (
            "Background jobs run on RQ workers, one queue per service.",
            "Retry background jobs three times before the dead letter queue.",
            "Background jobs never run database migrations.",
        )
    ):
        _write(
            vault,
            f"inbox/jobs {n}.md",
            f"type: decision\ncreated: 2026-11-2{n}T00:00:00Z\nsource_session: s-{n}",
            f"# Jobs rule {n}\n\n{text}",
        )
    _write(
        vault,
        "inbox/no sleep in tests.md",
        "type: antipattern\ncreated: 2026-11-28T00:00:00Z",
        "# No sleep in tests\n\nNever sleep in tests; poll with a timeout.",
    )
    _write(
        vault,
        "inbox/webhook retry window.md",
        "type: observation\ncreated: 2026-11-27T00:00:00Z\nsource_session: s-a",
        "# Webhook retry window is 72 hours\n\nThe provider retries for 72 hours.",
    )
    _write(
        vault,
        "inbox/webhook retry window again.md",
        "type: observation\ncreated: 2026-11-29T00:00:00Z\nsource_session: s-b",
        "# Webhook retry window of the provider\n\nSeen again in another session.",
    )
    cli("index")
    for session in ("s1", "s2", "s3"):
        cli("surface", "what did we decide about caching and Redis failover?", "--session", session)
        cli("surface", "how do we recover when the Redis primary fails?", "--session", session)
    cli("touch", "decisions/Redis for caching.md")
    found = json.loads(cli("reflect", "--days", "20", "--json").stdout)
    themes = {t["phrase"]: t["count"] for t in found["themes"]}
    assert themes.get("background job") == 3 or themes.get("background jobs") == 3, themes
    assert [a["path"] for a in found["antipatterns"]] == ["inbox/no sleep in tests.md"]
    top = found["most_used"][0]
    assert top["path"] == "decisions/Redis for caching.md" and top["uses"] == 1
    whys = [c["why"] for c in found["clusters"]]
    assert any(w.startswith("shown together") for w in whys), found["clusters"]
    subject = {
        tuple(c["notes"]): c for c in found["clusters"] if c["why"].startswith("one subject")
    }
    webhook = subject[("inbox/webhook retry window again.md", "inbox/webhook retry window.md")]
    assert webhook["sessions"] == ["s-a", "s-b"]
    assert webhook["why"] == "one subject: retry, webhook, window"
    text = cli("reflect", "--days", "20").stdout
    assert "recurring themes:" in text and "[3x]" in text
    # An old window sees none of it.
    old = json.loads(cli("reflect", "--days", "1", "--json").stdout)
    assert old["antipatterns"] == []


def test_reflect_days_must_be_positive(cli: Cli) -> None:
    result = cli("reflect", "--days", "0", ok=False)
    assert result.exit_code == 2 and "--days" in result.stderr and "0" in result.stderr


def test_curate_and_reflect_are_read_only_mcp_tools(vault: Path, cli: Cli) -> None:
    from test_mcp import _data
    from test_mcp_parity import _session

    cli("index")
    cli_report = json.loads(cli("curate", "--json").stdout)

    async def body(client) -> None:  # noqa: ANN001
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert tools["curate"].annotations.read_only_hint is True
        assert tools["reflect"].annotations.read_only_hint is True
        report = _data(await client.call_tool("curate", {}))
        assert report["proposals"] == cli_report["proposals"]
        assert report["health"] == cli_report["health"]
        reflection = _data(await client.call_tool("reflect", {"days": 60}))
        assert reflection["days"] == 60 and reflection["themes"]
        refused = await client.call_tool("reflect", {"days": 0})
        assert refused.is_error

    _session(vault, body)
