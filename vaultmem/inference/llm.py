"""Chat completions over any OpenAI-compatible endpoint, and tolerant JSON reply parsing.

``LLMClient`` serves the **llm** role (query expansion, extraction, merge review,
the rerank fallback). It asks for JSON output (``response_format={"type":
"json_object"}``) where the server supports it; a server that refuses the option
(an HTTP 400/422 naming ``response_format``) is asked again without it, once, and
the client remembers not to send it again. Retries, timeouts and error messages
follow :mod:`vaultmem.inference.http`: every failure is one
:class:`~vaultmem.errors.EndpointError` line naming the URL, never the key.

Callers should say "JSON" in their prompt: OpenAI itself refuses JSON mode when the
messages do not mention it, and servers without JSON mode need the instruction.

``parse_json_reply`` digs the JSON out of what models actually write: code fences,
prose around the answer, ``<think>`` reasoning blocks.

``openai`` is imported lazily (inside functions) so that ``vaultmem --help`` and BM25
search never pay for it.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from vaultmem.errors import EndpointError
from vaultmem.inference.http import (
    Failure,
    call_with_retries,
    check_endpoint,
    check_retry_settings,
    display_url,
    make_openai_client,
    one_line,
    translate_openai_error,
)

if TYPE_CHECKING:  # pragma: no cover - typing only
    from openai import OpenAI

log = logging.getLogger(__name__)

_ROLE = "llm endpoint"

# A 400/422 whose message mentions one of these is the server refusing JSON mode,
# not the request as a whole (llama.cpp, older vLLM, some proxies).
_JSON_MODE_HINTS = ("response_format", "response format", "json_object")


@dataclass(frozen=True, kw_only=True)
class LLMConfig:
    """How to reach one OpenAI-compatible chat-completions endpoint.

    ``api_key`` is excluded from ``repr`` so a logged config cannot leak it.
    ``max_tokens`` is the default reply budget (reasoning models spend part of it
    thinking, hence the generous default). ``json_mode=False`` never sends
    ``response_format`` (for servers that accept it but answer worse with it).
    ``backoff_base``/``backoff_max`` shape the exponential backoff between retries.
    """

    url: str
    model: str
    api_key: str | None = field(default=None, repr=False)
    timeout: float = 60.0
    max_retries: int = 3
    max_tokens: int = 1024
    json_mode: bool = True
    backoff_base: float = 0.5
    backoff_max: float = 30.0

    def __post_init__(self) -> None:
        check_endpoint(self.url, self.model, _ROLE)
        check_retry_settings(
            _ROLE,
            max_retries=self.max_retries,
            timeout=self.timeout,
            backoff_base=self.backoff_base,
            backoff_max=self.backoff_max,
        )
        if self.max_tokens < 1:
            raise EndpointError(f"{_ROLE}: max_tokens must be at least 1")


class _JSONModeRefused(Exception):
    """The server rejected ``response_format``; carries nothing from the request."""


class LLMClient:
    """A chat client for one OpenAI-compatible endpoint. Thread-safe."""

    def __init__(self, config: LLMConfig) -> None:
        self.config = config
        self._url = display_url(config.url)
        self._client: OpenAI | None = None
        self._client_lock = threading.Lock()
        # None: not known yet; True: a JSON-mode request succeeded; False: refused.
        self._json_mode: bool | None = None if config.json_mode else False

    def __repr__(self) -> str:
        return f"LLMClient(url={self._url!r}, model={self.config.model!r})"

    @property
    def url(self) -> str:
        """The endpoint's base URL as shown in messages (no credentials)."""
        return self._url

    @property
    def json_mode_supported(self) -> bool | None:
        """Whether the server accepted ``response_format``; ``None`` until known."""
        return self._json_mode

    def chat(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        json_mode: bool = True,
        max_tokens: int | None = None,
        temperature: float = 0.0,
        schema: Mapping[str, Any] | None = None,
    ) -> str:
        """Send ``messages`` (``{"role", "content"}`` dicts); return the reply text.

        ``schema`` (a JSON Schema) goes along in JSON mode as
        ``{"type": "json_object", "schema": ...}``, which llama.cpp's servers turn into a
        grammar: even a tiny local model then answers in the asked shape. Servers that
        refuse it get the request again without ``response_format``.

        ``json_mode`` asks for a JSON object reply where the server supports it (the
        text still goes through :func:`parse_json_reply` on the caller's side: servers
        without JSON mode, and reasoning models, wrap it in prose). ``max_tokens``
        defaults to the config's. Raises :class:`EndpointError` (one line naming the
        URL) after ``max_retries`` retries of 429/5xx/timeouts, at once for other
        refusals, or when the reply has no text.
        """
        budget = self.config.max_tokens if max_tokens is None else max_tokens
        if budget < 1:
            raise ValueError("max_tokens must be at least 1")
        use_json = json_mode and self._json_mode is not False
        fmt: dict[str, Any] | None = None
        if use_json:
            fmt = {"type": "json_object", **({"schema": dict(schema)} if schema else {})}
        try:
            return self._call(list(messages), fmt, budget, temperature)
        except _JSONModeRefused:
            pass
        # Asked again outside the except block, so a later EndpointError does not
        # chain to the refusal (whose context holds the request, key included).
        self._json_mode = False
        log.info("%s %s: response_format refused; asking without it", _ROLE, self._url)
        return self._call(list(messages), None, budget, temperature)

    def chat_json(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        max_tokens: int | None = None,
        temperature: float = 0.0,
    ) -> Any:
        """:meth:`chat` in JSON mode, parsed with :func:`parse_json_reply`.

        Raises :class:`EndpointError` for endpoint failures and :class:`JSONReplyError`
        (a ``ValueError``) when the reply holds no JSON object or array.
        """
        text = self.chat(messages, json_mode=True, max_tokens=max_tokens, temperature=temperature)
        return parse_json_reply(text)

    # -- internals --------------------------------------------------------------------

    def _call(
        self,
        messages: list[Mapping[str, Any]],
        fmt: dict[str, Any] | None,
        budget: int,
        temperature: float,
    ) -> str:
        return call_with_retries(
            lambda: self._request(messages, fmt, budget, temperature),
            label=f"{_ROLE} {self._url}",
            max_retries=self.config.max_retries,
            backoff_base=self.config.backoff_base,
            backoff_max=self.config.backoff_max,
            api_key=self.config.api_key,
            logger=log,
            endpoint=self.config.url,
        )

    def _get_client(self) -> OpenAI:
        with self._client_lock:
            if self._client is None:
                self._client = make_openai_client(
                    self.config.url, self.config.api_key, self.config.timeout, _ROLE, self._url
                )
            return self._client

    def _request(
        self,
        messages: list[Mapping[str, Any]],
        fmt: dict[str, Any] | None,
        budget: int,
        temperature: float,
    ) -> str:
        """One HTTP request; the reply text, or raises ``Failure`` / ``_JSONModeRefused``."""
        client = self._get_client()
        kwargs: dict[str, Any] = {
            "model": self.config.model,
            "messages": messages,
            # max_tokens, not max_completion_tokens: every compatible server
            # (llama-server, vLLM, Ollama, LM Studio) understands it.
            "max_tokens": budget,
            "temperature": temperature,
        }
        use_json = fmt is not None
        if fmt is not None:
            kwargs["response_format"] = fmt
        try:
            response = client.chat.completions.create(**kwargs)
        except Exception as exc:  # every openai/httpx failure is translated below
            if use_json and _refuses_json_mode(exc):
                raise _JSONModeRefused() from None
            raise translate_openai_error(exc, self.config.timeout) from None
        if use_json:
            self._json_mode = True
        return _reply_text(response)


def _refuses_json_mode(exc: Exception) -> bool:
    """Whether ``exc`` is the server rejecting ``response_format`` (not the whole request)."""
    import openai

    if not isinstance(exc, openai.APIStatusError) or exc.status_code not in (400, 422):
        return False
    text = f"{exc.body!s} {exc.message}".lower()
    return any(hint in text for hint in _JSON_MODE_HINTS)


def _reply_text(response: Any) -> str:
    try:
        choice = response.choices[0]
        content = choice.message.content
    except (AttributeError, IndexError, TypeError):
        raise Failure("malformed response (no choices)", retryable=False) from None
    if isinstance(content, str) and content.strip():
        return content
    finish = getattr(choice, "finish_reason", None)
    # A reasoning model that spent the whole budget thinking answers nothing; say so.
    hint = " (finish_reason=length: raise max_tokens?)" if finish == "length" else ""
    raise Failure(f"returned an empty reply{hint}", retryable=False)


# -- JSON replies -----------------------------------------------------------------------


class JSONReplyError(ValueError):
    """A model reply holds no usable JSON (a ``ValueError``: bad data, not a bad endpoint)."""


# <think> is what Qwen3/DeepSeek-R1 style models emit; <thinking> is seen too.
_THINK_OPEN = re.compile(r"<think(?:ing)?>", re.IGNORECASE)
_THINK_CLOSE = re.compile(r"</think(?:ing)?>", re.IGNORECASE)
_THINK_BLOCK = re.compile(r"<think(?:ing)?>.*?</think(?:ing)?>", re.IGNORECASE | re.DOTALL)
_FENCE = re.compile(r"```[\w+-]*[ \t]*\n?(.*?)```", re.DOTALL)

# Bounds the scan over candidate start positions: a reply is a few KB, and a
# pathological one (thousands of brackets of prose) must not cost seconds.
_MAX_STARTS = 500


def strip_think(text: str) -> str:
    """``text`` without reasoning blocks.

    * ``<think>…</think>`` blocks are removed wherever they are.
    * A closing ``</think>`` with no opener (the chat template opened the block in
      the prompt) drops everything before it.
    * An unclosed ``<think>`` (reasoning cut off by ``max_tokens``) drops everything
      from it on: the model never reached its answer, and JSON drafted while thinking
      is not one.
    """
    text = _THINK_BLOCK.sub("", text)
    closers = list(_THINK_CLOSE.finditer(text))
    if closers:
        text = text[closers[-1].end() :]
    opener = _THINK_OPEN.search(text)
    if opener:
        text = text[: opener.start()]
    return text


def parse_json_reply(text: str, *, expect: type[dict] | type[list] | None = None) -> Any:
    """The first JSON object or array in a model reply.

    Tolerates ``<think>`` blocks (see :func:`strip_think`), code fences (```json …```,
    tried first), and prose before or after the JSON. ``expect=dict`` or
    ``expect=list`` accepts only that kind (prose such as "see [1]" is itself a JSON
    array). Raises :class:`JSONReplyError`, a ``ValueError``, when nothing parses —
    callers skip the step rather than crash.
    """
    if not isinstance(text, str):
        raise JSONReplyError(f"reply is {type(text).__name__}, not text")
    kinds: tuple[type, ...] = (expect,) if expect is not None else (dict, list)
    body = strip_think(text).strip().lstrip("\ufeff")
    if not body:
        raise JSONReplyError("empty reply" if not text.strip() else "reply holds only reasoning")
    decoder = json.JSONDecoder()
    candidates = [m.group(1).strip() for m in _FENCE.finditer(body)]
    candidates.append(body)
    for candidate in candidates:
        found = _first_json(candidate, decoder, kinds)
        if found is not None:
            return found[0]
    what = "object" if expect is dict else "array" if expect is list else "object or array"
    raise JSONReplyError(f"no JSON {what} in the reply: {one_line(body, 80)!r}")


def _first_json(text: str, decoder: json.JSONDecoder, kinds: tuple[type, ...]) -> tuple[Any] | None:
    """``(value,)`` for the first decodable value of ``kinds`` in ``text``, else None."""
    starts = 0
    for match in re.finditer(r"[\[{]", text):
        starts += 1
        if starts > _MAX_STARTS:
            break
        try:
            value, _ = decoder.raw_decode(text, match.start())
        except (ValueError, RecursionError):  # deep nesting overflows the C scanner
            continue
        if isinstance(value, kinds):
            return (value,)
    return None
