"""`curate`: the maintenance pass ClawMem's curator runs, as proposals (issue 31).

It reads the index (brought up to date first, as `review` does), the link graph and the
surfacing log, and proposes, each with the exact command that applies it:

- **pins** (at most 5) for high-value notes not pinned: a decision or hub trusted at
  0.7 or more; any note used 5 times or more at 0.75 or more; or a note `surface` showed
  5 times or more and used in at least 60% of those;
- **snoozes** (at most 10) for stale notes: a handoff unused for 90 days (30-day
  snooze), progress unused for 60 days (60 days), an incident, hotfix, workaround or
  temporary note unused for 45 days at confidence under 0.5 (90 days), or a note shown 5
  times or more and used once at most (30 days). Never a decision, hub, antipattern or
  preference, a pinned or flagged note, or one used in the last 14 days;
- **forget candidates** (at most 3): never used, 180 days old or more, fading (decay
  score under 0.15) or distrusted (effective confidence 0.3 or less), not pinned, not
  of a durable type, and no note links to it. `curate` never runs a forget: the command
  is printed for a person to run;
- **consolidation** candidates: the clusters `consolidate --dry-run` finds;
- notes **flagged for review** (``needs_review``), with the two commands that settle them;
- **orphans** (memories no note links to and that link nowhere), with a ``related``
  link to the note BM25 finds closest to their title, and **broken links** (typed or
  body links that resolve to no note; a hand edit, so no command);
- **retrieval-health probes**: the index is current; a known-item probe per path (a
  note's title as the query must find the note in the first 3: BM25, and vectors when
  the vault has them); live notes exist. 5/5 is GOOD, 3-4 DEGRADED, fewer CRITICAL.

It writes no note (only the cache, as `index` does).
"""

from __future__ import annotations

import re
import shlex
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from vaultmem.confidence import CONFIDENCE_FLOOR
from vaultmem.config import Config
from vaultmem.errors import EndpointError, IndexStateError, VaultmemError
from vaultmem.index import manifest as mf
from vaultmem.memory_state import NoteMemory, note_memory
from vaultmem.scores import decay_score, to_utc
from vaultmem.vocabulary import DURABLE_TYPES

if TYPE_CHECKING:
    from vaultmem.index.graph import LinkGraph
    from vaultmem.inference.base import Embedder

__all__ = ["CurateReport", "Probe", "Proposal", "curate", "surfacing_counts"]

MAX_PINS, MAX_SNOOZES, MAX_FORGETS = 5, 10, 3
PROBES = 3  # known-item probes per retrieval path
_LIVE = frozenset({"active", "promoted"})
_STALE_TITLE_RE = re.compile(r"\b(?:incident|outage|hotfix|temporary|workaround|spike)\b", re.I)


@dataclass(frozen=True)
class Proposal:
    """One proposed action: ``kind`` (pin, snooze, forget, consolidate, review, orphan,
    broken_link), the notes it is about, why, and the exact commands that apply it (none
    for a hand edit)."""

    kind: str
    paths: tuple[str, ...]
    reason: str
    commands: tuple[str, ...] = ()

    def as_json(self) -> dict[str, object]:
        """``{kind, paths, reason, commands}``."""
        return {
            "kind": self.kind,
            "paths": list(self.paths),
            "reason": self.reason,
            "commands": list(self.commands),
        }


@dataclass(frozen=True)
class Probe:
    """One retrieval-health check: ``status`` pass, fail or skip, and what it saw."""

    name: str
    status: str
    detail: str

    def as_json(self) -> dict[str, str]:
        """``{name, status, detail}``."""
        return {"name": self.name, "status": self.status, "detail": self.detail}


@dataclass(frozen=True)
class CurateReport:
    """The whole maintenance report."""

    counts: Mapping[str, int]
    proposals: tuple[Proposal, ...]
    probes: tuple[Probe, ...]
    warnings: tuple[str, ...] = field(default=())

    @property
    def health(self) -> str:
        """GOOD (every probe run passed), DEGRADED (60% or more) or CRITICAL."""
        run = [p for p in self.probes if p.status != "skip"]
        passed = sum(1 for p in run if p.status == "pass")
        if not run or passed == len(run):
            return "GOOD"
        return "DEGRADED" if passed * 5 >= len(run) * 3 else "CRITICAL"

    def as_json(self) -> dict[str, object]:
        """``curate --json``."""
        return {
            "counts": dict(self.counts),
            "health": self.health,
            "probes": [p.as_json() for p in self.probes],
            "proposals": [p.as_json() for p in self.proposals],
            "warnings": list(self.warnings),
        }


# --------------------------------------------------------------------------- inputs


def surfacing_counts(
    config: Config, since: datetime | None = None
) -> tuple[Counter[str], Counter[frozenset[str]], dict[frozenset[str], set[str]]]:
    """From the surfacing log (runs at ``since`` or later when given): how often each note
    was shown, how often each pair of notes was shown together, and in which sessions."""
    from vaultmem.memory_state import parse_time
    from vaultmem.surface_log import runs

    shown: Counter[str] = Counter()
    pairs: Counter[frozenset[str]] = Counter()
    sessions: dict[frozenset[str], set[str]] = {}
    for run in runs(config):
        when = parse_time(run.get("time"))
        if since is not None and (when is None or when < since):
            continue
        notes = sorted({n for n in run["notes"] if isinstance(n, str)})
        shown.update(notes)
        for i, a in enumerate(notes):
            for b in notes[i + 1 :]:
                pair = frozenset((a, b))
                pairs[pair] += 1
                sessions.setdefault(pair, set()).add(str(run.get("session") or ""))
    return shown, pairs, sessions


class _Vault:
    """What one curate run reads once: the entries, their memory views, the graph."""

    def __init__(self, config: Config, now: datetime) -> None:
        from vaultmem.index.graph import LinkGraph
        from vaultmem.indexer import index_vault

        index_vault(config)
        self.config = config
        self.now = to_utc(now)
        self.entries: Mapping[str, mf.Entry] = mf.load(config.cache_dir).entries
        self.memory: dict[str, NoteMemory] = {p: note_memory(p, e) for p, e in self.entries.items()}
        self.graph: LinkGraph = LinkGraph.load(config)
        self.shown, _, _ = surfacing_counts(config)

    def command(self, *args: str) -> str:
        """The exact command line for this vault."""
        return shlex.join(["vaultmem", "--vault", str(self.config.vault), *args])

    def live(self) -> list[NoteMemory]:
        return [m for m in self.memory.values() if m.status in _LIVE and not m.retired]

    def idle_days(self, m: NoteMemory) -> float:
        """Days since the note was last used (else created, else first seen)."""
        times = [t for t in (m.state.last_used, m.state.created, m.first_seen) if t]
        return (self.now - max(times)) / timedelta(days=1) if times else 0.0

    def age_days(self, m: NoteMemory) -> float:
        born = m.state.created or m.first_seen
        return (self.now - born) / timedelta(days=1) if born else 0.0

    def flagged(self, path: str) -> tuple[str, ...]:
        from vaultmem.memory.sweeps import review_flags

        return review_flags(self.entries[path].memory)


# --------------------------------------------------------------------------- proposals


def _pins(v: _Vault) -> list[Proposal]:
    found: list[tuple[tuple[int, float], Proposal]] = []
    for m in v.live():
        if m.pinned:
            continue
        trust = m.effective_confidence(v.now)
        uses, shown = m.state.use_count, v.shown.get(m.path, 0)
        if m.type in ("decision", "hub") and trust >= 0.7:
            why = f"a {m.type} trusted at {trust:.2f}"
        elif uses >= 5 and trust >= 0.75:
            why = f"used {uses} times, trusted at {trust:.2f}"
        elif shown >= 5 and uses >= 0.6 * shown:
            why = f"shown {shown} times and used {uses}"
        else:
            continue
        found.append(
            ((-uses, -trust), Proposal("pin", (m.path,), why, (v.command("pin", m.path),)))
        )
    found.sort(key=lambda item: (item[0], item[1].paths))
    return [p for _, p in found[:MAX_PINS]]


def _snooze_for(v: _Vault, m: NoteMemory) -> tuple[int, str] | None:
    """(days, why) when the note is stale enough to snooze, else None."""
    idle, uses, shown = v.idle_days(m), m.state.use_count, v.shown.get(m.path, 0)
    if m.type == "handoff" and idle > 90 and uses < 2:
        return 30, f"a handoff unused for {idle:.0f} days"
    if m.type == "progress" and idle > 60 and uses < 3:
        return 60, f"progress unused for {idle:.0f} days"
    trust = m.effective_confidence(v.now)
    if _STALE_TITLE_RE.search(m.title) and idle > 45 and trust < 0.5:
        return 90, f"a time-bound note unused for {idle:.0f} days, trusted at {trust:.2f}"
    if shown >= 5 and uses <= 1:
        return 30, f"shown {shown} times, used {uses}: noise in the context block"
    return None


def _snoozes(v: _Vault) -> list[Proposal]:
    found = []
    for m in sorted(v.live(), key=lambda m: m.path):
        if m.type in DURABLE_TYPES or m.pinned or m.snoozed(v.now) or v.flagged(m.path):
            continue
        if m.state.last_used and v.now - m.state.last_used < timedelta(days=14):
            continue
        due = _snooze_for(v, m)
        if due is not None:
            days, why = due
            command = v.command("snooze", m.path, "--for", f"{days}d")
            found.append(Proposal("snooze", (m.path,), f"{why}; snooze {days} days", (command,)))
    return found[:MAX_SNOOZES]


def _forgets(v: _Vault) -> list[Proposal]:
    found = []
    for m in sorted(v.live(), key=lambda m: m.path):
        if m.pinned or m.type in DURABLE_TYPES or m.state.use_count > 0:
            continue
        if v.age_days(m) < 180 or v.graph.into(m.path):
            continue
        score, trust = decay_score(m.state, v.now), m.effective_confidence(v.now)
        if score >= 0.15 and trust > max(CONFIDENCE_FLOOR, 0.3):
            continue
        why = (
            f"never used in {v.age_days(m):.0f} days, decay score {score:.3f}, "
            f"trusted at {trust:.2f}, nothing links to it (not applied: run it yourself)"
        )
        found.append(Proposal("forget", (m.path,), why, (v.command("forget", m.path),)))
    return found[:MAX_FORGETS]


def _consolidations(v: _Vault, embedder: Embedder | None) -> tuple[list[Proposal], list[str]]:
    from vaultmem.memory.clusters import candidate_folders, find_clusters

    try:
        plan = find_clusters(v.config, candidate_folders(v.config, None), None, embedder, False)
    except (EndpointError, IndexStateError) as exc:
        return [], [f"consolidation candidates skipped: {exc}"]
    command = v.command("consolidate", "--dry-run")
    out = [
        Proposal(
            "consolidate",
            c.members,
            f"{len(c.members)} near-duplicates (cohesion {c.cohesion:.2f}, {c.action})",
            (command, v.command("consolidate")),
        )
        for c in plan.clusters
        if c.action in ("merge", "ask", "review")
    ]
    return out, list(plan.warnings)


def _reviews(v: _Vault) -> list[Proposal]:
    from vaultmem.lookup import note_names
    from vaultmem.vault import LinkResolver

    resolver: LinkResolver | None = None
    out = []
    for m in sorted(v.live(), key=lambda m: m.path):
        for line in v.flagged(m.path):
            resolver = resolver or LinkResolver(note_names(v.config))
            other = next(
                (
                    resolver.resolve_link(t.strip(), m.path)
                    for t in re.findall(r"\[\[([^\]|#]+)", line)
                ),
                None,
            )
            commands: tuple[str, ...] = ()
            if other is not None:
                commands = (
                    v.command("link", m.path, other, "-t", "supersedes"),
                    v.command("unlink", m.path, other),
                )
            paths = (m.path,) if other is None else (m.path, other)
            out.append(Proposal("review", paths, line, commands))
    return out


def _memory_notes(v: _Vault) -> list[NoteMemory]:
    """Notes that are memories: typed by vaultmem, or in the inbox or memory folder."""
    folders = tuple(f"{f}/" for f in (v.config.inbox_folder, v.config.memory_folder) if f)
    return [m for m in v.live() if m.typed or m.path.startswith(folders)]


def _orphans(v: _Vault) -> list[Proposal]:
    from vaultmem.retrieval.search import lexical_hits

    out = []
    for m in sorted(_memory_notes(v), key=lambda m: m.path):
        if v.graph.out(m.path) or v.graph.into(m.path):
            continue
        commands: tuple[str, ...] = ()
        why = "no note links to it and it links nowhere"
        try:
            hits = lexical_hits(v.config, m.title, limit=3)
        except IndexStateError:
            hits = []
        near = next((h.path for h in hits if h.path != m.path), None)
        if near is not None:
            commands = (v.command("link", m.path, near),)
            why += f"; closest by its title: {near}"
        out.append(Proposal("orphan", (m.path,), why, commands))
    return out


def _broken(v: _Vault) -> list[Proposal]:
    from vaultmem.lookup import note_names
    from vaultmem.vault import LinkResolver

    resolver = LinkResolver(note_names(v.config))
    out = []
    for path in sorted(v.entries):
        for kind, target in v.entries[path].links:
            if resolver.resolve_link(target, path) is None:
                why = f"{kind} [[{target}]] resolves to no note: create it, or edit the link"
                out.append(Proposal("broken_link", (path,), why))
    return out


# --------------------------------------------------------------------------- probes


def _known_items(v: _Vault) -> list[NoteMemory]:
    """Notes to probe retrieval with: pinned, then most used, then decisions; titles of
    three words or more (a one-word title is too easy, or too vague)."""
    notes = [m for m in v.live() if len(m.title.split()) >= 3]
    notes.sort(key=lambda m: (not m.pinned, -m.state.use_count, m.type != "decision", m.path))
    return notes[:PROBES]


def _probe(name: str, items: Sequence[NoteMemory], found: Mapping[str, Sequence[str]]) -> Probe:
    missed = [m.title for m in items if m.path not in found.get(m.path, ())[:3]]
    if missed:
        hit = len(items) - len(missed)
        detail = f"{hit}/{len(items)} found in the first 3; missed: {'; '.join(missed)}"
        return Probe(name, "fail", detail)
    return Probe(name, "pass", f"{len(items)}/{len(items)} notes found by their title")


def _probes(v: _Vault, embedder: Embedder | None) -> list[Probe]:
    from vaultmem.retrieval.search import lexical_hits
    from vaultmem.workspace import vault_status

    status = vault_status(v.config)
    probes = [
        Probe("index", "fail", f"{status.stale} notes changed since the last index; run index")
        if status.stale
        else Probe("index", "pass", f"{status.indexed} notes indexed, none stale")
    ]
    items = _known_items(v)
    if not items:
        probes.append(Probe("keyword", "skip", "no note with a title of three words or more"))
    else:
        found = {m.path: [h.path for h in lexical_hits(v.config, m.title, limit=3)] for m in items}
        probes.append(_probe("keyword", items, found))
    probes.append(_vector_probe(v, embedder, items))
    live = len(v.live())
    probes.append(
        Probe("lifecycle", "pass", f"{live} live notes")
        if live
        else Probe("lifecycle", "fail", "no active or promoted note: every note is retired")
    )
    typed = sum(1 for e in v.entries.values() for k, _ in e.links if k != "wikilink")
    probes.append(_typed_links_probe(v, typed))
    return probes


def _vector_probe(v: _Vault, embedder: Embedder | None, items: Sequence[NoteMemory]) -> Probe:
    if embedder is None:
        return Probe("vector", "skip", "no vectors for the configured embedder (run embed)")
    if not items:
        return Probe("vector", "skip", "no note with a title of three words or more")
    from vaultmem.retrieval.vsearch import vsearch

    try:
        found = {
            m.path: [h.path for h in vsearch(v.config, m.title, embedder, limit=3)] for m in items
        }
    except (EndpointError, IndexStateError, VaultmemError) as exc:
        return Probe("vector", "fail", str(exc))
    return _probe("vector", items, found)


def _typed_links_probe(v: _Vault, typed: int) -> Probe:
    from vaultmem.memory.links import dangling_links

    memory: dict[str, Mapping[str, Any]] = {p: e.memory for p, e in v.entries.items()}
    bad = dangling_links(v.config, memory)
    if bad:
        return Probe("links", "fail", f"{len(bad)} of {typed} typed links resolve to no note")
    return Probe("links", "pass", f"{typed} typed links, every one resolves")


# --------------------------------------------------------------------------- the report


def curate(config: Config, now: datetime, *, embedder: Embedder | None = None) -> CurateReport:
    """The maintenance report of the vault of ``config`` at ``now`` (see the module
    docstring). ``embedder``: the one the vault has vectors of (vector probe, clusters by
    stored vectors); None uses words only. Writes no note.

    Example:
        >>> [p.kind for p in curate(config, now).proposals]  # doctest: +SKIP
        ['pin', 'snooze', 'orphan']
    """
    v = _Vault(config, now)
    consolidations, warnings = _consolidations(v, embedder)
    proposals = [
        *_reviews(v),
        *_pins(v),
        *_snoozes(v),
        *_forgets(v),
        *consolidations,
        *_orphans(v),
        *_broken(v),
    ]
    live = v.live()
    counts = {
        "notes": len(v.entries),
        "live": len(live),
        "pinned": sum(1 for m in live if m.pinned),
        "snoozed": sum(1 for m in live if m.snoozed(v.now)),
        "never_used": sum(1 for m in live if m.state.use_count == 0),
        "flagged": sum(1 for m in live if v.flagged(m.path)),
        "retired": len(v.entries) - len(live),
    }
    return CurateReport(counts, tuple(proposals), tuple(_probes(v, embedder)), tuple(warnings))
