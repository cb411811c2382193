"""LLMClient, parse_json_reply and the rerankers against the local fake OpenAI server."""

from __future__ import annotations

import json
import logging
import math
import socket

import pytest
from fake_openai_server import FakeOpenAIServer

from vaultmem.errors import EndpointError, VaultmemError
from vaultmem.inference.http import Failure
from vaultmem.inference.llm import (
    JSONReplyError,
    LLMClient,
    LLMConfig,
    parse_json_reply,
    strip_think,
)
from vaultmem.inference.rerank import (
    EndpointReranker,
    LLMReranker,
    RerankConfig,
    Reranker,
    _parse_results,
    keep_top_n,
    logistic,
    rerank_url,
)

SECRET = "sk-vaultmem-TEST-SECRET-0cc175b9c0f1b6a831c3"


def make_llm(url: str, **overrides: object) -> LLMClient:
    """A client with fast backoff so retry tests take milliseconds."""
    params: dict[str, object] = {
        "url": url,
        "model": "fake-chat",
        "api_key": SECRET,
        "backoff_base": 0.01,
        "backoff_max": 0.05,
        "timeout": 5.0,
    }
    params.update(overrides)
    return LLMClient(LLMConfig(**params))  # type: ignore[arg-type]


def make_reranker(url: str, **overrides: object) -> EndpointReranker:
    params: dict[str, object] = {
        "url": url,
        "model": "fake-rerank",
        "api_key": SECRET,
        "backoff_base": 0.01,
        "backoff_max": 0.05,
        "timeout": 5.0,
    }
    params.update(overrides)
    return EndpointReranker(RerankConfig(**params))  # type: ignore[arg-type]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def assert_clean(err: BaseException) -> None:
    """One line, no key, nothing chained that could carry the request headers."""
    for text in (str(err), repr(err), str(err.args)):
        assert SECRET not in text and "TEST-SECRET" not in text
    assert "\n" not in str(err)
    assert err.__cause__ is None and err.__context__ is None


def chat_requests(server: FakeOpenAIServer) -> list[dict]:
    return [r.body for r in server.requests if r.path.endswith("/chat/completions")]


ASK = [{"role": "user", "content": "Reply in JSON please."}]


# -- LLMClient --------------------------------------------------------------------------


def test_chat_returns_scripted_reply_and_sends_json_mode(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.chat_replies.append('{"answer": 42}')
    llm = make_llm(fake_openai.url)
    assert llm.chat(ASK) == '{"answer": 42}'
    (req,) = fake_openai.requests
    assert req.path == "/v1/chat/completions"
    assert req.headers["authorization"] == f"Bearer {SECRET}"
    assert req.body["model"] == "fake-chat"
    assert req.body["messages"] == ASK
    assert req.body["response_format"] == {"type": "json_object"}
    assert req.body["temperature"] == 0
    assert req.body["max_tokens"] == 1024
    assert llm.json_mode_supported is True


def test_chat_without_json_mode_and_custom_budget(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.chat_replies.append("plain words")
    llm = make_llm(fake_openai.base_url)  # a URL with /v1 is used as given
    assert llm.chat(ASK, json_mode=False, max_tokens=50, temperature=0.7) == "plain words"
    (body,) = chat_requests(fake_openai)
    assert "response_format" not in body
    assert body["max_tokens"] == 50 and body["temperature"] == 0.7
    assert llm.json_mode_supported is None


def test_config_json_mode_off_never_sends_it(fake_openai: FakeOpenAIServer) -> None:
    make_llm(fake_openai.url, json_mode=False).chat(ASK)
    assert "response_format" not in chat_requests(fake_openai)[0]


def test_response_format_refused_is_retried_without_and_remembered(
    fake_openai: FakeOpenAIServer,
) -> None:
    fake_openai.fail_next(
        1, status=400, message="'response_format' of type 'json_object' is not supported"
    )
    fake_openai.chat_replies.extend(['{"a": 1}', '{"b": 2}'])
    llm = make_llm(fake_openai.url)
    assert llm.chat(ASK) == '{"a": 1}'
    first, second = chat_requests(fake_openai)
    assert first["response_format"] == {"type": "json_object"}
    assert "response_format" not in second
    assert llm.json_mode_supported is False
    # Remembered: the next call goes straight to plain mode, one request.
    assert llm.chat(ASK) == '{"b": 2}'
    assert len(chat_requests(fake_openai)) == 3
    assert "response_format" not in chat_requests(fake_openai)[2]


def test_other_400_is_not_retried(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.fail_next(1, status=400, message="context length exceeded")
    llm = make_llm(fake_openai.url)
    with pytest.raises(EndpointError, match="HTTP 400: context length exceeded") as info:
        llm.chat(ASK)
    assert len(fake_openai.requests) == 1
    assert llm.json_mode_supported is None
    assert_clean(info.value)


def test_refusal_then_failure_raises_clean_error(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.fail_next(1, status=400, message="response_format unsupported")
    fake_openai.fail_next(1, status=401, message="bad key")
    with pytest.raises(EndpointError, match="check the API key") as info:
        make_llm(fake_openai.url).chat(ASK)
    assert_clean(info.value)


@pytest.mark.parametrize("status", [429, 500, 503])
def test_retries_after_transient_failures(fake_openai: FakeOpenAIServer, status: int) -> None:
    fake_openai.fail_next(2, status=status)
    fake_openai.chat_replies.append("{}")
    assert make_llm(fake_openai.url).chat(ASK) == "{}"
    assert len(fake_openai.requests) == 3


def test_retry_after_mixed_429_then_500(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.fail_next(1, status=429, retry_after=0.05)
    fake_openai.fail_next(1, status=500)
    fake_openai.chat_replies.append('{"ok": true}')
    assert make_llm(fake_openai.url).chat(ASK) == '{"ok": true}'
    assert len(fake_openai.requests) == 3


def test_retries_exhausted_names_url_and_attempts(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.fail_next(3, status=500)
    with pytest.raises(EndpointError) as info:
        make_llm(fake_openai.url, max_retries=2).chat(ASK)
    msg = str(info.value)
    assert msg.startswith(f"llm endpoint {fake_openai.base_url}: HTTP 500")
    assert "(3 attempts)" in msg
    assert isinstance(info.value, VaultmemError)


def test_timeout_names_url_without_key(
    fake_openai: FakeOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)  # openai's and httpx's loggers too
    fake_openai.hang_next(2, seconds=2.0)
    with pytest.raises(EndpointError) as info:
        make_llm(fake_openai.url, timeout=0.2, max_retries=1).chat(ASK)
    msg = str(info.value)
    assert fake_openai.base_url in msg
    assert "timed out after 0.2s" in msg
    assert_clean(info.value)
    assert SECRET not in caplog.text


def test_key_echoed_by_server_is_scrubbed(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.fail_next(2, status=500, message=f"bad token Bearer {SECRET} ({SECRET})")
    with pytest.raises(EndpointError) as info:
        make_llm(fake_openai.url, max_retries=1).chat(ASK)
    assert_clean(info.value)
    assert "***" in str(info.value)


def test_connection_refused(fake_openai: FakeOpenAIServer) -> None:
    port = free_port()
    with pytest.raises(EndpointError, match="connection refused") as info:
        make_llm(f"http://127.0.0.1:{port}", max_retries=0).chat(ASK)
    assert f"http://127.0.0.1:{port}/v1" in str(info.value)
    assert_clean(info.value)


def test_empty_reply_is_an_error(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.chat_replies.append("")
    with pytest.raises(EndpointError, match="empty reply"):
        make_llm(fake_openai.url).chat(ASK)


def test_chat_json_parses_reply(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.chat_replies.append('<think>hmm</think>```json\n{"x": [1, 2]}\n```')
    assert make_llm(fake_openai.url).chat_json(ASK) == {"x": [1, 2]}
    fake_openai.chat_replies.append("no json here")
    with pytest.raises(JSONReplyError):
        make_llm(fake_openai.url).chat_json(ASK)


def test_config_hides_key_and_validates() -> None:
    cfg = LLMConfig(url="http://localhost:8080", model="m", api_key=SECRET)
    assert SECRET not in repr(cfg) and SECRET not in repr(LLMClient(cfg))
    with pytest.raises(EndpointError, match="no URL"):
        LLMConfig(url="", model="m")
    with pytest.raises(EndpointError, match="http:// or https://"):
        LLMConfig(url="localhost:8080", model="m")
    with pytest.raises(EndpointError, match="no model"):
        LLMConfig(url="http://localhost:8080", model="")
    with pytest.raises(EndpointError, match="max_tokens"):
        LLMConfig(url="http://localhost:8080", model="m", max_tokens=0)


# -- parse_json_reply -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ("  [1, 2, 3]\n", [1, 2, 3]),
        ('```json\n{"a": 1}\n```', {"a": 1}),
        ('```\n{"a": 1}\n```', {"a": 1}),
        ('```JSON {"a": 1}```', {"a": 1}),
        ('Sure! Here it is:\n{"a": 1}\nHope that helps.', {"a": 1}),
        (
            'Here:\n```json\n{"a": {"b": [1, {"c": "}"}]}}\n```\nDone.',
            {"a": {"b": [1, {"c": "}"}]}},
        ),
        ('<think>the user wants {"a": 0}</think>\n{"a": 1}', {"a": 1}),
        ('<THINK>\nreasoning\n</THINK>```json\n{"a": 1}\n```', {"a": 1}),
        ('<thinking>x</thinking>{"a": 1}', {"a": 1}),
        # The chat template opened the block in the prompt: only the closer is in the reply.
        ('reasoning with {"draft": 1}\n</think>\n\n{"a": 1}', {"a": 1}),
        (
            '{"outer": {"inner": [1, 2, {"deep": null}]}, "s": "[not a list]"}',
            {"outer": {"inner": [1, 2, {"deep": None}]}, "s": "[not a list]"},
        ),
        ("broken { start, then the real one: [true, false]", [True, False]),
        ('\ufeff{"bom": true}', {"bom": True}),
        # A fence holding invalid JSON does not stop the search.
        ('```json\n{oops}\n```\nfallback {"a": 2}', {"a": 2}),
    ],
)
def test_parse_json_reply_tolerates(text: str, expected: object) -> None:
    assert parse_json_reply(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "no json at all",
        '{"a": 1',  # truncated
        "{'a': 1}",  # Python, not JSON
        "42",  # a scalar is not an object or array
        '"just a string"',
        '<think>still thinking, maybe {"a": 1}',  # cut off while reasoning
        "<think>only reasoning</think>",
    ],
)
def test_parse_json_reply_rejects(text: str) -> None:
    with pytest.raises(JSONReplyError) as info:
        parse_json_reply(text)
    assert isinstance(info.value, ValueError)
    assert "\n" not in str(info.value)


def test_parse_json_reply_expect_kind() -> None:
    text = 'See documents [1] and [2]: {"scores": [3, 4]}'
    assert parse_json_reply(text) == [1]
    assert parse_json_reply(text, expect=dict) == {"scores": [3, 4]}
    assert parse_json_reply('{"scores": [3, 4]}', expect=list) == [3, 4]
    with pytest.raises(JSONReplyError, match="no JSON object"):
        parse_json_reply("[1, 2]", expect=dict)


def test_parse_json_reply_non_string() -> None:
    with pytest.raises(JSONReplyError):
        parse_json_reply(None)  # type: ignore[arg-type]


def test_strip_think() -> None:
    assert strip_think("a<think>x</think>b<think>y</think>c") == "abc"
    assert strip_think("<think>unclosed {1}") == ""
    assert strip_think("answer <think>late") == "answer "
    assert strip_think("pre</think>post") == "post"


def test_parse_json_reply_survives_bracket_storm() -> None:
    text = "[" * 3000 + ' {"a": 1}'
    with pytest.raises(JSONReplyError):
        parse_json_reply(text)  # bounded scan: gives up rather than taking seconds


# -- EndpointReranker -------------------------------------------------------------------


DOCS = ["alpha doc", "beta doc", "gamma doc", "delta doc"]


def rerank_requests(server: FakeOpenAIServer) -> list[dict]:
    return [r.body for r in server.requests if r.path.endswith("/rerank")]


def test_rerank_round_trip_maps_indices(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.rerank_scores.append([0.2, 0.9, 0.4, 0.7])
    reranker = make_reranker(fake_openai.url)
    assert reranker.rerank("query", DOCS) == pytest.approx([0.2, 0.9, 0.4, 0.7])
    (req,) = fake_openai.requests
    assert req.path == "/v1/rerank"
    assert req.headers["authorization"] == f"Bearer {SECRET}"
    assert req.body == {"model": "fake-rerank", "query": "query", "documents": DOCS, "top_n": 4}


def test_rerank_top_n_sent_and_others_zero(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.rerank_scores.append([0.2, 0.9, 0.4, 0.7])
    scores = make_reranker(fake_openai.url).rerank("query", DOCS, top_n=2)
    assert scores == pytest.approx([0.0, 0.9, 0.0, 0.7])
    assert rerank_requests(fake_openai)[0]["top_n"] == 2


def test_rerank_unscripted_scores_follow_overlap(fake_openai: FakeOpenAIServer) -> None:
    docs = ["cats purr softly", "the stock market fell", "cats and dogs purr"]
    scores = make_reranker(fake_openai.url).rerank("cats purr", docs)
    assert len(scores) == 3 and all(0.0 <= s <= 1.0 for s in scores)
    assert scores[1] < scores[0] and scores[1] < scores[2]


def test_rerank_logits_are_normalised_and_sticky(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.rerank_scores.append([-3.0, 2.5, 0.0, 7.0])
    fake_openai.rerank_scores.append([0.5, 0.25])
    reranker = make_reranker(fake_openai.url)
    scores = reranker.rerank("q", DOCS)
    assert scores == pytest.approx([logistic(-3.0), logistic(2.5), 0.5, logistic(7.0)])
    assert all(0.0 < s < 1.0 for s in scores)
    # Same server, scores that happen to lie in [0, 1]: still logits, same scale.
    assert reranker.rerank("q", DOCS[:2]) == pytest.approx([logistic(0.5), logistic(0.25)])


def test_rerank_logits_with_top_n_leave_others_at_zero(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.rerank_scores.append([-5.0, -1.0, -8.0, -2.0])
    scores = make_reranker(fake_openai.url).rerank("q", DOCS, top_n=1)
    assert scores == pytest.approx([0.0, logistic(-1.0), 0.0, 0.0])


def test_rerank_normalise_modes(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.rerank_scores.append([0.5, 0.8])
    assert make_reranker(fake_openai.url, normalise="logistic").rerank("q", DOCS[:2]) == (
        pytest.approx([logistic(0.5), logistic(0.8)])
    )
    fake_openai.rerank_scores.append([-1.0, 3.0])
    assert make_reranker(fake_openai.url, normalise="none").rerank("q", DOCS[:2]) == [0.0, 1.0]


def test_rerank_batches_share_one_scale_and_global_top_n(fake_openai: FakeOpenAIServer) -> None:
    docs = [f"doc {i}" for i in range(5)]
    fake_openai.rerank_scores.extend([[0.1, 0.3], [0.9, 2.0], [0.2]])
    scores = make_reranker(fake_openai.url, batch_size=2).rerank("q", docs, top_n=2)
    reqs = rerank_requests(fake_openai)
    assert [r["documents"] for r in reqs] == [docs[0:2], docs[2:4], docs[4:5]]
    assert [r["top_n"] for r in reqs] == [2, 2, 1]  # each batch scores all its documents
    # 2.0 is a logit, so the whole query is mapped with the logistic; best two kept.
    assert scores == pytest.approx([0.0, 0.0, logistic(0.9), logistic(2.0), 0.0])


@pytest.mark.parametrize(
    ("suffix", "path"),
    [
        ("", "/v1/rerank"),
        ("/", "/v1/rerank"),
        ("/v1", "/v1/rerank"),
        ("/v1/rerank", "/v1/rerank"),
        ("/rerank", "/rerank"),
    ],
)
def test_rerank_url_forms(fake_openai: FakeOpenAIServer, suffix: str, path: str) -> None:
    make_reranker(fake_openai.url + suffix).rerank("q", DOCS[:1])
    assert fake_openai.requests[-1].path == path


def test_rerank_url_function() -> None:
    assert rerank_url("http://h:1") == "http://h:1/v1/rerank"
    assert rerank_url("http://h:1/v1/") == "http://h:1/v1/rerank"
    assert rerank_url("https://api.jina.ai/v1") == "https://api.jina.ai/v1/rerank"
    assert rerank_url("https://api.cohere.com/v2/rerank") == "https://api.cohere.com/v2/rerank"


def test_rerank_empty_and_bad_arguments(fake_openai: FakeOpenAIServer) -> None:
    reranker = make_reranker(fake_openai.url)
    assert reranker.rerank("q", []) == []
    assert fake_openai.requests == []
    with pytest.raises(TypeError):
        reranker.rerank("q", "a string")
    with pytest.raises(ValueError):
        reranker.rerank("q", DOCS, top_n=0)


def test_rerank_truncates_and_fills_empty_documents(fake_openai: FakeOpenAIServer) -> None:
    make_reranker(fake_openai.url, max_chars=5).rerank("q", ["abcdefghij", ""])
    assert rerank_requests(fake_openai)[0]["documents"] == ["abcde", " "]


def test_rerank_no_key_sends_no_authorization(fake_openai: FakeOpenAIServer) -> None:
    make_reranker(fake_openai.url, api_key=None).rerank("q", DOCS[:1])
    assert "authorization" not in fake_openai.requests[0].headers


@pytest.mark.parametrize("status", [429, 500, 502])
def test_rerank_retries_transient_failures(fake_openai: FakeOpenAIServer, status: int) -> None:
    fake_openai.fail_next(2, status=status)
    fake_openai.rerank_scores.append([0.3, 0.6])
    assert make_reranker(fake_openai.url).rerank("q", DOCS[:2]) == pytest.approx([0.3, 0.6])
    assert len(fake_openai.requests) == 3


def test_rerank_failure_is_one_clean_line(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.fail_next(1, status=404, message=f"no such model (key {SECRET})")
    with pytest.raises(EndpointError) as info:
        make_reranker(fake_openai.url).rerank("q", DOCS)
    msg = str(info.value)
    assert msg.startswith(f"rerank endpoint {fake_openai.base_url}/rerank: HTTP 404")
    assert "check the URL and model name" in msg
    assert len(fake_openai.requests) == 1  # 4xx is not retried
    assert_clean(info.value)


def test_rerank_timeout_names_url_without_key(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.hang_next(1, seconds=2.0)
    with pytest.raises(EndpointError, match="timed out after 0.2s") as info:
        make_reranker(fake_openai.url, timeout=0.2, max_retries=0).rerank("q", DOCS)
    assert f"{fake_openai.base_url}/rerank" in str(info.value)
    assert_clean(info.value)


def test_rerank_connection_refused() -> None:
    port = free_port()
    with pytest.raises(EndpointError, match="connection refused") as info:
        make_reranker(f"http://127.0.0.1:{port}", max_retries=0).rerank("q", DOCS)
    assert_clean(info.value)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            {"results": [{"index": 1, "relevance_score": 0.5}, {"index": 0, "relevance_score": 1}]},
            {0: 1.0, 1: 0.5},
        ),
        ({"data": [{"index": 0, "score": -2.5}]}, {0: -2.5}),  # TEI/vLLM spellings
        ([{"index": 0, "score": 0.1}], {0: 0.1}),
    ],
)
def test_rerank_reply_shapes(body: object, expected: dict[int, float]) -> None:
    assert _parse_results(body, 2) == expected


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ({"error": "nope"}, "no results list"),
        ("<html>", "no results list"),
        ({"results": [{"index": 5, "relevance_score": 0.1}]}, "index 5 for 2 documents"),
        ({"results": [{"index": "0", "relevance_score": 0.1}]}, "index '0'"),
        ({"results": [{"index": 0, "relevance_score": "high"}]}, "not a number"),
        ({"results": [3]}, "not an object"),
    ],
)
def test_rerank_malformed_reply(body: object, reason: str) -> None:
    with pytest.raises(Failure) as info:
        _parse_results(body, 2)
    assert reason in info.value.reason and not info.value.retryable


def test_rerank_config_validation_and_repr() -> None:
    cfg = RerankConfig(url="http://h:1", model="m", api_key=SECRET)
    assert SECRET not in repr(cfg) and SECRET not in repr(EndpointReranker(cfg))
    with pytest.raises(EndpointError, match="batch_size"):
        RerankConfig(url="http://h:1", model="m", batch_size=0)
    with pytest.raises(EndpointError, match="normalise"):
        RerankConfig(url="http://h:1", model="m", normalise="softmax")  # type: ignore[arg-type]


def test_reranker_protocol() -> None:
    def accepts(r: Reranker) -> Reranker:
        return r

    cfg = RerankConfig(url="http://h:1", model="m")
    accepts(EndpointReranker(cfg))
    accepts(LLMReranker(LLMClient(LLMConfig(url="http://h:1", model="m"))))


def test_score_helpers() -> None:
    assert logistic(0.0) == 0.5
    assert logistic(1000.0) == 1.0 and logistic(-1000.0) == 0.0
    assert logistic(math.nan) == 0.0
    assert keep_top_n([0.1, 0.5, 0.5, 0.2], 2) == [0.0, 0.5, 0.5, 0.0]
    assert keep_top_n([0.3, 0.3, 0.3], 1) == [0.3, 0.0, 0.0]  # ties: earlier input wins
    assert keep_top_n([0.1], None) == [0.1]


# -- LLMReranker ------------------------------------------------------------------------


def test_llm_reranker_happy_path(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.chat_replies.append('{"scores": [2, 9, 5, 10]}')
    reranker = LLMReranker(make_llm(fake_openai.url))
    assert reranker.rerank("which doc?", DOCS) == pytest.approx([0.2, 0.9, 0.5, 1.0])
    assert reranker.last_error is None and not reranker.degraded
    (body,) = chat_requests(fake_openai)
    assert body["response_format"]["type"] == "json_object"
    # The reply shape goes along as a JSON Schema: llama.cpp servers make it a grammar.
    scores = body["response_format"]["schema"]["properties"]["scores"]
    assert scores["minItems"] == scores["maxItems"] == 4
    prompt = "\n".join(m["content"] for m in body["messages"])
    assert "which doc?" in prompt and "JSON" in prompt
    assert all(doc in prompt for doc in DOCS)
    assert "exactly 4 scores" in prompt


def test_llm_reranker_tolerates_think_fences_and_odd_shapes(
    fake_openai: FakeOpenAIServer,
) -> None:
    reranker = LLMReranker(make_llm(fake_openai.url))
    fake_openai.chat_replies.append('<think>doc 2 is best</think>```json\n{"scores":[1,8]}\n```')
    assert reranker.rerank("q", DOCS[:2]) == pytest.approx([0.1, 0.8])
    fake_openai.chat_replies.append('Scores: [3, "7.5"]')  # bare list, numeric string
    assert reranker.rerank("q", DOCS[:2]) == pytest.approx([0.3, 0.75])
    fake_openai.chat_replies.append(
        '{"relevance": [{"doc": 1, "score": 4}, {"doc": 2, "score": 12}]}'
    )
    assert reranker.rerank("q", DOCS[:2]) == pytest.approx([0.4, 1.0])  # clamped to 10
    assert reranker.last_error is None


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("I cannot rate these documents.", "no JSON"),
        ('{"scores": [1, 2]}', "2 scores for 4 documents"),
        ('{"scores": [1, "high", 3, 4]}', "not a number"),
        ('{"verdict": "good"}', 'no "scores" list'),
        ('<think>{"scores": [1, 2, 3, 4]}', "only reasoning"),
    ],
)
def test_llm_reranker_malformed_reply_degrades(
    fake_openai: FakeOpenAIServer, reply: str, reason: str
) -> None:
    fake_openai.chat_replies.append(reply)
    reranker = LLMReranker(make_llm(fake_openai.url))
    assert reranker.rerank("q", DOCS, top_n=2) == [0.5, 0.5, 0.5, 0.5]
    assert reranker.degraded
    assert reranker.last_error is not None and reason in reranker.last_error
    # A usable reply afterwards clears the flag.
    fake_openai.chat_replies.append(json.dumps({"scores": [0, 0, 10, 0]}))
    assert reranker.rerank("q", DOCS) == [0.0, 0.0, 1.0, 0.0]
    assert reranker.last_error is None


def test_llm_reranker_top_n_and_batches(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.chat_replies.extend(['{"scores": [1, 6]}', '{"scores": [9, 3]}', '{"scores": [5]}'])
    reranker = LLMReranker(make_llm(fake_openai.url), batch_size=2)
    docs = [f"doc {i}" for i in range(5)]
    assert reranker.rerank("q", docs, top_n=2) == pytest.approx([0.0, 0.6, 0.9, 0.0, 0.0])
    assert len(chat_requests(fake_openai)) == 3


def test_llm_reranker_truncates_documents(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.chat_replies.append('{"scores": [5]}')
    LLMReranker(make_llm(fake_openai.url), max_chars=10).rerank("q", ["x" * 10 + "TAIL"])
    prompt = chat_requests(fake_openai)[0]["messages"][-1]["content"]
    assert "x" * 10 in prompt and "TAIL" not in prompt


def test_llm_reranker_endpoint_failure_raises(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.fail_next(2, status=500)
    reranker = LLMReranker(make_llm(fake_openai.url, max_retries=1))
    with pytest.raises(EndpointError, match="llm endpoint"):
        reranker.rerank("q", DOCS)


def test_llm_reranker_empty(fake_openai: FakeOpenAIServer) -> None:
    assert LLMReranker(make_llm(fake_openai.url)).rerank("q", []) == []
    assert fake_openai.requests == []
