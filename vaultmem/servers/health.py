"""What `doctor` finds in a server's files, and its repair: the servers judge their own.

A running `serve` holds its lock file for its whole life and advertises itself in
``<cache>/server.json``; clients trust only an advertisement that passes their checks
(:mod:`vaultmem.client`). Doctor sits below the front ends, so the CLI hands it these
checks (:class:`vaultmem.doctor.findings.ServerChecks`).
"""

from __future__ import annotations

import json
from pathlib import Path

from vaultmem.client import ADVERTISEMENT
from vaultmem.config import Config
from vaultmem.doctor.findings import Finding, ServerChecks
from vaultmem.servers.auth import token_path, token_problem
from vaultmem.servers.forward import is_socket_of
from vaultmem.servers.serve import LOCK_NAME, advertised, server_processes
from vaultmem.vault import lock_state


def server_findings(config: Config) -> list[Finding]:
    """A running `serve` holds its lock file for its whole life (see
    :mod:`vaultmem.servers.serve`): an advertisement without a holder is a dead server's,
    one that fails the thin client's checks is ignored by every client. Then the token,
    and every vaultmem server process running for the vault, advertised or not."""
    cache_dir = config.cache_dir
    path = cache_dir / ADVERTISEMENT
    found, problem = advertised(cache_dir)
    if found is not None:
        where = found.url or found.socket or f"port {found.port}"
        result = [Finding("server", "ok", f"server running (pid {found.pid}, {where})")]
        if found.auth == "none":
            message = "the server requires no token (--no-auth): any local user can use it"
            result.append(Finding("server", "warn", message, fix="restart it without --no-auth"))
    elif problem:
        message = f"{path} is ignored by every client: {problem}"
        result = [Finding("server", "problem", message, repair="server")]
    elif path.exists() and not lock_state(cache_dir, LOCK_NAME).held:
        message = f"{path} advertises a server that is not running: clients try it in vain"
        result = [Finding("server", "problem", message, repair="server")]
    else:
        result = [Finding("server", "ok", "no server running")]
    result += _token(cache_dir)
    for process in server_processes(config.vault, cache_dir):
        if found is not None and process.pid == found.pid:
            continue
        if process.command == "serve":
            message = (
                f"pid {process.pid}: `vaultmem serve` runs for this vault but is not its "
                "advertised server (its cache was removed or replaced under it)"
            )
            result.append(Finding("server", "problem", message, fix=f"kill {process.pid}"))
        else:
            message = f"pid {process.pid}: `vaultmem {process.command}` serves this vault"
            result.append(Finding("server", "ok", message))
    return result


def _token(cache_dir: Path) -> list[Finding]:
    path = token_path(cache_dir)
    try:
        info = path.lstat()
    except FileNotFoundError:
        return [Finding("server", "ok", "no server token yet (the first `serve` makes one)")]
    problem = token_problem(path, info)
    if problem:
        message = f"{path} cannot be used as the server token: {problem}"
        return [Finding("server", "problem", message, fix=f"rm {path} (a new one is made)")]
    return [Finding("server", "ok", f"server token in {path} (this user's alone)")]


def repair_server(config: Config) -> str:
    """Remove the advertisement (and the socket) a server that is not running left."""
    path = config.cache_dir / ADVERTISEMENT
    try:
        socket = json.loads(path.read_bytes()).get("socket")
    except (OSError, ValueError, AttributeError):
        socket = None
    # Only the socket this cache's server would have made: the file names any path.
    mine = isinstance(socket, str) and is_socket_of(config.cache_dir, Path(socket))
    if mine and Path(str(socket)).is_socket():
        Path(str(socket)).unlink(missing_ok=True)  # its server is gone: nobody listens on it
    path.unlink(missing_ok=True)
    return f"removed {path}, left by a server that is not running"


CHECKS = ServerChecks(findings=server_findings, repair=repair_server)
