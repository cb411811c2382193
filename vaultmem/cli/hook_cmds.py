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

DRY_RUN = typer.Option(
    False, "--dry-run", help="Print the diff of the settings file; write nothing."
)
SCOPE = typer.Option(
    "user",
    "--scope",
    help="user: ~/.claude/settings.json; project: .claude/settings.json; "
    "local: .claude/settings.local.json (both under the working folder).",
)
CLAUDE = typer.Option(False, "--claude", help="Claude Code's settings (the only agent today).")
MCP = typer.Option(
    None,
    "--mcp",
    metavar="stdio|http",
    help="Also register vaultmem's MCP server with Claude Code for the scope: stdio (Claude "
    "Code starts `vaultmem mcp`) or http (the running `serve`'s /mcp, with the token).",
)


@app.command()
def hook(
    ctx: typer.Context,
    event: str = typer.Argument(
        ..., help="prompt, session-start, pre-compact, session-end or stop."
    ),
) -> None:
    """Answer one Claude Code hook event, read as JSON on stdin.

    prompt (UserPromptSubmit) prints the notes `surface` finds for the prompt as
    additionalContext, or nothing; session-start (SessionStart) prints a brief of pinned
    notes, the project's latest handoff and recent decisions; pre-compact and
    session-end start `extract` and `handoff` on the transcript in a detached process
    and return at once; stop prints nothing. The vault is --vault, else $VAULTMEM_VAULT,
    else found upward from the event's cwd. It never breaks the agent: any failure exits
    0 with no output and one line in <cache>/hooks.log (~/.cache/vaultmem/hooks.log when
    there is no vault). `hooks install --claude` wires it into Claude Code.

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
        vault = open_vault(ctx, cwd=cwd)
        config = vault.config
        log = config.cache_dir / hooks.LOG_NAME
        if event not in hooks.EVENT_NAMES:
            raise hooks.HookInputError(f"unknown event {event!r}")
        if payload is None:
            raise bad_input or hooks.HookInputError("no event on stdin")
        output = _answer(ctx, event, vault, payload, now, log)
        if output:
            typer.echo(output)
    except Exception as exc:  # noqa: BLE001 - a hook must never break the agent
        with contextlib.suppress(Exception):
            hooks.log_line(log, now, event, f"failed: {type(exc).__name__}: {exc}")


def _answer(
    ctx: typer.Context, event: str, vault: Any, payload: Any, now: datetime, log: Path
) -> str:
    """The hook's stdout for an event ("" for none), starting the capture job if due."""
    from vaultmem.agent import hooks

    config = vault.config
    if event == "prompt":
        return hooks.context_output(
            "UserPromptSubmit", hooks.prompt_context(vault, payload, now=now)
        )
    if event == "session-start":
        return hooks.context_output("SessionStart", hooks.session_context(config, payload, now=now))
    transcript = payload.transcript_path
    if transcript is None or not transcript.is_file():
        hooks.log_line(log, now, event, f"no transcript to capture ({transcript})")
        return ""
    commands = hooks.capture_commands(sys.executable, root_args(ctx, config), transcript)
    pid = hooks.start_capture(commands, config.cache_dir / hooks.JOB_LOG_NAME)
    hooks.log_line(log, now, event, f"started extract and handoff of {transcript} (pid {pid})")
    return ""


def _fallback_log() -> Path:
    """Where a hook logs before (or without) a vault: the user's cache folder."""
    from vaultmem.agent.hooks import LOG_NAME

    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "vaultmem" / LOG_NAME


hooks_app = typer.Typer(
    help=(
        "Install, remove or inspect vaultmem's Claude Code hooks.\n\n"
        "install merges handlers for UserPromptSubmit, SessionStart, PreCompact and "
        "SessionEnd into a settings file, keeping every other key and hook; uninstall "
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
    scope: str = SCOPE,
    dry_run: bool = DRY_RUN,
    vault: str = typer.Option(
        None, "--vault", help="The vault the hooks use (else the global one)."
    ),
    mcp: str = MCP,
) -> None:
    """Merge vaultmem's hooks into Claude Code's settings for one scope.

    Each handler runs `vaultmem --vault ABS_VAULT hook EVENT` with an explicit timeout
    (prompt 8 s, session-start 10 s, pre-compact 10 s, session-end 5 s). Every other key
    and every other tool's hooks are kept; running it again changes nothing; the file
    is backed up to settings.json.vaultmem-backup before vaultmem first changes it.

    --mcp also registers the MCP server as "vaultmem" in Claude Code's MCP config for
    the scope (user: ~/.claude.json; local: its entry for the working folder; project:
    .mcp.json, shared in git), with the same care. stdio needs no token. http points at
    the running server's /mcp (else http://127.0.0.1:8765/mcp) with "Authorization:
    Bearer <the vault's token>", written only into a file no other user can read;
    .mcp.json gets "Bearer ${VAULTMEM_SERVE_TOKEN}" instead (export it from `vaultmem
    serve token` where Claude Code starts). --dry-run shows the token as ***.

    Example:
        vaultmem --vault ~/notes hooks install --claude --dry-run
        vaultmem --vault ~/notes hooks install --claude --mcp stdio
    """
    from vaultmem.agent import claude_settings
    from vaultmem.errors import ConfigError

    if not claude:
        raise ConfigError("name the agent: --claude (Claude Code is the only one today)")
    if mcp is not None and mcp not in claude_settings.MCP_TRANSPORTS:
        raise typer.BadParameter(f"{mcp!r}: choose stdio or http", param_hint="--mcp")
    if vault:
        ctx.find_root().obj["vault"] = vault
    config = load_config(ctx)
    target = config.vault
    start = launcher()

    def command(event: str) -> str:
        return claude_settings.hook_command(start, target, event)

    change = claude_settings.plan(_path(scope), lambda s: claude_settings.with_vaultmem(s, command))
    mcp_change = _mcp_change(config, scope, mcp, start) if mcp else None
    _write(change, dry_run, "installed vaultmem hooks in")
    if mcp_change is not None:
        _write(mcp_change, dry_run, f"registered vaultmem's MCP server ({mcp}) in")
        if mcp == "http" and claude_settings.mcp_location(scope, **_around()).shared:
            typer.echo(
                f"note: {mcp_change.path} sends {claude_settings.TOKEN_REFERENCE}: export "
                'VAULTMEM_SERVE_TOKEN="$(vaultmem serve token)" where Claude Code starts'
            )


def _around() -> dict[str, Path]:
    return {"home": Path.home(), "cwd": Path.cwd()}


def _mcp_change(config: Any, scope: str, transport: str, start: list[str]) -> Any:
    """The planned change to the scope's MCP config (the token never in a shared file,
    nor in one another user may read)."""
    from vaultmem.agent import claude_settings
    from vaultmem.errors import ConfigError

    where = claude_settings.mcp_location(scope, **_around())
    if transport == "stdio":
        entry = claude_settings.stdio_server(start, config.vault)
        return claude_settings.plan(
            where.path, lambda s: claude_settings.with_mcp(s, where.keys, entry)
        )
    from vaultmem.servers.auth import TOKEN_ENV, server_auth
    from vaultmem.servers.serve import MCP_PATH, running

    found = running(config.cache_dir)
    url = (found.url if found else "http://127.0.0.1:8765") + MCP_PATH
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
    )


@hooks_app.command()
def uninstall(claude: bool = CLAUDE, scope: str = SCOPE, dry_run: bool = DRY_RUN) -> None:
    """Remove vaultmem's hooks (and its MCP server entry) from one scope, and nothing else.

    Handlers whose command runs `vaultmem … hook EVENT` go; a matcher group, event list
    or "hooks" object left empty by that goes too; other keys and hooks stay as they are.
    The "vaultmem" entry of the scope's MCP config (see `hooks install --mcp`) goes too.

    Example:
        vaultmem hooks uninstall --claude --scope project
    """
    from vaultmem.agent import claude_settings

    change = claude_settings.plan(_path(scope), claude_settings.without_vaultmem)
    _write(change, dry_run, "removed vaultmem hooks from")
    where = claude_settings.mcp_location(scope, **_around())
    _text, settings = claude_settings.read_settings(where.path)
    if claude_settings.installed_mcp(settings, where.keys) is not None:
        mcp = claude_settings.plan(where.path, lambda s: claude_settings.without_mcp(s, where.keys))
        _write(mcp, dry_run, "removed vaultmem's MCP server from")


@hooks_app.command()
def status(claude: bool = CLAUDE) -> None:
    """Say which Claude Code scopes have vaultmem hooks and whether their command runs,
    and which register vaultmem's MCP server.

    One line per scope: the settings file, the events wired to vaultmem, and whether the
    executable and the vault in the command exist; then one line per MCP entry.

    Example:
        vaultmem hooks status
    """
    from vaultmem.agent import claude_settings
    from vaultmem.errors import ConfigError

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
            args = entry.get("args")
            words = [str(entry.get("command", "?")), *(args if isinstance(args, list) else [])]
            target = entry.get("url") or shlex.join(str(w) for w in words)
            kind = entry.get("type", "stdio")
            typer.echo(f"{scope} MCP: {where.path}: vaultmem ({kind}, {target})")


def _check(command: str) -> str:
    """Whether a hook command's executable and vault exist, in words."""
    from vaultmem.agent.claude_settings import hook_problems, hook_vault

    problems = hook_problems(command)
    if problems:
        return f"BROKEN ({', '.join(problems)})"
    return f"ok ({shlex.split(command)[0]}, vault {hook_vault(command)})"
