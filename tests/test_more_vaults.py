"""Several vaults beyond `search` (issue 32, item 13; issue 27, item 7): `query` and
`vsearch` take `--all-vaults` and repeated `--vault`, a vault that cannot be searched is
one line while the others answer, and every MCP tool takes `vault`: a vault the user's
config names, never a path a client makes up."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_vaultmem
from mcp import Client
from test_mcp import _data, _text
from test_mcp_parity import _session
from test_vaults import _run, _user_config

from tests.conftest import copy_indexed

TIDES = "# Tide tables\n\nHigh water at the harbour comes at noon; low water at six.\n"


@pytest.fixture
def three(embedded_example: Path, tmp_path: Path, vectors_on: None) -> dict[str, Path]:
    """work (the example vault, embedded), side (one note, embedded), new (never indexed)
    and bad (a config that does not load), all named in the user config."""
    work, side, new, bad = (tmp_path / n for n in ("work", "side", "new", "bad"))
    copy_indexed(embedded_example, work)
    for folder in (side, new, bad):
        folder.mkdir()
        (folder / "Tides.md").write_text(TIDES, "utf-8")
    (bad / ".vaultmem.toml").write_text("lock_timeout = -1\n", "utf-8")
    (new / ".vaultmem.toml").write_text("", "utf-8")
    assert run_vaultmem(side, "index", "-q").returncode == 0
    _user_config(f'[vaults]\nwork = "{work}"\nside = "{side}"\nnew = "{new}"\nbad = "{bad}"\n')
    return {"work": work, "side": side, "new": new, "bad": bad}


def _warnings(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "not searched" in line]


@pytest.mark.parametrize("command", ["search", "vsearch", "query"])
def test_every_search_mode_answers_from_the_vaults_that_can(
    three: dict[str, Path], command: str
) -> None:
    done = _run(command, "when is high water at the harbour", "--all-vaults", "--json")
    assert done.exit_code == 0, done.output
    hits = [json.loads(line) for line in done.stdout.splitlines()]
    assert (hits[0]["vault"], hits[0]["path"]) == ("side", "Tides.md")
    assert {h["vault"] for h in hits} == {"side", "work"}
    scores = [h["score"] for h in hits]
    assert scores == sorted(scores, reverse=True)
    assert _warnings(done.stderr) == [
        "vaultmem: warning: vault bad: lock_timeout: expected a number >= 0, got -1: not searched",
        "vaultmem: warning: vault new: the vault is not indexed yet: run `vaultmem index`: "
        "not searched",
    ]
    # Repeated --vault names them one by one, with the global --vault.
    named = _run("--vault", "work", command, "sessions in redis", "--vault", "side", "--json")
    assert named.exit_code == 0 and named.stderr.count("not searched") == 0
    assert {json.loads(x)["vault"] for x in named.stdout.splitlines()} <= {"work", "side"}


def test_mcp_tools_take_a_named_vault_and_nothing_else(three: dict[str, Path]) -> None:
    outside = three["work"].parent / "outside"
    outside.mkdir()
    (outside / "Secret.md").write_text("# Secret\n\nhigh water secret\n", "utf-8")
    assert run_vaultmem(outside, "index", "-q").returncode == 0

    async def body(client: Client) -> None:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert all("vault" in t.input_schema["properties"] for t in tools.values())
        side = _data(await client.call_tool("search", {"query": "high water", "vault": "side"}))
        assert [h["path"] for h in side["hits"]] == ["Tides.md"]
        both = _data(
            await client.call_tool(
                "search", {"query": "high water harbour", "vault": ["work", "side", "new"]}
            )
        )
        assert both["hits"][0] == {**both["hits"][0], "vault": "side", "path": "Tides.md"}
        assert [s["vault"] for s in both["vaults_skipped"]] == ["new"]
        got = await client.call_tool("get", {"note": "Tides", "vault": "side"})
        assert "High water" in _text(got)
        status = _data(await client.call_tool("status", {"vault": "side"}))
        assert status["notes"] == 1
        # Only the user's names: a path, or a name the config lacks, is refused.
        for name in (str(outside), "../outside", "nope"):
            refused = await client.call_tool("search", {"query": "secret", "vault": name})
            assert refused.is_error and _text(refused).startswith(f"unknown vault {name!r}")
            assert "named vaults: work, side, new, bad" in _text(refused)
        # A timeline `around` past the calendar is one line, not a traceback (issue 27).
        far = await client.call_tool("timeline", {"note": "Harbor", "around": "99999999d"})
        assert far.is_error
        assert _text(far) == "around: '99999999d' is too long: at most 36500d (a century)"

    _session(three["work"], body)
