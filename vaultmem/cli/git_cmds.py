"""Git for a vault kept in many clones: `git setup` and `merge-driver` (what git runs)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from vaultmem.cli import app, load_config

if TYPE_CHECKING:
    from vaultmem.gitmerge.registration import GitSetup

git_app = typer.Typer(
    help=(
        "Git for a vault cloned on many machines.\n\n"
        "setup registers vaultmem's merge driver, so that a pull never stops on the keys "
        "vaultmem writes: in .gitattributes (tracked) and in this clone's git config.\n\n"
        "Example:\n\n    vaultmem --vault ~/notes git setup"
    ),
    no_args_is_help=True,
    rich_markup_mode=None,
)
app.add_typer(git_app, name="git")


@git_app.command()
def setup(ctx: typer.Context) -> None:
    """Make git merge the vault's notes with `vaultmem merge-driver`.

    Adds a line per note glob to the vault's .gitattributes (tracked: commit it, and
    every clone gets it) and sets merge.vaultmem.driver in this clone's .git/config
    (git never shares config: run this once in each clone; `doctor` says when a clone
    lacks it). vaultmem's own frontmatter keys then merge by meaning, with no conflict;
    the rest of the note merges as git merges text. Safe to rerun.

    Example:
        vaultmem --vault ~/notes git setup
    """
    from vaultmem.gitmerge.registration import setup_git

    report_setup(setup_git(load_config(ctx)))


def report_setup(done: GitSetup) -> None:
    """The lines `git setup` and `init --git` print about what they did (and a warning
    when git could not start the driver from this PATH)."""
    from vaultmem.gitmerge.registration import DRIVER

    if done.created_repo:
        typer.echo(f"created git repository {done.repo}")
    for line in done.added:
        typer.echo(f"{done.attributes}: added {line}")
    for key in done.configured:
        typer.echo(f"set {key} in this clone's git config")
    if done.added:
        typer.echo(f"commit {done.attributes.name} so every clone merges notes with vaultmem")
    if not done.added and not done.configured:
        typer.echo("git already merges the vault's notes with vaultmem's driver")
    if shutil.which(DRIVER) is None:
        typer.echo(
            f"vaultmem: warning: git runs `{DRIVER}` from PATH, and this PATH has none: "
            "install it where git finds it (pipx install vaultmem), or merges stop on notes",
            err=True,
        )


@app.command("merge-driver")
def merge_driver(
    base: Path = typer.Argument(
        ..., metavar="BASE", help="The common ancestor's version (git's %O)."
    ),
    ours: Path = typer.Argument(
        ..., metavar="OURS", help="Our version (%A); the result is written here."
    ),
    theirs: Path = typer.Argument(..., metavar="THEIRS", help="Their version (%B)."),
    path: str = typer.Argument(..., metavar="PATH", help="The note's path in the repository (%P)."),
) -> None:
    """Merge three versions of a note for git: vaultmem's keys by meaning, the rest as text.

    git runs it (see `vaultmem git setup`). Counters add both sides' uses, last_* times
    take the later, typed links take the union minus what either side removed, strength
    and confidence replay both sides' steps, flags take the side that used the note last.
    Everything else merges as git merges text, with conflict markers as usual; a flag both
    sides changed with nothing to tell which is newer gets a conflict region too. Writes
    the result over OURS; exit status 0 when merged cleanly, 1 when conflicts remain
    (each named on stderr).

    Example:
        vaultmem merge-driver base.md ours.md theirs.md inbox/redis.md
    """
    from vaultmem.errors import ConfigError
    from vaultmem.gitmerge.driver import merge_note
    from vaultmem.gitmerge.registration import conflict_style, note_keys
    from vaultmem.properties import BARE

    try:
        texts = base.read_bytes(), ours.read_bytes(), theirs.read_bytes()
    except OSError as exc:
        typer.echo(f"vaultmem merge-driver: cannot read {exc.filename}: {exc.strerror}", err=True)
        raise typer.Exit(1) from None
    try:
        keys = note_keys(Path.cwd(), path, dict(os.environ))
    except ConfigError as exc:
        # The owned keys' lines then merge as text: a conflict is left, never a wrong value.
        typer.echo(f"vaultmem merge-driver: {path}: {exc}; keys taken as bare names", err=True)
        keys = BARE
    result = merge_note(*texts, path, style=conflict_style(Path.cwd()), keys=keys)
    ours.write_bytes(result.text)
    if result.fallback:
        typer.echo(f"vaultmem merge-driver: {path}: merged as text ({result.fallback})", err=True)
    for line in result.conflicts:
        typer.echo(f"vaultmem merge-driver: {line}", err=True)
    if not result.clean:
        raise typer.Exit(1)
