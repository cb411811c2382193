"""What issue 27's checks cost where users wait: whole-process `search` (BM25) and `hook
prompt` against main's code (32a09eb), in interleaved pairs on the man-page dev vault.

Every run loads the configuration (the trust rule, the credential rule), checks the cache
(owner, mode, marker, the git index stamp) and, for the hook, renders the context block in
the sandbox. Each side has its own cache of the same vault, indexed once (BM25 only). A
third case runs the hook in a trusted vault that ships a template override, where each
render re-reads the digest of the trusted files (the worst case, no baseline: main had no
trust). In process (no server), no embedding, N runs each, medians.

    python benchmarks/bench_foreign_vault.py [--runs 20] [--baseline /work/main/.venv/bin/vaultmem]

Reported: each command's median, and for each measure the median of the per-run ratios
of the pair (i27 / main).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from common import VAULTS, make_vault, queries, vaultmem_script

SESSION = "bench-foreign-vault"
EXPECTED = "DROP_POLICY"  # the note the dev query of the benchmark is about


def _payload(vault: Path, prompt: str, session: int) -> bytes:
    data = {
        "session_id": f"{SESSION}-{os.getpid()}-{session}",
        "transcript_path": f"/tmp/{SESSION}.jsonl",
        "cwd": str(vault),
        "permission_mode": "default",
        "hook_event_name": "UserPromptSubmit",
        "prompt": prompt,
    }
    return json.dumps(data).encode()


def _side_env(env: dict[str, str], side: str) -> dict[str, str]:
    """The environment of one side: its bytecode cached in a folder of its own, so that a
    baseline checkout whose ``__pycache__`` is stale or read-only does not recompile its
    modules on every run (which is not what a user's install does)."""
    return {**env, "PYTHONPYCACHEPREFIX": str(VAULTS / "pycache" / side)}


def _once(cmd: list[str], stdin: bytes, env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(cmd, input=stdin, env=env, capture_output=True, check=True)
    took = time.perf_counter() - start
    # Both sides must have answered, not failed fast: the first hit (search) or the
    # context block (hook) names the note.
    if EXPECTED.encode() not in done.stdout:
        sys.exit(f"{cmd} did not answer as expected: {done.stdout[:200]!r} {done.stderr!r}")
    return took


def _trusted_copy(vault: Path, env: dict[str, str], script: str) -> Path:
    """A copy of the vault with a .vaultmem.toml and a context.j2 override, trusted."""
    copy = VAULTS / "dev-fm-trusted"
    if not copy.is_dir():
        shutil.copytree(vault, copy, ignore=shutil.ignore_patterns(".vaultmem", ".made"))
    (copy / ".vaultmem.toml").write_text('[llm]\nurl = "http://127.0.0.1:9"\n', "utf-8")
    override = copy / ".vaultmem.d" / "templates" / "context.j2"
    override.parent.mkdir(parents=True, exist_ok=True)
    listed = "{% for n in notes %}- {{ n.title }} ({{ n.path }})\n{% endfor %}"
    override.write_text(f"<vault-context>\n{listed}</vault-context>\n", "utf-8")
    subprocess.run(
        [script, "--vault", str(copy), "trust"], env=env, check=True, stdout=subprocess.DEVNULL
    )
    subprocess.run(
        [script, "--vault", str(copy), "index"], env=env, check=True, stdout=subprocess.DEVNULL
    )
    return copy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--baseline", default="/work/main/.venv/bin/vaultmem")
    args = parser.parse_args()
    vault = make_vault("dev", frontmatter=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("VAULTMEM_")}
    env.update(VAULTMEM_EMBEDDER="none", VAULTMEM_NO_SERVER="1", VAULTMEM_HOOKS_START_SERVER="0")
    sides = {"main": args.baseline, "i27": vaultmem_script()}
    caches = {name: VAULTS / "caches" / f"dev-fm-foreign-{name}" for name in sides}
    for name, script in sides.items():
        index = [script, "--vault", str(vault), "--cache-dir", str(caches[name]), "index"]
        subprocess.run(index, env=_side_env(env, name), check=True, stdout=subprocess.DEVNULL)
    trusted = _trusted_copy(vault, env, sides["i27"])
    query = queries("dev")[2]["query"]
    commands: dict[str, list[str]] = {}
    for name, script in sides.items():
        base = [script, "--vault", str(vault), "--cache-dir", str(caches[name])]
        commands[f"search_{name}"] = [*base, "search", query, "-n", "10"]
        commands[f"hook_prompt_{name}"] = [*base, "hook", "prompt"]
    commands["hook_prompt_trusted_override"] = [
        sides["i27"],
        "--vault",
        str(trusted),
        "hook",
        "prompt",
    ]
    # Each measure is a pair run back to back (in turn which goes first), so that the
    # load of a shared machine, which drifts over minutes, weighs on both alike.
    pairs = {
        "search": ("search_main", "search_i27"),
        "hook_prompt": ("hook_prompt_main", "hook_prompt_i27"),
        "trusted_override": ("hook_prompt_main", "hook_prompt_trusted_override"),
    }
    times: dict[str, list[float]] = {name: [] for name in commands}
    ratios: dict[str, list[float]] = {name: [] for name in pairs}
    for run in range(args.runs):
        for measure, pair in pairs.items():
            took = {}
            for name in pair if run % 2 == 0 else pair[::-1]:
                side = "main" if name.endswith("main") else "i27"
                # A fresh session each time: a note is shown once per session.
                session = len(times[name]) * 10 + list(commands).index(name)
                stdin = _payload(vault, f"How do I {query}?", session) if "hook" in name else b""
                took[name] = _once(commands[name], stdin, _side_env(env, side))
                times[name].append(took[name])
            ratios[measure].append(took[pair[1]] / took[pair[0]])
    medians = {name: statistics.median(values) for name, values in times.items()}
    result = {
        "runs": args.runs,
        "query": query,
        **{f"{name}_s": round(value, 4) for name, value in medians.items()},
        **{
            f"{measure}_ratio_median_of_pairs": round(statistics.median(values), 3)
            for measure, values in ratios.items()
        },
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
