"""`search` and `get`: read commands (they never write a note)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import typer

from vaultmem.cli import app, load_config

if TYPE_CHECKING:
    from vaultmem.retrieval.hits import Filters, Hit

LIMIT = typer.Option(10, "-n", "--limit", min=1, max=1000, help="How many results.")
JSON = typer.Option(False, "--json", help="One JSON object per line.")
FOLDER = typer.Option(None, "--folder", help="Only notes under this folder.")
TAG = typer.Option(None, "--tag", help="Only notes with this tag (nested tags match: a ⊃ a/b).")
TYPE = typer.Option(None, "--type", help="Only notes of this type (decision, preference, …).")
STATUS = typer.Option(
    None, "--status", help="Only notes in this status (forgotten/archived are hidden otherwise)."
)
COLLECTION = typer.Option(None, "--collection", help="Only notes of this configured collection.")


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
        typer.echo(f"{rank:>2}. {hit.title}  [{hit.path}]  {hit.score:.2f}")
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
) -> None:
    """Keyword search (BM25F over titles, aliases, headings, tags and text).

    Each hit shows its path, score and best matching line with its line number.
    Forgotten and archived notes are left out unless --status asks for them.

    Example:
        vaultmem --vault example-vault search "redis cache invalidation" -n 5
    """
    from vaultmem.retrieval.search import search as run_search

    config = load_config(ctx)
    filters = make_filters(folder, tag, type_, status, collection)
    print_hits(run_search(config, query, limit=limit, filters=filters), json_out)


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
