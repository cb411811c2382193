"""`impact`: Whoosh's BM25F answers from postings cached as arrays, for a warm process.

Whoosh scores a query posting by posting in Python (a matcher tree stepped a document at
a time, a scorer call and a heap push each): about 8 µs a posting, so a search of the
95,556-note vault cost 81 ms at the median and 377 ms at p95 inside the server. Here a
query term's postings in a segment are read once, through Whoosh's public matcher API
(about 0.4 µs a posting), into numpy arrays of document numbers and weights, and a query
is scored with a few array operations.

The answers are Whoosh's, float for float:

- each posting's score is :class:`~vaultmem.index.live_stats.LiveBM25F`'s, the same
  IEEE operations in the same order: ``idf × (w × (K1 + 1)) / (w + K1 × ((1 − B) +
  B × length / avg length))``, with the live IDF and average length and the one-byte
  document length Whoosh's scorer reads; a boosted term's times its boost;
- a document's terms are added in the order Whoosh's matcher adds them, per segment: for
  an OR of two terms, or of more in a segment of more than 5,000 documents, a Huffman
  tree of union matchers weighted by the segment's document frequencies, else left to
  right (its array union); floating-point addition does not associate, and equal notes
  in two segments must tie exactly for the cut to go by path;
- a filter and a mask let through what Whoosh's filter collector does;
- every match is scored and the best are cut with equal scores in path order, as
  ``LexicalIndex._ranked`` does.

That is what Whoosh answers when it collects every match (``limit=None``). Its top-k
collector answers the same but for rare queries: once it knows a minimum score it swaps
union matchers for intersection and and-maybe matchers, and those can leave a term out of
a document's sum (on the 15,926-note vault "print python3 version information" scored
man1/xmlsec1-config.1.md 11.19 there instead of 17.54, and left it out of the top 10).

A query of another shape (anything but an OR of terms of scored fields) gets None, and
the caller asks Whoosh.

What is kept: a :class:`PostingStore` holds postings and document lengths per Whoosh
segment, which never changes once written (a write adds a segment, marks documents
deleted, or merges segments into a new one), so the store outlives searchers: after a
write only the new segment's postings are read, and deletions are applied to what is
kept. It is bounded in bytes, least recently used terms dropped first. An
:class:`ImpactIndex` is one searcher's view (its statistics, filters, stored fields).
"""

from __future__ import annotations

import threading
from bisect import insort
from collections import OrderedDict
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from vaultmem.index.live_stats import LiveBM25F
from vaultmem.index.whoosh_light import light_imports

with light_imports():
    from whoosh import query as q
    from whoosh.query import Query

__all__ = ["CACHE_BYTES", "ImpactIndex", "PostingStore"]

# Postings kept (8 bytes a posting: document number and weight); the 95,556-note
# vault's text field holds 11.4 M. Least recently used terms go first.
CACHE_BYTES = 64 << 20
# An OR of more than two terms adds its scores left to right (Whoosh's array union) in a
# segment of at most this many documents, else in a tree of unions (Or._matcher).
_ARRAY_UNION_DOCS = 5000
# Stored fields of hits kept per searcher, and filters kept as document masks.
_STORED_DOCS = 4096
_FILTERS = 64

Floats = npt.NDArray[np.float64]
Ints = npt.NDArray[np.int32]
_EMPTY_DOCS: Ints = np.empty(0, dtype=np.int32)
_EMPTY_SCORES: Floats = np.empty(0, dtype=np.float64)


@dataclass(frozen=True, eq=False)
class _Run:
    """One term's postings in one segment, live when read."""

    docs: Ints  # the segment's document numbers, ascending
    weights: npt.NDArray[np.floating[Any]]  # float32 when that holds them exactly
    frequency: int  # the segment's document frequency, deleted documents included
    deleted: frozenset[int]  # the segment's deleted documents when read

    @property
    def nbytes(self) -> int:
        return int(self.docs.nbytes + self.weights.nbytes) + 200


class PostingStore:
    """Postings and one-byte document lengths of Whoosh segments, kept across searchers.

    Example:
        >>> store = PostingStore()  # doctest: +SKIP
        >>> ImpactIndex(searcher, store).ranked(query, 10, None, None)  # doctest: +SKIP
    """

    def __init__(self, budget: int = CACHE_BYTES) -> None:
        self.budget = budget
        self._runs: OrderedDict[tuple[str, str, bytes], _Run] = OrderedDict()
        self._bytes = 0
        self._lengths: dict[tuple[str, str], Floats] = {}
        self._lock = threading.Lock()

    @property
    def cached_bytes(self) -> int:
        """The bytes of postings kept now."""
        return self._bytes

    def keep_only(self, segments: Iterable[str]) -> None:
        """Forget the segments not in ``segments`` (merged away, or another index's)."""
        live = set(segments)
        with self._lock:
            for gone in [k for k in self._lengths if k[0] not in live]:
                del self._lengths[gone]
            for stale in [k for k in self._runs if k[0] not in live]:
                self._bytes -= self._runs.pop(stale).nbytes

    def run(self, leaf: Any, segment: str, field: str, term: bytes) -> _Run:
        """The live postings of ``term`` in one segment (kept, or read and kept)."""
        key = (segment, field, term)
        deleted: frozenset[int] = leaf.deleted_docs_set if leaf.has_deletions() else frozenset()
        with self._lock:
            found = self._runs.get(key)
            if found is not None:
                self._runs.move_to_end(key)
        if found is not None and found.deleted is not deleted:
            if found.deleted == deleted:
                found = _Run(found.docs, found.weights, found.frequency, deleted)
            elif found.deleted <= deleted:  # deleted since: drop them from what is kept
                gone = np.fromiter(deleted - found.deleted, dtype=np.int32)
                keep = ~np.isin(found.docs, gone)
                found = _Run(found.docs[keep], found.weights[keep], found.frequency, deleted)
            else:
                found = None  # a segment never loses deletions; read again if it did
            if found is not None:
                self._put(key, found)
        if found is None:
            found = _read_run(leaf, field, term, deleted)
            self._put(key, found)
        return found

    def _put(self, key: tuple[str, str, bytes], run: _Run) -> None:
        if run.nbytes > self.budget:
            return
        with self._lock:
            old = self._runs.pop(key, None)
            if old is not None:
                self._bytes -= old.nbytes
            self._runs[key] = run
            self._bytes += run.nbytes
            while self._bytes > self.budget:
                _key, dropped = self._runs.popitem(last=False)
                self._bytes -= dropped.nbytes

    def lengths(self, leaf: Any, segment: str, field: str) -> Floats:
        """Each document's length of ``field`` in one segment as Whoosh's scorer reads it
        (its one-byte length; a document without the field has no postings to score)."""
        key = (segment, field)
        found = self._lengths.get(key)
        if found is None:
            length = leaf.doc_field_length
            found = np.array(
                [length(doc, field, 1) or 1 for doc in range(leaf.doc_count_all())],
                dtype=np.float64,
            )
            with self._lock:
                self._lengths[key] = found
        return found


def _read_run(leaf: Any, field: str, term: bytes, deleted: frozenset[int]) -> _Run:
    """A term's live postings in one segment, read through Whoosh's matcher."""
    frequency = int(leaf.doc_frequency(field, term))
    if not frequency:  # not in this segment
        return _Run(_EMPTY_DOCS, _EMPTY_SCORES, frequency, deleted)
    docs: list[int] = []
    weights: list[float] = []
    matcher = leaf.postings(field, term)  # deleted documents left out
    active, ident, weight, step = matcher.is_active, matcher.id, matcher.weight, matcher.next
    while active():
        docs.append(ident())
        weights.append(weight())
        step()
    exact = np.array(weights, dtype=np.float64)
    narrow = exact.astype(np.float32)  # Whoosh keeps weights as 32-bit floats
    kept = narrow if np.array_equal(narrow, exact) else exact
    return _Run(np.array(docs, dtype=np.int32), kept, frequency, deleted)


@dataclass(frozen=True)
class _Clause:
    field: str
    term: bytes | None  # None: the field cannot hold the text (Whoosh matches nothing)
    boost: float


@dataclass(frozen=True)
class _Segment:
    leaf: Any
    base: int
    size: int
    id: str


class ImpactIndex:
    """One Whoosh searcher's queries scored from a :class:`PostingStore`, as Whoosh would.

    Example:
        >>> fast = ImpactIndex(searcher)  # doctest: +SKIP
        >>> [doc["path"] for _score, doc in fast.ranked(query, 3, None, None)]  # doctest: +SKIP
    """

    def __init__(self, searcher: Any, store: PostingStore | None = None) -> None:
        self.searcher = searcher
        self.store = store if store is not None else PostingStore()
        reader = searcher.reader()
        self._segments = [
            _Segment(leaf, base, int(leaf.doc_count_all()), _segment_id(leaf))
            for leaf, base in reader.leaf_readers()
        ]
        self._usable = reader.doc_count_all() > 0 and all(s.id for s in self._segments)
        if self._usable:
            self.store.keep_only(s.id for s in self._segments)
        self._doc_total = int(reader.doc_count_all())
        self._norms: dict[tuple[int, str], Floats] = {}
        self._idf: dict[tuple[str, bytes], float] = {}
        self._filters: OrderedDict[Hashable, npt.NDArray[np.bool_]] = OrderedDict()
        self._stored: OrderedDict[int, dict[str, Any]] = OrderedDict()
        self._paths: dict[int, str] = {}
        self._lock = threading.Lock()

    @property
    def cached_bytes(self) -> int:
        """The bytes of postings its store keeps now."""
        return self.store.cached_bytes

    def ranked(
        self, query: Query, limit: int, allow: Query | None, restrict: Query | None
    ) -> list[tuple[float, dict[str, Any]]] | None:
        """The best ``limit`` documents for ``query`` among those ``allow`` matches (all
        when None) and ``restrict`` does not, as (score, stored fields), best first and
        equal scores in path order; None for a query Whoosh must answer itself."""
        clauses = self._clauses(query)
        if clauses is None:
            return None
        if limit <= 0 or not clauses or not self._doc_total:
            return []
        combination = _combination(query, len(clauses))
        found_docs: list[Ints] = []
        found_scores: list[Floats] = []
        for number, segment in enumerate(self._segments):
            docs, scores = self._segment_scores(number, segment, clauses, combination)
            if docs.size:
                found_docs.append(docs + segment.base)
                found_scores.append(scores)
        if not found_docs:
            return []
        docs = np.concatenate(found_docs)
        scores = np.concatenate(found_scores)
        allowed = self._allowed(allow, restrict)
        if allowed is not None:
            keep = allowed[docs]
            docs, scores = docs[keep], scores[keep]
        return self._best(docs, scores, limit)

    # --- the query ---------------------------------------------------------------------

    def _clauses(self, query: Query) -> list[_Clause] | None:
        """The terms Whoosh would score for ``query``; None for a shape this cannot
        answer exactly (the caller asks Whoosh)."""
        weighting = self.searcher.weighting
        if not self._usable or not isinstance(weighting, LiveBM25F) or weighting.stats is None:
            return None
        if type(query) is q.Term:
            terms: Sequence[Any] = [query]
        elif type(query) is q.Or:
            if query.boost != 1.0 or query.scale or query.matcher_type == q.Or.SPLIT_MATCHER:
                return None
            terms = query.subqueries
        else:
            return None
        schema = self.searcher.schema
        clauses = []
        for term in terms:
            if type(term) is not q.Term or term.minquality:
                return None
            try:
                field = schema[term.fieldname]
            except KeyError:  # Whoosh matches nothing in a field its schema lacks
                field = None
            if field is not None and not field.scorable:
                return None  # Whoosh scores it by weight alone
            btext: bytes | None = None
            if field is not None:
                try:
                    btext = field.to_bytes(term.text)
                except ValueError:
                    btext = None
            clauses.append(_Clause(term.fieldname, btext, float(term.boost)))
        return clauses

    def _segment_scores(
        self, number: int, segment: _Segment, clauses: list[_Clause], combination: str
    ) -> tuple[Ints, Floats]:
        """The matching documents of one segment (its numbering) and their scores, added
        in the order Whoosh's matcher for this segment adds them (:func:`_combination`)."""
        parts: list[tuple[Ints, Floats] | None] = []
        frequencies: list[int] = []
        low, high = segment.size, -1
        for clause in clauses:
            run = None
            if clause.term is not None:
                run = self.store.run(segment.leaf, segment.id, clause.field, clause.term)
            frequencies.append(run.frequency if run is not None else 0)
            if run is None or not run.docs.size:
                parts.append(None)
                continue
            scores = self._scores(number, segment, clause, run)
            parts.append((run.docs, scores))
            low, high = min(low, int(run.docs[0])), max(high, int(run.docs[-1]))
        if high < 0:
            return _EMPTY_DOCS, _EMPTY_SCORES
        size = high - low + 1
        if combination == "auto":
            combination = "tree" if segment.size > _ARRAY_UNION_DOCS else "array"
        if combination == "tree":
            dense: list[Floats | None] = []
            for part in parts:
                if part is None:
                    dense.append(None)
                    continue
                values = np.zeros(size, dtype=np.float64)
                values[part[0] - low] = part[1]
                dense.append(values)
            total = _tree_sum(dense, frequencies)
            if total is None:
                return _EMPTY_DOCS, _EMPTY_SCORES
        else:
            # One term, or left to right from 0.0 (Whoosh's array union): 0.0 + x is x.
            total = np.zeros(size, dtype=np.float64)
            for part in parts:
                if part is not None:
                    total[part[0] - low] += part[1]
        matched = np.flatnonzero(total > 0)
        return (matched + low).astype(np.int32), total[matched]

    def _scores(self, number: int, segment: _Segment, clause: _Clause, run: _Run) -> Floats:
        """Each posting's score: Whoosh's ``bm25`` with LiveBM25F's statistics, operation
        for operation, then the term's boost (Whoosh wraps the term's matcher in it)."""
        assert clause.term is not None
        weighting = self.searcher.weighting
        key = (clause.field, clause.term)
        idf = self._idf.get(key)
        if idf is None:
            idf = self._idf[key] = weighting.stats.idf(clause.field, clause.term)
        tf = run.weights.astype(np.float64)
        norm = self._norm(number, segment, clause.field)[run.docs]
        scores: Floats = idf * ((tf * (weighting.K1 + 1)) / (tf + norm))
        return scores * clause.boost if clause.boost != 1.0 else scores

    def _norm(self, number: int, segment: _Segment, field: str) -> Floats:
        """``K1 × ((1 − B) + B × length / avg length)`` of each document of a segment."""
        key = (number, field)
        found = self._norms.get(key)
        if found is None:
            weighting = self.searcher.weighting
            k1, b = weighting.K1, weighting.B
            avgfl = weighting.stats.avg_field_length(field)
            lengths = self.store.lengths(segment.leaf, segment.id, field)
            found = self._norms[key] = k1 * ((1 - b) + b * lengths / avgfl)
        return found

    # --- filters and the cut -----------------------------------------------------------

    def _allowed(self, allow: Query | None, restrict: Query | None) -> npt.NDArray[np.bool_] | None:
        """Which documents Whoosh's filter collector lets through (None: all)."""
        allow = allow if allow else None  # Whoosh's collector ignores an empty query
        restrict = restrict if restrict else None
        if allow is None and restrict is None:
            return None
        key: Hashable = (allow, restrict)
        with self._lock:
            found = self._filters.get(key)
            if found is not None:
                self._filters.move_to_end(key)
                return found
        mask = np.ones(self._doc_total, dtype=np.bool_)
        if allow is not None:
            mask[:] = False
            mask[self._docs_for(allow)] = True
        if restrict is not None:
            mask[self._docs_for(restrict)] = False
        with self._lock:
            self._filters[key] = mask
            while len(self._filters) > _FILTERS:
                self._filters.popitem(last=False)
        return mask

    def _docs_for(self, query: Query) -> Ints:
        return np.fromiter(self.searcher.docs_for_query(query), dtype=np.int32)

    def _best(self, docs: Ints, scores: Floats, limit: int) -> list[tuple[float, dict[str, Any]]]:
        """The ``limit`` best of ``docs``: score descending, then path (every document
        scoring as the last one kept is looked at, so the cut does not depend on the
        order Whoosh numbered the documents in)."""
        if docs.size > limit:
            cut = np.partition(scores, docs.size - limit)[docs.size - limit]
            keep = scores >= cut
            docs, scores = docs[keep], scores[keep]
        numbers, values = docs.tolist(), scores.tolist()
        paths = [self._path(doc) for doc in numbers]
        order = sorted(range(len(paths)), key=lambda i: (-values[i], paths[i]))[:limit]
        return [(values[i], self._fields(numbers[i])) for i in order]

    def _path(self, doc: int) -> str:
        found = self._paths.get(doc)
        if found is None:
            found = self._paths[doc] = str(self._fields(doc)["path"])
        return found

    def _fields(self, doc: int) -> dict[str, Any]:
        """A document's stored fields (kept for the most recently shown)."""
        with self._lock:
            found = self._stored.get(doc)
            if found is not None:
                self._stored.move_to_end(doc)
                return found
        found = dict(self.searcher.stored_fields(doc))
        with self._lock:
            self._stored[doc] = found
            while len(self._stored) > _STORED_DOCS:
                self._stored.popitem(last=False)
        return found


def _segment_id(leaf: Any) -> str:
    """A Whoosh segment's id ("" for a reader that is not one segment's)."""
    segment = getattr(leaf, "segment", None)
    return str(segment().segment_id()) if callable(segment) else ""


def _combination(query: Query, terms: int) -> str:
    """How Whoosh adds up the terms' scores of a document (whoosh.query.compound.Or):
    "one" term alone, a "tree" of unions, its "array" union (left to right), or "auto":
    a tree in a segment of more than 5,000 documents or for two terms, else the array."""
    if type(query) is not q.Or or terms == 1:
        return "one"
    if query.matcher_type == q.Or.DEFAULT_MATCHER:
        return "tree"
    if query.matcher_type == q.Or.ARRAY_MATCHER or terms >= q.Or.TOO_MANY_CLAUSES:
        return "array"
    return "tree" if terms == 2 else "auto"


def _tree_sum(values: list[Floats | None], weights: list[int]) -> Floats | None:
    """Whoosh's ``make_weighted_tree`` of union matchers, evaluated: the two lightest
    subtrees joined first (a stable sort of (weight, matcher) pairs, since matchers of
    equal weight never compare less), each join inserted after those weighing no more;
    a union adds its sides' scores, a side without the document counts as 0.0."""
    store: list[Floats | None] = list(values)
    ordered = sorted((_Node(w, i) for i, w in enumerate(weights)), key=lambda n: n.weight)
    while len(ordered) > 1:
        a, b = ordered.pop(0), ordered.pop(0)
        left, right = store[a.index], store[b.index]
        if left is None:
            joined = right
        elif right is None:
            joined = left
        else:
            joined = left + right
        store.append(joined)
        insort(ordered, _Node(a.weight + b.weight, len(store) - 1))
    return store[ordered[0].index]


@dataclass(frozen=True)
class _Node:
    """A subtree in :func:`_tree_sum`: ordered by weight alone (``insort`` puts a new
    one after every node weighing the same, as it puts Whoosh's matchers)."""

    weight: int
    index: int

    def __lt__(self, other: _Node) -> bool:
        return self.weight < other.weight
