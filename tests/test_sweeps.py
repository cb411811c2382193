"""`promote`, `gc` and `review`: real temp vaults, real files, real git."""

from __future__ import annotations

import hashlib
import math
import os
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from conftest import Cli

from vaultmem.config import build
from vaultmem.frontmatter.scan import parse_meta, split
from vaultmem.index import manifest as mf
from vaultmem.indexer import index_vault
from vaultmem.memory import promotion, sweeps
from vaultmem.scores import decay_value, review_priority

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
DAY = timedelta(days=1)


def iso(when: datetime) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def write(vault: Path, path: str, body: str = "", **meta: object) -> Path:
    """A note with the given frontmatter (datetimes as ISO, lists flow-style)."""
    lines = []
    for key, value in meta.items():
        if isinstance(value, datetime):
            value = iso(value)
        elif isinstance(value, bool):
            value = "true" if value else "false"
        elif isinstance(value, list):
            value = "[" + ", ".join(f'"{v}"' for v in value) + "]"
        lines.append(f"{key}: {value}\n")
    head = "---\n" + "".join(lines) + "---\n" if lines else ""
    title = Path(path).stem
    full = vault / path
    full.parent.mkdir(parents=True, exist_ok=True)
    full.write_text(head + (body or f"# {title}\n\nAbout {title}.\n"), "utf-8")
    return full


def age_for(score: float, half_life_days: float = 3.0) -> timedelta:
    """How old an unused note with this half-life is when its score is ``score``."""
    return timedelta(days=-half_life_days * math.log2(score))


def snapshot(vault: Path) -> dict[str, str]:
    """Every file and folder of the vault outside the cache, with its bytes' hash."""
    out = {}
    for root, dirs, files in os.walk(vault):
        dirs[:] = [d for d in dirs if d != ".vaultmem"]
        rel = Path(root).relative_to(vault)
        for d in dirs:
            out[str(rel / d) + "/"] = "dir"
        for f in files:
            out[str(rel / f)] = hashlib.sha256((Path(root) / f).read_bytes()).hexdigest()
    return out


def meta_of(path: Path) -> dict:
    return parse_meta(path.read_bytes(), str(path))[0]


def body_of(path: Path) -> bytes:
    return split(path.read_bytes()).body


@pytest.fixture
def empty(tmp_path: Path) -> Path:
    vault = tmp_path / "v"
    vault.mkdir()
    return vault


@pytest.fixture
def pinned_now(monkeypatch: pytest.MonkeyPatch) -> datetime:
    monkeypatch.setenv("VAULTMEM_NOW", iso(NOW))
    return NOW


# --------------------------------------------------------------------------- promote

LINKER = """---
title: Linker
related: ["[[inbox/Queue depth alarm]]"]
source: "[[inbox/Queue depth alarm|alarm]]"
---
# Linker

Path link [[inbox/Queue depth alarm]], aliased [[inbox/Queue depth alarm|the alarm]],
with extension [[inbox/Queue depth alarm.md#Numbers]], embed ![[inbox/Queue depth alarm]].
By name [[Queue depth alarm]] stays. Markdown [alarm](inbox/Queue%20depth%20alarm.md) and
[angle](<inbox/Queue depth alarm.md> "t"). Unrelated [[inbox/Other]] and [x](https://a.b/inbox).
In code `[[inbox/Queue depth alarm]]` stays.

```
[[inbox/Queue depth alarm]]
```
"""

LINKER_AFTER = """---
title: Linker
related: ["[[memory/Queue depth alarm]]"]
source: "[[memory/Queue depth alarm|alarm]]"
---
# Linker

Path link [[memory/Queue depth alarm]], aliased [[memory/Queue depth alarm|the alarm]],
with extension [[memory/Queue depth alarm.md#Numbers]], embed ![[memory/Queue depth alarm]].
By name [[Queue depth alarm]] stays. Markdown [alarm](memory/Queue%20depth%20alarm.md) and
[angle](<memory/Queue depth alarm.md> "t"). Unrelated [[inbox/Other]] and [x](https://a.b/inbox).
In code `[[inbox/Queue depth alarm]]` stays.

```
[[inbox/Queue depth alarm]]
```
"""


def due_note(vault: Path, path: str, **extra: object) -> Path:
    """An inbox observation used twice, last an hour ago: promoted on score."""
    meta: dict[str, object] = {
        "type": "observation",
        "created": NOW - 2 * DAY,
        "half_life": "3d",
        "tags": "[ops]",
        "use_count": 2,
        "last_used": NOW - timedelta(hours=1),
    }
    meta.update(extra)
    return write(
        vault, path, "# Queue depth alarm\n\nThe consumer lag alarm fires at 5k.\n", **meta
    )


def test_promote_moves_the_note_rewrites_path_links_and_search_follows(
    empty: Path, pinned_now: datetime
) -> None:
    cli = Cli(empty)
    note = due_note(empty, "inbox/Queue depth alarm.md")
    body = body_of(note)
    write(empty, "inbox/Other.md", type="observation", created=NOW, half_life="3d")
    (empty / "projects").mkdir()
    (empty / "projects/Linker.md").write_text(LINKER, "utf-8")
    cli("index")
    assert [h["path"] for h in cli.json_lines("search", "consumer lag")] == [
        "inbox/Queue depth alarm.md"
    ]

    lines = cli.json_lines("promote")

    moved = empty / "memory/Queue depth alarm.md"
    assert lines[0]["action"] == "promote"
    assert (lines[0]["path"], lines[0]["target"]) == (
        "inbox/Queue depth alarm.md",
        str(moved.relative_to(empty)),
    )
    assert lines[0]["reason"].startswith("score ")
    assert lines[1:] == [{"action": "relink", "path": "projects/Linker.md", "links": 8}]
    assert not note.exists() and moved.exists()
    meta = meta_of(moved)
    assert meta["status"] == "promoted" and meta["half_life"] == "14d"
    assert meta["use_count"] == 2 and meta["tags"] == ["ops"]
    assert body_of(moved) == body
    assert (empty / "projects/Linker.md").read_text("utf-8") == LINKER_AFTER
    # The index followed at once: found at its new path, not at the old one.
    hits = cli.json_lines("search", "consumer lag")
    assert [h["path"] for h in hits] == ["memory/Queue depth alarm.md"]
    assert hits[0]["status"] == "promoted"
    # A second run has nothing left to do.
    assert cli.json_lines("promote") == []


def test_promote_rule_needs_a_use_and_a_day_unless_used_five_times(empty: Path) -> None:
    base: dict[str, Any] = {"type": "note", "half_life": "3d"}
    write(empty, "inbox/fresh.md", created=NOW - timedelta(minutes=1), **base)
    write(
        empty,
        "inbox/fresh-touched.md",
        created=NOW - timedelta(minutes=5),
        use_count=1,
        last_used=NOW - timedelta(minutes=1),
        **base,
    )
    # Unused for a day: scores 0.79 >= 0.65, yet only youth speaks for it.
    write(empty, "inbox/day-old-unused.md", created=NOW - DAY, **base)
    write(
        empty,
        "inbox/day-old-used.md",
        created=NOW - DAY - timedelta(hours=1),
        use_count=1,
        last_used=NOW - timedelta(hours=2),
        **base,
    )
    write(
        empty,
        "inbox/five-uses-today.md",
        created=NOW - timedelta(hours=3),
        use_count=5,
        last_used=NOW - timedelta(hours=1),
        **base,
    )
    write(
        empty,
        "inbox/used-long-ago.md",
        created=NOW - 10 * DAY,
        use_count=1,
        last_used=NOW - 5 * DAY,
        **base,
    )
    write(
        empty,
        "inbox/already-promoted.md",
        created=NOW - 2 * DAY,
        status="promoted",
        use_count=3,
        last_used=NOW,
        **base,
    )
    write(
        empty, "notes/outside-inbox.md", created=NOW - 2 * DAY, use_count=3, last_used=NOW, **base
    )
    config = build(empty, {})

    report = promotion.promote(config, NOW, dry_run=True)

    by_path = {p.path: p for p in report.promoted}
    assert sorted(by_path) == ["inbox/day-old-used.md", "inbox/five-uses-today.md"]
    assert by_path["inbox/day-old-used.md"].reason.startswith("score 0.9")
    assert by_path["inbox/five-uses-today.md"].reason == (
        "use_count 5 >= 5 within 14 days of creation"
    )
    assert by_path["inbox/five-uses-today.md"].target == "memory/five-uses-today.md"
    # A lower minimum age is the caller's choice.
    quick = promotion.promote(config, NOW, dry_run=True, min_age=timedelta(0))
    assert "inbox/fresh-touched.md" in {p.path for p in quick.promoted}
    assert "inbox/fresh.md" not in {p.path for p in quick.promoted}


def test_promote_renames_when_the_name_is_taken_and_rewrites_name_links(
    empty: Path, pinned_now: datetime
) -> None:
    cli = Cli(empty)
    due_note(empty, "inbox/Queue depth alarm.md")
    write(empty, "memory/Queue depth alarm.md", type="decision")
    write(
        empty, "Index.md", "See [[Queue depth alarm|the alarm]] and [[memory/Queue depth alarm]].\n"
    )

    lines = cli.json_lines("promote")

    assert lines[0]["target"] == "memory/Queue depth alarm-2.md"
    assert (empty / "memory/Queue depth alarm-2.md").exists()
    assert (empty / "memory/Queue depth alarm.md").exists()
    # The name link meant the inbox note (shortest path): it now names the new file;
    # the path link to the other note is left alone.
    assert (empty / "Index.md").read_text("utf-8") == (
        "See [[Queue depth alarm-2|the alarm]] and [[memory/Queue depth alarm]].\n"
    )


def test_promote_keeps_relative_markdown_links_working(empty: Path) -> None:
    due_note(empty, "inbox/sub/Alarm.md")
    alarm = empty / "inbox/sub/Alarm.md"
    alarm.write_text(alarm.read_text("utf-8") + "Runbook: [run](./Runbook.md), [b](../Base.md)\n")
    write(empty, "inbox/sub/Runbook.md", type="note", created=NOW, half_life="3d")
    write(empty, "inbox/Base.md", type="note", created=NOW, half_life="3d")
    write(
        empty,
        "inbox/sub/Peer.md",
        "[a](./Alarm.md), [b](Alarm.md), [[sub/Alarm]]\n",
        type="note",
        created=NOW,
        half_life="3d",
    )

    report = promotion.promote(build(empty, {}), NOW)

    assert [(p.path, p.target) for p in report.promoted] == [
        ("inbox/sub/Alarm.md", "memory/sub/Alarm.md")
    ]
    text = (empty / "memory/sub/Alarm.md").read_text("utf-8")
    assert text.endswith("Runbook: [run](../../inbox/sub/Runbook.md), [b](../../inbox/Base.md)\n")
    assert (
        (empty / "inbox/sub/Peer.md")
        .read_text("utf-8")
        .endswith(
            # Only the explicitly relative link broke; the others still find it by name.
            "[a](../../memory/sub/Alarm.md), [b](Alarm.md), [[sub/Alarm]]\n"
        )
    )
    assert {r.path for r in report.relinked} == {"memory/sub/Alarm.md", "inbox/sub/Peer.md"}


def test_promote_dry_run_changes_no_byte(empty: Path, pinned_now: datetime) -> None:
    cli = Cli(empty)
    due_note(empty, "inbox/Queue depth alarm.md")
    (empty / "projects").mkdir()
    (empty / "projects/Linker.md").write_text(LINKER, "utf-8")
    before = snapshot(empty)

    lines = cli.json_lines("promote", "--dry-run")

    assert [line["action"] for line in lines] == ["promote", "relink"]
    assert lines[0]["dry_run"] is True and lines[1]["links"] == 8
    assert snapshot(empty) == before
    text = cli("promote", "--dry-run").stdout
    assert "inbox/Queue depth alarm.md → memory/Queue depth alarm.md  (score" in text


# --------------------------------------------------------------------------- gc

DECAYED: dict[str, Any] = {"created": NOW - 20 * DAY, "half_life": "3d"}  # s = 2^(-20/3) = 0.0098


def gc_vault(vault: Path) -> None:
    write(vault, "inbox/stale.md", type="observation", **DECAYED)
    write(vault, "memory/stale-promoted.md", status="promoted", **DECAYED)
    write(vault, "notes/old-superseded.md", status="superseded", **DECAYED)
    write(vault, "notes/pinned.md", pinned=True, **DECAYED)
    write(vault, "decisions/durable.md", type="decision", **DECAYED)
    write(vault, "notes/forgotten.md", status="forgotten", **DECAYED)
    write(vault, "notes/archived-here.md", status="archived", **DECAYED)
    write(vault, "notes/draft.md", status="draft", **DECAYED)
    write(vault, "archive/notes/old.md", **DECAYED)
    write(vault, "notes/fresh.md", created=NOW - 2 * DAY, half_life="3d")
    # Borderline: s = 0.0501 stays, s = 0.0499 goes.
    write(vault, "notes/just-above.md", created=NOW - age_for(0.0501), half_life="3d")
    write(vault, "notes/just-below.md", created=NOW - age_for(0.0499), half_life="3d")


COLLECTED = [
    "inbox/stale.md",
    "memory/stale-promoted.md",
    "notes/just-below.md",
    "notes/old-superseded.md",
]


def test_gc_archives_exactly_the_decayed_notes(empty: Path, pinned_now: datetime) -> None:
    cli = Cli(empty)
    gc_vault(empty)
    cli("index")
    body = body_of(empty / "inbox/stale.md")

    lines = cli.json_lines("gc")

    assert [line["path"] for line in lines] == COLLECTED
    assert {line["action"] for line in lines} == {"archive"}
    assert all(line["target"] == "archive/" + line["path"] for line in lines)
    for path in COLLECTED:
        assert not (empty / path).exists()
        assert meta_of(empty / "archive" / path)["status"] == "archived"
    assert body_of(empty / "archive/inbox/stale.md") == body
    for kept in (
        "notes/pinned.md",
        "decisions/durable.md",
        "notes/forgotten.md",
        "notes/archived-here.md",
        "notes/draft.md",
        "notes/just-above.md",
    ):
        assert (empty / kept).exists(), kept
    # The index followed: the old paths are gone, the archived ones carry their status.
    entries = mf.load(empty / ".vaultmem").entries
    assert not set(COLLECTED) & set(entries)
    assert entries["archive/inbox/stale.md"].status == "archived"
    assert cli.json_lines("gc") == []


def test_gc_folder_keeps_the_sweep_to_those_folders(empty: Path, pinned_now: datetime) -> None:
    cli = Cli(empty)
    gc_vault(empty)
    only = [line["path"] for line in cli.json_lines("gc", "--dry-run", "--folder", "inbox")]
    assert only == ["inbox/stale.md"]
    both = cli.json_lines("gc", "--folder", "inbox", "--folder", "memory/")
    assert [line["path"] for line in both] == ["inbox/stale.md", "memory/stale-promoted.md"]
    assert (empty / "notes/just-below.md").exists()  # outside the folders: left alone


def test_gc_dry_run_changes_no_byte(empty: Path, pinned_now: datetime) -> None:
    cli = Cli(empty)
    gc_vault(empty)
    before = snapshot(empty)

    plan = cli.json_lines("gc", "--dry-run")
    text = cli("gc", "--dry-run", "--delete").stdout

    assert [line["path"] for line in plan] == COLLECTED and plan[0]["dry_run"] is True
    assert "archive 0.0098  inbox/stale.md → archive/inbox/stale.md" in text
    assert "(not deleted: the vault is not a git repository)" in text
    assert snapshot(empty) == before


def test_gc_archive_keeps_a_taken_path_apart(empty: Path) -> None:
    write(empty, "notes/a.md", **DECAYED)
    write(empty, "archive/notes/a.md", status="archived")
    report = sweeps.gc(build(empty, {}), NOW)
    assert [(i.path, i.target) for i in report.items] == [("notes/a.md", "archive/notes/a-2.md")]
    assert (empty / "archive/notes/a.md").exists() and (empty / "archive/notes/a-2.md").exists()


def test_gc_delete_refuses_outside_git(empty: Path, pinned_now: datetime) -> None:
    cli = Cli(empty)
    write(empty, "notes/a.md", **DECAYED)
    [line] = cli.json_lines("gc", "--delete")
    assert line["action"] == "archive"
    assert line["why"] == "not deleted: the vault is not a git repository"
    assert (empty / "archive/notes/a.md").exists()


def git(vault: Path, *args: str) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.org",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.org",
        "GIT_CONFIG_GLOBAL": os.devnull,
    }
    subprocess.run(["git", "-C", str(vault), *args], check=True, env=env, capture_output=True)


def test_gc_delete_needs_a_clean_commit(empty: Path, pinned_now: datetime) -> None:
    cli = Cli(empty)
    for name in ("clean", "edited", "staged", "odd [x]*"):
        write(empty, f"notes/{name}.md", **DECAYED)
    (empty / ".gitignore").write_text(".vaultmem/\n")
    git(empty, "init", "-q")
    git(empty, "add", "-A")
    git(empty, "commit", "-q", "-m", "notes")
    write(empty, "notes/untracked.md", **DECAYED)
    with (empty / "notes/edited.md").open("a") as fh:
        fh.write("more words\n")
    with (empty / "notes/staged.md").open("a") as fh:
        fh.write("staged words\n")
    git(empty, "add", "notes/staged.md")

    lines = {line["path"]: line for line in cli.json_lines("gc", "--delete")}

    assert {p: line["action"] for p, line in lines.items()} == {
        "notes/clean.md": "delete",
        "notes/odd [x]*.md": "delete",
        "notes/edited.md": "archive",
        "notes/staged.md": "archive",
        "notes/untracked.md": "archive",
    }
    assert lines["notes/edited.md"]["why"] == "not deleted: has changes not committed to git"
    assert lines["notes/untracked.md"]["why"] == "not deleted: not committed to git"
    assert not (empty / "notes/clean.md").exists()
    assert not (empty / "archive/notes/clean.md").exists()
    assert (empty / "archive/notes/edited.md").read_text("utf-8").endswith("more words\n")


def test_gc_force_deletes_what_git_cannot_give_back(empty: Path, pinned_now: datetime) -> None:
    cli = Cli(empty)
    write(empty, "notes/a.md", **DECAYED)
    assert cli("gc", "--force", ok=False).exit_code == 2
    [line] = cli.json_lines("gc", "--delete", "--force")
    assert line["action"] == "delete" and not (empty / "notes/a.md").exists()
    assert not (empty / "archive").exists()


# --------------------------------------------------------------------------- review


def test_review_lists_the_danger_zone_by_priority(empty: Path, pinned_now: datetime) -> None:
    cli = Cli(empty)
    scores = {
        "peak": 0.25,
        "low": 0.20,
        "high": 0.30,
        "edge": 0.16,
        "twin-a": 0.22,
        "twin-b": 0.22,
        "outside-low": 0.14,
        "outside-high": 0.36,
    }
    for name, score in scores.items():
        write(empty, f"notes/{name}.md", created=NOW - age_for(score), half_life="3d")
    write(
        empty,
        "notes/snoozed.md",
        created=NOW - age_for(0.25),
        half_life="3d",
        snoozed_until=NOW + DAY,
    )
    write(
        empty,
        "notes/snooze-over.md",
        created=NOW - age_for(0.26),
        half_life="3d",
        snoozed_until=NOW - DAY,
    )
    write(
        empty, "notes/archived.md", created=NOW - age_for(0.25), half_life="3d", status="archived"
    )
    write(
        empty,
        "notes/superseded.md",
        created=NOW - age_for(0.25),
        half_life="3d",
        status="superseded",
    )

    lines = cli.json_lines("review")

    expected = {
        **{k: v for k, v in scores.items() if not k.startswith("outside")},
        "snooze-over": 0.26,
    }

    def key(name: str) -> tuple[float, float, str]:
        created = (NOW - age_for(expected[name])).replace(microsecond=0)  # as written
        s = decay_value(NOW - created, timedelta(days=3), 0, 1.0)
        return (-review_priority(s), s, f"notes/{name}.md")

    order = [f"notes/{name}.md" for name in sorted(expected, key=key)]
    assert [line["path"] for line in lines] == order
    assert order[:2] == ["notes/peak.md", "notes/snooze-over.md"]
    assert order.index("notes/twin-a.md") + 1 == order.index("notes/twin-b.md")
    assert lines[0]["priority"] == pytest.approx(1.0) and lines[0]["score"] == 0.25
    assert lines[0]["title"] == "peak"
    assert [line["path"] for line in cli.json_lines("review", "-n", "2")] == order[:2]
    assert cli("review").stdout.splitlines()[1].split() == [
        "1.00",
        "0.250",
        "notes/peak.md",
        "peak",
    ]


def test_review_queue_from_a_loaded_manifest(empty: Path) -> None:
    write(empty, "a.md", created=NOW - age_for(0.25), half_life="3d")
    write(empty, "b.md", created=NOW - age_for(0.9), half_life="3d")
    config = build(empty, {})
    index_vault(config)
    entries = mf.load(config.cache_dir).entries

    queue = sweeps.review_queue_from(entries, NOW)

    assert [(i.path, i.title) for i in queue] == [("a.md", "a")]
    assert (queue[0].score, queue[0].priority) == (pytest.approx(0.25), pytest.approx(1.0))
    assert sweeps.review_queue(config, NOW, limit=5) == queue
    assert sweeps.review_queue_from(entries, NOW + 30 * DAY) == []


def test_promote_that_cannot_move_leaves_the_note_as_it_was(
    empty: Path, pinned_now: datetime
) -> None:
    cli = Cli(empty)
    note = due_note(empty, "inbox/Queue depth alarm.md")
    raw = note.read_bytes()
    (empty / "memory").write_text("a file where the memory folder should be\n")

    result = cli("promote", ok=False)

    assert result.exit_code == 1
    assert "inbox/Queue depth alarm.md: cannot move to memory/Queue depth alarm.md" in (
        result.stderr
    )
    assert note.read_bytes() == raw
