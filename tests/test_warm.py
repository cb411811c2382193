"""Warm by default: with `vaultmem serve` up, the CLI's searches go through it and answer
exactly as in process; any failure of the server falls back to in-process work.

Every command here is a whole process (`python -m vaultmem`), as a user or a hook runs
it. That a command went through the server is read from the server's log (one
"forwarded WORD" line per answered request, written before the answer is sent); the same
command with VAULTMEM_NO_SERVER=1 must add no line.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import copy_indexed
from vaultmem.client import ANSWER_S, command_of

pytestmark = pytest.mark.slow  # real `serve` processes and the warm path

Served = Callable[..., dict]
PINNED_NOW = "2026-12-01T09:00:00Z"


@pytest.fixture(autouse=True)
def _pinned_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """Scores hold the memory prior, which reads the clock: runs compared here must see
    the same time."""
    monkeypatch.setenv("VAULTMEM_NOW", PINNED_NOW)


def vm(
    vault: Path, *args: str, stdin: bytes = b"", env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    """``python -m vaultmem --vault VAULT ARGS`` with bytes in and out."""
    return subprocess.run(
        [sys.executable, "-m", "vaultmem", "--vault", str(vault), *args],
        input=stdin,
        capture_output=True,
        timeout=120,
        env=env,
        check=False,
    )


def no_server() -> dict[str, str]:
    return {**os.environ, "VAULTMEM_NO_SERVER": "1"}


def forwarded(vault: Path) -> list[str]:
    """The server log's "forwarded" lines (each: one request it answered)."""
    log = vault / ".vaultmem" / "server.log"
    text = log.read_text() if log.exists() else ""
    return [line.split(" ", 1)[1] for line in text.splitlines() if " forwarded " in line]


@pytest.fixture
def serve_at() -> Iterator[Served]:
    """Start `serve --background --port 0` on a vault (env: the server's environment);
    every server started is stopped after the test."""
    started: list[int] = []

    def start(vault: Path, env: dict[str, str] | None = None) -> dict:
        done = vm(vault, "serve", "--background", "--port", "0", "--json", env=env)
        assert done.returncode == 0, done.stderr.decode()
        info = json.loads(done.stdout)
        started.append(info["pid"])
        return info

    yield start
    for pid in started:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def indexed(vault: Path) -> Path:
    assert vm(vault, "index", env=no_server()).returncode == 0
    return vault


def same_both_ways(vault: Path, *args: str, stdin: bytes = b"") -> subprocess.CompletedProcess:
    """Run once through the server and once in process; both must match byte for byte,
    and only the first may appear in the server's log."""
    before = len(forwarded(vault))
    through = vm(vault, *args, stdin=stdin)
    assert len(forwarded(vault)) == before + 1, f"not forwarded: {args}"
    alone = vm(vault, *args, stdin=stdin, env=no_server())
    assert len(forwarded(vault)) == before + 1, f"forwarded with VAULTMEM_NO_SERVER: {args}"
    assert through.stdout.decode() == alone.stdout.decode(), args
    assert through.stderr.decode() == alone.stderr.decode(), args
    assert through.returncode == alone.returncode, args
    return through


def test_same_answers_through_the_server(
    embedded_example: Path, tmp_path: Path, vectors_on: None, serve_at: Served
) -> None:
    vault = tmp_path / "v"
    copy_indexed(embedded_example, vault)
    serve_at(vault)
    prompt = "why did we move sessions to Redis?"
    codes = {}
    for args in [
        ("search", "redis", "--json"),
        ("search", "connection pooling"),
        ("vsearch", "where do sessions live", "--json"),
        ("query", "why did we choose redis for caching", "--json"),
        ("surface", prompt, "--vectors", "--json"),
        ("surface", prompt, "--no-vectors"),
        ("search", "--help"),
        ("search",),  # usage: missing QUERY
        ("query", "x", "--limit", "many"),  # usage: not a number
        ("search", "redis", "--collection", "nope"),  # an error of the vault's config
    ]:
        codes[args] = same_both_ways(vault, *args).returncode
    assert codes[("search", "redis", "--json")] == 0
    assert codes[("search",)] == 2 and codes[("query", "x", "--limit", "many")] == 2
    assert codes[("search", "redis", "--collection", "nope")] == 1
    hits = vm(vault, "vsearch", "where do sessions live", "--json").stdout.splitlines()
    assert hits and json.loads(hits[0])["path"]


def test_hook_prompt_and_errors_through_a_keyword_only_server(
    vault: Path, serve_at: Served
) -> None:
    indexed(vault)
    serve_at(vault)

    # A session sees a note once: each run gets its own session, same answer.
    before = len(forwarded(vault))
    through = vm(vault, "hook", "prompt", stdin=prompt_event(vault, "a"))
    alone = vm(vault, "hook", "prompt", stdin=prompt_event(vault, "b"), env=no_server())
    assert [line.split(" in ")[0] for line in forwarded(vault)[before:]] == [
        "forwarded hook: exit 0"
    ]
    assert through.returncode == alone.returncode == 0
    assert through.stdout == alone.stdout
    assert (
        "Redis for caching" in json.loads(through.stdout)["hookSpecificOutput"]["additionalContext"]
    )
    # No vectors in this vault: the same one-line error, exit 1.
    failed = same_both_ways(vault, "vsearch", "redis")
    assert failed.returncode == 1 and failed.stderr.startswith(b"vaultmem: error: ")


def test_a_change_indexed_by_another_process_is_seen(vault: Path, serve_at: Served) -> None:
    indexed(vault)
    serve_at(vault)
    assert vm(vault, "search", "zanzibar", "--json").stdout == b""
    (vault / "Zanzibar trip.md").write_text("# Zanzibar trip\n\nSpice farms in Zanzibar.\n")
    assert vm(vault, "index", env=no_server()).returncode == 0
    before = len(forwarded(vault))
    found = vm(vault, "search", "zanzibar", "--json")
    assert len(forwarded(vault)) == before + 1
    assert json.loads(found.stdout.splitlines()[0])["path"] == "Zanzibar trip.md"


def prompt_event(vault: Path, session: str) -> bytes:
    """A UserPromptSubmit event as Claude Code sends it on stdin."""
    event = {
        "session_id": session,
        "transcript_path": str(vault / "t.jsonl"),
        "cwd": str(vault),
        "permission_mode": "default",
        "hook_event_name": "UserPromptSubmit",
        "prompt": "why did we move sessions to Redis?",
    }
    return json.dumps(event).encode()


@pytest.mark.parametrize("args", [("search", "redis", "--json"), ("hook", "prompt")])
def test_falls_back_when_the_server_dies_mid_request(
    vault: Path, tmp_path: Path, serve_at: Served, args: tuple[str, ...]
) -> None:
    indexed(vault)
    # A session sees a note once: the two runs get their own sessions.
    expected = vm(vault, *args, stdin=prompt_event(vault, "a"), env=no_server())
    assert expected.returncode == 0 and expected.stdout
    slow = {**os.environ, "VAULTMEM_TEST_FORWARD_DELAY": "30"}
    info = serve_at(vault, env=slow)
    event = tmp_path / "event.json"
    event.write_bytes(prompt_event(vault, "b"))
    started = time.monotonic()
    with event.open("rb") as stdin:
        client = subprocess.Popen(
            [sys.executable, "-m", "vaultmem", "--vault", str(vault), *args],
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
    # Still waiting on the server: `hook prompt` waits at most ANSWER_S["hook"] for it.
    time.sleep(min(2.0, ANSWER_S[args[0]] / 2))
    assert client.poll() is None
    os.kill(info["pid"], signal.SIGKILL)
    killed = time.monotonic()
    out, err = client.communicate(timeout=60)
    assert (client.returncode, out, err) == (0, expected.stdout, expected.stderr)
    if args[0] == "search":  # it fell back on the broken connection, not at its 10 s deadline
        assert time.monotonic() - killed < ANSWER_S["search"] - (killed - started) - 1
    assert forwarded(vault) == []


def test_a_stalled_server_leaves_the_hook_its_budget(vault: Path, serve_at: Served) -> None:
    """A server that does not answer costs `hook prompt` about ANSWER_S["hook"] over its
    in-process time, well inside Claude Code's hook timeout, and the answer is the same."""
    from vaultmem.agent.hooks import EVENTS

    indexed(vault)
    spent = []
    for session in ("a", "b"):
        started = time.monotonic()
        alone = vm(vault, "hook", "prompt", stdin=prompt_event(vault, session), env=no_server())
        spent.append(time.monotonic() - started)
    assert b"Redis for caching" in alone.stdout
    serve_at(vault, env={**os.environ, "VAULTMEM_TEST_FORWARD_DELAY": "30"})
    started = time.monotonic()
    slow = vm(vault, "hook", "prompt", stdin=prompt_event(vault, "c"))
    took = time.monotonic() - started
    assert (slow.returncode, slow.stdout, slow.stderr) == (0, alone.stdout, b"")
    timeout = next(event.timeout for event in EVENTS if event.name == "prompt")
    assert took < timeout
    # The stalled server may cost the hook about a second, not the several it used to
    # (and the in-process run after it can take as long again on a cold, busy machine).
    assert took - min(spent) < 2.5, (took, spent)


def test_a_stale_advertisement_is_ignored_and_replaced(vault: Path, serve_at: Served) -> None:
    indexed(vault)
    first = serve_at(vault)
    os.kill(first["pid"], signal.SIGKILL)
    time.sleep(0.2)
    assert (vault / ".vaultmem" / "server.json").exists()  # left behind by the killed server
    started = time.monotonic()
    done = vm(vault, "search", "redis", "--json")
    assert done.returncode == 0 and b"Redis for caching" in done.stdout
    assert time.monotonic() - started < 10
    assert forwarded(vault) == []
    status = vm(vault, "serve", "status")
    assert (status.returncode, status.stdout) == (1, b"not running\n")
    second = serve_at(vault)
    assert second["pid"] != first["pid"]
    assert json.loads((vault / ".vaultmem" / "server.json").read_text())["pid"] == second["pid"]
    assert vm(vault, "search", "redis", "--json").stdout == done.stdout
    assert len(forwarded(vault)) == 1


@pytest.mark.parametrize(
    ("argv", "word"),
    [
        (["search", "x"], "search"),
        (["--vault", "v", "query", "x"], "query"),
        (["-Vv", "--cache-dir=/c", "vsearch", "x"], "vsearch"),
        (["hook", "prompt"], "hook"),
        (["hook", "session-start"], None),
        (["remember", "x"], None),
        (["--version"], None),
        (["--vault"], None),
        ([], None),
    ],
)
def test_only_read_commands_are_forwarded(argv: list[str], word: str | None) -> None:
    found = command_of(argv)
    assert (found[0] if found else None) == word


def test_a_warm_vault_keeps_its_vector_store_open(
    embedded_example: Path, tmp_path: Path, vectors_on: None
) -> None:
    """Opening the store writes to its database; that is no change by another process."""
    from datetime import UTC, datetime

    from vaultmem import api
    from vaultmem.config import build
    from vaultmem.model import SearchRequest

    vault = tmp_path / "v"
    copy_indexed(embedded_example, vault)
    warm = api.OpenVault(build(vault, {}), warm=True)
    embedder = warm.embedder(required=True)
    assert embedder is not None
    first = warm.vectors(embedder)
    api.search(warm, SearchRequest("redis", mode="semantic"), now=datetime.now(UTC))
    assert warm.vectors(embedder) is first
    warm.close()
