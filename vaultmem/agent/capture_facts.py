"""Statements of durable fact and convention that carry no cue word.

People state where and how the project's things are without saying "remember" or "we
decided": "staging is the EKS cluster in us-east-2", "container images are pushed to
ghcr.io/acme", "the platform team owns the ingress controller", "handlers live in
internal/http/handlers", "Die Belege liegen im Bucket kontor-belege", "o front roda na
Vercel". A sentence is such a statement when, said by the user:

- it opens with a *subject* of one to six words that is a thing, not a person, a pointer
  or an action ("staging", "the billing database", "our Redis"; not "I", "it", "this",
  "put the…", nor a moment's thing such as "the error", "the bug", "the fix");
- a present-tense verb of *place or manner* follows ("runs on", "lives in", "goes
  under", "is pushed to", "is 14.9 on", "owns", "stays at"; in German, Spanish, French,
  Portuguese and Italian too);
- it names something specific: a version, a path, a host, a region, an identifier in
  capitals or a proper name (``us-east-2``, ``/api/v3``, ``TRANSFORM_WH``, ``Vercel``);
- and nothing in it narrates the moment ("still", "again", "now", "fails", "is stuck",
  "returns", "on my machine", "since this morning").

Everything else (questions, hypotheticals, quotes, code) is filtered by the caller,
:mod:`vaultmem.agent.capture_rules`. Pure functions over one sentence.
"""

from __future__ import annotations

import re

__all__ = ["fact"]

_SUBJECT_WORDS = 6

# (language, kind, verb pattern): a verb of place or manner, in the present tense.
_EN_VERBS = (
    r"(?:runs?|is running|are running)\s+(?:[\w.@/-]+\s+){0,3}?"
    r"(?:on|in|behind|at|under|through|via|against|inside)"
    r"|(?:lives?|sits?|resides?|is hosted|are hosted)\s+(?:in|on|under|at|behind|inside)"
    r"|(?:points?|talks?|comes?|reads?|writes?|lands?)\s+(?:to|at|from|into|in)"
    r"|(?:owns?|maintains?)"
    r"|(?:stays?|remains?)\s+(?:on|at|in|with|pinned)"
    r"|(?:is|are)\s+(?:only\s+)?(?:in|on|under|behind|at|inside|for|frozen|read-only|"
    r"deprecated|the source of truth)"
    r"|(?:is|are)\s+(?:(?:the|a|an|our)\s+)?[\w.@/-]+(?:\s+[\w.@/-]+){0,3}?\s+(?:in|on|at|behind)"
    r"|(?:is|are)\s+(?:only\s+|always\s+|never\s+)?(?:\w+ed|\w+en|read|run|built|kept|set|put|"
    r"sent|held|split|bound|spun|made|written)\s+(?:on|in|at|by|to|from|with|under|as|via|"
    r"through|behind|into|per|only|for|inside)"
)
_EN_CONVENTION = (
    r"(?:goes|go|belongs?)\s+(?:in|into|under|to|through|behind|on)"
    r"|(?:is|are)\s+(?:named|called|prefixed|suffixed|versioned)\b"
)
_VERBS: tuple[tuple[str, str, str], ...] = (
    ("en", "preference", _EN_CONVENTION),
    ("en", "observation", _EN_VERBS),
    (
        "de",
        "observation",
        r"(?:läuft|laufen|liegt|liegen|landet|landen|sitzt|sitzen|steht|stehen|wohnt|wohnen)"
        r"\s+(?:\w+\s+){0,2}?(?:auf|in|im|hinter|bei|beim|unter|über)"
        r"|(?:ist|sind)\s+(?:nur\s+)?(?:in|im|auf|hinter|bei|beim|unter|für)"
        r"|(?:gehört|gehören)\s+(?:zu|zum|zur|dem|der)",
    ),
    (
        "es",
        "observation",
        r"(?:corre|corren|vive|viven|está|están|va|van|se (?:despliega|despliegan|aloja|alojan|"
        r"guarda|guardan|ejecuta|ejecutan|encuentra|encuentran))\s+(?:\w+\s+)?"
        r"(?:en|sobre|detrás de|bajo|dentro de)"
        r"|(?:es|son)\s+(?:solo\s+)?(?:para|la fuente de verdad)",
    ),
    (
        "fr",
        "observation",
        r"(?:tourne|tournent|vit|vivent|va|vont|se trouve|se trouvent|est|sont)\s+(?:\w+\s+)?"
        r"(?:sur|dans|chez|derrière|sous|à)",
    ),
    (
        "pt",
        "observation",
        r"(?:roda|rodam|fica|ficam|está|estão|vai|vão|mora|moram|vive|vivem)\s+(?:\w+\s+)?"
        r"(?:em|na|no|nas|nos|num|numa|para|pro|pra|atrás)",
    ),
    (
        "it",
        "observation",
        r"(?:gira|girano|sta|stanno|vive|vivono|va|vanno|è|sono|si trova|si trovano|risiede)"
        r"\s+(?:\w+\s+)?(?:su|sul|sulla|sui|in|nel|nella|nei|a|al|dietro|sotto)",
    ),
)
_VERB_RES = tuple(
    (lang, kind, re.compile(rf"(?<![\w'-])(?:{pattern})(?![\w-])", re.IGNORECASE))
    for lang, kind, pattern in _VERBS
)
_CONVENTION_VERB_RE = re.compile(
    r"^(?:goes|go|belongs?|vont|va|vanno|vão|vai|van)\b|\b(?:named|called|prefixed|versioned)\b",
    re.IGNORECASE,
)

# Who or what a subject must not be: a person, a pointer, a question word, an action.
_NOT_A_THING_RE = re.compile(
    r"^(?:i|i'm|i'll|i've|you|you're|we|we're|we'll|it|it's|its|this|that|these|those|they|"
    r"he|she|there|here|what|which|who|my|your|his|her|their|something|everything|nothing|"
    r"anything|someone|let'?s|let|please|can|could|would|should|do|does|did|is|are|was|were|"
    r"if|when|while|because|so|then|now|just|maybe|not|no|"
    r"add|put|move|make|use|run|check|fix|change|update|remove|delete|create|write|set|keep|"
    r"try|look|see|go|take|send|call|open|rename|switch|bump|drop|revert|pull|push|deploy|"
    r"install|point|wire|give|get|show|tell|find|ignore|leave|skip|stop|start|merge|ship|"
    r"test|build|mount|store|serve|host|pin|upgrade|migrate|copy|replace|apply|enable|"
    r"disable|turn|note|assume|imagine|say|suppose|"
    r"ich|du|wir|es|das|dies|er|sie|man|mein|dein|bitte|nimm|mach|setz|leg|"
    r"yo|tú|eso|esto|ello|mi|tu|pon|mueve|usa|cambia|añade|"
    r"je|on|elle|ça|cela|ceci|ce|c'est|mon|ton|mets|ajoute|utilise|"
    r"eu|você|isso|isto|ele|ela|meu|põe|coloca|muda|adiciona|"
    r"io|questo|quello|ciò|lui|lei|mio|metti|sposta|aggiungi)\b",
    re.IGNORECASE,
)
_SUBJECT_CLAUSE_RE = re.compile(
    r"\b(?:that|which|who|where|when|if|because|think|guess|need|needs|want|wants|"
    r"dass|wenn|que|qui|quand|se|che)\b",
    re.IGNORECASE,
)
# A thing of the moment, not of the project.
_MOMENT_THING_RE = re.compile(
    r"\b(?:error|bug|issue|problem|failure|crash|exception|warning|fix|typo|trace|diff|patch|"
    r"pr|branch|commit|ticket|output|result|screenshot|fehler|erro|errore|erreur|"
    r"problema|problème)\b|^(?:the|these|those) (?:\w+ )?(?:errors|bugs|issues|problems)\b",
    re.IGNORECASE,
)
# Words that narrate what is happening now rather than how things are.
_NARRATION_RE = re.compile(
    r"\b(?:still|again|anymore|any more|already|just|suddenly|currently|now(?! on)|since|"
    r"yesterday|today|tonight|this morning|last night|keeps?|stopped|started|broke|broken|"
    r"breaks|fails?|failing|failed|crash(?:es|ed|ing)?|times? out|timed out|timeout|hangs?|"
    r"hanging|stuck|slow|down|red|green|flaky|works?|working|worked|returns?|returned|"
    r"throws?|threw|shows?|showed|prints?|says|seems?|looks?|appears?|blocked|rejected|"
    r"killed|denied|truncated|corrupted|missing|deleted|wrong|weird|strange|locally|"
    r"my machine|doesn'?t|don'?t|isn'?t|aren'?t|can'?t|cannot|won'?t|wasn'?t|weren'?t|"
    r"didn'?t|does not|do not|is not|are not|"
    r"noch|wieder|gerade|seit|heute|gestern|jetzt|schon|kaputt|bricht|hängt|"
    r"todavía|otra vez|ya|hoy|ayer|ahora|falla|fallando|roto|"
    r"encore|déjà|depuis|aujourd'hui|hier|maintenant|plante|échoue|cassé|"
    r"ainda|de novo|já|hoje|ontem|agora|falhando|falha|quebrado|"
    r"ancora|di nuovo|già|oggi|ieri|adesso|fallisce|rotto)\b",
    re.IGNORECASE,
)
# Something specific: a version or number, a path or host, an identifier in capitals or
# with inner punctuation, code in backticks.
_SPECIFIC_RE = re.compile(
    r"\d|`[^`]+`|\w[/._@-]\w|/\w|\w/|\b[A-Z]{2,}|\b[a-z]+[A-Z]\w*",
)
_LAYOUT_VERB_RE = re.compile(r"(?:lives?|sits?|belongs?)\b", re.IGNORECASE)
_REPO_PATH_RE = re.compile(r"(?:^|\s)`?/?[a-z_][\w-]*/[\w/-]*")
_PROPER_RE = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z]{2,}")
_LEAD_RE = re.compile(
    r"^(?:fyi|btw|by the way|for the record|heads up|übrigens|por cierto|au fait|aliás|"
    r"tra l'altro)\b[\s,:—–-]*",
    re.IGNORECASE,
)
_TOKEN_RE = re.compile(r"[\w.@/'’-]+")


def _subject_ok(subject: str) -> bool:
    words = _TOKEN_RE.findall(subject)
    if not 1 <= len(words) <= _SUBJECT_WORDS:
        return False
    return not (
        _NOT_A_THING_RE.match(subject)
        or _SUBJECT_CLAUSE_RE.search(subject)
        or _MOMENT_THING_RE.search(subject)
    )


def _specific(sentence: str, lang: str) -> bool:
    if _SPECIFIC_RE.search(sentence):
        return True
    # German capitalises every noun, so a capital letter names nothing in particular there.
    return lang != "de" and _PROPER_RE.search(sentence) is not None


def fact(sentence: str) -> tuple[str, str] | None:
    """(kind, verb) when the user's ``sentence`` (cleaned, not a question) plainly states
    where or how one of the project's things is, else None.

    Example:
        >>> fact("Staging is the GKE cluster in europe-west4.")
        ('observation', 'is the GKE cluster in')
        >>> fact("the test fails on CI since this morning") is None
        True
    """
    text = _LEAD_RE.sub("", sentence).strip()
    if _NARRATION_RE.search(text):
        return None
    best: tuple[int, str, str, str] | None = None
    for lang, kind, verb_re in _VERB_RES:
        found = verb_re.search(text)
        if found is None or (best is not None and found.start() >= best[0]):
            continue
        if _subject_ok(text[: found.start()].strip(" ,;:")):
            best = (found.start(), lang, kind, found.group(0))
    if best is None or not _specific(text, best[1]):
        return None
    at, _, kind, verb = best
    if _CONVENTION_VERB_RE.search(verb) or (
        _LAYOUT_VERB_RE.match(verb) and _REPO_PATH_RE.search(text[at + len(verb) :])
    ):
        kind = "preference"  # how the project is laid out: a convention
    return kind, verb
