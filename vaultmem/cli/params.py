"""How command parameters read in help and turn into values, for every command at once.

typer builds every option and argument as its own ``TyperOption``/``TyperArgument``, which
show their type as ``<str>``, ``<int range>``, ``<list[str]>`` and coerce every value with
a pydantic ``TypeAdapter`` (pydantic costs a command ~60 ms to import). :func:`plain`,
applied by the root group to each command it builds, turns them into
:class:`PlainOption`/:class:`PlainArgument`: a plain metavar (``NOTE``, ``N``, ``PATH``)
where the declaration gave none, and the simple types our commands use (text, whole and
decimal numbers with their range, paths, lists of those) read directly, with click's
messages. Anything else keeps typer's own coercion.

Only typer's public surface is used (``typer``, ``typer.core``'s classes, and click's
``Parameter`` methods they keep: ``process_value``, ``get_usage_pieces``), so that a new
typer release changes nothing here; where typer stops saying a parameter's annotation
(``type_descriptor``), the parameter falls back to typer's own reading.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable
from datetime import datetime
from enum import Enum
from pathlib import Path
from typing import Any, Literal, get_args, get_origin
from uuid import UUID

import typer
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption

_NUMBERS: dict[type, tuple[str, str]] = {int: ("N", "integer"), float: ("X", "float")}
_SIMPLE = (str, int, float, bool, Path)
# annotations typer never reads as a path, whatever path options they carry
_NOT_PATHS = (str, bool, datetime, UUID, int, float)
# click's spellings of a boolean
_BOOLS = {"1": True, "true": True, "t": True, "yes": True, "y": True, "on": True}
_BOOLS |= {"0": False, "false": False, "f": False, "no": False, "n": False, "off": False}

_Param = TyperOption | TyperArgument
# (ctx, value) -> value; a context is click's, which typer gives no public name: Any
_Process = Callable[[Any, Any], Any]


def _item_type(annotation: Any) -> Any:
    """The element type of ``list[X]``, else the annotation itself."""
    return get_args(annotation)[0] if get_origin(annotation) is list else annotation


def _declared(param: _Param) -> tuple[Any, Any] | None:
    """The parameter's annotation and its ``typer.Option``/``typer.Argument`` settings, or
    None where this typer does not say them (then typer reads the value itself)."""
    desc = getattr(param, "type_descriptor", None)
    info = getattr(desc, "parameter_info", None)
    if desc is None or info is None or not hasattr(desc, "annotation"):
        return None
    return desc.annotation, info


def _readable(param: _Param) -> bool:
    """Whether :func:`_process` can read this parameter (else typer's coercion does)."""
    declared = _declared(param)
    if declared is None:
        return False
    annotation, info = declared
    if getattr(info, "parser", None) is not None or getattr(info, "clamp", False):
        return False
    item = _item_type(annotation)
    return item in _SIMPLE and get_origin(item) is None


def _process(param: _Param, ctx: Any, value: Any, typers_own: _Process) -> Any:
    """What click's ``process_value`` does (read, check it is there, run the callback),
    reading the value without pydantic where :func:`_readable` says it can."""
    if not _readable(param):
        return typers_own(ctx, value)
    multi = param.multiple or param.nargs == -1
    if value is None:
        value = () if multi else None
    elif multi and isinstance(value, str):
        raise typer.BadParameter("Value must be an iterable.", ctx=ctx, param=param)
    elif isinstance(value, (list, tuple)):
        value = [_one(v, param, ctx) for v in value]
    else:
        value = _one(value, param, ctx)
    if param.required and param.value_is_missing(value):
        # typer's own "Missing argument/option" usage error (exit 2), word for word
        return typers_own(ctx, value)
    if param.callback is not None:
        value = param.callback(ctx, param, value)
    return value


def _one(value: Any, param: _Param, ctx: Any) -> Any:
    """One value of a :func:`_readable` parameter, as its annotation says."""
    annotation, info = _declared(param) or (str, None)
    item = _item_type(annotation)
    if item in _NUMBERS:
        return _number(value, item, param, ctx)
    if item is bool:
        return value if isinstance(value, bool) else _bool(value, param, ctx)
    if item is Path:
        return Path(_checked_path(os.fspath(value), info, param, ctx))
    return value if isinstance(value, str) else str(value)


def _bool(value: Any, param: _Param, ctx: Any) -> bool:
    word = str(value).strip().lower()
    if word not in _BOOLS:
        raise typer.BadParameter(f"{value!r} is not a valid boolean.", ctx=ctx, param=param)
    return _BOOLS[word]


def _number(value: Any, kind: type, param: _Param, ctx: Any) -> Any:
    try:
        number = kind(value.strip() if isinstance(value, str) else value)
    except (TypeError, ValueError):
        raise typer.BadParameter(
            f"{value!r} is not a valid {_NUMBERS[kind][1]}.", ctx=ctx, param=param
        ) from None
    low, high = param.min, param.max
    if (low is not None and number < low) or (high is not None and number > high):
        span = _number_range(low, high)
        raise typer.BadParameter(f"{number} is not in the range {span}.", ctx=ctx, param=param)
    return number


def _number_range(low: float | None, high: float | None) -> str:
    """The range as typer writes it in help and errors (``1<=x<=1000``)."""
    if low is None:
        return f"x<={high}"
    if high is None:
        return f"x>={low}"
    return f"{low}<=x<={high}"


def _path_kind(info: Any) -> str:
    """``file``, ``dir`` or ``path``, from ``file_okay``/``dir_okay`` (typer's words)."""
    if info.file_okay and not info.dir_okay:
        return "file"
    if info.dir_okay and not info.file_okay:
        return "dir"
    return "path"


def _checked_path(path: str, info: Any, param: _Param, ctx: Any) -> str:
    """``path`` (resolved if asked), checked against ``exists``, ``file_okay``,
    ``dir_okay``, ``readable`` and ``writable`` with typer's messages."""
    if info.file_okay and info.allow_dash and path == "-":
        return path
    checked = os.path.realpath(path) if info.resolve_path else path
    label, shown = _path_kind(info), repr(typer.format_filename(path))
    try:
        mode = os.stat(checked).st_mode
    except OSError:
        if not info.exists:
            return checked
        raise typer.BadParameter(f"{label} {shown} does not exist.", ctx=ctx, param=param) from None
    problems = (
        (not info.file_okay and stat.S_ISREG(mode), "is a file"),
        (not info.dir_okay and stat.S_ISDIR(mode), "is a directory"),
        (info.readable and not os.access(checked, os.R_OK), "is not readable"),
        (info.writable and not os.access(checked, os.W_OK), "is not writable"),
    )
    for found, problem in problems:
        if found:
            raise typer.BadParameter(f"{label} {shown} {problem}.", ctx=ctx, param=param)
    return checked


def _choices(annotation: Any) -> tuple[Any, ...] | None:
    """The values of an ``Enum`` or ``Literal`` annotation (or a list of one), else None."""
    for kind in (annotation, _item_type(annotation)):
        if isinstance(kind, type) and issubclass(kind, Enum):
            return tuple(kind)
        if get_origin(kind) is Literal:
            return get_args(kind)
    return None


def _is_path(annotation: Any, info: Any) -> bool:
    """Whether typer reads this annotation as a path (a ``Path``, or a custom type given
    path options)."""
    if info.parser is not None or get_origin(annotation) is not None:
        return False
    if isinstance(annotation, type) and issubclass(annotation, Path):
        return True
    if annotation in _NOT_PATHS:
        return False
    return bool(info.allow_dash or info.path_type is not None or info.resolve_path)


def metavar_for(param: _Param) -> str:
    """``N`` for whole numbers, ``X`` for decimals, ``PATH``/``FILE``/``DIR`` for paths,
    ``a|b`` for choices, else the parameter's name in capitals (``--title`` → ``TITLE``)."""
    declared = _declared(param)
    if declared is not None:
        annotation, info = declared
        choices = _choices(annotation)
        if choices:
            return "|".join(str(getattr(c, "value", c)) for c in choices)
        if _item_type(annotation) in _NUMBERS:
            return _NUMBERS[_item_type(annotation)][0]
        if _is_path(annotation, info):
            return _path_kind(info).upper()
    longs = [opt[2:] for opt in param.opts if opt.startswith("--")]
    return (longs[0] if longs else (param.name or "value").rstrip("_")).upper()


class PlainOption(TyperOption):
    """An option with a plain metavar (``--limit N``) that reads its value directly."""

    def process_value(self, ctx: Any, value: Any) -> Any:
        """Our direct reader where it can, else typer's (pydantic) coercion."""
        return _process(self, ctx, value, super().process_value)


class PlainArgument(TyperArgument):
    """An argument shown by its metavar alone (``NOTE``, ``[PATH]``, ``NOTE...``)."""

    def process_value(self, ctx: Any, value: Any) -> Any:
        """Our direct reader where it can, else typer's (pydantic) coercion."""
        return _process(self, ctx, value, super().process_value)

    def display_type_rich(self, ctx: Any) -> str | None:
        """No ``<str>`` after the name: the metavar says it."""
        return None

    def get_usage_pieces(self, ctx: Any) -> list[str]:
        """``NOTE``, ``[PATH]``, ``NOTE...`` on the usage line."""
        name = self.metavar if self.metavar is not None else self.name or ""
        if self.nargs != 1 and not name.endswith("..."):
            name += "..."
        return [name if self.required else f"[{name}]"]


def plain(command: TyperCommand | TyperGroup) -> None:
    """Make every parameter of ``command`` (and of its subcommands) plain, in place."""
    plain_parameters(command.params)
    if command.help:
        command.help = keep_examples(command.help)
    for sub in getattr(command, "commands", {}).values():
        plain(sub)


def keep_examples(text: str) -> str:
    """Mark each ``Example:`` paragraph so click prints it as written (one command a line,
    indented) instead of re-wrapping it into the prose around it."""
    paragraphs = text.split("\n\n")
    return "\n\n".join(
        f"\b\n{p}" if p.lstrip().startswith("Example") and not p.startswith("\b") else p
        for p in paragraphs
    )


def plain_help_options(command: TyperCommand | TyperGroup, parent: Any, name: str) -> None:
    """Make the ``-h/--help`` options of ``command`` (and its subcommands) plain too.

    click makes a command's help option when a context first asks for it, as typer's own
    option, whose value would pass through typer's (pydantic) coercion; made here, with the
    context the command will run in, it is cached on the command already plain.
    """
    ctx = command.context_class(command, parent=parent, info_name=name, **command.context_settings)
    option = command.get_help_option(ctx)
    if option is not None:
        plain_parameters([option])
    for sub_name, sub in getattr(command, "commands", {}).items():
        plain_help_options(sub, ctx, sub_name)


def plain_parameters(params: Iterable[object]) -> None:
    """Make these parameters plain, in place (see the module's docstring)."""
    for param in params:
        if isinstance(param, (PlainOption, PlainArgument)):
            continue
        if isinstance(param, TyperOption):
            param.__class__ = PlainOption
        elif isinstance(param, TyperArgument):
            param.__class__ = PlainArgument
        else:
            continue
        is_flag = getattr(param, "is_flag", False) or getattr(param, "count", False)
        if param.metavar is None and not is_flag:
            param.metavar = metavar_for(param)
