"""What a tool call touches, and globs that are safe to take from a note.

:func:`tool_call` turns a PreToolUse event's ``tool_name`` and ``tool_input`` into a
:class:`ToolCall`: the paths a file tool names (relative to the project when inside it),
and the simple commands of a Bash line, each as its words, with wrappers (``sudo``,
``env``, ``uv run``, ``python -m``) taken off. :func:`glob_match` matches the globs of a
note's ``applies_to`` (:mod:`vaultmem.agent.rules`). Notes may be someone else's, so
their globs are matched by a backtracking-free matcher, never compiled into a regular
expression a hostile pattern could make exponential.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

__all__ = ["ToolCall", "glob_match", "path_like", "split_command", "tool_call"]

MAX_PATTERN = 200
MAX_PATH = 1024
MAX_COMMAND = 8192
# Words a command is run through: the command is the word after them.
# fmt: off
_WRAPPERS = frozenset({
    "sudo", "doas", "env", "time", "nohup", "nice", "exec", "command", "builtin", "xargs",
    "npx", "bunx", "pnpx",
})
# fmt: on
_RUNNERS = frozenset(["uv", "poetry", "pipenv", "pdm", "hatch", "rye"])  # `uv run X`
_PYTHON_RE = re.compile(r"^python(?:\d+(?:\.\d+)?)?$")


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
            mentioned.extend(_project_path(w, cwd) for w in words[1:] if path_like(w))
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


def path_like(word: str) -> bool:
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
