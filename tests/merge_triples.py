"""Three versions of a note with random edits, and what git says about the user's edits:
the generator behind the merge driver's property test (tests/test_merge_property.py) and
the benchmark's comparison (benchmarks/bench_git_merge.py).

A note is a list of frontmatter entries (the user's keys, comments and blank lines, a
YAML anchor and its alias, a user's value under one of vaultmem's names, vaultmem's own
keys, in random order) and body lines, with or without a BOM, LF or CRLF. Each side first
makes the user's edits (keys set, added, deleted, a tag added, comments, body lines, the
BOM toggled), then vaultmem's edits as vaultmem makes them: owned values changed in
place, owned keys removed, new owned keys appended at the end of the block.

The oracle is git itself: ``git merge-file`` of the base and each side with only the
user's edits made (:attr:`Triple.ours_user`, :attr:`Triple.theirs_user`), which is what
the user's part of the driver's result must equal (:func:`user_lines` strips vaultmem's
lines from both). vaultmem's edits avoid what its own rules leave to a person (a flag or
``confidence`` changed on both sides), so the only conflicts are git's; and a side that
removes a key does not also edit the user's lines right around it (where the removed
lines stood among new ones is then a guess; see vaultmem.gitmerge.userpart).
"""

from __future__ import annotations

import random
import re
import subprocess
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path

# vaultmem's keys the generator writes, with one line each (related: a block list).
OWNED = {
    "type": ["type: decision"],
    "confidence": ["confidence: 0.85"],
    "status": ["status: active"],
    "use_count": ["use_count: 3"],
    "last_used": ["last_used: 2026-11-10T09:00:00Z"],
    "review_count": ["review_count: 2"],
    "last_review": ["last_review: 2026-11-09T09:00:00Z"],
    "created": ["created: 2026-10-09T10:30:00Z"],
    "pinned": ["pinned: true  # keep"],
    "related": ["related:", '  - "[[Rate limiting options]]"'],
    "strength": ["strength: 1.1"],
}
# Appended by a side when the base has none of them.
APPENDED = {
    "cross_domain_count": ["cross_domain_count: 1"],
    "last_confirmed": ["last_confirmed: 2026-11-11T10:00:00Z"],
    "use_count": ["use_count: 1"],
    "last_used": ["last_used: 2026-11-12T09:00:00Z"],
    "related": ["related:", '  - "[[Kubernetes migration]]"'],
}
# The user's keys: name -> lines. ``held`` ones are a user's value under an owned name.
USER = {
    "title": ["title: Redis for caching"],
    "tags": ["tags:", "  - decision", "  - cache"],
    "aliases": ["aliases: [redis cache, ADR-7]"],
    "project": ["project: harbor"],
    "mood": ["mood: calm  # mine"],
    "updated": ["updated: 2026-11-02"],
    "reviewers": ["reviewers: [ana, li]"],
    "anchor": ["base_port: &port 6379"],
    "alias": ["replica_port: *port"],
}
HELD = {
    "status": ["status: reading"],
    "created": ["created: 2019"],
    "related": ['related: ["a chapter"]'],
}
BODY = ["# Redis for caching", "", "Use Redis.", "## Why", "- fast", "- simple", "Text."]


@dataclass(frozen=True)
class Entry:
    """A frontmatter entry: ``kind`` is user, owned or held (a user's value under an owned
    name); ``uid`` tells an unchanged entry from an edited one."""

    kind: str
    key: str
    lines: tuple[str, ...]
    uid: int


@dataclass
class Note:
    entries: list[Entry] | None  # None: no frontmatter
    body: list[str]
    bom: bool
    newline: str

    def render(self) -> bytes:
        nl = self.newline
        text = ""
        if self.entries is not None:
            lines = [line for e in self.entries for line in e.lines]
            text = "---" + nl + "".join(line + nl for line in lines) + "---" + nl
        text += "".join(line + nl for line in self.body)
        return (b"\xef\xbb\xbf" if self.bom else b"") + text.encode("utf-8")

    def copy(self) -> Note:
        entries = None if self.entries is None else list(self.entries)
        return Note(entries, list(self.body), self.bom, self.newline)


@dataclass(frozen=True)
class Triple:
    """Base, ours and theirs, and each side with only the user's edits made."""

    base: bytes
    ours: bytes
    theirs: bytes
    ours_user: bytes
    theirs_user: bytes
    owned_names: frozenset[str]  # names that are vaultmem's keys in these notes
    log: tuple[str, ...] = field(default=())


class _Ids:
    def __init__(self) -> None:
        self.n = 0

    def __call__(self) -> int:
        self.n += 1
        return self.n


def _base(rng: random.Random, ids: _Ids) -> tuple[Note, set[str]]:
    if rng.random() < 0.1:
        return Note(None, rng.sample(BODY, rng.randint(1, 4)), rng.random() < 0.2, "\n"), set()
    held = {k for k in HELD if rng.random() < 0.25}
    owned = {k for k in OWNED if k not in held and rng.random() < 0.5}
    users = {k for k in USER if rng.random() < 0.5}
    entries = [Entry("owned", k, tuple(OWNED[k]), ids()) for k in owned]
    entries += [Entry("held", k, tuple(HELD[k]), ids()) for k in held]
    entries += [Entry("user", k, tuple(USER[k]), ids()) for k in users if k != "alias"]
    entries += [Entry("user", "#", (f"# note {i}",), ids()) for i in range(rng.randint(0, 2))]
    entries += [Entry("user", "", ("",), ids()) for _ in range(rng.randint(0, 1))]
    rng.shuffle(entries)
    if "alias" in users and "anchor" in users:  # the alias after its anchor
        at = next(i for i, e in enumerate(entries) if e.key == "anchor")
        entries.insert(
            rng.randint(at + 1, len(entries)), Entry("user", "alias", tuple(USER["alias"]), ids())
        )
    body = [rng.choice(BODY) for _ in range(rng.randint(0, 6))]
    newline = rng.choice(["\n", "\r\n"])
    return Note(entries, body, rng.random() < 0.2, newline), owned


def _user_edits(note: Note, rng: random.Random, side: str, ids: _Ids, log: list[str]) -> None:
    for n in range(rng.randint(0, 4)):
        op = rng.choice(["set", "add", "delete", "tag", "comment", "body", "body", "bom"])
        entries = note.entries
        if op == "bom":
            note.bom = not note.bom
        elif op == "body":
            i = rng.randint(0, len(note.body))
            what = rng.choice(["set", "insert", "delete"])
            if what == "insert" or i == len(note.body):
                note.body.insert(i, f"{side} line {n}")
            elif what == "set":
                note.body[i] = f"{side} line {n}"
            else:
                del note.body[i]
        elif entries is None:
            continue
        elif op == "add" or op == "comment":
            line = f"{side}_key{n}: {side} {n}" if op == "add" else f"# {side} {n}"
            entries.insert(rng.randint(0, len(entries)), Entry("user", line, (line,), ids()))
        else:
            mine = [i for i, e in enumerate(entries) if e.kind != "owned"]
            mine = [i for i in mine if entries[i].key not in ("anchor", "alias")]
            if not mine:
                continue
            i = rng.choice(mine)
            e = entries[i]
            if op == "delete":
                del entries[i]
            elif op == "tag" and e.key == "tags":
                entries[i] = Entry("user", e.key, (*e.lines, f"  - {side}-{n}"), ids())
            elif e.key in ("title", "project", "mood", "updated") or e.kind == "held":
                value = {"status": f"done-{side}", "created": "2020", "related": f'["{side}"]'}
                new = f"{e.key}: {value.get(e.key, f'{side} {n}')}"
                entries[i] = Entry(e.kind, e.key, (new,), ids())
            else:
                continue
        log.append(f"{side}: user {op}")


def _owned_edits(
    note: Note, user: Note, base: Note, rng: random.Random, side: str, ids: _Ids, log: list[str]
) -> None:
    entries = note.entries
    if entries is None and base.entries is None and rng.random() < 0.3:
        key = rng.choice(list(APPENDED))
        note.entries = [Entry("owned", key, tuple(APPENDED[key]), ids())]
        log.append(f"{side}: vaultmem creates the block with {key}")
        return
    if entries is None or base.entries is None:
        return
    names = {e.key for e in base.entries}
    for n in range(rng.randint(0, 3)):
        op = rng.choice(["change", "change", "remove", "append"])
        owned = [i for i, e in enumerate(entries) if e.kind == "owned"]
        if op == "append":
            free = [k for k in APPENDED if k not in names and all(e.key != k for e in entries)]
            if free:
                key = rng.choice(free)
                entries.append(Entry("owned", key, tuple(APPENDED[key]), ids()))
                log.append(f"{side}: vaultmem appends {key}")
            continue
        if not owned:
            continue
        i = rng.choice(owned)
        e = entries[i]
        if op == "change":
            lines = _changed(e, side, n)
            if lines is not None:
                entries[i] = Entry("owned", e.key, lines, ids())
                log.append(f"{side}: vaultmem changes {e.key}")
        elif (
            e.key not in ("confidence", "type", "status", "created")
            and (e.key != "pinned" or side == "ours")
            and _untouched_around(e, user, base)
        ):
            del entries[i]
            log.append(f"{side}: vaultmem removes {e.key}")


def _changed(e: Entry, side: str, n: int) -> tuple[str, ...] | None:
    day = 12 if side == "ours" else 13
    if e.key in ("use_count", "review_count", "cross_domain_count"):
        value = int(e.lines[0].split(":")[1]) + (1 if side == "ours" else 2)
        return (f"{e.key}: {value}",)
    if e.key in ("last_used", "last_review", "last_confirmed"):
        return (f"{e.key}: 2026-11-{day}T09:0{n}:00Z",)
    if e.key == "related":
        return (*e.lines, f'  - "[[{side} {n}]]"')
    if e.key == "strength":
        return ("strength: 1.2",)
    if e.key == "confidence" and side == "ours":
        return ("confidence: 0.4",)
    return None


def _untouched_around(e: Entry, user: Note, base: Note) -> bool:
    """Whether the side's user edits left the entries around ``e`` as the base has them."""

    def around(entries: list[Entry]) -> tuple[int, int] | None:
        at = next((i for i, x in enumerate(entries) if x.key == e.key and x.kind == "owned"), None)
        if at is None:
            return None
        before = entries[at - 1].uid if at else 0
        after = entries[at + 1].uid if at + 1 < len(entries) else -1
        return before, after

    assert user.entries is not None and base.entries is not None
    was = around(base.entries)
    return was is not None and was == around(user.entries)


def triple(rng: random.Random) -> Triple:
    """Three versions of a note, drawn from ``rng`` (hypothesis's, in the test)."""
    ids = _Ids()
    log: list[str] = []
    base, _owned = _base(rng, ids)
    sides = []
    for side in ("ours", "theirs"):
        user = base.copy()
        _user_edits(user, rng, side, ids, log)
        full = user.copy()
        _owned_edits(full, user, base, rng, side, ids, log)
        sides.append((user, full))
    names = {
        e.key
        for note in (base, sides[0][1], sides[1][1])
        for e in note.entries or []
        if e.kind == "owned"
    }
    held = {
        e.key
        for note in (base, sides[0][0], sides[1][0])
        for e in note.entries or []
        if e.kind == "held"
    }
    return Triple(
        base.render(),
        sides[0][1].render(),
        sides[1][1].render(),
        sides[0][0].render(),
        sides[1][0].render(),
        frozenset(names - held),
        tuple(log),
    )


def git_merge(ours: bytes, base: bytes, theirs: bytes, style: str = "merge") -> tuple[bytes, int]:
    """``git merge-file -p`` of three texts, run here (the test's own oracle)."""
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for name, data in (("ours", ours), ("base", base), ("theirs", theirs)):
            Path(tmp, name).write_bytes(data)
            paths.append(str(Path(tmp, name)))
        command = ["git", "merge-file", "-p", "-L", "ours", "-L", "base", "-L", "theirs"]
        if style != "merge":
            command.append(f"--{style}")
        done = subprocess.run([*command, *paths], capture_output=True, check=False)
    assert 0 <= done.returncode < 128, done.stderr
    return done.stdout, done.returncode


_LINE_RE = re.compile(rb"[^\n]*\n|[^\n]+\Z")


def user_lines(text: bytes, owned_names: frozenset[str]) -> bytes:
    """``text`` without vaultmem's lines (a top-level line of an owned key and the lines
    that continue it), and without a frontmatter block left empty."""
    out: list[bytes] = []
    inside = False
    names = tuple(f"{name}:".encode() for name in owned_names)
    for line in _LINE_RE.findall(text):
        if line.startswith(names):
            inside = True
            continue
        if inside and line[:1] in (b" ", b"\t"):
            continue
        inside = False
        out.append(line)
    joined = b"".join(out)
    for fences in (b"---\n---\n", b"---\r\n---\r\n"):
        for bom in (b"", b"\xef\xbb\xbf"):
            if joined.startswith(bom + fences):
                return bom + joined[len(bom + fences) :]
    return joined


def replaced(t: Triple, **changes: bytes) -> Triple:
    """``t`` with some texts replaced (for examples written by hand)."""
    return replace(t, **changes)
