"""The values every layer shares: search filters and hits, and the request model.

A request is what a front end (the CLI's flags, an MCP tool call, a REST body) asks of
:mod:`vaultmem.api`; it is checked once, here, so the three front ends cannot disagree
on what is valid. This module imports nothing of vaultmem's: stores, retrieval and the
front ends all look down on it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from vaultmem.errors import RequestError
from vaultmem.vocabulary import NOTE_TYPES

# Notes in these states never appear in results unless asked for by --status.
HIDDEN_STATUSES = ("forgotten", "archived")


# The part of check_text's rule a JSON Schema pattern can state (not every validator can
# hold half a surrogate pair): the servers' schemas put it on every text a request carries.
TEXT_PATTERN = r"^[^\x00]*$"
# Text that is more than white space: a character str.strip() keeps (its white space is
# spelled out, as JSON Schema's \s is not Python's). For the fields a request refuses blank.
_SPACE = r"\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
NONBLANK_PATTERN = rf"^[^\x00]*[^\x00{_SPACE}][^\x00]*$"


def check_text(text: str | None, what: str) -> str | None:
    """``text`` when a note could hold it, RequestError naming ``what`` if not.

    What no command line can pass, JSON can: a NUL character, or half a surrogate pair
    (``"\\ud800"``; also a command line's bytes that are not UTF-8). No note, file name or
    index holds either, so every request refuses them before anything runs. None passes.

    Example:
        >>> check_text("a\\x00b", "title")
        Traceback (most recent call last):
        vaultmem.errors.RequestError: title: a NUL character in 'a\\x00b'
    """
    if text is None:
        return None
    if not isinstance(text, str):
        raise RequestError(f"{what} must be text, not {text!r}")
    if "\x00" in text:
        raise RequestError(f"{what}: a NUL character in {text[:40]!r}")
    if not text.isascii():
        try:
            text.encode()
        except UnicodeEncodeError:
            raise RequestError(f"{what}: not valid Unicode: {text[:40]!r}") from None
    return text


def check_texts(texts: Iterable[str], what: str) -> tuple[str, ...]:
    """Every one of ``texts`` through :func:`check_text` (a list of names, of tags)."""
    if isinstance(texts, str):
        raise RequestError(f"{what} must be a list of text, not {texts!r}")
    checked = []
    for text in texts:
        if text is None:
            raise RequestError(f"{what} must be text, not None")
        checked.append(check_text(text, what) or text)
    return tuple(checked)


def has_words(text: str) -> bool:
    """Whether ``text`` holds anything to search for: a letter or a digit.

    A query of only spaces, punctuation or control characters finds no keyword term, and
    its embedding is noise: searched anyway, it would still rank every note, and hybrid
    fusion would score the nearest one 1.0. Such a query finds nothing.
    """
    return any(char.isalnum() for char in text)


@dataclass(frozen=True)
class DateWindow:
    """A date window as instants (aware UTC), either end open; both ends are inside it.

    Example:
        >>> DateWindow(since=datetime(2026, 11, 1, tzinfo=UTC)).holds(None, now)  # doctest: +SKIP
        True
    """

    since: datetime | None = None
    until: datetime | None = None

    def holds(self, *times: datetime | None) -> bool:
        """Whether any of ``times`` falls in the window (None never does)."""
        return any(
            when is not None
            and (self.since is None or when >= self.since)
            and (self.until is None or when <= self.until)
            for when in times
        )


def split_names(raw: str | Iterable[str] | None, what: str) -> tuple[str, ...]:
    """``"a, b"`` (or a list of such) → ``("a", "b")``: stripped, blanks and repeats
    dropped, each checked by :func:`check_text` (RequestError naming ``what``)."""
    items = [raw] if isinstance(raw, str) else list(raw or ())
    names: dict[str, None] = {}
    for item in items:
        if not isinstance(item, str):
            raise RequestError(f"{what} must be text or a list of text, not {item!r}")
        check_text(item, what)
        names.update(dict.fromkeys(n.strip() for n in item.split(",") if n.strip()))
    return tuple(names)


@dataclass(frozen=True)
class Filters:
    """Restrictions every search command accepts (all optional).

    ``collections``: configured collection names, a note in any of them passes (``"a,b"``
    and lists of such are split). ``since``/``until``: a date window as asked, each an
    ISO date or datetime or a duration back from now (``7d``, ``2w``, ``12h``; a bare
    ``until`` date includes its day); a note passes when its ``created`` (else the file's
    mtime: "first seen") or its ``last_used`` falls in it. :mod:`vaultmem.api` resolves
    them against the request's clock into ``window``, which is what retrieval applies
    (RequestError for a bad value there).

    Example:
        >>> Filters(collections=("work, ops", "work")).collections
        ('work', 'ops')
    """

    folder: str | None = None
    tag: str | None = None
    type: str | None = None
    status: str | None = None
    collections: tuple[str, ...] = ()
    since: str | None = None
    until: str | None = None
    window: DateWindow | None = None

    def __post_init__(self) -> None:
        for name in ("folder", "tag", "type", "status", "since", "until"):
            check_text(getattr(self, name), name)
        object.__setattr__(self, "collections", split_names(self.collections, "collection"))

    @property
    def dated(self) -> bool:
        """Whether a date window was asked for (``since`` or ``until``)."""
        return self.since is not None or self.until is not None


@dataclass(frozen=True)
class Hit:
    """One search result: the note, its score, and the best matching line."""

    path: str
    title: str
    score: float
    snippet: str
    line: int
    type: str = "note"
    status: str = "active"
    line_end: int | None = None  # vector hits: the last line of the matching fragment
    review: bool = False  # in the decay danger zone: using it would reinforce a fading memory
    date: str | None = None  # `query`'s when route: the ISO date the note stands for
    score_kind: str = ""  # what ``score`` is: one of SCORE_KINDS

    def as_json(self) -> dict[str, object]:
        """The ``--json`` shape: one object per line (``date`` only when there is one)."""
        extra: dict[str, object] = {} if self.line_end is None else {"line_end": self.line_end}
        if self.date is not None:
            extra["date"] = self.date
        return {
            "path": self.path,
            "title": self.title,
            "score": round(self.score, 6),
            "score_kind": self.score_kind,
            "snippet": self.snippet,
            "line": self.line,
            "type": self.type,
            "status": self.status,
            "review": self.review,
            **extra,
        }


SEARCH_MODES = ("keyword", "semantic", "hybrid")
# What a hit's score is, so that no one compares a BM25F score (about 3-20 for real hits)
# with a cosine (0.2-0.8) or `query`'s relevance (best retrieval 1, moved by the memory
# prior): "bm25" (`search`: BM25F, moved by the prior in its own units), "cosine"
# (`vsearch`, `similar`: the best fragment's cosine, likewise), "relevance" (`query`: the
# fused score over the best one's, plus the prior), "share" (a search over several vaults:
# each hit's BM25F over the most its vault could score).
SCORE_KINDS = ("bm25", "cosine", "relevance", "share")
# `query`'s intent routes (vaultmem.retrieval.routing); None: detected from the question.
ROUTES = ("why", "when", "entity", "what")
MAX_LIMIT = 1000
MAX_QUERY_CHARS = 10_000


def check_limit(limit: int, name: str = "limit", *, most: int | None = MAX_LIMIT) -> int:
    """``limit`` when it is a whole number from 1 to ``most`` (None: no upper bound;
    RequestError if not). A boolean is no number here, though Python counts True as 1:
    JSON's ``true`` must not read as a limit of one."""
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        bad = True
    else:
        bad = most is not None and limit > most
    if bad:
        span = f"from 1 to {most}" if most is not None else "of 1 or more"
        raise RequestError(f"{name} must be a whole number {span}, not {limit!r}")
    return limit


@dataclass(frozen=True)
class SearchRequest:
    """One search as any front end asks for it.

    ``mode``: keyword (BM25F, `search`), semantic (vectors, `vsearch`) or hybrid (the
    `query` pipeline). ``prior`` and ``review``: the memory prior and the review slots
    (both on unless turned off). ``candidates``, ``intent``, ``expand`` (None: the
    config's default), ``rerank`` and ``route`` (one of :data:`ROUTES`; None: detected
    from the question, or an ``intent`` that is a route word) shape a hybrid search only.

    Example:
        >>> SearchRequest("redis cache", mode="hybrid", limit=5).mode
        'hybrid'
    """

    query: str
    mode: str = "keyword"
    limit: int = 10
    filters: Filters = field(default_factory=Filters)
    prior: bool = True
    review: bool = True
    candidates: int = 30
    intent: str | None = None
    expand: bool | None = None
    rerank: bool = True
    route: str | None = None

    def __post_init__(self) -> None:
        if self.route is not None and self.route not in ROUTES:
            raise RequestError(f"unknown route {self.route!r}; one of: {', '.join(ROUTES)}")
        check_text(self.query, "query")
        check_text(self.intent, "intent")
        if len(self.query) > MAX_QUERY_CHARS:
            raise RequestError(f"query is longer than {MAX_QUERY_CHARS} characters")
        if self.mode not in SEARCH_MODES:
            raise RequestError(f"unknown mode {self.mode!r}; one of: {', '.join(SEARCH_MODES)}")
        check_limit(self.limit)
        check_limit(self.candidates, "candidates")


# The commands that change a note's memory flags, and the flag each sets or clears.
NOTE_ACTIONS = ("pin", "unpin", "forget", "restore", "snooze", "unsnooze")


def parse_tags(raw: str | Sequence[str] | None) -> tuple[str, ...]:
    """``"a, #b,,c"`` (or a list of such) → ``("a", "b", "c")``."""
    items = [raw] if isinstance(raw, str) else list(raw or ())
    words = [word for item in items for word in str(item).split(",")]
    return tuple(t.strip().lstrip("#").strip() for t in words if t.strip(" #"))


@dataclass(frozen=True)
class RememberRequest:
    """A new memory: its text and, optionally, title, type, tags, folder and the note it
    supersedes (by path, title or alias).

    Example:
        >>> RememberRequest("No deploys on Fridays", type="Decision").type
        'decision'
    """

    text: str
    title: str | None = None
    type: str | None = None
    tags: tuple[str, ...] = ()
    folder: str | None = None
    supersedes: str | None = None

    def __post_init__(self) -> None:

        for name in ("text", "title", "type", "folder", "supersedes"):
            check_text(getattr(self, name), name)
        if not self.text.strip():
            raise RequestError("nothing to remember: the text is empty")
        if self.type is not None:
            kind = str(self.type).strip().lower()
            if kind not in NOTE_TYPES:
                raise RequestError(f"unknown type {self.type!r}; one of: {', '.join(NOTE_TYPES)}")
            object.__setattr__(self, "type", kind)
        object.__setattr__(self, "tags", check_texts(parse_tags(self.tags), "tags"))


@dataclass(frozen=True)
class ReflectRequest:
    """A reflection over the last ``days`` (1 to 3650), at most ``limit`` items a part.

    Example:
        >>> ReflectRequest(days=30).days
        30
    """

    days: int = 14
    limit: int = 10

    def __post_init__(self) -> None:
        check_limit(self.days, "days", most=3650)
        check_limit(self.limit)


@dataclass(frozen=True)
class CurateRequest:
    """A maintenance report; ``vectors``: use the vault's vectors for the vector probe and
    the consolidation candidates (None: when the vault has vectors of its embedder).

    Example:
        >>> CurateRequest(vectors=False).vectors
        False
    """

    vectors: bool | None = None

    def __post_init__(self) -> None:
        if self.vectors is not None and not isinstance(self.vectors, bool):
            raise RequestError(f"vectors must be true, false or null, not {self.vectors!r}")
