"""The operations every front end offers, over one opened vault.

The CLI, the MCP server (:mod:`vaultmem.servers.mcp`) and the REST API
(:mod:`vaultmem.servers.rest`) are thin shells over these functions: each turns its input
into the request values of :mod:`vaultmem.model`, calls one function here and renders
what comes back. No rule lives in a front end.

An :class:`OpenVault` keeps what is costly to open (the keyword index's searcher, the
embedding model, the vector store) and notices when another process changed it: a new
index generation or an incremental update reopens the searcher, a finished embed sweep
reopens the vector store, a changed manifest reloads the notes' memory state. A command
run once makes one and drops it; a server keeps one for as long as it runs.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from vaultmem.config import Config
from vaultmem.errors import ConfigError, EndpointError, RequestError, VaultmemError
from vaultmem.model import (
    NOTE_ACTIONS,
    Filters,
    Hit,
    RememberRequest,
    SearchRequest,
    check_limit,
    check_texts,
)

if TYPE_CHECKING:
    from vaultmem.agent.surface import SurfaceRequest, SurfaceResult
    from vaultmem.index.lexical import LexicalIndex
    from vaultmem.inference.base import Embedder
    from vaultmem.lookup import FoundNote
    from vaultmem.memory.links import LinkChange, NoteLinks
    from vaultmem.memory.notes import Change, Reinforced
    from vaultmem.memory.remember import Remembered
    from vaultmem.retrieval.memory_rank import Ranked, RankingOptions
    from vaultmem.retrieval.query import Backends, QueryResult
    from vaultmem.retrieval.search import SnippetCache
    from vaultmem.retrieval.vsearch import VectorIndex
    from vaultmem.timeline import Timeline, TimelineRequest
    from vaultmem.vault import NoteName
    from vaultmem.workspace import VaultStatus

_Stamp = tuple[tuple[int, int] | None, ...]
_Op = TypeVar("_Op", bound=Callable[..., Any])


def _stat(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size)


def _locked(operation: _Op) -> _Op:
    """Run an operation holding its vault's lock: one request at a time uses the open
    searcher, store and model, and writes by one server happen one after another."""

    @functools.wraps(operation)
    def run(vault: OpenVault, *args: Any, **kwargs: Any) -> Any:
        with vault.lock:
            return operation(vault, *args, **kwargs)

    return run  # type: ignore[return-value]


class OpenVault:
    """A vault's indexes and models, opened on first use and kept while they are current.

    ``warm``: a long-lived process (a server) holds it, so loading the embedding model
    once is cheap per request and `surface` searches vectors too. Every operation of this
    module takes ``lock``: one request at a time uses the open searcher and store.

    Example:
        >>> vault = OpenVault(config)  # doctest: +SKIP
        >>> search(vault, SearchRequest("redis"), now=now).hits[0].path  # doctest: +SKIP
    """

    def __init__(self, config: Config, *, warm: bool = False) -> None:
        self.config = config
        self.warm = warm
        self.lock = threading.RLock()
        self._lexical: LexicalIndex | None = None
        self._lexical_at: tuple[_Stamp, str] | None = None
        self._embedder: Embedder | None = None
        self._embedder_error: Exception | None = None
        self._embedder_loaded = False
        self._backends: Backends | None = None
        self._vectors: VectorIndex | None = None
        self._vectors_at: tuple[_Stamp, _Stamp] | None = None
        self._has_vectors: tuple[tuple[int, int] | None, bool] | None = None
        self.snippets: SnippetCache | None = None
        if warm:
            from vaultmem.retrieval.search import SnippetCache

            self.snippets = SnippetCache()

    # --- what changes under us -----------------------------------------------------------

    def _manifest_stamp(self) -> _Stamp:
        from vaultmem.index.manifest import FILE_NAME

        base = os.path.join(self.config.cache_dir, FILE_NAME)
        return (_stat(base), _stat(base + "-wal"))

    def _store_stamp(self, embedder: Embedder) -> _Stamp:
        from vaultmem.index.records import CHROMA_DIR, STORE_DATABASE, record_path

        record = _stat(str(record_path(self.config.cache_dir, embedder.model_id)))
        if self.config.chroma.host:
            return (record,)
        db = os.path.join(self.config.cache_dir, CHROMA_DIR, STORE_DATABASE)
        return (record, _stat(db), _stat(db + "-wal"))

    def _owners_stamp(self) -> _Stamp:
        """What says which note owns which vector: the manifest (a write files its notes'
        fragment rows in the commit of their note rows), and an older vaultmem's
        ``fragments.json`` while readers still read it (the next write or sweep moves it)."""
        from vaultmem.index.records import LEGACY_FRAGMENTS_FILE

        legacy = _stat(os.path.join(self.config.cache_dir, LEGACY_FRAGMENTS_FILE))
        return (*self._manifest_stamp(), legacy)

    # --- the keyword index ---------------------------------------------------------------

    def lexical(self) -> LexicalIndex:
        """The live keyword index, reopened when another process rebuilt or updated it."""
        from vaultmem.index import manifest as mf
        from vaultmem.index.lexical import LexicalIndex

        stamp = self._manifest_stamp()
        if self._lexical is not None and self._lexical_at and self._lexical_at[0] == stamp:
            return self._lexical
        generation = mf.read_state(self.config.cache_dir).generation
        if self._lexical is not None and self._lexical_at and self._lexical_at[1] == generation:
            self._lexical.refresh()
        else:
            self._close_lexical()
            self._lexical = LexicalIndex.open(self.config.cache_dir)
        self._lexical_at = (stamp, generation)
        return self._lexical

    def _close_lexical(self) -> None:
        if self._lexical is not None:
            self._lexical.close()
        self._lexical, self._lexical_at = None, None

    # --- models and vectors --------------------------------------------------------------

    def embedder(self, *, required: bool = False) -> Embedder | None:
        """The configured embedder (loaded once); ``required``: an error when there is none."""
        if not self._embedder_loaded:
            from vaultmem.inference.embedders import embedder_for

            try:
                self._embedder = embedder_for(self.config)
            except (ConfigError, EndpointError) as exc:
                self._embedder_error = exc
            self._embedder_loaded = True
        if required and self._embedder_error is not None:
            raise self._embedder_error
        if required and self._embedder is None:
            raise ConfigError('no embedder configured (embedder = "none"); vectors are off')
        return self._embedder

    def has_vectors(self) -> bool:
        """Whether the vault has vectors of the configured embedder (no model is loaded)."""
        from vaultmem.index.records import read_record, record_path

        embedder = self.embedder()
        if embedder is None:
            return False
        record = record_path(self.config.cache_dir, embedder.model_id)
        stamp = _stat(str(record))
        if self._has_vectors is None or self._has_vectors[0] != stamp:
            # Reading a large record costs tens of ms: once per change of the file.
            self._has_vectors = (stamp, bool(read_record(record)))
        return self._has_vectors[1]

    def duplicate_embedder(self) -> Embedder | None:
        """The embedder `remember` compares new text with (cosine near duplicates), when the
        vault has vectors of it; else None (word shingles only)."""
        return self.embedder() if self.has_vectors() else None

    def vectors(self, embedder: Embedder) -> VectorIndex:
        """The vector side, reopened after an embed sweep, reloaded after a note changed."""
        from vaultmem.retrieval.vsearch import VectorIndex

        store, owners = self._store_stamp(embedder), self._owners_stamp()
        current = self._vectors
        if current is not None and current.embedder is embedder and self._vectors_at:
            if self._vectors_at == (store, owners):
                return current
            if self._vectors_at[0] == store:
                current.reload()
                self._vectors_at = (store, owners)
                return current
        self._close_vectors()
        self._vectors = VectorIndex(self.config, embedder)
        # Opening the store writes to its database: stamp the database after opening, or
        # every request would see a change and reopen (the record, before: a sweep that
        # lands meanwhile is seen next time).
        self._vectors_at = ((store[0], *self._store_stamp(embedder)[1:]), owners)
        return self._vectors

    def _close_vectors(self) -> None:
        if self._vectors is not None:
            self._vectors.close()
        self._vectors, self._vectors_at = None, None

    def backends(self) -> Backends:
        """The query pipeline's models (embedder, LLM, reranker) with the open vectors."""
        from vaultmem.retrieval.query import backends_for

        if self._backends is None:
            self._backends = backends_for(self.config)
            if self._backends.embedder is not None:
                # One embedder per vault: the query's and vsearch's share a loaded model.
                self._embedder, self._embedder_loaded = self._backends.embedder, True
        embedder = self._backends.embedder
        if embedder is None or not self.warm:
            return self._backends  # a single query opens the vectors itself, if it gets there
        try:
            return replace(self._backends, vectors=self.vectors(embedder))
        except VaultmemError:
            return self._backends  # the query tries again and records why vectors were skipped

    def warm_up(self) -> list[str]:
        """Open the searcher, and the vectors and the model when the vault has vectors,
        then analyse the most recently changed notes for snippets, so early requests do
        not pay for any of it. For a background thread of a server; returns what failed.

        The searcher and the model are opened under the lock (a request waits for them
        rather than opening them twice); notes are analysed outside it, one at a time.
        """
        problems: list[str] = []
        with self.lock:
            try:
                self.lexical()
                if self.has_vectors():
                    embedder = self.backends().embedder
                    if embedder is not None:
                        embedder.embed(["warm-up"])
            except (VaultmemError, OSError) as exc:
                problems.append(str(exc))
        if self.snippets is not None:
            from vaultmem.vault import walk_notes

            try:
                notes = sorted(walk_notes(self.config), key=lambda f: -f.mtime_ns)
            except OSError as exc:
                return [*problems, str(exc)]
            for found in notes[: self.snippets.size]:
                self.snippets.line_map(self.config.vault, found.path)
        return problems

    def close(self) -> None:
        """Release the searcher and the vector store."""
        with self.lock:
            self._close_lexical()
            self._close_vectors()


# --- search ------------------------------------------------------------------------------


def ranking(config: Config, *, prior: bool, review: bool, now: datetime) -> RankingOptions | None:
    """The memory-aware ranking a request asks for (None: plain retrieval order)."""
    from vaultmem.retrieval.memory_rank import RankingOptions

    weight = config.prior_weight if prior else 0.0
    share = config.review_share if review else 0.0
    if weight == 0 and share == 0:
        return None
    return RankingOptions(now=now, weight=weight, review_share=share)


@dataclass(frozen=True)
class SearchResult:
    """The hits of one search; a hybrid search keeps its full result (stages, traces), a
    keyword search what the memory prior did to each hit (``ranked``, hit for hit; empty
    without the prior and review slots)."""

    hits: tuple[Hit, ...]
    query: QueryResult | None = None
    ranked: tuple[Ranked, ...] = ()

    def as_json(self) -> dict[str, object]:
        """``{"hits": [...], "skipped": [{stage, detail}]}`` (skipped: hybrid stages only)."""
        skipped = [] if self.query is None else [s.as_json() for s in self.query.degraded]
        return {"hits": [h.as_json() for h in self.hits], "skipped": skipped}


def search(vault: OpenVault, request: SearchRequest, *, now: datetime) -> SearchResult:
    """One search in the request's mode: keyword, semantic or hybrid.

    Example:
        >>> search(vault, SearchRequest("why redis", mode="hybrid"), now=now)  # doctest: +SKIP
    """
    config = vault.config
    rank = ranking(config, prior=request.prior, review=request.review, now=now)
    with vault.lock:
        if request.mode == "semantic":
            from vaultmem.retrieval.vsearch import vsearch

            embedder = vault.embedder(required=True)
            assert embedder is not None
            # A one-shot vault opens the store while the query is embedded (vsearch).
            index = vault.vectors(embedder) if vault.warm else None
            hits = vsearch(
                config,
                request.query,
                embedder,
                limit=request.limit,
                filters=request.filters,
                index=index,
                ranking=rank,
            )
            return SearchResult(tuple(hits))
        if request.mode == "hybrid":
            return _hybrid(vault, request, rank)
        from vaultmem.retrieval.search import ranked_search

        hits, ranked = ranked_search(
            config,
            request.query,
            limit=request.limit,
            filters=request.filters,
            index=vault.lexical(),
            ranking=rank,
            snippets=vault.snippets,
        )
        return SearchResult(tuple(hits), ranked=tuple(ranked))


def _hybrid(vault: OpenVault, request: SearchRequest, rank: RankingOptions | None) -> SearchResult:
    from vaultmem.retrieval.query import QueryOptions, query

    config = vault.config
    options = QueryOptions(
        limit=request.limit,
        candidates=request.candidates,
        intent=request.intent,
        route=request.route,
        expand=config.query_expand if request.expand is None else request.expand,
        rerank=request.rerank,
        filters=request.filters,
        ranking=rank,
    )
    index = vault.lexical()
    result = query(config, request.query, backends=vault.backends(), options=options, index=index)
    return SearchResult(result.hits, result)


def similar(
    vault: OpenVault, name: str, *, limit: int = 10, filters: Filters = Filters()
) -> list[Hit]:
    """The notes closest in meaning to the note ``name`` names.

    Example:
        >>> similar(vault, "Redis for caching", limit=5)  # doctest: +SKIP
    """
    from vaultmem.lookup import resolve
    from vaultmem.retrieval.vsearch import similar as nearest

    check_limit(limit)
    with vault.lock:
        path = resolve(vault.config, name)
        embedder = vault.embedder(required=True)
        assert embedder is not None
        index = vault.vectors(embedder)
        return nearest(vault.config, path, embedder, limit=limit, filters=filters, index=index)


def surface(vault: OpenVault, request: SurfaceRequest, *, now: datetime) -> SurfaceResult:
    """The context block for one prompt (see :mod:`vaultmem.agent.surface`).

    In a warm process the vectors are searched too (the model is already loaded), unless
    the request says otherwise.

    Example:
        >>> surface(vault, SurfaceRequest("why redis?"), now=now).context  # doctest: +SKIP
    """
    from vaultmem.agent.surface import cheap_backends
    from vaultmem.agent.surface import surface as run_surface

    with vault.lock:
        wants = request.vectors
        if wants is None and vault.warm:
            wants = vault.has_vectors() or None
        if wants and vault.warm:
            backends = vault.backends()
            backends = replace(backends, llm=None, reranker=None)
        else:
            backends = cheap_backends(vault.config, wants)
        return run_surface(vault.config, request, now=now, index=vault.lexical(), backends=backends)


# --- reading notes -----------------------------------------------------------------------


@_locked
def get(vault: OpenVault, name: str) -> FoundNote:
    """The note ``name`` names (path, title, alias or file name), read once.

    Example:
        >>> get(vault, "Release process").note.title  # doctest: +SKIP
    """
    from vaultmem.lookup import find_note

    return find_note(vault.config, name)


def excerpt(text: str, start: int | None = None, end: int | None = None) -> str:
    """Lines ``start``..``end`` of ``text`` (1-based, inclusive; either may be left open).

    Example:
        >>> excerpt("a\\nb\\nc\\n", 2, 3)
        'b\\nc\\n'
    """
    for value, label in ((start, "start line"), (end, "end line")):
        if value is not None and (isinstance(value, bool) or value < 1):
            raise RequestError(f"{label} must be 1 or more, not {value!r}")
    if start is not None and end is not None and end < start:
        raise RequestError(f"end line {end} is before start line {start}")
    lines = text.splitlines(keepends=True)
    return "".join(lines[(start or 1) - 1 : end])


@dataclass(frozen=True)
class NotePage:
    """Some of the vault's notes in path order; ``after``: pass it for the next page
    (None: this page is the last)."""

    notes: tuple[NoteName, ...]
    after: str | None


@_locked
def list_notes(vault: OpenVault, *, after: str | None = None, limit: int = 100) -> NotePage:
    """The vault's notes by path, at most ``limit`` of them, those whose path sorts after
    ``after``: titles from the index (a note not indexed yet goes by its file name).

    A page starts after a path, not at a count, so a note added or removed between two
    pages shifts no other note into or out of the next one.

    Example:
        >>> list_notes(vault, limit=2).notes[0].path  # doctest: +SKIP
        'Harbor.md'
    """
    from vaultmem.lookup import note_names
    from vaultmem.model import check_text

    check_limit(limit)
    check_text(after, "cursor")
    names = sorted(note_names(vault.config), key=lambda n: n.path)
    if after is not None:
        names = [n for n in names if n.path > after]
    page = tuple(names[:limit])
    return NotePage(page, page[-1].path if len(names) > limit else None)


@_locked
def links(vault: OpenVault, name: str) -> NoteLinks:
    """A note's typed links, body wikilinks and backlinks.

    Example:
        >>> links(vault, "Redis for caching").backlinks  # doctest: +SKIP
    """
    from vaultmem.lookup import resolve
    from vaultmem.memory.links import links_of

    return links_of(vault.config, resolve(vault.config, name))


@_locked
def timeline(vault: OpenVault, request: TimelineRequest, *, now: datetime) -> Timeline:
    """What happened around a note, or in a window, in time order (newest first when
    asked), at most ``request.limit`` events.

    Example:
        >>> timeline(vault, TimelineRequest("Redis for caching"), now=now).events  # doctest: +SKIP
    """
    from vaultmem.timeline import note_timeline, window_timeline

    config = vault.config
    since, until = request.window(now)
    if request.note is None:
        found = window_timeline(config, since, until or now)
    else:
        from vaultmem.lookup import resolve

        around = request.around_span()
        path = resolve(config, request.note)
        found = note_timeline(config, path, around=around, since=since, until=until)
    events = found.events[::-1] if request.newest_first else found.events
    return replace(found, events=events[: request.limit])


@_locked
def status(vault: OpenVault) -> VaultStatus:
    """Notes, index state, staleness, cache size and embedding coverage (reads no note).

    Example:
        >>> status(vault).stale  # doctest: +SKIP
    """
    from vaultmem.workspace import vault_status

    embedder = vault.embedder(required=False)
    if vault._embedder_error is not None:
        raise vault._embedder_error
    models = {embedder.model_id: embedder.max_chars} if embedder is not None else {}
    return vault_status(vault.config, models)


# --- writing notes -----------------------------------------------------------------------


def resolve_for_write(vault: OpenVault, names: Sequence[str]) -> list[str]:
    """Every name to the path of a note that may be written, before anything is written:
    one unknown name, or one outside the vault, changes nothing."""
    from vaultmem.lookup import resolve

    if not names:
        raise RequestError("name at least one note")
    return list(dict.fromkeys(resolve(vault.config, name, write=True) for name in names))


@_locked
def remember(vault: OpenVault, request: RememberRequest, *, now: datetime) -> Remembered:
    """Write a new short-term memory, or reinforce the note that already holds the text.

    Example:
        >>> request = RememberRequest("No deploys on Fridays")
        >>> remember(vault, request, now=now).path  # doctest: +SKIP
    """
    from vaultmem.memory.remember import remember as write_memory

    old = resolve_for_write(vault, [request.supersedes])[0] if request.supersedes else None
    try:
        return write_memory(
            vault.config,
            request.text,
            now=now,
            title=request.title,
            note_type=request.type,
            tags=list(request.tags),
            folder=request.folder,
            supersedes=old,
            embedder=vault.duplicate_embedder(),
        )
    except ValueError as exc:
        # A text that is only a heading or punctuation; a NUL byte in a name or folder.
        raise RequestError(str(exc)) from None


@_locked
def reinforce(
    vault: OpenVault,
    names: Sequence[str],
    *,
    now: datetime,
    context_tags: Sequence[str] = (),
    confirm: bool = False,
    session: str | None = None,
) -> list[Reinforced]:
    """`touch` (no ``context_tags``) or `observe` (used in a context with these tags).

    ``confirm``: the notes proved right (confidence one step up, ``last_confirmed``);
    ``session``: confirm those of them `surface` showed in that session.

    Example:
        >>> reinforce(vault, ["Redis for caching"], now=now)[0].use_count  # doctest: +SKIP
    """
    from vaultmem.memory.notes import reinforce_notes

    check_texts(context_tags, "tags")  # never written, but judged: the request model's rule
    paths = resolve_for_write(vault, names)
    return reinforce_notes(
        vault.config, paths, now, list(context_tags), confirm=confirm, session=session
    )


@_locked
def change(
    vault: OpenVault,
    action: str,
    names: Sequence[str],
    *,
    now: datetime,
    until: str | None = None,
    for_: str | None = None,
) -> list[Change]:
    """Set or clear a memory flag: pin, unpin, forget, restore, snooze, unsnooze.

    ``snooze`` takes exactly one of ``until`` (an ISO date or datetime) and ``for_`` (30d,
    12h, 2w); the other actions take neither.

    Example:
        >>> change(vault, "snooze", ["Kubernetes migration"], now=now, for_="30d")  # doctest: +SKIP
    """
    from vaultmem.memory import notes

    if action not in NOTE_ACTIONS:
        raise RequestError(f"unknown action {action!r}; one of: {', '.join(NOTE_ACTIONS)}")
    end: Any = None
    if action == "snooze":
        try:
            end = notes.snooze_until(now, until=until, for_=for_)
        except ValueError as exc:
            raise RequestError(f"until/for: {exc}") from None
    elif until is not None or for_ is not None:
        raise RequestError(f"{action} takes no until or for")
    paths = resolve_for_write(vault, names)
    if action == "snooze":
        return notes.snooze_notes(vault.config, paths, end)
    act = {
        "pin": notes.pin_notes,
        "unpin": notes.unpin_notes,
        "forget": notes.forget_notes,
        "restore": notes.restore_notes,
        "unsnooze": notes.unsnooze_notes,
    }[action]
    return act(vault.config, paths)


@_locked
def link(
    vault: OpenVault, source: str, target: str, link_type: str | None, *, remove: bool = False
) -> LinkChange:
    """Add (or with ``remove``, remove) a typed link from ``source`` to ``target``.

    Example:
        >>> link(vault, "Redis for caching", "Rate limiting options", "related")  # doctest: +SKIP
    """
    from vaultmem.memory.links import LINK_TYPES
    from vaultmem.memory.links import link as add_link
    from vaultmem.memory.links import unlink as remove_link

    if link_type is not None and link_type not in LINK_TYPES:
        raise RequestError(
            f"{link_type!r} is not a link type; valid types: {', '.join(LINK_TYPES)}"
        )
    a_path, b_path = (resolve_for_write(vault, [name])[0] for name in (source, target))
    if remove:
        return remove_link(vault.config, a_path, b_path, link_type)
    return add_link(vault.config, a_path, b_path, link_type or "related")
