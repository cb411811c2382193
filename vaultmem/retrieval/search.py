"""`search`: BM25F hits turned into results with their best line."""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from vaultmem.config import Config
from vaultmem.errors import VaultmemError
from vaultmem.index import manifest as mf
from vaultmem.index.analysis import analyse, asked_terms
from vaultmem.index.lexical import LexicalHit, LexicalIndex
from vaultmem.memory_state import note_memory
from vaultmem.model import Filters, Hit
from vaultmem.note import read_note
from vaultmem.retrieval.memory_rank import NoteWords, QueryTerms, Ranked, RankingOptions, rank
from vaultmem.retrieval.snippets import LineMap, Snippet, best_line
from vaultmem.scores import normalize_tags
from vaultmem.vault import in_collection

# How many candidates the memory prior may reorder (SPEC's candidate limit).
RANKING_DEPTH = 30


def _read_lines(root: Path, path: str) -> list[str] | None:
    try:
        text = (root / path).read_text(encoding="utf-8-sig", errors="replace")
    except OSError:
        return None
    return text.splitlines()


def note_snippet(
    root: Path, path: str, terms: list[str], cache: SnippetCache | None = None
) -> Snippet:
    """The best body line of the note at ``path`` for ``terms`` (empty when unreadable)."""
    if cache is not None:
        return cache.snippet(root, path, terms)
    lines = _read_lines(root, path)
    if lines is None:
        return Snippet("", 0)
    return best_line(lines, terms, first_line=_body_start(lines))


class SnippetCache:
    """The :class:`LineMap` of the notes a long-lived process showed last, each kept while
    its file's mtime and size stay the same (a warm server: analysing a note costs about
    a millisecond, finding its best line in the map a few microseconds)."""

    def __init__(self, size: int = 4096) -> None:
        self.size = size
        self._maps: OrderedDict[str, tuple[tuple[int, int], LineMap]] = OrderedDict()
        self._lock = threading.Lock()

    def snippet(self, root: Path, path: str, terms: list[str]) -> Snippet:
        """The best line of the note at ``path``, from its map (made when missing or stale)."""
        line_map = self.line_map(root, path)
        return line_map.best(terms) if line_map is not None else Snippet("", 0)

    def line_map(self, root: Path, path: str) -> LineMap | None:
        """The note's current map (None when it cannot be read)."""
        full = root / path
        try:
            st = os.stat(full)
        except OSError:
            return None
        stamp = (st.st_mtime_ns, st.st_size)
        key = str(full)
        with self._lock:
            found = self._maps.get(key)
            if found is not None and found[0] == stamp:
                self._maps.move_to_end(key)
                return found[1]
        lines = _read_lines(root, path)
        if lines is None:
            return None
        made = LineMap.build(lines, _body_start(lines))
        with self._lock:
            self._maps[key] = (stamp, made)
            self._maps.move_to_end(key)
            while len(self._maps) > self.size:
                self._maps.popitem(last=False)
        return made


def _body_start(lines: list[str]) -> int:
    # The snippet should come from the body, not the YAML: skip past the closing delimiter.
    if not lines or lines[0].rstrip() != "---":
        return 1
    for number, line in enumerate(lines[1:], start=2):
        if line.rstrip() in ("---", "..."):
            return number + 1
    return 1


def to_hits(
    config: Config,
    raw: list[LexicalHit],
    terms: list[str],
    snippets: SnippetCache | None = None,
) -> list[Hit]:
    """Attach each lexical hit's best snippet (read from the note itself)."""
    hits = []
    for r in raw:
        snip = note_snippet(config.vault, r.path, terms, snippets)
        hits.append(
            Hit(r.path, r.title, r.score, snip.text, snip.line, r.type, r.status, score_kind="bm25")
        )
    return hits


def lexical_hits(
    config: Config,
    text: str,
    *,
    limit: int,
    filters: Filters = Filters(),
    index: LexicalIndex | None = None,
    lead: bool = False,
) -> list[LexicalHit]:
    """Raw BM25F hits (scores, no snippets) with every filter applied, collections included.

    ``lead``: over the notes' lead field (title + opening) instead of their whole text.

    Example:
        >>> [h.path for h in lexical_hits(config, "redis", limit=3)]  # doctest: +SKIP
    """
    index = index or LexicalIndex.open(config.cache_dir)
    if not filters.collections and not filters.dated:
        return index.search(text, limit=limit, filters=filters, lead=lead)
    # The index cannot tell collections or dates: ask it for more, keep the notes that
    # pass, and ask again deeper until enough do or it has no more.
    narrowed = _within_collections(config, filters)
    wanted = limit * 5
    while True:
        raw = index.search(text, limit=wanted, filters=narrowed, lead=lead)
        kept = [r for r in raw if passes_outside_index(config, r.path, r.entry(), filters)]
        if len(kept) >= limit or len(raw) < wanted:
            return kept[:limit]
        wanted *= 4


def passes_outside_index(config: Config, path: str, entry: mf.Entry, filters: Filters) -> bool:
    """Whether a note passes the filters the keyword index cannot apply itself: in one of
    the collections (ConfigError for an unknown name), and dated in the window (its
    ``created``, else its file's mtime, or its ``last_used``).

    The window is the one :mod:`vaultmem.api` resolved; filters with ``since``/``until``
    but no window are a caller's mistake (ValueError).
    """
    if filters.collections and not any(in_collection(path, config, c) for c in filters.collections):
        return False
    if filters.window is None:
        if filters.dated:
            raise ValueError("Filters.since/until apply once resolved into a window (vaultmem.api)")
        return True
    memory = note_memory(path, entry)
    return filters.window.holds(memory.state.created or memory.first_seen, memory.state.last_used)


def search(
    config: Config,
    text: str,
    *,
    limit: int = 10,
    filters: Filters = Filters(),
    index: LexicalIndex | None = None,
    ranking: RankingOptions | None = None,
    snippets: SnippetCache | None = None,
) -> list[Hit]:
    """BM25F search of the vault; never raises on any query string.

    With ``ranking``, the memory prior re-ranks a deeper candidate list and review slots
    are filled (:mod:`vaultmem.retrieval.memory_rank`); without it, plain BM25F order.
    Each hit's ``score`` is what it is ranked by, in BM25F units: its BM25F score moved
    by the prior (:attr:`Ranked.scaled`), so scores fall down the list.

    Example:
        >>> search(config, "postgres migrations", limit=5)  # doctest: +SKIP
    """
    hits, _ = ranked_search(
        config, text, limit=limit, filters=filters, index=index, ranking=ranking, snippets=snippets
    )
    return hits


def ranked_search(
    config: Config,
    text: str,
    *,
    limit: int = 10,
    filters: Filters = Filters(),
    index: LexicalIndex | None = None,
    ranking: RankingOptions | None = None,
    snippets: SnippetCache | None = None,
) -> tuple[list[Hit], list[Ranked]]:
    """:func:`search`, and what the memory prior did to each hit (for ``--explain``;
    empty without ``ranking``)."""
    index = index or LexicalIndex.open(config.cache_dir)
    depth = limit if ranking is None else max(limit * 3, RANKING_DEPTH)
    raw = lexical_hits(config, text, limit=depth, filters=filters, index=index)
    terms = index.matched_terms(text)  # prefix matches too: the snippet shows what matched
    if ranking is None:
        return to_hits(config, raw, terms, snippets), []
    by_path = {r.path: r for r in raw}
    entries = {r.path: r.entry() for r in raw}
    ranking = replace(ranking, show_status=filters.status)
    versions = version_terms(config, text, index)
    ranked = rank([(r.path, r.score) for r in raw], entries, text, ranking, limit, versions)
    hits = to_hits(config, [by_path[r.path] for r in ranked], terms, snippets)
    found = [replace(h, score=r.scaled, review=r.review) for h, r in zip(hits, ranked, strict=True)]
    return found, ranked


def version_terms(config: Config, text: str, index: LexicalIndex | None) -> QueryTerms:
    """A query's words for listing newer versions of a memory first: weighted by the
    keyword index's IDF (1 each without an index), a note's words read from its file.

    Example:
        >>> version_terms(config, "who owns billing?", index).weigh()  # doctest: +SKIP
        {'own': 2.1, 'bill': 3.4}
    """
    asked = asked_terms(text[:2000])
    wanted = frozenset(asked)

    def weigh() -> Mapping[str, float]:
        return index.idf(asked) if index is not None else dict.fromkeys(asked, 1.0)

    def read(path: str) -> NoteWords:
        try:
            note = read_note(config.vault, path, config.keys)
        except VaultmemError:  # vanished or unreadable since it was indexed
            return NoteWords(frozenset(), frozenset())
        words = analyse("\n".join([note.title, *note.aliases, *note.tags, note.body]))
        return NoteWords(wanted.intersection(words), normalize_tags(note.tags))

    return QueryTerms(weigh, read)


def _within_collections(config: Config, filters: Filters) -> Filters:
    """``filters`` narrowed, for the keyword index, to the folder every one of the
    collections lies in (their paths' deepest common folder), unless a folder is given.
    An unknown collection is a ConfigError naming the known ones, whatever would match."""
    paths = [config.collection(name).path.split("/") for name in filters.collections]
    if not paths or filters.folder:
        return filters
    common: list[str] = []
    for parts in zip(*paths, strict=False):
        if len(set(parts)) != 1 or not parts[0]:
            break
        common.append(parts[0])
    return replace(filters, folder="/".join(common)) if common else filters
