"""The vault as an MCP server: a few tools over :mod:`vaultmem.api`, notes as resources.

A thin shell: each tool turns its arguments into the api's request values, makes one
call and answers compact JSON (``get`` answers the note's text). Validation is the
request model's; a :class:`~vaultmem.errors.VaultmemError` comes back as a tool error
whose text is the one-line message the CLI prints after ``vaultmem: error:``, and the
server keeps serving. Tool definitions are sent to every agent's context, so there are
eight of them, described in a line or two each.

This module prints nothing: over stdio the transport owns stdout (see
:mod:`vaultmem.cli.mcp_cmds`, which also keeps stray writes off it).
"""

# No `from __future__ import annotations`: the SDK reads the tools' annotations at
# registration, and they must be objects, not strings.

import json
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Annotated, Any

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field
from starlette.applications import Starlette

from vaultmem import __version__, api
from vaultmem.api import OpenVault
from vaultmem.errors import VaultmemError
from vaultmem.model import (
    NOTE_ACTIONS,
    SEARCH_MODES,
    Filters,
    Hit,
    RememberRequest,
    SearchRequest,
)
from vaultmem.scores import NOTE_TYPES
from vaultmem.servers.schema import Count, Switch
from vaultmem.timeline import TimelineRequest

Clock = Callable[[], datetime]


def _one_of(values: Sequence[str], *, optional: bool = True, description: str | None = None) -> Any:
    """A text argument whose schema lists its values (the request model checks them)."""
    allowed: list[Any] = [*values, None] if optional else list(values)
    return Field(description=description, json_schema_extra={"enum": allowed})


# Argument types: their descriptions are part of every tool definition, so short.
NoteName = Annotated[str, Field(description="Path, title, alias or file name.")]
NoteNames = Annotated[list[str], Field(description="Notes by path, title, alias or file name.")]
Mode = Annotated[
    str | None,
    _one_of(SEARCH_MODES, description="Default: hybrid when the vault has vectors, else keyword."),
]
Action = Annotated[str, _one_of(NOTE_ACTIONS, optional=False)]
NoteType = Annotated[str | None, _one_of(NOTE_TYPES)]
Text = str | None
Tags = list[str] | None
# Count: JSON's `true` is no line or limit of 1, "5" no number (pydantic would convert).
Line = Annotated[Count | None, Field(description="1-based, inclusive.")]

READ = ToolAnnotations(read_only_hint=True, open_world_hint=False)
WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)


def _utc_now() -> datetime:
    return datetime.now(UTC)


def make_server(vault: OpenVault, *, clock: Clock = _utc_now) -> MCPServer:
    """An MCP server over ``vault`` (kept open for the server's life); ``clock``: now.

    Its instructions describe the vault as it is at start (see :func:`instructions`).

    Example:
        >>> make_server(OpenVault(config, warm=True)).run("stdio")  # doctest: +SKIP
    """
    server: MCPServer = MCPServer(
        "vaultmem", instructions=instructions(vault), version=__version__, log_level="WARNING"
    )
    _read_tools(server, vault, clock)
    _write_tools(server, vault, clock)
    _note_resource(server, vault)
    return server


def instructions(vault: OpenVault) -> str:
    """What an agent should know before its first call: the vault's notes, what is
    indexed, and what to run when something is missing."""
    lines = [
        "vaultmem: long-term memory kept as notes in an Obsidian vault. `search` before "
        "answering from memory, `get` to read a hit, `remember` what is worth keeping, "
        "`reinforce` the notes you used. Notes are also resources: vault://PATH."
    ]
    try:
        state = api.status(vault)
    except VaultmemError as exc:
        return "\n".join([*lines, f"Vault status unavailable: {exc}"])
    lines.append(f"The vault has {state.notes} notes; {state.indexed} are in the keyword index.")
    if state.last_index is None or state.index_problem:
        why = state.index_problem or "the vault was never indexed"
        lines.append(f"Search will fail until someone runs `vaultmem index` ({why}).")
    elif state.stale:
        lines.append(f"{state.stale} notes changed since the last index: run `vaultmem index`.")
    embedded = sum(counts.get("embedded", 0) for counts in state.embeddings.values())
    if embedded:
        lines.append(f"Vectors: {embedded} fragments; search defaults to hybrid mode.")
    elif state.embeddings:
        lines.append(
            "No vectors yet: search uses keyword mode; run `vaultmem embed` for semantic search."
        )
    else:
        lines.append("No embedder is configured: keyword search only.")
    return "\n".join(lines)


# --- answers ------------------------------------------------------------------------------


def _text(text: str, *, error: bool = False) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=error)


def _answer(work: Callable[[], object]) -> CallToolResult:
    """Run one api call: its data as compact JSON (text as is), or its error's one line."""
    try:
        data = work()
    except VaultmemError as exc:
        return _text(str(exc), error=True)
    except OSError as exc:
        from vaultmem.cli import os_error_line

        return _text(os_error_line(exc), error=True)
    if isinstance(data, str):
        return _text(data)
    return _text(json.dumps(data, ensure_ascii=False, separators=(",", ":")))


def _hit(hit: Hit) -> dict[str, object]:
    """A hit as an agent needs it: where, what, how good, and the matching line."""
    row: dict[str, object] = {
        "path": hit.path,
        "title": hit.title,
        "score": round(hit.score, 3),
        "line": hit.line,
        "snippet": hit.snippet,
    }
    if hit.review:
        row["review"] = True  # fading: reinforce it if it helped
    return row


# --- tools ----------------------------------------------------------------------------------


def _read_tools(server: MCPServer, vault: OpenVault, clock: Clock) -> None:
    @server.tool(
        description=(
            "Search the memory vault. Returns path, title, score, line and snippet per hit. "
            "mode: keyword (BM25), semantic (vectors) or hybrid (both, reranked; why/when/"
            "who questions follow links and order by date)."
        ),
        annotations=READ,
    )
    def search(
        query: str,
        mode: Mode = None,
        limit: Count = 5,
        folder: Text = None,
        tag: Text = None,
        type: Text = None,  # noqa: A002 - the filter's name everywhere else
        status: Annotated[str | None, Field(description="e.g. forgotten (else hidden).")] = None,
    ) -> CallToolResult:
        def work() -> object:
            chosen = mode or ("hybrid" if vault.has_vectors() else "keyword")
            filters = Filters(folder=folder, tag=tag, type=type, status=status)
            request = SearchRequest(query, mode=chosen, limit=limit, filters=filters)
            result = api.search(vault, request, now=clock())
            answer: dict[str, object] = {"hits": [_hit(h) for h in result.hits]}
            skipped = result.as_json()["skipped"]
            if skipped:
                answer["skipped"] = skipped  # hybrid stages that could not run, and why
            return answer

        return _answer(work)

    @server.tool(
        description="Read a note's markdown, whole or lines start_line..end_line.",
        annotations=READ,
    )
    def get(note: NoteName, start_line: Line = None, end_line: Line = None) -> CallToolResult:
        return _answer(lambda: api.excerpt(api.get(vault, note).text, start_line, end_line))

    @server.tool(
        description="A note's typed links, wikilinks and backlinks.",
        annotations=READ,
    )
    def links(note: NoteName) -> CallToolResult:
        return _answer(lambda: api.links(vault, note).as_json())

    @server.tool(
        description="Vault health: note count, index staleness, vector coverage.",
        annotations=READ,
    )
    def status() -> CallToolResult:
        return _answer(lambda: api.status(vault).as_json())

    @server.tool(
        description=(
            "What happened around a note, or between since and until, in time order: "
            "notes created, changed, used, linked and committed. Give note, or since/until "
            "(ISO dates or durations back from now: 30d, 2w, 12h)."
        ),
        annotations=READ,
    )
    def timeline(
        note: Annotated[str | None, Field(description="Path, title, alias or file name.")] = None,
        since: Text = None,
        until: Text = None,
        newest_first: Switch = False,
        limit: Count = 50,
    ) -> CallToolResult:
        def work() -> object:
            request = TimelineRequest(note, since, until, newest_first=newest_first, limit=limit)
            return api.timeline(vault, request, now=clock()).as_json()

        return _answer(work)


def _write_tools(server: MCPServer, vault: OpenVault, clock: Clock) -> None:
    @server.tool(
        description="Save a new memory note (a duplicate reinforces the existing note).",
        annotations=WRITE,
    )
    def remember(
        text: str,
        title: Text = None,
        type: NoteType = None,  # noqa: A002 - the note type's name everywhere else
        tags: Tags = None,
        folder: Text = None,
        supersedes: Annotated[str | None, Field(description="A note this replaces.")] = None,
    ) -> CallToolResult:
        def work() -> object:
            request = RememberRequest(text, title, type, tuple(tags or ()), folder, supersedes)
            return api.remember(vault, request, now=clock()).as_json()

        return _answer(work)

    @server.tool(
        description=(
            "Mark notes as used so they fade slower; context_tags: the tags of the task "
            "they helped with (rewards use across topics)."
        ),
        annotations=WRITE,
    )
    def reinforce(notes: NoteNames, context_tags: Tags = None) -> CallToolResult:
        def work() -> object:
            done = api.reinforce(vault, notes, now=clock(), context_tags=tuple(context_tags or ()))
            return [r.as_json() for r in done]

        return _answer(work)

    @server.tool(
        description=(
            "pin (always eligible, never collected), forget (hidden from results), "
            "snooze (hidden from surfacing until a date: until=ISO date or duration=30d), "
            "or undo each: unpin, restore, unsnooze."
        ),
        annotations=WRITE,
    )
    def flag(
        notes: NoteNames,
        action: Action,
        until: Text = None,
        duration: Annotated[str | None, Field(description="30d, 12h, 2w.")] = None,
    ) -> CallToolResult:
        def work() -> object:
            done = api.change(vault, action, notes, now=clock(), until=until, for_=duration)
            return [c.as_json() for c in done]

        return _answer(work)


def _note_resource(server: MCPServer, vault: OpenVault) -> None:
    @server.resource(
        "vault://{+path}",
        name="note",
        description="A note's markdown by vault path.",
        mime_type="text/markdown",
    )
    def note(path: str) -> str:
        # api.get is the vault's one gate for note paths: nothing outside it is read.
        try:
            return api.get(vault, path).text
        except VaultmemError as exc:
            raise ResourceError(str(exc)) from None


# --- streamable HTTP ------------------------------------------------------------------------


def http_app(server: MCPServer, *, path: str = "/mcp", host: str = "127.0.0.1") -> Starlette:
    """The server's streamable-HTTP endpoint at ``path``, as a Starlette app whose
    lifespan runs the MCP session manager.

    It checks nothing but the SDK's own DNS-rebinding rule (on a loopback ``host``): put
    it behind the REST server's guard (Host, Origin, bearer token, body size), as
    `mcp --http` does, or mount it in :func:`vaultmem.servers.rest.rest_app` (``path="/"``
    under a ``/mcp`` mount; the REST app runs the mounted lifespans).

    Example:
        >>> uvicorn.run(http_app(make_server(vault)), port=8765)  # doctest: +SKIP
    """
    app: Starlette = server.streamable_http_app(streamable_http_path=path, host=host)
    return app
