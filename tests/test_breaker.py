"""A dead endpoint costs one failed connection, not a round of retries (issue 32 item 7).

A refused connection or a host name that does not resolve is never retried: the
endpoint's breaker opens (for the life of a one-shot command, 60 s in a server) and
every later call to it fails at once, so a `query` whose LLM (expansion and reranking)
is down says so in one line. The endpoints here are real closed ports on 127.0.0.1; the
latency this saves is measured by benchmarks/bench_dead_endpoint.py, not here.
"""

from __future__ import annotations

import socket
import time

import httpx
import pytest
from conftest import Cli

from vaultmem.errors import EndpointError
from vaultmem.inference.http import (
    Breakers,
    EndpointDown,
    breaker_key,
    translate_httpx_error,
)
from vaultmem.inference.llm import LLMClient, LLMConfig
from vaultmem.inference.rerank import EndpointReranker, RerankConfig


@pytest.fixture
def closed_port() -> int:
    """A localhost port nothing listens on (bound, then released: refused until reused)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_a_refused_connection_is_not_retried_and_opens_the_breaker(closed_port: int) -> None:
    url = f"http://127.0.0.1:{closed_port}"
    llm = LLMClient(LLMConfig(url=url, model="m", max_retries=5, backoff_base=5.0))
    with pytest.raises(EndpointDown) as first:
        llm.chat([{"role": "user", "content": "hi"}])
    assert str(first.value) == f"llm endpoint {url}/v1: connection refused"  # no "(6 attempts)"
    assert first.value.endpoint == breaker_key(url) == f"http://127.0.0.1:{closed_port}"
    # Every later call to that host and port fails without a request, whatever the role.
    reranker = EndpointReranker(RerankConfig(url=url, model="r", max_retries=5))
    with pytest.raises(EndpointDown) as again:
        reranker.rerank("q", ["a", "b"])
    assert "connection refused (not tried again by this command)" in str(again.value)
    assert isinstance(again.value, EndpointError)  # every caller's handling still holds


def test_a_host_name_that_does_not_resolve_is_unreachable() -> None:
    import socket as sk

    lookup = httpx.ConnectError("[Errno -2] Name or service not known")
    lookup.__cause__ = sk.gaierror(-2, "Name or service not known")
    failure = translate_httpx_error(lookup, 5.0)
    assert (failure.reason, failure.unreachable, failure.retryable) == (
        "host name not found",
        True,
        False,
    )
    connect = translate_httpx_error(httpx.ConnectTimeout("timed out"), 5.0)
    assert connect.unreachable and not connect.retryable
    # A slow answer is not a dead endpoint: still retried.
    slow = translate_httpx_error(httpx.ReadTimeout("timed out"), 5.0)
    assert slow.retryable and not slow.unreachable


def test_a_servers_breaker_closes_after_its_window() -> None:
    breakers = Breakers(window=0.05)
    breakers.trip("http://127.0.0.1:9", "connection refused")
    assert breakers.open_reason("http://127.0.0.1:9") == "connection refused"
    assert breakers.open_reason("http://127.0.0.1:10") is None
    assert breakers.told() == "not tried again for 0.05 s"
    time.sleep(0.1)
    assert breakers.open_reason("http://127.0.0.1:9") is None  # tried again after it


def test_query_with_a_dead_llm_says_one_line(
    cli: Cli, closed_port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    cli("index")
    url = f"http://127.0.0.1:{closed_port}"
    monkeypatch.setenv("VAULTMEM_LLM_URL", url)
    monkeypatch.setenv("VAULTMEM_LLM_MODEL", "m")
    done = cli("query", "why did we pick redis for caching", "--expand", "-n", "3")
    assert "decisions/Redis for caching.md" in done.stdout
    lines = done.stderr.splitlines()
    assert lines == [
        f"vaultmem: expansion, rerank skipped: llm endpoint {url}/v1: connection refused"
    ]


def test_the_first_call_probes_one_connection_unless_a_proxy_stands_between(
    closed_port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    from vaultmem.inference.http import probe

    url = f"http://127.0.0.1:{closed_port}"
    assert probe(url) == "connection refused"
    with socket.socket() as live:
        live.bind(("127.0.0.1", 0))
        live.listen()
        assert probe(f"http://127.0.0.1:{live.getsockname()[1]}/v1") is None
    # Through a proxy the client never connects to the host itself: nothing to judge.
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{closed_port}")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    assert probe(url) is None
