"""Per-note memory commands on a temp copy of example-vault/: remember, touch, observe,
pin/unpin, snooze/unsnooze, forget/restore."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from conftest import EXAMPLE_VAULT, Cli

from tests.conftest import copy_indexed
from vaultmem.frontmatter.scan import parse_meta
from vaultmem.memory.remember import NEAR_DUPLICATE, content_key, shingle_similarity, slugify
from vaultmem.scores import to_utc

NOW = datetime(2026, 11, 13, 15, 47, tzinfo=UTC)
REDIS_80 = "inbox/Redis memory at 80 percent.md"  # created 2026-11-10T15:47Z, half_life 3d
STRIPE = "inbox/Stripe API version header.md"
XDIST = "inbox/pytest-xdist port collisions.md"  # tags: testing, ci/github-actions


@pytest.fixture
def now(monkeypatch: pytest.MonkeyPatch) -> datetime:
    """Pin the CLI's clock."""
    monkeypatch.setenv("VAULTMEM_NOW", NOW.isoformat())
    return NOW


def meta(vault: Path, path: str) -> dict[Any, Any]:
    """The parsed frontmatter of a note."""
    return parse_meta((vault / path).read_bytes(), path)[0]


def body(vault: Path, path: str) -> str:
    """A note's body (after the frontmatter)."""
    return parse_meta((vault / path).read_bytes(), path)[1].body.decode("utf-8")


def files(vault: Path) -> set[str]:
    """Every markdown file of the vault."""
    return {p.relative_to(vault).as_posix() for p in vault.rglob("*.md")}


def snapshot(vault: Path, path: str) -> tuple[bytes, int]:
    """Bytes and mtime of a note: both must stay when a command changes nothing."""
    full = vault / path
    return full.read_bytes(), full.stat().st_mtime_ns


def last_line(out: str) -> str:
    """The path `remember` prints last."""
    return out.strip().splitlines()[-1]


def search_paths(cli: Cli, query: str, *extra: str) -> list[str]:
    """Paths of a `search --json`."""
    return [hit["path"] for hit in cli.json_lines("search", query, *extra)]


# --------------------------------------------------------------------------- remember


def test_remember_writes_an_inbox_note_that_search_finds_at_once(
    cli: Cli, vault: Path, now: datetime
) -> None:
    cli("index")
    out = cli(
        "remember",
        "Deploys freeze on Fridays after 3pm; hotfixes need two approvals.",
        "--title",
        "Deploy freeze",
        "--tags",
        "ops, #release",
        "--type",
        "observation",
    ).stdout
    path = last_line(out)
    assert path == "inbox/deploy-freeze.md"
    fm = meta(vault, path)
    assert list(fm) == ["title", "tags", "type", "created", "half_life", "status"]
    assert fm["title"] == "Deploy freeze" and fm["tags"] == ["ops", "release"]
    assert fm["type"] == "observation" and fm["half_life"] == "3d" and fm["status"] == "active"
    assert to_utc(fm["created"]) == now
    assert body(vault, path) == (
        "# Deploy freeze\n\nDeploys freeze on Fridays after 3pm; hotfixes need two approvals.\n"
    )
    hits = cli.json_lines("search", "deploys freeze fridays hotfixes", "-n", "3")
    assert hits[0]["path"] == path and hits[0]["title"] == "Deploy freeze"


def test_remember_without_title_names_the_file_after_the_first_clause(
    cli: Cli, vault: Path, now: datetime
) -> None:
    text = "Ana prefers squash merges for feature branches, and rebases for hotfixes only."
    path = last_line(cli("remember", text).stdout)
    assert path == "inbox/ana-prefers-squash-merges-for-feature-branches.md"
    fm = meta(vault, path)
    assert "title" not in fm and "tags" not in fm and fm["type"] == "note"
    assert body(vault, path) == f"# Ana prefers squash merges for feature branches\n\n{text}\n"


def test_remember_file_names_stay_unique(cli: Cli, vault: Path, now: datetime) -> None:
    first = last_line(cli("remember", "Cache warmup takes 4 minutes", "--title", "Warmup").stdout)
    second = last_line(
        cli("remember", "Staging has no warmup job at all", "--title", "warmup").stdout
    )
    third = last_line(cli("remember", "Nightly warmup skips EU shards", "--title", "Warmup").stdout)
    assert (first, second, third) == ("inbox/warmup.md", "inbox/warmup-2.md", "inbox/warmup-3.md")


def test_remember_folder_and_stdin(cli: Cli, vault: Path, now: datetime) -> None:
    text = "Piped memory from a hook.\n\n- first point\n- second point\n\n"
    path = last_line(cli("remember", "-", "--folder", "scratch/agent", input=text).stdout)
    assert path == "scratch/agent/piped-memory-from-a-hook.md"
    assert body(vault, path) == (
        "# Piped memory from a hook\n\nPiped memory from a hook.\n\n- first point\n- second point\n"
    )


def test_exact_duplicate_in_the_inbox_creates_nothing_and_reinforces(
    cli: Cli, vault: Path, now: datetime
) -> None:
    before = files(vault)
    # Same words as the note's body, heading left out, case, spacing and end punctuation
    # changed: still the same memory.
    text = "   " + " ".join(body(vault, STRIPE).split("\n", 2)[2].upper().split()) + " !!"
    result = cli("remember", text)
    assert files(vault) == before
    assert f"duplicate of {STRIPE}, reinforced" in result.stdout
    assert last_line(result.stdout) == STRIPE
    fm = meta(vault, STRIPE)
    assert fm["use_count"] == 1 and to_utc(fm["last_used"]) == now
    assert cli.json_lines("remember", text)[0]["reinforced"]["use_count"] == 2


def test_exact_duplicate_anywhere_is_found_through_the_index(
    cli: Cli, vault: Path, now: datetime
) -> None:
    cli("index")
    target = "decisions/Redis for caching.md"
    before = files(vault)
    done = cli.json_lines("remember", body(vault, target))[0]
    assert done == {**done, "path": target, "created": False, "duplicate_of": target}
    assert files(vault) == before and meta(vault, target)["use_count"] == 1


def test_near_duplicate_is_written_and_refines_the_other(
    cli: Cli, vault: Path, now: datetime
) -> None:
    original = body(vault, REDIS_80)
    text = original.replace("alert at 75%", "alert at 70%").replace("twice the cost", "2x cost")
    assert content_key(text) != content_key(original)
    assert shingle_similarity(text, original) >= NEAR_DUPLICATE
    done = cli.json_lines("remember", text, "--title", "Redis memory again")[0]
    assert done["created"] and done["refines"][0]["path"] == REDIS_80
    assert meta(vault, done["path"])["refines"] == ["[[Redis memory at 80 percent]]"]
    assert "use_count" not in meta(vault, REDIS_80)


PORT_MOVED = (
    "The {} service listens on port 3100 since the ingress change last week, so update "
    "the firewall rules and the load balancer health checks before the next deploy."
)


def test_a_near_duplicate_tagged_on_another_subject_refines_nothing(
    cli: Cli, vault: Path, now: datetime
) -> None:
    checkout = PORT_MOVED.format("checkout")
    assert shingle_similarity(PORT_MOVED.format("billing"), checkout) >= NEAR_DUPLICATE
    first = last_line(cli("remember", checkout, "--tags", "ops,checkout").stdout)
    other = cli.json_lines("remember", PORT_MOVED.format("billing"), "--tags", "ops,billing")[0]
    assert other["refines"] == [] and "refines" not in meta(vault, other["path"])
    # Tags on one subject (or none on the new memory): the link is written as before.
    same = cli.json_lines("remember", checkout + " Really.", "--tags", "checkout,ops")[0]
    untagged = cli.json_lines("remember", PORT_MOVED.format("checkout") + " Noted.")[0]
    for done in (same, untagged):
        assert first in [r["path"] for r in done["refines"]], done


def test_unrelated_text_gets_no_refines(cli: Cli, vault: Path, now: datetime) -> None:
    cli("index")
    path = last_line(cli("remember", "Redis memory is fine after the cleanup last week").stdout)
    assert "refines" not in meta(vault, path)


def test_supersedes_writes_both_ends(cli: Cli, vault: Path, now: datetime) -> None:
    cli("index")
    old = "decisions/Memcached for session cache.md"
    out = cli("remember", "Sessions moved to Redis", "--supersedes", "Memcached for session cache")
    path = last_line(out.stdout)
    assert f"supersedes {old}" in out.stdout
    assert meta(vault, path)["supersedes"] == ["[[Memcached for session cache]]"]
    old_meta = meta(vault, old)
    assert old_meta["status"] == "superseded"
    # The link it already had is kept, the new one appended.
    assert old_meta["superseded_by"] == ["[[Redis for caching]]", "[[sessions-moved-to-redis]]"]
    assert search_paths(cli, "sessions moved redis")[0] == path


def test_supersedes_a_note_it_cannot_edit_writes_nothing(
    cli: Cli, vault: Path, now: datetime
) -> None:
    (vault / "broken.md").write_text("---\ntitle: [unclosed\n---\nold text\n", "utf-8")
    before = files(vault)
    result = cli("remember", "New text", "--supersedes", "broken.md", ok=False)
    assert result.exit_code == 1 and "broken.md:3: invalid YAML" in result.stderr
    assert files(vault) == before


def test_the_vault_can_override_the_memory_template(cli: Cli, vault: Path, now: datetime) -> None:
    override = vault / ".vaultmem" / "templates" / "memory.md.j2"
    override.parent.mkdir(parents=True)
    override.write_text("---\n{{ frontmatter }}---\n{{ text }}\n\nsource:: agent\n", "utf-8")
    cli("trust")  # a vault's templates are used once the user trusts it
    path = last_line(cli("remember", "Templated memory", "--title", "T").stdout)
    assert body(vault, path) == "Templated memory\n\nsource:: agent\n"
    assert meta(vault, path)["title"] == "T"
    override.write_text("no frontmatter {{ text }}\n", "utf-8")
    cli("trust")  # changed: trusted again
    result = cli("remember", "Another memory", ok=False)
    assert result.exit_code == 1 and "memory.md.j2" in result.stderr
    assert not (vault / "inbox" / "another-memory.md").exists()


def test_remember_usage_errors_exit_2(cli: Cli, vault: Path) -> None:
    before = files(vault)
    assert cli("remember", "  ", ok=False).exit_code == 2
    assert cli("remember", "-", input="\n\n", ok=False).exit_code == 2
    bad = cli("remember", "text", "--type", "thought", ok=False)
    assert bad.exit_code == 2 and "decision" in bad.stderr
    missing = cli("remember", "text", "--supersedes", "no such note", ok=False)
    assert missing.exit_code == 1 and "no note called" in missing.stderr
    escape = cli("remember", "text", "--folder", "../outside", ok=False)
    assert escape.exit_code == 1 and "inside the vault" in escape.stderr
    assert files(vault) == before


def test_slugify() -> None:
    assert slugify("Deploy freeze: 3pm [Fridays] #ops") == "deploy-freeze-3pm-fridays-ops"
    assert slugify("渡辺 健二のメモ") == "渡辺-健二のメモ"
    assert slugify("!!!") == "memory"
    assert len(slugify("word " * 40)) <= 60


# --------------------------------------------------------------------------- touch / observe


def test_touch_reinforces_and_reports_scores_by_hand(cli: Cli, vault: Path, now: datetime) -> None:
    created = meta(vault, REDIS_80)["created"]
    (done,) = cli.json_lines("touch", "Redis memory at 80 percent")
    # Δt = 3 days = one half-life, use_count 0: s = 1^0.6 · e^(−ln2) · 1 = 0.5;
    # after the touch Δt = 0 and use_count 1: s = 1.
    assert done["path"] == REDIS_80 and done["use_count_before"] == 0 and done["use_count"] == 1
    assert math.isclose(done["score_before"], 0.5, abs_tol=1e-6)
    assert math.isclose(done["score_after"], 1.0, abs_tol=1e-6)
    fm = meta(vault, REDIS_80)
    assert fm["use_count"] == 1 and fm["review_count"] == 1
    assert to_utc(fm["last_used"]) == now and to_utc(fm["last_review"]) == now
    assert fm["created"] == created and "strength" not in fm


def test_second_touch_three_days_later(
    cli: Cli, vault: Path, now: datetime, monkeypatch: pytest.MonkeyPatch
) -> None:
    cli("touch", REDIS_80)
    monkeypatch.setenv("VAULTMEM_NOW", (now + timedelta(days=3)).isoformat())
    out = cli("touch", REDIS_80).stdout
    # before: use_count 1, 3 days since last use: 0.5; after: 2^0.6 = 1.516
    assert out == f"touched {REDIS_80}: use_count 1 → 2, decay score 0.500 → 1.516\n"
    assert meta(vault, REDIS_80)["use_count"] == 2


def test_touch_never_invents_created(cli: Cli, vault: Path, now: datetime) -> None:
    path = "reference/Useful kubectl commands.md"  # no frontmatter at all
    old_body = (vault / path).read_bytes()
    cli("touch", path)
    fm = meta(vault, path)
    assert "created" not in fm and fm["use_count"] == 1
    assert (vault / path).read_bytes().endswith(old_body)


def test_observe_with_disjoint_tags_raises_strength(cli: Cli, vault: Path, now: datetime) -> None:
    (done,) = cli.json_lines("observe", XDIST, "--tags", "payments,webhooks")
    assert done["cross_domain"] and done["strength_before"] == 1.0 and done["strength"] == 1.1
    fm = meta(vault, XDIST)
    assert fm["strength"] == 1.1 and fm["cross_domain_count"] == 1 and fm["use_count"] == 1
    out = cli("observe", XDIST, "--tags", "payments").stdout
    assert "strength 1.1 → 1.2 (cross-domain)" in out
    assert meta(vault, XDIST)["strength"] == 1.2


def test_observe_in_the_notes_own_domain_adds_no_strength(
    cli: Cli, vault: Path, now: datetime
) -> None:
    (done,) = cli.json_lines("observe", XDIST, "--tags", "testing,ci/github-actions")
    assert not done["cross_domain"] and done["strength"] == 1.0
    fm = meta(vault, XDIST)
    assert "strength" not in fm and "cross_domain_count" not in fm and fm["use_count"] == 1


def test_touch_several_notes_one_json_object_each(cli: Cli, now: datetime) -> None:
    done = cli.json_lines("touch", REDIS_80, "Stripe API version header", REDIS_80)
    assert [d["path"] for d in done] == [REDIS_80, STRIPE]


# --------------------------------------------------------------------------- flags


def test_pin_and_unpin(cli: Cli, vault: Path) -> None:
    path = "preferences/Testing preferences.md"
    cli("index")  # aliases are known from the index
    assert "pinned" not in meta(vault, path)
    assert cli("pin", "how I test").stdout == f"pinned {path} (pinned: - → true)\n"
    assert meta(vault, path)["pinned"] is True
    before = snapshot(vault, path)
    assert "already pinned" in cli("pin", path).stdout
    assert snapshot(vault, path) == before
    assert cli.json_lines("unpin", path)[0] == {
        "path": path,
        "action": "unpin",
        "changed": True,
        "before": {"pinned": True},
        "after": {"pinned": None},
    }
    assert "pinned" not in meta(vault, path)
    assert (vault / path).read_bytes() == (EXAMPLE_VAULT / path).read_bytes()
    assert "not pinned" in cli("unpin", path).stdout


def test_nothing_rewritten_when_nothing_changes(cli: Cli, vault: Path) -> None:
    # Harbor is pinned and active already; Testing preferences has no snooze or status.
    cli("index")
    harbor = snapshot(vault, "Harbor.md")
    prefs = snapshot(vault, "preferences/Testing preferences.md")
    for args in (("pin", "Harbor"), ("restore", "Harbor"), ("unsnooze", "how I test")):
        assert cli.json_lines(*args)[0]["changed"] is False
    assert cli.json_lines("unpin", "how I test")[0]["changed"] is False
    assert snapshot(vault, "Harbor.md") == harbor
    assert snapshot(vault, "preferences/Testing preferences.md") == prefs


def test_snooze_until_and_for_and_unsnooze(cli: Cli, vault: Path, now: datetime) -> None:
    path = "projects/Kubernetes migration.md"
    cli("snooze", "Kubernetes migration", "--until", "2026-12-01")
    # One type, a datetime, for --until DATE and --for alike (its midnight UTC).
    assert meta(vault, path)["snoozed_until"] == datetime(2026, 12, 1, tzinfo=UTC)
    assert "already snoozed" in cli("snooze", path, "--until", "2026-12-01").stdout
    cli("snooze", path, "--for", "30d")
    assert to_utc(meta(vault, path)["snoozed_until"]) == now + timedelta(days=30)
    cli("snooze", path, "--until", "2026-12-24T09:30:00+02:00")
    assert to_utc(meta(vault, path)["snoozed_until"]) == datetime(2026, 12, 24, 7, 30, tzinfo=UTC)
    assert "unsnoozed" in cli("unsnooze", path).stdout
    assert "snoozed_until" not in meta(vault, path)


@pytest.mark.parametrize(
    "args",
    [
        ("--until", "2026-12-01", "--for", "3d"),
        (),
        ("--until", "next tuesday"),
        ("--until", "2026-02-30"),
        ("--for", "soon"),
        ("--for", "never"),
        ("--until", "2020-01-01"),
    ],
)
def test_snooze_bad_values_exit_2(cli: Cli, vault: Path, now: datetime, args: tuple) -> None:
    path = "projects/Kubernetes migration.md"
    before = snapshot(vault, path)
    result = cli("snooze", path, *args, ok=False)
    assert result.exit_code == 2 and "--until" in result.stderr
    assert snapshot(vault, path) == before


def test_forget_hides_from_search_and_restore_brings_back(cli: Cli, vault: Path) -> None:
    path = "research/Rate limiting options.md"
    cli("index")
    assert path in search_paths(cli, "GCRA rate limiting")
    assert cli("forget", "Rate limiting options").stdout.startswith(f"forgot {path}")
    assert meta(vault, path)["status"] == "forgotten"
    assert path not in search_paths(cli, "GCRA rate limiting")
    assert search_paths(cli, "GCRA rate limiting", "--status", "forgotten") == [path]
    assert "already forgotten" in cli("forget", path).stdout
    cli("restore", path)
    assert "status" not in meta(vault, path)
    assert path in search_paths(cli, "GCRA rate limiting")
    assert (vault / path).read_bytes() == (EXAMPLE_VAULT / path).read_bytes()


def test_restore_a_superseded_note(cli: Cli, vault: Path) -> None:
    path = "decisions/Memcached for session cache.md"
    (done,) = cli.json_lines("restore", path)
    assert done["before"] == {"status": "superseded"} and done["after"] == {"status": None}
    assert "status" not in meta(vault, path)


def test_unknown_note_exits_1_and_changes_nothing(cli: Cli, vault: Path) -> None:
    before = snapshot(vault, REDIS_80)
    for command in ("touch", "observe", "pin", "unpin", "unsnooze", "forget", "restore"):
        result = cli(command, REDIS_80, "no such note anywhere", ok=False)
        assert result.exit_code == 1, command
        assert result.stderr.count("\n") == 1 and "no note called" in result.stderr
    assert cli("snooze", "nope", "--for", "1d", ok=False).exit_code == 1
    assert snapshot(vault, REDIS_80) == before


def test_every_mutation_keeps_the_note_parseable_and_indexed(cli: Cli, vault: Path) -> None:
    cli("index")
    cli("pin", STRIPE)
    cli("touch", STRIPE)
    status = json.loads(cli("status", "--json").stdout)
    assert status["stale"] == 0


def _swap_pairs(text: str) -> str:
    """Every two adjacent words swapped: no 3-word run survives, the meaning does."""
    words = text.split()
    for i in range(0, len(words) - 1, 2):
        words[i], words[i + 1] = words[i + 1], words[i]
    return " ".join(words)


def test_near_duplicate_by_vector_when_the_vault_has_vectors(
    embedded_example: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    vault = tmp_path / "vault"
    copy_indexed(embedded_example, vault)
    target = "inbox/Redis memory at 80 percent.md"
    body = (vault / target).read_text(encoding="utf-8").split("\n\n", 1)[1]
    text = _swap_pairs(body)
    # Without vectors the shingle check alone finds nothing: a new, unlinked memory.
    none = Cli(vault).json_lines("remember", text, "--title", "Replica memory A")
    assert none[0]["refines"] == []
    monkeypatch.delenv("VAULTMEM_EMBEDDER")  # the in-process MiniLM, as a user has it
    # Worded apart from A (else it is A's exact duplicate): refines A by shingles, and
    # the original note by vector.
    got = Cli(vault).json_lines("remember", text + " Seen again.", "--title", "Replica B")[0]
    kinds = {r["path"]: (r["kind"], r["similarity"]) for r in got["refines"]}
    assert kinds[target][0] == "cosine" and kinds[target][1] >= 0.92
    meta, _ = parse_meta((vault / got["path"]).read_bytes(), got["path"])
    assert "[[Redis memory at 80 percent]]" in meta["refines"]
