"""Claude Code's hook protocol: what each event gets back, and the detached capture job.

Claude Code runs a hook command with the event as one JSON object on stdin
(``session_id``, ``transcript_path``, ``cwd``, ``hook_event_name`` and, per event,
``prompt``, ``source``, ``trigger``, ``custom_instructions``, ``reason``,
``stop_hook_active``, and for PreToolUse ``tool_name``, ``tool_input`` and
``tool_use_id``). On exit 0 it parses stdout as JSON; ``additionalContext`` under
``hookSpecificOutput`` is added to the model's context, and a PreToolUse answer's
``permissionDecision`` (``deny``, ``ask``) with ``permissionDecisionReason`` decides the
tool call (vaultmem never answers ``allow``: that would skip the user's permission
prompt). A hook that fails must never
break the agent, so the CLI turns every failure into exit 0, no output and one log line.

The protocol only: the front end that answers an event through the API is the CLI's
``hook`` command (:mod:`vaultmem.cli.hook_cmds`). Only the standard library is imported
here: ``hook prompt`` runs on every prompt.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from vaultmem.errors import VaultmemError
from vaultmem.vault import make_cache

LOG_NAME = "hooks.log"
JOB_LOG_NAME = "hooks-jobs.log"
SESSION_BRIEF_BUDGET = 2000
# A server the SessionStart hook started stops after this long without a request.
SERVER_IDLE = "2h"
# Under the user's cache folder: one empty file per session told that the hooks have no
# vault (removed after NOTICE_TTL_S: sessions end without telling).
NOTICE_DIR = "hook-notices"
NOTICE_TTL_S = 7 * 24 * 3600


@dataclass(frozen=True)
class HookEvent:
    """One hook vaultmem answers: its CLI name, Claude Code's event name, and the timeout
    (seconds) written into settings.json. ``installed`` is false for events vaultmem
    answers when wired by hand but does not install; ``matcher`` is the matcher of the
    group `hooks install` adds (the tools a PreToolUse hook runs for)."""

    name: str
    claude_event: str
    timeout: int
    installed: bool = True
    matcher: str = ""


# The tools `hook pre-tool` is installed for (a regular expression over tool names).
PRE_TOOL_MATCHER = "Edit|Write|MultiEdit|Bash"

# A Stop hook that prints keeps the agent running, and vaultmem has nothing to do there,
# so `hook stop` is a safe no-op that `hooks install` does not wire.
EVENTS: tuple[HookEvent, ...] = (
    HookEvent("prompt", "UserPromptSubmit", 8),
    HookEvent("session-start", "SessionStart", 10),
    HookEvent("pre-compact", "PreCompact", 10),
    HookEvent("session-end", "SessionEnd", 5),
    # Before the agent edits a file or runs a command: the vault's rules for it.
    HookEvent("pre-tool", "PreToolUse", 5, matcher=PRE_TOOL_MATCHER),
    HookEvent("stop", "Stop", 5, installed=False),
)
EVENT_NAMES = tuple(event.name for event in EVENTS)


class HookInputError(VaultmemError):
    """The event on stdin is not a JSON object of the expected shape."""


@dataclass(frozen=True)
class HookPayload:
    """The fields of a Claude Code hook event that vaultmem reads."""

    hook_event_name: str
    session_id: str | None = None
    transcript_path: Path | None = None
    cwd: Path | None = None
    prompt: str = ""
    source: str | None = None
    tool_name: str = ""
    tool_input: Mapping[str, Any] = field(default_factory=dict)


def parse_payload(raw: bytes) -> HookPayload:
    """The event JSON from stdin; HookInputError when it is not an object of strings."""
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise HookInputError(f"stdin is not a JSON event: {exc}") from None
    if not isinstance(data, dict):
        raise HookInputError(f"stdin is a JSON {type(data).__name__}, not an object")
    transcript = _text(data, "transcript_path")
    cwd = _text(data, "cwd")
    tool_input = data.get("tool_input")
    if tool_input is not None and not isinstance(tool_input, dict):
        raise HookInputError(f"tool_input is a JSON {type(tool_input).__name__}, not an object")
    return HookPayload(
        hook_event_name=_text(data, "hook_event_name") or "",
        session_id=_text(data, "session_id"),
        transcript_path=Path(transcript).expanduser() if transcript else None,
        cwd=Path(cwd).expanduser() if cwd else None,
        prompt=_text(data, "prompt") or "",
        source=_text(data, "source"),
        tool_name=_text(data, "tool_name") or "",
        tool_input=tool_input or {},
    )


def _text(data: Mapping[str, Any], key: str) -> str | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise HookInputError(f"{key} is a JSON {type(value).__name__}, not a string")
    return value


def context_output(claude_event: str, context: str) -> str:
    """What Claude Code reads on stdout: ``hookSpecificOutput.additionalContext``, or
    nothing at all when there is no context (an empty object would still be parsed)."""
    if not context.strip():
        return ""
    output = {"hookSpecificOutput": {"hookEventName": claude_event, "additionalContext": context}}
    return json.dumps(output, ensure_ascii=False)


def pre_tool_output(context: str, decision: str = "", reason: str = "") -> str:
    """A PreToolUse answer: the rules as ``additionalContext``, and a ``deny`` or ``ask``
    ``permissionDecision`` with its reason when a rule enforces one; nothing at all for
    neither (the tool call then goes on as if there were no hook)."""
    specific: dict[str, str] = {"hookEventName": "PreToolUse"}
    if decision:
        specific |= {"permissionDecision": decision, "permissionDecisionReason": reason}
    if context.strip():
        specific["additionalContext"] = context
    if len(specific) == 1:
        return ""
    return json.dumps({"hookSpecificOutput": specific}, ensure_ascii=False)


def no_vault_notice(reason: str, where: Path) -> str:
    """What the agent is told, once a session, when the hooks cannot open their vault
    (``where``: the folder a relative or missing ``--vault`` was looked for from)."""
    return (
        f"vaultmem's memory hooks cannot open their vault, so they add nothing to this "
        f"session: {reason} (looked for from {where}). `vaultmem hooks status` checks "
        "the hook commands."
    )


def first_notice(cache: Path, session: str) -> bool:
    """Whether ``session`` has not been given the notice yet, recording that it now is.

    One empty file per session under ``cache``/:data:`NOTICE_DIR`, created exclusively
    (two hooks of a session racing: one of them says it); files older than
    :data:`NOTICE_TTL_S` go.
    """
    folder = make_cache(cache) / NOTICE_DIR
    folder.mkdir(mode=0o700, exist_ok=True)
    name = hashlib.sha256(session.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
    try:
        os.close(os.open(folder / name, flags, 0o600))
    except FileExistsError:
        return False
    cutoff = time.time() - NOTICE_TTL_S
    for old in folder.iterdir():
        try:
            if old.lstat().st_mtime < cutoff:
                old.unlink()
        except OSError:
            continue
    return True


def capture_commands(
    python: str, root_args: list[str], transcript: Path, session: str | None = None
) -> list[list[str]]:
    """The commands the detached capture job runs in turn: ``feedback`` (with the
    session's id), ``extract``, then ``handoff`` (``root_args``: the global options naming
    the vault and cache)."""
    base = [python, "-m", "vaultmem", *root_args]
    first = [[*base, "feedback", str(transcript), "--session", session]] if session else []
    return [*first, [*base, "extract", str(transcript)], [*base, "handoff", str(transcript)]]


def server_command(python: str, root_args: list[str]) -> list[str]:
    """The `serve` a SessionStart hook starts, in a detached job: ``--background`` (its
    log in ``<cache>/server.log``; the job waits for it, the hook does not), any free port
    (several vaults may each have one), stopping after :data:`SERVER_IDLE` without a
    request."""
    serve = ["serve", "--background", "--port", "0", "--idle-timeout", SERVER_IDLE]
    return [python, "-m", "vaultmem", *root_args, *serve]


def server_running(cache_dir: Path) -> bool:
    """Whether some server holds the vault's server lock (a cheap flock probe)."""
    from vaultmem.client import LOCK_NAME, flock_held

    try:
        return flock_held(str(cache_dir / LOCK_NAME))
    except OSError:
        return False


def start_job(commands: list[list[str]], job_log: Path, python: str) -> int:
    """Start ``commands`` one after another in a detached process and return its pid.

    The job gets its own session (Claude Code ending, or killing the hook's process
    group at its timeout, does not end it), no stdin, and the job log for its output;
    nobody waits for it, so the hook returns at once. ``;`` between the commands:
    a handoff is still worth writing when extraction failed. Their output reaches the
    log through ``python -m vaultmem.agent.redact`` (``python``: the interpreter), so
    no line a command prints, an error message or a traceback, can put a secret there.
    """
    jobs = "; ".join(shlex.join(command) for command in commands)
    script = f"{{ {jobs}; }} 2>&1 | {shlex.join([python, '-m', 'vaultmem.agent.redact'])}"
    make_cache(job_log.parent)
    fd = os.open(job_log, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "ab") as log:
        job = subprocess.Popen(
            ["/bin/sh", "-c", script],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
        )
    return job.pid


def log_line(log: Path, when: datetime, event: str, message: str) -> None:
    """Append one line to the hook log (the message's newlines flattened, and redacted:
    an error may quote a prompt, a path may hold a token)."""
    from vaultmem.agent.redact import redact

    flat = " ".join(redact(message).split())
    stamp = when.strftime("%Y-%m-%dT%H:%M:%SZ")
    make_cache(log.parent)
    # Not through a link someone planted in the cache; private like the rest of it.
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        # One write of one line: appends from concurrent hooks do not interleave.
        os.write(fd, f"{stamp} hook {event}: {flat}\n".encode())
    finally:
        os.close(fd)
