"""The calls of :mod:`vaultmem.api` that read: search, similar, surface, and notes read
by name (get, list, links, timeline, status). Each takes its vault's lock."""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING

from vaultmem.api.open_vault import OpenVault, vault_locked
from vaultmem.config import Config
from vaultmem.errors import RequestError, VaultmemError
from vaultmem.model import Filters, Hit, SearchRequest, check_limit

if TYPE_CHECKING:
    from vaultmem.agent.surface import SurfaceRequest, SurfaceResult
    from vaultmem.lookup import FoundNote
    from vaultmem.memory.links import NoteLinks
    from vaultmem.retrieval.memory_rank import Ranked, RankingOptions
    from vaultmem.retrieval.query_types import QueryResult
    from vaultmem.timeline import Timeline, TimelineRequest
    from vaultmem.vault import NoteName
    from vaultmem.workspace import VaultStatus

__all__ = [
    "NotePage",
    "SearchResult",
    "excerpt",
    "NoteLookup",
    "get",
    "get_each",
    "index_changes",
    "links",
    "list_notes",
    "matching_notes",
    "ranking",
    "resolved_filters",
    "search",
    "similar",
    "status",
    "surface",
    "timeline",
]


# --- search ------------------------------------------------------------------------------


def ranking(config: Config, *, prior: bool, review: bool, now: datetime) -> RankingOptions | None:
    """The memory-aware ranking a request asks for (None: plain retrieval order)."""
    from vaultmem.retrieval.memory_rank import RankingOptions

    weight = config.prior_weight if prior else 0.0
    share = config.review_share if review else 0.0
    if weight == 0 and share == 0:
        return None
    return RankingOptions(now=now, weight=weight, review_share=share, tuning=config.tuning)


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
    request = replace(request, filters=resolved_filters(config, request.filters, now))
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
    from vaultmem.retrieval.query import query
    from vaultmem.retrieval.query_types import QueryOptions

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


def resolved_filters(config: Config, filters: Filters, now: datetime | None) -> Filters:
    """``filters`` checked against the vault and the clock: each collection one the config
    names (ConfigError listing the known ones), ``since``/``until`` resolved against
    ``now`` into their window (RequestError for a bad value, or a window that ends before
    it starts). A search applies the filters only once they are resolved.

    Example:
        >>> resolved_filters(config, Filters(since="7d"), now).window  # doctest: +SKIP
        DateWindow(since=datetime(2026, 11, 13, ...), until=None)
    """
    from vaultmem.model import DateWindow

    for name in filters.collections:
        config.collection(name)
    if not filters.dated:
        return filters
    if now is None:
        raise RequestError("since and until need a clock to resolve against")
    from vaultmem.timeline import window_bound

    since = window_bound("since", filters.since, now)
    until = window_bound("until", filters.until, now, end=True)
    if since is not None and until is not None and since > until:
        raise RequestError(f"since ({since.isoformat()}) is after until ({until.isoformat()})")
    return replace(filters, window=DateWindow(since, until))


def similar(
    vault: OpenVault,
    name: str,
    *,
    limit: int = 10,
    filters: Filters = Filters(),
    now: datetime | None = None,
) -> list[Hit]:
    """The notes closest in meaning to the note ``name`` names (``now``: what a date
    window of ``filters`` is resolved against).

    Example:
        >>> similar(vault, "Redis for caching", limit=5)  # doctest: +SKIP
    """
    from vaultmem.lookup import resolve
    from vaultmem.retrieval.vsearch import similar as nearest

    check_limit(limit)
    filters = resolved_filters(vault.config, filters, now)
    with vault.lock:
        path = resolve(vault.config, name)
        embedder = vault.embedder(required=True)
        assert embedder is not None
        index = vault.vectors(embedder)
        return nearest(vault.config, path, embedder, limit=limit, filters=filters, index=index)


def index_changes(vault: OpenVault) -> tuple[str, ...]:
    """What changed in the vault since the last `index`, as far as a cheap look can tell:
    the folders (``"inbox/"``, ``"./"`` for the vault's top) and recent notes whose mtime
    is not the one `index` recorded (:mod:`vaultmem.index.stamps`: one stat each, no
    walk). Empty when nothing did, or when it cannot tell (an index by an older version,
    an unreadable manifest): a hint for a search to give, never an error.

    Example:
        >>> index_changes(vault)  # doctest: +SKIP
        ('inbox/',)
    """
    from vaultmem.index import manifest as mf
    from vaultmem.index.stamps import Stamps, changes, confirmed
    from vaultmem.vault import NoteRules

    config = vault.config
    try:
        state = mf.read_state(config.cache_dir)
        stamps = Stamps.parse(state.stamps)
        found = changes(stamps, config.vault)
        if not found or stamps is None:
            return found
        failed = [posixpath.split(p) for p in state.skipped_notes()]

        def known(folder: str) -> set[str]:
            none: set[str] = set()
            indexed = mf.read(config.cache_dir, none, lambda store: store.names_in(folder))
            return indexed | {name for where, name in failed if where == folder}

        return confirmed(found, NoteRules(config), stamps.folders, known)
    except VaultmemError:
        return ()


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


@vault_locked
def get(vault: OpenVault, name: str) -> FoundNote:
    """The note ``name`` names (path, title, alias or file name), read once.

    Example:
        >>> get(vault, "Release process").note.title  # doctest: +SKIP
    """
    from vaultmem.lookup import find_note

    return find_note(vault.config, name)


@dataclass(frozen=True)
class NoteLookup:
    """One name of a several-note read: the note it found, or the error that says why
    it found none (exactly one of the two)."""

    name: str
    found: FoundNote | None = None
    error: VaultmemError | None = None


@vault_locked
def get_each(vault: OpenVault, names: Sequence[str]) -> tuple[NoteLookup, ...]:
    """Each of ``names`` read as :func:`get` reads one, in order: a name that finds no
    note (or several) is a lookup with its error, and the others are still read.

    Example:
        >>> [n.found is None for n in get_each(vault, ["Harbor", "nope"])]  # doctest: +SKIP
        [False, True]
    """
    from vaultmem.lookup import find_note

    looked: list[NoteLookup] = []
    for name in names:
        try:
            looked.append(NoteLookup(name, found=find_note(vault.config, name)))
        except VaultmemError as exc:
            looked.append(NoteLookup(name, error=exc))
    return tuple(looked)


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


@vault_locked
def matching_notes(vault: OpenVault, text: str) -> tuple[NoteName, ...]:
    """The notes whose title, an alias or path holds ``text`` (any case), those it
    begins first: what `forget --match` offers to act on.

    Example:
        >>> [n.title for n in matching_notes(vault, "redis")][0]  # doctest: +SKIP
        'Redis for caching'
    """
    from vaultmem.lookup import matching, note_names
    from vaultmem.model import check_text

    check_text(text, "match")
    if not text.strip():
        raise RequestError("match must be non-empty text")
    names = note_names(vault.config, read_unindexed=True)
    by_path = {n.path: n for n in names}
    return tuple(by_path[p] for p in matching(names, text))


@vault_locked
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


@vault_locked
def links(vault: OpenVault, name: str) -> NoteLinks:
    """A note's typed links, body wikilinks and backlinks.

    Example:
        >>> links(vault, "Redis for caching").backlinks  # doctest: +SKIP
    """
    from vaultmem.lookup import resolve
    from vaultmem.memory.links import links_of

    return links_of(vault.config, resolve(vault.config, name))


@vault_locked
def timeline(vault: OpenVault, request: TimelineRequest, *, now: datetime) -> Timeline:
    """What happened around a note, or in a window, in time order (newest first when
    asked), at most ``request.limit`` events.

    Example:
        >>> timeline(vault, TimelineRequest("Redis for caching"), now=now).events  # doctest: +SKIP
    """
    from vaultmem.timeline import centred, note_timeline, window_timeline

    config = vault.config
    since, until = request.window(now)
    if request.note is None:
        found = window_timeline(config, since, until or now)
        events = list(found.events[::-1] if request.newest_first else found.events)
        shown = events[: request.limit]
        cut = len(events) - len(shown)
        earlier, later = (cut, 0) if request.newest_first else (0, cut)
        return replace(found, events=tuple(shown), earlier=earlier, later=later)
    from vaultmem.lookup import resolve

    around = request.around_span()
    path = resolve(config, request.note)
    found = note_timeline(config, path, around=around, since=since, until=until)
    limit = request.limit if request.limit is not None else len(found.events)
    kept, earlier, later = centred(found.events, path, limit)
    shown = kept[::-1] if request.newest_first else kept
    return replace(found, events=tuple(shown), earlier=earlier, later=later)


@vault_locked
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
