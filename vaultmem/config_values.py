"""Reading configuration values: TOML files, and values checked against what a key expects.

The ground floor of :mod:`vaultmem.config`: every check names the key (``where``) and what
it expects, as one :class:`~vaultmem.errors.ConfigError` line.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from vaultmem.errors import ConfigError

__all__ = ["at_least", "coerce", "fraction", "one_of", "parse_bool", "read_toml", "table"]


def read_toml(path: Path) -> dict[str, Any]:
    """Parse a TOML file; a missing file is empty, a broken one a ConfigError naming it."""
    try:
        fh = path.open("rb")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None
    # Only when there is a file: most runs have no user config, and tomllib costs ~5 ms.
    import tomllib

    try:
        with fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start}); save it as UTF-8") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None


def coerce(value: Any, kind: type, where: str) -> Any:
    """``value`` as ``kind``; strings (from the environment) are parsed, TOML types must fit."""
    if value is None:
        return None
    what = {str: "a string", bool: "true or false", int: "an integer", float: "a number"}[kind]
    try:
        if kind is str:
            if not isinstance(value, str):
                raise TypeError(value)
            return value
        if isinstance(value, str):
            return parse_bool(value) if kind is bool else kind(value)
        if isinstance(value, bool) != (kind is bool):
            raise TypeError(value)
        if kind is int and isinstance(value, float) and not value.is_integer():
            raise ValueError(value)
        return kind(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{where}: expected {what}, got {value!r}") from None


def parse_bool(text: str) -> bool:
    """``1/0``, ``true/false``, ``yes/no``, ``on/off`` (any case); ValueError otherwise."""
    lowered = text.strip().lower()
    if lowered not in ("1", "0", "true", "false", "yes", "no", "on", "off"):
        raise ValueError(text)
    return lowered in ("1", "true", "yes", "on")


def at_least(value: Any, kind: type, where: str, low: float, *, above: bool = False) -> Any:
    """``value`` as ``kind``, refused below ``low`` (or at it, when ``above``)."""
    number = coerce(value, kind, where)
    if number is not None and (number < low or (above and number == low)):
        what = "an integer" if kind is int else "a number"
        raise ConfigError(
            f"{where}: expected {what} {'>' if above else '>='} {low:g}, got {value!r}"
        )
    return number


def table(data: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    """The sub-table ``name`` of ``data`` ({} when absent); ConfigError when not a table."""
    found = data.get(name, {})
    if found is None:
        return {}
    if not isinstance(found, Mapping):
        raise ConfigError(f"{name}: expected a table ([{name}]), got {found!r}")
    return found


def fraction(value: Any, where: str) -> float:
    """``value`` as a number from 0 to 1."""
    number = coerce(value, float, where)
    if not 0.0 <= number <= 1.0:
        raise ConfigError(f"{where}: expected a number from 0 to 1, got {value!r}")
    return float(number)


def one_of(value: Any, where: str, choices: Sequence[str]) -> str:
    """``value``: a string, one of ``choices``."""
    text = coerce(value, str, where)
    if text not in choices:
        raise ConfigError(f"{where}: expected one of {', '.join(choices)}, got {text!r}")
    return str(text)
