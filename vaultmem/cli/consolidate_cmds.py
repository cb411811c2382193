"""`consolidate`: merge near-duplicate memories into one note."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import typer

from vaultmem.cli import app, clock, open_vault

if TYPE_CHECKING:
    from vaultmem.memory.clusters import Cluster, Consolidation

_VERBS = {
    "merged": "merged into {merged}",
    "kept_apart": "kept apart (linked related)",
    "contradicts": "contradict each other (linked contradicts)",
    "reported": "reported",
    "failed": "failed",
}
_PLANNED = {
    "merge": "would merge",
    "ask": "would ask the LLM",
    "review": "for review (no LLM configured)",
    "loose": "too loose to merge",
}


def _line(n: int, cluster: Cluster) -> str:
    if cluster.outcome == "planned":
        what = _PLANNED.get(cluster.action, cluster.action)
    else:
        what = _VERBS.get(cluster.outcome, cluster.outcome).format(merged=cluster.merged)
    why = f": {cluster.reason}" if cluster.reason else ""
    return f"cluster {n}: cohesion {cluster.cohesion:.2f}, {what}{why}"


def _print(report: Consolidation, json_out: bool) -> None:
    for n, cluster in enumerate(report.clusters, 1):
        if json_out:
            typer.echo(json.dumps(cluster.as_json(), ensure_ascii=False))
            continue
        typer.echo(_line(n, cluster))
        for path in cluster.members:
            typer.echo(f"  {path}")
    for warning in report.warnings:
        typer.echo(f"vaultmem: {warning}", err=True)
    missing = f", {report.unembedded} without vectors left out" if report.unembedded else ""
    tail = " (dry run: nothing written)" if report.dry_run else ""
    typer.echo(
        f"{len(report.clusters)} cluster(s) among {report.notes} note(s) in "
        f"{', '.join(f or '.' for f in report.folders)} by {report.similarity} "
        f"(link ≥ {report.bands.link:.2f}){missing}{tail}",
        err=True,
    )


@app.command()
def consolidate(
    ctx: typer.Context,
    folder: str = typer.Option(
        None,
        "--folder",
        metavar="FOLDER",
        help="Only this folder (default: the inbox and memory folders; . for the whole vault).",
    ),
    threshold: float = typer.Option(
        None,
        "--threshold",
        min=0.0,
        max=1.0,
        metavar="X",
        help="Similarity that links two notes (default 0.83 cosine, 0.5 word shingles).",
    ),
    dry_run: bool = typer.Option(False, "--dry-run", help="Show the plan; change nothing."),
    json_out: bool = typer.Option(False, "--json", help="One JSON object per cluster."),
) -> None:
    """Merge clusters of near-duplicate memories into one note each.

    Live memories (not superseded, forgotten or archived) are compared by their stored
    vectors when the vault has them (cosine), else by shared word runs; similar notes
    chain into clusters. A cluster whose least similar pair is still >= 0.9 alike is
    merged: one new note keeping every distinct sentence, with
    supersedes and promoted_from links to the originals, which get status: superseded
    and superseded_by. Below that, down to 0.75 (0.5 for word runs), the configured LLM
    decides: merge, keep apart (linked related) or contradicts (linked contradicts);
    with no LLM the cluster is only reported. A second run finds nothing new.

    Example:
        vaultmem consolidate --dry-run
        vaultmem consolidate --folder memory --threshold 0.85 --json
    """
    from vaultmem.memory.consolidate import consolidate as run

    vault = open_vault(ctx)
    embedder = vault.duplicate_embedder()
    llm = vault.backends().llm
    report = run(
        vault.config,
        now=clock(),
        folder=folder,
        threshold=threshold,
        embedder=embedder,
        llm=llm,
        dry_run=dry_run,
    )
    _print(report, json_out)
    if any(c.outcome == "failed" for c in report.clusters):
        raise typer.Exit(1)
