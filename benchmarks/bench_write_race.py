"""The long race run: does a user's save or appended line survive vaultmem's write-backs?

    python benchmarks/bench_write_race.py [--saves 3000] [--appends 3000] [--code new baseline]

Two scenarios on a fresh copy of example-vault, note `decisions/Helm charts over Kustomize.md`:

- saves: an editor-style saver (read, add a marker line, temp file, ``os.replace``) every
  5 ms, against `pin`/`unpin`;
- appends: a process appending a numbered line (``open(p, "a")``, write, close) every
  2 ms, against `touch`.

The write-backs run two ways at once, as they would in real use: whole `vaultmem` processes
one after another (`pin`/`unpin` alternately, or `touch`), and an in-process loop of
``update_note`` under the vault lock (many more writes per second, and it reports how often
the re-apply path ran: a concurrent save was detected and the transform re-applied). At
the end every marker and every line is looked for in the note. ``--code baseline`` runs
the same against commit 83064f7 (a detached worktree under bench-vaults/), the code before
the write protocol.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import REPO, baseline_tree

sys.path.insert(0, str(REPO / "tests"))
from race_scripts import APPENDER, HELM, SAVER  # noqa: E402

# update_note in a loop under the vault lock until the stop file appears; prints counts.
# The pause outside the lock lets the CLI runs in (the lock is not fair).
WRITER = r"""
import json, sys, time
from pathlib import Path
from vaultmem.config import build
from vaultmem.errors import ConflictError
from vaultmem.frontmatter.files import update_note
from vaultmem.memory.writeback import locked
vault, note, mode, stop = Path(sys.argv[1]), sys.argv[2], sys.argv[3], Path(sys.argv[4])
config = build(vault, {})
def pin(meta):
    return {"pinned": None if meta.get("pinned") else True}
def bump(meta):
    return {"use_count": int(meta.get("use_count") or 0) + 1}
compute = pin if mode == "pin" else bump
out = {"writes": 0, "reapplied": 0, "conflicts": 0}
while not stop.exists():
    with locked(config, "bench"):
        try:
            result = update_note(vault / note, compute, note)
        except ConflictError:
            out["conflicts"] += 1
            continue
    out["writes"] += result.changed
    out["reapplied"] += getattr(result, "reapplied", 0)
    time.sleep(0.003)  # let the whole-process runs take the lock too
print(json.dumps(out))
"""


def _env(code: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("VAULTMEM_")}
    env["VAULTMEM_EMBEDDER"] = "none"
    env["PYTHONPATH"] = str(code)
    return env


def scenario(code: Path, user: str, count: int, every: float, commands: list[str]) -> dict:
    """One race: the user process against CLI runs and the in-process writer loop."""
    work = Path(tempfile.mkdtemp(prefix="vaultmem-race-"))
    try:
        vault = work / "vault"
        shutil.copytree(REPO / "example-vault", vault, ignore=shutil.ignore_patterns(".vaultmem"))
        note, stop = vault / HELM, work / "stop"
        env = _env(code)
        # cwd=code: `-m`/`-c` put the cwd first on sys.path, ahead of an editable install.
        subprocess.run(
            [sys.executable, "-m", "vaultmem", "--vault", str(vault), "index"],
            check=True,
            capture_output=True,
            cwd=code,
            env=env,
        )
        mode = "pin" if commands[0] == "pin" else "touch"
        writer = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(vault), HELM, mode, str(stop)],
            stdout=subprocess.PIPE,
            text=True,
            cwd=code,
            env=env,
        )
        script = SAVER if user == "saves" else APPENDER
        start = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-c", script, str(note), str(count), str(every)])
        exits: dict[int, int] = {}
        n = 0
        while proc.poll() is None:
            done = subprocess.run(
                [sys.executable, "-m", "vaultmem", "--vault", str(vault), commands[n % 2], HELM],
                capture_output=True,
                text=True,
                cwd=code,
                env=env,
            )
            n += 1
            exits[done.returncode] = exits.get(done.returncode, 0) + 1
            if "Traceback" in done.stderr:
                print(done.stderr, file=sys.stderr)
        seconds = time.perf_counter() - start
        stop.write_text("stop\n")
        counts = json.loads(writer.communicate(timeout=120)[0].strip().splitlines()[-1])
        raw = note.read_bytes()
        word = b"marker" if user == "saves" else b"appended"
        lost = sum(1 for i in range(count) if b"%s %d\n" % (word, i) not in raw)
        leftovers = [p.name for p in note.parent.iterdir() if ".md." in p.name]
        return {
            "user": user,
            "count": count,
            "lost": lost,
            "cli_runs": n,
            "cli_exits": exits,
            **counts,
            "temp_files_left": len(leftovers),
            "seconds": round(seconds, 1),
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--saves", type=int, default=3000)
    parser.add_argument("--appends", type=int, default=3000)
    parser.add_argument("--code", nargs="+", default=["new"], choices=["new", "baseline"])
    args = parser.parse_args()
    print(
        "| code | user process | count | lost | re-applied | in-process writes "
        "| conflicts (exit 75) | CLI runs (exit codes) | temp files left | seconds |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name in args.code:
        code = REPO if name == "new" else baseline_tree()
        runs = [
            ("saves", args.saves, 0.005, ["pin", "unpin"]),
            ("appends", args.appends, 0.002, ["touch", "touch"]),
        ]
        for user, count, every, commands in runs:
            r = scenario(code, user, count, every, commands)
            label = f"{user} every {int(every * 1000)} ms vs {'/'.join(dict.fromkeys(commands))}"
            print(
                f"| {name} | {label} | {r['count']} | {r['lost']} | {r['reapplied']} "
                f"| {r['writes']} | {r['conflicts']} | {r['cli_runs']} {r['cli_exits']} "
                f"| {r['temp_files_left']} | {r['seconds']} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
