"""The semantic capture layer: which sentences are candidates, how the real in-process
MiniLM scores them, and `extract` with the layer on (sentences written here, not taken
from the capture benchmark)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.conftest import Cli
from vaultmem.agent import capture_vectors
from vaultmem.agent.capture_rules import Said
from vaultmem.agent.capture_vectors import (
    admissible,
    candidates,
    capture_embedder,
    classify,
    english,
    frame,
    prototypes,
    semantic_spotted,
)
from vaultmem.agent.extract import KINDS, extract_transcript
from vaultmem.config import load
from vaultmem.inference.local import LocalEmbedder

NOW = datetime(2026, 12, 1, tzinfo=UTC)

# Durable memories that no phrase rule hears.
MEMORIES = [
    "Ledger entries are append-only, corrections are new rows.",
    "Customer ids are UUIDs everywhere, never sequential integers.",
    "Public prices are shown with VAT included.",
]
# A memory no phrase rule hears and the learned layer (on by default) takes.
HEARD = (
    "Heads up: the shared staging bucket is wiped every Sunday night, "
    "keep exports in the archive bucket."
)
# Said in a session, and no memory.
CHATTER = [
    "Okay so the upload page hangs for a minute on big files.",
    "Let's look at the failing job first.",
    "Great, thanks for the quick fix.",
]


@pytest.fixture(scope="module")
def minilm() -> LocalEmbedder:
    return LocalEmbedder()


# --------------------------------------------------------------------------- candidates


@pytest.mark.parametrize(
    "sentence",
    [
        "Should invoices be stored as PDFs in the bucket?",  # a question
        "If we moved the ledger to DynamoDB, corrections would get harder.",  # hypothetical
        "Maybe the exports belong in a separate worker.",  # hypothetical
        "Can you make the ledger table append-only?",  # a request for work
        "Please rename the ledger module to accounts.",  # a request for work
        "The vendor docs say every webhook must be answered within 5 seconds.",  # reported
        "We haven't decided where the exports go.",  # a cue in the negative
        "Forget the ledger idea, it was too early.",  # a retraction
        "Don't deploy the ledger change today.",  # an instruction about this moment
        'The runbook says "ledger entries are append-only" somewhere.',  # quoted
        "x = {'ledger': [1, 2, 3]}; y = x['ledger'];",  # code
        "Ledger rows.",  # too short to be a memory
    ],
)
def test_what_is_never_a_candidate(sentence: str) -> None:
    assert not admissible(sentence)


def test_candidates_are_the_users_prose_only() -> None:
    turns = [
        Said("user", "Ledger entries are append-only, corrections are new rows."),
        # The assistant's narration, however it sounds, is never a candidate.
        Said("assistant", "Invoices are rendered by the PDF worker in the background."),
        Said(
            "user",
            "Look at this:\n```\nretention is 30 days for every bucket\n```\n"
            "> Archived orders are moved to cold storage after a year.\n"
            "| table | owner |\n|---|---|\n| ledger | finance |\n"
            "Is the retention really 30 days?",
        ),
    ]
    found = candidates(turns)
    assert [(c.turn, c.text) for c in found] == [(0, MEMORIES[0])]


def test_an_accepted_proposal_is_a_candidate_and_narration_is_not() -> None:
    proposal = "Refunds become new ledger rows with a negative amount."
    turns = [
        Said("assistant", f"I'll check the export first. {proposal}"),
        Said("user", "yes, do that"),
        Said("assistant", "Invoices are rendered by the PDF worker in the background."),
        Said("user", "Why is the worker so slow?"),  # no acceptance
    ]
    assert [(c.turn, c.text) for c in candidates(turns)] == [(0, proposal)]


def test_the_reason_said_next_stays_with_the_sentence() -> None:
    turns = [Said("user", f"{MEMORIES[0]} Because auditors need the full history.")]
    found = candidates(turns)
    assert [(c.text, c.reason) for c in found] == [
        (MEMORIES[0], "Because auditors need the full history.")
    ]


def test_what_a_phrase_rule_takes_is_left_to_the_rules() -> None:
    turns = [Said("user", "From now on every ledger correction is a new row.")]
    assert candidates(turns) == []


def test_frames_keep_how_it_is_said_and_drop_what_it_is_about() -> None:
    words = prototypes().frame_words
    assert frame("From now on use Ledgerly, not Bookkeep.", words) == ("From now on use X, not X.")
    assert {"never", "we", "can", "you"} <= words


def test_english_and_other_languages() -> None:
    assert english("Customer ids are UUIDs everywhere.")
    assert english("Prices include VAT.")  # no common words at all: English
    assert not english("Die Rechnungen werden jeden Monat von Hand geprüft.")
    assert not english("Los precios se muestran con el IVA incluido.")


# --------------------------------------------------------------------------- the model


def test_prototypes_name_every_memory_kind_and_what_is_not_one() -> None:
    protos = prototypes()
    assert set(protos.kinds.values()) <= set(KINDS)
    assert set(protos.labels) == {*protos.kinds, "not"}
    assert len(set(protos.texts)) == len(protos.texts)  # no sentence twice


def test_memories_score_above_chatter_on_the_real_model(minilm: LocalEmbedder) -> None:
    scored = classify([*MEMORIES, *CHATTER], minilm)
    memories, chatter = scored[: len(MEMORIES)], scored[len(MEMORIES) :]
    assert all(s.memory for s in memories), [round(s.score, 2) for s in memories]
    assert not any(s.memory for s in chatter), [round(s.score, 2) for s in chatter]
    assert min(s.score for s in memories) > max(s.score for s in chatter)
    assert all(s.kind in KINDS for s in scored)


def test_the_classifier_is_fitted_once_per_model(minilm: LocalEmbedder) -> None:
    first = classify([MEMORIES[0]], minilm)[0]
    model = capture_vectors._models[minilm.model_id]
    again = classify([MEMORIES[0]], minilm)[0]
    assert capture_vectors._models[minilm.model_id] is model
    assert again == first  # deterministic


def test_a_decision_taken_back_later_is_dropped(minilm: LocalEmbedder) -> None:
    turns = [
        Said("user", MEMORIES[1]),
        Said("assistant", "Noted."),
        Said("user", "Actually, scrap the UUIDs, customer ids stay sequential integers."),
    ]
    assert semantic_spotted(turns[:1], minilm)  # heard alone
    from vaultmem.agent.extract import rule_candidates

    texts = [c.text for c in rule_candidates(turns, minilm)]
    assert MEMORIES[1] not in texts


# --------------------------------------------------------------------------- extract


def _entry(role: str, content: object, n: int) -> dict:
    return {
        "type": role,
        "sessionId": "5d0c6a1e-2b7f-4c1a-9e3d-000000000031",
        "cwd": "/home/dev/ledgerly",
        "uuid": f"00000000-0000-4000-8000-{n:012d}",
        "timestamp": f"2026-11-30T10:00:{n:02d}.000Z",
        "message": {"role": role, "content": content},
    }


def _session(tmp_path: Path) -> Path:
    """A session in Claude Code's JSONL: a memory the rules miss, chatter, a memory-like
    sentence in tool output, and one in the assistant's narration."""
    tool_id = "toolu_01000000000000000000abcd"
    entries = [
        _entry("user", "The ledger export is failing again, can you look?", 1),
        _entry(
            "assistant",
            [
                {"type": "text", "text": "Let me read the export module."},
                {"type": "tool_use", "id": tool_id, "name": "Read", "input": {"path": "x.py"}},
            ],
            2,
        ),
        _entry(
            "user",
            [
                {
                    "type": "tool_result",
                    "tool_use_id": tool_id,
                    "content": "# Public prices are shown with VAT included.\nimport csv",
                }
            ],
            3,
        ),
        _entry("assistant", "The export writes one row per entry and fails on refunds.", 4),
        _entry("user", f"Right. {HEARD}", 5),
        _entry("assistant", "Understood, I'll write refunds as new rows.", 6),
        _entry("user", CHATTER[2], 7),
    ]
    path = tmp_path / "session.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in entries), encoding="utf-8")
    return path


def test_extract_hears_what_the_rules_miss(
    vault: Path, tmp_path: Path, minilm: LocalEmbedder
) -> None:
    config = load(vault_flag=str(vault), env={"HOME": str(tmp_path)}, cwd=vault)
    transcript = _session(tmp_path)
    rules = extract_transcript(config, transcript, llm=None, now=NOW, dry_run=True)
    assert rules.mode == "rules"
    assert [m.candidate.text for m in rules.memories] == []
    both = extract_transcript(config, transcript, llm=None, now=NOW, dry_run=True, semantic=minilm)
    assert both.mode == "rules+semantic"
    found = [(m.candidate.text, m.candidate.said_at) for m in both.memories]
    # The sentence that says it, not the turn; nothing from tool output or narration.
    assert found == [(HEARD, "2026-11-30T10:00:05.000Z")]


def test_the_config_knob_turns_it_off_for_the_command(
    vault: Path, tmp_path: Path, cli: Cli
) -> None:
    transcript = _session(tmp_path)
    (vault / ".vaultmem.toml").write_text("[capture]\nsemantic = false\n", encoding="utf-8")
    off = json.loads(cli("extract", str(transcript), "--dry-run", "--json").stdout)
    assert (off["mode"], off["memories"]) == ("rules", [])
    (vault / ".vaultmem.toml").unlink()  # on by default
    on = json.loads(cli("extract", str(transcript), "--dry-run", "--json").stdout)
    assert on["mode"] == "rules+semantic"
    assert [m["text"] for m in on["memories"]] == [HEARD]
    written = cli("extract", str(transcript))
    assert "1 memories written" in written.stderr + written.stdout


def test_the_knob_and_its_errors(vault: Path, tmp_path: Path) -> None:
    from vaultmem.errors import ConfigError

    env = {"HOME": str(tmp_path)}
    off = load(vault_flag=str(vault), env={**env, "VAULTMEM_CAPTURE_SEMANTIC": "false"}, cwd=vault)
    assert off.capture_semantic is False and capture_embedder(off) is None
    on = load(vault_flag=str(vault), env=env, cwd=vault)
    assert on.capture_semantic is True  # on by default
    mine = LocalEmbedder()
    assert capture_embedder(on, mine) is mine  # the vault's own MiniLM, one per process
    assert isinstance(capture_embedder(on, None), LocalEmbedder)
    (vault / ".vaultmem.toml").write_text("[capture]\nsemantic = 1\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"capture\.semantic: expected true or false"):
        load(vault_flag=str(vault), env=env, cwd=vault)


def test_a_model_that_cannot_run_leaves_the_rules(vault: Path, tmp_path: Path) -> None:
    from vaultmem.inference.remote import EndpointConfig, OpenAIEmbedder

    config = load(vault_flag=str(vault), env={"HOME": str(tmp_path)}, cwd=vault)
    dead = OpenAIEmbedder(
        EndpointConfig(url="http://127.0.0.1:9/v1", model="none", max_retries=0, timeout=2)
    )
    report = extract_transcript(
        config, _session(tmp_path), llm=None, now=NOW, dry_run=True, semantic=dead
    )
    assert report.mode == "rules" and report.memories == ()
    assert len(report.warnings) == 1 and "semantic capture off" in report.warnings[0]
