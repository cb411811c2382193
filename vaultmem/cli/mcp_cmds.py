"""`mcp`: the vault as an MCP server (see :mod:`vaultmem.servers.mcp`).

Over stdio the protocol owns stdout: one stray line (a warning, a print, a library's
banner) breaks the client. So nothing of vaultmem's reaches it: while the server is
built, fd 1 itself points at stderr; while it serves, the SDK's transport keeps the wire
on a private descriptor and points fd 1 at stderr, and ``sys.stdout`` writes through, so
nothing waits in its buffer for fd 1 to be the wire again.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING

import typer

from vaultmem.cli import app, clock, load_config
from vaultmem.cli.options import HOST, NO_AUTH, TOKEN

if TYPE_CHECKING:
    from mcp.server import MCPServer

    from vaultmem.servers.auth import ServerAuth
    from vaultmem.servers.vault_choice import VaultChoice


@app.command()
def mcp(
    ctx: typer.Context,
    http: bool = typer.Option(
        False, "--http", help="Serve streamable HTTP at http://HOST:PORT/mcp instead of stdio."
    ),
    host: str = HOST,
    port: int = typer.Option(
        8766, "--port", min=1, max=65535, metavar="N", help="Port to bind with --http."
    ),
    token: str = TOKEN,
    no_auth: bool = NO_AUTH,
) -> None:
    """Serve the vault to agents over MCP (stdio, or streamable HTTP with --http).

    Tools: search, get, remember, reinforce, flag (pin/forget/snooze and their undo),
    links, status; every note is a resource at vault://PATH. The server keeps the
    keyword index, the vector store and the embedding model open, and notices when
    another process re-indexes. Over stdio nothing but protocol is written to stdout;
    warnings go to stderr. --http binds 127.0.0.1 unless --host says otherwise, and every
    request carries "Authorization: Bearer TOKEN", on loopback too: the vault's own token
    (`vaultmem serve token`) unless --token names one; --no-auth serves without, on
    loopback only. Stops on end of input, Ctrl-C or SIGTERM (exit 0).

    Example:
        vaultmem --vault ~/notes mcp
        claude mcp add vaultmem -- vaultmem --vault ~/notes mcp
        vaultmem --vault ~/notes hooks install --claude --mcp stdio
        vaultmem --vault ~/notes mcp --http --port 8766
    """
    from vaultmem.api import OpenVault
    from vaultmem.inference.http import BREAKERS, SERVER_BREAKER_S

    BREAKERS.window = SERVER_BREAKER_S  # a dead endpoint is tried again a minute later
    config = load_config(ctx)
    auth = None
    if http:
        from vaultmem.servers.auth import server_auth
        from vaultmem.servers.rest import check_bind

        auth = server_auth(config.cache_dir, given=token, no_auth=no_auth)
        check_bind(host, auth.token)
    with _stdout_to_stderr():
        from vaultmem.cli.vaults_cmds import named_for_mcp
        from vaultmem.servers.vault_choice import VaultChoice

        vault = OpenVault(config, warm=True)
        vaults = VaultChoice(vault, *named_for_mcp(ctx))
        server = _build(vaults)
    try:
        if auth is not None:
            _serve_http(server, host, port, auth)
        else:
            _serve_stdio(server)
    except KeyboardInterrupt:  # SIGINT, or SIGTERM (Terminated): the way a server ends
        pass
    finally:
        vaults.close()
        vault.close()


def _build(vaults: VaultChoice) -> MCPServer:
    """The server, and a thread opening the searcher, vectors and model meanwhile (the
    first tool call waits on the vault's lock rather than paying for them itself)."""
    from vaultmem.servers.mcp import make_server

    def warm() -> None:
        for problem in vaults.main.warm_up():
            typer.echo(f"vaultmem: warm-up: {problem}", err=True)

    server = make_server(vaults, clock=clock)  # first: its instructions read the vault
    threading.Thread(target=warm, name="vaultmem-warm", daemon=True).start()
    return server


def _serve_stdio(server: MCPServer) -> None:
    stdout = sys.stdout
    with contextlib.suppress(AttributeError, ValueError):
        stdout.reconfigure(write_through=True, line_buffering=True)  # type: ignore[union-attr]
    server.run("stdio")


def _serve_http(server: MCPServer, host: str, port: int, auth: ServerAuth) -> None:
    import uvicorn

    from vaultmem.servers.auth import describe
    from vaultmem.servers.mcp import http_app
    from vaultmem.servers.rest import MAX_BODY, Guard, default_allowed_hosts

    guarded = Guard(
        http_app(server, host=host),
        token=auth.token,
        allowed_hosts=default_allowed_hosts(host, port),
        max_body=MAX_BODY,
    )
    typer.echo(f"serving MCP on http://{host}:{port}/mcp (Ctrl-C to stop)", err=True)
    typer.echo(f"clients authenticate with {describe(auth.source)}", err=True)
    uvicorn.run(guarded, host=host, port=port, log_level="warning")


@contextlib.contextmanager
def _stdout_to_stderr() -> Iterator[None]:
    """Within: whatever writes to stdout (Python or C, fd 1) writes to stderr."""
    with contextlib.suppress(OSError, ValueError):
        sys.stdout.flush()
    try:
        saved = os.dup(1)
    except OSError:  # no fd 1 at all: nothing to protect
        with contextlib.redirect_stdout(sys.stderr):
            yield
        return
    os.dup2(2, 1)
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)
