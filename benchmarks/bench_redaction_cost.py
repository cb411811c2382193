"""What redaction costs `extract`: whole-process runs with it and without it, interleaved.

    python benchmarks/bench_redaction_cost.py [--runs 9] [--size-mb 2] [--json]

Two transcripts: ``tests/data/claude/transcript.jsonl`` (the example of
docs/commands.md) and a generated Claude Code session of ``--size-mb``
(``bench_extract.make_transcript``: prompts, tool calls, tool output, thinking). Each
run is ``python -m vaultmem extract T --json`` as a process (wall time, and CPU time
from ``wait4``: what a busy machine disturbs least) on a fresh copy of
example-vault (indexed once; copied with its cache), without an embedder or a model, so
nothing else hides the cost. *Without* redaction, ``vaultmem.agent.redact`` is replaced
by a module whose ``redact`` returns its text before the CLI starts: detect-secrets, the
token families and the word table are never loaded. The two kinds alternate (with,
without, without, with…) so that a busy machine slows both alike; the medians and the
share of the time redaction takes, ``(with - without) / with``, are reported.

In process (CPU time), the steps apart: loading the rules (the first redaction: detect-secrets'
plugins, the families, the word table) and redacting what `extract` reads of each
transcript (entries' text, tool arguments, ids).
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
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
from vaultmem.cache_folder import mark_copy  # noqa: E402

EXAMPLE = REPO / "tests" / "data" / "claude" / "transcript.jsonl"
WITHOUT = (
    "import sys, types\n"
    "stub = types.ModuleType('vaultmem.agent.redact')\n"
    "stub.REDACTED = '[REDACTED]'\n"
    "stub.redact = lambda text: text\n"
    "import vaultmem.agent\n"
    "sys.modules['vaultmem.agent.redact'] = stub\n"
    "sys.argv = ['vaultmem', *sys.argv[1:]]\n"
    "from vaultmem.entry import main\n"
    "main()\n"
)


def _env(home: Path) -> dict[str, str]:
    """No endpoints, no user config; bytecode cached (in a folder of the run), as an
    installed package has it: without it every process compiles every module it imports."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("VAULTMEM_")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.update(
        VAULTMEM_EMBEDDER="none",
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        PYTHONPYCACHEPREFIX=str(home / "pycache"),
    )
    return env


def _indexed(work: Path, env: dict[str, str]) -> Path:
    vault = work / "template"
    shutil.copytree(REPO / "example-vault", vault, ignore=shutil.ignore_patterns(".vaultmem"))
    subprocess.run(
        [sys.executable, "-m", "vaultmem", "--vault", str(vault), "index"],
        env=env,
        check=True,
        capture_output=True,
    )
    return vault


def _run(
    template: Path, transcript: Path, env: dict[str, str], redacted: bool, n: int
) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one `extract` process on a fresh copy of the vault.
    CPU time (user + system, from ``wait4``) is what a busy shared machine disturbs
    least."""
    vault = template.with_name(f"run-{n}")
    shutil.copytree(template, vault)
    mark_copy(vault / ".vaultmem")  # our own index, copied: read as it is
    head = ["-m", "vaultmem"] if redacted else ["-c", WITHOUT]
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, *head, "--vault", str(vault), "extract", str(transcript), "--json"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    err = proc.stderr.read() if proc.stderr else b""
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(err.decode())
    shutil.rmtree(vault)
    return seconds, usage.ru_utime + usage.ru_stime


def whole_process(transcript: Path, runs: int, work: Path) -> dict:
    """Medians of interleaved `extract` runs with and without redaction."""
    env = _env(work / "home")
    template = _indexed(work, env)
    times: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
    n = 0
    for redacted in (True, False):  # warm up: bytecode written, files in the page cache
        n += 1
        _run(template, transcript, env, redacted, n)
    for i in range(runs):
        for redacted in (True, False) if i % 2 == 0 else (False, True):
            n += 1
            times[redacted].append(_run(template, transcript, env, redacted, n))
    shutil.rmtree(template)
    with_, without = (statistics.median(t[0] for t in times[k]) for k in (True, False))
    cpu_with, cpu_without = (statistics.median(t[1] for t in times[k]) for k in (True, False))
    return {
        "transcript": str(
            transcript.relative_to(REPO) if transcript.is_relative_to(REPO) else transcript.name
        ),
        "bytes": transcript.stat().st_size,
        "runs": runs,
        "with_s": with_,
        "without_s": without,
        "share": (with_ - without) / with_,
        "cpu_with_s": cpu_with,
        "cpu_without_s": cpu_without,
        "cpu_share": (cpu_with - cpu_without) / cpu_with,
        "raw": {"with": times[True], "without": times[False]},
    }


def steps(transcript: Path, env: dict[str, str]) -> dict:
    """In a fresh process: loading the rules, then redacting what extract reads."""
    code = (
        "import json, sys, time\n"
        "t0 = time.process_time()\n"
        "from vaultmem.agent.redact import redact\n"
        "redact('warm up: the password is x')\n"
        "t1 = time.process_time()\n"
        "from vaultmem.agent.transcript import read_entries\n"
        "n = sum(1 for _ in read_entries(__import__('pathlib').Path(sys.argv[1])))\n"
        "t2 = time.process_time()\n"
        "import vaultmem.agent.transcript as t\n"
        "t.redact = lambda s: s\n"
        "t._short.cache_clear()\n"
        "sum(1 for _ in t.read_entries(__import__('pathlib').Path(sys.argv[1])))\n"
        "t3 = time.process_time()\n"
        "print(json.dumps({'load_s': t1 - t0, 'read_redacted_s': t2 - t1,"
        " 'read_plain_s': t3 - t2, 'entries': n}))\n"
    )
    command = [sys.executable, "-c", code, str(transcript)]
    subprocess.run(command, capture_output=True, check=True, cwd=REPO, env=env)  # bytecode
    out = subprocess.run(
        command, capture_output=True, text=True, check=True, cwd=REPO, env=env
    ).stdout
    found = json.loads(out)
    found["redact_entries_s"] = max(found["read_redacted_s"] - found["read_plain_s"], 0.0)
    return found


def main() -> int:
    """Run both transcripts; print the numbers (``--json``: one object)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=9, help="runs of each kind per transcript")
    parser.add_argument("--size-mb", type=float, default=2.0, help="the generated transcript")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    from bench_extract import make_transcript

    report = {}
    with tempfile.TemporaryDirectory() as tmp:
        big = Path(tmp) / "session.jsonl"
        make_transcript(big, int(args.size_mb * 1_000_000))
        for name, transcript in (("example", EXAMPLE), ("generated", big)):
            work = Path(tmp) / name
            work.mkdir()
            report[name] = {
                "extract": whole_process(transcript, args.runs, work),
                "steps": steps(transcript, _env(work / "home")),
            }
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    for name, r in report.items():
        e, s = r["extract"], r["steps"]
        print(
            f"{name} ({e['transcript']}, {e['bytes']:,} bytes, {s['entries']} entries), "
            f"medians of {e['runs']} interleaved runs each:\n"
            f"  wall: extract {e['with_s']:.3f} s with redaction, {e['without_s']:.3f} s "
            f"without: redaction {e['share']:.1%}\n"
            f"  CPU:  extract {e['cpu_with_s']:.3f} s with redaction, {e['cpu_without_s']:.3f} s "
            f"without: redaction {e['cpu_share']:.1%}"
        )
        print(
            f"  steps: loading the rules {s['load_s'] * 1000:.0f} ms, redacting the entries "
            f"{s['redact_entries_s'] * 1000:.0f} ms"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
