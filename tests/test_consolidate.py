"""`consolidate`: near-duplicate memories written by `remember` collapse into one note."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import Cli

from tests.conftest import copy_indexed
from vaultmem.memory.consolidate import distinct_facts
from vaultmem.note import read_note
from vaultmem.properties import OWNED_KEYS

# Three near-identical memories about one fact (3-word shingle Jaccard 0.90-0.97: merged),
# two that share most words but add a fact (0.70: the LLM's call), one unrelated.
STAGING = (
    "The staging database is Postgres 15 running on host db-stage-1 behind PgBouncer "
    "in transaction mode with nightly backups, a read replica on db-stage-2 for the "
    "reporting jobs, and a weekly restore drill that the platform team runs every "
    "Thursday afternoon."
)
SAME_FACT = [STAGING, STAGING + " Kept in S3.", "Note: " + STAGING]
SIGNING = "Release builds are signed with the team GPG key that is stored in the ops vault."
SIMILAR = [SIGNING, SIGNING[:-1] + " and rotated every year in January."]
UNRELATED = "The office coffee machine is descaled every Monday morning."


def _git(vault: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.email=t@t", "-c", "user.name=t", *args],
        cwd=vault,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def _remember(cli: Cli, text: str, *extra: str) -> str:
    return cli("remember", text, *extra).output.strip().splitlines()[-1]


def _seed(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], list[str], str]:
    """The memories, a day apart (oldest first), committed in a git repository."""
    days = iter(range(1, 10))

    def remember(text: str, *extra: str) -> str:
        monkeypatch.setenv("VAULTMEM_NOW", f"2026-11-{next(days):02d}T10:00:00Z")
        return _remember(cli, text, *extra)

    same = [remember(SAME_FACT[0], "--title", "Staging database")]
    same += [remember(text) for text in SAME_FACT[1:]]
    similar = [remember(text) for text in SIMILAR]
    other = remember(UNRELATED)
    monkeypatch.setenv("VAULTMEM_NOW", "2026-11-20T10:00:00Z")
    _git(cli.vault, "init", "-q")
    _git(cli.vault, "add", "-A")
    _git(cli.vault, "commit", "-qm", "seed")
    return same, similar, other


def _plan(cli: Cli, *args: str) -> list[dict]:
    out = cli("consolidate", "--json", *args).stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]


@pytest.fixture
def seeded(
    vault: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> tuple[list[str], list[str], str]:
    cli("index")
    return _seed(cli, monkeypatch)


def _owned_only_diff(vault: Path, path: str, merged: str) -> None:
    """The original changed in status and superseded_by only, body and other keys kept."""
    before_raw = _git(vault, "show", f"HEAD:{path}")
    (vault / "_before.md").write_text(before_raw, encoding="utf-8")
    before, after = read_note(vault, "_before.md"), read_note(vault, path)
    (vault / "_before.md").unlink()
    assert after.body == before.body
    changed = {k for k in {*before.meta, *after.meta} if before.meta.get(k) != after.meta.get(k)}
    assert changed == {"status", "superseded_by"}
    assert after.meta["status"] == "superseded"
    assert after.meta["superseded_by"] == [f"[[{Path(merged).stem}]]"]
    removed = [
        line
        for line in _git(vault, "diff", "-U0", "--", path).splitlines()
        if line.startswith("-") and not line.startswith("---")
    ]
    assert removed == ["-status: active"]
    assert changed <= set(OWNED_KEYS)


# --------------------------------------------------------------------------- facts


def test_distinct_facts_keeps_every_sentence_once() -> None:
    bodies = [
        "# Title\n\nRedis is the cache. Its TTL is 5 minutes.\n\n- evictions: LRU",
        "redis is the cache",
        "Redis is the cache, and it runs on cache-1.\n\n* Evictions: LRU\n",
    ]
    assert distinct_facts(bodies) == [
        "Its TTL is 5 minutes.",
        "evictions: LRU",
        "Redis is the cache, and it runs on cache-1.",
    ]


# --------------------------------------------------------------------------- shingles


def test_dry_run_plans_by_shingles_and_writes_nothing(vault: Path, cli: Cli, seeded) -> None:  # noqa: ANN001
    same, similar, other = seeded
    plan = _plan(cli, "--dry-run")
    assert [(set(c["members"]), c["action"]) for c in plan] == [
        (set(same), "merge"),
        (set(similar), "review"),
    ]
    assert 0.8 <= plan[0]["cohesion"] < 1 and 0.5 <= plan[1]["cohesion"] < 0.8
    assert plan[0]["members"] == same  # oldest first
    assert plan[0]["title"] == "Staging database"
    assert all(c["outcome"] == "planned" for c in plan)
    assert _git(vault, "status", "--porcelain") == ""


def test_merge_writes_one_note_and_supersedes_the_originals(
    vault: Path,
    cli: Cli,
    seeded,  # noqa: ANN001
) -> None:
    same, similar, _other = seeded
    plan = _plan(cli)
    assert [c["outcome"] for c in plan] == ["merged", "reported"]
    merged = plan[0]["merged"]
    assert merged == "inbox/staging-database-2.md"
    note = read_note(vault, merged)
    assert note.title == "Staging database"
    assert note.meta["status"] == "active" and note.meta["type"] == "note"
    # Dated when its facts were last stated (the newest original), not when merged on
    # 2026-11-20: a merge of old wordings is no newer version of the memory.
    newest = max(read_note(vault, p).meta["created"] for p in same)
    assert note.meta["created"] == newest and str(newest).startswith("2026-11-0")
    links = [f"[[{Path(p).stem}]]" for p in same]
    assert note.meta["supersedes"] == links and note.meta["promoted_from"] == links
    # Every distinct fact of every original, each once.
    # ("Note: <STAGING>" says all that <STAGING> says: the shorter sentence goes.)
    assert note.body.count(STAGING) == 1 and note.body.count("Kept in S3.") == 1
    assert "- Note: The staging" in note.body
    for path in same:
        _owned_only_diff(vault, path, merged)
    for path in similar:
        assert _git(vault, "diff", "--", path) == ""
    # Obsidian's view: the merged note links to each original, each links back.
    shown = json.loads(cli("links", merged, "--json").stdout)
    assert [r["path"] for r in shown["typed"]["supersedes"]] == same
    assert {b["path"] for b in shown["backlinks"] if b["via"] == "superseded_by"} == set(same)


def test_second_run_finds_nothing_new(vault: Path, cli: Cli, seeded) -> None:  # noqa: ANN001
    _same, similar, _other = seeded
    cli("consolidate")
    _git(vault, "add", "-A")
    _git(vault, "commit", "-qm", "consolidated")
    again = _plan(cli)
    assert [(set(c["members"]), c["outcome"]) for c in again] == [(set(similar), "reported")]
    assert _git(vault, "status", "--porcelain") == ""


def test_search_ranks_the_merged_note_above_its_originals(cli: Cli, seeded) -> None:  # noqa: ANN001
    same, _similar, _other = seeded
    merged = _plan(cli)[0]["merged"]
    out = cli("search", "staging database Postgres PgBouncer", "-n", "10", "--json").stdout
    ranked = [json.loads(line)["path"] for line in out.splitlines()]
    assert ranked[0] == merged
    assert all(ranked.index(merged) < ranked.index(p) for p in same if p in ranked)


def test_the_core_returns_the_plan_as_data(vault: Path, seeded) -> None:  # noqa: ANN001
    from datetime import UTC, datetime

    from vaultmem.config import build
    from vaultmem.memory.consolidate import consolidate

    same, _similar, _other = seeded
    report = consolidate(build(vault, {}), now=datetime.now(UTC), dry_run=True)
    data = report.as_json()
    assert data["similarity"] == "shingles" and data["notes"] >= 6 and data["dry_run"]
    assert data["thresholds"] == {"link": 0.5, "merge": 0.9, "review": 0.5}
    assert [c["members"] for c in data["clusters"]][0] == same


def test_folder_limits_the_notes_compared(cli: Cli, seeded) -> None:  # noqa: ANN001
    assert _plan(cli, "--dry-run", "--folder", "decisions") == []
    whole = _plan(cli, "--dry-run", "--folder", ".")
    assert len(whole) >= 2


def test_threshold_option_links_more_loosely(cli: Cli, seeded) -> None:  # noqa: ANN001
    same, similar, _other = seeded
    tight = _plan(cli, "--dry-run", "--threshold", "0.95")
    assert [set(c["members"]) for c in tight] == [set(same[::2])]
    assert _plan(cli, "--dry-run", "--threshold", "0.01", "--folder", "inbox")


# --------------------------------------------------------------------------- LLM review


def test_dry_run_does_not_ask_the_llm(cli: Cli, seeded, llm_env) -> None:  # noqa: ANN001
    plan = _plan(cli, "--dry-run")
    assert [c["action"] for c in plan] == ["merge", "ask"]
    assert not [r for r in llm_env.requests if "chat" in r.path]


@pytest.mark.parametrize(
    ("verdict", "outcome", "link"),
    [
        ("merge", "merged", None),
        ("keep_apart", "kept_apart", "related"),
        ("contradicts", "contradicts", "contradicts"),
    ],
)
def test_the_llm_decides_the_middle_band(
    vault: Path,
    cli: Cli,
    seeded,  # noqa: ANN001
    llm_env,  # noqa: ANN001
    verdict: str,
    outcome: str,
    link: str | None,
) -> None:
    _same, similar, _other = seeded
    llm_env.chat_replies.append(json.dumps({"verdict": verdict, "reason": "they say so"}))
    plan = _plan(cli)
    asked = [r for r in llm_env.requests if "chat" in r.path]
    assert len(asked) == 1  # the 0.9+ cluster merges without asking
    body = asked[0].body
    prompt = body["messages"][0]["content"]
    assert SIMILAR[0] in prompt and "rotated every year" in prompt
    assert "keep_apart" in json.dumps(body.get("response_format"))
    reviewed = plan[1]
    assert reviewed["outcome"] == outcome and reviewed["reason"] == "they say so"
    older, newer = similar
    if link is None:
        merged = read_note(vault, reviewed["merged"])
        assert "rotated every year in January" in merged.body
        assert read_note(vault, older).meta["status"] == "superseded"
    else:
        assert read_note(vault, newer).meta[link] == [f"[[{Path(older).stem}]]"]
        assert read_note(vault, older).meta[link] == [f"[[{Path(newer).stem}]]"]
        assert read_note(vault, older).meta["status"] == "active"
    # Judged once: the next run neither asks again nor finds the pair.
    again = _plan(cli)
    assert again == [] and len([r for r in llm_env.requests if "chat" in r.path]) == 1


def test_an_unusable_reply_fails_that_cluster_only(cli: Cli, seeded, llm_env) -> None:  # noqa: ANN001
    llm_env.chat_replies.append("I think they are the same.")
    result = cli("consolidate", "--json", ok=False)
    assert result.exit_code == 1
    plan = [json.loads(line) for line in result.stdout.splitlines()]
    assert [c["outcome"] for c in plan] == ["merged", "failed"]


# --------------------------------------------------------------------------- vectors

PARAPHRASES = [
    "Release builds are signed with the team's GPG key stored in the ops vault.",
    "Release builds are signed with the team GPG key kept in the ops vault.",
]


def test_vectors_cluster_paraphrases(
    embedded_example: Path,
    tmp_path: Path,
    vectors_on: None,
) -> None:
    vault = tmp_path / "vault"
    copy_indexed(embedded_example, vault)
    cli = Cli(vault)
    pair = [_remember(cli, text) for text in PARAPHRASES]
    other = _remember(cli, UNRELATED)
    cli("embed")
    plan = _plan(cli, "--dry-run")
    assert [(set(c["members"]), c["action"]) for c in plan] == [(set(pair), "merge")]
    assert plan[0]["cohesion"] >= 0.9
    done = _plan(cli)
    merged = done[0]["merged"]
    assert done[0]["outcome"] == "merged"
    assert all(read_note(vault, p).meta["status"] == "superseded" for p in pair)
    assert read_note(vault, other).meta["status"] == "active"
    # The merged note has no vector until `embed`: left out, and its originals are retired.
    assert _plan(cli) == []
    out = cli("search", "release builds signed GPG key ops vault", "--json").stdout
    ranked = [json.loads(line)["path"] for line in out.splitlines()]
    assert ranked[0] == merged


PORT_MOVED = (
    "The {} service listens on port 3100 since the ingress change last week, so update "
    "the firewall rules and the load balancer health checks before the next deploy."
)


def test_notes_tagged_on_different_subjects_never_cluster(cli: Cli) -> None:
    # Alike in all but the service's name: one cluster untagged, none when the tags say
    # they are about two services (the same rule keeps `remember` from linking them).
    services = ("checkout", "billing")
    untagged = [_remember(cli, PORT_MOVED.format(s), "--title", f"{s} port") for s in services]
    clustered = [c["members"] for c in _plan(cli, "--dry-run")]
    assert sorted(untagged) in [sorted(m) for m in clustered]
    for path in untagged:
        cli("forget", path)
    tagged = [
        _remember(cli, PORT_MOVED.format(s) + " Again.", "--tags", f"ops,{s}") for s in services
    ]
    assert not any(set(tagged) <= set(c["members"]) for c in _plan(cli, "--dry-run"))
