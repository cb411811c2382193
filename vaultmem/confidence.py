"""How much a memory is trusted (SPEC §5): contradiction and confirmation steps, and the
slow fade of unconfirmed trust that ranking reads. Pure functions, as :mod:`vaultmem.scores`.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta

from vaultmem.scores import elapsed

# A contradiction costs a quarter of the scale, and trust never falls below the floor
# from it or from age: a contradicted memory is doubtful, not known to be false (that is
# what `superseded` and `forget` say), so it stays findable.
CONTRADICTION_STEP = 0.25
CONFIDENCE_FLOOR = 0.2
# A confirmation closes a fifth of the gap to 1: from the default 0.5 it takes four
# confirmations to pass 0.75, and one contradiction undoes about two of them.
CONFIRM_STEP = 0.2
# Unconfirmed trust keeps its value for four weeks, then loses 5% a week of what it has
# above the floor: the excess halves in about 13.5 weeks, a quarter of a year.
CONFIDENCE_GRACE = timedelta(weeks=4)
CONFIDENCE_WEEKLY_DECAY = 0.05
# ClawMem's attention decay spares these kinds of notes ("Decision/hub/research/antipattern
# are exempt"): what was decided, or learned to avoid, is not less true for being unread.
UNFADING_TYPES = frozenset({"decision", "hub", "research", "antipattern"})
# Written back rounded, so 0.6 + 0.2·0.4 lands in git as 0.68, not 0.6799999999999999.
_CONFIDENCE_DIGITS = 6


def _unit(value: float) -> float:
    return 0.0 if math.isnan(value) else min(1.0, max(0.0, value))


def contradicted(confidence: float, *, step: float = CONTRADICTION_STEP) -> float:
    """Confidence after a contradiction: ``max(0.2, c − 0.25)``, never raised.

    0.5 → 0.25, 0.3 → 0.2 (the floor), and a value already below the floor (set by hand)
    stays where it is: a contradiction never makes a note more trusted.
    """
    c = _unit(confidence)
    return round(min(c, max(CONFIDENCE_FLOOR, c - step)), _CONFIDENCE_DIGITS)


def confirmed(confidence: float, *, step: float = CONFIRM_STEP) -> float:
    """Confidence after a confirmation: ``c + 0.2·(1 − c)``, bounded by 1.

    0.5 → 0.6 → 0.68 → 0.744; 0.2 → 0.36. Why a fraction of the gap and not a fixed
    amount: each confirmation counts for less as trust grows, so 1 is approached but
    never reached by confirmations alone; and why 0.2: a contradiction (−0.25) should
    outweigh a confirmation, because agents tend to confirm what they have just read.
    """
    c = _unit(confidence)
    return round(min(1.0, c + step * (1.0 - c)), _CONFIDENCE_DIGITS)


def effective_confidence(
    confidence: float,
    *,
    now: datetime,
    last_confirmed: datetime | None = None,
    created: datetime | None = None,
    mtime: datetime | None = None,
    grace: timedelta = CONFIDENCE_GRACE,
    weekly_decay: float = CONFIDENCE_WEEKLY_DECAY,
    note_type: str | None = None,
) -> float:
    """Confidence as ranking sees it at ``now``: unconfirmed trust fades, slowly, except
    a note of a type in :data:`UNFADING_TYPES` (``note_type``), whose stays as stored.

    ``c_eff = 0.2 + (c − 0.2) · 0.95^w`` with ``w`` the weeks since the note was last
    confirmed beyond a grace of four weeks (``w = max(0, weeks − 4)``); ``c`` unchanged
    when it is at or below the floor 0.2. Last confirmed: ``last_confirmed``, else
    ``created``, else ``mtime`` (the spec's "created: first seen"); with none of them the
    note counts as just seen. After 10 weeks unconfirmed, 0.5 reads as
    ``0.2 + 0.3·0.95^6 = 0.4205``; after a year (48 weeks past the grace) 0.2256.

    Why this rate: a month is the life of a short-term memory (promotion looks at 14
    days, `remember`'s half-life is days), so nothing fades before a note could have been
    confirmed; after that the excess halves in ~13.5 weeks, so facts about versions,
    owners and plans — what goes stale in a quarter — lose half their extra trust in a
    quarter and most of it in a year, while a memory still never reads as worse than a
    contradicted one. Computed at read time: nothing is written, and a confirmation
    (which sets ``last_confirmed``) restarts the clock.
    """
    c = _unit(confidence)
    if c <= CONFIDENCE_FLOOR or note_type in UNFADING_TYPES:
        return c
    # Since the later of the two (elapsed takes the latest anchor); the file's mtime only
    # for a note with neither, as it is reset by every write.
    age = elapsed(now, last_used=last_confirmed, created=created)
    if last_confirmed is None and created is None:
        age = elapsed(now, mtime=mtime)
    weeks = max(age - grace, timedelta(0)) / timedelta(weeks=1)
    return CONFIDENCE_FLOOR + (c - CONFIDENCE_FLOOR) * (1.0 - weekly_decay) ** weeks
