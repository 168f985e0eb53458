"""Confidence formulas and bands: how an answer turns into an action.

The console never calls a tool. `execute` is a proposal for the application's permission check;
a model's pick is routing evidence, not authorization.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel

from .catalog import Risk
from .confidence import confidence_of, margin_of
from .config import PolicyConfig, Thresholds
from .decide.base import Answer, check_answer

__all__ = ["Action", "Band", "Banding", "band_answer", "confidence_of", "margin_of"]


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
    if confidence >= thresholds.high:
        band = Band.high
    elif confidence >= thresholds.medium:
        band = Band.medium
    else:
        band = Band.low

    if answer.choice == none_option or band is Band.low:
        action = Action.fallback
    elif risk is Risk.escalation:
        action = Action.escalate
    elif band is Band.high and risk not in policy.confirm_risks:
        action = Action.execute
    else:
        action = Action.confirm
    return Banding(
        confidence=confidence,
        reported_confidence=reported,
        band=band,
        action=action,
        thresholds=thresholds,
    )
