"""Build the capture benchmark's Claude Code transcripts and gold from their sources.

    python benchmarks/data/capture/build.py

Each ``src/NN-name.txt`` is one session, written by hand in a small script format, and
becomes ``session-NN-name.jsonl`` (Claude Code's JSONL, as ``~/.claude/projects/…`` holds
it: uuids chained by ``parentUuid``, timestamps, ``sessionId``, ``cwd``, assistant
messages with ``text``/``thinking``/``tool_use`` blocks, tool results as user entries,
sidechains, summaries, command wrappers) plus one line of ``gold.jsonl``::

    {"session": "session-NN-name", "memories": [{"type", "text", "keywords"}],
     "not_memories": ["..."]}

The source format, one directive or block per line start::

    @cwd /home/dev/harbor            the session's folder
    @start 2026-10-02T09:14:00Z      when it starts
    @memory TYPE | TEXT | kw1; kw2   a gold memory and the keywords a capture must hold
    @not TEXT                        something said that must not become a memory
    >>> user | assistant | thinking | result | summary | meta | system
    >>> tool NAME {json input}       a tool call of the assistant message above it
    >>> side-user | side-assistant   a subagent's (sidechain) turn

Lines after a ``>>>`` line are its text, up to the next one. ``thinking`` goes into the
next assistant message; ``tool`` joins the assistant message before it; ``result``
answers the tool calls not answered yet, one ``result`` block each, in order.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE / "src"
VERSION = "2.0.31"
MODEL = "claude-sonnet-4-5-20250929"


@dataclass
class Session:
    name: str
    cwd: str = "/home/dev/project"
    start: str = "2026-10-01T09:00:00Z"
    memories: list[dict[str, object]] = field(default_factory=list)
    nots: list[str] = field(default_factory=list)
    blocks: list[tuple[str, str, str]] = field(default_factory=list)  # (kind, arg, text)


def parse(path: Path) -> Session:
    """One source file as a :class:`Session`."""
    session = Session(path.stem)
    blocks: list[tuple[str, str, list[str]]] = []
    for line in path.read_text("utf-8").splitlines():
        if line.startswith(">>> "):
            kind, _, arg = line[4:].strip().partition(" ")
            blocks.append((kind, arg, []))
        elif blocks:
            blocks[-1][2].append(line)
        elif line.startswith("@cwd "):
            session.cwd = line[5:].strip()
        elif line.startswith("@start "):
            session.start = line[7:].strip()
        elif line.startswith("@memory "):
            kind, text, keywords = (p.strip() for p in line[8:].split("|"))
            words = [k.strip() for k in keywords.split(";") if k.strip()]
            session.memories.append({"type": kind, "text": text, "keywords": words})
        elif line.startswith("@not "):
            session.nots.append(line[5:].strip())
        elif line.strip():
            raise SystemExit(f"{path}: stray line before the first block: {line!r}")
    session.blocks = [(k, a, "\n".join(t).strip("\n")) for k, a, t in blocks]
    return session


def _uuid(seed: str) -> str:
    h = hashlib.sha256(seed.encode()).hexdigest()
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-8{h[17:20]}-{h[20:32]}"


class Writer:
    """Turns blocks into JSONL entries with chained uuids and advancing timestamps."""

    def __init__(self, session: Session) -> None:
        self.s = session
        self.sid = _uuid("session:" + session.name)
        self.when = datetime.fromisoformat(session.start.replace("Z", "+00:00"))
        self.parent: str | None = None
        self.n = 0
        self.lines: list[dict[str, object]] = []
        self.pending_tools: list[str] = []
        self.thinking: str | None = None
        self.assistant: dict[str, object] | None = None

    def _common(self, kind: str, *, side: bool = False, seconds: float = 4.0) -> dict:
        self.n += 1
        self.when += timedelta(seconds=seconds + (self.n * 7919 % 13))
        uuid = _uuid(f"{self.s.name}:{self.n}")
        entry = {
            "parentUuid": self.parent,
            "isSidechain": side,
            "userType": "external",
            "cwd": self.s.cwd,
            "sessionId": self.sid,
            "version": VERSION,
            "gitBranch": "main",
            "type": kind,
            "uuid": uuid,
            "timestamp": self.when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{self.n * 37 % 1000:03d}Z",
        }
        if not side:
            self.parent = uuid
        return entry

    def _end_assistant(self) -> None:
        self.assistant = None

    def user(self, text: str, *, side: bool = False, meta: bool = False) -> None:
        self._end_assistant()
        entry = self._common("user", side=side, seconds=40.0)
        entry["message"] = {"role": "user", "content": text}
        if meta:
            entry["isMeta"] = True
        self.lines.append(entry)

    def assistant_text(self, text: str, *, side: bool = False) -> None:
        entry = self._common("assistant", side=side, seconds=6.0)
        content: list[dict[str, object]] = []
        if self.thinking is not None:
            sig = hashlib.sha256(self.thinking.encode()).hexdigest()[:24]
            content.append({"type": "thinking", "thinking": self.thinking, "signature": sig})
            self.thinking = None
        if text:
            content.append({"type": "text", "text": text})
        message = {
            "id": "msg_01" + hashlib.sha256(entry["uuid"].encode()).hexdigest()[:22],
            "type": "message",
            "role": "assistant",
            "model": MODEL,
            "content": content,
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 900 + self.n * 31, "output_tokens": 40 + len(text) // 4},
        }
        entry["message"] = message
        entry["requestId"] = "req_011C" + hashlib.sha256(entry["uuid"].encode()).hexdigest()[:16]
        self.lines.append(entry)
        self.assistant = message

    def tool(self, name: str, arg_json: str) -> None:
        if self.assistant is None:
            self.assistant_text("")
        assert self.assistant is not None
        tool_id = (
            "toolu_01"
            + hashlib.sha256(f"{self.s.name}:tool:{self.n}:{name}".encode()).hexdigest()[:22]
        )
        content = self.assistant["content"]
        assert isinstance(content, list)
        content.append(
            {"type": "tool_use", "id": tool_id, "name": name, "input": json.loads(arg_json)}
        )
        self.assistant["stop_reason"] = "tool_use"
        self.pending_tools.append(tool_id)

    def result(self, text: str) -> None:
        self._end_assistant()
        tool_id = self.pending_tools.pop(0)
        entry = self._common("user", seconds=1.0)
        entry["message"] = {
            "role": "user",
            "content": [{"tool_use_id": tool_id, "type": "tool_result", "content": text}],
        }
        entry["toolUseResult"] = {"stdout": text[:200], "stderr": "", "interrupted": False}
        self.lines.append(entry)

    def summary(self, text: str) -> None:
        self.lines.insert(
            0, {"type": "summary", "summary": text, "leafUuid": _uuid(self.s.name + ":leaf")}
        )

    def system(self, text: str) -> None:
        entry = self._common("system", seconds=1.0)
        entry.update(
            {"subtype": "compact_boundary", "content": text, "isMeta": False, "level": "info"}
        )
        self.lines.append(entry)


def build(session: Session) -> list[dict[str, object]]:
    """The JSONL entries of one session."""
    w = Writer(session)
    for kind, arg, text in session.blocks:
        if kind == "user":
            w.user(text)
        elif kind == "meta":
            w.user(text, meta=True)
        elif kind == "assistant":
            w.assistant_text(text)
        elif kind == "thinking":
            w.thinking = text
        elif kind == "tool":
            name, _, args = arg.partition(" ")
            w.tool(name, args or "{}")
        elif kind == "result":
            w.result(text)
        elif kind == "side-user":
            w.user(text, side=True)
        elif kind == "side-assistant":
            w.assistant_text(text, side=True)
        elif kind == "summary":
            w.summary(text)
        elif kind == "system":
            w.system(text)
        else:
            raise SystemExit(f"{session.name}: unknown block {kind!r}")
    if w.pending_tools:
        raise SystemExit(f"{session.name}: tool calls without a result: {w.pending_tools}")
    return w.lines


_NAME_RE = re.compile(r"^\d\d-[a-z0-9-]+$")


def main(out: Path = HERE) -> int:
    gold = []
    sources = sorted(SRC.glob("*.txt"))
    for path in sources:
        if not _NAME_RE.match(path.stem):
            raise SystemExit(f"{path}: name it NN-words.txt")
        session = parse(path)
        name = f"session-{session.name}"
        lines = build(session)
        text = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
        (out / f"{name}.jsonl").write_text(text, "utf-8")
        gold.append({"session": name, "memories": session.memories, "not_memories": session.nots})
    (out / "gold.jsonl").write_text(
        "".join(json.dumps(g, ensure_ascii=False) + "\n" for g in gold), "utf-8"
    )
    memories = sum(len(g["memories"]) for g in gold)
    print(f"{len(sources)} sessions, {memories} gold memories", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
