"""An index written by an earlier vaultmem opens after an upgrade.

Whoosh pickles the schema into the index's table of contents by class path. The schema's
classes moved from ``vaultmem.index.lexical`` to ``vaultmem.index.lexical_schema``; an
index written before names the old paths, and reading it must not call it damaged.
(Checked end to end once: example-vault indexed by 052d865, then searched by this code.)
"""

from __future__ import annotations

import pickle

import pytest

from vaultmem.index import lexical_schema

OLD_MODULE = "vaultmem.index.lexical"


@pytest.mark.parametrize("name", ["WeightedText", "LexicalCodec"])
def test_the_old_class_paths_still_unpickle(name: str) -> None:
    # A protocol-0 pickle of a class is its module and name: what an old TOC holds.
    found = pickle.loads(f"c{OLD_MODULE}\n{name}\n.".encode())
    assert found is getattr(lexical_schema, name)
