"""Memory evolution: is the note that is valid *now* the first answer, before and after
`consolidate`?

    python benchmarks/bench_memory_evolution.py [--vectors] [--code PATH | --rev REV]

Replays ``benchmarks/data/memory_evolution/events.jsonl`` (made by
``memory_evolution.py``) into a fresh vault in a temporary folder: ``vaultmem init``, then
every memory through ``api.remember`` in one process (``--replay cli``: one ``vaultmem
remember`` process per memory, with ``VAULTMEM_NOW`` at its time), in time order; a
memory that the simulated agent knows replaces another passes that note's path as
``supersedes``. Then ``index`` (keyword only; ``--vectors``: and ``embed`` with the
in-process MiniLM) and, with ``VAULTMEM_NOW`` at the scenario's "now", every question of
``questions.jsonl`` as one ``vaultmem query QUESTION --json -n 10`` process:

- *current@1*: the top hit is the current note (its title, or a paraphrase of it written
  by the same chatty session, or a note merged from one of those);
- *MRR@10*: 1/rank of the first such hit in the top 10;
- *stale@1*: the top hit is a version that the current note replaced.

When the vaultmem that runs has query routes (``query --help`` names why, when and
entity), every question runs a second time with ``--intent KIND``. When it has
``consolidate``: ``consolidate --dry-run --json`` counts the clusters it would merge
outright (action "merge": the auto-merge band, not left to an LLM), ``consolidate``
merges them, ``index`` catches up, a second dry run counts the duplicates left and the
questions run again (AFTER). Prints a markdown table and one JSON line; ``--keep DIR``
keeps the final vault, ``--misses`` lists the questions missed at 1, ``--questions N``
runs the first N only (a smoke run).

``supersedes`` is passed as the replaced note's path, not its title: on a vault that was
never indexed, ``remember --supersedes TITLE`` finds no note.

``--code PATH`` runs the vaultmem of another source tree (a git worktree: ``--rev REV``
makes one under bench-vaults/), so the numbers of a commit can be measured while the
working tree changes.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from common import baseline_tree

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "memory_evolution"
K = 10
AUTO_MERGE = 0.9  # the cohesion threshold for merging without asking
ROUTES = ("why", "when", "entity")
MERGE_KEYS = ("promoted_from", "duplicate_of", "merged_from")
_WIKILINK = re.compile(r"\[\[([^\]|#]+)")


# --------------------------------------------------------------------------- running


class Failed(Exception):
    """A vaultmem process that exited with an error (its last stderr lines)."""


@dataclass
class Vaultmem:
    """`vaultmem` processes on one vault, with one source tree and embedder."""

    vault: Path
    code: Path | None
    vectors: bool
    now: str
    log: list[tuple[str, float]] = field(default_factory=list)

    def env(self, now: str | None = None) -> dict[str, str]:
        """The environment of a run: no user config, the chosen embedder and clock."""
        out = {k: v for k, v in os.environ.items() if not k.startswith("VAULTMEM_")}
        out["VAULTMEM_CONFIG"] = str(self.vault / ".no-user-config.toml")
        out["VAULTMEM_EMBEDDER"] = "local" if self.vectors else "none"
        out["VAULTMEM_NOW"] = now or self.now
        if self.code is not None:
            out["PYTHONPATH"] = str(self.code)
        return out

    def run(self, *args: str, now: str | None = None, check: bool = True) -> str:
        """stdout of ``vaultmem --vault VAULT ARGS…`` (run outside any source tree, so the
        chosen code is imported); ``init`` runs without ``--vault``."""
        where = [] if args[0] == "init" else ["--vault", str(self.vault)]
        done = subprocess.run(
            [sys.executable, "-m", "vaultmem", *where, *args],
            capture_output=True,
            text=True,
            env=self.env(now),
            cwd=self.vault.parent,
            check=False,
        )
        if check and done.returncode != 0:
            tail = "\n".join(done.stderr.strip().splitlines()[-3:])
            raise Failed(f"vaultmem {' '.join(args[:2])} failed ({done.returncode}): {tail}")
        return done.stdout

    def timed(self, label: str, *args: str) -> str:
        """``run``, its wall time kept under ``label``."""
        start = time.perf_counter()
        out = self.run(*args)
        self.log.append((label, time.perf_counter() - start))
        return out


def read_jsonl(path: Path) -> list[dict]:
    """The objects of a JSON-lines file."""
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


# --------------------------------------------------------------------------- replay


def replay_worker(vault: str, events_file: str) -> None:
    """In a child process (``_replay``): every event through ``api.remember`` with one
    OpenVault; prints ``{title: path}``."""
    from datetime import datetime

    from vaultmem import api
    from vaultmem.config import load
    from vaultmem.model import RememberRequest

    config = load(vault_flag=vault, env=dict(os.environ), cwd=Path(vault))
    opened = api.OpenVault(config)
    paths: dict[str, str] = {}
    for event in read_jsonl(Path(events_file)):
        old = paths.get(event["supersedes"]) if event["supersedes"] else None
        request = RememberRequest(
            event["text"], event["title"], event["type"], tuple(event["tags"]), None, old
        )
        now = datetime.fromisoformat(event["time"].replace("Z", "+00:00"))
        paths[event["title"]] = api.remember(opened, request, now=now).path
    opened.close()
    print(json.dumps(paths))


def replay(vm: Vaultmem, events: list[dict], how: str) -> dict[str, str]:
    """Write every memory into the vault; ``{title: vault path}``."""
    start = time.perf_counter()
    if how == "api":
        done = subprocess.run(
            [sys.executable, __file__, "_replay", str(vm.vault), str(DATA / "events.jsonl")],
            capture_output=True,
            text=True,
            env={**vm.env(), "VAULTMEM_EMBEDDER": "none"},
            cwd=vm.vault.parent,
            check=False,
        )
        if done.returncode != 0:
            raise SystemExit(f"replay failed: {done.stderr}")
        paths: dict[str, str] = json.loads(done.stdout.strip().splitlines()[-1])
    else:
        paths = {}
        for event in events:
            args = ["remember", event["text"], "--title", event["title"], "--json"]
            args += ["--type", event["type"], "--tags", ",".join(event["tags"])]
            if event["supersedes"]:
                args += ["--supersedes", paths[event["supersedes"]]]
            out = vm.run(*args, now=event["time"])
            paths[event["title"]] = json.loads(out.strip().splitlines()[-1])["path"]
    vm.log.append((f"replay ({how}, {len(events)} memories)", time.perf_counter() - start))
    return paths


# --------------------------------------------------------------------------- scoring


def merged_from(vault: Path) -> dict[str, set[str]]:
    """``{note title: titles of the notes it was merged from}``, from the merge links."""
    import yaml

    titles: dict[str, str] = {}
    links: dict[str, set[str]] = {}
    for path in vault.rglob("*.md"):
        text = path.read_text(encoding="utf-8")
        if ".vaultmem" in path.parts or not text.startswith("---"):
            continue
        try:
            meta = yaml.safe_load(text.split("---", 2)[1]) or {}
        except yaml.YAMLError:
            continue
        title = str(meta.get("title") or path.stem)
        titles[path.stem.lower()] = title
        for key in MERGE_KEYS:
            values = meta.get(key) or []
            for value in values if isinstance(values, list) else [values]:
                for target in _WIKILINK.findall(str(value)):
                    stem = target.strip().rsplit("/", 1)[-1].removesuffix(".md").lower()
                    links.setdefault(title, set()).add(stem)
    return {t: {titles.get(s, s) for s in stems} for t, stems in links.items()}


def ask(vm: Vaultmem, questions: list[dict], routed: bool, merges: dict[str, set[str]]) -> dict:
    """Run every question; current@1, MRR@10 and stale@1, overall and by kind."""
    start = time.perf_counter()
    rows = []
    for q in questions:
        args = ["query", q["question"], "--json", "-n", str(K), "-q"]
        if routed:
            args += ["--intent", q["kind"]]
        hits = [json.loads(line) for line in vm.run(*args).splitlines() if line.strip()]
        accept = {t.lower() for t in q["accept_titles"]}
        stale = {t.lower() for t in q["stale_titles"]}
        rank = next(
            (i for i, hit in enumerate(hits[:K], 1) if _current(hit, accept, merges)),
            None,
        )
        top = hits[0]["title"].lower() if hits else ""
        status = hits[0].get("status") if hits else None
        rows.append(
            {
                "kind": q["kind"],
                "rank": rank,
                "stale_top": top in stale,
                "top": top,
                "status": status,
            }
        )
    seconds = time.perf_counter() - start
    vm.log.append((f"{len(questions)} queries{' --intent' if routed else ''}", seconds))
    return summarize(rows) | {"seconds": round(seconds, 1), "misses": _misses(rows, questions)}


def _current(hit: dict, accept: set[str], merges: dict[str, set[str]]) -> bool:
    """Whether a hit is the current answer, or a note merged from it."""
    title = hit["title"]
    sources = merges.get(title, set())
    return title.lower() in accept or any(s.lower() in accept for s in sources)


def summarize(rows: list[dict]) -> dict:
    """The scores of a run of questions, overall and by kind."""

    def score(part: list[dict]) -> dict:
        n = len(part) or 1
        return {
            "n": len(part),
            "current_at_1": round(sum(r["rank"] == 1 for r in part) / n, 3),
            "mrr_at_10": round(sum(1 / r["rank"] for r in part if r["rank"]) / n, 3),
            "stale_at_1": round(sum(r["stale_top"] for r in part) / n, 3),
        }

    kinds = sorted({r["kind"] for r in rows})
    return score(rows) | {"by_kind": {k: score([r for r in rows if r["kind"] == k]) for k in kinds}}


def _misses(rows: list[dict], questions: list[dict]) -> list[dict]:
    return [
        {"qid": q["qid"], "rank": r["rank"], "top": r["top"], "status": r["status"]}
        for r, q in zip(rows, questions, strict=True)
        if r["rank"] != 1
    ]


# --------------------------------------------------------------------------- consolidate


def merge_clusters(output: str) -> int:
    """How many clusters a `consolidate --dry-run --json` plan would merge outright: a
    cluster with action "merge", else one whose cohesion reaches the auto-merge
    threshold. Reads JSON lines or one JSON document, whatever its nesting."""
    found: list[dict] = []

    def walk(value: object) -> None:
        if isinstance(value, dict):
            if "cohesion" in value:
                found.append(value)
                return
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    text = output.strip()
    try:
        walk(json.loads(text))
    except json.JSONDecodeError:
        for line in text.splitlines():
            if line.strip().startswith(("{", "[")):
                walk(json.loads(line))
    count = 0
    for cluster in found:
        action = str(cluster.get("action") or cluster.get("decision") or "").lower()
        if action:
            count += action.startswith("merge")
        else:
            count += float(cluster["cohesion"]) >= AUTO_MERGE
    return count


def supports(vm: Vaultmem) -> tuple[bool, bool]:
    """(query routes, consolidate) in the vaultmem that runs."""
    query_help = vm.run("query", "--help").lower()
    routes = "--intent" in query_help and all(r in query_help for r in ROUTES)
    return routes, "consolidate" in vm.run("--help").split()


# --------------------------------------------------------------------------- report


def table(passes: dict[str, dict], kinds: list[str]) -> str:
    """The markdown table: one row per pass."""
    head = ["pass", "current@1", "MRR@10", "stale@1", *(f"{k} @1" for k in kinds), "time"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, p in passes.items():
        cells = [
            name,
            f"{p['current_at_1']:.3f}",
            f"{p['mrr_at_10']:.3f}",
            f"{p['stale_at_1']:.3f}",
        ]
        for k in kinds:
            part = p["by_kind"].get(k)
            cells.append(f"{part['current_at_1']:.2f} ({part['n']})" if part else "-")
        cells.append(f"{p['seconds']:.0f} s")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def after(
    vm: Vaultmem, questions: list[dict], routes: bool, plan: dict, passes: dict[str, dict]
) -> None:
    """Count the clusters to merge, consolidate, re-index, count again, ask again."""
    plan["merge_clusters_before"] = merge_clusters(
        vm.timed("consolidate --dry-run", "consolidate", "--dry-run", "--json")
    )
    vm.timed("consolidate", "consolidate", "--json")
    vm.timed("index (after)", "index", *([] if vm.vectors else ["--no-embed"]))
    plan["merge_clusters_after"] = merge_clusters(vm.run("consolidate", "--dry-run", "--json"))
    merges = merged_from(vm.vault)
    passes["after consolidate"] = ask(vm, questions, False, merges)
    if routes:
        passes["after consolidate --intent"] = ask(vm, questions, True, merges)


def bench(args: argparse.Namespace) -> dict:
    """Build the vault, run every pass; the result as one object."""
    events = read_jsonl(DATA / "events.jsonl")
    questions = read_jsonl(DATA / "questions.jsonl")[: args.questions]
    now = json.loads((DATA / "scenario.json").read_text())["now"]
    code = args.code or (baseline_tree(args.rev) if args.rev else None)
    root = Path(tempfile.mkdtemp(prefix="vaultmem-evolution-"))
    vm = Vaultmem(root / "vault", code, args.vectors, now)
    vm.vault.mkdir()
    try:
        started = time.perf_counter()
        vm.run("init", str(vm.vault))
        routes, has_consolidate = supports(vm)
        replay(vm, events, args.replay)
        vm.timed("index", "index", "--no-embed", "--json")
        if args.vectors:
            vm.timed("embed (MiniLM)", "embed", "--json")
        passes: dict[str, dict] = {}
        passes["before"] = ask(vm, questions, False, {})
        if routes:
            passes["before --intent"] = ask(vm, questions, True, {})
        plan: dict[str, int | None] = {"merge_clusters_before": None, "merge_clusters_after": None}
        error = None
        try:
            if has_consolidate:
                after(vm, questions, routes, plan, passes)
        except Failed as exc:  # keep the numbers measured so far
            error = str(exc)
        if args.keep:
            shutil.copytree(vm.vault, args.keep, dirs_exist_ok=True)
        return {
            "bench": "memory_evolution",
            "mode": "hybrid (MiniLM)" if args.vectors else "keyword",
            "code": str(code) if code else "installed",
            "memories": len(events),
            "questions": len(questions),
            "routes": routes,
            "consolidate": has_consolidate,
            **plan,
            "passes": passes,
            "timings_s": {label: round(s, 2) for label, s in vm.log},
            "total_s": round(time.perf_counter() - started, 1),
            "error": error,
        }
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    """Command line."""
    if len(sys.argv) == 4 and sys.argv[1] == "_replay":
        replay_worker(sys.argv[2], sys.argv[3])
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--vectors", action="store_true", help="embed with MiniLM: hybrid query")
    ap.add_argument("--replay", choices=("api", "cli"), default="api")
    ap.add_argument("--code", type=Path, help="source tree whose vaultmem runs")
    ap.add_argument("--rev", help="a git revision to run (made into a worktree)")
    ap.add_argument("--keep", type=Path, help="copy the final vault here")
    ap.add_argument("--misses", action="store_true", help="list the questions missed at 1")
    ap.add_argument("--questions", type=int, metavar="N", help="only the first N (a smoke run)")
    args = ap.parse_args()
    try:
        result = bench(args)
    except Failed as exc:
        raise SystemExit(str(exc)) from None
    kinds = sorted({q["kind"] for q in read_jsonl(DATA / "questions.jsonl")})
    print(
        f"memory evolution, {result['mode']}: {result['memories']} memories, "
        f"{result['questions']} questions; code: {result['code']}\n"
    )
    print(table(result["passes"], kinds))
    left = result["merge_clusters_after"]
    if result["consolidate"]:
        print(
            f"\nclusters consolidate merges outright (action merge, else cohesion >= "
            f"{AUTO_MERGE}): {result['merge_clusters_before']} "
            f"before consolidate, {left} after"
        )
    else:
        print("\n(no `consolidate` in this vaultmem: duplicates not measured)")
    print("\n" + ", ".join(f"{label} {s:.1f} s" for label, s in result["timings_s"].items()))
    if args.misses:
        for name, p in result["passes"].items():
            print(f"\n{name} misses: " + json.dumps(p["misses"], ensure_ascii=False))
    for p in result["passes"].values():
        if not args.misses:
            p.pop("misses")
    if result["error"]:
        print(f"\nstopped early: {result['error']}", file=sys.stderr)
    print(json.dumps(result, ensure_ascii=False))
    if result["error"]:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
