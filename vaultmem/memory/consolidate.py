"""`consolidate`: collapse near-duplicate memories into one note (issue 12, SPEC §4).

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
Pairs already linked ``related`` or ``contradicts`` were judged distinct: no edge.

A cluster's **cohesion** is its *minimum* pairwise similarity: single linkage chains
A~B~C where A and C may differ, and a merge must hold for every pair. Cohesion ≥ 0.9
(cosine) merges at once; between 0.75 and 0.9 the LLM decides (merge / keep apart /
contradicts) when one is configured, else the cluster is only reported; below that the
chain is too loose and is only reported. On the shingle scale the bands are 0.9 and
0.5: 3-word shingles cannot tell a sentence that adds a fact from one that changes an
entity ("the billing service's database…" against "the checkout service's database…"
share 0.76-0.82 of their shingles), so only texts that are nearly the same are merged
without a review, as on the cosine scale; the band below goes to the LLM.
A verdict of "keep apart" links the members ``related``, "contradicts" links them
``contradicts``: either way the next run does not ask again. Two notes tagged on different
subjects (:func:`vaultmem.scores.tagged_apart`) are never linked into a cluster, however
alike their words.

A merge writes one new note from ``merged.md.j2``: the title of the most-used member
(ties: the oldest), every distinct sentence or bullet of every member (the same text
once normalised, or a sentence contained in a longer kept one, is kept once), the
summed ``use_count``, the latest ``last_used``, the highest ``confidence``, the longest
half-life, ``created`` = the newest member's (when the facts were last stated; the latest
``last_confirmed`` too), and ``supersedes`` + ``promoted_from`` links to each
member (Obsidian draws merged → originals). Each original gets ``status: superseded``
and ``superseded_by: [[merged]]`` and nothing else, so search demotes it below the merged
note and a second run does not see it. All merges happen under one vault lock.
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from vaultmem.config import Config
from vaultmem.errors import EndpointError, IndexStateError, VaultmemError
from vaultmem.frontmatter import split
from vaultmem.index import manifest as mf
from vaultmem.indexer import index_vault, refresh_paths
from vaultmem.inference.base import Embedder
from vaultmem.lookup import note_names
from vaultmem.memory.remember import (
    content_key,
    create_note,
    slugify,
    strip_heading,
    supersede,
    target_folder,
    unique_path,
    word_shingles,
)
from vaultmem.memory.writeback import locked, wikilink
from vaultmem.memory_state import NoteMemory, link_targets, note_memory
from vaultmem.note import Note, read_note, read_raw
from vaultmem.prompts import render, render_note
from vaultmem.scores import format_half_life, tagged_apart, to_utc
from vaultmem.vault import LinkResolver, NoteName

if TYPE_CHECKING:
    from vaultmem.inference.llm import LLMClient

__all__ = [
    "COSINE",
    "SHINGLES",
    "Bands",
    "Cluster",
    "Consolidation",
    "consolidate",
    "distinct_facts",
]

TEMPLATE = "merged.md.j2"
PROMPT = "prompts/consolidate.j2"
VERDICTS = ("merge", "keep_apart", "contradicts")
MAX_PROMPT_CHARS = 1500  # of each member's text in the review prompt
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

REVIEW_SCHEMA: dict[str, object] = {
    "type": "object",
    "properties": {
        "verdict": {"type": "string", "enum": list(VERDICTS)},
        "reason": {"type": "string", "maxLength": 200},
    },
    "required": ["verdict"],
}


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


# --------------------------------------------------------------------------- finding


def _folders(config: Config, folder: str | None) -> tuple[str, ...]:
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


def _head(memories: Sequence[NoteMemory]) -> NoteMemory:
    """The member whose title the merged note takes: most used, then oldest."""
    return min(memories, key=lambda m: (-m.state.use_count, _age_key(m)))


def _action(cohesion: float, size: int, bands: Bands, has_llm: bool) -> str:
    if cohesion >= bands.merge:
        return "merge"
    if cohesion >= bands.review:
        # A long chain would make a prompt too long for a small model to judge well.
        return "ask" if has_llm and size <= MAX_REVIEW_MEMBERS else "review"
    return "loose"


# --------------------------------------------------------------------------- merging


_WORD_RE = re.compile(r"\w+")
_BULLET_RE = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?")
_SENTENCE_END_RE = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])")


def _units(body: str) -> list[str]:
    """A note body's sentences, bullets and fenced blocks, in order (headings dropped)."""
    out: list[str] = []
    paragraph: list[str] = []
    fence: list[str] | None = None

    def flush() -> None:
        if paragraph:
            out.extend(s.strip() for s in _SENTENCE_END_RE.split(" ".join(paragraph)))
            paragraph.clear()

    for line in strip_heading(body).splitlines():
        stripped = line.strip()
        if fence is not None:
            fence.append(line)
            if stripped.startswith("```"):
                out.append("\n".join(fence))
                fence = None
        elif stripped.startswith("```"):
            flush()
            fence = [line]
        elif not stripped or stripped.startswith("#"):
            flush()
        elif _BULLET_RE.match(line):
            flush()
            out.append(_BULLET_RE.sub("", line).strip())
        else:
            paragraph.append(stripped)
    flush()
    if fence is not None:
        out.append("\n".join(fence))
    return [u for u in out if content_key(u)]


def distinct_facts(bodies: Iterable[str]) -> list[str]:
    """Every distinct sentence, bullet or code block of ``bodies``, first spelling kept.

    Two units are the same fact when their words (lower-cased, punctuation aside) are
    equal; a unit whose words are a run of a longer unit's words is dropped, the longer
    one says it all.

    Example:
        >>> distinct_facts(["Redis is the cache.", "Redis is the cache. TTL 5m."])
        ['Redis is the cache.', 'TTL 5m.']
    """
    units = [u for body in bodies for u in _units(body)]
    # Words only: "in the ops vault." and "in the ops vault, rotated yearly" share a run.
    keys = [" {} ".format(" ".join(_WORD_RE.findall(content_key(u)))) for u in units]
    kept = []
    for i, (unit, key) in enumerate(zip(units, keys, strict=True)):
        earlier = key in keys[:i]
        inside = any(len(other) > len(key) and key in other for other in keys)
        if not earlier and not inside:
            kept.append(unit)
    return kept


def _title(note: Note) -> str | None:
    return note.title if note.title_source in ("frontmatter", "heading") else None


def _longest_half_life(memories: Sequence[NoteMemory]) -> timedelta | None:
    lives = [m.state.half_life for m in memories]
    return None if any(h is None for h in lives) else max(h for h in lives if h is not None)


def _merged_meta(
    memories: Sequence[NoteMemory],
    notes: Sequence[Note],
    title: str | None,
    now: datetime,
    links: list[str],
) -> dict[str, Any]:
    """The merged note's frontmatter, in the order `remember` writes its keys."""
    head = _head(memories)
    tags = dict.fromkeys(t for n in notes for t in _tag_list(n.meta.get("tags")))
    last_used = [m.state.last_used for m in memories if m.state.last_used is not None]
    uses = sum(m.state.use_count for m in memories)
    meta: dict[str, Any] = {}
    if title:
        meta["title"] = title
    if tags:
        meta["tags"] = list(tags)
    meta["type"] = head.type
    # When its facts were last stated, not when they were merged: a merge of old wordings
    # must not pass for the newest version of a memory (memory_rank lists those first).
    stated = [m.stated for m in memories if m.stated is not None]
    meta["created"] = to_utc(max(stated, default=now)).replace(microsecond=0)
    meta["half_life"] = format_half_life(_longest_half_life(memories))
    meta["status"] = "active"
    meta["confidence"] = max(m.confidence for m in memories)
    confirmed = [m.last_confirmed for m in memories if m.last_confirmed is not None]
    if confirmed:
        meta["last_confirmed"] = max(confirmed).replace(microsecond=0)
    if uses:
        meta["use_count"] = uses
    if last_used:
        meta["last_used"] = max(last_used).replace(microsecond=0)
    if any(m.pinned for m in memories):
        meta["pinned"] = True
    meta["supersedes"] = links
    meta["promoted_from"] = list(links)
    return meta


def _tag_list(value: Any) -> list[str]:
    items = [value] if isinstance(value, str) else value if isinstance(value, list) else []
    return [str(t).strip().lstrip("#") for t in items if str(t).strip().lstrip("#")]


@dataclass(frozen=True)
class _Vault:
    """What merging reads once per run, after taking the lock (``names`` grows by each
    merged note, so the next merge of the run does not take its name)."""

    entries: Mapping[str, mf.Entry]
    names: tuple[NoteName, ...]

    @property
    def resolver(self) -> LinkResolver:
        """The vault's names as links resolve them."""
        return LinkResolver(self.names)

    def with_note(self, path: str) -> _Vault:
        """This state, knowing the note just written at ``path``."""
        return replace(self, names=(*self.names, NoteName(path, PurePosixPath(path).stem)))


def _merge_locked(
    config: Config, vault: _Vault, cluster: Cluster, now: datetime, changed: list[str]
) -> str:
    """Write the merged note and supersede the members (lock held); its path."""
    entries, resolver = vault.entries, vault.resolver
    notes = [read_note(config.vault, p, config.keys) for p in cluster.members]
    memories = [note_memory(p, entries[p]) for p in cluster.members]
    if any(m.retired for m in memories):
        raise VaultmemError("a member was superseded or retired meanwhile")
    head = _head(memories)
    ordered = sorted(zip(memories, notes, strict=True), key=lambda mn: mn[0].path != head.path)
    facts = distinct_facts(n.body for _, n in ordered)
    title = next(_title(n) for m, n in ordered if m.path == head.path)
    links = [wikilink(p, resolver) for p in cluster.members]
    meta = _merged_meta(memories, notes, title, now, links)
    folder = str(PurePosixPath(head.path).parent).removeprefix(".")
    slug = slugify(title) if title else slugify(facts[0] if facts else "", max_words=8)
    # Unique across the vault, not just the folder: a merged `memory/x-2.md` beside a
    # member `inbox/x-2.md` would supersede itself (issue 19).
    path = unique_path(config, folder, slug, names=vault.names)
    sources = [
        {"path": n.path, "title": n.title, "link": link}
        for n, link in zip(notes, links, strict=True)
    ]
    raw = render_note(config, TEMPLATE, path, meta, title=title, facts=facts, sources=sources)
    create_note(config, path, raw)
    changed.append(path)
    new_link = wikilink(path, resolver)
    for i, old in enumerate(cluster.members):
        try:
            supersede(config, old, new_link)
        except BaseException:
            if i == 0:  # nothing points at it yet: leave the vault as it was
                (config.vault / path).unlink(missing_ok=True)
                changed.remove(path)
            raise
        changed.append(old)
    return path


# --------------------------------------------------------------------------- reviewing


def _ask(config: Config, llm: LLMClient, cluster: Cluster) -> tuple[str, str]:
    """The model's verdict on a cluster and its reason; raises EndpointError/JSONReplyError."""
    from vaultmem.inference.llm import JSONReplyError, parse_json_reply

    notes = []
    for path in cluster.members:
        note = read_note(config.vault, path, config.keys)
        created = note.owned.get("created")
        text = strip_heading(note.body).strip()[:MAX_PROMPT_CHARS]
        notes.append(
            {"path": path, "title": note.title, "created": str(created or ""), "text": text}
        )
    prompt = render(config, PROMPT, notes=notes, verdicts=VERDICTS)
    reply = llm.chat([{"role": "user", "content": prompt}], json_mode=True, schema=REVIEW_SCHEMA)
    data = parse_json_reply(reply, expect=dict)
    verdict = str(data.get("verdict") or "").strip().lower().replace(" ", "_")
    if verdict not in VERDICTS:
        raise JSONReplyError(f"the model answered verdict {data.get('verdict')!r}")
    reason = data.get("reason")
    return verdict, " ".join(reason.split())[:200] if isinstance(reason, str) else ""


def _review(
    config: Config, llm: LLMClient | None, clusters: list[Cluster], warnings: list[str]
) -> list[Cluster]:
    """Clusters with ``ask`` get the model's verdict as their action (``merge``) or
    outcome; an endpoint that fails is not asked again."""
    from vaultmem.inference.llm import JSONReplyError

    out = []
    for cluster in clusters:
        if cluster.action != "ask" or llm is None:
            out.append(cluster)
            continue
        try:
            verdict, reason = _ask(config, llm, cluster)
        except (EndpointError, JSONReplyError) as exc:
            warnings.append(f"{cluster.members[0]}: review failed: {exc}")
            if isinstance(exc, EndpointError):
                llm = None
            out.append(replace(cluster, outcome="failed", reason=str(exc)))
            continue
        if verdict == "merge":
            out.append(replace(cluster, action="merge", reason=reason))
        else:
            outcome = "kept_apart" if verdict == "keep_apart" else verdict
            out.append(replace(cluster, outcome=outcome, reason=reason))
    return out


def _link_apart(config: Config, cluster: Cluster) -> None:
    """Record a verdict as links between every pair, newest first: ``contradicts`` or
    ``related`` (kept apart), so the next run does not ask again."""
    from vaultmem.memory.links import link

    link_type = "contradicts" if cluster.outcome == "contradicts" else "related"
    for older, newer in itertools.combinations(cluster.members, 2):
        link(config, newer, older, link_type)


# --------------------------------------------------------------------------- the command


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


def _find(
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
        title = _head([live[p] for p in members]).title
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


def consolidate(
    config: Config,
    *,
    now: datetime,
    folder: str | None = None,
    threshold: float | None = None,
    embedder: Embedder | None = None,
    llm: LLMClient | None = None,
    dry_run: bool = False,
) -> Consolidation:
    """Find clusters of near-duplicate live memories and merge, link or report them.

    ``folder``: one folder instead of the inbox and memory folders (``"."``: the whole
    vault). ``threshold``: the linking similarity (default 0.83 cosine, 0.5 shingles).
    ``embedder``: compare stored vectors of this model (None, or no vectors: shingles).
    ``llm``: review the clusters between the review and merge bands. ``dry_run``: the
    plan only; no note is written and no model is asked. See the module docstring.

    Example:
        >>> consolidate(config, now=now, dry_run=True).clusters  # doctest: +SKIP
    """
    plan = _find(config, _folders(config, folder), threshold, embedder, llm is not None)
    if dry_run:
        return plan
    warnings = list(plan.warnings)
    clusters = _review(config, llm, list(plan.clusters), warnings)
    clusters = _merge_all(config, clusters, now)
    done = []
    for cluster in clusters:
        if cluster.outcome in ("kept_apart", "contradicts"):
            try:
                _link_apart(config, cluster)
            except VaultmemError as exc:
                cluster = replace(cluster, outcome="failed", reason=str(exc))
        elif cluster.outcome == "planned":
            cluster = replace(cluster, outcome="reported")
        done.append(cluster)
    return replace(plan, clusters=tuple(done), dry_run=False, warnings=tuple(warnings))


def _merge_all(config: Config, clusters: list[Cluster], now: datetime) -> list[Cluster]:
    """Merge every ``merge`` cluster under one lock; re-index what was written."""
    if not any(c.action == "merge" and c.outcome == "planned" for c in clusters):
        return clusters
    out = []
    changed: list[str] = []
    with locked(config, "consolidate"):
        # Read after taking the lock: a note changed before it is seen as it is now.
        vault = _Vault(mf.load(config.cache_dir).entries, tuple(note_names(config)))
        try:
            for cluster in clusters:
                if cluster.action != "merge" or cluster.outcome != "planned":
                    out.append(cluster)
                    continue
                try:
                    path = _merge_locked(config, vault, cluster, now, changed)
                except VaultmemError as exc:
                    out.append(replace(cluster, outcome="failed", reason=str(exc)))
                else:
                    vault = vault.with_note(path)
                    out.append(replace(cluster, outcome="merged", merged=path))
        finally:
            refresh_paths(config, changed)
    return out
