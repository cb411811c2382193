"""A running server after `embed` repaired its vector store in another process.

`serve` keeps the vector store open. When the store is damaged under it, a semantic
request answers 409 (the store cannot be read) and `embed`, run by the user in another
process, rebuilds it ("The cache heals itself"). The very next request must answer from
the rebuilt store: the server reopens it, and nothing of the failed open lingers in the
process.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from test_rest import TOKEN, Server

from tests.conftest import copy_indexed

pytestmark = pytest.mark.slow  # a real server whose vector store is damaged and rebuilt

SEMANTIC = {"query": "why did we move sessions to redis", "mode": "semantic", "limit": 5}
HYBRID = {**SEMANTIC, "mode": "hybrid"}
SIMILAR = {"name": "Redis for caching", "limit": 5}


def _garble(chroma: Path) -> None:
    (chroma / "chroma.sqlite3").write_bytes(b"not a database at all " * 2000)


def _delete_database(chroma: Path) -> None:
    (chroma / "chroma.sqlite3").unlink()


DAMAGE: dict[str, Callable[[Path], None]] = {"garbled": _garble, "deleted": _delete_database}


@pytest.fixture
def served(embedded_example: Path, tmp_path: Path) -> Iterator[Server]:
    """`vaultmem serve` (the default in-process MiniLM) over an embedded example vault."""
    vault = tmp_path / "vault"
    copy_indexed(embedded_example, vault)
    server = Server(vault, tmp_path / "home", token=TOKEN, vectors=True)
    try:
        yield server
    finally:
        log = server.stop()
        assert "Traceback" not in log, log


def _embed_elsewhere(server: Server) -> str:
    """`vaultmem embed` as its own process (as a user runs it beside the server)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("VAULTMEM_")}
    env.update(HOME=str(server.vault.parent / "home"), VAULTMEM_NO_SERVER="1")
    done = subprocess.run(
        [sys.executable, "-m", "vaultmem", "--vault", str(server.vault), "embed"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stderr


def _answers(http: httpx.Client) -> dict[str, object]:
    """What the three vector requests answer (status and body), paths and scores only."""
    out: dict[str, object] = {}
    for name, route, body in (
        ("semantic", "/v1/search", SEMANTIC),
        ("hybrid", "/v1/search", HYBRID),
        ("similar", "/v1/similar", SIMILAR),
    ):
        response = http.post(route, json=body)
        got = response.json()
        if response.status_code == 200:
            hits = [(h["path"], round(h["score"], 4)) for h in got["hits"]]
            out[name] = (200, hits, got.get("skipped", []))
        else:
            out[name] = (response.status_code, got)
    return out


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_the_first_request_after_embed_repaired_the_store_answers(
    served: Server, vectors_on: None, damage: str
) -> None:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=served.url, headers=headers, timeout=120) as http:
        clean = _answers(http)
        assert all(answer[0] == 200 for answer in clean.values()), clean  # type: ignore[index]

        DAMAGE[damage](served.vault / ".vaultmem" / "chroma")
        # While the store is damaged, semantic search says so (and hybrid falls back).
        broken = http.post("/v1/search", json=SEMANTIC)
        assert broken.status_code == 409, broken.text
        assert "run `vaultmem embed`" in broken.json()["error"]

        assert "vaultmem: repaired: " in _embed_elsewhere(served)
        # The first request after the repair, and every one after it, answers as before.
        _assert_same_answers(_answers(http), clean)
        _assert_same_answers(_answers(http), clean)


def _assert_same_answers(got: dict[str, Any], want: dict[str, Any]) -> None:
    """Same statuses, same paths in the same order, and scores equal to float noise.

    The rebuilt store holds freshly computed vectors: ONNX batches them differently from
    the first embed, so a cosine can move in its fourth decimal (0.7483 against 0.7484).
    """
    assert got.keys() == want.keys()
    for name, answer in want.items():
        assert got[name][0] == 200, (name, got[name])
        status, hits, skipped = answer
        got_status, got_hits, got_skipped = got[name]
        assert (got_status, got_skipped) == (status, skipped), name
        assert [path for path, _ in got_hits] == [path for path, _ in hits], name
        assert [score for _, score in got_hits] == pytest.approx(
            [score for _, score in hits], abs=2e-3
        ), name
