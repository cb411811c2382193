"""The best line a hit shows: one rule, answered alike by a one-shot scan and by the
warm server's per-note line maps."""

from __future__ import annotations

import os
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from vaultmem.index.analysis import query_terms
from vaultmem.retrieval.search import SnippetCache, note_snippet
from vaultmem.retrieval.snippets import LineMap, best_line

WORDS = ["redis", "cache", "caching", "cached", "copy", "copies", "hope", "hoping", "files"]
WORDS += ["file", "# Redis", "---", "", "  ", "Ünïcode", "the", "İstanbul", "deploy"]
line = st.lists(st.sampled_from(WORDS), max_size=6).map(" ".join)


@settings(max_examples=300, deadline=None)
@given(
    lines=st.lists(line, max_size=25),
    query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join),
    first=st.integers(min_value=1, max_value=5),
)
def test_a_line_map_picks_the_line_the_scan_picks(lines: list[str], query: str, first: int) -> None:
    terms = query_terms(query)
    assert LineMap.build(lines, first).best(terms) == best_line(lines, terms, first_line=first)


def test_the_cache_answers_from_the_current_file(tmp_path: Path) -> None:
    note = tmp_path / "n.md"
    note.write_text("---\ntype: note\n---\n# Title\n\nredis is a cache\n", "utf-8")
    cache = SnippetCache(size=2)
    terms = query_terms("redis cache")
    assert cache.snippet(tmp_path, "n.md", terms) == note_snippet(tmp_path, "n.md", terms)
    assert cache.snippet(tmp_path, "n.md", terms).line == 6
    # An edit (new size and mtime) is read again, never answered from the old map.
    note.write_text("---\ntype: note\n---\n# Title\n\nnothing\n\nredis cache here\n", "utf-8")
    os.utime(note, ns=(1, 1))
    assert cache.snippet(tmp_path, "n.md", terms).line == 8
    # Bounded: the least recently used map goes first.
    for name in ("a.md", "b.md"):
        (tmp_path / name).write_text("redis\n", "utf-8")
        cache.snippet(tmp_path, name, terms)
    assert len(cache._maps) == 2 and str(note) not in cache._maps
    assert cache.snippet(tmp_path, "gone.md", terms).text == ""
