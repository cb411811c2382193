"""`extract` on a 2 MB Claude Code transcript: time and peak memory, with and without an LLM.

    python benchmarks/bench_extract.py [--size-mb 2] [--llm-chunks 3] [--no-llm]

Generates a realistic session transcript (Claude Code JSONL: user prompts, assistant
text with thinking and tool calls, tool results holding file contents and command
output, a subagent sidechain now and then, summaries) of the given size, then runs
`python -m vaultmem extract` on a copy of the example vault as a whole process:

1. rule-based (no LLM), the whole transcript; again (nothing new: the re-run cost);
2. SmolLM2-135M on llama-cpp-python's server (test extras), on a prefix holding the
   first ``--llm-chunks`` chunks (a 2 MB session is dozens of chunks, minutes each on
   two cores), reported per chunk and extrapolated to the whole transcript.

Peak memory is the child's maximum resident set size (``wait4``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_expansion import MODEL, smollm2_server

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from vaultmem.agent.extract import CHUNK_CHARS, chunks  # noqa: E402
from vaultmem.agent.transcript import read_entries  # noqa: E402

SESSION = "b7e1d2c4-5a6f-4b8e-9c0d-1e2f3a4b5c6d"
CWD = "/home/dev/harbor"
SERVICES = ["api", "worker", "billing", "auth", "search", "notifier", "gateway", "ledger"]
TOOLS = ["Redis", "PgBouncer", "Kafka", "Celery", "structlog", "Alembic", "Helm", "k6"]
FILES = ["settings.py", "models.py", "views.py", "tasks.py", "client.py", "schema.sql"]
PROMPTS = [
    "The {s} service times out under load since yesterday's deploy. Can you find out why?",
    "Add retries with backoff to the {s} {t} client, and a metric for failures.",
    "Why does the {s} test suite flake on CI but not locally?",
    "Refactor {f} in {s} so the {t} settings come from the environment.",
    "Write a migration for the new {s} column and check it is reversible.",
]
SAYINGS = [
    "It turns out the {s} pool is capped at 10 connections, so requests queue behind the batch.",
    "Let's go with {t} for the {s} queue instead of polling because it already runs in prod.",
    "Don't run the {s} migration on the primary during business hours again.",
    "I prefer small focused commits over one big squash for the {s} changes.",
    "We decided to keep {t} on the {s} path and revisit it after the load test.",
    "The {s} handler now reads its timeout from settings, and the tests cover the retry path.",
    "I checked the {s} logs: the errors start exactly when the {t} connection drops.",
]


def _code(rng: random.Random, lines: int) -> str:
    out = []
    for i in range(lines):
        name = rng.choice(["conn", "pool", "retry", "event", "order", "user", "cache"])
        out.append(
            f"{i + 1:6}→    {name}_{rng.randint(0, 999)} = settings.get('{name.upper()}', {i})"
        )
    return "\n".join(out)


def make_transcript(path: Path, size: int, seed: int = 7) -> int:
    """Write a Claude Code JSONL transcript of about ``size`` bytes; its entry count."""
    rng = random.Random(seed)
    count, parent, written = 0, None, 0
    with path.open("w", encoding="utf-8") as fh:

        def emit(kind: str, side: bool = False, **fields: object) -> None:
            nonlocal count, parent, written
            count += 1
            uuid = f"00000000-0000-4000-8000-{count:012d}"
            entry = {
                "parentUuid": parent,
                "isSidechain": side,
                "userType": "external",
                "cwd": CWD,
                "sessionId": SESSION,
                "version": "2.0.31",
                "gitBranch": "main",
                "type": kind,
                **fields,
                "uuid": uuid,
                "timestamp": f"2026-11-30T{8 + count // 3600 % 12:02}:"
                f"{count // 60 % 60:02}:{count % 60:02}.000Z",
            }
            parent = uuid
            line = json.dumps(entry, ensure_ascii=False) + "\n"
            fh.write(line)
            written += len(line.encode("utf-8"))

        while written < size:
            s, t, f = rng.choice(SERVICES), rng.choice(TOOLS), rng.choice(FILES)
            fill = {"s": s, "t": t, "f": f}
            emit("user", message={"role": "user", "content": rng.choice(PROMPTS).format(**fill)})
            for step in range(rng.randint(2, 5)):
                tool_id = f"toolu_01{count:022d}"
                name = rng.choice(["Read", "Grep", "Bash", "Edit"])
                args = {
                    "Read": {"file_path": f"{CWD}/{s}/{f}"},
                    "Grep": {"pattern": t.upper(), "path": f"{CWD}/{s}"},
                    "Bash": {"command": f"pytest {s}/tests -x -q", "description": "Run tests"},
                    "Edit": {"file_path": f"{CWD}/{s}/{f}", "old_string": "a", "new_string": "b"},
                }[name]
                said = (
                    rng.choice(SAYINGS).format(**fill) if step == 0 else "Checking the next file."
                )
                emit(
                    "assistant",
                    message={
                        "id": f"msg_{count}",
                        "type": "message",
                        "role": "assistant",
                        "model": "claude-sonnet-4-5-20250929",
                        "content": [
                            {
                                "type": "thinking",
                                "thinking": "Let me look. " * 20,
                                "signature": "x" * 64,
                            },
                            {"type": "text", "text": said},
                            {"type": "tool_use", "id": tool_id, "name": name, "input": args},
                        ],
                        "usage": {"input_tokens": 4, "output_tokens": 210},
                    },
                )
                emit(
                    "user",
                    message={
                        "role": "user",
                        "content": [
                            {
                                "tool_use_id": tool_id,
                                "type": "tool_result",
                                "content": _code(rng, rng.randint(20, 120)),
                            }
                        ],
                    },
                    toolUseResult={"type": "text"},
                )
            if rng.random() < 0.1:
                emit("user", side=True, message={"role": "user", "content": f"Search {s} for {t}."})
                emit(
                    "assistant",
                    side=True,
                    message={
                        "role": "assistant",
                        "content": [{"type": "text", "text": f"Found {t} in {s}/{f}."}],
                    },
                )
            emit("user", message={"role": "user", "content": rng.choice(SAYINGS).format(**fill)})
            emit(
                "assistant",
                message={
                    "role": "assistant",
                    "content": [
                        {
                            "type": "text",
                            "text": rng.choice(SAYINGS).format(**fill)
                            + "\n\nNext: run the load test.",
                        }
                    ],
                },
            )
    return count


def run(vault: Path, transcript: Path, env: dict[str, str]) -> tuple[dict, float, float]:
    """``vaultmem extract --json`` as a process: (report, seconds, peak RSS in MiB)."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "vaultmem",
            "--vault",
            str(vault),
            "extract",
            str(transcript),
            "--json",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=REPO,
    )
    out = proc.stdout.read() if proc.stdout else b""
    err = proc.stderr.read() if proc.stderr else b""
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"extract failed: {err.decode()[-2000:]}")
    return json.loads(out), seconds, usage.ru_maxrss / 1024


def prefix(src: Path, dest: Path, n_chunks: int) -> None:
    """Copy the entries of ``src`` that make up its first ``n_chunks`` chunks into ``dest``."""
    end = 0
    entries = []
    for entry in read_entries(src):
        entries.append(entry)
        if sum(1 for _ in chunks(entries)) > n_chunks:
            break
        end = entry.end
    with src.open("rb") as fh:
        dest.write_bytes(fh.read(end))


def main() -> None:
    """Generate, run, print one JSON line per measurement."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--size-mb", type=float, default=2.0)
    parser.add_argument("--llm-chunks", type=int, default=3)
    parser.add_argument("--no-llm", action="store_true")
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if not k.startswith("VAULTMEM_")}
    env["VAULTMEM_EMBEDDER"] = "none"
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        transcript = root / "session.jsonl"
        entries = make_transcript(transcript, int(args.size_mb * 1024 * 1024))
        all_chunks = sum(1 for _ in chunks(read_entries(transcript)))
        size = transcript.stat().st_size
        print(
            json.dumps(
                {
                    "transcript_bytes": size,
                    "entries": entries,
                    "chunks": all_chunks,
                    "chunk_chars": CHUNK_CHARS,
                }
            )
        )
        vault = root / "vault"
        shutil.copytree(REPO / "example-vault", vault)
        subprocess.run(
            [sys.executable, "-m", "vaultmem", "--vault", str(vault), "index"],
            env=env,
            cwd=REPO,
            check=True,
            stdout=subprocess.DEVNULL,
        )
        report, seconds, rss = run(vault, transcript, env)
        print(
            json.dumps(
                {
                    "mode": report["mode"],
                    "seconds": round(seconds, 2),
                    "peak_rss_mib": round(rss, 1),
                    "memories": len(report["memories"]),
                    "created": report["created"],
                }
            )
        )
        again, seconds, rss = run(vault, transcript, env)
        print(
            json.dumps(
                {
                    "mode": "rerun (nothing new)",
                    "seconds": round(seconds, 2),
                    "peak_rss_mib": round(rss, 1),
                    "created": again["created"],
                }
            )
        )
        if args.no_llm:
            return
        part = root / "prefix.jsonl"
        prefix(transcript, part, args.llm_chunks)
        fresh = root / "vault-llm"
        shutil.copytree(REPO / "example-vault", fresh)
        with smollm2_server(n_ctx=4096) as url:  # one chunk, prompt and reply
            llm_env = {
                **env,
                "VAULTMEM_LLM_URL": url,
                "VAULTMEM_LLM_MODEL": MODEL,
                "VAULTMEM_LLM_TIMEOUT": "600",
            }
            report, seconds, rss = run(fresh, part, llm_env)
        per_chunk = seconds / max(report["chunks"], 1)
        print(
            json.dumps(
                {
                    "mode": report["mode"],
                    "prefix_bytes": part.stat().st_size,
                    "chunks": report["chunks"],
                    "seconds": round(seconds, 1),
                    "seconds_per_chunk": round(per_chunk, 1),
                    "peak_rss_mib": round(rss, 1),
                    "memories": len(report["memories"]),
                    "created": report["created"],
                    "warnings": report["warnings"],
                    "whole_transcript_estimate_s": round(per_chunk * all_chunks),
                }
            )
        )


if __name__ == "__main__":
    main()
