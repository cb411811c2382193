"""Which files are notes, link resolution, and the writer lock."""

from pathlib import Path

import pytest

from vaultmem.config import build
from vaultmem.errors import AmbiguousNote, LockBusy, NoteNotFound
from vaultmem.vault import (
    LinkResolver,
    NoteName,
    compile_globs,
    expand_braces,
    vault_lock,
    walk_notes,
)


def test_expand_braces() -> None:
    assert expand_braces("{docs,memory}/**/*.md") == ["docs/**/*.md", "memory/**/*.md"]
    assert expand_braces("a{1,2}b{x,y}") == ["a1bx", "a1by", "a2bx", "a2by"]


@pytest.mark.parametrize(
    ("patterns", "path", "expected"),
    [
        (["**/*.md"], "a.md", True),
        (["**/*.md"], "x/y/a.md", True),
        (["**/*.md"], "a.txt", False),
        (["{docs,memory}/**"], "memory/x/a.md", True),
        (["{docs,memory}/**"], "inbox/a.md", False),
        (["*.md"], "x/a.md", False),
        (["daily/202?-*.md"], "daily/2026-11-01.md", True),
        (["[!_]*.md"], "_draft.md", False),
    ],
)
def test_globs(patterns: list[str], path: str, expected: bool) -> None:
    assert compile_globs(patterns)(path) is expected


def _touch(root: Path, *paths: str) -> None:
    for p in paths:
        (root / p).parent.mkdir(parents=True, exist_ok=True)
        (root / p).write_text("# x\n", encoding="utf-8")


def test_walk_skips_hidden_and_excluded(tmp_path: Path) -> None:
    _touch(
        tmp_path,
        "a.md",
        "sub/b.md",
        ".obsidian/c.md",
        ".trash/d.md",
        "node_modules/e.md",
        "drafts/f.md",
        "g.txt",
        ".git/h.md",
    )
    config = build(tmp_path, {"exclude": [".obsidian/**", "drafts/**", "node_modules/**"]})
    assert [f.path for f in walk_notes(config)] == ["a.md", "sub/b.md"]


def test_walk_include_braces(tmp_path: Path) -> None:
    _touch(tmp_path, "docs/a.md", "memory/b.md", "inbox/c.md")
    config = build(tmp_path, {"include": ["{docs,memory}/**/*.md"]})
    assert sorted(f.path for f in walk_notes(config)) == ["docs/a.md", "memory/b.md"]


NAMES = [
    NoteName("Harbor.md", "Harbor", ("harbor hub",)),
    NoteName("projects/Meeting.md", "Project meeting"),
    NoteName("research/Meeting.md", "Research meeting"),
    NoteName("decisions/Use Redis.md", "Use Redis for sessions", ("redis decision",)),
    NoteName("deep/a/b/Notes.md", "Notes"),
    NoteName("Notes.md", "Root notes"),
]


def test_link_resolution_like_obsidian() -> None:
    r = LinkResolver(NAMES)
    assert r.resolve_link("Use Redis") == "decisions/Use Redis.md"
    assert r.resolve_link("use redis.md") == "decisions/Use Redis.md"
    assert r.resolve_link("research/Meeting") == "research/Meeting.md"
    assert r.resolve_link("Meeting", source="research/Other.md") == "research/Meeting.md"
    assert r.resolve_link("Notes") == "Notes.md"  # the shortest path wins a bare name
    assert r.resolve_link("redis decision") == "decisions/Use Redis.md"  # alias
    assert r.resolve_link("Missing note") is None


def test_resolve_name_by_path_title_alias() -> None:
    r = LinkResolver(NAMES)
    assert r.resolve_name("decisions/Use Redis.md") == "decisions/Use Redis.md"
    assert r.resolve_name("use redis for sessions") == "decisions/Use Redis.md"
    assert r.resolve_name("harbor hub") == "Harbor.md"
    with pytest.raises(AmbiguousNote) as err:
        r.resolve_name("Meeting")
    assert "projects/Meeting.md" in str(err.value) and "research/Meeting.md" in str(err.value)
    with pytest.raises(NoteNotFound):
        r.resolve_name("nothing like this")


def test_lock_is_exclusive(tmp_path: Path) -> None:
    # flock is per open file description: a second open in-process conflicts too.
    with (
        vault_lock(tmp_path, timeout=0),
        pytest.raises(LockBusy),
        vault_lock(tmp_path, timeout=0.1),
    ):
        pass
    with vault_lock(tmp_path, timeout=0):
        pass
