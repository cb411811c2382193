"""Credential phrases in every language of ``vaultmem/data/credential_words.json``: a word
of each kind, a link and a value is redacted; the same words in prose are not."""

from __future__ import annotations

import pytest

from vaultmem.agent.credential_words import KINDS, Language, languages
from vaultmem.agent.redact import REDACTED, redact

LANGS = {lang.code: lang for lang in languages()}
PASSWORD = "Xk9#mQ2vLp7w"
TOKEN = "Tq4Zr8Kx2Wm6Vb1Nc5Hd9Lp3"

# The 12 most spoken languages (by all speakers) and the rest of issue 28's list.
MOST_SPOKEN = ["en", "zh", "hi", "es", "fr", "ar", "bn", "pt", "ru", "ur", "id", "de", "ja"]


def _phrase(lang: Language, word: str, value: str) -> str:
    link = next((w for w in lang.links if w[-1:].isalnum()), ":")
    if lang.attached:
        return f"{word}{link}{value}"
    return f"{word} {link} {value}"


def test_the_table_covers_the_most_spoken_languages() -> None:
    assert set(MOST_SPOKEN) <= set(LANGS)
    for code in MOST_SPOKEN:
        lang = LANGS[code]
        assert lang.words["password"] and lang.words["token"] and lang.words["api_key"], code
    assert len(LANGS) >= 25


CASES = [
    (code, kind, word)
    for code, lang in LANGS.items()
    for kind in KINDS
    for word in lang.words[kind]
]


@pytest.mark.parametrize(("code", "kind", "word"), CASES, ids=[f"{c}-{w}" for c, _, w in CASES])
def test_each_word_with_a_link_and_a_value_is_redacted(code: str, kind: str, word: str) -> None:
    lang = LANGS[code]
    value = {"password": PASSWORD, "pin": "48213"}.get(kind, TOKEN)
    for text in (_phrase(lang, word, value), f"{word}: {value}"):
        out = redact(text)
        assert value not in out and REDACTED in out, (text, out)


@pytest.mark.parametrize("code", sorted(LANGS))
def test_a_word_of_prose_after_the_link_is_kept(code: str) -> None:
    lang = LANGS[code]
    for word in sorted(lang.common)[:6]:
        if not word.isalpha() or len(word) < 3:
            continue
        for kind in ("password", "token"):
            for credential in lang.words[kind][:1]:
                text = _phrase(lang, credential, word) + "."
                assert redact(text) == text, text


@pytest.mark.parametrize(
    "text",
    [
        "the Kubernetes secret is named harbor-db-credentials",
        "Das Secret heißt harbor-tls und liegt im Namespace prod.",
        "Le secret Kubernetes s'appelle harbor-db-credentials.",
        "El secreto se llama harbor-db-credentials.",
        "The password policy is strict, and the token bucket is full.",
        "トークン数は4096までです。",
        "令牌有效期为3600秒。",
        "The SHA-256 of each API key: 5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d",
        "password123 is a terrible password",
        "la longueur du mot de passe est 16",
    ],
)
def test_names_counts_and_properties_are_not_values(text: str) -> None:
    assert redact(text) == text


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("Das Passwort für den Staging-Server ist Zq8!mVx2Lp", "Zq8!mVx2Lp"),
        ("das Passwort lautet schwertfisch", "schwertfisch"),
        ("Mon mot de passe, c'est Zq8!mVx2Lp", "Zq8!mVx2Lp"),
        ("La contraseña es «girasol» (en minúsculas).", "girasol"),
        ("Пароль от базы: Zq8!mVx2Lp", "Zq8!mVx2Lp"),
        ("我的密码是Zq8!mVx2Lp，别告诉别人", "Zq8!mVx2Lp"),
        ("パスワードは「Zq8!mVx2Lp」です", "Zq8!mVx2Lp"),
        ("비밀번호는 Zq8!mVx2Lp입니다", "Zq8!mVx2Lp"),
        ("मेरा पासवर्ड hunter2x है", "hunter2x"),
        ("Kata sandi wifi-nya adalah Zq8!mVx2Lp", "Zq8!mVx2Lp"),
        ("I'll use Zq8!mVx2Lp as the password for staging", "Zq8!mVx2Lp"),
        ("Password:\nZq8mVx2LpQ4", "Zq8mVx2LpQ4"),
        ("Here's the door PIN: 4711", "4711"),
        ("Datenbankpasswort: Zq8!mVx2Lp", "Zq8!mVx2Lp"),
    ],
)
def test_natural_phrases_are_redacted(text: str, secret: str) -> None:
    out = redact(text)
    assert secret not in out and REDACTED in out, out


def test_the_entropy_guard_needs_a_credential_word_nearby() -> None:
    token = "Rq8WnZ2kLm5VxT9bYc3HdJ6pFs1Gt4"
    for text in (
        f"Cloudflare API token -> {token}",
        f"der API-Schlüssel für Mapbox lautet {token}",
        f"$ heroku auth:token\n{token}",
        f"{token} is the API key for staging",
    ):
        assert token not in redact(text), text
    for text in (
        f"the build artifact is {token}.tar.gz",
        f"token refresh fix landed in commit {token}",
        f"my public key is ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{token} dev@laptop",
    ):
        assert redact(text) == text, text
