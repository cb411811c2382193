"""`keys migrate` takes nothing of the user's (issue 29): it records the prefix whether or
not `.vaultmem.toml` has a `[keys]` table, migrating back to bare keys is the exact
inverse, a user's value under one of vaultmem's names stays byte for byte, and `doctor`
names notes that carry a prefix the config does not."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import Cli

from vaultmem.frontmatter.scan import parse_meta

POSTGRES = "decisions/Use Postgres as primary store.md"
BOOK = (
    '---\ntitle: Dune\ncreated: 2019\nrelated: ["a chapter"]\nstatus: reading  # mine\n'
    "use_count: 2  # mine too\nlinks:\n  - x\n---\nA book note.\n"
)


def _snapshot(vault: Path) -> dict[str, bytes]:
    return {str(p.relative_to(vault)): p.read_bytes() for p in sorted(vault.rglob("*.md"))}


def _search_types(cli: Cli) -> list[str]:
    hits = cli.json_lines("search", "--type", "decision", "postgres")
    return [hit["path"] for hit in hits]


def test_migrate_beside_a_keys_table_records_the_prefix(cli: Cli, vault: Path) -> None:
    """Case 3: a `[keys]` table is there already (shared keys); the prefix goes into it."""
    toml = vault / ".vaultmem.toml"
    toml.write_text('# mine\n[keys]\nshared = ["created"]  # keep\n\n[folders]\ninbox = "inbox"\n')
    cli("index")
    assert POSTGRES in _search_types(cli)
    cli("keys", "migrate", "--prefix", "vm_", "--apply")
    assert toml.read_text() == (
        '# mine\n[keys]\nprefix = "vm_"\nshared = ["created"]  # keep\n\n'
        '[folders]\ninbox = "inbox"\n'
    )
    meta = parse_meta((vault / POSTGRES).read_bytes(), POSTGRES)[0]
    assert "vm_type" in meta and "created" in meta and "vm_created" not in meta  # shared
    assert POSTGRES in _search_types(cli)  # vaultmem reads its own state under the prefix
    report = json.loads(cli("doctor", "--json", ok=False).stdout)
    assert [f["severity"] for f in report["findings"] if f["check"] == "keys"] == ["ok"]
    # Back to bare keys: the config says so, and the next write is bare.
    cli("keys", "migrate", "--prefix", "", "--apply")
    assert "prefix" not in toml.read_text()
    cli("touch", POSTGRES)
    meta = parse_meta((vault / POSTGRES).read_bytes(), POSTGRES)[0]
    assert "use_count" in meta and not [k for k in meta if str(k).startswith("vm_")]


def test_migrating_there_and_back_gives_every_byte_back(cli: Cli, vault: Path) -> None:
    (vault / "inbox/dune.md").write_text(BOOK)
    (vault / "inbox/crlf.md").write_bytes(
        b'\xef\xbb\xbf---\r\nrelated: ["[[Harbor]]"]  # mine\r\n"status": archived\r\n---\r\nx\r\n'
    )
    cli("init", str(vault))
    toml = (vault / ".vaultmem.toml").read_bytes()
    before = _snapshot(vault)
    cli("keys", "migrate", "--prefix", "vm_", "--apply")
    moved = _snapshot(vault)
    assert moved["inbox/crlf.md"] == (
        b'\xef\xbb\xbf---\r\nvm_related: ["[[Harbor]]"]  # mine\r\n"vm_status": archived\r\n'
        b"---\r\nx\r\n"
    )
    assert sum(moved[p] != before[p] for p in before) > 40
    cli("keys", "migrate", "--prefix", "", "--apply")
    assert _snapshot(vault) == before
    assert (vault / ".vaultmem.toml").read_bytes() == toml


def test_a_users_values_under_vaultmems_names_stay_byte_for_byte(cli: Cli, vault: Path) -> None:
    """Case 4: `created: 2019` and `related: ["a chapter"]` are not vaultmem's shapes."""
    (vault / "inbox/dune.md").write_text(BOOK)
    plan = cli("keys", "migrate", "--prefix", "vm_").stdout
    assert "inbox/dune.md: use_count -> vm_use_count\n" in plan
    cli("keys", "migrate", "--prefix", "vm_", "--apply")
    assert (vault / "inbox/dune.md").read_text() == BOOK.replace("use_count:", "vm_use_count:")


def test_doctor_names_notes_that_carry_a_prefix_the_config_does_not(cli: Cli, vault: Path) -> None:
    cli("index")
    cli("keys", "migrate", "--prefix", "vm_", "--apply")
    (vault / ".vaultmem.toml").unlink()  # the config did not travel (or was never written)
    (vault / "people/Ana.md").write_text("---\ndoc_type: guide\nmy_created: 2024-01-02\n---\n")
    report = json.loads(cli("doctor", "--json", ok=False).stdout)
    (warn,) = [f for f in report["findings"] if f["check"] == "keys" and f["severity"] == "warn"]
    assert "under the prefix 'vm_'" in warn["message"] and "names bare keys" in warn["message"]
    assert warn["fix"].startswith("vaultmem keys migrate --prefix vm_ --apply (or, to keep")
    assert "--from vm_ --prefix '' --apply" in warn["fix"]
    cli("keys", "migrate", "--from", "vm_", "--prefix", "", "--apply")
    report = json.loads(cli("doctor", "--json", ok=False).stdout)
    assert not [f for f in report["findings"] if f["check"] == "keys" and f["severity"] == "warn"]
    assert POSTGRES in _search_types(cli)
