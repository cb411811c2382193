"""`doctor`: one report of everything that can be wrong with a vault, and the safe repairs.

Each check returns :class:`Finding` values; nothing here prints. A finding that doctor
can fix names its repair, and :func:`repair` runs those (rebuilding derivable caches,
dropping orphan vectors, removing a dead server's advertisement) and checks again, so
the report after a repair says what is still wrong. What needs a model, a person or
another process (embedding, a malformed note, a stuck process) is listed with the
command to run instead. The facts come from the modules that own them: the indexer's
soundness test, the lock's holder, the embed sweep's records, the link resolver.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from vaultmem.config import Config, RoleConfig
from vaultmem.doctor.findings import (
    PROBE_TIMEOUT_S,
    DoctorReport,
    Finding,
    Surroundings,
)
from vaultmem.doctor.keys import key_findings
from vaultmem.doctor.templates import template_findings
from vaultmem.errors import ConfigError, VaultmemError
from vaultmem.index import manifest as mf
from vaultmem.vault import FileStat, lock_state, walk_notes

if TYPE_CHECKING:
    from vaultmem.embedding import VectorCheck
    from vaultmem.gitmerge.registration import MergeWiring

_LOCKS = (("lock", "index"), ("embed.lock", "embed"))


def diagnose(config: Config, around: Surroundings) -> DoctorReport:
    """Run every check (reads only; probes each configured endpoint once)."""
    git = _Git(config, around.search_path)
    checks: list[tuple[str, Callable[[], list[Finding]]]] = [
        ("configuration", lambda: _configuration(config)),
        ("trust", lambda: _trust(config, around)),
        ("templates", lambda: template_findings(config)),
        ("keys", lambda: key_findings(config)),
        ("lock", lambda: _locks(config.cache_dir)),
        ("index", lambda: _index(config, git)),
        ("git", lambda: _git_merge(git)),
        ("vectors", lambda: _vectors(config)),
        ("endpoints", lambda: _endpoints(config, around.timeout)),
        ("hooks", lambda: _hooks(config, around)),
    ]
    server = around.server
    if server is not None:
        checks.append(("server", lambda: server.findings(config)))
    found: list[Finding] = []
    for name, check in checks:
        try:
            found += check()
        except (VaultmemError, OSError, sqlite3.Error) as exc:
            found.append(Finding(name, "problem", f"check failed: {exc}"))
    return DoctorReport(tuple(found))


def _trust(config: Config, around: Surroundings) -> list[Finding]:
    from vaultmem.doctor.trust import trust_findings

    return [] if around.trust_folder is None else trust_findings(config, around.trust_folder)


def repair(config: Config, report: DoctorReport, around: Surroundings) -> DoctorReport:
    """Run the repair of every repairable finding of ``report`` (each once, in a fixed
    order), then check again; the result lists what was repaired, then what is left.

    A second round runs the repairs that only the first uncovered (re-indexing a deleted
    note's row makes its vectors orphans).
    """
    done: list[Finding] = []
    ran: set[str] = set()
    repairs = dict(_REPAIRS)
    if around.server is not None:
        repairs["server"] = around.server.repair
    current = report
    for _round in range(2):
        todo = [a for a in repairs if a not in ran and any(f.repair == a for f in current.findings)]
        if not todo:
            break
        for action in todo:
            ran.add(action)
            done.append(_run_repair(config, repairs[action], action, current))
        current = diagnose(config, around)
    return DoctorReport((*done, *current.findings))


def _run_repair(
    config: Config, run: Callable[[Config], str], action: str, report: DoctorReport
) -> Finding:
    check = next(f.check for f in report.findings if f.repair == action)
    try:
        message = run(config)
    except (VaultmemError, OSError, sqlite3.Error) as exc:
        return Finding(check, "problem", f"repair failed: {exc}")
    return Finding(check, "ok", message, repair=action, repaired=True)


# -- configuration -------------------------------------------------------------------------


def _configuration(config: Config) -> list[Finding]:
    from vaultmem.config_trust import TRUST_HINT

    # What an untrusted vault may not set is the trust check's to say.
    found = [
        Finding("configuration", "warn", w, fix="fix or remove the key")
        for w in config.warnings
        if not w.endswith(TRUST_HINT)
    ]
    return found or [Finding("configuration", "ok", f"configuration of {config.vault} is valid")]


# -- locks ----------------------------------------------------------------------------------


def _locks(cache_dir: Path) -> list[Finding]:
    found = []
    for name, kind in _LOCKS:
        state = lock_state(cache_dir, name)
        if not state.held:
            found.append(Finding("lock", "ok", f"{kind} lock is free"))
        elif state.holder is not None and state.holder_alive:
            found.append(Finding("lock", "ok", f"{kind} lock held by {state.holder.describe()}"))
        elif state.orphans:
            pids = " ".join(str(p) for p in state.orphans)
            found.append(Finding("lock", "problem", state.busy_message(kind), fix=f"kill {pids}"))
        else:
            found.append(Finding("lock", "ok", f"{kind} lock is being taken by a new process"))
    return found


# -- keyword index, notes, links ------------------------------------------------------------


@dataclass(frozen=True)
class _Manifest:
    state: mf.State
    entries: dict[str, mf.Entry]

    @classmethod
    def read(cls, store: mf.Store) -> _Manifest:
        return cls(store.state(), store.entries())


def _index(config: Config, git: _Git) -> list[Finding]:
    from vaultmem.indexer import index_problem

    cache = config.cache_dir
    try:
        facts = mf.read(cache, None, _Manifest.read)
    except VaultmemError as exc:
        return [Finding("index", "problem", str(exc), repair="index", fix="vaultmem index")]
    problem = index_problem(cache)
    if facts is None or not facts.state.generation:
        if problem:
            return [Finding("index", "problem", problem, repair="index", fix="vaultmem index")]
        never = Finding("index", "warn", "never indexed", repair="index", fix="vaultmem index")
        return [never, *_unmerged(git, set())]
    found = [_index_state(facts, problem)]
    plan = mf.plan({p: (e.mtime_ns, e.size) for p, e in facts.entries.items()}, walk_notes(config))
    # A changed note that no longer parses keeps its old row: `index` cannot help it.
    unparsed = _unparsed(config.vault, [*plan.new, *plan.changed])
    found += [_unparsed_finding(note, git) for note in unparsed]
    failed = {note.path for note in unparsed}
    found += _unmerged(git, failed)
    stale = (
        sum(1 for f in plan.new if f.path not in failed),
        sum(1 for f in plan.changed if f.path not in failed),
        len(plan.removed),
    )
    if any(stale):
        message = "{} new, {} changed, {} removed since the last index".format(*stale)
        found.append(Finding("index", "warn", message, repair="index", fix="vaultmem index"))
    found += [
        Finding("notes", "warn", f"{path}: {'; '.join(warns)}", fix="fix the value in the note")
        for path, warns in sorted((p, e.warnings) for p, e in facts.entries.items() if e.warnings)
    ]
    return found + _links(config, facts.entries)


def _index_state(facts: _Manifest, problem: str) -> Finding:
    state = facts.state
    if problem:
        message = f"keyword index must be rebuilt: {problem}"
        return Finding("index", "problem", message, repair="index", fix="vaultmem index")
    if state.pending:
        message = "an update of the keyword index was interrupted"
        return Finding("index", "warn", message, repair="index", fix="vaultmem index")
    message = (
        f"keyword index holds {len(facts.entries)} notes (generation {state.generation}, "
        f"last index {state.last_index or 'unknown'})"
    )
    return Finding("index", "ok", message)


@dataclass(frozen=True)
class _Unparsed:
    """A note that does not parse: why, and the line of its first conflict region (None:
    it holds none)."""

    path: str
    why: str
    conflict: int | None = None


def _unparsed(root: Path, notes: Iterable[FileStat]) -> list[_Unparsed]:
    """The notes among ``notes`` (new or changed since the index: they are few, so they
    are read) that do not parse, and why."""
    from vaultmem.conflict_markers import conflict_line
    from vaultmem.errors import NoteError
    from vaultmem.note import parse_note

    out = []
    for f in notes:
        try:
            raw = (root / f.path).read_bytes()
            parse_note(f.path, raw)
        except NoteError as exc:
            line = conflict_line(raw.decode("utf-8", "replace")) if b"<<<<<<<" in raw else None
            out.append(_Unparsed(f.path, str(exc), line))
        except OSError:
            continue  # vanished since the walk
    return out


def _unparsed_finding(note: _Unparsed, git: _Git) -> Finding:
    if note.conflict is None:
        fix = "fix the note (`index` skips it)"
        return Finding("notes", "problem", _about(note.path, note.why), fix=fix)
    message = f"{note.path}:{note.conflict}: git conflict markers: a merge was left unfinished"
    return Finding("merge", "problem", message, fix=git.settle(note.path))


def _unmerged(git: _Git, reported: set[str]) -> list[Finding]:
    """Notes git holds as unmerged that were not reported already (no markers read: a
    note deleted on one side and changed on the other, or one not read)."""
    wiring = git.wiring
    if wiring is None:
        return []
    return [
        Finding(
            "merge",
            "problem",
            f"{path}: git holds it as unmerged (a merge, rebase or cherry-pick stopped on it)",
            fix=git.settle(path),
        )
        for path in wiring.unmerged
        if path not in reported
    ]


def _about(path: str, why: str) -> str:
    """``why`` naming ``path`` once (a NoteError names its note already, with the line)."""
    return why if why.startswith(path) else f"{path}: {why}"


def _links(config: Config, entries: Mapping[str, mf.Entry]) -> list[Finding]:
    from vaultmem.doctor.links import link_findings

    return link_findings(config, entries)


# -- git ------------------------------------------------------------------------------------


@dataclass
class _Git:
    """How git merges this vault's notes, read once for the checks that need it."""

    config: Config
    search_path: str

    @cached_property
    def wiring(self) -> MergeWiring | None:
        """The clone's merge wiring (None: the vault is in no git work tree)."""
        from vaultmem.gitmerge.registration import merge_wiring

        notes = [f.path for f in walk_notes(self.config)]
        return merge_wiring(self.config, notes, self.search_path)

    def settle(self, path: str) -> str:
        """The command that settles the conflict regions of the note at ``path``."""
        from vaultmem.gitmerge.registration import settle

        return settle(self.config.vault, self.wiring, path)


def _git_merge(git: _Git) -> list[Finding]:
    """Whether this clone merges notes with vaultmem's driver (see
    :meth:`vaultmem.gitmerge.registration.MergeWiring.findings`)."""
    wiring = git.wiring
    if wiring is None:
        return [Finding("git", "ok", "the vault is in no git repository (nothing to merge)")]
    return [
        Finding("git", severity, message, fix=fix) for severity, message, fix in wiring.findings()
    ]


# -- vectors --------------------------------------------------------------------------------


def _vectors(config: Config) -> list[Finding]:
    from vaultmem.embedding import check_vectors
    from vaultmem.index.records import coverage, store_looks_sound
    from vaultmem.inference.embedders import embedder_for

    embedder = embedder_for(config)
    if embedder is None:
        return [Finding("vectors", "ok", 'vectors are off (embedder = "none")')]
    model, max_chars = embedder.model_id, embedder.max_chars
    embedded = not config.chroma.host
    store = config.cache_dir / "chroma"
    if embedded and store.exists() and not store_looks_sound(config.cache_dir):
        return [_unreadable_store(f"{store}: the database is damaged or truncated")]
    try:
        checks = check_vectors(config, model, max_chars)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # chromadb's Rust core panics with a BaseException
        if not embedded:
            return [Finding("vectors", "problem", str(exc), fix="check the Chroma server")]
        return [_unreadable_store(str(exc))]
    found = [_collection(c) for c in checks]
    found += _coverage(coverage(config, model, max_chars), model, any(c.current for c in checks))
    for c in (c for c in checks if c.current):
        if c.orphans:
            message = f"{c.orphans} vectors of {c.model} belong to no indexed note (orphans)"
            found.append(
                Finding("vectors", "warn", message, repair="vectors", fix="vaultmem embed")
            )
        if c.unrecorded:
            message = (
                f"the record of {c.model} lists {c.unrecorded} vectors the store lacks: "
                "`embed` would never add them"
            )
            found.append(Finding("vectors", "problem", message, repair="vectors"))
    return found


def _unreadable_store(why: str) -> Finding:
    message = f"the vector store cannot be read ({why})"
    fix = "`doctor --repair` deletes it, then `vaultmem embed` rebuilds it"
    return Finding("vectors", "problem", message, repair="vector-store", fix=fix)


def _collection(c: VectorCheck) -> Finding:
    what = "the configured model" if c.current else "kept apart: not the configured model"
    return Finding("vectors", "ok", f"{c.model} ({c.dimension}-d): {c.stored} vectors ({what})")


def _coverage(cov: Mapping[str, int], model: str, stored: bool) -> list[Finding]:
    """Fragments of indexed notes without vectors, from vaultmem's records."""
    lacking = cov["fragments"] - cov["embedded"]
    if not lacking and not cov["unsplit_notes"]:
        return [] if stored else [Finding("vectors", "ok", f"no notes to embed for {model}")]
    parts = [f"{lacking} fragments lack a vector"] if lacking else []
    if cov["unsplit_notes"]:
        parts.append(f"{cov['unsplit_notes']} notes were never embedded")
    message = f"{' and '.join(parts)} ({model})"
    return [Finding("vectors", "warn", message, fix="vaultmem embed")]


# -- endpoints ------------------------------------------------------------------------------


def _endpoints(config: Config, timeout: float) -> list[Finding]:
    roles: list[tuple[str, RoleConfig]] = [
        ("embed", config.embed),
        ("llm", config.llm),
        ("rerank", config.rerank),
    ]
    found = []
    for name, role in roles:
        if name == "embed" and config.embedder != "endpoint":
            found.append(Finding("endpoints", "ok", f"embed: {_embedder_words(config)}"))
        elif not role.url:
            found.append(Finding("endpoints", "ok", f"{name}: not configured"))
        else:
            found.append(probe(name, role, timeout))
    return found


def _embedder_words(config: Config) -> str:
    return "vectors off" if config.embedder == "none" else "the in-process model (no endpoint)"


def probe(name: str, role: RoleConfig, timeout: float = PROBE_TIMEOUT_S) -> Finding:
    """One ``GET <base>/models`` to the role's endpoint: reachable, refusing the key, or
    not answering. The key is sent as the clients send it, and never shown."""
    import httpx

    from vaultmem.inference.http import base_url, connection_reason, display_url, scrub

    shown = f"{name} endpoint {display_url(role.url or '')}"
    headers = {"Authorization": f"Bearer {role.api_key}"} if role.api_key else {}
    fix = f"start the {name} server, or fix [{name}] url"
    try:
        response = httpx.get(base_url(role.url or "") + "/models", headers=headers, timeout=timeout)
    except httpx.TimeoutException:
        return Finding("endpoints", "problem", f"{shown}: no answer in {timeout:g} s", fix=fix)
    except Exception as exc:  # noqa: BLE001 - any failure to connect is the finding
        why = scrub(connection_reason(exc), role.api_key)
        return Finding("endpoints", "problem", f"{shown} is unreachable: {why}", fix=fix)
    if response.status_code in (401, 403):
        message = f"{shown} refused the API key (HTTP {response.status_code})"
        return Finding("endpoints", "problem", message, fix=f"fix [{name}] api_key")
    return Finding("endpoints", "ok", f"{shown} answers (HTTP {response.status_code})")


# -- hooks ----------------------------------------------------------------------------------


def _hooks(config: Config, around: Surroundings) -> list[Finding]:
    from vaultmem.agent.claude_settings import (
        SCOPES,
        hook_problems,
        hook_vault,
        installed,
        read_settings,
        settings_path,
    )

    found = []
    for scope in SCOPES:
        path = settings_path(scope, home=around.home, cwd=around.cwd)
        fix = f"vaultmem hooks install --claude --scope {scope}"
        try:
            _text, settings = read_settings(path)
        except ConfigError as exc:
            found.append(Finding("hooks", "problem", f"{scope}: {exc}", fix=f"fix {path}"))
            continue
        ours = installed(settings)
        if not ours:
            found.append(Finding("hooks", "ok", f"{scope}: no vaultmem hooks ({path})"))
            continue
        broken = sorted({why for command in ours.values() for why in hook_problems(command)})
        events = ", ".join(ours)
        if broken:
            message = f"{scope}: hooks ({events}) cannot run: {'; '.join(broken)}"
            found.append(Finding("hooks", "problem", message, fix=fix))
            continue
        vaults = {v for v in map(hook_vault, ours.values()) if v}
        where = ", ".join(sorted(vaults)) or "found from the agent's folder"
        other = "" if not vaults or str(config.vault) in vaults else " (another vault)"
        found.append(Finding("hooks", "ok", f"{scope}: {events} for vault {where}{other}"))
    return found


# -- repairs --------------------------------------------------------------------------------


def _repair_index(config: Config) -> str:
    from vaultmem.indexer import index_vault

    report = index_vault(config)
    healed = f" (rebuilt: {report.healed})" if report.healed else ""
    return f"indexed: {report.summary}{healed}"


def _repair_vectors(config: Config) -> str:
    from vaultmem.embedding import prune_vectors
    from vaultmem.inference.embedders import embedder_for

    embedder = embedder_for(config)
    if embedder is None:
        return "vectors are off: nothing to prune"
    dropped, struck = prune_vectors(config, embedder.model_id, embedder.max_chars)
    return f"dropped {dropped} orphan vectors; {struck} ids struck from the record"


def _repair_store(config: Config) -> str:
    from vaultmem.embedding import discard_store

    discard_store(config)
    return "deleted the unreadable vector store (run `vaultmem embed` to rebuild it)"


# In this order: the index first, since the vector checks read what it holds.
_REPAIRS: dict[str, Callable[[Config], str]] = {
    "index": _repair_index,
    "vector-store": _repair_store,
    "vectors": _repair_vectors,
}
