# ruff: noqa: E501 — a case reads best on one line, as it is in the corpus file
"""Writes redaction_corpus.jsonl beside this file: the corpus of bench_redaction.py.

    python benchmarks/data/make_redaction_corpus.py

Each case is written here by hand (the context a secret turns up in: an .env file, a
shell command, a log line, JSON, YAML, prose); only the secret characters themselves are
drawn from a seeded generator, so the file comes out the same every time. Secret cases
list the parts that must not survive redaction; ordinary cases must come through as
they are. Cases are only ever appended (a new block at the end of the file, after
everything drawn before), so earlier ones keep their values.

Optional labels: ``lang`` (the language of a non-English case, ISO 639-1), ``shape``
(the token family of a ``tokens`` case), ``where`` (``tool_input``: the text is a tool
call's argument, such as a Grep pattern or a Bash command; ``tool_output``: what a tool
printed; absent: something a person or the agent wrote).
"""

import base64
import json
import random
import string
from pathlib import Path

R = random.Random(17)
A = string.ascii_letters + string.digits


def r(n, alpha=A):
    return "".join(R.choice(alpha) for _ in range(n))


def hexs(n):
    return r(n, "0123456789abcdef")


B64 = A + "+/"


def b64(n):
    return r(n, B64)


cases = []


def secret(family, text, *secrets, **about):
    """A secret case; ``about``: optional labels (``lang``, ``shape``, ``where``)."""
    for s in secrets:
        assert s in text, (family, s)
    case = {"kind": "secret", "family": family, "text": text, "secrets": list(secrets)}
    cases.append({**case, **about})


def ordinary(family, text, **about):
    cases.append({"kind": "ordinary", "family": family, "text": text, **about})


# ---- credentials in URLs
pw = "p@ss/w0rd:" + r(6)
secret("url", f"DATABASE_URL=postgres://harbor:{pw}@db.staging.internal:5432/harbor", pw)
pw = r(10) + "/" + r(4)
secret("url", f"Can you check why `psql postgresql://app:{pw}@10.0.3.7/app` hangs?", pw)
pw = r(14)
secret("url", f"redis://:{pw}@cache.internal:6379/0 is the new cache URL", pw)
pw = r(8) + "@" + r(5)
secret("url", f'{{"broker_url": "amqp://celery:{pw}@rabbit:5672//"}}', pw)
pw = r(16)
secret(
    "url", f'mongo "mongodb+srv://admin:{pw}@cluster0.ab1cd.mongodb.net/prod?retryWrites=true"', pw
)
tok = "ghp_" + r(36)
secret(
    "url", f"git remote set-url origin https://x-access-token:{tok}@github.com/harbor/api.git", tok
)
pw = r(12)
secret(
    "url",
    f"2026-11-30 14:02:11 ERROR sqlalchemy: could not connect to mysql+pymysql://reporting:{pw}@mysql-ro:3306/reports",
    pw,
)
pw = "S3cret!" + r(5)
secret("url", f"Proxy is set: export https_proxy=http://jdoe:{pw}@proxy.corp.example:3128", pw)
# ---- AWS
kid = "AKIA" + r(16, string.ascii_uppercase + string.digits)
secret("aws", f"aws configure set aws_access_key_id {kid}", kid)
sec = b64(40)
secret(
    "aws",
    f"[default]\naws_access_key_id = AKIA{r(16, string.ascii_uppercase + string.digits)}\naws_secret_access_key = {sec}\nregion = eu-west-1",
    sec,
)
sec = b64(40)
secret("aws", f"Here are the keys from the console: {sec} — the id is in the other message.", sec)
sec = b64(40)
secret("aws", f'export AWS_SECRET_ACCESS_KEY="{sec}"', sec)
sec = b64(40)
secret("aws", f'boto3.client("s3", aws_secret_access_key="{sec}")', sec)
stok = b64(120)
secret("aws", f"AWS_SESSION_TOKEN={stok}", stok)
# ---- Azure
key = base64.b64encode(R.randbytes(64)).decode()
secret(
    "azure",
    f"DefaultEndpointsProtocol=https;AccountName=harborlogs;AccountKey={key};EndpointSuffix=core.windows.net",
    key,
)
key = base64.b64encode(R.randbytes(32)).decode()
secret(
    "azure",
    f"Endpoint=sb://harbor-bus.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey={key}",
    key,
)
sig = (
    base64.b64encode(R.randbytes(32))
    .decode()
    .replace("+", "%2B")
    .replace("/", "%2F")
    .replace("=", "%3D")
)
secret(
    "azure",
    f"curl 'https://harborlogs.blob.core.windows.net/exports/a.csv?sv=2022-11-02&ss=b&srt=o&sp=r&se=2026-12-01T00:00:00Z&sig={sig}'",
    sig,
)
cs = r(3) + "8Q~" + r(34, A + "_~.-")
secret("azure", f"AZURE_CLIENT_SECRET={cs}", cs)
# ---- Google
k = "AIza" + r(35, A + "_-")
secret("google", f"The Maps key {k} is restricted to our domain.", k)
k = "ya29." + r(80, A + "_-")
secret("google", f"Authorization header was `Bearer {k}` in the failing request", k)
k = "GOCSPX-" + r(28, A + "_-")
secret("google", f'"client_secret": "{k}",', k)
# ---- private keys
body = "\n".join(b64(64) for _ in range(6))
secret(
    "keys",
    f"cat ~/.ssh/id_rsa\n-----BEGIN RSA PRIVATE KEY-----\n{body}\n-----END RSA PRIVATE KEY-----\n",
    body.splitlines()[0],
    body.splitlines()[-1],
)
body = "\n".join(b64(70) for _ in range(5))
secret(
    "keys",
    f"-----BEGIN OPENSSH PRIVATE KEY-----\n{body}\n-----END OPENSSH PRIVATE KEY-----",
    body.splitlines()[2],
)
body = "\n".join(b64(64) for _ in range(8))
secret(
    "keys",
    f"gpg --export-secret-keys --armor deploy@harbor.dev\n-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n{body}\n="
    + r(4)
    + "\n-----END PGP PRIVATE KEY BLOCK-----",
    body.splitlines()[0],
    body.splitlines()[5],
)
body = "\\n".join(b64(64) for _ in range(4))
secret(
    "keys",
    f'{{"type": "service_account", "project_id": "harbor-prod", "private_key_id": "{hexs(40)}", "private_key": "-----BEGIN PRIVATE KEY-----\\n{body}\\n-----END PRIVATE KEY-----\\n"}}',
    body.split("\\n")[1],
)
body = "\n".join(b64(64) for _ in range(3))
secret("keys", f"-----BEGIN EC PRIVATE KEY-----\n{body}", body.splitlines()[1])
body = "\n".join(b64(64) for _ in range(3))
secret(
    "keys",
    f"-----BEGIN ENCRYPTED PRIVATE KEY-----\n{body}\n-----END ENCRYPTED PRIVATE KEY-----",
    body.splitlines()[0],
)
pub, prv = b64(60), b64(60)
secret(
    "keys",
    f"PuTTY-User-Key-File-2: ssh-rsa\nEncryption: none\nComment: deploy\nPublic-Lines: 1\n{pub}\nPrivate-Lines: 1\n{prv}\nPrivate-MAC: {hexs(40)}",
    prv,
)
# ---- token shapes
t = "sk-proj-" + r(48, A + "_-")
secret("tokens", f"my key is {t} if you need it", t)
t = "sk-ant-api03-" + r(93, A + "_-") + "AA"
secret("tokens", f"ANTHROPIC_API_KEY={t}", t)
t = "ghp_" + r(36)
secret("tokens", f"gh auth login --with-token <<< {t}", t)
t = "github_pat_11" + r(20, string.ascii_uppercase + string.digits) + "_" + r(59)
secret("tokens", f"Use this PAT: {t}", t)
t = "glpat-" + r(20, A + "_-")
secret("tokens", f"GITLAB_TOKEN: {t}", t)
t = "glpat-" + r(20, A)
secret(
    "tokens", f"curl --header 'PRIVATE-TOKEN: {t}' https://gitlab.example.com/api/v4/projects", t
)
t = "npm_" + r(36)
secret("tokens", f"//registry.npmjs.org/:_authToken={t}", t)
t = "npm_" + r(36)
secret("tokens", f"The publish token {t} expires in 30 days.", t)
t = "pypi-AgEIcHlwaS5vcmc" + r(120, A + "_-")
secret("tokens", f"twine upload -u __token__ -p {t} dist/*", t)
t = "sk_live_" + r(99)
secret("tokens", f"stripe.api_key = '{t}'", t)
t = "rk_live_" + r(99)
secret("tokens", f"The restricted key {t} only reads charges.", t)
t = "whsec_" + r(32)
secret("tokens", f"STRIPE_WEBHOOK_SECRET={t}", t)
t = "whsec_" + r(32)
secret(
    "tokens", f"stripe listen printed: Ready! Your webhook signing secret is {t} (^C to quit)", t
)
t = "hf_" + r(34)
secret("tokens", f"huggingface-cli login --token {t}", t)
t = "hf_" + r(34)
secret("tokens", f"I set {t} as HF_TOKEN in the CI secrets", t)
t = "xoxb-" + r(12, string.digits) + "-" + r(13, string.digits) + "-" + r(24)
secret("tokens", f"SLACK_BOT_TOKEN={t}", t)
t = f"https://hooks.slack.com/services/T{r(8, string.ascii_uppercase + string.digits)}/B{r(10, string.ascii_uppercase + string.digits)}/{r(24)}"
secret("tokens", f"Alerts go to {t} (the #deploys channel).", t.rsplit("/", 1)[1])
t = f"https://discord.com/api/webhooks/{r(18, string.digits)}/{r(68, A + '_-')}"
secret("tokens", f"DISCORD_WEBHOOK={t}", t.rsplit("/", 1)[1])
t = "SG." + r(22, A + "_-") + "." + r(43, A + "_-")
secret("tokens", f"sendgrid api key: {t}", t)
t = "SK" + hexs(32)
secret("tokens", f"twilio api:core:keys:create returned sid {t}", t)
t = r(10, string.digits) + ":" + r(35, A + "_-")
secret("tokens", f"TELEGRAM_BOT_TOKEN={t}", t)
t = "key-" + hexs(32)
secret("tokens", f"mailgun: {t}", t)
t = "dapi" + hexs(32)
secret("tokens", f"databricks configure --token, then paste {t}", t)
t = "dop_v1_" + hexs(64)
secret("tokens", f"doctl auth init -t {t}", t)
t = "hvs." + r(24, A + "_-")
secret("tokens", f"export VAULT_TOKEN={t}", t)
t = "hvs." + r(90, A + "_-")
secret("tokens", f"vault login printed token {t} with policies [default]", t)
t = "shpat_" + hexs(32)
secret("tokens", f"The Shopify admin token is {t}", t)
t = "lin_api_" + r(40)
secret("tokens", f"LINEAR_API_KEY={t}", t)
t = "gsk_" + r(52)
secret("tokens", f'client = Groq(api_key="{t}")', t)
t = "r8_" + r(37)
secret("tokens", f"REPLICATE_API_TOKEN {t}", t)
t = "AGE-SECRET-KEY-1" + r(58, string.ascii_uppercase + string.digits)
secret(
    "tokens",
    f"# created: 2026-11-30\n# public key: age1{r(58, string.ascii_lowercase + string.digits)}\n{t}",
    t,
)
h = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').decode().rstrip("=")
p = (
    base64.urlsafe_b64encode(
        json.dumps({"sub": "u_123", "role": "admin", "exp": 1795000000}).encode()
    )
    .decode()
    .rstrip("=")
)
t = f"{h}.{p}.{r(43, A + '_-')}"
secret("tokens", f"The API answered 401 for token {t}", t.split(".")[1], t.split(".")[2])
t = "sq0csp-" + r(43, A + "_-")
secret("tokens", f"SQUARE_APP_SECRET={t}", t)
t = hexs(32) + "-us21"
secret("tokens", f"mailchimp key {t}", t)
# ---- key = value
pw = r(18, A + "!#%^*")
secret("keyword", f"# .env\nDB_HOST=db\nDB_USER=harbor\nDB_PASSWORD={pw}\nDEBUG=false", pw)
secret("keyword", "POSTGRES_PASSWORD=correct horse battery staple", "correct horse battery staple")
pw = r(20)
secret(
    "keyword",
    f"services:\n  db:\n    image: postgres:16\n    environment:\n      POSTGRES_PASSWORD: {pw}\n",
    pw,
)
pw = r(16)
secret(
    "keyword", f'{{"username": "svc-report", "password": "{pw}", "host": "reports.internal"}}', pw
)
pw = r(16)
secret("keyword", f"settings = {{'db_pass': '{pw}', 'db_user': 'app'}}", pw)
sk = "django-insecure-" + r(50, string.ascii_lowercase + string.digits + "!@#$%^&*(-_=+)")
secret("keyword", f"SECRET_KEY = '{sk}'", sk)
b = base64.b64encode(r(16).encode()).decode()
secret(
    "keyword",
    f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: harbor-db\ntype: Opaque\ndata:\n  username: aGFyYm9y\n  password: {b}",
    b,
)
pw = r(14)
secret("keyword", f"[client]\nuser = backup\npassword = {pw}\n", pw)
pw = r(12)
secret("keyword", f"java -Ddb.password={pw} -jar harbor.jar", pw)
pw = r(12)
secret("keyword", f"PGPASSWORD={pw} psql -h db -U harbor -c 'select 1'", pw)
k = r(32, string.ascii_lowercase + string.digits)
secret("keyword", f'headers = {{"X-API-Key": "{k}"}}', k)
u = f"{hexs(8)}-{hexs(4)}-{hexs(4)}-{hexs(4)}-{hexs(12)}"
secret("keyword", f"heroku config:set HEROKU_API_KEY={u}", u)
pw = r(12)
secret("keyword", f"machine api.harbor.dev login deploy password {pw}", pw)
pw = r(12)
secret("keyword", f'smtp_pass: "{pw}"  # mailgun', pw)
tok = r(40)
secret(
    "keyword",
    f"2026-11-30T14:03:00Z DEBUG request headers={{'x-auth-token': '{tok}', 'accept': 'application/json'}}",
    tok,
)
# ---- CLI password flags
pw = r(12)
secret("cli", f"mysql -u root -p{pw} -h 127.0.0.1 harbor", pw)
pw = r(10)
secret("cli", f"mysqldump -uadmin -p'{pw}' --single-transaction harbor > dump.sql", pw)
pw = r(12)
secret("cli", f"curl -u admin:{pw} https://jenkins.internal/api/json", pw)
pw = r(12)
secret(
    "cli",
    f"curl --user 'ci-bot:{pw}' -X POST https://nexus.internal/service/rest/v1/components",
    pw,
)
pw = r(14)
secret("cli", f"docker login registry.harbor.dev -u deploy -p {pw}", pw)
pw = r(16)
secret("cli", f"redis-cli -h cache -a {pw} INFO memory", pw)
pw = r(12)
secret("cli", f"sshpass -p '{pw}' ssh ops@bastion", pw)
pw = r(12)
secret("cli", f"ldapsearch -x -D cn=admin,dc=harbor,dc=dev -w {pw} -b dc=harbor,dc=dev", pw)
pw = r(12)
secret(
    "cli",
    f"openssl pkcs12 -export -in cert.pem -inkey key.pem -out bundle.p12 -passout pass:{pw}",
    pw,
)
pw = r(12)
secret(
    "cli", f"keytool -importkeystore -srckeystore a.jks -srcstorepass {pw} -destkeystore b.p12", pw
)
pw = r(12)
secret("cli", f"wget --user=deploy --password={pw} https://artifacts.internal/app.tar.gz", pw)
pw = r(12)
secret("cli", f"mongosh --host db -u admin -p {pw} --authenticationDatabase admin", pw)
pw = r(12)
secret("cli", f"smbclient //files/share -U ops%{pw}", pw)
pw = r(12)
secret("cli", f"http -a admin:{pw} POST https://api.internal/v1/jobs", pw)
pw = r(12)
secret("cli", f"./manage.py createsuperuser --username admin --password {pw}", pw)
pw = r(12)
secret("cli", f"zip -P {pw} -r backup.zip secrets/", pw)
# ---- phrases
pw = r(10)
secret("phrase", f"The password is {pw}, don't share it.", pw)
pw = r(10)
secret("phrase", f"the staging db password is {pw}", pw)
pw = r(10)
secret("phrase", f"I changed the admin password to {pw} this morning.", pw)
secret("phrase", "ok the password is hunter2", "hunter2")
secret("phrase", 'The passphrase is "purple monkey dishwasher".', "purple monkey dishwasher")
pw = r(10)
secret("phrase", f"pw is {pw}", pw)
pw = r(12)
secret("phrase", f"My Grafana login: admin / password: {pw}", pw)
secret("phrase", "The password for the wifi is swordfish.", "swordfish")
tok = r(24)
secret("phrase", f"the api token for the metrics service was {tok} until today", tok)
pw = r(10)
secret("phrase", f"Password: {pw}", pw)
# ---- Authorization
t = r(40)
secret("auth-header", f'curl -H "Authorization: Bearer {t}" https://api.harbor.dev/v1/me', t)
c = base64.b64encode(f"deploy:{r(12)}".encode()).decode()
secret("auth-header", f"Authorization: Basic {c}", c)
t = hexs(40)
secret("auth-header", f"requests.get(url, headers={{'Authorization': 'Token {t}'}})", t)

# ---- code: credentials as arguments, cookies, bare keys
pw = r(12)
secret("code", f'r = requests.get(url, auth=("deploy", "{pw}"), timeout=10)', pw)
pw = r(12)
secret("code", f'session.auth = HTTPBasicAuth("ci-bot", "{pw}")', pw)
pw = r(10) + "7"
secret("code", f'DB_PASSWORD = os.environ.get("DB_PASSWORD", "{pw}")', pw)
c1, c2 = r(32), r(32)
secret(
    "code", f"curl -H 'Cookie: sessionid={c1}; csrftoken={c2}' https://admin.harbor.dev/", c1, c2
)
c = r(40)
secret("code", f"< Set-Cookie: __Host-session={c}; Path=/; Secure; HttpOnly; SameSite=Lax", c)
k = hexs(32)
secret("code", f"The weather API key: {k}", k)
k = r(28)
secret("code", f"key: {k}", k)

# ================ ordinary text that must stay as it is
for t in [
    "We decided to use token-based auth because it is simpler.",
    "The password is in 1Password.",
    "The token is expired, so the client refreshes it before retrying.",
    "The secret is to batch the writes and flush once per request.",
    "Rotate the API key every 90 days; the password policy asks for 16 characters.",
    "max_tokens=4096 keeps the replies short, and token_count: 512 is logged per request.",
    "def login(username: str, password: str) -> Token:\n    token = issue_token(username)\n    return token",
    "password = os.environ['DB_PASSWORD']\napi_key = settings.STRIPE_API_KEY",
    "client = Client(api_key=api_key, token=self.token, timeout=10)",
    "export DB_PASSWORD=$DB_PASSWORD_FROM_VAULT",
    "      - name: deploy\n        env:\n          DB_PASSWORD: ${{ secrets.DB_PASSWORD }}",
    "env:\n  - name: DB_PASSWORD\n    valueFrom:\n      secretKeyRef:\n        name: harbor-db\n        key: password",
    "The fix is in commit 9fceb02d0ae598e95dc970b74767f19372d61af8 (short sha 9fceb02).",
    "The request id was 4f1c2a7e-9b3d-4e8a-a1f0-6c2d9e7b5a31 and the trace id 0af7651916cd43dd8448eb211c80319c.",
    "The image digest is sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855.",
    '"integrity": "sha512-v2kDEe57lecTulaDIuNTPy3Ry4gLGJ6Z1O3vE1krgXZNrsQ+Lxzk+z3wZhrBTArRvMFeV+hR0ryF4oLJ0Yq6EAQ=="',
    "--- PASS: TestLogin (0.01s)\n--- FAIL: TestRefreshToken (0.02s)\nPASS tests/test_auth.py",
    "author: Ana Souza\nreviewers: [Kenji Watanabe, Li Wei]",
    "ssh -p 2222 deploy@bastion.internal && docker run -p 8080:80 nginx && mkdir -p /var/lib/harbor",
    "mysql -u root -p harbor  # it prompts for the password",
    "psql --password -h db.internal harbor",
    "npm view https://registry.npmjs.org/@types/node and open http://localhost:8080/admin",
    "git clone git@github.com:harbor/api.git, or ssh://git@github.com:22/harbor/api.git",
    "DATABASE_URL=postgres://db.internal:5432/harbor and REDIS_URL=redis://cache:6379/0",
    "password_hash = bcrypt.hashpw(password.encode(), bcrypt.gensalt())",
    "tokenizer: bert-base-uncased\nsecretName: harbor-tls\nsession_secret_ref: vault://kv/harbor/session",
    "The password reset flow sends a link valid for 30 minutes.",
    "Use AWS Secrets Manager for the STRIPE_WEBHOOK_SECRET, read at start-up.",
    "Set `Authorization: Bearer $TOKEN` in the request, or pass the --token flag.",
    "curl -H 'Authorization: Bearer <token>' https://api.harbor.dev/v1/me",
    "token: str | None = None\nsecret: SecretStr\npassword: Optional[str] = None",
    "const { token } = useAuth();\nexport function getToken(): string { return token; }",
    "The session token lives in a cookie named sessionid, HttpOnly and SameSite=Lax.",
    "AKIA prefixes mark access key ids; a secret access key is never shown again.",
    "Generate a key with `openssl rand -base64 32` and store it in the vault, never in git.",
    "Token bucket / GCRA: smooth, one key per client, supports bursts cleanly.",
    "hf_hub_download(repo_id='sentence-transformers/all-MiniLM-L6-v2', filename='model.onnx')",
    "pip install detect-secrets && detect-secrets scan > .secrets.baseline",
    "The key is to keep the cache warm: the first request pays for the imports.",
    "The bearer tokens are rotated hourly by the auth service.",
    "Basic configuration lives in settings.py; basic authentication is disabled.",
    "A password manager is required; the token bucket limiter is per merchant.",
    "I ran pwd and it printed /home/dev/harbor, then ls -la showed .env.example.",
    "OAuth: enabled\nAuth: required for /admin",
    "The k6 run used 300 VUs for 15 min; p95 was 210 ms and no request failed.",
    "Sessions now live in Redis (db 2) with a 14-day TTL, and the adapter is in app/redis_sessions.py.",
    "ThisIsAVeryLongCamelCaseIdentifierName40 and AbstractSingletonProxyFactoryBean2Helper are class names.",
    "PASSWORD_MIN_LENGTH = 16\nTOKEN_TTL_SECONDS = 3600\nSECRET_ROTATION_DAYS: 90",
    "The Grafana dashboard shows token usage per model; the secret sauce is the cache.",
    "Use `--password-stdin` with docker login so the password never lands in shell history.",
    "cache key: 9e107d9d372bb6826bd81d3542a419d6 (md5 of the query), sort key: created_at",
    'db = os.environ.get("DATABASE_URL", "postgres://localhost/harbor")',
    "The cookie: it expires after 14 days; Set-Cookie: theme=dark; Path=/",
    "session.auth = HTTPBasicAuth(user, password)",
]:
    ordinary("chatter", t)

# ================ issue 28: other languages, more token families, tool calls, more look-alikes
# (appended: everything above keeps its values)
SYM = A + "!#%^*+-"
DIG = string.digits
UPD = string.ascii_uppercase + string.digits
LOD = string.ascii_lowercase + string.digits


def pw(n=12):
    # a generated password: letters, digits and a symbol or two, never only letters
    return r(n - 2, SYM) + r(1, DIG) + r(1, "!#%*")


# ---- credential phrases in other languages: (language, the text with {} where the
# secret goes, the secret or how to draw it), drawn in this order
I18N = [
    ("de", "Das Passwort für den Staging-Server ist {}", lambda: pw()),
    ("de", "WLAN-Passwort lautet: {}", lambda: pw(14)),
    ("de", "Das Kennwort ist „Sonnenblume42“, bitte nicht weitergeben.", "Sonnenblume42"),
    ("de", "Der API-Schlüssel für Mapbox: {}", lambda: r(32)),
    ("fr", "Le mot de passe de la base est {}, ne le partage pas.", lambda: pw()),
    ("fr", "Mon code PIN : {}", lambda: r(6, DIG)),
    ("fr", "La phrase secrète est « cheval correct pile agrafe ».", "cheval correct pile agrafe"),
    ("fr", "Voici le jeton d'accès : {}", lambda: r(40, A + "_-")),
    ("es", "La contraseña del servidor es {}", lambda: pw()),
    ("es", "Te paso la clave: {}", lambda: pw(10)),
    ("es", "El token de la API es {} y caduca mañana.", lambda: r(36)),
    ("es", "La contraseña es «girasol» (en minúsculas).", "girasol"),
    ("pt", "A senha do banco é {}", lambda: pw()),
    ("pt", "A minha palavra-passe é {}", lambda: pw()),
    ("it", "La password del router è {}", lambda: pw()),
    ("nl", "Het wachtwoord is {}", lambda: pw()),
    ("pl", "Hasło do serwera to {}", lambda: pw()),
    ("tr", "Sunucu şifresi: {}", lambda: pw()),
    ("id", "Kata sandi wifi-nya adalah {}", lambda: pw()),
    ("vi", "Mật khẩu của tài khoản admin là {}", lambda: pw()),
    ("ru", "Пароль от базы: {}", lambda: pw()),
    ("ru", "Мой пароль — {}", lambda: pw()),
    ("ru", "Токен доступа: {}", lambda: r(32)),
    ("uk", "Пароль до сервера — {}", lambda: pw()),
    ("zh", "数据库密码是{}", lambda: pw()),
    ("zh", "API密钥：{}", lambda: r(32)),
    ("zh", "服務器的密碼為 {}", lambda: pw()),
    ("ja", "パスワードは{}です", lambda: pw()),
    ("ja", "APIキー：{}", lambda: r(32)),
    ("ja", "暗証番号は{}です", lambda: r(4, DIG)),
    ("ko", "비밀번호는 {}입니다", lambda: pw()),
    ("ko", "API 키: {}", lambda: r(32)),
    ("hi", "मेरा पासवर्ड {} है", lambda: pw()),
    ("ar", "كلمة المرور هي {}", lambda: pw()),
    ("ar", "مفتاح API الخاص بنا: {}", lambda: r(32)),
    ("bn", "পাসওয়ার্ড হল {}", lambda: pw()),
    ("ur", "پاس ورڈ {} ہے", lambda: pw()),
    ("fa", "رمز عبور: {}", lambda: pw()),
]
for lang, template, value in I18N:
    v = value() if callable(value) else value
    secret("i18n", template.replace("{}", v), v, lang=lang)

# ---- token families the rules of issue 17 lacked (prefixes from gitleaks' rules and vendors' docs)
t = "dckr_pat_" + r(27, A + "_-")
secret("tokens", f"The Docker Hub token {t} is for CI pulls only.", t, shape="docker-pat")
payload = (
    base64.b64encode(
        json.dumps(
            {
                "iat": 1796000000.1,
                "url": "https://sentry.io",
                "region_url": "https://us.sentry.io",
                "org": "harbor",
            }
        ).encode()
    )
    .decode()
    .rstrip("=")
)
t = f"sntrys_{payload}_{r(43, A + '+/')}"
secret("tokens", f"sentry-cli uploads the source maps with {t}", t, shape="sentry-org")
t = "sntryu_" + hexs(64)
secret("tokens", f"Sentry answered 401 for {t}, rotate it.", t, shape="sentry-user")
t = "NRAK-" + r(27, UPD)
secret("tokens", f"The New Relic user key {t} goes in the agent config.", t, shape="newrelic-user")
t = "NRII-" + r(32, A + "-")
secret("tokens", f"newrelic-infra.yml: license_key {t}", t, shape="newrelic-insert")
t = "s." + r(24)
secret("tokens", f"vault login {t}", t, shape="vault-legacy")
t = "hvb." + r(140, A + "_-")
secret("tokens", f"The batch token {t} lasts an hour.", t, shape="vault-batch")
t = r(40, A + "_-")
secret("tokens", f"Cloudflare: {t} (zone:edit on harbor.dev)", t, shape="cloudflare")
t = hexs(37)
secret(
    "tokens",
    f'curl -H "X-Auth-Key: {t}" -H "X-Auth-Email: ops@harbor.dev" https://api.cloudflare.com/client/v4/zones',
    t,
    shape="cloudflare-global",
)
t = f"v1.0-{hexs(24)}-{hexs(146)}"
secret("tokens", f"origin CA key {t}", t[5:40], t[-40:], shape="cloudflare-origin-ca")
t = "ops_eyJ" + r(260, A + "+/")
secret("tokens", f"op read works once {t} is exported", t, shape="1password-service")
t = f"A3-{r(6, UPD)}-{r(11, UPD)}-{r(5, UPD)}-{r(5, UPD)}-{r(5, UPD)}"
secret("tokens", f"Emergency kit, secret key {t}", t, shape="1password-secret-key")
t = "LTAI" + r(20, LOD)
secret("tokens", f"aliyun configure --access-key-id {t} --region cn-hangzhou", t, shape="alibaba")
t = f"dt0c01.{r(24, UPD)}.{r(64, UPD)}"
secret("tokens", f"Dynatrace said: invalid token {t}", t, shape="dynatrace")
t = "EZAK" + r(54, LOD)
secret("tokens", f"easypost.api_key = {t}", t, shape="easypost")
t = "fo1_" + r(43, A + "_-")
secret("tokens", f"flyctl deploy worked after I pasted {t}", t, shape="flyio")
t = "glrt-" + r(20, A + "_-")
secret(
    "tokens",
    f"gitlab-runner register --url https://gitlab.harbor.dev --token {t}",
    t,
    shape="gitlab-runner",
)
t = "glptt-" + hexs(40)
secret("tokens", f"the pipeline trigger {t} starts the nightly job", t, shape="gitlab-trigger")
t = "pscale_tkn_" + r(43, A + "_")
secret("tokens", f"pscale auth login uses {t}", t, shape="planetscale")
t = "pnu_" + r(36)
secret("tokens", f"prefect cloud login -k {t}", t, shape="prefect")
t = "pul-" + hexs(40)
secret("tokens", f"pulumi login with {t} failed: expired", t, shape="pulumi")
t = "rubygems_" + hexs(48)
secret("tokens", f"gem push needs {t} in ~/.gem/credentials", t, shape="rubygems")
t = f"xkeysib-{hexs(64)}-{r(16)}"
secret("tokens", f"Brevo: {t}", t, shape="brevo")
t = "ntn_" + r(11, DIG) + r(35)
secret("tokens", f"the Notion integration uses {t}", t, shape="notion")
t = "sbp_" + hexs(40)
secret("tokens", f"supabase login --token {t}", t, shape="supabase")
t = f"lsv2_pt_{hexs(32)}_{hexs(10)}"
secret("tokens", f"LangSmith tracing works with {t}", t, shape="langsmith")
t = "xai-" + r(80)
secret("tokens", f"The Grok client takes {t} as its key.", t, shape="xai")
t = "figd_" + r(40, A + "_-")
secret("tokens", f"Figma personal access token: {t}", t, shape="figma")
t = "HRKU-AA" + r(58, A + "_-")
secret("tokens", f"heroku authorizations:create printed {t}", t, shape="heroku-v2")
t = f"CCIPAT_{r(22)}_{hexs(40)}"
secret("tokens", f"CircleCI API calls use {t}", t, shape="circleci")
t = "bkua_" + hexs(40)
secret("tokens", f"buildkite-agent start --token {t}", t, shape="buildkite")
t = "ATBB" + r(32)
secret("tokens", f"Bitbucket app password {t} for the deploy user", t, shape="bitbucket")
t = "sha256~" + r(43, A + "_-")
secret(
    "tokens", f"oc login --token={t} --server=https://api.ocp.harbor.dev:6443", t, shape="openshift"
)
t = "API-" + r(26, UPD)
secret("tokens", f"Octopus deploy key {t}", t, shape="octopus")
t = "CLOJARS_" + r(60, LOD)
secret("tokens", f"lein deploy clojars with {t}", t, shape="clojars")
t = "AKCp" + r(69)
secret("tokens", f"jfrog rt ping --apikey {t}", t, shape="artifactory")
t = f"{r(14, LOD)}.atlasv1.{r(67, A + '_-')}"
secret("tokens", f'credentials "app.terraform.io" {{ token = "{t}" }}', t, shape="terraform-cloud")
t = "api_org_" + r(34, string.ascii_letters)
secret("tokens", f"the HF org token {t} can write models", t, shape="huggingface-org")
t = "ico-" + r(32)
secret("tokens", f"infracost configure set api_key {t}", t, shape="infracost")
t = "EAAC" + r(120)
secret("tokens", f"the Graph API answered for {t}", t, shape="facebook-page")
t = f"xoxe-1-{r(146, UPD)}"
secret("tokens", f"Slack config refresh {t}", t, shape="slack-config")

# ---- secrets in tool calls and tool output
t = r(32)
secret("tool", t, t, where="tool_input")
t = r(40, A + "+/")
secret("tool", f"(?:{t}|Bearer)", t, where="tool_input")
k = r(32)
secret(
    "tool",
    json.dumps({"command": f"curl -s -H 'X-Api-Key: {k}' https://api.harbor.dev/v1/health"}),
    k,
    where="tool_input",
)
k = r(28)
secret("tool", f"https://api.harbor.dev/v1/export?api_key={k}&format=csv", k, where="tool_input")
p = pw()
secret(
    "tool",
    json.dumps(
        {"command": f"kubectl create secret generic harbor-api --from-literal=password={p}"}
    ),
    p,
    where="tool_input",
)
p, t = pw(16), r(40)
secret(
    "tool",
    f"HARBOR_ENV=staging\nHARBOR_DB_PASS={p}\nHARBOR_API_TOKEN={t}\nHARBOR_LOG_LEVEL=info",
    p,
    t,
    where="tool_output",
)
p, p2 = pw(14), pw(14)
secret("tool", f"db.internal:5432:harbor:app:{p}\n*:*:*:replica:{p2}", p, p2, where="tool_output")
t = f"{hexs(8)}-{hexs(4)}-4{hexs(3)}-a{hexs(3)}-{hexs(12)}"
secret("tool", f"$ heroku auth:token\n{t}", t, where="tool_output")
t = "s." + r(24)
secret(
    "tool",
    f"Key                  Value\n---                  -----\ntoken                {t}\ntoken_duration       768h\ntoken_renewable      true",
    t,
    where="tool_output",
)
p = pw(20)
secret(
    "tool",
    json.dumps({"db_password": {"sensitive": True, "type": "string", "value": p}}, indent=2),
    p,
    where="tool_output",
)
k = hexs(128)
secret("tool", f"# rails credentials:show\nsecret_key_base: {k}\n", k, where="tool_output")
a = base64.b64encode(f"deploy:{pw(14)}".encode()).decode()
secret(
    "tool",
    json.dumps({"auths": {"registry.harbor.dev": {"auth": a}}}, indent=2),
    a,
    where="tool_output",
)
k = r(40, A + "+/")
secret(
    "tool",
    f'{{"Credentials": {{"AccessKeyId": "ASIA{r(16, UPD)}", "SecretAccessKey": "{k}", "Expiration": "2026-12-01T00:00:00Z"}}}}',
    k,
    where="tool_output",
)

# ---- CLI forms: quotes, chains, other commands
p = r(6, A) + " &" + r(5, A) + "1"
secret("cli", f'sshpass -p "{p}" ssh deploy@web1', p)
p = r(6, A) + "&" + r(5, A) + "2"
secret("cli", f"sshpass -p {p} ssh deploy@web1 uptime", p)
p = pw()
secret("cli", f"cd /opt/harbor && mysql -uroot -p{p} -e 'show databases'", p)
p = pw()
secret("cli", f"make migrate; PGPASSWORD='{p}' psql -h db -U app", p)
p = pw()
secret("cli", f"htpasswd -b -c /etc/nginx/.htpasswd admin {p}", p)
p = pw()
secret("cli", f"rabbitmqctl change_password harbor {p}", p)
p = pw()
secret("cli", f"mosquitto_pub -h mqtt -u sensor -P {p} -t temp -m 21", p)
p = pw()
secret("cli", f"echo '{p}' | docker login -u deploy --password-stdin registry.harbor.dev", p)
p = "tangerine otter " + r(2, DIG)
secret("cli", f"ssh-keygen -t ed25519 -N '{p}' -f deploy_key", p)
p = pw()
secret("cli", f"gpg --batch --passphrase '{p}' -d secrets.gpg", p)
p = pw()
secret("cli", f"openssl enc -aes-256-cbc -k {p} -in a.tar -out a.tar.enc", p)
p = pw()
secret("cli", f"mysql --user=root --password='{p}' harbor", p)
p = r(5, A) + "&" + r(5, A) + "9"
secret("cli", f"curl -u 'admin:{p}' https://jenkins.internal/api/json", p)
p = pw()
secret("cli", f"git push https://ci-bot:{p}@git.harbor.dev/harbor/api.git HEAD:main", p)
# ---- English phrases the rules missed
pin = r(4, DIG)
secret("phrase", f"Here's the door PIN: {pin}", pin)
t = r(32)
secret("phrase", f"{t} is the API key for the staging project", t)
p = pw()
secret("phrase", f"creds: admin / {p}", p)
p = pw()
secret("phrase", f"login admin, pass {p}", p)
secret("phrase", "the passphrase for the deploy key is 'tangerine otter 42'", "tangerine otter 42")
t = r(40)
secret("phrase", f"Use this token -> {t}", t)

# ---- ordinary look-alikes
for lang, t in [
    ("en", "the Kubernetes secret is named harbor-db-credentials"),
    ("de", "Das Passwort ist abgelaufen, bitte ein neues setzen."),
    ("de", "Das Passwort muss mindestens 12 Zeichen haben."),
    ("de", "Token: siehe 1Password-Eintrag „Harbor CI“."),
    ("de", "Der Schlüssel zum Erfolg ist Geduld."),
    ("de", "Das Secret heißt harbor-tls und liegt im Namespace prod."),
    ("fr", "Le mot de passe est trop court : 12 caractères minimum."),
    ("fr", "Le secret est de regrouper les écritures."),
    ("fr", "Le secret Kubernetes s'appelle harbor-db-credentials."),
    ("fr", "Le jeton expire au bout de 15 minutes."),
    ("es", "La contraseña es incorrecta, inténtalo de nuevo."),
    ("es", "La clave es usar caché para las lecturas."),
    ("es", "El secreto se llama harbor-db-credentials."),
    ("es", "Token: ver el gestor de contraseñas."),
    ("pt", "A senha expirou ontem; o token também."),
    ("pt", "A chave é manter o cache quente."),
    ("ru", "Пароль неверный, попробуйте ещё раз."),
    ("ru", "Секрет называется harbor-db-credentials."),
    ("ru", "Токен хранится в Vault."),
    ("zh", "密码错误，请重试。"),
    ("zh", "令牌桶算法限制每个客户端的请求速率。"),
    ("zh", "令牌有效期为3600秒。"),
    ("zh", "密钥存放在 Vault 的 kv/harbor/db 路径下。"),
    ("ja", "パスワードを忘れた場合は管理者に連絡してください。"),
    ("ja", "トークン数は4096までです。"),
    ("ja", "パスワードは12文字以上にしてください。"),
    ("ja", "APIキーは環境変数 HARBOR_API_KEY から読み込みます。"),
    ("ko", "비밀번호가 틀렸습니다."),
    ("ko", "비밀번호는 최소 12자 이상이어야 합니다."),
    ("tr", "Şifre en az 12 karakter olmalı."),
    ("vi", "Mật khẩu phải có ít nhất 12 ký tự."),
    ("id", "Kata sandi harus diganti setiap 90 hari."),
    ("hi", "पासवर्ड गलत है, फिर से कोशिश करें।"),
    ("hi", "पासवर्ड बदलने के लिए Settings में जाएँ।"),
    ("ar", "كلمة المرور غير صحيحة"),
]:
    ordinary("chatter", t, **({} if lang == "en" else {"lang": lang}))

for t in [
    "Fixed in 3f9a2c1d7e8b4a6f0c5d2e1b9a8c7d6e5f4a3b2c (the token refresh bug).",
    "the token fix is in commit 9fceb02d0ae598e95dc970b74767f19372d61af8",
    "The trace id 0af7651916cd43dd8448eb211c80319c belongs to the failing token request.",
    "the token request trace 0af7651916cd43dd8448eb211c80319c timed out",
    "The PIN field accepts 4 to 8 digits; the default PIN length is 6.",
    "pin the version to 4.2.1 and unpin it after the release",
    "Token IDs: [101, 7592, 2088, 102]; token 50256 is <|endoftext|>.",
    "Colour tokens: --brand: #1e90ff; --accent: #FF6F61; --muted: #6c757d.",
    "Color palette: primary #0B5FFF, secondary #12B886, danger #E03131.",
    "ISBN 978-0-596-52068-7 is the regex book; the API key chapter is chapter 4.",
    "Secret Manager path: projects/harbor-prod/secrets/db-password/versions/3",
    "arn:aws:secretsmanager:eu-west-1:123456789012:secret:prod/harbor/db-password-Ab12Cd",
    "vault kv get -field=password secret/harbor/db",
    "GITHUB_TOKEN is provided by Actions; use ${{ secrets.GITHUB_TOKEN }} in the workflow.",
    "Set DB_PASSWORD_FILE=/run/secrets/db_password instead of DB_PASSWORD.",
    "my public key is ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHq7xT1v0Jm3bK9dWcR5sLp2YzN8gUe4fAo6iBhQk1Xr dev@laptop",
    "github.com/stretchr/testify v1.9.0 h1:HtqpIVDClZ4nwg75+xmh4OjkYgiKdX+wTAb2GfT1SnU=",
    "Fingerprint of the host key: SHA256:uL2Hs8xX3o0Vq9y5Z2bKp1dWm4tYc7nR6eJf0gAiBk",
    "The key ID of the signing key is 3AA5C34371567BD2 (gpg --list-keys).",
    "docker pull harbor/api@sha256:9b2d5c0e3f1a4c8eb7d62a4f8e1c0b939b2d5c0e3f1a4c8eb7d62a4f8e1c0b93",
    "The token endpoint is https://auth.harbor.dev/oauth/token and the JWKS is at /.well-known/jwks.json.",
    "In YAML, `password: !vault |` marks an Ansible vault-encrypted value.",
    "Keycloak realm `harbor`, client id `harbor-web`; the client secret lives in Vault.",
    "password_reset_token_ttl = 3600",
    "the k8s Secret `harbor-api-token` was recreated at 14:02",
    "API key header name: X-API-Key (case-insensitive).",
    'token="$(gh auth token)" && export GH_TOKEN=$(op read op://Private/GitHub/token)',
    "token_type: bearer\nexpires_in: 3600\nscope: read:packages",
    "The secret sauce: cache the embeddings per fragment hash (sha1 a94a8fe5ccb19ba61c4c0873d391e987982fbbd3).",
    "Password policy: min 12 chars, 1 digit, 1 symbol (e.g. !@#$).",
    "kubectl get secret harbor-db-credentials -o jsonpath='{.data.password}' | base64 -d",
    "Our API key rotation runbook is at docs/runbooks/api-keys.md",
    "//registry.npmjs.org/:_authToken=(protected)",
    "The password was reset by ana.souza@harbor.dev at 09:14 UTC.",
    "session 4f1c2a7e-9b3d-4e8a-a1f0-6c2d9e7b5a31: token refresh ok, 212 ms",
    "AUTH_TOKEN_HEADER = 'X-Harbor-Token'\nSECRET_NAME = 'harbor-db-credentials'",
    "We store only the SHA-256 of each API key: 5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8.",
    "The build token budget is 8k; run 7f3e9a1c2b4d took 41 s.",
    "Use the PASSWORD_HASHERS setting; Argon2PasswordHasher comes first.",
    "max_tokens: 1024\ntemperature: 0.2\nsecret_scanning: enabled",
]:
    ordinary("identifiers", t)

# ================ round 2: the classes round 1's set found (cases written here, not copies
# of its texts; appended: everything above keeps its values)


def drawn(family, rows, **about):
    """Secret cases from rows of (language, the text with § where the secret goes, how to
    draw the secret), drawn in this order."""
    for lang, text, draw in rows:
        value = draw()
        language = {} if lang == "en" else {"lang": lang}
        secret(family, text.replace("§", value), value, **language, **about)


def b64_of(template):
    return lambda: base64.b64encode(template.format(pw(14)).encode()).decode()


# ---- (a) a credential word, a longer filler ("for the wifi in the server room"), a link
# and a value, in every kind of script
drawn(
    "filler",
    [
        (
            "en",
            "the password to the staging database on the old cluster is §",
            pw13 := lambda: pw(13),
        ),
        ("en", "The admin password (staging only, not prod!) is §", pw13),
        ("de", "Das Passwort für den neuen Drucker im zweiten Stock ist §", pw13),
        ("es", "La contraseña de la base de datos de pruebas del equipo es §", pw13),
        ("pt", "a senha do roteador da sala de reuniões do segundo andar é §", pw13),
        ("it", "la password del NAS nel laboratorio di rete al piano terra è §", pw13),
        ("nl", "het wachtwoord van de router in de vergaderzaal boven is §", pw13),
        ("pl", "hasło do routera w sali konferencyjnej na parterze to §", pw13),
        ("sv", "lösenordet till gästnätet på tredje våningen är §", pw13),
        ("ru", "пароль от роутера в переговорке на третьем этаже — §", pw13),
        ("ar", "كلمة المرور الخاصة بخادم الاختبار الجديد هي §", pw13),
        ("tr", "Şifre (misafir ağı, üçüncü kat): §", pw13),
        ("id", "kata sandi akun admin server staging cabang Bandung adalah §", pw13),
        ("vi", "mật khẩu tài khoản quản trị máy chủ thử nghiệm là §", pw13),
        ("zh", "测试服务器的密码（新换的那个）是§", pw13),
        ("zh", "数据库密码在预发布环境中是 §", pw13),
        ("ja", "パスワード（検証環境のほう）は § です", pw13),
        ("ko", "비밀번호 (스테이징 서버용): §", pw13),
        ("th", "รหัสผ่านไวไฟห้องประชุมชั้นสามคือ §", pw13),
        (
            "en",
            "The API key for the geocoding service we call from the mobile app: §",
            lambda: r(32),
        ),
        (
            "de",
            "Der API-Schlüssel vom Wetterdienst für die Testumgebung lautet §",
            lambda: r(40, A + "_-"),
        ),
    ],
)

# ---- (b) the output of a command that prints a secret: the lines after it
drawn(
    "output",
    [
        (
            "en",
            "$ kubectl -n billing get secret stripe-keys -o jsonpath='{.data.api-key}' | base64 --decode\n§\n$ ",
            lambda: r(32),
        ),
        (
            "en",
            "kubectl get secret billing-db -o yaml\napiVersion: v1\ndata:\n  dsn: §\n  user: YmlsbGluZw==\nkind: Secret\nmetadata:\n  name: billing-db\n  namespace: payments\ntype: Opaque",
            b64_of("postgres://billing:{}@db:5432/billing"),
        ),
        ("en", "vault kv get -field=smtp_pass secret/harbor/mail\n§", lambda: pw(18)),
        (
            "en",
            "$ vault kv get secret/harbor/mail\n====== Data ======\nKey          Value\n---          -----\nhost         smtp.harbor.dev\nsmtp_pass    §\nuser         mailer",
            lambda: pw(16),
        ),
        (
            "en",
            "aws secretsmanager get-secret-value --secret-id prod/reporting/db --query SecretString --output text\n§",
            lambda: pw(20),
        ),
        ("en", "> printenv SENTRY_AUTH\n§", lambda: r(40)),
        (
            "en",
            "$ cat ~/.netrc\nmachine git.harbor.dev\n  login ci-bot\n  password §",
            lambda: pw(15),
        ),
        (
            "en",
            "$ cat .env.production\nNODE_ENV=production\nSTRIPE_WHSEC=§\nLOG_LEVEL=warn",
            lambda: r(32),
        ),
        (
            "en",
            "gcloud secrets versions access latest --secret=jwt-signing\n§",
            lambda: r(44, A + "+/"),
        ),
        ("ru", "Вывод `pass show harbor/db`:\n§", lambda: pw(14)),
        ("en", "PS C:\\> $env:DEPLOY_PASS\n§\nPS C:\\>", lambda: pw(14)),
        (
            "en",
            "root@ci:~# env\nHOME=/root\nPATH=/usr/local/bin:/usr/bin:/bin\nRUNNER_REG=§\nTERM=xterm",
            lambda: r(30),
        ),
    ],
    where="tool_output",
)

# ---- (c) a generated string in the same sentence as a credential word, further away
drawn(
    "sentence",
    [
        (
            "en",
            "Heads up, the signing secret rotates tonight, so until then use § in your local .env",
            lambda: r(40, A + "+/"),
        ),
        (
            "en",
            "I pasted the new token into the team vault yesterday but in case you can't open it here it is again §",
            lambda: r(36),
        ),
        (
            "de",
            "Das Token hat Maria gestern im Admin-Portal neu erzeugt, falls du es brauchst §",
            lambda: r(32, A + "_-"),
        ),
        (
            "es",
            "El secreto del webhook lo regeneramos ayer en el panel de Stripe y quedó así §",
            lambda: r(44, A + "+/"),
        ),
        (
            "fr",
            "J'ai régénéré la clé API hier soir dans la console, tu peux utiliser § en attendant",
            lambda: r(32),
        ),
        (
            "en",
            "§ — paste that into the CI settings of the runner as its new deploy token",
            lambda: r(36),
        ),
        ("ja", "新しいトークンを管理画面で発行したので、念のため貼っておきます §", lambda: r(32)),
        (
            "pt",
            "o segredo do webhook que o time de pagamentos gerou ontem no painel é este aqui §",
            lambda: r(40, A + "+/"),
        ),
    ],
)

# ---- (d) a default that is itself a secret, inside a parameter expansion
drawn(
    "default",
    [
        ("en", "DB_PASSWORD=${DB_PASSWORD:-§}", lambda: pw(14)),
        ("en", 'GITHUB_TOKEN="${GITHUB_TOKEN:-§}"', lambda: "ghp_" + r(36)),
        ("en", "STRIPE_KEY=${STRIPE_KEY:=§}", lambda: r(32)),
    ],
)

# ---- ordinary look-alikes of the four classes: family -> (language, text)
LOOK_ALIKES = {
    # a long filler before a value that is no secret
    "filler": [
        (
            "en",
            "The password for the staging database on the old cluster is rotated every 30 days.",
        ),
        (
            "en",
            "The API key for the maps service in the mobile app is restricted to our bundle id.",
        ),
        (
            "en",
            "the password for the shared account on the build farm is in 1Password under Harbor CI",
        ),
        ("en", "The token limit for the gpt-4o-mini model in our tier is 128000 tokens."),
        ("de", "Das Passwort für den Drucker im zweiten Stock ist seit gestern abgelaufen."),
        ("fr", "Le mot de passe du compte de service de la CI est stocké dans Vault."),
        ("es", "La contraseña de la base de datos de pruebas del equipo es demasiado corta."),
        ("ru", "пароль от роутера в переговорке на третьем этаже — на стикере под ним"),
        ("zh", "测试服务器的密码（新换的那个）是上周设置的。"),
        ("th", "รหัสผ่านไวไฟห้องประชุมชั้นสามคือรหัสเดียวกับชั้นสอง"),
        ("vi", "mật khẩu tài khoản quản trị máy chủ thử nghiệm là do nhóm hạ tầng giữ"),
    ],
    # commands near secrets whose output is no secret
    "output": [
        (
            "en",
            "$ kubectl get secret harbor-db -o jsonpath='{.metadata.creationTimestamp}'\n2026-11-30T14:02:11Z",
        ),
        ("en", "$ printenv PATH\n/usr/local/bin:/usr/bin:/bin"),
        (
            "en",
            "$ kubectl get secrets -n payments\nNAME                    TYPE     DATA   AGE\nstripe-keys             Opaque   2      41d\nharbor-db-credentials   Opaque   3      120d",
        ),
        ("en", "$ base64 -d <<< aGVsbG8gd29ybGQ=\nhello world"),
        ("en", "$ vault kv get -field=username secret/harbor/db\nharbor_app"),
        ("en", "$ cat .env.example\nDB_PASSWORD=changeme\nAPI_KEY=your-key-here\nLOG_LEVEL=info"),
        (
            "en",
            "$ aws secretsmanager list-secrets --query 'SecretList[].Name' --output text\nprod/harbor/db\tprod/harbor/stripe",
        ),
    ],
    # a credential word and a generated-looking public string in one sentence
    "sentence": [
        (
            "en",
            "I rotated the API key after the incident, the write-up is at https://docs.google.com/document/d/1aB3cD4eF5gH6iJ7kL8mN9oP0qR/edit",
        ),
        ("en", "After changing the secret the pod harbor-api-7c9f8d6b5-x2xkq restarted cleanly"),
        (
            "en",
            "The token budget for the nightly eval is 8k and the run id was run_01J9ZK3X5Q8W7V6T4R2M1N0P",
        ),
        (
            "en",
            "The session token is sent as a cookie and the request to /api/v2/users/01HZX4KQ7M8N9P0R1S2T3V4W5X returned 404",
        ),
        (
            "en",
            "Our secret scanning found nothing in the range a94a8fe5ccb19ba61c4c0873d391e987982fbbd3..9fceb02d0ae598e95dc970b74767f19372d61af8",
        ),
    ],
    # header names, parameter expansions, variable references
    "reference": [
        ("en", 'api_key = request.headers.get("X-Api-Key")'),
        ("en", "token = req.get_header('X-Vault-Token')"),
        ("en", 'curl -H "X-Auth-Token: $AUTH_TOKEN" https://api.harbor.dev/v1/me'),
        ("en", "password: ${DB_PASSWORD:?set DB_PASSWORD in .env}"),
        ("en", 'TOKEN="${GITHUB_TOKEN:-$(gh auth token)}"'),
        ("en", "export API_KEY=${API_KEY:-}"),
        ("en", 'DB_PASS="${DB_PASS:?DB_PASS is required}"'),
        ("en", "$env:API_TOKEN = $env:CI_API_TOKEN"),
        ("en", "const apiKey = process.env.STRIPE_SECRET_KEY ?? ''"),
        ("en", '@RequestHeader("X-Api-Token") String token'),
        ("en", "proxy_set_header X-Auth-Token $http_x_auth_token;"),
        ("en", 'password="${PGPASSWORD-}"'),
        ("en", 'echo "token: ${#TOKEN} chars"'),
        ("en", "SECRET_KEY=${SECRET_KEY//[[:space:]]/}"),
        ("en", "secret_token: ${SECRET_TOKEN:+set}"),
        ("de", "Das Passwort kommt aus ${ADMIN_PASSWORD:?fehlt} in der .env-Datei."),
    ],
}
for family, rows in LOOK_ALIKES.items():
    for lang, t in rows:
        ordinary(family, t, **({} if lang == "en" else {"lang": lang}))

# ================ round 3: the classes round 2's set found (cases written here, not copies
# of its texts; appended: everything above keeps its values)

# ---- (a) credential phrase grammar: relative clauses, the value before the word, Hindi,
# Arabic, Bengali, Indonesian and Russian forms, passphrases of several words taken whole.
# Drawn at the end of this script (after every other draw, so that no other case's
# values change).


def round3_grammar():
    """The round-3 phrase-grammar cases."""
    drawn(
        "grammar",
        [
            ("hi", "डेटाबेस का पासवर्ड है: § — इसे कहीं मत लिखना", pw13),
            ("hi", "मेरे लैपटॉप का पासवर्ड अब '§' है", pw13),
            ("hi", "जीमेल का पासवर्ड § है, कल बदल दूँगा", pw13),
            ("ar", "رمز الدخول للخادم الجديد: §", pw13),
            ("ar", "رمز المرور إلى البريد «§» لا ترسله لأحد", pw13),
            ("bn", "সার্ভারের পাসওয়ার্ড হল § , কাউকে দিও না", pw13),
            ("bn", "ব্যাংক কার্ডের পিন নম্বর §, ভুলে যেও না", lambda: r(4, DIG)),
            ("id", "Kata sandi email kantor: §", pw13),
            ("id", "sandi router yg baru § ya, jangan dibagi", pw13),
            ("id", "Password database produksi sudah diganti jadi §", pw13),
            ("ru", "пароль, который админ выдал нам для VPN на прошлой неделе, — §", pw13),
            ("ru", "Пароль от почты, что я завёл для рассылок, такой: §", pw13),
            ("de", "Das Passwort, das ich gestern für das Jira-Konto gesetzt habe, ist §.", pw13),
            (
                "es",
                "La contraseña que puse anoche en el router de la oficina es §, cámbiala luego",
                pw13,
            ),
            ("tr", "Yeni sunucu şifresi '§' olarak belirlendi", pw13),
            ("pt", "Defini '§' como senha do painel ontem", pw13),
            ("en", "I set § as the password for the shared Figma account", pw13),
            ("de", "Die PIN der Firmenkreditkarte ist seit gestern §.", lambda: r(4, DIG)),
            ("vi", "mk wifi phòng họp: § nha", pw13),
        ],
    )
    for lang, text, phrase in [
        ("de", "Die Passphrase für das Backup-Archiv lautet: §", "Regen fällt leise aufs Dach"),
        (
            "es",
            "Frase de contraseña de la bóveda compartida:\n  §\n(todo en minúsculas)",
            "gato verde salta alto",
        ),
        ("en", "The passphrase for the signing key is: §", "purple otter eats cold noodles"),
        ("fr", "La phrase secrète du trousseau est « § »", "le chat dort sous la pluie"),
    ]:
        secret("passphrase", text.replace("§", phrase), phrase, lang=lang)


# ---- (b) secrets in program syntax
drawn(
    "syntax",
    [
        ("en", "$sec = ConvertTo-SecureString '§' -AsPlainText -Force", pw13),
        (
            "en",
            'ConvertTo-SecureString -String "§" -AsPlainText -Force | Export-Clixml cred.xml',
            pw13,
        ),
        ("en", "net user deploy § /add /y", pw13),
        ("en", "net user Administrator §", pw13),
        ("en", "java -Dspring.datasource.password=§ -jar billing.jar", pw13),
        ("en", 'JAVA_OPTS="-Xmx2g -Djavax.net.ssl.trustStorePassword=§"', pw13),
        ("en", "docker login -u ci-bot --password-stdin registry.harbor.dev <<< '§'", pw13),
        ("en", "mysql -u root -p <<EOF\n§\nshow databases;\nEOF", pw13),
        (
            "en",
            "ftp -inv files.harbor.dev <<END\nuser deploy §\ncd releases\nput app.tgz\nquit\nEND",
            pw13,
        ),
        ("en", "# ftp batch script\nopen 10.0.4.12\nuser backup §\nbinary\nget dump.sql", pw13),
        (
            "en",
            "# /etc/GeoIP.conf\nAccountID 104822\nLicenseKey §\nEditionIDs GeoLite2-ASN",
            lambda: r(40, A + "_"),
        ),
        (
            "en",
            "<configuration>\n  <LicenseKey>§</LicenseKey>\n</configuration>",
            lambda: r(32, UPD),
        ),
        ("en", 'license_key: "§"', lambda: r(36, LOD)),
    ],
)

# ---- (c) generated passwords printed by tools
drawn(
    "generated",
    [
        (
            "en",
            "2024-11-02T10:01:07.118Z 6 [Note] [MY-010454] [Server] A temporary password is generated for admin@localhost: §",
            lambda: pw(12),
        ),
        (
            "en",
            "Password for the [elastic] user successfully reset.\nNew value: §",
            lambda: r(20, A + "*_="),
        ),
        ("en", "Changed password for user elastic\nPASSWORD elastic = §", lambda: r(20)),
        (
            "en",
            "Please use the following password to proceed to installation:\n\n§\n\nThis may also be found at: /var/jenkins_home/secrets/initialAdminPassword",
            lambda: hexs(32),
        ),
        (
            "en",
            "Installation complete.\nInitial admin password: §\nChange it after the first login.",
            lambda: pw(16),
        ),
        ("en", "Generated password for user 'grafana-admin': §", lambda: pw(16)),
        ("en", "Your new API signing secret (shown once):\n\n    §\n", lambda: r(44, A + "+/")),
    ],
    where="tool_output",
)

# ---- (d) ordinary look-alikes: references inside URLs, process.env, masks, documented
# placeholders, JWT payloads explained
for t in [
    'mysql --url "mysql://root:$MYSQL_ROOT_PASSWORD@localhost:3306/shop"',
    "REDIS_URL=redis://:${REDIS_PASSWORD}@cache:6379/0",
    "amqp://harbor:${RABBITMQ_PASS}@mq.internal:5672/%2F",
    "headers: { Authorization: `Bearer ${process.env.API_TOKEN}` }",
    "const db = new Pool({ password: process.env.PG_PASSWORD, user: 'app' });",
    "token: process.env.GH_TOKEN,",
    "postgres://admin:****@db.internal:5432/orders",
    "password: ********",
    "Connected with api_key=**************** (masked)",
    "# .env.sample: copy to .env and set real values\nADMIN_PASSWORD=changeme\nJWT_SECRET=change-me",
    "DB_PASSWORD=changeme  # placeholder, replace before deploying",
    "# the pair the AWS docs use in their examples\nexport AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE\nexport AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    'The payload decodes to {"sub": "42", "role": "admin", "exp": 1717000000} and the header to {"alg": "HS256", "typ": "JWT"}.',
    'jwt payload: {"iss": "auth.harbor.dev", "aud": "api", "iat": 1700000000} — the signature is verified with the JWKS key.',
]:
    ordinary("round3", t)

round3_grammar()

# ---- (e) a secret-named PHP constant, an access key in Slavic languages (hex after it)
drawn(
    "syntax",
    [
        ("en", "define( 'LOGGED_IN_SALT', '§' );", lambda: r(48, SYM + "{}[]()~&:")),
        ("en", 'define("STRIPE_SECRET", "§");', lambda: r(40, SYM + "&:~")),
        ("uk", "Ключ доступу до сервісу логів — §", lambda: hexs(32)),
        ("ru", "Ключ доступа к API биллинга: §", lambda: hexs(40)),
    ],
)

# ---- (f) the sentence of a password word holding no password
for t in [
    "The password reset for user alice.smith2 on host web-01 failed twice.",
    "Password hashing uses Argon2id with m=65536, t=3 and p=4.",
    "The password rotation is handled by the Lambda RotateSecret2 every 30 days.",
    "Set the root password with passwd on Ubuntu22.04 before the first boot.",
    "Password manager: we moved from LastPass to Bitwarden2024 last spring.",
    "Passphrase: see the team vault.",
    "Die Passphrase ist in KeePass gespeichert.",
    "password: str = Field(min_length=12)",
    "The PIN for the SIM was reset in ticket 88213.",
    "I changed the wifi password; the SSID is still Harbor_Guest5G.",
    "define('WP_DEBUG', false);",
    "Ключ доступу до API зберігається у Vault, commit 3f9a2c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39.",
]:
    ordinary("round3", t)

with (Path(__file__).parent / "redaction_corpus.jsonl").open("w") as fh:
    for c in cases:
        fh.write(json.dumps(c, ensure_ascii=False) + "\n")
print(
    sum(c["kind"] == "secret" for c in cases),
    "secret cases,",
    sum(c["kind"] == "ordinary" for c in cases),
    "ordinary",
)
