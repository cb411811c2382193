"""`doctor`'s keys check: a user's key under one of vaultmem's names, and keys left behind.

A value outside vaultmem's vocabulary under a bare owned name (``status: reading``,
``type: book``) is the user's: vaultmem ignores it and never writes it
(:mod:`vaultmem.properties`), which this check says, as information. Under a prefix, a
note that still holds vaultmem's values under the bare names was not migrated: a warning
with the `keys migrate` command.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vaultmem.config import Config
from vaultmem.errors import NoteError
from vaultmem.properties import BARE, OWNED_KEYS

if TYPE_CHECKING:
    from vaultmem.doctor.findings import Finding

__all__ = ["key_findings"]

_SHOWN = 5  # notes named in a finding's message


def key_findings(config: Config) -> list[Finding]:
    """The ``keys`` findings: users' keys vaultmem ignores (ok, one line each, up to five
    named), bare keys left behind under a prefix (warn), else one ok line."""
    from vaultmem.doctor.findings import Finding
    from vaultmem.frontmatter.scan import parse_meta
    from vaultmem.vault import walk_notes

    keys = config.keys
    needles = [f"\n{k}:".encode() for k in OWNED_KEYS]
    users: list[str] = []
    left: list[str] = []
    for f in walk_notes(config):
        try:
            raw = (config.vault / f.path).read_bytes()
            if not raw.startswith((b"---", b"\xef\xbb\xbf---")) or not any(
                n in raw for n in needles
            ):
                continue
            meta, _ = parse_meta(raw, f.path)
        except (OSError, NoteError):
            continue  # the index check reports notes that do not parse
        for key, value in keys.user_keys(meta):
            if keys.prefix and BARE.ours(key, value) and keys.names[key] not in meta:
                left.append(f.path)
                break
            if not keys.prefix or not BARE.ours(key, value):
                users.append(f"{f.path} ({key}: {value})")
    found = [
        Finding("keys", "ok", f"{line}: user's key, vaultmem ignores it") for line in users[:_SHOWN]
    ]
    if len(users) > _SHOWN:
        found.append(Finding("keys", "ok", f"{len(users) - _SHOWN} more users' keys ignored"))
    if left:
        named = ", ".join(left[:_SHOWN]) + (" ..." if len(left) > _SHOWN else "")
        found.append(
            Finding(
                "keys",
                "warn",
                f"{len(left)} notes hold vaultmem's keys under bare names, not "
                f"{keys.prefix}...: {named}",
                fix=f"vaultmem keys migrate --prefix {keys.prefix} --apply",
            )
        )
    if not found:
        where = f"prefixed {keys.prefix}" if keys.prefix else "bare"
        found.append(Finding("keys", "ok", f"vaultmem's keys are {where}; no key collides"))
    return found
