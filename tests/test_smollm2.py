"""`query` expansion end to end against a real local chat model (SmolLM2 on llama.cpp)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import Cli
from tests.llama_server import MODEL
from vaultmem.config import build
from vaultmem.inference.llm import LLMClient, LLMConfig
from vaultmem.retrieval import fusion
from vaultmem.retrieval.expansion import EXPANSION_SCHEMA, expand

pytestmark = pytest.mark.slow  # a real llama.cpp chat endpoint (SmolLM2)


@pytest.fixture
def llm_vault(vault: Path, smollm2_url: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("VAULTMEM_LLM_URL", smollm2_url)
    monkeypatch.setenv("VAULTMEM_LLM_MODEL", MODEL)
    monkeypatch.setenv("VAULTMEM_RERANK_URL", "")  # keep the LLM for expansion only here
    monkeypatch.setenv("VAULTMEM_QUERY_EXPAND", "1")  # opt-in (SmolLM2 costs MRR: BENCHMARKS)
    Cli(vault)("index")
    return vault


def test_the_schema_makes_a_tiny_model_answer_in_shape(smollm2_url: str, vault: Path) -> None:
    client = LLMClient(LLMConfig(url=smollm2_url, model=MODEL, timeout=120))
    expansion = expand(build(vault, {}), client, "redis cache invalidation")
    assert client.json_mode_supported is True
    assert expansion.lexical or expansion.semantic  # variants came back, parsed
    assert all(isinstance(v, str) and v.strip() for v in expansion.lexical + expansion.semantic)
    assert set(EXPANSION_SCHEMA["required"]) == {"lexical", "semantic", "hypothetical"}  # type: ignore[arg-type]


def test_query_expands_with_smollm2_end_to_end(llm_vault: Path) -> None:
    cli = Cli(llm_vault)
    # An --intent always expands (no strong-signal bypass) and keeps the run deterministic.
    out = cli(
        "query",
        "why did we pick it for sessions",
        "--intent",
        "cache choice",
        "--no-rerank",
        "--explain",
        "--json",
        "-n",
        "5",
    )
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    assert lines, out.stderr
    explain = lines[0]["explain"]
    stages = {s["stage"]: s for s in explain["stages"]}
    assert stages["expansion"]["status"] == "ran", stages["expansion"]
    # The original query's lists: whole note and lead, for keywords and for vectors.
    own = (":original", ":lead", ":intent")
    variants = [spec for spec in explain["lists"] if not spec["name"].endswith(own)]
    assert variants, explain["lists"]  # the model's variants were searched too
    kind = {"bm25": fusion.QUERY_WEIGHTS.bm25, "vec": fusion.QUERY_WEIGHTS.vector}
    for spec in variants:  # each weighs a share of its kind's original list
        assert spec["weight"] == fusion.VARIANT_SHARE * kind[spec["name"].split(":")[0]]
    cached = list((llm_vault / ".vaultmem").rglob("expand-*.json"))
    assert cached and json.loads(cached[0].read_text())["model"] == MODEL
    # Answered from the cache the second time: same lists, no second model call needed.
    again = cli(
        "query",
        "why did we pick it for sessions",
        "--intent",
        "cache choice",
        "--no-rerank",
        "--explain",
        "--json",
        "-n",
        "5",
    )
    assert json.loads(again.stdout.splitlines()[0])["explain"]["lists"] == explain["lists"]


def test_llm_reranking_with_smollm2_does_not_break_query(llm_vault: Path) -> None:
    # SmolLM2 as the fallback reranker: whatever it scores, query answers with results.
    hits = Cli(llm_vault).json_lines(
        "query", "redis failover runbook", "-n", "3", "--candidates", "5"
    )
    assert hits and len(hits) <= 3
    (live,) = (llm_vault / ".vaultmem").glob("whoosh-*")
    shutil.rmtree(live)  # and a lost index is one clear error
    failed = Cli(llm_vault)("query", "redis", ok=False)
    assert failed.exit_code == 1 and "vaultmem index" in failed.stderr
