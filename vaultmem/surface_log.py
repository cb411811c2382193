"""The surfacing log: one JSON line per `surface` run, in ``<cache>/surface/log.jsonl``.

`surface` appends to it; `touch --session` reads which notes a session was shown (so a
use of a surfaced note confirms it) and `status` counts the runs. A cache file, so it
sits low, below the features that write and read it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from vaultmem.config import Config
from vaultmem.vault import make_cache

LOG_MAX_BYTES = 1_000_000
SURFACE_DIR = "surface"


def log_path(config: Config) -> Path:
    """The surfacing log: one JSON line per `surface` run."""
    return config.cache_dir / SURFACE_DIR / "log.jsonl"


def append_run(config: Config, line: dict[str, Any]) -> None:
    """Append one run to the log, keeping one older generation past ``LOG_MAX_BYTES``."""
    path = log_path(config)
    make_cache(config.cache_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        if path.stat().st_size > LOG_MAX_BYTES:
            os.replace(path, path.with_suffix(".jsonl.1"))  # keep one older generation
    except FileNotFoundError:
        pass
    # One write of one line in append mode: concurrent hooks do not interleave lines.
    with path.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(line, ensure_ascii=False) + "\n")


def log_count(config: Config) -> int:
    """How many runs the surfacing log holds (both generations)."""
    total = 0
    for path in (log_path(config), log_path(config).with_suffix(".jsonl.1")):
        try:
            with path.open("rb") as fh:
                total += sum(1 for _ in fh)
        except OSError:
            continue
    return total


def surfaced_in_session(config: Config, session: str) -> frozenset[str]:
    """The notes `surface` showed in ``session``, from the surfacing log (both of its
    generations); an unreadable line or log counts as nothing surfaced."""
    current = log_path(config)
    found: set[str] = set()
    for path in (current.with_suffix(".jsonl.1"), current):
        try:
            lines = path.read_text("utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            continue
        for line in lines:
            found.update(_session_notes(line, session))
    return frozenset(found)


def _session_notes(line: str, session: str) -> list[str]:
    """The notes of one log line when it belongs to ``session``."""
    try:
        run = json.loads(line)
    except ValueError:
        return []
    if not isinstance(run, dict) or run.get("session") != session:
        return []
    notes = run.get("notes")
    return [n for n in notes if isinstance(n, str)] if isinstance(notes, list) else []


def runs(config: Config) -> list[dict[str, Any]]:
    """Every run the surfacing log holds (the older generation first), each as written:
    ``{"time", "session", "notes", ...}``; unreadable lines are left out."""
    current = log_path(config)
    found: list[dict[str, Any]] = []
    for path in (current.with_suffix(".jsonl.1"), current):
        try:
            lines = path.read_text("utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            continue
        for line in lines:
            try:
                run = json.loads(line)
            except ValueError:
                continue
            if isinstance(run, dict) and isinstance(run.get("notes"), list):
                found.append(run)
    return found
