"""The frontmatter scanner: a note's bytes split into BOM, frontmatter and body
(:class:`Parts`, :func:`split`), checked to be UTF-8 (:func:`check_encoding`), and its
YAML loaded (:func:`parse_meta`).

Every failure is one line naming the note and the line. Hostile shapes are refused before
any value is constructed: aliases that expand past ``MAX_EXPANDED_VALUES`` values, a value
that contains itself, nesting deeper than ``MAX_DEPTH``; so are tags other than YAML's
standard ones and notes holding git conflict markers.

Also here, for the rest of the package: the YAML loaders (:func:`loaders`), the checked
load (:func:`construct`) and the one-line wording of a YAML error (:func:`yaml_problem`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any, NamedTuple

from vaultmem.errors import NoteError

if TYPE_CHECKING:
    import yaml

__all__ = [
    "BOM",
    "MAX_DEPTH",
    "MAX_EXPANDED_VALUES",
    "Parts",
    "check_encoding",
    "frontmatter_size",
    "parse_meta",
    "split",
]

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
def loaders() -> _Loaders:
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


def mark_offset(mark: Any) -> int:
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


_FENCE_STARTS = (b"\n---", b"\r---", b"\n...", b"\r...")


def _closing_fence(data: bytes, start: int) -> re.Match[bytes] | None:
    """``_CLOSING_RE.search(data, start)``, found by plain searches for where a fence
    line can start, in windows that double, and the pattern tried only there: the cost
    follows the frontmatter's length, not the note's (the pattern alone took 30 ms a MB,
    and a search for a fence a note does not have reads all of it)."""
    at, end, window = start, start, 4096
    while at < len(data):
        if at >= end:
            end, window = at + window, window * 2
        found = [i for i in (data.find(f, at, end + 3) for f in _FENCE_STARTS) if i >= 0]
        if not found:
            at = end
            continue
        at = min(found)
        match = _CLOSING_RE.match(data, at)
        if match is not None:
            return match
        at += 1
    return None


def frontmatter_size(raw: bytes) -> int:
    """How many bytes the note's frontmatter text has (0: none), found as :func:`split`
    finds it but without decoding the note: a cheap look before deciding to read it."""
    data = raw[len(BOM) :] if raw.startswith(BOM) else raw
    opening = _OPENING_RE.match(data)
    match = None if opening is None else _closing_fence(data, opening.end() - 1)
    return 0 if opening is None or match is None else max(match.start(1) - opening.end(), 0)


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
    match = None if opening is None else _closing_fence(data, opening.end() - 1)
    if opening is None or match is None:
        # An opening rule with no closing one is a markdown horizontal rule, not frontmatter.
        return Parts(bom, _first_newline(data), None, "", data, 1, 1)
    newline, start = opening.group(1).decode("ascii"), opening.end()
    text = data[start : match.start(1)].decode("utf-8")
    closing = match.group(1).decode("ascii")
    yaml_line = 2
    body_line = yaml_line + _count_breaks(text) + 1
    return Parts(bom, newline, text, closing, data[match.end() :], yaml_line, body_line)


def loose_opening(parts: Parts) -> bool:
    """Whether a note without frontmatter starts with ``---`` plus blanks and a fence
    follows: a block its author meant as frontmatter that Obsidian does not read as such."""
    opening = _LOOSE_OPENING_RE.match(parts.body)
    return (
        parts.frontmatter is None
        and opening is not None
        and _closing_fence(parts.body, opening.end() - 1) is not None
    )


# --------------------------------------------------------------------------- parsing


def yaml_problem(err: BaseException, text: str, yaml_line: int) -> str:
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
                start = file_line(text, yaml_line, int(err.context_mark.index))
                if start != file_line(text, yaml_line, int(err.problem_mark.index)):
                    context += f" (started on line {start})"
            return f"invalid YAML: {context}: {problem}"
        return f"invalid YAML: {problem}"
    first = str(err).strip().splitlines()
    return "invalid YAML: " + (first[0] if first else type(err).__name__)


def file_line(text: str, yaml_line: int, index: int) -> int:
    """The file line of character ``index`` of the frontmatter text."""
    return yaml_line + _count_breaks(text, max(0, min(index, len(text))))


def yaml_error_index(err: BaseException) -> int | None:
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
        root = yaml.compose(text, Loader=loaders().py)
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
                loaders().py("").construct_object(node)
            except Exception:  # noqa: BLE001 - any failure marks the culprit
                return mark_offset(node.start_mark)
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
        self.index = mark_offset(node.start_mark)


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


def construct(text: str, loader_class: Any) -> Any:
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
        return construct(text, loaders().fast)
    except _Refused as refused:
        index, problem = refused.index, refused.problem
    except yaml.YAMLError as fast_err:
        err: BaseException = fast_err
        # The pure-Python loader words errors better ("found '<stream end>'"); ask it.
        try:
            construct(text, loaders().py)
        except yaml.YAMLError as py_err:
            err = py_err
        except Exception:  # noqa: BLE001 - keep libyaml's error then
            pass
        index = yaml_error_index(err)
        problem = yaml_problem(err, text, parts.yaml_line)
    except RecursionError:
        index, problem = None, "frontmatter is nested too deeply"
    except (ValueError, TypeError, OverflowError) as err2:
        index, problem = _locate_bad_scalar(text), f"invalid value: {err2}"
    line = parts.yaml_line if index is None else file_line(text, parts.yaml_line, index)
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
