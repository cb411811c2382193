"""Contradiction checks for a new memory, offline: does it say the opposite of an existing
decision, or replace it? (issue 31)

A new decision, preference or antipattern is compared with the live notes of those types
in the inbox and memory folders and among the BM25 hits for its text (and, when an
embedder is given, with their vectors too):

- **same subject** (the old note's title and first 400 characters, :data:`STATEMENT_CHARS`):
  at least two content words shared (:mod:`vaultmem.subjects`) and an
  overlap coefficient of at least :data:`SAME_SUBJECT` (shared words over the smaller
  set), and, when an embedder is given, a cosine of at least :data:`SAME_SUBJECT_COSINE`;
- **opposite or replaced**: the new text has a replacement cue ("instead of", "no
  longer", "not X", "switch to", "from now on", "statt", "en lugar de", "au lieu de"…),
  one of the two is negated and the other not ("never…" against "always…"), or each
  names something the other does not (``RQ`` against ``Celery``, ``Postgres 15`` against
  ``Postgres 16``).

Then the new note links ``contradicts`` (which lowers the older note's confidence by
0.25, floor 0.2, :func:`vaultmem.confidence.contradicted`; `unlink` gives it back) and
carries a ``needs_review`` line that `review` lists. It links ``supersedes`` instead
(the old note becomes ``status: superseded``) only on strong evidence: the same subject,
a replacement cue whose words name something of the old note ("…, not black", "instead
of Celery"), and an old note vaultmem wrote itself.

**Who wrote a note.** A note carrying ``source_session`` (an owned key only `extract`
writes) was written by vaultmem from a session; every other note counts as a person's.
vaultmem never supersedes a person's note on its own inference: strong evidence against
one becomes ``contradicts`` plus a review line. An LLM's claim that a memory replaces a
note is never enough alone: it supersedes only when these offline checks find the
strong evidence too (and the note is vaultmem's); otherwise the two notes are linked
``related`` and the claim is left for review.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from vaultmem.config import Config
from vaultmem.errors import EndpointError, NoteError, VaultmemError
from vaultmem.note import Note, read_note
from vaultmem.subjects import content_words, overlap

if TYPE_CHECKING:
    from vaultmem.inference.base import Embedder

__all__ = [
    "DURABLE_KINDS",
    "SAME_SUBJECT",
    "SAME_SUBJECT_COSINE",
    "Verdict",
    "apply_verdicts",
    "judge",
    "judge_pair",
    "written_by_vaultmem",
]

DURABLE_KINDS = frozenset({"decision", "preference", "antipattern"})
SAME_SUBJECT = 0.5
SAME_SUBJECT_COSINE = 0.4
NEAR_SAME = 0.75  # word overlap at which a lone negation makes two texts opposites
STATEMENT_CHARS = 400
MAX_VERDICTS = 2  # the notes closest in words a new memory is checked against
_LIVE = frozenset({"active", "promoted"})

# Cues that name what is replaced right after them ("…, not black", "instead of Celery",
# "no longer X", "switch from X"), and cues that name what replaces it ("from now on Y",
# "switch to Y", "ab sofort Y").
_REPLACED_RE = re.compile(
    r"\binstead of\b|\bno longer(?: use)?\b|\breplac\w*\b|\bswitch\w* (?:away )?from\b"
    r"|\bmov\w* (?:off|away from)\b|\bmigrat\w* (?:away )?from\b|\bdrop\w*\b|\bscrap\w*\b"
    r"|\brather than\b|\bstop using\b|\bprefer\w*\b.{1,40}?\bover\b"
    r"|[,;(—–-]\s*(?:not|never|no|nicht|kein|pas)\b"
    r"|\b(?:an)?statt\b|\bnicht mehr\b|\ben (?:lugar|vez) de\b|\bya no\b|\bau lieu de\b"
    r"|\bplutôt que\b|\bne \w+ plus\b",
    re.IGNORECASE,
)
_REPLACING_RE = re.compile(
    r"\binstead\b(?! of)|\bfrom now on\b|\bgoing forward\b|\bswitch\w*\b.{0,30}?\bto\b"
    r"|\bmigrat\w* to\b|\bmov\w* to\b|\bstattdessen\b|\bab (?:sofort|jetzt)\b|\bnur noch\b"
    r"|\ba partir de ahora\b|\bdésormais\b|\bà partir de maintenant\b",
    re.IGNORECASE,
)
_OBJECT_CHARS = 40  # how far after a cue its object is looked for
_NEGATION_RE = re.compile(
    r"\b(?:never|don'?t|do not|doesn'?t|does not|no|not|avoid|stop|nie|niemals|nicht|kein\w*|"
    r"nunca|jamás|jamais|ne)\b",
    re.IGNORECASE,
)
# A name in a sentence: a capitalised word that does not open it, an all-caps word, a word
# with a digit, a dotted, slashed or underscored identifier, or anything in backticks.
_NAME_RE = re.compile(r"`[^`]+`|\b[\w.+/-]*\d[\w.+/-]*\b|\b[A-Z][\w.+/-]*|\b\w+[._/]\w[\w._/]*")
_SENTENCE_START_RE = re.compile(r"(?:^|[.!?:;]\s+)(\w+)")


@dataclass(frozen=True)
class Verdict:
    """What a new memory is to an existing note: ``relation`` "supersedes",
    "contradicts" or "related" (a claim not acted on), and ``review`` the line for
    ``needs_review`` ("" when nothing needs a look)."""

    path: str
    relation: str
    review: str = ""
    reason: str = ""

    def as_json(self) -> dict[str, str]:
        """``{path, relation, reason}``."""
        return {"path": self.path, "relation": self.relation, "reason": self.reason}


def written_by_vaultmem(meta: Any) -> bool:
    """Whether a note's owned keys say vaultmem wrote it from a session (``source_session``)."""
    value = meta.get("source_session") if hasattr(meta, "get") else None
    return isinstance(value, str) and bool(value.strip())


def _names(text: str) -> frozenset[str]:
    """The names ``text`` mentions, lower-cased (see :data:`_NAME_RE`)."""
    openers = {m.start(1) for m in _SENTENCE_START_RE.finditer(text)}
    found = set()
    for m in _NAME_RE.finditer(text):
        token = m.group(0).strip("`").strip(".,;:()")
        if m.start() in openers and token[:1].isupper() and token[1:].islower():
            continue  # "Use …", "We …": capitalised only for opening the sentence
        if len(token) >= 2 and any(c.isalpha() for c in token):
            found.add(token.lower())
    return frozenset(found)


def _negated(text: str) -> bool:
    return _NEGATION_RE.search(text) is not None


@dataclass(frozen=True)
class _Pair:
    """Why two texts are on the same subject, and how they differ."""

    same: bool
    replaces: bool
    strong: bool
    opposite: bool
    why: str


def judge_pair(new: str, old: str, cosine: float | None = None) -> _Pair:
    """How the new text ``new`` relates to the existing ``old`` (pure; see the module
    docstring). ``cosine``: their vectors' similarity, when known.

    Example:
        >>> judge_pair("Use ruff for formatting, not black.", "Use black for formatting.").strong
        True
    """
    mine, theirs = content_words(new), content_words(old)
    shared = mine & theirs
    similar = overlap(mine, theirs)
    same = len(shared) >= 2 and similar >= SAME_SUBJECT
    if cosine is not None:
        same = same and cosine >= SAME_SUBJECT_COSINE
    if not same:
        return _Pair(False, False, False, False, "")
    names_new, names_old = _names(new), _names(old)
    # Replaced: a cue whose object the old note affirms (and does not itself reject:
    # two notes that both say "instead of polling" replace nothing of each other).
    affirmed = theirs - _objects(old, _REPLACED_RE)
    strong = bool(_objects(new, _REPLACED_RE) & affirmed)
    # Replacing: a cue naming something new, that the old note does not name.
    replacing = bool(_objects(new, _REPLACING_RE) - theirs)
    replaces = strong or replacing
    differ = _same_slot(new, names_new - names_old, old, names_old - names_new)
    polarity = _negated(new) != _negated(old) and similar >= NEAR_SAME
    opposite = replaces or polarity or differ
    why = (
        "says it replaces it"
        if replaces
        else "says the opposite"
        if polarity
        else f"names {', '.join(sorted(names_new - names_old)[:3])} instead of "
        f"{', '.join(sorted(names_old - names_new)[:3])}"
    )
    return _Pair(True, replaces, strong, opposite, why)


def _around(text: str, name: str) -> frozenset[str]:
    """The content word nearest to ``name`` in ``text`` on each side."""
    words = [w.lower().strip(".,;:()") for w in re.findall(r"[\w.+/-]+", text)]
    out: set[str] = set()
    for i, word in enumerate(words):
        if word != name:
            continue
        for side in (reversed(words[:i]), words[i + 1 :]):
            near = [w for w in (next(iter(content_words(x)), "") for x in side) if w][:1]
            out.update(near)
    return frozenset(out)


def _same_slot(new: str, mine: frozenset[str], old: str, theirs: frozenset[str]) -> bool:
    """Whether a name only the new text has stands where a name only the old one has
    ("RQ for background jobs" against "Celery for background jobs"; not "Kafka for the
    api queue" against "Redis for the worker queue")."""
    return any(_around(new, a) & _around(old, b) - mine - theirs for a in mine for b in theirs)


def _objects(text: str, cues: re.Pattern[str]) -> frozenset[str]:
    """The content words right after each cue of ``cues`` in ``text``."""
    out: set[str] = set()
    for m in cues.finditer(text):
        out |= content_words(text[m.end() : m.end() + _OBJECT_CHARS])
    return frozenset(out)


def _candidates(config: Config, new_path: str, text: str) -> list[Note]:
    """The live durable notes that could be on the subject of ``text``: those of the
    inbox and memory folders, and the best BM25 hits anywhere (as `remember` looks for
    duplicates), the new note itself left out."""
    from vaultmem.memory.remember import candidate_paths

    notes = []
    for path in dict.fromkeys(candidate_paths(config, text, config.inbox_folder)):
        if path == new_path:
            continue
        try:
            note = read_note(config.vault, path, config.keys)
        except NoteError:
            continue
        if note.status in _LIVE and note.type in DURABLE_KINDS:
            notes.append(note)
    return notes


def _statement(note: Note) -> str:
    """What a note states, for comparing subjects: its title and the start of its body (a
    long note shares a few words with almost anything)."""
    return f"{note.title}\n{note.body[:STATEMENT_CHARS]}"


def _cosines(embedder: Embedder | None, text: str, notes: Sequence[Note]) -> list[float | None]:
    """Cosine of ``text`` with each note's statement (None each without an embedder)."""
    if embedder is None or not notes:
        return [None] * len(notes)
    try:
        vectors = embedder.embed([text[:1000], *(_statement(n) for n in notes)])
    except (EndpointError, VaultmemError, OSError):
        return [None] * len(notes)
    head = vectors[0]
    return [float(sum(a * b for a, b in zip(head, v, strict=False))) for v in vectors[1:]]


def judge(
    config: Config,
    new_path: str,
    text: str,
    kind: str,
    *,
    embedder: Embedder | None = None,
    claim: str | None = None,
) -> list[Verdict]:
    """What the new memory at ``new_path`` (its ``text`` and ``kind``) is to the notes
    already there: the notes it contradicts or supersedes, and what becomes of a model's
    ``claim`` (the vault path of a note it says the memory replaces).

    Example:
        >>> judge(config, "inbox/rq.md", "Go with RQ, not Celery.", "decision")  # doctest: +SKIP
        [Verdict(path='inbox/use-celery.md', relation='supersedes', ...)]
    """
    verdicts: dict[str, Verdict] = {}
    if kind in DURABLE_KINDS:
        # Words first (cheap, every candidate), then vectors for those that pass; the
        # closest few only: a new decision replaces one thing, not a whole folder.
        words = content_words(text)
        near = [
            n for n in _candidates(config, new_path, text) if judge_pair(text, _statement(n)).same
        ]
        near.sort(key=lambda n: (-overlap(words, content_words(_statement(n))), n.path))
        near = near[:MAX_VERDICTS]
        for note, cosine in zip(near, _cosines(embedder, text, near), strict=True):
            pair = judge_pair(text, _statement(note), cosine)
            if pair.same and pair.opposite:
                verdicts[note.path] = _verdict(note, pair)
    if claim is not None and claim != new_path:
        verdicts[claim] = _claimed(config, claim, text, verdicts.get(claim))
    return list(verdicts.values())


def _verdict(note: Note, pair: _Pair) -> Verdict:
    if pair.strong and written_by_vaultmem(note.owned):
        return Verdict(note.path, "supersedes", reason=pair.why)
    if pair.strong:
        return Verdict(
            note.path,
            "contradicts",
            review="may replace {link}, a note a person wrote: link -t supersedes or unlink",
            reason=f"{pair.why} (a person's note: not superseded)",
        )
    return Verdict(
        note.path,
        "contradicts",
        review="contradicts {link}: keep one (link -t supersedes) or unlink",
        reason=pair.why,
    )


def _claimed(config: Config, path: str, text: str, found: Verdict | None) -> Verdict:
    """A model's claim that the memory replaces ``path``: kept only when the offline
    checks found the same (strong evidence on a note vaultmem wrote)."""
    if found is not None and found.relation == "supersedes":
        return found
    try:
        note = read_note(config.vault, path, config.keys)
    except NoteError:
        return Verdict(path, "related", reason="the model's claim names an unreadable note")
    who = "a person's note" if not written_by_vaultmem(note.owned) else "no strong evidence"
    review = "the model says this replaces {link}; not applied (" + who + ")"
    if found is not None:  # contradicts: keep that link, and say what the model claimed
        return Verdict(path, "contradicts", review=review, reason=found.reason)
    return Verdict(path, "related", review=review, reason=f"the model's claim alone ({who})")


def apply_verdicts(
    config: Config, new_path: str, verdicts: Sequence[Verdict], related: Sequence[str] = ()
) -> list[str]:
    """Write the verdicts, and ``related`` links to ``related`` notes: the links (through
    :func:`vaultmem.memory.links.link_all`, which lowers the older note's confidence for
    ``contradicts`` and marks a superseded note), then the review lines on the new note,
    all under one lock and one re-index. Returns the notes changed."""
    from vaultmem.lookup import note_names
    from vaultmem.memory.links import link_all
    from vaultmem.memory.writeback import wikilink
    from vaultmem.vault import LinkResolver

    targets = [(p, "related") for p in related if p not in {v.path for v in verdicts}]
    targets += [(v.path, v.relation) for v in verdicts]
    lines = [v for v in verdicts if v.review]
    flag = None
    if lines:
        resolver = LinkResolver(note_names(config))
        reviews = [v.review.format(link=wikilink(v.path, resolver)) for v in lines]

        def flag(_path: str, meta: dict[Any, Any]) -> dict[str, object | None]:
            have = meta.get("needs_review")
            items = [have] if isinstance(have, str) else list(have or [])
            return {"needs_review": [*items, *(r for r in reviews if r not in items)]}

    if not targets and flag is None:
        return []
    changed: list[str] = [new_path] if flag is not None else []
    for done in link_all(config, new_path, targets, flag):
        changed.extend(p for p in done.written if p not in changed)
    return changed
