"""Whether a key's name says it holds a secret: ``DB_PASSWORD``, ``apiKey``,
``secret_key_base``, ``SENTRY_AUTH``; not ``password_hash``, ``existingSecret`` or
``cache_key``.

Shared by the rules that read a value by its key's name (``key = value``, name/value
pairs, XML, :mod:`vaultmem.agent.redact`) and by those that read a command's output
(:mod:`vaultmem.agent.secret_output`: ``printenv NAME``, a ``vault kv get`` table).
"""

from __future__ import annotations

import re

__all__ = ["name_words", "secret_name"]

_NAME_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_KEY_KINDS = frozenset(
    """api access secret private signing encryption master account license app session
    auth deploy webhook storage service subscription shared consumer hmac jwt ssh gpg pgp
    root admin write ingest client crypto""".split()  # noqa: SIM905
)
_SECRET_WORDS = frozenset(
    "password passwd pwd passphrase secret token apikey credential credentials".split()  # noqa: SIM905
)
# The last word of a key that holds a secret named by an earlier word (secret_key_base).
_SECRET_SUFFIXES = frozenset(
    "base value data b64 base64 hex raw bytes str string enc encoded material".split()  # noqa: SIM905
)
_NOT_PASS = frozenset("first second third last next one".split())  # noqa: SIM905


def name_words(name: str) -> list[str]:
    """The lower-case words of a name: ``DB_PASSWORD``, ``apiKey``, ``db.password``."""
    return [w.lower() for w in _NAME_WORDS.findall(name)]


def secret_name(words: list[str], sep: str) -> str | None:
    """Whether a key whose name is ``words`` (its lower-case parts) holds a secret:
    ``"secret"``, ``"random"`` (only when its value looks generated), or None.

    Example:
        >>> secret_name(["db", "password"], "="), secret_name(["password", "hash"], "=")
        ('secret', None)
    """
    last = words[-1]
    prev = words[-2] if len(words) > 1 else ""
    if "existing" in words:
        return None  # existingSecret=harbor-db: the name of a Kubernetes Secret
    if last in ("password", "passwd", "passwrd", "pwd", "pw", "passphrase", "passcode", "secret"):
        return "secret"
    if last in ("token", "apikey", "credential", "credentials"):
        return "secret"
    if last == "pass":  # DB_PASS, pass=X, not "--- PASS: TestFoo" or first_pass
        return "secret" if (bool(prev) or sep == "=") and prev not in _NOT_PASS else None
    if last.endswith(("password", "passwd", "secret", "token", "apikey", "passphrase")):
        return "secret"
    if last == "auth":  # _auth=dXNlcjpwYXNz, not auth: required
        return "random"
    if last.endswith("key"):
        kind = prev if last == "key" else last[:-3]
        return "secret" if kind in _KEY_KINDS else "random" if last == "key" else None
    if last in _SECRET_SUFFIXES and _SECRET_WORDS & set(words[:-1]):
        return "random"  # secret_key_base, password_hash is not: its value is public
    return "secret" if sep == "=" and last in ("sig", "signature") else None
