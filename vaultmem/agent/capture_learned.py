"""The learned capture layer of `extract`: which of what people say is a memory.

The phrase rules (:mod:`vaultmem.agent.capture_rules`) hear memories by their cue words;
the semantic layer (:mod:`vaultmem.agent.capture_vectors`) by how a sentence is framed.
This layer weighs both, with the shape of the conversation around a sentence, in one
logistic regression whose weights ship as data (``data/capture_classifier.json``).
They are fitted by ``benchmarks/capture_learn.py`` on the labelled capture sets, and
the operating point (:attr:`Classifier.threshold`) is chosen there by leave-one-set-out
evaluation: fitted on all sets but one, scored on that one (BENCHMARKS.md).

A candidate is a sentence of the user's (or of an assistant's turn the user accepts in
a word or two) that no phrase rule takes, of a sensible length and not code. What the
rules filter out for good (questions, hypotheticals, requests for work, reports of what
a document says, retractions, instructions about this moment, quoted text) are features
here, with the sentence's frame (:func:`vaultmem.agent.capture_vectors.frame`) and the
prototypes' verdict on it, its cues (we, always/never, must, negation, numbers, names
of things), who speaks and what came just before (an assistant's question) and after
(the assistant echoing it, the user taking it back), and where it sits in the session.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vaultmem.agent.capture_rules import (
    _HYPOTHETICAL_RE,
    _MOMENT_RE,
    _NEGATED_RE,
    _QUOTED_RE,
    _REPORTED_RE,
    _RETRACT_RE,
    MAX_CHARS,
    MIN_CHARS,
    Said,
    Spotted,
    _accepted,
    _codey,
    _end,
    _follows,
    _question,
    _reversed,
    _takes_back,
    clean,
    rule_sentences,
    sentences,
)
from vaultmem.agent.capture_vectors import (
    _REQUEST_RE,
    Scored,
    _accepted_turn,
    _taken,
    frame_vectors,
    scored,
)
from vaultmem.subjects import content_words

if TYPE_CHECKING:
    from vaultmem.inference.base import Embedder

__all__ = ["FEATURES", "Classifier", "Sentence", "features", "learned_spot", "settle", "shipped"]

CLASSIFIER_FILE = Path(__file__).resolve().parent.parent / "data" / "capture_classifier.json"
_WORD_RE = re.compile(r"[\w'’]+")
_UNSPACED_RE = re.compile(r"[\u0e00-\u0e7f\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")
_WE_RE = re.compile(
    r"\b(?:we|we'?re|we'?ll|our|us|let'?s|wir|unser\w*|nosotros|vamos|nuestr[oa]s?|nous|"
    r"notre|nos|on|nós|nosso|nossa|noi|nostr[oiae]|wij|ons|onze)\b|私たち|我们|我們",
    re.IGNORECASE,
)
_ALWAYS_RE = re.compile(
    r"\b(?:always|never|every|only|any|all|from now on|going forward|by default|immer|nie|"
    r"niemals|jede[rsnm]?|nur|siempre|nunca|jamás|solo|todos?|toujours|jamais|seulement|"
    r"tous|sempre|apenas|mai|ogni|soltanto|altijd|nooit|alleen|elke?|ever|everywhere|"
    r"anywhere|anything|in this (?:codebase|repo|project|team)|überall|jemals|"
    r"en (?:todo|ningún) |partout|nulle part|em todo|ovunque|overal)\b|"
    r"必ず|常に|絶対|すべて|总是|永远|一律|所有",
    re.IGNORECASE,
)
_MUST_RE = re.compile(
    r"\b(?:must|need to|needs to|have to|has to|should|shall|required?|muss|müssen|soll|"
    r"sollen|debe|deben|hay que|tiene que|doit|doivent|il faut|deve|devem|tem que|"
    r"bisogna|devono|moet|moeten)\b|必要|べき|必须|應該|应该",
    re.IGNORECASE,
)
_NEGATION_RE = re.compile(
    r"\b(?:no|not|never|don'?t|doesn'?t|isn'?t|aren'?t|won'?t|nicht|kein\w*|nie|no|nunca|"
    r"ne|pas|jamais|não|non|mai|niet|geen)\b|ない|不|没|別",
    re.IGNORECASE,
)
# A sentence that opens with a negative: "no select star under marts/", "never …".
_NEGATIVE_START_RE = re.compile(
    r"^(?:no|never|don'?t|do not|nothing|nicht|nie|kein\w*|keine|nunca|nada|ne|jamais|"
    r"pas de|não|nem|non|mai|niet|geen|nooit)\b",
    re.IGNORECASE,
)
# A choice closed in a word: "Polars it is", "fine, Oban then", "settled".
_CLOSED_RE = re.compile(
    r"\bit is\b[^,;]{0,20}$|\bthen[.!]?$|^(?:fine|ok(?:ay)?|alright|right)\b|"
    r"\b(?:settled|final(?:ly)?|decided|entschieden|decidido|décidé|decidido|besloten)\b",
    re.IGNORECASE,
)
# What a speaker flags as worth knowing: "heads up", "for the record", "FYI".
_FLAGGED_RE = re.compile(
    r"^(?:heads up|for the record|fyi|note|just so you know|keep in mind|remember|"
    r"important|zur info|wichtig|ojo|para que sepas|importante|pour info|à noter|attention|"
    r"nota|atenção|attenzione|let op|ter info)\b",
    re.IGNORECASE,
)
# Someone else's view, reported: "Dave thinks …", "Priya wants …", "people keep asking".
_THIRD_PARTY_RE = re.compile(
    r"\b[A-Z][a-z]+(?: from \w+)? (?:thinks|wants|says|said|asked|suggests|suggested|"
    r"mentioned|keeps)\b|\b(?:people|players|users|customers|someone|they) (?:keep|are|say)\b"
)
# A piece of work for now: "can you look at …", "fix that test", "bump the version".
_TASK_RE = re.compile(
    r"^(?:(?:can|could) you|look at|have a look|take a look|fix|run|add|check|start|bump|"
    r"set|skip|show|tell|try|make|write|update|commit|push|rename|move|delete|remove|"
    r"open|need an? |i (?:want|need) (?:to|a)|do the|let me know|schau|mach|prüf|revisa|"
    r"arregla|mira|regarde|corrige|vérifie|verifica|olha|corrija|guarda|controlla|"
    r"kijk|maak|fix)\b",
    re.IGNORECASE,
)
_SELF_RE = re.compile(r"\b(?:i|i'?m|i'?ve|i was|me|ich|yo|je|j'ai|eu|io)\b", re.IGNORECASE)
_THING_RE = re.compile(r"`[^`]+`|\b[A-Z][a-z]+[A-Z]\w*|\b\w+_\w+|\b\w+\.\w+\b|/\w+")
_PAST_RE = re.compile(
    r"\b(?:was|were|did|had|yesterday|last (?:week|night|time)|earlier|just now|"
    r"war|hatte|gestern|fue|ayer|était|hier|foi|ontem|era|ieri)\b",
    re.IGNORECASE,
)

FEATURES: tuple[str, ...] = (
    "prototypes",
    "english",
    "accepted",
    "reason",
    "question",
    "hypothetical",
    "request",
    "reported",
    "negated_cue",
    "retraction",
    "moment",
    "quoted",
    "we",
    "always",
    "must",
    "negation",
    "self",
    "past",
    "digit",
    "things",
    "words",
    "unspaced",
    "position",
    "first_in_turn",
    "turn_sentences",
    "after_question",
    "echoed",
    "taken_back",
    "exclaims",
    "colon",
    "negative_start",
    "closed",
    "flagged",
    "third_party",
    "task",
    "rule",
    "rule_decision",
    "rule_preference",
    "rule_antipattern",
    "rule_observation",
)
_RULE_KINDS = ("decision", "preference", "antipattern", "observation")


@dataclass(frozen=True)
class Sentence:
    """A candidate (or a rule's memory): its turn, cleaned text, the reason said after
    it, and its :data:`FEATURES`."""

    turn: int
    text: str
    reason: str
    cues: tuple[float, ...]

    @property
    def memory_text(self) -> str:
        """The text a capture of it holds: the sentence and its reason."""
        return f"{_end(self.text)} {self.reason}" if self.reason else self.text


def _admissible(text: str) -> bool:
    if not MIN_CHARS <= len(text) <= MAX_CHARS or _codey(text):
        return False
    return len(text.split()) >= 3 or bool(_UNSPACED_RE.search(text))


def _echoed(text: str, turns: Sequence[Said], index: int) -> float:
    """The share of the sentence's content words the assistant says in its next turn."""
    mine = content_words(text)
    after = next((t for t in turns[index + 1 :] if t.role == "assistant"), None)
    if not mine or after is None:
        return 0.0
    return len(mine & content_words(after.text)) / len(mine)


@lru_cache(maxsize=64)
def _later_user(turns: tuple[Said, ...], index: int) -> tuple[str, ...]:
    """The user's sentences after turn ``index`` (cached: asked once per candidate)."""
    return tuple(
        clean(s) for t in turns[index + 1 :] if t.role == "user" for s in sentences(t.text)
    )


def _cues(
    text: str, turns: Sequence[Said], index: int, i: int, said: list[str], rule: Spotted | None
) -> list[float]:
    """The features of ``text``, sentence ``i`` of turn ``index`` (the prototypes' verdict
    first, filled in later), or of what ``rule`` spotted there."""
    accepted = turns[index].role == "assistant" or (rule is not None and rule.accepted)
    before = turns[index - 1] if index > 0 else None
    quoted = sum(len(m.group(0)) for m in _QUOTED_RE.finditer(text))
    words = _WORD_RE.findall(text)
    after = said[i + 1] if i + 1 < len(said) else ""
    flags = [
        0.0,  # prototypes, set by features()
        0.0,  # english, set by features()
        accepted,
        bool(after) and _follows(text, after),
        _question(text),
        bool(_HYPOTHETICAL_RE.search(text) or re.search(r"\w'd\b", text)),
        bool(_REQUEST_RE.search(text)),
        bool(_REPORTED_RE.search(text)),
        bool(_NEGATED_RE.search(text)),
        bool(_RETRACT_RE.search(text)),
        bool(_MOMENT_RE.search(text)),
        quoted / len(text),
        bool(_WE_RE.search(text)),
        bool(_ALWAYS_RE.search(text)),
        bool(_MUST_RE.search(text)),
        bool(_NEGATION_RE.search(text)),
        bool(_SELF_RE.search(text)),
        bool(_PAST_RE.search(text)),
        bool(re.search(r"\d", text)),
        min(len(_THING_RE.findall(text)), 3) / 3,
        math.log1p(len(words)) / 4,
        bool(_UNSPACED_RE.search(text)),
        index / max(len(turns) - 1, 1),
        i == 0,
        math.log1p(len(said)) / 3,
        before is not None and before.role == "assistant" and "?" in before.text[-300:],
        _echoed(text, turns, index),
        any(_takes_back(content_words(text), later) for later in _later_user(tuple(turns), index)),
        text.rstrip().endswith("!"),
        ":" in text,
        bool(_NEGATIVE_START_RE.match(text)),
        bool(_CLOSED_RE.search(text)),
        bool(_FLAGGED_RE.match(text)),
        bool(_THIRD_PARTY_RE.search(text)),
        bool(_TASK_RE.match(text)),
        rule is not None,
        *(rule is not None and rule.kind == kind for kind in _RULE_KINDS),
    ]
    return [float(f) for f in flags]


def _rule_sentence(turns: Sequence[Said], found: Spotted) -> Sentence:
    """What a phrase rule spotted, as a sentence with its features."""
    said = [clean(s) for s in sentences(turns[found.turn].text)]
    i = next((j for j, text in enumerate(said) if text and text in found.text), 0)
    cues = _cues(found.text, turns, found.turn, i, said or [found.text], found)
    return Sentence(found.turn, found.text, "", tuple(cues))


def features(
    turns: Sequence[Said], embedder: Embedder
) -> tuple[list[Sentence], list[Spotted | None], list[Scored]]:
    """The rules' memories of ``turns`` and the layer's candidates (what the user says
    that no rule takes), with what spotted each (None for a candidate) and the
    prototypes' verdicts on their frames (:func:`vaultmem.agent.capture_vectors.scored`),
    from one batch of embeddings."""
    rules = [*rule_sentences(turns), *_accepted(turns)]
    found = [_rule_sentence(turns, r) for r in rules]
    spotted: list[Spotted | None] = list(rules)
    for index, turn in enumerate(turns):
        if turn.role != "user" and not _accepted_turn(turns, index):
            continue
        said = [clean(s) for s in sentences(turn.text)]
        reason = ""
        for i, text in enumerate(said):
            if text == reason or not _admissible(text) or _taken(text, turn.role):
                reason = ""
                continue
            cues = _cues(text, turns, index, i, said, None)
            reason = said[i + 1] if cues[3] else ""
            found.append(Sentence(index, text, reason, tuple(cues)))
            spotted.append(None)
    texts = [s.text for s in found]
    vectors = frame_vectors(texts, embedder)
    verdicts = scored(texts, vectors, embedder)
    found = [
        Sentence(s.turn, s.text, s.reason, (v.score, float(v.english), *s.cues[2:]))
        for s, v in zip(found, verdicts, strict=True)
    ]
    return found, spotted, verdicts


def settle(
    turns: Sequence[Said],
    found: Sequence[Sentence],
    spotted: Sequence[Spotted | None],
    verdicts: Sequence[Scored],
    chances: Sequence[float],
    model: Classifier,
) -> list[Spotted]:
    """The memories kept: the rules' at :attr:`Classifier.rule_threshold` or above, the
    candidates' at :attr:`Classifier.threshold`, in the order said, less those a later
    sentence takes back (:func:`vaultmem.agent.capture_rules.spot`'s reversal check)."""
    kept: list[Spotted] = []
    for s, rule, v, chance in zip(found, spotted, verdicts, chances, strict=True):
        if rule is not None and chance >= model.rule_threshold:
            kept.append(rule)
        elif rule is None and chance >= model.threshold:
            kept.append(Spotted(v.kind, s.memory_text, s.turn, f"learned:{v.label}"))
    kept.sort(key=lambda s: (s.turn, not s.accepted))
    dropped = _reversed(kept, turns)
    return [s for i, s in enumerate(kept) if i not in dropped]


@dataclass(frozen=True)
class Classifier:
    """A logistic regression over :data:`FEATURES`, standardised by ``mean`` and
    ``scale``, and the thresholds it is used at."""

    mean: tuple[float, ...]
    scale: tuple[float, ...]
    weights: tuple[float, ...]
    bias: float
    threshold: float  # a candidate's chance must reach this
    rule_threshold: float  # ... and a rule's memory this one

    def scores(self, rows: Any) -> Any:
        """The chance each row of features is a memory (a numpy array)."""
        import numpy as np

        rows = np.asarray(rows, dtype=np.float64).reshape(-1, len(self.mean))
        z = (rows - np.asarray(self.mean)) / np.asarray(self.scale)
        return 1 / (1 + np.exp(-(z @ np.asarray(self.weights) + self.bias)))

    def to_json(self) -> dict[str, Any]:
        """The classifier as the shipped file holds it."""
        return {
            "features": list(FEATURES),
            "mean": list(self.mean),
            "scale": list(self.scale),
            "weights": list(self.weights),
            "bias": self.bias,
            "threshold": self.threshold,
            "rule_threshold": self.rule_threshold,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Classifier:
        """A classifier from :meth:`to_json`'s shape; its features must be :data:`FEATURES`."""
        if tuple(data["features"]) != FEATURES:
            raise ValueError("capture classifier: its features are not this version's")
        return cls(
            tuple(float(x) for x in data["mean"]),
            tuple(float(x) for x in data["scale"]),
            tuple(float(x) for x in data["weights"]),
            float(data["bias"]),
            float(data["threshold"]),
            float(data["rule_threshold"]),
        )


@lru_cache(maxsize=1)
def shipped() -> Classifier:
    """The classifier that ships (``data/capture_classifier.json``)."""
    return Classifier.from_json(json.loads(CLASSIFIER_FILE.read_text(encoding="utf-8")))


def learned_spot(
    turns: Sequence[Said], embedder: Embedder, classifier: Classifier | None = None
) -> list[Spotted]:
    """The memories of ``turns`` by the rules and the classifier (default
    :func:`shipped`): the rules' memories it rates likely enough, and what the user says
    that no rule takes and it rates likely (cue ``learned:<class>``, the class of the
    nearest prototypes), less decisions taken back later."""
    model = classifier or shipped()
    found, spotted, verdicts = features(turns, embedder)
    if not found:
        return []
    chances = model.scores([s.cues for s in found])
    return settle(turns, found, spotted, verdicts, list(chances), model)
