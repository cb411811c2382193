"""Cloud embedders are told a query from a document: Jina's ``task``, Voyage's and Cohere's
``input_type``, chosen by the endpoint's host or by ``[embed] input_type_style``; checked
on the fields the in-test OpenAI server receives."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import Cli
from fake_openai_server import FakeOpenAIServer
from test_env_names import use_endpoint

from vaultmem import config
from vaultmem.inference.remote import EndpointConfig, OpenAIEmbedder, input_type_style

PROVIDER_FIELDS = ("task", "input_type")


def sent(server: FakeOpenAIServer) -> list[dict[str, str]]:
    """The provider fields of each embeddings request since the last call, then forgets."""
    fields = [
        {k: r.body[k] for k in PROVIDER_FIELDS if k in r.body} for r in server.embedding_requests()
    ]
    server.requests.clear()
    return fields


def test_auto_picks_the_style_by_host() -> None:
    assert input_type_style("https://api.jina.ai") == "jina"
    assert input_type_style("https://API.Jina.AI/v1/") == "jina"
    assert input_type_style("https://api.voyageai.com/v1") == "voyage"
    assert input_type_style("https://api.cohere.ai/compatibility/v1") == "cohere"
    assert input_type_style("https://api.cohere.com/v1") == "cohere"
    for url in ("https://api.openai.com/v1", "http://127.0.0.1:8080", "https://jina.ai.example"):
        assert input_type_style(url) == "none"
    assert input_type_style("http://127.0.0.1:8080", "voyage") == "voyage"
    assert input_type_style("https://api.jina.ai", "none") == "none"


def test_the_style_decides_what_indexing_and_queries_send(
    cli: Cli, fake_openai: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_endpoint(monkeypatch, fake_openai)
    # auto, and 127.0.0.1 is no provider's host: neither field, at index or query time.
    cli("index")
    assert cli("vsearch", "which database did we choose").stdout.strip()
    plain = sent(fake_openai)
    assert len(plain) > 1
    assert plain == [{}] * len(plain)
    # Named for a proxy in front of Jina: its vectors are another model's, all made anew.
    (cli.vault / ".vaultmem.toml").write_text('[embed]\ninput_type_style = "jina"\n', "utf-8")
    assert "embedded" in cli("embed").stdout
    indexed = sent(fake_openai)
    assert indexed == [{"task": "retrieval.passage"}] * len(indexed)
    assert len(indexed) == len(plain) - 1  # all of them (and no query among them)
    assert cli("vsearch", "which database did we choose").stdout.strip()
    assert sent(fake_openai) == [{"task": "retrieval.query"}]
    cli("query", "which database did we choose")
    assert sent(fake_openai) == [{"task": "retrieval.query"}]


@pytest.mark.parametrize(
    ("style", "document", "query"),
    [
        ("jina", {"task": "retrieval.passage"}, {"task": "retrieval.query"}),
        ("voyage", {"input_type": "document"}, {"input_type": "query"}),
        ("cohere", {"input_type": "search_document"}, {"input_type": "search_query"}),
        ("none", {}, {}),
    ],
)
def test_each_style_sends_its_fields(
    fake_openai: FakeOpenAIServer, style: str, document: dict[str, str], query: dict[str, str]
) -> None:
    embedder = OpenAIEmbedder(
        EndpointConfig(
            url=fake_openai.url, model="fake-embed", batch_size=2, input_type_style=style
        )
    )
    embedder.embed(["a note", "another", "a third"])
    assert sent(fake_openai) == [document, document]
    embedder.embed(["what did we decide"], query=True)
    assert sent(fake_openai) == [query]
    suffix = "" if style == "none" else f"+{style}"
    # Vectors made with the field are not those made without it: never mixed in one store.
    assert embedder.model_id == f"openai:fake-embed{suffix}"


def test_style_is_configured_and_checked(vault: Path, cli: Cli) -> None:
    env = {**os.environ, "VAULTMEM_EMBED_INPUT_TYPE_STYLE": "voyage"}
    assert config.load(vault_flag=str(vault), env=env, cwd=vault).embed.input_type_style == "voyage"
    assert config.load(vault_flag=str(vault), env={}, cwd=vault).embed.input_type_style == "auto"
    toml = vault / ".vaultmem.toml"
    toml.write_text('[llm]\ninput_type_style = "jina"\n', "utf-8")
    assert "unknown key 'llm.input_type_style'" in cli("status").stderr
    toml.write_text('[embed]\ninput_type_style = "jinna"\n', "utf-8")
    result = cli("status", ok=False)
    assert result.exit_code == 1
    assert (
        "embed.input_type_style: expected one of auto, jina, voyage, cohere, none, got 'jinna'"
        in result.stderr
    )
