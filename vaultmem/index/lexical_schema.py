"""`lexical_schema`: what the keyword index holds, and how a note becomes a document.

The Whoosh schema (:func:`build_schema`: BM25F-weighted ``text``, the ``lead`` field,
stored fields for hits and the memory prior, a length column per scored field), the
codec and writer options every writer uses, and :func:`note_document`, the one place a
note is turned into the fields :class:`~vaultmem.index.lexical.LexicalIndex` writes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from functools import lru_cache
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from vaultmem.index.analysis import term_counts, word_counts
from vaultmem.index.live_stats import field_length, length_field
from vaultmem.index.manifest import memory_keys
from vaultmem.index.segment_writer import LexicalFieldWriter, frequency
from vaultmem.index.whoosh_light import light_imports
from vaultmem.markdown import expand_tag

with light_imports():
    from whoosh.analysis import Analyzer, LowercaseFilter, RegexTokenizer
    from whoosh.codec.whoosh3 import W3Codec
    from whoosh.columns import NumericColumn
    from whoosh.fields import COLUMN, ID, KEYWORD, NUMERIC, STORED, TEXT, Schema
    from whoosh.system import pack_uint

if TYPE_CHECKING:
    from vaultmem.note import Note

__all__ = [
    "CountedText",
    "FIELD_WEIGHTS",
    "LEAD_CHARS",
    "LEAD_FIELD",
    "SCHEMA_VERSION",
    "WRITER_OPTIONS",
    "LexicalCodec",
    "WeightedText",
    "build_schema",
    "note_document",
    "opening",
    "scored_fields",
    "weighted_terms",
]

# Bumped whenever the schema or analysis changes: the index is then rebuilt.
SCHEMA_VERSION = 5

# BM25F field weights: a term's frequency in the combined `text` field is the weighted
# sum of its frequencies in each field, saturated once (true BM25F, not a sum of per-field
# BM25 scores, which lets a short-field match swamp the body). Tuned on the man-page dev
# split; see BENCHMARKS.md.
FIELD_WEIGHTS: dict[str, float] = {
    "title": 2.0,
    "names": 2.0,
    "headings": 1.0,
    "tags": 1.5,
    "body": 1.0,
}

# The lead field: title + the note's opening characters, searched as a list of its own by
# `query` (what a note is about is said first). 1,000 characters scored best on half A of
# the man-page dev split among 400-1,600 (benchmarks/tune_fusion.py; BENCHMARKS.md).
LEAD_CHARS = 1000
LEAD_FIELD = "lead"


def weighted_terms(fields: Mapping[str, str]) -> dict[str, float]:
    """BM25F term weights of a document: Σ over fields of weight × term frequency."""
    return _weighted((term_counts(text), FIELD_WEIGHTS[name]) for name, text in fields.items())


def _weighted(parts: Iterable[tuple[Mapping[str, int], float]]) -> dict[str, float]:
    weights: dict[str, float] = {}
    for counts, w in parts:
        # count × weight is the repeated sum exactly: the weights are multiples of 0.5.
        for term, count in counts.items():
            weights[term] = weights.get(term, 0.0) + w * count
    return weights


class LexicalCodec(W3Codec):
    """The W3 codec without per-posting length statistics.

    Those statistics only feed block-max skipping, yet looking them up costs a third of
    every commit; BM25 reads document lengths from the length column instead.
    """

    length_stats = False

    def __init__(self, compression: int = 0) -> None:
        # Blocks are written uncompressed: a posting block is a few dozen bytes, where
        # zlib's per-call set-up cost a twelfth of a cold index for a fifth of the file.
        # Blocks written compressed by earlier versions still read (a flag per block).
        super().__init__(compression=compression)

    def field_writer(self, storage: Any, segment: Any) -> LexicalFieldWriter:
        """W3's field writer that takes a term's postings at once (same bytes)."""
        return LexicalFieldWriter(self, storage, segment)


# Segments as plain files, not one compound file: Whoosh copies every part of a compound
# segment it opens into memory, so a one-note update of a 95,556-note index read 270 MB
# and a search 120 MB of a 16k-note one; plain files are read where needed (RSS as on
# a small vault, searches no slower).
WRITER_OPTIONS: dict[str, Any] = {"codec": LexicalCodec(), "compound": False}


class WeightedText(TEXT):
    """A TEXT field fed pre-analysed ``{term: weight}`` maps (BM25F weighted frequencies)."""

    def index(self, value: Any, **kwargs: Any) -> Iterator[tuple[bytes, int, float, bytes]]:
        """Postings of one document: (term, frequency, weight, encoded frequency)."""
        if isinstance(value, str):
            value = weighted_terms({"body": value})
        for term, weight in value.items():
            freq = frequency(weight)
            yield term.encode("utf-8"), freq, float(weight), pack_uint(freq)

    @staticmethod
    def length(weights: Mapping[str, float]) -> int:
        """The document's length of this field: the sum of the frequencies :meth:`index`
        gives its postings (what Whoosh sums into the segment's total), without encoding
        them."""
        return sum(frequency(w) for w in weights.values())


class CountedText(WeightedText):
    """A WeightedText of lowercase, unstemmed words: the ``names`` field. Its text is
    counted by :func:`~vaultmem.index.analysis.word_counts`, what its Whoosh analyzer
    (used for queries) gives; it also takes those counts already made."""

    def index(self, value: Any, **kwargs: Any) -> Iterator[tuple[bytes, int, float, bytes]]:
        """Postings of one document, from its text or its word counts."""
        return super().index(word_counts(value) if isinstance(value, str) else value)


def build_schema() -> Schema:
    schema = Schema(
        path=ID(stored=True, unique=True),
        text=WeightedText(phrase=False),
        lead=WeightedText(phrase=False),
        names=CountedText(analyzer=_names_analyzer(), phrase=False),
        title=STORED(),
        tagtree=KEYWORD(commas=True, lowercase=True),
        folders=KEYWORD(commas=True),
        type=ID(stored=True),
        status=ID(stored=True),
        created=ID(stored=True),
        modified=NUMERIC(stored=True, numtype=float),
        body_line=STORED(),
        # vaultmem's frontmatter keys (JSON) and quality: the memory prior of a hit
        # is computed from the index alone, without opening the note.
        memory=STORED(),
        quality=STORED(),
    )
    # Each scored field's exact length per note, as a column: BM25's average field
    # length over the live notes is summed from it (see vaultmem.index.live_stats).
    for name in [n for n, field in schema.items() if field.scorable]:
        schema.add(length_field(name), COLUMN(NumericColumn("I")))
    return schema


@lru_cache(maxsize=1)
def scored_fields() -> dict[str, Any]:
    """The fields BM25 scores, by name (each has a length column)."""
    return {name: field for name, field in build_schema().items() if field.scorable}


@lru_cache(maxsize=1)
def _names_analyzer() -> Analyzer:
    return RegexTokenizer(r"\w+") | LowercaseFilter()


def note_document(note: Note) -> dict[str, Any]:
    parts = PurePosixPath(note.path).parts[:-1]
    folders = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    names = [*note.aliases]
    if note.stem.lower() not in note.title.lower():
        names.append(note.stem)
    tagtree = sorted({t for tag in note.tags for t in expand_tag(tag)})
    title, body = term_counts(note.title), term_counts(note.body)
    text = _weighted(
        [
            (title, FIELD_WEIGHTS["title"]),
            (term_counts("\n".join(names)), FIELD_WEIGHTS["names"]),
            (term_counts("\n".join(h.text for h in note.headings)), FIELD_WEIGHTS["headings"]),
            (term_counts(" ".join(t.replace("/", " ") for t in note.tags)), FIELD_WEIGHTS["tags"]),
            (body, FIELD_WEIGHTS["body"]),
        ]
    )
    # The lead is the title and the body's opening (a short body is its own opening), each
    # term counted once: what analysing "title\nopening" gives, as no word spans a line.
    start = body if len(note.body) <= LEAD_CHARS else term_counts(opening(note.body))
    doc: dict[str, Any] = {
        "path": note.path,
        "text": text,
        "lead": _weighted([(title, 1.0), (start, 1.0)]),
        "names": word_counts("\n".join([note.title, *names])),
        "title": note.title,
        "tagtree": ",".join(tagtree),
        "folders": ",".join(folders),
        "type": note.type,
        "status": note.status,
        "created": note.created or "",
        "modified": note.mtime_ns / 1e9,
        "body_line": note.body_start_line,
        "memory": json.dumps(memory_keys(note.owned), ensure_ascii=False),
        "quality": note.quality,
    }
    for name, field in scored_fields().items():
        if not isinstance(field, WeightedText):
            doc[length_field(name)] = field_length(field, doc[name])
            continue
        if isinstance(doc[name], str):
            doc[name] = weighted_terms({"body": doc[name]})  # as Whoosh would; once
        doc[length_field(name)] = field.length(doc[name])
    return doc


def opening(body: str, chars: int = LEAD_CHARS) -> str:
    """The first ``chars`` characters of ``body``, without a word cut in two at the end."""
    if len(body) <= chars:
        return body
    head = body[:chars]
    if not body[chars].isspace():
        cut = max(head.rfind(space) for space in " \t\n")
        head = head[:cut] if cut > 0 else head  # no space at all: one giant word, cut
    return head
