"""vaultmem's handlers in Claude Code's settings files, and its MCP server in Claude Code's
MCP configuration: merge, remove, inspect.

A settings file (``~/.claude/settings.json``, ``.claude/settings.json``,
``.claude/settings.local.json``) holds much more than hooks: permissions, env, other
tools' hooks, keys vaultmem has never heard of. Everything here works on the parsed JSON
value and changes only vaultmem's own handlers, recognised by their command:
a ``vaultmem`` executable (or ``python -m vaultmem``) running ``hook EVENT``.

The MCP server is one entry named ``vaultmem`` under ``mcpServers`` in Claude Code's own
files (:func:`mcp_location`): ``~/.claude.json`` for the user scope, the same file's
``projects[FOLDER]`` for the local scope, ``.mcp.json`` (shared through git) for the
project scope. Over stdio Claude Code starts `vaultmem mcp` itself; over HTTP the entry
carries ``Authorization: Bearer`` for the vault's token, written out only into a file
that is this user's alone; ``.mcp.json`` gets ``${VAULTMEM_SERVE_TOKEN}`` instead, which
Claude Code expands from its environment.

The project scope is shared with the team, so what it names must hold on every machine:
`vaultmem` from PATH, found when the hook runs, and the vault relative to the project
(``$CLAUDE_PROJECT_DIR``, which Claude Code sets for hooks and expands in
``.mcp.json``; both run in the project folder where it is missing). Where vaultmem is
not installed the SessionStart hook says so once, in the agent's context, and every hook
exits 0. The user and local scopes are this user's own: absolute paths are right there.

:class:`Change`, :func:`plan` and :func:`apply` are the one way vaultmem changes an
agent's configuration file (a diff for ``--dry-run``, a one-time backup, an atomic
write), for Claude Code here and for Codex CLI and Gemini CLI in
:mod:`vaultmem.agent.agent_configs`.
"""

from __future__ import annotations

import copy
import difflib
import json
import os
import re
import shlex
import shutil
import stat
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vaultmem.agent import jsonc
from vaultmem.agent.hooks import EVENT_NAMES, EVENTS, context_output
from vaultmem.atomic import atomic_write
from vaultmem.errors import ConfigError

SCOPES = ("user", "project", "local")
BACKUP_SUFFIX = ".vaultmem-backup"
MCP_NAME = "vaultmem"
MCP_TRANSPORTS = ("stdio", "http")
# What a shared .mcp.json says instead of the token: Claude Code expands it at start.
TOKEN_REFERENCE = "${VAULTMEM_SERVE_TOKEN}"
# The project folder as Claude Code gives it to hooks and expands it in .mcp.json. Hooks
# run in the project folder, so $PWD stands in where a version does not set it (absolute:
# `hook` resolves a relative vault against the event's cwd, which may be a subfolder);
# .mcp.json expands no $PWD, and Claude Code starts its servers in the project, so ".".
HOOK_PROJECT_DIR = "${CLAUDE_PROJECT_DIR:-$PWD}"
PROJECT_DIR = "${CLAUDE_PROJECT_DIR:-.}"
# What a shared SessionStart hook says, in the agent's context, where vaultmem is missing.
NOT_INSTALLED = (
    "vaultmem is not installed on this machine (no `vaultmem` on PATH), so the vault "
    "memory hooks of this project do nothing: install it (`pip install .` in a clone of "
    "vaultmem) and start a new session."
)


def scope_root(scope: str, *, home: Path, cwd: Path) -> Path:
    """The folder a scope's files may not lead out of: the home folder for the user's
    own, the project (the working folder) for the project and local ones."""
    return home if scope == "user" else cwd


def settings_path(scope: str, *, home: Path, cwd: Path) -> Path:
    """The settings file of a scope: user, project (shared) or local (not committed)."""
    if scope == "user":
        return home / ".claude" / "settings.json"
    if scope == "project":
        return cwd / ".claude" / "settings.json"
    if scope == "local":
        return cwd / ".claude" / "settings.local.json"
    raise ConfigError(f"unknown scope {scope!r} (choose from {', '.join(SCOPES)})")


def hook_command(launcher: list[str], vault: Path, event: str) -> str:
    """The shell command Claude Code runs for ``event``, every part quoted."""
    return shlex.join([*launcher, "--vault", str(vault), "hook", event])


def project_vault(vault: Path, project: Path) -> str | None:
    """The vault relative to the project, as the same path on every clone: ``.``, a folder
    inside it, or the folder it lies in (None when neither holds the other)."""
    vault, project = vault.resolve(), project.resolve()
    if vault == project or vault.is_relative_to(project) or project.is_relative_to(vault):
        return os.path.relpath(vault, project)
    return None


def _project_path(relative: str) -> str:
    """``${CLAUDE_PROJECT_DIR:-$PWD}/relative`` as a shell word (the variable expanded,
    the rest quoted)."""
    where = f'"{HOOK_PROJECT_DIR}"'
    return where if relative == "." else f"{where}/{shlex.quote(relative)}"


def portable_hook_command(relative: str | None, event: str) -> str:
    """The command a shared settings file runs for ``event``: `vaultmem` from PATH with
    the vault at ``relative`` to the project (None: no ``--vault``, so ``$VAULTMEM_VAULT``
    or the vault found from the project), or, where vaultmem is missing, exit 0, after
    one line of context from SessionStart (the other events say nothing: once a session).

    Example: ``command -v vaultmem >/dev/null 2>&1 || exit 0; exec vaultmem --vault
    "${CLAUDE_PROJECT_DIR:-$PWD}"/notes hook prompt``
    """
    vault = ["--vault", _project_path(relative)] if relative is not None else []
    missing = "exit 0"
    if event == "session-start":
        notice = shlex.quote(context_output("SessionStart", NOT_INSTALLED))
        missing = f"{{ printf '%s\\n' {notice}; exit 0; }}"
    run = " ".join(["exec", "vaultmem", *vault, "hook", event])
    return f"command -v vaultmem >/dev/null 2>&1 || {missing}; {run}"


def _vaultmem_words(command: str) -> list[str] | None:
    """The words of the vaultmem command line in ``command``: all of it, or what a
    portable command runs after ``exec`` (None when it runs no vaultmem)."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    if vaultmem_args(words) is not None:
        return words
    if "exec" in words:
        tail = words[len(words) - words[::-1].index("exec") :]
        if vaultmem_args(tail) is not None:
            return tail
    return None


def vaultmem_args(words: list[str]) -> list[str] | None:
    """The arguments of a command line that runs vaultmem (a ``vaultmem`` executable, or
    ``python -m vaultmem``), else None."""
    if words and Path(words[0]).name == "vaultmem":
        return words[1:]
    if words[1:3] == ["-m", "vaultmem"]:
        return words[3:]
    return None


def vaultmem_event(command: object) -> str | None:
    """The ``hook EVENT`` a command runs when it is vaultmem's, else None."""
    if not isinstance(command, str):
        return None
    words = _vaultmem_words(command)
    rest = vaultmem_args(words) if words is not None else None
    if rest is None:
        return None
    for i, word in enumerate(rest[:-1]):
        if word == "hook" and rest[i + 1] in EVENT_NAMES:
            return rest[i + 1]
    return None


def read_text(path: Path) -> str | None:
    """A configuration file's text, line ends as they are (None when missing);
    ConfigError when unreadable."""
    try:
        return path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from None


def read_json(path: Path) -> tuple[str | None, dict[str, Any]]:
    """The file's text (None when missing) and its JSON object; ConfigError when it is
    not one (nothing is written then)."""
    return read_object(path, "json")


def read_object(path: Path, kind: str) -> tuple[str | None, dict[str, Any]]:
    """The file's text (None when missing) and its value as ``kind`` (:data:`PARSERS`),
    which must be an object; ConfigError when it is not (nothing is written then)."""
    text = read_text(path)
    if text is None:
        return None, {}
    try:
        data = PARSERS[kind](text)
    except ValueError as exc:  # JSONDecodeError, JsoncError and TOMLDecodeError alike
        name = "TOML" if kind == "toml" else "JSON"
        raise ConfigError(
            f"{path}: not valid {name} ({exc}); fix it, nothing was written"
        ) from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: not a JSON object; nothing was written")
    return text, data


def read_settings(path: Path) -> tuple[str | None, dict[str, Any]]:
    """The file's text (None when missing) and its JSON object; ConfigError when it is
    not a JSON object or its ``hooks`` are not in Claude Code's shape."""
    text, data = read_json(path)
    hooks = data.get("hooks", {})
    if not isinstance(hooks, dict) or not all(isinstance(v, list) for v in hooks.values()):
        raise ConfigError(f'{path}: "hooks" is not an object of lists; nothing was written')
    return text, data


def render(settings: dict[str, Any]) -> str:
    """The settings as Claude Code writes them: 2-space JSON, key order kept."""
    return json.dumps(settings, indent=2, ensure_ascii=False) + "\n"


def _handlers(settings: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any], dict[str, Any]]]:
    """Every (event, matcher group, handler) in the settings."""
    for event, groups in settings.get("hooks", {}).items():
        for group in groups:
            if isinstance(group, dict) and isinstance(group.get("hooks"), list):
                for handler in group["hooks"]:
                    if isinstance(handler, dict):
                        yield event, group, handler


def installed(settings: dict[str, Any]) -> dict[str, str]:
    """vaultmem's handlers in the settings: Claude Code event -> command."""
    return {
        event: handler["command"]
        for event, _, handler in _handlers(settings)
        if vaultmem_event(handler.get("command"))
    }


def without_vaultmem(settings: dict[str, Any]) -> dict[str, Any]:
    """A copy without vaultmem's handlers, dropping the groups, events and ``hooks``
    object that only they filled; everything else is left as it was."""
    result = copy.deepcopy(settings)
    hooks = result.get("hooks")
    if not isinstance(hooks, dict):
        return result
    for event in list(hooks):
        kept = []
        for group in hooks[event]:
            if isinstance(group, dict) and isinstance(group.get("hooks"), list):
                ours = [h for h in group["hooks"] if _is_ours(h)]
                if ours:
                    group["hooks"] = [h for h in group["hooks"] if not _is_ours(h)]
                    if not group["hooks"]:
                        continue
            kept.append(group)
        if kept or not hooks[event]:
            hooks[event] = kept
        else:
            del hooks[event]
    if not hooks and "hooks" in settings and settings["hooks"]:
        del result["hooks"]
    return result


def _is_ours(handler: object) -> bool:
    return isinstance(handler, dict) and vaultmem_event(handler.get("command")) is not None


def with_vaultmem(settings: dict[str, Any], command: Callable[[str], str]) -> dict[str, Any]:
    """A copy with vaultmem's handlers (``command(event)`` gives each one's command line).

    A handler already there is updated in place, so re-installing changes nothing and a
    new vault path or launcher replaces the old one; duplicates of it are dropped. A new
    handler gets a group of its own, with the event's matcher (PreToolUse: the tools).
    """
    result = copy.deepcopy(settings)
    hooks = result.setdefault("hooks", {})
    for event in (e for e in EVENTS if e.installed):
        wanted = {"type": "command", "command": command(event.name), "timeout": event.timeout}
        groups = hooks.setdefault(event.claude_event, [])
        found = False
        emptied = []
        for group in groups:
            if not (isinstance(group, dict) and isinstance(group.get("hooks"), list)):
                continue
            kept = []
            for handler in group["hooks"]:
                if _is_ours(handler):
                    if found:
                        continue  # a duplicate of ours
                    handler.update(wanted)
                    found = True
                kept.append(handler)
            if group["hooks"] and not kept:
                emptied.append(group)
            group["hooks"] = kept
        hooks[event.claude_event] = [g for g in groups if not any(g is e for e in emptied)]
        if not found:
            hooks[event.claude_event].append({"matcher": event.matcher, "hooks": [wanted]})
    return result


# How each kind of configuration file is read back: the value a change is judged by.
PARSERS: dict[str, Callable[[str], Any]] = {
    "json": lambda text: json.loads(text) if text.strip() else {},
    "jsonc": jsonc.loads,
    "toml": tomllib.loads,
}


@dataclass(frozen=True)
class Change:
    """A planned change to one configuration file; ``before`` is None for a new file.

    ``kind``: ``json``, ``jsonc`` or ``toml`` (:data:`PARSERS`); ``mode``: the permission
    bits a new file gets (None: the umask's); ``hidden``: text (a token) :meth:`diff`
    shows as ``***``; ``root``: the folder of the file's scope (the project, or the home
    folder), which the file and its backup may not lead out of through a symlink.

    A change that would write refuses, in one line (ConfigError) when it is planned, so
    that nothing of a batch is written: a file or folder on the way that is a symlink out
    of ``root``, and a read-only file (:func:`write_refusal`).
    """

    path: Path
    before: str | None
    after: str
    mode: int | None = None
    hidden: tuple[str, ...] = ()
    kind: str = "json"
    root: Path | None = None

    def __post_init__(self) -> None:
        if self.changed:
            refused = write_refusal(self.path, self.root, backup=self.before is not None)
            if refused:
                raise ConfigError(f"{refused}; nothing was written")

    @property
    def changed(self) -> bool:
        """Whether writing would change the file's value (formatting alone is no change)."""
        if self.before is None:
            return True
        parse = PARSERS[self.kind]
        return bool(parse(self.before) != parse(self.after))

    @property
    def text(self) -> str:
        """What is written: ``after`` in the file's own style (:func:`in_style_of`)."""
        return in_style_of(self.before, self.after, PARSERS[self.kind])

    def diff(self) -> str:
        """A unified diff of the file, as ``--dry-run`` shows it ("" when unchanged)."""
        if not self.changed:
            return ""
        old = (self.before or "").splitlines(keepends=True)
        label = str(self.path)
        new = self.text.splitlines(keepends=True)
        text = "".join(difflib.unified_diff(old, new, f"{label} (before)", f"{label} (after)"))
        for secret in self.hidden:
            text = text.replace(secret, "***")
        return text


def plan(
    path: Path,
    transform: Callable[[dict[str, Any]], dict[str, Any]],
    *,
    mode: int | None = None,
    hidden: tuple[str, ...] = (),
    read: Callable[[Path], tuple[str | None, dict[str, Any]]] = read_settings,
    root: Path | None = None,
) -> Change:
    """Read the JSON settings at ``path`` (with ``read``) and what ``transform`` would
    make of them (``root``: the folder of the file's scope, see :class:`Change`)."""
    refuse_links(path, root)
    before, settings = read(path)
    after = render(transform(settings))
    return Change(path, before, after, mode=mode, hidden=hidden, root=root)


def refuse_links(path: Path, root: Path | None) -> None:
    """ConfigError when ``path`` (or its backup) leads out of ``root`` through a symlink:
    checked before the file is even read."""
    refused = _link_out(path, root, backup=True)
    if refused:
        raise ConfigError(f"{refused}; nothing was written")


def _link_out(path: Path, root: Path | None, *, backup: bool) -> str | None:
    if root is None:
        return None
    inside = os.path.realpath(root)
    for target in [path, path.with_name(path.name + BACKUP_SUFFIX)] if backup else [path]:
        real = os.path.realpath(target)
        if not Path(real).is_relative_to(inside):
            return f"{target} leads out of {root} (to {real}) through a symlink"
    return None


def write_refusal(path: Path, root: Path | None, *, backup: bool = True) -> str | None:
    """Why vaultmem may not write the configuration file ``path`` of the scope ``root``
    (None: it may): the file, its backup (``backup``) or a folder on the way is a
    symlink out of ``root``; the file is read-only (no write bit for its owner: a file
    someone made read-only is not replaced, even by a user who could)."""
    linked = _link_out(path, root, backup=backup)
    if linked:
        return linked
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"{path}: {exc.strerror}"
    if not info.st_mode & stat.S_IWUSR:
        return f"{path} is read-only (chmod u+w it to let vaultmem change it)"
    return None


def in_style_of(before: str | None, after: str, parse: Callable[[str], Any]) -> str:
    """``after`` written as ``before`` was: CRLF line ends when every line of ``before``
    had them, and no final line end when ``before`` had none; ``after`` itself when that
    would change its value."""
    if not before or not after:
        return after
    styled = after
    if "\r\n" in before and before.count("\n") == before.count("\r\n"):
        styled = re.sub(r"(?<!\r)\n", "\r\n", styled)
    if not before.endswith("\n"):
        styled = styled.removesuffix("\n").removesuffix("\r")
    try:
        same = parse(styled) == parse(after)
    except ValueError:
        same = False
    return styled if same else after


def apply(change: Change) -> Path | None:
    """Write a change atomically, after a one-time backup of the file as it was before
    vaultmem first touched it (with the file's own permission bits: ``~/.claude.json``
    is private); returns the backup's path (None when there is none)."""
    if not change.changed:
        return None
    refused = write_refusal(change.path, change.root, backup=change.before is not None)
    if refused:  # changed since it was planned
        raise ConfigError(f"{refused}; nothing was written")
    backup: Path | None = None
    if change.before is not None:
        backup = change.path.with_name(change.path.name + BACKUP_SUFFIX)
        if not os.path.lexists(backup):
            bits = stat.S_IMODE(change.path.stat().st_mode)
            atomic_write(backup, change.before.encode("utf-8"), mode=bits)
    change.path.parent.mkdir(parents=True, exist_ok=True)
    mode = None if change.path.exists() else change.mode
    atomic_write(change.path, change.text.encode("utf-8"), mode=mode)
    return backup


# --------------------------------------------------------------------------- MCP servers


@dataclass(frozen=True)
class McpLocation:
    """Where a scope keeps its MCP servers: the file, the keys down to the
    ``mcpServers`` object, and whether the file is shared (in git)."""

    path: Path
    keys: tuple[str, ...]
    shared: bool
    root: Path | None = None  # the folder of its scope (see Change)


def mcp_location(scope: str, *, home: Path, cwd: Path) -> McpLocation:
    """Claude Code's MCP configuration for a scope: user (``~/.claude.json``), local (that
    file, under ``projects`` for the working folder) or project (``.mcp.json``)."""
    if scope == "user":
        return McpLocation(home / ".claude.json", ("mcpServers",), False, home)
    if scope == "local":
        keys = ("projects", str(cwd), "mcpServers")
        return McpLocation(home / ".claude.json", keys, False, home)
    if scope == "project":
        return McpLocation(cwd / ".mcp.json", ("mcpServers",), True, cwd)
    raise ConfigError(f"unknown scope {scope!r} (choose from {', '.join(SCOPES)})")


def stdio_server(launcher: list[str], vault: Path | str | None) -> dict[str, Any]:
    """The entry for `vaultmem --vault VAULT mcp`, which Claude Code starts itself (no
    ``--vault`` when ``vault`` is None)."""
    named = ["--vault", str(vault)] if vault is not None else []
    args = [*launcher[1:], *named, "mcp"]
    return {"type": "stdio", "command": launcher[0], "args": args, "env": {}}


def portable_vault(relative: str | None) -> str | None:
    """The vault of a shared ``.mcp.json``, under ``${CLAUDE_PROJECT_DIR:-.}``."""
    if relative is None:
        return None
    return PROJECT_DIR if relative == "." else f"{PROJECT_DIR}/{relative}"


def http_server(url: str, token: str) -> dict[str, Any]:
    """The entry for a running server's MCP endpoint, with its bearer token (or the
    ``${VAR}`` reference Claude Code expands)."""
    return {"type": "http", "url": url, "headers": {"Authorization": f"Bearer {token}"}}


def _servers(settings: dict[str, Any], keys: tuple[str, ...]) -> Any:
    here: Any = settings
    for key in keys:
        here = here.get(key) if isinstance(here, dict) else None
    return here


def installed_mcp(settings: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any] | None:
    """vaultmem's MCP entry at ``keys`` (None when there is none)."""
    servers = _servers(settings, keys)
    entry = servers.get(MCP_NAME) if isinstance(servers, dict) else None
    return entry if isinstance(entry, dict) else None


def with_mcp(
    settings: dict[str, Any], keys: tuple[str, ...], entry: dict[str, Any]
) -> dict[str, Any]:
    """A copy with vaultmem's MCP entry at ``keys`` set to ``entry`` (replacing an older
    one; every other server and key kept)."""
    result = copy.deepcopy(settings)
    here = result
    for key in keys:
        child = here.get(key)
        if not isinstance(child, dict):
            if child is not None:
                raise ConfigError(
                    f"{'.'.join(keys)}: {key!r} is not a JSON object; nothing written"
                )
            child = here[key] = {}
        here = child
    here[MCP_NAME] = entry
    return result


def without_mcp(settings: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    """A copy without vaultmem's MCP entry at ``keys`` (everything else kept)."""
    result = copy.deepcopy(settings)
    servers = _servers(result, keys)
    if isinstance(servers, dict):
        servers.pop(MCP_NAME, None)
    return result


def private_problem(path: Path) -> str | None:
    """Why ``path`` may not hold a token: another user owns it or may read it (None when
    it is this user's alone, or does not exist yet: it is then made 0600)."""
    try:
        info = path.stat()
    except FileNotFoundError:
        return None
    if info.st_uid != os.getuid():
        return f"{path} is owned by uid {info.st_uid}"
    if info.st_mode & 0o077:
        return f"{path} is readable by other users (chmod 600 it first)"
    return None


def hook_vault(command: str, project: Path | None = None) -> str | None:
    """The vault a hook command names with ``--vault``/``-V`` (None: found from the cwd);
    a portable command's project folder is ``project`` (else the cwd)."""
    words = _vaultmem_words(command) or shlex.split(command)
    named = (words[i + 1] for i, w in enumerate(words[:-1]) if w in ("--vault", "-V"))
    vault = next(named, None)
    for prefix in (HOOK_PROJECT_DIR, PROJECT_DIR):
        if vault is not None and vault.startswith(prefix):
            base = project if project is not None else Path.cwd()
            return str((base / vault[len(prefix) :].lstrip("/")).resolve())
    return vault


def hook_problems(command: str, project: Path | None = None) -> list[str]:
    """Why a hook command cannot run: its executable or its vault is missing ([] if fine)."""
    executable = (_vaultmem_words(command) or shlex.split(command))[0]
    why = [] if shutil.which(executable) else [f"{executable} not found"]
    vault = hook_vault(command, project)
    if vault is not None and not Path(os.path.expanduser(vault)).is_absolute():
        # Looked for from each event's cwd: a different folder in every project.
        why.append(
            f"vault {vault!r} is relative: each event looks for it from its own project; "
            "`vaultmem --vault PATH hooks install` writes the absolute path"
        )
    elif vault is not None and not Path(vault).is_dir():
        why.append(f"vault {vault} is missing")
    return why
