"""Frontmatter values as text, and compared as a person reads them.

:func:`render_value` writes ``key: value`` lines in vaultmem's stable, git-friendly style
(quoting only what would not read back as the same string); :func:`normalise` is the value
as it will read back; :func:`same_value` is the equality every write-back check uses.
"""

from __future__ import annotations

import math
from datetime import UTC, date, datetime, timedelta

from vaultmem.frontmatter.scan import loaders

__all__ = ["render_value", "same_value"]

# --------------------------------------------------------------------------- rendering


def _printable(ch: str) -> bool:
    """Whether YAML readers accept ``ch`` raw in a scalar (PyYAML's and libyaml's rule)."""
    return (
        "\x20" <= ch <= "\x7e"
        or ("\xa0" <= ch <= "\ud7ff" and ch not in "\u2028\u2029")
        or ("\ue000" <= ch <= "\ufffd" and ch != "\ufeff")
        or "\U00010000" <= ch <= "\U0010ffff"
    )


_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r", "\0": "\\0"}


def _double_quoted(value: str) -> str:
    """A YAML double-quoted scalar for ``value``.

    Like ``json.dumps(ensure_ascii=False)``, but also escapes what JSON leaves raw and YAML
    does not accept raw: DEL and C1 controls, U+FEFF, and U+2028/U+2029/U+0085, which YAML
    reads as line breaks and would fold into spaces.
    """
    out = ['"']
    for ch in value:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif _printable(ch):
            out.append(ch)
        else:
            code = ord(ch)
            if code <= 0xFF:
                out.append(f"\\x{code:02X}")
            elif code <= 0xFFFF:
                out.append(f"\\u{code:04X}")
            else:
                out.append(f"\\U{code:08X}")
    out.append('"')
    return "".join(out)


def _plain_ok(value: str) -> bool:
    """Whether ``value`` written unquoted reads back as the same string, in both places
    vaultmem writes scalars (after ``key: `` and after ``  - ``), with both loaders."""
    import yaml

    if not value or value != value.strip() or not all(_printable(ch) for ch in value):
        return False
    for doc, expected in ((f"k: {value}\n", {"k": value}), (f"k:\n  - {value}\n", {"k": [value]})):
        for loader in loaders().strict:
            try:
                loaded = yaml.load(doc, Loader=loader)
            except Exception:  # noqa: BLE001 - anything but a clean read means "quote it"
                return False
            if loaded != expected:
                return False
    return True


def _render_float(value: float) -> str:
    if math.isnan(value):
        return ".nan"
    if math.isinf(value):
        return ".inf" if value > 0 else "-.inf"
    text = repr(value)
    if "e" in text:
        # YAML 1.1 (PyYAML) needs a dot in the mantissa: '1e-05' would read as a string.
        mantissa, exponent = text.split("e")
        if "." not in mantissa:
            mantissa += ".0"
        if exponent[0] not in "+-":
            exponent = "+" + exponent
        text = f"{mantissa}e{exponent}"
    return text


def _render_datetime(value: datetime) -> str:
    offset = value.utcoffset()
    if offset is None:
        return value.isoformat(timespec="seconds")
    if offset == timedelta(0):
        return value.replace(tzinfo=None).isoformat(timespec="seconds") + "Z"
    return value.isoformat(timespec="seconds")


def normalise(value: object) -> object:
    """The value as it will read back after rendering (what equality checks compare to).

    Datetimes lose sub-second precision (rendered to the second) and offsets that are not
    whole minutes (YAML timestamps cannot carry them) become UTC; tuples become lists;
    str/int/float subclasses (enums) become the plain type.
    """
    if isinstance(value, datetime):
        value = value.replace(microsecond=0)
        offset = value.utcoffset()
        if offset is not None and offset % timedelta(minutes=1):
            value = value.astimezone(UTC)
        return value
    if isinstance(value, bool) or value is None or isinstance(value, date):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, (list, tuple)):
        return [normalise(item) for item in value]
    raise TypeError(f"vaultmem cannot store a {type(value).__name__} in frontmatter")


def _render_scalar(value: object) -> str:
    """Render a normalised scalar in vaultmem's stable, git-friendly style."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _render_float(value)
    if isinstance(value, datetime):
        return _render_datetime(value)
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, str):
        # Obsidian only treats quoted [[links]] in properties as links.
        if "[[" not in value and _plain_ok(value):
            return value
        return _double_quoted(value)
    raise TypeError(f"vaultmem cannot store a {type(value).__name__} in a frontmatter list")


def render_value(key: str, value: object, newline: str = "\n", indent: str = "") -> str:
    """Render ``key: value`` as frontmatter lines (each ended by ``newline``).

    Scalars go on the key's line; lists become block sequences indented two spaces past
    the key (``[]`` when empty). ``value`` must not be None (None means "clear the key").
    """
    value = normalise(value)
    if isinstance(value, list):
        if not value:
            return f"{indent}{key}: []{newline}"
        lines = [f"{indent}{key}:{newline}"]
        for item in value:
            if isinstance(item, list):
                raise TypeError(f"{key}: vaultmem writes only lists of scalars")
            lines.append(f"{indent}  - {_render_scalar(item)}{newline}")
        return "".join(lines)
    if value is None:
        raise ValueError(f"{key}: None clears a key and has no rendering")
    return f"{indent}{key}: {_render_scalar(value)}{newline}"


# --------------------------------------------------------------------------- comparing


def _same(a: object, b: object) -> bool:
    """Value equality as a user would see it in the file.

    Unlike ``==``: ``true`` is not ``1``, a date is not a midnight datetime, NaN equals
    NaN. Ints and floats of equal value are the same (``confidence: 1`` vs 1.0 needs no
    rewrite).
    """
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
            return True
        return a == b
    if isinstance(a, datetime) and isinstance(b, datetime):
        return (a.utcoffset() is None) == (b.utcoffset() is None) and a == b
    if isinstance(a, datetime) or isinstance(b, datetime):
        return False  # a date is not the datetime at its midnight
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if type(a) is not type(b) and not (isinstance(a, str) and isinstance(b, str)):
        return False
    return bool(a == b)


def same_value(a: object, b: object) -> bool:
    """Whether two frontmatter values read the same to a person (``true`` is not ``1``, a
    date is not its midnight datetime); the equality every write-back check uses."""
    return _same(a, b)
