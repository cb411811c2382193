"""`doctor`'s keys check: a user's key under one of vaultmem's names, and keys left behind.

A value outside vaultmem's vocabulary under a bare owned name (``status: reading``,
``type: book``) is the user's: vaultmem ignores it and never writes it
(:mod:`vaultmem.properties`), which this check says, as information. Under a prefix, a
note that still holds vaultmem's values under the bare names was not migrated: a warning
with the `keys migrate` command. Notes that carry vaultmem's keys under a prefix the
configuration does not name (``vm_use_count`` in a vault whose ``.vaultmem.toml`` says
nothing of ``vm_``: a migration whose prefix was never recorded, or a config that did
not travel) hold state vaultmem cannot read: a warning naming the prefix.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from vaultmem.config import Config, key_scheme
from vaultmem.errors import ConfigError, NoteError
from vaultmem.properties import BARE, OWNED_KEYS

if TYPE_CHECKING:
    from vaultmem.doctor.findings import Finding

__all__ = ["key_findings"]

_SHOWN = 5  # notes named in a finding's message

# Owned keys whose name alone says vaultmem wrote them: one of these under a prefix is
# enough to tell a prefix (``doc_type``, ``my_created`` may well be a person's own keys).
_GENERIC = frozenset({"type", "status", "created", "related", "pinned", "confidence"})
_LONGEST_FIRST = sorted(OWNED_KEYS, key=len, reverse=True)


def _prefixed(meta: Mapping[Any, Any], configured: str) -> dict[str, set[str]]:
    """The prefixes other than ``configured`` under which ``meta`` holds vaultmem's values:
    prefix → the owned keys found under it."""
    from vaultmem.frontmatter.owned import users_value

    found: dict[str, set[str]] = {}
    for name, value in meta.items():
        if not isinstance(name, str):
            continue
        key = next((k for k in _LONGEST_FIRST if name.endswith(k) and name != k), None)
        if key is None:
            continue
        prefix = name[: -len(key)]
        if prefix == configured or not _valid(prefix) or users_value(key, value):
            continue
        found.setdefault(prefix, set()).add(key)
    return found


def _valid(prefix: str) -> bool:
    try:
        key_scheme({"prefix": prefix})
    except ConfigError:
        return False
    return True


def key_findings(config: Config) -> list[Finding]:
    """The ``keys`` findings: users' keys vaultmem ignores (ok, one line each, up to five
    named), bare keys left behind under a prefix (warn), keys under a prefix the config
    does not name (warn), else one ok line."""
    from vaultmem.doctor.findings import Finding
    from vaultmem.frontmatter.scan import parse_meta
    from vaultmem.vault import walk_notes

    keys = config.keys
    needles = [f"{k}:".encode() for k in OWNED_KEYS]
    users: list[str] = []
    left: list[str] = []
    carried: dict[str, dict[str, set[str]]] = {}  # prefix -> path -> keys
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
        for prefix, owned in _prefixed(meta, keys.prefix).items():
            carried.setdefault(prefix, {})[f.path] = owned
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
                fix=f"vaultmem keys migrate --from '' --prefix {keys.prefix} --apply",
            )
        )
    found += _unnamed(carried, keys.prefix)
    if not found:
        where = f"prefixed {keys.prefix}" if keys.prefix else "bare"
        found.append(Finding("keys", "ok", f"vaultmem's keys are {where}; no key collides"))
    return found


def _unnamed(carried: Mapping[str, Mapping[str, set[str]]], configured: str) -> list[Finding]:
    """A warning per prefix the notes carry and the config does not name."""
    from vaultmem.doctor.findings import Finding

    out = []
    for prefix, notes in sorted(carried.items()):
        owned = set().union(*notes.values())
        if len(owned) < 2 and not owned - _GENERIC:
            continue  # one key a person may well have named so (doc_type, my_created)
        paths = sorted(notes)
        named = ", ".join(paths[:_SHOWN]) + (" ..." if len(paths) > _SHOWN else "")
        config = f'prefix "{configured}"' if configured else "bare keys"
        back = f"--from {prefix} --prefix {configured or chr(39) * 2}"
        out.append(
            Finding(
                "keys",
                "warn",
                f"{len(paths)} notes carry vaultmem's keys under the prefix {prefix!r} "
                f"({', '.join(prefix + k for k in sorted(owned)[:3])}...), but .vaultmem.toml "
                f"names {config}: vaultmem reads none of them: {named}",
                fix=f"vaultmem keys migrate --prefix {prefix} --apply (or, to keep "
                f"{config}: vaultmem keys migrate {back} --apply)",
            )
        )
    return out
