"""The warm search path (vaultmem.index.impact) answers exactly as Whoosh does.

A LexicalIndex opened ``fast`` scores queries from postings cached as arrays; every hit,
its score (float for float) and the order must be Whoosh's, for any mix of words, prefix
words and filters, on an index whose segments hold deleted notes and have been merged.
"""

from __future__ import annotations

import random
import re
import shutil
from pathlib import Path

import pytest

from vaultmem.api import OpenVault
from vaultmem.config import build
from vaultmem.index.analysis import query_terms
from vaultmem.index.impact import ImpactIndex, PostingStore
from vaultmem.index.lexical import (
    LexicalHit,
    LexicalIndex,
    _filter,
    _mask,
    build_lead_query,
    build_query,
)
from vaultmem.index.whoosh_light import light_imports
from vaultmem.indexer import index_vault
from vaultmem.model import HIDDEN_STATUSES, Filters

with light_imports():
    from whoosh import query as q

TYPES = ("note", "decision", "research", "observation")
STATUSES = ("active", "active", "active", "archived", "forgotten", "superseded")
FOLDERS = ("gen", "gen/deep", "gen/other", "decisions")
TAGS = ("ops", "ops/deploy", "db", "db/postgres", "team")


def _vocabulary(vault: Path) -> list[str]:
    words: set[str] = set()
    for note in vault.rglob("*.md"):
        words.update(re.findall(r"[a-z]{3,12}", note.read_text("utf-8").lower()))
    return sorted(words)


def _note(rng: random.Random, words: list[str], n: int) -> str:
    common = words[: max(20, len(words) // 20)]  # a few words most notes share: long postings
    body = " ".join(rng.choice(common if rng.random() < 0.4 else words) for _ in range(30 + n % 90))
    tags = ", ".join(rng.sample(TAGS, rng.randint(0, 2)))
    heading = " ".join(rng.sample(words, 2))
    return (
        f"---\ntype: {rng.choice(TYPES)}\nstatus: {rng.choice(STATUSES)}\ntags: [{tags}]\n---\n"
        f"# {rng.choice(words).title()} {n}\n\n## {heading}\n\n{body}\n"
    )


def _write_notes(vault: Path, rng: random.Random, words: list[str], count: int, start: int) -> None:
    for n in range(start, start + count):
        folder = vault / rng.choice(FOLDERS)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"gen note {n}.md").write_text(_note(rng, words, n), "utf-8")


def _queries(rng: random.Random, words: list[str], count: int) -> list[tuple[str, Filters, int]]:
    """Random word mixes, prefix words, unknown words and stop words, with filters."""
    out = []
    for i in range(count):
        kind = i % 6
        if kind == 0:
            text = rng.choice(words)[: rng.randint(2, 4)]  # type-ahead: "pgb", "dep"
        elif kind == 1:
            text = " ".join(rng.sample(words, rng.randint(2, 3))) + " " + rng.choice(words)[:4]
        elif kind == 2:
            text = rng.choice(words) + "zq"  # a word the vault lacks: prefix matches only
        elif kind == 3:
            text = "the of and " + rng.choice(words)
        else:
            text = " ".join(
                rng.choice(words[:60] if rng.random() < 0.5 else words)
                for _ in range(rng.randint(1, 8))
            )
        filters = rng.choice(
            (
                Filters(),
                Filters(),
                Filters(folder=rng.choice(FOLDERS)),
                Filters(tag=rng.choice(TAGS)),
                Filters(type=rng.choice(TYPES)),
                Filters(status=rng.choice(STATUSES)),
                Filters(folder="gen", tag="ops", status="active"),
            )
        )
        out.append((text, filters, rng.choice((1, 3, 10, 30, 200))))
    return out


def _answers(hits: list[LexicalHit]) -> list[tuple[str, float, str, str]]:
    return [(h.path, h.score, h.title, h.status) for h in hits]


def _whoosh_answers(
    index: LexicalIndex, text: str, limit: int, filters: Filters, lead: bool
) -> list[tuple[str, float, str, str]]:
    """What Whoosh scores for a search, every match collected (``limit=None``: no
    pruning), best first and equal scores by path: the BM25F the fast path must give.

    Not ``LexicalIndex.search``'s Whoosh path: its top-k collector swaps union matchers
    for intersections once a minimum score is known, and those can add a document's
    terms wrongly (on the 15,926-note vault, "print python3 version information" scores
    man1/xmlsec1-config.1.md 11.19 there, 17.54 when every match is collected, and
    leaves it out of the top 10).
    """
    query = build_lead_query(text) if lead else build_query(text, index._prefixed)
    if query is None:
        return []
    searcher = index.searcher()
    results = searcher.search(query, limit=None, filter=_filter(filters), mask=_mask(filters))
    hits = [(r["path"], float(r.score), r["title"], r["status"]) for r in results]
    return sorted(hits, key=lambda h: (-h[1], h[0]))[:limit]


def _assert_same(fast: LexicalIndex, whoosh: LexicalIndex, queries: list) -> int:
    """Every query's hits from both: same paths, order, stored fields and scores
    (exactly: the sums are Whoosh's, operation for operation). Returns how many hit."""
    hit = 0
    for n, (text, filters, limit) in enumerate(queries):
        lead = n % 4 == 0  # `query`'s list over the notes' openings
        expected = _whoosh_answers(whoosh, text, limit, filters, lead)
        found = _answers(fast.search(text, limit=limit, filters=filters, lead=lead))
        assert found == expected, (text, filters, limit, lead)
        hit += bool(expected)
    return hit


def _leaves(index: LexicalIndex) -> list[tuple[int, bool]]:
    return [
        (leaf.doc_count_all(), leaf.has_deletions())
        for leaf, _ in index.searcher().reader().leaf_readers()
    ]


@pytest.fixture
def big_vault(vault: Path) -> Path:
    """example-vault and 240 generated notes (folders, tags, types, statuses)."""
    _write_notes(vault, random.Random(7), _vocabulary(vault), 240, 0)
    return vault


def test_fast_search_equals_whoosh_through_writes_deletes_and_merges(big_vault: Path) -> None:
    config = build(big_vault, {})
    index_vault(config)
    words = _vocabulary(big_vault)
    rng = random.Random(11)
    fast = LexicalIndex.open(config.cache_dir, fast=True)  # one long-lived, refreshed
    assert _assert_same(fast, LexicalIndex.open(config.cache_dir), _queries(rng, words, 240)) > 150

    notes = sorted(big_vault.rglob("gen note *.md"))
    layouts = [_leaves(fast)]
    for round_ in range(10):
        # Replace notes (their old documents stay in their segments, deleted), delete
        # some, copy some under new names (equal scores: the cut goes by path). Later
        # rounds write a note or two, as a day of edits does; Whoosh merges such segments.
        size = 12 if round_ < 2 else 1
        for path in rng.sample(notes, size):
            if path.exists():
                path.write_text(_note(rng, words, 1000 + round_), "utf-8")
        for path in rng.sample(notes, max(1, size // 4)):
            path.unlink(missing_ok=True)
        for path in rng.sample([p for p in notes if p.exists()], max(1, size // 3)):
            shutil.copy(path, path.with_name(f"copy {round_} {path.name}"))
        index_vault(config)
        fast.refresh()
        whoosh = LexicalIndex.open(config.cache_dir)
        layouts.append(_leaves(whoosh))
        assert _assert_same(fast, whoosh, _queries(rng, words, 60)) > 30
    # Segments held deleted notes, and Whoosh merged some (a commit that adds a segment
    # and leaves no more of them than before).
    assert any(deleted for layout in layouts for _count, deleted in layout)
    assert any(
        len(after) <= len(before) for before, after in zip(layouts, layouts[1:], strict=False)
    )


@pytest.mark.parametrize("matcher", ["auto", "tree", "array"])
def test_every_way_whoosh_adds_terms_gives_the_same_floats(big_vault: Path, matcher: str) -> None:
    """Whoosh adds a document's term scores in a Huffman tree of unions (segments of more
    than 5,000 notes, or two terms) or left to right; the sums differ in the last bits,
    and equal notes in two segments must tie exactly for the cut to go by path."""
    config = build(big_vault, {})
    index_vault(config)
    for path in sorted(big_vault.rglob("gen note 1*.md"))[:20]:  # copies in a new segment
        shutil.copy(path, path.with_name(f"twin {path.name}"))
    index_vault(config)
    searcher = LexicalIndex.open(config.cache_dir).searcher()
    fast = ImpactIndex(searcher)
    words = _vocabulary(big_vault)
    rng = random.Random(5)
    kinds = {"tree": q.Or.DEFAULT_MATCHER, "array": q.Or.ARRAY_MATCHER, "auto": q.Or.AUTO_MATCHER}
    mask = q.Or([q.Term("status", s) for s in HIDDEN_STATUSES])
    for i in range(150):
        query = build_query(
            " ".join(rng.choice(words[:80] if i % 2 else words) for _ in range(3 + i % 9))
        )
        assert isinstance(query, q.Or)
        query.matcher_type = kinds[matcher]
        allow = q.Term("folders", "gen") if i % 3 == 0 else None
        results = searcher.search(query, limit=None, filter=allow, mask=mask, optimize=False)
        expected = sorted(
            ((float(r.score), r["path"]) for r in results), key=lambda s: (-s[0], s[1])
        )
        limit = rng.choice((5, 30, 500))
        found = fast.ranked(query, limit, allow, mask)
        assert found is not None
        assert [(score, doc["path"]) for score, doc in found] == expected[:limit]


def test_a_small_cache_evicts_and_answers_the_same(big_vault: Path) -> None:
    config = build(big_vault, {})
    index_vault(config)
    searcher = LexicalIndex.open(config.cache_dir).searcher()
    roomy = ImpactIndex(searcher)
    tight = ImpactIndex(searcher, PostingStore(budget=4000))
    none = ImpactIndex(searcher, PostingStore(budget=0))
    words = _vocabulary(big_vault)
    rng = random.Random(3)
    for _ in range(60):
        query = build_query(" ".join(rng.sample(words[:100], 4)))
        assert query is not None
        expected = roomy.ranked(query, 10, None, None)
        assert tight.ranked(query, 10, None, None) == expected
        assert none.ranked(query, 10, None, None) == expected
        assert tight.cached_bytes <= 4000
    assert none.cached_bytes == 0
    assert roomy.cached_bytes > 4000


def test_other_query_shapes_are_left_to_whoosh(big_vault: Path) -> None:
    config = build(big_vault, {})
    index_vault(config)
    fast = ImpactIndex(LexicalIndex.open(config.cache_dir).searcher())
    redis, cache = (q.Term("text", term) for term in query_terms("redis cache"))
    assert fast.ranked(q.And([redis, cache]), 10, None, None) is None
    assert fast.ranked(q.Or([redis, cache], boost=2.0), 10, None, None) is None
    assert fast.ranked(q.Or([redis, q.Term("path", "x")]), 10, None, None) is None  # unscored
    assert fast.ranked(redis, 10, None, None)  # one term: answered


def test_a_warm_vault_searches_fast_and_a_one_shot_vault_does_not(vault: Path) -> None:
    config = build(vault, {})
    index_vault(config)
    assert OpenVault(config, warm=True).lexical().fast
    assert not OpenVault(config).lexical().fast
