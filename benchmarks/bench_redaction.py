"""Redaction: secrets that leak, and ordinary text that is changed, on a written corpus.

    python benchmarks/bench_redaction.py [--heldback PATH] [--json] [--quiet]
    python benchmarks/bench_redaction.py --quiet --end-to-end tuned,round-5  # those parts only

The corpus comes in eight parts, scored apart:

- **tuned** (``benchmarks/data/redaction_corpus.jsonl``, written by
  ``benchmarks/data/make_redaction_corpus.py``): the cases the redactor was tuned on;
- **round-1** (``benchmarks/data/redaction_round1.jsonl``): cases written apart from
  the redactor by someone who did not see it, scored once in round 1 (as the held-back
  part), and seen since: its failures were studied when the redactor was widened, so it
  is no longer a blind test, only a floor that must not slip back;
- **round-2** (``benchmarks/data/redaction_round2.jsonl``, written by
  ``benchmarks/data/round2/make_redaction_heldback2.py``): the held-back set of round
  2, written apart and scored once at its end, seen since in the same way;
- **round-3** (``benchmarks/data/redaction_round3.jsonl``, written by
  ``benchmarks/data/round3/make_redaction_heldback3.py``): round 3's held-back set, the
  same again;
- **round-4** (``benchmarks/data/redaction_round4.jsonl``, written by
  ``benchmarks/data/round4/make_redaction_heldback4.py``): round 4's, the same again;
- **round-5** (``benchmarks/data/redaction_round5.jsonl``, written by
  ``benchmarks/data/round5/make_redaction_heldback5.py``): round 5's, the same again;
- **round-6** (``benchmarks/data/redaction_round6.jsonl``, written by
  ``benchmarks/data/round6/make_redaction_heldback6.py``): round 6's, the same again;
- **held-back** (``benchmarks/data/redaction_heldback.jsonl``, or ``--heldback PATH``):
  a new set written apart, which nobody tuning the redactor reads, scored only once it
  is final. Absent (it is not in the repository until then): not reported.

Each holds secret shapes in the contexts they turn up in (``.env`` files, shell
commands, logs, JSON, YAML, prose in several languages, tool-call arguments and tool
output), each with the secret parts that must not survive, and ordinary developer text
that must come through unchanged (``token``, ``password``, ``secret`` used innocently,
hashes, UUIDs, git SHAs, colour codes, references such as ``$DB_PASSWORD`` or
``os.environ[...]``). Besides them, every note of ``example-vault/`` is ordinary text
(example-vault ships no transcript, so its notes are made into sessions for the
end-to-end part).

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
   what the commands printed, and every other file under the vault with its name (the
   cache: manifest, keyword index, transcript state, logs; compared folded, as file
   names are, since an index keeps its terms in lower case). False redactions end to
   end: the example-vault sessions, through the same runs, must produce no
   ``[REDACTED]`` anywhere.

Exit status 1 when a target is missed: a leak in the tuned or a seen round's part, more
than one in the held-back part, or more than 2% of any part's ordinary texts (and
example-vault's notes) changed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

CORPUS = REPO / "benchmarks" / "data" / "redaction_corpus.jsonl"
ROUND1 = REPO / "benchmarks" / "data" / "redaction_round1.jsonl"
ROUND2 = REPO / "benchmarks" / "data" / "redaction_round2.jsonl"
ROUND3 = REPO / "benchmarks" / "data" / "redaction_round3.jsonl"
ROUND4 = REPO / "benchmarks" / "data" / "redaction_round4.jsonl"
ROUND5 = REPO / "benchmarks" / "data" / "redaction_round5.jsonl"
ROUND6 = REPO / "benchmarks" / "data" / "redaction_round6.jsonl"
HELDBACK = REPO / "benchmarks" / "data" / "redaction_heldback.jsonl"
EXAMPLE_VAULT = REPO / "example-vault"
WINDOW = 10
REDACTED = "[REDACTED]"
# Targets (issue 28): leaks in each part (the seen rounds' parts are held
# to the tuned part's), share of ordinary texts changed.
MAX_LEAKS = {
    "tuned": 0,
    "round-1": 0,
    "round-2": 0,
    "round-3": 0,
    "round-4": 0,
    "round-5": 0,
    "round-6": 0,
    "held-back": 1,
}
MAX_FALSE_SHARE = 0.02
LABELS = ("lang", "shape", "where")


def load_corpus(path: Path = CORPUS) -> list[dict]:
    """The cases of one part of the corpus, one JSON object a line."""
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def survivors(
    secrets: Iterable[str], context: str, output: str, *, names: bool = False
) -> list[str]:
    """The secret parts some window of which is in ``output`` but not in ``context``.

    ``names``: ``output`` is file names (or an index's terms), so compared as a slug
    would keep them: lower case letters and digits only. A part shorter than the window
    (a PIN, ``hunter2``) counts only as a word of its own: ``8967`` inside a SHA-256 in a
    note's frontmatter is no leak.
    """
    left = []
    for secret in secrets:
        if len(secret) < WINDOW:
            word = re.compile(
                r"(?<![0-9A-Za-z])" + re.escape(secret) + r"(?![0-9A-Za-z])", re.I * names
            )
            if word.search(output) and not word.search(context):
                left.append(secret)
            continue
        part, seen, text = (
            (_fold(secret), _fold(context), _fold(output)) if names else (secret, context, output)
        )
        windows = {part[i : i + WINDOW] for i in range(len(part) - WINDOW + 1)}
        if any(w in text and w not in seen for w in windows):
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
    """Leaks and false redactions of :func:`redact` on one part and the vault's notes,
    with the count of cases and leaks under each label (language, token family, tool)."""
    from vaultmem.agent.redact import redact

    leaks, changed, changed_notes = [], [], []
    labels: dict[str, dict[str, list[int]]] = {name: {} for name in LABELS}
    for case in cases:
        out = redact(case["text"])
        leaked = case["kind"] == "secret" and bool(
            survivors(case["secrets"], context_of(case), out)
        )
        if leaked:
            leaks.append({"family": case["family"], "output": out})
        elif case["kind"] == "ordinary" and out != case["text"]:
            changed.append({"text": case["text"], "output": out})
        for name in LABELS:
            if case.get(name):
                seen = labels[name].setdefault(f"{case['kind']}:{case[name]}", [0, 0])
                seen[0] += 1
                seen[1] += leaked or (case["kind"] == "ordinary" and out != case["text"])
    for name, text in notes:
        if redact(text) != text:
            changed_notes.append(name)
    return {
        "leaks": leaks,
        "false_redactions": changed,
        "example_vault_notes_changed": changed_notes,
        "labels": labels,
    }


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
    return {
        "notes": _written(vault, before),
        "prompts": prompts,
        "printed": runs.printed,
        "cache": _cache_text(vault),
    }


def _cache_text(vault: Path) -> str:
    """Every file under the vault that is not a note (the cache: manifest, keyword index,
    transcript state, logs), read as bytes, with its name: what a secret could reach
    besides the notes."""
    parts = []
    for p in sorted(vault.rglob("*")):
        parts.append(p.relative_to(vault).as_posix())
        if p.is_file() and p.suffix != ".md":
            parts.append(p.read_bytes().decode("latin-1"))
    return "\n".join(parts)


def e2e_secrets(cases: list[dict], work: Path) -> dict:
    """Leaks per surface of the end-to-end runs on the secret cases."""
    secret_cases = [c for c in cases if c["kind"] == "secret"]
    texts = [c["text"] for c in secret_cases]
    # The case as a tool's arguments too: a path, a search pattern, a URL's query.
    args = texts
    tokens = [c for c in secret_cases if c["family"] == "tokens"] or secret_cases
    project = "harbor " + tokens[0]["secrets"][0]
    got = end_to_end(texts, args, project, work)
    surfaces = {
        "notes": "\n".join(got["notes"].values()),
        "file names": "\n".join(got["notes"]),
        "prompts": "\n".join(got["prompts"]),
        "printed": "\n".join(got["printed"]),
        "cache": got["cache"],
    }
    context = "\n".join(context_of(c) for c in secret_cases)
    leaks: dict[str, list[str]] = {name: [] for name in surfaces}
    for case in secret_cases:
        for name, text in surfaces.items():
            folded = name in ("file names", "cache")  # slugs; index terms in lower case
            if survivors(case["secrets"], context, text, names=folded):
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


def part_report(
    cases: list[dict], notes: list[tuple[str, str]], work: Path | None, *, name: str
) -> dict:
    """Every number of one part of the corpus: the corpus run and (``work`` given) the
    end-to-end runs."""
    corpus = corpus_run(cases, notes)
    secret_cases = sum(c["kind"] == "secret" for c in cases)
    ordinary = sum(c["kind"] == "ordinary" for c in cases)
    e2e: dict = {"sessions": 0, "notes_written": 0, "prompts": 0, "leaks": {}}
    if work is not None:
        work.mkdir()
        e2e = e2e_secrets(cases, work)
    leaks = len(corpus["leaks"]) + sum(len(v) for v in e2e["leaks"].values())
    false = len(corpus["false_redactions"])
    share = max(
        false / max(ordinary, 1),
        len(corpus["example_vault_notes_changed"]) / max(len(notes), 1),
    )
    return {
        "secret_cases": secret_cases,
        "families": sorted({c["family"] for c in cases if c["kind"] == "secret"}),
        "ordinary_texts": ordinary,
        "example_vault_notes": len(notes),
        "corpus": corpus,
        "end_to_end_secrets": e2e,
        "met": leaks <= MAX_LEAKS[name] and share <= MAX_FALSE_SHARE,
    }


def main() -> int:
    """Run every part; print the numbers (``--json``: one object)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--quiet", action="store_true", help="no per-case lines")
    parser.add_argument(
        "--corpus-only",
        action="store_true",
        help="only redact() on the corpus: no end-to-end runs, no cost (seconds, not minutes)",
    )
    parser.add_argument(
        "--heldback",
        type=Path,
        default=None,
        help=f"the held-back part, never read while tuning (default: "
        f"{HELDBACK.relative_to(REPO)} when it exists)",
    )
    parser.add_argument(
        "--end-to-end",
        metavar="PART,...",
        default=None,
        help="run only these parts end to end (e.g. tuned,held-back); the others corpus only",
    )
    args = parser.parse_args()
    if args.heldback is not None and not args.heldback.is_file():
        parser.error(f"--heldback {args.heldback}: no such file")
    heldback = args.heldback or (HELDBACK if HELDBACK.exists() else None)
    os.environ["VAULTMEM_EMBEDDER"] = "none"
    home = Path(tempfile.mkdtemp(prefix="bench-redaction-home-"))
    os.environ["HOME"] = str(home)
    os.environ["XDG_CONFIG_HOME"] = str(home / ".config")
    for name in list(os.environ):
        if name.startswith("VAULTMEM_") and name != "VAULTMEM_EMBEDDER":
            os.environ.pop(name)

    notes = [
        (p.relative_to(EXAMPLE_VAULT).as_posix(), p.read_text("utf-8"))
        for p in sorted(EXAMPLE_VAULT.rglob("*.md"))
    ]
    parts = {
        "tuned": load_corpus(CORPUS),
        "round-1": load_corpus(ROUND1),
        "round-2": load_corpus(ROUND2),
        "round-3": load_corpus(ROUND3),
        "round-4": load_corpus(ROUND4),
        "round-5": load_corpus(ROUND5),
        "round-6": load_corpus(ROUND6),
    }
    if heldback is not None:
        parts["held-back"] = load_corpus(heldback)
    chosen = set(parts) if args.end_to_end is None else set(args.end_to_end.split(","))
    if not chosen <= set(parts):
        parser.error(f"--end-to-end: no part {', '.join(sorted(chosen - set(parts)))}")
    with tempfile.TemporaryDirectory() as tmp:
        report: dict = {
            "parts": {
                name: part_report(
                    cases,
                    notes if name == "tuned" else [],
                    None if args.corpus_only or name not in chosen else Path(tmp) / name,
                    name=name,
                )
                for name, cases in parts.items()
            }
        }
        if not args.corpus_only:
            (Path(tmp) / "o").mkdir()
            report["end_to_end_example_vault"] = e2e_ordinary(notes, Path(tmp) / "o")
            report["cost"] = cost(notes)
    shutil.rmtree(home, ignore_errors=True)
    marked = report.get("end_to_end_example_vault", {}).get("redacted")
    false_e2e = (
        len(marked["notes"]) + len(marked["file names"]) + marked["prompts"] if marked else 0
    )
    if args.json:
        print(json.dumps(report, indent=2, ensure_ascii=False))
    else:
        for name, part in report["parts"].items():
            _print_part(name, part, quiet=args.quiet)
        if "held-back" not in report["parts"]:
            print(f"held-back corpus: absent ({HELDBACK.relative_to(REPO)}, or --heldback PATH)")
        if marked:
            _print(report)
    met = all(part["met"] for part in report["parts"].values())
    return 0 if met and not false_e2e else 1


def _print_part(name: str, r: dict, *, quiet: bool) -> None:
    c = r["corpus"]
    print(
        f"{name} corpus: {r['secret_cases']} secret cases ({len(r['families'])} families: "
        f"{', '.join(r['families'])}), {r['ordinary_texts']} ordinary texts"
        + (f", {r['example_vault_notes']} example-vault notes" if r["example_vault_notes"] else "")
    )
    print(f"  leaks: {len(c['leaks'])} of {r['secret_cases']}")
    share = len(c["false_redactions"]) / max(r["ordinary_texts"], 1)
    print(
        f"  false redactions: {len(c['false_redactions'])} of {r['ordinary_texts']} "
        f"ordinary texts ({share:.1%})"
        + (
            f", {len(c['example_vault_notes_changed'])} of {r['example_vault_notes']} "
            "example-vault notes"
            if r["example_vault_notes"]
            else ""
        )
    )
    for label, seen in c["labels"].items():
        if seen:
            kinds = sorted({k.split(":", 1)[1] for k in seen})
            bad = sum(v[1] for v in seen.values())
            print(
                f"  by {label}: {len(kinds)} values, {sum(v[0] for v in seen.values())} "
                f"cases, {bad} leaked or changed"
                + (f" {[k for k, v in seen.items() if v[1]]}" if bad else "")
            )
    if not quiet:
        for leak in c["leaks"]:
            print(f"    LEAK [{leak['family']}] {leak['output'][:160]!r}")
        for false in c["false_redactions"]:
            print(f"    CHANGED {json.dumps(false, ensure_ascii=False)[:200]}")
        for note in c["example_vault_notes_changed"]:
            print(f"    CHANGED note {note}")
    e = r["end_to_end_secrets"]
    print(
        f"  end to end: {e['sessions']} sessions, {e['notes_written']} notes written, "
        f"{e['prompts']} prompts"
    )
    for surface, families in e["leaks"].items():
        print(f"    leaks in {surface}: {len(families)}" + (f" {families}" if families else ""))
    print(f"  targets met: {'yes' if r['met'] else 'NO'}")


def _print(r: dict) -> None:
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
        f"(loads the rules), then {k['mb_per_s']:.2f} MB/s of prose"
    )


if __name__ == "__main__":
    sys.exit(main())
