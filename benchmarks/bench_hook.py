"""Whole-process latency of `vaultmem hook prompt` as Claude Code runs it (issue 10).

A realistic UserPromptSubmit payload on stdin, the installed `vaultmem` script (what
`hooks install --claude` writes into settings.json), on the man-page dev vault indexed
into its own cache (BM25; no embedding server). Median of N runs of each, interleaved in
the same run as a bare ``python -c "import json"`` of the same interpreter:

- ``hook prompt`` with a topical prompt (a dev query: a block is injected),
- ``hook prompt`` with an acknowledgement (gated: nothing injected),
- ``hook session-start`` (the brief),

then one ``python -X importtime`` run of the hook, to say where the time goes.

    python benchmarks/bench_hook.py [--runs 20]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

from common import VAULTS, make_vault, queries

CACHE = VAULTS / "caches" / "dev-fm-hook"
SESSION = "4f1c2a7e-9b3d-4e8a-a1f0-6c2d9e7b5a31"


def _script() -> str:
    found = shutil.which("vaultmem", path=str(Path(sys.executable).parent))
    if found is None:
        sys.exit("the vaultmem script is not installed next to this Python")
    return found


def _payload(vault: Path, event: str, **fields: str) -> bytes:
    data = {
        "session_id": SESSION,
        "transcript_path": f"/home/dev/.claude/projects/-bench/{SESSION}.jsonl",
        "cwd": str(vault),
        "permission_mode": "default",
        "hook_event_name": event,
        **fields,
    }
    return json.dumps(data).encode()


def _once(cmd: list[str], stdin: bytes, env: dict[str, str]) -> tuple[float, bytes]:
    start = time.perf_counter()
    out = subprocess.run(cmd, input=stdin, env=env, capture_output=True, check=True).stdout
    return time.perf_counter() - start, out


def importtime(cmd: list[str], stdin: bytes, env: dict[str, str], top: int = 12) -> list[tuple]:
    """The slowest top-level imports of one run: (module, cumulative ms)."""
    py = [sys.executable, "-X", "importtime", "-m", "vaultmem", *cmd[1:]]
    err = subprocess.run(py, input=stdin, env=env, capture_output=True, check=True).stderr
    by_package: dict[str, int] = defaultdict(int)
    for line in err.decode().splitlines():
        match = re.match(r"import time:\s+(\d+) \|\s+(\d+) \| ( *)(\S+)", line)
        if match and match.group(3) == "":  # top-level imports carry their children
            by_package[match.group(4).split(".")[0]] += int(match.group(2))
    ranked = sorted(by_package.items(), key=lambda kv: -kv[1])[:top]
    return [(name, round(us / 1000, 1)) for name, us in ranked]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    vault = make_vault("dev", frontmatter=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("VAULTMEM_")}
    index = [sys.executable, "-m", "vaultmem", "--vault", str(vault), "--cache-dir", str(CACHE)]
    # BM25 only: `hook prompt` does not load the in-process embedder (surface's rule).
    subprocess.run(
        [*index, "index"],
        check=True,
        env={**env, "VAULTMEM_EMBEDDER": "none"},
        stdout=subprocess.DEVNULL,
    )
    base = [_script(), "--vault", str(vault), "--cache-dir", str(CACHE)]
    topical = queries("dev")[2]["query"]
    cases = {
        "bare_python": ([sys.executable, "-c", "import json"], b""),
        "hook_prompt": (
            [*base, "hook", "prompt"],
            _payload(vault, "UserPromptSubmit", prompt=f"How do I {topical}?"),
        ),
        "hook_prompt_gated": (
            [*base, "hook", "prompt"],
            _payload(vault, "UserPromptSubmit", prompt="thanks, looks good"),
        ),
        "hook_session_start": (
            [*base, "hook", "session-start"],
            _payload(vault, "SessionStart", source="startup"),
        ),
    }
    times: dict[str, list[float]] = {name: [] for name in cases}
    outputs: dict[str, bytes] = {}
    for run in range(args.runs):
        for name, (cmd, stdin) in cases.items():
            # A fresh session each run (and each benchmark): a note is shown once per session.
            stdin = stdin.replace(SESSION.encode(), f"bench-{os.getpid()}-{run}".encode())
            took, outputs[name] = _once(cmd, stdin, env)
            times[name].append(took)
    medians = {name: statistics.median(values) for name, values in times.items()}
    injected = json.loads(outputs["hook_prompt"] or b"{}")
    context = injected.get("hookSpecificOutput", {}).get("additionalContext", "")
    result = {
        "runs": args.runs,
        "python": sys.version.split()[0],
        **{f"{name}_s": round(value, 4) for name, value in medians.items()},
        "ratio_prompt_to_bare": round(medians["hook_prompt"] / medians["bare_python"], 2),
        "p95_hook_prompt_s": round(sorted(times["hook_prompt"])[int(0.95 * args.runs) - 1], 4),
        "prompt_injected_chars": len(context),
        "gated_output_bytes": len(outputs["hook_prompt_gated"]),
        "importtime_ms_top": importtime(*cases["hook_prompt"], env),
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
