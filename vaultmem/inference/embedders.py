"""Choosing the embedder a configuration asks for."""

from __future__ import annotations

from vaultmem.config import Config
from vaultmem.inference.base import Embedder


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
        return OpenAIEmbedder(
            EndpointConfig(
                url=role.url,
                model=role.model,
                api_key=role.api_key,
                batch_size=role.batch_size,
                concurrency=role.concurrency,
                timeout=role.timeout,
                max_retries=role.max_retries,
                tpm_limit=role.tpm_limit,
                max_chars=role.max_chars,
                dimensions=role.dimensions,
            )
        )
    from vaultmem.inference.local import LocalEmbedder

    return LocalEmbedder()
