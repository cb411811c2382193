"""The `vaultmem` command line: the only place that reads configuration, prints and exits.

Every ``VaultmemError`` raised below a command becomes one line on stderr and its exit
code (1, or 75 for a busy lock) at :class:`_Boundary`; usage errors exit 2 (click).

The top front end: it may import everything below, the servers included (`serve` and
`mcp` start them); nothing imports it but :mod:`vaultmem.entry` and the servers' warm-path
forwarder. The agent hook front end is here too (:mod:`.hook_cmds`).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import importlib
import os
import sys
import warnings
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import typer
from typer.core import TyperGroup

from vaultmem import __version__
from vaultmem.cli.help import MODULES, format_sections
from vaultmem.cli.params import plain, plain_help_options, plain_parameters
from vaultmem.errors import Terminated, VaultmemError, VaultmemWarning, os_error_line


def _warning_line(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: Any = None,
    line: str | None = None,
) -> None:
    """Our warnings as one line on stderr; anyone else's as Python prints them."""
    if issubclass(category, VaultmemWarning):
        typer.echo(f"vaultmem: warning: {message}", err=True)
    else:
        _show_warning(message, category, filename, lineno, file, line)


_show_warning = warnings.showwarning


class _Boundary(TyperGroup):
    """The root group: turns domain errors into one line and an exit code, for every
    command; imports only the module of the command being run (all of them for
    ``--help``), lists commands in the sections of :data:`vaultmem.cli.help.SECTIONS`, and
    gives every parameter a plain metavar (:mod:`vaultmem.cli.params`)."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        plain_parameters(self.params)
        for command in self._built.values():
            plain(command)

    @property  # type: ignore[override]
    def commands(self) -> dict[str, Any]:
        """Every command, its module imported (click's mapping, for code that reads it)."""
        self._load(None)
        return self._built

    @commands.setter
    def commands(self, value: Any) -> None:
        self._built = dict(value)

    def list_commands(self, ctx: Any) -> list[str]:
        """Every command's name, in the order of the help sections."""
        return list(dict.fromkeys([*MODULES, *self._built]))

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        """The command, its module imported now if it was not."""
        if cmd_name not in self._built:
            self._load(cmd_name)
        command = self._built.get(cmd_name)
        if command is not None:
            plain_help_options(command, ctx, cmd_name)
        return command

    def get_help_option(self, ctx: Any) -> Any:
        """``-h/--help``, plain like every other parameter."""
        option = super().get_help_option(ctx)
        if option is not None:
            plain_parameters([option])
        return option

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        """The commands under their section headings."""
        found = ((name, self.get_command(ctx, name)) for name in self.list_commands(ctx))
        format_sections(ctx, formatter, [(n, c) for n, c in found if c is not None])

    def _load(self, name: str | None) -> None:
        """Import the module of command ``name`` (every command module when ``name`` is
        None or not in the map) and build what it registered on ``app``."""
        module = MODULES.get(name or "")
        if module is not None:
            _import_command_module(module)
        if name is None or name not in _registered():
            import pkgutil

            for found in pkgutil.iter_modules(__path__):
                if found.name.endswith("_cmds"):
                    _import_command_module(found.name)
        for info_name, build in _registered().items():
            if info_name not in self._built and (name is None or info_name == name):
                self._built[info_name] = command = build()
                plain(command)

    def invoke(self, ctx: Any) -> Any:
        from vaultmem.interrupts import interruptible

        try:
            with interruptible(), warnings.catch_warnings():
                warnings.simplefilter("always", VaultmemWarning)
                warnings.showwarning = _warning_line
                return super().invoke(ctx)
        except VaultmemError as exc:
            typer.echo(f"vaultmem: error: {exc}", err=True)
            raise typer.Exit(exc.exit_code) from None
        except KeyboardInterrupt as exc:
            typer.echo("vaultmem: interrupted", err=True)
            raise typer.Exit(143 if isinstance(exc, Terminated) else 130) from None
        except RuntimeError as exc:
            # Python 3.11 wraps a signal that lands while a class body's fields are set up
            # (a dataclass of a module the command imports late) in "Error calling
            # __set_name__": still an interrupt.
            if not isinstance(exc.__cause__, KeyboardInterrupt):
                raise
            typer.echo("vaultmem: interrupted", err=True)
            raise typer.Exit(143 if isinstance(exc.__cause__, Terminated) else 130) from None
        except BrokenPipeError:
            # `vaultmem search … | head` closing the pipe is not an error.
            sys.stderr.close()
            raise typer.Exit(0) from None
        except OSError as exc:
            # A backstop: a read-only vault, cache or disk full anywhere below is one line.
            typer.echo(f"vaultmem: error: {os_error_line(exc)}", err=True)
            raise typer.Exit(1) from None


app = typer.Typer(
    cls=_Boundary,
    name="vaultmem",
    help=(
        "Memory for AI agents and people, kept in an Obsidian markdown vault.\n\n"
        "The vault is the only state: metadata lives in note frontmatter, and the "
        "search indexes in <vault>/.vaultmem/ can be deleted and rebuilt at any time."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"vaultmem {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    ctx: typer.Context,
    vault: str = typer.Option(
        None,
        "--vault",
        "-V",
        help="Vault folder or named vault (else $VAULTMEM_VAULT, else searched upward, else "
        "default_vault).",
        show_default=False,
    ),
    cache_dir: Path = typer.Option(
        None, "--cache-dir", help="Keep the indexes here instead of <vault>/.vaultmem."
    ),
    exclude: list[str] = typer.Option(
        None,
        "--exclude",
        metavar="GLOB",
        help="Also leave out the files GLOB matches (repeat it; !GLOB takes back an exclude "
        "of the defaults or the config).",
        show_default=False,
    ),
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Show the version."
    ),
) -> None:
    ctx.obj = {
        "vault": vault,
        "cache_dir": str(cache_dir) if cache_dir else None,
        "exclude": list(exclude) if exclude else None,
    }


def load_config(
    ctx: typer.Context, *, cwd: Path | None = None, vault_flag: str | None = None, **overrides: Any
) -> Any:
    """Resolve the configuration once, from the environment, files and flags (a vault is
    searched upward from ``cwd``, the working folder unless given; ``vault_flag`` names
    another vault than the global ``--vault``)."""
    from vaultmem import config

    root = ctx.find_root()
    obj = root.obj if isinstance(root.obj, dict) else {}
    flags = {"cache_dir": obj.get("cache_dir"), "exclude": obj.get("exclude"), **overrides}
    env = dict(os.environ)
    loaded = config.load(
        vault_flag=vault_flag or obj.get("vault"), env=env, cwd=cwd or Path.cwd(), overrides=flags
    )
    if not obj.get("warned"):
        for warning in loaded.warnings:
            if warning not in _warned_environment:
                typer.echo(f"vaultmem: warning: {warning}", err=True)
        # A file's warnings once per command; the environment's once per process: a
        # server runs every forwarded command under its own environment.
        _warned_environment.update(config.unknown_variables(env))
        obj["warned"] = True
    return loaded


_warned_environment: set[str] = set()


def open_vault(
    ctx: typer.Context, *, cwd: Path | None = None, vault_flag: str | None = None
) -> Any:
    """The vault the command works on, as an :class:`~vaultmem.api.OpenVault`: a fresh
    one, or the warm one of the server this command runs inside (``warm_vaults``);
    ``vault_flag``: another vault than the global ``--vault`` names."""
    config = load_config(ctx, cwd=cwd, vault_flag=vault_flag)
    opener = warm_vaults.get()
    if opener is not None:
        return opener(config)
    from vaultmem.api import OpenVault

    vault = OpenVault(config)
    # Chroma keeps one system per store path in a process: a store left open would be
    # reused, stale, by the next command run in the same process (tests, a server).
    ctx.call_on_close(vault.close)
    return vault


# Set by a server that runs commands in its own process: config → its long-lived OpenVault.
warm_vaults: contextvars.ContextVar[Callable[[Any], Any] | None] = contextvars.ContextVar(
    "warm_vaults", default=None
)


def root_args(ctx: typer.Context, config: Any) -> list[str]:
    """The global options a process vaultmem starts (a capture job, a background server,
    a cron line) needs to see the same vault and cache."""
    obj = ctx.find_root().obj or {}
    args = ["--vault", str(config.vault)]
    if obj.get("cache_dir"):
        args += ["--cache-dir", str(config.cache_dir)]
    return args


def launcher() -> list[str]:
    """How to start vaultmem from outside (hooks, cron): the `vaultmem` script on PATH,
    else this Python with ``-m vaultmem``."""
    import shutil

    found = shutil.which("vaultmem")
    return [os.path.abspath(found)] if found else [sys.executable, "-m", "vaultmem"]


def clock() -> datetime:
    """Now, in UTC; ``VAULTMEM_NOW`` (ISO 8601) pins it, for tests and replays."""
    pinned = os.environ.get("VAULTMEM_NOW", "").strip()
    if not pinned:
        return datetime.now(UTC)
    from vaultmem.errors import ConfigError
    from vaultmem.memory_state import parse_time

    when = parse_time(pinned)
    if when is None:
        raise ConfigError(f"VAULTMEM_NOW={pinned!r} is not an ISO 8601 date or datetime")
    return when


def stdout_is_tty() -> bool:
    """Whether to draw progress bars (never in cron or pipes)."""
    return sys.stderr.isatty()


class ProgressBar:
    """A progress bar on stderr, opened on the first update (when the total is known).

    Use as a context manager; when ``enabled`` is false (no terminal, --quiet) it draws
    nothing, so cron logs stay clean.
    """

    def __init__(self, label: str, *, enabled: bool = True) -> None:
        self.label = label
        self.enabled = enabled and stdout_is_tty()
        self._bar: Any = None

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        if self._bar is None:
            self._bar = typer.progressbar(length=total, label=self.label, file=sys.stderr)
            self._bar.__enter__()
        self._bar.update(done - self._bar.pos)

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.__exit__(None, None, None)
            self._bar = None


# Command modules (vaultmem/cli/*_cmds.py) register their commands on `app` when
# imported; the root group imports the one a command line names (see `_Boundary`), so a
# new command goes in the map of vaultmem/cli/help.py, not in an import list here.


def _import_command_module(name: str) -> None:
    """Import ``vaultmem.cli.<name>``; a module the map names that does not exist (yet)
    registers nothing."""
    full = f"{__name__}.{name}"
    try:
        importlib.import_module(full)
    except ModuleNotFoundError as exc:
        if exc.name != full:
            raise


def _registered() -> dict[str, Callable[[], Any]]:
    """What the imported command modules registered on ``app``: name → its builder."""
    import typer.main as tm

    short, markup = app.pretty_exceptions_short, app.rich_markup_mode
    found: dict[str, Callable[[], Any]] = {}
    for info in app.registered_commands:
        name = info.name or tm.get_command_name(info.callback.__name__)  # type: ignore[union-attr]
        found[name] = functools.partial(
            tm.get_command_from_info, info, pretty_exceptions_short=short, rich_markup_mode=markup
        )
    for group in app.registered_groups:
        if group.name:
            found[group.name] = functools.partial(
                tm.get_group_from_info,
                group,
                pretty_exceptions_short=short,
                suggest_commands=True,
                rich_markup_mode=markup,
            )
    return found


def run() -> None:
    """Run the app; called by :func:`vaultmem.entry.main`, which defers signals until a
    command runs (see :mod:`vaultmem.interrupts`)."""
    try:
        app(prog_name="vaultmem")
    except SystemExit as exc:
        if exc.code in (130, 143):
            # Interrupted: locks, workers and temp files were cleaned up as it unwound.
            # Don't let Python wait at exit for threads stuck in a request (a remote
            # embedder's pool would hold Ctrl-C up to its timeout).
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(OSError, ValueError):
                    stream.flush()
            os._exit(exc.code)
        raise
