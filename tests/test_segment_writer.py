"""vaultmem's segment writer writes Whoosh's W3 files byte for byte.

`vaultmem.index.segment_writer` skips Whoosh's per-posting path (pool, sort, one call per
posting); these tests build the same notes with Whoosh's own ``SegmentWriter`` and W3
field writer and compare every segment file, for the example vault, for generated notes
whose common words fill several posting blocks, and after an update that merges
segments holding deleted notes.
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest

from vaultmem.config import build
from vaultmem.index.lexical import LexicalIndex
from vaultmem.index.lexical_schema import (
    FIELD_WEIGHTS,
    LexicalCodec,
    build_schema,
    note_document,
    opening,
    weighted_terms,
)
from vaultmem.index.segment_writer import LexicalSegmentWriter, TermPool
from vaultmem.index.whoosh_light import light_imports
from vaultmem.indexer import index_vault
from vaultmem.note import parse_note
from vaultmem.vault import walk_notes

with light_imports():
    from whoosh import index as windex
    from whoosh.codec.whoosh3 import W3Codec
    from whoosh.writing import SegmentWriter

EXAMPLE = Path(__file__).resolve().parents[1] / "example-vault"


class _StockCodec(W3Codec):
    """vaultmem's codec settings with Whoosh's own field writer."""

    length_stats = False


def _notes(vault: Path) -> list:
    config = build(vault, {})
    return [
        parse_note(f.path, (vault / f.path).read_bytes(), mtime_ns=f.mtime_ns, size=f.size)
        for f in walk_notes(config)
    ]


def _write(
    directory: Path, notes: list, *, ours: bool, remove: list[str] = (), compression: int = 0
) -> None:
    """One commit of ``notes`` (replacing by path) with our writer or Whoosh's."""
    if not directory.exists():
        directory.mkdir(parents=True)
        windex.create_in(str(directory), build_schema())
    ix = windex.open_dir(str(directory))
    if ours:
        codec: W3Codec = LexicalCodec(compression=compression)
        writer = LexicalSegmentWriter(ix, limitmb=256, codec=codec, compound=False)
    else:
        codec = _StockCodec(compression=compression)
        writer = SegmentWriter(ix, limitmb=256, codec=codec, compound=False)
    for path in remove:
        writer.delete_by_term("path", path)
    for note in notes:
        writer.update_document(**note_document(note))
    writer.commit()


def _segment_files(directory: Path) -> list[tuple[str, bytes]]:
    """Every segment file by extension (segment names are random), in segment order."""
    ix = windex.open_dir(str(directory))
    out = []
    for segment in ix._segments():
        prefix = f"{segment.make_filename('')}"
        for path in sorted(directory.iterdir()):
            if path.name.startswith(prefix.rstrip(".")):
                out.append((path.name[len(prefix) :], path.read_bytes()))
    return out


def _same_files(tmp_path: Path, batches: list[tuple[list, list[str]]], compression: int = 0) -> int:
    for ours in (False, True):
        directory = tmp_path / ("ours" if ours else "stock")
        for notes, remove in batches:
            _write(directory, notes, ours=ours, remove=remove, compression=compression)
    stock, ours = _segment_files(tmp_path / "stock"), _segment_files(tmp_path / "ours")
    assert [name for name, _ in ours] == [name for name, _ in stock]
    for (name, theirs), (_, mine) in zip(stock, ours, strict=True):
        assert mine == theirs, name
    return len(stock)


@pytest.mark.parametrize("compression", [0, 3])  # ours, and Whoosh's default
def test_example_vault_segment_is_whooshs_byte_for_byte(tmp_path: Path, compression: int) -> None:
    files = _same_files(tmp_path, [(_notes(EXAMPLE), [])], compression)
    assert files >= 4  # terms, postings, stored fields, columns


def _generated(tmp_path: Path, count: int, seed: int) -> Path:
    rng = random.Random(seed)
    words = [f"w{n}" for n in range(400)]
    vault = tmp_path / f"vault{seed}"
    shutil.copytree(EXAMPLE, vault)
    for n in range(count):
        # A few words in nearly every note: their postings span several 128-entry blocks.
        body = " ".join(rng.choice(words[:8] if rng.random() < 0.3 else words) for _ in range(60))
        folder = vault / ("gen" if n % 3 else "gen/deep")
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"note {n}.md").write_text(f"# Title {n} {rng.choice(words)}\n\n{body}\n")
    return vault


@pytest.mark.parametrize("compression", [0, 3])
def test_generated_notes_with_long_postings_and_a_merge(tmp_path: Path, compression: int) -> None:
    notes = _notes(_generated(tmp_path, 420, seed=7))
    first, second = notes[:300], notes[250:]  # the overlap replaces (deletes) 50 notes
    gone = [n.path for n in first[:20]]
    assert _same_files(tmp_path, [(first, []), (second, gone)], compression) >= 4


def test_an_index_with_compressed_blocks_still_reads_and_merges(tmp_path: Path) -> None:
    """Indexes written before blocks went uncompressed: updated by today's writer, they
    answer as an index built from scratch today."""
    notes = _notes(_generated(tmp_path, 200, seed=3))
    _write(tmp_path / "old", notes[:150], ours=False, compression=3)
    _write(tmp_path / "old", notes[100:], ours=True, remove=[n.path for n in notes[:10]])
    _write(tmp_path / "new", notes[10:150], ours=True)
    _write(tmp_path / "new", notes[100:], ours=True)
    old, new = (LexicalIndex.open_dir(tmp_path / name) for name in ("old", "new"))
    assert old.doc_count() == new.doc_count() == len(notes) - 10
    for text in ("w1 w2", "w3", "title w150", "w399 w7 w0"):
        assert [(h.path, h.score) for h in old.search(text, limit=20)] == [
            (h.path, h.score) for h in new.search(text, limit=20)
        ]


def test_pool_hands_back_postings_in_whooshs_order() -> None:
    pool = TermPool()
    pool.add(("text", b"b", 3, 1.0, b"x"))
    pool.add(("text", b"b", 1, 2.0, b"y"))  # a merge may add a term's postings late
    pool.add(("lead", b"z", 0, 1.0, None))
    assert pool.add_weighted("text", 5, {"a": 2.5, "b": 0.4}) == 3  # round(2.5)=2, max(1, 0)
    assert list(pool.iter_postings()) == [
        ("lead", b"z", 0, 1.0, b""),
        ("text", b"a", 5, 2.5, b"\x00\x00\x00\x02"),
        ("text", b"b", 1, 2.0, b"y"),
        ("text", b"b", 3, 1.0, b"x"),
        ("text", b"b", 5, pytest.approx(0.4), b"\x00\x00\x00\x01"),
    ]


def test_index_built_by_vaultmem_answers_as_before(tmp_path: Path) -> None:
    """A cold index and an update through the vault's own code path still search."""
    vault = tmp_path / "vault"
    shutil.copytree(EXAMPLE, vault)
    config = build(vault, {})
    index_vault(config)
    index = LexicalIndex.open(config.cache_dir)
    hits = index.search("postgres connection pool", limit=5)
    assert hits and hits[0].score > 0
    note = vault / "decisions" / "pool.md"
    note.write_text("# Pgbouncer pool sizing\n\npgbouncer transaction pooling for postgres\n")
    index_vault(config)
    index = LexicalIndex.open(config.cache_dir)
    assert index.search("pgbouncer", limit=1)[0].path == "decisions/pool.md"


def test_note_documents_weigh_terms_as_analysing_each_field_does() -> None:
    """note_document counts the title and body once and reuses the counts (the lead is
    the title and the body's opening); the weights are those of analysing each field's
    text on its own."""
    for note in _notes(EXAMPLE):
        doc = note_document(note)
        names = [*note.aliases] + ([] if note.stem.lower() in note.title.lower() else [note.stem])
        assert doc["text"] == weighted_terms(
            {
                "title": note.title,
                "names": "\n".join(names),
                "headings": "\n".join(h.text for h in note.headings),
                "tags": " ".join(t.replace("/", " ") for t in note.tags),
                "body": note.body,
            }
        )
        assert doc["lead"] == weighted_terms({"body": f"{note.title}\n{opening(note.body)}"})
    assert all((2 * w).is_integer() for w in FIELD_WEIGHTS.values())  # exact in float32


@pytest.mark.parametrize(
    "text", ["Redis for Caching", "İstanbul ΣΟΦΙΑ straße", "a_b-c 42 x\nK\u212a", ""]
)
def test_names_are_counted_as_the_fields_analyzer_splits_them(text: str) -> None:
    """The names field is indexed from word_counts and queried through its Whoosh
    analyzer: the two must split and lowercase alike."""
    from collections import Counter

    from vaultmem.index.analysis import word_counts

    analyzer = build_schema()["names"].analyzer
    assert word_counts(text) == Counter(t.text for t in analyzer(text))
