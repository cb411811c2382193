"""`surface`: the context block for one prompt, or nothing when nothing clearly fits.

::

    gates (slash command, acknowledgement, shell line, session chatter, too short, same
      prompt again in the session; words asking for memory force a lookup past the soft
      gates; :mod:`vaultmem.agent.prompt_gate`)
      → the `query` pipeline without an LLM (BM25, plus vectors when they are cheap)
      → forgotten, archived, superseded and snoozed notes out (pinned always eligible)
      → one speak decision over the candidate list (:class:`SpeakModel`)
      → the first notes in the fused order, a relative cut-off on the fused score
      → notes already surfaced in this session left out of the block
      → a ``<vault-context>`` block filled best first within a token budget (chars / 4)

The decision sees the list as `query` ranked it: the first note's BM25 scores over the
whole note and over its lead, the IDF-weighted share of the prompt's terms the first and
the best shown note contain (*coverage*; a word the vault has never seen counts against
it), and with vectors the best cosine and the first note's lead in it. Its weights were
fit on half of ``benchmarks/data/surface_prompts.jsonl`` (agent prompts over
example-vault) and scored on the other half (BENCHMARKS.md). What the session already
saw never changes whether to speak, only what the block leaves out.

State lives in the cache: one small JSON record per session (prompts seen, notes
surfaced; pruned by age) and an append-only surfacing log (JSON lines, rotated at a
bounded size) for ``status`` and the feedback loop. Both are derived: losing them costs
at most a repeated note.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from vaultmem.agent.prompt_gate import Gate, gate
from vaultmem.agent.speak import SHOW_LIMIT, Candidate, coverages, select, shared_pairs
from vaultmem.config import Config
from vaultmem.errors import RequestError
from vaultmem.model import check_limit, check_text
from vaultmem.surface_log import SURFACE_DIR, append_run
from vaultmem.vault import make_cache
from vaultmem.vocabulary import SURFACE_PROFILES, SurfaceProfile

if TYPE_CHECKING:
    from vaultmem.index.lexical import LexicalIndex
    from vaultmem.retrieval.query_types import Backends, Trace

__all__ = [
    "TOO_SMALL",
    "Candidate",
    "Gate",
    "SessionNotes",
    "SurfaceRequest",
    "SurfaceResult",
    "SurfacedNote",
    "cheap_backends",
    "build_block",
    "candidates",
    "gate",
    "record_reinforced",
    "select",
    "session_brief",
    "smallest_block",
    "session_record",
    "surface",
]

# A note whose coverage is this close to the best one gets a long snippet.
LONG_SNIPPET_RATIO = 0.95
LONG_SNIPPET_CHARS = 400
LONG_SNIPPET_NOTES = 2
LONG_SNIPPET_LINES = 12
MIN_BUDGET = 50
MAX_BUDGET = 100_000
CANDIDATE_LIMIT = 6
# How deep each retrieval list goes: the fused scores are z-scores over the lists, which
# say how far the best note stands out only when a list holds more than a handful.
RETRIEVAL_DEPTH = 30
REPEAT_WINDOW = timedelta(minutes=10)
# The reason that starts a result no note fitted the budget of (the caller may raise it).
TOO_SMALL = "budget too small"
SESSION_TTL = timedelta(days=7)
SESSION_PROMPTS = 200
# --- values ------------------------------------------------------------------------------


@dataclass(frozen=True)
class SurfaceRequest:
    """One prompt to surface notes for. ``session``: de-duplicate within this session.
    ``profile``: a name in :data:`~vaultmem.vocabulary.SURFACE_PROFILES` (None: the
    config's ``[hooks] profile``); ``budget``: tokens, None for the profile's."""

    prompt: str
    session: str | None = None
    budget: int | None = None
    vectors: bool | None = None  # None: only when cheap (an endpoint embedder with vectors)
    profile: str | None = None

    def __post_init__(self) -> None:
        check_text(self.prompt, "prompt")
        check_text(self.session, "session")
        check_text(self.profile, "profile")
        if self.profile is not None and self.profile not in SURFACE_PROFILES:
            names = ", ".join(SURFACE_PROFILES)
            raise RequestError(f"unknown profile {self.profile!r}; one of: {names}")
        # The same bounds for the CLI, MCP and REST: under 50 tokens no note fits.
        if (
            self.budget is not None
            and check_limit(self.budget, "budget", most=MAX_BUDGET) < MIN_BUDGET
        ):
            raise RequestError(
                f"budget must be from {MIN_BUDGET} to {MAX_BUDGET}, not {self.budget}"
            )

    def chosen(self, config: Config) -> tuple[SurfaceProfile, int]:
        """The profile this request surfaces with, and its token budget."""
        profile = SURFACE_PROFILES[self.profile or config.hooks_profile]
        return profile, self.budget or profile.tokens


@dataclass(frozen=True)
class SurfacedNote:
    """A note in the block: vault path, title, relevance score and the line shown."""

    path: str
    title: str
    score: float
    line: int

    def as_json(self) -> dict[str, object]:
        """``{"path", "title", "score", "line"}``."""
        return {
            "path": self.path,
            "title": self.title,
            "score": round(self.score, 4),
            "line": self.line,
        }


@dataclass(frozen=True)
class SurfaceResult:
    """The block (``""`` when abstaining), its notes, and why it abstained (``""`` if not)."""

    context: str
    notes: tuple[SurfacedNote, ...]
    reason: str

    @property
    def tokens(self) -> int:
        """The block's size in tokens, estimated as chars / 4."""
        return estimate_tokens(self.context)

    def as_json(self) -> dict[str, object]:
        """``{"context", "notes": [...], "reason"}``: what ``surface --json`` prints
        (``reason``: why the block is empty, ``""`` when it is not)."""
        return {
            "context": self.context,
            "notes": [n.as_json() for n in self.notes],
            "reason": self.reason,
        }


@dataclass
class _Session:
    prompts: dict[str, str] = field(default_factory=dict)  # prompt hash -> ISO time
    notes: list[str] = field(default_factory=list)
    reinforced: list[str] = field(default_factory=list)  # by the feedback loop


@dataclass(frozen=True)
class SessionNotes:
    """What a session's record says: the notes surfaced in it (in the order shown), and
    those the feedback loop has reinforced for it."""

    notes: tuple[str, ...] = ()
    reinforced: tuple[str, ...] = ()


def estimate_tokens(text: str) -> int:
    """Tokens as chars / 4, rounded up: close enough for budgeting English and code."""
    return math.ceil(len(text) / 4)


# --- gates -------------------------------------------------------------------------------


# --- retrieval ---------------------------------------------------------------------------


def cheap_backends(config: Config, vectors: bool | None) -> Backends:
    """BM25, plus vectors when asked for (``vectors`` True) or when they are cheap: an
    endpoint embedder (one request), or the in-process MiniLM when it can run without
    Chroma and without deriving its int8 model (the flat snapshot of the vectors is
    current and the model is cached: the embed sweep leaves both). A prompt then pays for
    loading the model and embedding it (BENCHMARKS.md: the hook's latency in process).
    """
    from vaultmem.retrieval.query_types import Backends

    if vectors is False or config.embedder == "none":
        return Backends()
    from vaultmem.errors import ConfigError, EndpointError
    from vaultmem.index.records import read_record, record_path
    from vaultmem.inference.embedders import embedder_for

    try:
        embedder = embedder_for(config)
    except (ConfigError, EndpointError):
        return Backends()
    if embedder is None or not read_record(record_path(config.cache_dir, embedder.model_id)):
        return Backends()
    if vectors is None and config.embedder != "endpoint" and not _local_is_cheap(config, embedder):
        return Backends()
    return Backends(embedder=embedder)


def _local_is_cheap(config: Config, embedder: Any) -> bool:
    """Whether the in-process model reads its vectors from a current flat snapshot (no
    Chroma) and loads without deriving anything."""
    if config.chroma.host or not getattr(embedder, "ready", lambda: False)():
        return False
    from vaultmem.index.vector_snapshot import filed
    from vaultmem.index.vectors import collection_name

    return filed(config.cache_dir, collection_name(embedder.model_id, embedder.dimension))


def _excluded(entry: Any, now: datetime) -> bool:
    from vaultmem.memory_state import note_memory

    memory = note_memory("", entry)
    return not memory.pinned and (memory.retired or memory.snoozed(now))


def candidates(
    config: Config,
    text: str,
    *,
    now: datetime,
    index: LexicalIndex | None = None,
    backends: Backends | None = None,
) -> list[Candidate]:
    """The eligible notes for ``text``, best first, each with its coverage.

    One retrieval pass: the floor and cut-off (:func:`select`) apply afterwards, so a
    benchmark can sweep them without searching again.
    """
    from vaultmem.index.lexical import LexicalIndex
    from vaultmem.retrieval.fusion import SURFACE_WEIGHTS
    from vaultmem.retrieval.memory_rank import RankingOptions
    from vaultmem.retrieval.query import query
    from vaultmem.retrieval.query_types import QueryOptions

    index = index or LexicalIndex.open(config.cache_dir)
    options = QueryOptions(
        limit=CANDIDATE_LIMIT,
        candidates=RETRIEVAL_DEPTH,
        rerank=False,
        ranking=RankingOptions(now=now, review_share=0.0),
        weights=SURFACE_WEIGHTS,
    )
    result = query(config, text, backends=backends, options=options, index=index)
    entries = index.entries(h.path for h in result.hits)
    hits = [h for h in result.hits if h.path in entries and not _excluded(entries[h.path], now)]
    cover = coverages(index, text, [h.path for h in hits])
    pinned = {p for p, e in entries.items() if e.memory.get("pinned") is True}
    traces = {h.path: t for h, t in zip(result.hits, result.traces, strict=True)}
    texts = {h.path: _note_text(config, h.path) for h in hits[:SHOW_LIMIT]}
    return [
        Candidate(
            h,
            cover[h.path].share,
            pinned=h.path in pinned,
            rarest=cover[h.path].rarest,
            phrases=shared_pairs(text, texts[h.path]) if h.path in texts else 0,
            cosine=_listed(traces[h.path], "vec:original"),
            fused=_fused(traces[h.path]),
            bm25=_listed(traces[h.path], "bm25:original"),
            lead=_listed(traces[h.path], "bm25:lead"),
            text=texts.get(h.path, ""),
        )
        for h in hits
    ]


def _note_text(config: Config, path: str) -> str:
    """The note's text through the note-path gate ("" when it is not one or unreadable)."""
    from vaultmem.errors import NoteError
    from vaultmem.vault import note_path

    try:
        rel = note_path(config, path, write=False)
        return (config.vault / rel).read_text("utf-8-sig", errors="replace")
    except (NoteError, OSError):
        return ""


def _fused(trace: Trace) -> float | None:
    return trace.fused.score if trace.fused is not None else None


def _listed(trace: Trace, name: str) -> float | None:
    found = dict(trace.lists).get(name)
    return found.score if found is not None else None


# --- the block ---------------------------------------------------------------------------

CONTEXT_TEMPLATE = "context.j2"
# The session-start brief closes its block the same way.
_FOOTER = "</vault-context>"


def _escape(text: str) -> str:
    # A note must not be able to close the block or open a tag of its own.
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _long_snippet(config: Config, found: Candidate) -> str:
    """The hit's line and what follows it, up to LONG_SNIPPET_CHARS, as one line."""
    from vaultmem.retrieval.snippets import is_tag_line

    hit = found.hit
    lines = (found.text or _note_text(config, hit.path)).splitlines()
    start = max(hit.line, 1) - 1
    end = max(hit.line_end or 0, start + LONG_SNIPPET_LINES)
    words: list[str] = []
    size = 0
    for raw in lines[start:end]:
        if is_tag_line(raw):
            continue  # the note's tags say nothing the title does not
        for word in raw.split():
            if size + len(word) + 1 > LONG_SNIPPET_CHARS:
                return " ".join(words) + " …"
            words.append(word)
            size += len(word) + 1
    return " ".join(words) or hit.snippet


def _entries(config: Config, chosen: Sequence[Candidate]) -> list[tuple[dict[str, Any], ...]]:
    """(long, short) renderings of each chosen note, best first, as template values."""
    best = max((c.coverage for c in chosen), default=0.0)
    out: list[tuple[dict[str, Any], ...]] = []
    for rank, c in enumerate(chosen):
        hit = c.hit
        short = {"title": _escape(hit.title), "path": _escape(hit.path), "line": hit.line}
        # The clearly best get an excerpt; the rest their title and path, which an agent
        # can open when it wants more.
        snippet = ""
        clearly = rank == 0 or c.coverage >= best * LONG_SNIPPET_RATIO
        if rank < LONG_SNIPPET_NOTES and clearly:
            snippet = _long_snippet(config, c)
        long = {**short, "snippet": _escape(snippet)}
        # The last resort, for the smallest budgets: title and path, no line.
        compact = {**short, "line": 0, "snippet": ""}
        out.append(
            (long, {**short, "snippet": ""}, compact)
            if snippet
            else ({**short, "snippet": ""}, compact)
        )
    return out


def build_block(
    config: Config, chosen: Sequence[Candidate], budget: int
) -> tuple[str, list[Candidate]]:
    """The ``<vault-context>`` block within ``budget`` tokens and the notes it holds,
    rendered from the ``context.j2`` template (overridable per vault).

    Filled best first: the long form of a note when it fits, else its title, path and
    line, else its title and path, else nothing more.
    """
    from vaultmem.prompts import compiled

    render = compiled(config, CONTEXT_TEMPLATE)
    notes: list[dict[str, Any]] = []
    kept: list[Candidate] = []
    block = ""
    for c, forms in zip(chosen, _entries(config, chosen), strict=True):
        for form in forms:
            text = render(notes=[*notes, form])
            if estimate_tokens(text) <= budget:
                notes.append(form)
                kept.append(c)
                block = text
                break
        else:
            break
    if not kept:
        return "", []
    return block.rstrip("\n"), kept


def smallest_block(config: Config, first: Candidate) -> int:
    """The tokens of the smallest block that holds ``first``: its title and path alone."""
    from vaultmem.prompts import compiled

    form = _entries(config, [first])[0][-1]
    return estimate_tokens(compiled(config, CONTEXT_TEMPLATE)(notes=[form]).rstrip("\n"))


# --- session record and log --------------------------------------------------------------


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _session_path(config: Config, session: str) -> Path:
    return config.cache_dir / SURFACE_DIR / "sessions" / f"{_digest(session)}.json"


def _load_session(path: Path) -> _Session:
    try:
        data = json.loads(path.read_text("utf-8"))
        prompts = {str(k): str(v) for k, v in dict(data.get("prompts", {})).items()}
        notes = [str(n) for n in data.get("notes", [])]
        return _Session(prompts, notes, [str(n) for n in data.get("reinforced", [])])
    except (OSError, ValueError, TypeError, AttributeError):
        return _Session()  # no record, or a damaged one: start the session afresh


def session_record(config: Config, session: str) -> SessionNotes:
    """The notes surfaced in ``session`` and those reinforced for it (none when the
    session has no record: never surfaced, pruned after a week, or the cache cleared)."""
    record = _load_session(_session_path(config, session))
    return SessionNotes(tuple(dict.fromkeys(record.notes)), tuple(record.reinforced))


def record_reinforced(config: Config, session: str, paths: Sequence[str]) -> None:
    """Note in ``session``'s record that ``paths`` were reinforced for it."""
    path = _session_path(config, session)
    record = _load_session(path)
    record.reinforced.extend(p for p in paths if p not in record.reinforced)
    make_cache(config.cache_dir)
    _save_session(path, record)


def _save_session(path: Path, record: _Session) -> None:
    from vaultmem.atomic import atomic_write

    prompts = dict(sorted(record.prompts.items(), key=lambda kv: kv[1])[-SESSION_PROMPTS:])
    data = {"prompts": prompts, "notes": record.notes, "reinforced": record.reinforced}
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, json.dumps(data).encode())
    _prune_sessions(path.parent)


def _prune_sessions(folder: Path) -> None:
    """Remove session records untouched for SESSION_TTL (sessions end without telling)."""
    cutoff = time.time() - SESSION_TTL.total_seconds()
    for old in folder.glob("*.json"):
        try:
            if old.stat().st_mtime < cutoff:
                old.unlink()
        except OSError:
            continue


def _repeated(record: _Session, key: str, now: datetime) -> bool:
    from vaultmem.memory_state import parse_time

    seen = parse_time(record.prompts.get(key))
    return seen is not None and timedelta(0) <= now - seen < REPEAT_WINDOW


def _log(config: Config, request: SurfaceRequest, result: SurfaceResult, now: datetime) -> None:
    line = {
        "time": now.isoformat(),
        "session": request.session,
        "prompt": _digest(request.prompt),
        "notes": [n.path for n in result.notes],
        "tokens": result.tokens,
        "reason": result.reason,
    }
    append_run(config, line)


# --- the entry point ---------------------------------------------------------------------


def surface(
    config: Config,
    request: SurfaceRequest,
    *,
    now: datetime,
    index: LexicalIndex | None = None,
    backends: Backends | None = None,
) -> SurfaceResult:
    """The context block for one prompt (``context`` ``""`` and a ``reason`` to abstain).

    Records the prompt and the notes shown in the session's record, and every run in the
    surfacing log. A missing keyword index is an error, as for `search`.

    Example:
        >>> request = SurfaceRequest("why did we pick redis?", session="s1")
        >>> surface(config, request, now=now).notes  # doctest: +SKIP
    """
    chosen = backends if backends is not None else cheap_backends(config, request.vectors)
    result = _surface(config, request, now, index, chosen)
    _log(config, request, result, now)
    return result


def _surface(
    config: Config,
    request: SurfaceRequest,
    now: datetime,
    index: LexicalIndex | None,
    backends: Backends,
) -> SurfaceResult:
    decision = gate(request.prompt)
    if decision.reason:
        return SurfaceResult("", (), decision.reason)
    record = _Session()
    spath = _session_path(config, request.session) if request.session else None
    key = _digest(" ".join(request.prompt.split()).lower())
    if spath is not None:
        record = _load_session(spath)
        if _repeated(record, key, now):
            return SurfaceResult("", (), "same prompt within 10 minutes")
        record.prompts[key] = now.isoformat()
    found = candidates(config, decision.text, now=now, index=index, backends=backends)
    profile, budget = request.chosen(config)
    spoken = select(found, forced=decision.forced, profile=profile)
    seen = set(record.notes)
    chosen = [c for c in spoken if c.hit.path not in seen]
    context, kept = build_block(config, chosen, budget)
    record.notes.extend(c.hit.path for c in kept)
    if spath is not None:
        make_cache(config.cache_dir)
        _save_session(spath, record)
    if not kept:
        why = "nothing clearly relevant"
        if spoken and not chosen:
            why = "already surfaced in this session"
        elif chosen:
            need = smallest_block(config, chosen[0])
            why = f"{TOO_SMALL}: {budget} tokens, the first note needs {need}"
        return SurfaceResult("", (), why)
    notes = tuple(SurfacedNote(c.hit.path, c.hit.title, c.coverage, c.hit.line) for c in kept)
    return SurfaceResult(context, notes, "")


# --- the session-start brief -------------------------------------------------------------


def _mentions(path: str, entry: Any, project: str) -> bool:
    name = project.lower()
    folders = [p.lower() for p in PurePosixPath(path).parts[:-1]]
    words = [t.lower() for t in entry.tags] + folders
    return name in words or name in entry.title.lower() or _project_key(entry) == name


def _project_key(entry: Any) -> str:
    value = entry.memory.get("project")
    return value.lower() if isinstance(value, str) else ""


def _created(entry: Any) -> datetime | None:
    from vaultmem.memory_state import parse_time

    return parse_time(entry.memory.get("created"))


def _newest(items: Iterable[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """Newest ``created`` first (undated last), then by path: deterministic."""
    dated = [(p, e, _created(e)) for p, e in items]
    dated.sort(key=lambda t: t[0])
    dated.sort(key=lambda t: t[2].timestamp() if t[2] else float("-inf"), reverse=True)
    return [(p, e) for p, e, _ in dated]


def session_brief(config: Config, *, project: str | None, budget: int = 2000, now: datetime) -> str:
    """A short brief for a new session: pinned notes, the latest handoff, recent decisions.

    The handoff is the newest note of type ``handoff`` whose folder, tags, title or
    ``project`` key names ``project`` (else the newest handoff of all). Decisions are
    the newest active ones. Within ``budget`` tokens, ``""`` when there is nothing.
    """
    from vaultmem.index import manifest as mf

    entries = mf.load(config.cache_dir).entries
    live = {p: e for p, e in entries.items() if not _excluded(e, now)}
    pinned = sorted(p for p, e in live.items() if e.memory.get("pinned") is True)
    handoffs = _newest((p, e) for p, e in live.items() if e.type == "handoff")
    if project:
        handoffs = [h for h in handoffs if _mentions(h[0], h[1], project)] or handoffs
    decisions = _newest((p, e) for p, e in live.items() if e.type == "decision")
    sections: list[tuple[str, list[str]]] = [
        ("Pinned notes", [f"- {_escape(live[p].title)} ({_escape(p)})" for p in pinned]),
        ("Latest handoff", _handoff_lines(config, handoffs[:1])),
        ("Recent decisions", [f"- {_escape(e.title)} ({_escape(p)})" for p, e in decisions[:5]]),
    ]
    head = "<vault-context>\nFrom the user's vault at the start of this session:\n"
    body: list[str] = []
    for title, lines in sections:
        for n, line in enumerate(lines):
            piece = (f"\n{title}:\n" if n == 0 else "") + line + "\n"
            if estimate_tokens(head + "".join(body) + piece + _FOOTER) > budget:
                break
            body.append(piece)
    return head + "".join(body) + _FOOTER if body else ""


def _handoff_lines(config: Config, handoffs: Sequence[tuple[str, Any]]) -> list[str]:
    if not handoffs:
        return []
    path, entry = handoffs[0]
    lines = [f"- {_escape(entry.title)} ({_escape(path)})"]
    try:
        text = (config.vault / path).read_text("utf-8-sig", errors="replace")
    except OSError:
        return lines
    body = text.split("\n---", 1)[1] if text.startswith("---") and "\n---" in text else text
    for raw in body.splitlines()[1:]:
        line = raw.rstrip()
        if line.strip() and not line.startswith("# "):
            lines.append(f"  {_escape(line)}")
    return lines
