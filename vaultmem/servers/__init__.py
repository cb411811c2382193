"""Long-lived front ends over :mod:`vaultmem.api`: the MCP server and the REST API."""
