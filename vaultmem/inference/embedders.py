"""Choosing the embedder a configuration asks for."""

from __future__ import annotations

from vaultmem.config import Config
from vaultmem.inference.base import Embedder, client_config


def embedder_for(config: Config) -> Embedder | None:
    """The configured embedder: the in-process MiniLM, an endpoint, or None (vectors off).

    Nothing heavy is imported or loaded here; models load on first use.
    """
    if config.embedder == "none":
        return None
    if config.embedder == "endpoint":
        from vaultmem.errors import ConfigError
        from vaultmem.inference.remote import EndpointConfig, OpenAIEmbedder

        role = config.embed
        if not role.url or not role.model:
            raise ConfigError(
                "the embedding endpoint needs both a URL and a model "
                "(VAULTMEM_EMBED_URL and VAULTMEM_EMBED_MODEL, or [embed] url/model)"
            )
        return OpenAIEmbedder(client_config(EndpointConfig, role))
    from vaultmem.inference.local import LocalEmbedder

    role = config.embed
    return LocalEmbedder(cache_dir=config.cache_dir, int8=role.int8, prepared=role.prepared)
