"""The closed vocabularies of a note's memory (SPEC §4): its types, each type's default
half-life, and the typed links; and the named surfacing profiles.

The ground floor: the request models (:mod:`vaultmem.model`) check a type against these,
and the formulas (:mod:`vaultmem.scores`) read the half-lives; both import this module,
which imports nothing of vaultmem.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

DEFAULT_TYPE = "note"
DEFAULT_HALF_LIVES: dict[str, timedelta | None] = {
    "decision": None,
    "hub": None,
    "antipattern": None,
    "preference": None,
    "project": timedelta(days=120),
    "research": timedelta(days=90),
    "note": timedelta(days=60),
    "progress": timedelta(days=45),
    "handoff": timedelta(days=30),
    "observation": timedelta(days=14),
}
NOTE_TYPES: tuple[str, ...] = tuple(DEFAULT_HALF_LIVES)
# Durable = never-decaying by type; such notes are never garbage-collected, whatever
# half-life their frontmatter happens to carry (e.g. a short-term one from `remember`).
DURABLE_TYPES: frozenset[str] = frozenset(t for t, h in DEFAULT_HALF_LIVES.items() if h is None)

# The rule keys: written by people, never by vaultmem, which reads them at the moment of
# action (`hook pre-tool`, :mod:`vaultmem.agent.rules`). ``applies_to``: globs or command
# words naming where a note applies; ``enforce``: what a matching tool call gets besides
# the note (deny: blocked with the note as the reason; ask: the user is asked).
RULE_KEYS: tuple[str, ...] = ("applies_to", "enforce")
ENFORCE_VALUES: tuple[str, ...] = ("deny", "ask")

# The closed vocabulary of typed links (frontmatter keys holding "[[Note]]" lists), in
# the order of vaultmem's owned keys.
LINK_TYPES: tuple[str, ...] = (
    "supersedes",
    "superseded_by",
    "related",
    "refines",
    "duplicate_of",
    "caused_by",
    "fixed_by",
    "contradicts",
    "promoted_from",
)
# How each link type reads from the note it points at: a note that another's backlink
# reaches `via` a type is, to that note, its inverse ("A fixed_by B": B fixes A).
LINK_INVERSES: dict[str, str] = {
    "supersedes": "superseded_by",
    "superseded_by": "supersedes",
    "related": "related",
    "refines": "refined_by",
    "duplicate_of": "duplicated_by",
    "caused_by": "causes",
    "fixed_by": "fixes",
    "contradicts": "contradicts",
    "promoted_from": "promoted_to",
}


@dataclass(frozen=True)
class SurfaceProfile:
    """A named surfacing budget: the most ``tokens`` (chars / 4) and ``notes`` a block
    holds, and the ``floor`` the speak decision's margin must clear (0: as fit on the
    benchmark; above 0 speaks less often, below 0 more)."""

    name: str
    tokens: int
    notes: int
    floor: float


# Chosen on split A of benchmarks/data/surface_prompts.jsonl (BENCHMARKS.md, issue 22):
# quiet keeps abstention >= 0.90 in both modes, deep trades abstention for the notes a
# longer block reaches; normal is what the speak decision was fit for.
SURFACE_PROFILES: dict[str, SurfaceProfile] = {
    p.name: p
    for p in (
        SurfaceProfile("quiet", tokens=400, notes=2, floor=0.5),
        SurfaceProfile("normal", tokens=800, notes=3, floor=0.0),
        SurfaceProfile("deep", tokens=2000, notes=5, floor=-0.5),
    )
}
DEFAULT_SURFACE_PROFILE = "normal"
