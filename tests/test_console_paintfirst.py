"""The console paints first and reads later (a review folder, a session opened at start or from
inside), and its catalog watch raises no false alarms (a save in two steps, a folder in the
catalog's place). Real Textual app via Pilot, real files."""

from __future__ import annotations

import os
import time
from pathlib import Path

from app_harness import notifications, settle
from test_hostile_landed import PETSHOP, TRACK, _petshop_console, _settle_failing

# -- the catalog watch -----------------------------------------------------------------------------


async def test_a_catalog_saved_half_then_whole_reloads_without_an_error_in_between(tmp_path: Path) -> None:
    catalog, app = _petshop_console(tmp_path)
    whole = PETSHOP + TRACK
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        first, said = app.router, len(notifications(app))
        catalog.write_text(whole[: whole.index("[[tools]]", 40) + 12], encoding="utf-8")  # the editor's first half
        app._check_catalog_file()
        await _settle_failing(app, pilot)
        # before, "Could not load the router" flashed here, then the reload of the whole file
        assert app.router is first and notifications(app)[said:] == []
        catalog.write_text(whole, encoding="utf-8")  # the rest arrives before the next check
        app._check_catalog_file()
        await settle(app, pilot)
        app._check_catalog_file()
        await settle(app, pilot)
        assert "track_order" in app.router.catalog
        new = notifications(app)[said:]
        assert len(new) == 1 and "changed on disk: reloaded. Catalog petshop" in new[0], new


async def test_a_broken_catalog_save_is_said_at_the_next_check_and_once(tmp_path: Path) -> None:
    catalog, app = _petshop_console(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        first, said = app.router, len(notifications(app))
        catalog.write_text(PETSHOP + '\n[[tools]]\nid = "broken\n', encoding="utf-8")
        app._check_catalog_file()
        await _settle_failing(app, pilot)
        assert notifications(app)[said:] == []  # not yet: the file may still be being written
        for _ in range(4):  # still as it was read: broken indeed, said once however long it stays
            app._check_catalog_file()
            await _settle_failing(app, pilot)
        new = notifications(app)[said:]
        assert len(new) == 1 and "petshop.toml" in new[0] and "Still routing with catalog 'petshop' as loaded before." in new[0], new
        assert app.router is first
        catalog.write_text(PETSHOP + TRACK, encoding="utf-8")  # fixed: loaded at once
        app._check_catalog_file()
        await settle(app, pilot)
        assert "track_order" in app.router.catalog and "reloaded" in notifications(app)[-1]


async def test_a_folder_in_the_catalogs_place_is_said_once_whatever_changes_inside_it(tmp_path: Path) -> None:
    catalog, app = _petshop_console(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        first, said = app.router, len(notifications(app))
        catalog.unlink()
        catalog.mkdir()
        for step in range(6):
            if step >= 2:  # files come and go in the folder: its time changes, it is still a folder
                (catalog / f"note-{step}.txt").write_text("x", encoding="utf-8")
                os.utime(catalog, ns=(step * 10**9, step * 10**9))
            app._check_catalog_file()
            await _settle_failing(app, pilot)
        new = notifications(app)[said:]
        # before, every change inside the folder reloaded and said "is a folder" again
        assert len(new) == 1 and f"{catalog}: is a folder, not a catalog file" in new[0], new
        assert app.router is first


# -- `tui-router review FOLDER`: the first frame before the files are read ----------------------------


class Gate:
    """Holds every session read (tui_router.review.load_session) until opened: the test sees the
    console while its worker is still reading."""

    def __init__(self, monkeypatch, module: str = "tui_router.review") -> None:
        import threading

        from tui_router.session import load_session

        self.open = threading.Event()
        self.reads = 0
        self.threads: list[str] = []

        def held(path):  # noqa: ANN001, ANN202
            self.reads += 1
            self.threads.append(threading.current_thread().name)
            if threading.current_thread() is not threading.main_thread():  # the UI thread never waits here
                assert self.open.wait(20), "the gate was never opened"
            return load_session(path)

        monkeypatch.setattr(f"{module}.load_session", held)


async def test_review_folder_paints_first_and_keys_typed_while_reading_label_nothing(tmp_path: Path, monkeypatch) -> None:
    from app_harness import make_app, make_config, screen_text
    from test_app_review import keys, labels, two_files

    from tui_router.app.screens.review import ReviewReadingScreen, ReviewScreen
    from tui_router.review import session_files

    config = make_config(tmp_path)
    folder = tmp_path / "folder"
    a, b = two_files(folder)
    broken = folder / "broken.toml"
    broken.write_bytes(b'[session]\nid = "x"\n[[turns]\nmessage = "half')
    before = {p: p.read_bytes() for p in (a, b, broken)}
    gate = Gate(monkeypatch)
    app = make_app(config, review_files=session_files([folder]))
    async with app.run_test(size=(80, 24)) as pilot:
        for _ in range(50):  # drawn while every read is held
            if "Reading 3 session files…" in screen_text(app):
                break
            await pilot.pause(0.02)
        assert isinstance(app.screen, ReviewReadingScreen) and "Reading 3 session files…" in screen_text(app)
        await pilot.press("1", "a", "x", "s", "u", "n")  # typed before the queue is drawn: label nothing
        await pilot.pause()
        assert isinstance(app.screen, ReviewReadingScreen)
        gate.open.set()
        for _ in range(100):
            if isinstance(app.screen, ReviewScreen):
                break
            await pilot.pause(0.02)
        await settle(app, pilot)
        screen = app.screen
        assert isinstance(screen, ReviewScreen) and screen.review.position == 0 and screen.review.history == []
        assert {p: p.read_bytes() for p in (a, b, broken)} == before
        assert {e.file.name for e in screen.review.entries} == {"a.toml", "b.toml"}
        said = [n for n in notifications(app) if "could not be read" in n]
        assert len(said) == 1 and said[0].startswith("1 of 3 files could not be read: not queued, left as they are.")
        assert f"{broken}:3: corrupt session file" in said[0]
        while screen.review.current.choice is None:  # the unresolved turns lead: nothing to accept
            await keys(app, pilot, "n")
        first = screen.review.current
        await keys(app, pilot, "a")  # now the keys work, on the turn shown
        assert screen.review.history and screen.review.history[0].file == first.file
        await keys(app, pilot, "q")
    assert broken.read_bytes() == before[broken]
    assert any(label for label, _, _ in labels(first.file))


async def test_review_of_files_none_of_which_reads_ends_with_their_reasons(tmp_path: Path) -> None:
    from app_harness import make_app, make_config

    config = make_config(tmp_path)
    broken = tmp_path / "broken.toml"
    broken.write_bytes(b'[session]\nid = "x"\n[[turns]\nmessage = "half')
    app = make_app(config, review_files=[broken])
    async with app.run_test(size=(80, 24)) as pilot:
        for _ in range(100):
            if app.exit_error is not None:
                break
            await pilot.pause(0.02)
    assert app.return_code == 2 and str(app.exit_error).startswith(f"{broken}:3: corrupt session file")
    assert broken.read_bytes() == b'[session]\nid = "x"\n[[turns]\nmessage = "half'


# -- `tui-router open FILE` and an open from inside the console -------------------------------------


async def wait_for(pilot, condition, what: str) -> None:  # noqa: ANN001
    for _ in range(150):
        if condition():
            return
        await pilot.pause(0.02)
    raise AssertionError(f"never: {what}")


async def test_open_at_start_paints_first_and_what_is_typed_meanwhile_waits_for_the_session(tmp_path: Path, monkeypatch) -> None:
    import threading

    from app_harness import AGENDA, make_app, make_config, screen_text
    from test_lock_cleanup import recorded

    from tui_router.app.widgets.message_input import MessageInput
    from tui_router.app.widgets.status import StatusLine
    from tui_router.storage import claim_session_file

    config = make_config(tmp_path)
    path = recorded(tmp_path / "kept.toml", "first turn", "second turn")
    claim_session_file(path)  # as run_console does before the console opens
    gate = Gate(monkeypatch, "tui_router.app.app")
    app = make_app(config, open_path=path)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: "Reading" in screen_text(app), "the first frame")
        assert app.session.turns == [] and "reading" in screen_text(app)
        box = app.query_one("#message", MessageInput)
        box.value = AGENDA
        await pilot.press("enter")  # sent while the file is read: waits for it
        await pilot.press("escape", "a", "x", "u")  # the log's label keys: off until the session is there
        await pilot.pause()
        assert app.session.turns == [] and app.session.path is None
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert "session: save as" not in titles and "label: accept choice" not in titles and "view: help" in titles
        gate.open.set()
        await wait_for(pilot, lambda: app.session.path == path, "the session read")
        await settle(app, pilot)
        assert [t.message for t in app.session.turns] == ["first turn", "second turn", AGENDA]
        assert app.session.turns[2].decision is not None and app.session.turns[2].decision.choice == "list_events"
        assert [t.label for t in app.session.turns[:2]] == ["list_events", "list_events"]  # no key acted on them
        assert "session: save as" in [c.title for c in app.get_system_commands(app.screen)]
        assert app.query_one(StatusLine).status.mode == ""  # "reading" stayed on the status line after it
        assert app.query_one(StatusLine).status.session == str(path)
        assert [n for n in notifications(app) if n.startswith("Still reading")] == [f"Still reading {path}: the message is added to it and routed once it is open."]
    assert gate.threads and threading.main_thread().name not in gate.threads
    assert path.read_text(encoding="utf-8").count("[[turns]]") == 3


async def test_open_at_start_of_a_file_that_does_not_read_ends_with_the_readers_sentence(tmp_path: Path) -> None:
    from app_harness import make_app, make_config

    from tui_router.storage import claim_session_file

    config = make_config(tmp_path)
    corrupt = tmp_path / "broken.toml"
    original = b'[session]\nid = "x"\n[[turns]\nmessage = "half'
    corrupt.write_bytes(original)
    claim_session_file(corrupt)
    app = make_app(config, open_path=corrupt)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.exit_error is not None, "the console ends")
    assert app.return_code == 2 and str(app.exit_error).startswith(f"{corrupt}:3: corrupt session file, not valid TOML")
    assert corrupt.read_bytes() == original and not (tmp_path / f".{corrupt.name}.lock").exists()


async def test_a_session_opened_from_the_console_is_read_off_the_ui_thread(tmp_path: Path, monkeypatch) -> None:
    import threading

    from app_harness import AGENDA, make_app, make_config, submit
    from test_lock_cleanup import recorded

    from tui_router.app.widgets.message_input import MessageInput

    config = make_config(tmp_path)
    other = recorded(tmp_path / "other.toml", "other one", "other two")
    gate = Gate(monkeypatch, "tui_router.app.app")
    app = make_app(config)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        await submit(app, pilot, AGENDA)
        mine = app.session.path
        app.open_session_file(str(other))  # returns at once; the console goes on meanwhile
        await pilot.pause()
        assert gate.threads and threading.main_thread().name not in gate.threads  # before: read on the UI thread
        assert app.session.path == mine
        box = app.query_one("#message", MessageInput)
        box.value = "remind me to call the dentist tomorrow"
        await pilot.press("enter")  # still this session's (settle would wait for the held read)
        await wait_for(pilot, lambda: len(app.session.turns) == 2 and app.session.turns[1].decision is not None, "the turn routed")
        gate.open.set()
        await wait_for(pilot, lambda: app.session.path == other, "the switch")
        await settle(app, pilot)
        assert [t.message for t in app.session.turns] == ["other one", "other two"]
        assert notifications(app)[-1] == f"Opened {other} (2 turns)."
    assert mine.read_text(encoding="utf-8").count("[[turns]]") == 2  # the turn sent meanwhile was saved


async def test_reopening_the_sessions_own_file_while_a_turn_is_added_keeps_the_turn(tmp_path: Path, monkeypatch) -> None:
    from app_harness import AGENDA, REMINDER, make_app, make_config, submit

    from tui_router.app.widgets.message_input import MessageInput

    config = make_config(tmp_path)
    gate = Gate(monkeypatch, "tui_router.app.app")
    app = make_app(config)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        await submit(app, pilot, AGENDA)
        mine = app.session.path
        app.open_session_file(str(mine))  # read back from disk, in a worker
        await pilot.pause()
        box = app.query_one("#message", MessageInput)
        box.value = REMINDER
        await pilot.press("enter")  # added while the file is read: that read is stale
        await wait_for(pilot, lambda: len(app.session.turns) == 2 and app.session.turns[1].decision is not None, "the turn routed")
        gate.open.set()
        await wait_for(pilot, lambda: app._open_request is None, "the open done")
        await settle(app, pilot)
        assert [t.message for t in app.session.turns] == [AGENDA, REMINDER] and app.session.path == mine
        assert gate.reads == 2  # read again after the change
    assert mine.read_text(encoding="utf-8").count("[[turns]]") == 2


# -- as a person runs them: real processes on a pty at 80x24 -----------------------------------------


def test_review_and_open_in_a_real_terminal_draw_first_and_lose_nothing(tmp_path: Path) -> None:
    import sys

    from app_harness import AGENDA, write_catalog
    from test_app_review import two_files
    from test_console_e2e import Terminal
    from test_lock_cleanup import recorded

    catalog = write_catalog(tmp_path)
    (tmp_path / "tui-router.toml").write_text(
        f'catalog = "{catalog}"\nbackend = "local"\nsessions_dir = "sessions"\n[policy]\nhigh = 1.0\nmedium = 1.0\n', encoding="utf-8"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("TUI_ROUTER_CONFIG", "TEXTUAL", "NO_COLOR")}
    env.update(TERM="xterm-256color", TUI_ROUTER_CONFIG=str(tmp_path / "tui-router.toml"))
    folder = tmp_path / "folder"
    two_files(folder)
    broken = folder / "broken.toml"
    broken.write_bytes(b'[session]\nid = "x"\n[[turns]\nmessage = "half')

    term = Terminal([sys.executable, "-m", "tui_router", "review", str(folder)], env, tmp_path, size=(80, 24))
    try:
        term.wait_for("Reading 3 session files")
        term.wait_for("1 of 3 files could not be read")
        term.wait_for("remaining")
        term.send("q")
        assert term.process.wait(15) == 0
    finally:
        term.close()
    assert broken.read_bytes() == b'[session]\nid = "x"\n[[turns]\nmessage = "half'

    term = Terminal([sys.executable, "-m", "tui_router", "review", str(broken)], env, tmp_path, size=(80, 24))
    try:
        term.wait_for("corrupt session file")
        assert term.process.wait(15) == 2
        assert f"tui-router: {broken}:3: corrupt session file" in term.text().replace("\r\n", "")
    finally:
        term.close()

    path = recorded(tmp_path / "sessions" / "kept.toml", "first turn")
    term = Terminal([sys.executable, "-m", "tui_router", "open", str(path)], env, tmp_path, size=(80, 24))
    try:
        term.send(AGENDA + "\r")  # typed at once, while the file may still be read
        deadline = time.monotonic() + 20
        while path.read_text(encoding="utf-8").count("[[turns]]") < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        text = path.read_text(encoding="utf-8")
        assert text.count("[[turns]]") == 2 and "first turn" in text and AGENDA in text
    finally:
        term.close()
