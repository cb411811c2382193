"""`analysis`: the text analysis the keyword index and every term comparison share.

Lowercase ``\\w+`` words, English stop words dropped, Porter-stemmed (:func:`analyse`),
the same for documents and queries, so a query's terms are the index's terms without
Whoosh's query parser (:mod:`vaultmem.index.lexical`).
"""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache

from vaultmem.index.whoosh_light import light_imports

with light_imports():
    from whoosh.analysis import STOP_WORDS
    from whoosh.lang.porter import stem

__all__ = [
    "ENGLISH_STOP_WORDS",
    "QUESTION_WORDS",
    "WORD_RE",
    "analyse",
    "asked_terms",
    "query_terms",
    "stemmed",
    "term_counts",
    "word_counts",
]

WORD_RE = re.compile(r"\w+")

ENGLISH_STOP_WORDS = frozenset(STOP_WORDS)


@lru_cache(maxsize=500_000)
def stemmed(word: str) -> str:
    """The Porter stem of a lowercase word, cached; "" for a stop word."""
    return "" if word in ENGLISH_STOP_WORDS else str(stem(word))


def analyse(text: str) -> list[str]:
    """Lowercase ``\\w+`` words, English stop words dropped, Porter-stemmed.

    One fused pass (regex + cached stems) instead of Whoosh's chained analyzer: indexing
    spends most of its time here.
    """
    return [term for term in _stems(text) if term]


def _stems(text: str) -> map[str]:
    """Each word's stem in order, "" for a stop word (what analyse and term_counts read)."""
    return map(stemmed, WORD_RE.findall(text.lower()))


def word_counts(text: str) -> Counter[str]:
    """Lowercase ``\\w+`` words of ``text`` and how often each occurs, unstemmed (the
    ``names`` field's analysis: Whoosh's regex tokenizer and lowercase filter)."""
    return Counter(map(str.lower, WORD_RE.findall(text)))


def term_counts(text: str) -> Counter[str]:
    """How often each of :func:`analyse`'s terms occurs in ``text`` (counted in C)."""
    counts = Counter(_stems(text))
    counts.pop("", None)  # the stop words
    return counts


def query_terms(text: str) -> list[str]:
    """The analysed, de-duplicated terms of a query (stop words kept if nothing else)."""
    terms = analyse(text)
    if not terms:
        terms = [str(stem(w)) for w in WORD_RE.findall(text.lower())]
    return list(dict.fromkeys(terms))


# Words that ask rather than say what is asked about: dropped where the query's subject
# words are compared ("who owns billing?" and a note saying "who is its owner").
QUESTION_WORDS = (
    "who",
    "whom",
    "whose",
    "what",
    "when",
    "where",
    "which",
    "why",
    "how",
    "did",
    "do",
    "does",
)


def asked_terms(text: str) -> list[str]:
    """The analysed terms of a question without its question words."""
    drop = {stemmed(w) for w in QUESTION_WORDS}  # cached stems ("" for a stop word)
    return [t for t in query_terms(text) if t not in drop]
