"""The merge driver is git's merge on the user's part, and vaultmem's rules on its own keys
(issue 29): for three versions of a note with random edits (tests/merge_triples.py), the
driver's result without vaultmem's lines is byte for byte what ``git merge-file`` makes of
the user's edits alone, it is clean exactly when git's is, and vaultmem's keys come out as
:func:`vaultmem.gitmerge.rules.merge_owned` merges them, in ours' order.

`python benchmarks/bench_git_merge.py --property N` runs the same comparison on many
more triples."""

from __future__ import annotations

import shutil

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from merge_triples import Triple, git_merge, triple, user_lines

from vaultmem.frontmatter.scan import parse_meta
from vaultmem.gitmerge.driver import merge_note
from vaultmem.gitmerge.rules import merge_owned

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def _owned(text: bytes, names: frozenset[str]) -> dict:
    meta, _ = parse_meta(text, "x.md")
    return {k: v for k, v in meta.items() if k in names}


def _order(text: bytes, names: frozenset[str]) -> list[str]:
    return [k for k in parse_meta(text, "x.md")[0] if k in names]


def check(t: Triple, style: str = "merge") -> None:
    """The driver against git on one triple (the assertions of the property)."""
    result = merge_note(t.base, t.ours, t.theirs, "x.md", style=style)
    expected, regions = git_merge(t.ours_user, t.base, t.theirs_user, style)
    assert not result.fallback, result.fallback
    assert user_lines(result.text, t.owned_names) == user_lines(expected, t.owned_names)
    assert result.clean == (regions == 0), result.conflicts
    if regions:
        return
    merged = merge_owned(*(_owned(x, t.owned_names) for x in (t.base, t.ours, t.theirs)))
    assert not merged.conflicts
    got = _owned(result.text, t.owned_names)
    assert got == merged.values
    kept = [k for k in _order(t.ours, t.owned_names) if k in got]
    assert _order(result.text, t.owned_names)[: len(kept)] == kept  # ours' order


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rng=st.randoms(use_true_random=False), style=st.sampled_from(["merge", "diff3"]))
def test_the_driver_merges_the_users_part_as_git_and_owned_keys_by_the_rules(rng, style) -> None:
    check(triple(rng), style)
