"""Replay diff (flips, band changes, probability shift, fixed/broken) and gates."""

from __future__ import annotations

import pytest
from test_evaluate_support import NONE, direct_config, scripted_router, small_catalog

from tui_router.evaluate import (
    EVAL_GATE_METRICS,
    REPLAY_GATE_METRICS,
    GateError,
    check_gate,
    gate_lines,
    parse_gate,
    replay_eval_report,
    replay_row,
    replay_session,
    tv_distance,
)
from tui_router.session import Session, SessionInfo, Turn, TurnDecision

NEW = {
    "alpha": {"read_file": 0.9},
    "bravo": {"send_sms": 0.9},
    "charlie": {"read_file": 0.9},
    "delta": {NONE: 0.9},
    "echo": {"read_file": 0.9},
}


def recorded_session() -> Session:
    def decided(choice, band, probabilities):
        return TurnDecision(choice=choice, band=band, probabilities=probabilities, action="fallback")

    turns = [
        # unchanged: same choice, same band
        Turn(message="alpha", label="read_file", decision=decided("read_file", "high", {"read_file": 0.9, NONE: 0.1})),
        # wrong before, right now: a flip that fixes a label
        Turn(message="bravo", label="send_sms", decision=decided("send_email", "high", {"send_email": 0.9, "send_sms": 0.1})),
        # right before, wrong now: a flip and a band change that break a label
        Turn(message="charlie", label="delete_file", decision=decided("delete_file", "medium", {"delete_file": 0.6, NONE: 0.4})),
        # unlabelled: only the band changes (low -> high)
        Turn(message="delta", decision=decided(NONE, "low", {NONE: 0.3, "read_file": 0.7})),
        # hand-written case without a recorded decision
        Turn(message="echo", label="read_file"),
    ]
    return Session(session=SessionInfo(id="rec", catalog="small"), turns=turns)


@pytest.fixture(scope="module")
def replayed():
    return replay_session(scripted_router(NEW), recorded_session())


def test_replay_counts_and_summary(replayed):
    r = replayed
    assert (r.changed, r.flips, r.band_changes, r.fixed, r.broken) == (3, 2, 2, 1, 1)
    assert r.summary_line() == (
        "5 turns replayed: 3 changed (2 flips, 2 band changes), 1 fixed, 1 broken against labels; "
        "1 with no recorded decision to diff (1 of 1 labelled right now)"
    )


def test_replay_rows(replayed):
    alpha, bravo, charlie, delta, echo = replayed.rows
    assert not alpha.changed and alpha.was_right and alpha.now_right
    assert bravo.choice_flipped and bravo.fixed and not bravo.band_changed
    assert (bravo.recorded_choice, bravo.new_choice) == ("send_email", "send_sms")
    assert charlie.broken and charlie.band_changed and (charlie.recorded_band, charlie.new_band) == ("medium", "high")
    assert delta.band_changed and not delta.choice_flipped and delta.was_right is None and delta.now_right is None
    assert echo.recorded_band is None and not echo.changed and echo.was_right is None and echo.now_right is True
    assert echo.tv_distance is None
    assert charlie.decision.choice == "read_file"  # the new Decision rides along for the console


def test_probability_shift(replayed):
    bravo = replayed.rows[1]
    new = bravo.decision.probabilities
    expected = 0.5 * sum(abs({"send_email": 0.9, "send_sms": 0.1}.get(k, 0.0) - new.get(k, 0.0)) for k in set(new) | {"send_email"})
    assert bravo.tv_distance == pytest.approx(expected)
    assert replayed.rows[0].tv_distance == pytest.approx(0.5 * sum(
        abs({"read_file": 0.9, NONE: 0.1}.get(k, 0.0) - v) for k, v in replayed.rows[0].decision.probabilities.items()
    ))
    tvs = [r.tv_distance for r in replayed.rows if r.tv_distance is not None]
    assert replayed.mean_tv == pytest.approx(sum(tvs) / len(tvs))
    assert tv_distance({"a": 0.5, "b": 0.5}, {"a": 1.0}) == pytest.approx(0.5)
    assert tv_distance({"a": 1.0}, {"b": 1.0}) == pytest.approx(1.0)
    assert tv_distance({}, {"a": 1.0}) is None


def test_unresolved_now_counts_as_wrong():
    router = scripted_router({"charlie": "connection refused"})
    turn = recorded_session().turns[2]
    row = replay_row(2, turn, router.route("charlie"), NONE)
    assert row.new_band == "unresolved" and row.new_choice is None and row.broken and row.choice_flipped


def test_replay_json_and_gate_metrics(replayed):
    data = replayed.to_json()
    assert data["broken"] == 1 and data["rows"][2]["broken"] is True and data["summary"].startswith("5 turns replayed")
    metrics = replayed.gate_metrics()
    assert metrics["flips"] == 2 and metrics["changed_rate"] == pytest.approx(0.6)
    assert set(REPLAY_GATE_METRICS) <= set(metrics)
    ev = replay_eval_report(replayed.rows, small_catalog(), direct_config())
    assert ev.n == 4 and ev.overall.top1.hits == 3  # bravo, alpha, echo right now; charlie wrong


# -- gates --------------------------------------------------------------------------------------


def test_gate_lines_and_counts():
    conditions = parse_gate("top1>=0.8,missed_review_rate<=0,ece<=0.1", EVAL_GATE_METRICS)
    results = check_gate(conditions, {"top1": 0.84, "missed_review_rate": 0.0, "ece": 0.132})
    assert gate_lines(results) == [
        "PASS top1 0.840 >= 0.8",
        "PASS missed_review_rate 0.000 <= 0",
        "FAIL ece 0.132 <= 0.1",
        "2 passed, 1 failed",
    ]


def test_gate_counts_percent_and_operators():
    conditions = parse_gate(" n >= 30 , top3>90% , unresolved==0, recall@3>=0.5 ", EVAL_GATE_METRICS)
    results = check_gate(conditions, {"n": 30.0, "top3": 0.92, "unresolved": 1.0, "recall@3": 0.5})
    assert [r.line() for r in results] == [
        "PASS n 30 >= 30",
        "PASS top3 0.920 > 90%",
        "FAIL unresolved 1 == 0",
        "PASS recall@3 0.500 >= 0.5",
    ]


def test_gate_not_measured_fails():
    results = check_gate(parse_gate("missed_review_rate<=0", EVAL_GATE_METRICS), {"missed_review_rate": None})
    assert gate_lines(results) == ["FAIL missed_review_rate n/a (nothing to measure) <= 0", "0 passed, 1 failed"]


def test_gate_errors():
    with pytest.raises(GateError, match="unknown metric 'top_1' \\(did you mean 'top1'\\?\\)"):
        parse_gate("top_1>=0.8", EVAL_GATE_METRICS)
    with pytest.raises(GateError, match="cannot read condition 'top1 => 0.8'"):
        parse_gate("top1 => 0.8", EVAL_GATE_METRICS)
    with pytest.raises(GateError, match="no conditions"):
        parse_gate(" , ", EVAL_GATE_METRICS)
