"""Issue 28, round 3: the classes round 2's held-back set found, on cases written here."""

from __future__ import annotations

import pytest

from vaultmem.agent.redact import redact

# (text, the secret that must go)
SECRETS = [
    # (a) a password word's sentence: relative clauses, the value first, other verbs
    ("Пароль, который я завёл для стенда, такой: Qz7#mLp2Xv", "Qz7#mLp2Xv"),
    ("Das Passwort, das im Wiki stand, war zuletzt Kp9!wRt4Zz.", "Kp9!wRt4Zz"),
    ("Usei 'Lx8%ab_Q2p' como senha do roteador", "Lx8%ab_Q2p"),
    ("Password email kantor sudah diganti jadi Mn4^tY7#qa", "Mn4^tY7#qa"),
    ("ब्लॉग का पासवर्ड अब 'Rk5-pz9_Lm' है", "Rk5-pz9_Lm"),
    ("Der PIN des Tresors ist seit Freitag 5830.", "5830"),
    (
        "The passphrase for the backup is: maple river drinks slow coffee",
        "maple river drinks slow coffee",
    ),
    ("mk vpn: Tq3!xW9#pz nhé", "Tq3!xW9#pz"),
    # (b) program syntax
    ("$p = ConvertTo-SecureString 'Rq4!mZ8#xk' -AsPlainText -Force", "Rq4!mZ8#xk"),
    ("net user svc_ci Hv6#pL2!qs /add", "Hv6#pL2!qs"),
    ("java -Dapp.keystore.password=Zx9-kk2-Lp7 -jar api.jar", "Zx9-kk2-Lp7"),
    ("sudo -S apt-get update <<< 'Mv3!qp7#Lz'", "Mv3!qp7#Lz"),
    ("ftp -n 10.1.2.3 <<EOF\nuser uploader Pz8#nr4!Kq\nput x.zip\nEOF", "Pz8#nr4!Kq"),
    ("LicenseKey Ab12Cd34Ef56Gh78Ij90", "Ab12Cd34Ef56Gh78Ij90"),
    ("define('NONCE_SALT', 'k#8Lp!2vQz@9Xm$4');", "k#8Lp!2vQz@9Xm$4"),
    # (c) generated passwords printed by tools
    ("[Server] A temporary password is generated for root@localhost: Hq7;xP2_mLk9", "Hq7;xP2_mLk9"),
    ("PASSWORD kibana_system = Xk29PqLm7Zr4Tn1W", "Xk29PqLm7Zr4Tn1W"),
    (
        "Admin password (copy it now):\n\n  c3b9f1e7a2d84f60b5e9c7d1a3f8e2b4\n",
        "c3b9f1e7a2d84f60b5e9c7d1a3f8e2b4",
    ),
]

ORDINARY = [
    # (d) references, masks, documented placeholders, JWT payloads explained
    'psql "postgres://app:$PGPASSWORD@db:5432/app"',
    "postgres://app:******@db:5432/app",
    "const client = new Client({ token: process.env.SLACK_TOKEN });",
    "SECRET_KEY=replace-me",
    "aws_access_key_id = AKIAIOSFODNN7EXAMPLE  # the AWS docs' example",
    'Its payload is {"sub": "7", "iat": 1700000000}; the JWKS key kid=2024-rotation signs it.',
    # the sentence of a password word holding no password
    "The password reset for user bob.jones3 on host api-02 failed.",
    "Set the password with passwd on Debian12.5 first.",
    "We moved the passwords from KeePass to Bitwarden2023.",
    "The passphrase is in the team vault, ask the on-call engineer.",
    "PIN must be 4 to 6 digits, not a sequence like 1234.",
    "password: str = Field(min_length=12)",
    "net user /domain",
]


@pytest.mark.parametrize(("text", "secret"), SECRETS)
def test_round3_secret_is_redacted(text: str, secret: str) -> None:
    assert secret not in redact(text)


@pytest.mark.parametrize("text", ORDINARY)
def test_round3_look_alike_is_left_alone(text: str) -> None:
    assert redact(text) == text
