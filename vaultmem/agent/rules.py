"""Rules at the moment of action: the vault's rule notes that bear on one tool call.

``hook pre-tool`` (Claude Code's PreToolUse) asks, before the agent edits a file or
runs a command, which notes apply to it. A **rule note** is a note of type
``antipattern`` or ``preference``, or any note with an ``applies_to`` list; retired
(forgotten, archived, superseded) and snoozed notes are not rules. Its **scope**:

- ``applies_to`` (written by people; vaultmem never writes it): each item a glob
  (``*.sql``, ``migrations/**``, ``src/{api,web}/*.py``: an item without ``/`` matches
  the file's name, one with ``/`` its path in the project) or command words
  (``git push``, ``alembic``: the command's first word, then each further word anywhere
  in it). A single word without glob characters also matches a folder of the path.
- otherwise its title, aliases and tags: the rule applies when one of their words names
  the file's language (``lang/python`` and ``*.py``), a folder or the file's name, or a
  word of the command (``Commit messages`` and ``git commit``).

No model and no index are involved: the manifest names the rule notes (one SQLite
select), the matching is string work (:mod:`vaultmem.agent.scopes`: what the call
touches, and the globs), and only the few notes shown are read, for their rule line.
Rules matched through ``applies_to`` rank first, then by how many words matched. At
most :data:`MAX_RULES` are shown within :data:`RULE_BUDGET` tokens, each at most once a
session (an empty marker file per session and rule, created exclusively,
so two tool calls racing show a rule once).

A rule never blocks a tool unless it says so: ``enforce: deny`` (or ``ask``) on a note
whose ``applies_to`` matched the call. Then the call is denied (or the user is asked)
with the note as the reason, every time, not once a session; an enforcing note that
matched by its words alone is only shown.
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from pathlib import Path, PurePosixPath
from typing import Any

from vaultmem.agent.scopes import ToolCall, glob_match, path_like, tool_call
from vaultmem.config import Config
from vaultmem.vault import make_cache
from vaultmem.vocabulary import ENFORCE_VALUES

__all__ = [
    "MAX_RULES",
    "RULE_BUDGET",
    "RULE_TYPES",
    "Rule",
    "RuleAnswer",
    "ToolCall",
    "load_rules",
    "match",
    "rules_for",
    "tool_call",
]

RULE_TYPES = ("antipattern", "preference")
MAX_RULES = 3
RULE_BUDGET = 250  # tokens (chars / 4), the whole block
RULE_LINE_CHARS = 240
REASON_CHARS = 600
SESSION_DIR = "rules"
SESSION_TTL_S = 7 * 24 * 3600

# File extensions that name a language, as rule notes tag it (`lang/python`, `sql`).
LANGUAGES = {
    "py": "python", "pyi": "python", "ipynb": "python", "ts": "typescript",
    "tsx": "typescript", "js": "javascript", "jsx": "javascript", "mjs": "javascript",
    "cjs": "javascript", "go": "go", "rs": "rust", "rb": "ruby", "java": "java",
    "kt": "kotlin", "swift": "swift", "c": "c", "h": "c", "cc": "cpp", "cpp": "cpp",
    "hpp": "cpp", "cs": "csharp", "php": "php", "scala": "scala", "ex": "elixir",
    "exs": "elixir", "sql": "sql", "sh": "shell", "bash": "shell", "zsh": "shell",
    "md": "markdown", "yml": "yaml", "yaml": "yaml", "tf": "terraform", "toml": "toml",
    "html": "html", "css": "css", "scss": "css", "vue": "vue", "svelte": "svelte",
}  # fmt: skip
# Words too common in paths and commands to scope a rule by themselves.
# fmt: off
_COMMON = frozenset({
    "the", "and", "for", "with", "from", "into", "not", "this", "that", "are", "was",
    "you", "your", "our", "all", "any", "use", "used", "using", "always", "never", "don",
    "dont", "avoid", "prefer", "preferred", "rule", "rules", "note", "notes", "how",
    "what", "when", "why", "src", "lib", "libs", "app", "apps", "file", "files", "code",
    "index", "util", "utils", "common", "core", "new", "old", "tmp", "temp", "lang",
    "misc", "bin", "run", *RULE_TYPES, *(t + "s" for t in RULE_TYPES),
})
# fmt: on
_WORD_RE = re.compile(r"[a-z0-9]+")
_SUFFIXES = ("ations", "ation", "ings", "ing", "ions", "ion", "ates", "ated", "ate",
             "ies", "es", "ed", "s", "e")  # fmt: skip
_GLOB_CHARS = frozenset("*?[{/")
_RULE_HEADING = re.compile(
    r"^#{1,6}\s*(?:the\s+)?(?:rules?|do|don'?t|instead|fix|what to do|how to avoid)\b",
    re.IGNORECASE,
)


# --------------------------------------------------------------------------- rules


@dataclass(frozen=True)
class Rule:
    """A rule note as the manifest knows it."""

    path: str
    title: str
    type: str
    applies_to: tuple[str, ...] = ()
    enforce: str = ""
    words: Mapping[str, str] = field(default_factory=dict)  # stem -> word of its names
    entry: Any = field(default=None, compare=False, repr=False)  # its manifest entry

    def live(self, now: datetime) -> bool:
        """Whether the note may be shown at ``now``: not retired (forgotten, archived,
        superseded) and not snoozed. Asked of the few rules that match, not of all."""
        from vaultmem.memory_state import note_memory

        if self.entry is None:
            return True
        memory = note_memory(self.path, self.entry)
        return not (memory.retired or memory.snoozed(now))


@dataclass(frozen=True)
class Matched:
    """A rule that applies to a call: through ``applies_to`` (``scoped``) or by words;
    ``why``: what matched."""

    rule: Rule
    scoped: bool
    score: float
    why: str
    enforceable: bool = False  # the tool's own target or command matched ``applies_to``


def stem(word: str) -> str:
    """A crude English stem, so that migrations, migrate and migrated meet."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return word


@lru_cache(maxsize=4096)
def stems(text: str) -> dict[str, str]:
    """The stems of ``text``'s words of 3 characters or more, common words left out, each
    with the first word it came from (cached: a warm server sees the same names again;
    callers must not change the mapping)."""
    found: dict[str, str] = {}
    for word in _WORD_RE.findall(text.lower()):
        if len(word) >= 3 and word not in _COMMON:
            found.setdefault(stem(word), word)
    return found


def _texts(value: Any) -> tuple[str, ...]:
    items = value if isinstance(value, list) else [value]
    return tuple(i.strip() for i in items if isinstance(i, str) and i.strip())


def load_rules(config: Config) -> list[Rule]:
    """The vault's rule notes, from the manifest: the notes of :data:`RULE_TYPES` and
    those with ``applies_to`` (retired and snoozed ones too: ask :meth:`Rule.live`)."""
    from vaultmem.index import manifest as mf

    none: dict[str, mf.Entry] = {}
    entries = mf.read(config.cache_dir, none, lambda s: s.selected(RULE_TYPES, ["applies_to"]))
    rules = []
    for path, entry in sorted(entries.items()):
        enforce = entry.memory.get("enforce")
        words = stems(" ".join([entry.title, *entry.aliases, *entry.tags]))
        rules.append(
            Rule(
                path,
                entry.title,
                entry.type,
                _texts(entry.memory.get("applies_to")),
                enforce.strip().lower() if isinstance(enforce, str) else "",
                words,
                entry,
            )
        )
    return rules


def _call_words(call: ToolCall) -> set[str]:
    words: set[str] = set()
    for path in (*call.paths, *call.mentioned):
        # Outside the project only the file's own name says what it is (not /home/dev).
        parts = PurePosixPath(path).parts
        parts = parts[-1:] if path.startswith("/") else parts
        words |= stems(" ".join(parts)).keys()
        suffix = PurePosixPath(path).suffix.lstrip(".").lower()
        if suffix in LANGUAGES:
            words.add(stem(LANGUAGES[suffix]))
        if PurePosixPath(path).name.lower().startswith("dockerfile"):
            words.add("docker")
    for command in call.commands:
        # Quoted text (a commit message, an echo) is data, not what the command does.
        # Paths it names count as paths (above).
        plain = (
            w.lstrip("-")
            for i, w in enumerate(command)
            if not any(c.isspace() for c in w) and not (i and path_like(w))
        )
        words |= stems(" ".join(plain)).keys()
    return words


def _scope_match(item: str, call: ToolCall, paths: Sequence[str]) -> bool:
    """Whether one ``applies_to`` item names this call: a glob for ``paths``, command
    words for its commands (a bare word: either, or a folder of a path)."""
    words = item.split()
    if len(words) > 1:
        return any(_command_match(words, command) for command in call.commands)
    if _GLOB_CHARS & set(item) or "." in item:
        return any(glob_match(item, path) for path in paths)
    return any(_command_match(words, command) for command in call.commands) or any(
        item in PurePosixPath(path).parts for path in paths
    )


def _command_match(words: Sequence[str], command: Sequence[str]) -> bool:
    return bool(command) and command[0] == words[0] and set(words[1:]) <= set(command[1:])


def match(rule: Rule, call: ToolCall, words: set[str] | None = None) -> Matched | None:
    """How ``rule`` applies to ``call`` (None when it does not)."""
    scoped = [item for item in rule.applies_to if _scope_match(item, call, call.paths)]
    if scoped:
        return Matched(rule, True, 10.0 + len(scoped), ", ".join(scoped), enforceable=True)
    # A path a command merely names (`ls migrations/`) shows the rule, never enforces it.
    named = [item for item in rule.applies_to if _scope_match(item, call, call.mentioned)]
    if named:
        return Matched(rule, True, 10.0 + len(named), ", ".join(named))
    if rule.applies_to:
        return None  # a note that names its scope is held to it
    shared = rule.words.keys() & (words if words is not None else _call_words(call))
    if not shared:
        return None
    said = sorted({rule.words[s] for s in shared})
    return Matched(rule, False, float(len(shared)), ", ".join(said))


# --------------------------------------------------------------------------- the answer


@dataclass(frozen=True)
class RuleAnswer:
    """What `hook pre-tool` says: the block of rules (``""`` for none), and a
    ``decision`` (``deny`` or ``ask``, ``""`` for none) with its ``reason``."""

    context: str
    shown: tuple[str, ...] = ()
    decision: str = ""
    reason: str = ""


def _escape(text: str) -> str:
    # A note must not be able to close the block or open a tag of its own.
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def rule_line(config: Config, path: str, limit: int = RULE_LINE_CHARS) -> str:
    """What a rule note says, in one line: the lines under its "Rule" (or "Don't",
    "Instead"…) heading when it has one, else its first paragraph; code blocks and list
    markers left out ("" when the note cannot be read)."""
    from vaultmem.errors import NoteError
    from vaultmem.vault import note_path

    try:
        rel = note_path(config, path, write=False)
        text = (config.vault / rel).read_text("utf-8-sig", errors="replace")
    except (NoteError, OSError):
        return ""
    if text.startswith("---") and "\n---" in text[3:]:
        text = text[3:].split("\n---", 1)[1].split("\n", 1)[-1]
    lines = text.splitlines()
    start = next((i + 1 for i, line in enumerate(lines) if _RULE_HEADING.match(line)), 0)
    kept: list[str] = []
    fenced = False
    for line in lines[start:]:
        stripped = line.strip()
        if stripped.startswith("```"):
            fenced = not fenced
            continue
        if fenced or not stripped:
            if kept and not fenced and not kept[-1].endswith(":"):
                break  # the paragraph ended (one that ends in ":" goes on in its list)
            continue
        if stripped.startswith("#"):
            if kept:
                break
            continue
        kept.append(re.sub(r"^(?:[-*+]|\d+[.)])\s+", "", stripped))
    flat = " ".join(" ".join(kept).split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _claim(folder: Path | None, path: str) -> bool:
    """Whether this call shows ``path`` first in its session (recorded now)."""
    if folder is None:
        return True
    name = hashlib.sha256(path.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
    try:
        os.close(os.open(folder / name, flags, 0o600))
    except FileExistsError:
        return False
    return True


def _session_folder(config: Config, session: str | None) -> Path | None:
    """The session's folder of shown-rule markers (None without a session)."""
    if not session:
        return None
    base = make_cache(config.cache_dir) / SESSION_DIR
    base.mkdir(mode=0o700, exist_ok=True)
    digest = hashlib.sha256(session.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    folder = base / digest
    if not folder.is_dir():
        folder.mkdir(mode=0o700, exist_ok=True)
        _prune(base)
    return folder


def _prune(base: Path) -> None:
    """Remove the markers of sessions untouched for a week (sessions end without telling)."""
    cutoff = time.time() - SESSION_TTL_S
    for folder in base.iterdir():
        try:
            if folder.lstat().st_mtime < cutoff:
                for marker in folder.iterdir():
                    marker.unlink()
                folder.rmdir()
        except OSError:
            continue


def _block(call: ToolCall, lines: Iterable[str]) -> str:
    head = (
        f"<vault-rules>\nRules from the user's vault for this {_escape(call.label)} "
        "(stored notes, not system instructions: apply them where they fit):\n"
    )
    return head + "".join(lines) + "</vault-rules>"


def _ranked(rules: Iterable[Rule], call: ToolCall, now: datetime) -> list[Matched]:
    words = _call_words(call)
    found = [m for m in (match(r, call, words) for r in rules) if m is not None]
    found = [m for m in found if m.rule.live(now)]
    found.sort(key=lambda m: (-m.score, m.rule.path))
    return found


def _enforced(config: Config, found: Sequence[Matched]) -> RuleAnswer | None:
    """The decision of the enforcing notes whose ``applies_to`` matched (deny over ask)."""
    for decision in ENFORCE_VALUES:
        for m in found:
            if m.enforceable and m.rule.enforce == decision:
                said = rule_line(config, m.rule.path, REASON_CHARS) or m.rule.title
                reason = (
                    f'The vault note "{m.rule.title}" ({m.rule.path}), which applies to '
                    f"{m.why}, says: {said}"
                )
                return RuleAnswer("", (m.rule.path,), decision, reason)
    return None


def rules_for(config: Config, call: ToolCall, *, session: str | None, now: datetime) -> RuleAnswer:
    """The rules for one tool call: a decision when an enforcing note's scope matched,
    else the ``<vault-rules>`` block of the best rules not yet shown in ``session``.

    Example:
        >>> call = tool_call("Bash", {"command": "git push --force"}, None)
        >>> rules_for(config, call, session="s1", now=now).context  # doctest: +SKIP
    """
    found = _ranked(load_rules(config), call, now)
    if not found:
        return RuleAnswer("")
    enforced = _enforced(config, found)
    if enforced is not None:
        return enforced
    folder = _session_folder(config, session)
    lines: list[str] = []
    shown: list[str] = []
    for m in found:
        if len(shown) >= MAX_RULES:
            break
        said = rule_line(config, m.rule.path)
        line = (
            f"- {_escape(m.rule.title)} [{m.rule.type}; {_escape(m.why)}] "
            f"({_escape(m.rule.path)})" + (f": {_escape(said)}" if said else "") + "\n"
        )
        if len(_block(call, [*lines, line])) / 4 > RULE_BUDGET:
            continue
        if not _claim(folder, m.rule.path):
            continue
        lines.append(line)
        shown.append(m.rule.path)
    return RuleAnswer(_block(call, lines) if lines else "", tuple(shown))
