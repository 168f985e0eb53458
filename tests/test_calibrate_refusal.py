"""`calibrate` refuses to write thresholds whose lower bound on execute precision misses the target."""

from __future__ import annotations

import tomllib

import pytest
from test_evaluate_support import write_session

from tui_router.calibrate import (
    CalibrationResult,
    SuggestedThresholds,
    labels_needed,
    refusal,
    wilson_lower_bound,
    write_config,
)
from tui_router.cli import main
from tui_router.errors import ConfigError


def result_with(executed: int, correct: int, high: float = 0.0, target: float = 0.95, n: int = 60) -> CalibrationResult:
    return CalibrationResult(
        n=n, backend="bm25", model="m", formula="reference", fitted_for="reference / m", target_precision=target,
        confirm_precision=0.5, learning="", fit=None, levels=[],
        thresholds=[SuggestedThresholds(risk="default", high=high, medium=high, source="", executed=executed, executed_correct=correct)],
        unavoidable_missed_reviews=0,
    )


def test_labels_needed_reaches_the_target_and_no_sooner() -> None:
    more = labels_needed(20, 20, 0.95)
    assert more is not None and more > 0
    total = 20 + more
    assert wilson_lower_bound(total, total) >= 0.95 > wilson_lower_bound(total - 2, total - 2)
    assert labels_needed(18, 20, 0.95) is None  # 90% right: no number of such labels reaches 95%
    assert labels_needed(0, 0, 0.95) is None


def test_high_zero_on_a_small_set_is_refused_and_nothing_is_written(tmp_path) -> None:
    # 20 turns auto-executed, all right: the point estimate says 100%, the lower bound 0.84
    result = result_with(executed=20, correct=20, high=0.0)
    reason = refusal(result)
    assert "lower bound on execute precision is 0.84" in reason and "more labelled turns" in reason
    path = tmp_path / "cfg.toml"
    path.write_text('sessions_dir = "x"\n')
    with pytest.raises(ConfigError, match="nothing was written"):
        write_config(path, result)
    assert path.read_text() == 'sessions_dir = "x"\n'
    # a precision below the target: labels cannot help, and the message says so
    assert "cannot fix it" in refusal(result_with(executed=100, correct=90))


def test_enough_evidence_or_nothing_executed_is_written(tmp_path) -> None:
    assert refusal(result_with(executed=400, correct=399, high=0.7)) == ""
    assert refusal(result_with(executed=0, correct=0, high=1.0)) == ""
    written = write_config(tmp_path / "ok.toml", result_with(executed=400, correct=399, high=0.7))
    assert tomllib.loads(written.read_text())["policy"]["high"] == 0.7


def test_the_cli_refuses_with_one_sentence_and_exit_2(tmp_path, capsys) -> None:
    from tui_router.catalog import load_catalog

    catalog = load_catalog("demo")
    turns = [{"message": ex, "label": t.id} for t in catalog.tools for ex in t.examples]
    cases = write_session(tmp_path / "cases.toml", turns, catalog="demo")
    target = tmp_path / "cfg.toml"
    code = main(["calibrate", str(cases), "--backend", "local", "--write-config", str(target), "--target-precision", "0.99"])
    err = capsys.readouterr().err
    assert code == 2 and "below the target 0.99" in err and "nothing was written" in err
    assert "Traceback" not in err and not target.exists()
