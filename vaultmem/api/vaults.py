"""The calls of :mod:`vaultmem.api` over several vaults: what each named vault holds
(`vaults`), and one keyword search across vaults with the hits merged (`search --vault a
--vault b`, `--all-vaults`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from vaultmem.api.open_vault import OpenVault
from vaultmem.api.reads import search
from vaultmem.config import Config, NamedVault
from vaultmem.errors import RequestError, VaultmemError
from vaultmem.model import Hit, SearchRequest

if TYPE_CHECKING:
    from vaultmem.workspace import VaultStatus

__all__ = ["VaultHit", "VaultOverview", "index_state", "search_vaults", "vault_overview"]


# --- what each vault holds ---------------------------------------------------------------


def index_state(status: VaultStatus) -> str:
    """``none`` (never indexed), ``stale`` (notes new, changed or removed since the last
    `index`, or the index needs rebuilding) or ``fresh``, from what `status` counts."""
    if status.last_index is None and not status.indexed:
        return "none"
    return "stale" if status.stale or status.index_problem else "fresh"


@dataclass(frozen=True)
class VaultOverview:
    """One line of `vaults`: a named vault, its notes and the state of its keyword index.

    ``index``: fresh, stale or none (see :func:`index_state`), or ``missing`` (no such
    folder) or ``error`` (``problem`` says why: its configuration does not load).
    ``notes`` and ``stale`` are None unless the index state could be read.
    """

    name: str | None
    path: str
    default: bool
    index: str
    notes: int | None = None
    stale: int | None = None
    problem: str = ""

    def as_json(self) -> dict[str, object]:
        """The ``--json`` shape: one object per vault."""
        return {**asdict(self), "problem": self.problem or None}


def vault_overview(named: NamedVault, config: Config | None, error: str = "") -> VaultOverview:
    """What ``named`` holds, read as `status` reads it (stat data and the manifest only: no
    note, model or vector store is opened); ``config`` None: it did not load (``error``).

    Example:
        >>> vault_overview(named, config).index  # doctest: +SKIP
        'fresh'
    """
    from vaultmem.workspace import vault_status

    base = VaultOverview(named.name, str(named.path), named.default, "missing")
    if not named.path.is_dir():
        return base
    if config is None:
        return VaultOverview(base.name, base.path, base.default, "error", problem=error)
    try:
        found = vault_status(config)
    except VaultmemError as exc:
        return VaultOverview(base.name, base.path, base.default, "error", problem=str(exc))
    state = index_state(found)
    return VaultOverview(
        base.name, base.path, base.default, state, found.notes, found.stale, found.index_problem
    )


# --- one search over several vaults ------------------------------------------------------


@dataclass(frozen=True)
class VaultHit:
    """A hit of a search over several vaults: the vault it came from (as the caller named
    it), the hit as that vault ranked it, and ``score``, the one the merged list is
    ordered by (see :func:`search_vaults`)."""

    vault: str
    hit: Hit
    score: float

    def as_json(self) -> dict[str, object]:
        """A hit's ``--json`` shape with ``vault``; ``score`` is the merged one and
        ``vault_score`` the score the hit has in its own vault's search."""
        return {
            "vault": self.vault,
            **self.hit.as_json(),
            "score": round(self.score, 6),
            "score_kind": "share",
            "vault_score": round(self.hit.score, 6),
        }


def search_vaults(
    vaults: Sequence[tuple[str, OpenVault]], request: SearchRequest, *, now: datetime
) -> tuple[VaultHit, ...]:
    """One keyword search in each vault (``(name, vault)`` pairs), merged into the best
    ``request.limit`` hits of all.

    How the scores meet: BM25F is not on one scale across indexes. A term's IDF grows
    with the log of the vault's note count, so the same match scores about three times
    higher in a vault of a thousand notes than in one of ten; the raw scores as shipped
    would bury a small vault. Normalising each vault's list by its own hits (dividing by
    its best hit, or z-scores over its top hits) is no better: it gives every vault's best
    hit the same score whether it matches every word or one word by prefix, so a vault
    with nothing relevant interleaves with one that has the answer. Each hit's score is
    instead divided by its vault's ceiling for the query
    (:meth:`~vaultmem.index.lexical.LexicalIndex.score_ceiling`: the most any note of
    that vault could score, Σ over the query's terms of (K1 + 1) × IDF, a word the vault
    lacks counting at its highest IDF). That depends on the query and the vault's
    statistics, never on which notes matched: the merged score says which share of the
    query a note matches, in its own vault's terms, so a note matching every word well
    beats one matching a single word in a vault of any size. One constant per vault keeps
    each vault's own order (memory prior included); ties go by vault order, then path.

    Example:
        >>> pairs = [("work", work), ("home", home)]
        >>> search_vaults(pairs, SearchRequest("redis"), now=now)[0].vault  # doctest: +SKIP
        'work'
    """
    if request.mode != "keyword":
        raise RequestError(f"a search over several vaults is a keyword search, not {request.mode}")
    merged: list[tuple[float, int, str, VaultHit]] = []
    for order, (name, vault) in enumerate(vaults):
        try:
            hits = search(vault, request, now=now).hits
            with vault.lock:
                ceiling = vault.lexical().score_ceiling(request.query) if hits else 1.0
        except VaultmemError as exc:
            # Say which vault: the error keeps its class (and so its exit code).
            exc.args = (f"vault {name}: {exc}",)
            raise
        for hit in hits:
            score = hit.score / ceiling if ceiling > 0 else 0.0
            merged.append((-score, order, hit.path, VaultHit(name, hit, score)))
    merged.sort(key=lambda item: item[:3])
    return tuple(item[3] for item in merged[: request.limit])
