"""The link graph: every typed frontmatter link and body wikilink, resolved to note paths.

`index` stores each note's links as written (the manifest's ``links`` column); this
module resolves them with the vault's one resolver (:class:`~vaultmem.vault.LinkResolver`:
file name, shortest path, aliases) into ``graph.sqlite`` in the cache, which answers
out-links and in-links by indexed lookups, loading nothing. The manifest changes a token
with every change of its rows: :meth:`LinkGraph.load` compares it with the one the graph
was built at, and only on a difference compares the rows. Re-resolved then are the notes
whose content changed, and the notes with a link whose last segment is the file name or
an alias of a note added, removed or re-aliased (the only links such a change can move).
`index` loads the graph at its end, so readers find it current. The cache is derivable:
a missing, foreign or damaged file is rebuilt without a word; where the cache folder
cannot be written, the graph is resolved in memory.

A paired type is stored as written on each side: A ``supersedes`` B and B
``superseded_by`` A are two edges. A link that reaches no note is not an edge, nor is a
link from a note to itself.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Collection, Iterable, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from vaultmem.config import Config
from vaultmem.index import manifest as mf
from vaultmem.vault import LinkResolver, NoteName, strip_md, walk_notes

__all__ = [
    "FILE_NAME",
    "Edge",
    "LinkGraph",
    "index_current",
]

FILE_NAME = "graph.sqlite"
_FORMAT = 2


@dataclass(frozen=True)
class Edge:
    """One resolved link: written in ``source``, reaching ``target`` (vault-relative paths).

    ``type`` is one of :data:`LINK_TYPES`, or ``"wikilink"`` for a body link.
    """

    source: str
    target: str
    type: str


def _resolve(
    source: str, texts: Iterable[Sequence[str]], resolver: LinkResolver
) -> list[Sequence[str]]:
    """``(target path, type)`` of each link of ``source`` that reaches another note."""
    out: dict[tuple[str, str], None] = {}
    for link_type, text in texts:
        target = resolver.resolve_link(text, source)
        if target is not None and target != source:
            out[(target, link_type)] = None
    return list(out)


class LinkGraph:
    """Resolved links, indexed both ways: out-edges and in-edges of every note.

    Links are held as plain ``(path, type)`` pairs and become :class:`Edge` values only
    when asked for (a vault has hundreds of thousands; a query looks at a few), and the
    in-edge index is built on the first question that needs it.
    """

    def __init__(self, edges: Iterable[Edge]) -> None:
        out: dict[str, list[tuple[str, str]]] = {}
        for e in dict.fromkeys((e.source, e.target, e.type) for e in edges):
            out.setdefault(e[0], []).append((e[1], e[2]))
        self._setup(out)

    def _setup(self, out: Mapping[str, Sequence[Sequence[str]]]) -> None:
        self._raw_out = out
        self._raw_into: dict[str, list[tuple[str, str]]] | None = None
        self._out: dict[str, tuple[Edge, ...]] = {}
        self._into: dict[str, tuple[Edge, ...]] = {}
        self._count = sum(len(v) for v in out.values())

    @classmethod
    def _of(cls, out: Mapping[str, Sequence[Sequence[str]]]) -> LinkGraph:
        """A graph of ``source → [(target, type), ...]``, each pair distinct, taken as is."""
        graph = cls.__new__(cls)
        graph._setup(out)
        return graph

    @classmethod
    def load(cls, config: Config) -> LinkGraph:
        """The graph of the vault's index (empty when it was never indexed).

        Answers from ``graph.sqlite`` in the cache, after re-resolving what changed since
        it was last brought up to date (nothing, when the manifest did not change).
        """
        store = mf.open_reader(config.cache_dir)
        if store is None:
            return cls(())
        with store, store.snapshot():
            version = store.rows_version()
            conn = _open(config.cache_dir)
            if conn is None:
                return _in_memory(store)
            try:
                if _version(conn) != version:
                    _refresh(conn, store.path)
            except sqlite3.OperationalError:  # a cache this process may read, not write
                conn.close()
                return _in_memory(store)
            return _StoredGraph(conn)

    def out(self, path: str) -> tuple[Edge, ...]:
        """The links written in ``path``."""
        found = self._out.get(path)
        if found is None:
            found = tuple(Edge(path, t, k) for t, k in self._raw_out.get(path, ()))
            self._out[path] = found
        return found

    def into(self, path: str) -> tuple[Edge, ...]:
        """The links pointing at ``path``."""
        found = self._into.get(path)
        if found is None:
            if self._raw_into is None:
                self._raw_into = {}
                for source, pairs in self._raw_out.items():
                    for t, k in pairs:
                        self._raw_into.setdefault(t, []).append((source, k))
            found = tuple(Edge(s, path, k) for s, k in self._raw_into.get(path, ()))
            self._into[path] = found
        return found

    def neighbours(self, path: str, types: Collection[str] | None = None) -> tuple[Edge, ...]:
        """Edges in both directions (out first); ``types`` keeps only those link types."""
        edges = self.out(path) + self.into(path)
        if types is None:
            return edges
        return tuple(e for e in edges if e.type in types)

    def __len__(self) -> int:
        return self._count


_DDL = (
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS notes (path TEXT PRIMARY KEY, hash TEXT NOT NULL,"
    " aliases TEXT NOT NULL) WITHOUT ROWID",
    # The last path segment of each link target, lower-cased: the one part of a link that
    # a note's file name or alias must match for the link to reach it.
    "CREATE TABLE IF NOT EXISTS names (source TEXT NOT NULL, name TEXT NOT NULL,"
    " PRIMARY KEY (source, name)) WITHOUT ROWID",
    "CREATE INDEX IF NOT EXISTS names_name ON names (name)",
    # Each note's file name and aliases, lower-cased: the notes a link name can reach.
    "CREATE TABLE IF NOT EXISTS keys (path TEXT NOT NULL, name TEXT NOT NULL,"
    " PRIMARY KEY (path, name)) WITHOUT ROWID",
    "CREATE INDEX IF NOT EXISTS keys_name ON keys (name)",
    "CREATE TABLE IF NOT EXISTS edges (source TEXT NOT NULL, pos INTEGER NOT NULL,"
    " target TEXT NOT NULL, type TEXT NOT NULL, PRIMARY KEY (source, pos)) WITHOUT ROWID",
    "CREATE INDEX IF NOT EXISTS edges_target ON edges (target, source, pos)",
)
_BUSY_TIMEOUT_S = 30.0
_INDEXES = ("names_name", "keys_name", "edges_target")
_BULK = 5000  # notes to re-resolve above which the indexes are rebuilt, not updated


def _link_name(text: str) -> str:
    return strip_md(text.strip().lstrip("/")).lower().rsplit("/", 1)[-1]


def _note_keys(path: str, aliases: str) -> set[str]:
    """The link names that can reach ``path``: its file name and its aliases."""
    keys = {PurePosixPath(path).stem.lower()}
    return keys | {a.strip().lower() for a in (json.loads(aliases) if aliases else ())}


class _StoredGraph(LinkGraph):
    """The graph in ``graph.sqlite``, answered by indexed lookups: nothing is loaded."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self._out, self._into = {}, {}

    def out(self, path: str) -> tuple[Edge, ...]:
        """The links written in ``path``."""
        found = self._out.get(path)
        if found is None:
            sql = "SELECT target, type FROM edges WHERE source = ? ORDER BY pos"
            rows = self._conn.execute(sql, (path,)).fetchall()
            found = self._out[path] = tuple(Edge(path, t, k) for t, k in rows)
        return found

    def into(self, path: str) -> tuple[Edge, ...]:
        """The links pointing at ``path``."""
        found = self._into.get(path)
        if found is None:
            sql = "SELECT source, type FROM edges WHERE target = ? ORDER BY source, pos"
            rows = self._conn.execute(sql, (path,)).fetchall()
            found = self._into[path] = tuple(Edge(s, path, k) for s, k in rows)
        return found

    def __len__(self) -> int:
        return int(self._conn.execute("SELECT count(*) FROM edges").fetchone()[0])

    def __del__(self) -> None:
        # The contract has no close(): the connection goes with the graph.
        self._conn.close()


def _connect(path: Path) -> sqlite3.Connection:
    # One connection per graph, used from whichever thread a server answers on: it only
    # reads after the refresh, and sqlite serialises calls on it.
    conn = sqlite3.connect(
        path, timeout=_BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
    )
    try:
        conn.execute("PRAGMA synchronous=NORMAL")
        if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            conn.execute("PRAGMA journal_mode=WAL")
        meta = (
            dict(conn.execute("SELECT key, value FROM meta").fetchall()) if _has_meta(conn) else {}
        )
        if meta.get("format") != str(_FORMAT):
            conn.execute("BEGIN IMMEDIATE")
            for table in ("meta", "notes", "names", "keys", "edges"):
                conn.execute(f"DROP TABLE IF EXISTS {table}")
            for ddl in _DDL:
                conn.execute(ddl)
            conn.execute("INSERT INTO meta VALUES ('format', ?)", (str(_FORMAT),))
            conn.execute("COMMIT")
    except BaseException:
        conn.close()
        raise
    return conn


def _has_meta(conn: sqlite3.Connection) -> bool:
    sql = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'"
    return conn.execute(sql).fetchone() is not None


def _open(cache_dir: Path) -> sqlite3.Connection | None:
    """``graph.sqlite`` ready to read (a damaged file is started afresh), or None when
    the cache folder cannot hold it."""
    path = cache_dir / FILE_NAME
    try:
        return _connect(path)
    except sqlite3.DatabaseError:
        for suffix in ("", "-wal", "-shm", "-journal"):
            with suppress(FileNotFoundError):
                (cache_dir / (FILE_NAME + suffix)).unlink()
    except OSError:
        return None
    try:
        return _connect(path)
    except (sqlite3.Error, OSError):
        return None


def _version(conn: sqlite3.Connection) -> str | None:
    """The manifest token the stored graph was built at (None: never built)."""
    row = conn.execute("SELECT value FROM meta WHERE key = 'version'").fetchone()
    return str(row[0]) if row else None


def _refresh(conn: sqlite3.Connection, manifest: Path) -> None:
    """Bring the stored graph to the manifest's rows, in one write transaction that reads
    the manifest (attached) as one snapshot.

    Re-resolved: the notes whose content changed, and the notes with a link whose name
    is the file name or an alias of a note added, removed or re-aliased.
    """
    conn.execute("ATTACH DATABASE ? AS man", (str(manifest),))
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            row = conn.execute("SELECT value FROM man.meta WHERE key = 'rows_version'").fetchone()
            version = str(row[0]) if row else ""
            if _version(conn) != version:  # else another process did it while we waited
                _update(conn)
                conn.execute("INSERT OR REPLACE INTO meta VALUES ('version', ?)", (version,))
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
    finally:
        conn.execute("DETACH DATABASE man")


_Row = tuple[str, str, str, str]  # path, hash, aliases, links: a manifest row


def _update(conn: sqlite3.Connection) -> None:
    changed: list[_Row] = []
    moved: set[str] = set()  # names whose notes were added, removed or re-aliased
    for path, hash_, aliases, links, was in conn.execute(
        "SELECT m.path, m.hash, m.aliases, m.links, g.aliases FROM man.notes m"
        " LEFT JOIN notes g ON g.path = m.path WHERE g.path IS NULL OR g.hash != m.hash"
    ):
        changed.append((path, hash_, aliases, links))
        if was != aliases:
            moved |= _note_keys(path, aliases) | (_note_keys(path, was) if was else set())
    gone = conn.execute(
        "SELECT path, aliases FROM notes WHERE path NOT IN (SELECT path FROM man.notes)"
    ).fetchall()
    for path, was in gone:
        moved |= _note_keys(path, was)
    done = {r[0] for r in changed} | {p for p, _ in gone}
    sql = "SELECT path, hash, aliases, links FROM man.notes WHERE path = ?"
    todo = changed + [
        row for p in sorted(_sources_naming(conn, moved) - done) for row in conn.execute(sql, (p,))
    ]
    drop = [(p,) for p in done | {r[0] for r in todo}]
    bulk = len(todo) > _BULK
    if bulk:  # random inserts into three indexes cost more than sorting once afterwards
        for index in _INDEXES:
            conn.execute(f"DROP INDEX IF EXISTS {index}")
    for table, column in (
        ("notes", "path"),
        ("keys", "path"),
        ("names", "source"),
        ("edges", "source"),
    ):
        conn.executemany(f"DELETE FROM {table} WHERE {column} = ?", drop)
    conn.executemany("INSERT INTO notes VALUES (?, ?, ?)", (r[:3] for r in todo))
    conn.executemany(
        "INSERT INTO keys VALUES (?, ?)", ((r[0], k) for r in todo for k in _note_keys(r[0], r[2]))
    )
    texts = {r[0]: json.loads(r[3]) if r[3] else [] for r in todo}
    conn.executemany(
        "INSERT OR IGNORE INTO names VALUES (?, ?)",
        ((p, _link_name(text)) for p, links in texts.items() for _, text in links),
    )
    names = {_link_name(t) for links in texts.values() for _, t in links}
    resolver = _resolver(conn, names, every=bulk or len(names) > 1000)
    conn.executemany(
        "INSERT INTO edges VALUES (?, ?, ?, ?)",
        (
            (p, i, target, link_type)
            for p, links in texts.items()
            for i, (target, link_type) in enumerate(_resolve(p, links, resolver))
        ),
    )
    if bulk:
        for ddl in _DDL:
            conn.execute(ddl)


def _resolver(conn: sqlite3.Connection, names: set[str], *, every: bool) -> LinkResolver:
    """A resolver over the notes whose file name or an alias is one of ``names``: every
    note a link of those names can reach, so it resolves them as one over all notes does.
    ``every``: over all notes (a large build: one scan)."""
    if every:
        rows = conn.execute("SELECT path, aliases FROM notes").fetchall()
    else:
        sql = (
            "SELECT n.path, n.aliases FROM keys k JOIN notes n ON n.path = k.path WHERE k.name = ?"
        )
        rows = list({r for name in names for r in conn.execute(sql, (name,))})
    return LinkResolver(_names(dict(rows)))


def _sources_naming(conn: sqlite3.Connection, keys: Iterable[str]) -> set[str]:
    sql = "SELECT source FROM names WHERE name = ?"
    return {s for key in keys for (s,) in conn.execute(sql, (key,))}


def _in_memory(store: mf.Store) -> LinkGraph:
    """Every link resolved without a cache file (a cache folder this process cannot write)."""
    rows = store.link_rows()
    resolver = LinkResolver(_names({p: a for p, _, a, _ in rows}))
    return LinkGraph._of(
        {p: _resolve(p, json.loads(links), resolver) for p, _, _, links in rows if links}
    )


def _names(aliases: Mapping[str, str]) -> list[NoteName]:
    # Titles do not take part in resolving a [[link]]: file names and aliases do.
    return [NoteName(p, "", tuple(json.loads(a)) if a else ()) for p, a in aliases.items()]


def index_current(config: Config) -> bool:
    """Whether the manifest has a row for every note file and no other, each with the
    file's stat: then the graph is the vault's. One walk (stat only) and one query."""
    none: dict[str, tuple[int, int]] = {}
    stats = mf.read(config.cache_dir, none, mf.Store.stats)
    if not stats:
        return False
    plan = mf.plan(stats, walk_notes(config))
    return not (plan.new or plan.changed or plan.removed)
