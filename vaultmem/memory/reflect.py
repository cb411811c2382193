"""`reflect`: what the last days of work kept coming back to (issue 31, ClawMem's reflect).

Over the notes stated or used in the window (``created``, ``last_used`` or
``last_confirmed`` within the last ``days``) it reports:

- **recurring themes**: runs of two or three content words that at least
  :data:`MIN_THEME_NOTES` of the window's decisions, preferences, antipatterns and
  observations share (each note counts once per phrase), longer phrases first at equal
  counts;
- **antipatterns** stated or used in the window;
- **the notes used most**: by use in the window (``use_count``, when ``last_used`` is in
  it) and by how often `surface` showed them in the window (the surfacing log);
- **clusters across sessions**: notes `surface` showed together in at least
  :data:`MIN_TOGETHER` runs of at least two sessions, and memories captured in different
  sessions (``source_session``) that are on one subject (two content words shared, half
  of the smaller note's).

It writes no note.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from vaultmem.config import Config
from vaultmem.index import manifest as mf
from vaultmem.memory_state import NoteMemory, note_memory
from vaultmem.scores import to_utc
from vaultmem.subjects import content_words, overlap

__all__ = ["MIN_THEME_NOTES", "MIN_TOGETHER", "Reflection", "reflect"]

MIN_THEME_NOTES = 3
MIN_TOGETHER = 3
THEME_KINDS = frozenset({"decision", "preference", "antipattern", "observation"})
_WORD_RE = re.compile(r"\w+")
_MAX_BODY = 4000


@dataclass(frozen=True)
class Theme:
    """A phrase several notes of the window share."""

    phrase: str
    notes: tuple[str, ...]

    def as_json(self) -> dict[str, object]:
        """``{phrase, count, notes}``."""
        return {"phrase": self.phrase, "count": len(self.notes), "notes": list(self.notes)}


@dataclass(frozen=True)
class Used:
    """A note and how much the window used it."""

    path: str
    title: str
    uses: int
    shown: int

    def as_json(self) -> dict[str, object]:
        """``{path, title, uses, shown}``."""
        return {"path": self.path, "title": self.title, "uses": self.uses, "shown": self.shown}


@dataclass(frozen=True)
class Group:
    """Notes that belong together across sessions: ``why`` is "shown together N times"
    or "one subject: words"; ``sessions`` the sessions they came from."""

    notes: tuple[str, ...]
    why: str
    sessions: tuple[str, ...]

    def as_json(self) -> dict[str, object]:
        """``{notes, why, sessions}``."""
        return {"notes": list(self.notes), "why": self.why, "sessions": list(self.sessions)}


@dataclass(frozen=True)
class Reflection:
    """The reflection over the last ``days``."""

    days: int
    notes: int
    themes: tuple[Theme, ...]
    antipatterns: tuple[Used, ...]
    most_used: tuple[Used, ...]
    clusters: tuple[Group, ...]

    def as_json(self) -> dict[str, object]:
        """``reflect --json``."""
        return {
            "days": self.days,
            "notes": self.notes,
            "themes": [t.as_json() for t in self.themes],
            "antipatterns": [a.as_json() for a in self.antipatterns],
            "most_used": [u.as_json() for u in self.most_used],
            "clusters": [c.as_json() for c in self.clusters],
        }


def _in_window(m: NoteMemory, since: datetime) -> bool:
    times = (m.state.created, m.state.last_used, m.last_confirmed, m.first_seen)
    return any(t is not None and t >= since for t in times)


def _phrases(text: str) -> set[str]:
    """The runs of two and three content words of ``text``."""
    words = [w for w in _WORD_RE.findall(text.lower()) if content_words(w)]
    runs: set[str] = set()
    for n in (2, 3):
        runs.update(" ".join(words[i : i + n]) for i in range(len(words) - n + 1))
    return runs


_FENCE_RE = re.compile(r"^\s*(```|~~~).*?^\s*\1[^\n]*$", re.DOTALL | re.MULTILINE)
_HEADING_RE = re.compile(r"^\s*#.*$", re.MULTILINE)


def _prose(body: str) -> str:
    """A note's body without code blocks and headings (a template's "## Alternatives
    considered" in every decision is no theme)."""
    return _HEADING_RE.sub("", _FENCE_RE.sub("", body))


def _themes(config: Config, notes: Sequence[NoteMemory], limit: int) -> list[Theme]:
    from vaultmem.errors import NoteError
    from vaultmem.note import read_note

    where: dict[str, list[str]] = {}
    for m in notes:
        if m.type not in THEME_KINDS:
            continue
        try:
            body = read_note(config.vault, m.path, config.keys).body[:_MAX_BODY]
        except NoteError:
            continue
        for phrase in _phrases(f"{m.title}\n{_prose(body)}"):
            where.setdefault(phrase, []).append(m.path)
    common = [(p, paths) for p, paths in where.items() if len(paths) >= MIN_THEME_NOTES]
    # Longer first at equal counts; a two-word run inside a kept three-word one is the same theme.
    common.sort(key=lambda item: (-len(item[1]), -len(item[0].split()), item[0]))
    kept: list[Theme] = []
    for phrase, paths in common:
        if any(phrase in t.phrase and len(t.notes) == len(paths) for t in kept):
            continue
        kept.append(Theme(phrase, tuple(sorted(paths))))
        if len(kept) >= limit:
            break
    return kept


def _sessions_of(entries: Mapping[str, mf.Entry], paths: Iterable[str]) -> tuple[str, ...]:
    found = {entries[p].memory.get("source_session") for p in paths if p in entries}
    return tuple(sorted(s for s in found if isinstance(s, str) and s))


def _subject_groups(
    entries: Mapping[str, mf.Entry], notes: Sequence[NoteMemory], limit: int
) -> list[Group]:
    """Captured memories of different sessions on one subject (single linkage over the
    content words of their titles, which `extract` derives from their text)."""
    captured = [m for m in notes if entries[m.path].memory.get("source_session")]
    words = {m.path: content_words(m.title) for m in captured}
    parent = {p: p for p in words}

    def root(p: str) -> str:
        while parent[p] != p:
            parent[p] = parent[parent[p]]
            p = parent[p]
        return p

    for a, b in itertools.combinations(sorted(words), 2):
        shared = words[a] & words[b]
        if len(shared) >= 2 and overlap(words[a], words[b]) >= 0.5:
            parent[root(a)] = root(b)
    groups: dict[str, list[str]] = {}
    for p in words:
        groups.setdefault(root(p), []).append(p)
    out = []
    for members in groups.values():
        sessions = _sessions_of(entries, members)
        if len(members) < 2 or len(sessions) < 2:
            continue
        shared = frozenset.intersection(*(words[p] for p in members))
        about = ", ".join(sorted(shared)) or "related words"
        out.append(Group(tuple(sorted(members)), f"one subject: {about}", sessions))
    out.sort(key=lambda g: (-len(g.notes), g.notes))
    return out[:limit]


def reflect(config: Config, now: datetime, *, days: int = 14, limit: int = 10) -> Reflection:
    """The reflection over the ``days`` before ``now`` (see the module docstring); at
    most ``limit`` items per part.

    Example:
        >>> [t.phrase for t in reflect(config, now, days=30).themes]  # doctest: +SKIP
        ['background job', 'connection pool']
    """
    from vaultmem.indexer import index_vault
    from vaultmem.memory.curate import surfacing_counts

    index_vault(config)
    now = to_utc(now)
    since = now - timedelta(days=days)
    entries = mf.load(config.cache_dir).entries
    memories = [note_memory(p, e) for p, e in entries.items()]
    window = [m for m in memories if not m.retired and _in_window(m, since)]
    shown, pairs, sessions = surfacing_counts(config, since)
    titles = {m.path: m.title for m in memories}

    def used(m: NoteMemory) -> Used:
        recent = m.state.last_used is not None and m.state.last_used >= since
        return Used(m.path, m.title, m.state.use_count if recent else 0, shown.get(m.path, 0))

    antipatterns = [
        used(m) for m in sorted(window, key=lambda m: m.path) if m.type == "antipattern"
    ]
    ranked = [used(m) for m in memories if not m.retired]
    ranked = [u for u in ranked if u.uses or u.shown]
    ranked.sort(key=lambda u: (-u.uses, -u.shown, u.path))
    together = [
        Group(
            tuple(sorted(pair)),
            f"shown together {count} times",
            tuple(sorted(s for s in sessions[pair] if s)),
        )
        for pair, count in pairs.most_common()
        if count >= MIN_TOGETHER and len(sessions[pair]) >= 2 and all(p in titles for p in pair)
    ]
    clusters = [*together[:limit], *_subject_groups(entries, window, limit)][:limit]
    return Reflection(
        days=days,
        notes=len(window),
        themes=tuple(_themes(config, window, limit)),
        antipatterns=tuple(antipatterns[:limit]),
        most_used=tuple(ranked[:limit]),
        clusters=tuple(clusters),
    )
