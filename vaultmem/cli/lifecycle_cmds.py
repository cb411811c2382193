"""Vault-wide sweeps: `promote`, `gc`, `review`."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import typer

from vaultmem.cli import app, clock, load_config

if TYPE_CHECKING:
    from vaultmem.memory.sweeps import Failure

JSON = typer.Option(False, "--json", help="One JSON object per line.")
DRY_RUN = typer.Option(False, "--dry-run", help="Show the plan; change nothing in the vault.")
QUIET = typer.Option(
    False,
    "--quiet",
    "-q",
    help="Print nothing unless a note moves (would move, with --dry-run) or fails (cron).",
)


def _emit(obj: dict[str, Any]) -> None:
    typer.echo(json.dumps(obj, ensure_ascii=False))


def _report_failures(failed: Sequence[Failure], json_out: bool) -> None:
    """One line per note that could not be handled; exit 1 when there was any."""
    for failure in failed:
        if json_out:
            _emit({"action": "error", "path": failure.path, "reason": failure.reason})
        else:
            typer.echo(f"vaultmem: {failure.path}: {failure.reason}", err=True)
    if failed:
        raise typer.Exit(1)


@app.command()
def promote(
    ctx: typer.Context, dry_run: bool = DRY_RUN, json_out: bool = JSON, quiet: bool = QUIET
) -> None:
    """Move short-term memories that earned it from the inbox to the memory folder.

    A note in the inbox (status active) is promoted when it was used at least 5 times
    within 14 days of its creation, or when it was used at least once, is at least a
    day old and its decay score is still >= 0.65. It keeps its file name (a -2 suffix
    when the name is taken), gets status: promoted and its type's long half-life, and
    links naming it by path are rewritten. Prints old path -> new path and the reason,
    then how many moved; with --quiet a run that moves nothing prints nothing.

    Example:
        vaultmem --vault ~/notes promote --dry-run
    """
    from vaultmem.memory.promotion import promote as run_promote

    config = load_config(ctx)
    report = run_promote(config, clock(), dry_run=dry_run)
    for item in report.promoted:
        if json_out:
            _emit(
                {
                    "action": "promote",
                    "path": item.path,
                    "target": item.target,
                    "reason": item.reason,
                    "score": round(item.score, 4),
                    "dry_run": report.dry_run,
                }
            )
        else:
            typer.echo(f"{item.path} → {item.target}  ({item.reason})")
    for relinked in report.relinked:
        if json_out:
            _emit({"action": "relink", "path": relinked.path, "links": relinked.links})
        else:
            typer.echo(f"  links rewritten in {relinked.path} ({relinked.links})")
    if not json_out and not (quiet and not report.promoted):
        verb = "would promote" if report.dry_run else "promoted"
        typer.echo(f"{verb} {len(report.promoted)} note(s)", err=True)
    _report_failures(report.failed, json_out)


@app.command()
def gc(
    ctx: typer.Context,
    dry_run: bool = DRY_RUN,
    delete: bool = typer.Option(
        False,
        "--delete",
        help="Delete instead of archiving, for notes committed unchanged in git.",
    ),
    force: bool = typer.Option(
        False, "--force", help="With --delete: delete even what git could not give back."
    ),
    folder: list[str] = typer.Option(
        [],
        "--folder",
        help="Only notes under this folder (repeatable), e.g. --folder inbox --folder memory.",
    ),
    json_out: bool = JSON,
    quiet: bool = QUIET,
) -> None:
    """Archive the notes whose decay score fell below 0.05.

    Pinned notes and durable types (decision, preference, antipattern, hub) are never
    collected, nor notes already archived or forgotten. Each note moves to
    <archive>/<its path> with status: archived. --delete deletes instead, but only notes
    that git can give back (committed, no uncommitted change) unless --force; the others
    are archived and the plan says why. Prints each note's action, score and path, then
    the counts; with --quiet a run that collects nothing prints nothing.
    gc looks at the whole vault; --folder keeps it to vaultmem's own folders (or any).

    Example:
        vaultmem --vault ~/notes gc --dry-run
        vaultmem --vault ~/notes gc --folder inbox --folder memory
    """
    from vaultmem.memory.sweeps import gc as run_gc

    if force and not delete:
        raise typer.BadParameter("--force only makes sense with --delete", param_hint="--force")
    config = load_config(ctx)
    report = run_gc(config, clock(), dry_run=dry_run, delete=delete, force=force, folders=folder)
    for item in report.items:
        if json_out:
            _emit(
                {
                    "action": item.action,
                    "path": item.path,
                    "target": item.target,
                    "score": round(item.score, 6),
                    "why": item.why or None,
                    "dry_run": report.dry_run,
                }
            )
            continue
        where = f" → {item.target}" if item.target else ""
        why = f"  ({item.why})" if item.why else ""
        typer.echo(f"{item.action:<7} {item.score:.4f}  {item.path}{where}{why}")
    if not json_out and not (quiet and not report.items):
        archived = sum(1 for item in report.items if item.action == "archive")
        deleted = len(report.items) - archived
        done = ("would archive", "delete") if report.dry_run else ("archived", "deleted")
        typer.echo(f"{done[0]} {archived} and {done[1]} {deleted} note(s)", err=True)
    _report_failures(report.failed, json_out)


@app.command()
def review(
    ctx: typer.Context,
    limit: int = typer.Option(20, "-n", "--limit", min=1, max=10000, help="How many notes."),
    json_out: bool = JSON,
) -> None:
    """Notes to look at: flagged ones, then the danger zone (score 0.15-0.35) before gc.

    Flagged first: notes with needs_review lines, such as a new decision extract found
    contradicting an existing one, or a model's claim that a memory replaces a note,
    which vaultmem did not act on. Settle one with `link NEW OLD -t supersedes` (the new
    one replaces the old) or `unlink NEW OLD` (no conflict: the old note's confidence
    comes back). Then the fading notes, highest review priority first (it peaks at score
    0.25); snoozed notes are left out. Under a header line, each line shows priority,
    score, path and title. Touching a note resets its decay.

    Example:
        vaultmem --vault ~/notes review -n 5
    """
    from vaultmem.memory.sweeps import review_queue

    config = load_config(ctx)
    items = review_queue(config, clock(), limit)
    if json_out:
        for item in items:
            _emit(
                {
                    "path": item.path,
                    "title": item.title,
                    "score": round(item.score, 4),
                    "priority": round(item.priority, 4),
                    "needs_review": list(item.flags),
                }
            )
        return
    if not items:
        typer.echo("nothing to review", err=True)
        return
    flagged = [item for item in items if item.flags]
    for item in flagged:
        typer.echo(f"check  {item.path}  {item.title}")
        for flag in item.flags:
            typer.echo(f"       - {flag}")
    fading = [item for item in items if not item.flags]
    if not fading:
        return
    from vaultmem.cli.columns import cells, left

    wide = max(cells("path"), *(cells(item.path) for item in fading))
    typer.echo(f"{'priority':>8}  {'score':>5}  {left('path', wide)}  title")
    for item in fading:
        row = f"{item.priority:>8.2f}  {item.score:>5.3f}  {left(item.path, wide)}  {item.title}"
        typer.echo(row)
