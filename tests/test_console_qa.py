"""Defects found by a QA pass that used the console as a new user would (one test per defect)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest
from app_harness import AGENDA, make_app, make_config, notifications, screen_text, settle, submit, write_catalog
from textual import events

from tui_router.app.widgets.message_input import MessageInput


async def test_growing_the_terminal_back_above_30_rows_restores_the_tall_layout(tmp_path: Path) -> None:
    # Started at 80x24 and resized to 120x40, the console kept the short layout: a borderless
    # message box and a one-line turn detail, so the fallback result under the log never showed.
    app = make_app(make_config(tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await submit(app, pilot, AGENDA)
        main = app.screen_stack[0]
        assert main.has_class("-short") and app.query_one("#message", MessageInput).compact
        await pilot.resize_terminal(120, 40)
        await pilot.pause()
        assert not main.has_class("-short")
        assert not app.query_one("#message", MessageInput).compact
        assert app.query_one("#turn-detail-scroll").size.height == 4  # the rule and four lines
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        assert main.has_class("-short") and app.query_one("#message", MessageInput).compact


async def test_control_characters_in_the_message_box_are_drawn_as_visible_symbols(tmp_path: Path) -> None:
    # A paste with ESC, BEL, a C1 CSI and a bidi override: Textual's Input drew the C1 CSI and the
    # override raw (a terminal acts on them) and ESC sequences scrambled the line ("^[31mREDone").
    pasted = "one \x1b[31mRED\x1b[0m bell\x07 c1\x9b2J rtl\u202eabc"
    app = make_app(make_config(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        box = app.query_one("#message", MessageInput)
        box.focus()
        box.post_message(events.Paste(pasted))
        await pilot.pause()
        assert box.value == pasted  # the message itself is kept exactly
        line = "".join(segment.text for segment in box.render_line(0))
        for raw in ("\x1b", "\x07", "\x9b", "\u202e"):
            assert raw not in line
        assert "one ␛[31mRED␛[0m bell␇ c1" in line  # in order, one cell per character
        await pilot.press("enter")
        await settle(app, pilot)
        assert app.session.turns[0].message == pasted
        assert "\x9b" not in screen_text(app)


def console_in_a_terminal(tmp_path: Path):  # noqa: ANN201 (test_console_e2e.Terminal)
    """The real console in a pseudo-terminal on the tiny catalog, local backend, every turn confirmed
    or sent to the fallback (high = medium = 1), sessions in tmp_path/sessions."""
    from test_console_e2e import Terminal

    catalog = write_catalog(tmp_path)
    (tmp_path / "tui-router.toml").write_text(
        f'catalog = "{catalog}"\nbackend = "local"\nsessions_dir = "sessions"\n[policy]\nhigh = 1.0\nmedium = 1.0\n', encoding="utf-8"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("TUI_ROUTER_CONFIG", "TEXTUAL", "NO_COLOR")}
    env.update(TERM="xterm-256color", TUI_ROUTER_CONFIG=str(tmp_path / "tui-router.toml"))
    return Terminal([sys.executable, "-m", "tui_router"], env, tmp_path)


@pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pseudo-terminal")
def test_a_byte_that_is_not_utf8_on_the_terminal_does_not_kill_the_console(tmp_path: Path) -> None:
    # A paste from a Latin-1 terminal or a raw C1 byte (0x9b): Textual's input thread decoded stdin
    # as strict UTF-8, raised UnicodeDecodeError and the console exited with a traceback.
    from test_console_e2e import ESC, session_turns, wait_for_turns

    term = console_in_a_terminal(tmp_path)
    try:
        term.wait_for("Type a user message")
        os.write(term.master, f"{ESC}[200~caf".encode() + b"\xe9 \x9b" + f"{ESC}[201~".encode())
        time.sleep(0.5)
        term.send(" ok\r")
        turns = wait_for_turns(tmp_path / "sessions", 1)
        assert turns[0]["message"] == "caf\ufffd \ufffd ok"
        term.send("\x11")  # ctrl+q
        assert term.process.wait(15) == 0
    finally:
        term.close()
    assert "UnicodeDecodeError" not in term.text()
    assert len(session_turns(tmp_path / "sessions")) == 1


def _type_at_once(app, keys: str) -> None:
    """Post every key to the app in one go, as a terminal delivers keys typed fast or in one read."""
    for key in keys:
        app.post_message(events.Key(key, key))


async def test_keys_typed_right_after_i_go_to_the_message_box(tmp_path: Path) -> None:
    # `i` in the Decision log moved focus to the message box only after the keys already read
    # had gone to the log: "ihello" typed fast opened the label picker (l) and lost the text.
    app = make_app(make_config(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        await submit(app, pilot, AGENDA)
        await pilot.press("escape")
        await pilot.pause()
        assert app.focused is app.log_table
        _type_at_once(app, "ihello")
        await pilot.pause()
        await pilot.pause()
        box = app.query_one("#message", MessageInput)
        assert app.screen is app.screen_stack[0]  # no label picker opened
        assert app.focused is box and box.value == "hello"
        assert app.session.turns[0].label is None


async def test_keys_typed_right_after_escape_go_to_the_decision_log(tmp_path: Path) -> None:
    # escape then `a` typed fast: the a was typed into the next message instead of labelling.
    app = make_app(make_config(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        await submit(app, pilot, AGENDA)
        box = app.query_one("#message", MessageInput)
        assert app.focused is box
        app.post_message(events.Key("escape", None))
        _type_at_once(app, "a")
        await settle(app, pilot)
        assert box.value == ""
        assert app.session.turns[0].label == app.session.turns[0].decision.choice


async def test_a_long_fallback_output_scrolls_with_the_keyboard(tmp_path: Path) -> None:
    # The output dialog held 65,536 characters of output but nothing in it had focus, so the keys
    # (down, page down, end) did nothing and only the first screenful could be read.
    from app_harness import fallback_section

    app = make_app(make_config(tmp_path, fallback=fallback_section("flood.py", "20000")))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        app.set_thresholds(1.0, 1.0)  # low band: fallback pending
        await submit(app, pilot, AGENDA)
        await pilot.press("escape", "f")
        await settle(app, pilot)
        assert app.session.turns[0].fallback is not None and len(app.session.turns[0].fallback.output) > 10_000
        await pilot.press("enter")
        await pilot.pause()
        scroll = app.screen.query_one("#output-scroll")
        assert scroll.max_scroll_y > 100
        await pilot.press("pagedown")
        await pilot.pause()
        assert scroll.scroll_y > 0
        await pilot.press("end")
        await pilot.pause()
        assert scroll.scroll_y == scroll.max_scroll_y
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is app.screen_stack[0]


async def test_the_help_scrolls_with_the_keyboard_at_80x24(tmp_path: Path) -> None:
    # At 80x24 the help is taller than its dialog and nothing in it had focus: end did nothing, so
    # the review-queue keys and the bands at its foot could not be read without a mouse.
    app = make_app(make_config(tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await pilot.press("f1")
        await pilot.pause()
        scroll = app.screen.query_one("#help-scroll")
        assert scroll.max_scroll_y > 0
        await pilot.press("end")
        await pilot.pause()
        assert scroll.scroll_y == scroll.max_scroll_y
        assert "Every turn and every label is saved" in screen_text(app)
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is app.screen_stack[0]


async def test_the_confirm_dialog_keeps_its_buttons_on_screen_at_80x24_and_60x20(tmp_path: Path) -> None:
    # A message of a few lines opened a confirm dialog taller than an 80x24 screen: its buttons,
    # reason and hint were cut off below the frame.
    from app_harness import confidence_of, thresholds_for

    config = make_config(tmp_path)
    long_message = " ".join([AGENDA] * 12)
    _, confidence = confidence_of(config, long_message)
    for size in ((80, 24), (60, 20)):
        app = make_app(config)
        async with app.run_test(size=size) as pilot:
            await settle(app, pilot)
            app.set_thresholds(*thresholds_for("medium", confidence))
            await submit(app, pilot, long_message)
            assert type(app.screen).__name__ == "ConfirmTurnModal"
            dialog = app.screen.query_one("#confirm-dialog").region
            for button in ("#approve", "#decline", "#choose"):
                region = app.screen.query_one(button).region
                assert region.height == 3, (size, button)
                assert dialog.contains_region(region), (size, button, region, dialog)
                assert region.bottom <= size[1] - 1  # above the footer
            assert "Approve (y)" in screen_text(app)
            await pilot.press("y")
            await settle(app, pilot)
            assert app.session.turns[0].decision.outcome == "approved"


async def test_every_text_box_draws_control_characters_as_symbols(tmp_path: Path) -> None:
    # The catalog filter, the label picker's filter and the prompts (save as offers the session
    # file's name, which can hold any character) were plain Inputs that drew them raw.
    from textual.widgets import Input

    from tui_router.app.screens.prompt import PromptModal

    hostile = "a\x1b]0;owned\x07b\x9b2Jc\u202ed"
    app = make_app(make_config(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        boxes = [app.query_one("#catalog-filter", Input)]
        app.push_screen(PromptModal("Save session as", value=hostile))
        await pilot.pause()
        boxes.append(app.screen.query_one("#prompt-input", Input))
        for box in boxes:
            box.value = hostile
            box.focus()
            await pilot.pause()
            line = "".join(segment.text for segment in box.render_line(0))
            assert not any(raw in line for raw in ("\x1b", "\x07", "\x9b", "\u202e")), line
            assert "a␛]0;owned␇b\ufffd2Jc\ufffdd" in line
        await pilot.press("escape")
        await pilot.pause()
        await submit(app, pilot, AGENDA)
        await pilot.press("escape", "l")
        await pilot.pause()
        picker = app.screen.query_one("#picker-filter", Input)
        picker.value = hostile
        await pilot.pause()
        line = "".join(segment.text for segment in picker.render_line(0))
        assert "\x9b" not in line and "\u202e" not in line and "\x1b" not in line


async def test_the_label_picker_shows_its_own_keys_and_a_file_name_safely(tmp_path: Path) -> None:
    # The picker had no footer, so the review queue's keys (a Accept, s Skip) showed under it while
    # those keys typed into its filter; its title (the session file's name) was drawn raw.
    from test_app_review import decided, write
    from textual.widgets import Footer

    from tui_router.app.screens.picker import OptionPicker
    from tui_router.review import Review

    name = "x\x1b[2Jy\u202e.toml"
    path = write(tmp_path / name, [decided("show my agenda", {"list_events": 0.7, "defer_to_llm": 0.3})])
    app = make_app(make_config(tmp_path), review=Review.of_files([path], reviewer="dana"))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        await pilot.press("l")
        await pilot.pause()
        assert isinstance(app.screen, OptionPicker)
        assert app.screen.query(Footer)  # the picker's own keys, not the queue's
        text = screen_text(app)
        assert "\x1b" not in text and "\u202e" not in text
        assert "Label x\\x1b[2Jy\\u202e.toml turn 1" in text
        footer = text.splitlines()[-1]
        assert "Cancel" in footer and "Skip" not in footer
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, OptionPicker)


@pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pseudo-terminal and signals")
def test_sigterm_ends_the_console_like_q_and_restores_the_terminal(tmp_path: Path) -> None:
    # `kill PID` ended the console on the spot: the shell came back inside the alternate screen
    # with mouse reporting still on (every click printed escape codes at the prompt).
    import signal

    from test_console_e2e import wait_for_turns

    term = console_in_a_terminal(tmp_path)
    try:
        term.wait_for("Type a user message")
        term.send(AGENDA + "\r")
        wait_for_turns(tmp_path / "sessions", 1)
        mark = len(term.output)
        term.process.send_signal(signal.SIGTERM)
        assert term.process.wait(15) == 128 + signal.SIGTERM
        time.sleep(0.3)  # the reader thread drains the last bytes
        tail = bytes(term.output[mark:])
    finally:
        term.close()
    assert b"\x1b[?1049l" in tail  # left the alternate screen
    assert b"\x1b[?1000l" in tail  # mouse reporting off
    assert wait_for_turns(tmp_path / "sessions", 1)[0]["message"] == AGENDA


async def test_a_hand_written_turn_without_a_decision_is_not_shown_as_routing(tmp_path: Path) -> None:
    # A hand-written eval file (message + label, no decision) opened in the console showed
    # "routing…" on each such row forever, as if the console were still working on it.
    from tui_router.app.widgets.decision_log import DecisionLog
    from tui_router.session import load_session

    path = tmp_path / "cases.toml"
    path.write_text('[[turns]]\nmessage = "remind me to call mum"\nlabel = "create_reminder"\n', encoding="utf-8")
    app = make_app(make_config(tmp_path), session=load_session(path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        log = app.query_one(DecisionLog)
        assert log.row_cells(0)["choice"] == "not routed"
        await submit(app, pilot, AGENDA)
        assert app.session.turns[1].decision is not None
        assert log.row_cells(0)["choice"] == "not routed"
        assert log.row_cells(1)["choice"] == app.session.turns[1].decision.choice


PASTE_WITH_ESCAPES = "first \x1b[31mred\x1b[0m\nsecond line"


@pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pseudo-terminal")
def test_a_paste_with_escape_codes_is_one_turn_exactly_as_pasted(tmp_path: Path) -> None:
    # tmux passes pasted escape codes through. Textual's parser took ESC inside the paste for the
    # start of a key sequence and re-sent what followed as key presses: the text came out
    # scrambled and its newline pressed Enter, so one paste became two turns
    # (['^[31mred^[0m', 'second linefirst']).
    from test_console_e2e import ESC, session_turns, wait_for_turns

    term = console_in_a_terminal(tmp_path)
    try:
        term.wait_for("Type a user message")
        term.send(f"{ESC}[200~{PASTE_WITH_ESCAPES}{ESC}[201~")
        time.sleep(0.5)
        term.send("\r")
        turns = wait_for_turns(tmp_path / "sessions", 1)
        term.send(ESC)  # the escape key still works right after a paste
        time.sleep(0.3)
        term.send("q")
        assert term.process.wait(15) == 0
    finally:
        term.close()
    assert [t["message"] for t in session_turns(tmp_path / "sessions")] == ["first \x1b[31mred\x1b[0m second line"]
    assert len(turns) == 1


def test_the_terminal_reader_sets_escapes_in_a_paste_aside_however_the_reads_fall() -> None:
    from tui_router.app.terminal_input import PASTE_END, PASTE_START, PASTED_ESC, PasteEscapes, unescape_paste

    stream = "ab\x1b[A" + PASTE_START + "x\x1b[31my" + PASTE_END + "\x1b" + PASTE_START + "\x1b" + PASTE_END + "z"
    expected = "ab\x1b[A" + PASTE_START + f"x{PASTED_ESC}[31my" + PASTE_END + "\x1b" + PASTE_START + PASTED_ESC + PASTE_END + "z"
    for size in range(1, len(stream) + 1):  # every way the reads can cut the stream
        reader = PasteEscapes()
        got = "".join(reader(stream[i : i + size]) for i in range(0, len(stream), size))
        assert got == expected, size
    reader = PasteEscapes()
    assert reader("\x1b") == "\x1b"  # the escape key is passed on at once, never held back
    assert reader("[200~") == "[200~" and reader.in_paste  # ...even when it starts a paste
    assert reader("p\x1b") == "p"  # inside a paste a possible end marker waits for the next read
    assert reader("[201~") == PASTE_END and not reader.in_paste
    assert unescape_paste(f"a{PASTED_ESC}b") == "a\x1bb"


async def test_the_other_text_boxes_put_a_pasted_escape_back(tmp_path: Path) -> None:
    from textual.widgets import Input

    from tui_router.app.terminal_input import PASTED_ESC

    app = make_app(make_config(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        box = app.query_one("#catalog-filter", Input)
        box.focus()
        box.post_message(events.Paste(f"re{PASTED_ESC}[1mmind"))
        await pilot.pause()
        assert box.value == "re\x1b[1mmind"


async def test_the_review_queue_shows_where_session_file_names_differ(tmp_path: Path) -> None:
    # Session files are named by time, so in the 14-cell file column every row read
    # "2026-11-30T23…": the part that tells them apart was the part cut off.
    from test_app_review import decided, write

    from tui_router.app.screens.review import QueueTable
    from tui_router.review import Review

    first = write(tmp_path / "2026-11-30T23-41-51-4125b5.toml", [decided("show my agenda", {"list_events": 0.7, "defer_to_llm": 0.3})])
    second = write(tmp_path / "2026-11-30T23-44-02-afce26.toml", [decided("text me", {"send_sms": 0.6, "defer_to_llm": 0.4})])
    app = make_app(make_config(tmp_path), review=Review.of_files([first, second], reviewer="dana"))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        table = app.screen.query_one(QueueTable)
        shown = {str(table.cells(position)[0]) for position in range(2)}
        assert shown == {"…1-4125b5.toml", "…2-afce26.toml"}
        assert "…1-4125b5.toml" in screen_text(app)


async def test_typing_the_next_message_into_an_open_confirm_dialog_neither_answers_it_nor_loses_the_message(tmp_path: Path) -> None:
    # qa2: the dialog opens as soon as the turn is routed; a message typed on without looking went
    # to it: "Book the dentist" declined turn 1 (its `n`, recorded as not_this) and routed "tist".
    app = make_app(make_config(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        await submit(app, pilot, "text Jordan by sms that the deploy finished")
        assert type(app.screen).__name__ == "ConfirmTurnModal"
        for key in ["B", "o", "o", "k", "space", "t", "h", "e", "space", "d", "e", "n", "t", "i", "s", "t"]:
            await pilot.press(key)
        assert type(app.screen).__name__ == "Screen"
        assert app.query_one("#message", MessageInput).value == "Book the dentist"
        await pilot.press("enter")
        await settle(app, pilot)
        first, second = app.session.turns[:2]
        assert (first.decision.outcome, first.not_this) == ("pending", [])
        assert second.message == "Book the dentist"
        assert "Turn 1 waits for confirmation: Enter on its row in the Decision log opens it." in notifications(app)
        # the keys that answer it still do, once the dialog is reopened from its row
        app.open_confirm(0)
        await pilot.pause()
        await pilot.press("n")
        await settle(app, pilot)
        assert (app.session.turns[0].decision.outcome, app.session.turns[0].not_this) == ("declined", ["send_sms"])


async def test_f1_opens_the_help_over_the_confirm_dialog(tmp_path: Path) -> None:
    # A modal screen hides the app's bindings: F1 did nothing while the confirm dialog was open.
    app = make_app(make_config(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        await submit(app, pilot, "text Jordan by sms that the deploy finished")
        assert type(app.screen).__name__ == "ConfirmTurnModal"
        await pilot.press("f1")
        await pilot.pause()
        assert type(app.screen).__name__ == "HelpScreen"
        await pilot.press("escape")
        await pilot.pause()
        assert type(app.screen).__name__ == "ConfirmTurnModal"  # back to the undecided dialog
        await pilot.press("y")
        await settle(app, pilot)
        assert app.session.turns[0].decision.outcome == "approved"


async def test_a_session_opened_on_a_catalog_that_lost_a_tool_says_so_and_never_approves_that_tool(tmp_path: Path) -> None:
    # qa2: `tui-router open` of a session whose confirm proposed send_sms, on a catalog without
    # send_sms: no word of it, and Enter on the row opened a blank dialog whose Approve labelled the
    # turn 'send_sms', which eval then refuses ("not an option of catalog").
    from app_harness import CATALOG

    from tui_router.session import load_session

    first = make_app(make_config(tmp_path))
    async with first.run_test(size=(120, 40)) as pilot:
        await settle(first, pilot)
        await submit(first, pilot, "text Jordan by sms that the deploy finished")
        assert type(first.screen).__name__ == "ConfirmTurnModal"
        await pilot.press("escape")  # decide later: pending
        await settle(first, pilot)
        path = first.session.path
    assert load_session(path).turns[0].decision.choice == "send_sms"
    before = path.read_bytes()
    blocks = CATALOG.split("[[tools]]")
    (tmp_path / "tiny.toml").write_text("[[tools]]".join(b for b in blocks if 'id = "send_sms"' not in b), encoding="utf-8")
    app = make_app(_config_keeping_catalog(tmp_path), session=load_session(path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        assert any("names options catalog 'tiny' does not have ('send_sms'): it changed since" in n for n in notifications(app))
        app.open_confirm(0)
        await pilot.pause()
        assert type(app.screen).__name__ == "Screen"  # no dialog to approve a tool that is gone
        assert any("Turn 1 proposed 'send_sms', which is not in catalog 'tiny' any more" in n for n in notifications(app))
        await pilot.press("y")
        await settle(app, pilot)
        assert app.session.turns[0].label is None and app.session.turns[0].decision.outcome == "pending"
    assert path.read_bytes() == before


def _config_keeping_catalog(folder: Path):
    """make_config without rewriting folder/tiny.toml (a test changed it)."""
    from tui_router.config import config_from_dict

    return config_from_dict({"catalog": str(folder / "tiny.toml"), "backend": "local", "sessions_dir": str(folder / "sessions")}, folder / "tui-router.toml")


async def test_the_review_queue_at_80x24_shows_the_message_being_labelled(tmp_path: Path) -> None:
    # qa2: at 80 columns the queue's fixed columns filled the row, the message column was drawn off
    # screen, and no other pane showed the message: a reviewer labelled turns without reading them.
    from test_app_review import decided, write

    from tui_router.review import Review

    config = make_config(tmp_path)
    message = "Find a slot when Ana and Li are both free next week for the quarterly planning review"
    path = write(tmp_path / "2026-12-01T00-34-30-2a0baf.toml", [decided(message, {"list_events": 0.55, "create_reminder": 0.45})])
    app = make_app(config, review=Review.of_files([path], reviewer="dana"))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        lines = screen_text(app).splitlines()
        assert lines[0].rstrip().endswith("│ …30-2a0baf.toml turn 1")  # one line: the end of the name, no reviewer
        assert " ".join(line.strip() for line in lines[1:3]) == f"message {message}"  # whole, on two lines
        row = next(line for line in lines if "list_events" in line and "0.10" in line)
        assert "Find a slot" in row  # the queue's message column is on screen
        assert all(len(line.rstrip()) <= 80 for line in lines)
        await pilot.resize_terminal(120, 40)
        await pilot.pause()
        app.screen.show_current()
        await pilot.pause()
        assert screen_text(app).splitlines()[0].rstrip().endswith("│ 2026-12-01T00-34-30-2a0baf.toml turn 1 · reviewer dana")


async def test_the_command_palette_search_box_draws_control_characters_as_symbols(tmp_path: Path) -> None:
    # The palette's search box was Textual's own Input: a pasted C1 CSI or bidi override went to
    # the terminal raw. It still finds and runs commands.
    from textual.widgets import Input

    hostile = "a\x1b]0;owned\x07b\x9b2Jc\u202ed"
    app = make_app(make_config(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        await pilot.press("ctrl+p")
        await pilot.pause()
        box = app.screen.query_one(Input)
        box.post_message(events.Paste(hostile))
        await pilot.pause()
        assert box.value == hostile
        line = "".join(segment.text for segment in box.render_line(0))
        assert not any(raw in line for raw in ("\x1b", "\x07", "\x9b", "\u202e")), line
        assert "a␛]0;owned␇b\ufffd2Jc\ufffdd" in line
        await pilot.press("escape")
        await pilot.pause()
        from app_harness import run_palette

        await run_palette(app, pilot, "view: help")
        assert type(app.screen).__name__ == "HelpScreen"


async def test_the_replay_header_keeps_one_line_at_80_columns(tmp_path: Path) -> None:
    # qa2: `tui-router replay FILE` at 80x24: the thresholds wrapped the header onto a second line.
    from tui_router.session import load_session

    first = make_app(make_config(tmp_path))
    async with first.run_test(size=(120, 40)) as pilot:
        await settle(first, pilot)
        await submit(first, pilot, AGENDA)
        path = first.session.path
    app = make_app(make_config(tmp_path), replay=load_session(path))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        lines = screen_text(app).splitlines()
        assert lines[0].rstrip().endswith("│ ≥0.75/≥0.45") and lines[0].lstrip().startswith("replay ")
        assert lines[1].startswith("╭")  # the panes start on the second line
