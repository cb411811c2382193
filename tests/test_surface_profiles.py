"""Surfacing profiles (issue 22): quiet, normal and deep budgets, by flag or by config."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import Cli
from vaultmem.agent.surface import SurfaceRequest, estimate_tokens
from vaultmem.errors import RequestError
from vaultmem.vocabulary import SURFACE_PROFILES

CACHING = "what did we decide about caching?"
NOW = "2026-11-20T10:00:00Z"


@pytest.fixture
def scli(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> Cli:
    monkeypatch.setenv("VAULTMEM_NOW", NOW)
    cli("index")
    return cli


def shown(cli: Cli, prompt: str, *args: str) -> dict:
    return json.loads(cli("surface", prompt, "--json", *args).stdout)


def test_each_profile_shows_at_most_its_notes_within_its_tokens(scli: Cli) -> None:
    counts = {}
    for name, profile in SURFACE_PROFILES.items():
        out = shown(scli, CACHING, "--profile", name)
        assert out["notes"][0]["path"] == "decisions/Redis for caching.md"
        assert len(out["notes"]) <= profile.notes
        assert estimate_tokens(out["context"]) <= profile.tokens
        counts[name] = len(out["notes"])
    # The caching prompt has more than three relevant notes: deep says more than normal.
    assert counts["quiet"] <= 2 < counts["deep"]
    assert counts["normal"] <= 3 < counts["deep"]
    assert shown(scli, CACHING) == shown(scli, CACHING, "--profile", "normal")


def test_quiet_is_silent_where_normal_speaks_on_a_weak_match(scli: Cli) -> None:
    # A general question about a tool the vault names: normal speaks (a false alarm the
    # benchmark counts), quiet's higher floor keeps it silent.
    prompt = "postgres: how do I cast a jsonb field to an integer"
    assert shown(scli, prompt)["notes"]
    assert shown(scli, prompt, "--profile", "quiet")["notes"] == []


def test_an_explicit_budget_still_wins(scli: Cli) -> None:
    out = shown(scli, CACHING, "--profile", "deep", "--budget", "120")
    assert 0 < estimate_tokens(out["context"]) <= 120


def test_the_config_chooses_the_profile(scli: Cli, vault: Path) -> None:
    (vault / ".vaultmem.toml").write_text('[hooks]\nprofile = "deep"\n')
    assert len(shown(scli, CACHING)["notes"]) > 3
    assert len(shown(scli, CACHING, "--profile", "quiet")["notes"]) <= 2
    (vault / ".vaultmem.toml").write_text('[hooks]\nprofile = "loud"\n')
    bad = scli("surface", CACHING, ok=False)
    assert bad.exit_code == 1
    assert "hooks.profile: expected one of quiet, normal, deep, got 'loud'" in bad.stderr


def test_an_unknown_profile_is_a_usage_error(scli: Cli) -> None:
    bad = scli("surface", CACHING, "--profile", "loud", ok=False)
    assert bad.exit_code == 2 and "unknown profile 'loud'" in bad.stderr
    with pytest.raises(RequestError, match="unknown profile 'loud'"):
        SurfaceRequest(CACHING, profile="loud")


def _hook(cli: Cli, session: str, *args: str) -> str:
    event = json.dumps({"prompt": CACHING, "session_id": session})
    return str(cli("hook", "prompt", *args, input=event).stdout)


def test_the_prompt_hook_takes_a_profile_and_never_fails_on_a_bad_one(
    scli: Cli, vault: Path
) -> None:
    normal = json.loads(_hook(scli, "h1"))["hookSpecificOutput"]["additionalContext"]
    deep = json.loads(_hook(scli, "h2", "--profile", "deep"))
    deep_block = deep["hookSpecificOutput"]["additionalContext"]
    assert normal.count(".md, line") <= 3 < deep_block.count(".md, line")
    # Claude Code blocks the prompt on exit 2: a bad profile is logged, and the hook is quiet.
    assert _hook(scli, "h3", "--profile", "loud") == ""
    log = (vault / ".vaultmem" / "hooks.log").read_text()
    assert "unknown profile 'loud'" in log.splitlines()[-1]


def test_rest_and_mcp_take_the_profile_through_the_one_request_model() -> None:
    from pydantic import ValidationError

    from vaultmem.servers.schema import SurfaceBody

    assert SurfaceBody(prompt=CACHING, profile="quiet").value().profile == "quiet"
    assert SurfaceBody(prompt=CACHING).value().budget is None
    with pytest.raises((ValidationError, RequestError)):
        SurfaceBody(prompt=CACHING, profile="loud").value()


def test_mcp_surface_takes_a_profile(scli: Cli, vault: Path) -> None:
    from tests.test_mcp import _data, _session

    async def body(client):  # noqa: ANN001, ANN202
        deep = _data(await client.call_tool("surface", {"prompt": CACHING, "profile": "deep"}))
        quiet = _data(await client.call_tool("surface", {"prompt": CACHING, "profile": "quiet"}))
        assert len(quiet["notes"]) <= 2 < 3 < len(deep["notes"])

    _session(vault, body, VAULTMEM_NOW=NOW)
