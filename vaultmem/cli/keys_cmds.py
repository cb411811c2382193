"""`keys`: vaultmem's frontmatter keys in a vault (`keys migrate` moves them to a prefix)."""

from __future__ import annotations

import json

import typer

from vaultmem.cli import app, load_config

keys_app = typer.Typer(
    help=(
        "vaultmem's frontmatter keys (status, type, created, related...).\n\n"
        "migrate moves them to prefixed names (vm_status...), so they never meet an "
        "Obsidian vault's own keys.\n\n"
        "Example:\n\n    vaultmem keys migrate --prefix vm_"
    ),
    no_args_is_help=True,
    rich_markup_mode=None,
)
app.add_typer(keys_app, name="keys")


@keys_app.command()
def migrate(
    ctx: typer.Context,
    prefix: str = typer.Option(..., "--prefix", help='The new prefix ("vm_"; "" for bare keys).'),
    apply: bool = typer.Option(False, "--apply", help="Write the plan (default: print it)."),
    json_out: bool = typer.Option(False, "--json", help="One JSON object per note."),
) -> None:
    """Move vaultmem's keys to ``--prefix`` names: prints the plan; --apply writes it.

    A user's value under one of vaultmem's names (status: reading) stays where it is.
    --apply rewrites only the moved keys of each note (atomically, under the vault lock),
    re-indexes the notes and sets [keys] prefix in .vaultmem.toml.

    Example:
        vaultmem keys migrate --prefix vm_ && vaultmem keys migrate --prefix vm_ --apply
    """
    from vaultmem.config import key_scheme
    from vaultmem.errors import ConfigError
    from vaultmem.memory.keys import apply_migration, plan_migration, record_prefix

    config = load_config(ctx)
    try:
        key_scheme({"prefix": prefix})
    except ConfigError as exc:
        raise typer.BadParameter(str(exc).removeprefix("keys.prefix: ")) from None
    moves, skipped = plan_migration(config, prefix)
    for line in skipped:
        typer.echo(f"skipped {line}", err=True)
    for move in moves:
        if json_out:
            typer.echo(json.dumps(move.as_json(), ensure_ascii=False))
        else:
            pairs = ", ".join(f"{a} -> {b}" for a, b in move.renames)
            typer.echo(f"{move.path}: {pairs}")
    if not apply:
        if not json_out:
            typer.echo(f"{len(moves)} notes to change (dry run; --apply writes them)")
        return
    written = apply_migration(config, moves, prefix)
    if not json_out:
        typer.echo(f"{len(written)} notes written")
        typer.echo(record_prefix(config, prefix))
    else:
        record_prefix(config, prefix)
