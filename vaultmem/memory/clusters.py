"""Finding near-duplicate memories: the plan `consolidate` carries out (issue 12, SPEC §4).

Which notes: the live notes (not superseded, forgotten or archived) of the inbox and
memory folders, where `remember`, `extract` and `promote` put memories; ``folder`` picks
one folder instead (``"."``: the whole vault). Notes people wrote elsewhere are left
alone unless asked for: two similar meeting notes are not a duplicate memory.

How they cluster: single linkage over a similarity graph. With vectors of the configured
embedder, a note's vector is the normalised mean of its fragments' stored vectors (no
model runs) and two notes link at cosine ≥ 0.83. Without vectors, the 3-word shingle
Jaccard that `remember` uses links them at ≥ 0.5: `remember` already writes ``refines``
at 0.65, and half of all word triples shared is far above what unrelated notes share,
so 0.5 catches the chatty rewrites `remember` let through without joining topics.
Pairs already linked ``related`` or ``contradicts`` were judged distinct: no edge. Two
notes tagged on different subjects (:func:`vaultmem.scores.tagged_apart`) are never
linked into a cluster, however alike their words.

A cluster's **cohesion** is its *minimum* pairwise similarity: single linkage chains
A~B~C where A and C may differ, and a merge must hold for every pair. Cohesion ≥ 0.9
(cosine) merges at once; between 0.75 and 0.9 the LLM decides (merge / keep apart /
contradicts) when one is configured, else the cluster is only reported; below that the
chain is too loose and is only reported. On the shingle scale the bands are 0.9 and
0.5: 3-word shingles cannot tell a sentence that adds a fact from one that changes an
entity ("the billing service's database…" against "the checkout service's database…"
share 0.76-0.82 of their shingles), so only texts that are nearly the same are merged
without a review, as on the cosine scale; the band below goes to the LLM. What is done
with each cluster is :mod:`vaultmem.memory.consolidate`.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from vaultmem.config import Config
from vaultmem.errors import EndpointError, IndexStateError, VaultmemError
from vaultmem.frontmatter.scan import split
from vaultmem.index import manifest as mf
from vaultmem.indexer import index_vault
from vaultmem.inference.base import Embedder
from vaultmem.lookup import note_names
from vaultmem.memory.remember import content_key, target_folder, word_shingles
from vaultmem.memory_state import NoteMemory, note_memory
from vaultmem.note import link_targets, read_raw
from vaultmem.scores import tagged_apart
from vaultmem.vault import LinkResolver

__all__ = [
    "COSINE",
    "SHINGLES",
    "Bands",
    "Cluster",
    "Consolidation",
    "candidate_folders",
    "find_clusters",
    "head_member",
]

MAX_REVIEW_MEMBERS = 8  # larger clusters in the review band are reported, not asked about


@dataclass(frozen=True)
class Bands:
    """Thresholds on one similarity scale: ``link`` joins two notes, a cluster with
    cohesion ≥ ``merge`` is merged, ≥ ``review`` goes to the LLM."""

    link: float
    merge: float
    review: float


COSINE = Bands(link=0.83, merge=0.90, review=0.75)
SHINGLES = Bands(link=0.50, merge=0.90, review=0.50)


@dataclass(frozen=True)
class Cluster:
    """Near-duplicate notes (oldest first), how alike they are, and what was done.

    ``action``: ``merge`` (cohesion ≥ merge band), ``ask`` (review band, an LLM is
    configured, at most 8 members), ``review`` (review band otherwise: reported),
    ``loose`` (below it: reported). ``outcome`` after a run: ``planned`` (dry run), ``merged``,
    ``kept_apart``, ``contradicts``, ``reported`` or ``failed`` (``reason`` says why).
    """

    members: tuple[str, ...]
    cohesion: float
    action: str
    title: str | None
    outcome: str = "planned"
    merged: str | None = None
    reason: str = ""

    def as_json(self) -> dict[str, object]:
        """One line of ``consolidate --json``."""
        return {
            "members": list(self.members),
            "cohesion": self.cohesion,
            "action": self.action,
            "title": self.title,
            "outcome": self.outcome,
            "merged": self.merged,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class Consolidation:
    """What `consolidate` found and did: ``similarity`` is ``cosine`` or ``shingles``;
    ``notes`` live notes compared; ``unembedded`` left out for want of vectors."""

    folders: tuple[str, ...]
    similarity: str
    bands: Bands
    notes: int
    unembedded: int
    clusters: tuple[Cluster, ...]
    dry_run: bool
    warnings: tuple[str, ...] = field(default=())

    def as_json(self) -> dict[str, object]:
        """The whole report as one object (the CLI prints its clusters one per line)."""
        return {
            "folders": list(self.folders),
            "similarity": self.similarity,
            "thresholds": {
                "link": self.bands.link,
                "merge": self.bands.merge,
                "review": self.bands.review,
            },
            "notes": self.notes,
            "unembedded": self.unembedded,
            "dry_run": self.dry_run,
            "clusters": [c.as_json() for c in self.clusters],
            "warnings": list(self.warnings),
        }


def candidate_folders(config: Config, folder: str | None) -> tuple[str, ...]:
    """The folders to compare: ``folder`` when given, else the inbox and memory folders."""
    if folder is not None:
        return (target_folder(config, folder),)
    return tuple(dict.fromkeys(f for f in (config.inbox_folder, config.memory_folder) if f))


def _in(path: str, folders: Sequence[str]) -> bool:
    return "" in folders or path.startswith(tuple(f"{f}/" for f in folders))


def _live(entries: Mapping[str, mf.Entry], folders: Sequence[str]) -> dict[str, NoteMemory]:
    out = {}
    for path, entry in entries.items():
        if _in(path, folders):
            memory = note_memory(path, entry)
            if not memory.retired:
                out[path] = memory
    return out


def _distinct_pairs(
    entries: Mapping[str, mf.Entry], paths: Iterable[str], resolver: LinkResolver
) -> set[frozenset[str]]:
    """Pairs linked ``related`` or ``contradicts``: judged distinct before, never merged."""
    out = set()
    for path in paths:
        memory = entries[path].memory
        for key in ("related", "contradicts"):
            for target in link_targets(memory.get(key)):
                other = resolver.resolve_link(target, path)
                if other and other != path:
                    out.add(frozenset((path, other)))
    return out


def _note_vectors(config: Config, embedder: Embedder, paths: Sequence[str]) -> dict[str, Any]:
    """path → unit vector (numpy), the mean of its fragments' stored vectors."""
    import numpy as np

    from vaultmem.retrieval.vsearch import VectorIndex

    with VectorIndex(config, embedder) as index:
        found = index.notes_vectors(paths)
    out = {}
    for path, rows in found.items():
        if rows:
            mean = np.asarray(rows, dtype=np.float32).mean(axis=0)
            norm = float(np.linalg.norm(mean))
            if norm > 0:
                out[path] = mean / norm
    return out


class _Similarity:
    """Pairwise similarity of the candidate notes on one scale, and the linked pairs."""

    def __init__(self, kind: str, paths: Sequence[str], data: Mapping[str, Any]) -> None:
        self.kind, self.paths, self.data = kind, list(paths), data

    def __call__(self, a: str, b: str) -> float:
        if self.kind == "cosine":
            return float(self.data[a] @ self.data[b])
        sa, sb = self.data[a], self.data[b]
        union = len(sa | sb)
        return len(sa & sb) / union if union else 0.0

    def edges(self, threshold: float) -> dict[frozenset[str], float]:
        """Every pair at or above ``threshold``."""
        return self._cosine(threshold) if self.kind == "cosine" else self._shingles(threshold)

    def _cosine(self, threshold: float) -> dict[frozenset[str], float]:
        import numpy as np

        if len(self.paths) < 2:
            return {}
        matrix = np.stack([self.data[p] for p in self.paths])
        out: dict[frozenset[str], float] = {}
        for start in range(0, len(self.paths), 1024):  # bounded memory on large folders
            block = matrix[start : start + 1024] @ matrix.T
            for i, j in zip(*np.nonzero(block >= threshold), strict=True):
                if start + i < j:
                    pair = frozenset((self.paths[start + i], self.paths[j]))
                    out[pair] = round(float(block[i, j]), 4)
        return out

    def _shingles(self, threshold: float) -> dict[frozenset[str], float]:
        # A set-similarity join with prefix filtering, exact: two sets with Jaccard ≥ t
        # share a shingle among the |s| - ceil(t·|s|) + 1 rarest of each. Only those
        # prefixes are indexed and probed, and a pair is a candidate only when the sizes
        # allow t (|small| ≥ t·|large|), so long notes do not compare every word triple.
        sets = [self.data[p] for p in self.paths]
        df: Counter[int] = Counter()
        for shingles in sets:
            df.update(shingles)
        postings: dict[int, list[int]] = {}
        candidates: set[tuple[int, int]] = set()
        for i in sorted(range(len(sets)), key=lambda k: len(sets[k])):
            size = len(sets[i])
            keep = size - math.ceil(threshold * size) + 1
            for token in sorted(sets[i], key=lambda x: (df[x], x))[:keep]:
                for j in postings.get(token, ()):
                    if len(sets[j]) >= threshold * size:
                        candidates.add((j, i))
                postings.setdefault(token, []).append(i)
        out = {}
        for j, i in candidates:
            common = len(sets[i] & sets[j])
            union = len(sets[i]) + len(sets[j]) - common
            if union and common / union >= threshold:
                out[frozenset((self.paths[i], self.paths[j]))] = round(common / union, 4)
        return out


def _components(paths: Sequence[str], edges: Iterable[frozenset[str]]) -> list[list[str]]:
    """Connected components of two or more notes (union-find)."""
    parent = {p: p for p in paths}

    def root(p: str) -> str:
        while parent[p] != p:
            parent[p] = parent[parent[p]]
            p = parent[p]
        return p

    for pair in edges:
        a, b = sorted(pair)
        parent[root(a)] = root(b)
    groups: dict[str, list[str]] = {}
    for p in paths:
        groups.setdefault(root(p), []).append(p)
    return [g for g in groups.values() if len(g) > 1]


def _age_key(memory: NoteMemory) -> tuple[datetime, str]:
    when = memory.state.created or memory.state.last_used or memory.state.mtime
    return (when or datetime.max.replace(tzinfo=UTC), memory.path)


def head_member(memories: Sequence[NoteMemory]) -> NoteMemory:
    """The member whose title the merged note takes: most used, then oldest."""
    return min(memories, key=lambda m: (-m.state.use_count, _age_key(m)))


def _action(cohesion: float, size: int, bands: Bands, has_llm: bool) -> str:
    if cohesion >= bands.merge:
        return "merge"
    if cohesion >= bands.review:
        # A long chain would make a prompt too long for a small model to judge well.
        return "ask" if has_llm and size <= MAX_REVIEW_MEMBERS else "review"
    return "loose"


def _similarity(
    config: Config, live: Mapping[str, NoteMemory], embedder: Embedder | None
) -> tuple[_Similarity, int, list[str]]:
    """Vectors when the vault has them, else shingles; and how many notes lack a vector."""
    paths = sorted(live)
    warnings: list[str] = []
    if embedder is not None and paths:
        try:
            vectors = _note_vectors(config, embedder, paths)
        except (IndexStateError, EndpointError) as exc:
            warnings.append(f"vectors not used: {exc}")
        else:
            kept = [p for p in paths if p in vectors]
            return _Similarity("cosine", kept, vectors), len(paths) - len(kept), warnings
    shingles = {}
    for path in paths:
        try:
            raw, _stat = read_raw(config.vault, path)
            body = split(raw, path).body.decode("utf-8", errors="replace")
        except VaultmemError:
            continue  # a note that vanished or cannot be read is no duplicate
        # Hashed once: set operations on ints are several times faster than on tuples.
        shingles[path] = frozenset(map(hash, word_shingles(content_key(body))))
    return _Similarity("shingles", list(shingles), shingles), 0, warnings


def find_clusters(
    config: Config,
    folders: Sequence[str],
    threshold: float | None,
    embedder: Embedder | None,
    has_llm: bool,
) -> Consolidation:
    """The plan: live notes, their similarity graph, clusters with cohesion and action."""
    index_vault(config)
    entries = mf.load(config.cache_dir).entries
    live = _live(entries, folders)
    sim, unembedded, warnings = _similarity(config, live, embedder)
    bands = COSINE if sim.kind == "cosine" else SHINGLES
    if threshold is not None:
        bands = replace(bands, link=threshold)
    edges = sim.edges(bands.link)
    if edges:
        resolver = LinkResolver(note_names(config))
        apart = _distinct_pairs(entries, {p for pair in edges for p in pair}, resolver)
        apart |= {pair for pair in edges if tagged_apart(*(live[p].tags for p in pair))}
        edges = {pair: s for pair, s in edges.items() if pair not in apart}
    clusters = []
    for group in _components(sim.paths, edges):
        members = sorted(group, key=lambda p: _age_key(live[p]))
        cohesion = min(sim(a, b) for a, b in itertools.combinations(members, 2))
        cohesion = round(max(0.0, min(1.0, cohesion)), 4)
        title = head_member([live[p] for p in members]).title
        clusters.append(
            Cluster(
                tuple(members), cohesion, _action(cohesion, len(members), bands, has_llm), title
            )
        )
    clusters.sort(key=lambda c: (-c.cohesion, c.members))
    plan = Consolidation(
        folders=tuple(folders),
        similarity=sim.kind,
        bands=bands,
        notes=len(sim.paths),
        unembedded=unembedded,
        clusters=tuple(clusters),
        dry_run=True,
        warnings=tuple(warnings),
    )
    return plan
