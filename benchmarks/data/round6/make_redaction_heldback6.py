#!/usr/bin/env python3
"""Deterministic generator for redaction_heldback6.jsonl (held-back redaction test set).

Python 3.11 standard library only.  Rerunning gives a byte-identical file.
Templates use @@name@@ / @@name#k@@ placeholders; a name is either a secret
generator (its value is listed in "secrets") or a filler generator (ids, hosts,
digests ... that must be kept).  Every template is used exactly twice.
"""
import base64, hashlib, json, os, random, re, string, sys, uuid

SEED = 60617
R = random.Random(SEED)
USED = set()
UP = string.ascii_uppercase
LO = string.ascii_lowercase
DG = string.digits
AL = UP + LO + DG
HEX = "0123456789abcdef"
B64 = AL + "+/"
B64U = AL + "-_"

def rs(n, cs=AL):
    return "".join(R.choice(cs) for _ in range(n))

def rb(n):
    return bytes(R.getrandbits(8) for _ in range(n))

WORDS = ["harbor", "tulip", "granite", "mango", "falcon", "kettle", "violet", "summit", "pepper",
         "lantern", "cobalt", "meadow", "saffron", "walrus", "quartz", "biscuit", "canyon", "ember",
         "juniper", "orchid", "pelican", "raven", "sierra", "tundra", "velvet", "willow", "zephyr",
         "anchor", "bamboo", "cactus", "dolphin", "fjord", "glacier", "hazel", "igloo", "jasmine",
         "koala", "lagoon", "marble", "nectar", "otter", "paprika", "quill", "rhubarb", "sparrow",
         "thistle", "umber", "vortex", "wasabi", "yonder", "zucchini", "Sonne", "Katze", "Brezel",
         "fromage", "nuage", "gato", "playa", "kawa", "sakura", "tigre", "pomodoro", "kanelbulle"]
SYM = "!*+-=^_.~"  # no @ # $ % ? / : so URL/.env/shell contexts stay unambiguous

def g_pw():
    s = R.randrange(4)
    if s == 0:
        return R.choice(WORDS).capitalize() + R.choice(SYM) + R.choice(WORDS) + str(R.randrange(10, 9999))
    if s == 1:
        while True:
            v = rs(R.randrange(14, 22), AL + "!*+-=^_")
            if any(c.isdigit() for c in v) and any(c in "!*+-=^_" for c in v):
                return v
    if s == 2:
        return R.choice(WORDS) + str(R.randrange(1, 99)) + R.choice(SYM) + R.choice(WORDS).upper() + R.choice("!*")
    return rs(3, UP) + R.choice(SYM) + rs(5, LO) + str(R.randrange(100, 999)) + R.choice(SYM) + rs(4, AL)

def g_phrase():
    return R.choice(["-", " ", ".", "_"]).join(R.choice(WORDS).lower() for _ in range(R.randrange(4, 6)))

def g_pin4(): return "".join(R.choice(DG) for _ in range(4))
def g_pin6(): return "".join(R.choice(DG) for _ in range(6))
def g_code():
    v = "".join(R.choice(DG) for _ in range(R.randrange(4, 8)))
    return v + R.choice(["", "", "#", "*"])
def g_wifi():
    return R.choice([g_phrase, lambda: rs(R.randrange(12, 20), AL + "!#%&")])()
def g_akid(): return "AKIA" + rs(16, UP + "234567")
def g_aksec(): return rs(40, B64)
def g_stsess(): return "IQoJb3JpZ2luX2Vj" + rs(200, B64)
def g_ghp(): return "ghp_" + rs(36)
def g_ghpat(): return "github_pat_11" + rs(20, UP + DG) + "_" + rs(59)
def g_glpat(): return "glpat-" + rs(20, B64U)
def g_slack(): return "xoxb-" + rs(12, DG) + "-" + rs(13, DG) + "-" + rs(24)
def g_slackhook(): return rs(24)
def g_stripe(): return R.choice(["sk_live_", "rk_live_"]) + rs(R.choice([24, 99]))
def g_whsec(): return "whsec_" + rs(32)
def g_openai(): return "sk-proj-" + rs(R.choice([48, 120]), B64U)
def g_ant(): return "sk-ant-api03-" + rs(93, B64U) + "AA"
def g_gapi(): return "AIza" + rs(35, B64U)
def g_ya29(): return "ya29.a0A" + rs(150, B64U)
def g_sg(): return "SG." + rs(22, B64U) + "." + rs(43, B64U)
def g_hex32(): return rs(32, HEX)
def g_hex40(): return rs(40, HEX)
def g_hex64(): return rs(64, HEX)
def g_hex128(): return rs(128, HEX)
def g_b64k(): return base64.b64encode(rb(32)).decode()
def g_azkey(): return base64.b64encode(rb(64)).decode()
def g_azsec(): return rs(3, AL) + R.choice("5678") + "Q~" + rs(34, AL + "~._-")
def g_npm(): return "npm_" + rs(36)
def g_pypi(): return "pypi-AgEIcHlwaS5vcmcCJ" + rs(120, B64U)
def g_hf(): return "hf_" + rs(34, UP + LO)
def g_dop(): return "dop_v1_" + rs(64, HEX)
def g_hcloud(): return rs(64)
def g_ltai(): return "LTAI5t" + rs(18)
def g_alisec(): return rs(30)
def g_vault(): return "hvs." + rs(24)
def g_fernet(): return base64.urlsafe_b64encode(rb(32)).decode()
def g_djsk(): return rs(50, LO + DG + "!@#%^&*(-_=+)")
def g_laravel(): return "base64:" + base64.b64encode(rb(32)).decode()
def g_discord(): return "M" + rs(23, AL) + "." + rs(6, B64U) + "." + rs(38, B64U)
def g_telegram(): return str(R.randrange(10**9, 8 * 10**9)) + ":AA" + rs(33, B64U)
def g_mailgun(): return "key-" + rs(32, HEX)
def g_totp(): return rs(32, UP + "234567")
def g_rc(): return rs(5, LO + DG) + "-" + rs(5, LO + DG)
def g_sess(): return rs(R.choice([32, 40, 48]), LO + DG)
def g_cookie(): return "s%3A" + rs(32, B64U) + "." + rs(43, B64U)
def g_dckr(): return "dckr_pat_" + rs(27, B64U)
def g_shpat(): return "shpat_" + rs(32, HEX)
def g_atl(): return "ATATT3xFfGF0" + rs(60, B64U) + "=" + rs(8, UP + DG)
def g_linear(): return "lin_api_" + rs(40)
def g_cf(): return rs(40, B64U)
def g_sntry(): return "sntrys_eyJpYXQiOjE3" + rs(60, AL)
def g_nrak(): return "NRAK-" + rs(27, UP + DG)
def g_uuids(): return str(uuid.UUID(int=R.getrandbits(128), version=4))
def g_mapbox(): return "sk.eyJ1Ijoi" + rs(40, B64U) + "." + rs(22, B64U)
def g_ocitok(): return rs(20, AL + "()<>;:.-_[]")
def g_erl(): return rs(20, UP)
def g_jupy(): return rs(48, HEX)
def g_wg(): return base64.b64encode(rb(32)).decode()

def _b64url(b):
    return base64.urlsafe_b64encode(b).decode().rstrip("=")

def g_jwt():
    hdr = _b64url(json.dumps({"alg": R.choice(["HS256", "RS256"]), "typ": "JWT"}, separators=(",", ":")).encode())
    pl = _b64url(json.dumps({"sub": rs(12, DG), "iat": 1700000000 + R.randrange(10**7),
                             "role": R.choice(["service_role", "admin", "deployer"])}, separators=(",", ":")).encode())
    return hdr + "." + pl + "." + rs(43, B64U)

def _pem_lines(prefix, nfull=5):
    lines = []
    for i in range(nfull):
        if i == 0:
            lines.append(prefix + rs(64 - len(prefix), B64))
        else:
            lines.append(rs(64, B64))
    lines.append(rs(R.randrange(20, 60), B64) + R.choice(["", "=", "=="]))
    return lines

def g_pem():
    ls = _pem_lines(R.choice(["MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcw", "MIIEvgIBADANBgkqhkiG9w0BAQEFAASCBKgw"]))
    return "\n".join(ls), ls

def g_pemrsa():
    ls = _pem_lines("MIIEpAIBAAKCAQEA")
    return "\n".join(ls), ls

def g_pemec():
    ls = ["MHcCAQEEI" + rs(55, B64), rs(64, B64), rs(R.randrange(20, 40), B64) + "=="]
    return "\n".join(ls), ls

def g_pemj():  # PEM body inside JSON string with literal \n
    ls = _pem_lines("MIIEvAIBADANBgkqhkiG9w0BAQEFAASCBKYw", 4)
    return "\\n".join(ls), ls

def g_ossh():
    first = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW"
    ls = [rs(70, B64) for _ in range(4)] + [rs(R.randrange(10, 40), B64) + "="]
    return "\n".join([first] + ls), ls

def g_pgp():
    ls = ["lQVYBG" + rs(58, B64)] + [rs(64, B64) for _ in range(4)] + [rs(30, B64) + "="]
    return "\n".join(ls), ls

def g_ovpn():
    ls = [rs(32, HEX) for _ in range(6)]
    return "\n".join(ls), ls

def g_b64auth():
    return base64.b64encode((R.choice(["deploy", "ci-bot", "admin", "jenkins", "svc_build"]) + ":" + g_pw()).encode()).decode()

# ---- fillers (kept) ----
FIRST = ["anna", "jonas", "priya", "kenji", "lucia", "omar", "mei", "sven", "fatima", "diego", "olga",
         "tomasz", "aisha", "lars", "yuki", "carlos", "ines", "nikos", "leila", "arjun", "sofia", "emeka",
         "hana", "mateo", "zeynep", "bao", "ravi", "elin", "pedro", "noa", "ivan", "amara"]
LAST = ["muller", "sato", "kowalski", "garcia", "nguyen", "silva", "rossi", "berg", "haddad", "novak",
        "okafor", "kim", "larsen", "yilmaz", "dubois", "ivanova", "patel", "costa", "virtanen", "cohen"]
DOM = ["acme-logistics.io", "brightfin.de", "kumo-labs.jp", "pampa.com.ar", "nordlys.no", "tesela.es",
       "lotus-retail.in", "vltava.cz", "savanna-pay.co.ke", "maple-ops.ca", "ankara-soft.com.tr", "sunda.id"]

def g_user(): return R.choice(FIRST) + R.choice(["", ".", "_"]) + R.choice(LAST) + R.choice(["", str(R.randrange(2, 99))])
def g_email(): return R.choice(FIRST) + "." + R.choice(LAST) + "@" + R.choice(DOM)
def g_host(): return R.choice(["db", "pg", "mysql", "cache", "api", "web", "mq", "vault", "ci", "git", "mail", "k8s"]) + "-" + R.choice(["prod", "stg", "dev", "eu1", "us2", "ap3"]) + "-" + str(R.randrange(1, 40)) + "." + R.choice(DOM)
def g_ip(): return "10.%d.%d.%d" % (R.randrange(256), R.randrange(256), R.randrange(1, 255))
def g_pubip(): return R.choice(["203.0.113.", "198.51.100.", "192.0.2."]) + str(R.randrange(2, 254))
def g_uuid(): return str(uuid.UUID(int=R.getrandbits(128), version=4))
def g_sha(): return rs(40, HEX)
def g_sha256(): return rs(64, HEX)
def g_short(): return rs(7, HEX)
def g_ver(): return "%d.%d.%d" % (R.randrange(0, 12), R.randrange(0, 30), R.randrange(0, 40))
def g_port(): return str(R.randrange(1024, 65000))
def g_n(): return str(R.randrange(100, 99999))
def g_date(): return "2024-%02d-%02d" % (R.randrange(1, 13), R.randrange(1, 29))
def g_time(): return "%02d:%02d:%02d" % (R.randrange(24), R.randrange(60), R.randrange(60))
def g_ticket(): return R.choice(["OPS", "PLAT", "SEC", "INFRA", "APP", "DATA", "WEB"]) + "-" + str(R.randrange(100, 9999))
def g_order(): return R.choice(["ORD", "SO", "PO", "BST"]) + "-" + str(R.randrange(2019, 2025)) + "-" + str(R.randrange(10000, 999999))
def g_track(): return R.choice(["1Z" + rs(6, UP + DG) + rs(10, DG), "JJD" + rs(18, DG), "LX" + rs(9, DG) + "DE", "9400" + rs(18, DG)])
def g_b64pub(): return base64.b64encode(rb(R.choice([24, 36, 48]))).decode()
def g_sri(): return "sha512-" + base64.b64encode(rb(64)).decode()
def g_h1(): return "h1:" + base64.b64encode(rb(32)).decode()
def g_sshpub(): return "AAAAC3NzaC1lZDI1NTE5AAAAI" + base64.b64encode(rb(32)).decode()[:43]
def g_fp(): return "SHA256:" + base64.b64encode(rb(32)).decode().rstrip("=")
def g_cert():
    return "\n".join(["MIID" + rs(60, B64)] + [rs(64, B64) for _ in range(4)] + [rs(28, B64) + "="])
def g_serial(): return rs(40, HEX)
def g_hexid(): return rs(32, HEX)
def g_gpgfp(): return rs(40, UP[:6] + DG)
def g_instid(): return "i-0" + rs(16, HEX)
def g_ocid(): return "ocid1.instance.oc1.eu-frankfurt-1." + rs(60, LO + DG)
def g_podsfx(): return rs(9, LO[:6] + DG) + "-" + rs(5, LO + DG)
def g_pr(): return str(R.randrange(100, 20000))
def g_money(): return "%d.%02d" % (R.randrange(10, 5000), R.randrange(100))
def g_dur(): return "%d.%ds" % (R.randrange(0, 300), R.randrange(10))
def g_ms(): return str(R.randrange(3, 2500))
def g_big(): return str(R.randrange(10**6, 10**9))
def g_qid(): return rs(10, UP[:6] + DG)
def g_reqid(): return rs(26, UP + DG)
def g_opid(): return rs(26, LO + DG)
def g_png(): return "iVBORw0KGgoAAAANSUhEUgAA" + rs(80, B64)
def g_ghrun(): return str(R.randrange(6 * 10**9, 9 * 10**9))
def g_ph(): return "+%d %d %d %d" % (R.choice([49, 33, 34, 81, 91, 55, 254]), R.randrange(100, 999), R.randrange(100, 999), R.randrange(1000, 9999))

SECRET_GENS = {k[2:]: v for k, v in dict(globals()).items() if k.startswith("g_") and k[2:] in (
    "pw phrase pin4 pin6 code wifi aksec stsess ghp ghpat glpat slack slackhook stripe whsec openai ant gapi ya29 sg "
    "hex32 hex40 hex64 hex128 b64k azkey azsec npm pypi hf dop hcloud ltai alisec vault fernet djsk laravel discord "
    "telegram mailgun totp rc sess cookie dckr shpat atl linear cf sntry nrak uuids mapbox ocitok erl jupy wg jwt "
    "pem pemrsa pemec pemj ossh pgp ovpn b64auth").split()}
FILL_GENS = {k[2:]: v for k, v in dict(globals()).items() if k.startswith("g_") and k[2:] not in SECRET_GENS}
# akid (access key id) is an identifier: filled but not listed as a secret
assert "akid" in FILL_GENS

# =====================================================================
# SECRET TEMPLATES
# =====================================================================
ST = []
def S(fam, text):
    ST.append((fam, text.strip("\n")))

S("dotenv", r'''
# .env  (prod, do not commit)
NODE_ENV=production
PORT=@@port@@
DATABASE_URL=postgres://shop_app:@@pw@@@@@host@@:5432/shop?sslmode=require
REDIS_URL=redis://@@host#2@@:6379/0
STRIPE_SECRET_KEY=@@stripe@@
STRIPE_PUBLISHABLE_KEY=pk_live_see_dashboard
LOG_LEVEL=info
''')
S("dotenv_laravel", r'''
APP_NAME=Buchhaltung
APP_ENV=production
APP_KEY=@@laravel@@
APP_DEBUG=false
DB_CONNECTION=mysql
DB_HOST=@@ip@@
DB_DATABASE=ledger
DB_USERNAME=ledger_rw
DB_PASSWORD=@@pw@@
MAIL_MAILER=smtp
MAIL_HOST=smtp.mailgun.org
MAIL_USERNAME=postmaster@mg.@@email@@
MAIL_PASSWORD=@@pw#2@@
''')
S("docker_compose", r'''
services:
  db:
    image: postgres:16.2
    environment:
      POSTGRES_USER: keycloak
      POSTGRES_PASSWORD: "@@pw@@"
    volumes: [pgdata:/var/lib/postgresql/data]
  minio:
    image: quay.io/minio/minio:RELEASE.2024-03-15T01-07-19Z
    command: server /data --console-address ":9001"
    environment:
      MINIO_ROOT_USER: minioadmin-@@n@@
      MINIO_ROOT_PASSWORD: @@pw#2@@
volumes:
  pgdata: {}
''')
S("k8s_secret_stringdata", r'''
apiVersion: v1
kind: Secret
metadata:
  name: payments-api
  namespace: payments
type: Opaque
stringData:
  DB_PASSWORD: "@@pw@@"
  PSP_API_KEY: "@@hex32@@"
  WEBHOOK_SECRET: "@@whsec@@"
''')
S("k8s_secret_data", r'''
$ kubectl get secret grafana-admin -n monitoring -o yaml
apiVersion: v1
data:
  admin-password: @@b64auth@@
  admin-user: YWRtaW4=
kind: Secret
metadata:
  creationTimestamp: "@@date@@T08:12:44Z"
  name: grafana-admin
  namespace: monitoring
  uid: @@uuid@@
type: Opaque
''')
S("aws_credentials", r'''
$ cat ~/.aws/credentials
[default]
aws_access_key_id = @@akid@@
aws_secret_access_key = @@aksec@@
region = eu-central-1

[legacy-billing]
aws_access_key_id = @@akid#2@@
aws_secret_access_key = @@aksec#2@@
''')
S("aws_cli_create_key", r'''
$ aws iam create-access-key --user-name ci-deployer
{
    "AccessKey": {
        "UserName": "ci-deployer",
        "AccessKeyId": "@@akid@@",
        "Status": "Active",
        "SecretAccessKey": "@@aksec@@",
        "CreateDate": "@@date@@T10:41:07+00:00"
    }
}
''')
S("aws_sts", r'''
$ aws sts assume-role --role-arn arn:aws:iam::@@big@@:role/OrgAdmin --role-session-name hotfix
{
    "Credentials": {
        "AccessKeyId": "ASIA@@qid@@XYZ12",
        "SecretAccessKey": "@@aksec@@",
        "SessionToken": "@@stsess@@",
        "Expiration": "@@date@@T17:02:11+00:00"
    }
}
''')
S("gcloud_token", r'''
$ gcloud auth print-access-token --impersonate-service-account=etl@data-@@n@@.iam.gserviceaccount.com
WARNING: This command is using service account impersonation.
@@ya29@@
$ curl -s -H "Authorization: Bearer @@ya29@@" https://bigquery.googleapis.com/bigquery/v2/projects/data-@@n@@/datasets | jq '.datasets | length'
14
''')
S("gcp_sa_json", r'''
{
  "type": "service_account",
  "project_id": "analytics-@@n@@",
  "private_key_id": "@@serial@@",
  "private_key": "-----BEGIN PRIVATE KEY-----\n@@pemj@@\n-----END PRIVATE KEY-----\n",
  "client_email": "looker@analytics-@@n@@.iam.gserviceaccount.com",
  "client_id": "@@big@@"
}
''')
S("azure_sp", r'''
PS C:\infra> az ad sp create-for-rbac --name gh-actions-deploy --role contributor --scopes /subscriptions/@@uuid@@
Creating 'contributor' role assignment under scope '/subscriptions/@@uuid@@'
{
  "appId": "@@uuid#2@@",
  "displayName": "gh-actions-deploy",
  "password": "@@azsec@@",
  "tenant": "@@uuid#3@@"
}
''')
S("azure_storage_conn", r'''
appsettings.Production.json:
{
  "Logging": { "LogLevel": { "Default": "Warning" } },
  "Storage": {
    "ConnectionString": "DefaultEndpointsProtocol=https;AccountName=invoicesprod@@n@@;AccountKey=@@azkey@@;EndpointSuffix=core.windows.net",
    "Container": "pdf-archive"
  }
}
''')
S("oci_config", r'''
$ cat ~/.oci/config
[DEFAULT]
user=ocid1.user.oc1..aaaaaaaa@@opid@@
fingerprint=3e:91:0c:7a:55:1d:aa:04:19:be:72:c3:8f:60:2e:d4
key_file=~/.oci/oci_api_key.pem
pass_phrase=@@pw@@
tenancy=ocid1.tenancy.oc1..aaaaaaaa@@opid#2@@
region=eu-frankfurt-1
''')
S("oci_auth_token", r'''
$ oci iam auth-token create --user-id ocid1.user.oc1..aaaaaaaa@@opid@@ --description "docker push from CI"
{
  "data": {
    "description": "docker push from CI",
    "id": "ocid1.credential.oc1..aaaaaaaa@@opid#2@@",
    "lifecycle-state": "ACTIVE",
    "time-created": "@@date@@T09:14:02.311000+00:00",
    "token": "@@ocitok@@"
  }
}
''')
S("alibaba_config", r'''
$ cat ~/.aliyun/config.json
{
  "current": "prod-hz",
  "profiles": [
    {
      "name": "prod-hz",
      "mode": "AK",
      "access_key_id": "@@ltai@@",
      "access_key_secret": "@@alisec@@",
      "region_id": "cn-hangzhou",
      "output_format": "json",
      "language": "zh"
    }
  ]
}
''')
S("digitalocean", r'''
$ doctl auth init --context side-project
Please authenticate doctl for use with your DigitalOcean account. You can generate a token in the control panel at https://cloud.digitalocean.com/account/api/tokens

Enter your access token: @@dop@@
Validating token... OK
$ doctl compute droplet list --format Name,PublicIPv4
Name          Public IPv4
blog-@@n@@    @@pubip@@
''')
S("hetzner", r'''
# bootstrap.sh for the Hetzner test cluster
set -euo pipefail
export HCLOUD_TOKEN="@@hcloud@@"
hcloud context create k3s-fsn1 <<< "$HCLOUD_TOKEN"
hcloud server create --name k3s-@@n@@ --type cx22 --image ubuntu-24.04 --location fsn1 --ssh-key laptop
''')
S("tfvars", r'''
# terraform.tfvars  (prod)
project        = "checkout"
region         = "eu-west-1"
instance_class = "db.r6g.large"
db_username    = "checkout_admin"
db_password    = "@@pw@@"
cloudflare_api_token = "@@cf@@"
allowed_cidrs  = ["@@ip@@/32"]
''')
S("tfstate", r'''
      "type": "aws_db_instance",
      "name": "main",
      "provider": "provider[\"registry.terraform.io/hashicorp/aws\"]",
      "instances": [
        {
          "schema_version": 2,
          "attributes": {
            "allocated_storage": 100,
            "arn": "arn:aws:rds:eu-west-1:@@big@@:db:orders-prod",
            "engine": "postgres",
            "engine_version": "15.5",
            "password": "@@pw@@",
            "username": "orders"
''')
S("pulumi", r'''
$ pulumi stack output --show-secrets -s acme/platform/prod
Current stack outputs (4):
    OUTPUT            VALUE
    clusterName       platform-prod-@@n@@
    dbEndpoint        @@host@@:5432
    dbPassword        @@pw@@
    grafanaAdminPass  @@pw#2@@
''')
S("cfn_params", r'''
[
  { "ParameterKey": "Environment",        "ParameterValue": "staging" },
  { "ParameterKey": "VpcId",              "ParameterValue": "vpc-0@@short@@e1f2a" },
  { "ParameterKey": "MasterUsername",     "ParameterValue": "dbmaster" },
  { "ParameterKey": "MasterUserPassword", "ParameterValue": "@@pw@@" },
  { "ParameterKey": "AlarmEmail",         "ParameterValue": "@@email@@" }
]
''')
S("ansible_vars", r'''
# group_vars/dbservers.yml  (TODO: move to ansible-vault!!)
mysql_port: 3306
mysql_bind_address: "0.0.0.0"
mysql_root_password: "@@pw@@"
mysql_users:
  - name: wordpress
    host: "10.0.%"
    password: "@@pw#2@@"
    priv: "wordpress.*:ALL"
''')
S("chef_databag", r'''
$ knife data bag show credentials postgres -F json
{
  "id": "postgres",
  "host": "@@host@@",
  "port": 5432,
  "superuser": "postgres",
  "superuser_password": "@@pw@@",
  "replication_password": "@@pw#2@@"
}
''')
S("puppet_hiera", r'''
# hieradata/nodes/@@host@@.yaml
---
profile::postgres::version: '15'
profile::postgres::listen: '*'
profile::app::db_password: '@@pw@@'
profile::app::secret_key_base: '@@hex128@@'
classes:
  - role::app_server
''')
S("salt_pillar", r'''
# /srv/pillar/mail/init.sls
mail:
  relayhost: '[smtp.eu.mailgun.org]:587'
  sasl_user: 'postmaster@mg.@@email@@'
  sasl_password: '@@mailgun@@'
  myorigin: @@host@@
''')
S("nginx_basic_upstream", r'''
location /grafana/ {
    proxy_pass http://@@ip@@:3000/;
    proxy_set_header Host $host;
    proxy_set_header X-Real-IP $remote_addr;
    # upstream still needs basic auth, temporary
    proxy_set_header Authorization "Basic @@b64auth@@";
    proxy_set_header X-Api-Key "@@hex32@@";
}
''')
S("apache_bearer", r'''
<VirtualHost *:443>
    ServerName reports.@@host@@
    SSLEngine on
    SSLCertificateFile /etc/ssl/certs/reports.pem
    SSLCertificateKeyFile /etc/ssl/private/reports.key
    ProxyPass        /api/ https://@@host#2@@/v2/
    ProxyPassReverse /api/ https://@@host#2@@/v2/
    RequestHeader set Authorization "Bearer @@jwt@@"
</VirtualHost>
''')
S("haproxy", r'''
userlist ops_users
    user admin insecure-password @@pw@@

listen stats
    bind *:@@port@@
    mode http
    stats enable
    stats uri /haproxy?stats
    stats auth ops:@@pw#2@@
    stats refresh 10s
''')
S("traefik_compose", r'''
  traefik:
    image: traefik:v3.0
    command:
      - --certificatesresolvers.le.acme.dnschallenge=true
      - --certificatesresolvers.le.acme.dnschallenge.provider=cloudflare
      - --certificatesresolvers.le.acme.email=@@email@@
    environment:
      - CF_DNS_API_TOKEN=@@cf@@
    ports: ["80:80", "443:443"]
''')
S("postfix_sasl", r'''
root@@@host@@:~# cat /etc/postfix/sasl_passwd
[smtp.sendgrid.net]:587 apikey:@@sg@@
root@@@host@@:~# postmap /etc/postfix/sasl_passwd && systemctl reload postfix
''')
S("msmtprc", r'''
# ~/.msmtprc
defaults
auth           on
tls            on
tls_trust_file /etc/ssl/certs/ca-certificates.crt
logfile        ~/.msmtp.log

account        work
host           smtp.office365.com
port           587
from           @@email@@
user           @@email@@
password       @@pw@@

account default : work
''')
S("wireguard", r'''
# /etc/wireguard/wg0.conf on the office gateway
[Interface]
Address = 10.66.0.1/24
ListenPort = 51820
PrivateKey = @@wg@@

[Peer]
# laptop-@@user@@
PublicKey = @@b64pub@@
PresharedKey = @@wg#2@@
AllowedIPs = 10.66.0.@@n@@/32
''')
S("openvpn_tlsauth", r'''
client
dev tun
proto udp
remote vpn.@@host@@ 1194
auth-user-pass creds.txt
remote-cert-tls server
<tls-auth>
-----BEGIN OpenVPN Static key V1-----
@@ovpn@@
-----END OpenVPN Static key V1-----
</tls-auth>
key-direction 1
''')
S("wpa_supplicant", r'''
ctrl_interface=DIR=/var/run/wpa_supplicant GROUP=netdev
update_config=1
country=DE

network={
    ssid="Werkstatt-5G"
    psk="@@wifi@@"
    key_mgmt=WPA-PSK
    priority=@@n@@
}
''')
S("nmcli_showpw", r'''
$ nmcli dev wifi show-password
SSID: Office-Guest-@@n@@
Security: WPA
Password: @@wifi@@

(QR code shown)
''')
S("mysql_console", r'''
mysql> CREATE USER 'metabase'@'@@ip@@' IDENTIFIED BY '@@pw@@';
Query OK, 0 rows affected (0.02 sec)

mysql> GRANT SELECT ON analytics.* TO 'metabase'@'@@ip@@';
Query OK, 0 rows affected (0.01 sec)
''')
S("psql_console", r'''
orders=# ALTER ROLE reporting WITH LOGIN PASSWORD '@@pw@@' VALID UNTIL '2025-12-31';
ALTER ROLE
orders=# \du reporting
                 List of roles
 Role name | Attributes | Member of
-----------+------------+-----------
 reporting |            | {readonly}
''')
S("sql_dump", r'''
--
-- Dumping data for table `integrations`
--
LOCK TABLES `integrations` WRITE;
INSERT INTO `integrations` VALUES (@@n@@,'slack','@@slack@@','2024-01-04 10:00:00'),(@@n#2@@,'sendgrid','@@sg@@','2024-02-11 16:21:09');
UNLOCK TABLES;
''')
S("mongo_uri", r'''
$ mongosh "mongodb+srv://atlas_admin:@@pw@@@cluster0.@@short@@.mongodb.net/inventory?retryWrites=true&w=majority"
Current Mongosh Log ID: @@hexid@@
Connecting to: mongodb+srv://<credentials>@cluster0.@@short@@.mongodb.net/inventory
Using MongoDB: 7.0.8
''')
S("redis_cli", r'''
$ redis-cli -h @@host@@ -p 6380 --tls -a '@@pw@@' INFO keyspace
Warning: Using a password with '-a' or '-u' option on the command line interface may not be safe.
# Keyspace
db0:keys=@@big@@,expires=88120,avg_ttl=3599021
''')
S("http_bearer", r'''
$ curl -v https://api.github.com/repos/@@user@@/infra/actions/runs?per_page=1 -H "Authorization: Bearer @@ghp@@"
> GET /repos/@@user@@/infra/actions/runs?per_page=1 HTTP/2
> Host: api.github.com
> User-Agent: curl/8.5.0
> Accept: */*
> Authorization: Bearer @@ghp@@
>
< HTTP/2 200
< x-ratelimit-remaining: 4987
< x-github-request-id: @@qid@@:@@qid#2@@
''')
S("http_setcookie", r'''
< HTTP/1.1 302 Found
< Server: nginx/1.25.4
< Date: Tue, 12 Mar 2024 @@time@@ GMT
< Location: /dashboard
< Set-Cookie: connect.sid=@@cookie@@; Path=/; HttpOnly; Secure; SameSite=Lax
< Set-Cookie: lang=pt-BR; Path=/
< X-Request-Id: @@uuid@@
''')
S("http_cookie_req", r'''
GET /admin/orders/?status=pending HTTP/1.1
Host: shop.@@host@@
User-Agent: Mozilla/5.0 (X11; Linux x86_64; rv:124.0) Gecko/20100101 Firefox/124.0
Accept: text/html
Cookie: django_language=es; sessionid=@@sess@@; _ga=GA1.2.@@big@@.1709800000
Referer: https://shop.@@host@@/admin/
''')
S("curl_basic", r'''
$ curl -u 'svc-reports:@@pw@@' -X POST https://jira.@@host@@/rest/api/2/search -H 'Content-Type: application/json' -d '{"jql":"project = @@ticket@@ ORDER BY created DESC","maxResults":5}'
{"startAt":0,"maxResults":5,"total":@@n@@,"issues":[...]}
''')
S("ci_github_leak", r'''
2024-03-11T09:41:02.1183112Z ##[group]Run echo "//registry.npmjs.org/:_authToken=${NPM_TOKEN}" > .npmrc
2024-03-11T09:41:02.1190021Z echo "//registry.npmjs.org/:_authToken=@@npm@@" > .npmrc
2024-03-11T09:41:02.1201920Z shell: /usr/bin/bash -e {0}
2024-03-11T09:41:02.1209987Z ##[endgroup]
2024-03-11T09:41:05.4412008Z npm notice Publishing to https://registry.npmjs.org/ with tag latest
2024-03-11T09:41:06.0007711Z + @@user@@/ui-kit@@@ver@@
''')
S("ci_gitlab_env", r'''
$ env | sort | grep -v CI_
DEPLOY_TOKEN=@@glpat@@
HOME=/root
HOSTNAME=runner-@@short@@-project-@@n@@-concurrent-0
KUBE_NAMESPACE=web-production
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin
SENTRY_AUTH_TOKEN=@@sntry@@
''')
S("jenkins_log", r'''
[Pipeline] sh
+ docker login -u jenkins-ci -p @@dckr@@ docker.io
WARNING! Using --password via the CLI is insecure. Use --password-stdin.
Login Succeeded
[Pipeline] sh
+ docker push acme/billing:@@short@@
The push refers to repository [docker.io/acme/billing]
''')
S("py_traceback_locals", r'''
Traceback (most recent call last):
  File "/srv/app/sync/ftp_export.py", line 88, in push_reports
    ftp.login(user=cfg.user, passwd=cfg.password)
  File "/usr/lib/python3.11/ftplib.py", line 412, in login
    raise error_perm(resp)
ftplib.error_perm: 530 Login incorrect.

Local variables:
  cfg = FtpConfig(host='ftp.@@host@@', user='export_@@n@@', password='@@pw@@', passive=True)
''')
S("java_jdbc_trace", r'''
2024-04-02 11:02:17.443 ERROR 1 --- [main] o.s.b.SpringApplication : Application run failed
org.postgresql.util.PSQLException: FATAL: password authentication failed for user "billing"
	at org.postgresql.core.v3.ConnectionFactoryImpl.doAuthentication(ConnectionFactoryImpl.java:693)
Caused by: url=jdbc:postgresql://@@host@@:5432/billing?user=billing&password=@@pw@@&ssl=true
	at com.zaxxer.hikari.pool.HikariPool.<init>(HikariPool.java:115)
''')
S("node_amqp_err", r'''
[worker-@@n@@] Error: Socket closed abruptly during opening handshake
    at Socket.endWhileOpening (/app/node_modules/amqplib/lib/connection.js:260:17)
[worker-@@n@@] retrying connect to amqp://orders:@@pw@@@@@host@@:5672/%2Fprod in 5000ms (attempt 4/10)
''')
S("py_openai", r'''
from openai import OpenAI

client = OpenAI(api_key="@@openai@@")

resp = client.chat.completions.create(
    model="gpt-4o-mini",
    messages=[{"role": "user", "content": "Summarise ticket @@ticket@@"}],
    max_tokens=400,
)
print(resp.choices[0].message.content)
''')
S("ts_stripe", r'''
import Stripe from "stripe";

// TODO(@@user@@): read from env before merging
const stripe = new Stripe("@@stripe@@", { apiVersion: "2024-04-10" });

export async function refund(chargeId: string) {
  return stripe.refunds.create({ charge: chargeId });
}
''')
S("go_jwt", r'''
package auth

import "github.com/golang-jwt/jwt/v5"

var signingKey = []byte("@@hex64@@")

func Issue(userID string) (string, error) {
	t := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": userID})
	return t.SignedString(signingKey)
}
''')
S("java_mail", r'''
Properties props = new Properties();
props.put("mail.smtp.host", "smtp.@@host@@");
props.put("mail.smtp.port", "587");
props.put("mail.smtp.auth", "true");
props.put("mail.smtp.starttls.enable", "true");
Session session = Session.getInstance(props, new Authenticator() {
    protected PasswordAuthentication getPasswordAuthentication() {
        return new PasswordAuthentication("noreply@@@host@@", "@@pw@@");
    }
});
''')
S("csharp_appsettings", r'''
{
  "ConnectionStrings": {
    "Default": "Server=@@host@@,1433;Database=Crm;User Id=crm_app;Password=@@pw@@;TrustServerCertificate=True"
  },
  "Jwt": {
    "Issuer": "https://crm.@@host#2@@",
    "Key": "@@b64k@@"
  }
}
''')
S("php_pdo", r'''
<?php
// legacy/config.php -- copied from the old server
$dsn = 'mysql:host=@@ip@@;dbname=shop;charset=utf8mb4';
$pdo = new PDO($dsn, 'shop_rw', '@@pw@@', [
    PDO::ATTR_ERRMODE => PDO::ERRMODE_EXCEPTION,
]);
define('PAYPAL_CLIENT_SECRET', '@@hex64@@');
''')
S("rails_credentials", r'''
$ EDITOR=cat bin/rails credentials:show
secret_key_base: @@hex128@@
aws:
  access_key_id: @@akid@@
  secret_access_key: @@aksec@@
''')
S("rust_const", r'''
// src/config.rs
pub const SENTRY_DSN: &str = "https://public@o@@n@@.ingest.sentry.io/@@n#2@@";
pub const OPENWEATHER_API_KEY: &str = "@@hex32@@";
pub const MAX_RETRIES: u32 = 5;
''')
S("kotlin_retrofit", r'''
val client = OkHttpClient.Builder()
    .addInterceptor { chain ->
        val req = chain.request().newBuilder()
            .addHeader("X-Api-Key", "@@gapi@@")
            .addHeader("Accept-Language", "tr-TR")
            .build()
        chain.proceed(req)
    }
    .build()
''')
S("swift_key", r'''
enum Secrets {
    static let mapboxToken = "@@mapbox@@"
    static let revenueCatKey = "appl_@@qid@@"
}
// MapView.swift
MapboxOptions.accessToken = Secrets.mapboxToken
''')
S("elixir_repo", r'''
# config/runtime.exs
config :ledger, Ledger.Repo,
  username: "ledger",
  password: "@@pw@@",
  hostname: "@@host@@",
  database: "ledger_prod",
  pool_size: 10

config :ledger, LedgerWeb.Endpoint,
  secret_key_base: "@@hex128@@"
''')
S("scala_conf", r'''
# application.conf
slick.dbs.default {
  profile = "slick.jdbc.PostgresProfile$"
  db {
    url = "jdbc:postgresql://@@host@@:5432/catalog"
    user = "catalog"
    password = "@@pw@@"
    numThreads = 8
  }
}
''')
S("perl_dbi", r'''
#!/usr/bin/perl
use strict; use warnings; use DBI;
my $dbh = DBI->connect("DBI:Pg:dbname=stock;host=@@host@@", "stock_ro", '@@pw@@', { RaiseError => 1 })
    or die $DBI::errstr;
my $sth = $dbh->prepare("SELECT sku, qty FROM inventory WHERE qty < ?");
''')
S("lua_redis", r'''
-- openresty rate limiter
local redis = require "resty.redis"
local red = redis:new()
red:set_timeouts(100, 100, 100)
local ok, err = red:connect("@@ip@@", 6379)
local res, err = red:auth("@@pw@@")
if not res then ngx.log(ngx.ERR, "redis auth failed: ", err) end
''')
S("r_dbi", r'''
library(DBI)
con <- dbConnect(RPostgres::Postgres(),
                 host = "@@host@@", dbname = "survey",
                 user = "analyst", password = "@@pw@@")
Sys.setenv(OPENAI_API_KEY = "@@openai@@")
df <- dbGetQuery(con, "SELECT * FROM responses WHERE wave = 3")
''')
S("dart_const", r'''
// lib/env.dart
class Env {
  static const String apiBase = 'https://api.@@host@@/v1';
  static const String supabaseServiceKey = '@@jwt@@';
  static const int pageSize = 25;
}
''')
S("shell_export", r'''
$ export GITHUB_TOKEN=@@ghpat@@
$ gh repo list @@user@@ --limit 3
@@user@@/terraform-modules	Shared tf modules	public	about 2 days ago
@@user@@/dotfiles		public	about 1 month ago
''')
S("powershell_secure", r'''
PS> $pw = ConvertTo-SecureString "@@pw@@" -AsPlainText -Force
PS> $cred = New-Object System.Management.Automation.PSCredential ("CORP\svc_backup", $pw)
PS> Enter-PSSession -ComputerName FS-@@n@@ -Credential $cred
[FS-@@n@@]: PS C:\Users\svc_backup\Documents>
''')
S("notebook_cell", r'''
{
 "cell_type": "code",
 "execution_count": @@n@@,
 "metadata": {},
 "outputs": [],
 "source": [
  "import os\n",
  "os.environ[\"HF_TOKEN\"] = \"@@hf@@\"\n",
  "from transformers import AutoModel\n",
  "m = AutoModel.from_pretrained(\"org/internal-ner\")"
 ]
}
''')
S("op_cli", r'''
$ op item get "Prod Postgres" --vault Infra --fields label=username,label=password --reveal
postgres_admin,@@pw@@
$ op item get "Prod Postgres" --vault Infra --format json | jq -r .id
@@opid@@
''')
S("bw_cli", r'''
$ export BW_SESSION="$(bw unlock --raw)"
? Master password: [hidden]
$ bw get password "hetzner robot"
@@pw@@
$ bw get totp "hetzner robot"
@@pin6@@
''')
S("pass_show", r'''
$ pass show infra/routers/mikrotik-office
@@pw@@
user: admin
url: https://@@ip@@/webfig
notes: changed after @@ticket@@
''')
S("keepassxc", r'''
$ keepassxc-cli show -s ~/vault/team.kdbx "Alarm system/Office"
Enter password to unlock /home/@@user@@/vault/team.kdbx:
Title: Office
UserName: installer
Password: @@code@@
URL:
Notes: master code for the panel; user codes are below
''')
S("vault_kv_get", r'''
$ vault kv get -mount=secret apps/checkout
======= Secret Path =======
secret/data/apps/checkout

======= Metadata =======
Key                Value
---                -----
created_time       @@date@@T12:00:41.54Z
version            7

======== Data ========
Key            Value
---            -----
db_password    @@pw@@
psp_api_key    @@stripe@@
''')
S("vault_login", r'''
$ vault login -method=oidc role=platform
Success! You are now authenticated. The token information displayed below
is already stored in the token helper.

Key                  Value
---                  -----
token                @@vault@@
token_accessor       @@qid@@@@qid#2@@
token_duration       8h
token_policies       ["default" "platform"]
''')
S("ssh_private_chat", r'''
why does ssh say "invalid format" with this key?? I copied it from the old laptop:

-----BEGIN OPENSSH PRIVATE KEY-----
@@ossh@@
-----END OPENSSH PRIVATE KEY-----

ssh -i ~/.ssh/deploy_@@n@@ deploy@@@host@@ -> Load key: invalid format
''')
S("rsa_private_pem", r'''
$ cat /etc/ssl/private/api.@@host@@.key
-----BEGIN RSA PRIVATE KEY-----
@@pemrsa@@
-----END RSA PRIVATE KEY-----
$ openssl rsa -in /etc/ssl/private/api.@@host@@.key -check -noout
RSA key ok
''')
S("ec_private_pem", r'''
# apns/AuthKey.p8 contents that push-service loads (team @@qid@@)
-----BEGIN EC PRIVATE KEY-----
@@pemec@@
-----END EC PRIVATE KEY-----
''')
S("pgp_private", r'''
$ gpg --export-secret-keys --armor release@@@host@@
-----BEGIN PGP PRIVATE KEY BLOCK-----

@@pgp@@
-----END PGP PRIVATE KEY BLOCK-----
''')
S("git_remote_token", r'''
$ git remote -v
origin	https://oauth2:@@glpat@@@gitlab.@@host@@/platform/helm-charts.git (fetch)
origin	https://oauth2:@@glpat@@@gitlab.@@host@@/platform/helm-charts.git (push)
$ git log --oneline -1
@@short@@ bump ingress-nginx to @@ver@@
''')
S("pip_conf", r'''
# /etc/pip.conf on build agents
[global]
index-url = https://build-bot:@@pw@@@nexus.@@host@@/repository/pypi-group/simple
trusted-host = nexus.@@host@@
timeout = 60
''')
S("npmrc", r'''
# ~/.npmrc
@acme:registry=https://npm.pkg.github.com
//npm.pkg.github.com/:_authToken=@@ghp@@
//registry.npmjs.org/:_authToken=@@npm@@
save-exact=true
''')
S("docker_config", r'''
$ cat ~/.docker/config.json
{
	"auths": {
		"registry.@@host@@": {
			"auth": "@@b64auth@@"
		},
		"https://index.docker.io/v1/": {}
	},
	"credsStore": "desktop"
}
''')
S("maven_settings", r'''
<settings>
  <servers>
    <server>
      <id>releases</id>
      <username>deployment</username>
      <password>@@pw@@</password>
    </server>
    <server>
      <id>snapshots</id>
      <username>deployment</username>
      <password>@@pw#2@@</password>
    </server>
  </servers>
</settings>
''')
S("gradle_signing", r'''
# ~/.gradle/gradle.properties
org.gradle.jvmargs=-Xmx4g
signing.keyId=@@qid@@
signing.password=@@pw@@
signing.secretKeyRingFile=/home/@@user@@/.gnupg/secring.gpg
RELEASE_STORE_PASSWORD=@@pw#2@@
RELEASE_KEY_ALIAS=upload
''')
S("netrc", r'''
$ cat ~/.netrc
machine api.heroku.com
  login @@email@@
  password @@uuids@@
machine git.heroku.com
  login @@email@@
  password @@uuids@@
''')
S("kubeconfig_token", r'''
users:
- name: ci-deployer@prod-@@n@@
  user:
    token: @@jwt@@
contexts:
- context:
    cluster: prod-@@n@@
    namespace: web
    user: ci-deployer@prod-@@n@@
  name: prod
current-context: prod
''')
S("helm_values", r'''
# values-prod.yaml for bitnami/rabbitmq @@ver@@
auth:
  username: orders
  password: "@@pw@@"
  erlangCookie: "@@erl@@"
replicaCount: 3
persistence:
  size: 20Gi
''')
S("django_settings", r'''
# settings/production.py
from .base import *

DEBUG = False
ALLOWED_HOSTS = ["shop.@@host@@"]
SECRET_KEY = "@@djsk@@"
EMAIL_HOST_PASSWORD = "@@pw@@"
CSRF_TRUSTED_ORIGINS = ["https://shop.@@host@@"]
''')
S("flask_config", r'''
app = Flask(__name__)
app.config.update(
    SECRET_KEY="@@hex64@@",
    JWT_SECRET_KEY="@@b64k@@",
    SQLALCHEMY_DATABASE_URI="sqlite:///instance/app.db",
    JSON_SORT_KEYS=False,
)
''')
S("twilio", r'''
from twilio.rest import Client

account_sid = "AC@@hexid@@"
auth_token = "@@hex32@@"
client = Client(account_sid, auth_token)
msg = client.messages.create(to="@@ph@@", from_="+15017122661", body="Your order @@order@@ shipped")
''')
S("slack_webhook", r'''
# alertmanager.yml
receivers:
  - name: oncall-slack
    slack_configs:
      - api_url: https://hooks.slack.com/services/T0@@qid@@/B0@@qid#2@@/@@slackhook@@
        channel: '#alerts-prod'
        send_resolved: true
''')
S("discord_bot", r'''
{
  "prefix": "!",
  "token": "@@discord@@",
  "guildId": "@@big@@",
  "modRoles": ["Moderator", "Admin"]
}
''')
S("totp_uri", r'''
If the QR code doesn't scan, add it manually in your authenticator:
otpauth://totp/ACME%20VPN:@@email@@?secret=@@totp@@&issuer=ACME%20VPN&algorithm=SHA1&digits=6&period=30
Setup key: @@totp@@
''')
S("recovery_codes_file", r'''
GitHub recovery codes
Keep these somewhere safe. Each can be used once.

@@rc@@
@@rc#2@@
@@rc#3@@
@@rc#4@@
@@rc#5@@
@@rc#6@@

(saved @@date@@ for account @@user@@)
''')
S("fernet_env", r'''
# airflow.env
AIRFLOW__CORE__EXECUTOR=CeleryExecutor
AIRFLOW__CORE__FERNET_KEY=@@fernet@@
AIRFLOW__WEBSERVER__SECRET_KEY=@@hex32@@
AIRFLOW__DATABASE__SQL_ALCHEMY_CONN=postgresql+psycopg2://airflow:@@pw@@@@@host@@/airflow
''')
S("keytool_log", r'''
+ keytool -list -v -keystore app/release.jks -storepass '@@pw@@' -alias upload
Alias name: upload
Creation date: Jan 8, 2023
Entry type: PrivateKeyEntry
Certificate fingerprints:
	 SHA1: 4F:1A:9C:0D:77:E2:3B:81:56:AA:0C:19:D3:6E:42:F8:90:1B:7C:25
''')
S("openssl_passout", r'''
$ openssl pkcs12 -export -in client.crt -inkey client.key -out client-@@n@@.p12 -passout pass:'@@pw@@'
$ ls -l client-@@n@@.p12
-rw------- 1 @@user@@ staff 2739 Mar 14 10:22 client-@@n@@.p12
''')
S("shell_history", r'''
  512  ssh bastion
  513  mysql -h @@host@@ -u root -p'@@pw@@' -e 'SHOW PROCESSLIST'
  514  sshpass -p '@@pw#2@@' scp backup.tar.gz root@@@ip@@:/mnt/backup/
  515  history | tail
''')
S("cifs_mount", r'''
# /etc/fstab
UUID=@@uuid@@ /          ext4 defaults 0 1
//nas.@@host@@/scans /mnt/scans cifs username=scanner,password=@@pw@@,vers=3.0,uid=1000 0 0
''')
S("ldapsearch", r'''
$ ldapsearch -x -H ldaps://dc01.@@host@@ -D "CN=svc-ldap,OU=Service,DC=corp,DC=local" -w '@@pw@@' -b "OU=Users,DC=corp,DC=local" "(sAMAccountName=@@user@@)" mail
# extended LDIF
dn: CN=@@user@@,OU=Users,DC=corp,DC=local
mail: @@email@@
''')
S("grafana_ini", r'''
[server]
root_url = https://grafana.@@host@@/

[security]
admin_user = admin
admin_password = @@pw@@
secret_key = @@hex32@@

[auth.anonymous]
enabled = false
''')
S("keycloak_export", r'''
    {
      "clientId": "backoffice",
      "enabled": true,
      "clientAuthenticatorType": "client-secret",
      "secret": "@@hex32@@",
      "redirectUris": ["https://backoffice.@@host@@/*"],
      "protocol": "openid-connect",
      "publicClient": false
    },
''')
S("datadog_yaml", r'''
## datadog.yaml
api_key: @@hex32@@
site: datadoghq.eu
hostname: @@host@@
logs_enabled: true
apm_config:
  enabled: true
''')
S("newrelic", r'''
$ NEW_RELIC_API_KEY=@@nrak@@ NEW_RELIC_ACCOUNT_ID=@@big@@ newrelic nerdgraph query '{ actor { user { name } } }'
{
  "actor": { "user": { "name": "@@user@@" } }
}
''')
S("consul_acl", r'''
$ consul acl token read -id @@uuid@@
AccessorID:       @@uuid@@
SecretID:         @@uuids@@
Partition:        default
Description:      nomad server token
Local:            false
Create Time:      @@date@@ 14:21:10.112 +0000 UTC
Policies:
   @@uuid#2@@ - nomad-server
''')
S("jupyter_log", r'''
[I 2024-03-01 @@time@@.118 ServerApp] Jupyter Server 2.13.0 is running at:
[I 2024-03-01 @@time@@.118 ServerApp] http://gpu-@@n@@:8888/lab?token=@@jupy@@
[I 2024-03-01 @@time@@.118 ServerApp]     http://127.0.0.1:8888/lab?token=@@jupy@@
[I 2024-03-01 @@time@@.119 ServerApp] Use Control-C to stop this server.
''')
S("dovecot_passwd", r'''
# /etc/dovecot/users  (scheme PLAIN for now, switch to ARGON2 later)
info@@@host@@:{PLAIN}@@pw@@:5000:5000::/var/mail/info
billing@@@host@@:{PLAIN}@@pw#2@@:5000:5000::/var/mail/billing
''')
S("fastlane_env", r'''
# fastlane/.env.default
FASTLANE_USER=@@email@@
FASTLANE_PASSWORD=@@pw@@
MATCH_PASSWORD=@@phrase@@
FASTLANE_ITC_TEAM_ID=@@big@@
''')
S("heroku_config", r'''
$ heroku config -a invoicer-@@n@@
=== invoicer-@@n@@ Config Vars
DATABASE_URL:      postgres://u@@short@@:@@hex64@@@ec2-@@n#2@@.eu-west-1.compute.amazonaws.com:5432/d@@short#2@@
LANG:              en_US.UTF-8
RACK_ENV:          production
RAILS_MASTER_KEY:  @@hex32@@
''')
S("airflow_conn", r'''
$ airflow connections add 'dwh_postgres' --conn-uri 'postgresql://etl_user:@@pw@@@@@host@@:5432/dwh'
Successfully added `conn_id`=dwh_postgres : postgresql://etl_user:******@@@host@@:5432/dwh
''')
S("spring_props", r'''
# application-prod.properties
server.port=8080
spring.datasource.url=jdbc:mysql://@@host@@:3306/hr
spring.datasource.username=hr_app
spring.datasource.password=@@pw@@
spring.jpa.hibernate.ddl-auto=validate
management.endpoints.web.exposure.include=health,info
''')
S("minio_mc", r'''
$ mc alias set backup https://s3.@@host@@ backup-writer @@alisec@@
Added `backup` successfully.
$ mc ls backup/pg-dumps | tail -2
[@@date@@ 02:00:13 UTC] 1.2GiB STANDARD orders-@@n@@.dump
''')
S("rclone_conf", r'''
[b2-archive]
type = b2
account = @@serial@@
key = @@alisec@@
hard_delete = false

[hetzner-box]
type = sftp
host = u@@n@@.your-storagebox.de
user = u@@n@@
pass = @@pw@@
''')
S("restic_borg", r'''
#!/bin/sh
# /usr/local/bin/nightly-backup
export RESTIC_REPOSITORY=s3:https://s3.eu-central-003.backblazeb2.com/backups-@@n@@
export RESTIC_PASSWORD='@@phrase@@'
export BORG_PASSPHRASE='@@phrase#2@@'
restic backup /srv --exclude-caches --tag nightly
''')
S("gpg_batch", r'''
- name: Import signing key and sign release
  run: |
    echo "$GPG_PRIVATE_KEY" | gpg --batch --import
    gpg --batch --yes --pinentry-mode loopback --passphrase '@@phrase@@' --detach-sign dist/tool-@@ver@@.tar.gz
''')
S("snmp_ipmi", r'''
$ snmpwalk -v3 -l authPriv -u monitor -a SHA -A '@@pw@@' -x AES -X '@@pw#2@@' @@ip@@ sysUpTime
SNMPv2-MIB::sysUpTime.0 = Timeticks: (@@big@@) 12 days, 3:41:07.15
$ ipmitool -I lanplus -H @@ip#2@@ -U ADMIN -P '@@pw#3@@' chassis status | head -1
System Power         : on
''')
S("cisco_cfg", r'''
!
hostname SW-CORE-@@n@@
enable secret 0 @@pw@@
username netadmin privilege 15 password 0 @@pw#2@@
!
interface GigabitEthernet1/0/1
 description uplink-fw
 switchport mode trunk
!
''')
S("mikrotik", r'''
[admin@MikroTik] > /user add name=noc group=full password="@@pw@@"
[admin@MikroTik] > /interface wireless security-profiles set [ find default=yes ] wpa2-pre-shared-key="@@wifi@@"
[admin@MikroTik] > /system identity print
  name: branch-@@n@@
''')
S("http_proxy_env", r'''
$ cat /etc/environment
PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
http_proxy="http://svc-proxy:@@pw@@@proxy.@@host@@:3128"
https_proxy="http://svc-proxy:@@pw@@@proxy.@@host@@:3128"
no_proxy="localhost,127.0.0.1,.@@host@@"
''')
S("anthropic_key", r'''
$ claude config list
{
  "model": "sonnet",
  "theme": "dark"
}
$ export ANTHROPIC_API_KEY=@@ant@@
$ claude -p "explain the failing test in tests/test_invoice.py"
''')
S("pypi_twine", r'''
# ~/.pypirc
[distutils]
index-servers = pypi

[pypi]
username = __token__
password = @@pypi@@
''')
S("linear_atlassian", r'''
# scripts/sync_issues.py config
LINEAR_API_KEY = "@@linear@@"
JIRA_BASE = "https://@@user@@.atlassian.net"
JIRA_EMAIL = "@@email@@"
JIRA_API_TOKEN = "@@atl@@"
''')
S("shopify_cf", r'''
$ wrangler secret list
[{"name":"SHOPIFY_TOKEN","type":"secret_text"}]
$ curl -s https://@@user@@.myshopify.com/admin/api/2024-01/orders/count.json -H "X-Shopify-Access-Token: @@shpat@@"
{"count":@@n@@}
''')
S("telegram_alert", r'''
#!/usr/bin/env bash
# notify.sh - send backup result to the ops group
BOT_TOKEN="@@telegram@@"
CHAT_ID="-100@@big@@"
curl -s "https://api.telegram.org/bot${BOT_TOKEN}/sendMessage" -d chat_id="$CHAT_ID" -d text="backup ok on $(hostname)"
''')
S("supabase_env", r'''
NEXT_PUBLIC_SUPABASE_URL=https://@@opid@@.supabase.co
SUPABASE_SERVICE_ROLE_KEY=@@jwt@@
RESEND_API_KEY=re_@@qid@@_@@cf@@
''')
S("session_redis_dump", r'''
127.0.0.1:6379> KEYS sess:*
1) "sess:@@sess@@"
2) "sess:@@sess#2@@"
127.0.0.1:6379> TTL sess:@@sess@@
(integer) @@n@@
''')
S("door_alarm_doc", r'''
## Office handbook (internal) - Lisbon site
- Wi-Fi "ACME-Staff": @@wifi@@
- Main door keypad: @@code@@ then press the bell symbol
- Alarm panel disarm code: @@code#2@@
- Server room safe: @@pin6@@
Facility contact: @@email@@
''')

# ---- chat with secrets, one template per language ----
S("chat_en", r'''
hey, quick one before I go on leave tomorrow - the staging deploy is scheduled for 6pm, runbook is in @@ticket@@. the grafana admin login is ops-admin / @@pw@@ (please rotate it afterwards, way too many people have it). retro moved to Thursday 3pm btw.
''')
S("chat_de", r'''
Moin zusammen! Kurze Info fürs Büro Hamburg: das WLAN "Kontor-Gast" hat seit heute ein neues Passwort, es lautet @@wifi@@ – bitte nicht ins Wiki schreiben, nur mündlich weitergeben. Der Drucker im 2. OG spinnt übrigens immer noch, Ticket ist @@ticket@@.
''')
S("chat_fr", r'''
Salut Julien, le code de la porte du local serveur a changé ce matin : c'est @@code@@ maintenant. Tu pourras le donner au technicien pour l'intervention de jeudi ? Par contre ne le mets pas sur le canal #general stp. Merci et bon courage pour la migration !
''')
S("chat_es", r'''
Oye Marta, te paso la contraseña de la base de datos de producción porque Luis está de vacaciones hasta el lunes: usuario admin_ventas, clave @@pw@@. Cámbiala cuando termines la migración de la tabla de pedidos, ¿vale? Gracias!
''')
S("chat_pt", r'''
Fala, pessoal! O token do bot do Telegram que usamos nos alertas de deploy é @@telegram@@ — coloca no cofre depois, por favor, que eu tô sem acesso hoje. O deploy das 18h continua de pé, a versão é a @@ver@@.
''')
S("chat_it", r'''
Ciao Giulia, per pagare la fattura di AWS di questo mese usa la carta aziendale, il PIN è @@pin4@@. Mi raccomando non salvarlo da nessuna parte e poi mandami la ricevuta, che la devo girare all'amministrazione entro venerdì.
''')
S("chat_nl", r'''
Hoi Daan, de API-sleutel voor de betaalprovider staat nog niet in Vault, dus gebruik voor nu even deze: @@stripe@@. Ik zet hem er vanmiddag in en daarna roteren we hem meteen. Laat maar weten als de webhook-test weer faalt.
''')
S("chat_pl", r'''
Cześć Tomek, hasło do panelu Hetznera to @@pw@@, login faktury@@@host@@. Wyłącz proszę stary serwer w Falkenstein, bo płacimy za niego już trzeci miesiąc, a nic na nim nie chodzi. Dzięki!
''')
S("chat_cs", r'''
Ahoj Petře, kdybys zítra přišel do kanceláře první: kód k alarmu je @@code@@, po zadání počkej na pípnutí. Večer ho prosím zase zapni, minule to zůstalo vypnuté celou noc a správce budovy si stěžoval.
''')
S("chat_sv", r'''
Hej! Om jag blir sjuk under releasen: här är återställningskoderna för admin-kontot på GitHub, @@rc@@ och @@rc#2@@ och @@rc#3@@. Spara dem i 1Password och radera sedan det här meddelandet, tack!
''')
S("chat_nb", r'''
Hei Ingrid, passordet til NAS-en på kontoret i Bergen er @@pw@@, brukeren heter backupadmin. Kan du sjekke om den nattlige kopieringen gikk bra? Jeg fikk en feilmelding på e-post rundt kl. 03.
''')
S("chat_da", r'''
Hej Mads, koden til nøgleboksen ved bagindgangen er @@code@@. Leverandøren kommer kl. 8 for at skifte UPS-batterierne, så han skal kunne komme ind før nogen af os er der. Husk at skifte koden bagefter.
''')
S("chat_fi", r'''
Moi! Tässä testipalvelimen root-salasana, kun Jukka on lomalla: @@pw@@. Vaihda se heti kun olet saanut asennuksen valmiiksi, ja kirjaa muutos tikettiin @@ticket@@. Kiitos!
''')
S("chat_ru", r'''
Привет! Дима просил передать доступ к админке 1С, пока он в отпуске: логин buh_admin, пароль @@pw@@. После закрытия квартала, пожалуйста, смени его и напиши мне в личку, что всё ок.
''')
S("chat_uk", r'''
Привіт, Олено! Ключ API для сервісу розсилок: @@sg@@. Тимчасово поклади його в змінні середовища на стейджингу, а в понеділок перенесемо у Vault. Лист клієнтам має піти о 10:00.
''')
S("chat_tr", r'''
Selam Emre, sunucu odasındaki kasanın şifresi @@pin6@@, yedek disklerin hepsi orada. Yarın sabah denetçiler geleceği için lütfen bugün içinde etiketleri kontrol et, sonra şifreyi değiştiririz.
''')
S("chat_el", r'''
Γεια σου Νίκο, ο κωδικός για το VPN του γραφείου στη Θεσσαλονίκη είναι @@pw@@ με χρήστη support. Άλλαξέ τον μόλις τελειώσεις με την αναβάθμιση του firewall, γιατί τον έχουν δει πολλοί.
''')
S("chat_he", r'''
היי נועה, הסיסמה לחשבון האדמין של Jira היא @@pw@@. תחליפי אותה אחרי שתסיימי להוסיף את המשתמשים החדשים, ואל תשמרי אותה בקובץ טקסט כמו בפעם הקודמת 🙂
''')
S("chat_ar", r'''
مرحبا أحمد، رمز الدخول إلى لوحة تحكم الخادم الجديد هو @@pw@@ واسم المستخدم root. من فضلك غيّره بعد تثبيت الشهادة، وأبلغني عندما ينتهي النسخ الاحتياطي الليلة.
''')
S("chat_fa", r'''
سلام سارا، رمز عبور پایگاه داده تست اینه: @@pw@@ . لطفاً بعد از اینکه مهاجرت جدول سفارش‌ها تموم شد عوضش کن و توی تیکت @@ticket@@ هم یادداشت بذار.
''')
S("chat_hi", r'''
नमस्ते राहुल, प्रोडक्शन सर्वर का SSH पासवर्ड @@pw@@ है, यूज़र deploy है। आज रात की रिलीज़ के बाद इसे ज़रूर बदल देना और मुझे ईमेल पर बता देना कि सब ठीक चला।
''')
S("chat_bn", r'''
হ্যালো তানভীর, অফিসের রাউটারের অ্যাডমিন পাসওয়ার্ড হলো @@pw@@ । ফার্মওয়্যার আপডেট শেষ হলে দয়া করে পাসওয়ার্ডটা বদলে দিও আর গ্রুপে জানিয়ে দিও।
''')
S("chat_ja", r'''
お疲れさまです。来週の障害訓練用に、検証環境のDB管理者パスワードを共有します：@@pw@@ です。訓練が終わったら必ず変更して、チケット @@ticket@@ に記録をお願いします。
''')
S("chat_zh", r'''
大家好，测试环境的 Redis 密码是 @@pw@@ ，今天下午压测要用。压测结束后我会统一改掉，请不要把它写进代码仓库，也不要发到大群里。谢谢！
''')
S("chat_ko", r'''
안녕하세요 민수님, 사무실 출입문 비밀번호가 오늘부터 @@code@@ 로 바뀌었습니다. 내일 오시는 외주 개발자분께도 전달 부탁드리고, 다음 주 월요일에 다시 변경할 예정입니다.
''')
S("chat_vi", r'''
Chào anh Minh, mật khẩu tài khoản quản trị của máy chủ mail là @@pw@@ nhé. Anh đổi lại sau khi cấu hình xong DKIM giúp em, và nhớ ghi chú vào phiếu @@ticket@@ ạ.
''')
S("chat_th", r'''
สวัสดีครับพี่ต้น รหัสผ่าน Wi-Fi ของห้องประชุมใหม่คือ @@wifi@@ ครับ ลูกค้าจะมาพรุ่งนี้บ่ายสองโมง รบกวนพี่เช็กโปรเจกเตอร์ด้วยนะครับ
''')
S("chat_id", r'''
Halo Budi, kata sandi akun admin cPanel untuk situs klien itu @@pw@@. Tolong diganti setelah kamu selesai memperbarui plugin WordPress-nya, ya. Jangan lupa backup dulu sebelum update.
''')
S("chat_tl", r'''
Hi Paolo, ito yung password ng shared Gmail ng support team: @@pw@@. Palitan mo agad pagkatapos mong i-setup yung forwarding rules, tapos i-update mo yung entry sa password manager natin. Salamat!
''')
S("chat_sw", r'''
Habari Juma, nenosiri la akaunti ya M-Pesa API kwenye mazingira ya majaribio ni @@pw@@. Tafadhali libadilishe baada ya kumaliza majaribio ya malipo leo jioni, na uniambie kama kuna hitilafu.
''')
S("chat_ro", r'''
Salut Andrei, parola pentru contul de administrator din panoul de hosting este @@pw@@. Te rog s-o schimbi după ce termini migrarea domeniului și să-mi scrii pe mail când e gata.
''')
S("chat_hu", r'''
Szia Gábor! A céges bankkártya PIN-kódja @@pin4@@, ezzel tudod kifizetni a domain megújítását. Utána kérlek küldd el a számlát a könyvelésnek, és ne mentsd el sehova a kódot.
''')
S("chat_hr", r'''
Bok Ivana, lozinka za administratorski račun na Synology NAS-u je @@pw@@. Molim te promijeni je nakon što postaviš nove dijeljene mape za računovodstvo i javi mi kad završiš.
''')
S("chat_ca", r'''
Hola Jordi, la contrasenya del compte de servei de la impressora de l'oficina de Girona és @@pw@@. Quan acabis de configurar l'escaneig a la carpeta compartida, canvia-la si us plau.
''')
S("chat_bg", r'''
Здрасти, Мария! Паролата за root на тестовия сървър е @@pw@@. Смени я след като инсталираш новата версия на PostgreSQL и пиши в тикет @@ticket@@ какво точно си направила.
''')
S("chat_sk", r'''
Ahoj Martin, heslo k zdieľanému účtu na Figme je @@pw@@, prihlasovací e-mail je design@@@host@@. Po odovzdaní projektu ho prosím zmeň a daj vedieť ostatným v tíme.
''')

# =====================================================================
# ORDINARY TEMPLATES (must come through unchanged)
# =====================================================================
OT = []
def O(fam, text):
    OT.append((fam, text.strip("\n")))

O("env_example", r'''
# .env.example - copy to .env and fill in. Never commit the real file.
DATABASE_URL=postgres://USER:PASSWORD@localhost:5432/app_dev
STRIPE_SECRET_KEY=<your-stripe-secret-key>
OPENAI_API_KEY=   # leave empty to use the mock client
JWT_SECRET=changeme
PORT=@@port@@
''')
O("compose_secrets_file", r'''
services:
  db:
    image: postgres:16.2@sha256:@@sha256@@
    environment:
      POSTGRES_USER: app
      POSTGRES_PASSWORD_FILE: /run/secrets/db_password
    secrets: [db_password]
secrets:
  db_password:
    file: ./secrets/db_password.txt
''')
O("k8s_secretkeyref", r'''
        env:
          - name: DB_PASSWORD
            valueFrom:
              secretKeyRef:
                name: orders-db
                key: password
          - name: API_TOKEN
            valueFrom:
              secretKeyRef: { name: psp-credentials, key: token }
        image: registry.@@host@@/orders:@@short@@
''')
O("external_secret", r'''
apiVersion: external-secrets.io/v1beta1
kind: ExternalSecret
metadata:
  name: checkout-db
spec:
  refreshInterval: 1h
  secretStoreRef: { name: aws-secretsmanager, kind: ClusterSecretStore }
  target: { name: checkout-db }
  data:
    - secretKey: password
      remoteRef: { key: prod/checkout/db, property: password, version: @@uuid@@ }
''')
O("tf_random_password", r'''
resource "random_password" "db" {
  length           = 32
  special          = true
  override_special = "!#$%&*()-_=+[]{}<>:?"
}

variable "db_password" {
  type      = string
  sensitive = true
}

resource "aws_secretsmanager_secret_version" "db" {
  secret_id     = aws_secretsmanager_secret.db.id   # arn:aws:secretsmanager:eu-west-1:@@big@@:secret:db
  secret_string = random_password.db.result
}
''')
O("tf_plan_masked", r'''
  # aws_db_instance.main will be updated in-place
  ~ resource "aws_db_instance" "main" {
        id                     = "db-@@qid@@"
      ~ instance_class         = "db.t3.medium" -> "db.r6g.large"
      ~ password               = (sensitive value)
        tags                   = { "cost-center" = "@@n@@" }
    }

Plan: 0 to add, 1 to change, 0 to destroy.
''')
O("ansible_vault_ref", r'''
# group_vars/web.yml
app_db_password: "{{ vault_app_db_password }}"
smtp_password: "{{ lookup('community.hashi_vault.hashi_vault', 'secret=secret/data/smtp:password') }}"
nginx_worker_processes: auto
app_release: "@@ver@@"
''')
O("gha_secrets_ref", r'''
      - name: Publish
        run: npm publish --access public
        env:
          NODE_AUTH_TOKEN: ${{ secrets.NPM_TOKEN }}
      - name: Deploy
        run: ./deploy.sh --sha ${{ github.sha }} --run @@ghrun@@
        env:
          KUBE_TOKEN: ${{ secrets.KUBE_TOKEN }}
''')
O("ci_masked_log", r'''
2024-03-11T09:41:02.1183112Z ##[group]Run echo "token length: ${#NPM_TOKEN}"
2024-03-11T09:41:02.1190021Z echo "token length: ${#NPM_TOKEN}"
2024-03-11T09:41:02.1209987Z   NPM_TOKEN: ***
2024-03-11T09:41:02.1210003Z ##[endgroup]
2024-03-11T09:41:02.2002001Z token length: 40
2024-03-11T09:41:06.0007711Z Cache restored from key: Linux-npm-@@sha256@@
''')
O("py_env_lookup", r'''
import os
import boto3

def get_client():
    api_key = os.environ["OPENAI_API_KEY"]  # set via direnv, see README#secrets
    if not api_key.startswith("sk-"):
        raise ValueError("OPENAI_API_KEY looks wrong")
    session = boto3.Session(profile_name="analytics-@@n@@")
    return session.client("secretsmanager").get_secret_value(SecretId="prod/llm/key")["SecretString"]
''')
O("ts_zod_env", r'''
import { z } from "zod";

const Env = z.object({
  STRIPE_SECRET_KEY: z.string().startsWith("sk_"),
  DATABASE_URL: z.string().url(),
  SESSION_SECRET: z.string().min(32),
  PORT: z.coerce.number().default(@@port@@),
});
export const env = Env.parse(process.env);
''')
O("go_bcrypt", r'''
func HashPassword(pw string) (string, error) {
	cost := 12 // see @@ticket@@: 10 was too low for our threat model
	b, err := bcrypt.GenerateFromPassword([]byte(pw), cost)
	return string(b), err
}

func dsn() string {
	return fmt.Sprintf("postgres://%s:%s@%s/%s", os.Getenv("PGUSER"), os.Getenv("PGPASSWORD"), os.Getenv("PGHOST"), "orders")
}
''')
O("spring_placeholders", r'''
spring:
  datasource:
    url: jdbc:postgresql://${DB_HOST:localhost}:5432/inventory
    username: ${DB_USER}
    password: ${DB_PASSWORD}
  security:
    oauth2:
      client:
        registration:
          keycloak:
            client-secret: ${KEYCLOAK_CLIENT_SECRET}
server:
  port: @@port@@
''')
O("dotnet_user_secrets", r'''
To run the API locally you need a JWT signing key. Store it with the Secret Manager, not in appsettings.json:

  dotnet user-secrets init
  dotnet user-secrets set "Jwt:Key" "<a random 64-char string>"

Then read it with builder.Configuration["Jwt:Key"]. Project UserSecretsId: @@uuid@@
''')
O("php_env_hash", r'''
<?php
$pdo = new PDO(getenv('DB_DSN'), getenv('DB_USER'), getenv('DB_PASSWORD'));
$hash = password_hash($_POST['password'], PASSWORD_ARGON2ID, ['memory_cost' => 65536, 'time_cost' => 4]);
if (!password_verify($_POST['password_confirm'], $hash)) {
    http_response_code(422);
    echo json_encode(['error' => 'passwords_do_not_match', 'request' => '@@reqid@@']);
}
''')
O("rails_credentials_ref", r'''
# config/storage.yml
amazon:
  service: S3
  access_key_id: <%= Rails.application.credentials.dig(:aws, :access_key_id) %>
  secret_access_key: <%= Rails.application.credentials.dig(:aws, :secret_access_key) %>
  region: eu-central-1
  bucket: uploads-@@n@@
''')
O("rust_env_var", r'''
fn load_config() -> anyhow::Result<Config> {
    let token = std::env::var("GITHUB_TOKEN").context("GITHUB_TOKEN not set")?;
    let pin_len: usize = std::env::var("PIN_LENGTH").unwrap_or_else(|_| "6".into()).parse()?;
    Ok(Config { token, pin_len, build: "@@short@@" })
}
''')
O("swift_keychain", r'''
let query: [String: Any] = [
    kSecClass as String: kSecClassGenericPassword,
    kSecAttrService as String: "com.@@user@@.wallet",
    kSecAttrAccount as String: "refresh_token",
    kSecReturnData as String: true,
    kSecMatchLimit as String: kSecMatchLimitOne
]
var item: CFTypeRef?
let status = SecItemCopyMatching(query as CFDictionary, &item)
''')
O("git_log", r'''
$ git log --oneline -6
@@short@@ Rotate leaked Slack token (see @@ticket@@), move to Vault
@@short#2@@ Remove hardcoded password from seed script
@@short#3@@ Bump golang.org/x/crypto from 0.21.0 to 0.22.0
@@short#4@@ Add pre-commit hook: gitleaks v8.18.2
@@short#5@@ Merge pull request #@@pr@@ from @@user@@/fix-pin-reset
@@short#6@@ docs: explain API key scopes
''')
O("docker_pull", r'''
$ docker pull ghcr.io/@@user@@/api:@@ver@@
@@ver@@: Pulling from @@user@@/api
@@short@@a1b2c3: Already exists
@@short#2@@9f8e7d: Pull complete
Digest: sha256:@@sha256@@
Status: Downloaded newer image for ghcr.io/@@user@@/api:@@ver@@
''')
O("package_lock", r'''
    "node_modules/jsonwebtoken": {
      "version": "9.0.2",
      "resolved": "https://registry.npmjs.org/jsonwebtoken/-/jsonwebtoken-9.0.2.tgz",
      "integrity": "@@sri@@",
      "dependencies": {
        "jws": "^3.2.2",
        "lodash.includes": "^4.3.0",
        "semver": "^7.5.4"
      }
    },
''')
O("pip_hashes", r'''
# requirements.txt generated by pip-compile --generate-hashes
cryptography==42.0.5 \
    --hash=sha256:@@sha256@@ \
    --hash=sha256:@@sha256#2@@
passlib[bcrypt]==1.7.4 \
    --hash=sha256:@@sha256#3@@
''')
O("go_sum", r'''
github.com/golang-jwt/jwt/v5 v5.2.1 @@h1@@
github.com/golang-jwt/jwt/v5 v5.2.1/go.mod @@h1#2@@
golang.org/x/crypto v0.22.0 @@h1#3@@
''')
O("cargo_lock", r'''
[[package]]
name = "argon2"
version = "0.5.3"
source = "registry+https://github.com/rust-lang/crates.io-index"
checksum = "@@sha256@@"
dependencies = [
 "base64ct",
 "blake2",
 "password-hash",
]
''')
O("authorized_keys", r'''
$ cat ~/.ssh/authorized_keys
ssh-ed25519 @@sshpub@@ @@user@@@laptop
ssh-ed25519 @@sshpub#2@@ ci-deploy@@@host@@
$ ssh-keygen -lf ~/.ssh/id_ed25519.pub
256 @@fp@@ @@user@@@laptop (ED25519)
''')
O("certificate_pem", r'''
Here is the public CA cert for the internal registry, add it to /usr/local/share/ca-certificates/ and run update-ca-certificates:

-----BEGIN CERTIFICATE-----
@@cert@@
-----END CERTIFICATE-----
''')
O("openssl_x509", r'''
$ openssl x509 -in api.crt -noout -subject -issuer -serial -fingerprint -sha256 -dates
subject=CN = api.@@host@@
issuer=C = US, O = Let's Encrypt, CN = R3
serial=@@serial@@
sha256 Fingerprint=@@fp@@
notBefore=Feb  1 00:00:00 2024 GMT
notAfter=May  1 23:59:59 2024 GMT
''')
O("gpg_list_keys", r'''
$ gpg --list-keys --keyid-format long release@@@host@@
pub   ed25519/@@qid@@ 2023-06-01 [SC] [expires: 2026-06-01]
      @@gpgfp@@
uid                 [ultimate] Release Bot <release@@@host@@>
sub   cv25519/@@qid#2@@ 2023-06-01 [E]
''')
O("llm_usage", r'''
"usage": {
  "input_tokens": @@n@@,
  "cache_creation_input_tokens": 0,
  "cache_read_input_tokens": @@n#2@@,
  "output_tokens": @@ms@@
},
"stop_reason": "end_turn", "id": "msg_01@@reqid@@"
''')
O("token_count_chat", r'''
The whole repo dump is about 180k tokens, which is close to the context window, so I'll only paste the src/auth folder (~@@n@@ tokens). max_tokens=4096 should be plenty for the answer; the tokenizer counts "password_reset_token" as 4 tokens.
''')
O("parser_token_error", r'''
SyntaxError: Unexpected token '}' in JSON at position @@n@@
    at JSON.parse (<anonymous>)
    at parseToken (/app/src/lexer.ts:88:17)
error TS1005: ';' expected. src/auth/token.ts(42,7)
''')
O("docker_login_stdin", r'''
To push images, authenticate with a personal access token (classic) that has write:packages:

  echo "$CR_PAT" | docker login ghcr.io -u USERNAME --password-stdin

Replace USERNAME with your GitHub handle. The token itself lives in 1Password under "GHCR push (@@user@@)".
''')
O("aws_caller_identity", r'''
$ aws sts get-caller-identity
{
    "UserId": "AIDA@@qid@@@@qid#2@@",
    "Account": "@@big@@",
    "Arn": "arn:aws:iam::@@big@@:user/@@user@@"
}
''')
O("aws_describe_secret", r'''
$ aws secretsmanager describe-secret --secret-id prod/checkout/db
{
    "ARN": "arn:aws:secretsmanager:eu-west-1:@@big@@:secret:prod/checkout/db-@@qid@@",
    "Name": "prod/checkout/db",
    "RotationEnabled": true,
    "RotationRules": { "AutomaticallyAfterDays": 30 },
    "VersionIdsToStages": { "@@uuid@@": ["AWSCURRENT"] }
}
''')
O("gcloud_secrets_list", r'''
$ gcloud secrets versions list stripe-api-key --project=shop-@@n@@
NAME  STATE     CREATED              DESTROYED
7     enabled   @@date@@T10:00:02    -
6     disabled  2023-11-02T08:12:45  -
5     destroyed 2023-06-19T15:31:10  2023-09-01T00:00:00
''')
O("az_keyvault_list", r'''
$ az keyvault secret list --vault-name kv-crm-@@n@@ -o table
Name                    ContentType    Enabled    Expires
----------------------  -------------  ---------  -------------------------
sql-admin-password      text/plain     True       2025-01-31T00:00:00+00:00
jwt-signing-key                        True
storage-account-key                    True       2024-12-01T00:00:00+00:00
''')
O("kubectl_describe_secret", r'''
$ kubectl describe secret orders-db -n shop
Name:         orders-db
Namespace:    shop
Labels:       app.kubernetes.io/managed-by=external-secrets
Annotations:  reconcile.external-secrets.io/data-hash: @@hexid@@

Type:  Opaque

Data
====
password:  32 bytes
username:  6 bytes
''')
O("vault_metadata", r'''
$ vault kv metadata get secret/apps/checkout
========== Metadata Path ==========
secret/metadata/apps/checkout

========== Metadata ==========
Key                     Value
---                     -----
cas_required            false
created_time            @@date@@T12:00:41.54Z
current_version         7
max_versions            10
''')
O("op_item_list", r'''
$ op item list --vault Infra --categories Login
ID                            TITLE                   VAULT     EDITED
@@opid@@    Prod Postgres           Infra     3 days ago
@@opid#2@@    Hetzner Robot           Infra     2 weeks ago
@@opid#3@@    Office Alarm Panel      Infra     5 months ago
''')
O("bw_status", r'''
$ bw status | jq
{
  "serverUrl": "https://vault.@@host@@",
  "lastSync": "@@date@@T07:12:33.120Z",
  "userEmail": "@@email@@",
  "userId": "@@uuid@@",
  "status": "locked"
}
''')
O("password_policy", r'''
# password-policy.yaml (applies to all tenants)
minLength: 12
maxLength: 128
requireUppercase: true
requireDigit: true
requireSymbol: false
pinLength: 6
maxFailedPinAttempts: 3
lockoutMinutes: @@n@@
historyCount: 5
''')
O("gitleaks_rules", r'''
[[rules]]
id = "github-pat"
regex = '''+"'''"+r'''ghp_[0-9a-zA-Z]{36}'''+"'''"+r'''
[[rules]]
id = "aws-access-key"
regex = '''+"'''"+r'''(A3T[A-Z0-9]|AKIA|ASIA)[A-Z0-9]{16}'''+"'''"+r'''
[allowlist]
paths = ['''+"'''"+r'''fixtures/.*'''+"'''"+r''']
# rule set version @@ver@@
''')
O("format_strings", r'''
log.info("connecting to %s:%d as %s", host, port, user)
url = f"postgresql://{user}:{password}@{host}:{port}/{db}"
printf("PIN attempts left: %d of %d\n", left, MAX_PIN_ATTEMPTS);
String.format("Bearer %s", token);  // build @@short@@
''')
O("math_notes", r'''
Quick sanity check for the hash-table sizing: with n = @@n@@ keys and load factor 0.75 we need m >= n/0.75, round up to the next prime. Collision probability ~ 1 - e^(-k(k-1)/2N); for k = 2^32 and N = 2^64 that is about 0.39. sqrt(2) ≈ 1.41421356, 7! = 5040.
''')
O("urls_ids", r'''
See https://github.com/@@user@@/api/pull/@@pr@@#discussion_r@@big@@ and the runbook https://wiki.@@host@@/display/OPS/Rotate+keys#step-3
Dashboard: https://console.cloud.google.com/logs/query;query=resource.type%3D%22k8s_container%22?project=shop-@@n@@
''')
O("dkim_headers", r'''
Received: from mail-@@short@@.google.com ([@@pubip@@]) by mx.@@host@@ with ESMTPS id @@qid@@
DKIM-Signature: v=1; a=rsa-sha256; c=relaxed/relaxed; d=gmail.com; s=20230601; h=to:subject:message-id:date:from:mime-version;
 bh=@@b64pub@@;
 b=@@b64pub#2@@
Message-ID: <CA+@@qid#2@@@mail.gmail.com>
''')
O("order_tracking", r'''
Hi team, the replacement YubiKeys for the new hires shipped: order @@order@@, DHL tracking @@track@@, invoice INV-2024-@@n@@ (EUR @@money@@). Please don't activate them before the onboarding session.
''')
O("product_models", r'''
Hardware for the Berlin office refresh: ThinkPad X1 Carbon Gen 11 (21HM-CTO1WW), Dell U2723QE, Logitech MX Keys S, YubiKey 5C NFC (FW 5.4.3), Ubiquiti U6-Pro, Synology DS923+ with 4x WD Red Plus 8TB (WD80EFPX). Quote ref @@order@@.
''')
O("nginx_clean", r'''
server {
    listen 443 ssl http2;
    server_name app.@@host@@;
    ssl_certificate     /etc/letsencrypt/live/app/fullchain.pem;
    ssl_certificate_key /etc/letsencrypt/live/app/privkey.pem;
    add_header Strict-Transport-Security "max-age=63072000" always;
    location / { proxy_pass http://@@ip@@:@@port@@; }
}
''')
O("postfix_maincf", r'''
relayhost = [smtp.sendgrid.net]:587
smtp_sasl_auth_enable = yes
smtp_sasl_password_maps = hash:/etc/postfix/sasl_passwd
smtp_sasl_security_options = noanonymous
smtp_tls_security_level = encrypt
myhostname = @@host@@
''')
O("wg_show", r'''
$ sudo wg show
interface: wg0
  public key: @@b64pub@@
  private key: (hidden)
  listening port: 51820

peer: @@b64pub#2@@
  endpoint: @@pubip@@:@@port@@
  allowed ips: 10.66.0.@@n@@/32
  latest handshake: 1 minute, 12 seconds ago
  transfer: 48.21 MiB received, 1.03 GiB sent
''')
O("nmcli_hidden", r'''
$ nmcli -s connection show "Office-5G" | grep -E 'ssid|psk|key-mgmt'
802-11-wireless.ssid:                   Office-5G
802-11-wireless-security.key-mgmt:      wpa-psk
802-11-wireless-security.psk:           <hidden>
802-11-wireless-security.psk-flags:     1 (agent-owned)
connection.uuid:                        @@uuid@@
''')
O("psql_schema", r'''
shop=# \d users
                        Table "public.users"
     Column      |           Type           | Nullable
-----------------+--------------------------+----------
 id              | bigint                   | not null
 email           | citext                   | not null
 password_digest | character varying(255)   | not null
 pin_set_at      | timestamp with time zone |
 api_key_prefix  | character(8)             |
Indexes: "users_pkey" PRIMARY KEY, btree (id)  -- rows: @@big@@
''')
O("http_trace_clean", r'''
> POST /v1/orders HTTP/1.1
> Host: api.@@host@@
> Content-Type: application/json
> Idempotency-Key: @@uuid@@
> traceparent: 00-@@hexid@@-@@short@@a9c0e1f2-01
< HTTP/1.1 201 Created
< ETag: W/"5e-@@short#2@@"
< X-Request-Id: @@reqid@@
''')
O("http_cookies_public", r'''
< HTTP/2 200
< cf-ray: @@short@@f00d@@n@@-FRA
< set-cookie: theme=dark; Path=/; Max-Age=31536000
< set-cookie: locale=de-DE; Path=/; SameSite=Lax
< set-cookie: cookie_consent=analytics:0,marketing:0; Path=/
< cache-control: public, max-age=300
''')
O("crash_report", r'''
Thread 3 Crashed:: Dispatch queue: com.apple.root.default-qos
0   libsystem_kernel.dylib   0x00000001@@short@@ __pthread_kill + 8
1   KeyVault                 0x0000000102a3c4d0 -[PinPadView validatePin:] + 212
2   KeyVault                 0x0000000102a3b1f8 __40-[SecureStore loadToken]_block_invoke + 96
Binary Images: 0x102a10000 - 0x102b3ffff KeyVault arm64 <@@hexid@@>
''')
O("ci_test_log", r'''
PASS  src/auth/password.test.ts (@@dur@@)
  ✓ rejects passwords shorter than 12 chars (4 ms)
  ✓ rejects the 10k most common passwords (212 ms)
  ✓ locks account after 5 wrong PINs (9 ms)
  ✓ rotates refresh token on use (15 ms)
Test Suites: 14 passed, 14 total
Tests:       @@n@@ passed, @@n@@ total
''')
O("aws_ec2_output", r'''
$ aws ec2 describe-instances --query 'Reservations[].Instances[].[InstanceId,ImageId,State.Name,PrivateIpAddress]' --output text
@@instid@@	ami-0@@short@@4d2e1a	running	@@ip@@
@@instid#2@@	ami-0@@short#2@@77c0b3	stopped	@@ip#2@@
''')
O("gcloud_instances", r'''
$ gcloud compute instances list --project=ml-@@n@@
NAME            ZONE            MACHINE_TYPE   STATUS   INTERNAL_IP
trainer-a100-1  europe-west4-a  a2-highgpu-1g  RUNNING  @@ip@@
notebook-@@short@@  europe-west4-b  n2-standard-8  TERMINATED  @@ip#2@@
''')
O("az_account_show", r'''
$ az account show
{
  "environmentName": "AzureCloud",
  "id": "@@uuid@@",
  "isDefault": true,
  "name": "Contoso Prod",
  "state": "Enabled",
  "tenantId": "@@uuid#2@@",
  "user": { "name": "@@email@@", "type": "user" }
}
''')
O("oci_list", r'''
$ oci compute instance list -c $COMPARTMENT --query 'data[].{name:"display-name",id:id,state:"lifecycle-state"}' --output table
+-----------+--------------------------------------------------------------------------------------------------+---------+
| name      | id                                                                                               | state   |
| gpu-@@n@@ | @@ocid@@ | RUNNING |
''')
O("aliyun_ecs", r'''
$ aliyun ecs DescribeInstances --RegionId cn-shanghai --PageSize 1
{
  "RequestId": "@@uuid@@",
  "TotalCount": @@n@@,
  "Instances": { "Instance": [ { "InstanceId": "i-uf6@@short@@x2k9", "InstanceType": "ecs.g7.large", "Status": "Running" } ] }
}
''')
O("doctl_list", r'''
$ doctl compute droplet list --format ID,Name,PublicIPv4,Region,Image
ID           Name          Public IPv4       Region    Image
@@big@@    web-@@n@@      @@pubip@@     fra1      Ubuntu 22.04 (LTS) x64
''')
O("hcloud_list", r'''
$ hcloud server list
ID         NAME          STATUS    IPV4             IPV6                      DATACENTER
@@big@@   k3s-@@n@@      running   @@pubip@@     2a01:4f8:c012:@@short@@::/64   fsn1-dc14
''')
O("system_prompt", r'''
You are the support assistant for @@user@@ Bank. Never ask the customer for their full password, PIN, card number or one-time code. If they want to reset their PIN, send them to https://help.@@host@@/pin-reset. If they paste a password, tell them to change it immediately.
''')
O("cli_help", r'''
Usage: dbsync [OPTIONS] SOURCE TARGET

Options:
  -u, --user TEXT         database user
  -p, --password TEXT     password (prefer --password-file or $DBSYNC_PASSWORD)
  --password-file PATH    read the password from a file
  --token TEXT            API token for the control plane
  --dry-run               show what would change
  -V, --version           dbsync @@ver@@
''')
O("notebook_output_png", r'''
{
 "cell_type": "code",
 "execution_count": @@n@@,
 "outputs": [
  { "data": { "image/png": "@@png@@" },
    "metadata": {}, "output_type": "display_data" }
 ],
 "source": ["plt.plot(losses); plt.title('password-strength classifier loss')"]
}
''')
O("puppet_chef_lookup", r'''
# Puppet
$db_password = lookup('profile::db::password', Sensitive[String])
# Chef
creds = data_bag_item('secrets', 'db', Chef::EncryptedDataBagItem.load_secret('/etc/chef/encrypted_data_bag_secret'))
# Salt
{{ salt['vault'].read_secret('secret/data/mail')['password'] }}
# run @@n@@
''')
O("pulumi_require_secret", r'''
const cfg = new pulumi.Config();
const dbPassword = cfg.requireSecret("dbPassword");
const db = new aws.rds.Instance("orders-@@n@@", {
    engine: "postgres",
    username: "orders",
    password: dbPassword,
    skipFinalSnapshot: false,
});
''')
O("cfn_resolve", r'''
  Database:
    Type: AWS::RDS::DBInstance
    Properties:
      Engine: postgres
      MasterUsername: !Sub '{{resolve:secretsmanager:${DbSecret}:SecretString:username}}'
      MasterUserPassword: !Sub '{{resolve:secretsmanager:${DbSecret}:SecretString:password}}'
      DBInstanceClass: db.t4g.medium
      Tags: [{ Key: stack-rev, Value: "@@short@@" }]
''')
O("maillog", r'''
Mar 12 @@time@@ mx1 postfix/smtpd[@@n@@]: @@qid@@: client=unknown[@@pubip@@], sasl_method=PLAIN, sasl_username=@@email@@
Mar 12 @@time@@ mx1 postfix/qmgr[811]: @@qid@@: from=<@@email@@>, size=48213, nrcpt=1 (queue active)
''')
O("auth_log", r'''
Mar 14 @@time@@ bastion sshd[@@n@@]: Failed password for invalid user admin from @@pubip@@ port @@port@@ ssh2
Mar 14 @@time@@ bastion sshd[@@n@@]: Accepted publickey for deploy from @@ip@@ port 51822 ssh2: ED25519 @@fp@@
''')
O("placeholder_docs", r'''
### Configuration
| Variable | Example | Notes |
|---|---|---|
| `API_KEY` | `your-api-key-here` | from the dashboard, Settings -> API |
| `WEBHOOK_SECRET` | `whsec_...` | shown once when you create the endpoint |
| `ADMIN_PIN` | `0000` | placeholder, the installer forces a change |
Docs rev @@short@@
''')
O("sha256sums", r'''
$ cat SHA256SUMS
@@sha256@@  vaultwarden-@@ver@@-linux-amd64.tar.gz
@@sha256#2@@  vaultwarden-@@ver@@-linux-arm64.tar.gz
$ sha256sum -c SHA256SUMS --ignore-missing
vaultwarden-@@ver@@-linux-amd64.tar.gz: OK
''')
O("base64_public", r'''
$ echo -n '{"alg":"none"}' | base64
eyJhbGciOiJub25lIn0=
$ kubectl get configmap branding -o jsonpath='{.binaryData.logo\.png}' | head -c 96
@@png@@
''')
O("gemfile_lock", r'''
GEM
  remote: https://rubygems.org/
  specs:
    bcrypt (3.1.20)
    devise (4.9.3)
      bcrypt (~> 3.0)
    jwt (2.8.1)
    rotp (6.3.0)
PLATFORMS
  x86_64-linux
BUNDLED WITH
   @@ver@@
''')
O("dockerfile_digest", r'''
FROM python:3.12-slim@sha256:@@sha256@@ AS base
ENV PIP_NO_CACHE_DIR=1 PYTHONDONTWRITEBYTECODE=1
RUN --mount=type=secret,id=pip_conf,target=/etc/pip.conf pip install -r requirements.txt
ARG GIT_SHA=@@sha@@
''')
O("k8s_events", r'''
$ kubectl get events -n payments --sort-by=.lastTimestamp | tail -3
2m   Normal   Pulled     pod/psp-webhook-@@podsfx@@   Container image "registry.@@host@@/psp-webhook:@@short@@" already present
2m   Normal   Started    pod/psp-webhook-@@podsfx@@   Started container webhook
1m   Warning  BackOff    pod/token-refresher-@@podsfx#2@@   Back-off restarting failed container
''')
O("known_hosts_fp", r'''
The authenticity of host 'git.@@host@@ (@@pubip@@)' can't be established.
ED25519 key fingerprint is @@fp@@.
This key is not known by any other names.
Are you sure you want to continue connecting (yes/no/[fingerprint])? yes
''')
O("xcode_log", r'''
Signing Identity:     "Apple Distribution: @@user@@ GmbH (@@qid@@)"
Provisioning Profile: "match AppStore com.@@user@@.wallet"
                      (@@uuid@@)
** ARCHIVE SUCCEEDED ** [@@dur@@]
''')
O("r_keyring", r'''
library(keyring)
con <- DBI::dbConnect(RPostgres::Postgres(),
  host = Sys.getenv("PGHOST"), user = Sys.getenv("PGUSER"),
  password = keyring::key_get("survey-db", username = Sys.getenv("PGUSER")))
summary(lm(score ~ wave + region, data = df))  # n = @@n@@
''')
O("elixir_runtime_env", r'''
config :ledger, Ledger.Repo,
  url: System.fetch_env!("DATABASE_URL"),
  pool_size: String.to_integer(System.get_env("POOL_SIZE") || "10")

config :ledger, LedgerWeb.Endpoint,
  secret_key_base: System.fetch_env!("SECRET_KEY_BASE"),
  http: [port: @@port@@]
''')
O("sql_orders", r'''
shop=# SELECT id, order_no, status, total_eur FROM orders ORDER BY id DESC LIMIT 2;
   id   |   order_no        | status  | total_eur
--------+-------------------+---------+-----------
 @@big@@ | @@order@@ | shipped | @@money@@
 @@big#2@@ | @@order#2@@ | pending | @@money#2@@
(2 rows)
''')
O("regex_validators", r'''
PASSWORD_RE = re.compile(r"^(?=.*[a-z])(?=.*[A-Z])(?=.*\d)(?=.*[^\w\s]).{12,128}$")
PIN_RE = re.compile(r"^\d{4,8}$")
TOKEN_RE = re.compile(r"^[A-Za-z0-9_-]{32,}$")
# tests: see test_validators.py::test_pin_rejects_sequences ("1234", "0000") -- rev @@short@@
''')

# ---- ordinary chat, one template per language (talk about secrets, no values) ----
O("chat_en", r'''
reminder: the password rotation for all shared accounts is this Friday. Please don't post passwords or PINs in this channel - use the 1Password share link instead. If your YubiKey stopped working, open a ticket (@@ticket@@ is the template) and IT will send a new one.
''')
O("chat_de", r'''
Hallo zusammen, ab Montag gilt die neue Passwortrichtlinie: mindestens 12 Zeichen, kein Wiederverwenden der letzten 5 Passwörter. Die PIN für den Drucker bekommt ihr weiterhin vom Empfang, nicht per Chat. Fragen gerne in @@ticket@@.
''')
O("chat_fr", r'''
Bonjour à tous, petit rappel : ne partagez jamais vos mots de passe ni vos codes d'accès par e-mail. Le nouveau gestionnaire de mots de passe sera déployé la semaine prochaine (version @@ver@@), une formation est prévue mardi à 14h.
''')
O("chat_es", r'''
Hola equipo, la clave del wifi de invitados la tiene recepción; por favor no la pongáis en el canal. Por cierto, el token de GitHub de la CI caduca el viernes, Lucía lo renueva y lo guarda en Vault. Ticket @@ticket@@.
''')
O("chat_pt", r'''
Pessoal, alguém sabe onde fica a documentação de como gerar um token de API no painel novo? Preciso integrar o ERP até sexta. Não precisa mandar o token aqui, só o link da doc mesmo. Pedido @@order@@.
''')
O("chat_it", r'''
Ciao a tutti, dopo l'incidente di ieri abbiamo ruotato tutte le chiavi API e le password dei servizi. Se qualche job notturno fallisce con 401, aggiornate il riferimento al segreto nel Vault, non incollate le credenziali nel codice. Dettagli in @@ticket@@.
''')
O("chat_nl", r'''
Even ter info: je pincode voor de nieuwe toegangspas krijg je per post, niet via Slack. Ben je hem kwijt, dan kan facilitair een nieuwe aanvragen (formulier @@n@@). De oude passen werken vanaf 1 april niet meer.
''')
O("chat_pl", r'''
Hej, czy ktoś pamięta, w którym sejfie w 1Password trzymamy hasło do konta serwisowego Jenkinsa? Nie wklejajcie go tutaj, wystarczy nazwa sejfu. Build @@ghrun@@ znowu pada na logowaniu.
''')
O("chat_cs", r'''
Ahoj, nová politika hesel platí od pondělí: minimálně 14 znaků a povinné dvoufázové ověření. Kód k alarmu se mění každý měsíc a dostanete ho SMSkou, do chatu ho prosím nepište. Dotazy do @@ticket@@.
''')
O("chat_sv", r'''
Hej allihop! Påminnelse: byt lösenord på era AD-konton innan fredag, annars låses de. Återställningskoderna för 2FA ska sparas i lösenordshanteraren, inte i en textfil på skrivbordet. Ärende @@ticket@@.
''')
O("chat_nb", r'''
Hei! Noen som vet hvorfor innloggingen med passnøkkel feiler på Safari 17.4? Jeg får "invalid token" hver gang, men med passord og engangskode går det fint. Logg ligger i @@ticket@@.
''')
O("chat_da", r'''
Hej alle, husk at koden til serverrummet bliver skiftet i morgen. I får den nye kode af Lone personligt. Og nej, vi skriver den ikke i kanalen igen 😅 Vagtplan for uge @@n@@ er opdateret.
''')
O("chat_fi", r'''
Moi kaikki, salasanojen vaihto on pakollinen kolmen kuukauden välein, ja PIN-koodit kulkukortteihin saa vain vastaanotosta. Jos kaksivaiheinen tunnistus ei toimi, tehkää tiketti @@ticket@@ -pohjalla.
''')
O("chat_ru", r'''
Коллеги, напоминаю: пароли и токены не кидаем в общий чат, только через менеджер паролей. Если у кого-то истёк токен доступа к GitLab, создайте новый в настройках профиля со сроком 90 дней. Задача @@ticket@@.
''')
O("chat_uk", r'''
Колеги, з понеділка вхід у VPN лише з двофакторною автентифікацією. Пароль лишається той самий, але додасться одноразовий код з застосунку. Інструкція у вікі, сторінка @@n@@.
''')
O("chat_tr", r'''
Arkadaşlar, yeni şifre politikası gereği şifreler en az 12 karakter olmalı ve 90 günde bir değiştirilmeli. Kasa şifresini sadece muhasebe biliyor, lütfen sormayın 🙂 Detaylar @@ticket@@ kaydında.
''')
O("chat_el", r'''
Καλημέρα σε όλους! Μην στέλνετε κωδικούς πρόσβασης μέσω email. Από την επόμενη εβδομάδα θα χρησιμοποιούμε διαχειριστή κωδικών, και θα γίνει σύντομη παρουσίαση την Τετάρτη. Αίτημα @@ticket@@.
''')
O("chat_he", r'''
היי לכולם, תזכורת: לא שולחים סיסמאות או קודי אימות בצ'אט. אם שכחתם את הקוד של הכספת, פנו לאיתי. עדכון גרסה @@ver@@ של מנהל הסיסמאות יותקן אוטומטית בלילה.
''')
O("chat_ar", r'''
تذكير للجميع: لا ترسلوا كلمات المرور أو رموز التحقق عبر البريد الإلكتروني أو الدردشة. إذا انتهت صلاحية مفتاح الوصول الخاص بكم، أنشئوا مفتاحاً جديداً من لوحة التحكم. رقم الطلب @@ticket@@.
''')
O("chat_fa", r'''
سلام به همه، یادآوری: رمز عبور حساب‌های مشترک هر سه ماه یک بار عوض می‌شود. لطفاً رمزها را در گروه نفرستید و از مدیر رمز عبور استفاده کنید. جزئیات در تیکت @@ticket@@.
''')
O("chat_hi", r'''
सभी को नमस्ते, याद रखें कि पासवर्ड या OTP कभी भी चैट में साझा न करें। नया पासवर्ड मैनेजर अगले सोमवार से लागू होगा, प्रशिक्षण का लिंक टिकट @@ticket@@ में है।
''')
O("chat_bn", r'''
সবাইকে জানানো যাচ্ছে, আগামী সপ্তাহ থেকে দুই-ধাপের যাচাইকরণ বাধ্যতামূলক। পাসওয়ার্ড বা পিন কাউকে পাঠাবেন না। সমস্যা হলে @@ticket@@ টিকিটে লিখুন।
''')
O("chat_ja", r'''
皆さん、パスワードや認証コードをチャットに貼らないようお願いします。APIキーの再発行手順はWikiの「鍵ローテーション」ページにまとめました。質問は @@ticket@@ にコメントしてください。
''')
O("chat_zh", r'''
各位同事，新的密码策略下周一生效：至少12位，且不能与最近5次相同。门禁密码由行政每月更新，请勿在群里询问或转发。详情见工单 @@ticket@@。
''')
O("chat_ko", r'''
여러분, 비밀번호나 인증 코드는 절대 메신저로 보내지 마세요. 금고 비밀번호는 총무팀만 관리합니다. 새 비밀번호 관리자 설치 가이드는 @@ticket@@ 티켓에 있습니다.
''')
O("chat_vi", r'''
Mọi người lưu ý: không gửi mật khẩu hoặc mã OTP qua chat. Token truy cập GitLab sẽ hết hạn vào thứ Sáu, ai cần gia hạn thì tạo yêu cầu @@ticket@@ nhé.
''')
O("chat_th", r'''
แจ้งทุกคนครับ ห้ามส่งรหัสผ่านหรือรหัส OTP ผ่านแชทเด็ดขาด ถ้าลืมรหัสเข้าห้องเซิร์ฟเวอร์ให้ติดต่อฝ่ายอาคาร รายละเอียดอยู่ในตั๋ว @@ticket@@ ครับ
''')
O("chat_id", r'''
Teman-teman, mulai minggu depan semua akun wajib pakai autentikasi dua faktor. Jangan kirim kata sandi atau kode OTP lewat chat, ya. Panduan lengkap ada di tiket @@ticket@@.
''')
O("chat_tl", r'''
Paalala sa lahat: huwag i-share ang password o PIN sa group chat. Kung nakalimutan ninyo ang password ng VPN, mag-file ng ticket gamit ang @@ticket@@ na template. Salamat!
''')
O("chat_sw", r'''
Habari timu, tafadhali msitume nenosiri au misimbo ya uthibitisho kupitia gumzo. Funguo mpya za API zitatolewa Jumatatu kupitia msimamizi wa nenosiri. Maelezo yako kwenye tiketi @@ticket@@.
''')
O("chat_ro", r'''
Salutare! De luni, parolele trebuie să aibă cel puțin 12 caractere și se schimbă la 90 de zile. Codul de la ușa camerei serverelor îl primiți de la Ioana, nu pe chat. Detalii în @@ticket@@.
''')
O("chat_hu", r'''
Sziasztok! Jövő héttől kötelező a kétlépcsős azonosítás minden fiókon. Jelszót vagy PIN-kódot ne küldjetek chaten, használjátok a jelszókezelőt. Részletek a @@ticket@@ jegyben.
''')
O("chat_hr", r'''
Pozdrav svima, podsjetnik da se lozinke mijenjaju svakih 90 dana. Kod za alarm dobivate osobno od voditelja ureda, nikako putem chata. Upute su u tiketu @@ticket@@.
''')
O("chat_ca", r'''
Hola a tothom! Recordeu que no s'han d'enviar contrasenyes ni codis de verificació pel xat. El nou gestor de contrasenyes (versió @@ver@@) s'instal·larà dilluns.
''')
O("chat_bg", r'''
Колеги, напомням, че паролите и токените не се пращат в общия чат. Ако токенът ви за достъп до регистъра е изтекъл, създайте нов от профила си. Задача @@ticket@@.
''')
O("chat_sk", r'''
Ahojte, od pondelka je povinné dvojfaktorové overenie pre všetky účty. Heslá ani PIN kódy neposielajte cez chat, používajte správcu hesiel. Podrobnosti v @@ticket@@.
''')

# =====================================================================
PH = re.compile(r"@@([a-z0-9_]+)(?:#(\d+))?@@")

def fresh(name):
    gen = SECRET_GENS.get(name) or FILL_GENS[name]
    for _ in range(2000):
        v = gen()
        key = v[0] if isinstance(v, tuple) else v
        if key not in USED and not (name in SECRET_GENS and any(
                part in ORD_BLOB for part in (v[1] if isinstance(v, tuple) else [v]))):
            USED.add(key)
            if isinstance(v, tuple):
                for part in v[1]:
                    USED.add(part)
            return v
    raise RuntimeError("cannot make distinct value for " + name)

def render(tmpl, secret_ok):
    vals, secrets = {}, []
    def sub(m):
        name, idx = m.group(1), m.group(2) or "1"
        key = (name, idx)
        if key not in vals:
            if name in SECRET_GENS and not secret_ok:
                raise ValueError("secret placeholder in ordinary template: " + name)
            v = fresh(name)
            if isinstance(v, tuple):
                txt, parts = v
            else:
                txt, parts = v, [v]
            vals[key] = txt
            if name in SECRET_GENS:
                secrets.extend(parts)
        return vals[key]
    text = PH.sub(sub, tmpl)
    # a secret must not also occur by accident elsewhere in its own text
    rest = text
    for sv in sorted(secrets, key=len, reverse=True):
        rest = rest.replace(sv, "\x00")
    if any(sv in rest for sv in secrets):
        return None, None
    return text, secrets

ORD_BLOB = ""

def build():
    global ORD_BLOB
    rows = []
    for fam, t in OT:
        for _ in range(2):
            text, secrets = render(t, False)
            rows.append({"kind": "ordinary", "family": fam, "text": text})
    ORD_BLOB = "\n\x00".join(r["text"] for r in rows)
    for fam, t in ST:
        for _ in range(2):
            for _try in range(50):
                text, secrets = render(t, True)
                if text is not None:
                    break
            assert text is not None and secrets, fam
            rows.append({"kind": "secret", "family": fam, "text": text, "secrets": secrets})
    R.shuffle(rows)
    return rows

def check(rows):
    fams = [f for f, _ in ST] + [f for f, _ in OT]
    # each template used exactly twice; family names unique within a kind
    assert len(set(f for f, _ in ST)) == len(ST), "dup secret family"
    assert len(set(f for f, _ in OT)) == len(OT), "dup ordinary family"
    texts = [r["text"] for r in rows]
    assert len(texts) == len(set(texts)), "duplicate texts"
    all_secrets = []
    for r in rows:
        assert len(r["text"]) <= 800, (r["family"], len(r["text"]))
        assert "@@" not in r["text"].replace("@@@", ""), r["family"]
        assert not PH.search(r["text"]), r["family"]
        if r["kind"] == "secret":
            for s in r["secrets"]:
                assert s in r["text"], (r["family"], s)
                assert len(s) >= 4
            all_secrets.extend(set(r["secrets"]))
    assert len(all_secrets) == len(set(all_secrets)), "secret values reused across cases"
    ords = [r["text"] for r in rows if r["kind"] == "ordinary"]
    blob = "\n\x00".join(ords)
    for s in all_secrets:
        assert s not in blob, "secret value appears in an ordinary text: " + s
    ns = sum(r["kind"] == "secret" for r in rows)
    no = len(rows) - ns
    assert ns >= 250 and no >= 200
    ls = {r["family"][5:] for r in rows if r["kind"] == "secret" and r["family"].startswith("chat_")}
    lo = {r["family"][5:] for r in rows if r["kind"] == "ordinary" and r["family"].startswith("chat_")}
    assert len(ls) >= 30 and len(lo) >= 30
    return ns, no, sorted(ls), sorted(lo)

def main():
    rows = build()
    ns, no, ls, lo = check(rows)
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "redaction_heldback6.jsonl")
    with open(out, "w", encoding="utf-8", newline="\n") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    print("secret", ns, "ordinary", no, "secret-chat langs", len(ls), "ordinary-chat langs", len(lo))
    print("langs", " ".join(ls))
    print("md5", hashlib.md5(open(out, "rb").read()).hexdigest())

if __name__ == "__main__":
    main()
