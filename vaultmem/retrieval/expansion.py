"""`expansion`: query expansion by the llm role, a stage of the query pipeline (SPEC §6).

Lexical variants, semantic variants and one hypothetical answer passage, asked for with
the ``expand.j2`` prompt and a JSON reply schema, parsed tolerantly
(:func:`parse_expansion`) and cached per model and prompt under ``<cache>/llm``.
:func:`expansion_stage` runs it for a query, or records why it did not run.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vaultmem.atomic import atomic_write
from vaultmem.config import Config
from vaultmem.errors import VaultmemError
from vaultmem.retrieval.query_types import Backends, Expansion, QueryOptions, Stage
from vaultmem.vault import make_cache

if TYPE_CHECKING:
    # The chat client loads only where an expansion runs: a keyword search never does.
    from vaultmem.inference.llm import LLMClient

__all__ = [
    "EXPANSION_OFF",
    "EXPANSION_SCHEMA",
    "MAX_VARIANTS",
    "expand",
    "expansion_cache_path",
    "expansion_stage",
    "parse_expansion",
]

EXPAND_TEMPLATE = "prompts/expand.j2"
LEXICAL_VARIANTS = 2  # asked of the model
SEMANTIC_VARIANTS = 2
MAX_VARIANTS = 3  # accepted per kind, whatever the model sends
MAX_VARIANT_CHARS = 300
MAX_HYPOTHETICAL_CHARS = 2000
CACHE_DIR = "llm"

_KEYS = {
    "lexical": ("lexical", "lex", "keywords", "keyword"),
    "semantic": ("semantic", "vec", "vector", "paraphrases"),
    "hypothetical": ("hypothetical", "hyde", "passage", "answer"),
}


def _field(value: Mapping[str, Any], kind: str) -> Any:
    for key in _KEYS[kind]:
        if key in value:
            return value[key]
    return None


def _clean(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text[:limit].rstrip()


def _variants(raw: Any, original: str) -> tuple[str, ...]:
    """Usable variant strings: strings only, squeezed, de-duplicated, not the query."""
    items = [raw] if isinstance(raw, str) else raw if isinstance(raw, list) else []
    seen = {" ".join(original.lower().split())}
    out: list[str] = []
    for item in items:
        if not isinstance(item, str):
            continue
        text = _clean(item, MAX_VARIANT_CHARS)
        key = text.lower()
        if text and key not in seen:
            seen.add(key)
            out.append(text)
        if len(out) >= MAX_VARIANTS:
            break
    return tuple(out)


def parse_expansion(reply: str, original: str) -> Expansion:
    """The :class:`Expansion` in an llm reply; :class:`JSONReplyError` when there is none.

    Tolerates what models do: code fences, ``<think>`` blocks, prose around the JSON,
    a lone string where a list was asked for, QMD's key names (``lex``, ``vec``,
    ``hyde``), extra keys, non-string items (dropped), variants equal to the query
    (dropped). A reply with no usable variant at all is an error.

    Example:
        >>> parse_expansion('{"lexical": ["redis ttl"], "semantic": [], "hypothetical": ""}',
        ...                 "cache").lexical
        ('redis ttl',)
    """
    from vaultmem.inference.llm import JSONReplyError, parse_json_reply

    value = parse_json_reply(reply, expect=dict)
    hypothetical = _field(value, "hypothetical")
    if isinstance(hypothetical, list):
        hypothetical = next((h for h in hypothetical if isinstance(h, str)), "")
    hyde = _clean(hypothetical, MAX_HYPOTHETICAL_CHARS) if isinstance(hypothetical, str) else ""
    expansion = Expansion(
        lexical=_variants(_field(value, "lexical"), original),
        semantic=_variants(_field(value, "semantic"), original),
        hypothetical=hyde,
    )
    if not (expansion.lexical or expansion.semantic or expansion.hypothetical):
        keys = ", ".join(sorted(map(str, value))) or "none"
        raise JSONReplyError(f"no lexical, semantic or hypothetical variants (keys: {keys})")
    return expansion


def expansion_cache_path(cache_dir: Path, model: str, prompt: str) -> Path:
    """``<cache>/llm/expand-<sha256(model, prompt)>.json``: one file per model and prompt."""
    digest = hashlib.sha256(f"{model}\n{prompt}".encode()).hexdigest()
    return cache_dir / CACHE_DIR / f"expand-{digest}.json"


def _read_cached(path: Path, original: str) -> Expansion | None:
    try:
        data = json.loads(path.read_bytes())
        found = parse_expansion(json.dumps(data["expansion"]), original)
    except (OSError, ValueError, KeyError, TypeError):
        return None  # missing or damaged: it is only a cache
    return Expansion(found.lexical, found.semantic, found.hypothetical, cached=True)


def _write_cached(path: Path, model: str, original: str, expansion: Expansion) -> None:
    payload = {"model": model, "query": original, "expansion": expansion.as_json()}
    payload["expansion"].pop("cached")  # type: ignore[attr-defined]
    try:
        make_cache(path.parent.parent)  # see expansion_cache_path
        path.parent.mkdir(exist_ok=True)
        atomic_write(path, json.dumps(payload, ensure_ascii=False, indent=1).encode())
    except OSError:
        pass  # an unwritable cache costs a request next time, nothing more


def _strings(count: int) -> dict[str, object]:
    return {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": count}


# The reply shape, sent with JSON mode: llama.cpp servers turn it into a grammar.
EXPANSION_SCHEMA: dict[str, object] = {
    "type": "object",
    "properties": {
        "lexical": _strings(LEXICAL_VARIANTS),
        "semantic": _strings(SEMANTIC_VARIANTS),
        "hypothetical": {"type": "string"},
    },
    "required": ["lexical", "semantic", "hypothetical"],
}


def expand(config: Config, llm: LLMClient, text: str, intent: str | None = None) -> Expansion:
    """Ask the llm for variants of ``text`` (prompt: ``templates/prompts/expand.j2``).

    Answers from the cache when this model saw this exact prompt before (the intent is
    part of the prompt, so it is part of the key). Only a usable reply is cached, so a
    malformed one is asked again next time. Raises :class:`EndpointError` (endpoint
    failed), :class:`JSONReplyError` (unusable reply) or
    :class:`~vaultmem.errors.TemplateError` (a broken vault override).

    Example:
        >>> expand(config, llm, "that caching decision").semantic  # doctest: +SKIP
    """
    from vaultmem.prompts import render

    prompt = render(
        config,
        EXPAND_TEMPLATE,
        query=text,
        intent=intent,
        lexical_count=LEXICAL_VARIANTS,
        semantic_count=SEMANTIC_VARIANTS,
    )
    model = llm.config.model
    path = expansion_cache_path(config.cache_dir, model, prompt)
    cached = _read_cached(path, text)
    if cached is not None:
        return cached
    reply = llm.chat([{"role": "user", "content": prompt}], json_mode=True, schema=EXPANSION_SCHEMA)
    expansion = parse_expansion(reply, text)
    _write_cached(path, model, text, expansion)
    return expansion


EXPANSION_OFF = (
    "off: opt-in with --expand or [query] expand = true (a small local model, SmolLM2, "
    "cost 5.9% MRR@10 on the benchmark)"
)


def expansion_stage(
    config: Config,
    backends: Backends,
    text: str,
    intent: str | None,
    options: QueryOptions,
    strong: bool,
) -> tuple[Expansion | None, Stage]:
    """The expansion of ``text`` when it is asked for and can run, with its stage record."""
    if not options.expand:
        return None, Stage("expansion", "off", EXPANSION_OFF)
    if strong:
        return None, Stage("expansion", "bypassed", "strong keyword signal")
    if backends.llm is None:
        return None, Stage("expansion", "skipped", backends.llm_note)
    from vaultmem.inference.llm import JSONReplyError

    try:
        found = expand(config, backends.llm, text, intent)
    except JSONReplyError as exc:
        return None, Stage("expansion", "failed", f"unusable LLM reply: {exc}")
    except VaultmemError as exc:  # endpoint failure, broken template override
        return None, Stage("expansion", "failed", str(exc), getattr(exc, "endpoint", ""))
    counts = (
        f"{len(found.lexical)} lexical, {len(found.semantic)} semantic variants"
        f"{', a hypothetical passage' if found.hypothetical else ''}"
    )
    return found, Stage("expansion", "ran", counts + (" (cached)" if found.cached else ""))
