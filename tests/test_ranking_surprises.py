"""Ranking surprises found by hand (issue 30, item 6), each pinned by a test.

- near-duplicates MMR set aside must stay below the distinct results, whatever the
  memory prior and the intent route do after it;
- ``--intent`` steers the retrieval lists even with no LLM and no reranker;
- "latest"/"recent" queries rank the notes they ask for above a pinned, never-decaying hub;
- a surfaced excerpt or a snippet is never a bare tag line;
- ``surface --budget 50``, the documented minimum, shows a note or says why it cannot;
- every score says what kind it is, in the text output and as ``score_kind`` in JSON.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import Cli, copy_indexed

NOW = "2026-11-20T10:00:00Z"
REDIS = "decisions/Redis for caching.md"
COPIES = ["decisions/Redis copy 1.md", "decisions/Redis copy 2.md"]
PGBOUNCER = "research/PgBouncer connection pooling.md"
HANDOFFS = {
    "handoffs/2026-11-12 release 2.8.md",
    "handoffs/2026-10-30 pgbouncer rollout.md",
    "handoffs/2026-10-14 webhook retries.md",
}


@pytest.fixture
def rcli(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> Cli:
    monkeypatch.setenv("VAULTMEM_NOW", NOW)
    return cli


def _paths(cli: Cli, *args: str) -> list[str]:
    return [hit["path"] for hit in cli.json_lines(*args)]


# --- MMR demotion survives the memory prior and the route --------------------------------


@pytest.mark.parametrize(
    "text",
    ["sessions redis memcached", "why did we move sessions to redis"],  # what, why routes
)
def test_near_duplicates_stay_below_the_distinct_results(rcli: Cli, text: str) -> None:
    for copy in COPIES:
        shutil.copyfile(rcli.vault / REDIS, rcli.vault / copy)
    rcli("index")
    order = _paths(rcli, "query", text, "-n", "30")
    assert order[0] == REDIS or order[0] in COPIES
    # Every distinct result the query found is listed before the two set-aside copies.
    assert set(order[-2:]) == {REDIS, *COPIES} - {order[0]}, order


# --- --intent steers the lists offline -----------------------------------------------------


@pytest.mark.parametrize(
    ("text", "intent", "wanted"),
    [
        ("retries", "background job queue workers", "research/Background job queues.md"),
        ("timeouts", "database migrations locks", "decisions/Alembic for migrations.md"),
    ],
)
def test_intent_steers_the_lists_without_an_llm(
    rcli: Cli, text: str, intent: str, wanted: str
) -> None:
    rcli("index")
    plain = _paths(rcli, "query", text)
    steered = _paths(rcli, "query", text, "--intent", intent)
    assert plain[0] != wanted
    assert steered[0] == wanted, steered
    explained = json.loads(
        rcli("query", text, "--intent", intent, "--explain", "--json").stdout.splitlines()[0]
    )
    names = [spec["name"] for spec in explained["explain"]["lists"]]
    assert "bm25:intent" in names


# --- recency queries ask for recent notes, not durable ones -----------------------------


@pytest.mark.parametrize("text", ["latest handoff", "recent handoffs"])
def test_latest_ranks_the_handoffs_above_the_pinned_hub(rcli: Cli, text: str) -> None:
    rcli("index")
    order = _paths(rcli, "search", text)
    assert set(order[:3]) == HANDOFFS, order
    # Asking plainly keeps the pinned hub where its relevance and pin put it.
    assert "Harbor.md" in _paths(rcli, "search", "harbor handoffs dailies")[:2]


# --- excerpts and snippets are words, not tag lines ----------------------------------------


def test_a_tag_line_is_not_the_excerpt_or_the_snippet(rcli: Cli) -> None:
    rcli("index")
    prompt = "how do we pool postgres connections with pgbouncer"
    out = json.loads(rcli("surface", prompt, "--json").stdout)
    line = next(ln for ln in out["context"].splitlines() if f"({PGBOUNCER}" in ln)
    excerpt = line.split("): ", 1)[1] if "): " in line else ""
    assert excerpt and excerpt.strip() != "#postgres #pgbouncer", line
    assert len(excerpt) > 60, line
    hit = next(h for h in rcli.json_lines("search", "postgres pgbouncer") if h["path"] == PGBOUNCER)
    assert hit["snippet"] != "#postgres #pgbouncer"


# --- the smallest budget ---------------------------------------------------------------------


def test_the_minimum_budget_shows_the_first_note(rcli: Cli) -> None:
    rcli("index")
    prompt = "how do we pool postgres connections with pgbouncer"
    printed = rcli("surface", prompt, "--budget", "50")
    assert printed.stdout.strip(), printed.stderr
    assert len(printed.stdout.rstrip("\n")) <= 200
    assert "PgBouncer connection pooling" in printed.stdout


def test_a_budget_no_note_fits_says_so(rcli: Cli) -> None:
    long_title = "PgBouncer " + "connection pooling and everything around it " * 6
    note = rcli.vault / "research" / "Long.md"
    note.write_text(f"# {long_title}\n\nhow we pool postgres connections with pgbouncer\n")
    (rcli.vault / PGBOUNCER).unlink()
    rcli("index")
    printed = rcli(
        "surface", "how do we pool postgres connections with pgbouncer", "--budget", "50"
    )
    assert printed.stdout == ""
    assert "budget" in printed.stderr and "50" in printed.stderr
    out = json.loads(
        rcli(
            "surface", "pool postgres connections with pgbouncer", "--budget", "50", "--json"
        ).stdout
    )
    assert out["context"] == "" and "budget" in out["reason"]


# --- scores say what they are ----------------------------------------------------------------


def test_scores_are_labelled_with_their_kind(rcli: Cli) -> None:
    rcli("index")
    for command, kind in (("search", "bm25"), ("query", "relevance")):
        hits = rcli.json_lines(command, "redis cache")
        assert hits and {h["score_kind"] for h in hits} == {kind}
        first = rcli(command, "redis cache").stdout.splitlines()[0]
        assert first.rstrip().endswith(kind) or f" {kind}" in first, first


def test_vector_scores_are_cosines(
    embedded_example: Path, tmp_path: Path, vectors_on: None
) -> None:
    vault = tmp_path / "vault"
    copy_indexed(embedded_example, vault)
    cli = Cli(vault)
    for command in (("vsearch", "caching layer"), ("similar", "Redis for caching")):
        hits = cli.json_lines(*command)
        assert hits and {h["score_kind"] for h in hits} == {"cosine"}
        assert " cosine" in cli(*command).stdout.splitlines()[0]
    hits = cli.json_lines("query", "caching layer")
    assert {h["score_kind"] for h in hits} == {"relevance"}
