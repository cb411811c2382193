"""Wiring the merge driver into the git repository that holds a vault, and checking it.

Two things make git run `vaultmem merge-driver` for a note, and they travel differently:

- a ``.gitattributes`` line per note glob (``**/*.md merge=vaultmem``), in the vault's
  folder: tracked, so every clone gets it with the next pull;
- the driver itself, ``merge.vaultmem.driver`` in the clone's own ``.git/config``: git
  never shares config, so each clone needs `vaultmem git setup` once (`doctor` says when
  one lacks it). Without it git falls back to its text merge for those notes.

The command is ``vaultmem merge-driver -- %O %A %B %P``: `vaultmem` from the PATH git
runs with, so the line is the same on every machine; ``--`` so that a note named
``-h.md`` is a path, never an option. It names no vault: the driver finds the
vault holding the note (:func:`note_keys`) for its key names.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from vaultmem.config import Config
from vaultmem.errors import ConfigError
from vaultmem.git_runner import git
from vaultmem.properties import BARE, KeyScheme
from vaultmem.vault import expand_braces

__all__ = [
    "ATTRIBUTE",
    "DRIVER",
    "DRIVER_COMMAND",
    "DRIVER_NAME",
    "GitSetup",
    "MergeWiring",
    "attribute_lines",
    "conflict_style",
    "merge_wiring",
    "note_keys",
    "settle",
    "setup_git",
]

DRIVER = "vaultmem"
ATTRIBUTE = f"merge={DRIVER}"
DRIVER_COMMAND = f"{DRIVER} merge-driver -- %O %A %B %P"
DRIVER_NAME = "vaultmem: its frontmatter keys merged by meaning, the rest as text"
_HEADER = "# vaultmem: notes merge with `vaultmem merge-driver` (`vaultmem git setup` adds these)"
ATTRIBUTES_FILE = ".gitattributes"


@dataclass(frozen=True)
class GitSetup:
    """What `vaultmem git setup` did: the repository, the attribute lines it added to
    ``attributes`` and the config keys it set (both empty on a rerun)."""

    repo: Path
    attributes: Path
    added: tuple[str, ...]
    configured: tuple[str, ...]
    created_repo: bool = False


def _git(
    folder: Path, *args: str, stdin: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    """Run git in ``folder`` (:func:`vaultmem.git_runner.git`: paths taken literally, no
    program the repository names); ConfigError when git cannot run."""
    done = git(folder, *args, stdin=stdin)
    if done is None:
        raise ConfigError("cannot run git (is it installed?)")
    return done


def work_tree(folder: Path) -> Path | None:
    """The top of the git work tree holding ``folder`` (None: not in one)."""
    if shutil.which("git") is None:
        return None
    done = _git(folder, "rev-parse", "--show-toplevel")
    if done.returncode != 0:
        return None
    return Path(done.stdout.decode("utf-8", "surrogateescape").strip())


def attribute_lines(config: Config) -> list[str]:
    """The ``.gitattributes`` lines for the vault's note globs (``include``), patterns
    relative to the vault folder: ``**/*.md merge=vaultmem``.

    A glob without a ``/`` matches only at the vault's top in vaultmem, so it is anchored
    (``/*.md``) where git would match it in every folder; braces are expanded (git has
    none). A glob with blanks cannot be written unquoted and is left out.
    """
    lines = []
    for glob in config.include:
        for pattern in expand_braces(glob):
            pattern = pattern.lstrip("/")
            if not pattern or any(c.isspace() for c in pattern):
                continue
            lines.append(f"{pattern if '/' in pattern else '/' + pattern} {ATTRIBUTE}")
    return list(dict.fromkeys(lines))


def setup_git(config: Config, *, create_repo: bool = False) -> GitSetup:
    """Register the merge driver for the vault: attribute lines in the vault's
    ``.gitattributes`` (appended, so they come after any older line for the same notes)
    and ``merge.vaultmem.driver``/``name`` in the repository's config. Idempotent.

    ``create_repo``: run ``git init`` in the vault when it is in no git work tree;
    otherwise such a vault is a ConfigError.
    """
    vault = config.vault
    repo = work_tree(vault)
    created = False
    if repo is None:
        if not create_repo:
            raise ConfigError(
                f"{vault} is not in a git repository; run `git init` there first "
                "(or `vaultmem init --git`)"
            )
        done = _git(vault, "init", "-q")
        if done.returncode != 0:
            raise ConfigError(f"git init failed: {done.stderr.decode(errors='replace').strip()}")
        repo, created = work_tree(vault), True
        if repo is None:
            raise ConfigError(f"git init in {vault} made no work tree")
    attributes = vault / ATTRIBUTES_FILE
    added = _add_attributes(attributes, attribute_lines(config))
    configured = []
    for key, value in (
        ("merge.vaultmem.name", DRIVER_NAME),
        ("merge.vaultmem.driver", DRIVER_COMMAND),
    ):
        if _config_value(vault, key) != value:
            done = _git(vault, "config", "--local", key, value)
            if done.returncode != 0:
                why = done.stderr.decode("utf-8", "replace").strip()
                raise ConfigError(f"git config {key} failed: {why}")
            configured.append(key)
    return GitSetup(repo, attributes, tuple(added), tuple(configured), created)


def _add_attributes(path: Path, lines: Sequence[str]) -> list[str]:
    """Append the ``lines`` that ``path`` does not hold yet (after the header comment)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = ""
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from None
    have = {" ".join(line.split()) for line in text.splitlines()}
    missing = [line for line in lines if line not in have]
    if not missing:
        return []
    out = text if not text or text.endswith("\n") else text + "\n"
    if _HEADER not in have:
        out += ("\n" if out else "") + _HEADER + "\n"
    out += "".join(line + "\n" for line in missing)
    try:
        path.write_text(out, encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot write {path}: {exc.strerror}") from None
    return missing


def _config_value(folder: Path, key: str) -> str:
    done = _git(folder, "config", "--get", key)
    return done.stdout.decode("utf-8", "replace").strip() if done.returncode == 0 else ""


def note_keys(repo: Path, path: str, env: Mapping[str, str]) -> KeyScheme:
    """How vaultmem's keys are named in the note at ``path`` (git's %P, relative to the
    work tree ``repo`` git runs the driver in): the ``Config.keys`` of the vault holding
    it, the nearest folder from the note's up to ``repo`` with ``.vaultmem.toml`` or
    ``.obsidian/``, configured as `vaultmem --vault FOLDER` sees it (``env``: the
    environment). Bare names for a note in no vault. ConfigError when the config is broken.

    Example:
        >>> note_keys(Path("."), "inbox/a.md", {}).prefix  # doctest: +SKIP
        'vm_'
    """
    from vaultmem.config import find_vault, load

    top = repo.resolve()
    vault = find_vault((top / path).parent)
    # A folder above the work tree is not this repository's vault (its .gitattributes
    # could not have started the driver).
    if vault is None or not vault.is_relative_to(top):
        return BARE
    return load(vault_flag=str(vault), env=env, cwd=top).keys


def conflict_style(folder: Path) -> str:
    """The repository's ``merge.conflictStyle`` (``merge`` unless set): how the driver
    writes the conflict regions it leaves, as git would."""
    if shutil.which("git") is None:
        return "merge"
    return _config_value(folder, "merge.conflictStyle").lower() or "merge"


# --------------------------------------------------------------------------- checking


@dataclass(frozen=True)
class MergeWiring:
    """How git merges the vault's notes in this clone, for `doctor`.

    ``driver`` is the configured ``merge.vaultmem.driver`` ("" when this clone has none);
    ``merge_of`` maps each note to its ``merge`` attribute (``vaultmem``, ``union``,
    ``unspecified``…); ``unmerged`` lists the notes git holds as unmerged (a merge,
    rebase or cherry-pick stopped on them); ``runnable`` says whether the driver's
    program is found on the PATH git runs it with.
    """

    repo: Path
    driver: str
    merge_of: dict[str, str]
    unmerged: tuple[str, ...]
    runnable: bool

    @property
    def uncovered(self) -> dict[str, str]:
        """The notes git does not merge with the driver, and their merge attribute."""
        return {p: v for p, v in self.merge_of.items() if v != DRIVER}

    def findings(self) -> list[tuple[Literal["ok", "warn"], str, str]]:
        """What `doctor` says about the wiring: (severity, message, fix) each."""
        setup = "vaultmem git setup"
        found: list[tuple[Literal["ok", "warn"], str, str]] = []
        if not self.driver:
            message = (
                "this clone has no merge driver for notes (merge.vaultmem.driver is set per "
                "clone, in .git/config): git merges them as text and vaultmem's keys conflict"
            )
            found.append(("warn", message, setup))
        elif "--" not in self.driver.split():
            message = (
                f"this clone's merge driver ({self.driver}) has no `--`: a note named like an "
                "option (-h.md) is taken for one"
            )
            found.append(("warn", message, setup))
        elif not self.runnable:
            program = self.driver.split()[0]
            message = f"git runs `{program}` to merge notes, and this PATH has none: merges stop"
            fix = "put vaultmem on PATH (pipx install vaultmem), or give the driver its full path"
            found.append(("warn", message, fix))
        by_value: dict[str, list[str]] = {}
        for path, value in sorted(self.uncovered.items()):
            by_value.setdefault(value, []).append(path)
        for value, paths in by_value.items():
            shown = ", ".join(paths[:3]) + (", …" if len(paths) > 3 else "")
            message = (
                f"{len(paths)} of {len(self.merge_of)} notes merge with merge={value} ({shown})"
            )
            if value == "union":
                message += ": a key both sides changed is kept twice"
            fix = f"{setup}, and commit {ATTRIBUTES_FILE}"
            if value not in ("unspecified", "unset"):
                fix = f"remove the merge={value} line of the attributes, then {fix}"
            found.append(("warn", message, fix))
        if not found:
            found.append(("ok", f"{len(self.merge_of)} notes merge with vaultmem's driver", ""))
        return found


def settle(vault: Path, wiring: MergeWiring | None, path: str) -> str:
    """The command that settles the conflict regions of the note at vault-relative
    ``path``: by hand, or, for a merge git still holds open that ran without the driver,
    the driver again (``git checkout -m`` merges the path anew, with it)."""

    def command(*args: str) -> str:
        return "`" + shlex.join(["git", "-C", str(vault), *args]) + "`"

    by_hand = "keep the right lines of each <<<<<<< … >>>>>>> region, delete the markers"
    if wiring is None or path not in wiring.unmerged:
        return f"edit {path}: {by_hand}, and save it"
    add = command("add", "--", path)
    if not wiring.driver:
        again = command("checkout", "-m", "--", path)
        return (
            f"`vaultmem git setup`, then {again} merges it again with vaultmem's driver (no "
            f"conflict on vaultmem's keys); settle what is left, then {add}"
        )
    return f"edit {path} ({by_hand}; or {command('mergetool', '--', path)}), then {add}"


def merge_wiring(config: Config, notes: Sequence[str], search_path: str) -> MergeWiring | None:
    """The :class:`MergeWiring` of the vault's clone (None: the vault is in no git
    work tree). ``notes`` are vault-relative paths; ``search_path`` is the PATH to look
    the driver's program up in."""
    vault = config.vault
    repo = work_tree(vault)
    if repo is None:
        return None
    driver = _config_value(vault, "merge.vaultmem.driver")
    program = driver.split()[0] if driver.split() else DRIVER
    runnable = shutil.which(program, path=search_path or None) is not None
    merge_of: dict[str, str] = {}
    if notes:
        done = _git(vault, "check-attr", "-z", "--stdin", "merge", stdin="\0".join(notes).encode())
        if done.returncode == 0:
            fields = done.stdout.decode("utf-8", "surrogateescape").split("\0")
            for i in range(0, len(fields) - 2, 3):
                merge_of[fields[i]] = fields[i + 2]
    listed = _git(vault, "ls-files", "-u", "-z")
    unmerged: dict[str, None] = {}
    if listed.returncode == 0:
        for entry in listed.stdout.decode("utf-8", "surrogateescape").split("\0"):
            if "\t" in entry:
                unmerged[entry.split("\t", 1)[1]] = None
    known = set(notes)
    return MergeWiring(repo, driver, merge_of, tuple(p for p in unmerged if p in known), runnable)
