"""Secrets out of transcript text before it is sent to a model or written to the vault.

Transcripts hold whatever passed through the terminal: keys pasted into a prompt,
``.env`` files a tool read, connection strings in logs. Everything `extract` and
`handoff` send or write goes through :func:`redact` first. The patterns favour
redacting too much (a false positive costs a word of a memory; a miss leaks a key).
"""

from __future__ import annotations

import re

__all__ = ["REDACTED", "redact"]

REDACTED = "[REDACTED]"

# Whole-match secrets: replaced entirely.
_WHOLE = [
    # PEM private keys (RSA, EC, OPENSSH, PKCS#8, encrypted), the whole block; an
    # unterminated block (cut transcript) is redacted to the end of the text.
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?:.*?-----END [A-Z0-9 ]*PRIVATE KEY-----|.*\Z)",
    # OpenAI / Anthropic style keys: sk-..., sk-proj-..., sk-ant-...
    r"\bsk-(?:[A-Za-z0-9_-]{2,12}-)?[A-Za-z0-9_-]{16,}",
    # GitHub tokens: ghp_, gho_, ghu_, ghs_, ghr_, github_pat_
    r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})",
    # AWS access key ids
    r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[A-Z0-9]{16}\b",
    # Slack tokens
    r"\bxox[abposr]-[A-Za-z0-9-]{10,}",
    # Google API keys, Stripe secret/restricted keys, GitLab tokens, npm tokens
    r"\bAIza[0-9A-Za-z_-]{35}",
    r"\b(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}",
    r"\bglpat-[0-9A-Za-z_-]{20,}",
    r"\bnpm_[A-Za-z0-9]{36}",
    # JSON Web Tokens: three base64url parts, the first two starting with '{"' encoded
    r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
]

# Secrets that follow a marker: the marker stays, the value goes.
_VALUED = [
    # Authorization: Bearer xxx / Basic xxx, and a bare "bearer xxx"
    r"(?i)(\b(?:bearer|basic)\s+)[A-Za-z0-9._~+/=-]{12,}",
    # password=..., token: ..., api_key = "...", secret: '...', PASSWORD=...
    r"(?i)(\b[\w.-]*(?:password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|"
    r"private[_-]?key|client[_-]?secret|auth)[\w.-]*[\"']?\s*[:=]\s*)"
    r"(?!(?:bearer|basic)\b)(?:\"[^\"\n]{1,200}\"|'[^'\n]{1,200}'|(?![\[{(<])[^\s\"',;]{4,})",
    # scheme://user:password@host (postgres, mysql, mongodb, redis, amqp, https…)
    r"(\b[a-z][a-z0-9+.-]*://[^\s:/@]+:)[^\s@/]+(?=@)",
]

_WHOLE_RE = re.compile("|".join(f"(?:{p})" for p in _WHOLE), re.DOTALL)
_VALUED_RES = [re.compile(p) for p in _VALUED]


def redact(text: str) -> str:
    """``text`` with every secret of a known shape replaced by ``[REDACTED]``.

    Example:
        >>> redact("export OPENAI_API_KEY=sk-abcdefghijklmnopqrstuvwx")
        'export OPENAI_API_KEY=[REDACTED]'
    """
    if not text:
        return text
    text = _WHOLE_RE.sub(REDACTED, text)
    for pattern in _VALUED_RES:
        text = pattern.sub(lambda m: m.group(1) + REDACTED, text)
    return text
