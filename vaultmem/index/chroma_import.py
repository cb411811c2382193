"""Import chromadb without decoding the same bytecode hundreds of times, and without
httpx's command-line client.

chromadb marks about fifty methods with the ``overrides`` package's ``@override``. At each
one, ``overrides`` finds the class's base classes by disassembling the code of the
module being executed, from its first instruction up to the current one
(``dis.get_instructions(frame.f_code)``): a module with many marked methods is decoded
again for every one of them, about a tenth of a second of a one-shot `query`. Within
:func:`fast_overrides` ``overrides`` sees a ``dis`` whose ``get_instructions`` returns each
code object's instructions decoded once; the checks themselves run unchanged.

chromadb imports httpx, whose package imports its own command-line client
(``httpx._main``: click, rich, pygments; about 50 ms) only to offer ``httpx.main``. While
chromadb is first imported that module is unavailable, so httpx falls back to the stub
``main`` it defines for installs without the CLI extra; nothing in vaultmem or chromadb
calls it.
"""

from __future__ import annotations

import dis
import sys
import types
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


def _cached_dis() -> types.ModuleType:
    decoded: dict[Any, tuple[dis.Instruction, ...]] = {}

    def get_instructions(code: Any, **kwargs: Any) -> tuple[dis.Instruction, ...]:
        if kwargs:
            return tuple(dis.get_instructions(code, **kwargs))
        found = decoded.get(code)
        if found is None:
            found = decoded[code] = tuple(dis.get_instructions(code))
        return found

    shim = types.ModuleType("dis")
    shim.__dict__.update({k: v for k, v in vars(dis).items() if not k.startswith("__")})
    shim.get_instructions = get_instructions  # type: ignore[attr-defined]
    return shim


@contextmanager
def _without_httpx_cli() -> Iterator[None]:
    if "httpx" in sys.modules:
        yield
        return
    # A None entry makes the import fail, and httpx falls back to its stub.
    sys.modules["httpx._main"] = None  # type: ignore[assignment]
    try:
        yield
    finally:
        if sys.modules.get("httpx._main", 0) is None:
            del sys.modules["httpx._main"]


@contextmanager
def light_chromadb() -> Iterator[None]:
    """Within: chromadb's first import skips the repeated disassembly and httpx's CLI."""
    with fast_overrides(), _without_httpx_cli():
        yield


@contextmanager
def fast_overrides() -> Iterator[None]:
    """Within: ``overrides`` decodes each code object once (a no-op when chromadb is
    already imported, or ``overrides`` is not installed)."""
    if "chromadb" in sys.modules:
        yield
        return
    try:
        import overrides.overrides  # noqa: F401
    except ImportError:
        yield
        return
    # Not `import … as`: the package's `overrides` function shadows the module's name.
    checker = sys.modules["overrides.overrides"]
    real = getattr(checker, "dis", None)
    if real is not dis:
        yield  # another version of the package: leave it alone
        return
    checker.dis = _cached_dis()  # type: ignore[attr-defined]
    try:
        yield
    finally:
        checker.dis = real  # type: ignore[attr-defined]
