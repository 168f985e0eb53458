"""Console defects found driving it as a demanding terminal user would (the "ux" pass): one test per defect."""

from __future__ import annotations

from pathlib import Path

from app_harness import close_confirms, make_app, make_config, screen_text, settle

LONG_A = "create_calendar_reminder_for_personal_tasks_with_recurring_rules"  # 64 characters
LONG_B = "list_calendar_events_for_the_selected_day_or_week_with_attendees"


def long_id_config(folder: Path):
    assert len(LONG_A) == len(LONG_B) == 64
    catalog = folder / "long.toml"
    catalog.write_text(
        'name = "longids"\n'
        f'[[tools]]\nid = "{LONG_A}"\nwhen_to_use = "Set a personal reminder."\nrisk = "write"\nkeywords = ["remind"]\n'
        f'[[tools]]\nid = "{LONG_B}"\nwhen_to_use = "Show the calendar of a day."\nrisk = "read"\nkeywords = ["agenda"]\n'
        '[[tools]]\nid = "send_sms"\nwhen_to_use = "Send a text message."\nrisk = "outbound"\n',
        encoding="utf-8",
    )
    return make_config(folder, catalog=str(catalog))


async def test_a_64_character_tool_id_is_one_catalog_row_cut_with_an_ellipsis(tmp_path: Path) -> None:
    # At 120x40 the Catalog list wrapped each 64-character id over three rows, the risk word on the
    # third ("r_personal_tasks_with_recurr" on a row of its own). Each tool is one row now, its id
    # cut with …, and the detail below the list still shows the whole id.
    from textual.widgets import OptionList, Static

    app = make_app(long_id_config(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        listing = app.query_one("#catalog-list", OptionList)
        await pilot.pause()
        assert listing.option_count == 6  # two headers, three tools, the none option
        assert listing.virtual_size.height == listing.option_count  # one row each: nothing wrapped
        text = screen_text(app)
        assert "r_personal_tasks" not in text.split("───")[0]
        row = next(line for line in text.splitlines() if "create_calendar" in line)
        assert "…" in row and "write" in row, row
        detail = str(app.query_one("#catalog-detail", Static).render())
        assert LONG_A in detail.replace("\n", "")


async def test_a_catalog_filter_matching_nothing_says_so_and_how_to_get_the_tools_back(tmp_path: Path) -> None:
    # A filter matching no option left an empty list and, below it, the detail of a tool the filter
    # no longer lists (a highlight posted for an earlier keystroke's list arrived last).
    from textual.widgets import Input, Static

    app = make_app(make_config(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        app.query_one("#catalog-filter", Input).focus()
        await pilot.press(*"zzqq")
        await pilot.pause()
        await pilot.pause()
        text = screen_text(app)
        assert "No option matches “zzqq”." in text
        detail = str(app.query_one("#catalog-detail", Static).render())
        assert "ctrl+u" in detail and "create_reminder" not in detail and "list_events" not in detail, detail
        await pilot.press("ctrl+u")  # as the detail says: every option is back
        await pilot.pause()
        assert "No option matches" not in screen_text(app) and "create_reminder" in screen_text(app)


async def test_u_in_the_decision_log_puts_back_the_label_x_or_a_replaced(tmp_path: Path) -> None:
    # `x` cleared a label and `a` overwrote a hand-picked one at a keystroke, with no way back (the
    # review queue had `u`; the console did not): a destructive key without confirm or undo.
    from app_harness import AGENDA, REMINDER, notifications, run_palette, saved, submit

    app = make_app(make_config(tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await submit(app, pilot, REMINDER)
        await submit(app, pilot, AGENDA)
        app.workspace.set_label(1, "send_sms", "hand")  # a reviewer's hand label, not the choice
        await pilot.press("escape")  # to the Decision log, turn 2 selected
        await pilot.pause()
        await pilot.press("a")  # overwrites send_sms with the choice
        await settle(app, pilot)
        assert app.session.turns[1].label == "list_events"
        await pilot.press("x")
        await settle(app, pilot)
        assert app.session.turns[1].label is None
        await pilot.press("u")
        await settle(app, pilot)
        assert app.session.turns[1].label == "list_events"
        await run_palette(app, pilot, "label: undo")  # the palette entry does the same
        await settle(app, pilot)
        turn = app.session.turns[1]
        assert (turn.label, turn.label_source) == ("send_sms", "hand")
        assert saved(app)["turns"][1]["label"] == "send_sms"  # saved like any other change
        assert "Undone: turn 2 has 'send_sms' again." in notifications(app)
        await pilot.press("u")  # nothing left
        await settle(app, pilot)
        assert app.session.turns[1].label == "send_sms" and app.session.turns[0].label is None
        assert notifications(app)[-1].startswith("Nothing to undo")


async def test_an_empty_review_queue_says_why_on_screen(tmp_path: Path) -> None:
    # palette `view: review queue` on a first start: "0 queued in 0 files", an empty table, and a
    # notification (gone after a few seconds) saying "every turn in these files has a label" of no
    # files at all. The header now says why it is empty, and stays.
    from app_harness import AGENDA, notifications, run_palette, submit

    app = make_app(make_config(tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await run_palette(app, pilot, "view: review queue")
        await settle(app, pilot)
        assert type(app.screen).__name__ == "ReviewScreen"
        lines = screen_text(app).splitlines()
        assert "0 queued in 0 files" in lines[0]
        assert lines[1].strip().startswith("Nothing to review: there is no session file yet."), lines[1]
        assert "these files has a label" not in " ".join(notifications(app))
        await pilot.press("escape")
        await pilot.pause()
        await submit(app, pilot, AGENDA)
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("a")  # every turn labelled: the other reason
        await settle(app, pilot)
        await run_palette(app, pilot, "view: review queue")
        await settle(app, pilot)
        lines = screen_text(app).splitlines()
        assert "in 1 file" in lines[0]
        assert lines[1].strip() == "Nothing to review: every turn in these files has a label.", lines[1]


async def test_the_command_palette_footer_shows_the_palette_s_keys(tmp_path: Path) -> None:
    # With the palette open the console's footer showed through: "esc Log  f1 Help", while escape
    # closes the palette (and moves nowhere). The palette has its own footer now.
    app = make_app(make_config(tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        assert screen_text(app).splitlines()[-1].split()[:2] == ["esc", "Log"]  # the console's own
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.pause()
        footer = screen_text(app).splitlines()[-1]
        assert "Exit the command palette" in footer and "Log" not in footer, footer
        await pilot.press("escape")
        await pilot.pause()
        assert app.focused is not None and app.focused.id == "message"  # back where it was, nothing else


async def test_an_id_the_log_cuts_can_be_read_in_full_below_it(tmp_path: Path) -> None:
    # A 64-character choice or label was cut with … in the Decision log, the Candidates and the
    # Distribution panes, and the selected turn's detail did not name it: the whole id could be
    # read only by finding it in the Catalog pane. The detail now names every id the log may cut.
    from app_harness import submit

    from tui_router.app.widgets.text import PaneText

    app = make_app(long_id_config(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        await submit(app, pilot, "show my agenda")
        await close_confirms(app, pilot)
        turn = app.session.turns[0]
        assert turn.decision is not None and turn.decision.choice == LONG_B
        app.workspace.set_label(0, LONG_A, "hand")
        app._turn_changed(0)
        await pilot.pause()
        row = next(line for line in screen_text(app).splitlines() if "show my agenda" in line)
        assert LONG_B not in row and LONG_A not in row and "…" in row  # the log cuts both
        detail = str(app.query_one("#turn-detail", PaneText).render())
        assert f"choice {LONG_B} · label {LONG_A}" in detail.replace("\n", " "), detail
        assert LONG_B in screen_text(app).replace("│", "")  # on screen, not only in the widget
    from tui_router.app.widgets.decision_log import full_ids
    from tui_router.session import Turn

    assert full_ids(Turn(message="m", label="list_events")) is None  # short ids: no extra line


async def test_the_help_lists_every_palette_entry_with_wrapped_lines_under_their_description(tmp_path: Path) -> None:
    # F1 listed keys only: `session: open file`, `backend: use …`, `policy: what if` and the rest were
    # in the palette and nowhere in the help. And a description longer than the dialog wrapped back
    # to the left edge, under the keys column ("  pgup pgdn / home end  a page of turns up or down /
    # the first or last" then "turn" at column 2).
    from textual.widgets import Static

    app = make_app(make_config(tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await pilot.press("f1")
        await pilot.pause()
        assert type(app.screen).__name__ == "HelpScreen"
        shown = " ".join(str(s.render()) for s in app.screen.query(Static))
        titles = [c.title for c in app.get_system_commands(app.screen_stack[0])]
        assert len(titles) > 25
        missing = [t for t in titles if t not in shown]
        assert not missing, missing
        key = next(s for s in app.screen.query(".help-key") if str(s.render()) == "pgup pgdn / home end")
        what = next(s for s in app.screen.query(".help-what") if str(s.render()).startswith("a page of turns"))
        assert what.size.height == 2  # wrapped at 80 columns ...
        assert what.region.x > key.region.x + len("pgup pgdn / home end")  # ... within its own column
        await pilot.press("escape")
        await pilot.pause()
        assert type(app.screen).__name__ != "HelpScreen"


async def test_the_label_picker_keeps_its_option_in_sight_when_shrunk_and_says_when_nothing_matches(tmp_path: Path) -> None:
    # Open at 120x40 on a turn labelled human_review (low in the list), then the terminal shrank to
    # 60x20: the list kept its top, the highlighted option out of sight. And a filter matching
    # nothing left an empty list where enter only rang the bell.
    from app_harness import AGENDA, submit
    from textual.widgets import OptionList

    app = make_app(make_config(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        await submit(app, pilot, AGENDA)
        await close_confirms(app, pilot)
        app.workspace.set_label(0, "human_review", "hand")
        app.action_focus_log()
        await pilot.press("l")
        await pilot.pause()
        assert type(app.screen).__name__ == "OptionPicker"
        options = app.screen.query_one(OptionList)
        assert options.get_option_at_index(options.highlighted).id == "human_review"
        await pilot.resize_terminal(60, 20)
        await pilot.pause()
        await pilot.pause()
        assert "human_review" in screen_text(app)
        await pilot.press(*"zzqq")
        await pilot.pause()
        assert "No option matches “zzqq”" in screen_text(app)
        await pilot.press("enter")  # nothing to choose: the picker stays, the label too
        await pilot.pause()
        assert type(app.screen).__name__ == "OptionPicker"
        await pilot.press("escape")
        await pilot.pause()
        assert app.session.turns[0].label == "human_review"


async def test_switching_the_theme_redraws_every_row_in_the_new_theme(tmp_path: Path) -> None:
    # Palette `Theme` -> textual-light: the Decision log kept the rows it had drawn in the dark
    # theme's colours (light grey on near black, in a light screen) until each was redrawn, and
    # the review queue kept its band colours from the theme it was opened in.
    from app_harness import AGENDA, REMINDER, submit

    from tui_router.app.widgets.decision_log import DecisionLog

    def row_background(log: DecisionLog, y: int):
        return log.render_line(y)._segments[0].style.bgcolor

    app = make_app(make_config(tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await submit(app, pilot, AGENDA)
        await submit(app, pilot, REMINDER)
        await close_confirms(app, pilot)
        log = app.log_table
        dark = log.get_visual_style("decision-log--row").rich_style.bgcolor
        assert row_background(log, 0) == dark
        app.theme = "textual-light"
        await pilot.pause()
        await pilot.pause()
        light = log.get_visual_style("decision-log--row").rich_style.bgcolor
        assert light != dark
        assert row_background(log, 0) == light  # the row not under the cursor, drawn before the switch

        app.action_review_queue()
        await settle(app, pilot)
        table = app.screen.query_one("#review-queue")
        band = table.review.entries[0].band
        from tui_router.app.view import BAND_VARIABLE

        def band_colour() -> str:
            return str(table.get_row_at(0)[3].style)

        before = band_colour()
        assert before == app.theme_variables[BAND_VARIABLE[band]]
        app.theme = "gruvbox"  # every band colour differs from textual-light's
        await pilot.pause()
        await pilot.pause()
        assert band_colour() == app.theme_variables[BAND_VARIABLE[band]] != before


async def test_focus_on_a_detail_scroll_is_visible(tmp_path: Path) -> None:
    # Tab stops on the turn detail (and the Catalog's tool detail) below their lists, but nothing
    # showed it: the pane's border was lit as for the list, the list's cursor only dimmed.
    from app_harness import AGENDA, submit
    from textual.color import Color

    app = make_app(make_config(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        await submit(app, pilot, AGENDA)
        await close_confirms(app, pilot)
        primary = Color.parse(app.theme_variables["primary"])
        for scroll_id in ("turn-detail-scroll", "catalog-detail-scroll"):
            scroll = app.query_one(f"#{scroll_id}")
            assert scroll.styles.border_top[1] != primary
            app.action_focus_log()
            for _ in range(12):  # Tab reaches it (bounded: a broken order fails, never hangs)
                if app.focused is scroll:
                    break
                await pilot.press("tab")
            assert app.focused is scroll
            await pilot.pause()
            assert scroll.styles.border_top[1] == primary, scroll_id
            await pilot.press("tab")
            await pilot.pause()
            assert scroll.styles.border_top[1] != primary


async def test_every_palette_entry_with_a_key_names_that_key(tmp_path: Path) -> None:
    # The palette said "(a)", "(x)", "(F2)" for most actions with a key, but not for `turn: route a
    # message` (i in the Decision log) or `turn: confirm again` (enter on the row): the same action
    # under two names, one of them silent about the other.
    from tui_router.app.app import RouterConsole
    from tui_router.app.widgets.decision_log import DecisionLog
    from tui_router.app.widgets.message_input import MessageInput

    keys: dict[str, set[str]] = {}
    for owner in (RouterConsole, DecisionLog, MessageInput):
        for binding in owner.BINDINGS:
            action = binding.action.removeprefix("app.")
            keys.setdefault(action, set()).update(k.strip() for k in binding.key.split(","))
    keys["confirm_turn"] = keys.get("select_row", set())  # enter on a waiting row confirms it
    shown = {"question_mark": "?", "escape": "escape", "enter": "enter"}
    app = make_app(make_config(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        missing = []
        for command in app.get_system_commands(app.screen):
            action = getattr(command.callback, "__name__", "").removeprefix("action_")
            bound = keys.get(action)
            if bound and ": " in command.title:
                words = command.help.replace("(", " ").replace(")", " ").lower().split()
                if not any(shown.get(k, k).lower() in words for k in bound):
                    missing.append(f"{command.title}: {command.help} (keys {sorted(bound)})")
        assert not missing, missing


async def test_what_if_on_a_session_without_turns_says_so_like_replay(tmp_path: Path) -> None:
    # palette `policy: what if` on a new session asked for thresholds, then showed "no turn has a
    # recorded decision to re-band (hand-written cases)": there are no turns, hand-written or not.
    from app_harness import notifications, run_palette

    app = make_app(make_config(tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await run_palette(app, pilot, "policy: what if")
        await pilot.pause()
        assert len(app.screen_stack) == 1  # no dialog opened
        assert notifications(app)[-1] == "Nothing to compare yet: this session has no turns."
        assert "hand-written" not in screen_text(app)


async def test_q_while_a_fallback_runs_asks_before_stopping_it(tmp_path: Path) -> None:
    # q in the Decision log quit at once, killing a running fallback command whose output was then
    # lost: a key doing something destructive without a confirm. The first q now says so; a
    # second q quits (the turn stays fallback pending, saved).
    from app_harness import AGENDA, fallback_section, notifications, submit

    app = make_app(make_config(tmp_path, fallback=fallback_section("sleepy.py", "30")))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        app.set_thresholds(1.0, 1.0)  # low band: fallback pending
        await submit(app, pilot, AGENDA)
        app.log_table.focus()
        await pilot.press("f")
        for _ in range(100):
            await pilot.pause(0.05)
            if app.workspace.fallback_turn is not None:
                break
        assert app.workspace.fallback_turn == 0
        await pilot.press("q")
        await pilot.pause()
        assert app.is_running and app.workspace.fallback_turn == 0  # still running, still here
        assert notifications(app)[-1].startswith("The fallback command is running for turn 1. Press q again")
        await pilot.press("q")
        await pilot.pause()
    assert app.return_code == 0
    assert app.session.turns[0].fallback is None and app.session.turns[0].decision.outcome != "fallback_done"


async def test_f10_and_palette_maximize_fill_the_screen_with_the_whole_pane(tmp_path: Path) -> None:
    # Palette `Maximize` did nothing on the Candidates and Distribution panes (Textual does not
    # maximize scroll containers) and, in the Decision log, showed the rows alone: no column header,
    # no turn detail. It had no key either (Harlequin: F10). Now f10 toggles it, pane by pane.
    from app_harness import AGENDA, notifications, run_palette, submit

    app = make_app(make_config(tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await submit(app, pilot, AGENDA)
        await close_confirms(app, pilot)
        app.action_focus_log()
        await run_palette(app, pilot, "Maximize")
        await pilot.pause()
        assert app.screen.maximized is app.query_one("#log-pane")
        lines = screen_text(app).splitlines()
        assert "Decision log" in lines[0] and "message" in lines[1] and "choice" in lines[1]
        assert any(line.strip("│ ").startswith("message show my calendar agenda") for line in lines)  # the detail
        assert app.query_one("#turn-detail-scroll").size.height >= 6  # and room for it (2 rows at 80x24)
        await pilot.press("escape")  # restores, as Textual does
        await pilot.pause()
        assert app.screen.maximized is None
        for pane in ("candidates-pane", "distribution-pane", "turn-detail-scroll"):
            app.query_one(f"#{pane}").focus()
            await pilot.pause()
            await pilot.press("f10")
            await pilot.pause()
            expected = "log-pane" if pane == "turn-detail-scroll" else pane
            assert app.screen.maximized is app.query_one(f"#{expected}"), pane
            await pilot.press("f10")
            await pilot.pause()
            assert app.screen.maximized is None
        app.action_focus_input()  # the message box is no pane: f10 says where to go instead
        await pilot.press("f10")
        await pilot.pause()
        assert app.screen.maximized is None
        assert notifications(app)[-1].startswith("F10 fills the screen with a pane")


async def test_the_detail_names_an_id_as_soon_as_a_narrower_log_cuts_it(tmp_path: Path) -> None:
    # At 60x20 the log's choice column is 8 cells: "list_events" showed as "list_e…" and, being
    # no longer than the 12 cells of the 80-column layout, was not named in the detail. The detail
    # follows the log's actual column widths, also when the terminal is resized.
    from app_harness import AGENDA, submit

    from tui_router.app.widgets.text import PaneText

    def detail() -> str:
        return str(app.query_one("#turn-detail", PaneText).render())

    app = make_app(make_config(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        await submit(app, pilot, AGENDA)
        await close_confirms(app, pilot)
        assert app.session.turns[0].decision.choice == "list_events"
        assert "choice list_events" not in detail()  # the log shows it whole: no extra line
        await pilot.resize_terminal(60, 20)
        await pilot.pause()
        await pilot.pause()
        row = next(line for line in screen_text(app).splitlines() if line.startswith("│ show"))
        assert "list_events" not in row and "list_" in row  # cut now ...
        assert "choice list_events" in detail()  # ... and named in full below
