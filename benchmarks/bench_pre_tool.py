"""Latency of `vaultmem hook pre-tool` (issue 31): the vault's rules before each Edit/Bash.

A vault of example-vault plus ``--rules`` generated rule notes (half with ``applies_to``
globs or command words, half antipatterns/preferences scoped by their tags) and
``--filler`` plain notes, indexed keyword-only into a temp folder. Payloads are Claude
Code's PreToolUse shape (an Edit of a Python file, a Bash ``alembic upgrade``), a fresh
session each run. Median (and p95) of ``--runs`` runs of each, interleaved with a bare
``python -c "import json"`` of the same interpreter:

- whole process, in process (``VAULTMEM_NO_SERVER=1``): what a hook costs with no server;
- whole process through a running ``vaultmem serve`` (the client forwards ``hook
  pre-tool``): what a hook costs warm;
- in the server's own process: :func:`vaultmem.agent.rules.rules_for` on a warm
  interpreter (the work itself, p50/p95 over ``--calls`` calls).

    python benchmarks/bench_pre_tool.py [--runs 20] [--rules 300] [--filler 1000]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from common import REPO, median, percentile

PY = sys.executable
GLOBS = ["*.sql", "migrations/**", "src/api/*.py", "Dockerfile*", "charts/**/*.yaml", "*.tf"]
COMMANDS = ["git push", "alembic upgrade", "kubectl apply", "terraform apply", "npm publish"]
TAGS = ["lang/python", "db/postgres", "docker", "git", "testing", "k8s", "terraform", "ci"]


def _make_vault(root: Path, rules: int, filler: int) -> Path:
    vault = root / "vault"
    shutil.copytree(REPO / "example-vault", vault, ignore=shutil.ignore_patterns(".vaultmem"))
    (vault / "rules").mkdir()
    (vault / "filler").mkdir()
    for i in range(rules):
        if i % 2:
            scope = GLOBS[i % len(GLOBS)] if i % 4 == 1 else COMMANDS[i % len(COMMANDS)]
            head = f'type: note\napplies_to: ["{scope}"]\n'
        else:
            kind = "antipattern" if i % 4 == 0 else "preference"
            head = f"type: {kind}\ntags: [{TAGS[i % len(TAGS)]}]\n"
        (vault / "rules" / f"Rule {i:04d}.md").write_text(
            f"---\n{head}---\n# Rule {i} about {TAGS[i % len(TAGS)].split('/')[-1]}\n\n"
            f"Rule {i}: do the thing the careful way, and say why in the commit.\n",
            "utf-8",
        )
    for i in range(filler):
        (vault / "filler" / f"Note {i:05d}.md").write_text(
            f"# Note {i}\n\nSome text about topic {i % 97} and service {i % 13}.\n", "utf-8"
        )
    return vault


def _payload(vault: Path, tool: str, tool_input: dict[str, object], session: str) -> bytes:
    return json.dumps(
        {
            "session_id": session,
            "transcript_path": f"/home/dev/.claude/projects/-bench/{session}.jsonl",
            "cwd": str(vault),
            "permission_mode": "default",
            "hook_event_name": "PreToolUse",
            "tool_name": tool,
            "tool_input": tool_input,
            "tool_use_id": "toolu_bench",
        }
    ).encode()


def _env(*, no_server: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("VAULTMEM_")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # a user's Python keeps its .pyc files
    env["VAULTMEM_EMBEDDER"] = "none"
    if no_server:
        env["VAULTMEM_NO_SERVER"] = "1"
    return env


def _timed(args: list[str], env: dict[str, str], stdin: bytes = b"") -> tuple[float, bytes]:
    start = time.perf_counter()
    out = subprocess.run(args, input=stdin, env=env, capture_output=True, check=True).stdout
    return (time.perf_counter() - start) * 1000, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--rules", type=int, default=300)
    parser.add_argument("--filler", type=int, default=1000)
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-pre-tool-"))
    vault = _make_vault(root, args.rules, args.filler)
    base = [PY, "-m", "vaultmem", "--vault", str(vault)]
    subprocess.run([*base, "index"], check=True, env=_env(no_server=True), capture_output=True)
    inputs = {
        "Edit": {"file_path": f"{vault}/src/api/refunds.py", "old_string": "a", "new_string": "b"},
        "Bash": {"command": "cd /srv/app && uv run alembic upgrade head"},
    }
    started = subprocess.run(
        [*base, "serve", "--background", "--port", "0", "--json"],
        check=True,
        capture_output=True,
        env=_env(no_server=True),
    )
    pid = json.loads(started.stdout)["pid"]
    times: dict[str, list[float]] = {"python -c 'import json'": []}
    said: dict[str, bytes] = {}
    try:
        _timed([*base, "search", "warm up"], _env(no_server=False))
        for run in range(args.runs):
            times["python -c 'import json'"].append(
                _timed([PY, "-c", "import json"], _env(no_server=True))[0]
            )
            for server in (False, True):
                tag = "server" if server else "in process"
                for tool, tool_input in inputs.items():
                    session = f"bench-{tag}-{tool}-{run}-{time.time_ns()}"
                    stdin = _payload(vault, tool, tool_input, session)
                    took, said[tool] = _timed(
                        [*base, "hook", "pre-tool"], _env(no_server=not server), stdin
                    )
                    times.setdefault(f"hook pre-tool {tool} ({tag})", []).append(took)
    finally:
        os.kill(pid, signal.SIGTERM)
    warm = _warm(vault, inputs, args.calls)
    bare = median(times["python -c 'import json'"])
    print(f"vault: example-vault + {args.rules} rule notes + {args.filler} notes; {args.runs} runs")
    print("\n| whole process | median ms | p95 ms | × bare Python |")
    print("|---|---:|---:|---:|")
    for name, values in times.items():
        ms = median(values)
        print(f"| {name} | {ms:.1f} | {percentile(values, 95):.1f} | {ms / bare:.2f}× |")
    print("\n| in the server's process (rules_for) | p50 ms | p95 ms | calls |")
    print("|---|---:|---:|---:|")
    for tool, (p50, p95, n) in warm.items():
        print(f"| {tool} | {p50:.2f} | {p95:.2f} | {n} |")
    for tool, out in said.items():
        specific = json.loads(out or b"{}").get("hookSpecificOutput", {})
        shown = specific.get("additionalContext", "").count("\n- ")
        print(f"{tool}: {specific.get('permissionDecision', 'no decision')}, {shown} rules shown")
    shutil.rmtree(root, ignore_errors=True)


def _warm(vault: Path, inputs: dict[str, dict[str, object]], calls: int) -> dict[str, tuple]:
    """p50/p95 ms of rules_for in this process, after 10 warm-up calls (fresh sessions)."""
    from vaultmem import config
    from vaultmem.agent.rules import rules_for, tool_call

    cfg = config.load(vault_flag=str(vault), env=_env(no_server=True), cwd=Path.cwd())
    out = {}
    for tool, tool_input in inputs.items():
        call = tool_call(tool, tool_input, vault)
        samples = []
        for i in range(calls + 10):
            start = time.perf_counter()
            rules_for(cfg, call, session=f"warm-{tool}-{i}", now=datetime.now(UTC))
            if i >= 10:
                samples.append((time.perf_counter() - start) * 1000)
        out[tool] = (percentile(samples, 50), percentile(samples, 95), len(samples))
    return out


if __name__ == "__main__":
    main()
