"""The operations every front end offers, over one opened vault.

The CLI, the MCP server (:mod:`vaultmem.servers.mcp`) and the REST API
(:mod:`vaultmem.servers.rest`) are thin shells over these functions: each turns its input
into the request values of :mod:`vaultmem.model`, calls one function here and renders
what comes back. No rule lives in a front end.

This package is the designed public surface: front ends write ``from vaultmem import
api`` and call ``api.search(...)``, so this ``__init__`` imports the calls from the
modules that hold them, and nothing else. :mod:`vaultmem.api.open_vault` holds
:class:`OpenVault` (what is costly to open, kept while current; the lock every call
takes), :mod:`vaultmem.api.reads` the calls that read (search, similar, surface, get,
get_each, list, links, timeline, status), :mod:`vaultmem.api.writes` those that write
(remember, reinforce, change, link), :mod:`vaultmem.api.reports` the whole-vault reports
that change no note (curate, reflect); :mod:`vaultmem.api.vaults` those over several
vaults (vault_overview, search_vaults). Like every module of the package it may import the
features below it (retrieval, memory, agent, lookup, model…), never a front end
(:mod:`vaultmem.cli`, :mod:`vaultmem.servers`).
"""

from vaultmem.api.open_vault import OpenVault
from vaultmem.api.reads import (
    NoteLookup,
    NotePage,
    SearchResult,
    excerpt,
    get,
    get_each,
    index_changes,
    links,
    list_notes,
    matching_notes,
    ranking,
    search,
    similar,
    status,
    surface,
    timeline,
)
from vaultmem.api.reports import curate, reflect
from vaultmem.api.vaults import (
    VaultHit,
    VaultOverview,
    VaultsResult,
    search_vaults,
    vault_overview,
)
from vaultmem.api.writes import change, link, reinforce, remember, resolve_for_write

__all__ = [
    "NoteLookup",
    "NotePage",
    "OpenVault",
    "SearchResult",
    "VaultHit",
    "VaultOverview",
    "VaultsResult",
    "change",
    "curate",
    "excerpt",
    "get",
    "get_each",
    "index_changes",
    "link",
    "links",
    "list_notes",
    "matching_notes",
    "ranking",
    "reflect",
    "reinforce",
    "remember",
    "resolve_for_write",
    "search",
    "search_vaults",
    "similar",
    "status",
    "surface",
    "timeline",
    "vault_overview",
]
