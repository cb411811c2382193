"""Redaction by context, the four classes round 1's held-back set found: a credential
phrase with a longer filler, the output of a command that prints a secret, a generated
string further off in the sentence of a credential word, and references (parameter
expansions, header names) that are never secrets."""

from __future__ import annotations

import pytest

from vaultmem.agent.redact import REDACTED, redact
from vaultmem.agent.secret_output import output_spans

PW = "Qz7-vLm2#Pk9"
KEY = "Vb2kR9mZq4LxT7wNc1pH8sJd3fG6yUe0"


def _redacted(text: str, secret: str) -> None:
    out = redact(text)
    assert secret not in out and REDACTED in out, out
    assert redact(out) == out  # idempotent


# --------------------------------------------------------------------------- (a) fillers

LONG_FILLERS = {
    "en": f"the password of the guest wifi on the fourth floor of building B is {PW}",
    "en aside": f"The root password (the old box, not the new one) is {PW}",
    "fr": f"le mot de passe du compte admin de la box du bureau de Lyon est {PW}",
    "de": f"Das Kennwort für das Admin-Konto vom alten NAS im Keller lautet {PW}",
    "es": f"la contraseña del usuario root del servidor de copias de la oficina es {PW}",
    "id": f"sandi admin router gudang lama: {PW}",
    "vi": f"mật khẩu router kho cũ tầng một là {PW}",
    "ru": f"пароль администратора старого сервера резервных копий: {PW}",
    "ar": f"كلمة سر الواي فاي في مكتب الطابق الثاني هي {PW}",
    "zh": f"备份服务器的管理员密码（旧机房那台）是 {PW}",
    "ja": f"パスワード（古いバックアップサーバー）は {PW} です",
    "th": f"รหัสผ่านเราเตอร์โกดังเก่าชั้นหนึ่งคือ {PW}",
}


@pytest.mark.parametrize("name", sorted(LONG_FILLERS))
def test_a_phrase_past_a_longer_filler_is_redacted(name: str) -> None:
    _redacted(LONG_FILLERS[name], PW)


@pytest.mark.parametrize(
    "text",
    [
        "The password of the guest wifi on the fourth floor is printed on the router.",
        "The password for the service accounts in the old LDAP is rotated every 90d.",
        "The token limit of the small model in the free tier is 4096.",
        "the password of the guest wifi on the fourth floor: ask at the front desk",
        "The password. Of the wifi on the fourth floor, the name is Harbor-5G.",
        "le mot de passe du compte admin de la box du bureau est dans le coffre",
        "备份服务器的管理员密码（旧机房那台）是上个月改的。",
        "the password policy for all the accounts of the team is v2.1.0-final",
    ],
)
def test_a_longer_filler_before_no_secret_changes_nothing(text: str) -> None:
    assert redact(text) == text


# --------------------------------------------------------------------------- (b) output

OUTPUTS = {
    "jsonpath | base64 -d": (
        f"$ kubectl get secret api -o jsonpath='{{.data.token}}' | base64 -d\n{KEY}\n$ ls",
        KEY,
    ),
    "echo a secret | base64 --decode": (
        f"$ echo $SMTP_PASSWORD_B64 | base64 --decode\n{PW}",
        PW,
    ),
    "vault -field": (f"vault kv get -field=password kv/harbor/db\n{PW}", PW),
    "secretsmanager text": (
        f"aws secretsmanager get-secret-value --secret-id db --query SecretString "
        f"--output text\n{PW}",
        PW,
    ),
    "printenv of a secret name": (f"$ printenv DB_PASS\n{PW}", PW),
    "$env: of a secret name": (f"PS C:\\> $env:API_TOKEN\n{KEY}", KEY),
    "op read in backticks": (f"Output of `op read op://Private/db/password`:\n{PW}", PW),
    "kubectl -o yaml data": (
        f"$ kubectl get secret db -o yaml\ndata:\n  conn: {KEY}\nkind: Secret",
        KEY,
    ),
    "vault kv get table": (f"$ vault kv get kv/mail\nKey    Value\nsmtp_pass    {PW}", PW),
    "cat .netrc": (f"$ cat ~/.netrc\nmachine git.example.org login ci password {PW}", PW),
    "cat .env": (f"$ cat .env.local\nLOG=info\nRUNNER={KEY}", KEY),
    "env": (f"root@ci:~# env\nHOME=/root\nREG={KEY}", KEY),
    "after words, on the same line": (
        f"We kept this: $ kubectl get secret api -o jsonpath='{{.data.token}}' | base64 -d\n{KEY}",
        KEY,
    ),
    "after a colon, no prompt": (f"Here you go: vault kv get -field=password kv/db\n{PW}", PW),
    "in a URL's query": (f"https://x.test/?q=root@ci:~# env\nA=1\nREG={KEY}", KEY),
    "docker exec vault -field": (f"$ docker exec vault vault read -field=token ci\n{KEY}", KEY),
    "ssh cat .env": (f"ssh bastion cat /srv/app/.env\nSIGNING={KEY}", KEY),
}


@pytest.mark.parametrize("name", sorted(OUTPUTS))
def test_the_output_of_a_command_that_prints_a_secret_is_redacted(name: str) -> None:
    text, secret = OUTPUTS[name]
    _redacted(text, secret)


@pytest.mark.parametrize(
    "text",
    [
        "$ kubectl get secret db -o jsonpath='{.data.username}' | base64 -d\nharbor_app",
        "$ kubectl get secret db -o jsonpath='{.metadata.name}'\ndb",
        "$ printenv HOME\n/root",
        "$ base64 -d <<< aGVsbG8=\nhello",
        "$ kubectl get secrets\nNAME   TYPE     DATA   AGE\ndb     Opaque   2      3d",
        "$ cat .env.example\nDB_PASSWORD=changeme",
        "$ cat README.md\nRun make test; the token bucket is in rate.py.",
        "Run `gh auth token` to see yours.\nThen paste it in the settings page.",
        "$ env\nHOME=/root\nPATH=/usr/local/bin:/usr/bin\nHOSTNAME=runner-7c9f8d6b5-x2xkq",
    ],
)
def test_output_that_holds_no_secret_changes_nothing(text: str) -> None:
    assert redact(text) == text


@pytest.mark.parametrize(
    "text",
    [
        f"`vault kv get -field=password kv/db` returns {PW}.",
        f"I ran `kubectl get secret api -o jsonpath='{{.data.token}}' | base64 -d` → {KEY}",
    ],
)
def test_what_a_command_in_backticks_printed_on_its_line_is_redacted(text: str) -> None:
    _redacted(text, PW if PW in text else KEY)


def test_what_a_command_that_names_no_secret_printed_on_its_line_stays() -> None:
    text = "`printenv HOSTNAME` returns runner-7c9f8d6b5-x2xkq and `op read` gives the value"
    assert redact(text) == text


def test_the_output_ends_at_the_next_prompt_or_a_blank_line() -> None:
    text = f"$ vault kv get -field=password kv/db\n{PW}\n$ echo done\nAb12Cd34Ef\n\n{KEY}"
    found = [text[a:b] for a, b in output_spans(text)]
    assert found == [PW]


# --------------------------------------------------------------------------- (c) sentence


@pytest.mark.parametrize(
    "text",
    [
        f"I put the new token in the shared vault this morning, but if you cannot open it "
        f"use {KEY} for now",
        f"{KEY} is what goes into the pipeline settings of the runner as the deploy token",
        f"Le jeton, Paul l'a régénéré hier soir dans la console, c'est {KEY} jusqu'à lundi",
        f"Das Secret haben wir gestern im Portal neu erzeugt, nimm bis dahin {KEY}",
    ],
)
def test_a_generated_string_in_the_sentence_of_a_credential_word_is_redacted(
    text: str,
) -> None:
    _redacted(text, KEY)


@pytest.mark.parametrize(
    "text",
    [
        "The token refresh fix landed yesterday in the release branch as "
        "3f9a2c1d7e8b4a6f0c5d2e1b9a8c7d6e5f4a3b2c after review",
        "The secret was rotated. The deploy ran as pod harbor-api-7c9f8d6b5-x2xkq later on.",
        "The token expired, and the request id of the retry was Q2hhbmdlZEJ5UmV0cnlJZDEy",
        "After the token expired the job 01HZX4KQ7M8N9P0R1S2T3V4W5X was retried",
        "I updated the API key docs; the page is https://www.notion.so/acme/API-keys-4f1c2a7e9b3d4e8a",
        "We rotated the API key after the incident last week, the write-up is at "
        "https://docs.example.com/d/1aB3cD4eF5gH6iJ7kL8mN9oP0qR/edit",
    ],
)
def test_a_sentence_with_a_public_string_changes_nothing(text: str) -> None:
    assert redact(text) == text


# --------------------------------------------------------------------------- (d) references


@pytest.mark.parametrize(
    "text",
    [
        "API_KEY=${API_KEY:?API_KEY must be set}",
        "password: ${DB_PASSWORD:?set it in .env}",
        'TOKEN="${TOKEN:-$(cat /run/secrets/token)}"',
        "export SECRET=${SECRET:-}",
        "pw=${#DB_PASSWORD}",
        "TOKEN=${TOKEN//[[:space:]]/}",
        'auth = request.headers.get("X-Auth-Token")',
        "key = req.header('x-api-key')",
        "password = $db_password;",
        "$env:DB_PASSWORD = $env:VAULT_DB_PASSWORD",
    ],
)
def test_a_reference_is_never_redacted(text: str) -> None:
    assert redact(text) == text


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        (f"DB_PASSWORD=${{DB_PASSWORD:-{PW}}}", PW),
        (f"REGISTRY=${{REGISTRY_TOKEN:={KEY}}}", KEY),
        ('token = os.getenv("API_TOKEN", "dev-Tk9x2LmQ")', "dev-Tk9x2LmQ"),
    ],
)
def test_a_default_that_is_a_secret_is_redacted(text: str, secret: str) -> None:
    _redacted(text, secret)


def test_a_quoted_value_cut_off_with_the_text_is_still_redacted() -> None:
    _redacted(f'{{"Credentials": {{"SessionToken": "{KEY}', KEY)
