"""`doctor` (what is wrong with a vault, and the safe repairs) and `cron` (routine jobs)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from vaultmem.cli import app, load_config

if TYPE_CHECKING:
    from vaultmem.doctor.findings import DoctorReport, Finding

_LABELS = {"ok": "ok", "warn": "warn", "problem": "PROBLEM"}


@app.command()
def doctor(
    ctx: typer.Context,
    repair: bool = typer.Option(
        False,
        "--repair",
        help="Fix what is safe (rebuild caches, drop orphan vectors, clear a dead server "
        "file), then check again.",
    ),
    json_out: bool = typer.Option(
        False, "--json", help='One object: {"healthy": bool, "findings": [...]}.'
    ),
) -> None:
    """Check everything that can be wrong with the vault; with --repair, fix what is safe.

    Checks the configuration (unknown keys, bad values), the index and embed locks, the
    keyword index against the manifest and the notes (damage, interrupted updates, stale
    notes), notes that do not parse and owned values that are invalid, typed links that
    resolve to no note, the vector store (model and dimension of each collection, orphan
    and missing vectors, its record), each configured endpoint (one request, 2 s; keys are
    never shown), Claude Code hooks, a running `serve`, and how git merges the notes
    (vaultmem's driver registered in this clone? .gitattributes? notes left with conflict
    markers, each with the command that settles it). One line per finding: ok, warn,
    PROBLEM or repaired, with the command that fixes what doctor does not. --repair
    re-indexes, deletes an unreadable vector store, drops orphan vectors and removes a dead
    server's server.json; it never embeds (run `vaultmem embed`). Exit status: 0 healthy
    (warnings allowed), 1 problems found (after --repair: problems left).

    Example:
        vaultmem --vault ~/notes doctor --repair
    """
    from vaultmem import config as cfg
    from vaultmem.doctor import checks as doc
    from vaultmem.doctor import findings
    from vaultmem.servers import health
    from vaultmem.vault_trust import trust_folder

    obj = ctx.find_root().obj or {}
    checked = cfg.check(
        vault_flag=obj.get("vault"),
        env=dict(os.environ),
        cwd=Path.cwd(),
        overrides={"cache_dir": obj.get("cache_dir")},
    )
    if checked.config is None:
        report = findings.config_failure(checked.error, checked.warnings)
    else:
        around = findings.Surroundings(
            home=Path.home(),
            cwd=Path.cwd(),
            search_path=os.environ.get("PATH", ""),
            server=health.CHECKS,
            trust_folder=trust_folder(dict(os.environ)),
        )
        report = doc.diagnose(checked.config, around)
        if repair:
            report = doc.repair(checked.config, report, around)
    if json_out:
        typer.echo(json.dumps(report.as_json(), ensure_ascii=False))
    else:
        for finding in report.findings:
            typer.echo(_line(finding, repair))
        typer.echo(_summary(report, repair), err=True)
    if not report.healthy:
        raise typer.Exit(1)


def _line(finding: Finding, repairing: bool) -> str:
    label = "repaired" if finding.repaired else _LABELS[finding.severity]
    line = f"{label:<8} {finding.check:<13} {finding.message}"
    if finding.severity == "ok":
        return line
    if finding.repairable and not repairing:
        return f"{line}  [--repair fixes it]"
    return f"{line}  (fix: {finding.fix})" if finding.fix else line


def _summary(report: DoctorReport, repairing: bool) -> str:
    problems, warnings = report.count("problem"), report.count("warn")
    repaired = sum(1 for f in report.findings if f.repaired)
    parts = [f"{repaired} repaired"] if repaired else []
    parts += [f"{problems} problem(s)", f"{warnings} warning(s)"]
    fixable = sum(1 for f in report.findings if f.repairable and not f.repaired)
    if fixable and not repairing:
        parts.append(f"{fixable} fixed by `vaultmem doctor --repair`")
    verdict = "healthy" if report.healthy else "problems found"
    return f"vaultmem doctor: {verdict}: {', '.join(parts)}"


@app.command()
def cron(
    ctx: typer.Context,
    systemd: bool = typer.Option(
        False, "--systemd", help="A systemd .service/.timer pair for the embedding sweep."
    ),
    install: bool = typer.Option(
        False,
        "--install",
        help="Put the lines in your crontab between marker lines naming the vault (your "
        "other lines are kept; installing again replaces the block). With --systemd: "
        "write the units to ~/.config/systemd/user and enable the timer.",
    ),
    uninstall: bool = typer.Option(
        False,
        "--uninstall",
        help="Take this vault's block out of your crontab (with --systemd: disable and "
        "delete its units); nothing else changes.",
    ),
) -> None:
    """Print, install or remove the crontab lines of this vault's routine jobs.

    Every 15 minutes `index --no-embed` then `embed` (the embedding sweep), nightly
    `promote`, weekly `gc --dry-run` as a report, each with --quiet: a run with nothing to
    do prints nothing, so cron mails only what moved and what failed. Paths are absolute
    and quoted for the shell, so a vault path with spaces works; comments explain the exit
    codes (0 done, 1 error, 75 busy: another run holds the lock, the next run catches up).
    --install merges the lines into your crontab (`crontab -l`, then `crontab -`) between
    `# >>> vaultmem VAULT >>>` and `# <<< vaultmem VAULT <<<`: installing again replaces
    that block, another vault gets its own, and --uninstall removes only it. --systemd
    prints a user .service and .timer for the sweep instead (75 counts as success); with
    --install they are written and the timer enabled (`systemctl --user`).

    Example:
        vaultmem --vault ~/notes cron --install
        vaultmem --vault ~/notes cron --systemd
    """
    from vaultmem.cli import launcher, root_args
    from vaultmem.cron import crontab, systemd_units

    if install and uninstall:
        raise typer.BadParameter("give --install or --uninstall, not both", param_hint="--install")
    config = load_config(ctx)
    start, vault_args = launcher(), root_args(ctx, config)
    if systemd and (install or uninstall):
        _install_units(config.vault, start, vault_args, install=install)
    elif install or uninstall:
        _install_crontab(config.vault, start, vault_args, install=install)
    else:
        render = systemd_units if systemd else crontab
        typer.echo(render(start, config.vault, vault_args), nl=False)


def _install_crontab(
    vault: Path, start: list[str], vault_args: list[str], *, install: bool
) -> None:
    """`cron --install` / `--uninstall`: the block written (or removed), then one line."""
    from vaultmem.cron import install_crontab, uninstall_crontab

    if not install:
        change = uninstall_crontab(vault)
        if change.action == "absent":
            typer.echo(f"vaultmem: no vaultmem block for {vault} in the crontab", err=True)
        else:
            lines = change.block.count("\n")
            typer.echo(f"vaultmem: removed the block for {vault} ({lines} lines)", err=True)
        return
    change = install_crontab(start, vault, vault_args)
    typer.echo(change.block, nl=False)
    for stray in change.strays:
        typer.echo(
            f"vaultmem: warning: outside the block, your crontab also has: {stray} "
            "(pasted by hand? delete it with `crontab -e`)",
            err=True,
        )
    jobs = sum(1 for line in change.block.splitlines() if line and not line.startswith("#"))
    done = {"installed": "installed", "updated": "updated", "unchanged": "already installed"}
    typer.echo(
        f"vaultmem: {done[change.action]}: {jobs} jobs for {vault} in the crontab "
        "(`vaultmem cron --uninstall` removes them)",
        err=True,
    )


def _install_units(vault: Path, start: list[str], vault_args: list[str], *, install: bool) -> None:
    """`cron --systemd --install` / `--uninstall`: the units installed, then one line."""
    from vaultmem.cron import install_units, uninstall_units

    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    folder = Path(base).expanduser() / "systemd" / "user"
    if install:
        change = install_units(folder, start, vault, vault_args)
        typer.echo("\n".join(path.read_text("utf-8") for path in change.files), nl=False)
    else:
        change = uninstall_units(folder, vault)
    for warning in change.warnings:
        typer.echo(f"vaultmem: warning: {warning}", err=True)
    names = ", ".join(path.name for path in change.files)
    if change.action == "absent":
        summary = f"no vaultmem units for {vault} in {folder}"
    elif not change.systemctl:
        summary = (
            f"systemctl not found: {change.action} {names} in {folder}, but enabled or "
            "disabled nothing"
        )
    else:
        summary = f"{change.action} {names} in {folder}; ran {'; '.join(change.ran)}"
    typer.echo(f"vaultmem: {summary}", err=True)
