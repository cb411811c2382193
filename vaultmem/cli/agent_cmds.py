"""`surface`: the context block for one prompt, for agents and their hooks."""

from __future__ import annotations

import json
import sys

import typer

from vaultmem.cli import app, clock, open_vault
from vaultmem.cli.options import profile_option


@app.command()
def surface(
    ctx: typer.Context,
    prompt: str = typer.Argument(
        "-", metavar="[PROMPT|-]", help="The user's prompt; - (the default) reads it from stdin."
    ),
    session: str = typer.Option(
        None, "--session", help="Session id: no note twice, no repeat of a prompt in 10 minutes."
    ),
    budget: int = typer.Option(
        None,
        "--budget",
        help="Most tokens the block may take (chars/4), 50 to 100000 (default: the profile's).",
        show_default=False,
    ),
    profile: str = profile_option(),
    json_out: bool = typer.Option(
        False,
        "--json",
        help='One object: {"context", "notes": [{path, title, score, line}], "reason"}.',
    ),
    vectors: bool = typer.Option(
        None,
        "--vectors/--no-vectors",
        help="Search vectors too (default: when cheap: an embedding endpoint, or the local "
        "model once `embed` has left its vectors' snapshot and model in the cache).",
        show_default=False,
    ),
) -> None:
    """Print the notes relevant to a prompt as a <vault-context> block, or nothing.

    Gates first: slash commands, acknowledgements ("ok", "thanks", emoji), shell lines,
    prompts too short to carry a topic, and the same prompt again within 10 minutes in
    a session get nothing; words asking for memory ("remember", "last time", "what did
    we decide") force a lookup. Then the `query` pipeline without an LLM; forgotten,
    archived, superseded and snoozed notes are left out (pinned ones never). Nothing is
    printed unless a note clearly covers the prompt (a relevance floor chosen on a
    benchmark; --profile moves it). The block is filled best first within --budget
    tokens (the profile's by default); with --session each note appears once per
    session. Every run is appended to a surfacing log in the cache (counted by `status`).

    Example:
        vaultmem --vault example-vault surface "why did we move sessions to Redis?" --session s1
    """
    from vaultmem import api
    from vaultmem.agent.surface import TOO_SMALL, SurfaceRequest

    text = sys.stdin.read() if prompt == "-" else prompt
    request = SurfaceRequest(text, session=session, budget=budget, vectors=vectors, profile=profile)
    result = api.surface(open_vault(ctx), request, now=clock())
    if json_out:
        typer.echo(json.dumps(result.as_json(), ensure_ascii=False))
    elif result.context:
        typer.echo(result.context)
    elif result.reason.startswith(TOO_SMALL):
        # Abstaining is silent; a budget no note fits is the caller's to fix: say so.
        typer.echo(f"vaultmem: nothing surfaced: {result.reason}; raise --budget", err=True)
