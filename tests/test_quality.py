"""The quality score's signal words: matched case-sensitively in the lowercased text, they
must be exactly what the case-insensitive patterns found before (issue 21). The oracle is
the old code, written out here: ``re.IGNORECASE`` on the text, each match lowercased.
"""

from __future__ import annotations

import re
import sys

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import EXAMPLE_VAULT
from vaultmem import quality as ql

_DECISION_IGNORECASE = re.compile(
    r"\b(decided|decide|decision|chose|chosen|choose|agreed|we will|we'll|going with|"
    r"opted|rationale|trade-?offs?|because|in favou?r of|settled on)\b",
    re.IGNORECASE,
)
_CORRECTION_IGNORECASE = re.compile(
    r"\b(actually|correction|corrected|wrong|mistaken?|incorrect|fixed|instead|"
    r"don't|do not|never|avoid|should not|shouldn't|turns out|gotcha|pitfall|"
    r"regression|root cause|workaround)\b",
    re.IGNORECASE,
)
WORDS = [
    "decided", "decide", "decision", "chose", "chosen", "choose", "agreed", "opted",
    "rationale", "because", "tradeoff", "trade-offs", "we will", "we'll", "going with",
    "in favor of", "in favour of", "settled on", "actually", "correction", "corrected",
    "wrong", "mistake", "mistaken", "incorrect", "fixed", "instead", "never", "avoid",
    "gotcha", "pitfall", "regression", "workaround", "don't", "do not", "should not",
    "shouldn't", "turns out", "root cause",
]  # fmt: skip
# Characters whose case behaviour differs between str.lower() and re.IGNORECASE, their
# neighbours, and characters that make or break word boundaries.
TRICKY = "İıſ\u212aKksSiI\u0307ßΣσςéÉ_0'’- \n\t.,"


def old_signal_words(text: str) -> tuple[set[str], set[str]]:
    """What quality_breakdown counted before issue 21."""
    decisions = {m.group(1).lower() for m in _DECISION_IGNORECASE.finditer(text)}
    return decisions, {m.group(1).lower() for m in _CORRECTION_IGNORECASE.finditer(text)}


def _recased(word: str, flips: list[bool]) -> str:
    flips = (flips * len(word))[: len(word)]
    return "".join(c.upper() if flip else c for c, flip in zip(word, flips, strict=True))


_word = st.builds(_recased, st.sampled_from(WORDS), st.lists(st.booleans(), min_size=1))
_piece = st.one_of(_word, st.text(alphabet=TRICKY, max_size=3), st.text(max_size=4))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_piece, max_size=40).map("".join))
def test_signal_words_equal_the_ignorecase_patterns(text: str) -> None:
    assert ql.signal_words(text) == old_signal_words(text)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_signal_words_equal_the_ignorecase_patterns_on_any_text(text: str) -> None:
    assert ql.signal_words(text) == old_signal_words(text)


def test_the_characters_lower_cannot_stand_for_are_handled() -> None:
    # A capital dotted I lowers to "i" + a combining dot: no word boundary before "never"
    # in the text, one after the dot in its lowercase.
    assert old_signal_words("xİnever") == (set(), set())
    assert ql.signal_words("xİnever") == (set(), set())
    # IGNORECASE matches the long s to "s" and the dotless i to "i"; lower() keeps them,
    # and each is its own distinct word.
    assert ql.signal_words("becauſe because ınstead") == ({"becauſe", "because"}, {"ınstead"})
    assert ql.signal_words("BECAUSE İNSTEAD") == old_signal_words("BECAUSE İNSTEAD")
    # The Kelvin sign lowers to "k" and IGNORECASE matches it to k: the fast path holds.
    assert ql.signal_words("wor\u212aaround") == (set(), {"workaround"})


def test_no_other_character_needs_the_case_insensitive_patterns() -> None:
    """Every code point: lower() gives one character, as much a word character as it, that
    equals a pattern character exactly when IGNORECASE matches the two; the exceptions
    are the module's list."""
    chars = [chr(c) for c in range(sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF]
    everything = "".join(chars)
    lowered = [c.lower() for c in chars]
    word = {m.start() for m in re.finditer(r"\w", everything)}
    lowered_word = {i for i, low in enumerate(lowered) if re.fullmatch(r"\w", low)}
    odd = {i for i, low in enumerate(lowered) if len(low) != 1}
    odd |= word ^ lowered_word
    literals = set("".join(ql._DECISIONS + ql._CORRECTIONS))
    for a in literals:
        folded = {m.start() for m in re.finditer(re.escape(a), everything, re.IGNORECASE)}
        odd |= folded ^ {i for i, low in enumerate(lowered) if low == a}
    guarded = {chars[i] for i in odd}
    assert guarded == {"İ", "ı", "ſ"}
    assert all(ql._LOWER_UNSAFE_RE.fullmatch(c) for c in guarded)


def test_signal_words_on_the_example_vault_notes() -> None:
    notes = sorted(EXAMPLE_VAULT.rglob("*.md"))
    assert len(notes) > 20
    found = 0
    for path in notes:
        text = path.read_text("utf-8")
        words = ql.signal_words(text)
        assert words == old_signal_words(text), path
        found += len(words[0]) + len(words[1])
    assert found > 20  # the notes do hold signal words, so the comparison means something
