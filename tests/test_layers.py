"""Each layer only looks down: stores know no search options, retrieval knows no write
paths, the core API knows no front end, and no front end is imported by another layer."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "vaultmem"

# A module under the first prefix may not import anything under the second.
FORBIDDEN = [
    ("vaultmem.model", "vaultmem.index"),
    ("vaultmem.model", "vaultmem.retrieval"),
    ("vaultmem.index", "vaultmem.retrieval"),
    ("vaultmem.index", "vaultmem.memory"),
    ("vaultmem.index", "vaultmem.embedding"),
    ("vaultmem.retrieval", "vaultmem.memory."),
    ("vaultmem.retrieval", "vaultmem.embedding"),
    ("vaultmem.retrieval", "vaultmem.agent"),
    ("vaultmem.memory_state", "vaultmem.memory."),
    ("vaultmem.memory_state", "vaultmem.retrieval"),
    ("vaultmem.api", "vaultmem.cli"),
    ("vaultmem.api", "vaultmem.servers"),
]
CORE = ["vaultmem.index", "vaultmem.retrieval", "vaultmem.memory", "vaultmem.agent", "vaultmem.api"]
FRONT_ENDS = ["vaultmem.cli", "vaultmem.servers"]


def _imports() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                names.add(node.module)
                names.update(f"{node.module}.{a.name}" for a in node.names)
            elif isinstance(node, ast.Import):
                names.update(a.name for a in node.names)
        found[module] = {n for n in names if n.startswith("vaultmem")}
    return found


def _under(name: str, prefix: str) -> bool:
    return (
        name.startswith(prefix)
        if prefix.endswith(".")
        else (name == prefix or name.startswith(prefix + "."))
    )


@pytest.mark.parametrize(("lower", "upper"), FORBIDDEN)
def test_layer_looks_only_down(lower: str, upper: str) -> None:
    wrong = {
        f"{module} imports {name}"
        for module, names in _imports().items()
        if _under(module, lower)
        for name in names
        if _under(name, upper)
    }
    assert not wrong, sorted(wrong)


def test_no_core_module_imports_a_front_end() -> None:
    wrong = {
        f"{module} imports {name}"
        for module, names in _imports().items()
        if any(_under(module, core) for core in CORE)
        for name in names
        if any(_under(name, front) for front in FRONT_ENDS)
    }
    assert not wrong, sorted(wrong)


def test_the_checker_sees_imports() -> None:
    # The rules above pass vacuously if the walk finds nothing.
    imports = _imports()
    assert "vaultmem.model" in imports["vaultmem.index.lexical"]
    assert "vaultmem.retrieval.search" in {n for n in imports["vaultmem.api"]}
