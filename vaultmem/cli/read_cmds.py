"""`search` and `get`: read commands (they never write a note)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

import typer

from vaultmem.cli import app, clock, open_vault
from vaultmem.cli.options import ALL_VAULTS, JSON, LIMIT, NOTES, VAULT_NAMES, search_options
from vaultmem.model import Filters, Hit, SearchRequest

if TYPE_CHECKING:
    from vaultmem.api import SearchResult, VaultHit
    from vaultmem.retrieval.memory_rank import Ranked
    from vaultmem.retrieval.query_types import Stage


def stage_line(stage: Stage) -> str:
    """The one stderr line of a skipped or failed stage."""
    return f"vaultmem: {stage.name} skipped: {stage.detail}"


def stage_lines(stages: Sequence[Stage]) -> list[str]:
    """The stderr lines of the degraded stages: one a stage, but one for all the stages
    an unreachable endpoint cost (its first failure says why)."""
    lines, said = [], set()
    for stage in stages:
        if stage.endpoint in said:
            continue
        if stage.endpoint:
            said.add(stage.endpoint)
            names = [s.name for s in stages if s.endpoint == stage.endpoint]
            lines.append(f"vaultmem: {', '.join(names)} skipped: {stage.detail}")
        else:
            lines.append(stage_line(stage))
    return lines


def print_hits(hits: Sequence[Hit | VaultHit], json_out: bool) -> None:
    """Render hits (of one vault, or of several, each naming its vault): JSON lines, or a
    numbered list with the best line of each."""
    if json_out:
        for hit in hits:
            typer.echo(json.dumps(hit.as_json(), ensure_ascii=False))
        return
    if not hits:
        typer.echo("no results", err=True)
        return
    for rank, hit in enumerate(hits, start=1):
        if isinstance(hit, Hit):
            _print_hit(rank, hit)
        else:
            _print_hit(rank, hit.hit, hit.vault, hit.score)


def _print_hit(rank: int, hit: Hit, vault: str = "", score: float | None = None) -> None:
    mark = "  (review)" if hit.review else ""
    day = f"{hit.date}  " if hit.date else ""  # `query`'s when route
    day += f"({vault}) " if vault else ""  # a search over several vaults
    shown = hit.score if score is None else score
    kind = hit.score_kind if score is None else "share"
    label = f" {kind}" if kind else ""
    typer.echo(f"{rank:>2}. {day}{hit.title}  [{hit.path}]  {shown:.2f}{label}{mark}")
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
    vault_names: list[str] = VAULT_NAMES,
    all_vaults: bool = ALL_VAULTS,
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

    --vault (repeatable, after `search`; with the global --vault too) or --all-vaults
    searches several vaults and merges their hits: each hit's score is divided by the
    most any note of its vault could score for the query, since BM25F scores of two
    indexes are not on one scale. Each hit names its vault: "(name)" before its title,
    "vault" in --json (with "vault_score", its score in its own vault).

    Example:
        vaultmem --vault example-vault search "redis cache invalidation" -n 5 --explain
        vaultmem search "release checklist" --vault work --vault ~/notes
    """
    request = SearchRequest(query, "keyword", limit, filters, prior, review)
    if vault_names or all_vaults:
        search_across(ctx, request, vault_names, all_vaults, json_out, explain)
        return
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
    stale_hint(ctx)


def search_across(
    ctx: typer.Context,
    request: SearchRequest,
    names: list[str],
    every: bool,
    json_out: bool,
    explain: bool = False,
) -> None:
    """`search`/`vsearch`/`query` with `--vault a --vault b` or `--all-vaults`: the merged
    hits, each naming its vault; a vault that cannot be searched is one stderr line, and
    the others still answer."""
    from vaultmem import api
    from vaultmem.cli.vaults_cmds import open_vaults

    if explain:
        raise typer.BadParameter(
            "--explain shows one vault's ranking: search one vault", param_hint="--explain"
        )
    opened, failed = open_vaults(ctx, names, every)
    if not opened and failed:
        raise failed[0][1]
    for name, error in failed:
        typer.echo(f"vaultmem: warning: vault {name}: {error}: not searched", err=True)
    found = api.search_vaults(opened, request, now=clock())
    print_hits(list(found.hits), json_out)
    for name, why in found.skipped:
        typer.echo(f"vaultmem: warning: vault {name}: {why}: not searched", err=True)
    for name, result in found.results:
        degraded = result.query.degraded if result.query is not None else ()
        for line in stage_lines(degraded):
            typer.echo(line.replace("vaultmem: ", f"vaultmem: vault {name}: ", 1), err=True)


def run_search(ctx: typer.Context, request: SearchRequest, json_out: bool) -> SearchResult:
    """Run a search of any mode and print its hits (the shared body of the search commands)."""
    from vaultmem import api

    result = api.search(open_vault(ctx), request, now=clock())
    print_hits(list(result.hits), json_out)
    stale_hint(ctx)
    return result


def stale_hint(ctx: typer.Context) -> None:
    """After a search: one stderr line when notes changed since the last `index`, as far
    as a cheap look can tell (:func:`vaultmem.api.index_changes`; never on stdout, so
    ``--json`` output stays JSON)."""
    from vaultmem import api

    changed = api.index_changes(open_vault(ctx))
    if changed:
        more = f" and {len(changed) - 3} more" if len(changed) > 3 else ""
        shown = ", ".join(changed[:3]) + more
        typer.echo(
            f"vaultmem: notes changed since the last index ({shown}): results may be out of "
            "date; run `vaultmem index`",
            err=True,
        )


@app.command()
def get(
    ctx: typer.Context,
    notes: list[str] = NOTES,
    json_out: bool = typer.Option(
        False,
        "--json",
        help="Print {path, title, frontmatter, body, tags, aliases, links}, one a line.",
    ),
) -> None:
    """Print notes, found by path, title or alias.

    An ambiguous name is an error that lists every candidate. With several names each
    note comes under a `==> path <==` line (--json: one object per line); a name that
    finds no note is one error line on stderr, the others are still printed, and the
    exit status is 1.

    Example:
        vaultmem --vault example-vault get "Release process" --json
        vaultmem --vault example-vault get "Redis for caching" Harbor
    """
    from vaultmem import api

    looked = api.get_each(open_vault(ctx), notes)
    shown = 0
    for one in looked:
        if one.found is None:
            typer.echo(f"vaultmem: error: {one.error}", err=True)
            continue
        found, shown = one.found, shown + 1
        if json_out:
            typer.echo(json.dumps(found.as_json(), ensure_ascii=False))
            continue
        if len(notes) > 1:
            # As head(1) shows several files: a blank line, then the next one's header.
            if shown > 1:
                typer.echo()
            typer.echo(f"==> {found.note.path} <==")
        typer.echo(found.text, nl=not found.text.endswith("\n"))
    codes = [one.error.exit_code for one in looked if one.error is not None]
    if codes:
        raise typer.Exit(max(codes))
