"""One Obsidian type per owned key, whatever command writes it, and one YAML style for
new notes and edits (issue 19, item 3)."""

from __future__ import annotations

import subprocess
from datetime import date, datetime
from pathlib import Path
from typing import Any

from conftest import Cli

from vaultmem.frontmatter.render import render_value
from vaultmem.frontmatter.scan import parse_meta, split
from vaultmem.properties import OWNED_KEYS, PROPERTY_TYPES, PropType, coerce

STAGING = (
    "The staging database is Postgres 15 running on host db-stage-1 behind PgBouncer "
    "in transaction mode with nightly backups, a read replica on db-stage-2 for the "
    "reporting jobs, and a weekly restore drill that the platform team runs every "
    "Thursday afternoon."
)
KUBE = "projects/Kubernetes migration.md"
HARBOR = "Harbor.md"


def _is(kind: PropType, value: Any) -> bool:
    if kind is PropType.NUMBER:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind is PropType.CHECKBOX:
        return isinstance(value, bool)
    if kind is PropType.DATETIME:
        return isinstance(value, datetime) and value.utcoffset() is not None
    if kind is PropType.DATE:
        return isinstance(value, date) and not isinstance(value, datetime)
    if kind is PropType.MULTITEXT:
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    return isinstance(value, str)


def _metas(vault: Path) -> dict[str, dict[Any, Any]]:
    out = {}
    for path in vault.rglob("*.md"):
        if ".vaultmem" in path.parts:
            continue
        rel = path.relative_to(vault).as_posix()
        out[rel] = parse_meta(path.read_bytes(), rel)[0]
    return out


def test_the_table_covers_every_owned_key_once() -> None:
    assert tuple(PROPERTY_TYPES) == OWNED_KEYS
    assert PROPERTY_TYPES["snoozed_until"] is PropType.DATETIME
    assert coerce("snoozed_until", date(2026, 12, 20)) == coerce(
        "snoozed_until", datetime.fromisoformat("2026-12-20T00:00:00+00:00")
    )


def test_every_command_writes_each_owned_key_as_its_one_type(
    cli: Cli, vault: Path, monkeypatch: Any
) -> None:
    seen: dict[str, set[str]] = {}
    before = _metas(vault)

    def run(*args: str) -> None:
        nonlocal before
        cli(*args)
        after = _metas(vault)
        for path, meta in after.items():
            old = before.get(path, {})
            for key in OWNED_KEYS:
                if key in meta and (key not in old or old[key] != meta[key]):
                    value = meta[key]
                    kind = PROPERTY_TYPES[key]
                    assert _is(kind, value), f"{args[0]} wrote {key}: {value!r} in {path}"
                    seen.setdefault(args[0], set()).add(key)
        before = after

    days = iter(range(1, 10))
    for text in (STAGING, STAGING + " Kept in S3.", "Note: " + STAGING):
        monkeypatch.setenv("VAULTMEM_NOW", f"2026-11-{next(days):02d}T10:00:00Z")
        run("remember", text)
    monkeypatch.setenv("VAULTMEM_NOW", "2026-11-20T10:00:00Z")
    run("touch", "--confirm", KUBE)
    run("pin", KUBE)
    run("snooze", KUBE, "--until", "2026-12-20")
    run("snooze", HARBOR, "--for", "30d")
    run("forget", HARBOR)
    run("restore", HARBOR)
    run("link", KUBE, HARBOR)
    run("link", "--type", "supersedes", HARBOR, KUBE)
    for args in (("init", "-q"), ("add", "-A"), ("commit", "-qm", "seed")):
        subprocess.run(
            ["git", "-c", "user.email=t@t", "-c", "user.name=t", *args], cwd=vault, check=True
        )
    run("consolidate")
    # Both snoozes gave snoozed_until the same type: a datetime with its zone.
    metas = _metas(vault)
    assert isinstance(metas[KUBE]["snoozed_until"], datetime)
    assert isinstance(metas[HARBOR]["snoozed_until"], datetime)
    assert {"type", "created", "half_life", "status"} <= seen["remember"]
    assert {"use_count", "last_used", "confidence", "last_confirmed"} <= seen["touch"]
    assert {"snoozed_until"} <= seen["snooze"] and {"pinned"} <= seen["pin"]
    assert {"related", "supersedes", "superseded_by", "status"} <= seen["link"]
    assert "consolidate" in seen


def test_new_notes_and_edits_write_one_yaml_style(cli: Cli, vault: Path) -> None:
    first = cli("remember", STAGING, "--title", "Staging").output.strip().splitlines()[-1]
    # A near duplicate gets `refines: ["[[first]]"]` in the new note's frontmatter.
    second = cli("remember", STAGING + " Kept in S3.").output.strip().splitlines()[-1]
    cli("link", first, HARBOR)  # an edit: appends `related:` to the first note
    for path in (first, second):
        raw = (vault / path).read_bytes()
        meta, parts = parse_meta(raw, path)
        text = parts.frontmatter or ""
        # The new-note block is exactly what the edit serializer writes for its values.
        assert text == "".join(render_value(k, v) for k, v in meta.items())
        assert "'[[" not in text and "\n- " not in text
    assert '  - "[[' in split((vault / second).read_bytes()).frontmatter  # type: ignore[operator]
    assert '  - "[[' in split((vault / first).read_bytes()).frontmatter  # type: ignore[operator]
