"""`vsearch` and `similar`: nearest fragments by vector, grouped to notes.

A note's vector score is its best fragment's cosine. ``query`` also reads the note-lead
list from the same nearest fragments (:meth:`VectorIndex.nearest_with_leads`): the notes
whose *first* fragment (title and opening section: what the note is about) is among
them, scored by that fragment alone. It needs no vector beyond those already stored.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from vaultmem.config import Config
from vaultmem.errors import IndexStateError
from vaultmem.index import manifest as mf
from vaultmem.index.records import FragmentRef, fragment_map
from vaultmem.inference.base import Embedder
from vaultmem.markdown import expand_tag
from vaultmem.model import HIDDEN_STATUSES, Filters, Hit, has_words
from vaultmem.retrieval import fusion
from vaultmem.retrieval.memory_rank import RankingOptions, rank_hits
from vaultmem.retrieval.search import RANKING_DEPTH, passes_outside_index, version_terms
from vaultmem.retrieval.snippets import MAX_SNIPPET

if TYPE_CHECKING:
    from vaultmem.index.vector_reads import StoredVectors


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
    return passes_outside_index(config, path, entry, filters)


def fragment_snippet(config: Config, path: str, start_line: int, end_line: int) -> str:
    """The fragment's lines, squeezed to one line of at most MAX_SNIPPET characters."""
    try:
        lines = (config.vault / path).read_text("utf-8-sig", errors="replace").splitlines()
    except OSError:
        return ""
    span = [ln for ln in lines[start_line - 1 : end_line] if ln.strip()]
    # Headings are already in the result's title line; show the words under them.
    prose = [ln for ln in span if not ln.lstrip().startswith("#")] or span
    text = " ".join(" ".join(prose).split())
    return text if len(text) <= MAX_SNIPPET else text[: MAX_SNIPPET - 1].rstrip() + "…"


@dataclass(frozen=True)
class _Index:
    manifest: mf.Manifest
    owners: dict[str, list[tuple[str, FragmentRef]]]
    leads: dict[str, tuple[str, ...]]  # fragment hash → the notes it opens
    lead_of: dict[str, str]  # note path → the hash of the fragment that opens it


def _leads(owners: Mapping[str, list[tuple[str, FragmentRef]]]) -> dict[str, tuple[str, ...]]:
    """fragment hash → the notes whose first fragment (lowest start line) it is."""
    first: dict[str, tuple[int, str]] = {}
    for digest, held in owners.items():
        for path, ref in held:
            if path not in first or ref.start_line < first[path][0]:
                first[path] = (ref.start_line, digest)
    out: dict[str, list[str]] = {}
    for path, (_, digest) in first.items():
        out.setdefault(digest, []).append(path)
    return {digest: tuple(paths) for digest, paths in out.items()}


def _load(config: Config, embedder: Embedder) -> _Index:
    manifest = mf.load(config.cache_dir)
    if not manifest.entries:
        if not manifest.generation:
            raise mf.not_indexed()
        return _Index(manifest, {}, {}, {})  # indexed, and empty: nothing to find
    owners = fragment_map(config, embedder.max_chars, manifest)
    if not owners:
        raise IndexStateError(f"no vectors for model {embedder.model_id} yet: run `vaultmem embed`")
    leads = _leads(owners)
    lead_of = {path: digest for digest, paths in leads.items() for path in paths}
    return _Index(manifest, owners, leads, lead_of)


def _no_vectors(model_id: str, models: list[tuple[str, int, int]]) -> str:
    others = [f"{m} ({n} vectors)" for m, _dim, n in models if m != model_id and n]
    hint = f"; the store has vectors of another model: {', '.join(others)}" if others else ""
    return f"no vectors for model {model_id} yet: run `vaultmem embed`{hint}"


class VectorIndex:
    """The vector side of a vault, opened once: fragment owners, the manifest and the store.

    Opening costs a manifest and fragment-map load plus the store: its flat snapshot
    when that is current (no Chroma), else a Chroma client
    (:class:`~vaultmem.index.vector_reads.StoredVectors`); a process that searches many
    times (``eval``, ``query`` with variants, an agent server) keeps one.
    """

    def __init__(self, config: Config, embedder: Embedder) -> None:
        self.config = config
        self.embedder = embedder
        self._idx = _load(config, embedder)
        self._store: StoredVectors | None = None
        self._total = 0
        if self._idx.manifest.entries:  # an empty vault (a new one) finds nothing, no store
            self._open_store()

    def _open_store(self) -> None:
        from vaultmem.index.vector_reads import StoredVectors

        config, embedder = self.config, self.embedder
        try:
            store = StoredVectors.open(
                config.cache_dir, embedder.model_id, embedder.dimension, config.chroma
            )
        except IndexStateError as exc:
            if config.chroma.host:
                raise
            raise IndexStateError(f"{exc}; run `vaultmem embed` to rebuild it") from None
        total = store.count()
        if total == 0:
            models = store.models()
            store.close()
            raise IndexStateError(_no_vectors(embedder.model_id, models))
        self._store, self._total = store, total

    def reload(self) -> None:
        """Read the manifest and fragment owners again (notes changed; the store did not)."""
        self._idx = _load(self.config, self.embedder)
        if self._store is None and self._idx.manifest.entries:
            self._open_store()  # the vault was empty when opened

    def close(self) -> None:
        """Release the vector store."""
        if self._store is not None:
            self._store.close()

    def __enter__(self) -> VectorIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def nearest_many(
        self,
        vectors: Sequence[Sequence[float]],
        *,
        limit: int,
        filters: Filters = Filters(),
        exclude: str | None = None,
    ) -> list[list[Hit]]:
        """Notes owning the fragments nearest each vector, one hit list per vector.

        Hits carry their fragment's line span but no snippet (see :func:`with_snippets`).
        """
        return [notes for notes, _ in self._nearest(vectors, limit, filters, exclude, False)]

    def nearest_with_leads(
        self, vectors: Sequence[Sequence[float]], *, limit: int, filters: Filters = Filters()
    ) -> list[tuple[list[Hit], list[Hit]]]:
        """:meth:`nearest_many`, and for each vector its note-lead list: the notes whose
        first fragment is among the same nearest fragments, by that fragment's cosine.

        The lead list is read from the fragments the note list was found in (at least
        ``10 × limit``), so it costs no second search; it may hold fewer than ``limit``
        notes. On the man-page dev split it ranks as exact cosine over every note's first
        fragment does (benchmarks/tune_fusion.py: MRR@10 0.890 either way, fused).
        """
        return self._nearest(vectors, limit, filters, None, True)

    def _nearest(
        self,
        vectors: Sequence[Sequence[float]],
        limit: int,
        filters: Filters,
        exclude: str | None,
        leads: bool,
    ) -> list[tuple[list[Hit], list[Hit]]]:
        out: list[tuple[list[Hit], list[Hit]]] = [([], []) for _ in vectors]
        if self._store is None:
            return out
        pending = list(range(len(vectors)))
        k = min(self._total, max(64, limit * 10))
        # Filters can hide most neighbours: widen the search for the vectors still short of
        # `limit` notes until they have enough or the whole store was looked at.
        while pending:
            ranked = self._store.query_many([vectors[i] for i in pending], k)
            short = []
            for i, pairs in zip(pending, ranked, strict=True):
                notes = _group(self.config, self._idx, pairs, limit, filters, exclude)
                opened: list[Hit] = []
                if leads:
                    opened = _group(self.config, self._idx, pairs, limit, filters, None, leads=True)
                out[i] = (notes, opened)
                if len(notes) < limit and k < self._total:
                    short.append(i)
            pending = short
            k = min(self._total, k * 4)
        return out

    @property
    def entries(self) -> Mapping[str, mf.Entry]:
        """The manifest entries (memory keys included) the index was opened with."""
        return self._idx.manifest.entries

    def ranked(
        self,
        vector: Sequence[float],
        text: str,
        *,
        limit: int,
        filters: Filters = Filters(),
        ranking: RankingOptions | None = None,
    ) -> list[Hit]:
        """The notes nearest ``vector`` with their snippets, each scored by its best
        fragment pooled with its lead (:meth:`with_leads`), re-ranked with memory signals
        when ``ranking``.

        The prior reads each note's relevance as its height above the lowest of the
        ``RANKING_DEPTH`` notes looked at, over the best's: cosines of one query sit
        close together (0.25-0.6), so a share of the best one's (as for BM25) would
        let a bounded prior of 0.2 overturn most of them.
        """
        depth = max(limit * 3, RANKING_DEPTH)
        hits = self.with_leads(vector, self.nearest_many([vector], limit=depth, filters=filters)[0])
        if ranking is None:
            return with_snippets(self.config, hits[:limit])
        floor = min((h.score for h in hits), default=0.0)
        options = replace(ranking, show_status=filters.status)
        versions = version_terms(self.config, text, None)
        above = [replace(h, score=h.score - floor) for h in hits]
        ranked = rank_hits(above, self.entries, text, options, limit, versions)
        return with_snippets(self.config, [replace(h, score=h.score + floor) for h in ranked])

    def with_leads(self, vector: Sequence[float], hits: Sequence[Hit]) -> list[Hit]:
        """``hits`` (one query's, best fragment first) each scored by its best fragment's
        cosine pooled with its lead's, the fragment that opens the note
        (:func:`fusion.pool_lead`), best first. The lead says what the whole note is
        about; the best fragment alone rewards a note that mentions the query once."""
        import numpy as np

        if self._store is None:  # an empty vault: no hits to pool
            return list(hits)
        leads = {h.path: self._idx.lead_of[h.path] for h in hits if h.path in self._idx.lead_of}
        stored = self._store.vectors(set(leads.values()))
        query = np.asarray(vector, dtype=np.float32)
        query /= np.linalg.norm(query) or 1.0
        pooled = []
        for hit in hits:
            lead = stored.get(leads.get(hit.path, ""))
            if lead is None:
                pooled.append(hit)
                continue
            row = np.asarray(lead, dtype=np.float32)
            cosine = float(row @ query) / (float(np.linalg.norm(row)) or 1.0)
            pooled.append(replace(hit, score=fusion.pool_lead(hit.score, cosine)))
        return sorted(pooled, key=lambda h: -h.score)

    def note_vectors(self, path: str) -> list[list[float]]:
        """The stored vectors of every fragment of the note at ``path``."""
        return self.notes_vectors([path]).get(path, [])

    def notes_vectors(self, paths: Iterable[str]) -> dict[str, list[list[float]]]:
        """path → the stored vectors of its fragments, for every one of ``paths`` that has
        any (one pass over the fragment owners and one store read for all of them)."""
        wanted = set(paths)
        hashes: dict[str, list[str]] = {}
        for digest, owners in self._idx.owners.items():
            for path, _ref in owners:
                if path in wanted:
                    hashes.setdefault(path, []).append(digest)
        if not hashes or self._store is None:
            return {}
        stored = self._store.vectors({h for found in hashes.values() for h in found})
        out = {p: [stored[h] for h in found if h in stored] for p, found in hashes.items()}
        return {p: rows for p, rows in out.items() if rows}


def with_snippets(config: Config, hits: Sequence[Hit]) -> list[Hit]:
    """``hits`` with the text of their fragments (read only for the hits that are shown)."""
    return [
        replace(h, snippet=fragment_snippet(config, h.path, h.line, h.line_end or h.line))
        for h in hits
    ]


def embed_and_open(
    config: Config, embedder: Embedder, texts: Sequence[str]
) -> tuple[list[list[float]], VectorIndex]:
    """The vectors of ``texts``, embedded as queries, and the opened vector index (the
    caller closes it).

    With a model that runs in process, it embeds in a second thread while this one opens
    the store: opening may import chromadb (about half a second of Python), and the model's
    work releases the GIL, so a one-shot `query` or `vsearch` pays for the longer of the
    two instead of both. An embedding error wins over a store error, as when embedding
    came first.
    """
    prepare = getattr(embedder, "import_libraries", None)
    if prepare is None:
        vectors = embedder.embed(texts, query=True)
        return vectors, VectorIndex(config, embedder)
    from concurrent.futures import ThreadPoolExecutor

    prepare()
    with ThreadPoolExecutor(1, thread_name_prefix="vaultmem-embed") as pool:
        pending = pool.submit(embedder.embed, list(texts), query=True)
        try:
            index = VectorIndex(config, embedder)
        except BaseException:
            failed = pending.exception()
            if isinstance(failed, Exception):
                raise failed from None
            raise
        try:
            return pending.result(), index
        except BaseException:
            index.close()
            raise


def _group(
    config: Config,
    idx: _Index,
    ranked: list[tuple[str, float]],
    limit: int,
    filters: Filters,
    exclude: str | None,
    *,
    leads: bool = False,
) -> list[Hit]:
    """The notes of the ``ranked`` fragments, each at its best one; with ``leads``, only
    the notes whose first fragment is among them, at that one."""
    hits: list[Hit] = []
    seen: set[str] = set()
    for frag_hash, similarity in ranked:
        held = idx.owners.get(frag_hash, [])
        if leads:
            opened = idx.leads.get(frag_hash, ())
            held = [(path, ref) for path, ref in held if path in opened]
        for path, ref in held:
            entry = idx.manifest.entries.get(path)
            if path in seen or path == exclude or entry is None:
                continue
            if not passes(config, path, entry, filters):
                continue
            seen.add(path)
            title = entry.title or PurePosixPath(path).stem
            hits.append(
                Hit(
                    path,
                    title,
                    similarity,
                    "",  # filled by with_snippets for the hits that are shown
                    ref.start_line,
                    entry.type,
                    entry.status,
                    ref.end_line,
                    score_kind="cosine",
                )
            )
            if len(hits) >= limit:
                return hits
    return hits


def vsearch(
    config: Config,
    text: str,
    embedder: Embedder,
    *,
    limit: int = 10,
    filters: Filters = Filters(),
    index: VectorIndex | None = None,
    ranking: RankingOptions | None = None,
) -> list[Hit]:
    """Semantic search: embed the query, find the nearest fragments, group them to notes.

    With ``ranking``, the memory prior and review slots apply as in ``search``.

    Example:
        >>> vsearch(config, "how do I deploy", LocalEmbedder(), limit=5)  # doctest: +SKIP
    """
    if not has_words(text):
        return []
    if index is None:
        vectors, opened = embed_and_open(config, embedder, [text[:4000]])
        with opened:
            return opened.ranked(vectors[0], text, limit=limit, filters=filters, ranking=ranking)
    vector = embedder.embed([text[:4000]], query=True)[0]
    return index.ranked(vector, text, limit=limit, filters=filters, ranking=ranking)


def similar(
    config: Config,
    path: str,
    embedder: Embedder,
    *,
    limit: int = 10,
    filters: Filters = Filters(),
    index: VectorIndex | None = None,
) -> list[Hit]:
    """Notes closest to the note at ``path`` (the mean of its fragment vectors)."""
    if index is None:
        with VectorIndex(config, embedder) as opened:
            return similar(config, path, embedder, limit=limit, filters=filters, index=opened)
    vectors = index.note_vectors(path)
    if not vectors:
        raise IndexStateError(f"{path} has no vectors yet: run `vaultmem embed`")
    mean = [sum(col) / len(vectors) for col in zip(*vectors, strict=True)]
    norm = sum(x * x for x in mean) ** 0.5 or 1.0
    centre = [x / norm for x in mean]
    hits = index.nearest_many([centre], limit=limit, filters=filters, exclude=path)[0]
    return with_snippets(config, hits)
