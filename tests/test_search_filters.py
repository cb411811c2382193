"""Search filters (issue 22): several collections, a date window, and the stale-index hint.

`search`, `vsearch` and `query` take `--collection` more than once (or `a,b`: a note in
any of them) and `--since`/`--until` (a note's `created`, else its file's mtime, or its
`last_used`, in the window); MCP and REST take the same fields through the same request
model, and the CLI's warm path forwards them to a running server. After a search, one
stderr line says when notes changed since the last `index`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from conftest import EXAMPLE_VAULT, Cli, run_vaultmem
from mcp import Client
from test_mcp import _data, _session, _text
from test_rest import TOKEN, Server, _error, _index, _ok

from tests.conftest import copy_indexed

COLLECTIONS = '[collections.work]\npath = "projects"\n[collections.choices]\npath = "decisions"\n'
WINDOW = ("--since", "2026-10-20", "--until", "2026-10-31")
IN_WINDOW = (datetime(2026, 10, 20, tzinfo=UTC), datetime(2026, 11, 1, tzinfo=UTC))
HINT = "vaultmem: notes changed since the last index"


def _collected(vault: Path) -> Path:
    """``vault`` with two collections configured (projects/ and decisions/), indexed."""
    (vault / ".vaultmem.toml").write_text(COLLECTIONS, encoding="utf-8")
    done = run_vaultmem(vault, "index", "-q")
    assert done.returncode == 0, done.stderr
    return vault


def _embedded_collected(embedded: Path, tmp_path: Path) -> Path:
    """A private copy of the embedded example vault, with the two collections."""
    vault = tmp_path / "vault"
    copy_indexed(embedded, vault)
    (vault / ".vaultmem.toml").write_text(COLLECTIONS, encoding="utf-8")
    return vault


@pytest.fixture
def collected(vault: Path) -> Cli:
    """A CLI runner over an indexed temp copy of example-vault with two collections."""
    return Cli(_collected(vault))


def _paths(cli: Cli, *args: str) -> list[str]:
    return [hit["path"] for hit in cli.json_lines(*args)]


def _created(vault: Path, path: str) -> datetime | None:
    """A note's ``created`` as its file says (the example vault's notes write it bare)."""
    found = re.search(r"^created: (\S+)$", (vault / path).read_text("utf-8"), re.M)
    if found is None:
        return None
    when = datetime.fromisoformat(found.group(1).replace("Z", "+00:00"))
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)


# ----------------------------------------------------------------------------- collections


def test_collections_repeated_or_comma_separated_are_a_union(collected: Cli) -> None:
    one = _paths(collected, "search", "rollout", "--collection", "work", "-n", "50")
    other = _paths(collected, "search", "rollout", "--collection", "choices", "-n", "50")
    assert one and other
    assert all(p.startswith("projects/") for p in one)
    assert all(p.startswith("decisions/") for p in other)
    repeated = _paths(
        collected,
        "search",
        "rollout",
        "--collection",
        "work",
        "--collection",
        "choices",
        "-n",
        "50",
    )
    assert sorted(repeated) == sorted(one + other)  # not the last one alone
    assert _paths(collected, "search", "rollout", "--collection", "work,choices", "-n", "50") == (
        repeated
    )
    # A limit is filled from the union, not cut from one collection's hits.
    two = _paths(collected, "search", "rollout", "--collection", "choices,work", "-n", "2")
    assert two == repeated[:2]
    unknown = collected("search", "rollout", "--collection", "work,nope", ok=False)
    assert unknown.exit_code == 1
    assert unknown.stderr.strip() == (
        "vaultmem: error: unknown collection 'nope' (known: work, choices)"
    )


def test_query_keeps_to_the_collections(collected: Cli) -> None:
    """The hybrid pipeline (keyword lists here: no embedder) filters every list."""
    hits = _paths(collected, "query", "rollout", "--collection", "work", "--collection", "choices")
    assert hits and all(p.startswith(("projects/", "decisions/")) for p in hits)
    assert {p.split("/")[0] for p in hits} == {"projects", "decisions"}


# ----------------------------------------------------------------------------- dates


def test_a_date_window_keeps_notes_created_or_used_in_it(
    collected: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    vault = collected.vault
    everything = _paths(collected, "search", "rollout", "-n", "50")
    inside = _paths(collected, "search", "rollout", *WINDOW, "-n", "50")
    assert inside and len(inside) < len(everything)
    for path in inside:
        created = _created(vault, path)
        assert created is not None and IN_WINDOW[0] <= created < IN_WINDOW[1], path
    outside = [p for p in everything if p not in inside]
    assert "Harbor.md" in outside  # created 2026-09-28
    # Used in the window: `touch` sets last_used, and the note is in it now.
    monkeypatch.setenv("VAULTMEM_NOW", "2026-10-25T12:00:00Z")
    collected("touch", "Harbor")
    assert "Harbor.md" in _paths(collected, "search", "rollout", *WINDOW, "-n", "50")
    # The same window in durations back from the clock (a bare `until` date includes
    # its day: 2026-10-31 reaches to the midnight after it; no note is of its last hour).
    monkeypatch.setenv("VAULTMEM_NOW", "2026-11-01T00:00:00Z")
    relative = _paths(collected, "search", "rollout", "--since", "12d", "--until", "1h", "-n", "50")
    assert sorted(relative) == sorted(_paths(collected, "search", "rollout", *WINDOW, "-n", "50"))
    # In every search mode the request model has: `query` (keyword lists, no embedder).
    asked = _paths(collected, "query", "rollout", *WINDOW)
    assert asked and set(asked) <= set(relative)


def test_a_note_without_created_counts_its_mtime(collected: Cli) -> None:
    """The spec's `created` default: first seen, which is the file's mtime."""
    kubectl = "reference/Useful kubectl commands.md"
    assert _created(collected.vault, kubectl) is None
    with (collected.vault / kubectl).open("a", encoding="utf-8") as note:
        note.write("\nSee also `kubectl rollout undo`.\n")
    seen = datetime(2026, 11, 5, 12, tzinfo=UTC).timestamp()
    os.utime(collected.vault / kubectl, (seen, seen))
    collected("index", "-q")
    found = _paths(collected, "search", "kubectl", "--since", "2026-11-05", "--until", "2026-11-05")
    assert found == [kubectl]
    earlier = _paths(collected, "search", "kubectl", "--until", "2026-11-04")
    assert earlier and kubectl not in earlier


def test_dates_are_read_under_a_key_prefix(vault: Path) -> None:
    """With `[keys] prefix = "vm_"`, `vm_created` is vaultmem's and a bare `created` the
    user's own, which no window reads."""
    (vault / ".vaultmem.toml").write_text('[keys]\nprefix = "vm_"\n', encoding="utf-8")
    (vault / "inbox" / "ours.md").write_text(
        "---\nvm_created: 2026-10-25\ncreated: 2020-01-01\n---\n# Ours\nOcelot notes.\n", "utf-8"
    )
    (vault / "inbox" / "theirs.md").write_text(
        "---\ncreated: 2026-10-25\n---\n# Theirs\nOcelot notes too.\n", "utf-8"
    )
    cli = Cli(vault)
    cli("index", "-q")
    assert sorted(_paths(cli, "search", "ocelot")) == ["inbox/ours.md", "inbox/theirs.md"]
    assert _paths(cli, "search", "ocelot", *WINDOW) == ["inbox/ours.md"]
    assert _paths(cli, "search", "ocelot", "--until", "2021-01-01") == []


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("--since", "soon"), "since: invalid date 'soon': expected an ISO date"),
        (("--until", "2026"), "until: invalid date '2026'"),
        (("--since", "2026-11-10", "--until", "2026-11-01"), "since (2026-11-10T00:00:00+00:00)"),
    ],
)
def test_a_bad_date_is_one_line_and_a_usage_error(
    collected: Cli, args: tuple[str, ...], said: str
) -> None:
    """As `timeline --since` says it: the request model's RequestError, exit 2."""
    for command in ("search", "query"):
        done = collected(command, "rollout", *args, ok=False)
        assert done.exit_code == 2, done.stderr
        lines = done.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"vaultmem: error: {said}"), lines


# ----------------------------------------------------------------------------- vectors


def test_vsearch_applies_collections_and_dates(
    embedded_example: Path, tmp_path: Path, vectors_on: None
) -> None:
    vault = _embedded_collected(embedded_example, tmp_path)
    cli = Cli(vault)
    wide = _paths(cli, "vsearch", "how we cache and deploy", "-n", "40")
    kept = _paths(
        cli,
        "vsearch",
        "how we cache and deploy",
        "--collection",
        "work,choices",
        *WINDOW,
        "-n",
        "40",
    )
    assert kept and len(kept) < len(wide)
    for path in kept:
        assert path.startswith(("projects/", "decisions/")), path
        created = _created(vault, path)
        assert created is not None and IN_WINDOW[0] <= created < IN_WINDOW[1], path


# ----------------------------------------------------------------------------- stale hint


def test_the_stale_index_hint(collected: Cli) -> None:
    vault = collected.vault
    fresh = collected("search", "rollout")
    assert HINT not in fresh.stderr  # right after `index`
    (vault / "inbox" / "zebra.md").write_text("# Zebra rollout\nStriped.\n", "utf-8")
    stale = collected("search", "zebra")
    assert stale.stdout == "" and stale.stderr.splitlines() == [
        "no results",
        f"{HINT} (inbox/): results may be out of date; run `vaultmem index`",
    ]
    # --json: stdout stays JSON lines, the hint goes to stderr.
    as_json = collected("search", "rollout", "--json")
    assert all(json.loads(line) for line in as_json.stdout.splitlines())
    assert HINT in as_json.stderr
    assert HINT in collected("query", "rollout", "--explain").stderr
    collected("index", "-q")
    assert HINT not in collected("search", "zebra").stderr
    # vaultmem's own writes re-index what they write: no hint after them.
    collected("remember", "The okapi gateway retries twice.", "--title", "Okapi retries")
    collected("touch", "Release process")
    assert HINT not in collected("search", "okapi").stderr
    # An edit in place of a note modified lately (the folder's entries unchanged).
    with (vault / "inbox" / "zebra.md").open("a", encoding="utf-8") as note:
        note.write("Still striped.\n")
    assert f"{HINT} (inbox/zebra.md)" in collected("search", "zebra").stderr
    collected("index", "-q")
    (vault / "inbox" / "zebra.md").unlink()
    assert f"{HINT} (inbox/, inbox/zebra.md)" in collected("search", "zebra").stderr


# ----------------------------------------------------------------------------- REST, warm


@pytest.fixture(scope="module")
def rest(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A REST server (`vaultmem serve`, keyword only) over a copy with two collections."""
    vault = tmp_path_factory.mktemp("filters") / "vault"
    shutil.copytree(EXAMPLE_VAULT, vault, ignore=shutil.ignore_patterns(".vaultmem"))
    (vault / ".vaultmem.toml").write_text(COLLECTIONS, encoding="utf-8")
    home = tmp_path_factory.mktemp("home")
    _index(vault, home)
    running = Server(vault, home, token=TOKEN, vectors=False)
    yield running
    log = running.stop()
    assert "Traceback" not in log, log


def _search(rest: Server, **filters: object) -> httpx.Response:
    body = {"query": "rollout", "limit": 50, "filters": filters}
    return httpx.post(
        rest.url + "/v1/search", json=body, headers={"Authorization": f"Bearer {TOKEN}"}
    )


def test_rest_takes_a_list_of_collections_and_a_window(rest: Server) -> None:
    def paths(**filters: object) -> list[str]:
        return [hit["path"] for hit in _ok(_search(rest, **filters))["hits"]]

    work = paths(collection="work")  # one name, as before
    assert work and all(p.startswith("projects/") for p in work)
    both = paths(collection=["work", "choices"])
    assert {p.split("/")[0] for p in both} == {"projects", "decisions"}
    assert paths(collection="work,choices") == both
    window = paths(since="2026-10-20", until="2026-10-31")
    assert window and "Harbor.md" not in window and len(window) < len(paths())
    for path in window:
        created = _created(rest.vault, path)
        assert created is not None and IN_WINDOW[0] <= created < IN_WINDOW[1], path
    assert _error(_search(rest, since="soon"), 422).startswith("since: invalid date 'soon'")
    assert _error(_search(rest, collection=["work", 3]), 422)


def _forwarded(rest: Server) -> int:
    """How many forwarded commands the server has logged (one line each)."""
    return sum(" forwarded " in line for line in rest.log.read_text("utf-8").splitlines())


def test_the_warm_path_forwards_the_new_flags(rest: Server) -> None:
    """The CLI hands `search` to the running server: every new flag, and the clock, go
    with it, and the answer (the hint on stderr too) is the in-process one."""
    args = ("search", "rollout", "--collection", "work", "--collection", "choices")
    args += ("--since", "3w", "--until", "2026-10-31", "--json", "-n", "50")
    env = {k: v for k, v in os.environ.items() if not k.startswith("VAULTMEM_")}
    env |= {"HOME": os.environ["HOME"], "VAULTMEM_EMBEDDER": "none"}
    env["VAULTMEM_NOW"] = "2026-11-10T00:00:00Z"
    (rest.vault / "inbox" / "zebra.md").write_text("# Zebra\nStriped.\n", "utf-8")
    try:
        before = _forwarded(rest)
        warm = run_vaultmem(rest.vault, *args, env=env)
        assert _forwarded(rest) == before + 1, "not forwarded"
        cold = run_vaultmem(rest.vault, *args, env={**env, "VAULTMEM_NO_SERVER": "1"})
    finally:
        (rest.vault / "inbox" / "zebra.md").unlink()
    assert warm.returncode == cold.returncode == 0, warm.stderr
    hits = [json.loads(line)["path"] for line in warm.stdout.splitlines()]
    assert hits == [json.loads(line)["path"] for line in cold.stdout.splitlines()]
    assert hits and all(p.startswith(("projects/", "decisions/")) for p in hits)
    for path in hits:  # 3w before 2026-11-10 is 2026-10-20
        created = _created(rest.vault, path)
        assert created is not None and IN_WINDOW[0] <= created < IN_WINDOW[1], path
    assert f"{HINT} (inbox/)" in warm.stderr and warm.stderr == cold.stderr


# ----------------------------------------------------------------------------- MCP


def test_mcp_search_takes_collections_and_a_window(vault: Path) -> None:
    _collected(vault)

    async def body(client: Client) -> None:
        async def paths(**arguments: object) -> list[str]:
            asked = {"query": "rollout", "limit": 50, **arguments}
            return [hit["path"] for hit in _data(await client.call_tool("search", asked))["hits"]]

        both = await paths(collection=["work", "choices"])
        assert {p.split("/")[0] for p in both} == {"projects", "decisions"}
        assert await paths(collection="work,choices") == both
        work = await paths(collection="work")
        assert work and all(p.startswith("projects/") for p in work)
        # The server's clock is the CLI's (VAULTMEM_NOW): 12d back is 2026-10-20.
        window = await paths(since="12d", until="2026-10-31")
        assert window and len(window) < len(await paths())
        for path in window:
            created = _created(vault, path)
            assert created is not None and IN_WINDOW[0] <= created < IN_WINDOW[1], path
        bad = await client.call_tool("search", {"query": "rollout", "until": "later"})
        assert bad.is_error and _text(bad).startswith("until: invalid date 'later'")

    _session(vault, body, VAULTMEM_NOW="2026-11-01T00:00:00Z")


def test_mcp_similar_takes_collections_and_a_window(
    embedded_example: Path, tmp_path: Path, vectors_on: None
) -> None:
    vault = _embedded_collected(embedded_example, tmp_path)
    note = "decisions/Redis for caching.md"

    async def body(client: Client) -> None:
        async def paths(**arguments: object) -> list[str]:
            asked = {"note": note, "limit": 40, **arguments}
            return [hit["path"] for hit in _data(await client.call_tool("similar", asked))["hits"]]

        wide = await paths()
        work = await paths(collection="work")
        assert work and len(work) < len(wide)
        assert all(p.startswith("projects/") for p in work)
        both = await paths(collection=["work", "choices"])
        assert {p.split("/")[0] for p in both} == {"projects", "decisions"}
        window = await paths(since="12d", until="2026-10-31")
        assert window and len(window) < len(wide)
        for path in window:
            created = _created(vault, path)
            assert created is not None and IN_WINDOW[0] <= created < IN_WINDOW[1], path
        bad = await client.call_tool("similar", {"note": note, "since": "soon"})
        assert bad.is_error and _text(bad).startswith("since: invalid date 'soon'")

    _session(vault, body, VAULTMEM_NOW="2026-11-01T00:00:00Z")
