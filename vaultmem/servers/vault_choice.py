"""Which vault a server's MCP tool works on: the server's own, or one the user named.

An MCP client names a vault by the ``vault`` argument of a tool; only the names of the
user's own config (``[vaults]``, read by the CLI when the server starts) are accepted, so
a client never reaches a folder the user did not name.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from pathlib import Path

from vaultmem.api import OpenVault
from vaultmem.errors import RequestError

__all__ = ["VaultChoice"]


class VaultChoice:
    """The vaults a client may name: this server's (no name), and the vaults the user's
    own config names (``[vaults]``: name → folder), opened by ``opener`` on first use and
    kept. Nothing else: a name is never read as a path, so a client reaches no folder the
    user did not name."""

    def __init__(
        self,
        main: OpenVault,
        named: Mapping[str, Path] | None = None,
        opener: Callable[[Path], OpenVault] | None = None,
    ) -> None:
        self.main = main
        self._named = dict(named or {})
        self._opener = opener
        self._opened: dict[Path, OpenVault] = {}
        self._lock = threading.Lock()

    def names(self) -> list[str]:
        """The names a client may give, in the config's order."""
        return list(self._named)

    def get(self, name: str | None) -> OpenVault:
        """The vault called ``name`` (None: this server's); RequestError for any other."""
        if name is None:
            return self.main
        path = self._named.get(name) if isinstance(name, str) else None
        if path is None or self._opener is None:
            known = ", ".join(self._named) or "none: the user config names no vaults"
            raise RequestError(f"unknown vault {name!r} (named vaults: {known})")
        if path == self.main.config.vault:
            return self.main
        with self._lock:
            if path not in self._opened:
                self._opened[path] = self._opener(path)
            return self._opened[path]

    def close(self) -> None:
        """Close the named vaults this server opened (not its own)."""
        with self._lock:
            for opened in self._opened.values():
                opened.close()
            self._opened.clear()
