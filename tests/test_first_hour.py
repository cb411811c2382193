"""A new user's first hour with a vault of their own (issue 32): an empty vault indexes,
the stale hint speaks only of notes, the vault found upward wins over the default,
excludes add to the defaults, hooks name an absolute vault, and a name that finds no
note says which ones it could mean."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import Cli
from typer.testing import CliRunner

from vaultmem.cli import app


def _run(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None):  # noqa: ANN202
    """The CLI in process, from ``cwd`` (the test's folder is put back after)."""
    here = Path.cwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        return CliRunner().invoke(app, list(args), env=env)
    finally:
        os.chdir(here)


# --- 1. a new, empty vault ---------------------------------------------------------------


@pytest.mark.usefixtures("vectors_on")
def test_a_new_empty_vault_indexes_embeds_and_searches(tmp_path: Path) -> None:
    """`init NEW && --vault NEW index && --vault NEW hooks install --claude --dry-run`:
    the README's quick start for a vault of one's own, on an empty folder."""
    new = tmp_path / "NEW"
    assert _run("init", str(new)).exit_code == 0
    done = _run("--vault", str(new), "index")
    assert done.exit_code == 0, done.output
    assert "0 added" in done.stdout and "0 fragments embedded" in done.stdout
    assert _run("--vault", str(new), "embed").exit_code == 0
    for command in ("search", "vsearch", "query"):
        found = _run("--vault", str(new), command, "anything")
        assert found.exit_code == 0, (command, found.output)
        assert "no results" in found.stderr
        assert "run `vaultmem" not in found.stderr  # nothing to run: the vault is empty
    hooks = _run("--vault", str(new), "hooks", "install", "--claude", "--dry-run")
    assert hooks.exit_code == 0, hooks.output
    assert f"--vault {new.resolve()} hook prompt" in hooks.stdout
    # The first note then is found by every mode.
    (new / "first.md").write_text("# First note\n\nThe quokka lives on Rottnest.\n", "utf-8")
    assert _run("--vault", str(new), "index").exit_code == 0
    assert "first.md" in _run("--vault", str(new), "vsearch", "quokka").stdout


@pytest.mark.usefixtures("vectors_on")
def test_a_vault_never_indexed_still_says_so(tmp_path: Path) -> None:
    new = tmp_path / "NEW"
    _run("init", str(new))
    (new / "a.md").write_text("# A\n\nalpha\n", "utf-8")
    for command in (["embed"], ["search", "alpha"]):
        done = _run("--vault", str(new), *command)
        assert done.exit_code == 1 and "not indexed yet" in done.stderr, done.output
