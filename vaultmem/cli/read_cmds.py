"""`search` and `get`: read commands (they never write a note)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import typer

from vaultmem.cli import app, clock, open_vault
from vaultmem.cli.options import JSON, LIMIT, search_options
from vaultmem.model import Filters, SearchRequest

if TYPE_CHECKING:
    from vaultmem.api import SearchResult
    from vaultmem.model import Hit


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
        day = f"{hit.date}  " if hit.date else ""  # `query`'s when route
        typer.echo(f"{rank:>2}. {day}{hit.title}  [{hit.path}]  {hit.score:.2f}{mark}")
        if hit.snippet:
            typer.echo(f"    {hit.line}: {hit.snippet}")


@app.command()
@search_options()
def search(
    ctx: typer.Context,
    query: str = typer.Argument(..., metavar="QUERY", help="Words to look for (any text is safe)."),
    limit: int = LIMIT,
    json_out: bool = JSON,
    filters: Filters = Filters(),
    prior: bool = True,
    review: bool = True,
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
    run_search(ctx, SearchRequest(query, "keyword", limit, filters, prior, review), json_out)


def run_search(ctx: typer.Context, request: SearchRequest, json_out: bool) -> SearchResult:
    """Run a search of any mode and print its hits (the shared body of the search commands)."""
    from vaultmem import api

    result = api.search(open_vault(ctx), request, now=clock())
    print_hits(list(result.hits), json_out)
    return result


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
    from vaultmem import api

    found = api.get(open_vault(ctx), note)
    if json_out:
        typer.echo(json.dumps(found.as_json(), ensure_ascii=False))
    else:
        typer.echo(found.text, nl=not found.text.endswith("\n"))
