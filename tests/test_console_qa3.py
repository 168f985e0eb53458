"""Defects found by a third QA pass: the README followed verbatim by a newcomer, every key and palette
entry tried at 120x40 and 80x24 (one test per defect)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from app_harness import AGENDA, make_app, make_config, screen_text, settle, submit, write_catalog
from textual.widgets import OptionList

from tui_router.app.widgets.message_input import MessageInput
from tui_router.embed import semantic_available


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


@pytest.mark.skipif(not semantic_available(), reason="the semantic extra is not installed")
async def test_the_replay_header_keeps_one_line_with_the_default_backend(tmp_path: Path) -> None:
    # `tui-router replay FILE` with the default (semantic) backend: its model id is about 60
    # characters, and the header wrapped onto a second line at 120 columns (and at 80).
    from tui_router.session import load_session

    session = tmp_path / "monday.toml"
    session.write_text('[session]\nid = "monday"\n\n[[turns]]\nmessage = "Text Jordan that the deploy finished."\n', encoding="utf-8")
    config = make_config(tmp_path, catalog="demo", backend="semantic", semantic={"cache_dir": str(tmp_path / "vectors")})
    for size in ((120, 40), (80, 24)):
        app = make_app(config, replay=load_session(session))
        async with app.run_test(size=size) as pilot:
            await settle(app, pilot)
            assert app.router is not None and len(app.router.backend.model) > 40
            lines = screen_text(app).splitlines()
            assert lines[0].lstrip().startswith("replay ") and "semantic" in lines[0], lines[:2]
            assert lines[0].rstrip().endswith(("medium ≥ 0.45", "≥0.45")), lines[:2]
            assert lines[1].startswith("╭"), lines[:2]  # the panes start on the second line


async def test_the_what_if_dialog_shows_its_own_keys_and_scrolls_at_80x24(tmp_path: Path) -> None:
    # palette `policy: what if`: the result dialog had no footer of its own, so the console's
    # showed through it ("a Accept  l Pick ...", keys the dialog ignores), it never said how to close
    # it, and at 80x24 a long diff could not be scrolled with the keyboard.
    from textual.containers import ScrollableContainer

    app = make_app(make_config(tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        for n in range(12):
            await submit(app, pilot, f"{AGENDA} {n}")
        await pilot.press("escape")  # the Decision log: its footer shows a Accept, l Pick
        await pilot.pause()
        assert app.show_what_if("1 1")  # every turn below confidence 1 drops to the fallback
        await pilot.pause()
        assert type(app.screen).__name__ == "WhatIfScreen"
        for _ in range(100):  # the dialog's footer is drawn a refresh or two later on a loaded machine
            text = screen_text(app)
            footer = text.splitlines()[-1]
            if footer.strip():
                break
            await pilot.pause(0.05)
        assert "esc Close" in footer and "Accept" not in footer, footer
        assert "escape: close" in text
        scroll = app.screen.query_one("#whatif-scroll", ScrollableContainer)
        assert scroll.max_scroll_y > 0  # the diff is taller than the dialog
        await pilot.press("end")
        await pilot.pause()
        assert scroll.scroll_y == scroll.max_scroll_y
        await pilot.press("escape")
        await pilot.pause()
        assert type(app.screen).__name__ != "WhatIfScreen"


async def test_the_readme_names_every_command_palette_entry(tmp_path: Path) -> None:
    # The README's "Keys" paragraph says the palette has "every action under a namespaced title" and
    # listed them, but six were missing (turn: route a message, the three arguments entries,
    # session: follow live file, policy: what if, view: review queue): a newcomer reading it could
    # not know they exist.
    import re

    readme = (Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8")
    keys = readme[readme.index("**Keys.**") :].split("\n\n", 1)[0]
    listed = set(re.findall(r"`([a-z]+: [^`]+)`", keys))
    for entry in [e for e in listed if "|" in e]:  # backend: use local|bm25|systemone|semantic
        head, _, names = entry.rpartition(" ")
        listed |= {f"{head} {name}" for name in names.split("|")}
    app = make_app(make_config(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        ours = {c.title for c in app.get_system_commands(app.screen) if ": " in c.title}
    assert len(ours) > 20
    assert ours <= listed, sorted(ours - listed)


@pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pseudo-terminal")
def test_config_reload_keeps_the_command_line_options(tmp_path: Path) -> None:
    # `tui-router --catalog my.toml --backend bm25` (the README's second console command), then the
    # fallback command added to the config and palette `config: reload` as the README says: the
    # console re-read the file alone and went on routing with the file's backend (and catalog).
    from test_console_e2e import Terminal, wait_for_turns

    catalog = write_catalog(tmp_path)
    config = tmp_path / "tui-router.toml"
    config.write_text('backend = "local"\nsessions_dir = "sessions"\n', encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("TUI_ROUTER_CONFIG", "TEXTUAL", "NO_COLOR")}
    env.update(TERM="xterm-256color", TUI_ROUTER_CONFIG=str(config))
    term = Terminal([sys.executable, "-m", "tui_router", "--catalog", str(catalog), "--backend", "bm25"], env, tmp_path)
    try:
        term.wait_for("bm25-baseline-1")
        config.write_text('backend = "local"\nsessions_dir = "sessions"\n[fallback]\ncommand = ["cat"]\n', encoding="utf-8")
        term.send("\x10")  # ctrl+p
        term.wait_for("Search for commands")
        term.send("config: reload")
        term.wait_for("Re-read the config file")
        term.send("\r")
        term.wait_for("Config reloaded")  # said once the rebuilt router is in use
        term.send(AGENDA + "\r")
        turns = wait_for_turns(tmp_path / "sessions", 1)
        assert turns[0]["decision"]["backend"] == "bm25"
        assert "list_events" in turns[0]["decision"]["candidates"]  # the tiny catalog, not demo
        assert "options still apply" in term.text()  # and the notification says so
        term.send("\x11")  # ctrl+q
        assert term.process.wait(15) == 0
    finally:
        term.close()


async def test_the_review_queue_does_not_point_at_a_message_box_it_lacks(tmp_path: Path) -> None:
    # palette `view: review queue` with nothing queued: its Distribution pane said "Type a message
    # below and press Enter", on a screen that has no message box.
    from app_harness import run_palette

    app = make_app(make_config(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        assert "Type a message below" in screen_text(app)  # the console's own pane says it, rightly
        await run_palette(app, pilot, "view: review queue")
        await settle(app, pilot)
        assert type(app.screen).__name__ == "ReviewScreen"
        text = screen_text(app)
        assert "No turn selected." in text and "Type a message below" not in text


def test_the_help_lists_every_key_each_place_binds() -> None:
    # The README: "`?`/F1 lists them all". It did not: page up / page down / home / end in the
    # Decision log, the confirm dialog's ← → / h l between its buttons, and escape / q leaving the
    # review queue were bound but not in the help.
    from textual.binding import Binding

    from tui_router.app.app import RouterConsole
    from tui_router.app.screens.confirm import ConfirmTurnModal
    from tui_router.app.screens.help import KEYS
    from tui_router.app.screens.replay import ReplayScreen
    from tui_router.app.screens.review import ReviewScreen
    from tui_router.app.widgets.catalog_pane import CatalogPane
    from tui_router.app.widgets.decision_log import DecisionLog

    shown = {"up": "↑", "down": "↓", "left": "←", "right": "→", "pageup": "pgup", "pagedown": "pgdn", "question_mark": "?"}
    sections = {title.split(" (")[0]: " ".join(f"{k} {what}" for k, what in keys) for title, keys in KEYS}
    everything = " ".join(sections.values())
    places = {
        "Decision log": DecisionLog,
        "Catalog pane": CatalogPane,
        "Confirm dialog": ConfirmTurnModal,
        "Replay": ReplayScreen,
        "Review queue": ReviewScreen,
        "Anywhere": RouterConsole,
    }
    missing = []
    for section, owner in places.items():
        words = (everything if owner is RouterConsole else sections[section]).replace("/", " ").split()
        for binding in owner.BINDINGS:
            assert isinstance(binding, Binding)
            for key in binding.key.split(","):
                if key.isdigit():
                    key = "1-9"
                if shown.get(key, key) not in words:
                    missing.append(f"{section}: {key}")
    assert not missing, missing


async def test_the_decision_log_keeps_its_label_column_at_60x20(tmp_path: Path) -> None:
    # The README: "At 80x24 and 60x20 nothing overlaps, long ids end in …, never cut silently". At
    # 60x20 the Decision log's columns needed 70 cells of 56: the label column fell off the right
    # edge, so a labelled turn looked unlabelled. The choice and label columns now give way first.
    app = make_app(make_config(tmp_path))
    async with app.run_test(size=(60, 20)) as pilot:
        await settle(app, pilot)
        await submit(app, pilot, AGENDA)
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("a")  # label the turn with its choice
        await settle(app, pilot)
        assert app.session.turns[0].label == "list_events"
        lines = screen_text(app).splitlines()
        header = next(line for line in lines if "message" in line and "choice" in line)
        row = next(line for line in lines if line.startswith("│ show"))
        assert header.rstrip().rstrip("│").rstrip().endswith("label"), header
        assert "list_ev" in row.split("│")[1].split()[-1], row  # the label, shortened with …
        assert all(len(line.rstrip()) <= 60 for line in lines)
