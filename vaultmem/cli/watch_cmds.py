"""`watch`: keep the indexes current while notes change (see :mod:`vaultmem.watcher`)."""

from __future__ import annotations

import json
import threading
from typing import TYPE_CHECKING

import typer

from vaultmem.cli import app, load_config

if TYPE_CHECKING:
    from vaultmem.watcher import WatchBatch


@app.command()
def watch(
    ctx: typer.Context,
    debounce: int = typer.Option(
        300,
        "--debounce",
        min=50,
        max=60_000,
        metavar="MS",
        help="Wait until the vault has been quiet this many milliseconds, then index.",
    ),
    no_embed: bool = typer.Option(
        False, "--no-embed", help="Update the keyword index only; skip the embedding sweep."
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print nothing but warnings."),
    json_out: bool = typer.Option(
        False, "--json", help="One JSON object per batch on stdout (no progress lines)."
    ),
) -> None:
    """Watch the vault and index changed notes as they are saved, until stopped.

    Starts with one incremental `index` pass (a stale vault catches up), then waits for
    file events. A burst of them (a `git checkout`, a sync) is one batch: once the vault
    has been quiet for --debounce milliseconds, changed, new, renamed and deleted notes
    are indexed under the vault lock, then embedded like `index` does (unless --no-embed
    or no embedder is configured). The cache folder, .git/, .obsidian/, excluded folders,
    non-note files and editor temp files are ignored. One line per batch on stderr
    ("indexed 3 changed, 1 removed in 45 ms"). A busy lock (a running `index`) is waited
    for; a failed embedding sweep is one warning and is retried with the next batch.

    Ctrl-C or SIGTERM stops it cleanly with exit status 0: the lock is released, and
    a pass cut short is finished by the next `index` or `watch`.

    Example:
        vaultmem --vault ~/notes watch
        vaultmem --vault ~/notes watch --json --no-embed | jq .changed
    """
    from vaultmem.inference.http import BREAKERS, SERVER_BREAKER_S
    from vaultmem.watcher import VaultWatcher

    BREAKERS.window = SERVER_BREAKER_S  # a long-lived process: a dead endpoint, a minute off
    config = load_config(ctx)
    printer = _BatchPrinter(quiet=quiet, json_out=json_out)
    watcher = VaultWatcher(
        config,
        debounce_ms=debounce,
        embed=not no_embed,
        on_batch=printer.batch,
        on_warning=printer.warning,
    )
    printer.progress(f"watching {config.vault} (Ctrl-C to stop)")
    try:
        watcher.run(threading.Event())
    except KeyboardInterrupt:  # SIGINT, or SIGTERM (Terminated): the way a watch ends
        printer.progress("watch stopped")


class _BatchPrinter:
    """Renders batches and warnings for the terminal, a log or --json."""

    def __init__(self, *, quiet: bool, json_out: bool) -> None:
        self.quiet = quiet
        self.json_out = json_out

    def progress(self, line: str) -> None:
        """A progress line on stderr (not with --quiet or --json)."""
        if not (self.quiet or self.json_out):
            typer.echo(line, err=True)

    def warning(self, line: str) -> None:
        """A warning on stderr, always."""
        typer.echo(f"vaultmem: warning: {line}", err=True)

    def batch(self, batch: WatchBatch) -> None:
        """One batch: a JSON line on stdout, or its summary on stderr."""
        from vaultmem.cli.index_cmds import echo_repaired

        echo_repaired(batch.index.healed, "keyword index rebuilt from the vault")
        if batch.embed is not None:
            echo_repaired(batch.embed.healed, "rebuilt from the vault")
        if self.json_out:
            typer.echo(json.dumps(batch.as_json()))
        else:
            self.progress(batch.summary)
