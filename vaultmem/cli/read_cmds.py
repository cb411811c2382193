"""`search` and `get`: read commands (they never write a note)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import typer

from vaultmem.cli import app, load_config

if TYPE_CHECKING:
    from vaultmem.config import Config
    from vaultmem.retrieval.hits import Filters, Hit
    from vaultmem.retrieval.memory_rank import RankingOptions

LIMIT = typer.Option(10, "-n", "--limit", min=1, max=1000, help="How many results.")
JSON = typer.Option(False, "--json", help="One JSON object per line.")
FOLDER = typer.Option(None, "--folder", help="Only notes under this folder.")
TAG = typer.Option(None, "--tag", help="Only notes with this tag (nested tags match: a ⊃ a/b).")
TYPE = typer.Option(None, "--type", help="Only notes of this type (decision, preference, …).")
STATUS = typer.Option(
    None, "--status", help="Only notes in this status (forgotten/archived are hidden otherwise)."
)
COLLECTION = typer.Option(None, "--collection", help="Only notes of this configured collection.")
NO_PRIOR = typer.Option(
    False, "--no-prior", help="Rank by relevance alone (no recency/confidence/quality/pin prior)."
)
NO_REVIEW = typer.Option(
    False, "--no-review", help="Give no result slots to fading notes due for review."
)


def ranking_options(config: Config, no_prior: bool, no_review: bool) -> RankingOptions | None:
    """The memory-aware ranking the flags and config ask for (None: plain retrieval order)."""
    from vaultmem.cli import clock
    from vaultmem.retrieval.memory_rank import RankingOptions

    weight = 0.0 if no_prior else config.prior_weight
    share = 0.0 if no_review else config.review_share
    if weight == 0 and share == 0:
        return None
    return RankingOptions(now=clock(), weight=weight, review_share=share)


def make_filters(
    folder: str | None,
    tag: str | None,
    type_: str | None,
    status: str | None,
    collection: str | None,
) -> Filters:
    """The Filters value of the shared filter flags."""
    from vaultmem.retrieval.hits import Filters

    return Filters(folder=folder, tag=tag, type=type_, status=status, collection=collection)


def print_hits(hits: list[Hit], json_out: bool) -> None:
    """Render hits: JSON lines, or a numbered list with the best line of each."""
    if json_out:
        for hit in hits:
            typer.echo(json.dumps(hit.as_json(), ensure_ascii=False))
        return
    if not hits:
        typer.echo("no results", err=True)
        return
    for rank, hit in enumerate(hits, start=1):
        mark = "  (review)" if hit.review else ""
        typer.echo(f"{rank:>2}. {hit.title}  [{hit.path}]  {hit.score:.2f}{mark}")
        if hit.snippet:
            typer.echo(f"    {hit.line}: {hit.snippet}")


@app.command()
def search(
    ctx: typer.Context,
    query: str = typer.Argument(..., help="Words to look for (any text is safe)."),
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
    """Keyword search (BM25F over titles, aliases, headings, tags and text).

    Each hit shows its path, score and best matching line with its line number.
    Forgotten and archived notes are left out unless --status asks for them. A bounded
    memory prior (recency, confidence, quality, pins) reorders close results and
    superseded notes sink below their successors; up to 30% of the slots go to
    matching notes that are fading (marked "review"; `touch` one to reinforce it).

    Example:
        vaultmem --vault example-vault search "redis cache invalidation" -n 5
    """
    from vaultmem.retrieval.search import search as run_search

    config = load_config(ctx)
    filters = make_filters(folder, tag, type_, status, collection)
    ranking = ranking_options(config, no_prior, no_review)
    hits = run_search(config, query, limit=limit, filters=filters, ranking=ranking)
    print_hits(hits, json_out)


@app.command()
def get(
    ctx: typer.Context,
    note: str = typer.Argument(..., help="Path, title, alias or file name of the note."),
    json_out: bool = typer.Option(
        False, "--json", help="Print {path, title, frontmatter, body, tags, aliases, links}."
    ),
) -> None:
    """Print one note, found by path, title or alias.

    An ambiguous name is an error that lists every candidate.

    Example:
        vaultmem --vault example-vault get "Release process" --json
    """
    from vaultmem.lookup import find_note

    config = load_config(ctx)
    found = find_note(config, note)
    if json_out:
        typer.echo(json.dumps(found.as_json(), ensure_ascii=False))
    else:
        typer.echo(found.text, nl=not found.text.endswith("\n"))
