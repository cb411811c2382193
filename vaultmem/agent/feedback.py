"""The feedback loop: a note surfaced in a session and then used there is reinforced once.

`surface` records the notes it showed in each session. When the session ends (or its
context is compacted), the transcript says which of them the agent went on to use: the
assistant named the note's path, or its file name or title (of two words or more), opened
it with a tool, or repeated a run of :data:`PHRASE_WORDS` words of it. Those notes (at
most ``limit`` per session, the first used first) are reinforced in one batched write,
as `touch --session` does: ``use_count`` + 1, ``last_used`` and ``last_review`` now, and
confirmed as surfaced-then-used (confidence one step up). A note is reinforced once per
session however often the hook runs: the session record keeps what was reinforced.

Only what the assistant said or did counts. The user's own words are no sign of use, and
the surfaced block itself, which names every title, reaches the transcript as context the
agent was given, not as something it said.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path, PurePosixPath

from vaultmem.config import Config
from vaultmem.errors import VaultmemError

__all__ = ["PHRASE_WORDS", "Feedback", "Used", "feedback", "used_notes"]

# A run of this many words of a note, repeated by the assistant, is a sign it used it.
PHRASE_WORDS = 6
_WORD = re.compile(r"[\w'-]+")


@dataclass(frozen=True)
class Used:
    """A surfaced note the session used, and the first sign of it."""

    path: str
    sign: str  # "path", "title", "opened" or "phrase"

    def as_json(self) -> dict[str, str]:
        """``{"path", "sign"}``."""
        return {"path": self.path, "sign": self.sign}


@dataclass(frozen=True)
class Feedback:
    """What one feedback run did: the session, the notes surfaced in it, those used, and
    those reinforced now (used, not reinforced before in this session, within the cap)."""

    session: str
    surfaced: tuple[str, ...]
    used: tuple[Used, ...]
    reinforced: tuple[str, ...]

    def as_json(self) -> dict[str, object]:
        """``feedback --json``."""
        return {
            "session": self.session,
            "surfaced": list(self.surfaced),
            "used": [u.as_json() for u in self.used],
            "reinforced": list(self.reinforced),
        }


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _runs(words: Sequence[str]) -> set[tuple[str, ...]]:
    return {tuple(words[i : i + PHRASE_WORDS]) for i in range(len(words) - PHRASE_WORDS + 1)}


def _signs(config: Config, path: str, said: str, runs: set[tuple[str, ...]], opened: str) -> str:
    """The first sign that the assistant used the note at ``path`` ("" for none)."""
    from vaultmem.note import read_note

    stem = PurePosixPath(path).stem.lower()
    if path.lower() in opened or path.lower() in said:
        return "opened" if path.lower() in opened else "path"
    try:
        note = read_note(config.vault, path, config.keys)
    except VaultmemError:
        return ""
    title = note.title.strip().lower()
    # A one-word title ("Harbor", the project's own name) is said all the time.
    named = [n for n in {title, stem} if len(n.split()) > 1]
    if any(re.search(rf"(?<!\w){re.escape(n)}(?!\w)", said) for n in named):
        return "title"
    return "phrase" if _runs(_words(note.body)) & runs else ""


def used_notes(config: Config, transcript: Path, surfaced: Iterable[str]) -> list[Used]:
    """The ``surfaced`` notes the transcript shows the assistant used, in ``surfaced``
    order (the order they were shown)."""
    from vaultmem.agent.transcript import read_entries

    said_parts: list[str] = []
    opened_parts: list[str] = []
    for entry in read_entries(transcript):
        if entry.role != "assistant" or entry.sidechain:
            continue
        said_parts.append(entry.text)
        for tool in entry.tools:
            opened_parts += [v for v in tool.input.values() if isinstance(v, str)]
    said = "\n".join(said_parts).lower()
    opened = "\n".join(opened_parts).lower()
    runs = _runs(_words(said))
    found = []
    for path in dict.fromkeys(surfaced):
        sign = _signs(config, path, said, runs, opened)
        if sign:
            found.append(Used(path, sign))
    return found


def transcript_session(transcript: Path) -> str | None:
    """The session id a Claude Code transcript records (None for a text transcript)."""
    from vaultmem.agent.transcript import read_entries

    return next((e.session for e in read_entries(transcript) if e.session), None)


def feedback(
    config: Config,
    transcript: Path,
    *,
    now: datetime,
    session: str | None = None,
    limit: int | None = None,
    dry_run: bool = False,
) -> Feedback:
    """Reinforce the notes surfaced in ``session`` that ``transcript`` shows were used.

    ``session``: the session id (else the one the transcript records); ``limit``: at most
    this many notes per session (else ``hooks.reinforce_max``, or none when ``[memory]
    auto_reinforce`` is false). Raises VaultmemError when no session is known.

    Example:
        >>> feedback(config, Path("session.jsonl"), now=now).reinforced  # doctest: +SKIP
        ('decisions/Redis for caching.md',)
    """
    from vaultmem.agent import surface
    from vaultmem.memory.notes import reinforce_notes

    session = session or transcript_session(transcript)
    if not session:
        raise VaultmemError(f"{transcript} names no session: give --session ID")
    # [memory] auto_reinforce = false: nothing is reinforced unless asked with a limit.
    automatic = config.hooks_reinforce_max if config.tuning.auto_reinforce else 0
    cap = automatic if limit is None else limit
    record = surface.session_record(config, session)
    used = used_notes(config, transcript, record.notes)
    room = max(cap - len(record.reinforced), 0)  # the cap counts the whole session
    due = [u.path for u in used if u.path not in record.reinforced][:room]
    if due and not dry_run:
        reinforce_notes(config, due, now, session=session)
        surface.record_reinforced(config, session, due)
    return Feedback(session, tuple(record.notes), tuple(used), tuple(due))
