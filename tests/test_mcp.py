"""`vaultmem mcp`: the SDK's own clients drive a real server process, over stdio and HTTP.

Every session starts `python -m vaultmem --vault V mcp` as a subprocess (V an indexed temp
copy of example-vault): nothing is faked on either side of the protocol.
"""

from __future__ import annotations

import json
import os
import select
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import run_vaultmem
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

from tests.conftest import copy_indexed
from tests.local_server import free_port

TOOLS = {"search", "get", "remember", "reinforce", "flag", "links", "status", "timeline"}
TOOLS |= {"similar", "surface", "link"}  # tests/test_mcp_parity.py
TOOLS |= {"curate", "reflect"}  # tests/test_reports.py
REDIS = "decisions/Redis for caching.md"


@pytest.fixture
def indexed(vault: Path) -> Path:
    """The example vault, keyword-indexed."""
    done = run_vaultmem(vault, "index", "-q")
    assert done.returncode == 0, done.stderr
    return vault


def _server_env(**extra: str) -> dict[str, str]:
    """The test's environment (isolated by conftest) for the server process."""
    return dict(os.environ, **extra)


def _session(vault: Path, body: Callable[[Client], Awaitable[None]], **env: str) -> None:
    """Run ``body`` against a stdio server on ``vault``, with the SDK's stdio client."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "vaultmem", "--vault", str(vault), "mcp"],
        env=_server_env(**env),
    )

    async def main() -> None:
        with anyio.fail_after(60):
            async with Client(params, mode="legacy", read_timeout_seconds=30) as client:
                await body(client)

    anyio.run(main)


def _text(result: Any) -> str:
    assert len(result.content) == 1
    text: str = result.content[0].text
    return text


def _data(result: Any) -> Any:
    assert not result.is_error, _text(result)
    return json.loads(_text(result))


def test_every_tool_and_a_resource_over_stdio(indexed: Path) -> None:
    missing = run_vaultmem(indexed, "get", "no such note").stderr.strip()
    assert missing.startswith("vaultmem: error: ")
    printed = run_vaultmem(indexed, "timeline", REDIS, "--json", "-n", "50").stdout
    cli_events = [json.loads(line) for line in printed.splitlines()]
    redis_text = (indexed / REDIS).read_text("utf-8")

    async def body(client: Client) -> None:
        assert "53 notes" in (client.instructions or "")
        assert "keyword search only" in (client.instructions or "")
        assert {t.name for t in (await client.list_tools()).tools} == TOOLS

        hits = _data(await client.call_tool("search", {"query": "redis cache", "limit": 3}))
        assert hits["hits"][0]["path"] == REDIS and len(hits["hits"]) == 3
        first = hits["hits"][0]
        assert set(first) == {"path", "title", "score", "score_kind", "line", "snippet"}
        assert first["score_kind"] == "bm25"
        bad = await client.call_tool("search", {"query": "redis", "limit": 0})
        assert bad.is_error and "limit must be" in _text(bad)

        lines = await client.call_tool("get", {"note": "Redis for caching", "start_line": 2})
        assert _text(lines) == "".join(redis_text.splitlines(keepends=True)[1:])
        part = await client.call_tool("get", {"note": REDIS, "start_line": 1, "end_line": 2})
        assert _text(part) == "".join(redis_text.splitlines(keepends=True)[:2])

        # A domain error is a tool error with the CLI's line, and the server goes on.
        error = await client.call_tool("get", {"note": "no such note"})
        assert error.is_error and _text(error) == missing.removeprefix("vaultmem: error: ")

        saved = _data(
            await client.call_tool(
                "remember",
                {"text": "The quokka gateway retries twice.", "title": "Quokka retries"},
            )
        )
        found = _data(await client.call_tool("search", {"query": "quokka gateway"}))
        assert found["hits"][0]["path"] == saved["path"]

        used = _data(await client.call_tool("reinforce", {"notes": ["Quokka retries"]}))
        assert used[0]["use_count"] == used[0]["use_count_before"] + 1
        observed = _data(
            await client.call_tool("reinforce", {"notes": [REDIS], "context_tags": ["billing"]})
        )
        assert observed[0]["path"] == REDIS

        pinned = _data(await client.call_tool("flag", {"notes": [REDIS], "action": "pin"}))
        assert pinned[0]["after"]["pinned"] is True
        snoozed = _data(
            await client.call_tool(
                "flag", {"notes": [REDIS], "action": "snooze", "duration": "30d"}
            )
        )
        assert snoozed[0]["after"]["snoozed_until"]
        await client.call_tool("flag", {"notes": ["Quokka retries"], "action": "forget"})
        gone = _data(await client.call_tool("search", {"query": "quokka gateway"}))
        assert saved["path"] not in [h["path"] for h in gone["hits"]]
        wrong = await client.call_tool("flag", {"notes": [REDIS], "action": "pin", "until": "x"})
        assert wrong.is_error and "pin takes no until or for" in _text(wrong)

        links = _data(await client.call_tool("links", {"note": REDIS}))
        assert links["path"] == REDIS and links["backlinks"]
        status = _data(await client.call_tool("status", {}))
        assert status["notes"] == 54 and status["indexed"] == 54

        # The same request model as `timeline`: the same events (before this session's
        # writes, which are dated now and come after the Redis note's).
        told = _data(await client.call_tool("timeline", {"note": "Redis for caching"}))
        assert told["note"] == REDIS and told["events"][: len(cli_events)] == cli_events
        assert {"created", "linked"} <= {e["kind"] for e in told["events"]}
        window = _data(await client.call_tool("timeline", {"since": "2h", "newest_first": True}))
        assert window["events"][0]["path"] == "inbox/quokka-retries.md"
        for args, said in (({}, "give a note, or since"), ({"since": "soon"}, "since: invalid")):
            refused = await client.call_tool("timeline", args)
            assert refused.is_error and _text(refused).startswith(said), _text(refused)

        note = (await client.read_resource("vault://decisions/Redis%20for%20caching.md")).contents
        assert [getattr(part, "text", None) for part in note] == [(indexed / REDIS).read_text()]
        for escape in ("vault://../../etc/passwd", "vault://.vaultmem.toml"):
            with pytest.raises(MCPError):
                await client.read_resource(escape)

    _session(indexed, body)
    text = (indexed / REDIS).read_text("utf-8")
    assert "pinned: true" in text and "snoozed_until:" in text


def _raw_session(vault: Path, calls: list[tuple[str, dict[str, Any]]], **env: str) -> list[bytes]:
    """JSON-RPC by hand: every byte the server writes to stdout, one call at a time."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "vaultmem", "--vault", str(vault), "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=_server_env(**env),
    )
    assert proc.stdin is not None and proc.stdout is not None
    init = {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"},
    }
    requests: list[dict[str, Any]] = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ]
    for n, (name, arguments) in enumerate(calls, start=1):
        params = {"name": name, "arguments": arguments}
        requests.append({"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": params})
    lines: list[bytes] = []
    try:
        for request in requests:
            proc.stdin.write(json.dumps(request).encode() + b"\n")
            proc.stdin.flush()
            if "id" in request:
                ready, _, _ = select.select([proc.stdout], [], [], 60)
                assert ready, f"no answer to {request}"
                lines.append(proc.stdout.readline())
        rest, _ = proc.communicate(timeout=30)  # closes stdin: the server ends
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0
    return lines + rest.splitlines(keepends=True)


def test_stdout_is_only_protocol_with_a_broken_note_and_a_dead_endpoint(indexed: Path) -> None:
    (indexed / "broken.md").write_text("---\ntitle: [unclosed\n---\nbody zanzibar\n", "utf-8")
    dead = f"http://127.0.0.1:{free_port()}/v1"
    env = {"VAULTMEM_LLM_URL": dead, "VAULTMEM_LLM_MODEL": "x", "VAULTMEM_LLM_MAX_RETRIES": "0"}
    env["VAULTMEM_QUERY_EXPAND"] = "true"  # the LLM is asked twice: expansion and rerank
    calls: list[tuple[str, dict[str, Any]]] = [
        ("search", {"query": "redis zanzibar", "mode": "hybrid"}),
        ("get", {"note": "broken.md"}),
        ("status", {}),
    ]

    async def body(client: Client) -> None:
        hybrid = _data(await client.call_tool(*calls[0]))
        assert hybrid["hits"] and {s["stage"] for s in hybrid["skipped"]} >= {"expansion"}
        broken = await client.call_tool(*calls[1])
        assert broken.is_error and "broken.md" in _text(broken)
        assert _data(await client.call_tool(*calls[2]))["new"] == 1

    _session(indexed, body, **env)
    lines = _raw_session(indexed, calls, **env)
    assert len(lines) == 1 + len(calls)  # one answer a request, nothing else
    answers = [json.loads(line) for line in lines]
    assert all(a["jsonrpc"] == "2.0" and "result" in a for a in answers), answers


def test_search_defaults_to_hybrid_when_the_vault_has_vectors(
    embedded_example: Path, tmp_path: Path, vectors_on: None
) -> None:
    vault = tmp_path / "vault"
    copy_indexed(embedded_example, vault)
    query = {"query": "why did we pick redis", "limit": 3}

    async def body(client: Client) -> None:
        assert "search defaults to hybrid" in (client.instructions or "")
        chosen = _data(await client.call_tool("search", query))
        hybrid = _data(await client.call_tool("search", {**query, "mode": "hybrid"}))
        keyword = _data(await client.call_tool("search", {**query, "mode": "keyword"}))
        semantic = _data(await client.call_tool("search", {**query, "mode": "semantic"}))
        assert chosen == hybrid != keyword
        assert semantic["hits"] and semantic != keyword

    _session(vault, body)


@pytest.fixture
def http_server(indexed: Path, tmp_path: Path) -> Iterator[str]:
    """`vaultmem mcp --http` on a free loopback port, with a token; yields its URL."""
    port = free_port()
    log = tmp_path / "mcp-http.log"
    with log.open("w") as log_file:
        proc = subprocess.Popen(
            [sys.executable, "-m", "vaultmem", "--vault", str(indexed), "mcp", "--http"]
            + ["--port", str(port), "--token", "s3cret"],
            stdout=log_file,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 30
        while True:
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, "mcp --http did not start"
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        assert proc.wait(timeout=15) == 0, log.read_text()


def test_streamable_http(http_server: str) -> None:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    async def main() -> None:
        headers = {"Authorization": "Bearer s3cret"}
        async with httpx2.AsyncClient(headers=headers) as http:
            transport = streamable_http_client(http_server, http_client=http)
            async with Client(transport, mode="legacy") as client:
                assert {t.name for t in (await client.list_tools()).tools} == TOOLS
                hits = _data(await client.call_tool("search", {"query": "redis cache"}))
                assert hits["hits"][0]["path"] == REDIS
        async with httpx2.AsyncClient() as http:
            assert (await http.post(http_server, json={})).status_code == 401
            wrong = {"Authorization": "Bearer s3cre7"}
            assert (await http.post(http_server, json={}, headers=wrong)).status_code == 401
            rebound = {**headers, "Host": "attacker.example:80"}
            assert (await http.post(http_server, json={}, headers=rebound)).status_code == 421

    anyio.run(main)


def test_http_without_a_token_is_for_loopback_only(vault: Path) -> None:
    done = run_vaultmem(vault, "mcp", "--http", "--no-auth", "--host", "0.0.0.0")
    assert done.returncode == 2 and done.stdout == ""  # options that contradict: usage
    assert done.stderr == (
        "vaultmem: error: refusing to bind 0.0.0.0 without a token: "
        "--no-auth is for loopback only\n"
    )
    both = run_vaultmem(vault, "mcp", "--http", "--no-auth", "--token", "x")
    assert both.returncode == 2 and "--no-auth contradicts --token" in both.stderr


def test_arguments_are_checked_as_every_door_checks_them(indexed: Path) -> None:
    """The request model's rules, not a looser copy: a NUL is refused with the model's line
    (it was searched, and its nearest notes scored 1.0 in hybrid mode), and JSON's `true`
    or "5" is no number (pydantic took `true` for a limit of 1)."""

    async def body(client: Client) -> None:
        for mode in ("keyword", "hybrid"):
            nul = await client.call_tool("search", {"query": "\x00\x00", "mode": mode})
            assert nul.is_error and _text(nul) == "query: a NUL character in '\\x00\\x00'"
        named = await client.call_tool("get", {"note": "Redis\x00"})
        assert named.is_error and _text(named) == "note name: a NUL character in 'Redis\\x00'"
        tags = await client.call_tool("remember", {"text": "A memory.", "tags": ["a\x00"]})
        assert tags.is_error and _text(tags) == "tags: a NUL character in 'a\\x00'"
        for tool, arguments in (
            ("search", {"query": "redis", "limit": True}),
            ("search", {"query": "redis", "limit": "2"}),
            ("search", {"query": "redis", "limit": 2.5}),
            ("timeline", {"note": "Redis for caching", "limit": True}),
            ("timeline", {"note": "Redis for caching", "newest_first": "yes"}),
            ("get", {"note": "Redis for caching", "start_line": True}),
        ):
            refused = await client.call_tool(tool, arguments)
            assert refused.is_error, (tool, arguments, _text(refused))
        two = _data(await client.call_tool("search", {"query": "redis", "limit": 2.0}))
        assert len(two["hits"]) == 2  # JSON Schema's integer: a number with no fraction

    _session(indexed, body)
