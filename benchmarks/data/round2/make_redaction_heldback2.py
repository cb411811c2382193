#!/usr/bin/env python3
"""Generate a held-back test set for vaultmem's secret redactor.

Written independently of the redactor and of its tuning corpus: the author of
these cases has not seen either.  Python 3.11, stdlib only, reproducible
(fixed random.Random seed).

Output: redaction_heldback2.jsonl next to this script, one JSON object a line:
  {"kind": "secret",   "family": ..., "text": ..., "secrets": [...]}
  {"kind": "ordinary", "family": ...,  "text": ...}

A "secret" case passes when none of its `secrets` survives redaction.
An "ordinary" case passes when its text comes through byte-for-byte unchanged.

Family naming: multilingual cases end in "-<lang>" (ISO 639-1) and start with
one of LANG_PREFIXES, so per-language counts can be derived from the family.

Usage:  python3 make_redaction_heldback2.py [--stats]
"""
from __future__ import annotations

import base64
import collections
import hashlib
import json
import os
import random
import re
import string
import sys

SEED = 20261205
rng = random.Random(SEED)

UP, LO, DG = string.ascii_uppercase, string.ascii_lowercase, string.digits
ALNUM = UP + LO + DG
HEX = "0123456789abcdef"
BECH32 = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"


def pick(alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def alnum(n): return pick(ALNUM, n)
def hexs(n): return pick(HEX, n)
def hexu(n): return pick(HEX.upper(), n)
def lower_alnum(n): return pick(LO + DG, n)
def upper_alnum(n): return pick(UP + DG, n)
def b64(n): return pick(ALNUM + "+/", n)
def b64url(n): return pick(ALNUM + "-_", n)
def word_chars(n): return pick(ALNUM + "_-", n)
def letters(n): return pick(UP + LO, n)
def b32(n): return pick(UP + "234567", n)
def digits(n): return rng.choice("123456789") + pick(DG, n - 1)


def b64e(s: str | bytes) -> str:
    if isinstance(s, str):
        s = s.encode()
    return base64.b64encode(s).decode()


def b64url_nopad(s: str | bytes) -> str:
    if isinstance(s, str):
        s = s.encode()
    return base64.urlsafe_b64encode(s).decode().rstrip("=")


def rand_bytes_b64(nbytes: int) -> str:
    return b64e(bytes(rng.randrange(256) for _ in range(nbytes)))


def uuid4ish() -> str:
    h = hexs(32)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{rng.choice('89ab')}{h[17:20]}-{h[20:]}"


def jwt(payload: dict, alg: str = "HS256") -> str:
    head = b64url_nopad(json.dumps({"alg": alg, "typ": "JWT"}, separators=(",", ":")))
    body = b64url_nopad(json.dumps(payload, separators=(",", ":")))
    sig = b64url(43 if alg == "HS256" else 342)
    return f"{head}.{body}.{sig}"


def sha1_of(s: str) -> str:
    return hashlib.sha1(s.encode()).hexdigest()


def sha256_of(s: str) -> str:
    return hashlib.sha256(s.encode()).hexdigest()


CASES: list[dict] = []


def S(family: str, template: str, *secrets: str) -> None:
    """Secret case. §1..§9 in the template are replaced by the secrets."""
    text = template
    for i, sec in enumerate(secrets, 1):
        text = text.replace(f"§{i}", sec)
    CASES.append({"kind": "secret", "family": family, "text": text, "secrets": list(secrets)})


def O(family: str, text: str) -> None:
    """Ordinary case: must come through unchanged."""
    CASES.append({"kind": "ordinary", "family": family, "text": text})


# ---------------------------------------------------------------------------
# 1. Credential phrases in other languages
#    family prefixes: phrase- (password), pin-, passphrase-, lang-token-
# ---------------------------------------------------------------------------

# Chinese (simplified + one traditional)
S("phrase-zh", "新会议室B的wifi密码是 §1 ，别发到大群里哈", "Lanshan@2024")
S("phrase-zh", "测试服务器 root 密码：§1（登录后请立即修改）", "Qx7#mPz9Lw")
S("phrase-zh", "数据库账号 admin，密码为「§1」，只给运维组用。", "huanghe_88!")
S("phrase-zh", "管理後台的密碼我改成 §1 了，週一再換回來", "Taipei101!go")
S("pin-zh", "测试用的那张银行卡，取款密码是§1，用完记得还给财务", "604218")

# Spanish
S("phrase-es", "La contraseña del wifi nuevo de la sala de reuniones B es §1, por si alguien la necesita.",
  "girasol-verde-42")
S("phrase-es", "oye, te paso la clave del servidor de staging: «§1» (no la compartas por Slack)",
  "Tr3s.Tigres.Tristes")
S("pin-es", "El PIN de la tarjeta de pruebas de Redsys es §1, caduca en 12/27.", "7391")
S("passphrase-es", "Frase de contraseña del llavero compartido del equipo:\n  §1\n(sin comillas, todo en minúsculas)",
  "tortuga azul come mango")

# Hindi
S("phrase-hi", "भाई, staging सर्वर का पासवर्ड है: §1 — किसी को मत बताना", "Dilli#2025")
S("phrase-hi", "नए राउटर का वाईफाई पासवर्ड मैंने बदल दिया है, अब वो ‘§1’ है", "chai-samosa-77")

# Arabic
S("phrase-ar", "كلمة المرور الخاصة بقاعدة البيانات في بيئة الاختبار هي: §1", "Sahara!9921")
S("phrase-ar", "رمز الدخول إلى لوحة التحكم \"§1\" — لا تشاركه مع أحد", "NakhlaBlue_55")

# Bengali
S("phrase-bn", "আমার জিমেইলের পাসওয়ার্ড হলো §1, প্লিজ কাউকে বলো না", "ilish_mach_2023")
S("pin-bn", "অফিসের দরজার পিন নম্বর §1, কাল থেকে নতুনটা চালু হবে", "3158")

# Portuguese
S("phrase-pt", "A senha do banco de produção é '§1' — troque depois do deploy.", "Jabuticaba#781")
S("lang-token-pt", "Segue o token de acesso da API de pagamentos: §1\nvale por 90 dias, não commita isso.",
  alnum(40))
S("passphrase-pt", "frase-senha da chave GPG do time: \"§1\"", "sabiá canta na palmeira velha")

# Russian
S("phrase-ru", "Пароль от VPN: §1 (логин тот же, что и в почте)", "Medved2024!Zima")
S("phrase-ru", "Логин admin, пароль — «§1». Потом поменяю.", "ёлка-палка-17")
S("phrase-ru", "пароль, который я вчера поставил на общий аккаунт в Figma для дизайнеров из Казани, — §1",
  "Kazan_Kreml_88")
S("pin-ru", "ПИН-код от сим-карты тестового телефона: §1", "5820")

# Japanese
S("phrase-ja", "本番DBのパスワードは「§1」です。取り扱い注意でお願いします。", "Sakura_2024!")
S("phrase-ja", "ゲストWi-Fi（SSID: guest-5F）のパスワードは §1 に変わりました", "nekoneko1234")
S("pin-ja", "社用スマホの暗証番号は§1です", "0471")

# German
S("phrase-de", "Das Passwort für den neuen Jenkins-Admin lautet §1 – bitte nach dem ersten Login ändern.",
  "Brezel!Sonne42")
S("phrase-de", "Zugang zum NAS im Keller\nBenutzer: hausmeister\nKennwort: §1", "Apfelstrudel_1987")
S("passphrase-de", "Die Passphrase für den GPG-Schlüssel ist: §1", "blaue Wolke tanzt leise")
S("pin-de", "Die PIN für das Türschloss im Serverraum ist seit Montag §1.", "2718")

# French
S("phrase-fr", "Le mot de passe de la base de recette est « §1 ».", "Croissant#2024")
S("phrase-fr", "mdp du compte de service : §1", "tournesol42")
S("phrase-fr", "Le mot de passe que j'ai configuré hier soir pour le compte admin du Grafana de préprod, "
  "c'est §1, tu peux le changer si tu veux.", "Mistral!88")

# Korean (one value with the particle glued on, as people type it)
S("phrase-ko", "관리자 계정 비밀번호는 §1입니다", "Hangang2024!")
S("phrase-ko", "와이파이 비번: §1 (5층 회의실)", "kimchi_jjigae_7")

# Turkish
S("phrase-tr", "Sunucunun root şifresi: §1", "Bogazici_1453")
S("phrase-tr", "Veritabanı parolası '§1' olarak ayarlandı, yarın değiştiririz.", "lokum!Antep27")

# Italian
S("phrase-it", "La password dell'account di test è §1, l'utente è qa.tester", "Pizzamargherita88")
S("pin-it", "ti mando il codice PIN del badge: §1", "6074")

# Vietnamese
S("phrase-vi", "Mật khẩu wifi phòng họp tầng 3 là: §1", "phoco2024hanoi")
S("phrase-vi", "mk tài khoản admin: §1 nhé", "SaiGon@789")

# Indonesian
S("phrase-id", "Kata sandi server staging: §1", "Rendang_Padang99")
S("phrase-id", "sandi wifi kantor yg baru §1 ya, jangan disebar", "kopiluwak2024")

# Polish, Dutch, Ukrainian, Thai, Swahili, Persian, Hebrew, Greek, Czech, Swedish
S("phrase-pl", "Hasło do panelu admina to §1", "Żubrówka!2023")
S("phrase-nl", "Het wachtwoord van de gedeelde mailbox is §1", "stroopwafel-fiets-9")
S("phrase-uk", "Пароль до бази даних на тестовому стенді: §1", "Kyiv_Kashtan_2024")
S("lang-token-uk", "Ключ доступу до API моніторингу — §1", hexs(32))
S("phrase-th", "รหัสผ่าน wifi ของออฟฟิศคือ §1", "tomyum9999")
S("phrase-sw", "Nenosiri la seva ya majaribio ni §1", "Simba_Jasiri77")
S("phrase-fa", "رمز عبور سرور: §1", "Tehran#1402")
S("phrase-he", "הסיסמה לשרת הבדיקות היא §1", "Shalom!2024")
S("phrase-el", "Ο κωδικός πρόσβασης του router είναι: §1", "Akropoli_1821")
S("phrase-cs", "Heslo k databázi je §1", "Knedlik*Zeli42")
S("phrase-sv", "Lösenordet till testkontot är §1", "Kanelbulle#77")

# English phrasing with long fillers / abbreviations
S("phrase-en", "fyi the password of the new wifi in meeting room B (the one by the kitchen) is §1", "MeetingB!2025")
S("phrase-en", "pw for the shared grafana viewer acct -> §1", "viewer_only_4u")


# ---------------------------------------------------------------------------
# 2. Vendor token formats (shapes from public docs / gitleaks default rules)
#    family prefix: token-
# ---------------------------------------------------------------------------

S("token-github-pat", "export GITHUB_TOKEN=§1", "ghp_" + alnum(36))
S("token-github-fine-grained",
  "I generated a fine-grained PAT for the release bot: §1 (expires in 30 days, repo scope only)",
  "github_pat_" + alnum(22) + "_" + alnum(59))
S("token-github-app",
  "git remote set-url origin https://x-access-token:§1@github.com/acme/infra.git", "ghs_" + alnum(36))
S("token-gitlab-pat",
  'curl --header "PRIVATE-TOKEN: §1" "https://gitlab.example.com/api/v4/projects?owned=true"',
  "glpat-" + word_chars(20))
S("token-gitlab-runner",
  '[[runners]]\n  name = "docker-runner-02"\n  url = "https://gitlab.com/"\n  token = "§1"\n  executor = "docker"',
  "glrt-" + word_chars(20))
S("token-slack-bot", 'slack:\n  bot_token: §1\n  channel: "#deploys"\n  notify_on: [failure]',
  "xoxb-" + digits(12) + "-" + digits(13) + "-" + alnum(24))
_slack_hook = alnum(24)
S("token-slack-webhook",
  "SLACK_WEBHOOK_URL=https://hooks.slack.com/services/T0" + upper_alnum(8) + "/B0" + upper_alnum(9) + "/§1",
  _slack_hook)
S("token-stripe-secret", 'import stripe\nstripe.api_key = "§1"\ncustomer = stripe.Customer.retrieve("cus_Q2xYh3kLm")',
  "sk_live_" + alnum(24))
S("token-stripe-restricted", "STRIPE_RESTRICTED_KEY=§1 node scripts/backfill-invoices.js",
  "rk_live_51" + alnum(97))
S("token-stripe-webhook", "stripe listen --forward-to localhost:4242/webhook\n> Ready! Your webhook signing secret is §1 (^C to quit)",
  "whsec_" + alnum(32))
S("token-openai",
  "openai keeps returning 429 with key §1 — is the project rate-limited or is it the org?",
  "sk-proj-" + word_chars(58) + "T3BlbkFJ" + word_chars(58))
S("token-anthropic", "export ANTHROPIC_API_KEY='§1'", "sk-ant-api03-" + word_chars(93) + "AA")
S("token-aws-credentials-file",
  "[default]\naws_access_key_id = §1\naws_secret_access_key = §2\nregion = eu-central-1",
  "AKIA" + b32(16), b64(40))
S("token-google-api-key",
  "GET https://maps.googleapis.com/maps/api/geocode/json?address=Alexanderplatz+Berlin&key=§1",
  "AIzaSy" + word_chars(33))
S("token-google-oauth-secret",
  '{"installed":{"client_id":"' + digits(12) + "-" + lower_alnum(32) + '.apps.googleusercontent.com",'
  '"project_id":"acme-cli","client_secret":"§1","redirect_uris":["http://localhost"]}}',
  "GOCSPX-" + word_chars(28))
S("token-gcp-access-token", "$ gcloud auth print-access-token\n§1", "ya29.a0" + word_chars(170))
S("token-npm", "//registry.npmjs.org/:_authToken=§1\nalways-auth=true", "npm_" + alnum(36))
S("token-pypi", "[distutils]\nindex-servers = pypi\n\n[pypi]\n  username = __token__\n  password = §1",
  "pypi-AgEIcHlwaS5vcmc" + word_chars(140))
S("token-sendgrid", "const sgMail = require('@sendgrid/mail');\nsgMail.setApiKey('§1');",
  "SG." + word_chars(22) + "." + word_chars(43))
S("token-twilio",
  "TWILIO_ACCOUNT_SID=AC" + hexs(32) + "\nTWILIO_API_KEY=§1\nTWILIO_API_SECRET=§2",
  "SK" + hexs(32), alnum(32))
S("token-mailgun",
  "curl -s --user 'api:§1' https://api.mailgun.net/v3/mg.acme.io/messages -F from=noreply@acme.io -F to=qa@acme.io -F subject=test",
  "key-" + hexs(32))
S("token-mailchimp", "newsletter:\n  provider: mailchimp\n  mailchimp_api_key: §1\n  list_id: 4f2a91c7e0",
  hexs(32) + "-us14")
S("token-shopify",
  "curl -X GET https://acme-store.myshopify.com/admin/api/2024-04/orders.json -H 'X-Shopify-Access-Token: §1'",
  "shpat_" + hexs(32))
S("token-digitalocean", "doctl auth init --context prod --access-token §1", "dop_v1_" + hexs(64))
S("token-doppler", 'DOPPLER_TOKEN="§1" doppler run -- npm start', "dp.pt." + alnum(43))
S("token-vault", "export VAULT_ADDR=https://vault.acme.internal:8200\nexport VAULT_TOKEN=§1",
  "hvs.CAESI" + word_chars(86))
S("token-terraform-cloud",
  '{\n  "credentials": {\n    "app.terraform.io": {\n      "token": "§1"\n    }\n  }\n}',
  lower_alnum(14) + ".atlasv1." + word_chars(67))
S("token-huggingface", "huggingface-cli login --token §1 --add-to-git-credential", "hf_" + letters(34))
S("token-databricks",
  "[DEFAULT]\nhost  = https://adb-" + digits(16) + ".7.azuredatabricks.net\ntoken = §1",
  "dapi" + hexs(32))
S("token-postman", "the postman key for the CI monitor is §1 — it's tied to my account though",
  "PMAK-" + hexs(24) + "-" + hexs(34))
S("token-pulumi", "PULUMI_ACCESS_TOKEN=§1 pulumi up --yes --stack acme/prod", "pul-" + hexs(40))
S("token-grafana-sa",
  'curl -s -H "Authorization: Bearer §1" https://grafana.acme.io/api/dashboards/uid/f3a1c9e2 | jq .meta',
  "glsa_" + alnum(32) + "_" + hexs(8))
S("token-linear", "LINEAR_API_KEY=§1", "lin_api_" + alnum(40))
S("token-sentry", "sentry-cli --auth-token §1 releases new -p web 2025.06.03", "sntryu_" + hexs(64))
_discord_id = digits(19)
S("token-discord-bot", 'bot = commands.Bot(command_prefix="!", intents=intents)\nbot.run("§1")',
  b64url_nopad(_discord_id) + "." + b64url(6) + "." + b64url(38))
S("token-telegram-bot",
  "requests.post(f\"https://api.telegram.org/bot§1/sendMessage\", data={\"chat_id\": -1001234567890, \"text\": msg})",
  digits(10) + ":AA" + word_chars(33))
S("token-azure-client-secret",
  "az login --service-principal -u " + uuid4ish() + " -p '§1' --tenant " + uuid4ish(),
  alnum(3) + pick(DG, 1) + "Q~" + pick(ALNUM + "_~.-", 34))
S("token-age-secret-key",
  "# created: 2025-05-30T09:12:44+02:00\n# public key: age1" + pick(BECH32.lower(), 58) + "\n§1",
  "AGE-SECRET-KEY-1" + pick(BECH32, 58))
_ec_body = "\n".join([b64(64), b64(64), b64(64), b64(32) + "=="])
S("token-private-key-pem",
  "$ cat deploy/keys/signing.pem\n-----BEGIN EC PRIVATE KEY-----\n§1\n-----END EC PRIVATE KEY-----",
  "MHcCAQEEI" + _ec_body[9:])
S("token-jwt",
  "2025-06-03 10:41:07 DEBUG httpx: GET https://api.acme.io/v1/me headers={'authorization': 'Bearer §1'}",
  jwt({"sub": "user_8841", "org": "acme", "iat": 1748940000, "exp": 1748943600}))
S("token-atlassian", "JIRA_USER=dana@acme.io\nJIRA_API_TOKEN=§1",
  "ATATT3xFfGF0" + word_chars(171) + "=" + hexu(8))
S("token-dynatrace",
  "curl -H 'Authorization: Api-Token §1' 'https://abc12345.live.dynatrace.com/api/v2/metrics?pageSize=5'",
  "dt0c01." + upper_alnum(24) + "." + upper_alnum(64))
S("token-newrelic", "NEW_RELIC_API_KEY=§1 newrelic nerdgraph query '{ actor { user { name } } }'",
  "NRAK-" + upper_alnum(27))
S("token-square", "square:\n  environment: production\n  access_token: §1", "EAAA" + word_chars(60))
S("token-planetscale", "mysql -h aws.connect.psdb.cloud -u " + lower_alnum(12) + " -p§1 --ssl-mode=VERIFY_IDENTITY acme",
  "pscale_pw_" + word_chars(43))
S("token-groq", "use my groq key for the eval run: §1 (please don't burn through the quota)",
  "gsk_" + alnum(52))
S("token-notion", "NOTION_TOKEN=§1\nNOTION_DATABASE_ID=" + hexs(32), "ntn_" + pick(DG, 11) + alnum(35))
S("token-rubygems", "$ cat ~/.gem/credentials\n---\n:rubygems_api_key: §1", "rubygems_" + hexs(48))
S("token-heroku", "$ heroku authorizations:create -d 'ci deploy'\nCreating OAuth Authorization... done\nClient:      <none>\nID:          " + uuid4ish() + "\nDescription: ci deploy\nScope:       global\nToken:       §1",
  "HRKU-AA" + word_chars(58))
S("token-flyio", "FLY_API_TOKEN=§1 flyctl deploy --remote-only", "fo1_" + word_chars(43))
S("token-alibaba", "阿里云 OSS 配置：\nAccessKey ID: §1\nAccessKey Secret: §2", "LTAI" + alnum(20), alnum(30))
S("token-brevo", "BREVO_API_KEY=§1", "xkeysib-" + hexs(64) + "-" + alnum(16))
S("token-shippo", "client = shippo.Shippo(api_key_header=\"§1\")", "shippo_live_" + hexs(40))
S("token-openshift", "oc login --token=§1 --server=https://api.ocp4.acme.internal:6443",
  "sha256~" + word_chars(43))
_teams_sig = lower_alnum(32)
S("token-teams-webhook",
  "TEAMS_WEBHOOK=https://acme.webhook.office.com/webhookb2/" + uuid4ish() + "@" + uuid4ish()
  + "/IncomingWebhook/§1/" + uuid4ish(), _teams_sig)
S("token-discord-webhook",
  "webhook_url: https://discord.com/api/webhooks/" + digits(19) + "/§1", word_chars(68))
S("token-azure-storage",
  '"AzureWebJobsStorage": "DefaultEndpointsProtocol=https;AccountName=acmefuncs;AccountKey=§1;EndpointSuffix=core.windows.net"',
  rand_bytes_b64(64))
S("token-dockerhub-pat", "docker login -u acmeci -p §1", "dckr_pat_" + word_chars(27))
S("token-replicate", "REPLICATE_API_TOKEN=§1 python run_sdxl.py --prompt 'a red fox'", "r8_" + alnum(37))
S("token-perplexity", 'client = OpenAI(api_key="§1", base_url="https://api.perplexity.ai")', "pplx-" + alnum(48))
S("token-maxmind", "# GeoIP.conf\nAccountID 948213\nLicenseKey §1\nEditionIDs GeoLite2-City GeoLite2-Country",
  alnum(6) + "_" + alnum(29) + "_mmk")
S("token-okta",
  'curl -H "Accept: application/json" -H "Authorization: SSWS §1" "https://acme.okta.com/api/v1/users?limit=25"',
  "00" + word_chars(40))
S("token-supabase", "supabase login --token §1", "sbp_" + hexs(40))
S("token-easypost", "EasyPost::Client.new(api_key: '§1')", "EZAK" + alnum(54))
S("token-prefect", "prefect cloud login -k §1 --workspace acme/prod", "pnu_" + alnum(36))
S("token-scalingo", "scalingo login --api-token §1", "tk-us-" + word_chars(48))
S("token-django-secret",
  "# settings.py\nDEBUG = False\nSECRET_KEY = '§1'\nALLOWED_HOSTS = ['acme.io']",
  "django-insecure-" + pick(LO + DG + "!@#$%^&*(-_=+)", 50))


# ---------------------------------------------------------------------------
# 3. Passwords in command lines, connection URLs and config files
#    family prefixes: cli-, url-, config-
# ---------------------------------------------------------------------------

S("cli-mysql-p-glued",
  'mysql -h 10.0.4.12 -u reporting -p§1 analytics -e "SELECT COUNT(*) FROM events WHERE ts > NOW() - INTERVAL 1 DAY"',
  "Rp0rt1ng2024")
S("cli-mysqldump-pipe",
  "mysqldump -uroot -p'§1' --all-databases --single-transaction | gzip > /backup/all-$(date +%F).sql.gz",
  "My$ql#Dump&9")
S("cli-password-eq-quoted",
  'mysql --host=db.internal --user=app --password="§1" app_prod < migrations/0042_add_index.sql',
  "T!ger;Lily 77")
S("cli-env-prefix-chain",
  "PGPASSWORD=§1 psql -h pg.internal -U etl -d warehouse -c '\\dt' && pg_dump -h pg.internal -U etl warehouse > wh.sql",
  "etl_Pg#5519")
S("cli-docker-login-stdin",
  "echo '§1' | docker login registry.acme.io -u ci-bot --password-stdin", "Reg1stry*Push")
S("cli-docker-run-env",
  "docker run -d --name pg -e POSTGRES_USER=app -e POSTGRES_PASSWORD=§1 -p 5432:5432 postgres:16",
  "Tr0ub4dor-and-3")
S("cli-kubectl-from-literal",
  "kubectl create secret generic api-db --from-literal=username=api --from-literal=password='§1' -n prod",
  "Wq8$zL!p0")
S("cli-helm-set",
  "helm upgrade --install cache bitnami/redis --namespace infra --set auth.password=§1 --set replica.replicaCount=2",
  "R3dis-Pa55-9")
S("cli-sshpass",
  "sshpass -p '§1' ssh -o StrictHostKeyChecking=no deploy@10.0.0.4 'sudo systemctl restart app'",
  "gr33nT3a!")
S("cli-curl-user",
  "curl -u admin:§1 -X POST https://jenkins.acme.io/job/deploy-prod/buildWithParameters?TAG=v2.3.1",
  "Adm1nJenk1ns")
S("cli-redis-a", "redis-cli -h cache.internal -a '§1' --no-auth-warning INFO keyspace", "N0t$oS3cret")
S("cli-here-string",
  "openssl enc -aes-256-cbc -pbkdf2 -in dump.sql -out dump.sql.enc -pass stdin <<< '§1'",
  "Sunset Boulevard 1950")
S("cli-heredoc-ftp", "ftp -n ftp.acme.io <<EOF\nuser uploader §1\nbinary\nput build-2025-06-03.zip\nbye\nEOF",
  "Upl0ad3r!")
S("cli-powershell-securestring",
  "$pw = ConvertTo-SecureString '§1' -AsPlainText -Force; New-LocalUser -Name svc_backup -Password $pw",
  "Winter2024!Kx")
S("cli-windows-net-user", "net user backup §1 /add && net localgroup administrators backup /add",
  "Bkp#Srv2019")
S("cli-ldapsearch",
  'ldapsearch -x -H ldaps://ldap.acme.io -D "cn=admin,dc=acme,dc=io" -w \'§1\' -b "ou=people,dc=acme,dc=io" "(uid=jdoe)"',
  "Ldap!Bind2024")
S("cli-smbclient", "smbclient //fs01/scans -U 'ACME\\svc_scan%§1' -c 'ls; get report.pdf'", "Sc4nner_77")
S("cli-java-sysprop",
  "java -Djavax.net.ssl.keyStore=/etc/app/ks.p12 -Djavax.net.ssl.keyStorePassword=§1 -jar app.jar",
  "ks-pass-8812")
S("cli-openssl-passout",
  "openssl pkcs12 -export -in cert.pem -inkey key.pem -out bundle.p12 -passout pass:§1", "P12export!Pw")
S("cli-htpasswd", "htpasswd -bc /etc/nginx/.htpasswd admin '§1'", "V3ry$ecret")
S("cli-export-and-run", 'export DB_PASSWORD="§1" && npm run migrate && npm start', "n0de-Migr8!")
S("cli-wget-password",
  "wget --user=build --password=§1 https://nexus.acme.io/repository/raw/app-1.2.3.tar.gz",
  "NexusB1ld")
S("cli-git-clone-userinfo", "git clone https://jdoe:§1@bitbucket.org/acme/payments.git",
  "ATBB" + alnum(28) + hexu(8))
S("cli-sqlcmd", 'sqlcmd -S tcp:sql01,1433 -U sa -P "§1" -Q "SELECT @@VERSION"', "Str0ng!Passw0rd")
S("cli-rabbitmqctl",
  'rabbitmqctl add_user orders §1 && rabbitmqctl set_permissions -p / orders ".*" ".*" ".*"',
  "Rabb1t-0rders")
S("cli-sudo-stdin", "echo §1 | sudo -S apt-get install -y nginx", "letmein2025")

S("url-mongodb-srv",
  'mongosh "mongodb+srv://svc_app:§1@cluster0.ab1cd.mongodb.net/shop?retryWrites=true&w=majority"',
  "Mng0Pass77")
S("url-postgres-percent-encoded",
  "DATABASE_URL=postgresql://app:§1@db.internal:5432/app?sslmode=require", "Zk9%40pq%21x")
S("url-redis-no-user",
  "REDIS_URL=redis://:§1@redis-12345.c1.us-east-1-2.ec2.cloud.redislabs.com:12345/0", alnum(32))
S("url-amqp-python", "broker_url = 'amqp://celery:§1@rabbit.internal:5672//'\nresult_backend = 'rpc://'",
  "c3l3ry_br0ker")
S("url-smtp", "EMAIL_URL=smtp+tls://postmaster%40mg.acme.io:§1@smtp.mailgun.org:587", hexs(32) + "-" + hexs(8) + "-" + hexs(8))
S("url-jdbc-query-param",
  "spring.datasource.url=jdbc:mysql://db:3306/app?user=app&password=§1&useSSL=true", "jdbcPw_4471")

_laravel_key = rand_bytes_b64(32)
S("config-dotenv",
  "APP_ENV=production\nAPP_KEY=base64:§1\nDB_HOST=10.2.0.15\nDB_DATABASE=shop\nDB_USERNAME=shop\nDB_PASSWORD=§2\nMAIL_PASSWORD=§3",
  _laravel_key, "laravel_Pr0d!", alnum(16))
S("config-yaml-spring",
  "spring:\n  datasource:\n    url: jdbc:postgresql://pg.prod:5432/orders\n    username: orders_svc\n    password: §1\n  jpa:\n    open-in-view: false",
  "0rd3rs-S3rv1ce")
S("config-json-connstr",
  '{\n  "ConnectionStrings": {\n    "Default": "Server=sql01;Database=Shop;User Id=sa;Password=§1;TrustServerCertificate=True"\n  },\n  "Logging": { "LogLevel": { "Default": "Information" } }\n}',
  "Sh0p!Sql#2024")
S("config-toml", '[database]\nhost = "localhost"\nport = 5432\nuser = "diesel"\npassword = "§1"', "rust-Diesel-42")
S("config-ini-mycnf", "# ~/.my.cnf\n[client]\nuser=backup\npassword=§1\nhost=127.0.0.1", "b4ckup_only")
_heroku_tok = uuid4ish()
S("config-netrc",
  "machine api.heroku.com\n  login dana@acme.io\n  password §1\nmachine git.heroku.com\n  login dana@acme.io\n  password §1",
  _heroku_tok)
S("config-pgpass", "db.internal:5432:app:app_user:§1\n*:*:*:replicator:§2", "pgP4ss_wd", "r3pl1c4t0r!")
S("config-docker-auth",
  '{\n  "auths": {\n    "registry.acme.io": {\n      "auth": "§1"\n    }\n  },\n  "credsStore": ""\n}',
  b64e("ci-bot:R3gistry!Pull"))
S("config-git-credentials", "$ cat ~/.git-credentials\nhttps://jdoe:§1@github.com", "ghp_" + alnum(36))
S("config-docker-compose",
  "services:\n  db:\n    image: mysql:8.0\n    environment:\n      MYSQL_ROOT_PASSWORD: §1\n      MYSQL_DATABASE: wp\n      MYSQL_USER: wp\n      MYSQL_PASSWORD: \"§2\"",
  "r00t-My5ql", "wp_Pass_2024")
S("config-pip-conf",
  "[global]\nindex-url = https://__token__:§1@gitlab.acme.io/api/v4/projects/42/packages/pypi/simple",
  "glpat-" + word_chars(20))
S("config-tfvars", 'region            = "eu-west-1"\ndb_admin_password = "§1"\ninstance_class    = "db.t3.medium"',
  "Tf-Adm1n-Pw")
S("config-nuget",
  '<packageSourceCredentials>\n  <acme>\n    <add key="Username" value="build" />\n    <add key="ClearTextPassword" value="§1" />\n  </acme>\n</packageSourceCredentials>',
  "NuG3t-Feed!")
_wp_alpha = ALNUM + "!@#$%^&*()-_[]{}<>~+=,.;:/?|"
S("config-wp-config",
  "define( 'DB_PASSWORD', '§1' );\ndefine( 'AUTH_KEY',         '§2' );\ndefine( 'SECURE_AUTH_KEY',  '§3' );",
  "wpDb#2024!", pick(_wp_alpha, 64), pick(_wp_alpha, 64))
S("config-tomcat-users", '<tomcat-users>\n  <user username="manager" password="§1" roles="manager-gui,admin-gui"/>\n</tomcat-users>',
  "T0mcat_Mgr")
S("config-k8s-stringdata",
  "apiVersion: v1\nkind: Secret\nmetadata:\n  name: smtp\ntype: Opaque\nstringData:\n  SMTP_USER: alerts@acme.io\n  SMTP_PASSWORD: §1",
  "smtp-Al3rts-99")
S("config-properties", "spring.mail.host=smtp.office365.com\nspring.mail.username=noreply@acme.io\nspring.mail.password=§1",
  "N0reply#365")
S("config-ansible-vars", "---\nansible_user: deploy\nansible_become_pass: §1\napp_port: 8080", "becomeR00t!")
S("config-xml-datasource",
  '<datasource jndi-name="java:/OrdersDS" pool-name="OrdersDS">\n  <connection-url>jdbc:oracle:thin:@ora01:1521/ORCL</connection-url>\n  <security><user-name>orders</user-name><password>§1</password></security>\n</datasource>',
  "0racle_Ord3rs")


# ---------------------------------------------------------------------------
# 4. Tool calls and tool output
#    family prefix: tool-
# ---------------------------------------------------------------------------

def tool_use(name: str, inp: dict) -> str:
    return json.dumps({"type": "tool_use", "id": "toolu_01" + alnum(22), "name": name, "input": inp},
                      ensure_ascii=False)


_tok = b64url(40)
S("tool-bash-call",
  tool_use("Bash", {"command": "curl -sS -H 'Authorization: Bearer " + _tok + "' https://api.acme.io/v1/me | jq .",
                    "description": "Check which account the token belongs to"}),
  _tok)
_leak = "sk_live_" + alnum(24)
S("tool-grep-call",
  tool_use("Grep", {"pattern": _leak, "path": "/home/dana/src/billing", "output_mode": "files_with_matches"}),
  _leak)
_django = "django-insecure-" + pick(LO + DG + "!@#$%^&*(-_=+)", 50)
S("tool-edit-call",
  tool_use("Edit", {"file_path": "/app/config/settings.py",
                    "old_string": "SECRET_KEY = '" + _django + "'",
                    "new_string": "SECRET_KEY = os.environ['DJANGO_SECRET_KEY']"}),
  _django)
_pw = "Ops!Stage-204"
S("tool-bash-call-sshpass",
  'Bash(command="ansible-playbook -i inventory/stage site.yml -e ansible_password=' + _pw + ' --limit web")',
  _pw)

S("tool-cat-env",
  "$ cat .env\nNODE_ENV=development\nPORT=3000\nJWT_SECRET=§1\nSTRIPE_SECRET_KEY=§2\nLOG_LEVEL=debug",
  b64(48), "sk_test_" + alnum(24))
_k8s_pw = "Kub3rn3t3s!DB"
S("tool-kubectl-secret-yaml",
  "$ kubectl get secret db-credentials -n prod -o yaml\napiVersion: v1\ndata:\n  api-key: §1\n  password: §2\n  username: YXBw\nkind: Secret\nmetadata:\n  name: db-credentials\n  namespace: prod\ntype: Opaque",
  b64e(hexs(32)), b64e(_k8s_pw))
S("tool-vault-kv-get",
  "$ vault kv get secret/prod/payments\n====== Data ======\nKey         Value\n---         -----\napi_key     §1\npassword    §2\nusername    payments",
  alnum(32), "Paym3nts!Vault")
S("tool-aws-sts",
  '$ aws sts get-session-token --duration-seconds 3600\n{\n    "Credentials": {\n        "AccessKeyId": "§1",\n        "SecretAccessKey": "§2",\n        "SessionToken": "§3",\n        "Expiration": "2025-06-03T21:14:09+00:00"\n    }\n}',
  "ASIA" + b32(16), b64(40), "IQoJb3JpZ2luX2VjE" + b64(240))
S("tool-printenv",
  "$ printenv | sort\nGITHUB_TOKEN=§1\nHOME=/home/runner\nNPM_TOKEN=§2\nPATH=/usr/local/bin:/usr/bin:/bin\nSHELL=/bin/bash",
  "ghs_" + alnum(36), "npm_" + alnum(36))
S("tool-python-traceback",
  "Traceback (most recent call last):\n  File \"/app/jobs/export.py\", line 88, in run\n    resp.raise_for_status()\n  File \"/usr/lib/python3.11/site-packages/requests/models.py\", line 1021, in raise_for_status\n    raise HTTPError(http_error_msg, response=self)\nrequests.exceptions.HTTPError: 401 Client Error: Unauthorized for url: https://api.acme.io/v2/reports?api_key=§1&format=csv",
  hexs(40))
S("tool-nginx-access-log",
  '203.0.113.7 - - [03/Jun/2025:10:12:44 +0000] "GET /api/export?format=csv&access_token=§1 HTTP/1.1" 200 5120 "-" "python-requests/2.31.0"',
  b64url(43))
S("tool-curl-verbose",
  "> GET /api/v1/users HTTP/2\n> Host: internal.acme.io\n> authorization: Basic §1\n> user-agent: curl/8.5.0\n> accept: */*\n>\n< HTTP/2 200\n< content-type: application/json",
  b64e("svc-reports:Rep0rts-Only!"))
S("tool-docker-inspect",
  '$ docker inspect pg --format \'{{json .Config.Env}}\'\n["POSTGRES_PASSWORD=§1","POSTGRES_USER=app","PGDATA=/var/lib/postgresql/data","PG_VERSION=16.3"]',
  "pgLocal_5432x")
S("tool-gh-auth-status",
  "$ gh auth status --show-token\ngithub.com\n  ✓ Logged in to github.com account jdoe (keyring)\n  - Active account: true\n  - Git operations protocol: https\n  - Token: §1\n  - Token scopes: 'gist', 'read:org', 'repo', 'workflow'",
  "gho_" + alnum(36))
S("tool-heroku-config",
  "$ heroku config -a acme-api\n=== acme-api Config Vars\nDATABASE_URL: postgres://u8a9f2k1:§1@ec2-52-1-2-3.compute-1.amazonaws.com:5432/d3k2l1m0\nRAILS_ENV:    production",
  "p" + hexs(63))
_gl = "glpat-" + word_chars(20)
S("tool-git-remote-v",
  "$ git remote -v\norigin\thttps://oauth2:§1@gitlab.com/acme/backend.git (fetch)\norigin\thttps://oauth2:§1@gitlab.com/acme/backend.git (push)",
  _gl)
S("tool-node-error-config",
  "Error: connect ECONNREFUSED 10.0.3.9:5432\n    at TCPConnectWrap.afterConnect [as oncomplete] (node:net:1555:16) {\n  errno: -111,\n  code: 'ECONNREFUSED',\n  config: { host: '10.0.3.9', user: 'api', password: '§1', database: 'core' }\n}",
  "c0re-Api-Pg")
S("tool-az-access-token",
  '$ az account get-access-token --resource https://management.azure.com\n{\n  "accessToken": "§1",\n  "expiresOn": "2025-06-03 12:41:07.000000",\n  "tokenType": "Bearer"\n}',
  jwt({"aud": "https://management.azure.com", "iss": "https://sts.windows.net/" + uuid4ish() + "/",
       "oid": uuid4ish(), "exp": 1748954467}, alg="RS256")[:420])
S("tool-tfstate-jq",
  "$ jq '.resources[] | select(.type==\"aws_db_instance\") | .instances[0].attributes | {username, password, endpoint}' terraform.tfstate\n{\n  \"username\": \"app\",\n  \"password\": \"§1\",\n  \"endpoint\": \"app-prod.c9xk2.eu-west-1.rds.amazonaws.com:5432\"\n}",
  alnum(24))
_jenkins = hexs(32)
S("tool-jenkins-initial-password",
  "*************************************************************\n\nJenkins initial setup is required. An admin user has been created and a password generated.\nPlease use the following password to proceed to installation:\n\n§1\n\nThis may also be found at: /var/jenkins_home/secrets/initialAdminPassword\n\n*************************************************************",
  _jenkins)
S("tool-elastic-reset-password",
  "$ bin/elasticsearch-reset-password -u elastic\nThis tool will reset the password of the [elastic] user to an autogenerated value.\nThe password will be printed in the console.\nPlease confirm that you would like to continue [y/N]y\n\n\nPassword for the [elastic] user successfully reset.\nNew value: §1",
  pick(ALNUM + "*_=+-", 20))
S("tool-argocd-initial-secret",
  "$ kubectl -n argocd get secret argocd-initial-admin-secret -o jsonpath=\"{.data.password}\" | base64 -d\n§1",
  alnum(16))
S("tool-mysql-temp-password",
  "2025-06-03T08:14:51.214390Z 6 [Note] [MY-010454] [Server] A temporary password is generated for root@localhost: §1",
  pick(ALNUM + ";<,.>:_-", 12))
S("tool-java-stacktrace",
  "org.springframework.jdbc.CannotGetJdbcConnectionException: Failed to obtain JDBC Connection\nCaused by: java.sql.SQLException: Access denied for user 'app'@'10.0.2.7' (using password: YES)\n  url=jdbc:mysql://db:3306/app?user=app&password=§1&serverTimezone=UTC\n\tat com.mysql.cj.jdbc.exceptions.SQLError.createSQLException(SQLError.java:130)",
  "wr0ngPa55!")
S("tool-websocket-log",
  "[2025-06-03 09:01:13] ws: connecting to wss://stream.acme.io/v1/ticks?symbols=BTC,ETH&token=§1\n[2025-06-03 09:01:14] ws: connected (latency 41ms)",
  alnum(48))
_tr_pw = "Tr4nscr1pt#Pw"
S("tool-result-transcript",
  json.dumps({"type": "tool_result", "tool_use_id": "toolu_01" + alnum(22),
              "content": "Created user 'reporting' with password " + _tr_pw + "\nGranted SELECT on analytics.* to 'reporting'@'%'"},
             ensure_ascii=False),
  _tr_pw)
S("tool-docker-compose-config",
  "$ docker compose config\nservices:\n  api:\n    environment:\n      JWT_SIGNING_KEY: §1\n      REDIS_HOST: redis\n    image: acme/api:1.8.2",
  hexs(64))


# ---------------------------------------------------------------------------
# 5. High-entropy values next to credential words, no vendor prefix
#    family prefixes: entropy-label-<lang>, nextline-<lang>
# ---------------------------------------------------------------------------

S("entropy-label-en", "here's the api key for the staging analytics account: §1", hexs(32))
S("entropy-label-en",
  "curl -X POST https://auth.acme.io/oauth/token -d 'grant_type=client_credentials&client_id=reporting&client_secret=§1'",
  b64url(40))
S("entropy-label-en", "orb:\n  circleci:\n    auth_token: \"§1\"", hexs(40))
S("entropy-label-en",
  '"auth": {\n  "type": "bearer",\n  "bearer": [\n    { "key": "token", "value": "§1", "type": "string" }\n  ]\n}',
  b64url(36))
S("entropy-label-en", "http GET api.acme.io/v1/items X-Api-Key:§1 limit==50", alnum(32))
S("entropy-label-en", '{"endpoint": "http://minio.local:9000", "access_key": "§1", "secret_key": "§2"}',
  upper_alnum(20), b64(40))
S("entropy-label-en", "SESSION_SECRET=§1", b64(64))
S("entropy-label-zh", "这是对象存储的密钥：§1 ，别提交到仓库里", b64(40))
S("entropy-label-de", "API-Schlüssel für das Staging: §1", b64url(32))
S("entropy-label-fr", "clé secrète HMAC pour signer les webhooks → §1", hexs(64))
S("entropy-label-ru", "Токен для вебхука: §1", b64url(36))
S("entropy-label-pt", "chave secreta do cliente OAuth: §1", alnum(48))
S("entropy-label-ko", "인증 토큰: §1", b64url(44))
S("entropy-label-it", "chiave API del gestionale: §1", hexs(40))
S("entropy-label-tr", "API anahtarı: §1", alnum(32))
S("entropy-label-hi", "एपीआई की: §1", hexs(48))
S("entropy-label-ar", "مفتاح API الخاص بالخدمة: §1", b64(44))
S("entropy-label-ja", "シークレット：§1", alnum(40))
S("entropy-label-es", "el secreto del webhook es §1", b64url(32))

S("nextline-en",
  "Here's the webhook signing secret — copy it now, it won't be shown again:\n\n```\n§1\n```",
  b64(44))
S("nextline-es", "token de acceso:\n§1", b64url(52))
S("nextline-ja", "認証トークン（期限は来月末まで）:\n§1", b64url(48))
S("nextline-pl", "Token dostępu (ważny 24h):\n§1", alnum(40))
S("nextline-en", "Password:\n  §1\n(one-time, change on first login)", "Xk7!pQ2r#Lm9")


# ---------------------------------------------------------------------------
# 6. Ordinary look-alikes: must come through unchanged
# ---------------------------------------------------------------------------

_sha = sha1_of("revert login flow")
O("git-sha-prose", f"Reverted {_sha} — that commit broke the login flow on Safari.")
O("git-log-oneline",
  "$ git log --oneline -5\n" + "\n".join(
      f"{sha1_of(m)[:7]} {m}" for m in [
          "fix(auth): handle expired refresh token", "chore: bump eslint to 9.4.0",
          "feat: add password strength meter", "docs: explain API key rotation", "test: cover 401 retry path"]))
O("git-show-header",
  f"commit {sha1_of('kms rotation')}\nAuthor: Dana Whitfield <dana@acme.io>\nDate:   Tue Jun 3 14:02:11 2025 +0200\n\n"
  "    Rotate signing keys via KMS instead of env vars")
O("git-rebase-todo",
  f"pick {sha1_of('a')[:7]} Add token refresh\nsquash {sha1_of('b')[:7]} Fix typo in password validator\n"
  f"pick {sha1_of('c')[:7]} Remove hardcoded secret from tests")
O("sha256sum-output",
  f"$ sha256sum node-v20.14.0-linux-x64.tar.xz\n{sha256_of('node')}  node-v20.14.0-linux-x64.tar.xz")
O("docker-digest-from", f"FROM python:3.12-slim@sha256:{sha256_of('py312')}\nWORKDIR /app\nCOPY . .")
O("docker-pull-output",
  f"3.12-slim: Pulling from library/python\nDigest: sha256:{sha256_of('pull')}\n"
  "Status: Downloaded newer image for python:3.12-slim\ndocker.io/library/python:3.12-slim")
O("docker-images",
  "REPOSITORY   TAG      IMAGE ID       CREATED       SIZE\n"
  f"acme/api     1.8.2    {sha256_of('img1')[:12]}   2 days ago    212MB\n"
  f"postgres     16       {sha256_of('img2')[:12]}   3 weeks ago   432MB")
O("uuid-request-id",
  f"2025-06-03T10:14:22.118Z INFO request completed request_id={uuid4ish()} status=200 duration_ms=42")
O("uuid-azure-account",
  '{\n  "environmentName": "AzureCloud",\n  "id": "' + uuid4ish() + '",\n  "isDefault": true,\n  "name": "acme-prod",\n  "tenantId": "'
  + uuid4ish() + '",\n  "user": { "name": "dana@acme.io", "type": "user" }\n}')
O("npm-integrity",
  '"node_modules/lodash": {\n  "version": "4.17.21",\n  "resolved": "https://registry.npmjs.org/lodash/-/lodash-4.17.21.tgz",\n  "integrity": "sha512-'
  + base64.b64encode(hashlib.sha512(b"lodash").digest()).decode() + '"\n}')
O("pip-hash", f"requests==2.32.3 \\\n    --hash=sha256:{sha256_of('requests')}")
O("go-sum",
  "github.com/google/uuid v1.6.0 h1:" + base64.b64encode(hashlib.sha256(b"uuid").digest()).decode()
  + "\ngithub.com/google/uuid v1.6.0/go.mod h1:" + base64.b64encode(hashlib.sha256(b"uuidmod").digest()).decode())
O("cargo-lock-checksum",
  '[[package]]\nname = "serde"\nversion = "1.0.203"\nsource = "registry+https://github.com/rust-lang/crates.io-index"\nchecksum = "'
  + sha256_of("serde") + '"')
O("css-colors", ":root {\n  --brand: #1f6feb;\n  --brand-dark: #0b3d91;\n  --accent: #ffb347;\n  --muted: rgba(36, 41, 47, 0.6);\n}")
O("semver", "Bumped fastapi from 0.110.3 to 0.111.0, pydantic ^2.7.1, pinned uvicorn~=0.29.0; release tag v3.4.0-rc.2+build.5114f85.")
O("isbn", "The book is ISBN 978-0-13-468599-1 (2nd edition); the older print was ISBN-10 0-201-63361-2.")
O("aws-arn", "Assuming role arn:aws:iam::123456789012:role/github-actions-deploy with session name gha-4821 in eu-west-1")
O("aws-resource-ids",
  "Instance i-0a1b2c3d4e5f67890 in subnet-0f1e2d3c4b5a69788 (vpc-0123abcd4567ef890), sg-0aa11bb22cc33dd44 attached, AMI ami-0c55b159cbfafe1f0")
O("aws-kms-arn", "SSE is on with key arn:aws:kms:us-east-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab")
O("data-uri-base64",
  '<img alt="" width="1" height="1" src="data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==">')
O("base64-harmless", "$ echo 'aGVsbG8gd29ybGQK' | base64 -d\nhello world")
O("ssh-fingerprint",
  "$ ssh-keygen -lf ~/.ssh/id_ed25519.pub\n256 SHA256:" + base64.b64encode(hashlib.sha256(b"edkey").digest()).decode().rstrip("=")
  + " dana@laptop (ED25519)")
O("ssh-known-hosts-prompt",
  "The authenticity of host 'github.com (140.82.121.4)' can't be established.\n"
  "ED25519 key fingerprint is SHA256:+DiY3wvvV6TuJJhbpZisF/zLDA0zPMSvHdkr4UvCOqU.\n"
  "Are you sure you want to continue connecting (yes/no/[fingerprint])?")
O("ssh-public-key",
  "Add this to authorized_keys on the bastion:\nssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI"
  + base64.b64encode(b"\x00" + hashlib.sha256(b"pub").digest()).decode()[1:44] + " dana@laptop")
O("public-certificate",
  "$ cat ca.crt\n-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU" + base64.b64encode(hashlib.sha512(b"c1").digest()).decode()[:44]
  + "\n" + base64.b64encode(hashlib.sha512(b"c2").digest()).decode()[:64] + "\n"
  + base64.b64encode(hashlib.sha256(b"c3").digest()).decode() + "\n-----END CERTIFICATE-----")
O("jwt-explanation",
  "A JWT is three base64url parts joined by dots: header.payload.signature. The header of an HS256 token always starts "
  "with eyJhbGciOi, which is just '{\"alg\":' encoded, so don't panic when you see that prefix in the docs.")
O("jwt-decoded-claims",
  'Decoded payload: {"sub": "1234567890", "name": "John Doe", "iat": 1516239022} — the signature is checked against the JWKS key kid=2024-06-rotation.')
O("trace-ids", "traceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
O("k8s-pod-names",
  "NAME                      READY   STATUS    RESTARTS   AGE\napi-7d9f8b6c5d-x2k4q      1/1     Running   0          3h\nworker-5c6b7d8f9-qm7zt    1/1     Running   2          3h")
O("ipv6-mac", "inet6 fe80::1c2b:3dff:fe4a:5b6c/64 scope link\nether 1e:2b:3d:4a:5b:6c brd ff:ff:ff:ff:ff:ff")
O("grafana-url-uid", "Dashboard: https://grafana.acme.io/d/f3a1c9e2/api-latency?orgId=1&from=now-6h&to=now")

# variable references (no value)
O("var-ref-shell", 'psql "postgresql://app:$DB_PASSWORD@db.internal:5432/app" -c "select now()"')
O("var-ref-default", 'curl -fsS -H "X-Api-Key: ${API_KEY:?unset}" https://api.acme.io/v1/health')
O("var-ref-python", 'SECRET_KEY = os.environ["SECRET_KEY"]\nDATABASES["default"]["PASSWORD"] = os.getenv("DB_PASSWORD", "")')
O("var-ref-node", "const octokit = new Octokit({ auth: process.env.TOKEN });")
O("var-ref-gha", "      - run: npm publish --access public\n        env:\n          NODE_AUTH_TOKEN: ${{ secrets.NPM_TOKEN }}")
O("var-ref-helm", "  password: {{ .Values.postgresql.auth.password | quote }}")
O("var-ref-k8s-secretkeyref",
  "env:\n  - name: DB_PASSWORD\n    valueFrom:\n      secretKeyRef:\n        name: db-credentials\n        key: password")
O("var-ref-terraform", 'resource "aws_db_instance" "main" {\n  username = "app"\n  password = var.db_password\n}')
O("var-ref-dotnet", 'StripeConfiguration.ApiKey = builder.Configuration["Stripe:SecretKey"];')
O("var-ref-vault-template", '{{ with secret "secret/data/prod/db" }}{{ .Data.data.password }}{{ end }}')
O("var-ref-curl-header", 'curl -H "Authorization: token $GITHUB_TOKEN" https://api.github.com/user')

# header names, commands and code that mention credentials without a value
O("header-names", "The gateway strips the Authorization and X-Api-Key headers before forwarding, and adds X-Request-Id instead.")
O("kubectl-get-secrets",
  "NAME                  TYPE                                  DATA   AGE\ndb-credentials        Opaque                                2      41d\n"
  "tls-acme-io           kubernetes.io/tls                     2      12d")
O("kubectl-create-secret-from-file",
  "kubectl create secret generic db-credentials --from-env-file=.env.prod -n prod --dry-run=client -o yaml")
O("vault-cmd-no-output", "vault kv get -field=password secret/prod/db")
O("aws-secretsmanager-cmd",
  "aws secretsmanager get-secret-value --secret-id prod/db/password --query SecretString --output text")
O("terraform-sensitive-var", 'variable "db_password" {\n  type      = string\n  sensitive = true\n}')
O("terraform-plan-sensitive", '  + resource "aws_db_instance" "main" {\n      + password = (sensitive value)\n      + username = "app"\n    }')
O("code-getpass",
  'password = getpass.getpass("Password: ")\nif not verify_password(password, user.password_hash):\n    raise AuthError("invalid credentials")')
O("code-regex-pattern", 'GITHUB_PAT = re.compile(r"ghp_[A-Za-z0-9]{36}")\nAWS_KEY_ID = re.compile(r"AKIA[0-9A-Z]{16}")')
O("sql-migration", "ALTER TABLE users ADD COLUMN password_hash TEXT NOT NULL;\nCREATE INDEX idx_api_tokens_user_id ON api_tokens(user_id);")
O("path-names", "Edited src/auth/token_refresh.py and tests/test_secret_manager.py; also renamed config/secrets.example.yaml.")
O("test-names",
  "FAILED tests/auth/test_password_reset.py::test_reset_rejects_expired_token - AssertionError: 200 != 400\n"
  "PASSED tests/auth/test_password_reset.py::test_reset_requires_valid_email")
O("stack-trace-no-secret",
  'File "/app/services/auth.py", line 218, in verify_password\n    return bcrypt.checkpw(plain.encode(), hashed)\nValueError: Invalid salt')
O("docs-api-key-howto",
  "Create an API key in the dashboard under Settings → API Keys, then store it in your password manager; it is shown only once.")
O("prose-gitleaks", "Don't commit secrets; the pre-commit hook runs gitleaks on staged files and blocks the commit.")
O("password-manager-prose", 'I moved the shared passwords into 1Password, vault "Infra", item "prod-db".')
O("conventional-commit", "feat(auth): rotate JWT signing key every 24h (#5120)")
O("secret-santa", "Secret Santa draw is on Friday — budget is 20 euros.")

# prose about credentials in many languages, naming no value
O("prose-en", "The token expired overnight, so the nightly sync failed with 401; I refreshed it and re-ran the job.")
O("prose-en", "The secret is named db-credentials and lives in the prod namespace; the deployment mounts it at /etc/db.")
O("prose-de", "Das Passwort ist abgelaufen, bitte über das Self-Service-Portal ein neues setzen.")
O("prose-de", "Der Primärschlüssel der Tabelle ist user_id, der Fremdschlüssel zeigt auf orders.id.")
O("prose-ja", "このモデルのコンテキスト長は128kで、出力のトークン数は4096が上限です。")
O("prose-zh", "密码错误次数过多，账号已锁定 30 分钟，请稍后再试。")
O("prose-zh", "这个模型一次最多处理 200k 个 token，超出部分会被截断。")
O("prose-es", "Olvidé mi contraseña otra vez, ¿cómo la restablezco desde la consola?")
O("prose-es", "El token de la sesión se guarda en una cookie HttpOnly con SameSite=Lax.")
O("prose-fr", "Le jeton a expiré après 3600 secondes, il faut rappeler /oauth/token avec le refresh token.")
O("prose-ru", "Пароль должен содержать не менее 12 символов, включая цифру и спецсимвол.")
O("prose-ko", "비밀번호 재설정 링크를 이메일로 보냈습니다. 24시간 안에 확인해 주세요.")
O("prose-pt", "A chave de API foi revogada ontem depois do incidente; gere uma nova no painel.")
O("prose-hi", "पासवर्ड कम से कम 8 अक्षरों का होना चाहिए और उसमें एक अंक होना ज़रूरी है।")
O("prose-ar", "انتهت صلاحية كلمة المرور، يرجى تغييرها من صفحة الإعدادات.")
O("prose-tr", "Şifre sıfırlama e-postası gönderildi, gelen kutunuzu kontrol edin.")
O("prose-vi", "Mật khẩu phải có ít nhất 8 ký tự và không được trùng với 5 mật khẩu gần nhất.")
O("prose-it", "Il token di accesso scade dopo un'ora; usa il refresh token per rinnovarlo.")
O("prose-pl", "Hasło zostało zmienione. Jeśli to nie Ty, skontaktuj się z działem IT.")
O("prose-nl", "Je wachtwoord verloopt over 5 dagen; kies een nieuw wachtwoord via het portaal.")
O("prose-id", "Kata sandi salah. Sisa percobaan: 2.")
O("prose-uk", "Токен доступу відкликано, згенеруйте новий у налаштуваннях профілю.")
O("prose-th", "รหัสผ่านไม่ถูกต้อง กรุณาลองใหม่อีกครั้ง")
O("prose-he", "הסיסמה חייבת לכלול לפחות 10 תווים.")
O("prose-el", "Ο κωδικός πρόσβασης έληξε. Παρακαλώ ορίστε νέο.")
O("prose-sv", "Lösenordet måste bytas var 90:e dag enligt policyn.")
O("prose-sw", "Nenosiri lako limebadilishwa kwa mafanikio.")
O("prose-fa", "رمز عبور شما با موفقیت تغییر کرد.")
O("prose-cs", "Heslo musí mít alespoň 12 znaků a nesmí obsahovat uživatelské jméno.")
O("prose-bn", "পাসওয়ার্ড ভুল হয়েছে, আবার চেষ্টা করুন।")

# placeholders: a placeholder names no real credential, so it is ordinary
O("placeholder-angle-brackets", "export OPENAI_API_KEY=<your-api-key>\nexport ANTHROPIC_API_KEY=<your-anthropic-key>")
O("placeholder-angle-header", 'curl -H "Authorization: Bearer <token>" https://api.acme.io/v1/me')
O("placeholder-xxxx", "aws_access_key_id = XXXXXXXXXXXXXXXXXXXX\naws_secret_access_key = xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx")
O("placeholder-changeme-in-example-file",
  "# .env.example — copy to .env and fill in real values\nPOSTGRES_USER=app\nPOSTGRES_PASSWORD=changeme\nSECRET_KEY=replace-me")
O("placeholder-your-token-here", 'headers = {"Authorization": "Bearer YOUR_TOKEN_HERE"}')
O("placeholder-masked-stars", "DATABASE_URL=postgres://app:********@db.internal:5432/app")
O("placeholder-npm-protected",
  '; "user" config from /home/dana/.npmrc\n\n//registry.npmjs.org/:_authToken = (protected)\nregistry = "https://registry.npmjs.org/"')
O("placeholder-aws-doc-example",
  "# example from the AWS docs\naws_access_key_id = AKIAIOSFODNN7EXAMPLE\naws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")

# config keys with empty values
O("config-empty-dotenv", "DB_HOST=localhost\nDB_PORT=5432\nDB_PASSWORD=\nAPI_KEY=\nDEBUG=true")
O("config-empty-yaml", 'smtp:\n  host: smtp.acme.io\n  port: 587\n  username: ""\n  password: ""')
O("config-null-json", '{"auth": {"type": "none", "token": null, "password": null}}')

# LLM token counts and other "token" senses
O("llm-token-usage", '"usage": {"input_tokens": 18234, "cache_read_input_tokens": 12000, "output_tokens": 912}')
O("llm-max-tokens", 'resp = client.messages.create(model="claude-sonnet-4-5", max_tokens=4096, messages=msgs)')
O("llm-token-prose", "The prompt was 12,843 tokens, over the 8k limit, so I chunked the file into three parts.")
O("rate-limiter-tokens", "The token bucket refills at 100 tokens/s with a burst of 250.")

# PIN-like numbers that are not PINs
O("port-numbers", "Postgres listens on 5432, Redis on 6379, and the app on 8080; only 443 is exposed.")
O("issue-numbers", "Fixed in #4821, see also PR #4830 and issue #4799.")
O("http-status", "Got HTTP 401 Unauthorized from /api/login, then 403 after retrying with the other account.")
O("pin-policy", "PIN must be 4–6 digits and cannot be a sequence like 1234 or a repeat like 0000.")
O("otp-prompt", "Enter the 6-digit code from your authenticator app. The code expires in 30 seconds.")
O("pid-and-uid", "nginx: master process started, pid 24817, running as uid 101 gid 101")


# ---------------------------------------------------------------------------
# checks, stats, output
# ---------------------------------------------------------------------------

LANG_PREFIXES = ("phrase-", "pin-", "passphrase-", "lang-token-", "entropy-label-", "nextline-", "prose-")
LANG_RE = re.compile(r"-([a-z]{2})$")


def lang_of(family: str) -> str | None:
    if family.startswith(LANG_PREFIXES):
        m = LANG_RE.search(family)
        if m:
            return m.group(1)
    return None


def check(cases: list[dict]) -> list[str]:
    errors = []
    seen = set()
    for i, c in enumerate(cases):
        t = c["text"]
        if t in seen:
            errors.append(f"#{i} duplicate text: {t[:60]!r}")
        seen.add(t)
        if "§" in t:
            errors.append(f"#{i} unreplaced marker: {t[:60]!r}")
        if len(t) > 620:
            errors.append(f"#{i} too long ({len(t)}): {c['family']}")
        if c["kind"] == "secret":
            if not c["secrets"]:
                errors.append(f"#{i} no secrets")
            for s in c["secrets"]:
                if not s or s not in t:
                    errors.append(f"#{i} secret not in text: {s!r}")
        elif c["kind"] != "ordinary":
            errors.append(f"#{i} bad kind")
    return errors


def stats(cases: list[dict]) -> dict:
    sec = [c for c in cases if c["kind"] == "secret"]
    ordn = [c for c in cases if c["kind"] == "ordinary"]
    fam = collections.Counter((c["kind"], c["family"]) for c in cases)
    lang_sec = collections.Counter(lang_of(c["family"]) for c in sec if lang_of(c["family"]))
    lang_ord = collections.Counter(lang_of(c["family"]) for c in ordn if lang_of(c["family"]))
    multilingual_secret = [c for c in sec if lang_of(c["family"]) and lang_of(c["family"]) != "en"
                           and c["family"].startswith(("phrase-", "pin-", "passphrase-", "lang-token-"))]
    return {
        "secret": len(sec), "ordinary": len(ordn),
        "secret_strings": sum(len(c["secrets"]) for c in sec),
        "token_families": sorted({c["family"] for c in sec if c["family"].startswith("token-")}),
        "families": fam, "lang_secret": lang_sec, "lang_ordinary": lang_ord,
        "multilingual_phrase_cases": len(multilingual_secret),
        "multilingual_phrase_langs": sorted({lang_of(c["family"]) for c in multilingual_secret}),
        "groups": collections.Counter(c["kind"] + ":" + c["family"].split("-")[0] for c in cases),
    }


def main() -> int:
    errors = check(CASES)
    if errors:
        print("\n".join(errors), file=sys.stderr)
        return 1
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "redaction_heldback2.jsonl")
    with open(out, "w", encoding="utf-8") as f:
        for c in CASES:
            f.write(json.dumps(c, ensure_ascii=False) + "\n")
    st = stats(CASES)
    print(f"wrote {out}: {st['secret']} secret ({st['secret_strings']} secret strings), {st['ordinary']} ordinary")
    print(f"multilingual credential-phrase cases: {st['multilingual_phrase_cases']} "
          f"in {len(st['multilingual_phrase_langs'])} languages: {' '.join(st['multilingual_phrase_langs'])}")
    print(f"token families: {len(st['token_families'])}")
    if "--stats" in sys.argv:
        print("\ngroups:")
        for k, v in sorted(st["groups"].items()):
            print(f"  {k:24s} {v}")
        print("\nlanguages (secret):", dict(sorted(st["lang_secret"].items())))
        print("languages (ordinary):", dict(sorted(st["lang_ordinary"].items())))
        print("\nfamilies:")
        for (k, f), v in sorted(st["families"].items()):
            print(f"  {k:8s} {f:40s} {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
