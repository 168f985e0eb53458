"""Issue 13: each defect a new user hit in the console, driven through Pilot with the real router."""

from __future__ import annotations

from pathlib import Path

from app_harness import (
    AGENDA,
    REMINDER,
    confidence_of,
    make_app,
    make_config,
    notifications,
    run_palette,
    saved,
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


# 3 -----------------------------------------------------------------------------------------
async def test_the_selected_log_row_is_drawn_in_one_readable_colour(tmp_path: Path) -> None:
    config = make_config(tmp_path)
    _, confidence = confidence_of(config, AGENDA)
    app = make_app(config)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        for band in ("low", "medium", "high"):
            app.set_thresholds(*thresholds_for(band, confidence))
            await submit(app, pilot, AGENDA)
            if type(app.screen).__name__ == "ConfirmTurnModal":
                await pilot.press("escape")
                await pilot.pause()
        log = app.log_table
        log.focus()
        await pilot.pause()
        for index, band in enumerate(("low", "medium", "high")):
            log.select(index)
            await pilot.pause()
            assert log.row_cells(index)["band"].strip() == band
            strip = log.render_line(index - log.scroll_offset.y)
            colours = {(seg.style.color, seg.style.bgcolor) for seg in strip if seg.text.strip()}
            assert len(colours) == 1, (band, colours)  # band text included: same fg on same bg
            (fg, bg), = colours
            assert fg != bg


# 6 and 14 ----------------------------------------------------------------------------------
async def test_palette_has_no_textual_duplicates_and_reloads_the_config(tmp_path: Path) -> None:
    from app_harness import fallback_section, write_catalog

    config_path = tmp_path / "tui-router.toml"
    config_path.write_text(f'catalog = "{write_catalog(tmp_path)}"\nbackend = "local"\nsessions_dir = "sessions"\n', encoding="utf-8")
    from tui_router.config import load_config

    app = make_app(load_config(config_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert "Quit" not in titles and "Keys" not in titles
        assert {"app: quit", "view: help", "config: reload", "catalog: open file", "config: open file"} <= set(titles)
        app.set_thresholds(1.0, 1.0)  # every turn low: fallback pending
        await submit(app, pilot, AGENDA)
        app.log_table.focus()
        await pilot.press("f")
        await pilot.pause()
        assert "No fallback command is configured" in notifications(app)[-1]
        assert "config: reload" in notifications(app)[-1]
        section = fallback_section("upper.py")
        command = ", ".join(f'"{c}"' for c in section["command"])
        config_path.write_text(config_path.read_text(encoding="utf-8") + f"\n[fallback]\ncommand = [{command}]\n", encoding="utf-8")
        await run_palette(app, pilot, "config: reload")
        await settle(app, pilot)
        assert any("Config reloaded from" in n for n in notifications(app))
        assert app.config.fallback.command == section["command"]
        app.log_table.focus()
        await pilot.press("f")
        await settle(app, pilot)
        assert app.session.turns[0].fallback is not None and app.session.turns[0].fallback.exit_code == 0

        # a broken config changes nothing
        config_path.write_text("[polcy]\n", encoding="utf-8")
        app.action_reload_config()
        await settle(app, pilot)
        assert "unknown key 'polcy'" in notifications(app)[-1]
        assert app.config.fallback.command == section["command"]


async def test_switching_the_catalog_from_the_palette(tmp_path: Path) -> None:
    app = make_app(make_config(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        await run_palette(app, pilot, "catalog: open file")
        assert type(app.screen).__name__ == "PromptModal"
        assert "escape: cancel" in screen_text(app)
        app.screen.query_one("#prompt-input", Input).value = "support"
        await pilot.press("enter")
        await settle(app, pilot)
        assert app.router.catalog.name == "support"
        app.use_catalog(str(tmp_path / "missing.toml"))
        await settle(app, pilot)
        assert "no such catalog file" in notifications(app)[-1] and app.router.catalog.name == "support"


# 9 -----------------------------------------------------------------------------------------
async def test_dialogs_show_their_own_keys_and_how_to_close(tmp_path: Path) -> None:
    base = make_config(tmp_path)
    _, confidence = confidence_of(base, REMINDER)
    high, medium = thresholds_for("medium", confidence)
    app = make_app(make_config(tmp_path, policy={"high": high, "medium": medium}))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        await submit(app, pilot, REMINDER)
        await pilot.press("escape")  # decide later
        await pilot.pause()
        app.log_table.focus()
        await pilot.press("enter")  # reopen from the log
        await pilot.pause()
        assert type(app.screen).__name__ == "ConfirmTurnModal"
        footer = screen_text(app).rstrip("\n").splitlines()[-1]
        assert "y Approve" in footer and "n Decline" in footer and "a Accept" not in footer
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("f1")
        await pilot.pause()
        text = screen_text(app)
        assert "escape: close" in text and "Catalog pane" in text
        await pilot.press("escape")
        await pilot.pause()
        app.action_save_as()
        await pilot.pause()
        assert "escape: cancel" in screen_text(app)


# 10 ----------------------------------------------------------------------------------------
def test_picker_matches_words_in_any_order() -> None:
    from tui_router.app.screens.picker import PickerItem, rank_items

    items = [PickerItem("search_docs", "Search the documentation"), PickerItem("search_tickets", "Search support tickets"), PickerItem("create_ticket", "Open a ticket")]
    assert [i.id for i, _ in rank_items(items, "search tick")][0] == "search_tickets"
    assert [i.id for i, _ in rank_items(items, "tick search")][0] == "search_tickets"
    assert [i.id for i, _ in rank_items(items, "tick")] == ["search_tickets", "create_ticket"]
    assert rank_items(items, "search zebra") == []


# 4 and 15 ----------------------------------------------------------------------------------
async def test_keys_typed_fast_make_exactly_the_submitted_turns(tmp_path: Path) -> None:
    app = make_app(make_config(tmp_path, policy={"high": 1.0, "medium": 1.0}))  # no dialog takes keys
    async with app.run_test(size=(120, 40)) as pilot:
        # all keys queued at once, before the catalog has loaded: Enter must cut the turns where it
        # was typed (the binding ran only after later keys were inserted), and nothing is superseded
        keys = [*"msg one", "enter", *"msg two", "enter", *"msg three", "ctrl+j", *"msg four", "enter"]
        box = app.query_one("#message", MessageInput)
        for key in keys:
            char = key if len(key) == 1 else None
            app.post_message(events.Key(key, char if key != "ctrl+j" else "\n"))  # as the driver does
        await settle(app, pilot)
        assert [t.message for t in app.session.turns] == ["msg one", "msg two", "msg three", "msg four"]
        assert all(t.decision is not None and t.decision.band == "low" for t in app.session.turns)
        assert box.value == ""


# 8 -----------------------------------------------------------------------------------------
async def test_hints_say_where_the_keys_work_and_execute_is_a_proposal(tmp_path: Path) -> None:
    config = make_config(tmp_path)
    _, confidence = confidence_of(config, AGENDA)
    app = make_app(config)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(app, pilot)
        app.set_thresholds(1.0, 1.0)
        await submit(app, pilot, AGENDA)
        assert app.query_one("#message").has_focus
        text = " ".join(screen_text(app).split())
        assert "f in the Decision log" in text and "escape moves there" in text
        app.set_thresholds(*thresholds_for("high", confidence))
        await submit(app, pilot, AGENDA)
        assert app.session.turns[-1].decision.action == "execute"
        assert "this console never runs a tool" in " ".join(screen_text(app).split())


# 12 ----------------------------------------------------------------------------------------
async def test_no_stale_text_after_a_new_session_and_one_option_count(tmp_path: Path) -> None:
    app = make_app(make_config(tmp_path))
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(app, pilot)
        for message in (AGENDA, "hello", "thanks"):
            await submit(app, pilot, message)
            if type(app.screen).__name__ == "ConfirmTurnModal":
                await pilot.press("escape")
                await settle(app, pilot)
        text = screen_text(app)
        assert "turn 3" in text
        count = len(app.router.catalog.option_ids)
        assert f"tiny ({count})" in text and f"of {count} options" in text and f"{count} options" in text
        scores = app.session.turns[-1].decision.scores
        shown = [line.split() for line in text.splitlines() if "escalation" in line and "││" in line]
        assert all(float(parts[2]) >= 0 for parts in shown if len(parts) > 3 and parts[2].replace(".", "").isdigit()), shown
        assert scores  # the candidates pane had scores to order
        app.action_new_session()
        await settle(app, pilot)
        assert "turn 3" not in screen_text(app)


async def test_a_catalog_that_fails_to_load_says_so_in_the_catalog_pane(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\n', encoding="utf-8")
    app = make_app(make_config(tmp_path).model_copy(update={"catalog": str(bad)}))
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(app, pilot)
        text = screen_text(app)
        assert "Loading the catalog" not in text and "The catalog did not load" in text


def test_candidates_best_first_and_no_negative_scores() -> None:
    from tui_router.app.view import TurnView
    from tui_router.app.widgets.candidates import render_candidates
    from tui_router.session import TurnDecision

    d = TurnDecision(candidates=["send_sms", "search_docs", "ask_user"], scores={"send_sms": 1.5, "search_docs": -0.7, "ask_user": 3.0}, choice="ask_user", band="low", action="fallback")
    lines = render_candidates(TurnView(message="m", decision=d), None, 60).plain.splitlines()[1:]
    assert [line.split()[0] for line in lines] == ["ask_user", "send_sms", "search_docs"]
    assert "-0.70" not in "\n".join(lines) and lines[2].split()[1] == "0.00"


# 11 ----------------------------------------------------------------------------------------
async def test_fallback_output_streams_into_the_view_with_elapsed_time(tmp_path: Path) -> None:
    from app_harness import fallback_section

    app = make_app(make_config(tmp_path, fallback=fallback_section("sleepy.py", "30")))
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(app, pilot)
        app.set_thresholds(1.0, 1.0)
        await submit(app, pilot, AGENDA)
        app.log_table.focus()
        await pilot.press("f")
        text = ""
        for _ in range(100):  # the command prints at once, then sleeps
            await pilot.pause(0.05)
            text = screen_text(app)
            if "thinking..." in text:
                break
        assert "thinking..." in text and "fallback running ·" in text
        assert "llm " in app.log_table.row_cells(0)["outcome"]
        await pilot.pause(1.1)
        assert app.log_table.row_cells(0)["outcome"].strip() != "llm 0s"  # the elapsed time moves
        await pilot.press("c")
        await settle(app, pilot)
        assert "fallback running" not in screen_text(app)
        assert app.session.turns[0].fallback is None  # cancelled: nothing saved for it


# 13 ----------------------------------------------------------------------------------------
async def test_small_terminals_show_every_candidate_one_header_line_and_the_selected_turn(tmp_path: Path) -> None:
    app = make_app(make_config(tmp_path, policy={"high": 1.0, "medium": 1.0}))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await submit(app, pilot, AGENDA)
        lines = screen_text(app).splitlines()
        candidates = app.session.turns[0].decision.candidates
        shown = [c for c in candidates if any(f"  {c} " in line for line in lines[:12])]
        assert shown == candidates or sorted(shown) == sorted(candidates), (candidates, lines[:12])
        assert "tiny (7)" in lines[0] and "│" in lines[0] and lines[1].startswith("╭")  # header: one line
    app = make_app(make_config(tmp_path, policy={"high": 1.0, "medium": 1.0}))
    async with app.run_test(size=(60, 20)) as pilot:
        await settle(app, pilot)
        for n in range(12):
            await submit(app, pilot, f"message number {n}")
        lines = screen_text(app).splitlines()
        assert lines[1].startswith("╭")  # the header is one line
        assert any("message number 11" in line for line in lines), "\n".join(lines)
        app.log_table.focus()
        await pilot.press("home")
        await pilot.pause()
        assert any("message number 0 " in line or "message numbe…" in line for line in screen_text(app).splitlines()[8:])


async def test_a_confirm_dialog_waits_while_the_next_message_is_typed(tmp_path: Path) -> None:
    from tui_router.app.messages import TurnSubmitted

    base = make_config(tmp_path)
    _, confidence = confidence_of(base, REMINDER)
    app = make_app(make_config(tmp_path, policy=dict(zip(("high", "medium"), thresholds_for("medium", confidence), strict=True))))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        box = app.query_one("#message", MessageInput)
        box.value = "yes and no"  # the next message, half typed: its y and n must not answer a dialog
        app.post_message(TurnSubmitted(REMINDER))
        await settle(app, pilot)
        assert type(app.screen).__name__ != "ConfirmTurnModal"
        assert "waits for confirmation" in notifications(app)[-1]
        assert app.session.turns[0].decision.outcome == "pending" and box.value == "yes and no"
        app.log_table.focus()
        await pilot.press("enter")
        await pilot.pause()
        assert type(app.screen).__name__ == "ConfirmTurnModal"


async def test_replay_run_file_of_the_demo_bench(tmp_path: Path) -> None:
    from tui_router.config import Config

    bench = Path(__file__).resolve().parent.parent / "sessions" / "demo-bench.toml"
    app = RouterConsole(Config(backend="local", sessions_dir=str(tmp_path / "sessions")))
    async with app.run_test(size=(80, 24)) as pilot:
        await run_palette(app, pilot, "replay: run file")
        assert type(app.screen).__name__ == "PromptModal"
        app.screen.query_one("#prompt-input", Input).value = str(bench)
        await pilot.press("enter")
        await settle(app, pilot)
        assert type(app.screen).__name__ == "ReplayScreen"
        assert app.screen.query_one("#replay-table").row_count == len(load_session(bench).turns)
