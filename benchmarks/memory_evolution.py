"""Generate the memory-evolution scenario: a few months of an agent's memories and the
questions whose answer is the note that is valid *now*.

    python benchmarks/memory_evolution.py [--seed 12] [--out benchmarks/data/memory_evolution]

Writes ``events.jsonl`` (one memory per line, in time order: ``time``, ``text``,
``title``, ``type``, ``tags``, ``supersedes`` — the title of the note it replaces, or
null) and ``questions.jsonl`` (``qid``, ``question``, ``answer_title``, ``kind`` — why,
when, what or entity —, ``accept_titles``: the answer and the paraphrases of it that a
chatty session wrote, any of which is the current answer, and ``stale_titles``: the
versions it replaced) plus ``scenario.json`` (the seed, the simulated "now" and the
counts). The same seed gives byte-identical files.

What the simulated agent writes, from 2026-08-03 to 2026-11-27 (now = 2026-12-01):

- *chains*: a decision, preference or fact and its later versions (Postgres 14 → 16, tabs
  → 4 spaces, port 8080 → 9090, owner A → B). A new version names the one it replaces
  (``--supersedes``) about two times in three; otherwise the old one stays active — a
  stale near-duplicate that only recency or ``consolidate`` can put behind the new one;
- *chatty duplicates*: a version or a plain fact written again, reworded, 1-3 more times
  within hours of the first;
- *filler*: unrelated observations, progress notes and meeting notes.

Questions use the chain's topic words, which every version shares, never the value that
changed: keyword overlap alone cannot tell the current note from the stale ones.
"""

from __future__ import annotations

import argparse
import json
import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "data" / "memory_evolution"
START = datetime(2026, 8, 3, 9, 0, tzinfo=UTC)
END = datetime(2026, 11, 27, 18, 0, tzinfo=UTC)
NOW = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
SUPERSEDE_SHARE = 0.67  # how often the agent knows it replaces a memory
CHATTY_SHARE = 0.35  # how often a version is written again, reworded


@dataclass
class Version:
    """One version of a memory: its title, its wordings (the first is the canonical
    one, the rest are what a chatty session writes again) and its type and tags."""

    title: str
    texts: list[str]
    type: str
    tags: list[str]


@dataclass
class Chain:
    """A memory that changes over time: versions oldest first, questions about now."""

    versions: list[Version]
    questions: list[tuple[str, str]] = field(default_factory=list)  # (kind, question)


# --------------------------------------------------------------------------- content

SERVICES = ["billing", "ledger", "checkout", "search-api", "notifications", "inventory"]
PEOPLE = [
    "Dana Whitfield",
    "Omar Haddad",
    "Priya Nair",
    "Lukas Brenner",
    "Mei Tanaka",
    "Sofia Marquez",
    "Jonas Eklund",
    "Aisha Bello",
    "Tomás Ruiz",
    "Grace Okafor",
    "Henrik Dahl",
    "Yuki Sato",
]


def db_chain(svc: str, rng: random.Random) -> Chain:
    """Postgres major version of a service, moved once or twice."""
    steps = [(13, "it was what the managed offering defaulted to")]
    if rng.random() < 0.4:
        steps.append((14, "13 leaves vendor support in November"))
    steps.append((16, "logical replication of partitioned tables and faster vacuum"))
    versions = []
    for i, (major, why) in enumerate(steps):
        verb = "use" if i == 0 else "moved to"
        title = f"{svc} database on Postgres {major}"
        texts = [
            f"Decision: we {verb} Postgres {major} for the {svc} service database. Reason: {why}.",
            f"The {svc} service's database {'runs' if i == 0 else 'now runs'} on Postgres "
            f"{major}; we chose it because {why}.",
            f"Reminder for {svc}: the DB is Postgres {major} ({why}).",
            f"Noting again: {svc} data lives in Postgres {major}, because {why}.",
        ]
        versions.append(Version(title, texts, "decision", ["db", svc]))
    questions = [("why", f"Why did we change the Postgres version of the {svc} database?")]
    if svc in ("billing", "checkout", "notifications"):
        questions.insert(
            0, ("what", f"Which Postgres version does the {svc} service database run on?")
        )
    return Chain(versions, questions)


def port_chain(svc: str, rng: random.Random) -> Chain:
    """The port a service listens on, changed once."""
    old, new = rng.choice([(8080, 9090), (8000, 8443), (5000, 7070), (3000, 3100)])
    versions = []
    for i, port in enumerate((old, new)):
        title = f"{svc} listens on port {port}"
        lead = f"The {svc} service listens on port {port}"
        texts = [
            f"{lead}{'.' if i == 0 else ' since the ingress change (it was ' + str(old) + ').'}",
            f"Port for {svc}: {port}. Health checks hit /healthz on that port.",
            f"FYI {svc} is served on port {port} in every environment.",
        ]
        versions.append(Version(title, texts, "note", ["ops", svc]))
    return Chain(
        versions,
        [
            ("what", f"What port does the {svc} service listen on?"),
            ("when", f"When did the {svc} service port change?"),
        ],
    )


def owner_chain(svc: str, old: str, new: str) -> Chain:
    """Who owns a service, handed over once."""
    versions = [
        Version(
            f"{svc} owned by {old}",
            [
                f"{old} owns the {svc} service: page them for incidents and ask them "
                "before schema changes.",
                f"Owner of {svc}: {old}. Reviews and on-call escalations go to them.",
                f"{svc} questions go to {old}, who is its owner.",
            ],
            "note",
            ["ownership", svc],
        ),
        Version(
            f"{svc} ownership handed to {new}",
            [
                f"{new} now owns the {svc} service (handed over from {old}): page {new} "
                "for incidents and schema changes.",
                f"New owner of {svc}: {new}, taking over from {old}.",
                f"{svc} changed hands: {new} is the owner from now on.",
            ],
            "note",
            ["ownership", svc],
        ),
    ]
    return Chain(
        versions,
        [
            ("what", f"Who owns the {svc} service?"),
            ("entity", f"What is {new} responsible for?"),
        ],
    )


def queue_chain(svc: str, rng: random.Random) -> Chain:
    """The message broker of a service, replaced once."""
    old, new, why = rng.choice(
        [
            ("RabbitMQ", "Kafka", "we need replay of the event log for the data team"),
            ("Redis streams", "SQS", "we stopped running our own Redis cluster"),
            ("RabbitMQ", "NATS JetStream", "lower latency and simpler clustering"),
        ]
    )
    versions = [
        Version(
            f"{svc} events over {old}",
            [
                f"Decision: the {svc} service publishes its events over {old}; the team "
                "already knows how to run it.",
                f"{svc} event bus = {old}, chosen because the team knows it.",
            ],
            "decision",
            ["messaging", svc],
        ),
        Version(
            f"{svc} events moved to {new}",
            [
                f"Decision: the {svc} service's events moved from {old} to {new} because {why}.",
                f"We switched the {svc} event bus to {new}: {why}.",
                f"{svc} now publishes events on {new} ({why}).",
            ],
            "decision",
            ["messaging", svc],
        ),
    ]
    return Chain(
        versions,
        [
            ("what", f"Which message broker does the {svc} service publish events on?"),
            ("why", f"Why did the {svc} event bus change?"),
        ],
    )


# (topic, question kind, question, [(title, text, paraphrase), ...] oldest first)
PREFERENCES = [
    (
        "what",
        "How does the user want code indented?",
        [
            (
                "Indent with tabs",
                "The user prefers tabs for indentation in every file.",
                "Indentation preference: tabs, not spaces.",
            ),
            (
                "Indent with 4 spaces",
                "The user now prefers 4 spaces for indentation, "
                "no tabs anymore (changed after the formatter rollout).",
                "Indentation preference changed: 4 spaces instead of tabs.",
            ),
        ],
    ),
    (
        "when",
        "When did the user change the maximum line length they want?",
        [
            (
                "Line length 79",
                "The user wants a maximum line length of 79 characters.",
                "Keep lines at most 79 characters long, per the user.",
            ),
            (
                "Line length 100",
                "The user raised the maximum line length to 100 characters.",
                "Max line length is 100 characters now, the user says.",
            ),
        ],
    ),
    (
        "what",
        "Which test framework style does the user prefer for Python tests?",
        [
            (
                "Tests as unittest classes",
                "The user prefers Python tests written as unittest TestCase classes.",
                "Python test style: unittest classes.",
            ),
            (
                "Tests as plain pytest functions",
                "The user now prefers Python tests as plain "
                "pytest functions with fixtures, no TestCase classes.",
                "Python test style changed to plain pytest functions.",
            ),
        ],
    ),
    (
        "what",
        "How should commit messages be written for the user?",
        [
            (
                "Commit messages free form",
                "The user is fine with free-form commit messages, one line is enough.",
                "Commit message style: free form, one line.",
            ),
            (
                "Commit messages conventional",
                "The user wants conventional commit messages "
                "(feat:, fix:, chore:) with a body explaining why.",
                "Commit message style: conventional commits with a why-body.",
            ),
        ],
    ),
    (
        "what",
        "Which package manager does the user want for Python projects?",
        [
            (
                "Python deps with pip-tools",
                "The user manages Python dependencies with "
                "pip-tools (requirements.in compiled to requirements.txt).",
                "Python package manager preference: pip-tools.",
            ),
            (
                "Python deps with poetry",
                "The user switched Python dependency management to poetry.",
                "Python package manager preference: poetry now.",
            ),
            (
                "Python deps with uv",
                "The user now manages Python dependencies with uv; poetry is gone from every repo.",
                "Python package manager preference: uv.",
            ),
        ],
    ),
    (
        "what",
        "How does the user want dates formatted in reports?",
        [
            (
                "Dates as day-month-year",
                "The user wants dates in reports written DD/MM/YYYY.",
                "Report date format: DD/MM/YYYY.",
            ),
            (
                "Dates as ISO 8601",
                "The user now wants dates in reports as ISO 8601 (YYYY-MM-DD), for sorting.",
                "Report date format changed to ISO 8601.",
            ),
        ],
    ),
    (
        "when",
        "When did the user change the answer length they prefer from the assistant?",
        [
            (
                "Answers detailed",
                "The user prefers detailed answers with full explanations.",
                "Answer length preference: detailed explanations.",
            ),
            (
                "Answers short",
                "The user now prefers short answers: the result first, details only when asked.",
                "Answer length preference: short, result first.",
            ),
        ],
    ),
    (
        "what",
        "Which editor theme does the user use when pairing?",
        [
            (
                "Pairing theme light",
                "When pairing the user uses a light editor theme.",
                "Editor theme for pairing: light.",
            ),
            (
                "Pairing theme dark",
                "The user switched to a dark editor theme for pairing sessions.",
                "Editor theme for pairing: dark now.",
            ),
        ],
    ),
]

# Team-wide decisions, superseded once or twice: (why-question, what-question, versions).
DECISIONS = [
    (
        "Why did we change the CI system we deploy with?",
        "Which CI system runs our deploy pipeline?",
        [
            (
                "Deploys run on Jenkins",
                "Decision: the deploy pipeline runs on Jenkins; "
                "it already builds every repository.",
                "Our deploys go through Jenkins.",
            ),
            (
                "Deploys moved to GitHub Actions",
                "Decision: the deploy pipeline moved from "
                "Jenkins to GitHub Actions because Jenkins agents kept breaking and Actions "
                "needs no servers.",
                "Deploy pipeline is GitHub Actions now (Jenkins retired).",
            ),
        ],
    ),
    (
        "Why did we change the shared cache?",
        "Which cache server do the services share?",
        [
            (
                "Shared cache on memcached",
                "Decision: services share a memcached cluster for caching.",
                "Shared caching layer: memcached.",
            ),
            (
                "Shared cache on Redis",
                "Decision: the shared cache moved from memcached to "
                "Redis because we need TTL per key family and pub/sub invalidation.",
                "Shared caching layer is Redis now, for per-key TTL and invalidation.",
            ),
        ],
    ),
    (
        "Why did we change where logs are shipped?",
        "Where are application logs shipped?",
        [
            (
                "Logs shipped to ELK",
                "Decision: application logs are shipped to our self-hosted ELK stack.",
                "Application logs go to ELK.",
            ),
            (
                "Logs shipped to Loki",
                "Decision: application logs are shipped to Grafana Loki; ELK cost too much disk.",
                "Application logs go to Loki now.",
            ),
            (
                "Logs shipped to Datadog",
                "Decision: application logs are shipped to Datadog; "
                "Loki queries were too slow for incident work.",
                "Application logs go to Datadog now, Loki was too slow.",
            ),
        ],
    ),
    (
        "Why did we change the release cadence?",
        "How often do we release?",
        [
            (
                "Release every two weeks",
                "Decision: we release every two weeks on Tuesday.",
                "Release cadence: biweekly, Tuesdays.",
            ),
            (
                "Release continuously",
                "Decision: we release continuously, every merge to main "
                "ships, since the biweekly train kept slipping.",
                "Release cadence: continuous, each merge to main ships.",
            ),
        ],
    ),
    (
        "Why did we change the API versioning scheme?",
        "How are public API versions expressed?",
        [
            (
                "API version in URL path",
                "Decision: the public API carries its version in the URL path (/v1/...).",
                "Public API versioning: /v1 in the path.",
            ),
            (
                "API version in header",
                "Decision: the public API version moved from the URL "
                "path to an Api-Version date header, so clients can pin a version per call.",
                "Public API versioning: Api-Version header now.",
            ),
        ],
    ),
]

# Facts written by chatty sessions, never superseded: (question, title, [wordings]).
DUPLICATES = [
    (
        "When is the staging database reset?",
        "Staging database reset schedule",
        [
            "The staging database is reset every Sunday at 02:00 UTC.",
            "Staging DB gets wiped and reseeded Sundays 02:00 UTC.",
            "Heads-up: staging database reset happens each Sunday at 2am UTC.",
            "Every Sunday at 02:00 UTC the staging database is reset from the seed dump.",
        ],
    ),
    (
        "Where do feature flags live?",
        "Feature flags in LaunchDarkly",
        [
            "Feature flags live in LaunchDarkly, project 'core'.",
            "We keep feature flags in LaunchDarkly (the core project).",
            "LaunchDarkly core project holds all feature flags.",
        ],
    ),
    (
        "How do I start the local development stack?",
        "Local dev stack with make dev",
        [
            "Start the local stack with `make dev`; it runs docker compose with hot reload.",
            "Local dev stack: run make dev (docker compose, hot reload).",
            "To bring up the local development stack use `make dev`.",
        ],
    ),
    (
        "Which VPN profile is needed for the production bastion?",
        "Production bastion VPN profile",
        [
            "The production bastion needs the 'ops-prod' VPN profile.",
            "Use VPN profile ops-prod to reach the production bastion host.",
            "Bastion in production is only reachable on the ops-prod VPN profile.",
        ],
    ),
    (
        "What is the on-call handover time?",
        "On-call handover time",
        [
            "On-call hands over every Monday at 10:00 local time.",
            "The on-call rotation switches Mondays at 10am.",
            "On-call handover: Monday 10:00.",
        ],
    ),
    (
        "Where are database backups stored?",
        "Database backups location",
        [
            "Database backups go to the s3://acme-backups bucket, kept 35 days.",
            "DB backups: s3 bucket acme-backups, 35-day retention.",
            "Backups of the databases are stored in acme-backups on S3 for 35 days.",
            "Reminder: database backup retention is 35 days in s3://acme-backups.",
        ],
    ),
    (
        "What is the code review rule for merges?",
        "Code review rule for merges",
        [
            "Every merge to main needs one approving review and green CI.",
            "Merging to main requires green CI plus one approval.",
            "Code review rule: one approval and passing CI before merge to main.",
        ],
    ),
    (
        "Where is the incident runbook?",
        "Incident runbook location",
        [
            "The incident runbook is the 'Incident response' page in the ops wiki.",
            "Runbook for incidents: ops wiki, page 'Incident response'.",
            "Look for incident steps in the ops wiki page called Incident response.",
        ],
    ),
]

FILLER_SUBJECTS = [
    "the flaky login test",
    "the nightly export",
    "the onboarding doc",
    "the grafana alert",
    "the docker base image",
    "the terraform plan",
    "the sprint retro",
    "the design review",
    "the customer call",
    "the load test",
    "the TLS certificate",
    "the dependency audit",
    "the search relevance tweak",
    "the mobile build",
    "the data warehouse sync",
    "the cost report",
    "the interview loop",
    "the accessibility audit",
    "the SDK release",
    "the schema migration dry run",
]
FILLER_OUTCOMES = [
    "went fine, nothing to follow up",
    "needs a second pass next week",
    "was blocked on a missing permission",
    "turned up two small bugs, both filed",
    "took longer than planned",
    "is done and documented",
    "was postponed to next sprint",
    "surfaced a question for the architecture group",
    "ran green after a retry",
    "needs a decision from product",
]
FILLER_DETAILS = [
    "Notes are in the team channel.",
    "Tracked in the board.",
    "Timebox was an hour.",
    "Pairing with a colleague helped.",
    "Logs attached to the ticket.",
    "Will revisit if it recurs.",
    "No customer impact.",
    "Metrics looked normal.",
]


# --------------------------------------------------------------------------- build


def chains(rng: random.Random) -> list[Chain]:
    """Every changing memory of the scenario."""
    out: list[Chain] = []
    for svc in SERVICES[:5]:
        out.append(db_chain(svc, rng))
    for svc in SERVICES[1:6]:
        out.append(port_chain(svc, rng))
    people = PEOPLE[:]
    rng.shuffle(people)
    # A later owner may have been an earlier owner elsewhere: the entity question must
    # still find the note where they own something now.
    for i, svc in enumerate(SERVICES[:5]):
        out.append(owner_chain(svc, people[i + 1] if i % 2 else people[i + 6], people[i]))
    for svc in ("checkout", "notifications", "inventory"):
        out.append(queue_chain(svc, rng))
    for kind, question, steps in PREFERENCES:
        versions = [Version(t, [a, b], "preference", ["preference"]) for t, a, b in steps]
        out.append(Chain(versions, [(kind, question)]))
    for why_q, what_q, steps in DECISIONS:
        versions = [Version(t, [a, b], "decision", ["team"]) for t, a, b in steps]
        out.append(Chain(versions, [("why", why_q), ("what", what_q)]))
    return out


def _stamp(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def _chatty(rng: random.Random, version: Version, start: datetime, force: bool) -> list[dict]:
    """The version as first written, and (sometimes) its rewordings hours later."""
    extra = 0
    if force or rng.random() < CHATTY_SHARE:
        extra = rng.randint(1, len(version.texts) - 1)
    events = []
    t = start
    for k in range(extra + 1):
        title = version.title if k == 0 else f"{version.title} (note {k + 1})"
        events.append(
            {
                "time": _stamp(t),
                "text": version.texts[k],
                "title": title,
                "type": version.type,
                "tags": version.tags,
                "supersedes": None,
            }
        )
        t += timedelta(minutes=rng.randint(7, 240))
    return events


def build(seed: int) -> tuple[list[dict], list[dict]]:
    """(events in time order, questions) of the scenario for ``seed``."""
    rng = random.Random(seed)
    span = (END - START).total_seconds()
    events: list[dict] = []
    questions: list[dict] = []
    for chain in chains(rng):
        n = len(chain.versions)
        # Versions spread over the months, the last one at least three weeks before now.
        cuts = sorted(rng.uniform(0, span * 0.8) for _ in range(n))
        times = [START + timedelta(seconds=c + i * span * 0.2 / n) for i, c in enumerate(cuts)]
        last_titles: list[str] = []
        stale: list[str] = []
        for i, version in enumerate(chain.versions):
            written = _chatty(rng, version, times[i], force=False)
            if i and rng.random() < SUPERSEDE_SHARE:
                written[0]["supersedes"] = chain.versions[i - 1].title
            events.extend(written)
            stale += last_titles
            last_titles = [e["title"] for e in written]
        for kind, question in chain.questions:
            questions.append(
                {
                    "question": question,
                    "answer_title": chain.versions[-1].title,
                    "accept_titles": last_titles,
                    "stale_titles": stale,
                    "kind": kind,
                }
            )
    for question, title, texts in DUPLICATES:
        version = Version(title, texts, "note", ["team"])
        written = _chatty(rng, version, START + timedelta(seconds=rng.uniform(0, span)), True)
        events.extend(written)
        questions.append(
            {
                "question": question,
                "answer_title": title,
                "accept_titles": [e["title"] for e in written],
                "stale_titles": [],
                "kind": "what",
            }
        )
    events.extend(filler(rng, span))
    events.sort(key=lambda e: (e["time"], e["title"]))
    titles = [e["title"].lower() for e in events]
    if len(set(titles)) != len(titles):
        raise SystemExit("duplicate titles in the scenario")
    for i, q in enumerate(questions, 1):
        q["qid"] = f"q{i:02d}"
    return events, [_ordered(q) for q in questions]


def filler(rng: random.Random, span: float, n: int = 70) -> list[dict]:
    """Unrelated observations, progress and meeting notes."""
    out: list[dict] = []
    seen: set[tuple[int, int]] = set()
    while len(out) < n:
        s, o = rng.randrange(len(FILLER_SUBJECTS)), rng.randrange(len(FILLER_OUTCOMES))
        if (s, o) in seen:
            continue
        seen.add((s, o))
        subject = FILLER_SUBJECTS[s]
        t = START + timedelta(seconds=rng.uniform(0, span))
        kind = rng.choice(["observation", "progress", "note"])
        out.append(
            {
                "time": _stamp(t),
                "text": f"{subject[0].upper()}{subject[1:]} {FILLER_OUTCOMES[o]}. "
                f"{rng.choice(FILLER_DETAILS)}",
                "title": f"{subject.removeprefix('the ').capitalize()} {t:%b %d} ({len(out) + 1})",
                "type": kind,
                "tags": ["log"],
                "supersedes": None,
            }
        )
    return out


def _ordered(q: dict) -> dict:
    keys = ("qid", "question", "answer_title", "kind", "accept_titles", "stale_titles")
    return {k: q[k] for k in keys}


def write(out: Path, seed: int) -> dict:
    """Write the scenario's files under ``out``; returns its summary."""
    events, questions = build(seed)
    out.mkdir(parents=True, exist_ok=True)
    (out / "events.jsonl").write_text(
        "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in events)
    )
    (out / "questions.jsonl").write_text(
        "".join(json.dumps(q, ensure_ascii=False) + "\n" for q in questions)
    )
    kinds: dict[str, int] = {}
    for q in questions:
        kinds[q["kind"]] = kinds.get(q["kind"], 0) + 1
    summary = {
        "seed": seed,
        "now": _stamp(NOW),
        "memories": len(events),
        "with_supersedes": sum(1 for e in events if e["supersedes"]),
        "rewordings": sum(1 for e in events if e["title"].endswith(")") and "(note " in e["title"]),
        "replaced_versions": len({t for q in questions for t in q["stale_titles"]}),
        "filler": sum(1 for e in events if e["tags"] == ["log"]),
        "questions": len(questions),
        "question_kinds": dict(sorted(kinds.items())),
    }
    (out / "scenario.json").write_text(json.dumps(summary, indent=1) + "\n")
    return summary


def main() -> None:
    """Command line: write the scenario and print its summary."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=12)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    print(json.dumps(write(args.out, args.seed)))


if __name__ == "__main__":
    main()
