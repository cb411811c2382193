"""The manifest: what the sidecar indexes hold, per note, so `index` only touches changes.

It lives in the cache as SQLite (``manifest.sqlite``, WAL mode): one row per note, so a
write command refreshes the rows it changed without reading or rewriting the others, and
readers never wait for a writer. A meta table records the schema, the last index run and
the live keyword-index generation with a fingerprint of its files: the transaction that
records a new generation is the one step that makes a rebuilt index live.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any, TypeVar

from vaultmem.errors import IndexStateError
from vaultmem.note import Note, iso, link_texts
from vaultmem.properties import OWNED_KEYS
from vaultmem.vault import FileStat, make_cache

T = TypeVar("T")
SCHEMA = 5  # 5: the links column (the link graph is built from it)
FILE_NAME = "manifest.sqlite"
LEGACY_FILE = "manifest.json"  # schema 3 and older: ignored, removed by the next index
_BUSY_TIMEOUT_S = 30.0
_DATED = ("created", "last_used", "last_review")  # the owned keys `timeline` reads
_COLUMNS = (
    "path, mtime_ns, size, hash, title, aliases, type, status, tags, memory, quality, warnings,"
    " links"
)
_DDL = (
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS notes (path TEXT PRIMARY KEY, mtime_ns INTEGER NOT NULL,"
    " size INTEGER NOT NULL, hash TEXT NOT NULL, title TEXT NOT NULL, aliases TEXT NOT NULL,"
    " type TEXT NOT NULL, status TEXT NOT NULL, tags TEXT NOT NULL, memory TEXT NOT NULL,"
    " quality REAL NOT NULL, warnings TEXT NOT NULL, links TEXT NOT NULL) WITHOUT ROWID",
)
# The embed sweep's split of each note content per fragment size: ``refs`` is the JSON
# ``[[fragment hash, start line, end line, heading], ...]`` naming the vectors the notes
# with that content own (see records.FragmentCache). Added to a schema-5 manifest by the
# first writer that needs it: a schema bump would rebuild every keyword index.
_FRAGMENTS_DDL = (
    "CREATE TABLE IF NOT EXISTS fragments (size INTEGER NOT NULL, content TEXT NOT NULL,"
    " refs TEXT NOT NULL, PRIMARY KEY (size, content)) WITHOUT ROWID",
    "CREATE INDEX IF NOT EXISTS fragments_content ON fragments (content)",
    # Whether any note still holds a content: one lookup, not a scan of every row.
    "CREATE INDEX IF NOT EXISTS notes_hash ON notes (hash)",
)
_PUT_FRAGMENTS = "INTO fragments (size, content, refs) VALUES (?, ?, ?)"
_UNHELD = "NOT EXISTS (SELECT 1 FROM notes WHERE notes.hash = fragments.content)"


@dataclass(frozen=True)
class Entry:
    """What the indexes know about one note."""

    mtime_ns: int
    size: int
    hash: str
    title: str
    aliases: tuple[str, ...] = ()
    type: str = "note"
    status: str = "active"
    tags: tuple[str, ...] = ()
    # vaultmem's own frontmatter keys as JSON values (dates as ISO text), and the note's
    # quality score: what ranking, `review`, `promote` and `gc` need without reading notes.
    memory: Mapping[str, Any] = field(default_factory=dict)
    quality: float = 0.0
    # Owned values that were invalid and treated as absent (one line each), for `status`.
    warnings: tuple[str, ...] = ()
    # Every link as written, ``(type, target)``: a typed link's key, or "wikilink" for a
    # body link (target without #heading or |alias). The link graph resolves these.
    links: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Manifest:
    """Every indexed note's entry, plus when the last index finished."""

    entries: Mapping[str, Entry] = field(default_factory=dict)
    last_index: str | None = None
    lexical_schema: int = 0
    generation: str = ""


@dataclass(frozen=True)
class State:
    """The meta row of the manifest: which keyword index is live, and whether it is sound.

    ``dirty`` is empty, or why the live keyword index cannot be trusted (a refresh that
    failed on a damaged index): the next `index` rebuilds. ``pending`` says an update of
    the live index was started and may not have been recorded in the rows (the process was
    killed between the Whoosh commit and the manifest's). Whoosh commits atomically and its
    updates are idempotent, so the next `index` redoes the notes whose stat differs from
    their rows instead of rebuilding; only a note count that still disagrees afterwards
    makes it rebuild. ``stamps``: the folders' and recent notes' mtimes that index saw
    (:mod:`vaultmem.index.stamps`; JSON, "" before any). ``skipped``: the notes the last
    `index` could not parse, as JSON ``{path: [mtime_ns, size]}`` ("" for none): they are
    not new to `status` and the stale-index hint until their file changes.
    """

    last_index: str | None = None
    lexical_schema: int = 0
    generation: str = ""
    fingerprint: str = ""
    dirty: str = ""
    pending: bool = False
    stamps: str = ""
    skipped: str = ""

    def skipped_notes(self) -> dict[str, tuple[int, int]]:
        """``skipped`` read: path → (mtime_ns, size) ({} when none or unreadable)."""
        try:
            data = json.loads(self.skipped) if self.skipped else {}
            return {str(p): (int(m), int(z)) for p, (m, z) in data.items()}
        except (ValueError, TypeError, AttributeError):
            return {}


@dataclass(frozen=True)
class Plan:
    """What an index run has to do, from comparing the walk with the manifest."""

    new: tuple[FileStat, ...]
    changed: tuple[FileStat, ...]  # stat differs: hash to see whether the content did
    unchanged: tuple[FileStat, ...]
    removed: tuple[str, ...]


def _dump(value: Any) -> str:
    # Empty values are stored as "" so the bulk load parses JSON only where there is some.
    return json.dumps(value, ensure_ascii=False) if value else ""


def _row(path: str, e: Entry) -> tuple[Any, ...]:
    return (
        path,
        e.mtime_ns,
        e.size,
        e.hash,
        e.title,
        _dump(list(e.aliases)),
        e.type,
        e.status,
        _dump(list(e.tags)),
        _dump(dict(e.memory)),
        e.quality,
        _dump(list(e.warnings)),
        _dump([list(link) for link in e.links]),
    )


def _entry(row: tuple[Any, ...]) -> Entry:
    (
        _,
        mtime_ns,
        size,
        hash_,
        title,
        aliases,
        type_,
        status,
        tags,
        memory,
        quality,
        warns,
        links,
    ) = row
    return Entry(
        mtime_ns,
        size,
        hash_,
        title,
        tuple(json.loads(aliases)) if aliases else (),
        type_,
        status,
        tuple(json.loads(tags)) if tags else (),
        json.loads(memory) if memory else {},
        quality,
        tuple(json.loads(warns)) if warns else (),
        tuple((t, x) for t, x in json.loads(links)) if links else (),
    )


class Store:
    """An open manifest. Writers hold the vault lock; readers never wait (WAL)."""

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        self._conn = conn
        self.path = path
        self._fragments_ready = False

    def close(self) -> None:
        """Release the database (the last connection out checkpoints the WAL)."""
        self._conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _meta(self) -> dict[str, str]:
        return dict(self._conn.execute("SELECT key, value FROM meta").fetchall())

    def current(self) -> bool:
        """Whether the database has this code's schema (else it is treated as empty)."""
        try:
            return self._meta().get("schema") == str(SCHEMA)
        except sqlite3.OperationalError:  # no meta table: an empty or foreign file
            return False

    def state(self) -> State:
        """The meta row (all defaults for a manifest of another schema)."""
        if not self.current():
            return State()
        meta = self._meta()
        return State(
            last_index=meta.get("last_index") or None,
            lexical_schema=int(meta.get("lexical_schema", "0")),
            generation=meta.get("generation", ""),
            fingerprint=meta.get("fingerprint", ""),
            dirty=meta.get("dirty", ""),
            pending=bool(meta.get("pending", "")),
            stamps=meta.get("stamps", ""),
            skipped=meta.get("skipped", ""),
        )

    def count(self) -> int:
        """How many notes have a row."""
        if not self.current():
            return 0
        return int(self._conn.execute("SELECT count(*) FROM notes").fetchone()[0])

    def stats(self) -> dict[str, tuple[int, int]]:
        """path → (mtime_ns, size) of every row: all an index plan needs."""
        if not self.current():
            return {}
        rows = self._conn.execute("SELECT path, mtime_ns, size FROM notes")
        return {path: (mtime, size) for path, mtime, size in rows}

    def names_in(self, folder: str) -> set[str]:
        """The file names of the rows directly in ``folder`` (vault-relative, "" the top)."""
        if not self.current():
            return set()
        if not folder:
            rows = self._conn.execute("SELECT path FROM notes WHERE instr(path, '/') = 0")
            return {path for (path,) in rows}
        prefix = folder + "/"
        # A range on the primary key: the rows of the folder and below, read in order.
        rows = self._conn.execute(
            "SELECT path FROM notes WHERE path >= ? AND path < ?", (prefix, folder + "0")
        )
        return {path[len(prefix) :] for (path,) in rows if "/" not in path[len(prefix) :]}

    def get(self, path: str) -> Entry | None:
        """One note's entry, or None."""
        return self.get_many([path]).get(path)

    def get_many(self, paths: Iterable[str]) -> dict[str, Entry]:
        """The entries of ``paths`` that have a row (one indexed lookup each)."""
        if not self.current():
            return {}
        sql = f"SELECT {_COLUMNS} FROM notes WHERE path = ?"
        out = {}
        for path in dict.fromkeys(paths):
            row = self._conn.execute(sql, (path,)).fetchone()
            if row is not None:
                out[path] = _entry(row)
        return out

    def entries(self) -> dict[str, Entry]:
        """Every entry (one bulk select)."""
        if not self.current():
            return {}
        rows = self._conn.execute(f"SELECT {_COLUMNS} FROM notes")
        return {row[0]: _entry(row) for row in rows}

    def selected(self, types: Iterable[str], keys: Iterable[str] = ()) -> dict[str, Entry]:
        """The entries of the notes of ``types`` or holding any of the owned ``keys``:
        SQLite picks them, so a hook reads a handful of rows, not the whole vault."""
        if not self.current():
            return {}
        kinds = list(types)
        where = [f"type IN ({', '.join('?' * len(kinds))})"] if kinds else []
        where += [f"json_extract(NULLIF(memory, ''), '$.{k}') IS NOT NULL" for k in keys]
        if not where:
            return {}
        sql = f"SELECT {_COLUMNS} FROM notes WHERE {' OR '.join(where)}"
        return {row[0]: _entry(row) for row in self._conn.execute(sql, kinds)}

    def hashes(self) -> dict[str, str]:
        """path → content hash of every row: what fragment lookups need."""
        if not self.current():
            return {}
        return dict(self._conn.execute("SELECT path, hash FROM notes").fetchall())

    def names(self) -> dict[str, tuple[str, tuple[str, ...]]]:
        """path → (title, aliases) of every row: what name resolution needs."""
        if not self.current():
            return {}
        rows = self._conn.execute("SELECT path, title, aliases FROM notes")
        return {p: (t, tuple(json.loads(a)) if a else ()) for p, t, a in rows}

    def dates(self) -> list[tuple[str, str, str, int, Any, Any, Any]]:
        """(path, title, type, mtime_ns, created, last_used, last_review) of every row: what
        `timeline` needs, the dates picked out of the memory JSON by SQLite (no row decoded)."""
        if not self.current():
            return []
        keys = ", ".join(f"json_extract(NULLIF(memory, ''), '$.{k}')" for k in _DATED)
        return self._conn.execute(
            f"SELECT path, title, type, mtime_ns, {keys} FROM notes"
        ).fetchall()

    def link_rows(self) -> list[tuple[str, str, str, str]]:
        """(path, hash, aliases JSON, links JSON) of every row: what the link graph needs."""
        if not self.current():
            return []
        return self._conn.execute("SELECT path, hash, aliases, links FROM notes").fetchall()

    def warnings(self) -> dict[str, tuple[str, ...]]:
        """path → warnings of every note that has some."""
        if not self.current():
            return {}
        rows = self._conn.execute("SELECT path, warnings FROM notes WHERE warnings != ''")
        return {path: tuple(json.loads(w)) for path, w in rows}

    def manifest(self) -> Manifest:
        """Every entry and the meta row as one value."""
        state = self.state()
        return Manifest(self.entries(), state.last_index, state.lexical_schema, state.generation)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One atomic write: everything inside commits together or not at all."""
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Reads that see one state of the database, whatever a writer commits meanwhile."""
        self._conn.execute("BEGIN")
        try:
            yield
        finally:
            self._conn.execute("COMMIT")

    def upsert(self, entries: Mapping[str, Entry]) -> None:
        """Insert or replace the rows of ``entries`` (call inside :meth:`transaction`)."""
        before = self._conn.total_changes
        self._conn.executemany(
            f"INSERT OR REPLACE INTO notes ({_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (_row(p, e) for p, e in entries.items()),
        )
        self._changed(before)

    def delete(self, paths: Iterable[str]) -> None:
        """Drop the rows of ``paths`` (call inside :meth:`transaction`)."""
        before = self._conn.total_changes
        self._conn.executemany("DELETE FROM notes WHERE path = ?", ((p,) for p in paths))
        self._changed(before)

    def clear(self) -> None:
        """Drop every row (call inside :meth:`transaction`)."""
        self._conn.execute("DELETE FROM notes")
        self._changed(-1)

    def _changed(self, before: int) -> None:
        # A new token with every change of the rows (``before``: the connection's change
        # count before the write): readers that derive data from the rows (the link
        # graph) see in one lookup whether theirs is still current.
        if self._conn.total_changes != before:
            self.set_meta(rows_version=os.urandom(8).hex())

    def rows_version(self) -> str:
        """A token that changes whenever a row does ("" before the first write)."""
        if not self.current():
            return ""
        row = self._conn.execute("SELECT value FROM meta WHERE key = 'rows_version'").fetchone()
        return str(row[0]) if row else ""

    @contextmanager
    def savepoint(self) -> Iterator[None]:
        """A step inside :meth:`transaction` that fails alone: on an error its statements
        are rolled back and the error raised, and the transaction can still commit."""
        self._conn.execute("SAVEPOINT step")
        try:
            yield
        except BaseException:
            self._conn.execute("ROLLBACK TO step")
            raise
        finally:
            self._conn.execute("RELEASE step")

    # --- fragment rows (see _FRAGMENTS_DDL) ------------------------------------------------

    def fragment_sizes(self) -> list[int]:
        """The fragment sizes that have rows, smallest first (a few index lookups)."""
        if not self.current():
            return []
        sizes, sql = [0], "SELECT min(size) FROM fragments WHERE size > ?"
        try:
            while (found := self._conn.execute(sql, (sizes[-1],)).fetchone()[0]) is not None:
                sizes.append(int(found))
        except sqlite3.OperationalError:  # no fragments table yet
            return []
        return sizes[1:]

    def fragment_rows(self, size: int) -> dict[str, str]:
        """content hash → refs JSON of every row of one fragment size."""
        if not self.current():
            return {}
        sql = "SELECT content, refs FROM fragments WHERE size = ?"
        try:
            return dict(self._conn.execute(sql, (size,)).fetchall())
        except sqlite3.OperationalError:  # no fragments table yet
            return {}

    def put_fragments(self, rows: Iterable[tuple[int, str, str]], *, keep: bool = False) -> None:
        """Insert rows ``(size, content hash, refs JSON)``, replacing those there, or keeping
        them when ``keep``; call inside :meth:`transaction`."""
        self._ensure_fragments()
        verb = "INSERT OR IGNORE" if keep else "INSERT OR REPLACE"
        self._conn.executemany(f"{verb} {_PUT_FRAGMENTS}", rows)

    def drop_unheld_fragments(self, contents: Iterable[str]) -> None:
        """Drop the rows (every size) of those of ``contents`` no note holds any more
        (call inside :meth:`transaction`, after the notes' rows are written)."""
        self._ensure_fragments()
        self._conn.executemany(
            f"DELETE FROM fragments WHERE content = ? AND {_UNHELD}", ((c,) for c in contents)
        )

    def prune_fragments(self, size: int | None = None) -> None:
        """Drop the rows (of ``size``, or every size) of content no note holds; nothing
        while no note has a row (a manifest emptied is the next `index`'s to rebuild).
        Call inside :meth:`transaction`."""
        self._ensure_fragments()
        if self._conn.execute("SELECT 1 FROM notes LIMIT 1").fetchone() is None:
            return
        if size is None:
            self._conn.execute(f"DELETE FROM fragments WHERE {_UNHELD}")
        else:
            self._conn.execute(f"DELETE FROM fragments WHERE size = ? AND {_UNHELD}", (size,))

    def _ensure_fragments(self) -> None:
        if not self._fragments_ready:
            for ddl in _FRAGMENTS_DDL:
                self._conn.execute(ddl)
            self._fragments_ready = True

    def set_meta(self, **values: str | int | None) -> None:
        """Set meta keys (``None`` stores ""); call inside :meth:`transaction`."""
        self._conn.executemany(
            "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
            ((k, "" if v is None else str(v)) for k, v in values.items()),
        )

    def mark_dirty(self, why: str) -> None:
        """Record, in its own commit, that the live keyword index cannot be trusted."""
        with self.transaction():
            self.set_meta(dirty=why)

    def mark_pending(self) -> None:
        """Record, in its own commit, that an update of the live keyword index begins."""
        with self.transaction():
            self.set_meta(pending="1")

    def reset(self) -> None:
        """Make this an empty manifest of the current schema (another schema's is dropped)."""
        with self.transaction():
            for table in ("notes", "meta", "fragments"):
                self._conn.execute(f"DROP TABLE IF EXISTS {table}")
            for ddl in (*_DDL, *_FRAGMENTS_DDL):
                self._conn.execute(ddl)
            self._fragments_ready = True
            self.set_meta(schema=SCHEMA)


def _connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, timeout=_BUSY_TIMEOUT_S, isolation_level=None)
    try:
        # The cache is derivable: a commit lost to a power cut is redone by the next index.
        conn.execute("PRAGMA synchronous=NORMAL")
        if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            conn.execute("PRAGMA journal_mode=WAL")
    except BaseException:
        conn.close()
        raise
    return conn


def open_reader(cache_dir: Path) -> Store | None:
    """The manifest for reading, or None when the vault was never indexed.

    A file SQLite cannot read is an IndexStateError naming the command that rebuilds it.
    """
    path = cache_dir / FILE_NAME
    if not path.exists():
        return None
    try:
        store = Store(_connect(path), path)
        store.current()
    except sqlite3.OperationalError as exc:
        if os.access(path.parent, os.W_OK) and os.access(path, os.W_OK):
            raise damaged(path, exc) from None
        store = _read_only_store(path)
    except sqlite3.Error as exc:
        raise damaged(path, exc) from None
    return store


def _read_only_store(path: Path) -> Store:
    """The manifest of a cache this process may not write (a read-only folder or file).

    WAL mode needs to create its shared-memory file next to the database; where it
    cannot, SQLite opens the file as immutable: no writer can be at work in a folder
    nobody may write, so there is no log to miss.
    """
    try:
        conn = sqlite3.connect(f"{path.as_uri()}?mode=ro&immutable=1", uri=True)
        store = Store(conn, path)
        store.current()
    except sqlite3.Error as exc:
        raise damaged(path, exc) from None
    return store


def damaged(path: Path, exc: BaseException) -> IndexStateError:
    """The one-line error for a manifest SQLite cannot read."""
    return IndexStateError(f"{path}: unreadable manifest ({exc}); run `vaultmem index`")


def open_writer(cache_dir: Path) -> tuple[Store, str]:
    """The manifest for an `index` run (created when missing), and what was healed.

    A file SQLite cannot read is deleted and started afresh; the second value then says
    so in one line (else it is ""). A manifest of another schema is emptied silently:
    the keyword index is rebuilt either way.
    """
    make_cache(cache_dir)
    path = cache_dir / FILE_NAME
    healed = ""
    try:
        store = Store(_connect(path), path)
        ok = store.current()
        if ok:
            store.count()  # touches the notes table: a torn file fails here, not later
    except sqlite3.DatabaseError as exc:
        remove(cache_dir)
        healed = f"manifest was unreadable ({exc})"
        store, ok = Store(_connect(path), path), False
    if not ok:
        store.reset()
    with suppress(FileNotFoundError):
        (cache_dir / LEGACY_FILE).unlink()
    return store, healed


def remove(cache_dir: Path) -> None:
    """Delete the manifest files (database, WAL and shared memory)."""
    for suffix in ("", "-wal", "-shm", "-journal"):
        with suppress(FileNotFoundError):
            (cache_dir / (FILE_NAME + suffix)).unlink()


def read(cache_dir: Path, default: T, what: Callable[[Store], T]) -> T:
    """``what(store)`` on the manifest, or ``default`` when the vault was never indexed.

    A manifest SQLite cannot read is an IndexStateError naming `vaultmem index`.
    """
    store = open_reader(cache_dir)
    if store is None:
        return default
    with store:
        try:
            return what(store)
        except sqlite3.Error as exc:
            raise damaged(store.path, exc) from None


def load(cache_dir: Path) -> Manifest:
    """Every entry (empty on a first run or a cache wiped by hand), for whole-vault work."""
    return read(cache_dir, Manifest(), Store.manifest)


def get_entry(cache_dir: Path, path: str) -> Entry | None:
    """One note's entry (None when it has none), without loading the others."""
    return read(cache_dir, None, lambda store: store.get(path))


def not_indexed() -> IndexStateError:
    """The one error for a vault `index` never ran on (an indexed vault with no notes is
    not one: it answers every search with nothing)."""
    return IndexStateError("the vault is not indexed yet: run `vaultmem index`")


def read_state(cache_dir: Path) -> State:
    """The meta row alone (defaults when never indexed): what a reader needs to open."""
    return read(cache_dir, State(), Store.state)


def entry_for(note: Note) -> Entry:
    """The manifest entry of a freshly parsed note."""
    return Entry(
        note.mtime_ns,
        note.size,
        note.content_hash,
        note.title,
        note.aliases,
        note.type,
        note.status,
        note.tags,
        memory_keys(note.owned),
        note.quality,
        note.warnings,
        link_texts(note.owned, note.links),
    )


def memory_keys(meta: Mapping[Any, Any]) -> dict[str, Any]:
    """vaultmem's own keys of a frontmatter, as JSON values (dates become ISO text)."""
    return {key: _jsonable(meta[key]) for key in OWNED_KEYS if key in meta}


def _jsonable(value: Any) -> Any:
    if isinstance(value, date | datetime):
        return iso(value)
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def plan(stats: Mapping[str, tuple[int, int]], files: Iterable[FileStat]) -> Plan:
    """Compare the walk with the manifest's (mtime_ns, size) per path; reads no file."""
    new, changed, unchanged = [], [], []
    seen = set()
    for f in files:
        seen.add(f.path)
        old = stats.get(f.path)
        if old is None:
            new.append(f)
        elif old == (f.mtime_ns, f.size):
            unchanged.append(f)
        else:
            changed.append(f)
    removed = tuple(sorted(set(stats) - seen))
    return Plan(tuple(new), tuple(changed), tuple(unchanged), removed)
