"""The one error hierarchy of vaultmem.

The CLI boundary turns every ``VaultmemError`` into a one-line message and an exit
code (``exit_code``); nothing else in the package prints or exits.
"""

from __future__ import annotations

import errno
import os


class VaultmemError(Exception):
    """Base of every error vaultmem reports to a user as one line."""

    exit_code = 1


class VaultmemWarning(UserWarning):
    """Something a user should know of a command that still succeeded (one line on stderr)."""


class ConfigError(VaultmemError):
    """Configuration or vault discovery failed (bad TOML, unknown vault name, bad value)."""


class NoteError(VaultmemError):
    """A note could not be read or parsed (malformed YAML, bad encoding)."""


class UserKeyError(NoteError):
    """A write would change or delete a user's key that shares a name with one of
    vaultmem's (``status: reading``); the note is left as it is."""


class NoteNotFound(VaultmemError):
    """No note matches a path, title or alias."""


class AmbiguousNote(VaultmemError):
    """Several notes match a name; the message lists the candidates."""


class ConflictError(VaultmemError):
    """A note kept changing on disk while vaultmem was writing it (exit 75, EX_TEMPFAIL:
    the user's bytes are in place; trying again later is the remedy)."""

    exit_code = 75


class LockBusy(VaultmemError):
    """Another process holds the vault's writer lock (exit 75, EX_TEMPFAIL, for cron)."""

    exit_code = 75


class IndexStateError(VaultmemError):
    """The sidecar index is missing, corrupt or of another schema version."""


class EndpointError(VaultmemError):
    """An inference endpoint is unreachable or failed; the message names the URL, never the key."""


class TemplateError(VaultmemError):
    """A jinja2 template (packaged or a vault's override) is missing or does not render."""


class RequestError(VaultmemError):
    """A request a front end passed in is invalid (a bad mode, limit or type): the CLI
    exits 2 as for any usage error, REST answers 422, MCP a tool error."""

    exit_code = 2


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C so `finally` blocks free locks, stop workers, drop temp files.

    Not a VaultmemError: it ends the command as an interruption (exit 143), not an error.
    """


def os_error_line(exc: OSError) -> str:
    """``cannot write PATH: Permission denied``: what failed, where, and why, in one line.

    The one wording of a failed file operation, for every front end (the CLI's backstop,
    MCP's and REST's error answers).
    """
    path = exc.filename2 or exc.filename
    why = exc.strerror or str(exc)
    if path is None:
        return why
    writing = exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOSPC, errno.EDQUOT)
    return f"cannot write {os.fsdecode(path)}: {why}" if writing else f"{os.fsdecode(path)}: {why}"
