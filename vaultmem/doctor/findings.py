"""What doctor reports: one :class:`Finding` per fact, the :class:`DoctorReport` of a run,
and what the CLI passes in (:class:`Surroundings`, :class:`ServerChecks`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from vaultmem.config import Config

Severity = Literal["ok", "warn", "problem"]
PROBE_TIMEOUT_S = 2.0


@dataclass(frozen=True)
class Finding:
    """One fact about the vault: ``ok``, ``warn`` (works, worth knowing) or ``problem``.

    ``repair`` names what :func:`repair` does about it ("" when it cannot); ``fix`` is
    the command or step a person runs instead.
    """

    check: str
    severity: Severity
    message: str
    repair: str = ""
    fix: str = ""
    repaired: bool = False

    @property
    def repairable(self) -> bool:
        """Whether ``doctor --repair`` fixes it."""
        return bool(self.repair)

    def as_json(self) -> dict[str, Any]:
        """The ``--json`` shape of one finding."""
        return {
            "check": self.check,
            "severity": self.severity,
            "message": self.message,
            "repairable": self.repairable,
            "repaired": self.repaired,
            "fix": self.fix,
        }


@dataclass(frozen=True)
class DoctorReport:
    """Every finding, in check order."""

    findings: tuple[Finding, ...]

    @property
    def healthy(self) -> bool:
        """No problem left (warnings allowed)."""
        return not any(f.severity == "problem" for f in self.findings)

    def count(self, severity: Severity) -> int:
        """How many findings have ``severity``."""
        return sum(1 for f in self.findings if f.severity == severity)

    def as_json(self) -> dict[str, Any]:
        """``{"healthy": bool, "findings": [...]}``."""
        return {"healthy": self.healthy, "findings": [f.as_json() for f in self.findings]}


@dataclass(frozen=True)
class Surroundings:
    """What doctor looks at outside the vault, passed in by the CLI."""

    home: Path  # for the user's Claude Code settings
    cwd: Path  # for the project's Claude Code settings
    timeout: float = PROBE_TIMEOUT_S  # per endpoint probe
    search_path: str = ""  # PATH, where git looks for the merge driver's program
    server: ServerChecks | None = None  # a running `serve`'s files, judged by its owner
    trust_folder: Path | None = None  # where the user's trust records live (None: no check)


@dataclass(frozen=True)
class ServerChecks:
    """How the servers judge and clean their own files in the cache (advertisement, lock,
    socket, token): passed in by the CLI from :mod:`vaultmem.servers.health`, as doctor
    sits below the front ends and knows none of them."""

    findings: Callable[[Config], list[Finding]]
    repair: Callable[[Config], str]  # removes a dead server's advertisement (and socket)


def config_failure(error: str, warnings: Sequence[str] = ()) -> DoctorReport:
    """The report when the configuration does not load: nothing else can be checked."""
    found = [Finding("configuration", "warn", w, fix="fix the key") for w in warnings]
    found.append(Finding("configuration", "problem", error, fix="fix the value"))
    return DoctorReport(tuple(found))
