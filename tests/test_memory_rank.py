"""Memory-aware ranking: the bounded prior, supersession, pins, recency, review slots."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.conftest import Cli, copy_indexed
from vaultmem import scores
from vaultmem.index.manifest import Entry
from vaultmem.retrieval.memory_rank import RankingOptions, rank

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


# --- pure functions, numbers by hand ------------------------------------------------------


def test_memory_prior_weights() -> None:
    # 0.4·1 + 0.3·0.5 + 0.3·0.2 = 0.61
    assert scores.memory_prior(1.0, 0.5, 0.2) == pytest.approx(0.61)
    # recency query: 0.8·0.25 + 0.1·1 + 0.1·0 = 0.3
    assert scores.memory_prior(0.25, 1.0, 0.0, recency_query=True) == pytest.approx(0.3)
    assert scores.memory_prior(7.0, -1.0, 2.0) == pytest.approx(0.4 + 0.0 + 0.3)  # clamped


def test_ranked_score_bounds() -> None:
    w = 0.1
    assert scores.ranked_score(0.9, 0.5, weight=w) == pytest.approx(0.9)
    assert scores.ranked_score(0.9, 1.0, weight=w) == pytest.approx(0.95)
    assert scores.ranked_score(0.9, 0.0, weight=w) == pytest.approx(0.85)
    assert scores.ranked_score(0.9, 0.5, weight=w, pinned=True) == pytest.approx(0.95)
    assert scores.ranked_score(0.9, 0.5, weight=w, superseded=True) == pytest.approx(0.8)
    # The bound: the best prior cannot lift a note past one `weight` + 0.01 more relevant.
    assert scores.ranked_score(0.89, 1.0, weight=w) < scores.ranked_score(1.0, 0.0, weight=w)
    d = scores.PRIOR_WEIGHT  # the default, set by the benchmark
    assert scores.ranked_score(0.99 - d, 1.0) < scores.ranked_score(1.0, 0.0)
    assert scores.ranked_score(1.0, 0.5, pinned=True) - scores.ranked_score(
        1.0, 0.5
    ) == pytest.approx(d / 2)


def test_asks_for_recency() -> None:
    assert scores.asks_for_recency("what did we decide last time about redis")
    assert scores.asks_for_recency("Latest deploy notes")
    assert not scores.asks_for_recency("redis cache invalidation")


def _entry(**memory: object) -> Entry:
    return Entry(0, 0, "", "t", memory=dict(memory), quality=0.5)


def test_rank_by_hand() -> None:
    entries = {
        "a.md": _entry(type="decision"),  # prior 0.4·1 + 0.3·0.5 + 0.3·0.5 = 0.70
        "b.md": _entry(type="decision", pinned=True),  # same prior, pinned
        # recency ~0; confidence unconfirmed for 99.8 weeks fades to
        # 0.2 + 0.3·0.95^95.8 = 0.2022: prior 0.3·0.2022 + 0.3·0.5 = 0.2107
        "c.md": _entry(type="note", created="2025-01-01"),
    }
    ranked = [("c.md", 10.0), ("a.md", 9.8), ("b.md", 9.0)]
    out = rank(ranked, entries, "query", RankingOptions(now=NOW, weight=0.1, review_share=0), 10)
    by = {r.path: r for r in out}
    assert by["c.md"].relevance == pytest.approx(1.0)
    assert by["a.md"].relevance == pytest.approx(0.98)
    assert by["a.md"].score == pytest.approx(0.98 + 0.1 * (0.70 - 0.5))
    assert by["b.md"].score == pytest.approx(0.90 + 0.1 * 0.20 + 0.05)
    assert by["c.md"].score == pytest.approx(1.0 + 0.1 * (0.2107 - 0.5), abs=1e-4)
    assert [r.path for r in out] == ["a.md", "c.md", "b.md"]  # 1.0, 0.971, 0.97


def test_rank_hides_forgotten_and_keeps_unknown() -> None:
    entries = {"gone.md": Entry(0, 0, "", "t", status="forgotten"), "ok.md": _entry()}
    out = rank(
        [("gone.md", 5.0), ("ok.md", 4.0), ("new.md", 3.0)],
        entries,
        "q",
        RankingOptions(now=NOW),
        10,
    )
    assert [r.path for r in out] == ["ok.md", "new.md"]
    asked = rank(
        [("gone.md", 5.0)], entries, "q", RankingOptions(now=NOW, show_status="forgotten"), 10
    )
    assert [r.path for r in asked] == ["gone.md"]


def test_superseded_goes_below_its_successor() -> None:
    entries = {
        "old.md": _entry(type="decision", superseded_by=["[[new]]"], status="superseded"),
        "new.md": _entry(type="decision"),
    }
    # Far more relevant than the penalty can cover: still placed right below "new", at
    # its score (scores fall down the list).
    out = rank(
        [("old.md", 10.0), ("x.md", 6.0), ("new.md", 2.0)],
        entries,
        "q",
        RankingOptions(now=NOW, review_share=0),
        10,
    )
    assert [r.path for r in out] == ["x.md", "new.md", "old.md"]
    assert out[0].score > out[1].score == out[2].score
    assert out[2].successor == "new.md"


def test_a_chain_of_successors_keeps_every_old_version_below_the_current_one() -> None:
    entries = {
        "pg12.md": _entry(type="decision", superseded_by=["[[pg14]]"], status="superseded"),
        "pg14.md": _entry(type="decision", superseded_by=["[[pg16]]"], status="superseded"),
        "pg16.md": _entry(type="decision"),
    }
    ranked = [("pg12.md", 10.0), ("pg14.md", 9.0), ("x.md", 6.0), ("pg16.md", 3.0)]
    out = rank(ranked, entries, "q", RankingOptions(now=NOW, review_share=0), 10)
    assert [r.path for r in out] == ["x.md", "pg16.md", "pg14.md", "pg12.md"]
    scores = [r.score for r in out]
    assert scores == sorted(scores, reverse=True)


def _later_contradicts(relevance_of_later: float) -> list[str]:
    entries = {
        # The earlier fact, its confidence lowered by the link (0.5 → 0.25).
        "port-old.md": _entry(created="2026-11-20", confidence=0.25, contradicts=["[[port-new]]"]),
        "port-new.md": _entry(created="2026-11-28", contradicts=["[[port-old]]"]),
    }
    ranked = [("port-old.md", 10.0), ("x.md", 9.7), ("port-new.md", 10.0 * relevance_of_later)]
    options = RankingOptions(now=NOW, review_share=0)
    return [r.path for r in rank(ranked, entries, "which port", options, 10)]


def test_a_later_contradicting_note_goes_first_on_a_near_tie() -> None:
    assert _later_contradicts(0.92)[:2] == ["port-new.md", "port-old.md"]
    # Clearly less relevant (the question is about what only the earlier note says):
    # the earlier note keeps its place.
    assert _later_contradicts(0.5)[0] == "port-old.md"


def test_near_duplicates_count_as_a_tie_for_contradicting_notes() -> None:
    entries = {
        "a.md": _entry(created="2026-11-20", confidence=0.25, contradicts=["[[b]]"]),
        "b.md": _entry(created="2026-11-28"),  # the link written on one side only
    }
    ranked = [("a.md", 1.0), ("x.md", 0.5), ("b.md", 0.0)]  # a fusion floor: b scores 0
    options = RankingOptions(now=NOW, review_share=0)
    out = rank(ranked, entries, "q", options, 10, alike=lambda p, q: {p, q} == {"a.md", "b.md"})
    assert [r.path for r in out[:2]] == ["b.md", "a.md"]
    assert out[0].score == out[1].score > 0.9  # the later note takes the earlier's score
    assert out[1].contradicted_by == "b.md"
    assert rank(ranked, entries, "q", options, 10)[0].path == "a.md"  # not alike: no tie


def test_scores_fall_down_the_list_and_are_in_the_retrieval_units() -> None:
    from vaultmem.model import Hit
    from vaultmem.retrieval.memory_rank import rank_hits

    entries = {
        "old.md": _entry(type="decision", superseded_by=["[[new]]"], status="superseded"),
        "new.md": _entry(type="decision"),
        "pinned.md": _entry(pinned=True),
        "stale.md": _entry(created="2024-01-01", confidence=0.2),
    }
    hits = [
        Hit(p, p, score, "", 1)
        for p, score in [
            ("old.md", 12.0),
            ("stale.md", 11.5),
            ("x.md", 11.0),
            ("pinned.md", 9.0),
            ("new.md", 3.0),
        ]
    ]
    out = rank_hits(hits, entries, "q", RankingOptions(now=NOW, review_share=0), 10)
    scores = [h.score for h in out]
    assert scores == sorted(scores, reverse=True), [(h.path, h.score) for h in out]
    assert dict((h.path, h.score) for h in out)["x.md"] == pytest.approx(11.0)  # no state


def test_review_slots_take_danger_zone_notes_from_below_the_cut() -> None:
    # Decay score in the danger zone: a 10-day half-life note unused for 20 days scores
    # 0.25 (priority 1.0).
    fading = _entry(type="note", half_life="10d", created=(NOW - timedelta(days=20)).isoformat())
    entries = {f"n{i}.md": _entry(type="decision") for i in range(12)}
    entries["fading.md"] = fading
    ranked = [(f"n{i}.md", 10.0 - i * 0.1) for i in range(12)] + [("fading.md", 8.0)]
    out = rank(ranked, entries, "q", RankingOptions(now=NOW, weight=0.0), 10)
    assert len(out) == 10
    assert out[-1].path == "fading.md" and out[-1].review
    assert [r.path for r in out[:9]] == [f"n{i}.md" for i in range(9)]
    # Too weak a match for a review slot (relevance < 0.5): not blended in.
    ranked[-1] = ("fading.md", 4.0)
    out = rank(ranked, entries, "q", RankingOptions(now=NOW, weight=0.0), 10)
    assert "fading.md" not in [r.path for r in out]


# --- scenarios through the CLI -----------------------------------------------------------


def _write(vault: Path, path: str, text: str) -> None:
    (vault / path).parent.mkdir(parents=True, exist_ok=True)
    (vault / path).write_text(text, encoding="utf-8")


def _paths(cli: Cli, *args: str) -> list[str]:
    return [h["path"] for h in cli.json_lines(*args)]


def test_superseded_decision_ranks_below_its_replacement(cli: Cli) -> None:
    cli("index")
    query = "memcached session cache"
    plain = _paths(cli, "search", query, "--no-prior", "--no-review")
    old, new = "decisions/Memcached for session cache.md", "decisions/Redis for caching.md"
    assert plain.index(old) < plain.index(new)  # by keywords alone the old one wins
    for command in ("search", "query"):
        got = _paths(cli, command, query)
        assert got.index(new) < got.index(old), command


TWIN = """---
type: {type}
created: {created}
---
# Deploy checklist for the billing service

Run the migrations, then drain the old pods, then flip the feature flag.
"""


def _twins(vault: Path, created_a: str, created_b: str) -> None:
    for folder, created in (("twins-a", created_a), ("twins-b", created_b)):
        _write(vault, f"{folder}/Billing deploy.md", TWIN.format(type="note", created=created))


def test_pinned_note_wins_at_equal_relevance(cli: Cli) -> None:
    _twins(cli.vault, "2026-11-01", "2026-11-01")
    cli("index")
    query = "billing deploy checklist"
    a, b = "twins-a/Billing deploy.md", "twins-b/Billing deploy.md"
    for pinned, other in ((a, b), (b, a)):
        cli("pin", pinned)
        cli("unpin", other)
        got = _paths(cli, "search", query)
        assert got.index(pinned) < got.index(other)


def test_latest_query_puts_the_newer_note_first(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VAULTMEM_NOW", "2026-11-30T12:00:00Z")
    a, b = "twins-a/Billing deploy.md", "twins-b/Billing deploy.md"
    for newer, older in ((a, b), (b, a)):
        shutil.rmtree(cli.vault / "twins-a", ignore_errors=True)
        shutil.rmtree(cli.vault / "twins-b", ignore_errors=True)
        dates = {newer: "2026-11-28", older: "2026-08-01"}
        _twins(cli.vault, dates[a], dates[b])
        cli("index")
        got = _paths(cli, "search", "latest billing deploy checklist")
        assert got.index(newer) < got.index(older)


def test_forgotten_note_is_never_returned(cli: Cli) -> None:
    cli("index")
    target = "decisions/Redis for caching.md"
    assert target in _paths(cli, "search", "redis caching")
    cli("forget", target)
    for command in ("search", "query"):
        assert target not in _paths(cli, command, "redis caching", "-n", "50"), command
    assert target in _paths(cli, "search", "redis caching", "--status", "forgotten")


def test_forgotten_note_hidden_from_vsearch(
    embedded_example: Path, tmp_path: Path, vectors_on: None
) -> None:
    vault = tmp_path / "vault"
    copy_indexed(embedded_example, vault)
    cli = Cli(vault)
    target = "decisions/Redis for caching.md"
    assert target in _paths(cli, "vsearch", "shared cache for sessions", "-n", "20")
    cli("forget", target)
    assert target not in _paths(cli, "vsearch", "shared cache for sessions", "-n", "50")
