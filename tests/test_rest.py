"""The REST API (`vaultmem.servers.rest`) as a client meets it: `vaultmem serve` (uvicorn)
as a process on a free port, driven with httpx. (tests/test_openapi.py fuzzes it from its
own OpenAPI document with schemathesis.)"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from conftest import EXAMPLE_VAULT

from tests.conftest import copy_indexed

TOKEN = "test-token-0123456789"
JSON_TYPE = {"Content-Type": "application/json"}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Server:
    """A running REST server over ``vault``: its base URL and its process."""

    def __init__(
        self, vault: Path, home: Path, *, token: str | None, vectors: bool, **extra: str
    ) -> None:
        self.vault = vault
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {k: v for k, v in os.environ.items() if not k.startswith("VAULTMEM_")}
        env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"))
        if not vectors:
            env["VAULTMEM_EMBEDDER"] = "none"
        env.update(extra)
        if token:
            env["VAULTMEM_SERVE_TOKEN"] = token  # as a user would keep it out of `ps`
        args = [sys.executable, "-m", "vaultmem", "--vault", str(vault), "serve"]
        self.log = vault.parent / "server.log"  # a file: a full pipe would stall the server
        with self.log.open("w") as log:
            self.process = subprocess.Popen([*args, "--port", str(self.port)], env=env, stderr=log)
        self._wait()

    def _wait(self) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"server exited: {self.log.read_text()}")
            try:
                if httpx.get(self.url + "/v1/health", timeout=1).status_code == 200:
                    return
            except httpx.TransportError:
                time.sleep(0.1)
        raise AssertionError("server did not start in 60 s")

    def stop(self) -> str:
        """Stop it (SIGTERM) and return what it logged."""
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        return self.log.read_text()


def _index(vault: Path, home: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("VAULTMEM_")}
    env.update(HOME=str(home), VAULTMEM_EMBEDDER="none")
    subprocess.run(
        [sys.executable, "-m", "vaultmem", "--vault", str(vault), "index"],
        env=env,
        check=True,
        capture_output=True,
    )


@pytest.fixture(scope="module")
def server(embedded_example: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A token-protected server over an embedded copy of example-vault (vectors on)."""
    vault = tmp_path_factory.mktemp("rest") / "vault"
    copy_indexed(embedded_example, vault)
    running = Server(vault, tmp_path_factory.mktemp("home"), token=TOKEN, vectors=True)
    yield running
    running.stop()


@pytest.fixture(scope="module")
def client(server: Server) -> Iterator[httpx.Client]:
    """A keep-alive client that sends the token."""
    headers = {"Authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=server.url, headers=headers, timeout=60) as http:
        yield http


def _ok(response: httpx.Response) -> dict:
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    return response.json()


def _error(response: httpx.Response, status: int) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert list(body) == ["error"] and "Traceback" not in body["error"]
    return body["error"]


# ----------------------------------------------------------------------------- reading


def test_search_every_mode(client: httpx.Client) -> None:
    keyword = _ok(client.post("/v1/search", json={"query": "redis cache", "limit": 3}))
    assert keyword["hits"][0]["path"] == "decisions/Redis for caching.md"
    assert len(keyword["hits"]) == 3 and keyword["skipped"] == []
    semantic = _ok(client.post("/v1/search", json={"query": "caching layer", "mode": "semantic"}))
    assert semantic["hits"] and "line_end" in semantic["hits"][0]
    hybrid = _ok(client.post("/v1/search", json={"query": "why redis", "mode": "hybrid"}))
    assert hybrid["hits"]
    # Each score says what it is: BM25F, a cosine or query's relevance (one response model).
    for answer, kind in ((keyword, "bm25"), (semantic, "cosine"), (hybrid, "relevance")):
        assert {hit["score_kind"] for hit in answer["hits"]} == {kind}
    infra = {"query": "rollout", "filters": {"tag": "infra"}}
    inside = _ok(client.post("/v1/search", json=infra))["hits"]
    anywhere = _ok(client.post("/v1/search", json={"query": "rollout"}))["hits"]
    assert inside and len(inside) < len(anywhere)


def test_search_answers_what_the_cli_prints(client: httpx.Client, server: Server) -> None:
    from conftest import run_vaultmem

    cli = run_vaultmem(server.vault, "search", "rate limiting", "--json", env=_cli_env())
    assert cli.returncode == 0, cli.stderr
    expected = [json.loads(line) for line in cli.stdout.splitlines()]
    hits = _ok(client.post("/v1/search", json={"query": "rate limiting"}))["hits"]
    # The score holds the memory prior, whose recency moves with the clock between the two
    # requests (in its sixth digit); everything else is the same.
    assert [{**h, "score": None} for h in hits] == [{**h, "score": None} for h in expected]
    assert [h["score"] for h in hits] == pytest.approx([h["score"] for h in expected], rel=1e-4)


def _cli_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("VAULTMEM_")}
    env["VAULTMEM_NO_SERVER"] = "1"  # the CLI's own answer, not the server's forwarded
    return env


def test_request_errors_are_the_models_messages(client: httpx.Client) -> None:
    bad_mode = _error(client.post("/v1/search", json={"query": "x", "mode": "fuzzy"}), 422)
    assert bad_mode == "unknown mode 'fuzzy'; one of: keyword, semantic, hybrid"
    assert "limit must be a whole number" in _error(
        client.post("/v1/search", json={"query": "x", "limit": 0}), 422
    )
    assert _error(client.post("/v1/search", json={"limit": 3}), 422).startswith("query:")
    flat = _error(client.post("/v1/search", json={"query": "x", "tag": "ops"}), 422)
    assert flat.startswith("tag:")  # filters go in "filters": {...}; a stray key is no filter
    broken = client.post("/v1/search", content=b"{not json", headers=JSON_TYPE)
    assert _error(broken, 422) == (
        "the body is not valid JSON: Expecting property name enclosed in double quotes"
    )
    form = client.post("/v1/search", content=b'{"query": "x"}', headers={"Content-Type": "text/x"})
    assert _error(form, 422) == "send a JSON object with Content-Type: application/json"


def test_get_a_note_by_path_title_and_lines(client: httpx.Client) -> None:
    by_path = _ok(client.get("/v1/notes/decisions/Redis for caching.md"))
    assert by_path["title"] == "Redis for caching" and by_path["frontmatter"]
    by_title = _ok(client.get("/v1/note", params={"name": "Redis for caching"}))
    assert by_title == by_path
    lines = _ok(client.get("/v1/notes/Redis for caching", params={"start": 1, "end": 2}))
    assert lines["excerpt"].startswith("---\n") and lines["excerpt"].count("\n") == 2
    _error(client.get("/v1/note", params={"name": "Redis for caching", "start": 0}), 422)


def test_note_errors_map_to_statuses(client: httpx.Client) -> None:
    missing = _error(client.get("/v1/notes/no such note"), 404)
    assert "no such note" in missing
    _error(client.get("/v1/note", params={"name": "../../etc/passwd"}), 422)
    _error(client.get("/v1/nowhere"), 404)
    _error(client.delete("/v1/search"), 405)


def test_hostile_input_is_a_client_error(client: httpx.Client) -> None:
    """Found by the fuzzer: each of these was a 500."""
    only_punctuation = _error(client.post("/v1/remember", json={"text": "..."}), 422)
    assert only_punctuation == "nothing to remember: the text is empty"
    half_pair = b'{"text": "a new memory", "tags": ["\\ud800"]}'
    assert "not valid Unicode" in _error(
        client.post("/v1/remember", content=half_pair, headers=JSON_TYPE), 422
    )
    nul = _error(client.post("/v1/remember", json={"text": "a memory", "title": "a\x00b"}), 422)
    assert nul == "title: a NUL character in 'a\\x00b'"  # the request model's line
    too_long = _error(client.get("/v1/note", params={"name": "a" * 5000}), 422)
    assert too_long.endswith("File name too long")


def _post_ascii(client: httpx.Client, path: str, body: dict) -> httpx.Response:
    # JSON can carry half a surrogate pair ("\\udcff"); UTF-8, and so httpx's json=, cannot.
    return client.post(path, content=json.dumps(body).encode(), headers=JSON_TYPE)


def test_text_no_note_can_hold_is_refused_with_the_models_line(
    client: httpx.Client, server: Server
) -> None:
    """The request model's rule and words at every door: REST had its own copy (pydantic's
    "Value error, ..."), MCP had none (tests/test_mcp.py), the CLI's is the model's."""
    nul = "query: a NUL character in '\\x00\\x00'"
    hybrid = {"query": "\x00\x00", "mode": "hybrid"}
    assert _error(_post_ascii(client, "/v1/search", hybrid), 422) == nul
    half = "query: not valid Unicode: '\\udcff'"
    assert _error(_post_ascii(client, "/v1/search", {"query": "\udcff"}), 422) == half
    argv = [sys.executable, "-m", "vaultmem", "--vault", str(server.vault), "search", b"\xff"]
    cli = subprocess.run(argv, capture_output=True, env=_cli_env(), timeout=60, check=False)
    assert (cli.returncode, cli.stderr.decode()) == (2, f"vaultmem: error: {half}\n")
    named = _error(client.get("/v1/notes/Redis%00"), 422)
    assert named == "note name: a NUL character in 'Redis\\x00'"
    notes = {"notes": ["Redis for caching", "\udcff"]}
    assert _error(_post_ascii(client, "/v1/reinforce", notes), 422) == (
        "note name: not valid Unicode: '\\udcff'"
    )
    prompt = _error(_post_ascii(client, "/v1/surface", {"prompt": "why\x00"}), 422)
    assert prompt == "prompt: a NUL character in 'why\\x00'"
    # What is left of a query once nothing in it is a word: nothing to find, in any mode.
    for mode in ("keyword", "semantic", "hybrid"):
        assert _ok(client.post("/v1/search", json={"query": "!?", "mode": mode}))["hits"] == []


def test_numbers_are_json_integers(client: httpx.Client, server: Server) -> None:
    """`true` is no limit of 1 (Python counts a bool as an int; pydantic converted it), "2"
    no number and 2.5 no count; 2.0 is JSON Schema's integer 2. The CLI's flags agree."""
    for field, value in (("limit", True), ("limit", "2"), ("limit", 2.5), ("candidates", True)):
        refused = client.post("/v1/search", json={"query": "redis", field: value})
        assert _error(refused, 422) == f"{field}: Input should be a valid integer"
    two = _ok(client.post("/v1/search", json={"query": "redis", "limit": 2.0}))
    assert len(two["hits"]) == 2
    for path, body in (
        ("/v1/timeline", {"note": "Redis for caching", "limit": True}),
        ("/v1/similar", {"name": "Redis for caching", "limit": True}),
        ("/v1/surface", {"prompt": "why redis", "budget": False}),
        ("/v1/search", {"query": "redis", "prior": 0}),
    ):
        assert _error(client.post(path, json=body), 422).split(":")[0] in body, (path, body)
    from conftest import run_vaultmem

    cli = run_vaultmem(server.vault, "search", "redis", "-n", "true", env=_cli_env())
    assert cli.returncode == 2 and "'true' is not a valid integer" in cli.stderr


def test_links_similar_surface_status(client: httpx.Client) -> None:
    links = _ok(client.get("/v1/links", params={"name": "Redis for caching"}))
    assert links["path"] == "decisions/Redis for caching.md" and "backlinks" in links
    similar = _ok(client.post("/v1/similar", json={"name": "Redis for caching", "limit": 3}))
    assert len(similar["hits"]) == 3
    assert all(h["path"] != "decisions/Redis for caching.md" for h in similar["hits"])
    surfaced = _ok(
        client.post("/v1/surface", json={"prompt": "why did we move sessions to redis?"})
    )
    assert "<vault-context>" in surfaced["context"] and surfaced["notes"]
    status = _ok(client.get("/v1/status"))
    assert status["notes"] >= 50
    told = _ok(client.post("/v1/timeline", json={"note": "Redis for caching", "limit": 3}))
    assert told["note"] == "decisions/Redis for caching.md" and len(told["events"]) == 3
    whens = [e["when"] for e in told["events"]]
    assert whens == sorted(whens)
    newest = _ok(client.post("/v1/timeline", json={"since": "3650d", "newest_first": True}))
    whens = [e["when"] for e in newest["events"]]
    assert whens == sorted(whens, reverse=True) and len(whens) > 3
    assert _error(client.post("/v1/timeline", json={}), 422) == "give a note, or since and/or until"
    assert _error(client.post("/v1/timeline", json={"until": "2026-13-45"}), 422).startswith(
        "until: invalid date"
    )
    assert _error(client.post("/v1/timeline", json={"note": "x", "limit": 0}), 422).startswith(
        "limit must be"
    )


# ----------------------------------------------------------------------------- writing


def test_remember_reinforce_and_flags(client: httpx.Client) -> None:
    made = _ok(
        client.post(
            "/v1/remember",
            json={
                "text": "The REST API answers JSON errors.",
                "type": "observation",
                "tags": ["api", "#rest"],
                "title": "REST errors",
            },
        )
    )
    assert made["created"] and made["path"].endswith(".md")
    found = _ok(client.post("/v1/search", json={"query": "REST API answers JSON errors"}))
    assert found["hits"][0]["path"] == made["path"]
    again = _ok(client.post("/v1/remember", json={"text": "The REST API answers JSON errors."}))
    assert not again["created"] and again["duplicate_of"] == made["path"]

    touched = _ok(client.post("/v1/reinforce", json={"notes": [made["path"]]}))["notes"][0]
    assert touched["use_count"] == touched["use_count_before"] + 1
    observed = _ok(client.post("/v1/reinforce", json={"notes": ["REST errors"], "tags": "ops"}))
    assert observed["notes"][0]["path"] == made["path"]

    for action in ("pin", "unpin", "forget", "restore"):
        done = _ok(client.post(f"/v1/{action}", json={"notes": [made["path"]]}))["notes"]
        assert done[0]["action"] == action and done[0]["changed"], done
    snoozed = _ok(client.post("/v1/snooze", json={"notes": ["REST errors"], "for": "30d"}))
    assert snoozed["notes"][0]["after"]
    _ok(client.post("/v1/unsnooze", json={"notes": ["REST errors"]}))
    bad = _error(client.post("/v1/pin", json={"notes": ["REST errors"], "for": "3d"}), 422)
    assert bad == "for: Extra inputs are not permitted"  # only snooze's body has until/for
    assert _error(client.post("/v1/remember", json={"text": "  "}), 422).startswith("nothing")


# ----------------------------------------------------------------------------- security


def test_token_is_required_and_checked(server: Server) -> None:
    body = {"query": "redis"}
    missing = httpx.post(server.url + "/v1/search", json=body)
    assert _error(missing, 401) == "a bearer token is required"
    assert missing.headers["www-authenticate"].startswith("Bearer")
    wrong = httpx.post(
        server.url + "/v1/search", json=body, headers={"Authorization": "Bearer nope"}
    )
    assert _error(wrong, 401) == "the bearer token is wrong"
    basic = httpx.get(server.url + "/v1/status", headers={"Authorization": f"Basic {TOKEN}"})
    _error(basic, 401)
    assert httpx.get(server.url + "/v1/health").json() == {"status": "ok"}  # nothing else


def test_rebinding_host_and_cross_origin_are_refused(client: httpx.Client) -> None:
    _error(client.get("/v1/status", headers={"Host": "evil.example"}), 421)
    _error(client.get("/v1/health", headers={"Host": "evil.example:80"}), 421)
    _ok(client.get("/v1/status", headers={"Host": f"localhost:{client.base_url.port}"}))
    _error(client.get("/v1/status", headers={"Origin": "http://evil.example"}), 403)
    _error(client.get("/v1/status", headers={"Origin": "null"}), 403)
    same = {"Origin": f"http://127.0.0.1:{client.base_url.port}"}
    _ok(client.get("/v1/status", headers=same))


def test_large_bodies_are_refused_before_parsing(client: httpx.Client) -> None:
    big = b'{"query": "' + b"x" * 2_000_000 + b'"}'
    assert "larger than 1000000 bytes" in _error(client.post("/v1/search", content=big), 413)

    def chunks() -> Iterator[bytes]:  # no Content-Length: counted as it streams
        yield b'{"query": "'
        for _ in range(40):
            yield b"y" * 50_000
        yield b'"}'

    _error(client.post("/v1/search", content=chunks()), 413)
    assert _ok(client.get("/v1/health")) == {"status": "ok"}  # the server is fine


def test_serve_refuses_a_public_address_without_a_token(vault: Path) -> None:
    from conftest import run_vaultmem

    args = ("serve", "--no-auth", "--host", "0.0.0.0", "--port", str(_free_port()))
    refused = run_vaultmem(vault, *args)
    assert refused.returncode == 2
    assert refused.stderr == (
        "vaultmem: error: refusing to bind 0.0.0.0 without a token:"
        " --no-auth is for loopback only\n"
    )


def test_binding_beyond_loopback_needs_a_token() -> None:
    from vaultmem.errors import RequestError
    from vaultmem.servers.rest import check_bind

    with pytest.raises(RequestError, match="refusing to bind 0.0.0.0 without a token"):
        check_bind("0.0.0.0", None)
    with pytest.raises(RequestError):
        check_bind("192.168.1.5", "")
    for host in ("127.0.0.1", "localhost", "::1", "[::1]", "127.0.0.2"):
        check_bind(host, None)
    check_bind("0.0.0.0", "tok")


def test_a_server_answers_for_the_loopback_address_it_is_bound_to() -> None:
    from vaultmem.servers.rest import default_allowed_hosts

    assert "127.0.0.2:8765" in default_allowed_hosts("127.0.0.2", 8765)
    assert default_allowed_hosts("127.0.0.1", 8765).count("127.0.0.1:8765") == 1
    assert "[::1]:8765" in default_allowed_hosts("::1", 8765)


def test_docs_and_schema_are_served(server: Server) -> None:
    schema = httpx.get(server.url + "/openapi.json").json()
    paths = set(schema["paths"])
    assert {"/v1/search", "/v1/remember", "/v1/pin", "/v1/snooze", "/v1/status"} <= paths
    assert "bearer" in str(schema["components"]["securitySchemes"]).lower()
    assert httpx.get(server.url + "/docs").status_code == 200


# ----------------------------------------------------------------------------- a busy vault


@pytest.fixture(scope="module")
def lexical_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A server over a lexical-only copy (no vectors: semantic requests are refused)."""
    vault = tmp_path_factory.mktemp("lexical") / "vault"
    shutil.copytree(EXAMPLE_VAULT, vault, ignore=shutil.ignore_patterns(".vaultmem"))
    home = tmp_path_factory.mktemp("home")
    _index(vault, home)
    running = Server(vault, home, token=TOKEN, vectors=False, VAULTMEM_LOCK_TIMEOUT="0.2")
    yield running
    log = running.stop()
    assert "Traceback" not in log, log


def test_a_busy_vault_is_503_with_retry_after(lexical_server: Server) -> None:
    from vaultmem.vault import vault_lock

    auth = {"Authorization": f"Bearer {TOKEN}"}
    with vault_lock(lexical_server.vault / ".vaultmem", timeout=0, what="test"):
        busy = httpx.post(
            lexical_server.url + "/v1/pin", json={"notes": ["Release process"]}, headers=auth
        )
    assert "test" in _error(busy, 503) and busy.headers["retry-after"] == "1"
    pinned = httpx.post(
        lexical_server.url + "/v1/pin", json={"notes": ["Release process"]}, headers=auth
    )
    assert _ok(pinned)["notes"][0]["changed"]
