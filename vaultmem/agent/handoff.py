"""`handoff`: the note a session leaves for the next one.

Sections Request / Investigated / Learned / Done / Files changed / Next steps, rendered
from ``templates/handoff.md.j2``. With an LLM they are written by the model (one
schema-constrained JSON request over the redacted end of the session, prompt
``templates/prompts/handoff.j2``); without one they are filled from the transcript
itself: the last user request, the files read and searched, the last assistant message.
"Files changed" always comes from the agent's own tool calls (Edit, Write, MultiEdit,
NotebookEdit), never from the model. The note links (``related``) to the memories
`extract` wrote from the same transcript.

A second `handoff` of an unchanged transcript writes nothing and returns the first note;
one that grew gets a new note (the next session reads the latest). "Unchanged" is the
transcript's SHA-256: kept in the cache's transcript state, and in the note itself
(``transcript_sha256``), so that a cleared cache does not bring a duplicate either.
Everything the note holds comes from the transcript as read, already redacted
(:func:`vaultmem.agent.transcript.read_entries`), or from a model that saw nothing else.
"""

from __future__ import annotations

import os
import re
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from vaultmem.agent.redact import redact
from vaultmem.agent.transcript import (
    BULLET_RE,
    FENCE_RE,
    Entry,
    TranscriptState,
    check_transcript,
    load_state,
    prefix_hash,
    read_entries,
    save_state,
)
from vaultmem.config import Config
from vaultmem.errors import EndpointError
from vaultmem.scores import to_utc

if TYPE_CHECKING:
    from vaultmem.inference.llm import LLMClient

__all__ = [
    "HANDOFF_SCHEMA",
    "HASH_KEY",
    "Handoff",
    "HandoffText",
    "handoff_text",
    "write_handoff",
]

TEMPLATE = "handoff.md.j2"
PROMPT = "prompts/handoff.j2"
FOLDER = "handoffs"
TAIL_CHARS = 12000  # the end of the session the model reads
MAX_ITEMS = 12
MAX_LINE = 400
EDIT_TOOLS = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit"})
READ_TOOLS = frozenset({"Read", "Grep", "Glob", "WebFetch", "WebSearch", "LS"})

_LIST = {"type": "array", "items": {"type": "string"}, "maxItems": 6}
HASH_KEY = "transcript_sha256"  # the frontmatter key naming the transcript a note covers
HANDOFF_SCHEMA: dict[str, object] = {
    "type": "object",
    "properties": {
        "request": {"type": "string"},
        "investigated": _LIST,
        "learned": _LIST,
        "done": _LIST,
        "next_steps": _LIST,
    },
    "required": ["request", "investigated", "learned", "done", "next_steps"],
}


@dataclass(frozen=True)
class HandoffText:
    """The sections of a handoff (from redacted text only)."""

    request: str
    investigated: tuple[str, ...] = ()
    learned: tuple[str, ...] = ()
    done: tuple[str, ...] = ()
    files: tuple[str, ...] = ()
    next_steps: tuple[str, ...] = ()


@dataclass(frozen=True)
class Handoff:
    """What `handoff` did: the note's vault path, whether it is new, its sections."""

    path: str
    created: bool
    text: HandoffText
    related: tuple[str, ...] = ()
    mode: str = "rules"  # or "llm"
    warnings: tuple[str, ...] = ()

    def as_json(self) -> dict[str, object]:
        """The ``--json`` object."""
        t = self.text
        return {
            "path": self.path,
            "created": self.created,
            "mode": self.mode,
            "request": t.request,
            "investigated": list(t.investigated),
            "learned": list(t.learned),
            "done": list(t.done),
            "files": list(t.files),
            "next_steps": list(t.next_steps),
            "related": list(self.related),
            "warnings": list(self.warnings),
        }


# --------------------------------------------------------------------------- reading


@dataclass
class _Session:
    """What one pass over the transcript keeps: bounded, whatever its length."""

    request: str = ""
    last_reply: str = ""
    session: str | None = None
    cwd: str | None = None
    files: dict[str, None] | None = None
    looked: dict[str, None] | None = None
    tail: deque[str] | None = None
    tail_chars: int = 0

    def add(self, entry: Entry) -> None:
        self.session = entry.session or self.session
        self.cwd = entry.cwd or self.cwd
        if entry.sidechain:
            return
        for tool in entry.tools:
            self._tool(tool.name, tool.input)
        if not entry.prose:
            return
        text = entry.text.strip()
        if entry.role == "user":
            self.request = text
        elif entry.role == "assistant":
            self.last_reply = text
        label = "User" if entry.role == "user" else "Assistant"
        self._keep(f"{label}: {text}")

    def _tool(self, name: str, args: Any) -> None:
        assert self.files is not None and self.looked is not None
        target = args.get("file_path") or args.get("notebook_path") or args.get("path")
        if name in EDIT_TOOLS and isinstance(target, str):
            self.files.setdefault(target, None)
        elif name in READ_TOOLS:
            what = [args.get(k) for k in ("pattern", "query", "url", "file_path", "path")]
            shown = [
                _relative(w.strip(), self.cwd) for w in what if isinstance(w, str) and w.strip()
            ]
            if shown:
                self.looked.setdefault(f"{name} {' in '.join(shown[:2])}", None)

    def _keep(self, block: str) -> None:
        assert self.tail is not None
        self.tail.append(block)
        self.tail_chars += len(block)
        while self.tail_chars > TAIL_CHARS and len(self.tail) > 1:
            self.tail_chars -= len(self.tail.popleft())


def _read(path: Path, size: int) -> _Session:
    session = _Session(files={}, looked={}, tail=deque())
    for entry in read_entries(path, end=size):
        session.add(entry)
    return session


def _relative(path: str, cwd: str | None) -> str:
    """``path`` relative to the session's working folder when it lies inside it."""
    if cwd and path.startswith(cwd.rstrip("/") + "/"):
        return path[len(cwd.rstrip("/")) + 1 :]
    return path


def _line(text: str) -> str:
    """One line of at most :data:`MAX_LINE` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= MAX_LINE else flat[: MAX_LINE - 1].rstrip() + "…"


def _lines(items: Iterable[Any]) -> tuple[str, ...]:
    out = [_line(i) for i in items if isinstance(i, str) and i.strip()]
    return tuple(dict.fromkeys(out))[:MAX_ITEMS]


def _paragraph_lines(text: str, *, keep_headings: bool = False) -> list[str]:
    """The prose lines of a message: code blocks, headings (unless ``keep_headings``)
    and bullets' markers dropped."""
    lines = (BULLET_RE.sub("", line).strip() for line in FENCE_RE.sub("", text).splitlines())
    return [line for line in lines if line and (keep_headings or not line.startswith("#"))]


# The labels a reply files its lines under, by section: "Next step: …", "**Learned:**",
# "## Next steps" (the lines after a label go under it until the next label).
_LABELS = {
    "next_steps": r"next(?: steps?)?|todo|to ?do|still to do|left to do|remaining|"
    r"follow[- ]?ups?|open (?:items|questions)",
    "learned": r"learned|learnings|lessons?(?: learned)?|what i learned|til|findings?|"
    r"gotchas?|key (?:insights?|findings?|takeaways?)|insights?|takeaways?|root cause|notes?",
    "done": r"done|did|completed|changes(?: made)?|what i did|what changed|summary|fixed",
}
_MARK = r"(?:\*\*|__)?"
_LABEL_RE = re.compile(
    rf"^(?:#+\s*)?{_MARK}\s*(?:(?P<next_steps>{_LABELS['next_steps']})|"
    rf"(?P<learned>{_LABELS['learned']})|(?P<done>{_LABELS['done']}))"
    rf"\s*{_MARK}\s*(?:[:\-–—]\s*{_MARK}\s*(?P<rest>.*)|$)",
    re.IGNORECASE,
)
_HEADING_RE = re.compile(r"^#+\s")
_LEARNED_RE = re.compile(r"^(?:it )?turns out\b|^i learned\b|^lesson\b", re.IGNORECASE)


def reply_sections(text: str) -> dict[str, list[str]]:
    """The lines of an assistant's last message, filed by section (``done``,
    ``learned``, ``next_steps``): a line under a label ("Next step: …", "Learned:",
    "**Next steps:**", "## Learned") goes to that label's section, as do the lines after
    it until another label; "Turns out …" lines are learned; the rest is done. Code
    blocks and list markers are dropped.

    Example:
        >>> reply_sections("Moved sessions.\nNext step: run k6.")["next_steps"]
        ['run k6.']
    """
    found: dict[str, list[str]] = {"done": [], "learned": [], "next_steps": []}
    section = "done"
    for line in _paragraph_lines(text, keep_headings=True):
        label = _LABEL_RE.match(line)
        if label is None and _HEADING_RE.match(line):
            continue  # a heading of no section's: its lines stay where they were
        if label is not None:
            section = next(name for name in found if label.group(name))
            rest = (label.group("rest") or "").strip().strip("*_").strip()
            if rest:
                found[section].append(rest)
            continue
        found["learned" if _LEARNED_RE.match(line) else section].append(line)
    return found


def handoff_text(session: _Session, files: Sequence[str]) -> HandoffText:
    """The sections filled from the transcript alone (no model): the last request, what
    was read or searched, and the last assistant message filed by its labels
    (:func:`reply_sections`: done, learned, next steps)."""
    assert session.looked is not None
    sections = reply_sections(session.last_reply)
    return HandoffText(
        request=_line(session.request),
        investigated=_lines(session.looked),
        learned=_lines(sections["learned"]),
        done=_lines(sections["done"]),
        files=tuple(files),
        next_steps=_lines(sections["next_steps"]),
    )


def _llm_text(
    config: Config, llm: LLMClient, session: _Session, files: Sequence[str], learned: Sequence[str]
) -> HandoffText:
    """The sections written by the model; raises EndpointError / JSONReplyError."""
    from vaultmem.inference.llm import JSONReplyError, parse_json_reply
    from vaultmem.prompts import render

    assert session.tail is not None
    prompt = render(
        config,
        PROMPT,
        transcript="\n\n".join(session.tail),
        files=list(files),
        learned=list(learned),
    )
    reply = llm.chat([{"role": "user", "content": prompt}], json_mode=True, schema=HANDOFF_SCHEMA)
    data = parse_json_reply(reply, expect=dict)
    request = data.get("request")
    if not isinstance(request, str):
        raise JSONReplyError("handoff reply has no request")

    def items(key: str) -> tuple[str, ...]:
        value = data.get(key)
        return _lines(value if isinstance(value, list) else [])

    return HandoffText(
        request=_line(request),
        investigated=items("investigated"),
        learned=items("learned"),
        done=items("done"),
        files=tuple(files),
        next_steps=items("next_steps"),
    )


# --------------------------------------------------------------------------- writing


def _topic(project: str | None, text: HandoffText) -> str:
    from vaultmem.memory.remember import slugify

    words = project or text.request or "session"
    return slugify(words, max_words=6).replace("-", " ")


def write_handoff(
    config: Config,
    path: Path,
    *,
    llm: LLMClient | None,
    project: str | None,
    now: datetime,
    folder: str | None = None,
) -> Handoff:
    """Write the handoff note of transcript ``path`` into ``folder`` (vault-relative,
    default ``handoffs``).

    The LLM writes the sections when given (a failing endpoint falls back to the
    transcript-only sections, listed in ``warnings``). Returns the existing note, with
    ``created`` False and mode ``unchanged``, when a handoff of the very same transcript
    bytes exists: recorded in the cache, or a note of ``folder`` whose
    ``transcript_sha256`` is the transcript's. ``project`` (a name given on the command
    line) is redacted like the transcript: it becomes part of a file name.

    Example:
        >>> write_handoff(config, Path("s.jsonl"), llm=None, project="x", now=now)  # doctest: +SKIP
    """
    from vaultmem.agent.extract import capture_lock
    from vaultmem.inference.llm import JSONReplyError
    from vaultmem.lookup import note_names
    from vaultmem.memory.remember import target_folder
    from vaultmem.memory.writeback import wikilink
    from vaultmem.vault import LinkResolver

    check_transcript(path)  # a FIFO or a device is refused before anything waits on it
    project = redact(project) if project else project
    with capture_lock(config, "handoff"):
        state = load_state(config.cache_dir, path)
        size = check_transcript(path)
        digest = prefix_hash(path, size)
        previous = _previous(config, state, size, digest) or _in_vault(
            config, target_folder(config, folder, FOLDER), digest
        )
        if previous:
            if previous != state.handoff or state.handoff_sha256 != digest:
                save_state(
                    config.cache_dir,
                    path,
                    replace(state, handoff=previous, handoff_size=size, handoff_sha256=digest),
                )
            return Handoff(previous, False, HandoffText(request=""), mode="unchanged")
        session = _read(path, size)
        assert session.files is not None
        files = [_relative(f, session.cwd) for f in session.files]
        notes = [n for n in state.notes if (config.vault / n).is_file()]
        resolver = LinkResolver(note_names(config))
        related = tuple(dict.fromkeys(wikilink(n, resolver) for n in notes))
        mode = "rules"
        warnings: tuple[str, ...] = ()
        text = handoff_text(session, files)
        if llm is not None:
            learned = [PurePosixPath(n).stem for n in notes]
            try:
                text = _llm_text(config, llm, session, files, learned)
                mode = "llm"
            except (EndpointError, JSONReplyError) as exc:
                warnings = (f"{exc}; sections filled from the transcript instead",)
        note = _write(config, folder, project, session.session, digest, text, related, now)
        save_state(
            config.cache_dir,
            path,
            replace(state, handoff=note, handoff_size=size, handoff_sha256=digest),
        )
    return Handoff(note, True, text, related, mode, warnings)


def _previous(config: Config, state: TranscriptState, size: int, digest: str) -> str | None:
    """The handoff the cache records for these very transcript bytes, if it still exists
    (a record from before hashes were kept is judged by size alone)."""
    if not state.handoff or state.handoff_size != size:
        return None
    if state.handoff_sha256 not in ("", digest):
        return None
    return state.handoff if (config.vault / state.handoff).is_file() else None


def _in_vault(config: Config, folder: str, digest: str) -> str | None:
    """A note of ``folder`` that says it is the handoff of the transcript ``digest``."""
    from vaultmem.errors import NoteError
    from vaultmem.note import parse_note, read_raw
    from vaultmem.vault import note_path

    where = config.vault / folder if folder else config.vault
    try:
        names = sorted(e.name for e in os.scandir(where) if e.name.endswith(".md"))
    except OSError:
        return None
    for name in names:
        try:
            rel = note_path(config, f"{folder}/{name}" if folder else name, write=False)
            raw, _ = read_raw(config.vault, rel)
            # Only a note holding the digest at all is parsed.
            if digest.encode() not in raw:
                continue
            if parse_note(rel, raw, keys=config.keys).meta.get(HASH_KEY) == digest:
                return rel
        except NoteError:
            continue
    return None


def _write(
    config: Config,
    folder: str | None,
    project: str | None,
    session: str | None,
    digest: str,
    text: HandoffText,
    related: Sequence[str],
    now: datetime,
) -> str:
    """Create the note (under the vault lock) and index it; its vault path."""
    from vaultmem.indexer import refresh_paths
    from vaultmem.memory.remember import create_note, target_folder, unique_path
    from vaultmem.memory.writeback import locked
    from vaultmem.prompts import render_note

    when = to_utc(now).replace(microsecond=0)
    topic = _topic(project, text)
    meta: dict[str, Any] = {"type": "handoff", "tags": ["handoff"], "created": when}
    if project:
        meta["project"] = project
    if session:
        meta["session"] = session
    if related:
        meta["related"] = list(related)
    meta[HASH_KEY] = digest
    title = f"Handoff {when:%Y-%m-%d} — {topic}"
    with locked(config, "handoff"):
        target = target_folder(config, folder, FOLDER)
        path = unique_path(config, target, f"{when:%Y-%m-%d} {topic}", sep=" ")
        raw = render_note(
            config,
            TEMPLATE,
            path,
            meta,
            title=title,
            request=text.request,
            investigated=text.investigated,
            learned=text.learned,
            done=text.done,
            files=text.files,
            next_steps=text.next_steps,
            related=related,
        )
        create_note(config, path, raw)
        refresh_paths(config, [path])
    return path
