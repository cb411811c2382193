"""The output of a command that prints a secret: the lines after it are a secret context.

A transcript often holds a terminal session pasted whole: ``$ kubectl get secret … -o
jsonpath='{.data.password}' | base64 -d`` and, on the next line, the password. Nothing
but the command marks that line as a secret. :func:`output_spans` finds the commands that
print secrets (after a prompt, at the start of a line, or in backticks) and reads the
lines that follow them, up to the next prompt or a blank line:

- a command that prints **one value** (``… | base64 -d`` of a secret, ``kubectl get
  secret … -o jsonpath='{.data.X}'``, ``vault kv get -field=X``, ``aws secretsmanager
  get-secret-value … --output text``, ``gcloud secrets versions access``, ``op read``,
  ``pass show``, ``printenv TOKEN``, ``$env:TOKEN``, ``gh auth token``, ``openssl
  rand``…): an output line that is one token is the secret, unless it is a word;
- a command that prints **a record or a file of secrets** (``kubectl get secret … -o
  yaml``, ``vault kv get``, ``aws secretsmanager get-secret-value``, ``cat .env``, ``cat
  ~/.netrc``, ``env``, ``sops -d``): in each output line, the value of a secret-named key
  (``smtp_pass    X``, ``password X``), every value under a Kubernetes Secret's
  ``data:``, and any value that looks generated.

A field that names no secret (``-field=username``, ``{.metadata.name}``, ``printenv
PATH``) prints none; a listing (``kubectl get secrets``) prints names only.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from vaultmem.agent.credential_phrases import placeholder
from vaultmem.agent.credential_words import is_prose_word
from vaultmem.agent.secret_names import name_words, secret_name
from vaultmem.agent.secret_shapes import generated, lazy_regex, looks_random, named

__all__ = ["output_spans"]

Span = tuple[int, int]

# A command line: after a shell's prompt ("$ ", "root@ci:~# ", "PS C:\> ", "❯ "), any
# command; at the start of a line (after "#", ">" or "%", which may be a prompt too) or
# in backticks, a command that may print a secret, or one that runs another (sudo,
# docker exec, ssh): anchored, so that prose costs little.
_HEADS = (
    r"(?:sudo|doas|docker|podman|nerdctl|ssh|kubectl|oc|vault|aws|gcloud|az|op|pass|gopass"
    r"|security|bw|lpass|doppler|heroku|gh|openssl|pwgen|python3?|head|cat|less|more|tail"
    r"|bat|type|Get-Content|gc|sops|env|printenv|set|export|echo|\$env:|Get-ChildItem|gci"
    r"|dir|ls|terraform)\b"
)
_COMMAND_LINE = lazy_regex(
    r"(?m)^[ \t]*(?:(?:PS[ \t][^>\n]*>|[\w.-]+@[\w.-]+(?::[^\s$#%>]*)?[ \t]?[$#%>]|[$❯])"
    r"[ \t]*(?P<command>[^\n]+)|(?:[#>%»][ \t]*)?(?P<bare>" + _HEADS + r"[^\n]*))"
)
# Inside a line: a prompt after a blank or at its start, and the words a command that
# prints secrets holds (one of them must be in a line for it to be read as a command).
_PROMPT_INSIDE = lazy_regex(
    r"(?<![\w.@-])(?:PS[ \t][^>\n]*>|[\w.-]+@[\w.-]+(?::[^\s$#%>]*)?[ \t]?[$#%>]|[$❯])[ \t]+"
    r"(?=\S)"
)
_NEEDLE_WORDS = (
    "kubectl", "secretsmanager", "keyvault", "gopass", "lpass", "doppler", "heroku", "pwgen",
    "urandom", "printenv", "$env:", "env:", "terraform", "-field", "base64", ".env", "netrc",
    "pgpass", "credentials", ".npmrc", ".pypirc", "htpasswd", "kubeconfig", "tfvars", ":~#",
    ":~$", "❯", "vault kv", "vault read", "ssm get", "gcloud ", "op read", "pass show",
    "find-generic", "find-internet", "bw get", "gh auth", "get-login-password", "create token",
    "openssl rand", "secrets.token", "wg gen", "kubeadm token", "initial-password", "--reveal",
    "CONFIG GET", "sops ", "echo $", 'echo "$',
    "echo %", "$ ", "PS ",
)  # fmt: skip
_COMMAND_QUOTED = lazy_regex(r"`(?P<command>" + _HEADS + r"[^`\n]*)`")
# A prompt that starts the next command (so ends an output): never a bare "#" or ">",
# which a file's comments and quotes begin with.
_NEXT_PROMPT = lazy_regex(
    r"[ \t]*(?:PS[ \t][^>\n]*>|[\w.-]+@[\w.-]+(?::[^\s$#%>]*)?[ \t]?[$#%>]|[$❯](?:[ \t]|$))"
)
# After a command in backticks, on its line: what it printed.
_SAID = lazy_regex(
    r"[ \t]*(?:[:→=]|->|=>|(?:,[ \t]*)?(?:and[ \t]+)?(?:it[ \t]+)?(?:returns?|returned|gives?"
    r"|gave|prints?|printed|outputs?|shows?|showed|got|says?|said)\b)[ \t]*:?[ \t]*[\"'`]?"
    r"(?P<value>[^\s\"'`]+?)[.,;)]?(?=[\s\"'`]|$)"
)
_OUTPUT_LINES = {"value": 3, "dump": 60}
_COMMAND_CHARS = 2000

# "… | base64 -d" prints a secret when what it decodes is one.
_DECODE = lazy_regex(r"\|[ \t]*base64[ \t]+(?:-d|--decode|-D)\b")
_CREDENTIAL = lazy_regex(r"(?i)secret|passw|passphrase|token|api[_-]?key|credential|\bauth\b")
# Commands that print one secret value; (?P<field>…): the field printed, when named.
_VALUE = lazy_regex(
    "|".join(
        (
            r"\b(?:kubectl|oc)\b.*\bget[ \t]+secrets?\b.*\{[^}\n]*\.data\b(?:\.|\[['\"]?)"
            r"(?P<field>[\w.-]+)",
            r"\bvault\b.*[ \t]-field[= ](?P<field2>[\w.-]+)",
            r"\baws[ \t]+secretsmanager[ \t]+get-secret-value\b.*--output[ \t=]+text",
            r"\baws[ \t]+ssm[ \t]+get-parameters?\b.*--with-decryption.*--output[ \t=]+text",
            r"\bgcloud[ \t]+secrets[ \t]+versions[ \t]+access\b",
            r"\baz[ \t]+keyvault[ \t]+secret[ \t]+show\b.*(?:-o|--output)[ \t=]+tsv",
            r"\bop[ \t]+read\b",
            r"\b(?:gopass|pass)[ \t]+(?:show[ \t]+)?[\w.-]+/[\w./-]+",
            r"\bsecurity[ \t]+find-(?:generic|internet)-password\b.*[ \t]-w\b",
            r"\bbw[ \t]+get[ \t]+password\b",
            r"\blpass[ \t]+show\b.*--password",
            r"\bdoppler[ \t]+secrets[ \t]+get\b.*--plain",
            r"\bheroku[ \t]+config:get\b",
            r"\bgh[ \t]+auth[ \t]+token\b",
            r"\bgcloud[ \t]+(?:auth[ \t]+)?(?:application-default[ \t]+)?"
            r"print-(?:access|identity)-token",
            r"\baws[ \t]+ecr[ \t]+get-login-password\b",
            r"\bkubectl[ \t]+create[ \t]+token\b",
            r"\bopenssl[ \t]+rand[ \t]+-(?:hex|base64)\b",
            r"\bpwgen\b",
            r"\bwg[ \t]+gen(?:key|psk)\b",
            r"\bargocd[ \t]+admin[ \t]+initial-password\b",
            r"\bop[ \t]+item[ \t]+get\b.*--reveal\b",
            r"\bterraform[ \t]+output[ \t]+(?:-raw|-json)[ \t]+\w*(?:password|secret|token|key)\w*",
            r"\bCONFIG[ \t]+GET[ \t]+(?:requirepass|masterauth)\b",
            r"\bkubeadm[ \t]+token[ \t]+(?:create|generate)\b",
            r"secrets\.token_(?:hex|urlsafe|bytes)",
            r"/dev/u?random\b.*\|[ \t]*(?:base64|xxd|od|tr|head)",
        )
    )
)
# A variable printed by name: printenv X, echo $X, echo ${X}, $env:X, echo %X%.
_VARIABLE = lazy_regex(
    r"(?:\bprintenv[ \t]+|\becho[ \t]+[\"']?\$\{?|^\$env:|\becho[ \t]+%|Get-Content[ \t]+env:)"
    r"(?P<name>[A-Za-z_]\w*)"
)
# Commands that print a record of secrets, or a file of them.
_DUMP = lazy_regex(
    "|".join(
        (
            r"\b(?:kubectl|oc)\b.*\bget[ \t]+secrets?\b.*(?:-o|--output)[ \t=]*(?:yaml|json)",
            r"\bvault[ \t]+(?:kv[ \t]+get|read)\b",
            r"\baws[ \t]+secretsmanager[ \t]+get-secret-value\b",
            r"\baws[ \t]+ssm[ \t]+get-parameters?\b.*--with-decryption",
            r"\baz[ \t]+keyvault[ \t]+secret[ \t]+show\b",
            r"\bdoppler[ \t]+secrets\b",
            r"\bheroku[ \t]+config\b",
            r"\bterraform[ \t]+output\b",
            r"\bsops[ \t]+(?:-d|--decrypt)\b",
            r"^(?:env|printenv|set|export[ \t]+-p|(?:Get-ChildItem|gci|dir|ls)[ \t]+env:)[ \t]*$",
        )
    )
)
_READ_FILE = lazy_regex(
    r"\b(?:cat|less|more|head|tail|bat|type|Get-Content|gc)(?:[ \t]+-[\w-]+)*[ \t]+"
    r"[\"']?(?P<file>[^\s\"'|;&]+)"
)
# Files that hold secrets (not an example of one: .env.example).
_SECRET_FILE = lazy_regex(
    r"(?i)(?:^|[/\\])(?:\.env(?:\.(?!example|sample|template|dist|defaults?\b)[\w-]+)?"
    r"|\.pgpass|_?\.?netrc|\.git-credentials|credentials(?:\.\w+)?|\.npmrc|\.pypirc|\.dockercfg"
    r"|\.docker[/\\]config\.json|\.htpasswd|[\w.-]*\.(?:pem|key|p12|pfx|jks|keystore)"
    r"|[\w.-]*(?:secret|passw|token|credential)[\w.-]*|kubeconfig|\.kube[/\\]config"
    r"|[\w.-]*\.tfvars|kaggle\.json|node-token|wp-config\.php|\.vault-token|\.boto|\.s3cfg|\.my\.cnf)$"
    r"|(?:^|/)secrets/[\w.-]+$"
)
_GO_TYPE = lazy_regex(r"[ \t]*type[ \t]+\w+[ \t]+(?:struct|interface|func|map|\[|=|\*|\w+[ \t]*$)")
# Fields that name no secret (a value printed from them is public).
_PUBLIC_FIELDS = frozenset(
    """username user login name namespace host hostname port database db email region url
    endpoint ca.crt tls.crt""".split()  # noqa: SIM905
)
_KEY_VALUE = lazy_regex(
    r"[ \t]*(?:export[ \t]+|-[ \t]+)?[\"']?(?P<key>[A-Za-z_][\w.-]*)[\"']?"
    r"(?:[ \t]*[:=][ \t]*|[ \t]+)[\"']?(?P<value>[^\s\"',]+)"
)
_NETRC_PASSWORD = lazy_regex(r"\bpassword[ \t]+(?P<value>\S+)")
_DATA_BLOCK = lazy_regex(r"(?P<indent>[ \t]*)(?:data|stringData):[ \t]*$")
_TRAILING = ".,;:!?)]}\"'"
_NUMBERED = lazy_regex(r"\d{1,3}\)[ \t]+\"(?P<v>[^\"]+)\"$")


def output_spans(text: str) -> Iterator[Span]:
    """The secrets in the output that follows a command printing secrets in ``text``.

    Example:
        >>> text = "$ printenv PATH\\n/usr/bin\\n$ vault kv get -field=password kv/db\\nS3cr3t-x9!"
        >>> [text[a:b] for a, b in output_spans(text)]
        ['S3cr3t-x9!']
    """
    found = list(_COMMAND_LINE().finditer(text)) if "\n" in text else []
    if "`" in text:  # "Output of `op read op://…`:", "`gh auth token` gives X"
        quoted = list(_COMMAND_QUOTED().finditer(text))
        found += quoted
        yield from _said(text, quoted)
    commands: dict[int, list[str]] = {}
    for m in found:
        command = m.group("command") or m.group("bare")
        if len(command) <= _COMMAND_CHARS:  # not a line of data (a log, JSON)
            commands.setdefault(text.find("\n", m.end()), []).append(command)
    if "\n" in text and any(word in text for word in _NEEDLE_WORDS):
        _inside(text, commands)
    for end, line in sorted(commands.items()):
        kind = next((k for k in map(_kind, line) if k is not None), None)
        if end >= 0 and kind is not None:
            yield from _output(text, end + 1, kind)


def _inside(text: str, commands: dict[int, list[str]]) -> None:
    """Add to ``commands`` those that start inside a line ("We ran this: $ kubectl …",
    "keep this: vault kv get -field=…"): the line itself, and what follows a prompt in
    it; only lines that hold a word such a command has, and that an output follows."""
    starts = set()
    for word in _NEEDLE_WORDS:
        at = text.find(word)
        while at >= 0:
            start = text.rfind("\n", 0, at) + 1
            starts.add(start)
            end = text.find("\n", at)
            at = text.find(word, end) if end >= 0 else -1
    for start in sorted(starts):
        end = text.find("\n", start)
        after = text[end + 1 : end + 200].split("\n", 1)[0] if end >= 0 else ""
        if not after.strip() or end - start > _COMMAND_CHARS:
            continue
        line = text[start:end]
        found = [line] + [line[m.end() :] for m in _PROMPT_INSIDE().finditer(line)]
        commands.setdefault(end, []).extend(found)


def _said(text: str, quoted: list[re.Match[str]]) -> Iterator[Span]:
    """What the same line says a command in backticks printed ("`vault kv get -field=password
    kv/db` returns X", "… → X"), when it looks generated."""
    for m in quoted:
        said = _SAID().match(text, m.end())
        if said and _kind(m.group("command")) in ("value", "random") and _random(said["value"]):
            yield said.span("value")


def _kind(command: str) -> str | None:
    value = _VALUE().search(command)
    if value is not None:
        field = value.group("field") or value.group("field2")
        return None if field and field.lower() in _PUBLIC_FIELDS else "value"
    if _DECODE().search(command) and _CREDENTIAL().search(command):
        return "value"
    variable = _VARIABLE().search(command)
    if variable is not None:
        words = name_words(variable.group("name"))
        found = secret_name(words, "=") if words else None
        return None if found is None else "value" if found == "secret" else "random"
    if _DUMP().search(command):
        return "dump"
    read = _READ_FILE().search(command)
    if read is not None and _GO_TYPE().match(command):
        return None  # Go's "type Credentials struct {", not Windows' type command
    if read is not None and _SECRET_FILE().search(read.group("file")):
        return "dump"
    return None


def _output(text: str, at: int, kind: str) -> Iterator[Span]:
    """The secrets of the output lines from ``at``: until the next prompt, a blank line
    after some output, or as many lines as ``kind`` prints."""
    lines = 0
    data_indent: int | None = None
    while at < len(text) and lines < _OUTPUT_LINES["dump" if kind == "dump" else "value"]:
        end = text.find("\n", at)
        end = len(text) if end < 0 else end
        line = text[at:end]
        if not line.strip():
            if lines:
                return
        elif _NEXT_PROMPT().match(line):
            return
        else:
            lines += 1
            if kind == "dump":
                block = _DATA_BLOCK().fullmatch(line)
                indent = len(line) - len(line.lstrip())
                if block is not None:
                    data_indent = len(block.group("indent"))
                elif data_indent is not None and indent <= data_indent:
                    data_indent = None
                yield from _dump_line(text, at, end, in_data=data_indent is not None)
            else:
                yield from _value_line(text, at, end, kind)
        at = end + 1


def _value_line(text: str, start: int, end: int, kind: str) -> Iterator[Span]:
    """The line printed by a one-value command, when it is one token (not a word)."""
    token = text[start:end].strip()
    numbered = _NUMBERED().match(token)  # redis-cli's 2) "X"
    if numbered is not None:
        token = numbered.group("v")
    if not token or re.search(r"\s", token) or placeholder(token):
        return
    bare = token.rstrip(_TRAILING)
    word = bare.isalpha() and (is_prose_word(bare) or bare.islower() or len(bare) < 8)
    if len(token) < 4 or word or (kind == "random" and not _random(token)):
        return
    at = start + text[start:end].index(token)
    yield at, at + len(token)


def _dump_line(text: str, start: int, end: int, *, in_data: bool) -> Iterator[Span]:
    """The secrets of one line of a record of secrets or a secrets file."""
    line = text[start:end]
    for m in _NETRC_PASSWORD().finditer(line):
        if not placeholder(m.group("value")):
            yield start + m.start("value"), start + m.end("value")
    pair = _KEY_VALUE().match(line)
    if pair is None:
        token = line.strip()
        if token and not re.search(r"\s", token) and _random(token):
            at = start + line.index(token)
            yield at, at + len(token)
        return
    value = pair.group("value")
    if placeholder(value) or value.startswith(("$", "%", "{")):
        return
    words = name_words(pair.group("key"))
    found = secret_name(words, "=") if words else None
    if in_data or found == "secret" or _random(value):
        yield start + pair.start("value"), start + pair.end("value")


def _random(value: str) -> bool:
    """A value that looks generated: by the entropy guard's measure, or 8 characters or
    more mixing letters and digits (a password); never a path of names or a pod."""
    bare = value.rstrip(_TRAILING)
    if named(bare) or "://" in bare or re.fullmatch(r"[\d.:TZ+-]+|v?\d[\w.-]*", bare):
        return False
    return generated(bare) or (len(bare) >= 8 and looks_random(bare))
