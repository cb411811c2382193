"""Typed links: `link`, `unlink`, `links` on a temp copy of example-vault/ (SPEC §4)."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
from conftest import Cli

from vaultmem.frontmatter.scan import parse_meta
from vaultmem.memory.links import LINK_TYPES, PAIRED
from vaultmem.properties import OWNED_KEYS

REDIS = "decisions/Redis for caching.md"
MEMCACHED = "decisions/Memcached for session cache.md"
QUEUES = "research/Background job queues.md"
FLAKY = "research/Flaky tests in CI.md"
LIMITS = "research/Rate limiting options.md"


def meta(vault: Path, path: str) -> dict:
    """The note's parsed frontmatter."""
    return parse_meta((vault / path).read_bytes(), path)[0]


def snapshot(vault: Path, *paths: str) -> dict[str, tuple[bytes, int]]:
    """Each note's bytes and mtime, to prove a command rewrote nothing."""
    return {p: ((vault / p).read_bytes(), (vault / p).stat().st_mtime_ns) for p in paths}


def add_note(vault: Path, path: str, text: str) -> None:
    (vault / path).parent.mkdir(parents=True, exist_ok=True)
    (vault / path).write_text(text, "utf-8")


# --------------------------------------------------------------------------- vocabulary


def test_vocabulary_is_the_owned_link_keys_and_pairs_are_mutual() -> None:
    assert set(LINK_TYPES) <= set(OWNED_KEYS)
    assert PAIRED["supersedes"] == "superseded_by" and PAIRED["superseded_by"] == "supersedes"
    assert PAIRED["related"] == "related" and PAIRED["contradicts"] == "contradicts"
    for link_type, pair in PAIRED.items():
        assert PAIRED[pair] == link_type


def test_help_lists_every_link_type(cli: Cli) -> None:
    # The CLI spells the vocabulary out (it must not import the index for --help).
    out = cli("link", "--help").stdout
    for link_type in LINK_TYPES:
        assert link_type in out


@pytest.mark.parametrize("command", ["link", "unlink"])
def test_an_unknown_type_is_a_usage_error_listing_the_valid_ones(
    cli: Cli, vault: Path, command: str
) -> None:
    before = snapshot(vault, QUEUES, FLAKY)
    result = cli(command, QUEUES, FLAKY, "--type", "follows", ok=False)
    assert result.exit_code == 2
    assert "'follows' is not a link type" in result.stderr
    assert all(t in result.stderr for t in LINK_TYPES)
    assert snapshot(vault, QUEUES, FLAKY) == before


# --------------------------------------------------------------------------- link


def test_related_is_written_on_both_ends_as_quoted_wikilinks(cli: Cli, vault: Path) -> None:
    out = cli("link", "Background job queues", "Flaky tests in CI").stdout
    assert out.startswith(f"linked: {QUEUES} --related--> {FLAKY}")
    # Raw bytes: a block list of double-quoted "[[Note]]" strings, as Obsidian wants.
    assert b'\nrelated:\n  - "[[Flaky tests in CI]]"\n---\n' in (vault / QUEUES).read_bytes()
    flaky = (vault / FLAKY).read_bytes()
    assert b'\nrelated:\n  - "[[Background job queues]]"\n' in flaky


def test_supersedes_is_paired_and_marks_the_older_note_superseded(cli: Cli, vault: Path) -> None:
    out = cli("link", "Rate limiting options", "Background job queues", "-t", "supersedes").stdout
    assert f"  {LIMITS}: supersedes\n" in out and f"  {QUEUES}: status, superseded_by\n" in out
    assert meta(vault, LIMITS)["supersedes"] == ["[[Background job queues]]"]
    assert meta(vault, LIMITS).get("status") is None
    assert meta(vault, QUEUES)["superseded_by"] == ["[[Rate limiting options]]"]
    assert meta(vault, QUEUES)["status"] == "superseded"


def test_superseded_by_marks_the_source_and_writes_supersedes_on_the_target(
    cli: Cli, vault: Path
) -> None:
    cli("link", FLAKY, QUEUES, "--type", "superseded_by")
    assert meta(vault, FLAKY)["superseded_by"] == ["[[Background job queues]]"]
    assert meta(vault, FLAKY)["status"] == "superseded"
    assert meta(vault, QUEUES)["supersedes"] == ["[[Flaky tests in CI]]"]
    assert "status" not in meta(vault, QUEUES)


def test_an_archived_note_keeps_its_status_when_superseded(cli: Cli, vault: Path) -> None:
    add_note(vault, "archive/Old queue.md", "---\nstatus: archived\n---\nCelery.\n")
    cli("link", QUEUES, "archive/Old queue.md", "--type", "supersedes")
    assert meta(vault, "archive/Old queue.md") == {
        "status": "archived",
        "superseded_by": ["[[Background job queues]]"],
    }


@pytest.mark.parametrize("link_type", ["refines", "duplicate_of", "caused_by", "promoted_from"])
def test_one_way_types_touch_only_the_source(cli: Cli, vault: Path, link_type: str) -> None:
    before = snapshot(vault, FLAKY)
    cli("link", QUEUES, FLAKY, "--type", link_type)
    assert meta(vault, QUEUES)[link_type] == ["[[Flaky tests in CI]]"]
    assert snapshot(vault, FLAKY) == before


def test_a_second_link_rewrites_nothing(cli: Cli, vault: Path) -> None:
    cli("link", QUEUES, LIMITS, "--type", "supersedes")
    before = snapshot(vault, QUEUES, LIMITS)
    out = cli("link", QUEUES, LIMITS, "--type", "supersedes").stdout
    assert out == f"already linked: {QUEUES} --supersedes--> {LIMITS}\n"
    assert snapshot(vault, QUEUES, LIMITS) == before


def test_a_link_in_another_spelling_counts_as_already_linked(cli: Cli, vault: Path) -> None:
    # The example vault already holds both ends: Redis supersedes "[[Memcached …]]".
    before = snapshot(vault, REDIS, MEMCACHED)
    out = cli("link", "Redis for caching", MEMCACHED, "-t", "supersedes").stdout
    assert out.startswith("already linked:")
    assert snapshot(vault, REDIS, MEMCACHED) == before
    # A path-and-alias spelling on one end; only the missing pair is written.
    add_note(
        vault,
        "scratch/Cache notes.md",
        '---\nrelated: ["[[decisions/Redis for caching|ADR]]"]\n---\nx\n',
    )
    before = snapshot(vault, "scratch/Cache notes.md")
    out = cli("link", "Cache notes", "Redis for caching").stdout
    assert out.splitlines()[1:] == [f"  {REDIS}: related"]
    assert snapshot(vault, "scratch/Cache notes.md") == before
    assert meta(vault, REDIS)["related"][-1] == "[[Cache notes]]"


def test_an_ambiguous_file_name_is_linked_by_its_path(cli: Cli, vault: Path) -> None:
    cli("link", QUEUES, "projects/payments/README.md", "--type", "refines")
    assert meta(vault, QUEUES)["refines"] == ["[[projects/payments/README]]"]


def test_link_reindexes_both_notes(cli: Cli, vault: Path) -> None:
    from vaultmem.index import manifest as mf

    cli("index")
    cli("link", QUEUES, FLAKY)
    entries = mf.load(vault / ".vaultmem").entries
    assert entries[QUEUES].memory["related"] == ["[[Flaky tests in CI]]"]
    assert entries[FLAKY].memory["related"] == ["[[Background job queues]]"]
    assert cli("index").stdout.startswith("0 added, 0 updated")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("link", "README", QUEUES), "'README' matches 2 notes"),
        (("link", QUEUES, "No such note"), "no note called 'No such note'"),
        (("unlink", "README", QUEUES), "'README' matches 2 notes"),
        (("links", "No such note"), "no note called 'No such note'"),
        (("link", QUEUES, "Background job queues"), "a note cannot link to itself"),
    ],
)
def test_unknown_ambiguous_or_self_links_exit_1(
    cli: Cli, vault: Path, args: tuple[str, ...], message: str
) -> None:
    before = snapshot(vault, QUEUES)
    result = cli(*args, ok=False)
    assert result.exit_code == 1
    assert message in result.stderr
    assert snapshot(vault, QUEUES) == before


def test_an_unquoted_wikilink_value_is_refused_untouched(cli: Cli, vault: Path) -> None:
    # YAML reads `related: [[X]]` as a nested list; rewriting it would lose what was meant.
    add_note(vault, "scratch/Bad.md", "---\nrelated: [[Harbor]]\n---\nx\n")
    before = snapshot(vault, "scratch/Bad.md", QUEUES)
    result = cli("link", "scratch/Bad.md", QUEUES, ok=False)
    assert result.exit_code == 1 and "'related' is not a list of links" in result.stderr
    assert snapshot(vault, "scratch/Bad.md", QUEUES) == before


def test_link_waits_for_the_vault_lock_and_writes_nothing_when_busy(
    cli: Cli, vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from vaultmem.vault import vault_lock

    monkeypatch.setenv("VAULTMEM_LOCK_TIMEOUT", "0")
    before = snapshot(vault, QUEUES, FLAKY)
    with vault_lock(vault / ".vaultmem", timeout=0, what="test"):
        result = cli("link", QUEUES, FLAKY, ok=False)
    assert result.exit_code == 75
    assert snapshot(vault, QUEUES, FLAKY) == before


# --------------------------------------------------------------------------- unlink


def test_unlink_removes_both_ends_and_the_emptied_keys(cli: Cli, vault: Path) -> None:
    original = {p: (vault / p).read_bytes() for p in (QUEUES, FLAKY)}
    cli("link", QUEUES, FLAKY)
    out = cli("unlink", "Flaky tests in CI", "Background job queues").stdout
    assert out.splitlines() == [
        f"unlinked: {FLAKY} --any--> {QUEUES}",
        f"  {FLAKY}: related",
        f"  {QUEUES}: related",
    ]
    # The keys were new, so removing them gives back the notes byte for byte.
    assert {p: (vault / p).read_bytes() for p in (QUEUES, FLAKY)} == original


def test_unlink_keeps_other_links_in_the_list(cli: Cli, vault: Path) -> None:
    cli("unlink", REDIS, LIMITS)
    assert meta(vault, REDIS)["related"] == ["[[Runbook - Redis failover]]"]


def test_unlink_with_a_type_leaves_the_other_types(cli: Cli, vault: Path) -> None:
    cli("link", QUEUES, FLAKY)
    cli("link", QUEUES, FLAKY, "--type", "refines")
    cli("unlink", QUEUES, FLAKY, "--type", "refines")
    assert "refines" not in meta(vault, QUEUES)
    assert meta(vault, QUEUES)["related"] == ["[[Flaky tests in CI]]"]
    assert meta(vault, FLAKY)["related"] == ["[[Background job queues]]"]


def test_unlink_supersedes_removes_the_pair_but_keeps_the_status(cli: Cli, vault: Path) -> None:
    cli("unlink", "Redis for caching", "Memcached for session cache", "-t", "supersedes")
    assert "supersedes" not in meta(vault, REDIS)
    memcached = meta(vault, MEMCACHED)
    assert "superseded_by" not in memcached and memcached["status"] == "superseded"


def test_unlink_of_notes_not_linked_rewrites_nothing(cli: Cli, vault: Path) -> None:
    before = snapshot(vault, QUEUES, FLAKY)
    out = cli("unlink", QUEUES, FLAKY).stdout
    assert out == f"not linked: {QUEUES} --any--> {FLAKY}\n"
    assert snapshot(vault, QUEUES, FLAKY) == before


# --------------------------------------------------------------------------- links


def test_links_json_matches_the_example_vault(cli: Cli) -> None:
    cli("index")  # aliases (Harbor links [[ADR-0007|…]]) are known from the index
    [found] = cli.json_lines("links", "Redis for caching")
    assert found == {
        "path": REDIS,
        "title": "Redis for caching",
        "typed": {
            "supersedes": [{"target": "Memcached for session cache", "path": MEMCACHED}],
            "related": [
                {"target": "Rate limiting options", "path": LIMITS},
                {
                    "target": "Runbook - Redis failover",
                    "path": "reference/Runbook - Redis failover.md",
                },
            ],
        },
        "wikilinks": [
            {"target": "Memcached for session cache", "path": MEMCACHED},
            {"target": "Kubernetes migration", "path": "projects/Kubernetes migration.md"},
            {"target": "Rate limiting options", "path": LIMITS},
            {"target": "Runbook - Redis failover", "path": "reference/Runbook - Redis failover.md"},
        ],
        "backlinks": [
            {"path": "Harbor.md", "via": "wikilink"},
            {"path": MEMCACHED, "via": "superseded_by"},
            {"path": MEMCACHED, "via": "wikilink"},
            {"path": "inbox/Redis memory at 80 percent.md", "via": "wikilink"},
            {"path": "incidents/2026-10-18 Stripe webhook outage.md", "via": "wikilink"},
            {"path": "projects/harbor-api/README.md", "via": "wikilink"},
            {"path": "reference/Runbook - Redis failover.md", "via": "wikilink"},
            {"path": LIMITS, "via": "wikilink"},
        ],
    }


def test_links_human_output_groups_typed_body_and_backlinks(cli: Cli) -> None:
    cli("index")
    out = cli("links", "ADR-0004").stdout
    assert out == (
        f"Memcached for session cache  [{MEMCACHED}]\n"
        "\ntyped links:\n"
        f"  superseded_by: Redis for caching  [{REDIS}]\n"
        "\nwikilinks:\n"
        f"  Redis for caching  [{REDIS}]\n"
        "\nbacklinks:\n"
        "  Harbor.md  (wikilink)\n"
        f"  {REDIS}  (supersedes, wikilink)\n"
    )


def test_links_marks_dangling_links_and_finds_every_spelling_of_a_backlink(
    cli: Cli, vault: Path
) -> None:
    add_note(
        vault,
        "scratch/Spellings.md",
        '---\ncaused_by: ["[[No such incident]]"]\n'
        'refines: "[[decisions/redis FOR caching.md]]"\n---\n'
        "See [[Ghost note]], [[REDIS FOR CACHING#Decision]] and [[redis cache decision|it]].\n",
    )
    add_note(vault, "scratch/Plain.md", "---\nrelated: Redis for caching\n---\nno brackets\n")
    cli("index")  # the alias link resolves once the index knows Redis's aliases
    [found] = cli.json_lines("links", "scratch/Spellings.md")
    assert found["typed"] == {
        "refines": [{"target": "decisions/redis FOR caching.md", "path": REDIS}],
        "caused_by": [{"target": "No such incident", "path": None}],
    }
    assert found["wikilinks"] == [
        {"target": "Ghost note", "path": None},
        {"target": "REDIS FOR CACHING", "path": REDIS},
    ]
    backlinks = cli.json_lines("links", REDIS)[0]["backlinks"]
    assert {"path": "scratch/Spellings.md", "via": "refines"} in backlinks
    assert {"path": "scratch/Spellings.md", "via": "wikilink"} in backlinks
    assert {"path": "scratch/Plain.md", "via": "related"} in backlinks
    out = cli("links", "scratch/Spellings.md").stdout
    assert "  caused_by: No such incident  (dangling)\n" in out
    assert "backlinks: none\n" in out


def test_links_sees_a_new_link_as_a_backlink(cli: Cli) -> None:
    cli("link", FLAKY, QUEUES, "--type", "caused_by")
    assert cli.json_lines("links", QUEUES)[0]["backlinks"] == [
        {"path": "Harbor.md", "via": "wikilink"},
        {"path": "antipatterns/Blocking calls in async handlers.md", "via": "wikilink"},
        {"path": FLAKY, "via": "caused_by"},
    ]


# --------------------------------------------------------------------------- git


OWNED_LINE = re.compile(r"^(?:(?:" + "|".join(OWNED_KEYS) + r'):.*|  - "\[\[[^"\]]+\]\]")$')


def git(vault: Path, *args: str) -> str:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
    run = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=vault,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return run.stdout


def test_git_diff_of_link_touches_only_typed_link_and_status_lines(cli: Cli, vault: Path) -> None:
    git(vault, "init", "-q")
    git(vault, "add", "-A")
    git(vault, "commit", "-qm", "vault")
    cli("link", "Redis for caching", "Background job queues", "--type", "supersedes")
    cli("link", "Redis for caching", "Flaky tests in CI")
    diff = git(vault, "diff", "--unified=0")
    changed = [
        line[1:]
        for line in diff.splitlines()
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]
    assert sorted(git(vault, "diff", "--name-only").splitlines()) == sorted([REDIS, FLAKY, QUEUES])
    assert changed and all(OWNED_LINE.match(line) for line in changed), changed
    assert '+  - "[[Flaky tests in CI]]"' in diff and "+status: superseded" in diff
