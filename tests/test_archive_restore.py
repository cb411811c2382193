"""`restore` of a note `gc` archived puts it back in the folder it came from (issue 29,
case 6): `gc` records where it took the note from in the note itself (`archived_from`,
the vault is the only state) and keeps the status line it replaced; a note archived
before that was recorded goes back to its path under the archive folder; a recorded
place that is no note path of the vault is refused."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest
from conftest import Cli
from test_sweeps import DECAYED, NOW, iso, meta_of, write

from vaultmem.index import manifest as mf


@pytest.fixture
def now(monkeypatch: pytest.MonkeyPatch) -> datetime:
    monkeypatch.setenv("VAULTMEM_NOW", iso(NOW))
    return NOW


def test_restore_moves_an_archived_note_back_where_it_came_from(
    tmp_path: Path, now: datetime
) -> None:
    vault = tmp_path / "v"
    note = write(vault, "notes/old-superseded.md", status="superseded  # mine", **DECAYED)
    before = note.read_bytes()
    cli = Cli(vault)
    cli("index")
    (line,) = cli.json_lines("gc")
    assert line["target"] == "archive/notes/old-superseded.md"
    archived = meta_of(vault / line["target"])
    assert archived["status"] == "archived"
    assert archived["archived_from"] == "notes/old-superseded.md"
    assert archived["status_before"] == "status: superseded  # mine"

    out = cli("restore", "archive/notes/old-superseded.md").stdout
    assert out.startswith("restored archive/notes/old-superseded.md to notes/old-superseded.md")
    assert not (vault / "archive/notes/old-superseded.md").exists()
    assert note.read_bytes() == before  # every byte, the status line with its comment
    entries = mf.load(vault / ".vaultmem").entries
    assert "notes/old-superseded.md" in entries and "archive/notes/old-superseded.md" not in entries
    assert entries["notes/old-superseded.md"].status == "superseded"


def test_a_note_archived_before_the_origin_was_recorded_goes_back_by_its_path(
    tmp_path: Path, now: datetime
) -> None:
    vault = tmp_path / "v"
    write(vault, "archive/inbox/stale.md", status="archived", **DECAYED)
    write(vault, "inbox/taken.md")
    write(vault, "archive/inbox/taken.md", status="archived", **DECAYED)
    cli = Cli(vault)
    done = cli.json_lines("restore", "archive/inbox/stale.md", "archive/inbox/taken.md")
    assert [(d["path"], d["moved_to"]) for d in done] == [
        ("archive/inbox/stale.md", "inbox/stale.md"),
        ("archive/inbox/taken.md", "inbox/taken-2.md"),  # a note is there now: beside it
    ]
    assert "status" not in meta_of(vault / "inbox/stale.md")  # active
    assert (vault / "inbox/taken.md").read_text().startswith("# taken")


@pytest.mark.parametrize("origin", ["../outside.md", ".git/config.md", "/etc/x.md"])
def test_a_recorded_place_outside_the_vaults_notes_is_refused(
    tmp_path: Path, now: datetime, origin: str
) -> None:
    vault = tmp_path / "v"
    (vault / ".git").mkdir(parents=True)
    note = write(vault, "archive/a.md", status="archived", archived_from=f'"{origin}"')
    raw = note.read_bytes()
    result = Cli(vault)("restore", "archive/a.md", ok=False)
    if origin != ".git/config.md":  # no vault path at all: read as absent, as any bad value
        assert result.exit_code == 0 and (vault / "a.md").exists()
        return
    assert result.exit_code == 1 and "cannot restore it to where it came from" in result.stderr
    assert note.read_bytes() == raw and not (tmp_path / "outside.md").exists()
