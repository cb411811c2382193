"""`eval`: measure retrieval quality against gold queries."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from vaultmem.cli import app, load_config
from vaultmem.cli.options import RANKING_FLAGS

if TYPE_CHECKING:
    from vaultmem.config import Config

MODES = {"search": "keyword", "vsearch": "semantic", "query": "hybrid"}


def _runner(
    config: Config, mode: str, k: int, prior: bool, review: bool
) -> Callable[[str], list[str]]:
    """query → ranked note paths for one mode, with its index and models opened once;
    each stage `query` skipped is told once."""
    from vaultmem import api
    from vaultmem.cli import clock
    from vaultmem.cli.read_cmds import stage_line
    from vaultmem.model import SearchRequest

    vault = api.OpenVault(config, warm=True)
    if mode == "vsearch":
        vault.embedder(required=True)  # no vectors is an error before the first query
    told: set[str] = set()

    def run(text: str) -> list[str]:
        request = SearchRequest(text, MODES[mode], k, prior=prior, review=review)
        result = api.search(vault, request, now=clock())
        for stage in result.query.degraded if result.query is not None else ():
            line = stage_line(stage)
            if line not in told:
                told.add(line)
                typer.echo(line, err=True)
        return [h.path for h in result.hits]

    return run


@app.command(name="eval")
def eval_(
    ctx: typer.Context,
    gold: Path = typer.Argument(
        ..., exists=True, dir_okay=False, help='Gold JSONL: {"qid", "query", "relevant": [...]}.'
    ),
    mode: list[str] = typer.Option(
        ["search"], "--mode", "-m", help=f"Mode to evaluate (repeatable): {', '.join(MODES)}."
    ),
    k: int = typer.Option(10, "-k", min=1, max=1000, help="Results retrieved per query."),
    misses: bool = typer.Option(False, "--misses", help="List the queries each mode missed."),
    json_out: bool = typer.Option(False, "--json", help="One JSON object per mode."),
    no_prior: bool = RANKING_FLAGS["no_prior"],
    no_review: bool = RANKING_FLAGS["no_review"],
) -> None:
    """Score search modes on gold queries: recall@1/5/10, MRR@10 and nDCG@10 per mode.

    Each mode ranks as its command does by default (memory prior and review slots
    included); --no-prior/--no-review measure without them. A relevant entry matches a
    note by path, path without .md, or file stem, so the
    benchmark's own queries.jsonl works as is. Prints a table, then one JSON line per
    mode (only the JSON with --json).

    Example:
        vaultmem --vault example-vault eval tests/data/example_queries.jsonl -m search -m query
    """
    from vaultmem.evaluation import METRICS, evaluate, read_gold

    unknown = [m for m in mode if m not in MODES]
    if unknown:
        raise typer.BadParameter(f"unknown mode {unknown[0]!r} (choose from {', '.join(MODES)})")
    config = load_config(ctx)
    queries = read_gold(gold)
    results = [
        evaluate(queries, _runner(config, m, k, not no_prior, not no_review), mode=m, k=k)
        for m in dict.fromkeys(mode)
    ]
    if not json_out:
        typer.echo(f"{len(queries)} queries, top {k}")
        typer.echo("| mode | " + " | ".join(METRICS) + " | seconds |")
        typer.echo("|---|" + "---:|" * (len(METRICS) + 1))
        for r in results:
            cells = " | ".join(f"{r.scores[name]:.3f}" for name in METRICS)
            typer.echo(f"| {r.mode} | {cells} | {r.seconds:.1f} |")
    for r in results:
        payload: dict[str, object] = {"mode": r.mode, "queries": len(queries), **r.scores}
        if misses:
            payload["misses"] = [{"qid": q.qid, "query": q.query} for q in r.misses]
        typer.echo(json.dumps(payload, ensure_ascii=False))
        if misses and not json_out:
            for q in r.misses:
                typer.echo(f"  {r.mode} missed {q.qid}: {q.query}")
