"""Passwords anywhere in the sentence of a password word, and passphrases taken whole.

The phrase rules (:mod:`vaultmem.agent.credential_phrases`) read "word, filler, link,
value" in each language's grammar; sentences that grammar does not reach still name
their password (issue 28, round 3):

- a relative clause or an aside between the word and the value ("пароль, который я
  вчера поставил …, — X", "Das Passwort, das ich gestern gesetzt habe, ist X");
- the value before the word ("Defini 'X' como senha", "'X' olarak ayarlandı" after
  "şifresi");
- a verb the table does not list ("diganti jadi X", "такой: X", "अब 'X' है").

:func:`clause_spans`: after (or before) a password, passphrase or PIN word, within its
sentence, a value is a secret when it looks like a password and like nothing else:

- quoted: 6 characters or more, letters and digits, and a symbol, a capital or a
  separator inside (``'chai-samosa-77'``; ``'sha256'`` is an algorithm);
- unquoted: 8 characters or more, letters and digits, and a symbol (``Dilli#2025``) or
  capitals with two digits or more (``Pizzamargherita88``, ``Kazan_Kreml_88``); never a
  path, a URL, an address, a reference, a version (``Ubuntu22.04``), an argument
  (``min_length=12``), a name in capitals (``DB_PASSWORD2``) or a name and its year
  (``Bitwarden2024``);
- after a PIN word, 4 to 8 digits that are not a year.

A word such as "id", "hash", "commit", "version" or "host" just before the value makes it
that thing's, not the password.

:func:`passphrase_spans`: after a passphrase word and its link (":", "is", "ist",
"lautet", "est", "es", "—"), the words up to the end of the clause, or the next line
when the label ends its line, are the passphrase: 2 to 8 words, taken whole, unless they
read as prose ("see the team vault", "ist in KeePass gespeichert").
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from vaultmem.agent.credential_phrases import placeholder
from vaultmem.agent.credential_words import Hit, hits, is_prose_word
from vaultmem.agent.secret_shapes import lazy_regex

__all__ = ["clause_spans", "passphrase_spans"]

Span = tuple[int, int]

# not before a quote: "'Winter24!' como senha" ends a value, not the sentence
_SENTENCE_END = lazy_regex(r"[.!?。！？](?=[)\]»”]*(?:\s|$))|\n")
_QUOTED = lazy_regex(
    r"""(['"‘’“”«»「『])[ \t]?([^'"‘’“”«»「」『』\n]{6,80}?)[ \t]?['"‘’“”«»」』]"""
)
# (a script written without spaces ends a token: パスはGJ%Cu3iCH%i2cなので)
_TOKEN = lazy_regex(
    r"[^\s'\"‘’“”«»「」『』()\[\]{},;、。，\u0e00-\u0e7f\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]+"
)
_SYMBOL = frozenset("!#$%^&*@+=?~")
_TRAILING = ".,;:!?)]}»”」"
_BARRIER = frozenset(
    """id ids uuid hash sha commit version v host hostname user username login port ticket
    issue pr build run job pod image release like e.g. eg such example z.b. wie comme""".split()  # noqa: SIM905
)
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_WORDS_AND_DIGITS = re.compile(
    r"[a-zäöüß]{3,}\d{2,}[-_.][a-zäöüß]{3,}\d+|[a-zäöüß]{3,}\d+[-_.][a-zäöüß]{3,}\d{2,}"
)
_YEAR = re.compile(r"(?:19|20)\d\d")
_REACH = 220

_PASSPHRASE = lazy_regex(
    r"(?i)\b(?:pass[ -]?phrase|passphrase|passwort-?satz|mantra|frase de contraseña"
    r"|frase secreta|frase[- ]senha|phrase secrète|phrase de passe|парольная фраза"
    r"|frasa sandi|кодов(?:ая|ую|ой) фраз[аыуе]|кодовое слово|парольну фразу|frase de paso"
    r"|wachtzin|lösenfras(?:en)?|hasło-fraza|fraza hasła|salalause)\b"
)
# a word each passphrase word holds (the regex runs only where one stands)
_PASSPHRASE_NEEDLES = (
    "phrase", "passwort", "mantra", "frase", "фраз", "слово", "sandi", "wachtzin", "lösenfras",
    "fraz", "salalause",
)  # fmt: skip
_PASSPHRASE_LINK = lazy_regex(
    r"(?i)[^\n:：=—]{0,80}?(?:[:：=—]|\b(?:is|ist|lautet|est|es|é|är|er|jest|это)\b)[ \t]*"
)
_CLAUSE = lazy_regex(r"[^\n.,;()（）\"'«»“”„]+")


def clause_spans(text: str, found: list[Hit] | None = None) -> Iterator[Span]:
    """The password-shaped values in the sentence of a password or PIN word."""
    for hit in hits(text) if found is None else found:
        kinds = {kind for kind, _ in hit.kinds}
        if not kinds & {"password", "pin"}:
            continue
        lo, hi = _sentence(text, hit.start, hit.end)
        pin = "pin" in kinds and "password" not in kinds
        for m in _QUOTED().finditer(text, lo, hi):
            value = m.group(2).strip()
            if _quoted_password(value) and not _after_barrier(text, m.start()):
                yield m.start(2), m.start(2) + len(m.group(2).rstrip())
        for m in _TOKEN().finditer(text, lo, hi):
            if hit.start <= m.start() < hit.end:
                continue
            value = m.group().rstrip(_TRAILING)
            if _after_barrier(text, m.start()):
                continue
            if (pin and _pin(value)) or (not pin and _password(value)):
                yield m.start(), m.start() + len(value)


def passphrase_spans(text: str) -> Iterator[Span]:
    """Passphrases of several words after a passphrase word, taken whole."""
    low = text.lower()
    if not any(w in low for w in _PASSPHRASE_NEEDLES):
        return
    for m in _PASSPHRASE().finditer(text):
        link = _PASSPHRASE_LINK().match(text, m.end())
        if link is None:
            continue
        at = link.end()
        line_end = text.find("\n", at)
        line_end = len(text) if line_end < 0 else line_end
        if not text[at:line_end].strip() and line_end < len(text):
            at = line_end + 1  # the label ends its line: the passphrase is the next one
            at += len(text[at:]) - len(text[at:].lstrip(" \t"))
        if text[at : at + 1] in "\"'«“„‘":
            continue  # quoted: the phrase rules take it
        clause = _CLAUSE().match(text, at)
        if clause is None:
            continue
        value = clause.group().rstrip()
        words = value.split()
        if (
            2 <= len(words) <= 8
            and not placeholder(value)
            and "[REDACTED]" not in value
            # "see the vault", "ask the on-call engineer", "ist in KeePass gespeichert"
            and not any(map(is_prose_word, words[:2]))
            and sum(map(is_prose_word, words)) * 2 < len(words)
        ):
            yield at, at + len(value)
        elif words and words[0] == "[REDACTED]" and 2 <= len(words) <= 9:
            yield at, at + len(value)  # one word of it was taken: take the rest


def _sentence(text: str, start: int, end: int) -> Span:
    lo = max(0, start - _REACH)
    before = [m.end() for m in _SENTENCE_END().finditer(text, lo, start)]
    lo = before[-1] if before else lo
    after = _SENTENCE_END().search(text, end, min(len(text), end + _REACH))
    return lo, after.start() if after else min(len(text), end + _REACH)


def _after_barrier(text: str, at: int) -> bool:
    before = text[max(0, at - 24) : at].split()
    return bool(before) and before[-1].lower().strip(_TRAILING + ":=#") in _BARRIER


def _quoted_password(value: str) -> bool:
    if len(value) < 6 or " " in value or placeholder(value) or _UUID.fullmatch(value):
        return False
    if not (any(c.isalpha() for c in value) and any(c.isdigit() for c in value)):
        return False
    if _reference(value):
        return False
    inner = value[1:]
    return bool(_SYMBOL & set(value) or any(c.isupper() for c in inner) or set("-_.") & set(inner))


def _password(value: str) -> bool:
    if len(value) < 8 or len(value) > 64 or placeholder(value) or _reference(value):
        return False
    if _UUID.fullmatch(value):
        return False  # a correlation id
    if _WORDS_AND_DIGITS.fullmatch(value):
        return True  # schnee2845-gecko1: words and digits joined, as people make them
    letters = sum(c.isalpha() for c in value)
    digits = sum(c.isdigit() for c in value)
    if not letters or not digits:
        return False
    upper = sum(c.isupper() for c in value)
    if upper == letters:
        return False  # DB_PASSWORD2, a name in capitals
    if _SYMBOL & set(value):
        return True
    # Pizzamargherita88, Kazan_Kreml_88; not a name and its year or version (Bitwarden2024)
    return upper >= 1 and digits >= 2 and not re.fullmatch(r"[A-Z]?[a-z]+(?:19|20)\d\d", value)


def _pin(value: str) -> bool:
    return value.isdigit() and 4 <= len(value) <= 8 and not _YEAR.fullmatch(value)


def _reference(value: str) -> bool:
    """A path, a URL, an e-mail address, a reference, a version, a flag, a call or an
    argument."""
    return bool(
        "/" in value
        or "\\" in value
        or "://" in value
        or re.search(r"\w@[\w-]+\.\w", value)
        or value[0] in "$%{<-@"
        or re.fullmatch(r"v?\d+(?:[.\-]\d+)*\w*", value)
        or re.fullmatch(r"[A-Za-z]+[-_]?v?\d+(?:\.\d+)+", value)  # Ubuntu22.04
        or re.fullmatch(r"[A-Za-z_]\w*\(.*", value)
        or re.fullmatch(r"[A-Za-z_]{2,}\w*=.*", value)  # min_length=12, an argument
        or re.fullmatch(r"[a-z_]+(?:\.[A-Za-z_]\w*)+", value)
    )
