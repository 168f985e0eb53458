"""Issue 13: each defect a new user hit in the console, driven through Pilot with the real router."""

from __future__ import annotations

import tomllib
from pathlib import Path

from app_harness import (
    AGENDA,
    REMINDER,
    confidence_of,
    make_app,
    make_config,
    notifications,
    screen_text,
    settle,
    submit,
    thresholds_for,
)
from textual import events
from textual.widgets import Input

from tui_router.app.app import RouterConsole
from tui_router.app.widgets.message_input import MessageInput
from tui_router.session import load_session


def saved(app) -> dict:
    return tomllib.loads(Path(app.session.path).read_text(encoding="utf-8"))


async def run_palette(app, pilot, title: str) -> None:
    """Open the command palette, search `title` and run it (the palette searches in the background)."""
    await pilot.press("ctrl+p")
    await pilot.pause()
    app.screen.query_one(Input).value = title
    for _ in range(60):
        await pilot.pause(0.05)
        if title in screen_text(app).split(title, 1)[-1]:
            break
    await pilot.press("enter")
    await pilot.pause()


# 1 -----------------------------------------------------------------------------------------
async def test_replay_this_session_from_the_palette_of_an_opened_file(tmp_path: Path) -> None:
    config = make_config(tmp_path)
    app = make_app(config)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        for message in (AGENDA, REMINDER, "hello there"):
            await submit(app, pilot, message)
    path = app.session.path
    assert path is not None
    for size in ((120, 40), (80, 24)):
        # reopened without an injected router: rows can arrive before the table has its columns
        app = RouterConsole(config, session=load_session(path))
        async with app.run_test(size=size) as pilot:
            await run_palette(app, pilot, "replay: this session")
            await settle(app, pilot)
            assert type(app.screen).__name__ == "ReplayScreen"
            table = app.screen.query_one("#replay-table")
            assert table.row_count == 3
            assert "3 turns" in screen_text(app)
            await pilot.press("escape")
            await pilot.pause()
            assert app.screen is app.screen_stack[0]
        assert app.return_code in (None, 0)
