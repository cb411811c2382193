"""`doctor`'s template check: overrides belong in ``.vaultmem.d/templates/``, not the cache.

Until issue 19 a vault's template overrides lived in ``.vaultmem/templates/``, inside the
cache: git-ignored, so never versioned with the vault, and lost with the cache. They are
still read there for this release (:func:`vaultmem.prompts.template_source`); this check
says which are left and prints the command that moves them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vaultmem.config import Config

if TYPE_CHECKING:
    from vaultmem.doctor.findings import Finding

__all__ = ["template_findings"]


def template_findings(config: Config) -> list[Finding]:
    """One ``templates`` finding: overrides left in the cache folder (warn, with the move
    command), else how many the vault overrides (ok)."""
    from vaultmem.doctor.findings import Finding
    from vaultmem.prompts import (
        LEGACY_OVERRIDE_DIR,
        OVERRIDE_DIR,
        legacy_overrides,
        move_command,
        override_dir,
    )

    legacy = legacy_overrides(config)
    if legacy:
        shadowed = [n for n in legacy if (override_dir(config) / n).is_file()]
        read = [n for n in legacy if n not in shadowed]
        parts = []
        if read:
            parts.append(f"read from there until you move them: {', '.join(read)}")
        if shadowed:
            parts.append(f"ignored, {OVERRIDE_DIR}/ has its own: {', '.join(shadowed)}")
        message = (
            f"{len(legacy)} template override(s) in {LEGACY_OVERRIDE_DIR}/ (the git-ignored "
            f"cache; they belong in {OVERRIDE_DIR}/): {'; '.join(parts)}"
        )
        fix = (
            move_command(config)
            if read
            else f"compare them with {OVERRIDE_DIR}/, then delete {LEGACY_OVERRIDE_DIR}/"
        )
        return [Finding("templates", "warn", message, fix=fix)]
    where = override_dir(config)
    count = sum(1 for p in where.rglob("*") if p.is_file()) if where.is_dir() else 0
    if count:
        used = "" if config.trusted else " (not used until you trust the vault)"
        message = f"{count} template override(s) in {OVERRIDE_DIR}/{used}"
        return [Finding("templates", "ok", message)]
    return [Finding("templates", "ok", "no template overrides: the packaged templates are used")]
