"""Typed links: `link`, `unlink`, `links`."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import typer

from vaultmem.cli import app, open_vault

if TYPE_CHECKING:
    from vaultmem.memory.links import LinkChange, NoteLinks, Suggestion

# Spelled out here because importing vaultmem.memory.links would load the search index
# (whoosh) for `--help`; test_links checks this text names every type of LINK_TYPES.
_TYPES_HELP = (
    "Link type: supersedes, superseded_by, related, refines, duplicate_of, caused_by, "
    "fixed_by (a failure to its fix), contradicts, promoted_from."
)


def _link_type(value: str | None) -> str | None:
    """Reject a type outside the closed vocabulary as a usage error (exit 2)."""
    from vaultmem.memory.links import LINK_TYPES

    if value is None or value in LINK_TYPES:
        return value
    raise typer.BadParameter(f"{value!r} is not a link type; valid types: {', '.join(LINK_TYPES)}")


NOTE_A = typer.Argument(..., help="The note the link starts from (path, title, alias or name).")
NOTE_B = typer.Argument(..., help="The note it points to.")


def _print_change(change: LinkChange, verb: str, nothing: str) -> None:
    arrow = f"--{change.type or 'any'}-->"
    if not change.changed:
        typer.echo(f"{nothing}: {change.source} {arrow} {change.target}")
        return
    typer.echo(f"{verb}: {change.source} {arrow} {change.target}")
    for path in change.written:
        keys = ", ".join(key for p, key in change.edits if p == path)
        typer.echo(f"  {path}: {keys}")


@app.command()
def link(
    ctx: typer.Context,
    note_a: str = NOTE_A,
    note_b: str = NOTE_B,
    link_type: str = typer.Option("related", "--type", "-t", help=_TYPES_HELP, callback=_link_type),
) -> None:
    """Add a typed link from note A to note B ("[[B]]" in A's frontmatter list).

    Paired types are written on both ends: supersedes <-> superseded_by, and the
    symmetric related and contradicts; refines, duplicate_of, caused_by, fixed_by (from
    a failure to the note that fixed it) and promoted_from are one-way, and B's
    backlinks show them read backwards (fixed_by → fixes). supersedes also sets status:
    superseded on B, and superseded_by on A (an archived or forgotten note keeps its
    status). A link that is already there, in any spelling, is reported and nothing is
    rewritten.

    Example:
        vaultmem --vault example-vault link "Background job queues" "Flaky tests in CI"
        vaultmem link "Flaky tests in CI" "pytest-xdist port collisions" -t fixed_by
    """
    from vaultmem import api

    change = api.link(open_vault(ctx), note_a, note_b, link_type)
    _print_change(change, "linked", "already linked")


@app.command()
def unlink(
    ctx: typer.Context,
    note_a: str = NOTE_A,
    note_b: str = NOTE_B,
    link_type: str = typer.Option(
        None, "--type", "-t", help="Only this type (default: every type).", callback=_link_type
    ),
) -> None:
    """Remove the typed links from note A to note B, and their pairs on B.

    Without --type every type goes. A list left empty loses its key. Status is not
    touched: a note marked superseded stays superseded after unlinking supersedes
    (change it by hand). B's own one-way links to A stay: run unlink B A for those.

    Example:
        vaultmem --vault example-vault unlink "Redis for caching" "Rate limiting options"
    """
    from vaultmem import api

    change = api.link(open_vault(ctx), note_a, note_b, link_type, remove=True)
    _print_change(change, "unlinked", "not linked")


def _ref_line(target: str, path: str | None) -> str:
    return f"{target}  [{path}]" if path else f"{target}  (dangling)"


def _print_links(found: NoteLinks) -> None:
    typer.echo(f"{found.title}  [{found.path}]")
    typer.echo("\ntyped links:" if found.typed else "\ntyped links: none")
    for link_type, refs in found.typed.items():
        for ref in refs:
            typer.echo(f"  {link_type}: {_ref_line(ref.target, ref.path)}")
    typer.echo("\nwikilinks:" if found.wikilinks else "\nwikilinks: none")
    for ref in found.wikilinks:
        typer.echo(f"  {_ref_line(ref.target, ref.path)}")
    typer.echo("\nbacklinks:" if found.backlinks else "\nbacklinks: none")
    from vaultmem.memory.links import PAIRED

    vias: dict[str, list[str]] = {}
    for back in found.backlinks:
        # A one-way type reads backwards here: "fixed_by → fixes" (this note fixes it);
        # a paired one is written on this note too, under its own name.
        one_way = back.via not in PAIRED and back.inverse != back.via
        vias.setdefault(back.path, []).append(
            f"{back.via} → {back.inverse}" if one_way else back.via
        )
    for path, via in vias.items():
        typer.echo(f"  {path}  ({', '.join(via)})")


def _suggest(
    vault: Any, note: str, threshold: float | None, limit: int
) -> tuple[str, float, tuple[Suggestion, ...]]:
    """(path, threshold, suggestions) for NOTE, from the vault's vectors."""
    from vaultmem.lookup import resolve
    from vaultmem.memory.links import SUGGEST_THRESHOLD, suggest_links

    cut = SUGGEST_THRESHOLD if threshold is None else threshold
    with vault.lock:
        path = resolve(vault.config, note)
        index = vault.vectors(vault.embedder(required=True))
        return path, cut, suggest_links(vault.config, path, index, threshold=cut, limit=limit)


def _print_suggestions(path: str, cut: float, found: tuple[Suggestion, ...]) -> None:
    if not found:
        typer.echo(f"{path}: no unlinked notes at cosine >= {cut:.2f}")
        return
    typer.echo(f"{path}: notes close in meaning, not linked (cosine >= {cut:.2f}):")
    for s in found:
        typer.echo(f"  {s.similarity:.3f}  {s.title}  [{s.path}]")


def _run_suggest(
    ctx: typer.Context,
    note: str,
    threshold: float | None,
    limit: int,
    *,
    write: bool,
    json_out: bool,
) -> None:
    from vaultmem.memory.links import write_suggestions

    vault = open_vault(ctx)
    path, cut, found = _suggest(vault, note, threshold, limit)
    changes = write_suggestions(vault.config, path, found) if write else ()
    if json_out:
        out = {
            "path": path,
            "threshold": cut,
            "suggestions": [s.as_json() for s in found],
            "written": [c.target for c in changes if c.changed],
        }
        typer.echo(json.dumps(out, ensure_ascii=False))
        return
    _print_suggestions(path, cut, found)
    for change in changes:
        _print_change(change, "linked", "already linked")


@app.command()
def links(
    ctx: typer.Context,
    note: str = typer.Argument(..., help="Path, title, alias or file name of the note."),
    suggest: bool = typer.Option(
        False, "--suggest", help="List notes close in meaning that are not linked to NOTE."
    ),
    write: bool = typer.Option(
        False, "--write", help="With --suggest: store the suggestions as related links."
    ),
    threshold: float = typer.Option(
        None,
        "--threshold",
        metavar="X",
        min=0.0,
        max=1.0,
        help="With --suggest: the least cosine similarity (default 0.70).",
    ),
    limit: int = typer.Option(
        10, "--limit", "-n", metavar="N", min=1, help="With --suggest: at most N notes."
    ),
    json_out: bool = typer.Option(
        False,
        "--json",
        help="Print {path, title, typed, wikilinks, backlinks}; with --suggest "
        "{path, threshold, suggestions, written}.",
    ),
) -> None:
    """Show a note's typed links, its body [[wikilinks]], and the notes linking to it.

    Each link shows the note it resolves to, or (dangling). Backlinks name how they
    point here: a link type, or wikilink for a link in the body. --json prints one
    object: {path, title, typed: {type: [{target, path}]}, wikilinks: [{target, path}],
    backlinks: [{path, via}]} (path is null for a dangling link).

    --suggest lists instead the notes nearest NOTE by vector (run `vaultmem embed`
    first) at cosine >= --threshold that are not linked to it either way; --write
    stores them as related links on both notes. Nothing is linked without --write.

    Example:
        vaultmem --vault example-vault links "Redis for caching" --json
        vaultmem --vault example-vault links "Stripe as payments provider" --suggest
    """
    from vaultmem import api

    if not suggest and (write or threshold is not None):
        raise typer.BadParameter("--write and --threshold go with --suggest")
    if suggest:
        _run_suggest(ctx, note, threshold, limit, write=write, json_out=json_out)
        return
    found = api.links(open_vault(ctx), note)
    if json_out:
        typer.echo(json.dumps(found.as_json(), ensure_ascii=False))
    else:
        _print_links(found)
