""" "Delete .vaultmem/ and search answers the same": every score after a rebuild equals
the score the incremental path gave, after any mix of writes.

Whoosh keeps replaced notes in its segments (deleted, still counted in BM25's document
count, document frequencies and field lengths) until a merge rewrites them, and a merge
stores lengths on a one-byte scale; vaultmem's keyword index scores with the statistics
of the live notes (vaultmem.index.live_stats), so the history of the index never shows.
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest
from conftest import Cli

pytestmark = pytest.mark.slow  # rebuilds the indexes and compares every score

QUERIES = (
    "deploy process",
    "redis cache",
    "postgres migrations",
    "stripe webhook",
    "who owns billing",
    "pgbouncer staging rollout",
    "flaky tests in CI",
    "pagin",
    "pgb",
)
NOW = "2026-12-01T09:00:00Z"


def _scores(cli: Cli, command: str) -> dict[str, list[tuple[str, float]]]:
    out = {}
    for text in QUERIES:
        hits = cli.json_lines(command, text, "-n", "30")
        out[text] = [(h["path"], h["score"]) for h in hits]
    return out


def _notes(vault: Path) -> list[str]:
    return sorted(
        str(p.relative_to(vault)) for p in vault.rglob("*.md") if ".vaultmem" not in p.parts
    )


def _write(cli: Cli, vault: Path, rng: random.Random, n: int) -> None:
    """One random write of the kinds a vault sees: reinforce, remember, edit, delete, link."""
    notes = _notes(vault)
    kind = rng.choice(("touch", "touch", "remember", "edit", "delete", "link", "pin"))
    note = rng.choice(notes)
    if kind == "touch":
        cli("touch", note)
    elif kind == "pin":
        cli("pin", note)
    elif kind == "remember":
        vocabulary = ("redis", "deploy", "staging", "postgres", "cache")
        words = " ".join(rng.choice(vocabulary) for _ in range(6))
        cli("remember", f"Note {n}: {words} process notes.", "--title", f"Memory {n}")
    elif kind == "edit":
        path = vault / note
        added = f"\nAn added line about deploy and redis {n}.\n"
        path.write_text(path.read_text("utf-8") + added, "utf-8")
        cli("index")
    elif kind == "delete":
        (vault / note).unlink()
        cli("index")
    else:
        other = rng.choice([p for p in notes if p != note])
        cli("link", note, other, "--type", "related")


@pytest.mark.parametrize("seed", [1, 2])
def test_scores_after_random_writes_equal_a_rebuild(
    vault: Path, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    monkeypatch.setenv("VAULTMEM_NOW", NOW)
    cli = Cli(vault)
    cli("index")
    rng = random.Random(seed)
    for n in range(25):
        _write(cli, vault, rng, n)
    before = {cmd: _scores(cli, cmd) for cmd in ("search", "query")}

    cli("index", "--rebuild")
    rebuilt = {cmd: _scores(cli, cmd) for cmd in ("search", "query")}
    shutil.rmtree(vault / ".vaultmem")  # the promise: the vault is the only state
    cli("index")
    fresh = {cmd: _scores(cli, cmd) for cmd in ("search", "query")}

    for after in (rebuilt, fresh):
        for cmd, by_query in before.items():
            for text, hits in by_query.items():
                again = after[cmd][text]
                assert [p for p, _ in hits] == [p for p, _ in again], (cmd, text)
                for (path, score), (_, other) in zip(hits, again, strict=True):
                    assert score == pytest.approx(other, abs=1e-9), (cmd, text, path)


def test_the_statistics_leave_replaced_notes_out(vault: Path) -> None:
    from vaultmem.config import build
    from vaultmem.index.lexical import LexicalIndex

    cli = Cli(vault)
    cli("index")
    for _ in range(3):  # each touch rewrites the note: Whoosh keeps the old copy, deleted
        cli("touch", "Redis for caching")
    config = build(vault, {})

    def stats() -> tuple[int, int, dict[str, int], float]:
        index = LexicalIndex.open(config.cache_dir)
        reader = index.searcher().reader()
        live = index.live_stats()
        terms = ("redi", "cach", "postgr", "decis")
        df = {t: live.doc_frequency("text", t) for t in terms}
        out = reader.doc_count_all(), live.doc_count, df, live.avg_field_length("text")
        index.close()
        return out

    all_docs, docs, df, avgfl = stats()
    assert all_docs == docs + 3  # the three old copies are still in the segments
    shutil.rmtree(vault / ".vaultmem")
    cli("index")
    assert stats() == (docs, docs, df, avgfl)
