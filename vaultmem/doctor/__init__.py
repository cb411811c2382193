"""`doctor`: one report of everything that can be wrong with a vault, and the safe repairs.

- :mod:`~vaultmem.doctor.findings`: the values (a finding, a report, what the CLI passes in);
- :mod:`~vaultmem.doctor.checks`: every check, :func:`~vaultmem.doctor.checks.diagnose` and
  :func:`~vaultmem.doctor.checks.repair`;
- :mod:`~vaultmem.doctor.keys`, :mod:`~vaultmem.doctor.links`,
  :mod:`~vaultmem.doctor.templates`: the checks of owned keys, links and prompt templates.

A feature: it may import the other features (the indexer, the embed sweep, the Claude Code
settings, the git merge wiring) and everything below them, never the API or a front end.
The servers judge their own files (:mod:`vaultmem.servers.health`), handed in by the CLI.
"""
