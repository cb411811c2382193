"""Configuration: defaults < user config < vault ``.vaultmem.toml`` < ``VAULTMEM_*`` env < flags.

Only the CLI calls :func:`load`; it passes the environment in, so core code never reads
``os.environ``. The result is a frozen :class:`Config` handed to every core function.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vaultmem.errors import ConfigError

VAULT_CONFIG_NAME = ".vaultmem.toml"
DEFAULT_INCLUDE = ("**/*.md",)
DEFAULT_EXCLUDE = (".obsidian/**", ".vaultmem/**", ".git/**", ".trash/**", "node_modules/**")


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

    def collection(self, name: str) -> Collection:
        """The collection called ``name``; ConfigError listing the known ones otherwise."""
        for coll in self.collections:
            if coll.name == name:
                return coll
        known = ", ".join(c.name for c in self.collections) or "none configured"
        raise ConfigError(f"unknown collection {name!r} (known: {known})")


# Environment variables and the dotted config key each one sets.
ENV_KEYS: dict[str, str] = {
    "VAULTMEM_CACHE_DIR": "cache_dir",
    "VAULTMEM_INCLUDE": "include",
    "VAULTMEM_EXCLUDE": "exclude",
    "VAULTMEM_EMBEDDER": "embedder",
    "VAULTMEM_QUERY_EXPAND": "query.expand",
    "VAULTMEM_STM_HALF_LIFE": "memory.stm_half_life",
    "VAULTMEM_PRIOR_WEIGHT": "memory.prior_weight",
    "VAULTMEM_REVIEW_SHARE": "memory.review_share",
    "VAULTMEM_LOCK_TIMEOUT": "lock_timeout",
    "VAULTMEM_CHROMA_HOST": "chroma.host",
    "VAULTMEM_CHROMA_PORT": "chroma.port",
    "VAULTMEM_CHROMA_TOKEN": "chroma.token",
    "VAULTMEM_CHROMA_SSL": "chroma.ssl",
}
for _name in ("embed", "llm", "rerank"):
    for _suffix, _key in (
        ("URL", "url"),
        ("API_KEY", "api_key"),
        ("MODEL", "model"),
        ("BATCH_SIZE", "batch_size"),
        ("CONCURRENCY", "concurrency"),
        ("TIMEOUT", "timeout"),
        ("MAX_RETRIES", "max_retries"),
        ("TPM", "tpm_limit"),
        ("MAX_CHARS", "max_chars"),
        ("DIMENSIONS", "dimensions"),
    ):
        ENV_KEYS[f"VAULTMEM_{_name.upper()}_{_suffix}"] = f"{_name}.{_key}"


def user_config_path(env: Mapping[str, str]) -> Path:
    """Where the user config lives: ``$VAULTMEM_CONFIG`` or ``~/.config/vaultmem/config.toml``."""
    if env.get("VAULTMEM_CONFIG"):
        return Path(env["VAULTMEM_CONFIG"]).expanduser()
    base = env.get("XDG_CONFIG_HOME") or str(Path(env.get("HOME", "~")) / ".config")
    return Path(base).expanduser() / "vaultmem" / "config.toml"


def read_toml(path: Path) -> dict[str, Any]:
    """Parse a TOML file; a missing file is empty, a broken one a ConfigError naming it."""
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        return {}
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None


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
    """Pick the vault: ``--vault PATH|NAME``, else ``VAULTMEM_VAULT``, else search upward."""
    named = user.get("vaults", {}) or {}
    choice = flag or env.get("VAULTMEM_VAULT") or None
    if choice is None:
        choice = user.get("default_vault")
        if choice is None:
            found = find_vault(cwd)
            if found is None:
                raise ConfigError(
                    "no vault found: pass --vault PATH, set VAULTMEM_VAULT, or run inside a "
                    "folder with .vaultmem.toml or .obsidian/ (see `vaultmem init`)"
                )
            return found
    if choice in named:
        choice = str(named[choice])
    path = Path(choice).expanduser()
    if not path.is_absolute():
        path = cwd / path
    if not path.is_dir():
        hint = f" (named vaults: {', '.join(sorted(named))})" if named else ""
        raise ConfigError(f"vault {choice!r} is not a folder or a named vault{hint}")
    return path.resolve()


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
    for name, dotted in ENV_KEYS.items():
        raw = env.get(name)
        if raw is None or raw == "":
            continue
        value: Any = raw
        if dotted in ("include", "exclude"):
            value = [part.strip() for part in split_globs(raw) if part.strip()]
        _set_dotted(layer, dotted, value)
    return layer


def _coerce(value: Any, kind: type, where: str) -> Any:
    if value is None:
        return None
    try:
        if kind is bool and isinstance(value, str):
            lowered = value.strip().lower()
            if lowered not in ("1", "0", "true", "false", "yes", "no", "on", "off"):
                raise ValueError(value)
            return lowered in ("1", "true", "yes", "on")
        if kind in (int, float) and isinstance(value, bool):
            raise ValueError(value)
        return kind(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{where}: expected {kind.__name__}, got {value!r}") from None


_ROLE_TYPES: dict[str, type] = {
    "url": str,
    "api_key": str,
    "model": str,
    "batch_size": int,
    "concurrency": int,
    "timeout": float,
    "max_retries": int,
    "tpm_limit": int,
    "max_chars": int,
    "dimensions": int,
}


def _fraction(value: Any, where: str) -> float:
    number = _coerce(value, float, where)
    if not 0.0 <= number <= 1.0:
        raise ConfigError(f"{where}: expected a number from 0 to 1, got {value!r}")
    return float(number)


def _role(data: Mapping[str, Any], name: str) -> RoleConfig:
    section = data.get(name, {}) or {}
    unknown = set(section) - set(_ROLE_TYPES)
    if unknown:
        raise ConfigError(f"[{name}]: unknown keys {sorted(unknown)}")
    kwargs = {k: _coerce(v, _ROLE_TYPES[k], f"{name}.{k}") for k, v in section.items()}
    return RoleConfig(**kwargs)


def _globs(value: Any, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: expected a list of glob strings")
    return tuple(value)


def _collections(data: Mapping[str, Any]) -> tuple[Collection, ...]:
    out = []
    for name, spec in (data.get("collections", {}) or {}).items():
        if not isinstance(spec, Mapping) or "path" not in spec:
            raise ConfigError(f'[collections.{name}]: needs a path = "folder"')
        out.append(
            Collection(
                name=name,
                path=str(spec["path"]).strip("/"),
                include=_globs(spec.get("include", list(DEFAULT_INCLUDE)), f"{name}.include"),
                exclude=_globs(spec.get("exclude", []), f"{name}.exclude"),
            )
        )
    return tuple(out)


def build(vault: Path, data: Mapping[str, Any]) -> Config:
    """Turn merged TOML-shaped data into a validated :class:`Config` for ``vault``."""
    folders = data.get("folders", {}) or {}
    memory = data.get("memory", {}) or {}
    chroma = data.get("chroma", {}) or {}
    query = data.get("query", {}) or {}
    cache = data.get("cache_dir")
    cache_dir = Path(str(cache)).expanduser() if cache else vault / ".vaultmem"
    if not cache_dir.is_absolute():
        cache_dir = vault / cache_dir
    embedder = str(data.get("embedder", "local"))
    if embedder not in ("local", "endpoint", "none"):
        raise ConfigError(f"embedder: expected local, endpoint or none, got {embedder!r}")
    return Config(
        vault=vault,
        cache_dir=cache_dir,
        include=_globs(data.get("include", list(DEFAULT_INCLUDE)), "include"),
        exclude=_globs(data.get("exclude", list(DEFAULT_EXCLUDE)), "exclude"),
        collections=_collections(data),
        inbox_folder=str(folders.get("inbox", "inbox")).strip("/"),
        memory_folder=str(folders.get("memory", "memory")).strip("/"),
        archive_folder=str(folders.get("archive", "archive")).strip("/"),
        stm_half_life=str(memory.get("stm_half_life", "3d")),
        prior_weight=_fraction(memory.get("prior_weight", 0.2), "memory.prior_weight"),
        review_share=_fraction(memory.get("review_share", 0.3), "memory.review_share"),
        lock_timeout=_coerce(data.get("lock_timeout", 30.0), float, "lock_timeout"),
        embed=_role(data, "embed"),
        llm=_role(data, "llm"),
        rerank=_role(data, "rerank"),
        chroma=ChromaConfig(
            host=chroma.get("host") or None,
            port=_coerce(chroma.get("port", 8000), int, "chroma.port"),
            token=chroma.get("token") or None,
            ssl=_coerce(chroma.get("ssl", False), bool, "chroma.ssl"),
        ),
        embedder=embedder,
        query_expand=_coerce(query.get("expand", False), bool, "query.expand"),
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
    user = read_toml(user_config_path(env))
    vault = resolve_vault(vault_flag, env, cwd, user)
    layered = {k: v for k, v in user.items() if k not in ("vaults", "default_vault")}
    layered = _merge(layered, read_toml(vault / VAULT_CONFIG_NAME))
    layered = _merge(layered, _env_layer(env))
    flags: dict[str, Any] = {}
    for dotted, value in (overrides or {}).items():
        if value is not None:
            _set_dotted(flags, dotted, value)
    layered = _merge(layered, flags)
    if not layered.get("embedder") and layered.get("embed", {}).get("url"):
        layered["embedder"] = "endpoint"
    return build(vault, layered)
