"""`bootstrap`: a folder of notes to a working agent memory in one command (ClawMem's
``bootstrap``): `init`, `index` (with the embedding sweep), then `hooks install` for the
agents found on this machine. Each step is the command of that name, run as it runs
alone; `bootstrap` adds the plan (``--dry-run``) and the word on whether anything changed.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
from pathlib import Path
from typing import Any, cast

import typer

from vaultmem.cli import ProgressBar, app, load_config
from vaultmem.errors import ConfigError

AGENT_NAMES = {"claude": "Claude Code", "codex": "Codex CLI", "gemini": "Gemini CLI"}


def found_agents(home: Path, env: dict[str, str]) -> list[str]:
    """The agents this machine has: their configuration folder (``~/.claude``,
    ``$CODEX_HOME`` or ``~/.codex``, ``~/.gemini``) or their command on ``PATH``."""
    path = env.get("PATH", "")
    codex_home = Path(env["CODEX_HOME"]) if env.get("CODEX_HOME") else home / ".codex"
    folders = {"claude": home / ".claude", "codex": codex_home, "gemini": home / ".gemini"}
    return [
        name
        for name, folder in folders.items()
        if folder.is_dir() or shutil.which(name, path=path) is not None
    ]


@app.command()
def bootstrap(
    ctx: typer.Context,
    path: Path = typer.Argument(..., help="The folder of notes to make a vault (it must exist)."),
    dry_run: bool = typer.Option(
        False,
        "--dry-run",
        help="Show every change it would make (files, notes, diffs); write nothing.",
    ),
    agents: list[str] = typer.Option(
        None,
        "--agent",
        metavar="claude|codex|gemini",
        help="Wire these agents (repeatable) instead of those found on this machine.",
    ),
    no_hooks: bool = typer.Option(False, "--no-hooks", help="Set the vault up, wire no agent."),
    mcp: str = typer.Option(
        None,
        "--mcp",
        metavar="stdio|http",
        help="Also register vaultmem's MCP server with Claude Code (see `hooks install --mcp`).",
    ),
) -> None:
    """Set up a folder of notes for agents in one go: `init`, `index` (with embeddings),
    then `hooks install` for each agent found on this machine.

    Agents are found by their folder (~/.claude, $CODEX_HOME or ~/.codex, ~/.gemini) or
    their command on PATH: Claude Code gets vaultmem's hooks in ~/.claude/settings.json
    (and its MCP server with --mcp), Codex CLI and Gemini CLI the MCP server, all in the
    user scope, with the vault's absolute path. --dry-run prints every change first: the
    files `init` would create, the notes `index` would read, the diff of each agent file;
    nothing is written. Safe to rerun: a second run changes nothing and says so.

    Example:
        vaultmem bootstrap ~/notes --dry-run
        vaultmem bootstrap ~/notes
    """
    from vaultmem.workspace import init_vault

    target = path.expanduser()
    if not target.is_dir():
        raise ConfigError(f"{target} is not a folder (create it, or point at your notes)")
    target = target.resolve()
    unknown = [a for a in agents or [] if a not in AGENT_NAMES]
    if unknown:
        raise typer.BadParameter(
            f"{', '.join(unknown)}: choose from {', '.join(AGENT_NAMES)}", param_hint="--agent"
        )
    ctx.find_root().obj["vault"] = str(target)
    changed = False
    # 1. init
    missing = [n for n in (".vaultmem.toml", ".vaultmem/.gitignore") if not (target / n).exists()]
    if dry_run:
        typer.echo(f"init: would create {', '.join(missing)}" if missing else "init: unchanged")
    else:
        created = init_vault(target)
        typer.echo(f"init: created {', '.join(created)}" if created else "init: unchanged")
    changed |= bool(missing)
    # 2. index and embed
    config = load_config(ctx)
    changed |= _dry_index(config) if dry_run else _index(config)
    # 3. the agents
    wired = (
        []
        if no_hooks
        else list(dict.fromkeys(agents or found_agents(Path.home(), dict(os.environ))))
    )
    if not wired:
        typer.echo("hooks: no agent found (none of ~/.claude, ~/.codex, ~/.gemini, or on PATH)")
    else:
        names = ", ".join(AGENT_NAMES[a] for a in wired)
        typer.echo(f"hooks: {names}")
        changed |= _install(ctx, wired, target, dry_run, mcp)
    if dry_run:
        typer.echo("dry run: nothing was written" if changed else "dry run: nothing would change")
    elif changed:
        typer.echo(f"bootstrapped {target} (restart running agent sessions to load the hooks)")
    else:
        typer.echo(f"nothing changed: {target} was already bootstrapped")


def _dry_index(config: Any) -> bool:
    """Say what `index` would read and embed; whether that is anything."""
    from vaultmem.workspace import vault_status

    status = vault_status(config)
    if not status.stale and status.indexed:
        typer.echo(f"index: unchanged ({status.notes} notes indexed)")
        return False
    typer.echo(
        f"index: would read {status.new + status.changed} notes ({status.new} new, "
        f"{status.changed} changed) and drop {status.removed}; {status.notes} notes in all"
    )
    embedder = "none configured" if config.embedder == "none" else config.embedder
    typer.echo(f"embed: would embed their new fragments (embedder: {embedder})")
    return True


def _index(config: Any) -> bool:
    """Run `index` (and its embedding sweep); whether it changed anything."""
    from vaultmem.cli.index_cmds import echo_repaired, run_embed_step
    from vaultmem.indexer import index_vault

    with ProgressBar("indexing") as bar:
        report = index_vault(config, progress=bar)
    echo_repaired(report.healed, "keyword index rebuilt from the vault")
    for skip in report.skipped:
        typer.echo(f"skipped {skip.reason}", err=True)
    typer.echo(f"index: {report.summary}")
    changed = bool(report.added or report.updated or report.removed or report.rebuilt)
    embedded = run_embed_step(config, quiet=True)
    if embedded is not None:
        typer.echo(f"embed: {embedded.summary}")
        changed |= bool(embedded.embedded or embedded.removed)
    return changed


def _install(
    ctx: typer.Context, wired: list[str], vault: Path, dry_run: bool, mcp: str | None
) -> bool:
    """Run `hooks install` for the agents (its own lines shown); whether it changed, or in
    a dry run would change, a file."""
    from vaultmem.cli.hook_cmds import install

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        install(
            ctx,
            claude="claude" in wired,
            codex="codex" in wired,
            gemini="gemini" in wired,
            scope="user",
            dry_run=dry_run,
            vault=str(vault),
            mcp=cast(Any, mcp),  # `install` takes None for no --mcp
        )
    said = out.getvalue()
    typer.echo(said, nl=False)
    # One line per file: "unchanged: FILE", a diff, or what was written; and notes.
    lines = [line for line in said.splitlines() if line and not line.startswith("note: ")]
    return any(not line.startswith("unchanged: ") for line in lines)
