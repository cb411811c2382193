"""Every token family of ``vaultmem/data/token_families.json``: a token of its shape is
redacted wherever it stands, and its prefix alone (a word about the family) is not."""

from __future__ import annotations

import random
import re
import string

import pytest

from vaultmem.agent.redact import REDACTED, redact
from vaultmem.agent.secret_shapes import Family, _expand, families


def _token(family: Family, rng: random.Random) -> str:
    """A token of ``family``'s shape: its example, or its prefix and a generated body
    (letters and digits mixed, as every real one is)."""
    if family.example:
        return family.example
    alphabet = _expand(family.chars)
    letters = [c for c in alphabet if c.isalpha()] or [c for c in alphabet if c.isalnum()]
    digits = [c for c in alphabet if c.isdigit()] or letters
    body = [rng.choice(alphabet.replace("-", "").replace(".", "")) for _ in range(family.min)]
    body[0], body[1], body[-1] = rng.choice(letters), rng.choice(digits), rng.choice(letters)
    lead = "".join(rng.choice(_expand(family.lead)) for _ in range(family.lead_len))
    return lead + family.prefix + "".join(body)


FAMILIES = {f.name: f for f in families()}


def test_the_table_is_wide() -> None:
    assert len(FAMILIES) >= 130
    # The families issue 28 found missing.
    assert {"docker-pat", "sentry-org", "newrelic-user", "vault-legacy"} <= set(FAMILIES)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_each_family_is_redacted(name: str) -> None:
    family = FAMILIES[name]
    token = _token(family, random.Random(name))
    for text in (f"see {token} here", f"{token}", f"x={token};", f'"{token}"'):
        out = redact(text)
        assert REDACTED in out and token not in out, (name, text, out)
        assert not re.search(re.escape(token[len(family.prefix) :][-12:]), out), out
        assert redact(out) == out


@pytest.mark.parametrize("name", sorted(n for n, f in FAMILIES.items() if f.prefix and not f.lead))
def test_a_prefix_alone_is_not_a_token(name: str) -> None:
    prefix = FAMILIES[name].prefix
    text = f"Tokens of this kind start with {prefix} and are rotated monthly."
    assert redact(text) == text


def test_a_body_of_words_is_not_a_token() -> None:
    # A prefix followed by words, not a generated body: a name, not a token.
    for text in ("the sk-learn-is-a-library note", "see key-value-store-design-notes-for-harbor"):
        assert redact(text) == text


def test_the_examples_are_of_their_own_pattern() -> None:
    for family in FAMILIES.values():
        if family.pattern:
            assert re.fullmatch(family.pattern, family.example), family.name
        else:
            assert family.chars and family.min > 0, family.name


def test_tokens_are_found_inside_longer_text_without_quadratic_cost() -> None:
    rng = random.Random(7)
    words = " ".join(rng.choice(string.ascii_lowercase) * rng.randint(1, 9) for _ in range(20000))
    token = _token(FAMILIES["docker-pat"], rng)
    out = redact(words + " " + token + " " + words)
    assert token not in out and out.count(REDACTED) == 1


def test_the_detect_secrets_snapshot_is_what_detect_secrets_ships() -> None:
    """The regexes redaction takes from detect-secrets' plugins are read from a snapshot
    (importing detect-secrets costs a tenth of a second); it must be the installed
    version's. After an upgrade: ``python -m vaultmem.agent.secret_shapes``."""
    import json
    from importlib.metadata import version
    from pathlib import Path

    from vaultmem.agent import secret_shapes

    snapshot = json.loads(
        (
            Path(secret_shapes.__file__).parent.parent / "data" / "detect_secrets_plugins.json"
        ).read_text()
    )
    assert snapshot["version"] == version("detect-secrets")
    assert [tuple(row[:3]) for row in snapshot["patterns"]] == secret_shapes.detector_patterns()
    assert len(secret_shapes._detectors()) == len(snapshot["patterns"]) >= 40


def test_each_detect_secrets_needle_is_written_in_its_pattern() -> None:
    """A pattern is tried only on a text holding one of its needles: each must be a
    literal the pattern requires, so each is written in it (unescaped, any case)."""
    import json
    from pathlib import Path

    from vaultmem.agent import secret_shapes

    rows = json.loads(
        (
            Path(secret_shapes.__file__).parent.parent / "data" / "detect_secrets_plugins.json"
        ).read_text()
    )["patterns"]
    for plugin, pattern, _, needles in rows:
        plain = pattern.replace("\\", "").lower()
        assert all(n == n.lower() and n in plain for n in needles), (plugin, needles)
    assert sum(bool(row[3]) for row in rows) == len(rows)
