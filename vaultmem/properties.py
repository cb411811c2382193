"""vaultmem's frontmatter keys: their names on disk, one Obsidian type each, and whose they are.

One table (:data:`PROPERTY_TYPES`) says, for every key vaultmem owns, the single Obsidian
property type every command writes it as (Obsidian gives a property one type across the
vault), and :func:`coerce` makes writers keep to it. :class:`KeyScheme` maps vaultmem's
key names to the names in the notes: bare (``status``) by default, or with a prefix
(``vm_status``) from ``[keys] prefix`` in ``.vaultmem.toml`` so the keys cannot collide
with a Dataview or Templater vault's own ``status``/``type``/``created``/``related``.

The rule for a bare key vaultmem shares a name with: a value outside vaultmem's vocabulary
(``status: reading``, ``type: book``) is the user's. It is not read (no ranking effect;
the note has no status or type as far as vaultmem knows), and no command changes or
deletes it: a write that would is refused (:class:`vaultmem.errors.UserKeyError`), naming
the prefix option.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date
from enum import Enum
from functools import cached_property
from pathlib import Path
from typing import Any

from vaultmem.scores import to_utc
from vaultmem.vocabulary import ENFORCE_VALUES, LINK_TYPES, NOTE_TYPES

__all__ = [
    "BARE",
    "OWNED_KEYS",
    "PROPERTY_TYPES",
    "STATUSES",
    "UNDO_KEYS",
    "KeyScheme",
    "PropType",
    "coerce",
    "merge_obsidian_types",
    "user_value",
]


class PropType(Enum):
    """An Obsidian property type; the value is its name in ``.obsidian/types.json``."""

    TEXT = "text"
    MULTITEXT = "multitext"  # Obsidian's "List"
    NUMBER = "number"
    CHECKBOX = "checkbox"
    DATE = "date"
    DATETIME = "datetime"


# The key that keeps, for an undo, the lines a lifecycle command replaced in each of these
# keys (see vaultmem.frontmatter.edit.ReplacedLines).
UNDO_KEYS: dict[str, str] = {
    "pinned": "pinned_before",
    "snoozed_until": "snoozed_until_before",
    "status": "status_before",
}

# Every key vaultmem owns, in the order new keys are written, with its one type. Times are
# datetimes in UTC everywhere (a snooze "until 2026-12-20" ends at its midnight UTC), so
# `--until DATE` and `--for 30d` give the property the same type.
PROPERTY_TYPES: dict[str, PropType] = {
    "type": PropType.TEXT,
    "confidence": PropType.NUMBER,
    # What contradictions still linked took from `confidence`; `unlink` gives it back.
    "confidence_lost": PropType.NUMBER,
    "half_life": PropType.TEXT,
    "pinned": PropType.CHECKBOX,
    UNDO_KEYS["pinned"]: PropType.TEXT,
    "snoozed_until": PropType.DATETIME,
    UNDO_KEYS["snoozed_until"]: PropType.TEXT,
    "status": PropType.TEXT,
    UNDO_KEYS["status"]: PropType.TEXT,
    # Where `gc` took the note from (its vault path), for `restore` to move it back.
    "archived_from": PropType.TEXT,
    "strength": PropType.NUMBER,
    "use_count": PropType.NUMBER,
    "last_used": PropType.DATETIME,
    "created": PropType.DATETIME,
    "review_count": PropType.NUMBER,
    "last_review": PropType.DATETIME,
    "cross_domain_count": PropType.NUMBER,
    "last_confirmed": PropType.DATETIME,
    # Written by people only (vocabulary.RULE_KEYS): vaultmem reads them, never writes them.
    "applies_to": PropType.MULTITEXT,
    "enforce": PropType.TEXT,
    # Where a memory `extract` wrote came from: the session, its project, when it was
    # said. A note with a source_session was written by vaultmem, not by a person.
    "source_session": PropType.TEXT,
    "source_project": PropType.TEXT,
    "source_time": PropType.DATETIME,
    # Why a person should look at the note (each item names the other note as a link).
    "needs_review": PropType.MULTITEXT,
    **dict.fromkeys(LINK_TYPES, PropType.MULTITEXT),
}
OWNED_KEYS: tuple[str, ...] = tuple(PROPERTY_TYPES)

STATUSES: tuple[str, ...] = ("active", "promoted", "archived", "forgotten", "superseded")
# The owned keys with a closed vocabulary: any other value is the user's.
_VOCABULARY: dict[str, frozenset[str]] = {
    "type": frozenset(NOTE_TYPES),
    "status": frozenset(STATUSES),
    "enforce": frozenset(ENFORCE_VALUES),
}


def user_value(key: str, value: object) -> bool:
    """Whether ``value`` of bare ``key`` is the user's, not vaultmem's: text outside the
    key's vocabulary (``status: reading``, ``type: book``). Blank or absent is nobody's."""
    words = _VOCABULARY.get(key)
    if words is None or value is None or (isinstance(value, str) and not value.strip()):
        return False
    return not (isinstance(value, str) and value.strip().lower() in words)


def coerce(key: str, value: object) -> object:
    """``value`` as the type :data:`PROPERTY_TYPES` gives ``key`` (unchanged where it
    already is, or where it is not a value of this key's type at all: the writer's
    checks refuse those). A date for a datetime key is its midnight UTC; a datetime is
    written in UTC to the second; a lone link becomes a one-item list.

    Example:
        >>> coerce("snoozed_until", date(2026, 12, 20))
        datetime.datetime(2026, 12, 20, 0, 0, tzinfo=datetime.timezone.utc)
    """
    kind = PROPERTY_TYPES.get(key)
    if kind is PropType.DATETIME and isinstance(value, date):
        return to_utc(value).replace(microsecond=0)
    if kind is PropType.MULTITEXT and isinstance(value, str):
        return [value]
    return value


@dataclass(frozen=True)
class KeyScheme:
    """How vaultmem's keys are named in the notes: ``prefix`` + key, except the ``shared``
    keys (kept bare and shared with the user). No prefix: every key is bare."""

    prefix: str = ""
    shared: frozenset[str] = field(default_factory=frozenset)

    @cached_property
    def names(self) -> dict[str, str]:
        """Each owned key → its name in the notes."""
        return {key: self.name(key) for key in OWNED_KEYS}

    @cached_property
    def keys_of(self) -> dict[str, str]:
        """Each name in the notes → the owned key it holds."""
        return {name: key for key, name in self.names.items()}

    def name(self, key: str) -> str:
        """The name ``key`` has in the notes (``status`` → ``vm_status``)."""
        return key if not self.prefix or key in self.shared else self.prefix + key

    def bare(self, key: str) -> bool:
        """Whether ``key`` is written under its own name, where a user's key may sit."""
        return self.name(key) == key

    def ours(self, key: str, value: object) -> bool:
        """Whether the value found under ``key``'s name is vaultmem's to read and write."""
        return not (self.bare(key) and user_value(key, value))

    def owned_view(self, meta: Mapping[Any, Any]) -> dict[str, Any]:
        """The owned keys of a frontmatter under vaultmem's own names, without the user's
        values (what every reader of vaultmem's state sees)."""
        out: dict[str, Any] = {}
        for key, name in self.names.items():
            if name in meta and self.ours(key, meta[name]):
                out[key] = meta[name]
        return out

    def user_keys(self, meta: Mapping[Any, Any]) -> list[tuple[str, Any]]:
        """The keys of ``meta`` named like vaultmem's that are the user's: bare ones with a
        value outside vaultmem's vocabulary, and, under a prefix, every bare owned name."""
        found = []
        for key in OWNED_KEYS:
            if key in meta and (self.name(key) != key or not self.ours(key, meta[key])):
                found.append((key, meta[key]))
        return found

    def obsidian_types(self) -> dict[str, str]:
        """``.obsidian/types.json`` entries for the owned keys, under their names here."""
        return {self.names[key]: kind.value for key, kind in PROPERTY_TYPES.items()}


BARE = KeyScheme()


def merge_obsidian_types(path: Path, scheme: KeyScheme) -> tuple[list[str], list[str]]:
    """Add the owned keys' types to the ``types.json`` at ``path`` (created when absent).

    An entry the file has already is the user's and stays, even with another type. Returns
    (keys added, keys kept with a type other than vaultmem's). Raises ``ValueError`` for a
    file that is not a JSON object with a ``types`` object (it is left untouched).
    """
    from vaultmem.atomic import atomic_write

    data: dict[str, Any] = {}
    if path.exists():
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict) or not isinstance(data.setdefault("types", {}), dict):
            raise ValueError(f'{path}: not an Obsidian types.json (no "types" object)')
    types: dict[str, Any] = data.setdefault("types", {})
    added, kept = [], []
    for name, kind in scheme.obsidian_types().items():
        if name not in types:
            types[name] = kind
            added.append(name)
        elif types[name] != kind:
            kept.append(name)
    if added:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, (json.dumps(data, indent=2) + "\n").encode("utf-8"))
    return added, kept


def parse_shared(value: Iterable[object]) -> frozenset[str]:
    """The ``[keys] shared`` list as owned key names (ValueError for one vaultmem does not
    own: only an owned key can be shared; tags and aliases are always the user's)."""
    names = [str(v) for v in value]
    unknown = [n for n in names if n not in PROPERTY_TYPES]
    if unknown:
        raise ValueError(f"not keys vaultmem owns: {', '.join(unknown)}")
    return frozenset(names)
