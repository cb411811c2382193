"""`query`: the hybrid pipeline end to end, against real local servers.

The fake OpenAI-compatible server (tests/fake_openai_server.py) plays all three roles
over real HTTP: embeddings (deterministic hashed bag-of-words vectors), chat (scripted
expansion replies) and rerank (scripted scores). The example vault is indexed and
embedded with it once per module and copied per test. The retrieval eval at the end
uses the real in-process MiniLM (the session's shared embedded vault).
"""

from __future__ import annotations

import json
import math
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import EXAMPLE_QUERIES, EXAMPLE_VAULT, Cli, example_queries
from fake_openai_server import FakeOpenAIServer

from tests.conftest import copy_indexed
from vaultmem.config import build
from vaultmem.retrieval import fusion

CACHING = "that thing about caching we decided"
HELM = "decisions/Helm charts over Kustomize.md"
EXPANSION = {
    "lexical": ["Helm Kustomize kubeconform"],
    "semantic": ["which cache store did the team choose and why"],
    "hypothetical": "We chose Redis over Memcached for the session cache.",
}


@pytest.fixture(scope="module")
def fake_indexed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """example-vault/ indexed and embedded once with the fake server's vectors."""
    from vaultmem.embedding import embed_vault
    from vaultmem.indexer import index_vault
    from vaultmem.inference.embedders import embedder_for

    vault = tmp_path_factory.mktemp("fake-indexed") / "vault"
    shutil.copytree(EXAMPLE_VAULT, vault, ignore=shutil.ignore_patterns(".vaultmem"))
    with FakeOpenAIServer() as server:
        # The stored vectors are keyed by model name, not by server: every test's own
        # fake server answers with the same vectors for the same model.
        role = {"url": server.url, "model": "fake-embed"}
        config = build(vault, {"embedder": "endpoint", "embed": role})
        index_vault(config)
        embedder = embedder_for(config)
        assert embedder is not None
        assert embed_vault(config, embedder).embedded > 53
    return vault


@pytest.fixture
def server(
    fake_openai: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> Iterator[FakeOpenAIServer]:
    """The fake server configured as embedder, LLM and reranker (no retries: fast fails)."""
    for role, model in (("EMBED", "fake-embed"), ("LLM", "fake-chat"), ("RERANK", "fake-rr")):
        monkeypatch.setenv(f"VAULTMEM_{role}_URL", fake_openai.url)
        monkeypatch.setenv(f"VAULTMEM_{role}_MODEL", model)
        monkeypatch.setenv(f"VAULTMEM_{role}_MAX_RETRIES", "0")
    monkeypatch.setenv("VAULTMEM_EMBEDDER", "endpoint")
    monkeypatch.setenv("VAULTMEM_QUERY_EXPAND", "1")  # expansion is opt-in
    yield fake_openai


@pytest.fixture
def qcli(fake_indexed: Path, tmp_path: Path) -> Cli:
    """A CLI on a private copy of the fake-embedded vault (cache included)."""
    vault = tmp_path / "vault"
    copy_indexed(fake_indexed, vault)
    return Cli(vault)


def explained(cli: Cli, *args: str) -> tuple[list[dict[str, Any]], str]:
    """Run ``query ... --explain --json``; the hit objects and stderr.

    The memory prior and review slots are off: these tests check the retrieval stages.
    """
    result = cli("query", *args, "--explain", "--json", "--no-prior", "--no-review")
    hits = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    return hits, result.stderr


def stage(hit: dict[str, Any], name: str) -> dict[str, Any]:
    """The record of stage ``name`` in a hit's explain object."""
    return next(s for s in hit["explain"]["stages"] if s["stage"] == name)


def chats(server: FakeOpenAIServer) -> list[Any]:
    """Bodies of the chat requests the server received."""
    return [r.body for r in server.requests if r.path.endswith("/chat/completions")]


def reranks(server: FakeOpenAIServer) -> list[Any]:
    """Bodies of the rerank requests the server received."""
    return [r.body for r in server.requests if r.path.endswith("/rerank")]


def zsum_of(hit: dict[str, Any]) -> float:
    """The fused score recomputed from the hit's raw list scores and each list's weight,
    floor and spread: Σ weight · (score − floor) / sd (1 for a list without spread)."""
    specs = {spec["name"]: spec for spec in hit["explain"]["lists"]}
    parts = []
    for name, got in hit["explain"]["retrieval"].items():
        if got is None:
            continue
        spec = specs[name]
        lift = (got["score"] - spec["floor"]) / spec["sd"] if spec["sd"] > 0 else 1.0
        parts.append(spec["weight"] * lift)
    return math.fsum(parts)


# -- expansion ------------------------------------------------------------------------------


def test_scripted_variants_are_searched_with_their_weights(
    qcli: Cli, server: FakeOpenAIServer
) -> None:
    server.chat_replies.append(json.dumps(EXPANSION))
    hits, _ = explained(qcli, CACHING, "--no-rerank", "-n", "30")

    (chat,) = chats(server)
    prompt = chat["messages"][-1]["content"]
    assert CACHING in prompt and '"lexical"' in prompt  # the packaged jinja2 template
    assert chat["model"] == "fake-chat"

    specs = hits[0]["explain"]["lists"]
    # The query's own lists weigh as fusion says (the note leads 0.75, the best fragments
    # 1.25), each variant half its kind's.
    assert [(s["name"], s["text"], s["weight"]) for s in specs] == [
        ("bm25:original", CACHING, 1.0),
        ("bm25:lead", CACHING, 0.75),
        ("bm25:lex-1", EXPANSION["lexical"][0], 0.5),
        ("vec:original", CACHING, 1.25),
        ("vec:lead", CACHING, 0.75),
        ("vec:sem-1", EXPANSION["semantic"][0], 0.625),
        ("vec:hyde", EXPANSION["hypothetical"], 0.625),
    ]
    assert hits[0]["explain"]["expansion"]["lexical"] == EXPANSION["lexical"]
    # The semantic variant and the hypothetical passage were embedded, with the query,
    # in one request.
    query_inputs = [r.inputs for r in server.embedding_requests()]
    assert [CACHING, *EXPANSION["semantic"], EXPANSION["hypothetical"]] in query_inputs
    # The lexical variant found a note the original's keyword search did not.
    helm = next(h for h in hits if h["path"] == HELM)
    assert helm["explain"]["retrieval"]["bm25:lex-1"]["rank"] <= 3
    assert helm["explain"]["retrieval"]["bm25:original"] is None
    # Weights apply: every fused score is the weighted sum of the note's z-scores above
    # each list's floor, from what --explain shows of the lists.
    for hit in hits:
        assert hit["explain"]["fused"]["score"] == pytest.approx(zsum_of(hit), rel=1e-5, abs=1e-5)


def test_a_note_found_only_by_a_variant_ranks_below_the_originals(
    qcli: Cli, server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Keyword lists only, so "found by the original" is unambiguous.
    monkeypatch.setenv("VAULTMEM_EMBEDDER", "none")
    server.chat_replies.append(json.dumps(EXPANSION))
    hits, _ = explained(qcli, CACHING, "--no-rerank", "-n", "40")
    by_original = [
        i for i, h in enumerate(hits) if h["explain"]["retrieval"]["bm25:original"] is not None
    ]
    variant_only = [
        i for i, h in enumerate(hits) if h["explain"]["retrieval"]["bm25:original"] is None
    ]
    assert by_original and variant_only
    assert HELM in [hits[i]["path"] for i in variant_only]
    # A variant weighs half the query: its own top hit stays below the original's top three.
    top3 = [i for i in by_original if hits[i]["explain"]["retrieval"]["bm25:original"]["rank"] <= 3]
    assert len(top3) == 3 and max(top3) < min(variant_only)


def test_intent_steers_expansion_and_rerank_and_disables_the_bypass(
    qcli: Cli, server: FakeOpenAIServer
) -> None:
    strong = "arq Celery RQ Dramatiq"  # one clear keyword hit: the bypass fires
    hits, _ = explained(qcli, strong, "-n", "3")
    assert hits[0]["explain"]["lists"][0]["hits"] == 4  # the probe: one strong hit of four
    assert stage(hits[0], "expansion")["status"] == "bypassed"
    assert stage(hits[0], "strong-signal")["detail"].startswith("strong")
    assert chats(server) == []  # no LLM call at all
    assert stage(hits[0], "rerank")["status"] == "ran"  # only expansion is bypassed

    intent = "retry semantics for payment webhooks"
    server.chat_replies.append(json.dumps(EXPANSION))
    hits, _ = explained(qcli, strong, "-n", "3", "--intent", intent)
    assert stage(hits[0], "strong-signal")["status"] == "off"
    assert stage(hits[0], "expansion")["status"] == "ran"
    (chat,) = chats(server)
    assert intent in chat["messages"][-1]["content"]
    assert intent in reranks(server)[-1]["query"]


# -- degradation ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "reply",
    [
        "Sure! Here are some variants: redis caching, memcached sessions.",
        '{"answer": 42}',
        '<think>{"lexical": ["cut off while thinking"]',
    ],
)
def test_a_malformed_llm_answer_is_survived(
    qcli: Cli, server: FakeOpenAIServer, reply: str
) -> None:
    server.chat_replies.append(reply)
    result = qcli("query", CACHING, "--json", "--no-rerank")
    hits = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(hits) == 10
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("vaultmem: expansion skipped: unusable LLM")
    assert not list((qcli.vault / ".vaultmem" / "llm").glob("*.json"))  # not cached


def test_failing_endpoints_are_one_line_each(qcli: Cli, server: FakeOpenAIServer) -> None:
    server.fail_next(3, 500)  # chat (expansion), embeddings (vectors), rerank, in that order
    result = qcli("query", CACHING, "--json")
    assert len(result.stdout.splitlines()) == 10  # BM25 alone still answers
    lines = result.stderr.splitlines()
    assert [line.split(":")[1].strip() for line in lines] == [
        "expansion skipped",
        "vectors skipped",
        "rerank skipped",
    ]
    assert all("HTTP 500" in line and server.url in line for line in lines)


def test_the_expansion_is_cached_per_model_and_prompt(qcli: Cli, server: FakeOpenAIServer) -> None:
    server.chat_replies.append(json.dumps(EXPANSION))
    first, _ = explained(qcli, CACHING, "--no-rerank")
    second, _ = explained(qcli, CACHING, "--no-rerank")
    assert len(chats(server)) == 1  # the second query asked nobody
    assert stage(second[0], "expansion")["detail"].endswith("(cached)")
    assert [h["path"] for h in first] == [h["path"] for h in second]
    (cached,) = (qcli.vault / ".vaultmem" / "llm").glob("expand-*.json")
    assert re.fullmatch(r"expand-[0-9a-f]{64}\.json", cached.name)
    assert json.loads(cached.read_text("utf-8"))["expansion"]["lexical"] == EXPANSION["lexical"]
    # Another intent is another prompt: asked again.
    server.chat_replies.append(json.dumps(EXPANSION))
    explained(qcli, CACHING, "--no-rerank", "--intent", "the session store")
    assert len(chats(server)) == 2


def test_nothing_but_an_embedder_gives_bm25_and_vector_fusion(
    qcli: Cli, server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    for role in ("LLM", "RERANK"):
        monkeypatch.delenv(f"VAULTMEM_{role}_URL")
        monkeypatch.delenv(f"VAULTMEM_{role}_MODEL")
    result = qcli("query", CACHING, "--json", "--explain")
    hit = json.loads(result.stdout.splitlines()[0])
    names = [s["name"] for s in hit["explain"]["lists"]]
    assert names == ["bm25:original", "bm25:lead", "vec:original", "vec:lead"]
    # Expansion was asked for and cannot run; no reranker is the default (issue 10 item 7):
    # said in --explain only, not on every call.
    lines = result.stderr.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("vaultmem: expansion skipped: no LLM configured")
    assert stage(hit, "rerank")["status"] == "off"
    assert chats(server) == [] and reranks(server) == []
    assert qcli("query", CACHING, "-q").stderr == ""


def test_no_embedder_gives_bm25_only(qcli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VAULTMEM_EMBEDDER", "none")  # and no LLM, no reranker
    result = qcli("query", CACHING, "--json", "--explain", "--no-prior", "--no-review")
    hits = [json.loads(line) for line in result.stdout.splitlines()]
    assert [s["name"] for s in hits[0]["explain"]["lists"]] == ["bm25:original", "bm25:lead"]
    # Vectors turned off and no reranker are choices, not degradations: nothing on stderr.
    assert result.stderr == ""
    assert stage(hits[0], "vectors")["status"] == "off"
    # The two keyword lists fused, no reranker: the fused order, each score recomputable.
    fused = [h["explain"]["fused"]["score"] for h in hits]
    assert fused == sorted(fused, reverse=True)
    for hit in hits:
        assert hit["explain"]["fused"]["score"] == pytest.approx(zsum_of(hit), rel=1e-5, abs=1e-5)
    # Every keyword hit is the whole-note list's: the lead list adds no note of its own
    # (a lead is part of the note), it reorders.
    plain = qcli.json_lines("search", CACHING, "--no-prior", "--no-review", "-n", "30")
    assert {h["path"] for h in hits} <= {h["path"] for h in plain}


def test_filters_hold_in_every_list(qcli: Cli, server: FakeOpenAIServer) -> None:
    server.chat_replies.append(json.dumps(EXPANSION))
    hits, _ = explained(qcli, CACHING, "--folder", "research", "-n", "30")
    assert hits and all(h["path"].startswith("research/") for h in hits)
    assert HELM not in [h["path"] for h in hits]  # the variant's hit is filtered too
    typed = qcli.json_lines("query", CACHING, "--type", "antipattern", "--no-expand")
    assert typed and all(h["type"] == "antipattern" for h in typed)


# -- reranking ------------------------------------------------------------------------------


def test_scripted_rerank_scores_reorder_the_top(qcli: Cli, server: FakeOpenAIServer) -> None:
    before, _ = explained(qcli, CACHING, "--no-expand", "--no-rerank", "-n", "5")
    # Candidates go to the reranker in fused order; give the second all the credit.
    server.rerank_scores.append([0.0, 1.0] + [0.0] * 28)
    after, _ = explained(qcli, CACHING, "--no-expand", "-n", "5")
    assert after[0]["path"] == before[1]["path"]
    assert after[1]["path"] == before[0]["path"]
    (request,) = reranks(server)
    assert request["model"] == "fake-rr" and request["query"] == CACHING
    assert len(request["documents"]) == 30  # the candidate limit
    # Each reranked document is the note's best fragment, titled.
    assert request["documents"][1].startswith(before[1]["title"])
    # The blend: w(p) · normalised fused + (1 − w(p)) · rerank, w = 0.75 in the top 3.
    for hit in after:
        ex = hit["explain"]
        w = fusion.position_weight(ex["fused"]["rank"])
        rerank = ex["rerank"]["score"]
        assert rerank == (1.0 if hit["path"] == before[1]["path"] else 0.0)
        assert ex["final"]["score"] == pytest.approx(hit["score"])
        retrieval = (ex["blended"]["score"] - (1 - w) * rerank) / w
        assert 0.0 <= retrieval <= 1.0 + 1e-9

    server.rerank_scores.append([0.5] * 10)
    explained(qcli, CACHING, "--no-expand", "--candidates", "10")
    assert len(reranks(server)[-1]["documents"]) == 10


def test_llm_scores_fragments_when_no_reranker_is_configured(
    qcli: Cli, server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("VAULTMEM_RERANK_URL")
    monkeypatch.delenv("VAULTMEM_RERANK_MODEL")
    target = "Runbook - Redis failover"

    def scores(body: dict[str, Any]) -> str:
        docs = re.findall(
            r'<document n="\d+">\n(.*?)\n</document>', body["messages"][-1]["content"], re.DOTALL
        )
        return json.dumps({"scores": [10 if d.startswith(target) else 0 for d in docs]})

    server.chat_replies.append(scores)
    hits, _ = explained(qcli, CACHING, "--no-expand", "-n", "5")
    # The fragment the LLM scored 10 rises from deep in the fused list (16th here) into
    # the top three: below the top of the fused list only where retrieval was far surer.
    found = next(h for h in hits[:3] if h["title"] == target)
    assert "scoring 0-10" in stage(found, "rerank")["detail"]
    assert found["explain"]["rerank"] == {"rank": 1, "score": 1.0}
    assert found["explain"]["blended"]["rank"] < found["explain"]["fused"]["rank"] - 5

    server.chat_replies.append("no idea, sorry")  # an unusable score reply
    result = qcli("query", CACHING, "--no-expand", "--json")
    assert result.stderr.startswith("vaultmem: rerank skipped: llm reranker:")
    assert len(result.stdout.splitlines()) == 10


# -- output and templates -------------------------------------------------------------------


def test_human_explain_shows_stages_lists_and_a_table_per_hit(
    qcli: Cli, server: FakeOpenAIServer
) -> None:
    server.chat_replies.append(json.dumps(EXPANSION))
    out = qcli("query", CACHING, "--explain", "-n", "2").stdout
    assert out.startswith("stages:\n  probe ")
    for needle in (
        "expansion:\n  lexical       Helm Kustomize kubeconform",
        "lists:\n",
        "results:\n 1. ",
        "bm25:lex-1",
        "vec:hyde",
        "fused",
        "final",
        "fragment lines",
    ):
        assert needle in out
    plain = qcli("query", CACHING, "-n", "2").stdout.splitlines()
    assert re.match(r" 1\. .+  \[.+\.md\]  \d\.\d\d relevance$", plain[0])
    assert re.match(r"    \d+: ", plain[1])


def test_a_vault_template_overrides_the_packaged_prompt(
    qcli: Cli, server: FakeOpenAIServer
) -> None:
    override = qcli.vault / ".vaultmem" / "templates" / "prompts" / "expand.j2"
    override.parent.mkdir(parents=True)
    override.write_text("Expand {{ query }} as JSON{% if intent %} for {{ intent }}{% endif %}.")
    qcli("trust")  # a vault's templates are used once the user trusts it
    server.chat_replies.append(json.dumps(EXPANSION))
    qcli("query", CACHING, "--no-rerank")
    assert chats(server)[0]["messages"][-1]["content"] == f"Expand {CACHING} as JSON."

    override.write_text("{{ no_such_variable }}")  # broken: expansion skipped, not a crash
    qcli("trust")  # changed: trusted again
    result = qcli("query", "another question", "--no-rerank", "--json")
    assert len(chats(server)) == 1
    assert result.stderr.startswith("vaultmem: expansion skipped: template ")
    assert "no_such_variable" in result.stderr and result.stdout


def test_parse_expansion_tolerates_what_models_write() -> None:
    from vaultmem.inference.llm import JSONReplyError
    from vaultmem.retrieval.expansion import MAX_VARIANTS, parse_expansion

    reply = (
        "<think>let me see</think>Here you go:\n```json\n"
        '{"lex": "redis ttl", "vec": ["Redis TTL", "why redis", 7, "why redis", "a", "b"],'
        ' "hyde": ["Redis keeps keys with a TTL."], "extra": true}\n```'
    )
    got = parse_expansion(reply, "redis ttl")
    assert got.lexical == ()  # the query itself is no variant
    assert got.semantic == ("why redis", "a", "b")[:MAX_VARIANTS]
    assert got.hypothetical == "Redis keeps keys with a TTL."
    with pytest.raises(JSONReplyError):
        parse_expansion('{"lexical": [], "semantic": [""]}', "q")


# -- retrieval eval on example-vault (real in-process MiniLM) -------------------------------


@pytest.fixture(scope="module")
def ranks(embedded_example: Path) -> dict[str, dict[str, int | None]]:
    """mode → qid → rank of the expected note in the top 10 (None: missed), no LLM."""
    from vaultmem.index.lexical import LexicalIndex
    from vaultmem.inference.local import LocalEmbedder
    from vaultmem.retrieval.query import query
    from vaultmem.retrieval.query_types import Backends, QueryOptions
    from vaultmem.retrieval.search import search
    from vaultmem.retrieval.vsearch import vsearch

    config = build(embedded_example, {})
    index = LexicalIndex.open(config.cache_dir)
    embedder = LocalEmbedder()
    backends = Backends(embedder=embedder)  # what a fresh install has: no LLM, no reranker
    modes = {
        "search": lambda q: [h.path for h in search(config, q, limit=10, index=index)],
        "vsearch": lambda q: [h.path for h in vsearch(config, q, embedder, limit=10)],
        "query": lambda q: [
            h.path
            for h in query(
                config, q, backends=backends, options=QueryOptions(limit=10), index=index
            ).hits
        ],
    }
    out: dict[str, dict[str, int | None]] = {}
    for mode, run in modes.items():
        out[mode] = {}
        for q in example_queries():
            paths = run(q["query"])
            expected = q["relevant"][0]
            out[mode][q["qid"]] = paths.index(expected) + 1 if expected in paths else None
    return out


def _hit_at(ranks: dict[str, int | None], k: int, kinds: set[str]) -> float:
    chosen = [ranks[q["qid"]] for q in example_queries() if q["kind"] in kinds]
    return sum(1 for r in chosen if r is not None and r <= k) / len(chosen)


def _mrr(ranks: dict[str, int | None]) -> float:
    return sum(1 / r for r in ranks.values() if r) / len(ranks)


ALL_KINDS = {"keyword", "paraphrase", "vague"}


def test_query_hit_at_3_is_at_least_search_and_vsearch(
    ranks: dict[str, dict[str, int | None]],
) -> None:
    # Measured (34 queries, no LLM, no reranker: BM25 + MiniLM fused):
    # Hit@3 search 0.912, vsearch 0.941, query 0.971.
    hit3 = {mode: _hit_at(r, 3, ALL_KINDS) for mode, r in ranks.items()}
    assert hit3["query"] >= max(hit3["search"], hit3["vsearch"])
    assert hit3["query"] >= 0.94
    assert _hit_at(ranks["query"], 3, {"keyword"}) == 1.0
    assert _hit_at(ranks["query"], 3, {"paraphrase"}) >= 0.9  # measured 1.0
    assert _hit_at(ranks["query"], 3, {"vague"}) >= 0.77  # measured 0.889 (8/9)


def test_query_mrr_floor(ranks: dict[str, dict[str, int | None]]) -> None:
    # Measured MRR@10: search 0.846, vsearch 0.922, query 0.914 (fusion trades a little of
    # the vectors' top-1 precision on paraphrases for keyword and vague wins).
    assert _mrr(ranks["query"]) >= _mrr(ranks["search"])
    assert _mrr(ranks["query"]) >= 0.88


def test_eval_has_a_query_mode(embedded_example: Path, tmp_path: Path) -> None:
    gold = tmp_path / "gold.jsonl"
    gold.write_text("".join(EXAMPLE_QUERIES.read_text("utf-8").splitlines(True)[:4]), "utf-8")
    vault = tmp_path / "vault"
    copy_indexed(embedded_example, vault)
    cli = Cli(vault)
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("VAULTMEM_EMBEDDER")
        result = cli("eval", str(gold), "-m", "query", "--json")
    (line,) = result.stdout.splitlines()
    scores = json.loads(line)
    assert scores["mode"] == "query" and scores["queries"] == 4
    assert scores["recall@1"] == 1.0
    # Expansion is opt-in and no reranker is the default: neither is a degradation.
    assert result.stderr == ""


def test_expansion_is_opt_in(
    qcli: Cli, server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("VAULTMEM_QUERY_EXPAND")
    hits, stderr = explained(qcli, CACHING, "--no-rerank")
    off = stage(hits[0], "expansion")
    assert off["status"] == "off" and "--expand" in off["detail"]
    assert chats(server) == [] and "expansion" not in stderr  # off is no degradation
    server.chat_replies.append(json.dumps(EXPANSION))
    hits, _ = explained(qcli, CACHING, "--no-rerank", "--expand")
    assert stage(hits[0], "expansion")["status"] == "ran" and len(chats(server)) == 1
    monkeypatch.setenv("VAULTMEM_QUERY_EXPAND", "true")
    hits, _ = explained(qcli, CACHING, "--no-rerank", "--no-expand")  # the flag wins
    assert stage(hits[0], "expansion")["status"] == "off" and len(chats(server)) == 1


# --- keyword-only ranking surprises ---------------------------------------------------------

LEDGER = """---
created: {created}
---
# Ledger port

The ledger service listens on port {port} in staging and production.
"""


def _contradicting_facts(cli: Cli) -> tuple[str, str]:
    """An earlier fact and a later one that contradicts it (the link lowers the earlier
    note's confidence to 0.25). The earlier sorts first, so it wins a BM25 tie."""
    older, newer = "facts/a-ledger.md", "facts/b-ledger.md"
    (cli.vault / "facts").mkdir()
    (cli.vault / older).write_text(LEDGER.format(created="2026-11-20T09:00:00Z", port=5000))
    (cli.vault / newer).write_text(LEDGER.format(created="2026-11-28T09:00:00Z", port=7070))
    cli("index")
    cli("link", newer, older, "--type", "contradicts")
    assert "confidence: 0.25" in (cli.vault / older).read_text("utf-8")
    return older, newer


@pytest.mark.parametrize("text", ["ledger", "which port does the ledger service listen on?"])
def test_keyword_query_puts_the_contradicting_later_fact_first_with_an_honest_score(
    cli: Cli, monkeypatch: pytest.MonkeyPatch, text: str
) -> None:
    monkeypatch.setenv("VAULTMEM_NOW", "2026-12-01T09:00:00Z")
    older, newer = _contradicting_facts(cli)
    hits = explain_hits(cli, text)
    paths = [h["path"] for h in hits]
    assert paths.index(newer) < paths.index(older), paths
    by = {h["path"]: h for h in hits}
    # Near-duplicates, about equally relevant: not shown as 0.000.
    assert by[newer]["score"] >= 0.9 * by[older]["score"] > 0
    if text == "ledger":  # two hits: the later one came in at the fusion floor, 0
        assert by[older]["explain"]["memory"]["contradicted_by"] == newer


def explain_hits(cli: Cli, text: str) -> list[dict[str, Any]]:
    out = cli("query", text, "-n", "5", "--explain", "--json").stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]


@pytest.mark.parametrize("text", ["stripe webhook", "redis cache", "deploy process"])
def test_query_scores_are_the_rank_order(
    cli: Cli, monkeypatch: pytest.MonkeyPatch, text: str
) -> None:
    monkeypatch.setenv("VAULTMEM_NOW", "2026-12-01T09:00:00Z")
    cli("index")
    hits = cli.json_lines("query", text, "-n", "10")
    scores = [h["score"] for h in hits]
    assert scores == sorted(scores, reverse=True), scores
    for hit in explain_hits(cli, text):
        memory = hit["explain"]["memory"]
        assert hit["score"] == pytest.approx(memory["score"], abs=1e-5)
        assert set(memory["factors"]) == {"recency", "confidence", "quality"}


# --- the note-lead lists and what the prior moved -------------------------------------------

DEEP = "The word appears only here, far below the opening: zanzibarite."


def test_the_lead_keyword_list_reads_title_and_opening_only(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VAULTMEM_EMBEDDER", "none")
    filler = "\n\n".join(f"Paragraph {i} says nothing in particular." for i in range(60))
    (cli.vault / "deep.md").write_text(f"# Deep note\n\n{filler}\n\n{DEEP}\n", "utf-8")
    (cli.vault / "lead.md").write_text("# Zanzibarite notes\n\nZanzibarite is a mineral.\n")
    cli("index")
    hits = explain_hits(cli, "zanzibarite")
    by = {h["path"]: h["explain"]["retrieval"] for h in hits}
    assert set(by) == {"deep.md", "lead.md"}
    assert by["deep.md"]["bm25:original"] is not None  # the whole note holds the word
    assert by["deep.md"]["bm25:lead"] is None  # its first 1,000 characters do not
    assert by["lead.md"]["bm25:lead"] == {"rank": 1, "score": by["lead.md"]["bm25:lead"]["score"]}
    assert [h["path"] for h in hits] == ["lead.md", "deep.md"]


def test_opening_keeps_whole_words() -> None:
    from vaultmem.index.lexical_schema import opening

    assert opening("short body", 100) == "short body"
    assert opening("alpha beta gamma", 8) == "alpha"  # "alpha be" would split "beta"
    assert opening("alpha beta gamma", 5) == "alpha"  # the cut falls on a space
    assert opening("x" * 50, 10) == "x" * 10  # one giant word: cut anyway


def test_an_index_built_before_the_lead_field_has_no_lead_hits(tmp_path: Path) -> None:
    # An index of an older schema (no lead field) answers the lead list with nothing,
    # not an error, until `index` rebuilds it.
    from whoosh import index as windex
    from whoosh.fields import ID, TEXT, Schema

    from vaultmem.index.lexical import LexicalIndex

    ix = windex.create_in(str(tmp_path), Schema(path=ID(stored=True, unique=True), text=TEXT))
    writer = ix.writer()
    writer.add_document(path="a.md", text="redis cache")
    writer.commit()
    old = LexicalIndex(ix, tmp_path)
    assert [h.path for h in old.search("redis", limit=5)] == ["a.md"]
    assert old.search("redis", limit=5, lead=True) == []


def test_the_note_lead_list_ranks_notes_by_their_first_fragment(embedded_example: Path) -> None:
    from vaultmem.index.records import fragment_map
    from vaultmem.inference.local import LocalEmbedder
    from vaultmem.retrieval.vsearch import VectorIndex

    config = build(embedded_example, {})
    embedder = LocalEmbedder()
    first: dict[str, int] = {}
    for held in fragment_map(config, embedder.max_chars).values():
        for path, ref in held:
            first[path] = min(ref.start_line, first.get(path, ref.start_line))
    vector = embedder.embed(["how do we recover when the cache primary fails"])
    with VectorIndex(config, embedder) as index:
        ((notes, leads),) = index.nearest_with_leads(vector, limit=10)
        assert index.nearest_many(vector, limit=10) == [notes]
    assert leads, "the nearest fragments include some notes' first fragments"
    # Each lead hit is its note's first fragment, scored by that fragment alone: never
    # above the note's best fragment, and in order.
    assert all(h.line == first[h.path] for h in leads)
    best = {h.path: h.score for h in notes}
    assert all(h.score <= best[h.path] + 1e-6 for h in leads if h.path in best)
    assert [h.score for h in leads] == sorted((h.score for h in leads), reverse=True)
    # A list of its own: a note whose best fragment is deep down ranks lower (or not at
    # all) by its lead.
    assert [h.path for h in leads] != [h.path for h in notes]


def test_query_fuses_the_four_lists_and_degrades_to_keywords(embedded_example: Path) -> None:
    from vaultmem.index.lexical import LexicalIndex
    from vaultmem.inference.local import LocalEmbedder
    from vaultmem.retrieval.query import query
    from vaultmem.retrieval.query_types import Backends, QueryOptions

    config = build(embedded_example, {})
    index = LexicalIndex.open(config.cache_dir)
    text = "how do we recover when the cache primary fails"
    full = query(config, text, backends=Backends(embedder=LocalEmbedder()), index=index)
    names = [s.name for s in full.lists]
    assert names == ["bm25:original", "bm25:lead", "vec:original", "vec:lead"]
    assert full.hits[0].path == "reference/Runbook - Redis failover.md"
    # Every list's parts add up to the fused score shown (its floor and spread are shown).
    specs = {s.name: s for s in full.lists}
    for trace in full.traces:
        assert trace.fused is not None
        parts = [
            specs[name].weight * specs[name].scale.lift(got.score)
            for name, got in trace.lists
            if got is not None
        ]
        assert trace.fused.score == pytest.approx(math.fsum(parts))
    # No vectors: the keyword lists alone, still fused, nothing raised.
    keywords = query(config, text, options=QueryOptions(), index=index)
    assert [s.name for s in keywords.lists] == ["bm25:original", "bm25:lead"]
    assert keywords.hits


def test_explain_shows_each_result_s_rank_and_score_before_and_after_the_prior(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VAULTMEM_NOW", "2026-12-01T09:00:00Z")
    monkeypatch.setenv("VAULTMEM_EMBEDDER", "none")
    cli("index")
    hits = explain_hits(cli, CACHING)
    moved = 0
    for rank, hit in enumerate(hits, start=1):
        memory = hit["explain"]["memory"]
        before, after = memory["before"], memory["after"]
        # Before: the order MMR left (the blend's, when nothing was demoted).
        assert before == hit["explain"]["blended"] or hit["explain"]["demoted"]
        # After: the score the result is ranked and shown by, and its rank (the what
        # route keeps the prior's order).
        assert after == {"rank": rank, "score": pytest.approx(memory["score"], abs=1e-6)}
        assert hit["score"] == pytest.approx(after["score"], abs=1e-5)
        moved += before["rank"] != after["rank"]
    assert moved  # the pinned Harbor hub and the superseded Memcached note move
    # The prior is bounded: it moves a score by at most its weight (+ half of it pinned),
    # a superseded note aside (it loses a full weight more).
    for hit in hits:
        memory = hit["explain"]["memory"]
        if not memory["superseded"]:
            assert abs(memory["score"] - memory["relevance"]) <= 0.2 * 1.5 + 1e-9


def test_query_and_surfacing_weigh_their_lists_as_measured(
    embedded_example: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from datetime import UTC, datetime

    import vaultmem.retrieval.query as query_module
    from vaultmem.agent import surface
    from vaultmem.index.lexical import LexicalIndex
    from vaultmem.inference.local import LocalEmbedder
    from vaultmem.retrieval.query_types import Backends, QueryOptions, QueryResult

    config = build(embedded_example, {})
    index = LexicalIndex.open(config.cache_dir)
    backends = Backends(embedder=LocalEmbedder())
    text = "how do we recover when the cache primary fails"
    real = query_module.query

    def weights(options: QueryOptions) -> dict[str, float]:
        found = real(config, text, backends=backends, options=options, index=index)
        return {spec.name: spec.weight for spec in found.lists}

    # query: the note leads 0.75, the best fragments' vectors 1.25 (BENCHMARKS.md, issue 30).
    assert weights(QueryOptions()) == {
        "bm25:original": 1.0,
        "bm25:lead": 0.75,
        "vec:original": 1.25,
        "vec:lead": 0.75,
    }
    assert set(weights(QueryOptions(weights=fusion.SURFACE_WEIGHTS)).values()) == {1.0}
    # Surfacing asks for its own: the real query runs, its options recorded on the way.
    asked: list[QueryOptions] = []

    def recorded(*args: Any, **kwargs: Any) -> QueryResult:
        asked.append(kwargs["options"])
        return real(*args, **kwargs)

    monkeypatch.setattr(query_module, "query", recorded)
    now = datetime(2026, 12, 1, 9, tzinfo=UTC)
    found = surface.candidates(config, text, now=now, index=index, backends=backends)
    assert found and [o.weights for o in asked] == [fusion.SURFACE_WEIGHTS]
