"""Setting a vault up (`init`) and describing its state (`status`)."""

from __future__ import annotations

import contextlib
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

from vaultmem.config import VAULT_CONFIG_NAME, Config
from vaultmem.errors import ConfigError
from vaultmem.index import manifest as mf
from vaultmem.vault import make_cache, walk_notes

VAULT_TOML = """\
# vaultmem configuration for this vault (tracked in git; every key is optional).
# Precedence: defaults < ~/.config/vaultmem/config.toml < this file < VAULTMEM_* < flags.
# What sends data or names a path (endpoint urls and keys, [chroma], cache_dir) applies
# only once you run `vaultmem trust` for this vault; keep API keys in your own config.

# Which files are notes (globs over vault-relative paths; {a,b} braces work).
# include = ["**/*.md"]
# Excludes add to the defaults (.obsidian, .vaultmem, .git, .trash, node_modules);
# "!node_modules/**" takes one back.
# exclude = ["build/**", "vendor/**"]

# Keep the indexes outside the vault (for Obsidian Sync / iCloud vaults).
# cache_dir = "~/.cache/vaultmem/my-vault"

# [folders]
# inbox = "inbox"       # new short-term memories
# memory = "memory"     # promoted long-term notes
# archive = "archive"   # notes moved out by gc

# [collections.work]
# path = "projects"
# include = ["**/*.md"]
"""


def init_vault(folder: Path, *, parents: bool = False) -> list[str]:
    """Create ``.vaultmem.toml`` and ``.vaultmem/.gitignore`` in ``folder`` if missing.

    ``folder`` itself is created when its parent exists; missing parents only with
    ``parents`` (a mistyped path must not become a tree of folders). Returns the
    vault-relative names of what was created (nothing on a rerun).
    """
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"{folder} is not a folder")
    parent = folder.absolute().parent
    if not parents and not folder.exists() and not parent.is_dir():
        raise ConfigError(
            f"cannot make {folder} a vault: {parent} does not exist (--parents creates it too)"
        )
    folder.mkdir(parents=parents, exist_ok=True)
    created = []
    toml = folder / VAULT_CONFIG_NAME
    if not toml.exists():
        toml.write_text(VAULT_TOML, encoding="utf-8")
        created.append(VAULT_CONFIG_NAME)
    ignore = folder / ".vaultmem" / ".gitignore"
    if not ignore.exists():
        make_cache(ignore.parent)
        created.append(".vaultmem/.gitignore")
    return created


@dataclass(frozen=True)
class VaultStatus:
    """Counts that `status` reports."""

    notes: int
    indexed: int
    new: int
    changed: int
    removed: int
    last_index: str | None
    cache_bytes: int
    embeddings: dict[str, dict[str, int]]  # model → embedded / fragments / unsplit_notes
    # Why the next `index` rebuilds the keyword index ("" when it is sound).
    index_problem: str = ""
    # path → its warnings: owned values invalid and treated as absent, keys written twice.
    note_warnings: dict[str, list[str]] = field(default_factory=dict)
    surfaced: int = 0  # `surface` runs in its log
    # Notes the last `index` could not parse (it says why), unchanged since: not stale.
    skipped: int = 0

    @property
    def stale(self) -> int:
        """Notes the next `index` would read or drop."""
        return self.new + self.changed + self.removed

    def as_json(self) -> dict[str, object]:
        """The ``--json`` shape."""
        return {**asdict(self), "stale": self.stale}


def cache_size(cache_dir: Path) -> int:
    """Total bytes under the cache folder."""
    total = 0
    for base, _dirs, files in os.walk(cache_dir):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.stat(os.path.join(base, name)).st_size
    return total


def vault_status(config: Config, models: dict[str, int] | None = None) -> VaultStatus:
    """Compare the vault with the manifest using stat data only (reads no note).

    ``models`` maps embedding model ids to their fragment size; coverage is reported
    for each from vaultmem's own records (no model or vector store is opened).
    """
    from vaultmem.index.records import coverage
    from vaultmem.surface_log import log_count

    facts = mf.read(
        config.cache_dir,
        _IndexFacts({}, mf.State(), {}, {}, ""),
        lambda store: _IndexFacts.read(config.cache_dir, store, bool(models)),
    )
    plan = mf.plan(facts.stats, walk_notes(config))
    # A note the last `index` could not parse is not new or changed until its file is.
    failed = facts.state.skipped_notes()
    skipped = {
        f.path for f in (*plan.new, *plan.changed) if failed.get(f.path) == (f.mtime_ns, f.size)
    }
    return VaultStatus(
        notes=len(plan.new) + len(plan.changed) + len(plan.unchanged),
        indexed=len(facts.stats),
        new=sum(1 for f in plan.new if f.path not in skipped),
        changed=sum(1 for f in plan.changed if f.path not in skipped),
        removed=len(plan.removed),
        last_index=facts.state.last_index,
        cache_bytes=cache_size(config.cache_dir),
        embeddings={
            model: dict(coverage(config, model, max_chars, facts.hashes))
            for model, max_chars in (models or {}).items()
        },
        index_problem=facts.problem,
        note_warnings={p: list(w) for p, w in sorted(facts.warnings.items())},
        surfaced=log_count(config),
        skipped=len(skipped),
    )


@dataclass(frozen=True)
class _IndexFacts:
    """What `status` reads from the manifest: rows' stats, meta, warnings, hashes."""

    stats: dict[str, tuple[int, int]]
    state: mf.State
    warnings: dict[str, tuple[str, ...]]
    hashes: dict[str, str]
    problem: str

    @classmethod
    def read(cls, cache_dir: Path, store: mf.Store, want_hashes: bool) -> _IndexFacts:
        """The facts from an open manifest."""
        state = store.state()
        return cls(
            store.stats(),
            state,
            store.warnings(),
            store.hashes() if want_hashes else {},
            _problem(cache_dir, state),
        )


def _problem(cache_dir: Path, state: mf.State) -> str:
    """Why the keyword index needs `vaultmem index`, read without opening it."""
    from vaultmem.index import lexical

    if not state.generation:
        return ""
    if state.dirty:
        return state.dirty
    if state.pending:
        return "an update of the keyword index was interrupted"
    problem = lexical.check(lexical.location(cache_dir, state.generation), state.fingerprint)
    return f"keyword index {problem}" if problem else ""
