"""Whole-process start-up cost of the CLI without a server (issue 11, item 4).

On a temp copy of ``example-vault/`` (indexed, and embedded with the in-process MiniLM
for ``vsearch``/``query``), runs each command N times, interleaved, with a bare
``python -c pass`` of the same interpreter in the same loop, and prints the median of
each and its ratio to the bare interpreter:

- ``python -c pass``
- ``vaultmem --help``
- ``search "redis cache" -n 3``
- ``vsearch "redis cache" -n 3``
- ``query "redis cache" -n 3`` (no LLM: expansion and rerank are not configured)
- ``hook prompt`` with a realistic UserPromptSubmit payload on stdin

then what ``search`` imports that it should not (pydantic, yaml, asyncio, numpy…).
``--before PATH`` (a checkout of earlier code, e.g. ``git worktree add /tmp/old REV``)
adds its ``--help``, ``search`` and ``hook prompt`` to the same loop, interleaved; the
vault is then indexed by the earlier code, which this code reads as it is.

    python benchmarks/bench_startup.py [--runs 20] [--vault PATH] [--before PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SESSION = "4f1c2a7e-9b3d-4e8a-a1f0-6c2d9e7b5a31"
HEAVY = ("pydantic", "yaml", "whoosh.qparser", "asyncio", "numpy", "chromadb", "onnxruntime")


def _vaultmem(vault: Path) -> list[str]:
    return [sys.executable, "-m", "vaultmem", "--vault", str(vault)]


def _prompt(vault: Path) -> bytes:
    return json.dumps(
        {
            "session_id": SESSION,
            "transcript_path": f"/home/dev/.claude/projects/-bench/{SESSION}.jsonl",
            "cwd": str(vault),
            "permission_mode": "default",
            "hook_event_name": "UserPromptSubmit",
            "prompt": "The redis cache keeps serving stale sessions after a deploy; "
            "how did we decide to invalidate it?",
        }
    ).encode()


Case = tuple[list[str], bytes, Path]  # command, stdin, the folder whose code it runs


def _cases(vault: Path, before: Path | None) -> dict[str, Case]:
    vm = _vaultmem(vault)
    words = ["redis cache", "-n", "3"]
    cases = {
        "python -c pass": ([sys.executable, "-c", "pass"], b"", REPO),
        "vaultmem --help": ([*vm, "--help"], b"", REPO),
        "search": ([*vm, "search", *words], b"", REPO),
        "vsearch": ([*vm, "vsearch", *words], b"", REPO),
        "query": ([*vm, "query", *words], b"", REPO),
        "hook prompt": ([*vm, "hook", "prompt"], _prompt(vault), REPO),
    }
    if before is not None:
        for name in ("vaultmem --help", "search", "hook prompt"):
            cmd, stdin, _ = cases[name]
            cases[f"before: {name}"] = (cmd, stdin, before)
    return cases


def _once(case: Case, env: dict[str, str]) -> float:
    cmd, stdin, code = case
    start = time.perf_counter()
    # `python -m` imports the package from its working folder first.
    subprocess.run(cmd, input=stdin, env=env, cwd=code, capture_output=True, check=True)
    return time.perf_counter() - start


def _prepare(source: Path, into: Path, env: dict[str, str], code: Path) -> Path:
    vault = into / "vault"
    shutil.copytree(source, vault, ignore=shutil.ignore_patterns(".vaultmem"))
    for step in ("index", "embed"):
        subprocess.run(
            [*_vaultmem(vault), step], env=env, cwd=code, check=True, capture_output=True
        )
    return vault


def imported(cmd: list[str], env: dict[str, str]) -> set[str]:
    """The top-level packages a command imports (from ``python -X importtime``)."""
    done = subprocess.run(
        [cmd[0], "-X", "importtime", *cmd[1:]], env=env, capture_output=True, text=True
    )
    names = set()
    for line in done.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[1].strip())
    return names


def main() -> None:
    """Measure and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--vault", type=Path, default=REPO / "example-vault")
    parser.add_argument("--before", type=Path, help="a checkout of earlier code to compare")
    args = parser.parse_args()
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "0"}
    env.pop("VAULTMEM_VAULT", None)
    with tempfile.TemporaryDirectory() as tmp:
        vault = _prepare(args.vault, Path(tmp), env, args.before or REPO)
        cases = _cases(vault, args.before)
        for case in cases.values():  # warm the page cache and the bytecode
            _once(case, env)
        times: dict[str, list[float]] = {name: [] for name in cases}
        for _ in range(args.runs):
            for name, case in cases.items():
                times[name].append(_once(case, env))
        search_imports = imported(cases["search"][0], env)
    bare = statistics.median(times["python -c pass"])
    print(f"{'command':<25} {'median ms':>10} {'x bare':>7}   (median of {args.runs})")
    for name, runs in times.items():
        median = statistics.median(runs)
        print(f"{name:<25} {median * 1000:>10.1f} {median / bare:>7.1f}")
    heavy = sorted(n for n in search_imports if n.split(".")[0] in HEAVY or n in HEAVY)
    print(f"search imports of {', '.join(HEAVY)}: {', '.join(heavy) or 'none'}")


if __name__ == "__main__":
    main()
