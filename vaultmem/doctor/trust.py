"""`doctor`'s trust check: whether the user trusts the vault's own files, and what that
applies or leaves out (:mod:`vaultmem.config_trust`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from vaultmem.config import VAULT_CONFIG_NAME, Config

if TYPE_CHECKING:
    from vaultmem.doctor.findings import Finding

__all__ = ["trust_findings"]


def trust_findings(config: Config, folder: Path) -> list[Finding]:
    """One ``trust`` finding: ok when the vault is trusted or needs no trust, warn when
    its config routes something or it ships templates that are left out until
    `vaultmem trust` (``folder``: where trust records live)."""
    from vaultmem.config_trust import trust_report
    from vaultmem.config_values import read_toml
    from vaultmem.doctor.findings import Finding

    report = trust_report(config.vault, read_toml(config.vault / VAULT_CONFIG_NAME), folder)
    summary = f"the vault is {report.summary()}"
    if report.state.trusted or not report.needed:
        return [Finding("trust", "ok", summary)]
    review = "review .vaultmem.toml and .vaultmem.d/"
    if report.state.status == "changed":
        review = "review what changed (git log -p -- .vaultmem.toml .vaultmem.d)"
    return [Finding("trust", "warn", summary, fix=f"{review}, then `vaultmem trust`")]
