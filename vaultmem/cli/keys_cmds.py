"""`keys`: vaultmem's frontmatter keys in a vault (`keys migrate` moves them to a prefix)."""

from __future__ import annotations

import json
import os
from typing import Any

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
    source: str | None = typer.Option(
        None,
        "--from",
        metavar="PREFIX",
        help="The prefix the notes carry now, when .vaultmem.toml does not say it "
        '(default: the configured one; "" for bare keys).',
    ),
    apply: bool = typer.Option(False, "--apply", help="Write the plan (default: print it)."),
    json_out: bool = typer.Option(False, "--json", help="One JSON object per note."),
) -> None:
    """Move vaultmem's keys to ``--prefix`` names: prints the plan; --apply writes it.

    A user's value under one of vaultmem's names stays where it is, byte for byte: text
    outside vaultmem's vocabulary (status: reading), or a value of a shape vaultmem never
    writes there (created: 2019, related: ["a chapter"]). --apply renames only the keys
    (their values, comments and places stay as they are; atomically, under the vault
    lock), re-indexes the notes and records the prefix in .vaultmem.toml ([keys] prefix,
    in the table that is there or a new one). Migrating back (--prefix "") is the exact
    inverse.

    Example:
        vaultmem keys migrate --prefix vm_ && vaultmem keys migrate --prefix vm_ --apply
    """
    from vaultmem import config as config_module
    from vaultmem.errors import ConfigError
    from vaultmem.memory.keys import apply_migration, plan_migration, prefix_recorded

    config = load_config(ctx)
    shared = {"shared": sorted(config.keys.shared)}
    try:
        config_module.key_scheme({"prefix": prefix})
        old = None if source is None else config_module.key_scheme({"prefix": source, **shared})
    except ConfigError as exc:
        raise typer.BadParameter(str(exc).removeprefix("keys.prefix: ")) from None
    moves, skipped = plan_migration(config, prefix, old)
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
    # The prefix is recorded with the notes or not at all: notes under names the config
    # does not know are state vaultmem cannot read.
    text, said = prefix_recorded(config.vault, prefix, _inherited_prefix(config_module))
    written = apply_migration(config, moves, prefix, old)
    if text is not None:
        from vaultmem.atomic import atomic_write

        atomic_write(config.vault / config_module.VAULT_CONFIG_NAME, text.encode("utf-8"))
    if not json_out:
        typer.echo(f"{len(written)} notes written")
        typer.echo(said)


def _inherited_prefix(config_module: Any) -> str:
    """The prefix below the vault's own file: the user config's (bare without one)."""
    user = config_module.read_toml(config_module.user_config_path(dict(os.environ)))
    table = user.get("keys")
    return str(table.get("prefix", "")) if isinstance(table, dict) else ""
