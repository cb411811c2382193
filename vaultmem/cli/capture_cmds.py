"""`extract` and `handoff`: memories and a handoff note from an agent's session transcript."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from vaultmem.cli import app, clock, load_config, open_vault

if TYPE_CHECKING:
    from vaultmem.config import Config
    from vaultmem.inference.llm import LLMClient

# Only existence is checked here: what else makes a transcript (a regular file, not a
# FIFO, device or directory; not too large) is judged where it is read
# (vaultmem.agent.transcript), one line and exit 1 for every front end.
TRANSCRIPT = typer.Argument(
    ...,
    help="A session transcript: Claude Code JSONL, or plain text / markdown (a regular file).",
    exists=True,
)


def _llm(config: Config) -> LLMClient | None:
    """The configured llm role's client, or None (then the rules fill in)."""
    from vaultmem.inference.base import client_config
    from vaultmem.inference.llm import LLMClient, LLMConfig

    role = config.llm
    if not (role.url or role.model):
        return None
    return LLMClient(client_config(LLMConfig, role))


@app.command()
def extract(
    ctx: typer.Context,
    transcript: Path = TRANSCRIPT,
    json_out: bool = typer.Option(False, "--json", help="Print what happened as one object."),
    dry_run: bool = typer.Option(
        False, "--dry-run", help="Show the memories found; write nothing."
    ),
    project: str = typer.Option(
        None,
        "--project",
        help="Project recorded on each memory (default: the session's working folder's name).",
    ),
) -> None:
    """Save decisions, preferences, antipatterns and observations from a session transcript.

    Reads only what was added since the last run on the same transcript. With an llm
    endpoint configured the model finds the memories (one JSON request per chunk of
    about 6,000 characters); without one, phrase rules do ("we decided", "let's go
    with", "instead of ... because", "don't ... again", "always", "never", "prefer"),
    weighed by a learned layer on the in-process MiniLM that also hears the user's
    sentences no rule takes (`[capture] semantic = false` leaves the rules alone).
    Secrets (API keys and tokens, passwords in URLs, flags and key=value pairs, private
    key blocks) are redacted as the transcript is read, before anything is sent or
    written. Every memory goes through remember: duplicates
    reinforce the note that holds them, near duplicates refine it.

    Example:
        vaultmem extract ~/.claude/projects/-home-me-harbor/3f2a9c1e.jsonl
        vaultmem extract session.md --dry-run
    """
    from vaultmem.agent.capture_vectors import capture_embedder
    from vaultmem.agent.extract import extract_transcript

    vault = open_vault(ctx)
    config = vault.config
    duplicates = None if dry_run else vault.duplicate_embedder()
    report = extract_transcript(
        config,
        transcript,
        llm=_llm(config),
        now=clock(),
        dry_run=dry_run,
        embedder=duplicates,
        project=project,
        semantic=capture_embedder(config, duplicates),
    )
    if json_out:
        typer.echo(json.dumps(report.as_json(), ensure_ascii=False))
        return
    for warning in report.warnings:
        typer.echo(f"vaultmem: warning: {warning}", err=True)
    for m in report.memories:
        c = m.candidate
        if m.path is None:
            typer.echo(f"{c.type}: {c.text}")
        elif m.created:
            extra = f" (refines {', '.join(m.refines)})" if m.refines else ""
            extra += f" (supersedes {m.supersedes})" if m.supersedes else ""
            typer.echo(f"{c.type}: {m.path}{extra}")
        else:
            typer.echo(f"{c.type}: duplicate of {m.duplicate_of}, reinforced")
    created = sum(1 for m in report.memories if m.created)
    verb = "found" if report.dry_run else "written"
    count = len(report.memories) if report.dry_run else created
    typer.echo(
        f"{count} memories {verb} from {report.entries} new entries ({report.mode})",
        err=not report.memories,
    )


@app.command()
def handoff(
    ctx: typer.Context,
    transcript: Path = TRANSCRIPT,
    project: str = typer.Option(None, "--project", help="Project name (frontmatter, file name)."),
    folder: str = typer.Option(None, "--folder", help="Folder to write to (default: handoffs)."),
    json_out: bool = typer.Option(False, "--json", help="Print the handoff as one object."),
) -> None:
    """Write a handoff note for the next session from a session transcript.

    Sections: Request, Investigated, Learned, Done, Files changed, Next steps. The llm
    writes them when one is configured; otherwise they come from the transcript (the
    last user request, the files read, the last assistant message). Files changed
    always come from the agent's edit tool calls. The note links to the memories
    extract saved from the same transcript. An unchanged transcript gets no second
    note. The last line printed is the note's vault path.

    Example:
        vaultmem handoff ~/.claude/projects/-home-me-harbor/3f2a9c1e.jsonl --project harbor
    """
    from vaultmem.agent.handoff import write_handoff

    config = load_config(ctx)
    done = write_handoff(
        config, transcript, llm=_llm(config), project=project, now=clock(), folder=folder
    )
    if json_out:
        typer.echo(json.dumps(done.as_json(), ensure_ascii=False))
        return
    for warning in done.warnings:
        typer.echo(f"vaultmem: warning: {warning}", err=True)
    if not done.created:
        typer.echo("transcript unchanged since the last handoff", err=True)
    typer.echo(done.path)


@app.command()
def feedback(
    ctx: typer.Context,
    transcript: Path = TRANSCRIPT,
    session: str = typer.Option(
        None, "--session", help="The session id (default: the one the transcript records)."
    ),
    most: int = typer.Option(
        None, "--max", min=0, metavar="N", help="At most N notes a session (hooks.reinforce_max)."
    ),
    dry_run: bool = typer.Option(False, "--dry-run", help="Say what would be reinforced."),
    json_out: bool = typer.Option(False, "--json", help="Print what happened as one object."),
) -> None:
    """Reinforce the notes surfaced in a session that its transcript shows were used.

    A note `surface` showed in the session counts as used when the assistant named its
    path, file name or title, opened it with a tool, or repeated six words of it in a
    row. Each such note is reinforced once per session (use_count + 1, last_used now,
    and confirmed: it was surfaced, then used), in one batched write, at most
    hooks.reinforce_max (5) a session. The PreCompact and SessionEnd hooks run it.

    Example:
        vaultmem feedback ~/.claude/projects/-home-me-harbor/3f2a9c1e.jsonl
        vaultmem feedback session.md --session 3f2a9c1e --dry-run
    """
    from vaultmem.agent.feedback import feedback as run_feedback

    config = load_config(ctx)
    done = run_feedback(
        config, transcript, now=clock(), session=session, limit=most, dry_run=dry_run
    )
    if json_out:
        typer.echo(json.dumps(done.as_json(), ensure_ascii=False))
        return
    verb = "would reinforce" if dry_run else "reinforced"
    for path in done.reinforced:
        sign = next(u.sign for u in done.used if u.path == path)
        typer.echo(f"{verb} {path} (used: {sign})")
    typer.echo(
        f"{len(done.surfaced)} surfaced, {len(done.used)} used, {len(done.reinforced)} {verb}",
        err=True,
    )
