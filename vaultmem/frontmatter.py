"""Byte-exact frontmatter write-back.

vaultmem keeps its state in the YAML frontmatter of the user's notes, so every write must
change only vaultmem's own keys (``OWNED_KEYS``) and leave every other byte alone: other
keys with their quoting, order and comments, the body, line endings, the BOM. Re-serialising
the YAML would reformat the user's keys, so edits are made on the *text*: the extent of a
top-level key (its line through the last line of its value) is located with PyYAML's event
marks, then replaced, deleted, or new keys are appended at the end of the block.

Every edit is checked by re-parsing the result before it is returned; a write-back that
would not round-trip raises instead of touching the note.

Hostile notes are refused in one line naming the note and the line, by every reader and
writer alike: a note that is not UTF-8 (:func:`check_encoding`), YAML aliases that expand
past ``MAX_EXPANDED_VALUES`` values (an alias bomb) or a value that contains itself,
nesting deeper than ``MAX_DEPTH``, tags other than YAML's standard ones. A write is also
refused for a top-level key written twice and for an opening fence with trailing blanks.
Closing fences with trailing blanks and classic-Mac CR line breaks are read and kept;
comments inside an owned key survive its rewrite. Invalid dates load as text, and an
owned key with an invalid value reads as absent (:func:`owned_problem`).

An undoable write keeps the exact lines it replaces in the note itself: the update value
:class:`ReplacedLines` stores a key's lines (value, comments, spacing) as the text of its
``UNDO_KEYS`` key (``status_before``…), and :class:`KeyLines` writes such text back, so
the vault stays the only state of an undo.
"""

from __future__ import annotations

import bisect
import copy
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from functools import cache, lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from vaultmem.errors import NoteError, UserKeyError
from vaultmem.properties import BARE, OWNED_KEYS, UNDO_KEYS, KeyScheme, coerce

if TYPE_CHECKING:
    import yaml

__all__ = [
    "OWNED_KEYS",
    "UNDO_KEYS",
    "KeyLines",
    "OwnedLines",
    "Parts",
    "ReplacedLines",
    "WriteResult",
    "apply",
    "check_encoding",
    "duplicate_keys",
    "frontmatter_lines",
    "iso_time",
    "owned_lines",
    "owned_problem",
    "owned_warnings",
    "parse_meta",
    "render_value",
    "same_value",
    "split",
    "update_note",
]

# OWNED_KEYS (with one Obsidian type each) and UNDO_KEYS (the key that keeps, for an undo,
# the lines a lifecycle command replaced: `forget` saves a user's `status: reading  # mine`
# there) are defined once, in vaultmem.properties.
_ORDER = {key: i for i, key in enumerate(OWNED_KEYS)}

BOM = b"\xef\xbb\xbf"


def _lenient_timestamp(loader: Any, node: yaml.ScalarNode) -> Any:
    """A timestamp, or its text when it names no real date (``2026-13-45``).

    The stock constructor raises a bare ``ValueError`` there, and one bad date would drop
    the whole note from the index; as text the note stays readable and the memory code
    reports the owned value that does not parse (:func:`owned_problem`).
    """
    import yaml

    try:
        return yaml.SafeLoader.construct_yaml_timestamp(loader, node)
    except (ValueError, OverflowError):
        return loader.construct_scalar(node)


class _Loaders(NamedTuple):
    fast: Any
    py: Any
    strict: tuple[Any, ...]


@cache
def _loaders() -> _Loaders:
    """The YAML loader classes, made on first use: PyYAML is imported only by what reads
    or writes frontmatter (a keyword search never does, and its start-up is measured)."""
    import yaml

    # libyaml is ~10x faster for the read path (indexing parses every note) and is also
    # what locates key extents; the pure-Python loader words error messages better.
    class _FastLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
        """libyaml's safe loader with lenient timestamps."""

    class _PyLoader(yaml.SafeLoader):
        """PyYAML's safe loader with lenient timestamps."""

    for loader in (_FastLoader, _PyLoader):
        loader.add_constructor("tag:yaml.org,2002:timestamp", _lenient_timestamp)
    # The stock safe loaders: what decides whether a string may be written unquoted (a
    # value another YAML reader would take for a date must be quoted, even a bad one).
    strict = tuple(dict.fromkeys((getattr(yaml, "CSafeLoader", yaml.SafeLoader), yaml.SafeLoader)))
    return _Loaders(fast=_FastLoader, py=_PyLoader, strict=strict)


# A fence line: '---' (or '...' to close) with optional trailing blanks, ended by a line
# break of any style (YAML's own: LF, CRLF or a classic-Mac CR) or the end of the file.
# The opening fence must be exactly '---' (see split).
_CLOSING_RE = re.compile(rb"[\r\n]((?:---|\.\.\.)[ \t]*(?:\r\n|\r|\n|\Z))")
_OPENING_RE = re.compile(rb"---(\r\n|\r|\n)")
_LOOSE_OPENING_RE = re.compile(rb"---[ \t]+(?:\r\n|\r|\n)")
_BREAK_RE = re.compile(r"\r\n|\r|\n")

# Frontmatter that YAML aliases expand past this many values (keys and values counted) is
# refused: anchors a..i each aliasing the previous nine times expand to 9^9 values from
# 300 bytes, and every consumer (comparisons, copies, JSON) would walk all of them.
MAX_EXPANDED_VALUES = 10_000
# Deeper nesting is refused too: comparing and copying values recurses per level.
MAX_DEPTH = 100

_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
_UTF32_BOMS = (b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")

_STR_TAGS = (None, "!", "tag:yaml.org,2002:str")


# --------------------------------------------------------------------------- splitting


@dataclass(frozen=True)
class Parts:
    """A note split into BOM, frontmatter and body; ``to_bytes()`` gives back the input.

    ``newline`` is the line ending of the opening ``---`` (for a note without frontmatter:
    of the body's first line): LF, CRLF or CR, the style new frontmatter lines are
    written in. ``closing`` is the closing delimiter line exactly as written (``"---\\n"``,
    ``"...\\r\\n"``, ``"---  \\r"``, or ``"---"`` at end of file); empty when there is no
    frontmatter.
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
    match = re.search(rb"\r\n|\r|\n", data)
    return "\n" if match is None else match.group().decode("ascii")


def _count_breaks(text: str, end: int | None = None) -> int:
    """Line breaks (LF, CRLF or CR, as YAML counts them) in ``text[:end]``."""
    part = text if end is None else text[:end]
    return part.count("\n") + part.count("\r") - part.count("\r\n")


def _at(mark: Any) -> int:
    """The character offset of a PyYAML/libyaml mark (0 when there is none)."""
    return 0 if mark is None else int(mark.index)


def check_encoding(raw: bytes, source: str) -> str:
    """The note's text; ``NoteError`` when it is not UTF-8 (after an optional UTF-8 BOM).

    The one rule for every reader and writer: vaultmem reads and writes only UTF-8, so a
    UTF-16 note is refused by ``index`` and ``get`` as by ``pin`` (which would otherwise
    prepend UTF-8 frontmatter to UTF-16 bytes). NUL bytes are refused too: they are how
    UTF-16 without a BOM looks, and no markdown has them.
    """
    for boms, name in ((_UTF32_BOMS, "UTF-32"), (_UTF16_BOMS, "UTF-16")):
        if raw.startswith(boms):
            raise NoteError(
                f"{source}: note is {name}, vaultmem reads and writes only UTF-8 "
                f"(convert it: iconv -f {name} -t UTF-8)"
            )
    data = raw[len(BOM) :] if raw.startswith(BOM) else raw
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = 1 + _count_breaks(data[: err.start].decode("utf-8", "replace"))
        raise NoteError(
            f"{source}:{line}: not valid UTF-8 (byte {err.start + len(raw) - len(data)}: "
            f"{err.reason}); vaultmem reads and writes only UTF-8"
        ) from None
    nul = text.find("\0")
    if nul >= 0:
        raise NoteError(
            f"{source}:{1 + _count_breaks(text, nul)}: note contains NUL bytes (UTF-16 "
            "without a BOM?); vaultmem reads and writes only UTF-8 text"
        )
    return text


def split(raw: bytes, source: str = "<note>") -> Parts:
    """Split a note's bytes into BOM, frontmatter text and body bytes.

    Frontmatter is recognised only when the file (after an optional UTF-8 BOM) starts with
    a line that is exactly ``---`` and a later line is ``---`` or ``...``, optionally
    followed by spaces or tabs (kept byte for byte in ``closing``). Lines may end in LF,
    CRLF or CR. An opening ``---`` with trailing blanks opens nothing, as in Obsidian, which
    shows such a block as text (:func:`apply` refuses to write to such a note rather than
    stack a second block above it). The whole note must be UTF-8
    (:func:`check_encoding`).
    """
    check_encoding(raw, source)
    bom = BOM if raw.startswith(BOM) else b""
    data = raw[len(bom) :]
    opening = _OPENING_RE.match(data)
    # Searched from the opening's own line break, which a closing fence right after it
    # (an empty block) follows.
    match = None if opening is None else _CLOSING_RE.search(data, opening.end() - 1)
    if opening is None or match is None:
        # An opening rule with no closing one is a markdown horizontal rule, not frontmatter.
        return Parts(bom, _first_newline(data), None, "", data, 1, 1)
    newline, start = opening.group(1).decode("ascii"), opening.end()
    text = data[start : match.start(1)].decode("utf-8")
    closing = match.group(1).decode("ascii")
    yaml_line = 2
    body_line = yaml_line + _count_breaks(text) + 1
    return Parts(bom, newline, text, closing, data[match.end() :], yaml_line, body_line)


def _loose_opening(parts: Parts) -> bool:
    """Whether a note without frontmatter starts with ``---`` plus blanks and a fence
    follows: a block its author meant as frontmatter that Obsidian does not read as such."""
    opening = _LOOSE_OPENING_RE.match(parts.body)
    return (
        parts.frontmatter is None
        and opening is not None
        and _CLOSING_RE.search(parts.body, opening.end() - 1) is not None
    )


# --------------------------------------------------------------------------- parsing


def _yaml_problem(err: BaseException, text: str, yaml_line: int) -> str:
    """One line describing a YAML error, without PyYAML's multi-line mark dump."""
    import yaml

    if isinstance(err, yaml.reader.ReaderError):
        char = err.character
        code = char if isinstance(char, int) else ord(str(char)[:1] or "?")
        return f"unacceptable character #x{code:04x}: {err.reason}"
    unknown_tag = "could not determine a constructor for the tag"
    if isinstance(err, yaml.constructor.ConstructorError) and unknown_tag in (err.problem or ""):
        tag = str(err.problem).rsplit(" ", 1)[-1].strip("'").replace("tag:yaml.org,2002:", "!!")
        return f"unsupported YAML tag {tag!r}; vaultmem reads only plain YAML values"
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
    return yaml_line + _count_breaks(text, max(0, min(index, len(text))))


def _yaml_error_index(err: BaseException) -> int | None:
    """Character offset into the YAML text where ``err`` happened, when PyYAML knows it."""
    import yaml

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
    import yaml

    try:
        root = yaml.compose(text, Loader=_loaders().py)
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
                _loaders().py("").construct_object(node)
            except Exception:  # noqa: BLE001 - any failure marks the culprit
                return _at(node.start_mark)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(reversed(node.value))
        elif isinstance(node, yaml.MappingNode):
            for key, value in reversed(node.value):
                stack.extend((value, key))
    return None


class _Refused(Exception):
    """A composed document vaultmem will not construct; ``node`` is where it happens."""

    def __init__(self, problem: str, node: yaml.Node) -> None:
        super().__init__(problem)
        self.problem = problem
        self.index = _at(node.start_mark)


def _children(node: yaml.Node) -> list[yaml.Node]:
    import yaml

    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [child for pair in node.value for child in pair]
    return []


def _check_shape(root: yaml.Node) -> None:
    """Refuse a node graph that aliases expand past ``MAX_EXPANDED_VALUES`` values, that
    nests deeper than ``MAX_DEPTH``, or that contains itself (``&a [*a]``).

    Aliases share nodes, so sizes are memoised per node: the walk costs the number of
    distinct nodes (bounded by the text's length), never the expanded size. Iterative, so
    deep nesting cannot hit the recursion limit here.
    """
    size: dict[int, int] = {}
    depth: dict[int, int] = {}
    open_nodes: set[int] = set()
    too_big: yaml.Node | None = None
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, finished = stack.pop()
        key = id(node)
        if finished:
            kids = _children(node)
            size[key] = 1 + sum(size[id(k)] for k in kids)
            depth[key] = 1 + max((depth[id(k)] for k in kids), default=0)
            open_nodes.discard(key)
            if depth[key] > MAX_DEPTH:
                raise _Refused(
                    f"frontmatter nests values more than {MAX_DEPTH} levels deep; "
                    "vaultmem refuses it",
                    node,
                )
            if too_big is None and size[key] > MAX_EXPANDED_VALUES:
                too_big = node  # the smallest value over the bound: where to look
            continue
        if key in size:
            continue
        if key in open_nodes:
            raise _Refused(
                "frontmatter has a YAML alias inside its own anchor (a value that contains "
                "itself); vaultmem refuses it",
                node,
            )
        open_nodes.add(key)
        stack.append((node, True))
        stack.extend((kid, False) for kid in _children(node) if id(kid) not in size)
    # Only aliases can make the expanded size exceed the number of distinct nodes; a long
    # list written out in full is no bomb.
    if too_big is not None and size[id(root)] > len(size):
        raise _Refused(
            f"frontmatter expands YAML aliases to more than {MAX_EXPANDED_VALUES} values; "
            "vaultmem refuses it",
            too_big,
        )


def _could_be_hostile(text: str) -> bool:
    """Whether ``text`` can hold an alias or nest past ``MAX_DEPTH``: the shape check
    costs more than the load itself, and nearly every note needs none.

    Expansion and self-reference need an alias (``*``); every level of nesting needs an
    indicator (``[``, ``{``, ``:``, ``-`` or ``?``), so fewer of those bound the depth.
    """
    return "*" in text or sum(text.count(c) for c in "[{:-?") > MAX_DEPTH - 2


def _construct(text: str, loader_class: Any) -> Any:
    """``yaml.load`` with the node graph checked (:func:`_check_shape`) before any value
    is constructed."""
    loader = loader_class(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        if _could_be_hostile(text):
            _check_shape(node)
        return loader.construct_document(node)
    finally:
        loader.dispose()


def _load(text: str, parts: Parts, source: str) -> Any:
    """Load YAML text, turning every failure into ``NoteError("source:line: problem")``."""
    import yaml

    index: int | None
    try:
        return _construct(text, _loaders().fast)
    except _Refused as refused:
        index, problem = refused.index, refused.problem
    except yaml.YAMLError as fast_err:
        err: BaseException = fast_err
        # The pure-Python loader words errors better ("found '<stream end>'"); ask it.
        try:
            _construct(text, _loaders().py)
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
    A note holding git conflict markers anywhere is refused too, naming the unfinished
    merge (:mod:`vaultmem.conflict_markers`): its text is two versions at once.
    """
    parts = split(raw, source)
    if b"<<<<<<<" in raw:
        _refuse_conflict(raw, source)
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


def _refuse_conflict(raw: bytes, source: str) -> None:
    """``NoteError`` naming the first git conflict region of the note, if it has one."""
    from vaultmem.conflict_markers import RESOLVE_HINT, conflict_line

    data = raw[len(BOM) :] if raw.startswith(BOM) else raw
    line = conflict_line(data.decode("utf-8"))  # split checked it is UTF-8
    if line is not None:
        raise NoteError(
            f"{source}:{line}: git conflict markers: a merge of this note was left "
            f"unfinished; {RESOLVE_HINT}"
        )


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
    import yaml

    if not value or value != value.strip() or not all(_printable(ch) for ch in value):
        return False
    for doc, expected in ((f"k: {value}\n", {"k": value}), (f"k:\n  - {value}\n", {"k": [value]})):
        for loader in _loaders().strict:
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


# --------------------------------------------------------------------------- owned values


def iso_time(text: str) -> datetime | date | None:
    """ISO 8601 text (``2026-11-02``, ``2026-11-02T10:00:00Z``) as a date or datetime;
    None when it is not one."""
    text = text.strip()
    try:
        if len(text) == 10:
            return date.fromisoformat(text)
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def _is_time(value: object) -> bool:
    return isinstance(value, date) or (isinstance(value, str) and iso_time(value) is not None)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _is_count(value: object) -> bool:
    return _is_number(value) and float(value).is_integer() and value >= 0  # type: ignore[operator, arg-type]


def _is_half_life(value: object) -> bool:
    from vaultmem.scores import parse_half_life

    try:
        parse_half_life(value)  # type: ignore[arg-type]
    except ValueError:
        return False
    return True


def _is_links(value: object) -> bool:
    items = value if isinstance(value, list) else [value]
    return all(isinstance(item, str) and item.strip() for item in items)


_MARKER_LINE_RE = re.compile(r"(?:---|\.\.\.)(?:[ \t]|$)")


@lru_cache(maxsize=1024)
def saved_lines_problem(key: str, text: str) -> str | None:
    """Why ``text`` cannot be written back as ``key``'s lines (None when it can).

    Saved lines (:class:`ReplacedLines`) are ``key``'s top-level entry alone: YAML that
    reads as a mapping of exactly ``key``, line breaks as LF, no document marker line
    (``---``/``...``, which would end the frontmatter), not a ``|+`` block scalar.
    Cached: the memory view checks the saved value of every forgotten note it ranks.
    """
    if "\r" in text:
        return "has a carriage return (saved lines break with LF)"
    lines = text.split("\n")
    if any(_MARKER_LINE_RE.match(line) for line in lines):
        return "has a document marker line (--- or ...)"
    if _KEEP_HEADER_RE.search(lines[0]):
        # Its value runs on over the blank lines that follow it in the note, which the
        # saved lines cannot hold.
        return "is a block scalar that keeps trailing blank lines (|+)"
    try:
        data = _construct(text + "\n", _loaders().fast)  # ended as its last line is in a note
    except Exception:  # noqa: BLE001 - whatever fails to load cannot be written back
        return "is not YAML on its own"
    if not isinstance(data, dict) or list(data) != [key]:
        return f"is not the lines of one {key!r} key"
    return None


def _is_saved(key: str) -> Callable[[object], bool]:
    """The check of ``key``'s saved lines (its ``UNDO_KEYS`` key)."""

    def valid(value: object) -> bool:
        return isinstance(value, str) and saved_lines_problem(key, value) is None

    return valid


_TIME = (_is_time, "is not a date")
_COUNT = (_is_count, "is not a whole number of 0 or more")
_LINKS = (_is_links, "is not a link or a list of links")
_TEXT = (lambda v: isinstance(v, str), "is not text")
# What a valid value of each owned key is, and how a bad one is described.
_VALID: dict[str, tuple[Callable[[object], bool], str]] = {
    "type": _TEXT,
    "confidence": (lambda v: _is_number(v) and 0 <= v <= 1, "is not a number from 0 to 1"),  # type: ignore[operator]
    "half_life": (_is_half_life, "is not a half-life (30d, 12h, 2w or never)"),
    "pinned": (lambda v: isinstance(v, bool), "is not true or false"),
    "snoozed_until": _TIME,
    "status": _TEXT,
    "strength": (_is_number, "is not a number"),
    "use_count": _COUNT,
    "last_used": _TIME,
    "created": _TIME,
    "review_count": _COUNT,
    "last_review": _TIME,
    "cross_domain_count": _COUNT,
    "last_confirmed": _TIME,
    **dict.fromkeys(OWNED_KEYS[OWNED_KEYS.index("supersedes") :], _LINKS),
    **{
        saved: (_is_saved(key), f"is not a {key} line vaultmem saved")
        for key, saved in UNDO_KEYS.items()
    },
}


def owned_problem(key: str, value: object) -> str | None:
    """Why ``value`` is not a valid value of the owned key ``key`` (None when it is).

    None and ``""`` are an absent value, not a problem. Dates may be YAML dates or ISO
    text (the manifest keeps them as text). The memory code treats a key with a problem
    as absent, and the note reports it (:attr:`vaultmem.note.Note.warnings`).
    """
    if value is None or value == "" or key not in _VALID:
        return None
    valid, problem = _VALID[key]
    return None if valid(value) else problem


def _shown(value: object) -> str:
    text = repr(value) if isinstance(value, str) else str(value)
    if isinstance(value, date):
        text = repr(value.isoformat())
    return text if len(text) <= 40 else text[:37] + "..."


def owned_warnings(
    meta: Mapping[Any, Any], parts: Parts, keys: KeyScheme = BARE
) -> tuple[str, ...]:
    """One line per owned key whose value is invalid, e.g. ``created: '2026-13-45' is not a
    date (line 3); treated as absent``. Cheap when there is none (the usual case). A user's
    value under an owned name (``status: reading``) is not vaultmem's and not reported."""
    owned = keys.owned_view(meta)
    found = {key: owned_problem(key, value) for key, value in owned.items()}
    warnings = []
    for key in OWNED_KEYS:
        problem = found.get(key)
        if problem is None:
            continue
        name = keys.names[key]
        where = _key_line(parts, name)
        at = "" if where is None else f" (line {where})"
        warnings.append(f"{name}: {_shown(owned[key])} {problem}{at}; treated as absent")
    return tuple(warnings)


def _key_line(parts: Parts, key: str) -> int | None:
    """The file line of the last top-level ``key:`` (the one YAML keeps)."""
    name = re.escape(key)
    pattern = re.compile(rf"[ \t]*(?:{name}|'{name}'|\"{name}\")[ \t]*:")
    found = None
    for n, line in enumerate(_split_lines(parts.frontmatter or "")):
        if pattern.match(line):
            found = parts.yaml_line + n
    return found


# --------------------------------------------------------------------------- locating keys


@dataclass(frozen=True)
class _Extent:
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
class _Layout:
    lines: list[str]
    extents: list[_Extent] = field(default_factory=list)
    comments: dict[int, _Comment] = field(default_factory=dict)
    indent: str = ""


_LINE_RE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def _split_lines(text: str) -> list[str]:
    """Lines with their endings kept, split on LF, CRLF and CR (YAML's line breaks).

    ``str.splitlines`` would also split on U+2028, form feeds and friends, which are
    ordinary characters inside a line of the file.
    """
    return _LINE_RE.findall(text)


def _content(line: str) -> str:
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
            end = max(end, _at(event.end_mark))
        elif isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            end = max(end, _at(event.end_mark))
            flows.append(bool(event.flow_style))
        elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
            if flows.pop():
                end = max(end, _at(event.end_mark))
        else:
            raise ValueError(f"unexpected YAML event {type(event).__name__}")
        if not flows:
            return i, end


_BLOCK_HEADER_RE = re.compile(r"[|>][-+0-9]*")


def _comments(text: str, lines: list[str], events: list[Any]) -> dict[int, _Comment]:
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
        end = start + len(_content(line))
        later = 0  # a block scalar covers its header line only up to its indicators
        while e < len(events) and _at(events[e].start_mark) < end:
            event = events[e]
            header = None
            if isinstance(event, yaml.ScalarEvent) and event.style in ("|", ">"):
                header = _BLOCK_HEADER_RE.search(text, _at(event.start_mark), end)
            if header is None:
                reach = max(reach, _at(event.end_mark))
            else:
                reach, later = max(reach, header.end()), max(later, _at(event.end_mark))
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


def _layout(
    text: str, parts: Parts, source: str, names: Mapping[str, str] | None = None
) -> _Layout:
    """Find where each top-level owned key (a name of ``names``: the bare ones by default)
    lives in the frontmatter text.

    Raises ``NoteError`` for a top-level key written twice (YAML silently keeps the last
    one; which one the user meant is not vaultmem's to guess).
    """
    import yaml

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
        events = list(yaml.parse(text, Loader=_loaders().fast))
    except yaml.YAMLError as err:
        # parse_meta accepted this text, so this is not expected; refuse to edit.
        lineno = _file_line(text, parts.yaml_line, _yaml_error_index(err) or 0)
        raise NoteError(f"{source}:{lineno}: {_yaml_problem(err, text, parts.yaml_line)}") from None
    layout.comments = _comments(text, lines, events)

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
        key_start = _at(key_event.start_mark)
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
        layout.extents.append(_Extent(key_event.value, line_of(key_start), line_of(last)))
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
    layout = _layout(parts.frontmatter, parts, source, names)
    spans = tuple((e.key, e.first, e.last) for e in sorted(layout.extents, key=lambda e: e.first))
    return OwnedLines(tuple(layout.lines), spans)


def frontmatter_lines(text: str) -> list[str]:
    """Frontmatter text as lines with their endings, split on LF, CRLF and CR only (what
    YAML counts as a line; ``str.splitlines`` would also split on U+2028)."""
    return _split_lines(text)


def same_value(a: object, b: object) -> bool:
    """Whether two frontmatter values read the same to a person (``true`` is not ``1``, a
    date is not its midnight datetime); the equality every write-back check uses."""
    return _same(a, b)


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
        events = list(yaml.parse(text, Loader=_loaders().fast))
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
        at = _file_line(text, parts.yaml_line, _at(key_event.start_mark))
        if identity in seen:
            warnings.append(
                f"duplicate key {identity[1]!r} (lines {seen[identity]} and {at}): YAML keeps "
                "only the last one; a `merge=union` merge writes both sides' lines (keep the "
                "right one; `vaultmem git setup` merges notes by meaning)"
            )
        else:
            seen[identity] = at
    return tuple(warnings)


# --------------------------------------------------------------------------- applying


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
                raise ValueError(f"{key}: saved lines {_shown(value.text)} {problem}")
            checked[key] = value
        else:
            checked[key] = None if value is None else _normalise(value)
            if value is not None:
                render_value(key, value)  # type errors surface here, before any edit
    return checked


def _saved_lines(layout: _Layout, key: str, parts: Parts, source: str) -> str | None:
    """The text :class:`ReplacedLines` keeps of ``key``; None when it has no lines."""
    extent = next((e for e in layout.extents if e.key == key), None)
    if extent is None:
        return None
    indent = layout.indent
    lines = [_content(line) for line in layout.lines[extent.first : extent.last + 1]]
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
        elif key not in meta or not _same(meta[key], value):
            changes[key] = value
    layout = None
    if changes and parts.frontmatter is not None:
        layout = _layout(parts.frontmatter, parts, source, names)
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
            if key not in meta or not _same(meta[key], text):
                changes[key] = text
    if not changes:
        return raw

    newline = parts.newline
    if parts.frontmatter is None:
        if _loose_opening(parts):
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
            value = _ReadsAs(_construct(value.text + "\n", _loaders().fast)[key])
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
    layout: _Layout,
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


_KEEP_HEADER_RE = re.compile(r":[ \t]*[|>](?:[1-9]?\+|\+[1-9]?)[ \t]*(?:#.*)?$")


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
                keeps, dropped = bool(_KEEP_HEADER_RE.search(_content(new.splitlines()[0]))), False
            else:
                dropped = True
            i = last + 1
            continue
        line = _content(lines[i])
        if not line.strip():
            if not (keeps and dropped):
                out.append(lines[i])
        elif line.startswith(indent) and line[len(indent) : len(indent) + 1] not in (" ", "\t"):
            rest = line[len(indent) :]
            keeps, dropped = not rest.startswith("#") and bool(_KEEP_HEADER_RE.search(line)), False
            out.append(lines[i])
        else:
            out.append(lines[i])
        i += 1
    return out


def _replacement(layout: _Layout, extent: _Extent, value: object | None, newline: str) -> str:
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
        new = _split_lines(render_value(extent.key, value, newline, layout.indent))
    key_comment = layout.comments.get(extent.first)
    if new and key_comment is not None and not key_comment.alone:
        new[0] = _content(new[0]) + key_comment.suffix + newline
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
        kept = _content(layout.lines[i])[: -len(comment.suffix)].strip()
        same = [j for j in range(1, len(new)) if j not in taken and new[j].strip() == kept]
        if same:
            taken.add(same[0])
            new[same[0]] = _content(new[same[0]]) + comment.suffix + newline
        else:
            moved.append(f"{inside}{comment.suffix.strip()}{newline}")
    return "".join(new[:1] + moved + new[1:])


def _written_back(layout: _Layout, extent: _Extent, saved: str, newline: str) -> tuple[int, str]:
    """(last line replaced, text) that puts ``saved`` back over the key's lines.

    The comments :func:`_replacement` moved below the key's line when the saved lines were
    replaced come from ``saved`` again, so the lines right after the key that are those
    comments, in their order, are replaced too. The comment on the key's line now wins
    over the saved one: a comment the user edited since is theirs.
    """
    import yaml

    lines = saved.split("\n")
    events = list(yaml.parse(saved, Loader=_loaders().fast))
    comments = _comments(saved, _split_lines(saved), events)
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
        if _content(layout.lines[last + 1]).strip() != moved:
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
            if key not in after or not _same(after[key], value.value):
                problems.append(f"{key!r} reads back as {after.get(key)!r}, not {value.value!r}")
        elif value is None:
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
    """What ``update_note`` did: whether it wrote, the owned keys before and after, and how
    many times a concurrent save made it re-apply the updates to the user's bytes."""

    path: Path
    changed: bool
    before: dict[str, Any]
    after: dict[str, Any]
    reapplied: int = 0


def _named(
    meta: Mapping[Any, Any], updates: Mapping[str, object | None], keys: KeyScheme, source: str
) -> dict[str, object | None]:
    """``updates`` (under vaultmem's key names) as :func:`apply` takes them: each value of
    its key's one property type (:func:`vaultmem.properties.coerce`), under the key's name
    in the note. A key holding a user's value (``status: reading``) is refused."""
    out: dict[str, object | None] = {}
    for key, value in updates.items():
        name = keys.names.get(key, key)  # apply names a key vaultmem does not own
        if name in meta and not keys.ours(key, meta[name]):
            raise UserKeyError(
                f"{source}: '{name}: {meta[name]}' is your key, not vaultmem's; left as it is. "
                f'To give vaultmem its own keys, set [keys] prefix = "vm_" in .vaultmem.toml '
                "and run `vaultmem keys migrate --prefix vm_`"
            )
        if isinstance(value, ReplacedLines):
            value = ReplacedLines(keys.names.get(value.key, value.key))
        elif not isinstance(value, KeyLines) and value is not None:
            value = coerce(key, value)
        out[name] = value
    return out


def update_note(
    path: Path,
    compute: Callable[[dict[Any, Any]], Mapping[str, object | None]],
    source: str,
    keys: KeyScheme = BARE,
) -> WriteResult:
    """Read a note, ask ``compute(meta)`` for owned-key updates, and write them back.

    ``compute`` gets a copy of the parsed frontmatter and returns ``{key: value or None}``.
    Both speak vaultmem's key names: under a prefix (``keys``) ``meta`` holds ``status``
    for the note's ``vm_status``; a user's value under an owned name (bare ``status:
    reading``) is not in ``meta``, and an update of it raises ``UserKeyError``. Values
    are written as their key's one property type (:data:`vaultmem.properties.PROPERTY_TYPES`).
    ``before``/``after`` hold the owned keys under vaultmem's names.
    The write is :func:`vaultmem.atomic.rewrite`: a save that lands meanwhile (the user
    in Obsidian) is kept and ``compute`` is called again on it, so the last call is the one
    written; a note that keeps changing raises ``ConflictError`` (exit 75) with the user's
    bytes in place. An unchanged result is not written (the file's mtime stays).
    Malformed YAML raises ``NoteError`` and leaves the file as it was.
    """
    from vaultmem.atomic import rewrite  # its ctypes is for writers only

    path = Path(path)
    owned: dict[bytes, dict[str, Any]] = {}

    def view(meta: Mapping[Any, Any]) -> dict[Any, Any]:
        # Every owned name goes, a user's bare `status` under a prefix too: it is not ours.
        shown = {k: v for k, v in meta.items() if k not in keys.keys_of and k not in _ORDER}
        return shown | keys.owned_view(meta)

    def transform(raw: bytes) -> bytes:
        meta, _parts = parse_meta(raw, source)
        owned[raw] = keys.owned_view(meta)
        updates = compute(copy.deepcopy(view(meta)))
        return apply(raw, _named(meta, updates, keys, source), source, names=keys.keys_of)

    done = rewrite(path, transform, source)
    before = owned[done.before]
    if not done.changed:
        return WriteResult(path, False, before, before, done.reapplied)
    after, _ = parse_meta(done.after, source)
    return WriteResult(path, True, before, keys.owned_view(after), done.reapplied)
