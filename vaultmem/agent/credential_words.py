"""The table of credential words, ``data/credential_words.json``, and where its words
stand in a text.

The words for password, passphrase, PIN, secret, token and API key (and, for the entropy
guard, for key, auth, bearer…) in 31 languages, with what joins them to a value in each
(links, fillers, naming words, words of prose): data, read once per process. The
rules over it are in :mod:`vaultmem.agent.credential_phrases`.

:func:`hits` finds the words: one regex over the ASCII words, factored by prefix (a
regex of every word tried at every place costs ten times as much); the words of other
scripts, the languages that attach particles (密码是, パスワードは, 비밀번호는) and
compounds (Datenbankpasswort) only in texts that can hold them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any, NamedTuple

from vaultmem.agent.secret_shapes import lazy_regex

__all__ = [
    "KINDS",
    "Hit",
    "Language",
    "heads",
    "hits",
    "is_function_word",
    "is_prose_word",
    "languages",
    "links_of",
    "owned",
    "reverse_of",
    "signs",
]

KINDS = ("password", "pin", "secret", "token", "api_key")
# A letter outside ASCII (not a dash, a quote or an arrow): a word of another language
# may stand in the text.
_FOREIGN = lazy_regex(r"[^\x00-\x7f\u00a0-\u00bf\u2000-\u206f\u2190-\u23ff\u2500-\u27bf]")
# A script whose particles attach to words (Thai, kana, CJK, Hangul).
_ATTACHING = lazy_regex(r"[\u0e00-\u0e7f\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\uff00-\uffef]")
_TRAILING = ".,;:)]}»“”」』、。，\"'"


class Language:
    """One language of ``credential_words.json`` (see the file's header): read-only.

    A plain class (not a dataclass): the table is built in every process that redacts,
    and a dataclass costs a millisecond to define. Compared and hashed by identity.
    """

    __slots__ = (
        "attached", "code", "common", "compound", "fillers", "function", "guard", "latin",
        "links", "naming", "owners", "post_links", "reverse", "skip", "suffixes", "words",
    )  # fmt: skip

    def __init__(self, code: str, spec: Mapping[str, Any]) -> None:
        def strings(key: str) -> tuple[str, ...]:
            return tuple(spec.get(key, ()))

        self.code = code
        self.words: Mapping[str, tuple[str, ...]] = {kind: strings(kind) for kind in KINDS}
        self.guard = strings("guard")
        self.links = strings("links")
        self.post_links = strings("post_links")
        self.fillers = strings("fillers")
        self.owners = strings("owners")
        self.naming = strings("naming")
        self.skip = strings("skip")
        self.reverse = strings("reverse")
        self.function = frozenset(w.lower() for w in _words(spec.get("function")))
        self.common = frozenset(w.lower() for w in _words(spec.get("common")))
        self.suffixes = strings("suffixes")
        self.latin = spec.get("script") == "latin"
        self.attached = bool(spec.get("attached"))
        self.compound = bool(spec.get("compound"))


class _Lexicon(NamedTuple):
    languages: tuple[Language, ...]
    # A word as matched (lower case, one space) → (kind, language, written in capitals).
    entries: Mapping[str, tuple[tuple[str, Language, bool], ...]]
    spaced: re.Pattern[str]  # ASCII words standing alone (the other words: apart)
    spaced_words: frozenset[str]  # words standing alone that are not ASCII
    attached_words: frozenset[str]  # of languages that attach particles (non-ASCII)
    compound_words: tuple[str, ...]  # that may end a compound (Datenbankpasswort)
    links: tuple[str, ...]
    heads: frozenset[str]
    prose: frozenset[str]


class Hit(NamedTuple):
    """A credential word in a text: where, and its kinds and languages."""

    start: int
    end: int
    kinds: tuple[tuple[str, Language], ...]

    @property
    def langs(self) -> tuple[Language, ...]:
        return tuple(dict.fromkeys(lang for _, lang in self.kinds))


@lru_cache(maxsize=1)
def languages() -> tuple[Language, ...]:
    """The languages of the package's ``data/credential_words.json``."""
    return _lexicon().languages


def _words(value: object) -> tuple[str, ...]:
    """The words of a list of lines of words (``"function"``, ``"common"``)."""
    lines = [value] if isinstance(value, str) else list(value or ())  # type: ignore[call-overload]
    return tuple(" ".join(lines).split())


@lru_cache(maxsize=1)
def _lexicon() -> _Lexicon:
    raw = (Path(__file__).resolve().parent.parent / "data" / "credential_words.json").read_text()
    table = json.loads(raw)
    table.pop("_about")
    shared = table.pop("any")
    langs = tuple(Language(code, spec) for code, spec in table.items())
    entries: dict[str, list[tuple[str, Language, bool]]] = {}
    spaced: set[str] = set()
    attached: set[str] = set()
    compound: set[str] = set()
    for lang in langs:
        pairs = [(k, w) for k in KINDS for w in lang.words[k]] + [("guard", w) for w in lang.guard]
        for kind, word in pairs:
            key = _norm(word)
            entries.setdefault(key, []).append((kind, lang, word.isupper() and word.isalpha()))
            (attached if lang.attached else spaced).add(key)
            if lang.compound and kind == "password" and word.isalpha():
                compound.add(key)  # Datenbankpasswort, not every "…token" (Zugangstoken is listed)
    prose = frozenset().union(*(lang.function | lang.common for lang in langs))
    return _Lexicon(
        languages=langs,
        entries={k: tuple(v) for k, v in entries.items()},
        # matched in the lower-cased text: (?i) costs twice as much to compile
        spaced=re.compile(r"(?<!\w)" + _trie({w for w in spaced if w.isascii()}) + r"(?!\w)"),
        spaced_words=frozenset(w for w in spaced if not w.isascii()),
        attached_words=frozenset(attached),
        compound_words=tuple(sorted(compound)),
        links=tuple(sorted(set(shared["links"]), key=len, reverse=True)),
        heads=frozenset(w.lower() for w in shared["heads"]),
        prose=prose,
    )


@lru_cache(maxsize=1)
def _attached() -> re.Pattern[str]:
    """The words of languages that attach particles: compiled on the first text that is
    not ASCII (most are ASCII, and a regex of every word costs milliseconds to compile)."""
    return re.compile(r"(?i)" + _trie(set(_lexicon().attached_words)))


@lru_cache(maxsize=1)
def _spaced_other() -> re.Pattern[str]:
    """The words standing alone that are not ASCII (contraseña, пароль, कुंजी): compiled
    on the first text that is not ASCII."""
    return re.compile(r"(?<!\w)" + _trie(set(_lexicon().spaced_words)) + r"(?!\w)")


@lru_cache(maxsize=1)
def _compound() -> re.Pattern[str]:
    """Credential words ending a compound (Datenbankpasswort): compiled on first need."""
    return re.compile(r"(?i)(?<=[^\W\d_])" + _trie(set(_lexicon().compound_words)) + r"(?!\w)")


@lru_cache(maxsize=256)
def links_of(langs: tuple[Language, ...]) -> tuple[str, ...]:
    """The links of ``langs`` and the shared ones, lower case, longest first."""
    links = {*_lexicon().links, *(w for lang in langs for w in lang.links)}
    return tuple(sorted((w.lower() for w in links), key=len, reverse=True))


@lru_cache(maxsize=256)
def reverse_of(langs: tuple[Language, ...]) -> re.Pattern[str] | None:
    """ "<value> is my password", "use <value> as the password" in ``langs``."""
    links = "|".join(re.escape(w) for lang in langs for w in lang.reverse)
    if not links:
        return None
    return re.compile(
        r"(?:^|[ \t])(?P<v>[^\s\"'`]{2,200})[ \t]+(?i:" + links + r")[ \t]+"
        r"(?P<w>(?:\S+[ \t]+){0,2})\Z"
    )


def _norm(word: str) -> str:
    return " ".join(word.lower().split())


def _trie(words: set[str]) -> str:
    """One regex matching any of ``words`` (lower case; a space matches any run of
    blanks), factored by prefix so that `re` does not try every word at every place."""
    trie: dict = {}
    for word in words:
        node = trie
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = {}

    def build(node: dict) -> str:
        alts = [
            (r"[ \t]+" if ch == " " else re.escape(ch)) + build(node[ch])
            for ch in sorted(k for k in node if k)
        ]
        if not alts:
            return ""
        body = alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"
        return f"(?:{body})?" if "" in node else body

    return build(trie)


# --------------------------------------------------------------------------- words


def hits(text: str) -> Iterator[Hit]:
    """Every credential word in ``text`` that is not another thing's property."""
    lex = _lexicon()
    low = text.lower()
    # The spaced words are matched in lower case, where offsets are the text's (a letter
    # whose lower case is longer, as "İ", makes them differ: then case is ignored).
    folded = low if len(low) == len(text) else None
    spaced = lex.spaced if folded is not None else _ignoring_case(lex.spaced.pattern)
    found = [(m.span(), "spaced") for m in spaced.finditer(folded or text)]
    if not text.isascii() and _FOREIGN().search(text):
        other = _spaced_other() if folded is not None else _ignoring_case(_spaced_other().pattern)
        found += [(m.span(), "spaced") for m in other.finditer(folded or text)]
        if _ATTACHING().search(text):
            found += [(m.span(), "attached") for m in _attached().finditer(text)]
    if any(w in low for w in lex.compound_words):
        found += [(m.span(), "compound") for m in _compound().finditer(text)]
    for (start, end), how in found:
        written = text[start:end]
        word = _norm(written)
        kinds = tuple(
            (kind, lang)
            for kind, lang, caps in lex.entries.get(word, ())
            if (not caps or written.isupper())
            and (lang.attached if how == "attached" else not lang.attached)
            and (how != "compound" or (lang.compound and written.islower()))
        )
        langs = tuple(dict.fromkeys(lang for _, lang in kinds))
        if kinds and not owned(text, start, langs):
            yield Hit(start, end, kinds)


@lru_cache(maxsize=2)
def _ignoring_case(pattern: str) -> re.Pattern[str]:
    return re.compile("(?i)" + pattern)


def owned(text: str, start: int, langs: tuple[Language, ...] | None = None) -> bool:
    """Whether the credential word at ``start`` belongs to something else ("the length
    of the password", "la longueur du mot de passe", "the SHA-256 of each API key")."""
    owners = {o.lower() for lang in langs or languages() for o in lang.owners}
    if not owners:
        return False
    base = max(0, start - 40)
    for m in list(re.finditer(r"\S+", text[base:start]))[-2:]:
        word = m.group()
        if word.lower().strip(",;:") not in owners:
            continue
        # "Das Token", "De token": an article that starts a sentence owns nothing ("das"
        # and "de" are "of the" in Portuguese and French, "the" in German and Dutch)
        lead = text[: base + m.start()].rstrip(" \t")
        if not (word[0].isupper() and (not lead or lead[-1] in ".!?:\n")):
            return True
    return False


def is_prose_word(word: str) -> bool:
    """Whether ``word`` is a function word or a common word of prose in any language of
    the table ("expired", "siehe", "ver", "incorrecta")."""
    return word.lower().strip(_TRAILING) in _lexicon().prose


def is_function_word(word: str) -> bool:
    """Whether ``word`` is a function word (an article, a preposition, a pronoun…) of any
    language of the table."""
    low = word.lower()
    return any(low in lang.function for lang in languages())


def heads() -> frozenset[str]:
    """Words that, right after a credential word, make it part of another thing's name
    ("the password POLICY", "the token BUCKET")."""
    return _lexicon().heads


def signs() -> tuple[str, ...]:
    """The links every language shares (":", "=", "—"…), longest first."""
    return _lexicon().links
