"""Calibration on synthetic sets whose right answers are known: the threshold sweep, the local fit,
and thresholds written into a config that the router then uses."""

from __future__ import annotations

import math
import random
import tomllib

import pytest

from tui_router.calibrate import (
    EvidenceSet,
    LocalParams,
    SweepTurn,
    best_high,
    best_medium,
    fit_local,
    isotonic_accuracy,
    suggest_thresholds,
    sweep_point,
)
from tui_router.config import PolicyConfig


def staircase(risk: str = "read") -> list[SweepTurn]:
    """Confidence 0.00 .. 0.99; right at >= 0.5, every other turn right in [0.2, 0.5), wrong below 0.2.

    Known answers (target 0.9, confirm 0.5): high 0.38 (62 turns at >= 0.38, 56 right = 90.3%; at 0.37
    it is 56/63 = 88.9%); medium 0.20 (below 0.20 picks are never right, from 0.20 half are).
    """
    turns = []
    for i in range(100):
        right = i >= 50 or (20 <= i < 50 and i % 2 == 0)
        turns.append(SweepTurn(confidence=i / 100, risk=risk, correct=right, review=False))
    return turns


def test_high_and_medium_on_a_known_staircase():
    turns = staircase()
    assert best_high(turns, 0.9) == 0.38
    assert best_medium(turns, 0.38, 0.5) == 0.20
    point = sweep_point(turns, 0.38, 0.20, executable=True)
    assert (point.executed, point.executed_correct) == (62, 56)
    assert (point.confirmed, point.confirmed_correct, point.fallback) == (18, 9, 20)
    assert best_high(turns, 1.0) == 0.50  # perfect precision only where every pick is right


def test_review_turns_bound_both_thresholds():
    low_review = [*staircase(), SweepTurn(confidence=0.15, risk="read", correct=False, review=True)]
    assert best_medium(low_review, 0.38, 0.5) == 0.15  # it must reach a person, not the fallback
    high_review = [*staircase(), SweepTurn(confidence=0.95, risk="read", correct=False, review=True)]
    assert best_high(high_review, 0.9) == 0.96  # it must never auto-execute
    assert sweep_point(high_review, 0.96, 0.20, executable=True).missed_reviews == 0
    assert sweep_point(high_review, 0.95, 0.20, executable=True).missed_reviews == 1


def test_no_threshold_reaches_the_target():
    never = [SweepTurn(confidence=c / 10, risk="read", correct=False, review=False) for c in range(11)]
    assert best_high(never, 0.95) is None
    levels, suggested = suggest_thresholds(never, PolicyConfig(), target_precision=0.95, confirm_precision=0.5)
    assert suggested[0].high == 1.0 and "no threshold reaches" in levels[0].note


def test_isotonic_fit_is_monotone():
    blocks = isotonic_accuracy(staircase())
    values = [acc for _, _, acc in blocks]
    assert values == sorted(values)
    assert blocks[-1][2] == 1.0 and blocks[0][2] == 0.0


def test_suggestions_per_risk_level():
    outbound = [SweepTurn(confidence=i / 40, risk="outbound", correct=i >= 20, review=False) for i in range(40)]
    escalation = [SweepTurn(confidence=0.6, risk="escalation", correct=True, review=True) for _ in range(5)]
    none_turns = [SweepTurn(confidence=0.9, risk=None, correct=True, review=False, chose_none=True) for _ in range(7)]
    levels, suggested = suggest_thresholds(
        staircase() + outbound + escalation + none_turns, PolicyConfig(), target_precision=0.9, confirm_precision=0.5
    )
    by_risk = {s.risk: (s.high, s.medium) for s in suggested}
    assert by_risk["default"] == (0.38, 0.20)  # pooled over auto-executable levels (read only here)
    # outbound never auto-executes: high stays as configured, medium just above the last wrong block (0.475)
    assert by_risk["outbound"] == (0.75, 0.48)
    assert "escalation" not in by_risk  # 5 turns: inherits [policy]
    level = {lv.risk: lv for lv in levels}
    assert "inherits" in level["escalation"].note and level["read"].same_as_default
    assert sum(p.chosen for p in level["default"].sweep) == 1


def synthetic_evidence(n: int, temperature: float, margin: float, seed: int = 7) -> EvidenceSet:
    """Labels drawn from softmax(evidence / T) with the none option at base + margin: T and margin are known."""
    rng = random.Random(seed)
    data = EvidenceSet(options=[], evidence=[], none_index=[], correct=[])
    options = ["a", "b", "c", "none"]
    for _ in range(n):
        values = [rng.uniform(0, 3), rng.uniform(0, 3), rng.uniform(0, 3), rng.uniform(0, 1)]
        logits = values[:3] + [values[3] + margin]
        peak = max(logits)
        weights = [math.exp((v - peak) / temperature) for v in logits]
        label = rng.choices(options, weights=weights)[0]
        data.options.append(options)
        data.evidence.append(values)
        data.none_index.append(3)
        data.correct.append([o == label for o in options])
    return data


def test_fit_recovers_known_temperature_and_margin():
    data = synthetic_evidence(1500, temperature=0.5, margin=1.0)
    fit = fit_local(data, LocalParams(temperature=2.0, none_margin=-1.0), folds=5)
    assert fit.after.temperature == pytest.approx(0.5, rel=0.2)
    assert fit.after.none_margin == pytest.approx(1.0, abs=0.25)
    assert fit.after_nll < fit.before_nll  # held-out, honestly: each fold fitted on the others
    assert fit.after_accuracy.hits > fit.before_accuracy.hits and fit.after_accuracy.total == 1500
    assert fit.folds == 5 and fit.turns == 1500


def test_pooled_model_fit_recovers_known_parameters():
    """The same recovery for the two-step (pooled tools vs none) model, via its bulk surface."""
    from tui_router.calibrate import DistributionModel, model_surface

    model = DistributionModel(kind="pooled", none_ratio=1.0, tool_ratio=0.5)
    rng = random.Random(11)
    data = EvidenceSet(options=[], evidence=[], none_index=[], correct=[])
    options = ["a", "b", "c", "none"]
    t_true, m_true = 0.4, 0.8
    for _ in range(1500):
        values = [rng.uniform(0, 3), rng.uniform(0, 3), rng.uniform(0, 3), rng.uniform(0, 1)]
        tools = values[:3]
        peak = max(tools)
        pooled = peak + t_true * math.log(sum(math.exp((v - peak) / t_true) for v in tools))
        p_none = 1 / (1 + math.exp(-((values[3] + m_true - pooled) / t_true)))
        within = [math.exp((v - peak) / (t_true * 0.5)) for v in tools]
        weights = [(1 - p_none) * w / sum(within) for w in within] + [p_none]
        label = rng.choices(options, weights=weights)[0]
        data.options.append(options)
        data.evidence.append(values)
        data.none_index.append(3)
        data.correct.append([o == label for o in options])
    fit = fit_local(data, LocalParams(temperature=1.5, none_margin=-0.5), surface=model_surface(data, model))
    assert fit.after.temperature == pytest.approx(t_true, rel=0.2)
    assert fit.after.none_margin == pytest.approx(m_true, abs=0.25)
    assert fit.after_nll < fit.before_nll


def test_no_none_cases_keeps_the_none_margin():
    data = synthetic_evidence(400, temperature=0.5, margin=1.0)
    fit = fit_local(data, LocalParams(temperature=1.0, none_margin=0.3), fit_margin=False)
    assert fit.after.none_margin == 0.3 and "none margin kept" in fit.note
    assert fit.after.temperature != 1.0


def test_wilson_lower_bound():
    from tui_router.calibrate import wilson_lower_bound

    assert wilson_lower_bound(30, 30) == pytest.approx(0.8865, abs=1e-4)  # 30 of 30 cannot certify 95%
    assert wilson_lower_bound(0, 0) is None
    assert wilson_lower_bound(950, 1000) == pytest.approx(0.9346, abs=1e-3)


def test_fit_leaves_unreachable_turns_out_of_the_nll():
    data = synthetic_evidence(200, temperature=0.5, margin=1.0)
    data.correct[0] = [False, False, False, False]  # its right answer was never offered
    fit = fit_local(data, LocalParams(temperature=0.5, none_margin=1.0), folds=4)
    assert fit.turns == 199 and fit.before_accuracy.total == 200
    assert math.isfinite(fit.after_nll) and math.isfinite(fit.before_nll)


def test_write_config_merges_and_the_router_uses_it(tmp_path):
    from test_evaluate_support import write_session

    from tui_router.calibrate import calibrate, write_config
    from tui_router.catalog import load_catalog
    from tui_router.config import Config, load_config
    from tui_router.route import build_router

    catalog = load_catalog("demo")
    turns = [{"message": ex, "label": t.id} for t in catalog.tools for ex in t.examples]
    turns += [{"message": q, "label": "defer_to_llm"} for q in ("what is the capital of peru", "write me a haiku about rain")]
    cases = write_session(tmp_path / "cases.toml", turns, catalog="demo")
    result = calibrate([cases], Config(backend="local"), catalog=catalog, target_precision=0.75)  # 60 turns: a 0.9 bound is out of reach
    assert result.n == len(turns) and result.fit is not None and result.fit.folds == 5
    assert "skipped" not in result.fit.note  # the evidence reproduces the local backend's decide()
    assert "small grid" not in result.fit.note  # and the bulk model reproduces its distribution step
    assert result.fitted_for == "reference / local-lexical-1"

    path = tmp_path / "tui-router.toml"
    path.write_text('# my settings\nsessions_dir = "elsewhere"\n\n[retrieval]\ntop_k = 4\n\n[policy.risk.payment]\nhigh = 0.99\nmedium = 0.9\n')
    write_config(path, result)
    data = tomllib.loads(path.read_text())
    assert data["sessions_dir"] == "elsewhere" and data["retrieval"] == {"top_k": 4}
    assert data["backend"] == "local"  # the file said nothing (auto): pinned to what was calibrated
    default = next(t for t in result.thresholds if t.risk == "default")
    assert (data["policy"]["high"], data["policy"]["medium"]) == (default.high, default.medium)
    assert data["policy"]["fitted_for"] == "reference / local-lexical-1"
    assert data["local"] == {"temperature": result.fit.after.temperature, "none_margin": result.fit.after.none_margin}
    assert (tmp_path / "tui-router.toml.bak").read_text().startswith("# my settings")  # comments kept aside

    config = load_config(path)
    assert config.policy.high == default.high and config.policy.fitted_for == result.fitted_for
    router = build_router(config)
    assert router.backend.temperature == result.fit.after.temperature
    decision = router.route("read the file notes/todo.md")
    assert decision.risk is not None and decision.risk.value == "read"
    expected = config.policy.thresholds_for(decision.risk)
    assert (decision.thresholds.high, decision.thresholds.medium) == (expected.high, expected.medium)
    if "read" not in data["policy"].get("risk", {}):
        assert decision.thresholds.high == default.high


def test_write_config_refuses_a_broken_file(tmp_path):
    from tui_router.calibrate import CalibrationResult, SuggestedThresholds, write_config
    from tui_router.errors import ConfigError

    result = CalibrationResult(
        n=60, backend="bm25", model="m", formula="reference", fitted_for="reference / m", target_precision=0.95,
        confirm_precision=0.5, learning="", fit=None, levels=[],
        thresholds=[SuggestedThresholds(risk="default", high=0.8, medium=0.5, source="")], unavoidable_missed_reviews=0,
    )
    path = tmp_path / "bad.toml"
    path.write_text("[policy\nhigh = ")
    with pytest.raises(ConfigError, match="nothing was written"):
        write_config(path, result)
    assert path.read_text() == "[policy\nhigh = "
    unknown = tmp_path / "unknown.toml"
    unknown.write_text("[polcy]\nhigh = 0.5\n")
    with pytest.raises(ConfigError):
        write_config(unknown, result)  # the merged file would not load: nothing is written
    assert unknown.read_text() == "[polcy]\nhigh = 0.5\n"
    fresh = write_config(tmp_path / "new.toml", result)
    assert tomllib.loads(fresh.read_text())["policy"] == {"high": 0.8, "medium": 0.5, "fitted_for": "reference / m"}
