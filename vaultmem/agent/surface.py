"""`surface`: the context block for one prompt, or nothing when nothing clearly fits.

::

    gates (slash command, acknowledgement, shell line, too short, same prompt again in the
      session; words asking for memory force a lookup past the soft gates)
      → the `query` pipeline without an LLM (BM25, plus vectors when they are cheap)
      → forgotten, archived, superseded and snoozed notes out (pinned always eligible),
        and notes already surfaced in this session
      → relevance floor on the best note's query coverage, relative cut-off for the rest
      → a ``<vault-context>`` block filled best first within a token budget (chars / 4)

Abstaining matters more than recall: a block on every prompt costs tokens and makes
answers worse when it is noise. The relevance signal is *coverage*: the IDF-weighted
share of the prompt's terms the note contains (a word the vault has never seen counts
against it). Unlike a raw BM25 score it does not grow with the length of the prompt or
the size of the vault, so one floor serves every vault. The floor and the cut-off were
chosen on the man-page dev vault with ``benchmarks/bench_surface.py`` (BENCHMARKS.md).

State lives in the cache: one small JSON record per session (prompts seen, notes
surfaced; pruned by age) and an append-only surfacing log (JSON lines, rotated at a
bounded size) for ``status`` and later feedback loops.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from vaultmem.config import Config
from vaultmem.model import check_text
from vaultmem.vault import make_cache

if TYPE_CHECKING:
    from vaultmem.index.lexical import LexicalIndex
    from vaultmem.model import Hit
    from vaultmem.retrieval.query import Backends, Trace

__all__ = [
    "COVERAGE_FLOOR",
    "RELATIVE_CUTOFF",
    "Candidate",
    "Gate",
    "SurfaceRequest",
    "SurfaceResult",
    "SurfacedNote",
    "cheap_backends",
    "build_block",
    "candidates",
    "gate",
    "log_count",
    "select",
    "session_brief",
    "surface",
]

# Chosen on the dev vault (benchmarks/bench_surface.py): the lowest floor that keeps
# abstention on the off-topic prompts at or above 0.90 while the hit rate stays high.
COVERAGE_FLOOR = 0.55
# A note below this share of the best note's coverage is not "clearly relevant" too.
RELATIVE_CUTOFF = 0.5
# A vector hit this similar qualifies without the words (vectors only; MiniLM cosine).
COSINE_FLOOR = 0.45
# Memory words lower the floor by this factor: the user asked for the vault explicitly.
FORCED_FLOOR_FACTOR = 0.6
# A note whose coverage is this close to the best one gets a long snippet.
LONG_SNIPPET_RATIO = 0.95
LONG_SNIPPET_CHARS = 400
LONG_SNIPPET_NOTES = 2
LONG_SNIPPET_LINES = 12
DEFAULT_BUDGET = 800
CANDIDATE_LIMIT = 6
REPEAT_WINDOW = timedelta(minutes=10)
SESSION_TTL = timedelta(days=7)
SESSION_PROMPTS = 200
LOG_MAX_BYTES = 1_000_000
SURFACE_DIR = "surface"
MIN_TERMS = 2

_SLASH = re.compile(r"^/[A-Za-z][\w:-]*(\s|$)")
_MEMORY = re.compile(
    r"\b(remember|remind me|recall|last time|previously|earlier we|"
    r"what did we|did we|we decided|we agreed|what was our|our decision|"
    r"have we|in the vault|my notes?|from memory)\b",
    re.IGNORECASE,
)
# Words that make up an acknowledgement or a nudge to go on; a prompt made only of these
# (and punctuation or emoji) carries no topic.
_ACK_WORDS = frozenset(
    [
        "ok",
        "okay",
        "k",
        "kk",
        "thanks",
        "thank",
        "you",
        "thx",
        "ty",
        "cheers",
        "continue",
        "cont",
        "yes",
        "yeah",
        "yep",
        "yup",
        "y",
        "no",
        "nope",
        "n",
        "sure",
        "go",
        "ahead",
        "do",
        "it",
        "that",
        "this",
        "please",
        "pls",
        "plz",
        "great",
        "good",
        "nice",
        "perfect",
        "sounds",
        "keep",
        "going",
        "hmm",
        "hm",
        "lgtm",
        "cool",
        "awesome",
        "let's",
        "lets",
        "let",
        "us",
        "try",
        "work",
        "done",
        "right",
        "alright",
        "fine",
        "can",
        "could",
        "proceed",
        "agreed",
        "agree",
        "wonderful",
        "very",
        "much",
        "again",
        "now",
        "so",
        "and",
        "then",
        "on",
        "with",
        "looks",
        "correct",
        "exactly",
        "true",
        "got",
        "it",
        "understood",
        "makes",
        "sense",
        "next",
        "carry",
        "well",
        "job",
        "excellent",
        "thats",
        "that's",
        "works",
        "worked",
        "fixed",
        "ship",
        "it",
        "stop",
        "wait",
        "also",
        "more",
        "all",
        "of",
        "course",
        "sgtm",
        "go",
        "on",
        "the",
        "same",
    ]
)
_SHELL_COMMANDS = frozenset(
    [
        "git",
        "npm",
        "npx",
        "pnpm",
        "yarn",
        "pip",
        "pip3",
        "pipx",
        "python",
        "python3",
        "uv",
        "poetry",
        "cd",
        "ls",
        "ll",
        "docker",
        "docker-compose",
        "kubectl",
        "helm",
        "cargo",
        "rustc",
        "pytest",
        "tox",
        "nox",
        "make",
        "cmake",
        "gradle",
        "mvn",
        "go",
        "node",
        "deno",
        "bun",
        "rm",
        "mv",
        "cp",
        "mkdir",
        "rmdir",
        "touch",
        "chmod",
        "chown",
        "cat",
        "less",
        "grep",
        "rg",
        "sed",
        "awk",
        "curl",
        "wget",
        "ssh",
        "scp",
        "rsync",
        "sudo",
        "apt",
        "apt-get",
        "brew",
        "terraform",
        "tar",
        "unzip",
        "export",
        "source",
        "echo",
        "ps",
        "kill",
        "top",
        "htop",
        "vim",
        "nvim",
        "code",
        "tail",
        "head",
        "ruby",
        "bundle",
        "rake",
        "composer",
        "php",
        "dotnet",
        "swift",
        "./configure",
        "systemctl",
        "journalctl",
    ]
)
# Commands that are also English words: a shell line only when short and without prose.
_AMBIGUOUS = frozenset(
    [
        "make",
        "go",
        "cat",
        "code",
        "top",
        "source",
        "export",
        "touch",
        "less",
        "head",
        "tail",
        "kill",
    ]
)
_PROSE = frozenset(
    [
        "the",
        "a",
        "an",
        "my",
        "your",
        "to",
        "for",
        "of",
        "is",
        "are",
        "please",
        "how",
        "why",
        "what",
        "when",
        "should",
    ]
)
_WORD = re.compile(r"[\w']+")


# --- values ------------------------------------------------------------------------------


@dataclass(frozen=True)
class SurfaceRequest:
    """One prompt to surface notes for. ``session``: de-duplicate within this session."""

    prompt: str
    session: str | None = None
    budget: int = DEFAULT_BUDGET
    vectors: bool | None = None  # None: only when cheap (an endpoint embedder with vectors)

    def __post_init__(self) -> None:
        check_text(self.prompt, "prompt")
        check_text(self.session, "session")


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
        """``{"context", "notes": [...]}``: what ``surface --json`` prints."""
        return {"context": self.context, "notes": [n.as_json() for n in self.notes]}


@dataclass(frozen=True)
class Candidate:
    """A retrieved note with its query coverage (the relevance the floor compares)."""

    hit: Hit
    coverage: float
    pinned: bool = False
    cosine: float | None = None  # the vector list's similarity, when vectors ran


@dataclass(frozen=True)
class Gate:
    """What the gates decided: ``reason`` to abstain ("" to search), and the search text."""

    reason: str
    text: str
    forced: bool = False


@dataclass
class _Session:
    prompts: dict[str, str] = field(default_factory=dict)  # prompt hash -> ISO time
    notes: list[str] = field(default_factory=list)


def estimate_tokens(text: str) -> int:
    """Tokens as chars / 4, rounded up: close enough for budgeting English and code."""
    return math.ceil(len(text) / 4)


# --- gates -------------------------------------------------------------------------------


def _is_shell(prompt: str) -> bool:
    tokens = prompt.split()
    if not tokens or "?" in prompt or "\n" in prompt.strip():
        return False
    first = tokens[0].lower()
    if first not in _SHELL_COMMANDS and not first.startswith(("./", "~/")):
        return False
    if first in _AMBIGUOUS:
        return len(tokens) <= 3 and not {t.lower() for t in tokens[1:]} & _PROSE
    return not {t.lower() for t in tokens[1:]} & _PROSE or any(t.startswith("-") for t in tokens)


def _is_ack(prompt: str) -> bool:
    words = [w.lower() for w in _WORD.findall(prompt)]
    return all(w in _ACK_WORDS for w in words)  # emoji or punctuation only: no words


def gate(prompt: str) -> Gate:
    """Decide whether ``prompt`` deserves a lookup, and with which text.

    Example:
        >>> gate("/help").reason, gate("thanks!").reason, gate("git status").reason
        ('slash command', 'acknowledgement', 'shell command')
    """
    text = " ".join(prompt.split())
    if not text:
        return Gate("empty prompt", "")
    if _SLASH.match(text):
        return Gate("slash command", "")
    if _is_shell(text):
        return Gate("shell command", "")
    forced = _MEMORY.search(text) is not None
    if not forced and _is_ack(text):
        return Gate("acknowledgement", "")
    # Imported only here: the cheap gates above answer without loading the index code.
    from vaultmem.index.lexical import query_terms

    # The memory words themselves say nothing about the topic: search what is left.
    topic = " ".join(_MEMORY.sub(" ", text).split()) if forced else text
    if forced:
        return Gate("", topic if query_terms(topic) else text, forced=True)
    if len(query_terms(text)) < MIN_TERMS:
        return Gate("too short", "")
    return Gate("", text)


# --- retrieval ---------------------------------------------------------------------------


def _idf(searcher: Any, term: str, total: int) -> float:
    # A term the vault never saw weighs like the rarest word: the prompt is about
    # something the vault does not hold.
    df = searcher.doc_frequency("text", term)
    return math.log(1 + (total + 1) / (df + 0.5))


def _contains(searcher: Any, docnum: int, term: str) -> bool:
    try:
        postings = searcher.postings("text", term)
    except Exception:  # whoosh raises TermNotFound (a KeyError) for an unknown term
        return False
    postings.skip_to(docnum)
    return bool(postings.is_active() and postings.id() == docnum)


def coverages(index: LexicalIndex, text: str, paths: Sequence[str]) -> dict[str, float]:
    """Each note's IDF-weighted share of the query's distinct terms (0–1)."""
    from vaultmem.index.lexical import query_terms

    terms = sorted(set(query_terms(text[:2000])))
    if not terms or not paths:
        return dict.fromkeys(paths, 0.0)
    searcher = index.searcher()
    total = max(searcher.doc_count(), 1)
    weights = {t: _idf(searcher, t, total) for t in terms}
    whole = sum(weights.values())
    out: dict[str, float] = {}
    for path in paths:
        docnum = searcher.document_number(path=path)
        if docnum is None:
            out[path] = 0.0
            continue
        found = sum(w for t, w in weights.items() if _contains(searcher, docnum, t))
        out[path] = found / whole
    return out


def cheap_backends(config: Config, vectors: bool | None) -> Backends:
    """BM25 only, unless vectors are cheap: an endpoint embedder (one request), or asked for.

    The in-process MiniLM costs ~0.25 s to load per process, so it runs only on request.
    """
    from vaultmem.retrieval.query import Backends

    if vectors is False or config.embedder == "none":
        return Backends()
    if vectors is None and config.embedder != "endpoint":
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
    return Backends(embedder=embedder)


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
    from vaultmem.retrieval.memory_rank import RankingOptions
    from vaultmem.retrieval.query import QueryOptions, query

    index = index or LexicalIndex.open(config.cache_dir)
    options = QueryOptions(
        limit=CANDIDATE_LIMIT,
        candidates=CANDIDATE_LIMIT,
        rerank=False,
        ranking=RankingOptions(now=now, review_share=0.0),
    )
    result = query(config, text, backends=backends, options=options, index=index)
    entries = index.entries(h.path for h in result.hits)
    hits = [h for h in result.hits if h.path in entries and not _excluded(entries[h.path], now)]
    cover = coverages(index, text, [h.path for h in hits])
    pinned = {p for p, e in entries.items() if e.memory.get("pinned") is True}
    cosines = {h.path: _cosine(t) for h, t in zip(result.hits, result.traces, strict=True)}
    return [Candidate(h, cover[h.path], h.path in pinned, cosines[h.path]) for h in hits]


def _cosine(trace: Trace) -> float | None:
    found = dict(trace.lists).get("vec:original")
    return found.score if found is not None else None


def select(
    found: Sequence[Candidate],
    *,
    floor: float = COVERAGE_FLOOR,
    cutoff: float = RELATIVE_CUTOFF,
    cosine_floor: float = COSINE_FLOOR,
    seen: Iterable[str] = (),
) -> list[Candidate]:
    """The candidates clearly relevant: nothing unless one clears ``floor``, then those near it.

    The floor decides *whether* to speak: unless some note covers the prompt that well
    (or a vector similarity reaches ``cosine_floor``: a paraphrase shares meaning, not
    words), nothing is shown. Which notes are shown is then retrieval's call, in its
    order: every note with at least ``cutoff`` times the best coverage, or the cosine.
    The floor is not applied to each note, because coverage only counts which prompt
    words a note holds: a note that happens to hold one rare word ("pick") would
    otherwise push out the one titled with the prompt's topic. Notes the session has
    already seen are skipped.
    """
    skip = set(seen)
    fresh = [c for c in found if c.hit.path not in skip]
    if not fresh:
        return []
    best = max(c.coverage for c in fresh)

    def vector_match(c: Candidate) -> bool:
        return (c.cosine or 0.0) >= cosine_floor

    if best < floor and not any(vector_match(c) for c in fresh):
        return []
    return [c for c in fresh if c.coverage >= best * cutoff or vector_match(c)]


# --- the block ---------------------------------------------------------------------------

CONTEXT_TEMPLATE = "context.j2"
# The session-start brief closes its block the same way.
_FOOTER = "</vault-context>"


def _escape(text: str) -> str:
    # A note must not be able to close the block or open a tag of its own.
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _long_snippet(config: Config, hit: Hit) -> str:
    """The hit's line and what follows it, up to LONG_SNIPPET_CHARS, as one line."""
    try:
        lines = (config.vault / hit.path).read_text("utf-8-sig", errors="replace").splitlines()
    except OSError:
        return hit.snippet
    start = max(hit.line, 1) - 1
    end = max(hit.line_end or 0, start + LONG_SNIPPET_LINES)
    words: list[str] = []
    size = 0
    for raw in lines[start:end]:
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
            snippet = _long_snippet(config, hit)
        long = {**short, "snippet": _escape(snippet)}
        out.append((long, {**short, "snippet": ""}) if snippet else ({**short, "snippet": ""},))
    return out


def build_block(
    config: Config, chosen: Sequence[Candidate], budget: int
) -> tuple[str, list[Candidate]]:
    """The ``<vault-context>`` block within ``budget`` tokens and the notes it holds,
    rendered from the ``context.j2`` template (overridable per vault).

    Filled best first: the long form of a note when it fits, else its title and path,
    else nothing more.
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


# --- session record and log --------------------------------------------------------------


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _session_path(config: Config, session: str) -> Path:
    return config.cache_dir / SURFACE_DIR / "sessions" / f"{_digest(session)}.json"


def _load_session(path: Path) -> _Session:
    try:
        data = json.loads(path.read_text("utf-8"))
        prompts = {str(k): str(v) for k, v in dict(data.get("prompts", {})).items()}
        return _Session(prompts, [str(n) for n in data.get("notes", [])])
    except (OSError, ValueError, TypeError, AttributeError):
        return _Session()  # no record, or a damaged one: start the session afresh


def _save_session(path: Path, record: _Session) -> None:
    from vaultmem.atomic import atomic_write

    prompts = dict(sorted(record.prompts.items(), key=lambda kv: kv[1])[-SESSION_PROMPTS:])
    data = {"prompts": prompts, "notes": record.notes}
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


def log_path(config: Config) -> Path:
    """The surfacing log: one JSON line per `surface` run."""
    return config.cache_dir / SURFACE_DIR / "log.jsonl"


def _log(config: Config, request: SurfaceRequest, result: SurfaceResult, now: datetime) -> None:
    path = log_path(config)
    line = {
        "time": now.isoformat(),
        "session": request.session,
        "prompt": _digest(request.prompt),
        "notes": [n.path for n in result.notes],
        "tokens": result.tokens,
        "reason": result.reason,
    }
    make_cache(config.cache_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        if path.stat().st_size > LOG_MAX_BYTES:
            os.replace(path, path.with_suffix(".jsonl.1"))  # keep one older generation
    except FileNotFoundError:
        pass
    # One write of one line in append mode: concurrent hooks do not interleave lines.
    with path.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(line, ensure_ascii=False) + "\n")


def log_count(config: Config) -> int:
    """How many runs the surfacing log holds (both generations)."""
    total = 0
    for path in (log_path(config), log_path(config).with_suffix(".jsonl.1")):
        try:
            with path.open("rb") as fh:
                total += sum(1 for _ in fh)
        except OSError:
            continue
    return total


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
    floor = COVERAGE_FLOOR * (FORCED_FLOOR_FACTOR if decision.forced else 1.0)
    chosen = select(found, floor=floor, seen=record.notes)
    context, kept = build_block(config, chosen, request.budget)
    record.notes.extend(c.hit.path for c in kept)
    if spath is not None:
        make_cache(config.cache_dir)
        _save_session(spath, record)
    if not kept:
        why = "nothing clearly relevant" if not chosen else "budget too small"
        if found and not chosen and all(c.hit.path in record.notes for c in found[:1]):
            why = "already surfaced in this session"
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
