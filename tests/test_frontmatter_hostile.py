"""Hostile frontmatter and encodings (issue 9, items 3, 7 and 8).

Every case here was reproduced by a hostile user on the code before the fix: alias bombs
that hung `pin`, fences with trailing blanks, classic-Mac CR line breaks, comments on
owned lines, duplicate keys, invalid owned values that dropped a note from the index,
unsafe tags, and UTF-16 notes that `pin` corrupted. The rule they share: vaultmem either
refuses with one line naming the note (and writes nothing), or changes only the lines of
its own keys.
"""

from __future__ import annotations

import json
import re
import time
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import Cli
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from vaultmem.errors import NoteError, VaultmemError
from vaultmem.frontmatter.edit import KeyLines, ReplacedLines, apply
from vaultmem.frontmatter.owned import owned_problem
from vaultmem.frontmatter.scan import MAX_EXPANDED_VALUES, check_encoding, parse_meta, split
from vaultmem.index import manifest as mf
from vaultmem.memory_state import note_memory
from vaultmem.note import parse_note
from vaultmem.properties import OWNED_KEYS, UNDO_KEYS

BOM = b"\xef\xbb\xbf"


def alias_bomb(levels: int = 9, prefix: str = "") -> str:
    """Anchors a, b, c, ... each aliasing the previous nine times: 9**levels values."""
    names = [prefix + c for c in "abcdefghijklmnop"[:levels]]
    text = f"{names[0]}: &{names[0]} [" + ", ".join(['"x"'] * 9) + "]\n"
    for prev, name in zip(names, names[1:], strict=False):
        text += f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 9) + "]\n"
    return text


BOMB = ("---\ntitle: Bomb\n" + alias_bomb() + "---\n# Bomb\nbody\n").encode()
UTF16 = "---\ntitle: Sixteen\n---\n# Sixteen\nUTF-16 text\n".encode("utf-16")


def one_line(message: str) -> bool:
    return "\n" not in message.strip() and "Traceback" not in message


# --------------------------------------------------------------------------- 1. alias bombs


def test_alias_bomb_is_refused_fast_by_every_reader() -> None:
    start = time.perf_counter()
    for read in (
        lambda: parse_meta(BOMB, "notes/x.md"),
        lambda: parse_note("notes/x.md", BOMB),
        lambda: apply(BOMB, {"pinned": True}, "notes/x.md"),
    ):
        with pytest.raises(NoteError) as info:
            read()
        message = str(info.value)
        # The 'e' anchor (line 7) is the first to expand past the bound.
        assert message == (
            f"notes/x.md:7: frontmatter expands YAML aliases to more than "
            f"{MAX_EXPANDED_VALUES} values; vaultmem refuses it"
        )
    assert time.perf_counter() - start < 0.5
    # What is refused is the expansion, not aliases or size as such.
    small = ("---\n" + alias_bomb(3) + "---\n").encode()  # 9**3 = 729 values
    assert len(parse_meta(small, "n.md")[0]["c"]) == 9
    long_list = ("---\nxs: [" + ", ".join(["1"] * 20_000) + "]\n---\n").encode()
    assert len(parse_meta(long_list, "n.md")[0]["xs"]) == 20_000  # no alias: no bomb


@pytest.mark.parametrize(
    ("frontmatter", "words"),
    [
        ("r: &r [1, *r]\n", "contains itself"),
        ("m: &m {k: *m}\n", "contains itself"),
        ("x: " + "[" * 150 + "]" * 150 + "\n", "more than 100 levels deep"),
    ],
    ids=["list", "mapping", "deep"],
)
def test_recursive_and_deep_values_are_refused(frontmatter: str, words: str) -> None:
    raw = ("---\ntitle: t\n" + frontmatter + "---\n").encode()
    with pytest.raises(NoteError, match=rf"^n\.md:3: .*{words}") as info:
        apply(raw, {"pinned": True}, "n.md")
    assert one_line(str(info.value))


# --------------------------------------------------------------------------- 2. fences


@pytest.mark.parametrize("closing", ["---   ", "---\t", "... \t"], ids=["spaces", "tab", "dots"])
def test_closing_fence_with_trailing_blanks_is_a_fence(closing: str) -> None:
    raw = f"---\ntitle: Keep\n{closing}\n# Body\n".encode()
    meta, parts = parse_meta(raw, "n.md")
    assert meta == {"title": "Keep"} and parts.closing == closing + "\n"
    written = apply(raw, {"pinned": True}, "n.md")
    assert written == f"---\ntitle: Keep\npinned: true\n{closing}\n# Body\n".encode()
    assert apply(written, {"pinned": None}, "n.md") == raw


def test_opening_fence_with_trailing_blanks_is_not_frontmatter_and_not_written() -> None:
    # Obsidian shows such a block as text, so vaultmem reads none; stacking a second block
    # above it would hide the user's keys for good, so a write is refused instead.
    raw = b"---  \ntitle: Keep\n---\n# Body\n"
    assert parse_meta(raw, "n.md")[0] == {}
    with pytest.raises(NoteError, match=r"^n\.md:1: the opening '---' has trailing blanks"):
        apply(raw, {"pinned": True}, "n.md")
    # A lone rule with blanks and no second fence is just a rule.
    rule = b"---  \njust text\n"
    assert apply(rule, {"pinned": True}, "n.md") == b"---\npinned: true\n---\n" + rule


# --------------------------------------------------------------------------- 3. CR only


def test_cr_only_note_keeps_cr_line_breaks() -> None:
    raw = b"---\rtitle: Mac\rstatus: active\r---\r# Body\rline\r"
    meta, parts = parse_meta(raw, "n.md")
    assert meta == {"title": "Mac", "status": "active"} and parts.newline == "\r"
    written = apply(raw, {"status": "archived", "related": ["[[A]]"], "pinned": True}, "n.md")
    assert written == (
        b'---\rtitle: Mac\rstatus: archived\rpinned: true\rrelated:\r  - "[[A]]"\r---\r'
        b"# Body\rline\r"
    )
    assert apply(written, {"status": "active", "related": None, "pinned": None}, "n.md") == raw


def test_cr_only_note_without_frontmatter_gets_a_cr_block() -> None:
    raw = b"# Title\rtext\r"
    assert apply(raw, {"pinned": True}, "n.md") == b"---\rpinned: true\r---\r# Title\rtext\r"


def test_cr_only_error_lines_count_cr() -> None:
    with pytest.raises(NoteError, match=r"^n\.md:4: "):
        parse_meta(b"---\ra: 1\rb: 2\rc: d: e\r---\r", "n.md")


# --------------------------------------------------------------------------- 4. comments


def test_inline_comment_on_owned_line_survives_a_change() -> None:
    raw = b"---\ntitle: t\nstatus: active  # keep\n---\nbody\n"
    assert apply(raw, {"status": "archived"}, "n.md") == (
        b"---\ntitle: t\nstatus: archived  # keep\n---\nbody\n"
    )
    # A '#' inside a value is no comment: nothing of it is carried over; the comment on a
    # block scalar's header line is one.
    raw = b"---\ntype: 'a # b'\nstatus: |  # why\n  # not a comment\n---\n"
    written = apply(raw, {"type": "c", "status": "x"}, "n.md")
    assert written == b"---\ntype: c\nstatus: x  # why\n---\n"


def test_comments_inside_an_owned_list_stay_inside_its_block() -> None:
    raw = (
        b"---\n"
        b"related:  # why these\n"
        b"  # chosen by hand\n"
        b'  - "[[A]]"  # the first\n'
        b"  - '[[B]]'  # gone soon\n"
        b"# after the list, not part of it\n"
        b"title: t\n"
        b"---\n"
    )
    written = apply(raw, {"related": ["[[A]]", "[[C]]"]}, "n.md")
    assert written == (
        b"---\n"
        b"related:  # why these\n"
        b"  # chosen by hand\n"
        b"  # gone soon\n"
        b'  - "[[A]]"  # the first\n'
        b'  - "[[C]]"\n'
        b"# after the list, not part of it\n"
        b"title: t\n"
        b"---\n"
    )
    assert parse_meta(written, "n.md")[0]["related"] == ["[[A]]", "[[C]]"]
    # A comment after the block's last key is not part of that key.
    raw = b'---\ntitle: t\nrelated:\n  - "[[A]]"\n# trailing words\n---\n'
    written = apply(raw, {"related": None}, "n.md")
    assert written == b"---\ntitle: t\n# trailing words\n---\n"
    written = apply(raw, {"related": ["[[B]]"]}, "n.md")
    assert written == b'---\ntitle: t\nrelated:\n  - "[[B]]"\n# trailing words\n---\n'


def test_comments_of_a_cleared_key_after_a_block_scalar_stay_comments() -> None:
    # Found by the generator below: kept indented, the cleared key's comment lines would
    # have joined the `status: |` block above as text, and the write was refused.
    raw = (
        b"---\nstatus: |\n  active\n"
        b"supersedes:\n  nested:\n    - '[[A]]'  # deep\n  # note\n  k: v\n"
        b"type: note  # why\n---\n# Body\n"
    )
    written = apply(raw, {"supersedes": None}, "n.md")
    assert written == b"---\nstatus: |\n  active\n# deep\n# note\ntype: note  # why\n---\n# Body\n"
    assert parse_meta(written, "n.md")[0]["status"] == "active\n"


def test_clearing_keys_after_a_keep_scalar_keeps_its_value() -> None:
    # Blank lines after `|+` belong to its value: those after the cleared keys go too.
    raw = b"---\nkeep: |+\n  kept\n\ncreated: 2026-01-01\nhalf_life:\n\n\ntitle: t\n---\n"
    written = apply(raw, {"created": None, "half_life": None}, "n.md")
    assert written == b"---\nkeep: |+\n  kept\n\ntitle: t\n---\n"
    assert parse_meta(written, "n.md")[0] == {"keep": "kept\n\n", "title": "t"}


# --------------------------------------------------------------------------- 5. duplicates


@pytest.mark.parametrize("key", ["status", "title"])
def test_duplicate_keys_refuse_writes_but_not_reads(key: str) -> None:
    raw = f"---\ntitle: t\n{key}: a\npinned: false\nx: 1\n\n\n{key}: b\n---\n".encode()
    if key == "title":
        raw = raw.replace(b"title: t\n", b"", 1)
        first, second = 2, 7
    else:
        first, second = 3, 8
    assert parse_meta(raw, "notes/x.md")[0][key] == "b"  # reading works as YAML does
    with pytest.raises(NoteError) as info:
        apply(raw, {"pinned": True}, "notes/x.md")
    assert str(info.value) == (
        f"notes/x.md:{second}: duplicate key '{key}' (first on line {first}); "
        "fix the note, vaultmem will not guess"
    )


def test_differently_quoted_duplicates_are_duplicates() -> None:
    with pytest.raises(NoteError, match="duplicate key 'status'"):
        apply(b"---\nstatus: a\n'status': b\n---\n", {"pinned": True}, "n.md")
    # 1 and '1' are different keys to YAML: not a duplicate.
    assert b"pinned" in apply(b"---\n1: a\n'1': b\n---\n", {"pinned": True}, "n.md")


# --------------------------------------------------------------------------- 6. invalid values

INVALID = (
    b"---\n"
    b"title: Odd values\n"
    b"created: 2026-13-45\n"
    b"confidence: high\n"
    b"pinned: maybe\n"
    b"use_count: -3  # hand edit\n"
    b"half_life: soon\n"
    b"related: 42\n"
    b"updated: 2026-02-30\n"
    b"---\n"
    b"# Odd values\n"
)


def test_invalid_dates_load_as_text() -> None:
    meta, _ = parse_meta(INVALID, "n.md")
    assert meta["created"] == "2026-13-45" and meta["updated"] == "2026-02-30"
    assert parse_meta(b"---\nd: 2026-02-28\n---\n", "n.md")[0]["d"] == date(2026, 2, 28)
    # A string that looks like a bad date is written quoted: other YAML readers choke on it.
    written = apply(b"", {"status": "2026-13-45"}, "n.md")
    assert written == b'---\nstatus: "2026-13-45"\n---\n'


def test_invalid_owned_values_are_warned_about_and_read_as_absent() -> None:
    note = parse_note("notes/odd.md", INVALID, mtime_ns=0)
    assert note.warnings == (
        "confidence: 'high' is not a number from 0 to 1 (line 4); treated as absent",
        "half_life: 'soon' is not a half-life (30d, 12h, 2w or never) (line 7); treated as absent",
        "pinned: 'maybe' is not true or false (line 5); treated as absent",
        "use_count: -3 is not a whole number of 0 or more (line 6); treated as absent",
        "created: '2026-13-45' is not a date (line 3); treated as absent",
        "related: 42 is not a link or a list of links (line 8); treated as absent",
    )
    memory = note_memory(note.path, mf.entry_for(note))
    assert memory.confidence == 0.5 and not memory.pinned
    assert memory.state.use_count == 0 and memory.state.created is None
    assert owned_problem("created", "2026-11-02T10:00:00Z") is None  # ISO text is a date
    assert owned_problem("type", ["a"]) == "is not text"
    assert parse_note("n.md", b"---\ntype: [a]\n---\n").type == "note"


def test_a_write_overwrites_an_invalid_owned_value_and_keeps_its_comment() -> None:
    written = apply(INVALID, {"pinned": True, "use_count": 1}, "n.md")
    assert b"pinned: true\n" in written and b"use_count: 1  # hand edit\n" in written
    assert b"created: 2026-13-45\n" in written  # not asked for: left as the user wrote it


# --------------------------------------------------------------------------- 7. tags


@pytest.mark.parametrize(
    ("value", "tag"),
    [
        ("!!python/object:os.system x", "!!python/object:os.system"),
        ("!!python/object/apply:os.system ['echo hi']", "!!python/object/apply:os.system"),
        ("!custom x", "!custom"),
    ],
)
def test_unsafe_tags_are_refused_in_one_line(value: str, tag: str) -> None:
    raw = f"---\ntitle: t\nx: {value}\n---\n".encode()
    for call in (lambda: parse_meta(raw, "n.md"), lambda: apply(raw, {"pinned": True}, "n.md")):
        with pytest.raises(NoteError) as info:
            call()
        assert str(info.value) == (
            f"n.md:3: unsupported YAML tag {tag!r}; vaultmem reads only plain YAML values"
        )


# --------------------------------------------------------------------------- 8. encodings


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        (UTF16, "note is UTF-16, vaultmem reads and writes only UTF-8"),
        (b"\xfe\xff" + "---\na: 1\n---\n".encode("utf-16-be"), "note is UTF-16"),
        ("---\na: 1\n---\n".encode("utf-32"), "note is UTF-32"),
        (BOM + "é".encode("latin-1"), "not valid UTF-8"),
        (b"---\na: 1\n---\nbody \xff\n", "not valid UTF-8"),
        ("title".encode("utf-16-le"), "NUL bytes"),
    ],
    ids=["utf16-le", "utf16-be", "utf32", "latin1", "bad-body-byte", "utf16-no-bom"],
)
def test_one_rule_for_encodings_on_read_and_write(raw: bytes, words: str) -> None:
    errors = []
    for call in (
        lambda: check_encoding(raw, "n.md"),
        lambda: split(raw, "n.md"),
        lambda: parse_note("n.md", raw),
        lambda: apply(raw, {"pinned": True}, "n.md"),
    ):
        with pytest.raises(NoteError) as info:
            call()
        errors.append(str(info.value))
    assert len(set(errors)) == 1 and words in errors[0] and errors[0].startswith("n.md")


def test_body_bytes_are_checked_before_a_write() -> None:
    with pytest.raises(NoteError, match=r"^n\.md:4: not valid UTF-8 \(byte 18"):
        apply(b"---\na: 1\n---\nbody \xff\n", {"pinned": True}, "n.md")


# --------------------------------------------------------------------------- CLI


@pytest.fixture
def hostile(vault: Path) -> Path:
    """The temp vault with one hostile note per case in inbox/."""
    (vault / "inbox" / "utf16.md").write_bytes(UTF16)
    (vault / "inbox" / "bomb.md").write_bytes(BOMB)
    (vault / "inbox" / "fence.md").write_bytes(
        b"---\ntitle: Fenced zebu\ntags: [fence]\n---   \n# Fenced zebu\nbody\n"
    )
    (vault / "inbox" / "mac.md").write_bytes(
        b"---\rtitle: Classic okapi\r---\r# Classic okapi\rCR only\r"
    )
    (vault / "inbox" / "odd.md").write_bytes(INVALID + b"The quokka dated badly.\n")
    return vault


def _refused(cli: Cli, *args: str) -> str:
    result = cli(*args, ok=False)
    assert result.exit_code == 1, (args, result.stdout, result.stderr)
    assert one_line(result.stderr), result.stderr
    return result.stderr


WRITES = [
    ("pin", "{n}"),
    ("forget", "{n}"),
    ("snooze", "{n}", "--for", "3d"),
    ("link", "{n}", "inbox/odd.md"),
    ("touch", "{n}"),
    ("get", "--json", "{n}"),
]


@pytest.mark.parametrize("command", WRITES, ids=lambda c: c[0])
def test_cli_refuses_utf16_without_writing(hostile: Path, command: tuple[str, ...]) -> None:
    cli = Cli(hostile)
    args = [a.format(n="inbox/utf16.md") for a in command]
    assert "note is UTF-16" in _refused(cli, *args)
    assert (hostile / "inbox" / "utf16.md").read_bytes() == UTF16


@pytest.mark.parametrize("command", WRITES, ids=lambda c: c[0])
def test_cli_refuses_alias_bomb_fast(hostile: Path, command: tuple[str, ...]) -> None:
    cli = Cli(hostile)
    args = [a.format(n="inbox/bomb.md") for a in command]
    start = time.perf_counter()
    assert "expands YAML aliases" in _refused(cli, *args)
    assert time.perf_counter() - start < 2
    assert (hostile / "inbox" / "bomb.md").read_bytes() == BOMB


def test_cli_index_skips_hostile_notes_with_their_reason(hostile: Path) -> None:
    cli = Cli(hostile)
    start = time.perf_counter()
    report = json.loads(cli("index", "--json").stdout)
    assert time.perf_counter() - start < 10
    skipped = json.dumps(report)
    assert "inbox/bomb.md" in skipped and "inbox/utf16.md" in skipped


def test_cli_pin_on_trailing_blank_fence_and_cr_only_notes(hostile: Path) -> None:
    cli = Cli(hostile)
    cli("pin", "inbox/fence.md", "inbox/mac.md")
    fence = (hostile / "inbox" / "fence.md").read_bytes()
    assert fence == (
        b"---\ntitle: Fenced zebu\ntags: [fence]\npinned: true\n---   \n# Fenced zebu\nbody\n"
    )
    mac = (hostile / "inbox" / "mac.md").read_bytes()
    assert mac == b"---\rtitle: Classic okapi\rpinned: true\r---\r# Classic okapi\rCR only\r"
    cli("index")
    found = cli("get", "--json", "Classic okapi").stdout
    assert json.loads(found)["frontmatter"] == {"title": "Classic okapi", "pinned": True}


def test_cli_invalid_date_note_stays_indexed_and_says_why(hostile: Path) -> None:
    cli = Cli(hostile)
    cli("index")
    hits = [json.loads(x)["path"] for x in cli("search", "quokka", "--json").stdout.splitlines()]
    assert hits == ["inbox/odd.md"]
    got = json.loads(cli("get", "--json", "inbox/odd.md").stdout)
    assert "created: '2026-13-45' is not a date (line 3); treated as absent" in got["warnings"]
    # touch overwrites the invalid use_count (vaultmem's own key) and keeps the comment.
    cli("touch", "inbox/odd.md")
    text = (hostile / "inbox" / "odd.md").read_bytes()
    assert b"use_count: 1  # hand edit\n" in text and b"created: 2026-13-45\n" in text


# --------------------------------------------------------------------------- hypothesis

# (text, may_refuse): blocks of user frontmatter; may_refuse marks what vaultmem refuses.
USER_BLOCKS: list[tuple[str, bool]] = [
    ("title: Hostile note\n", False),
    ("tags: [a, b]  # inline\n", False),
    ("# a comment line\n", False),
    ("base: &base {x: 1, y: [2, 3]}\nref: *base\nmerged:\n  <<: *base\n  z: 1\n", False),
    ("tagged: !!str 123\nbin: !!binary aGVsbG8=\n", False),
    ("nested:\n  # inside\n  deep:\n    - 1  # one\n    - {a: b}\n", False),
    ("multi: |\n  # not a comment\n  text\n", False),
    ("quoted: 'a # not a comment'\n", False),
    ("when: 2026-13-45\n", False),
    ("small: &s [x, x]\nsmaller: [*s, *s]\n", False),
]
# Blocks vaultmem refuses: at most one per note, in about a quarter of them.
REFUSED_BLOCKS: list[tuple[str, bool]] = [
    ("obj: !!python/object:os.system x\n", True),
    ("custom: !mytag x\n", True),
    ("rec: &rec [1, *rec]\n", True),
    (alias_bomb(6, prefix="bomb_"), True),
]
# (key, text, may_refuse): owned keys as a user might have written them.
OWNED_BLOCKS: list[tuple[str, str, bool]] = [
    ("type", "type: note  # why\n", False),
    ("type", "type: !!str note\n", False),
    ("status", "status: active  # keep\n", False),
    ("status", "status: |\n  active\n", False),
    ("related", 'related:  # why\n  # chosen\n  - "[[A]]"  # because\n  - x\n', False),
    ("related", "related: ['[[A]]',  # c\n  b]\n", False),
    ("related", "related: &rel ['[[A]]']\nsee: *rel\n", True),  # the alias would break
    ("supersedes", "supersedes:\n  nested:\n    - '[[A]]'  # deep\n  # note\n  k: v\n", False),
    ("status", "status: |  # header\n  # text, not a comment\n", False),
    ("pinned", "pinned: maybe\n", False),
    ("created", "created: 2026-13-45\n", False),
    ("use_count", "use_count: -3  # hand edit\n", False),
    ("confidence", "confidence: high  # vague\n", False),
    ("half_life", "half_life:\n", False),
    ("snoozed_until", "snoozed_until: 2026-02-01   \n", False),
    ("last_used", "last_used: 2026-01-01 10:00:00  # by hand\n", False),
    ("status", "status:\n  - reading  # first\n  # between\n  - draft\n", False),
    ("status", "'status' :   superseded   # spaced\n", False),
    ("pinned", "pinned: false  # review later\n", False),
]
OPENINGS = [("---", False)] * 9 + [("---  ", True)]
CLOSINGS = ["---", "---   ", "...", "--- \t", "...  "]

owned_value = st.one_of(
    st.none(),
    st.sampled_from(["[[Some Note]]", "decision", "2026-13-45", "it's # not", ""]),
    st.integers(min_value=-5, max_value=10**6),
    st.booleans(),
    st.dates(min_value=date(2000, 1, 1), max_value=date(2100, 1, 1)),
    st.datetimes(
        min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)
    ).map(lambda d: d.replace(microsecond=0)),
    st.lists(st.sampled_from(["[[A]]", "[[B]]", "x", "[[C|alias]]"]), max_size=3),
)
# Every key but the rarer link types (their values are drawn the same way).
_UPDATED_KEYS = OWNED_KEYS[: OWNED_KEYS.index("superseded_by") + 1]
updates_strategy = st.dictionaries(st.sampled_from(_UPDATED_KEYS), owned_value, min_size=1)


@st.composite
def hostile_notes(draw: st.DrawFn) -> tuple[bytes, list[str], bool, str, list[tuple[str, str]]]:
    """A note built from blocks: bytes, user block texts in order, may_refuse, newline, and
    the owned blocks (key, text)."""
    users = draw(st.lists(st.sampled_from(USER_BLOCKS), unique=True, max_size=5))
    if draw(st.integers(0, 5)) == 0:
        users.append(draw(st.sampled_from(REFUSED_BLOCKS)))
    owned = draw(st.lists(st.sampled_from(OWNED_BLOCKS), unique_by=lambda b: b[0], max_size=4))
    blocks: list[tuple[str | None, str, bool]] = [(None, t, r) for t, r in users]
    blocks += [(k, t, r) for k, t, r in owned]
    blocks = list(draw(st.permutations(blocks)))
    duplicate = bool(blocks) and draw(st.integers(0, 9)) == 0
    if duplicate:
        blocks.append(blocks[0])  # every block defines a key: a duplicate (or a comment)
    opening, loose = draw(st.sampled_from(OPENINGS))
    newline = draw(st.sampled_from(["\n", "\r\n", "\r"]))
    text = opening + "\n" + "".join(t for _, t, _ in blocks) + draw(st.sampled_from(CLOSINGS))
    text += "\n# Body\n" + draw(st.sampled_from(["", "text\n", "---\nmore\n"]))
    raw = text.replace("\n", newline).encode()
    if draw(st.booleans()):
        raw = BOM + raw
    user_texts = [t.replace("\n", newline) for k, t, _ in blocks if k is None]
    may_refuse = loose or duplicate or any(r for _, _, r in blocks)
    return raw, user_texts, may_refuse, newline, [(k, t) for k, t, _ in owned]


def _comments_of(block: str) -> list[tuple[str, bool]]:
    """The comments of a generated owned block: (text, on the key's line)."""
    found = []
    for n, line in enumerate(block.splitlines()):
        match = re.search(r"(?:^|\s)(# [\w ]+)$", line)
        if match and "not a comment" not in line:
            found.append((match.group(1), n == 0))
    return found


def _lines(text: str) -> list[str]:
    return [line for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]


def _subsequence(small: list[str], big: list[str]) -> list[str] | None:
    """``big`` without one in-order occurrence of every line of ``small`` (None: absent)."""
    rest, i = [], 0
    for line in big:
        if i < len(small) and line == small[i]:
            i += 1
        else:
            rest.append(line)
    return rest if i == len(small) else None


def _same(a: Any, b: Any) -> bool:
    """Equality that tells true from 1 and a date from a datetime."""
    if isinstance(a, bool | datetime) or isinstance(b, bool | datetime):
        return type(a) is type(b) and a == b
    return bool(a == b)


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(note=hostile_notes(), updates=updates_strategy)
def test_hostile_frontmatter_is_refused_or_changed_only_on_owned_lines(
    note: tuple[bytes, list[str], bool, str, list[tuple[str, str]]], updates: dict[str, Any]
) -> None:
    raw, user_texts, may_refuse, newline, owned = note
    try:
        written = apply(raw, updates, "n.md")
    except VaultmemError as err:
        event("refused")
        assert may_refuse, err  # only what the generator made hostile is refused
        assert one_line(str(err)) and str(err).startswith("n.md")
        return
    event("unchanged" if written is raw else "written")
    before, parts = parse_meta(raw, "n.md")
    after, new_parts = parse_meta(written, "n.md")
    assert (new_parts.bom, new_parts.body) == (parts.bom, parts.body)
    if new_parts.frontmatter is None:  # clearing emptied the block: it went away
        assert written == parts.bom + parts.body and not after
        return
    assert new_parts.closing == (parts.closing or "---" + newline)
    for key, value in before.items():
        if key not in updates:
            assert key in after and after[key] == value, key
    for key, value in updates.items():
        if value is None:
            assert key not in after
        else:
            assert _same(after[key], value), key
    # Line breaks keep the note's style.
    body_free = written[len(parts.bom) : len(written) - len(parts.body)]
    if newline == "\r":
        assert b"\n" not in body_free
    elif newline == "\n":
        assert b"\r" not in body_free
    else:
        assert b"\r" not in body_free.replace(b"\r\n", b"") and b"\n" not in body_free.replace(
            b"\r\n", b""
        )
    # Every line of the user's blocks is still there, in order, byte for byte; what is
    # left is vaultmem's keys (and the comments that were inside them).
    user_lines = [line for text in user_texts for line in _lines(text)[:-1]]
    rest = _subsequence(user_lines, _lines(new_parts.frontmatter or ""))
    assert rest is not None
    leftover = yaml.load("\n".join(rest), Loader=yaml.BaseLoader) or {}
    assert set(leftover) <= set(OWNED_KEYS) | {"see"}
    # No comment inside an owned key is lost, but the one on a cleared key's own line.
    for key, block in owned:
        for comment, on_key_line in _comments_of(block):
            if not (on_key_line and key in updates and updates[key] is None):
                assert comment in (new_parts.frontmatter or ""), (key, comment)


# What forget, pin and snooze write over the lines their inverses give back.
UNDO_VALUES = {
    "status": "forgotten",
    "pinned": True,
    "snoozed_until": datetime(2026, 12, 4, 15, 47, tzinfo=UTC),
}


@settings(
    max_examples=500,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(note=hostile_notes(), data=st.data())
def test_saved_lines_give_a_hostile_note_back_byte_for_byte(
    note: tuple[bytes, list[str], bool, str, list[tuple[str, str]]], data: st.DataObject
) -> None:
    raw, _, may_refuse, _, owned = note
    present = sorted(k for k, _ in owned if k in UNDO_KEYS)
    key = data.draw(
        st.sampled_from(present if present and data.draw(st.booleans()) else sorted(UNDO_KEYS))
    )
    saved_key = UNDO_KEYS[key]
    try:
        forward = apply(raw, {key: UNDO_VALUES[key], saved_key: ReplacedLines(key)}, "n.md")
    except VaultmemError as err:
        event("refused")
        assert may_refuse, err
        assert one_line(str(err)) and str(err).startswith("n.md")
        return
    saved = parse_meta(forward, "n.md")[0].get(saved_key)
    assert (saved is not None) == (forward is not raw and key in dict(owned))
    event("saved" if saved is not None else "nothing to save")
    back = {key: None if saved is None else KeyLines(saved), saved_key: None}
    # An empty block that a set filled goes away with the clear, as a block the set made.
    if forward is not raw and split(raw).frontmatter != "":
        assert apply(forward, back, "n.md") == raw
