#!/usr/bin/env python3
"""Deterministic generator for the held-back redaction test set #4.

Writes redaction_heldback4.jsonl next to this script.  Standard library only.
Rerunning gives a byte-identical file (fixed seed, no clock, no hash ordering).
"""
import base64
import json
import os
import random
import string
import struct
import sys
from collections import Counter

SEED = 40417
R = random.Random(SEED)

AN = string.ascii_letters + string.digits
LOW = string.ascii_lowercase
UP = string.ascii_uppercase
DIG = string.digits
HEX = "0123456789abcdef"
B64 = AN + "+/"
B64U = AN + "-_"
B32U = UP + "234567"
BECH = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"
MAXLEN = 600


def rs(alpha, n):
    return "".join(R.choice(alpha) for _ in range(n))


def b64(b):
    return base64.b64encode(b).decode()


def b64u(b):
    return base64.urlsafe_b64encode(b).decode().rstrip("=")


def fill(t, **kw):
    for k, v in kw.items():
        t = t.replace("{" + k + "}", v)
    return t


# ---------------------------------------------------------------- bookkeeping
CASES = []          # (section, dict)
TPL_USE = Counter()


def add(section, kind, family, tid, text, secrets=None):
    TPL_USE[tid] += 1
    d = {"kind": kind, "family": family, "text": text}
    if kind == "secret":
        d["secrets"] = list(secrets)
    CASES.append((section, d))


# ================================================================ ORDINARY
# Generated first, so that secret values can be rejected if they happen to
# occur inside any ordinary text (e.g. a 4-digit PIN inside a hex digest).

def uuid4():
    return "%08x-%04x-4%03x-%x%03x-%012x" % (
        R.getrandbits(32), R.getrandbits(16), R.getrandbits(12),
        R.choice([8, 9, 10, 11]), R.getrandbits(12), R.getrandbits(48))


def isbn13():
    body = "978" + rs(DIG, 9)
    s = sum(int(c) * (1 if i % 2 == 0 else 3) for i, c in enumerate(body))
    return body[:3] + "-" + body[3] + "-" + body[4:8] + "-" + body[8:] + "-" + str((10 - s % 10) % 10)


def ssh_ed_pub():
    blob = struct.pack(">I", 11) + b"ssh-ed25519" + struct.pack(">I", 32) + R.randbytes(32)
    return "ssh-ed25519 " + b64(blob)


PHRASES = ["hello world", "release notes for v2.3", "build succeeded", "Lorem ipsum dolor sit amet",
           "{\"theme\":\"dark\",\"lang\":\"en\"}", "user-agent test string", "meeting at noon",
           "the quick brown fox", "config version 7", "name=widgets&page=3"]

ORD_FILLS = {
    "UUID": uuid4,
    "SHA40": lambda: rs(HEX, 40),
    "SHA7": lambda: rs(HEX, 7),
    "SHA64": lambda: rs(HEX, 64),
    "MD5": lambda: rs(HEX, 32),
    "HEX32": lambda: rs(HEX, 32),
    "HEX16": lambda: rs(HEX, 16),
    "HEX12": lambda: rs(HEX, 12),
    "HEX6": lambda: rs("0123456789ABCDEF", 6),
    "N": lambda: str(R.randint(2, 90)),
    "BIGN": lambda: str(R.randint(1000, 250000)),
    "IP": lambda: "10.%d.%d.%d" % (R.randint(0, 255), R.randint(0, 255), R.randint(1, 254)),
    "PUBIP": lambda: "203.0.113.%d" % R.randint(1, 254),
    "PORT": lambda: str(R.randint(1025, 65000)),
    "VER": lambda: "%d.%d.%d" % (R.randint(1, 9), R.randint(0, 30), R.randint(0, 20)),
    "ISBN": isbn13,
    "ORDER": lambda: str(R.randint(100000, 9999999)),
    "UPS": lambda: "1Z" + rs(UP + DIG, 6) + "03" + rs(DIG, 8),
    "ACCT": lambda: rs(DIG, 12),
    "B64PHRASE": lambda: b64(R.choice(PHRASES).encode() + bytes([R.randint(48, 57)])),
    "B64_43": lambda: b64(R.randbytes(32)).rstrip("="),
    "B64_44": lambda: b64(R.randbytes(32)),
    "SRI": lambda: "sha512-" + b64(R.randbytes(64)),
    "SSHPUB": ssh_ed_pub,
    "EDPUBPEM": lambda: b64(bytes.fromhex("302a300506032b6570032100") + R.randbytes(32)),
    "AGEPUB": lambda: "age1" + rs(BECH, 58),
    "GPGFPR": lambda: rs("0123456789ABCDEF", 40),
    "COLONFP": lambda: ":".join(rs("0123456789ABCDEF", 2) for _ in range(20)),
    "CUS": lambda: "cus_" + rs(AN, 14),
    "NAME": lambda: R.choice(["alice", "bob", "carol", "dmitri", "yuki", "priya", "omar", "lena", "tomas", "mei"]),
    "DATE": lambda: "2024-%02d-%02d" % (R.randint(1, 12), R.randint(1, 28)),
}

# (family, template). Each template may be used up to 3 times; templates with
# no fill are used once.
ORD_TEMPLATES = [
    # --- references to secrets, env lookups
    ("env-ref", 'password = os.environ["DB_PASSWORD"]\nconn = psycopg2.connect(host="{IP}", user="app", password=password)'),
    ("env-ref", "const token = process.env.GITHUB_TOKEN;\nif (!token) throw new Error('GITHUB_TOKEN is not set');"),
    ("env-ref", 'smtpPass := os.Getenv("SMTP_PASSWORD")\nif smtpPass == "" {\n\tlog.Fatal("SMTP_PASSWORD missing")\n}'),
    ("env-ref", 'String ksPass = System.getenv("KEYSTORE_PASSWORD"); // never hard-code this'),
    ("env-ref", 'Stripe.api_key = ENV.fetch("STRIPE_SECRET_KEY")'),
    ("env-ref", "$password = getenv('MAIL_PASSWORD') ?: throw new RuntimeException('MAIL_PASSWORD not configured');"),
    ("env-ref", 'let token = std::env::var("API_TOKEN").expect("API_TOKEN must be set");'),
    ("env-ref", 'var secret = Environment.GetEnvironmentVariable("AZURE_CLIENT_SECRET");'),
    ("env-ref", "az login --service-principal -u $env:ARM_CLIENT_ID -p $env:ARM_CLIENT_SECRET --tenant $env:ARM_TENANT_ID"),
    ("env-ref", 'sqlcmd -S db{N} -U sa -P %SA_PASSWORD% -Q "SELECT @@VERSION"'),
    ("env-ref", 'mysql -h {IP} -u root -p"$MYSQL_ROOT_PASSWORD" -e "SHOW DATABASES;"'),
    ("env-ref", "docker run -d -e POSTGRES_PASSWORD=${POSTGRES_PASSWORD:?must be set} -p {PORT}:5432 postgres:16"),
    ("env-ref", "export PGPASSWORD=\"$(cat /run/secrets/pg_password)\"\npg_dump -h {IP} -U app app > backup.sql"),
    ("env-ref", "Set-Item -Path Env:NUGET_API_KEY -Value (Get-Secret -Name NuGetKey -AsPlainText)"),
    # --- secret-manager references / templates
    ("secret-ref", "      - name: Log in to Docker Hub\n        uses: docker/login-action@v3\n        with:\n          username: ${{ vars.DOCKERHUB_USER }}\n          password: ${{ secrets.DOCKERHUB_TOKEN }}"),
    ("secret-ref", "env:\n  - name: DB_PASSWORD\n    valueFrom:\n      secretKeyRef:\n        name: db-credentials\n        key: password"),
    ("secret-ref", "vault kv get -field=password secret/prod/{NAME}/postgres"),
    ("secret-ref", "aws secretsmanager get-secret-value --secret-id prod/billing/db-password --query SecretString --output text --region eu-west-1"),
    ("secret-ref", "gcloud secrets versions access latest --secret=db-password --project=acme-prod-{N}"),
    ("secret-ref", 'op read "op://Engineering/Postgres Prod/password"'),
    ("secret-ref", "DbPassword=@Microsoft.KeyVault(SecretUri=https://kv-prod-{N}.vault.azure.net/secrets/DbPassword/)"),
    ("secret-ref", '- name: create app user\n  community.postgresql.postgresql_user:\n    name: app\n    password: "{{ vault_app_db_password }}"'),
    ("secret-ref", "      password: {{ .Values.postgresql.auth.password | quote }}"),
    ("secret-ref", 'resource "aws_db_instance" "main" {\n  username = "dbadmin"\n  password = random_password.db.result\n}'),
    ("secret-ref", "module \"db\" {\n  source   = \"./modules/rds\"\n  password = var.db_password\n}"),
    ("secret-ref", "spring.datasource.password=${DB_PASSWORD}\nspring.datasource.username=${DB_USER:app}"),
    ("secret-ref", "The password is in 1Password under 'Staging DB' — please don't paste it here."),
    ("secret-ref", "I rotated the Stripe key; the new one is in Vault at secret/data/billing/stripe."),
    ("secret-ref", "arn:aws:secretsmanager:us-east-1:{ACCT}:secret:prod/api/token-{HEX6}"),
    # --- placeholders and masks
    ("placeholder", "# .env.example — copy to .env and fill in real values\nDB_PASSWORD=<your-db-password>\nAPI_TOKEN=<your-token>"),
    ("placeholder", 'export OPENAI_API_KEY="sk-..."   # paste your own key here'),
    ("placeholder", "Authorization: Bearer <token>\n\nReplace <token> with the access token returned by /oauth/token."),
    ("placeholder", "password: changeme   # placeholder only; the installer replaces it on first boot"),
    ("placeholder", "curl -u admin:xxx http://localhost:{PORT}/api/health   (replace xxx with your admin password)"),
    ("placeholder", "Run docker login -u ci-bot -p *** ghcr.io\nLogin Succeeded"),
    ("placeholder", "db_endpoint = \"orders.cluster-{HEX12}.eu-west-1.rds.amazonaws.com\"\ndb_password = <sensitive>"),
    ("placeholder", "Token: ************************{HEX6}  (created {DATE}, last used {N} days ago)"),
    ("placeholder", "Password: ********\nStatus: saved"),
    ("placeholder", "AWS documents AKIAIOSFODNN7EXAMPLE as its example access key ID — it is a placeholder and not a real key."),
    ("placeholder", "API_KEY=YOUR_API_KEY_HERE"),
    ("placeholder", "{\n  \"username\": \"<USERNAME>\",\n  \"password\": \"<PASSWORD>\"\n}"),
    ("placeholder", "[REDACTED] was printed instead of the token, so the masking works."),
    # --- hashes and digests
    ("hash", "commit {SHA40}\nAuthor: {NAME} <{NAME}@example.com>\nDate:   {DATE}\n\n    fix: rotate password reset tokens after use"),
    ("hash", "{SHA64}  ubuntu-24.04-live-server-amd64.iso"),
    ("hash", "image: nginx@sha256:{SHA64}"),
    ("hash", '"node_modules/lodash": {\n  "version": "4.17.21",\n  "integrity": "{SRI}"\n}'),
    ("hash", "requests==2.32.3 \\\n    --hash=sha256:{SHA64}"),
    ("hash", "golang.org/x/crypto v0.{N}.0 h1:{B64_44}"),
    ("hash", "MD5 (release-{VER}.tar.gz) = {MD5}"),
    ("hash", 'HTTP/1.1 304 Not Modified\nETag: "{MD5}"\nCache-Control: max-age=600'),
    ("hash", "Merge pull request #{BIGN} from acme/fix-token-refresh ({SHA7})"),
    ("hash", "https://github.com/acme/auth-service/commit/{SHA40}"),
    # --- uuids, ids
    ("ids", "X-Request-Id: {UUID}\nX-RateLimit-Remaining: {N}"),
    ("ids", "traceparent: 00-{HEX32}-{HEX16}-01"),
    ("ids", "REPORT RequestId: {UUID}\tDuration: {N}.41 ms\tBilled Duration: {N} ms"),
    ("ids", "Sentry event {HEX32} captured: TokenExpiredError in auth middleware"),
    ("ids", "CONTAINER ID   IMAGE          STATUS\n{HEX12}   redis:7.2      Up {N} minutes"),
    ("ids", "Customer {CUS} updated their billing address."),
    ("ids", '{"correlationId": "{UUID}", "level": "warn", "msg": "password reset requested"}'),
    ("ids", "arn:aws:iam::{ACCT}:role/ci-deployer"),
    ("ids", "Order #{ORDER} has shipped, UPS tracking number {UPS}."),
    ("ids", "ISBN {ISBN} — 'Security Engineering', 3rd edition"),
    # --- base64 of non-secrets
    ("base64", "echo '{B64PHRASE}' | base64 -d"),
    ("base64", '<img alt="spacer" src="data:image/gif;base64,R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7">'),
    ("base64", "Content-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: base64\n\n{B64PHRASE}"),
    # --- public keys and fingerprints
    ("pubkey", "{SSHPUB} {NAME}@laptop"),
    ("pubkey", "The key fingerprint is:\nSHA256:{B64_43} {NAME}@devbox"),
    ("pubkey", "-----BEGIN PUBLIC KEY-----\n{EDPUBPEM}\n-----END PUBLIC KEY-----"),
    ("pubkey", "pub   ed25519 {DATE} [SC]\n      {GPGFPR}\nuid           [ultimate] {NAME} <{NAME}@example.org>"),
    ("pubkey", "# recipients for sops\ncreation_rules:\n  - age: {AGEPUB}"),
    ("pubkey", "[Peer]\nPublicKey = {B64_44}\nAllowedIPs = 10.8.0.{N}/32\nEndpoint = {PUBIP}:51820"),
    ("pubkey", "SHA1 Fingerprint={COLONFP}"),
    # --- JWT / OAuth explanations
    ("jwt-explain", "A JWT is three base64url segments joined by dots — header.payload.signature. Never log the whole token."),
    ("jwt-explain", "Access tokens expire after 3600 seconds; use the refresh_token grant to get a new one."),
    ("jwt-explain", "In the authorization code flow the client exchanges the code for an access token at the /oauth/token endpoint."),
    # --- prose about credentials in many languages
    ("prose-en", "Your password expired {N} days ago; you will be asked to choose a new one at next sign-in."),
    ("prose-en", "This prompt used {BIGN} tokens out of a 200k token context window."),
    ("prose-en", "Your Wi-Fi key is printed on the sticker under the router."),
    ("prose-en", "The door code changed again, ask reception for the new one."),
    ("prose-de", "Das Passwort muss mindestens {N} Zeichen lang sein und darf nicht dem alten entsprechen."),
    ("prose-fr", "Vous pouvez réinitialiser votre code PIN dans Paramètres > Sécurité."),
    ("prose-es", "Olvidé mi contraseña otra vez, ¿cómo la restablezco?"),
    ("prose-it", "La password è scaduta, devo chiedere all'IT di resettarla."),
    ("prose-pt", "Não compartilhe sua senha com ninguém, nem mesmo com o suporte."),
    ("prose-nl", "Het wachtwoord moet minstens één hoofdletter en {N} cijfers bevatten."),
    ("prose-sv", "Ange din PIN-kod för att fortsätta."),
    ("prose-pl", "Hasło wygasło {N} dni temu, ustaw nowe."),
    ("prose-cs", "Zapomněli jste heslo? Klikněte na odkaz pro obnovení."),
    ("prose-tr", "Şifreniz en az {N} karakter olmalıdır."),
    ("prose-ru", "Срок действия токена истёк, авторизуйтесь заново."),
    ("prose-uk", "Змініть пароль після першого входу в систему."),
    ("prose-el", "Ο κωδικός πρόσβασης πρέπει να αλλάζει κάθε {N} ημέρες."),
    ("prose-ar", "انتهت صلاحية كلمة المرور، يرجى تعيين كلمة مرور جديدة."),
    ("prose-he", "שכחתי את הסיסמה, איך מאפסים אותה?"),
    ("prose-fa", "رمز عبور شما باید حداقل {N} کاراکتر باشد."),
    ("prose-hi", "अपना पासवर्ड किसी के साथ साझा न करें।"),
    ("prose-th", "กรุณาเปลี่ยนรหัสผ่านทุก {N} วัน"),
    ("prose-vi", "Mật khẩu của bạn đã hết hạn, vui lòng đổi mật khẩu mới."),
    ("prose-id", "Token akses akan kedaluwarsa dalam {N} menit."),
    ("prose-zh", "密码已过期，请联系管理员重置。"),
    ("prose-zh", "这个模型的最大上下文长度是{BIGN}个token。"),
    ("prose-ja", "暗証番号を{N}回間違えるとカードがロックされます。"),
    ("prose-ko", "비밀번호는 {N}자 이상이어야 합니다."),
    ("prose-fi", "Salasanasi vanhenee {N} päivän kuluttua."),
    ("prose-hu", "A megadott jelszó nem egyezik."),
    ("prose-ro", "Parola trebuie schimbată la prima autentificare."),
    ("prose-sw", "Umesahau nenosiri lako? Bofya hapa kulibadilisha."),
    ("prose-bn", "পাসওয়ার্ড ভুল হয়েছে, আবার চেষ্টা করুন।"),
    ("prose-da", "Husk at skifte adgangskode mindst hver {N}. måned."),
    # --- code handling passwords without values
    ("code", "if not bcrypt.checkpw(password.encode(), user.password_hash):\n    raise AuthError(\"invalid credentials\")"),
    ("code", "def validate_pin(pin: str) -> bool:\n    return pin.isdigit() and 4 <= len(pin) <= 8"),
    ("code", "token = jwt.encode(payload, settings.SECRET_KEY, algorithm=\"HS256\")"),
    ("code", 'const [, token] = (req.headers.authorization ?? "").split(" ");'),
    ("code", '<input type="password" name="password" autocomplete="current-password" placeholder="Password" minlength="{N}">'),
    ("code", "Token(type='IDENT', value='password', line={N}, col=5)"),
    ("code", 'tokenizer = AutoTokenizer.from_pretrained("bert-base-uncased")\nids = tokenizer("reset my password")["input_ids"]'),
    ("code", "AUTH_PASSWORD_VALIDATORS = [\n    {\"NAME\": \"django.contrib.auth.password_validation.MinimumLengthValidator\", \"OPTIONS\": {\"min_length\": {N}}},\n]"),
    ("code", "password = getpass.getpass(\"Password: \")"),
    ("code", 'read -r -s -p "Password: " PASS; echo'),
    # --- CLI help / prompts / errors
    ("cli", "  -p, --password string   Password (prefer --password-stdin)\n      --password-stdin    Take the password from stdin"),
    ("cli", "Enter passphrase for key '/home/{NAME}/.ssh/id_ed25519':"),
    ("cli", "[sudo] password for {NAME}:"),
    ("cli", "Password for 'https://{NAME}@github.com':"),
    ("cli", "Enter PIN for 'PIV_II (PIV Card Holder pin)':"),
    ("cli", "New password:\nRetype new password:\npasswd: password updated successfully"),
    ("error", 'psql: error: connection to server at "{IP}", port 5432 failed: FATAL:  password authentication failed for user "app"'),
    ("error", "ERROR 1045 (28000): Access denied for user 'root'@'localhost' (using password: YES)"),
    ("error", "npm ERR! code E401\nnpm ERR! Unable to authenticate, your authentication token seems to be invalid."),
    ("error", "remote: Invalid username or token. Password authentication is not supported for Git operations."),
    ("error", "Token indices sequence length is longer than the specified maximum sequence length for this model ({BIGN} > 4096)."),
    ("error", "    at AuthService.validateToken (src/auth/auth.service.ts:{N}:17)\n    at async TokenGuard.canActivate (src/auth/token.guard.ts:{N}:9)"),
    # --- resource names, file names, misc public values
    ("resource", "kubectl get secret db-credentials -n payments"),
    ("resource", "tls:\n  - hosts: [api.example.com]\n    secretName: wildcard-tls-prod"),
    ("resource", "$ ls ~/.ssh\nauthorized_keys  id_ed25519  id_ed25519.pub  known_hosts"),
    ("resource", "git checkout -b fix/password-reset-token-expiry-{N}"),
    ("resource", "Rotated IAM access key for user ci-deployer (key age {N} days)."),
    ("resource", "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin"),
    ("misc", "nginx version: nginx/1.{N}.4\nListening on 0.0.0.0:{PORT}"),
    ("misc", "    inet {IP}/24 brd 10.0.0.255 scope global eth0"),
    ("misc", ":root {\n  --primary: #{HEX6};\n  --accent: #{HEX6};\n}"),
    ("misc", "Pinned dependency: cryptography=={VER} (see CHANGELOG for the token-handling fix)"),
    ("misc", "Passport number field must be 9 characters; the compass bearing is {N} degrees; {N} tests passed."),
]

ORD_REPEAT = 2          # templates with fills are instantiated twice


def gen_ordinary():
    seen = set()
    for i, (fam, t) in enumerate(ORD_TEMPLATES):
        has_fill = any("{" + k + "}" in t for k in ORD_FILLS)
        reps = ORD_REPEAT if has_fill else 1
        for _ in range(reps):
            for _try in range(50):
                text = t
                for k, f in ORD_FILLS.items():
                    while "{" + k + "}" in text:
                        text = text.replace("{" + k + "}", f(), 1)
                if text not in seen:
                    break
            else:
                continue
            seen.add(text)
            add("ordinary", "ordinary", fam, "ord%d" % i, text)


gen_ordinary()
ORD_BLOB = "\n\x00\n".join(d["text"] for s, d in CASES if d["kind"] == "ordinary")
USED = set()


def fresh(gen):
    """Return a new value from gen() that is unique and absent from ordinary texts."""
    for _ in range(1000):
        v = gen()
        if v in USED or v in ORD_BLOB or any(v in u or u in v for u in USED):
            continue
        USED.add(v)
        return v
    raise RuntimeError("could not generate a fresh value")


# ================================================================ VALUE KINDS
WORDS = ["sunflower", "tiger", "falcon", "maple", "rocket", "pumpkin", "harbor", "violet", "cobalt",
         "walrus", "mango", "zephyr", "orchid", "glacier", "pepper", "nimbus", "otter", "lantern",
         "quartz", "saffron", "thunder", "willow", "biscuit", "comet", "dragon", "ember", "fjord",
         "gecko", "hazel", "igloo", "jasper", "kiwi", "lemur", "meadow", "nectar", "oasis", "panda",
         "raven", "sequoia", "tundra", "velvet", "wombat", "badger", "cactus", "dolphin", "eagle",
         "ferret", "ginger", "sakura", "tortuga", "schnee", "kaffee", "hiver", "bosque", "marmot",
         "papaya", "kestrel", "basalt", "monsoon", "juniper"]
SYMS = "!#%*+-=?^_.~&"
USYMS = "-_.~"
LEET = {"a": "@", "o": "0", "e": "3", "i": "1", "s": "5"}


def _cap(w):
    return w[0].upper() + w[1:]


def _human():
    w1, w2 = R.sample(WORDS, 2)
    d = str(R.randint(0, 9999)).zfill(R.choice([2, 3, 4]))
    s = R.choice(SYMS)
    p = R.randrange(7)
    if p == 0:
        v = _cap(w1) + d + s
    elif p == 1:
        v = w1 + s + _cap(w2) + d
    elif p == 2:
        v = "".join(LEET.get(c, c) if R.random() < 0.6 else c for c in _cap(w1)) + s + d
    elif p == 3:
        v = _cap(w1) + _cap(w2) + d
    elif p == 4:
        v = d + w1 + s + _cap(w2)
    elif p == 5:
        v = _cap(w1) + "_" + w2.upper() + d
    else:
        v = w1 + d + s + w2 + R.choice(DIG)
    if v[0] in SYMS:
        v = "X" + v
    return v


def _rand_pw(n=None, syms=SYMS):
    n = n or R.randint(10, 18)
    while True:
        v = R.choice(AN) + "".join(R.choice(AN + syms + syms) for _ in range(n - 2)) + R.choice(AN)
        if any(c.isdigit() for c in v) and any(c.isalpha() for c in v):
            return v


def _pin(k):
    while True:
        v = R.choice("123456789") + rs(DIG, k - 1)
        if len(set(v)) > 2:
            return v


def _passphrase():
    ws = R.sample(WORDS, R.choice([3, 4]))
    sep = R.choice(["-", ".", "_"])
    return sep.join(ws) + sep + str(R.randint(1, 99))


def _recovery():
    if R.random() < 0.5:
        return rs(LOW + DIG, 5) + "-" + rs(LOW + DIG, 5)
    return "-".join(rs(UP + DIG, 4) for _ in range(3))


def _wifi():
    return _human() if R.random() < 0.5 else rs(AN, R.randint(12, 20))


KINDS = {
    "h": _human,
    "r": _rand_pw,
    "u": lambda: _rand_pw(R.randint(12, 24), USYMS),          # URL / shell / conn-string safe
    "a": lambda: rs(AN, R.randint(16, 28)),                    # alphanumeric only
    "w": _wifi,
    "p4": lambda: _pin(4),
    "p6": lambda: _pin(6),
    "p": lambda: _pin(R.randint(4, 8)),
    "ph": _passphrase,
    "rc": _recovery,
    "cmb": lambda: "-".join(str(R.randint(10, 99)) for _ in range(3)),
    "hx32": lambda: rs(HEX, 32),
    "hx40": lambda: rs(HEX, 40),
    "hx64": lambda: rs(HEX, 64),
    "b44": lambda: b64(R.randbytes(32)),
    "b64s": lambda: b64(R.randbytes(R.choice([24, 30, 33]))),
    "an32": lambda: rs(AN, 32),
    "an40": lambda: rs(AN, 40),
    "b64u": lambda: rs(B64U, R.randint(32, 48)),
}


def val(kind):
    return fresh(KINDS[kind])


# ================================================================ 1. NATURAL LANGUAGE
# (family, template, kinds for A, B, ...)
NL = [
    ("nl-en", "ok the staging db pw is {A} — don't paste it anywhere else pls", "h"),
    ("nl-en", "Router admin password: {A} (changed it last week)", "r"),
    ("nl-en", "wifi key for the guest network is {A}", "w"),
    ("nl-en", "my banking app payment PIN is {A}, you need it to approve the test transfer", "p6"),
    ("nl-en", "door code for the server room got changed to {A}, press # after", "p"),
    ("nl-en", "Safe combination for the comms cabinet: {A}", "cmb"),
    ("nl-en", "here's a recovery code in case 2FA breaks again: {A}", "rc"),
    ("nl-en", "use pass {A} for the jenkins user", "h"),
    ("nl-en", 'The master password for the team vault is now "{A}".', "ph"),
    ("nl-en", "unlock code for the test phone -> {A}", "p"),
    ("nl-en", "zoom passcode {A}, meeting starts at 3", "p6"),
    ("nl-en", "the pasword for the ftp acount is {A} btw", "h"),
    ("nl-en", "Password — and yes I know I shouldn't send it over Slack, but the deploy is blocked and IT is offline until Monday — {A}", "r"),
    ("nl-en", "pwd={A} (user deploy) if you need to ssh into the bastion", "u"),
    ("nl-en", "Pls try again with password `{A}`, the old one was rotated", "r"),
    ("nl-en", "{A} is the pw for the grafana admin, fyi", "h"),
    ("nl-en", "gpg passphrase is {A} — same as the backup one", "ph"),
    ("nl-en", "user: admin, pass: {A}; root pw is {B}", "h,r"),
    ("nl-en", "password (temp): [{A}]", "r"),
    ("nl-en", "passcode for the alarm panel at the warehouse, which Dave set up on Friday after the break-in scare, is {A}", "p"),
    ("nl-es", "la contraseña del servidor de pruebas es {A}, no la compartas", "h"),
    ("nl-es", "oye, la clave del wifi es «{A}»", "w"),
    ("nl-es", "te paso la contra del admin: {A}", "h"),
    ("nl-es", "el PIN de la tarjeta de prueba es {A}", "p4"),
    ("nl-es", "{A} — esa es la contraseña nueva del correo", "r"),
    ("nl-es", "códigos de recuperación: {A} {B}", "rc,rc"),
    ("nl-fr", "le mot de passe de la base de prod c'est {A}, change-le après stp", "h"),
    ("nl-fr", "mdp du compte ovh : « {A} »", "r"),
    ("nl-fr", "le digicode de l'immeuble : {A}", "p4"),
    ("nl-fr", "Pour le compte admin, le mot de passe qu'on avait mis en place avec le prestataire en mars est toujours {A}", "h"),
    ("nl-fr", "code de déverrouillage du téléphone de test : {A}", "p"),
    ("nl-de", "Das Passwort für den Testserver lautet „{A}“, bitte nicht weitergeben.", "h"),
    ("nl-de", "Kennwort fürs NAS ist {A}", "r"),
    ("nl-de", "Der WLAN-Schlüssel im Büro ist jetzt {A}", "w"),
    ("nl-de", "PW vom Jenkins-Admin: {A} (hab ich gestern geändert)", "h"),
    ("nl-de", "Die Kombination vom Tresor im Serverraum ist {A}", "cmb"),
    ("nl-de", "Das Passwort, das Jonas gestern im Meeting erwähnt hat, ist übrigens {A}", "h"),
    ("nl-de", "paswort: {A}", "r"),
    ("nl-it", "la password del gestionale è {A}, usala solo per i test", "h"),
    ("nl-it", "mi mandi la pass? ah no, eccola: {A}", "r"),
    ("nl-it", "il codice del cancello è {A}", "p"),
    ("nl-pt", "a senha do wi-fi do escritório é {A}", "w"),
    ("nl-pt", "senha mestre do cofre: “{A}”", "ph"),
    ("nl-pt", "manda o PIN do cartão corporativo? é {A} né", "p4"),
    ("nl-nl", "het wachtwoord van het testaccount is {A}", "h"),
    ("nl-nl", "ww van de router: {A}", "r"),
    ("nl-sv", "lösenordet till wifi:t är {A}", "w"),
    ("nl-sv", "portkoden är {A} om du kommer efter sex", "p4"),
    ("nl-no", "passordet til serveren er {A}", "h"),
    ("nl-da", "adgangskoden til admin-panelet er {A}", "r"),
    ("nl-fi", "salasanani on {A}, älä kerro kenellekään", "h"),
    ("nl-fi", "kirjaudu sisään salasanalla {A} ja vaihda se heti", "r"),
    ("nl-fi", "ovikoodi on {A}", "p"),
    ("nl-pl", "hasło do bazy to {A}", "h"),
    ("nl-pl", "zaloguj się hasłem {A} i zmień je od razu", "r"),
    ("nl-pl", "kod do drzwi serwerowni: {A}", "p"),
    ("nl-cs", "heslo k wifině je {A}", "w"),
    ("nl-cs", "přihlas se heslem „{A}“", "h"),
    ("nl-hu", "a jelszavam {A}, ha kell", "h"),
    ("nl-hu", "a PIN-kód: {A}", "p6"),
    ("nl-ro", "parola de la wifi e {A}", "w"),
    ("nl-tr", "şifrem {A}, giriş yapıp bakar mısın?", "h"),
    ("nl-tr", "sunucunun şifresi: {A}", "r"),
    ("nl-el", "ο κωδικός πρόσβασης είναι {A}", "h"),
    ("nl-ru", "пароль от вайфая: {A}", "w"),
    ("nl-ru", "скинь пасс от админки? — держи: {A}", "r"),
    ("nl-ru", "пин-код от карты {A}, только не потеряй", "p4"),
    ("nl-ru", "кодовое слово для банка — «{A}»", "h"),
    ("nl-uk", "пароль до сервера: {A}", "h"),
    ("nl-uk", "код від дверей {A}", "p"),
    ("nl-bg", "паролата за пощата е {A}", "h"),
    ("nl-sr", "лозинка за рутер је {A}", "r"),
    ("nl-hr", "šifra za wifi je {A}", "w"),
    ("nl-sl", "geslo za strežnik je {A}", "h"),
    ("nl-lt", "mano slaptažodis yra {A}", "r"),
    ("nl-lv", "parole serverim ir {A}", "h"),
    ("nl-et", "wifi parool on {A}", "w"),
    ("nl-is", "lykilorðið er {A}", "h"),
    ("nl-ca", "la contrasenya del correu és {A}", "h"),
    ("nl-af", "die wagwoord is {A}", "r"),
    ("nl-ar", "كلمة المرور الجديدة هي {A}", "h"),
    ("nl-ar", "الباسورد بتاع الواي فاي {A}", "w"),
    ("nl-ar", "الرقم السري للبطاقة {A}", "p4"),
    ("nl-he", "הסיסמה לשרת היא {A}", "h"),
    ("nl-he", "הקוד לדלת: {A}", "p"),
    ("nl-fa", "رمز عبور وای‌فای: {A}", "w"),
    ("nl-fa", "پسوردم {A} هست", "h"),
    ("nl-hi", "सर्वर का पासवर्ड {A} है", "h"),
    ("nl-hi", "मेरा एटीएम पिन {A} है", "p4"),
    ("nl-bn", "ওয়াইফাই পাসওয়ার্ড হল {A}", "w"),
    ("nl-ur", "میرا پاس ورڈ {A} ہے", "h"),
    ("nl-ta", "புதிய கடவுச்சொல் {A}", "r"),
    ("nl-th", "รหัสผ่านคือ {A} นะ", "h"),
    ("nl-th", "รหัสไวไฟ {A} ครับ", "w"),
    ("nl-vi", "mật khẩu mới là {A}", "h"),
    ("nl-vi", "mk wifi: {A}", "w"),
    ("nl-vi", "mã PIN thẻ là {A}", "p4"),
    ("nl-id", "passwordnya {A} ya, jangan disebar", "h"),
    ("nl-id", "PIN-nya {A}", "p6"),
    ("nl-id", "kata sandi admin: {A}", "r"),
    ("nl-ms", "kata laluan untuk akaun ujian ialah {A}", "h"),
    ("nl-tl", "yung password ko ay {A}, pakipalitan mo na lang", "h"),
    ("nl-sw", "nenosiri ni {A}", "r"),
    ("nl-zh", "数据库密码是{A}，别外传", "h"),
    ("nl-zh", "支付密码：{A}", "p6"),
    ("nl-zh", "WiFi密码【{A}】", "w"),
    ("nl-zh", "口令改成了「{A}」", "r"),
    ("nl-zh-hant", "管理員密碼：{A}", "h"),
    ("nl-yue", "部機個密碼係{A}", "h"),
    ("nl-ja", "パスワードは「{A}」です", "h"),
    ("nl-ja", "暗証番号は{A}でお願いします", "p4"),
    ("nl-ja", "パスは {A} ね", "r"),
    ("nl-ko", "비밀번호는 {A}입니다", "h"),
    ("nl-ko", "비번 {A}임", "r"),
    ("nl-ko", "공동현관 비밀번호는 {A}", "p"),
    ("nl-ka", "ახალი პაროლია {A}", "h"),
    ("nl-hy", "գաղտնաբառը {A} է", "h"),
    ("nl-am", "የይለፍ ቃሉ {A} ነው", "r"),
    ("nl-hi-latn", "bhai wifi ka password {A} hai", "w"),
    ("nl-ar-latn", "el password beta3 el server {A}", "h"),
    ("nl-ja-latn", "pasuwaado wa {A} desu", "r"),
    ("nl-zh-latn", "mima shi {A}, bie gaosu bieren", "h"),
    ("nl-ru-latn", "parol ot admina {A}", "h"),
    ("nl-mixed", "kannst du mal checken? das pw for the staging box is {A} i think", "h"),
    ("nl-mixed", "el password del staging es {A}, lo cambié yesterday", "r"),
    ("nl-mixed", "staging的password是{A}", "h"),
]


def gen_nl():
    for i, (fam, t, kinds) in enumerate(NL):
        vals = [val(k) for k in kinds.split(",")]
        kw = {"AB"[j]: v for j, v in enumerate(vals)}
        add("1-natural-language", "secret", fam, "nl%d" % i, fill(t, **kw), vals)


gen_nl()


# ================================================================ 2. VENDOR TOKENS
def t_discord_bot():
    uid = str(R.randint(10 ** 17, 10 ** 18 - 1))
    return b64(uid.encode()).rstrip("=") + "." + rs(B64U, 6) + "." + rs(B64U, 38)


# (family, display name, env var, generator)
TOKENS = [
    ("github-pat", "GitHub", "GITHUB_TOKEN", lambda: "ghp_" + rs(AN, 36)),
    ("github-fine-grained", "GitHub", "GH_PAT", lambda: "github_pat_" + rs(AN, 22) + "_" + rs(AN, 59)),
    ("gitlab-pat", "GitLab", "GITLAB_TOKEN", lambda: "glpat-" + rs(B64U, 20)),
    ("slack-bot", "Slack", "SLACK_BOT_TOKEN", lambda: "xoxb-" + rs(DIG, 11) + "-" + rs(DIG, 13) + "-" + rs(AN, 24)),
    ("slack-user", "Slack", "SLACK_USER_TOKEN", lambda: "xoxp-" + rs(DIG, 11) + "-" + rs(DIG, 11) + "-" + rs(DIG, 13) + "-" + rs(HEX, 32)),
    ("slack-app", "Slack", "SLACK_APP_TOKEN", lambda: "xapp-1-A" + rs(UP + DIG, 10) + "-" + rs(DIG, 13) + "-" + rs(HEX, 64)),
    ("stripe-secret", "Stripe", "STRIPE_SECRET_KEY", lambda: "sk_live_51" + rs(AN, 97)),
    ("stripe-restricted", "Stripe", "STRIPE_RESTRICTED_KEY", lambda: "rk_live_51" + rs(AN, 97)),
    ("sendgrid", "SendGrid", "SENDGRID_API_KEY", lambda: "SG." + rs(B64U, 22) + "." + rs(B64U, 43)),
    ("mailgun", "Mailgun", "MAILGUN_API_KEY", lambda: "key-" + rs(HEX, 32)),
    ("mailchimp", "Mailchimp", "MAILCHIMP_API_KEY", lambda: rs(HEX, 32) + "-us" + str(R.randint(10, 21))),
    ("openai", "OpenAI", "OPENAI_API_KEY", lambda: "sk-proj-" + rs(B64U, 74) + "T3BlbkFJ" + rs(B64U, 74)),
    ("anthropic", "Anthropic", "ANTHROPIC_API_KEY", lambda: "sk-ant-api03-" + rs(B64U, 93) + "AA"),
    ("anthropic-admin", "Anthropic", "ANTHROPIC_ADMIN_KEY", lambda: "sk-ant-admin01-" + rs(B64U, 93) + "AA"),
    ("huggingface", "Hugging Face", "HF_TOKEN", lambda: "hf_" + rs(string.ascii_letters, 34)),
    ("npm", "npm", "NPM_TOKEN", lambda: "npm_" + rs(AN, 36)),
    ("pypi", "PyPI", "TWINE_PASSWORD", lambda: "pypi-AgEIcHlwaS5vcmc" + rs(B64U, 140)),
    ("shopify", "Shopify", "SHOPIFY_ACCESS_TOKEN", lambda: "shpat_" + rs(HEX, 32)),
    ("databricks", "Databricks", "DATABRICKS_TOKEN", lambda: "dapi" + rs(HEX, 32)),
    ("digitalocean", "DigitalOcean", "DIGITALOCEAN_TOKEN", lambda: "dop_v1_" + rs(HEX, 64)),
    ("doppler", "Doppler", "DOPPLER_TOKEN", lambda: "dp.pt." + rs(AN, 43)),
    ("pulumi", "Pulumi", "PULUMI_ACCESS_TOKEN", lambda: "pul-" + rs(HEX, 40)),
    ("postman", "Postman", "POSTMAN_API_KEY", lambda: "PMAK-" + rs(HEX, 24) + "-" + rs(HEX, 34)),
    ("grafana-sa", "Grafana", "GRAFANA_SA_TOKEN", lambda: "glsa_" + rs(AN, 32) + "_" + rs(HEX, 8)),
    ("linear", "Linear", "LINEAR_API_KEY", lambda: "lin_api_" + rs(AN, 40)),
    ("figma", "Figma", "FIGMA_TOKEN", lambda: "figd_" + rs(B64U, 40)),
    ("notion", "Notion", "NOTION_TOKEN", lambda: "ntn_" + rs(DIG, 11) + rs(AN, 35)),
    ("vault", "Vault", "VAULT_TOKEN", lambda: "hvs." + rs(B64U, 91)),
    ("terraform-cloud", "Terraform Cloud", "TFE_TOKEN", lambda: rs(LOW + DIG, 14) + ".atlasv1." + rs(LOW + DIG + "-_=", 67)),
    ("google-api", "Google Maps", "GOOGLE_MAPS_API_KEY", lambda: "AIza" + rs(B64U, 35)),
    ("gcp-oauth-secret", "Google OAuth", "GOOGLE_CLIENT_SECRET", lambda: "GOCSPX-" + rs(B64U, 28)),
    ("okta", "Okta", "OKTA_API_TOKEN", lambda: "00" + rs(B64U, 40)),
    ("square", "Square", "SQUARE_ACCESS_TOKEN", lambda: "EAAA" + rs(B64U, 60)),
    ("planetscale", "PlanetScale", "PLANETSCALE_TOKEN", lambda: "pscale_tkn_" + rs(B64U, 43)),
    ("supabase", "Supabase", "SUPABASE_ACCESS_TOKEN", lambda: "sbp_" + rs(HEX, 40)),
    ("dynatrace", "Dynatrace", "DT_API_TOKEN", lambda: "dt0c01." + rs(UP + DIG, 24) + "." + rs(UP + DIG, 64)),
    ("newrelic", "New Relic", "NEW_RELIC_API_KEY", lambda: "NRAK-" + rs(UP + DIG, 27)),
    ("buildkite", "Buildkite", "BUILDKITE_API_TOKEN", lambda: "bkua_" + rs(HEX, 40)),
    ("contentful", "Contentful", "CONTENTFUL_MANAGEMENT_TOKEN", lambda: "CFPAT-" + rs(B64U, 43)),
    ("clojars", "Clojars", "CLOJARS_PASSWORD", lambda: "CLOJARS_" + rs(LOW + DIG, 60)),
    ("rubygems", "RubyGems", "GEM_HOST_API_KEY", lambda: "rubygems_" + rs(HEX, 48)),
    ("flutterwave", "Flutterwave", "FLW_SECRET_KEY", lambda: "FLWSECK_TEST-" + rs(HEX, 32) + "-X"),
    ("prefect", "Prefect", "PREFECT_API_KEY", lambda: "pnu_" + rs(AN, 36)),
    ("readme", "ReadMe", "README_API_KEY", lambda: "rdme_" + rs(LOW + DIG, 70)),
    ("easypost", "EasyPost", "EASYPOST_API_KEY", lambda: "EZAK" + rs(AN, 54)),
    ("duffel", "Duffel", "DUFFEL_ACCESS_TOKEN", lambda: "duffel_live_" + rs(B64U, 43)),
    ("typeform", "Typeform", "TYPEFORM_TOKEN", lambda: "tfp_" + rs(LOW + DIG + "-_", 59)),
    ("shippo", "Shippo", "SHIPPO_API_KEY", lambda: "shippo_live_" + rs(HEX, 40)),
    ("infracost", "Infracost", "INFRACOST_API_KEY", lambda: "ico-" + rs(AN, 32)),
    ("harness", "Harness", "HARNESS_PAT", lambda: "pat." + rs(B64U, 22) + "." + rs(HEX, 24) + "." + rs(AN, 20)),
    ("mapbox-secret", "Mapbox", "MAPBOX_SECRET_TOKEN", lambda: "sk.eyJ1Ijoi" + rs(AN, 50) + "." + rs(B64U, 22)),
    ("airtable", "Airtable", "AIRTABLE_PAT", lambda: "pat" + rs(AN, 14) + "." + rs(HEX, 64)),
    ("groq", "Groq", "GROQ_API_KEY", lambda: "gsk_" + rs(AN, 52)),
    ("replicate", "Replicate", "REPLICATE_API_TOKEN", lambda: "r8_" + rs(AN, 37)),
    ("perplexity", "Perplexity", "PPLX_API_KEY", lambda: "pplx-" + rs(AN, 48)),
    ("xai", "xAI", "XAI_API_KEY", lambda: "xai-" + rs(AN, 80)),
    ("langsmith", "LangSmith", "LANGSMITH_API_KEY", lambda: "lsv2_pt_" + rs(HEX, 32) + "_" + rs(HEX, 10)),
    ("tailscale", "Tailscale", "TS_AUTHKEY", lambda: "tskey-auth-k" + rs(AN, 10) + "CNTRL-" + rs(AN, 32)),
    ("dockerhub", "Docker Hub", "DOCKERHUB_TOKEN", lambda: "dckr_pat_" + rs(B64U, 27)),
    ("sentry-user", "Sentry", "SENTRY_AUTH_TOKEN", lambda: "sntryu_" + rs(HEX, 64)),
    ("jfrog", "JFrog", "JFROG_ACCESS_TOKEN", lambda: "cmVmdGtuOjAxOjE3" + rs(AN, 48)),
    ("discord-bot", "Discord", "DISCORD_BOT_TOKEN", t_discord_bot),
    ("twitter-bearer", "X/Twitter", "TWITTER_BEARER_TOKEN",
     lambda: "A" * 22 + rs(AN, 18) + "%2B" + rs(AN, 20) + "%3D" + rs(AN, 50)),
    ("facebook", "Facebook", "FB_ACCESS_TOKEN", lambda: "EAACEdEose0cBA" + rs(AN, 140)),
    ("age", "age", "SOPS_AGE_KEY", lambda: "AGE-SECRET-KEY-1" + rs(BECH.upper(), 58)),
    ("1password-sa", "1Password", "OP_SERVICE_ACCOUNT_TOKEN", lambda: "ops_eyJzaWduSW5BZGRyZXNzIjoi" + rs(B64, 250)),
    ("cloudflare-token", "Cloudflare", "CLOUDFLARE_API_TOKEN", lambda: rs(B64U, 40)),
    ("fcm-legacy", "Firebase", "FCM_SERVER_KEY", lambda: "AAAA" + rs(B64U, 7) + ":APA91b" + rs(B64U, 134)),
]

CTX = [
    "# production\n{VAR}={T}\nLOG_LEVEL=info",
    'export {VAR}="{T}"',
    '{\n  "{var}": "{T}",\n  "timeout_ms": 5000\n}',
    "{name_l}:\n  {var}: {T}\n  retries: 3",
    'curl -s -H "Authorization: Bearer {T}" -H "Accept: application/json" https://api.example.com/v1/me',
    "here's my {name} token, can you check why the API returns 403? {T}",
    '{var} = "{T}"  # TODO move to settings',
    '[{name_l}]\ntoken = "{T}"',
    "docker run --rm -e {VAR}={T} ghcr.io/acme/worker:latest",
    "jobs:\n  deploy:\n    runs-on: ubuntu-latest\n    env:\n      {VAR}: {T}",
    "voici le token {name} pour la démo : {T}",
    '$env:{VAR} = "{T}"',
    "const {camel} = '{T}';",
    "@@BASH@@",
    "Set `{VAR}` to `{T}` before running the tests.",
    "X-API-Key: {T}",
    '        - name: {VAR}\n          value: "{T}"',
    "{name}的令牌：{T}，先用着",
    "{prop}={T}",
    "{name}-Token für die CI, bitte in die Pipeline-Variablen eintragen: {T}",
    "set {VAR}={T}\r\npython sync.py",
    'fetch(url, { headers: { Authorization: `token {T}` } })',
    "echo {T} > ~/.config/{name_l}/token && chmod 600 ~/.config/{name_l}/token",
    "トークンはこれです → {T}",
]


def camel(var):
    parts = var.lower().split("_")
    return parts[0] + "".join(p.capitalize() for p in parts[1:])


def gen_tokens():
    order = list(range(len(TOKENS)))
    for n, i in enumerate(order):
        fam, name, var, gen = TOKENS[i]
        tok = fresh(gen)
        ci = n % len(CTX)
        c = CTX[ci]
        if c == "@@BASH@@":
            text = json.dumps({"name": "Bash", "input": {
                "command": "%s=%s ./scripts/sync.sh --dry-run" % (var, tok),
                "description": "Run sync script with %s token" % name}}, ensure_ascii=False)
        else:
            name_l = name.lower().replace(" ", "").replace("/", "")
            text = fill(c, VAR=var, var=var.lower(), T=tok, name=name, name_l=name_l,
                        camel=camel(var), prop=name_l + ".api.token")
        add("2-vendor-tokens", "secret", "tok-" + fam, "tokctx%d" % ci, text, [tok])


gen_tokens()


def gen_token_specials():
    S = "2-vendor-tokens"
    akid = fresh(lambda: "AKIA" + rs(B32U, 16))
    sak = fresh(lambda: rs(B64, 40))
    add(S, "secret", "tok-aws", "tok-aws",
        "[default]\naws_access_key_id = %s\naws_secret_access_key = %s\nregion = eu-central-1" % (akid, sak), [akid, sak])
    hook = fresh(lambda: "T" + rs(UP + DIG, 9) + "/B" + rs(UP + DIG, 10) + "/" + rs(AN, 24))
    add(S, "secret", "tok-slack-webhook", "tok-slackhook",
        'curl -X POST -H \'Content-type: application/json\' --data \'{"text":"deploy done"}\' https://hooks.slack.com/services/' + hook,
        [hook])
    dh = fresh(lambda: rs(DIG, 19) + "/" + rs(B64U, 68))
    add(S, "secret", "tok-discord-webhook", "tok-dischook",
        "DISCORD_WEBHOOK_URL=https://discord.com/api/webhooks/" + dh, [dh])
    tg = fresh(lambda: str(R.randint(10 ** 9, 8 * 10 ** 9)) + ":AA" + rs(B64U, 33))
    add(S, "secret", "tok-telegram", "tok-telegram",
        "requests.post(f\"https://api.telegram.org/bot%s/sendMessage\", json={\"chat_id\": chat_id, \"text\": msg})" % tg, [tg])
    ak = fresh(lambda: b64(R.randbytes(64)))
    add(S, "secret", "tok-azure-storage", "tok-azstorage",
        "DefaultEndpointsProtocol=https;AccountName=acmelogs%d;AccountKey=%s;EndpointSuffix=core.windows.net" % (R.randint(1, 99), ak), [ak])
    ghs = fresh(lambda: "ghs_" + rs(AN, 36))
    add(S, "secret", "tok-github-app", "tok-ghs",
        "git remote set-url origin https://x-access-token:%s@github.com/acme/infra.git" % ghs, [ghs])
    glrt = fresh(lambda: "glrt-" + rs(B64U, 20))
    add(S, "secret", "tok-gitlab-runner", "tok-glrt",
        'concurrent = 4\n\n[[runners]]\n  name = "build-01"\n  url = "https://gitlab.com/"\n  token = "%s"\n  executor = "docker"' % glrt, [glrt])
    cfk = fresh(lambda: rs(HEX, 37))
    add(S, "secret", "tok-cloudflare-global", "tok-cfglobal",
        'curl -s "https://api.cloudflare.com/client/v4/zones" -H "X-Auth-Email: ops@example.com" -H "X-Auth-Key: %s"' % cfk, [cfk])
    alg = fresh(lambda: rs(HEX, 32))
    add(S, "secret", "tok-algolia", "tok-algolia",
        "ALGOLIA_APP_ID=%s\nALGOLIA_ADMIN_API_KEY=%s" % (rs(UP + DIG, 10), alg), [alg])
    kg = fresh(lambda: rs(HEX, 32))
    add(S, "secret", "tok-kaggle", "tok-kaggle",
        '$ cat ~/.kaggle/kaggle.json\n{"username":"%s","key":"%s"}' % (R.choice(["jdoe", "mlteam", "ana_r"]), kg), [kg])
    ng = fresh(lambda: "2" + rs(AN, 26) + "_" + rs(AN, 21))
    add(S, "secret", "tok-ngrok", "tok-ngrok", "ngrok config add-authtoken " + ng, [ng])
    tsid = "SK" + rs(HEX, 32)
    tsec = fresh(lambda: rs(AN, 32))
    tsk = fresh(lambda: tsid)
    add(S, "secret", "tok-twilio", "tok-twilio",
        "TWILIO_ACCOUNT_SID=AC%s\nTWILIO_API_KEY=%s\nTWILIO_API_SECRET=%s" % (rs(HEX, 32), tsk, tsec), [tsk, tsec])
    lt = fresh(lambda: "LTAI" + rs(AN, 20))
    ls = fresh(lambda: rs(AN, 30))
    add(S, "secret", "tok-alibaba", "tok-alibaba",
        "aliyun configure set --profile prod --mode AK --region cn-hangzhou --access-key-id %s --access-key-secret %s" % (lt, ls), [lt, ls])
    fly = fresh(lambda: "fm2_" + rs(B64, 180))
    add(S, "secret", "tok-flyio", "tok-fly", "FLY_API_TOKEN=\"FlyV1 %s\"" % fly, [fly])
    sq = fresh(lambda: "sq0csp-" + rs(B64U, 43))
    add(S, "secret", "tok-square-oauth", "tok-sq0csp",
        "square:\n  application_id: sq0idp-%s\n  application_secret: %s" % (rs(B64U, 22), sq), [sq])


gen_token_specials()


# ================================================================ 3. SOURCE / CONFIG / CLI
CFG = [
    ("cfg-sql-postgres", "CREATE USER app_rw WITH PASSWORD '{A}';\nGRANT CONNECT ON DATABASE orders TO app_rw;", "r"),
    ("cfg-sql-mysql", "ALTER USER 'root'@'localhost' IDENTIFIED BY '{A}';\nFLUSH PRIVILEGES;", "r"),
    ("cfg-sql-mysql", "GRANT ALL PRIVILEGES ON shop.* TO 'shop'@'%' IDENTIFIED BY '{A}';", "h"),
    ("cfg-sql-oracle", 'CREATE USER reporting IDENTIFIED BY "{A}" DEFAULT TABLESPACE users QUOTA 50M ON users;', "u"),
    ("cfg-sql-oracle", "SQL> CONNECT system/{A}@//db01.corp:1521/ORCLPDB1\nConnected.", "a"),
    ("cfg-sql-mssql", "CREATE LOGIN etl_svc WITH PASSWORD = N'{A}', CHECK_POLICY = OFF;\nGO", "r"),
    ("cfg-sql-snowflake", "ALTER USER loader SET PASSWORD = '{A}' MUST_CHANGE_PASSWORD = FALSE;", "h"),
    ("cfg-sql-postgres", "ALTER ROLE replicator WITH LOGIN REPLICATION PASSWORD '{A}';", "u"),
    ("cfg-adonet", '"ConnectionStrings": {\n  "Default": "Server=tcp:sql-prod.database.windows.net,1433;Initial Catalog=crm;User ID=crmapp;Password={A};Encrypt=True;"\n}', "u"),
    ("cfg-jdbc", "spring.datasource.url=jdbc:postgresql://db:5432/app\nspring.datasource.username=app\nspring.datasource.password={A}", "r"),
    ("cfg-jdbc", "jdbc:mysql://db.internal:3306/shop?user=shop&password={A}&useSSL=true", "u"),
    ("cfg-odbc", "DRIVER={ODBC Driver 18 for SQL Server};SERVER=10.1.2.3;DATABASE=hr;UID=hr_ro;PWD={A};TrustServerCertificate=yes", "u"),
    ("cfg-libpq", 'psql "host=pg.internal port=5432 dbname=metrics user=grafana password={A} sslmode=require"', "u"),
    ("cfg-pgpass", "$ cat ~/.pgpass\npg.internal:5432:*:replicator:{A}", "u"),
    ("cfg-mongo", "MONGO_URI=mongodb://admin:{A}@mongo-0.mongo:27017,mongo-1.mongo:27017/?replicaSet=rs0&authSource=admin", "u"),
    ("cfg-redis", "redis-cli -h cache.internal -a '{A}' --no-auth-warning PING", "r"),
    ("cfg-amqp", 'CELERY_BROKER_URL = "amqp://celery:{A}@rabbitmq:5672/prod"', "u"),
    ("cfg-docker", "docker run -d --name pg -e POSTGRES_PASSWORD={A} -p 5432:5432 postgres:16", "u"),
    ("cfg-compose", 'services:\n  db:\n    image: mariadb:11\n    environment:\n      MARIADB_ROOT_PASSWORD: "{A}"\n      MARIADB_PASSWORD: {B}', "r,a"),
    ("cfg-k8s", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: api-creds\ntype: Opaque\nstringData:\n  username: api\n  password: {A}", "a"),
    ("cfg-k8s", "@@K8SB64@@", ""),
    ("cfg-helm", "helm upgrade --install redis bitnami/redis --set auth.password={A} -n cache", "u"),
    ("cfg-terraform", 'resource "aws_db_instance" "main" {\n  engine   = "postgres"\n  username = "dbadmin"\n  password = "{A}"\n}', "r"),
    ("cfg-ansible", "- name: create db user\n  community.mysql.mysql_user:\n    name: wp\n    password: \"{A}\"\n    priv: 'wp.*:ALL'", "r"),
    ("cfg-puppet", "postgresql::server::db { 'inventory':\n  user     => 'inventory',\n  password => postgresql::postgresql_password('inventory', '{A}'),\n}", "h"),
    ("cfg-chef", "node.default['mysql']['server_root_password'] = '{A}'", "r"),
    ("cfg-salt", "mysql:\n  server:\n    root_password: '{A}'", "h"),
    ("cfg-systemd", "[Service]\nEnvironment=\"DB_PASS={A}\"\nExecStart=/usr/local/bin/worker --queue default", "u"),
    ("cfg-htpasswd", "sudo htpasswd -b -c /etc/nginx/.htpasswd admin '{A}'", "r"),
    ("cfg-apache", "@@APACHEB64@@", ""),
    ("cfg-npmrc", "@@NPMRC@@", ""),
    ("cfg-pypirc", "[distutils]\nindex-servers = internal\n\n[internal]\nrepository = https://pypi.corp.example/simple\nusername = builder\npassword = {A}", "r"),
    ("cfg-netrc", "machine ftp.example.org\n  login mirror\n  password {A}", "a"),
    ("cfg-git-credentials", "$ cat ~/.git-credentials\nhttps://jdoe:{A}@git.internal.example.com", "u"),
    ("cfg-maven", "<server>\n  <id>nexus-releases</id>\n  <username>deployer</username>\n  <password>{A}</password>\n</server>", "r"),
    ("cfg-nuget", '<packageSourceCredentials>\n  <corp>\n    <add key="Username" value="build" />\n    <add key="ClearTextPassword" value="{A}" />\n  </corp>\n</packageSourceCredentials>', "u"),
    ("cfg-powershell", "$secure = ConvertTo-SecureString '{A}' -AsPlainText -Force\n$cred = New-Object System.Management.Automation.PSCredential('CORP\\svc_backup', $secure)", "r"),
    ("cfg-cmd", "net user svc_sql {A} /add && net localgroup administrators svc_sql /add", "a"),
    ("cfg-cmd", "cmdkey /add:fileserver01 /user:CORP\\jdoe /pass:{A}", "u"),
    ("cfg-bash", "export PGPASSWORD='{A}' && pg_dump -h db -U app app > dump.sql && unset PGPASSWORD", "r"),
    ("cfg-bash", "echo '{A}' | sudo -S systemctl restart nginx", "h"),
    ("cfg-bash", "sshpass -p '{A}' ssh deploy@10.0.0.12 'sudo reboot'", "r"),
    ("cfg-bash", "mysql -u root -p{A} -e 'SHOW DATABASES;'", "a"),
    ("cfg-bash", "curl -u admin:{A} https://jenkins.internal/api/json?pretty=true", "u"),
    ("cfg-python", 'conn = psycopg2.connect(host="db", dbname="app", user="app", password="{A}")', "r"),
    ("cfg-js", "const client = new Client({ user: 'svc', password: '{A}', host: 'db', database: 'app' });", "r"),
    ("cfg-go", 'db, err := sql.Open("mysql", "app:{A}@tcp(127.0.0.1:3306)/shop?parseTime=true")', "u"),
    ("cfg-java", 'private static final String DB_PASSWORD = "{A}";', "h"),
    ("cfg-csharp", 'var cred = new NetworkCredential("svc_mail", "{A}");', "r"),
    ("cfg-ruby", "redis = Redis.new(host: 'cache', port: 6379, password: '{A}')", "r"),
    ("cfg-php", "$pdo = new PDO('mysql:host=localhost;dbname=blog', 'blog', '{A}');", "r"),
    ("cfg-php", "define( 'DB_PASSWORD', '{A}' );", "h"),
    ("cfg-rust", 'let pool = PgPool::connect("postgres://app:{A}@localhost/app").await?;', "u"),
    ("cfg-kotlin", 'val props = Properties().apply { put("user", "app"); put("password", "{A}") }', "r"),
    ("cfg-swift", 'let adminPassword = "{A}" // TODO: move to Keychain', "h"),
    ("cfg-elixir", 'config :my_app, MyApp.Repo,\n  username: "postgres",\n  password: "{A}",\n  hostname: "localhost"', "r"),
    ("cfg-perl", "my $dbh = DBI->connect('dbi:Pg:dbname=app;host=db', 'app', '{A}', { RaiseError => 1 });", "r"),
    ("cfg-r", 'con <- dbConnect(RPostgres::Postgres(), dbname = "dw", user = "analyst", password = "{A}")', "r"),
    ("cfg-toolcall", "@@TC_BASH@@", ""),
    ("cfg-toolcall", "@@TC_EDIT@@", ""),
    ("cfg-toolcall", "@@TC_WRITE@@", ""),
    ("cfg-wireguard", "[Interface]\nPrivateKey = {A}\nAddress = 10.8.0.1/24\nListenPort = 51820", "b44"),
    ("cfg-pem", "@@ECPEM@@", ""),
    ("cfg-keytool", "keytool -genkeypair -alias app -keyalg RSA -keystore app.p12 -storetype PKCS12 -storepass {A} -keypass {A}", "a"),
    ("cfg-openssl", "openssl pkcs12 -export -in cert.pem -inkey key.pem -out bundle.p12 -passout pass:{A}", "u"),
    ("cfg-cifs", "mount -t cifs //nas/share /mnt/share -o username=backup,password={A},vers=3.0", "u"),
    ("cfg-cifs", "# /etc/samba/creds-backup\nusername=backup\npassword={A}\ndomain=CORP", "r"),
    ("cfg-ldap", "ldapsearch -x -H ldaps://ldap.corp -D 'cn=admin,dc=corp,dc=local' -w '{A}' -b 'dc=corp,dc=local' '(uid=jdoe)'", "r"),
    ("cfg-wpa", 'network={\n    ssid="Office-5G"\n    psk="{A}"\n    key_mgmt=WPA-PSK\n}', "h"),
    ("cfg-redis-conf", "bind 0.0.0.0\nport 6379\nrequirepass {A}\nmaxmemory 2gb", "a"),
    ("cfg-dockerfile", "FROM python:3.12-slim\nENV ADMIN_PASSWORD={A}\nCOPY . /app\nCMD [\"gunicorn\", \"app:app\"]", "u"),
]


def ec_pem_lines():
    der = (bytes.fromhex("30770201010420") + R.randbytes(32) + bytes.fromhex("a00a06082a8648ce3d030107a144034200")
           + b"\x04" + R.randbytes(64))
    s = b64(der)
    return [s[i:i + 64] for i in range(0, len(s), 64)]


def gen_cfg():
    S = "3-source-config-cli"
    for i, (fam, t, kinds) in enumerate(CFG):
        tid = "cfg%d" % i
        if t == "@@K8SB64@@":
            pw = val("r")
            enc = fresh(lambda: b64(pw.encode()))
            add(S, "secret", fam, tid, "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db-credentials\ntype: Opaque\ndata:\n  username: %s\n  password: %s" % (b64(b"app"), enc), [enc])
        elif t == "@@APACHEB64@@":
            pw = val("u")
            enc = fresh(lambda: b64(("svc_proxy:" + pw).encode()))
            add(S, "secret", fam, tid, '<Location "/api">\n  ProxyPass "http://backend:8080/"\n  RequestHeader set Authorization "Basic %s"\n</Location>' % enc, [enc])
        elif t == "@@NPMRC@@":
            pw = val("a")
            enc = fresh(lambda: b64(("ci-publisher:" + pw).encode()))
            add(S, "secret", fam, tid, "registry=https://nexus.corp.example/repository/npm-group/\n_auth=%s\nalways-auth=true" % enc, [enc])
        elif t == "@@TC_BASH@@":
            pw = val("u")
            add(S, "secret", fam, tid, json.dumps({"type": "tool_use", "name": "Bash", "input": {
                "command": "PGPASSWORD=%s psql -h localhost -U postgres -c '\\l' && echo done" % pw,
                "description": "List databases"}}), [pw])
        elif t == "@@TC_EDIT@@":
            pw = val("r")
            add(S, "secret", fam, tid, json.dumps({"type": "tool_use", "name": "Edit", "input": {
                "file_path": "/srv/app/.env", "old_string": "SMTP_PASSWORD=", "new_string": "SMTP_PASSWORD=" + pw}}), [pw])
        elif t == "@@TC_WRITE@@":
            pw = val("h")
            add(S, "secret", fam, tid, json.dumps({"type": "tool_use", "name": "Write", "input": {
                "file_path": "/srv/app/config/database.yml",
                "content": "production:\n  adapter: postgresql\n  username: app\n  password: %s\n  host: db\n" % pw}}), [pw])
        elif t == "@@ECPEM@@":
            lines = [fresh(lambda l=l: l) for l in ec_pem_lines()]
            add(S, "secret", fam, tid, "$ cat certs/server.key\n-----BEGIN EC PRIVATE KEY-----\n%s\n-----END EC PRIVATE KEY-----" % "\n".join(lines), lines)
        else:
            vals = [val(k) for k in kinds.split(",")]
            kw = {"AB"[j]: v for j, v in enumerate(vals)}
            add(S, "secret", fam, tid, fill(t, **kw), vals)


gen_cfg()


# ================================================================ 4. TOOL OUTPUT
def jwt_es256(sub):
    h = b64u(json.dumps({"alg": "ES256", "kid": rs(B64U, 12)}, separators=(",", ":")).encode())
    p = b64u(json.dumps({"iss": "kubernetes/serviceaccount", "sub": sub, "exp": R.randint(1735000000, 1760000000)},
                        separators=(",", ":")).encode())
    return h + "." + p + "." + rs(B64U, 86)


def mysql_tmp():
    return R.choice(AN) + "".join(R.choice(AN + "#+,;:<>?%_-=!*&^") for _ in range(10)) + R.choice(AN)


def gen_output():
    S = "4-tool-output"

    def A(fam, tid, text, secrets):
        add(S, "secret", "out-" + fam, "out-" + tid, text, secrets)

    v = fresh(lambda: rs(HEX, 32))
    A("jenkins", "jenkins", "*************************************************************\n\nJenkins initial setup is required. An admin user has been created and a password generated.\nPlease use the following password to proceed to installation:\n\n%s\n\nThis may also be found at: /var/jenkins_home/secrets/initialAdminPassword\n\n*************************************************************" % v, [v])
    v = fresh(mysql_tmp)
    A("mysql", "mysql", "2024-03-11T09:14:22.118311Z 6 [Note] [MY-010454] [Server] A temporary password is generated for root@localhost: %s" % v, [v])
    v = fresh(lambda: rs(AN + "*_=+-", 20))
    A("elasticsearch", "es", "✅ Elasticsearch security features have been automatically configured!\n✅ Authentication is enabled and cluster connections are encrypted.\n\nℹ️  Password for the elastic user (reset with `bin/elasticsearch-reset-password -u elastic`):\n  %s\n" % v, [v])
    v = fresh(lambda: rs(AN + "-_", 16))
    A("argocd", "argocd", "$ argocd admin initial-password -n argocd\n%s\n\n This password must be only used for first time login. We strongly recommend you update the password using `argocd account update-password`." % v, [v])
    v = fresh(lambda: b64(R.randbytes(32)))
    A("gitlab", "gitlab", "$ sudo cat /etc/gitlab/initial_root_password\n# WARNING: This value is valid only in the following conditions\n#          1. If provided manually (either via `GITLAB_ROOT_PASSWORD` environment variable or via `gitlab_rails['initial_root_password']` setting in `gitlab.rb`, it was provided before database was seeded for the first time (usually, the first reconfigure run).\n\nPassword: %s" % v, [v])
    v = fresh(lambda: jwt_es256("system:serviceaccount:kubernetes-dashboard:admin-user"))
    A("k8s-token", "k8stoken", "$ kubectl -n kubernetes-dashboard create token admin-user\n" + v, [v])
    v = fresh(lambda: "K10" + rs(HEX, 64) + "::server:" + rs(HEX, 32))
    A("k3s", "k3s", "$ sudo cat /var/lib/rancher/k3s/server/node-token\n" + v, [v])
    v = fresh(lambda: rs(LOW + DIG, 6) + "." + rs(LOW + DIG, 16))
    A("kubeadm", "kubeadm", "Then you can join any number of worker nodes by running the following on each as root:\n\nkubeadm join 10.0.0.10:6443 --token %s \\\n\t--discovery-token-ca-cert-hash sha256:%s" % (v, rs(HEX, 64)), [v])
    v = fresh(lambda: "SWMTKN-1-" + rs(LOW + DIG, 50) + "-" + rs(LOW + DIG, 25))
    A("docker-swarm", "swarm", "To add a worker to this swarm, run the following command:\n\n    docker swarm join --token %s 192.168.99.100:2377" % v, [v])
    v = fresh(lambda: "gho_" + rs(AN, 36))
    A("gh-cli", "ghauth", "$ gh auth status -t\ngithub.com\n  ✓ Logged in to github.com account octo-dev (keyring)\n  - Active account: true\n  - Git operations protocol: https\n  - Token: %s\n  - Token scopes: 'gist', 'read:org', 'repo'" % v, [v])
    v = fresh(lambda: "npm_" + rs(AN, 36))
    A("npm-cli", "npmtoken", "$ npm token create --read-only\n┌────────────────┬──────────────────────────────────────────┐\n│ token          │ %s │\n│ readonly       │ true                                     │\n│ created        │ 2024-05-02T10:11:12.000Z                 │\n└────────────────┴──────────────────────────────────────────┘" % v, [v])
    s1 = fresh(lambda: rs(B64, 40))
    s2 = fresh(lambda: "IQoJb3JpZ2luX2Vj" + rs(B64, 180))
    A("aws-sts", "sts", '{\n    "Credentials": {\n        "AccessKeyId": "ASIA%s",\n        "SecretAccessKey": "%s",\n        "SessionToken": "%s",\n        "Expiration": "2024-06-01T12:00:00+00:00"\n    }\n}' % (rs(B32U, 16), s1, s2), [s1, s2])
    v = fresh(lambda: "gldt-" + rs(B64U, 20))
    A("ci-log", "gitlabci", "$ echo \"Deploying with DEPLOY_TOKEN=$DEPLOY_TOKEN\"\nDeploying with DEPLOY_TOKEN=%s\n$ ./deploy.sh production\nCleaning up project directory and file based variables\nJob succeeded" % v, [v])
    v = fresh(lambda: rs(B64U, 43))
    A("http-debug", "curlv", "* Connected to api.example.com (93.184.216.34) port 443\n> GET /api/v1/me HTTP/1.1\n> Host: api.example.com\n> Authorization: Bearer %s\n> User-Agent: curl/8.5.0\n> Accept: */*\n>\n< HTTP/1.1 200 OK" % v, [v])
    v = fresh(lambda: _rand_pw(14, USYMS))
    A("http-debug", "pyhttp", "send: b'POST /oauth/token HTTP/1.1\\r\\nHost: auth.example.com\\r\\nContent-Type: application/x-www-form-urlencoded\\r\\n\\r\\ngrant_type=password&username=alice&password=%s&client_id=cli'\nreply: 'HTTP/1.1 200 OK\\r\\n'" % v, [v])
    a = fresh(lambda: rs(AN, 20))
    b = fresh(lambda: rs(AN, 24))
    A("env-dump", "envdump", "$ env | sort\nHOME=/home/ci\nHOSTNAME=runner-7\nPATH=/usr/local/bin:/usr/bin:/bin\nPGPASSWORD=%s\nPWD=/builds/app\nREDIS_URL=redis://:%s@cache:6379/0\nSHLVL=1" % (a, b), [a, b])
    v = fresh(lambda: _rand_pw(18, USYMS))
    A("stack-trace", "mongotrace", "MongoServerError: bad auth : authentication failed\n    at Connection.onMessage (/app/node_modules/mongodb/lib/cmap/connection.js:231:30)\n    at MessageStream.<anonymous> (/app/node_modules/mongodb/lib/cmap/connection.js:61:60) {\n  ok: 0,\n  code: 8000,\n  codeName: 'AtlasError',\n  uri: 'mongodb+srv://svc_api:%s@cluster0.ab1cd.mongodb.net/app'\n}" % v, [v])
    v = fresh(lambda: _rand_pw(16, USYMS))
    A("stack-trace", "djangotrace", "Traceback (most recent call last):\n  File \"/app/manage.py\", line 22, in <module>\n    main()\ndjango.db.utils.OperationalError: could not connect to server\nDATABASE_URL='postgres://django:%s@db.internal:5432/shop'" % v, [v])
    v = fresh(lambda: "dckr_pat_" + rs(B64U, 27))
    A("docker-login", "dockerlogin", "$ echo %s | docker login -u ci-bot --password-stdin\nWARNING! Your password will be stored unencrypted in /home/ci/.docker/config.json.\nLogin Succeeded" % v, [v])
    v = fresh(lambda: "hvs." + rs(B64U, 91))
    A("vault-login", "vaultlogin", "Success! You are now authenticated.\n\nKey                  Value\n---                  -----\ntoken                %s\ntoken_accessor       %s\ntoken_duration       768h\ntoken_policies       [\"default\"]" % (v, rs(AN, 24)), [v])
    v = fresh(lambda: b64(bytes.fromhex("302e020100300506032b657004220420") + R.randbytes(32)))
    A("keygen", "genpkey", "$ openssl genpkey -algorithm ed25519\n-----BEGIN PRIVATE KEY-----\n%s\n-----END PRIVATE KEY-----" % v, [v])
    v = fresh(lambda: "AGE-SECRET-KEY-1" + rs(BECH.upper(), 58))
    A("keygen", "agekeygen", "$ age-keygen\n# created: 2024-05-02T10:11:12Z\n# public key: age1%s\n%s" % (rs(BECH, 58), v), [v])
    v = fresh(lambda: rs(HEX, 128))
    A("rails", "railscreds", "$ bin/rails credentials:show\n# aws:\n#   access_key_id: 123\n\n# Used as the base secret for all MessageVerifiers in Rails, including the one protecting cookies.\nsecret_key_base: %s" % v, [v])
    v = fresh(lambda: rs(AN, 20))
    A("pwgen", "pwgen", "$ pwgen -s 20 1\n" + v, [v])
    v = fresh(lambda: rs(AN + "-_", 24))
    A("terraform", "tfraw", "$ terraform output -raw db_password\n%s" % v, [v])
    v = fresh(lambda: rs(AN, 28))
    A("redis-cli", "redisconfig", "127.0.0.1:6379> CONFIG GET requirepass\n1) \"requirepass\"\n2) \"%s\"" % v, [v])
    v = fresh(lambda: rs(AN, 3) + "8Q~" + rs(AN + "~_.-", 34))
    A("azure-cli", "azsp", '$ az ad sp create-for-rbac --name ci-deployer --role Contributor\n{\n  "appId": "%s",\n  "displayName": "ci-deployer",\n  "password": "%s",\n  "tenant": "%s"\n}' % (uuid4(), v, uuid4()), [v])
    v = fresh(lambda: "ya29.a0" + rs(B64U, 150))
    A("gcloud", "gcloudtoken", "$ gcloud auth print-access-token\n" + v, [v])
    v = fresh(lambda: "whsec_" + rs(AN, 32))
    A("stripe-cli", "stripelisten", "$ stripe listen --forward-to localhost:4242/webhook\n> Ready! You are using Stripe API Version [2024-06-20]. Your webhook signing secret is %s (^C to quit)" % v, [v])
    v = fresh(lambda: b64(R.randbytes(32)))
    A("wg", "wggenkey", "$ umask 077; wg genkey\n%s" % v, [v])


gen_output()


# ================================================================ 5. HIGH ENTROPY, NO PREFIX
def gen_entropy():
    S = "5-high-entropy"
    E = [
        ("ent-nextline", "API secret (prod)\n{A}", "an40"),
        ("ent-tsv", "service\tusername\tpassword\nbilling\tsvc_billing\t{A}\nsearch\tsvc_search\t{B}", "an32,b64u"),
        ("ent-markdown", "| env | user | password |\n|-----|------|----------|\n| prod | app | {A} |\n| stage | app | {B} |", "b64u,an32"),
        ("ent-yaml", "oauth:\n  client_id: web-frontend\n  client_secret: {A}\n  redirect_uri: https://app.example.com/callback", "b64u"),
        ("ent-de", "Geheimer Schlüssel (neu):\n{A}", "hx64"),
        ("ent-ja", "シークレットキー：{A}", "an32"),
        ("ent-zh", "公众号 AppID: wx{X}\nAppSecret: {A}", "hx32"),
        ("ent-ru", "токен доступа {A}", "b64u"),
        ("ent-csv", "name,login,password\nBob Ray,bray,{A}", "b64s"),
        ("ent-es", "secreto del cliente:\n\n{A}", "an40"),
        ("ent-ini", "[signing]\nalgorithm = HS256\nkey = {A}", "b44"),
        ("ent-fr", "clé secrète : {A}", "hx40"),
        ("ent-pt", "token de acesso -> {A}", "b64u"),
        ("ent-ko", "시크릿 키 {A}", "an32"),
        ("ent-b64", "HMAC secret (base64): {A}", "b44"),
        ("ent-hex", "encryption key: {A}", "hx64"),
        ("ent-tr", "API anahtarı\n    {A}", "an40"),
        ("ent-pl", "| klucz | wartość |\n|---|---|\n| sekret webhooka | {A} |", "b64u"),
    ]
    for i, (fam, t, kinds) in enumerate(E):
        vals = [val(k) for k in kinds.split(",")]
        kw = {"AB"[j]: v for j, v in enumerate(vals)}
        kw["X"] = rs(HEX, 16)
        add(S, "secret", fam, "ent%d" % i, fill(t, **kw), vals)


gen_entropy()


# ================================================================ CHECKS + OUTPUT
def check_and_write():
    errors = []
    secrets_cases = [(s, d) for s, d in CASES if d["kind"] == "secret"]
    ordinary = [d for s, d in CASES if d["kind"] == "ordinary"]
    ord_texts = [d["text"] for d in ordinary]
    seen = {}
    all_secret_values = Counter()
    for s, d in CASES:
        t = d["text"]
        if len(t) > MAXLEN:
            errors.append("too long (%d): %s" % (len(t), d["family"]))
        if not t.strip():
            errors.append("empty text: %s" % d["family"])
        if t in seen:
            errors.append("duplicate text in %s and %s" % (seen[t], d["family"]))
        seen[t] = d["family"]
    for s, d in secrets_cases:
        if not d["secrets"]:
            errors.append("no secrets listed: %s" % d["family"])
        for v in d["secrets"]:
            if len(v) < 4:
                errors.append("secret too short: %s" % d["family"])
            if v not in d["text"]:
                errors.append("secret not verbatim in text: %s" % d["family"])
            if any(v in ot for ot in ord_texts):
                errors.append("secret value occurs in an ordinary text: %s" % d["family"])
        for v in set(d["secrets"]):
            all_secret_values[v] += 1
    for v, n in all_secret_values.items():
        if n > 1:
            errors.append("secret value reused across cases")
    for tid, n in TPL_USE.items():
        if n > 3:
            errors.append("template %s used %d times" % (tid, n))
    sec_counts = Counter(s for s, d in secrets_cases)
    minimum = {"1-natural-language": 80, "2-vendor-tokens": 50, "3-source-config-cli": 50,
               "4-tool-output": 25, "5-high-entropy": 15}
    for k, m in minimum.items():
        if sec_counts[k] < m:
            errors.append("section %s has %d < %d cases" % (k, sec_counts[k], m))
    if len(secrets_cases) < 220:
        errors.append("only %d secret cases" % len(secrets_cases))
    if len(ordinary) < 110:
        errors.append("only %d ordinary cases" % len(ordinary))
    nl_langs = sorted({d["family"][3:] for s, d in secrets_cases if s == "1-natural-language"})
    ord_prose_langs = sorted({d["family"][6:] for d in ordinary if d["family"].startswith("prose-")})
    if len([l for l in nl_langs if l not in ("mixed",) and not l.endswith("-latn")]) < 30:
        errors.append("fewer than 30 languages in section 1")
    if len(ord_prose_langs) < 20:
        errors.append("fewer than 20 languages in ordinary prose")

    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "redaction_heldback4.jsonl")
    with open(out, "w", encoding="utf-8", newline="\n") as f:
        order = ["1-natural-language", "2-vendor-tokens", "3-source-config-cli", "4-tool-output",
                 "5-high-entropy", "ordinary"]
        for sec in order:
            for s, d in CASES:
                if s == sec:
                    f.write(json.dumps(d, ensure_ascii=False) + "\n")

    for k in ["1-natural-language", "2-vendor-tokens", "3-source-config-cli", "4-tool-output", "5-high-entropy"]:
        print("secret   %-22s %4d" % (k, sec_counts[k]))
    print("secret   %-22s %4d" % ("TOTAL", len(secrets_cases)))
    ofam = Counter("prose-*" if d["family"].startswith("prose-") else d["family"] for d in ordinary)
    for k in sorted(ofam):
        print("ordinary %-22s %4d" % (k, ofam[k]))
    print("ordinary %-22s %4d" % ("TOTAL", len(ordinary)))
    print("secret values listed: %d; max template reuse: %d" % (sum(all_secret_values.values()), max(TPL_USE.values())))
    print("section-1 languages (%d): %s" % (len(nl_langs), " ".join(nl_langs)))
    print("ordinary prose languages (%d): %s" % (len(ord_prose_langs), " ".join(ord_prose_langs)))
    print("longest text: %d chars" % max(len(d["text"]) for s, d in CASES))
    if errors:
        for e in errors:
            print("ERROR:", e, file=sys.stderr)
        sys.exit(1)
    print("all checks passed ->", out)


check_and_write()
