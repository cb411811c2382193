"""Prompt gates: which prompts deserve a vault lookup at all, and with which text.

Cheap and index-free, so a hook answers a slash command, a shell line, an
acknowledgement or session chatter ("rename `tmp` in that loop", "thanks, looks stable")
without loading the retrieval code. What passes is searched by :mod:`vaultmem.agent.surface`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["MIN_TERMS", "Gate", "gate"]

MIN_TERMS = 2

_SLASH = re.compile(r"^/[A-Za-z][\w:-]*(\s|$)")
_MEMORY = re.compile(
    r"\b(remember|remind me|recall|last time|previously|earlier we|"
    r"what did we|did we|we decided|we agreed|what was our|our decision|"
    r"have we|in the vault|my notes?|from memory)\b",
    re.IGNORECASE,
)
# Words that make up an acknowledgement or a nudge to go on; a prompt made only of these
# (and punctuation or emoji) carries no topic.
_ACK_WORDS = frozenset(
    [
        "ok",
        "okay",
        "k",
        "kk",
        "thanks",
        "thank",
        "you",
        "thx",
        "ty",
        "cheers",
        "continue",
        "cont",
        "yes",
        "yeah",
        "yep",
        "yup",
        "y",
        "no",
        "nope",
        "n",
        "sure",
        "go",
        "ahead",
        "do",
        "it",
        "that",
        "this",
        "please",
        "pls",
        "plz",
        "great",
        "good",
        "nice",
        "perfect",
        "sounds",
        "keep",
        "going",
        "hmm",
        "hm",
        "lgtm",
        "cool",
        "awesome",
        "let's",
        "lets",
        "let",
        "us",
        "try",
        "work",
        "done",
        "right",
        "alright",
        "fine",
        "can",
        "could",
        "proceed",
        "agreed",
        "agree",
        "wonderful",
        "very",
        "much",
        "again",
        "now",
        "so",
        "and",
        "then",
        "on",
        "with",
        "looks",
        "correct",
        "exactly",
        "true",
        "got",
        "it",
        "understood",
        "makes",
        "sense",
        "next",
        "carry",
        "well",
        "job",
        "excellent",
        "thats",
        "that's",
        "works",
        "worked",
        "fixed",
        "ship",
        "it",
        "stop",
        "wait",
        "also",
        "more",
        "all",
        "of",
        "course",
        "sgtm",
        "go",
        "on",
        "the",
        "same",
    ]
)
_SHELL_COMMANDS = frozenset(
    [
        "git",
        "npm",
        "npx",
        "pnpm",
        "yarn",
        "pip",
        "pip3",
        "pipx",
        "python",
        "python3",
        "uv",
        "poetry",
        "cd",
        "ls",
        "ll",
        "docker",
        "docker-compose",
        "kubectl",
        "helm",
        "cargo",
        "rustc",
        "pytest",
        "tox",
        "nox",
        "make",
        "cmake",
        "gradle",
        "mvn",
        "go",
        "node",
        "deno",
        "bun",
        "rm",
        "mv",
        "cp",
        "mkdir",
        "rmdir",
        "touch",
        "chmod",
        "chown",
        "cat",
        "less",
        "grep",
        "rg",
        "sed",
        "awk",
        "curl",
        "wget",
        "ssh",
        "scp",
        "rsync",
        "sudo",
        "apt",
        "apt-get",
        "brew",
        "terraform",
        "tar",
        "unzip",
        "export",
        "source",
        "echo",
        "ps",
        "kill",
        "top",
        "htop",
        "vim",
        "nvim",
        "code",
        "tail",
        "head",
        "ruby",
        "bundle",
        "rake",
        "composer",
        "php",
        "dotnet",
        "swift",
        "./configure",
        "systemctl",
        "journalctl",
    ]
)
# Commands that are also English words: a shell line only when short and without prose.
_AMBIGUOUS = frozenset(
    [
        "make",
        "go",
        "cat",
        "code",
        "top",
        "source",
        "export",
        "touch",
        "less",
        "head",
        "tail",
        "kill",
    ]
)
_PROSE = frozenset(
    [
        "the",
        "a",
        "an",
        "my",
        "your",
        "to",
        "for",
        "of",
        "is",
        "are",
        "please",
        "how",
        "why",
        "what",
        "when",
        "should",
    ]
)
_WORD = re.compile(r"[\w']+")


@dataclass(frozen=True)
class Gate:
    """What the gates decided: ``reason`` to abstain ("" to search), and the search text."""

    reason: str
    text: str
    forced: bool = False


def _is_shell(prompt: str) -> bool:
    tokens = prompt.split()
    if not tokens or "?" in prompt or "\n" in prompt.strip():
        return False
    first = tokens[0].lower()
    if first not in _SHELL_COMMANDS and not first.startswith(("./", "~/")):
        return False
    if first in _AMBIGUOUS:
        return len(tokens) <= 3 and not {t.lower() for t in tokens[1:]} & _PROSE
    return not {t.lower() for t in tokens[1:]} & _PROSE or any(t.startswith("-") for t in tokens)


def _is_ack(prompt: str) -> bool:
    words = [w.lower() for w in _WORD.findall(prompt)]
    return all(w in _ACK_WORDS for w in words)  # emoji or punctuation only: no words


# Praise that opens a report of how things went ("thanks, looks stable", "perfect, the
# webhooks flow again"): a statement, not a request, so nothing to look up.
_PRAISE = frozenset(
    [
        "thanks",
        "thank",
        "thx",
        "ty",
        "nice",
        "perfect",
        "great",
        "awesome",
        "cool",
        "lovely",
        "sweet",
        "excellent",
        "brilliant",
        "neat",
        "ok",
        "okay",
        "good",
    ]
)
# A word that turns what follows the praise into a request again ("ok fix it so ...").
_REQUEST = frozenset(
    [
        "fix",
        "add",
        "make",
        "write",
        "show",
        "run",
        "check",
        "update",
        "change",
        "use",
        "move",
        "remove",
        "delete",
        "rename",
        "now",
        "next",
        "then",
        "can",
        "could",
        "would",
        "please",
        "let's",
        "lets",
        "how",
        "what",
        "why",
        "where",
        "when",
        "which",
        "who",
        "should",
        "do",
        "does",
        "is",
        "are",
        "also",
        "but",
        "and",
        "try",
        "explain",
        "tell",
        "give",
        "find",
        "look",
        "open",
        "create",
        "implement",
        "set",
        "wire",
        "start",
    ]
)
# An edit or rerun aimed at the session's own work: an imperative verb, then a pointer to
# what is on screen ("that loop", "this file", "what you just changed", "again").
_LOCAL_VERBS = frozenset(
    [
        "rename",
        "fix",
        "delete",
        "remove",
        "undo",
        "revert",
        "rerun",
        "run",
        "explain",
        "format",
        "reformat",
        "move",
        "inline",
        "extract",
        "indent",
        "retry",
        "redo",
        "show",
        "add",
        "drop",
        "shorten",
        "simplify",
        "describe",
        "summarise",
        "summarize",
        "repeat",
    ]
)
_LEAD_IN = re.compile(
    r"^(?:(?:no|ok|okay|now|please|pls|and|then),?\s+)*(?:(?:can|could|would) you\s+)?",
    re.IGNORECASE,
)
_DEICTIC = re.compile(
    r"\b(?:(?:this|that|these|those)\s+(?:\w+\s+)?(?:file|files|function|loop|line|lines|"
    r"docstring|comment|comments|test|tests|class|method|variable|block|change|changes|"
    r"diff|commit|edit|one|bit|part|step|output|error|import|imports|branch)|"
    r"you just|you did|you changed|you wrote|last change|the last edit|the tests again|"
    r"it again|again$)\b",
    re.IGNORECASE,
)
LOCAL_MAX_WORDS = 12


def _is_praise_report(text: str) -> bool:
    words = [w.lower() for w in _WORD.findall(text)]
    if "?" in text or not words or words[0] not in _PRAISE:
        return False
    rest = [w for w in words[1:] if w not in _PRAISE and w not in ("you", "so", "much")]
    return not rest or rest[0] not in _REQUEST


def _is_local_edit(text: str) -> bool:
    """An instruction about what is on screen: nothing in a vault describes "that loop"."""
    body = _LEAD_IN.sub("", text)
    words = _WORD.findall(body)
    if not words or len(words) > LOCAL_MAX_WORDS or words[0].lower() not in _LOCAL_VERBS:
        return False
    return _DEICTIC.search(body) is not None


def gate(prompt: str) -> Gate:
    """Decide whether ``prompt`` deserves a lookup, and with which text.

    Example:
        >>> gate("/help").reason, gate("thanks!").reason, gate("git status").reason
        ('slash command', 'acknowledgement', 'shell command')
    """
    text = " ".join(prompt.split())
    if not text:
        return Gate("empty prompt", "")
    if _SLASH.match(text):
        return Gate("slash command", "")
    if _is_shell(text):
        return Gate("shell command", "")
    forced = _MEMORY.search(text) is not None
    if not forced and _is_ack(text):
        return Gate("acknowledgement", "")
    if not forced and _is_praise_report(text):
        return Gate("acknowledgement", "")
    if not forced and _is_local_edit(text):
        return Gate("about the session's own work", "")
    if forced:
        # Searched whole, as `query` would search it: "what did we decide about X" is
        # what routes the decisions first.
        return Gate("", text, forced=True)
    # Imported only here: the cheap gates above answer without loading the index code.
    from vaultmem.index.analysis import query_terms

    if len(query_terms(text)) < MIN_TERMS:
        return Gate("too short", "")
    return Gate("", text)
