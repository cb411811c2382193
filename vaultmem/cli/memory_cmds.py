"""`remember`, `touch`, `observe`, `pin`/`unpin`, `snooze`/`unsnooze`, `forget`/`restore`."""

from __future__ import annotations

import json
import re
import sys
from typing import TYPE_CHECKING, Any

import typer
from typer.core import TyperCommand, TyperOption

from vaultmem.cli import app, clock, open_vault
from vaultmem.cli.options import NOTES

if TYPE_CHECKING:
    from vaultmem.memory.notes import Change, Reinforced
    from vaultmem.memory.remember import Remembered

JSON = typer.Option(False, "--json", help="One JSON object per note.")
TAGS_HELP = "Comma-separated tags (a,b)."


# --------------------------------------------------------------------------- remember

# What an option looks like on a command line: -x, --name, --name=value.
_OPTION_SHAPE = re.compile(r"--?[A-Za-z][\w-]*")


class _DashText(TyperCommand):
    """A command whose TEXT may start with ``-`` (``remember "- item"``, ``"-5 °C"``).

    click reads every word that starts with ``-`` as options; a word that cannot be one
    (``-`` then a space, digit or sign) is moved behind ``--``, where it is an argument.
    A misspelt option (``--titel``) is still a usage error.
    """

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:  # typer's own click
        """click's parsing, after moving dash-led text words behind ``--``."""
        takes_value = {
            name
            for p in self.params
            if isinstance(p, TyperOption) and not p.is_flag and not p.count
            for name in p.opts
        }
        end = args.index("--") if "--" in args else len(args)
        texts = [
            i
            for i, word in enumerate(args[:end])
            if word.startswith("-")
            and len(word) > 1
            and not _OPTION_SHAPE.fullmatch(word.split("=", 1)[0])
            and (i == 0 or args[i - 1] not in takes_value)
        ]
        if texts:
            kept = [w for i, w in enumerate(args[:end]) if i not in texts]
            args = [*kept, "--", *(args[i] for i in texts), *args[end + 1 :]]
        return super().parse_args(ctx, args)


def _read_text(text: str) -> str:
    """The TEXT argument, or stdin for ``-``; usage error when there is nothing."""
    body = sys.stdin.read() if text == "-" else text
    if not body.strip():
        raise typer.BadParameter("nothing to remember: the text is empty", param_hint="TEXT")
    return body


def _print_remembered(done: Remembered, json_out: bool) -> None:
    if json_out:
        typer.echo(json.dumps(done.as_json(), ensure_ascii=False))
        return
    if done.reinforced is not None:
        r = done.reinforced
        typer.echo(
            f"duplicate of {done.duplicate_of}, reinforced (use_count {r.use_count_before} → "
            f"{r.use_count}, decay score {r.score_before:.3f} → {r.score_after:.3f})"
        )
    for near in done.refines:
        how = "cosine" if near.kind == "cosine" else "similarity"
        typer.echo(f"near duplicate of {near.path} ({how} {near.similarity:.2f}): refines it")
    if done.supersedes:
        typer.echo(f"supersedes {done.supersedes} (now status: superseded)")
    # Alone on the last line, so an agent can capture it: `path=$(vaultmem remember …)`.
    typer.echo(done.path)


@app.command(cls=_DashText)
def remember(
    ctx: typer.Context,
    text: str = typer.Argument(..., help="The memory's text, or - to read it from stdin."),
    title: str = typer.Option(
        None,
        "--title",
        help="Title (also the file name and # heading; default: from the text's first sentence).",
    ),
    type_: str = typer.Option(None, "--type", help="Memory type (decision, preference, …)."),
    tags: str = typer.Option(None, "--tags", help=TAGS_HELP),
    folder: str = typer.Option(None, "--folder", help="Folder to write to (default: inbox)."),
    supersedes: str = typer.Option(
        None, "--supersedes", help="A note this memory replaces (marked superseded)."
    ),
    json_out: bool = typer.Option(False, "--json", help="Print what happened as one object."),
) -> None:
    """Write a new short-term memory (a note in the inbox folder).

    The note gets created = now, the short-term half-life and status: active. If a note
    already holds the same text, nothing is written and that note is reinforced instead;
    a near duplicate (shared word runs, or cosine >= 0.92 when the vault has vectors) is
    written with refines: [[the other note]], unless both are tagged on different
    subjects (no shared tag, or tag Jaccard < 0.5). The last line printed
    is the vault path of the new (or reinforced) note. TEXT may start with a dash
    ("- item", "-5 °C at night"); put -- before a text that looks like an option.

    Example:
        vaultmem remember "No deploys on Fridays after 3pm" --title "Deploy freeze" --tags ops
        echo "pgbouncer needs server_reset_query" | vaultmem remember - --type observation
    """
    from vaultmem import api
    from vaultmem.model import RememberRequest, parse_tags

    request = RememberRequest(_read_text(text), title, type_, parse_tags(tags), folder, supersedes)
    _print_remembered(api.remember(open_vault(ctx), request, now=clock()), json_out)


# --------------------------------------------------------------------------- reinforce

CONFIRM = typer.Option(
    False, "--confirm", help="The notes proved right: raise their confidence one step."
)
SESSION = typer.Option(
    None,
    "--session",
    metavar="ID",
    help="Agent session ID: notes surfaced in it and used now are confirmed.",
)


def _print_reinforced(done: list[Reinforced], json_out: bool, verb: str) -> None:
    for r in done:
        if json_out:
            typer.echo(json.dumps(r.as_json(), ensure_ascii=False))
            continue
        line = (
            f"{verb} {r.path}: use_count {r.use_count_before} → {r.use_count}, "
            f"decay score {r.score_before:.3f} → {r.score_after:.3f}"
        )
        if r.cross_domain:
            line += f", strength {r.strength_before:g} → {r.strength:g} (cross-domain)"
        if r.confirmed:
            line += f", confidence {r.confidence_before:g} → {r.confidence:g} (confirmed)"
        typer.echo(line)


def _reinforce(
    ctx: typer.Context, notes: list[str], tags: list[str], confirm: bool, session: str | None
) -> list[Reinforced]:
    """One reinforcement (`touch`, `observe`) through the core API."""
    from vaultmem import api

    vault = open_vault(ctx)
    return api.reinforce(
        vault, notes, now=clock(), context_tags=tags, confirm=confirm, session=session
    )


@app.command()
def touch(
    ctx: typer.Context,
    notes: list[str] = NOTES,
    confirm: bool = CONFIRM,
    session: str = SESSION,
    json_out: bool = JSON,
) -> None:
    """Reinforce notes you just used: use_count and review_count + 1, last_used = now.

    Prints each note's decay score before and after. Only the usage keys change; created
    is never rewritten. --confirm also says the notes proved right: confidence moves a
    fifth of the way to 1 (0.5 → 0.6) and last_confirmed = now. With --session ID, each
    note that `surface` showed in that session (its log says so) is confirmed the same
    way: surfaced, then used.

    Example:
        vaultmem touch "Redis for caching" inbox/pgbouncer-note.md
        vaultmem touch --confirm "Redis for caching" --json
        vaultmem touch --session "$SESSION_ID" "Redis for caching"
    """
    _print_reinforced(_reinforce(ctx, notes, [], confirm, session), json_out, "touched")


@app.command()
def observe(
    ctx: typer.Context,
    notes: list[str] = NOTES,
    tags: str = typer.Option(None, "--tags", help=f"Tags of the context of use. {TAGS_HELP}"),
    confirm: bool = CONFIRM,
    session: str = SESSION,
    json_out: bool = JSON,
) -> None:
    """Reinforce notes used in a context (its tags): like touch, plus a cross-domain boost.

    When the context's tags barely overlap the note's (Jaccard < 0.3), strength grows by
    0.1 (at most 2.0) and cross_domain_count by 1: a memory useful across topics lasts.
    --confirm and --session confirm notes as touch does.

    Example:
        vaultmem observe "Redis for caching" --tags payments,webhooks
    """
    from vaultmem.model import parse_tags

    done = _reinforce(ctx, notes, list(parse_tags(tags)), confirm, session)
    _print_reinforced(done, json_out, "observed")


# --------------------------------------------------------------------------- flags


def _print_changes(done: list[Change], json_out: bool, did: str, already: str) -> None:
    for change in done:
        if json_out:
            typer.echo(json.dumps(change.as_json(), ensure_ascii=False))
        elif change.changed:
            moved = f" to {change.moved_to}" if change.moved_to else ""
            typer.echo(f"{did} {change.path}{moved}{_values(change)}")
        else:
            typer.echo(f"{change.path}: {already}, unchanged")


def _show(value: object) -> str:
    if value is None:
        return "-"
    return json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else value


def _values(change: Change) -> str:
    """`` (status: superseded → forgotten)``: each managed key, before → after."""
    parts = [
        f"{key}: {_show(change.before[key])} → {_show(change.after[key])}" for key in change.after
    ]
    return f" ({'; '.join(parts)})" if parts else ""


def _change(
    ctx: typer.Context, action: str, notes: list[str], json_out: bool, **when: str | None
) -> None:
    """The body of every flag command: one api call, one line (or object) per note."""
    from vaultmem import api
    from vaultmem.errors import RequestError

    did, already = _WORDS[action]
    try:
        done = api.change(open_vault(ctx), action, notes, now=clock(), **when)
    except RequestError as exc:
        why = str(exc).removeprefix("until/for: ")
        raise typer.BadParameter(why, param_hint="--until/--for") from None
    _print_changes(done, json_out, did, already)


# What each flag command prints for a note it changed, and for one it left as it was.
_WORDS = {
    "pin": ("pinned", "already pinned"),
    "unpin": ("unpinned", "not pinned"),
    "snooze": ("snoozed", "already snoozed until then"),
    "unsnooze": ("unsnoozed", "not snoozed"),
    "forget": ("forgot", "already forgotten"),
    "restore": ("restored", "already active"),
}


@app.command()
def pin(ctx: typer.Context, notes: list[str] = NOTES, json_out: bool = JSON) -> None:
    """Pin notes (pinned: true): always eligible for surfacing, ranked a little higher,
    never garbage-collected.

    Example:
        vaultmem pin "Python coding style"
    """
    _change(ctx, "pin", notes, json_out)


@app.command()
def unpin(ctx: typer.Context, notes: list[str] = NOTES, json_out: bool = JSON) -> None:
    """Unpin notes (the pinned key is removed from their frontmatter).

    Example:
        vaultmem unpin "Python coding style"
    """
    _change(ctx, "unpin", notes, json_out)


@app.command()
def snooze(
    ctx: typer.Context,
    notes: list[str] = NOTES,
    until: str = typer.Option(
        None, "--until", metavar="DATE", help="ISO date or datetime the snooze ends."
    ),
    for_: str = typer.Option(None, "--for", metavar="DURATION", help="How long: 30d, 12h, 2w…"),
    json_out: bool = JSON,
) -> None:
    """Hide notes from `surface` until a date (snoozed_until); search still finds them.

    Give exactly one of --until (2099-01-01 or 2099-01-01T09:00:00Z) and --for (30d, 12h,
    2w). A date is stored as a date (midnight UTC), a datetime in UTC.

    Example:
        vaultmem snooze "Kubernetes migration" --for 30d
        vaultmem snooze "Release process" --until 2099-01-01
    """
    _change(ctx, "snooze", notes, json_out, until=until, for_=for_)


@app.command()
def unsnooze(ctx: typer.Context, notes: list[str] = NOTES, json_out: bool = JSON) -> None:
    """End a snooze now (the snoozed_until key is removed).

    Example:
        vaultmem unsnooze "Kubernetes migration"
    """
    _change(ctx, "unsnooze", notes, json_out)


@app.command()
def forget(
    ctx: typer.Context,
    notes: list[str] = typer.Argument(
        None, metavar="NOTE...", help="Notes by path, title, alias or file name."
    ),
    match: str = typer.Option(
        None,
        "--match",
        metavar="TEXT",
        help="The notes whose title, alias or path holds TEXT: listed, and forgotten "
        "only with --yes.",
    ),
    yes: bool = typer.Option(False, "--yes", "-y", help="With --match: forget them all."),
    json_out: bool = JSON,
) -> None:
    """Forget notes (status: forgotten): hidden from every result, kept on disk.

    `search --status forgotten` still finds them; `restore` brings them back. --match
    TEXT lists every note whose title, alias or path holds TEXT and forgets them only
    with --yes (without it nothing is written).

    Example:
        vaultmem forget "Memcached for session cache"
        vaultmem forget --match memcached
        vaultmem forget --match memcached --yes
    """
    if match is None:
        if not notes:
            raise typer.BadParameter("name the notes, or give --match TEXT", param_hint="NOTE")
        _change(ctx, "forget", notes, json_out)
        return
    if notes:
        raise typer.BadParameter("give notes or --match, not both", param_hint="--match")
    _forget_matching(ctx, match, yes, json_out)


def _forget_matching(ctx: typer.Context, text: str, yes: bool, json_out: bool) -> None:
    """`forget --match`: the candidates, and with --yes the forgetting of them all."""
    from vaultmem import api

    vault = open_vault(ctx)
    found = api.matching_notes(vault, text)
    if not found:
        typer.echo(f"no note's title, alias or path holds {text!r}", err=True)
        raise typer.Exit(1)
    if yes:
        _change(ctx, "forget", [n.path for n in found], json_out)
        return
    for note in found:
        if json_out:
            typer.echo(json.dumps({"path": note.path, "title": note.title}, ensure_ascii=False))
        else:
            typer.echo(f"{note.path}  ({note.title})")
    many = "this note" if len(found) == 1 else f"these {len(found)} notes"
    typer.echo(f"nothing forgotten: add --yes to forget {many}", err=True)


@app.command()
def restore(ctx: typer.Context, notes: list[str] = NOTES, json_out: bool = JSON) -> None:
    """Make notes active again: the status line forget or gc replaced comes back (else
    the status key is removed), and a note gc archived moves back to the folder it came
    from (recorded in the note as archived_from).

    Example:
        vaultmem restore "Memcached for session cache"
    """
    _change(ctx, "restore", notes, json_out)
