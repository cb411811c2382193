"""A write keeps its vectors: what does the fragment bookkeeping cost a one-note write?

Whole-process `vaultmem touch NOTE` on an embedded vault, the old code against the new,
interleaved in one run:

    python benchmarks/bench_write_vectors.py [--notes 20000] [--runs 9] [--before DIR] [--after DIR]

Two vaults: example-vault (54 notes) and a synthetic vault of ``--notes`` notes (three
sections of prose each, about three fragments a note: an embedded-size fragment map),
made once under bench-vaults/write-vectors-<N>/. Each is indexed and embedded by the old
code through the in-repo fake OpenAI-compatible endpoint (tests/fake_openai_server.py:
hashed bag-of-words vectors over real HTTP, fragments of 1,000 characters like the
default MiniLM's, which would take hours on 20k notes here). The new code gets a copy of
that vault and cache; its first `index` moves the old ``fragments.json`` into the
manifest (and rebuilds the keyword index if the two codes' schemas differ), embedding
nothing, so both codes hold the same vectors.

The codes are trees holding a ``vaultmem/`` package: ``--before DIR`` (e.g. ``git archive
8093c4c vaultmem | tar -x -C DIR``; by default ``baseline_tree("8093c4c")``, a git
worktree made once) and ``--after DIR`` (default: this checkout). Every run touches the
note once per code, the order alternating between runs (a touch is a write every time:
``use_count`` + 1, so the note gets new content and its fragments are re-linked). Medians
of wall time and of CPU time (user + system: what other load on a shared machine disturbs
least), with ``python -c pass`` for the interpreter's own share; afterwards each manifest
must hold the note's final content (a refresh skipped would time nothing). The old code's
embedded vaults are kept under bench-vaults/write-vectors-caches/ (delete to rebuild).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import random
import resource
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import REPO, VAULTS, baseline_tree, median

sys.path.insert(0, str(REPO / "tests"))
from fake_openai_server import FakeOpenAIServer  # noqa: E402

from vaultmem.cache_folder import mark_copy  # noqa: E402

EXAMPLE_NOTE = "decisions/Redis for caching.md"
SYNTHETIC_NOTE = "notes/000/note 00000.md"
VOCABULARY = (
    "cache redis postgres replica pool kafka topic consumer deploy helm chart rollout "
    "canary latency budget alert pager runbook incident review python typing lint test "
    "fixture vector index shard segment merge query ranking session token quota region "
    "failover backup restore schema migration column partition vacuum bloat"
)
WORDS = VOCABULARY.split()


def synthetic_vault(count: int) -> Path:
    """``count`` notes of three ~700-character sections each, written once."""
    out = VAULTS / f"write-vectors-{count}"
    if (out / ".made").exists():
        return out
    shutil.rmtree(out, ignore_errors=True)
    rng = random.Random(17)
    for i in range(count):
        folder = out / "notes" / f"{i // 200:03}"
        folder.mkdir(parents=True, exist_ok=True)
        sections = []
        for k in range(3):
            prose = " ".join(rng.choice(WORDS) for _ in range(100))
            sections.append(f"## Part {k + 1}\n\n{prose.capitalize()}.\n")
        (folder / f"note {i:05}.md").write_text(f"# Note {i}\n\n" + "\n".join(sections))
    (out / ".made").write_text("ok\n")
    return out


def environment(code: Path, home: Path, url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("VAULTMEM_")}
    env.update(
        PYTHONPATH=str(code),
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        VAULTMEM_NO_SERVER="1",
        VAULTMEM_EMBEDDER="endpoint",
        VAULTMEM_EMBED_URL=url,
        VAULTMEM_EMBED_MODEL="fake-embed",
        VAULTMEM_EMBED_API_KEY="sk-bench",
        VAULTMEM_EMBED_BATCH_SIZE="256",
        VAULTMEM_EMBED_MAX_CHARS="1000",
    )
    return env


def run(code: Path, env: dict[str, str], vault: Path, *args: str) -> tuple[float, float]:
    """Wall and CPU (user + system) seconds of one `python -m vaultmem --vault VAULT ARGS…`
    of ``code`` (CPU time is what other load on the machine disturbs least)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    # cwd=code: `-m` puts the cwd first on sys.path, ahead of the editable install.
    done = subprocess.run(
        [sys.executable, "-m", "vaultmem", "--vault", str(vault), *args],
        capture_output=True,
        text=True,
        cwd=code,
        env=env,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - children.ru_utime - children.ru_stime
    if done.returncode != 0 or "warning" in done.stderr:
        raise SystemExit(f"vaultmem {' '.join(args)} ({code}): {done.returncode} {done.stderr}")
    return wall, cpu


def prepared(source: Path, work: Path, before: Path, env: dict[str, dict[str, str]]) -> Path:
    """The old code's embedded vault (built once per source, reused across runs)."""
    built = VAULTS / "write-vectors-caches" / source.name
    if not (built / ".embedded").exists():
        shutil.rmtree(built, ignore_errors=True)
        shutil.copytree(source, built, ignore=shutil.ignore_patterns(".vaultmem", ".made"))
        started = time.perf_counter()
        run(before, env["before"], built, "index")
        print(
            f"  {source.name}: indexed and embedded by the old code in "
            f"{time.perf_counter() - started:.0f} s",
            flush=True,
        )
        (built / ".embedded").write_text("ok\n")
    out = work / source.name
    shutil.copytree(built, out)
    mark_copy(out / ".vaultmem")  # the index built above, copied: read as it is
    return out


def fragment_map_bytes(vault: Path) -> int:
    legacy = vault / ".vaultmem" / "fragments.json"
    return legacy.stat().st_size if legacy.exists() else 0


def check_refreshed(vault: Path, note: str, what: str) -> None:
    """The manifest holds the note's content as the last touch wrote it."""
    digest = hashlib.blake2b((vault / note).read_bytes(), digest_size=16).hexdigest()
    with contextlib.closing(sqlite3.connect(vault / ".vaultmem" / "manifest.sqlite")) as db:
        row = db.execute("SELECT hash FROM notes WHERE path = ?", (note,)).fetchone()
    if row is None or row[0] != digest:
        raise SystemExit(f"{what}: the touches did not refresh the index")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--notes", type=int, default=20000)
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--before", type=Path, help="a tree with the old code's vaultmem/")
    parser.add_argument("--after", type=Path, default=REPO, help="a tree with the new code's")
    args = parser.parse_args()
    before = (args.before or baseline_tree("8093c4c")).resolve()
    codes = {"before": before, "after": args.after.resolve()}
    sources = {"example-vault": REPO / "example-vault", "synthetic": synthetic_vault(args.notes)}
    notes = {"example-vault": EXAMPLE_NOTE, "synthetic": SYNTHETIC_NOTE}
    with FakeOpenAIServer() as fake, tempfile.TemporaryDirectory(prefix="vm-wv-") as tmp:
        work = Path(tmp)
        env = {name: environment(code, work / "home", fake.url) for name, code in codes.items()}
        vaults: dict[tuple[str, str], Path] = {}
        for label, source in sources.items():
            for name in codes:
                vaults[(label, name)] = prepared(source, work / name, before, env)
            map_bytes = fragment_map_bytes(vaults[(label, "after")])
            moved, _ = run(codes["after"], env["after"], vaults[(label, "after")], "index")
            print(
                f"  {label}: fragments.json {map_bytes / 1e6:.2f} MB, moved into the "
                f"manifest by the new code's first `index` in {moved:.2f} s",
                flush=True,
            )
        python = [0.0] * args.runs
        wall: dict[tuple[str, str], list[float]] = {key: [] for key in vaults}
        cpu: dict[tuple[str, str], list[float]] = {key: [] for key in vaults}
        for i in range(args.runs):
            start = time.perf_counter()
            subprocess.run([sys.executable, "-c", "pass"], check=True)
            python[i] = time.perf_counter() - start
            order = list(codes) if i % 2 == 0 else list(reversed(codes))
            for label in sources:
                for name in order:
                    took = run(codes[name], env[name], vaults[(label, name)], "touch", notes[label])
                    wall[(label, name)].append(took[0])
                    cpu[(label, name)].append(took[1])
        for (label, name), vault in vaults.items():
            check_refreshed(vault, notes[label], f"{label} ({name})")
    print(
        f"\nwhole-process `touch`, median of {args.runs} "
        f"(`python -c pass`: {median(python) * 1000:.1f} ms)\n"
    )
    for what, took in (("wall", wall), ("CPU (user + system)", cpu)):
        print(f"{what}:\n\n| vault | before | after | after/before |\n|---|---:|---:|---:|")
        for label in sources:
            old, new = median(took[(label, "before")]), median(took[(label, "after")])
            print(f"| {label} | {old * 1000:.1f} ms | {new * 1000:.1f} ms | {new / old:.2f} |")
        for name in codes:
            small, big = (median(took[(label, name)]) for label in sources)
            print(f"{name}: synthetic / example-vault = {big / small:.2f} (target ≤ 1.5)")
        print()


if __name__ == "__main__":
    main()
