"""Every declared dependency has its role: deptry passes on the tree, fails on a dependency
nothing imports and on an import nothing declares, and the README's table of what each
dependency is for names exactly the packages pyproject.toml declares."""

from __future__ import annotations

import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
# What deptry scans (pyproject's [tool.deptry] excludes the rest).
SCANNED = ("vaultmem", "tests", "benchmarks")


def _deptry(root: Path) -> subprocess.CompletedProcess[str]:
    if shutil.which("deptry") is None and not _has_module("deptry"):
        pytest.skip("deptry is not installed (it comes with the test extras)")
    return subprocess.run(
        ["bash", str(REPO / ".ci" / "deptry"), str(root)],
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,  # deptry reports on stderr
        text=True,
        timeout=120,
    )


def _has_module(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


def _copy(tmp_path: Path) -> Path:
    """The project's pyproject and scanned folders, copied (no venvs, no caches)."""
    root = tmp_path / "project"
    root.mkdir()
    shutil.copy2(REPO / "pyproject.toml", root / "pyproject.toml")
    ignore = shutil.ignore_patterns("__pycache__", ".vaultmem", "*.pyc")
    for name in SCANNED:
        shutil.copytree(REPO / name, root / name, ignore=ignore, symlinks=True)
    return root


def _declared(pyproject: str) -> list[str]:
    return tomllib.loads(pyproject)["project"]["dependencies"]


def _name(requirement: str) -> str:
    """A requirement's distribution name, normalised as PEP 503 does."""
    match = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement)
    assert match, requirement
    return re.sub(r"[-_.]+", "-", match.group()).lower()


def test_deptry_passes_on_the_tree() -> None:
    result = _deptry(REPO)
    assert result.returncode == 0, result.stdout


def test_a_dependency_nothing_imports_fails(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    pyproject = root / "pyproject.toml"
    text = pyproject.read_text("utf-8")
    # A real installed package (pytest's own dependency) that no module of ours imports.
    pyproject.write_text(text.replace('"typer>=0.29,<1",', '"typer>=0.29,<1",\n  "pluggy",'))
    assert "pluggy" in [_name(r) for r in _declared(pyproject.read_text("utf-8"))]
    result = _deptry(root)
    assert result.returncode == 1
    assert "DEP002 'pluggy' defined as a dependency but not used" in result.stdout


def test_an_import_nothing_declares_fails(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    (root / "vaultmem" / "undeclared.py").write_text("import pluggy  # noqa: F401\n")
    result = _deptry(root)
    assert result.returncode == 1
    assert "vaultmem/undeclared.py:1:8: DEP003 'pluggy' imported but it is a transitive" in (
        result.stdout
    )


def test_a_dropped_dependency_that_is_imported_fails(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    pyproject = root / "pyproject.toml"
    text = pyproject.read_text("utf-8")
    pyproject.write_text(text.replace('  "watchfiles>=0.21",\n', ""))
    result = _deptry(root)
    assert result.returncode == 1
    assert "'watchfiles' imported but" in result.stdout


def _readme_table() -> dict[str, str]:
    """The README's "What it is built on" table: package → its job."""
    text = (REPO / "README.md").read_text("utf-8")
    section = text.split("## What it is built on", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 2 and cells[0] not in ("package", "---") and line.startswith("|"):
            rows[_name(cells[0])] = cells[1]
    return rows


def test_readme_lists_every_dependency_and_only_those() -> None:
    declared = {_name(r) for r in _declared((REPO / "pyproject.toml").read_text("utf-8"))}
    table = _readme_table()
    assert set(table) == declared, (
        f"missing from README: {sorted(declared - set(table))}; "
        f"not declared: {sorted(set(table) - declared)}"
    )
    assert all(job for job in table.values())


def test_python_frontmatter_is_not_a_dependency_and_the_docs_say_why() -> None:
    declared = {_name(r) for r in _declared((REPO / "pyproject.toml").read_text("utf-8"))}
    assert "python-frontmatter" not in declared
    how = (REPO / "docs" / "how-it-works.md").read_text("utf-8")
    assert "## Frontmatter, read and written by hand" in how
    assert "python-frontmatter" in how
