"""The environment variables vaultmem reads, named once.

:mod:`vaultmem.config` turns :data:`ENV_KEYS` into configuration and warns about a
``VAULTMEM_*`` variable outside :data:`KNOWN_ENV` (naming the nearest known one); the
thin client (:mod:`vaultmem.client`) forwards exactly :data:`COMMAND_ENV` to a running
server, and the server applies exactly those to the command it runs, nothing else: a
shell's API keys, tokens and other secrets never leave the process that holds them.

No imports: the thin client loads this module before every command.
"""

from __future__ import annotations

# What every variable of vaultmem's is called.
ENV_PREFIX = "VAULTMEM_"

# Environment variables and the dotted config key each one sets.
ENV_KEYS: dict[str, str] = {
    "VAULTMEM_CACHE_DIR": "cache_dir",
    "VAULTMEM_INCLUDE": "include",
    "VAULTMEM_EXCLUDE": "exclude",
    "VAULTMEM_EMBEDDER": "embedder",
    "VAULTMEM_EMBED_INPUT_TYPE_STYLE": "embed.input_type_style",
    "VAULTMEM_EMBED_INT8": "embed.int8",
    "VAULTMEM_EMBED_PREPARED": "embed.prepared",
    "VAULTMEM_QUERY_EXPAND": "query.expand",
    "VAULTMEM_HOOKS_START_SERVER": "hooks.start_server",
    "VAULTMEM_HOOKS_REINFORCE_MAX": "hooks.reinforce_max",
    "VAULTMEM_CAPTURE_SEMANTIC": "capture.semantic",
    "VAULTMEM_STM_HALF_LIFE": "memory.stm_half_life",
    "VAULTMEM_PRIOR_WEIGHT": "memory.prior_weight",
    "VAULTMEM_REVIEW_SHARE": "memory.review_share",
    # CortexGraph's knobs, by the names its own variables have (CORTEXGRAPH_…).
    "VAULTMEM_DECAY_BETA": "memory.beta",
    "VAULTMEM_PROMOTE_THRESHOLD": "memory.promote_threshold",
    "VAULTMEM_PROMOTE_USE_COUNT": "memory.promote_use_count",
    "VAULTMEM_PROMOTE_WINDOW": "memory.promote_window",
    "VAULTMEM_FORGET_THRESHOLD": "memory.forget_threshold",
    "VAULTMEM_REVIEW_DANGER_ZONE_MIN": "memory.danger_zone_min",
    "VAULTMEM_REVIEW_DANGER_ZONE_MAX": "memory.danger_zone_max",
    "VAULTMEM_AUTO_REINFORCE": "memory.auto_reinforce",
    "VAULTMEM_LOCK_TIMEOUT": "lock_timeout",
    "VAULTMEM_CHROMA_HOST": "chroma.host",
    "VAULTMEM_CHROMA_PORT": "chroma.port",
    "VAULTMEM_CHROMA_TOKEN": "chroma.token",
    "VAULTMEM_CHROMA_SSL": "chroma.ssl",
}
for _name in ("embed", "llm", "rerank"):
    for _suffix, _key in (
        ("URL", "url"),
        ("API_KEY", "api_key"),
        ("MODEL", "model"),
        ("BATCH_SIZE", "batch_size"),
        ("CONCURRENCY", "concurrency"),
        ("TIMEOUT", "timeout"),
        ("MAX_RETRIES", "max_retries"),
        ("TPM", "tpm_limit"),
        # The name ClawMem users know, for the same key: set both only to one value.
        ("TPM_LIMIT", "tpm_limit"),
        ("MAX_CHARS", "max_chars"),
        ("DIMENSIONS", "dimensions"),
    ):
        ENV_KEYS[f"{ENV_PREFIX}{_name.upper()}_{_suffix}"] = f"{_name}.{_key}"

# The other variables vaultmem reads (none of them configuration), and what each does.
OTHER_ENV: dict[str, str] = {
    "VAULTMEM_VAULT": "the vault, when there is no --vault",
    "VAULTMEM_CONFIG": "the user config file, instead of ~/.config/vaultmem/config.toml",
    "VAULTMEM_NOW": "the clock, pinned (ISO 8601), for tests and replays",
    "VAULTMEM_NO_SERVER": "1: run every command in process, never through `serve`",
    "VAULTMEM_SERVE_TOKEN": "the server's bearer token (`serve`, and the agents it configures)",
    "VAULTMEM_TEST_FORWARD_DELAY": "tests only: seconds each forwarded answer waits",
}

# Every VAULTMEM_* name vaultmem reads; any other is a warning.
KNOWN_ENV: frozenset[str] = frozenset({*ENV_KEYS, *OTHER_ENV})

# Everything a forwarded command (`search`, `vsearch`, `query`, `surface`, `hook prompt`)
# reads from the environment: the configuration above; which vault and which user config
# (VAULTMEM_VAULT, VAULTMEM_CONFIG, HOME and XDG_CONFIG_HOME for ~ and the config file);
# the pinned clock; the hook's fallback log (XDG_CACHE_HOME); the width click wraps
# --help to. Never the server token: no forwarded command needs it.
COMMAND_ENV: frozenset[str] = frozenset(
    {
        *ENV_KEYS,
        "VAULTMEM_VAULT",
        "VAULTMEM_CONFIG",
        "VAULTMEM_NOW",
        "HOME",
        "XDG_CONFIG_HOME",
        "XDG_CACHE_HOME",
        "COLUMNS",
        "LINES",
    }
)
