"""The source systems' knobs (issue 32, items 11-12): CortexGraph's thresholds, β, danger
zone and auto-reinforcement as `[memory]` keys, checked like every key; and ClawMem's
exemption of durable kinds of notes from confidence decay."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from conftest import Cli
from test_feedback import SESSION, _transcript

from vaultmem.config import ConfigError, load

NOW = "2026-11-30T00:00:00Z"


def _note(vault: Path, path: str, *, days_old: int, kind: str = "note", uses: int = 0) -> None:
    created = (datetime(2026, 11, 30, tzinfo=UTC) - timedelta(days=days_old)).isoformat()
    front = f"type: {kind}\ncreated: {created}\n" + (f"use_count: {uses}\n" if uses else "")
    (vault / path).parent.mkdir(parents=True, exist_ok=True)
    (vault / path).write_text(f"---\n{front}---\nA note {days_old} days old.\n", "utf-8")


def _config(vault: Path, toml: str, env: dict[str, str] | None = None):  # noqa: ANN202
    (vault / ".vaultmem.toml").write_text(toml, "utf-8")
    return load(vault_flag=str(vault), env={"HOME": str(vault.parent), **(env or {})}, cwd=vault)


def test_the_keys_default_to_cortexgraphs_values_and_are_known(tmp_path: Path) -> None:
    from vaultmem.tuning import DEFAULT_TUNING

    vault = tmp_path / "v"
    vault.mkdir()
    config = _config(vault, "")
    assert config.tuning == DEFAULT_TUNING
    t = config.tuning
    assert (t.beta, t.promote_threshold, t.promote_use_count) == (0.6, 0.65, 5)
    assert (t.promote_window, t.forget_threshold) == (timedelta(days=14), 0.05)
    assert (t.danger_zone, t.auto_reinforce) == ((0.15, 0.35), True)
    toml = (
        "[memory]\nbeta = 0.3\npromote_threshold = 0.7\npromote_use_count = 3\n"
        'promote_window = "7d"\nforget_threshold = 0.1\ndanger_zone_min = 0.1\n'
        "danger_zone_max = 0.4\nauto_reinforce = false\n"
    )
    config = _config(vault, toml)
    assert config.warnings == ()  # before: "unknown key 'memory.beta' … (ignored)"
    t = config.tuning
    assert (t.beta, t.promote_threshold, t.promote_use_count) == (0.3, 0.7, 3)
    assert (t.promote_window, t.forget_threshold) == (timedelta(days=7), 0.1)
    assert (t.danger_zone, t.auto_reinforce) == ((0.1, 0.4), False)
    env = {"VAULTMEM_PROMOTE_THRESHOLD": "0.8", "VAULTMEM_REVIEW_DANGER_ZONE_MAX": "0.3"}
    t = _config(vault, toml, env).tuning
    assert (t.promote_threshold, t.danger_zone) == (0.8, (0.1, 0.3))


@pytest.mark.parametrize(
    ("toml", "said"),
    [
        ("beta = -1", "memory.beta: expected a number >= 0"),
        ('beta = "lots"', "memory.beta: expected a number"),
        ("promote_threshold = 0", "memory.promote_threshold: expected a number > 0"),
        ("promote_use_count = 0", "memory.promote_use_count: expected an integer >= 1"),
        ('promote_window = "soon"', "memory.promote_window: expected a duration"),
        ("forget_threshold = 0.7", "memory.forget_threshold (0.7) must be below"),
        ("danger_zone_min = 0.5", "memory.danger_zone_min (0.5) must be below"),
        ("danger_zone_max = 1.5", "memory.danger_zone_max: expected a number from 0 to 1"),
        ('auto_reinforce = "maybe"', "memory.auto_reinforce: expected true or false"),
    ],
)
def test_a_bad_value_names_its_key(tmp_path: Path, toml: str, said: str) -> None:
    vault = tmp_path / "v"
    vault.mkdir()
    with pytest.raises(ConfigError, match=said.replace("(", r"\(").replace(")", r"\)")):
        _config(vault, f"[memory]\n{toml}\n")


def test_the_thresholds_and_the_danger_zone_steer_gc_review_and_promote(
    cli: Cli, vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VAULTMEM_NOW", NOW)
    _note(vault, "inbox/faded.md", days_old=200)  # 2^(-200/60): score 0.099
    # Used 3 times on its first day (the score rule waits a day: the usage rule decides).
    _note(vault, "inbox/used.md", days_old=0, uses=3)

    def planned(*args: str) -> set[str]:
        return {json.loads(x)["path"] for x in cli(*args, "--json").stdout.splitlines()}

    assert "inbox/faded.md" not in planned("gc", "--dry-run")  # 0.099 > 0.05
    assert "inbox/faded.md" not in planned("review")  # 0.099 < 0.15
    assert "inbox/used.md" not in planned("promote", "--dry-run")  # 3 uses < 5
    monkeypatch.setenv("VAULTMEM_FORGET_THRESHOLD", "0.12")
    monkeypatch.setenv("VAULTMEM_REVIEW_DANGER_ZONE_MIN", "0.05")
    monkeypatch.setenv("VAULTMEM_PROMOTE_USE_COUNT", "3")
    assert "inbox/faded.md" in planned("gc", "--dry-run")
    assert "inbox/faded.md" in planned("review")
    assert "inbox/used.md" in planned("promote", "--dry-run")
    # β weighs use: 4 uses score 4^0.6 = 2.30 just after a touch; with β = 0, 1.
    touched = json.loads(cli("touch", "inbox/used.md", "--json").stdout)
    assert touched["score_after"] == pytest.approx(4**0.6, abs=0.01)
    monkeypatch.setenv("VAULTMEM_DECAY_BETA", "0")
    touched = json.loads(cli("touch", "inbox/used.md", "--json").stdout)
    assert touched["score_after"] == pytest.approx(1.0, abs=0.01)


def test_auto_reinforce_false_leaves_the_session_end_to_the_user(
    cli: Cli, vault: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from test_feedback import NOW as FEEDBACK_NOW
    from test_feedback import POOLING, PROMPT

    monkeypatch.setenv("VAULTMEM_NOW", FEEDBACK_NOW)
    cli("index")
    cli("surface", PROMPT, "--session", SESSION, "--json")
    transcript = _transcript(tmp_path, "Per the PgBouncer connection pooling note, use it.")
    monkeypatch.setenv("VAULTMEM_AUTO_REINFORCE", "false")
    done = json.loads(cli("feedback", str(transcript), "--json").stdout)
    assert done["reinforced"] == [] and POOLING in [u["path"] for u in done["used"]]
    asked = json.loads(cli("feedback", str(transcript), "--max", "5", "--json").stdout)
    assert asked["reinforced"] == [POOLING]


# --- 12. ClawMem's values ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "fades"),
    [("decision", False), ("hub", False), ("research", False), ("antipattern", False)]
    + [("note", True), ("project", True), ("progress", True), ("handoff", True)],
)
def test_durable_kinds_keep_their_confidence_unconfirmed(kind: str, fades: bool) -> None:
    from vaultmem.index.manifest import Entry
    from vaultmem.memory_state import note_memory

    now = datetime(2026, 11, 30, tzinfo=UTC)
    keys = {"confidence": 0.85, "created": (now - timedelta(weeks=10)).isoformat()}
    memory = note_memory("x.md", Entry(0, 0, "", "x", type=kind, memory=keys))
    # 10 weeks unconfirmed: 0.2 + 0.65·0.95^6 = 0.6778 where trust fades (ClawMem: "Decision/
    # hub/research/antipattern are exempt" from attention decay).
    expected = 0.2 + 0.65 * 0.95**6 if fades else 0.85
    assert memory.effective_confidence(now) == pytest.approx(expected)


# --- 14. fixed_by: a failure to its fix -------------------------------------------------


def test_fixed_by_links_a_failure_to_its_fix_and_reads_backwards_there(
    cli: Cli, vault: Path
) -> None:
    cli("index")
    outage, fix = (
        "incidents/2026-10-18 Stripe webhook outage.md",
        "inbox/Stripe API version header.md",
    )
    done = cli(
        "link", "2026-10-18 Stripe webhook outage", "Stripe API version header", "-t", "fixed_by"
    )
    assert f"linked: {outage} --fixed_by--> {fix}" in done.stdout
    text = (vault / outage).read_text("utf-8")
    assert 'fixed_by:\n  - "[[Stripe API version header]]"' in text
    assert "fixed_by" not in (vault / fix).read_text("utf-8")  # one-way: the fix is untouched
    shown = cli("links", "Stripe API version header").stdout
    assert f"  {outage}  (fixed_by → fixes)\n" in shown
    backlinks = json.loads(cli("links", fix, "--json").stdout)["backlinks"]
    assert {"path": outage, "via": "fixed_by"} in backlinks
    typed = json.loads(cli("links", outage, "--json").stdout)["typed"]
    assert [r["path"] for r in typed["fixed_by"]] == [fix]
    # Obsidian sees a list property; the merge driver and doctor know the key.
    from vaultmem.properties import PROPERTY_TYPES

    assert PROPERTY_TYPES["fixed_by"].value == "multitext"
    assert cli("unlink", outage, fix, "-t", "fixed_by").exit_code == 0
    assert "fixed_by" not in (vault / outage).read_text("utf-8")
