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
select), the matching is string work, and only the few notes shown are read, for their
rule line. Rules matched through ``applies_to`` rank first, then by how many words
matched. At most :data:`MAX_RULES` are shown within :data:`RULE_BUDGET` tokens, each at
most once a session (an empty marker file per session and rule, created exclusively,
so two tool calls racing show a rule once).

A rule never blocks a tool unless it says so: ``enforce: deny`` (or ``ask``) on a note
whose ``applies_to`` matched the call. Then the call is denied (or the user is asked)
with the note as the reason, every time, not once a session; an enforcing note that
matched by its words alone is only shown.

Globs come from notes, which may be someone else's: they are matched by a
backtracking-free matcher (:func:`glob_match`), never compiled into a regular expression
a hostile pattern could make exponential.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import Any

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
    "glob_match",
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
MAX_PATTERN = 200
MAX_PATH = 1024
MAX_COMMAND = 8192
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
# Words a command is run through: the command is the word after them.
_WRAPPERS = frozenset({
    "sudo", "doas", "env", "time", "nohup", "nice", "exec", "command", "builtin", "xargs",
    "npx", "bunx", "pnpx",
})
# fmt: on
_RUNNERS = frozenset(["uv", "poetry", "pipenv", "pdm", "hatch", "rye"])  # `uv run X`
_PYTHON_RE = re.compile(r"^python(?:\d+(?:\.\d+)?)?$")
_WORD_RE = re.compile(r"[a-z0-9]+")
_SUFFIXES = ("ations", "ation", "ings", "ing", "ions", "ion", "ates", "ated", "ate",
             "ies", "es", "ed", "s", "e")  # fmt: skip
_GLOB_CHARS = frozenset("*?[{/")
_RULE_HEADING = re.compile(
    r"^#{1,6}\s*(?:the\s+)?(?:rules?|do|don'?t|instead|fix|what to do|how to avoid)\b",
    re.IGNORECASE,
)


# --------------------------------------------------------------------------- the call


@dataclass(frozen=True)
class ToolCall:
    """What a tool call touches: its tool, the paths it names (each relative to the
    project when inside it, else absolute) and the words of each simple command a Bash
    call runs (wrappers such as ``sudo`` and ``python -m`` taken off)."""

    tool: str
    paths: tuple[str, ...] = ()
    commands: tuple[tuple[str, ...], ...] = ()
    mentioned: tuple[str, ...] = ()  # paths a command names: shown for, never enforced on
    line: str = ""  # the command line, whitespace collapsed

    @property
    def label(self) -> str:
        """The call in a few words, for the block's first line."""
        if self.line:
            shown = self.line if len(self.line) <= 80 else self.line[:79] + "…"
            return f"{self.tool} `{shown}`"
        if self.paths:
            return f"{self.tool} of {self.paths[0]}"
        return self.tool


def tool_call(tool: str, tool_input: Mapping[str, Any], cwd: Path | None) -> ToolCall:
    """The :class:`ToolCall` of a PreToolUse event's ``tool_name`` and ``tool_input``
    (``file_path``/``notebook_path``/``path`` for file tools, ``command`` for Bash)."""
    paths = []
    for key in ("file_path", "notebook_path", "path"):
        value = tool_input.get(key)
        if isinstance(value, str) and value.strip():
            paths.append(_project_path(value.strip()[:MAX_PATH], cwd))
    commands: list[tuple[str, ...]] = []
    mentioned: list[str] = []
    command = tool_input.get("command")
    line = ""
    if isinstance(command, str) and command.strip():
        line = " ".join(command[:MAX_COMMAND].split())
        commands = split_command(command[:MAX_COMMAND])
        for words in commands:
            mentioned.extend(_project_path(w, cwd) for w in words[1:] if _path_like(w))
    return ToolCall(
        tool,
        tuple(dict.fromkeys(paths)),
        tuple(commands),
        tuple(dict.fromkeys(p for p in mentioned if p not in paths)),
        line,
    )


def _project_path(path: str, cwd: Path | None) -> str:
    """``path`` relative to the project folder when it lies inside it (POSIX)."""
    posix = path.replace("\\", "/")
    if cwd is not None:
        base = str(cwd).rstrip("/") + "/"
        if posix.startswith(base):
            return posix[len(base) :]
    return posix.removeprefix("./")


def _path_like(word: str) -> bool:
    if word.startswith("-") or any(c.isspace() for c in word):
        return False  # an option, or quoted text
    return "/" in word or bool(re.search(r"\.[A-Za-z0-9]{1,6}$", word))


def split_command(command: str) -> list[tuple[str, ...]]:
    """The simple commands of a shell line, each as its words: split at ``;``, ``&&``,
    ``||``, ``|``, ``&``, newlines and parentheses; leading ``VAR=value`` assignments,
    redirections and wrappers (``sudo``, ``env``, ``uv run``, ``python -m``) dropped."""
    lexer = shlex.shlex(command.replace("\n", " ; "), posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError:  # an unclosed quote: the words as they stand
        tokens = command.replace("\n", " ; ").split()
    out: list[tuple[str, ...]] = []
    words: list[str] = []
    for token in [*tokens, ";"]:
        if token and set(token) <= set("();<>|&"):
            if "<" in token or ">" in token:
                continue  # a redirection: its target stays a word (a path)
            if words:
                out.append(_unwrapped(words))
            words = []
        else:
            words.append(token)
    return [w for w in out if w]


def _runner(word: str, after: list[str]) -> bool:
    """Whether ``word`` and the next run the command after them (`uv run`, `python -m`)."""
    if word in _RUNNERS:
        return after in (["run"], ["exec"])
    return bool(_PYTHON_RE.match(PurePosixPath(word).name)) and after == ["-m"]


def _unwrapped(words: list[str]) -> tuple[str, ...]:
    i, wrapped = 0, False
    while i < len(words):
        word = words[i]
        if "=" in word and not word.startswith("-") and i < len(words) - 1:
            i += 1  # FOO=bar cmd
        elif word in _WRAPPERS or (wrapped and word.startswith("-")):
            i, wrapped = i + 1, True
        elif _runner(word, words[i + 1 : i + 2]):
            i, wrapped = i + 2, True
        else:
            break
    rest = words[i:]
    if not rest:
        return ()
    return (PurePosixPath(rest[0]).name, *rest[1:])


# --------------------------------------------------------------------------- globs


def _glob_tokens(pattern: str) -> list[str]:
    """A glob cut into tokens: ``*``, ``?``, ``[class]`` or one literal character."""
    tokens: list[str] = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "[":
            end = pattern.find("]", i + 2)
            if end != -1:
                tokens.append(pattern[i : end + 1])
                i = end + 1
                continue
        if char == "*" and tokens and tokens[-1] == "*":
            i += 1  # `**` inside a name is `*`
            continue
        tokens.append(char)
        i += 1
    return tokens


def _char_matches(token: str, char: str) -> bool:
    if token == "?":
        return True
    if len(token) > 2 and token[0] == "[":
        body, negate = token[1:-1], False
        if body[:1] in ("!", "^"):
            body, negate = body[1:], True
        found, i = False, 0
        while i < len(body):
            if i + 2 < len(body) and body[i + 1] == "-":
                found = found or body[i] <= char <= body[i + 2]
                i += 3
            else:
                found = found or body[i] == char
                i += 1
        return found != negate
    return token == char


def _sequence_match(pattern: Sequence[Any], items: Sequence[Any], star: Any, same: Any) -> bool:
    """Wildcard matching with one kind of star, by the greedy last-star method: time
    O(len(pattern) x len(items)) at worst, never exponential."""
    p = s = 0
    last_star, mark = -1, 0
    while s < len(items):
        if p < len(pattern) and pattern[p] == star:
            last_star, mark = p, s
            p += 1
        elif p < len(pattern) and same(pattern[p], items[s]):
            p += 1
            s += 1
        elif last_star != -1:
            p, mark = last_star + 1, mark + 1
            s = mark
        else:
            return False
    while p < len(pattern) and pattern[p] == star:
        p += 1
    return p == len(pattern)


def _name_match(pattern: str, name: str) -> bool:
    return _sequence_match(_glob_tokens(pattern), name, "*", _char_matches)


def _expand_braces(pattern: str, limit: int = 32) -> list[str]:
    """``{a,b}`` alternatives, at most ``limit`` of them (a hostile pattern stays small)."""
    found = re.search(r"\{([^{}]*)\}", pattern)
    if not found:
        return [pattern]
    out: list[str] = []
    for option in found.group(1).split(","):
        for expanded in _expand_braces(pattern[: found.start()] + option + pattern[found.end() :]):
            if len(out) >= limit:
                return out
            out.append(expanded)
    return out


def glob_match(pattern: str, path: str) -> bool:
    """Whether the POSIX ``path`` matches the glob ``pattern`` (``*`` within a name,
    ``**`` across folders, ``?``, ``[a-z]``, ``{a,b}``). A pattern without ``/`` is
    matched against the path's last name; one with ``/`` against the path, or any tail of
    it (``migrations/**`` matches ``backend/migrations/0001.py``).

    Example:
        >>> glob_match("*.sql", "db/schema.sql"), glob_match("src/**/*.py", "src/a/b.py")
        (True, True)
    """
    if not pattern or len(pattern) > MAX_PATTERN:
        return False
    parts = [p for p in path.split("/") if p]
    for option in _expand_braces(pattern):
        if "/" not in option.strip("/"):
            if parts and _name_match(option.strip("/"), parts[-1]):
                return True
            continue
        wanted = [p for p in option.strip("/").split("/") if p]
        if wanted[0] != "**":
            wanted = ["**", *wanted]  # not anchored: any tail of the path
        if _sequence_match(wanted, parts, "**", _name_match):
            return True
    return False


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


def stems(text: str) -> dict[str, str]:
    """The stems of ``text``'s words of 3 characters or more, common words left out, each
    with the first word it came from."""
    found: dict[str, str] = {}
    for word in _WORD_RE.findall(text.lower()):
        if len(word) >= 3 and word not in _COMMON:
            found.setdefault(stem(word), word)
    return found


def _texts(value: Any) -> tuple[str, ...]:
    items = value if isinstance(value, list) else [value]
    return tuple(i.strip() for i in items if isinstance(i, str) and i.strip())


def load_rules(config: Config, now: datetime) -> list[Rule]:
    """The vault's rule notes, from the manifest: the notes of :data:`RULE_TYPES` and
    those with ``applies_to``, less retired and snoozed ones."""
    from vaultmem.index import manifest as mf
    from vaultmem.memory_state import note_memory

    none: dict[str, mf.Entry] = {}
    entries = mf.read(config.cache_dir, none, lambda s: s.selected(RULE_TYPES, ["applies_to"]))
    rules = []
    for path, entry in sorted(entries.items()):
        memory = note_memory(path, entry)
        if memory.retired or memory.snoozed(now):
            continue
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
            if not any(c.isspace() for c in w) and not (i and _path_like(w))
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


def _ranked(rules: Iterable[Rule], call: ToolCall) -> list[Matched]:
    words = _call_words(call)
    found = [m for m in (match(r, call, words) for r in rules) if m is not None]
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
    found = _ranked(load_rules(config, now), call)
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
