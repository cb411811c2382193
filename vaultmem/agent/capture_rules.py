"""The offline capture rules of `extract`: which sentences of a session are memories.

People state decisions the way people talk: "go with RQ", "from now on use ruff, not
black", "we stay on Postgres 15 until…", "never run migrations inside a job", "Wir haben
entschieden: …", "vamos con pnpm", "on part sur FastAPI". A rule here is a *cue* (a
phrase that marks a sentence as a decision, a preference, an antipattern or an
observation; English, German, Spanish and French) plus the *filters* that keep out what
only looks like one:

- questions ("should we use Celery?"), hypotheticals ("if we went with Kafka…", "let's
  say we go with…", "we could…"), and cues said in the negative ("we haven't decided");
- quoted text (a ``>`` block, a cue inside quotation marks, "the README says we
  decided…"), code blocks, tables; tool output never reaches here (transcript.py);
- what the assistant proposes or advises ("I suggest…", "you should always…", "in
  general…"): an assistant sentence counts only as an observation ("it turns out", "the
  root cause") or as a decision reported as made ("we decided…");
- instructions about this moment ("don't merge it yet", "never mind");
- a decision reversed later in the session ("let's use Redis Streams" … "actually scrap
  that, we'll use SQS instead"): the earlier sentence is dropped.

A suggestion the user accepts in a short reply ("I suggest we use orjson…" — "yes, do
that") is a decision too. Pure functions over the turns; nothing here reads a file or a
model (the optional sentence-vector check is :mod:`vaultmem.agent.capture_vectors`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from vaultmem.agent.capture_facts import fact
from vaultmem.agent.redact import REDACTED
from vaultmem.subjects import content_words

__all__ = [
    "Said",
    "Spotted",
    "rule_sentences",
    "sentences",
    "spot",
]

MIN_CHARS, MAX_CHARS = 20, 600


@dataclass(frozen=True)
class Said:
    """One turn of the conversation: who said it, the prose, and when (ISO text)."""

    role: str  # "user", "assistant" or "unknown"
    text: str
    timestamp: str | None = None


@dataclass(frozen=True)
class Spotted:
    """A sentence the rules take for a memory: its kind, cleaned text, the turn it came
    from (index into the turns), the cue that fired, and whether an acceptance made it."""

    kind: str
    text: str
    turn: int
    cue: str
    accepted: bool = False


# --------------------------------------------------------------------------- sentences

# What is not prose: fenced code, ``>`` quotes, table rows, HTML-ish tags on their own line.
_FENCE_RE = re.compile(r"^\s*(```|~~~).*?^\s*\1[^\n]*$", re.DOTALL | re.MULTILINE)
_QUOTE_LINE_RE = re.compile(r"^\s*>.*$", re.MULTILINE)
_TABLE_LINE_RE = re.compile(r"^\s*\|.*\|\s*$", re.MULTILINE)
_BULLET_RE = re.compile(r"^\s*(?:[-*+•]|\d+[.)])\s+")
# A sentence ends at . ! ? … (or their full-width forms) before a space, or at a line end.
_SPLIT_RE = re.compile(r"(?<=[.!?…。！？])\s+|\n+")
# "e.g. X", "i.e. X", "vs. X", "approx. X" do not end a sentence.
_ABBREV_END_RE = re.compile(r"(?:\b(?:e\.g|i\.e|vs|etc|approx|cf|z\.B|bzw|ca|p\.ej|env)\.)$", re.I)
# Words a speaker opens with that are not part of the memory ("ok,", "and", "ja,"): a
# reply word only before punctuation ("No deploys on Fridays" keeps its "No"), a
# conjunction before a space.
_REPLIES = (
    r"(?:ok(?:ay)?|yes|yeah|yep|no|nope|right|sure|good|great|nice|alright|hm+|ah+|oh|"
    r"ja|nein|genau|stimmt|gut|sí|si|vale|bueno|claro|oui|non|bon|d'accord|alors|"
    r"sim|não|beleza|certo|tá|então|ótimo|sì|bene|allora|ecco|perfetto|ah|anzi)"
)
_CONJUNCTIONS = r"(?:and|also|but|so|plus|fyi|btw|und|aber|y|pero|et|mais|e|mas|ma|però)"
_OPENER_RE = re.compile(rf"^(?:{_REPLIES}\s*[,.:;!—–-]+\s*|{_CONJUNCTIONS}\s+)+", re.IGNORECASE)
_CODEY_RE = re.compile(r"[{}=;<>\[\]()]")


def sentences(text: str) -> list[str]:
    """The prose sentences of one turn: code blocks, quoted lines and tables left out,
    list markers stripped, cut at sentence ends and line breaks."""
    text = _FENCE_RE.sub("\n", text)
    text = _QUOTE_LINE_RE.sub("\n", text)
    text = _TABLE_LINE_RE.sub("\n", text)
    out: list[str] = []
    pending = ""
    for piece in _SPLIT_RE.split(text):
        piece = piece.strip()
        if not piece:
            continue
        joined = f"{pending} {piece}" if pending else piece
        if _ABBREV_END_RE.search(piece):
            pending = joined
            continue
        pending = ""
        out.append(_BULLET_RE.sub("", joined).strip())
    if pending:
        out.append(_BULLET_RE.sub("", pending).strip())
    return [s for s in out if s]


def clean(sentence: str) -> str:
    """The sentence as a memory: without opening fillers ("ok, and …"), first letter up."""
    text = _OPENER_RE.sub("", sentence).strip()
    if len(text) < 3:
        return sentence.strip()
    return text[0].upper() + text[1:]


def _codey(text: str) -> bool:
    """A line of code or config rather than a sentence (inline code and redaction marks
    do not count)."""
    outside = re.sub(r"`[^`]*`", "", text).replace(REDACTED, "")
    return len(_CODEY_RE.findall(outside)) >= 4 or outside.rstrip().endswith(("{", ";", ":"))


# --------------------------------------------------------------------------- cues

# (kind, pattern) — first match wins. Written for sentences already cleaned of openers.
_CUES: tuple[tuple[str, str], ...] = (
    # observations: something learned about the system
    (
        "observation",
        r"\b(?:it )?turns out\b|\broot cause\b|\bthe (?:problem|issue|culprit|bug|cause) "
        r"(?:was|is) (?:that|the)\b|\bthe reason (?:was|is) that\b"
        r"|\b(?:es )?stellt sich heraus\b|\bdas problem war\b|\bdie ursache (?:war|ist)\b"
        r"|\bes lag (?:daran|an)\b|\bresulta que\b|\bel problema (?:era|fue)\b"
        r"|\bla causa (?:raíz )?(?:era|fue|es)\b|\bil s'avère que\b"
        r"|\ble problème (?:était|venait)\b|\bla cause (?:était|racine)\b"
        r"|\bdescobrimos que\b|\bacontece que\b|\bo problema (?:era|foi)\b"
        r"|\ba causa (?:era|foi)\b|\bsi è scoperto che\b|\babbiamo scoperto che\b"
        r"|\bè venuto fuori che\b|\bil problema (?:era|è stato)\b|\bla causa (?:era|è)\b",
    ),
    # antipatterns: what went wrong and must not happen again
    (
        "antipattern",
        r"\b(?:don'?t|do not|never)\b.{3,}\bagain\b|\b(?:avoid|stop)\b.{3,}\bbecause\b"
        r"|\blessons? (?:learned|for the future)\b|\bnote to self\b"
        r"|\b(?:got|were|been|get) (?:bitten|burned|burnt)\b"
        r"|\bnie wieder\b|\bnunca más\b|\bplus jamais\b"
        r"|^(?:please )?(?:never|don'?t|do not)\b|^(?:bitte )?(?:nie|niemals)\b"
        r"|^(?:por favor )?(?:nunca|jamás)\b|^(?:ne )?jamais\b"
        r"|^no (?:uses|hagas|subas|pongas|ejecutes|borres|toques|mezcles)\b"
        r"|\bn'utilise(?:z)? (?:pas|jamais)\b"
        r"|\bnunca mais\b|^(?:por favor )?(?:nunca|jamais)\b|^não (?:use|faça|rode|suba|mexa)\b"
        r"|\bmai più\b|^(?:per favore )?mai\b|^non (?:\w+ )?mai\b"
        r"|\bwe (?:never|don'?t ever)\s+(?!\w+ed\b)\w+",
    ),
    # decisions: a choice that was made
    (
        "decision",
        r"\b(?:we|i)(?:'ve| have)? (?:decided|agreed|settled on|chose|chosen|opted for)\b"
        r"|\b(?:let'?s|we(?:'ll| will)?|we'?re|we are|i'?ll)(?: just| simply| then)? "
        r"(?:go(?:ing)? with|stick(?:ing)? with|stay(?:ing)? (?:on|with)|standardi[sz]e on|"
        r"switch(?:ing)? (?:over )?to|migrat(?:e|ing) to)\b|\bwe went with\b"
        r"|\blet'?s not use\b|\bin (?:the )?future,? (?:we|always|never|use|please)\b"
        r"|^(?:(?:then|so) )?(?:go|stick|stay) with\b|\blet'?s use\b"
        r"|\bdecision:|\bthe decision is\b"
        r"|(?:^|[—–:;]\s*)(?:let'?s |we(?:'ll| will)? )?keep\b.{2,60}\b(?:for now|until)\b"
        r"|\bwe(?:'ll| will)? use\b.{2,60}\binstead\b|\binstead of\b.{3,}\bbecause\b"
        r"|\b(?:considered|looked at)\b.{2,40}\b(?:rejected|ruled out|dropped)\b"
        r"|\bfrom now on\b|\bgoing forward\b|\bfrom here on\b"
        r"|\bwir haben (?:uns )?(?:entschieden|beschlossen|geeinigt)\b|\bentscheidung:"
        r"|\bwir bleiben (?:bei|beim|auf)\b|\bab (?:sofort|jetzt)\b|\bvon nun an\b|\bkünftig\b"
        r"|\bin zukunft\b|\blass(?:t)? uns\b.{0,40}\b(?:nehmen|verwenden|benutzen|nutzen)\b"
        r"|\bnur noch (?:über|mit|in|im|per|auf|bei|via)\b"
        r"|\bvamos con\b|\bnos quedamos con\b|\b(?:hemos )?decidi(?:do|mos)\b|\boptamos por\b"
        r"|\b(?:hemos )?acorda(?:do|mos)\b"
        r"|\ben (?:lugar|vez) de\b|\ba partir de ahora\b|\bde ahora en adelante\b"
        r"|\bon part sur\b|\b(?:on a|nous avons) (?:décidé|choisi|retenu)\b|\bon reste sur\b"
        r"|\bon garde\b"
        r"|\bà partir de maintenant\b|\bdésormais\b|\bdorénavant\b|\bau lieu de\b"
        r"|\b(?:decidimos|resolvemos|combinamos|optamos|escolhemos)\b|\bficou decidido\b"
        r"|\bvamos (?:usar|ficar com|de|com)\b|\bficamos com\b|\bcontinuamos (?:com|no|na)\b"
        r"|\ba partir de agora\b|\bdaqui (?:pra|para) frente\b|\bde agora em diante\b"
        r"|\bem vez de\b|\bao invés de\b"
        r"|\babbiamo (?:deciso|scelto|optato)\b|\bsi è deciso\b|\busiamo\b|\buseremo\b"
        r"|\bandiamo (?:con|su)\b|\bpassiamo a\b|\b(?:restiamo|rimaniamo) (?:su|con|sul|sulla)\b"
        r"|\bteniamo\b|\bd'ora in (?:poi|avanti)\b|\bda (?:ora|adesso) in poi\b"
        r"|\binvece di\b|\bal posto di\b",
    ),
    # preferences and conventions: how things are done here
    (
        "preference",
        r"\b(?:i|we) (?:prefer|like|love|always want|never want|like to)\b"
        r"|\b(?:i|we)(?:'d| would) rather\b|\bprefer\b.{3,}\bover\b"
        r"|\b(?:i|we) (?:don'?t|do not|never) (?:want|like)\b|\bi (?:hate|dislike|can'?t stand)\b"
        r"|\bthe (?:rule|convention|policy|standard|norm) (?:is|here is)\b"
        r"|\bour (?:rule|convention|policy) is\b|\bby convention\b"
        r"|\b(?:remember|keep in mind|don'?t forget|never forget) that\b|^remember:"
        r"|\bwe (?:don'?t|do not|no longer) \w+\b.{2,40}\b(?:anymore|any more)\b"
        r"|\b(?:we )?no longer use\b"
        r"|^(?:please )?always\b"
        r"|^(?:bitte )?immer\b|\b(?:ich|wir) (?:bevorzuge|bevorzugen|mag|mögen)\b"
        r"|\bdie (?:regel|konvention) ist\b|\bdenk daran,? dass\b|\bmerk dir\b"
        r"|^(?:por favor )?siempre\b|\bprefiero\b|\bpreferimos\b"
        r"|\bla (?:regla|convención) es\b|\brecuerda que\b"
        r"|^toujours\b|\bje préfère\b|\bon préfère\b"
        r"|\bla (?:règle|convention) est\b|\bn'oublie pas que\b|\brappelle-toi que\b"
        r"|\bwe always\s+(?!\w+ed\b)\w+|\bi want (?:this|that|it) remembered\b"
        r"|^(?:por favor )?sempre\b|\bprefiro\b|\bpreferimos\b|\ba (?:regra|convenção) é\b"
        r"|\blembr(?:e|a)(?:-se)? (?:de )?que\b"
        r"|\bpreferisco\b|\bpreferiamo\b|\bla (?:regola|convenzione) è\b"
        r"|\bricorda(?:ti)? che\b",
    ),
)
_CUE_RES = tuple((kind, re.compile(p, re.IGNORECASE)) for kind, p in _CUES)

# The user's own "use X for/instead of Y" and "keep X at Y": an instruction that names a
# tool and where it applies, rather than a step of the task ("use the logger").
_USE_RE = re.compile(
    r"^(?:please )?use\s+(?!the\b|this\b|that\b|it\b|them\b|my\b|your\b|a\b|an\b)"
    r"[\w.@/-]+(?:\s+[\w.@/-]+){0,2}\s+(?:for|in|with|instead of|over|rather than)\s+"
    r"(?!this\b|that\b|now\b|the moment\b|here\b|today\b)\S",
    re.IGNORECASE,
)

# --------------------------------------------------------------------------- filters

# Said before the cue, these make it a supposition, not a decision.
_HYPOTHETICAL_RE = re.compile(
    r"\b(?:if|what if|let'?s say|say we|suppose|supposing|imagine|assuming|would|could|"
    r"might|maybe|perhaps|probably|should we|shall we|in case|whether|in theory|unless|"
    r"wenn|falls|würden?|könnten?|vielleicht|angenommen|sollen wir|sollten wir|"
    r"si|podríamos|podría|quizás?|tal vez|supongamos|"
    r"pourrait|pourrions|peut-être|supposons|imaginons|est-ce qu|"
    r"se|e se|talvez|poderíamos|poderia|seria|quem sabe|suponha|"
    r"forse|potremmo|potrebbe|sarebbe|magari|supponiamo|immaginiamo)\b",
    re.IGNORECASE,
)
_NEGATED_RE = re.compile(
    r"\b(?:haven'?t|have not|hasn'?t|not yet|didn'?t|did not|not|never|don'?t) "
    r"(?:yet )?(?:decided|agreed|settled|chosen|decide)\b|\blet'?s not decide\b",
    re.IGNORECASE,
)
_REPORTED_RE = re.compile(
    r"\b(?:says?|said|writes|wrote|according to|claims?|the (?:docs?|readme|ticket|"
    r"message|article|post|comment) (?:says|states))\b",
    re.IGNORECASE,
)
# The assistant offering, planning or advising (its sentences count only as observations
# or as decisions reported as already made).
_ADVICE_RE = re.compile(
    r"\b(?:you should|you could|you might|we could|in general|generally|best practice|"
    r"it'?s (?:best|good practice|a good idea)|rule of thumb|i (?:suggest|recommend|"
    r"propose|would|'d)|i'?ll|let me|i can|one option|options? (?:is|are))\b",
    re.IGNORECASE,
)
# An instruction about this moment, not a standing rule.
_MOMENT_RE = re.compile(
    r"\b(?:yet|right now|today|tonight|tomorrow|later today|last time|this time|for this one|"
    r"never mind|nevermind|this (?:pr|branch|commit|session|ticket|change|afternoon|morning|"
    r"evening|week)|next week|not now|morgen|heute|mañana|hoy|demain|aujourd'hui|"
    r"pas maintenant|amanhã|hoje|agora não|domani|oggi|stasera|non ora|non adesso)\b"
    r"|^(?:please )?(?:don'?t|do not|never|always) \w+ (?:it|this|that|them|anything)\b"
    r"|^(?:please )?don'?t forget to\b",
    re.IGNORECASE,
)
# What a cue is about, when it is only pointed at ("let's go with the first option", "I
# like it", "en lugar de eso"): something of this moment, not a standing choice.
_DEIXIS_RE = re.compile(
    r"^(?:it|this|that|these|those|them|here|there|one|whatever|something|anything|where|"
    r"what|how|the (?:other|first|second|third|last|same|former|latter)|option|plan|"
    r"das|dies|es|eso|esto|ello|ça|cela|ceci)\b",
    re.IGNORECASE,
)
_ADVERB_CUE_RE = re.compile(
    r"(?:please )?(?:always|never|immer|nie|siempre|nunca|toujours|jamais)$", re.IGNORECASE
)
_ARTICLE_RE = re.compile(r"^(?:a|an|the|my|your|same)\b", re.IGNORECASE)
# A negative imperative ("don't touch the tests") is a standing rule only with a scope:
# where or how it applies ("in integration tests", "as floats", "on main") or a
# generaliser ("new", "any", "ever", "again").
_NEGATIVE_IMPERATIVE_RE = re.compile(r"^(?:please )?(?:don'?t|do not|no)\b", re.IGNORECASE)
_SCOPE_RE = re.compile(
    r"\b(?:in|inside|into|as|at|on|for|with|without|from|before|after|during|when|unless|"
    r"until|outside|across|new|any|ever|again|anywhere|everywhere|every|all|"
    r"im|auf|über|bei|mit|ohne|vor|nach|al|en|con|sin|para|por|dans|au|avec|sans|pour|sur)\b",
    re.IGNORECASE,
)
_QUOTED_RE = re.compile(r"\"[^\"]{3,}\"|“[^”]{3,}”|«[^»]{3,}»|„[^“”]{3,}[“”]")
_ASSISTANT_KINDS = frozenset({"observation"})
_ASSISTANT_DECISION_RE = re.compile(
    r"\b(?:we|you)(?:'ve| have)? (?:decided|agreed|settled on|chose)\b|\bdecision:",
    re.IGNORECASE,
)


def _in_quotes(text: str, start: int) -> bool:
    return any(m.start() < start < m.end() for m in _QUOTED_RE.finditer(text))


def _cue(sentence: str, role: str) -> tuple[str, str] | None:
    """(kind, cue text) when ``sentence`` (cleaned) states a memory, else None."""
    marked = _marked(sentence, role)
    if marked is not None or role == "assistant" or _question(sentence):
        return marked
    return _stated(sentence)


def _question(sentence: str) -> bool:
    return sentence.rstrip().endswith(("?", "？")) or sentence.lstrip().startswith("¿")


def _marked(sentence: str, role: str) -> tuple[str, str] | None:
    """(kind, cue text) when a cue word marks ``sentence`` as a memory, else None."""
    if _question(sentence):
        return None
    if not MIN_CHARS <= len(sentence) <= MAX_CHARS or _codey(sentence):
        return None
    if _NEGATED_RE.search(sentence):
        return None
    for kind, pattern in _CUE_RES:
        for found in pattern.finditer(sentence):
            match: re.Match[str] | None = found
            if role == "assistant" and kind not in _ASSISTANT_KINDS:
                match = _ASSISTANT_DECISION_RE.search(sentence)
                if match is None or _ADVICE_RE.search(sentence[: match.start()]):
                    break
            assert match is not None
            checked = _checked(sentence, kind, match, role)
            if checked is not None:
                return checked
    if role != "assistant":
        use = _USE_RE.search(sentence)
        if use is not None:
            return _checked(sentence, "decision", use, role)
    return None


def _stated(sentence: str) -> tuple[str, str] | None:
    """A plain statement of fact or convention (:func:`vaultmem.agent.capture_facts.fact`),
    the sentence or what follows its lead-in ("one more thing: …", "…; errors are
    wrapped…"), unless a filter says it is a supposition, a report, a quote or of this
    moment."""
    if not MIN_CHARS <= len(sentence) <= MAX_CHARS or _codey(sentence):
        return None
    if _HYPOTHETICAL_RE.search(sentence) or re.search(r"\w'd\b", sentence):
        return None
    if _REPORTED_RE.search(sentence) or _MOMENT_RE.search(sentence):
        return None
    lead = re.search(r"[:;]\s+", sentence)
    for clause in (sentence, sentence[lead.end() :] if lead else ""):
        found = fact(clause) if clause else None
        if found is not None and not _in_quotes(sentence, sentence.find(found[1])):
            return found
    return None


def _follows(memory: str, sentence: str) -> bool:
    """Whether ``sentence``, said right after ``memory`` in the same turn, belongs to it:
    its reason, or a plain statement of fact that completes it ("Never commit .env. Secrets
    go in the CI store.")."""
    if len(memory) + len(sentence) >= MAX_CHARS or sentence.endswith(("?", "？")):
        return False
    if _REASON_RE.match(sentence) or _REASON_CUE_RE.search(sentence):
        return True
    return _stated(sentence) is not None and _marked(sentence, "user") is None


def _checked(sentence: str, kind: str, found: re.Match[str], role: str) -> tuple[str, str] | None:
    """The cue, unless a filter says it is not a memory."""
    before = sentence[: found.start()]
    if _HYPOTHETICAL_RE.search(before) or _REPORTED_RE.search(before):
        return None
    if _in_quotes(sentence, found.start()):
        return None
    if role == "assistant" and kind == "observation" and _ADVICE_RE.search(before):
        return None
    if _MOMENT_RE.search(sentence):
        return None
    after = sentence[found.end() :].lstrip(" ,:;—–-")
    if _DEIXIS_RE.match(after):
        return None
    cue = found.group(0)
    if cue.lower().rstrip().endswith("use") and re.match(r"(?:a|an)\b", after, re.I):
        return None  # "let's use a dict": a step of the task, not a named choice
    if _ADVERB_CUE_RE.match(cue) and _ARTICLE_RE.match(after):
        return None  # "always the same error": not an imperative
    negative = _NEGATIVE_IMPERATIVE_RE.match(sentence)
    if negative is not None and not _SCOPE_RE.search(sentence[negative.end() :]):
        return None
    return kind, cue


# --------------------------------------------------------------------------- the session

_REVERSAL_RE = re.compile(
    r"\b(?:actually|scrap that|scratch that|on second thought|changed my mind|forget (?:that|it)|"
    r"instead|rather than|doch nicht|stattdessen|lieber|mejor|en realidad|pensándolo mejor|"
    r"finalement|plutôt|en fait|tout compte fait|na verdade|pensando bem|melhor não|"
    r"em vez disso|anzi|in realtà|ripensandoci|meglio di no|invece)\b",
    re.IGNORECASE,
)
# A decision taken back by name, in other words than the first time: "forget the
# Playwright idea", "scratch Zustand", "actually, let's not put thumbnails on the CDN",
# "vergiss die Airflow-Idee", "olvida lo de Pub/Sub", "laisse tomber Sentry", "esquece o
# Sentry", "lascia perdere Redis". What follows the phrase names what is taken back.
_RETRACT_RE = re.compile(
    r"\b(?:forget (?:about )?|scratch|scrap|ditch|let'?s not|never ?mind|pull (?:it|that) "
    r"(?:back )?out|back (?:it|that) out|vergiss|streich|lass(?:en wir)? das|"
    r"olvida(?:te)?(?: lo de)?|olvídalo|descarta|laisse tomber|oublie|esquece|esqueça|"
    r"deixa (?:pra|para) lá|lascia(?:mo)? perdere|dimentica|scarta)\b",
    re.IGNORECASE,
)
_RETRACTED_WORDS = 5  # the retracted thing is named within this many words of the phrase
# Short words of the supported languages that name nothing (content_words keeps them).
_FUNCTION_WORDS = frozenset(
    re.findall(
        r"\S+",
        "about all also and are but for not now the then with "
        "auf aus das dem den der des die ein eine für ist mit nicht noch sind und von "
        "con del las los más muy para por que sin una uno "
        "avec dans est les mais pas pour sur une "
        "com das dos mais nao não para pra uma "
        "che del della gli nel non ora per poi sono sul una uno",
    )
)
_ACCEPT_RE = re.compile(
    r"^(?:yes|yep|yeah|ok(?:ay)?|sure|agreed|sounds good|good idea|perfect|great|do it|"
    r"go ahead|let'?s do (?:it|that)|ja|genau|passt|sí|vale|de acuerdo|oui|d'accord|parfait)"
    r"(?:[\s,.!]+(?:please|do (?:it|that)|go ahead|let'?s do (?:it|that)|thanks))*[\s.!]*$",
    re.IGNORECASE,
)
_SUGGEST_RE = re.compile(
    r"\b(?:i (?:suggest|recommend|propose)(?: (?:that|we))?|i'?d (?:suggest|recommend)"
    r"(?: (?:that|we))?|my recommendation is(?: to)?|we should)\s+",
    re.IGNORECASE,
)
# A sentence that gives the reason for the one before it ("It's a small workload",
# "we've been bitten by this twice"): it belongs to that memory.
_REASON_RE = re.compile(
    r"^(?:because|since|it'?s|it is|that'?s|that is|we(?:'ve| have)? (?:been|got)|otherwise|"
    r"weil|denn|porque|ya que|car|parce que|pois|já que|perché|poiché|visto che)\b",
    re.IGNORECASE,
)
# What people give as the reason for a choice ("I don't want a new dependency before
# launch", "Celery is overkill", "we got burned twice"): said after a memory it belongs to
# it; said after an unmarked sentence it takes that sentence along as what it explains.
_REASON_CUE_RE = re.compile(
    r"\bi (?:really )?(?:don'?t|do not) want\b|\bi (?:hate|can'?t stand)\b"
    r"|\b(?:is|are|'s) (?:overkill|too (?:heavy|much|risky|big))\b"
    r"|\b(?:got|get|were|been) (?:bitten|burned|burnt)\b"
    r"|\bich (?:will|möchte) (?:kein|nicht)|\bno quiero\b|\bje ne veux (?:pas|plus)\b"
    r"|\bnão quero\b|\bnon voglio\b",
    re.IGNORECASE,
)
SHORT_CUE = 60  # a cue sentence this short takes the sentence before it as context


def rule_sentences(turns: Sequence[Said]) -> list[Spotted]:
    """Every sentence of ``turns`` a cue marks as a memory (before reversals are applied),
    with the sentence giving its reason after it, and for a short one the sentence
    before it when that one names the same subject."""
    found: list[Spotted] = []
    for index, turn in enumerate(turns):
        said = [clean(s) for s in sentences(turn.text)]
        skip = False
        for i, text in enumerate(said):
            if skip:
                skip = False
                continue
            cue = _cue(text, turn.role)
            if cue is None:
                continue
            text = _with_context(said, i)
            following = said[i + 1] if i + 1 < len(said) else ""
            if following and _follows(text, following):
                text = f"{_end(text)} {following}"
                skip = True
            elif _REASON_CUE_RE.search(text) and text == said[i] and i > 0:
                before = said[i - 1]
                if not before.endswith("?") and len(before) + len(text) < MAX_CHARS:
                    text = f"{_end(before)} {text}"
            found.append(Spotted(cue[0], text, index, cue[1]))
    return found


def _end(text: str) -> str:
    return text if text.endswith((".", "!", "…", ":", ";")) else text + "."


def _with_context(said: Sequence[str], i: int) -> str:
    """Sentence ``i``, after the one before it when it is short and the one before is a
    plain statement on the same subject ("Feature flags live in LaunchDarkly. Don't add
    new env-var flags.")."""
    text = said[i]
    if i == 0 or len(text) >= SHORT_CUE:
        return text
    before = said[i - 1]
    if (
        len(before) > 150
        or before.endswith("?")
        or _cue(before, "user") is not None
        or not content_words(before) & content_words(text)
    ):
        return text
    return f"{_end(before)} {text}"


def _accepted(turns: Sequence[Said]) -> list[Spotted]:
    """Suggestions of the assistant that the next user turn accepts in a word or two."""
    found: list[Spotted] = []
    for index in range(1, len(turns)):
        turn, before = turns[index], turns[index - 1]
        if turn.role != "user" or before.role != "assistant":
            continue
        if not _ACCEPT_RE.match(turn.text.strip()):
            continue
        for sentence in sentences(before.text):
            match = _SUGGEST_RE.search(sentence)
            if match is None or _HYPOTHETICAL_RE.search(sentence):
                continue
            text = sentence[match.end() :].strip()
            text = text[0].upper() + text[1:] if text else text
            if MIN_CHARS <= len(text) <= MAX_CHARS and not _codey(text):
                found.append(Spotted("decision", text, index, match.group(0).strip(), True))
            break
    return found


def _reversed(found: Sequence[Spotted], turns: Sequence[Said]) -> set[int]:
    """Indexes of spotted decisions that a later sentence on the same subject takes back."""
    dropped: set[int] = set()
    for i, earlier in enumerate(found):
        if earlier.kind not in ("decision", "preference"):
            continue
        mine = content_words(earlier.text)
        later_said = [
            clean(sentence)
            for turn in turns[earlier.turn + 1 :]
            if turn.role == "user"
            for sentence in sentences(turn.text)
        ]
        later_spotted = [s.text for s in found[i + 1 :] if s.turn != earlier.turn]
        if any(_takes_back(mine, text) for text in [*later_spotted, *later_said]):
            dropped.add(i)
    return dropped


def _takes_back(mine: frozenset[str], text: str) -> bool:
    """Whether ``text`` takes back a decision whose content words are ``mine``: a
    retraction naming one of them, or a reversal sharing two (one for a short one)."""
    for found in _RETRACT_RE.finditer(text):
        named = " ".join(text[found.end() :].split()[:_RETRACTED_WORDS])
        if (mine & content_words(named)) - _FUNCTION_WORDS:
            return True
    if not _REVERSAL_RE.search(text):
        return False
    shared = (mine & content_words(text)) - _FUNCTION_WORDS
    return len(shared) >= 2 or (bool(shared) and len(mine) <= 3)


def spot(turns: Sequence[Said], extra: Sequence[Spotted] = ()) -> list[Spotted]:
    """The memories the rules find in a run of turns, in the order they were said:
    cue sentences, accepted suggestions and ``extra`` ones (the semantic layer's), less
    decisions reversed later on."""
    found = sorted(
        [*rule_sentences(turns), *_accepted(turns), *extra],
        key=lambda s: (s.turn, not s.accepted),
    )
    dropped = _reversed(found, turns)
    return [s for i, s in enumerate(found) if i not in dropped]
