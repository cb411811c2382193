"""The console entry point.

:func:`main` first defers SIGINT and SIGTERM (:mod:`vaultmem.interrupts`) until a command
runs, so a signal during the imports and argument parsing ends in one line, not a
traceback. What is left is the interpreter's own start-up before :func:`main` runs (about
20 ms, these modules' few standard-library imports included), where Python's default
handlers apply; nothing of vaultmem beyond :mod:`vaultmem.interrupts` is imported before
:func:`main` defers them.

Before it imports the CLI, :func:`main` offers the command to the vault's running server
(:mod:`vaultmem.client`, standard library only): with `vaultmem serve` up, `search`,
`vsearch`, `query`, `surface` and `hook prompt` cost a socket round trip instead of the
imports.
"""

from __future__ import annotations

import sys

from vaultmem.interrupts import defer_signals, interruptible


def main() -> None:
    """Run the `vaultmem` command line: through the vault's server when one runs and the
    command is one it answers (:mod:`vaultmem.client`), else in this process."""
    defer_signals()
    code = _forwarded()
    if code is not None:
        sys.exit(code)
    from vaultmem.cli import run

    run()


def _forwarded() -> int | None:
    """The exit code of the command as the server ran it; None: run it here.

    Waiting for the server may be interrupted like a command: one line, exit 130 or 143
    (the server finishes a read-only request on its own and drops the answer).
    """
    from vaultmem.client import forward
    from vaultmem.errors import Terminated

    try:
        with interruptible():
            return forward(sys.argv[1:])
    except KeyboardInterrupt as exc:
        sys.stderr.write("vaultmem: interrupted\n")
        return 143 if isinstance(exc, Terminated) else 130
