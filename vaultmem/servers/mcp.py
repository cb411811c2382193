"""The vault as an MCP server: a few tools over :mod:`vaultmem.api`, notes as resources.

A thin shell: each tool turns its arguments into the api's request values, makes one
call and answers compact JSON (``get`` of one note answers its text). Validation is the
request model's; a :class:`~vaultmem.errors.VaultmemError` comes back as a tool error
whose text is the one-line message the CLI prints after ``vaultmem: error:``, and the
server keeps serving. Every operation of the REST API is a tool; tool definitions are
sent to every agent's context, so there are eleven, described in a line or two each.

``resources/list`` lists the notes, :data:`PAGE` at a time: the SDK's MCPServer answers
only resources registered one by one, so a middleware answers that method in its place
(after the SDK's own checks of the session and the params).

This module prints nothing: over stdio the transport owns stdout (see
:mod:`vaultmem.cli.mcp_cmds`, which also keeps stray writes off it).
"""

# No `from __future__ import annotations`: the SDK reads the tools' annotations at
# registration, and they must be objects, not strings.

import json
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Annotated, Any
from urllib.parse import quote

import anyio.to_thread
from mcp.server import MCPServer, ServerRequestContext
from mcp.server.context import CallNext, HandlerResult, ServerMiddleware
from mcp.server.mcpserver.exceptions import ResourceError
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    CallToolResult,
    Resource,
    TextContent,
    ToolAnnotations,
)
from pydantic import Field
from starlette.applications import Starlette

from vaultmem import __version__, api
from vaultmem.agent.surface import SurfaceRequest
from vaultmem.api import OpenVault
from vaultmem.errors import RequestError, VaultmemError
from vaultmem.model import (
    MAX_LIMIT,
    NOTE_ACTIONS,
    SEARCH_MODES,
    CurateRequest,
    Filters,
    Hit,
    ReflectRequest,
    RememberRequest,
    SearchRequest,
    split_names,
)
from vaultmem.servers.schema import Count, Switch
from vaultmem.servers.vault_choice import VaultChoice
from vaultmem.timeline import TimelineRequest
from vaultmem.vocabulary import NOTE_TYPES

Clock = Callable[[], datetime]
PAGE = 100  # notes per page of resources/list


def _one_of(values: Sequence[str], *, optional: bool = True, description: str | None = None) -> Any:
    """A text argument whose schema lists its values (the request model checks them)."""
    allowed: list[Any] = [*values, None] if optional else list(values)
    return Field(description=description, json_schema_extra={"enum": allowed})


# Argument types: their descriptions are part of every tool definition, so short.
NoteName = Annotated[str, Field(description="Path, title, alias or file name.")]
OneOrMore = Annotated[
    str | Annotated[list[str], Field(min_length=1, max_length=MAX_LIMIT)],
    Field(description="Path, title, alias or file name; or a list of them."),
]
NoteNames = Annotated[list[str], Field(description="Notes by path, title, alias or file name.")]
Mode = Annotated[
    str | None,
    _one_of(SEARCH_MODES, description="Default: hybrid when the vault has vectors, else keyword."),
]
Action = Annotated[str, _one_of(NOTE_ACTIONS, optional=False)]
NoteType = Annotated[str | None, _one_of(NOTE_TYPES)]
Text = str | None
Tags = list[str] | None
Collections = Annotated[
    str | list[str] | None, Field(description='Configured collections, "a,b" or a list: any.')
]
When = Annotated[
    str | None, Field(description="Created or last used: ISO date, or 7d/2w/12h back.")
]
# Count: JSON's `true` is no line or limit of 1, "5" no number (pydantic would convert).
Line = Annotated[Count | None, Field(description="1-based, inclusive.")]

VaultName = Annotated[
    str | None, Field(description="A vault the user named in their config (default: this one).")
]
Vaults = Annotated[
    str | Annotated[list[str], Field(min_length=1, max_length=MAX_LIMIT)] | None,
    Field(description="A named vault, or a list of them: hits merged (default: this one)."),
]

READ = ToolAnnotations(read_only_hint=True, open_world_hint=False)
WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)


def _utc_now() -> datetime:
    return datetime.now(UTC)


def make_server(vault: OpenVault | VaultChoice, *, clock: Clock = _utc_now) -> MCPServer:
    """An MCP server over ``vault`` (kept open for the server's life), or over the vaults
    of a :class:`VaultChoice` (every tool then takes ``vault``: a named vault of the
    user's config); ``clock``: now.

    Its instructions describe the vault as it is at start (see :func:`instructions`).

    Example:
        >>> make_server(OpenVault(config, warm=True)).run("stdio")  # doctest: +SKIP
    """
    vaults = vault if isinstance(vault, VaultChoice) else VaultChoice(vault, {})
    main = vaults.main
    server: MCPServer = MCPServer(
        "vaultmem",
        instructions=instructions(main, vaults.names()),
        version=__version__,
        log_level="WARNING",
        middleware=[_paged_notes(main, PAGE)],
    )
    _read_tools(server, vaults, clock)
    _more_read_tools(server, vaults, clock)
    _report_tools(server, vaults, clock)
    _write_tools(server, vaults, clock)
    _link_tool(server, vaults)
    _note_resource(server, main)
    return server


def instructions(vault: OpenVault, named: Sequence[str] = ()) -> str:
    """What an agent should know before its first call: the vault's notes, what is
    indexed, what to run when something is missing, and the other vaults it may name."""
    lines = [
        "vaultmem: long-term memory kept as notes in an Obsidian vault. `search` before "
        "answering from memory, `get` to read a hit, `remember` what is worth keeping, "
        "`reinforce` the notes you used. Notes are also resources: vault://PATH."
    ]
    if named:
        lines.append(
            f"Other vaults, by the `vault` argument of every tool: {', '.join(named)} "
            "(search takes a list of them too)."
        )
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
        from vaultmem.errors import os_error_line

        return _text(os_error_line(exc), error=True)
    if isinstance(data, str):
        return _text(data)
    return _text(json.dumps(data, ensure_ascii=False, separators=(",", ":")))


def _filters(
    folder: str | None,
    tag: str | None,
    type: str | None,  # noqa: A002 - the filter's name everywhere else
    status: str | None,
    collection: str | list[str] | None,
    since: str | None,
    until: str | None,
) -> Filters:
    """The search filters of a tool's arguments (``collection``: a name, ``a,b`` or a list)."""
    names = split_names(collection, "collection")
    return Filters(
        folder=folder,
        tag=tag,
        type=type,
        status=status,
        collections=names,
        since=since,
        until=until,
    )


def _hit(hit: Hit) -> dict[str, object]:
    """A hit as an agent needs it: where, what, how good, and the matching line."""
    row: dict[str, object] = {
        "path": hit.path,
        "title": hit.title,
        "score": round(hit.score, 3),
        "score_kind": hit.score_kind,
        "line": hit.line,
        "snippet": hit.snippet,
    }
    if hit.review:
        row["review"] = True  # fading: reinforce it if it helped
    return row


# --- tools ----------------------------------------------------------------------------------


def _read_tools(server: MCPServer, vaults: VaultChoice, clock: Clock) -> None:
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
        collection: Collections = None,
        since: When = None,
        until: When = None,
        vault: Vaults = None,
    ) -> CallToolResult:
        def work() -> object:
            if isinstance(vault, list):
                return _search_several(vaults, vault, query, mode, limit, filters(), clock)
            chosen = vaults.get(vault)
            picked = mode or ("hybrid" if chosen.has_vectors() else "keyword")
            request = SearchRequest(query, mode=picked, limit=limit, filters=filters())
            result = api.search(chosen, request, now=clock())
            answer: dict[str, object] = {"hits": [_hit(h) for h in result.hits]}
            skipped = result.as_json()["skipped"]
            if skipped:
                answer["skipped"] = skipped  # hybrid stages that could not run, and why
            return answer

        def filters() -> Filters:
            return _filters(folder, tag, type, status, collection, since, until)

        return _answer(work)

    @server.tool(
        description=(
            "Read a note's markdown, whole or lines start_line..end_line. A list of notes: "
            "JSON [{note, path, text} or {note, error}]."
        ),
        annotations=READ,
    )
    def get(
        note: OneOrMore, start_line: Line = None, end_line: Line = None, vault: VaultName = None
    ) -> CallToolResult:
        def work() -> object:
            chosen = vaults.get(vault)
            if isinstance(note, str):
                return api.excerpt(api.get(chosen, note).text, start_line, end_line)
            return _get_each(chosen, note, start_line, end_line)

        return _answer(work)

    @server.tool(
        description="A note's typed links, wikilinks and backlinks.",
        annotations=READ,
    )
    def links(note: NoteName, vault: VaultName = None) -> CallToolResult:
        return _answer(lambda: api.links(vaults.get(vault), note).as_json())

    @server.tool(
        description="Vault health: note count, index staleness, vector coverage.",
        annotations=READ,
    )
    def status(vault: VaultName = None) -> CallToolResult:
        return _answer(lambda: api.status(vaults.get(vault)).as_json())

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
        around: Annotated[
            str, Field(description="With note: notes dated this close too (0: none).")
        ] = TimelineRequest.around,
        newest_first: Switch = False,
        limit: Count = 50,
        vault: VaultName = None,
    ) -> CallToolResult:
        def work() -> object:
            request = TimelineRequest(
                note, since, until, around, newest_first=newest_first, limit=limit
            )
            return api.timeline(vaults.get(vault), request, now=clock()).as_json()

        return _answer(work)


def _more_read_tools(server: MCPServer, vaults: VaultChoice, clock: Clock) -> None:
    @server.tool(
        description="Notes closest in meaning to a note (needs vectors: `vaultmem embed`).",
        annotations=READ,
    )
    def similar(
        note: NoteName,
        limit: Count = 5,
        folder: Text = None,
        tag: Text = None,
        type: Text = None,  # noqa: A002 - the filter's name everywhere else
        status: Text = None,
        collection: Collections = None,
        since: When = None,
        until: When = None,
        vault: VaultName = None,
    ) -> CallToolResult:
        def work() -> object:
            filters = _filters(folder, tag, type, status, collection, since, until)
            hits = api.similar(vaults.get(vault), note, limit=limit, filters=filters, now=clock())
            return {"hits": [_hit(h) for h in hits]}

        return _answer(work)

    @server.tool(
        description=(
            "The context block the prompt hook would add for a prompt: the notes that "
            "answer it, within budget tokens (empty when none is relevant enough)."
        ),
        annotations=READ,
    )
    def surface(
        prompt: str,
        session: Annotated[str | None, Field(description="Skip notes shown before in it.")] = None,
        budget: Annotated[Count | None, Field(description="Null: the profile's.")] = None,
        vectors: Annotated[bool | None, Field(strict=True)] = None,
        profile: Annotated[
            str | None, Field(description="quiet, normal or deep (null: the vault's).")
        ] = None,
        vault: VaultName = None,
    ) -> CallToolResult:
        def work() -> object:
            request = SurfaceRequest(prompt, session, budget, vectors, profile=profile)
            return api.surface(vaults.get(vault), request, now=clock()).as_json()

        return _answer(work)


def _report_tools(server: MCPServer, vaults: VaultChoice, clock: Clock) -> None:
    @server.tool(
        description=(
            "Maintenance proposals, each with the exact vaultmem command that applies it "
            "(pin, snooze, forget, consolidate, review, orphan links), and retrieval-health "
            "probes. Applies nothing."
        ),
        annotations=READ,
    )
    def curate(
        vectors: Annotated[bool | None, Field(strict=True)] = None, vault: VaultName = None
    ) -> CallToolResult:
        def work() -> object:
            return api.curate(vaults.get(vault), CurateRequest(vectors), now=clock()).as_json()

        return _answer(work)

    @server.tool(
        description=(
            "Recurring themes, antipatterns, the notes used most and clusters across "
            "sessions over the last days."
        ),
        annotations=READ,
    )
    def reflect(days: Count = 14, limit: Count = 10, vault: VaultName = None) -> CallToolResult:
        def work() -> object:
            request = ReflectRequest(days, limit)
            return api.reflect(vaults.get(vault), request, now=clock()).as_json()

        return _answer(work)


def _write_tools(server: MCPServer, vaults: VaultChoice, clock: Clock) -> None:
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
        vault: VaultName = None,
    ) -> CallToolResult:
        def work() -> object:
            request = RememberRequest(text, title, type, tuple(tags or ()), folder, supersedes)
            return api.remember(vaults.get(vault), request, now=clock()).as_json()

        return _answer(work)

    @server.tool(
        description=(
            "Mark notes as used so they fade slower; context_tags: the tags of the task "
            "they helped with (rewards use across topics)."
        ),
        annotations=WRITE,
    )
    def reinforce(
        notes: NoteNames, context_tags: Tags = None, vault: VaultName = None
    ) -> CallToolResult:
        def work() -> object:
            tags = tuple(context_tags or ())
            done = api.reinforce(vaults.get(vault), notes, now=clock(), context_tags=tags)
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
        vault: VaultName = None,
    ) -> CallToolResult:
        def work() -> object:
            chosen = vaults.get(vault)
            done = api.change(chosen, action, notes, now=clock(), until=until, for_=duration)
            return [c.as_json() for c in done]

        return _answer(work)


def _link_tool(server: MCPServer, vaults: VaultChoice) -> None:
    from vaultmem.memory.links import LINK_TYPES  # loads the link graph: the server's anyway

    @server.tool(
        description=(
            "Add a typed link from source to target (paired types on both ends), or with "
            "remove: take it away (without type: every type)."
        ),
        annotations=WRITE,
    )
    def link(
        source: NoteName,
        target: NoteName,
        type: Annotated[str | None, _one_of(LINK_TYPES, description="Default: related.")] = None,  # noqa: A002
        remove: Switch = False,
        vault: VaultName = None,
    ) -> CallToolResult:
        def work() -> object:
            change = api.link(vaults.get(vault), source, target, type, remove=remove)
            written: dict[str, list[str]] = {}
            for path, key in change.edits:
                written.setdefault(path, []).append(key)
            return {
                "source": change.source,
                "target": change.target,
                "type": change.type,
                "changed": change.changed,
                "written": written,  # path: the keys rewritten (empty: already so)
            }

        return _answer(work)


def _search_several(
    vaults: VaultChoice,
    names: Sequence[str],
    query: str,
    mode: str | None,
    limit: int,
    filters: Filters,
    clock: Clock,
) -> dict[str, object]:
    """`search` over several named vaults: the merged hits, each naming its vault, and the
    vaults that could not be searched with why."""
    chosen = [(name, vaults.get(name)) for name in dict.fromkeys(names)]
    every_has = all(v.has_vectors() for _, v in chosen)
    picked = mode or ("hybrid" if every_has else "keyword")
    request = SearchRequest(query, mode=picked, limit=limit, filters=filters)
    found = api.search_vaults(chosen, request, now=clock())
    hits = [{"vault": h.vault, **_hit(h.hit), "score": round(h.score, 3)} for h in found.hits]
    answer: dict[str, object] = {"hits": hits}
    if found.skipped:
        answer["vaults_skipped"] = [{"vault": n, "error": why} for n, why in found.skipped]
    return answer


def _get_each(
    vault: OpenVault, names: Sequence[str], start: int | None, end: int | None
) -> list[dict[str, object]]:
    """Several notes in one call: a name that finds no note is an entry with its error,
    not the whole call's; line numbers are the call's (a bad one refuses it)."""
    api.excerpt("", start, end)
    found: list[dict[str, object]] = []
    for looked in api.get_each(vault, names):
        if looked.found is None:
            found.append({"note": looked.name, "error": str(looked.error)})
            continue
        text = api.excerpt(looked.found.text, start, end)
        found.append({"note": looked.name, "path": looked.found.note.path, "text": text})
    return found


# --- resources ------------------------------------------------------------------------------


def _note_uri(path: str) -> str:
    return "vault://" + quote(path, safe="/")


def _paged_notes(vault: OpenVault, size: int) -> ServerMiddleware[Any]:
    """A middleware that answers ``resources/list`` with the vault's notes, ``size`` a
    page; the cursor is the last path of the page before (see :func:`api.list_notes`)."""

    async def middleware(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        answer = await call_next(ctx)  # the SDK's own: initialised, params well-formed
        if ctx.method != "resources/list" or not isinstance(answer, Mapping):
            return answer
        cursor = (ctx.params or {}).get("cursor")
        try:
            page = await anyio.to_thread.run_sync(
                lambda: api.list_notes(vault, after=cursor, limit=size)
            )
        except VaultmemError as exc:
            code = INVALID_PARAMS if isinstance(exc, RequestError) else INTERNAL_ERROR
            raise MCPError(code=code, message=str(exc)) from None
        resources = [
            Resource(
                uri=_note_uri(n.path), name=n.path, title=n.title, mime_type="text/markdown"
            ).model_dump(by_alias=True, mode="json", exclude_none=True)
            for n in page.notes
        ]
        listed = {**answer, "resources": resources}
        if page.after is not None:
            listed["nextCursor"] = page.after
        return listed

    return middleware


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
