"""`consolidate`: collapse near-duplicate memories into one note (issue 12, SPEC §4).

Which notes, how they cluster and what each cluster's cohesion calls for (merge, ask the
LLM, report) is :mod:`vaultmem.memory.clusters`; this module carries the plan out.
A verdict of "keep apart" links the members ``related``, "contradicts" links them
``contradicts``: either way the next run does not ask again.

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
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from vaultmem.config import Config
from vaultmem.errors import EndpointError, VaultmemError
from vaultmem.index import manifest as mf
from vaultmem.indexer import refresh_paths
from vaultmem.inference.base import Embedder
from vaultmem.lookup import note_names
from vaultmem.memory.clusters import (
    Cluster,
    Consolidation,
    candidate_folders,
    find_clusters,
    head_member,
)
from vaultmem.memory.remember import (
    content_key,
    create_note,
    derive_title,
    slugify,
    strip_heading,
    supersede,
    unique_path,
)
from vaultmem.memory.writeback import locked, wikilink
from vaultmem.memory_state import NoteMemory, note_memory
from vaultmem.note import Note, read_note
from vaultmem.prompts import render, render_note
from vaultmem.scores import format_half_life, to_utc
from vaultmem.vault import LinkResolver, NoteName

if TYPE_CHECKING:
    from vaultmem.inference.llm import LLMClient

__all__ = ["consolidate", "distinct_facts"]

TEMPLATE = "merged.md.j2"
PROMPT = "prompts/consolidate.j2"
VERDICTS = ("merge", "keep_apart", "contradicts")
MAX_PROMPT_CHARS = 1500  # of each member's text in the review prompt

REVIEW_SCHEMA: dict[str, object] = {
    "type": "object",
    "properties": {
        "verdict": {"type": "string", "enum": list(VERDICTS)},
        "reason": {"type": "string", "maxLength": 200},
    },
    "required": ["verdict"],
}


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
    head = head_member(memories)
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
    head = head_member(memories)
    ordered = sorted(zip(memories, notes, strict=True), key=lambda mn: mn[0].path != head.path)
    facts = distinct_facts(n.body for _, n in ordered)
    # A head without a title gets one as `remember` gives it (the first sentence, cut at
    # a clause), and the merge is named after it, not after its first eight words.
    title = next(_title(n) for m, n in ordered if m.path == head.path)
    title = title or (derive_title(facts[0]) if facts else "") or None
    links = [wikilink(p, resolver) for p in cluster.members]
    meta = _merged_meta(memories, notes, title, now, links)
    folder = str(PurePosixPath(head.path).parent).removeprefix(".")
    slug = slugify(title or "")
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
    plan = find_clusters(
        config, candidate_folders(config, folder), threshold, embedder, llm is not None
    )
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
