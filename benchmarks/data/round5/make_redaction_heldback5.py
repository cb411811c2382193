#!/usr/bin/env python3
"""Deterministic generator for redaction_heldback5.jsonl (held-back redaction test set).

Standard library only. Rerunning produces a byte-identical file.
Template placeholders: «kind» = generated secret (recorded in "secrets"),
«kind#label» = same secret value reused inside one text, ‹kind› = non-secret filler,
⇥ = TAB character.
"""
import base64
import json
import os
import random
import re
import string
import sys
import uuid

SEED = 5150731
R = random.Random(SEED)
AL = string.ascii_letters + string.digits
UP = string.ascii_uppercase
LO = string.ascii_lowercase
DG = string.digits
HX = "0123456789abcdef"

WORDS = ["sunflower", "marble", "tiger", "kettle", "harbor", "violet", "copper", "lantern", "meadow",
         "falcon", "pepper", "glacier", "orchid", "saturn", "biscuit", "canyon", "ember", "juniper",
         "walrus", "quartz", "mango", "thunder", "pixel", "nomad", "cobalt", "willow", "rocket",
         "olive", "panda", "raven", "summit", "tundra", "zephyr", "bramble", "cactus", "dolphin",
         "galaxy", "hazel", "igloo", "jasmine", "koala", "lemon", "maple", "nectar", "oyster",
         "pebble", "quill", "river", "salmon", "tulip", "umber", "velvet", "wombat", "yonder"]
B32 = UP + "234567"
BECH = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"
URLS = AL + "-_"


def rs(n, alph=AL):
    return "".join(R.choice(alph) for _ in range(n))


def _mix(n, alph):
    while True:
        s = rs(n, alph)
        if any(c.isdigit() for c in s) and any(c.isupper() for c in s) and any(c.islower() for c in s):
            return s


def g_pw():
    t = R.randrange(7)
    if t == 0:
        return R.choice(WORDS).capitalize() + R.choice("!#%*@$?.") + str(R.randint(10, 9999))
    if t == 1:
        s = _mix(R.randint(12, 18), AL + "!#%*-_.@")
        return R.choice(AL) + s[1:-1] + R.choice(AL)
    if t == 2:
        return "-".join(R.sample(WORDS, 3)) + "-" + str(R.randint(1, 99))
    if t == 3:
        w = R.choice(WORDS).capitalize().replace("a", "4").replace("e", "3").replace("o", "0").replace("i", "1")
        return w + R.choice("!@#") + R.choice(WORDS) + str(R.randint(1, 99))
    if t == 4:
        return _mix(R.randint(16, 24), AL)
    if t == 5:
        return R.choice(WORDS) + R.choice(WORDS).capitalize() + R.choice("!?#_") + str(R.randint(100, 999))
    return rs(1, UP) + rs(3, LO) + R.choice("%*_") + _mix(6, AL) + R.choice("@.") + _mix(4, AL)


def g_pwu():
    t = R.randrange(3)
    if t == 0:
        return _mix(R.randint(14, 22), AL)
    if t == 1:
        return R.choice(WORDS).capitalize() + "_" + _mix(8, AL)
    return _mix(10, AL) + "-" + _mix(6, AL)


def g_pin():
    while True:
        s = "".join(R.choice(DG) for _ in range(4))
        if not s.startswith(("19", "20")) and len(set(s)) > 2:
            return s


def g_pin6():
    while True:
        s = "".join(R.choice(DG) for _ in range(6))
        if len(set(s)) > 3 and s[0] != "0":
            return s


def g_door():
    n = R.choice([4, 5, 6])
    while True:
        s = "".join(R.choice(DG) for _ in range(n))
        if not s.startswith(("19", "20")) and len(set(s)) > 2:
            return s


def g_combo():
    return "-".join("%02d" % R.randint(1, 59) for _ in range(3))


def g_rc():
    if R.random() < 0.5:
        return rs(5, HX) + "-" + rs(5, HX)
    return rs(4, LO + DG) + "-" + rs(4, LO + DG) + "-" + rs(4, LO + DG)


def g_rcg():
    return "%04d %04d" % (R.randint(1000, 9999), R.randint(0, 9999))


def g_jwt():
    payload = json.dumps({"sub": str(R.randint(10000, 999999)), "org": R.choice(WORDS),
                          "iat": R.randint(1700000000, 1760000000)}, separators=(",", ":"))
    p = base64.urlsafe_b64encode(payload.encode()).decode().rstrip("=")
    return "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9." + p + "." + rs(43, URLS)


def g_b64pw():
    return base64.b64encode(g_pw().encode()).decode()


def g_dockauth():
    u = R.choice(["deploy", "ci-bot", "jenkins", "maria.k", "svc_build", "robot$ci"])
    return base64.b64encode((u + ":" + g_pwu()).encode()).decode()


def g_ed25519priv():
    raw = bytes(R.getrandbits(8) for _ in range(32))
    return base64.b64encode(bytes.fromhex("302e020100300506032b657004220420") + raw).decode()


def g_ecpem():
    raw = bytes.fromhex("30770201010420") + bytes(R.getrandbits(8) for _ in range(114))
    b = base64.b64encode(raw).decode()
    return [b[i:i + 64] for i in range(0, len(b), 64)]


def g_osshpem():
    raw = b"openssh-key-v1\x00\x00\x00\x00\x04none" + bytes(R.getrandbits(8) for _ in range(280))
    b = base64.b64encode(raw).decode()
    return [b[i:i + 70] for i in range(0, len(b), 70)]


MULTI_KINDS = {"ecpem": g_ecpem, "osshpem": g_osshpem}

SECRET_KINDS = {
    "pw": g_pw, "pwu": g_pwu, "pin": g_pin, "pin6": g_pin6, "door": g_door, "combo": g_combo,
    "rc": g_rc, "rcg": g_rcg, "jwt": g_jwt, "b64pw": g_b64pw, "dockauth": g_dockauth,
    "edpriv": g_ed25519priv,
    "hex32": lambda: rs(32, HX), "hex40": lambda: rs(40, HX), "hex64": lambda: rs(64, HX),
    "an24": lambda: rs(24), "an32": lambda: rs(32), "an40": lambda: rs(40, URLS),
    "b64_44": lambda: rs(43, AL + "+/") + "=",
    "akia": lambda: "AKIA" + rs(16, B32), "asia": lambda: "ASIA" + rs(16, B32),
    "awssk": lambda: rs(40, AL + "+/"), "awsst": lambda: "IQoJb3JpZ2luX2Vj" + rs(200, AL + "+/"),
    "ghp": lambda: "ghp_" + rs(36), "gho": lambda: "gho_" + rs(36), "ghs": lambda: "ghs_" + rs(36),
    "ghpat": lambda: "github_pat_11" + rs(20, UP + DG) + "_" + rs(59),
    "glpat": lambda: "glpat-" + rs(20, AL + "-_"),
    "xoxb": lambda: "xoxb-%d-%d-%s" % (R.randint(10**10, 10**11), R.randint(10**12, 10**13), rs(24)),
    "xoxp": lambda: "xoxp-%d-%d-%d-%s" % (R.randint(10**10, 10**11), R.randint(10**10, 10**11),
                                           R.randint(10**12, 10**13), rs(32, HX)),
    "slackhs": lambda: rs(24),
    "sklive": lambda: "sk_live_51" + rs(96), "sklive24": lambda: "sk_live_" + rs(24),
    "rklive": lambda: "rk_live_51" + rs(60), "whsec": lambda: "whsec_" + rs(32),
    "skproj": lambda: "sk-proj-" + rs(64, URLS) + "T3BlbkFJ" + rs(64, URLS),
    "skant": lambda: "sk-ant-api03-" + rs(93, URLS) + "AA",
    "aiza": lambda: "AIza" + rs(35, URLS),
    "sg": lambda: "SG." + rs(22, URLS) + "." + rs(43, URLS),
    "twsk": lambda: "SK" + rs(32, HX),
    "npm": lambda: "npm_" + rs(36), "pypi": lambda: "pypi-AgEIcHlwaS5vcmc" + rs(70, URLS),
    "shpat": lambda: "shpat_" + rs(32, HX), "mgkey": lambda: "key-" + rs(32, HX),
    "hf": lambda: "hf_" + rs(34, UP + LO), "dop": lambda: "dop_v1_" + rs(64, HX),
    "dppt": lambda: "dp.pt." + rs(43), "linapi": lambda: "lin_api_" + rs(40),
    "pmak": lambda: "PMAK-" + rs(24, HX) + "-" + rs(34, HX), "dapi": lambda: "dapi" + rs(32, HX),
    "sqat": lambda: "EAAA" + rs(60, URLS),
    "tg": lambda: "%d:AA%s" % (R.randint(10**9, 8 * 10**9), rs(33, URLS)),
    "hvs": lambda: "hvs." + rs(24), "hvsl": lambda: "hvs.CAESI" + rs(80, URLS),
    "glsa": lambda: "glsa_" + rs(32) + "_" + rs(8, HX),
    "nrak": lambda: "NRAK-" + rs(27, UP + DG), "pul": lambda: "pul-" + rs(40, HX),
    "age": lambda: "AGE-SECRET-KEY-1" + rs(58, BECH.upper()),
    "azkey": lambda: rs(86, AL + "+/") + "==", "sassig": lambda: rs(43, AL) + "%3D",
    "ya29": lambda: "ya29.a0" + rs(120, URLS),
    "atl": lambda: "ATATT3xFfGF0" + rs(170, URLS) + "=" + rs(8, HX.upper()),
    "discord": lambda: "M" + rs(25, AL) + "." + rs(6, URLS) + "." + rs(38, URLS),
    "heroku": lambda: "HRKU-AA" + rs(58, URLS), "fly": lambda: "fo1_" + rs(43, URLS),
    "sntryu": lambda: "sntryu_" + rs(64, HX), "mchimp": lambda: rs(32, HX) + "-us" + str(R.randint(2, 21)),
    "ccipat": lambda: "CCIPAT_" + rs(22) + "_" + rs(40, HX),
    "glrt": lambda: "glrt-" + rs(20, URLS), "dckr": lambda: "dckr_pat_" + rs(27, URLS),
    "tfc": lambda: rs(14) + ".atlasv1." + rs(67), "sqsp": lambda: "sq0csp-" + rs(43, URLS),
    "rubygems": lambda: "rubygems_" + rs(48, HX), "figma": lambda: "figd_" + rs(40, URLS),
    "notion": lambda: "ntn_" + rs(46), "airtable": lambda: "pat" + rs(14) + "." + rs(64, HX),
    "wg": lambda: rs(43, AL + "+/") + "=",
    "sessid": lambda: rs(32, LO + DG), "jsess": lambda: rs(32, "0123456789ABCDEF"),
    "csid": lambda: "s%3A" + rs(32, URLS) + "." + rs(43, AL),
    "laravel": lambda: "eyJpdiI6" + rs(180, AL) + "%3D%3D",
    "rails": lambda: rs(160, AL) + "--" + rs(40, HX),
    "openai_old": lambda: "sk-" + rs(20) + "T3BlbkFJ" + rs(20),
    "djsk": lambda: "django-insecure-" + rs(50, LO + DG + "!@#%^*(-_=+)"),
    "otpauth": lambda: rs(32, B32),
}

FILLERS = {
    "uuid": lambda: str(uuid.UUID(int=R.getrandbits(128), version=4)),
    "sha40": lambda: rs(40, HX), "sha7": lambda: rs(7, HX), "sha64": lambda: rs(64, HX),
    "sha12": lambda: rs(12, HX), "hex16": lambda: rs(16, HX), "hex32f": lambda: rs(32, HX),
    "fp": lambda: "SHA256:" + rs(43, AL + "+/"),
    "ver": lambda: "%d.%d.%d" % (R.randint(0, 9), R.randint(0, 30), R.randint(0, 40)),
    "num": lambda: str(R.randint(100, 99999)),
    "ticket": lambda: R.choice(["OPS", "INFRA", "SEC", "PLAT", "BE", "WEB", "DATA"]) + "-" + str(R.randint(100, 9999)),
    "order": lambda: str(R.randint(10**7, 10**9)),
    "ip": lambda: "10.%d.%d.%d" % (R.randint(0, 255), R.randint(0, 255), R.randint(1, 254)),
    "edpub": lambda: "AAAAC3NzaC1lZDI1NTE5AAAAI" + rs(43, AL + "+/"),
    "color": lambda: "#" + rs(6, HX),
    "reqid": lambda: "req_" + rs(14),
    "user": lambda: R.choice(["alice", "bob", "dev", "maria", "kenji", "olu", "priya", "tomasz", "admin_ro", "svc_app"]),
    "host": lambda: R.choice(["db-prod-01", "pg.internal", "staging-db", "10.0.3.17", "mysql.eu-west.local",
                              "orders-db.cluster-cx2vq1.eu-central-1.rds.amazonaws.com", "redis-cache-1"]),
    "age1": lambda: "age1" + rs(58, BECH),
    "slackT": lambda: "T0" + rs(8, UP + DG), "slackB": lambda: "B0" + rs(9, UP + DG),
    "acct": lambda: str(R.randint(10**11, 10**12 - 1)),
}

SECRET_BLOCKS = r"""
@@ secret chat-en
ok the wifi pw for the office guest network is «pw» — dont post it in #general pls
@@ secret chat-en
«pw» ← that's the new root password for staging, I rotated it this morning after the incident
@@ secret chat-en
door code for the back entrance is «door» then press # . alarm code «pin» if it starts beeping, you have 30 sec
@@ secret chat-en
safe in the server room: combo is «combo} 
@@ secret chat-en
2FA backup codes for the shared ops account:
«rc»
«rc»
«rc»
store them in 1password not here lol
@@ secret chat-en
yo whats the pass for the vpn again
nvm found it «pw» (case sensitive!!)
@@ secret chat-en-long
Hey, quick context dump before I go on leave: the nightly ETL broke twice last week because the upstream S3 bucket moved to eu-central-1, I patched the region in config.yaml but didn't touch the IAM policy yet. Also the grafana alert for queue depth is way too noisy, feel free to bump it to 5k. Oh and the password for the reporting replica is «pw» — Kevin asked for it, please give it to him over the phone not slack. Finally the migration for orders_v2 is half done, see the ticket, don't run step 4 before the backfill finishes. thx!!
@@ secret chat-en-far
the password I mentioned in standup — you'll need it for the migration on thursday, and also make sure to bump the pool size to 40 and check the dashboards before the window opens because last time nobody did and we had 20 min of 502s, anyway here it is: «pw»
@@ secret chat-en
can u try logging in as admin / «pw» and tell me if the dashboard loads? 🙏
@@ secret chat-en
my bank card pin is «pin» if you need to pay the AWS invoice from the company card, don't tell finance 😅
@@ secret chat-en
Recovery key for the BitLocker laptop: «pin6»-«pin6»-«pin6»-«pin6»-«pin6»-«pin6»-«pin6»-«pin6»
@@ secret chat-en
the passphrase for the gpg key is   «pw»   (no quotes, there are no spaces in it)
@@ secret chat-en
I set your temp password to «pw». you'll be forced to change it at first login
@@ secret chat-en
garage door keypad «door», building front door «door»#  - dont forget the # at the end
@@ secret chat-es
La contraseña del servidor de pruebas es «pw», no la compartas porfa
@@ secret chat-es
oye la clave del wifi es «pw» jaja ya la cambié ayer
@@ secret chat-es
el código de la alarma es «door}, lo desactivas antes de abrir la persiana
@@ secret chat-pt
a senha do banco de homologação é «pw» , qualquer coisa me chama no zap
@@ secret chat-pt
Palavra-passe do router lá de casa: «pw» (mudei depois da visita do técnico)
@@ secret chat-pt
o código do cofre é «door}, não esquece de girar duas vezes
@@ secret chat-fr
Le mot de passe de l'admin WordPress c'est «pw» (avec la majuscule au début)
@@ secret chat-fr
mdp du compte compta : «pw» stp change-le après la clôture
@@ secret chat-fr
le code de la porte c'est «door}, et au 2e étage c'est la porte à gauche
@@ secret chat-de
Das Passwort für den Jenkins-Admin lautet «pw». Bitte nach dem ersten Login ändern.
@@ secret chat-de
Kennwort vom NAS: «pw} – Zugangscode für den Serverraum ist «door}
@@ secret chat-de
Die PIN der Firmenkreditkarte ist «pin}, aber nur für Cloud-Rechnungen benutzen!
@@ secret chat-it
la password del gestionale è «pw», l'ho appena resettata, fammi sapere
@@ secret chat-it
il PIN del bancomat aziendale è «pin} ma non dirlo a nessuno 🤐
@@ secret chat-nl
Het wachtwoord van de testomgeving is «pw} (let op de hoofdletters)
@@ secret chat-nl
de alarmcode is «door} en de sleutel ligt onder de bloempot haha
@@ secret chat-pl
Zaloguj się hasłem «pw} i od razu je zmień w ustawieniach
@@ secret chat-pl
hasło do wifi to «pw}, a kod do drzwi: «door}
@@ secret chat-ru
Пароль от сервера: «pw}, логин root
@@ secret chat-ru
Зайди под админом с паролем «pw} и перезапусти воркеры
@@ secret chat-ru
код от домофона «door}, квартира 47
@@ secret chat-ru-translit
parol ot bd «pw} ne zabud pomenyat posle deploya
@@ secret chat-uk
Пароль до адмінки — «pw}, не світи його в загальному чаті
@@ secret chat-cs
Heslo k databázi je «pw}, snad to teď pojede
@@ secret chat-sk
heslo na wifi je «pw} , ak nejde tak reštartuj router
@@ secret chat-hu
A jelszó a teszt szerverhez: «pw}
@@ secret chat-hu
Lépj be a «pw} jelszóval, utána kérni fog újat
@@ secret chat-ro
Parola pentru contul de admin este «pw}, schimb-o te rog după
@@ secret chat-tr
Sunucunun şifresi «pw}, root kullanıcısıyla gir
@@ secret chat-tr
kapı şifresi «door} abi, alarmı da ben kapatırım
@@ secret chat-el
Ο κωδικός για το VPN είναι «pw}
@@ secret chat-el-greeklish
o kwdikos tou router einai «pw} an den douleyei kane reset
@@ secret chat-ar
كلمة المرور للسيرفر هي «pw} من فضلك لا تشاركها
@@ secret chat-ar-arabizi
el password bta3 el server «pw} ya3ni bs ghayyaro ba3d ma tdkhol
@@ secret chat-he
הסיסמה לשרת היא «pw} תחליף אותה אחרי הכניסה
@@ secret chat-fa
رمز عبور سرور «pw} هست، لطفاً عوضش کن
@@ secret chat-hi
सर्वर का पासवर्ड «pw} है, किसी को मत बताना
@@ secret chat-hi-latn
bhai db ka password «pw} hai, prod wala mat chhedna abhi
@@ secret chat-bn
সার্ভারের পাসওয়ার্ড হল «pw}
@@ secret chat-ur-latn
yaar wifi ka password «pw} hai, guest wala nahi chal raha
@@ secret chat-ta
சர்வர் கடவுச்சொல் «pw} , யாரிடமும் சொல்ல வேண்டாம்
@@ secret chat-te
సర్వర్ పాస్‌వర్డ్ «pw} , దయచేసి మార్చండి
@@ secret chat-th
รหัสผ่านเซิร์ฟเวอร์คือ «pw} นะครับ
@@ secret chat-vi
Mật khẩu wifi văn phòng là «pw} nha mọi người
@@ secret chat-vi-nodiac
mat khau db staging la «pw} nhe, dung dua ai
@@ secret chat-id
Password server staging: «pw}, jangan disebar ya
@@ secret chat-id
udah aku reset, kata sandinya «pw} ya
@@ secret chat-ms
Kata laluan untuk akaun admin ialah «pw}
@@ secret chat-tl
Yung password ng wifi sa opisina ay «pw} po
@@ secret chat-zh
测试服务器的密码是«pw}，别外传
@@ secret chat-zh-hant
門禁密碼是«door}，保險箱密碼«pin}
@@ secret chat-ja
管理画面のパスワードは「«pw}」です。ログイン後に変更してください。
@@ secret chat-ja
会社カードの暗証番号は«pin}です
@@ secret chat-ko
서버 비밀번호는 «pw}입니다
@@ secret chat-ko
현관 비번 «door}임 ㅋㅋ 까먹지마
@@ secret chat-sv
Lösenordet till wifi:t är «pw}
@@ secret chat-no
Passordet til ruteren er «pw}
@@ secret chat-da
Adgangskoden til NAS'en er «pw}
@@ secret chat-fi
Palvelimen salasana on «pw}
@@ secret chat-fi
kirjaudu salasanalla «pw} ja vaihda se heti
@@ secret chat-et
Serveri parool on «pw}
@@ secret chat-lv
Servera parole ir «pw}
@@ secret chat-lt
Serverio slaptažodis: «pw}
@@ secret chat-sr
Лозинка за сервер је «pw}
@@ secret chat-hr
Lozinka za wifi je «pw}, ako ne radi javi
@@ secret chat-bg
Паролата за админ панела е «pw}
@@ secret chat-sw
Nenosiri la seva ni «pw}
@@ secret chat-ka
სერვერის პაროლი არის «pw}
@@ secret chat-hy
Սերվերի գաղտնաբառը «pw} է
@@ secret chat-kk
Сервердің құпия сөзі: «pw}
@@ secret chat-uz
Serverning paroli: «pw}
@@ secret chat-ca
La contrasenya del router és «pw}
@@ secret chat-af
Die wagwoord vir die bediener is «pw}
@@ secret chat-sl
Geslo za strežnik je «pw}
@@ secret chat-is
Lykilorðið að þjóninum er «pw}
@@ secret chat-ne
सर्भरको पासवर्ड «pw} हो
@@ secret chat-mr
सर्व्हरचा पासवर्ड «pw} आहे
@@ secret chat-es-long
Buenas! Les cuento: el deploy de ayer falló porque el pipeline no encontraba la imagen base, ya lo arreglé cambiando el tag. Mañana hay corte de luz en la oficina de 9 a 11, trabajen desde casa. Ah, y para la demo del cliente usen el usuario demo@cliente.com con contraseña «pw}, que la cuenta vieja ya no sirve. Cualquier duda me escriben 👍
@@ secret chat-de-long
Kurzes Update zum Umzug: Die Racks kommen am Dienstag, bitte die Patchkabel beschriften. Der neue Serverraum hat ein Zahlenschloss, Code «door}, und der Alarm wird mit «pin} scharf bzw. unscharf geschaltet. Schlüssel für den Keller hat Frau Öztürk.
@@ secret chat-ru-long
Коллеги, напоминаю: в пятницу релиз, фриз с четверга. Тестовый стенд пересобрали, доступ как раньше через бастион. Пароль от новой учетки сервисного пользователя — «pw}, он же для jenkins. Просьба не хранить его в заметках.
@@ secret chat-pt-long
gente, lembrando q amanhã tem a auditoria. deixem as máquinas bloqueadas. o wifi dos visitantes mudou, a senha agora é «pw} , e a do wifi interno continua a mesma. o pin da impressora do 3º andar é «pin}
@@ secret chat-fr-inverse
«pw} → c'est le nouveau mot de passe du compte de service, je l'ai mis à jour dans le coffre aussi
@@ secret chat-ja-long
お疲れ様です。明日のリリースについて共有します。ステージング環境のDBユーザーを作り直したので、パスワードは «pw} に変わっています。本番は変更なしです。よろしくお願いします🙇
@@ secret chat-en-table
| env | user | password |
|-----|------|----------|
| dev | app  | «pw} |
| stg | app  | «pw} |
@@ secret chat-en
pin for the yubikey is «pin6}, puk is «pin6}. dont lock it again pls
@@ secret chat-en
ssh into the box and use sudo, pw is the usual one + ! at the end... jk, it's «pw} now
@@ secret chat-en
Hi team! Reminder the Wi-Fi at the offsite:
Network: Offsite-5G
Password: «pw}
See u there!
@@ secret chat-en
my apple id recovery key: «rc}  (writing it here so i dont lose it again, will delete)
"""

SECRET_BLOCKS2 = r"""
@@ secret vendor-aws
here are the creds for the sandbox acct: AKID «akia} secret «awssk}  region us-east-1
@@ secret vendor-aws
[default]
aws_access_key_id = «akia}
aws_secret_access_key = «awssk}
aws_session_token = «awsst}
@@ secret vendor-github
use this PAT for the runner, it only has repo scope: «ghp}
@@ secret vendor-github
git clone https://x-access-token:«ghs}@github.com/acme/payments.git
@@ secret vendor-github
GH_TOKEN=«ghpat} gh pr list --repo acme/infra
@@ secret vendor-github
oauth token from the device flow came back as «gho} , is that expected?
@@ secret vendor-gitlab
curl --header "PRIVATE-TOKEN: «glpat}" "https://gitlab.example.com/api/v4/projects"
@@ secret vendor-gitlab
gitlab-runner register --url https://gitlab.com --token «glrt} --executor docker
@@ secret vendor-slack
SLACK_BOT_TOKEN=«xoxb}
SLACK_SIGNING_SECRET=«hex32}
@@ secret vendor-slack
user token for the export script: «xoxp}
@@ secret vendor-slack
webhook for #alerts: https://hooks.slack.com/services/‹slackT›/‹slackB›/«slackhs}
@@ secret vendor-stripe
stripe.api_key = "«sklive}"
@@ secret vendor-stripe
Restricted key for the reporting job: «rklive} (read-only on charges)
@@ secret vendor-stripe
STRIPE_WEBHOOK_SECRET=«whsec}
@@ secret vendor-stripe
old key still in prod? «sklive24} pls rotate
@@ secret vendor-openai
export OPENAI_API_KEY=«skproj}
@@ secret vendor-openai
client = OpenAI(api_key="«openai_old}")
@@ secret vendor-anthropic
ANTHROPIC_API_KEY=«skant} claude -p "summarize the diff"
@@ secret vendor-google
<script src="https://maps.googleapis.com/maps/api/js?key=«aiza}&callback=initMap"></script>
@@ secret vendor-google
Authorization: Bearer «ya29}
@@ secret vendor-sendgrid
SENDGRID_API_KEY='«sg}'
@@ secret vendor-twilio
twilio api key sid «twsk} secret «an32}
@@ secret vendor-npm
//registry.npmjs.org/:_authToken=«npm}
@@ secret vendor-pypi
[pypi]
  username = __token__
  password = «pypi}
@@ secret vendor-shopify
X-Shopify-Access-Token: «shpat}
@@ secret vendor-mailgun
curl -s --user 'api:«mgkey}' https://api.mailgun.net/v3/mg.example.com/messages
@@ secret vendor-huggingface
huggingface-cli login --token «hf}
@@ secret vendor-digitalocean
doctl auth init -t «dop}
@@ secret vendor-doppler
DOPPLER_TOKEN=«dppt} doppler run -- npm start
@@ secret vendor-linear
const linear = new LinearClient({ apiKey: "«linapi}" })
@@ secret vendor-postman
postman api key «pmak} - the collection runner needs it
@@ secret vendor-databricks
databricks configure --token
Databricks Host: https://adb-‹num›.azuredatabricks.net
Token: «dapi}
@@ secret vendor-square
SQUARE_ACCESS_TOKEN=«sqat}
SQUARE_APP_SECRET=«sqsp}
@@ secret vendor-telegram
bot = telebot.TeleBot("«tg}")
@@ secret vendor-jwt
curl -H 'Authorization: Bearer «jwt}' https://api.internal/v2/me
@@ secret vendor-vault
export VAULT_TOKEN=«hvs}
@@ secret vendor-vault
Key                  Value
---                  -----
token                «hvsl}
token_accessor       ‹b64u22x›
token_duration       768h
@@ secret vendor-grafana
grafana service account token: «glsa}
@@ secret vendor-newrelic
NEW_RELIC_API_KEY: «nrak}
@@ secret vendor-pulumi
PULUMI_ACCESS_TOKEN=«pul} pulumi up --yes
@@ secret vendor-age
# created: 2024-03-11T10:22:31+01:00
# public key: ‹age1›
«age}
@@ secret vendor-azure
DefaultEndpointsProtocol=https;AccountName=acmelogs;AccountKey=«azkey};EndpointSuffix=core.windows.net
@@ secret vendor-azure
https://acmelogs.blob.core.windows.net/exports/q3.csv?sv=2022-11-02&ss=b&srt=o&sp=r&se=2025-01-01T00:00:00Z&spr=https&sig=«sassig}
@@ secret vendor-atlassian
jira api token for the bot: «atl}
@@ secret vendor-discord
DISCORD_TOKEN=«discord}
@@ secret vendor-heroku
HEROKU_API_KEY=«heroku}
@@ secret vendor-fly
fly deploy --access-token «fly}
@@ secret vendor-sentry
SENTRY_AUTH_TOKEN=«sntryu} sentry-cli releases new 1.4.2
@@ secret vendor-mailchimp
mailchimp key is «mchimp}, server prefix from the suffix
@@ secret vendor-circleci
circleci token: «ccipat}
@@ secret vendor-docker
echo «dckr} | docker login -u acmebuild --password-stdin
@@ secret vendor-terraform
credentials "app.terraform.io" {
  token = "«tfc}"
}
@@ secret vendor-rubygems
---
:rubygems_api_key: «rubygems}
@@ secret vendor-figma
FIGMA_TOKEN=«figma}
@@ secret vendor-notion
notion integration secret «notion} (shared with the wiki-sync bot)
@@ secret vendor-airtable
AIRTABLE_PAT=«airtable}
@@ secret vendor-privkey
-----BEGIN EC PRIVATE KEY-----
«ecpem}
-----END EC PRIVATE KEY-----
@@ secret vendor-privkey
here's the deploy key, add it to the runner:
-----BEGIN OPENSSH PRIVATE KEY-----
«osshpem}
-----END OPENSSH PRIVATE KEY-----
@@ secret vendor-privkey
{"type": "ed25519", "private_key": "-----BEGIN PRIVATE KEY-----\n«edpriv}\n-----END PRIVATE KEY-----\n"}
@@ secret vendor-wireguard
[Interface]
PrivateKey = «wg}
Address = 10.8.0.2/24
DNS = 1.1.1.1
@@ secret vendor-totp
otpauth://totp/ACME:ops@acme.io?secret=«otpauth}&issuer=ACME
"""

SECRET_BLOCKS3 = r"""
@@ secret config-sql
CREATE USER report_ro WITH PASSWORD '«pw}';
GRANT SELECT ON ALL TABLES IN SCHEMA public TO report_ro;
@@ secret config-sql
ALTER ROLE app_rw WITH LOGIN PASSWORD '«pw}' VALID UNTIL '2026-01-01';
@@ secret config-sql
CREATE USER 'metabase'@'%' IDENTIFIED BY '«pw}'; FLUSH PRIVILEGES;
@@ secret config-sql
CREATE LOGIN etl_svc WITH PASSWORD = N'«pw}', CHECK_POLICY = OFF;
@@ secret config-sql
SQL> ALTER USER scott IDENTIFIED BY "«pw}" ACCOUNT UNLOCK;
@@ secret config-sql
mysql> SET PASSWORD FOR 'wp'@'localhost' = '«pw}';
@@ secret config-connstr
DATABASE_URL=postgres://orders:«pwu}@‹host›:5432/orders?sslmode=require
@@ secret config-connstr
mongodb+srv://analytics:«pwu}@cluster0.ab12c.mongodb.net/prod?retryWrites=true&w=majority
@@ secret config-connstr
REDIS_URL=redis://:«pwu}@redis-cache-1:6379/0
@@ secret config-connstr
amqp://rabbit:«pwu}@mq.internal:5672/%2F
@@ secret config-connstr
jdbc:sqlserver://sql01:1433;databaseName=Billing;user=billing_app;password=«pwu};encrypt=true
@@ secret config-connstr
"ConnectionStrings": { "Default": "Server=tcp:acme.database.windows.net,1433;Database=crm;User ID=crm_app;Password=«pwu};Encrypt=True;" }
@@ secret config-connstr
DRIVER={ODBC Driver 18 for SQL Server};SERVER=10.1.2.3;DATABASE=dw;UID=loader;PWD=«pwu}
@@ secret config-connstr
SQLALCHEMY_DATABASE_URI = "mysql+pymysql://flask:«pwu}@127.0.0.1/shop"
@@ secret config-ci
jobs:
  test:
    runs-on: ubuntu-latest
    env:
      POSTGRES_PASSWORD: «pw}
      API_TOKEN: «an40}
    steps:
      - uses: actions/checkout@v4
@@ secret config-ci
variables:
  DOCKER_AUTH_CONFIG: '{"auths":{"registry.acme.io":{"auth":"«dockauth}"}}}'
  SONAR_TOKEN: "«hex40}"
@@ secret config-ci
pipeline {
  environment {
    NEXUS_PASS = '«pw}'
  }
@@ secret config-iac
resource "aws_db_instance" "main" {
  engine   = "postgres"
  username = "dbadmin"
  password = "«pw}"
}
@@ secret config-iac
apiVersion: v1
kind: Secret
metadata:
  name: app-db
type: Opaque
stringData:
  password: «pw}
@@ secret config-iac
apiVersion: v1
kind: Secret
metadata: {name: smtp}
data:
  SMTP_PASSWORD: «b64pw}
@@ secret config-iac
- name: create db user
  community.postgresql.postgresql_user:
    name: grafana
    password: "«pw}"
@@ secret config-iac
helm upgrade --install keycloak bitnami/keycloak --set auth.adminPassword=«pw} -n auth
@@ secret config-app
services:
  db:
    image: postgres:16
    environment:
      - POSTGRES_USER=app
      - POSTGRES_PASSWORD=«pw}
@@ secret config-app
# .env
APP_ENV=production
DB_HOST=‹host›
DB_PASSWORD=«pw}
SECRET_KEY=«djsk}
@@ secret config-app
spring.datasource.url=jdbc:postgresql://db:5432/app
spring.datasource.username=app
spring.datasource.password=«pw}
@@ secret config-app
DATABASES = {"default": {"ENGINE": "django.db.backends.postgresql", "NAME": "shop", "USER": "shop", "PASSWORD": "«pw}", "HOST": "db"}}
@@ secret config-app
define( 'DB_PASSWORD', '«pw}' );
define( 'AUTH_KEY',    '«an40}' );
@@ secret config-app
production:
  adapter: postgresql
  database: app_production
  username: app
  password: <%= ENV.fetch("DB_PASSWORD") { "«pw}" } %>
@@ secret config-app
[client]
user=backup
password="«pw}"
@@ secret config-app
machine api.heroku.com
  login ops@acme.io
  password «heroku}
@@ secret config-app
{
  "auths": {
    "ghcr.io": { "auth": "«dockauth}" }
  }
}
@@ secret config-app
[global]
index-url = https://ci:«pwu}@nexus.acme.io/repository/pypi/simple
@@ secret config-app
network={
    ssid="Acme-Corp"
    psk="«pw}"
}
@@ secret config-app
<add key="SmtpPassword" value="«pw}" />
@@ secret config-app
mail:
  smtp:
    host: smtp.office365.com
    user: noreply@acme.io
    pass: «pw}
@@ secret config-lang
db, err := sql.Open("postgres", "host=db user=app password=«pw} dbname=app sslmode=disable")
@@ secret config-lang
private static final String API_SECRET = "«hex40}";
@@ secret config-lang
var client = new SmtpClient("smtp.acme.io") { Credentials = new NetworkCredential("alerts", "«pw}") };
@@ secret config-lang
let pool = PgPool::connect("postgres://svc:«pwu}@localhost/ledger").await?;
@@ secret config-lang
val password = "«pw}" // TODO move to keystore
@@ secret config-lang
$secpw = ConvertTo-SecureString '«pw}' -AsPlainText -Force
@@ secret config-lang
conn = psycopg2.connect(host="localhost", dbname="etl", user="etl", password="«pw}")
@@ secret config-lang
const transporter = nodemailer.createTransport({ host: 'smtp.gmail.com', auth: { user: 'bot@acme.io', pass: '«pw}' } });
@@ secret config-cli
mysql -u root -p'«pw}' -h 127.0.0.1 shop < dump.sql
@@ secret config-cli
PGPASSWORD='«pw}' psql -h ‹host› -U postgres -c '\l'
@@ secret config-cli
sshpass -p '«pw}' ssh -o StrictHostKeyChecking=no pi@192.168.1.40
@@ secret config-cli
cd infra && export TF_VAR_db_password='«pw}' && terraform apply -auto-approve && cd ..
@@ secret config-cli
curl -u admin:«pwu} -X POST http://localhost:9200/_snapshot/backup/snap1
@@ secret config-cli
kubectl create secret generic app-db --from-literal=username=app --from-literal=password='«pw}' -n prod
@@ secret config-cli
htpasswd -b -c /etc/nginx/.htpasswd grafana «pw}
@@ secret config-cli
openssl pkcs12 -export -in cert.pem -inkey key.pem -out bundle.p12 -passout pass:«pw}
@@ secret config-cli
net user svc_backup «pw} /add /domain
@@ secret config-cli
nmcli dev wifi connect "Lab-2.4G" password "«pw}"
@@ secret config-cli
git remote set-url origin https://oauth2:«glpat}@gitlab.acme.io/platform/api.git && git push
@@ secret config-cli
docker run -d -e MYSQL_ROOT_PASSWORD=«pw} -p 3306:3306 mysql:8
@@ secret config-cli
redis-cli -h redis-cache-1 -a «pwu} --no-auth-warning INFO keyspace
@@ secret config-cli
echo '«pw}' | sudo -S systemctl restart nginx
@@ secret config-cli
mongosh "mongodb://admin:«pwu}@localhost:27017/?authSource=admin" --eval 'db.stats()'
@@ secret config-toolcall
{"tool": "Bash", "input": {"command": "PGPASSWORD=«pw} pg_dump -h ‹host› -U app app > /tmp/app.sql", "description": "Dump the app database"}}
@@ secret config-toolcall
{"name":"Write","input":{"file_path":"/srv/app/.env","content":"NODE_ENV=production\nJWT_SECRET=«hex64}\nSTRIPE_KEY=«sklive}\n"}}
@@ secret config-toolcall
{"name": "Edit", "input": {"file_path": "config/settings.yaml", "old_string": "password: ''", "new_string": "password: '«pw}'"}}
@@ secret config-toolcall
{"type":"tool_use","name":"Bash","input":{"command":"curl -s -H \"Authorization: token «ghp}\" https://api.github.com/user/repos | jq length"}}
@@ secret config-toolcall
{"tool_name":"mcp__postgres__query","arguments":{"dsn":"postgresql://readonly:«pwu}@analytics:5432/events","sql":"select count(*) from sessions"}}
@@ secret config-http
Cookie: sessionid=«sessid}; csrftoken=abc; theme=dark
@@ secret config-http
curl 'https://shop.acme.io/api/cart' -H 'cookie: connect.sid=«csid}' --compressed
@@ secret config-http
Set-Cookie: JSESSIONID=«jsess}; Path=/; Secure; HttpOnly
@@ secret config-http
Authorization: Basic «dockauth}
@@ secret config-http
laravel_session=«laravel}; XSRF-TOKEN=placeholder
@@ secret config-http
_myapp_session=«rails}
"""

SECRET_BLOCKS4 = r"""
@@ secret output-installer
*************************************************************
Jenkins initial setup is required. An admin user has been created and a password generated.
Please use the following password to proceed to installation:

«hex32}

This may also be found at: /var/jenkins_home/secrets/initialAdminPassword
*************************************************************
@@ secret output-installer
2024-05-02T09:14:11.523Z 6 [Note] [MY-010454] [Server] A temporary password is generated for root@localhost: «pw}
@@ secret output-installer
━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━
✅ Elasticsearch security features have been automatically configured!
ℹ️  Password for the elastic user (reset with `bin/elasticsearch-reset-password -u elastic`):
  «pwu}
@@ secret output-cli
$ argocd admin initial-password -n argocd
«pwu}

 This password must be only used for first time login. We strongly recommend you update the password using `argocd account update-password`.
@@ secret output-cli
$ sudo cat /etc/gitlab/initial_root_password
# WARNING: This value is valid only in the following conditions
Password: «b64_44}
@@ secret output-cli
$ cat ~/.aws/credentials
[prod]
aws_access_key_id = «akia}
aws_secret_access_key = «awssk}
@@ secret output-cli
$ kubectl get secret grafana -n monitoring -o yaml
apiVersion: v1
data:
  admin-password: «b64pw}
  admin-user: YWRtaW4=
kind: Secret
@@ secret output-cli
$ vault kv get secret/payments/db
====== Data ======
Key         Value
---         -----
password    «pw}
username    payments
@@ secret output-cli
$ aws secretsmanager get-secret-value --secret-id prod/api --query SecretString --output text
{"username":"api","password":"«pw}","engine":"mysql","port":3306}
@@ secret output-cli
$ heroku config -a acme-web
=== acme-web Config Vars
DATABASE_URL:  postgres://u8f2k:«pwu}@ec2-3-91-1-2.compute-1.amazonaws.com:5432/d9s
REDIS_TLS_URL: rediss://:«pwu}@ec2-54-1-2-3.compute-1.amazonaws.com:27950
@@ secret output-cli
$ gh auth token
«gho}
@@ secret output-cli
$ docker inspect api-1 --format '{{json .Config.Env}}'
["PATH=/usr/local/bin:/usr/bin","DB_PASS=«pw}","NODE_VERSION=20.11.1"]
@@ secret output-cli
$ env | grep -i -E 'key|token'
GITHUB_TOKEN=«ghp}
TERM_PROGRAM=vscode
HF_TOKEN=«hf}
@@ secret output-cli
$ az storage account keys list -g rg-logs -n acmelogs -o table
KeyName    Permissions    Value
---------  -------------  ----------------------------------------------------------------------------------------
key1       FULL           «azkey}
@@ secret output-cli
$ gcloud auth print-access-token
«ya29}
@@ secret output-cli
$ pass show work/ldap
«pw}
url: https://sso.acme.io
@@ secret output-cli
$ op item get "Prod DB" --fields label=password --reveal
«pw}
@@ secret output-cli
$ security find-generic-password -s "AWS VPN" -w
«pw}
@@ secret output-cli
$ terraform output -raw db_password
«pw}%
@@ secret output-cli
127.0.0.1:6379> CONFIG GET requirepass
1) "requirepass"
2) "«pwu}"
@@ secret output-cli
$ sudo wg show wg0 private-key
«wg}
@@ secret output-cli
$ npm token create
┌────────────────┬──────────────────────────────────────────┐
│ token          │ «npm} │
│ readonly       │ false                                    │
└────────────────┴──────────────────────────────────────────┘
@@ secret output-log
2024-06-11 03:12:55,118 DEBUG urllib3.connectionpool: https://api.acme.io:443 "POST /v1/auth HTTP/1.1" 200 – headers={'Authorization': 'Bearer «jwt}', 'User-Agent': 'python-requests/2.31.0'}
@@ secret output-log
[2024-02-28T17:40:02Z] ERROR db: connection failed: FATAL: password authentication failed for user "app" (dsn=postgres://app:«pwu}@10.0.4.7:5432/app)
@@ secret output-log
Jun 03 11:02:17 web-3 app[2211]: INFO login ok user=jdoe@acme.io password=«pw} ip=203.0.113.9
@@ secret output-http
> POST /oauth/token HTTP/1.1
> Host: auth.acme.io
> Content-Type: application/x-www-form-urlencoded
>
grant_type=client_credentials&client_id=billing-svc&client_secret=«an40}
@@ secret output-http
< HTTP/2 200
< set-cookie: __Host-session=«an40}; Path=/; Secure; HttpOnly; SameSite=Lax
< content-type: text/html; charset=utf-8
@@ secret output-crash
Traceback (most recent call last):
  File "/app/sync.py", line 41, in <module>
    client = Client(api_key=API_KEY)
  ...
Locals at frame:
    API_KEY = '«sg}'
    retries = 3
ValueError: invalid region
@@ secret output-crash
panic: dial tcp: lookup db on 127.0.0.11:53: no such host

goroutine 1 [running]:
main.mustConnect({0xc0000a2000, 0x4a}, {0xc000014108, 0x3})
	/src/main.go:27 +0x1a5
config: &{Host:db User:svc Password:«pw} Port:5432}
@@ secret output-crash
Environment at time of crash:
  HOME=/root
  STRIPE_SECRET_KEY=«sklive}
  LANG=C.UTF-8
"""

SECRET_BLOCKS5 = r"""
@@ secret entropy-table
| Service   | Login          | Secret |
|-----------|----------------|--------|
| Mailjet   | ops@acme.io    | «hex32} |
| Cloudflare| infra@acme.io  | «an40} |
@@ secret entropy-tsv
title⇥username⇥password⇥url
GitLab⇥m.rossi⇥«pw}⇥https://gitlab.acme.io
Synology⇥admin⇥«pw}⇥https://192.168.1.10:5001
@@ secret entropy-yaml
smtp:
  host: smtp.mailgun.org
  port: 587
  user: postmaster@mg.acme.io
  secret: «an32}
@@ secret entropy-nextline
the api secret for the partner portal (they emailed it, copy before it expires):
«an40}
@@ secret entropy-nextline
Password:
«pw}
@@ secret entropy-nextline
creds below

user: svc-reporting
pass: «pw}
@@ secret entropy-csv
name,url,username,password,note
"Router","http://192.168.0.1","admin","«pw}",""
@@ secret entropy-yaml
cloudflare:
  zone: acme.io
  api_token: «an40}
@@ secret entropy-ini
[auth]
client_id = ‹uuid›
client_secret = «an40}
@@ secret entropy-kv
twilio_auth_token=«hex32} twilio_account=‹acct›
@@ secret entropy-chat
here's the signing secret for webhooks → «hex64} ... verify with HMAC-SHA256
@@ secret entropy-json
{"clientId": "mobile-app", "clientSecret": "«an40}", "redirectUri": "acme://cb"}
@@ secret entropy-md
**API key:** `«an32}`
**Endpoint:** `https://api.partner.example/v3`
@@ secret entropy-table
Name          Type      Value
db_password   string    «pw}
region        string    eu-west-1
@@ secret entropy-xml
<credentials>
  <username>sftp_upload</username>
  <password>«pw}</password>
</credentials>
@@ secret entropy-toml
[database]
user = "ledger"
passwd = "«pw}"
@@ secret entropy-props
ldap.bind.dn=cn=svc,ou=apps,dc=acme,dc=io
ldap.bind.credential=«pw}
@@ secret entropy-chat
encryption key for the backups (AES-256, hex): «hex64}
keep it somewhere safe, without it the tarballs are useless
@@ secret entropy-codefence
```
SECRET_KEY_BASE=«hex64}«hex64}
```
@@ secret entropy-chat
Zugangsdaten fürs FTP:
Benutzer: upload
Passwort: «pw}
@@ secret entropy-chat
登录信息
用户名：admin
密码：«pw}
"""

ORD_BLOCKS = r"""
@@ ordinary ref-yaml
database:
  host: ${DB_HOST}
  password: ${DB_PASSWORD}
@@ ordinary ref-shell
export PGPASSWORD="$(vault kv get -field=password secret/app/db)"
@@ ordinary ref-terraform
  password = var.db_password
  username = local.db_user
@@ ordinary ref-helm
        - name: DB_PASSWORD
          valueFrom:
            secretKeyRef:
              name: app-db
              key: password
@@ ordinary ref-gha
    env:
      NPM_TOKEN: ${{ secrets.NPM_TOKEN }}
      DB_PASSWORD: ${{ secrets.DB_PASSWORD }}
@@ ordinary ref-spring
spring.datasource.password=${SPRING_DATASOURCE_PASSWORD}
@@ ordinary ref-python
api_key = os.environ["OPENAI_API_KEY"]
@@ ordinary ref-ruby
token = ENV.fetch("GITHUB_TOKEN") { raise "GITHUB_TOKEN not set" }
@@ ordinary ref-erb
  password: <%= ENV['DATABASE_PASSWORD'] %>
@@ ordinary ref-keyvault
"DbPassword": "@Microsoft.KeyVault(SecretUri=https://kv-acme-prod.vault.azure.net/secrets/DbPassword/)"
@@ ordinary ref-arn
arn:aws:secretsmanager:eu-west-1:‹acct›:secret:prod/db/password-Xk9pQa
@@ ordinary ref-gcloud
gcloud secrets versions access latest --secret=stripe-api-key --project=acme-prod
@@ ordinary ref-docker
docker run -e POSTGRES_PASSWORD_FILE=/run/secrets/pg_password postgres:16
@@ ordinary ref-powershell
$token = $env:API_TOKEN
if (-not $token) { throw "API_TOKEN is empty" }
@@ ordinary ref-cmd
set DB_PASS=%VAULT_DB_PASS%
@@ ordinary ref-env-example
# .env.example
DB_PASSWORD=
STRIPE_SECRET_KEY=
OPENAI_API_KEY=
@@ ordinary ref-compose
    environment:
      POSTGRES_PASSWORD: ${POSTGRES_PASSWORD:?set it in .env}
@@ ordinary ref-ansible
    password: "{{ vault_db_password }}"
@@ ordinary ref-k8s-csi
  parameters:
    objects: |
      - objectName: "prod/db/password"
        objectType: "secretsmanager"
@@ ordinary ref-chat
the db password is in 1Password under "Prod Postgres (RW)", ask Lena for access to the vault
@@ ordinary ref-chat
token is in the usual place (vault, secret/ci/github), don't paste it here
@@ ordinary mask
your key sk-...x9Qm was revoked, create a new one in the dashboard
@@ ordinary mask
Card ending in ****4821 was charged €49.00
@@ ordinary mask
OPENAI_API_KEY=sk-proj-****************************
@@ ordinary mask
password: [REDACTED]
token: <redacted>
@@ ordinary mask
Authorization: Bearer ***
@@ ordinary mask
aws_access_key_id = AKIA************
@@ ordinary mask
Password: ••••••••••
@@ ordinary mask
ghp_…  (hidden, last used 3 days ago)
@@ ordinary mask
Your recovery codes were regenerated. Previously issued codes no longer work.
@@ ordinary mask
DB_URL=postgres://app:***@db:5432/app
@@ ordinary mask
Token ending in "…f3a9" expires in 7 days.
@@ ordinary placeholder
curl -H "Authorization: Bearer <YOUR_API_TOKEN>" https://api.example.com/v1/items
@@ ordinary placeholder
export ANTHROPIC_API_KEY=your-api-key-here
@@ ordinary placeholder
mysql -u root -p'<password>' mydb
@@ ordinary placeholder
DATABASE_URL=postgres://USER:PASSWORD@HOST:5432/DBNAME
@@ ordinary placeholder
aws configure set aws_secret_access_key YOUR_SECRET_ACCESS_KEY
@@ ordinary placeholder
stripe.api_key = "sk_test_..."
@@ ordinary placeholder
password: "REPLACE_ME"
@@ ordinary placeholder
Replace `xxxxxxxx` with the token from Settings → Developer → Tokens.
@@ ordinary hash
commit ‹sha40›
Author: Priya N <priya@acme.io>
Date:   Tue Mar 5 14:02:11 2024 +0100

    fix: don't log the password field in auth middleware
@@ ordinary hash
fixed in https://github.com/acme/api/commit/‹sha40›
@@ ordinary hash
‹sha64›  node-v20.11.1-linux-x64.tar.xz
@@ ordinary hash
image: ghcr.io/acme/api@sha256:‹sha64›
@@ ordinary hash
"integrity": "sha512-‹b64_88›=="
@@ ordinary hash
requests==2.31.0 --hash=sha256:‹sha64›
@@ ordinary hash
can you cherry-pick ‹sha7› onto release/2.4? the token refresh fix
@@ ordinary hash
ETag: "‹hex32f›"
@@ ordinary hash
Merge pull request #‹num› from acme/fix/password-reset-email ‹sha12›
@@ ordinary hash
git diff ‹sha7›..‹sha7› -- src/auth/
@@ ordinary hash
md5sum backup.tar.gz
‹hex32f›  backup.tar.gz
@@ ordinary uuid
x-amzn-RequestId: ‹uuid›
@@ ordinary uuid
traceparent: 00-‹hex32f›-‹hex16›-01
@@ ordinary uuid
Sentry event ‹hex32f› — TypeError: Cannot read properties of undefined (reading 'token')
@@ ordinary uuid
pod uid ‹uuid› restarted 3 times (OOMKilled)
@@ ordinary uuid
Request ID: ‹reqid› — if you contact support, include this ID.
@@ ordinary uuid
x-ms-correlation-request-id: ‹uuid›
@@ ordinary uuid
cf-ray: ‹hex16›-FRA
@@ ordinary uuid
tenant_id = "‹uuid›"
subscription_id = "‹uuid›"
@@ ordinary pubkey
ssh-ed25519 ‹edpub› priya@laptop
@@ ordinary pubkey
256 ‹fp› deploy@ci (ED25519)
@@ ordinary pubkey
The authenticity of host 'gitlab.acme.io (‹ip›)' can't be established.
ED25519 key fingerprint is ‹fp›.
Are you sure you want to continue connecting (yes/no/[fingerprint])?
@@ ordinary pubkey
pub   ed25519 2023-09-14 [SC]
      ‹sha40_upper›
uid           [ultimate] Tomasz K <tomasz@acme.io>
@@ ordinary pubkey
# public key: ‹age1›
@@ ordinary pubkey
[Peer]
PublicKey = ‹b64_44f›
AllowedIPs = 10.8.0.0/24
Endpoint = vpn.acme.io:51820
@@ ordinary pubkey
-----BEGIN PUBLIC KEY-----
MCowBQYDK2VwAyEA‹b64_43p›
-----END PUBLIC KEY-----
@@ ordinary tls
depth=2 C = US, O = Internet Security Research Group, CN = ISRG Root X1
verify return:1
depth=0 CN = api.acme.io
verify return:1
---
Certificate chain
 0 s:CN = api.acme.io
   i:C = US, O = Let's Encrypt, CN = R11
@@ ordinary tls
        Serial Number:
            04:‹colonhex›
        Signature Algorithm: sha256WithRSAEncryption
        Issuer: C = US, O = Let's Encrypt, CN = R10
@@ ordinary tls
* SSL connection using TLSv1.3 / TLS_AES_256_GCM_SHA384 / X25519 / RSASSA-PSS
* Server certificate:
*  subject: CN=*.acme.io
*  expire date: Aug 14 23:59:59 2025 GMT
@@ ordinary tls
Successfully received certificate.
Certificate is saved at: /etc/letsencrypt/live/acme.io/fullchain.pem
Key is saved at:         /etc/letsencrypt/live/acme.io/privkey.pem
@@ ordinary tls
SHA256 Fingerprint=‹colonhex32›
"""

ORD_BLOCKS2 = r"""
@@ ordinary prose-en
Passwords must be at least 12 characters and can't reuse any of your last 5 passwords.
@@ ordinary prose-en
I forgot my PIN again 🙃 how do I reset it without calling the bank?
@@ ordinary prose-en
should API tokens expire after 90 days or is that overkill for internal services?
@@ ordinary prose-es
¿Alguien sabe cómo cambiar la contraseña del wifi? El router es nuevo y no encuentro la opción.
@@ ordinary prose-pt
esqueci a senha do email de novo kkk, alguém sabe quem é o admin?
@@ ordinary prose-fr
Le mot de passe doit contenir au moins une majuscule, un chiffre et un caractère spécial.
@@ ordinary prose-de
Bitte das Passwort niemals per E-Mail verschicken, sondern über den Passwortmanager teilen.
@@ ordinary prose-it
Ho dimenticato la password del gestionale, come la resetto?
@@ ordinary prose-nl
Weet iemand hoe lang een wachtwoord minimaal moet zijn volgens het nieuwe beleid?
@@ ordinary prose-pl
Zapomniałem hasła do VPN-a, kto może mi je zresetować?
@@ ordinary prose-ru
Пароль должен содержать не менее 12 символов, включая цифры.
@@ ordinary prose-ru
не могу вспомнить пин-код от карты, придётся идти в банк
@@ ordinary prose-uk
Забув пароль від пошти, як його відновити?
@@ ordinary prose-cs
Heslo musí mít alespoň dvanáct znaků.
@@ ordinary prose-hu
Elfelejtettem a jelszavamat, hogyan tudom visszaállítani?
@@ ordinary prose-ro
Am uitat parola de la contul de email, cum o resetez?
@@ ordinary prose-tr
Şifremi unuttum, sıfırlama bağlantısı gelmedi.
@@ ordinary prose-el
Ξέχασα τον κωδικό μου, πώς μπορώ να τον αλλάξω;
@@ ordinary prose-ar
نسيت كلمة المرور، كيف يمكنني إعادة تعيينها؟
@@ ordinary prose-he
שכחתי את הסיסמה, איך מאפסים אותה?
@@ ordinary prose-fa
رمز عبورم را فراموش کردم، چطور بازیابی کنم؟
@@ ordinary prose-hi
मैं अपना पासवर्ड भूल गया, इसे कैसे रीसेट करूँ?
@@ ordinary prose-hi-latn
yaar password bhool gaya, reset link bhi nahi aa raha
@@ ordinary prose-bn
আমি আমার পাসওয়ার্ড ভুলে গেছি, কীভাবে রিসেট করব?
@@ ordinary prose-th
ลืมรหัสผ่านครับ ต้องรีเซ็ตยังไง
@@ ordinary prose-vi
Tôi quên mật khẩu rồi, làm sao để đặt lại?
@@ ordinary prose-id
Lupa kata sandi, gimana cara resetnya?
@@ ordinary prose-zh
我忘记密码了，怎么重置？
@@ ordinary prose-zh-hant
密碼至少要十二個字元，而且要包含數字。
@@ ordinary prose-ja
パスワードを忘れてしまいました。再設定の方法を教えてください。
@@ ordinary prose-ja
暗証番号を3回間違えるとロックされます。
@@ ordinary prose-ko
비밀번호를 잊어버렸어요. 어떻게 재설정하나요?
@@ ordinary prose-sv
Jag har glömt mitt lösenord, hur återställer jag det?
@@ ordinary prose-fi
Unohdin salasanani, miten sen voi vaihtaa?
@@ ordinary prose-da
Jeg har glemt min adgangskode til intranettet.
@@ ordinary prose-no
Passordet må byttes hver 90. dag.
@@ ordinary prose-sw
Nimesahau nenosiri langu, nawezaje kulibadilisha?
@@ ordinary prose-tl
Nakalimutan ko yung password ko, paano i-reset?
@@ ordinary prose-ka
პაროლი დამავიწყდა, როგორ აღვადგინო?
@@ ordinary prose-bg
Забравих си паролата, как да я сменя?
@@ ordinary prose-sr
Заборавио сам лозинку, како да је ресетујем?
@@ ordinary prose-ms
Saya terlupa kata laluan, bagaimana nak set semula?
@@ ordinary prose-lt
Pamiršau slaptažodį, kaip jį atkurti?
@@ ordinary prose-en
the door code changed again?? nobody told me, I was stuck outside for 20 min
@@ ordinary prose-de
Der Tresorcode wird nur mündlich weitergegeben, nicht im Chat.
@@ ordinary code
hashed = bcrypt.hashpw(password.encode("utf-8"), bcrypt.gensalt(rounds=12))
@@ ordinary code
def verify_pin(pin: str, stored_hash: str) -> bool:
    return hmac.compare_digest(hash_pin(pin), stored_hash)
@@ ordinary code
if (password.length < 12) {
  errors.push("Password is too short");
}
@@ ordinary code
const token = req.headers.authorization?.split(" ")[1];
if (!token) return res.status(401).json({ error: "missing token" });
@@ ordinary code
func (c *Config) Redact() { c.Password = "" ; c.APIKey = "" }
@@ ordinary code
password = getpass.getpass("DB password: ")
@@ ordinary code
@Column(name = "password_hash", nullable = false)
private String passwordHash;
@@ ordinary code
ALTER TABLE users ADD COLUMN password_reset_token_expires_at timestamptz;
@@ ordinary code
read -rsp "Vault token: " VAULT_TOKEN && export VAULT_TOKEN
@@ ordinary code
class LoginForm(forms.Form):
    username = forms.CharField()
    password = forms.CharField(widget=forms.PasswordInput)
@@ ordinary code
<input type="password" name="password" autocomplete="current-password" required>
@@ ordinary code
grep -rn "api_key" src/ | grep -v test
@@ ordinary prompt
Password for 'https://priya@github.com':
@@ ordinary prompt
Enter PIN:
@@ ordinary prompt
[sudo] password for dev:
@@ ordinary prompt
Enter passphrase for key '/home/kenji/.ssh/id_ed25519':
@@ ordinary prompt
  -p, --password[=name]
                      Password to use when connecting to server. If password is
                      not given it's asked from the tty.
@@ ordinary prompt
Enter the 6-digit code from your authenticator app
@@ ordinary prompt
New password:
Retype new password:
passwd: password updated successfully
@@ ordinary prompt
Please enter the PIN for token 'YubiKey PIV #‹num›':
@@ ordinary prompt
error: password authentication failed for user "postgres"
@@ ordinary prompt
Error: Invalid API key provided. Check your key and try again.
@@ ordinary secret-name
kubectl get secret db-password -n prod -o jsonpath='{.metadata.creationTimestamp}'
@@ ordinary secret-name
$ gh secret list
NAME              UPDATED
AWS_ROLE_ARN      about 2 months ago
NPM_TOKEN         about 5 days ago
SLACK_WEBHOOK     about 1 year ago
@@ ordinary secret-name
$ vault kv list secret/payments
Keys
----
db
stripe
webhook-signing
@@ ordinary secret-name
aws secretsmanager describe-secret --secret-id prod/api/stripe-key --query LastRotatedDate
@@ ordinary secret-name
gcloud run deploy api --set-secrets=DB_PASS=db-password:latest
@@ ordinary secret-name
az keyvault secret show --vault-name kv-acme-prod --name sql-admin-password --query attributes
@@ ordinary secret-name
--secret=db-password --secret=api-token
@@ ordinary secret-name
Secret "github-app-private-key" was rotated successfully.
@@ ordinary product
we're moving from LastPass to 1Password 8 next quarter, KeePassXC 2.7.9 is fine for personal use
@@ ordinary product
Wi-Fi 6E AP (U6-Enterprise) arrived, also the Galaxy S24+ test device
@@ ordinary product
C++20 coroutines vs. C# 12 async — anyone have benchmarks?
@@ ordinary product
ordered a PIN-Pad P400 and a YubiKey 5C NFC for the front desk
@@ ordinary product
Office 365 E3 licences renew on the 1st, B2B guest access stays on
@@ ordinary version
node v20.11.1, npm 10.2.4, pnpm 8.15.4
@@ ordinary version
Successfully installed cryptography-42.0.5 bcrypt-4.1.2 passlib-1.7.4
@@ ordinary version
kernel 6.5.0-1018-azure, openssl 3.0.2 15 Mar 2022
@@ ordinary version
"dependencies": { "jsonwebtoken": "^9.0.2", "argon2": "0.40.1" }
@@ ordinary version
Release v‹ver› — fixes token refresh race (‹ticket›)
@@ ordinary css
.btn-primary { background: ‹color›; border-color: ‹color›; }
@@ ordinary css
--password-strength-weak: ‹color›; --password-strength-strong: ‹color›;
@@ ordinary css
<div class="flex items-center gap-2 text-slate-500 md:w-1/3">
@@ ordinary math
printf("%08x\n", crc32(buf, len));
@@ ordinary math
^(?=.*[A-Z])(?=.*\d)(?=.*[^\w\s]).{12,}$
@@ ordinary math
date -u +"%Y-%m-%dT%H:%M:%SZ"
@@ ordinary math
entropy ≈ L × log2(N) = 12 × log2(94) ≈ 78.7 bits
@@ ordinary math
x = (-b ± √(b² - 4ac)) / 2a
@@ ordinary email
ping @lena.k or email security@acme.io if the password reset mail doesn't arrive
@@ ordinary email
From: "IT Helpdesk" <helpdesk@acme.io>
Subject: Your password expires in 5 days
@@ ordinary email
cc @kenji_dev @priya-n — token rotation runbook is up
@@ ordinary ticket
‹ticket›: rotate SMTP password after vendor breach notification
@@ ordinary ticket
Order #‹order› shipped, tracking 1Z999AA10123456784
@@ ordinary ticket
INC‹num› — users unable to reset PIN on kiosk
@@ ordinary ticket
Invoice INV-2024-‹num› due 30 days net
@@ ordinary chat-mixed
hey, the login page returns 500 when the password contains an emoji 🔑 — repro: any account, paste "pässwörd🙂" style text, submit. stack trace says UnicodeEncodeError in legacy_hash(). can we normalize to NFC before hashing?
@@ ordinary chat-mixed
reminder: never commit .env files, the pre-commit hook (gitleaks) will block it anyway
@@ ordinary chat-mixed
I rotated the Stripe key, updated it in Vault and restarted the workers. old one is revoked.
@@ ordinary chat-mixed
Is a 6-digit PIN secure enough for the kiosk, or should we require 8?
@@ ordinary chat-mixed
the token expired at 14:03 UTC, refresh happened at 14:05, hence the 2 min of 401s
@@ ordinary chat-mixed
password reset emails go through SES in eu-west-1; bounce rate is 0.4%
@@ ordinary config-nosecret
[database]
host = "db.internal"
port = 5432
pool_size = 20
sslmode = "verify-full"
@@ ordinary config-nosecret
auth:
  password_min_length: 12
  pin_length: 6
  token_ttl: 3600
  lockout_after_attempts: 5
@@ ordinary config-nosecret
PasswordAuthentication no
PubkeyAuthentication yes
PermitRootLogin prohibit-password
@@ ordinary config-nosecret
--password-file=/run/secrets/db_password --token-ttl=24h
@@ ordinary output-nosecret
$ kubectl get secrets -n prod
NAME            TYPE                DATA   AGE
app-db          Opaque              2      41d
tls-api         kubernetes.io/tls   2      12d
@@ ordinary output-nosecret
Generating public/private ed25519 key pair.
Your identification has been saved in /home/dev/.ssh/id_ed25519
Your public key has been saved in /home/dev/.ssh/id_ed25519.pub
The key fingerprint is:
‹fp› dev@build
@@ ordinary output-nosecret
$ aws sts get-caller-identity
{
    "UserId": "AIDA‹b32_17›",
    "Account": "‹acct›",
    "Arn": "arn:aws:iam::‹acct›:user/ci-deployer"
}
@@ ordinary output-nosecret
Login Succeeded
@@ ordinary output-nosecret
✔ Logged in to github.com account priya-n (keyring)
✓ Token scopes: 'gist', 'read:org', 'repo', 'workflow'
@@ ordinary output-nosecret
2024-06-11 03:12:55 WARN auth: 3 failed login attempts for user=jdoe from 203.0.113.9, account locked for 15m
@@ ordinary output-nosecret
npm notice Publishing to https://registry.npmjs.org/ with tag latest and default access
+ @acme/ui@‹ver›
@@ ordinary output-nosecret
Vault unsealed: true
Sealed          false
Total Shares    5
Threshold       3
Version         1.15.6
@@ ordinary url
https://github.com/acme/api/pull/‹num›/files#diff-‹sha64›
@@ ordinary url
https://docs.acme.io/reset-password?lang=de&ref=email_‹num›
@@ ordinary url
https://console.aws.amazon.com/secretsmanager/secret?name=prod%2Fdb%2Fpassword&region=eu-west-1
@@ ordinary misc
Wi-Fi SSID: Acme-Guest (password printed on the badge at reception)
@@ ordinary misc
The PIN is 4 to 8 digits; the PUK unlocks the card after 3 wrong tries.
@@ ordinary misc
room 4.12, floor 4, building C — ring the bell, someone will let you in
@@ ordinary misc
flight LH2471 at 07:35, booking ref on the shared calendar
@@ ordinary misc
Version 2.4.1 (build ‹num›), API level 34, minSdk 26
@@ ordinary misc
tel +49 30 901820, fax +49 30 901829
@@ ordinary misc
IBAN DE89 3704 0044 0532 0130 00 is on the invoice template, that's fine to share
"""

FILLERS.update({
    "b64_88": lambda: rs(86, AL + "+/"),
    "sha40_upper": lambda: rs(40, "0123456789ABCDEF"),
    "b64_44f": lambda: rs(43, AL + "+/") + "=",
    "b64_43p": lambda: rs(43, AL + "+/") + "=",
    "colonhex": lambda: ":".join(rs(2, "0123456789abcdef") for _ in range(17)),
    "colonhex32": lambda: ":".join(rs(2, "0123456789ABCDEF") for _ in range(32)),
    "b32_17": lambda: rs(17, UP + "234567"),
    "b64u22x": lambda: rs(24, URLS),
})

PH = re.compile(r"«([a-z0-9_]+)(#[a-z0-9]+)?[»}]|‹([A-Za-z0-9_]+)›")
HEAD = re.compile(r"^@@ (secret|ordinary) (\S+)(?: (x2))?$")


def parse(blocks):
    out = []
    cur = None
    for line in blocks.split("\n"):
        m = HEAD.match(line)
        if m:
            if cur:
                out.append(cur)
            cur = {"kind": m.group(1), "family": m.group(2), "times": 2 if m.group(3) else 1, "lines": []}
        elif cur is not None:
            cur["lines"].append(line)
    if cur:
        out.append(cur)
    for t in out:
        t["tpl"] = "\n".join(t["lines"]).strip("\n").replace("⇥", "\t")
        del t["lines"]
    return out


used_secret = set()
used_filler = set()


def new_value(fn, pool):
    while True:
        v = fn()
        if v not in pool and v not in used_secret and v not in used_filler:
            pool.add(v)
            return v


def fill(tpl, kind):
    secrets = []
    labels = {}

    def sub(m):
        sk, lab, fk = m.group(1), m.group(2), m.group(3)
        if fk:
            return new_value(FILLERS[fk], used_filler)
        if kind != "secret":
            raise ValueError("secret placeholder in ordinary template: " + tpl[:60])
        if lab and (sk, lab) in labels:
            return labels[(sk, lab)]
        if sk in MULTI_KINDS:
            while True:
                lines = MULTI_KINDS[sk]()
                if not any(x in used_secret for x in lines):
                    break
            used_secret.update(lines)
            secrets.extend(lines)
            val = "\n".join(lines)
        else:
            val = new_value(SECRET_KINDS[sk], used_secret)
            secrets.append(val)
        if lab:
            labels[(sk, lab)] = val
        return val

    text = PH.sub(sub, tpl)
    return text, secrets


def build():
    tpls = parse(SECRET_BLOCKS + SECRET_BLOCKS2 + SECRET_BLOCKS3 + SECRET_BLOCKS4 + SECRET_BLOCKS5) + \
        parse(ORD_BLOCKS + ORD_BLOCKS2)
    cases = []
    for ti, t in enumerate(tpls):
        for _ in range(t["times"]):
            text, secrets = fill(t["tpl"], t["kind"])
            c = {"kind": t["kind"], "family": t["family"], "text": text}
            if t["kind"] == "secret":
                c["secrets"] = secrets
            c["_tpl"] = ti
            cases.append(c)
    R.shuffle(cases)
    return cases


def validate(cases):
    errs = []
    texts = set()
    tpl_use = {}
    all_secrets = []
    for c in cases:
        t = c["text"]
        if len(t) > 700:
            errs.append("too long (%d): %s" % (len(t), t[:60]))
        if t in texts:
            errs.append("duplicate: " + t[:60])
        texts.add(t)
        tpl_use[c["_tpl"]] = tpl_use.get(c["_tpl"], 0) + 1
        if "«" in t or "‹" in t or "›" in t or "»" in t:
            errs.append("unfilled placeholder: " + t[:60])
        if c["kind"] == "secret":
            if not c["secrets"]:
                errs.append("no secrets: " + t[:60])
            stripped = t
            for s in sorted(c["secrets"], key=len, reverse=True):
                if s not in t:
                    errs.append("secret missing: " + s)
                if t.count(s) != c["secrets"].count(s):
                    errs.append("secret occurs elsewhere in text: %r in %s" % (s, t[:60]))
                stripped = stripped.replace(s, "\x00")
            all_secrets.extend(c["secrets"])
    if len(all_secrets) != len(set(all_secrets)):
        errs.append("secret values not distinct")
    if max(tpl_use.values()) > 2:
        errs.append("template used more than twice")
    return errs


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    cases = build()
    errs = validate(cases)
    if errs:
        for e in errs:
            print("ERROR", e, file=sys.stderr)
        sys.exit(1)
    out = os.path.join(here, "redaction_heldback5.jsonl")
    with open(out, "w", encoding="utf-8", newline="\n") as f:
        for c in cases:
            d = {"kind": c["kind"], "family": c["family"], "text": c["text"]}
            if c["kind"] == "secret":
                d["secrets"] = c["secrets"]
            f.write(json.dumps(d, ensure_ascii=False) + "\n")
    ns = sum(1 for c in cases if c["kind"] == "secret")
    print("wrote %s: %d secret, %d ordinary, %d secret values" % (
        out, ns, len(cases) - ns, sum(len(c.get("secrets", [])) for c in cases)))


if __name__ == "__main__":
    main()
