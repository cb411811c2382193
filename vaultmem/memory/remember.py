"""`remember`: write a new short-term memory into the vault, unless it is already there.

A memory is a new note in the inbox folder, rendered from the ``memory.md.j2`` template,
with ``created`` = now, the short-term half-life (``stm_half_life``) and ``status:
active``; its file name and ``# heading`` come from its title, else from a short title
derived from the text (:func:`derive_title`: every front end and `extract` get it here).
Before writing, the vault is searched for the same content:

- an **exact duplicate** (the same text once lower-cased, whitespace collapsed and end
  punctuation stripped; a leading ``# heading`` is not part of the text) creates nothing:
  the existing note is reinforced instead, as `touch` would;
- a **near duplicate** (Jaccard ≥ 0.65 of the two texts' 3-word shingles) is written,
  with ``refines: ["[[Existing]]"]`` so the two stay connected for `consolidate`, unless
  both are tagged and their tags put them on different subjects
  (:func:`vaultmem.scores.tagged_apart`): "the checkout service listens on port
  3100…" and "the notifications service listens on port 3100…" share most word runs but
  neither refines the other.

Where it looks: every note of the inbox and memory folders (and of the target folder),
plus the 10 best BM25 hits for the text anywhere in the vault when an index exists.
Forgotten, archived and superseded notes are not candidates: remembering something again
should bring it back as a new memory, not reinforce a note that is hidden or outdated.
When an embedder is given and the vault has vectors for it, the text is also embedded
and its nearest fragments looked up: a note whose fragment has cosine ≥ 0.92 with the
text is a near duplicate too. The embedder loads only when no exact duplicate was found,
so re-remembering a known fact stays a fast hook call.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import PurePosixPath
from typing import Any

from vaultmem.atomic import create_new
from vaultmem.config import Config
from vaultmem.errors import (
    ConfigError,
    ConflictError,
    EndpointError,
    IndexStateError,
    NoteError,
)
from vaultmem.indexer import refresh_paths
from vaultmem.inference.base import Embedder
from vaultmem.lookup import note_names
from vaultmem.memory.notes import Reinforced, reinforce_locked
from vaultmem.memory.writeback import edit_notes_locked, locked, wikilink
from vaultmem.memory_state import RETIRED_STATUSES
from vaultmem.note import Note, read_note
from vaultmem.prompts import render_note
from vaultmem.scores import format_half_life, parse_half_life, tagged_apart, to_utc
from vaultmem.vault import LinkResolver, NoteName, note_path, strip_md, walk_notes
from vaultmem.vocabulary import DEFAULT_TYPE, NOTE_TYPES

__all__ = [
    "NEAR_DUPLICATE",
    "NearDuplicate",
    "Remembered",
    "candidate_paths",
    "Source",
    "content_key",
    "create_note",
    "derive_title",
    "remember",
    "shingle_similarity",
    "slugify",
    "target_folder",
    "unique_path",
]

TEMPLATE = "memory.md.j2"
NEAR_DUPLICATE = 0.65  # 3-word shingle Jaccard at or above which a memory refines another
NEAR_COSINE = 0.92  # fragment cosine at or above which a memory refines another
NEAR_NEIGHBOURS = 5
SHINGLE_WORDS = 3
LEXICAL_CANDIDATES = 10
SLUG_MAX = 60
TITLE_MAX = 60  # a title derived from the text: its first sentence or clause, this long at most
TITLE_MIN = 20  # ... and no shorter than this when a long sentence is cut at a clause

_H1_RE = re.compile(r"^ {0,3}#[ \t]+\S")
# Where a sentence ends: end punctuation before a space or the end (not "3.5", "v1.2").
_SENTENCE_END_RE = re.compile(r"[.!?…](?=\s|$)")
# Where a clause ends: after , ; : or before a spaced dash or a parenthesis.
_CLAUSE_END_RE = re.compile(r"[,;:](?=\s)|\s[—–-]\s|\s\(")
# A line that starts a new block, not a wrapped line of the first paragraph.
_BLOCK_START_RE = re.compile(r"^(?:[-*+>|#]|\d+[.)]\s|```|~~~)")
_LIST_MARK_RE = re.compile(r"^(?:[-*+>]\s+|\d+[.)]\s+)+")
_WIKILINK_RE = re.compile(r"!?\[\[([^\]|#]*)(?:#[^\]|]*)?(?:\|([^\]]*))?\]\]")
_MD_LINK_RE = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_TRAILING_RE = re.compile(r"[\s.,;:!?…—–(\[\"'“‘-]+$")
# Words a title cut at a word boundary should not end on.
_DANGLING_WORDS = "a an and as at because but by for if in of or so than that the to when with"
_DANGLING = frozenset(_DANGLING_WORDS.split())
# "e.g." and "etc." end no sentence.
_ABBREVIATIONS = frozenset(("approx", "cf", "etc", "incl", "vs"))
_EDGE_PUNCT_RE = re.compile(r"^[\W_]+|[\W_]+$")
_WORD_RE = re.compile(r"\w+")


# --------------------------------------------------------------------------- comparing


def strip_heading(text: str) -> str:
    """The text without a leading ``# heading`` line (the title is not the content)."""
    lines = text.strip().splitlines()
    if lines and _H1_RE.match(lines[0]):
        return "\n".join(lines[1:])
    return text


def content_key(text: str) -> str:
    """What two memories must share to be exact duplicates: the text without a leading
    ``# heading``, lower-cased, whitespace collapsed, punctuation stripped at both ends."""
    collapsed = " ".join(strip_heading(text).lower().split())
    return _EDGE_PUNCT_RE.sub("", collapsed)


def word_shingles(key: str) -> frozenset[tuple[str, ...]]:
    """The runs of consecutive words of a content key (all of them when it is shorter)."""
    words = _WORD_RE.findall(key)
    if len(words) < SHINGLE_WORDS:
        return frozenset([tuple(words)]) if words else frozenset()
    return frozenset(
        tuple(words[i : i + SHINGLE_WORDS]) for i in range(len(words) - SHINGLE_WORDS + 1)
    )


def shingle_similarity(a: str, b: str) -> float:
    """Jaccard of the 3-word shingles of two texts (after :func:`content_key`), 0–1."""
    sa, sb = word_shingles(content_key(a)), word_shingles(content_key(b))
    union = sa | sb
    return len(sa & sb) / len(union) if union else 0.0


@dataclass(frozen=True)
class NearDuplicate:
    """An existing note that a new memory refines, and how similar the two are."""

    path: str
    similarity: float
    kind: str = "shingles"  # or "cosine": found by the vector check


@dataclass(frozen=True)
class _Duplicates:
    exact: str | None
    near: tuple[NearDuplicate, ...]


def candidate_paths(config: Config, text: str, folder: str) -> Iterator[str]:
    """Notes that could hold the same memory: the short- and long-term folders (and the
    target one), then the best BM25 hits anywhere in the vault."""
    # The vault root as a folder would mean reading every note; BM25 covers that case.
    folders = {f for f in (config.inbox_folder, config.memory_folder, folder) if f}
    prefixes = tuple(f"{f}/" for f in folders)
    for f in walk_notes(config):
        if f.path.startswith(prefixes):
            yield f.path
    try:
        from vaultmem.retrieval.search import lexical_hits

        hits = lexical_hits(config, text[:2000], limit=LEXICAL_CANDIDATES)
    except IndexStateError:
        return  # never indexed: the folder scan is all there is
    for hit in hits:
        yield hit.path


def _read(config: Config, path: str) -> Note | None:
    try:
        return read_note(config.vault, path, config.keys)
    except NoteError:
        return None  # a malformed or vanished note cannot be a duplicate


def find_duplicates(config: Config, text: str, folder: str) -> _Duplicates:
    """The first exact duplicate of ``text`` and every near duplicate, most similar first."""
    key = content_key(text)
    mine = word_shingles(key)
    near: list[NearDuplicate] = []
    for path in dict.fromkeys(candidate_paths(config, text, folder)):
        note = _read(config, path)
        if note is None or note.status in RETIRED_STATUSES:
            continue
        theirs = content_key(note.body)
        if theirs == key:
            return _Duplicates(path, ())
        union = mine | word_shingles(theirs)
        similarity = len(mine & word_shingles(theirs)) / len(union) if union else 0.0
        if similarity >= NEAR_DUPLICATE:
            near.append(NearDuplicate(path, round(similarity, 4)))
    near.sort(key=lambda n: (-n.similarity, n.path))
    return _Duplicates(None, tuple(near))


def vector_duplicates(
    config: Config, text: str, embedder: Embedder, seen: Sequence[str] = ()
) -> list[NearDuplicate]:
    """Notes with a fragment at cosine ≥ 0.92 of ``text`` (none when there are no vectors).

    ``seen`` paths (already near duplicates by shingles) are left out.
    """
    from vaultmem.retrieval.vsearch import VectorIndex

    try:
        with VectorIndex(config, embedder) as index:
            vector = embedder.embed([text[:4000]])[0]
            hits = index.nearest_many([vector], limit=NEAR_NEIGHBOURS)[0]
    except (IndexStateError, EndpointError):
        return []  # no vectors yet, or the endpoint is down: the shingle check stands
    return [
        NearDuplicate(h.path, round(h.score, 4), "cosine")
        for h in hits
        if h.score >= NEAR_COSINE and h.path not in seen and h.status not in RETIRED_STATUSES
    ]


# --------------------------------------------------------------------------- naming


def slugify(text: str, *, max_words: int | None = None) -> str:
    """A file-name slug: lower-case words joined by ``-``, at most 60 characters.

    Letters of every script are kept (``渡辺-notes``); everything Obsidian cannot put in a
    link (``[]#^|:/\\``) is dropped. Empty input gives ``memory``.
    """
    words = [w.strip("_") for w in _WORD_RE.findall(text.lower())]
    words = [w for w in words if w][:max_words]
    slug = ""
    for word in words:
        longer = f"{slug}-{word}" if slug else word
        if len(longer) > SLUG_MAX:
            break
        slug = longer
    return slug or (words[0][:SLUG_MAX] if words else "memory")


def derive_title(text: str) -> str:
    """A short title for a memory given none: the text's own leading ``# heading``, else
    its first sentence, cut when longer than 60 characters at the last clause end
    (``,`` ``;`` ``:`` a spaced dash) that leaves at least 20, else at the last word
    boundary; links and emphasis marks become their text, and no punctuation is left at
    the end. "" for a text without words.

    Example:
        >>> derive_title("We moved sessions to Redis. Memcached lost them on every deploy.")
        'We moved sessions to Redis'
    """
    lines = text.strip().splitlines()
    if lines and _H1_RE.match(lines[0]):
        return _plain_words(lines[0].lstrip(" #"))
    paragraph: list[str] = []
    for line in (line.strip() for line in lines):
        if paragraph and (not line or _BLOCK_START_RE.match(line)):
            break
        if line and _WORD_RE.search(line) and not line.startswith(("```", "~~~")):
            paragraph.append(_LIST_MARK_RE.sub("", line) if not paragraph else line)
    first = _first_sentence(_plain_words(" ".join(paragraph)))
    if len(first) > TITLE_MAX:
        ends = [m.start() for m in _CLAUSE_END_RE.finditer(first)]
        ends = [end for end in ends if TITLE_MIN <= end <= TITLE_MAX]
        first = first[: ends[-1]] if ends else _cut_at_word(first)
    return _TRAILING_RE.sub("", first)


def _cut_at_word(text: str) -> str:
    """The first :data:`TITLE_MAX` characters of ``text`` without a word cut in two (a
    single longer word is cut) nor a last word that leaves it hanging ("for", "and")."""
    head = text[:TITLE_MAX]
    if _WORD_RE.fullmatch(text[TITLE_MAX - 1 : TITLE_MAX + 1]) and " " in head:
        head = head[: head.rindex(" ")]
    words = head.split()
    while len(words) > 1 and words[-1].lower() in _DANGLING:
        words.pop()
    return " ".join(words)


def _plain_words(text: str) -> str:
    """Markdown links as their text, no emphasis or code marks, whitespace collapsed."""
    text = _WIKILINK_RE.sub(lambda m: m.group(2) or m.group(1), text)
    text = _MD_LINK_RE.sub(lambda m: m.group(1), text)
    return " ".join(text.replace("`", "").replace("**", "").replace("*", "").split())


def _first_sentence(text: str) -> str:
    """Up to the first end of sentence ("e.g." and the like end none)."""
    for found in _SENTENCE_END_RE.finditer(text):
        word = text[: found.start()].rsplit(" ", 1)[-1]
        if "." in word or word.lower() in _ABBREVIATIONS:
            continue
        return text[: found.start()]
    return text


def target_folder(config: Config, folder: str | None, default: str | None = None) -> str:
    """The folder a new note goes to, vault-relative (``folder``, else ``default``, else
    the inbox); a path leaving the vault is refused (NoteError)."""
    raw = folder if folder is not None else default if default is not None else config.inbox_folder
    parts = PurePosixPath(raw.replace("\\", "/").strip("/")).parts
    if raw.startswith("/") or any(p in ("..", ".") for p in parts):
        raise NoteError(f"folder {raw!r}: give a folder inside the vault, relative to its root")
    return "/".join(parts)


def unique_path(
    config: Config,
    folder: str,
    slug: str,
    sep: str = "-",
    *,
    names: Sequence[NoteName] | None = None,
) -> str:
    """``folder/slug.md``, or ``slug-2.md``, ``slug-3.md``… when the name is taken
    (``sep`` joins the number: handoffs use a space, as their names have spaces).

    The one place a new note's name is chosen (`remember`, `extract`, `handoff`,
    `consolidate`). A name is taken when a file of that name is in ``folder``, or when
    ``[[name]]`` already means a note anywhere in the vault: a file name (any folder) or
    an alias (of an indexed note). Obsidian resolves a bare ``[[name]]`` by file name
    across folders, so a second ``slug-2.md`` elsewhere would take over the links to the
    first, or a merged note's ``supersedes: [[slug-2]]`` would point at itself.
    Compared case-insensitively, as Obsidian links are, and as macOS keeps one file.
    ``names``: the vault's note names, when the caller has them already (default: read).
    """
    where = config.vault / folder if folder else config.vault
    # Any file there, a note or not (an excluded one too): create_new would not clobber it.
    listing = where.iterdir() if where.is_dir() else ()
    taken = {p.name[:-3].lower() for p in listing if p.name.lower().endswith(".md")}
    for name in note_names(config) if names is None else names:
        # What LinkResolver matches a bare [[name]] against: file names, then aliases.
        taken.add(strip_md(name.path.rsplit("/", 1)[-1]).lower())
        taken.update(alias.strip().lower() for alias in name.aliases)
    stem, n = slug, 1
    while stem.lower() in taken:
        n += 1
        stem = f"{slug}{sep}{n}"
    path = f"{folder}/{stem}.md" if folder else f"{stem}.md"
    return note_path(config, path, write=True)


# --------------------------------------------------------------------------- writing


@dataclass(frozen=True)
class Source:
    """Where a captured memory came from, written as the owned keys ``source_session``,
    ``source_project`` and ``source_time`` (`extract` sets them; a note with a
    ``source_session`` counts as written by vaultmem, not by a person)."""

    session: str
    project: str | None = None
    said_at: datetime | None = None

    def keys(self) -> dict[str, Any]:
        """The frontmatter values (only those known)."""
        out: dict[str, Any] = {"source_session": self.session}
        if self.project:
            out["source_project"] = self.project
        if self.said_at is not None:
            out["source_time"] = to_utc(self.said_at).replace(microsecond=0)
        return out


@dataclass(frozen=True)
class Remembered:
    """What `remember` did.

    ``path`` is the new note, or for an exact duplicate the existing note (which was
    reinforced: ``reinforced``). ``refines`` lists the near duplicates linked from the new
    note; ``supersedes`` the note it replaced (now ``status: superseded``).
    """

    path: str
    created: bool
    duplicate_of: str | None = None
    reinforced: Reinforced | None = None
    refines: tuple[NearDuplicate, ...] = ()
    supersedes: str | None = None

    def as_json(self) -> dict[str, object]:
        """The ``--json`` shape of `remember`."""
        return {
            "path": self.path,
            "created": self.created,
            "duplicate_of": self.duplicate_of,
            "reinforced": self.reinforced.as_json() if self.reinforced else None,
            "refines": [
                {"path": n.path, "similarity": n.similarity, "kind": n.kind} for n in self.refines
            ],
            "supersedes": self.supersedes,
        }


def _clean_tags(tags: Sequence[str]) -> list[str]:
    """Tags as given (case kept), without ``#`` or blanks, first spelling of each kept."""
    out: dict[str, str] = {}
    for tag in tags:
        clean = tag.strip().lstrip("#").strip()
        if clean:
            out.setdefault(clean.lower(), clean)
    return list(out.values())


def _frontmatter(
    config: Config,
    *,
    now: datetime,
    title: str | None,
    tags: Sequence[str],
    note_type: str,
    links: dict[str, list[str]],
    source: Source | None = None,
) -> dict[str, Any]:
    """The new note's frontmatter values, in order."""
    try:
        half_life = format_half_life(parse_half_life(config.stm_half_life))
    except ValueError as exc:
        raise ConfigError(f"memory.stm_half_life: {exc}") from None
    meta: dict[str, Any] = {}
    if title:
        meta["title"] = title
    if tags:
        meta["tags"] = list(tags)
    meta["type"] = note_type
    meta["created"] = to_utc(now).replace(microsecond=0)
    meta["half_life"] = half_life
    meta["status"] = "active"
    if source is not None:
        meta.update(source.keys())
    meta.update({key: value for key, value in links.items() if value})
    return meta


def _append_link(meta: dict[Any, Any], key: str, link: str) -> list[str]:
    """The key's links with ``link`` added (a lone string becomes a list)."""
    value = meta.get(key)
    items = [value] if isinstance(value, str) else list(value or [])
    links = [str(v) for v in items if v is not None]
    return links if link in links else [*links, link]


def supersede(
    config: Config, old: str, new_link: str, *, new: str | None = None, old_link: str = ""
) -> None:
    """``old`` gets ``superseded_by: [new_link]`` and ``status: superseded``; an existing
    note ``new`` also gets ``supersedes: [old_link]`` (a new one has it already). Lock held.
    """

    def compute(path: str, meta: dict[Any, Any]) -> dict[str, object | None]:
        if path == old:
            links = _append_link(meta, "superseded_by", new_link)
            return {"superseded_by": links, "status": "superseded"}
        return {"supersedes": _append_link(meta, "supersedes", old_link)}

    edit_notes_locked(config, [old] if new is None else [new, old], compute)


def remember(
    config: Config,
    text: str,
    *,
    now: datetime,
    title: str | None = None,
    note_type: str | None = None,
    tags: Sequence[str] = (),
    folder: str | None = None,
    supersedes: str | None = None,
    embedder: Embedder | None = None,
    source: Source | None = None,
) -> Remembered:
    """Write ``text`` as a new short-term memory, or reinforce the note that already holds it.

    ``embedder``: also look for near duplicates by vector (see the module docstring).
    ``source``: where the memory was said (written into a new note only; an exact
    duplicate keeps its own).

    ``supersedes`` is the vault path of a note the new memory replaces. Everything runs
    under the vault lock; the written and edited notes are re-indexed before it is
    released, so `search` finds the memory at once. Raises ``ValueError`` for an empty text
    or an unknown type (the CLI validates both first), NoteError for a bad folder.

    Example:
        >>> remember(config, "No deploys on Fridays", now=now)  # doctest: +SKIP
    """
    body = text.strip()
    if not content_key(body):
        raise ValueError("nothing to remember: the text is empty")
    kind = (note_type or DEFAULT_TYPE).strip().lower()
    if kind not in NOTE_TYPES:
        raise ValueError(f"unknown type {note_type!r} (one of {', '.join(NOTE_TYPES)})")
    title = " ".join(title.split()) if title else None
    target = target_folder(config, folder)
    changed: list[str] = []
    with locked(config, "remember"):
        try:
            found = find_duplicates(config, body, target)
            if found.exact is not None:
                return _reinforce_duplicate(config, found.exact, now, supersedes, changed)
            near = found.near
            if embedder is not None:
                seen = [n.path for n in near]
                near = (*near, *vector_duplicates(config, body, embedder, seen))
            near = tuple(n for n in near if not _another_subject(config, n.path, tags))
            return _write_new(
                config,
                body,
                now=now,
                title=title,
                note_type=kind,
                tags=tags,
                folder=target,
                near=near,
                supersedes=supersedes,
                changed=changed,
                source=source,
            )
        finally:
            # Even after a failure half-way, what was written is searchable at once.
            refresh_paths(config, changed)


def _another_subject(config: Config, path: str, tags: Sequence[str]) -> bool:
    """Whether the note at ``path`` and a memory tagged ``tags`` are tagged on different
    subjects (untagged on either side: nothing says so)."""
    note = _read(config, path)
    return note is not None and tagged_apart(tags, note.tags)


def _reinforce_duplicate(
    config: Config, path: str, now: datetime, supersedes: str | None, changed: list[str]
) -> Remembered:
    """Reinforce the note that already holds the memory (and let it supersede ``supersedes``)."""
    changed.append(path)
    (done,) = reinforce_locked(config, [path], now)
    if supersedes is not None and supersedes != path:
        resolver = LinkResolver(note_names(config))
        link = wikilink(path, resolver)
        changed.append(supersedes)
        supersede(config, supersedes, link, new=path, old_link=wikilink(supersedes, resolver))
    else:
        supersedes = None
    return Remembered(path, False, duplicate_of=path, reinforced=done, supersedes=supersedes)


def _write_new(
    config: Config,
    body: str,
    *,
    now: datetime,
    title: str | None,
    note_type: str,
    tags: Sequence[str],
    folder: str,
    near: tuple[NearDuplicate, ...],
    supersedes: str | None,
    changed: list[str],
    source: Source | None = None,
) -> Remembered:
    """Write the new memory; ``changed`` collects what to re-index.

    Without a ``title`` one is derived from the text (:func:`derive_title`): the file is
    named after it and the note gets it as its ``# heading`` (unless the text starts with
    its own); only a given title goes into the frontmatter.
    """
    derived = title or derive_title(body)
    heading = title or (None if _H1_RE.match(body) else derived or None)
    slug = slugify(derived)
    names = note_names(config)
    path = unique_path(config, folder, slug, names=names)
    resolver = LinkResolver(names) if (near or supersedes) else None
    links: dict[str, list[str]] = {}
    if resolver is not None:
        links["refines"] = [wikilink(n.path, resolver) for n in near]
        if supersedes is not None:
            links["supersedes"] = [wikilink(supersedes, resolver)]
    meta = _frontmatter(
        config,
        now=now,
        title=title,
        tags=_clean_tags(tags),
        note_type=note_type,
        links=links,
        source=source,
    )
    raw = render_note(config, TEMPLATE, path, meta, title=heading, text=body)
    create_note(config, path, raw)
    changed.append(path)
    if supersedes is not None and resolver is not None:
        changed.append(supersedes)
        try:
            supersede(config, supersedes, wikilink(path, resolver))
        except BaseException:
            # The old note's frontmatter could not be edited: nothing stays written.
            (config.vault / path).unlink(missing_ok=True)
            changed.remove(path)
            raise
    return Remembered(path, True, refines=near, supersedes=supersedes)


def create_note(config: Config, path: str, raw: bytes) -> None:
    """Create the new note ``path`` (its folder too); a file that appeared at its path
    meanwhile is never clobbered (ConflictError)."""
    (config.vault / path).parent.mkdir(parents=True, exist_ok=True)
    try:
        create_new(config.vault / path, raw, path)
    except FileExistsError:
        raise ConflictError(f"{path}: a file appeared at this path meanwhile; try again") from None
