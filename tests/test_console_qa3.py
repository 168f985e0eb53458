"""Defects found by a third QA pass: the README followed verbatim by a newcomer, every key and palette
entry tried at 120x40 and 80x24 (one test per defect)."""

from __future__ import annotations

from pathlib import Path

from app_harness import AGENDA, make_app, make_config, screen_text, settle, submit
from textual.widgets import OptionList

from tui_router.app.widgets.message_input import MessageInput


async def test_escape_leaves_the_catalog_as_the_help_says(tmp_path: Path) -> None:
    # The help lists "Catalog pane (f2): escape  back to the message box", but escape did nothing
    # there (filter or list), and at 80x24 the open Catalog covers the console until F2.
    app = make_app(make_config(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        main = app.screen_stack[0]
        assert main.has_class("-catalog-open")  # wide: the Catalog is shown from the start
        app.query_one("#catalog-filter").focus()
        await pilot.pause()
        assert "esc Back" in screen_text(app).splitlines()[-1]  # the footer says how to leave
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.focused, MessageInput)
        assert main.has_class("-catalog-open")  # wide: the pane stays beside the others
        app.query_one("#catalog-list", OptionList).focus()
        await pilot.pause()
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.focused, MessageInput)

    app = make_app(make_config(tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await submit(app, pilot, AGENDA)
        main = app.screen_stack[0]
        await pilot.press("f2")
        await pilot.pause()
        assert main.has_class("-catalog-open") and "Decision log" not in screen_text(app)
        await pilot.press("escape")
        await pilot.pause()
        assert not main.has_class("-catalog-open")  # narrow: the console is back
        assert isinstance(app.focused, MessageInput) and "Decision log" in screen_text(app)
