"""The link graph (issue 12): typed links and wikilinks resolved once per index, kept in
the cache, rebuilt incrementally; `links` reads it; `links --suggest` from vectors."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest
from conftest import Cli
from test_links import OWNED_LINE, add_note, git

from tests.conftest import copy_indexed
from vaultmem.config import build
from vaultmem.index.graph import FILE_NAME, Edge, LinkGraph
from vaultmem.memory.links import SUGGEST_THRESHOLD, links_of

REDIS = "decisions/Redis for caching.md"
MEMCACHED = "decisions/Memcached for session cache.md"
ALEMBIC = "decisions/Alembic for migrations.md"
QUEUES = "research/Background job queues.md"
FLAKY = "research/Flaky tests in CI.md"
DAILY = "daily/2026-10-18.md"
HANDOFF = "handoffs/2026-10-14 webhook retries.md"


def graph(vault: Path) -> LinkGraph:
    return LinkGraph.load(build(vault, {}))


def edges(g: LinkGraph, vault: Path) -> set[Edge]:
    paths = [str(p.relative_to(vault)) for p in vault.rglob("*.md")]
    return {e for p in paths for e in g.out(p)}


# --------------------------------------------------------------------------- the graph


def test_in_memory_graph_answers_out_into_and_neighbours() -> None:
    a, b, c = (
        Edge("A.md", "B.md", "supersedes"),
        Edge("B.md", "A.md", "superseded_by"),
        Edge("C.md", "A.md", "wikilink"),
    )
    g = LinkGraph([a, b, c, a])
    assert len(g) == 3
    assert g.out("A.md") == (a,) and g.into("A.md") == (b, c)
    assert g.neighbours("A.md") == (a, b, c)
    assert g.neighbours("A.md", {"wikilink"}) == (c,)
    assert g.out("Z.md") == () and g.neighbours("Z.md") == ()


def test_a_never_indexed_vault_has_an_empty_graph(vault: Path) -> None:
    assert len(graph(vault)) == 0


def test_typed_links_are_edges_as_written_on_each_end(cli: Cli, vault: Path) -> None:
    cli("index")
    g = graph(vault)
    assert Edge(REDIS, MEMCACHED, "supersedes") in g.out(REDIS)
    assert Edge(MEMCACHED, REDIS, "superseded_by") in g.into(REDIS)
    assert set(g.neighbours(REDIS, {"supersedes", "superseded_by"})) == {
        Edge(REDIS, MEMCACHED, "supersedes"),
        Edge(MEMCACHED, REDIS, "superseded_by"),
    }


def test_wikilinks_with_heading_alias_embed_and_by_alias_resolve(cli: Cli, vault: Path) -> None:
    cli("index")
    g = graph(vault)
    into_alembic = {e.source for e in g.into(ALEMBIC) if e.type == "wikilink"}
    assert "projects/Release process.md" in into_alembic  # [[Alembic for migrations#Rules]]
    assert "preferences/Code review habits.md" in into_alembic  # [[…#Rules|the expand…]]
    into_redis = {e.source for e in g.into(REDIS) if e.type == "wikilink"}
    assert "incidents/2026-10-18 Stripe webhook outage.md" in into_redis  # ![[…#Consequences]]
    assert "Harbor.md" in into_redis  # [[ADR-0007|Redis for caching]]: ADR-0007 is an alias


def test_dangling_and_self_links_are_not_edges(cli: Cli, vault: Path) -> None:
    add_note(
        vault,
        "scratch/Links.md",
        '---\ncaused_by: ["[[No such incident]]"]\nrelated: ["[[Redis for caching]]"]\n---\n'
        "See [[Ghost note]], [[Links#Top]] and [[redis cache decision|it]].\n",
    )
    cli("index")
    assert graph(vault).out("scratch/Links.md") == (
        Edge("scratch/Links.md", REDIS, "related"),
        Edge("scratch/Links.md", REDIS, "wikilink"),
    )


def test_graph_backlinks_equal_the_file_scan_for_every_note(cli: Cli, vault: Path) -> None:
    from vaultmem.lookup import note_names
    from vaultmem.memory.links import _backlinks, _graph_backlinks
    from vaultmem.note import read_note
    from vaultmem.vault import LinkResolver

    cli("index")
    config = build(vault, {})
    names = note_names(config)
    resolver = LinkResolver(names)
    paths = [n.path for n in names]
    for path in paths:
        scanned = _backlinks(config, read_note(vault, path), paths, resolver)
        assert _graph_backlinks(config, path) == scanned, path


# --------------------------------------------------------------------------- the cache


def plant(vault: Path, edge: Edge) -> None:
    """Put an edge no note holds into the stored graph: only a reader of it can see it."""
    with closing(sqlite3.connect(vault / ".vaultmem" / FILE_NAME)) as conn, conn:
        conn.execute(
            "INSERT INTO edges VALUES (?, 99, ?, ?)", (edge.source, edge.target, edge.type)
        )


FAKE = Edge(FLAKY, QUEUES, "refines")


def test_a_load_resolves_only_the_notes_a_change_can_move(cli: Cli, vault: Path) -> None:
    cli("index")
    plant(vault, FAKE)
    assert FAKE in graph(vault).out(FLAKY)  # current: answered from the stored graph
    with (vault / REDIS).open("a", encoding="utf-8") as fh:
        fh.write("\nSee [[Background job queues]].\n")
    add_note(vault, "scratch/New.md", "[[Rate limiting options]]\n")
    cli("index")
    g = graph(vault)
    assert Edge(REDIS, QUEUES, "wikilink") in g.out(REDIS)
    assert g.out("scratch/New.md") == (
        Edge("scratch/New.md", "research/Rate limiting options.md", "wikilink"),
    )
    assert FAKE in g.out(FLAKY)  # FLAKY names neither note: not resolved again
    # A new note of the same file name, nearer the root: links by name elsewhere move to it.
    add_note(vault, "scratch/Flaky tests in CI.md", "a second note of that name\n")
    cli("index")
    g = graph(vault)
    assert Edge("Harbor.md", "scratch/Flaky tests in CI.md", "wikilink") in g.out("Harbor.md")
    assert Edge("Harbor.md", FLAKY, "wikilink") not in g.out("Harbor.md")
    assert FAKE in g.out(FLAKY)  # FLAKY names no note that moved: not resolved again


def test_an_edited_note_is_re_resolved_after_index(cli: Cli, vault: Path) -> None:
    cli("index")
    before = edges(graph(vault), vault)
    with (vault / FLAKY).open("a", encoding="utf-8") as fh:
        fh.write("\nQueued retries: [[job queue comparison|queues]].\n")
    cli("index")
    after = edges(graph(vault), vault)
    assert after - before == {Edge(FLAKY, QUEUES, "wikilink")}
    assert before - after == set()


def test_a_new_note_resolves_links_that_were_dangling(cli: Cli, vault: Path) -> None:
    add_note(vault, "scratch/A.md", "See [[Ghost note]].\n")
    cli("index")
    assert graph(vault).out("scratch/A.md") == ()
    add_note(vault, "scratch/Ghost note.md", "Boo.\n")
    cli("index")
    assert graph(vault).out("scratch/A.md") == (
        Edge("scratch/A.md", "scratch/Ghost note.md", "wikilink"),
    )


def test_a_new_alias_resolves_links_by_it(cli: Cli, vault: Path) -> None:
    add_note(vault, "scratch/A.md", "See [[Nickname]].\n")
    cli("index")
    assert graph(vault).out("scratch/A.md") == ()
    text = (vault / QUEUES).read_text("utf-8")
    (vault / QUEUES).write_text(text.replace("task queue]", "task queue, Nickname]"), "utf-8")
    cli("index")
    assert graph(vault).out("scratch/A.md") == (Edge("scratch/A.md", QUEUES, "wikilink"),)


def test_a_renamed_note_re_resolves_links_by_name_and_drops_links_by_path(
    cli: Cli, vault: Path
) -> None:
    add_note(vault, "scratch/A.md", "[[decisions/Redis for caching]] and [[Ghost]].\n")
    add_note(vault, "scratch/B.md", "[[Redis for caching#Decision]].\n")
    cli("index")
    assert graph(vault).out("scratch/A.md") == (Edge("scratch/A.md", REDIS, "wikilink"),)
    moved = "archive/Redis for caching.md"
    (vault / "archive").mkdir()
    (vault / REDIS).rename(vault / moved)
    cli("index")
    g = graph(vault)
    assert g.out("scratch/A.md") == ()
    assert g.out("scratch/B.md") == (Edge("scratch/B.md", moved, "wikilink"),)
    assert Edge(MEMCACHED, moved, "superseded_by") in g.into(moved)
    assert g.into(REDIS) == ()


@pytest.mark.parametrize("damage", [b"", b"not a database at all" * 100, b"SQLite format 3\0"])
def test_a_damaged_cache_file_is_rebuilt(cli: Cli, vault: Path, damage: bytes) -> None:
    cli("index")
    good = edges(graph(vault), vault)
    plant(vault, FAKE)
    cache = vault / ".vaultmem" / FILE_NAME
    for suffix in ("-wal", "-shm"):
        (vault / ".vaultmem" / (FILE_NAME + suffix)).unlink(missing_ok=True)
    cache.write_bytes(damage)
    assert edges(graph(vault), vault) == good
    assert len(graph(vault)) == len(good)


# --------------------------------------------------------------------------- `links`


def test_links_reads_backlinks_from_the_graph_while_the_index_is_current(
    cli: Cli, vault: Path
) -> None:
    cli("index")
    plant(vault, FAKE)
    backlinks = cli.json_lines("links", QUEUES)[0]["backlinks"]
    assert {"path": FLAKY, "via": "refines"} in backlinks


def test_links_scans_the_files_when_the_index_is_stale(cli: Cli, vault: Path) -> None:
    cli("index")
    with (vault / FLAKY).open("a", encoding="utf-8") as fh:
        fh.write("\n[[Background job queues]]\n")
    backlinks = cli.json_lines("links", QUEUES)[0]["backlinks"]
    assert {"path": FLAKY, "via": "wikilink"} in backlinks


# --------------------------------------------------------------------------- --suggest


@pytest.fixture
def embedded(embedded_example: Path, tmp_path: Path, vectors_on: None) -> Path:
    target = tmp_path / "vault"
    copy_indexed(embedded_example, target)
    return target


def linked(vault: Path, path: str) -> set[str]:
    found = links_of(build(vault, {}), path)
    refs = [*(r for refs in found.typed.values() for r in refs), *found.wikilinks]
    return {r.path for r in refs if r.path} | {b.path for b in found.backlinks}


def test_suggest_lists_unlinked_neighbours_above_the_threshold(embedded: Path) -> None:
    cli = Cli(embedded)
    [out] = cli.json_lines("links", DAILY, "--suggest")
    assert out["path"] == DAILY and out["threshold"] == SUGGEST_THRESHOLD
    assert [s["path"] for s in out["suggestions"]] == [HANDOFF]
    assert out["written"] == []
    [wide] = cli.json_lines("links", DAILY, "--suggest", "--threshold", "0.4", "-n", "4")
    scores = [s["similarity"] for s in wide["suggestions"]]
    assert len(scores) == 4 and scores == sorted(scores, reverse=True) and scores[-1] >= 0.4
    already = linked(embedded, DAILY)
    assert already and not already & {s["path"] for s in wide["suggestions"]}
    text = cli("links", DAILY, "--suggest").stdout
    assert text.startswith(f"{DAILY}: notes close in meaning, not linked (cosine >= 0.70):\n")
    assert f"[{HANDOFF}]" in text


def test_suggest_write_links_both_ends_changing_only_owned_keys(embedded: Path) -> None:
    git(embedded, "init", "-q")
    git(embedded, "add", "-A", "--", ":!.vaultmem")
    git(embedded, "commit", "-qm", "vault")
    cli = Cli(embedded)
    [out] = cli.json_lines("links", DAILY, "--suggest", "--write")
    assert out["written"] == [HANDOFF]
    diff = git(embedded, "diff", "--unified=0")
    changed = [
        line[1:]
        for line in diff.splitlines()
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]
    assert sorted(git(embedded, "diff", "--name-only").splitlines()) == [DAILY, HANDOFF]
    assert changed and all(OWNED_LINE.match(line) for line in changed), changed
    assert HANDOFF in linked(embedded, DAILY) and DAILY in linked(embedded, HANDOFF)


def test_suggest_without_vectors_says_to_embed(
    cli: Cli, vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cli("index")  # keyword index only
    monkeypatch.delenv("VAULTMEM_EMBEDDER")  # the default model: its vectors are missing
    result = cli("links", REDIS, "--suggest", ok=False)
    assert result.exit_code != 0
    assert "run `vaultmem embed`" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_write_and_threshold_need_suggest(cli: Cli) -> None:
    assert cli("links", REDIS, "--write", ok=False).exit_code == 2
    assert cli("links", REDIS, "--threshold", "0.5", ok=False).exit_code == 2


def test_help_names_the_default_threshold(cli: Cli) -> None:
    # Spelled out in the CLI, which must not import the index for --help.
    assert f"default {SUGGEST_THRESHOLD:.2f}" in cli("links", "--help").stdout
