"""Console defects a demanding operator found driving the console in tmux (one test per defect)."""

from __future__ import annotations

from pathlib import Path

import pytest
from app_harness import (
    AGENDA,
    close_confirms,
    confidence_of,
    make_app,
    make_config,
    notifications,
    screen_text,
    settle,
    submit,
    thresholds_for,
)
from rich.cells import cell_len

from tui_router.app.format import display_path


def _log_lines(app) -> list[str]:
    """The Decision log's header and rows as shown (inside its borders)."""
    lines = screen_text(app).splitlines()
    top = next(i for i, line in enumerate(lines) if "Decision log" in line)
    rows = []
    for line in lines[top + 1 :]:
        inner = line[1:-1]
        if inner.strip().startswith("─"):
            break
        rows.append(inner)
    return rows


async def test_header_keeps_one_line_after_shrinking_the_terminal(tmp_path: Path) -> None:
    # 120x40 -> 80x24 in tmux: the header line (its long form, one line at 120 columns, two at 80
    # until the short form replaced it) kept two lines, a blank line under it and a row less for
    # the panes, until the next change of the header's text. The header is always one line.
    app = make_app(make_config(tmp_path), session_id="2026-12-01T22-07-23-16a9b0")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        await submit(app, pilot, AGENDA)
        await close_confirms(app, pilot)
        status = app.query_one("#status")
        assert status.region.height == 1
        await pilot.resize_terminal(80, 24)
        await settle(app, pilot)
        assert status.region.height == 1
        lines = screen_text(app).splitlines()
        assert "16a9b0.toml (saved)" in lines[0]
        assert lines[1].startswith("╭─ Candidates"), lines[:3]
        await pilot.resize_terminal(120, 40)  # and back: the long form, still one line
        await settle(app, pilot)
        assert status.region.height == 1
        assert "sessions/2026-12-01T22-07-23-16a9b0.toml (saved)" in screen_text(app).splitlines()[0]


async def test_log_rows_refit_when_its_scrollbar_appears(tmp_path: Path) -> None:
    # At 80x24 the log shows six rows; the seventh turn brings a scrollbar (two cells) without a
    # resize. The rows drawn before it stayed two cells too wide: the label column ran under the
    # scrollbar (cut silently), a horizontal scrollbar took the log's last row (one turn fewer
    # shown, a blank row), and rows drawn after it were two cells narrower, out of line with
    # the header.
    app = make_app(make_config(tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        for n in range(8):
            await submit(app, pilot, f"{AGENDA} {n}")
            await close_confirms(app, pilot)
        await settle(app, pilot)
        log = app.log_table
        assert log.show_vertical_scrollbar
        assert not log.show_horizontal_scrollbar
        width = log.scrollable_content_region.width
        assert log.virtual_size.width == width
        rows = _log_lines(app)
        header, shown = rows[0], rows[1:]
        assert len(shown) == 6 and all("list_events" in row for row in shown), rows  # no blank row
        # every row lines up with the header, and the label column ends before the scrollbar
        choice_at = header.index("choice")
        assert all(row.index("list_events") == choice_at for row in shown), rows
        assert all(cell_len(log.render_line(y).text) == width for y in range(6))
        assert header.index("label") + len("label") <= width
        # the selected (last) turn is in view
        assert log.cursor == 7 and log.scroll_offset.y == 2


def _shown_numbers(app) -> list[int]:
    """The turn numbers (the messages' first word) of the log rows on screen; a blank row is 0."""
    rows = _log_lines(app)[1:]
    return [int(row.split()[0]) if row.strip() else 0 for row in rows]


async def test_selected_turn_stays_in_view_when_the_log_changes_height(tmp_path: Path) -> None:
    # 80x24 -> 60x20 with the last of 15 turns selected: the log (six rows, then four) kept its
    # scroll offset, so the selected turn, whose details the panes showed, was below the fold.
    # And the other way (60x20 -> 80x24, or the header going back to one line): blank rows under
    # the last turn while turns above it were out of view.
    app = make_app(make_config(tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        for n in range(1, 16):
            await submit(app, pilot, f"{n} {AGENDA}")
            await close_confirms(app, pilot)
        log = app.log_table
        assert log.cursor == 14
        assert _shown_numbers(app) == [10, 11, 12, 13, 14, 15]
        await pilot.resize_terminal(60, 20)
        await settle(app, pilot)
        assert log.cursor == 14
        assert _shown_numbers(app) == [12, 13, 14, 15]
        await pilot.resize_terminal(80, 24)
        await settle(app, pilot)
        assert _shown_numbers(app) == [10, 11, 12, 13, 14, 15]
        # a turn in the middle stays where it is when it is in view
        await pilot.press("escape", "up", "up", "up")
        assert log.cursor == 11
        await pilot.resize_terminal(60, 20)
        await settle(app, pilot)
        assert 12 in _shown_numbers(app)


async def test_keys_typed_before_the_confirm_dialog_is_drawn_go_to_the_message_box(tmp_path: Path) -> None:
    # Enter, then "yes and now..." typed straight on (tmux delivers it as one burst): the decision
    # came back between the keys, its dialog was pushed, and the `y` reached it before its first
    # frame. The `y` was lost (no answer, not in the box: the next message read "es and now..."),
    # and a `n` there could as well have declined a turn nobody had seen.
    import asyncio

    from textual import events

    from tui_router.app.widgets.message_input import MessageInput

    message = "text 555 1234 that I am late"
    choice, confidence = confidence_of(make_config(tmp_path), message)
    high, medium = thresholds_for("medium", confidence)
    app = make_app(make_config(tmp_path, policy={"high": high, "medium": medium}))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        box = app.query_one("#message", MessageInput)
        box.value = message
        app.post_message(events.Key("enter", None))
        for _ in range(5000):  # the moment the dialog is pushed, before it is drawn
            await asyncio.sleep(0)
            if len(app.screen_stack) > 1:
                break
        assert type(app.screen).__name__ == "ConfirmTurnModal"
        for key in "yes":
            app.post_message(events.Key(key, key))
        await settle(app, pilot)
        assert box.value == "yes"
        assert type(app.screen).__name__ != "ConfirmTurnModal"
        assert app.session.turns[0].decision.choice == choice and app.session.turns[0].decision.outcome == "pending"
        assert "Turn 1 waits for confirmation: Enter on its row in the Decision log opens it." in notifications(app)
        # once drawn, the dialog answers its keys as before
        app.log_table.focus()
        await pilot.press("enter")  # on the pending row: the dialog again
        await settle(app, pilot)
        assert type(app.screen).__name__ == "ConfirmTurnModal"
        await pilot.press("y")
        await settle(app, pilot)
        assert app.session.turns[0].decision.outcome == "approved"


async def test_footer_shows_cancel_in_place_of_fallback_while_one_runs(tmp_path: Path) -> None:
    # At 80 columns, the Decision log's footer with a fallback running read
    # "a Accept  l Pick  x Clear  u Undo  f Fallback  c Cancel  f1 Help  f▏": "f2 Catalog" cut to an
    # "f". While a command runs, `c Cancel` takes the place of `f Fallback` (f cannot start another
    # one; it still says why), and a key that does not fit is left out whole (Textual's footer
    # cut it: "f2 Catalog  q▏").
    from app_harness import fallback_section

    app = make_app(make_config(tmp_path, fallback=fallback_section("sleepy.py", "30")))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        app.set_thresholds(1.0, 1.0)  # low band: fallback pending
        await submit(app, pilot, "qqq zzz flibber")
        await submit(app, pilot, "zzz qqq again")
        await pilot.press("escape")
        await pilot.pause()
        footer = screen_text(app).splitlines()[-1]
        assert "f Fallback" in footer and "Cancel" not in footer, footer
        assert footer.split("▏")[0].rstrip().endswith("f Fallback  f1 Help  f2 Catalog"), footer
        await pilot.press("up", "f")  # turn 1
        await pilot.pause(0.3)
        assert app.workspace.fallback_turn == 0
        footer = screen_text(app).splitlines()[-1]
        assert "c Cancel" in footer and "f Fallback" not in footer, footer
        # whole keys only: the one that does not fit (q Quit) is left out, not cut to "q▏"
        assert footer.split("▏")[0].rstrip().endswith("c Cancel  f1 Help  f2 Catalog"), footer
        await pilot.press("down", "f")  # turn 2 while turn 1's runs: refused, with the reason
        await pilot.pause()
        assert "The fallback is running for turn 1; press c to cancel it." in notifications(app)
        assert app.workspace.fallback_turn == 0
        await pilot.press("up", "c")
        await settle(app, pilot)
        assert app.workspace.fallback_turn is None
        footer = screen_text(app).splitlines()[-1]
        assert "f Fallback" in footer and "Cancel" not in footer, footer
        assert app.session.turns[0].fallback is None and app.session.turns[0].decision.outcome == "pending"


async def test_a_long_fallback_output_opens_without_laying_out_all_of_it(tmp_path: Path) -> None:
    # Enter on a turn whose fallback printed a lot (`seq 1 200000`, cut at the 64 KB output_cap; here 236 KB under a 256 KB cap):
    # the output dialog laid out the whole text as one Static before it showed, about a second at
    # 64 KB and 3.6 s at a 256 KB output_cap, the console frozen. It now draws the lines a screen
    # at a time (the what-if dialog's line widget); the keys read it to the end, stderr under it.
    import sys

    from tui_router.app.widgets.wrapped_lines import WrappedLines

    script = tmp_path / "lots.py"
    script.write_text(
        "import sys\nsys.stdout.write(''.join(f'{i} line of output\\n' for i in range(1, 12001)))\n"
        "sys.stderr.write('warning \\x1b[31m from the model\\n')\n",
        encoding="utf-8",
    )
    section = {"command": [sys.executable, str(script)], "output_cap": 262144}
    app = make_app(make_config(tmp_path, fallback=section))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        app.set_thresholds(1.0, 1.0)  # low band: fallback pending
        await submit(app, pilot, "qqq zzz flibber")
        await pilot.press("escape", "f")
        await settle(app, pilot)
        record = app.session.turns[0].fallback
        assert record is not None and record.output.count("\n") == 12000 and not record.truncated
        await pilot.press("enter")
        await pilot.pause()
        assert type(app.screen).__name__ == "FallbackOutputScreen"
        lines = app.screen.query_one("#output-scroll")
        assert isinstance(lines, WrappedLines) and lines.has_focus
        assert lines.lines[0] == "1 line of output" and lines.lines[11999] == "12000 line of output"
        assert lines.lines[12000:] == ["", "stderr", "warning \\x1b[31m from the model"]
        text = screen_text(app)
        assert "1 line of output" in text and "12000 line of output" not in text
        await pilot.press("end")
        await pilot.pause()
        text = screen_text(app)
        assert "12000 line of output" in text and "warning \\x1b[31m from the model" in text
        assert "\x1b[31m" not in text
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is app.screen_stack[0]


async def test_f2_on_a_turn_of_another_catalog_leaves_the_catalog_filter_alone(tmp_path: Path) -> None:
    # A turn routed to list_events, then `catalog: open` support (no list_events), then F2: the
    # Catalog opened with "list_events" typed in its filter box and "No option matches" instead of
    # the catalog's tools; the next letters typed were appended to it.
    from textual.widgets import Input, OptionList

    app = make_app(make_config(tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await submit(app, pilot, AGENDA)
        await close_confirms(app, pilot)
        assert app.session.turns[0].decision.choice == "list_events"
        app.use_catalog("support")
        await settle(app, pilot)
        await pilot.press("f2")
        await pilot.pause()
        box = app.query_one("#catalog-filter", Input)
        assert box.has_focus and box.value == ""
        listing = app.query_one("#catalog-list", OptionList)
        ids = [listing.get_option_at_index(i).id for i in range(listing.option_count)]
        assert "search_docs" in ids and "No option matches" not in screen_text(app)
        await pilot.press("s", "e", "a", "r")
        await pilot.pause()
        assert box.value == "sear"
        # a turn of the catalog in use still shows its choice there, as before
        await pilot.press("f2")  # closes it
        await submit(app, pilot, "how do I export a report, check the documentation")
        await close_confirms(app, pilot)
        choice = app.session.turns[1].decision.choice
        assert choice == "search_docs"
        await pilot.press("f2")
        await pilot.pause()
        assert listing.highlighted_option is not None and listing.highlighted_option.id == choice


async def test_footer_leaves_out_whole_keys_and_brings_them_back_when_wider(tmp_path: Path) -> None:
    # The footer's keys that ran under the palette key were cut anywhere ("q▏" at 80 columns in
    # the Decision log): they are left out whole, and shown again when the terminal is wider.
    from textual.widgets._footer import FooterKey

    app = make_app(make_config(tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await submit(app, pilot, AGENDA)
        await close_confirms(app, pilot)
        await pilot.press("escape")
        await pilot.pause()
        await pilot.pause()

        def shown() -> list[str]:
            return [k.description for k in app.screen.query(FooterKey) if k.display and not k.has_class("-command-palette")]

        palette = next(k for k in app.screen.query(FooterKey) if k.has_class("-command-palette"))
        assert shown() == ["Accept", "Pick", "Clear", "Undo", "Fallback", "Help", "Catalog"]
        assert all(k.region.right <= palette.region.x for k in app.screen.query(FooterKey) if k.display and k is not palette)
        await pilot.resize_terminal(120, 40)
        await pilot.pause()
        await pilot.pause()
        assert shown() == ["Accept", "Pick", "Clear", "Undo", "Fallback", "Help", "Catalog", "Quit"]
        assert "q Quit" in screen_text(app).splitlines()[-1]


async def test_an_unresolved_turn_shows_no_choice_in_the_log(tmp_path: Path) -> None:
    # A server answer whose probabilities summed to 1.2 (jevcompat mock --fault choice-sum) was
    # unresolved, and the Distribution pane said so, but the log's choice column showed the refused
    # answer's defer_to_llm, which read as the model choosing "none". An unresolved turn chose nothing.
    from tui_router.session import Session, SessionInfo, Turn, TurnDecision

    refused = TurnDecision(
        candidates=["send_sms"], choice="defer_to_llm", probabilities={"send_sms": 0.6, "defer_to_llm": 0.6},
        band="unresolved", action="fallback", error="the probabilities sum to 1.2, not 1",
    )
    chosen = TurnDecision(candidates=["send_sms"], choice="send_sms", probabilities={"send_sms": 0.9, "defer_to_llm": 0.1},
                          confidence=0.9, band="high", action="execute", outcome="proposed")
    session = Session(session=SessionInfo(id="unresolved", catalog="demo"),
                      turns=[Turn(message="text Ana I'm late", decision=refused), Turn(message="text Bo hi", decision=chosen)])
    app = make_app(make_config(tmp_path), session=session)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        cells = [app.log_table.row_cells(i) for i in (0, 1)]
        assert cells[0]["choice"].strip() == "-" and cells[0]["band"].strip().startswith("unres")
        assert cells[1]["choice"].strip() == "send_sms"
        rows = _log_lines(app)
        assert not any("defer_to_llm" in row for row in rows[1:]), rows


async def test_save_as_under_its_own_name_says_it_was_saved_in_place(tmp_path: Path) -> None:
    # "Save as" with the suggested name (the session's own file): the notification said "Session
    # saved as sessions/x.toml; further turns are saved there", read as a new file made. It was
    # written in place, and says so; another name still says where further turns go.
    app = make_app(make_config(tmp_path), session_id="2026-12-01T22-07-23-16a9b0")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await submit(app, pilot, AGENDA)
        await close_confirms(app, pilot)
        own = app.session.path
        assert own == tmp_path / "sessions" / "2026-12-01T22-07-23-16a9b0.toml" and own.is_file()
        app.action_save_as()
        await pilot.pause()
        assert app.screen.query_one("#prompt-input").value == own.stem  # the suggested name
        await pilot.press("enter")
        await settle(app, pilot)
        said = notifications(app)[-1]
        assert said == f"Saved in place: {display_path(own)} is already this session's file."
        assert "further turns" not in said and app.session.path == own
        assert sorted(p.name for p in own.parent.glob("*.toml")) == [own.name]
        assert app.save_as("renamed") == own.parent / "renamed.toml"
        await pilot.pause()
        assert notifications(app)[-1] == f"Session saved as {display_path(own.parent / 'renamed.toml')}; further turns are saved there."


async def _type_in_prompt(app, pilot, text: str) -> None:
    from textual.widgets import Input

    app.screen.query_one("#prompt-input", Input).value = text
    await pilot.press("enter")
    await settle(app, pilot)


async def test_a_refused_save_as_keeps_the_prompt_open_with_the_typed_name(tmp_path: Path) -> None:
    # Save as onto a name that exists: the prompt closed, a notification said "already exists"
    # and the name typed was gone: open the prompt, type it again. The prompt now stays, holding
    # the name as typed and the refusal under it; another name saves from there; escape cancels.
    from textual.widgets import Input

    app = make_app(make_config(tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await submit(app, pilot, AGENDA)
        await close_confirms(app, pilot)
        own = app.session.path
        taken = tmp_path / "sessions" / "taken-name.toml"
        taken.write_text("# keep me\n", encoding="utf-8")
        app.action_save_as()
        await pilot.pause()
        await _type_in_prompt(app, pilot, "taken-name")
        assert type(app.screen).__name__ == "PromptModal"
        assert app.screen.query_one("#prompt-input", Input).value == "taken-name"
        assert app.focused is app.screen.query_one("#prompt-input", Input)
        refusal = f"{taken} already exists; choose another name (nothing was overwritten)."
        assert str(app.screen.query_one("#prompt-refusal").render()) == refusal
        assert "taken-name.toml already exists" in screen_text(app)
        assert not any("already exists" in n for n in notifications(app))  # said once, in the prompt
        assert taken.read_text(encoding="utf-8") == "# keep me\n" and app.session.path == own
        box = app.screen.query_one("#prompt-input", Input)
        assert box.selection.is_empty and box.cursor_position == len("taken-name")  # not selected: a key adds to it
        await pilot.press("minus", "2", "enter")  # corrected in place
        await settle(app, pilot)
        assert app.screen is app.screen_stack[0]
        assert app.session.path == tmp_path / "sessions" / "taken-name-2.toml" and app.session.path.is_file()
        app.action_save_as()
        await pilot.pause()
        await _type_in_prompt(app, pilot, "taken-name")
        assert type(app.screen).__name__ == "PromptModal"
        await pilot.press("escape")  # still cancels
        await pilot.pause()
        assert app.screen is app.screen_stack[0] and app.session.path.name == "taken-name-2.toml"


PATH_PROMPT_REFUSALS = [
    ("action_open_file", "missing-session.toml", "missing-session.toml"),
    ("action_follow_file", "missing-live", "missing-live: no such file or folder to follow."),
    ("action_replay_file", "missing-replay.toml", "missing-replay.toml"),
    ("action_open_catalog", "missing-catalog.toml", "missing-catalog.toml: no such catalog file (nothing changed)."),
    ("action_open_config", "missing-config.toml", "missing-config.toml"),
]


@pytest.mark.parametrize(("action", "typed", "said"), PATH_PROMPT_REFUSALS)
async def test_every_path_prompt_keeps_a_refused_path_as_typed(tmp_path: Path, monkeypatch, action: str, typed: str, said: str) -> None:
    # The other prompts that take a path share the prompt: a path refused at once stays in the
    # prompt, with the refusal, instead of a notification over a closed prompt.
    from textual.widgets import Input

    monkeypatch.chdir(tmp_path)
    app = make_app(make_config(tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        path, catalog = app.session.path, app.router.catalog.name
        getattr(app, action)()
        await pilot.pause()
        await _type_in_prompt(app, pilot, typed)
        assert type(app.screen).__name__ == "PromptModal"
        assert app.screen.query_one("#prompt-input", Input).value == typed
        assert said in str(app.screen.query_one("#prompt-refusal").render())
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is app.screen_stack[0] and app.session.path == path and app.router.catalog.name == catalog
        assert app.follow_path is None


async def test_what_if_rows_wrap_under_their_own_text_at_80_columns(tmp_path: Path) -> None:
    # At 80 columns a what-if row ("  tiny.toml:1  high/execute -> low/fallback  conf 0.62
    # list_events  'show my calendar…'") is wider than the dialog: its quoted message wrapped to
    # column 0, under the header line, not under its row. The continuation now starts under the
    # row's text, two cells in from it; every row reads as one.
    from tui_router.app.widgets.wrapped_lines import WrappedLines

    app = make_app(make_config(tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        for n in range(3):
            await submit(app, pilot, f"{AGENDA} and tell me about week {n} of the quarterly planning cycle")
            await close_confirms(app, pilot)
        assert app.show_what_if("1 1")  # every turn below confidence 1 drops to the fallback
        await pilot.pause()
        view = app.screen.query_one("#whatif-scroll", WrappedLines)
        width = view.scrollable_content_region.width
        rows = view._rows
        changed = [line for line in view.lines if line.startswith("  ") and " -> " in line and ".toml:" in line]
        assert len(changed) == 3 and all(len(line) > width for line in changed)  # each row wraps
        for line in changed:
            first = rows.index(next(r for r in rows if line.startswith(r) and r.startswith("  ")))
            continuation = rows[first + 1]
            assert continuation.startswith("    ") and continuation[4] != " ", rows  # under the row's text
            assert line.endswith(continuation.strip()) or continuation.strip() in line
        assert all(len(row) <= width for row in rows)
        assert not [r for r in rows if r and not r.startswith(" ") and not r.startswith("what-if")], rows
        # as drawn on screen: no row of the dialog starts at its first column but the header
        shown = [view.render_line(y).text.rstrip() for y in range(view.scrollable_content_region.height)]
        assert [r for r in shown if r and not r.startswith(" ")] == [rows[0]]
