"""The REST API's OpenAPI document tells the truth (issue 17, item 11).

`vaultmem serve` runs as a process on 127.0.0.1 over an embedded copy of example-vault,
with a token. schemathesis (its CLI, every check) fuzzes it from /openapi.json and must
find nothing; the document must say what the server does about auth, statuses and bodies.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import copy_indexed
from tests.local_server import free_port, running

pytestmark = pytest.mark.slow  # fuzzes the REST API from its schema (schemathesis)

TOKEN = "openapi-test-token-0123"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
CONFIG = Path(__file__).parent / "data" / "schemathesis.toml"
EXAMPLES = 30  # per operation and phase: about 1,500 requests, 15-25 s on 2 cores
SEED = 17  # one run is the same run; `st run --seed N` tries another
PUBLIC = {"/v1/health"}


@pytest.fixture(scope="module")
def served(embedded_example: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`vaultmem serve` with a token over a copy of the embedded example vault; its URL.
    Nothing it answers may have left a traceback in its log."""
    vault = tmp_path_factory.mktemp("openapi") / "vault"
    copy_indexed(embedded_example, vault)
    home = tmp_path_factory.mktemp("home")
    env = {k: v for k, v in os.environ.items() if not k.startswith("VAULTMEM_")}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"))
    env.update(VAULTMEM_SERVE_TOKEN=TOKEN, VAULTMEM_LOCK_TIMEOUT="0.2")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = vault.parent / "server.log"
    command = [sys.executable, "-m", "vaultmem", "--vault", str(vault), "serve"]
    with running(
        "vaultmem serve",
        [*command, "--port", str(port)],
        url + "/v1/health",
        lambda answer: answer == {"status": "ok"},
        log_path=log,
        timeout=60,
        env=env,
    ):
        yield url
    assert "Traceback" not in log.read_text(), log.read_text()


def _schema(url: str) -> dict[str, Any]:
    schema: dict[str, Any] = httpx.get(url + "/openapi.json").json()
    return schema


def _operations(schema: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, methods in schema["paths"].items():
        for method, operation in methods.items():
            yield method.upper(), path, operation


def test_schemathesis_with_every_check_finds_nothing(served: str, tmp_path: Path) -> None:
    """Every check of `st run --checks all` (server errors, status codes, content types,
    headers, response schemas, valid data accepted, invalid data refused, auth ignored,
    methods, ...) over the examples, coverage, fuzzing and stateful phases: no failure,
    every operation tested, auth declared where the server needs it."""
    report = tmp_path / "report"
    command = [
        *(sys.executable, "-m", "schemathesis.cli", "--config-file", str(CONFIG), "--no-color"),
        *("run", served + "/openapi.json", "--checks", "all", "--workers", "1"),
        *("--max-examples", str(EXAMPLES), "--seed", str(SEED)),
        *("-H", f"Authorization: Bearer {TOKEN}"),
        *("--report", "json", "--report-dir", str(report), "--generation-database", "none"),
    ]
    # In tmp_path: schemathesis keeps a crash cache in its working folder.
    done = subprocess.run(
        command, cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stdout[-30_000:] + done.stderr[-5_000:]
    (found,) = report.glob("*.json")
    run = json.loads(found.read_text())
    assert run["complete"] and run["failures"] == [] and run["errors"] == []
    assert run["test_cases"]["with_failures"] == 0 and run["test_cases"]["generated"] > 500
    operations = len(list(_operations(_schema(served))))
    assert run["operations"]["tested"] == run["operations"]["total"] == operations >= 17
    assert {name: phase["status"] for name, phase in run["phases"].items()} == {
        "examples": "skip",  # the document gives no examples
        "coverage": "success",
        "fuzzing": "success",
        "stateful": "success",
    }
    assert run["warnings"]["missing_auth"] == [] and run["warnings"]["unused_openapi_auth"] == []


def test_auth_and_every_status_are_documented_from_the_tables(served: str) -> None:
    from vaultmem.servers.schema import STATUS

    schema = _schema(served)
    assert schema["components"]["securitySchemes"] == {
        "HTTPBearer": {"type": "http", "scheme": "bearer"}
    }
    assert "HTTPValidationError" not in schema["components"]["schemas"]  # FastAPI's, not ours
    statuses = {str(code) for _, code, _ in STATUS}
    for method, path, operation in _operations(schema):
        answers = operation["responses"]
        assert {"403", "413", "421"} <= set(answers), (method, path)  # the guard's
        if path in PUBLIC:
            assert "security" not in operation and "401" not in answers
        else:
            assert operation["security"] == [{"HTTPBearer": []}], (method, path)
            assert answers["401"]["headers"]["WWW-Authenticate"]["required"]
        assert set(answers) - {"200", "401", "403", "413", "421"} <= statuses
        for code, answer in answers.items():
            if code != "200":
                body = answer["content"]["application/json"]["schema"]
                assert body == {"$ref": "#/components/schemas/ErrorBody"}, (method, path, code)
        if "503" in answers:
            assert answers["503"]["headers"]["Retry-After"]["required"]
    pin = schema["paths"]["/v1/pin"]["post"]["responses"]
    assert set(pin) == {"200", "401", "403", "404", "409", "413", "421", "422", "503"}
    search = schema["paths"]["/v1/search"]["post"]["responses"]
    assert "404" not in search and {"409", "422", "502", "503"} <= set(search)


def test_a_server_without_a_token_declares_no_auth(tmp_path: Path) -> None:
    from vaultmem.api import OpenVault
    from vaultmem.config import build
    from vaultmem.servers.rest import rest_app

    vault = OpenVault(build(tmp_path, {}))
    for token, secured in ((None, False), ("s3cret", True)):
        guard = rest_app(vault, token=token, allowed_hosts=["127.0.0.1:1"])
        schema = guard.app.openapi()
        status = schema["paths"]["/v1/status"]["get"]
        assert ("security" in status, "401" in status["responses"]) == (secured, secured)
        assert ("securitySchemes" in schema.get("components", {})) == secured


# What a client may send as a body, and the one line the 422 says.
JSON = {"Content-Type": "application/json"}
BODIES: list[tuple[bytes, dict[str, str], str]] = [
    (b'{"query": ', JSON, "the body is not valid JSON: Expecting value"),
    (b'{"query": "\xff"}', JSON, "the body is not valid JSON: not UTF-8 (invalid start byte)"),
    (b"[" * 100_000 + b"]" * 100_000, JSON, "the body is not valid JSON: nested too deeply"),
    (b'["redis"]', JSON, "the body must be a JSON object, not array"),
    (b"null", JSON, "the body must be a JSON object, not null"),
    (b'"redis"', JSON, "the body must be a JSON object, not string"),
    (b"", JSON, "the body is empty: send a JSON object"),
    (b'{"query": 5}', JSON, "query: Input should be a valid string"),
    (b'{"query": "x", "tag": "ops"}', JSON, "tag: Extra inputs are not permitted"),
    (b'{"query": "x"}', {"Content-Type": "text/plain"}, "send a JSON object with Content-Type"),
    (b"query=x", {"Content-Type": "application/x-www-form-urlencoded"}, "send a JSON object"),
    (b"", {}, "send a JSON object with Content-Type: application/json"),
]


def test_a_body_that_is_no_json_object_is_a_422_saying_so(served: str) -> None:
    """README: bodies are JSON objects, an invalid request is a 422 whose ``error`` is one
    line. Whatever the body is, that is the answer: never a 400, a 500 or pydantic's words
    for the body as a whole ("request: Field required")."""
    for content, headers, message in BODIES:
        answer = httpx.post(served + "/v1/search", content=content, headers={**AUTH, **headers})
        case = (content[:40], headers, answer.text)
        assert answer.status_code == 422, case
        assert answer.headers["content-type"] == "application/json", case
        assert list(answer.json()) == ["error"] and answer.json()["error"].startswith(message), case
