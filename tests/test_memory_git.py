"""Git-friendliness of the memory commands (SPEC §2.5), in a real git repository: edits
touch only vaultmem's own frontmatter lines, and reading never dirties the work tree."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from conftest import EXAMPLE_VAULT, Cli, run_git

from vaultmem.properties import OWNED_KEYS

_KEY_RE = re.compile(r"^([A-Za-z_][\w-]*)\s*:")


def git(vault: Path, *args: str) -> str:
    """Run git in the vault (no user or system config) and return its stdout."""
    return run_git(vault, *args, config=("core.quotepath=off",)).stdout


def status(vault: Path) -> list[str]:
    """``git status --porcelain`` entries (``XY path``), paths unquoted."""
    out = git(vault, "status", "--porcelain", "-z", "--untracked-files=all")
    return sorted(entry for entry in out.split("\0") if entry)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """example-vault/ after `vaultmem init`, committed to a fresh git repository."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    vault = tmp_path / "vault"
    shutil.copytree(EXAMPLE_VAULT, vault, ignore=shutil.ignore_patterns(".vaultmem"))
    Cli(vault)("init", str(vault))
    git(vault, "init", "-q", "-b", "main")
    git(vault, "add", "-A")
    git(vault, "commit", "-q", "-m", "vault")
    return vault


def changed_lines(diff: str) -> list[tuple[str, str, str | None]]:
    """(file, changed line, the top-level key it belongs to) for every +/- line.

    The diff has full context, so a changed list item can be traced back to its key line
    even when that line itself did not change.
    """
    out: list[tuple[str, str, str | None]] = []
    current_file, key = "", None
    for line in diff.splitlines():
        if line.startswith("diff --git"):
            current_file, key = line.split(" b/", 1)[1], None
            continue
        if line.startswith(("+++", "---", "@@", "index ", "new file", "deleted file")):
            continue
        if not line or line[0] not in " +-":
            continue
        text = line[1:]
        match = _KEY_RE.match(text)
        if match:
            key = match.group(1)
        elif text.strip() in ("---", "") or not text.startswith((" ", "\t")):
            key = None  # past the frontmatter, or a line no key owns
        if line[0] in "+-":
            out.append((current_file, text, key))
    return out


def test_index_and_search_leave_the_work_tree_clean(repo: Path) -> None:
    cli = Cli(repo)
    cli("index")
    cli("search", "redis caching")
    cli("search", "rate limiting", "--status", "forgotten")
    cli("get", "Harbor")
    assert status(repo) == []


def test_memory_commands_change_only_vaultmem_keys(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VAULTMEM_NOW", "2026-11-20T08:00:00Z")
    cli = Cli(repo)
    cli("index")
    cli("touch", "Redis for caching", "Useful kubectl commands")
    cli("observe", "pytest-xdist port collisions", "--tags", "payments")
    cli("pin", "Testing preferences")
    cli("snooze", "Kubernetes migration", "--for", "14d")
    cli("forget", "Rate limiting options")
    new = cli("remember", "Sessions moved to Redis", "--supersedes", "Memcached for session cache")
    new_path = new.stdout.strip().splitlines()[-1]

    changed = status(repo)
    assert changed == sorted(
        [
            " M decisions/Redis for caching.md",
            " M reference/Useful kubectl commands.md",
            " M inbox/pytest-xdist port collisions.md",
            " M preferences/Testing preferences.md",
            " M projects/Kubernetes migration.md",
            " M research/Rate limiting options.md",
            " M decisions/Memcached for session cache.md",
            f"?? {new_path}",
        ]
    )
    diff = git(repo, "diff", "-U1000", "--no-color")
    lines = changed_lines(diff)
    assert {f for f, _, _ in lines} == {s[3:] for s in changed if s.startswith(" M")}
    foreign = [(f, text) for f, text, key in lines if key not in OWNED_KEYS]
    # The note that had no frontmatter gains the two delimiter lines around its keys.
    assert foreign == [
        ("reference/Useful kubectl commands.md", "---"),
        ("reference/Useful kubectl commands.md", "---"),
    ]
    # Memcached was superseded already: only its superseded_by changes, gaining the link.
    memcached = [(t, k) for f, t, k in lines if f == "decisions/Memcached for session cache.md"]
    assert {k for _, k in memcached} == {"superseded_by"}
    assert ('  - "[[sessions-moved-to-redis]]"', "superseded_by") in memcached


def test_remember_then_git_shows_one_new_file(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VAULTMEM_NOW", "2026-11-20T08:00:00Z")
    cli = Cli(repo)
    cli("index")
    path = cli("remember", "Use port 0 in test servers", "--tags", "testing").stdout.split()[-1]
    assert status(repo) == [f"?? {path}"]
    cli("search", "port 0 test servers")
    assert status(repo) == [f"?? {path}"]
