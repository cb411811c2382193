"""`vaults`: the named vaults of the user config; and the vaults `search --vault a
--vault b` / `--all-vaults` opens."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from vaultmem.cli import app, load_config, open_vault
from vaultmem.errors import ConfigError, VaultmemError

if TYPE_CHECKING:
    from vaultmem.api import OpenVault, VaultOverview

HOW_TO_NAME = (
    'no named vaults yet: add a [vaults] table to {path}, e.g. [vaults] notes = "~/notes" '
    '(and default_vault = "notes" for the one commands use by default)'
)


@app.command()
def vaults(
    ctx: typer.Context,
    json_out: bool = typer.Option(
        False, "--json", help="One object per vault: name, path, default, notes, index, stale."
    ),
) -> None:
    """List the named vaults: each one's path, notes and keyword index state.

    The vaults are the `[vaults]` table of the user config (~/.config/vaultmem/config.toml,
    or $VAULTMEM_CONFIG); `*` marks `default_vault`, the one a command uses when neither
    --vault nor $VAULTMEM_VAULT names one and no vault is found upward from the working
    folder (a default given as a path is listed too). The
    index is fresh, stale (notes changed since the last `index`; how many in brackets),
    none (never indexed), missing (no such folder) or error (its configuration does not
    load). Read as `status` reads it: no note, model or vector store is opened. Any of
    the names works as `--vault NAME`, and `search --all-vaults` searches them all.

    Example:
        vaultmem vaults --json
    """
    from vaultmem import api
    from vaultmem import config as cfg

    env, cwd = dict(os.environ), Path.cwd()
    found = cfg.named_vaults(env, cwd)
    if not found:
        typer.echo(HOW_TO_NAME.format(path=cfg.user_config_path(env)), err=True)
        return
    shown = []
    for named in found:
        loaded, error = None, ""
        if named.path.is_dir():
            try:
                # The global --cache-dir is one vault's: each named vault has its own.
                loaded = load_config(ctx, vault_flag=str(named.path), cache_dir=None)
            except ConfigError as exc:
                error = str(exc)
        shown.append(api.vault_overview(named, loaded, error))
    if json_out:
        for one in shown:
            typer.echo(json.dumps(one.as_json(), ensure_ascii=False))
        return
    from vaultmem.cli.columns import cells, left

    rows = [_row(one) for one in shown]
    widths = [max(cells(row[i]) for row in rows) for i in range(3)]
    for row in rows:
        padded = [left(cell, width) for cell, width in zip(row[:3], widths, strict=True)]
        typer.echo("  ".join([*padded, row[3]]))


def _row(shown: VaultOverview) -> tuple[str, str, str, str]:
    """One vault's columns: mark and name, path, notes, index state."""
    name = shown.name if shown.name is not None else "(default)"
    notes = "" if shown.notes is None else f"{shown.notes} note{'' if shown.notes == 1 else 's'}"
    state = f"stale ({shown.stale})" if shown.index == "stale" and shown.stale else shown.index
    why = f" ({shown.problem})" if shown.problem else ""
    return (f"{'*' if shown.default else ' '} {name}", shown.path, notes, f"index {state}{why}")


def open_vaults(
    ctx: typer.Context, names: list[str], every: bool
) -> tuple[list[tuple[str, OpenVault]], list[tuple[str, VaultmemError]]]:
    """The vaults a command searches, by the name each was given: those of ``--vault``
    (and the global one, when given), or every named vault (``every``); one vault opened
    twice under two names is searched once. A vault that does not open (no such folder,
    a configuration that does not load) is returned apart with its error, for the
    command to name while the others answer."""
    from vaultmem import config as cfg

    obj = ctx.find_root().obj or {}
    wanted = [obj["vault"]] if obj.get("vault") else []
    wanted += names
    if every:
        named = cfg.named_vaults(dict(os.environ), Path.cwd())
        if not named:
            raise ConfigError(HOW_TO_NAME.format(path=cfg.user_config_path(dict(os.environ))))
        for vault in named:
            if vault.path.is_dir():
                wanted.append(vault.name or str(vault.path))
            else:
                where = f"{vault.name} ({vault.path})" if vault.name else str(vault.path)
                typer.echo(
                    f"vaultmem: warning: vault {where} is not a folder: not searched", err=True
                )
    if obj.get("cache_dir") and len(wanted) > 1:
        raise typer.BadParameter(
            "--cache-dir is one vault's cache: it cannot go with several vaults",
            param_hint="--cache-dir",
        )
    opened: dict[Path, tuple[str, OpenVault]] = {}
    failed: list[tuple[str, VaultmemError]] = []
    for name in wanted:
        try:
            vault = open_vault(ctx, vault_flag=name)
        except VaultmemError as exc:
            failed.append((name, exc))
            continue
        opened.setdefault(vault.config.vault, (name, vault))
    return list(opened.values()), failed


def named_for_mcp(ctx: typer.Context) -> tuple[dict[str, Path], Callable[[Path], OpenVault]]:
    """The vaults an MCP client may name (`[vaults]` of the user config, read now: name →
    folder), and how the server opens one (its own cache, its own configuration)."""
    from vaultmem import config as cfg
    from vaultmem.api import OpenVault

    def opener(path: Path) -> OpenVault:
        # Each named vault has its own cache: the global --cache-dir is one vault's.
        return OpenVault(load_config(ctx, vault_flag=str(path), cache_dir=None), warm=True)

    named = cfg.named_vaults(dict(os.environ), Path.cwd())
    return {v.name: v.path for v in named if v.name is not None}, opener
