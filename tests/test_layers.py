"""Each layer only looks down, and no two modules import each other: the import-linter
contracts in pyproject.toml hold, and an import that breaks them is caught.

The contracts are the one statement of the layers (front ends over the API over features
over retrieval over stores and models over core values); these tests run `lint-imports`
on the package as it is, and on a copy with one wrong import planted, so a contract that
stopped checking anything would fail here too.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _lint(root: Path) -> subprocess.CompletedProcess[str]:
    """`lint-imports` over the package under ``root`` (its own pyproject.toml)."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_layer_contracts_hold() -> None:
    done = _lint(REPO)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Layers look down only KEPT" in done.stdout
    assert "No import cycles KEPT" in done.stdout


def _planted(tmp_path: Path, module: str, line: str) -> Path:
    """A copy of the package and its contracts with ``line`` appended to ``module``."""
    shutil.copytree(
        REPO / "vaultmem", tmp_path / "vaultmem", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    path = tmp_path / Path(*module.split(".")).with_suffix(".py")
    path.write_text(path.read_text("utf-8") + f"\n{line}  # noqa\n", "utf-8")
    return tmp_path


@pytest.mark.parametrize(
    ("module", "line", "broken"),
    [
        # A formula that reaches up into retrieval.
        ("vaultmem.scores", "import vaultmem.retrieval.search", "vaultmem.scores is not allowed"),
        # A store that knows a front end.
        ("vaultmem.index.manifest", "import vaultmem.cli", "vaultmem.index is not allowed"),
        # A server that uses the CLI's wording (only the forwarder may run the CLI).
        ("vaultmem.servers.rest", "import vaultmem.cli", "vaultmem.servers is not allowed"),
        # Two features importing each other.
        ("vaultmem.memory.notes", "import vaultmem.agent.surface", "No import cycles BROKEN"),
    ],
)
def test_a_planted_wrong_import_breaks_a_contract(
    tmp_path: Path, module: str, line: str, broken: str
) -> None:
    done = _lint(_planted(tmp_path, module, line))
    assert done.returncode != 0, done.stdout
    assert broken in done.stdout, done.stdout
