"""The `vaultmem` command line: the only place that reads configuration, prints and exits.

Every ``VaultmemError`` raised below a command becomes one line on stderr and its exit
code (1, or 75 for a busy lock) at :class:`_Boundary`; usage errors exit 2 (click).
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
import warnings
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import typer
from typer.core import TyperGroup

from vaultmem import __version__
from vaultmem.errors import Terminated, VaultmemError, VaultmemWarning


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
    """Turns domain errors into one line and an exit code, for every command."""

    def invoke(self, ctx: Any) -> Any:
        from vaultmem.entry import interruptible

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
        except BrokenPipeError:
            # `vaultmem search … | head` closing the pipe is not an error.
            sys.stderr.close()
            raise typer.Exit(0) from None
        except OSError as exc:
            # A backstop: a read-only vault, cache or disk full anywhere below is one line.
            typer.echo(f"vaultmem: error: {os_error_line(exc)}", err=True)
            raise typer.Exit(1) from None


def os_error_line(exc: OSError) -> str:
    """``cannot write PATH: Permission denied``: what failed, where, and why, in one line."""
    path = exc.filename2 or exc.filename
    why = exc.strerror or str(exc)
    if path is None:
        return why
    writing = exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOSPC, errno.EDQUOT)
    return f"cannot write {os.fsdecode(path)}: {why}" if writing else f"{os.fsdecode(path)}: {why}"


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
        help="Vault folder or named vault (else $VAULTMEM_VAULT, else searched upward).",
        show_default=False,
    ),
    cache_dir: Path = typer.Option(
        None, "--cache-dir", help="Keep the indexes here instead of <vault>/.vaultmem."
    ),
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Show the version."
    ),
) -> None:
    ctx.obj = {"vault": vault, "cache_dir": str(cache_dir) if cache_dir else None}


def load_config(ctx: typer.Context, *, cwd: Path | None = None, **overrides: Any) -> Any:
    """Resolve the configuration once, from the environment, files and flags (a vault is
    searched upward from ``cwd``, the working folder unless given)."""
    from vaultmem import config

    root = ctx.find_root()
    obj = root.obj if isinstance(root.obj, dict) else {}
    flags = {"cache_dir": obj.get("cache_dir"), **overrides}
    loaded = config.load(
        vault_flag=obj.get("vault"), env=dict(os.environ), cwd=cwd or Path.cwd(), overrides=flags
    )
    if not obj.get("warned"):
        for warning in loaded.warnings:
            typer.echo(f"vaultmem: warning: {warning}", err=True)
        obj["warned"] = True
    return loaded


def clock() -> datetime:
    """Now, in UTC; ``VAULTMEM_NOW`` (ISO 8601) pins it, for tests and replays."""
    pinned = os.environ.get("VAULTMEM_NOW", "").strip()
    if not pinned:
        return datetime.now(UTC)
    from vaultmem.errors import ConfigError
    from vaultmem.memory.state import parse_time

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


# Command modules register themselves on `app` when imported.
from vaultmem.cli import (  # noqa: E402,F401
    agent_cmds,
    capture_cmds,
    eval_cmds,
    hook_cmds,
    index_cmds,
    lifecycle_cmds,
    link_cmds,
    memory_cmds,
    query_cmds,
    read_cmds,
    vector_cmds,
)


def main() -> None:
    """Console-script entry point (signal handling set up by :mod:`vaultmem.entry`)."""
    from vaultmem.entry import main as entry_main

    entry_main()


def run() -> None:
    """Run the app; called by :func:`vaultmem.entry.main`, which defers signals until a
    command runs (see :mod:`vaultmem.entry`)."""
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
