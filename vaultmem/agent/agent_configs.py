"""vaultmem's MCP server in Codex CLI's and Gemini CLI's configuration: merge, remove,
inspect, with the same care as for Claude Code (:mod:`vaultmem.agent.claude_settings`,
whose :class:`~vaultmem.agent.claude_settings.Change` and ``apply`` do every write: the
``--dry-run`` diff, the one-time backup, the atomic replace).

Codex CLI keeps MCP servers as ``[mcp_servers.NAME]`` tables in ``$CODEX_HOME/config.toml``
(``~/.codex/config.toml``) and, for a trusted project, ``.codex/config.toml``: ``command``
and ``args`` for stdio; ``url`` and ``bearer_token_env_var`` (the variable Codex reads the
token from) for Streamable HTTP. Gemini CLI keeps them under ``mcpServers`` in
``~/.gemini/settings.json`` and ``.gemini/settings.json``: ``command`` and ``args``;
``httpUrl`` and ``headers``, whose ``${VAR}`` Gemini expands from its environment. So the
token is never written for either: both read ``$VAULTMEM_SERVE_TOKEN``.

Python reads TOML (:mod:`tomllib`) but does not write it, and rewriting the file from its
value would lose the user's comments and layout. So ``config.toml`` is edited as text: only
vaultmem's own table (``[mcp_servers.vaultmem]`` and any ``[mcp_servers.vaultmem.*]``) is
replaced, removed or appended, every other byte is kept, and the result is parsed back
and must be exactly the intended value before anything is written.
"""

from __future__ import annotations

import copy
import json
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vaultmem.agent import jsonc
from vaultmem.agent.claude_settings import (
    MCP_NAME,
    Change,
    installed_mcp,
    plan,
    read_json,
    read_object,
    refuse_links,
    with_mcp,
    without_mcp,
)
from vaultmem.errors import ConfigError

AGENTS = ("codex", "gemini")
SCOPES = ("user", "project")
# The variable both agents read the server's token from (vaultmem.servers.auth.TOKEN_ENV).
TOKEN_VARIABLE = "VAULTMEM_SERVE_TOKEN"
TABLE = "mcp_servers"
SERVERS = ("mcpServers",)

# A table header naming vaultmem's table or one under it, bare or quoted.
_OURS = re.compile(
    rf"""^[ \t]*\[[ \t]*{TABLE}[ \t]*\.[ \t]*(?:{MCP_NAME}|"{MCP_NAME}"|'{MCP_NAME}')"""
    r"""[ \t]*(?:\.[^\]\n]*)?\][ \t]*(?:#.*)?$"""
)
# Any table or array-of-tables header: where the table before it ends.
_HEADER = re.compile(r"""^[ \t]*\[\[?[ \t]*[A-Za-z0-9_"'-][^\n]*\]\]?[ \t]*(?:#.*)?$""")


@dataclass(frozen=True)
class McpFile:
    """Where an agent keeps its MCP servers for a scope: the file, its kind (``toml`` or
    ``json``), and whether it is shared with the team (a project's)."""

    agent: str
    path: Path
    kind: str
    shared: bool
    root: Path | None = None  # the folder of its scope, which it may not lead out of


def mcp_file(
    agent: str, scope: str, *, home: Path, cwd: Path, codex_home: Path | None = None
) -> McpFile:
    """The MCP configuration of ``agent`` (codex or gemini) for ``scope`` (user or
    project); ``codex_home`` is ``$CODEX_HOME`` where it is set."""
    if scope not in SCOPES:
        raise ConfigError(f"{agent} has no {scope!r} scope (choose from {', '.join(SCOPES)})")
    shared = scope == "project"
    if agent == "codex":
        base = cwd / ".codex" if shared else (codex_home or home / ".codex")
        root = cwd if shared else (codex_home or home)
        return McpFile(agent, base / "config.toml", "toml", shared, root)
    if agent == "gemini":
        base = cwd / ".gemini" if shared else home / ".gemini"
        return McpFile(agent, base / "settings.json", "json", shared, cwd if shared else home)
    raise ConfigError(f"unknown agent {agent!r} (choose from {', '.join(AGENTS)})")


def stdio_entry(command: str, args: list[str]) -> dict[str, Any]:
    """The entry that starts `vaultmem … mcp` over stdio (the same keys for both agents)."""
    return {"command": command, "args": args}


def http_entry(agent: str, url: str) -> dict[str, Any]:
    """The entry for a running server's ``/mcp``, its token read from
    ``$VAULTMEM_SERVE_TOKEN`` by the agent."""
    if agent == "codex":
        return {"url": url, "bearer_token_env_var": TOKEN_VARIABLE}
    return {"httpUrl": url, "headers": {"Authorization": f"Bearer ${{{TOKEN_VARIABLE}}}"}}


def installed(where: McpFile) -> dict[str, Any] | None:
    """vaultmem's entry in the file (None when there is none); ConfigError when the file
    is not valid TOML/JSON (with comments, for Gemini's)."""
    if where.kind == "toml":
        return installed_mcp(read_toml(where.path)[1], (TABLE,))
    return installed_mcp(read_jsonc(where.path)[1], SERVERS)


def plan_install(where: McpFile, entry: dict[str, Any]) -> Change:
    """The change that sets vaultmem's entry to ``entry`` (everything else kept)."""
    refuse_links(where.path, where.root)
    if where.kind == "json":
        text, data = read_jsonc(where.path)
        if text is not None and not _strict_json(text):
            edit = lambda t: jsonc.set_member(t, SERVERS, MCP_NAME, entry)  # noqa: E731
            return _jsonc_change(where, text, edit, with_mcp(data, SERVERS, entry))
        change = lambda s: with_mcp(s, SERVERS, entry)  # noqa: E731
        return plan(where.path, change, read=read_json, root=where.root)
    before, data = read_toml(where.path)
    after = with_table(before or "", data, entry)
    return Change(where.path, before, after, kind="toml", root=where.root)


def plan_uninstall(where: McpFile) -> Change:
    """The change that removes vaultmem's entry (everything else kept)."""
    refuse_links(where.path, where.root)
    if where.kind == "json":
        text, data = read_jsonc(where.path)
        if text is not None and not _strict_json(text):
            edit = lambda t: jsonc.remove_member(t, SERVERS, MCP_NAME)  # noqa: E731
            return _jsonc_change(where, text, edit, without_mcp(data, SERVERS))
        return plan(where.path, lambda s: without_mcp(s, SERVERS), read=read_json, root=where.root)
    before, data = read_toml(where.path)
    after = without_table(before, data) if before is not None else ""
    return Change(where.path, before, after, kind="toml", root=where.root)


# --------------------------------------------------------------------------- JSONC


def read_jsonc(path: Path) -> tuple[str | None, dict[str, Any]]:
    """The file's text (None when missing) and its object, read as JSON with comments and
    trailing commas (Gemini CLI's settings.json); ConfigError when it is not one."""
    return read_object(path, "jsonc")


def _strict_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return not text.strip()
    return True


def _jsonc_change(
    where: McpFile, before: str, edit: Callable[[str], str], expected: dict[str, Any]
) -> Change:
    """The change of a commented settings.json, edited in place by ``edit`` (every
    comment kept), once the result reads back as ``expected``; ConfigError otherwise."""
    after = ""
    try:
        after = edit(before)
        same = jsonc.loads(after) == expected
    except jsonc.JsoncError:
        same = False
    if not same:
        raise ConfigError(
            f"cannot edit {'.'.join(SERVERS)}.{MCP_NAME} of {where.path} safely; nothing was "
            "written. Edit it by hand"
        )
    return Change(where.path, before, after, kind="jsonc", root=where.root)


# --------------------------------------------------------------------------- TOML


def read_toml(path: Path) -> tuple[str | None, dict[str, Any]]:
    """The file's text (None when missing) and its value; ConfigError when it is not
    valid TOML or its ``mcp_servers`` is not a table (nothing is written then)."""
    text, data = read_object(path, "toml")
    if not isinstance(data.get(TABLE, {}), dict):
        raise ConfigError(f"{path}: {TABLE} is not a table; nothing was written")
    return text, data


def toml_value(value: Any) -> str:
    """``value`` (a string, number, boolean, list or table of them) as TOML; JSON's string
    escapes are all TOML's too."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return json.dumps(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    if isinstance(value, dict):
        pairs = (f"{json.dumps(str(k))} = {toml_value(v)}" for k, v in value.items())
        return "{ " + ", ".join(pairs) + " }" if value else "{}"
    raise ConfigError(f"cannot write {type(value).__name__} as TOML")


def toml_table(entry: dict[str, Any]) -> str:
    """vaultmem's table: ``[mcp_servers.vaultmem]`` and one ``key = value`` line a key."""
    lines = [f"[{TABLE}.{MCP_NAME}]"]
    lines += [f"{key} = {toml_value(value)}" for key, value in entry.items()]
    return "\n".join(lines) + "\n"


def _spans(lines: list[str]) -> list[tuple[int, int]]:
    """Where vaultmem's tables lie: from each of their headers to the last key line
    before the next header (blank lines and comments there belong to what follows)."""
    spans = []
    for start, line in enumerate(lines):
        if not _OURS.match(line):
            continue
        end = start + 1
        while end < len(lines) and not _HEADER.match(lines[end]):
            end += 1
        while end > start + 1 and (not lines[end - 1].strip() or _comment(lines[end - 1])):
            end -= 1
        spans.append((start, end))
    return spans


def _comment(line: str) -> bool:
    return line.lstrip().startswith("#")


def _without(lines: list[str], spans: list[tuple[int, int]]) -> list[str]:
    """``lines`` without the spans, and without the blank line that set each one off when
    one is left on both sides (the one an install added)."""
    kept = list(lines)
    for start, end in reversed(spans):
        after = kept[end:]
        before = kept[:start]
        if before and not before[-1].strip() and (not after or not after[0].strip()):
            before = before[:-1]
        kept = before + after
    return kept


def _checked(path_text: str, after: str, expected: dict[str, Any]) -> str:
    """``after``, once it parses to ``expected`` (an empty ``mcp_servers`` counts as
    none); ConfigError otherwise, with the table to add by hand."""
    try:
        value = tomllib.loads(after)
    except tomllib.TOMLDecodeError:
        value = None
    if value is not None and _normal(value) == _normal(expected):
        return after
    raise ConfigError(
        f"cannot edit {TABLE}.{MCP_NAME} safely here (it is written inline or with dotted "
        f"keys); nothing was written. Edit it by hand:\n{path_text}"
    )


def _normal(value: dict[str, Any]) -> dict[str, Any]:
    if value.get(TABLE) == {}:
        return {k: v for k, v in value.items() if k != TABLE}
    return value


def with_table(text: str, data: dict[str, Any], entry: dict[str, Any]) -> str:
    """``text`` with vaultmem's table set to ``entry``: in place of the old one, else
    appended after a blank line; every other byte as it was."""
    block = toml_table(entry)
    lines = text.splitlines(keepends=True)
    spans = _spans(lines)
    if spans:
        # The later tables (a stray [mcp_servers.vaultmem.env]) go; the first is replaced
        # where it stands, its indices untouched by removals after it.
        start, end = spans[0]
        kept = _without(lines, spans[1:])
        after = "".join([*kept[:start], block, *kept[end:]])
    else:
        lead = "" if not text else ("\n" if text.endswith("\n") else "\n\n")
        after = text + lead + block
    expected = copy.deepcopy(data)
    expected.setdefault(TABLE, {})[MCP_NAME] = entry
    return _checked(block, after, expected)


def without_table(text: str, data: dict[str, Any]) -> str:
    """``text`` without vaultmem's tables; every other byte as it was."""
    lines = text.splitlines(keepends=True)
    after = "".join(_without(lines, _spans(lines)))
    expected = copy.deepcopy(data)
    if isinstance(expected.get(TABLE), dict):
        expected[TABLE].pop(MCP_NAME, None)
    return _checked(f"remove [{TABLE}.{MCP_NAME}]", after, expected)
