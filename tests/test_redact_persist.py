"""Secrets never persist: `extract`, `handoff` and the capture hook on a transcript full of
secrets, then every file under the vault (notes, the cache: manifest, keyword index,
vectors, transcript state, logs; binary files too) and every file name is searched for
them (issue 28's acceptance test)."""

from __future__ import annotations

import json
import re
import shutil
import time
from pathlib import Path

import pytest
from conftest import Cli
from test_hooks import SESSION, log_lines, payload, run_hook
from test_redact import tool_uses

from vaultmem.agent.redact import REDACTED

# Each secret ends in a digit (no stemmer trims it) and its pieces are found nowhere in
# example-vault. Written out, not generated, so a failure names what leaked.
SECRETS = {
    "de": "Kx7mQw2Rz9",
    "fr": "Vb4nHt8Lp3",
    "es": "Jd6sWq1Fy5",
    "ja": "Pg3kTz7Mx2",
    "ru": "Hn5cRv9Bq4",
    "zh": "Wt2yLs6Dk8",
    "docker": "dckr_pat_Rq8WnZ2kLm5VxT9bYc3HdJ6pFs1",
    "sentry": "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",
    "newrelic": "NRAK-X7K2M9Q4W8R3T6Y1Z5B0N4C8V2",
    "vault": "s.Gh7Kp2Wq9Lx4Zr8Mv3Nc6Bt1",
    "cloudflare": "Yd8Fq2Lw7Kz4Xm9Vb3Nh6Tp1Rc5Sg0Jw2Pe7Uk4",
    "sshpass": "Qm8xYz&zR4tL1w7",
    "url": "Uy7pEe3Ww5",
    "grep": "Ak3LmN9pQr2sTv6wXy8zBc4dEf7gHj1",
    "aws": "Zt4Kx9Lm2Qw7Rv5Bn8Yc3Hd6Jf1Gs0Pa9Wu4Ek7M",
    "pgpass": "Fb6Tn2Kq8Xw4",
    "folder": "glpat-Hq4Kz8Wm2Xt6Vb9Nc3Lp7",
    "session": "npm_Tg5Wk2Qz8Lx4Mr7Bv1Nc9Hd3Jp6Fs0Ya2Ue",
}
# Said next to the secrets: found in the cache afterwards, so the search can see text there.
CANARY = "kumquatorchard77"


def _transcript(path: Path) -> Path:
    """A Claude Code transcript with a secret on every surface a transcript has."""
    s = SECRETS
    base = {"isSidechain": False, "cwd": f"/home/dev/{s['folder']}", "sessionId": s["session"]}
    said = [
        f"We decided to keep the {CANARY} cache. Das Passwort für den Server ist {s['de']}.",
        f"We decided the staging DB is postgres://app:{s['url']}@db.internal:5432/harbor "
        f"and le mot de passe est {s['fr']}.",
        f"We decided: la contraseña es {s['es']}, パスワードは{s['ja']}です, "
        f"Пароль: {s['ru']}, 数据库密码是{s['zh']}.",
        f"We decided to use {s['docker']} and {s['sentry']} for CI; the New Relic key is "
        f"{s['newrelic']} and vault login {s['vault']} works.",
        f"We decided the Cloudflare API token: {s['cloudflare']} stays in CI.",
        f"Don't run sshpass -p '{s['sshpass']}' ssh deploy@web1 again.",
        f"It turns out the AWS secret {s['aws']} was live; db.internal:5432:harbor:app:"
        f"{s['pgpass']} is the pgpass line.",
    ]
    tools = tool_uses(
        read=f"/tmp/{s['docker']}",
        grep=s["grep"],
        url=f"https://api.example.com/?token={s['cloudflare']}",
        edit=f"app/{s['grep']}.py",
    )
    output = {
        "type": "tool_result",
        "tool_use_id": "t1",
        "content": f"HARBOR_DB_PASS={s['pgpass']}\nCF_API_TOKEN={s['cloudflare']}",
    }
    lines: list[dict] = [{"type": "summary", "summary": said[3], "leafUuid": "u0"}]
    for n, text in enumerate(said):
        lines.append({**base, "type": "user", "message": {"role": "user", "content": text}})
        content = [{"type": "text", "text": f"Noted. {text}"}, *(tools if n == 2 else [])]
        lines.append(
            {**base, "type": "assistant", "message": {"role": "assistant", "content": content}}
        )
    lines.append({**base, "type": "user", "message": {"role": "user", "content": [output]}})
    lines.append(
        {
            **base,
            "type": "assistant",
            "message": {
                "role": "assistant",
                "content": [{"type": "text", "text": f"Done.\nNext: {said[4]}"}],
            },
        }
    )
    path.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines), "utf-8")
    return path


def _pieces(secret: str) -> list[str]:
    """What of a secret an index could keep: its runs of letters and digits (a keyword
    index splits ``Qm8xYz&zR4tL1w7`` into two terms), in lower case."""
    return [p.lower() for p in re.findall(r"[A-Za-z0-9]{6,}", secret)]


def _leaks(vault: Path) -> list[str]:
    """``name: file`` for every secret found in a file under the vault or in its name."""
    found = []
    for path in sorted(vault.rglob("*")):
        name = path.relative_to(vault).as_posix()
        data = path.read_bytes().lower() if path.is_file() else b""
        folded = re.sub(r"[^a-z0-9]", "", name.lower())
        for key, secret in SECRETS.items():
            for piece in _pieces(secret):
                if piece in folded or piece.encode() in data:
                    found.append(f"{key}: {name}")
    return found


def _echo(body: dict) -> str:
    """A model that copies its prompt's transcript back: as memories and titles (file
    names), and as every handoff section."""
    prompt = body["messages"][0]["content"]
    lines = [x for x in prompt.split("<transcript>")[-1].splitlines() if x.strip()][:8]
    if "memories" in json.dumps(body.get("response_format")):
        return json.dumps(
            {"memories": [{"type": "decision", "title": x[:80], "text": x} for x in lines]}
        )
    keys = ("investigated", "learned", "done", "next_steps")
    return json.dumps({"request": lines[0], **{k: lines for k in keys}})


@pytest.fixture
def endpoints(fake_openai, monkeypatch: pytest.MonkeyPatch):  # noqa: ANN001, ANN201
    """The in-test OpenAI server as the embedder (vectors land in Chroma)."""
    monkeypatch.setenv("VAULTMEM_EMBEDDER", "endpoint")
    monkeypatch.setenv("VAULTMEM_EMBED_URL", fake_openai.base_url)
    monkeypatch.setenv("VAULTMEM_EMBED_MODEL", "fake-embed")
    return fake_openai


def test_no_secret_reaches_any_file_of_the_vault_or_its_cache(
    vault: Path,
    cli: Cli,
    endpoints,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,  # noqa: ANN001
) -> None:
    transcript = _transcript(tmp_path / "s.jsonl")
    cli("index")
    # Rules mode: no model.
    printed = cli("extract", str(transcript), "--json").stdout
    assert json.loads(printed)["created"] >= 4
    printed += cli("handoff", str(transcript)).stdout
    # A model that echoes what it was sent, so a secret in a prompt comes back in a note.
    monkeypatch.setenv("VAULTMEM_LLM_URL", endpoints.base_url)
    monkeypatch.setenv("VAULTMEM_LLM_MODEL", "fake-chat")
    monkeypatch.setenv("VAULTMEM_LLM_MAX_RETRIES", "0")
    endpoints.chat_replies.extend([_echo] * 4)
    again = shutil.copy(transcript, tmp_path / "llm.jsonl")
    printed += cli("extract", str(again), "--json").stdout
    project = f"harbor {SECRETS['docker']}"
    printed += cli(
        "handoff", str(again), "--project", project, "--folder", "handoffs/llm", "--json"
    ).stdout
    printed += cli("embed").stdout
    prompts = [
        json.dumps(r.body) for r in endpoints.requests if r.path.endswith("/chat/completions")
    ]
    assert len(prompts) == 2 and all(REDACTED in p for p in prompts)
    assert not [
        k for k, s in SECRETS.items() if any(p in "\n".join(prompts).lower() for p in _pieces(s))
    ]
    assert not [k for k, s in SECRETS.items() if any(p in printed.lower() for p in _pieces(s))]
    assert _leaks(vault) == []
    # The search sees what the cache holds: the words said beside the secrets are in the
    # keyword index. The vector store keeps fragment hashes and vectors, no text.
    cache = vault / ".vaultmem"
    files = [p for p in cache.rglob("*") if p.is_file()]
    assert any(CANARY.encode() in p.read_bytes() for p in files if "whoosh" in str(p))
    assert endpoints.embedding_requests() and any("chroma" in str(p) for p in files)
    assert list((cache / "transcripts").glob("*.json"))


def test_the_capture_hook_and_its_logs_keep_no_secret(
    vault: Path, cli: Cli, tmp_path: Path
) -> None:
    cli("index")
    transcript = _transcript(tmp_path / f"{SESSION}.jsonl")
    stdin = payload("session_end", cwd=vault, transcript_path=transcript)
    assert run_hook("session-end", stdin, "--vault", str(vault)).returncode == 0
    (line,) = log_lines(vault / ".vaultmem" / "hooks.log")
    pid = int(line.rsplit("(pid ", 1)[1].rstrip(")"))
    deadline = time.monotonic() + 120
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        if state == "Z":
            break
        time.sleep(0.1)
    jobs = (vault / ".vaultmem" / "hooks-jobs.log").read_text("utf-8")
    assert "handoffs/" in jobs, jobs  # the job ran and wrote its handoff
    assert _leaks(vault) == []


def test_the_job_log_is_written_through_redaction(tmp_path: Path) -> None:
    """Whatever a capture job prints (an error quoting its input, a traceback) reaches
    hooks-jobs.log redacted, and so does a hooks.log line."""
    import sys
    from datetime import UTC, datetime

    from vaultmem.agent import hooks

    secret = SECRETS["docker"]
    log = tmp_path / "cache" / hooks.JOB_LOG_NAME
    loud = [
        sys.executable,
        "-c",
        f"import sys; print('token {secret}'); sys.exit('failed: {secret}')",
    ]
    pid = hooks.start_job([loud, [sys.executable, "-c", "print('after')"]], log, sys.executable)
    deadline = time.monotonic() + 60
    while "after" not in (log.read_text() if log.exists() else "") and time.monotonic() < deadline:
        time.sleep(0.1)
    text = log.read_text("utf-8")
    assert "after" in text and text.count(REDACTED) == 2 and secret not in text, (pid, text)
    hook_log = tmp_path / "cache" / hooks.LOG_NAME
    hooks.log_line(hook_log, datetime.now(UTC), "prompt", f"failed: ValueError: bad {secret}")
    assert secret not in hook_log.read_text() and REDACTED in hook_log.read_text()
