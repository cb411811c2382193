"""Vault-wide memory sweeps: `promote`, `gc` and `review` (SPEC §5).

All three bring the manifest up to date (:func:`vaultmem.indexer.index_vault`, which is
incremental), read every note's memory state from it (no note is opened to decide), and
apply the formulas of :mod:`vaultmem.scores` at an explicit ``now``. `promote` and `gc`
then move (or delete) files under the vault lock and re-index what moved, so a search
run right after already sees the notes at their new paths.

**Promotion rule.** SPEC §5 (after CortexGraph) promotes when ``s ≥ 0.65``, or when
``use_count ≥ 5`` within 14 days of ``created``. Read literally, the score rule promotes
every new memory the moment it is written: a note nobody has used scores
``max(0, 1)^β · e^0 · 1 = 1.0`` and stays at or above 0.65 for its first 0.62 half-lives
(1.86 days with the 3-day short-term half-life). CortexGraph has the same flaw (its
``(use_count + 1)^β`` is also 1 for a fresh memory). For a note that was never used the
score measures nothing but youth, so here the score rule counts only for a note that
has been used at least once (``use_count ≥ 1``) and has existed for at least
:data:`PROMOTE_MIN_AGE` (one day: it has to outlive the session that wrote it). It then
means what CortexGraph meant: still strong, because it keeps being used. The usage rule
applies exactly as written; five uses within 14 days are evidence on their own.

**Statuses.** `promote` takes inbox notes whose status is ``active`` (or unset).
`gc` collects ``active``, ``promoted`` and ``superseded`` notes (a superseded note is the
most natural thing to let go); it never touches ``archived`` or ``forgotten`` notes (a
user's explicit decision, which `restore` expects to find in place) nor any status it
does not know (a user's own meaning). `review` lists ``active`` and ``promoted`` notes.
"""

from __future__ import annotations

import math
import os
import posixpath
import re
import subprocess
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import quote, unquote

from vaultmem.atomic import rewrite
from vaultmem.config import Config
from vaultmem.errors import NoteError, VaultmemError
from vaultmem.frontmatter import parse_meta, split, update_note
from vaultmem.index import manifest as mf
from vaultmem.indexer import index_vault, refresh_paths
from vaultmem.markdown import INLINE_CODE_RE, WIKILINK_RE, outline
from vaultmem.memory.writeback import locked
from vaultmem.memory_state import NoteMemory, note_memory
from vaultmem.note import parse_note
from vaultmem.scores import (
    MemoryState,
    decay_score,
    default_half_life,
    format_half_life,
    promotion_reason,
    review_priority,
    should_forget,
    to_utc,
)
from vaultmem.vault import LinkResolver, NoteName, note_path, strip_md

__all__ = [
    "COLLECTABLE_STATUSES",
    "PROMOTABLE_STATUSES",
    "PROMOTE_MIN_AGE",
    "REVIEWABLE_STATUSES",
    "Failure",
    "GcItem",
    "GcReport",
    "PromoteReport",
    "Promotion",
    "Relink",
    "ReviewItem",
    "deletion_blockers",
    "gc",
    "gc_candidates_from",
    "note_age",
    "plan_promotions_from",
    "promote",
    "promotion_decision",
    "relink",
    "review_queue",
    "review_queue_from",
]

PROMOTE_MIN_AGE = timedelta(days=1)
PROMOTABLE_STATUSES = frozenset({"active"})
COLLECTABLE_STATUSES = frozenset({"active", "promoted", "superseded"})
REVIEWABLE_STATUSES = frozenset({"active", "promoted"})

# Paths per git invocation: well under any command-line limit.
_GIT_CHUNK = 200


@dataclass(frozen=True)
class Failure:
    """A note a sweep could not handle, and why (one line)."""

    path: str
    reason: str


# --------------------------------------------------------------------------- helpers


def _under(path: str, folder: str) -> bool:
    """Whether vault path ``path`` lies in ``folder`` (recursively; ``""`` is the root)."""
    return not folder or path.startswith(folder.rstrip("/") + "/")


def _join(folder: str, rel: str) -> str:
    return f"{folder.rstrip('/')}/{rel}" if folder else rel


def _free_path(path: str, taken: Callable[[str], bool]) -> str:
    """``path``, or ``stem-2.md``, ``stem-3.md``… in the same folder when it is taken."""
    if not taken(path):
        return path
    pure = PurePosixPath(path)
    n = 2
    while True:
        candidate = str(pure.with_name(f"{pure.stem}-{n}{pure.suffix}"))
        if not taken(candidate):
            return candidate
        n += 1


def _taken_in(config: Config, entries: Mapping[str, mf.Entry]) -> Callable[[str], bool]:
    """A "is this path in use?" test: an indexed note (any case) or any file on disk."""
    known = {p.lower() for p in entries}
    return lambda path: path.lower() in known or os.path.lexists(config.vault / path)


def _fresh_entry(config: Config, path: str, entry: mf.Entry) -> mf.Entry | None:
    """The note's entry as it is on disk now (None when it is gone or unreadable).

    The manifest was read before the lock was taken; a note saved in between is
    re-parsed so a sweep never acts on a state the note no longer has.
    """
    full = config.vault / path
    try:
        st = os.stat(full)
        if (st.st_mtime_ns, st.st_size) == (entry.mtime_ns, entry.size):
            return entry
        raw = full.read_bytes()
        return mf.entry_for(parse_note(path, raw, mtime_ns=st.st_mtime_ns, keys=config.keys))
    except (OSError, NoteError):
        return None


def _move_note(config: Config, old: str, new: str, updates: Mapping[str, object]) -> None:
    """Move a note and set owned keys on it; on any failure it is back where it was.

    The caller holds the vault lock. The frontmatter is written after the move (through
    :func:`update_note`: only owned keys change), and a failed write moves it back, so a
    note is either moved and marked or untouched.
    """
    note_path(config, old, write=True)  # a symlink out of the vault is not written
    src, dst = config.vault / old, config.vault / new
    if os.path.lexists(dst):
        raise NoteError(f"{new}: already exists")
    try:
        dst.parent.mkdir(parents=True, exist_ok=True)
        os.rename(src, dst)
    except OSError as exc:
        raise NoteError(f"{old}: cannot move to {new}: {exc.strerror or exc}") from None
    try:
        update_note(dst, lambda _meta: updates, new, config.keys)
    except VaultmemError:
        os.rename(dst, src)
        raise


# --------------------------------------------------------------------------- review


@dataclass(frozen=True)
class ReviewItem:
    """A note in the danger zone: worth a look before it fades (SPEC §5 review priority)."""

    path: str
    title: str
    score: float
    priority: float


def review_queue_from(
    entries: Mapping[str, mf.Entry], now: datetime, limit: int | None = None
) -> list[ReviewItem]:
    """The review queue computed from an already loaded manifest (``path → Entry``).

    Notes with ``review_priority(decay_score) > 0`` (score inside [0.15, 0.35]), status
    active or promoted, not snoozed past ``now``; highest priority first, ties broken by
    the lower score (closer to being lost), then by path. ``limit`` keeps the first N.
    """
    at = to_utc(now)
    items = []
    for path, entry in entries.items():
        memory = note_memory(path, entry)
        if memory.status not in REVIEWABLE_STATUSES:
            continue
        if memory.snoozed(at):
            continue
        score = decay_score(memory.state, at)
        priority = review_priority(score)
        if priority > 0:
            items.append(ReviewItem(path, memory.title, score, priority))
    items.sort(key=lambda item: (-item.priority, item.score, item.path))
    return items if limit is None else items[: max(limit, 0)]


def review_queue(config: Config, now: datetime, limit: int | None = None) -> list[ReviewItem]:
    """The review queue of the vault of ``config`` (indexes first; reads no note).

    Example:
        >>> [item.path for item in review_queue(config, now, limit=3)]  # doctest: +SKIP
        ['inbox/Redis memory at 80 percent.md']
    """
    index_vault(config)
    return review_queue_from(mf.load(config.cache_dir).entries, now, limit)


# --------------------------------------------------------------------------- promote


@dataclass(frozen=True)
class Promotion:
    """One note `promote` moves (or would move) from the inbox to the memory folder."""

    path: str
    target: str
    reason: str
    score: float


@dataclass(frozen=True)
class Relink:
    """A note whose links to moved notes were (or would be) rewritten; ``path`` is where
    the note is after the sweep."""

    path: str
    links: int


@dataclass(frozen=True)
class PromoteReport:
    """What one `promote` run did, or would do with ``dry_run``."""

    promoted: tuple[Promotion, ...]
    relinked: tuple[Relink, ...]
    failed: tuple[Failure, ...]
    dry_run: bool


def note_age(memory: NoteMemory, entry: mf.Entry, now: datetime) -> timedelta:
    """How long the note has existed at ``now``: since ``created``, else its file's mtime."""
    born = memory.state.created or memory.state.mtime
    if born is None:
        born = datetime.fromtimestamp(entry.mtime_ns / 1e9, tz=UTC)
    return max(to_utc(now) - born, timedelta(0))


def promotion_decision(
    state: MemoryState, now: datetime, *, age: timedelta, min_age: timedelta = PROMOTE_MIN_AGE
) -> str | None:
    """Why a short-term note should be promoted at ``now`` (the reason text), or None.

    The usage rule (``use_count ≥ 5`` within 14 days of ``created``) always applies; the
    score rule (``s ≥ 0.65``) only to a note used at least once and at least ``min_age``
    old — see the module docstring for why an unused note's score proves nothing.
    """
    if state.use_count >= 1 and age >= min_age:
        return promotion_reason(state, now)
    return promotion_reason(state, now, threshold=math.inf)


def _promotion_of(
    path: str, entry: mf.Entry, now: datetime, min_age: timedelta
) -> tuple[str, float] | None:
    """(reason, score) when the inbox note ``path`` is due for promotion, else None."""
    memory = note_memory(path, entry)
    if memory.status not in PROMOTABLE_STATUSES:
        return None
    age = note_age(memory, entry, now)
    reason = promotion_decision(memory.state, now, age=age, min_age=min_age)
    return None if reason is None else (reason, decay_score(memory.state, now))


def plan_promotions_from(
    entries: Mapping[str, mf.Entry],
    now: datetime,
    *,
    inbox_folder: str,
    memory_folder: str,
    min_age: timedelta = PROMOTE_MIN_AGE,
    taken: Callable[[str], bool] | None = None,
) -> list[Promotion]:
    """The promotions due at ``now`` among the notes under ``inbox_folder``, by path.

    A note keeps its file name (and its sub-folder below the inbox), so ``[[Name]]``
    links still find it; when that path is ``taken`` (default: by an indexed note) the
    name gets ``-2``, ``-3``… and links to it are rewritten by :func:`relink`.
    """
    known = {p.lower() for p in entries}
    in_use = taken or (lambda path: path.lower() in known)
    planned: set[str] = set()
    plan = []
    for path in sorted(entries):
        in_memory = bool(memory_folder) and _under(path, memory_folder)
        if in_memory or not _under(path, inbox_folder):
            continue
        due = _promotion_of(path, entries[path], now, min_age)
        if due is None:
            continue
        rel = path[len(inbox_folder.rstrip("/")) + 1 :] if inbox_folder else path
        target = _free_path(_join(memory_folder, rel), lambda p: in_use(p) or p.lower() in planned)
        planned.add(target.lower())
        plan.append(Promotion(path, target, due[0], due[1]))
    return plan


def _promoted_keys(meta_type: Any) -> dict[str, object]:
    """The owned keys a promoted note gets: its status, and its type's long half-life."""
    half_life = format_half_life(default_half_life(str(meta_type or "") or None))
    return {"status": "promoted", "half_life": half_life}


def promote(
    config: Config, now: datetime, *, dry_run: bool = False, min_age: timedelta = PROMOTE_MIN_AGE
) -> PromoteReport:
    """Promote the inbox notes that earned it (see the module docstring for the rule).

    Each moves to the memory folder with ``status: promoted`` and its type's default
    half-life; links that named it by path are rewritten (:func:`relink`), and the index
    follows. ``dry_run`` changes nothing in the vault and reports the same plan.

    Example:
        >>> [p.target for p in promote(config, now, dry_run=True).promoted]  # doctest: +SKIP
        ['memory/Redis memory at 80 percent.md']
    """
    index_vault(config)
    entries = mf.load(config.cache_dir).entries
    plan = plan_promotions_from(
        entries,
        now,
        inbox_folder=config.inbox_folder,
        memory_folder=config.memory_folder,
        min_age=min_age,
        taken=_taken_in(config, entries),
    )
    if dry_run or not plan:
        moves = {p.path: p.target for p in plan}
        relinked, failed = relink(config, entries, moves, write=False)
        return PromoteReport(tuple(plan), tuple(relinked), tuple(failed), dry_run)
    with locked(config, "promote"):
        done, failed = _carry_out_promotions(config, entries, plan, now, min_age)
        moves = {p.path: p.target for p in done}
        relinked, relink_failed = relink(config, entries, moves, write=True)
        changed = [*moves.values(), *(r.path for r in relinked)]
        if moves:
            refresh_paths(config, changed, removed=list(moves))
    return PromoteReport(tuple(done), tuple(relinked), (*failed, *relink_failed), False)


def _carry_out_promotions(
    config: Config,
    entries: Mapping[str, mf.Entry],
    plan: Sequence[Promotion],
    now: datetime,
    min_age: timedelta,
) -> tuple[list[Promotion], list[Failure]]:
    """Move each planned note (re-checked on disk first); the caller holds the lock."""
    done, failed = [], []
    for item in plan:
        entry = _fresh_entry(config, item.path, entries[item.path])
        if entry is None or _promotion_of(item.path, entry, now, min_age) is None:
            failed.append(Failure(item.path, "changed on disk since indexing; not promoted"))
            continue
        try:
            _move_note(config, item.path, item.target, _promoted_keys(entry.type))
        except VaultmemError as exc:
            failed.append(Failure(item.path, str(exc)))
            continue
        done.append(item)
    return done, failed


# --------------------------------------------------------------------------- links

# A markdown link's destination: <anything but angle brackets> or a run without spaces
# or parentheses, optionally followed by a "title".
_MD_LINK_RE = re.compile(r"\]\((?P<url><[^<>\n]+>|[^\s()<>]+)(?P<rest>(?:[ \t]+\"[^\"\n]*\")?\))")
_SCHEME_RE = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
# What a markdown link destination cannot hold raw; everything else is written as is.
_URL_ESCAPES = {"%": "%25", " ": "%20", "(": "%28", ")": "%29", "<": "%3C", ">": "%3E", "#": "%23"}


class _LinkMap:
    """Link resolution before and after a set of moves, and the text that fixes a link.

    A link is rewritten when the note it pointed to before the moves is not the one it
    points to afterwards: a path-style link to a moved note, a name link to a note that
    had to be renamed, or (rarely) a name link that the move would make ambiguous.
    """

    def __init__(self, entries: Mapping[str, mf.Entry], moves: Mapping[str, str]) -> None:
        names = [NoteName(p, e.title, e.aliases) for p, e in entries.items()]
        self.moves = dict(moves)
        self.before = LinkResolver(names)
        self.after = LinkResolver([replace(n, path=moves.get(n.path, n.path)) for n in names])
        self.known_before = {p.lower(): p for p in entries}
        self.known_after = {moves.get(p, p).lower(): moves.get(p, p) for p in entries}

    def fix_wikilink(self, target: str, src_before: str, src_after: str) -> str | None:
        """The new target text of ``[[target]]`` written in the note, or None to keep it."""
        was = self.before.resolve_link(target, src_before)
        if was is None:
            return None
        want = self.moves.get(was, was)
        if self.after.resolve_link(target, src_after) == want:
            return None
        return self._text_for(target, want, lambda t: self.after.resolve_link(t, src_after))

    def _text_for(self, target: str, want: str, resolve: Callable[[str], str | None]) -> str | None:
        """The first spelling of a link to ``want`` that resolves to it, in the original's
        style: a bare name stays a name when it can, ``.md`` and a leading ``/`` are kept."""
        keep_md = target.lower().endswith(".md")
        lead = "/" if target.startswith("/") else ""
        stem = PurePosixPath(want).stem
        options = [] if "/" in target else [stem]
        options.append(lead + strip_md(want))
        for option in options:
            text = option + ".md" if keep_md and want.lower().endswith(".md") else option
            if resolve(text) == want:
                return text
        return None

    def md_resolve(self, url_path: str, source: str, *, after: bool) -> tuple[str | None, bool]:
        """(note, relative?) a markdown link destination points to, Obsidian's way:
        ``/abs`` from the root, else relative to the note's folder, else as a link path."""
        known = self.known_after if after else self.known_before
        resolver = self.after if after else self.before
        if url_path.startswith("/"):
            return known.get(url_path[1:].lower()), False
        folder = posixpath.dirname(source)
        joined = posixpath.normpath(posixpath.join(folder, url_path))
        if joined != ".." and not joined.startswith("../"):
            hit = known.get(joined.lower()) or known.get(joined.lower() + ".md")
            if hit is not None:
                return hit, bool(folder)
        if url_path.startswith(("./", "../")):
            return None, False
        return resolver.resolve_link(url_path, source), False

    def fix_md(self, url_path: str, src_before: str, src_after: str) -> str | None:
        """The new (decoded) destination of a markdown link, or None to keep it."""
        was, relative = self.md_resolve(url_path, src_before, after=False)
        if was is None:
            return None
        want = self.moves.get(was, was)
        if self.md_resolve(url_path, src_after, after=True)[0] == want:
            return None
        base = want
        if relative:
            base = posixpath.relpath(want, posixpath.dirname(src_after) or ".")
            if url_path.startswith("./") and not base.startswith("../"):
                base = "./" + base
        elif url_path.startswith("/"):
            base = "/" + want
        options = [] if "/" in url_path else [PurePosixPath(want).name]
        options.append(base)
        for option in options:
            text = option if url_path.lower().endswith(".md") else strip_md(option)
            if self.md_resolve(text, src_after, after=True)[0] == want:
                return text
        return None


def _encode_url(path: str) -> str:
    return "".join(_URL_ESCAPES.get(ch, ch) for ch in path)


def _outside(spans: Sequence[tuple[int, int]], start: int, end: int) -> bool:
    return not any(a < end and start < b for a, b in spans)


@dataclass
class _Scope:
    """One note being relinked: where it was, where it is, and the replacements made."""

    links: _LinkMap
    before: str
    after: str
    subs: list[tuple[str, str]]


def _code_spans(text: str) -> list[tuple[int, int]]:
    return [m.span() for m in INLINE_CODE_RE.finditer(text)] if "`" in text else []


def _fix_wikilink(m: re.Match[str], spans: Sequence[tuple[int, int]], scope: _Scope) -> str:
    """The text of one ``[[wikilink]]`` match, its target replaced when the move needs it."""
    raw = m.group("target")
    target = raw.strip()
    if not target or not _outside(spans, m.start(), m.end()):
        return m.group(0)
    new = scope.links.fix_wikilink(target, scope.before, scope.after)
    if new is None:
        return m.group(0)
    scope.subs.append((target, new))
    start, end = m.start("target") - m.start(), m.end("target") - m.start()
    return m.group(0)[:start] + raw.replace(target, new, 1) + m.group(0)[end:]


def _fix_md_link(m: re.Match[str], spans: Sequence[tuple[int, int]], scope: _Scope) -> str:
    """The text of one ``](destination)`` match, the destination replaced when needed.

    The new destination keeps the old one's form: inside ``<…>`` raw, else with the
    characters a destination cannot hold raw percent-encoded; the ``#fragment`` stays.
    """
    url = m.group("url")
    angle = url.startswith("<")
    inner = url[1:-1] if angle else url
    path_part, hash_sign, fragment = inner.partition("#")
    decoded = unquote(path_part)
    if not decoded or _SCHEME_RE.match(decoded) or not _outside(spans, m.start(), m.end()):
        return m.group(0)
    new = scope.links.fix_md(decoded, scope.before, scope.after)
    if new is None:
        return m.group(0)
    written = new if angle else _encode_url(new)
    scope.subs.append((path_part, written))
    dest = written + hash_sign + fragment
    return "](" + (f"<{dest}>" if angle else dest) + m.group("rest")


def _relink_line(line: str, scope: _Scope) -> str:
    """``line`` with its links fixed (wikilinks, then markdown links), code spans skipped."""
    if "[[" in line:
        spans = _code_spans(line)
        line = WIKILINK_RE.sub(lambda m: _fix_wikilink(m, spans, scope), line)
    if "](" in line:
        spans = _code_spans(line)
        line = _MD_LINK_RE.sub(lambda m: _fix_md_link(m, spans, scope), line)
    return line


def _relink_body(body: str, scope: _Scope) -> tuple[str, int]:
    """The body with links fixed outside fenced/indented code, and how many changed."""
    if "[[" not in body and "](" not in body:
        return body, 0
    code = outline(body).code_lines
    out = []
    # splitlines() numbers lines exactly as outline() does; keepends restores the bytes.
    for number, line in enumerate(body.splitlines(keepends=True), start=1):
        out.append(line if number in code else _relink_line(line, scope))
    return "".join(out), len(scope.subs)


def _same_but_relinked(old: Any, new: Any, subs: Sequence[tuple[str, str]]) -> bool:
    """Whether parsed YAML ``new`` is ``old`` with only link substitutions in strings."""
    if isinstance(old, str) and isinstance(new, str):
        expected = old
        for before, after in subs:
            expected = expected.replace(before, after)
        return new in (old, expected)
    if isinstance(old, dict) and isinstance(new, dict):
        return list(old) == list(new) and all(_same_but_relinked(old[k], new[k], subs) for k in old)
    if isinstance(old, list) and isinstance(new, list):
        return len(old) == len(new) and all(
            _same_but_relinked(a, b, subs) for a, b in zip(old, new, strict=True)
        )
    return type(old) is type(new) and bool(old == new)


def _relink_frontmatter(text: str, links: _LinkMap, before: str, after: str) -> tuple[str, int]:
    """Frontmatter text with ``[[links]]`` fixed, if the YAML still means the same.

    The replacement is made on the text (so every other byte stays); it is kept only if
    the re-parsed frontmatter equals the old one with the link targets substituted —
    anything else (a quoting style that would need escapes) keeps the frontmatter as is.
    """
    if "[[" not in text:
        return text, 0
    scope = _Scope(links, before, after, [])
    new = "".join(_relink_line(line, scope) for line in text.splitlines(keepends=True))
    if not scope.subs:
        return text, 0
    try:
        old_meta, _ = parse_meta(b"---\n" + text.encode() + b"---\n", after)
        new_meta, _ = parse_meta(b"---\n" + new.encode() + b"---\n", after)
    except NoteError:
        return text, 0
    if not _same_but_relinked(old_meta, new_meta, scope.subs):
        return text, 0
    return new, len(scope.subs)


def _relink_bytes(raw: bytes, links: _LinkMap, before: str, after: str) -> tuple[bytes, int]:
    """A note's bytes with its links fixed (body and frontmatter), and how many changed.

    ``before``/``after`` are the note's own path before and after the moves (links are
    resolved from where the note is).
    """
    parts = split(raw, after)
    try:
        body = parts.body.decode("utf-8")
    except UnicodeDecodeError:
        return raw, 0  # not text we can edit safely: leave every byte
    new_body, n_body = _relink_body(body, _Scope(links, before, after, []))
    fm, n_fm = parts.frontmatter, 0
    if fm is not None:
        fm, n_fm = _relink_frontmatter(fm, links, before, after)
    if n_body + n_fm == 0:
        return raw, 0
    return replace(parts, body=new_body.encode("utf-8")).with_frontmatter(fm), n_body + n_fm


def _rewrite(path: Path, transform: Callable[[bytes], tuple[bytes, int]], source: str) -> int:
    """Apply a link ``transform`` (bytes, links changed) through :func:`rewrite`; the count
    of the version written (a concurrent save is kept and relinked too)."""
    counts: dict[bytes, int] = {}

    def links_fixed(raw: bytes) -> bytes:
        new, counts[raw] = transform(raw)
        return new

    done = rewrite(path, links_fixed, source)
    return counts[done.before] if done.changed else 0


def _mentions(moves: Mapping[str, str]) -> re.Pattern[str]:
    """A cheap filter: text naming any moved note's old or new file name (also %-encoded)."""
    words = set()
    for old, new in moves.items():
        for path in (old, new):
            stem = PurePosixPath(path).stem.lower()
            words.update({stem, quote(stem).lower()})
    return re.compile("|".join(re.escape(w) for w in sorted(words, key=len, reverse=True)))


def relink(
    config: Config,
    entries: Mapping[str, mf.Entry],
    moves: Mapping[str, str],
    *,
    write: bool,
) -> tuple[list[Relink], list[Failure]]:
    """Rewrite links that the moves ``old path → new path`` would break or redirect.

    ``entries`` is the manifest from before the moves. Only links that resolved to a
    note before and would resolve elsewhere (or nowhere) after are changed, each by an
    exact replacement of its target text: ``[[inbox/a]]`` → ``[[memory/a]]``,
    ``[[inbox/a.md|x]]`` → ``[[memory/a.md|x]]``, ``](inbox/a.md)`` → ``](memory/a.md)``
    (relative markdown links stay relative). Code blocks and code spans are left alone.
    With ``write`` the notes are rewritten atomically (the caller holds the vault lock
    and has already moved the files); without it, nothing is written and the same report
    comes back.
    """
    if not moves:
        return [], []
    links = _LinkMap(entries, moves)
    wanted = _mentions(moves)
    relinked, failed = [], []
    for old_src in sorted(entries):
        src = moves.get(old_src, old_src)
        on_disk = config.vault / (src if write else old_src)

        def transform(raw: bytes, old_src: str = old_src, src: str = src) -> tuple[bytes, int]:
            if wanted.search(raw.decode("utf-8", "replace").lower()) is None:
                return raw, 0
            return _relink_bytes(raw, links, old_src, src)

        try:
            if write and on_disk.is_symlink() and _count(on_disk, transform):
                note_path(config, src, write=True)  # a symlink out of the vault is not written
            count = _rewrite(on_disk, transform, src) if write else _count(on_disk, transform)
        except VaultmemError as exc:
            failed.append(Failure(src, str(exc)))
            continue
        if count:
            relinked.append(Relink(src, count))
    return relinked, failed


def _count(path: Path, transform: Callable[[bytes], tuple[bytes, int]]) -> int:
    """How many links ``transform`` would change in the file (0 when it is unreadable)."""
    try:
        return transform(path.read_bytes())[1]
    except OSError:
        return 0


# --------------------------------------------------------------------------- gc


@dataclass(frozen=True)
class GcItem:
    """One note `gc` collects: ``action`` is "archive" (to ``target``) or "delete";
    ``why`` says why a requested delete became an archive."""

    path: str
    score: float
    action: str
    target: str | None = None
    why: str = ""


@dataclass(frozen=True)
class GcReport:
    """What one `gc` run did, or would do with ``dry_run``."""

    items: tuple[GcItem, ...]
    failed: tuple[Failure, ...]
    dry_run: bool


def _collectable(path: str, entry: mf.Entry, now: datetime) -> float | None:
    """The note's score when gc should collect it, else None (see the module docstring)."""
    memory = note_memory(path, entry)
    if memory.status not in COLLECTABLE_STATUSES or not should_forget(memory.state, now):
        return None
    return decay_score(memory.state, now)


def gc_candidates_from(
    entries: Mapping[str, mf.Entry],
    now: datetime,
    *,
    archive_folder: str,
    folders: Sequence[str] = (),
) -> list[tuple[str, float]]:
    """(path, score) of every note gc collects at ``now``, by path.

    ``scores.should_forget``: ``s < 0.05``, not pinned, type not durable; status active,
    promoted or superseded; not already under ``archive_folder``; under one of
    ``folders`` when any are given.
    """
    out = []
    for path in sorted(entries):
        if archive_folder and _under(path, archive_folder):
            continue
        if folders and not any(_under(path, f) for f in folders):
            continue
        score = _collectable(path, entries[path], now)
        if score is not None:
            out.append((path, score))
    return out


def _git(vault: Path, *args: str) -> subprocess.CompletedProcess[bytes] | None:
    """Run git in the vault (paths taken literally, never as patterns); None without git."""
    try:
        return subprocess.run(
            ["git", "--literal-pathspecs", "-C", str(vault), *args],
            capture_output=True,
            check=False,
        )
    except OSError:
        return None


def _git_paths(vault: Path, args: Sequence[str], paths: Sequence[str]) -> set[str]:
    """The NUL-separated paths a git listing prints for ``paths`` (empty on failure)."""
    found: set[str] = set()
    for i in range(0, len(paths), _GIT_CHUNK):
        done = _git(vault, *args, "--", *paths[i : i + _GIT_CHUNK])
        if done is not None and done.returncode == 0:
            found.update(
                p.decode("utf-8", "surrogateescape") for p in done.stdout.split(b"\0") if p
            )
    return found


def deletion_blockers(vault: Path, paths: Sequence[str]) -> dict[str, str]:
    """Why each of ``paths`` may not be deleted (absent from the result: it may be).

    A note may be deleted only when git can give it back: the vault is (inside) a git
    work tree, the file is in ``HEAD``, and ``git diff HEAD`` shows no change to it
    (neither staged nor unstaged). Paths are vault-relative; git runs in the vault.
    """
    probe = _git(vault, "rev-parse", "--is-inside-work-tree")
    if probe is None or probe.returncode != 0 or probe.stdout.strip() != b"true":
        return {p: "the vault is not a git repository" for p in paths}
    committed = _git_paths(vault, ["ls-tree", "-r", "-z", "--name-only", "HEAD"], paths)
    changed = _git_paths(vault, ["diff", "--name-only", "--relative", "-z", "HEAD"], paths)
    blockers = {}
    for path in paths:
        if path not in committed:
            blockers[path] = "not committed to git"
        elif path in changed:
            blockers[path] = "has changes not committed to git"
    return blockers


def _plan_gc(
    config: Config,
    entries: Mapping[str, mf.Entry],
    candidates: Sequence[tuple[str, float]],
    *,
    delete: bool,
    force: bool,
) -> list[GcItem]:
    """What to do with each candidate: delete when asked and allowed, else archive."""
    paths = [path for path, _ in candidates]
    blockers = deletion_blockers(config.vault, paths) if delete and not force else {}
    taken = _taken_in(config, entries)
    planned: set[str] = set()
    items = []
    for path, score in candidates:
        if delete and path not in blockers:
            items.append(GcItem(path, score, "delete"))
            continue
        target = _free_path(
            _join(config.archive_folder, path), lambda p: taken(p) or p.lower() in planned
        )
        planned.add(target.lower())
        why = f"not deleted: {blockers[path]}" if path in blockers else ""
        items.append(GcItem(path, score, "archive", target, why))
    return items


def gc(
    config: Config,
    now: datetime,
    *,
    dry_run: bool = False,
    delete: bool = False,
    force: bool = False,
    folders: Sequence[str] = (),
) -> GcReport:
    """Collect the notes that decayed below the forget threshold (see
    :func:`gc_candidates_from`); only under ``folders`` when any are given.

    Each moves to ``<archive>/<its path>`` with ``status: archived``. With ``delete`` a
    note is deleted instead when git can give it back (:func:`deletion_blockers`), or
    always with ``force``; one that fails the check is archived, and its item says why.
    ``dry_run`` changes nothing in the vault (only the index cache is refreshed).

    Example:
        >>> [(i.path, i.action) for i in gc(config, now, dry_run=True).items]  # doctest: +SKIP
        [('inbox/Redis memory at 80 percent.md', 'archive')]
    """
    index_vault(config)
    entries = mf.load(config.cache_dir).entries
    folders = [f.strip("/") for f in folders if f.strip("/")]
    candidates = gc_candidates_from(
        entries, now, archive_folder=config.archive_folder, folders=folders
    )
    if dry_run or not candidates:
        items = _plan_gc(config, entries, candidates, delete=delete, force=force)
        return GcReport(tuple(items), (), dry_run)
    with locked(config, "gc"):
        items = _plan_gc(config, entries, candidates, delete=delete, force=force)
        done, failed = _carry_out_gc(config, entries, items, now)
        archived = [item.target for item in done if item.target is not None]
        if done:
            refresh_paths(config, archived, removed=[item.path for item in done])
    return GcReport(tuple(done), tuple(failed), False)


def _carry_out_gc(
    config: Config, entries: Mapping[str, mf.Entry], items: Iterable[GcItem], now: datetime
) -> tuple[list[GcItem], list[Failure]]:
    """Archive or delete each planned note (re-checked on disk first); lock held."""
    done, failed = [], []
    for item in items:
        entry = _fresh_entry(config, item.path, entries[item.path])
        if entry is None or _collectable(item.path, entry, now) is None:
            failed.append(Failure(item.path, "changed on disk since indexing; left as is"))
            continue
        try:
            if item.target is None:
                _delete(config, item.path)
            else:
                _move_note(config, item.path, item.target, {"status": "archived"})
        except VaultmemError as exc:
            failed.append(Failure(item.path, str(exc)))
            continue
        done.append(item)
    return done, failed


def _delete(config: Config, path: str) -> None:
    try:
        os.unlink(config.vault / path)
    except OSError as exc:
        raise NoteError(f"{path}: cannot delete: {exc.strerror or exc}") from None
