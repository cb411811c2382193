"""Start a real local server process for a test session and wait until it answers."""

from __future__ import annotations

import json
import socket
import subprocess
import time
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def answers(url: str, ready: Callable[[Any], bool]) -> bool:
    """Whether GET ``url`` returns JSON that ``ready`` accepts."""
    try:
        with urllib.request.urlopen(url, timeout=1) as resp:
            return bool(ready(json.load(resp)))
    except (OSError, ValueError):
        return False


@contextmanager
def running(
    name: str,
    command: list[str],
    probe: str,
    ready: Callable[[Any], bool],
    *,
    log_path: Path,
    timeout: float,
    env: Mapping[str, str] | None = None,
) -> Iterator[None]:
    """Run ``command`` until the block ends; fail the test if ``probe`` never gets ready.

    Output goes to ``log_path`` (a file, not a pipe nobody reads, which could fill and
    block the server); its tail is shown when the process dies or never answers.
    """
    with log_path.open("w") as log_file:
        proc = subprocess.Popen(
            command,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            env=None if env is None else dict(env),
        )
        deadline = time.monotonic() + timeout
        try:
            while not answers(probe, ready):
                if proc.poll() is not None:
                    tail = log_path.read_text(errors="replace")[-2000:]
                    pytest.fail(f"{name} exited with {proc.returncode}: {tail}")
                if time.monotonic() > deadline:
                    pytest.fail(f"{name} did not answer within {timeout:g}s")
                time.sleep(0.1)
            yield
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
