"""Intent routing in `query`: detection rules, the why beam, the when order, entity notes."""

from __future__ import annotations

import json
import shutil
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from conftest import EXAMPLE_VAULT, Cli

from tests.conftest import copy_indexed
from vaultmem.index.graph import Edge, LinkGraph
from vaultmem.index.manifest import Entry
from vaultmem.retrieval import routing

REDIS = "decisions/Redis for caching.md"
MEMCACHED = "decisions/Memcached for session cache.md"
LI_WEI = "people/Li Wei.md"


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """example-vault/ keyword-indexed once (the routing tests only read it)."""
    vault = tmp_path_factory.mktemp("routing") / "vault"
    shutil.copytree(EXAMPLE_VAULT, vault, ignore=shutil.ignore_patterns(".vaultmem"))
    return vault


@pytest.fixture
def rcli(indexed: Path, monkeypatch: pytest.MonkeyPatch) -> Cli:
    """A CLI on the shared indexed vault (indexed on first use, BM25 only)."""
    monkeypatch.setenv("VAULTMEM_EMBEDDER", "none")
    cli = Cli(indexed)
    if not (indexed / ".vaultmem").exists():
        cli("index")
    return cli


def explained(cli: Cli, *args: str) -> list[dict[str, Any]]:
    """``query ... --explain --json``: one object per hit."""
    out = cli("query", *args, "--explain", "--json").stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]


# --- detection -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "route"),
    [
        ("Why did we drop Memcached?", "why"),
        ("how come the sessions survive a failover", "why"),
        ("what led to the structlog decision", "why"),
        ("the rationale behind Helm charts", "why"),
        ("When did we roll out PgBouncer?", "when"),
        ("since when do we use Redis", "when"),
        ("what date was the Stripe outage", "when"),
        ("how long ago did we move to EKS", "when"),
        ("timeline of the payments integration", "when"),
        # Man-page benchmark questions: words inside, not a why/when question.
        ("update a Release", "what"),
        ("Tell how long the system has been running.", "what"),
        ("helper when working with debconf's escape capability", "what"),
        ("Time and date specifications", "what"),
        ("who is Nobody Known", "what"),  # no note by that name: not an entity question
    ],
)
def test_routes_are_detected_by_rule(question: str, route: str) -> None:
    names = {"li wei": LI_WEI}
    found = routing.detect(question, None, lambda name: names.get(name.lower()))
    assert found.name == route
    assert found.rule  # --explain names the rule that fired


def test_entity_is_detected_by_title_or_alias_and_intent_words_win() -> None:
    names = {"li wei": LI_WEI, "kenji": "people/Kenji Watanabe.md"}

    def resolve(name: str) -> str | None:
        return names.get(name.lower())

    assert routing.detect("Who is Li Wei?", None, resolve).entity == LI_WEI
    kenji = routing.detect("what do we know about Kenji", None, resolve)
    assert (kenji.name, kenji.entity) == ("entity", "people/Kenji Watanabe.md")
    forced = routing.detect("Why did we drop Memcached?", "what", resolve)
    assert (forced.name, forced.rule) == ("what", "--intent what")
    assert routing.detect("when did we first use Redis", None).oldest_first
    assert not routing.detect("when did we last use Redis", None).oldest_first


@pytest.mark.parametrize(
    "question",
    [
        "when did we start rolling out PgBouncer on staging?",
        "When did the Stripe integration begin?",
        "when did we begin using Helm",
    ],
)
def test_when_a_question_asks_how_something_started_it_is_oldest_first(question: str) -> None:
    route = routing.detect(question, None)
    assert (route.name, route.oldest_first) == ("when", True)
    assert route.as_json()["order"] == "oldest first"


# --- the graph walk and the orders, by hand ----------------------------------------------


def test_the_beam_halves_the_score_per_hop_and_stops_after_two() -> None:
    # a -supersedes-> b -caused_by-> c -refines-> d; e links a only by a body wikilink.
    graph = LinkGraph(
        [
            Edge("a.md", "b.md", "supersedes"),
            Edge("b.md", "c.md", "caused_by"),
            Edge("c.md", "d.md", "refines"),
            Edge("e.md", "a.md", "wikilink"),
            Edge("x.md", "a.md", "contradicts"),
        ]
    )
    found = routing.beam(graph, [("a.md", 0.8)], routing.WHY_LINKS)
    assert sorted(found) == ["b.md", "c.md", "x.md"]  # d is hop 3; e is no why link
    assert found["b.md"].score == pytest.approx(0.4)
    assert found["c.md"].score == pytest.approx(0.2)
    assert (found["c.md"].hop, found["c.md"].origin) == (2, "b.md")
    assert found["x.md"].backlink and not found["b.md"].backlink
    assert found["b.md"].describe() == "via supersedes from a.md, hop 1"


def test_why_puts_the_current_decision_before_the_one_it_superseded() -> None:
    graph = LinkGraph(
        [Edge("new.md", "old.md", "supersedes"), Edge("old.md", "new.md", "superseded_by")]
    )
    entries = {
        "old.md": Entry(0, 0, "", "Old", type="decision", status="superseded"),
        "new.md": Entry(0, 0, "", "New", type="decision"),
        "note.md": Entry(0, 0, "", "Note"),
    }
    ranked = [("old.md", 1.0), ("note.md", 0.9)]
    reached = routing.why_reach(graph, ranked)
    assert reached["new.md"].describe() == "via superseded_by from old.md, hop 1"
    order = routing.route_why(ranked, entries, graph, reached)
    # old 1.0 × 1.25 = 1.25 would lead; new (0.5 × 1.25) is moved just before it.
    assert [doc for doc, _ in order] == ["new.md", "old.md", "note.md"]
    assert dict(order)["note.md"] == pytest.approx(0.9)


def test_when_orders_by_date_only_the_notes_about_as_relevant_as_the_best() -> None:
    # A newer note half as relevant (a daily note that mentions the topic) stays below
    # the best one; a note within the band is ordered by date, and they share the score.
    entries = {p: Entry(0, 0, "", p) for p in ("a.md", "b.md", "c.md")}
    ranked = [("daily/2026-10-30.md", 1.0), ("daily/2026-10-24.md", 0.95)]
    ranked += [("daily/2026-11-17.md", 0.6), ("c.md", 0.5)]
    order, dates = routing.route_when(ranked, entries, 10)
    assert [doc for doc, _ in order] == [
        "daily/2026-10-30.md",
        "daily/2026-10-24.md",
        "daily/2026-11-17.md",
        "c.md",
    ]
    oldest, _ = routing.route_when(ranked, entries, 10, oldest_first=True)
    assert oldest[:3] == [("daily/2026-10-24.md", 1.0), ("daily/2026-10-30.md", 1.0)] + [
        ("daily/2026-11-17.md", 0.6)
    ]
    assert set(dates) == {doc for doc, _ in ranked[:3]}
    # An undated best hit: a dated note within the band still comes first, as its equal.
    undated = [("c.md", 1.0), ("daily/2026-10-24.md", 0.95), ("daily/2026-11-17.md", 0.6)]
    order, _ = routing.route_when(undated, entries, 10)
    assert order[:3] == [("daily/2026-10-24.md", 1.0), ("c.md", 1.0), ("daily/2026-11-17.md", 0.6)]


def test_every_route_returns_scores_that_fall_down_the_list() -> None:
    graph = LinkGraph(
        [
            Edge("new.md", "old.md", "supersedes"),
            Edge("old.md", "new.md", "superseded_by"),
            Edge("x.md", "person.md", "related"),
        ]
    )
    entries = {p: Entry(0, 0, "", p) for p in ("old.md", "new.md", "x.md", "person.md")}
    ranked = [("old.md", 1.0), ("y.md", 0.8), ("new.md", 0.3), ("x.md", 0.1)]
    why = routing.route_why(ranked, entries, graph, routing.why_reach(graph, ranked))
    when, _ = routing.route_when([("daily/2026-10-01.md", 1.0), *ranked[1:]], entries, 10)
    entity = routing.route_entity(ranked, "person.md", routing.entity_links(graph, "person.md"))
    for order in (why, when, entity):
        scores = [score for _, score in order]
        assert scores == sorted(scores, reverse=True), order
    assert [doc for doc, _ in why[:2]] == ["new.md", "old.md"]
    assert [doc for doc, _ in entity[:2]] == ["person.md", "old.md"]
    assert dict(entity)["x.md"] == pytest.approx(routing.HOP_DISCOUNT)  # a linked note


def test_note_dates_come_from_the_file_name_then_created_then_last_used() -> None:
    used = Entry(0, 0, "", "T", memory={"last_used": "2026-11-02T08:00:00Z"})
    both = Entry(0, 0, "", "T", memory={"created": "2026-10-01", "last_used": "2026-11-02"})
    assert routing.note_date("daily/2026-10-14.md", both) == (date(2026, 10, 14), "file name")
    assert routing.note_date("a.md", both) == (date(2026, 10, 1), "created")
    assert routing.note_date("a.md", used) == (date(2026, 11, 2), "last_used")
    assert routing.note_date("a.md", Entry(0, 0, "", "T")) is None


# --- the CLI on example-vault --------------------------------------------------------------


def test_why_returns_the_current_decision_first_and_reaches_the_old_one(rcli: Cli) -> None:
    hits = explained(rcli, "Why did we drop Memcached?", "-n", "5")
    assert hits[0]["path"] == REDIS
    old = next(h for h in hits if h["path"] == MEMCACHED)
    assert old["explain"]["route"] == {"route": "why", "rule": "starts with 'why'"}
    assert old["explain"]["reached"]["text"] == f"via supersedes from {REDIS}, hop 1"


def test_why_without_the_prior_still_puts_the_current_decision_first(rcli: Cli) -> None:
    # Keyword relevance alone puts the superseded note first; the why route turns it round.
    args = ("Why did we drop Memcached?", "-n", "3", "--no-prior", "--no-review")
    plain = explained(rcli, *args, "--intent", "what")
    assert plain[0]["path"] == MEMCACHED
    routed = explained(rcli, *args, "--intent", "why")
    assert [h["path"] for h in routed[:2]] == [REDIS, MEMCACHED]
    reached = routed[0]["explain"]["reached"]
    assert (reached["link"], reached["from"], reached["hop"]) == ("superseded_by", MEMCACHED, 1)


def test_why_reaches_a_linked_note_that_passes_a_tag_filter(rcli: Cli) -> None:
    # The keyword index stores no tags: the linked note's tags come from the manifest.
    hits = explained(rcli, "why did we move sessions to redis?", "-n", "5", "--tag", "decision")
    reached = {h["path"]: h["explain"]["reached"] for h in hits if h["explain"]["reached"]}
    assert reached[MEMCACHED]["text"] == f"via supersedes from {REDIS}, hop 1"
    # A tag the linked note lacks still keeps it out.
    hits = explained(rcli, "why did we move sessions to redis?", "-n", "5", "--tag", "infra/redis")
    assert MEMCACHED not in [h["path"] for h in hits]


def test_why_follows_caused_by_from_an_incident(rcli: Cli) -> None:
    # The question names the incident, so it is among the beam's seeds however the
    # pipeline ranks the notes that only mention it.
    hits = explained(rcli, "what led to the duplicate captures incident", "-n", "10")
    reached = {h["path"]: h["explain"]["reached"] for h in hits if h["explain"]["reached"]}
    assert any(r["link"] == "caused_by" for r in reached.values()), reached


def test_when_returns_dated_notes_newest_first_with_their_dates(rcli: Cli) -> None:
    hits = rcli.json_lines("query", "When did we roll out PgBouncer?", "-n", "5")
    dated = [h["date"] for h in hits if "date" in h]
    assert hits[0]["path"] == "handoffs/2026-10-30 pgbouncer rollout.md"
    assert hits[0]["date"] == "2026-10-30"
    assert len(dated) >= 3
    scores = [h["score"] for h in hits]
    assert scores == sorted(scores, reverse=True)


def test_when_first_orders_oldest_first(rcli: Cli) -> None:
    hits = rcli.json_lines("query", "when did we first talk about caching", "-n", "5")
    assert hits[0]["path"] == "daily/2026-10-05.md"


def test_when_never_puts_a_date_over_a_clearly_more_relevant_note(rcli: Cli) -> None:
    # Oldest first, but only among notes about as relevant as the rollout handoff: the
    # release process (staging "rolls out") is older and shares words, not the topic.
    hits = explained(rcli, "when did we start rolling out PgBouncer on staging?", "-n", "10")
    assert hits[0]["path"] == "handoffs/2026-10-30 pgbouncer rollout.md"
    assert hits[0]["explain"]["route"]["order"] == "oldest first"
    scores = [h["score"] for h in hits]
    assert scores == sorted(scores, reverse=True)


@pytest.mark.parametrize(
    ("question", "first"),
    [
        (
            "when did we start rolling out PgBouncer on staging?",
            "handoffs/2026-10-30 pgbouncer rollout.md",
        ),
        ("when were customers charged twice?", "incidents/2026-10-18 Stripe webhook outage.md"),
    ],
)
def test_when_with_vectors_keeps_the_best_note_first(
    embedded_example: Path, tmp_path: Path, vectors_on: None, question: str, first: str
) -> None:
    vault = tmp_path / "vault"
    copy_indexed(embedded_example, vault)
    hits = Cli(vault).json_lines("query", question, "-n", "5")
    assert hits[0]["path"] == first, [h["path"] for h in hits]


def test_entity_returns_the_person_and_the_notes_linking_to_them(rcli: Cli) -> None:
    hits = explained(rcli, "who is Li Wei?", "-n", "6")
    assert hits[0]["path"] == LI_WEI
    assert hits[0]["explain"]["route"]["entity"] == LI_WEI
    linking = {h["path"] for h in hits[1:] if h["explain"]["reached"]}
    # Each of these writes [[Li Wei]] in its body.
    assert {"projects/Release process.md", "handoffs/2026-10-30 pgbouncer rollout.md"} <= linking
    assert all(h["explain"]["reached"]["from"] == LI_WEI for h in hits[1:5])


def test_entity_by_alias_and_by_intent(rcli: Cli) -> None:
    hits = rcli.json_lines("query", "what do we know about Kenji", "-n", "3")
    assert hits[0]["path"] == "people/Kenji Watanabe.md"
    forced = rcli.json_lines("query", "Ana", "--intent", "entity", "-n", "3")
    assert forced[0]["path"] == "people/Ana Souza.md"


def test_what_questions_keep_the_pipeline_order_and_the_json_shape(rcli: Cli) -> None:
    text = "that thing about caching we decided"
    routed = explained(rcli, text, "-n", "5")
    assert routed[0]["explain"]["route"]["route"] == "what"
    plain = rcli.json_lines("query", text, "-n", "5")
    assert [h["path"] for h in plain] == [h["path"] for h in routed]
    assert all("date" not in h and h["explain"]["reached"] is None for h in routed)


def test_a_route_word_is_not_a_free_text_intent(rcli: Cli) -> None:
    hits = explained(rcli, "Redis for caching", "--intent", "why", "-n", "1")
    stages = {s["stage"]: s for s in hits[0]["explain"]["stages"]}
    assert stages["strong-signal"]["status"] == "ran"  # a real intent turns it off
    assert stages["route"]["detail"].startswith("why (--intent why)")


def test_human_explain_shows_the_route_and_the_path(rcli: Cli) -> None:
    out = rcli("query", "Why did we drop Memcached?", "-n", "3", "--explain").stdout
    assert "route: why  [starts with 'why']" in out
    assert f"reached via supersedes from {REDIS}, hop 1" in out
    when = rcli("query", "When did we roll out PgBouncer?", "-n", "2").stdout
    assert " 1. 2026-10-30  Handoff 2026-10-30" in when
