"""Redaction: every family of secret shapes, ordinary text left alone, and every path by
which transcript text reaches a note, a file name, a wikilink or a model's prompt."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import Cli
from vaultmem.agent.redact import REDACTED, redact
from vaultmem.agent.transcript import read_entries

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO / "benchmarks" / "data" / "redaction_corpus.jsonl"
EXAMPLE_VAULT = REPO / "example-vault"

# (text, the secret parts that must go), one or more per family of shapes.
SHAPES = {
    "url password with / and @": (
        "DATABASE_URL=postgres://harbor:p@ss/w0rd:Hx81@db.staging.internal:5432/harbor",
        ["p@ss/w0rd:Hx81"],
    ),
    "url password, empty user": ("redis://:qT7vLm2PzX9w@cache.internal:6379/0", ["qT7vLm2PzX9w"]),
    "bare aws secret key": (
        "the secret from the console: wJalrXUtnFEMI/K7MDENG/bPxRfiCYzK3mQp9vLa",
        ["wJalrXUtnFEMI/K7MDENG/bPxRfiCYzK3mQp9vLa"],
    ),
    "aws secret key after its name": (
        "aws configure set aws_secret_access_key Vb2kR9mZ+q4LxT7wNc1pH8sJd3fG6yUe0aKoEiQr",
        ["Vb2kR9mZ+q4LxT7wNc1pH8sJd3fG6yUe0aKoEiQr"],
    ),
    "azure account key": (
        "DefaultEndpointsProtocol=https;AccountName=harborlogs;AccountKey=3q2+7w8Y9zXcVbN"
        "mLkJhGfDsA1234567890qwertyuiopASDFGHJKLzxcvbnm+/QWERTYUIOPasdfghjklZXCVBNM09==;"
        "EndpointSuffix=core.windows.net",
        ["3q2+7w8Y9zXcVbNmLkJhGfDsA1234567890qwertyuiop"],
    ),
    "pgp private key block": (
        "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBGVx3kQBCADNq8w2Ykz1PsFv9Lr0mXe4\n"
        "Tb7Hc2Jd5Kf8Lg1Mh4Ni7Oj0Pk3Ql6Rm9Sn2To5Up8Vq1Wr4Xs7Yt0Zu3\n=Xk2P\n"
        "-----END PGP PRIVATE KEY BLOCK-----\nnext line",
        [
            "lQOYBGVx3kQBCADNq8w2Ykz1PsFv9Lr0mXe4",
            "Tb7Hc2Jd5Kf8Lg1Mh4Ni7Oj0Pk3Ql6Rm9Sn2To5Up8Vq1Wr4",
        ],
    ),
    "stripe webhook secret": (
        "stripe listen: your webhook signing secret is whsec_9aKd83JfLq0Zm2Xv7Bn4Ct6Yw1Ue5Rp",
        ["whsec_9aKd83JfLq0Zm2Xv7Bn4Ct6Yw1Ue5Rp"],
    ),
    "hugging face token": (
        "I set hf_QmZkLpXv9Rt3Wn7Yb2Cd5Fg8Hj1Ks4Ma6Ne in the CI secrets",
        ["hf_QmZkLpXv9Rt3Wn7Yb2Cd5Fg8Hj1Ks4Ma6Ne"],
    ),
    "gitlab deploy token": (
        "the deploy token gldt-Xy7Kp2Lm9Qr4Tv6Wz1Ab can only read the registry",
        ["gldt-Xy7Kp2Lm9Qr4Tv6Wz1Ab"],
    ),
    "slack webhook": (
        "Alerts go to https://hooks.slack.com/services/T01ABCDEF/B02GHIJKL/xq8Lm2Nv5Bc7Zx1Ws4Ed9Rf0",
        ["xq8Lm2Nv5Bc7Zx1Ws4Ed9Rf0"],
    ),
    "the password is": ("ok the password for the wifi is swordfish.", ["swordfish"]),
    "password changed to": (
        "I changed the admin password to Kz8vQ2mL9x this morning.",
        ["Kz8vQ2mL9x"],
    ),
    "mysql -p": ("mysql -u root -pRt5Yu8Io1P -h 127.0.0.1 harbor", ["Rt5Yu8Io1P"]),
    "curl -u": ("curl -u admin:Zq0xZSm5w0VD https://jenkins.internal/api/json", ["Zq0xZSm5w0VD"]),
    "redis-cli -a": ("redis-cli -h cache -a Lp3Nq7Rs9Tu2 INFO memory", ["Lp3Nq7Rs9Tu2"]),
    "openssl pass:": ("openssl pkcs12 -export -out b.p12 -passout pass:Wm4Hc7Ms2R", ["Wm4Hc7Ms2R"]),
    "env passphrase of words": (
        "POSTGRES_PASSWORD=correct horse battery staple",
        ["horse battery staple"],
    ),
}

ORDINARY = [
    "Secrets: `STRIPE_WEBHOOK_SECRET` from AWS Secrets Manager via External Secrets.",
    "author: Kenji Watanabe",
    "max_tokens=4096 keeps the replies short",
    "password = os.environ['DB_PASSWORD']",
    "client = Client(api_key=api_key, token=self.token, timeout=10)",
    "export DB_PASSWORD=$DB_PASSWORD_FROM_VAULT",
    "tokenizer: bert-base-uncased",
    "The token: expired again, so the client refreshes it before retrying.",
]


def _left(secrets: list[str], out: str) -> list[str]:
    """The secrets any 8 characters of which (all, if shorter) are still in ``out``."""
    return [s for s in secrets if any(s[i : i + 8] in out for i in range(max(1, len(s) - 7)))]


@pytest.mark.parametrize("family", sorted(SHAPES))
def test_each_family_of_secret_shapes_is_redacted(family: str) -> None:
    text, secrets = SHAPES[family]
    out = redact(text)
    assert _left(secrets, out) == [], out
    assert REDACTED in out
    assert redact(out) == out  # idempotent


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert redact(text) == text


def test_corpus_has_no_leak_and_no_false_redaction() -> None:
    cases = [json.loads(x) for x in CORPUS.read_text("utf-8").splitlines() if x.strip()]
    secret = [c for c in cases if c["kind"] == "secret"]
    assert len(secret) >= 60 and len({c["family"] for c in secret}) >= 8
    leaks = [c["text"] for c in secret if _left(c["secrets"], redact(c["text"]))]
    changed = [
        c["text"] for c in cases if c["kind"] == "ordinary" and redact(c["text"]) != c["text"]
    ]
    assert leaks == [] and changed == []
    notes = [
        p for p in EXAMPLE_VAULT.rglob("*.md") if redact(p.read_text("utf-8")) != p.read_text()
    ]
    assert notes == []


def test_detect_secrets_plugins_run_without_the_network() -> None:
    """Shapes only detect-secrets knows (Twilio, Telegram, SendGrid), caught by its regexes
    alone: its plugins can verify a secret over HTTP, and vaultmem never lets them (here
    any connection attempt ends the process)."""
    import subprocess
    import sys

    code = (
        "import socket\n"
        "def refuse(*a, **k): raise SystemExit('network used')\n"
        "socket.socket.connect = socket.create_connection = refuse\n"
        "from vaultmem.agent.redact import redact\n"
        "print(redact(open(0).read()), end='')\n"
    )
    text = (
        "twilio: SK0123456789abcdef0123456789abcdef\n"
        "bot: 1234567890:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw9\n"
        "mail: 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\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], input=text, capture_output=True, text=True, check=True
    ).stdout
    assert out.splitlines() == ["twilio: [REDACTED]", "bot: [REDACTED]", "mail: [REDACTED]"]


# Cases written while tuning (issue 28), kept as regression tests: each secret is one of
# the marked strings below (Zq8…, the PINs, the hex keys); each ordinary text stays as it is.
TUNING_SECRETS = [
    "Das Passwort ist Zq8!mVx2Lp",
    "das Passwort ist schwertfisch",
    "Passwort: Zq8!mVx2Lp",
    'Mein Passwort lautet "Tr0ub4dor&3"',
    "Die PIN ist 4711",
    "Der Token lautet ghx7Kq2LmN9pQr4sTv6wXy8z",
    "Le mot de passe est Zq8!mVx2Lp",
    "le mot de passe : Zq8!mVx2Lp",
    "Mon mot de passe, c'est Zq8!mVx2Lp",
    "La contraseña es Zq8!mVx2Lp",
    "mi contraseña: Zq8!mVx2Lp",
    "La clave de la base de datos es Zq8!mVx2Lp",
    "A senha é Zq8!mVx2Lp",
    "minha senha: Zq8!mVx2Lp",
    "パスワードは Zq8!mVx2Lp です",
    "パスワード：Zq8!mVx2Lp",
    "パスワードは「Zq8!mVx2Lp」です",
    "Пароль: Zq8!mVx2Lp",
    "пароль Zq8!mVx2Lp",
    "Пароль — «Zq8!mVx2Lp»",
    "密码：Zq8!mVx2Lp",
    "密码是 Zq8!mVx2Lp",
    "我的密码是Zq8!mVx2Lp，别告诉别人",
    "sshpass -p 'Zq8!mVx2Lp' ssh root@10.0.0.5",
    "sshpass -p Zq8mVx2Lp&ssh root@10.0.0.5",
    "sshpass -pZq8mVx2Lp ssh root@host",
    "ssh root@host; sshpass -p Zq8mVx2Lp scp a b",
    'mysql -p"Zq8!mVx2Lp" -u root',
    "psql --password=Zq8mVx2Lp",
    "curl https://admin:Zq8mVx2Lp@api.example.com/v1",
    "dckr_pat_Zq8mVx2LpQ4rT6wY1zA3bC5dE7f",
    "sntrys_eyJpYXQiOjE2ODAwMDAwMDAuMCwidXJsIjoiaHR0cHM6Ly9zZW50cnkuaW8ifQ_Zq8mVx2LpQ4rT6wY1zA3bC5dE7fG9hJ2kL4mN6pQ8r",
    "NRAK-ZQ8MVX2LPQ4RT6WY1ZA3BC5DE7F",
    "CLOUDFLARE_API_TOKEN=Zq8mVx2LpQ4rT6wY1zA3bC5dE7fG9hJ2kL4mN6pQ",
    "cloudflare api token Zq8mVx2LpQ4rT6wY1zA3bC5dE7fG9hJ2kL4mN6pQ",
    "export CF_API_TOKEN=Zq8mVx2LpQ4rT6wY1zA3bC5dE7fG9hJ2kL4mN6pQ",
    "VAULT_TOKEN=s.Zq8mVx2LpQ4rT6wY1zA3bC5d",
    "vault token: s.Zq8mVx2LpQ4rT6wY1zA3bC5d",
    "Zq8mVx2LpQ4rT6wY1zA3bC5dE7fG9hJ2",
    "grep -r 'Zq8mVx2LpQ4rT6wY1zA3bC5dE7fG9hJ2' .",
    "rg Zq8mVx2LpQ4rT6wY1zA3bC5dE7fG9hJ2 src/",
    "the webhook secret is whsec_Zq8mVx2LpQ4rT6wY1zA3bC5d",
    "token: Zq8mVx2LpQ4rT6wY1zA3bC5dE7fG9hJ2",
    "Here is my key: Zq8mVx2LpQ4rT6wY1zA3bC5dE7fG9hJ2",
    "auth=Zq8mVx2LpQ4rT6wY1zA3",
    "Bearer Zq8mVx2LpQ4rT6wY1zA3bC5d",
    "use this password: Zq8!mVx2Lp",
    "password=Zq8!mVx2Lp&user=admin",
    "https://api.example.com/?token=Zq8mVx2LpQ4rT6wY1zA3bC5d&x=1",
    "the password for root on db1 is Zq8!mVx2Lp",
    "root password: Zq8!mVx2Lp",
    "PIN: 4711",
    "my PIN is 4711",
    "pin code 4711",
    "export PGPASSWORD='Zq8!mVx2Lp'",
    "docker login -u me -p 'Zq8!mVx2Lp' registry.io",
    "mysql -uroot -p'Zq8 !mVx2Lp' db",
    "git clone https://oauth2:glpat-Zq8mVx2LpQ4rT6wY1zA3@gitlab.com/x/y.git",
    "The API key is Zq8mVx2LpQ4rT6wY1zA3bC5d.",
    "API키: Zq8mVx2LpQ4rT6wY1zA3bC5d",
    "비밀번호: Zq8!mVx2Lp",
    "Şifre: Zq8!mVx2Lp",
    "Hasło: Zq8!mVx2Lp",
    "Wachtwoord: Zq8!mVx2Lp",
    "Senha do wifi: Zq8!mVx2Lp",
    "كلمة السر: Zq8!mVx2Lp",
    "पासवर्ड: Zq8!mVx2Lp",
    "Mật khẩu: Zq8!mVx2Lp",
    "Kata sandi: Zq8!mVx2Lp",
    "la password è Zq8!mVx2Lp",
    "Le jeton API est Zq8mVx2LpQ4rT6wY1zA3bC5d",
    "El token es Zq8mVx2LpQ4rT6wY1zA3bC5d",
    "APIキーはZq8mVx2LpQ4rT6wY1zA3bC5dです",
    "API ключ: Zq8mVx2LpQ4rT6wY1zA3bC5d",
    "令牌：Zq8mVx2LpQ4rT6wY1zA3bC5d",
    "DB_PW=Zq8!mVx2Lp",
    "<password>Zq8!mVx2Lp</password>",
    '<add key="ClearTextPassword" value="Zq8!mVx2Lp" />',
    "I'll use Zq8!mVx2Lp as the password for staging",
    "Password:\nZq8mVx2LpQ4",
    "Server=db;Database=x;User Id=sa;Password=Zq8!mVx2Lp;",
    "jdbc:mysql://db:3306/x?user=app&password=Zq8!mVx2Lp",
    "APP_KEY=base64:Zq8mVx2LpQ4rT6wY1zA3bC5dE7fG9hJ2kL4mN6pQ8r=",
    "NEXTAUTH_SECRET=Zq8mVx2LpQ4rT6wY1zA3bC5dE7f",
    '  password: "Zq8!mVx2Lp"',
    "ENV PASSWORD Zq8!mVx2Lp",
    "set -x; export TOKEN=Zq8mVx2LpQ4rT6wY1zA3bC5d",
    "password -> Zq8!mVx2Lp",
    "pass=Zq8!mVx2Lp",
    "-e MYSQL_ROOT_PASSWORD=Zq8!mVx2Lp",
    "api_key: 'Zq8mVx2LpQ4rT6wY1zA3bC5d'",
    "secret = b'Zq8mVx2LpQ4rT6wY1zA3bC5d'",
    "headers={'X-Api-Key': 'Zq8mVx2LpQ4rT6wY1zA3bC5d'}",
    "AccessKey: LTAI5tZq8mVx2LpQ4rT6wY1z",
    "GH_PAT=Zq8mVx2LpQ4rT6wY1zA3bC5dE7fG9hJ2kL4m",
    "SLACK_SIGNING_SECRET=8f3a9c2b1d4e5f607182930a4b5c6d7e",
    "heroku config:set SECRET_KEY_BASE=8f3a9c2b1d4e5f607182930a4b5c6d7e8f3a9c2b",
    "My Apple ID password is Zq8!mVx2Lp",
    "credentials: admin:Zq8!mVx2Lp",
    "user: admin\npass: Zq8!mVx2Lp",
    "wandb login 0f3a9c2b1d4e5f607182930a4b5c6d7e8f9a0b1c",
    "export VERCEL_TOKEN=Zq8mVx2LpQ4rT6wY1zA3bC5d",
    "X-Postmark-Server-Token: 8f3a9c2b-1d4e-4f60-8182-930a4b5c6d7e",
    "DD_API_KEY=8f3a9c2b1d4e5f607182930a4b5c6d7e",
    "curl -d 'username=admin&password=Zq8!mVx2Lp' https://x",
    "terraform apply -var 'db_password=Zq8!mVx2Lp'",
    "helm upgrade harbor . --set postgresql.auth.password=Zq8!mVx2Lp",
    "ansible-playbook site.yml -e ansible_become_pass=Zq8!mVx2Lp",
    "az login -u ops@harbor.dev -p Zq8!mVx2Lp",
    "sqlcmd -S db -U sa -P Zq8!mVx2Lp",
    "redis-cli --pass Zq8!mVx2Lp ping",
    "ftp://deploy:Zq8!mVx2Lp@ftp.harbor.dev/",
    "smtp://mailer:Zq8mVx2Lp@smtp.harbor.dev:587",
    "mongodb+srv://admin:Zq8mVx2Lp@cluster0.mongodb.net",
    "[database]\nhost = db\npassword = Zq8!mVx2Lp",
    "spring.datasource.password=Zq8!mVx2Lp",
    '<connectionStrings><add name="db" connectionString="Server=db;Password=Zq8!mVx2Lp;"/>'
    "</connectionStrings>",
    "  - name: API_TOKEN\n    value: Zq8mVx2LpQ4rT6wY1zA3bC5d",
    "aws_secret_access_key=Zq8mVx2LpQ4rT6wY1zA3bC5dE7fG9hJ2kL4mN6pQ",
    "The bot token: 123456789:AAZq8mVx2LpQ4rT6wY1zA3bC5dE7fG9hJ2k",
    "github token ghp_Zq8mVx2LpQ4rT6wY1zA3bC5dE7fG9hJ2kL4m",
    "OPENAI_API_KEY=sk-proj-Zq8mVx2LpQ4rT6wY1zA3bC5dE7fG9hJ2kL4m",
    "Authorization: Token Zq8mVx2LpQ4rT6wY1zA3bC5d",
    "Cookie: session=Zq8mVx2LpQ4rT6wY1zA3bC5d",
    'sshpass -p"Zq8!mVx2Lp" ssh root@h',
    'mysql -uroot -p"Zq8!mVx2Lp"',
    "ssh root@h 'echo Zq8!mVx2Lp | sudo -S systemctl restart harbor'",
    'echo "Zq8!mVx2Lp" | sudo -S apt update',
    "PASSWORD: Zq8!mVx2Lp",
    'Token = "Zq8mVx2LpQ4rT6wY1zA3bC5d"',
    "my secret key is Zq8mVx2LpQ4rT6wY1zA3bC5d",
    "The key is Zq8mVx2LpQ4rT6wY1zA3bC5dE7fG9hJ2",
    "use key Zq8mVx2LpQ4rT6wY1zA3bC5dE7fG9hJ2 for staging",
    "Le mot de passe de root : Zq8!mVx2Lp",
    "Contraseña: Zq8!mVx2Lp",
    "Senha: Zq8!mVx2Lp",
    "Kennwort: Zq8!mVx2Lp",
    "Пароль для базы данных: Zq8!mVx2Lp",
    "パスワードは「Zq8mVx2Lp」",
    "密碼：Zq8!mVx2Lp",
    "Hier ist das Passwort: Zq8!mVx2Lp",
    "Zugangsdaten: admin / Zq8!mVx2Lp",
    "Benutzer admin, Passwort Zq8!mVx2Lp",
    "PW: Zq8!mVx2Lp",
    "Das neue Passwort für root lautet Zq8!mVx2Lp",
    "Voici le mot de passe : Zq8!mVx2Lp",
    "mdp : Zq8!mVx2Lp",
    "identifiants : admin / Zq8!mVx2Lp",
    "Le code PIN est 4711",
    "Usuario: admin, contraseña: Zq8!mVx2Lp",
    "La clave del wifi: Zq8!mVx2Lp",
    "aquí está el token: Zq8mVx2LpQ4rT6wY1zA3bC5d",
    "Segue a senha: Zq8!mVx2Lp",
    "senha do root = Zq8!mVx2Lp",
    "La password di root è Zq8!mVx2Lp",
    "Ecco la password: Zq8!mVx2Lp",
    "Вот пароль: Zq8!mVx2Lp",
    "логин admin, пароль Zq8!mVx2Lp",
    "Токен бота: 123456789:AAZq8mVx2LpQ4rT6wY1zA3bC5dE7fG9hJ2k",
    "账号admin 密码Zq8!mVx2Lp",
    "登录密码：Zq8!mVx2Lp",
    "这是token：Zq8mVx2LpQ4rT6wY1zA3bC5d",
    "ユーザー名はadmin、パスワードはZq8!mVx2Lpです",
    "トークン：Zq8mVx2LpQ4rT6wY1zA3bC5d",
    "아이디 admin 비밀번호 Zq8!mVx2Lp",
    "Kullanıcı adı admin, şifre Zq8!mVx2Lp",
    "Login: admin, hasło: Zq8!mVx2Lp",
    "Gebruikersnaam admin, wachtwoord Zq8!mVx2Lp",
    "Tài khoản admin, mật khẩu Zq8!mVx2Lp",
    "यूज़रनेम admin और पासवर्ड Zq8!mVx2Lp",
    "The new password for root is Zq8!mVx2Lp",
    "password for the VPN: Zq8!mVx2Lp",
    "user=admin pass=Zq8!mVx2Lp",
    "login: admin\npassword: Zq8!mVx2Lp",
    "Password for admin@harbor.dev: Zq8!mVx2Lp",
    "sudo password is Zq8!mVx2Lp btw",
    "passwd: Zq8!mVx2Lp",
    "the root pw is Zq8!mVx2Lp",
    "PASS=Zq8!mVx2Lp",
    "'password': 'Zq8!mVx2Lp'",
    "password => 'Zq8!mVx2Lp'",
    "$password = 'Zq8!mVx2Lp';",
    "define('DB_PASSWORD', 'Zq8!mVx2Lp');",
    "ENV['DB_PASSWORD'] = 'Zq8!mVx2Lp'",
    'System.setProperty("db.password", "Zq8!mVx2Lp")',
    'config.password = "Zq8!mVx2Lp"',
    '<add key="Password" value="Zq8!mVx2Lp" />',
    "password: !!str Zq8!mVx2Lp",
]
TUNING_ORDINARY = [
    "the Kubernetes secret is named harbor-db-credentials",
    "the secret harbor-db-credentials holds the DB user",
    "kubectl get secret harbor-db-credentials -n prod",
    "commit 9fceb02d0ae598e95dc970b74767f19372d61af8 fixed the token refresh",
    "The password must be at least 12 characters long.",
    "Password reset emails are sent from no-reply@harbor.dev.",
    "Das Passwort ist abgelaufen.",
    "Das Passwort ist zu kurz.",
    "Le mot de passe est incorrect.",
    "Le mot de passe a expiré.",
    "La contraseña es demasiado corta.",
    "La contraseña ha caducado.",
    "A senha está incorreta.",
    "パスワードが間違っています。",
    "パスワードの長さは12文字以上です。",
    "Неверный пароль.",
    "Пароль должен содержать 12 символов.",
    "密码长度至少为12位。",
    "请输入密码。",
    "The token expired at 14:02 UTC.",
    "UUID 123e4567-e89b-12d3-a456-426614174000 identifies the job",
    "sha256: 2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824",
    "the colour is #ff8800 and the accent #1E90FF",
    "ISBN 978-3-16-148410-0",
    "set DB_PASSWORD from the vault, never hardcode it",
    "Use GITHUB_TOKEN in CI.",
    "token_count=512, max_tokens=1024",
    "The secret is to cache aggressively.",
    "The API key is stored in AWS Secrets Manager.",
    "the API key rotates every 30 days",
    "I reset my password yesterday.",
    "password123 is a terrible password",
    "The PIN is printed on the card.",
    "Die PIN steht auf dem Brief.",
    "Please enter your password.",
    "See the secret named `harbor-api-key` in namespace prod.",
    "The token bucket refills 10 tokens per second.",
    "The image tag is v2.14.3-rc1 and the digest "
    "sha256:9b2d5c0e3f1a4c8eb7d62a4f8e1c0b939b2d5c0e3f1a4c8eb7d62a4f8e1c0b93",
    "The OAuth client ID is harbor-web (public).",
    "the container id is 4f9a1b2c3d4e and pod harbor-api-7d9f8c6b5-x2k4p",
    "The variable secretKey holds the HMAC key name.",
    "api_key_name: harbor-prod-key",
    "AWS region eu-west-1, account 123456789012",
    "The commit message says 'rotate token for CI'",
    "Der geheime Schlüssel wird in Vault gespeichert.",
    "Le secret Kubernetes harbor-tls contient le certificat.",
    "El secreto de Kubernetes se llama harbor-tls.",
    "Секрет Kubernetes называется harbor-tls.",
    "Kubernetes 的 secret 名为 harbor-db-credentials。",
    "Kubernetes のシークレット名は harbor-db-credentials です。",
    "The token is a JWT signed with RS256.",
    "our password policy: 12+ chars",
    "The password field is required.",
    "Password hashing uses argon2id with m=65536,t=3,p=4.",
    "base64 of hello is aGVsbG8=",
    "The S3 bucket is harbor-prod-artifacts-9f3a.",
    "Stripe customer cus_NffrFeUfNV2Hib paid invoice in_1MtHbELkdIwHu7ixl4OzzPMv",
    "Request ID: req_8f3a9c2b1d4e5f60",
    "the key is 'name' in the dict",
    "session_key = 'user:42:profile'",
    "The Google Drive file 1BxiMVs0XRA5nFMdKvBdBZjgmUUqptlbs74OgvE2upms holds the plan.",
    "const token = await getToken()",
    "token = response.json()['access_token']",
    "password = getpass.getpass()",
    "password = input('Password: ')",
    "if password == confirm_password:",
    "let secret = process.env.SECRET",
    "self.password = password",
    "password: str = Field(min_length=12)",
    "passwordless login via magic links",
    "The password is hashed with bcrypt before it is stored.",
    "token: ${{ secrets.NPM_TOKEN }}",
    "password: null",
    "password: ''",
    "password: <redacted>",
    "password: '*****'",
    "--password-file /run/secrets/db",
    "helm install harbor --set auth.existingSecret=harbor-db-credentials",
    "api_key = os.getenv('API_KEY')",
    "for token in tokens:",
    "tokens = tokenizer.encode(text)",
    "The key point: keep the cache warm.",
    "Key: value pairs are separated by colons.",
    "Authorization: required",
    "Authentication: OAuth2 with PKCE",
    "Secret: yes (marked sensitive)",
    "The token endpoint returned HTTP 401 Unauthorized.",
    "Zugangsdaten findest du im Passwortmanager.",
    "Die Zugangsdaten liegen in 1Password.",
    "Le mot de passe doit contenir 12 caractères.",
    "La contraseña debe tener al menos 12 caracteres.",
    "The S3 key is logs/2024/05/01/app.log",
    "Press the key combination Ctrl+Shift+P",
    "the primary key is (tenant_id, id)",
    "set the API key in the dashboard, under Settings > API",
    "def verify_token(token: str) -> bool:",
    "token_urlsafe(32) returns a random string",
    "The Helm chart reads the password from secretKeyRef.",
    "RUN --mount=type=secret,id=npmrc cat /run/secrets/npmrc",
    "docker run -p 5432:5432 -e POSTGRES_HOST_AUTH_METHOD=trust postgres",
    "The PIN pad firmware is v3.2.1.",
    "git log --grep 'token refresh'",
    "grep -rn 'TODO' src/",
    "rg 'def test_' tests/",
    "grep -r ConnectionRefusedError logs/",
    "Secrets: none in this repo; use `vault kv get secret/harbor`.",
    "The password was changed 3 days ago.",
    "the token has scopes repo, read:org and workflow",
    "password123 and qwerty are the most common passwords",
    "Passwords must not contain the username.",
    "ssh-keygen -t ed25519 -C 'dev@laptop'",
    "openssl rand -hex 32",
    "The JWT is signed with HS256; the kid is 2024-05-rotation.",
    "Secret scanning found 0 alerts.",
    "echo $DB_PASSWORD | docker login --password-stdin",
    "sudo -S reads the password from stdin",
    "The token was revoked at 09:00.",
    "Password length: 16",
    "password_min_length: 12",
    "Key rotation: every 90 days",
    "The key is to keep the cache warm and the TTL short.",
    "The key is in the vault.",
    "Senha: ver o gerenciador",
    "Contraseña: la de siempre",
    "Kennwort: siehe oben",
    "パスワード：管理者に聞いてください",
    "密码：见 1Password",
    'See the API key in the team 1Password vault (item "Harbor prod").',
    "Our token format is <prefix>_<32 chars>.",
    "Set the header X-Api-Key to your key.",
    "The secret lives in AWS Secrets Manager under prod/harbor/db.",
    "The access token expires after 3600 s; the refresh token after 30 d.",
    "SECRET_KEY must be set in production.",
    "token = jwt.encode(payload, SECRET_KEY, algorithm='HS256')",
    "password = hashlib.sha256(raw.encode()).hexdigest()",
    "The checksum of the release is "
    "3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f7081920.",
    "Run ID 8f3a9c2b1d4e5f607182930a4b5c6d7e finished.",
    "trace_id=4bf92f3577b34da6a3ce929d0e0e4736 span_id=00f067aa0ba902b7",
    "The Git SHA of the release tag is a94a8fe5ccb19ba61c4c0873d391e987982fbbd3.",
    "The request id 8f3a9c2b-1d4e-4f60-8182-930a4b5c6d7e failed with 500.",
    "color: #3B82F6; background: #F3F4F6;",
    "rgba(59, 130, 246, 0.5) is our focus ring",
    "ISBN-10 0-306-40615-2, ISBN-13 978-0-306-40615-7",
    "arn:aws:iam::123456789012:role/harbor-deploy",
    "projects/harbor-prod/locations/europe-west1/keyRings/harbor/cryptoKeys/db",
    "The S3 key is uploads/2024/05/9f3a1c2b-report.pdf",
    "Variable names: DB_PASSWORD, API_TOKEN, SECRET_KEY_BASE.",
    'passwordField.setText("")',
    "if (token == null) return;",
    "const apiKey = config.get('apiKey');",
    "The PIN reset flow is in auth/pin.py.",
    "PIN-Code vergessen? Dann neu anfordern.",
    "The token ghp_ prefix marks GitHub PATs; never commit one.",
    "Generated secrets look like `openssl rand -hex 32` output.",
    "Hier ist das Passwort-Handbuch.",
    "Das Passwort wurde geändert.",
    "Passwort vergessen?",
    "Le mot de passe est oublié.",
    "mot de passe oublié ?",
    "La contraseña se restableció.",
    "¿Olvidaste tu contraseña?",
    "A senha foi alterada.",
    "Esqueceu a senha?",
    "La password è scaduta.",
    "Пароль изменён.",
    "Забыли пароль?",
    "密码已修改。",
    "忘记密码？",
    "パスワードを変更しました。",
    "비밀번호를 잊으셨나요?",
    "Şifremi unuttum.",
    "Nie pamiętam hasła.",
    "Wachtwoord vergeten?",
    "Quên mật khẩu?",
    "पासवर्ड भूल गए?",
    "The new password must differ from the old one.",
    "password for the VPN is in 1Password",
    "and the password? Ask Ana.",
    "sudo password prompt appears twice",
    "passwd: all authentication tokens updated successfully.",
    "Changing password for user ops.",
    "Retype new password:",
    "Enter passphrase for key '/home/dev/.ssh/id_ed25519':",
    "password: ${DB_PASSWORD}",
    "password: {{ .Values.db.password }}",
    "password: !vault |",
    "password: ~",
    "password: ''",
    'password: ""',
    "password: <your password>",
    "password: your-password-here",
    "password: changeme  # replace me",
]
_MARKS = ("mVx2Lp", "4711", "schwertfisch", "Tr0ub4dor", "ghx7Kq2", "8f3a9c2b", "0f3a9c2b")


@pytest.mark.parametrize("text", TUNING_SECRETS)
def test_tuning_secrets_are_redacted(text: str) -> None:
    out = redact(text)
    assert REDACTED in out and not any(mark in out for mark in _MARKS), out


@pytest.mark.parametrize("text", TUNING_ORDINARY)
def test_tuning_look_alikes_are_left_alone(text: str) -> None:
    assert redact(text) == text


# --------------------------------------------------------------------------- end to end

SECRETS = {
    "url": "p@ss/w0rd:Hx81",
    "redis": "qT7vLm2PzX9w",
    "aws": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzK3mQp9vLa",
    "whsec": "whsec_9aKd83JfLq0Zm2Xv7Bn4Ct6Yw1Ue5Rp",
    "hf": "hf_QmZkLpXv9Rt3Wn7Yb2Cd5Fg8Hj1Ks4Ma6Ne",
    "mysql": "Rt5Yu8Io1P",
    "phrase": "swordfish",
    "session": "npm_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "folder": "glpat-Xy7Kp2Lm9Qr4Tv6Wz1Ab",
}


def tool_uses(*, read: str, grep: str, url: str, edit: str) -> list[dict]:
    """An assistant's tool calls, one of each kind whose arguments a transcript keeps."""
    calls = [("Read", "file_path", read), ("Grep", "pattern", grep)]
    calls += [("WebFetch", "url", url), ("Edit", "file_path", edit)]
    return [
        {"type": "tool_use", "id": f"t{n}", "name": name, "input": {key: value}}
        for n, (name, key, value) in enumerate(calls, 1)
    ]


def _session(path: Path) -> Path:
    """A Claude Code transcript with a secret on every surface that is read."""
    s = SECRETS
    base = {"isSidechain": False, "cwd": f"/home/dev/{s['folder']}", "sessionId": s["session"]}
    user1 = (
        f"We decided to move the staging DB to postgres://harbor:{s['url']}@db.internal:5432/x "
        f"and the cache to redis://:{s['redis']}@cache:6379/0 because the old hosts go away."
    )
    user2 = f"{s['hf']} is the token we decided to rotate; the password is {s['phrase']}."
    tools = tool_uses(
        read=f"/tmp/{s['whsec']}",
        grep=f"key {s['aws']} ok",
        url=f"https://x.dev/?q=mysql -u root -p{s['mysql']} -h db",
        edit=f"app/{s['hf']}.py",
    )
    lines = [
        {"type": "summary", "summary": f"Rotated {s['whsec']}", "leafUuid": "u0"},
        {**base, "type": "user", "message": {"role": "user", "content": user1}},
        {
            **base,
            "type": "assistant",
            "message": {
                "role": "assistant",
                "content": [{"type": "text", "text": f"It turns out {s['aws']} was live."}, *tools],
            },
        },
        {**base, "type": "user", "message": {"role": "user", "content": user2}},
        {
            **base,
            "type": "assistant",
            "message": {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": f"Done: rotated {s['whsec']}.\nNext: {user2}"}
                ],
            },
        },
    ]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), "utf-8")
    return path


def _leaks(text: str) -> list[str]:
    """The secrets in ``text``, as they are or as a file name's slug would have them."""

    def fold(x: str) -> str:
        return "".join(c for c in x.lower() if c.isalnum())

    return [n for n, s in SECRETS.items() if s in text or fold(s) in fold(text)]


def _vault_text(vault: Path) -> str:
    """Every note, every file name and every cache file: what a transcript could reach."""
    parts = []
    for p in vault.rglob("*"):
        parts.append(p.relative_to(vault).as_posix())
        if p.is_file() and p.suffix in (".md", ".json"):
            parts.append(p.read_text("utf-8", errors="replace"))
    return "\n".join(parts)


def test_read_entries_redacts_every_string_it_hands_on(tmp_path: Path) -> None:
    entries = list(read_entries(_session(tmp_path / "s.jsonl")))
    strings = [
        str(v)
        for e in entries
        for v in (e.text, e.session, e.cwd, *(a for t in e.tools for a in t.input.values()))
    ]
    assert _leaks("\n".join(strings)) == []
    assert sum(REDACTED in x for x in strings) >= 8


def test_no_secret_reaches_notes_or_file_names_offline(
    vault: Path, cli: Cli, tmp_path: Path
) -> None:
    transcript = _session(tmp_path / "s.jsonl")
    out = cli("extract", str(transcript), "--json").stdout
    assert json.loads(out)["created"] >= 2
    handoff = cli("handoff", str(transcript)).stdout  # named after the request (hf_ first)
    assert _leaks(out + handoff) == []
    assert _leaks(_vault_text(vault)) == []
    path = handoff.splitlines()[-1]
    assert path.startswith("handoffs/") and "redacted" in path  # the slug, made of [REDACTED]


def test_no_secret_reaches_the_model_notes_or_file_names(
    vault: Path,
    cli: Cli,
    llm_env,
    tmp_path: Path,  # noqa: ANN001
) -> None:
    def echo(body: dict) -> str:
        # A model that copies its transcript back: as memories and titles (file names),
        # and as every handoff section.
        prompt = body["messages"][0]["content"]
        lines = [x for x in prompt.split("<transcript>")[-1].splitlines() if x.strip()][:8]
        if "memories" in json.dumps(body.get("response_format")):
            items = [{"type": "decision", "title": x[:80], "text": x} for x in lines]
            return json.dumps({"memories": items})
        keys = ("investigated", "learned", "done", "next_steps")
        return json.dumps({"request": lines[0], **{k: lines for k in keys}})

    llm_env.chat_replies.extend([echo, echo, echo])
    transcript = _session(tmp_path / "s.jsonl")
    printed = cli("extract", str(transcript), "--json").stdout
    printed += cli("handoff", str(transcript), "--json").stdout
    sent = [json.dumps(r.body) for r in llm_env.requests if r.path.endswith("/chat/completions")]
    assert len(sent) == 2
    assert _leaks("\n".join(sent)) == []
    assert all(REDACTED in x for x in sent)
    assert _leaks(printed + _vault_text(vault)) == []


def test_a_project_name_is_redacted_before_it_names_a_file(
    vault: Path, cli: Cli, tmp_path: Path
) -> None:
    transcript = _session(tmp_path / "s.jsonl")
    project = f"harbor {SECRETS['whsec']}"
    path = cli("handoff", str(transcript), "--project", project).stdout.splitlines()[-1]
    assert _leaks(path) == [] and path.endswith(" harbor redacted.md")
    assert _leaks(_vault_text(vault)) == []


def test_markdown_transcripts_are_redacted_too(vault: Path, cli: Cli, tmp_path: Path) -> None:
    transcript = tmp_path / "s.md"
    transcript.write_text(
        f"**User:** We decided the staging cache is redis://:{SECRETS['redis']}@cache:6379/0 "
        f"and the password is {SECRETS['phrase']}.\n\n**Assistant:** Done: "
        f"STRIPE_WEBHOOK_SECRET={SECRETS['whsec']} is set.\n",
        "utf-8",
    )
    cli("extract", str(transcript))
    cli("handoff", str(transcript))
    assert _leaks(_vault_text(vault)) == []
