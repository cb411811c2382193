"""Where a captured memory came from, and the notes of its session that it names.

Every memory `extract` writes records its session (``source_session``: Claude Code's
``sessionId``, else the transcript's file name), its project (``source_project``: the
last folder of the session's working directory, or ``--project``) and when it was said
(``source_time``: the timestamp of the turn it came from). It also links ``related`` to
the notes `surface` showed in that session (the surfacing log,
:mod:`vaultmem.surface_log`) that its text names: a ``[[wikilink]]`` to the note, its
title, file name or an alias as a phrase (one word only when it is six letters or more,
and not the project's own name), or most of its title's words (two or more, at least two
thirds of them).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path, PurePosixPath

from vaultmem.config import Config
from vaultmem.errors import VaultmemError
from vaultmem.memory.remember import Source
from vaultmem.scores import to_utc
from vaultmem.subjects import content_words

__all__ = ["Provenance", "named_notes", "said_time"]

_WIKILINK_RE = re.compile(r"\[\[([^\]|#]+)")
MIN_ONE_WORD = 6


@dataclass(frozen=True)
class Provenance:
    """The session a transcript records, and its project."""

    session: str
    project: str | None = None

    @classmethod
    def of(
        cls, transcript: Path, session: str | None, cwd: str | None, project: str | None
    ) -> Provenance:
        """From what the transcript's entries recorded (``session``, ``cwd``), else its
        file name; ``project`` given wins over the working folder's name."""
        name = project or (PurePosixPath(cwd.rstrip("/")).name if cwd else None)
        return cls(session or transcript.stem, name or None)

    def source(self, said_at: str | None) -> Source:
        """The :class:`Source` of a memory said at ``said_at`` (ISO text, or None)."""
        return Source(self.session, self.project, said_time(said_at))


def said_time(text: str | None) -> datetime | None:
    """An entry's ISO timestamp as a UTC datetime (None when absent or unreadable)."""
    if not text:
        return None
    try:
        return to_utc(datetime.fromisoformat(text.replace("Z", "+00:00")))
    except ValueError:
        return None


def _phrase(name: str, text: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text) is not None


def _names(title: str, stem: str, aliases: Iterable[str], project: str | None) -> list[str]:
    """The phrases that name a note (lower-cased): multi-word ones, and single words long
    enough not to be said in passing, never the project's own name."""
    out = []
    for name in {title.strip().lower(), stem.lower(), *(a.strip().lower() for a in aliases)}:
        if not name or (project and name == project.lower()):
            continue
        if " " in name or len(name) >= MIN_ONE_WORD:
            out.append(name)
    return out


def named_notes(
    config: Config, text: str, surfaced: Sequence[str], project: str | None = None
) -> list[str]:
    """The notes of ``surfaced`` (vault paths) that ``text`` names (see the module
    docstring), in ``surfaced`` order.

    Example:
        >>> named_notes(config, "PgBouncer stays", ["research/PgBouncer.md"])  # doctest: +SKIP
        ['research/PgBouncer.md']
    """
    from vaultmem.lookup import note_names
    from vaultmem.vault import LinkResolver

    if not surfaced:
        return []
    lowered = text.lower()
    resolver = LinkResolver(note_names(config))
    linked = {resolver.resolve_link(m.group(1).strip()) for m in _WIKILINK_RE.finditer(text)}
    words = content_words(text)
    found = []
    for path in dict.fromkeys(surfaced):
        if path in linked:
            found.append(path)
            continue
        try:
            from vaultmem.note import read_note

            note = read_note(config.vault, path, config.keys)
        except VaultmemError:
            continue  # gone or unreadable since it was surfaced
        names = _names(note.title, PurePosixPath(path).stem, note.aliases, project)
        title_words = content_words(note.title)
        shared = title_words & words
        if any(_phrase(n, lowered) for n in names) or (
            len(shared) >= 2 and len(shared) * 3 >= len(title_words) * 2
        ):
            found.append(path)
    return found
