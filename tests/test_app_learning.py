"""A label made in the console reaches the backend at once: the next similar message routes by it."""

from __future__ import annotations

from pathlib import Path

import pytest
from app_harness import make_app, make_config, settle, submit

from tui_router.app.screens.picker import OptionPicker
from tui_router.app.widgets.decision_log import DecisionLog
from tui_router.embed import semantic_available

FIRST = "ping the team about the outage"
SIMILAR = "ping the team about the outage please"


def backends() -> list:
    semantic = pytest.param(
        "semantic", marks=pytest.mark.skipif(not semantic_available(), reason="the semantic extra is not installed")
    )
    return ["local", semantic]


@pytest.mark.parametrize("backend", backends())
async def test_a_console_label_changes_the_next_routing_of_a_similar_message(tmp_path: Path, backend: str) -> None:
    config = make_config(tmp_path, backend=backend, semantic={"cache_dir": str(tmp_path / "vectors")})
    app = make_app(config)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        assert app.router is not None and app.router.backend.name == backend
        app.set_thresholds(1.0, 1.0)  # everything low: no dialogs in the way
        await submit(app, pilot, FIRST)
        await submit(app, pilot, SIMILAR)
        before = app.session.turns[1].decision
        assert before is not None and before.choice != "send_sms"

        # the operator says the first message was a text message to send
        log = app.query_one(DecisionLog)
        await pilot.press("escape")
        await pilot.press("up")
        assert log.selected_index == 0
        await pilot.press("l")
        await pilot.pause()
        assert isinstance(app.screen, OptionPicker)
        app.screen.query_one("#picker-filter").value = "send_sms"
        await pilot.pause()
        await pilot.press("enter")
        await settle(app, pilot)
        assert app.session.turns[0].label == "send_sms"

        await submit(app, pilot, SIMILAR)
        after = app.session.turns[2].decision
        assert after is not None and after.choice == "send_sms", after

        # the label cleared: the backend forgets it, and the similar message goes back
        await pilot.press("escape")
        await pilot.press("up", "up")
        assert log.selected_index == 0
        await pilot.press("x")
        await settle(app, pilot)
        assert app.session.turns[0].label is None
        await submit(app, pilot, SIMILAR)
        again = app.session.turns[3].decision
        assert again is not None and again.choice == before.choice, again
