"""`extract`: decisions, preferences, antipatterns and observations from a transcript.

The transcript's prose (what the user and the agent said in the main thread; not tool
output, thinking or subagent chatter), redacted as it is read
(:func:`vaultmem.agent.transcript.read_entries`), is cut into chunks of about
:data:`CHUNK_CHARS` characters, and each chunk is turned into memories:

- with an LLM: one schema-constrained JSON request per chunk (prompt:
  ``templates/prompts/extract.j2``), naming the notes the chunk may replace;
- without one, or once the endpoint fails: a rule-based extractor over sentences
  ("we decided", "let's go with", "instead of … because", "don't … again", "always",
  "never", "prefer", "turns out").

Every memory goes through :func:`vaultmem.memory.remember.remember` (duplicates,
``refines``, ``supersedes``). The end of the last entry processed is kept per transcript
(:mod:`vaultmem.agent.transcript` state), so a second run reads only what was appended.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vaultmem.agent.capture_rules import MAX_CHARS, MIN_CHARS, Said, spot
from vaultmem.agent.transcript import (
    MAX_ENTRY_BYTES,
    Entry,
    TranscriptState,
    check_transcript,
    load_state,
    prefix_hash,
    read_entries,
    save_state,
)
from vaultmem.config import Config
from vaultmem.errors import EndpointError, IndexStateError, VaultmemError

if TYPE_CHECKING:
    from vaultmem.agent.capture_links import Provenance
    from vaultmem.inference.base import Embedder
    from vaultmem.inference.llm import LLMClient
    from vaultmem.memory.contradictions import Verdict

__all__ = [
    "CHUNK_CHARS",
    "EXTRACT_SCHEMA",
    "Candidate",
    "Chunk",
    "ExtractReport",
    "Extracted",
    "capture_lock",
    "chunks",
    "grounded",
    "extract_transcript",
    "rule_candidates",
    "turn_chunks",
]

CHUNK_CHARS = 6000
MAX_PER_CHUNK = 8
NOTES_IN_PROMPT = 8
MAX_STATE_NOTES = 200
TEMPLATE = "prompts/extract.j2"
KINDS = ("decision", "preference", "antipattern", "observation")
TAG = "extracted"

EXTRACT_SCHEMA: dict[str, object] = {
    "type": "object",
    "properties": {
        "memories": {
            "type": "array",
            "maxItems": MAX_PER_CHUNK,
            "items": {
                "type": "object",
                "properties": {
                    "type": {"type": "string", "enum": list(KINDS)},
                    # Bounded, so a small model's grammar cannot ramble to max_tokens.
                    "title": {"type": "string", "maxLength": 80},
                    "text": {"type": "string", "maxLength": MAX_CHARS},
                    "supersedes": {"type": "string", "maxLength": 120},
                },
                "required": ["type", "title", "text"],
            },
        }
    },
    "required": ["memories"],
}


@dataclass(frozen=True)
class Candidate:
    """A memory found in the transcript, before it is remembered."""

    type: str
    text: str
    title: str | None = None
    supersedes: str | None = None  # a note name, as the model wrote it
    said_at: str | None = None  # the timestamp of the turn it was said in (ISO text)


@dataclass(frozen=True)
class Extracted:
    """A candidate and what `remember` did with it (``path`` None in a dry run)."""

    candidate: Candidate
    path: str | None = None
    created: bool = False
    duplicate_of: str | None = None
    refines: tuple[str, ...] = ()
    supersedes: str | None = None
    related: tuple[str, ...] = ()  # surfaced notes of the session that the text names
    verdicts: tuple[Verdict, ...] = ()  # contradictions, and claims left for review

    def as_json(self) -> dict[str, object]:
        """One memory of ``extract --json``."""
        c = self.candidate
        return {
            "type": c.type,
            "title": c.title,
            "text": c.text,
            "said_at": c.said_at,
            "path": self.path,
            "created": self.created,
            "duplicate_of": self.duplicate_of,
            "refines": list(self.refines),
            "supersedes": self.supersedes,
            "related": list(self.related),
            "contradicts": [v.path for v in self.verdicts if v.relation == "contradicts"],
            "review": [v.as_json() for v in self.verdicts if v.review],
        }


@dataclass(frozen=True)
class ExtractReport:
    """What one `extract` run read and wrote."""

    transcript: str
    start: int
    end: int
    entries: int
    chunks: int
    # "llm", "rules", "rules+semantic", or "llm+rules" when the endpoint failed part-way
    mode: str
    memories: tuple[Extracted, ...]
    dry_run: bool = False
    warnings: tuple[str, ...] = ()

    def as_json(self) -> dict[str, object]:
        """The ``--json`` object."""
        return {
            "transcript": self.transcript,
            "start": self.start,
            "end": self.end,
            "entries": self.entries,
            "chunks": self.chunks,
            "mode": self.mode,
            "dry_run": self.dry_run,
            "created": sum(1 for m in self.memories if m.created),
            "memories": [m.as_json() for m in self.memories],
            "warnings": list(self.warnings),
        }


# --------------------------------------------------------------------------- chunks


def _label(entry: Entry) -> str:
    return {"user": "User", "assistant": "Assistant"}.get(entry.role, "Speaker")


@dataclass(frozen=True)
class Chunk:
    """A run of turns: as one text for a model (``Role: text`` blocks) and turn by turn
    for the rules."""

    text: str
    turns: tuple[Said, ...]


def chunks(entries: Iterable[Entry], size: int = CHUNK_CHARS) -> Iterator[str]:
    """The prose of ``entries`` (redacted when read) as ``Role: text`` blocks, about
    ``size`` chars a chunk (a longer turn is cut at paragraph or line ends)."""
    return (chunk.text for chunk in turn_chunks(entries, size))


def turn_chunks(entries: Iterable[Entry], size: int = CHUNK_CHARS) -> Iterator[Chunk]:
    """:func:`chunks`, each with the turns (speaker, text, time) it holds."""
    parts: list[str] = []
    turns: list[Said] = []
    used = 0
    for entry in entries:
        if not entry.prose:
            continue
        for piece in _pieces(f"{_label(entry)}: {entry.text.strip()}", size):
            if parts and used + len(piece) > size:
                yield Chunk("\n\n".join(parts), tuple(turns))
                parts, turns, used = [], [], 0
            parts.append(piece)
            text = _LABEL_RE.sub("", piece) if piece.startswith(f"{_label(entry)}: ") else piece
            turns.append(Said(entry.role, text, entry.timestamp))
            used += len(piece) + 2
    if parts:
        yield Chunk("\n\n".join(parts), tuple(turns))


def _pieces(text: str, size: int) -> Iterator[str]:
    """``text`` cut into pieces of at most ``size`` characters, at line ends when possible."""
    while len(text) > size:
        cut = text.rfind("\n", 0, size)
        cut = cut if cut > size // 2 else size
        yield text[:cut].rstrip()
        text = text[cut:].lstrip()
    if text.strip():
        yield text


# --------------------------------------------------------------------------- rules

_LABEL_RE = re.compile(r"^(?:User|Assistant|Speaker): ")


def rule_candidates(turns: Sequence[Said], semantic: Embedder | None = None) -> list[Candidate]:
    """Memories the offline rules (:mod:`vaultmem.agent.capture_rules`) find in ``turns``;
    with ``semantic`` (the in-process MiniLM), those the learned layer keeps of them and
    adds to them (:mod:`vaultmem.agent.capture_learned`)."""
    if semantic is None:
        found = spot(turns)
    else:
        from vaultmem.agent.capture_learned import learned_spot

        found = learned_spot(turns, semantic)
    return [Candidate(f.kind, f.text, said_at=turns[f.turn].timestamp) for f in found]


# --------------------------------------------------------------------------- LLM


def _related_notes(config: Config, chunk: str) -> list[dict[str, str]]:
    """Notes the chunk may be about (BM25), so the model can name one it replaces."""
    from vaultmem.retrieval.search import lexical_hits

    try:
        hits = lexical_hits(config, chunk[:2000], limit=NOTES_IN_PROMPT)
    except IndexStateError:
        return []
    return [{"title": h.title, "path": h.path, "type": h.type} for h in hits]


def llm_candidates(config: Config, llm: LLMClient, chunk: Chunk) -> list[Candidate]:
    """Memories the model finds in ``chunk``; raises EndpointError / JSONReplyError."""
    from vaultmem.inference.llm import parse_json_reply
    from vaultmem.prompts import render

    prompt = render(
        config,
        TEMPLATE,
        transcript=chunk.text,
        notes=_related_notes(config, chunk.text),
        kinds=KINDS,
        max_items=MAX_PER_CHUNK,
    )
    reply = llm.chat([{"role": "user", "content": prompt}], json_mode=True, schema=EXTRACT_SCHEMA)
    data = parse_json_reply(reply, expect=dict)
    items = data.get("memories")
    found = [c for c in map(_candidate, items if isinstance(items, list) else []) if c]
    return [replace(c, said_at=_said_at(chunk.turns, c.text)) for c in found]


GROUNDED = 0.5  # share of a model memory's content words the chunk must hold


def grounded(text: str, chunk: str) -> bool:
    """Whether a model's memory was said in the chunk: at least half of its content
    words occur there. A small model writes boilerplate ("This is a decision that was
    made…") or copies its instructions; SmolLM2-135M's false memories on the capture
    benchmark fail this, its true ones pass (BENCHMARKS.md). A memory the model
    translated out of the chunk's language can fail it too."""
    from vaultmem.subjects import content_words

    words = content_words(text)
    return bool(words) and len(words & content_words(chunk)) >= GROUNDED * len(words)


def _said_at(turns: Sequence[Said], text: str) -> str | None:
    """When a model's memory was said: the time of the turn sharing most words with it."""
    from vaultmem.subjects import content_words

    words = content_words(text)
    timed = [t for t in turns if t.timestamp]
    if not timed:
        return None
    best = max(timed, key=lambda t: len(words & content_words(t.text)))
    return best.timestamp


def _candidate(item: Any) -> Candidate | None:
    """A model's memory item, checked; None when it is unusable."""
    if not isinstance(item, dict):
        return None
    kind = str(item.get("type") or "").strip().lower()
    text = item.get("text")
    if kind not in KINDS or not isinstance(text, str) or len(text.strip()) < MIN_CHARS // 2:
        return None
    title = item.get("title")
    title = " ".join(title.split())[:120] if isinstance(title, str) and title.strip() else None
    old = item.get("supersedes")
    old = old.strip().strip("[]").split("|")[0].strip() if isinstance(old, str) else ""
    return Candidate(
        kind, text.strip(), title, old if old.lower() not in ("", "none", "null") else None
    )


# --------------------------------------------------------------------------- the run


def capture_lock(config: Config, what: str) -> Any:
    """The lock `extract` and `handoff` runs hold, so two hooks never interleave on a
    transcript (the vault's writer lock is taken per note, inside `remember`)."""
    from vaultmem.vault import vault_lock

    # A detached hook run may wait for one that is talking to a slow model.
    return vault_lock(
        config.cache_dir, timeout=max(config.lock_timeout, 300.0), what=what, name="capture.lock"
    )


def _supersedes(config: Config, name: str | None) -> str | None:
    """The vault path of the note ``name`` means, through the one path gate; None when
    it names no single writable note (a model's guess is never trusted further)."""
    from vaultmem.lookup import resolve

    if not name:
        return None
    try:
        return resolve(config, name, write=True)
    except VaultmemError:
        return None


@dataclass
class _Capture:
    """What every memory of one run shares: where and when it is written, and where the
    session came from (known once the first entry is read)."""

    config: Config
    now: datetime
    embedder: Embedder | None
    reader: _Reader
    project: str | None = None
    _provenance: Provenance | None = None
    _surfaced: tuple[str, ...] | None = None

    @property
    def provenance(self) -> Provenance:
        from vaultmem.agent.capture_links import Provenance

        if self._provenance is None:
            r = self.reader
            self._provenance = Provenance.of(r.path, r.session, r.cwd, self.project)
        return self._provenance

    @property
    def surfaced(self) -> tuple[str, ...]:
        """The notes `surface` showed in this session (the surfacing log)."""
        from vaultmem.surface_log import surfaced_in_session

        if self._surfaced is None:
            found = surfaced_in_session(self.config, self.provenance.session)
            self._surfaced = tuple(sorted(found))
        return self._surfaced


def _remember(run: _Capture, found: Candidate) -> Extracted | None:
    """Write one memory with its provenance, link it to the session's notes it names,
    and check it against the decisions already there."""
    from vaultmem.agent.capture_links import named_notes
    from vaultmem.memory.contradictions import apply_verdicts, judge
    from vaultmem.memory.remember import remember

    config = run.config
    # The candidate comes from redacted text only (the transcript as read, or a model
    # that saw nothing else of it), so its text, title and slug need no second pass.
    claim = _supersedes(config, found.supersedes)
    try:
        done = remember(
            config,
            found.text,
            now=run.now,
            title=found.title,
            note_type=found.type,
            tags=[TAG],
            embedder=run.embedder,
            source=run.provenance.source(found.said_at),
        )
    except ValueError:
        return None  # nothing left to remember (a text that is all [REDACTED])
    related: list[str] = []
    verdicts: list[Verdict] = []
    if done.created:
        named = named_notes(config, found.text, run.surfaced, run.provenance.project)
        related = [path for path in named if path != done.path]
        verdicts = judge(
            config, done.path, found.text, found.type, embedder=run.embedder, claim=claim
        )
        apply_verdicts(config, done.path, verdicts, related)
    superseded = next((v.path for v in verdicts if v.relation == "supersedes"), None)
    return Extracted(
        found,
        done.path,
        done.created,
        done.duplicate_of,
        tuple(n.path for n in done.refines),
        superseded,
        tuple(related),
        tuple(verdicts),
    )


class _Reader:
    """The entries after ``start``, remembering how far it got."""

    def __init__(self, path: Path, start: int) -> None:
        self.path, self.end, self.count = path, start, 0
        self.last_uuid: str | None = None
        self.session: str | None = None  # the first session id and folder recorded
        self.cwd: str | None = None
        self.oversize = 0  # entries over MAX_ENTRY_BYTES, skipped or cut
        self._start = start

    def __iter__(self) -> Iterator[Entry]:
        for entry in read_entries(self.path, self._start):
            self.count += 1
            self.end = entry.end
            self.last_uuid = entry.uuid or self.last_uuid
            self.session = self.session or entry.session
            self.cwd = self.cwd or entry.cwd
            self.oversize += entry.skipped > 0
            yield entry


def extract_transcript(
    config: Config,
    path: Path,
    *,
    llm: LLMClient | None,
    now: datetime,
    dry_run: bool = False,
    embedder: Embedder | None = None,
    project: str | None = None,
    semantic: Embedder | None = None,
) -> ExtractReport:
    """Extract memories from the part of transcript ``path`` not processed yet.

    ``llm`` None uses the phrase rules; an endpoint failure switches to them for the
    rest of the run (listed in ``warnings``). ``dry_run`` writes nothing (no notes, no
    state). Each memory records its session, ``project`` (default: the session's working
    folder's name) and when it was said (:mod:`vaultmem.agent.capture_links`).
    ``semantic`` (the in-process MiniLM, :func:`vaultmem.agent.capture_vectors.
    capture_embedder`) adds the learned layer to the rules
    (:mod:`vaultmem.agent.capture_learned`); a model that fails to load
    leaves the rules alone (listed in ``warnings``). Raises
    TranscriptError for a transcript that is not a regular file, cannot
    be read, or has more than MAX_TRANSCRIPT_BYTES to read.

    Example:
        >>> extract_transcript(config, Path("session.jsonl"), llm=None, now=now)  # doctest: +SKIP
    """
    from vaultmem.inference.llm import JSONReplyError

    check_transcript(path)  # a FIFO or a device is refused before anything waits on it
    with capture_lock(config, "extract"):
        state = load_state(config.cache_dir, path)
        reader = _Reader(path, state.offset)
        run = _Capture(config, now, embedder, reader, project)
        done: list[Extracted] = []
        warnings: list[str] = []
        modes: set[str] = set()
        seen: set[str] = set()
        count = 0
        for chunk in turn_chunks(reader):
            count += 1
            found: Sequence[Candidate]
            if llm is not None:
                try:
                    found = llm_candidates(config, llm, chunk)
                    modes.add("llm")
                    kept = [c for c in found if grounded(c.text, chunk.text)]
                    if len(kept) < len(found):
                        warnings.append(
                            f"chunk {count}: {len(found) - len(kept)} of the model's memories "
                            "are not in the transcript (under half their words); dropped"
                        )
                    found = kept
                except (EndpointError, JSONReplyError) as exc:
                    warnings.append(f"chunk {count}: {exc}; phrase rules used instead")
                    if isinstance(exc, EndpointError):
                        llm = None  # a dead endpoint is not asked again for every chunk
                    found = rule_candidates(chunk.turns)
                    modes.add("rules")
            else:
                found, semantic = _offline(chunk, semantic, modes, warnings)
            done.extend(_keep(run, found, seen, dry_run))
        if reader.oversize:
            what = "1 entry" if reader.oversize == 1 else f"{reader.oversize} entries"
            warnings.append(
                f"{what} over {MAX_ENTRY_BYTES // 2**20} MiB "
                "(vaultmem.agent.transcript.MAX_ENTRY_BYTES) skipped or cut"
            )
        report = ExtractReport(
            transcript=str(path),
            start=state.offset,
            end=reader.end,
            entries=reader.count,
            chunks=count,
            mode="+".join(sorted(modes, reverse=False)) or ("llm" if llm else "rules"),
            memories=tuple(done),
            dry_run=dry_run,
            warnings=tuple(warnings),
        )
        if not dry_run:
            _save(config, path, state, reader, done)
    return report


def _offline(
    chunk: Chunk, semantic: Embedder | None, modes: set[str], warnings: list[str]
) -> tuple[list[Candidate], Embedder | None]:
    """The rules' memories of ``chunk``, with the semantic layer's while its model works
    (a model that cannot load or run is not asked again)."""
    modes.add("rules")
    if semantic is not None:
        try:
            found = rule_candidates(chunk.turns, semantic)
            modes.add("semantic")
            return found, semantic
        except (EndpointError, ImportError, OSError) as exc:
            warnings.append(f"semantic capture off: {exc}; phrase rules alone")
    return rule_candidates(chunk.turns), None


def _keep(
    run: _Capture, found: Sequence[Candidate], seen: set[str], dry_run: bool
) -> Iterator[Extracted]:
    """Remember each new candidate (once per run)."""
    from vaultmem.memory.remember import content_key

    for candidate in found:
        key = content_key(candidate.text)
        if not key or key in seen:
            continue
        seen.add(key)
        if dry_run:
            yield Extracted(candidate)
            continue
        result = _remember(run, candidate)
        if result is not None:
            yield result


def _save(
    config: Config, path: Path, state: TranscriptState, reader: _Reader, done: list[Extracted]
) -> None:
    notes = [*state.notes, *(m.path for m in done if m.path and m.path not in state.notes)]
    save_state(
        config.cache_dir,
        path,
        replace(
            state,
            offset=reader.end,
            prefix_sha256=prefix_hash(path, reader.end),
            last_uuid=reader.last_uuid or state.last_uuid,
            notes=tuple(dict.fromkeys(notes))[-MAX_STATE_NOTES:],
        ),
    )
