"""`init`, `index` and `status`: setting a vault up and keeping its indexes current."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from vaultmem.cli import app, load_config, stdout_is_tty

if TYPE_CHECKING:
    from vaultmem.config import Config
    from vaultmem.indexer import IndexReport


@app.command()
def init(
    ctx: typer.Context,
    path: Path = typer.Argument(
        None, help="Folder to make a vault (default: --vault, else the current folder)."
    ),
) -> None:
    """Make a folder a vaultmem vault: write .vaultmem.toml and the cache folder.

    Safe to rerun: existing files are kept. The cache gets a .gitignore of "*" so the
    indexes never enter git.

    Example:
        vaultmem init ~/notes
    """
    from vaultmem.workspace import init_vault

    obj = ctx.find_root().obj or {}
    target = path or (Path(obj["vault"]) if obj.get("vault") else Path.cwd())
    created = init_vault(target.expanduser())
    for item in created:
        typer.echo(f"created {item}")
    typer.echo(f"vault ready: {target.expanduser().resolve()} (next: vaultmem index)")


@app.command()
def index(
    ctx: typer.Context,
    rebuild: bool = typer.Option(False, "--rebuild", help="Drop the indexes and start over."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print nothing on success."),
    json_out: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Bring the search index up to date with the vault (only changed notes are read).

    Notes that fail to parse are reported and skipped; the rest are indexed. Prints one
    summary line: added, updated, unchanged, removed, skipped.

    Example:
        vaultmem --vault example-vault index
    """
    from vaultmem.indexer import index_vault

    config = load_config(ctx)
    if stdout_is_tty() and not quiet and not json_out:
        report = _index_with_bar(config, rebuild)
    else:
        report = index_vault(config, rebuild=rebuild)
    for skip in report.skipped:
        typer.echo(f"skipped {skip.reason}", err=True)
    if json_out:
        typer.echo(
            json.dumps(
                {
                    "added": report.added,
                    "updated": report.updated,
                    "unchanged": report.unchanged,
                    "removed": report.removed,
                    "skipped": [{"path": s.path, "reason": s.reason} for s in report.skipped],
                    "seconds": round(report.seconds, 3),
                    "rebuilt": report.rebuilt,
                }
            )
        )
    elif not quiet:
        typer.echo(report.summary)


class ProgressBar:
    """A progress bar on stderr, opened on the first update (when the total is known)."""

    def __init__(self, label: str) -> None:
        self.label = label
        self._bar: Any = None

    def __call__(self, done: int, total: int) -> None:
        if self._bar is None:
            self._bar = typer.progressbar(length=total, label=self.label, file=sys.stderr)
            self._bar.__enter__()
        self._bar.update(done - self._bar.pos)

    def close(self) -> None:
        """Finish the bar's line (safe when it never opened)."""
        if self._bar is not None:
            self._bar.__exit__(None, None, None)


def _index_with_bar(config: Config, rebuild: bool) -> IndexReport:
    from vaultmem.indexer import index_vault

    bar = ProgressBar("indexing")
    try:
        return index_vault(config, rebuild=rebuild, progress=bar)
    finally:
        bar.close()


@app.command()
def status(
    ctx: typer.Context,
    json_out: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Show the vault's notes, what the index holds, what is stale, and the cache size.

    Example:
        vaultmem --vault example-vault status
    """
    from vaultmem.workspace import vault_status

    config = load_config(ctx)
    info = vault_status(config)
    if json_out:
        typer.echo(json.dumps(info.as_json()))
        return
    typer.echo(f"vault:        {config.vault}")
    typer.echo(f"notes:        {info.notes}")
    typer.echo(f"indexed:      {info.indexed}")
    typer.echo(
        f"stale:        {info.stale} ({info.new} new, {info.changed} changed, "
        f"{info.removed} removed)"
    )
    typer.echo(f"last index:   {info.last_index or 'never'}")
    typer.echo(f"cache:        {config.cache_dir} ({_size(info.cache_bytes)})")


def _size(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"
