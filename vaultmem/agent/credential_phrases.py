"""Credentials named in words, in any of the languages of ``credential_words.json``.

Two rules over the table of credential words (password, passphrase, PIN, secret, token,
API key, and the words for key, auth, bearer…: :mod:`vaultmem.agent.credential_words`),
each giving spans of a text to redact:

- :func:`phrase_spans`: a credential word, an optional filler ("for the wifi", "für den
  Server", "от базы", "的"), a link ("is", "ist", "est", "是", "は", ":", "—") and a value:
  the next token, or a quoted string (``"…"``, ``'…'``, ````…````, ``«…»``, ``„…“``,
  ``「…」``). Without a link, only a value that looks generated counts ("password
  hunter2x"). The value is judged by the word's kind and language: a word of prose
  ("expired", "abgelaufen", "incorrecta"), a number after a token word ("トークン数は
  4096"), a name after a naming word ("the secret is named harbor-db") or a reference
  (``$DB_PASSWORD``) is kept. Past the usual filler, a longer one (twelve words, 32
  characters in scripts without spaces: "le mot de passe du wifi de la salle serveur est
  X") joins a value only if it looks generated.
- :func:`guard_spans`, the entropy guard: a string with the entropy of a random one
  (:func:`vaultmem.agent.secret_shapes.generated`) within a few words after a
  credential word, or just before "is the API key", is redacted even without a known
  prefix; after a strong word (password, secret, token, API key, PIN), anywhere in its
  sentence; a word such as "commit", "hash", "id" or "public" between them stops it.

:func:`is_secret_value` is the judgement of a value the ``key = value`` rules share.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from vaultmem.agent.credential_words import (
    Hit,
    Language,
    heads,
    hits,
    is_function_word,
    is_prose_word,
    links_of,
    reverse_of,
    signs,
)
from vaultmem.agent.secret_shapes import (
    generated,
    lazy_regex,
    looks_random,
    named,
    public_before,
    public_value,
)

__all__ = ["credential_spans", "guard_spans", "is_secret_value", "phrase_spans", "placeholder"]

Span = tuple[int, int]
_QUOTES = {
    '"': '"', "'": "'", "`": "`", "«": "»", "»": "«", "„": "“", "“": "”", "‚": "‘",
    "「": "」", "『": "』", "‘": "’",
}  # fmt: skip
_TRAILING = ".,;:)]}»“”」』、。，\"'"
_BARRIERS = frozenset(
    """commit commits sha sha1 sha256 sha-256 sha512 md5 hash hashes digest checksum
    fingerprint id ids kid uuid guid trace span request version build run issue ticket pr public
    host sum integrity etag example e.g. like format prefix pattern length count of job jobs
    task event pod image release migration order invoice message page""".split()  # noqa: SIM905
)
# Before the word, "of" joins the sentence ("the settings of the runner"), not the key.
_BARRIERS_BEFORE = _BARRIERS - {"of"}
# Words before "key" that make it no credential: a public key, a database's sort key.
_NOT_CREDENTIAL = frozenset(
    "public jwks host primary foreign sort partition cache composite unique index hot map".split()  # noqa: SIM905
)
_INDEFINITE = frozenset("a an ein eine einen un une una uno um uma een".split())  # noqa: SIM905
_CANDIDATE = re.compile(r"[A-Za-z0-9+/_.~=-]{16,}")
# The entropy guard's reach: six words after any credential word; after a strong one (a
# password, a secret, a token, an API key, a PIN) the rest of its sentence, and before it
# the sentence's start.
_NEAR_WORDS = 6
_SENTENCE_WORDS = 40
_SENTENCE_CHARS = 400
_SENTENCE_END = lazy_regex(r"[.!?。！？](?=[\"')\]»”]*(?:\s|$))")
_TYPES = frozenset(
    """str string bytes int integer bool boolean number any object none null nil undefined
    true false yes no on off optional secretstr secretbytes text varchar char uuid float
    required unknown list dict array map await async new yield return lambda function self
    this cls typeof void""".split()  # noqa: SIM905
)
# $DB_PASSWORD, ${X}, $(cmd), %X%, {{ x }}, <x>; PowerShell's $env:X; a variable of a
# language that marks them ($db_pass, $this->password), the value being that name alone
_ENV_REF = re.compile(
    r"(?:\$(?:[A-Z_][A-Z0-9_]*\b|\{|\(|env:[A-Za-z_]\w*)|%[A-Z_][A-Z0-9_]*%|%\(|\{\{|\{%|<.*>$"
    r"|\$[a-z_]+(?:->[a-z_]+)*(?![^\s;,)\]}'\"`])"
    # JavaScript's environment: process.env.TOKEN, import.meta.env.VITE_KEY
    r"|(?:process|import\.meta|Deno)\.env\b)"
)
_PLACEHOLDER = re.compile(
    r"(?:[*xX.…#_~-]+|<[^>]*>|\[REDACTED\].*|REDACTED|![A-Za-z_]+(?:[ \t]+[|>][-+]?)?)$"
    # what a template or an example puts where the secret goes
    # the documented example keys of AWS (AKIAIOSFODNN7EXAMPLE, …/bPxRfiCYEXAMPLEKEY)
    r"|\S*EXAMPLE(?:KEY)?$"
    # a vendor's prefix before a mask: ghp_xxxxxxxx, sk-XXXXXXXX, xoxb-xxxx-xxxx
    r"|[A-Za-z0-9_-]{1,16}[_-](?:[xX*]{4,}[_.-]?)+$|[A-Za-z0-9_-]{1,16}[_-](?:\.{3}|…)$"
    # a mask that keeps a few characters: ****************51DCE5 (created …)
    r"|(?:\*{4,}|•{4,})[A-Za-z0-9]{0,8}(?:[ \t].*)?$"
    # an Azure App Service reference to Key Vault
    r"|@Microsoft\.KeyVault\(.*"
    # a CloudFormation function or dynamic reference: !Sub '{{resolve:…}}', !Ref DbPass
    r"|!(?:Sub|Ref|GetAtt|ImportValue|Join|FindInMap|Select)\b.*|.*\{\{resolve:.*"
    # a format directive or a template's field: %s, %(password)s, {password}
    r"|%\(?\w*\)?[sd]|\{[\w.]+\}"
    # the word for the value in capitals, in a template: postgres://USER:PASSWORD@HOST
    r"|(?:PASSWORD|PASSWD|PASS|PWD|SECRET|TOKEN|API_KEY|APIKEY|KEY)$"
    r"|(?i:(?:your|my|some)[-_ ]\S*|\S*[-_ ](?:here|goes[-_ ]here)|(?:change|replace)[-_ ]?me"
    r"|placeholder"
    r"|dummy\S*|example\S*|sample\S*|todo|tbd|n/?a)$"
)
# a safe's combination (51-22-35), a recovery code (R4AN-N78S-3BOK, 0W02-C8HK-1M6I)
_COMBINATION = re.compile(r"\d{1,3}(?:-\d{1,3}){2,3}|[A-Za-z0-9]{4,5}(?:-[A-Za-z0-9]{4,5}){1,3}")
_RECOVERY_KEY = re.compile(r"\d{6}(?:-\d{6}){3,7}")  # BitLocker's eight groups of six digits
# a name that holds a credential word: db-password, api_token (a secret's name, not its value)
_SECRET_NAME = re.compile(
    r"[a-z][a-z0-9]*(?:[-_][a-z0-9]+)*[-_](?:password|passwd|secret|token|key|credentials?)"
    r"(?:[-_][a-z0-9]+)*(?::[\w.-]+)?|(?:password|secret|token)[-_][a-z0-9-_]+(?::[\w.-]+)?"
    # a variable: dbPassword, apiKeySecret; a constant: PASSWORD_ARGON2ID, DB_PASSWORD
    r"|[a-z][a-z0-9]*(?:[A-Z][a-z0-9]*)*(?:Password|Passwd|Secret|Token|Key|Credentials?)"
    r"(?:[A-Z][a-z0-9]*)*|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+"
    # a size: password: 32 bytes (kubectl describe secret)
    r"|\d+[ \t]+bytes?"
)
_VERSION = re.compile(r"[\^~><=]{0,2}v?\d+(?:\.\d+){1,3}(?:[-+.][\w.]+)?")
_DOTTED_REF = re.compile(r"[a-z_][a-z0-9_]*(?:\??\.[A-Za-z_][A-Za-z0-9_]*)+$")
_CALL_REF = re.compile(
    r"[A-Za-z_][\w.?]*(?:::[A-Za-z_][\w.?]*)*[ \t]*[(\[]|[A-Z][a-z]+-[A-Z][A-Za-z]+(?:[ \t]|$)"
)
_PATH = re.compile(
    r"(?:~|\.{1,2})?/[\w.@+-]+(?:/[\w.@+-]*)+$|[A-Za-z]:\\|[\w.-]+/[\w.-]+(?:/[\w.-]*)*$"
)
_URL = re.compile(r"https?://[^\s:@]+$")
_SPACE = re.compile(r"[ \t\u00a0\u202f]*")
# A filler further off (:func:`_far_link`): its words, brackets and clause ends.
_FAR_WORDS = 12
_FAR_CHARS = 32
_BRACKETS = {"(": ")", "（": "）", "[": "]", "【": "】", "〔": "〕"}
_CLAUSE_END = ",;!?。，、；！？\n"
_FAR_WORD = lazy_regex(r"[^\s:：=,;!?。，、；！？()（）\[\]【】〔〕\"'`«»„“”「」]+")
_ATTACHING_SCRIPT = lazy_regex(r"[\u0e00-\u0e7f\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")


# --------------------------------------------------------------------------- phrases


def credential_spans(text: str) -> Iterator[Span]:
    """The spans both rules find in ``text``, over one search for its credential words."""
    found = list(hits(text))
    yield from phrase_spans(text, found)
    yield from guard_spans(text, found)


def phrase_spans(text: str, found: list[Hit] | None = None) -> Iterator[Span]:
    """The values of credential phrases in ``text`` ("the password is X", "das
    Passwort lautet X", "密码是X", "パスワードはXです"); ``found``: its words, when known."""
    for hit in hits(text) if found is None else found:
        kinds = [kind for kind, _ in hit.kinds if kind != "guard"]
        before, after = text[hit.start - 1 : hit.start], text[hit.end : hit.end + 2]
        if before in (":", ".", "$", "{") or before == "/" and re.match(r"/|:\S", after):
            continue  # part of a name or a path: arn:…:secret:…, ${TOKEN}, a.token, /secret/x
        if _in_flag(text, hit.start):
            continue  # --secret=db-password, --secret=api-token: a name given to a flag
        if kinds:
            span = _phrase_value(text, hit, kinds)
            if span is not None:
                yield span
            span = _value_before(text, hit, kinds)
            if span is not None:
                yield span


def _in_flag(text: str, start: int) -> bool:
    """Whether the word at ``start`` is inside a flag's value (``--secret=db-password``)
    or a name joined to another (``X=db-password``)."""
    word = text[text.rfind(" ", 0, start) + 1 : start]
    return "=" in word and (text[start - 1 : start] in ("-", "_") or word.startswith("-"))


def _phrase_value(text: str, hit: Hit, kinds: list[str]) -> Span | None:
    span = _phrase_value_at(text, hit, kinds)
    if span is not None and re.search(r"(?:^|\s)--?[A-Za-z][\w-]*=$", text[hit.end : span[0]]):
        return None  # stripe-api-key --project=X: the '=' is the flag's
    return span


def _phrase_value_at(text: str, hit: Hit, kinds: list[str]) -> Span | None:
    stop = text.find("\n", hit.end)
    stop = min(len(text) if stop < 0 else stop, hit.end + 200)
    langs = hit.langs
    link = _link_after_filler(text, hit.end, stop, langs)
    span = _linked_value(text, hit, kinds, link, stop)
    if span is None and link is None:
        far = _far_link(text, hit.end, stop, langs)
        span = None if far is None else _linked_value(text, hit, kinds, far, stop, far=True)
    return span


def _linked_value(
    text: str, hit: Hit, kinds: list[str], link: int | None, stop: int, *, far: bool = False
) -> Span | None:
    """The value after ``link`` (after the word itself when None), if it is a secret."""
    langs = hit.langs
    value = _value(text, hit.end if link is None else link, stop, langs)
    if value is None and link is not None and not text[link:stop].strip() and stop < len(text):
        return _next_line_value(text, stop + 1)  # "Password:\n<the password>"
    if value is None:
        return None
    (start, end), quoted, naming = value
    if naming and any(k in ("secret", "token", "api_key") for k in kinds):
        return None  # "the secret is named harbor-db-credentials"
    linked = link is not None or _post_link(text, end, stop, langs)
    glued = start == hit.end and not any(lang.attached for lang in langs)  # 密码X is fine
    if link is None and (text[hit.end : start].strip() or glued):
        return None  # "password hunter2x", not "password-Ab12Cd"
    if far:
        return (start, end) if _far_value(text[start:end], kinds, quoted) else None
    if any(_judge(text[start:end], kind, quoted, linked, langs) for kind in kinds):
        return start, end
    return None


def _far_link(text: str, at: int, stop: int, langs: tuple[Language, ...]) -> int | None:
    """The end of a link past a longer filler ("le mot de passe du wifi de la salle
    serveur EST", "kata sandi VPN kantor:", "รหัสผ่านไวไฟห้องประชุมคือ"): at most
    twelve words, or 32 characters in a script that does not space its words, a
    bracketed aside counting as one word; never past the end of a clause, nor when the
    first word makes the credential word part of another thing's name ("the password
    POLICY for…"). What follows such a link is judged more strictly (:func:`_far_value`)."""
    first = text[at:stop].split(maxsplit=1)
    if not first or first[0].lower().strip(_TRAILING) in heads():
        return None
    by_char = any(lang.attached for lang in langs) and bool(
        _ATTACHING_SCRIPT().search(text, at, min(stop, at + 40))
    )
    pos, words = at, 0
    while words < _FAR_WORDS:
        pos = _SPACE.match(text, pos).end()  # type: ignore[union-attr]
        if pos >= stop or text[pos] in _CLAUSE_END:
            return None
        if text[pos] in _BRACKETS:
            close = text.find(_BRACKETS[text[pos]], pos + 1, min(stop, pos + 80))
            if close < 0:
                return None
            pos = close + 1
        elif by_char:
            pos += 1
            if pos - at > _FAR_CHARS:
                return None
        else:
            word = _FAR_WORD().match(text, pos, stop)
            if word is None or word.group().endswith("."):
                return None  # the end of a sentence
            pos = word.end()
        words += not by_char
        found = _link(text, pos, stop, langs)
        if found is not None:
            return found
    return None


def _far_value(value: str, kinds: list[str], quoted: bool) -> bool:
    """Whether ``value``, after a link past a longer filler, is a secret: quoted, a PIN's
    digits (not a year), or a generated-looking string of 8 characters or more; a word,
    a number, a version or a name there is the sentence going on."""
    if len(value) < 4 or placeholder(value) or value[0] in "<{$%":
        return False
    if quoted:
        return True
    if value.isdigit():
        return "pin" in kinds and len(value) <= 8 and not re.fullmatch(r"(?:19|20)\d\d", value)
    return len(value) >= 8 and _generated_word(value) and not _reference(value)


def _next_line_value(text: str, at: int) -> Span | None:
    """The next line, when it is one generated-looking token (the value of a label that
    ends its line); a line of words is the text going on."""
    end = text.find("\n", at)
    line = text[at : len(text) if end < 0 else end]
    token = line.strip()
    if token and not re.search(r"\s", token) and _generated_word(token) and len(token) >= 8:
        start = at + line.index(token)
        return start, start + len(token)
    return None


def _value_before(text: str, hit: Hit, kinds: list[str]) -> Span | None:
    """The value in "hunter2x is my password", "use X as the password": the token before
    a link (or "as") and at most two words before the credential word."""
    langs = hit.langs
    if text[hit.start - 1 : hit.start] in ("-", "_"):
        return None  # your-api-key-here, OPENAI_API_KEY: part of a name
    after = text[hit.end : hit.end + 40].split()
    if after and after[0].lower().strip(_TRAILING) in heads():
        return None  # "bcrypt is the password hash"
    reverse = reverse_of(langs)
    if reverse is None:
        return None
    line = text.rfind("\n", 0, hit.start) + 1
    m = reverse.search(text, max(line, hit.start - 260), hit.start)
    if m is None or _INDEFINITE & set(m.group("w").lower().split()):
        return None  # "password123 is a terrible password": an example, not the password
    value = m.group("v").rstrip(_TRAILING)
    if any(_judge(value, kind, False, True, langs) for kind in kinds):
        return m.start("v"), m.start("v") + len(value)
    return None


def _link_after_filler(text: str, at: int, stop: int, langs: tuple[Language, ...]) -> int | None:
    """The end of the link after the word at ``at``, past an optional filler; None when
    the word is not joined to a value."""
    found = _link(text, at, stop, langs)
    if found is not None:
        return found
    if any(lang.attached for lang in langs):
        # 令牌有效期为3600: a few characters of the script before the link.
        for i in range(at + 1, min(stop, at + 9)):
            if text[i - 1].isascii() or not text[i - 1].isalpha():
                break
            found = _link(text, i, stop, langs)
            if found is not None:
                return found
        return None
    tokens = [(m.start(), m.end()) for m in re.finditer(r"[^\s:：=]+", text[at:stop])][:6]
    if not tokens:
        return None
    latin = all(lang.latin for lang in langs)
    fillers = {f.lower() for lang in langs for f in lang.fillers}
    opened = False
    for used, (s, e) in enumerate(tokens):
        word = text[at + s : at + e]
        low = word.lower()
        if not latin:
            if re.search(r"[A-Za-z0-9]", word) or used >= 3:
                return None
        elif low in fillers and used <= 1:
            opened = True
        elif not opened and used == 0 and _modifier(word):
            pass
        elif not opened or used >= 5 or word[-1] in ",;.!?":
            return None
        found = _link(text, at + e, stop, langs)
        if found is not None:
            return found
    return None


def _modifier(word: str) -> bool:
    """A word that may stand between a credential word and its link without changing
    what it names: "the password WIFI is", "kata sandi WIFI-NYA adalah"."""
    low = word.lower()
    if low in heads() or is_prose_word(low):
        return False
    return bool(re.fullmatch(r"[a-z][a-z0-9]{1,9}|[A-Z0-9]{2,6}|[\w-]+-nya", word))


def _link(text: str, at: int, stop: int, langs: tuple[Language, ...]) -> int | None:
    """The end of a link word or sign at ``at`` (after blanks and a comma: "mon mot de
    passe, c'est X"), or None."""
    pos = _SPACE.match(text, at).end()  # type: ignore[union-attr]
    if text[pos : pos + 1] == ",":
        pos = _SPACE.match(text, pos + 1).end()  # type: ignore[union-attr]
    low = text[pos : pos + 24].lower()
    for link in links_of(langs):
        if not low.startswith(link) or pos + len(link) > stop:
            continue
        end = pos + len(link)
        after = text[end : end + 1]
        word_link = link[-1].isalnum()
        glued = after.isalnum() or after == "_"
        glued = glued or pos == at and text[at - 1 : at].isalnum() and link[0].isalnum()
        if word_link and glued and not any(lang.attached for lang in langs):
            continue
        if word_link:  # "lautet: X", "est : X"
            sign = _SPACE.match(text, end).end()  # type: ignore[union-attr]
            end = next((sign + len(p) for p in signs() if text.startswith(p, sign)), end)
        return end
    return None


def _post_link(text: str, end: int, stop: int, langs: tuple[Language, ...]) -> bool:
    """Whether a verb that closes a phrase follows the value ("X है", "X است")."""
    rest = text[end:stop].lstrip()
    return any(rest.startswith(w) for lang in langs for w in lang.post_links)


def _value(
    text: str, at: int, stop: int, langs: tuple[Language, ...]
) -> tuple[Span, bool, bool] | None:
    """(span, quoted, after a naming word) of the value at ``at``; None when none."""
    pos = _SPACE.match(text, at).end()  # type: ignore[union-attr]
    for _ in range(2):  # "is NOW X", "ist JETZT X"
        m = re.match(r"[^\s\"'`«„“「『]+", text[pos:stop])
        word = m.group().lower() if m else ""
        if word and any(word == s.lower() for lang in langs for s in lang.skip):
            pos = _SPACE.match(text, pos + len(word)).end()  # type: ignore[union-attr]
    rest = text[pos:stop].lower()
    naming = any(
        rest.startswith(n.lower() + " ")
        for lang in langs
        for n in (*lang.naming, "named", "called")
    )
    if pos >= stop:
        return None
    opening = text[pos]
    if opening in _QUOTES:
        close = text.find(_QUOTES[opening], pos + 1, stop)
        if close > pos + 1:
            inner = text[pos + 1 : close]
            lead = len(inner) - len(inner.lstrip())
            return (pos + 1 + lead, pos + 1 + len(inner.rstrip())), True, naming
    latin = all(lang.latin for lang in langs)
    while pos < stop and text[pos] in "([{":
        pos += 1
    m = re.compile(r"\S+" if latin else r"[!-~]+").match(text, pos, stop)
    if not m:
        return None
    end = m.end()
    while end > pos and text[end - 1] in _TRAILING:
        end -= 1
    return ((pos, end), False, naming) if end > pos else None


def _judge(value: str, kind: str, quoted: bool, linked: bool, langs: tuple[Language, ...]) -> bool:
    """Whether ``value`` after a credential word of ``kind`` is a secret."""
    if len(value) < 2 or placeholder(value) or value[0] in "<{$%-" or "//" in value:
        return False  # a reference, a flag (--project=…), a URL ('https://tom@github.com')
    if not linked:
        if kind in ("pin", "password") and re.fullmatch(r"\d{4,8}", value):
            return True  # "PIN 4821", "支付密码 729257"
        if kind == "password" and not any(lang.latin for lang in langs) and _typed(value):
            return True  # "الباسورد Basalt_Lotus80": a value typed in ASCII after the word
        return (quoted or len(value) >= 6) and _generated_word(value)
    if quoted:
        return True
    if _SECRET_NAME.fullmatch(value.rstrip(",;")):
        return False  # dbPassword, PASSWORD_ARGON2ID: a name
    if _reference(value) or value.lower() in _TYPES or value.lower() in heads():
        return False  # a reference, a type, "the password's length is 12"
    digits = value.isdigit()
    if kind == "pin":
        if _COMBINATION.fullmatch(value) or _RECOVERY_KEY.fullmatch(value):
            return True  # 51-22-35, R4AN-N78S-3BOK
        return (digits and 4 <= len(value) <= 12) or (not digits and looks_random(value))
    if kind != "password":
        return not digits and len(value) >= 8 and looks_random(value)
    if digits:
        return len(value) >= 4
    if value.isalpha():
        return not _prose_word(value, langs)
    return True


def _typed(value: str) -> bool:
    """A value typed in ASCII that holds letters and digits, and is no reference, path,
    URL or version."""
    if len(value) < 6 or not value.isascii() or _reference(value) or placeholder(value):
        return False
    return bool(re.search(r"[A-Za-z]", value) and re.search(r"\d", value)) and not re.fullmatch(
        r"v?\d[\d.x]*", value
    )


def _generated_word(value: str) -> bool:
    """A value that needs no link to be a password: generated-looking, not a path, a
    URL or a version."""
    if not looks_random(value) or value.isdigit():
        return False
    return not (_PATH.match(value) or "://" in value or re.fullmatch(r"v?\d[\d.x]*", value))


def _reference(value: str) -> bool:
    return bool(
        _CALL_REF.match(value)
        or _DOTTED_REF.match(value)
        or _PATH.match(value)
        or _URL.match(value)
    )


def _prose_word(word: str, langs: tuple[Language, ...]) -> bool:
    """Whether ``word`` is a word of prose in one of ``langs`` (or in any language)."""
    low = word.lower()
    if is_prose_word(low):
        return True
    for lang in langs:
        if lang.code == "en":
            continue
        if lang.latin and (len(low) <= 3 or low.endswith(tuple(lang.suffixes))):
            return True
    return False


# --------------------------------------------------------------------------- values


def is_secret_value(
    text: str, span: Span, quoted: bool, name: list[str] | None = None, prose: bool = True
) -> bool:
    """Whether the value at ``span`` (of a secret-named key, a flag, a phrase) is a
    secret, not a reference (``$DB_PASSWORD``, ``settings.token``, ``os.environ[...]``),
    a type (``token: str``), a path, a URL, a YAML tag (``!vault``), a public digest
    (``SHA256:…``) or (``prose``: after a colon or in a sentence) words of prose in any
    language of the table ("token: expired", "Token: siehe…", "Token: ver…")."""
    value = text[span[0] : span[1]]
    bare = value.strip() if quoted else value.strip().rstrip(_TRAILING + "!?")
    if len(bare) < 2 or placeholder(bare):
        return False
    if _SECRET_NAME.fullmatch(bare) or _VERSION.fullmatch(bare):
        return False  # --secret=db-password: the secret's name; "jsonwebtoken": "^9.0.2"
    if quoted:
        return True
    if _CALL_REF.match(text, span[0]) or _reference(bare) or public_value(bare):
        return False
    words = [w.strip(_TRAILING).lower() for w in bare.split(maxsplit=2)[:2]]
    if words[0] in _TYPES:
        return False
    if prose and (
        is_function_word(words[0])
        or (is_prose_word(words[0]) and (len(words) == 1 or is_prose_word(words[1])))
        or sum(map(is_prose_word, bare.split())) >= 2  # "all authentication tokens updated"
    ):
        return False
    if name and bare.lower() in ("_".join(name), name[-1]):
        return False  # api_key=api_key: a variable passed on
    after = text[span[1] : span[1] + 1]
    return not (after in (",", ")") and re.fullmatch(r"[a-z_]+", bare))


def placeholder(value: str) -> bool:
    """Whether ``value`` stands for a secret without being one: ``$TOKEN``, ``${X}``,
    ``%PASSWORD%``, ``{{ secret }}``, ``<token>``, ``****``, ``[REDACTED]``, ``!vault``."""
    return bool(_PLACEHOLDER.match(value) or _ENV_REF.match(value))


# --------------------------------------------------------------------------- guard


def guard_spans(text: str, found: list[Hit] | None = None) -> Iterator[Span]:
    """Generated-looking strings next to a credential word (the entropy guard);
    ``found``: its words, when known."""
    for hit in hits(text) if found is None else found:
        strong = any(kind != "guard" for kind, _ in hit.kinds)
        before = text[max(0, hit.start - 30) : hit.start].split()
        if before and before[-1].lower() in _NOT_CREDENTIAL:
            continue  # a public key, a cache key
        if before and "://" in before[-1]:
            continue  # a part of a URL: …/acme/auth-service/commit/…
        if _in_flag(text, hit.start):
            continue  # --set-secrets=API_KEY=api-key:3: names given to a flag
        yield from _after(text, hit.end, strong)
        if strong and text[hit.start - 1 : hit.start] not in ("-", "_"):
            yield from _before(text, hit)
            yield from _sentence_before(text, hit)


def _after(text: str, at: int, strong: bool) -> Iterator[Span]:
    """Generated strings in the words after a credential word: the next six (a hex
    string too, after a strong word), and after a strong word on to the end of its
    sentence (never a hex string there: a commit, a trace id)."""
    stop = text.find("\n", at)
    stop = len(text) if stop < 0 else stop
    if not text[at:stop].strip(" \t:=\"'`>-") and stop < len(text):
        at, stop = stop + 1, text.find("\n", stop + 1)  # "API key:\n<the key>"
        stop = len(text) if stop < 0 else stop
    window = text[at : min(stop, at + (_SENTENCE_CHARS if strong else 120))]
    ended = False
    for seen, m in enumerate(re.finditer(r"\S+", window), 1):
        near = seen <= _NEAR_WORDS
        if not near and (not strong or ended or seen > _SENTENCE_WORDS):
            return
        word = m.group().lower().strip(_TRAILING + "(")
        if word in _BARRIERS:
            return
        ended = ended or _SENTENCE_END().search(m.group()) is not None
        if "://" not in m.group():  # a URL's secrets: its password, a key= of its query
            yield from _generated_in(text, at + m.start(), at + m.end(), strong and near)


def _generated_in(text: str, start: int, end: int, hex_ok: bool) -> Iterator[Span]:
    """The generated-looking strings of the word at ``start``–``end``: not public (a
    digest, a public key) and not a name (a path of names, a pod)."""
    for cand in _CANDIDATE.finditer(text, start, end):
        if public_before(text, cand.start()) or named(cand.group()):
            continue
        if generated(cand.group().strip("._~-"), hex_ok=hex_ok):
            yield cand.span()


def _sentence_before(text: str, hit: Hit) -> Iterator[Span]:
    """ "<key> — paste that into the CI settings as its new deploy token": a generated
    string (not hex) earlier in the sentence of a strong credential word, no barrier
    word ("commit", "id", "hash"…) between them."""
    start = max(text.rfind("\n", 0, hit.start) + 1, hit.start - _SENTENCE_CHARS)
    ends = [m.end() for m in _SENTENCE_END().finditer(text, start, hit.start)]
    start = ends[-1] if ends else start
    words = list(re.finditer(r"\S+", text[start : hit.start]))[-_SENTENCE_WORDS:]
    for m in reversed(words):
        if m.group().lower().strip(_TRAILING + "(") in _BARRIERS_BEFORE:
            return
        if "://" not in m.group():
            yield from _generated_in(text, start + m.start(), start + m.end(), False)


_BEFORE = re.compile(
    r"([A-Za-z0-9+/_.~=-]{16,})[ \t]+(?:is|was|=|are)[ \t]+(?:(?:the|my|our|your|an?|its)[ \t]+)?"
    r"(?:[\w-]+[ \t]+){0,2}\Z"
)


def _before(text: str, hit: Hit) -> Iterator[Span]:
    """ "<key> is the API key for staging": a generated string just before the word."""
    line = text.rfind("\n", 0, hit.start) + 1
    m = _BEFORE.search(text, max(line, hit.start - 160), hit.start)
    if m and generated(m.group(1), hex_ok=True):
        yield m.span(1)
