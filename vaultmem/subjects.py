"""What a short text is about: its content words, in the languages capture listens for.

Used where two memories are compared by subject (a decision reversed later in a session,
a new decision against an existing one) and where a captured text is checked for naming
a note. A pure function, at the ground floor.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["content_words", "overlap"]

_WORD_RE = re.compile(r"\w+")
_STOP_WORDS = (
    # English
    "a an the and or but of to in on at for with from by is are was were be been it its "
    "this that these those we you i they he she our your my us let let's lets go use using "
    "will would should could can do does did not no yes ok so as if then than instead "
    "actually just also only now all any some more most very there here which what when "
    "never always don dont keep stay new old same other into out up about over under "
    "because since already still again first then also each every both either after before "
    "while until like make made get got set need needs want wants run runs ran work works "
    "way thing things lot bit case time times one two three were has have had what's it's "
    # German
    "der die das den dem des und oder nicht wir ich ein eine einen mit auf für von zu im ist "
    "sind bei nur noch immer nie kein keine "
    # Spanish
    "el la los las y o de en un una que del al con por para es son se lo nunca siempre "
    # French
    "le les et ou un une des du au aux est sont pour avec dans sur pas ne jamais toujours"
)
_STOP = frozenset(_STOP_WORDS.split())


def _plain(word: str) -> str:
    decomposed = unicodedata.normalize("NFKD", word)
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def content_words(text: str) -> frozenset[str]:
    """The words of ``text`` that carry its subject: lower-cased, accents dropped, stop
    words and words under three letters out, a plural ``s`` dropped.

    Example:
        >>> sorted(content_words("Use RQ for the background jobs"))
        ['background', 'job']
    """
    out = set()
    for word in _WORD_RE.findall(text.lower()):
        if word in _STOP or len(word) < 3:
            continue
        word = _plain(word)
        out.add(word[:-1] if len(word) > 4 and word.endswith("s") else word)
    return frozenset(out)


def overlap(a: frozenset[str], b: frozenset[str]) -> float:
    """The overlap coefficient of two word sets: shared words over the smaller set (0–1)."""
    if not a or not b:
        return 0.0
    return len(a & b) / min(len(a), len(b))
