"""Shared pieces of the benchmark scripts: making vaults, loading queries, scoring runs."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
BENCH = SHARED / "bench"
MANPAGES = BENCH / "manpages"
VAULTS = REPO / "bench-vaults"


def make_vault(corpus: str, *, frontmatter: bool = False) -> Path:
    """The vault for ``corpus`` ("dev" or "scale"), written by make_vault.py once and reused."""
    name = corpus + ("-fm" if frontmatter else "")
    out = VAULTS / name
    if not (out / ".made").exists():
        args = [
            sys.executable,
            str(BENCH / "make_vault.py"),
            str(MANPAGES / corpus / "corpus.jsonl"),
            str(out),
            "--force",
        ]
        if frontmatter:
            args.append("--frontmatter")
        subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
        (out / ".made").write_text("ok\n")
    return out


def baseline_tree(rev: str = "83064f7") -> Path:
    """A detached worktree of ``rev`` (made once), to run the old code with PYTHONPATH=<it>."""
    out = VAULTS / f"baseline-{rev}"
    if not (out / "vaultmem").is_dir():
        VAULTS.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "-C", str(REPO), "worktree", "prune"], check=True)
        subprocess.run(
            ["git", "-C", str(REPO), "worktree", "add", "--detach", str(out), rev],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    return out


def vaultmem_script() -> str:
    """The installed `vaultmem` script beside this Python (what hooks and cron run)."""
    import shutil

    found = shutil.which("vaultmem", path=str(Path(sys.executable).parent))
    if found is None:
        sys.exit("the vaultmem script is not installed next to this Python")
    return found


def queries(corpus: str = "dev") -> list[dict]:
    """The gold queries of a corpus split."""
    path = MANPAGES / corpus / "queries.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def note_id(path: str) -> str:
    """A note path back to its corpus id: ``man1/cp.1.md`` → ``cp.1``."""
    return path.rsplit("/", 1)[-1][: -len(".md")]


def score(run: list[dict], corpus: str = "dev", k: int = 10) -> dict:
    """Score a run with the benchmark's own score.py; returns its JSON line."""
    run_file = VAULTS / "run.jsonl"
    run_file.write_text("".join(json.dumps(r) + "\n" for r in run))
    out = subprocess.run(
        [
            sys.executable,
            str(BENCH / "score.py"),
            str(MANPAGES / corpus / "queries.jsonl"),
            str(run_file),
            "--k",
            str(k),
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def percentile(values: list[float], pct: float) -> float:
    """The pct-th percentile (nearest rank) of ``values``."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(pct / 100 * len(ordered)) - 1))]


def median(values: list[float]) -> float:
    """The median."""
    return statistics.median(values)


DOCS = REPO / "benchmarks" / "docs_corpus"


def docs_vault() -> Path:
    """The documentation-genre vault (benchmarks/docs_corpus, Nushell's docs), written from
    its corpus.jsonl once and reused: ``<id>.md`` holding ``# {title}\\n\\n{body}\\n``."""
    out = VAULTS / "docs"
    if not (out / ".made").exists():
        for line in (DOCS / "corpus.jsonl").read_text("utf-8").splitlines():
            if not line.strip():
                continue
            doc = json.loads(line)
            path = out / f"{doc['id']}.md"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"# {doc['title']}\n\n{doc['body']}\n", "utf-8")
        (out / ".made").write_text("ok\n")
    return out
