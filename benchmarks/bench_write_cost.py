"""The cost of the safe write protocol: whole-process `touch` of one note and `pin` of 100
notes, before (commit 83064f7) and after, interleaved in one run.

    python benchmarks/bench_write_cost.py [--repeat 7]

Both codes work on their own copy of the dev vault with frontmatter (978 notes, made by
make_vault.py once), indexed by that code first. Each repeat runs, for each code in turn
(the order alternates between repeats): `touch NOTE` (a write every time: use_count + 1),
then an untimed `unpin` of the 100 notes, then `pin` of the 100 notes (100 writes). The
table shows medians and after/before (target: at most 1.10).

Whole processes measure the whole tree, so other changes since 83064f7 count too. The
second table isolates the write itself: ``update_note`` in-process on the same 100 notes
(unpin, then pin), milliseconds per note write, median of the repeats.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import REPO, baseline_tree, make_vault, median

# update_note on each note (unpin, then pin: the CLI `pin` before left them pinned);
# prints ms per write.
IN_PROCESS = r"""
import sys, time
from pathlib import Path
from vaultmem.frontmatter.files import update_note
vault, notes = Path(sys.argv[1]), sys.argv[2:]
start = time.perf_counter()
for value in (None, True):
    for note in notes:
        assert update_note(vault / note, lambda meta: {"pinned": value}, note).changed
print((time.perf_counter() - start) * 1000 / (2 * len(notes)))
"""


def _env(code: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("VAULTMEM_")}
    env["VAULTMEM_EMBEDDER"] = "none"
    env["PYTHONPATH"] = str(code)
    return env


def run(code: Path, vault: Path, *args: str) -> float:
    """Wall seconds of one `python -m vaultmem --vault VAULT ARGS…` of ``code``."""
    start = time.perf_counter()
    # cwd=code: `-m` puts the cwd first on sys.path, ahead of the editable install.
    done = subprocess.run(
        [sys.executable, "-m", "vaultmem", "--vault", str(vault), *args],
        capture_output=True,
        text=True,
        cwd=code,
        env=_env(code),
    )
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"vaultmem {args[0]} failed ({done.returncode}): {done.stderr}")
    return wall


def in_process(code: Path, vault: Path, notes: list[str]) -> float:
    """Milliseconds per ``update_note`` write of ``code``."""
    out = subprocess.run(
        [sys.executable, "-c", IN_PROCESS, str(vault), *notes],
        capture_output=True,
        text=True,
        check=True,
        cwd=code,
        env=_env(code),
    )
    return float(out.stdout.strip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    codes = {"before": baseline_tree(), "after": REPO}
    source = make_vault("dev", frontmatter=True)
    work = Path(tempfile.mkdtemp(prefix="vaultmem-cost-"))
    try:
        vaults = {}
        for name, code in codes.items():
            vaults[name] = work / name
            shutil.copytree(source, vaults[name], ignore=shutil.ignore_patterns(".vaultmem"))
            run(code, vaults[name], "index")
        notes = sorted(p.relative_to(source).as_posix() for p in source.rglob("*.md"))[:100]
        times: dict[tuple[str, str], list[float]] = {}
        for r in range(args.repeat):
            order = list(codes) if r % 2 == 0 else list(reversed(codes))
            for name in order:
                code, vault = codes[name], vaults[name]
                times.setdefault((name, "touch"), []).append(run(code, vault, "touch", notes[0]))
                run(code, vault, "unpin", *notes)
                times.setdefault((name, "pin"), []).append(run(code, vault, "pin", *notes))
                ms = in_process(code, vault, notes)
                times.setdefault((name, "update_note"), []).append(ms)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    print(f"median of {args.repeat} repeats, interleaved; dev-fm vault ({len(notes)} notes pinned)")
    print("| measure | before (83064f7) | after | after/before |")
    print("|---|---|---|---|")
    rows = [
        ("touch 1 note, whole process (s)", "touch", 3),
        ("pin 100 notes, whole process (s)", "pin", 3),
        ("update_note in-process (ms per note write)", "update_note", 2),
    ]
    for label, key, digits in rows:
        before, after = median(times[("before", key)]), median(times[("after", key)])
        print(f"| {label} | {before:.{digits}f} | {after:.{digits}f} | {after / before:.2f} |")


if __name__ == "__main__":
    main()
