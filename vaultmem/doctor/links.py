"""`doctor`'s typed-link check: every ``supersedes``/``related``/… link must resolve, and
to another note.

A link that resolves to the note holding it says nothing and hides the note it meant:
a merged ``memory/x-2.md`` whose ``supersedes: [[x-2]]`` was written for ``inbox/x-2.md``
resolves to itself (Obsidian prefers the file in the linking note's own folder), so the
vault looked sound while the merge pointed nowhere (issue 19). The fix names the link
with its folder, which no other note can take.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from vaultmem.config import Config
from vaultmem.note import link_targets
from vaultmem.vocabulary import LINK_TYPES

if TYPE_CHECKING:
    from vaultmem.doctor.findings import Finding
    from vaultmem.index import manifest as mf

__all__ = ["SelfLink", "link_findings", "self_links"]


@dataclass(frozen=True)
class SelfLink:
    """A typed link (``type: "[[target]]"`` in ``path``) that resolves to ``path`` itself;
    ``others`` are the other notes ``[[target]]`` could mean (what it was written for)."""

    path: str
    type: str
    target: str
    others: tuple[str, ...] = ()


def self_links(config: Config, memory: Mapping[str, Mapping[str, Any]]) -> list[SelfLink]:
    """The typed links that resolve to the note that holds them.

    ``memory`` is path → owned keys of each indexed note (the manifest's ``Entry.memory``);
    links resolve as `links` resolves them (:func:`~vaultmem.lookup.note_names`).
    """
    from vaultmem.lookup import note_names
    from vaultmem.vault import LinkResolver

    resolver = LinkResolver(note_names(config))
    found = []
    for path, keys in sorted(memory.items()):
        for link_type in LINK_TYPES:
            for target in link_targets(keys.get(link_type)):
                if resolver.resolve_link(target, path) == path:
                    others = tuple(p for p in resolver.link_candidates(target) if p != path)
                    found.append(SelfLink(path, link_type, target, others))
    return found


def _fix(link: SelfLink) -> str:
    if len(link.others) == 1:
        meant = link.others[0].removesuffix(".md")
        return f'write it with its folder: {link.type}: ["[[{meant}]]"]'
    return "point the link at the note it means (with its folder), or remove it"


def link_findings(config: Config, entries: Mapping[str, mf.Entry]) -> list[Finding]:
    """The ``links`` findings: dangling typed links, typed links to the note itself, or
    one ``ok``."""
    from vaultmem.doctor.findings import Finding
    from vaultmem.memory.links import dangling_links

    memory = {p: e.memory for p, e in entries.items()}
    found = [
        Finding(
            "links",
            "warn",
            f"{d.path}: {d.type}: [[{d.target}]] resolves to no note",
            fix="create the note, or remove the link from the frontmatter",
        )
        for d in dangling_links(config, memory)
    ]
    found += [
        Finding(
            "links",
            "warn",
            f"{s.path}: {s.type}: [[{s.target}]] resolves to the note itself",
            fix=_fix(s),
        )
        for s in self_links(config, memory)
    ]
    return found or [Finding("links", "ok", "every typed link resolves to another note")]
