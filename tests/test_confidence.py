"""Confidence that moves (issue 12, SPEC §4-5): contradiction, confirmation, fading.

Pure functions with numbers by hand, then the commands on a temp copy of example-vault/:
`touch --confirm`, `link -t contradicts`, `touch --session` after `surface`, and the
memory prior ranking a confirmed note above a contradicted one.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from conftest import Cli
from test_memory_notes import meta

from vaultmem import confidence
from vaultmem.config import build
from vaultmem.frontmatter.owned import owned_problem
from vaultmem.index.manifest import Entry, get_entry
from vaultmem.memory_state import note_memory
from vaultmem.retrieval.memory_rank import RankingOptions, rank

NOW = datetime(2026, 11, 20, 10, 0, tzinfo=UTC)
RATE = "research/Rate limiting options.md"  # confidence 0.6, created 2026-10-11
REDIS = "decisions/Redis for caching.md"  # confidence 0.85, created 2026-10-09
STRIPE = "inbox/Stripe API version header.md"
USAGE_KEYS = ("use_count:", "last_used:", "review_count:", "last_review:")


@pytest.fixture
def now(monkeypatch: pytest.MonkeyPatch) -> datetime:
    """Pin the CLI's clock."""
    monkeypatch.setenv("VAULTMEM_NOW", NOW.isoformat())
    return NOW


def changed_lines(before: bytes, after: bytes) -> tuple[list[str], list[str]]:
    """Lines only in ``before``, lines only in ``after`` (as text)."""
    old, new = before.decode().splitlines(), after.decode().splitlines()
    return [x for x in old if x not in new], [x for x in new if x not in old]


# --------------------------------------------------------------------------- pure


@pytest.mark.parametrize(
    ("before", "after"),
    [(0.5, 0.25), (0.3, 0.2), (0.2, 0.2), (0.1, 0.1), (0.65, 0.4), (1.0, 0.75), (0.0, 0.0)],
)
def test_contradicted_lowers_by_a_quarter_to_the_floor(before: float, after: float) -> None:
    # 0.1 stays 0.1: a contradiction never raises a note that is already below the floor.
    assert confidence.contradicted(before) == after


def test_confirmed_closes_a_fifth_of_the_gap() -> None:
    assert confidence.confirmed(0.5) == 0.6  # 0.5 + 0.2·0.5
    assert confidence.confirmed(0.6) == 0.68  # 0.6 + 0.2·0.4 (rounded: no 0.6799999999999999)
    assert confidence.confirmed(0.68) == 0.744  # 0.68 + 0.2·0.32
    assert confidence.confirmed(0.2) == 0.36  # 0.2 + 0.2·0.8
    assert confidence.confirmed(1.0) == 1.0
    c = 0.5
    for _ in range(200):
        c = confidence.confirmed(c)
        assert c <= 1.0
    # From the default, four confirmations to pass 0.75; one contradiction undoes ~two.
    assert confidence.confirmed(confidence.confirmed(confidence.confirmed(0.5))) < 0.75
    assert confidence.contradicted(0.744) == pytest.approx(0.494)


def test_effective_confidence_by_hand() -> None:
    weeks = timedelta(weeks=1)
    # 10 weeks unconfirmed: 6 weeks past the 4-week grace, 0.2 + 0.3·0.95^6.
    ten = confidence.effective_confidence(0.5, now=NOW, created=NOW - 10 * weeks)
    assert ten == pytest.approx(0.2 + 0.3 * 0.735091890625) == pytest.approx(0.4205276)
    # 0.9 after 14 weeks: 0.2 + 0.7·0.95^10 = 0.2 + 0.7·0.5987369 = 0.6191158
    assert confidence.effective_confidence(0.9, now=NOW, created=NOW - 14 * weeks) == pytest.approx(
        0.6191158
    )
    # A year (52 weeks, 48 past the grace): 0.2 + 0.3·0.95^48 = 0.2255773
    year = confidence.effective_confidence(0.5, now=NOW, created=NOW - 52 * weeks)
    assert year == pytest.approx(0.2255773)
    # Inside the grace nothing fades; a recent confirmation restarts the clock.
    assert confidence.effective_confidence(0.5, now=NOW, created=NOW - 4 * weeks) == 0.5
    confirmed = confidence.effective_confidence(
        0.5, now=NOW, created=NOW - 52 * weeks, last_confirmed=NOW - 3 * weeks
    )
    assert confirmed == 0.5
    # The mtime counts only without created; with no time at all the note is new.
    assert confidence.effective_confidence(0.5, now=NOW, mtime=NOW - 10 * weeks) == pytest.approx(
        ten
    )
    assert confidence.effective_confidence(
        0.5, now=NOW, created=NOW - 2 * weeks, mtime=NOW - 50 * weeks
    ) == (0.5)
    assert confidence.effective_confidence(0.5, now=NOW) == 0.5
    # At or below the floor nothing fades.
    assert confidence.effective_confidence(0.15, now=NOW, created=NOW - 52 * weeks) == 0.15


def test_last_confirmed_is_an_owned_date_and_feeds_the_view() -> None:
    assert owned_problem("last_confirmed", "2026-11-01T09:00:00Z") is None
    assert owned_problem("last_confirmed", "soon") == "is not a date"
    year_ago = (NOW - timedelta(weeks=52)).isoformat()
    old = {"confidence": 0.8, "created": year_ago}
    faded = note_memory("a.md", Entry(0, 0, "", "a", memory=old))
    # 52 weeks: 0.2 + 0.6·0.95^48 = 0.2511546
    assert faded.confidence == 0.8
    assert faded.effective_confidence(NOW) == pytest.approx(0.2511546)
    fresh = note_memory(
        "a.md", Entry(0, 0, "", "a", memory={**old, "last_confirmed": "2026-11-13T10:00:00Z"})
    )
    assert fresh.effective_confidence(NOW) == 0.8
    bad = note_memory("a.md", Entry(0, 0, "", "a", memory={**old, "last_confirmed": "soon"}))
    assert bad.effective_confidence(NOW) == pytest.approx(0.2511546)


# --------------------------------------------------------------------------- touch


def test_touch_confirm_changes_confidence_and_the_usage_keys_only(
    cli: Cli, vault: Path, now: datetime
) -> None:
    cli("index")
    before = (vault / RATE).read_bytes()
    out = cli.json_lines("touch", "--confirm", RATE)
    assert out[0]["confidence_before"] == 0.6 and out[0]["confidence"] == 0.68
    assert out[0]["confirmed"] is True and out[0]["use_count"] == 1
    gone, added = changed_lines(before, (vault / RATE).read_bytes())
    assert gone == ["confidence: 0.6"]
    assert sorted(added) == sorted(
        [
            "confidence: 0.68",
            "use_count: 1",
            "last_used: 2026-11-20T10:00:00Z",
            "review_count: 1",
            "last_review: 2026-11-20T10:00:00Z",
            "last_confirmed: 2026-11-20T10:00:00Z",
        ]
    )
    # Again: one more step, and the plain text says so.
    line = cli("touch", "--confirm", RATE).stdout
    assert "confidence 0.68 → 0.744 (confirmed)" in line
    assert meta(vault, RATE)["confidence"] == 0.744


def test_plain_touch_does_not_confirm(cli: Cli, vault: Path, now: datetime) -> None:
    cli("index")
    out = cli.json_lines("touch", STRIPE)
    assert out[0]["confirmed"] is False
    assert out[0]["confidence_before"] == out[0]["confidence"] == 0.5
    fm = meta(vault, STRIPE)
    assert "confidence" not in fm and "last_confirmed" not in fm


def test_observe_confirm_writes_a_default_confidence_one_step_up(
    cli: Cli, vault: Path, now: datetime
) -> None:
    cli("index")
    out = cli.json_lines("observe", STRIPE, "--tags", "payments", "--confirm")
    assert (out[0]["confidence_before"], out[0]["confidence"]) == (0.5, 0.6)
    assert meta(vault, STRIPE)["confidence"] == 0.6


# --------------------------------------------------------------------------- contradicts


@pytest.mark.parametrize("newer_first", [True, False])
def test_link_contradicts_lowers_only_the_older_note(
    cli: Cli, vault: Path, now: datetime, newer_first: bool
) -> None:
    # REDIS (created 2026-10-09) is older than RATE (2026-10-11), whichever is linked first.
    cli("index")
    newer_bytes = (vault / RATE).read_bytes()
    a, b = (RATE, REDIS) if newer_first else (REDIS, RATE)
    out = cli("link", a, b, "-t", "contradicts").stdout
    assert meta(vault, REDIS)["confidence"] == 0.6  # 0.85 − 0.25
    assert meta(vault, RATE)["confidence"] == 0.6  # untouched
    gone, added = changed_lines(newer_bytes, (vault / RATE).read_bytes())
    assert gone == [] and all(x.startswith(("contradicts", "  - ")) for x in added)
    assert "confidence" in out
    # Linked again (either way round): the contradiction is already there, counted once.
    cli("link", b, a, "-t", "contradicts")
    assert meta(vault, REDIS)["confidence"] == 0.6


def test_contradiction_stops_at_the_floor(cli: Cli, vault: Path, now: datetime) -> None:
    cli("index")
    cli("link", RATE, "decisions/Memcached for session cache.md", "-t", "contradicts")
    # Memcached (created 2026-03-11, confidence 0.4) is older: 0.4 − 0.25 → floor 0.2.
    assert meta(vault, "decisions/Memcached for session cache.md")["confidence"] == 0.2
    assert meta(vault, RATE)["confidence"] == 0.6


# --------------------------------------------------------------------------- session


def test_a_note_surfaced_then_touched_in_the_session_is_confirmed(
    cli: Cli, vault: Path, now: datetime
) -> None:
    cli("index")
    shown = json.loads(
        cli("surface", "why did we move sessions to Redis?", "--json", "--session", "s1").stdout
    )
    surfaced = [n["path"] for n in shown["notes"]]
    assert REDIS in surfaced and STRIPE not in surfaced
    # Another session's use is no confirmation.
    other = cli.json_lines("touch", "--session", "s2", REDIS)
    assert other[0]["confirmed"] is False and meta(vault, REDIS)["confidence"] == 0.85
    done = {r["path"]: r for r in cli.json_lines("touch", "--session", "s1", REDIS, STRIPE)}
    assert done[REDIS]["confirmed"] is True and done[STRIPE]["confirmed"] is False
    assert meta(vault, REDIS)["confidence"] == 0.88  # 0.85 + 0.2·0.15
    assert "confidence" not in meta(vault, STRIPE)


# --------------------------------------------------------------------------- ranking


def test_a_confirmed_note_ranks_above_an_equally_relevant_contradicted_one(
    cli: Cli, vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VAULTMEM_NOW", "2026-11-19T10:00:00Z")
    cli("index")
    a = cli("remember", "Queue workers retry webhooks five times with backoff.").stdout
    b = cli("remember", "Queue workers retry webhooks three times, no backoff.").stdout
    a, b = a.strip().splitlines()[-1], b.strip().splitlines()[-1]
    monkeypatch.setenv("VAULTMEM_NOW", NOW.isoformat())
    c = cli("remember", "Webhook retries now live in the gateway, not queue workers.").stdout
    cli("touch", "--confirm", a)
    cli("touch", b)  # the same use, unconfirmed: recency is equal
    cli("link", c.strip().splitlines()[-1], b, "-t", "contradicts")  # b is the older
    assert meta(vault, a)["confidence"] == 0.6 and meta(vault, b)["confidence"] == 0.25
    config = build(vault, {})
    entries = {p: e for p in (a, b) if (e := get_entry(config.cache_dir, p)) is not None}
    opts = RankingOptions(now=NOW, review_share=0)
    for order in ([(b, 1.0), (a, 1.0)], [(a, 1.0), (b, 1.0)]):
        out = rank(order, entries, "queue webhook retries", opts, 10)
        assert [r.path for r in out] == [a, b]
        # The priors differ by confidence (0.3·(0.6 − 0.25)) and quality only.
        qa, qb = entries[a].quality, entries[b].quality
        gap = out[0].prior - out[1].prior
        assert gap == pytest.approx(0.3 * 0.35 + 0.3 * (qa - qb))


def test_fading_ranks_a_recently_confirmed_note_above_a_stale_one() -> None:
    # Same stored confidence 0.8 and relevance; both `preference` (recency 1.0, a type whose
    # trust fades: decisions do not, as in ClawMem), quality 0.5.
    # stale: created a year ago, never confirmed: c_eff = 0.2 + 0.6·0.95^48 = 0.2511546,
    #   prior 0.4 + 0.3·0.2511546 + 0.15 = 0.6253464, score 1 + 0.2·0.1253464 = 1.0250693
    # fresh: confirmed last week: prior 0.4 + 0.24 + 0.15 = 0.79, score 1.058
    year_ago = (NOW - timedelta(weeks=52)).isoformat()
    week_ago = (NOW - timedelta(weeks=1)).isoformat()
    keys = {"confidence": 0.8, "created": year_ago}
    fresh = {**keys, "last_confirmed": week_ago}
    entries = {
        "stale.md": Entry(0, 0, "", "s", type="preference", memory=keys, quality=0.5),
        "fresh.md": Entry(0, 0, "", "f", type="preference", memory=fresh, quality=0.5),
    }
    out = rank([("stale.md", 3.0), ("fresh.md", 3.0)], entries, "q", RankingOptions(now=NOW), 10)
    by = {r.path: r for r in out}
    assert [r.path for r in out] == ["fresh.md", "stale.md"]
    assert by["stale.md"].score == pytest.approx(1.0250693)
    assert by["fresh.md"].score == pytest.approx(1.058)
