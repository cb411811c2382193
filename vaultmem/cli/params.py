"""How command parameters read in help and turn into values, for every command at once.

typer builds every option and argument as its own ``TyperOption``/``TyperArgument``, which
show their type as ``<str>``, ``<int range>``, ``<list[str]>`` and coerce every value with
a pydantic ``TypeAdapter`` (pydantic costs a command ~60 ms to import). :func:`plain`,
applied by the root group to each command it builds, turns them into
:class:`PlainOption`/:class:`PlainArgument`: a plain metavar (``NOTE``, ``N``, ``PATH``)
where the declaration gave none, and the simple types our commands use (text, whole and
decimal numbers with their range, paths, lists of those) read directly, with click's
messages. Anything else keeps typer's own coercion.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, get_args, get_origin

import typer._click as click
from typer._click.exceptions import BadParameter
from typer._coercion import RuntimeParam
from typer._display import describe_number_range
from typer._param_types import coerce_cli_path, path_type_name
from typer.core import TyperArgument, TyperOption, _TyperParameter

_NUMBERS: dict[type, tuple[str, str]] = {int: ("N", "integer"), float: ("X", "float")}
_SIMPLE = (str, int, float, bool, Path)
# click's spellings of a boolean
_BOOLS = {"1": True, "true": True, "t": True, "yes": True, "y": True, "on": True}
_BOOLS |= {"0": False, "false": False, "f": False, "no": False, "n": False, "off": False}


def _item_type(annotation: Any) -> Any:
    """The element type of ``list[X]``, else the annotation itself."""
    return get_args(annotation)[0] if get_origin(annotation) is list else annotation


def _readable(param: _TyperParameter) -> bool:
    """Whether :class:`_Direct` can read this parameter (else typer's coercion does)."""
    desc = param.type_descriptor
    info = desc.parameter_info
    item = _item_type(desc.annotation)
    if getattr(info, "parser", None) is not None or getattr(info, "clamp", False):
        return False
    return item in _SIMPLE and get_origin(item) is None


class _Direct(RuntimeParam):
    """Reads text, numbers (within ``min``/``max``) and paths without pydantic."""

    def _coerce_value(self, value: Any, param: Any, ctx: click.Context) -> Any:
        if isinstance(value, (list, tuple)):
            return [self._one(v, param, ctx) for v in value]
        return self._one(value, param, ctx)

    def _one(self, value: Any, param: Any, ctx: click.Context) -> Any:
        item = _item_type(self.annotation)
        if item in _NUMBERS:
            return self._number(value, item, param, ctx)
        if item is bool:
            return value if isinstance(value, bool) else self._bool(value, param, ctx)
        if item is Path:
            checked = coerce_cli_path(
                os.fspath(value), self.parameter_info, path_type=str, param=param, ctx=ctx
            )
            return Path(os.fsdecode(checked))
        return value if isinstance(value, str) else str(value)

    def _bool(self, value: Any, param: Any, ctx: click.Context) -> bool:
        word = str(value).strip().lower()
        if word not in _BOOLS:
            raise BadParameter(f"{value!r} is not a valid boolean.", ctx=ctx, param=param)
        return _BOOLS[word]

    def _number(self, value: Any, kind: type, param: Any, ctx: click.Context) -> Any:
        try:
            number = kind(value.strip() if isinstance(value, str) else value)
        except (TypeError, ValueError):
            raise BadParameter(
                f"{value!r} is not a valid {_NUMBERS[kind][1]}.", ctx=ctx, param=param
            ) from None
        low, high = param.min, param.max
        if (low is not None and number < low) or (high is not None and number > high):
            span = describe_number_range(low, high)
            raise BadParameter(f"{number} is not in the range {span}.", ctx=ctx, param=param)
        return number


def metavar_for(param: _TyperParameter) -> str:
    """``N`` for whole numbers, ``X`` for decimals, ``PATH``/``FILE``/``DIR`` for paths,
    ``a|b`` for choices, else the parameter's name in capitals (``--title`` → ``TITLE``)."""
    desc = param.type_descriptor
    item = _item_type(desc.annotation)
    if desc.is_choice and desc.choices:
        return "|".join(str(getattr(c, "value", c)) for c in desc.choices)
    if item in _NUMBERS:
        return _NUMBERS[item][0]
    if desc.is_path:
        return path_type_name(desc.parameter_info).upper()
    longs = [opt[2:] for opt in param.opts if opt.startswith("--")]
    return (longs[0] if longs else (param.name or "value").rstrip("_")).upper()


class _Plain(_TyperParameter):
    def get_runtime_param(self) -> RuntimeParam:
        """Our direct reader where it can, else typer's (pydantic) coercion."""
        if self._runtime_param is None and _readable(self):
            desc = self.type_descriptor
            self._runtime_param = _Direct(
                parameter_info=desc.parameter_info, annotation=desc.annotation
            )
        return super().get_runtime_param()


class PlainOption(_Plain, TyperOption):
    """An option with a plain metavar (``--limit N``) that reads its value directly."""


class PlainArgument(_Plain, TyperArgument):
    """An argument shown by its metavar alone (``NOTE``, ``[PATH]``, ``NOTE...``)."""

    def display_type_rich(self, ctx: click.Context) -> str | None:
        """No ``<str>`` after the name: the metavar says it."""
        return None

    def _usage_display_name(self) -> str:
        name = self.display_name_raw
        if self.nargs != 1 and not name.endswith("..."):
            name += "..."
        return name if self.required else f"[{name}]"


def plain(command: click.Command) -> None:
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


def plain_help_options(command: click.Command, parent: click.Context, name: str) -> None:
    """Make the ``-h/--help`` options of ``command`` (and its subcommands) plain too.

    click makes a command's help option when a context first asks for it, as typer's own
    option, whose value would pass through typer's (pydantic) coercion; made here, with the
    context the command will run in, it is cached on the command already plain.
    """
    ctx = click.Context(command, parent=parent, info_name=name, **command.context_settings)
    option = command.get_help_option(ctx)
    if option is not None:
        plain_parameters([option])
    for sub_name, sub in getattr(command, "commands", {}).items():
        plain_help_options(sub, ctx, sub_name)


def plain_parameters(params: list[click.Parameter]) -> None:
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
