"""`segment_writer`: Whoosh segments written without Whoosh's per-posting machinery.

A cold index of 978 notes spent about half its CPU inside Whoosh's writer, nearly all of
it per posting: ``add_document`` loops over every (term, weight) pair, the posting pool
asserts and sizes each tuple, sorts them all, and the W3 postings writer takes them one
call at a time. The notes arrive already analysed (``{term: weight}`` maps), so this
module keeps each term's postings together from the start:

- :class:`TermPool` holds, per (field, term), the document numbers, weights and encoded
  values in flat arrays, and hands them over sorted by field and term;
- :class:`LexicalSegmentWriter` adds a pre-analysed field's map straight to that pool;
- :class:`LexicalFieldWriter` writes each term's blocks in one go.

The files are Whoosh's W3 format byte for byte (the tests compare them with Whoosh's own
writer), so every Whoosh reader, the merge on a later update and the warm path's posting
cache read them unchanged. That holds because the weights given here are exact in
float32 (sums of the field weights, multiples of 0.5): Whoosh keeps a block's largest
weight as given but its weights as float32.
"""

from __future__ import annotations

import struct
import zlib
from array import array
from collections.abc import Iterable, Iterator, Mapping
from pickle import dumps
from typing import Any

from vaultmem.index.whoosh_light import light_imports

with light_imports():
    from whoosh.codec.whoosh3 import (
        WHOOSH3_HEADER_MAGIC,
        W3FieldWriter,
        W3TermInfo,
        length_to_byte,
    )
    from whoosh.filedb.filetables import OrderedHashWriter
    from whoosh.system import pack_int, pack_uint, pack_ushort
    from whoosh.writing import SegmentWriter

__all__ = ["LexicalFieldWriter", "LexicalSegmentWriter", "TermPool", "frequency"]

_NO_LENGTH = length_to_byte(None)
_LENGTHS = struct.Struct("!ii")  # a hash table entry's key and value lengths


def frequency(weight: float) -> int:
    """The term frequency Whoosh stores for a BM25F weight (at least 1)."""
    return _coded(weight)[0]


# A weight's (frequency, encoded frequency): a vault's weights take few distinct values.
_CODES: dict[float, tuple[int, bytes]] = {}


def _coded(weight: float) -> tuple[int, bytes]:
    code = _CODES.get(weight)
    if code is None:
        freq = max(1, round(weight))
        code = (freq, pack_uint(freq))
        if len(_CODES) < 4096:
            _CODES[weight] = code
    return code


class _Postings:
    """One term's postings in one segment, in the order they were added."""

    __slots__ = ("docs", "weights", "values", "in_order")

    def __init__(self) -> None:
        self.docs = array("I")
        self.weights = array("f")
        self.values: list[bytes] = []
        self.in_order = True

    def add(self, docnum: int, weight: float, value: bytes) -> None:
        if self.docs and docnum <= self.docs[-1]:
            self.in_order = False
        self.docs.append(docnum)
        self.weights.append(weight)
        self.values.append(value)

    def sorted(self) -> _Postings:
        """These postings by document number (a merge may add them out of order)."""
        if self.in_order:
            return self
        ordered = _Postings()
        for i in sorted(range(len(self.docs)), key=self.docs.__getitem__):
            ordered.add(self.docs[i], self.weights[i], self.values[i])
        return ordered


class TermPool:
    """A segment's postings, kept per (field, term) and handed over sorted.

    It stands in for Whoosh's ``PostingPool``: ``add`` takes Whoosh's posting tuples (a
    merge of older segments sends those), :meth:`add_weighted` a whole field of one note.
    """

    def __init__(self) -> None:
        self._fields: dict[str, dict[bytes, _Postings]] = {}
        self.fieldnames: set[str] = set()

    def _terms(self, fieldname: str) -> dict[bytes, _Postings]:
        terms = self._fields.get(fieldname)
        if terms is None:
            terms = self._fields[fieldname] = {}
            self.fieldnames.add(fieldname)
        return terms

    def add(self, item: tuple[str, bytes, int, float, bytes | None]) -> None:
        """One posting as Whoosh's writer gives it: (field, term, doc, weight, value)."""
        fieldname, term, docnum, weight, value = item
        postings = self._terms(fieldname).get(term)
        if postings is None:
            postings = self._fields[fieldname][term] = _Postings()
        postings.add(docnum, weight, value or b"")

    def add_weighted(self, fieldname: str, docnum: int, weights: Mapping[str, float]) -> int:
        """A note's ``{term: weight}`` map for one field; returns the field's length."""
        terms = self._terms(fieldname)
        length = 0
        for term, weight in weights.items():
            key = term.encode("utf-8")
            postings = terms.get(key)
            if postings is None:
                postings = terms[key] = _Postings()
            elif postings.docs[-1] >= docnum:
                postings.in_order = False
            freq, value = _CODES.get(weight) or _coded(weight)
            length += freq
            # _Postings.add, inlined: this loop runs once per posting of every note.
            postings.docs.append(docnum)
            postings.weights.append(weight)
            postings.values.append(value)
        return length

    def grouped(self) -> Iterator[tuple[str, bytes, _Postings]]:
        """Every term's postings, by field name and then term bytes (Whoosh's order)."""
        for fieldname in sorted(self._fields):
            terms = self._fields[fieldname]
            for term in sorted(terms):
                yield fieldname, term, terms[term].sorted()

    def iter_postings(self) -> Iterator[tuple[str, bytes, int, float, bytes]]:
        """Whoosh's flat posting tuples, in order (for a reader of the plain interface)."""
        for fieldname, term, postings in self.grouped():
            for doc, weight, value in zip(
                postings.docs, postings.weights, postings.values, strict=True
            ):
                yield fieldname, term, doc, weight, value

    def cleanup(self) -> None:
        """Drop everything held (Whoosh calls this when a segment is closed)."""
        self._fields = {}


class _TermTable(OrderedHashWriter):
    """Whoosh's ordered hash of term infos, counting its own position in the file.

    Whoosh asks the file where it is twice per term, and on a buffered file each answer
    is a system call (a twentieth of a cold index). Only this table writes its file.
    """

    _position: int | None = None

    def add(self, key: bytes, value: bytes) -> None:
        """Add ``key`` (greater than every key before it) with ``value``, as Whoosh does."""
        last: bytes = self.__dict__["lastkey"]
        if key <= last:
            raise ValueError(f"Keys must increase: {last!r}..{key!r}")
        position = self._position if self._position is not None else self.dbfile.tell()
        self.index.append(position)
        self.dbfile.write(_LENGTHS.pack(len(key), len(value)) + key + value)
        hashed = self.hashfn(key)
        self.buckets[hashed & 255].append((hashed, position))
        self.lastkey = key
        self._position = position + _LENGTHS.size + len(key) + len(value)


class LexicalFieldWriter(W3FieldWriter):
    """W3's field writer, taking a :class:`TermPool`'s terms a whole term at a time."""

    def __init__(self, codec: Any, storage: Any, segment: Any) -> None:
        super().__init__(codec, storage, segment)
        self._tindex.__class__ = _TermTable  # the same table, its header already written

    def add_postings(self, schema: Any, lengths: Any, items: Iterable[Any]) -> None:
        """Write every term of ``items``; a pool's grouped terms skip the per-posting path."""
        if not isinstance(items, _Grouped) or lengths is not None:
            super().add_postings(schema, lengths, items)
            return
        current, fixed = None, None
        # Only this loop writes the file now; asking it for its position is a syscall.
        offset = self._postfile.tell()
        for fieldname, term, postings in items.pool.grouped():
            if fieldname != current:
                if current is not None:
                    self.finish_field()
                self.start_field(fieldname, schema[fieldname])
                current, fixed = fieldname, self._format.fixed_value_size()
            offset = self._write_term(term, postings, fixed, offset)
        if current is not None:
            self.finish_field()

    def _write_term(self, term: bytes, postings: _Postings, fixed: int | None, start: int) -> int:
        """Blocks and term info as ``W3PostingsWriter`` writes them, without lengths, at
        ``start`` in the postings file; returns where the next term starts."""
        limit, level = self._codec._blocklimit, self._codec._compression
        docs, weights, values = postings.docs, postings.weights, postings.values
        count = len(docs)
        info = W3TermInfo()
        parts = [WHOOSH3_HEADER_MAGIC]
        for begin in range(0, count, limit):
            end = min(begin + limit, count)
            ids = docs[begin:end] if count > limit else docs
            block_weights = weights[begin:end] if count > limit else weights
            top = max(block_weights)
            info._weight += sum(block_weights)
            if count == 1:  # most terms: one note
                weight = block_weights[0]
                deltas: tuple[int, ...] = (ids[0],)
                packed = (deltas, None if weight == 1.0 else weight, _mini_values(values, fixed))
            else:
                deltas = (ids[0], *(b - a for a, b in zip(ids, ids[1:], strict=False)))
                block_values = _mini_values(values[begin:end], fixed)
                packed = (deltas, _mini_weights(block_weights), block_values)
            data = dumps(packed, 2)
            if level:
                data = zlib.compress(data, level)
            head = dumps((len(ids), ids[-1], top, level, _NO_LENGTH, _NO_LENGTH), 2)
            size = len(head) + len(data)
            parts += (pack_int(-size if end == count else size), head, data)
            info._maxweight = max(info._maxweight, top)
        written = b"".join(parts)
        self._postfile.write(written)
        info._df = count
        info._minid, info._maxid = docs[0], docs[-1]
        info.set_extent(start, len(written))
        self._tindex.add(pack_ushort(self._fieldid) + term, info.to_bytes())
        return start + len(written)


class _Grouped:
    """A pool's postings as ``SegmentWriter._flush_segment`` passes them on."""

    def __init__(self, pool: TermPool) -> None:
        self.pool = pool

    def __iter__(self) -> Iterator[tuple[str, bytes, int, float, bytes]]:
        return self.pool.iter_postings()


def _mini_weights(weights: array) -> Any:
    first = weights[0]
    if all(w == 1.0 for w in weights):
        return None
    if all(w == first for w in weights):
        return first
    return tuple(weights)


def _mini_values(values: list[bytes], fixed: int | None) -> Any:
    if fixed is None or fixed < 0:
        return tuple(v for v in values if v)  # W3 keeps only the non-empty ones
    return None if fixed == 0 else b"".join(values)


class _Pool(TermPool):
    def iter_postings(self) -> Any:  # what _flush_segment hands the field writer
        return _Grouped(self)


class LexicalSegmentWriter(SegmentWriter):
    """Whoosh's segment writer over a :class:`TermPool`, for vaultmem's schema.

    A field whose value is a ``{term: weight}`` map (``WeightedText``) goes to the pool
    whole; any other field is indexed as Whoosh does. The schema has no spelling or
    vector fields, and documents carry no boosts.
    """

    def __init__(self, ix: Any, **kwargs: Any) -> None:
        super().__init__(ix, **kwargs)
        stock: Any = self.__dict__["pool"]  # Whoosh's PostingPool: nothing in it yet
        stock.cleanup()
        self.pool: TermPool = _Pool()

    def add_document(self, **fields: Any) -> None:
        """Add one note's fields (names as the schema's; ``_``-prefixed ones ignored)."""
        self._check_state()
        perdoc, schema, docnum, pool = self.perdocwriter, self.schema, self.docnum, self.pool
        names = sorted(name for name in fields if not name.startswith("_"))
        self._check_fields(schema, names)
        perdoc.start_doc(docnum)
        try:
            for name in names:
                value = fields[name]
                if value is None:
                    continue
                field = schema[name]
                length = 0
                if isinstance(value, Mapping):
                    length = pool.add_weighted(name, docnum, value)
                elif field.indexed:
                    for term, freq, weight, vbytes in field.index(value):
                        length += freq if field.scorable else 0
                        pool.add((name, term, docnum, weight, vbytes))
                perdoc.add_field(name, field, value if field.stored else None, length)
                if field.column_type:
                    perdoc.add_column_value(name, field.column_type, field.to_column_value(value))
        except BaseException:
            perdoc.cancel_doc()
            raise
        perdoc.finish_doc()
        self._added = True
        self.docnum += 1
