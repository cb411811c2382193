"""Redaction: secrets that leak, and ordinary text that is changed, on a written corpus.

    python benchmarks/bench_redaction.py [--json] [--quiet]

The corpus (``benchmarks/data/redaction_corpus.jsonl``, written by
``benchmarks/data/make_redaction_corpus.py``) holds secret shapes in the
contexts they turn up in (``.env`` files, shell commands, logs, JSON, YAML, prose), each
with the secret parts that must not survive, and ordinary developer text that must come
through unchanged (``token``, ``password``, ``secret`` used innocently, hashes, UUIDs,
git SHAs, references such as ``$DB_PASSWORD`` or ``os.environ[...]``). Besides it, every
note of ``example-vault/`` is ordinary text (example-vault ships no transcript, so its
notes are made into sessions for the end-to-end part).

1. **Corpus**: :func:`vaultmem.agent.redact.redact` on each text. A *leak* is a secret
   case where any 10 characters of a secret part (the whole part, if shorter) survive
   that are not also in the case's text around the secret; a *false redaction* is an
   ordinary text that changed.
2. **End to end**: real `extract` and `handoff` runs (the CLI, in process) on a copy of
   the example vault, on transcripts built from the corpus: one session per case, in
   Claude Code JSONL and in markdown alternately, the case as a user message (after "We
   decided to keep this:", so the phrase rules write it as a note), echoed by the
   assistant, in a session summary, and in the arguments of Read, Grep and WebFetch
   calls and an Edit's file path (under a folder). Each session goes through `extract`
   and `handoff` without a model, then with the in-test OpenAI server
   (tests/fake_openai_server.py) as the model, answering with the transcript lines of
   its prompt (as memories and titles, so titles become file names; as handoff
   sections), and `handoff --project` with a secret-bearing project name. Leaks are
   counted on each surface: the notes written (text), their file names (compared as a
   slug keeps them: lower case letters and digits), the prompts the model received,
   and what the commands printed. False redactions end to end: the example-vault
   sessions, through the same runs, must produce no ``[REDACTED]`` anywhere.

Exit status 1 when anything leaked or was falsely redacted.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

CORPUS = REPO / "benchmarks" / "data" / "redaction_corpus.jsonl"
EXAMPLE_VAULT = REPO / "example-vault"
WINDOW = 10
REDACTED = "[REDACTED]"


def load_corpus() -> list[dict]:
    """The corpus cases, one JSON object a line."""
    return [json.loads(line) for line in CORPUS.read_text("utf-8").splitlines() if line.strip()]


def survivors(
    secrets: Iterable[str], context: str, output: str, *, names: bool = False
) -> list[str]:
    """The secret parts some window of which is in ``output`` but not in ``context``.

    ``names``: ``output`` is file names, so compared as a slug would keep them: lower
    case letters and digits only.
    """
    if names:
        secrets = [_fold(s) for s in secrets]
        context, output = _fold(context), _fold(output)
    left = []
    for secret in secrets:
        k = min(len(secret), WINDOW)
        windows = {secret[i : i + k] for i in range(len(secret) - k + 1)}
        if any(w in output and w not in context for w in windows):
            left.append(secret)
    return left


def _fold(text: str) -> str:
    return "".join(c for c in text.lower() if c.isalnum() or c == "\0")


def context_of(case: dict) -> str:
    """A case's text with its secret parts cut out (what may legitimately survive)."""
    text = case["text"]
    for secret in case["secrets"]:
        text = text.replace(secret, "\0")
    return text


# --------------------------------------------------------------------------- corpus


def corpus_run(cases: list[dict], notes: list[tuple[str, str]]) -> dict:
    """Leaks and false redactions of :func:`redact` on the corpus and the vault's notes."""
    from vaultmem.agent.redact import redact

    leaks, changed = [], []
    for case in cases:
        out = redact(case["text"])
        if case["kind"] == "secret":
            if survivors(case["secrets"], context_of(case), out):
                leaks.append({"family": case["family"], "output": out})
        elif out != case["text"]:
            changed.append({"text": case["text"], "output": out})
    for name, text in notes:
        if redact(text) != text:
            changed.append({"note": name})
    return {"leaks": leaks, "false_redactions": changed}


# --------------------------------------------------------------------------- end to end


def _claude_session(n: int, text: str, secret_args: str) -> str:
    """A Claude Code JSONL session carrying ``text`` on every surface a transcript has."""
    session = f"00000000-0000-4000-8000-{n:012d}"
    base = {"isSidechain": False, "cwd": "/home/dev/harbor", "sessionId": session}

    def line(obj: dict) -> str:
        return json.dumps({**base, **obj}, ensure_ascii=False)

    tool_input = [
        {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": secret_args}},
        {"type": "tool_use", "id": "t2", "name": "Grep", "input": {"pattern": secret_args}},
        {
            "type": "tool_use",
            "id": "t3",
            "name": "WebFetch",
            "input": {"url": f"https://api.example.com/v1?q={secret_args}"},
        },
        {
            "type": "tool_use",
            "id": "t4",
            "name": "Edit",
            "input": {"file_path": f"/home/dev/harbor/{secret_args}"},
        },
    ]
    return "\n".join(
        [
            json.dumps({"type": "summary", "summary": text[:300], "leafUuid": session}),
            line({"type": "user", "message": {"role": "user", "content": text}}),
            line(
                {
                    "type": "assistant",
                    "message": {
                        "role": "assistant",
                        "content": [{"type": "text", "text": f"Noted: {text}"}, *tool_input],
                    },
                }
            ),
            line({"type": "user", "message": {"role": "user", "content": text}}),
            line(
                {
                    "type": "assistant",
                    "message": {
                        "role": "assistant",
                        "content": [{"type": "text", "text": f"Done: {text}\nNext: {text}"}],
                    },
                }
            ),
        ]
    )


def _markdown_session(text: str) -> str:
    return f"**User:** {text}\n\n**Assistant:** Noted: {text}\n\n**User:** {text}\n"


def _echo(body: dict) -> str:
    """A model that answers with the transcript lines of its prompt (as memories and
    titles, or as handoff sections, the first as the request that names the file): a
    secret could only come back into a note or a file name if it had been sent."""
    prompt = body["messages"][0]["content"]
    inside = prompt.split("<transcript>", 1)[-1].split("</transcript>", 1)[0]
    lines = [x for x in inside.splitlines() if x.strip()][:40]
    if "memories" in json.dumps(body.get("response_format", {})):
        items = [{"type": "observation", "title": x[:80], "text": x[:600]} for x in lines]
        return json.dumps({"memories": items[:8]})
    return json.dumps(
        {
            "request": lines[0] if lines else "",
            "investigated": lines[:6],
            "learned": lines[6:12],
            "done": lines[12:18],
            "next_steps": lines[18:24],
        }
    )


class _Runs:
    """Runs `vaultmem` commands in process on one vault and keeps what they printed."""

    def __init__(self, vault: Path) -> None:
        from typer.testing import CliRunner

        self.vault = vault
        self.runner = CliRunner()
        self.printed: list[str] = []

    def __call__(self, *args: str) -> None:
        from vaultmem.cli import app

        result = self.runner.invoke(app, ["--vault", str(self.vault), *args])
        self.printed.append(result.stdout + result.stderr)
        if result.exit_code != 0:
            raise RuntimeError(f"vaultmem {' '.join(args)}: {result.stdout}{result.stderr}")


def _sessions(texts: list[str], folder: Path, secret_args: list[str]) -> list[Path]:
    paths = []
    for n, (text, arg) in enumerate(zip(texts, secret_args, strict=True)):
        if n % 2:
            path = folder / f"s{n:03d}.md"
            path.write_text(_markdown_session(text), "utf-8")
        else:
            path = folder / f"s{n:03d}.jsonl"
            path.write_text(_claude_session(n, text, arg) + "\n", "utf-8")
        paths.append(path)
    return paths


def _written(vault: Path, before: dict[str, bytes]) -> dict[str, str]:
    """The notes the runs created or changed: vault path → text."""
    out = {}
    for p in vault.rglob("*.md"):
        rel = p.relative_to(vault).as_posix()
        if rel.startswith(".vaultmem/"):
            continue
        raw = p.read_bytes()
        if before.get(rel) != raw:
            out[rel] = raw.decode("utf-8", errors="replace")
    return out


def end_to_end(texts: list[str], secret_args: list[str], project: str, work: Path) -> dict:
    """Runs extract and handoff on sessions of ``texts``, without and with a model.

    Returns the notes written (path → text), the prompts sent and what was printed.
    """
    from tests.fake_openai_server import FakeOpenAIServer

    vault = work / "vault"
    shutil.copytree(EXAMPLE_VAULT, vault, ignore=shutil.ignore_patterns(".vaultmem"))
    before = {
        p.relative_to(vault).as_posix(): p.read_bytes()
        for p in vault.rglob("*.md")
        if ".vaultmem" not in p.parts
    }
    folder = work / "sessions"
    folder.mkdir()
    prefixed = [f"We decided to keep this: {t}" for t in texts]
    sessions = _sessions(prefixed, folder, secret_args)
    runs = _Runs(vault)
    runs("index")
    for path in sessions:
        runs("extract", str(path))
        runs("handoff", str(path), "--folder", "handoffs/rules")
    with FakeOpenAIServer() as server:
        server.default_chat_reply = ""
        for _ in range(4 * len(sessions)):
            server.chat_replies.append(_echo)
        os.environ.update(
            VAULTMEM_LLM_URL=server.base_url,
            VAULTMEM_LLM_MODEL="fake-chat",
            VAULTMEM_LLM_MAX_RETRIES="0",
        )
        try:
            for path in sessions:
                copy = path.with_name("llm-" + path.name)
                shutil.copyfile(path, copy)  # a transcript extract has not read yet
                runs("extract", str(copy))
                runs("handoff", str(copy), "--folder", "handoffs/llm")
                named = path.with_name("project-" + path.name)
                shutil.copyfile(path, named)
                runs("handoff", str(named), "--folder", "handoffs/project", "--project", project)
        finally:
            for name in ("VAULTMEM_LLM_URL", "VAULTMEM_LLM_MODEL", "VAULTMEM_LLM_MAX_RETRIES"):
                os.environ.pop(name, None)
        prompts = [json.dumps(r.body, ensure_ascii=False) for r in server.requests]
    return {"notes": _written(vault, before), "prompts": prompts, "printed": runs.printed}


def e2e_secrets(cases: list[dict], work: Path) -> dict:
    """Leaks per surface of the end-to-end runs on the secret cases."""
    secret_cases = [c for c in cases if c["kind"] == "secret"]
    texts = [c["text"] for c in secret_cases]
    # The case as a tool's arguments too: a path, a search pattern, a URL's query.
    args = texts
    project = "harbor " + next(c for c in secret_cases if c["family"] == "tokens")["secrets"][0]
    got = end_to_end(texts, args, project, work)
    surfaces = {
        "notes": "\n".join(got["notes"].values()),
        "file names": "\n".join(got["notes"]),
        "prompts": "\n".join(got["prompts"]),
        "printed": "\n".join(got["printed"]),
    }
    context = "\n".join(context_of(c) for c in secret_cases)
    leaks: dict[str, list[str]] = {name: [] for name in surfaces}
    for case in secret_cases:
        for name, text in surfaces.items():
            if survivors(case["secrets"], context, text, names=name == "file names"):
                leaks[name].append(case["family"])
    if survivors([project.split()[1]], context, surfaces["file names"], names=True):
        leaks["file names"].append("project name")
    return {
        "sessions": len(texts),
        "notes_written": len(got["notes"]),
        "prompts": len(got["prompts"]),
        "leaks": leaks,
    }


def e2e_ordinary(notes: list[tuple[str, str]], work: Path) -> dict:
    """``[REDACTED]`` markers the end-to-end runs put into example-vault's sessions."""
    texts = [text.split("\n---\n", 1)[-1].strip()[:3000] for _, text in notes]
    got = end_to_end(texts, ["app/settings.py"] * len(texts), "harbor", work)
    marked = {
        "notes": [p for p, t in got["notes"].items() if REDACTED in t],
        "file names": [p for p in got["notes"] if "redacted" in p.lower()],
        "prompts": sum(REDACTED in p for p in got["prompts"]),
    }
    return {"sessions": len(texts), "notes_written": len(got["notes"]), "redacted": marked}


# --------------------------------------------------------------------------- cost


def cost(notes: list[tuple[str, str]]) -> dict:
    """detect-secrets' load time and redaction throughput on ordinary prose."""
    import subprocess

    load = subprocess.run(
        [
            sys.executable,
            "-c",
            "import time; t = time.perf_counter(); from vaultmem.agent.redact import redact; "
            "redact('warm up the detectors'); print(time.perf_counter() - t)",
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    )
    from vaultmem.agent.redact import redact

    prose = "\n\n".join(text for _, text in notes)
    block = (prose * (1_000_000 // len(prose) + 1))[:1_000_000]
    pieces = [block[i : i + 2000] for i in range(0, len(block), 2000)]
    start = time.perf_counter()
    for piece in pieces:
        redact(piece)
    seconds = time.perf_counter() - start
    return {"first_redaction_s": float(load.stdout), "mb_per_s": 1.0 / seconds}


def main() -> int:
    """Run every part; print the numbers (``--json``: one object)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--quiet", action="store_true", help="no per-case lines")
    args = parser.parse_args()
    os.environ["VAULTMEM_EMBEDDER"] = "none"
    home = Path(tempfile.mkdtemp(prefix="bench-redaction-home-"))
    os.environ["HOME"] = str(home)
    os.environ["XDG_CONFIG_HOME"] = str(home / ".config")
    for name in list(os.environ):
        if name.startswith("VAULTMEM_") and name != "VAULTMEM_EMBEDDER":
            os.environ.pop(name)

    cases = load_corpus()
    notes = [
        (p.relative_to(EXAMPLE_VAULT).as_posix(), p.read_text("utf-8"))
        for p in sorted(EXAMPLE_VAULT.rglob("*.md"))
    ]
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "s").mkdir()
        (Path(tmp) / "o").mkdir()
        report = {
            "secret_cases": sum(c["kind"] == "secret" for c in cases),
            "families": sorted({c["family"] for c in cases if c["kind"] == "secret"}),
            "ordinary_texts": sum(c["kind"] == "ordinary" for c in cases),
            "example_vault_notes": len(notes),
            "corpus": corpus_run(cases, notes),
            "end_to_end_secrets": e2e_secrets(cases, Path(tmp) / "s"),
            "end_to_end_example_vault": e2e_ordinary(notes, Path(tmp) / "o"),
            "cost": cost(notes),
        }
    shutil.rmtree(home, ignore_errors=True)
    leaks = len(report["corpus"]["leaks"]) + sum(
        len(v) for v in report["end_to_end_secrets"]["leaks"].values()
    )
    marked = report["end_to_end_example_vault"]["redacted"]
    false = (
        len(report["corpus"]["false_redactions"])
        + len(marked["notes"])
        + len(marked["file names"])
        + marked["prompts"]
    )
    if args.json:
        print(json.dumps(report, indent=2, ensure_ascii=False))
    else:
        _print(report, quiet=args.quiet)
    return 1 if leaks or false else 0


def _print(r: dict, *, quiet: bool) -> None:
    c = r["corpus"]
    print(
        f"corpus: {r['secret_cases']} secret cases ({len(r['families'])} families: "
        f"{', '.join(r['families'])}), {r['ordinary_texts']} ordinary texts, "
        f"{r['example_vault_notes']} example-vault notes"
    )
    print(f"  leaks: {len(c['leaks'])} of {r['secret_cases']}")
    print(
        f"  false redactions: {len(c['false_redactions'])} of "
        f"{r['ordinary_texts'] + r['example_vault_notes']}"
    )
    if not quiet:
        for leak in c["leaks"]:
            print(f"    LEAK [{leak['family']}] {leak['output'][:160]!r}")
        for false in c["false_redactions"]:
            print(f"    CHANGED {json.dumps(false, ensure_ascii=False)[:200]}")
    e = r["end_to_end_secrets"]
    print(
        f"end to end, secrets: {e['sessions']} sessions, {e['notes_written']} notes written, "
        f"{e['prompts']} prompts"
    )
    for surface, families in e["leaks"].items():
        print(f"  leaks in {surface}: {len(families)}" + (f" {families}" if families else ""))
    o = r["end_to_end_example_vault"]
    m = o["redacted"]
    print(
        f"end to end, example-vault sessions: {o['sessions']} sessions, "
        f"{o['notes_written']} notes written"
    )
    print(
        f"  false redactions: {len(m['notes'])} notes, {len(m['file names'])} file names, "
        f"{m['prompts']} prompts"
    )
    k = r["cost"]
    print(
        f"cost: first redaction in a fresh process {k['first_redaction_s'] * 1000:.0f} ms "
        f"(imports detect-secrets), then {k['mb_per_s']:.2f} MB/s of prose"
    )


if __name__ == "__main__":
    sys.exit(main())
