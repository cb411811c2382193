"""`hook pre-tool`: the vault's rules at the moment of action (Claude Code's PreToolUse).

Whole hook processes fed the PreToolUse payloads of Claude Code's hooks reference
(tests/data/claude/pre_tool_use_*.json: the common fields, ``tool_name``, ``tool_input``,
``tool_use_id``), their stdout read as Claude Code reads it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from conftest import Cli

from tests.test_hooks import DATA, claude_output, log_lines, payload, run_hook
from tests.test_warm import serve_at  # noqa: F401 - a fixture

MIGRATIONS = """---
type: antipattern
applies_to: ["alembic upgrade", "migrations/**"]
enforce: deny
---
# Never run migrations by hand

Some context first.

## Rule

Migrations run from the deploy pipeline only (`make migrate`), never from a worker job
or by hand against a database.
"""

REFUNDS = """---
type: note
applies_to: "docs/runbooks/*.md"
---
# Runbooks are reviewed by on-call

Every runbook change gets a review from the current on-call engineer before merge.
"""


def _note(vault: Path, name: str, text: str) -> None:
    path = vault / "rules" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(text, "utf-8")


@pytest.fixture
def ruled(cli: Cli) -> Path:
    """example-vault with two rule notes of its own, indexed."""
    _note(cli.vault, "Never run migrations by hand.md", MIGRATIONS)
    _note(cli.vault, "Runbooks are reviewed.md", REFUNDS)
    cli("index")
    return cli.vault


def pre_tool(vault: Path, name: str, **fields: Any) -> dict[str, Any] | None:
    """Run `hook pre-tool` on fixture ``name`` and return what Claude Code reads."""
    result = run_hook("pre-tool", payload(name, **fields), "--vault", str(vault))
    out = claude_output(result)
    if out is not None:
        assert set(out) == {"hookSpecificOutput"}
        assert out["hookSpecificOutput"]["hookEventName"] == "PreToolUse"
        # vaultmem never allows: that would skip the user's own permission prompt.
        assert out["hookSpecificOutput"].get("permissionDecision") in (None, "deny", "ask")
    return out


def _context(out: dict[str, Any] | None) -> str:
    assert out is not None
    return str(out["hookSpecificOutput"].get("additionalContext", ""))


def test_a_write_in_a_rules_scope_gets_the_rule_once_a_session(ruled: Path) -> None:
    out = pre_tool(ruled, "pre_tool_use_write")
    context = _context(out)
    assert context.startswith("<vault-rules>") and context.endswith("</vault-rules>")
    assert "Write of docs/runbooks/refunds.md" in context
    assert (
        "- Runbooks are reviewed by on-call [note; docs/runbooks/*.md] "
        "(rules/Runbooks are reviewed.md): " in context
    )
    assert "review from the current on-call engineer" in context
    assert "permissionDecision" not in out["hookSpecificOutput"]  # type: ignore[index]
    # The same rule is not shown again in this session; another session gets it.
    assert pre_tool(ruled, "pre_tool_use_write") is None
    again = _context(pre_tool(ruled, "pre_tool_use_write", session_id="another-session"))
    assert "Runbooks are reviewed by on-call" in again


def test_an_enforcing_rule_denies_with_the_notes_reason_every_time(ruled: Path) -> None:
    for _ in range(2):
        out = pre_tool(ruled, "pre_tool_use_bash")
        assert out is not None
        specific = out["hookSpecificOutput"]
        assert specific["permissionDecision"] == "deny"
        reason = specific["permissionDecisionReason"]
        assert '"Never run migrations by hand" (rules/Never run migrations by hand.md)' in reason
        assert "applies to alembic upgrade" in reason
        assert "Migrations run from the deploy pipeline only" in reason
    (line, _again) = log_lines(ruled / ".vaultmem" / "hooks.log")
    assert "hook pre-tool: deny for Bash `cd /home/dev/harbor && " in line
    # An edit under migrations/ is in its scope too.
    edit = pre_tool(ruled, "pre_tool_use_edit")
    assert edit is not None and edit["hookSpecificOutput"]["permissionDecision"] == "deny"


def test_a_command_that_only_names_a_scoped_path_is_shown_the_rule_not_denied(
    ruled: Path,
) -> None:
    tool_input = {"command": "ls -la /home/dev/harbor/db/migrations/versions/"}
    out = pre_tool(ruled, "pre_tool_use_bash", tool_input=tool_input)
    assert out is not None and "permissionDecision" not in out["hookSpecificOutput"]
    assert "Never run migrations by hand [antipattern; migrations/**]" in _context(out)


def test_rules_scoped_by_their_words_and_language_never_block(cli: Cli) -> None:
    # An enforcing note without applies_to matches by its words: shown, never enforced.
    _note(
        cli.vault,
        "Invoices.md",
        "---\ntype: antipattern\ntags: [billing]\nenforce: deny\n---\n# Invoice totals\n\n"
        "Invoice totals are computed in integer cents, never floats.\n",
    )
    cli("index")
    out = pre_tool(cli.vault, "pre_tool_use_multiedit")
    assert out is not None and "permissionDecision" not in out["hookSpecificOutput"]
    context = _context(out)
    assert "MultiEdit of harbor/billing/invoices.py" in context
    assert "Invoice totals [antipattern; billing, invoice] (rules/Invoices.md)" in context
    # example-vault's Python rules (tagged lang/python) apply to a .py file too; at most
    # three rules a call, within the budget.
    assert context.count("\n- ") == 3 and len(context) / 4 <= 250
    assert "python]" in context
    # The next edit of a Python file gets the ones not shown yet, not the same again.
    more = _context(pre_tool(cli.vault, "pre_tool_use_multiedit"))
    assert "Invoice totals" not in more and "python]" in more


def test_a_note_that_names_its_scope_is_held_to_it(cli: Cli) -> None:
    _note(
        cli.vault,
        "Docs style.md",
        '---\ntype: preference\napplies_to: ["*.rst"]\ntags: [billing, docs]\n---\n'
        "# Docs style\n\nWrap at 80.\n",
    )
    cli("index")
    context = _context(pre_tool(cli.vault, "pre_tool_use_multiedit"))
    assert "Docs style" not in context  # its tags match billing/, its scope does not


def test_retired_and_snoozed_rules_are_not_shown(ruled: Path) -> None:
    cli = Cli(ruled)
    cli("forget", "rules/Runbooks are reviewed.md")
    assert pre_tool(ruled, "pre_tool_use_write") is None
    cli("restore", "rules/Runbooks are reviewed.md")
    cli("snooze", "rules/Runbooks are reviewed.md", "--for", "7d")
    assert pre_tool(ruled, "pre_tool_use_write") is None
    cli("unsnooze", "rules/Runbooks are reviewed.md")
    assert "Runbooks are reviewed" in _context(pre_tool(ruled, "pre_tool_use_write"))


def test_a_hostile_glob_in_a_note_is_matched_in_linear_time(cli: Cli) -> None:
    # As a regular expression this pattern backtracks for hours on the path below.
    star = "**a" * 12 + "**b"
    _note(
        cli.vault,
        "Hostile.md",
        f'---\ntype: note\napplies_to: ["{star}", "{star}/{star}"]\n---\n# Hostile\n\nx\n',
    )
    cli("index")
    path = "/home/dev/harbor/" + "/".join(["a" * 200] * 4)
    out = pre_tool(cli.vault, "pre_tool_use_write", tool_input={"file_path": path})
    assert out is None or "Hostile" not in _context(out)


@pytest.mark.parametrize(
    "stdin",
    [
        '{"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": "rm -rf /"}',
        '{"hook_event_name": "PreToolUse", "tool_input": {"command": "ls"}}',
        "not json",
    ],
)
def test_a_malformed_pre_tool_event_changes_nothing(ruled: Path, stdin: str) -> None:
    result = run_hook("pre-tool", stdin, "--vault", str(ruled))
    assert (result.returncode, result.stdout) == (0, "")


def test_install_wires_pre_tool_for_edits_and_commands(cli: Cli) -> None:
    home = Path(os.environ["HOME"])
    path = home / ".claude" / "settings.json"
    path.parent.mkdir(parents=True)
    (path).write_text((DATA / "settings_user.json").read_text("utf-8"), "utf-8")
    cli("hooks", "install", "--claude")
    groups = json.loads(path.read_text("utf-8"))["hooks"]["PreToolUse"]
    # The user's own Bash hook stays first and untouched; vaultmem's is a group of its own.
    assert groups[0]["hooks"][0]["command"].endswith("check-bash.sh")
    (ours,) = [g for g in groups if "hook pre-tool" in g["hooks"][0]["command"]]
    assert ours["matcher"] == "Edit|Write|MultiEdit|Bash"
    assert ours["hooks"][0]["timeout"] == 5
    assert ours["hooks"][0]["command"].endswith(f"--vault {cli.vault.resolve()} hook pre-tool")
    assert "PreToolUse" in cli("hooks", "status").stdout.splitlines()[0]
    cli("hooks", "uninstall", "--claude")
    groups = json.loads(path.read_text("utf-8"))["hooks"]["PreToolUse"]
    assert len(groups) == 1 and groups[0]["matcher"] == "Bash"


def test_a_prefixed_vault_reads_its_own_rule_keys_only(cli: Cli) -> None:
    # Under [keys] prefix, a bare applies_to is the person's own key: not interpreted.
    (cli.vault / ".vaultmem.toml").write_text('[keys]\nprefix = "vm_"\n', "utf-8")
    _note(
        cli.vault,
        "Theirs.md",
        '---\ntype: note\napplies_to: ["docs/**"]\n---\n# Theirs\n\nA key of their own.\n',
    )
    _note(
        cli.vault,
        "Ours.md",
        '---\nvm_type: note\nvm_applies_to: ["docs/**"]\n---\n# Ours\n\nRunbooks need a review.\n',
    )
    cli("index")
    context = _context(pre_tool(cli.vault, "pre_tool_use_write"))
    assert "Ours [note; docs/**]" in context and "Theirs" not in context


@pytest.mark.parametrize(
    ("pattern", "path", "matched"),
    [
        ("*.sql", "db/schema.sql", True),
        ("*.sql", "db/schema.sqlx", False),
        ("migrations/**", "backend/migrations/versions/0001.py", True),
        ("migrations/**", "backend/migration/0001.py", False),
        ("src/{api,web}/*.py", "src/web/views.py", True),
        ("src/{api,web}/*.py", "src/web/sub/views.py", False),
        ("src/**/*.py", "src/views.py", True),
        ("test_*.py", "tests/test_pay.py", True),
        ("[!a]*.md", "docs/readme.md", True),
        ("[!a]*.md", "docs/api.md", False),
        ("Dockerfile*", "deploy/Dockerfile.prod", True),
    ],
)
def test_glob_match(pattern: str, path: str, matched: bool) -> None:
    from vaultmem.agent.scopes import glob_match

    assert glob_match(pattern, path) is matched


@pytest.mark.parametrize(
    ("line", "commands"),
    [
        ("git push --force origin main", [("git", "push", "--force", "origin", "main")]),
        (
            "cd app && FOO=1 sudo -E uv run python -m pytest -q | tee log.txt",
            [("cd", "app"), ("pytest", "-q"), ("tee", "log.txt")],
        ),
        ("env A=b ./manage.py migrate; make", [("manage.py", "migrate"), ("make",)]),
        # An unclosed quote: the words as they stand, never an error.
        ('echo "never closed', [("echo", '"never', "closed")]),
    ],
)
def test_split_command(line: str, commands: list[tuple[str, ...]]) -> None:
    from vaultmem.agent.scopes import split_command

    assert split_command(line) == commands


@pytest.mark.slow  # a real `serve`
def test_pre_tool_is_answered_by_a_running_server_as_in_process(
    ruled: Path,
    serve_at: Any,  # noqa: F811 - the fixture
) -> None:
    from tests.test_warm import same_both_ways

    serve_at(ruled)
    # A deny is the same every time: through the server, then in process.
    done = same_both_ways(ruled, "hook", "pre-tool", stdin=payload("pre_tool_use_bash").encode())
    assert json.loads(done.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
