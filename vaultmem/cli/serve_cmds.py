"""`serve`, `serve stop`, `serve status`, `serve token`: the long-lived server
(:mod:`vaultmem.servers.serve`) and its token (:mod:`vaultmem.servers.auth`)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import typer

from vaultmem.cli import app, load_config
from vaultmem.cli.options import HOST, NO_AUTH, TOKEN

STOP_TIMEOUT_S = 15.0
START_TIMEOUT_S = 60.0
# A server whose every forwarded answer waits this many seconds (tests kill it mid-request).
DELAY_ENV = "VAULTMEM_TEST_FORWARD_DELAY"

JSON_OUT = typer.Option(False, "--json", help="One JSON object.")

serve_app = typer.Typer(
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.add_typer(serve_app, name="serve")


@serve_app.callback(invoke_without_command=True)
def serve(
    ctx: typer.Context,
    host: str = HOST,
    port: int = typer.Option(
        8765, "--port", min=0, max=65535, metavar="N", help="Port to bind (0: any free one)."
    ),
    token: str = TOKEN,
    no_auth: bool = NO_AUTH,
    watch: bool = typer.Option(False, "--watch", help="Index changed notes as they are saved."),
    background: bool = typer.Option(
        False, "--background", help="Start detached, print its URL and pid once it answers."
    ),
    json_out: bool = typer.Option(False, "--json", help="With --background: one JSON object."),
    idle_timeout: str = typer.Option(
        "never",
        "--idle-timeout",
        metavar="DURATION",
        help="Stop after this long without a request (2h, 30m; never: keep serving).",
    ),
) -> None:
    """Keep the vault warm in one process: REST API, MCP over HTTP, and the CLI's searches.

    Opens the vault once (keyword index, vector store, embedding model) and serves the
    REST API on http://HOST:PORT (OpenAPI docs at /docs) with the MCP streamable-HTTP
    endpoint at /mcp. While it runs, `search`, `vsearch`, `query`, `surface` and `hook
    prompt` on this vault are answered by it through a Unix socket in the cache (same
    output and exit code, without the start-up cost); set VAULTMEM_NO_SERVER=1 to run
    them in process anyway. Index changes made by other processes are picked up on the
    next request; --watch also indexes notes as they are saved. Binds 127.0.0.1 unless
    --host says otherwise. Every REST and MCP request but /v1/health carries
    "Authorization: Bearer TOKEN", on loopback too (another user of the machine can
    reach 127.0.0.1): the vault's own token, made on first use in <cache>/server.token
    (0600; `vaultmem serve token` prints it), unless --token names one; --no-auth serves
    without, on loopback only. The CLI's socket needs no token: only this user can
    connect to it. One server per vault; Ctrl-C or SIGTERM stops it (exit 0), and so
    does removing its cache, and --idle-timeout after that long without a request (the
    SessionStart hook starts one with 2h). Its log is <cache>/server.log with --background.

    Example:
        vaultmem --vault ~/notes serve --background --watch
        curl -H "Authorization: Bearer $(vaultmem serve token)" http://127.0.0.1:8765/v1/status
    """
    if ctx.invoked_subcommand is not None:
        return
    from vaultmem.servers.auth import server_auth
    from vaultmem.servers.rest import check_bind
    from vaultmem.servers.serve import ServeOptions

    config = load_config(ctx)
    auth = server_auth(config.cache_dir, given=token, no_auth=no_auth)
    check_bind(host, auth.token)
    delay = float(os.environ.get(DELAY_ENV) or 0)
    options = ServeOptions(
        host=host,
        port=port,
        token=auth.token,
        auth=auth.source,
        watch=watch,
        forward_delay=delay,
        idle_timeout=_seconds(idle_timeout),
    )
    if background:
        _start_background(ctx, config, options, json_out)
    else:
        _serve_here(ctx, config, options)


def _seconds(duration: str) -> float | None:
    """``--idle-timeout`` in seconds (None: never); a bad value is a usage error."""
    from vaultmem.scores import parse_half_life

    try:
        found = parse_half_life(duration)
    except ValueError:
        raise typer.BadParameter(
            f"{duration!r}: a duration such as 2h or 30m, or never", param_hint="--idle-timeout"
        ) from None
    return None if found is None else found.total_seconds()


def _serve_here(ctx: typer.Context, config: Any, options: Any) -> None:
    from vaultmem.servers.serve import quiet_loggers, serve

    err = sys.stderr  # the real one: forwarded commands swap sys.stderr while they run
    quiet_loggers(err)

    def log(line: str) -> None:
        stamp = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
        err.write(f"{stamp} {line}\n")
        err.flush()

    def ready(found: Any) -> None:
        from vaultmem.servers.auth import describe

        where = f", socket {found.socket}" if found.socket else ", no CLI socket"
        log(f"serving {found.vault} at {found.url} (pid {found.pid}{where})")
        log(f"clients authenticate with {describe(found.auth)}")

    from vaultmem.cli.vaults_cmds import named_for_mcp

    serve(config, options, log=log, on_ready=ready, named=named_for_mcp(ctx))
    log("stopped")


def _start_background(ctx: typer.Context, config: Any, options: Any, json_out: bool) -> None:
    """Start `serve` detached (own session, log in the cache) and wait until it answers."""
    from vaultmem.cli import root_args
    from vaultmem.servers.serve import running, server_running, start_detached

    if running(config.cache_dir) is not None:
        raise server_running(config.cache_dir)
    args = [sys.executable, "-m", "vaultmem", *root_args(ctx, config), "serve"]
    args += ["--host", options.host, "--port", str(options.port)]
    args += ["--watch"] if options.watch else []
    args += ["--no-auth"] if options.auth == "none" else []
    if options.idle_timeout is not None:
        args += ["--idle-timeout", f"{options.idle_timeout / 60:g}m"]
    env = dict(os.environ)
    if options.auth == "given":
        env["VAULTMEM_SERVE_TOKEN"] = options.token  # not in argv: `ps` shows argv
    child, log_path = start_detached(args, config, env)
    found = _wait_started(config.cache_dir, child, log_path)
    if json_out:
        typer.echo(json.dumps(found.as_json()))
    else:
        from vaultmem.servers.auth import describe

        typer.echo(f"serving {found.vault} at {found.url} (pid {found.pid}; log: {log_path})")
        typer.echo(f"clients authenticate with {describe(found.auth)}")


def _wait_started(cache_dir: Path, child: subprocess.Popen[bytes], log_path: Path) -> Any:
    from vaultmem.errors import VaultmemError
    from vaultmem.servers.serve import running

    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        found = running(cache_dir)
        if found is not None and found.pid == child.pid:
            return found
        if child.poll() is not None:
            raise VaultmemError(f"the server exited ({child.returncode}): {_last_line(log_path)}")
        time.sleep(0.05)
    raise VaultmemError(f"the server did not answer in {START_TIMEOUT_S:g} s (see {log_path})")


def _last_line(path: Path) -> str:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    except OSError:
        return f"see {path}"
    return lines[-1].removeprefix("vaultmem: error: ") if lines else f"see {path}"


@serve_app.command()
def stop(ctx: typer.Context, json_out: bool = JSON_OUT) -> None:
    """Stop the vault's server (SIGTERM) and wait until it has exited.

    Prints "stopped pid N", or "not running" (exit 0 either way); exit 1 when it did not
    exit within 15 seconds. An advertisement the server cannot prove is its own (another
    user's file, a pid that does not hold the lock) is never acted on: one warning.

    Example:
        vaultmem --vault ~/notes serve stop
    """
    from vaultmem.errors import VaultmemError
    from vaultmem.servers.serve import serving
    from vaultmem.vault import pid_alive

    config = load_config(ctx)
    found = _advertised(config.cache_dir)
    if found is None:
        _say(json_out, {"running": False, "stopped": None}, "not running")
        return
    os.kill(found.pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT_S
    # Its lock is released once it has cleaned up; then it exits (a zombie counts as exited).
    while serving(config.cache_dir) or pid_alive(found.pid):
        if time.monotonic() > deadline:
            raise VaultmemError(f"server pid {found.pid} did not stop in {STOP_TIMEOUT_S:g} s")
        time.sleep(0.05)
    _say(json_out, {"running": False, "stopped": found.pid}, f"stopped pid {found.pid}")


@serve_app.command()
def status(ctx: typer.Context, json_out: bool = JSON_OUT) -> None:
    """Say whether a server runs for the vault: its URL, pid, socket, start time, and how
    clients authenticate.

    Exit 0 when one runs, 1 when none does.

    Example:
        vaultmem --vault ~/notes serve status --json
    """
    from vaultmem.servers.auth import describe

    config = load_config(ctx)
    found = _advertised(config.cache_dir)
    if found is None:
        _say(json_out, {"running": False}, "not running")
        raise typer.Exit(1)
    where = f", socket {found.socket}" if found.socket else ""
    text = f"running: {found.url} (pid {found.pid}{where}, since {found.started})"
    text += f"\nclients authenticate with {describe(found.auth)}"
    _say(json_out, {"running": True, **found.as_json()}, text)


@serve_app.command("token")
def show_token(ctx: typer.Context) -> None:
    """Print the vault's server token (made now when there is none yet), for curl or an
    MCP client's Authorization header.

    The token lives in <cache>/server.token (0600); it is refused when another user owns
    it or may read it. A server started with --token or VAULTMEM_SERVE_TOKEN uses that
    one instead (a warning says so).

    Example:
        curl -H "Authorization: Bearer $(vaultmem serve token)" http://127.0.0.1:8765/v1/status
    """
    from vaultmem.servers.auth import describe, vault_token
    from vaultmem.servers.serve import running

    config = load_config(ctx)
    typer.echo(vault_token(config.cache_dir))
    found = running(config.cache_dir)
    if found is not None and found.auth != "vault":
        typer.echo(f"vaultmem: warning: the running server uses {describe(found.auth)}", err=True)


def _advertised(cache_dir: Path) -> Any:
    """The running server, or None; one warning when an advertisement is ignored."""
    from vaultmem.client import ADVERTISEMENT, shown
    from vaultmem.servers.serve import advertised

    found, problem = advertised(cache_dir)
    if problem:
        where = shown(str(cache_dir / ADVERTISEMENT))
        typer.echo(
            f"vaultmem: warning: ignoring the server advertised in {where}: {problem}", err=True
        )
    return found


def _say(json_out: bool, data: dict[str, object], text: str) -> None:
    typer.echo(json.dumps(data) if json_out else text)
