"""`search`: BM25F hits turned into results with their best line."""

from __future__ import annotations

from pathlib import Path

from vaultmem.config import Config
from vaultmem.index.lexical import LexicalHit, LexicalIndex, query_terms
from vaultmem.retrieval.hits import Filters, Hit
from vaultmem.retrieval.snippets import Snippet, best_line
from vaultmem.vault import in_collection


def note_snippet(root: Path, path: str, terms: list[str], first_line: int = 1) -> Snippet:
    """The best line of the note at ``path`` for ``terms`` (empty when it can't be read)."""
    try:
        text = (root / path).read_text(encoding="utf-8-sig", errors="replace")
    except OSError:
        return Snippet("", 0)
    return best_line(text.splitlines(), terms, first_line=first_line)


def _body_start(root: Path, path: str) -> int:
    # The snippet should come from the body, not the YAML; find the closing delimiter.
    try:
        with (root / path).open("r", encoding="utf-8-sig", errors="replace") as fh:
            first = fh.readline()
            if first.rstrip("\r\n") != "---":
                return 1
            for number, line in enumerate(fh, start=2):
                if line.rstrip("\r\n") in ("---", "..."):
                    return number + 1
    except OSError:
        pass
    return 1


def to_hits(config: Config, raw: list[LexicalHit], terms: list[str]) -> list[Hit]:
    """Attach each lexical hit's best snippet (read from the note itself)."""
    hits = []
    for r in raw:
        snip = note_snippet(config.vault, r.path, terms, _body_start(config.vault, r.path))
        hits.append(Hit(r.path, r.title, r.score, snip.text, snip.line, r.type, r.status))
    return hits


def lexical_hits(
    config: Config,
    text: str,
    *,
    limit: int,
    filters: Filters = Filters(),
    index: LexicalIndex | None = None,
) -> list[LexicalHit]:
    """Raw BM25F hits (scores, no snippets) with every filter applied, collections included.

    Example:
        >>> [h.path for h in lexical_hits(config, "redis", limit=3)]  # doctest: +SKIP
    """
    index = index or LexicalIndex.open(config.cache_dir)
    wanted = limit
    if filters.collection:
        coll = config.collection(filters.collection)
        filters = _with_folder(filters, coll.path)
        wanted = limit * 5
    raw = index.search(text, limit=wanted, filters=filters)
    if filters.collection:
        raw = [r for r in raw if in_collection(r.path, config, filters.collection)][:limit]
    return raw


def search(
    config: Config,
    text: str,
    *,
    limit: int = 10,
    filters: Filters = Filters(),
    index: LexicalIndex | None = None,
) -> list[Hit]:
    """BM25F search of the vault; never raises on any query string.

    Example:
        >>> search(config, "postgres migrations", limit=5)  # doctest: +SKIP
    """
    raw = lexical_hits(config, text, limit=limit, filters=filters, index=index)
    return to_hits(config, raw, query_terms(text[:2000]))


def _with_folder(filters: Filters, folder: str) -> Filters:
    if not folder or filters.folder:
        return filters
    return Filters(
        filters.folder or folder, filters.tag, filters.type, filters.status, filters.collection
    )
