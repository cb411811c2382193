"""`query`: the hybrid pipeline (BM25 + vectors + expansion + reranking) on the CLI."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import typer

from vaultmem.cli import app
from vaultmem.cli.options import ALL_VAULTS, JSON, LIMIT, VAULT_NAMES, search_options
from vaultmem.cli.read_cmds import run_search, search_across, stage_lines, stale_hint
from vaultmem.model import Filters, SearchRequest

if TYPE_CHECKING:
    from vaultmem.retrieval.query_types import QueryResult, StageScore, Trace


def _cell(score: StageScore | None) -> str:
    if score is None:
        return f"{'-':>5}  {'-':>9}"
    return f"{score.rank:>5}  {score.score:>9.4f}"


def _trace_table(trace: Trace) -> list[str]:
    reached = [f"      reached {trace.reached.describe()}"] if trace.reached else []
    rows: list[tuple[str, StageScore | None]] = [*trace.lists]
    rows += [
        ("fused", trace.fused),
        ("rerank", trace.rerank),
        ("blended", trace.blended),
        ("final", trace.final),
    ]
    width = max(len(name) for name, _ in rows)
    out = [*reached, f"      {'stage':<{width}}  {'rank':>5}  {'score':>9}"]
    out += [f"      {name:<{width}}  {_cell(score)}" for name, score in rows]
    if trace.fragment:
        start, end = trace.fragment
        note = ", demoted as a near-duplicate" if trace.demoted else ""
        out.append(f"      fragment lines {start}-{end} (chosen by {trace.fragment_source}){note}")
    if trace.memory is not None:
        m = trace.memory
        flags = [
            name
            for name, on in (
                ("pinned", m.pinned),
                ("superseded", m.superseded),
                ("review", m.review),
            )
            if on
        ]
        if m.newer_version:
            flags.append(f"below its newer version {m.newer_version}")
        if m.contradicted_by:
            flags.append(f"below {m.contradicted_by}, which contradicts it")
        extra = f" ({', '.join(flags)})" if flags else ""
        parts = ""
        if m.recency is not None:
            parts = (
                f" (recency {m.recency:.3f}, confidence {m.confidence:.3f}, "
                f"quality {m.quality:.3f}; weight {m.weight:g})"
            )
        moved = f"{m.score - m.relevance:+.3f} → {m.score:.3f}"
        ranks = ""
        if trace.before_prior is not None and trace.after_prior is not None:
            ranks = f", rank {trace.before_prior.rank} → {trace.after_prior.rank}"
        out.append(
            f"      memory: relevance {m.relevance:.3f}, prior {m.prior:.3f}{parts}{extra}: "
            f"{moved}{ranks}"
        )
    return out


def print_explain(result: QueryResult) -> None:
    """The human ``--explain``: every stage and list, then each hit with its stage table."""
    typer.echo("stages:")
    width = max((len(s.name) for s in result.stages), default=0)
    for stage in result.stages:
        typer.echo(f"  {stage.name:<{width}}  {stage.status:<8}  {stage.detail}")
    if result.expansion is not None:
        exp = result.expansion
        typer.echo("expansion:" + (" (cached)" if exp.cached else ""))
        for variant in exp.lexical:
            typer.echo(f"  lexical       {variant}")
        for variant in exp.semantic:
            typer.echo(f"  semantic      {variant}")
        if exp.hypothetical:
            typer.echo(f"  hypothetical  {exp.hypothetical}")
    if result.route is not None:
        route = result.route
        order = " (oldest first)" if route.oldest_first and route.name == "when" else ""
        entity = f", note {route.entity}" if route.entity else ""
        typer.echo(f"route: {route.name}{order}{entity}  [{route.rule}]")
    if result.lists:
        typer.echo("lists:")
        for spec in result.lists:
            typer.echo(f"  {spec.name:<14} w={spec.weight:g}  {spec.hits:>3} hits  {spec.text!r}")
    if not result.hits:
        typer.echo("no results", err=True)
        return
    typer.echo("results:")
    for rank, (hit, trace) in enumerate(zip(result.hits, result.traces, strict=True), start=1):
        day = f"{hit.date}  " if hit.date else ""
        typer.echo(f"{rank:>2}. {day}{hit.title}  [{hit.path}]  {hit.score:.3f} {hit.score_kind}")
        if hit.snippet:
            typer.echo(f"    {hit.line}: {hit.snippet}")
        for line in _trace_table(trace):
            typer.echo(line)


@app.command()
@search_options()
def query(
    ctx: typer.Context,
    text: str = typer.Argument(..., metavar="QUERY", help="What you are looking for."),
    limit: int = LIMIT,
    json_out: bool = JSON,
    candidates: int = typer.Option(
        30,
        "--candidates",
        min=1,
        max=1000,
        metavar="N",
        help="How many fused results the reranker sees.",
    ),
    intent: str = typer.Option(
        None,
        "--intent",
        metavar="TEXT",
        help="why, when, entity or what: answer by that route (default: detected from "
        "the question). Any other text: what you are after (steers expansion, fragment "
        "choice and reranking; turns off the strong-signal bypass).",
    ),
    explain: bool = typer.Option(
        False, "--explain", help="Show every stage, and each result's rank and score at each."
    ),
    expand: bool = typer.Option(
        None,
        "--expand/--no-expand",
        help="LLM query expansion (default: [query] expand in the config, else off).",
        show_default=False,
    ),
    no_rerank: bool = typer.Option(False, "--no-rerank", help="Skip reranking."),
    quiet: bool = typer.Option(
        False, "--quiet", "-q", help="No stderr line for stages skipped for want of a model."
    ),
    vault_names: list[str] = VAULT_NAMES,
    all_vaults: bool = ALL_VAULTS,
    filters: Filters = Filters(),
    prior: bool = True,
    review: bool = True,
) -> None:
    """Hybrid search: keywords and vectors, LLM query expansion, reranking, fusion.

    BM25 probe → expansion by the LLM (opt-in: --expand or [query] expand = true; skipped
    when the keyword match is already strong and no --intent is given) → BM25 and vector
    search of the query and each variant, and of the notes' leads (title and opening) →
    z-score fusion → reranking of the best fragment per note → position-aware
    blend → near-duplicates demoted → memory prior and review slots (as in `search`).
    Every model is optional: without an LLM there is no
    expansion, without a reranker the fused order stands, without an embedder only BM25
    runs; each missing stage is one stderr line (none with --quiet; with --explain they
    are in the stage list instead). Same filters, -n and --json as `search`; with
    --explain --json each line has an "explain" object (stages, lists, expansion, and
    the result's rank and score at every stage).

    Intent routes (--intent why|when|entity|what, else detected from the question and
    shown in --explain): why (a question starting "why", "how come", "what led to", or
    asking the reason for) favours decisions and follows supersedes, superseded_by,
    caused_by, contradicts and refines links up to two hops from the best hits (each hop
    halves the score; the current decision comes before the one it superseded); when
    ("when did", "since when", "what date", "how long ago", "timeline"; not "when
    is/does/will", a schedule question) puts the dated notes
    in time order, newest first ("first"/"earliest": oldest first), with their date;
    entity ("who is X", "what do we know about X", "tell me about X", X a note's title or
    alias) puts X's note first, then the notes linking to and from it; what is the
    pipeline alone.

    --vault (repeatable, after `query`) or --all-vaults asks several vaults and merges
    their hits, each naming its vault: each vault's scores are scaled by how well its
    best hit matches the question (its cosine, else its share of the keywords); a vault
    that cannot be searched is one warning line and the others answer.

    Example:
        vaultmem --vault example-vault query "that thing about caching we decided" -n 3
        vaultmem --vault example-vault query "why did we drop Memcached?" --explain
        vaultmem query "how do we deploy?" --vault work --vault ~/notes
    """
    from vaultmem import api
    from vaultmem.cli import clock, open_vault

    request = SearchRequest(
        text, "hybrid", limit, filters, prior, review, candidates, intent, expand, not no_rerank
    )
    if vault_names or all_vaults:
        search_across(ctx, request, vault_names, all_vaults, json_out, explain)
        return
    if not explain:
        found = run_search(ctx, request, json_out).query
        if not quiet and found is not None:
            for line in stage_lines(found.degraded):
                typer.echo(line, err=True)
        return
    result = api.search(open_vault(ctx), request, now=clock()).query
    assert result is not None
    if json_out:
        shared = result.explain_json()
        for hit, trace in zip(result.hits, result.traces, strict=True):
            payload = {**hit.as_json(), "explain": {**shared, **trace.as_json()}}
            typer.echo(json.dumps(payload, ensure_ascii=False))
        if not quiet:
            for line in stage_lines(result.degraded):
                typer.echo(line, err=True)
    else:
        print_explain(result)
    stale_hint(ctx)
