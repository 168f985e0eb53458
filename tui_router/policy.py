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

__all__ = ["Action", "Band", "Banding", "action_of", "band_answer", "band_of", "confidence_of", "margin_of"]


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
