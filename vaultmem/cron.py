"""`cron`: ready-to-paste crontab lines and a systemd timer for a vault's routine jobs.

Pure text: the CLI passes in how to start vaultmem (an absolute executable, or this
Python with ``-m vaultmem``) and the vault's global options; every word is quoted for
the shell (crontab) or for systemd, so a vault path with spaces or quotes works.
"""

from __future__ import annotations

import re
import shlex
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from vaultmem.errors import LockBusy

BUSY = LockBusy.exit_code  # 75, EX_TEMPFAIL: another run holds the lock
EMBED_EVERY_MIN = 15

EXIT_CODES = (
    "# Exit codes: 0 done; 1 error (one line on stderr, which cron mails); 2 bad usage;",
    f"# {BUSY} busy: another vaultmem run holds the vault's lock. Nothing is wrong: the next",
    "# run does the work (vaultmem's own lock keeps runs from overlapping; no flock needed).",
)
ENVIRONMENT = (
    "# cron starts jobs with an almost empty environment: settings you keep in VAULTMEM_*",
    "# variables belong in .vaultmem.toml or ~/.config/vaultmem/config.toml for these jobs.",
)


@dataclass(frozen=True)
class Job:
    """One routine job: when (crontab fields), what (vaultmem commands, run in turn while
    each succeeds) and why (the comment above it)."""

    schedule: str
    commands: tuple[tuple[str, ...], ...]
    comment: str


def jobs() -> tuple[Job, ...]:
    """The routine jobs of a vault: the embedding sweep, nightly promote, weekly gc report."""
    return (
        Job(
            f"*/{EMBED_EVERY_MIN} * * * *",
            (("index", "--no-embed", "--quiet"), ("embed", "--quiet")),
            f"Every {EMBED_EVERY_MIN} minutes: bring the keyword index up to date, then embed "
            "new fragments (silent unless something fails).",
        ),
        Job(
            "30 3 * * *",
            (("promote",),),
            "Nightly: promote short-term memories that earned it (prints what moved).",
        ),
        Job(
            "0 4 * * 0",
            (("gc", "--dry-run"),),
            "Weekly, Sunday: report what gc would archive (changes nothing).",
        ),
    )


def command_line(launcher: Sequence[str], vault_args: Sequence[str], job: Job) -> str:
    """The job as one shell command line, every word quoted (``&&`` between commands)."""
    return " && ".join(shlex.join([*launcher, *vault_args, *words]) for words in job.commands)


def crontab(launcher: Sequence[str], vault: Path, vault_args: Sequence[str]) -> str:
    """Crontab lines for ``vault``, with comments on exit codes and the environment.

    ``launcher`` starts vaultmem (``["/usr/bin/vaultmem"]``); ``vault_args`` are the
    global options naming the vault (``["--vault", "/abs/vault"]``).
    """
    lines = [f"# vaultmem jobs for the vault {vault} (paste into `crontab -e`).", *EXIT_CODES]
    lines += ENVIRONMENT
    for job in jobs():
        lines += ["", *textwrap.wrap(job.comment, 88, initial_indent="# ", subsequent_indent="# ")]
        # cron turns an unescaped % into a newline, even inside quotes
        command = command_line(launcher, vault_args, job).replace("%", "\\%")
        lines.append(f"{job.schedule} {command}")
    return "\n".join(lines) + "\n"


def unit_name(vault: Path) -> str:
    """``vaultmem-embed-<vault folder>``: one pair of units per vault."""
    slug = re.sub(r"[^a-z0-9]+", "-", vault.name.lower()).strip("-") or "vault"
    return f"vaultmem-embed-{slug}"


def systemd_quote(word: str) -> str:
    """One word of an ``ExecStart=`` line: systemd's own quoting, not the shell's
    (``%`` specifiers and ``$`` variables are expanded by systemd unless doubled)."""
    if word and re.fullmatch(r"[A-Za-z0-9_@%+=:,./-]+", word) and "%" not in word:
        return word
    escaped = word.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + escaped.replace("%", "%%").replace("$", "$$") + '"'


def systemd_units(launcher: Sequence[str], vault: Path, vault_args: Sequence[str]) -> str:
    """A ``.service`` and ``.timer`` pair running the embedding sweep, as two files with
    install instructions in comments."""
    name = unit_name(vault)
    sweep = jobs()[0]
    exec_lines = [
        "ExecStart=" + " ".join(systemd_quote(w) for w in [*launcher, *vault_args, *words])
        for words in sweep.commands
    ]
    service = [
        f"# ~/.config/systemd/user/{name}.service",
        *EXIT_CODES,
        f"# SuccessExitStatus={BUSY}: a busy lock is not a failure of the unit.",
        "# A user unit sees the user manager's environment, not your shell's: keep settings",
        "# in .vaultmem.toml or ~/.config/vaultmem/config.toml.",
        "[Unit]",
        f"Description=vaultmem embedding sweep for {str(vault).replace('%', '%%')}",
        "",
        "[Service]",
        "Type=oneshot",
        *exec_lines,
        f"SuccessExitStatus={BUSY}",
        "Nice=10",
    ]
    timer = [
        f"# ~/.config/systemd/user/{name}.timer",
        f"# Then: systemctl --user daemon-reload && systemctl --user enable --now {name}.timer",
        "[Unit]",
        f"Description=Run the vaultmem embedding sweep every {EMBED_EVERY_MIN} minutes",
        "",
        "[Timer]",
        f"OnCalendar=*:0/{EMBED_EVERY_MIN}",
        "Persistent=true",
        "",
        "[Install]",
        "WantedBy=timers.target",
    ]
    return "\n".join(service) + "\n\n" + "\n".join(timer) + "\n"
