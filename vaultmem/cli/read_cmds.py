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
    from vaultmem.retrieval.memory_rank import Ranked


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
        _print_hit(rank, hit)


def _print_hit(rank: int, hit: Hit) -> None:
    mark = "  (review)" if hit.review else ""
    day = f"{hit.date}  " if hit.date else ""  # `query`'s when route
    typer.echo(f"{rank:>2}. {day}{hit.title}  [{hit.path}]  {hit.score:.2f}{mark}")
    if hit.snippet:
        typer.echo(f"    {hit.line}: {hit.snippet}")


def explain_line(item: Ranked, rank: int) -> str:
    """What ranked one keyword hit: its BM25F score and rank, then what the prior did."""
    line = f"      bm25 {item.retrieval:.4f} (rank {item.position}), relevance {item.relevance:.3f}"
    if item.recency is None:
        return f"{line}; no memory state: score {item.scaled:.4f} (rank {rank})"
    parts = f"recency {item.recency:.3f}, confidence {item.confidence:.3f}"
    flags = [name for name, on in (("pinned", item.pinned), ("superseded", item.superseded)) if on]
    if item.newer_version:
        flags.append(f"below its newer version {item.newer_version}")
    if item.contradicted_by:
        flags.append(f"below {item.contradicted_by}, which contradicts it")
    if item.review:
        flags.append("review")
    extra = f" ({', '.join(flags)})" if flags else ""
    return (
        f"{line}; prior {item.prior:.3f} ({parts}, quality {item.quality:.3f}; weight "
        f"{item.weight:g}){extra}: {item.score - item.relevance:+.3f} → {item.score:.3f} × "
        f"{item.scale:.4f} = {item.scaled:.4f} (rank {rank})"
    )


@app.command()
@search_options()
def search(
    ctx: typer.Context,
    query: str = typer.Argument(..., metavar="QUERY", help="Words to look for (any text is safe)."),
    limit: int = LIMIT,
    json_out: bool = JSON,
    explain: bool = typer.Option(
        False, "--explain", help="Show each hit's BM25F score and rank and what the prior did."
    ),
    filters: Filters = Filters(),
    prior: bool = True,
    review: bool = True,
) -> None:
    """Keyword search (BM25F over titles, aliases, headings, tags and text).

    Each hit shows its path, score and best matching line with its line number. The
    score is the one hits are ranked by: BM25F moved by a bounded memory prior
    (recency, confidence, quality, pins: close results reorder) and by the rules that
    list a successor above the note it superseded and a later note above an earlier one
    it contradicts; up to 30% of the slots go to matching notes that are fading (marked
    "review"; `touch` one to reinforce it). --explain shows each hit's BM25F score and
    rank and what the prior did (with --json: an "explain" object per hit). Forgotten
    and archived notes are left out unless --status asks for them. A short last word
    of a one-word query, and any word the vault lacks, also match the words they start.

    Example:
        vaultmem --vault example-vault search "redis cache invalidation" -n 5 --explain
    """
    request = SearchRequest(query, "keyword", limit, filters, prior, review)
    if not explain:
        run_search(ctx, request, json_out)
        return
    from vaultmem import api

    result = api.search(open_vault(ctx), request, now=clock())
    hits, ranked = list(result.hits), list(result.ranked)
    if json_out:
        parts: list[dict[str, object] | None] = [r.as_json() for r in ranked]
        for hit, explained in zip(hits, parts or [None] * len(hits), strict=True):
            typer.echo(json.dumps({**hit.as_json(), "explain": explained}, ensure_ascii=False))
        return
    if not hits:
        typer.echo("no results", err=True)
    for rank, hit in enumerate(hits, start=1):
        _print_hit(rank, hit)
        if ranked:
            typer.echo(explain_line(ranked[rank - 1], rank))
    if hits and not ranked:
        typer.echo("(--no-prior --no-review: BM25F order and scores)")


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
