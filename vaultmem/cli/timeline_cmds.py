"""`timeline`: what happened around a note, or in a window of time."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import typer

from vaultmem.cli import app, clock, open_vault

if TYPE_CHECKING:
    from vaultmem.timeline import Event


def _line(event: Event) -> str:
    when = event.when.strftime("%Y-%m-%d %H:%M")
    return f"{when}Z  {event.kind:<9}  {event.title}  [{event.path}]  {event.detail}"


@app.command()
def timeline(
    ctx: typer.Context,
    note: str = typer.Argument(
        None,
        metavar="NOTE",
        help="Path, title, alias or file name of the note (else give --since/--until).",
        show_default=False,
    ),
    since: str = typer.Option(
        None,
        "--since",
        metavar="DATE",
        help="From this ISO date/datetime, or this long ago (30d, 2w, 12h).",
        show_default=False,
    ),
    until: str = typer.Option(
        None,
        "--until",
        metavar="DATE",
        help="Up to this date (a bare date includes the day; default: now).",
        show_default=False,
    ),
    around: str = typer.Option(
        "7d",
        "--around",
        metavar="DURATION",
        help="With NOTE: also notes created or changed this close to its dates (0: none).",
    ),
    reverse: bool = typer.Option(False, "--reverse", help="Newest first."),
    limit: int = typer.Option(
        None, "-n", "--limit", min=1, metavar="N", help="At most N events.", show_default=False
    ),
    json_out: bool = typer.Option(
        False, "--json", help="One JSON object per event: {when, kind, path, title, detail}."
    ),
) -> None:
    """Show what happened around a note, or in a window, in time order.

    Events: created (the note's created key, else its first commit), changed (file
    mtime), used (last_used, last_review), committed (git commit dates, when the vault
    is in a git repository; renames followed for NOTE) and linked (a note linked to or
    from NOTE, dated when the later of the two appeared). With NOTE: its own events,
    those of its linked notes, and notes created or changed within --around of its
    dates. With --since/--until alone: every note's events in the window, read from the
    index and one git log (run `vaultmem index` first so new notes are seen). Dates are
    UTC; --json "when" is ISO 8601 UTC. -n N keeps N events: around NOTE, centred on its
    creation; in a window, the first N in the order shown; how many were left out on
    each side is one line on stderr. --around is at most 36500d (a century).

    Example:
        vaultmem --vault example-vault timeline "Redis for caching"
        vaultmem --vault example-vault timeline --since 30d --reverse -n 20 --json
    """
    from vaultmem import api
    from vaultmem.timeline import TimelineRequest

    request = TimelineRequest(note, since, until, around, newest_first=reverse, limit=limit)
    found = api.timeline(open_vault(ctx), request, now=clock())
    shown = found.events
    if shown:
        # One write: a window of a big vault is tens of thousands of lines.
        lines = (
            json.dumps(e.as_json(), ensure_ascii=False) if json_out else _line(e) for e in shown
        )
        typer.echo("\n".join(lines))
    if not shown and not json_out:
        typer.echo("no events", err=True)
    if found.earlier or found.later:
        typer.echo(
            f"{found.earlier} earlier and {found.later} later events not shown (-n {limit})",
            err=True,
        )
