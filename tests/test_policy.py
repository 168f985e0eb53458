"""Confidence formulas and bands, against hand-computed values."""

from __future__ import annotations

import math

import pytest

from tui_router.catalog import Risk
from tui_router.config import PolicyConfig, Thresholds
from tui_router.decide.base import Answer
from tui_router.policy import Action, Band, band_answer, confidence_of, margin_of

P = {"a": 0.7, "b": 0.2, "none": 0.1}
OPTIONS = ["a", "b", "none"]


def test_reference_formula() -> None:
    # (0.7 - 1/3) / (1 - 1/3) = 0.55
    assert confidence_of(P, "reference") == pytest.approx(0.55)
    assert confidence_of({"a": 1.0, "b": 0.0}, "reference") == pytest.approx(1.0)
    assert confidence_of({"a": 0.25, "b": 0.25, "c": 0.25, "d": 0.25}, "reference") == pytest.approx(0.0)


def test_top_margin_entropy_reported() -> None:
    assert confidence_of(P, "top") == pytest.approx(0.7)
    assert confidence_of(P, "margin") == pytest.approx(0.5)
    entropy = -(0.7 * math.log(0.7) + 0.2 * math.log(0.2) + 0.1 * math.log(0.1))
    assert confidence_of(P, "entropy") == pytest.approx(1 - entropy / math.log(3))
    assert confidence_of(P, "entropy") == pytest.approx(0.27017, abs=1e-4)
    assert confidence_of(P, "reported", 0.42) == 0.42
    assert confidence_of(P, "reported", None) is None
    assert margin_of(P) == pytest.approx(0.5)


def answer(choice: str | None, probs: dict[str, float] | None = None, reported: float | None = None, error: str = "") -> Answer:
    return Answer(choice=choice, probabilities=probs if probs is not None else P, reported_confidence=reported, error=error)


def band(ans: Answer, risk: Risk | None = Risk.read, policy: PolicyConfig | None = None, options: list[str] = OPTIONS):
    return band_answer(ans, options, "none", risk, policy or PolicyConfig())


def test_high_executes_read_and_write() -> None:
    probs = {"a": 0.95, "b": 0.03, "none": 0.02}
    result = band(answer("a", probs))
    assert (result.band, result.action) == (Band.high, Action.execute)
    assert result.confidence == pytest.approx((0.95 - 1 / 3) / (2 / 3))
    assert band(answer("a", probs), Risk.write).action is Action.execute


@pytest.mark.parametrize("risk", [Risk.payment, Risk.permission, Risk.outbound])
def test_risk_policy_never_auto_executes(risk: Risk) -> None:
    result = band(answer("a", {"a": 0.95, "b": 0.03, "none": 0.02}), risk)
    assert (result.band, result.action) == (Band.high, Action.confirm)


def test_medium_confirms_and_low_falls_back() -> None:
    assert band(answer("a")).band is Band.medium and band(answer("a")).action is Action.confirm
    low = band(answer("a", {"a": 0.5, "b": 0.3, "none": 0.2}))  # (0.5-1/3)/(2/3) = 0.25
    assert (low.band, low.action) == (Band.low, Action.fallback)


def test_escalation_option_escalates() -> None:
    result = band(answer("a", {"a": 0.95, "b": 0.03, "none": 0.02}), Risk.escalation)
    assert result.action is Action.escalate


def test_none_option_falls_back_even_when_confident() -> None:
    result = band(answer("none", {"a": 0.02, "b": 0.03, "none": 0.95}), None)
    assert result.band is Band.high and result.action is Action.fallback


def test_missing_confidence_is_unresolved() -> None:
    policy = PolicyConfig(confidence="reported")
    result = band(answer("a", reported=None), policy=policy)
    assert (result.band, result.action) == (Band.unresolved, Action.fallback)
    assert "no confidence" in result.error
    assert band(answer("a", reported=0.9), policy=policy).band is Band.high


def test_invented_choice_is_never_executed_or_repaired() -> None:
    result = band(answer("rm_rf", {"a": 0.95, "b": 0.03, "none": 0.02}))
    assert (result.band, result.action) == (Band.unresolved, Action.fallback)
    assert result.error == "the choice 'rm_rf' is not one of the offered options"


@pytest.mark.parametrize(
    ("ans", "needle"),
    [
        (answer(None), "no answer"),
        (answer("a", error="HTTP 500"), "HTTP 500"),
        (answer("b"), "not the most probable"),
        (answer("a", {"a": 0.7, "b": 0.2}), "missing 'none'"),
        (answer("a", {"a": 0.7, "b": 0.2, "none": 0.1, "z": 0.0}), "unexpected 'z'"),
        (answer("a", {"a": 0.9, "b": 0.2, "none": 0.1}), "sum to 1.2000"),
        (answer("a", {"a": 1.1, "b": -0.2, "none": 0.1}), "negative"),
        (answer("a", {"a": float("nan"), "b": 0.2, "none": 0.1}), "not a finite number"),
    ],
)
def test_invalid_answers_are_unresolved(ans: Answer, needle: str) -> None:
    result = band(ans)
    assert result.band is Band.unresolved and result.action is Action.fallback
    assert needle in result.error


def test_per_risk_thresholds() -> None:
    policy = PolicyConfig(risk={Risk.write: Thresholds(high=0.99, medium=0.2)})
    probs = {"a": 0.95, "b": 0.03, "none": 0.02}
    assert band(answer("a", probs), Risk.write, policy).band is Band.medium
    assert band(answer("a", probs), Risk.read, policy).band is Band.high
    assert band(answer("a", probs), Risk.write, policy).thresholds.high == 0.99
