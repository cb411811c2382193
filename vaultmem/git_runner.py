"""The one way vaultmem runs git: no program a vault brings ever runs.

A vault may arrive with its own ``.git/config`` (an archive, a synced folder, a
colleague's disk), and git runs programs that config names: ``core.fsmonitor`` on every
command that reads the index (``ls-files``, ``status``…), clean filters when a porcelain
command refreshes the index, ``gpg.program`` under ``log.showSignature``, a pager, hooks,
credential helpers and transports. Every git call of vaultmem goes through :func:`git`,
which turns each of those off on the command line (``-c`` beats every config file), and
vaultmem calls only plumbing that reads (``rev-parse``, ``ls-files``, ``ls-tree``,
``diff-index``, ``check-attr``, ``log`` without patches, ``config --get``) besides its own
``config --local`` and ``init`` writes.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

__all__ = ["SAFE_CONFIG", "git", "tracked"]

# Set on every call: what a repository's config could otherwise make git run.
SAFE_CONFIG: tuple[str, ...] = (
    "core.fsmonitor=false",  # a hook program, run whenever the index is read
    "core.hooksPath=/dev/null",  # no hook of the repository's
    "core.pager=cat",
    "log.showSignature=false",  # would run gpg.program on every commit `log` lists
    "gpg.program=false",
    "credential.helper=",
    "protocol.allow=never",  # no transport (ext::, core.sshCommand…): vaultmem fetches nothing
)
# The environment git runs in: never prompts, takes no optional lock (a read never
# rewrites the index), no pager.
_ENV = {"GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0", "GIT_PAGER": "cat"}


def command(folder: Path, args: Sequence[str]) -> list[str]:
    """The full git command line for ``args`` run in ``folder`` (paths taken literally)."""
    safe = [part for setting in SAFE_CONFIG for part in ("-c", setting)]
    return ["git", "--no-pager", "--literal-pathspecs", *safe, "-C", str(folder), *args]


def git(
    folder: Path,
    *args: str,
    stdin: bytes | None = None,
    timeout: float | None = None,
) -> subprocess.CompletedProcess[bytes] | None:
    """Run ``git ARGS`` in ``folder`` as :data:`SAFE_CONFIG` says; None when git cannot
    be started (not installed) or runs past ``timeout`` seconds.

    Example:
        >>> git(Path("."), "rev-parse", "--show-toplevel").returncode  # doctest: +SKIP
        0
    """
    try:
        return subprocess.run(
            command(folder, args),
            input=stdin,
            capture_output=True,
            timeout=timeout,
            env={**os.environ, **_ENV},
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None


def tracked(folder: Path) -> list[str]:
    """The files under ``folder`` that its git repository tracks ([] when it is in none,
    or git is missing)."""
    if not folder.is_dir():
        return []
    done = git(folder, "ls-files", "-z", "--", ".", timeout=30)
    if done is None or done.returncode != 0:
        return []
    return [name.decode("utf-8", "surrogateescape") for name in done.stdout.split(b"\0") if name]
