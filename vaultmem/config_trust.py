"""What each configuration layer may decide: the rules :mod:`vaultmem.config` applies while
it merges the layers, for every door (CLI, hooks, servers, the warm path) alike.

Two rules, both about where the user's data and credentials go:

- **A vault's config can only narrow until the user trusts the vault.** A vault's
  ``.vaultmem.toml`` came with the vault, perhaps from someone else: without trust
  (:mod:`vaultmem.vault_trust`) the keys of :data:`ROUTING_KEYS` (endpoints, the Chroma
  server, credentials, the cache folder) and the widening values of
  :data:`WIDENING_KEYS` are ignored, with one warning naming `vaultmem trust`.
- **A credential goes only where its own layer, or a layer ranked higher, points.** An
  API key or Chroma token is dropped, with one warning, when the URL it would be sent to
  was set by a layer ranked below the credential's (:data:`CREDENTIAL_RANK`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vaultmem.environment import ENV_KEYS

if TYPE_CHECKING:
    from vaultmem.vault_trust import TrustState

__all__ = [
    "CREDENTIALS",
    "CREDENTIAL_RANK",
    "ROUTING_KEYS",
    "WIDENING_KEYS",
    "Source",
    "TrustReport",
    "has_overrides",
    "hold_back_credentials",
    "routing_keys",
    "trust_report",
    "vault_layer",
]

VAULT_FILE = ".vaultmem.toml"
# What a vault's own .vaultmem.toml may set only once the user trusts the vault: where
# data is sent (endpoints, the Chroma server), credentials, and a folder outside the vault
# to write and delete in. Without trust a vault's config can only narrow: which notes,
# collections, folders, half-lives, key names, profiles, batch sizes.
ROUTING_KEYS: tuple[str, ...] = (
    "cache_dir",
    *(f"{role}.{key}" for role in ("embed", "llm", "rerank") for key in ("url", "api_key")),
    "chroma.host",
    "chroma.port",
    "chroma.token",
    "chroma.ssl",
)
# Keys whose value decides whether notes or prompts leave the machine: an untrusted vault
# may set only the values that keep them home.
WIDENING_KEYS: dict[str, tuple[Any, ...]] = {
    "embedder": ("local", "none"),
    "query.expand": (False,),
}
TRUST_HINT = "review them, then `vaultmem trust`"
# Where a vault keeps template overrides (the second is the legacy place, in the cache).
OVERRIDE_FOLDERS = (".vaultmem.d/templates", ".vaultmem/templates")


def _dotted_value(data: Mapping[str, Any], dotted: str) -> tuple[bool, Any]:
    """Whether ``data`` sets the dotted key, and its value."""
    here: Any = data
    for part in dotted.split("."):
        if not isinstance(here, Mapping) or part not in here:
            return False, None
        here = here[part]
    return True, here


def routing_keys(data: Mapping[str, Any]) -> list[str]:
    """The keys of a vault's config that only a trusted vault may set, dotted: those of
    :data:`ROUTING_KEYS`, then the widening ones set to a value that sends data out.

    Example:
        >>> routing_keys({"embed": {"url": "http://x", "model": "m"}, "embedder": "none"})
        ['embed.url']
    """
    found = [key for key in ROUTING_KEYS if _dotted_value(data, key)[0]]
    for key, allowed in WIDENING_KEYS.items():
        present, value = _dotted_value(data, key)
        if present and value not in allowed:
            found.append(key)
    return found


def _without_keys(data: Mapping[str, Any], dotted: Sequence[str]) -> dict[str, Any]:
    """A copy of ``data`` (tables one level deep) without the dotted keys."""
    out: dict[str, Any] = {k: dict(v) if isinstance(v, Mapping) else v for k, v in data.items()}
    for key in dotted:
        section, _, leaf = key.rpartition(".")
        here = out.get(section) if section else out
        if isinstance(here, dict):
            here.pop(leaf, None)
    return out


def has_overrides(vault: Path) -> bool:
    """Whether the vault ships template overrides (a non-empty ``.vaultmem.d/templates/``,
    or the legacy ``.vaultmem/templates/``), which are used only once it is trusted."""
    for rel in OVERRIDE_FOLDERS:
        try:
            if os.listdir(vault / rel):
                return True
        except OSError:
            continue
    return False


def vault_layer(
    vault: Path, data: dict[str, Any], env: Mapping[str, str]
) -> tuple[str, dict[str, Any], list[str]]:
    """The digest of the vault's trusted files ("" when the user does not trust it), its
    config as it applies (without its routing keys when untrusted) and the one warning
    saying what was left out.

    The trust record is read only when trust would change something: a vault whose
    config routes nothing and that ships no templates costs two ``stat`` calls.
    """
    gated = routing_keys(data)
    overrides = has_overrides(vault)
    if not gated and not overrides:
        return "", data, []
    from vaultmem.vault_trust import trust_folder, trust_state

    state = trust_state(trust_folder(env), vault)
    if state.trusted:
        return state.digest, data, []
    parts = []
    if gated:
        parts.append(f"{VAULT_FILE} sets {', '.join(gated)} (ignored)")
    if overrides:
        parts.append("its template overrides are not used (the packaged templates are)")
    why = (
        "this vault's .vaultmem.toml or .vaultmem.d/ changed since you trusted it"
        if state.status == "changed"
        else "this vault is not trusted"
    )
    return "", _without_keys(data, gated), [f"{why}: {'; '.join(parts)}; {TRUST_HINT}"]


# How far a layer may direct another layer's credential: a credential goes to a URL set in
# its own layer or in one ranked at least as high. The user config is the user's alone; the
# environment of a hook or a server is often a project's (Claude Code's project
# settings.json `env`, a repository's .envrc); a vault's file, even trusted, came with the
# vault. No URL at all (the default) ranks above every layer.
CREDENTIAL_RANK = {"default": 3, "user": 2, "env": 1, "vault": 0}
# Each credential, and the keys that together say where it is sent.
CREDENTIALS: dict[str, tuple[str, ...]] = {
    **{f"{role}.api_key": (f"{role}.url",) for role in ("embed", "llm", "rerank")},
    "chroma.token": ("chroma.host", "chroma.port", "chroma.ssl"),
}


@dataclass(frozen=True)
class Source:
    """One configuration layer: its name in messages, its rank for credentials
    (:data:`CREDENTIAL_RANK`), its data; ``env``: the environment, whose keys are named
    by their variables."""

    name: str
    rank: int
    data: Mapping[str, Any]
    env: bool = False

    def where(self, dotted: str) -> str:
        """The layer that set ``dotted``, naming the variable for the environment."""
        if self.env:
            names = [n for n, key in ENV_KEYS.items() if key == dotted]
            return f"{self.name} ({names[0]})" if names else self.name
        return self.name


def _setter(sources: Sequence[Source], dotted: str) -> Source | None:
    """The layer whose value of ``dotted`` wins (None: no layer sets it)."""
    for source in reversed(sources):
        if _dotted_value(source.data, dotted)[0]:
            return source
    return None


def hold_back_credentials(layered: dict[str, Any], sources: Sequence[Source]) -> list[str]:
    """Drop from ``layered`` (the merge of ``sources``, lowest precedence first) each
    credential whose destination was set by a layer ranked below the credential's own;
    one warning for each.

    Example:
        >>> user = Source("the user config", 2, {"embed": {"url": "https://a", "api_key": "k"}})
        >>> env = Source("the environment", 1, {"embed": {"url": "http://b"}}, env=True)
        >>> merged = {"embed": {"url": "http://b", "api_key": "k"}}
        >>> len(hold_back_credentials(merged, [user, env])), merged
        (1, {'embed': {'url': 'http://b'}})
    """
    warnings = []
    for credential, destination in CREDENTIALS.items():
        given = _setter(sources, credential)
        setters = [s for s in (_setter(sources, key) for key in destination) if s is not None]
        lowest = min(setters, key=lambda s: s.rank, default=None)
        if given is None or lowest is None or lowest.rank >= given.rank:
            continue
        section, leaf = credential.split(".")
        layered[section] = {k: v for k, v in layered[section].items() if k != leaf}
        target = next(k for k in destination if _setter(sources, k) is lowest)
        warnings.append(
            f"{credential} from {given.where(credential)} is not sent: {target} comes from "
            f"{lowest.where(target)}, which may not direct your credentials; set the URL "
            "and its credential in the same place"
        )
    return warnings


@dataclass(frozen=True)
class TrustReport:
    """What trust means for one vault now, for `trust`, `doctor` and `status`: its state,
    the keys of its config that trust applies, and how many template overrides it ships."""

    state: TrustState
    gated: tuple[str, ...]
    overrides: int

    @property
    def needed(self) -> bool:
        """Whether trusting the vault would change anything now."""
        return bool(self.gated or self.overrides)

    def unlocks(self) -> str:
        """What trust applies, in words ("" when nothing)."""
        parts = []
        if self.gated:
            parts.append(f"{VAULT_FILE}'s {', '.join(self.gated)}")
        if self.overrides:
            parts.append(f"{self.overrides} template override(s)")
        return " and ".join(parts)

    def summary(self) -> str:
        """One line: trusted or not, since when, and what that applies."""
        state = self.state
        unlocks = self.unlocks()
        if state.status == "trusted":
            used = f": {unlocks} are used" if unlocks else " (nothing in it needs trust now)"
            return f"trusted since {state.since}{used}"
        if state.status == "changed":
            return (
                f"changed since you trusted it ({state.since}): "
                f"{unlocks or 'nothing'} not used until `vaultmem trust`"
            )
        if not unlocks:
            return "not trusted (nothing in it needs trust: it routes nothing, ships no templates)"
        return f"not trusted: {unlocks} not used until `vaultmem trust`"

    def as_json(self) -> dict[str, Any]:
        """The ``--json`` shape."""
        return {
            "status": self.state.status,
            "since": self.state.since or None,
            "applies": list(self.gated),
            "template_overrides": self.overrides,
        }


def trust_report(vault: Path, data: Mapping[str, Any], folder: Path) -> TrustReport:
    """The :class:`TrustReport` of ``vault`` whose ``.vaultmem.toml`` holds ``data``, with
    trust records in ``folder``."""
    from vaultmem.vault_trust import trust_state

    count = 0
    for rel in OVERRIDE_FOLDERS:
        root = vault / rel
        if root.is_dir():
            count += sum(1 for p in root.rglob("*") if p.is_file())
    return TrustReport(trust_state(folder, vault), tuple(routing_keys(data)), count)
