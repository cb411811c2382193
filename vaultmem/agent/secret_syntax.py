"""Secrets in program syntax and in what installers print (issue 28, round 3).

Forms the key = value, flag and phrase rules do not read, each gated by a cheap
substring test so that ordinary text pays nothing:

- PowerShell ``ConvertTo-SecureString 'X'`` (``-String "X"``);
- ``net user NAME X`` (``/add``);
- a JVM system property named for a secret: ``-Djavax.net.ssl.keyStorePassword=X``;
- a here-string or the first line of a heredoc fed to a command that reads a password
  (``--password-stdin <<< 'X'``, ``mysql -p <<EOF`` / ``X``, ``-pass stdin``);
- ``user NAME X`` in an ftp script (a text that names ftp or opens a host);
- a licence key: ``LicenseKey X`` (GeoIP.conf), ``<LicenseKey>X</LicenseKey>``;
- a PHP constant named for a secret: ``define('AUTH_SALT', 'X')``;
- passwords that tools generate and print: "A temporary password is generated for
  root@localhost: X", "PASSWORD elastic = X", "New value: X" after a password reset,
  and the value on its own line after a line that announces a password, secret or
  token and ends in a colon (Jenkins' "use the following password …:").
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from vaultmem.agent.credential_phrases import placeholder
from vaultmem.agent.secret_names import name_words, secret_name
from vaultmem.agent.secret_shapes import generated, lazy_regex, looks_random

__all__ = ["syntax_spans"]

Span = tuple[int, int]

_VALUE = r"""(?:(?P<q>['"])(?P<qv>[^'"\n]{1,200})(?P=q)|(?P<v>[^\s'"`;&|<>]{1,200}))"""

_SECURE_STRING = lazy_regex(
    r"(?i)ConvertTo-SecureString[ \t]+(?:-String[ \t]+)?" + _VALUE,
)
_NET_USER = lazy_regex(r"(?im)\bnet[ \t]+user[ \t]+(?:\"[^\"\n]+\"|\S+)[ \t]+" + _VALUE)
_JAVA_PROPERTY = lazy_regex(
    r"-D[\w.-]*?(?:[Pp]ass(?:word|wd|phrase)?|PASS(?:WORD)?|[Ss]ecret|SECRET|[Tt]oken|TOKEN"
    r"|[Ll]icen[cs]eKey)[\w.-]*=" + _VALUE,
)
# a command that reads a password from its standard input
_READS_PASSWORD = (
    r"(?:--password-stdin|-pass(?:in|out)?[ \t]+(?:stdin|\S+)|\bpasswd\b|\bchpasswd\b"
    r"|\bsudo[ \t]+(?:-\w+[ \t]+)*-S\b|\b(?:mysql|mysqldump|mariadb)\b[^\n]*[ \t]-p(?=[ \t]|$)"
    r"|\bftp\b|\bsftp\b|\blogin\b)"
)
_HERE_STRING = lazy_regex(r"(?im)^[^\n]*" + _READS_PASSWORD + r"[^\n]*?<<<[ \t]*" + _VALUE)
_HEREDOC = lazy_regex(
    r"(?im)^[^\n]*" + _READS_PASSWORD + r"[^\n]*?<<-?[ \t]*['\"]?(?P<end>\w+)['\"]?[^\n]*\n"
    r"[ \t]*(?P<first>[^\s]{4,200})[ \t]*$",
)
_FTP_USER = lazy_regex(r"(?m)^[ \t]*user[ \t]+\S+[ \t]+(?P<v>\S{4,200})[ \t]*$")
_LICENSE_KEY = lazy_regex(
    r"(?m)(?:^[ \t]*[Ll]icen[cs]e_?[Kk]ey[ \t]+(?P<v>[A-Za-z0-9_+/=-]{12,200})[ \t]*$"
    r"|<(?P<tag>[Ll]icen[cs]e_?[Kk]ey)>[ \t]*(?P<xv>[^<\s]{12,200})[ \t]*</(?P=tag)>)"
)
_PHP_DEFINE = lazy_regex(
    r"""\bdefine\([ \t]*(['"])\w*(?:KEY|SALT|SECRET|PASS(?:WORD|WD)?|TOKEN|NONCE)\1[ \t]*,"""
    r"""[ \t]*(?P<q>['"])(?P<qv>[^\s'"]{8,200})(?P=q)"""
)
_GENERATED_FOR = lazy_regex(
    r"(?i)\b(?:temporary|generated|initial|random|one-time|default)\b[^\n:]{0,60}?"
    r"\bpassword\b[^\n:]{0,60}:[ \t]*(?P<v>\S{6,200})"
)
_PASSWORD_LINE = lazy_regex(r"(?m)^PASSWORD[ \t]+[\w.-]+[ \t]*=[ \t]*(?P<v>\S{6,200})[ \t]*$")
_NEW_VALUE = lazy_regex(r"(?im)^[ \t]*new (?:value|password)[ \t]*:[ \t]*(?P<v>\S{6,200})")
_ANNOUNCED = lazy_regex(
    r"(?im)^[^\n]*\b(?:password|passphrase|secret|token|api[ _-]?key|key)\b[^\n]*:[ \t]*\n"
    r"(?:[ \t]*(?:```\w*)?[ \t]*\n){0,2}[ \t]*(?:[\w.-]+[ \t]+\|[ \t]*)?"  # a log's "app-1  | "
    r"(?P<v>[^\s`]{8,200})[ \t]*\n?(?:[ \t]*```)?"
    r"[ \t]*(?:\n|$)"
)


# SQL: IDENTIFIED BY 'X' (MySQL, Oracle), SET PASSWORD … = 'X'; SQL*Plus user/X@db
_SQL_PASSWORD = lazy_regex(
    r"(?i)\bIDENTIFIED[ \t]+(?:WITH[ \t]+\w+[ \t]+)?BY[ \t]+(?:PASSWORD[ \t]+)?"
    + _VALUE
    + r"|\bSET[ \t]+PASSWORD\b[^=\n]{0,80}=[ \t]*(?:PASSWORD\([ \t]*)?"
    + _VALUE.replace("P<", "P<s_")
)
_SQLPLUS = lazy_regex(
    r"(?i)\b(?:CONNECT|CONN|sqlplus)[ \t]+(?:-\w+[ \t]+)*[\w$#.-]+/(?P<v>[^\s/@\"']{2,200})@"
)
# Windows: cmdkey /pass:X, net use … /user:X PASSWORD (handled by shape), /password:X
_WINDOWS_PASS = lazy_regex(r"(?i)(?:^|[ \t])/(?:pass|password|pwd|p)[:=](?P<v>\"[^\"\n]+\"|\S+)")
# a config line that names a password without a separator: requirepass X (redis.conf),
# masterauth X, wpa_passphrase=X, psk="X" (wpa_supplicant)
_CONFIG_PASSWORD = lazy_regex(
    r"(?im)^[ \t]*(?:requirepass|masterauth|wpa_passphrase|psk|sasl_password|auth_pass)"
    r"(?:[ \t]*=[ \t]*|[ \t]+)(?:\"(?P<qv>[^\"\n]{1,200})\"|(?P<v>[^\s\"#]{1,200}))"
)
# a secret-named field and its value in a table: "client_secret<TAB>X", "| api_key | X |"
_TABLE_ROW = lazy_regex(
    r"(?m)^[ \t|]*(?P<name>[A-Za-z_][\w.-]{1,60})(?:\t+|[ \t]*\|[ \t]*)"
    r"(?P<v>[^\s|`]{8,200})[ \t|]*$"
)


def syntax_spans(text: str) -> Iterator[Span]:
    """The spans of the secrets in the forms above."""
    lower = text.lower()
    if "convertto-securestring" in lower:
        yield from _values(_SECURE_STRING(), text)
    if "net user" in lower:
        yield from _values(_NET_USER(), text, skip=("*",))
    if "-d" in lower and "=" in text:
        yield from _values(_JAVA_PROPERTY(), text)
    if "<<<" in text:
        yield from _values(_HERE_STRING(), text)
    if "<<" in text:
        for m in _HEREDOC().finditer(text):
            first = m["first"]
            if first != m["end"] and not placeholder(first) and not first.startswith("-"):
                yield m.span("first")
    if "user" in lower and ("ftp" in lower or re.search(r"(?m)^[ \t]*open[ \t]+\S", text)):
        for m in _FTP_USER().finditer(text):
            if not placeholder(m["v"]):
                yield m.span("v")
    if "define(" in lower:
        for m in _PHP_DEFINE().finditer(text):
            if not placeholder(m["qv"]):
                yield m.span("qv")
    if "icense" in lower:
        for m in _LICENSE_KEY().finditer(text):
            group = "v" if m["v"] else "xv"
            if looks_random(m[group]):
                yield m.span(group)
    if "password" in lower:
        for rule in (_GENERATED_FOR(), _PASSWORD_LINE(), _NEW_VALUE()):
            for m in rule.finditer(text):
                value = m["v"].rstrip(".,;)")
                if not placeholder(value) and (looks_random(value) or len(value) >= 12):
                    yield m.start("v"), m.start("v") + len(value)
    if "identified" in lower or "password" in lower:
        for m in _SQL_PASSWORD().finditer(text):
            for group in ("qv", "v", "s_qv", "s_v"):
                if m[group] and not placeholder(m[group]) and not m[group].startswith("/"):
                    yield m.span(group)
    if "/" in text and "@" in text:
        for m in _SQLPLUS().finditer(text):
            if not placeholder(m["v"]):
                yield m.span("v")
    if "/p" in lower:
        for m in _WINDOWS_PASS().finditer(text):
            value = m["v"].strip('"')
            if (
                len(value) >= 4
                and not placeholder(value)
                and value.lower() not in ("*", "yes", "no")
            ):
                yield (
                    m.start("v") + (m["v"] != value),
                    m.start("v") + (m["v"] != value) + len(value),
                )
    if any(w in lower for w in ("requirepass", "masterauth", "wpa_passphrase", "psk", "_pass")):
        for m in _CONFIG_PASSWORD().finditer(text):
            group = "qv" if m["qv"] else "v"
            if not placeholder(m[group]):
                yield m.span(group)
    if "\t" in text or "|" in text or "  " in text:
        yield from _table_columns(text)
    if "=" in text and ("sess" in lower or "sid=" in lower):
        for m in _SESSION_COOKIE().finditer(text):
            if looks_random(m["v"]):
                yield m.span("v")
    if "\t" in text or "|" in text:
        for m in _TABLE_ROW().finditer(text):
            words = name_words(m["name"])
            if words and secret_name(words, "=") and generated(m["v"], hex_ok=True):
                yield m.span("v")
    if ":" in text and "\n" in text:
        for m in _ANNOUNCED().finditer(text):
            value = m["v"]
            if generated(value, hex_ok=True) and not placeholder(value):
                yield m.span("v")


_CELL = re.compile(r"[^\t|]+")
_ALIGNED_CELL = re.compile(r"\S+(?: \S+)*")  # columns two blanks or more apart
_RULE_LINE = re.compile(r"[\s|:=+-]*")
# a session cookie: laravel_session=X, PHPSESSID=X, connect.sid=X
_SESSION_COOKIE = lazy_regex(
    r"(?i)\b(?:\w+_session|session_?id|sessionid|connect\.sid|phpsessid|jsessionid|_?sid)"
    r"=(?P<v>[^;\s\"']{20,})"
)


def _table_columns(text: str) -> Iterator[Span]:
    """The cells of a table (Markdown pipes, tabs, or columns aligned with blanks) under
    a header that names a secret ("password", "api_key"), and those under a "Value"
    header in a row named for a secret or whose value looks generated."""
    secret_columns: list[int] = []
    value_column: int | None = None
    in_table = False
    at = 0
    for line in text.split("\n"):
        cells = _cells(line)
        words = [line[s:e].strip() for s, e in cells]
        if len(cells) < 2:
            secret_columns, value_column, in_table = [], None, False
        elif not in_table:  # the first row: the header
            in_table = True
            headers = [w for w in words if re.fullmatch(r"[\w.-]{1,40}", w)]
            if len(headers) == len(words):
                secret_columns = [
                    i
                    for i, w in enumerate(words)
                    if (n := name_words(w)) and secret_name(n, "=") == "secret"
                ]
                lower = [w.lower() for w in words]
                value_column = lower.index("value") if "value" in lower else None
        elif (secret_columns or value_column is not None) and not _RULE_LINE.fullmatch(line):
            named = bool((n := name_words(words[0])) and secret_name(n, "="))
            wanted = list(secret_columns)
            if value_column is not None and value_column < len(words):
                value = words[value_column]
                if named or generated(value, hex_ok=True):
                    wanted.append(value_column)
            for index in wanted:
                word = words[index] if index < len(cells) else ""
                if len(word) >= 4 and " " not in word and not placeholder(word):
                    s, _ = cells[index]
                    lead = len(line[s:]) - len(line[s:].lstrip())
                    yield at + s + lead, at + s + lead + len(word)
        at += len(line) + 1


def _cells(line: str) -> list[tuple[int, int]]:
    """The cells of a table's line; a first cell that holds prose before the table
    ("We keep this: | env | password |", "Saved: title<TAB>password") is its last word."""
    if line.count("|") >= 2:
        first, last = line.index("|"), line.rindex("|")
        found = [(m.start(), m.end()) for m in _CELL.finditer(line, first, last)]
        return [c for c in found if line[c[0] : c[1]].strip()]
    if "\t" in line:
        found = [(m.start(), m.end()) for m in _CELL.finditer(line) if m.group().strip()]
    elif "  " in line:
        found = [(m.start(), m.end()) for m in _ALIGNED_CELL.finditer(line)]
    else:
        return []
    if found and " " in line[found[0][0] : found[0][1]].strip():
        start, end = found[0]
        found[0] = (line.rindex(" ", start, end) + 1, end)
    return found


def _values(rule: re.Pattern[str], text: str, skip: tuple[str, ...] = ()) -> Iterator[Span]:
    for m in rule.finditer(text):
        group = "qv" if m["qv"] is not None else "v"
        value = m[group]
        if value and value not in skip and not placeholder(value) and not value.startswith("/"):
            yield m.span(group)
