"""Without a server, a command imports only what it uses (issue 11, item 4).

Whole processes under ``python -X importtime``: what a keyword search loads is what the
start-up budget pays for (``benchmarks/bench_startup.py`` measures the time).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_vaultmem

# Never on a keyword search: pydantic (typer's coercion), YAML (search parses no note),
# asyncio/urllib/morph_en (Whoosh's unused imports), the vector stack, other commands'
# modules.
NOT_FOR_SEARCH = (
    "pydantic",
    "yaml",
    "asyncio",
    "urllib.request",
    "whoosh.lang.morph_en",
    "numpy",
    "chromadb",
    "onnxruntime",
    "vaultmem.cli.memory_cmds",
    "vaultmem.cli.index_cmds",
)


def _imports(*args: str, stdin: str | None = None) -> tuple[set[str], str]:
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "vaultmem", *args],
        capture_output=True,
        text=True,
        input=stdin,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    names = {
        line.rsplit("|", 1)[1].strip()
        for line in done.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }
    return names, done.stdout


@pytest.fixture
def indexed(vault: Path) -> Path:
    """The example vault, keyword-indexed."""
    assert run_vaultmem(vault, "index").returncode == 0
    return vault


def test_keyword_search_imports_only_what_it_uses(indexed: Path) -> None:
    names, out = _imports("--vault", str(indexed), "search", "redis cache", "-n", "3")
    assert "Redis for caching" in out
    assert "whoosh.reading" in names  # what it does use
    assert sorted(m for m in NOT_FOR_SEARCH if m in names) == []


def test_hook_prompt_imports_no_pydantic(indexed: Path) -> None:
    payload = {
        "session_id": "s1",
        "transcript_path": str(indexed / "none.jsonl"),
        "cwd": str(indexed),
        "hook_event_name": "UserPromptSubmit",
        "prompt": "The redis cache serves stale sessions after a deploy; how do we invalidate it?",
    }
    names, out = _imports("--vault", str(indexed), "hook", "prompt", stdin=json.dumps(payload))
    assert "Redis for caching" in out
    # (YAML it may use: the passages it quotes are cut from the notes' text.)
    assert sorted(m for m in ("pydantic", "asyncio", "chromadb") if m in names) == []


def test_whoosh_stand_ins_leave_the_real_modules_importable() -> None:
    code = (
        "import sys\n"
        "import vaultmem.index.lexical\n"
        "assert 'urllib.request' not in sys.modules and 'cached_property' not in sys.modules\n"
        "assert 'whoosh.lang.morph_en' not in sys.modules\n"
        "import urllib.request, cached_property\n"
        "assert callable(urllib.request.urlopen) and callable(cached_property.cached_property)\n"
        "from whoosh.query import terms\n"
        "assert 'ran' in terms.variations('running')\n"
        "print('ok')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.stdout.strip() == "ok", done.stderr
