"""`fragment_choice`: the fragment of each candidate note the later query stages read.

The reranker scores it, MMR compares it and the result shows it: the fragment the best
vector hit named, else the one sharing most query words (:func:`choose_fragment`), cut
from the embed sweep's fragment cache where it can be (:class:`Fragments`), and the
line of it a hit shows (:func:`fragment_snippet`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from vaultmem.config import Config
from vaultmem.errors import NoteError
from vaultmem.index.analysis import analyse
from vaultmem.retrieval.snippets import MAX_SNIPPET, best_line, is_tag_line

if TYPE_CHECKING:
    from vaultmem.index.manifest import Entry

__all__ = [
    "DEFAULT_FRAGMENT_CHARS",
    "Fragments",
    "Piece",
    "choose_fragment",
    "fragment_snippet",
]

# Fragment size when no embedder says otherwise: the in-process MiniLM's (see local.py).
DEFAULT_FRAGMENT_CHARS = 1000


@dataclass(frozen=True)
class Piece:
    """One fragment of a note: its file line span and the text the reranker reads."""

    start_line: int
    end_line: int
    text: str


class Fragments:
    """The fragments of candidate notes, from the embed sweep's cache where it has them.

    The fragment rows in the manifest (keyed by note content hash) give line spans without
    parsing markdown, ~10x cheaper per note than splitting it again; a note it lacks (no
    embedder, or edited since the last sweep) is split here, as the sweep would split it.
    """

    def __init__(self, config: Config, max_chars: int) -> None:
        from vaultmem.index.records import FragmentCache

        self.config = config
        self.max_chars = max_chars
        self.cache = FragmentCache.load(config.cache_dir, max_chars)
        self._entries: dict[str, Entry] = {}

    def prefetch(self, paths: Sequence[str]) -> None:
        """Read the manifest rows of ``paths`` at once (one connection, not one each)."""
        from vaultmem.index import manifest as mf

        # The candidates' rows only: loading every entry would cost a big vault a second.
        none: dict[str, Entry] = {}
        self._entries.update(mf.read(self.config.cache_dir, none, lambda s: s.get_many(paths)))

    def of(self, path: str) -> list[Piece]:
        """The note's fragments in order (empty when it cannot be read)."""
        from vaultmem.index import manifest as mf

        entry = self._entries.get(path) or mf.get_entry(self.config.cache_dir, path)
        refs = self.cache.get(entry.hash) if entry is not None else None
        if not refs:
            return self._split(path)
        try:
            text = (self.config.vault / path).read_text("utf-8-sig", errors="replace")
        except OSError:
            return []
        lines = text.splitlines()
        title = entry.title if entry is not None else ""
        pieces = []
        for ref in refs:
            # The same "Title > Heading" line the embedded text starts with.
            head = ref.heading if ref.heading.startswith(title) else f"{title} > {ref.heading}"
            body = "\n".join(lines[ref.start_line - 1 : ref.end_line])
            pieces.append(Piece(ref.start_line, ref.end_line, f"{head.strip(' >')}\n{body}"))
        return pieces

    def _split(self, path: str) -> list[Piece]:
        from vaultmem.index.records import note_fragments
        from vaultmem.note import parse_note

        try:
            raw = (self.config.vault / path).read_bytes()
            note = parse_note(path, raw, keys=self.config.keys)
            frags = note_fragments(note, self.max_chars)
        except (OSError, NoteError, ValueError):
            return []
        return [Piece(f.start_line, f.end_line, f.text) for f in frags]


def choose_fragment(
    frags: Sequence[Piece], span: tuple[int, int] | None, terms: set[str]
) -> tuple[Piece | None, str]:
    """The fragment a vector hit named, else the one sharing most query/intent words."""
    if not frags:
        return None, "none"
    if span is not None:
        for frag in frags:
            if (frag.start_line, frag.end_line) == span:
                return frag, "vector"
    # max() keeps the first of equal counts: ties go to the earlier fragment.
    best = max(frags, key=lambda f: len(terms & set(analyse(f.text))))
    return best, "lexical"


def fragment_snippet(
    config: Config, path: str, frag: Piece | None, terms: list[str]
) -> tuple[str, int, int | None]:
    """``(text, line, line_end)``: the fragment's best matching line, else its text."""
    if frag is None:
        return "", 0, None
    try:
        lines = (config.vault / path).read_text("utf-8-sig", errors="replace").splitlines()
    except OSError:
        return "", 0, None
    window = lines[: frag.end_line]
    best = best_line(window, terms, first_line=frag.start_line)
    raw = window[best.line - 1] if 0 < best.line <= len(window) else ""
    if set(analyse(raw)) & set(terms) and not is_tag_line(raw):
        return best.text, best.line, best.line
    # No query word in the fragment (a paraphrase hit): show its words, as vsearch does.
    span = [ln for ln in lines[frag.start_line - 1 : frag.end_line] if ln.strip()]
    prose = [ln for ln in span if not ln.lstrip().startswith("#")] or span
    text = " ".join(" ".join(prose).split())
    if len(text) > MAX_SNIPPET:
        text = text[: MAX_SNIPPET - 1].rstrip() + "…"
    return text, frag.start_line, frag.end_line
