"""Kill tests: SIGINT, SIGTERM and SIGKILL at several points of `index --rebuild`, `index`
and `embed`, run as real processes (`python -m vaultmem`).

After every kill: no process of that command is left (the parallel build's workers
included), the vault lock is free at once (the repair runs with lock_timeout 0), and
after the repair command the results equal a clean build. "Equal" means the same notes
match each query, with the same titles and snippets; BM25 scores are left out for the
lexical index because Whoosh counts deleted documents in its statistics until segments
merge, so even an uninterrupted incremental `index` scores slightly differently from a
fresh build. Vector scores are compared to 1e-3.

Issue 9, item 5: `index --rebuild & sleep 3; kill -9 $!` left two workers alive under
PID 1 holding `.vaultmem/lock`, and every later `index` and `pin` exited 75 without
naming the holder.
"""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path

import pytest
import typer
from conftest import Cli, copy_indexed
from fake_openai_server import FakeOpenAIServer
from typer.testing import CliRunner

from vaultmem.cli import _Boundary
from vaultmem.errors import Terminated

pytestmark = [
    pytest.mark.slow,  # kills real index and embed runs at chosen moments (a 1,500-note vault)
    pytest.mark.skipif(
        not sys.platform.startswith("linux"), reason="finds processes through /proc"
    ),
]

NOTES = 1500  # above PARALLEL_MIN_NOTES: a fresh build runs in worker processes
QUERIES = ("w17 w230", "w5", "w301 w42 w99")
VECTOR_QUERIES = ("helm releases for kubernetes operators", "redis sessions", "who owns harbor")
EXIT: dict[int, int] = {signal.SIGINT: 130, signal.SIGTERM: 143, signal.SIGKILL: -signal.SIGKILL}


@pytest.fixture(autouse=True, scope="module")
def _sigint_not_ignored() -> Iterator[None]:
    """Children inherit an ignored SIGINT (pytest started in the background by a shell);
    a handler here gives them the default disposition back when they exec."""
    previous = signal.getsignal(signal.SIGINT)
    if previous is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def _case_id(value: object) -> str:
    return str(getattr(value, "name", value))  # SIGINT rather than Signals.SIGINT


def _write_notes(root: Path, seed: int, count: int, start: int = 0) -> None:
    rng = random.Random(seed)
    for i in range(start, start + count):
        folder = root / f"f{i % 10}"
        folder.mkdir(parents=True, exist_ok=True)
        body = " ".join(f"w{rng.randrange(400)}" for _ in range(80))
        (folder / f"note {i}.md").write_text(f"# Note {i}\n\n{body}\n\nSee [[note {i // 2}]].\n")


def _index_in_process(vault: Path, *, rebuild: bool = False) -> None:
    from vaultmem.config import build
    from vaultmem.indexer import index_vault

    index_vault(build(vault, {}), rebuild=rebuild)


@pytest.fixture(scope="module")
def big_vault(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """1,500 small notes, indexed (a clean build). Read-only: copy it."""
    vault = tmp_path_factory.mktemp("big") / "vault"
    _write_notes(vault, seed=1, count=NOTES)
    _index_in_process(vault)
    return vault


@pytest.fixture(scope="module")
def big_clean_hits(big_vault: Path) -> dict:
    return _lexical_hits(big_vault)


@pytest.fixture(scope="module")
def changed_vault(big_vault: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``big_vault`` with half its notes edited, 30 deleted and 30 added, index not yet run."""
    vault = tmp_path_factory.mktemp("changed") / "vault"
    copy_indexed(big_vault, vault)
    notes = sorted(vault.rglob("*.md"))
    for i, note in enumerate(notes):
        if i % 2 == 0:
            note.write_text(note.read_text() + f"\nedited w{i % 400} w{(i * 7) % 400}\n")
        elif i % 50 == 1:
            note.unlink()
    _write_notes(vault, seed=2, count=30, start=NOTES)
    return vault


def _copy(src: Path, dest: Path) -> Path:
    copy_indexed(src, dest, symlinks=True)  # copy2 keeps mtimes: the manifest stays valid
    return dest


def _env(vault: Path, *, vectors: bool = False) -> dict[str, str]:
    # Built here, not inherited: module fixtures run before conftest's isolation.
    env = {k: v for k, v in os.environ.items() if not k.startswith("VAULTMEM_")}
    env["HOME"] = env["XDG_CONFIG_HOME"] = str(vault.parent / "home")
    env["VAULTMEM_LOCK_TIMEOUT"] = "0"  # a lock left held fails the repair at once
    if not vectors:
        env["VAULTMEM_EMBEDDER"] = "none"  # else the in-process MiniLM, as a user gets it
    return env


def _start(vault: Path, *args: str, vectors: bool = False) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "vaultmem", "--vault", str(vault), *args],
        env=_env(vault, vectors=vectors),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _run(vault: Path, *args: str, vectors: bool = False) -> None:
    proc = _start(vault, *args, vectors=vectors)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, f"vaultmem {' '.join(args)} exited {proc.returncode}\n{err}"


def _vault_procs(vault: Path) -> list[int]:
    """Live processes with ``vault`` on their command line: the command and its workers."""
    token = str(vault).encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue  # gone meanwhile
        if token in argv:  # a zombie's cmdline is empty: only live processes count
            found.append(int(entry))
    return found


def _holds_lock(vault: Path, proc: subprocess.Popen[str], name: str) -> bool:
    try:
        recorded = (vault / ".vaultmem" / name).read_text().split(" ", 1)[0]
    except OSError:
        return False
    return recorded == str(proc.pid)


def _wait_until(proc: subprocess.Popen[str], cond: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if cond():
            return
        if proc.poll() is not None:
            raise AssertionError(f"the command ended (exit {proc.returncode}) before {what}")
        time.sleep(0.002)
    raise AssertionError(f"never reached: {what}")


def _locked_duration(vault: Path, *args: str, lock: str = "lock", vectors: bool = False) -> float:
    """Seconds from taking the lock to exiting, for an uninterrupted run of the command."""
    proc = _start(vault, *args, vectors=vectors)
    _wait_until(proc, lambda: _holds_lock(vault, proc, lock), "the lock was taken")
    taken = time.monotonic()
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    return time.monotonic() - taken


def _assert_killed_cleanly(proc: subprocess.Popen[str], sig: int, vault: Path) -> None:
    """The exit status and message ``sig`` calls for, and no process of the vault left."""
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == EXIT[sig], f"exit {proc.returncode}, wanted {EXIT[sig]}\n{err}"
    if sig != signal.SIGKILL:
        assert "Traceback" not in err, err
        assert err.strip().splitlines()[-1] == "vaultmem: interrupted", err
    deadline = time.monotonic() + 5  # a worker's death signal takes a moment to land
    while _vault_procs(vault) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert _vault_procs(vault) == [], "processes left behind after the kill"


def _kill_after(
    src: Path,
    tmp: Path,
    args: tuple[str, ...],
    lock: str,
    delay: float,
    sig: int,
    *,
    vectors: bool = False,
) -> Path:
    """Run ``args`` on a copy of ``src`` and send ``sig`` ``delay`` s after it takes ``lock``.

    A busy machine makes run times vary: when the command finished before the kill, try
    again on a fresh copy with half the delay. Returns the killed vault.
    """
    for attempt in range(4):
        vault = _copy(src, tmp / f"try{attempt}" / "vault")
        proc = _start(vault, *args, vectors=vectors)
        taken = partial(_holds_lock, vault, proc, lock)
        _wait_until(proc, taken, "the lock was taken")
        time.sleep(delay)
        if proc.poll() is None:
            proc.send_signal(sig)
            _assert_killed_cleanly(proc, sig, vault)
            return vault
        proc.communicate()
        delay /= 2
    raise AssertionError(f"`{' '.join(args)}` always finished before the kill")


def _lexical_hits(vault: Path) -> dict[str, list[tuple[str, str, str]]]:
    cli = Cli(vault)
    return {
        q: sorted(
            (h["path"], h["title"], h["snippet"]) for h in cli.json_lines("search", q, "-n", "1000")
        )
        for q in QUERIES
    }


def _vector_hits(vault: Path) -> dict[str, dict[str, float]]:
    cli = Cli(vault)
    return {
        q: {h["path"]: h["score"] for h in cli.json_lines("vsearch", q, "-n", "100")}
        for q in VECTOR_QUERIES
    }


def _assert_same_vectors(
    got: dict[str, dict[str, float]], want: dict[str, dict[str, float]]
) -> None:
    for q in VECTOR_QUERIES:
        assert got[q].keys() == want[q].keys(), q
        assert all(abs(got[q][p] - want[q][p]) < 1e-3 for p in want[q]), q


# -- index --rebuild ----------------------------------------------------------------------

REBUILD_POINTS = [
    (signal.SIGKILL, "workers"),  # the case of issue 9
    (signal.SIGINT, "workers"),
    (signal.SIGTERM, "workers"),
    (signal.SIGTERM, "locked"),
    (signal.SIGINT, "joined"),
    (signal.SIGKILL, "joined"),
]


@pytest.mark.parametrize(("sig", "point"), REBUILD_POINTS, ids=_case_id)
def test_killed_rebuild(
    big_vault: Path, big_clean_hits: dict, tmp_path: Path, sig: int, point: str
) -> None:
    if (os.cpu_count() or 1) < 2:
        pytest.skip("the parallel build needs two cores")
    vault = _copy(big_vault, tmp_path / "vault")
    proc = _start(vault, "index", "--rebuild", "--no-embed")
    _wait_until(proc, lambda: _holds_lock(vault, proc, "lock"), "the lock was taken")
    if point in ("workers", "joined"):
        _wait_until(proc, lambda: len(_vault_procs(vault)) > 1, "workers started")
    if point == "joined":
        _wait_until(proc, lambda: len(_vault_procs(vault)) == 1, "workers finished")
    proc.send_signal(sig)
    _assert_killed_cleanly(proc, sig, vault)
    _run(vault, "index", "--no-embed")  # lock_timeout 0: fails if anything still holds it
    assert _lexical_hits(vault) == big_clean_hits


# -- index (incremental) ----------------------------------------------------------------


@pytest.fixture(scope="module")
def index_duration(changed_vault: Path, tmp_path_factory: pytest.TempPathFactory) -> float:
    """How long an uninterrupted incremental `index` of ``changed_vault`` holds the lock."""
    return _locked_duration(_copy(changed_vault, tmp_path_factory.mktemp("t") / "v"), "index")


@pytest.fixture(scope="module")
def changed_clean_hits(changed_vault: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    vault = _copy(changed_vault, tmp_path_factory.mktemp("clean") / "vault")
    _index_in_process(vault, rebuild=True)
    return _lexical_hits(vault)


@pytest.mark.parametrize(
    ("sig", "fraction"),
    [(signal.SIGINT, 0.3), (signal.SIGTERM, 0.6), (signal.SIGKILL, 0.45)],
    ids=_case_id,
)
def test_killed_incremental_index(
    changed_vault: Path,
    changed_clean_hits: dict,
    index_duration: float,
    tmp_path: Path,
    sig: int,
    fraction: float,
) -> None:
    args = ("index", "--no-embed")
    vault = _kill_after(changed_vault, tmp_path, args, "lock", index_duration * fraction, sig)
    _run(vault, "index", "--no-embed")
    assert _lexical_hits(vault) == changed_clean_hits


# -- embed ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def embed_start(embedded_example: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The embedded example vault with a paragraph added to a quarter of its notes, re-indexed
    but not re-embedded."""
    vault = _copy(embedded_example, tmp_path_factory.mktemp("embed") / "vault")
    for i, note in enumerate(sorted(vault.glob("**/*.md"))):
        if ".obsidian" not in note.parts and i % 4 == 0:
            extra = f"\n\nRelease note {i}: helm releases, kubernetes operators and redis.\n"
            note.write_text(note.read_text(encoding="utf-8") + extra, encoding="utf-8")
    _index_in_process(vault)
    return vault


@pytest.fixture(scope="module")
def embed_clean(embed_start: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[float, dict]:
    """Lock-held seconds of an uninterrupted `embed`, and vsearch results after it."""
    vault = _copy(embed_start, tmp_path_factory.mktemp("embedclean") / "vault")
    seconds = _locked_duration(vault, "embed", lock="embed.lock", vectors=True)
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("VAULTMEM_EMBEDDER", raising=False)
        return seconds, _vector_hits(vault)


@pytest.mark.parametrize(
    ("sig", "fraction"),
    [(signal.SIGINT, 0.5), (signal.SIGTERM, 0.3), (signal.SIGKILL, 0.6)],
    ids=_case_id,
)
def test_killed_embed(
    embed_start: Path,
    embed_clean: tuple[float, dict],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    sig: int,
    fraction: float,
) -> None:
    seconds, clean = embed_clean
    delay = seconds * fraction
    vault = _kill_after(embed_start, tmp_path, ("embed",), "embed.lock", delay, sig, vectors=True)
    _run(vault, "embed", vectors=True)
    monkeypatch.delenv("VAULTMEM_EMBEDDER")
    _assert_same_vectors(_vector_hits(vault), clean)


# -- the lock ---------------------------------------------------------------------------

HOLD = """
import os, sys, time
from pathlib import Path
from vaultmem.vault import vault_lock
with vault_lock(Path(sys.argv[1]), timeout=0, what="index"):
    if sys.argv[2] == "orphan":
        child = os.fork()
        if child == 0:  # keeps the inherited lock descriptor, as the old workers did
            time.sleep(60)
            os._exit(0)
        print(child, flush=True)
        os._exit(0)
    print(os.getpid(), flush=True)
    time.sleep(60)
"""


def _hold_lock(vault: Path, mode: str) -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(vault / ".vaultmem"), mode],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    return proc, int(proc.stdout.readline())


def test_busy_lock_names_its_holder_and_a_killed_holders_lock_is_taken_over(
    cli: Cli, vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VAULTMEM_LOCK_TIMEOUT", "0")
    holder, pid = _hold_lock(vault, "hold")
    try:
        busy = cli("pin", "Harbor.md", ok=False)
        assert busy.exit_code == 75
        assert f"another vaultmem process (pid {pid}, `index`, since " in busy.stderr
        assert "holds the vault's index lock; try again later" in busy.stderr
    finally:
        holder.kill()
        holder.wait()
    started = time.monotonic()
    cli("pin", "Harbor.md")
    assert time.monotonic() - started < 2


def test_busy_lock_names_an_orphan_keeping_it(
    cli: Cli, vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VAULTMEM_LOCK_TIMEOUT", "0")
    holder, orphan = _hold_lock(vault, "orphan")
    holder.wait()
    try:
        busy = cli("index", ok=False)
        assert busy.exit_code == 75
        assert (
            f"held by process {orphan}, left behind by a vaultmem process that has exited "
            f"(pid {holder.pid}, `index`" in busy.stderr
        )
        assert f"kill {orphan}" in busy.stderr
    finally:
        os.kill(orphan, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while cli("index", ok=False).exit_code == 75 and time.monotonic() < deadline:
        time.sleep(0.05)  # the orphan is reaped by init, not by us
    cli("index")


@pytest.mark.parametrize("damage", ["file for folder", "lock is a folder"])
def test_unusable_cache_folder_is_one_line(vault: Path, damage: str) -> None:
    cache = vault / ".vaultmem"
    if damage == "file for folder":
        cache.write_text("not a folder\n")
    else:
        from vaultmem.vault import make_cache

        (make_cache(cache) / "lock").mkdir()  # in a cache vaultmem made
    for args in (["index"], ["pin", "Harbor.md"]):
        proc = subprocess.run(
            [sys.executable, "-m", "vaultmem", "--vault", str(vault), *args],
            env=_env(vault),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == 1, proc.stderr
        assert "Traceback" not in proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(
            f"vaultmem: error: cannot use the cache folder {cache}"
        )


# -- worker processes and threads -------------------------------------------------------


def _open_files(report: Callable[[int], None]) -> list[str]:
    report(1)
    fds = Path("/proc/self/fd")
    return [os.path.realpath(fds / fd) for fd in os.listdir(fds)]


def test_workers_do_not_hold_the_parents_lock(tmp_path: Path) -> None:
    from vaultmem.vault import vault_lock
    from vaultmem.workers import run_forked

    ticks: list[int] = []
    with vault_lock(tmp_path, timeout=0):
        seen = run_forked([_open_files, _open_files], ticks.append)
    assert ticks == [1, 1]
    lock = os.path.realpath(tmp_path / "lock")
    assert all(lock not in files for files in seen)


def _fails(report: Callable[[int], None]) -> None:
    raise ValueError("bad note")


def _dies(report: Callable[[int], None]) -> None:
    os._exit(3)


def test_a_workers_failure_reaches_the_parent() -> None:
    from vaultmem.errors import VaultmemError
    from vaultmem.workers import run_forked

    with pytest.raises(ValueError, match="bad note"):
        run_forked([_fails])
    with pytest.raises(VaultmemError, match="ended without its result"):
        run_forked([_dies])


def test_interrupt_does_not_wait_for_embedding_requests_in_flight(
    vault: Path, fake_openai: FakeOpenAIServer
) -> None:
    # The remote embedder's pool threads block in HTTP requests; Python would join them
    # at exit, holding Ctrl-C up to the request timeout.
    fake_openai.latency = 30
    _index_in_process(vault)
    env = _env(vault, vectors=True)
    env.update(
        VAULTMEM_EMBEDDER="endpoint",
        VAULTMEM_EMBED_URL=fake_openai.url,
        VAULTMEM_EMBED_MODEL="fake",
        VAULTMEM_EMBED_DIMENSIONS="64",
        VAULTMEM_EMBED_BATCH_SIZE="4",
        VAULTMEM_EMBED_CONCURRENCY="4",
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "vaultmem", "--vault", str(vault), "embed"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _wait_until(proc, lambda: len(fake_openai.embedding_requests()) >= 2, "requests sent")
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=25)
    finally:
        proc.kill()  # only if it is still there after a failure
    assert proc.returncode == 130, err
    assert time.monotonic() - sent < 5


def _past_entry(err: str) -> bool:
    """Whether a traceback reaches vaultmem code beyond the import of vaultmem.entry (the
    package's __init__ and __main__, and entry's and interrupts' module code, run before main()
    defers signals, as Python's own start-up does)."""
    frames = re.findall(r'File "([^"]*/vaultmem/[^"]*)", line \d+, in (\S+)', err)
    before_main = ("/vaultmem/__main__.py", "/vaultmem/__init__.py")
    return any(
        not f.endswith(before_main)
        and not (f.endswith(("/vaultmem/entry.py", "/vaultmem/interrupts.py")) and at == "<module>")
        for f, at in frames
    )


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=_case_id)
def test_a_signal_during_start_up_is_one_line(vault: Path, sig: int) -> None:
    # Importing the CLI and parsing arguments take tens of milliseconds; a signal then
    # used to end in a traceback, or in click's silent exit 130 (for SIGTERM too). Sent
    # at a spread of moments across start-up and the command.
    for delay in (0.0, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.12, 0.16, 0.2, 0.3):
        proc = _start(vault, "status")
        time.sleep(delay)
        proc.send_signal(sig)
        _out, err = proc.communicate(timeout=60)
        if "init_import_site" in err or ("Traceback" in err and not _past_entry(err)):
            continue  # the interpreter's own start-up, before vaultmem.entry runs
        assert "Traceback" not in err, (delay, err)
        # In the interpreter's own start-up, before vaultmem runs, the default action ends
        # it silently (-sig); after the command finished it has nothing left to stop (0).
        assert proc.returncode in (0, EXIT[sig], -sig), (delay, proc.returncode, err)
        if proc.returncode == EXIT[sig]:
            assert err.strip().splitlines() == ["vaultmem: interrupted"], (delay, err)
        else:
            assert err == "", (delay, err)


def test_a_signal_during_a_deferred_import_is_raised_after_it() -> None:
    # numpy's and onnxruntime's C initialisation turn an exception raised by a signal
    # handler into "ImportError: import numpy failed" (and print a traceback); inside
    # deferred() the signal waits and is raised, as itself, when the block ends.
    from vaultmem.errors import Terminated
    from vaultmem.interrupts import deferred, interruptible

    reached_end_of_block = False
    with pytest.raises(Terminated), interruptible(), deferred():
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.05)  # delivered now, were it not deferred
        reached_end_of_block = True
    assert reached_end_of_block


def _late_class(field: object) -> None:
    """A command's late import: a class whose field is set up as the class is made."""
    type("Late", (), {"field": field})


def _boundary_app(field: object) -> typer.Typer:
    app = typer.Typer(cls=_Boundary)
    app.command("late")(lambda: _late_class(field))
    app.command("other")(lambda: None)  # two commands: a group, so "late" is named
    return app


class _Raises:
    """A field whose set-up raises ``error`` (Python 3.11 wraps it in RuntimeError)."""

    def __init__(self, error: BaseException) -> None:
        self.error = error

    def __set_name__(self, owner: type, name: str) -> None:
        raise self.error


@pytest.mark.parametrize(("raised", "code"), [(KeyboardInterrupt(), 130), (Terminated(), 143)])
def test_a_signal_inside_a_class_body_is_still_an_interrupt(
    raised: BaseException, code: int
) -> None:
    # A signal landing while a module the command imports late sets up a dataclass.
    result = CliRunner().invoke(_boundary_app(_Raises(raised)), ["late"])
    assert result.exit_code == code, result.output
    assert result.stderr.strip() == "vaultmem: interrupted"
    # Any other failure there is not dressed up as an interrupt.
    other = CliRunner().invoke(_boundary_app(_Raises(ValueError("broken"))), ["late"])
    assert isinstance(other.exception, RuntimeError)
