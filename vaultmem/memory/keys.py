"""`keys migrate`: move vaultmem's frontmatter keys to other names (``status`` → ``vm_status``).

A plan first (:func:`plan_migration`, reads only): for each note, each owned key written
under its current name (the ``source`` scheme: :attr:`vaultmem.config.Config.keys`
unless `--from` names another) that holds vaultmem's value, moved to its name under the
new prefix. A value under a bare name that is the user's
(:func:`vaultmem.frontmatter.owned.users_value`: ``status: reading``, ``created:
2019``, ``related: ["a chapter"]``) stays where it is, byte for byte; so does a key whose
new name the note already has.

:func:`apply_migration` renames the keys in the note's text: only the key's name changes,
its value, comments and place are the user's bytes as they were, so a migration back
(``--prefix ""``) is the exact inverse. Each note is written atomically under the vault
lock, then re-indexed. :func:`prefix_recorded` is the vault's ``.vaultmem.toml`` with the
new prefix in it, made before any note is written (a prefix that cannot be recorded
stops the migration: notes under names the config does not know are state vaultmem
cannot read), and written after them.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vaultmem.config import VAULT_CONFIG_NAME, Config
from vaultmem.errors import ConfigError, NoteError
from vaultmem.frontmatter.layout import key_layout
from vaultmem.frontmatter.owned import users_value
from vaultmem.frontmatter.render import same_value
from vaultmem.frontmatter.scan import parse_meta
from vaultmem.properties import OWNED_KEYS, KeyScheme

__all__ = [
    "KeyMove",
    "apply_migration",
    "plan_migration",
    "prefix_recorded",
    "renamed",
    "target_scheme",
]


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


def _renames(meta: Mapping[Any, Any], old: KeyScheme, new: KeyScheme) -> list[tuple[str, str]]:
    out = []
    for key in OWNED_KEYS:
        src, dst = old.names[key], new.names[key]
        if src == dst or src not in meta or dst in meta:
            continue
        if old.bare(key) and users_value(key, meta[src]):
            continue  # the user's value under vaultmem's name: theirs, not moved
        out.append((src, dst))
    return out


def plan_migration(
    config: Config, prefix: str, source: KeyScheme | None = None
) -> tuple[list[KeyMove], list[str]]:
    """The notes whose owned keys move from ``source``'s names (default: the config's) to
    ``prefix`` names, and one line per note that cannot be read (skipped). Reads only.

    Example:
        >>> plan_migration(config, "vm_")[0][0].renames  # doctest: +SKIP
        (('type', 'vm_type'), ('status', 'vm_status'))
    """
    from vaultmem.vault import walk_notes

    old = config.keys if source is None else source
    new = target_scheme(config, prefix)
    moves, skipped = [], []
    for f in walk_notes(config):
        try:
            meta, _ = parse_meta((config.vault / f.path).read_bytes(), f.path)
        except (OSError, NoteError) as exc:
            skipped.append(f"{f.path}: {exc}")
            continue
        renames = _renames(meta, old, new)
        if renames:
            moves.append(KeyMove(f.path, tuple(renames)))
    return moves, skipped


def _key_re(name: str) -> re.Pattern[str]:
    """A top-level key line of ``name``: indentation, the name (plain or quoted), the rest."""
    quoted = re.escape(name)
    return re.compile(rf"([ \t]*)({quoted}|\"{quoted}\"|'{quoted}')([ \t]*:)")


def renamed(raw: bytes, renames: Sequence[tuple[str, str]], source: str) -> bytes:
    """``raw`` with the top-level keys ``renames`` names renamed: only each key's name
    changes, every other byte stays. ``NoteError`` when a key is not written as a plain
    ``name:`` line, or the result would not read back as the same values.

    Example:
        >>> renamed(b"---\\nstatus: active  # x\\n---\\n", [("status", "vm_status")], "a.md")
        b'---\\nvm_status: active  # x\\n---\\n'
    """
    if not renames:
        return raw
    moves = dict(renames)
    meta, parts = parse_meta(raw, source)
    assert parts.frontmatter is not None  # a key to rename is in it
    names = {name: name for name in moves}
    layout = key_layout(parts.frontmatter, parts, source, names, comments=False)
    lines = list(layout.lines)
    for extent in layout.extents:
        line = lines[extent.first]
        match = _key_re(extent.key).match(line)
        if match is None:
            raise NoteError(
                f"{source}:{parts.yaml_line + extent.first}: {extent.key} is not written as a "
                "plain 'key: value' line; rename it by hand"
            )
        written = match.group(2).replace(extent.key, moves[extent.key])
        lines[extent.first] = match.group(1) + written + line[match.end(2) :]
    result = parts.with_frontmatter("".join(lines))
    after, _ = parse_meta(result, source)
    wanted = {moves.get(k, k): v for k, v in meta.items()}
    if after.keys() != wanted.keys() or not all(same_value(after[k], wanted[k]) for k in wanted):
        raise NoteError(f"{source}: renaming {', '.join(moves)} would change its values")
    return result


def apply_migration(
    config: Config, moves: Sequence[KeyMove], prefix: str, source: KeyScheme | None = None
) -> list[str]:
    """Rename the keys of ``moves`` (re-checked on each note as it is now) and re-index
    the notes written, under the new names; the vault paths written."""
    from vaultmem.atomic import rewrite
    from vaultmem.indexer import refresh_paths
    from vaultmem.memory.writeback import locked

    old = config.keys if source is None else source
    new = target_scheme(config, prefix)
    written = []
    with locked(config, "keys migrate"):
        for move in moves:

            def transform(raw: bytes, path: str = move.path) -> bytes:
                meta, _ = parse_meta(raw, path)
                return renamed(raw, _renames(meta, old, new), path)

            if rewrite(config.vault / move.path, transform, move.path).changed:
                written.append(move.path)
        if written:
            refresh_paths(dataclasses.replace(config, keys=new), written)
    return written


# --------------------------------------------------------------------------- the config

_HEADER_RE = re.compile(r"[ \t]*\[[ \t]*keys[ \t]*\][ \t]*(?:#.*)?\Z")
_TABLE_RE = re.compile(r"[ \t]*\[")
_PREFIX_RE = re.compile(r"([ \t]*prefix[ \t]*=[ \t]*)(\"[^\"\n]*\"|'[^'\n]*')(.*)\Z", re.S)


def prefix_recorded(vault: Path, prefix: str, inherited: str = "") -> tuple[str | None, str]:
    """The vault's ``.vaultmem.toml`` text with ``[keys] prefix`` set to ``prefix`` (None:
    the file is right as it is), and one line saying what changes.

    The ``prefix`` line of an existing ``[keys]`` table is replaced (or added under its
    header); a file without one gets the table appended. A prefix equal to ``inherited``
    (what the user config says, or bare) needs no line: the one there is removed, and a
    table left empty with it, so a migration there and back gives the file back as it
    was. Every other byte of the file stays. ``ConfigError`` when the file says the
    prefix in a way this edit cannot change (``keys.prefix = ...``, an inline table):
    nothing has been written then.
    """
    import tomllib

    path = vault / VAULT_CONFIG_NAME
    try:
        text = path.read_text(encoding="utf-8") if path.exists() else ""
        before = tomllib.loads(text)
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{VAULT_CONFIG_NAME}: cannot read it ({exc})") from None
    have = before.get("keys", {}).get("prefix") if isinstance(before.get("keys"), dict) else None
    if (have if have is not None else inherited) == prefix:
        return None, f"{VAULT_CONFIG_NAME}: [keys] prefix is {prefix!r} already"
    lines = text.splitlines(keepends=True)
    header = next((i for i, line in enumerate(lines) if _HEADER_RE.match(line.rstrip("\r\n"))), -1)
    line = f'prefix = "{prefix}"\n'
    if header < 0:
        sep = "" if not text or text.endswith("\n") else "\n"
        new = f"{text}{sep}\n[keys]\n{line}" if prefix != inherited else text
        done = f'added [keys] prefix = "{prefix}"'
    else:
        end = next(
            (i for i in range(header + 1, len(lines)) if _TABLE_RE.match(lines[i])), len(lines)
        )
        at = next((i for i in range(header + 1, end) if _PREFIX_RE.match(lines[i])), -1)
        if prefix == inherited and at >= 0:
            del lines[at]
            done = "removed [keys] prefix (keys are bare)" if not prefix else f"prefix {prefix!r}"
            if all(not x.strip() for x in lines[header + 1 : end - 1]):
                _drop_table(lines, header, end - 1)
        elif at >= 0:
            match = _PREFIX_RE.match(lines[at])
            assert match is not None
            lines[at] = f'{match.group(1)}"{prefix}"{match.group(3)}'
            done = f'set [keys] prefix = "{prefix}"'
        else:
            lines.insert(header + 1, line)
            done = f'set [keys] prefix = "{prefix}"'
        new = "".join(lines)
    after = tomllib.loads(new)
    got = after.get("keys", {}).get("prefix", inherited)
    if got != prefix or _without_prefix(after) != _without_prefix(before):
        raise ConfigError(
            f'{VAULT_CONFIG_NAME}: cannot set [keys] prefix = "{prefix}" in it; set it by '
            "hand, then run the migration again"
        )
    return new, f"{VAULT_CONFIG_NAME}: {done}"


def _drop_table(lines: list[str], header: int, last: int) -> None:
    """Remove an emptied ``[keys]`` table (lines ``header..last``) and the blank line
    above it."""
    start = header - 1 if header > 0 and not lines[header - 1].strip() else header
    del lines[start : last + 1]


def _without_prefix(data: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(data)
    keys = dict(out.pop("keys", {}) or {})
    keys.pop("prefix", None)
    if keys:
        out["keys"] = keys
    return out
