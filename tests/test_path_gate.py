"""One gate for note paths: every command that takes a note accepts only notes of this vault.

Each command that names a note is run with names that leave the vault, point into an
excluded or never-read folder, or (for writes) reach through a symlink to a file outside;
each is refused in one line with exit 1, and no byte anywhere changes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import Cli

# Every command that takes a note, with X where the note goes.
WRITE_COMMANDS = [
    ("touch", "X"),
    ("observe", "X", "--tags", "ops"),
    ("pin", "X"),
    ("unpin", "X"),
    ("snooze", "X", "--for", "3d"),
    ("unsnooze", "X"),
    ("forget", "X"),
    ("restore", "X"),
    ("link", "Harbor", "X"),
    ("link", "X", "Harbor"),
    ("unlink", "Harbor", "X"),
    ("unlink", "X", "Harbor"),
    ("remember", "quokkas sleep in the shade", "--supersedes", "X"),
]
READ_COMMANDS = [("get", "X"), ("links", "X"), ("similar", "X")]

OUTSIDE = "quokka outside the vault\n"


def _hostile_vault(vault: Path) -> dict[str, str]:
    """Files a command must not touch, and the names that reach them: name -> why refused."""
    outside = vault.parent / "outside.md"
    outside.write_text(OUTSIDE, encoding="utf-8")
    for folder, text in ((".obsidian", "quokka obsidian\n"), (".trash", "quokka trash\n")):
        (vault / folder).mkdir(exist_ok=True)
        (vault / folder / ("x.md" if folder == ".obsidian" else "old.md")).write_text(text)
    (vault / "drafts").mkdir()
    (vault / "drafts" / "d.md").write_text("quokka draft\n", encoding="utf-8")
    (vault / ".vaultmem.toml").write_text('exclude = [".obsidian/**", "drafts/**"]\n')
    (vault / "linked.md").symlink_to(outside)
    (vault / "elsewhere").symlink_to(vault.parent, target_is_directory=True)
    return {
        "../outside.md": "../outside.md is outside the vault",
        str(outside): f"{outside} is outside the vault",
        "inbox/../../outside.md": "inbox/../../outside.md is outside the vault",
        "../nowhere.md": "../nowhere.md is outside the vault",
        ".obsidian/x.md": ".obsidian/x.md is not a note of this vault (excluded by '.obsidian/**')",
        ".trash/old.md": ".trash/old.md is not a note of this vault (.trash/ is never read)",
        "drafts/d.md": "drafts/d.md is not a note of this vault (excluded by 'drafts/**')",
        "elsewhere/outside.md": "(elsewhere/ is a symlinked folder)",
    }


def _snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    """Bytes and mtime of every file under ``root`` (the vault and its neighbours), cache aside."""
    out = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink() and ".vaultmem" not in path.parts:
            out[str(path.relative_to(root))] = (path.read_bytes(), path.stat().st_mtime_ns)
    return out


def _refused(cli: Cli, args: list[str], message: str) -> None:
    result = cli(*args, ok=False)
    assert result.exit_code == 1, (args, result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and message in lines[0], (args, result.stderr)
    assert result.stdout == ""


@pytest.mark.parametrize("command", WRITE_COMMANDS + READ_COMMANDS, ids=lambda c: " ".join(c))
def test_every_command_refuses_names_outside_the_vault(
    cli: Cli, vault: Path, command: tuple[str, ...]
) -> None:
    names = _hostile_vault(vault)
    cli("index")
    before = _snapshot(vault.parent)
    for name, message in names.items():
        _refused(cli, [name if a == "X" else a for a in command], message)
    assert _snapshot(vault.parent) == before
    # Nothing outside the vault reached the index either; the symlinked note is read.
    assert [h["path"] for h in cli.json_lines("search", "quokka")] == ["linked.md"]


@pytest.mark.parametrize("command", WRITE_COMMANDS, ids=lambda c: " ".join(c))
def test_a_symlink_out_of_the_vault_is_never_written(
    cli: Cli, vault: Path, command: tuple[str, ...]
) -> None:
    _hostile_vault(vault)
    cli("index")
    before = _snapshot(vault.parent)
    message = f"linked.md is a symlink to {vault.parent / 'outside.md'}, outside the vault"
    for name in ("linked.md", "linked", str(vault / "linked.md")):
        _refused(cli, [name if a == "X" else a for a in command], message)
    assert _snapshot(vault.parent) == before


def test_symlinked_notes_are_read_but_written_only_inside(cli: Cli, vault: Path) -> None:
    _hostile_vault(vault)
    (vault / "harbor-link.md").symlink_to("Harbor.md")
    assert cli("get", "linked.md").stdout == OUTSIDE
    assert cli("links", "linked").stdout.startswith("linked  [linked.md]")
    # The walk reads it too: search finds it, under its path in the vault.
    cli("index")
    assert [h["path"] for h in cli.json_lines("search", "quokka")] == ["linked.md"]
    assert cli("pin", "linked", ok=False).exit_code == 1
    cli("forget", "harbor-link.md")
    assert (vault / "harbor-link.md").is_symlink()
    assert "status: forgotten" in (vault / "Harbor.md").read_text(encoding="utf-8")


def test_dotdot_that_stays_inside_and_absolute_paths_inside_are_notes(
    cli: Cli, vault: Path
) -> None:
    cli("index")
    assert (
        "pinned decisions/Redis for caching.md"
        in cli("pin", "inbox/../decisions/Redis for caching.md").stdout
    )
    target = vault / "decisions" / "Helm charts over Kustomize.md"
    assert "forgot decisions/Helm charts over Kustomize.md" in cli("forget", str(target)).stdout
    paths = {h["path"] for h in cli.json_lines("search", "redis")}
    assert "decisions/Redis for caching.md" in paths
    assert not any(".." in p for p in paths)


def test_sweeps_never_write_through_a_symlink_out_of_the_vault(
    cli: Cli, vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """gc and promote pick notes from the walk, which reads symlinked notes: the same gate
    keeps them from archiving, marking or relinking a file outside the vault."""
    outside = vault.parent / "outside.md"
    outside.write_text("---\ncreated: 2020-01-01\n---\n[[Redis memory at 80 percent]]\n")
    (vault / "inbox" / "linked.md").symlink_to(outside)
    (vault / "linked2.md").symlink_to(outside)
    cli("index")
    before = outside.read_bytes()
    monkeypatch.setenv("VAULTMEM_NOW", "2030-01-01")
    result = cli("gc", ok=False)
    assert result.exit_code == 1
    refused = f"is a symlink to {outside}, outside the vault; vaultmem does not write it"
    assert f"vaultmem: inbox/linked.md: inbox/linked.md {refused}" in result.stderr
    # The archived inbox note was linked from the outside file: not relinked either.
    assert f"vaultmem: linked2.md: linked2.md {refused}" in result.stderr
    assert outside.read_bytes() == before
    assert (vault / "inbox" / "linked.md").is_symlink()


def test_note_path_says_why(tmp_path: Path) -> None:
    from vaultmem.config import build
    from vaultmem.errors import NoteError
    from vaultmem.vault import note_path

    vault = tmp_path / "vault"
    (vault / "notes").mkdir(parents=True)
    (vault / "notes" / "a.md").write_text("a\n")
    (tmp_path / "alias").symlink_to(vault, target_is_directory=True)
    config = build(vault, {"include": ["notes/**/*.md"], "cache_dir": "notes/cache"})
    assert note_path(config, "notes/./a.md", write=True) == "notes/a.md"
    # Through a symlink to the vault itself, an absolute path is still inside.
    assert note_path(config, str(tmp_path / "alias" / "notes" / "a.md"), write=True) == "notes/a.md"
    not_notes = {
        "a.md": "not matched by include ['notes/**/*.md']",
        "notes/cache/x.md": "it holds the index cache",
        "notes/.git/x.md": ".git/ is never read",
    }
    refusals = {n: f"{n} is not a note of this vault ({why})" for n, why in not_notes.items()}
    refusals[str(tmp_path / "x.md")] = f"{tmp_path / 'x.md'} is outside the vault"
    refusals[".."] = ".. is outside the vault"
    for name, message in refusals.items():
        with pytest.raises(NoteError) as caught:
            note_path(config, name, write=False)
        assert str(caught.value) == message
