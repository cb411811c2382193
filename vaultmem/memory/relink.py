"""Links rewritten after notes move: the part of `promote` that keeps links working.

:func:`relink` takes the manifest from before a set of moves (``old path → new path``)
and rewrites, in every note that has one, each link that resolved to a note before the
moves and would resolve elsewhere (or nowhere) after: wikilinks and markdown links, in
the body and in the frontmatter, code blocks and code spans left alone.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import quote, unquote

from vaultmem.atomic import rewrite
from vaultmem.config import Config
from vaultmem.errors import NoteError, VaultmemError
from vaultmem.frontmatter.scan import parse_meta, split
from vaultmem.index import manifest as mf
from vaultmem.markdown import INLINE_CODE_RE, WIKILINK_RE, outline
from vaultmem.memory.sweeps import Failure
from vaultmem.vault import LinkResolver, NoteName, note_path, strip_md

__all__ = ["Relink", "relink"]


@dataclass(frozen=True)
class Relink:
    """A note whose links to moved notes were (or would be) rewritten; ``path`` is where
    the note is after the sweep."""

    path: str
    links: int


# A markdown link's destination: <anything but angle brackets> or a run without spaces
# or parentheses, optionally followed by a "title".
_MD_LINK_RE = re.compile(r"\]\((?P<url><[^<>\n]+>|[^\s()<>]+)(?P<rest>(?:[ \t]+\"[^\"\n]*\")?\))")
_SCHEME_RE = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
# What a markdown link destination cannot hold raw; everything else is written as is.
_URL_ESCAPES = {"%": "%25", " ": "%20", "(": "%28", ")": "%29", "<": "%3C", ">": "%3E", "#": "%23"}


class _LinkMap:
    """Link resolution before and after a set of moves, and the text that fixes a link.

    A link is rewritten when the note it pointed to before the moves is not the one it
    points to afterwards: a path-style link to a moved note, a name link to a note that
    had to be renamed, or (rarely) a name link that the move would make ambiguous.
    """

    def __init__(self, entries: Mapping[str, mf.Entry], moves: Mapping[str, str]) -> None:
        names = [NoteName(p, e.title, e.aliases) for p, e in entries.items()]
        self.moves = dict(moves)
        self.before = LinkResolver(names)
        self.after = LinkResolver([replace(n, path=moves.get(n.path, n.path)) for n in names])
        self.known_before = {p.lower(): p for p in entries}
        self.known_after = {moves.get(p, p).lower(): moves.get(p, p) for p in entries}

    def fix_wikilink(self, target: str, src_before: str, src_after: str) -> str | None:
        """The new target text of ``[[target]]`` written in the note, or None to keep it."""
        was = self.before.resolve_link(target, src_before)
        if was is None:
            return None
        want = self.moves.get(was, was)
        if self.after.resolve_link(target, src_after) == want:
            return None
        return self._text_for(target, want, lambda t: self.after.resolve_link(t, src_after))

    def _text_for(self, target: str, want: str, resolve: Callable[[str], str | None]) -> str | None:
        """The first spelling of a link to ``want`` that resolves to it, in the original's
        style: a bare name stays a name when it can, ``.md`` and a leading ``/`` are kept."""
        keep_md = target.lower().endswith(".md")
        lead = "/" if target.startswith("/") else ""
        stem = PurePosixPath(want).stem
        options = [] if "/" in target else [stem]
        options.append(lead + strip_md(want))
        for option in options:
            text = option + ".md" if keep_md and want.lower().endswith(".md") else option
            if resolve(text) == want:
                return text
        return None

    def md_resolve(self, url_path: str, source: str, *, after: bool) -> tuple[str | None, bool]:
        """(note, relative?) a markdown link destination points to, Obsidian's way:
        ``/abs`` from the root, else relative to the note's folder, else as a link path."""
        known = self.known_after if after else self.known_before
        resolver = self.after if after else self.before
        if url_path.startswith("/"):
            return known.get(url_path[1:].lower()), False
        folder = posixpath.dirname(source)
        joined = posixpath.normpath(posixpath.join(folder, url_path))
        if joined != ".." and not joined.startswith("../"):
            hit = known.get(joined.lower()) or known.get(joined.lower() + ".md")
            if hit is not None:
                return hit, bool(folder)
        if url_path.startswith(("./", "../")):
            return None, False
        return resolver.resolve_link(url_path, source), False

    def fix_md(self, url_path: str, src_before: str, src_after: str) -> str | None:
        """The new (decoded) destination of a markdown link, or None to keep it."""
        was, relative = self.md_resolve(url_path, src_before, after=False)
        if was is None:
            return None
        want = self.moves.get(was, was)
        if self.md_resolve(url_path, src_after, after=True)[0] == want:
            return None
        base = want
        if relative:
            base = posixpath.relpath(want, posixpath.dirname(src_after) or ".")
            if url_path.startswith("./") and not base.startswith("../"):
                base = "./" + base
        elif url_path.startswith("/"):
            base = "/" + want
        options = [] if "/" in url_path else [PurePosixPath(want).name]
        options.append(base)
        for option in options:
            text = option if url_path.lower().endswith(".md") else strip_md(option)
            if self.md_resolve(text, src_after, after=True)[0] == want:
                return text
        return None


def _encode_url(path: str) -> str:
    return "".join(_URL_ESCAPES.get(ch, ch) for ch in path)


def _outside(spans: Sequence[tuple[int, int]], start: int, end: int) -> bool:
    return not any(a < end and start < b for a, b in spans)


@dataclass
class _Scope:
    """One note being relinked: where it was, where it is, and the replacements made."""

    links: _LinkMap
    before: str
    after: str
    subs: list[tuple[str, str]]


def _code_spans(text: str) -> list[tuple[int, int]]:
    return [m.span() for m in INLINE_CODE_RE.finditer(text)] if "`" in text else []


def _fix_wikilink(m: re.Match[str], spans: Sequence[tuple[int, int]], scope: _Scope) -> str:
    """The text of one ``[[wikilink]]`` match, its target replaced when the move needs it."""
    raw = m.group("target")
    target = raw.strip()
    if not target or not _outside(spans, m.start(), m.end()):
        return m.group(0)
    new = scope.links.fix_wikilink(target, scope.before, scope.after)
    if new is None:
        return m.group(0)
    scope.subs.append((target, new))
    start, end = m.start("target") - m.start(), m.end("target") - m.start()
    return m.group(0)[:start] + raw.replace(target, new, 1) + m.group(0)[end:]


def _fix_md_link(m: re.Match[str], spans: Sequence[tuple[int, int]], scope: _Scope) -> str:
    """The text of one ``](destination)`` match, the destination replaced when needed.

    The new destination keeps the old one's form: inside ``<…>`` raw, else with the
    characters a destination cannot hold raw percent-encoded; the ``#fragment`` stays.
    """
    url = m.group("url")
    angle = url.startswith("<")
    inner = url[1:-1] if angle else url
    path_part, hash_sign, fragment = inner.partition("#")
    decoded = unquote(path_part)
    if not decoded or _SCHEME_RE.match(decoded) or not _outside(spans, m.start(), m.end()):
        return m.group(0)
    new = scope.links.fix_md(decoded, scope.before, scope.after)
    if new is None:
        return m.group(0)
    written = new if angle else _encode_url(new)
    scope.subs.append((path_part, written))
    dest = written + hash_sign + fragment
    return "](" + (f"<{dest}>" if angle else dest) + m.group("rest")


def _relink_line(line: str, scope: _Scope) -> str:
    """``line`` with its links fixed (wikilinks, then markdown links), code spans skipped."""
    if "[[" in line:
        spans = _code_spans(line)
        line = WIKILINK_RE.sub(lambda m: _fix_wikilink(m, spans, scope), line)
    if "](" in line:
        spans = _code_spans(line)
        line = _MD_LINK_RE.sub(lambda m: _fix_md_link(m, spans, scope), line)
    return line


def _relink_body(body: str, scope: _Scope) -> tuple[str, int]:
    """The body with links fixed outside fenced/indented code, and how many changed."""
    if "[[" not in body and "](" not in body:
        return body, 0
    code = outline(body).code_lines
    out = []
    # splitlines() numbers lines exactly as outline() does; keepends restores the bytes.
    for number, line in enumerate(body.splitlines(keepends=True), start=1):
        out.append(line if number in code else _relink_line(line, scope))
    return "".join(out), len(scope.subs)


def _same_but_relinked(old: Any, new: Any, subs: Sequence[tuple[str, str]]) -> bool:
    """Whether parsed YAML ``new`` is ``old`` with only link substitutions in strings."""
    if isinstance(old, str) and isinstance(new, str):
        expected = old
        for before, after in subs:
            expected = expected.replace(before, after)
        return new in (old, expected)
    if isinstance(old, dict) and isinstance(new, dict):
        return list(old) == list(new) and all(_same_but_relinked(old[k], new[k], subs) for k in old)
    if isinstance(old, list) and isinstance(new, list):
        return len(old) == len(new) and all(
            _same_but_relinked(a, b, subs) for a, b in zip(old, new, strict=True)
        )
    return type(old) is type(new) and bool(old == new)


def _relink_frontmatter(text: str, links: _LinkMap, before: str, after: str) -> tuple[str, int]:
    """Frontmatter text with ``[[links]]`` fixed, if the YAML still means the same.

    The replacement is made on the text (so every other byte stays); it is kept only if
    the re-parsed frontmatter equals the old one with the link targets substituted —
    anything else (a quoting style that would need escapes) keeps the frontmatter as is.
    """
    if "[[" not in text:
        return text, 0
    scope = _Scope(links, before, after, [])
    new = "".join(_relink_line(line, scope) for line in text.splitlines(keepends=True))
    if not scope.subs:
        return text, 0
    try:
        old_meta, _ = parse_meta(b"---\n" + text.encode() + b"---\n", after)
        new_meta, _ = parse_meta(b"---\n" + new.encode() + b"---\n", after)
    except NoteError:
        return text, 0
    if not _same_but_relinked(old_meta, new_meta, scope.subs):
        return text, 0
    return new, len(scope.subs)


def _relink_bytes(raw: bytes, links: _LinkMap, before: str, after: str) -> tuple[bytes, int]:
    """A note's bytes with its links fixed (body and frontmatter), and how many changed.

    ``before``/``after`` are the note's own path before and after the moves (links are
    resolved from where the note is).
    """
    parts = split(raw, after)
    try:
        body = parts.body.decode("utf-8")
    except UnicodeDecodeError:
        return raw, 0  # not text we can edit safely: leave every byte
    new_body, n_body = _relink_body(body, _Scope(links, before, after, []))
    fm, n_fm = parts.frontmatter, 0
    if fm is not None:
        fm, n_fm = _relink_frontmatter(fm, links, before, after)
    if n_body + n_fm == 0:
        return raw, 0
    return replace(parts, body=new_body.encode("utf-8")).with_frontmatter(fm), n_body + n_fm


def _rewrite(path: Path, transform: Callable[[bytes], tuple[bytes, int]], source: str) -> int:
    """Apply a link ``transform`` (bytes, links changed) through :func:`rewrite`; the count
    of the version written (a concurrent save is kept and relinked too)."""
    counts: dict[bytes, int] = {}

    def links_fixed(raw: bytes) -> bytes:
        new, counts[raw] = transform(raw)
        return new

    done = rewrite(path, links_fixed, source)
    return counts[done.before] if done.changed else 0


def _mentions(moves: Mapping[str, str]) -> re.Pattern[str]:
    """A cheap filter: text naming any moved note's old or new file name (also %-encoded)."""
    words = set()
    for old, new in moves.items():
        for path in (old, new):
            stem = PurePosixPath(path).stem.lower()
            words.update({stem, quote(stem).lower()})
    return re.compile("|".join(re.escape(w) for w in sorted(words, key=len, reverse=True)))


def relink(
    config: Config,
    entries: Mapping[str, mf.Entry],
    moves: Mapping[str, str],
    *,
    write: bool,
) -> tuple[list[Relink], list[Failure]]:
    """Rewrite links that the moves ``old path → new path`` would break or redirect.

    ``entries`` is the manifest from before the moves. Only links that resolved to a
    note before and would resolve elsewhere (or nowhere) after are changed, each by an
    exact replacement of its target text: ``[[inbox/a]]`` → ``[[memory/a]]``,
    ``[[inbox/a.md|x]]`` → ``[[memory/a.md|x]]``, ``](inbox/a.md)`` → ``](memory/a.md)``
    (relative markdown links stay relative). Code blocks and code spans are left alone.
    With ``write`` the notes are rewritten atomically (the caller holds the vault lock
    and has already moved the files); without it, nothing is written and the same report
    comes back.
    """
    if not moves:
        return [], []
    links = _LinkMap(entries, moves)
    wanted = _mentions(moves)
    relinked, failed = [], []
    for old_src in sorted(entries):
        src = moves.get(old_src, old_src)
        on_disk = config.vault / (src if write else old_src)

        def transform(raw: bytes, old_src: str = old_src, src: str = src) -> tuple[bytes, int]:
            if wanted.search(raw.decode("utf-8", "replace").lower()) is None:
                return raw, 0
            return _relink_bytes(raw, links, old_src, src)

        try:
            if write and on_disk.is_symlink() and _count(on_disk, transform):
                note_path(config, src, write=True)  # a symlink out of the vault is not written
            count = _rewrite(on_disk, transform, src) if write else _count(on_disk, transform)
        except VaultmemError as exc:
            failed.append(Failure(src, str(exc)))
            continue
        if count:
            relinked.append(Relink(src, count))
    return relinked, failed


def _count(path: Path, transform: Callable[[bytes], tuple[bytes, int]]) -> int:
    """How many links ``transform`` would change in the file (0 when it is unreadable)."""
    try:
        return transform(path.read_bytes())[1]
    except OSError:
        return 0
