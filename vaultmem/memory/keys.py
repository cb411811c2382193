"""`keys migrate`: move vaultmem's frontmatter keys to other names (``status`` → ``vm_status``).

A plan first (:func:`plan_migration`, reads only): for each note, each owned key written
under its current name (:attr:`vaultmem.config.Config.keys`) that holds vaultmem's value,
moved to its name under the new prefix. A user's value under an owned name (``status:
reading``) is the user's and stays where it is; so does a key whose new name the note
already has. :func:`apply_migration` writes the plan through the one write-back
(:func:`vaultmem.frontmatter.edit.apply`, atomically, under the vault lock), then re-indexes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from vaultmem.config import Config
from vaultmem.errors import NoteError
from vaultmem.frontmatter.edit import apply
from vaultmem.frontmatter.scan import parse_meta
from vaultmem.properties import OWNED_KEYS, KeyScheme

__all__ = ["KeyMove", "apply_migration", "plan_migration", "target_scheme"]


@dataclass(frozen=True)
class KeyMove:
    """One note's keys to rename: ``(old name, new name)`` pairs, in table order."""

    path: str
    renames: tuple[tuple[str, str], ...]

    def as_json(self) -> dict[str, Any]:
        """The ``--json`` shape of one note's moves."""
        return {"path": self.path, "renames": [list(pair) for pair in self.renames]}


def target_scheme(config: Config, prefix: str) -> KeyScheme:
    """The scheme a migration to ``prefix`` ends in (the shared keys stay shared)."""
    return KeyScheme(prefix, config.keys.shared)


def _renames(meta: dict[Any, Any], old: KeyScheme, new: KeyScheme) -> list[tuple[str, str]]:
    out = []
    for key in OWNED_KEYS:
        src, dst = old.names[key], new.names[key]
        if src == dst or src not in meta or dst in meta or not old.ours(key, meta[src]):
            continue
        out.append((src, dst))
    return out


def plan_migration(config: Config, prefix: str) -> tuple[list[KeyMove], list[str]]:
    """The notes whose owned keys move to ``prefix`` names, and one line per note that
    cannot be read (skipped). Reads only.

    Example:
        >>> plan_migration(config, "vm_")[0][0].renames  # doctest: +SKIP
        (('type', 'vm_type'), ('status', 'vm_status'))
    """
    from vaultmem.vault import walk_notes

    new = target_scheme(config, prefix)
    moves, skipped = [], []
    for f in walk_notes(config):
        try:
            meta, _ = parse_meta((config.vault / f.path).read_bytes(), f.path)
        except (OSError, NoteError) as exc:
            skipped.append(f"{f.path}: {exc}")
            continue
        renames = _renames(meta, config.keys, new)
        if renames:
            moves.append(KeyMove(f.path, tuple(renames)))
    return moves, skipped


def apply_migration(config: Config, moves: Sequence[KeyMove], prefix: str) -> list[str]:
    """Write ``moves`` (re-checked on each note as it is now) and re-index the notes
    written, under the new names; the vault paths written."""
    from vaultmem.atomic import rewrite
    from vaultmem.indexer import refresh_paths
    from vaultmem.memory.writeback import locked

    new = target_scheme(config, prefix)
    names = {**config.keys.keys_of, **new.keys_of}
    written = []
    with locked(config, "keys migrate"):
        for move in moves:

            def transform(raw: bytes, path: str = move.path) -> bytes:
                meta, _ = parse_meta(raw, path)
                updates: dict[str, object | None] = {}
                for src, dst in _renames(meta, config.keys, new):
                    updates[dst], updates[src] = meta[src], None
                return apply(raw, updates, path, names=names)

            if rewrite(config.vault / move.path, transform, move.path).changed:
                written.append(move.path)
        if written:
            refresh_paths(dataclasses.replace(config, keys=new), written)
    return written


def record_prefix(config: Config, prefix: str) -> str:
    """Put ``[keys] prefix`` in the vault's ``.vaultmem.toml`` (appended when the file
    has no ``[keys]`` table); what was done, as one line. A ``[keys]`` table that says
    otherwise is the user's to edit: the line says so and nothing is written."""
    import tomllib

    from vaultmem.config import VAULT_CONFIG_NAME

    path = config.vault / VAULT_CONFIG_NAME
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    table = tomllib.loads(text).get("keys")
    if isinstance(table, dict):
        if table.get("prefix", "") == prefix:
            return f"{VAULT_CONFIG_NAME}: [keys] prefix is {prefix!r} already"
        return f'{VAULT_CONFIG_NAME}: set prefix = "{prefix}" in its [keys] table'
    sep = "" if not text or text.endswith("\n") else "\n"
    path.write_text(f'{text}{sep}\n[keys]\nprefix = "{prefix}"\n', encoding="utf-8")
    return f'{VAULT_CONFIG_NAME}: added [keys] prefix = "{prefix}"'
