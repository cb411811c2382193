"""The merge driver conflicts exactly where git would (issue 29): git merges the user's
part (every key that is not vaultmem's, and the body) with vaultmem's lines held still,
so edits they keep apart stay apart, a BOM or an anchor is text like any other, a user's
own ``status`` edited on both sides is git's conflict, vaultmem's keys keep ours' order,
and a frontmatter over the driver's size cap merges as git merges text."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import Cli
from merge_triples import git_merge
from test_merge_driver import NOTE, Machine, markers, meta, two_clones

from vaultmem.gitmerge.driver import MAX_PARSED, merge_note, text_merge

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


@pytest.fixture
def machines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Machine, Machine]:
    return two_clones(tmp_path, monkeypatch)


def _edit(machine: Machine, old: str, new: str, path: str = NOTE) -> None:
    note = machine.vault / path
    text = note.read_text(encoding="utf-8")
    assert old in text
    note.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_edits_that_vaultmems_lines_keep_apart_merge_as_git_merges_them(
    machines: tuple[Machine, Machine],
) -> None:
    """Case 1: `alembic` added to tags on one clone, `project` set three lines below on the
    other (created and confidence between them), both touching the note."""
    a, b = machines
    _edit(a, "  - infra/redis\n", "  - infra/redis\n  - alembic\n")
    a.at("2026-11-10T09:00:00Z", "touch", "Redis for caching")
    _edit(b, "project: harbor\n", "project: harbor-core\n")
    b.at("2026-11-10T10:00:00Z", "touch", "Redis for caching")
    assert a.sync().returncode == 0
    pulled = b.sync()
    assert pulled.returncode == 0, pulled.stdout + pulled.stderr
    merged = meta(b)
    assert merged["tags"][-1] == "alembic" and merged["project"] == "harbor-core"
    assert merged["use_count"] == 2 and not markers(b)


def test_a_bom_added_on_one_side_is_text_like_any_other() -> None:
    base = b"---\nuse_count: 1\ntitle: T\n---\nbody\n"
    ours = b"\xef\xbb\xbf" + base.replace(b"use_count: 1", b"use_count: 2")
    theirs = base.replace(b"title: T", b"title: U").replace(b"use_count: 1", b"use_count: 3")
    result = merge_note(base, ours, theirs, "x.md")
    assert result.clean, result.conflicts
    assert result.text == b"\xef\xbb\xbf---\nuse_count: 4\ntitle: U\n---\nbody\n"


def test_a_yaml_anchor_and_its_alias_merge_as_text() -> None:
    base = b"---\ntitle: T\nports: &p [1, 2]\nuse_count: 1\nmirror: *p\n---\nbody\n"
    ours = base.replace(b"&p [1, 2]", b"&p [1, 2, 3]").replace(b"use_count: 1", b"use_count: 2")
    theirs = base.replace(b"mirror: *p", b"mirror: *p  # same").replace(b"1\nmirror", b"3\nmirror")
    result = merge_note(base, ours, theirs, "x.md")
    assert result.clean, result.conflicts
    assert result.text == (
        b"---\ntitle: T\nports: &p [1, 2, 3]\nuse_count: 4\nmirror: *p  # same\n---\nbody\n"
    )


def test_crlf_comments_and_a_body_conflict_keep_gits_bytes() -> None:
    base = b"---\r\ntitle: T  # mine\r\nuse_count: 1\r\n# about\r\nmood: calm\r\n---\r\nA\r\n"
    ours = base.replace(b"use_count: 1", b"use_count: 2").replace(b"A\r\n", b"B\r\n")
    theirs = base.replace(b"use_count: 1", b"use_count: 3").replace(b"A\r\n", b"C\r\n")
    result = merge_note(base, ours, theirs, "x.md")
    users, regions = git_merge(
        ours.replace(b"use_count: 2", b"use_count: 1"),
        base,
        theirs.replace(b"use_count: 3", b"use_count: 1"),
    )
    assert regions == 1 and not result.clean
    assert result.text == users.replace(b"use_count: 1", b"use_count: 4")
    assert b"<<<<<<< ours\r\nB\r\n=======\r\nC\r\n>>>>>>> theirs\r\n" in result.text


def test_both_clones_changing_a_users_status_is_gits_conflict(
    machines: tuple[Machine, Machine],
) -> None:
    """Case 2: `status: reading` is the user's (outside vaultmem's vocabulary); both clones
    change it, the later one touching the note later. Plain git reports a conflict, and so
    does the driver: it never picks between two edits of a user's key."""
    a, b = machines
    for machine in machines:
        _edit(machine, "project: harbor\n", "project: harbor\nstatus: reading\n")
    a.commit("status")
    assert a.sync().returncode == 0 and b.sync().returncode == 0
    _edit(a, "status: reading", "status: done")
    a.at("2026-11-10T09:00:00Z", "touch", "Redis for caching")
    _edit(b, "status: reading", "status: abandoned")
    b.at("2026-11-10T10:00:00Z", "touch", "Redis for caching")
    assert a.sync().returncode == 0
    pulled = b.sync()
    assert pulled.returncode != 0 and "CONFLICT" in pulled.stdout + pulled.stderr
    text = (b.vault / NOTE).read_text(encoding="utf-8")
    region = text[text.index("<<<<<<<") : text.index(">>>>>>>")]
    assert "status: abandoned" in region and "status: done" in region
    assert "use_count: 2" in text.split("<<<<<<<")[0] + text.split(">>>>>>>")[1]  # merged


def test_owned_keys_keep_ours_order() -> None:
    """Theirs moved last_used below type by hand: ours' order of vaultmem's keys stands."""
    base = b"---\nlast_used: 2026-11-01T09:00:00Z\ntitle: T\nuse_count: 1\ntype: decision\n---\n"
    ours = base.replace(b"use_count: 1", b"use_count: 2").replace(b"11-01", b"11-02")
    theirs = b"---\ntitle: T\nuse_count: 3\ntype: decision\nlast_used: 2026-11-03T09:00:00Z\n"
    theirs += b"pinned: true\n---\n"
    result = merge_note(base, ours, theirs, "x.md")
    assert result.clean, result.conflicts
    assert result.text == (
        b"---\ntitle: T\nlast_used: 2026-11-03T09:00:00Z\nuse_count: 4\ntype: decision\n"
        b"pinned: true\n---\n"
    )


def _big(use_count: int) -> bytes:
    tags = "".join(f"  - tag-{i}\n" for i in range(MAX_PARSED // 10))
    return f"---\ntitle: T\ntags:\n{tags}use_count: {use_count}\n---\nbody\n".encode()


def test_a_frontmatter_over_the_cap_merges_as_git_merges_text(tmp_path: Path) -> None:
    """Case 5: the driver parses at most MAX_PARSED bytes of frontmatter; above it git's
    text merge decides, and the driver says so in one line."""
    base, ours, theirs = _big(1), _big(2), _big(3)
    result = merge_note(base, ours, theirs, "big.md")
    assert "over the 4 KiB the driver parses" in result.fallback
    assert (result.text, len(result.conflicts)) == (text_merge(ours, base, theirs)[0], 1)
    files = []
    for name, data in (("base", base), ("ours", ours), ("theirs", theirs)):
        (tmp_path / name).write_bytes(data)
        files.append(str(tmp_path / name))
    run = Cli(tmp_path)("merge-driver", *files, "big.md", ok=False)
    assert run.exit_code == 1
    lines = run.stderr.splitlines()
    assert lines[0].startswith("vaultmem merge-driver: big.md: merged as text (its frontmatter is")
    assert len([line for line in lines if "merged as text" in line]) == 1
