#!/usr/bin/env python3
"""Generate redaction_heldback3.jsonl: held-back test cases for a secret redactor.

Stdlib only, reproducible (fixed seed). Written without looking at the redactor.
Usage: python3 make_redaction_heldback3.py  -> writes redaction_heldback3.jsonl next to this file.
"""
import json
import os
import random
import string
import sys

SEED = 3_141_593
R = random.Random(SEED)

UP = string.ascii_uppercase
LO = string.ascii_lowercase
DG = string.digits
AN = UP + LO + DG
HEX = "0123456789abcdef"
B64 = AN + "+/"
B64U = AN + "-_"


def rs(alpha, n):
    return "".join(R.choice(alpha) for _ in range(n))


def an(n):
    return rs(AN, n)


def hx(n):
    return rs(HEX, n)


WORDS = ("amber orbit cactus lantern velvet harbor pepper quartz meadow falcon cobalt "
         "tundra saffron glacier walnut cinder maple opal thunder willow copper nectar "
         "prism juniper ember raven basalt lotus marble tango").split()
SYM = "!@#%^*_-+=?~."


def pw():
    """Human-style password: varied shapes, always >= 10 chars, distinctive."""
    k = R.randrange(4)
    if k == 0:
        return R.choice(WORDS).capitalize() + R.choice(SYM) + R.choice(WORDS).capitalize() + rs(DG, 2)
    if k == 1:
        return rs(UP, 1) + rs(LO, 3) + rs(DG, 2) + R.choice("!@#%*") + rs(AN, 5)
    if k == 2:
        s = [R.choice(AN + "!@#%^*-_") for _ in range(13)]
        s[0] = R.choice(UP)
        s[5] = R.choice(DG)
        s[9] = R.choice("!#%*")
        return "".join(s)
    return R.choice(WORDS) + rs(DG, 4) + R.choice("!#&*") + rs(UP, 2)


def phrase(n=4, sep=" "):
    return sep.join(R.sample(WORDS, n))


def pin(n=4):
    d = rs("123456789", 1) + rs(DG, n - 1)
    return d


CASES = []


def S(family, text, *secrets):
    assert secrets, family
    CASES.append({"kind": "secret", "family": family, "text": text, "secrets": list(secrets)})


def O(family, text):
    CASES.append({"kind": "ordinary", "family": family, "text": text})


# ---------------------------------------------------------------------------
# 1. Credential phrases in many languages
# ---------------------------------------------------------------------------
p = pw(); S("lang-hi", f"सर्वर का पासवर्ड {p} है, कृपया किसी को मत बताना।", p)
p = pw(); S("lang-hi", f"मैंने staging DB के लिए जो पासवर्ड रखा था वह '{p}' था, अब बदल दूँगा", p)
p = pin(6); S("lang-hi", f"ATM पिन: {p} (माँ का कार्ड)", p)
p = pw(); S("lang-ar", f"كلمة المرور الخاصة بحساب الإدارة هي {p}", p)
p = pw(); S("lang-ar", f"«{p}» هذه هي كلمة السر الجديدة للراوتر، لا تشاركها", p)
p = pin(4); S("lang-ar", f"الرقم السري للبطاقة: {p}", p)
p = pw(); S("lang-bn", f"ডাটাবেসের পাসওয়ার্ড হল {p} — কাল রাতে পরিবর্তন করেছি", p)
p = pw(); S("lang-bn", f"আমার ইমেইলের পাসওয়ার্ড: \"{p}\"", p)
p = pw(); S("lang-id", f"Passwordnya {p} ya, jangan disebar ke grup", p)
p = pw(); S("lang-id", f"kata sandi untuk VPN kantor: {p}", p)
p = pin(6); S("lang-id", f"PIN m-banking aku {p}, tolong transferin dulu", p)
p = pw(); S("lang-ru", f"Пароль от продовой базы — {p}, не коммить его", p)
p = pw(); S("lang-ru", f"Вот пароль, который ты просил: «{p}»", p)
p = phrase(4); S("lang-ru", f"Кодовая фраза для кошелька: {p}", p)
p = pw(); S("lang-ru", f"логин admin, пасс {p}", p)
p = pw(); S("lang-uk", f"Пароль до Wi-Fi в офісі: {p}", p)
p = pw(); S("lang-ur", f"میرا پاس ورڈ {p} ہے، کسی کو مت بتانا", p)
p = pw(); S("lang-ur", f"سرور کا پاسورڈ: {p}", p)
p = pw(); S("lang-ta", f"என் கடவுச்சொல் {p} — யாருக்கும் சொல்ல வேண்டாம்", p)
p = pin(4); S("lang-ta", f"ஏடிஎம் பின் எண்: {p}", p)
p = pw(); S("lang-ja", f"本番DBのパスワードは「{p}」です。", p)
p = pw(); S("lang-ja", f"管理画面のパスは{p}なので、ログインしたら変えてください", p)
p = pin(4); S("lang-ja", f"暗証番号：{p}", p)
p = pw(); S("lang-ko", f"비밀번호는 {p} 입니다. 로그인 후 바로 바꿔주세요.", p)
p = pw(); S("lang-ko", f"와이파이 비번 {p} ㅋㅋ", p)
p = pw(); S("lang-zh", f"数据库密码是{p}，别发到群里", p)
p = pw(); S("lang-zh", f"root 的密码：“{p}”", p)
p = pw(); S("lang-zh-tw", f"我剛設的密碼為 {p}，記得改掉", p)
p = pin(6); S("lang-zh", f"支付密码 {p}", p)
p = pw(); S("lang-th", f"รหัสผ่านของเซิร์ฟเวอร์คือ {p} นะครับ", p)
p = pw(); S("lang-th", f"พาสเวิร์ด wifi: {p}", p)
p = pw(); S("lang-vi", f"Mật khẩu tài khoản admin là {p}, đừng chia sẻ nhé", p)
p = pw(); S("lang-vi", f"mk: {p} (acc gmail cũ)", p)
p = pw(); S("lang-tr", f"Sunucunun şifresi {p}, kimseyle paylaşma.", p)
p = pw(); S("lang-tr", f"Parola: '{p}' — yarın değiştireceğim", p)
p = pw(); S("lang-fa", f"رمز عبور سرور {p} است", p)
p = pw(); S("lang-fa", f"پسورد جدید: «{p}»", p)
p = pw(); S("lang-pl", f"Hasło do bazy to {p}, nie wrzucaj go do repo", p)
p = pw(); S("lang-pl", f"hasło, które ustawiłem wczoraj: „{p}”", p)
p = pw(); S("lang-pt", f"A senha do banco é {p}, troca depois do deploy", p)
p = pw(); S("lang-pt", f"senha que eu usei no servidor de homologação: {p}", p)
p = pin(4); S("lang-pt", f"O PIN do cartão é {p}.", p)
p = pw(); S("lang-es", f"La contraseña del servidor es {p}", p)
p = pw(); S("lang-es", f"oye, la clave del wifi es «{p}» jaja", p)
p = phrase(5, "-"); S("lang-es", f"Frase de contraseña del gestor: {p}", p)
p = pw(); S("lang-fr", f"Le mot de passe de la base est {p}, ne le partage pas.", p)
p = pw(); S("lang-fr", f"mdp : « {p} » (compte admin)", p)
p = pin(4); S("lang-fr", f"Mon code PIN, c'est {p}.", p)
p = pw(); S("lang-de", f"Das Passwort für den Jenkins-Admin lautet {p}", p)
p = pw(); S("lang-de", f"PW ist „{p}“ – bitte nach dem ersten Login ändern", p)
p = pw(); S("lang-de", f"Kennwort, das ich gestern vergeben habe: {p}", p)
p = pw(); S("lang-it", f"La password del database è {p}", p)
p = pw(); S("lang-it", f"ti giro la pass: {p} (non salvarla nel repo)", p)
p = pw(); S("lang-nl", f"Het wachtwoord van de server is {p}", p)
p = pw(); S("lang-sv", f"Lösenordet till routern är {p}", p)
p = pw(); S("lang-cs", f"Heslo k databázi: {p}", p)
p = pw(); S("lang-el", f"Ο κωδικός πρόσβασης είναι {p}", p)
p = pw(); S("lang-he", f"הסיסמה לשרת היא {p}", p)
p = pw(); S("lang-sw", f"Nenosiri la seva ni {p}", p)
p = pw(); S("lang-ro", f"Parola pentru contul de admin este {p}", p)
p = pw(); S("lang-en", f"{p} is the password for the staging box, fyi", p)
p = pw(); S("lang-en", f"btw pwd = {p} for the jump host", p)
p = phrase(4); S("lang-en", f"The recovery passphrase we agreed on is `{p}`.", p)
p = pin(6); S("lang-en", f"my pin's {p} if you need to unlock the laptop", p)
p = pw(); u = "dmitri.k"; S("lang-en", f"creds: {u} / {p}", p)
p = pw(); S("lang-en", f"user: deploy\npass: {p}", p)
p = pw(); S("lang-ms", f"Kata laluan akaun ialah {p}", p)
p = pw(); S("lang-hu", f"A jelszó: {p}", p)
p = pw(); S("lang-fi", f"Salasana on {p}", p)
p = pw(); S("lang-mixed", f"Boss said: 密码 {p}, use it for the Jenkins login only.", p)
p = pw(); S("lang-hi-latin", f"bhai password hai {p}, kisi ko mat dena", p)
p = pw(); S("lang-ar-chat", f"الباسورد {p} يا غالي", p)

# ---------------------------------------------------------------------------
# 2. Vendor token formats
# ---------------------------------------------------------------------------
t = "ghp_" + an(36); S("gh-pat", f"export GITHUB_TOKEN={t}", t)
t = "github_pat_" + an(22) + "_" + an(59); S("gh-fine", f"git clone https://oauth2:{t}@github.com/acme/infra.git", t)
t = "gho_" + an(36); S("gh-oauth", f'{{"access_token":"{t}","token_type":"bearer","scope":"repo"}}', t)
t = "ghs_" + an(36); S("gh-app", f"[debug] installation token acquired: {t} (expires in 3600s)", t)
t = "glpat-" + rs(AN + "-_", 20); S("gitlab-pat", f"curl --header \"PRIVATE-TOKEN: {t}\" https://gitlab.example.com/api/v4/projects", t)
t = "xoxb-" + rs(DG, 12) + "-" + rs(DG, 13) + "-" + an(24); S("slack-bot", f"SLACK_BOT_TOKEN: {t}", t)
t = "xoxp-" + rs(DG, 11) + "-" + rs(DG, 12) + "-" + rs(DG, 13) + "-" + hx(32); S("slack-user", f"here's my slack user token, use it for the export script: {t}", t)
w = f"https://hooks.slack.com/services/T{rs(UP + DG, 8)}/B{rs(UP + DG, 10)}/{an(24)}"; S("slack-webhook", f"requests.post(\"{w}\", json={{\"text\": \"deploy done\"}})", w)
t = "sk_live_" + an(24); S("stripe-live", f"Stripe.api_key = \"{t}\"", t)
t = "rk_live_" + an(99)[:34]; S("stripe-restricted", f"STRIPE_RESTRICTED_KEY={t} # read-only charges", t)
t = "whsec_" + an(32); S("stripe-webhook", f"stripe listen: Ready! Your webhook signing secret is {t} (^C to quit)", t)
t = "sk-proj-" + rs(B64U, 74) + "T3BlbkFJ" + rs(B64U, 74); S("openai", f"OPENAI_API_KEY=\"{t}\"", t)
t = "sk-ant-api03-" + rs(B64U, 93) + "AA"; S("anthropic", f"client = anthropic.Anthropic(api_key=\"{t}\")", t)
t = "AIza" + rs(B64U, 35); S("google-api", f"<script src=\"https://maps.googleapis.com/maps/api/js?key={t}&callback=initMap\"></script>", t)
t = "SG." + rs(B64U, 22) + "." + rs(B64U, 43); S("sendgrid", f"sendgrid_api_key: {t}", t)
t = "SK" + hx(32); s2 = an(32); S("twilio", f"TWILIO_API_KEY={t}\nTWILIO_API_SECRET={s2}", t, s2)
t = "npm_" + an(36); S("npm", f"//registry.npmjs.org/:_authToken={t}", t)
t = "pypi-AgEIcHlwaS5vcmc" + rs(B64U, 70); S("pypi", f"[pypi]\n  username = __token__\n  password = {t}", t)
t = "shpat_" + hx(32); S("shopify", f"X-Shopify-Access-Token: {t}", t)
t = "dop_v1_" + hx(64); S("digitalocean", f"doctl auth init -t {t}", t)
t = "hvs." + rs(AN, 24); S("vault", f"$ vault login {t}\nSuccess! You are now authenticated.", t)
t = "dapi" + hx(32); S("databricks", f"databricks configure --token <<< '{t}'", t)
t = "hf_" + rs(UP + LO, 34); S("huggingface", f"huggingface-cli login --token {t}", t)
t = rs(DG, 10) + ":AA" + rs(B64U, 33); S("telegram", f"bot = telebot.TeleBot('{t}')", t)
t = "sq0atp-" + rs(B64U, 22); S("square", f"SQUARE_ACCESS_TOKEN={t}", t)
t = "lin_api_" + an(40); S("linear", f"Authorization: {t}", t)
t = "PMAK-" + hx(24) + "-" + hx(34); S("postman", f"newman run coll.json --postman-api-key {t}", t)
t = "glsa_" + an(32) + "_" + hx(8); S("grafana", f"grafana:\n  apiKey: \"{t}\"", t)
t = "NRAK-" + rs(UP + DG, 27); S("newrelic", f"NEW_RELIC_API_KEY='{t}' terraform apply", t)
t = "AGE-SECRET-KEY-1" + rs("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58).upper(); S("age", f"# created: 2024-05-02T10:11:12Z\n# public key: age1{rs('qpzry9x8gf2tvdw0s3jn54khce6mua7l', 58)}\n{t}", t)
t = "pul-" + hx(40); S("pulumi", f"PULUMI_ACCESS_TOKEN={t} pulumi up --yes", t)
t = "sbp_" + hx(40); S("supabase", f"supabase login --token {t}", t)
t = "dt0c01." + rs(UP + DG, 24) + "." + rs(UP + DG, 64); S("dynatrace", f"Api-Token {t}", t)
t = "pscale_tkn_" + rs(B64U, 43); S("planetscale", f"PLANETSCALE_SERVICE_TOKEN={t}", t)
t = "rubygems_" + hx(48); S("rubygems", f"---\n:rubygems_api_key: {t}", t)
t = "dckr_pat_" + rs(B64U, 27); S("dockerhub", f"echo {t} | docker login -u acmebot --password-stdin", t)
t = "shippo_live_" + hx(40); S("shippo", f"shippo.config.api_key = \"{t}\"", t)
t = "LTAI" + an(20); s2 = an(30); S("alibaba", f"accessKeyId: {t}\naccessKeySecret: {s2}", t, s2)
t = an(3) + "8Q~" + rs(AN + "~_.-", 34); S("azure-ad", f"az login --service-principal -u 2f9a7c1e-4b1d-4e55-9c4c-0d6c1a2b3e4f -p {t} --tenant acme.onmicrosoft.com", t)
t = "key-" + hx(32); S("mailgun", f"auth=(\"api\", \"{t}\")", t)
t = hx(32) + "-us14"; S("mailchimp", f"mailchimp.set_config({{\"api_key\": \"{t}\", \"server\": \"us14\"}})", t)
t = "ATATT3xFfGF0" + rs(B64U, 170) + "=" + rs(UP + DG, 8); S("atlassian", f"jira: token {t}", t)
t = "ntn_" + an(46); S("notion", f"NOTION_TOKEN={t}", t)
t = "figd_" + rs(B64U, 40); S("figma", f"X-Figma-Token: {t}", t)
t = "dp.pt." + an(43); S("doppler", f"doppler configure set token {t}", t)
t = "gsk_" + an(52); S("groq", f"GROQ_API_KEY={t}", t)
t = "r8_" + an(37); S("replicate", f"replicate token is {t}", t)
t = "pplx-" + an(48); S("perplexity", f"headers = {{'Authorization': 'Bearer {t}'}}", t)
t = "tskey-auth-k" + an(10) + "CNTRL-" + an(33); S("tailscale", f"sudo tailscale up --authkey={t}", t)
t = "bkua_" + hx(40); S("buildkite", f"BUILDKITE_API_TOKEN: {t}", t)
t = "xai-" + an(80); S("xai", f"XAI_API_KEY = \"{t}\"", t)
t = "AKIA" + rs(UP + DG, 16); s2 = rs(B64, 40); S("aws", f"[default]\naws_access_key_id = {t}\naws_secret_access_key = {s2}\nregion = eu-west-1", t, s2)
t = "ASIA" + rs(UP + DG, 16); s2 = rs(B64, 40); s3 = "IQoJb3JpZ2luX2VjE" + rs(B64, 200); S("aws-sts", f'{{"Credentials": {{"AccessKeyId": "{t}", "SecretAccessKey": "{s2}", "SessionToken": "{s3}", "Expiration": "2024-06-01T12:00:00Z"}}}}', t, s2, s3)
h = rs(B64U, 36); t = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9." + "eyJzdWIiOiI" + rs(B64U, 60) + "." + rs(B64U, 43); S("jwt", f"curl -H 'Authorization: Bearer {t}' https://api.acme.io/v1/me", t)
k = rs(B64, 86) + "=="; S("azure-storage", f"DefaultEndpointsProtocol=https;AccountName=acmelogs;AccountKey={k};EndpointSuffix=core.windows.net", k)
d = hx(32); S("sentry-dsn", f"SENTRY_DSN=https://{d}@o{rs(DG, 6)}.ingest.sentry.io/{rs(DG, 7)}", d)
w = f"https://discord.com/api/webhooks/{rs(DG, 18)}/{rs(B64U, 68)}"; S("discord-webhook", f"webhook_url: {w}", w)
t = "sk.eyJ1IjoiYWNtZSIsImEiOiJ" + rs(B64U, 22) + "." + rs(B64U, 22); S("mapbox", f"mapboxgl.accessToken = '{t}';", t)
t = "pat" + an(14) + "." + hx(64); S("airtable", f"AIRTABLE_PAT={t}", t)
t = "00" + rs(B64U, 40); S("okta", f"okta:\n  client:\n    orgUrl: https://acme.okta.com\n    token: {t}", t)
t = "EZAK" + hx(54); S("easypost", f"EasyPost::Client.new(api_key: '{t}')", t)
t = "FLWSECK-" + hx(32) + "-X"; S("flutterwave", f"FLW_SECRET_KEY={t}", t)
t = rs(AN, 14) + ".atlasv1." + rs(AN, 67); S("terraform-cloud", f"credentials \"app.terraform.io\" {{\n  token = \"{t}\"\n}}", t)
pk = [rs(B64, 64), rs(B64, 64), rs(B64, 36) + "=="]
S("pem-ec", "-----BEGIN EC PRIVATE KEY-----\n" + "\n".join(pk) + "\n-----END EC PRIVATE KEY-----", *pk)
pk2 = ["b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW" + rs(B64, 0),
       rs(B64, 70), rs(B64, 70), rs(B64, 70), rs(B64, 24) + "="]
S("pem-openssh", "$ cat ~/.ssh/id_ed25519\n-----BEGIN OPENSSH PRIVATE KEY-----\n" + "\n".join(pk2) + "\n-----END OPENSSH PRIVATE KEY-----", *pk2[1:])
gk = rs(B64, 64); S("gcp-sa", '{"type": "service_account", "project_id": "acme-prod", "private_key_id": "' + hx(40) + '", "private_key": "-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC' + gk + '\\n-----END PRIVATE KEY-----\\n", "client_email": "ci@acme-prod.iam.gserviceaccount.com"}', gk)

# ---------------------------------------------------------------------------
# 3. Program source / config syntax
# ---------------------------------------------------------------------------
p = pw(); S("powershell", f"$secure = ConvertTo-SecureString '{p}' -AsPlainText -Force\n$cred = New-Object PSCredential('ACME\\svc_sql', $secure)", p)
p = pw(); S("powershell-herestring", f"$body = @\"\n{{\"username\":\"svc\",\"password\":\"{p}\"}}\n\"@\nInvoke-RestMethod -Uri $url -Method Post -Body $body", p)
p = pw(); S("cmd", f"C:\\> set DB_PASSWORD={p}\nC:\\> node server.js", p)
p = pw(); S("cmd-netuse", f"net use Z: \\\\fileserver\\share /user:ACME\\jdoe {p} /persistent:no", p)
p = pw(); S("java-props", f"spring.datasource.url=jdbc:postgresql://db:5432/orders\nspring.datasource.username=orders\nspring.datasource.password={p}", p)
p = pw(); S("kotlin", f"val keystorePassword = \"{p}\"\nsigningConfigs {{ create(\"release\") {{ storePassword = keystorePassword }} }}", p)
p = pw(); S("csharp-appsettings", f'{{\n  "ConnectionStrings": {{\n    "Default": "Server=sql01;Database=Shop;User Id=shop_app;Password={p};TrustServerCertificate=True"\n  }}\n}}', p)
t = an(32); S("go", f"const apiSecret = \"{t}\"\n\nfunc sign(b []byte) string {{ return hmacSHA256(apiSecret, b) }}", t)
p = pw(); S("rust", f"let pool = PgPool::connect(\"postgres://app:{p}@localhost/app\").await?;", p)
p = pw(); S("php", f"<?php\ndefine('DB_PASSWORD', '{p}');\ndefine('DB_HOST', 'localhost');", p)
t = hx(64); S("ruby", f"Rails.application.config.secret_key_base = \"{t}\"", t)
p = pw(); S("terraform", f"resource \"aws_db_instance\" \"main\" {{\n  engine   = \"postgres\"\n  username = \"dbadmin\"\n  password = \"{p}\"\n}}", p)
p = pw(); S("ansible", f"- name: create db user\n  community.mysql.mysql_user:\n    name: app\n    password: \"{p}\"\n    priv: 'app.*:ALL'", p)
p = pw(); S("helm", f"postgresql:\n  auth:\n    username: app\n    password: {p}\n    database: app", p)
t = an(40); S("systemd", f"[Service]\nEnvironment=\"API_TOKEN={t}\"\nExecStart=/usr/local/bin/worker", t)
p = pw(); S("crontab", f"0 3 * * * PGPASSWORD='{p}' pg_dump -h db01 -U backup shop > /backups/shop.sql", p)
p = pw(); S("sql-pg", f"CREATE USER reporting WITH PASSWORD '{p}';", p)
p = pw(); S("sql-mysql", f"ALTER USER 'root'@'localhost' IDENTIFIED BY '{p}';", p)
p = pw(); S("sql-oracle", f"CREATE USER etl IDENTIFIED BY \"{p}\" DEFAULT TABLESPACE users;", p)
p = pw(); S("ldap", f"ldapsearch -x -H ldaps://ldap.acme.local -D \"cn=admin,dc=acme,dc=local\" -w '{p}' -b \"dc=acme,dc=local\"", p)
p = pw(); S("ldif", f"dn: uid=jdoe,ou=people,dc=acme,dc=local\nobjectClass: inetOrgPerson\nuid: jdoe\nuserPassword: {p}", p)
t = an(48); S("heredoc", f"cat > .env <<'EOF'\nNODE_ENV=production\nSESSION_SECRET={t}\nEOF", t)
p = pw(); S("heredoc-mysql", f"mysql -u root <<SQL\nCREATE USER 'app'@'%' IDENTIFIED BY '{p}';\nSQL", p)
p = pw(); S("docker-run", f"docker run -d -e POSTGRES_PASSWORD={p} -p 5432:5432 postgres:16", p)
p = pw(); S("compose", f"services:\n  mysql:\n    image: mysql:8\n    environment:\n      MYSQL_ROOT_PASSWORD: \"{p}\"", p)
p = pw(); S("kubectl", f"kubectl create secret generic db-creds --from-literal=username=app --from-literal=password='{p}'", p)
p = pw(); S("python", f"conn = psycopg2.connect(host=\"db\", user=\"etl\", password=\"{p}\", dbname=\"dw\")", p)
p = pw(); S("js", f"const client = new Client({{ user: 'api', password: '{p}', host: 'pg.internal' }});", p)
p = pw(); S("url-redis", f"REDIS_URL=redis://:{p}@cache.internal:6379/0", p)
p = pw(); S("url-mongo", f"mongosh \"mongodb+srv://admin:{p}@cluster0.ab1cd.mongodb.net/prod\"", p)
p = pw(); S("netrc", f"machine api.heroku.com\n  login ops@acme.io\n  password {p}", p)
p = pw(); S("git-credentials", f"$ cat ~/.git-credentials\nhttps://jdoe:{p}@git.acme.local", p)
p = pw(); S("toml", f"[database]\nhost = \"10.0.3.7\"\npassword = '{p}'", p)
p = pw(); S("ini", f"[client]\nuser=backup\npassword=\"{p}\"", p)
p = pw(); S("xml", f"<server>\n  <id>nexus</id>\n  <username>deployer</username>\n  <password>{p}</password>\n</server>", p)
p = pw(); S("htpasswd-cli", f"htpasswd -b /etc/nginx/.htpasswd admin {p}", p)
p = pw(); S("mysql-cli", f"mysql -h 127.0.0.1 -u root -p{p} shop", p)
p = pw(); S("sshpass", f"sshpass -p '{p}' ssh ubuntu@10.0.0.12", p)
p = pw(); S("tool-arg-json", f'{{"tool": "Bash", "input": {{"command": "export ADMIN_PASSWORD=\'{p}\' && ./seed.sh"}}}}', p)
p = pw(); S("tool-arg-edit", f'Edit(file_path="config/prod.yml", old_string="password: TODO", new_string="password: {p}")', p)

# ---------------------------------------------------------------------------
# 4. Tool output printing secrets
# ---------------------------------------------------------------------------
p = hx(32); S("out-jenkins", f"*************************************************************\nJenkins initial setup is required. An admin user has been created and a password generated.\nPlease use the following password to proceed to installation:\n\n{p}\n\nThis may also be found at: /var/jenkins_home/secrets/initialAdminPassword", p)
p = rs(AN, 16); S("out-argocd", f"$ kubectl -n argocd get secret argocd-initial-admin-secret -o jsonpath=\"{{.data.password}}\" | base64 -d\n{p}", p)
p = rs(AN + "_", 12); S("out-mysql-log", f"2024-05-03T09:12:44.123456Z 6 [Note] [MY-010454] [Server] A temporary password is generated for root@localhost: {p}", p)
p = rs(AN + "*=+", 20); S("out-elastic", f"elasticsearch-1  | -> Elasticsearch security features have been automatically configured!\nelasticsearch-1  | -> Password for the elastic user (reset with `bin/elasticsearch-reset-password -u elastic`):\nelasticsearch-1  |   {p}", p)
p = an(24); S("out-docker-logs", f"$ docker logs gitlab | grep -i password\nPassword stored to /etc/gitlab/initial_root_password. This file will be cleaned up in first reconfigure run after 24 hours.\nPassword: {p}", p)
t = "ghp_" + an(36); S("out-ci", f"Run actions/checkout@v4\n  with:\n    repository: acme/api\n    token: {t}\n    ssh-strict: true", t)
t = rs(B64U, 43); S("out-http-debug", f"> GET /v2/orders HTTP/1.1\n> Host: api.acme.io\n> User-Agent: curl/8.4.0\n> Authorization: Bearer {t}\n>\n< HTTP/1.1 200 OK", t)
b = rs(B64, 32); S("out-basic-auth", f"DEBUG urllib3.connectionpool: send: b'GET /api/health HTTP/1.1\\r\\nHost: registry.acme.local\\r\\nAuthorization: Basic {b}\\r\\n\\r\\n'", b)
a = rs(B64U, 40); r = rs(B64U, 52); S("out-oauth-json", f'HTTP/1.1 200 OK\nContent-Type: application/json\n\n{{"access_token": "{a}", "expires_in": 3599, "refresh_token": "{r}", "token_type": "Bearer"}}', a, r)
p = pw(); S("out-stacktrace", f"Traceback (most recent call last):\n  File \"app/db.py\", line 14, in connect\n    engine = create_engine(DSN)\nsqlalchemy.exc.OperationalError: (psycopg2.OperationalError) could not connect to server\n[SQL: postgresql://orders:{p}@10.2.0.15:5432/orders]", p)
p = pw(); S("out-java-trace", f"java.sql.SQLException: Access denied for user 'shop'@'10.0.1.4' (using password: YES)\n\tat com.acme.Db.open(Db.java:42)\nCaused by: config jdbc:mysql://db/shop?user=shop&password={p}", p)
p = rs(AN, 20); S("out-installer", f"==> Installation complete.\n    Admin URL:      https://nas.local:5001\n    Admin user:     admin\n    Admin password: {p}\n    (shown only once, store it safely)", p)
t = rs(B64U, 32); S("out-k3s", f"$ sudo cat /var/lib/rancher/k3s/server/node-token\nK10{hx(64)}::server:{t}", t)
t = rs(LO + DG, 6) + "." + rs(LO + DG, 16); S("out-kubeadm", f"You can now join any number of worker nodes by running:\n\nkubeadm join 10.0.0.10:6443 --token {t} \\\n    --discovery-token-ca-cert-hash sha256:{hx(64)}", t)
p = rs(AN, 18); S("out-grafana-cli", f"$ grafana-cli admin reset-admin-password --password-from-stdin\nAdmin password changed successfully ✔\nNew password: {p}", p)
t = rs(B64U, 40); S("out-gh-auth", f"$ gh auth status --show-token\ngithub.com\n  ✓ Logged in to github.com account jdoe (keyring)\n  - Token: gho_{t}", "gho_" + t)
p = an(22); S("out-rabbitmq", f"rabbitmq  | 2024-05-04 10:00:01 [info] Creating user 'admin' with password '{p}'", p)
t = hx(40); S("out-env-dump", f"$ printenv | sort\nHOME=/root\nHOSTNAME=web-7c9f\nINTERNAL_API_SECRET={t}\nPATH=/usr/local/bin:/usr/bin", t)
p = pw(); S("out-json-resp", f'{{"id": 4412, "name": "ci-runner", "credentials": {{"username": "runner", "password": "{p}"}}, "created_at": "2024-04-30T08:15:00Z"}}', p)
t = rs(B64, 44); S("out-wireguard", f"$ wg genkey | tee privatekey\n{t}", t)

# ---------------------------------------------------------------------------
# 5. High-entropy values next to credential words, no known prefix
# ---------------------------------------------------------------------------
t = rs(AN, 40); S("entropy-nextline", f"API key:\n{t}", t)
t = rs(B64U, 48); S("entropy-codeblock", f"Here's the token for the staging API:\n```\n{t}\n```", t)
t = hx(32); S("entropy-de", f"API-Schlüssel: {t}", t)
t = rs(AN, 36); S("entropy-es", f"el token de acceso es {t}", t)
t = rs(AN, 32); S("entropy-fr", f"Clé secrète de l'API :\n{t}", t)
t = rs(B64, 44); S("entropy-ja", f"APIキー: {t}", t)
t = rs(AN, 40); S("entropy-zh", f"访问令牌：\n`{t}`", t)
t = rs(AN, 32); S("entropy-ru", f"Токен доступа: {t}", t)
t = hx(40); S("entropy-pt", f"chave da API {t}", t)
t = rs(AN, 30); S("entropy-ko", f"API 키는 {t} 입니다", t)
t = rs(B64U, 40); S("entropy-tr", f"erişim anahtarı = {t}", t)
t = rs(AN, 36); S("entropy-hi", f"API कुंजी: {t}", t)
t = rs(AN, 28); S("entropy-client-secret", f"client_secret\t{t}", t)
t = rs(B64, 64); S("entropy-signing", f"JWT signing secret (HS256):\n\n    {t}", t)
t = rs(AN, 44); S("entropy-chat", f"ok pasting the secret here real quick, delete after: {t}", t)
t = rs(B64U, 40); S("entropy-yaml-block", f"auth:\n  # rotate every 90 days\n  token: >-\n    {t}", t)
t = rs(AN, 32); S("entropy-id", f"token API-nya: {t}", t)

# ---------------------------------------------------------------------------
# 6. Ordinary look-alikes (must pass unchanged)
# ---------------------------------------------------------------------------
O("ref-env", "export DATABASE_URL=\"postgres://app:${DB_PASSWORD}@db:5432/app\"")
O("ref-env", "docker run -e POSTGRES_PASSWORD=$POSTGRES_PASSWORD postgres:16")
O("ref-env", "curl -H \"Authorization: Bearer $GITHUB_TOKEN\" https://api.github.com/user")
O("ref-cmd", "set PGPASSWORD=%DB_PASS% && psql -h localhost -U app")
O("ref-js", "const apiKey = process.env.OPENAI_API_KEY;\nif (!apiKey) throw new Error('OPENAI_API_KEY is not set');")
O("ref-py", "password = os.getenv(\"SMTP_PASSWORD\")\ntoken = os.environ[\"SLACK_BOT_TOKEN\"]")
O("ref-go", "secret := os.Getenv(\"JWT_SECRET\")\nif secret == \"\" {\n\tlog.Fatal(\"JWT_SECRET must be set\")\n}")
O("ref-ps", "$env:AZURE_CLIENT_SECRET = Read-Host -AsSecureString \"Client secret\"")
O("ref-gha", "env:\n  NPM_TOKEN: ${{ secrets.NPM_TOKEN }}\n  AWS_SECRET_ACCESS_KEY: ${{ secrets.AWS_SECRET_ACCESS_KEY }}")
O("ref-helm", "password: {{ .Values.postgresql.auth.password | quote }}")
O("ref-tf", "password = var.db_password\nusername = data.vault_generic_secret.db.data[\"username\"]")
O("ref-k8s", "env:\n  - name: DB_PASSWORD\n    valueFrom:\n      secretKeyRef:\n        name: db-creds\n        key: password")
O("ref-spring", "spring.datasource.password=${SPRING_DATASOURCE_PASSWORD}")
O("ref-ansible", "password: \"{{ vault_mysql_password }}\"")
O("ref-rust", "let token = std::env::var(\"GITHUB_TOKEN\").expect(\"GITHUB_TOKEN not set\");")
O("mask", "password: ********")
O("mask", "Authorization: Bearer <redacted>")
O("mask", "aws_secret_access_key = xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx")
O("mask", "GITHUB_TOKEN=ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx")
O("mask", "Token: [REDACTED]  (hidden by the CI log masker)")
O("mask", "The key looks like sk_live_… and is 32 characters after the prefix.")
O("placeholder", "OPENAI_API_KEY=your-api-key-here")
O("placeholder", "api_key: <YOUR_API_KEY>")
O("placeholder", "Replace YOUR_TOKEN_HERE with the token from Settings → Developer settings.")
O("placeholder", "mysql -u root -p   # you will be prompted for the password")
O("docs-aws", "aws_access_key_id = AKIAIOSFODNN7EXAMPLE\naws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
O("docs-placeholder", "DB_PASSWORD=<password>\nDB_USER=<user>")
O("hash-git", "Fixed in commit 9f2c4e1b7a3d5e8f0a1b2c3d4e5f60718293a4b5 (see PR #412).")
O("hash-git", "git cherry-pick 3e1f0b2 && git push origin HEAD")
O("hash-sha256", "sha256sum dist/app.tar.gz\n5f70bf18a086007016e948b04aed3b82103a36bea41755b6cddfaf10ace3c6ef  dist/app.tar.gz")
O("hash-docker", "FROM python:3.11-slim@sha256:2b7f1e3a9c8d4e5f60718293a4b5c6d7e8f9a0b1c2d3e4f5061728394a5b6c7d")
O("hash-npm", "\"integrity\": \"sha512-HSv1Iq5+FH3dbMyrmsDiWGSmmYvWk3Xy3LaXXwjEvmuNt9e5YZbtDtTtGdKkw5LZQxO8+9yV7RtCVcKMdIzQvA==\"")
O("hash-md5", "Expected MD5 d41d8cd98f00b204e9800998ecf8427e for the empty file.")
O("uuid", "request_id=3f2b8c1e-9a4d-4f7e-b6c5-1d2e3f4a5b6c status=200 duration_ms=48")
O("uuid", "Tenant ID: 72f988bf-86f1-41af-91ab-2d7cd011db47")
O("jwt-explain", "A JWT has three base64url parts separated by dots: header.payload.signature. The header usually starts with eyJ because it is the encoding of {\".")
O("jwt-explain", "Never store the JWT in localStorage; keep the access token in memory and the refresh token in an httpOnly cookie.")
O("pubkey", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl jdoe@laptop")
O("fingerprint", "The ECDSA key fingerprint is SHA256:Yx3bK0m8jvZ1S9y2pN7fQ4wR6tLh5uC0aE8dG1iH2kM.")
O("fingerprint", "gpg --list-keys\npub   rsa4096 2023-01-10 [SC]\n      4A1F 9C2D 7E3B 5F60 8D1A  2B4C 6E9F 0A3D 7C5B 1E82\nuid   [ultimate] Jane Doe <jane@acme.io>")
O("pubkey-pem", "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----\n(this is the public half; it is safe to commit)")
O("prose-en", "The password must be at least 12 characters and include a digit.")
O("prose-en", "I rotated the API key yesterday and updated the secret in Vault; nothing to change in the repo.")
O("prose-en", "Password reset emails are failing because the SMTP relay rejects our token.")
O("prose-de", "Bitte ändere dein Passwort nach dem ersten Login.")
O("prose-fr", "Le mot de passe doit contenir au moins 12 caractères.")
O("prose-es", "Olvidé mi contraseña, ¿cómo la restablezco?")
O("prose-pt", "A senha expira a cada 90 dias, conforme a política de segurança.")
O("prose-it", "Ho dimenticato la password, puoi resettarla?")
O("prose-ru", "Пароль должен быть не короче 12 символов и не совпадать с логином.")
O("prose-ja", "パスワードを忘れた場合は、管理者に連絡してください。")
O("prose-ko", "비밀번호를 변경하려면 설정 메뉴로 이동하세요.")
O("prose-zh", "请不要把密码写在代码里，改用环境变量。")
O("prose-hi", "कृपया अपना पासवर्ड किसी के साथ साझा न करें।")
O("prose-ar", "يجب تغيير كلمة المرور كل ثلاثة أشهر.")
O("prose-tr", "Şifrenizi unuttuysanız 'Şifremi unuttum' bağlantısını kullanın.")
O("prose-pl", "Hasło zostało zmienione pomyślnie.")
O("prose-vi", "Vui lòng không chia sẻ mật khẩu của bạn với bất kỳ ai.")
O("prose-id", "Token akses akan kedaluwarsa dalam 24 jam.")
O("prose-th", "กรุณาเปลี่ยนรหัสผ่านหลังจากเข้าสู่ระบบครั้งแรก")
O("prose-fa", "رمز عبور باید حداقل ۸ کاراکتر باشد.")
O("prose-bn", "পাসওয়ার্ড ভুলে গেলে রিসেট লিঙ্কে ক্লিক করুন।")
O("prose-ur", "براہ کرم اپنا پاس ورڈ کسی کو نہ بتائیں۔")
O("prose-ta", "கடவுச்சொல் குறைந்தது 8 எழுத்துகள் இருக்க வேண்டும்.")
O("prose-nl", "Je wachtwoord is verlopen; kies een nieuw wachtwoord.")
O("tokens-count", "The prompt used 12,480 input tokens and 1,032 output tokens (max_tokens=4096).")
O("tokens-count", "Context window: 200k tokens; we're at about 63% after the refactor.")
O("tokens-count", "tokenizer.encode(text) returned 87 tokens for the sample sentence.")
O("ports", "Postgres listens on 5432, Redis on 6379 and the API on 8080.")
O("error-code", "HTTP 401 Unauthorized: {\"error\": \"invalid_token\", \"error_description\": \"The access token expired\"}")
O("error-code", "ERROR 1045 (28000): Access denied for user 'root'@'localhost' (using password: YES)")
O("error-code", "fatal: Authentication failed for 'https://github.com/acme/api.git/'\nremote: Support for password authentication was removed on August 13, 2021.")
O("filename", "Renamed tests/test_secret_store.py to tests/test_secrets_backend.py and updated token_bucket.go imports.")
O("filename", "ls src/auth\nlogin.ts  password_reset.ts  refresh_token.ts  token_verifier.ts")
O("filename", "kubectl get secret -n payments\nNAME                  TYPE                                  DATA   AGE\nstripe-credentials    Opaque                                2      14d\ndefault-token-x7k2p   kubernetes.io/service-account-token   3      90d")
O("header-names", "The gateway forwards Authorization, X-Api-Key and X-CSRF-Token headers but strips Cookie.")
O("header-names", "Access-Control-Allow-Headers: Authorization, Content-Type, X-Requested-With")
O("code-func", "def verify_password(plain: str, hashed: str) -> bool:\n    return bcrypt.checkpw(plain.encode(), hashed.encode())")
O("code-func", "if (password.length < MIN_PASSWORD_LENGTH) {\n  return res.status(400).json({ error: 'password too short' });\n}")
O("code-type", "type Credentials struct {\n\tUsername string `json:\"username\"`\n\tPassword string `json:\"password\"`\n}")
O("code-lexer", "enum TokenKind { Ident, Number, StringLit, LParen, RParen, Eof }")
O("code-test", "def test_rejects_empty_token():\n    with pytest.raises(AuthError):\n        authenticate(token=\"\")")
O("code-form", "<input type=\"password\" name=\"password\" autocomplete=\"current-password\" required>")
O("config-bool", "security:\n  require_password_change: true\n  password_min_length: 14\n  token_ttl_seconds: 3600")
O("cli-help", "  -p, --password-file PATH   read the password from PATH instead of prompting\n  --token-env NAME           name of the env var that holds the token")
O("cli-prompt", "$ ssh admin@10.0.0.5\nadmin@10.0.0.5's password:\nWelcome to Ubuntu 22.04.4 LTS")
O("vault-cli", "vault kv get -field=password secret/data/prod/db > /dev/null && echo ok")
O("version", "Upgraded golang.org/x/crypto from v0.21.0 to v0.23.0 to fix CVE-2024-45337.")
O("base64-nonsecret", "echo 'aGVsbG8gd29ybGQ=' | base64 -d   # prints: hello world")
O("color-hex", "--color-primary: #1e40af; --color-accent: #f59e0b;")
O("ids", "Build 20240503.7 finished in 4m12s on agent linux-x64-03 (job id 88412371).")
O("gha-masked", "Run npm publish\n  env:\n    NODE_AUTH_TOKEN: ***\nnpm notice Publishing to https://registry.npmjs.org/")
O("sentence-password-word", "The word 'password' appears 14 times in the codebase, mostly in validation messages.")
O("keychain", "security find-generic-password -s \"github.com\" -w   # reads the token from the macOS keychain")
O("generate-cmd", "openssl rand -base64 32 > /run/secrets/session_key   # generate, never print")
O("k8s-secret-ref", "kubectl create secret generic api-key --from-file=key=./api.key")
O("prose-rotation", "Rotate tokens every 90 days; the scanner warns 7 days before expiry.")
O("pr-title", "fix(auth): handle expired refresh tokens without logging the user out")
O("log-noval", "2024-05-03 10:01:22 INFO auth: token refreshed for user_id=1842 (expires_in=3600)")
O("log-noval", "WARN password policy check failed: too_short (len=6, min=12)")
O("secret-manager", "aws secretsmanager get-secret-value --secret-id prod/db --query SecretString --output text | jq .username")
O("ordinary-words", "The Secret Garden is on the reading list; Token Ring networks are covered in chapter 3.")
O("ordinary-words", "Keycloak realm 'acme' uses PKCE for the SPA client; no client secret is configured.")
O("path", "Open ~/.aws/credentials and ~/.config/gh/hosts.yml to check which profile is active.")

# ---------------------------------------------------------------------------


def check(cases):
    seen = set()
    errs = []
    for i, c in enumerate(cases):
        t = c["text"]
        if t in seen:
            errs.append(f"dup text at {i}: {c['family']}")
        seen.add(t)
        if len(t) > 600:
            errs.append(f"too long at {i}: {c['family']} ({len(t)})")
        if c["kind"] == "secret":
            for s in c["secrets"]:
                if s not in t:
                    errs.append(f"secret missing at {i}: {c['family']}")
                if len(s) < 4:
                    errs.append(f"secret too short at {i}: {c['family']}")
    # no secret of any case may leak into an ordinary text
    allsec = {s for c in cases if c["kind"] == "secret" for s in c["secrets"]}
    for c in cases:
        if c["kind"] == "ordinary":
            for s in allsec:
                if s in c["text"]:
                    errs.append(f"secret value inside ordinary {c['family']}")
    return errs


def main():
    errs = check(CASES)
    if errs:
        print("\n".join(errs), file=sys.stderr)
        sys.exit(1)
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "redaction_heldback3.jsonl")
    with open(out, "w", encoding="utf-8") as f:
        for c in CASES:
            f.write(json.dumps(c, ensure_ascii=False) + "\n")
    ns = sum(c["kind"] == "secret" for c in CASES)
    no = sum(c["kind"] == "ordinary" for c in CASES)
    langs = sorted({c["family"] for c in CASES if c["family"].startswith("lang-")})
    print(f"wrote {out}: {len(CASES)} cases, {ns} secret, {no} ordinary, "
          f"{len(langs)} language families")


if __name__ == "__main__":
    main()
