"""`vaultmem serve`'s process life: start (foreground and --background), advertise,
refuse what it must, `serve status`, `serve stop`, clean exit on SIGTERM."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests import test_warm
from tests.test_warm import Served, indexed, vm

pytestmark = pytest.mark.slow  # real `serve` processes started and stopped

serve_at = test_warm.serve_at  # the fixture

ADVERT = Path(".vaultmem") / "server.json"


def test_status_and_stop(vault: Path, serve_at: Served) -> None:
    indexed(vault)
    info = serve_at(vault)
    status = vm(vault, "serve", "status", "--json")
    assert status.returncode == 0
    assert json.loads(status.stdout) == {"running": True, **info}
    assert (vault / ADVERT).stat().st_mode & 0o077 == 0  # the file and the socket are 0600
    assert Path(info["socket"]).stat().st_mode & 0o077 == 0
    assert httpx.get(info["url"] + "/v1/health", timeout=10).json() == {"status": "ok"}
    hello = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    accept = {"Accept": "application/json, text/event-stream"}
    refused = httpx.post(info["url"] + "/mcp", json=hello, headers=accept, timeout=10)
    assert refused.status_code == 401  # loopback too: the vault's token
    assert info["auth"] == "vault"
    token = vm(vault, "serve", "token").stdout.decode().strip()
    auth = {**accept, "Authorization": f"Bearer {token}"}
    mcp = httpx.post(info["url"] + "/mcp", json=hello, headers=auth, timeout=10)
    assert mcp.status_code == 200 and '"instructions"' in mcp.text
    text = vm(vault, "serve", "status").stdout.decode()
    assert text.endswith(
        "clients authenticate with the vault's token (`vaultmem serve token` prints it)\n"
    )
    stopped = vm(vault, "serve", "stop")
    assert (stopped.returncode, stopped.stdout) == (0, f"stopped pid {info['pid']}\n".encode())
    assert not (vault / ADVERT).exists() and not Path(info["socket"]).exists()
    after = vm(vault, "serve", "status")
    assert (after.returncode, after.stdout) == (1, b"not running\n")
    again = vm(vault, "serve", "stop", "--json")
    assert json.loads(again.stdout) == {"running": False, "stopped": None}


def test_one_server_per_vault(vault: Path, serve_at: Served) -> None:
    info = serve_at(vault)
    for args in (("serve", "--port", "0"), ("serve", "--background", "--port", "0")):
        second = vm(vault, *args)
        assert second.returncode == 1
        line = second.stderr.decode()
        assert line.startswith("vaultmem: error: a server already runs for ")
        assert f"pid {info['pid']}" in line and line.count("\n") == 1
    assert json.loads((vault / ADVERT).read_text())["pid"] == info["pid"]


@pytest.mark.parametrize("background", [False, True])
def test_refuses_a_public_address_without_a_token(vault: Path, background: bool) -> None:
    args = ["serve", "--no-auth", "--host", "0.0.0.0", "--port", "0"]
    refused = vm(vault, *args, *(["--background"] if background else []))
    assert refused.returncode == 2  # a usage error
    assert refused.stderr.decode() == (
        "vaultmem: error: refusing to bind 0.0.0.0 without a token: "
        "--no-auth is for loopback only\n"
    )
    assert not (vault / ADVERT).exists()


def test_a_server_on_another_loopback_address_answers_its_own_url(
    vault: Path, serve_at: Served
) -> None:
    indexed(vault)
    done = vm(vault, "serve", "--background", "--host", "127.0.0.2", "--port", "0", "--json")
    assert done.returncode == 0, done.stderr.decode()
    info = json.loads(done.stdout)
    try:
        assert info["url"].startswith("http://127.0.0.2:")
        assert httpx.get(info["url"] + "/v1/health", timeout=10).json() == {"status": "ok"}
        token = vm(vault, "serve", "token").stdout.decode().strip()
        status = httpx.get(
            info["url"] + "/v1/status", headers={"Authorization": f"Bearer {token}"}, timeout=30
        )
        assert status.status_code == 200, status.text
    finally:
        assert vm(vault, "serve", "stop").returncode == 0


def _gone(pid: int, within: float) -> bool:
    """Whether process ``pid`` exits within ``within`` seconds (a zombie nobody has
    reaped yet counts as exited)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.05)
    return False


def test_a_server_whose_cache_is_removed_exits_and_the_next_one_is_the_only_one(
    vault: Path, serve_at: Served
) -> None:
    indexed(vault)
    first = serve_at(vault)
    shutil.rmtree(vault / ".vaultmem")
    assert _gone(first["pid"], 5), "the orphaned server kept running"
    indexed(vault)
    status = vm(vault, "serve", "status")
    assert (status.returncode, status.stdout) == (1, b"not running\n")
    second = serve_at(vault)
    assert b"Redis" in vm(vault, "search", "redis").stdout
    stopped = vm(vault, "serve", "stop")
    assert stopped.stdout == f"stopped pid {second['pid']}\n".encode()
    from vaultmem.servers.serve import server_processes

    assert server_processes(vault, vault / ".vaultmem") == []


def test_a_server_whose_advertisement_is_replaced_stops_with_one_line(
    vault: Path, tmp_path: Path
) -> None:
    indexed(vault)
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        server = subprocess.Popen(
            [sys.executable, "-m", "vaultmem", "--vault", str(vault), "serve", "--port", "0"],
            stdout=out,
            stderr=out,
        )
    try:
        deadline = time.monotonic() + 60
        while not (vault / ADVERT).exists():
            assert server.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
        copy = tmp_path / "server.json"
        copy.write_bytes((vault / ADVERT).read_bytes())
        os.replace(copy, vault / ADVERT)  # same words, another file: not this server's
        assert server.wait(timeout=10) == 0
    finally:
        if server.poll() is None:
            server.kill()
    lines = [line.split(" ", 1)[1] for line in log.read_text().splitlines()]
    assert lines[-2] == (
        f"stopping: {vault / ADVERT} was removed or replaced; nobody can find this server any more"
    )
    assert lines[-1] == "stopped"


def test_foreground_server_exits_cleanly_on_sigterm(vault: Path) -> None:
    indexed(vault)
    server = subprocess.Popen(
        [sys.executable, "-m", "vaultmem", "--vault", str(vault), "serve", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while not (vault / ADVERT).exists():
            assert server.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        info = json.loads((vault / ADVERT).read_text())
        assert info["pid"] == server.pid
        assert b"Redis" in vm(vault, "search", "redis").stdout
        server.send_signal(signal.SIGTERM)
        out, err = server.communicate(timeout=30)
    finally:
        if server.poll() is None:
            server.kill()
    assert server.returncode == 0, err.decode()
    assert out == b""
    lines = [line.split(" ", 1)[1] for line in err.decode().splitlines()]
    assert lines[0].startswith(f"serving {vault} at {info['url']} (pid {server.pid}, socket ")
    assert (
        lines[1] == "clients authenticate with the vault's token (`vaultmem serve token` prints it)"
    )
    assert lines[2].startswith("forwarded search: exit 0 in ")
    assert lines[-1] == "stopped"
    assert not (vault / ADVERT).exists() and not Path(info["socket"]).exists()


def test_a_cache_path_too_long_for_a_socket_gets_a_private_one(
    vault: Path, tmp_path: Path, serve_at: Served
) -> None:
    cache = tmp_path / ("c" * 60) / ("d" * 60)
    env = {**os.environ, "VAULTMEM_CACHE_DIR": str(cache)}
    assert vm(vault, "index", env=env).returncode == 0
    info = serve_at(vault, env=env)
    socket = Path(info["socket"])
    assert socket.parent.name == f"vaultmem-{os.getuid()}"
    assert socket.parent.stat().st_mode & 0o777 == 0o700
    found = vm(vault, "search", "redis", env=env)
    assert b"Redis" in found.stdout
    log = (cache / "server.log").read_text()
    assert "forwarded search: exit 0" in log
    assert vm(vault, "serve", "stop", env=env).returncode == 0
    assert not socket.exists()


def test_a_cache_others_may_write_to_is_refused_until_it_is_private(
    vault: Path, serve_at: Served
) -> None:
    # Issue 27: a cache the group may write to (umask 002) could hold their files; it is
    # used by no command, the server included, until it is private again.
    indexed(vault)
    cache = vault / ".vaultmem"
    cache.chmod(0o775)
    for args in (["serve", "--background", "--port", "0"], ["search", "redis"]):
        done = vm(vault, *args)
        assert done.returncode == 1, args
        assert f"other users may write to it (chmod 700 {cache})".encode() in done.stderr
    cache.chmod(0o700)
    serve_at(vault)
    done = vm(vault, "search", "redis")
    assert b"Redis" in done.stdout and done.stderr == b""
    assert "forwarded search: exit 0" in (cache / "server.log").read_text()


def test_watch_indexes_saved_notes(vault: Path) -> None:
    indexed(vault)
    done = vm(vault, "serve", "--background", "--port", "0", "--watch", "--json")
    assert done.returncode == 0, done.stderr.decode()
    pid = json.loads(done.stdout)["pid"]
    try:
        (vault / "Zanzibar trip.md").write_text("# Zanzibar trip\n\nSpice farms.\n")
        deadline = time.monotonic() + 30
        while b"Zanzibar trip.md" not in vm(vault, "search", "zanzibar", "--json").stdout:
            assert time.monotonic() < deadline, (vault / ".vaultmem" / "server.log").read_text()
            time.sleep(0.2)
        # The batch's summary is logged once the index it committed is live: a search
        # may see the note a moment before the line is written.
        log = vault / ".vaultmem" / "server.log"
        while "indexed 1 changed" not in log.read_text():
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
    finally:
        assert vm(vault, "serve", "stop").stdout == f"stopped pid {pid}\n".encode()
