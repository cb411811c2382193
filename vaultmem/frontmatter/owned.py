"""What a valid value of each owned key is.

:func:`owned_problem` says why a value is not one (the memory code then treats the key as
absent), :func:`owned_warnings` lists a note's invalid owned values with their lines, and
:func:`saved_lines_problem` says why text cannot be written back as a key's saved lines
(the ``UNDO_KEYS`` keys).
"""

from __future__ import annotations

import math
import posixpath
import re
from collections.abc import Callable, Mapping
from datetime import date, datetime
from functools import lru_cache
from typing import Any

from vaultmem.frontmatter.layout import KEEP_HEADER_RE, frontmatter_lines
from vaultmem.frontmatter.scan import Parts, construct, loaders
from vaultmem.properties import (
    BARE,
    OWNED_KEYS,
    PROPERTY_TYPES,
    UNDO_KEYS,
    KeyScheme,
    PropType,
    user_value,
)

__all__ = ["iso_time", "owned_problem", "owned_warnings", "saved_lines_problem", "users_value"]


def iso_time(text: str) -> datetime | date | None:
    """ISO 8601 text (``2026-11-02``, ``2026-11-02T10:00:00Z``) as a date or datetime;
    None when it is not one."""
    text = text.strip()
    try:
        if len(text) == 10:
            return date.fromisoformat(text)
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def _is_time(value: object) -> bool:
    return isinstance(value, date) or (isinstance(value, str) and iso_time(value) is not None)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _is_count(value: object) -> bool:
    return _is_number(value) and float(value).is_integer() and value >= 0  # type: ignore[operator, arg-type]


def _is_half_life(value: object) -> bool:
    from vaultmem.scores import parse_half_life

    try:
        parse_half_life(value)  # type: ignore[arg-type]
    except ValueError:
        return False
    return True


def _is_texts(value: object) -> bool:
    """A non-blank text, or a list of them (links, scopes)."""
    items = value if isinstance(value, list) else [value]
    return all(isinstance(item, str) and item.strip() for item in items)


_MARKER_LINE_RE = re.compile(r"(?:---|\.\.\.)(?:[ \t]|$)")


@lru_cache(maxsize=1024)
def saved_lines_problem(key: str, text: str) -> str | None:
    """Why ``text`` cannot be written back as ``key``'s lines (None when it can).

    Saved lines (:class:`ReplacedLines`) are ``key``'s top-level entry alone: YAML that
    reads as a mapping of exactly ``key``, line breaks as LF, no document marker line
    (``---``/``...``, which would end the frontmatter), not a ``|+`` block scalar.
    Cached: the memory view checks the saved value of every forgotten note it ranks.
    """
    if "\r" in text:
        return "has a carriage return (saved lines break with LF)"
    lines = text.split("\n")
    if any(_MARKER_LINE_RE.match(line) for line in lines):
        return "has a document marker line (--- or ...)"
    if KEEP_HEADER_RE.search(lines[0]):
        # Its value runs on over the blank lines that follow it in the note, which the
        # saved lines cannot hold.
        return "is a block scalar that keeps trailing blank lines (|+)"
    try:
        data = construct(text + "\n", loaders().fast)  # ended as its last line is in a note
    except Exception:  # noqa: BLE001 - whatever fails to load cannot be written back
        return "is not YAML on its own"
    if not isinstance(data, dict) or list(data) != [key]:
        return f"is not the lines of one {key!r} key"
    return None


def _is_saved(key: str) -> Callable[[object], bool]:
    """The check of ``key``'s saved lines (its ``UNDO_KEYS`` key)."""

    def valid(value: object) -> bool:
        return isinstance(value, str) and saved_lines_problem(key, value) is None

    return valid


def _is_vault_path(value: object) -> bool:
    """A vault-relative POSIX path, as written: no leading ``/``, no ``..``, no ``.``."""
    return (
        isinstance(value, str)
        and value.strip() == value
        and not value.startswith("/")
        and "\\" not in value
        and posixpath.normpath(value) == value
        and not value.startswith("..")
    )


_TIME = (_is_time, "is not a date")
_COUNT = (_is_count, "is not a whole number of 0 or more")
_LINKS = (_is_texts, "is not a link or a list of links")
_TEXT = (lambda v: isinstance(v, str), "is not text")
# What a valid value of each owned key is, and how a bad one is described.
_VALID: dict[str, tuple[Callable[[object], bool], str]] = {
    "type": _TEXT,
    "confidence": (lambda v: _is_number(v) and 0 <= v <= 1, "is not a number from 0 to 1"),  # type: ignore[operator]
    "confidence_lost": (lambda v: _is_number(v) and 0 <= v <= 1, "is not a number from 0 to 1"),  # type: ignore[operator]
    "half_life": (_is_half_life, "is not a half-life (30d, 12h, 2w or never)"),
    "pinned": (lambda v: isinstance(v, bool), "is not true or false"),
    "snoozed_until": _TIME,
    "status": _TEXT,
    "archived_from": (_is_vault_path, "is not a path in the vault (folder/note.md)"),
    "strength": (_is_number, "is not a number"),
    "use_count": _COUNT,
    "last_used": _TIME,
    "created": _TIME,
    "review_count": _COUNT,
    "last_review": _TIME,
    "cross_domain_count": _COUNT,
    "last_confirmed": _TIME,
    "applies_to": (_is_texts, "is not a glob or command, or a list of them"),
    "enforce": _TEXT,
    "source_session": _TEXT,
    "source_project": _TEXT,
    "source_time": _TIME,
    "needs_review": (_is_texts, "is not a line of text or a list of them"),
    **dict.fromkeys(OWNED_KEYS[OWNED_KEYS.index("supersedes") :], _LINKS),
    **{
        saved: (_is_saved(key), f"is not a {key} line vaultmem saved")
        for key, saved in UNDO_KEYS.items()
    },
}


def owned_problem(key: str, value: object) -> str | None:
    """Why ``value`` is not a valid value of the owned key ``key`` (None when it is).

    None and ``""`` are an absent value, not a problem. Dates may be YAML dates or ISO
    text (the manifest keeps them as text). The memory code treats a key with a problem
    as absent, and the note reports it (:attr:`vaultmem.note.Note.warnings`).
    """
    if value is None or value == "" or key not in _VALID:
        return None
    valid, problem = _VALID[key]
    return None if valid(value) else problem


# A link as vaultmem writes it: one [[wikilink]], quoted or not.
_WIKILINK_RE = re.compile(r"[ \t]*\[\[[^\[\]\n]+\]\][ \t]*\Z")


def users_value(key: str, value: object) -> bool:
    """Whether a value under the bare name of owned key ``key`` is the user's: text outside
    vaultmem's vocabulary (``status: reading``), or a value of a shape vaultmem never
    writes there (``created: 2019``, ``related: ["a chapter"]``: not a date, not a list of
    ``[[links]]``). Blank or absent is nobody's. What `keys migrate` leaves in place and
    the merge driver leaves to git.

    Example:
        >>> users_value("related", ["a chapter"]), users_value("related", ["[[A]]"])
        (True, False)
    """
    if value is None or (isinstance(value, str) and not value.strip()):
        return False
    if user_value(key, value) or owned_problem(key, value) is not None:
        return True
    if PROPERTY_TYPES.get(key) is PropType.MULTITEXT:
        items = value if isinstance(value, list) else [value]
        return not all(isinstance(item, str) and _WIKILINK_RE.match(item) for item in items)
    return False


def shown_value(value: object) -> str:
    text = repr(value) if isinstance(value, str) else str(value)
    if isinstance(value, date):
        text = repr(value.isoformat())
    return text if len(text) <= 40 else text[:37] + "..."


def owned_warnings(
    meta: Mapping[Any, Any], parts: Parts, keys: KeyScheme = BARE
) -> tuple[str, ...]:
    """One line per owned key whose value is invalid, e.g. ``created: '2026-13-45' is not a
    date (line 3); treated as absent``. Cheap when there is none (the usual case). A user's
    value under an owned name (``status: reading``) is not vaultmem's and not reported."""
    owned = keys.owned_view(meta)
    found = {key: owned_problem(key, value) for key, value in owned.items()}
    warnings = []
    for key in OWNED_KEYS:
        problem = found.get(key)
        if problem is None:
            continue
        name = keys.names[key]
        where = _key_line(parts, name)
        at = "" if where is None else f" (line {where})"
        warnings.append(f"{name}: {shown_value(owned[key])} {problem}{at}; treated as absent")
    return tuple(warnings)


def _key_line(parts: Parts, key: str) -> int | None:
    """The file line of the last top-level ``key:`` (the one YAML keeps)."""
    name = re.escape(key)
    pattern = re.compile(rf"[ \t]*(?:{name}|'{name}'|\"{name}\")[ \t]*:")
    found = None
    for n, line in enumerate(frontmatter_lines(parts.frontmatter or "")):
        if pattern.match(line):
            found = parts.yaml_line + n
    return found
