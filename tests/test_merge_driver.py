"""The git merge driver for notes (`vaultmem merge-driver`, `vaultmem git setup`), with
real git: two clones of one vault push to a bare repository and pull each other's work;
concurrent touch, observe, pin, link and confirm merge without a conflict, counters add
up, a conflict in the body keeps git's markers while the owned keys merge, and `index`,
`touch` and `doctor` name a note left with conflict markers."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import EXAMPLE_VAULT, Cli, run_git

from vaultmem.confidence import confirmed
from vaultmem.frontmatter.scan import parse_meta
from vaultmem.gitmerge.driver import merge_note
from vaultmem.gitmerge.rules import RULES, Rule, merge_owned
from vaultmem.properties import OWNED_KEYS, UNDO_KEYS

NOTE = "decisions/Redis for caching.md"
OTHER = "decisions/Memcached for session cache.md"
# `vaultmem` (the driver git starts) from this interpreter's environment, and nothing of
# the developer's: no user or system git config.


def git(repo: Path, *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
    """Run git in ``repo`` as a person would (the driver runs as git starts it)."""
    return run_git(repo, *args, config=("pull.rebase=false",), ok=ok)


def meta(machine: Machine, path: str = NOTE) -> dict:
    return parse_meta((machine.vault / path).read_bytes(), path)[0]


class Machine:
    """One clone of the vault: vaultmem commands at a chosen time, commits, pulls."""

    def __init__(self, vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.vault = vault
        self.cli = Cli(vault)
        self.monkeypatch = monkeypatch

    def at(self, when: str, *args: str, ok: bool = True):  # noqa: ANN201
        self.monkeypatch.setenv("VAULTMEM_NOW", when)
        return self.cli(*args, ok=ok)

    def commit(self, message: str) -> None:
        git(self.vault, "add", "-A")
        git(self.vault, "commit", "-q", "-m", message)

    def sync(self, *pull: str) -> subprocess.CompletedProcess[str]:
        """Commit what changed, pull (``pull`` options), push when the pull merged."""
        if git(self.vault, "status", "--porcelain").stdout.strip():
            self.commit("work")
        done = git(self.vault, "pull", "-q", *pull, "origin", "main", ok=False)
        if done.returncode == 0:
            git(self.vault, "push", "-q", "origin", "HEAD:main")
        return done


@pytest.fixture
def machines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Machine, Machine]:
    """example-vault/ committed with the driver set up, cloned twice."""
    return two_clones(tmp_path, monkeypatch)


def two_clones(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Machine, Machine]:
    """example-vault/ committed with the driver set up, cloned twice (each clone runs
    `git setup` once: the config does not travel, the attributes do)."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    origin = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(origin))
    first = tmp_path / "a"
    shutil.copytree(EXAMPLE_VAULT, first, ignore=shutil.ignore_patterns(".vaultmem"))
    Cli(first)("init", str(first))
    git(first, "init", "-q", "-b", "main")
    Cli(first)("git", "setup")
    git(first, "add", "-A")
    git(first, "commit", "-q", "-m", "vault")
    git(first, "push", "-q", str(origin), "main")
    git(first, "remote", "add", "origin", str(origin))
    second = tmp_path / "b"
    git(tmp_path, "clone", "-q", str(origin), str(second))
    Cli(second)("git", "setup")
    return Machine(first, monkeypatch), Machine(second, monkeypatch)


def markers(machine: Machine, path: str = NOTE) -> bool:
    return "<<<<<<<" in (machine.vault / path).read_text(encoding="utf-8")


# --------------------------------------------------------------------------- the table


def test_every_owned_key_has_one_merge_rule() -> None:
    assert set(RULES) == set(OWNED_KEYS)
    assert {k for k, rule in RULES.items() if rule is Rule.UNDO} == set(UNDO_KEYS.values())


def test_rules_merge_by_meaning() -> None:
    base = {"use_count": 1, "strength": 1.1, "related": ["[[A]]", "[[B]]"], "confidence": 0.5}
    ours = {"use_count": 3, "strength": 1.2, "related": ["[[A]]", "[[C]]"], "confidence": 0.6}
    theirs = {"use_count": 2, "strength": 1.3, "related": ["[[a]]", "[[B]]", "[[D]]"]}
    theirs["confidence"] = 0.25  # a contradiction
    merged = merge_owned(base, ours, theirs).values
    assert merged["use_count"] == 4
    assert merged["strength"] == 1.4  # 1.1 + 0.1 + 0.2, exactly
    assert merged["related"] == ["[[A]]", "[[C]]", "[[D]]"]  # B removed by ours
    assert merged["confidence"] == 0.35  # the confirmation, then the contradiction
    capped = merge_owned({"strength": 1.9}, {"strength": 2.0}, {"strength": 1.95})
    assert capped.values["strength"] == 2.0


def test_created_is_never_rewritten() -> None:
    base = {"created": "2026-01-05"}
    merged = merge_owned(base, {"created": "2026-01-01"}, {"created": "2026-01-09"})
    assert merged.values["created"] == "2026-01-05"
    added = merge_owned({}, {"created": "2026-01-09"}, {"created": "2026-01-01"})
    assert added.values["created"] == "2026-01-01"


# --------------------------------------------------------------------------- two clones


def test_the_issue_example_adds_counts_takes_the_latest_times_and_recomputes_confidence(
    machines: tuple[Machine, Machine],
) -> None:
    a, b = machines
    a.at("2026-11-10T09:00:00Z", "touch", "Redis for caching")
    assert a.sync().returncode == 0
    assert b.sync().returncode == 0
    assert meta(b)["use_count"] == 1
    a.at("2026-11-11T09:00:00Z", "touch", "Redis for caching")
    a.at("2026-11-12T09:00:00Z", "observe", "Redis for caching", "--tags", "payments")
    b.at("2026-11-11T18:00:00Z", "touch", "--confirm", "Redis for caching")
    assert a.sync().returncode == 0
    pulled = b.sync()
    assert pulled.returncode == 0, pulled.stdout + pulled.stderr
    merged = meta(b)
    assert merged["use_count"] == 4 and merged["review_count"] == 4
    assert merged["last_used"] == merged["last_review"] == _utc("2026-11-12T09:00:00")
    assert merged["last_confirmed"] == _utc("2026-11-11T18:00:00")
    assert merged["confidence"] == confirmed(0.85)
    assert merged["strength"] == 1.1 and merged["cross_domain_count"] == 1
    assert merged["created"] == meta(a)["created"]  # never rewritten
    assert not markers(b)
    # The merge is written in vaultmem's style: the next write edits only its own lines.
    git(b.vault, "push", "-q", "origin", "HEAD:main")
    b.at("2026-11-13T09:00:00Z", "touch", "Redis for caching")
    diff = git(b.vault, "diff", "-U0", "--", NOTE).stdout
    changed = [
        line[1:]
        for line in diff.splitlines()
        if line[:1] in "+-" and line[:3] not in ("+++", "---")
    ]
    assert sorted(line.split(":")[0] for line in changed) == sorted(
        [
            "use_count",
            "use_count",
            "last_used",
            "last_used",
            "review_count",
            "review_count",
            "last_review",
            "last_review",
        ]
    )


def _utc(text: str):  # noqa: ANN202
    from datetime import UTC, datetime

    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def test_concurrent_pin_link_unlink_and_confirm_merge_cleanly(
    machines: tuple[Machine, Machine],
) -> None:
    a, b = machines
    a.at("2026-11-10T09:00:00Z", "pin", "Redis for caching")
    a.at("2026-11-10T09:01:00Z", "link", "Redis for caching", "Kubernetes migration")
    a.at("2026-11-10T09:02:00Z", "unlink", "Redis for caching", "Rate limiting options")
    b.at("2026-11-10T10:00:00Z", "link", "Redis for caching", "Flaky tests in CI")
    b.at("2026-11-10T10:01:00Z", "touch", "--confirm", "Redis for caching")
    assert a.sync().returncode == 0
    pulled = b.sync()
    assert pulled.returncode == 0, pulled.stdout + pulled.stderr
    merged = meta(b)
    assert merged["pinned"] is True
    # Ours' (b's) order, then what theirs added; what a removed stays removed.
    assert merged["related"] == [
        "[[Runbook - Redis failover]]",
        "[[Flaky tests in CI]]",
        "[[Kubernetes migration]]",
    ]
    assert merged["confidence"] == confirmed(0.85) and merged["use_count"] == 1
    # Both ends of each link travelled too (the other notes merged or fast-forwarded).
    assert "[[Redis for caching]]" in meta(b, "projects/Kubernetes migration.md")["related"]
    assert b.at("2026-11-10T11:00:00Z", "unpin", "Redis for caching").exit_code == 0
    assert "pinned" not in meta(b)  # the undo key travelled with the flag


def test_a_rebase_and_a_cherry_pick_merge_the_counters(machines: tuple[Machine, Machine]) -> None:
    a, b = machines
    a.at("2026-11-10T09:00:00Z", "touch", "Redis for caching")
    a.at("2026-11-10T09:05:00Z", "touch", "Redis for caching")
    assert a.sync().returncode == 0
    b.at("2026-11-10T10:00:00Z", "touch", "Redis for caching")
    rebased = b.sync("--rebase")
    assert rebased.returncode == 0, rebased.stdout + rebased.stderr
    assert meta(b)["use_count"] == 3 and meta(b)["last_used"] == _utc("2026-11-10T10:00:00")
    # A commit made on a branch, picked onto main after main moved on.
    git(b.vault, "checkout", "-q", "-b", "side")
    b.at("2026-11-11T09:00:00Z", "observe", "Redis for caching", "--tags", "payments")
    b.commit("side")
    git(b.vault, "checkout", "-q", "main")
    b.at("2026-11-11T08:00:00Z", "touch", "Redis for caching")
    b.commit("main")
    picked = git(b.vault, "cherry-pick", "side", ok=False)
    assert picked.returncode == 0, picked.stdout + picked.stderr
    merged = meta(b)
    assert merged["use_count"] == 5 and merged["cross_domain_count"] == 1
    assert merged["last_used"] == _utc("2026-11-11T09:00:00")


def test_a_body_conflict_keeps_its_markers_while_the_owned_keys_merge(
    machines: tuple[Machine, Machine],
) -> None:
    a, b = machines
    for machine, word in ((a, "ElastiCache (ours)"), (b, "MemoryDB (theirs)")):
        note = machine.vault / NOTE
        text = note.read_text(encoding="utf-8")
        note.write_text(
            text.replace("Use **Redis 7.2 on ElastiCache**", f"Use **{word}**"), "utf-8"
        )
    a.at("2026-11-10T09:00:00Z", "touch", "Redis for caching")
    b.at("2026-11-10T10:00:00Z", "touch", "--confirm", "Redis for caching")
    b.at("2026-11-10T10:01:00Z", "pin", "Redis for caching")
    assert a.sync().returncode == 0
    pulled = b.sync()
    assert pulled.returncode != 0 and "CONFLICT" in pulled.stdout + pulled.stderr
    text = (b.vault / NOTE).read_text(encoding="utf-8")
    head, body = text.split("\n---\n", 1)
    assert "<<<<<<<" not in head  # the frontmatter merged...
    assert "Use **MemoryDB (theirs)**" in body and "Use **ElastiCache (ours)**" in body
    assert "<<<<<<<" in body and ">>>>>>>" in body  # ...the body kept git's markers
    owned = parse_meta((head + "\n---\n").encode(), NOTE)[0]
    assert owned["use_count"] == 2 and owned["pinned"] is True
    assert owned["confidence"] == confirmed(0.85)
    # index, touch and doctor name the note as an unfinished merge.
    index = b.cli("index", ok=False)
    assert f"skipped {NOTE}:" in index.stderr and "git conflict markers" in index.stderr
    touch = b.at("2026-11-10T12:00:00Z", "touch", "Redis for caching", ok=False)
    assert touch.exit_code == 1 and "git conflict markers" in touch.stderr
    assert "a merge of this note was left unfinished" in touch.stderr
    report = json.loads(b.cli("doctor", "--json", ok=False).stdout)
    assert not report["healthy"]
    (merge,) = [f for f in report["findings"] if f["check"] == "merge"]
    assert merge["message"].startswith(f"{NOTE}:") and "conflict markers" in merge["message"]
    assert "git -C" in merge["fix"] and f"add -- '{NOTE}'" in merge["fix"]
    # Settled by hand (ours' line kept), the note is a note again.
    lines = text.splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if line.startswith("<<<<<<<"))
    middle = next(i for i, line in enumerate(lines) if line.startswith("======="))
    end = next(i for i, line in enumerate(lines) if line.startswith(">>>>>>>"))
    (b.vault / NOTE).write_text(
        "".join(lines[:start] + lines[start + 1 : middle] + lines[end + 1 :])
    )
    git(b.vault, "add", "--", NOTE)
    git(b.vault, "commit", "-q", "--no-edit")
    report = json.loads(b.cli("doctor", "--json", ok=False).stdout)
    assert not [f for f in report["findings"] if f["check"] == "merge"]
    assert b.at("2026-11-10T12:00:00Z", "touch", "Redis for caching").exit_code == 0


def test_a_flag_changed_on_both_sides_with_no_newer_side_is_refused_clearly(
    machines: tuple[Machine, Machine],
) -> None:
    a, b = machines
    a.at("2026-11-10T09:00:00Z", "forget", "Memcached for session cache")
    b.at("2026-11-10T10:00:00Z", "restore", "Memcached for session cache")
    assert a.sync().returncode == 0
    pulled = b.sync()
    assert pulled.returncode != 0
    assert "status, status_before: both sides changed it" in pulled.stderr
    text = (b.vault / OTHER).read_text(encoding="utf-8")
    region = text[text.index("<<<<<<<") : text.index(">>>>>>>")]
    assert "=======\n" in region and "status: forgotten" not in region.split("=======")[0]
    assert "status: forgotten" in region.split("=======")[1]
    report = json.loads(b.cli("doctor", "--json", ok=False).stdout)
    assert any(f["check"] == "merge" and f["message"].startswith(OTHER) for f in report["findings"])


def test_the_side_that_used_the_note_last_keeps_its_flag(
    machines: tuple[Machine, Machine],
) -> None:
    a, b = machines
    a.at("2026-11-10T09:00:00Z", "forget", "Memcached for session cache")
    a.at("2026-11-10T09:30:00Z", "touch", "Memcached for session cache")
    b.at("2026-11-10T10:00:00Z", "restore", "Memcached for session cache")
    b.at("2026-11-10T10:30:00Z", "touch", "Memcached for session cache")
    assert a.sync().returncode == 0
    assert b.sync().returncode == 0
    merged = meta(b, OTHER)
    assert "status" not in merged and "status_before" not in merged  # b's restore
    assert merged["use_count"] == 2


# --------------------------------------------------------------------------- setup, doctor


def test_doctor_says_when_a_clone_lacks_the_driver(
    machines: tuple[Machine, Machine], tmp_path: Path
) -> None:
    a, _b = machines
    third = tmp_path / "c"
    git(tmp_path, "clone", "-q", str(tmp_path / "origin.git"), str(third))
    report = json.loads(Cli(third)("doctor", "--json", ok=False).stdout)
    (lacking,) = [f for f in report["findings"] if f["check"] == "git"]
    assert lacking["severity"] == "warn" and "no merge driver" in lacking["message"]
    assert lacking["fix"] == "vaultmem git setup"
    assert "added" not in Cli(third)("git", "setup").stdout  # the attributes came with the clone
    report = json.loads(Cli(third)("doctor", "--json", ok=False).stdout)
    (wired,) = [f for f in report["findings"] if f["check"] == "git"]
    assert wired["severity"] == "ok" and "merge with vaultmem's driver" in wired["message"]
    assert "already" in Cli(a.vault)("git", "setup").stdout  # idempotent


def test_a_union_merge_leaves_duplicate_keys_that_index_and_doctor_warn_about(
    machines: tuple[Machine, Machine],
) -> None:
    a, b = machines
    for machine in machines:  # $GIT_DIR/info/attributes wins over .gitattributes
        (machine.vault / ".git/info/attributes").write_text("*.md merge=union\n")
    a.at("2026-11-10T09:00:00Z", "touch", "Redis for caching")
    a.at("2026-11-10T09:10:00Z", "touch", "Redis for caching")
    b.at("2026-11-10T10:00:00Z", "touch", "Redis for caching")
    assert a.sync().returncode == 0
    assert b.sync().returncode == 0  # union never stops...
    assert (b.vault / NOTE).read_text().count("\nuse_count:") == 2  # ...and keeps both lines
    index = b.cli("index")
    assert f"vaultmem: warning: {NOTE}: duplicate key 'use_count'" in index.stderr
    report = json.loads(b.cli("doctor", "--json", ok=False).stdout)
    assert any(
        f["severity"] == "warn" and "duplicate key 'use_count'" in f["message"]
        for f in report["findings"]
    )
    assert any(f["check"] == "git" and "merge=union" in f["message"] for f in report["findings"])


def test_init_git_makes_the_repository_and_registers_the_driver(tmp_path: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    vault = tmp_path / "notes"
    out = Cli(vault)("init", str(vault), "--git").stdout
    assert "created git repository" in out
    assert (vault / ".gitattributes").read_text().splitlines()[-1] == "**/*.md merge=vaultmem"
    driver = git(vault, "config", "--get", "merge.vaultmem.driver").stdout.strip()
    assert driver == "vaultmem merge-driver -- %O %A %B %P"


# --------------------------------------------------------------------------- driver alone


def test_a_side_that_does_not_parse_is_merged_as_text() -> None:
    base = b"---\nuse_count: 1\n---\nbody\n"
    broken = b"---\nuse_count: [1\n---\nbody\n"
    result = merge_note(base, broken, b"---\nuse_count: 2\n---\nbody\n", "x.md")
    assert result.fallback and not result.clean and b"<<<<<<< ours" in result.text


def test_ours_layout_comments_and_user_keys_stay(tmp_path: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    base = b"---\ntitle: T\nuse_count: 1  # mine\ntags: [a]\nmood: calm\n---\nbody\n"
    ours = b"---\ntitle: T\nuse_count: 3  # mine\ntags: [a]\nmood: calm\n---\nbody\n"
    theirs = b"---\ntitle: T\nuse_count: 2\ntags: [a, b]\nmood: calm\n---\nbody\n"
    result = merge_note(base, ours, theirs, "x.md")
    assert result.clean
    assert (
        result.text == b"---\ntitle: T\nuse_count: 4  # mine\ntags: [a, b]\nmood: calm\n---\nbody\n"
    )


def test_doctor_names_the_command_that_merges_again_with_the_driver(
    machines: tuple[Machine, Machine], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, _b = machines
    third = tmp_path / "c"
    git(tmp_path, "clone", "-q", str(tmp_path / "origin.git"), str(third))
    c = Machine(third, monkeypatch)  # never ran `git setup`: git merges its notes as text
    a.at("2026-11-10T09:00:00Z", "touch", "Redis for caching")
    c.at("2026-11-10T10:00:00Z", "touch", "Redis for caching")
    assert a.sync().returncode == 0
    assert c.sync().returncode != 0 and markers(c)
    report = json.loads(c.cli("doctor", "--json", ok=False).stdout)
    (merge,) = [f for f in report["findings"] if f["check"] == "merge"]
    fix = merge["fix"]
    assert fix.startswith("`vaultmem git setup`, then `git -C")
    again = shlex.split(fix.split("`")[3])  # run as printed
    assert again == ["git", "-C", str(third), "checkout", "-m", "--", NOTE]
    c.cli("git", "setup")
    git(third, *again[3:])
    assert not markers(c) and meta(c)["use_count"] == 2


def test_a_conflict_shown_in_a_code_block_is_an_example_not_a_merge() -> None:
    from vaultmem.errors import NoteError
    from vaultmem.note import parse_note

    example = "<<<<<<< ours\nmine\n=======\nyours\n>>>>>>> theirs\n"
    documented = f"---\ntitle: Git\n---\n# Conflicts look like\n\n```\n{example}```\n"
    assert parse_note("git.md", documented.encode()).title == "Git"
    underlined = "---\ntitle: T\n---\nHeading\n=======\n\ntext\n"  # a setext heading
    assert parse_note("t.md", underlined.encode()).title == "T"
    with pytest.raises(NoteError, match=r"^left\.md:5: git conflict markers: a merge"):
        parse_note("left.md", f"---\ntitle: T\n---\ntext\n{example}".encode())


# --------------------------------------------------------------------------- a key prefix


def test_under_a_key_prefix_concurrent_touches_add_up(machines: tuple[Machine, Machine]) -> None:
    a, b = machines
    a.cli("keys", "migrate", "--prefix", "vm_", "--apply")  # .vaultmem.toml travels too
    assert a.sync().returncode == 0
    assert b.sync().returncode == 0
    assert "vm_type" in meta(b) and "type" not in meta(b)
    a.at("2026-11-10T09:00:00Z", "touch", "Redis for caching")
    b.at("2026-11-10T10:00:00Z", "touch", "Redis for caching")
    b.at("2026-11-10T11:00:00Z", "touch", "Redis for caching")
    assert a.sync().returncode == 0
    pulled = b.sync()
    assert pulled.returncode == 0, pulled.stdout + pulled.stderr
    merged = meta(b)
    assert merged["vm_use_count"] == 3 and merged["vm_last_used"] == _utc("2026-11-10T11:00:00")
    assert not {"use_count", "last_used"} & set(merged) and not markers(b)


def test_the_driver_finds_the_key_names_of_the_vault_holding_the_note(tmp_path: Path) -> None:
    from vaultmem.gitmerge.registration import note_keys
    from vaultmem.properties import BARE, KeyScheme

    notes = tmp_path / "repo" / "notes"  # a vault in a folder of the repository
    (notes / "inbox").mkdir(parents=True)
    (notes / ".vaultmem.toml").write_text('[keys]\nprefix = "vm_"\n', encoding="utf-8")
    assert note_keys(tmp_path / "repo", "notes/inbox/a.md", {}) == KeyScheme("vm_")
    assert note_keys(tmp_path / "repo", "README.md", {}) == BARE  # in no vault
    base = b"---\ntitle: T\nvm_use_count: 1\nuse_count: mine\n---\nbody\n"
    ours = base.replace(b"vm_use_count: 1", b"vm_use_count: 3")
    theirs = base.replace(b"vm_use_count: 1", b"vm_use_count: 2")
    result = merge_note(base, ours, theirs, "x.md", keys=KeyScheme("vm_"))
    assert result.clean and result.text == base.replace(b"vm_use_count: 1", b"vm_use_count: 4")
