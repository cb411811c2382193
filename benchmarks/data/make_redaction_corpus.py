# ruff: noqa: E501 — a case reads best on one line, as it is in the corpus file
"""Writes redaction_corpus.jsonl beside this file: the corpus of bench_redaction.py.

    python benchmarks/data/make_redaction_corpus.py

Each case is written here by hand (the context a secret turns up in: an .env file, a
shell command, a log line, JSON, YAML, prose); only the secret characters themselves are
drawn from a seeded generator, so the file comes out the same every time. Secret cases
list the parts that must not survive redaction; ordinary cases must come through as
they are. Cases are only ever added at the end of their section, so earlier ones keep
their values.
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


def secret(family, text, *secrets):
    for s in secrets:
        assert s in text, (family, s)
    cases.append({"kind": "secret", "family": family, "text": text, "secrets": list(secrets)})


def ordinary(family, text):
    cases.append({"kind": "ordinary", "family": family, "text": text})


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

with (Path(__file__).parent / "redaction_corpus.jsonl").open("w") as fh:
    for c in cases:
        fh.write(json.dumps(c, ensure_ascii=False) + "\n")
print(
    sum(c["kind"] == "secret" for c in cases),
    "secret cases,",
    sum(c["kind"] == "ordinary" for c in cases),
    "ordinary",
)
