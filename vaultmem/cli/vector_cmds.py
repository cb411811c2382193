"""`embed`, `vsearch` and `similar`: the vector side of vaultmem."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import typer

from vaultmem.cli import ProgressBar, app, load_config
from vaultmem.cli.read_cmds import (
    COLLECTION,
    FOLDER,
    JSON,
    LIMIT,
    NO_PRIOR,
    NO_REVIEW,
    STATUS,
    TAG,
    TYPE,
    make_filters,
    print_hits,
    ranking_options,
)

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
def vsearch(
    ctx: typer.Context,
    query: str = typer.Argument(..., help="What you are looking for, in your own words."),
    limit: int = LIMIT,
    json_out: bool = JSON,
    folder: str = FOLDER,
    tag: str = TAG,
    type_: str = TYPE,
    status: str = STATUS,
    collection: str = COLLECTION,
    no_prior: bool = NO_PRIOR,
    no_review: bool = NO_REVIEW,
) -> None:
    """Semantic search: the notes whose fragments are nearest in meaning to the query.

    Each hit shows its score and its best fragment with the fragment's first line
    (--json adds line_end). Same filters, memory prior and review slots as `search`
    (--no-prior --no-review: the raw cosine similarity, nearest first).

    Example:
        vaultmem --vault example-vault vsearch "how do I deploy" -n 3
    """
    from vaultmem.retrieval.vsearch import vsearch as run_vsearch

    config = load_config(ctx)
    filters = make_filters(folder, tag, type_, status, collection)
    ranking = ranking_options(config, no_prior, no_review)
    embedder = require_embedder(config)
    hits = run_vsearch(config, query, embedder, limit=limit, filters=filters, ranking=ranking)
    print_hits(hits, json_out)


@app.command()
def similar(
    ctx: typer.Context,
    note: str = typer.Argument(..., help="Path, title, alias or file name of the note."),
    limit: int = LIMIT,
    json_out: bool = JSON,
    folder: str = FOLDER,
    tag: str = TAG,
    type_: str = TYPE,
    status: str = STATUS,
    collection: str = COLLECTION,
) -> None:
    """Notes closest in meaning to NOTE (by the mean of its fragment vectors).

    Example:
        vaultmem --vault example-vault similar "Redis for caching" -n 5
    """
    from vaultmem.lookup import resolve
    from vaultmem.retrieval.vsearch import similar as run_similar

    config = load_config(ctx)
    path = resolve(config, note)
    filters = make_filters(folder, tag, type_, status, collection)
    hits = run_similar(config, path, require_embedder(config), limit=limit, filters=filters)
    print_hits(hits, json_out)
