"""Where each top-level key of the frontmatter text lives.

Edits are made on the text, not by re-serialising the YAML, so the editor needs each owned
key's extent (its line through the last line of its value, located with PyYAML's event
marks) and the comments around it (:func:`key_layout`). :func:`owned_lines` gives those
lines to the merge driver; :func:`duplicate_keys` warns of a top-level key written twice.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from vaultmem.errors import NoteError
from vaultmem.frontmatter.scan import (
    Parts,
    file_line,
    loaders,
    mark_offset,
    yaml_error_index,
    yaml_problem,
)
from vaultmem.properties import BARE

__all__ = ["OwnedLines", "duplicate_keys", "frontmatter_lines", "owned_lines"]

# The tags of a key vaultmem may own: a plain or explicitly string-tagged scalar.
_STR_TAGS = (None, "!", "tag:yaml.org,2002:str")

# A key line that opens a block scalar keeping its trailing blank lines (``key: |+``).
KEEP_HEADER_RE = re.compile(r":[ \t]*[|>](?:[1-9]?\+|\+[1-9]?)[ \t]*(?:#.*)?$")


@dataclass(frozen=True)
class Extent:
    """Lines ``first..last`` (0-based, inclusive, within the frontmatter) of one top-level
    owned key: its key line through the last line of its value."""

    key: str
    first: int
    last: int


@dataclass(frozen=True)
class _Comment:
    """A comment ending line ``line``: ``suffix`` is the line from the blanks before ``#``
    to the end (no line break); ``alone`` when nothing but blanks precedes it."""

    line: int
    suffix: str
    alone: bool


@dataclass
class Layout:
    lines: list[str]
    extents: list[Extent] = field(default_factory=list)
    comments: dict[int, _Comment] = field(default_factory=dict)
    indent: str = ""


_LINE_RE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def _split_lines(text: str) -> list[str]:
    """Lines with their endings kept, split on LF, CRLF and CR (YAML's line breaks).

    ``str.splitlines`` would also split on U+2028, form feeds and friends, which are
    ordinary characters inside a line of the file.
    """
    return _LINE_RE.findall(text)


def line_content(line: str) -> str:
    """The line without its line break."""
    return line.rstrip("\r\n")


def _node_end(events: list[Any], i: int) -> tuple[int, int]:
    """Consume the node starting at ``events[i]``; return (next index, end offset).

    The end offset is that of the node's last real character. Block collections are
    closed by a BlockEnd whose mark sits at the *next* token (past comments and blank
    lines), so their end is taken from their last child instead. Iterative, so deeply
    nested user values cannot hit the recursion limit.
    """
    import yaml

    end = 0
    flows: list[bool] = []
    while True:
        event = events[i]
        i += 1
        if isinstance(event, (yaml.ScalarEvent, yaml.AliasEvent)):
            end = max(end, mark_offset(event.end_mark))
        elif isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            end = max(end, mark_offset(event.end_mark))
            flows.append(bool(event.flow_style))
        elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
            if flows.pop():
                end = max(end, mark_offset(event.end_mark))
        else:
            raise ValueError(f"unexpected YAML event {type(event).__name__}")
        if not flows:
            return i, end


_BLOCK_HEADER_RE = re.compile(r"[|>][-+0-9]*")


def line_comments(text: str, lines: list[str], events: list[Any]) -> dict[int, _Comment]:
    """The comments of the frontmatter, by line.

    Comments are what the parser drops, so they are found as the text no event covers:
    after the furthest event end reached on a line only blanks, indicators (``:``, ``-``,
    ``,``, ``?``) and a comment can remain, and none of those contains ``#``. Scalars,
    anchors, tags and aliases are inside their events' spans, so a ``#`` in a quoted
    string or a block scalar is never taken for a comment (a block scalar's header line,
    ``|  # why``, is covered only up to its indicators).
    """
    import yaml

    comments: dict[int, _Comment] = {}
    reach = 0
    e = 0
    start = 0
    for i, line in enumerate(lines):
        end = start + len(line_content(line))
        later = 0  # a block scalar covers its header line only up to its indicators
        while e < len(events) and mark_offset(events[e].start_mark) < end:
            event = events[e]
            header = None
            if isinstance(event, yaml.ScalarEvent) and event.style in ("|", ">"):
                header = _BLOCK_HEADER_RE.search(text, mark_offset(event.start_mark), end)
            if header is None:
                reach = max(reach, mark_offset(event.end_mark))
            else:
                reach, later = max(reach, header.end()), max(later, mark_offset(event.end_mark))
            e += 1
        left = max(start, reach)
        reach = max(reach, later)
        hash_at = text.find("#", left, end)
        if hash_at >= 0:
            blank = hash_at
            while blank > left and text[blank - 1] in " \t":
                blank -= 1
            alone = text[start:blank].strip(" \t") == ""
            comments[i] = _Comment(i, text[blank:end], alone)
        start += len(line)
    return comments


def _key_identity(event: Any, resolver: Any) -> tuple[str, str] | None:
    """What makes two top-level keys the same key to YAML: resolved tag and text."""
    import yaml

    if not isinstance(event, yaml.ScalarEvent):
        return None
    tag = event.tag
    if tag in (None, "!"):
        tag = resolver.resolve(yaml.ScalarNode, event.value, event.implicit)
    return str(tag), str(event.value)


def key_layout(
    text: str,
    parts: Parts,
    source: str,
    names: Mapping[str, str] | None = None,
    *,
    comments: bool = True,
) -> Layout:
    """Find where each top-level owned key (a name of ``names``: the bare ones by default)
    lives in the frontmatter text, and (``comments``) where its comments are.

    Raises ``NoteError`` for a top-level key written twice (YAML silently keeps the last
    one; which one the user meant is not vaultmem's to guess).
    """
    import yaml

    lines = _split_lines(text)
    layout = Layout(lines)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def line_of(offset: int) -> int:
        return bisect.bisect_right(starts, offset) - 1

    # The same parser as parse_meta, so both agree on what is valid. libyaml's marks count
    # characters (like PyYAML's), but its line numbers also break at U+2028 and friends,
    # so only offsets are used.
    try:
        events = list(yaml.parse(text, Loader=loaders().fast))
    except yaml.YAMLError as err:
        # parse_meta accepted this text, so this is not expected; refuse to edit.
        lineno = file_line(text, parts.yaml_line, yaml_error_index(err) or 0)
        raise NoteError(f"{source}:{lineno}: {yaml_problem(err, text, parts.yaml_line)}") from None
    if comments:
        layout.comments = line_comments(text, lines, events)

    i = 0
    while i < len(events) and not isinstance(
        events[i], (yaml.MappingStartEvent, yaml.SequenceStartEvent, yaml.ScalarEvent)
    ):
        i += 1
    if i == len(events):
        return layout  # empty document: only blank lines and comments
    top = events[i]
    if not isinstance(top, yaml.MappingStartEvent):
        raise NoteError(f"{source}:{parts.yaml_line}: frontmatter must be a mapping")
    if top.flow_style:
        raise NoteError(
            f"{source}:{parts.yaml_line}: frontmatter is a flow mapping ({{...}}); vaultmem "
            "edits only block-style frontmatter (one 'key: value' per line)"
        )
    i += 1
    indent_set = False
    resolver = yaml.resolver.Resolver()
    seen: dict[tuple[str, str], int] = {}
    while not isinstance(events[i], yaml.MappingEndEvent):
        key_event = events[i]
        key_start = mark_offset(key_event.start_mark)
        i, _ = _node_end(events, i)
        i, value_end = _node_end(events, i)
        if not indent_set:
            column_text = text[starts[line_of(key_start)] : key_start]
            layout.indent = column_text if column_text.strip(" ") == "" else ""
            indent_set = True
        identity = _key_identity(key_event, resolver)
        if identity is not None:
            key_line = parts.yaml_line + line_of(key_start)
            if identity in seen:
                raise NoteError(
                    f"{source}:{key_line}: duplicate key {identity[1]!r} (first on line "
                    f"{seen[identity]}); fix the note, vaultmem will not guess"
                )
            seen[identity] = key_line
        if not (
            isinstance(key_event, yaml.ScalarEvent)
            and key_event.value in (BARE.keys_of if names is None else names)
            and key_event.tag in _STR_TAGS
        ):
            continue
        # The value's last character, ignoring line breaks a block scalar swallowed.
        last = max(value_end - 1, key_start)
        while last > key_start and text[last] in " \t\r\n":
            last -= 1
        layout.extents.append(Extent(key_event.value, line_of(key_start), line_of(last)))
    return layout


@dataclass(frozen=True)
class OwnedLines:
    """A note's frontmatter as lines (endings kept), and where each top-level owned key
    is: ``spans`` holds ``(key, first, last)``, 0-based inclusive line indexes, in the
    order the keys are written. What the merge driver moves between versions."""

    lines: tuple[str, ...]
    spans: tuple[tuple[str, int, int], ...]


def owned_lines(parts: Parts, source: str, names: Mapping[str, str] | None = None) -> OwnedLines:
    """The :class:`OwnedLines` of a split note (empty for a note without frontmatter).

    Found as every edit finds them, so the lines are exactly those :func:`apply` would
    rewrite. Raises ``NoteError`` where :func:`apply` would refuse to edit (a key written
    twice, a flow mapping).
    """
    if parts.frontmatter is None:
        return OwnedLines((), ())
    layout = key_layout(parts.frontmatter, parts, source, names, comments=False)
    spans = tuple((e.key, e.first, e.last) for e in sorted(layout.extents, key=lambda e: e.first))
    return OwnedLines(tuple(layout.lines), spans)


def frontmatter_lines(text: str) -> list[str]:
    """Frontmatter text as lines with their endings, split on LF, CRLF and CR only (what
    YAML counts as a line; ``str.splitlines`` would also split on U+2028)."""
    return _split_lines(text)


_TOP_KEY_RE = re.compile(r"""(?:"([^"\\]*)"|'([^']*)'|([^\s#'"?:\-][^:#]*?))[ \t]*:(?:[ \t]|$)""")


def duplicate_keys(parts: Parts) -> tuple[str, ...]:
    """One warning per top-level key written twice, e.g. ``duplicate key 'use_count'
    (lines 3 and 9): ...``: YAML keeps the last line silently, and a ``merge=union`` merge
    writes both sides' lines. Cheap for the usual note: the events are read only when two
    lines start with the same key."""
    import yaml

    text = parts.frontmatter
    if not text:
        return ()
    names = []
    for line in _split_lines(text):
        match = _TOP_KEY_RE.match(line)
        if match is not None:
            names.append(next(g for g in match.groups() if g is not None).strip())
    if len(set(names)) == len(names):
        return ()
    try:
        events = list(yaml.parse(text, Loader=loaders().fast))
    except yaml.YAMLError:
        return ()  # parse_meta reports what is wrong with it
    starts = [i for i, e in enumerate(events) if isinstance(e, yaml.MappingStartEvent)]
    if not starts:
        return ()
    i = starts[0] + 1
    resolver = yaml.resolver.Resolver()
    seen: dict[tuple[str, str], int] = {}
    warnings: list[str] = []
    while i < len(events) and not isinstance(events[i], yaml.MappingEndEvent):
        key_event = events[i]
        i, _ = _node_end(events, i)
        i, _ = _node_end(events, i)
        identity = _key_identity(key_event, resolver)
        if identity is None:
            continue
        at = file_line(text, parts.yaml_line, mark_offset(key_event.start_mark))
        if identity in seen:
            warnings.append(
                f"duplicate key {identity[1]!r} (lines {seen[identity]} and {at}): YAML keeps "
                "only the last one; a `merge=union` merge writes both sides' lines (keep the "
                "right one; `vaultmem git setup` merges notes by meaning)"
            )
        else:
            seen[identity] = at
    return tuple(warnings)
