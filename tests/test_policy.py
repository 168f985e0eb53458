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
    ("ans", "message"),
    [
        (answer(None), "the backend gave no answer"),
        (answer("a", error="HTTP 500"), "HTTP 500"),
        (answer("a", {}), "the answer has no probabilities"),
        (answer("b"), "the choice 'b' is not the most probable option ('a' is)"),
        (answer("a", {"a": 0.7, "b": 0.2}), "probability keys do not match the offered options (missing 'none')"),
        (answer("a", {"a": 0.7, "b": 0.2, "none": 0.1, "z": 0.0}), "probability keys do not match the offered options (unexpected 'z')"),
        (answer("a", {"a": 0.9, "b": 0.2, "none": 0.1}), "probabilities sum to 1.2000, not 1"),
        (answer("a", {"a": 1.1, "b": -0.2, "none": 0.1}), "probability of 'b' is negative (-0.2)"),
        (answer("a", {"a": float("nan"), "b": 0.2, "none": 0.1}), "probability of 'a' is not a finite number"),
        (answer("a", reported=1.5), "the reported confidence 1.5 is outside [0, 1]"),
    ],
)
def test_invalid_answers_are_unresolved(ans: Answer, message: str) -> None:
    # the exact sentence: it is what the operator reads in the console and the session file
    result = band(ans)
    assert result.band is Band.unresolved and result.action is Action.fallback
    assert result.error == message


def test_key_mismatch_lists_at_most_five_of_each() -> None:
    options = [f"o{i}" for i in range(7)]
    probs = {f"k{i}": 1 / 7 for i in range(7)}
    result = band_answer(Answer(choice="o0", probabilities=probs), options, "o6", Risk.read, PolicyConfig())
    assert result.error == (
        "probability keys do not match the offered options (missing 'o0', 'o1', 'o2', 'o3', 'o4'; "
        "unexpected 'k0', 'k1', 'k2', 'k3', 'k4')"
    )


def test_a_choice_spelt_in_another_unicode_form_is_not_offered() -> None:
    # NFD "café" is NFC-equal to the offered "café" but not byte-equal: never acted on
    nfc, nfd = "caf\u00e9", "cafe\u0301"
    result = band_answer(Answer(choice=nfd, probabilities={nfc: 0.9, "none": 0.1}), [nfc, "none"], "none", Risk.read, PolicyConfig())
    assert result.error == f"the choice {nfd!r} is not one of the offered options"


def test_zero_probabilities_and_float_ties_are_valid() -> None:
    # a zero is a probability, not a negative one
    assert band(answer("a", {"a": 1.0, "b": 0.0, "none": 0.0})).band is Band.high
    # a choice within 1e-9 of the top is a tie in floating point, not a wrong argmax
    tie = band(answer("b", {"a": 0.5, "b": 0.5 - 1e-9, "none": 1e-9}))
    assert tie.error == "" and tie.band is Band.low


def test_per_risk_thresholds() -> None:
    policy = PolicyConfig(risk={Risk.write: Thresholds(high=0.99, medium=0.2)})
    probs = {"a": 0.95, "b": 0.03, "none": 0.02}
    assert band(answer("a", probs), Risk.write, policy).band is Band.medium
    assert band(answer("a", probs), Risk.read, policy).band is Band.high
    assert band(answer("a", probs), Risk.write, policy).thresholds.high == 0.99


# Exact thresholds: `confidence >= high` is high and `>= medium` is medium (the seeds' rule), so a
# confidence of exactly 0.75 executes and exactly 0.45 asks; a `>` in band_answer fails these.
@pytest.mark.parametrize(
    ("reported", "expected_band", "expected_action"),
    [
        (0.75, Band.high, Action.execute),
        (0.7499, Band.medium, Action.confirm),
        (0.45, Band.medium, Action.confirm),
        (0.4499, Band.low, Action.fallback),
        (1.0, Band.high, Action.execute),
        (0.0, Band.low, Action.fallback),
    ],
)
def test_bands_at_the_exact_thresholds(reported: float, expected_band: Band, expected_action: Action) -> None:
    result = band(answer("a", reported=reported), policy=PolicyConfig(confidence="reported"))
    assert (result.band, result.action) == (expected_band, expected_action)
    assert result.confidence == reported and result.reported_confidence == reported
    assert (result.thresholds.high, result.thresholds.medium) == (0.75, 0.45)


def test_recomputed_confidence_of_exactly_high_is_high() -> None:
    # two options: (0.875 - 1/2) / (1 - 1/2) = 0.75 exactly in binary floating point
    probs = {"a": 0.875, "none": 0.125}
    result = band(answer("a", probs), options=["a", "none"])
    assert result.confidence == 0.75
    assert (result.band, result.action) == (Band.high, Action.execute)
    # per-risk thresholds are compared the same way: exactly `medium` is medium, not low
    policy = PolicyConfig(risk={Risk.write: Thresholds(high=0.9, medium=0.75)})
    written = band(answer("a", probs), Risk.write, policy, options=["a", "none"])
    assert (written.band, written.action, written.thresholds.medium) == (Band.medium, Action.confirm, 0.75)


def test_reported_confidence_is_kept_whatever_the_band() -> None:
    # the backend's own number is shown beside the recomputed one: in every branch of band_answer
    assert band(answer("a", reported=0.33)).reported_confidence == 0.33
    assert band(answer("zz", reported=0.91)).reported_confidence == 0.91  # invalid answer
    no_conf = band(answer("a", reported=None), policy=PolicyConfig(confidence="reported"))
    assert no_conf.reported_confidence is None and no_conf.confidence is None
    inf = band_answer(Answer(choice="a", probabilities=P, reported_confidence=float("inf")), OPTIONS, "none", Risk.read, PolicyConfig(confidence="reported"))
    assert inf.band is Band.unresolved and inf.reported_confidence == float("inf")


def test_formulas_at_their_edges() -> None:
    # reported: a non-finite value is no confidence
    assert confidence_of(P, "reported", float("nan")) is None
    assert confidence_of(P, "reported", float("inf")) is None
    # one option: margin is the top probability, reference and entropy call it certain
    assert confidence_of({"a": 1.0}, "margin") == 1.0
    assert confidence_of({"a": 1.0}, "reference") == 1.0
    assert confidence_of({"a": 1.0}, "entropy") == 1.0
    assert confidence_of({}, "reference") is None
    # two options: the second probability counts
    assert confidence_of({"a": 0.875, "b": 0.125}, "margin") == 0.75
    assert confidence_of({"a": 0.875, "b": 0.125}, "reference") == 0.75
    assert confidence_of({"a": 0.5, "b": 0.5}, "entropy") == pytest.approx(0.0)
    # a zero probability adds nothing to the entropy (0 log 0 = 0), it does not fail
    assert confidence_of({"a": 1.0, "b": 0.0, "c": 0.0}, "entropy") == pytest.approx(1.0)
    # margin_of pads with zeros: one option has its whole probability as margin
    assert margin_of({"a": 0.6}) == pytest.approx(0.6)
    assert margin_of({"a": 0.6, "b": 0.4}) == pytest.approx(0.2)
    assert margin_of({}) == 0.0


def test_thresholds_without_a_risk_override_are_the_policy_defaults() -> None:
    policy = PolicyConfig(high=0.9, medium=0.3, risk={Risk.write: Thresholds(high=0.95, medium=0.5)})
    for risk in (None, Risk.read, Risk.payment):
        chosen = policy.thresholds_for(risk)
        assert (chosen.high, chosen.medium) == (0.9, 0.3)
    assert policy.thresholds_for(Risk.write) == Thresholds(high=0.95, medium=0.5)
