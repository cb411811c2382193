"""The byte-exact frontmatter write-back: vaultmem may change its own keys and nothing else."""

from __future__ import annotations

import io
import math
import os
import random
import stat
from datetime import UTC, date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from vaultmem import atomic as atomic_mod
from vaultmem.atomic import atomic_write
from vaultmem.errors import ConflictError, NoteError
from vaultmem.frontmatter.edit import apply
from vaultmem.frontmatter.files import WriteResult, update_note
from vaultmem.frontmatter.render import render_value
from vaultmem.frontmatter.scan import parse_meta, split
from vaultmem.properties import OWNED_KEYS

BOM = b"\xef\xbb\xbf"
SETTINGS = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# --------------------------------------------------------------------------- strategies

TRICKY_TEXT = [
    "it's",
    'say "hi"',
    "a: b",
    "key: value # not a comment",
    "---",
    "...",
    "[[Link]]",
    "#tag",
    "2026-11-02",
    "2026-11-02 10:00:00",
    "yes",
    "null",
    "",
    " leading",
    "trailing ",
    "multi\nline\n",
    "tab\there",
    "ünïcödé 中文 🙂",
    "- dash",
    "{brace",
    "&anchor",
    "*alias",
    "!tag",
    "%percent",
    "@at",
    "`tick",
    "line\u2028sep",
    "nel\x85x",
    "del\x7f",
    "100",
    "1:30",
    "0x1F",
]

texts = st.one_of(
    st.sampled_from(TRICKY_TEXT),
    st.text(st.characters(exclude_categories=("Cs",)), max_size=25),
)
datetimes = st.datetimes(
    min_value=datetime(1900, 1, 1),
    max_value=datetime(2200, 1, 1),
    timezones=st.sampled_from([None, UTC]),
)
user_key = st.one_of(
    st.sampled_from(["title", "tags", "aliases", "updated", "when", "my key", "x:y", "é"]),
    st.text(st.characters(exclude_categories=("Cs", "Cc")), min_size=1, max_size=12),
).filter(lambda k: k not in OWNED_KEYS)
user_scalar = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    texts,
    st.dates(min_value=date(1000, 1, 1)),
    datetimes,
)
user_value = st.recursive(
    user_scalar,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(user_key, children, max_size=4),
    ),
    max_leaves=10,
)
user_meta = st.dictionaries(user_key, user_value, min_size=1, max_size=6)

owned_scalar = st.one_of(
    texts,
    st.sampled_from(["[[Some Note]]", "[[Folder/Note|alias]]", "decision", "30d", "never"]),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False),
    st.booleans(),
    st.dates(min_value=date(1000, 1, 1)),
    st.datetimes(
        min_value=datetime(1900, 1, 1),
        max_value=datetime(2200, 1, 1),
        timezones=st.sampled_from(
            [
                None,
                UTC,
                timezone(timedelta(hours=2)),
                timezone(timedelta(hours=-5, minutes=-30)),
                timezone(timedelta(seconds=3601)),  # not whole minutes: stored as UTC
            ]
        ),
    ),
)
owned_value = st.one_of(owned_scalar, st.lists(owned_scalar, max_size=4))
owned_updates = st.dictionaries(st.sampled_from(OWNED_KEYS), owned_value, min_size=1)

HAND_WRITTEN = [
    "title: My note\n",
    "title:   spaced value   \ntags: [a, b]\n",
    "aliases:\n- x\n- y\n",
    "aliases:\n  - x\n  - 'y'\n",
    "nested:\n    deep:\n        - 1\n        - {a: b}\n",
    "quote: 'it''s'\ndq: \"a \\\"b\\\"\"\n",
    "multi: |\n  line one\n  line two\n\nafter: 1\n",
    "keep: |+\n  kept\n\n",
    "folded: >-\n  a\n  b\n",
    "empty:\nalso_empty:\n",
    "updated: 2026-11-02\nwhen: 2026-11-02 10:00:00\n",
    "\n\ntitle: blank lines around\n\n",
    'tags:\n  - x\n  - y\ntitle: "Title: with colon"\n',
    "long: this is a plain scalar\n  that continues on the next line\n",
    "'quoted key': 1\n\"dq key\": 2\n",
    "k: [1,\n  2, 3]\n",
    "a: &anchor {x: 1}\nb: *anchor\n",
]

body_line = st.one_of(
    st.sampled_from(
        ["---", "...", "# Heading", "## Sub", "text with trailing   ", "", "- item", "k: v", "```"]
    ),
    # No NUL: vaultmem refuses notes with NUL bytes (UTF-16 without a BOM looks like that).
    st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\0"), max_size=30),
)


@st.composite
def bodies(draw: st.DrawFn) -> str:
    lines = draw(st.lists(body_line, max_size=6))
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    text = newline.join(lines)
    if lines and draw(st.booleans()):
        text += newline
    return text


def _style_nodes(node: yaml.Node, rnd: random.Random, top: bool) -> None:
    """Give a represented YAML node tree random (valid) styles; the top stays block style."""
    if isinstance(node, yaml.ScalarNode):
        if node.tag == "tag:yaml.org,2002:str":
            node.style = rnd.choice([None, None, "'", '"', "|", ">"])
        return
    node.flow_style = False if top else rnd.choice([True, False])
    if isinstance(node, yaml.SequenceNode):
        for child in node.value:
            _style_nodes(child, rnd, False)
    else:
        for key, value in node.value:
            _style_nodes(key, rnd, False)
            _style_nodes(value, rnd, False)


@st.composite
def frontmatter_texts(draw: st.DrawFn) -> str:
    """User frontmatter (no owned keys) in safe_dump styles or hand-written ones."""
    if draw(st.integers(0, 3)) == 0:
        return draw(st.sampled_from(HAND_WRITTEN))
    data = draw(user_meta)
    stream = io.StringIO()
    dumper = yaml.SafeDumper(
        stream,
        default_flow_style=False,
        indent=draw(st.sampled_from([2, 3, 4])),
        width=draw(st.sampled_from([20, 60, 80, 4096])),
        allow_unicode=draw(st.booleans()),
        sort_keys=draw(st.booleans()),
    )
    try:
        dumper.open()
        node = dumper.represent_data(data)
        _style_nodes(node, draw(st.randoms(use_true_random=False)), True)
        dumper.serialize(node)
        dumper.close()
    finally:
        dumper.dispose()
    return stream.getvalue()


@st.composite
def notes(draw: st.DrawFn) -> bytes:
    """A note with user frontmatter: LF or CRLF, BOM or not, '---' or '...' closing."""
    fm = draw(frontmatter_texts())
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    closing = draw(st.sampled_from(["---", "..."]))
    body = draw(bodies())
    text = "---\n" + fm + closing + "\n"
    if newline == "\r\n":
        text = text.replace("\n", "\r\n")
    raw = (text + body).encode("utf-8")
    if not body and draw(st.booleans()):
        raw = raw[: -len(newline)]  # closing delimiter at end of file, no newline
    if draw(st.booleans()):
        raw = BOM + raw
    try:
        parse_meta(raw, "gen.md")
    except NoteError:
        assume(False)  # a generated dump libyaml refuses is not a write-back case
    return raw


# --------------------------------------------------------------------------- helpers


def _same(a: Any, b: Any) -> bool:
    """Equality that tells true from 1 and a date from a datetime."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, datetime) or isinstance(b, datetime):
        return isinstance(a, datetime) and isinstance(b, datetime) and a == b
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return bool(a == b)


def _expected(value: Any) -> Any:
    """What a value reads back as: datetimes to the second, odd offsets as UTC."""
    if isinstance(value, datetime):
        value = value.replace(microsecond=0)
        offset = value.utcoffset()
        if offset is not None and offset % timedelta(minutes=1):
            value = value.astimezone(UTC)
        return value
    if isinstance(value, tuple | list):
        return [_expected(v) for v in value]
    return value


def _split_lf(raw: bytes) -> list[bytes]:
    """Lines split on LF only, endings kept (CR stays part of its line)."""
    pieces = raw.split(b"\n")
    out = [p + b"\n" for p in pieces[:-1]]
    if pieces[-1]:
        out.append(pieces[-1])
    return out


def _is_subsequence(small: list[bytes], big: list[bytes]) -> bool:
    it = iter(big)
    return all(any(line == other for other in it) for line in small)


def _clear(updates: dict[str, Any]) -> dict[str, None]:
    return dict.fromkeys(updates)


# --------------------------------------------------------------------------- properties


@SETTINGS
@given(raw=notes(), updates=owned_updates)
def test_set_then_clear_restores_original_bytes(raw: bytes, updates: dict[str, Any]) -> None:
    written = apply(raw, updates, "n.md")
    assert apply(written, _clear(updates), "n.md") == raw


@SETTINGS
@given(raw=notes(), updates=owned_updates)
def test_set_keeps_every_other_line(raw: bytes, updates: dict[str, Any]) -> None:
    before, parts = parse_meta(raw, "n.md")
    written = apply(raw, updates, "n.md")

    # A line diff: the original lines all survive, in order, byte for byte ...
    old_lines, new_lines = _split_lf(raw), _split_lf(written)
    assert _is_subsequence(old_lines, new_lines)
    # ... and what was added is exactly the rendered owned keys, at the end of the block,
    # in canonical order and the block's line-ending style.
    added = "".join(render_value(k, updates[k], parts.newline) for k in OWNED_KEYS if k in updates)
    assert len(new_lines) - len(old_lines) == len(_split_lf(added.encode()))
    assert parts.frontmatter is not None
    assert written == parts.with_frontmatter(parts.frontmatter + added)

    after, new_parts = parse_meta(written, "n.md")
    assert new_parts.body == parts.body and new_parts.bom == parts.bom
    for key, value in before.items():
        assert _same(after[key], value), key
    for key, value in updates.items():
        assert _same(after[key], _expected(value)), key
    assert set(after) == set(before) | set(updates)


@SETTINGS
@given(raw=notes(), updates=owned_updates)
def test_apply_is_idempotent(raw: bytes, updates: dict[str, Any]) -> None:
    once = apply(raw, updates, "n.md")
    assert apply(once, updates, "n.md") == once


@SETTINGS
@given(body=bodies(), bom=st.booleans(), updates=owned_updates)
def test_note_without_frontmatter(body: str, bom: bool, updates: dict[str, Any]) -> None:
    raw = (BOM if bom else b"") + body.encode("utf-8")
    assume(split(raw).frontmatter is None)
    written = apply(raw, updates, "n.md")
    parts = split(written)
    assert parts.frontmatter is not None
    assert parts.body == raw[len(BOM) if bom else 0 :]
    assert parts.bom == (BOM if bom else b"")
    meta, _ = parse_meta(written, "n.md")
    assert set(meta) == set(updates)
    for key, value in updates.items():
        assert _same(meta[key], _expected(value)), key
    assert apply(written, _clear(updates), "n.md") == raw


@SETTINGS
@given(value=owned_value)
def test_rendered_values_read_back(value: Any) -> None:
    text = render_value("related", value)
    assert _same(yaml.safe_load(text)["related"], _expected(value))


OWNED_BLOCKS: dict[str, list[str]] = {
    # Comments inside owned keys are kept, and moved: tests/test_frontmatter_hostile.py.
    "type": ["type: note\n", "type: 'note'\n"],
    "related": [
        'related:\n- "[[A]]"\n',
        "related: ['[[A]]', \"[[B]]\"]\n",
    ],
    "last_used": ["last_used: 2026-01-01 10:00:00\n", "last_used: 2026-01-01T10:00:00Z\n"],
    "pinned": ["pinned: yes\n", "pinned: false\n"],
    "confidence": ["confidence: .5\n", "confidence: 0.9\n"],
    "status": ["status: |\n  active\n", "status: >-\n  archived\n"],
    "half_life": ['half_life: "30d"\n', "half_life:\n"],
    "created": ["created: 2026-01-01\n"],
    "snoozed_until": ["snoozed_until: 2026-02-01   \n"],
    "status_before": ['status_before: "status: reading  # mine"\n'],
    "pinned_before": ["pinned_before: 'pinned: false'\n", "pinned_before: ''\n"],
}


@st.composite
def notes_with_owned_keys(draw: st.DrawFn) -> tuple[list[tuple[str | None, str]], str, bool, str]:
    """Frontmatter as blocks (owned key or None, text) in random order, plus its dressing."""
    owned = draw(st.lists(st.sampled_from(sorted(OWNED_BLOCKS)), unique=True, min_size=1))
    blocks: list[tuple[str | None, str]] = [
        (key, draw(st.sampled_from(OWNED_BLOCKS[key]))) for key in owned
    ]
    user = draw(st.lists(st.sampled_from(HAND_WRITTEN), unique=True, max_size=4))
    keys = [key for text in user for key in yaml.safe_load(text)]
    assume(len(keys) == len(set(keys)))  # a key written twice is refused (hostile tests)
    blocks += [(None, text) for text in user]
    blocks = draw(st.permutations(blocks))
    return blocks, draw(st.sampled_from(["\n", "\r\n"])), draw(st.booleans()), draw(bodies())


@SETTINGS
@given(note=notes_with_owned_keys(), updates=owned_updates)
def test_existing_owned_keys_are_edited_in_place(
    note: tuple[list[tuple[str | None, str]], str, bool, str], updates: dict[str, Any]
) -> None:
    blocks, newline, bom, body = note
    updates = {**updates, **dict.fromkeys([k for k, _ in blocks if k and k < "p"])}  # clear some

    def note_bytes(texts: list[str]) -> bytes:
        text = ("---\n" + "".join(texts) + "---\n").replace("\n", newline) + body
        return (BOM if bom else b"") + text.encode("utf-8")

    raw = note_bytes([text for _, text in blocks])
    before, _ = parse_meta(raw, "n.md")

    # Worked out block by block: an owned key's block is replaced, dropped, or kept when
    # the value is already the one asked; every other block keeps its text. Blank lines
    # after a `|+` block scalar are part of its value: those that followed dropped keys
    # are dropped with them.
    expected: list[str] = []
    dropped = False
    for key, text in blocks:
        if key is not None and key in updates and updates[key] is None:
            dropped = True
            continue
        if dropped and expected and expected[-1].startswith("keep: |+"):
            text = text.lstrip("\n")
        dropped = False
        if key is None or key not in updates or _same(before[key], _expected(updates[key])):
            expected.append(text)
        else:
            expected.append(render_value(key, updates[key]))
    present = {key for key, _ in blocks}
    expected += [
        render_value(key, updates[key])
        for key in OWNED_KEYS
        if key in updates and key not in present and updates[key] is not None
    ]
    written = apply(raw, updates, "n.md")
    if expected:
        assert written == note_bytes(expected)
    else:
        assert written == (BOM if bom else b"") + body.encode("utf-8")

    after, _ = parse_meta(written, "n.md")
    for key, value in before.items():
        if key not in updates:
            assert _same(after[key], value), key


# --------------------------------------------------------------------------- rendering


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (True, "k: true\n"),
        (False, "k: false\n"),
        (3, "k: 3\n"),
        (0.5, "k: 0.5\n"),
        (1e-05, "k: 1.0e-05\n"),
        (1e20, "k: 1.0e+20\n"),
        (float("inf"), "k: .inf\n"),
        (datetime(2026, 11, 29, 10, 0, 0, 999999, tzinfo=UTC), "k: 2026-11-29T10:00:00Z\n"),
        (
            datetime(2026, 11, 29, 10, 0, tzinfo=timezone(timedelta(hours=2))),
            "k: 2026-11-29T10:00:00+02:00\n",
        ),
        (datetime(2026, 11, 29, 10, 0), "k: 2026-11-29T10:00:00\n"),
        (date(2026, 11, 2), "k: 2026-11-02\n"),
        ("decision", "k: decision\n"),
        ("it's fine", "k: it's fine\n"),
        ("yes", 'k: "yes"\n'),
        ("2026-11-02", 'k: "2026-11-02"\n'),
        ("a: b", 'k: "a: b"\n'),
        ("", 'k: ""\n'),
        ("[[Some Note]]", 'k: "[[Some Note]]"\n'),
        ("see [[Some Note]]", 'k: "see [[Some Note]]"\n'),
        ("a\u2028b", 'k: "a\\u2028b"\n'),
        ([], "k: []\n"),
        (["[[Some Note]]", "plain"], 'k:\n  - "[[Some Note]]"\n  - plain\n'),
    ],
)
def test_render_value(value: Any, text: str) -> None:
    assert render_value("k", value) == text


def test_unknown_key_and_bad_values_rejected() -> None:
    raw = b"---\ntitle: x\n---\nbody\n"
    with pytest.raises(ValueError, match="title"):
        apply(raw, {"title": "y"}, "n.md")
    with pytest.raises(TypeError):
        apply(raw, {"related": [{"a": 1}]}, "n.md")
    with pytest.raises(TypeError):
        apply(raw, {"type": object()}, "n.md")


# --------------------------------------------------------------------------- examples


def test_user_dates_stay_byte_identical() -> None:
    raw = (
        b"---\ntitle: Dates\nupdated: 2026-11-02\nwhen: 2026-11-02 10:00:00\n"
        b"stamp: 2026-11-02T10:00:00.5+01:00\n---\nBody\n"
    )
    written = apply(
        raw, {"last_used": datetime(2026, 11, 29, 10, 0, tzinfo=UTC), "use_count": 1}, "n.md"
    )
    lines = _split_lf(written)
    assert b"updated: 2026-11-02\n" in lines
    assert b"when: 2026-11-02 10:00:00\n" in lines
    assert b"stamp: 2026-11-02T10:00:00.5+01:00\n" in lines
    assert written == raw.replace(
        b"---\nBody", b"use_count: 1\nlast_used: 2026-11-29T10:00:00Z\n---\nBody"
    )
    meta, _ = parse_meta(written, "n.md")
    assert meta["updated"] == date(2026, 11, 2)
    assert meta["when"] == datetime(2026, 11, 2, 10, 0)


def test_crlf_and_bom_preserved() -> None:
    raw = BOM + b"---\r\ntitle: T\r\ntags: [a]\r\n---\r\n# Body\r\nline\r\n"
    written = apply(raw, {"pinned": True, "related": ["[[A]]"]}, "n.md")
    assert written == (
        BOM + b"---\r\ntitle: T\r\ntags: [a]\r\npinned: true\r\n"
        b'related:\r\n  - "[[A]]"\r\n---\r\n# Body\r\nline\r\n'
    )
    assert b"\n" not in written.replace(b"\r\n", b"")
    assert apply(written, {"pinned": None, "related": None}, "n.md") == raw


def test_new_block_follows_body_line_endings() -> None:
    raw = BOM + b"# Title\r\ntext\r\n"
    written = apply(raw, {"type": "note"}, "n.md")
    assert written == BOM + b"---\r\ntype: note\r\n---\r\n# Title\r\ntext\r\n"
    assert apply(written, {"type": None}, "n.md") == raw


def test_new_block_on_empty_and_rule_first_notes() -> None:
    assert apply(b"", {"pinned": True}, "n.md") == b"---\npinned: true\n---\n"
    raw = b"---\nnot frontmatter: just a rule with no closing one\n"
    written = apply(raw, {"pinned": True}, "n.md")
    assert written == b"---\npinned: true\n---\n" + raw
    assert apply(written, {"pinned": None}, "n.md") == raw


def test_replace_and_delete_existing_owned_keys_touch_only_their_lines() -> None:
    raw = (
        b"---\n"
        b"title: Keep me   \n"
        b"type: note  # my comment\n"
        b"# standalone comment\n"
        b"related:\n"
        b"- '[[Old]]'\n"
        b"- '[[Older]]'\n"
        b"\n"
        b"tags: [a,\n"
        b"  b]\n"
        b"confidence: 0.50\n"
        b"last_used: 2026-01-01 10:00:00\n"
        b"end: true\n"
        b"---\n"
        b"body\n"
    )
    written = apply(
        raw,
        {"type": "decision", "related": ["[[New]]"], "confidence": None, "pinned": True},
        "n.md",
    )
    assert written == (
        b"---\n"
        b"title: Keep me   \n"
        b"type: decision  # my comment\n"
        b"# standalone comment\n"
        b"related:\n"
        b'  - "[[New]]"\n'
        b"\n"
        b"tags: [a,\n"
        b"  b]\n"
        b"last_used: 2026-01-01 10:00:00\n"
        b"end: true\n"
        b"pinned: true\n"
        b"---\n"
        b"body\n"
    )


def test_same_value_changes_nothing() -> None:
    raw = (
        b"---\nconfidence: 0.50\npinned: yes\nrelated: ['[[A]]']\n"
        b"snoozed_until: 2026-12-01\nuse_count: 1\n---\nbody\n"
    )
    same = {
        "confidence": 0.5,
        "pinned": True,
        "related": ["[[A]]"],
        "snoozed_until": date(2026, 12, 1),
        "use_count": 1.0,
    }
    assert apply(raw, same, "n.md") is raw
    assert apply(raw, {"type": None}, "n.md") is raw
    # true is not 1, and a date is not that date's midnight:
    assert apply(raw, {"use_count": True}, "n.md") != raw
    assert apply(raw, {"snoozed_until": datetime(2026, 12, 1)}, "n.md") != raw


def test_duplicate_key_is_refused_on_write() -> None:
    raw = b"---\ntype: a\ntitle: t\ntype: b\n---\n"
    for updates in ({"type": "c"}, {"type": None}, {"pinned": True}):
        with pytest.raises(NoteError, match=r"^n\.md:4: duplicate key 'type' \(first on line 2\)"):
            apply(raw, updates, "n.md")
    assert parse_meta(raw, "n.md")[0] == {"type": "b", "title": "t"}  # still read


def test_indented_top_level_mapping() -> None:
    raw = b"---\n  title: t\n  type: a\n---\n"
    written = apply(raw, {"type": "b", "related": ["[[X]]"]}, "n.md")
    assert written == b'---\n  title: t\n  type: b\n  related:\n    - "[[X]]"\n---\n'


def test_flow_mapping_frontmatter_is_refused_not_rewritten() -> None:
    raw = b"---\n{title: t}\n---\n"
    with pytest.raises(NoteError, match="flow mapping"):
        apply(raw, {"pinned": True}, "n.md")
    assert apply(raw, {"pinned": None}, "n.md") is raw


def test_block_emptied_by_clearing_is_removed_but_comments_keep_it() -> None:
    assert apply(b"---\npinned: true\n---\nbody", {"pinned": None}, "n.md") == b"body"
    raw = b"---\n# mine\npinned: true\n---\nbody"
    assert apply(raw, {"pinned": None}, "n.md") == b"---\n# mine\n---\nbody"


def test_tab_before_comment_is_fine() -> None:
    # libyaml accepts a tab before a comment (PyYAML's pure parser does not).
    raw = b"---\ntitle: t\ntype: x\t# tab comment\n---\n"
    assert apply(raw, {"type": "y"}, "n.md") == b"---\ntitle: t\ntype: y\t# tab comment\n---\n"


def test_edits_yaml_cannot_express_by_lines_are_refused() -> None:
    # A key that comes from a merge cannot be cleared by deleting a line.
    merged = b"---\nbase: &b {type: z}\n<<: *b\n---\n"
    with pytest.raises(NoteError, match="'type' still present"):
        apply(merged, {"type": None}, "n.md")
    assert b"type: new" in apply(merged, {"type": "new"}, "n.md")
    # Replacing a value that carries an anchor used elsewhere would break the alias.
    anchored = b'---\nrelated: &l\n  - "[[A]]"\nsee: *l\n---\n'
    with pytest.raises(NoteError, match="left untouched"):
        apply(anchored, {"related": ["[[B]]"]}, "n.md")


# --------------------------------------------------------------------------- errors


def test_malformed_yaml_names_file_and_line_and_leaves_file(tmp_path: Path) -> None:
    note = tmp_path / "broken.md"
    raw = b"---\ntitle: ok\ntags: [a, b\nother: 1\n: : :\n---\nbody\n"
    note.write_bytes(raw)
    with pytest.raises(NoteError) as info:
        update_note(note, lambda meta: {"pinned": True}, "inbox/broken.md")
    message = str(info.value)
    assert message.startswith("inbox/broken.md:")
    assert "\n" not in message
    assert note.read_bytes() == raw

    note.write_bytes(b"---\ntitle: ok\nsecond: fine\nbad: value: here\n---\n")
    with pytest.raises(NoteError, match=r"^broken\.md:4: "):
        parse_meta(note.read_bytes(), "broken.md")
    # BOM and CRLF do not shift the line count.
    with pytest.raises(NoteError, match=r"^b\.md:4: "):
        parse_meta(BOM + b"---\r\na: 1\r\nb: 2\r\nc: d: e\r\n---\r\n", "b.md")


@pytest.mark.parametrize(
    ("raw", "line", "words"),
    [
        (b"---\na: 1\nb: !!int 2026-02-30\n---\n", 3, "invalid"),
        (b"---\n- a\n- b\n---\n", 2, "mapping"),
        (b"---\na: 1\n\xff: 2\n---\n", 3, "UTF-8"),
        (b"---\na: 1\nb: \x01\n---\n", 3, "character"),
        (b"---\na: 1\nb: 'open\n---\n", 4, "quoted scalar (started on line 3)"),
    ],
)
def test_error_lines(raw: bytes, line: int, words: str) -> None:
    with pytest.raises(NoteError) as info:
        parse_meta(raw, "x.md")
    assert str(info.value).startswith(f"x.md:{line}: ")
    assert words in str(info.value)


def test_split_positions() -> None:
    parts = split(b"---\na: 1\nb: 2\n---\nbody\n")
    assert (parts.yaml_line, parts.body_line, parts.frontmatter) == (2, 5, "a: 1\nb: 2\n")
    parts = split(BOM + b"---\r\na: 1\r\n...\r\nbody")
    assert parts.newline == "\r\n" and parts.closing == "...\r\n" and parts.body == b"body"
    assert parts.to_bytes() == BOM + b"---\r\na: 1\r\n...\r\nbody"
    assert split(b"--- \na: 1\n---\n").frontmatter is None  # not exactly '---' (Obsidian)
    parts = split(b"---\na: 1\n--- \t\nbody")  # a closing fence may have trailing blanks
    assert (parts.frontmatter, parts.closing, parts.body) == ("a: 1\n", "--- \t\n", b"body")
    parts = split(b"---\ra: 1\r---\rbody\r")  # classic-Mac CR line breaks
    assert (parts.newline, parts.frontmatter, parts.body_line) == ("\r", "a: 1\r", 4)
    assert split(b"---\n---").frontmatter == ""


# --------------------------------------------------------------------------- update_note


def test_update_note_writes_and_reports(tmp_path: Path) -> None:
    note = tmp_path / "n.md"
    note.write_bytes(b"---\ntitle: T\nuse_count: 2\n---\nbody\n")
    result = update_note(note, lambda m: {"use_count": m.get("use_count", 0) + 1}, "n.md")
    assert result == WriteResult(note, True, {"use_count": 2}, {"use_count": 3})
    assert note.read_bytes() == b"---\ntitle: T\nuse_count: 3\n---\nbody\n"


def test_unchanged_result_is_not_written(tmp_path: Path) -> None:
    note = tmp_path / "n.md"
    note.write_bytes(b"---\ntitle: T\npinned: true\n---\nbody\n")
    os.utime(note, ns=(1_000_000_000, 1_000_000_000))
    before = note.stat().st_mtime_ns
    result = update_note(note, lambda m: {"pinned": True, "status": None}, "n.md")
    assert not result.changed
    assert result.before == result.after == {"pinned": True}
    assert note.stat().st_mtime_ns == before


def test_conflict_reapplies_on_the_users_copy(tmp_path: Path) -> None:
    note = tmp_path / "n.md"
    note.write_bytes(b"---\ntitle: T\n---\nfirst line\n")
    calls: list[dict[str, Any]] = []

    def compute(meta: dict[str, Any]) -> dict[str, object | None]:
        calls.append(meta)
        if len(calls) == 1:
            # The user saves in Obsidian between vaultmem's read and its write.
            with open(note, "ab") as fh:
                fh.write(b"the user's new line\n")
        return {"pinned": True, "use_count": len(calls)}

    result = update_note(note, compute, "n.md")
    assert len(calls) == 2
    assert result.changed
    assert note.read_bytes() == (
        b"---\ntitle: T\npinned: true\nuse_count: 2\n---\nfirst line\nthe user's new line\n"
    )


def test_conflict_gives_up_when_the_note_keeps_changing(tmp_path: Path) -> None:
    note = tmp_path / "n.md"
    note.write_bytes(b"---\ntitle: T\n---\nbody\n")
    calls = 0

    def compute(meta: dict[str, Any]) -> dict[str, object | None]:
        # An editor saves (temp file + rename) every time vaultmem computes its update.
        nonlocal calls
        calls += 1
        (tmp_path / "save.tmp").write_bytes(b"---\ntitle: T\n---\nbody\nsave %d\n" % calls)
        os.replace(tmp_path / "save.tmp", note)
        return {"pinned": True}

    with pytest.raises(ConflictError, match="n.md: note is being edited; try again") as info:
        update_note(note, compute, "n.md")
    assert info.value.exit_code == 75
    assert calls > 3
    # The user's last save is what is left, not vaultmem's version of an older one.
    assert note.read_bytes() == b"---\ntitle: T\n---\nbody\nsave %d\n" % calls
    assert sorted(p.name for p in tmp_path.iterdir()) == ["n.md"]


def test_note_deleted_during_update_is_not_recreated(tmp_path: Path) -> None:
    note = tmp_path / "n.md"
    note.write_bytes(b"body\n")

    def compute(meta: dict[str, Any]) -> dict[str, object | None]:
        note.unlink()
        return {"pinned": True}

    with pytest.raises(ConflictError):
        update_note(note, compute, "n.md")
    assert not note.exists()


def test_compute_gets_a_copy(tmp_path: Path) -> None:
    note = tmp_path / "n.md"
    note.write_bytes(b"---\nrelated: ['[[A]]']\n---\n")

    def compute(meta: dict[str, Any]) -> dict[str, object | None]:
        meta["related"].append("[[B]]")
        return {"related": meta["related"]}

    result = update_note(note, compute, "n.md")
    assert result.before == {"related": ["[[A]]"]}
    assert result.after == {"related": ["[[A]]", "[[B]]"]}


# --------------------------------------------------------------------------- atomic_write


def test_atomic_write_keeps_permissions(tmp_path: Path) -> None:
    note = tmp_path / "n.md"
    note.write_bytes(b"old")
    note.chmod(0o640)
    atomic_write(note, b"new")
    assert note.read_bytes() == b"new"
    assert stat.S_IMODE(note.stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["n.md"]


def test_atomic_write_new_file_uses_umask(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        atomic_write(tmp_path / "new.md", b"x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "new.md").stat().st_mode) == 0o640


def test_atomic_write_with_a_mode_never_shows_other_bits(tmp_path: Path) -> None:
    # The server's advertisement: private from its first byte, new or replacing a file.
    secret = tmp_path / "server.json"
    atomic_write(secret, b'{"pid": 1}', mode=0o600)
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600
    secret.chmod(0o644)
    atomic_write(secret, b'{"pid": 2}', mode=0o600)
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600 and secret.read_bytes() == b'{"pid": 2}'


def test_atomic_write_failure_leaves_no_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    note = tmp_path / "n.md"
    note.write_bytes(b"original")

    def boom(src: str, dst: str) -> None:
        raise OSError("disk on fire")

    monkeypatch.setattr(atomic_mod.os, "replace", boom)
    with pytest.raises(OSError, match="disk on fire"):
        atomic_write(note, b"new bytes")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["n.md"]
    assert note.read_bytes() == b"original"


def test_atomic_write_through_symlink_keeps_the_link(tmp_path: Path) -> None:
    real = tmp_path / "real.md"
    real.write_bytes(b"old")
    link = tmp_path / "link.md"
    link.symlink_to(real)
    atomic_write(link, b"new")
    assert link.is_symlink()
    assert real.read_bytes() == b"new"
