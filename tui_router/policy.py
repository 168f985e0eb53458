"""Confidence formulas and bands: how an answer turns into an action.

The console never calls a tool. `execute` is a proposal for the application's permission check;
a model's pick is routing evidence, not authorization.
"""

from __future__ import annotations

import math
from enum import StrEnum

from pydantic import BaseModel

from .catalog import Risk
from .config import ConfidenceFormula, PolicyConfig, Thresholds
from .decide.base import Answer, check_answer


class Band(StrEnum):
    high = "high"
    medium = "medium"
    low = "low"
    unresolved = "unresolved"


class Action(StrEnum):
    execute = "execute"
    confirm = "confirm"
    escalate = "escalate"
    fallback = "fallback"


def confidence_of(
    probabilities: dict[str, float], formula: ConfidenceFormula, reported: float | None = None
) -> float | None:
    """Confidence from the distribution over the n offered options (None when it cannot be had)."""
    if formula == "reported":
        return reported if reported is not None and math.isfinite(reported) else None
    if not probabilities:
        return None
    values = sorted(probabilities.values(), reverse=True)
    n = len(values)
    top = values[0]
    if formula == "top":
        return top
    if formula == "margin":
        return top - (values[1] if n > 1 else 0.0)
    if n < 2:
        return 1.0
    if formula == "entropy":
        entropy = -sum(p * math.log(p) for p in values if p > 0)
        return max(0.0, 1.0 - entropy / math.log(n))
    # reference: 1 when all mass is on one option, 0 when the distribution is flat
    return max(0.0, (top - 1.0 / n) / (1.0 - 1.0 / n))


def margin_of(probabilities: dict[str, float]) -> float:
    values = sorted(probabilities.values(), reverse=True) + [0.0, 0.0]
    return values[0] - values[1]


def band_of(confidence: float, thresholds: Thresholds) -> Band:
    if confidence >= thresholds.high:
        return Band.high
    if confidence >= thresholds.medium:
        return Band.medium
    return Band.low


def action_of(band: Band, is_none: bool, risk: Risk | None, policy: PolicyConfig) -> Action:
    """The action for a resolved band (also used to re-band recorded turns in a what-if)."""
    if band is Band.unresolved or is_none or band is Band.low:
        return Action.fallback
    if risk is Risk.escalation:
        return Action.escalate
    if band is Band.high and risk not in policy.confirm_risks:
        return Action.execute
    return Action.confirm


class Banding(BaseModel):
    confidence: float | None
    reported_confidence: float | None
    band: Band
    action: Action
    thresholds: Thresholds
    error: str = ""


def band_answer(
    answer: Answer,
    options: list[str],
    none_option: str,
    risk: Risk | None,
    policy: PolicyConfig,
) -> Banding:
    """Band and action for one answer. Errors and invalid answers are unresolved and never execute."""
    thresholds = policy.thresholds_for(risk)
    reported = answer.reported_confidence
    problem = check_answer(answer, options)
    if problem:
        return Banding(
            confidence=None,
            reported_confidence=reported,
            band=Band.unresolved,
            action=Action.fallback,
            thresholds=thresholds,
            error=problem,
        )
    confidence = confidence_of(answer.probabilities, policy.confidence, reported)
    if confidence is None:
        return Banding(
            confidence=None,
            reported_confidence=reported,
            band=Band.unresolved,
            action=Action.fallback,
            thresholds=thresholds,
            error=f"no confidence: the backend reported none and the policy uses '{policy.confidence}'",
        )
    band = band_of(confidence, thresholds)
    action = action_of(band, answer.choice == none_option, risk, policy)
    return Banding(
        confidence=confidence,
        reported_confidence=reported,
        band=band,
        action=action,
        thresholds=thresholds,
    )
