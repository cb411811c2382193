"""Warm by default: the SessionStart hook starts `serve` for the vault (once), every later
prompt hook is answered by it, and a server nobody asks stops on its own."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.test_hooks import claude_output, payload, run_hook
from tests.test_warm import forwarded, indexed, vm

pytestmark = pytest.mark.slow  # hooks through a real `serve`

WAIT_S = 60.0


@pytest.fixture
def starting(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Path]]:
    """Hooks that start servers; every vault's server is killed after the test."""
    monkeypatch.setenv("VAULTMEM_HOOKS_START_SERVER", "1")
    vaults: list[Path] = []
    yield vaults
    for vault in vaults:
        info = _advertised(vault)
        if info:
            with contextlib.suppress(ProcessLookupError):
                os.kill(info["pid"], signal.SIGKILL)


def _advertised(vault: Path) -> dict | None:
    done = vm(vault, "serve", "status", "--json")
    data = json.loads(done.stdout) if done.stdout.strip() else {}
    return data if data.get("running") else None


def _wait(vault: Path) -> dict:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        found = _advertised(vault)
        if found:
            return found
        time.sleep(0.2)
    raise AssertionError("no server came up: " + _jobs(vault))


def _jobs(vault: Path) -> str:
    log = vault / ".vaultmem" / "hooks-jobs.log"
    return log.read_text() if log.exists() else "(no job log)"


def test_session_start_starts_one_server_and_prompts_use_it(
    vault: Path, starting: list[Path]
) -> None:
    indexed(vault)
    starting.append(vault)
    start = payload("session_start", cwd=vault / "projects")
    out = claude_output(run_hook("session-start", start))
    assert out is not None and "Pinned" in out["hookSpecificOutput"]["additionalContext"]
    info = _wait(vault)
    assert info["url"].startswith("http://127.0.0.1:") and not info["url"].endswith(":8765")
    # A second session finds it running and starts none.
    claude_output(run_hook("session-start", start))
    time.sleep(1.0)
    assert _advertised(vault)["pid"] == info["pid"]
    hook_log = (vault / ".vaultmem" / "hooks.log").read_text()
    assert hook_log.count("started vaultmem serve") == 1, hook_log
    # The next prompt hook (as `hooks install` writes it: the vault named) is answered by it.
    prompt = payload("user_prompt_submit", cwd=vault, prompt="how do we pool connections?")
    before = len(forwarded(vault))
    claude_output(run_hook("prompt", prompt, "--vault", str(vault)))
    assert len(forwarded(vault)) == before + 1


def test_the_setting_turns_it_off(
    vault: Path, starting: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    indexed(vault)
    starting.append(vault)
    (vault / ".vaultmem.toml").write_text("[hooks]\nstart_server = false\n", encoding="utf-8")
    monkeypatch.delenv("VAULTMEM_HOOKS_START_SERVER")
    claude_output(run_hook("session-start", payload("session_start", cwd=vault)))
    time.sleep(2.0)
    assert _advertised(vault) is None
    log = vault / ".vaultmem" / "hooks.log"
    assert not log.exists() or "started vaultmem serve" not in log.read_text()


def test_an_idle_server_stops_and_a_used_one_does_not(vault: Path) -> None:
    indexed(vault)
    done = vm(vault, "serve", "--background", "--port", "0", "--idle-timeout", "0.05m", "--json")
    assert done.returncode == 0, done.stderr
    pid = json.loads(done.stdout)["pid"]
    try:
        # Kept busy past its 3 s timeout, it keeps serving.
        for _ in range(8):
            assert b"Redis" in vm(vault, "search", "redis").stdout
            time.sleep(0.5)
        assert _advertised(vault) is not None
        deadline = time.monotonic() + 20
        while _advertised(vault) is not None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _advertised(vault) is None, "an idle server kept running"
        log = (vault / ".vaultmem" / "server.log").read_text()
        assert "stopping: no request for 3 s (--idle-timeout)" in log
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def test_a_bad_idle_timeout_is_a_usage_error(vault: Path) -> None:
    done = vm(vault, "serve", "--idle-timeout", "soon")
    assert done.returncode == 2
    assert b"'soon': a duration such as 2h or 30m, or never" in done.stderr
