"""CortexGraph's knobs: the numbers of promotion, forgetting and review, and β.

:class:`MemoryTuning` holds them (defaults: CortexGraph's documented values) and applies
them to the formulas of :mod:`vaultmem.scores`; :func:`memory_tuning` reads them from the
``[memory]`` table of the configuration, each checked as every key is
(:mod:`vaultmem.config_values`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from vaultmem.config_values import at_least, coerce, fraction
from vaultmem.errors import ConfigError
from vaultmem.scores import (
    BETA,
    DANGER_ZONE,
    FORGET_THRESHOLD,
    PROMOTE_THRESHOLD,
    PROMOTE_USE_COUNT,
    PROMOTE_WINDOW,
    MemoryState,
    decay_score,
    parse_half_life,
    promotion_reason,
    review_priority,
    should_forget,
)

__all__ = ["DEFAULT_TUNING", "TUNING_KEYS", "MemoryTuning", "memory_tuning"]


@dataclass(frozen=True)
class MemoryTuning:
    """CortexGraph's knobs, as the ``[memory]`` keys set them (defaults: its documented
    values): the use-count exponent β, the promotion rule (score threshold, or a use
    count within a window of creation), the forgetting threshold, the danger zone of
    review priority, and whether use is reinforced without being asked
    (``auto_reinforce``: the session-end hook's reinforcement of notes surfaced and used).
    """

    beta: float = BETA
    promote_threshold: float = PROMOTE_THRESHOLD
    promote_use_count: int = PROMOTE_USE_COUNT
    promote_window: timedelta = PROMOTE_WINDOW
    forget_threshold: float = FORGET_THRESHOLD
    danger_zone: tuple[float, float] = DANGER_ZONE
    auto_reinforce: bool = True

    def score(self, state: MemoryState, now: datetime) -> float:
        """:func:`decay_score` with this β."""
        return decay_score(state, now, beta=self.beta)

    def promotion_reason(
        self, state: MemoryState, now: datetime, *, score_rule: bool = True
    ) -> str | None:
        """:func:`promotion_reason` with these thresholds (``score_rule`` False: the
        usage rule only)."""
        return promotion_reason(
            state,
            now,
            threshold=self.promote_threshold if score_rule else math.inf,
            use_count=self.promote_use_count,
            window=self.promote_window,
            beta=self.beta,
        )

    def forgets(self, state: MemoryState, now: datetime) -> bool:
        """:func:`should_forget` with this threshold and β."""
        return should_forget(state, now, threshold=self.forget_threshold, beta=self.beta)

    def review_priority(self, state: MemoryState, now: datetime) -> float:
        """:func:`review_priority` of the note's score, in this danger zone."""
        return review_priority(self.score(state, now), zone=self.danger_zone)


DEFAULT_TUNING = MemoryTuning()


# CortexGraph's knobs in [memory] (MemoryTuning's fields), as a file writes them.
TUNING_KEYS = (
    "beta",
    "promote_threshold",
    "promote_use_count",
    "promote_window",
    "forget_threshold",
    "danger_zone_min",
    "danger_zone_max",
    "auto_reinforce",
)


def memory_tuning(memory: Mapping[str, Any]) -> MemoryTuning:
    """The ``[memory]`` table's CortexGraph keys as a :class:`MemoryTuning`, each checked
    (defaults: CortexGraph's documented values)."""
    d = DEFAULT_TUNING
    window_text = coerce(memory.get("promote_window", "14d"), str, "memory.promote_window")
    try:
        window = parse_half_life(window_text)
    except ValueError:
        window = None
    if window is None:
        raise ConfigError(
            f"memory.promote_window: expected a duration such as 14d or 36h, got {window_text!r}"
        )
    low = fraction(memory.get("danger_zone_min", d.danger_zone[0]), "memory.danger_zone_min")
    high = fraction(memory.get("danger_zone_max", d.danger_zone[1]), "memory.danger_zone_max")
    if low >= high:
        raise ConfigError(
            f"memory.danger_zone_min ({low:g}) must be below memory.danger_zone_max ({high:g})"
        )
    beta = at_least(memory.get("beta", d.beta), float, "memory.beta", 0)
    promote = at_least(
        memory.get("promote_threshold", d.promote_threshold),
        float,
        "memory.promote_threshold",
        0,
        above=True,
    )
    forget = at_least(
        memory.get("forget_threshold", d.forget_threshold), float, "memory.forget_threshold", 0
    )
    if forget >= promote:
        raise ConfigError(
            f"memory.forget_threshold ({forget:g}) must be below memory.promote_threshold "
            f"({promote:g})"
        )
    return MemoryTuning(
        beta=float(beta),
        promote_threshold=float(promote),
        promote_use_count=at_least(
            memory.get("promote_use_count", d.promote_use_count),
            int,
            "memory.promote_use_count",
            1,
        ),
        promote_window=window,
        forget_threshold=float(forget),
        danger_zone=(low, high),
        auto_reinforce=coerce(
            memory.get("auto_reinforce", d.auto_reinforce), bool, "memory.auto_reinforce"
        ),
    )
