"""The agent loop: context surfaced into prompts, and what sessions leave behind.

- :mod:`.surface` (with :mod:`.prompt_gate` and :mod:`.speak`): the notes a prompt gets,
  or silence; the SessionStart brief.
- :mod:`.transcript` and :mod:`.redact`: reading an agent's transcript, secrets removed.
- :mod:`.extract`, :mod:`.handoff`, :mod:`.feedback`: what a session leaves in the vault.
- :mod:`.hooks`: Claude Code's hook protocol (the front end that answers an event is the
  CLI's ``hook`` command); :mod:`.claude_settings` and :mod:`.agent_configs`: registering
  the hooks and the MCP server with Claude Code, Codex and Gemini.

A feature layer: it may import :mod:`vaultmem.memory` (extract writes through
`remember`), retrieval, the stores, models and core values; never the API or a front end.
"""
