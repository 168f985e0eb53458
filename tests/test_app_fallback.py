"""`f` in the console: the selected fallback-pending turn goes to a real command from tests/commands."""

from __future__ import annotations

import tomllib
from pathlib import Path

from app_harness import AGENDA, fallback_section, make_app, make_config, notifications, screen_text, settle, submit

from tui_router.app.messages import FallbackFinished
from tui_router.app.widgets.decision_log import DecisionLog

MARS = "what is the weather on mars"


def saved_turns(app) -> list[dict]:
    return tomllib.loads(Path(app.session.path).read_text(encoding="utf-8"))["turns"]


async def test_fallback_output_exit_code_and_duration_are_shown_and_saved(tmp_path: Path) -> None:
    config = make_config(tmp_path, fallback=fallback_section("upper.py"))
    finished: list[FallbackFinished] = []
    app = make_app(config)
    hook = lambda m: isinstance(m, FallbackFinished) and m not in finished and finished.append(m)  # noqa: E731
    async with app.run_test(size=(120, 40), message_hook=hook) as pilot:
        await settle(app, pilot)
        app.set_thresholds(1.0, 1.0)  # low band: fallback pending
        await submit(app, pilot, MARS)
        assert app.session.turns[0].decision.action == "fallback"
        await pilot.press("escape", "f")
        await settle(app, pilot)
        assert len(finished) == 1 and finished[0].result.ok

        turn = app.session.turns[0]
        assert turn.fallback is not None
        assert turn.fallback.exit_code == 0
        assert turn.fallback.output == f"LLM: {MARS.upper()}\nenv chars: {len(MARS)}\n"
        assert turn.decision.outcome == "fallback_done"
        record = saved_turns(app)[0]
        assert record["fallback"]["exit_code"] == 0
        assert record["fallback"]["output"] == turn.fallback.output
        assert record["fallback"]["command"][-1].endswith("upper.py")
        assert record["fallback"]["duration_ms"] > 0
        assert record["decision"]["outcome"] == "fallback_done"
        text = screen_text(app)
        assert "fallback exit 0" in text and f"LLM: {MARS.upper()}" in text
        assert any(n.startswith("Fallback for turn 1: exit 0 in") for n in notifications(app))

        # Enter on the row shows the whole output
        await pilot.press("enter")
        await pilot.pause()
        assert type(app.screen).__name__ == "FallbackOutputScreen"
        assert f"env chars: {len(MARS)}" in screen_text(app)
        await pilot.press("escape")
        await pilot.pause()

        # f on a turn that is not waiting for the fallback explains why and runs nothing
        app.set_thresholds(0.0, 0.0)  # everything high
        await submit(app, pilot, AGENDA)
        assert app.session.turns[1].decision.action == "execute"
        await pilot.press("escape", "f")
        await pilot.pause()
        assert any("Turn 2 is not waiting for the fallback" in n for n in notifications(app))
        assert app.session.turns[1].fallback is None and len(finished) == 1


async def test_failing_command_is_saved_with_its_error_and_the_turn_stays_pending(tmp_path: Path) -> None:
    config = make_config(tmp_path, fallback=fallback_section("fail.py"))
    app = make_app(config)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        app.set_thresholds(1.0, 1.0)
        await submit(app, pilot, MARS)
        await pilot.press("escape", "f")
        await settle(app, pilot)
        turn = app.session.turns[0]
        assert turn.fallback.exit_code == 3
        assert turn.fallback.error == "fallback command exited with code 3: model overloaded, try later"
        assert turn.decision.outcome == "pending"
        assert saved_turns(app)[0]["fallback"]["output"] == "partial answer\n"
        assert any("exited with code 3" in n for n in notifications(app))


async def test_cancel_stops_the_command_and_saves_nothing(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    config = make_config(tmp_path, fallback=fallback_section("sleepy.py", "30", str(pidfile)))
    app = make_app(config)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        app.set_thresholds(1.0, 1.0)
        await submit(app, pilot, MARS)
        await pilot.press("escape", "f")
        for _ in range(200):
            await pilot.pause(0.02)
            if pidfile.exists() and pidfile.read_text():
                break
        assert app.query_one(DecisionLog).row_cells(0)["outcome"].startswith("llm ")  # with the elapsed seconds
        await pilot.press("c")
        await settle(app, pilot)
        assert app.session.turns[0].fallback is None
        assert app.session.turns[0].decision.outcome == "pending"
        assert any("cancelled" in n for n in notifications(app))
        import os

        import pytest

        with pytest.raises(ProcessLookupError):
            os.kill(int(pidfile.read_text()), 0)


async def test_no_command_configured_says_how_to_configure_it(tmp_path: Path) -> None:
    config = make_config(tmp_path)
    app = make_app(config)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        app.set_thresholds(1.0, 1.0)
        await submit(app, pilot, MARS)
        await pilot.press("escape", "f")
        await pilot.pause()
        note = [n for n in notifications(app) if "No fallback command is configured" in n]
        assert note, notifications(app)
        assert "[fallback]" in note[0] and 'command = ["your-llm", "--flag"]' in note[0]
        assert str(tmp_path / "tui-router.toml") in note[0]
        assert app.session.turns[0].fallback is None


async def test_a_cut_output_is_measured_in_bytes_as_its_cap_is(tmp_path: Path) -> None:
    # The notification said "7 characters (truncated)" of an output cut at a cap counted in bytes
    # ([fallback] output_cap); the session file said only `truncated = true`. Now every place says
    # bytes, and the file keeps the cap the output was cut at.
    section = fallback_section("upper.py") | {"output_cap": 10}
    app = make_app(make_config(tmp_path, fallback=section))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        app.set_thresholds(1.0, 1.0)  # low band: fallback pending
        await submit(app, pilot, "ü" * 100)
        await pilot.press("escape", "f")
        await settle(app, pilot)
        fallback = app.session.turns[0].fallback
        assert fallback is not None and fallback.output == "LLM: ÜÜ"  # 9 of the 10 bytes: half a Ü dropped
        [note] = [n for n in notifications(app) if n.startswith("Fallback for turn 1:")]
        assert note.endswith(" ms, 10 bytes of output, cut at the 10-byte output_cap"), note
        assert "characters" not in note
        assert "output cut at the 10-byte output_cap" in screen_text(app)  # the turn detail
        record = saved_turns(app)[0]["fallback"]
        assert (record["truncated"], record["output_cap"]) == (True, 10)
        await pilot.press("enter")  # the whole output
        await pilot.pause()
        assert "output cut at the 10-byte output_cap" in screen_text(app)
