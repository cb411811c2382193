"""Two machines, one vault, N days of agent use: how often does `git pull` stop, and are the
merged counters right? And is the merge driver git's merge on the user's part, at what cost?

    python benchmarks/bench_git_merge.py [--days 20] [--events 8] [--seed 19] [--notes 10]
        [--triples 500] [--repeat 7] [--arms driver text property sizes]

Both arms replay the same seeded run on two clones of example-vault/ that push to one
bare repository: each day brings ``--events`` uses on a random machine, each one of
touch, touch --confirm, observe (with tags), pin/unpin, link/unlink (related, or
contradicts) and remember, on a small working set of notes (so the machines collide);
after each use that machine syncs with probability 0.3 (commit, `git pull`, merge or
rebase at random, push), and both sync at the end of each day. Time is one clock for both
machines, advancing with every use.

- ``driver``: the vault as `vaultmem git setup` leaves it (merge=vaultmem);
- ``text``: no driver: git's own text merge. A stopped pull is settled the way a hurried
  person settles it, keeping this machine's side of every conflicted note
  (``git checkout --ours``), which is what loses the other machine's uses.

Reported per arm: pulls, pulls that stopped with a conflict, conflict regions on owned
keys and elsewhere (per 100 pulls), and, after both machines converge, the share of
(note, counter) pairs (use_count, review_count, cross_domain_count) and of last_used
values that equal what the log of every use says they must be.

- ``property``: ``--triples`` generated triples of a note (tests/merge_triples.py, the
  generator of the property test: random edits to the user's keys, vaultmem's keys and
  the body, BOM, CRLF, anchors, comments, key order). For each, the driver's result
  against ``git merge-file`` of the user's edits alone: how often the user's part differs,
  the clean/conflicted verdict differs, or vaultmem's keys are not what its rules say
  (target 0 for each); and the driver's time against git's own merge of the three notes
  (medians).
- ``sizes``: the driver's time against git's (``git merge-file`` of the same three notes,
  interleaved, median of ``--repeat``) on notes from 1 KB to 1 MB, with a typical
  frontmatter and with frontmatters up to the driver's cap and past it (merged as text).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from common import REPO

sys.path.insert(0, str(REPO / "tests"))  # the property test's generator (merge_triples)

from vaultmem.config import Config, build
from vaultmem.conflict_markers import conflict_regions
from vaultmem.frontmatter.scan import parse_meta
from vaultmem.gitmerge.rules import RULES, Rule
from vaultmem.memory.links import link, unlink
from vaultmem.memory.notes import pin_notes, reinforce_notes, unpin_notes
from vaultmem.memory.remember import remember
from vaultmem.memory_state import as_int, parse_time
from vaultmem.properties import OWNED_KEYS
from vaultmem.workspace import init_vault

EXAMPLE = REPO / "example-vault"
# use_count, review_count, cross_domain_count: the keys that add up.
COUNTERS = tuple(key for key, rule in RULES.items() if rule is Rule.COUNT)
START = datetime(2026, 11, 2, 8, 0, tzinfo=UTC)
SYNC_CHANCE = 0.3
REBASE_CHANCE = 0.3
_KEY_RE = re.compile(r"([A-Za-z_]\w*)\s*:")
_OWNED = frozenset(OWNED_KEYS)


def _env() -> dict[str, str]:
    bin_dir = str(Path(sys.executable).parent)  # where `vaultmem` (the driver) lives
    return {
        "GIT_AUTHOR_NAME": "bench",
        "GIT_AUTHOR_EMAIL": "bench@example.com",
        "GIT_COMMITTER_NAME": "bench",
        "GIT_COMMITTER_EMAIL": "bench@example.com",
        "GIT_CONFIG_NOSYSTEM": "1",
        "HOME": tempfile.gettempdir(),
        "PATH": f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "VAULTMEM_EMBEDDER": "none",
    }


ENV = _env()


def git(repo: Path, *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        ["git", "-c", "commit.gpgsign=false", "-c", "core.editor=true", *args],
        cwd=repo,
        env=ENV,
        capture_output=True,
        text=True,
        check=False,
    )
    if ok and done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} in {repo}: {done.stdout}{done.stderr}")
    return done


@dataclass
class Counts:
    """What the sync of one arm ran into."""

    pulls: int = 0
    stopped: int = 0
    owned_regions: int = 0
    other_regions: int = 0
    seconds: float = 0.0


# A note's counters (in COUNTERS order) and its last_used.
Counters = tuple[int, int, int, datetime | None]


@dataclass
class Log:
    """Every use, as the truth the merged notes are checked against."""

    uses: dict[str, int] = field(default_factory=dict)
    cross: dict[str, int] = field(default_factory=dict)
    last_used: dict[str, datetime] = field(default_factory=dict)
    initial: dict[str, Counters] = field(default_factory=dict)


class Machine:
    def __init__(self, name: str, vault: Path) -> None:
        self.name = name
        self.vault = vault
        self.config: Config = build(vault, {"embedder": "none"})

    def notes(self) -> list[str]:
        return sorted(
            str(p.relative_to(self.vault))
            for p in self.vault.rglob("*.md")
            if ".git" not in p.parts
        )


def _classify(text: str) -> tuple[int, int]:
    """(regions on owned keys, other regions) in a conflicted note."""
    lines = re.split(r"\r\n|\r|\n", text)
    fences = [i for i, line in enumerate(lines) if line.strip() == "---"]
    closing = fences[1] if len(fences) > 1 and fences[0] == 0 else -1
    owned = other = 0
    for first, last in conflict_regions(text):
        if first >= closing:
            other += 1
            continue
        keys = [m.group(1) for line in lines[first : last + 1] if (m := _KEY_RE.match(line))]
        above = next(
            (m.group(1) for line in reversed(lines[:first]) if (m := _KEY_RE.match(line))), None
        )
        if any(k in _OWNED for k in keys) or (above in _OWNED and not keys):
            owned += 1
        else:
            other += 1
    return owned, other


def _settle(machine: Machine, counts: Counts) -> None:
    """Count the conflict regions of every unmerged note, then keep this side of each."""
    listed = git(machine.vault, "diff", "--name-only", "--diff-filter=U", "-z").stdout
    for path in filter(None, listed.split("\0")):
        text = (machine.vault / path).read_text(encoding="utf-8", errors="replace")
        owned, other = _classify(text)
        counts.owned_regions += owned
        counts.other_regions += other
        git(machine.vault, "checkout", "--ours", "--", path)
        git(machine.vault, "add", "--", path)


def sync(machine: Machine, counts: Counts, rng: random.Random) -> None:
    if git(machine.vault, "status", "--porcelain").stdout.strip():
        git(machine.vault, "add", "-A")
        git(machine.vault, "commit", "-q", "-m", f"{machine.name} work")
    rebase = rng.random() < REBASE_CHANCE
    counts.pulls += 1
    started = time.perf_counter()
    done = git(
        machine.vault,
        "pull",
        "-q",
        "--rebase" if rebase else "--no-rebase",
        "origin",
        "main",
        ok=False,
    )
    if done.returncode != 0:
        counts.stopped += 1
        for _step in range(1000):  # a rebase stops once per commit it replays
            _settle(machine, counts)
            if not rebase:
                git(machine.vault, "commit", "-q", "--no-edit")
                break
            step = git(machine.vault, "rebase", "--continue", ok=False)
            if step.returncode == 0:
                break
            if "nothing to commit" in step.stdout + step.stderr:
                git(machine.vault, "rebase", "--skip", ok=False)
                break
    counts.seconds += time.perf_counter() - started
    git(machine.vault, "push", "-q", "origin", "HEAD:main")


def _use(
    machine: Machine, rng: random.Random, now: datetime, pool: list[str], log: Log, n: int
) -> None:
    """One agent use on ``machine`` at ``now``."""
    config = machine.config
    here = [p for p in pool if (machine.vault / p).exists()]
    note = rng.choice(here)
    roll = rng.random()
    if roll < 0.55:
        tags = rng.choice([(), ("payments", "webhooks"), ("cache",)]) if roll >= 0.3 else ()
        done = reinforce_notes(config, [note], now, list(tags), confirm=rng.random() < 0.2)
        for r in done:
            log.uses[r.path] = log.uses.get(r.path, 0) + 1
            log.cross[r.path] = log.cross.get(r.path, 0) + int(r.cross_domain)
            log.last_used[r.path] = max(log.last_used.get(r.path, now), now)
    elif roll < 0.65:
        pinned = parse_meta((machine.vault / note).read_bytes(), note)[0].get("pinned") is True
        (unpin_notes if pinned else pin_notes)(config, [note])
    elif roll < 0.85:
        other = rng.choice([p for p in here if p != note])
        kind = "contradicts" if rng.random() < 0.15 else "related"
        if rng.random() < 0.25:
            unlink(config, note, other, None)
        else:
            link(config, note, other, kind)
    else:
        text = f"Machine {machine.name} noted on {now:%Y-%m-%d %H:%M}: observation {n} of the run."
        made = remember(config, text, now=now, tags=["bench", machine.name.lower()])
        pool.append(made.path)
        log.initial[made.path] = _counters(machine.vault / made.path)


def _counters(path: Path) -> Counters:
    meta = parse_meta(path.read_bytes(), str(path))[0]
    counts = [as_int(meta.get(k)) for k in COUNTERS]
    return counts[0], counts[1], counts[2], parse_time(meta.get("last_used"))


def _share(right: int, total: int) -> str:
    return f"{right}/{total} ({100 * right / max(total, 1):.1f}%)"


def _seed(root: Path, with_driver: bool) -> tuple[Machine, Machine]:
    origin = root / "origin.git"
    git(root, "init", "-q", "--bare", "-b", "main", str(origin))
    a = root / "a"
    shutil.copytree(EXAMPLE, a, ignore=shutil.ignore_patterns(".vaultmem"))
    init_vault(a)  # the cache stays out of git
    git(a, "init", "-q", "-b", "main")
    if with_driver:
        subprocess.run(
            [sys.executable, "-m", "vaultmem", "--vault", str(a), "git", "setup"],
            env=ENV,
            check=True,
            capture_output=True,
        )
    git(a, "add", "-A")
    git(a, "commit", "-q", "-m", "vault")
    git(a, "remote", "add", "origin", str(origin))
    git(a, "push", "-q", "origin", "main")
    b = root / "b"
    git(root, "clone", "-q", str(origin), str(b))
    if with_driver:
        subprocess.run(
            [sys.executable, "-m", "vaultmem", "--vault", str(b), "git", "setup"],
            env=ENV,
            check=True,
            capture_output=True,
        )
    return Machine("A", a), Machine("B", b)


def run_arm(with_driver: bool, args: argparse.Namespace) -> dict[str, object]:
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="bench-git-merge-") as tmp:
        a, b = _seed(Path(tmp), with_driver)
        pool = rng.sample(a.notes(), args.notes)
        log = Log(initial={p: _counters(a.vault / p) for p in pool})
        counts = Counts()
        now = START
        n = 0
        for _day in range(args.days):
            for _event in range(args.events):
                machine = rng.choice((a, b))
                now += timedelta(minutes=rng.randint(5, 90))
                n += 1
                _use(machine, rng, now, pool, log, n)
                if rng.random() < SYNC_CHANCE:
                    sync(machine, counts, rng)
            for machine in (a, b):
                sync(machine, counts, rng)
            now = now.replace(hour=8, minute=0) + timedelta(days=1)
        for machine in (a, b, a):  # converge: both hold everything
            sync(machine, counts, rng)
        right = total = last_right = last_total = 0
        for path, initial in log.initial.items():
            final = _counters(b.vault / path)
            uses = log.uses.get(path, 0)
            expected = (initial[0] + uses, initial[1] + uses, initial[2] + log.cross.get(path, 0))
            total += len(COUNTERS)
            right += sum(int(got == want) for got, want in zip(final[:3], expected, strict=True))
            if path in log.last_used:
                last_total += 1
                last_right += int(final[3] == log.last_used[path])
        same = git(a.vault, "rev-parse", "HEAD").stdout == git(b.vault, "rev-parse", "HEAD").stdout
    per = 100 / max(counts.pulls, 1)
    return {
        "arm": "driver" if with_driver else "text",
        "pulls": counts.pulls,
        "stopped_per_100_pulls": round(counts.stopped * per, 1),
        "owned_key_regions_per_100_pulls": round(counts.owned_regions * per, 1),
        "other_regions_per_100_pulls": round(counts.other_regions * per, 1),
        "counters_correct": _share(right, total),
        "last_used_correct": _share(last_right, last_total),
        "uses": sum(log.uses.values()),
        "pull_seconds": round(counts.seconds, 1),
        "converged": same,
    }


# --------------------------------------------------------------------------- the user's part


def run_property(args: argparse.Namespace) -> dict[str, object]:
    """The driver against git on ``--triples`` generated triples (see the docstring)."""
    from merge_triples import git_merge, triple, user_lines

    from vaultmem.gitmerge.driver import merge_note, text_merge
    from vaultmem.gitmerge.rules import merge_owned

    wrong = {"user_part": 0, "verdict": 0, "owned_keys": 0, "fallback": 0}
    conflicted = 0
    driver_s: list[float] = []
    git_s: list[float] = []
    for i in range(args.triples):
        t = triple(random.Random(args.seed * 100_003 + i))
        started = time.perf_counter()
        result = merge_note(t.base, t.ours, t.theirs, "x.md")
        driver_s.append(time.perf_counter() - started)
        started = time.perf_counter()
        text_merge(t.ours, t.base, t.theirs)
        git_s.append(time.perf_counter() - started)
        expected, regions = git_merge(t.ours_user, t.base, t.theirs_user)
        conflicted += regions > 0
        wrong["fallback"] += bool(result.fallback)
        names = t.owned_names
        wrong["user_part"] += user_lines(result.text, names) != user_lines(expected, names)
        wrong["verdict"] += result.clean != (regions == 0)
        if result.clean and regions == 0:
            sides = [_owned_of(x, names) for x in (t.base, t.ours, t.theirs)]
            wrong["owned_keys"] += _owned_of(result.text, names) != merge_owned(*sides).values
    return {
        "arm": "property",
        "triples": args.triples,
        "git_conflicted": conflicted,
        "disagreements": wrong,
        "driver_ms_median": round(1000 * statistics.median(driver_s), 2),
        "git_ms_median": round(1000 * statistics.median(git_s), 2),
        "ratio_of_medians": round(statistics.median(driver_s) / statistics.median(git_s), 2),
    }


def _owned_of(text: bytes, names: frozenset[str]) -> dict[str, object]:
    meta, _ = parse_meta(text, "x.md")
    return {k: v for k, v in meta.items() if k in names}


def _sized(frontmatter: int, body: int, side: str) -> bytes:
    """A note of about ``frontmatter`` + ``body`` bytes; each side touched it (use_count,
    last_used) and edited one of the user's keys and the body."""
    count = {"base": 1, "ours": 2, "theirs": 3}[side]
    tags = "".join(f"  - tag-{i:05d}\n" for i in range(max(frontmatter - 200, 0) // 14))
    lines = [f"Line {i:06d} of the body, as a long note has them.\n" for i in range(body // 48)]
    if side == "ours" and lines:
        lines[0] = "The first line, edited on this machine.\n"
    if side == "theirs" and lines:
        lines[-1] = "The last line, edited on the other machine.\n"
    project = "harbor-core" if side == "theirs" else "harbor"
    head = (
        f"---\ntitle: Redis for caching\ntags:\n{tags}type: decision\nconfidence: 0.85\n"
        f"project: {project}\nuse_count: {count}\nlast_used: 2026-11-1{count}T09:00:00Z\n---\n"
    )
    return (head + "".join(lines)).encode()


SIZES = (  # (frontmatter bytes, body bytes)
    (400, 1_000),
    (400, 10_000),
    (400, 100_000),
    (400, 1_000_000),
    (1_000, 0),
    (2_000, 0),
    (4_000, 0),
    (8_000, 0),
    (1_000_000, 0),
)


def _cpu() -> float:
    """CPU seconds of this process and its finished children (git): steadier than the
    wall clock on a loaded machine."""
    import resource

    me, children = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return me.ru_utime + me.ru_stime + children.ru_utime + children.ru_stime


def run_sizes(args: argparse.Namespace) -> list[dict[str, object]]:
    """The driver's time against git's on notes of :data:`SIZES`, interleaved."""
    from vaultmem.gitmerge.driver import MAX_PARSED, merge_note, text_merge

    out = []
    for frontmatter, body in SIZES:
        base, ours, theirs = (_sized(frontmatter, body, s) for s in ("base", "ours", "theirs"))
        driver_s, git_s, driver_cpu, git_cpu = [], [], [], []
        fallback = ""
        for _ in range(args.repeat):
            started, cpu = time.perf_counter(), _cpu()
            result = merge_note(base, ours, theirs, "x.md")
            driver_s.append(time.perf_counter() - started)
            driver_cpu.append(_cpu() - cpu)
            started, cpu = time.perf_counter(), _cpu()
            text_merge(ours, base, theirs)
            git_s.append(time.perf_counter() - started)
            git_cpu.append(_cpu() - cpu)
            fallback = result.fallback
        driver, git_ = statistics.median(driver_s), statistics.median(git_s)
        cpu_ratio = statistics.median(driver_cpu) / statistics.median(git_cpu)
        out.append(
            {
                "arm": "sizes",
                "note_kb": round(len(ours) / 1024, 1),
                "frontmatter_kb": round(frontmatter / 1024, 1),
                "over_cap": frontmatter > MAX_PARSED,
                "merged_as_text": bool(fallback),
                "clean": result.clean,
                "driver_ms": round(1000 * driver, 1),
                "git_ms": round(1000 * git_, 1),
                "ratio": round(driver / git_, 2),
                "cpu_ratio": round(cpu_ratio, 2),
            }
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--days", type=int, default=20)
    parser.add_argument("--events", type=int, default=8, help="uses per day, both machines")
    parser.add_argument("--seed", type=int, default=19)
    parser.add_argument("--notes", type=int, default=10, help="notes in the working set")
    parser.add_argument("--triples", type=int, default=500, help="triples for the property arm")
    parser.add_argument("--repeat", type=int, default=7, help="runs per size (medians)")
    arms = ["driver", "text", "property", "sizes"]
    parser.add_argument("--arms", nargs="+", default=arms, choices=arms)
    args = parser.parse_args()
    for arm in args.arms:
        if arm == "property":
            print(json.dumps(run_property(args)), flush=True)
        elif arm == "sizes":
            for line in run_sizes(args):
                print(json.dumps(line), flush=True)
        else:
            print(json.dumps(run_arm(arm == "driver", args)), flush=True)


if __name__ == "__main__":
    main()
