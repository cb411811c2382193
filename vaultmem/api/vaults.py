"""The calls of :mod:`vaultmem.api` over several vaults: what each named vault holds
(`vaults`), and one search across vaults with the hits merged (`search`, `vsearch` and
`query` with `--vault a --vault b` or `--all-vaults`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from vaultmem.api.open_vault import OpenVault
from vaultmem.api.reads import SearchResult, search
from vaultmem.config import Config, NamedVault
from vaultmem.errors import VaultmemError
from vaultmem.model import Hit, SearchRequest

if TYPE_CHECKING:
    from vaultmem.workspace import VaultStatus

__all__ = [
    "VaultHit",
    "VaultOverview",
    "VaultsResult",
    "index_state",
    "search_vaults",
    "vault_overview",
]


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


@dataclass(frozen=True)
class VaultsResult:
    """A search over several vaults: the merged hits, the vaults left out with why
    (``skipped``: (name, one-line reason), e.g. a vault never indexed), and each searched
    vault's own result (its degraded stages, for a hybrid search)."""

    hits: tuple[VaultHit, ...]
    skipped: tuple[tuple[str, str], ...] = ()
    results: tuple[tuple[str, SearchResult], ...] = ()


def search_vaults(
    vaults: Sequence[tuple[str, OpenVault]], request: SearchRequest, *, now: datetime
) -> VaultsResult:
    """One search in each vault (``(name, vault)`` pairs), in the request's mode, merged
    into the best ``request.limit`` hits of all. A vault whose search fails (not indexed,
    a damaged index, no vectors) is left out and named in ``skipped``; when every vault
    fails, the first one's error is raised (its class, and so its exit code, kept).

    How the scores meet. BM25F is not on one scale across indexes: a term's IDF grows
    with the log of the vault's note count, so the same match scores about three times
    higher in a vault of a thousand notes than in one of ten; the raw scores as shipped
    would bury a small vault. Normalising each vault's list by its own hits (dividing by
    its best hit, or z-scores over its top hits) is no better: it gives every vault's best
    hit the same score whether it matches every word or one word by prefix, so a vault
    with nothing relevant interleaves with one that has the answer. So:

    - keyword: each hit's score is divided by its vault's ceiling for the query
      (:meth:`~vaultmem.index.lexical.LexicalIndex.score_ceiling`: the most any note of
      that vault could score, Σ over the query's terms of (K1 + 1) × IDF, a word the
      vault lacks counting at its highest IDF), which depends on the query and the
      vault's statistics, never on which notes matched: the share of the query a note
      matches, in its own vault's terms;
    - semantic: the scores are cosine similarities (moved by the bounded memory prior),
      one scale wherever the vaults use one embedding model;
    - hybrid: a vault's fused scores are relative to its own best hit, so each vault's
      hits are scaled by how well its best hit matches the query in absolute terms: the
      cosine of the best original-query vector match among its hits, else the keyword
      share above.

    One factor per vault keeps each vault's own order (memory prior included); ties go
    by vault order, then path.

    Example:
        >>> pairs = [("work", work), ("home", home)]
        >>> search_vaults(pairs, SearchRequest("redis"), now=now).hits[0].vault  # doctest: +SKIP
        'work'
    """
    merged: list[tuple[float, int, str, VaultHit]] = []
    skipped: list[tuple[str, str]] = []
    results: list[tuple[str, SearchResult]] = []
    first_error: VaultmemError | None = None
    for order, (name, vault) in enumerate(vaults):
        try:
            result = search(vault, request, now=now)
            factor = _merge_factor(vault, request, result)
        except VaultmemError as exc:
            skipped.append((name, str(exc)))
            first_error = first_error or exc
            continue
        results.append((name, result))
        for hit in result.hits:
            score = hit.score * factor
            merged.append((-score, order, hit.path, VaultHit(name, hit, score)))
    if first_error is not None and not results:
        # Say which vault: the error keeps its class (and so its exit code).
        first_error.args = (f"vault {skipped[0][0]}: {first_error}",)
        raise first_error
    merged.sort(key=lambda item: item[:3])
    hits = tuple(item[3] for item in merged[: request.limit])
    return VaultsResult(hits, tuple(skipped), tuple(results))


def _merge_factor(vault: OpenVault, request: SearchRequest, result: SearchResult) -> float:
    """What one vault's hit scores are multiplied by to meet the other vaults' (see
    :func:`search_vaults`)."""
    if not result.hits or request.mode == "semantic":
        return 1.0
    if request.mode == "keyword":
        with vault.lock:
            ceiling = vault.lexical().score_ceiling(request.query)
        return 1.0 / ceiling if ceiling > 0 else 0.0
    top = max(hit.score for hit in result.hits)
    return _evidence(vault, request, result) / top if top > 0 else 0.0


def _evidence(vault: OpenVault, request: SearchRequest, result: SearchResult) -> float:
    """How well a hybrid result's best hit answers the query, on a scale every vault
    shares: the best cosine of the original query's vector list among its hits, else the
    best keyword share (score over the vault's ceiling) of its original keyword list."""
    found = result.query
    if found is None:
        return 1.0
    best = {"vec:original": 0.0, "bm25:original": 0.0}
    for trace in found.traces:
        for name, score in trace.lists:
            if name in best and score is not None:
                best[name] = max(best[name], score.score)
    if best["vec:original"] > 0:
        return best["vec:original"]
    with vault.lock:
        ceiling = vault.lexical().score_ceiling(request.query)
    return best["bm25:original"] / ceiling if ceiling > 0 else 0.0
