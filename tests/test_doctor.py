"""`vaultmem doctor`: each problem planted in a temp vault is reported, and `--repair`
heals what it says it heals (and nothing is called healthy that is not)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import Cli, copy_indexed, run_vaultmem
from local_server import free_port

from vaultmem.index.records import parse_record, record_path
from vaultmem.index.vectors import VectorStore
from vaultmem.inference.local import DIMENSION, LocalEmbedder

MODEL_ID = LocalEmbedder().model_id  # what the default embedder stores its vectors under


def doctor(cli: Cli, *args: str, code: int | None = None) -> dict:
    """``doctor --json ARGS``: the report, after checking the exit status agrees with it."""
    result = cli("doctor", "--json", *args, ok=False)
    report = json.loads(result.stdout)
    assert result.exit_code == (0 if report["healthy"] else 1), result.output
    if code is not None:
        assert result.exit_code == code, result.output
    return report


def found(report: dict, check: str, severity: str | None = None) -> list[dict]:
    """The findings of one check (of one severity)."""
    return [
        f
        for f in report["findings"]
        if f["check"] == check and (severity is None or f["severity"] == severity)
    ]


def messages(report: dict, severity: str) -> str:
    return "\n".join(f["message"] for f in report["findings"] if f["severity"] == severity)


@pytest.fixture
def indexed(cli: Cli) -> Cli:
    cli("index")
    return cli


def test_a_healthy_vault_exits_0_with_one_line_per_check(indexed: Cli) -> None:
    result = indexed("doctor")
    checks = {line.split()[1] for line in result.stdout.splitlines()}
    assert {
        "configuration",
        "lock",
        "index",
        "links",
        "vectors",
        "endpoints",
        "hooks",
        "server",
    } <= checks
    assert "PROBLEM" not in result.stdout
    assert "vaultmem doctor: healthy" in result.stderr
    report = doctor(indexed, code=0)
    assert {f["severity"] for f in report["findings"]} <= {"ok", "warn"}


def test_config_unknown_key_warns_and_a_bad_value_is_the_problem(indexed: Cli) -> None:
    toml = indexed.vault / ".vaultmem.toml"
    toml.write_text('embeder = "none"\n', encoding="utf-8")
    report = doctor(indexed, code=0)
    assert "'embeder'" in found(report, "configuration", "warn")[0]["message"]
    toml.write_text('embeder = "none"\nlock_timeout = "soon"\n', encoding="utf-8")
    report = doctor(indexed, code=1)
    assert [f["severity"] for f in report["findings"]] == ["warn", "problem"]
    assert "'embeder'" in report["findings"][0]["message"]
    assert "lock_timeout" in report["findings"][1]["message"]
    text = indexed("doctor", ok=False)
    assert text.exit_code == 1 and "Traceback" not in text.output
    assert "PROBLEM" in text.stdout and "lock_timeout" in text.stdout


def _drop_generation(vault: Path) -> None:
    for folder in (vault / ".vaultmem").glob("whoosh-*"):
        shutil.rmtree(folder)


def _bad_fingerprint(vault: Path) -> None:
    with sqlite3.connect(vault / ".vaultmem" / "manifest.sqlite") as db:
        db.execute("UPDATE meta SET value = 'x' WHERE key = 'fingerprint'")


@pytest.mark.parametrize(
    ("damage", "why"),
    [(_drop_generation, "is missing"), (_bad_fingerprint, "changed outside vaultmem")],
    ids=["generation folder deleted", "fingerprint corrupted"],
)
def test_a_damaged_keyword_index_is_rebuilt_by_repair(indexed: Cli, damage, why: str) -> None:
    damage(indexed.vault)
    report = doctor(indexed, code=1)
    (problem,) = found(report, "index", "problem")
    assert why in problem["message"] and problem["repairable"]
    repaired = doctor(indexed, "--repair", code=0)
    assert found(repaired, "index")[0]["repaired"]
    assert not found(doctor(indexed, code=0), "index", "problem")
    assert indexed("search", "redis", "--json").stdout.strip()


def test_a_deleted_note_is_stale_until_repair_reindexes(indexed: Cli) -> None:
    (indexed.vault / "Harbor.md").unlink()
    report = doctor(indexed, code=0)
    (stale,) = [f for f in found(report, "index", "warn") if "removed" in f["message"]]
    assert "1 removed" in stale["message"] and stale["repairable"]
    doctor(indexed, "--repair")
    assert not [f for f in found(doctor(indexed), "index") if "removed" in f["message"]]
    assert "Harbor.md" not in indexed("status", "--json").stdout


def test_invalid_owned_values_and_unparseable_notes_are_listed(indexed: Cli) -> None:
    (indexed.vault / "inbox" / "Banana.md").write_text(
        "---\nconfidence: banana\n---\nA note with a bad confidence.\n", encoding="utf-8"
    )
    (indexed.vault / "inbox" / "Broken.md").write_text(
        "---\ntitle: [unclosed\n---\nbody\n", encoding="utf-8"
    )
    indexed("index")
    report = doctor(indexed, "--repair", code=1)  # a malformed note is for a person to fix
    (bad_value,) = found(report, "notes", "warn")
    assert bad_value["message"].startswith("inbox/Banana.md: ")
    assert "confidence" in bad_value["message"] and not bad_value["repairable"]
    (broken,) = found(report, "notes", "problem")
    assert broken["message"].startswith("inbox/Broken.md:") and broken["fix"]
    assert broken["message"].count("inbox/Broken.md") == 1
    assert not [f for f in found(report, "index", "warn") if "new" in f["message"]]


def test_a_dangling_typed_link_is_reported(indexed: Cli) -> None:
    (indexed.vault / "inbox" / "Linker.md").write_text(
        '---\nrelated: ["[[No Such Note]]", "[[Harbor]]"]\n---\nSee the others.\n',
        encoding="utf-8",
    )
    indexed("index")
    (dangling,) = found(doctor(indexed, code=0), "links", "warn")
    assert dangling["message"] == "inbox/Linker.md: related: [[No Such Note]] resolves to no note"


_HOLD = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
fcntl.flock(fd, fcntl.LOCK_EX)
os.ftruncate(fd, 0)
holder = str(os.getpid()) if sys.argv[2] == "self" else sys.argv[2]
os.write(fd, (holder + " 2026-01-01T00:00:00+00:00 index\\n").encode())
print("held", flush=True)
time.sleep(60)
"""


def _fd_of(pid: int, path: Path) -> int:
    """The descriptor through which process ``pid`` has ``path`` open."""
    folder = Path(f"/proc/{pid}/fd")
    return next(int(fd.name) for fd in folder.iterdir() if os.readlink(fd) == str(path))


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


@pytest.fixture
def hold(indexed: Cli) -> Iterator[Callable[[str, str], int]]:
    """``hold(name, recorded)``: another process takes the cache's lock file ``name`` and
    records ``recorded`` as its holder ("self": its own pid); returns that process's pid."""
    procs: list[subprocess.Popen[str]] = []

    def take(name: str, recorded: str) -> int:
        lock = indexed.vault / ".vaultmem" / name
        proc = subprocess.Popen(
            [sys.executable, "-c", _HOLD, str(lock), recorded], stdout=subprocess.PIPE, text=True
        )
        procs.append(proc)
        assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
        return proc.pid

    yield take
    for proc in procs:
        proc.kill()
        proc.wait()


def test_a_dead_servers_file_is_removed_and_a_live_one_is_reported(indexed: Cli, hold) -> None:
    advert = indexed.vault / ".vaultmem" / "server.json"
    advert.write_text(json.dumps({"pid": _dead_pid(), "port": 1, "url": "http://x"}))
    (problem,) = found(doctor(indexed, code=1), "server", "problem")
    assert "not running" in problem["message"] and problem["repairable"]
    report = doctor(indexed, "--repair", code=0)
    assert found(report, "server")[0]["repaired"] and not advert.exists()
    pid = hold("server.lock", "self")  # a live server holds its lock for its whole life
    fd = _fd_of(pid, advert.with_name("server.lock"))
    advert.write_text(json.dumps({"pid": pid, "lock_fd": fd, "url": "http://127.0.0.1:8765"}))
    (running, token) = found(doctor(indexed, code=0), "server")
    assert running["severity"] == "ok" and "http://127.0.0.1:8765" in running["message"]
    assert token["message"] == "no server token yet (the first `serve` makes one)"


def test_an_advertisement_another_user_planted_is_a_problem(indexed: Cli, hold) -> None:
    advert = indexed.vault / ".vaultmem" / "server.json"
    pid = hold("server.lock", "self")
    fd = _fd_of(pid, advert.with_name("server.lock"))
    advert.write_text(json.dumps({"pid": pid, "lock_fd": fd, "url": "http://127.0.0.1:8765"}))
    os.chown(advert, 65534, 65534)
    (problem,) = found(doctor(indexed, code=1), "server", "problem")
    assert problem["message"] == (
        f"{advert} is ignored by every client: {advert} is owned by uid 65534"
    )
    assert found(doctor(indexed, "--repair", code=0), "server")[0]["repaired"]
    assert not advert.exists()


def test_the_token_file_is_checked(indexed: Cli) -> None:
    token = indexed.vault / ".vaultmem" / "server.token"
    indexed("serve", "token")
    assert f"server token in {token}" in messages(doctor(indexed, code=0), "ok")
    token.chmod(0o644)
    (problem,) = found(doctor(indexed, code=1), "server", "problem")
    assert "other users may read it (mode 644)" in problem["message"]
    assert problem["fix"] == f"rm {token} (a new one is made)"


def test_every_server_still_running_for_the_vault_is_listed(indexed: Cli) -> None:
    """A server whose cache was removed under it (here while it was stopped, so it
    could not notice) is listed by pid until it stops itself; so is `mcp`."""
    from tests.test_serve import _gone
    from tests.test_warm import vm

    vault = indexed.vault
    done = vm(vault, "serve", "--background", "--port", "0", "--json")
    assert done.returncode == 0, done.stderr.decode()
    pid = json.loads(done.stdout)["pid"]
    mcp = subprocess.Popen(
        [sys.executable, "-m", "vaultmem", "mcp"],
        cwd=vault,  # found upward from its folder
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        (running, _token, listed) = found(doctor(indexed, code=0), "server")
        assert f"server running (pid {pid}, " in running["message"]
        assert listed["message"] == f"pid {mcp.pid}: `vaultmem mcp` serves this vault"
        os.kill(pid, signal.SIGSTOP)
        shutil.rmtree(vault / ".vaultmem")
        indexed("index")
        (orphan,) = found(doctor(indexed, code=1), "server", "problem")
        assert orphan["message"] == (
            f"pid {pid}: `vaultmem serve` runs for this vault but is not its advertised "
            "server (its cache was removed or replaced under it)"
        )
        assert orphan["fix"] == f"kill {pid}"
        os.kill(pid, signal.SIGCONT)
        assert _gone(pid, 5)
        assert not found(doctor(indexed, code=0), "server", "problem")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        mcp.kill()
        mcp.wait()


def test_a_lock_kept_by_an_orphan_is_a_problem_naming_it(indexed: Cli, hold) -> None:
    pid = hold("lock", str(_dead_pid()))  # the recorded holder exited; this process keeps the lock
    (problem,) = found(doctor(indexed, code=1), "lock", "problem")
    assert f"kill {pid}" in problem["message"] and problem["fix"] == f"kill {pid}"
    assert not problem["repairable"]  # killing a process is not doctor's call


def test_a_lock_held_by_a_live_holder_is_fine(indexed: Cli, hold) -> None:
    pid = hold("lock", "self")
    (index_lock, _embed_lock) = found(doctor(indexed, code=0), "lock")
    assert index_lock["severity"] == "ok"
    assert index_lock["message"].startswith(f"index lock held by pid {pid}, `index`")


def test_a_broken_hook_command_is_a_problem(indexed: Cli) -> None:
    settings = Path.home() / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    command = "/nowhere/vaultmem --vault /nowhere/vault hook prompt"
    hooks = {
        "UserPromptSubmit": [{"matcher": "", "hooks": [{"type": "command", "command": command}]}]
    }
    settings.write_text(json.dumps({"hooks": hooks}))
    (problem,) = found(doctor(indexed, code=1), "hooks", "problem")
    assert problem["message"].startswith("user: ")
    assert "/nowhere/vaultmem not found" in problem["message"]
    assert "--scope user" in problem["fix"]


def test_an_unreachable_endpoint_is_reported_without_its_key(vault: Path) -> None:
    env = {
        **os.environ,
        "VAULTMEM_LLM_URL": f"http://127.0.0.1:{free_port()}/v1",
        "VAULTMEM_LLM_API_KEY": "sk-secret123",
    }
    assert run_vaultmem(vault, "index", env=env).returncode == 0
    for args in (("doctor",), ("doctor", "--json")):
        proc = run_vaultmem(vault, *args, env=env)
        assert proc.returncode == 1, proc.stderr
        assert "sk-secret123" not in proc.stdout + proc.stderr
        assert "Traceback" not in proc.stderr
    report = json.loads(proc.stdout)
    (problem,) = found(report, "endpoints", "problem")
    assert "llm endpoint http://127.0.0.1:" in problem["message"]
    assert "unreachable" in problem["message"]


# -- vectors: a copy of the session's embedded example vault ------------------------------


@pytest.fixture
def embedded(embedded_example: Path, tmp_path: Path, vectors_on: None) -> Cli:
    target = tmp_path / "vault"
    copy_indexed(embedded_example, target)
    return Cli(target)


def _store(vault: Path) -> VectorStore:
    return VectorStore.open(vault / ".vaultmem", MODEL_ID, DIMENSION)


def test_an_embedded_vault_is_healthy(embedded: Cli) -> None:
    report = doctor(embedded, code=0)
    (collection,) = found(report, "vectors")
    assert collection["message"].startswith(f"{MODEL_ID} ({DIMENSION}-d): ")


def test_orphan_vectors_are_dropped_by_repair(embedded: Cli) -> None:
    orphan = "f" * 40
    with _store(embedded.vault) as store:
        before = store.count()
        store.upsert([orphan], [[1.0] * DIMENSION])
    (warning,) = [f for f in found(doctor(embedded), "vectors", "warn") if "orphan" in f["message"]]
    assert warning["message"].startswith("1 vectors") and warning["repairable"]
    report = doctor(embedded, "--repair", code=0)
    assert "dropped 1 orphan vectors" in messages(report, "ok")
    assert not [f for f in found(report, "vectors", "warn") if "orphan" in f["message"]]
    with _store(embedded.vault) as store:
        assert store.count() == before and orphan not in store.ids()


def test_a_deleted_notes_vectors_become_orphans_that_repair_drops(embedded: Cli) -> None:
    (embedded.vault / "Harbor.md").unlink()
    report = doctor(embedded, "--repair", code=0)  # re-index first, then prune what it freed
    assert "1 removed" in messages(report, "ok")
    assert "orphan vectors" in messages(report, "ok")
    assert not [f for f in found(report, "vectors", "warn") if "orphan" in f["message"]]


def test_a_record_listing_lost_vectors_is_corrected(embedded: Cli) -> None:
    record = record_path(embedded.vault / ".vaultmem", MODEL_ID)
    lost = sorted(parse_record(record)[0])[0]
    with _store(embedded.vault) as store:
        store.delete([lost])
    (problem,) = found(doctor(embedded, code=1), "vectors", "problem")
    assert "lists 1 vectors the store lacks" in problem["message"]
    report = doctor(embedded, "--repair", code=0)
    assert lost not in parse_record(record)[0]
    (missing,) = [f for f in found(report, "vectors", "warn") if "lack a vector" in f["message"]]
    assert missing["fix"] == "vaultmem embed"
    embedded("embed")  # the sweep now sees the hole and fills it
    with _store(embedded.vault) as store:
        assert lost in store.ids()


def test_an_unreadable_vector_store_is_deleted_for_embed_to_rebuild(embedded: Cli) -> None:
    db = embedded.vault / ".vaultmem" / "chroma" / "chroma.sqlite3"
    db.write_bytes(db.read_bytes()[:4096])
    (problem,) = found(doctor(embedded, code=1), "vectors", "problem")
    assert "cannot be read" in problem["message"] and problem["repairable"]
    report = doctor(embedded, "--repair", code=0)
    assert not (embedded.vault / ".vaultmem" / "chroma").exists()
    assert "fragments lack a vector" in messages(report, "warn")
    # what the report promises: `embed` rebuilds the store
    assert "fragments embedded" in embedded("embed").stdout
    assert not found(doctor(embedded, code=0), "vectors", "warn")
