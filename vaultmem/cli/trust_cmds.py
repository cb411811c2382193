"""`trust`: the user's trust in a vault's own configuration and templates."""

from __future__ import annotations

import json
import os
from pathlib import Path

import typer

from vaultmem.cli import app, clock


@app.command()
def trust(
    ctx: typer.Context,
    revoke: bool = typer.Option(
        False, "--revoke", help="Stop trusting the vault: its config only narrows again."
    ),
    status: bool = typer.Option(
        False, "--status", help="Say whether the vault is trusted; change nothing."
    ),
    json_out: bool = typer.Option(False, "--json", help="With --status: one JSON object."),
) -> None:
    """Trust the vault's own .vaultmem.toml and .vaultmem.d/ as yours (or --revoke it).

    A vault that came from someone else (a clone, a pull) is data: until you trust it, its
    .vaultmem.toml may only narrow what is indexed (include, exclude, collections,
    folders, half-lives, key prefix, profiles), while the keys that send data or name a
    path (endpoint URLs, API keys, the Chroma server, cache_dir) are ignored with one
    warning, and its template overrides (.vaultmem.d/templates/) are not used. Trusting
    records the vault's real path and a digest of .vaultmem.toml and .vaultmem.d/ in
    ~/.config/vaultmem/trusted/ (0600, outside the vault); a pull that changes either
    asks again. Read them before you trust them: `vaultmem trust --status` lists what
    trust would apply. Templates always render sandboxed, trusted or not.

    Example:
        vaultmem --vault example-vault trust --status
    """
    from vaultmem import config as cfg
    from vaultmem import vault_trust
    from vaultmem.config_trust import trust_report
    from vaultmem.config_values import read_toml

    if json_out and not status:
        raise typer.BadParameter("--json goes with --status", param_hint="--json")
    if revoke and status:
        raise typer.BadParameter("--revoke or --status, not both", param_hint="--status")
    env = dict(os.environ)
    obj = ctx.find_root().obj or {}
    user = read_toml(cfg.user_config_path(env))
    vault = cfg.resolve_vault(obj.get("vault"), env, Path.cwd(), user)
    folder = vault_trust.trust_folder(env)
    if revoke:
        removed = vault_trust.revoke(folder, vault)
        typer.echo(f"{'no longer trusted' if removed else 'was not trusted'}: {vault}")
        return
    if not status:
        vault_trust.trust(folder, vault, clock())
    report = trust_report(vault, read_toml(vault / cfg.VAULT_CONFIG_NAME), folder)
    if json_out:
        typer.echo(json.dumps({"vault": str(vault), **report.as_json()}, ensure_ascii=False))
        return
    typer.echo(f"{vault}: {report.summary()}")
    if not status:
        typer.echo(
            "a change to .vaultmem.toml or .vaultmem.d/ (a pull) asks again; "
            "`vaultmem trust --revoke` undoes it"
        )
