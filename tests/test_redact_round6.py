"""Issue 28, round 6: the classes of round 5's held-back leaks and false redactions, on
cases written here: a table's "Value" column, session cookies, ``op item get
--reveal``, ``redis-cli``'s numbered output, ``pass:`` as an object's key, "set your temp
password to X", recovery keys, encryption keys in hex, six more languages; and what
stays: optional chaining, prompts in ``read -p``, dependency versions, a template's
``PASSWORD`` in capitals, a secret reference with its version, masks after a long
prefix, listings of secret names.
"""

from __future__ import annotations

import pytest

from vaultmem.agent.redact import redact

SECRETS = [
    ("Key        Type    Value\napi_token  string  qL8zX2mW9vK4pR7tN3bY\n", "qL8zX2mW9vK4pR7tN3bY"),
    ("KeyName  Value\nkey1     Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZmdoaWprbG1u\n", "Zm9vYmFyYmF6"),
    ("Cookie header was PHPSESSID=k2j4h5g6f7d8s9a0qwertyuiopzx", "k2j4h5g6f7d8s9a0qwertyuiopzx"),
    ('$ op item get "Mail" --fields label=password --reveal\nplainpass7788\n', "plainpass7788"),
    ('127.0.0.1:6379> CONFIG GET masterauth\n1) "masterauth"\n2) "Rq7Lm2Zx9Wv4"', "Rq7Lm2Zx9Wv4"),
    ("mailer({ host: 'smtp', auth: { user: 'ops', pass: 'oak-river-cloud-17' } })", "oak-river"),
    ("I set your temp password to Pq7.rT_2zX. change it at first login", "Pq7.rT_2zX"),
    ("BitLocker recovery key: 111111-222222-333333-444444-555555-666666-777777-888888", "444444"),
    (
        "encryption key: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
        "9f86d081884c",
    ),
    ("Adgangskoden er Birk4411z", "Birk4411z"),
    ("Passordet er Fjord7788k", "Fjord7788k"),
    ("Geslo je Lipa5566q", "Lipa5566q"),
    ("Serverio slaptažodis: Ąžuolas7788", "Ąžuolas7788"),
    ("mat khau wifi la cafe2024sua nhe", "cafe2024sua"),
    ("Heslo je Javor3322m", "Javor3322m"),
]

ORDINARY = [
    'const auth = req.headers.authorization?.split(" ")[1];',
    'read -rsp "API token: " API_TOKEN && export API_TOKEN',
    '"dependencies": { "jsonwebtoken": "^9.0.2", "passport": "0.7.0" }',
    "DATABASE_URL=mysql://USER:PASSWORD@HOST:3306/DB",
    "gcloud run deploy web --set-secrets=API_KEY=api-key:3",
    "ANTHROPIC_API_KEY=sk-ant-api03-****************",
    "$ gh secret list\nNAME          UPDATED\nNPM_TOKEN     2 days ago\nDB_PASSWORD   1 week ago",
    "NAME              TYPE     DATA   AGE\napi-credentials   Opaque   2      3d",
    # the look-alikes round 6's set found, written here
    'dsn = f"mysql://{user}:{password}@{host}/{db}"',
    "ALTER USER %s IDENTIFIED BY %s",
    "      MasterUserPassword: !Sub '{{resolve:secretsmanager:${Db}:SecretString:password}}'",
    "> Idempotency-Key: 6f1c2a9e-1b7d-4c3e-9a8f-2d6b4e1c7a90",
    "$hash = password_hash($pw, PASSWORD_BCRYPT);",
    'const apiKey = cfg.requireSecret("stripeApiKey");',
    "Key           Value\n---           -----\ncas_required  false\nmax_versions  10",
    "$ gcloud secrets versions list db-password --project=shop-123",
    "Data\n====\npassword:  32 bytes\nusername:  8 bytes",
    "set-cookie: consent=analytics:0,marketing:1; Path=/",
    "db_pass = lookup('profile::mysql::root_password')",
    "SENDGRID_API_KEY=   # leave empty to log mails instead",
    "      key: Linux-pip-0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f6071",
    "  -p, --password string   Password (see --password-stdin)\n"
    "      --password-stdin    Read it from stdin",
]


@pytest.mark.parametrize(("text", "secret"), SECRETS)
def test_round6_secret_is_redacted(text: str, secret: str) -> None:
    assert secret not in redact(text)


@pytest.mark.parametrize("text", ORDINARY)
def test_round6_look_alike_is_kept(text: str) -> None:
    assert redact(text) == text
