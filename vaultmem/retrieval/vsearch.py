"""`vsearch` and `similar`: nearest fragments by vector, grouped to notes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from vaultmem.config import Config
from vaultmem.embedding import FragmentRef, fragment_map
from vaultmem.errors import IndexStateError
from vaultmem.index import manifest as mf
from vaultmem.inference.base import Embedder
from vaultmem.markdown import expand_tag
from vaultmem.retrieval.hits import HIDDEN_STATUSES, Filters, Hit
from vaultmem.retrieval.snippets import MAX_SNIPPET
from vaultmem.vault import in_collection


def passes(config: Config, path: str, entry: mf.Entry, filters: Filters) -> bool:
    """Whether a note passes the search filters (hidden statuses unless asked for)."""
    if filters.status:
        if entry.status != filters.status.lower():
            return False
    elif entry.status in HIDDEN_STATUSES:
        return False
    if filters.folder:
        folder = filters.folder.strip("/")
        if not path.startswith(folder + "/"):
            return False
    if filters.type and entry.type != filters.type.lower():
        return False
    if filters.tag:
        wanted = filters.tag.lstrip("#").lower()
        if not any(wanted in expand_tag(t) for t in entry.tags):
            return False
    return not filters.collection or in_collection(path, config, filters.collection)


def fragment_snippet(config: Config, path: str, ref: FragmentRef) -> str:
    """The fragment's lines, squeezed to one line of at most MAX_SNIPPET characters."""
    try:
        lines = (config.vault / path).read_text("utf-8-sig", errors="replace").splitlines()
    except OSError:
        return ""
    span = [ln for ln in lines[ref.start_line - 1 : ref.end_line] if ln.strip()]
    # Headings are already in the result's title line; show the words under them.
    prose = [ln for ln in span if not ln.lstrip().startswith("#")] or span
    text = " ".join(" ".join(prose).split())
    return text if len(text) <= MAX_SNIPPET else text[: MAX_SNIPPET - 1].rstrip() + "…"


@dataclass(frozen=True)
class _Index:
    manifest: mf.Manifest
    owners: dict[str, list[tuple[str, FragmentRef]]]


def _load(config: Config, embedder: Embedder) -> _Index:
    manifest = mf.load(config.cache_dir)
    if not manifest.entries:
        raise IndexStateError("the vault is not indexed yet: run `vaultmem index`")
    owners = fragment_map(config, embedder.max_chars)
    if not owners:
        raise IndexStateError(f"no vectors for model {embedder.model_id} yet: run `vaultmem embed`")
    return _Index(manifest, owners)


def _no_vectors(model_id: str, models: list[tuple[str, int, int]]) -> str:
    others = [f"{m} ({n} vectors)" for m, _dim, n in models if m != model_id and n]
    hint = f"; the store has vectors of another model: {', '.join(others)}" if others else ""
    return f"no vectors for model {model_id} yet: run `vaultmem embed`{hint}"


def nearest_notes(
    config: Config,
    embedder: Embedder,
    vector: Sequence[float],
    *,
    limit: int,
    filters: Filters = Filters(),
    exclude: str | None = None,
) -> list[Hit]:
    """Notes owning the fragments nearest to ``vector``, best fragment first per note."""
    return nearest_notes_many(
        config, embedder, [vector], limit=limit, filters=filters, exclude=exclude
    )[0]


def nearest_notes_many(
    config: Config,
    embedder: Embedder,
    vectors: Sequence[Sequence[float]],
    *,
    limit: int,
    filters: Filters = Filters(),
    exclude: str | None = None,
) -> list[list[Hit]]:
    """:func:`nearest_notes` for several query vectors, one hit list per vector, in order.

    The fragment map and the store are opened once for all of them (``query`` searches
    the original and every expansion variant this way).
    """
    from vaultmem.index.vectors import VectorStore

    if not vectors:
        return []
    idx = _load(config, embedder)
    store = VectorStore.open(config.cache_dir, embedder.model_id, embedder.dimension, config.chroma)
    try:
        total = store.count()
        if total == 0:
            raise IndexStateError(_no_vectors(embedder.model_id, store.models()))
        out: list[list[Hit]] = [[] for _ in vectors]
        pending = list(range(len(vectors)))
        k = min(total, max(64, limit * 10))
        # Filters can hide most neighbours: widen the search for the vectors still short of
        # `limit` notes until they have enough or the whole store was looked at.
        while pending:
            ranked = store.query_many([vectors[i] for i in pending], k)
            short = []
            for i, pairs in zip(pending, ranked, strict=True):
                out[i] = _group(config, idx, pairs, limit, filters, exclude)
                if len(out[i]) < limit and k < total:
                    short.append(i)
            pending = short
            k = min(total, k * 4)
        return out
    finally:
        store.close()


def _group(
    config: Config,
    idx: _Index,
    ranked: list[tuple[str, float]],
    limit: int,
    filters: Filters,
    exclude: str | None,
) -> list[Hit]:
    hits: list[Hit] = []
    seen: set[str] = set()
    for frag_hash, similarity in ranked:
        for path, ref in idx.owners.get(frag_hash, ()):
            entry = idx.manifest.entries.get(path)
            if path in seen or path == exclude or entry is None:
                continue
            if not passes(config, path, entry, filters):
                continue
            seen.add(path)
            snippet = fragment_snippet(config, path, ref)
            title = entry.title or PurePosixPath(path).stem
            hits.append(
                Hit(
                    path,
                    title,
                    similarity,
                    snippet,
                    ref.start_line,
                    entry.type,
                    entry.status,
                    ref.end_line,
                )
            )
            if len(hits) >= limit:
                return hits
    return hits


def vsearch(
    config: Config, text: str, embedder: Embedder, *, limit: int = 10, filters: Filters = Filters()
) -> list[Hit]:
    """Semantic search: embed the query, find the nearest fragments, group them to notes.

    Example:
        >>> vsearch(config, "how do I deploy", LocalEmbedder(), limit=5)  # doctest: +SKIP
    """
    if not text.strip():
        return []
    vector = embedder.embed([text[:4000]])[0]
    return nearest_notes(config, embedder, vector, limit=limit, filters=filters)


def similar(
    config: Config, path: str, embedder: Embedder, *, limit: int = 10, filters: Filters = Filters()
) -> list[Hit]:
    """Notes closest to the note at ``path`` (the mean of its fragment vectors)."""
    from vaultmem.index.vectors import VectorStore

    idx = _load(config, embedder)
    mine = [h for h, owners in idx.owners.items() if any(p == path for p, _ in owners)]
    if not mine:
        raise IndexStateError(f"{path} has no vectors yet: run `vaultmem embed`")
    store = VectorStore.open(config.cache_dir, embedder.model_id, embedder.dimension, config.chroma)
    try:
        vectors = list(store.vectors(mine).values())
    finally:
        store.close()
    if not vectors:
        raise IndexStateError(f"{path} has no vectors yet: run `vaultmem embed`")
    mean = [sum(col) / len(vectors) for col in zip(*vectors, strict=True)]
    norm = sum(x * x for x in mean) ** 0.5 or 1.0
    centre = [x / norm for x in mean]
    return nearest_notes(config, embedder, centre, limit=limit, filters=filters, exclude=path)
