"""The core API every front end shares: request validation, and an OpenVault that stays
current while other processes index, rebuild, write and embed."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from conftest import run_vaultmem

from tests.conftest import copy_indexed
from vaultmem import api
from vaultmem.config import build
from vaultmem.errors import NoteNotFound, RequestError
from vaultmem.model import Filters, RememberRequest, SearchRequest

NOW = datetime(2026, 12, 1, tzinfo=UTC)


def _paths(vault: api.OpenVault, text: str, mode: str = "keyword") -> list[str]:
    request = SearchRequest(text, mode=mode, limit=5, prior=False, review=False)
    return [h.path for h in api.search(vault, request, now=NOW).hits]


@pytest.fixture
def indexed(vault: Path) -> Path:
    assert run_vaultmem(vault, "index").returncode == 0
    return vault


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"mode": "fuzzy"}, "unknown mode 'fuzzy'"),
        ({"limit": 0}, "limit must be a whole number from 1 to 1000"),
        ({"limit": True}, "limit must be a whole number"),
        ({"candidates": 5000}, "candidates must be"),
        ({"query": "x" * 10_001}, "longer than 10000"),
    ],
)
def test_search_request_is_checked_once(fields: dict, message: str) -> None:
    with pytest.raises(RequestError, match=message) as caught:
        SearchRequest(**{"query": "redis", **fields})
    assert caught.value.exit_code == 2


def test_remember_request_normalises_and_checks() -> None:
    request = RememberRequest("No deploys on Fridays", type=" Decision ", tags=("ops, #release",))
    assert (request.type, request.tags) == ("decision", ("ops", "release"))
    with pytest.raises(RequestError, match="unknown type 'hunch'"):
        RememberRequest("x", type="hunch")
    with pytest.raises(RequestError, match="text is empty"):
        RememberRequest("  \n")


def test_open_vault_sees_notes_indexed_by_another_process(indexed: Path) -> None:
    vault = api.OpenVault(build(indexed, {}), warm=True)
    assert _paths(vault, "zanzibar quokka") == []
    searcher = vault.lexical().searcher()
    (indexed / "inbox" / "quokka.md").write_text("# Quokka\n\nzanzibar quokka sightings\n")
    assert run_vaultmem(indexed, "index").returncode == 0
    assert _paths(vault, "zanzibar quokka") == ["inbox/quokka.md"]
    # The same generation was updated in place: the searcher was refreshed, not reopened
    # from scratch (and a rebuild makes a new generation, which is reopened).
    assert vault.lexical().searcher() is not searcher
    assert run_vaultmem(indexed, "index", "--rebuild").returncode == 0
    assert _paths(vault, "zanzibar quokka") == ["inbox/quokka.md"]
    (indexed / "inbox" / "quokka.md").unlink()
    assert run_vaultmem(indexed, "index").returncode == 0
    assert _paths(vault, "zanzibar quokka") == []
    vault.close()


def test_open_vault_keeps_its_searcher_while_nothing_changes(indexed: Path) -> None:
    vault = api.OpenVault(build(indexed, {}), warm=True)
    first = vault.lexical()
    _paths(vault, "redis")
    assert vault.lexical() is first
    assert first.searcher() is vault.lexical().searcher()


def test_warm_vectors_follow_an_embed_sweep_of_another_process(
    embedded_example: Path, tmp_path: Path, vectors_on: None
) -> None:
    copy = tmp_path / "vault"
    copy_indexed(embedded_example, copy)
    vault = api.OpenVault(build(copy, {}), warm=True)
    assert _paths(vault, "hedgehog hibernation in winter", "semantic")
    store = vault._vectors
    (copy / "inbox" / "hedgehogs.md").write_text(
        "# Hedgehogs\n\nHedgehogs hibernate through the winter in leaf nests.\n"
    )
    env = {"VAULTMEM_EMBEDDER": "local"}
    assert run_vaultmem(copy, "index", env=env).returncode == 0
    assert run_vaultmem(copy, "embed", env=env).returncode == 0
    assert _paths(vault, "hedgehog hibernation in winter", "semantic")[0] == "inbox/hedgehogs.md"
    assert vault._vectors is not store  # the store was reopened, not read stale
    vault.close()


def test_change_and_reinforce_resolve_every_name_before_writing(indexed: Path) -> None:
    vault = api.OpenVault(build(indexed, {}))
    note = indexed / "projects" / "Kubernetes migration.md"
    before = note.read_bytes()
    with pytest.raises(NoteNotFound):
        api.change(vault, "pin", ["Kubernetes migration", "no such note"], now=NOW)
    assert note.read_bytes() == before
    with pytest.raises(RequestError, match="unknown action 'archive'"):
        api.change(vault, "archive", ["Kubernetes migration"], now=NOW)
    with pytest.raises(RequestError, match="pin takes no until or for"):
        api.change(vault, "pin", ["Kubernetes migration"], now=NOW, for_="3d")
    with pytest.raises(RequestError, match="until/for"):
        api.change(vault, "snooze", ["Kubernetes migration"], now=NOW)
    (done,) = api.change(vault, "snooze", ["Kubernetes migration"], now=NOW, for_="3d")
    assert done.changed and "snoozed_until: 2026-12-04" in note.read_text()
    (touched,) = api.reinforce(vault, ["Kubernetes migration"], now=NOW)
    assert touched.use_count == touched.use_count_before + 1


def test_filters_and_modes_share_one_request(indexed: Path) -> None:
    vault = api.OpenVault(build(indexed, {}))
    request = SearchRequest("redis", limit=10, filters=Filters(folder="decisions"))
    hits = api.search(vault, request, now=NOW).hits
    assert hits and all(h.path.startswith("decisions/") for h in hits)
    hybrid = api.search(vault, SearchRequest("redis", mode="hybrid", limit=3), now=NOW)
    assert hybrid.query is not None and len(hybrid.hits) == 3
    assert hybrid.as_json()["hits"][0]["path"] == hybrid.hits[0].path


@pytest.mark.parametrize(
    ("start", "end", "expected"),
    [(None, None, "a\nb\nc\n"), (2, None, "b\nc\n"), (None, 1, "a\n"), (2, 2, "b\n"), (9, 12, "")],
)
def test_excerpt(start: int | None, end: int | None, expected: str) -> None:
    assert api.excerpt("a\nb\nc\n", start, end) == expected


def test_excerpt_refuses_backwards_and_zero() -> None:
    with pytest.raises(RequestError, match="before start line"):
        api.excerpt("a\n", 3, 2)
    with pytest.raises(RequestError, match="start line must be 1 or more"):
        api.excerpt("a\n", 0, 2)


def test_a_note_is_found_by_title_before_the_vault_is_indexed(cli) -> None:  # noqa: ANN001
    # The vault fixture is not indexed: names come from file names until something reads
    # the notes. A lookup that misses reads the unindexed notes' titles and tries again.
    cli("remember", "Billing runs on Postgres 14", "--title", "Billing database")
    done = cli(
        "remember",
        "Billing moved to Postgres 16",
        "--title",
        "Billing database 16",
        "--supersedes",
        "Billing database",
    )
    assert "supersedes inbox/billing-database.md" in done.stdout
    assert cli("get", "Redis for caching").stdout.startswith("---")  # a title, unindexed


def test_every_request_refuses_text_no_note_can_hold(indexed: Path) -> None:
    """One rule, in the request values every door builds (and the name lookup every door's
    note names go through): a NUL, or half a surrogate pair, is a RequestError naming the
    field. No door has a copy of it."""
    from vaultmem.agent.surface import SurfaceRequest
    from vaultmem.timeline import TimelineRequest

    nul, half = "a\x00b", "a\udcffb"  # \udcff: how a command line's byte 0xff arrives
    refused = [
        (lambda t: SearchRequest(t), "query"),
        (lambda t: SearchRequest("redis", intent=t), "intent"),
        (lambda t: Filters(tag=t), "tag"),
        (lambda t: SearchRequest("redis", filters=Filters(folder=t)), "folder"),
        (lambda t: RememberRequest(t), "text"),
        (lambda t: RememberRequest("x", title=t), "title"),
        (lambda t: RememberRequest("x", tags=("ok", t)), "tags"),
        (lambda t: RememberRequest("x", supersedes=t), "supersedes"),
        (lambda t: TimelineRequest(since=t), "since"),
        (lambda t: TimelineRequest("Redis for caching", around=t), "around"),
        (lambda t: SurfaceRequest(t), "prompt"),
        (lambda t: SurfaceRequest("why redis", session=t), "session"),
    ]
    vault = api.OpenVault(build(indexed, {}))
    refused += [
        (lambda t: api.get(vault, t), "note name"),
        (lambda t: api.links(vault, t), "note name"),
        (lambda t: api.reinforce(vault, ["Redis for caching", t], now=NOW), "note name"),
        (lambda t: api.change(vault, "pin", [t], now=NOW), "note name"),
        (lambda t: api.reinforce(vault, ["Redis for caching"], now=NOW, context_tags=[t]), "tags"),
    ]
    for make, field in refused:
        with pytest.raises(RequestError) as caught:
            make(nul)
        assert str(caught.value) == f"{field}: a NUL character in 'a\\x00b'"
        with pytest.raises(RequestError) as caught:
            make(half)
        assert str(caught.value) == f"{field}: not valid Unicode: 'a\\udcffb'"
    assert "use_count" not in (indexed / "decisions" / "Redis for caching.md").read_text()


def test_a_query_with_no_letter_or_digit_finds_nothing_in_any_mode(
    embedded_example: Path, tmp_path: Path, vectors_on: None
) -> None:
    """Searched anyway, such a query's embedding ranked every note, and hybrid fusion
    scored the nearest 1.0 (an MCP search of two NULs did so)."""
    copy_indexed(embedded_example, tmp_path / "vault")
    vault = api.OpenVault(build(tmp_path / "vault", {}), warm=True)
    for text in ("!!!", "\x01\x02", " -- ? ", "…"):
        for mode in ("keyword", "semantic", "hybrid"):
            assert _paths(vault, text, mode) == [], (text, mode)
    assert _paths(vault, "redis", "hybrid") and _paths(vault, "Redis?", "semantic")
