"""Import Whoosh without the modules it names but never uses (urllib, asyncio, morph_en).

``whoosh.compat`` imports ``urllib.request`` (http.client, email, ssl: ~20 ms) for a
``urlretrieve`` nothing in Whoosh calls, ``whoosh.reading`` takes ``cached_property``
from the PyPI package of that name, which imports asyncio (~15 ms) for coroutine support
Whoosh does not use, and ``whoosh.query.terms`` imports ``whoosh.lang.morph_en``, which
compiles 55 regular expressions (~19 ms) for a ``Variations`` query vaultmem never builds.
A keyword search pays all three on every start. Within :func:`light_imports` those names
resolve to stand-ins (the standard library's ``functools.cached_property``, and a
``urlretrieve`` and a ``variations`` that import the real ones when called); the
stand-ins are gone from ``sys.modules`` afterwards, so anything imported later gets the
real modules.
"""

from __future__ import annotations

import functools
import sys
import types
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


def _urlretrieve(*args: Any, **kwargs: Any) -> Any:
    from urllib.request import urlretrieve

    return urlretrieve(*args, **kwargs)


def _variations(word: str) -> Any:
    import importlib

    return importlib.import_module("whoosh.lang.morph_en").variations(word)


def _stand_ins() -> dict[str, types.ModuleType]:
    request = types.ModuleType("urllib.request")
    request.urlretrieve = _urlretrieve  # type: ignore[attr-defined]
    cached = types.ModuleType("cached_property")
    cached.cached_property = functools.cached_property  # type: ignore[attr-defined]
    morph = types.ModuleType("whoosh.lang.morph_en")
    morph.variations = _variations  # type: ignore[attr-defined]
    return {"urllib.request": request, "cached_property": cached, "whoosh.lang.morph_en": morph}


# The Whoosh modules that import what the stand-ins replace; once all are loaded, no
# stand-in is needed.
_IMPORTERS = ("whoosh.compat", "whoosh.reading", "whoosh.query.terms")


@contextmanager
def light_imports() -> Iterator[None]:
    """Within: Whoosh's first import finds the stand-ins (not when the real modules are
    already loaded, or Whoosh is)."""
    if all(name in sys.modules for name in _IMPORTERS):
        yield
        return
    added = {name: mod for name, mod in _stand_ins().items() if name not in sys.modules}
    sys.modules.update(added)
    try:
        yield
    finally:
        for name, mod in added.items():
            if sys.modules.get(name) is mod:
                del sys.modules[name]
