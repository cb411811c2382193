"""JSON with comments (JSONC), as Gemini CLI reads its ``settings.json``: ``//`` and
``/* */`` comments, and trailing commas. Read it (:func:`loads`) and change one member of
one object in place (:func:`set_member`, :func:`remove_member`), every other byte (the
user's comments, layout, key order) kept.

The edit is found on a small position-aware parse of the text, and the caller checks the
result by parsing it back (:func:`loads`) before anything is written.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["JsoncError", "loads", "remove_member", "set_member"]

_SPACE = re.compile(r"(?:\s+|//[^\n]*|/\*.*?\*/)*", re.DOTALL)
_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')
_SCALAR = re.compile(r"[^\s,\]\}/]+")


class JsoncError(ValueError):
    """The text is not JSON with comments (message: what and where)."""


@dataclass
class _Object:
    """An object of the text: where its braces are, and each member's spans."""

    start: int  # offset of "{"
    end: int = 0  # offset of "}"
    # name → (key start, value start, value end, the value when it is an object)
    members: dict[str, tuple[int, int, int, _Object | None]] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.at = 0

    def space(self) -> None:
        self.at = _SPACE.match(self.text, self.at).end()  # type: ignore[union-attr]

    def fail(self, what: str) -> JsoncError:
        line = self.text.count("\n", 0, self.at) + 1
        return JsoncError(f"{what} at line {line}")

    def value(self) -> tuple[Any, _Object | None]:
        self.space()
        ch = self.text[self.at : self.at + 1]
        if ch == "{":
            return self.object()
        if ch == "[":
            return self.array(), None
        if ch == '"':
            found = _STRING.match(self.text, self.at)
            if not found:
                raise self.fail("an unterminated string")
            self.at = found.end()
            return json.loads(found.group()), None
        found = _SCALAR.match(self.text, self.at)
        if not found:
            raise self.fail("a value expected")
        self.at = found.end()
        try:
            return json.loads(found.group()), None
        except ValueError:
            raise self.fail(f"{found.group()!r} is no JSON value") from None

    def array(self) -> list[Any]:
        self.at += 1
        items: list[Any] = []
        while True:
            self.space()
            if self.text.startswith("]", self.at):
                self.at += 1
                return items
            items.append(self.value()[0])
            self.space()
            if self.text.startswith(",", self.at):
                self.at += 1
            elif not self.text.startswith("]", self.at):
                raise self.fail("',' or ']' expected")

    def object(self) -> tuple[dict[str, Any], _Object]:
        node = _Object(self.at)
        self.at += 1
        data: dict[str, Any] = {}
        while True:
            self.space()
            if self.text.startswith("}", self.at):
                node.end = self.at
                self.at += 1
                return data, node
            key_start = self.at
            key, _ = self.value()
            if not isinstance(key, str):
                raise self.fail("a member name expected")
            self.space()
            if not self.text.startswith(":", self.at):
                raise self.fail("':' expected")
            self.at += 1
            self.space()
            value_start = self.at
            data[key], child = self.value()
            node.members[key] = (key_start, value_start, self.at, child)
            if key not in node.order:
                node.order.append(key)
            self.space()
            if self.text.startswith(",", self.at):
                self.at += 1
            elif not self.text.startswith("}", self.at):
                raise self.fail("',' or '}' expected")


def _parse(text: str) -> tuple[Any, _Object | None]:
    parser = _Parser(text)
    value, node = parser.value()
    parser.space()
    if parser.at != len(text):
        raise parser.fail("text after the value")
    return value, node


def loads(text: str) -> Any:
    """The value of JSONC ``text`` (an empty text is ``{}``); :class:`JsoncError` when it
    is not JSON with comments.

    Example:
        >>> loads('{"a": 1, // one\\n "b": [2,],}')
        {'a': 1, 'b': [2]}
    """
    if not text.strip():
        return {}
    return _parse(text)[0]


def _indent_unit(text: str) -> str:
    found = re.search(r"\n([ \t]+)\S", text)
    return found.group(1) if found else "  "


def _line_indent(text: str, at: int) -> str:
    start = text.rfind("\n", 0, at) + 1
    return re.match(r"[ \t]*", text[start:at]).group()  # type: ignore[union-attr]


def _render(value: Any, indent: str, unit: str) -> str:
    lines = json.dumps(value, indent=len(unit.expandtabs()), ensure_ascii=False).split("\n")
    if "\t" in unit:
        lines = [re.sub(r"^( +)", lambda m: "\t" * (len(m.group(1)) // 8), x) for x in lines]
    return "\n".join([lines[0], *(indent + line for line in lines[1:])])


def _object_at(text: str, keys: tuple[str, ...]) -> tuple[_Object, list[str]]:
    """The object at ``keys`` (as far as it exists) and the keys left to create."""
    _, node = _parse(text) if text.strip() else (None, None)
    if node is None:
        raise JsoncError("the file is not a JSON object")
    for depth, key in enumerate(keys):
        member = node.members.get(key)
        if member is None:
            return node, list(keys[depth:])
        if member[3] is None:
            raise JsoncError(f"{'.'.join(keys[: depth + 1])} is not an object")
        node = member[3]
    return node, []


def _insert(text: str, node: _Object, name: str, value: Any) -> str:
    """``text`` with the member ``name: value`` added at the end of object ``node``."""
    unit = _indent_unit(text)
    if not node.order:
        outer = _line_indent(text, node.start)
        inner = outer + unit
        member = f"{json.dumps(name)}: {_render(value, inner, unit)}"
        body = text[node.start + 1 : node.end]
        kept = body.rstrip()
        return f"{text[: node.start + 1]}{kept}\n{inner}{member}\n{outer}{text[node.end :]}"
    key_start, _, value_end, _ = node.members[node.order[-1]]
    indent = _line_indent(text, key_start)
    member = f"{json.dumps(name)}: {_render(value, indent, unit)}"
    after = _SPACE.match(text, value_end).end()  # type: ignore[union-attr]
    if text.startswith(",", after):
        comma, at = "", after + 1
    else:
        comma, at = ",", value_end
    # After the rest of the last member's line when it holds only a comment: the
    # comment stays with the member it was written for.
    rest = re.match(r"[ \t]*(?://[^\n]*)?(?=\n)", text[at:])
    if rest is not None:
        at += rest.end()
    head = text[:value_end] + comma + text[value_end:at] if comma else text[:at]
    return f"{head}\n{indent}{member}{text[at:]}"


def set_member(text: str, keys: tuple[str, ...], name: str, value: Any) -> str:
    """``text`` with member ``name`` of the object at ``keys`` set to ``value``: its value
    replaced where it stands, or the member added at the end of that object (the objects
    on the way made when missing). :class:`JsoncError` when the text is not a JSONC
    object or a key on the way is not an object."""
    if not text.strip():
        text = "{}\n"
    node, missing = _object_at(text, keys)
    if missing:
        nested: Any = {name: value}
        for key in reversed(missing[1:]):
            nested = {key: nested}
        return _insert(text, node, missing[0], nested)
    member = node.members.get(name)
    if member is None:
        return _insert(text, node, name, value)
    key_start, value_start, value_end, _ = member
    rendered = _render(value, _line_indent(text, key_start), _indent_unit(text))
    return text[:value_start] + rendered + text[value_end:]


def remove_member(text: str, keys: tuple[str, ...], name: str) -> str:
    """``text`` without member ``name`` of the object at ``keys`` (unchanged when there
    is none): its line, from the indentation to its comma or, for the last member, to
    the end of its value (the comma before it stays: JSONC allows a trailing comma)."""
    if not text.strip():
        return text
    node, missing = _object_at(text, keys)
    if missing or name not in node.members:
        return text
    key_start, _, value_end, _ = node.members[name]
    after = _SPACE.match(text, value_end).end()  # type: ignore[union-attr]
    start = key_start - len(_line_indent(text, key_start))
    if start > 0 and text[start - 1] == "\n" and text[start:key_start].strip() == "":
        start -= 1  # the member's own line goes
    else:
        start = key_start
    if text.startswith(",", after):
        return text[:start] + text[after + 1 :]
    # The last member: a comma before it stays, as the trailing comma JSONC allows.
    return text[:start] + text[value_end:]
