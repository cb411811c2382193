"""Secrets out of transcript text before it can reach a model, a note, a file name or
the cache.

Transcripts hold whatever passed through the terminal: keys pasted into a prompt,
``.env`` files a tool read, connection strings in logs. :func:`redact` is applied where
transcript text enters vaultmem (:func:`vaultmem.agent.transcript.read_entries` redacts
every entry's text, tool arguments, session id and folder as it reads them, and a
``--project`` name is redacted as it is taken), so nothing downstream (chunks, prompts,
titles, slugs, wikilinks, handoff sections, the manifest, the indexes, the transcript
state, the logs) sees raw text.

Every match becomes ``[REDACTED]``. The rules:

- **shapes** (:mod:`vaultmem.agent.secret_shapes`): detect-secrets' regex plugins, the
  token families of ``data/token_families.json`` (gitleaks' documented prefixes and
  vendors' formats), bare AWS secret keys, and a generated string that is a whole tool
  argument;
- **phrases in many languages** (:mod:`vaultmem.agent.credential_phrases`): "the
  password is X", "das Passwort lautet X", "密码是X" over the table of
  ``data/credential_words.json``, and the entropy guard: a high-entropy string next to
  a credential word in any of its languages;
- **context rules** here: private key blocks (PEM, OpenSSH, PGP, PuTTY) whole; the
  password of a URL (``scheme://user:pass@host``, one holding ``/``, ``@`` or ``:``
  too); the value of a secret-named key (``DB_PASSWORD=…``, ``"api_key": "…"``,
  ``token: …``, ``AccountKey=…``; on a line of its own, the rest of the line), of a
  name/value pair (``- name: DB_PASSWORD`` / ``value: …``) and of a ``.pgpass`` line;
  CLI password flags, quoted or chained (``--password X``, ``mysql -pX``, ``sshpass -p
  'X'``, ``curl -u user:X``, ``redis-cli -a X``, ``echo X | docker login
  --password-stdin``…); ``Authorization:`` and ``Cookie:`` values;
- **a password's shape** (:mod:`vaultmem.agent.password_shape`): a word that mixes
  cases, digits and a symbol (``Tundra#Raven62``) wherever it stands;
- **command output** (:mod:`vaultmem.agent.secret_output`): the lines a command that
  prints secrets printed (``… | base64 -d``, ``vault kv get``, ``cat .env``…).

A shell parameter expansion is a reference, never redacted (``${API_KEY:?API_KEY must
be set}``), unless its default is itself a secret (``${DB_PASSWORD:-X}``).

The rules leave ordinary text alone: a value that is a reference (``$DB_PASSWORD``,
``os.environ["X"]``, ``settings.token``, ``{{ secret }}``), a type (``token: str``), a
path, a URL, a digest or a word of prose in any language ("the token is expired", "das
Passwort ist abgelaufen") is kept, and so are hashes, UUIDs, colour codes and names.
detect-secrets runs offline: only its regexes are used, never its verification requests.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cache

from vaultmem.agent.credential_clauses import clause_spans, passphrase_spans
from vaultmem.agent.credential_phrases import credential_spans, placeholder
from vaultmem.agent.credential_phrases import (
    is_secret_value as _is_secret,
)
from vaultmem.agent.credential_words import is_function_word, owned
from vaultmem.agent.password_shape import shape_spans
from vaultmem.agent.secret_names import name_words, secret_name
from vaultmem.agent.secret_output import output_spans
from vaultmem.agent.secret_shapes import generated, lazy_regex, looks_random, token_spans
from vaultmem.agent.secret_syntax import syntax_spans

__all__ = ["REDACTED", "redact"]

REDACTED = "[REDACTED]"

Span = tuple[int, int]


def _wordset(words: str) -> frozenset[str]:
    return frozenset(words.split())


_KEY_BLOCK = lazy_regex(
    r"-{3,}[ \t]?BEGIN[A-Z0-9 ]*PRIVATE KEY[A-Z0-9 ]*-{3,}"
    r".*?(?:-{3,}[ \t]?END[A-Z0-9 ]*PRIVATE KEY[A-Z0-9 ]*-{3,}|\Z)"
    r"|PuTTY-User-Key-File-\d+:.*?(?:Private-MAC:[ \t]*[0-9a-fA-F]+|\Z)",
    re.DOTALL,
)

# scheme://user:password@host: greedy, so the last '@' before the host ends the password.
_URL_CREDENTIALS = lazy_regex(
    r"\b[a-zA-Z][a-zA-Z0-9+.-]{1,20}://[^\s:/@'\"<>]{0,256}:"
    r"(?P<v5>[^\s'\"<>]{1,256})@[A-Za-z0-9._~%-]+(?=[:/?#\s'\"<>)\]]|$)"
)

# scheme://key@host: a key as the whole user part (a Sentry DSN)
_URL_KEY = lazy_regex(
    r"\b[a-zA-Z][a-zA-Z0-9+.-]{1,20}://(?P<key>[A-Za-z0-9_-]{16,256})@[A-Za-z0-9]"
)

# A value: quoted (the quotes stay), or a run of characters that are not delimiters.
_VALUE = (
    r"(?:\\\"(?P<v1>[^\"\n]{0,500}?)\\\"|\"(?P<v2>[^\"\n]{0,500})(?:\"|\Z)|'(?P<v3>[^'\n]{0,500})'"
    r"|`(?P<v4>[^`\n]{0,500})`|(?P<v5>[^\s\"'`,;&<>(){}\[\]]{1,500}))"
)
# (a value cut off with the text, "token": "IQoJb3…, is still quoted)
# A password given to a command: unquoted, it runs to the next blank (``abc&def``).
_CLI_VALUE = (
    r"(?:\\\"(?P<v1>[^\"\n]{0,500}?)\\\"|\"(?P<v2>[^\"\n]{0,500})\"|'(?P<v3>[^'\n]{0,500})'"
    r"|`(?P<v4>[^`\n]{0,500})`|(?P<v5>[^\s\"'`]{1,500}))"
)
_QUOTED = ("v1", "v2", "v3", "v4")
# ${NAME}, ${NAME:?message}, ${NAME:-default}, ${#NAME}, ${NAME//a/b}, ${NAME%.*}
_EXPANSION = re.compile(
    r"\$\{(?P<name>#?[A-Za-z_]\w*)(?P<op>:?[-=?+]|//?|##?|%%?|:(?=\d))?(?P<word>[^{}\n]*)\}"
)
_TRAILING = ".,;:!?)]}\"'"

# key = value, key: value, "key": "value", key => value, key := value (the key's name is
# read backwards from the secret word, so the scan starts only at those words).
_KEYWORD = re.compile(
    r"(?i)(?=[pstkac])(?:password|passwd|passwrd|pwd?|pass|passphrase|passcode|secret|token"
    r"|key|auth|sig|signature|credentials?)"
    r"(?:[_.-](?:base|value|data|b64|base64|hex|raw|bytes|enc|encoded|material)\b)?"
    r"(?:\\?[\"'`])?(?:\*\*|__)?(?P<sep>[ \t]*(?::=|=>|=|:)(?:\*\*|__)?[ \t]*)" + _VALUE
)
_NAME_BEFORE = re.compile(r"(?<![A-Za-z0-9_.-])[A-Za-z_][A-Za-z0-9_.-]{0,60}\Z")
_LINE_HEAD = re.compile(r"[ \t]*(?:export[ \t]+|set[ \t]+|-[ \t]+|#[ \t]*)?[\"']?")
_WORD_BEFORE = re.compile(r"(?<![\w.-])([A-Za-z]+)[ \t]\Z")
_LITERAL = re.compile(r"([\"'])(?P<v>[^\"'\n]*)\1")
_NAME_LIKE = re.compile(r"[A-Z][A-Z0-9_]*|[a-z]+|[a-z][a-z0-9_]*(?:(?:[._/:-]|::)[a-z0-9_]+)+")
# The first argument of a lookup: a header's or a variable's name (words joined).
_LOOKUP_KEY = re.compile(r"[A-Za-z][A-Za-z]*(?:[-_.:][A-Za-z]+)*")
_PROMPT = re.compile(r"[A-Za-z][A-Za-z ]*[:?]?[ \t]*")  # input('Password: ')
_DOTTED_NAME = r"[a-z][a-z0-9]{0,11}(?:[:._/-][a-z0-9]{1,12}){2,}"
# - name: DB_PASSWORD / value: X;  {"name": "DB_PASSWORD", "value": "X"};  Name=X,Value=Y;
# "db_password": {"sensitive": true, "value": "X"} (terraform output)
_NAME_VALUE = lazy_regex(
    r"(?i)\bname[\"']?[ \t]*[:=][ \t]*[\"']?(?P<name>[A-Za-z_][\w.-]{0,80})[\"']?[ \t]*"
    r"(?:,|\n)[ \t]*(?:-[ \t]+)?[\"']?value[\"']?[ \t]*[:=][ \t]*" + _VALUE
)
_OBJECT_VALUE = lazy_regex(
    r"(?P<name>[A-Za-z_][\w.-]{0,80})[\"']?[ \t]*[:=][ \t]*\{[^{}]{0,300}?"
    r"[\"']value[\"'][ \t]*:[ \t]*" + _VALUE
)
# <password>X</password>; <add key="ClearTextPassword" value="X" /> (NuGet.Config)
_XML = lazy_regex(
    r"(?i)<(?P<tag>[\w:.-]{0,40}(?:password|passwd|secret|token|api_?key|apikey)[\w.-]{0,20})>"
    r"(?P<v5>[^<\n]{1,500})</(?P=tag)>"
    r"|\b(?:key|name)=\"(?P<name>[^\"\n]{1,80})\"[ \t]+value=\"(?P<v2>[^\"\n]{1,500})\""
)
# define('DB_PASSWORD', 'X'), ENV['DB_PASSWORD'] = 'X', setProperty("db.password", "X")
_QUOTED_KEY = lazy_regex(
    r"(?i)([\"'])(?P<name>[\w.-]{0,40}(?:password|passwd|secret|token|api_?key|apikey)[\w.-]{0,20})\1"
    r"[ \t]*(?:,|\][ \t]*=|=>|:)[ \t]*([\"'])(?P<v2>[^\"'\n]{1,500})\3"
)
# host:port:database:user:password, a line of ~/.pgpass
_PGPASS = lazy_regex(
    r"(?<![\w.-])(?:[\w-]*[A-Za-z.][\w.-]*|\*):(?:\d{1,5}|\*):(?:[\w.-]+|\*):(?:[\w.@-]+|\*)"
    r":(?P<v5>[^\s:]+)(?=\s|$)"
)
_ID_SHAPE = re.compile(
    r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
    r"|(?:[A-Za-z][A-Za-z0-9]*-)+[0-9a-f]{32,}"
)
_PGPASS_PORT = re.compile(r":(?:\d{1,5}|\*):")
_HEX_PAIRS = re.compile(r"(?:[0-9A-Fa-f]{2}:){4,}[0-9A-Fa-f]{2}")
# "creds: admin / X", "login admin, pass X"
_USER_PASS = lazy_regex(
    r"(?i)\b(?:creds?|credentials|login|zugangsdaten|anmeldedaten|identifiants|credenciales"
    r"|credenciais|credenziali|inloggegevens)[ \t]*:?[ \t]+[^\s/,]{1,60}[ \t]*"
    r"(?:/|,[ \t]*pass(?:word)?[ \t]*:?|[ \t]pass(?:word)?[ \t]*:?)[ \t]*" + _VALUE
)

# --password X, --db-password=X, --api-key X, -storepass X (java), -passin pass:X (openssl)
_FLAG = re.compile(
    r"-(?<![\w-]-)-?(?P<name>(?:[A-Za-z][\w-]{0,40}?)?(?:password|passwd|pass|passphrase|token"
    r"|secret|api-?key|access-key|secret-key|private-key|storepass|keypass|passin|passout"
    r"|credentials?))(?:[ \t]*=[ \t]*|[ \t]+)" + _CLI_VALUE,
    re.IGNORECASE,
)
_NOT_FLAG_VALUES = _wordset("flag option argument parameter value")
# Short password flags, only after the commands where they mean a password ("+" joins
# the words of a command: docker login).
_COMMAND_FLAG_TABLE = (
    ("mysql mysqldump mysqladmin mysqlimport mysqlcheck mysqlsh mariadb 7z 7za", "-p"),
    ("sshpass", r"-p[ \t]*"),
    ("docker+login podman+login nerdctl+login buildah+login oras+login skopeo+login", r"-p[ \t]+"),
    ("helm+registry+login mongo mongosh mongodump mongorestore mongoexport az", r"-p[ \t]+"),
    ("redis-cli keydb-cli", r"-a[ \t]+"),
    ("ldapsearch ldapmodify ldapadd ldapdelete ldapwhoami ldappasswd", r"-w[ \t]+"),
    ("zip unzip rar unrar", r"-P[ \t]*"),
    ("mosquitto_pub mosquitto_sub mosquitto_rr sqlcmd", r"-P[ \t]+"),
    ("ssh-keygen", r"-[NP][ \t]*"),
    ("openssl+enc", r"-k[ \t]+"),
    ("htpasswd", r"-[a-zA-Z]*b[a-zA-Z]*(?:[ \t]+-\w+)*[ \t]+\S+[ \t]+\S+[ \t]+"),
    ("rabbitmqctl", r"(?:add_user|change_password)[ \t]+\S+[ \t]+"),
    ("wandb+login", r"(?:--?[\w-]+[ \t]+)*"),
    ("ngrok", r"(?:config[ \t]+add-authtoken|authtoken)[ \t]+"),
    ("curl", r"(?:-u|-U|--user|--proxy-user)(?:[ \t]*=[ \t]*|[ \t]*)['\"]?[^\s:'\"]*:"),
    ("http https xh", r"(?:-a|--auth)(?:[ \t]*=[ \t]*|[ \t]+)['\"]?[^\s:'\"]*:"),
    ("wget", r"--(?:http-|proxy-|ftp-)?user[ \t=]+['\"]?[^\s:'\"]*:"),
    ("smbclient rpcclient smbmap smbget", r"-U[ \t]*['\"]?[^\s%'\"]*%"),
)
_COMMAND_FLAGS = {
    cmd.replace("+", " "): flag for cmds, flag in _COMMAND_FLAG_TABLE for cmd in cmds.split()
}
_COMMAND = re.compile(
    r"(?<![\w.-])(?P<cmd>"
    + "|".join(c.replace(" ", r"[ \t]+") for c in sorted(_COMMAND_FLAGS, key=len, reverse=True))
    + r")(?=[ \t])"
)
# One command of a shell line: quoted strings whole, and ;&| glued inside a word
# (``-p abc&def``) kept; a blank before ;, &&, || or | ends it.
_COMMAND_SEGMENT = re.compile(
    r"(?:'[^'\n]*'|\"[^\"\n]*\"|(?<=\S)[;&|]+(?=[^\s;&|])|[^\n;&|'\"]|['\"])*"
)
# echo 'X' | docker login --password-stdin;  echo X | sudo -S cmd
_STDIN_PASSWORD = lazy_regex(
    r"\b(?:echo|printf)[ \t]+(?:-[ne]+[ \t]+)?(?:['\"]%s(?:\\n)?['\"][ \t]+)?"
    + _CLI_VALUE
    + r"[ \t]*\|[^\n|]*(?:--password-stdin|\bsudo[ \t]+(?:-\w+[ \t]+)*-\w*S)"
)
_AUTHORIZATION = re.compile(
    r"(?i)\b(?:proxy-)?authorization[\"']?[ \t]*[:=][ \t]*[\"']?(?:[A-Za-z-]+[ \t]+)?"
    r"(?P<v5>[A-Za-z0-9._~+/=-]{8,})|\b(?:bearer|basic)[ \t]+(?P<v0>[A-Za-z0-9._~+/=-]{12,})"
)
# auth=("user", "pw"), HTTPBasicAuth("user", "pw"); Cookie: / Set-Cookie: name=value
_AUTH_PAIR = re.compile(
    r"(?i)\b(?:auth|basic_?auth|http(?:basic|digest)auth|networkcredential|passwordauthentication"
    r"|usernamepassword(?:credentials|authenticationtoken)|basicawscredentials)"
    r"[ \t]*=?[ \t]*\([ \t]*"
    r"([\"'])[^\"'\n]*\1[ \t]*,[ \t]*([\"'])(?P<v2>[^\"'\n]+)\2"
)
_COOKIE = re.compile(r"(?i)\b(?:set-)?cookie[\"']?[ \t]*:[ \t]*(?P<pairs>[^\n\"'`]{1,4000})")
_COOKIE_PAIR = re.compile(r"[^=;\s]+=(?P<v5>[^;\s]+)")
# "I changed the admin password to X"
_EXAMPLE_KEY = re.compile(r"EXAMPLE(?:KEY)?$")
# the word for a value in its place, in capitals (postgres://USER:PASSWORD@HOST)
_NAMED_VALUE = re.compile(r"PASSWORD|PASSWD|PASS|PWD|SECRET|TOKEN|API_KEY|APIKEY")
_PHRASE_CHANGED = lazy_regex(
    r"(?i)\b(?:changed|set|reset|rotated|updated)[ \t]+"
    r"(?:the[ \t]+|my[ \t]+|our[ \t]+|its[ \t]+|your[ \t]+|his[ \t]+|her[ \t]+|their[ \t]+)?"
    r"(?:[\w-]+[ \t]+){0,2}(?:pass(?:word|wd|phrase)|pw|token|secret|api[ \t]key)[ \t]+to[ \t]+"
    + _VALUE
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
    found = [
        s
        for s in _spans(text)
        if s[1] > s[0]
        and not _NAMED_VALUE.fullmatch(text, *s)
        and not placeholder(text[s[0] : s[1]])
    ]
    if "EXAMPLE" in text:
        # AWS documents AKIAIOSFODNN7EXAMPLE and …/bPxRfiCYEXAMPLEKEY as examples: public
        found = [s for s in found if not _EXAMPLE_KEY.search(text, s[0], s[1])]
    if "${" in text:
        found = _outside_expansions(text, found)
    spans = sorted(_around_markers(text, found))
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


def _around_markers(text: str, spans: list[Span]) -> Iterator[Span]:
    """``spans`` less those inside a ``[REDACTED]`` already there, and widened to cover a
    marker they cut into: redacting redacted text changes nothing."""
    if REDACTED not in text:
        yield from spans
        return
    markers = [(m.start(), m.end()) for m in re.finditer(re.escape(REDACTED), text)]
    for start, end in spans:
        for m_start, m_end in markers:
            if m_start < end and start < m_end:
                start, end = min(start, m_start), max(end, m_end)
        if not any(m_start <= start and end <= m_end for m_start, m_end in markers):
            yield start, end


def _spans(text: str) -> Iterator[Span]:
    yield from _key_blocks(text)
    yield from token_spans(text)
    yield from _url_credentials(text)
    yield from _keyword_values(text)
    yield from _named_values(text)
    yield from _flag_values(text)
    yield from _authorization(text)
    yield from _changed_to(text)
    yield from credential_spans(text)
    yield from output_spans(text)
    yield from syntax_spans(text)
    yield from clause_spans(text)
    yield from passphrase_spans(text)
    yield from shape_spans(text)


def _outside_expansions(text: str, spans: list[Span]) -> list[Span]:
    """``spans`` less those that start inside a shell parameter expansion (``${NAME}``,
    ``${NAME:?message}``, ``${#NAME}``: a reference, its name and its message are no
    secret), plus the defaults that are secrets (``${DB_PASSWORD:-X}``, ``${T:-ghp_…}``)."""
    inside: list[Span] = []
    defaults: list[Span] = []
    for m in _EXPANSION.finditer(text):
        inside.append(m.span())
        word = m.group("word")
        if m.group("op") in (":-", "-", ":=", "=") and word and _secret_default(m["name"], word):
            defaults.append(m.span("word"))
    kept = [s for s in spans if not any(a <= s[0] < b for a, b in inside)]
    return kept + defaults


def _secret_default(name: str, word: str) -> bool:
    """Whether the default ``word`` of the variable ``name`` is a secret: by its shape,
    or as the value of a secret-named variable (``${DB_PASSWORD:-s3cret!}``)."""
    if placeholder(word):
        return False
    if any(True for _ in token_spans(word)):
        return True
    words = name_words(name)
    kind = secret_name(words, "=") if words else None
    if kind == "secret":
        return _is_secret(word, (0, len(word)), False, words, prose=False)
    return generated(word, hex_ok=kind is not None)


def _key_blocks(text: str) -> Iterator[Span]:
    if "PRIVATE KEY" in text or "PuTTY-User-Key-File" in text:
        for m in _KEY_BLOCK().finditer(text):
            yield m.span()


def _url_credentials(text: str) -> Iterator[Span]:
    if "://" not in text:
        return
    for m in _URL_CREDENTIALS().finditer(text):
        value = m.group("v5")
        # host:8080/@scope/pkg is a port and a path, not a password
        if (
            not re.match(r"\d{1,5}(?:/|$)", value)
            and not value.startswith(REDACTED)
            and not placeholder(value)  # :$DB_PASSWORD@, :****@
        ):
            yield m.span("v5")
    for m in _URL_KEY().finditer(text):
        if generated(m.group("key"), hex_ok=True):
            yield m.span("key")


# --------------------------------------------------------------------------- key = value


def _keyword_values(text: str) -> Iterator[Span]:
    for m in _KEYWORD.finditer(text):
        lead = _NAME_BEFORE.search(text, max(0, m.start() - 60), m.start())
        name = (lead.group() if lead else "") + text[m.start() : m.start("sep")]
        name = name.rstrip("\"'`*_\\")
        glued = text[m.start() - 1 : m.start()]
        if lead is None and (glued.isalnum() or glued == ":"):
            continue  # a word's end; arn:…:secret:…, heroku auth:token
        words = name_words(name)
        if not lead and (before := _WORD_BEFORE.search(text, max(0, m.start() - 30), m.start())):
            if owned(text, before.start(1)):
                continue  # "the SHA-256 of each API key: …"
            words.insert(0, before.group(1).lower())  # "API key: …", "the token: …"
        kind = secret_name(words, m.group("sep").strip(" \t*_")) if words else None
        if "public" in words:
            continue  # PublicKey = …, public_key: a public key
        head = lead.start() if lead else m.start()
        line = text.rfind("\n", 0, head) + 1
        if kind is None and name == "pass" and _LINE_HEAD.fullmatch(text, line, head):
            kind = "secret"  # "pass: X" as a YAML key (not "--- PASS: TestFoo")
        if kind is None and name == "pass" and text[:head].rstrip()[-1:] in ("{", ","):
            kind = "secret"  # auth: { user: 'bot', pass: 'X' }: an object's key
        if kind is None:
            continue
        span, quoted = _value(m)
        closing = text[span[0] - 1 : span[0]]
        prompt = text[span[0] : span[0] + 1] in (" ", "\t") and text[line:head].count(closing) % 2
        if quoted and closing in "\"'" and prompt:
            continue  # read -p "Password: " PASS: the key is inside a string, a prompt
        if not quoted and re.match(
            r"[A-Za-z_][\w.?]*(?:::[A-Za-z_][\w.?]*)*[ \t]*[(\[]", text[span[0] : span[0] + 80]
        ):
            yield from _call_literals(text, span[0])  # os.environ.get("X", "devpass1")
            continue
        if words[-1] == "key" and re.fullmatch(_DOTTED_NAME, text[span[0] : span[1]]):
            continue  # session_key = "user:42:profile": the name of a key, not a key
        if kind == "random":  # a bare key=, auth=: only a value that looks generated
            if _generated_value(text[span[0] : span[1]], bare_key=words[-1] == "key"):
                yield span
            continue
        if not quoted and text[span[0] : span[0] + 1] == "#":
            continue  # OPENAI_API_KEY=  # leave empty…: a comment, no value
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


def _generated_value(value: str, *, bare_key: bool) -> bool:
    """The value of a key that is not named a secret (``key=``, ``auth=``), judged by
    itself: long enough and generated-looking, and for a bare ``key`` not a hex hash."""
    if placeholder(value) or len(value) < (20 if bare_key else 8) or not looks_random(value):
        return False
    if _ID_SHAPE.fullmatch(value):
        return False  # Idempotency-Key: <uuid>, key: Linux-npm-<digest>: an id
    return not (bare_key and re.fullmatch(r"[0-9a-fA-F]+", value))


def _call_literals(text: str, start: int) -> Iterator[Span]:
    """The quoted arguments of the call or subscript at ``start`` that are not names
    (``"DB_PASSWORD"``, ``"db.password"``): a default value, a literal secret."""
    stop = min(len(text), start + 300)
    for end_char in ")]\n":
        at = text.find(end_char, start, stop)
        stop = at if at >= 0 else stop
    opening = re.compile(r"[^(\[\n]*[(\[][ \t]*").match(text, start, stop)
    for m in _LITERAL.finditer(text, start, stop):
        literal = m.group("v")
        if opening and m.start() == opening.end() and _LOOKUP_KEY.fullmatch(literal):
            continue  # headers.get("X-Api-Key"), getenv('Authorization'): what is looked up
        if len(literal) >= 2 and not (_NAME_LIKE.fullmatch(literal) or _PROMPT.fullmatch(literal)):
            yield m.span("v")


def _value(m: re.Match[str]) -> tuple[Span, bool]:
    """The span of a match's value, and whether it was quoted."""
    for n in ("1", "2", "3", "4", "5", "0"):
        group = "v" + n
        if group in m.re.groupindex and m.group(group) is not None:
            return m.span(group), n in "1234"
    return (m.end(), m.end()), False


def _named_values(text: str) -> Iterator[Span]:
    """Values whose secret name stands apart: a name/value pair, a terraform output,
    a ``.pgpass`` line, "creds: admin / X"."""
    low = text.lower()
    pairs = "name" in low and "value" in low
    objects = "{" in text and ('"value"' in text or "'value'" in text)
    for pattern in (_NAME_VALUE(),) * pairs + (_OBJECT_VALUE(),) * objects:
        for m in pattern.finditer(text):
            words = name_words(m.group("name"))
            span, quoted = _value(m)
            if words and secret_name(words, "=") and _is_secret(text, span, quoted, prose=False):
                yield span
    named = any(w in low for w in ("pass", "secret", "token", "key"))
    for m in _QUOTED_KEY().finditer(text) if named and ("'" in text or '"' in text) else ():
        words = name_words(m.group("name"))
        if text[m.end() : m.end() + 40].lstrip()[:1] == ":":
            continue  # {"error": "invalid_token", "error_description": …}: the next key
        if words and secret_name(words, "=") and _is_secret(text, m.span("v2"), True):
            yield m.span("v2")
    if "<" in text or "value=" in text:
        for m in _XML().finditer(text):
            span, quoted = _value(m)
            name = m.group("tag") or m.group("name")
            words = name_words(name)
            if words and secret_name(words, "=") and _is_secret(text, span, True):
                yield span
    if _PGPASS_PORT.search(text):
        for m in _PGPASS().finditer(text):
            if _HEX_PAIRS.search(text, max(0, m.start() - 12), m.end()):
                continue  # a fingerprint: 0B:22:8E:…:8A
            if not placeholder(m.group("v5")):
                yield m.span("v5")
    users = ("cred", "login", "zugang", "anmelde", "identifiant", "inlogg")
    for m in _USER_PASS().finditer(text) if any(w in low for w in users) else ():
        span, quoted = _value(m)
        value = text[span[0] : span[1]].rstrip(_TRAILING)
        long_enough = quoted or len(value) >= 6 or looks_random(value)
        if long_enough and _is_secret(text, (span[0], span[0] + len(value)), quoted):
            yield span[0], span[0] + len(value)


# --------------------------------------------------------------------------- commands


def _flag_values(text: str) -> Iterator[Span]:
    for m in _FLAG.finditer(text) if "-" in text else ():
        span, quoted = _value(m)
        value = text[span[0] : span[1]]
        if value.startswith("-"):
            continue
        if not quoted:
            value = value.rstrip(_TRAILING)
            span = (span[0], span[0] + len(value))
        if m.group("name").lower() in ("passin", "passout", "pass") and ":" in value:
            kind, _, rest = value.partition(":")
            if kind.lower() != "pass" or not rest:
                continue  # env:VAR, file:path, fd:3 say where the password is
            span = (span[1] - len(rest), span[1])
        spaced = "=" not in text[m.end("name") : span[0]]
        low = value.lower()
        if spaced and (is_function_word(low) or low in _NOT_FLAG_VALUES):
            continue  # "pass the --token flag"
        if _is_secret(text, span, quoted, prose=False):
            yield span
    for command in _COMMAND.finditer(text):
        flag = _command_flag(" ".join(command.group("cmd").split()))
        end = _COMMAND_SEGMENT.match(text, command.end()).end()  # type: ignore[union-attr]
        for m in flag.finditer(text, command.end(), min(end, command.end() + 400)):
            span, _ = _value(m)
            value = text[span[0] : span[1]]
            if value and not placeholder(value):
                yield span
    if "--password-stdin" in text or "sudo" in text:
        for m in _STDIN_PASSWORD().finditer(text):
            span, _ = _value(m)
            if not placeholder(text[span[0] : span[1]]):
                yield span


@cache
def _command_flag(command: str) -> re.Pattern[str]:
    """The password flag of ``command`` and its value, compiled when first met."""
    return re.compile(r"[ \t]" + _COMMAND_FLAGS[command] + _CLI_VALUE)


def _authorization(text: str) -> Iterator[Span]:
    low = text.lower()  # each regex only where its words are: prose pays nothing
    for m in (
        _AUTHORIZATION.finditer(text) if "auth" in low or "bearer" in low or "basic" in low else ()
    ):
        group = "v5" if m.group("v5") is not None else "v0"
        value = m.group(group)
        if looks_random(value) and not placeholder(value):
            yield m.span(group)
    paired = "(" in text and ("auth" in low or "credential" in low)
    for m in _AUTH_PAIR.finditer(text) if paired else ():
        if not placeholder(m.group("v2")):
            yield m.span("v2")
    for m in _COOKIE.finditer(text) if "cookie" in low else ():
        for pair in _COOKIE_PAIR.finditer(text, m.start("pairs"), m.end("pairs")):
            if len(pair.group("v5")) >= 8 and generated(pair.group("v5"), hex_ok=True):
                yield pair.span("v5")


def _changed_to(text: str) -> Iterator[Span]:
    low = text.lower()
    if not any(w in low for w in ("changed", "set", "rotated", "updated")):
        return
    for m in _PHRASE_CHANGED().finditer(text):
        span, quoted = _value(m)
        if _is_secret(text, span, quoted):
            yield span


def _main() -> None:
    """``python -m vaultmem.agent.redact``: stdin to stdout, redacted line by line (the
    way a hook job's output reaches ``hooks-jobs.log``)."""
    import sys

    with open(sys.stdin.fileno(), encoding="utf-8", errors="replace", closefd=False) as source:
        for line in source:
            sys.stdout.write(redact(line))
            sys.stdout.flush()


if __name__ == "__main__":
    _main()
