"""`init`, `index` and `status`: setting a vault up and keeping its indexes current."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from vaultmem.cli import ProgressBar, app, load_config, open_vault

if TYPE_CHECKING:
    from vaultmem.config import Config
    from vaultmem.config_trust import TrustReport
    from vaultmem.embedding import EmbedReport


@app.command()
def init(
    ctx: typer.Context,
    path: Path = typer.Argument(
        None, help="Folder to make a vault (default: --vault, else the current folder)."
    ),
    git: bool = typer.Option(
        False,
        "--git",
        help="Also `git init` the folder when it is in no repository, and register "
        "vaultmem's merge driver (as `vaultmem git setup` does).",
    ),
    obsidian_types: bool = typer.Option(
        False,
        "--obsidian-types",
        help="Also add vaultmem's keys to .obsidian/types.json, one property type each "
        "(merged: entries already there are kept).",
    ),
    parents: bool = typer.Option(
        False, "--parents", "-p", help="Create the folder's missing parent folders too."
    ),
) -> None:
    """Make a folder a vaultmem vault: write .vaultmem.toml and the cache folder.

    Safe to rerun: existing files are kept. The cache gets a .gitignore of "*" so the
    indexes never enter git. The folder is created when its parent exists; a missing
    parent is an error unless --parents. With --git, notes merge with vaultmem's driver
    in this clone (run `vaultmem git setup` in every other clone).

    With --obsidian-types, .obsidian/types.json gets one property type per vaultmem
    key (your entries there are kept).

    Example:
        vaultmem init ~/notes --git
        vaultmem init ~/vaults/work/notes --parents
    """
    from vaultmem.workspace import init_vault

    obj = ctx.find_root().obj or {}
    target = (path or (Path(obj["vault"]) if obj.get("vault") else Path.cwd())).expanduser()
    created = init_vault(target, parents=parents)
    for item in created:
        typer.echo(f"created {item}")
    if git:
        _setup_git(ctx, target)
    if obsidian_types:
        _obsidian_types(ctx, target)
    typer.echo(f"vault ready: {target.resolve()} (next: vaultmem index)")


def _obsidian_types(ctx: typer.Context, vault: Path) -> None:
    """`init --obsidian-types`: the owned keys' types merged into .obsidian/types.json."""
    from vaultmem.errors import ConfigError
    from vaultmem.properties import merge_obsidian_types

    config = _new_vault_config(ctx, vault)
    path = config.vault / ".obsidian" / "types.json"
    try:
        added, kept = merge_obsidian_types(path, config.keys)
    except (ValueError, OSError) as exc:
        raise ConfigError(f"cannot add vaultmem's types: {exc}") from None
    typer.echo(f"{path.relative_to(config.vault)}: {len(added)} vaultmem properties added")
    for name in kept:
        typer.echo(f"{name}: kept your type in types.json, vaultmem writes another", err=True)


def _setup_git(ctx: typer.Context, vault: Path) -> None:
    """`init --git`: `git setup` for the vault just made, creating its repository."""
    from vaultmem.cli.git_cmds import report_setup
    from vaultmem.gitmerge.registration import setup_git

    report_setup(setup_git(_new_vault_config(ctx, vault), create_repo=True))


def _new_vault_config(ctx: typer.Context, vault: Path) -> Config:
    """The configuration of the vault `init` just made (the root options' cache folder)."""
    from vaultmem import config as cfg

    obj = ctx.find_root().obj or {}
    return cfg.load(
        vault_flag=str(vault),
        env=dict(os.environ),
        cwd=Path.cwd(),
        overrides={"cache_dir": obj.get("cache_dir")},
    )


@app.command()
def index(
    ctx: typer.Context,
    rebuild: bool = typer.Option(False, "--rebuild", help="Drop the indexes and start over."),
    no_embed: bool = typer.Option(
        False, "--no-embed", help="Update the keyword index only; skip the embedding sweep."
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print nothing on success."),
    json_out: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Bring the indexes up to date with the vault (only changed notes are read).

    Updates the keyword index, then embeds new fragments (like `embed`) unless --no-embed
    or no embedder is configured. Notes that fail to parse are reported and skipped (a
    note left with git conflict markers says so); the rest are indexed, and a warning is
    printed for each with an invalid vaultmem value or a key written twice. An
    unreachable embedding endpoint is one line on stderr: the keyword index is still
    brought up to date. Prints one summary line per stage.

    Example:
        vaultmem --vault example-vault index
    """
    from vaultmem.indexer import index_vault

    config = load_config(ctx)
    with ProgressBar("indexing", enabled=not (quiet or json_out)) as bar:
        report = index_vault(config, rebuild=rebuild, progress=bar)
    echo_repaired(report.healed, "keyword index rebuilt from the vault")
    for skip in report.skipped:
        typer.echo(f"skipped {skip.reason}", err=True)
    for path, warning in report.warnings:
        typer.echo(f"vaultmem: warning: {path}: {warning}", err=True)
    data: dict[str, object] = {
        "added": report.added,
        "updated": report.updated,
        "unchanged": report.unchanged,
        "removed": report.removed,
        "skipped": [{"path": s.path, "reason": s.reason} for s in report.skipped],
        "warnings": [{"path": p, "warning": w} for p, w in report.warnings],
        "seconds": round(report.seconds, 3),
        "rebuilt": report.rebuilt,
        "healed": report.healed,
    }
    if not quiet and not json_out:
        typer.echo(report.summary)
    if not no_embed:
        embedded = run_embed_step(config, quiet=quiet or json_out)
        if embedded is not None:
            data["embedding"] = embedded.as_json()
    if json_out:
        typer.echo(json.dumps(data))


def run_embed_step(config: Config, *, quiet: bool) -> EmbedReport | None:
    """The embedding stage of `index`: never fatal, one stderr line when it can't run."""
    from vaultmem.embedding import embed_vault
    from vaultmem.errors import EndpointError, LockBusy
    from vaultmem.inference.embedders import embedder_for

    embedder = embedder_for(config)
    if embedder is None:
        return None
    try:
        with ProgressBar("embedding", enabled=not quiet) as bar:
            report = embed_vault(config, embedder, progress=bar)
    except (EndpointError, LockBusy) as exc:
        typer.echo(f"vaultmem: embeddings skipped: {exc}", err=True)
        return None
    echo_repaired(report.healed, "rebuilt from the vault")
    if not quiet:
        typer.echo(report.summary)
    return report


def echo_repaired(healed: str, what: str) -> None:
    """The one stderr line saying a damaged cache was found and rebuilt (even with -q)."""
    if healed:
        typer.echo(f"vaultmem: repaired: {healed}; {what}", err=True)


@app.command()
def status(
    ctx: typer.Context,
    json_out: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Show notes, what the index holds, what is stale, the cache size and embedding coverage.

    Example:
        vaultmem --vault example-vault status
    """
    from vaultmem import api

    vault = open_vault(ctx)
    config = vault.config
    info = api.status(vault)
    trusted = _trust_report(config.vault)
    if json_out:
        typer.echo(json.dumps({**info.as_json(), "trust": trusted.as_json()}))
        return
    typer.echo(f"vault:        {config.vault}")
    typer.echo(f"trust:        {trusted.summary()}")
    typer.echo(f"notes:        {info.notes}")
    typer.echo(f"indexed:      {info.indexed}")
    typer.echo(
        f"stale:        {info.stale} ({info.new} new, {info.changed} changed, "
        f"{info.removed} removed)"
    )
    if info.skipped:
        typer.echo(f"skipped:      {info.skipped} (cannot be parsed: `vaultmem index` says why)")
    typer.echo(f"last index:   {info.last_index or 'never'}")
    if info.index_problem:
        typer.echo(f"index:        needs `vaultmem index` ({info.index_problem})")
    if info.note_warnings:
        typer.echo(
            f"warnings:     {len(info.note_warnings)} notes with invalid vaultmem values "
            "(treated as absent) or keys written twice (`status --json` lists them)"
        )
    typer.echo(f"cache:        {config.cache_dir} ({_size(info.cache_bytes)})")
    typer.echo(f"surfaced:     {info.surfaced} prompts logged by `surface`")
    for model, cov in info.embeddings.items():
        line = f"embeddings:   {cov['embedded']}/{cov['fragments']} fragments ({model})"
        if cov["unsplit_notes"]:
            line += f", {cov['unsplit_notes']} notes not yet embedded"
        typer.echo(line)


def _trust_report(vault: Path) -> TrustReport:
    """Whether the user trusts ``vault``'s own files, and what that applies."""
    from vaultmem import config as cfg
    from vaultmem.config_trust import trust_report
    from vaultmem.config_values import read_toml
    from vaultmem.vault_trust import trust_folder

    data = read_toml(vault / cfg.VAULT_CONFIG_NAME)
    return trust_report(vault, data, trust_folder(dict(os.environ)))


def _size(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"
