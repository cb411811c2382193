"""`timeline`: what happened around a note, or in a window of time."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

import typer

from vaultmem.cli import app, clock, load_config

if TYPE_CHECKING:
    from vaultmem.timeline import Event

T = TypeVar("T")


def _parsed(parse: Callable[[str], T], value: str, flag: str) -> T:
    """``parse(value)``; a ValueError is a usage error (exit 2) naming ``flag``."""
    try:
        return parse(value)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint=flag) from None


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
    UTC; --json "when" is ISO 8601 UTC.

    Example:
        vaultmem --vault example-vault timeline "Redis for caching"
        vaultmem --vault example-vault timeline --since 30d --reverse -n 20 --json
    """
    from vaultmem.timeline import note_timeline, parse_around, parse_when, window_timeline

    if note is None and since is None and until is None:
        raise typer.BadParameter("give a NOTE, or --since and/or --until", param_hint="NOTE")
    now = clock()
    start = _parsed(lambda v: parse_when(v, now), since, "--since") if since is not None else None
    end = (
        _parsed(lambda v: parse_when(v, now, end=True), until, "--until")
        if until is not None
        else None
    )
    config = load_config(ctx)
    if note is None:
        found = window_timeline(config, start, end or now)
    else:
        from vaultmem.lookup import resolve

        path = resolve(config, note)
        found = note_timeline(
            config, path, around=_parsed(parse_around, around, "--around"), since=start, until=end
        )
    events = found.events[::-1] if reverse else found.events
    shown = events[:limit] if limit else events
    if shown:
        # One write: a window of a big vault is tens of thousands of lines.
        lines = (
            json.dumps(e.as_json(), ensure_ascii=False) if json_out else _line(e) for e in shown
        )
        typer.echo("\n".join(lines))
    if not events and not json_out:
        typer.echo("no events", err=True)
