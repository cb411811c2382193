"""MCP offers what REST offers: `similar`, `surface`, `link`, `timeline` with `around`,
`get` of several notes, and `resources/list` paged over every note.

The SDK's stdio client drives `python -m vaultmem --vault V mcp` as a subprocess (V a temp
copy of example-vault); the CLI answers the same requests, for comparison.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import pytest
from conftest import run_vaultmem
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError
from test_mcp import _data, _text

from tests.conftest import copy_indexed

REDIS = "decisions/Redis for caching.md"
RATE = "Rate limiting options"
NEW_TOOLS = {"similar", "surface", "link"}
PAGE = 100  # vaultmem.servers.mcp.PAGE: what a resources/list page holds


@pytest.fixture
def indexed(vault: Path) -> Path:
    done = run_vaultmem(vault, "index", "-q")
    assert done.returncode == 0, done.stderr
    return vault


def _session(vault: Path, body: Callable[[Client], Awaitable[None]]) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "vaultmem", "--vault", str(vault), "mcp"],
        env=dict(os.environ),
    )

    async def main() -> None:
        with anyio.fail_after(90):
            async with Client(params, mode="legacy", read_timeout_seconds=60) as client:
                await body(client)

    anyio.run(main)


def _error_line(vault: Path, *args: str) -> str:
    """The CLI's error line for the same request, without its `vaultmem: error: `."""
    done = run_vaultmem(vault, *args)
    assert done.returncode != 0 and done.stderr.startswith("vaultmem: error: "), done.stderr
    return done.stderr.strip().removeprefix("vaultmem: error: ")


def test_the_rest_apis_operations_are_tools(indexed: Path) -> None:
    missing = _error_line(indexed, "get", "no such note")
    no_vectors = _error_line(indexed, "similar", "Redis for caching")
    prompt = "why did we pick redis for caching?"
    cli_surface = json.loads(run_vaultmem(indexed, "surface", prompt, "--json").stdout)
    printed = run_vaultmem(indexed, "timeline", REDIS, "--around", "0", "--json").stdout
    cli_events = [json.loads(line) for line in printed.splitlines()]
    redis_text = (indexed / REDIS).read_text("utf-8")
    rate_path = "research/Rate limiting options.md"

    async def body(client: Client) -> None:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) >= NEW_TOOLS and len(tools) == 13
        # Every definition goes into every agent's context: a line or two each.
        assert all(len(t.description or "") <= 240 for t in tools.values()), [
            (t.name, len(t.description or "")) for t in tools.values()
        ]

        # get: one note is its text; several are one list, a missing one an entry.
        several = _data(await client.call_tool("get", {"note": [REDIS, RATE, "no such note"]}))
        assert [n["note"] for n in several] == [REDIS, RATE, "no such note"]
        assert several[0] == {"note": REDIS, "path": REDIS, "text": redis_text}
        assert several[1]["path"] == rate_path
        assert several[1]["text"] == (indexed / rate_path).read_text("utf-8")
        assert several[2] == {"note": "no such note", "error": missing}
        heads = _data(
            await client.call_tool("get", {"note": [REDIS, RATE], "start_line": 1, "end_line": 1})
        )
        assert [h["text"] for h in heads] == ["---\n", "---\n"]
        for arguments in (
            {"note": []},
            {"note": [REDIS], "start_line": 3, "end_line": 2},
            {"note": [REDIS, 5]},
        ):
            refused = await client.call_tool("get", arguments)
            assert refused.is_error, (arguments, _text(refused))

        # surface: the CLI's block for the same prompt.
        surfaced = _data(await client.call_tool("surface", {"prompt": prompt}))
        assert surfaced == cli_surface and surfaced["notes"][0]["path"] == REDIS
        quiet = _data(await client.call_tool("surface", {"prompt": "thanks!"}))
        assert quiet == {"context": "", "notes": [], "reason": "acknowledgement"}
        nul = await client.call_tool("surface", {"prompt": "redis\x00"})
        assert nul.is_error and _text(nul).startswith("prompt: a NUL character")

        # similar needs vectors: the CLI's error without them.
        lacking = await client.call_tool("similar", {"note": "Redis for caching"})
        assert lacking.is_error and _text(lacking) == no_vectors

        # timeline takes around, as REST and the CLI do.
        told = _data(await client.call_tool("timeline", {"note": REDIS, "around": "0"}))
        assert told["events"] == cli_events

        # link, then again (nothing to do), then unlink: the notes' frontmatter says so.
        linked = _data(
            await client.call_tool(
                "link", {"source": "Redis for caching", "target": RATE, "type": "refines"}
            )
        )
        assert linked["changed"] and linked["source"] == REDIS and linked["target"] == rate_path
        assert linked["written"] == {REDIS: ["refines"]}  # one-way: only the source
        again = _data(
            await client.call_tool("link", {"source": REDIS, "target": RATE, "type": "refines"})
        )
        assert again["changed"] is False and again["written"] == {}
        links = _data(await client.call_tool("links", {"note": REDIS}))
        assert rate_path in [ref["path"] for ref in links["typed"]["refines"]]
        gone = _data(
            await client.call_tool(
                "link", {"source": REDIS, "target": RATE, "type": "refines", "remove": True}
            )
        )
        assert gone["changed"] and gone["written"] == {REDIS: ["refines"]}
        wrong = await client.call_tool("link", {"source": REDIS, "target": RATE, "type": "x"})
        assert wrong.is_error and "is not a link type" in _text(wrong)
        unknown = await client.call_tool("link", {"source": REDIS, "target": "no such note"})
        assert unknown.is_error and _text(unknown) == missing

    _session(indexed, body)
    assert (indexed / REDIS).read_text("utf-8") == redis_text  # linked, then unlinked


def test_similar_over_vectors(embedded_example: Path, tmp_path: Path, vectors_on: None) -> None:
    vault = tmp_path / "vault"
    copy_indexed(embedded_example, vault)
    done = run_vaultmem(vault, "similar", "Redis for caching", "-n", "3", "--json")
    assert done.returncode == 0, done.stderr
    cli_paths = [json.loads(line)["path"] for line in done.stdout.splitlines()]

    async def body(client: Client) -> None:
        near = _data(await client.call_tool("similar", {"note": "Redis for caching", "limit": 3}))
        assert [h["path"] for h in near["hits"]] == cli_paths and len(cli_paths) == 3
        assert REDIS not in cli_paths
        only = _data(
            await client.call_tool("similar", {"note": REDIS, "folder": "decisions", "limit": 50})
        )
        assert only["hits"] and all(h["path"].startswith("decisions/") for h in only["hits"])

    _session(vault, body)


def _notes_on_disk(vault: Path) -> list[str]:
    return sorted(
        p.relative_to(vault).as_posix()
        for p in vault.rglob("*.md")
        if not any(part.startswith(".") for part in p.relative_to(vault).parts)
    )


def test_resources_list_pages_over_every_note(vault: Path) -> None:
    bulk = vault / "bulk"
    bulk.mkdir()
    for n in range(60):  # 54 + 60 notes: more than one page
        (bulk / f"note-{n:02}.md").write_text(
            f"---\ntitle: Bulk note {n}\n---\nFiller number {n}.\n", "utf-8"
        )
    done = run_vaultmem(vault, "index", "-q")
    assert done.returncode == 0, done.stderr
    expected = _notes_on_disk(vault)
    assert len(expected) > PAGE

    async def body(client: Client) -> None:
        first = await client.list_resources()
        assert len(first.resources) == PAGE and first.next_cursor
        # A note added between two pages is on the next one if it sorts after the cursor.
        (vault / "zz late.md").write_text("---\ntitle: Late\n---\nlate\n", "utf-8")
        second = await client.list_resources(cursor=first.next_cursor)
        assert second.next_cursor is None
        listed = [r.name for r in first.resources] + [r.name for r in second.resources]
        assert listed == [*expected, "zz late.md"]  # each note once, in path order
        by_name = {r.name: r for r in [*first.resources, *second.resources]}
        assert by_name["bulk/note-07.md"].title == "Bulk note 7"
        assert by_name[REDIS].title == "Redis for caching"
        assert by_name[REDIS].mime_type == "text/markdown"
        with pytest.raises(MCPError, match="cursor: a NUL character"):
            await client.list_resources(cursor="bulk/\x00")
        for name in (REDIS, "bulk/note-59.md", "zz late.md"):
            read = await client.read_resource(str(by_name[name].uri))
            assert [getattr(c, "text", None) for c in read.contents] == [
                (vault / name).read_text("utf-8")
            ]

    _session(vault, body)
