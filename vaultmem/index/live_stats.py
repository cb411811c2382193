"""BM25 statistics over the notes the keyword index holds now, however it was written.

Whoosh keeps a replaced or removed document in its segment, marked deleted, until a
merge rewrites that segment, and until then it counts it: in the document count, in
its terms' document frequencies and in its fields' total length. A merge then stores
each document's length on Whoosh's one-byte scale, while a fresh segment sums the
exact lengths. BM25's IDF and average field length therefore depended on the index's
history: after 15 `touch` calls a hit scored 12.45, and 15.78 after `index --rebuild`.

:class:`LiveStats` counts the live documents only, and their exact lengths, which the
keyword index keeps per note in a column of each scored field (:func:`length_field`;
a merge copies columns as they are), so every index of the same notes (incremental,
merged, rebuilt, built in parallel) has the same statistics, and :class:`LiveBM25F`
scores with them: a rebuild answers as the incremental path did. Cost: one pass over
each segment's length column when a searcher opens (4 bytes a note, summed in C), and
per query term a skip through its postings to the few deleted documents.
"""

from __future__ import annotations

import math
import sys
import threading
from array import array
from collections import Counter
from typing import Any

from vaultmem.index.whoosh_light import light_imports

with light_imports():
    from whoosh import scoring
    from whoosh.codec.whoosh3 import LENGTHS_COLUMN, _lenfield
    from whoosh.reading import TermNotFound
    from whoosh.util.numeric import byte_to_length

__all__ = ["LiveBM25F", "LiveStats", "field_length", "length_field"]

# A segment with at least this many deleted documents per posting of a term is counted
# by walking the term's postings rather than by skipping to each deleted document.
_WALK_RATIO = 0.125


def length_field(name: str) -> str:
    """The column holding each note's exact length of the scored field ``name``."""
    return f"len_{name}"


def field_length(field: Any, value: Any) -> int:
    """A document's length of ``field``: what Whoosh sums into the segment's total, the
    frequency of every posting ``field`` makes of ``value``."""
    return sum(freq for _term, freq, _weight, _encoded in field.index(value))


def _term_bytes(text: str | bytes) -> bytes:
    return text if isinstance(text, bytes) else text.encode("utf-8")


class _Leaf:
    """One segment: its reader and its deleted document numbers (ascending)."""

    def __init__(self, reader: Any) -> None:
        self.reader = reader
        self.deleted: list[int] = sorted(reader.deleted_docs_set) if reader.has_deletions() else []
        self.deleted_set = frozenset(self.deleted)

    def deleted_with(self, field: str, term: bytes, df: int) -> int:
        """How many deleted documents of this segment hold ``term`` in ``field``."""
        if not self.deleted or df == 0:
            return 0
        try:
            postings = self.reader.postings(field, term)
        except TermNotFound:
            return 0
        # Past the filter that hides deletions; it has moved its postings on past the
        # first deleted ones already, so back to the start.
        raw = getattr(postings, "child", postings)
        raw.reset()
        if len(self.deleted) >= _WALK_RATIO * df:
            return sum(1 for doc in raw.all_ids() if doc in self.deleted_set)
        found = 0
        for doc in self.deleted:
            if not raw.is_active():
                break
            if raw.id() < doc:
                raw.skip_to(doc)
                if not raw.is_active():
                    break
            if raw.id() == doc:
                found += 1
        return found

    def length_total(self, field: str) -> int:
        """The sum of the live documents' exact lengths of ``field`` (without the length
        column, in an index written before it: each length on Whoosh's one-byte scale)."""
        name = length_field(field)
        if name in self.reader.schema and self.reader.has_column(name):
            column = self.reader.column_reader(name, translate=False)
            values = array("I")
            values.frombytes(column._dbfile.get(column._basepos, column._count * 4))
            if sys.byteorder == "little":  # stored big-endian ("!I")
                values.byteswap()
            return sum(values) - sum(column[doc] for doc in self.deleted)
        perdoc = getattr(self.reader, "_perdoc", None)  # an empty index has none
        column = None if perdoc is None else perdoc._cached_reader(_lenfield(field), LENGTHS_COLUMN)
        if column is None:
            return 0
        stored = column._dbfile.get(column._basepos, column._count)  # one byte a document
        total = sum(byte_to_length(b) * n for b, n in Counter(stored).items())
        for doc in self.deleted:
            total -= self.reader.doc_field_length(doc, field) or 0
        return total


class LiveStats:
    """Document count, document frequencies and average field lengths of the live
    documents of one opened index (a reader's snapshot: made again for a new searcher).
    Values are computed when first asked for and kept."""

    def __init__(self, reader: Any) -> None:
        self.doc_count = int(reader.doc_count())
        self._leaves = [_Leaf(leaf) for leaf, _base in reader.leaf_readers()]
        self._df: dict[tuple[str, bytes], int] = {}
        self._avgfl: dict[str, float] = {}
        self._lock = threading.Lock()

    def doc_frequency(self, field: str, text: str | bytes) -> int:
        """How many live documents hold the term ``text`` in ``field``."""
        term = _term_bytes(text)
        key = (field, term)
        found = self._df.get(key)
        if found is None:
            found = 0
            for leaf in self._leaves:
                df = int(leaf.reader.doc_frequency(field, term))
                found += df - leaf.deleted_with(field, term, df)
            with self._lock:
                self._df[key] = found
        return found

    def avg_field_length(self, field: str) -> float:
        """The mean length of ``field`` over the live documents (1 for an empty index)."""
        found = self._avgfl.get(field)
        if found is None:
            total = sum(leaf.length_total(field) for leaf in self._leaves)
            found = total / self.doc_count if self.doc_count and total > 0 else 1.0
            with self._lock:
                self._avgfl[field] = found
        return found

    def idf(self, field: str, text: str | bytes) -> float:
        """Whoosh's BM25F IDF, ``log(N / (df + 1)) + 1``, over live documents."""
        n = self.doc_count
        return math.log(n / (self.doc_frequency(field, text) + 1)) + 1 if n else 1.0

    def prefixed(self, field: str, prefix: str, *, limit: int, scan: int) -> list[str]:
        """The ``limit`` terms of ``field`` that start with ``prefix`` and most live
        documents hold (ties: alphabetical); terms only deleted documents hold are never
        returned. Only the first ``scan`` such terms (alphabetically) are looked at."""
        counts: Counter[bytes] = Counter()
        for leaf in self._leaves:
            try:
                for n, (term, info) in enumerate(leaf.reader.iter_prefix(field, prefix)):
                    if n >= scan:
                        break
                    counts[bytes(term)] += int(info.doc_frequency())
            except TermNotFound:
                continue
        scanned = sorted(counts)[:scan]
        # Deleted documents only lower a count: walk by the stored counts and stop once
        # no term left can beat the ``limit`` best live ones.
        best: list[tuple[int, bytes]] = []
        for term in sorted(scanned, key=lambda t: (-counts[t], t)):
            if len(best) >= limit and counts[term] < best[-1][0]:
                break
            live = self.doc_frequency(field, term)
            if live > 0:
                best = sorted([*best, (live, term)], key=lambda i: (-i[0], i[1]))[:limit]
        return [term.decode("utf-8") for _, term in best]


class LiveBM25F(scoring.BM25F):
    """Whoosh's BM25F with IDF and average field length from :class:`LiveStats`.

    ``stats`` is set once the searcher it scores for is open (the statistics are of that
    searcher's reader).
    """

    stats: LiveStats | None = None

    def scorer(self, searcher: Any, fieldname: str, text: Any, qf: float = 1) -> Any:
        """A BM25F scorer for one term of one segment, with the live statistics."""
        if self.stats is None or not searcher.schema[fieldname].scorable:
            return super().scorer(searcher, fieldname, text, qf=qf)
        b = self._field_B.get(fieldname, self.B)
        idf = self.stats.idf(fieldname, text)
        avgfl = self.stats.avg_field_length(fieldname)
        return _LiveScorer(searcher, fieldname, text, b, self.K1, idf, avgfl, qf)


class _LiveScorer(scoring.WeightLengthScorer):
    """BM25 of one term's weight and the document's field length (Whoosh's formula)."""

    def __init__(
        self,
        searcher: Any,
        fieldname: str,
        text: Any,
        b: float,
        k1: float,
        idf: float,
        avgfl: float,
        qf: float,
    ) -> None:
        self.idf, self.avgfl, self.B, self.K1, self.qf = idf, avgfl, b, k1, qf
        self.setup(searcher, fieldname, text)

    def _score(self, weight: float, length: float) -> float:
        return float(scoring.bm25(self.idf, weight, length, self.avgfl, self.B, self.K1))
