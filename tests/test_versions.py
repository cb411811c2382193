"""Versions of one memory: a memory restated later without ``--supersedes`` is listed
after its newer version (the port that moved, the owner who changed)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tests.conftest import Cli
from vaultmem import scores
from vaultmem.index.manifest import Entry
from vaultmem.retrieval.memory_rank import NoteWords, QueryTerms, RankingOptions, rank
from vaultmem.retrieval.routing import detect

NOW = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
OPTIONS = RankingOptions(now=NOW, review_share=0)


# --- the pure rules, numbers by hand ----------------------------------------------------


def test_restates_needs_shared_query_words() -> None:
    port = frozenset({"port", "notif", "servic", "listen"})
    assert scores.restates(port, port, {})
    # Jaccard 2/4 = 0.5 is enough; 1/3 is not.
    assert scores.restates(frozenset({"a", "b", "c"}), frozenset({"a", "b", "d"}), {})
    assert not scores.restates(frozenset({"a", "b"}), frozenset({"a", "c"}), {})
    assert not scores.restates(frozenset(), frozenset({"a"}), {})  # the older answers nothing


def test_restates_needs_the_rare_words_of_the_older_note() -> None:
    weights = {"test": 4.0, "python": 1.0, "user": 1.0, "prefer": 1.0}
    tests_style = frozenset({"test", "python", "user", "prefer"})  # weight 7
    package_manager = frozenset({"python", "user", "prefer"})  # weight 3 < 0.8 x 7 = 5.6
    assert not scores.restates(tests_style, package_manager, weights)
    assert scores.restates(tests_style, tests_style | {"style"}, weights)  # 7 + 1 >= 5.6
    # A term without a weight weighs 1: 4 of 5 (Jaccard 0.8), weight 4 >= 0.8 x 5.
    five = frozenset("abcde")
    assert scores.restates(five, five - {"e"}, {})
    assert not scores.restates(five, five - {"e", "d"}, {})  # 3 < 4


def test_same_subject_tags() -> None:
    assert scores.same_subject_tags(["ownership", "billing"], ["billing", "ownership"])
    assert scores.same_subject_tags(["team"], ["team", "infra"])  # Jaccard 0.5
    assert not scores.same_subject_tags(["a", "b"], ["a", "c", "d"])  # 0.25
    assert scores.same_subject_tags(["#Billing"], ["billing"])  # as Obsidian compares tags
    assert not scores.same_subject_tags([], [])  # untagged: nothing names the subject
    # Apart: both tagged, not on one subject; untagged on either side says nothing.
    assert scores.tagged_apart(["ops", "checkout"], ["ops", "billing"])  # Jaccard 1/3
    assert not scores.tagged_apart(["ops", "checkout"], ["checkout"])
    assert not scores.tagged_apart([], ["ops", "billing"])


# --- the ranking rule ----------------------------------------------------------------------


def _entry(created: str, kind: str = "note", status: str = "active", **memory: object) -> Entry:
    """A manifest entry as the indexer writes it: ``type`` and ``status`` also as fields."""
    keys = {"type": kind, "created": created, "status": status, **memory}
    return Entry(0, 0, "", "t", type=kind, status=status, memory=keys)


def _terms(words: dict[str, NoteWords]) -> QueryTerms:
    return QueryTerms(dict, lambda path: words[path])


PORT = NoteWords(frozenset({"port", "notif", "listen"}), frozenset({"ops", "notifications"}))
ENTRIES = {
    "old.md": _entry("2026-08-20T10:00:00Z"),
    "new.md": _entry("2026-10-23T10:00:00Z"),
    "other.md": _entry("2026-09-01T10:00:00Z"),
}
RANKED = [("old.md", 10.0), ("other.md", 8.0), ("new.md", 6.0)]
OTHER = NoteWords(frozenset({"port", "listen"}), frozenset({"ops", "checkout"}))


def _order(entries: dict[str, Entry] = ENTRIES, limit: int = 10, **words: NoteWords) -> list:
    notes = {"old.md": PORT, "new.md": PORT, "other.md": OTHER}
    notes.update({f"{k}.md": v for k, v in words.items()})
    return rank(RANKED, entries, "what port", OPTIONS, limit, _terms(notes))


def test_the_newer_version_takes_the_older_ones_place_and_score() -> None:
    out = _order()
    assert [r.path for r in out] == ["new.md", "old.md", "other.md"]
    by = {r.path: r for r in out}
    assert by["old.md"].newer_version == "new.md"
    assert by["new.md"].score == pytest.approx(by["old.md"].score)
    assert not by["other.md"].newer_version
    # Without the rule (no query words given) relevance decides.
    plain = rank(RANKED, ENTRIES, "what port", OPTIONS, 10)
    assert [r.path for r in plain] == ["old.md", "other.md", "new.md"]


@pytest.mark.parametrize(
    "change",
    [
        {"old.md": _entry("2026-08-20T10:00:00Z", pinned=True)},  # a pin says keep it
        # Confirmed after the newer one was written: the older is the word that stands.
        {"old.md": _entry("2026-08-20T10:00:00Z", last_confirmed="2026-11-01T00:00:00Z")},
        {"new.md": _entry("2026-10-23T10:00:00Z", kind="decision")},  # another type
        {"new.md": Entry(0, 0, "", "t", memory={"created": "2026-10-23"})},  # no type: a document
        {"new.md": _entry("2026-10-23T10:00:00Z", status="archived")},  # retired
    ],
)
def test_what_keeps_the_older_note_first(change: dict[str, Entry]) -> None:
    out = _order({**ENTRIES, **change})
    assert out[0].path == "old.md" and not out[0].newer_version


def test_other_subjects_and_the_cut_keep_their_order() -> None:
    checkout = NoteWords(PORT.terms, frozenset({"ops", "checkout"}))  # another service's tags
    assert _order(new=checkout)[0].path == "old.md"
    fewer = NoteWords(frozenset({"port"}), PORT.tags)  # answers less of the question
    assert _order(new=fewer)[0].path == "old.md"
    # Only the results shown are compared: a newer version below the cut stays there.
    assert [r.path for r in _order(limit=2)] == ["old.md", "other.md"]
    no_prior = RankingOptions(now=NOW, weight=0.0, review_share=0)  # --no-prior: off
    out = rank(RANKED, ENTRIES, "q", no_prior, 10, _terms({"old.md": PORT, "new.md": PORT}))
    assert out[0].path == "old.md"


# --- through the CLI, with `remember` ------------------------------------------------------


def _remember(cli: Cli, monkeypatch: pytest.MonkeyPatch, when: str, text: str, **opts: str) -> str:
    monkeypatch.setenv("VAULTMEM_NOW", when)
    args = [f"--{key}={value}" for key, value in opts.items()]
    return cli("remember", text, *args).stdout.strip().splitlines()[-1]


def test_a_memory_restated_later_is_answered_by_its_newest_version(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = _remember(
        cli, monkeypatch, "2026-08-20T10:00:00Z",
        "The notifications service listens on port 3000.",
        title="notifications listens on port 3000", tags="ops,notifications",
    )  # fmt: skip
    other = _remember(
        cli, monkeypatch, "2026-11-02T10:00:00Z",
        "The checkout service listens on port 3100 since the ingress change.",
        title="checkout listens on port 3100", tags="ops,checkout",
    )  # fmt: skip
    new = _remember(
        cli, monkeypatch, "2026-10-23T10:00:00Z",
        "The notifications service listens on port 3100 since the ingress change "
        "(it was 3000), so update the firewall rules.",
        title="notifications listens on port 3100", tags="ops,notifications",
    )  # fmt: skip
    monkeypatch.setenv("VAULTMEM_NOW", "2026-12-01T09:00:00Z")
    cli("index")
    question = "What port does the notifications service listen on?"
    plain = [h["path"] for h in cli.json_lines("search", question, "--no-prior")]
    assert plain.index(old) < plain.index(new)  # the shorter, older note matches best
    for command in ("search", "query"):
        got = [h["path"] for h in cli.json_lines(command, question)]
        assert got.index(new) < got.index(old), command
        assert got.index(old) < got.index(other) or other not in got[:2], command
    hits = cli.json_lines("query", question, "--explain")
    by = {h["path"]: h["explain"]["memory"] for h in hits}
    assert by[old]["newer_version"] == new
    assert by[new]["newer_version"] is None
    human = cli("query", question, "--explain").stdout
    assert f"below its newer version {new}" in human
    assert "1 below a newer version" in human


def test_a_schedule_question_is_not_a_date_question() -> None:
    assert detect("When is the staging database reset?", None).name == "what"
    assert detect("When does the nightly backup run?", None).name == "what"
    assert detect("When did we reset the staging database?", None).name == "when"
    assert detect("when was the last outage", None).name == "when"
