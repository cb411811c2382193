"""Long-lived front ends over :mod:`vaultmem.api`: the MCP server (:mod:`.mcp`), the REST
API (:mod:`.rest`) and `serve` (:mod:`.serve`), which runs both with the warm-path
forwarder (:mod:`.forward`) on one opened vault; :mod:`.auth` is the per-vault token and
:mod:`.health` what `doctor` finds in a server's files.

A front end: it imports the API and what the API's values need, never the CLI, except the
forwarder, which runs the CLI app on the warm vault (declared in pyproject.toml's contracts).
"""
