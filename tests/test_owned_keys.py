"""Keys that cannot collide (issue 19, item 2): a user's `status: reading` or `type: book`
is theirs (never read, never written); `[keys] prefix` and `keys migrate` give vaultmem
its own names; `init --obsidian-types` merges the types into Obsidian's types.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import Cli

from vaultmem.config import build
from vaultmem.errors import ConfigError
from vaultmem.frontmatter.scan import parse_meta
from vaultmem.index import manifest as mf
from vaultmem.memory_state import note_memory
from vaultmem.note import parse_note

BOOK = "---\ntitle: Dune\ntype: book\nstatus: reading  # mine\n---\nA book note.\n"


def _write(vault: Path, path: str, text: str) -> bytes:
    raw = text.encode()
    (vault / path).write_bytes(raw)
    return raw


def test_a_users_status_and_type_are_never_read() -> None:
    note = parse_note("b.md", BOOK.encode())
    # The type is absent; the status is shown as written, outside every sweep's statuses.
    assert (note.type, note.status) == ("note", "reading")
    assert note.owned == {} and note.warnings == ()
    entry = mf.entry_for(note)
    memory = note_memory("b.md", entry)
    assert not memory.typed and not memory.retired  # no ranking effect
    ours = parse_note("d.md", b"---\ntype: Decision\nstatus: archived\n---\nx\n")
    assert (ours.type, ours.status) == ("decision", "archived")


def test_forget_refuses_a_users_status_and_touch_leaves_it(cli: Cli, vault: Path) -> None:
    raw = _write(vault, "inbox/dune.md", BOOK)
    result = cli("forget", "inbox/dune.md", ok=False)
    assert result.exit_code == 1 and result.stderr.count("\n") == 1
    assert "'status: reading' is your key" in result.stderr and "prefix" in result.stderr
    assert (vault / "inbox/dune.md").read_bytes() == raw
    cli("touch", "inbox/dune.md")
    text = (vault / "inbox/dune.md").read_text()
    assert "type: book\nstatus: reading  # mine\n" in text and "use_count: 1" in text
    doctor = cli("doctor", ok=False).output
    assert "inbox/dune.md (status: reading): user's key, vaultmem ignores it" in doctor
    assert "inbox/dune.md (type: book): user's key, vaultmem ignores it" in doctor


def test_migrate_dry_run_then_apply_gives_vaultmem_its_own_keys(cli: Cli, vault: Path) -> None:
    kube = "projects/Kubernetes migration.md"
    _write(vault, "inbox/dune.md", BOOK)
    before = (vault / kube).read_bytes()
    plan = cli("keys", "migrate", "--prefix", "vm_").stdout
    assert f"{kube}: " in plan and "status -> vm_status" in plan and "dry run" in plan
    assert "inbox/dune.md" not in plan  # a user's keys do not move
    assert (vault / kube).read_bytes() == before
    cli("keys", "migrate", "--prefix", "vm_", "--apply")
    assert 'prefix = "vm_"' in (vault / ".vaultmem.toml").read_text()
    meta = parse_meta((vault / kube).read_bytes(), kube)[0]
    assert "status" not in meta and "type" not in meta and "vm_type" in meta
    assert cli("keys", "migrate", "--prefix", "vm_").stdout.startswith("0 notes")
    # Under the prefix the user's bare keys never meet vaultmem's: forget and restore work.
    raw = (vault / "inbox/dune.md").read_bytes()
    cli("forget", "inbox/dune.md")
    forgotten = (vault / "inbox/dune.md").read_text()
    assert "status: reading  # mine\n" in forgotten and "vm_status: forgotten" in forgotten
    cli("restore", "inbox/dune.md")
    assert (vault / "inbox/dune.md").read_bytes() == raw
    new = cli("remember", "Builds run on the arm64 runners.").output.strip().splitlines()[-1]
    written = parse_meta((vault / new).read_bytes(), new)[0]
    assert {"vm_type", "vm_created", "vm_status"} <= set(written) and "status" not in written


def test_init_merges_obsidian_types_keeping_the_users(cli: Cli, vault: Path) -> None:
    types = vault / ".obsidian" / "types.json"
    types.parent.mkdir(exist_ok=True)
    types.write_text(json.dumps({"types": {"status": "multitext", "rating": "number"}}))
    cli("init", str(vault))
    assert json.loads(types.read_text())["types"] == {"status": "multitext", "rating": "number"}
    cli("init", str(vault), "--obsidian-types")
    got = json.loads(types.read_text())["types"]
    assert got["status"] == "multitext" and got["rating"] == "number"  # the user's stay
    assert got["snoozed_until"] == "datetime" and got["pinned"] == "checkbox"
    assert got["related"] == "multitext" and got["use_count"] == "number"


def test_the_prefix_is_checked_and_names_keys(tmp_path: Path) -> None:
    config = build(tmp_path, {"keys": {"prefix": "vm_", "shared": ["related"]}})
    assert config.keys.name("status") == "vm_status" and config.keys.name("related") == "related"
    with pytest.raises(ConfigError, match="keys.prefix"):
        build(tmp_path, {"keys": {"prefix": "vm: "}})
    with pytest.raises(ConfigError, match="keys.shared"):
        build(tmp_path, {"keys": {"shared": ["tags"]}})
