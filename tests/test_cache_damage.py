"""Every cache file heals: deleted, truncated or garbage, `index`/`embed` rebuild it and say so.

Each case damages one cache file or folder of an indexed vault, checks that a command
that cannot heal says which command does (never a traceback), runs that command, and
compares the results with those of the clean build.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import Cli, run_vaultmem

from tests.conftest import copy_indexed

pytestmark = pytest.mark.slow  # damages and rebuilds real caches, killed rebuilds included

QUERIES = ("redis cache failover", "python style", "deploy kubernetes helm")
PINNED_NOW = "2026-12-01T09:00:00Z"


@pytest.fixture(autouse=True)
def _pinned_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """Scores hold the memory prior, which reads the clock: runs compared here must see
    the same time."""
    monkeypatch.setenv("VAULTMEM_NOW", PINNED_NOW)


def _files(target: Path) -> list[Path]:
    return sorted(p for p in target.rglob("*") if p.is_file()) if target.is_dir() else [target]


def delete(target: Path) -> None:
    """Remove the file or folder."""
    if target.is_dir():
        shutil.rmtree(target)
    else:
        target.unlink()


def truncate(target: Path) -> None:
    """Cut every file to half its size (a torn write, a full disk)."""
    for path in _files(target):
        os.truncate(path, path.stat().st_size // 2)


def garbage(target: Path) -> None:
    """Overwrite every file with random bytes of the same length."""
    rng = random.Random(str(target.name))
    for path in _files(target):
        path.write_bytes(rng.randbytes(max(64, path.stat().st_size)))


DAMAGE: dict[str, Callable[[Path], None]] = {
    "delete": delete,
    "truncate": truncate,
    "garbage": garbage,
}


def _whoosh(cache: Path) -> Path:
    (live,) = cache.glob("whoosh-*")
    return live


def _searches(cli: Cli, command: str = "search") -> list[list[dict]]:
    return [cli.json_lines(command, q) for q in QUERIES]


def _no_traceback(result: object) -> None:
    assert "Traceback" not in (result.stderr + result.stdout)  # type: ignore[attr-defined]


@pytest.mark.parametrize("damage", DAMAGE)
@pytest.mark.parametrize("target", ["whoosh", "manifest"])
def test_keyword_caches_heal(cli: Cli, vault: Path, target: str, damage: str) -> None:
    cli("index")
    clean = _searches(cli)
    cache = vault / ".vaultmem"
    DAMAGE[damage](_whoosh(cache) if target == "whoosh" else cache / "manifest.sqlite")

    broken = cli("search", QUERIES[0], ok=False)
    _no_traceback(broken)
    if broken.exit_code != 0:  # it cannot heal: one line naming the command that does
        (line,) = broken.stderr.strip().splitlines()
        assert "run `vaultmem index`" in line

    healed = cli("index")
    assert "vaultmem: repaired: " in healed.stderr
    assert _searches(cli) == clean
    assert "repaired" not in cli("index").stderr  # healed for good: the next run is quiet
    assert len(list(cache.glob("whoosh*"))) == 1


def test_index_rebuild_heals_a_torn_manifest(cli: Cli, vault: Path) -> None:
    cli("index")
    clean = _searches(cli)
    truncate(vault / ".vaultmem" / "manifest.sqlite")
    cli("index", "--rebuild")
    assert _searches(cli) == clean


@pytest.mark.parametrize("command", ["pin", "touch"])
def test_write_on_a_damaged_index_writes_warns_and_index_repairs(
    cli: Cli, vault: Path, command: str
) -> None:
    cli("index")
    garbage(_whoosh(vault / ".vaultmem"))
    note = vault / "decisions" / "Redis for caching.md"
    before = note.read_bytes()

    done = cli(command, "decisions/Redis for caching.md")
    _no_traceback(done)
    assert note.read_bytes() != before  # the note was written
    (line,) = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert line.startswith("vaultmem: warning: ") and "run `vaultmem index`" in line

    assert "repaired" in cli("index").stderr
    cli("index", "--rebuild")
    rebuilt = _searches(cli)
    assert cli.json_lines("search", "redis")[0]["path"] == "decisions/Redis for caching.md"
    assert _searches(cli) == rebuilt


def _interrupted_update(vault: Path, paths: list[str]) -> None:
    """The state a run killed between the Whoosh commit and the manifest's leaves behind:
    the pending mark set, the keyword index updated with ``paths``, their rows not."""
    from vaultmem.config import build
    from vaultmem.index import lexical
    from vaultmem.index import manifest as mf
    from vaultmem.index.lexical import LexicalIndex
    from vaultmem.note import read_note

    cache = build(vault, {}).cache_dir
    store, _ = mf.open_writer(cache)
    with store:
        store.mark_pending()
        index = LexicalIndex.open_dir(lexical.location(cache, store.state().generation))
        index.update([read_note(vault, path) for path in paths])
        index.close()


def test_an_interrupted_update_is_redone_not_rebuilt(cli: Cli, vault: Path) -> None:
    cli("index")
    note = vault / "decisions" / "Redis for caching.md"
    note.write_text(note.read_text() + "\nWe also keep a zeppelin registry.\n")
    _interrupted_update(vault, ["decisions/Redis for caching.md"])
    assert "interrupted" in cli.json_lines("status")[0]["index_problem"]

    report = cli.json_lines("index")[0]
    assert (report["updated"], report["rebuilt"], report["healed"]) == (1, False, "")
    assert cli.json_lines("status")[0]["index_problem"] == ""
    assert (
        cli.json_lines("search", "zeppelin registry")[0]["path"]
        == note.relative_to(vault).as_posix()
    )
    # Whoosh counts replaced documents in its statistics until segments merge, so any
    # incremental update scores a little differently from a fresh build, and hits that
    # score alike may swap places: compare the hits, not their scores or order.
    redone = _without_scores(_searches(cli))
    cli("index", "--rebuild")
    assert _without_scores(_searches(cli)) == redone


def _without_scores(results: list[list[dict]]) -> list[list[dict]]:
    return [
        sorted(
            ({k: v for k, v in hit.items() if k != "score"} for hit in hits),
            key=lambda hit: hit["path"],
        )
        for hits in results
    ]


def test_an_interrupted_update_no_walk_can_redo_is_rebuilt(cli: Cli, vault: Path) -> None:
    cli("index")
    clean = _searches(cli)
    extra = vault / "Zeppelins.md"
    extra.write_text("# Zeppelins\n\nHelium, not hydrogen.\n")
    _interrupted_update(vault, ["Zeppelins.md"])
    extra.unlink()  # gone before the next run: only the note count can tell

    report = cli("index", "--json")
    assert "holds 54 notes, the manifest 53" in report.stderr
    assert json.loads(report.stdout)["rebuilt"] is True
    assert not cli.json_lines("search", "zeppelins helium")
    assert _searches(cli) == clean


def test_query_on_a_damaged_index_names_the_healing_command(cli: Cli, vault: Path) -> None:
    cli("index")
    garbage(_whoosh(vault / ".vaultmem"))
    for args in (("search", "redis"), ("query", "redis")):
        result = cli(*args, ok=False)
        _no_traceback(result)
        assert result.exit_code == 1 and "run `vaultmem index`" in result.stderr
    cli("index")
    assert cli.json_lines("search", "redis")


def test_remember_on_a_damaged_index_still_remembers(cli: Cli, vault: Path) -> None:
    cli("index")
    garbage(_whoosh(vault / ".vaultmem"))
    result = cli("remember", "Zeppelins need helium, not hydrogen")
    _no_traceback(result)
    cli("index")
    assert cli.json_lines("search", "zeppelins helium")


def test_status_names_a_damaged_index(cli: Cli, vault: Path) -> None:
    cli("index")
    assert cli.json_lines("status")[0]["index_problem"] == ""
    shutil.rmtree(_whoosh(vault / ".vaultmem"))
    assert "missing" in cli.json_lines("status")[0]["index_problem"]


def test_a_manifest_of_the_old_format_is_replaced(cli: Cli, vault: Path) -> None:
    cache = vault / ".vaultmem"
    cache.mkdir()
    (cache / "manifest.json").write_text('{"schema": 3, "notes": {}}')
    (cache / "whoosh").mkdir()
    cli("index")
    assert not (cache / "manifest.json").exists() and not (cache / "whoosh").exists()
    assert cli.json_lines("search", "redis")


def test_status_lists_notes_with_invalid_values(cli: Cli, vault: Path) -> None:
    (vault / "bad date.md").write_text("---\ncreated: 2026-13-45\n---\n# Bad date\n\nbody\n")
    cli("index")
    status = cli.json_lines("status")[0]
    (warning,) = status["note_warnings"]["bad date.md"]
    assert "created" in warning and "2026-13-45" in warning
    assert "1 notes with invalid" in cli("status").stdout
    assert cli.json_lines("search", "bad date")[0]["path"] == "bad date.md"


# -- vectors ----------------------------------------------------------------------------


def _damage_file(where: Callable[[Path], Path]) -> Callable[[Path, str], None]:
    return lambda cache, damage: DAMAGE[damage](where(cache))


def _damage_fragment_rows(cache: Path, damage: str) -> None:
    """The manifest's fragment rows: all deleted, each cut in half, or each random text."""
    rng = random.Random(damage)
    with contextlib.closing(sqlite3.connect(cache / "manifest.sqlite")) as db, db:
        rows = db.execute("SELECT size, content, refs FROM fragments").fetchall()
        assert rows
        if damage == "delete":
            db.execute("DELETE FROM fragments")
        for size, content, refs in rows if damage != "delete" else ():
            if damage == "truncate":
                bad = refs[: len(refs) // 2]
            else:
                bad = rng.randbytes(len(refs)).decode("latin-1")
            sql = "UPDATE fragments SET refs = ? WHERE size = ? AND content = ?"
            db.execute(sql, (bad, size, content))


VECTOR_TARGETS: dict[str, Callable[[Path, str], None]] = {
    "chroma": _damage_file(lambda cache: cache / "chroma"),
    "fragments": _damage_fragment_rows,
    "record": _damage_file(lambda cache: next((cache / "vectors").glob("*.ids"))),
}


@pytest.fixture(scope="module")
def small_embedded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two folders of example-vault/, indexed and embedded once (re-embedding it is quick).

    Built like ``embedded_example`` (from the vault alone: hermetic). Copy before use.
    """
    from conftest import EXAMPLE_VAULT

    from vaultmem.config import build
    from vaultmem.embedding import embed_vault
    from vaultmem.indexer import index_vault
    from vaultmem.inference.local import LocalEmbedder

    vault = tmp_path_factory.mktemp("small") / "vault"
    for folder in ("decisions", "preferences"):
        shutil.copytree(EXAMPLE_VAULT / folder, vault / folder)
    config = build(vault, {})
    index_vault(config)
    assert embed_vault(config, LocalEmbedder()).embedded > 13
    return vault


@pytest.mark.parametrize("damage", DAMAGE)
@pytest.mark.parametrize("target", VECTOR_TARGETS)
def test_vector_caches_heal(
    small_embedded: Path, tmp_path: Path, vectors_on: None, target: str, damage: str
) -> None:
    vault = tmp_path / "vault"
    copy_indexed(small_embedded, vault)
    cli = Cli(vault)
    clean = _searches(cli, "vsearch")
    cache = vault / ".vaultmem"
    VECTOR_TARGETS[target](cache, damage)

    broken = cli("vsearch", QUERIES[0], ok=False)
    _no_traceback(broken)
    if broken.exit_code != 0:
        (line,) = broken.stderr.strip().splitlines()
        assert "run `vaultmem embed`" in line

    healed = cli("embed")
    _no_traceback(healed)
    if damage != "delete" or target == "chroma":
        assert "vaultmem: repaired: " in healed.stderr
    assert _searches(cli, "vsearch") == clean
    assert "repaired" not in cli("embed").stderr
    assert json.loads(cli("embed", "--json").stdout)["embedded"] == 0


# -- an interrupted rebuild ---------------------------------------------------------------


def _many_notes(root: Path, count: int) -> None:
    rng = random.Random(7)
    words = [
        "alpha",
        "beta",
        "gamma",
        "delta",
        "kappa",
        "lambda",
        "sigma",
        "omega",
        "zeta",
        "theta",
    ]
    for i in range(count):
        folder = root / f"f{i % 20}"
        folder.mkdir(parents=True, exist_ok=True)
        body = " ".join(rng.choice(words) for _ in range(60))
        (folder / f"note {i}.md").write_text(f"# Note {i}\n\nword{i} {body}\n")


# The module fixture runs before the per-test environment isolation: say it explicitly.
_KEYWORDS_ONLY = {**os.environ, "VAULTMEM_EMBEDDER": "none", "VAULTMEM_NOW": PINNED_NOW}


def _run(vault: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_vaultmem(vault, *args, env=_KEYWORDS_ONLY)


@pytest.fixture(scope="module")
def many_indexed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """3,000 small notes, indexed once; copy before use."""
    vault = tmp_path_factory.mktemp("many") / "vault"
    _many_notes(vault, 3000)
    assert _run(vault, "index").returncode == 0
    return vault


@pytest.mark.parametrize("delay", [0.3, 0.8, 1.5])
def test_a_killed_rebuild_leaves_the_old_index_live(
    many_indexed: Path, tmp_path: Path, delay: float
) -> None:
    vault = tmp_path / "vault"
    copy_indexed(many_indexed, vault)
    before = _run(vault, "search", "word77 kappa", "--json").stdout
    assert "note 77.md" in before

    proc = subprocess.Popen(
        [sys.executable, "-m", "vaultmem", "--vault", str(vault), "index", "--rebuild"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=_KEYWORDS_ONLY,
    )
    time.sleep(delay)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    time.sleep(0.2)  # orphaned workers, if any, see their parent gone

    # Whatever the rebuild got to, the old generation answers until one is complete.
    assert _run(vault, "search", "word77 kappa", "--json").stdout == before
    status = json.loads(_run(vault, "status", "--json").stdout)
    assert status["indexed"] == 3000 and status["stale"] == 0 and not status["index_problem"]
    again = _run(vault, "index", "--json")
    assert again.returncode == 0 and json.loads(again.stdout)["unchanged"] == 3000
    assert len(list((vault / ".vaultmem").glob("whoosh-*"))) == 1
    assert _run(vault, "search", "word77 kappa", "--json").stdout == before
