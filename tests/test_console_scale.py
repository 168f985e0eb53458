"""The console with a team's months of data (benchmarks/bench_console_scale.py measures the times;
these tests pin the behaviours behind them): a long review queue draws only the rows on screen, the
sessions folder is read off the UI thread, and an opened long session has its file text made in a
worker, written byte for byte as before."""

from __future__ import annotations

import threading
from pathlib import Path

from app_harness import make_app, make_config, screen_text, settle
from test_app_review import decided, write

from tui_router.app.screens.review import QueueTable, ReviewScreen
from tui_router.review import Review
from tui_router.session import Session, SessionInfo, Turn, TurnDecision, dumps_session, load_session
from tui_router.workspace import Workspace


def long_session(path: Path, count: int, labelled_every: int = 0) -> Path:
    turns = []
    for i in range(count):
        turn = decided(f"turn {i:04d} remind me or text me", {"create_reminder": 0.5 + (i % 40) / 100, "send_sms": 0.3, "defer_to_llm": 0.2})
        turn.at = f"2026-11-30T10:{i // 60 % 60:02d}:{i % 60:02d}Z"
        if labelled_every and i % labelled_every == 0:
            turn.label, turn.label_source, turn.reviewer = "send_sms", "hand", "dana"
        turns.append(turn)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dumps_session(Session(session=SessionInfo(id=path.stem, catalog="tiny"), turns=turns)), encoding="utf-8")
    return path


async def test_a_long_review_queue_formats_only_the_rows_on_screen_and_scrolls_to_its_end(tmp_path: Path, monkeypatch) -> None:
    # A DataTable built and measured every row up front, twice (mount, then the first resize): 14,581
    # queued turns of a 50-file folder froze the console for about 6 s before the queue showed.
    path = long_session(tmp_path / "sessions" / "long.toml", 600)
    formatted: list[int] = []
    real_cells = QueueTable.cells

    def counting(self: QueueTable, position: int):
        formatted.append(position)
        return real_cells(self, position)

    monkeypatch.setattr(QueueTable, "cells", counting)
    app = make_app(make_config(tmp_path), review=Review.of_files([path], reviewer="dana"))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        screen = app.screen
        assert isinstance(screen, ReviewScreen)
        table = screen.query_one(QueueTable)
        assert table.row_count == 600
        assert len(set(formatted)) < 60  # the rows on screen (about 17), not the 600
        first = screen.review.entries[0]
        assert first.message in screen_text(app)
        await pilot.click("#review-queue", offset=(5, 3))  # the header is line 0: the third row
        await settle(app, pilot)
        assert table.cursor_row == 2 and screen.review.position == 2
        await pilot.press("end")
        await settle(app, pilot)
        last = screen.review.entries[-1]
        assert table.cursor_row == 599 and screen.review.position == 599
        text = screen_text(app)
        assert f"  {last.turn_number}  " in text and "margin" in text  # the last row, under the header
        assert screen.review.current is last
        await pilot.press("1")  # a label on the last row is written and the row redrawn
        await settle(app, pilot)
        assert load_session(path).turns[last.index].label == "create_reminder"
        assert "create_reminder" in [str(c) for c in table.cells(599)]


async def test_the_palette_review_queue_reads_the_sessions_folder_off_the_ui_thread(tmp_path: Path, monkeypatch) -> None:
    # `view: review queue` read every file of the sessions folder on the UI thread: 50 files of
    # months of turns froze the console for seconds, keys and frames waiting.
    config = make_config(tmp_path)
    folder = tmp_path / "sessions"
    for n in range(3):
        write(folder / f"s{n}.toml", [decided(f"s{n} show my agenda", {"list_events": 0.6, "defer_to_llm": 0.4})])
    from tui_router import review as review_module  # the folder is read by review.read_sessions

    readers: list[str] = []
    real_load = review_module.load_session

    def load(path):
        readers.append(threading.current_thread().name)
        return real_load(path)

    monkeypatch.setattr(review_module, "load_session", load)
    app = make_app(config)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        app.action_review_queue()
        await settle(app, pilot)
        assert isinstance(app.screen, ReviewScreen)
        assert {e.file.name for e in app.screen.review.entries} == {"s0.toml", "s1.toml", "s2.toml"}
    assert len(readers) == 3 and threading.main_thread().name not in readers


async def test_a_broken_file_in_the_folder_is_a_notification_when_read_in_the_worker(tmp_path: Path) -> None:
    config = make_config(tmp_path)
    folder = tmp_path / "sessions"
    write(folder / "good.toml", [decided("show my agenda", {"list_events": 0.6, "defer_to_llm": 0.4})])
    (folder / "broken.toml").write_text("[session\nid = 1", encoding="utf-8")
    app = make_app(config)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        app.action_review_queue()
        await settle(app, pilot)
        # the queue opens on the files that read (before, one broken file kept it closed); the
        # broken one is said once and left as it is
        assert isinstance(app.screen, ReviewScreen)
        assert {e.file.name for e in app.screen.review.entries} == {"good.toml"}
        said = [n.message for n in app._notifications if "broken.toml" in n.message]
        assert len(said) == 1 and said[0].startswith("1 of 2 files could not be read: not queued, left as they are."), said
    assert (folder / "broken.toml").read_text(encoding="utf-8") == "[session\nid = 1"


async def test_an_opened_long_session_has_its_file_text_made_in_a_worker_and_saves_byte_identical(tmp_path: Path) -> None:
    # The first label in a session opened with 5,000 turns formatted every turn's TOML on the UI
    # thread (about 0.8 s frozen); a worker makes them after the first frame. The file written is
    # the same, byte for byte.
    path = long_session(tmp_path / "sessions" / "long.toml", 300, labelled_every=7)
    original = path.read_text(encoding="utf-8")
    app = make_app(make_config(tmp_path), session=load_session(path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        assert app.workspace.texts_ready == 300  # before any change: ready for the first save
        app.log_table.focus()
        app.log_table.select(150)
        await pilot.press("a")
        await settle(app, pilot)
        labelled = path.read_text(encoding="utf-8")
        assert labelled == dumps_session(app.session)
        assert load_session(path).turns[150].label == "create_reminder"
        await pilot.press("u")
        await settle(app, pilot)
        after = path.read_text(encoding="utf-8")
        assert after == dumps_session(app.session)
        # the turns as they were, byte for byte (the console adds the backend to [session] once)
        assert after[after.index("[[turns]]"):] == original[original.index("[[turns]]"):]


def test_prepare_texts_beside_changes_on_another_thread_never_keeps_a_stale_turn(tmp_path: Path) -> None:
    path = long_session(tmp_path / "long.toml", 400)
    workspace = Workspace(load_session(path), tmp_path)
    worker = threading.Thread(target=workspace.prepare_texts)
    worker.start()
    for index in range(0, 400, 3):  # the UI thread labels while the worker formats
        workspace.set_label(index, "send_sms")
    worker.join()
    assert workspace.snapshot().text == dumps_session(workspace.session)


def test_prepare_texts_for_a_session_switched_away_keeps_nothing(tmp_path: Path) -> None:
    workspace = Workspace(load_session(long_session(tmp_path / "a.toml", 50)), tmp_path)
    other = Session(session=SessionInfo(id="b"), turns=[Turn(message="hello", decision=TurnDecision(band="unresolved"))])
    workspace.switch(other)
    workspace.prepare_texts()
    assert workspace.texts_ready == 1
    assert workspace.snapshot().text.count("[[turns]]") == 1


def long_catalog(folder: Path, count: int) -> Path:
    import tomli_w

    verbs = ["archive", "export", "sync", "render", "merge"]
    tools = [
        {"id": f"{verbs[i % 5]}_record_{i:04d}", "when_to_use": f"{verbs[i % 5].capitalize()} record {i} for team {i % 7}.", "category": f"group{i % 4}", "keywords": [verbs[i % 5]]}
        for i in range(count)
    ]
    tools += [
        {"id": "ask_user", "when_to_use": "Ask the user a clarifying question.", "risk": "escalation"},
        {"id": "human_review", "when_to_use": "Hand the turn to a person.", "risk": "escalation"},
    ]
    path = folder / "long-catalog.toml"
    path.write_text(tomli_w.dumps({"name": "long", "none_option": "defer_to_llm", "tools": tools}), encoding="utf-8")
    return path


def listed_ids(options) -> list[str]:
    return [options.get_option_at_index(i).id for i in range(options.option_count) if options.get_option_at_index(i).id]


def option_texts(options) -> list[str]:
    return [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]


async def test_the_catalog_pane_over_a_long_catalog_lists_a_page_says_how_many_more_and_filters_them_all(tmp_path: Path) -> None:
    # Every keystroke in the Catalog filter re-listed all 10,000 tools (an OptionList lays out every
    # option: about a second a key). It lists LIST_LIMIT tools and says how many more match.
    from textual.widgets import Input, OptionList

    from tui_router.app.widgets.catalog_pane import LIST_LIMIT

    config = make_config(tmp_path, catalog=str(long_catalog(tmp_path, 1000)))
    app = make_app(config)
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(app, pilot)
        options = app.query_one("#catalog-list", OptionList)
        ids = listed_ids(options)
        assert len(ids) == LIST_LIMIT + 3  # the page, the two escalation options and the none option
        assert ids[-3:] == ["ask_user", "human_review", "defer_to_llm"]
        assert any("… 700 more match" in text for text in option_texts(options))
        box = app.query_one("#catalog-filter", Input)
        box.focus()
        await pilot.press(*"0999")  # the last tool: past the page, found by the filter
        await settle(app, pilot)
        assert listed_ids(options) == ["merge_record_0999"]
        box.value = "merge"
        await settle(app, pilot)
        assert len(listed_ids(options)) == 200 and not any("more match" in t for t in option_texts(options))
        # a turn's choice past the page is still shown: the filter names it
        box.value = ""
        await settle(app, pilot)
        app.query_one("#catalog-pane").show_option("merge_record_0999")
        await pilot.pause()
        assert options.highlighted_option is not None and options.highlighted_option.id == "merge_record_0999"


async def test_the_label_picker_over_a_long_catalog_lists_a_page_keeps_the_label_and_picks_what_was_typed(tmp_path: Path) -> None:
    # `l` over 10,000 options laid out every one of them (a second to open, and again per key).
    from textual.widgets import OptionList

    from tui_router.app.screens.picker import LIST_LIMIT, OptionPicker

    session = Session(
        session=SessionInfo(id="s", catalog="long"),
        turns=[Turn(message="merge record 999", label="merge_record_0999", decision=TurnDecision(choice="merge_record_0999", probabilities={"merge_record_0999": 0.9, "defer_to_llm": 0.1}, confidence=0.8, band="high", action="execute", outcome="proposed"))],
    )
    config = make_config(tmp_path, catalog=str(long_catalog(tmp_path, 1000)))
    app = make_app(config, session=session)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        app.log_table.focus()
        await pilot.press("l")
        await pilot.pause()
        picker = app.screen
        assert isinstance(picker, OptionPicker)
        options = picker.query_one(OptionList)
        ids = listed_ids(options)
        assert len(ids) == LIST_LIMIT
        assert ids[0] == "merge_record_0999" and options.highlighted == 0  # the label, past the page, kept
        assert "… 703 more match: type more letters to narrow" in option_texts(options)
        await pilot.press(*"rec_0998")
        await pilot.pause()
        assert listed_ids(options)[0] == "render_record_0998"
        await pilot.press("enter")
        await settle(app, pilot)
    assert app.session.turns[0].label == "render_record_0998"


def test_the_picker_narrowing_as_one_types_ranks_as_the_whole_catalog_would() -> None:
    from tui_router.app.screens.picker import PickerItem, rank_items

    items = [PickerItem(f"{verb}_{noun}_{i}", f"{verb} a {noun} for team {i % 9}", "read") for i, (verb, noun) in enumerate((v, n) for v in ("send", "sync", "show", "search") for n in ("sms", "ship", "sheet", "stack", "snap")) for _ in range(3)]
    for typed in ("sh 1", "search sta", "ss t", "snap team 4", "shp"):
        matched: tuple[str, list[PickerItem]] | None = None
        for k in range(1, len(typed) + 1):
            query = typed[:k]
            pool = matched[1] if matched and matched[0].strip() and query.startswith(matched[0]) else items
            ranked = rank_items(pool, query)
            kept = {id(item) for item, _ in ranked}
            matched = (query, [item for item in pool if id(item) in kept])
            assert [(i.id, o) for i, o in ranked] == [(i.id, o) for i, o in rank_items(items, query)], query


async def test_a_long_replay_in_the_console_lets_keys_and_frames_through_while_it_runs(tmp_path: Path) -> None:
    # In-process backends answer inline, and the replay worker routed every turn without giving the
    # event loop a turn: replaying 5,000 turns froze the console for about 11 s, `q` unanswered.
    import asyncio

    from tui_router.app.screens.replay import ReplayScreen, ReplayTable
    from tui_router.route import build_router

    path = long_session(tmp_path / "sessions" / "long.toml", 1500)
    config = make_config(tmp_path)
    router = build_router(config)
    routed = 0
    real = router.aroute

    async def counting(*args, **kwargs):
        nonlocal routed
        routed += 1
        return await real(*args, **kwargs)

    router.aroute = counting  # counts, and routes as before
    app = make_app(config, router=router)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        seen: list[int] = []
        app.open_replay(load_session(path))
        asyncio.get_running_loop().call_later(0.05, lambda: seen.append(routed))
        while not seen:
            await asyncio.sleep(0.01)
        assert seen[0] < 1500  # the loop ran a timer while the replay went on
        screen = app.screen
        assert isinstance(screen, ReplayScreen)
        await settle(app, pilot)
        assert screen.report is not None and len(screen.report.rows) == 1500
        table = screen.query_one(ReplayTable)
        assert table.row_count == 1500
        await pilot.press("end")
        await pilot.pause()
        assert table.cursor_row == 1499 and "1500" in screen_text(app)


async def test_the_what_if_dialog_over_a_long_session_draws_its_lines_a_screen_at_a_time(tmp_path: Path) -> None:
    # A Static laid out the whole diff at once (hundreds to thousands of lines over months of turns);
    # the dialog now wraps plain lines once and draws the rows on screen, every line still there.
    from tui_router.app.widgets.wrapped_lines import WrappedLines

    path = long_session(tmp_path / "sessions" / "long.toml", 400, labelled_every=5)
    app = make_app(make_config(tmp_path), session=load_session(path))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        assert app.show_what_if("0.99 0.98")  # every medium turn falls to low
        await pilot.pause()
        view = app.screen.query_one("#whatif-scroll", WrappedLines)
        changed = int(view.lines[0].split()[1])
        assert view.lines[0] == f"what-if: {changed} of 400 routed turns would change band or action" and changed > 200
        assert len(view.lines) > changed and view.virtual_size.height >= len(view.lines)  # long lines wrap at 80
        assert view.max_scroll_y > 200
        assert view.lines[0] in screen_text(app)
        await pilot.press("end")
        await pilot.pause()
        assert view.scroll_y == view.max_scroll_y
        assert view.lines[-1].strip() in screen_text(app)  # the band accuracy, last


def test_reading_a_folder_of_sessions_leaves_its_turns_out_of_the_collectors_scans(tmp_path: Path) -> None:
    # Full collections re-scanned every turn read so far, again and again: about half the time of
    # reading 50 files, and in the console 100-300 ms stalls each (the reader thread holds the GIL).
    import gc

    from tui_router.review import load_sessions

    for n in range(4):
        long_session(tmp_path / f"s{n}.toml", 200)
    gc.unfreeze()
    gc.collect()
    assert gc.isenabled()
    sessions = load_sessions([tmp_path])
    assert sum(len(s.turns) for s in sessions) == 800
    assert gc.isenabled()  # the pause ended
    tracked = {id(o) for o in gc.get_objects()}
    assert not any(id(t) in tracked for s in sessions for t in s.turns[:50])  # frozen: never rescanned
    assert gc.get_freeze_count() > 800


def test_gc_pauses_in_two_threads_end_when_the_last_one_ends_and_keep_a_disabled_collector_disabled() -> None:
    import gc

    from tui_router.gcpause import gc_paused

    started, release = threading.Event(), threading.Event()

    def other() -> None:
        with gc_paused():
            started.set()
            release.wait(5)

    thread = threading.Thread(target=other)
    with gc_paused():
        thread.start()
        started.wait(5)
    assert not gc.isenabled()  # the other thread's pause goes on
    release.set()
    thread.join()
    assert gc.isenabled()
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()  # it was off before: left off
    finally:
        gc.enable()


def test_the_review_count_is_kept_as_labels_change_not_recounted_over_the_queue_per_key(tmp_path: Path, monkeypatch) -> None:
    # The review header asks "n reviewed · m remaining" after every key; both were counted over
    # every queued turn (14,581 in a 50-file folder: 40 ms of the UI thread a key).
    path = long_session(tmp_path / "long.toml", 600)
    review = Review.of_files([path], reviewer="dana")
    assert (review.reviewed, review.remaining) == (0, 600)
    lookups = 0
    real_turn = Review.turn

    def counting(self, position=None):
        nonlocal lookups
        lookups += 1
        return real_turn(self, position)

    monkeypatch.setattr(Review, "turn", counting)
    review.set_label("send_sms")
    review.next()
    review.set_label("create_reminder")
    review.set_label("send_sms")  # a label replaced: still one turn reviewed
    review.next()
    review.set_label("send_sms")
    assert (review.reviewed, review.remaining) == (3, 597)
    review.set_label(None)  # cleared
    assert (review.reviewed, review.remaining) == (2, 598)
    review.undo()  # the label is back
    assert (review.reviewed, review.remaining) == (3, 597)
    review.undo()  # and the one before it undone
    review.undo()
    assert (review.reviewed, review.remaining) == (2, 598)
    review.set_label("send_sms")  # at turn 2 again (undo goes back to it), already labelled
    assert (review.reviewed, review.remaining) == (2, 598)
    lookups = 0
    for _ in range(10):
        assert review.reviewed == 2
    assert lookups == 0
    labelled = [t for t in load_session(path).turns if t.label]
    assert len(labelled) == 2  # the file agrees


async def test_a_closed_review_queue_is_freed_and_never_frozen_by_the_next_open(tmp_path: Path) -> None:
    # gc.freeze at the end of each folder read froze every live object, the closed queue's screen
    # (cyclic garbage not collected yet) and every session it showed included: about 22,000
    # objects leaked per open. The queue's table also stayed subscribed to the theme signal, whose
    # callback held it (and the screen) alive for good.
    import gc
    import weakref

    config = make_config(tmp_path)
    long_session(tmp_path / "sessions" / "s.toml", 150)
    app = make_app(config)
    screens: list[weakref.ref] = []
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        for _ in range(3):
            app.action_review_queue()
            await settle(app, pilot)
            assert isinstance(app.screen, ReviewScreen) and len(app.screen.review.entries) == 150
            screens.append(weakref.ref(app.screen))
            app.pop_screen()
            await settle(app, pilot)
        gc.collect()
        assert [s() for s in screens] == [None, None, None]


def _writers(monkeypatch) -> list[str]:
    """The threads the session file is written from (the real write, recorded)."""
    from tui_router import workspace as workspace_module

    threads: list[str] = []
    real = workspace_module.write_session_text

    def recording(path, text):
        threads.append(threading.current_thread().name)
        return real(path, text)

    monkeypatch.setattr(workspace_module, "write_session_text", recording)
    return threads


async def test_opening_the_review_queue_writes_the_changed_session_in_the_worker_byte_identical(tmp_path: Path, monkeypatch) -> None:
    # Opening the palette's review queue first rewrote the whole session on the UI thread (a
    # 5,000-turn file: 0.55 s frozen); the worker now writes the snapshot taken at the key, then reads.
    path = long_session(tmp_path / "sessions" / "long.toml", 300, labelled_every=7)
    app = make_app(make_config(tmp_path), session=load_session(path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        app.workspace.set_label(10, "send_sms")  # changed in memory, not autosaved
        writers = _writers(monkeypatch)
        app.action_review_queue()
        await settle(app, pilot)
        assert isinstance(app.screen, ReviewScreen)
        assert writers and threading.main_thread().name not in writers
        assert path.read_text(encoding="utf-8") == dumps_session(app.session)
        assert load_session(path).turns[10].label == "send_sms"


async def test_a_review_queue_whose_session_cannot_be_written_is_not_opened_and_the_turns_are_kept(tmp_path: Path) -> None:
    from tui_router.storage import claim_session_file

    path = long_session(tmp_path / "sessions" / "long.toml", 150)
    claim_session_file(path)  # as `tui-router open` does: the stamp a later write compares
    app = make_app(make_config(tmp_path), session=load_session(path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        app.workspace.set_label(3, "send_sms")
        path.write_text("[session]\nid = \"edited elsewhere\"\n", encoding="utf-8")  # changed on disk
        app.action_review_queue()
        await settle(app, pilot)
        assert not isinstance(app.screen, ReviewScreen)
        said = [n.message for n in app._notifications]
        assert any("review queue was not opened" in m and "turns are kept" in m for m in said), said
        assert len(app.session.turns) == 150 and app.session.turns[3].label == "send_sms"
        assert app.workspace.saved is False
    assert path.read_text(encoding="utf-8") == "[session]\nid = \"edited elsewhere\"\n"


async def test_save_as_of_a_long_session_formats_no_unchanged_turn_on_the_ui_thread_and_writes_the_same_bytes(tmp_path: Path, monkeypatch) -> None:
    # save as (and the save before switching files or quitting) formatted the whole session on the
    # UI thread; it now reuses each unchanged turn's text, made in a worker after the open.
    from tui_router import session as session_module
    from tui_router import workspace as workspace_module

    path = long_session(tmp_path / "sessions" / "long.toml", 300, labelled_every=7)
    app = make_app(make_config(tmp_path), session=load_session(path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        assert app.workspace.texts_ready == 300
        formatted: list[int] = []

        def counting(session):
            if threading.current_thread() is threading.main_thread():
                formatted.append(len(session.turns))
            return real(session)

        real = session_module.session_to_dict
        monkeypatch.setattr(session_module, "session_to_dict", counting)
        monkeypatch.setattr(workspace_module, "session_to_dict", counting)
        target = app.save_as("copy")
        assert target == tmp_path / "sessions" / "copy.toml"
        assert sum(formatted) == 0  # the [session] header only
        monkeypatch.undo()
        assert target.read_text(encoding="utf-8") == dumps_session(app.session)
