"""A simulated month of memory use, checked against the formulas applied independently.

Seventeen notes are written the way `remember` writes them (created, a 3-day half-life,
a type; some pinned, snoozed or superseded) at their day of creation; some are touched
daily, some in a burst, some once, some never — each touch a real frontmatter write
through :func:`edit_notes` with :func:`scores.reinforce` at that simulated moment. On
day 30 the test predicts, from its own record of what it wrote and the SPEC §5 formulas,
which notes `review` lists (in order), `gc` archives and `promote` moves, and runs the
commands with ``VAULTMEM_NOW`` set to that moment.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from conftest import Cli

from vaultmem.config import build
from vaultmem.frontmatter.scan import parse_meta
from vaultmem.indexer import index_vault
from vaultmem.memory.writeback import edit_notes
from vaultmem.memory_state import as_float, as_int
from vaultmem.scores import (
    FORGET_THRESHOLD,
    PROMOTE_THRESHOLD,
    MemoryState,
    decay_score,
    memory_state,
    reinforce,
    review_priority,
    should_forget,
)

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
CHECK = T0 + timedelta(days=30, hours=3)  # day 30, 12:00


def at(day: int, hour: int = 9, minute: int = 0) -> datetime:
    """09:00 (or the given time) on simulated day ``day``."""
    return T0.replace(hour=0) + timedelta(days=day, hours=hour, minutes=minute)


@dataclass
class Planned:
    """What the test writes into one note, and so knows independently of vaultmem."""

    path: str
    created: datetime
    type: str = "observation"
    pinned: bool = False
    status: str | None = None
    snoozed_until: datetime | None = None
    touches: list[datetime] = field(default_factory=list)

    def state(self) -> MemoryState:
        return memory_state(
            type=self.type,
            half_life="3d",
            use_count=len(self.touches),
            pinned=self.pinned,
            created=self.created,
            last_used=max(self.touches) if self.touches else None,
        )

    def frontmatter(self) -> str:
        lines = [f"type: {self.type}", f"created: {iso(self.created)}", "half_life: 3d"]
        if self.pinned:
            lines.append("pinned: true")
        if self.status:
            lines.append(f"status: {self.status}")
        if self.snoozed_until:
            lines.append(f"snoozed_until: {iso(self.snoozed_until)}")
        return "---\n" + "\n".join(lines) + "\ntags: [month]\n---\n"


def iso(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


PLAN = [
    # Inbox: what `promote` looks at.
    Planned("inbox/daily-habit.md", at(0), touches=[at(d) for d in range(1, 31)]),
    Planned("inbox/usage-burst.md", at(20), "note", touches=[at(d) for d in range(20, 25)]),
    Planned("inbox/borderline-in.md", at(27), touches=[at(28, 15, 30)]),  # s = 0.6515
    Planned("inbox/borderline-out.md", at(27), touches=[at(28, 15, 0)]),  # s = 0.6484
    Planned("inbox/fresh.md", at(30, 11, 55)),
    Planned("inbox/fresh-touched.md", at(30, 10), touches=[at(30, 11)]),
    Planned("inbox/forgotten-early.md", at(0), touches=[at(1), at(2)]),
    Planned("inbox/pinned-idea.md", at(0), "note", pinned=True),
    # Elsewhere: what `gc` and `review` look at too.
    Planned("notes/decision.md", at(0), "decision"),
    Planned("notes/review-peak.md", at(0), "note", touches=[at(24, 2)]),
    Planned("notes/review-edge.md", at(0), "note", touches=[at(22, 12)]),
    Planned("notes/review-three.md", at(0), "note", touches=[at(18), at(19), at(20)]),
    Planned("notes/review-snoozed.md", at(0), snoozed_until=at(35), touches=[at(24, 2)]),
    Planned("notes/gc-borderline-out.md", at(17, 8)),  # s = 0.0477
    Planned("notes/gc-borderline-in.md", at(17, 14)),  # s = 0.0506
    Planned("notes/superseded-old.md", at(0), "note", status="superseded"),
    Planned("notes/weekly.md", at(0), "note", touches=[at(d) for d in range(0, 29, 7)]),
]


# --------------------------------------------------------------------------- the model


def expected_gc() -> set[str]:
    return {
        p.path
        for p in PLAN
        if (p.status or "active") in {"active", "promoted", "superseded"}
        and should_forget(p.state(), CHECK)
    }


def expected_promote() -> set[str]:
    """SPEC §5 with vaultmem's guard: the score rule needs a use and a day of age."""
    out = set()
    for p in PLAN:
        if not p.path.startswith("inbox/") or (p.status or "active") != "active":
            continue
        state = p.state()
        age = CHECK - p.created
        on_score = state.use_count >= 1 and age >= timedelta(days=1)
        on_score = on_score and decay_score(state, CHECK) >= PROMOTE_THRESHOLD
        window = timedelta(days=14)
        in_window = age <= window or (p.touches and max(p.touches) - p.created <= window)
        on_usage = state.use_count >= 5 and bool(in_window)
        if on_score or on_usage:
            out.add(p.path)
    return out


def expected_review() -> list[str]:
    queue = []
    for p in PLAN:
        if (p.status or "active") not in {"active", "promoted"}:
            continue
        if p.snoozed_until is not None and p.snoozed_until > CHECK:
            continue
        score = decay_score(p.state(), CHECK)
        if review_priority(score) > 0:
            queue.append((-review_priority(score), score, p.path))
    return [path for *_, path in sorted(queue)]


def test_the_model_covers_every_case() -> None:
    """The month is only a check if each category is populated and the borders bite."""
    assert expected_promote() == {
        "inbox/daily-habit.md",
        "inbox/usage-burst.md",
        "inbox/borderline-in.md",
    }
    assert expected_gc() == {
        "inbox/forgotten-early.md",
        "notes/gc-borderline-out.md",
        "notes/superseded-old.md",
    }
    assert expected_review() == [
        "notes/review-peak.md",
        "notes/review-three.md",
        "notes/review-edge.md",
    ]
    by_path = {p.path: p for p in PLAN}

    def score(path: str) -> float:
        return decay_score(by_path[path].state(), CHECK)

    assert score("inbox/borderline-in.md") >= PROMOTE_THRESHOLD > score("inbox/borderline-out.md")
    assert (
        score("notes/gc-borderline-in.md") >= FORGET_THRESHOLD > score("notes/gc-borderline-out.md")
    )
    # Burst: below the score threshold, promoted on use; fresh notes score high, stay.
    assert score("inbox/usage-burst.md") < PROMOTE_THRESHOLD
    assert score("inbox/fresh.md") > 0.99 and score("inbox/fresh-touched.md") > 0.98
    # Pinned and durable notes decayed as far as any collected note, and stay.
    assert score("inbox/pinned-idea.md") < FORGET_THRESHOLD
    assert score("notes/decision.md") < FORGET_THRESHOLD


# --------------------------------------------------------------------------- the month


def touch_compute(now: datetime) -> Any:
    """What `touch` would write at ``now`` (built from scores.reinforce, not the command)."""

    def compute(_path: str, meta: dict[Any, Any]) -> dict[str, object | None]:
        done = reinforce(
            now=now,
            use_count=as_int(meta.get("use_count")),
            review_count=as_int(meta.get("review_count")),
            strength=as_float(meta.get("strength"), 1.0),
        )
        return {
            "use_count": done.use_count,
            "last_used": done.last_used,
            "review_count": done.review_count,
            "last_review": done.last_review,
        }

    return compute


def live_the_month(vault: Path) -> None:
    """Write each note on its day of creation and touch notes at their moments."""
    config = build(vault, {})
    events: dict[datetime, list[tuple[str, Planned]]] = {}
    for p in PLAN:
        events.setdefault(p.created, []).append(("create", p))
        for when in p.touches:
            events.setdefault(when, []).append(("touch", p))
    index_vault(config)
    for when in sorted(events):
        for kind, p in events[when]:
            if kind == "create":
                full = vault / p.path
                full.parent.mkdir(parents=True, exist_ok=True)
                full.write_text(p.frontmatter() + f"# {full.stem}\n\nWritten on {when:%d %b}.\n")
        touched = [p.path for kind, p in events[when] if kind == "touch"]
        if touched:
            results = edit_notes(config, touched, touch_compute(when))
            assert all(r.changed for r in results)


def snapshot(vault: Path) -> dict[str, str]:
    out = {}
    for root, dirs, files in os.walk(vault):
        dirs[:] = [d for d in dirs if d != ".vaultmem"]
        for f in files:
            full = Path(root) / f
            out[str(full.relative_to(vault))] = hashlib.sha256(full.read_bytes()).hexdigest()
    return out


def test_a_month_of_use(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    vault = tmp_path / "v"
    vault.mkdir()
    live_the_month(vault)
    habit = parse_meta((vault / "inbox/daily-habit.md").read_bytes(), "habit")[0]
    assert habit["use_count"] == 30 and habit["last_used"] == at(30)
    monkeypatch.setenv("VAULTMEM_NOW", iso(CHECK))
    cli = Cli(vault)

    review = cli.json_lines("review", "-n", "100")
    assert [line["path"] for line in review] == expected_review()

    before = snapshot(vault)
    plan = cli.json_lines("gc", "--dry-run")
    assert {line["path"] for line in plan} == expected_gc()
    assert snapshot(vault) == before

    promoted = cli.json_lines("promote")
    assert {line["path"] for line in promoted if line["action"] == "promote"} == (
        expected_promote()
    )
    for path in expected_promote():
        moved = vault / "memory" / path.removeprefix("inbox/")
        assert not (vault / path).exists()
        assert parse_meta(moved.read_bytes(), path)[0]["status"] == "promoted"

    collected = cli.json_lines("gc")
    assert {line["path"] for line in collected} == expected_gc()
    for path in expected_gc():
        assert (vault / "archive" / path).exists() and not (vault / path).exists()
    left = {str(p.relative_to(vault)) for p in vault.rglob("*.md") if ".vaultmem" not in p.parts}
    assert len(left) == len(PLAN)
    assert cli.json_lines("gc") == [] and cli.json_lines("promote") == []
