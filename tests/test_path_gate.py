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
    # Excludes add to the defaults: taking .trash/** back leaves it never read all the same.
    (vault / ".vaultmem.toml").write_text('exclude = ["drafts/**", "!.trash/**"]\n')
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


# --------------------------------------------------------------------------- real paths

GIT_CONFIG = "[core]\n\trepositoryformatversion = 0\n\tbare = false\n# wombat\n"
WORKSPACE = '{"main": {"id": "wombat"}}\n'


def _planted_links(vault: Path) -> dict[str, str]:
    """A cloned vault's symlinks into places that are no notes: name -> why refused."""
    (vault / ".git").mkdir()
    (vault / ".git" / "config").write_text(GIT_CONFIG, encoding="utf-8")
    (vault / ".obsidian").mkdir(exist_ok=True)
    (vault / ".obsidian" / "workspace.json").write_text(WORKSPACE, encoding="utf-8")
    (vault / ".obsidian" / "hidden.md").write_text("wombat hidden\n", encoding="utf-8")
    secrets = vault.parent / "home" / ".ssh"
    secrets.mkdir(parents=True)
    keys = vault.parent / "home" / "keys"
    keys.mkdir()
    (keys / "id_rsa").write_text("wombat private key\n", encoding="utf-8")
    (secrets / "notes.md").write_text("wombat ssh notes\n", encoding="utf-8")
    (vault / "gitcfg.md").symlink_to(".git/config")
    (vault / "layout.md").symlink_to(".obsidian/workspace.json")
    (vault / "inbox" / "hidden.md").symlink_to("../.obsidian/hidden.md")
    (vault / "key.md").symlink_to(keys / "id_rsa")
    (vault / "sshnotes.md").symlink_to(secrets / "notes.md")
    (vault / ".vaultmem").mkdir(exist_ok=True)
    (vault / ".vaultmem" / "planted.md").write_text("wombat cache\n", encoding="utf-8")
    (vault / "cached.md").symlink_to(".vaultmem/planted.md")
    return {
        "gitcfg": "gitcfg.md is not a note of this vault (it is a symlink to .git/config:",
        "layout.md": "layout.md is not a note of this vault (it is a symlink to "
        ".obsidian/workspace.json:",
        "inbox/hidden.md": "inbox/hidden.md is not a note of this vault (it is a symlink to "
        ".obsidian/hidden.md:",
        "key.md": f"key.md is not a note of this vault (it is a symlink to {keys / 'id_rsa'}:",
        "sshnotes.md": "sshnotes.md is not a note of this vault (it is a symlink to "
        f"{secrets / 'notes.md'}, under .ssh/",
        "cached.md": "cached.md is not a note of this vault (it is a symlink into the index cache",
    }


def _protected_bytes(vault: Path) -> dict[str, bytes]:
    home = vault.parent / "home"
    files = [vault / ".git" / "config", vault / ".obsidian" / "workspace.json"]
    files += [vault / ".obsidian" / "hidden.md", home / "keys" / "id_rsa"]
    files += [home / ".ssh" / "notes.md"]
    return {str(f): f.read_bytes() for f in files}


@pytest.mark.parametrize("command", WRITE_COMMANDS + READ_COMMANDS, ids=lambda c: " ".join(c))
def test_a_symlink_into_a_protected_place_is_no_note(
    cli: Cli, vault: Path, command: tuple[str, ...]
) -> None:
    """`touch gitcfg` used to write frontmatter into .git/config; now the real path is
    judged too, for reads and writes, by every command."""
    names = _planted_links(vault)
    cli("index")
    before = _protected_bytes(vault)
    for name, message in names.items():
        result = cli(*[name if a == "X" else a for a in command], ok=False)
        assert result.exit_code == 1, (name, result.stdout, result.stderr)
        lines = result.stderr.splitlines()
        assert len(lines) == 1, (name, result.stderr)
        # A bare title (`gitcfg`) may fail as "no note called"; a path names the symlink.
        assert message in lines[0] or "no note called" in lines[0], (name, lines[0])
    assert _protected_bytes(vault) == before


def test_index_never_reads_a_protected_file_behind_a_symlink(cli: Cli, vault: Path) -> None:
    _planted_links(vault)
    cli("index")
    assert cli.json_lines("search", "wombat") == []
    assert cli.json_lines("search", "repositoryformatversion") == []
    status = cli("status", "--json").stdout
    for name in ("gitcfg.md", "layout.md", "key.md", "sshnotes.md", "cached.md"):
        assert name not in status


def test_the_api_doors_refuse_a_protected_symlink(vault: Path) -> None:
    """MCP's reinforce/flag and REST's routes call these same functions."""
    from datetime import UTC, datetime

    from vaultmem import api
    from vaultmem.config import build
    from vaultmem.errors import NoteError, NoteNotFound
    from vaultmem.model import RememberRequest

    _planted_links(vault)
    now = datetime(2026, 12, 1, tzinfo=UTC)
    opened = api.OpenVault(build(vault, {"embedder": "none"}))
    try:
        before = _protected_bytes(vault)
        for name in ("gitcfg.md", "layout.md", "key.md"):
            with pytest.raises((NoteError, NoteNotFound)):
                api.reinforce(opened, [name], now=now)
            with pytest.raises((NoteError, NoteNotFound)):
                api.change(opened, "pin", [name], now=now)
            with pytest.raises((NoteError, NoteNotFound)):
                api.get(opened, name)
            request = RememberRequest("wombats dig burrows", supersedes=name)
            with pytest.raises((NoteError, NoteNotFound)):
                api.remember(opened, request, now=now)
        assert _protected_bytes(vault) == before
    finally:
        opened.close()


def test_a_symlink_to_a_note_elsewhere_is_still_read(cli: Cli, vault: Path) -> None:
    """The rule keeps what worked: a link to a markdown note in the vault or outside it
    (not under a never-read folder) is read; a write only inside."""
    outside = vault.parent / "shared-notes"
    outside.mkdir()
    (outside / "team.md").write_text("numbat team note\n", encoding="utf-8")
    (vault / "team.md").symlink_to(outside / "team.md")
    (vault / "harbor-link.md").symlink_to("Harbor.md")
    cli("index")
    assert [h["path"] for h in cli.json_lines("search", "numbat")] == ["team.md"]
    assert cli("get", "team.md").stdout == "numbat team note\n"
    cli("pin", "harbor-link.md")
    assert "pinned: true" in (vault / "Harbor.md").read_text(encoding="utf-8")
