"""Reading agent session transcripts: Claude Code JSONL, plain text and markdown.

Claude Code writes one JSON object per line (``~/.claude/projects/<project>/<session>.jsonl``)::

    {"type": "user", "message": {"role": "user", "content": "..."}, "uuid": "...",
     "timestamp": "...", "isSidechain": false, "sessionId": "...", "cwd": "..."}
    {"type": "assistant", "message": {"role": "assistant", "content": [
        {"type": "text", "text": "..."}, {"type": "thinking", "thinking": "..."},
        {"type": "tool_use", "id": "toolu_…", "name": "Edit", "input": {"file_path": "..."}}]}}
    {"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "…"}]}}
    {"type": "summary", "summary": "...", "leafUuid": "..."}
    {"type": "system", "content": "...", "level": "info"}

Other transcripts are text: turns start at a line naming the speaker (``User:``,
``## Assistant``, ``**Human:**``…); text before the first such line is one turn of an
unknown speaker.

Entries are read one at a time, each with the byte offset where it ends, so a later run
can start after the last entry it processed. Reading is bounded: only regular files are
read (a FIFO, a device or a directory could be endless, and ``readline`` on ``/dev/zero``
never returns, deaf to signals), at most :data:`MAX_TRANSCRIPT_BYTES` a run and
:data:`MAX_ENTRY_BYTES` a line or entry (a longer one is skipped, and counted), so memory
stays bounded and every read returns to Python often enough for Ctrl-C and SIGTERM.

Everything read is redacted here, once (:func:`vaultmem.agent.redact.redact`): an entry's
text, the tool arguments kept (:data:`TOOL_KEYS`), its session id and folder. No later
path (chunks, prompts, titles, file names, wikilinks, handoff sections) sees raw text.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, BinaryIO

from vaultmem.errors import VaultmemError

__all__ = [
    "BULLET_RE",
    "FENCE_RE",
    "MAX_ENTRY_BYTES",
    "MAX_TRANSCRIPT_BYTES",
    "TOOL_KEYS",
    "Entry",
    "ToolUse",
    "TranscriptError",
    "check_transcript",
    "is_jsonl",
    "read_entries",
]

# A Claude Code session of a working day is a few to tens of MB, most of it tool output.
MAX_TRANSCRIPT_BYTES = 256 * 1024 * 1024
# One JSONL line (a tool result holding a big file or an image) or one text turn.
MAX_ENTRY_BYTES = 8 * 1024 * 1024
# The tool arguments kept (what a tool touched); the rest (file contents a Write carried,
# commands) is never read, so never has to be redacted.
TOOL_KEYS = ("file_path", "notebook_path", "path", "pattern", "query", "url")
_MAX_ARG = 2000
_SKIP_BLOCK = 1 << 20


def redact(text: str) -> str:
    """:func:`vaultmem.agent.redact.redact`, imported when the first entry is read: a
    transcript refused (a FIFO, a device, too large) never pays for loading its rules."""
    from vaultmem.agent.redact import redact as redacted

    return redacted(text)


class TranscriptError(VaultmemError):
    """A transcript that cannot be read: not a regular file, unreadable, or too large."""


# User turns Claude Code records that the user did not type: slash-command wrappers,
# local command output, interruption notices.
_NOISE_PREFIXES = (
    "<command-name>",
    "<command-message>",
    "<local-command-stdout>",
    "<local-command-stderr>",
    "[Request interrupted",
    "Caveat: The messages below were generated",
)

_SPEAKER_RE = re.compile(
    r"^[ \t]*(?:#{1,6}[ \t]*|>[ \t]*)?(?:\*\*|__)?"
    r"(user|human|me|assistant|claude|ai|agent|model|system)"
    r"(?:\*\*|__)?[ \t]*(?::(?:\*\*|__)?[ \t]*|(?:\*\*|__)?[ \t]*$)(.*)$",
    re.IGNORECASE,
)
_ROLES = {"user": "user", "human": "user", "me": "user", "system": "system"}

# What is not prose in a message: fenced code blocks, and list markers before an item.
FENCE_RE = re.compile(r"^```.*?^```[^\n]*$", re.DOTALL | re.MULTILINE)
BULLET_RE = re.compile(r"^\s*(?:[-*+•]|\d+[.)])\s+")


@dataclass(frozen=True)
class ToolUse:
    """One tool call of an assistant turn: its name and the string arguments of
    :data:`TOOL_KEYS` it had (``{"file_path": …}``), redacted."""

    name: str
    input: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Entry:
    """One transcript entry (its strings already redacted).

    ``role``: user, assistant, system, summary (or the JSONL ``type`` of other entries;
    ``oversize`` for a JSONL line over :data:`MAX_ENTRY_BYTES`, skipped unread).
    ``text``: the prose of the entry (text blocks; never tool output or thinking).
    ``end``: the byte offset just after it. ``tool_result``: a user entry that only
    carries tool output. ``meta``: recorded by the agent, not typed by anyone
    (command wrappers, caveats). ``sidechain``: a subagent's conversation.
    ``skipped``: bytes of it left unread for being over the cap.
    """

    index: int
    end: int
    role: str
    text: str = ""
    tools: tuple[ToolUse, ...] = ()
    uuid: str | None = None
    timestamp: str | None = None
    session: str | None = None
    cwd: str | None = None
    sidechain: bool = False
    tool_result: bool = False
    meta: bool = False
    skipped: int = 0

    @property
    def prose(self) -> bool:
        """Whether this entry is something a person or the agent said in the main thread."""
        return (
            self.role in ("user", "assistant", "unknown")
            and bool(self.text.strip())
            and not (self.sidechain or self.meta or self.tool_result)
        )


def _open(path: Path) -> BinaryIO:
    """``path`` opened for reading, refused unless it is a regular file.

    Opened without blocking (a FIFO with no writer would wait forever in ``open``) and
    judged by the descriptor itself, so a file swapped for a device after a check is
    refused too.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise TranscriptError(f"{path}: no such transcript") from None
    except OSError as exc:
        raise TranscriptError(f"{path}: cannot read the transcript: {exc.strerror}") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        kind = (
            "a directory"
            if stat.S_ISDIR(mode)
            else "a FIFO"
            if stat.S_ISFIFO(mode)
            else "a device"
            if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
            else "a socket"
            if stat.S_ISSOCK(mode)
            else "not a regular file"
        )
        raise TranscriptError(f"{path} is {kind}, not a transcript file; refusing to read it")
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def check_transcript(path: Path, start: int = 0) -> int:
    """The size of transcript ``path``; TranscriptError when it is not a regular file or
    more than :data:`MAX_TRANSCRIPT_BYTES` follow ``start``."""
    with _open(path) as fh:
        size = os.fstat(fh.fileno()).st_size
    _check_size(path, size, start)
    return size


def _check_size(path: Path, size: int, start: int) -> None:
    if size - start > MAX_TRANSCRIPT_BYTES:
        raise TranscriptError(
            f"{path}: {size - start:,} bytes to read; one run reads at most "
            f"{MAX_TRANSCRIPT_BYTES:,} ({MAX_TRANSCRIPT_BYTES // 2**20} MiB, "
            "vaultmem.agent.transcript.MAX_TRANSCRIPT_BYTES)"
        )


def is_jsonl(path: Path) -> bool:
    """Whether ``path`` is a JSONL transcript: by extension, else by its first byte."""
    if path.suffix.lower() in (".jsonl", ".ndjson"):
        return True
    with _open(path) as fh:
        return _sniff_jsonl(fh)


def _sniff_jsonl(fh: BinaryIO) -> bool:
    head = fh.read(4096).lstrip()
    return head.startswith(b"{")


def read_entries(path: Path, start: int = 0, end: int | None = None) -> Iterator[Entry]:
    """The entries of the transcript at ``path`` from byte offset ``start`` on (to ``end``
    when given), redacted.

    ``start`` must be an ``end`` of an earlier entry (or 0). A JSONL line cut short
    (the agent is still writing it) ends the reading without being yielded. Raises
    TranscriptError for a file that is not a regular file or too large.
    """
    with _open(path) as fh:
        size = os.fstat(fh.fileno()).st_size
        _check_size(path, size if end is None else min(size, end), start)
        jsonl = path.suffix.lower() in (".jsonl", ".ndjson") or _sniff_jsonl(fh)
        fh.seek(start)
        stop = (
            start + MAX_TRANSCRIPT_BYTES if end is None else min(end, start + MAX_TRANSCRIPT_BYTES)
        )
        lines = _lines(fh, start, stop)
        yield from (_jsonl(lines) if jsonl else _text(lines, start))


def _lines(fh: BinaryIO, offset: int, stop: int) -> Iterator[tuple[bytes, int, int]]:
    """(line, offset after it, bytes skipped) up to ``stop``: a line over
    :data:`MAX_ENTRY_BYTES` comes back empty with its length as skipped; a last line
    without its newline (cut by ``stop`` or still being written) comes back as read."""
    while offset < stop:
        raw = fh.readline(min(MAX_ENTRY_BYTES + 1, stop - offset))
        if not raw:
            return
        offset += len(raw)
        if len(raw) <= MAX_ENTRY_BYTES or raw.endswith(b"\n"):
            yield raw, offset, 0
            continue
        skipped = len(raw)
        while offset < stop:  # read past the rest of the line, a block at a time
            rest = fh.readline(min(_SKIP_BLOCK, stop - offset))
            if not rest:
                return  # no end of line yet: the line is still being written
            offset += len(rest)
            skipped += len(rest)
            if rest.endswith(b"\n"):
                yield b"", offset, skipped
                break


# --------------------------------------------------------------------------- JSONL


def _jsonl(lines: Iterator[tuple[bytes, int, int]]) -> Iterator[Entry]:
    index = 0
    for raw, offset, skipped in lines:
        index += 1
        if skipped:
            yield Entry(index=index, end=offset, role="oversize", meta=True, skipped=skipped)
            continue
        try:
            obj = json.loads(raw)
        except ValueError:
            if not raw.endswith(b"\n"):
                return  # a line still being written: read it next time
            continue  # a damaged line in the middle: skip it, keep the rest
        if isinstance(obj, dict):
            yield _claude_entry(obj, index, offset)


def _claude_entry(obj: Mapping[str, Any], index: int, end: int) -> Entry:
    kind = str(obj.get("type") or "")
    common: dict[str, Any] = {
        "index": index,
        "end": end,
        "uuid": _redacted(obj.get("uuid") or obj.get("leafUuid")),
        "timestamp": _redacted(obj.get("timestamp")),
        "session": _redacted(obj.get("sessionId")),
        "cwd": _redacted(obj.get("cwd")),
        "sidechain": bool(obj.get("isSidechain")),
    }
    if kind == "summary":
        return Entry(role="summary", text=_redacted(obj.get("summary")) or "", **common)
    if kind == "system":
        return Entry(role="system", text=_redacted(obj.get("content")) or "", meta=True, **common)
    message = obj.get("message")
    if kind not in ("user", "assistant") or not isinstance(message, Mapping):
        return Entry(role=kind or "other", **common)
    texts, tools, results = _blocks(message.get("content"))
    text = "\n\n".join(texts)
    meta = bool(obj.get("isMeta")) or (kind == "user" and text.lstrip().startswith(_NOISE_PREFIXES))
    return Entry(
        role=kind,
        text=redact(text),
        tools=tuple(tools),
        tool_result=results and not text.strip(),
        meta=meta,
        **common,
    )


def _blocks(content: Any) -> tuple[list[str], list[ToolUse], bool]:
    """(text blocks, tool calls, whether there were tool results) of ``message.content``."""
    if isinstance(content, str):
        return [content], [], False
    texts: list[str] = []
    tools: list[ToolUse] = []
    results = False
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif kind == "tool_use":
            raw = block.get("input")
            args = raw if isinstance(raw, Mapping) else {}
            kept = {k: _short(v[:_MAX_ARG]) for k in TOOL_KEYS if isinstance(v := args.get(k), str)}
            tools.append(ToolUse(_short(str(block.get("name") or "")[:_MAX_ARG]), kept))
        elif kind == "tool_result":
            results = True
        # thinking, redacted_thinking, image: private reasoning or pixels, not memories
    return texts, tools, results


def _redacted(value: Any) -> str | None:
    return _short(value[:_MAX_ARG]) if isinstance(value, str) else None


@lru_cache(maxsize=4096)
def _short(value: str) -> str:
    # Session ids, folders, tool names and paths repeat on every entry.
    return redact(value)


# --------------------------------------------------------------------------- text


def _text(lines: Iterator[tuple[bytes, int, int]], offset: int) -> Iterator[Entry]:
    role, index = "unknown", 0
    turn: list[str] = []
    size = skipped = 0
    for raw, end, over in lines:
        line = raw.decode("utf-8", errors="replace")
        match = _SPEAKER_RE.match(line.rstrip("\r\n")) if not over else None
        if match:
            if any(s.strip() for s in turn):
                index += 1
                text = redact("".join(turn).strip())
                yield Entry(index=index, end=offset, role=role, text=text, skipped=skipped)
            role = _ROLES.get(match.group(1).lower(), "assistant")
            turn = [match.group(2) + "\n"] if match.group(2).strip() else []
            size, skipped = len(raw), 0
        elif over or size + len(raw) > MAX_ENTRY_BYTES:
            skipped += over or len(raw)  # a turn keeps its first MAX_ENTRY_BYTES
        else:
            turn.append(line)
            size += len(raw)
        offset = end
    if any(s.strip() for s in turn):
        text = redact("".join(turn).strip())
        yield Entry(index=index + 1, end=offset, role=role, text=text, skipped=skipped)


# --------------------------------------------------------------------------- state


@dataclass(frozen=True)
class TranscriptState:
    """What vaultmem has done with one transcript (a small JSON file in the cache).

    ``offset``: the end of the last entry `extract` processed; it counts only while the
    file's first ``offset`` bytes still hash to ``prefix_sha256`` (a rewritten
    transcript is read again from the start). ``notes``: the notes `extract` wrote or
    reinforced from it (a handoff links to them). ``handoff``, ``handoff_size`` and
    ``handoff_sha256``: the last handoff written, and the size and SHA-256 of the
    transcript it covered (the note holds the hash too, as ``transcript_sha256``).
    The two parts are judged apart: one command's record never voids the other's.
    """

    offset: int = 0
    prefix_sha256: str = ""
    last_uuid: str | None = None
    notes: tuple[str, ...] = ()
    handoff: str | None = None
    handoff_size: int = -1
    handoff_sha256: str = ""

    def as_json(self) -> dict[str, Any]:
        """The state file's content."""
        return {
            "offset": self.offset,
            "prefix_sha256": self.prefix_sha256,
            "last_uuid": self.last_uuid,
            "notes": list(self.notes),
            "handoff": self.handoff,
            "handoff_size": self.handoff_size,
            "handoff_sha256": self.handoff_sha256,
        }


def state_path(cache_dir: Path, transcript: Path) -> Path:
    """The state file of ``transcript``: keyed by its resolved path."""
    import hashlib

    key = hashlib.sha256(str(transcript.resolve()).encode("utf-8")).hexdigest()[:24]
    return cache_dir / "transcripts" / f"{key}.json"


def prefix_hash(path: Path, size: int) -> str:
    """SHA-256 of the first ``size`` bytes of ``path`` (read in blocks)."""
    import hashlib

    digest = hashlib.sha256()
    left = size
    with _open(path) as fh:
        while left > 0:
            block = fh.read(min(left, 1 << 20))
            if not block:
                break
            digest.update(block)
            left -= len(block)
    return digest.hexdigest()


def load_state(cache_dir: Path, transcript: Path) -> TranscriptState:
    """The saved state of ``transcript``; fresh where none is saved. The `extract` part
    starts over when the processed prefix of the file changed (the handoff part stays:
    `handoff` compares its own size and hash)."""
    try:
        data = json.loads(state_path(cache_dir, transcript).read_text("utf-8"))
        state = TranscriptState(
            offset=int(data.get("offset", 0)),
            prefix_sha256=str(data.get("prefix_sha256", "")),
            last_uuid=data.get("last_uuid"),
            notes=tuple(str(n) for n in data.get("notes", [])),
            handoff=data.get("handoff"),
            handoff_size=int(data.get("handoff_size", -1)),
            handoff_sha256=str(data.get("handoff_sha256") or ""),
        )
    except (OSError, ValueError, TypeError, AttributeError):
        return TranscriptState()
    if state.offset == 0:
        return state  # nothing read yet: no prefix to compare (a handoff-only record)
    size = check_transcript(transcript)
    if state.offset > size or prefix_hash(transcript, state.offset) != state.prefix_sha256:
        return replace(state, offset=0, prefix_sha256="", last_uuid=None, notes=())
    return state


def save_state(cache_dir: Path, transcript: Path, state: TranscriptState) -> None:
    """Write ``state`` for ``transcript`` atomically."""
    from vaultmem.atomic import atomic_write

    path = state_path(cache_dir, transcript)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, json.dumps(state.as_json(), ensure_ascii=False).encode("utf-8"))
