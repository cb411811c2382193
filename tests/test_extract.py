"""`extract`: memories from Claude Code JSONL and text transcripts, with and without an LLM."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import Cli
from vaultmem.agent.redact import redact
from vaultmem.agent.transcript import MAX_ENTRY_BYTES, MAX_TRANSCRIPT_BYTES
from vaultmem.memory.remember import derive_title
from vaultmem.note import parse_note
from vaultmem.vocabulary import NOTE_TYPES

DATA = Path(__file__).parent / "data" / "transcripts"
SESSION = DATA / "session.jsonl"
MARKDOWN = DATA / "session.md"

# Planted in session.jsonl: in prompts (sent to a model) and in tool output (never read).
SECRETS = [
    "S3cretPass99",
    "sk-proj-AbCdEfGhIjKlMnOpQrStUvWx1234",
    "sk_live_51HxYzAbCdEfGhIjKlMnOp",
    "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
    "xoxb-123456789012-abcdefghijklmnop",
    "eyJhbGciOiJIUzI1NiJ9",
    "AKIAQ3EGRZ5VKTN7WJPD",
    "Tr0ub4dor3xyz",
    "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ",
    "hunter2hunter2",
]

RULE_MEMORIES = [
    (
        "observation",
        "It turns out the sessions live in the in-process cache, so every deploy drops them.",
    ),
    (
        "decision",
        "Let's go with Redis for sessions instead of Memcached because we already run Redis "
        "for the job queue.",
    ),
    ("antipattern", "Don't put session data in the in-process cache again."),
    ("preference", "I prefer small commits over one big squash."),
    ("decision", "We decided to rotate the Stripe key [REDACTED] every month."),
]


def _copy(src: Path, tmp_path: Path) -> Path:
    dest = tmp_path / "t" / src.name
    dest.parent.mkdir(exist_ok=True)
    shutil.copyfile(src, dest)
    return dest


def _snapshot(vault: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(vault)): p.read_bytes()
        for p in vault.rglob("*.md")
        if ".vaultmem" not in p.parts
    }


def _note(vault: Path, path: str) -> tuple[dict, str]:
    note = parse_note(path, (vault / path).read_bytes())
    return note.meta, note.body


def _everything_written(vault: Path) -> str:
    return "\n".join(
        p.read_text("utf-8", errors="replace")
        for p in vault.rglob("*")
        if p.is_file()
        if p.suffix in (".md", ".json")
    )


# --------------------------------------------------------------------------- offline rules


def test_rules_extract_exact_memories_from_claude_jsonl(vault: Path, cli: Cli) -> None:
    # The phrase rules alone (the learned layer, on by default, is tested in
    # test_capture_learned.py).
    (vault / ".vaultmem.toml").write_text("[capture]\nsemantic = false\n", encoding="utf-8")
    report = json.loads(cli("extract", str(SESSION), "--json").stdout)
    assert report["mode"] == "rules"
    assert [(m["type"], m["text"]) for m in report["memories"]] == RULE_MEMORIES
    assert report["created"] == 5
    for memory in report["memories"]:
        meta, body = _note(vault, memory["path"])
        assert memory["path"].startswith("inbox/")
        assert meta["type"] == memory["type"]
        assert meta["tags"] == ["extracted"]
        assert meta["status"] == "active"
        # Under a heading derived from the text (`remember` without a title).
        assert body.strip() == f"# {derive_title(memory['text'])}\n\n{memory['text']}"
    written = _everything_written(vault)
    # Thinking, tool output and subagent (sidechain) chatter are not memories.
    assert "Kafka" not in written and "never look at the cache config" not in written
    assert "never touch this again" not in written


def test_markdown_transcript(vault: Path, cli: Cli) -> None:
    report = json.loads(cli("extract", str(MARKDOWN), "--json").stdout)
    assert [(m["type"], m["text"]) for m in report["memories"]] == [
        (
            "observation",
            "It turns out PgBouncer runs in session mode, so idle batch workers hold server "
            "connections.",
        ),
        ("decision", "We decided to switch PgBouncer to transaction mode for the API pool."),
        ("antipattern", "Never run the batch against the primary without the pooler again."),
    ]


def test_rerun_writes_nothing_and_appended_entries_are_read(
    vault: Path, cli: Cli, tmp_path: Path
) -> None:
    transcript = _copy(SESSION, tmp_path)
    cli("extract", str(transcript))
    before = _snapshot(vault)
    again = json.loads(cli("extract", str(transcript), "--json").stdout)
    assert again["entries"] == 0 and again["memories"] == []
    assert _snapshot(vault) == before  # not even a reinforcement
    line = {
        "type": "user",
        "isSidechain": False,
        "message": {"role": "user", "content": "We decided to pin Redis to 7.2 on staging."},
        "uuid": "00000000-0000-4000-8000-000000000500",
        "timestamp": "2026-11-30T15:00:00Z",
    }
    with transcript.open("a") as fh:
        fh.write(json.dumps(line) + "\n")
        fh.write('{"type": "user", "message": {"role": "user", "content": "We decided')  # half
    more = json.loads(cli("extract", str(transcript), "--json").stdout)
    assert more["entries"] == 1
    assert [m["text"] for m in more["memories"]] == ["We decided to pin Redis to 7.2 on staging."]


def test_rewritten_transcript_is_read_again_without_new_notes(
    vault: Path, cli: Cli, tmp_path: Path
) -> None:
    transcript = _copy(SESSION, tmp_path)
    cli("extract", str(transcript))
    transcript.write_bytes(b"\n" + transcript.read_bytes())  # the processed prefix changed
    again = json.loads(cli("extract", str(transcript), "--json").stdout)
    assert again["start"] == 0 and again["created"] == 0
    assert all(m["duplicate_of"] for m in again["memories"])


def test_dry_run_writes_nothing(vault: Path, cli: Cli) -> None:
    before = _snapshot(vault)
    out = cli("extract", str(SESSION), "--dry-run").stdout
    assert "decision: We decided to rotate the Stripe key [REDACTED] every month." in out
    assert _snapshot(vault) == before
    assert not (vault / ".vaultmem" / "transcripts").exists()


# --------------------------------------------------------------------------- redaction


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("export OPENAI_API_KEY=sk-abcdefghijklmnopqrstuvwx", "export OPENAI_API_KEY=[REDACTED]"),
        ("key sk-ant-api03-AbCdEfGhIjKlMnOpQrSt done", "key [REDACTED] done"),
        ("push with ghp_abcdefghijklmnopqrstuvwxyz0123456789", "push with [REDACTED]"),
        ("id AKIAQ3EGRZ5VKTN7WJPD", "id [REDACTED]"),
        ("slack xoxp-1234-5678-abcdefghij", "slack [REDACTED]"),
        ("Authorization: Bearer abcdef1234567890xyz", "Authorization: Bearer [REDACTED]"),
        ('password="correct horse battery"', 'password="[REDACTED]"'),
        ("db_token: abcd1234", "db_token: [REDACTED]"),
        ("redis://:s3cr3tpass@cache:6379/0", "redis://:[REDACTED]@cache:6379/0"),
        ("postgres://app:hunter2secret@db:5432/x", "postgres://app:[REDACTED]@db:5432/x"),
        (
            "-----BEGIN PRIVATE KEY-----\nMIIEv\n-----END PRIVATE KEY-----\nafter",
            "[REDACTED]\nafter",
        ),
        ("-----BEGIN RSA PRIVATE KEY-----\nMIIEv cut short", "[REDACTED]"),
        ("We decided to use token-based auth because it is simpler.", None),
        ("The password is in 1Password.", None),
    ],
)
def test_redact_shapes(text: str, expected: str | None) -> None:
    assert redact(text) == (text if expected is None else expected)


def test_no_planted_secret_reaches_the_vault_offline(vault: Path, cli: Cli) -> None:
    cli("extract", str(SESSION))
    cli("handoff", str(SESSION))
    written = _everything_written(vault)
    assert [s for s in SECRETS if s in written] == []


# --------------------------------------------------------------------------- with an LLM


LLM_REPLY = {
    "memories": [
        {
            "type": "decision",
            "title": "Sessions in Redis db 2",
            "text": "Sessions are stored in Redis db 2 with a 14-day TTL, because deploys "
            "dropped every login from the in-process cache.",
            "supersedes": "[[Redis for caching]]",
        },
        {
            "type": "preference",
            "title": "Small commits",
            "text": "The user prefers small commits over one big squash.",
        },
        {"type": "opinion", "title": "x", "text": "Not a kind vaultmem keeps."},
        {
            "type": "antipattern",
            "title": "No sessions in process memory",
            "text": "Never keep session data in the in-process cache: every deploy drops it.",
            "supersedes": "A note that does not exist",
        },
    ]
}


def test_llm_extraction_writes_exactly_what_the_model_said(vault: Path, cli: Cli, llm_env) -> None:  # noqa: ANN001
    cli("index")
    llm_env.chat_replies.append(json.dumps(LLM_REPLY))
    report = json.loads(cli("extract", str(SESSION), "--json").stdout)
    assert report["mode"] == "llm" and report["chunks"] == 1
    got = [(m["type"], m["title"], m["text"], m["supersedes"]) for m in report["memories"]]
    want = LLM_REPLY["memories"]
    assert got == [
        ("decision", want[0]["title"], want[0]["text"], None),
        ("preference", want[1]["title"], want[1]["text"], None),
        ("antipattern", want[3]["title"], want[3]["text"], None),
    ]
    meta, body = _note(vault, report["memories"][0]["path"])
    assert meta["title"] == "Sessions in Redis db 2" and meta["type"] == "decision"
    assert "# Sessions in Redis db 2" in body and want[0]["text"] in body
    # The model's claim alone supersedes nothing, and never a note a person wrote: the
    # two are linked related, and the claim waits for a person in review.
    assert "supersedes" not in meta
    assert meta["related"] == ["[[Redis for caching]]"]
    assert meta["needs_review"] == [
        "the model says this replaces [[Redis for caching]]; not applied (a person's note)"
    ]
    assert report["memories"][0]["review"] == [
        {
            "path": "decisions/Redis for caching.md",
            "relation": "related",
            "reason": "the model's claim alone (a person's note)",
        }
    ]
    old, _ = _note(vault, "decisions/Redis for caching.md")
    assert old.get("status", "active") == "active"
    assert "superseded_by" not in old and old["confidence"] == 0.85
    (chat,) = [r for r in llm_env.requests if r.path.endswith("/chat/completions")]
    fmt = chat.body["response_format"]
    assert fmt["type"] == "json_object"
    assert fmt["schema"]["properties"]["memories"]["items"]["required"] == ["type", "title", "text"]
    prompt = chat.body["messages"][0]["content"]
    assert "User: The session cache keeps dropping logins" in prompt
    assert "Kafka" not in prompt and "hunter2" not in prompt  # sidechain, tool output


def test_no_planted_secret_reaches_the_llm_or_the_vault(vault: Path, cli: Cli, llm_env) -> None:  # noqa: ANN001
    # A model that copies its whole input back as memories: secrets could only come back
    # if they had been sent.
    def echo(body: dict) -> str:
        prompt = body["messages"][0]["content"]
        lines = [x for x in prompt.splitlines() if x.startswith(("User:", "Assistant:"))]
        return json.dumps(
            {"memories": [{"type": "observation", "title": "echo", "text": x} for x in lines]}
        )

    llm_env.chat_replies.extend([echo, echo])
    cli("extract", str(SESSION))
    cli("handoff", str(SESSION))
    sent = json.dumps([r.body for r in llm_env.requests])
    assert [s for s in SECRETS if s in sent] == []
    assert "[REDACTED]" in sent
    written = _everything_written(vault)
    assert [s for s in SECRETS if s in written] == []


def test_a_dead_endpoint_falls_back_to_the_rules(vault: Path, cli: Cli, llm_env) -> None:  # noqa: ANN001
    llm_env.fail_next(1, status=500)
    result = cli("extract", str(SESSION), "--json")
    report = json.loads(result.stdout)
    assert report["mode"] == "rules"
    assert [(m["type"], m["text"]) for m in report["memories"]] == RULE_MEMORIES
    assert "phrase rules used instead" in report["warnings"][0]


def test_a_reply_without_json_falls_back_for_that_chunk(vault: Path, cli: Cli, llm_env) -> None:  # noqa: ANN001
    llm_env.chat_replies.append("I found nothing worth keeping.")
    report = json.loads(cli("extract", str(MARKDOWN), "--json").stdout)
    assert report["mode"] == "rules" and len(report["memories"]) == 3


@pytest.mark.slow  # a real llama.cpp chat endpoint
def test_smollm2_extract_writes_only_valid_notes(
    vault: Path, smollm2_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.llama_server import MODEL

    monkeypatch.setenv("VAULTMEM_LLM_URL", smollm2_url)
    monkeypatch.setenv("VAULTMEM_LLM_MODEL", MODEL)
    monkeypatch.setenv("VAULTMEM_LLM_TIMEOUT", "120")
    report = json.loads(Cli(vault)("extract", str(MARKDOWN), "--json").stdout)
    assert report["entries"] == 5 and report["chunks"] == 1
    paths = [memory["path"] for memory in report["memories"]]
    written = {Path(p).stem for p in paths} | {p.removesuffix(".md") for p in paths}
    for memory in report["memories"]:
        meta, body = _note(vault, memory["path"])
        assert meta["type"] in NOTE_TYPES and meta["status"] in ("active", "superseded")
        if meta["status"] == "superseded":  # only by a memory of this run, on its evidence
            assert {link.strip("[]") for link in meta["superseded_by"]} <= written, meta
        assert body.strip()


# --------------------------------------------------------------------------- endless or huge input


# Old code filled memory reading /dev/zero: cap the child so it fails, not the machine. A
# fresh interpreter sets the cap and becomes vaultmem (exec keeps the pid): no preexec_fn in
# a test runner that may hold onnxruntime's threads. It also gives SIGINT back its default:
# a suite started in the background (`cmd &` in a script) has SIGINT ignored, and an
# ignored signal stays ignored across exec, so Python would never turn it into Ctrl-C.
_CAPPED = (
    "import os, resource, signal, sys; resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30)); "
    "signal.signal(signal.SIGINT, signal.SIG_DFL); "
    "os.execv(sys.executable, [sys.executable, '-m', 'vaultmem', *sys.argv[1:]])"
)


def _spawn(vault: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", _CAPPED, "--vault", str(vault), *args],
        # The reader's own memory and signals: without the learned layer's model.
        env={**os.environ, "VAULTMEM_CAPTURE_SEMANTIC": "false"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _finish(proc: subprocess.Popen[str], timeout: float) -> tuple[int, str, str]:
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise AssertionError(f"still running after {timeout} s") from None
    return proc.returncode, out, err


def _high_water(pid: int) -> int:
    """The process's peak resident memory so far (KiB), 0 once it is gone.

    Read from ``VmHWM``, the mark of the program's own memory: ``ru_maxrss`` counts the
    forked copy of the test runner too (hundreds of MB late in a full run)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    found = re.search(r"^VmHWM:\s*(\d+) kB", status, re.MULTILINE)
    return int(found.group(1)) if found else 0


def _reap(proc: subprocess.Popen[str], timeout: float) -> tuple[int, str, str, int]:
    """Exit code, stdout, stderr and peak memory (KiB, the child's own) of ``proc``."""
    deadline = time.monotonic() + timeout
    peak = 0
    while True:  # polled, for a deadline and the memory mark (which only grows)
        peak = max(peak, _high_water(proc.pid))
        pid, status, _usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(f"still running after {timeout} s")
        time.sleep(0.02)
    proc.returncode = os.waitstatus_to_exitcode(status)
    out, err = (f.read() if f else "" for f in (proc.stdout, proc.stderr))
    return proc.returncode, out, err, peak


@pytest.mark.parametrize("command", ["extract", "handoff"])
@pytest.mark.parametrize("kind", ["device", "FIFO", "directory"])
def test_a_transcript_that_is_not_a_regular_file_is_refused(
    vault: Path, tmp_path: Path, command: str, kind: str
) -> None:
    if kind == "device":
        target = Path("/dev/zero")  # readline() on it never returns, deaf to signals
    elif kind == "FIFO":
        target = tmp_path / "session.jsonl"
        os.mkfifo(target)  # no writer: opening it for reading would wait forever
    else:
        target = tmp_path / "sessions"
        target.mkdir()
    proc = _spawn(vault, command, str(target))
    code, _, err = _finish(proc, timeout=30)
    assert code == 1
    assert err.splitlines() == [
        f"vaultmem: error: {target} is a {kind}, not a transcript file; refusing to read it"
    ]


@pytest.mark.parametrize("command", ["extract", "handoff"])
def test_a_transcript_over_the_size_cap_is_refused(
    vault: Path, tmp_path: Path, command: str
) -> None:
    big = tmp_path / "session.jsonl"
    with big.open("wb") as fh:
        fh.truncate(MAX_TRANSCRIPT_BYTES + 1)  # sparse: no disk used
    code, _, err = _finish(_spawn(vault, command, str(big)), timeout=60)
    assert code == 1
    assert err.splitlines() == [
        f"vaultmem: error: {big}: 268,435,457 bytes to read; one run reads at most "
        "268,435,456 (256 MiB, vaultmem.agent.transcript.MAX_TRANSCRIPT_BYTES)"
    ]


def test_an_overlong_entry_is_skipped_in_bounded_memory(vault: Path, tmp_path: Path) -> None:
    transcript = tmp_path / "session.jsonl"

    def said(text: str) -> str:
        return json.dumps({"type": "user", "message": {"role": "user", "content": text}}) + "\n"

    with transcript.open("w") as fh:
        fh.write(said("We decided to pin Redis to 7.2 on staging."))
        fh.write(said("x" * (16 * MAX_ENTRY_BYTES)))  # a 128 MiB line (a tool result, say)
        fh.write(said("We decided to keep PgBouncer in transaction mode."))
    code, out, _, peak = _reap(_spawn(vault, "extract", str(transcript), "--json"), 120)
    assert code == 0
    report = json.loads(out)
    assert [m["text"] for m in report["memories"]] == [
        "We decided to pin Redis to 7.2 on staging.",
        "We decided to keep PgBouncer in transaction mode.",
    ]
    assert report["warnings"] == [
        "1 entry over 8 MiB (vaultmem.agent.transcript.MAX_ENTRY_BYTES) skipped or cut"
    ]
    assert peak < 120 * 1024  # KiB: the 128 MiB line was never held


@pytest.mark.parametrize("endless", [False, True], ids=["8 MB transcript", "/dev/zero"])
@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_long_read_ends_on_a_signal(
    vault: Path, tmp_path: Path, sig: signal.Signals, code: int, endless: bool
) -> None:
    transcript = Path("/dev/zero") if endless else tmp_path / "session.jsonl"
    if not endless:
        prose = "The batch job reads rows from the ledger table and writes summaries. " * 30
        line = json.dumps({"type": "user", "message": {"role": "user", "content": prose}})
        transcript.write_text((line + "\n") * (8 * 2**20 // len(line)))  # seconds of reading
    proc = _spawn(vault, "extract", str(transcript))
    time.sleep(1.5)
    running = Path(f"/proc/{proc.pid}/stat").read_text().split(") ")[1][0] != "Z"
    assert running or endless, "finished before the signal: make the transcript longer"
    os.kill(proc.pid, sig)  # not reaped yet (a zombie at worst): the pid is still its own
    got, _, err, peak = _reap(proc, timeout=10)
    assert peak < 200 * 1024  # KiB (the old reader of /dev/zero had grown to gigabytes)
    if endless:  # refused at once, before the signal came
        refused = f"vaultmem: error: {transcript} is a device, not a transcript file"
        assert got == 1 and err.splitlines() == [f"{refused}; refusing to read it"]
        return
    assert got == code
    assert err.splitlines() == ["vaultmem: interrupted"]
    state = vault / ".vaultmem" / "transcripts"
    assert not state.exists() or not any(state.iterdir())  # nothing recorded as read
