"""Which commands exist, where each is defined, and how ``vaultmem --help`` groups them.

:data:`SECTIONS` is the one map of commands: the root group lists them from it (in this
order, under these headings) and imports only the module of the command being run (see
``_Boundary`` in :mod:`vaultmem.cli`). A command registered on ``app`` but missing here
still runs and is listed under "Other"; ``tests/test_help.py`` fails until it is added.
"""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import AbstractContextManager
from typing import Any, Protocol

from typer.core import TyperCommand, TyperGroup

# heading: {command: the module under vaultmem.cli that registers it}
SECTIONS: dict[str, dict[str, str]] = {
    "Search": {
        "search": "read_cmds",
        "vsearch": "vector_cmds",
        "query": "query_cmds",
        "similar": "vector_cmds",
        "get": "read_cmds",
        "timeline": "timeline_cmds",
    },
    "Memory": {
        "remember": "memory_cmds",
        "touch": "memory_cmds",
        "observe": "memory_cmds",
        "pin": "memory_cmds",
        "unpin": "memory_cmds",
        "snooze": "memory_cmds",
        "unsnooze": "memory_cmds",
        "forget": "memory_cmds",
        "restore": "memory_cmds",
        "review": "lifecycle_cmds",
        "promote": "lifecycle_cmds",
        "gc": "lifecycle_cmds",
        "consolidate": "consolidate_cmds",
        "curate": "report_cmds",
        "reflect": "report_cmds",
    },
    "Links": {"link": "link_cmds", "unlink": "link_cmds", "links": "link_cmds"},
    "Agents": {
        "surface": "agent_cmds",
        "hook": "hook_cmds",
        "hooks": "hook_cmds",
        "extract": "capture_cmds",
        "handoff": "capture_cmds",
        "feedback": "capture_cmds",
        "mcp": "mcp_cmds",
    },
    "Servers": {"serve": "serve_cmds", "watch": "watch_cmds"},
    "Maintenance": {
        "init": "index_cmds",
        "bootstrap": "bootstrap_cmds",
        "index": "index_cmds",
        "embed": "vector_cmds",
        "status": "index_cmds",
        "vaults": "vaults_cmds",
        "doctor": "doctor_cmds",
        "trust": "trust_cmds",
        "cron": "doctor_cmds",
        "git": "git_cmds",
        "keys": "keys_cmds",
        "merge-driver": "git_cmds",
        "eval": "eval_cmds",
    },
}
OTHER = "Other"

# command → module, from SECTIONS
MODULES: dict[str, str] = {name: mod for names in SECTIONS.values() for name, mod in names.items()}


class _Formatter(Protocol):
    """What :func:`format_sections` writes to: click's help formatter (typer's own copy,
    which it gives no public name)."""

    width: int

    def section(self, name: str) -> AbstractContextManager[None]: ...

    def write_dl(self, rows: list[tuple[str, str]]) -> None: ...


def format_sections(
    ctx: Any,
    formatter: _Formatter,
    commands: Iterable[tuple[str, TyperCommand | TyperGroup]],
) -> None:
    """Write ``commands`` as one help section per heading of :data:`SECTIONS` (in its
    order), then the ones it does not name under "Other"."""
    shown = [(name, cmd) for name, cmd in commands if not cmd.hidden]
    if not shown:
        return
    limit = formatter.width - 6 - max(len(name) for name, _ in shown)
    by_section: dict[str, list[tuple[str, str]]] = {}
    section_of = {name: s for s, names in SECTIONS.items() for name in names}
    for name, cmd in shown:
        row = (name, cmd.get_short_help_str(limit))
        by_section.setdefault(section_of.get(name, OTHER), []).append(row)
    for section in [*SECTIONS, OTHER]:
        rows = by_section.get(section)
        if rows:
            with formatter.section(section):
                formatter.write_dl(rows)
