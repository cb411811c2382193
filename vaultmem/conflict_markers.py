"""Git conflict markers left in a note: a merge that nobody finished.

A region is what git writes for a conflict: a ``<<<<<<<`` line, later a ``=======`` line,
later a ``>>>>>>>`` line (``|||||||`` opens the base's part in the diff3 style), each of
seven characters at the start of a line, the first and last optionally followed by a
space and a label. Lines inside a fenced code block (````` or ``~~~``) are not markers: a
note about git may show a conflict as an example. A ``=======`` line alone is a markdown
heading underline, so only a whole region counts.

Every reader and writer refuses such a note through :func:`vaultmem.frontmatter.scan.parse_meta`
(so `index`, `touch` and `get` say the same thing), and `doctor` names the command that
settles it.
"""

from __future__ import annotations

import re

__all__ = ["RESOLVE_HINT", "conflict_line", "conflict_regions"]

# How a person settles a region: what every refusal ends with.
RESOLVE_HINT = (
    "keep the right lines of each <<<<<<< … >>>>>>> region and delete the marker lines, "
    "then `git add` the note (`vaultmem doctor` names the command)"
)

_START_RE = re.compile(r"<{7}(?: .*)?\Z")
_BASE_RE = re.compile(r"\|{7}(?: .*)?\Z")
_MIDDLE_RE = re.compile(r"={7}\Z")
_END_RE = re.compile(r">{7}(?: .*)?\Z")
_FENCE_RE = re.compile(r" {0,3}(`{3,}|~{3,})")
_BREAK_RE = re.compile(r"\r\n|\r|\n")


def conflict_regions(text: str) -> list[tuple[int, int]]:
    """The conflict regions of ``text`` as (first, last) 0-based line indexes: the
    ``<<<<<<<`` line and the ``>>>>>>>`` line, outside fenced code blocks."""
    regions: list[tuple[int, int]] = []
    fence: str | None = None
    start: int | None = None
    middle = False
    for i, line in enumerate(_BREAK_RE.split(text)):
        opened = _FENCE_RE.match(line)
        if start is None and opened is not None:
            mark = opened.group(1)
            if fence is None:
                fence = mark
            elif mark[0] == fence[0] and len(mark) >= len(fence) and not line.strip(" `~"):
                fence = None
            continue
        if fence is not None:
            continue
        if _START_RE.match(line):
            start, middle = i, False
        elif start is not None and _MIDDLE_RE.match(line):
            middle = True
        elif start is not None and _BASE_RE.match(line):
            continue
        elif start is not None and middle and _END_RE.match(line):
            regions.append((start, i))
            start = None
    return regions


def conflict_line(text: str) -> int | None:
    """The 1-based line of the first conflict region's ``<<<<<<<`` (None: there is none).

    Cheap for the usual note: nothing is split unless ``<<<<<<<`` occurs at all.
    """
    if "<<<<<<<" not in text:
        return None
    regions = conflict_regions(text)
    return regions[0][0] + 1 if regions else None
