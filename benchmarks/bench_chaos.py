"""The chaos run: random kills of `index`, `index --rebuild`, `embed` and write-backs.

    python benchmarks/bench_chaos.py [--kills 200] [--seed 9] [--json out.json]

On a copy of the dev vault (make_vault.py --frontmatter, 978 notes), each round picks a
command — `index` after a few notes were edited, `index --rebuild`, `embed` after a few
notes were edited and indexed, or `pin`/`unpin`/`touch` of 1-5 random notes — starts it as
a real process, and after a random delay (up to 1.2× that command's uninterrupted run
time) sends SIGINT, SIGTERM or SIGKILL at random. Then it checks the invariants of
issue 9:

- no process left: nothing alive with the vault on its command line (workers included);
- lock free: the index and embed locks can be taken at once;
- note bytes: every note is byte-identical to before, except the targets of a write-back,
  whose frontmatter may differ only in lines of vaultmem's owned keys (a file left in the
  vault that was not there before, such as a write's temp file after SIGKILL, is counted
  apart as a stray file);
- results equal a clean build: after the repair command (`index`, which also embeds,
  with lock_timeout 0), `search --json` (every match, scores left out: Whoosh counts
  deleted documents in BM25 statistics until segments merge) and `vsearch --json`
  (top 20 with scores) equal those of a clean cache built without interruption from the
  same notes (rebuilt from scratch every 25 rounds, brought up to date by plain `index`
  in between).

Embeddings come from an OpenAI-compatible fake server in this process
(tests/fake_openai_server.py: hashed bag-of-words vectors over real HTTP), with 16 texts a
request and 20 ms latency so an `embed` lasts long enough to be killed mid-way. The real
MiniLM embeds about 20-40 fragments/s on this machine: a clean vector build of the vault
would take minutes per round.

It prints one line per failed check and a summary: rounds, kills that landed (the process
was still running), exit statuses, tracebacks seen, and invariant failures (target 0).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from common import REPO, make_vault

sys.path.insert(0, str(REPO / "tests"))
from fake_openai_server import FakeOpenAIServer  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from vaultmem.cli import app  # noqa: E402
from vaultmem.errors import LockBusy  # noqa: E402
from vaultmem.frontmatter.scan import split  # noqa: E402
from vaultmem.properties import OWNED_KEYS  # noqa: E402
from vaultmem.vault import vault_lock  # noqa: E402

OPS = ("index", "rebuild", "embed", "writeback")
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGKILL)
QUERIES = ("copy files recursively", "network interface configuration")
WORDS = ("alpha", "kernel", "socket", "buffer", "archive", "mirror", "thread", "signal", "cursor")
CLEAN_EVERY = 25
_TOP_KEY = re.compile(r"^([^\s#:][^:]*):")


@dataclass
class Tally:
    """What the run saw."""

    rounds: collections.Counter[str] = field(default_factory=collections.Counter)
    landed: collections.Counter[str] = field(default_factory=collections.Counter)
    statuses: collections.Counter[str] = field(default_factory=collections.Counter)
    failures: collections.Counter[str] = field(default_factory=collections.Counter)
    tracebacks: int = 0
    log: list[str] = field(default_factory=list)

    def invariant_failures(self) -> int:
        """Failures of issue 9's invariants; a stray temp file is counted on its own."""
        return sum(n for kind, n in self.failures.items() if kind != "stray file")

    def fail(self, kind: str, detail: str) -> None:
        self.failures[kind] += 1
        self.log.append(f"{kind}: {detail}")
        print(f"  FAIL {kind}: {detail}", flush=True)


class Chaos:
    """One vault, one clean cache beside it, one fake embedding server."""

    def __init__(
        self, work: Path, slow: FakeOpenAIServer, fast: FakeOpenAIServer, rng: random.Random
    ) -> None:
        self.vault = work / "vault"
        self.clean = work / "clean-cache"
        self.rng = rng
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("VAULTMEM_")}
        self.env.update(
            HOME=str(work / "home"),
            XDG_CONFIG_HOME=str(work / "home"),
            VAULTMEM_EMBEDDER="endpoint",
            VAULTMEM_EMBED_URL=slow.url,
            VAULTMEM_EMBED_MODEL="fake-embed",
            VAULTMEM_EMBED_API_KEY="sk-chaos",
            VAULTMEM_EMBED_BATCH_SIZE="16",
            VAULTMEM_EMBED_CONCURRENCY="1",
            VAULTMEM_LOCK_TIMEOUT="0",
        )
        # The clean cache is built by the same fake without latency, in larger batches:
        # the same vectors (model id "openai:fake-embed"), a fraction of the time.
        self.clean_env = {
            **self.env,
            "VAULTMEM_EMBED_URL": fast.url,
            "VAULTMEM_EMBED_BATCH_SIZE": "256",
        }
        self.runner = CliRunner(env=self.clean_env)
        self.seconds: collections.Counter[str] = collections.Counter()
        self.notes = sorted(p.relative_to(self.vault).as_posix() for p in self.vault.rglob("*.md"))
        self.durations: dict[str, float] = {}

    # -- running vaultmem ---------------------------------------------------------------

    def start(
        self, *args: str, cache: Path | None = None, fast: bool = False
    ) -> subprocess.Popen[str]:
        """``vaultmem --vault VAULT [--cache-dir CACHE] ARGS`` as a real process."""
        extra = ["--cache-dir", str(cache)] if cache else []
        return subprocess.Popen(
            [sys.executable, "-m", "vaultmem", "--vault", str(self.vault), *extra, *args],
            env=self.clean_env if cache or fast else self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def run(self, *args: str, cache: Path | None = None, fast: bool = False) -> tuple[int, str]:
        proc = self.start(*args, cache=cache, fast=fast)
        _, err = proc.communicate(timeout=600)
        return proc.returncode, err

    def results(self, cache: Path | None) -> dict[str, object]:
        """search (every match, no scores) and vsearch (top 20, scores) for the queries."""
        base = ["--vault", str(self.vault)] + (["--cache-dir", str(cache)] if cache else [])
        out: dict[str, object] = {}
        for q in QUERIES:
            hits = self._json(base + ["search", q, "-n", "1000", "--json"])
            out["search " + q] = sorted((h["path"], h.get("snippet")) for h in hits)
            hits = self._json(base + ["vsearch", q, "-n", "20", "--json"])
            out["vsearch " + q] = sorted((h["path"], round(h["score"], 4)) for h in hits)
        return out

    def _json(self, args: list[str]) -> list[dict]:
        result = self.runner.invoke(app, args)
        if result.exit_code != 0:
            return [{"path": f"<exit {result.exit_code}: {result.stderr.strip()[:200]}>"}]
        return [json.loads(line) for line in result.stdout.splitlines() if line.strip()]

    # -- one round ----------------------------------------------------------------------

    def prepare(self, op: str) -> tuple[list[str], set[str]]:
        """Edit notes as a user would; the command line for ``op`` and the notes it may change."""
        if op in ("index", "embed"):
            for path in self.rng.sample(self.notes, self.rng.randint(5, 40)):
                words = " ".join(self.rng.choice(WORDS) for _ in range(12))
                with open(self.vault / path, "a", encoding="utf-8") as f:
                    f.write(f"\nEdited: {words}\n")
        if op == "embed":
            code, err = self.run("index", "--no-embed")
            assert code == 0, err
            return ["embed"], set()
        if op == "rebuild":
            return ["index", "--rebuild", "--no-embed"], set()
        if op == "index":
            return ["index", "--no-embed"], set()
        targets = self.rng.sample(self.notes, self.rng.randint(1, 5))
        return [self.rng.choice(("pin", "unpin", "touch")), *targets], set(targets)

    def measure(self) -> None:
        """Each command's uninterrupted run time: the range the random delays are drawn from."""
        code, err = self.run("index", fast=True)
        assert code == 0, err
        for op in OPS:
            args, _ = self.prepare(op)
            started = time.monotonic()
            code, err = self.run(*args)
            assert code == 0, err
            self.durations[op] = time.monotonic() - started
        code, err = self.run("index")
        assert code == 0, err

    def round(self, n: int, tally: Tally) -> None:
        op = self.rng.choice(OPS)
        sig = self.rng.choice(SIGNALS)
        with self.timed("prepare"):
            args, targets = self.prepare(op)
            before = self.snapshot()
        delay = self.rng.uniform(0, 1.2 * self.durations[op])
        with self.timed("killed command"):
            proc = self.start(*args)
            time.sleep(delay)
            landed = proc.poll() is None
            if landed:
                proc.send_signal(sig)
            _, err = proc.communicate(timeout=600)
        label = f"{op}/{sig.name}"
        tally.rounds[label] += 1
        tally.landed[label] += landed
        tally.statuses[str(proc.returncode)] += 1
        if "Traceback" in err:
            tally.tracebacks += 1
            tally.log.append(f"traceback: round {n} {label} at {delay:.2f}s: {err.strip()[-600:]}")
        where = f"round {n} {' '.join(args[:3])} {sig.name} at {delay:.2f}s"
        where += f" (exit {proc.returncode})"
        with self.timed("checks"):
            self.check_processes(where, tally)
            self.check_locks(where, tally)
            self.check_notes(before, targets, where, tally)
        self.check_results(n, where, tally)

    @contextmanager
    def timed(self, phase: str) -> Iterator[None]:
        clock = time.monotonic()
        try:
            yield
        finally:
            self.seconds[phase] += time.monotonic() - clock

    # -- the invariants -----------------------------------------------------------------

    def check_processes(self, where: str, tally: Tally) -> None:
        deadline = time.monotonic() + 3
        while (left := _procs_with(self.vault)) and time.monotonic() < deadline:
            time.sleep(0.02)
        if left:
            tally.fail("process left", f"{where}: pids {left}")
            for pid in left:  # ours: started by this run, found by its vault path
                os.kill(pid, signal.SIGKILL)

    def check_locks(self, where: str, tally: Tally) -> None:
        for name in ("lock", "embed.lock"):
            try:
                with vault_lock(self.vault / ".vaultmem", timeout=0, what="chaos", name=name):
                    pass
            except LockBusy as exc:
                tally.fail("lock held", f"{where}: {exc}")

    def snapshot(self) -> dict[str, bytes]:
        return {p.relative_to(self.vault).as_posix(): p.read_bytes() for p in self._files()}

    def _files(self) -> list[Path]:
        return [
            p
            for p in self.vault.rglob("*")
            if p.is_file() and ".vaultmem" not in p.relative_to(self.vault).parts
        ]

    def check_notes(
        self, before: dict[str, bytes], targets: set[str], where: str, tally: Tally
    ) -> None:
        after = self.snapshot()
        for path in sorted(after.keys() - before.keys()):
            tally.fail("stray file", f"{where}: {path}")
        for path in sorted(before.keys() - after.keys()):
            tally.fail("note lost", f"{where}: {path}")
        for path in sorted(before.keys() & after.keys()):
            old, new = before[path], after[path]
            if old != new and (path not in targets or _unowned(old) != _unowned(new)):
                tally.fail("note changed", f"{where}: {path}")

    def check_results(self, n: int, where: str, tally: Tally) -> None:
        """Repair (`index`, lock_timeout 0, embeds too) and compare with the clean cache."""
        if n % CLEAN_EVERY == 0:
            shutil.rmtree(self.clean, ignore_errors=True)
        with self.timed("repair and clean build"):
            # Side by side: separate caches, separate locks, the same notes.
            repair = self.start("index")
            clean = self.start("index", cache=self.clean)
            _, err = repair.communicate(timeout=600)
            _, clean_err = clean.communicate(timeout=600)
        if clean.returncode != 0:
            raise SystemExit(f"the clean build failed: {clean_err}")
        if repair.returncode != 0:
            detail = f"`index` exited {repair.returncode}: {err.strip()[-300:]}"
            tally.fail("repair", f"{where}: {detail}")
        with self.timed("compare"):
            got, want = self.results(None), self.results(self.clean)
        for key in want:
            if got[key] != want[key]:
                tally.fail("results differ", f"{where}: {key}")
                self.heal()
                return

    def heal(self) -> None:
        """After a failure, start the next round from a sound cache."""
        self.run("index", "--rebuild")


def _unowned(raw: bytes) -> tuple[bytes, bytes, list[str]]:
    """A note without vaultmem's owned-key lines: (BOM, body, other frontmatter lines)."""
    parts = split(raw)
    kept, owned = [], False
    for line in (parts.frontmatter or "").splitlines():
        m = _TOP_KEY.match(line)
        if m:
            owned = m.group(1).strip() in OWNED_KEYS
        elif line and not line[0].isspace() and not line.startswith("-"):
            owned = False
        if not owned:
            kept.append(line)
    return parts.bom, parts.body, kept


def _procs_with(vault: Path) -> list[int]:
    token = str(vault).encode()
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if token in argv:
                found.append(int(entry))
    return found


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--kills", type=int, default=200, help="rounds (one kill point each)")
    ap.add_argument("--seed", type=int, default=9)
    ap.add_argument("--json", type=Path, help="also write the summary here")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    # Started in the background by a shell, this process may ignore SIGINT, and its
    # children would inherit that: a handler here gives them the default back at exec.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    source = make_vault("dev", frontmatter=True)
    slow, fast = FakeOpenAIServer(latency=0.02).start(), FakeOpenAIServer().start()
    started = time.monotonic()
    tally = Tally()
    with tempfile.TemporaryDirectory(prefix="vaultmem-chaos-") as tmp:
        work = Path(tmp)
        shutil.copytree(source, work / "vault", ignore=shutil.ignore_patterns(".vaultmem", ".made"))
        chaos = Chaos(work, slow, fast, rng)
        chaos.measure()
        print("uninterrupted run times (s):", {k: round(v, 2) for k, v in chaos.durations.items()})
        for n in range(1, args.kills + 1):
            chaos.round(n, tally)
            for server in (slow, fast):
                with server._lock:
                    server.requests.clear()  # it records every request: keep memory flat
            if n % 25 == 0:
                failed = tally.invariant_failures()
                spent = time.monotonic() - started
                print(f"{n} rounds, {failed} invariant failures, {spent:.0f}s", flush=True)
        phases = {k: round(v) for k, v in chaos.seconds.items()}
    slow.stop()
    fast.stop()
    summary = {
        "rounds": args.kills,
        "seed": args.seed,
        "landed": sum(tally.landed.values()),
        "rounds_and_landed_kills": {
            k: [tally.rounds[k], tally.landed[k]] for k in sorted(tally.rounds)
        },
        "exit_statuses": dict(tally.statuses),
        "tracebacks": tally.tracebacks,
        "invariant_failures": tally.invariant_failures(),
        "stray_files": tally.failures["stray file"],
        "failures_by_kind": dict(tally.failures),
        "seconds": round(time.monotonic() - started),
        "seconds_by_phase": phases,
    }
    print(json.dumps(summary, indent=1))
    if args.json:
        args.json.write_text(json.dumps({**summary, "log": tally.log}, indent=1) + "\n")


if __name__ == "__main__":
    main()
