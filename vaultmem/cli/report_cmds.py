"""`curate` and `reflect`: whole-vault reports that change no note."""

from __future__ import annotations

import json

import typer

from vaultmem.cli import app, clock, open_vault

JSON = typer.Option(False, "--json", help="Print the report as one JSON object.")


@app.command()
def curate(
    ctx: typer.Context,
    vectors: bool = typer.Option(
        None,
        "--vectors/--no-vectors",
        help="Use the vault's vectors for the vector probe and duplicates "
        "(default: when the vault has them).",
    ),
    json_out: bool = JSON,
) -> None:
    """Maintenance proposals, each with the exact command that applies it.

    Like ClawMem's curator: pins for high-value notes not pinned, snoozes for stale
    ones, forget candidates (never applied: the command is yours to run), near-duplicate
    clusters for consolidate, notes flagged for review (contradictions extract found),
    orphan notes with a related link to propose, broken links, and retrieval-health
    probes (index current, each search path finds known notes by their title, live
    notes, typed links resolve). Writes no note.

    Example:
        vaultmem --vault ~/notes curate
        vaultmem --vault ~/notes curate --json
    """
    from vaultmem import api
    from vaultmem.model import CurateRequest

    report = api.curate(open_vault(ctx), CurateRequest(vectors=vectors), now=clock())
    if json_out:
        typer.echo(json.dumps(report.as_json(), ensure_ascii=False))
        return
    counts = report.counts
    typer.echo(
        f"{counts['live']} live notes of {counts['notes']}: {counts['pinned']} pinned, "
        f"{counts['snoozed']} snoozed, {counts['never_used']} never used, "
        f"{counts['flagged']} flagged for review"
    )
    run = [p for p in report.probes if p.status != "skip"]
    passed = sum(1 for p in run if p.status == "pass")
    typer.echo(f"\nretrieval health: {report.health} ({passed}/{len(run)} probes)")
    for probe in report.probes:
        typer.echo(f"  {probe.status:<4}  {probe.name}: {probe.detail}")
    if not report.proposals:
        typer.echo("\nnothing to propose")
    kinds = dict.fromkeys(p.kind for p in report.proposals)
    for kind in kinds:
        typer.echo(f"\n{kind}:")
        for proposal in (p for p in report.proposals if p.kind == kind):
            typer.echo(f"  {', '.join(proposal.paths)}: {proposal.reason}")
            for command in proposal.commands:
                typer.echo(f"    $ {command}")
    for warning in report.warnings:
        typer.echo(f"vaultmem: warning: {warning}", err=True)


@app.command()
def reflect(
    ctx: typer.Context,
    days: int = typer.Option(14, "--days", min=1, max=3650, help="How many days back."),
    limit: int = typer.Option(10, "-n", "--limit", min=1, max=1000, help="Items per part."),
    json_out: bool = JSON,
) -> None:
    """What recent work kept coming back to, over the last --days (default 14).

    Recurring themes (word runs that 3 or more recent decisions, preferences,
    antipatterns and observations share), the antipatterns of the period, the notes used
    most (uses, and how often surface showed them), and clusters across sessions (notes
    shown together 3 times or more in two sessions or more; memories captured in
    different sessions on one subject). Writes no note.

    Example:
        vaultmem --vault ~/notes reflect --days 30
    """
    from vaultmem import api
    from vaultmem.model import ReflectRequest

    found = api.reflect(open_vault(ctx), ReflectRequest(days, limit), now=clock())
    if json_out:
        typer.echo(json.dumps(found.as_json(), ensure_ascii=False))
        return
    typer.echo(f"the last {found.days} days: {found.notes} notes stated or used")
    typer.echo("\nrecurring themes:" if found.themes else "\nrecurring themes: none (3+ notes)")
    for theme in found.themes:
        typer.echo(f"  [{len(theme.notes)}x] {theme.phrase}")
    typer.echo("\nantipatterns:" if found.antipatterns else "\nantipatterns: none")
    for note in found.antipatterns:
        typer.echo(f"  {note.path}  {note.title}")
    typer.echo("\nused most:" if found.most_used else "\nused most: none")
    for note in found.most_used:
        typer.echo(f"  {note.uses:>3} uses  {note.shown:>3} shown  {note.path}")
    typer.echo(
        "\nclusters across sessions:" if found.clusters else "\nclusters across sessions: none"
    )
    for group in found.clusters:
        typer.echo(f"  {group.why}: {', '.join(group.notes)}")
