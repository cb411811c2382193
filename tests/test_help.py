"""`vaultmem --help` groups commands by purpose; every parameter shows a plain metavar."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from typer.main import get_command
from typer.testing import CliRunner

from vaultmem.cli import app, help
from vaultmem.cli.params import PlainArgument, PlainOption

# typer's own type labels: <str>, <int range>, <path>, <list[str]>, …
TYPE_LABEL = re.compile(r"<(str|int|float|bool|path|file|dir|datetime|uuid|\w+ range|list\[.*?\])>")


def _walk(command: Any, ctx: Any, path: tuple[str, ...]) -> Iterator[tuple]:
    yield path, command, ctx
    for name in command.list_commands(ctx) if hasattr(command, "list_commands") else ():
        sub = command.get_command(ctx, name)
        if sub is not None:
            yield from _walk(sub, sub.context_class(sub, parent=ctx, info_name=name), (*path, name))


def _every_command() -> list[tuple]:
    root = get_command(app)
    return list(_walk(root, root.context_class(root, info_name="vaultmem"), ()))


def test_root_help_lists_every_command_under_its_section() -> None:
    out = CliRunner().invoke(app, ["--help"]).stdout
    sections = re.findall(r"^(\w+):\n((?:  .*\n?)+)", out, flags=re.MULTILINE)
    listed = {head: re.findall(r"^  (\S+)", rows, flags=re.MULTILINE) for head, rows in sections}
    registered = set(get_command(app).commands)  # type: ignore[attr-defined]
    for head, names in help.SECTIONS.items():
        assert listed.get(head, []) == [n for n in names if n in registered], head
    assert "Commands" not in listed and "Other" not in listed
    order = [head for head in listed if head in help.SECTIONS]
    assert order == [head for head in help.SECTIONS if head in order]


def test_every_registered_command_is_in_the_map_with_its_module() -> None:
    get_command(app).commands  # noqa: B018 - imports every command module
    defined = {
        info.name or info.callback.__name__: info.callback.__module__  # type: ignore[union-attr]
        for info in app.registered_commands
    }
    for group in app.registered_groups:
        first = group.typer_instance.registered_commands[0]  # type: ignore[union-attr]
        defined[group.name] = first.callback.__module__  # type: ignore[union-attr,index]
    for name, module in defined.items():
        assert name in help.MODULES, f"`{name}` is not in SECTIONS (vaultmem/cli/help.py)"
        assert module == f"vaultmem.cli.{help.MODULES[name]}", f"`{name}` is in {module}"


def test_a_command_missing_from_the_map_still_runs_under_other(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delitem(help.SECTIONS["Search"], "get")
    monkeypatch.delitem(help.MODULES, "get")
    get_command(app).commands  # noqa: B018 - the command exists, only the map lacks it
    out = CliRunner().invoke(app, ["--help"]).stdout
    assert re.search(r"^Other:\n  get ", out, flags=re.MULTILINE), out
    assert CliRunner().invoke(app, ["get", "--help"]).exit_code == 0


def test_no_parameter_of_any_command_shows_a_type_label() -> None:
    checked = 0
    for path, command, ctx in _every_command():
        for param in command.get_params(ctx):
            assert isinstance(param, (PlainOption, PlainArgument)), (path, param.name)
            record = param.get_help_record(ctx)
            if record is not None:
                assert not TYPE_LABEL.search(record[0]), (path, record[0])
                checked += 1
        usage = " ".join(command.collect_usage_pieces(ctx))
        assert "<" not in usage and "{" not in usage, (path, usage)
        help_text = CliRunner().invoke(app, [*path, "--help"]).stdout
        assert not TYPE_LABEL.search(help_text), (path, help_text)
    assert checked > 100


def test_metavars_are_plain_words() -> None:
    out = CliRunner().invoke(app, ["--help"]).stdout
    assert "--vault VAULT" in out and "--cache-dir PATH" in out
    out = CliRunner().invoke(app, ["review", "--help"]).stdout
    assert re.search(r"--limit N\b", out), out
    out = CliRunner().invoke(app, ["links", "--help"]).stdout
    assert "Usage: vaultmem links [OPTIONS] NOTE\n" in out and "\n  NOTE  " in out
    out = CliRunner().invoke(app, ["get", "--help"]).stdout
    assert "Usage: vaultmem get [OPTIONS] NOTE...\n" in out
    out = CliRunner().invoke(app, ["touch", "--help"]).stdout
    assert "Usage: vaultmem touch [OPTIONS] NOTE...\n" in out


def test_examples_print_one_command_a_line() -> None:
    out = CliRunner().invoke(app, ["search", "--help"]).stdout
    example = 'vaultmem --vault example-vault search "redis cache invalidation" -n 5 --explain'
    assert f"  Example:\n      {example}\n" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-n", "0"], "0 is not in the range 1<=x<=1000."),
        (["-n", "abc"], "'abc' is not a valid integer."),
        (["-n", "1001"], "1001 is not in the range 1<=x<=1000."),
    ],
)
def test_values_are_checked_without_pydantic(args: list[str], message: str) -> None:
    result = CliRunner().invoke(app, ["search", "redis", *args])
    assert result.exit_code == 2
    assert message in result.stderr
