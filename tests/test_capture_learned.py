"""The learned capture layer: its features, the shipped weights, and what it keeps and adds
on the real in-process MiniLM (sentences written here, not taken from the capture sets)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from vaultmem.agent.capture_learned import (
    CLASSIFIER_FILE,
    FEATURES,
    Classifier,
    features,
    learned_spot,
    shipped,
)
from vaultmem.agent.capture_rules import Said, spot
from vaultmem.inference.local import LocalEmbedder

REPO = Path(__file__).resolve().parent.parent

# Memories no phrase rule hears, that the layer takes.
HEARD = [
    "Heads up: the shared staging bucket is wiped every Sunday night, "
    "keep exports in the archive bucket.",
]
# Said in a session, and no memory.
CHATTER = [
    "Can you look at the importer in src/import.py?",
    "Marta thinks we should move the cron jobs to Lambda, but that is not happening.",
    "Fix that test and push the branch.",
    "Great, thanks for the quick fix.",
    "I was debugging the parser all morning yesterday.",
]


@pytest.fixture(scope="module")
def minilm() -> LocalEmbedder:
    return LocalEmbedder()


def _said(sentence: str) -> list[Said]:
    return [
        Said("assistant", "What should the import do with duplicates?"),
        Said("user", sentence),
        Said("assistant", "Got it."),
    ]


def _flags(sentence: str, minilm: LocalEmbedder) -> dict[str, float]:
    found, _, _ = features(_said(sentence), minilm)
    assert len(found) == 1
    return dict(zip(FEATURES, found[0].cues, strict=True))


def test_the_shipped_classifier_loads() -> None:
    model = shipped()
    assert len(model.weights) == len(model.mean) == len(model.scale) == len(FEATURES)
    assert 0 < model.rule_threshold <= model.threshold < 1
    assert Classifier.from_json(model.to_json()) == model
    stale = {**model.to_json(), "features": list(FEATURES[:-1])}
    with pytest.raises(ValueError, match="features are not this version's"):
        Classifier.from_json(stale)


@pytest.mark.parametrize(
    ("sentence", "flag"),
    [
        ("No string concatenation in SQL anywhere, use bound parameters.", "negative_start"),
        ("Fine, Meilisearch then, no Elasticsearch cluster for this.", "closed"),
        ("Heads up: the staging bucket is wiped on Sundays, keep exports elsewhere.", "flagged"),
        ("Marta thinks the cron jobs belong in Lambda, not on the box.", "third_party"),
        ("Fix that test and push the branch to the remote.", "task"),
        ("We keep every invoice PDF for ten years in the archive.", "we"),
        ("Alle Rechnungen bleiben immer zehn Jahre im Archiv liegen.", "always"),
    ],
)
def test_cue_features(sentence: str, flag: str, minilm: LocalEmbedder) -> None:
    assert _flags(sentence, minilm)[flag] == 1.0


def test_what_the_speaker_said_around_it(minilm: LocalEmbedder) -> None:
    turns = [
        Said("assistant", "Should invoices go to the archive bucket or the app database?"),
        Said("user", "Invoice PDFs live in the archive bucket for ten years."),
        Said("assistant", "Right: invoice PDFs go to the archive bucket, kept ten years."),
        Said("user", "Actually no, the archive bucket is too slow, invoice PDFs go in the app DB."),
    ]
    found, _, _ = features(turns, minilm)
    first = dict(zip(FEATURES, found[0].cues, strict=True))
    assert found[0].text == turns[1].text
    assert first["after_question"] == 1.0 and first["echoed"] > 0.5
    assert first["taken_back"] == 1.0


def test_the_layer_adds_what_people_say_and_leaves_chatter(minilm: LocalEmbedder) -> None:
    for sentence in HEARD:
        assert [s.text for s in learned_spot(_said(sentence), minilm)] == [sentence]
        assert spot(_said(sentence)) == []  # no phrase rule hears it
    for sentence in CHATTER:
        assert learned_spot(_said(sentence), minilm) == [], sentence


def test_the_layer_weighs_the_rules_memories_too(minilm: LocalEmbedder) -> None:
    kept = "Never commit the .env file to the repo."
    weak = "I don't want another queue in the stack."
    assert [s.text for s in spot(_said(kept))] == [kept]
    assert [s.text for s in spot(_said(weak))] == [weak]  # the rules take both
    assert [s.text for s in learned_spot(_said(kept), minilm)] == [kept]
    alone = [Said("user", weak), Said("assistant", "Ok.")]
    assert [s.text for s in spot(alone)] == [weak]
    assert learned_spot(alone, minilm) == []  # the layer rates it below its threshold


def test_a_classifier_can_be_passed_in(minilm: LocalEmbedder) -> None:
    everything = Classifier(
        shipped().mean, shipped().scale, shipped().weights, -50.0, 0.5, 0.5
    )  # a bias that rates nothing a memory
    assert learned_spot(_said(HEARD[0]), minilm, everything) == []


@pytest.mark.slow
def test_the_shipped_weights_are_what_the_script_fits() -> None:
    """``benchmarks/capture_learn.py --check``: the four labelled sets, refitted, give the
    shipped file byte for byte (and its leave-one-set-out table is printed)."""
    done = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "capture_learn.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "shipped classifier: as --write gives it" in done.stdout
    assert json.loads(CLASSIFIER_FILE.read_text(encoding="utf-8"))["features"] == list(FEATURES)
