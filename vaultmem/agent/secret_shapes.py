"""Secrets known by their shape alone: token families, generated-looking strings.

Three sources, each a list of spans of ``text`` to redact (:func:`token_spans`):

- the regex plugins of `detect-secrets` (AWS, Azure storage, GitHub, GitLab, Slack,
  Stripe, npm, PyPI, SendGrid, Twilio, JWT, Discord, Telegram, Mailchimp, Square, IBM,
  Cloudant, Artifactory, basic auth…), each match carried to the end of its token;
  detect-secrets runs offline: only its regexes are used, never its verification;
- the token families of ``vaultmem/data/token_families.json``: a literal prefix and a
  generated-looking body (Docker ``dckr_pat_``, Sentry ``sntrys_``, New Relic ``NRAK-``,
  Vault ``hvs.`` and legacy ``s.``, 1Password ``ops_``…), widened from gitleaks' rules
  and vendors' documentation; data, one test per family;
- bare generated strings: a 40-character AWS secret key anywhere, and in a text without
  whitespace (a tool's argument: a search pattern, a path, a URL; or a message that is
  nothing but a pasted token) any run of 20 or more characters that mixes capitals,
  small letters and digits at the entropy of a random string.

:func:`generated` and :func:`entropy` are the measures the context rules share
(:mod:`vaultmem.agent.credential_phrases`): what a generated value looks like, as in
detect-secrets' high-entropy plugins, plus a check that it is not words run together.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterator
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

__all__ = [
    "Family",
    "entropy",
    "families",
    "generated",
    "lazy_regex",
    "looks_random",
    "named",
    "public_before",
    "public_value",
    "search_pattern_spans",
    "token_spans",
    "widen",
]

Span = tuple[int, int]


def lazy_regex(source: str, flags: int = 0) -> Callable[[], re.Pattern[str]]:
    """A regex compiled when a text first needs it: most texts never reach most rules,
    and compiling every one costs each process that redacts a few milliseconds."""
    return lru_cache(maxsize=1)(lambda: re.compile(source, flags))


_DATA = Path(__file__).resolve().parent.parent / "data"
_SNAPSHOT = "detect_secrets_plugins.json"

# detect-secrets plugins left out: public IP addresses are not secrets (and fill logs).
_SKIPPED_PLUGINS = frozenset({"IPPublicDetector"})
_TOKEN_CHARS = re.compile(r"[A-Za-z0-9_+/=-]+")
_WORDISH = re.compile(r"[A-Z]?[a-z]{2,}")
# A part of a name that a person wrote: a word, a number, or short.
_WRITTEN = re.compile(r"[A-Za-z][a-z]{1,11}|[A-Z]{2,12}|\d+|\w{1,4}")
# A bare AWS secret access key: 40 characters of base64, mixed case and digits.
_AWS_SECRET = lazy_regex(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")
# A run of characters a token is made of (prefix families are looked for only inside one).
_RUN = re.compile(r"[A-Za-z0-9_+/=.~-]{15,}")
_RUN_BREAKS = "+/=.~-"
# A search command and its pattern (after its options).
_SEARCH = lazy_regex(
    r"(?<![\w.-])(?:grep|egrep|fgrep|rg|ag|ack|git[ \t]+grep|findstr|Select-String"
    r"|git[ \t]+log(?:[ \t]+-{1,2}[\w-]+(?:=\S+)?)*[ \t]+-[SG])"
    r"(?:[ \t]+-{1,2}[\w-]+(?:=\S+)?)*[ \t]*(?P<pattern>'[^'\n]*'|\"[^\"\n]*\"|\S+)"
)
# A tool call's search argument: {"pattern": "…"}, pattern="…", query: '…'.
_SEARCH_ARG = lazy_regex(
    r"\b(?:pattern|regex|query|search|grep)[\"']?[ \t]*[:=][ \t]*"
    r"(?P<pattern>\"[^\"\n]*\"|'[^'\n]*')"
)
# Cheap tests first: a search command, or a key a tool call's search argument has.
_SEARCH_WORDS = ("grep", "rg ", "ag ", "ack ", "git ", "findstr", "select-string")
_SEARCH_KEYS = ("pattern", "regex", "query", "search", "grep")
# In a text without whitespace: a run that could be a generated secret.
_BARE = lazy_regex(r"(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{20,}={0,2}(?![A-Za-z0-9+/_-])")
# Prefixes of strings that look random but are public: digests, checksums, public keys.
_PUBLIC = (
    r"(?:sha(?:1|224|256|384|512)[-:=]|md5[-:=]|h1:|blake2b?[-:]|ssh-(?:rsa|ed25519|dss)[ \t]+"
    r"|ecdsa-sha2-\S+[ \t]+|sk-ssh-\S+[ \t]+|age1|npub1|ipfs/|;base64,)"
)
# A Kubernetes pod, a ReplicaSet, a Job's run: name-<hash>-<suffix>, small letters only.
_RESOURCE_NAME = lazy_regex(r"[a-z]{2,}(?:-[a-z]{2,})*(?:-[a-z0-9]{4,12}){1,2}")
_PUBLIC_BEFORE = lazy_regex(r"(?i)" + _PUBLIC + r"\Z")
_PUBLIC_START = lazy_regex(r"(?i)" + _PUBLIC)


class Family(NamedTuple):
    """One token family of ``token_families.json`` (see the file's header)."""

    name: str
    prefix: str = ""
    chars: str = ""
    min: int = 0
    max: int | None = None
    lead: str = ""
    lead_len: int = 0
    pattern: str = ""
    example: str = ""
    source: str = ""

    def regex(self) -> str:
        """The family's regex (without the boundary before it)."""
        if self.pattern:
            return self.pattern
        lead = f"[{self.lead}]{{{self.lead_len}}}" if self.lead else ""
        most = "" if self.max is None else str(self.max)
        tail = "" if self.max is None else f"(?![{self.chars}])"
        return f"{lead}{re.escape(self.prefix)}[{self.chars}]{{{self.min},{most}}}{tail}"


@lru_cache(maxsize=1)
def families() -> tuple[Family, ...]:
    """The token families, from the package's ``data/token_families.json``."""
    table = json.loads((_DATA / "token_families.json").read_text("utf-8"))["families"]
    return tuple(Family(name=name, **spec) for name, spec in table.items())


@lru_cache(maxsize=1)
def _index() -> tuple[dict[str, list[tuple[Family, frozenset[str]]]], tuple[Family, ...]]:
    """Prefix families by the first two characters of their prefix, each with the set of
    its body's characters; the families with a lead or a pattern (looked for apart)."""
    by_start: dict[str, list[tuple[Family, frozenset[str]]]] = {}
    others = []
    for family in families():
        if family.lead or family.pattern:
            others.append(family)
        else:
            allowed = frozenset(_expand(family.chars))
            by_start.setdefault(family.prefix[:2], []).append((family, allowed))
    return by_start, tuple(others)


def _expand(chars: str) -> str:
    """The characters of a regex class body such as ``A-Za-z0-9_-``."""
    out, i = [], 0
    while i < len(chars):
        if i + 2 < len(chars) and chars[i + 1] == "-":
            out += [chr(c) for c in range(ord(chars[i]), ord(chars[i + 2]) + 1)]
            i += 3
        else:
            out.append(chars[i])
            i += 1
    return "".join(out)


def _family_token(text: str, at: int, end: int, family: Family, allowed: frozenset[str]) -> int:
    """The end of a token of ``family`` at ``at`` (-1 for none): its prefix, then at least
    ``min`` (at most ``max``, and no more of them after) characters of its body."""
    if not text.startswith(family.prefix, at):
        return -1
    body = stop = at + len(family.prefix)
    while stop < end and text[stop] in allowed:
        stop += 1
    size = stop - body
    too_long = family.max is not None and size > family.max
    return -1 if size < family.min or too_long else stop


@lru_cache(maxsize=1)
def _other_patterns() -> tuple[tuple[Callable[[], re.Pattern[str]], str], ...]:
    """The families with a lead or a pattern, each with a literal the text must hold for
    it to match (a lead's prefix, the literal a pattern starts with), compiled when a
    text first holds it."""
    return tuple((lazy_regex(f.regex()), f.prefix or _literal(f.pattern)) for f in _index()[1])


def _literal(pattern: str) -> str:
    """The characters a regex starts with that match only themselves (``SG.`` of
    ``SG\\.[\\w-]{16,}``)."""
    found = re.match(r"(?:[^\\.^$*+?{}\[\]|()]|\\[./:-])*", pattern)
    return found.group().replace("\\", "") if found else ""


@lru_cache(maxsize=1)
def _detectors() -> tuple[tuple[tuple[str, ...], Callable[[], re.Pattern[str]]], ...]:
    """The regexes of detect-secrets' regex plugins, each with its needles (lower-case
    strings one of which a text must hold for it to match; none: always tried) and
    compiled when a text first holds one: from the snapshot of them in
    ``data/detect_secrets_plugins.json`` while the installed detect-secrets is the version
    it was taken from (importing detect-secrets costs a tenth of a second, most of it
    `requests`, which only its verification needs), else from detect-secrets itself."""
    snapshot = json.loads((_DATA / _SNAPSHOT).read_text("utf-8"))
    if _installed_is(snapshot["version"]):
        rows = [(row[3] if len(row) > 3 else [], row[1], row[2]) for row in snapshot["patterns"]]
    else:
        rows = [([], pattern, flags) for _, pattern, flags in detector_patterns()]
    return tuple((tuple(needles), lazy_regex(pattern, flags)) for needles, pattern, flags in rows)


def _installed_is(version: str) -> bool:
    """Whether the detect-secrets installed is ``version`` (judged by its dist-info
    folder, without importing it)."""
    from importlib.util import find_spec

    spec = find_spec("detect_secrets")
    folders = list(spec.submodule_search_locations or []) if spec else []
    return any((Path(f).parent / f"detect_secrets-{version}.dist-info").is_dir() for f in folders)


def detector_patterns() -> list[tuple[str, str, int]]:
    """(plugin, pattern, flags) of every regex of detect-secrets' regex plugins, from the
    detect-secrets installed (offline: its verification is never called)."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.plugins.base import RegexBasedDetector

    found: list[tuple[str, str, int]] = []
    plugins: list[type] = list(get_mapping_from_secret_type_to_class().values())
    for plugin in sorted(plugins, key=lambda p: p.__name__):
        if issubclass(plugin, RegexBasedDetector) and plugin.__name__ not in _SKIPPED_PLUGINS:
            denylist = plugin().denylist
            found += [
                (plugin.__name__, p.pattern, p.flags) for p in denylist if isinstance(p, re.Pattern)
            ]
    return found


def write_detector_snapshot() -> Path:
    """Write ``data/detect_secrets_plugins.json`` from the detect-secrets installed
    (``python -m vaultmem.agent.secret_shapes`` after upgrading it)."""
    from importlib.metadata import version

    path = _DATA / _SNAPSHOT
    # The needles of a pattern that did not change are kept; a new one gets none (tried
    # on every text) until someone writes them.
    old = json.loads(path.read_text("utf-8")) if path.exists() else {"patterns": []}
    needles = {row[1]: row[3] for row in old["patterns"] if len(row) > 3}
    found = [[*row, needles.get(row[1], [])] for row in detector_patterns()]
    rows = ",\n".join(f"  {json.dumps(row, ensure_ascii=False)}" for row in found)
    head = json.dumps(version("detect-secrets"))
    path.write_text(f'{{\n "version": {head},\n "patterns": [\n{rows}\n ]\n}}\n', "utf-8")
    return path


# --------------------------------------------------------------------------- measures


def entropy(word: str) -> float:
    """Shannon entropy of ``word``, in bits per character."""
    counts = [word.count(c) for c in set(word)]
    return -sum(n / len(word) * math.log2(n / len(word)) for n in counts)


def looks_random(value: str) -> bool:
    """Whether ``value`` looks generated rather than written: letters and digits mixed,
    or upper case inside a word (``dXNlcjpwYXNz``)."""
    letters = sum(c.isalpha() for c in value)
    digits = sum(c.isdigit() for c in value)
    inner_upper = sum(c.isupper() for c in value[1:])
    lower = letters - sum(c.isupper() for c in value)
    return (letters > 0 and digits > 0) or (inner_upper >= 2 and lower > 0)


def generated(value: str, *, hex_ok: bool = False) -> bool:
    """Whether ``value`` (16 characters or more) has the entropy of a random string, as
    detect-secrets' high-entropy plugins judge it, and is not words run together
    (``AbstractSingletonProxyFactoryBean2``) nor a number, a date or a version.

    ``hex_ok``: a hex string (or a UUID) counts too; only next to a strong credential
    word, since a bare hex string is far more often a hash or an id.
    """
    if len(value) < 16:
        return False
    bare = value.strip("=")
    if re.fullmatch(r"[0-9a-fA-F-]+", bare):
        hexes = bare.replace("-", "")
        return hex_ok and len(hexes) >= 16 and entropy(hexes) >= min(3.0, _expected(hexes) - 0.8)
    if not looks_random(bare) or re.fullmatch(r"[\d.:_/-]+", bare):
        return False
    if sum(len(w) for w in _WORDISH.findall(bare)) / len(bare) >= 0.6:
        return False
    if all(_WRITTEN.fullmatch(part) for part in re.split(r"[-_./+]+", bare) if part):
        return False  # cpython-312-x86_64-linux-gnu: words, numbers and short parts
    return entropy(bare) >= min(4.2, _expected(bare) - 0.75)


def named(value: str) -> bool:
    """Whether ``value``, generated-looking as it may be, names a thing: a path of names
    (``/api/v2/users/01HZX4KQ7M8N9P0R1S2T3V``, ``uploads/2024/05/9f3a1c2b-report.pdf``,
    not base64 that holds slashes) or a resource a controller named
    (``harbor-api-7c9f8d6b5-x2xkq``: a word, then short parts in small letters), or a
    cache key (``Linux-npm-<sha256>``)."""
    parts = value.split("/")
    if len(parts) > 2 and sum(bool(re.fullmatch(r"[a-z]{2,}|\d+", p)) for p in parts) >= 2:
        return True
    if re.fullmatch(r"(?:[A-Za-z][A-Za-z0-9]*-)+[0-9a-f]{32,}", value):
        return True  # Linux-npm-<digest>: a cache key, words and a content hash
    return bool(_RESOURCE_NAME().fullmatch(value))


def _expected(value: str) -> float:
    """About the entropy of a random string of ``value``'s length over base64 (it cannot
    exceed log2 of the length)."""
    return min(math.log2(len(value)), 6.0)


# --------------------------------------------------------------------------- spans


def token_spans(text: str) -> Iterator[Span]:
    """The spans of ``text`` that are secrets by their shape alone."""
    yield from _detector_spans(text)
    yield from _family_spans(text)
    for m in _AWS_SECRET().finditer(text):
        word = m.group()
        cased = re.search(r"[a-z]", word) and re.search(r"[A-Z]", word)
        # Not an identifier: random text has few runs of a capital and small letters.
        prose = sum(len(w) for w in _WORDISH.findall(word)) / len(word)
        random = cased and re.search(r"[0-9/+]", word) and prose < 0.75
        if random and entropy(word) > 4.2 and not named(word):
            yield m.span()
    if text.strip() and not re.search(r"\s", text.strip()):
        # A URL's path names things (a document, a commit); its query may carry a key.
        start = text.find("?") + 1 if "://" in text else 0
        named_arn = text.lstrip().startswith("arn:")  # an ARN names a resource
        yield from (
            _bare_spans(text, start) if (start or "://" not in text) and not named_arn else ()
        )
    yield from search_pattern_spans(text)


def masked(token: str) -> bool:
    """Whether ``token`` is a mask in a token's shape (``ghp_xxxxxxxx…``, ``sk-XXXX-XXXX``):
    past a prefix of up to twelve characters, at most three distinct characters."""
    cut = max(token.rfind("_", 0, 13), token.rfind("-", 0, 13)) + 1
    body = token[cut:]
    return len(body) >= 8 and len(set(body.lower()) - set("_-.")) <= 2


def _detector_spans(text: str) -> Iterator[Span]:
    windows = list(_windows(text))
    low = text.lower()
    for needles, pattern in _detectors():
        if needles and not any(needle in low for needle in needles):
            continue
        for start, end in windows:
            for m in pattern().finditer(text, start, end):
                span = widen(text, _secret_part(m))
                if not masked(text[span[0] : span[1]]):
                    yield span


def _family_spans(text: str) -> Iterator[Span]:
    by_start, _ = _index()
    for run in _RUN.finditer(text):
        start, end = run.span()
        at = start
        while at < end:
            glued = at > 0 and (text[at - 1].isalnum() or text[at - 1] == "_")
            for family, allowed in () if glued else by_start.get(text[at : at + 2], ()):
                stop = _family_token(text, at, end, family, allowed)
                body = text[at + len(family.prefix) : stop]
                if stop > 0 and looks_random(body) and not masked(body):
                    yield widen(text, (at, stop))
            at = _next_start(text, at, end)
    for pattern, literal in _other_patterns():
        if literal in text:
            for m in pattern().finditer(text):
                before = text[m.start() - 1] if m.start() else ""
                if not (before.isalnum() or before == "_"):
                    yield widen(text, m.span())


def _next_start(text: str, at: int, end: int) -> int:
    """The next place in a run where a token can start: after a break character."""
    for i in range(at + 1, end):
        if text[i - 1] in _RUN_BREAKS:
            return i
    return end


def _bare_spans(text: str, start: int = 0, end: int | None = None) -> Iterator[Span]:
    """Generated-looking runs of ``text`` (between ``start`` and ``end``): in a tool's
    argument, or a pattern given to a search command."""
    for m in _BARE().finditer(text, start, len(text) if end is None else end):
        if not public_before(text, m.start()) and generated(m.group()):
            yield m.span()


def search_pattern_spans(text: str) -> Iterator[Span]:
    """Generated strings searched for (``grep -r 'X' .``, ``rg X src/``): a secret being
    looked for in the code is still a secret."""
    low = text.lower()
    commands = any(w in low for w in _SEARCH_WORDS)
    args = ('"' in text or "'" in text) and any(w in low for w in _SEARCH_KEYS)
    for pattern in (_SEARCH(),) * commands + (_SEARCH_ARG(),) * args:
        for m in pattern.finditer(text):
            yield from _bare_spans(text, m.start("pattern"), m.end("pattern"))


def public_before(text: str, start: int) -> bool:
    """Whether what stands just before ``start`` says the string there is public: a
    digest (``sha256:``, ``sha512-``, ``h1:``), a public key (``ssh-ed25519 ``)."""
    return bool(_PUBLIC_BEFORE().search(text, max(0, start - 40), start))


def public_value(value: str) -> bool:
    """Whether ``value`` starts as a digest or a public key does (``SHA256:…``)."""
    return bool(_PUBLIC_START().match(value))


def _windows(text: str, size: int = 2048, overlap: int = 256) -> Iterator[Span]:
    """``text`` in pieces of at most ``size`` characters, cut at line ends where it can
    and overlapping by ``overlap`` where it cannot: a plugin's pattern such as
    ``//.+/:_authToken=`` costs the square of a line's length (minutes on a megabyte of
    minified JavaScript), and no secret it finds is longer than the overlap."""
    start = 0
    while len(text) - start > size:
        cut = text.rfind("\n", start + size // 2, start + size)
        if cut < 0:
            yield start, start + size
            start += size - overlap
        else:
            yield start, cut
            start = cut + 1
    yield start, len(text)


def _secret_part(m: re.Match[str]) -> Span:
    """The span of a detector's match that holds the secret: the group that ends it (the
    password before ``@``, the key inside quotes), else the whole match (some plugins
    capture only a prefix like ``ghp``) less the delimiters some include (``"``, ``=``)."""
    start, end = m.span()
    for i in range(1, m.re.groups + 1):
        if m.group(i) and not m.string[m.end(i) : end].strip("\"'@ \t"):
            return m.span(i)
    while start < end and m.string[start] in " \t\r\n=:\"'":
        start += 1
    while end > start and m.string[end - 1] in " \t\r\n\"'":
        end -= 1
    return start, end


def widen(text: str, span: Span) -> Span:
    """``span`` carried on to the end of its token (a plugin's fixed length, ``{24}``,
    would leave the rest of a longer key behind)."""
    start, end = span
    if start < end < len(text):
        tail = _TOKEN_CHARS.match(text, end)
        if tail:
            end = tail.end()
    return start, end


if __name__ == "__main__":
    print(write_detector_snapshot())
