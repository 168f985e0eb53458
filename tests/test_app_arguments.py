"""The console's arguments step through Pilot: the real app, the real router and extractor, real files."""

from __future__ import annotations

import sys
from pathlib import Path

from app_harness import (
    COMMANDS,
    confidence_of,
    make_app,
    notifications,
    saved,
    screen_text,
    settle,
    submit,
    thresholds_for,
)

from tui_router.app.screens.confirm import ConfirmTurnModal
from tui_router.app.screens.prompt import PromptModal
from tui_router.config import config_from_dict

CATALOG = """
name = "argsy"

[[tools]]
id = "fetch_page"
when_to_use = "Download one web page by its URL."
risk = "read"
keywords = ["fetch", "page", "download", "html"]
[tools.schema]
type = "object"
required = ["url"]
[tools.schema.properties.url]
type = "string"
format = "uri"

[[tools]]
id = "run_suite"
when_to_use = "Run the unit test suite of a project."
risk = "read"
keywords = ["tests", "unit", "suite", "green"]
[tools.schema]
type = "object"
required = ["target"]
[tools.schema.properties.target]
type = "string"

[[tools]]
id = "human_review"
when_to_use = "Hand the request to a person."
risk = "escalation"
"""

FETCH = "fetch the html page https://example.com/[bold]pricing"
TESTS = "run the unit tests suite please"


def make_config(folder: Path, **sections):
    catalog = folder / "argsy.toml"
    catalog.write_text(CATALOG, encoding="utf-8")
    data = {"catalog": str(catalog), "backend": "local", "sessions_dir": str(folder / "sessions"), **sections}
    return config_from_dict(data, folder / "tui-router.toml")


async def test_high_band_shows_arguments_and_invalid_ones_open_the_confirm_dialog(tmp_path: Path) -> None:
    config = make_config(tmp_path)
    fetch_choice, conf_fetch = confidence_of(config, FETCH)
    tests_choice, conf_tests = confidence_of(config, TESTS)
    assert (fetch_choice, tests_choice) == ("fetch_page", "run_suite")
    app = make_app(config)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        # high band, valid arguments: proposed for execution, arguments shown under the log
        assert app.set_thresholds(*thresholds_for("high", min(conf_fetch, conf_tests)))
        await submit(app, pilot, FETCH)
        turn = app.session.turns[0]
        assert (turn.decision.band, turn.decision.action, turn.decision.outcome) == ("high", "execute", "proposed")
        assert turn.arguments.values == {"url": "https://example.com/[bold]pricing"}
        assert turn.arguments.valid and not turn.arguments.demoted
        assert not isinstance(app.screen, ConfirmTurnModal)
        text = screen_text(app)
        assert "arguments (fetch_page, extractor, valid)" in text
        # the detail pane scrolls: bring its end (where the arguments are) into view
        app.query_one("#turn-detail-scroll").scroll_end(animate=False)
        await pilot.pause()
        text = screen_text(app)
        assert '{"url": "https://example.com/[bold]pricing"}' in text  # shown as text, never as markup

        # high band, required argument missing: demoted to confirm, and the dialog says why
        await submit(app, pilot, TESTS)
        turn = app.session.turns[1]
        assert (turn.decision.band, turn.decision.action, turn.decision.outcome) == ("high", "confirm", "pending")
        assert not turn.arguments.valid and turn.arguments.demoted
        assert turn.arguments.errors == ["/target: required argument is missing"]
        assert isinstance(app.screen, ConfirmTurnModal)
        dialog = screen_text(app)
        assert "/target: required argument is missing" in dialog
        assert "the arguments are invalid or incomplete" in dialog
        await pilot.press("y")
        await settle(app, pilot)
        assert app.session.turns[1].decision.outcome == "approved"

        data = saved(app)
        first, second = data["turns"][0]["arguments"], data["turns"][1]["arguments"]
        assert first["values"] == {"url": "https://example.com/[bold]pricing"} and first["valid"] is True
        assert (second["valid"], second["demoted"], second["source"]) == (False, True, "extractor")
        assert second["errors"] == ["/target: required argument is missing"]


async def test_build_key_accept_and_edit_the_label(tmp_path: Path) -> None:
    command = [sys.executable, str(COMMANDS / "args_maker.py"), "good"]
    config = make_config(tmp_path, arguments={"auto": False, "command": command})
    app = make_app(config)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        await submit(app, pilot, "fetch the page for ana@acme.io")
        if isinstance(app.screen, ConfirmTurnModal):
            await pilot.press("escape")
        turn = app.session.turns[0]
        assert turn.decision.choice == "fetch_page"
        assert turn.arguments is None  # auto = false: nothing built until asked
        app.log_table.focus()
        await pilot.press("g")
        await settle(app, pilot)
        assert turn.arguments.source == "command"
        assert turn.arguments.values["to"] == "ana@acme.io"
        assert turn.arguments.errors == ["/url: required argument is missing"]
        assert any("Turn 1 arguments: invalid" in n for n in notifications(app))

        app.action_arguments_accept()
        await settle(app, pilot)
        assert turn.expected_arguments == turn.arguments.values

        app.action_arguments_edit()
        await pilot.pause()
        assert isinstance(app.screen, PromptModal)
        box = app.screen.query_one("#prompt-input")
        box.value = '{"url": "https://example.com", "n": 2'  # broken JSON: nothing changes
        await pilot.press("enter")
        await settle(app, pilot)
        assert turn.expected_arguments["to"] == "ana@acme.io"
        assert any("not valid JSON" in n for n in notifications(app))
        app.action_arguments_edit()
        await pilot.pause()
        app.screen.query_one("#prompt-input").value = '{"url": "https://example.com", "n": 2}'
        await pilot.press("enter")
        await settle(app, pilot)
        assert turn.expected_arguments == {"url": "https://example.com", "n": 2}
        assert saved(app)["turns"][0]["expected_arguments"] == {"url": "https://example.com", "n": 2}
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert {"arguments: build", "arguments: accept as label", "arguments: edit label"} <= set(titles)


async def test_no_tool_choice_says_so(tmp_path: Path) -> None:
    app = make_app(make_config(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        await submit(app, pilot, "write me a haiku about the sea")
        assert app.session.turns[0].decision.choice in (None, "defer_to_llm")
        app.log_table.focus()
        await pilot.press("g")
        await settle(app, pilot)
        assert app.session.turns[0].arguments is None
        assert "The selected turn has no tool choice to build arguments for." in notifications(app)


async def test_rerouting_rebuilds_the_arguments_for_the_new_tool(tmp_path: Path) -> None:
    config = make_config(tmp_path)
    message = TESTS + " for https://example.com/app"
    choice, conf = confidence_of(config, message)
    assert choice == "run_suite"
    app = make_app(config)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        assert app.set_thresholds(*thresholds_for("medium", conf))
        await submit(app, pilot, message)
        assert isinstance(app.screen, ConfirmTurnModal)
        turn = app.session.turns[0]
        assert turn.arguments.tool == "run_suite"
        app.screen.dismiss(("rerouted", "fetch_page"))
        await settle(app, pilot)
        assert turn.decision.rerouted_to == "fetch_page"
        assert (turn.arguments.tool, turn.arguments.valid) == ("fetch_page", True)
        assert turn.arguments.values == {"url": "https://example.com/app"}
