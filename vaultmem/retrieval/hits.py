"""Values passed between the retrieval layer and the CLI."""

from __future__ import annotations

from dataclasses import dataclass

# Notes in these states never appear in results unless asked for by --status.
HIDDEN_STATUSES = ("forgotten", "archived")


@dataclass(frozen=True)
class Filters:
    """Restrictions every search command accepts (all optional)."""

    folder: str | None = None
    tag: str | None = None
    type: str | None = None
    status: str | None = None
    collection: str | None = None


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

    def as_json(self) -> dict[str, object]:
        """The ``--json`` shape: one object per line."""
        extra: dict[str, object] = {} if self.line_end is None else {"line_end": self.line_end}
        return {
            "path": self.path,
            "title": self.title,
            "score": round(self.score, 6),
            "snippet": self.snippet,
            "line": self.line,
            "type": self.type,
            "status": self.status,
            "review": self.review,
            **extra,
        }
