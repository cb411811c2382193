"""Would sentence vectors help capture? MiniLM against labelled prototypes (issue 31).

    python benchmarks/bench_capture_vectors.py [--data DIR]

Every prose sentence of the capture sessions (the turns `extract` reads, cut as the rules
cut them; questions and sentences under 20 characters left out) is labelled a memory when
it holds a gold memory's keywords (the matching of bench_capture.py). Each sentence is
embedded with the in-process MiniLM (the model vaultmem ships) and scored against
labelled prototype sentences written for this test, generic and not taken from any
session: ``margin = mean of the 3 best cosines to memory prototypes − mean of the 3
best to non-memory prototypes``. Reported:

- how well the margin alone separates memories from other prose (AUC), for every sentence
  and for the user's alone, and with centroids instead of the 3 best;
- the margin as a *recall* aid: sentences without a cue whose margin clears a bar, and
  how many of those are memories;
- the margin as a *precision* veto: cue sentences below minus the bar, and how many of
  those are memories (lost by a veto).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from bench_capture import DATA, holds, transcript_of  # noqa: E402

from vaultmem.agent.capture_rules import _cue, clean, sentences  # noqa: E402
from vaultmem.agent.extract import turn_chunks  # noqa: E402
from vaultmem.agent.transcript import read_entries  # noqa: E402

MEMORY = [
    "We will use PostgreSQL as the main database.",
    "Go with Kafka for the event bus.",
    "Let's standardise on Terraform for infrastructure.",
    "From now on the API is versioned in the URL path.",
    "We picked Vue over React for the admin panel because the team knows it.",
    "The team agreed to deploy only on weekdays before 3pm.",
    "All services log in JSON format.",
    "Releases are cut from the main branch every two weeks.",
    "Configuration lives in environment-specific YAML files, not in code.",
    "Images are stored in S3, not on the local disk.",
    "I prefer tabs over spaces.",
    "Always write docstrings for public functions.",
    "Please keep functions under fifty lines.",
    "Use type hints everywhere in new code.",
    "I like descriptive variable names more than comments.",
    "Pull requests need one approval before merging.",
    "Never deploy on Friday afternoons.",
    "Don't store passwords in plain text.",
    "Never edit a migration that has already been applied.",
    "Avoid global mutable state; it caused race conditions last year.",
    "The root cause was a missing index on the users table.",
    "The billing service times out when the queue has more than ten thousand messages.",
    "It turns out the SDK caches credentials for an hour.",
    "The staging environment shares its database with QA.",
    "The nightly job takes about forty minutes on the big dataset.",
    "The old client library is not thread safe.",
]
OTHER = [
    "Can you run the tests again?",
    "Let me look at the configuration file.",
    "I'll check the logs first.",
    "Done, all tests pass now.",
    "Here is the updated function.",
    "Thanks, that looks good.",
    "What does this error mean?",
    "Should we add caching here?",
    "If we used Redis we would need another server.",
    "Maybe we could try a different approach.",
    "I updated the file and ran the linter.",
    "The build failed with an import error.",
    "Let's look at the failing test.",
    "Open the settings page and click save.",
    "Next, I'll add the endpoint and a test for it.",
    "That makes sense, thanks for explaining.",
    "Fix the typo in the README.",
    "Rename this variable to something clearer.",
    "Interesting, I didn't know that.",
    "It prints the raw value right now.",
    "The output shows three warnings.",
    "Run it again with verbose logging.",
    "Can you explain how this works?",
    "Good question, let me think.",
    "You should always write tests before fixing a bug.",
    "In general, avoid premature optimization.",
]


def auc(labels: np.ndarray, scores: np.ndarray) -> float:
    """The probability that a memory scores above a non-memory."""
    pos, neg = scores[labels], scores[~labels]
    return float((pos[:, None] > neg[None, :]).mean() + 0.5 * (pos[:, None] == neg[None, :]).mean())


def main() -> None:
    from vaultmem.inference.local import LocalEmbedder

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    args = parser.parse_args()
    rows = []
    for line in (args.data / "gold.jsonl").read_text().splitlines():
        gold = json.loads(line)
        for chunk in turn_chunks(read_entries(transcript_of(args.data, gold["session"]))):
            for turn in chunk.turns:
                for sentence in sentences(turn.text):
                    text = clean(sentence)
                    if len(text) < 20 or text.endswith("?"):
                        continue
                    label = any(holds(text, m["keywords"]) for m in gold["memories"])
                    cue = _cue(text, turn.role) is not None
                    rows.append((turn.role, text, label, cue))
    embedder = LocalEmbedder(threads=1)
    memory, other = np.array(embedder.embed(MEMORY)), np.array(embedder.embed(OTHER))
    vectors = np.array(embedder.embed([r[1] for r in rows]))
    labels = np.array([r[2] for r in rows])
    cues = np.array([r[3] for r in rows])
    users = np.array([r[0] == "user" for r in rows])

    def margin(k: int) -> np.ndarray:
        best_m = np.sort(vectors @ memory.T, axis=1)[:, -k:].mean(1)
        best_o = np.sort(vectors @ other.T, axis=1)[:, -k:].mean(1)
        return best_m - best_o

    m3 = margin(3)
    centroid = vectors @ memory.mean(0) - vectors @ other.mean(0)
    print(f"{args.data.name}: {len(rows)} sentences, {labels.sum()} hold a gold memory")
    print("| score | AUC (all) | AUC (user turns) |")
    print("|---|---:|---:|")
    for name, s in (("3 best", m3), ("1 best", margin(1)), ("centroids", centroid)):
        print(f"| {name} | {auc(labels, s):.3f} | {auc(labels[users], s[users]):.3f} |")
    print(f"\ncues alone: {cues.sum()} sentences, {(cues & labels).sum()} memories")
    print("| bar | added (no cue, margin ≥ bar) | of them memories | vetoed (cue, margin < −bar) "
          "| of them memories |")  # fmt: skip
    print("|---:|---:|---:|---:|---:|")
    for bar in (0.0, 0.05, 0.10, 0.15):
        add, veto = (~cues) & (m3 >= bar), cues & (m3 < -bar)
        print(
            f"| {bar:.2f} | {add.sum()} | {(add & labels).sum()} | {veto.sum()} | "
            f"{(veto & labels).sum()} |"
        )


if __name__ == "__main__":
    main()
