"""Claude Code integration: `hook EVENT` (its hook protocol), `hooks install|uninstall|status`."""

from __future__ import annotations

import contextlib
import os
import shlex
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import typer

from vaultmem.cli import app, clock, launcher, load_config, open_vault, root_args
from vaultmem.cli.options import profile_option
from vaultmem.errors import ConfigError

DRY_RUN = typer.Option(
    False, "--dry-run", help="Print the diff of each file it would change; write nothing."
)


def _scope(value: str) -> str:
    """Reject a scope no agent has as a usage error (exit 2)."""
    from vaultmem.agent.claude_settings import SCOPES

    if value not in SCOPES:
        raise typer.BadParameter(f"unknown scope {value!r} (choose from {', '.join(SCOPES)})")
    return value


SCOPE = typer.Option(
    "user",
    "--scope",
    callback=_scope,
    help="user: ~/.claude/settings.json; project: .claude/settings.json (shared: vaultmem "
    "from PATH, the vault relative to the project); local: .claude/settings.local.json "
    "(both under the working folder). Codex and Gemini: user or project.",
)
CLAUDE = typer.Option(False, "--claude", help="Claude Code: its hooks (and --mcp).")
CODEX = typer.Option(
    False,
    "--codex",
    help="Codex CLI: vaultmem's MCP server as [mcp_servers.vaultmem] in "
    "$CODEX_HOME/config.toml (~/.codex), or .codex/config.toml for --scope project.",
)
GEMINI = typer.Option(
    False,
    "--gemini",
    help="Gemini CLI: vaultmem's MCP server under mcpServers in ~/.gemini/settings.json, "
    "or .gemini/settings.json for --scope project.",
)
MCP = typer.Option(
    None,
    "--mcp",
    metavar="stdio|http",
    help="Also register vaultmem's MCP server with Claude Code for the scope: stdio (Claude "
    "Code starts `vaultmem mcp`) or http (the running `serve`'s /mcp, with the token). "
    "The transport for --codex and --gemini too (stdio when not given).",
)


@app.command()
def hook(
    ctx: typer.Context,
    event: str = typer.Argument(
        ..., help="prompt, pre-tool, session-start, pre-compact, session-end or stop."
    ),
    profile: str = profile_option(checked=False),
) -> None:
    """Answer one Claude Code hook event, read as JSON on stdin.

    prompt (UserPromptSubmit) prints the notes `surface` finds for the prompt as
    additionalContext, or nothing. pre-tool (PreToolUse) prints the vault's rule notes
    that apply to the file or command of the tool call (each once a session), and denies
    the call only when such a note says `enforce: deny` (its reason: the note).
    session-start (SessionStart) prints a brief of pinned notes, the project's latest
    handoff and recent decisions; after a compaction (source compact), the session's
    state before it, recent decisions, antipatterns and vault context in
    <vault-postcompact> (1,200 tokens). pre-compact first writes that state into the
    vault (a note in handoffs/); pre-compact and session-end start `extract` and
    `handoff` on the transcript in a detached process and return at once; stop prints
    nothing. The vault is --vault, else $VAULTMEM_VAULT, else found upward from the
    event's cwd (a relative --vault too), else default_vault. It never breaks the agent:
    any failure exits 0 with no output and one line in <cache>/hooks.log
    (~/.cache/vaultmem/hooks.log when there is no vault); a vault it cannot open is also
    said once a session in the agent's context (by prompt or session-start). --profile
    (prompt) chooses how much surfacing says. `hooks install --claude` wires it into
    Claude Code.

    Example:
        echo '{"prompt": "how do we pool connections?"}' | vaultmem -V ~/notes hook prompt
    """
    from vaultmem.agent import hooks

    log = _fallback_log()
    now = datetime.now(UTC)
    try:
        now = clock()
        raw = sys.stdin.buffer.read()
        if event == "stop":
            return  # a Stop hook that answers keeps the agent running
        payload, bad_input = None, None
        try:
            payload = hooks.parse_payload(raw)
        except hooks.HookInputError as exc:
            bad_input = exc  # still find the vault first: the line belongs in its log
        cwd = payload.cwd if payload and payload.cwd and payload.cwd.is_dir() else None
        try:
            vault = open_vault(ctx, cwd=cwd)
        except ConfigError as exc:
            _say_no_vault(event, payload, str(exc), cwd or Path.cwd(), log.parent)
            raise
        config = vault.config
        log = config.cache_dir / hooks.LOG_NAME
        if event not in hooks.EVENT_NAMES:
            raise hooks.HookInputError(f"unknown event {event!r}")
        if payload is None:
            raise bad_input or hooks.HookInputError("no event on stdin")
        output = _answer(ctx, event, vault, payload, now, log, profile)
        if output:
            typer.echo(output)
    except Exception as exc:  # noqa: BLE001 - a hook must never break the agent
        with contextlib.suppress(Exception):
            hooks.log_line(log, now, event, f"failed: {type(exc).__name__}: {exc}")


def _say_no_vault(event: str, payload: Any, reason: str, where: Path, cache: Path) -> None:
    """Tell the agent, once a session, that the hooks cannot open their vault: in the
    context of a prompt or session start (the other events add none to it)."""
    from vaultmem.agent import hooks

    claude_event = {"prompt": "UserPromptSubmit", "session-start": "SessionStart"}.get(event)
    if claude_event is None or payload is None:
        return
    session = payload.session_id
    told = False
    if session is not None:
        # Nowhere to remember it (OSError): say it again rather than never.
        with contextlib.suppress(OSError):
            told = not hooks.first_notice(cache, session)
    if not told:
        typer.echo(hooks.context_output(claude_event, hooks.no_vault_notice(reason, where)))


def _answer(
    ctx: typer.Context,
    event: str,
    vault: Any,
    payload: Any,
    now: datetime,
    log: Path,
    profile: str | None = None,
) -> str:
    """The hook's stdout for an event ("" for none), starting the capture job if due."""
    from vaultmem.agent import hooks

    config = vault.config
    if event == "prompt":
        context = _prompt_context(vault, payload, now, profile)
        return hooks.context_output("UserPromptSubmit", context)
    if event == "pre-tool":
        return _pre_tool(config, payload, now, log)
    jobs = config.cache_dir / hooks.JOB_LOG_NAME
    if event == "session-start":
        if config.hooks_start_server and not hooks.server_running(config.cache_dir):
            pid = hooks.start_job(
                [hooks.server_command(sys.executable, root_args(ctx, config))], jobs, sys.executable
            )
            hooks.log_line(log, now, event, f"started vaultmem serve (pid {pid})")
        return hooks.context_output("SessionStart", _session_context(config, payload, now))
    transcript = payload.transcript_path
    if transcript is None or not transcript.is_file():
        hooks.log_line(log, now, event, f"no transcript to capture ({transcript})")
        return ""
    if event == "pre-compact":
        _compaction_state(config, payload, transcript, now, log)
    commands = hooks.capture_commands(
        sys.executable, root_args(ctx, config), transcript, payload.session_id
    )
    pid = hooks.start_job(commands, jobs, sys.executable)
    hooks.log_line(log, now, event, f"started extract and handoff of {transcript} (pid {pid})")
    return ""


def _prompt_context(vault: Any, payload: Any, now: datetime, profile: str | None) -> str:
    """The surfacing block for a UserPromptSubmit prompt ("" when surfacing abstains)."""
    from vaultmem import api
    from vaultmem.agent.surface import SurfaceRequest

    request = SurfaceRequest(payload.prompt, session=payload.session_id, profile=profile)
    return str(api.surface(vault, request, now=now).context)


def _pre_tool(config: Any, payload: Any, now: datetime, log: Path) -> str:
    """The PreToolUse answer: the vault's rules for the tool call, or a rule's decision."""
    from vaultmem.agent import hooks
    from vaultmem.agent.rules import rules_for, tool_call

    if not payload.tool_name:
        return ""
    call = tool_call(payload.tool_name, payload.tool_input, payload.cwd)
    answer = rules_for(config, call, session=payload.session_id, now=now)
    if answer.decision:
        said = f"{answer.decision} for {call.label} by {', '.join(answer.shown)}"
        hooks.log_line(log, now, "pre-tool", said)
    return hooks.pre_tool_output(answer.context, answer.decision, answer.reason)


def _compaction_state(
    config: Any, payload: Any, transcript: Path, now: datetime, log: Path
) -> None:
    """Write the session's state before compaction into the vault, now (the capture job
    comes after): a failure is one log line, and the capture job still starts."""
    from vaultmem.agent import hooks
    from vaultmem.agent.compaction import write_state
    from vaultmem.errors import VaultmemError

    project = payload.cwd.name if payload.cwd is not None and payload.cwd.name else None
    try:
        note = write_state(config, transcript, session=payload.session_id, project=project, now=now)
    except VaultmemError as exc:
        hooks.log_line(log, now, "pre-compact", f"no compaction state: {exc}")
        return
    said = f"wrote the compaction state to {note}" if note else "no compaction state to keep"
    hooks.log_line(log, now, "pre-compact", said)


def _session_context(config: Any, payload: Any, now: datetime) -> str:
    """The SessionStart brief for the project named by the session's working folder; for
    a session starting again from a compaction, its state before it (``source: compact``)."""
    from vaultmem.agent.hooks import SESSION_BRIEF_BUDGET
    from vaultmem.agent.surface import session_brief

    if payload.source == "compact":
        from vaultmem.agent.compaction import postcompact_block

        return postcompact_block(config, session=payload.session_id, now=now)
    project = payload.cwd.name if payload.cwd is not None and payload.cwd.name else None
    return str(session_brief(config, project=project, budget=SESSION_BRIEF_BUDGET, now=now))


def _fallback_log() -> Path:
    """Where a hook logs before (or without) a vault: the user's cache folder."""
    from vaultmem.agent.hooks import LOG_NAME

    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "vaultmem" / LOG_NAME


hooks_app = typer.Typer(
    help=(
        "Install, remove or inspect vaultmem's Claude Code hooks, and its MCP server in "
        "Claude Code, Codex CLI and Gemini CLI.\n\n"
        "install merges handlers for UserPromptSubmit, SessionStart, PreCompact, "
        "SessionEnd and PreToolUse (Edit, Write, MultiEdit, Bash) into a settings file, "
        "keeping every other key and hook; uninstall "
        "removes only vaultmem's; status shows where they are.\n\n"
        "Example:\n\n    vaultmem --vault ~/notes hooks install --claude --scope user"
    ),
    no_args_is_help=True,
    rich_markup_mode=None,
)
app.add_typer(hooks_app, name="hooks")


def _path(scope: str) -> Path:
    from vaultmem.agent.claude_settings import settings_path

    return settings_path(scope, home=Path.home(), cwd=Path.cwd())


def _root(scope: str) -> Path:
    """The folder the scope's files may not lead out of (the home folder, or the project)."""
    from vaultmem.agent.claude_settings import scope_root

    return scope_root(scope, home=Path.home(), cwd=Path.cwd())


def _agents(codex: bool, gemini: bool, scope: str) -> list[str]:
    """The MCP-only agents named (--codex, --gemini); a scope one of them lacks is a
    usage error (exit 2), before anything is read or written."""
    from vaultmem.agent.agent_configs import SCOPES

    agents = [name for name, on in (("codex", codex), ("gemini", gemini)) if on]
    if agents and scope not in SCOPES:
        raise typer.BadParameter(
            f"{' and '.join(agents)} {'has' if len(agents) == 1 else 'have'} no {scope!r} "
            f"scope (choose from {', '.join(SCOPES)})",
            param_hint="--scope",
        )
    return agents


def _agent_file(agent: str, scope: str) -> Any:
    """Where ``agent`` keeps its MCP servers for ``scope`` (``$CODEX_HOME`` read here, at
    the edge)."""
    from vaultmem.agent.agent_configs import mcp_file

    codex_home = os.environ.get("CODEX_HOME") or None
    return mcp_file(agent, scope, **_around(), codex_home=Path(codex_home) if codex_home else None)


def _write(change: Any, dry_run: bool, done: str) -> None:
    """Show (--dry-run) or write a planned change, saying what happened in one line."""
    from vaultmem.agent.claude_settings import apply

    if not change.changed:
        typer.echo(f"unchanged: {change.path}")
    elif dry_run:
        typer.echo(change.diff(), nl=False)
    else:
        backup = apply(change)
        typer.echo(f"{done} {change.path}" + (f" (backup: {backup})" if backup else ""))


@hooks_app.command()
def install(
    ctx: typer.Context,
    claude: bool = CLAUDE,
    codex: bool = CODEX,
    gemini: bool = GEMINI,
    scope: str = SCOPE,
    dry_run: bool = DRY_RUN,
    vault: str = typer.Option(
        None, "--vault", help="The vault the hooks use (else the global one)."
    ),
    mcp: str = MCP,
) -> None:
    """Merge vaultmem's hooks into Claude Code's settings for one scope, and register its
    MCP server with Claude Code, Codex CLI or Gemini CLI.

    In the user and local scopes each handler runs `vaultmem --vault ABS_VAULT hook
    EVENT`, with an explicit timeout (prompt 8 s, session-start 10 s, pre-compact 10 s,
    session-end 5 s, pre-tool 5 s; pre-tool only for Edit, Write, MultiEdit and Bash).
    Every other key and every other tool's hooks are kept; running it again changes
    nothing; the file is backed up to settings.json.vaultmem-backup before vaultmem
    first changes it.

    --scope project writes what works on a teammate's machine too: `vaultmem` from PATH
    and the vault relative to the project ("${CLAUDE_PROJECT_DIR:-$PWD}"/VAULT; none
    when the vault is outside the project: then $VAULTMEM_VAULT). Where vaultmem is not
    installed, the SessionStart hook says so in one line of the agent's context and
    every hook exits 0.

    --mcp also registers the MCP server as "vaultmem" in Claude Code's MCP config for
    the scope (user: ~/.claude.json; local: its entry for the working folder; project:
    .mcp.json, shared in git), with the same care. stdio needs no token. http points at
    the /mcp of a `vaultmem serve` started on a port of its own (`--port N`; else
    http://127.0.0.1:8765/mcp, never the free port of a server a hook started), with
    "Authorization: Bearer <the vault's token>", written only into a file no other user
    can read;
    .mcp.json gets "Bearer ${VAULTMEM_SERVE_TOKEN}" instead (export it from `vaultmem
    serve token` where Claude Code starts). --dry-run shows the token as ***.

    --codex and --gemini register the MCP server (stdio unless --mcp http) in Codex's
    config.toml ([mcp_servers.vaultmem], every other byte of the file kept) and Gemini's
    settings.json (mcpServers.vaultmem), merged, idempotent, backed up; over http both
    read the token from $VAULTMEM_SERVE_TOKEN, never from the file.

    Example:
        vaultmem --vault ~/notes hooks install --claude --dry-run
        vaultmem --vault ~/notes hooks install --claude --mcp stdio
        vaultmem hooks install --claude --scope project --vault ./notes
        vaultmem --vault ~/notes hooks install --codex --gemini
    """
    from vaultmem.agent import claude_settings

    agents = _agents(codex, gemini, scope)
    if not claude and not agents:
        ctx.fail("name the agent: --claude, --codex and/or --gemini")
    if mcp is not None and mcp not in claude_settings.MCP_TRANSPORTS:
        raise typer.BadParameter(f"{mcp!r}: choose stdio or http", param_hint="--mcp")
    if vault:
        ctx.find_root().obj["vault"] = vault
    config = load_config(ctx)
    start = launcher()
    shared = scope == "project"
    relative = claude_settings.project_vault(config.vault, Path.cwd()) if shared else None
    # Every change is planned before any is written: a refusal leaves every file as it was.
    writes: list[tuple[Any, str]] = []
    notes: list[str] = []
    if claude:
        target = config.vault

        def command(event: str) -> str:
            if shared:
                return claude_settings.portable_hook_command(relative, event)
            return claude_settings.hook_command(start, target, event)

        change = claude_settings.plan(
            _path(scope), lambda s: claude_settings.with_vaultmem(s, command), root=_root(scope)
        )
        writes.append((change, "installed vaultmem hooks in"))
        if shared and relative is None:
            notes.append(
                f"note: the vault {config.vault} is outside this project, so the shared "
                "hooks name none: each teammate sets VAULTMEM_VAULT where Claude Code starts"
            )
        if mcp:
            writes.append(
                (
                    _mcp_change(config, scope, mcp, start, relative),
                    f"registered vaultmem's MCP server ({mcp}) in",
                )
            )
            if mcp == "http" and claude_settings.mcp_location(scope, **_around()).shared:
                notes.append(_token_note(writes[-1][0].path))
    for agent in agents:
        where = _agent_file(agent, scope)
        transport = mcp or "stdio"
        writes.append(
            (
                _agent_change(config, where, transport, start, relative),
                f"registered vaultmem's MCP server ({transport}) for {agent} in",
            )
        )
        if transport == "http":
            notes.append(_token_note(where.path))
    if claude and not shared:
        # Said, because a relative path would be looked for from each event's project.
        notes.append(f"note: the hooks name the vault by its absolute path: {config.vault}")
    for change, done in writes:
        _write(change, dry_run, done)
    for note in dict.fromkeys(notes):
        typer.echo(note)


# Where `vaultmem serve` listens unless told (its --port default).
DEFAULT_SERVER = "http://127.0.0.1:8765"


def _token_note(path: Path) -> str:
    from vaultmem.agent.claude_settings import TOKEN_REFERENCE

    return (
        f"note: {path} sends {TOKEN_REFERENCE}: export "
        'VAULTMEM_SERVE_TOKEN="$(vaultmem serve token)" where the agent starts'
    )


def _around() -> dict[str, Path]:
    return {"home": Path.home(), "cwd": Path.cwd()}


def _server_url(config: Any) -> str:
    """The /mcp of the running server when it was started on a port of its own (`serve
    --port N`), else the default port's: never the free port a hook's server got, which
    changes with every start."""
    from vaultmem.servers.serve import MCP_PATH, running

    found = running(config.cache_dir)
    return (found.url if found and found.stable else DEFAULT_SERVER) + MCP_PATH


def _agent_change(
    config: Any, where: Any, transport: str, start: list[str], relative: str | None
) -> Any:
    """The planned change to Codex's or Gemini's MCP config: absolute paths for the user
    scope; `vaultmem` from PATH and the vault relative to the project for a shared file
    (which the agent, started in the project, resolves there)."""
    from vaultmem.agent import agent_configs

    if transport == "http":
        entry = agent_configs.http_entry(where.agent, _server_url(config))
    elif where.shared:
        if relative is None:
            raise ConfigError(
                f"the vault {config.vault} is outside this project: {where.path} is shared "
                "and cannot name it (use --scope user, or a vault inside the project)"
            )
        entry = agent_configs.stdio_entry("vaultmem", ["--vault", relative, "mcp"])
    else:
        entry = agent_configs.stdio_entry(
            start[0], [*start[1:], "--vault", str(config.vault), "mcp"]
        )
    return agent_configs.plan_install(where, entry)


def _mcp_change(
    config: Any, scope: str, transport: str, start: list[str], relative: str | None
) -> Any:
    """The planned change to the scope's MCP config (the token never in a shared file,
    nor in one another user may read; a shared stdio entry portable)."""
    from vaultmem.agent import claude_settings

    where = claude_settings.mcp_location(scope, **_around())
    if transport == "stdio":
        if where.shared:
            portable = claude_settings.portable_vault(relative)
            entry = claude_settings.stdio_server(["vaultmem"], portable)
        else:
            entry = claude_settings.stdio_server(start, config.vault)
        return claude_settings.plan(
            where.path, lambda s: claude_settings.with_mcp(s, where.keys, entry), root=where.root
        )
    from vaultmem.servers.auth import TOKEN_ENV, server_auth

    url = _server_url(config)
    hidden: tuple[str, ...] = ()
    if where.shared:
        token = claude_settings.TOKEN_REFERENCE
    else:
        problem = claude_settings.private_problem(where.path)
        if problem:
            raise ConfigError(f"not writing the token: {problem} (or use --mcp stdio)")
        given = os.environ.get(TOKEN_ENV) or None
        token = server_auth(config.cache_dir, given=given, no_auth=False).token or ""
        hidden = (token,)
    entry = claude_settings.http_server(url, token)
    return claude_settings.plan(
        where.path,
        lambda s: claude_settings.with_mcp(s, where.keys, entry),
        mode=0o600,
        hidden=hidden,
        root=where.root,
    )


@hooks_app.command()
def uninstall(
    claude: bool = CLAUDE,
    codex: bool = CODEX,
    gemini: bool = GEMINI,
    scope: str = SCOPE,
    dry_run: bool = DRY_RUN,
) -> None:
    """Remove vaultmem's hooks (and its MCP server entry) from one scope, and nothing else.

    Handlers whose command runs `vaultmem … hook EVENT` go; a matcher group, event list
    or "hooks" object left empty by that goes too; other keys and hooks stay as they are.
    The "vaultmem" entry of the scope's MCP config (see `hooks install --mcp`) goes too.
    Claude Code's when no agent is named; --codex and --gemini remove vaultmem's MCP
    server from those agents' files instead (with --claude: as well).

    Example:
        vaultmem hooks uninstall --claude --scope project
        vaultmem hooks uninstall --codex --gemini
    """
    from vaultmem.agent import agent_configs, claude_settings

    agents = _agents(codex, gemini, scope)
    if claude or not agents:
        change = claude_settings.plan(
            _path(scope), claude_settings.without_vaultmem, root=_root(scope)
        )
        _write(change, dry_run, "removed vaultmem hooks from")
        where = claude_settings.mcp_location(scope, **_around())
        _text, settings = claude_settings.read_settings(where.path)
        if claude_settings.installed_mcp(settings, where.keys) is not None:
            mcp = claude_settings.plan(
                where.path, lambda s: claude_settings.without_mcp(s, where.keys), root=where.root
            )
            _write(mcp, dry_run, "removed vaultmem's MCP server from")
    for agent in agents:
        found = _agent_file(agent, scope)
        if agent_configs.installed(found) is None:
            typer.echo(f"unchanged: {found.path}")
            continue
        _write(agent_configs.plan_uninstall(found), dry_run, f"removed {agent}'s vaultmem MCP from")


@hooks_app.command()
def status(claude: bool = CLAUDE) -> None:
    """Say which Claude Code scopes have vaultmem hooks and whether their command runs,
    and which register vaultmem's MCP server (Claude Code, Codex CLI, Gemini CLI).

    One line per scope: the settings file, the events wired to vaultmem, and whether the
    executable and the vault in the command exist; then one line per MCP entry.

    Example:
        vaultmem hooks status
    """
    from vaultmem.agent import agent_configs, claude_settings

    for scope in claude_settings.SCOPES:
        path = _path(scope)
        try:
            text, settings = claude_settings.read_settings(path)
        except ConfigError as exc:
            typer.echo(f"{scope}: {exc}")
            continue
        ours = claude_settings.installed(settings)
        if text is None or not ours:
            typer.echo(f"{scope}: {path}: {'no vaultmem hooks' if text is not None else 'no file'}")
            continue
        checks = sorted({_check(command) for command in ours.values()})
        typer.echo(f"{scope}: {path}: {', '.join(ours)}; {'; '.join(checks)}")
    for scope in claude_settings.SCOPES:
        where = claude_settings.mcp_location(scope, **_around())
        try:
            entry = claude_settings.installed_mcp(
                claude_settings.read_settings(where.path)[1], where.keys
            )
        except ConfigError as exc:
            typer.echo(f"{scope} MCP: {exc}")
            continue
        if entry is not None:
            typer.echo(f"{scope} MCP: {where.path}: vaultmem ({_server_words(entry)})")
    for agent in agent_configs.AGENTS:
        for scope in agent_configs.SCOPES:
            found = _agent_file(agent, scope)
            try:
                entry = agent_configs.installed(found)
            except ConfigError as exc:
                typer.echo(f"{agent} {scope} MCP: {exc}")
                continue
            if entry is not None:
                typer.echo(f"{agent} {scope} MCP: {found.path}: vaultmem ({_server_words(entry)})")


def _server_words(entry: dict[str, Any]) -> str:
    """An MCP entry in words: its transport and what it starts or reaches."""
    url = entry.get("url") or entry.get("httpUrl")
    if url:
        return f"http, {url}"
    args = entry.get("args")
    words = [str(entry.get("command", "?")), *(args if isinstance(args, list) else [])]
    return f"{entry.get('type', 'stdio')}, {shlex.join(str(w) for w in words)}"


def _check(command: str) -> str:
    """Whether a hook command's executable and vault exist, in words."""
    from vaultmem.agent.claude_settings import hook_problems, hook_vault

    problems = hook_problems(command)
    if problems:
        return f"BROKEN ({', '.join(problems)})"
    words = shlex.split(command)
    executable = "vaultmem" if "exec" in words else words[0]
    return f"ok ({executable}, vault {hook_vault(command)})"
