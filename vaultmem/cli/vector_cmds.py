"""`embed`, `vsearch` and `similar`: the vector side of vaultmem."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import typer

from vaultmem.cli import ProgressBar, app, clock, load_config, open_vault
from vaultmem.cli.options import ALL_VAULTS, JSON, LIMIT, NOTE, VAULT_NAMES, search_options
from vaultmem.cli.read_cmds import print_hits, run_search, search_across
from vaultmem.model import Filters, SearchRequest

if TYPE_CHECKING:
    from vaultmem.config import Config
    from vaultmem.inference.base import Embedder


def require_embedder(config: Config) -> Embedder:
    """The configured embedder, or a one-line error when vectors are switched off."""
    from vaultmem.errors import ConfigError
    from vaultmem.inference.embedders import embedder_for

    embedder = embedder_for(config)
    if embedder is None:
        raise ConfigError('no embedder configured (embedder = "none"); vectors are off')
    return embedder


@app.command()
def embed(
    ctx: typer.Context,
    force: bool = typer.Option(False, "--force", help="Re-embed every fragment."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print nothing on success."),
    json_out: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Embed every fragment that lacks a vector for the current model (the cron sweep).

    Resumable and idempotent: a sweep killed half-way and run again finishes the job
    with no duplicate or missing vector. Vectors of notes that are gone are removed.
    A progress bar on a terminal, nothing but the summary otherwise. Exit status:
    0 done, 1 failed, 75 another sweep holds the vault's embed lock (try later).
    Run `index` first: `embed` works from what the index knows.

    Example:
        */30 * * * *  vaultmem --vault ~/notes embed --quiet
    """
    from vaultmem.cli.index_cmds import echo_repaired
    from vaultmem.embedding import embed_vault

    config = load_config(ctx)
    embedder = require_embedder(config)
    with ProgressBar("embedding", enabled=not (quiet or json_out)) as bar:
        report = embed_vault(config, embedder, force=force, progress=bar)
    echo_repaired(report.healed, "rebuilt from the vault")
    for path in report.skipped:
        typer.echo(f"skipped {path}: changed since the last index (run `vaultmem index`)", err=True)
    if json_out:
        typer.echo(json.dumps(report.as_json()))
    elif not quiet:
        typer.echo(report.summary)


@app.command()
@search_options()
def vsearch(
    ctx: typer.Context,
    query: str = typer.Argument(
        ..., metavar="QUERY", help="What you are looking for, in your own words."
    ),
    limit: int = LIMIT,
    json_out: bool = JSON,
    vault_names: list[str] = VAULT_NAMES,
    all_vaults: bool = ALL_VAULTS,
    filters: Filters = Filters(),
    prior: bool = True,
    review: bool = True,
) -> None:
    """Semantic search: the notes whose fragments are nearest in meaning to the query.

    Each hit shows its score and its best fragment with the fragment's first line
    (--json adds line_end). Same filters, memory prior and review slots as `search`
    (--no-prior --no-review: the raw cosine similarity, nearest first). --vault
    (repeatable, after `vsearch`) or --all-vaults searches several vaults and merges
    their hits by cosine, each naming its vault; a vault that cannot be searched is one
    warning line and the others answer.

    Example:
        vaultmem --vault example-vault vsearch "how do I deploy" -n 3
        vaultmem vsearch "where do sessions live" --all-vaults
    """
    request = SearchRequest(query, "semantic", limit, filters, prior, review)
    if vault_names or all_vaults:
        search_across(ctx, request, vault_names, all_vaults, json_out)
        return
    run_search(ctx, request, json_out)


@app.command()
@search_options(ranking=False)
def similar(
    ctx: typer.Context,
    note: str = NOTE,
    limit: int = LIMIT,
    json_out: bool = JSON,
    filters: Filters = Filters(),
) -> None:
    """Notes closest in meaning to NOTE (by the mean of its fragment vectors).

    Example:
        vaultmem --vault example-vault similar "Redis for caching" -n 5
    """
    from vaultmem import api

    hits = api.similar(open_vault(ctx), note, limit=limit, filters=filters, now=clock())
    print_hits(hits, json_out)
