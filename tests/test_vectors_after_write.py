"""A write keeps the note's vectors: every write door, then `similar` and `vsearch`.

Vectors are keyed by fragment text, and fragment rows by note content: a write (a
touch, a pin, a link, a promote that rewrites links) files the note under new content,
and the refresh that follows must re-link the fragments whose text it left alone, so
semantic search finds the note at once, with the same scores, and nothing is embedded
again. Only a fragment whose text changed is left for `embed`.

The embedder is the fake OpenAI server (a real HTTP endpoint on 127.0.0.1): every text
it is sent is recorded, so "no embedding happened" is counted, not assumed.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from conftest import Cli
from fake_openai_server import FakeOpenAIServer
from test_vectors_e2e import MAX_CHARS, fragment_texts, load_config, use_endpoint

from vaultmem import api
from vaultmem.index import manifest as mf
from vaultmem.index.records import coverage, note_fragments
from vaultmem.model import Hit, SearchRequest
from vaultmem.note import parse_note

pytestmark = pytest.mark.slow  # real servers over embedded vaults, written to

MODEL = "model-a"
NOTE = "decisions/Redis for caching.md"
OTHER = "reference/Useful kubectl commands.md"  # no frontmatter yet
QUERY = "redis sessions price cache elasticache"
PROBE = "dimension probe"  # what the endpoint embedder sends to learn the vector length


@pytest.fixture
def embedded(vault: Path, fake_openai: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> Cli:
    """The vault indexed and embedded through the fake endpoint."""
    use_endpoint(monkeypatch, fake_openai.url, MODEL)
    monkeypatch.setenv("VAULTMEM_NO_SERVER", "1")
    cli = Cli(vault)
    report = cli.json_lines("index")[0]
    assert report["embedding"]["embedded"] == len(fragment_texts(vault))
    return cli


def sent_texts(fake: FakeOpenAIServer) -> list[str]:
    """Every text the endpoint was asked to embed, in order (each new embedder's one-word
    probe of the vector length left out: it embeds no note)."""
    texts = [text for request in fake.embedding_requests() for text in request.inputs]
    return [text for text in texts if text != PROBE]


def scores(hits: list[dict]) -> dict[str, float]:
    return {h["path"]: h["score"] for h in hits}


def answers(hits: list[dict]) -> list[tuple[str, float, str]]:
    """What a search answers, line numbers aside (a write that adds frontmatter lines
    moves the note's body down, and its fragments' lines with it)."""
    return [(h["path"], h["score"], h["snippet"]) for h in hits]


def similar(cli: Cli, path: str) -> list[tuple[str, float, str]]:
    return answers(cli.json_lines("similar", path, "-n", "60"))


def content_hash(vault: Path, path: str) -> str:
    entry = mf.get_entry(vault / ".vaultmem", path)
    assert entry is not None, path
    return entry.hash


def fragment_rows(vault: Path) -> dict[str, list]:
    """The manifest's fragment rows: "<fragment size>:<note content hash>" → the note's
    fragments (read with sqlite3 itself, not vaultmem's reader)."""
    with contextlib.closing(sqlite3.connect(vault / ".vaultmem" / "manifest.sqlite")) as db:
        rows = db.execute("SELECT size, content, refs FROM fragments").fetchall()
    return {f"{size}:{content}": json.loads(refs) for size, content, refs in rows}


def vsearch(cli: Cli, query: str, *extra: str) -> dict[str, float]:
    return scores(cli.json_lines("vsearch", query, "-n", "60", "--no-prior", "--no-review", *extra))


# -- every write door that changes only owned keys ------------------------------------------

WRITES = {
    "touch": (["touch", NOTE], [NOTE], "active"),
    "pin": (["pin", NOTE], [NOTE], "active"),
    "forget": (["forget", NOTE], [NOTE], "forgotten"),
    "link": (["link", NOTE, OTHER], [NOTE, OTHER], "active"),
}


@pytest.mark.parametrize("door", sorted(WRITES))
def test_an_owned_key_write_keeps_the_vectors_and_embeds_nothing(
    embedded: Cli, vault: Path, fake_openai: FakeOpenAIServer, door: str
) -> None:
    args, written, status_after = WRITES[door]
    similar_before = {p: similar(embedded, p) for p in written}
    found_before = vsearch(embedded, QUERY)
    hashes_before = {p: content_hash(vault, p) for p in written}
    rows_before = fragment_rows(vault)
    sent = len(sent_texts(fake_openai))

    embedded(*args)

    for path in written:  # the write happened: each note is filed under new content
        assert content_hash(vault, path) != hashes_before[path]
    for path in written:
        # Same neighbours, same scores: the note's fragments kept their very vectors.
        assert similar(embedded, path) == similar_before[path]
    # Each note's row moved to its new content: the old one is gone, none piles up.
    rows = fragment_rows(vault)
    assert len(rows) == len(rows_before)
    assert {f"{MAX_CHARS}:{content_hash(vault, p)}" for p in written} <= set(rows)
    shown = ("--status", status_after) if status_after != "active" else ()
    assert vsearch(embedded, QUERY, *shown)[NOTE] == found_before[NOTE]
    # Only the query was embedded; no fragment of any note was, nor is by `embed`.
    assert sent_texts(fake_openai)[sent:] == [QUERY]
    assert embedded.json_lines("embed")[0]["embedded"] == 0
    assert sent_texts(fake_openai)[sent:] == [QUERY]


def test_remember_supersedes_keeps_the_old_note_and_leaves_only_the_new_one(
    embedded: Cli, vault: Path, fake_openai: FakeOpenAIServer
) -> None:
    similar_before = similar(embedded, NOTE)
    score = vsearch(embedded, QUERY)[NOTE]
    sent = len(sent_texts(fake_openai))
    text = "Sessions moved to Valkey 8 on ElastiCache after the licence change."
    made = embedded.json_lines("remember", text, "--supersedes", NOTE)[0]
    assert sent_texts(fake_openai)[sent:] == [text]  # its near-duplicate check

    assert similar(embedded, NOTE) == similar_before
    assert vsearch(embedded, QUERY, "--status", "superseded")[NOTE] == score
    # The new note's fragment is the one thing `embed` has to do.
    new = fragment_texts(vault, [made["path"]])
    assert len(new) == 1
    assert embedded.json_lines("embed")[0]["embedded"] == 1
    assert sent_texts(fake_openai)[sent:] == [text, QUERY, *new.values()]


def test_a_warm_vault_reinforce_keeps_the_vectors(
    embedded: Cli, vault: Path, fake_openai: FakeOpenAIServer
) -> None:
    """MCP `reinforce` and REST /v1/reinforce: one OpenVault kept open across requests."""
    config = load_config(vault)
    warm = api.OpenVault(config, warm=True)
    now = datetime.now(UTC)
    request = SearchRequest(QUERY, mode="semantic", limit=60, prior=False, review=False)

    def hits(found: Sequence[Hit]) -> list[tuple[str, float, str]]:
        return answers([h.as_json() for h in found])

    try:
        similar_before = {p: hits(api.similar(warm, p, limit=60)) for p in (NOTE, OTHER)}
        found_before = hits(api.search(warm, request, now=now).hits)
        sent = len(sent_texts(fake_openai))
        for _ in range(3):
            api.reinforce(warm, [NOTE], now=now)
            assert hits(api.similar(warm, NOTE, limit=60)) == similar_before[NOTE]
            assert hits(api.search(warm, request, now=now).hits) == found_before
        # `observe` and `confirm` (OTHER gets its first frontmatter block).
        api.reinforce(warm, [NOTE, OTHER], now=now, context_tags=["ops"], confirm=True)
        for path in (NOTE, OTHER):
            assert hits(api.similar(warm, path, limit=60)) == similar_before[path]
        assert hits(api.search(warm, request, now=now).hits) == found_before
    finally:
        warm.close()
    assert sent_texts(fake_openai)[sent:] == [QUERY] * 4
    assert embedded.json_lines("embed")[0]["embedded"] == 0


def test_an_edit_outside_vaultmem_keeps_the_vectors_after_index(
    embedded: Cli, vault: Path, fake_openai: FakeOpenAIServer
) -> None:
    """A frontmatter edit in Obsidian, then `index --no-embed` (as `watch` runs it)."""
    similar_before = similar(embedded, NOTE)
    note = vault / NOTE
    note.write_text(note.read_text("utf-8").replace("---\n", "---\nrating: 5\n", 1), "utf-8")
    assert embedded.json_lines("index", "--no-embed")[0]["updated"] == 1
    assert similar(embedded, NOTE) == similar_before
    assert embedded.json_lines("embed")[0]["embedded"] == 0


# -- a write that changes the body: only the changed fragment is left for `embed` ----------


def _promotable(vault: Path) -> tuple[str, str]:
    """An inbox note that `promote` moves now, and a note linking to it by path in one of
    its two sections (the other section never mentions it)."""
    now = datetime.now(UTC)

    def stamp(delta: timedelta) -> str:
        return (now - delta).strftime("%Y-%m-%dT%H:%M:%SZ")

    inbox = "inbox/Pgbouncer pool sizing.md"
    (vault / inbox).write_text(
        f"---\ntype: observation\ncreated: {stamp(timedelta(days=2))}\n"
        f"last_used: {stamp(timedelta(hours=1))}\nuse_count: 5\n---\n"
        "# Pgbouncer pool sizing\n\nTransaction pooling with default_pool_size 20 per "
        "database kept the API under the Postgres connection limit.\n",
        "utf-8",
    )
    linking = "projects/Database notes.md"
    storms = "Connection storms after deploys exhausted the pool until we capped workers. "
    vacuum = "The nightly vacuum job competes with the reporting replica for IO bandwidth. "
    (vault / linking).write_text(
        f"# Database notes\n\n## Pools\n\nSee [[{inbox.removesuffix('.md')}]] for the "
        f"settings. {storms * 9}\n\n## Vacuum\n\n{vacuum * 9}\n",
        "utf-8",
    )
    return inbox, linking


def test_a_link_rewrite_leaves_only_the_changed_fragment_for_embed(
    embedded: Cli, vault: Path, fake_openai: FakeOpenAIServer
) -> None:
    inbox, linking = _promotable(vault)
    embedded("index")
    assert len(fragment_texts(vault, [linking])) == 2
    vacuum = "nightly vacuum job reporting replica IO bandwidth"
    pooling = "transaction pooling default_pool_size postgres connection limit"
    before = {vacuum: vsearch(embedded, vacuum), pooling: vsearch(embedded, pooling)}
    old_texts = fragment_texts(vault, [linking])

    promoted = embedded.json_lines("promote")
    moved = "memory/Pgbouncer pool sizing.md"
    assert [(p["action"], p["path"], p.get("target")) for p in promoted] == [
        ("promote", inbox, moved),
        ("relink", linking, None),
    ]
    new_texts = fragment_texts(vault, [linking])
    changed = set(new_texts) - set(old_texts)
    assert len(changed) == 1 and len(set(new_texts) & set(old_texts)) == 1

    sent = len(sent_texts(fake_openai))
    # Before any `embed`: the untouched section still answers (its vector was kept). The
    # note's score is that section's cosine alone until `embed` gives the rewritten
    # opening section, the note's lead, its vector to pool with (fusion.pool_lead).
    assert vsearch(embedded, vacuum)[linking] >= before[vacuum][linking]
    after = vsearch(embedded, pooling)
    assert after[moved] == before[pooling][inbox] and inbox not in after
    cover = coverage(load_config(vault), f"openai:{MODEL}", MAX_CHARS)
    assert cover["unsplit_notes"] == 0
    assert cover["fragments"] - cover["embedded"] == 1  # the rewritten section only
    # `embed` embeds that one fragment and nothing else.
    assert embedded.json_lines("embed")[0]["embedded"] == 1
    assert sent_texts(fake_openai)[sent:] == [vacuum, pooling, new_texts[changed.pop()]]


def test_a_fragment_row_shared_with_an_identical_note_survives_its_twins_write(
    embedded: Cli, vault: Path
) -> None:
    """Two notes with the same bytes share one fragment row: a write to one
    must not drop the row the other still needs."""
    twin = "decisions/Redis for caching (copy).md"
    (vault / twin).write_bytes((vault / NOTE).read_bytes())
    embedded("index")
    assert content_hash(vault, twin) == content_hash(vault, NOTE)
    similar_before = similar(embedded, twin)
    embedded("touch", NOTE)
    assert similar(embedded, twin) == similar_before
    rows = fragment_rows(vault)
    live = {content_hash(vault, p) for p in (NOTE, twin)}
    assert {key.partition(":")[2] for key in rows} >= live


def test_a_write_during_a_sweep_is_not_lost_by_its_save(
    embedded: Cli, vault: Path, fake_openai: FakeOpenAIServer
) -> None:
    """`embed` loads the fragment cache first and saves it last: a note touched between
    the two keeps its re-linked row."""
    from vaultmem.embedding import embed_vault
    from vaultmem.inference.embedders import embedder_for

    config = load_config(vault)
    # A new note gives the sweep something to embed; the endpoint answers it slowly,
    # and the touch lands while it waits.
    (vault / "inbox/Slow note.md").write_text("Something new to embed.\n", "utf-8")
    embedded("index", "--no-embed")
    similar_before = similar(embedded, NOTE)
    fake_openai.latency = 3.0
    done: list[int] = []
    sweep = threading.Thread(
        target=lambda: done.append(embed_vault(config, embedder_for(config)).embedded)
    )
    sweep.start()
    deadline = time.monotonic() + 60
    while not any("Something new" in t for t in sent_texts(fake_openai)):
        assert time.monotonic() < deadline, "the sweep never asked for the new note"
        time.sleep(0.02)
    embedded("touch", NOTE)  # while the endpoint is still answering the sweep
    sweep.join(60)
    fake_openai.latency = 0.0
    assert done == [1]
    after = similar(embedded, NOTE)
    assert [h for h in after if h[0] != "inbox/Slow note.md"] == similar_before


def test_fragment_rows_match_what_the_sweep_would_write(embedded: Cli, vault: Path) -> None:
    """The re-linked rows are exactly the sweep's: same hashes, same lines, same headings."""
    embedded("touch", NOTE)
    rows = fragment_rows(vault)
    note = parse_note(NOTE, (vault / NOTE).read_bytes())
    expected = [
        [f.hash, f.start_line, f.end_line, " > ".join(f.heading_path)]
        for f in note_fragments(note, MAX_CHARS)
    ]
    assert rows[f"{MAX_CHARS}:{note.content_hash}"] == expected


def test_a_warm_vault_sees_the_fragments_another_process_relinked(
    embedded: Cli, vault: Path
) -> None:
    """`serve` and a CLI `touch` beside it: the touch files the note's fragments in the
    manifest commit that records its new content, so the server never sees the note
    without vectors. (They were filed a moment later, under a lock of their own,
    ``fragments.lock``: a server asking in between found none. That lock held by anyone
    must not keep a write from relinking.)"""
    from vaultmem.vault import vault_lock

    warm = api.OpenVault(load_config(vault), warm=True)
    # Another reader keeps the manifest open (a second server, `watch`): the touch's exit
    # is then not the last close, and checkpoints nothing the stamps could see.
    reader = mf.open_reader(vault / ".vaultmem")
    assert reader is not None
    env = {**os.environ, "VAULTMEM_LOCK_TIMEOUT": "30"}
    try:
        similar_before = answers([h.as_json() for h in api.similar(warm, NOTE, limit=60)])
        before = content_hash(vault, NOTE)
        with vault_lock(vault / ".vaultmem", timeout=0, what="test", name="fragments.lock"):
            touch = subprocess.run(
                [sys.executable, "-m", "vaultmem", "--vault", str(vault), "touch", NOTE],
                capture_output=True,
                text=True,
                timeout=20,  # a touch waiting for the lock would wait 30 s
                env=env,
            )
            assert touch.returncode == 0 and not touch.stderr, touch.stderr
            assert content_hash(vault, NOTE) != before
            after = answers([h.as_json() for h in api.similar(warm, NOTE, limit=60)])
            assert after == similar_before
    finally:
        reader.close()
        warm.close()


# -- fragment rows: a write costs its notes' rows; an older fragments.json moves in ---------


def _written_bytes() -> int:
    """Bytes this process has handed to write(2) and its kin so far (Linux)."""
    with open("/proc/self/io", encoding="ascii") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("wchar:"))


def test_a_one_note_write_writes_its_own_rows_not_the_whole_fragment_map(
    cli: Cli, vault: Path
) -> None:
    """A touch on a vault with a big fragment map writes a few pages, not the map (it
    rewrote all of ``fragments.json``, about 0.5 s a write at 95k notes)."""
    from vaultmem.index.records import FragmentCache

    section = "Connection pools, replicas and cache keys are tuned per service. " * 3
    for i in range(400):
        body = "".join(f"## Topic {i}-{k} of the runbook\n\n{section}\n\n" for k in range(24))
        (vault / "runbooks" / f"Runbook {i:03}.md").parent.mkdir(exist_ok=True)
        (vault / "runbooks" / f"Runbook {i:03}.md").write_text(f"# Runbook {i}\n\n{body}")
    cli("index")
    # Rows as a sweep at a small fragment size files them (no model needed: the sweep's
    # own split); a write re-links at every size that has rows.
    size, map_bytes = 200, 0
    cache = FragmentCache.load(vault / ".vaultmem", size)
    for path, entry in mf.load(vault / ".vaultmem").entries.items():
        note = parse_note(path, (vault / path).read_bytes())
        refs = cache.put(entry.hash, note_fragments(note, size))
        map_bytes += len(json.dumps([[r.hash, r.start_line, r.end_line, r.heading] for r in refs]))
    cache.save()
    assert map_bytes > 1_500_000

    before = _written_bytes()
    cli("touch", NOTE)
    written = _written_bytes() - before

    # The note file, its keyword-index segment and a few manifest pages: ~150 KB.
    assert written < map_bytes / 4, (written, map_bytes)
    rows = fragment_rows(vault)
    note = parse_note(NOTE, (vault / NOTE).read_bytes())
    assert f"{size}:{note.content_hash}" in rows
    assert len(rows) == len(mf.load(vault / ".vaultmem").entries)  # the old row went


def _as_older_vaultmem(vault: Path, fragments_json: bytes) -> None:
    """The cache as an older vaultmem left it: its fragments in ``fragments.json`` and a
    manifest without fragment rows."""
    with contextlib.closing(sqlite3.connect(vault / ".vaultmem" / "manifest.sqlite")) as db, db:
        db.execute("DROP TABLE fragments")
        db.execute("DROP INDEX notes_hash")
    (vault / ".vaultmem" / "fragments.json").write_bytes(fragments_json)


@pytest.mark.parametrize("first", ["embed", "touch"])
def test_an_older_fragments_json_moves_into_the_manifest(
    embedded: Cli, vault: Path, fake_openai: FakeOpenAIServer, first: str
) -> None:
    """Readers use it as it is; the first sweep or write moves it, embedding nothing."""
    rows = fragment_rows(vault)
    similar_before = similar(embedded, NOTE)
    found_before = vsearch(embedded, QUERY)
    _as_older_vaultmem(vault, json.dumps(rows, separators=(",", ":")).encode())
    legacy = vault / ".vaultmem" / "fragments.json"
    sent = len(sent_texts(fake_openai))

    assert vsearch(embedded, QUERY) == found_before  # read in place, not moved by a reader
    assert legacy.exists()
    if first == "embed":
        report = embedded.json_lines("embed")[0]
        assert (report["embedded"], report["healed"]) == (0, "")
        assert fragment_rows(vault) == rows
    else:
        embedded("touch", NOTE)
        after = fragment_rows(vault)
        assert len(after) == len(rows)
        assert f"{MAX_CHARS}:{content_hash(vault, NOTE)}" in after
        assert similar(embedded, NOTE) == similar_before
    assert not legacy.exists()
    assert embedded.json_lines("embed")[0]["embedded"] == 0
    assert sent_texts(fake_openai)[sent:] == [QUERY]


def test_a_garbled_older_fragments_json_is_healed_by_embed(
    embedded: Cli, vault: Path, fake_openai: FakeOpenAIServer
) -> None:
    """A write leaves it for `embed`, which says so, splits the notes again and embeds
    nothing (vectors are keyed by fragment text)."""
    found_before = vsearch(embedded, QUERY)
    _as_older_vaultmem(vault, b'{"2000:0a1b": [["torn')
    legacy = vault / ".vaultmem" / "fragments.json"
    sent = len(sent_texts(fake_openai))

    broken = embedded("vsearch", QUERY, ok=False)
    assert broken.exit_code == 1 and "run `vaultmem embed`" in broken.stderr
    embedded("touch", NOTE)
    assert legacy.exists()
    healed = embedded("embed")
    assert "vaultmem: repaired: fragments.json was unreadable" in healed.stderr
    assert "0 fragments embedded" in healed.stdout
    assert not legacy.exists()
    assert vsearch(embedded, QUERY) == found_before
    assert set(sent_texts(fake_openai)[sent:]) == {QUERY}  # no fragment, only queries
