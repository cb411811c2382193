"""forget → restore, pin → unpin, snooze → unsnooze are undos: the inverse gives back the
exact line the command replaced (comment, spacing, quoting, several lines), kept in the
note itself (``status_before``…), never in the cache."""

from __future__ import annotations

import json
import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import EXAMPLE_VAULT, Cli, run_vaultmem

from vaultmem import api
from vaultmem.config import build
from vaultmem.frontmatter.edit import KeyLines, ReplacedLines, apply
from vaultmem.frontmatter.owned import owned_problem, saved_lines_problem
from vaultmem.frontmatter.scan import parse_meta
from vaultmem.properties import UNDO_KEYS

NOW = datetime(2026, 12, 1, 15, 47, tzinfo=UTC)
MEMCACHED = "decisions/Memcached for session cache.md"  # status: superseded


@pytest.fixture
def now(monkeypatch: pytest.MonkeyPatch) -> datetime:
    """Pin the CLI's clock."""
    monkeypatch.setenv("VAULTMEM_NOW", NOW.isoformat())
    return NOW


def write(vault: Path, path: str, text: str, newline: str = "\n") -> bytes:
    """Write a note (``\\n`` in ``text`` as ``newline``) and return its bytes."""
    raw = text.replace("\n", newline).encode("utf-8")
    (vault / path).write_bytes(raw)
    return raw


def meta(vault: Path, path: str) -> dict[Any, Any]:
    """The parsed frontmatter of a note."""
    return parse_meta((vault / path).read_bytes(), path)[0]


READING = "---\ntitle: Reading list\nstatus: promoted  # mine\ntags: [books]\n---\nBody.\n"


# --------------------------------------------------------------------------- forget/restore


def test_restore_gives_back_the_status_line_forget_replaced(cli: Cli, vault: Path) -> None:
    raw = write(vault, "inbox/reading.md", READING)
    cli("index")
    (forgot,) = cli.json_lines("forget", "inbox/reading.md")
    # The JSON says what happened to the note, the saved line included.
    assert forgot["before"] == {"status": "promoted", "status_before": None}
    assert forgot["after"] == {"status": "forgotten", "status_before": "status: promoted  # mine"}
    text = (vault / "inbox/reading.md").read_text()
    assert "status: forgotten  # mine\n" in text
    assert 'status_before: "status: promoted  # mine"\n' in text  # one quoted line in git
    assert cli.json_lines("search", "Reading list", "--status", "forgotten")[0]["path"] == (
        "inbox/reading.md"
    )

    (restored,) = cli.json_lines("restore", "inbox/reading.md")
    assert restored["before"] == forgot["after"]
    assert restored["after"] == {"status": "promoted", "status_before": None}
    assert (vault / "inbox/reading.md").read_bytes() == raw


def test_a_superseded_note_forgotten_and_restored_is_superseded_again(
    cli: Cli, vault: Path
) -> None:
    cli("forget", MEMCACHED)
    (restored,) = cli.json_lines("restore", MEMCACHED)
    assert restored["after"]["status"] == "superseded"
    assert (vault / MEMCACHED).read_bytes() == (EXAMPLE_VAULT / MEMCACHED).read_bytes()
    # Without a saved line, restore still makes the note active, whatever its status.
    (again,) = cli.json_lines("restore", MEMCACHED)
    assert again["before"] == {"status": "superseded"} and again["after"] == {"status": None}
    assert "status" not in meta(vault, MEMCACHED)


def test_forget_twice_keeps_the_first_prior_line(cli: Cli, vault: Path) -> None:
    raw = write(vault, "inbox/reading.md", READING)
    cli("forget", "inbox/reading.md")
    forgotten = (vault / "inbox/reading.md").read_bytes()
    (second,) = cli.json_lines("forget", "inbox/reading.md")
    assert second["changed"] is False
    assert (vault / "inbox/reading.md").read_bytes() == forgotten
    cli("restore", "inbox/reading.md")
    assert (vault / "inbox/reading.md").read_bytes() == raw


def test_a_status_changed_by_hand_after_forget_is_not_clobbered(cli: Cli, vault: Path) -> None:
    path = "inbox/reading.md"
    write(vault, path, READING)
    cli("forget", path)
    text = (vault / path).read_text()
    (vault / path).write_text(text.replace("status: forgotten  # mine", "status: done  # my call"))
    (restored,) = cli.json_lines("restore", path)
    # `done` is outside vaultmem's vocabulary: the user's key, which vaultmem does not read.
    assert restored["before"]["status"] is None
    assert restored["after"] == {"status": None, "status_before": None}
    assert (vault / path).read_text() == READING.replace("promoted  # mine", "done  # my call")


def test_a_comment_edited_on_the_forgotten_line_is_kept_by_restore(cli: Cli, vault: Path) -> None:
    path = "inbox/reading.md"
    write(vault, path, READING)
    cli("forget", path)
    text = (vault / path).read_text()
    (vault / path).write_text(text.replace("forgotten  # mine", "forgotten  # mine, for now"))
    cli("restore", path)
    assert (vault / path).read_text() == READING.replace("# mine", "# mine, for now")


@pytest.mark.parametrize(
    "status",
    [
        "status:   'promoted'    # odd spacing, quoted\n",
        "status: |  # header\n  promoted\n",
        "status:\n  promoted  # a plain scalar on its own line\n",
        '"status": superseded\n',
        "status:\n",
    ],
)
def test_restore_gives_back_odd_and_multi_line_status_exactly(
    cli: Cli, vault: Path, status: str
) -> None:
    path = "inbox/odd.md"
    raw = write(vault, path, f"---\ntitle: Odd\n{status}tags: [x]\n---\nBody.\n")
    cli("forget", path)
    assert meta(vault, path)["status"] == "forgotten"
    cli("restore", path)
    assert (vault / path).read_bytes() == raw


def test_crlf_and_frontmatter_free_notes_come_back_byte_for_byte(cli: Cli, vault: Path) -> None:
    crlf = write(vault, "inbox/crlf.md", READING, "\r\n")
    bare = write(vault, "inbox/bare.md", "# No frontmatter\r\n\r\nJust text.\r\n")
    cli("forget", "inbox/crlf.md", "inbox/bare.md")
    forgotten = (vault / "inbox/crlf.md").read_bytes()
    assert b'status_before: "status: promoted  # mine"\r\n' in forgotten
    assert b"\n" not in forgotten.replace(b"\r\n", b"")  # the note's line breaks only
    assert "status_before" not in meta(vault, "inbox/bare.md")  # there was no line to keep
    cli("restore", "inbox/crlf.md", "inbox/bare.md")
    assert (vault / "inbox/crlf.md").read_bytes() == crlf
    assert (vault / "inbox/bare.md").read_bytes() == bare


def test_a_keep_scalar_status_refuses_forget_in_one_line(cli: Cli, vault: Path) -> None:
    # Its value runs on over the blank lines after it, which a saved line cannot hold.
    raw = write(vault, "inbox/keep.md", "---\nstatus: |+\n  promoted\n\ntitle: K\n---\nBody.\n")
    result = cli("forget", "inbox/keep.md", ok=False)
    assert result.exit_code == 1 and result.stderr.count("\n") == 1
    assert "inbox/keep.md:2: status's lines cannot be kept for an undo" in result.stderr
    assert (vault / "inbox/keep.md").read_bytes() == raw


def test_a_saved_value_edited_into_something_else_is_reported_and_ignored(
    cli: Cli, vault: Path
) -> None:
    path = "inbox/reading.md"
    write(vault, path, READING)
    cli("forget", path)
    text = (vault / path).read_text()
    bad = 'status_before: "title: injected"'
    (vault / path).write_text(text.replace('status_before: "status: promoted  # mine"', bad))
    cli("index")
    shown = json.loads(cli("get", path, "--json").stdout)
    assert any("status_before:" in w and "treated as absent" in w for w in shown["warnings"])
    cli("restore", path)  # as without a saved line: status removed, and the bad copy
    after = meta(vault, path)
    assert "status" not in after and "status_before" not in after
    assert after["title"] == "Reading list"


# --------------------------------------------------------------------------- pin, snooze


def test_unpin_gives_back_the_users_own_pinned_line(cli: Cli, vault: Path) -> None:
    path = "inbox/review.md"
    raw = write(vault, path, "---\ntitle: Review\npinned: false  # review later\n---\nBody.\n")
    (pinned,) = cli.json_lines("pin", path)
    assert pinned["after"] == {"pinned": True, "pinned_before": "pinned: false  # review later"}
    assert meta(vault, path)["pinned"] is True
    (unpinned,) = cli.json_lines("unpin", path)
    assert unpinned["after"] == {"pinned": False, "pinned_before": None}
    assert (vault / path).read_bytes() == raw
    # A note without a pinned line saves nothing and loses the key again, as today.
    prefs = "preferences/Testing preferences.md"
    assert cli.json_lines("pin", prefs)[0]["after"] == {"pinned": True}
    cli("unpin", prefs)
    assert (vault / prefs).read_bytes() == (EXAMPLE_VAULT / prefs).read_bytes()


def test_unsnooze_gives_back_the_snooze_the_user_set(cli: Cli, vault: Path, now: datetime) -> None:
    path = "inbox/later.md"
    user_line = "snoozed_until: 2027-01-01  # after the move"
    raw = write(vault, path, f"---\ntitle: Later\n{user_line}\n---\nBody.\n")
    # The same end is written as a datetime, snoozed_until's one type (the date line saved).
    (same,) = cli.json_lines("snooze", path, "--until", "2027-01-01")
    assert same["after"]["snoozed_until"] == "2027-01-01T00:00:00+00:00"
    (snoozed,) = cli.json_lines("snooze", path, "--for", "3d")
    assert snoozed["after"] == {
        "snoozed_until": "2026-12-04T15:47:00+00:00",
        "snoozed_until_before": user_line,
    }
    cli("snooze", path, "--for", "30d")  # a second snooze keeps the first prior line
    (unsnoozed,) = cli.json_lines("unsnooze", path)
    assert unsnoozed["after"] == {"snoozed_until": "2027-01-01", "snoozed_until_before": None}
    assert (vault / path).read_bytes() == raw


def test_snoozing_twice_without_a_prior_line_then_unsnoozing_removes_it(
    cli: Cli, vault: Path, now: datetime
) -> None:
    path = "projects/Kubernetes migration.md"
    cli("snooze", path, "--until", "2026-12-24")
    # No line was replaced: that is saved too, or the second snooze could not tell the
    # first snooze's date from a user's.
    assert meta(vault, path)["snoozed_until_before"] == ""
    cli("snooze", path, "--for", "3d")
    assert cli.json_lines("unsnooze", path)[0]["after"] == {
        "snoozed_until": None,
        "snoozed_until_before": None,
    }
    assert (vault / path).read_bytes() == (EXAMPLE_VAULT / path).read_bytes()


# --------------------------------------------------------------------------- other doors


def test_api_change_is_the_same_undo(vault: Path) -> None:
    raw = write(vault, "inbox/reading.md", READING)
    assert run_vaultmem(vault, "index").returncode == 0
    opened = api.OpenVault(build(vault, {}))
    try:
        (done,) = api.change(opened, "forget", ["Reading list"], now=NOW)
        assert done.after == {"status": "forgotten", "status_before": "status: promoted  # mine"}
        (back,) = api.change(opened, "restore", ["Reading list"], now=NOW)
        assert back.after == {"status": "promoted", "status_before": None}
    finally:
        opened.close()
    assert (vault / "inbox/reading.md").read_bytes() == raw


def test_mcp_flag_forget_and_restore_are_an_undo(vault: Path) -> None:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    raw = write(vault, "inbox/reading.md", READING)
    assert run_vaultmem(vault, "index", "-q").returncode == 0
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "vaultmem", "--vault", str(vault), "mcp"],
        env=dict(os.environ),
    )
    answers: list[Any] = []

    async def main() -> None:
        with anyio.fail_after(60):
            async with Client(params, mode="legacy", read_timeout_seconds=30) as client:
                for action in ("forget", "restore"):
                    args = {"notes": ["inbox/reading.md"], "action": action}
                    answers.append(await client.call_tool("flag", args))

    anyio.run(main)
    assert not any(a.is_error for a in answers)
    forgot, restored = (json.loads(a.content[0].text) for a in answers)
    assert forgot[0]["after"]["status_before"] == "status: promoted  # mine"
    assert restored[0]["after"] == {"status": "promoted", "status_before": None}
    assert (vault / "inbox/reading.md").read_bytes() == raw


# --------------------------------------------------------------------------- the mechanism


def test_saved_lines_must_be_the_one_key_alone() -> None:
    assert saved_lines_problem("status", "status: promoted  # mine") is None
    assert saved_lines_problem("status", "status:\n  - a\n  - b") is None
    for text, why in [
        ("title: injected", "one 'status' key"),
        ("status: a\ntitle: b", "one 'status' key"),
        ("status: a\n...", "document marker"),
        ("status: a\n---\nb: 1", "document marker"),
        ("status: a\r\n", "carriage return"),
        ("status: *nowhere", "not YAML"),
        ("status: [", "not YAML"),
        ("status: |+\n  a", "keeps trailing blank lines"),
    ]:
        assert why in (saved_lines_problem("status", text) or ""), text
    assert owned_problem("status_before", "title: x") == "is not a status line vaultmem saved"
    assert owned_problem("status_before", "") is None  # "no line": nothing to report
    assert set(UNDO_KEYS) == {"status", "pinned", "snoozed_until"}


def test_replaced_lines_save_nothing_when_the_key_does_not_change() -> None:
    raw = b"---\nstatus: forgotten  # mine\n---\n"
    assert apply(raw, {"status": "forgotten", "status_before": ReplacedLines("status")}, "n") is raw
    with pytest.raises(ValueError, match="saved lines"):
        apply(raw, {"status": KeyLines("title: x")}, "n")
