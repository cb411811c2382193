"""`eval`: measure retrieval quality against gold queries."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from vaultmem.cli import app, load_config
from vaultmem.cli.read_cmds import NO_PRIOR, NO_REVIEW, ranking_options

if TYPE_CHECKING:
    from vaultmem.config import Config
    from vaultmem.retrieval.memory_rank import RankingOptions

MODES = ("search", "vsearch", "query")


def _runner(
    config: Config, mode: str, k: int, ranking: RankingOptions | None
) -> Callable[[str], list[str]]:
    """query → ranked note paths for one mode, with its index or model opened once."""
    if mode == "search":
        from vaultmem.index.lexical import LexicalIndex
        from vaultmem.retrieval.search import search

        index = LexicalIndex.open(config.cache_dir)
        return lambda q: [h.path for h in search(config, q, limit=k, index=index, ranking=ranking)]
    if mode == "query":
        return _query_runner(config, k, ranking)
    from vaultmem.cli.vector_cmds import require_embedder
    from vaultmem.retrieval.vsearch import VectorIndex, vsearch

    embedder = require_embedder(config)
    vectors = VectorIndex(config, embedder)
    return lambda q: [
        h.path for h in vsearch(config, q, embedder, limit=k, index=vectors, ranking=ranking)
    ]


def _query_runner(
    config: Config, k: int, ranking: RankingOptions | None
) -> Callable[[str], list[str]]:
    """The full pipeline with the configured models; each skipped stage is told once."""
    from vaultmem.cli.query_cmds import stage_line
    from vaultmem.index.lexical import LexicalIndex
    from vaultmem.retrieval.query import QueryOptions, backends_for, query

    index = LexicalIndex.open(config.cache_dir)
    backends = backends_for(config)
    if backends.embedder is not None:
        from contextlib import suppress
        from dataclasses import replace

        from vaultmem.errors import IndexStateError
        from vaultmem.retrieval.vsearch import VectorIndex

        # Opened once for every query; without vectors `query` reports the skip itself.
        with suppress(IndexStateError):
            backends = replace(backends, vectors=VectorIndex(config, backends.embedder))
    options = QueryOptions(limit=k, ranking=ranking, expand=config.query_expand)
    told: set[str] = set()

    def run(text: str) -> list[str]:
        result = query(config, text, backends=backends, options=options, index=index)
        for stage in result.degraded:
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
    no_prior: bool = NO_PRIOR,
    no_review: bool = NO_REVIEW,
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
    ranking = ranking_options(config, no_prior, no_review)
    results = [
        evaluate(queries, _runner(config, m, k, ranking), mode=m, k=k) for m in dict.fromkeys(mode)
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
