"""`cron`: a vault's routine jobs as crontab lines or a systemd timer, printed or installed.

The text is pure: the CLI passes in how to start vaultmem (an absolute executable, or
this Python with ``-m vaultmem``) and the vault's global options; every word is quoted for
the shell (crontab) or for systemd, so a vault path with spaces or quotes works.

Installing merges the lines into the user's crontab between two marker lines naming the
vault (:func:`install_crontab`; ``crontab -l`` and ``crontab -`` are run as programs), or
writes the units to the user's systemd folder and enables the timer
(:func:`install_units`). Both are idempotent and both undo only what they did.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from vaultmem.atomic import atomic_write
from vaultmem.errors import ConfigError, LockBusy

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
    """The routine jobs of a vault: the embedding sweep, nightly promote, weekly gc report.

    Every command runs with ``--quiet``: a run with nothing to do prints nothing, so cron
    mails only what moved (promote), what would be archived (gc) and failures.
    """
    return (
        Job(
            f"*/{EMBED_EVERY_MIN} * * * *",
            (("index", "--no-embed", "--quiet"), ("embed", "--quiet")),
            f"Every {EMBED_EVERY_MIN} minutes: bring the keyword index up to date, then embed "
            "new fragments (silent unless something fails).",
        ),
        Job(
            "30 3 * * *",
            (("promote", "--quiet"),),
            "Nightly: promote short-term memories that earned it (prints what moved, "
            "nothing when nothing did).",
        ),
        Job(
            "0 4 * * 0",
            (("gc", "--dry-run", "--quiet"),),
            "Weekly, Sunday: report what gc would archive (changes nothing; silent when "
            "nothing has faded).",
        ),
    )


def command_line(launcher: Sequence[str], vault_args: Sequence[str], job: Job) -> str:
    """The job as one shell command line, every word quoted (``&&`` between commands)."""
    return " && ".join(shlex.join([*launcher, *vault_args, *words]) for words in job.commands)


def refuse_unquotable(words: Sequence[str], *, crontab: bool) -> None:
    """ConfigError, in one line, for a word a crontab line (``crontab``) or a systemd unit
    cannot carry as it is: a line break ends the line (the rest would run as a job of its
    own), and in a crontab a backslash right before ``%`` cannot be written, since cron
    reads ``\\%`` as an escaped ``%`` and the shell's quotes do not stop it (crontab(5):
    an unescaped ``%`` ends the command, the rest is its standard input)."""
    for word in words:
        if "\n" in word or "\r" in word:
            what = "a crontab line" if crontab else "a systemd unit"
            raise ConfigError(
                f"cannot write {what} for {word!r}: it holds a line break, which cannot be "
                "quoted there (rename the folder)"
            )
        if crontab and "\\%" in word:
            raise ConfigError(
                f"cannot write a crontab line for {word!r}: a backslash before % cannot be "
                "quoted in a crontab (cron would end the command there; rename the folder, or "
                "use `vaultmem cron --systemd`)"
            )


def crontab(
    launcher: Sequence[str], vault: Path, vault_args: Sequence[str], *, installed: bool = False
) -> str:
    """Crontab lines for ``vault``, with comments on exit codes and the environment.

    ``launcher`` starts vaultmem (``["/usr/bin/vaultmem"]``); ``vault_args`` are the
    global options naming the vault (``["--vault", "/abs/vault"]``). ``installed``: the
    lines of the block `cron --install` writes (its first comment says so).
    """
    refuse_unquotable([str(vault), *launcher, *vault_args], crontab=True)
    how = "kept by `vaultmem cron --install`" if installed else "paste into `crontab -e`"
    lines = [f"# vaultmem jobs for the vault {vault} ({how}).", *EXIT_CODES, *ENVIRONMENT]
    for job in jobs():
        lines += ["", *textwrap.wrap(job.comment, 88, initial_indent="# ", subsequent_indent="# ")]
        lines.append(job_line(launcher, vault_args, job))
    return "\n".join(lines) + "\n"


def job_line(launcher: Sequence[str], vault_args: Sequence[str], job: Job) -> str:
    """The crontab line of one job: its schedule and its command line."""
    refuse_unquotable([*launcher, *vault_args], crontab=True)
    # cron turns an unescaped % into a newline, even inside quotes
    command = command_line(launcher, vault_args, job).replace("%", "\\%")
    return f"{job.schedule} {command}"


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
    return "\n".join(unit_files(launcher, vault, vault_args).values())


def unit_description(vault: Path) -> str:
    """The service's ``Description=`` line, which names its vault (systemd-escaped)."""
    return f"Description=vaultmem embedding sweep for {str(vault).replace('%', '%%')}"


def unit_files(launcher: Sequence[str], vault: Path, vault_args: Sequence[str]) -> dict[str, str]:
    """The sweep's units by file name: ``<name>.service`` and ``<name>.timer``."""
    refuse_unquotable([str(vault), *launcher, *vault_args], crontab=False)
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
        unit_description(vault),
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
    return {
        f"{name}.service": "\n".join(service) + "\n",
        f"{name}.timer": "\n".join(timer) + "\n",
    }


# --- installing into the user's crontab --------------------------------------------------


def markers(vault: Path) -> tuple[str, str]:
    """The lines that open and close the block of ``vault`` in a crontab."""
    if "\n" in str(vault) or "\r" in str(vault):
        raise ConfigError(f"a vault path with a line break cannot go in a crontab: {vault!r}")
    return f"# >>> vaultmem {vault} >>>", f"# <<< vaultmem {vault} <<<"


def crontab_block(launcher: Sequence[str], vault: Path, vault_args: Sequence[str]) -> str:
    """The lines `cron --install` keeps in the crontab for ``vault``, between its markers."""
    start, end = markers(vault)
    return f"{start}\n{crontab(launcher, vault, vault_args, installed=True)}{end}\n"


@dataclass(frozen=True)
class TableChange:
    """What installing or removing a vault's block does to a crontab.

    ``table``: the whole crontab afterwards; ``block``: the block written or removed (""
    when there was none to remove); ``action``: installed, updated, unchanged, removed or
    absent (nothing to remove); ``strays``: lines outside any block that already run this
    vault's jobs (pasted by hand from `vaultmem cron`), which the user should delete.
    """

    table: str
    block: str
    action: str
    strays: tuple[str, ...] = ()

    @property
    def changed(self) -> bool:
        """Whether the crontab must be written."""
        return self.action in ("installed", "updated", "removed")


def _lines(text: str) -> list[str]:
    """``text`` split after each newline only (other line breaks stay inside a line), so
    ``"".join`` gives back every byte."""
    return re.findall(r"[^\n]*\n|[^\n]+\Z", text)


def _block_span(lines: Sequence[str], vault: Path) -> tuple[int, int] | None:
    """Where the block of ``vault`` is: (its start line, the line after its end)."""
    start, end = markers(vault)
    bare = _bare(lines)
    if start not in bare:
        return None
    first = bare.index(start)
    if end not in bare[first + 1 :]:
        raise ConfigError(
            f"the crontab has the line {start!r} but not {end!r} after it: fix it with "
            "`crontab -e` (delete the vaultmem lines), then install again"
        )
    return first, bare.index(end, first + 1) + 1


def merged_table(table: str, vault: Path, block: str) -> TableChange:
    """``table`` with ``block`` in place of the vault's old block, or appended at its end;
    every other byte is kept."""
    lines = _lines(table)
    span = _block_span(lines, vault)
    if span is None:
        separator = "\n" if table and not table.endswith("\n") else ""
        action, new = "installed", f"{table}{separator}{block}"
    else:
        first, after = span
        old = "".join(lines[first:after])
        action = "unchanged" if old == block else "updated"
        new = "".join([*lines[:first], block, *lines[after:]])
        lines = [*lines[:first], *lines[after:]]
    return TableChange(new, block, action, _strays(lines, block, vault))


def _strays(outside: Sequence[str], block: str, vault: Path) -> tuple[str, ...]:
    """Lines outside the block that run the block's jobs or carry its heading."""
    heading = f"# vaultmem jobs for the vault {vault} "
    job_lines = {bare for bare in _bare(_lines(block)) if bare.strip() and bare[0] != "#"}
    return tuple(b for b in _bare(outside) if b in job_lines or b.startswith(heading))


def _bare(lines: Sequence[str]) -> list[str]:
    """Lines without their line ending."""
    return [line.rstrip("\r\n") for line in lines]


def table_without(table: str, vault: Path) -> TableChange:
    """``table`` without the block of ``vault``; every other byte is kept."""
    lines = _lines(table)
    span = _block_span(lines, vault)
    if span is None:
        return TableChange(table, "", "absent")
    first, after = span
    new = "".join([*lines[:first], *lines[after:]])
    return TableChange(new, "".join(lines[first:after]), "removed")


def read_crontab(program: str = "crontab") -> str:
    """The user's crontab (``crontab -l``); "" when they have none yet."""
    done = _run([program, "-l"], what="read the crontab")
    if done.returncode != 0:
        why = _first_line(done.stderr)
        if "no crontab" in why.lower():
            return ""
        raise ConfigError(f"`{program} -l` failed (exit {done.returncode}): {why}")
    return done.stdout.decode("utf-8", "surrogateescape")


def write_crontab(table: str, program: str = "crontab") -> None:
    """Replace the user's crontab with ``table`` (``crontab -``)."""
    data = table.encode("utf-8", "surrogateescape")
    done = _run([program, "-"], what="write the crontab", stdin=data)
    if done.returncode != 0:
        why = _first_line(done.stderr)
        raise ConfigError(f"`{program} -` refused the new crontab (exit {done.returncode}): {why}")


def install_crontab(
    launcher: Sequence[str], vault: Path, vault_args: Sequence[str], program: str = "crontab"
) -> TableChange:
    """Put the vault's block in the user's crontab (replacing its old block); the crontab is
    written only when it changes.

    Example:
        >>> install_crontab(["/usr/bin/vaultmem"], vault, ["--vault", str(vault)])  # doctest: +SKIP
    """
    change = merged_table(read_crontab(program), vault, crontab_block(launcher, vault, vault_args))
    if change.changed:
        write_crontab(change.table, program)
    return change


def uninstall_crontab(vault: Path, program: str = "crontab") -> TableChange:
    """Take the vault's block out of the user's crontab (nothing else changes).

    Example:
        >>> uninstall_crontab(vault).action  # doctest: +SKIP
        'removed'
    """
    change = table_without(read_crontab(program), vault)
    if change.changed:
        write_crontab(change.table, program)
    return change


def _run(
    command: Sequence[str], *, what: str, stdin: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    """Run a scheduler's program; ConfigError when it cannot be started."""
    try:
        return subprocess.run(
            list(command), input=stdin, capture_output=True, timeout=60, check=False
        )
    except OSError as exc:
        raise ConfigError(f"cannot {what}: cannot run {command[0]}: {exc.strerror}") from None
    except subprocess.TimeoutExpired:
        raise ConfigError(f"cannot {what}: `{' '.join(command)}` did not finish in 60 s") from None


def _first_line(data: bytes) -> str:
    text = data.decode("utf-8", "replace").strip()
    return text.splitlines()[0] if text else "(no message)"


# --- installing systemd user units -------------------------------------------------------


@dataclass(frozen=True)
class UnitsChange:
    """What installing or removing a vault's units did.

    ``action``: installed, updated, unchanged, removed or absent; ``files``: the vault's
    unit files (installed, or removed); ``written``: those an install wrote (the others
    were already as wanted); ``ran``: the systemctl commands run; ``systemctl``: whether
    systemctl was found (without it nothing is enabled or disabled); ``warnings``: what
    systemctl said when a step of an uninstall failed.
    """

    action: str
    files: tuple[Path, ...]
    written: tuple[Path, ...] = ()
    ran: tuple[str, ...] = ()
    systemctl: bool = True
    warnings: tuple[str, ...] = ()


def _owned_units(folder: Path, vault: Path) -> dict[Path, str | None]:
    """The vault's unit files in ``folder`` with their text (None: not there); a service
    of that name for another vault is a ConfigError (two vault folders of one name)."""
    found: dict[Path, str | None] = {}
    for file_name in (f"{unit_name(vault)}.service", f"{unit_name(vault)}.timer"):
        path = folder / file_name
        try:
            found[path] = path.read_text("utf-8")
        except FileNotFoundError:
            found[path] = None
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read {path}: {exc}") from None
    service = next(iter(found.values()))
    if service is not None and unit_description(vault) not in service.splitlines():
        raise ConfigError(
            f"{next(iter(found))} is not the unit of the vault {vault} (another vault's "
            "folder has the same name?): remove or rename it first"
        )
    return found


def install_units(
    folder: Path, launcher: Sequence[str], vault: Path, vault_args: Sequence[str]
) -> UnitsChange:
    """Write the sweep's units to ``folder`` (the user's systemd folder), then reload
    systemd and enable the timer when systemctl is on PATH.

    Example:
        >>> install_units(units_folder, launcher, vault, args).action  # doctest: +SKIP
        'installed'
    """
    current = _owned_units(folder, vault)
    wanted = {folder / name: text for name, text in unit_files(launcher, vault, vault_args).items()}
    written = tuple(path for path, text in wanted.items() if current.get(path) != text)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for path in written:
            atomic_write(path, wanted[path].encode("utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot write the units to {folder}: {exc.strerror}") from None
    fresh = all(text is None for text in current.values())
    action = "installed" if fresh else ("updated" if written else "unchanged")
    systemctl = shutil.which("systemctl")
    if systemctl is None:
        return UnitsChange(action, tuple(wanted), written, systemctl=False)
    timer = f"{unit_name(vault)}.timer"
    ran = []
    for args in (["daemon-reload"], ["enable", "--now", timer]):
        command = [systemctl, "--user", *args]
        done = _run(command, what="enable the timer")
        ran.append(shlex.join(["systemctl", "--user", *args]))
        if done.returncode != 0:
            raise ConfigError(
                f"the units are in {folder}, but `{ran[-1]}` failed: {_first_line(done.stderr)}"
            )
    return UnitsChange(action, tuple(wanted), written, tuple(ran))


def uninstall_units(folder: Path, vault: Path) -> UnitsChange:
    """Disable the vault's timer (when systemctl is on PATH) and delete its unit files.

    Example:
        >>> uninstall_units(Path.home() / ".config/systemd/user", vault).action  # doctest: +SKIP
        'removed'
    """
    present = [path for path, text in _owned_units(folder, vault).items() if text is not None]
    if not present:
        return UnitsChange("absent", ())
    systemctl = shutil.which("systemctl")
    ran: list[str] = []
    warnings: list[str] = []

    def run(*args: str) -> None:
        assert systemctl is not None
        done = _run([systemctl, "--user", *args], what="disable the timer")
        ran.append(shlex.join(["systemctl", "--user", *args]))
        if done.returncode != 0:
            warnings.append(f"`{ran[-1]}` failed: {_first_line(done.stderr)}")

    if systemctl is not None:
        run("disable", "--now", f"{unit_name(vault)}.timer")
    try:
        for path in present:
            path.unlink()
    except OSError as exc:
        raise ConfigError(f"cannot remove {exc.filename}: {exc.strerror}") from None
    if systemctl is not None:
        run("daemon-reload")
    return UnitsChange(
        "removed", tuple(present), (), tuple(ran), systemctl is not None, tuple(warnings)
    )
