"""The Whoosh BM25F index: a disposable mirror of the notes' text in ``.vaultmem/whoosh``.

Queries are never handed to Whoosh's query parser: user text is run through the same
analyzer as the documents (:mod:`vaultmem.index.analysis`) and the query is built from
the resulting terms, so no input (``foo:bar (``, ``AND``, a lone quote, an emoji) can
raise a parser error. This module opens, writes and searches the index and keeps its
generation folders; what a document holds is :mod:`vaultmem.index.lexical_schema`'s.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vaultmem.cache_folder import remove_tree
from vaultmem.errors import IndexStateError, VaultmemError
from vaultmem.index import manifest as mf
from vaultmem.index.analysis import ENGLISH_STOP_WORDS, WORD_RE, query_terms, stemmed
from vaultmem.index.lexical_schema import (
    LEAD_FIELD,
    WRITER_OPTIONS,
    build_schema,
    note_document,
)

# Whoosh pickles the schema into an index's table of contents by class path. Indexes
# written before the schema moved to lexical_schema name `vaultmem.index.lexical.
# WeightedText` and `LexicalCodec`; both stay reachable here, so they open after an upgrade.
from vaultmem.index.lexical_schema import LexicalCodec as LexicalCodec  # noqa: E402
from vaultmem.index.lexical_schema import WeightedText as WeightedText  # noqa: E402
from vaultmem.index.live_stats import LiveBM25F, LiveStats
from vaultmem.index.manifest import Entry
from vaultmem.index.segment_writer import LexicalSegmentWriter
from vaultmem.index.whoosh_light import light_imports
from vaultmem.model import HIDDEN_STATUSES, Filters
from vaultmem.vault import make_cache

with light_imports():
    from whoosh import index as windex
    from whoosh import query as q
    from whoosh.query import Query

if TYPE_CHECKING:
    from whoosh.index import Index

    from vaultmem.index.impact import ImpactIndex
    from vaultmem.note import Note

# Each build lives in its own folder, ``whoosh-<generation>``; the manifest names the
# live one. ``whoosh`` alone is where releases before generations kept it.
DIR_PREFIX = "whoosh-"
LEGACY_DIR = "whoosh"
# Whoosh's own lock file comes and goes with writers; it is not part of the index.
_NOT_INDEX = "_WRITELOCK"

BM25_K1 = 1.5
BM25_B = 0.85
# Prefix matching (build_query): a short last word ("postg", "pgb") and a word the
# vault lacks ("pagin") also match the vault terms they start, each at a fraction of a
# typed word's weight, at most PREFIX_TERMS of them (those most notes hold) per word.
PREFIX_MAX_LEN = 4
PREFIX_MIN_LEN = 3
PREFIX_LAST_WORDS = 1
PREFIX_WEIGHT = 0.3
PREFIX_TERMS = 5
PREFIX_SCAN = 2000
# A query word (and whether it is a short last word) → the vault terms it may start.
Prefixed = Callable[[str, bool], list[str]]


@dataclass(frozen=True)
class LexicalHit:
    """A raw BM25 hit with the stored fields the CLI shows."""

    path: str
    score: float
    title: str
    type: str
    status: str
    memory: str = "{}"  # vaultmem's frontmatter keys, JSON
    quality: float = 0.0
    modified: float = 0.0  # the file's mtime, POSIX seconds

    def entry(self) -> Entry:
        """The manifest-like entry the memory prior needs (from the stored fields)."""
        return Entry(
            mtime_ns=int(self.modified * 1e9),
            size=0,
            hash="",
            title=self.title,
            type=self.type,
            status=self.status,
            memory=json.loads(self.memory or "{}"),
            quality=self.quality,
        )


def _hit(path: str, score: float, doc: Mapping[str, Any]) -> LexicalHit:
    """A hit from a document's stored fields."""
    return LexicalHit(
        path=path,
        score=score,
        title=doc.get("title", ""),
        type=doc.get("type", "note"),
        status=doc.get("status", "active"),
        memory=doc.get("memory") or "{}",
        quality=float(doc.get("quality") or 0.0),
        modified=float(doc.get("modified") or 0.0),
    )


def location(cache_dir: Path, generation: str) -> Path:
    """The folder of one generation of the keyword index."""
    return cache_dir / f"{DIR_PREFIX}{generation}"


def new_generation() -> str:
    """A fresh generation id (unique: a rebuild never writes into a live folder)."""
    import secrets  # for writers only: a search never starts a generation

    return f"{time.time_ns():x}{secrets.token_hex(2)}"


def fingerprint(directory: Path) -> str:
    """Name, size and mtime of every index file: any write from outside vaultmem shows."""
    files = []
    with os.scandir(directory) as it:
        for item in it:
            if item.is_file() and not item.name.endswith(_NOT_INDEX):
                st = item.stat()
                files.append([item.name, st.st_size, st.st_mtime_ns])
    return json.dumps(sorted(files), separators=(",", ":"))


def check(directory: Path, expected: str) -> str:
    """Why the index in ``directory`` cannot be trusted ("" when its files are as recorded)."""
    try:
        actual = fingerprint(directory)
    except OSError:
        return "is missing"
    return "" if actual == expected else "was changed outside vaultmem (damaged?)"


def has_generations(cache_dir: Path) -> bool:
    """Whether any generation of the keyword index is on disk."""
    return any(cache_dir.glob(f"{DIR_PREFIX}*"))


def remove_generations(cache_dir: Path, keep: str) -> None:
    """Delete every keyword-index folder but generation ``keep`` (the legacy one too)."""
    live = location(cache_dir, keep).name
    with os.scandir(cache_dir) as it:
        stale = [
            Path(item.path)
            for item in it
            if (item.name.startswith(DIR_PREFIX) or item.name == LEGACY_DIR)
            and item.name != live
            and item.is_dir(follow_symlinks=False)
        ]
    for path in stale:
        remove_tree(cache_dir, path)


def damaged(directory: Path, exc: BaseException, hint: str = "") -> IndexStateError:
    """The one-line error for a keyword index Whoosh cannot read."""
    tail = f"; {hint}" if hint else ""
    return IndexStateError(f"{directory}: damaged keyword index ({exc}){tail}")


class LexicalIndex:
    """The Whoosh index of one vault. Writers must hold the vault lock."""

    def __init__(self, index: Index, directory: Path, *, fast: bool = False) -> None:
        self._ix = index
        self.directory = directory
        self.fast = fast
        self._searcher: Any = None
        self._impacts: ImpactIndex | None = None

    @classmethod
    def open(cls, cache_dir: Path, *, fast: bool = False) -> LexicalIndex:
        """The live keyword index, the generation the manifest names (for readers).

        A vault never indexed, or an index that is missing, changed outside vaultmem or
        unreadable, is an IndexStateError naming the command that heals it. ``fast``: for
        a process that searches again and again (a server), scores from postings cached
        as arrays (:mod:`vaultmem.index.impact`; the same hits, scores and order).
        """
        for _attempt in range(3):
            state = mf.read_state(cache_dir)
            if not state.generation:
                raise mf.not_indexed()
            directory = location(cache_dir, state.generation)
            # Pending: a writer is between its first Whoosh write and the manifest
            # commit (or was killed there); Whoosh's table of contents keeps the
            # files a reader opens consistent, and the next `index` re-checks them.
            problem = "" if state.pending else check(directory, state.fingerprint)
            if not problem:
                return cls.open_dir(directory, hint="run `vaultmem index`", fast=fast)
            time.sleep(0.05)  # a writer may be between its keyword and manifest commits
        raise IndexStateError(f"{directory}: keyword index {problem}; run `vaultmem index`")

    @classmethod
    def open_dir(cls, directory: Path, *, hint: str = "", fast: bool = False) -> LexicalIndex:
        """The index in ``directory`` (writers, which hold the vault lock, use this)."""
        try:
            return cls(windex.open_dir(str(directory)), directory, fast=fast)
        except Exception as exc:  # whoosh raises many kinds on a damaged index
            raise damaged(directory, exc, hint) from None

    @classmethod
    def create(cls, directory: Path) -> LexicalIndex:
        """A new, empty index in ``directory`` (whatever was there is deleted)."""
        make_cache(directory.parent)
        remove_tree(directory.parent, directory)
        directory.mkdir(exist_ok=True)
        return cls(windex.create_in(str(directory), build_schema()), directory)

    def doc_count(self) -> int:
        """How many notes the index holds."""
        return int(self._ix.doc_count())

    def update(
        self,
        notes: Iterable[Note],
        *,
        remove: Sequence[str] = (),
        fresh: bool = False,
        on_note: Callable[[], None] | None = None,
    ) -> None:
        """Add or replace ``notes`` and drop the ``remove`` paths, in one commit.

        ``fresh`` means the index was empty: plain adds skip Whoosh's per-document
        delete-by-path, the costliest part of an update.
        """
        writer = self.writer()
        try:
            for path in remove:
                writer.delete_by_term("path", path)
            put = writer.add_document if fresh else writer.update_document
            for note in notes:
                put(**note_document(note))
                if on_note is not None:
                    on_note()
        except BaseException:
            writer.cancel()
            raise
        writer.commit()

    @staticmethod
    def write_segment(directory: Path, notes: Iterable[Note]) -> Any:
        """Write ``notes`` as one new, unattached segment and return it (None if empty).

        Runs in worker processes during a parallel build: each writes its own segment
        without taking Whoosh's lock, and the parent attaches them all in one commit.
        """
        writer = LexicalSegmentWriter(
            windex.open_dir(str(directory)), _lk=False, limitmb=128, **WRITER_OPTIONS
        )
        added = 0
        for note in notes:
            writer.add_document(**note_document(note))
            added += 1
        if not added:
            writer.cancel()
            return None
        return writer._finalize_segment()

    def attach_segments(self, segments: Sequence[Any]) -> None:
        """Make segments written by :meth:`write_segment` part of the index, atomically."""
        writer = self.writer()
        try:
            writer._close_segment()
            writer._commit_toc([*writer.segments, *segments])
        finally:
            writer._finish()

    def writer(self) -> Any:
        """A Whoosh segment writer with vaultmem's codec (caller holds the vault lock)."""
        return LexicalSegmentWriter(self._ix, limitmb=256, **WRITER_OPTIONS)

    def searcher(self) -> Any:
        """The BM25F searcher, opened once and kept: opening reads every segment's columns.

        Readers never block writers; a long-lived process calls :meth:`close` (or makes a
        new LexicalIndex) to see later commits.
        """
        if self._searcher is None:
            with self._guard():
                weighting = LiveBM25F(B=BM25_B, K1=BM25_K1)
                searcher = self._ix.searcher(weighting=weighting)
                weighting.stats = LiveStats(searcher.reader())
                self._searcher = searcher
        return self._searcher

    def live_stats(self) -> LiveStats:
        """The statistics of the live documents the searcher scores with."""
        stats = self.searcher().weighting.stats
        assert isinstance(stats, LiveStats)
        return stats

    @contextmanager
    def _guard(self) -> Iterator[None]:
        """Whoosh's errors on damaged files, as one line naming the command that heals."""
        try:
            yield
        except (VaultmemError, KeyboardInterrupt, MemoryError):
            raise
        except Exception as exc:
            raise damaged(self.directory, exc, "run `vaultmem index`") from None

    def refresh(self) -> None:
        """See commits made since the searcher opened (another process's update)."""
        if self._searcher is not None:
            with self._guard():
                if not self._searcher.up_to_date():
                    # Not Searcher.refresh(): it reuses a segment's reader by segment id,
                    # so deletions committed since (an updated note) stay invisible.
                    self._searcher.close()
                    self._searcher = None

    def close(self) -> None:
        """Release the searcher's files."""
        self._impacts = None
        if self._searcher is not None:
            self._searcher.close()
            self._searcher = None

    def search(
        self, text: str, *, limit: int, filters: Filters = Filters(), lead: bool = False
    ) -> list[LexicalHit]:
        """BM25F over title, aliases, headings, tags and body; any input string is safe.

        ``lead``: BM25 over the lead field instead (title + opening,
        :data:`~vaultmem.index.lexical_schema.LEAD_CHARS`); an index built before that
        field existed has no lead hits.
        """
        if lead and LEAD_FIELD not in self._ix.schema:
            return []
        searcher = self.searcher()
        with self._guard():
            query = build_lead_query(text) if lead else build_query(text, self._prefixed)
            if query is None or limit <= 0:
                return []
            return self._ranked(searcher, query, limit, filters)

    def _ranked(
        self, searcher: Any, query: Query, limit: int, filters: Filters
    ) -> list[LexicalHit]:
        """The best ``limit`` hits, equal scores in path order.

        Whoosh breaks ties by document number, which a rebuild renumbers; asking for one
        more than needed (more while the tie runs on) makes the cut independent of it.
        """
        found = self._impact_ranked(searcher, query, limit, filters)
        if found is not None:
            return found
        wanted = limit + 1
        while True:
            # Block-max skipping needs per-posting length stats, which this codec leaves
            # out (see lexical_schema.LexicalCodec); without them it only adds overhead: score all.
            results = searcher.search(
                query, limit=wanted, filter=_filter(filters), mask=_mask(filters), optimize=False
            )
            hits = [_hit(r["path"], float(r.score), r) for r in results]
            if len(hits) < wanted or hits[-1].score != hits[limit - 1].score:
                break
            wanted *= 4
        hits.sort(key=lambda h: (-h.score, h.path))
        return hits[:limit]

    @property
    def cached_bytes(self) -> int:
        """The bytes of postings the fast path keeps (0 when not ``fast``)."""
        return self._impacts.cached_bytes if self._impacts is not None else 0

    def _impact_ranked(
        self, searcher: Any, query: Query, limit: int, filters: Filters
    ) -> list[LexicalHit] | None:
        """:meth:`_ranked` from the searcher's cached postings (``fast`` only; None when
        off, or for a query it leaves to Whoosh)."""
        if not self.fast:
            return None
        if self._impacts is None or self._impacts.searcher is not searcher:
            from vaultmem.index.impact import ImpactIndex  # numpy: for warm processes only

            # The store outlives the searcher: a write leaves its other segments as they were.
            store = self._impacts.store if self._impacts is not None else None
            self._impacts = ImpactIndex(searcher, store)
        found = self._impacts.ranked(query, limit, _filter(filters), _mask(filters))
        if found is None:
            return None
        return [_hit(doc["path"], score, doc) for score, doc in found]

    def matched_terms(self, text: str) -> list[str]:
        """The terms :meth:`search` looks for: the query's own, then those it matches by
        prefix (what a snippet should show)."""
        terms = query_terms(text[:2000])
        with self._guard():
            return [*terms, *prefix_terms(text, terms, self._prefixed)]

    def _prefixed(self, word: str, short_last: bool) -> list[str]:
        """The vault's terms ``word`` may be the start of (see :func:`build_query`)."""
        stats = self.live_stats()
        if not short_last and stats.doc_frequency("text", stemmed(word) or word) > 0:
            return []
        return stats.prefixed("text", word, limit=PREFIX_TERMS, scan=PREFIX_SCAN)

    def idf(self, terms: Iterable[str]) -> dict[str, float]:
        """Each term's BM25 inverse document frequency in the ``text`` field."""
        with self._guard():
            stats = self.live_stats()
            n = stats.doc_count
            frequencies = {t: stats.doc_frequency("text", t) for t in terms}
        return {t: math.log(1 + (n - df + 0.5) / (df + 0.5)) for t, df in frequencies.items()}

    def score_ceiling(self, text: str) -> float:
        """The most a note could score for ``text`` here: BM25 saturates a term's
        frequency below ``K1 + 1``, so Σ over the query's terms of (K1 + 1) × the IDF
        :meth:`search` scores with (a word no note holds counts at the highest IDF). Terms
        matched by prefix are left out: they stand in for a typed word."""
        terms = query_terms(text[:2000])[:64]
        with self._guard():
            stats = self.live_stats()
            return (BM25_K1 + 1) * sum(stats.idf("text", term) for term in terms)

    def entries(self, paths: Iterable[str]) -> dict[str, Entry]:
        """Manifest-like entries (title, type, status, memory keys, quality) of ``paths``.

        Read from the index's stored fields, so ranking needs no manifest and no note.
        Paths the index does not hold are left out.
        """
        searcher = self.searcher()
        with self._guard():
            docs = {path: searcher.document(path=path) for path in paths}
        return {path: _hit(path, 0.0, doc).entry() for path, doc in docs.items() if doc}

    def stored(self, path: str) -> dict[str, Any] | None:
        """The stored fields of one note, or None."""
        searcher = self.searcher()
        with self._guard():
            doc = searcher.document(path=path)
        return dict(doc) if doc else None


def build_query(text: str, prefixed: Prefixed | None = None) -> Query | None:
    """An OR of the query's terms over the BM25F text (None when the text has no terms).

    With ``prefixed``, the terms :func:`prefix_terms` adds count :data:`PREFIX_WEIGHT`
    of a typed word each.
    """
    terms = query_terms(text[:2000])
    if not terms:
        return None
    clauses: list[Query] = [q.Term("text", term) for term in terms[:64]]
    if prefixed is not None and PREFIX_WEIGHT > 0:
        extra = prefix_terms(text, terms, prefixed)
        clauses += [q.Term("text", term, boost=PREFIX_WEIGHT) for term in extra]
    return q.Or(clauses)


def prefix_terms(text: str, terms: Sequence[str], prefixed: Prefixed) -> list[str]:
    """The vault terms a query's words may be the start of, beyond its own ``terms``.

    The last word when it is short and the query is one word (type-ahead: "postg",
    "pgb"), and any word of at least :data:`PREFIX_MIN_LEN` letters the vault does not
    hold ("pagin" → paginated): each gives the :data:`PREFIX_TERMS` terms it starts that
    most notes hold (``prefixed``: :meth:`LiveStats.prefixed`).
    """
    words = [w for w in WORD_RE.findall(text[:200].lower()) if w not in ENGLISH_STOP_WORDS]
    last = words[-1] if 0 < len(words) <= PREFIX_LAST_WORDS else ""
    typed = set(terms)
    out: list[str] = []
    for word in dict.fromkeys(words):
        short_last = word == last and 2 <= len(word) <= PREFIX_MAX_LEN
        if not short_last and len(word) < PREFIX_MIN_LEN:
            continue
        for term in prefixed(word, short_last):
            if term not in typed:
                typed.add(term)
                out.append(term)
    return out


def build_lead_query(text: str) -> Query | None:
    """An OR of the query's terms over the lead field (None when the text has no terms)."""
    terms = query_terms(text[:2000])
    if not terms:
        return None
    return q.Or([q.Term(LEAD_FIELD, term) for term in terms[:64]])


def _filter(filters: Filters) -> Query | None:
    parts: list[Query] = []
    if filters.folder:
        parts.append(q.Term("folders", filters.folder.strip("/")))
    if filters.tag:
        parts.append(q.Term("tagtree", filters.tag.lstrip("#").lower()))
    if filters.type:
        parts.append(q.Term("type", filters.type.lower()))
    if filters.status:
        parts.append(q.Term("status", filters.status.lower()))
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else q.And(parts)


def _mask(filters: Filters) -> Query | None:
    if filters.status:
        return None
    return q.Or([q.Term("status", s) for s in HIDDEN_STATUSES])
