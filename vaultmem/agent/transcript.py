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

Entries are read one at a time (a transcript of many megabytes is never held whole),
each with the byte offset where it ends, so a later run can start after the last entry
it processed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

__all__ = ["BULLET_RE", "FENCE_RE", "Entry", "ToolUse", "is_jsonl", "read_entries"]

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
    """One tool call of an assistant turn: its name and input (``{"file_path": …}``)."""

    name: str
    input: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Entry:
    """One transcript entry.

    ``role``: user, assistant, system, summary (or the JSONL ``type`` of other entries).
    ``text``: the prose of the entry (text blocks; never tool output or thinking).
    ``end``: the byte offset just after it. ``tool_result``: a user entry that only
    carries tool output. ``meta``: recorded by the agent, not typed by anyone
    (command wrappers, caveats). ``sidechain``: a subagent's conversation.
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

    @property
    def prose(self) -> bool:
        """Whether this entry is something a person or the agent said in the main thread."""
        return (
            self.role in ("user", "assistant", "unknown")
            and bool(self.text.strip())
            and not (self.sidechain or self.meta or self.tool_result)
        )


def is_jsonl(path: Path) -> bool:
    """Whether ``path`` is a JSONL transcript: by extension, else by its first byte."""
    if path.suffix.lower() in (".jsonl", ".ndjson"):
        return True
    with path.open("rb") as fh:
        head = fh.read(4096).lstrip()
    return head.startswith(b"{")


def read_entries(path: Path, start: int = 0) -> Iterator[Entry]:
    """The entries of the transcript at ``path`` from byte offset ``start`` on.

    ``start`` must be an ``end`` of an earlier entry (or 0). A JSONL line cut short
    (the agent is still writing it) ends the reading without being yielded.
    """
    reader = _jsonl if is_jsonl(path) else _text
    with path.open("rb") as fh:
        fh.seek(start)
        yield from reader(fh, start)


# --------------------------------------------------------------------------- JSONL


def _jsonl(fh: BinaryIO, offset: int) -> Iterator[Entry]:
    index = 0
    for raw in iter(fh.readline, b""):
        offset += len(raw)
        index += 1
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
        "uuid": _str(obj.get("uuid") or obj.get("leafUuid")),
        "timestamp": _str(obj.get("timestamp")),
        "session": _str(obj.get("sessionId")),
        "cwd": _str(obj.get("cwd")),
        "sidechain": bool(obj.get("isSidechain")),
    }
    if kind == "summary":
        return Entry(role="summary", text=_str(obj.get("summary")) or "", **common)
    if kind == "system":
        return Entry(role="system", text=_str(obj.get("content")) or "", meta=True, **common)
    message = obj.get("message")
    if kind not in ("user", "assistant") or not isinstance(message, Mapping):
        return Entry(role=kind or "other", **common)
    texts, tools, results = _blocks(message.get("content"))
    text = "\n\n".join(texts)
    meta = bool(obj.get("isMeta")) or (kind == "user" and text.lstrip().startswith(_NOISE_PREFIXES))
    return Entry(
        role=kind,
        text=text,
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
            tools.append(
                ToolUse(str(block.get("name") or ""), raw if isinstance(raw, dict) else {})
            )
        elif kind == "tool_result":
            results = True
        # thinking, redacted_thinking, image: private reasoning or pixels, not memories
    return texts, tools, results


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


# --------------------------------------------------------------------------- text


def _text(fh: BinaryIO, offset: int) -> Iterator[Entry]:
    role, index = "unknown", 0
    lines: list[str] = []
    for raw in iter(fh.readline, b""):
        line = raw.decode("utf-8", errors="replace")
        match = _SPEAKER_RE.match(line.rstrip("\r\n"))
        if match:
            if any(s.strip() for s in lines):
                index += 1
                yield Entry(index=index, end=offset, role=role, text="".join(lines).strip())
            role = _ROLES.get(match.group(1).lower(), "assistant")
            lines = [match.group(2) + "\n"] if match.group(2).strip() else []
        else:
            lines.append(line)
        offset += len(raw)
    if any(s.strip() for s in lines):
        yield Entry(index=index + 1, end=offset, role=role, text="".join(lines).strip())


# --------------------------------------------------------------------------- state


@dataclass(frozen=True)
class TranscriptState:
    """What vaultmem has done with one transcript (a small JSON file in the cache).

    ``offset``: the end of the last entry `extract` processed; it counts only while the
    file's first ``offset`` bytes still hash to ``prefix_sha256`` (a rewritten
    transcript is read again from the start). ``notes``: the notes `extract` wrote or
    reinforced from it (a handoff links to them). ``handoff``/``handoff_size``: the
    last handoff written and the transcript size it covered.
    """

    offset: int = 0
    prefix_sha256: str = ""
    last_uuid: str | None = None
    notes: tuple[str, ...] = ()
    handoff: str | None = None
    handoff_size: int = -1

    def as_json(self) -> dict[str, Any]:
        """The state file's content."""
        return {
            "offset": self.offset,
            "prefix_sha256": self.prefix_sha256,
            "last_uuid": self.last_uuid,
            "notes": list(self.notes),
            "handoff": self.handoff,
            "handoff_size": self.handoff_size,
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
    with path.open("rb") as fh:
        while left > 0:
            block = fh.read(min(left, 1 << 20))
            if not block:
                break
            digest.update(block)
            left -= len(block)
    return digest.hexdigest()


def load_state(cache_dir: Path, transcript: Path) -> TranscriptState:
    """The saved state of ``transcript``; a fresh one when none is saved or it no longer
    matches the file (its processed prefix changed)."""
    try:
        data = json.loads(state_path(cache_dir, transcript).read_text("utf-8"))
        state = TranscriptState(
            offset=int(data.get("offset", 0)),
            prefix_sha256=str(data.get("prefix_sha256", "")),
            last_uuid=data.get("last_uuid"),
            notes=tuple(str(n) for n in data.get("notes", [])),
            handoff=data.get("handoff"),
            handoff_size=int(data.get("handoff_size", -1)),
        )
    except (OSError, ValueError, TypeError, AttributeError):
        return TranscriptState()
    size = transcript.stat().st_size
    if state.offset > size or prefix_hash(transcript, state.offset) != state.prefix_sha256:
        return TranscriptState()
    return state


def save_state(cache_dir: Path, transcript: Path, state: TranscriptState) -> None:
    """Write ``state`` for ``transcript`` atomically."""
    from vaultmem.atomic import atomic_write

    path = state_path(cache_dir, transcript)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, json.dumps(state.as_json(), ensure_ascii=False).encode("utf-8"))
