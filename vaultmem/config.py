"""Configuration: defaults < user config < vault ``.vaultmem.toml`` < ``VAULTMEM_*`` env < flags.

Only the CLI calls :func:`load`; it passes the environment in, so core code never reads
``os.environ``. The result is a frozen :class:`Config` handed to every core function.
"""

from __future__ import annotations

import difflib
import posixpath
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vaultmem.cache_folder import settle_cache
from vaultmem.config_trust import CREDENTIAL_RANK, Source, hold_back_credentials, vault_layer
from vaultmem.config_values import (
    at_least,
    coerce,
    fraction,
    one_of,
    read_toml,
    table,
)
from vaultmem.environment import ENV_KEYS, ENV_PREFIX, KNOWN_ENV
from vaultmem.errors import ConfigError
from vaultmem.properties import BARE, KeyScheme, parse_shared
from vaultmem.tuning import DEFAULT_TUNING, TUNING_KEYS, MemoryTuning, memory_tuning
from vaultmem.vocabulary import DEFAULT_SURFACE_PROFILE, SURFACE_PROFILES

VAULT_CONFIG_NAME = ".vaultmem.toml"
DEFAULT_INCLUDE = ("**/*.md",)
DEFAULT_EXCLUDE = (".obsidian/**", ".vaultmem/**", ".git/**", ".trash/**", "node_modules/**")
# How the embedding endpoint is told a query from a document (vaultmem.inference.remote).
INPUT_TYPE_STYLES = ("auto", "jina", "voyage", "cohere", "none")


@dataclass(frozen=True)
class RoleConfig:
    """One inference role (embed, llm or rerank): where it lives and how hard to push it."""

    url: str | None = None
    api_key: str | None = None
    model: str | None = None
    batch_size: int = 64
    concurrency: int = 4
    timeout: float = 30.0
    max_retries: int = 5
    tpm_limit: int | None = None
    max_chars: int = 2000
    dimensions: int | None = None
    input_type_style: str = "auto"  # the embed role's only (INPUT_TYPE_STYLES)
    # The embed role's only: True runs the in-process model's int8-compute copy (2.05x
    # the fragments per CPU-second; needs onnx, a dependency). Off by default since issue
    # 30: it cost 0.015 MRR@10 on example-vault and on the documentation corpus against
    # the shipped graph (BENCHMARKS.md), over the 0.003 it was allowed.
    int8: bool = False
    # The embed role's only: True files the shipped graph's optimised copy (~90 MB) in the
    # vault's cache, so that a hook's prompt loads the model in a tenth of the CPU.
    prepared: bool = True

    def __repr__(self) -> str:
        # Keys must never reach logs or tracebacks, repr included.
        key = "***" if self.api_key else None
        return f"RoleConfig(url={self.url!r}, model={self.model!r}, api_key={key!r})"


@dataclass(frozen=True)
class ChromaConfig:
    """Where vectors live: embedded on disk (``host`` None) or on a Chroma server."""

    host: str | None = None
    port: int = 8000
    token: str | None = None
    ssl: bool = False

    def __repr__(self) -> str:
        # The token must never reach logs or tracebacks through a repr.
        token = "***" if self.token else None
        return (
            f"ChromaConfig(host={self.host!r}, port={self.port!r}, token={token!r}, "
            f"ssl={self.ssl!r})"
        )


@dataclass(frozen=True)
class Collection:
    """A named part of the vault, used as a search filter (``--collection``)."""

    name: str
    path: str
    include: tuple[str, ...] = DEFAULT_INCLUDE
    exclude: tuple[str, ...] = ()


@dataclass(frozen=True)
class Config:
    """Everything a vaultmem run needs to know, resolved once at the edge."""

    vault: Path
    cache_dir: Path
    include: tuple[str, ...] = DEFAULT_INCLUDE
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE
    collections: tuple[Collection, ...] = ()
    inbox_folder: str = "inbox"
    memory_folder: str = "memory"
    archive_folder: str = "archive"
    stm_half_life: str = "3d"
    # Memory-aware ranking (SPEC §5): reach of the prior, share of slots for review notes.
    prior_weight: float = 0.2
    review_share: float = 0.3
    lock_timeout: float = 30.0
    embed: RoleConfig = field(default_factory=RoleConfig)
    llm: RoleConfig = field(default_factory=RoleConfig)
    rerank: RoleConfig = field(default_factory=RoleConfig)
    chroma: ChromaConfig = field(default_factory=ChromaConfig)
    embedder: str = "local"
    # LLM query expansion is opt-in: SmolLM2-135M expansions cost 5.9% MRR@10 on the
    # man-page benchmark (BENCHMARKS.md); turn it on for a model that helps.
    query_expand: bool = False
    # The SessionStart hook starts `serve` for the vault when none runs, so every prompt
    # hook after it searches vectors too; at the end of a session, at most this many notes
    # that were surfaced and then used are reinforced (0: none).
    hooks_start_server: bool = True
    hooks_reinforce_max: int = 5
    # The surfacing profile `hook prompt` and `surface` use unless told (SURFACE_PROFILES).
    hooks_profile: str = DEFAULT_SURFACE_PROFILE
    # `extract` without an LLM adds the learned capture layer (vaultmem.agent.
    # capture_learned: cue features and the in-process MiniLM's frame verdict, weights
    # fitted on the four labelled capture sets) to the phrase rules. On by default: left
    # out of the fit, the four sets give mean recall 0.51 at precision 0.91 with it, 0.51
    # at 0.84 with the rules alone (BENCHMARKS.md).
    capture_semantic: bool = True
    # CortexGraph's thresholds, β, danger zone and auto-reinforcement ([memory] keys).
    tuning: MemoryTuning = DEFAULT_TUNING
    # How vaultmem's frontmatter keys are named in the notes: bare by default (``status``),
    # or ``[keys] prefix = "vm_"`` (``vm_status``) so they never meet a user's own keys.
    keys: KeyScheme = BARE
    # When the user trusts the vault's own files (`vaultmem trust`, and nothing they cover
    # changed since): their digest at load ("" otherwise, and for a vault that needs no
    # trust). Its routing keys were applied, and its template overrides are used while
    # the files still have that digest (vaultmem.vault_trust).
    trust_digest: str = ""
    # Unknown keys met in the configuration files: the CLI prints them once.
    warnings: tuple[str, ...] = ()

    @property
    def trusted(self) -> bool:
        """Whether the user trusted the vault's own files when this config was loaded."""
        return bool(self.trust_digest)

    def collection(self, name: str) -> Collection:
        """The collection called ``name``; ConfigError listing the known ones otherwise."""
        for coll in self.collections:
            if coll.name == name:
                return coll
        known = ", ".join(c.name for c in self.collections) or "none configured"
        raise ConfigError(f"unknown collection {name!r} (known: {known})")


def user_config_path(env: Mapping[str, str]) -> Path:
    """Where the user config lives: ``$VAULTMEM_CONFIG`` or ``~/.config/vaultmem/config.toml``."""
    if env.get("VAULTMEM_CONFIG"):
        return Path(env["VAULTMEM_CONFIG"]).expanduser()
    base = env.get("XDG_CONFIG_HOME") or str(Path(env.get("HOME", "~")) / ".config")
    return Path(base).expanduser() / "vaultmem" / "config.toml"


def find_vault(start: Path) -> Path | None:
    """The nearest folder upward from ``start`` holding ``.vaultmem.toml`` or ``.obsidian/``."""
    here = start.resolve()
    for folder in (here, *here.parents):
        if (folder / VAULT_CONFIG_NAME).is_file() or (folder / ".obsidian").is_dir():
            return folder
    return None


def resolve_vault(
    flag: str | None, env: Mapping[str, str], cwd: Path, user: Mapping[str, Any]
) -> Path:
    """Pick the vault: ``--vault PATH|NAME``, else ``VAULTMEM_VAULT``, else the nearest
    vault upward from ``cwd``, else the user config's ``default_vault`` (as git finds its
    repository: the folder you stand in wins over a configured default)."""
    named = table(user, "vaults")
    choice = flag or env.get("VAULTMEM_VAULT") or None
    if choice is None:
        found = find_vault(cwd)
        if found is not None:
            return found
        choice = coerce(user.get("default_vault"), str, "default_vault")
        if choice is None:
            raise ConfigError(
                "no vault found: pass --vault PATH, set VAULTMEM_VAULT, run inside a "
                "folder with .vaultmem.toml or .obsidian/ (see `vaultmem init`), or set "
                "default_vault in the user config"
            )
    if choice in named:
        choice = coerce(named[choice], str, f"vaults.{choice}")
    path = _vault_path(choice, cwd)
    if not path.is_dir():
        hint = f" (named vaults: {', '.join(sorted(named))})" if named else ""
        raise ConfigError(f"vault {choice!r} is not a folder or a named vault{hint}")
    return path.resolve()


def _vault_path(choice: str, cwd: Path) -> Path:
    """A vault path as written (``~`` expanded, relative to ``cwd``), not checked."""
    path = Path(choice).expanduser()
    return path if path.is_absolute() else cwd / path


@dataclass(frozen=True)
class NamedVault:
    """A vault the user config names: ``[vaults] work = "~/notes"``, or ``default_vault``
    given as a path (``name`` None). ``path`` is as written, resolved when it exists."""

    name: str | None
    path: Path
    default: bool


def named_vaults(env: Mapping[str, str], cwd: Path) -> tuple[NamedVault, ...]:
    """The user config's ``[vaults]`` in the order written, ``default_vault`` marked (a
    default that is a path and no named vault's comes last, unnamed).

    Example:
        >>> named_vaults({"HOME": "/home/me"}, Path("/"))  # doctest: +SKIP
        (NamedVault(name='work', path=PosixPath('/home/me/notes'), default=True),)
    """
    user = read_toml(user_config_path(env))
    default = coerce(user.get("default_vault"), str, "default_vault")
    found = []
    for name, value in table(user, "vaults").items():
        path = _vault_path(coerce(value, str, f"vaults.{name}"), cwd)
        found.append((name, path.resolve() if path.is_dir() else path))
    default_path = None
    if default is not None and default not in dict(found):
        path = _vault_path(default, cwd)
        default_path = path.resolve() if path.is_dir() else path
    vaults = [NamedVault(n, p, n == default or p == default_path) for n, p in found]
    if default_path is not None and not any(v.default for v in vaults):
        vaults.append(NamedVault(None, default_path, True))
    return tuple(vaults)


def _merge(base: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def _set_dotted(data: dict[str, Any], dotted: str, value: Any) -> None:
    *parents, leaf = dotted.split(".")
    for part in parents:
        data = data.setdefault(part, {})
    data[leaf] = value


def split_globs(raw: str) -> list[str]:
    """Split a comma-separated glob list, keeping commas inside ``{a,b}`` braces."""
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for ch in raw:
        if ch == "," and depth == 0:
            parts.append("".join(current))
            current = []
            continue
        depth += (ch == "{") - (ch == "}")
        current.append(ch)
    parts.append("".join(current))
    return parts


def _env_layer(env: Mapping[str, str]) -> dict[str, Any]:
    layer: dict[str, Any] = {}
    setters: dict[str, str] = {}  # dotted key -> the variable that set it
    for name, dotted in ENV_KEYS.items():
        raw = env.get(name)
        if raw is None or raw == "":
            continue
        other = setters.setdefault(dotted, name)
        if other != name and env[other].strip() != raw.strip():
            # Two names of one setting (VAULTMEM_EMBED_TPM, VAULTMEM_EMBED_TPM_LIMIT):
            # neither silently wins.
            raise ConfigError(
                f"{other}={env[other]!r} and {name}={raw!r} set the same {dotted}: "
                "unset one, or give both the same value"
            )
        value: Any = raw
        if dotted in ("include", "exclude"):
            value = [part.strip() for part in split_globs(raw) if part.strip()]
        _set_dotted(layer, dotted, value)
    return layer


# Each role's keys: (type, lowest value, whether the lowest value itself is refused).
_ROLE_TYPES: dict[str, tuple[type, float | None, bool]] = {
    "url": (str, None, False),
    "api_key": (str, None, False),
    "model": (str, None, False),
    "batch_size": (int, 1, False),
    "concurrency": (int, 1, False),
    "timeout": (float, 0, True),
    "max_retries": (int, 0, False),
    "tpm_limit": (int, 1, False),
    "max_chars": (int, 1, False),
    "dimensions": (int, 1, False),
}

# Every key a configuration file may set, by section ("" is the top level).
KNOWN_KEYS: dict[str, frozenset[str]] = {
    "": frozenset(
        {"include", "exclude", "cache_dir", "embedder", "lock_timeout", "collections"}
        | {"folders", "memory", "query", "hooks", "capture", "embed", "llm", "rerank", "chroma"}
        | {"keys"}
    ),
    "folders": frozenset({"inbox", "memory", "archive"}),
    "memory": frozenset({"stm_half_life", "prior_weight", "review_share"} | set(TUNING_KEYS)),
    "query": frozenset({"expand"}),
    "hooks": frozenset({"start_server", "reinforce_max", "profile"}),
    "capture": frozenset({"semantic"}),
    "keys": frozenset({"prefix", "shared"}),
    "chroma": frozenset({"host", "port", "token", "ssl"}),
    # the embed role's own keys
    "embed": frozenset(_ROLE_TYPES) | {"input_type_style", "int8", "prepared"},
    "llm": frozenset(_ROLE_TYPES),
    "rerank": frozenset(_ROLE_TYPES),
}
COLLECTION_KEYS = frozenset({"path", "include", "exclude"})
# Only the user config names vaults.
USER_KEYS = frozenset({"vaults", "default_vault"})


def _unknown(
    where: str, key: str, choices: Mapping[str, str], source: str, what: str = "key"
) -> str:
    """The warning for ``key`` (shown as ``where``); ``choices`` maps known names to how to
    write them."""
    best = difflib.get_close_matches(key, list(choices), n=1, cutoff=0.6)
    hint = f"; did you mean {choices[best[0]]!r}?" if best else " (ignored)"
    return f"unknown {what} {where!r} in {source}{hint}"


def unknown_variables(env: Mapping[str, str]) -> list[str]:
    """A warning for each ``VAULTMEM_*`` variable of ``env`` that vaultmem does not read,
    naming the nearest one it does (``VAULTMEM_EMBED_TMP`` → ``VAULTMEM_EMBED_TPM``)."""
    cut = len(ENV_PREFIX)
    # Compared without the prefix every name shares, which would make any two look alike.
    choices = {name[cut:]: name for name in sorted(KNOWN_ENV)}
    return [
        _unknown(name, name[cut:], choices, "the environment", what="variable")
        for name in sorted(env)
        if name.startswith(ENV_PREFIX) and name not in KNOWN_ENV
    ]


def unknown_keys(data: Mapping[str, Any], source: str, *, user: bool = False) -> list[str]:
    """A warning for each key of one configuration file that vaultmem does not know.

    Each names the nearest known key; a top-level key is also compared with the keys of
    every section (``batch_size`` → ``embed.batch_size``).
    """
    top = KNOWN_KEYS[""] | (USER_KEYS if user else frozenset())
    choices = {k: k for k in top}
    for section, keys in KNOWN_KEYS.items():
        for k in sorted(keys) if section else ():
            choices.setdefault(k, f"{section}.{k}")
    found = [_unknown(k, k, choices, source) for k in data if k not in top]
    tables: list[tuple[str, Any, frozenset[str]]] = [
        (section, data.get(section), keys) for section, keys in KNOWN_KEYS.items() if section
    ]
    collections = data.get("collections")
    if isinstance(collections, Mapping):
        tables += [(f"collections.{n}", t, COLLECTION_KEYS) for n, t in collections.items()]
    for prefix, section, keys in tables:
        if isinstance(section, Mapping):
            named = {k: f"{prefix}.{k}" for k in keys}
            found += [_unknown(f"{prefix}.{k}", k, named, source) for k in section if k not in keys]
    return found


def _role(data: Mapping[str, Any], name: str) -> RoleConfig:
    kwargs: dict[str, Any] = {}
    keys = table(data, name)
    if name == "embed" and "input_type_style" in keys:
        where = "embed.input_type_style"
        kwargs["input_type_style"] = one_of(keys["input_type_style"], where, INPUT_TYPE_STYLES)
    for flag in ("int8", "prepared"):
        if name == "embed" and flag in keys:
            kwargs[flag] = coerce(keys[flag], bool, f"embed.{flag}")
    for key, value in keys.items():
        if key in _ROLE_TYPES:
            kind, low, above = _ROLE_TYPES[key]
            where = f"{name}.{key}"
            kwargs[key] = (
                coerce(value, kind, where)
                if low is None
                else at_least(value, kind, where, low, above=above)
            )
    return RoleConfig(**kwargs)


def _globs(value: Any, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: expected a list of glob strings")
    return tuple(value)


def excludes(value: Any, where: str = "exclude") -> tuple[str, ...]:
    """The exclude globs: the defaults (:data:`DEFAULT_EXCLUDE`), then each of ``value``
    in order: a glob is added, ``!glob`` takes that glob back out (a default included).

    Example:
        >>> excludes(["build/**", "!node_modules/**"])[-2:]
        ('.trash/**', 'build/**')
    """
    out = list(DEFAULT_EXCLUDE)
    for pattern in _globs(value, where) if value is not None else ():
        if pattern.startswith("!"):
            out = [p for p in out if p != pattern[1:]]
        elif pattern and pattern not in out:
            out.append(pattern)
    return tuple(out)


def _folder(value: Any, where: str, *, root_ok: bool = True) -> str:
    """A folder setting: a relative path that stays inside the vault, normalised."""
    text = coerce(value, str, where)
    rel = posixpath.normpath(text.strip("/")) if text.strip("/") else "."
    leaves = rel == ".." or rel.startswith("../")
    if text.startswith(("/", "~")) or leaves or (rel == "." and not root_ok):
        raise ConfigError(
            f"{where}: expected a folder inside the vault, relative to its root, got {value!r}"
        )
    return "" if rel == "." else rel


def _collections(data: Mapping[str, Any]) -> tuple[Collection, ...]:
    out = []
    for name, spec in table(data, "collections").items():
        if not isinstance(spec, Mapping) or "path" not in spec:
            raise ConfigError(f'[collections.{name}]: needs a path = "folder"')
        out.append(
            Collection(
                name=name,
                path=_folder(spec["path"], f"collections.{name}.path"),
                include=_globs(spec.get("include", list(DEFAULT_INCLUDE)), f"{name}.include"),
                exclude=_globs(spec.get("exclude", []), f"{name}.exclude"),
            )
        )
    return tuple(out)


_PREFIX_RE = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,15}")


def key_scheme(table: Mapping[str, Any]) -> KeyScheme:
    """The ``[keys]`` table as a :class:`KeyScheme`: ``prefix`` (letters, digits, ``_``,
    ``-``; ``""`` for bare keys) and ``shared`` (owned keys that stay bare)."""
    prefix = coerce(table.get("prefix", ""), str, "keys.prefix")
    if prefix and not _PREFIX_RE.fullmatch(prefix):
        raise ConfigError(
            f"keys.prefix: expected up to 16 letters, digits, '_' or '-' starting with a "
            f'letter (e.g. "vm_"), got {prefix!r}'
        )
    shared = table.get("shared", [])
    if not isinstance(shared, list):
        raise ConfigError(f"keys.shared: expected a list of key names, got {shared!r}")
    try:
        return KeyScheme(prefix, parse_shared(shared))
    except ValueError as exc:
        raise ConfigError(f"keys.shared: {exc}") from None


def _cache_dir(vault: Path, value: Any) -> Path:
    if value is None or value == "":
        return vault / ".vaultmem"
    if not isinstance(value, str):
        raise ConfigError(f"cache_dir: expected a folder path (a string), got {value!r}")
    path = Path(value).expanduser()
    return path if path.is_absolute() else vault / path


def build(
    vault: Path, data: Mapping[str, Any], warnings: Sequence[str] = (), *, trust_digest: str = ""
) -> Config:
    """Turn merged TOML-shaped data into a validated :class:`Config` for ``vault``.

    A value of the wrong type or out of range is a ConfigError naming the key and what
    it expects; ``warnings`` (unknown keys, from :func:`unknown_keys`) ride along;
    ``trust_digest``: the digest of the vault's own files when the user trusts them
    (:mod:`vaultmem.vault_trust`).
    """
    folders = table(data, "folders")
    memory = table(data, "memory")
    chroma = table(data, "chroma")
    query = table(data, "query")
    hooks = table(data, "hooks")
    embedder = coerce(data.get("embedder", "local"), str, "embedder")
    if embedder not in ("local", "endpoint", "none"):
        raise ConfigError(f"embedder: expected local, endpoint or none, got {embedder!r}")
    port = at_least(chroma.get("port", 8000), int, "chroma.port", 1)
    if port > 65535:
        raise ConfigError(f"chroma.port: expected a port from 1 to 65535, got {port!r}")
    cache_dir = _cache_dir(vault, data.get("cache_dir"))
    # Every door reads the cache after loading its configuration: one that is not
    # vaultmem's own (another user's, a link, a folder it did not make) is never read,
    # and an unmarked one it may adopt is emptied and marked before anything reads it.
    refused = settle_cache(cache_dir)
    if refused:
        raise ConfigError(f"cannot use the cache folder {cache_dir}: {refused}")
    return Config(
        vault=vault,
        cache_dir=cache_dir,
        include=_globs(data.get("include", list(DEFAULT_INCLUDE)), "include"),
        exclude=excludes(data.get("exclude")),
        collections=_collections(data),
        inbox_folder=_folder(folders.get("inbox", "inbox"), "folders.inbox"),
        memory_folder=_folder(folders.get("memory", "memory"), "folders.memory"),
        archive_folder=_folder(folders.get("archive", "archive"), "folders.archive", root_ok=False),
        stm_half_life=str(memory.get("stm_half_life", "3d")),
        prior_weight=fraction(memory.get("prior_weight", 0.2), "memory.prior_weight"),
        review_share=fraction(memory.get("review_share", 0.3), "memory.review_share"),
        tuning=memory_tuning(memory),
        lock_timeout=at_least(data.get("lock_timeout", 30.0), float, "lock_timeout", 0),
        embed=_role(data, "embed"),
        llm=_role(data, "llm"),
        rerank=_role(data, "rerank"),
        chroma=ChromaConfig(
            host=coerce(chroma.get("host"), str, "chroma.host") or None,
            port=port,
            token=coerce(chroma.get("token"), str, "chroma.token") or None,
            ssl=coerce(chroma.get("ssl", False), bool, "chroma.ssl"),
        ),
        embedder=embedder,
        query_expand=coerce(query.get("expand", False), bool, "query.expand"),
        hooks_start_server=coerce(hooks.get("start_server", True), bool, "hooks.start_server"),
        hooks_reinforce_max=at_least(hooks.get("reinforce_max", 5), int, "hooks.reinforce_max", 0),
        hooks_profile=one_of(
            hooks.get("profile", DEFAULT_SURFACE_PROFILE), "hooks.profile", tuple(SURFACE_PROFILES)
        ),
        capture_semantic=coerce(
            table(data, "capture").get("semantic", True), bool, "capture.semantic"
        ),
        keys=key_scheme(table(data, "keys")),
        trust_digest=trust_digest,
        warnings=tuple(warnings),
    )


def load(
    *,
    vault_flag: str | None,
    env: Mapping[str, str],
    cwd: Path,
    overrides: Mapping[str, Any] | None = None,
) -> Config:
    """Resolve the vault and merge every configuration layer.

    ``overrides`` holds flag values as dotted keys (``{"cache_dir": "..."}``).

    Example:
        >>> load(vault_flag="example-vault", env={}, cwd=Path("."))  # doctest: +SKIP
    """
    found = _layers(vault_flag, env, cwd, overrides)
    return build(found.vault, found.data, found.warnings, trust_digest=found.trust_digest)


@dataclass(frozen=True)
class Checked:
    """What loading the configuration gave `doctor`: the config, or why there is none."""

    config: Config | None
    warnings: tuple[str, ...] = ()  # unknown keys, found even when a value is invalid
    error: str = ""


def check(
    *,
    vault_flag: str | None,
    env: Mapping[str, str],
    cwd: Path,
    overrides: Mapping[str, Any] | None = None,
) -> Checked:
    """:func:`load` that returns a ConfigError as ``error`` instead of raising it, with the
    unknown-key warnings of the files that did parse (for `doctor`)."""
    try:
        found = _layers(vault_flag, env, cwd, overrides)
    except ConfigError as exc:
        return Checked(None, (), str(exc))
    warnings = tuple(found.warnings)
    try:
        built = build(found.vault, found.data, warnings, trust_digest=found.trust_digest)
        return Checked(built, warnings)
    except ConfigError as exc:
        return Checked(None, warnings, str(exc))


@dataclass(frozen=True)
class _Layered:
    """Every layer merged (not yet validated), with what loading them found."""

    vault: Path
    data: dict[str, Any]
    warnings: list[str]
    trust_digest: str


def _layers(
    vault_flag: str | None,
    env: Mapping[str, str],
    cwd: Path,
    overrides: Mapping[str, Any] | None,
) -> _Layered:
    """The vault, every layer merged (not yet validated), the warnings (unknown keys, what
    an untrusted vault may not set, credentials held back) and whether the vault is
    trusted."""
    user_path = user_config_path(env)
    user = read_toml(user_path)
    vault = resolve_vault(vault_flag, env, cwd, user)
    vault_file = read_toml(vault / VAULT_CONFIG_NAME)
    warnings = unknown_keys(user, str(user_path), user=True)
    warnings += unknown_keys(vault_file, VAULT_CONFIG_NAME)
    warnings += unknown_variables(env)
    trust_digest, vault_file, refused = vault_layer(vault, vault_file, env)
    warnings += refused
    flags: dict[str, Any] = {}
    for dotted, value in (overrides or {}).items():
        if value is not None:
            _set_dotted(flags, dotted, value)
    own = {k: v for k, v in user.items() if k not in USER_KEYS}
    sources = [
        Source("the user config", CREDENTIAL_RANK["user"], own),
        Source(VAULT_CONFIG_NAME, CREDENTIAL_RANK["vault"], vault_file),
        Source("the environment", CREDENTIAL_RANK["env"], _env_layer(env), env=True),
        Source("the command line", CREDENTIAL_RANK["user"], flags),
    ]
    layered: dict[str, Any] = {}
    for source in sources:
        layered = _merge(layered, source.data)
    # Excludes add up, layer after layer (each may take one back with "!glob").
    added = [g for s in sources for g in _globs(s.data.get("exclude", []), "exclude")]
    if added:
        layered["exclude"] = added
    warnings += hold_back_credentials(layered, sources)
    if not layered.get("embedder") and layered.get("embed", {}).get("url"):
        layered["embedder"] = "endpoint"
    return _Layered(vault, layered, warnings, trust_digest)
