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


# 2 -----------------------------------------------------------------------------------------
async def test_a_bracketed_paste_is_inserted_once(tmp_path: Path) -> None:
    app = make_app(make_config(tmp_path))
    lines = [f"line {i} of the paste" for i in range(60)]
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        box = app.query_one("#message", MessageInput)
        box.focus()
        app.post_message(events.Paste("single line paste"))
        await pilot.pause()
        assert box.value == "single line paste"
        box.value = ""
        app.post_message(events.Paste("\n".join(lines)))
        await pilot.pause()
        assert box.value == " ".join(lines)
        await pilot.press("enter")
        await settle(app, pilot)
    assert [t["message"] for t in saved(app)["turns"]] == [" ".join(lines)]


# 4 -----------------------------------------------------------------------------------------
async def test_typing_right_after_start_goes_to_the_message_box(tmp_path: Path) -> None:
    app = make_app(make_config(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press(*"hello", "enter")  # before the catalog has loaded
        await settle(app, pilot)
        assert app.query_one("#catalog-filter", Input).value == ""
        assert [t.message for t in app.session.turns] == ["hello"]
        assert app.session.turns[0].decision is not None


# 5 -----------------------------------------------------------------------------------------
async def test_a_decline_survives_the_fallback_and_the_distribution_speaks_words(tmp_path: Path) -> None:
    from app_harness import fallback_section

    base = make_config(tmp_path)
    choice, confidence = confidence_of(base, REMINDER)
    high, medium = thresholds_for("medium", confidence)
    config = make_config(tmp_path, policy={"high": high, "medium": medium}, fallback=fallback_section("upper.py"))
    app = make_app(config)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        await submit(app, pilot, REMINDER)
        assert type(app.screen).__name__ == "ConfirmTurnModal"
        await pilot.press("n")
        await settle(app, pilot)
        app.log_table.focus()
        await pilot.press("f")
        await settle(app, pilot)
        text = screen_text(app)
        assert "confirm · declined → llm" in text
        assert "fallback_done" not in text
    d = saved(app)["turns"][0]["decision"]
    assert d["outcome"] == "fallback_done" and d["history"] == [{"outcome": "declined"}]


# 7 -----------------------------------------------------------------------------------------
async def test_the_default_sessions_folder_is_the_user_data_folder_and_is_in_the_header(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    config = make_config(tmp_path).model_copy(update={"sessions_dir": None})
    app = make_app(config)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(app, pilot)
        assert "tui-router/sessions/test-session.toml" in screen_text(app).splitlines()[0]
        await submit(app, pilot, AGENDA)
    assert app.session.path == tmp_path / "data" / "tui-router" / "sessions" / "test-session.toml"
    assert app.session.path.exists()
