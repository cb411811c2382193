"""Byte-exact frontmatter write-back.

vaultmem keeps its state in the YAML frontmatter of the user's notes, so every write must
change only vaultmem's own keys (``OWNED_KEYS``) and leave every other byte alone: other
keys with their quoting, order and comments, the body, line endings, the BOM. Re-serialising
the YAML would reformat the user's keys, so edits are made on the *text*: the extent of a
top-level key (its line through the last line of its value) is located with PyYAML's event
marks, then replaced, deleted, or new keys are appended at the end of the block.

Every edit is checked by re-parsing the result before it is returned; a write-back that
would not round-trip raises instead of touching the note.
"""

from __future__ import annotations

import bisect
import copy
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml

from vaultmem.atomic import atomic_write
from vaultmem.errors import ConflictError, NoteError

__all__ = [
    "OWNED_KEYS",
    "Parts",
    "WriteResult",
    "apply",
    "parse_meta",
    "render_value",
    "split",
    "update_note",
]

OWNED_KEYS: tuple[str, ...] = (
    "type",
    "confidence",
    "half_life",
    "pinned",
    "snoozed_until",
    "status",
    "strength",
    "use_count",
    "last_used",
    "created",
    "review_count",
    "last_review",
    "cross_domain_count",
    "supersedes",
    "superseded_by",
    "related",
    "refines",
    "duplicate_of",
    "caused_by",
    "contradicts",
    "promoted_from",
)
_ORDER = {key: i for i, key in enumerate(OWNED_KEYS)}

BOM = b"\xef\xbb\xbf"

# libyaml is ~10x faster for the read path (indexing parses every note) and is also what
# locates key extents; the pure-Python loader words error messages better.
_FAST_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_PY_LOADER: Any = yaml.SafeLoader

# The closing delimiter: a line that is exactly '---' or '...', ended by LF, CRLF or EOF.
_CLOSING_RE = re.compile(rb"^(?:---|\.\.\.)(?:\r?\n|\Z)", re.MULTILINE)

# Tries of update_note before it gives up on a note that keeps changing under it.
_MAX_TRIES = 3

_STR_TAGS = (None, "!", "tag:yaml.org,2002:str")


# --------------------------------------------------------------------------- splitting


@dataclass(frozen=True)
class Parts:
    """A note split into BOM, frontmatter and body; ``to_bytes()`` gives back the input.

    ``newline`` is the line ending of the opening ``---`` (for a note without frontmatter:
    of the body's first line), the style new frontmatter lines are written in.
    ``closing`` is the closing delimiter line exactly as written (``"---\\n"``,
    ``"...\\r\\n"``, or ``"---"`` at end of file); empty when there is no frontmatter.
    ``yaml_line`` and ``body_line`` are 1-based file line numbers (both 1 when the note has
    no frontmatter).
    """

    bom: bytes
    newline: str
    frontmatter: str | None
    closing: str
    body: bytes
    yaml_line: int
    body_line: int

    def to_bytes(self) -> bytes:
        """Reassemble the note (byte-identical to what ``split`` was given)."""
        return self.with_frontmatter(self.frontmatter)

    def with_frontmatter(self, text: str | None) -> bytes:
        """The note with its frontmatter text replaced; ``None`` drops the block entirely."""
        if text is None:
            return self.bom + self.body
        closing = self.closing or "---" + self.newline
        head = "---" + self.newline + text + closing
        return self.bom + head.encode("utf-8") + self.body


def _first_newline(data: bytes) -> str:
    """The line-ending style of the first line of ``data`` (LF when it has no line break)."""
    nl = data.find(b"\n")
    return "\r\n" if nl > 0 and data[nl - 1 : nl] == b"\r" else "\n"


def split(raw: bytes, source: str = "<note>") -> Parts:
    """Split a note's bytes into BOM, frontmatter text and body bytes.

    Frontmatter is recognised only when the file (after an optional UTF-8 BOM) starts with
    a line that is exactly ``---`` and a later line is exactly ``---`` or ``...``. The
    frontmatter must be UTF-8 (``NoteError`` naming ``source`` and the line otherwise); the
    body is never decoded.
    """
    bom = BOM if raw.startswith(BOM) else b""
    data = raw[len(bom) :]
    if data.startswith(b"---\n"):
        newline, start = "\n", 4
    elif data.startswith(b"---\r\n"):
        newline, start = "\r\n", 5
    else:
        return Parts(bom, _first_newline(data), None, "", data, 1, 1)

    match = _CLOSING_RE.search(data, start)
    if match is None:
        # An opening rule with no closing one is a markdown horizontal rule, not frontmatter.
        return Parts(bom, _first_newline(data), None, "", data, 1, 1)

    fm_bytes = data[start : match.start()]
    yaml_line = 2
    try:
        text = fm_bytes.decode("utf-8")
    except UnicodeDecodeError as err:
        line = yaml_line + fm_bytes.count(b"\n", 0, err.start)
        raise NoteError(f"{source}:{line}: frontmatter is not valid UTF-8 ({err.reason})") from None
    closing = match.group().decode("ascii")
    body_line = yaml_line + text.count("\n") + 1
    return Parts(bom, newline, text, closing, data[match.end() :], yaml_line, body_line)


# --------------------------------------------------------------------------- parsing


def _yaml_problem(err: BaseException, text: str, yaml_line: int) -> str:
    """One line describing a YAML error, without PyYAML's multi-line mark dump."""
    if isinstance(err, yaml.reader.ReaderError):
        char = err.character
        code = char if isinstance(char, int) else ord(str(char)[:1] or "?")
        return f"unacceptable character #x{code:04x}: {err.reason}"
    if isinstance(err, yaml.MarkedYAMLError):
        problem = err.problem or "invalid YAML"
        if err.context:
            context = err.context
            # "while parsing a flow sequence" is only useful with where that began.
            if err.context_mark is not None and err.problem_mark is not None:
                start = _file_line(text, yaml_line, int(err.context_mark.index))
                if start != _file_line(text, yaml_line, int(err.problem_mark.index)):
                    context += f" (started on line {start})"
            return f"invalid YAML: {context}: {problem}"
        return f"invalid YAML: {problem}"
    first = str(err).strip().splitlines()
    return "invalid YAML: " + (first[0] if first else type(err).__name__)


def _file_line(text: str, yaml_line: int, index: int) -> int:
    """The file line of character ``index`` of the frontmatter text."""
    return yaml_line + text.count("\n", 0, max(0, min(index, len(text))))


def _yaml_error_index(err: BaseException) -> int | None:
    """Character offset into the YAML text where ``err`` happened, when PyYAML knows it."""
    if isinstance(err, yaml.reader.ReaderError):
        return int(err.position)
    if isinstance(err, yaml.MarkedYAMLError):
        mark = err.problem_mark or err.context_mark
        if mark is not None:
            return int(mark.index)
    return None


def _locate_bad_scalar(text: str) -> int | None:
    """Offset of the first scalar the constructor rejects with a non-YAML error.

    PyYAML raises a bare ``ValueError`` (no position) for timestamps such as
    ``2026-02-30``; composing the nodes and constructing each scalar finds the culprit.
    """
    try:
        root = yaml.compose(text, Loader=_PY_LOADER)
    except Exception:  # noqa: BLE001 - only a best-effort locator
        return None
    stack = [root] if root is not None else []
    seen: set[int] = set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.ScalarNode):
            try:
                _PY_LOADER("").construct_object(node)
            except Exception:  # noqa: BLE001 - any failure marks the culprit
                return int(node.start_mark.index)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(reversed(node.value))
        elif isinstance(node, yaml.MappingNode):
            for key, value in reversed(node.value):
                stack.extend((value, key))
    return None


def _load(text: str, parts: Parts, source: str) -> Any:
    """Load YAML text, turning every failure into ``NoteError("source:line: problem")``."""
    try:
        return yaml.load(text, Loader=_FAST_LOADER)
    except yaml.YAMLError as fast_err:
        err: BaseException = fast_err
        # The pure-Python loader words errors better ("found '<stream end>'"); ask it.
        try:
            yaml.load(text, Loader=_PY_LOADER)
        except yaml.YAMLError as py_err:
            err = py_err
        except Exception:  # noqa: BLE001 - keep libyaml's error then
            pass
        index = _yaml_error_index(err)
        problem = _yaml_problem(err, text, parts.yaml_line)
    except RecursionError:
        index, problem = None, "frontmatter is nested too deeply"
    except (ValueError, TypeError, OverflowError) as err2:
        index, problem = _locate_bad_scalar(text), f"invalid value: {err2}"
    line = parts.yaml_line if index is None else _file_line(text, parts.yaml_line, index)
    raise NoteError(f"{source}:{line}: {problem}")


def parse_meta(raw: bytes, source: str) -> tuple[dict[Any, Any], Parts]:
    """Parse a note's frontmatter into a dict (empty when there is none).

    Raises ``NoteError(f"{source}:{line}: {problem}")`` for malformed YAML, a top level that
    is not a mapping, or frontmatter that is not UTF-8; ``line`` is the line in the file.
    """
    parts = split(raw, source)
    if parts.frontmatter is None:
        return {}, parts
    data = _load(parts.frontmatter, parts, source)
    if data is None:
        return {}, parts
    if not isinstance(data, dict):
        raise NoteError(
            f"{source}:{parts.yaml_line}: frontmatter must be a mapping of keys to values, "
            f"not a {type(data).__name__}"
        )
    return data, parts


# --------------------------------------------------------------------------- rendering


def _printable(ch: str) -> bool:
    """Whether YAML readers accept ``ch`` raw in a scalar (PyYAML's and libyaml's rule)."""
    return (
        "\x20" <= ch <= "\x7e"
        or ("\xa0" <= ch <= "\ud7ff" and ch not in "\u2028\u2029")
        or ("\ue000" <= ch <= "\ufffd" and ch != "\ufeff")
        or "\U00010000" <= ch <= "\U0010ffff"
    )


_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r", "\0": "\\0"}


def _double_quoted(value: str) -> str:
    """A YAML double-quoted scalar for ``value``.

    Like ``json.dumps(ensure_ascii=False)``, but also escapes what JSON leaves raw and YAML
    does not accept raw: DEL and C1 controls, U+FEFF, and U+2028/U+2029/U+0085, which YAML
    reads as line breaks and would fold into spaces.
    """
    out = ['"']
    for ch in value:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif _printable(ch):
            out.append(ch)
        else:
            code = ord(ch)
            if code <= 0xFF:
                out.append(f"\\x{code:02X}")
            elif code <= 0xFFFF:
                out.append(f"\\u{code:04X}")
            else:
                out.append(f"\\U{code:08X}")
    out.append('"')
    return "".join(out)


def _plain_ok(value: str) -> bool:
    """Whether ``value`` written unquoted reads back as the same string, in both places
    vaultmem writes scalars (after ``key: `` and after ``  - ``), with both loaders."""
    if not value or value != value.strip() or not all(_printable(ch) for ch in value):
        return False
    for doc, expected in ((f"k: {value}\n", {"k": value}), (f"k:\n  - {value}\n", {"k": [value]})):
        for loader in {_FAST_LOADER, _PY_LOADER}:
            try:
                loaded = yaml.load(doc, Loader=loader)
            except Exception:  # noqa: BLE001 - anything but a clean read means "quote it"
                return False
            if loaded != expected:
                return False
    return True


def _render_float(value: float) -> str:
    if math.isnan(value):
        return ".nan"
    if math.isinf(value):
        return ".inf" if value > 0 else "-.inf"
    text = repr(value)
    if "e" in text:
        # YAML 1.1 (PyYAML) needs a dot in the mantissa: '1e-05' would read as a string.
        mantissa, exponent = text.split("e")
        if "." not in mantissa:
            mantissa += ".0"
        if exponent[0] not in "+-":
            exponent = "+" + exponent
        text = f"{mantissa}e{exponent}"
    return text


def _render_datetime(value: datetime) -> str:
    offset = value.utcoffset()
    if offset is None:
        return value.isoformat(timespec="seconds")
    if offset == timedelta(0):
        return value.replace(tzinfo=None).isoformat(timespec="seconds") + "Z"
    return value.isoformat(timespec="seconds")


def _normalise(value: object) -> object:
    """The value as it will read back after rendering (what equality checks compare to).

    Datetimes lose sub-second precision (rendered to the second) and offsets that are not
    whole minutes (YAML timestamps cannot carry them) become UTC; tuples become lists;
    str/int/float subclasses (enums) become the plain type.
    """
    if isinstance(value, datetime):
        value = value.replace(microsecond=0)
        offset = value.utcoffset()
        if offset is not None and offset % timedelta(minutes=1):
            value = value.astimezone(UTC)
        return value
    if isinstance(value, bool) or value is None or isinstance(value, date):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, (list, tuple)):
        return [_normalise(item) for item in value]
    raise TypeError(f"vaultmem cannot store a {type(value).__name__} in frontmatter")


def _render_scalar(value: object) -> str:
    """Render a normalised scalar in vaultmem's stable, git-friendly style."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _render_float(value)
    if isinstance(value, datetime):
        return _render_datetime(value)
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, str):
        # Obsidian only treats quoted [[links]] in properties as links.
        if "[[" not in value and _plain_ok(value):
            return value
        return _double_quoted(value)
    raise TypeError(f"vaultmem cannot store a {type(value).__name__} in a frontmatter list")


def render_value(key: str, value: object, newline: str = "\n", indent: str = "") -> str:
    """Render ``key: value`` as frontmatter lines (each ended by ``newline``).

    Scalars go on the key's line; lists become block sequences indented two spaces past
    the key (``[]`` when empty). ``value`` must not be None (None means "clear the key").
    """
    value = _normalise(value)
    if isinstance(value, list):
        if not value:
            return f"{indent}{key}: []{newline}"
        lines = [f"{indent}{key}:{newline}"]
        for item in value:
            if isinstance(item, list):
                raise TypeError(f"{key}: vaultmem writes only lists of scalars")
            lines.append(f"{indent}  - {_render_scalar(item)}{newline}")
        return "".join(lines)
    if value is None:
        raise ValueError(f"{key}: None clears a key and has no rendering")
    return f"{indent}{key}: {_render_scalar(value)}{newline}"


# --------------------------------------------------------------------------- comparing


def _same(a: object, b: object) -> bool:
    """Value equality as a user would see it in the file.

    Unlike ``==``: ``true`` is not ``1``, a date is not a midnight datetime, NaN equals
    NaN. Ints and floats of equal value are the same (``confidence: 1`` vs 1.0 needs no
    rewrite).
    """
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
            return True
        return a == b
    if isinstance(a, datetime) and isinstance(b, datetime):
        return (a.utcoffset() is None) == (b.utcoffset() is None) and a == b
    if isinstance(a, datetime) or isinstance(b, datetime):
        return False  # a date is not the datetime at its midnight
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if type(a) is not type(b) and not (isinstance(a, str) and isinstance(b, str)):
        return False
    return bool(a == b)


# --------------------------------------------------------------------------- locating keys


@dataclass(frozen=True)
class _Extent:
    """Lines ``first..last`` (0-based, inclusive, within the frontmatter) of one top-level
    owned key: its key line through the last line of its value."""

    key: str
    first: int
    last: int


@dataclass
class _Layout:
    lines: list[str]
    extents: list[_Extent] = field(default_factory=list)
    indent: str = ""


def _split_lines(text: str) -> list[str]:
    """Lines with their endings kept, split on LF only.

    ``str.splitlines`` would also split on U+2028, form feeds and friends, which are
    ordinary characters inside a line of the file.
    """
    pieces = text.split("\n")
    lines = [piece + "\n" for piece in pieces[:-1]]
    if pieces[-1]:
        lines.append(pieces[-1])
    return lines


def _node_end(events: list[Any], i: int) -> tuple[int, int]:
    """Consume the node starting at ``events[i]``; return (next index, end offset).

    The end offset is that of the node's last real character. Block collections are
    closed by a BlockEnd whose mark sits at the *next* token (past comments and blank
    lines), so their end is taken from their last child instead. Iterative, so deeply
    nested user values cannot hit the recursion limit.
    """
    end = 0
    flows: list[bool] = []
    while True:
        event = events[i]
        i += 1
        if isinstance(event, (yaml.ScalarEvent, yaml.AliasEvent)):
            end = max(end, int(event.end_mark.index))
        elif isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            end = max(end, int(event.end_mark.index))
            flows.append(bool(event.flow_style))
        elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
            if flows.pop():
                end = max(end, int(event.end_mark.index))
        else:
            raise ValueError(f"unexpected YAML event {type(event).__name__}")
        if not flows:
            return i, end


def _layout(text: str, parts: Parts, source: str) -> _Layout:
    """Find where each top-level owned key lives in the frontmatter text."""
    lines = _split_lines(text)
    layout = _Layout(lines)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def line_of(offset: int) -> int:
        return bisect.bisect_right(starts, offset) - 1

    # The same parser as parse_meta, so both agree on what is valid. libyaml's marks count
    # characters (like PyYAML's), but its line numbers also break at U+2028 and friends,
    # so only offsets are used.
    try:
        events = list(yaml.parse(text, Loader=_FAST_LOADER))
    except yaml.YAMLError as err:
        # parse_meta accepted this text, so this is not expected; refuse to edit.
        lineno = _file_line(text, parts.yaml_line, _yaml_error_index(err) or 0)
        raise NoteError(f"{source}:{lineno}: {_yaml_problem(err, text, parts.yaml_line)}") from None

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
    while not isinstance(events[i], yaml.MappingEndEvent):
        key_event = events[i]
        key_start = int(key_event.start_mark.index)
        i, _ = _node_end(events, i)
        i, value_end = _node_end(events, i)
        if not indent_set:
            column_text = text[starts[line_of(key_start)] : key_start]
            layout.indent = column_text if column_text.strip(" ") == "" else ""
            indent_set = True
        if not (
            isinstance(key_event, yaml.ScalarEvent)
            and key_event.value in _ORDER
            and key_event.tag in _STR_TAGS
        ):
            continue
        # The value's last character, ignoring line breaks a block scalar swallowed.
        last = max(value_end - 1, key_start)
        while last > key_start and text[last] in " \t\r\n":
            last -= 1
        layout.extents.append(_Extent(key_event.value, line_of(key_start), line_of(last)))
    return layout


# --------------------------------------------------------------------------- applying


def _check_updates(updates: Mapping[str, object | None]) -> dict[str, object | None]:
    checked: dict[str, object | None] = {}
    for key, value in updates.items():
        if key not in _ORDER:
            raise ValueError(f"{key!r} is not a key vaultmem owns; owned keys: {OWNED_KEYS}")
        checked[key] = None if value is None else _normalise(value)
        if value is not None:
            render_value(key, value)  # type errors surface here, before any edit
    return checked


def apply(raw: bytes, updates: Mapping[str, object | None], source: str) -> bytes:
    """Set (value) or clear (None) owned frontmatter keys by editing the note's text.

    Every byte outside the edited keys' lines is kept: other keys, comments, the body,
    line endings (new lines follow the block's style), the BOM. New keys are appended at
    the end of the block in ``OWNED_KEYS`` order; a note without frontmatter gets a new
    block, and a block that clearing leaves empty is removed again. When nothing changes
    ``raw`` itself is returned. Raises ``ValueError`` for a key vaultmem does not own,
    ``TypeError`` for a value it cannot store, ``NoteError`` for malformed frontmatter
    (or a result that would not read back as asked).
    """
    wanted = _check_updates(updates)
    meta, parts = parse_meta(raw, source)

    changes: dict[str, object | None] = {}
    for key, value in wanted.items():
        if value is None:
            if key in meta:
                changes[key] = None
        elif key not in meta or not _same(meta[key], value):
            changes[key] = value
    if not changes:
        return raw

    newline = parts.newline
    if parts.frontmatter is None:
        added = [(k, v) for k, v in changes.items() if v is not None]
        added.sort(key=lambda kv: _ORDER[kv[0]])
        text = "".join(render_value(k, v, newline) for k, v in added)
        result = parts.with_frontmatter(text)
    else:
        result = parts.with_frontmatter(_edit(parts.frontmatter, parts, changes, source))

    # Verified even when the text did not change: a key that comes from a YAML merge
    # (``<<: *base``) cannot be cleared by editing lines, and that must not pass silently.
    _verify(result, meta, parts, wanted, source)
    return raw if result == raw else result


def _edit(text: str, parts: Parts, changes: Mapping[str, object | None], source: str) -> str | None:
    """The frontmatter text with ``changes`` made; None when the block should go away."""
    layout = _layout(text, parts, source)
    lines = layout.lines
    # line index -> (last line of the range, replacement text)
    edits: dict[int, tuple[int, str]] = {}
    appended: list[tuple[str, object]] = []
    for key, value in changes.items():
        occurrences = [e for e in layout.extents if e.key == key]
        if value is not None and not occurrences:
            appended.append((key, value))
            continue
        for n, extent in enumerate(occurrences):
            # Duplicated keys: YAML keeps the last; the first keeps its place, the rest go.
            new = ""
            if value is not None and n == 0:
                new = render_value(
                    key, value, _line_newline(lines[extent.last], parts), layout.indent
                )
            edits[extent.first] = (extent.last, new)

    out: list[str] = []
    i = 0
    covered_until = -1
    while i < len(lines):
        if i in edits:
            last, new = edits[i]
            if i <= covered_until:
                raise NoteError(f"{source}:{parts.yaml_line + i}: overlapping keys, not editing")
            out.append(new)
            covered_until = last
            i = last + 1
            continue
        out.append(lines[i])
        i += 1
    appended.sort(key=lambda kv: _ORDER[kv[0]])
    out.extend(render_value(k, v, parts.newline, layout.indent) for k, v in appended)
    new_text = "".join(out)
    if new_text == "" and text != "":
        return None  # we emptied it: drop the block (undoes the block a set created)
    return new_text


def _line_newline(line: str, parts: Parts) -> str:
    """The ending of the line a replaced key ended on, so a replacement keeps it."""
    if line.endswith("\r\n"):
        return "\r\n"
    if line.endswith("\n"):
        return "\n"
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
        if value is None:
            if key in after:
                problems.append(f"{key!r} still present")
        elif key not in after or not _same(after[key], value):
            problems.append(f"{key!r} reads back as {after.get(key)!r}, not {value!r}")
    for key, value in before.items():
        if key in wanted:
            continue
        if key not in after or not _same(after[key], value):
            problems.append(f"{key!r} would change")
    if problems:
        raise NoteError(
            f"{source}:{parts.yaml_line}: write-back would not round-trip "
            f"({'; '.join(problems)}); note left untouched"
        )


# --------------------------------------------------------------------------- files


@dataclass(frozen=True)
class WriteResult:
    """What ``update_note`` did: whether it wrote, and the owned keys before and after."""

    path: Path
    changed: bool
    before: dict[str, Any]
    after: dict[str, Any]


def _owned(meta: Mapping[Any, Any]) -> dict[str, Any]:
    return {key: meta[key] for key in OWNED_KEYS if key in meta}


def _read(path: Path, source: str) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise NoteError(f"{source}: note not found") from None
    except OSError as err:
        raise NoteError(f"{source}: cannot read note: {err.strerror or err}") from None


def update_note(
    path: Path,
    compute: Callable[[dict[Any, Any]], Mapping[str, object | None]],
    source: str,
) -> WriteResult:
    """Read a note, ask ``compute(meta)`` for owned-key updates, and write them back.

    ``compute`` gets a copy of the parsed frontmatter and returns ``{key: value or None}``.
    Before writing, the file is read again; if it changed in between (the user saved it in
    Obsidian), the updates are recomputed on the fresh copy and re-applied, up to three
    tries, after which ``ConflictError`` is raised. An unchanged result is not written
    (the file's mtime stays). Malformed YAML raises ``NoteError`` and leaves the file as
    it was.
    """
    path = Path(path)
    raw = _read(path, source)
    for _ in range(_MAX_TRIES):
        meta, _parts = parse_meta(raw, source)
        before = _owned(meta)
        updates = compute(copy.deepcopy(meta))
        new = apply(raw, updates, source)
        if new == raw:
            return WriteResult(path, False, before, before)
        try:
            current = path.read_bytes()
        except FileNotFoundError:
            raise ConflictError(
                f"{source}: the note was deleted while vaultmem was updating it"
            ) from None
        except OSError as err:
            raise NoteError(f"{source}: cannot read note: {err.strerror or err}") from None
        if current != raw:
            raw = current  # someone saved meanwhile: redo the work on their version
            continue
        atomic_write(path, new)
        after, _ = parse_meta(new, source)
        return WriteResult(path, True, before, _owned(after))
    raise ConflictError(
        f"{source}: the note kept changing on disk while vaultmem was updating it "
        f"({_MAX_TRIES} tries); nothing was written"
    )
