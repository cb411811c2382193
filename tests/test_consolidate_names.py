"""A new note never takes another note's file name (issue 19, item 6).

`remember`, `extract`, `handoff` and `consolidate` all name new notes through
:func:`vaultmem.memory.remember.unique_path`. Obsidian resolves ``[[name]]`` by file name
across folders, so a name unique in its folder only could make a merged note supersede
itself; `doctor` reports a typed link that resolves to its own note.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path, PurePosixPath

import pytest
from conftest import Cli

from vaultmem.note import read_note
from vaultmem.vault import walk_notes

STAGING = (
    "The staging database is Postgres 15 running on host db-stage-1 behind PgBouncer "
    "in transaction mode with nightly backups, a read replica on db-stage-2 for the "
    "reporting jobs, and a weekly restore drill that the platform team runs every "
    "Thursday afternoon."
)
QUEUE = (
    "The job queue is RabbitMQ 3.12 on host mq-1 with quorum queues for the billing "
    "exports, a dead letter exchange that the on-call engineer drains every morning, and "
    "consumer prefetch set to twenty for the thumbnail workers in the media cluster."
)


def _remember(cli: Cli, monkeypatch: pytest.MonkeyPatch, day: int, *args: str) -> str:
    monkeypatch.setenv("VAULTMEM_NOW", f"2026-11-{day:02d}T10:00:00Z")
    return cli("remember", *args).output.strip().splitlines()[-1]


def _unique(vault: Path, *paths: str) -> bool:
    """Whether no other note of the vault has the file name of any of ``paths``."""
    from vaultmem.config import build

    stems = Counter(PurePosixPath(f.path).stem.lower() for f in walk_notes(build(vault, {})))
    return all(stems[PurePosixPath(p).stem.lower()] == 1 for p in paths)


def _doctor_links(cli: Cli) -> list[dict]:
    report = json.loads(cli("doctor", "--json", ok=False).stdout)
    return [f for f in report["findings"] if f["check"] == "links"]


def _merged(cli: Cli) -> list[dict]:
    out = cli("consolidate", "--json").stdout
    return [c for c in map(json.loads, out.splitlines()) if c["outcome"] == "merged"]


def test_a_merged_note_never_supersedes_itself(
    vault: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The case: a member promoted to memory/<slug>.md and one left in the
    # inbox as <slug>-2.md; the merged note goes to memory/, where <slug>-2 was free.
    first = _remember(cli, monkeypatch, 1, STAGING, "--title", "Staging database")
    second = _remember(cli, monkeypatch, 2, STAGING + " Kept in S3.", "--title", "Staging database")
    assert (first, second) == ("inbox/staging-database.md", "inbox/staging-database-2.md")
    (vault / "memory").mkdir(exist_ok=True)
    (vault / first).rename(vault / "memory" / "staging-database.md")
    members = ["memory/staging-database.md", second]
    monkeypatch.setenv("VAULTMEM_NOW", "2026-11-20T10:00:00Z")
    cli("index")

    (cluster,) = _merged(cli)
    assert cluster["members"] == members
    merged = cluster["merged"]
    assert merged == "memory/staging-database-3.md"  # -2 is the inbox member's name
    assert _unique(vault, merged, *members)
    note = read_note(vault, merged)
    assert note.meta["supersedes"] == ["[[staging-database]]", "[[staging-database-2]]"]
    shown = json.loads(cli("links", merged, "--json").stdout)
    for key in ("supersedes", "promoted_from"):
        assert [r["path"] for r in shown["typed"][key]] == members
    for path in members:
        assert read_note(vault, path).meta["superseded_by"] == ["[[staging-database-3]]"]
    (ok,) = _doctor_links(cli)
    assert ok["severity"] == "ok"


def test_merges_of_one_run_take_distinct_names(
    vault: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two clusters whose heads share a title, in two folders: the second merge must see
    # the note the first one wrote a moment ago (it is in no index yet).
    _remember(cli, monkeypatch, 1, STAGING, "--title", "Cache policy")
    _remember(cli, monkeypatch, 2, STAGING + " Kept in S3.")
    _remember(cli, monkeypatch, 3, QUEUE, "--title", "Cache policy", "--folder", "memory")
    _remember(cli, monkeypatch, 4, QUEUE + " Kept in S3.", "--folder", "memory")
    monkeypatch.setenv("VAULTMEM_NOW", "2026-11-20T10:00:00Z")
    merged = [c["merged"] for c in _merged(cli)]
    assert len(merged) == 2
    assert {PurePosixPath(p).parent.as_posix() for p in merged} == {"inbox", "memory"}
    assert _unique(vault, *merged)


def test_remember_avoids_a_name_taken_in_another_folder(
    vault: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    cli("index")  # aliases are known from the index
    # example-vault has Harbor.md at the root: [[Harbor]] must keep meaning it.
    path = _remember(
        cli, monkeypatch, 1, "Harbor's staging runs on db-stage-1.", "--title", "harbor"
    )
    assert path == "inbox/harbor-2.md"
    # An alias is a name too: [[harbor-api]] means projects/harbor-api/README.md.
    other = _remember(cli, monkeypatch, 2, "The API listens on 8080.", "--title", "Harbor API")
    assert other == "inbox/harbor-api-2.md"
    from vaultmem.config import build
    from vaultmem.lookup import note_names
    from vaultmem.vault import LinkResolver

    links = LinkResolver(note_names(build(vault, {})))
    assert links.resolve_link("Harbor", "daily/x.md") == "Harbor.md"
    assert links.resolve_link("harbor-api", "inbox/x.md") == "projects/harbor-api/README.md"


def test_handoff_names_are_unique_across_folders(vault: Path) -> None:
    from vaultmem.config import build
    from vaultmem.memory.remember import unique_path

    config = build(vault, {})
    (vault / "projects" / "2026-11-20 vaultmem.md").write_text("# elsewhere\n", "utf-8")
    got = unique_path(config, "handoffs", "2026-11-20 VaultMem", sep=" ")
    assert got == "handoffs/2026-11-20 VaultMem 2.md"


# --------------------------------------------------------------------------- doctor


def test_doctor_flags_a_typed_link_to_the_note_itself(vault: Path, cli: Cli) -> None:
    (vault / "inbox" / "Loop.md").write_text('---\nrelated: ["[[Loop]]"]\n---\nMe.\n', "utf-8")
    # What the old naming wrote: a merged memory/x-2.md whose supersedes: [[x-2]] was meant
    # for inbox/x-2.md, and resolves to the merged note (same folder wins).
    (vault / "inbox" / "x-2.md").write_text("---\nstatus: superseded\n---\nOld.\n", "utf-8")
    (vault / "memory").mkdir(exist_ok=True)
    (vault / "memory" / "x-2.md").write_text(
        '---\nsupersedes: ["[[x-2]]"]\npromoted_from: ["[[x-2]]"]\n---\nNew.\n', "utf-8"
    )
    cli("index")
    found = sorted((f["message"], f["fix"]) for f in _doctor_links(cli) if f["severity"] == "warn")
    assert found == [
        (
            "inbox/Loop.md: related: [[Loop]] resolves to the note itself",
            "point the link at the note it means (with its folder), or remove it",
        ),
        (
            "memory/x-2.md: promoted_from: [[x-2]] resolves to the note itself",
            'write it with its folder: promoted_from: ["[[inbox/x-2]]"]',
        ),
        (
            "memory/x-2.md: supersedes: [[x-2]] resolves to the note itself",
            'write it with its folder: supersedes: ["[[inbox/x-2]]"]',
        ),
    ]
