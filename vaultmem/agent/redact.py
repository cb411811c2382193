"""Secrets out of transcript text before it can reach a model, a note or a file name.

Transcripts hold whatever passed through the terminal: keys pasted into a prompt,
``.env`` files a tool read, connection strings in logs. :func:`redact` is applied where
transcript text enters vaultmem (:func:`vaultmem.agent.transcript.read_entries` redacts
every entry's text, tool arguments, session id and folder as it reads them), so nothing
downstream (chunks, prompts, titles, slugs, wikilinks, handoff sections) sees raw text.

Two sources of rules; every match becomes ``[REDACTED]``:

- **token shapes**: the regex plugins of `detect-secrets` (AWS, Azure storage, GitHub,
  GitLab, Slack tokens and webhooks, Stripe, npm, PyPI, SendGrid, Twilio, JWT, Discord,
  Telegram, Mailchimp, Square, IBM, Cloudant, Artifactory, basic auth…), each match
  carried to the end of its token, plus the shapes it lacks (:data:`_TOKENS`: OpenAI
  and Anthropic keys, ``whsec_``, ``hf_``, bare ``npm_``, Google, Vault, DigitalOcean…)
  and bare 40-character AWS secret keys;
- **context rules** of our own: private key blocks (PEM, OpenSSH, PGP, PuTTY) whole; the
  password of a URL (``scheme://user:pass@host``, one holding ``/``, ``@`` or ``:``
  too); the value of a secret-named key (``DB_PASSWORD=…``, ``"api_key": "…"``,
  ``token: …``, ``AccountKey=…``; on a line of its own, the rest of the line); CLI
  password flags (``--password X``, ``mysql -pX``, ``curl -u user:X``, ``redis-cli -a
  X``…); ``Authorization:`` values; and phrases ("the password is X").

The context rules leave ordinary text alone: a value that is a reference
(``$DB_PASSWORD``, ``os.environ["X"]``, ``settings.token``, ``{{ secret }}``), a type
(``token: str``), a path, a URL or a word of prose ("the token is expired") is kept.
detect-secrets runs offline: only its regexes are used, never its verification requests.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from functools import lru_cache

__all__ = ["REDACTED", "redact"]

REDACTED = "[REDACTED]"

Span = tuple[int, int]


def _wordset(words: str) -> frozenset[str]:
    return frozenset(words.split())


# detect-secrets plugins left out: public IP addresses are not secrets (and fill logs).
_SKIPPED_PLUGINS = frozenset({"IPPublicDetector"})

# Shapes detect-secrets 1.5 lacks, or knows only in a narrower form.
_TOKENS = (
    r"\bsk-(?:ant-|proj-|svcacct-|admin-|or-v1-|live-)?[A-Za-z0-9_-]{20,}",  # OpenAI, Anthropic
    r"\bgithub_pat_[A-Za-z0-9_]{22,}",
    r"\bgh[pousr]_[A-Za-z0-9]{20,}",
    r"\bxox[abposre]-[A-Za-z0-9-]{10,}",
    r"\bxapp-\d-[A-Za-z0-9-]{20,}",
    r"\bAIza[0-9A-Za-z_-]{35}",  # Google API key
    r"\bya29\.[0-9A-Za-z_-]{20,}",  # Google OAuth access token
    r"\bGOCSPX-[A-Za-z0-9_-]{20,}",  # Google OAuth client secret
    r"\b(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}",  # Stripe secret / restricted keys
    r"\bwhsec_[A-Za-z0-9+/=]{20,}",  # Stripe webhook signing secret
    r"\bhf_[A-Za-z0-9]{30,}",  # Hugging Face
    r"\bglpat-[0-9A-Za-z_-]{20,}",
    r"\bnpm_[A-Za-z0-9]{36}\b",
    r"\bpypi-[A-Za-z0-9_-]{50,}",
    r"\bdo[opr]_v1_[a-f0-9]{64}",  # DigitalOcean
    r"\bshp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}",  # Shopify
    r"\blin_api_[A-Za-z0-9]{40}",  # Linear
    r"\bPMAK-[a-f0-9]{24}-[a-f0-9]{34}",  # Postman
    r"\bhv[sbr]\.[A-Za-z0-9_-]{24,}",  # HashiCorp Vault
    r"\bAGE-SECRET-KEY-1[0-9A-Z]{58}",
    r"\bdp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,}",  # Doppler
    r"\bgsk_[A-Za-z0-9]{40,}",  # Groq
    r"\br8_[A-Za-z0-9]{30,}",  # Replicate
    r"\bpplx-[A-Za-z0-9]{40,}",  # Perplexity
    r"\btskey-[a-z]+-[A-Za-z0-9-]{16,}",  # Tailscale
    r"\bglsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}",  # Grafana service account
    r"\bglc_[A-Za-z0-9+/=]{32,}",  # Grafana cloud
    r"\bATATT3[A-Za-z0-9_=-]{60,}",  # Atlassian API token
    r"\bdapi[a-f0-9]{32}\b",  # Databricks
    r"\bkey-[0-9a-f]{32}\b",  # Mailgun
    r"\bSG\.[\w-]{16,}\.[\w-]{16,}",  # SendGrid
    r"\b[A-Za-z0-9_~.-]{3}8Q~[A-Za-z0-9_~.-]{31,34}",  # Azure AD client secret
    r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*",  # JWT, unsigned too
    r"https://discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_-]+",
    r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/-]+",
)
_TOKEN_PREFIX = re.compile(r"[A-Za-z0-9]+[_.~-](?:[a-z]+[_-])?")
_TOKEN_CHARS = re.compile(r"[A-Za-z0-9_+/=-]+")
_WORDISH = re.compile(r"[A-Z]?[a-z]{2,}")
# A bare AWS secret access key: 40 characters of base64, mixed case and digits.
_AWS_SECRET = re.compile(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")

_KEY_BLOCK = re.compile(
    r"-{3,}[ \t]?BEGIN[A-Z0-9 ]*PRIVATE KEY[A-Z0-9 ]*-{3,}"
    r".*?(?:-{3,}[ \t]?END[A-Z0-9 ]*PRIVATE KEY[A-Z0-9 ]*-{3,}|\Z)"
    r"|PuTTY-User-Key-File-\d+:.*?(?:Private-MAC:[ \t]*[0-9a-fA-F]+|\Z)",
    re.DOTALL,
)

# scheme://user:password@host: greedy, so the last '@' before the host ends the password.
_URL_CREDENTIALS = re.compile(
    r"\b[a-zA-Z][a-zA-Z0-9+.-]{1,20}://[^\s:/@'\"<>]{0,256}:"
    r"(?P<v5>[^\s'\"<>]{1,256})@[A-Za-z0-9._~%-]+(?=[:/?#\s'\"<>)\]]|$)"
)

# A value: quoted (the quotes stay), or a run of characters that are not delimiters.
_VALUE = (
    r"(?:\\\"(?P<v1>[^\"\n]{0,500}?)\\\"|\"(?P<v2>[^\"\n]{0,500})\"|'(?P<v3>[^'\n]{0,500})'"
    r"|`(?P<v4>[^`\n]{0,500})`|(?P<v5>[^\s\"'`,;&<>(){}\[\]]{1,500}))"
)
_QUOTED = ("v1", "v2", "v3", "v4")

# key = value, key: value, "key": "value", key => value, key := value (the key's name is
# read backwards from the secret word, so the scan starts only at those words).
_KEYWORD = re.compile(
    r"(?i)(?=[pstkac])(?:password|passwd|passwrd|pwd|pass|passphrase|passcode|secret|token"
    r"|key|auth|sig|signature|credentials?)"
    r"(?:\\?[\"'`])?(?:\*\*|__)?(?P<sep>[ \t]*(?::=|=>|=|:)(?:\*\*|__)?[ \t]*)" + _VALUE
)
_NAME_BEFORE = re.compile(r"(?<![A-Za-z0-9_.-])[A-Za-z_][A-Za-z0-9_.-]{0,60}$")
_LINE_HEAD = re.compile(r"[ \t]*(?:export[ \t]+|set[ \t]+|-[ \t]+|#[ \t]*)?[\"']?")
_WORD_BEFORE = re.compile(r"(?<![\w.-])([A-Za-z]+)[ \t]$")
_LITERAL = re.compile(r"([\"'])(?P<v>[^\"'\n]*)\1")
_NAME_LIKE = re.compile(r"[A-Z][A-Z0-9_]*|[a-z]+|[a-z][a-z0-9]*(?:[._/:-][a-z0-9]+)+")
_NAME_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_KEY_KINDS = _wordset(
    "api access secret private signing encryption master account license app session auth "
    "deploy webhook storage service subscription shared consumer hmac jwt ssh gpg pgp root "
    "admin write ingest client crypto"
)

# --password X, --db-password=X, --api-key X, -storepass X (java), -passin pass:X (openssl)
_FLAG = re.compile(
    r"-(?<![\w-]-)-?(?P<name>(?:[A-Za-z][\w-]{0,40}?)?(?:password|passwd|pass|passphrase|token"
    r"|secret|api-?key|access-key|secret-key|private-key|storepass|keypass|passin|passout"
    r"|credentials?))(?:[ \t]*=[ \t]*|[ \t]+)" + _VALUE,
    re.IGNORECASE,
)
# Short password flags, only after the commands where they mean a password ("_" joins
# the words of a command: docker login).
_COMMAND_FLAG_TABLE = (
    ("mysql mysqldump mysqladmin mysqlimport mysqlcheck mysqlsh mariadb 7z 7za", "-p"),
    ("sshpass", r"-p[ \t]*"),
    ("docker_login podman_login nerdctl_login buildah_login oras_login skopeo_login", r"-p[ \t]+"),
    ("helm_registry_login mongo mongosh mongodump mongorestore mongoexport az", r"-p[ \t]+"),
    ("redis-cli keydb-cli", r"-a[ \t]+"),
    ("ldapsearch ldapmodify ldapadd ldapdelete ldapwhoami ldappasswd", r"-w[ \t]+"),
    ("zip unzip rar unrar", r"-P[ \t]*"),
    ("curl", r"(?:-u|-U|--user|--proxy-user)(?:[ \t]*=[ \t]*|[ \t]*)['\"]?[^\s:'\"]*:"),
    ("http https xh", r"(?:-a|--auth)(?:[ \t]*=[ \t]*|[ \t]+)['\"]?[^\s:'\"]*:"),
    ("wget", r"--(?:http-|proxy-|ftp-)?user[ \t=]+['\"]?[^\s:'\"]*:"),
    ("smbclient rpcclient smbmap smbget", r"-U[ \t]*['\"]?[^\s%'\"]*%"),
)
_COMMAND_FLAGS = {
    cmd.replace("_", " "): re.compile(r"[ \t]" + flag + _VALUE)
    for cmds, flag in _COMMAND_FLAG_TABLE
    for cmd in cmds.split()
}
_COMMAND = re.compile(
    r"(?<![\w.-])(?P<cmd>"
    + "|".join(c.replace(" ", r"[ \t]+") for c in sorted(_COMMAND_FLAGS, key=len, reverse=True))
    + r")(?=[ \t])"
)
_COMMAND_END = re.compile(r"[\n;&|]|$")
_AUTHORIZATION = re.compile(
    r"(?i)\b(?:proxy-)?authorization[\"']?[ \t]*[:=][ \t]*[\"']?(?:[A-Za-z-]+[ \t]+)?"
    r"(?P<v5>[A-Za-z0-9._~+/=-]{8,})|\b(?:bearer|basic)[ \t]+(?P<v0>[A-Za-z0-9._~+/=-]{12,})"
)
# auth=("user", "pw"), HTTPBasicAuth("user", "pw"); Cookie: / Set-Cookie: name=value
_AUTH_PAIR = re.compile(
    r"(?i)\b(?:auth|basic_?auth|http(?:basic|digest)auth)[ \t]*=?[ \t]*\([ \t]*"
    r"([\"'])[^\"'\n]*\1[ \t]*,[ \t]*([\"'])(?P<v2>[^\"'\n]+)\2"
)
_COOKIE = re.compile(r"(?i)\b(?:set-)?cookie[\"']?[ \t]*:[ \t]*(?P<pairs>[^\n\"'`]{1,4000})")
_COOKIE_PAIR = re.compile(r"[^=;\s]+=(?P<v5>[^;\s]+)")

# "the password is X", "the token for staging was X", "password hunter2"
_PHRASE = re.compile(
    r"(?i)\b(?:pass(?:word|wd|phrase|code)|pw|pwd|secret(?:[ \t]key)?"
    r"|(?:api|access|secret|private|auth|bearer|refresh|session|bot|deploy|personal[ \t]access)"
    r"[ \t](?:key|token)|api[ \t]?key|token|credentials?)"
    r"(?:[ \t]+(?:for|of|on|to|at)[ \t]+(?:the[ \t]+|my[ \t]+|our[ \t]+)?[\w.@:/-]+"
    r"(?:[ \t]+(?!(?:is|was|will|should|became|changed|set|reset)\b)[\w.@:/-]+)?)?"
    r"(?P<verb>[ \t]+(?:is|was|will[ \t]+be|should[ \t]+be|became|(?:was[ \t]+|is[ \t]+)?"
    r"(?:changed|set|reset)[ \t]+to)[ \t]*:?|[ \t]+)[ \t]*"
    r"(?:(?:now|still|just|actually|simply|literally|currently|also|again|really)[ \t]+)*" + _VALUE
)
# "I changed the admin password to X"
_PHRASE_CHANGED = re.compile(
    r"(?i)\b(?:changed|set|reset|rotated|updated)[ \t]+(?:the[ \t]+|my[ \t]+|our[ \t]+|its[ \t]+)?"
    r"(?:[\w-]+[ \t]+)?(?:pass(?:word|wd|phrase)|pw|token|secret|api[ \t]key)[ \t]+to[ \t]+"
    + _VALUE
)
_TRAILING = ".,;:!?)]}\"'"

# Values that are not secrets: references, types, placeholders, words of prose.
_ENV_REF = re.compile(r"(?:\$(?:[A-Z_][A-Z0-9_]*\b|\{|\()|%[A-Z_][A-Z0-9_]*%|%\(|\{\{|\{%|<.*>$)")
_PLACEHOLDER = re.compile(r"(?:[*xX.…#_-]+|<[^>]*>|\[REDACTED\].*|REDACTED)$")
_DOTTED_REF = re.compile(r"[a-z_][a-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+$")
_CALL_REF = re.compile(r"[A-Za-z_][\w.]*[ \t]*[(\[]")
_PATH = re.compile(r"(?:~|\.{1,2})?/[\w.@+-]+(?:/[\w.@+-]*)+$|[A-Za-z]:\\")
_TYPES = _wordset(
    "str string bytes int integer bool boolean number any object none null nil undefined "
    "true false yes no on off optional secretstr secretbytes text varchar char uuid float "
    "required unknown list dict array map"
)
_FUNCTION_WORDS = _wordset(
    """a an the this that these those it its is are was were be been being in on at to for from
    of with without by via into onto over under about after before during per as and or but
    if when where which what who how why because since so than then there here not no now
    still just only also too very really already again always never often sometimes my your
    our their his her we you they i me us them see below above somewhere elsewhere"""
)
_NOT_FLAG_VALUES = _FUNCTION_WORDS | _wordset("flag option argument parameter value")
_COMMON = _FUNCTION_WORDS | _wordset(
    """one two each every all any some set stored kept saved hashed salted encrypted encoded
    decoded hidden masked redacted generated created provided passed sent read loaded
    checked verified validated compared used needed required missing empty blank wrong
    correct incorrect invalid valid expired expiring revoked rotated rotating refreshed
    reissued issued signed scoped bound tied attached included injected mounted exposed
    leaked printed logged committed rejected accepted ignored configured available
    unavailable changed updated reset unset different same fine ok okay good bad weak strong
    short long secure insecure safe unsafe random unique shared reused mandatory sensitive
    cached stale fresh old new current outdated active inactive disabled enabled locked
    unlocked known visible readable writable right ready done gone broken working useless
    obvious simple temporary permanent defined declared parsed truncated trimmed returned
    fetched pulled pushed written stolen compromised public private fake dummy real see
    below above flag option argument parameter variable env environment field header value
    file case likely probably actually definitely supposed meant part handled managed
    automatically manually somewhere elsewhere limited enough fixed hardcoded plain
    plaintext cleartext separate identical unchanged deleted removed added renamed moved
    copied setup bearer basic jwt oauth token tokens secret secrets password passwords key
    keys credential credentials hourly daily nightly weekly monthly yearly regularly"""
)


def redact(text: str) -> str:
    """``text`` with every secret of a known shape replaced by ``[REDACTED]``.

    Idempotent: redacting redacted text changes nothing.

    Example:
        >>> redact("export OPENAI_API_KEY=sk-abcdefghijklmnopqrstuvwx1")
        'export OPENAI_API_KEY=[REDACTED]'
    """
    if len(text) < 6:
        return text
    spans = sorted(s for s in _spans(text) if s[1] > s[0])
    if not spans:
        return text
    out: list[str] = []
    at = 0
    start, end = spans[0]
    for s, e in spans[1:]:
        if s <= end:
            end = max(end, e)
            continue
        out += [text[at:start], REDACTED]
        at, start, end = end, s, e
    out += [text[at:start], REDACTED, text[end:]]
    return "".join(out)


def _spans(text: str) -> Iterator[Span]:
    yield from _key_blocks(text)
    yield from _token_shapes(text)
    yield from _url_credentials(text)
    yield from _keyword_values(text)
    yield from _flag_values(text)
    yield from _authorization(text)
    yield from _phrases(text)


# --------------------------------------------------------------------------- shapes


@lru_cache(maxsize=1)
def _detectors() -> tuple[re.Pattern[str], ...]:
    """The regexes of detect-secrets' regex plugins, loaded on first use (about 0.1 s,
    most of it `requests`, which only its verification needs: never called here)."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.plugins.base import RegexBasedDetector

    found: list[re.Pattern[str]] = []
    plugins: list[type] = list(get_mapping_from_secret_type_to_class().values())
    for plugin in plugins:
        if issubclass(plugin, RegexBasedDetector) and plugin.__name__ not in _SKIPPED_PLUGINS:
            found.extend(p for p in plugin().denylist if isinstance(p, re.Pattern))
    return tuple(found)


@lru_cache(maxsize=1)
def _own_tokens() -> tuple[re.Pattern[str], ...]:
    # One pattern each, without a leading \b: a literal prefix lets `re` skip ahead
    # (20 times faster); the word boundary is checked on each match instead.
    return tuple(re.compile(p.removeprefix(r"\b")) for p in _TOKENS)


def _token_shapes(text: str) -> Iterator[Span]:
    windows = list(_windows(text))
    for pattern in _detectors():
        for start, end in windows:
            for m in pattern.finditer(text, start, end):
                yield _widen(text, _secret_part(m))
    for pattern in _own_tokens():
        for m in pattern.finditer(text):
            if m.start() and (text[m.start() - 1].isalnum() or text[m.start() - 1] == "_"):
                continue
            prefix = _TOKEN_PREFIX.match(m.group())
            tail = m.group()[prefix.end() if prefix else 0 :]
            if m.group().startswith("https://") or _random(tail):
                yield _widen(text, m.span())
    for m in _AWS_SECRET.finditer(text):
        word = m.group()
        cased = re.search(r"[a-z]", word) and re.search(r"[A-Z]", word)
        # Not an identifier: random text has few runs of a capital and small letters.
        prose = sum(len(w) for w in _WORDISH.findall(word)) / len(word)
        if cased and re.search(r"[0-9/+]", word) and prose < 0.75 and _entropy(word) > 4.2:
            yield m.span()


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


def _random(value: str) -> bool:
    """Whether ``value`` looks generated rather than written: letters and digits mixed,
    or upper case inside a word (``dXNlcjpwYXNz``)."""
    letters = sum(c.isalpha() for c in value)
    digits = sum(c.isdigit() for c in value)
    inner_upper = sum(c.isupper() for c in value[1:])
    lower = letters - sum(c.isupper() for c in value)
    return (letters > 0 and digits > 0) or (inner_upper >= 2 and lower > 0)


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


def _widen(text: str, span: Span) -> Span:
    """``span`` carried on to the end of its token (a plugin's fixed length, ``{24}``,
    would leave the rest of a longer key behind)."""
    start, end = span
    if start < end < len(text):
        tail = _TOKEN_CHARS.match(text, end)
        if tail:
            end = tail.end()
    return start, end


def _entropy(word: str) -> float:
    counts = [word.count(c) for c in set(word)]
    return -sum(n / len(word) * math.log2(n / len(word)) for n in counts)


def _key_blocks(text: str) -> Iterator[Span]:
    if "PRIVATE KEY" in text or "PuTTY-User-Key-File" in text:
        for m in _KEY_BLOCK.finditer(text):
            yield m.span()


def _url_credentials(text: str) -> Iterator[Span]:
    if "://" not in text:
        return
    for m in _URL_CREDENTIALS.finditer(text):
        value = m.group("v5")
        # host:8080/@scope/pkg is a port and a path, not a password
        if not re.match(r"\d{1,5}(?:/|$)", value) and not value.startswith(REDACTED):
            yield m.span("v5")


# --------------------------------------------------------------------------- context


def _keyword_values(text: str) -> Iterator[Span]:
    for m in _KEYWORD.finditer(text):
        lead = _NAME_BEFORE.search(text, max(0, m.start() - 60), m.start())
        name = (lead.group() if lead else "") + text[m.start() : m.start("sep")]
        name = name.rstrip("\"'`*_\\")
        if lead is None and m.start() > 0 and (text[m.start() - 1].isalnum()):
            continue
        words = [w.lower() for w in _NAME_WORDS.findall(name)]
        if not lead and (before := _WORD_BEFORE.search(text, max(0, m.start() - 30), m.start())):
            words.insert(0, before.group(1).lower())  # "API key: …", "the token: …"
        kind = _secret_name(words, m.group("sep").strip(" \t*_")) if words else None
        if kind is None:
            continue
        span, quoted = _value(m)
        if not quoted and _CALL_REF.match(text, span[0]):
            yield from _call_literals(text, span[0])  # os.environ.get("X", "devpass1")
            continue
        if kind == "random":  # a bare key=, auth=: only a value that looks generated
            value = text[span[0] : span[1]]
            bare_key = words[-1] == "key"
            if (
                len(value) >= (20 if bare_key else 8)
                and _random(value)
                and not (bare_key and re.fullmatch(r"[0-9a-fA-F]+", value))  # maybe a hash
            ):
                yield span
            continue
        head = lead.start() if lead else m.start()
        line = text.rfind("\n", 0, head) + 1
        if not quoted and (
            _LINE_HEAD.fullmatch(text, line, head) or text[span[0] : span[1]].isalpha()
        ):
            # A line of its own (.env, YAML, INI), or words ("=correct horse battery
            # staple"): the value is the rest of the line.
            stop = text.find("\n", span[0])
            rest = text[span[0] : len(text) if stop < 0 else stop].split(" #")[0].rstrip()
            span = (span[0], span[0] + len(rest))
        if _is_secret(text, span, quoted, words, prose=m.group("sep").strip(" \t*_") == ":"):
            yield span


def _secret_name(words: list[str], sep: str) -> str | None:
    """Whether a key whose name is ``words`` (its lower-case parts) holds a secret:
    ``"secret"``, ``"random"`` (only when its value looks generated), or None."""
    last = words[-1]
    prev = words[-2] if len(words) > 1 else ""
    if last in ("password", "passwd", "passwrd", "pwd", "passphrase", "passcode", "secret"):
        return "secret"
    if last in ("token", "apikey", "credential", "credentials"):
        return "secret"
    if last == "pass":  # DB_PASS, not "--- PASS: TestFoo" or first_pass
        ok = bool(prev) and prev not in ("first", "second", "third", "last", "next", "one")
        return "secret" if ok else None
    if last.endswith(("password", "passwd", "secret", "token", "apikey", "passphrase")):
        return "secret"
    if last == "auth":  # _auth=dXNlcjpwYXNz, not auth: required
        return "random"
    if last.endswith("key"):
        kind = prev if last == "key" else last[:-3]
        return "secret" if kind in _KEY_KINDS else "random" if last == "key" else None
    return "secret" if sep == "=" and last in ("sig", "signature") else None


def _call_literals(text: str, start: int) -> Iterator[Span]:
    """The quoted arguments of the call or subscript at ``start`` that are not names
    (``"DB_PASSWORD"``, ``"db.password"``): a default value, a literal secret."""
    stop = min(len(text), start + 300)
    for end_char in ")]\n":
        at = text.find(end_char, start, stop)
        stop = at if at >= 0 else stop
    for m in _LITERAL.finditer(text, start, stop):
        if not _NAME_LIKE.fullmatch(m.group("v")) and len(m.group("v")) >= 2:
            yield m.span("v")


def _value(m: re.Match[str]) -> tuple[Span, bool]:
    """The span of a match's value, and whether it was quoted."""
    for group in (*_QUOTED, "v5", "v0"):
        if group in m.re.groupindex and m.group(group) is not None:
            return m.span(group), group in _QUOTED
    return (m.end(), m.end()), False


def _is_secret(
    text: str, span: Span, quoted: bool, name: list[str] | None = None, prose: bool = True
) -> bool:
    """Whether the value at ``span`` is a secret, not a reference, a type, a path, a URL
    or (``prose``: after a colon or in a sentence) words of prose."""
    value = text[span[0] : span[1]]
    bare = value.strip() if quoted else value.strip().rstrip(_TRAILING)
    if len(bare) < 2 or _PLACEHOLDER.match(bare) or _ENV_REF.match(bare):
        return False
    if quoted:
        return True
    if _CALL_REF.match(text, span[0]) or _DOTTED_REF.match(bare) or _PATH.match(bare):
        return False
    words = [w.strip(_TRAILING).lower() for w in bare.split(maxsplit=2)[:2]]
    if words[0] in _TYPES or re.match(r"https?://[^\s:@]+$", bare):
        return False
    if prose and (
        words[0] in _FUNCTION_WORDS
        or (words[0] in _COMMON and (len(words) == 1 or words[1] in _COMMON))
    ):
        return False
    if name and bare.lower() in ("_".join(name), name[-1]):
        return False  # api_key=api_key: a variable passed on
    after = text[span[1] : span[1] + 1]
    return not (after in (",", ")") and re.fullmatch(r"[a-z_]+", bare))


def _flag_values(text: str) -> Iterator[Span]:
    if "-" not in text:
        return
    for m in _FLAG.finditer(text):
        span, quoted = _value(m)
        value = text[span[0] : span[1]]
        if value.startswith("-"):
            continue
        if m.group("name").lower() in ("passin", "passout", "pass") and ":" in value:
            kind, _, rest = value.partition(":")
            if kind.lower() != "pass" or not rest:
                continue  # env:VAR, file:path, fd:3 say where the password is
            span = (span[1] - len(rest), span[1])
        spaced = "=" not in text[m.end("name") : span[0]]
        if spaced and value.lower().rstrip(_TRAILING) in _NOT_FLAG_VALUES:
            continue  # "pass the --token flag"
        if _is_secret(text, span, quoted, prose=False):
            yield span
    for command in _COMMAND.finditer(text):
        flag = _COMMAND_FLAGS[" ".join(command.group("cmd").split())]
        end = _COMMAND_END.search(text, command.end(), command.end() + 400)
        for m in flag.finditer(text, command.end(), end.start() if end else command.end() + 400):
            span, _ = _value(m)
            value = text[span[0] : span[1]]
            if value and not (_PLACEHOLDER.match(value) or _ENV_REF.match(value)):
                yield span


def _authorization(text: str) -> Iterator[Span]:
    for m in _AUTHORIZATION.finditer(text):
        group = "v5" if m.group("v5") is not None else "v0"
        value = m.group(group)
        if _random(value) and not _ENV_REF.match(value):
            yield m.span(group)
    for m in _AUTH_PAIR.finditer(text):
        if not _ENV_REF.match(m.group("v2")):
            yield m.span("v2")
    for m in _COOKIE.finditer(text):
        for pair in _COOKIE_PAIR.finditer(text, m.start("pairs"), m.end("pairs")):
            if len(pair.group("v5")) >= 8 and _random(pair.group("v5")):
                yield pair.span("v5")


def _phrases(text: str) -> Iterator[Span]:
    for m in _PHRASE_CHANGED.finditer(text):
        span, quoted = _value(m)
        if _is_secret(text, span, quoted):
            yield span
    for m in _PHRASE.finditer(text):
        span, quoted = _value(m)
        value = text[span[0] : span[1]]
        if not quoted:
            value = value.rstrip(_TRAILING)
            span = (span[0], span[0] + len(value))
        if not m.group("verb").strip() and not quoted:
            # No verb ("password hunter2"): only a value no word of prose looks like.
            if len(value) < 6 or not _random(value):
                continue
            if _PATH.match(value) or "://" in value or re.fullmatch(r"v?\d[\d.x]*", value):
                continue
        if _is_secret(text, span, quoted):
            yield span
