"""The frontmatter editor: owned keys set or cleared by editing the note's text
(:func:`apply`), every other byte kept, and the result verified by reading it back.

:class:`ReplacedLines` and :class:`KeyLines` are the update values that make an edit
undoable: the first saves the exact lines a key had, the second writes them back.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from vaultmem.errors import NoteError
from vaultmem.frontmatter.layout import (
    KEEP_HEADER_RE,
    Extent,
    Layout,
    frontmatter_lines,
    key_layout,
    line_comments,
    line_content,
)
from vaultmem.frontmatter.owned import saved_lines_problem, shown_value
from vaultmem.frontmatter.render import normalise, render_value, same_value
from vaultmem.frontmatter.scan import Parts, construct, loaders, loose_opening, parse_meta
from vaultmem.properties import BARE, OWNED_KEYS

__all__ = ["KeyLines", "ReplacedLines", "apply"]

# Where a new key goes: after the others, in the order of OWNED_KEYS.
_ORDER = {key: i for i, key in enumerate(OWNED_KEYS)}


@dataclass(frozen=True)
class ReplacedLines:
    """An update value: the lines of ``key`` that the same update replaces, as text.

    For the ``UNDO_KEYS`` key of ``key``: ``{"status": "forgotten", "status_before":
    ReplacedLines("status")}`` keeps ``status: reading  # mine`` for the undo. The text
    is ``key``'s top-level entry exactly as written (key, spacing, value, every comment
    inside it; several lines for a block value), without the block's common indentation
    and with LF line breaks, so the value stays one quoted line in git. Nothing is
    written when the update leaves ``key`` as it is, or when ``key`` has no line of its
    own in the block (absent, or taken from a YAML merge). Lines that could not be written
    back on their own (:func:`saved_lines_problem`) refuse the edit.
    """

    key: str


@dataclass(frozen=True)
class KeyLines:
    """An update value: the key written as exactly these lines (text that
    :class:`ReplacedLines` saved), in place of its current lines.

    The block's indentation and the line ending of the replaced lines are put back. Two
    things the forward write did are taken back with it: the comments it moved below the
    key's line (its inner comments, which the saved text holds), and a comment the
    user changed, added or removed on the key's line since is kept instead of the saved one.
    """

    text: str


def _check_updates(
    updates: Mapping[str, object | None], names: Mapping[str, str]
) -> dict[str, object | None]:
    checked: dict[str, object | None] = {}
    for key, value in updates.items():
        if key not in names:
            raise ValueError(f"{key!r} is not a key vaultmem owns; owned keys: {list(names)}")
        if isinstance(value, ReplacedLines):
            if value.key not in names or value.key == key:
                raise ValueError(f"{key}: cannot save the lines of {value.key!r}")
            checked[key] = value
        elif isinstance(value, KeyLines):
            problem = saved_lines_problem(key, value.text)
            if problem is not None:
                raise ValueError(f"{key}: saved lines {shown_value(value.text)} {problem}")
            checked[key] = value
        else:
            checked[key] = None if value is None else normalise(value)
            if value is not None:
                render_value(key, value)  # type errors surface here, before any edit
    return checked


def _saved_lines(layout: Layout, key: str, parts: Parts, source: str) -> str | None:
    """The text :class:`ReplacedLines` keeps of ``key``; None when it has no lines."""
    extent = next((e for e in layout.extents if e.key == key), None)
    if extent is None:
        return None
    indent = layout.indent
    lines = [line_content(line) for line in layout.lines[extent.first : extent.last + 1]]
    text = "\n".join(line[len(indent) :] if line.startswith(indent) else line for line in lines)
    problem = saved_lines_problem(key, text)
    if problem is not None:
        raise NoteError(
            f"{source}:{parts.yaml_line + extent.first}: {key}'s lines cannot be kept for an "
            f"undo: written alone, the text {problem}; note left untouched"
        )
    return text


def apply(
    raw: bytes,
    updates: Mapping[str, object | None],
    source: str,
    *,
    names: Mapping[str, str] | None = None,
) -> bytes:
    """Set (value) or clear (None) owned frontmatter keys by editing the note's text.

    Every byte outside the edited keys' lines is kept: other keys, comments, the body,
    line endings (new lines follow the block's style: LF, CRLF or CR), the fences, the BOM.
    Comments inside an edited key's lines are kept too (see :func:`_replacement`). New keys
    are appended at the end of the block in ``OWNED_KEYS`` order; a note without
    frontmatter gets a new block, and a block that clearing leaves empty is removed again.
    An owned key holding an invalid value (:func:`owned_problem`) is simply overwritten:
    it is vaultmem's key. When nothing changes ``raw`` itself is returned.

    Two values make an edit undoable: :class:`ReplacedLines` saves the lines another key
    of the same update replaces, :class:`KeyLines` writes saved lines back verbatim.

    Raises ``ValueError`` for a key vaultmem does not own, ``TypeError`` for a value it
    cannot store, ``NoteError`` for a note it will not edit: not UTF-8, malformed or
    hostile YAML (alias bombs, unsafe tags), a top-level key written twice, an opening
    fence with trailing blanks, lines to save that could not be written back alone, or a
    result that would not read back as asked.

    ``names`` maps each key name ``updates`` may use to the owned key it holds
    (:attr:`vaultmem.properties.KeyScheme.keys_of`; default: the bare names), which
    decides where a new key goes.
    """
    names = BARE.keys_of if names is None else names
    wanted = _check_updates(updates, names)
    meta, parts = parse_meta(raw, source)

    changes: dict[str, object | None] = {}
    for key, value in wanted.items():
        if isinstance(value, ReplacedLines):
            continue  # resolved below, once the key it saves is known to change
        if isinstance(value, KeyLines):
            changes[key] = value  # lines already as saved leave the text as it is
        elif value is None:
            if key in meta:
                changes[key] = None
        elif key not in meta or not same_value(meta[key], value):
            changes[key] = value
    layout = None
    if changes and parts.frontmatter is not None:
        layout = key_layout(parts.frontmatter, parts, source, names)
    for key, value in list(wanted.items()):
        if not isinstance(value, ReplacedLines):
            continue
        text = None
        if value.key in changes and layout is not None:
            text = _saved_lines(layout, value.key, parts, source)
        if text is None:
            del wanted[key]  # nothing to save: the key stays as it is
        else:
            wanted[key] = text
            if key not in meta or not same_value(meta[key], text):
                changes[key] = text
    if not changes:
        return raw

    newline = parts.newline
    if parts.frontmatter is None:
        if loose_opening(parts):
            raise NoteError(
                f"{source}:1: the opening '---' has trailing blanks, so Obsidian does not read "
                "this block as properties and neither does vaultmem; delete the blanks after "
                "'---' and run again"
            )
        added = [(k, v) for k, v in changes.items() if v is not None]
        added.sort(key=lambda kv: _ORDER[names[kv[0]]])
        text = "".join(_rendered(k, v, newline) for k, v in added)
        result = parts.with_frontmatter(text)
    else:
        assert layout is not None
        result = parts.with_frontmatter(_edit(parts.frontmatter, parts, changes, layout, names))

    # Verified even when the text did not change: a key that comes from a YAML merge
    # (``<<: *base``) cannot be cleared by editing lines, and that must not pass silently.
    _verify(result, meta, parts, _read_back(wanted), source)
    return raw if result == raw else result


def _read_back(wanted: Mapping[str, object | None]) -> dict[str, object | None]:
    """What each wanted key must read back as (saved lines: the value they hold)."""
    out: dict[str, object | None] = {}
    for key, value in wanted.items():
        if isinstance(value, KeyLines):
            # Checked: it loads (saved_lines_problem).
            value = _ReadsAs(construct(value.text + "\n", loaders().fast)[key])
        out[key] = value
    return out


@dataclass(frozen=True)
class _ReadsAs:
    """What saved lines must read back as: any value, None (``status:``) included."""

    value: object


def _rendered(key: str, value: object, newline: str, indent: str = "") -> str:
    """The lines of a new key: rendered, or the saved lines of a :class:`KeyLines`."""
    if isinstance(value, KeyLines):
        return _indented(value.text.split("\n"), newline, indent)
    return render_value(key, value, newline, indent)


def _indented(lines: list[str], newline: str, indent: str) -> str:
    """Saved lines as frontmatter text: the block's indentation put back (blank lines stay
    blank), each line ended by ``newline``."""
    return "".join((indent + line if line else line) + newline for line in lines)


def _edit(
    text: str,
    parts: Parts,
    changes: Mapping[str, object | None],
    layout: Layout,
    names: Mapping[str, str],
) -> str | None:
    """The frontmatter text with ``changes`` made; None when the block should go away."""
    lines = layout.lines
    # line index -> (last line of the range, replacement text)
    edits: dict[int, tuple[int, str]] = {}
    appended: list[tuple[str, object]] = []
    extents = {extent.key: extent for extent in layout.extents}  # duplicates were refused
    for key, value in changes.items():
        extent = extents.get(key)
        if extent is None:
            if value is not None:
                appended.append((key, value))
            continue
        newline = _line_newline(lines[extent.last], parts)
        if isinstance(value, KeyLines):
            edits[extent.first] = _written_back(layout, extent, value.text, newline)
        else:
            edits[extent.first] = (extent.last, _replacement(layout, extent, value, newline))

    out = _assembled(lines, edits, layout.indent)
    appended.sort(key=lambda kv: _ORDER[names[kv[0]]])
    out.extend(_rendered(k, v, parts.newline, layout.indent) for k, v in appended)
    new_text = "".join(out)
    if new_text == "" and text != "":
        return None  # we emptied it: drop the block (undoes the block a set created)
    return new_text


def _assembled(lines: list[str], edits: Mapping[int, tuple[int, str]], indent: str) -> list[str]:
    """``lines`` with each edit's range replaced by its text.

    Blank lines right after a block scalar that keeps them (``key: |+``) are part of its
    value: when cleared keys stood between the two, the blank lines that followed them go
    with them, so the scalar reads back the same.
    """
    out: list[str] = []
    keeps = dropped = False  # the last top-level line written opens a `|+` scalar; a key went
    i = 0
    while i < len(lines):
        if i in edits:
            last, new = edits[i]
            if new:
                out.append(new)
                keeps, dropped = (
                    bool(KEEP_HEADER_RE.search(line_content(new.splitlines()[0]))),
                    False,
                )
            else:
                dropped = True
            i = last + 1
            continue
        line = line_content(lines[i])
        if not line.strip():
            if not (keeps and dropped):
                out.append(lines[i])
        elif line.startswith(indent) and line[len(indent) : len(indent) + 1] not in (" ", "\t"):
            rest = line[len(indent) :]
            keeps, dropped = not rest.startswith("#") and bool(KEEP_HEADER_RE.search(line)), False
            out.append(lines[i])
        else:
            out.append(lines[i])
        i += 1
    return out


def _replacement(layout: Layout, extent: Extent, value: object | None, newline: str) -> str:
    """The text that replaces an owned key's lines: the new value (nothing when cleared)
    with the user's comments kept inside the key's block.

    The comment on the key's own line stays on it (it goes away with a cleared key). A
    comment on a value line stays on the identical new line (an item that is kept);
    comment lines, and comments whose line is gone, move right below the key line, in
    their order, so no comment is lost to a rewrite. With the key cleared they stay at the
    key's own indentation: indented, a preceding block scalar (``status: |``) would take
    them in as text.
    """
    new: list[str] = []
    if value is not None:
        new = frontmatter_lines(render_value(extent.key, value, newline, layout.indent))
    key_comment = layout.comments.get(extent.first)
    if new and key_comment is not None and not key_comment.alone:
        new[0] = line_content(new[0]) + key_comment.suffix + newline
    moved: list[str] = []
    taken: set[int] = set()
    for i in range(extent.first + 1, extent.last + 1):
        comment = layout.comments.get(i)
        if comment is None:
            continue
        inside = layout.indent + ("  " if new else "")
        if comment.alone:
            moved.append(layout.lines[i] if new else inside + layout.lines[i].lstrip(" \t"))
            continue
        kept = line_content(layout.lines[i])[: -len(comment.suffix)].strip()
        same = [j for j in range(1, len(new)) if j not in taken and new[j].strip() == kept]
        if same:
            taken.add(same[0])
            new[same[0]] = line_content(new[same[0]]) + comment.suffix + newline
        else:
            moved.append(f"{inside}{comment.suffix.strip()}{newline}")
    return "".join(new[:1] + moved + new[1:])


def _written_back(layout: Layout, extent: Extent, saved: str, newline: str) -> tuple[int, str]:
    """(last line replaced, text) that puts ``saved`` back over the key's lines.

    The comments :func:`_replacement` moved below the key's line when the saved lines were
    replaced come from ``saved`` again, so the lines right after the key that are those
    comments, in their order, are replaced too. The comment on the key's line now wins
    over the saved one: a comment the user edited since is theirs.
    """
    import yaml

    lines = saved.split("\n")
    events = list(yaml.parse(saved, Loader=loaders().fast))
    comments = line_comments(saved, frontmatter_lines(saved), events)
    old = comments.get(0)
    now = layout.comments.get(extent.first)
    old_suffix = "" if old is None or old.alone else old.suffix
    now_suffix = "" if now is None or now.alone else now.suffix
    if now_suffix != old_suffix:
        lines[0] = lines[0][: len(lines[0]) - len(old_suffix)] + now_suffix
    last = extent.last
    for moved in (c.suffix.strip() for i, c in sorted(comments.items()) if i > 0):
        following = layout.comments.get(last + 1)
        if following is None or not following.alone:
            break
        if line_content(layout.lines[last + 1]).strip() != moved:
            break
        last += 1
    return last, _indented(lines, newline, layout.indent)


def _line_newline(line: str, parts: Parts) -> str:
    """The ending of the line a replaced key ended on, so a replacement keeps it."""
    for ending in ("\r\n", "\n", "\r"):
        if line.endswith(ending):
            return ending
    return parts.newline


def _verify(
    result: bytes,
    before: Mapping[Any, Any],
    parts: Parts,
    wanted: Mapping[str, object | None],
    source: str,
) -> None:
    """Refuse a write-back that does not read back exactly as intended."""
    try:
        after, new_parts = parse_meta(result, source)
    except NoteError as err:
        raise NoteError(
            f"{source}: write-back would break the frontmatter ({err}); note left untouched"
        ) from None
    problems: list[str] = []
    if new_parts.body != parts.body or new_parts.bom != parts.bom:
        problems.append("body changed")
    for key, value in wanted.items():
        if isinstance(value, _ReadsAs):
            if key not in after or not same_value(after[key], value.value):
                problems.append(f"{key!r} reads back as {after.get(key)!r}, not {value.value!r}")
        elif value is None:
            if key in after:
                problems.append(f"{key!r} still present")
        elif key not in after or not same_value(after[key], value):
            problems.append(f"{key!r} reads back as {after.get(key)!r}, not {value!r}")
    for key, value in before.items():
        if key in wanted:
            continue
        if key not in after or not same_value(after[key], value):
            problems.append(f"{key!r} would change")
    if problems:
        raise NoteError(
            f"{source}:{parts.yaml_line}: write-back would not round-trip "
            f"({'; '.join(problems)}); note left untouched"
        )
