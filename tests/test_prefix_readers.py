"""Under `[keys] prefix = "vm_"` every reader of vaultmem's state reads the prefixed keys:
`search` and `query` rank a pinned or forgotten note as such, and `timeline` dates the
notes by their `vm_created`/`vm_last_used`, the one not yet indexed too."""

from __future__ import annotations

from pathlib import Path

from conftest import Cli

from vaultmem.frontmatter.scan import parse_meta

KUBE = "projects/Kubernetes migration.md"
HELM = "decisions/Helm charts over Kustomize.md"
HARBOR = "Harbor.md"  # pinned in example-vault


def _migrated(cli: Cli, vault: Path) -> None:
    cli("keys", "migrate", "--prefix", "vm_", "--apply")
    cli("index")
    cli("forget", KUBE)
    cli("pin", HELM)
    for path in (KUBE, HELM, HARBOR):
        meta = parse_meta((vault / path).read_bytes(), path)[0]
        assert "vm_type" in meta and not {"status", "pinned", "type"} & set(meta)
    assert parse_meta((vault / HELM).read_bytes(), HELM)[0]["vm_pinned"] is True


def test_search_and_query_rank_by_the_prefixed_state(cli: Cli, vault: Path) -> None:
    _migrated(cli, vault)
    for command in ("search", "query"):
        hits = cli.json_lines(command, "kubernetes", "--limit", "10", "--explain")
        # `query --explain` puts the memory stage's part under "memory".
        memory = {h["path"]: h["explain"].get("memory", h["explain"]) for h in hits}
        by_path = {h["path"]: h for h in hits}
        assert KUBE not in by_path, command  # forgotten: out of the results
        assert memory[HELM]["pinned"] is True and memory[HARBOR]["pinned"] is True, command
        assert not memory["progress/Kubernetes migration progress.md"]["pinned"], command
        assert by_path[HELM]["type"] == "decision" and by_path[HARBOR]["type"] == "hub"
    # Restored, the note is back (its status read from vm_status again).
    cli("restore", KUBE)
    assert KUBE in {h["path"] for h in cli.json_lines("search", "kubernetes", "--limit", "10")}


def test_timeline_dates_prefixed_notes_indexed_or_not(cli: Cli, vault: Path) -> None:
    cli("keys", "migrate", "--prefix", "vm_", "--apply")
    cli("index")
    # A note written after the last index: `timeline` reads it from its file.
    fresh = "inbox/fresh.md"
    (vault / fresh).write_text(
        "---\nvm_type: decision\nvm_created: 2025-01-02T03:04:05Z\n"
        "vm_last_used: 2025-02-03T00:00:00Z\n---\n# Fresh one\nA new decision.\n",
        encoding="utf-8",
    )
    events = cli.json_lines("timeline", fresh, "--around", "0")
    got = {(e["kind"], e["when"]) for e in events if e["path"] == fresh}
    assert ("created", "2025-01-02T03:04:05Z") in got
    assert ("used", "2025-02-03T00:00:00Z") in got
    created = next(e for e in events if e["path"] == fresh and e["kind"] == "created")
    assert created["detail"] == "decision"
    # An indexed, migrated note keeps its created event (read from the index).
    events = cli.json_lines("timeline", KUBE, "--around", "0")
    born = [e["when"] for e in events if e["path"] == KUBE and e["kind"] == "created"]
    assert born == ["2026-10-05T09:30:00Z"]
