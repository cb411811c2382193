"""The calls of :mod:`vaultmem.api` that report on a whole vault and change no note:
`curate` (maintenance proposals) and `reflect` (what recent work kept coming back to)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from vaultmem.api.open_vault import OpenVault, vault_locked
from vaultmem.model import CurateRequest, ReflectRequest

if TYPE_CHECKING:
    from vaultmem.memory.curate import CurateReport
    from vaultmem.memory.reflect import Reflection

__all__ = ["curate", "reflect"]


@vault_locked
def curate(vault: OpenVault, request: CurateRequest, *, now: datetime) -> CurateReport:
    """The maintenance report (:mod:`vaultmem.memory.curate`): proposals with the
    commands that apply them, and retrieval-health probes. Applies nothing.

    Example:
        >>> curate(vault, CurateRequest(), now=now).health  # doctest: +SKIP
        'GOOD'
    """
    from vaultmem.memory.curate import curate as run_curate

    wants = vault.has_vectors() if request.vectors is None else request.vectors
    embedder = vault.embedder(required=bool(request.vectors)) if wants else None
    return run_curate(vault.config, now, embedder=embedder)


@vault_locked
def reflect(vault: OpenVault, request: ReflectRequest, *, now: datetime) -> Reflection:
    """Recurring themes, antipatterns, the notes used most and clusters across sessions
    over the last ``request.days`` (:mod:`vaultmem.memory.reflect`).

    Example:
        >>> reflect(vault, ReflectRequest(days=30), now=now).themes  # doctest: +SKIP
    """
    from vaultmem.memory.reflect import reflect as run_reflect

    return run_reflect(vault.config, now, days=request.days, limit=request.limit)
