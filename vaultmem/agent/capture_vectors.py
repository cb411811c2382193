"""The semantic capture layer of `extract`: sentences that sound like a memory.

Since round 4 of issue 31, `extract` runs the learned layer
(:mod:`vaultmem.agent.capture_learned`), which takes this module's verdict on a
sentence's frame (:func:`frame_vectors`, :func:`scored`) as one of its features and its
nearest prototype class as the memory's kind; :func:`semantic_spotted` is the layer as
it was, kept for the comparison in ``benchmarks/capture_learn.py``.

The phrase rules (:mod:`vaultmem.agent.capture_rules`) hear a memory by its cue words;
people say memories in ways no cue list anticipates ("ledger entries are append-only,
corrections are new rows"). This layer hears them by how they are said.
Labelled prototype sentences ship in ``data/capture_prototypes.json``: durable
decisions, conventions, preferences, antipatterns and project facts on one side;
questions, hypotheticals, rejected options, requests for work, problem reports, status
chatter, narration and thanks on the other (English, German, Spanish, French,
Portuguese, Italian).

MiniLM's vector of a whole sentence says mostly what it is about, so each sentence is
embedded as its *frame* (:func:`frame`): the words that recur across the prototypes
("from now on", "never", "we", "can you", "should") kept, every other word replaced by
``X``. A logistic regression fitted on the prototypes' frame vectors (once per process
and model, deterministic) gives each candidate the chance that it is a memory; its kind
is that of the nearest prototype class. A sentence is taken at :data:`THRESHOLD`
(:data:`FOREIGN_THRESHOLD` for one that is not English: MiniLM is an English model, and
the rules stay the main ear for other languages). Both were chosen on the own and round-1
capture sets and checked on the round-2 set (BENCHMARKS.md).

The candidates are only what people say: the user's own sentences, and those of an
assistant's proposal the user accepts right after ("yes, do that", "ok", "go ahead"),
never the assistant's narration, plans or advice, tool output, code blocks, tables, ``>``
quotes or quoted text, and
never a question, a hypothetical, a request for work, a report of what a document says,
a cue said in the negative, a retraction, or an instruction about this moment (the
rules' filters), nor a sentence a phrase rule already takes. The sentence that gives
a capture's reason ("because…", "it's…") stays with it. A decision the user takes
back later is dropped by the rules' own reversal check
(:func:`vaultmem.agent.capture_rules.spot`). Every candidate is embedded once, in one
batch per chunk.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vaultmem.agent.capture_rules import (
    _ACCEPT_RE,
    _ADVICE_RE,
    _HYPOTHETICAL_RE,
    _MOMENT_RE,
    _NEGATED_RE,
    _QUOTED_RE,
    _REPORTED_RE,
    _RETRACT_RE,
    _SUGGEST_RE,
    MAX_CHARS,
    MIN_CHARS,
    Said,
    Spotted,
    _codey,
    _cue,
    _end,
    _follows,
    _question,
    clean,
    sentences,
)

if TYPE_CHECKING:
    from vaultmem.config import Config
    from vaultmem.inference.base import Embedder

__all__ = [
    "FOREIGN_THRESHOLD",
    "THRESHOLD",
    "Prototypes",
    "Scored",
    "candidates",
    "capture_embedder",
    "classify",
    "frame_vectors",
    "prototypes",
    "scored",
    "semantic_spotted",
]

PROTOTYPES_FILE = Path(__file__).resolve().parent.parent / "data" / "capture_prototypes.json"
NOT = "not"  # the class of what is said but is no memory
TOP = 3  # a class's score: the mean similarity of its TOP nearest prototypes
FRAME_COUNT = 4  # a frame word is in at least this many prototypes
THRESHOLD = 0.8  # the classifier's probability a sentence must reach
FOREIGN_THRESHOLD = 0.9  # ... when it is not English
MIN_WORDS = 4
_WORD_RE = re.compile(r"[\w'’]+")

# Asking for work, not stating how things are: "can you…", "please fix…", "add a test".
_REQUEST_RE = re.compile(
    r"^(?:(?:can|could|would|will) you|please (?!always|never|don'?t|do not|keep|prefer|use)|"
    r"kannst du|könntest du|puedes|podrías|tu peux|pourrais-tu|você pode|pode|puoi|potresti)\b",
    re.IGNORECASE,
)
# Short words frequent in each language of the prototypes and rare in the others.
_STOP_WORDS = {
    "en": "the a an is are was we our it to of in on for with and not this that be by "
    "as at from should must don't do only no never always",
    "de": "der die das und ist nicht wir ich mit für auf bei ein eine zu von den dem im "
    "es sind wird kein keine nie immer nur",
    "es": "el la los las y es no que para por con en una un se lo del al son nunca siempre",
    "fr": "le la les et est pas que pour avec dans une un des du on nous je ce c'est au "
    "sur jamais toujours",
    "pt": "o a os as e é não que para com em uma um do da no na dos das nunca sempre",
    "it": "il lo la gli le e è non che per con una un di del della nel sono mai sempre",
}
_STOPS = {lang: frozenset(words.split()) for lang, words in _STOP_WORDS.items()}


@dataclass(frozen=True)
class Candidate:
    """A sentence a person said that may be a memory: its turn and cleaned text."""

    turn: int
    text: str
    reason: str = ""  # the sentence after it that gives its reason, kept with it


@dataclass(frozen=True)
class Scored:
    """A candidate's nearest memory class, its kind, and how likely it is a memory."""

    label: str
    kind: str
    score: float  # the classifier's probability that the sentence is a memory
    english: bool

    @property
    def memory(self) -> bool:
        """Whether the sentence is taken for a memory."""
        return self.score >= (THRESHOLD if self.english else FOREIGN_THRESHOLD)


@dataclass(frozen=True)
class Prototypes:
    """The labelled sentences: their texts, class per row, and memory kind per class."""

    texts: tuple[str, ...]
    labels: tuple[str, ...]
    kinds: dict[str, str]

    @property
    def frame_words(self) -> frozenset[str]:
        """The words of :data:`FRAME_COUNT` prototypes or more: how people say a thing
        ("from now on", "we decided", "never", "can you"), not what it is about."""
        counts: Counter[str] = Counter()
        for text in self.texts:
            counts.update(set(_WORD_RE.findall(text.lower())))
        return frozenset(w for w, n in counts.items() if n >= FRAME_COUNT)


@lru_cache(maxsize=1)
def prototypes() -> Prototypes:
    """The shipped prototypes (``data/capture_prototypes.json``)."""
    data = json.loads(PROTOTYPES_FILE.read_text(encoding="utf-8"))
    kinds: dict[str, str] = data["kinds"]
    texts: list[str] = []
    labels: list[str] = []
    for label in [*kinds, NOT]:
        for text in data[label]:
            texts.append(text)
            labels.append(label)
    return Prototypes(tuple(texts), tuple(labels), kinds)


def frame(text: str, words: frozenset[str]) -> str:
    """``text`` with every word that is not a frame word replaced by ``X``: "From now on
    use ruff, not black" reads "From now on use X, not X". MiniLM's vector of a whole
    sentence is mostly its topic; of the frame, mostly what the speaker does with it."""
    return _WORD_RE.sub(lambda m: m.group(0) if m.group(0).lower() in words else "X", text)


@dataclass(frozen=True)
class _Model:
    """The prototypes' frame vectors and a logistic regression fitted on them."""

    words: frozenset[str]
    matrix: Any  # numpy array, one frame vector per prototype
    weights: Any
    bias: float


_models: dict[str, _Model] = {}  # model_id -> the fitted classifier, once per process


def _model(embedder: Embedder) -> _Model:
    import numpy as np

    found = _models.get(embedder.model_id)
    if found is None:
        protos = prototypes()
        words = protos.frame_words
        matrix = np.asarray(
            embedder.embed([frame(t, words) for t in protos.texts]), dtype=np.float64
        )
        memory = np.asarray([label != NOT for label in protos.labels], dtype=np.float64)
        weights, bias = fit(matrix, memory)
        found = _Model(words, matrix, weights, bias)
        _models[embedder.model_id] = found
    return found


def fit(
    x: Any, y: Any, *, steps: int = 2000, rate: float = 0.5, l2: float = 0.001
) -> tuple[Any, float]:
    """Weights and bias of a logistic regression of ``y`` (0/1) on the rows of ``x``,
    by gradient descent with both classes weighted alike (deterministic)."""
    import numpy as np

    weights = np.zeros(x.shape[1])
    bias = 0.0
    share = float(y.mean())
    balance = np.where(y == 1, 0.5 / share, 0.5 / (1 - share))
    for _ in range(steps):
        error = (1 / (1 + np.exp(-(x @ weights + bias))) - y) * balance
        weights -= rate * (x.T @ error / len(y) + l2 * weights)
        bias -= rate * float(error.mean())
    return weights, bias


# --------------------------------------------------------------------------- candidates


def admissible(sentence: str) -> bool:
    """Whether a user's (cleaned) sentence may be a memory at all: prose of a sensible
    length, not code, not a question, a hypothetical, a request for work, a report of
    what someone or some document says, quoted text, a cue in the negative ("we haven't
    decided"), a retraction, or an instruction about this moment."""
    if not MIN_CHARS <= len(sentence) <= MAX_CHARS or _codey(sentence):
        return False
    if len(sentence.split()) < MIN_WORDS or _question(sentence):
        return False
    if _HYPOTHETICAL_RE.search(sentence) or re.search(r"\w'd\b", sentence):
        return False
    checks = (_REQUEST_RE, _REPORTED_RE, _NEGATED_RE, _RETRACT_RE, _MOMENT_RE)
    if any(pattern.search(sentence) for pattern in checks):
        return False
    quoted = sum(len(m.group(0)) for m in _QUOTED_RE.finditer(sentence))
    return quoted < len(sentence) / 3


def _accepted_turn(turns: Sequence[Said], index: int) -> bool:
    """Whether turn ``index`` is the assistant's, answered by the user's "yes, do that"."""
    return (
        turns[index].role == "assistant"
        and index + 1 < len(turns)
        and turns[index + 1].role == "user"
        and _ACCEPT_RE.match(turns[index + 1].text.strip()) is not None
    )


def _taken(sentence: str, role: str) -> bool:
    """Whether the rules take ``sentence`` (a cue of the user's; an assistant's "I
    suggest…" that the user accepts), or it is the assistant's plan or advice ("I'll…",
    "you could…"), which nobody accepted as a memory."""
    if role == "user":
        return _cue(sentence, "user") is not None
    return bool(_SUGGEST_RE.search(sentence) or _ADVICE_RE.search(sentence))


def candidates(turns: Sequence[Said]) -> list[Candidate]:
    """The sentences of the user's turns, and of an assistant's turn the user accepts in
    a word or two, that may be memories and that no phrase rule already takes (those are
    the rules' to capture)."""
    found: list[Candidate] = []
    for index, turn in enumerate(turns):
        if turn.role != "user" and not _accepted_turn(turns, index):
            continue
        said = [clean(s) for s in sentences(turn.text)]
        reason = ""
        for i, text in enumerate(said):
            if text == reason or not admissible(text) or _taken(text, turn.role):
                reason = ""
                continue  # a reason joined to the sentence before is not a candidate
            after = said[i + 1] if i + 1 < len(said) else ""
            reason = after if after and _follows(text, after) else ""
            found.append(Candidate(index, text, reason))
    return found


# --------------------------------------------------------------------------- scoring


def english(text: str) -> bool:
    """Whether ``text`` reads as English: no other language's common short words
    outnumber English ones (a sentence with none of them counts as English)."""
    words = _WORD_RE.findall(text.lower())
    counts = {lang: sum(1 for w in words if w in stops) for lang, stops in _STOPS.items()}
    return counts["en"] >= max(counts.values())


def classify(texts: Sequence[str], embedder: Embedder) -> list[Scored]:
    """Each text's chance of being a memory and its nearest memory class, from one
    batch of embeddings (of the texts' frames, :func:`frame`)."""
    return scored(texts, frame_vectors(texts, embedder), embedder)


def frame_vectors(texts: Sequence[str], embedder: Embedder) -> Any:
    """The MiniLM vectors of the texts' frames (:func:`frame`), one numpy row each."""
    import numpy as np

    if not texts:
        return np.zeros((0, embedder.dimension))
    words = _model(embedder).words
    return np.asarray(embedder.embed([frame(t, words) for t in texts]), dtype=np.float64)


def scored(texts: Sequence[str], vectors: Any, embedder: Embedder) -> list[Scored]:
    """The prototypes' verdict on each text from its frame vector (:func:`frame_vectors`):
    the chance it is a memory, and its nearest memory class."""
    import numpy as np

    if not texts:
        return []
    protos = prototypes()
    model = _model(embedder)
    scores = 1 / (1 + np.exp(-(vectors @ model.weights + model.bias)))
    sims = vectors @ model.matrix.T
    labels = np.asarray(protos.labels)
    classes = list(protos.kinds)
    per_class = np.stack(
        [np.sort(sims[:, labels == label], axis=1)[:, -TOP:].mean(axis=1) for label in classes],
        axis=1,
    )
    out: list[Scored] = []
    for text, score, row in zip(texts, scores, per_class, strict=True):
        label = classes[int(np.argmax(row))]
        out.append(Scored(label, protos.kinds[label], float(score), english(text)))
    return out


def semantic_spotted(turns: Sequence[Said], embedder: Embedder) -> list[Spotted]:
    """The user's sentences in ``turns`` that the prototypes take for memories and the
    rules miss, as the rules' :class:`Spotted` (cue ``semantic:<class>``)."""
    found = candidates(turns)
    scored = classify([c.text for c in found], embedder)
    return [
        Spotted(
            s.kind,
            f"{_end(c.text)} {c.reason}" if c.reason else c.text,
            c.turn,
            f"semantic:{s.label}",
        )
        for c, s in zip(found, scored, strict=True)
        if s.memory
    ]


def capture_embedder(config: Config, embedder: Embedder | None = None) -> Embedder | None:
    """The embedder the semantic layer runs on: None when ``[capture] semantic`` is off;
    ``embedder`` when it is the in-process MiniLM (one model loaded per process); else
    a new in-process MiniLM (the prototypes are calibrated on that model, not on an
    endpoint's). Nothing is loaded here."""
    from vaultmem.inference.local import LocalEmbedder

    if not config.capture_semantic:
        return None
    if isinstance(embedder, LocalEmbedder):
        return embedder
    role = config.embed
    return LocalEmbedder(cache_dir=config.cache_dir, int8=role.int8, prepared=role.prepared)
