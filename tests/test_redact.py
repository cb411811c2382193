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


def _session(path: Path) -> Path:
    """A Claude Code transcript with a secret on every surface that is read."""
    s = SECRETS
    base = {"isSidechain": False, "cwd": f"/home/dev/{s['folder']}", "sessionId": s["session"]}
    user1 = (
        f"We decided to move the staging DB to postgres://harbor:{s['url']}@db.internal:5432/x "
        f"and the cache to redis://:{s['redis']}@cache:6379/0 because the old hosts go away."
    )
    user2 = f"{s['hf']} is the token we decided to rotate; the password is {s['phrase']}."
    tools = [
        {
            "type": "tool_use",
            "id": "1",
            "name": "Read",
            "input": {"file_path": f"/tmp/{s['whsec']}"},
        },
        {"type": "tool_use", "id": "2", "name": "Grep", "input": {"pattern": f"key {s['aws']} ok"}},
        {
            "type": "tool_use",
            "id": "3",
            "name": "WebFetch",
            "input": {"url": f"https://x.dev/?q=mysql -u root -p{s['mysql']} -h db"},
        },
        {
            "type": "tool_use",
            "id": "4",
            "name": "Edit",
            "input": {"file_path": f"app/{s['hf']}.py"},
        },
    ]
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
