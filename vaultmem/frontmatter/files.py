"""A note file's owned keys updated in place (:func:`update_note`): read, computed, edited
by :func:`vaultmem.frontmatter.edit.apply`, and written atomically, a concurrent save kept.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vaultmem.errors import UserKeyError
from vaultmem.frontmatter.edit import KeyLines, ReplacedLines, apply
from vaultmem.frontmatter.scan import parse_meta
from vaultmem.properties import BARE, OWNED_KEYS, KeyScheme, coerce

__all__ = ["WriteResult", "update_note"]

# The owned names: a user's key under one of them is not shown to compute.
_OWNED = frozenset(OWNED_KEYS)


@dataclass(frozen=True)
class WriteResult:
    """What ``update_note`` did: whether it wrote, the owned keys before and after, and how
    many times a concurrent save made it re-apply the updates to the user's bytes."""

    path: Path
    changed: bool
    before: dict[str, Any]
    after: dict[str, Any]
    reapplied: int = 0


def _named(
    meta: Mapping[Any, Any], updates: Mapping[str, object | None], keys: KeyScheme, source: str
) -> dict[str, object | None]:
    """``updates`` (under vaultmem's key names) as :func:`apply` takes them: each value of
    its key's one property type (:func:`vaultmem.properties.coerce`), under the key's name
    in the note. A key holding a user's value (``status: reading``) is refused."""
    out: dict[str, object | None] = {}
    for key, value in updates.items():
        name = keys.names.get(key, key)  # apply names a key vaultmem does not own
        if name in meta and not keys.ours(key, meta[name]):
            raise UserKeyError(
                f"{source}: '{name}: {meta[name]}' is your key, not vaultmem's; left as it is. "
                f'To give vaultmem its own keys, set [keys] prefix = "vm_" in .vaultmem.toml '
                "and run `vaultmem keys migrate --prefix vm_`"
            )
        if isinstance(value, ReplacedLines):
            value = ReplacedLines(keys.names.get(value.key, value.key))
        elif not isinstance(value, KeyLines) and value is not None:
            value = coerce(key, value)
        out[name] = value
    return out


def update_note(
    path: Path,
    compute: Callable[[dict[Any, Any]], Mapping[str, object | None]],
    source: str,
    keys: KeyScheme = BARE,
) -> WriteResult:
    """Read a note, ask ``compute(meta)`` for owned-key updates, and write them back.

    ``compute`` gets a copy of the parsed frontmatter and returns ``{key: value or None}``.
    Both speak vaultmem's key names: under a prefix (``keys``) ``meta`` holds ``status``
    for the note's ``vm_status``; a user's value under an owned name (bare ``status:
    reading``) is not in ``meta``, and an update of it raises ``UserKeyError``. Values
    are written as their key's one property type (:data:`vaultmem.properties.PROPERTY_TYPES`).
    ``before``/``after`` hold the owned keys under vaultmem's names.
    The write is :func:`vaultmem.atomic.rewrite`: a save that lands meanwhile (the user
    in Obsidian) is kept and ``compute`` is called again on it, so the last call is the one
    written; a note that keeps changing raises ``ConflictError`` (exit 75) with the user's
    bytes in place. An unchanged result is not written (the file's mtime stays).
    Malformed YAML raises ``NoteError`` and leaves the file as it was.
    """
    from vaultmem.atomic import rewrite  # its ctypes is for writers only

    path = Path(path)
    owned: dict[bytes, dict[str, Any]] = {}

    def view(meta: Mapping[Any, Any]) -> dict[Any, Any]:
        # Every owned name goes, a user's bare `status` under a prefix too: it is not ours.
        shown = {k: v for k, v in meta.items() if k not in keys.keys_of and k not in _OWNED}
        return shown | keys.owned_view(meta)

    def transform(raw: bytes) -> bytes:
        meta, _parts = parse_meta(raw, source)
        owned[raw] = keys.owned_view(meta)
        updates = compute(copy.deepcopy(view(meta)))
        return apply(raw, _named(meta, updates, keys, source), source, names=keys.keys_of)

    done = rewrite(path, transform, source)
    before = owned[done.before]
    if not done.changed:
        return WriteResult(path, False, before, before, done.reapplied)
    after, _ = parse_meta(done.after, source)
    return WriteResult(path, True, before, keys.owned_view(after), done.reapplied)
