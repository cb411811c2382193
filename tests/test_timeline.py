"""`timeline`: events around a note or in a window, in time order, with git history."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.conftest import EXAMPLE_VAULT, Cli

REDIS = "decisions/Redis for caching.md"
MEMCACHED = "decisions/Memcached for session cache.md"


def _git(vault: Path, *args: str, date: str | None = None) -> None:
    env = dict(os.environ)
    if date is not None:
        env |= {"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=vault,
        env=env,
        check=True,
        capture_output=True,
    )


def _commit(vault: Path, message: str, date: str) -> None:
    _git(vault, "add", "-A", ".")
    _git(vault, "commit", "-q", "-m", message, date=date)


def _set_mtime(vault: Path, path: str, when: str) -> None:
    stamp = datetime.fromisoformat(when).timestamp()
    os.utime(vault / path, (stamp, stamp))


@pytest.fixture
def git_vault(vault: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch) -> Path:
    """example-vault in git: everything committed on 10-20, Redis edited on 11-05,
    used on 11-10, its file last modified on 11-20."""
    _git(vault, "init", "-q")
    _commit(vault, "import", "2026-10-20T12:00:00+00:00")
    with open(vault / REDIS, "a", encoding="utf-8") as fh:
        fh.write("\nEviction policy: allkeys-lru.\n")
    _commit(vault, "redis: eviction", "2026-11-05T12:00:00+00:00")
    monkeypatch.setenv("VAULTMEM_NOW", "2026-11-10T08:00:00Z")
    cli("touch", REDIS)
    _set_mtime(vault, REDIS, "2026-11-20T09:00:00+00:00")
    monkeypatch.setenv("VAULTMEM_NOW", "2026-12-01T00:00:00Z")
    cli("index")
    return vault


def _mine(events: list[dict], path: str) -> list[tuple[str, str]]:
    return [(e["kind"], e["when"]) for e in events if e["path"] == path]


def test_note_events_in_time_order_across_kinds(git_vault: Path, cli: Cli) -> None:
    events = cli.json_lines("timeline", REDIS, "--around", "0")
    assert _mine(events, REDIS) == [
        ("created", "2026-10-09T10:30:00Z"),
        ("committed", "2026-10-20T12:00:00Z"),
        ("committed", "2026-11-05T12:00:00Z"),
        ("used", "2026-11-10T08:00:00Z"),  # `touch` sets last_used
        ("used", "2026-11-10T08:00:00Z"),  # and last_review
        ("changed", "2026-11-20T09:00:00Z"),
    ]
    whens = [e["when"] for e in events]
    assert whens == sorted(whens)
    newest_first = cli.json_lines("timeline", REDIS, "--around", "0", "--reverse", "-n", "3")
    # -n keeps the events around the note's creation (issue 32), newest first here.
    born = next(i for i, e in enumerate(events) if e["path"] == REDIS and e["kind"] == "created")
    start = max(born - 1, 0)
    assert [e["when"] for e in newest_first] == whens[start : start + 3][::-1]


def test_linked_notes_and_their_events_appear(vault: Path, cli: Cli) -> None:
    cli("index")
    events = cli.json_lines("timeline", "Redis for caching", "--around", "0")
    linked = {e["path"]: e for e in events if e["kind"] == "linked"}
    assert "supersedes →" in linked[MEMCACHED]["detail"]
    assert "← wikilink" in linked["Harbor.md"]["detail"]
    # Dated when the later of the two notes appeared: Redis, created after Memcached.
    assert linked[MEMCACHED]["when"] == "2026-10-09T10:30:00Z"
    memcached_created = [e for e in events if e["path"] == MEMCACHED and e["kind"] == "created"]
    assert memcached_created[0]["when"] == "2026-03-11T00:00:00Z"
    assert "linked: supersedes →" in memcached_created[0]["detail"]
    unrelated = "preferences/Commit messages.md"
    assert all(e["path"] != unrelated for e in events)


def test_nearby_notes_within_around(vault: Path, cli: Cli) -> None:
    cli("index")
    _set_mtime(vault, REDIS, "2026-10-09T10:30:00+00:00")
    cli("index")
    near = {e["path"] for e in cli.json_lines("timeline", REDIS, "--around", "2d")}
    # Created 2026-10-08 13:00 and 2026-10-10: within two days of Redis (10-09 10:30).
    assert {"preferences/Testing preferences.md", "antipatterns/Catching bare Exception.md"} <= near
    assert "preferences/Commit messages.md" not in near  # created 2026-10-07, too early


def test_window_filters_by_date_and_relative_forms(
    vault: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    cli("index")
    events = cli.json_lines("timeline", "--since", "2026-10-01", "--until", "2026-10-05")
    created = {e["path"] for e in events if e["kind"] == "created"}
    assert "projects/Kubernetes migration.md" in created  # 10-05 09:30: the day is included
    assert REDIS not in created  # 10-09
    assert all("2026-10-01" <= e["when"] < "2026-10-06" for e in events)
    monkeypatch.setenv("VAULTMEM_NOW", "2026-10-10T00:00:00Z")
    recent = cli.json_lines("timeline", "--since", "2d")
    assert {e["path"] for e in recent} == {
        REDIS,
        "preferences/Testing preferences.md",
        "antipatterns/Catching bare Exception.md",
    }


def test_window_reads_commits_in_one_git_log(git_vault: Path, cli: Cli) -> None:
    events = cli.json_lines("timeline", "--since", "2026-11-01", "--until", "2026-11-06")
    commits = [(e["path"], e["when"]) for e in events if e["kind"] == "committed"]
    assert commits == [(REDIS, "2026-11-05T12:00:00Z")]
    assert "redis: eviction" in next(e for e in events if e["kind"] == "committed")["detail"]


def test_vault_without_git(vault: Path, cli: Cli) -> None:
    cli("index")
    around = cli.json_lines("timeline", REDIS)
    window = cli.json_lines("timeline", "--since", "2026-01-01")
    assert around and window
    assert all(e["kind"] != "committed" for e in around + window)


def test_renamed_note_keeps_its_history(git_vault: Path, cli: Cli) -> None:
    new = "decisions/Redis as the cache.md"
    _git(git_vault, "mv", REDIS, new)
    _commit(git_vault, "rename", "2026-11-25T12:00:00+00:00")
    cli("index")
    events = cli.json_lines("timeline", new, "--around", "0")
    commits = [e for e in events if e["path"] == new and e["kind"] == "committed"]
    assert [e["when"][:10] for e in commits] == ["2026-10-20", "2026-11-05", "2026-11-25"]
    assert f"(as {REDIS})" in commits[0]["detail"]


def test_json_shape(git_vault: Path, cli: Cli) -> None:
    events = cli.json_lines("timeline", REDIS)
    kinds = {e["kind"] for e in events}
    assert kinds == {"created", "changed", "used", "linked", "committed"}
    for event in events:
        assert set(event) == {"when", "kind", "path", "title", "detail"}
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", event["when"])
        when = datetime.strptime(event["when"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
        assert when.year == 2026
    plain = cli("timeline", REDIS).stdout.splitlines()
    assert plain[0] == (
        f"2026-03-11 00:00Z  created    Memcached for session cache  [{MEMCACHED}]"
        "  decision (linked: supersedes →, wikilink →, ← superseded_by, ← wikilink)"
    )
    # -n 1: the note's own creation, the centre of what -n keeps.
    (one,) = cli("timeline", REDIS, "-n", "1").stdout.splitlines()
    assert one.startswith("2026-10-09 10:30Z  created    Redis for caching  [")


@pytest.mark.parametrize(
    "args",
    [
        ["--since", "bogus"],
        ["--until", "2026-13-45"],
        ["--since", "never"],
        ["--since", "2026"],
        [],
        [REDIS, "--around", "soon"],
    ],
)
def test_bad_dates_are_usage_errors(cli: Cli, args: list[str]) -> None:
    result = cli("timeline", *args, ok=False)
    assert result.exit_code == 2, result.output


def test_a_window_of_a_vault_never_indexed_says_so(tmp_path: Path) -> None:
    vault = tmp_path / "v"
    shutil.copytree(EXAMPLE_VAULT, vault, ignore=shutil.ignore_patterns(".vaultmem"))
    result = Cli(vault)("timeline", "--since", "30d", ok=False)
    assert result.exit_code == 1
    assert result.stderr.strip() == (
        "vaultmem: error: the vault is not indexed yet: run `vaultmem index`"
    )


def test_window_keeps_notes_whose_names_git_quotes(git_vault: Path, cli: Cli) -> None:
    """git quotes a name holding `"`, a tab or a newline even with core.quotepath off;
    such notes used to drop out of `timeline --since`."""
    names = ['notes/say "cheese".md', "notes/tab\there.md", "notes/new\nline.md"]
    names.append("notes/back\\slash.md")
    (git_vault / "notes").mkdir(exist_ok=True)
    for name in names:
        (git_vault / name).write_text("An odd name.\n", encoding="utf-8")
    _commit(git_vault, "odd names", "2026-11-25T12:00:00+00:00")
    cli("index")
    events = cli.json_lines("timeline", "--since", "2026-11-24", "--until", "2026-11-26")
    committed = sorted(e["path"] for e in events if e["kind"] == "committed")
    # (The fixture's `touch` of Redis is in that commit too.)
    assert committed == sorted([*names, REDIS])
    # A note's own history reads the same way.
    own = cli.json_lines("timeline", names[1], "--around", "0")
    assert [e["kind"] for e in own if e["kind"] == "committed"] == ["committed"]
