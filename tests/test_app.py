"""The console driven through Pilot (App.run_test): the real app, the real router, real files."""

from __future__ import annotations

from pathlib import Path

from app_harness import (
    AGENDA,
    DOCS,
    REMINDER,
    Recorder,
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

from tui_router.app.messages import DecisionReady, LabelChanged, OutcomeRecorded, TurnSubmitted
from tui_router.app.screens.confirm import ConfirmTurnModal
from tui_router.app.screens.picker import OptionPicker
from tui_router.app.widgets.decision_log import DecisionLog
from tui_router.session import dumps_session, load_session


def row_cells(app, index: int) -> dict[str, str]:
    """The decision log row of turn `index`, by column key (time/action exist only when wide)."""
    return app.query_one(DecisionLog).row_cells(index)


async def test_high_medium_approved_medium_declined_low(tmp_path: Path) -> None:
    config = make_config(tmp_path)
    choice, conf_reminder = confidence_of(config, REMINDER)
    assert choice == "create_reminder"
    agenda_choice, conf_agenda = confidence_of(config, AGENDA)
    assert agenda_choice == "list_events"
    docs_choice, conf_docs = confidence_of(config, DOCS)
    assert docs_choice == "search_docs"

    recorder = Recorder()
    app = make_app(config)
    async with app.run_test(size=(120, 40), message_hook=recorder) as pilot:
        await settle(app, pilot)
        assert app.router is not None

        # high: a write tool above the high threshold is proposed for execution
        assert app.set_thresholds(*thresholds_for("high", conf_agenda))
        await submit(app, pilot, AGENDA)
        turn = app.session.turns[0]
        assert (turn.decision.band, turn.decision.action, turn.decision.outcome) == ("high", "execute", "proposed")
        assert not isinstance(app.screen, ConfirmTurnModal)

        # medium, approved: the confirm dialog opens at once, y approves
        assert app.set_thresholds(*thresholds_for("medium", conf_reminder))
        await submit(app, pilot, REMINDER)
        assert isinstance(app.screen, ConfirmTurnModal)
        dialog = screen_text(app)
        assert "create_reminder" in dialog and "Set a personal reminder" in dialog
        assert f"confidence {conf_reminder:.2f}" in dialog
        assert "next " in dialog and "Approve (y)" in dialog and "Choose another (c)" in dialog
        assert app.focused is not None and app.focused.id == "approve"
        await pilot.press("y")
        await settle(app, pilot)
        assert app.session.turns[1].decision.outcome == "approved"

        # medium, declined
        assert app.set_thresholds(*thresholds_for("medium", conf_docs))
        await submit(app, pilot, DOCS)
        assert isinstance(app.screen, ConfirmTurnModal)
        await pilot.press("n")
        await settle(app, pilot)
        assert app.session.turns[2].decision.outcome == "declined"

        # low: below medium, the turn waits for the fallback. The approved confirm above labelled
        # turn 2 (an approval is a label) and the backend learnt it, so the same message now comes
        # back more confident: the threshold is set from the confidence with that label taught.
        taught = app.router.route(REMINDER).confidence
        assert taught > conf_reminder
        assert app.set_thresholds(*thresholds_for("low", taught))
        await submit(app, pilot, REMINDER)
        low = app.session.turns[3].decision
        assert (low.band, low.action, low.outcome) == ("low", "fallback", "pending")
        assert not isinstance(app.screen, ConfirmTurnModal)

        # the facts, in order
        assert [m.message for m in recorder.of(TurnSubmitted)] == [AGENDA, REMINDER, DOCS, REMINDER]
        assert [m.decision.band.value for m in recorder.of(DecisionReady)] == ["high", "medium", "medium", "low"]
        assert [(m.index, m.outcome) for m in recorder.of(OutcomeRecorded)] == [(1, "approved"), (2, "declined")]

        # the log shows each turn; the file on disk has every turn and outcome
        first = row_cells(app, 0)
        assert [first[k] for k in ("choice", "conf", "band", "outcome")] == ["list_events", f"{conf_agenda:.2f}", "high", "proposed"]
        assert row_cells(app, 1)["outcome"] == "approved"
        assert [row_cells(app, 3)[k] for k in ("band", "outcome")] == ["low", "llm?"]
        data = saved(app)
        assert data["session"]["id"] == "test-session"
        assert data["session"]["catalog"] == "tiny"
        assert [t["decision"]["outcome"] for t in data["turns"]] == ["proposed", "approved", "declined", "pending"]
        assert [t["decision"]["band"] for t in data["turns"]] == ["high", "medium", "medium", "low"]
        assert data["turns"][1]["decision"]["medium"] == round(max(0.0, conf_reminder - 1e-4), 6)
        assert data["turns"][0]["at"] == "2026-11-30T10:04:12Z"
        assert app.session.path == tmp_path / "sessions" / "test-session.toml"


async def test_choose_another_reroutes_and_escape_decides_later(tmp_path: Path) -> None:
    config = make_config(tmp_path)
    _, conf = confidence_of(config, REMINDER)
    recorder = Recorder()
    app = make_app(config)
    async with app.run_test(size=(120, 40), message_hook=recorder) as pilot:
        await settle(app, pilot)
        app.set_thresholds(*thresholds_for("medium", conf))
        await submit(app, pilot, REMINDER)
        await pilot.press("c")
        await pilot.pause()
        assert isinstance(app.screen, OptionPicker)
        app.screen.query_one("#picker-filter").value = "lstev"  # fuzzy: l…s…t…e…v matches list_events
        await pilot.pause()
        await pilot.press("enter")
        await settle(app, pilot)
        d = app.session.turns[0].decision
        assert (d.outcome, d.rerouted_to) == ("rerouted", "list_events")
        assert saved(app)["turns"][0]["decision"]["rerouted_to"] == "list_events"
        assert row_cells(app, 0)["choice"] == "list_events"

        # escape: the turn stays pending; Enter on its row reopens the dialog. The re-route was a
        # label the backend learnt, so the same message is routed with it: medium from that confidence.
        app.set_thresholds(*thresholds_for("medium", app.router.route(REMINDER).confidence))
        await submit(app, pilot, REMINDER)
        assert isinstance(app.screen, ConfirmTurnModal)
        await pilot.press("escape")
        await settle(app, pilot)
        assert app.session.turns[1].decision.outcome == "pending"
        app.query_one(DecisionLog).focus()
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmTurnModal)
        await pilot.press("y")
        await settle(app, pilot)
        assert app.session.turns[1].decision.outcome == "approved"
        assert [(m.index, m.outcome, m.rerouted_to) for m in recorder.of(OutcomeRecorded)] == [
            (0, "rerouted", "list_events"),
            (1, "approved", None),
        ]


async def test_labelling_with_a_l_and_x(tmp_path: Path) -> None:
    config = make_config(tmp_path)
    recorder = Recorder()
    app = make_app(config)
    async with app.run_test(size=(120, 40), message_hook=recorder) as pilot:
        await settle(app, pilot)
        app.set_thresholds(1.0, 1.0)  # everything low: no dialogs in the way
        await submit(app, pilot, AGENDA)
        await submit(app, pilot, "what is the weather on mars")
        log = app.query_one(DecisionLog)
        await pilot.press("escape")  # message box -> decision log
        assert app.focused is log
        await pilot.press("up")  # select turn 1
        assert log.selected_index == 0

        await pilot.press("a")
        await settle(app, pilot)
        assert app.session.turns[0].label == "list_events"
        assert saved(app)["turns"][0]["label"] == "list_events"
        assert row_cells(app, 0)["label"] == "list_events"

        await pilot.press("l")
        await pilot.pause()
        assert isinstance(app.screen, OptionPicker)
        picker = app.screen
        await pilot.press(*"hum")  # typed: the filter follows each key
        await pilot.pause()
        assert picker.query_one("#picker-list").get_option_at_index(0).id == "human_review"
        await pilot.press("enter")
        await settle(app, pilot)
        assert app.session.turns[0].label == "human_review"
        assert saved(app)["turns"][0]["label"] == "human_review"

        # the none option is a label like any other (the picker lists it)
        await pilot.press("down", "l")
        await pilot.pause()
        app.screen.query_one("#picker-filter").value = "defer"
        await pilot.pause()
        await pilot.press("enter")
        await settle(app, pilot)
        assert app.session.turns[1].label == "defer_to_llm"

        await pilot.press("up", "x")
        await settle(app, pilot)
        assert app.session.turns[0].label is None
        assert "label" not in saved(app)["turns"][0]
        assert [(m.index, m.label) for m in recorder.of(LabelChanged)] == [
            (0, "list_events"),
            (0, "human_review"),
            (1, "defer_to_llm"),
            (0, None),
        ]

        # x on an unlabelled turn: a notification, no change
        await pilot.press("x")
        await pilot.pause()
        assert "Turn 1 has no label." in notifications(app)


async def test_candidates_mark_label_and_retrieval_miss(tmp_path: Path) -> None:
    config = make_config(tmp_path, retrieval={"direct_max": 0, "top_k": 1, "include_escalation": False})
    app = make_app(config)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        app.set_thresholds(1.0, 1.0)
        await submit(app, pilot, AGENDA)
        assert app.session.turns[0].decision.candidates == ["list_events"]
        app.post_message(LabelChanged(0, "send_sms"))
        await settle(app, pilot)
        text = screen_text(app)
        assert "retrieval miss: the label send_sms is not among the candidates" in text.replace("\n│ ", " ") or "retrieval miss" in text
        app.post_message(LabelChanged(0, "list_events"))
        await settle(app, pilot)
        text = screen_text(app)
        assert "retrieval miss" not in text
        assert "◆ list_events" in text


async def test_autosave_reopen_continue_and_replay_with_changed_threshold(tmp_path: Path) -> None:
    config = make_config(tmp_path)
    _, conf_agenda = confidence_of(config, AGENDA)
    app = make_app(config)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        app.set_thresholds(*thresholds_for("high", conf_agenda))
        await submit(app, pilot, AGENDA)
        await submit(app, pilot, "what is the weather on mars")
        app.query_one(DecisionLog).focus()
        await pilot.press("up", "a")
        await settle(app, pilot)
        path = app.session.path
        # autosaved before quitting: a crash now would lose nothing
        assert [t.get("label") for t in saved(app)["turns"]] == ["list_events", None]
        # the incremental autosave writes exactly what the core's serialiser writes
        assert path.read_text(encoding="utf-8") == dumps_session(app.session)
        await pilot.press("q")
    assert path is not None and path.exists()

    # reopen and continue: new turns land in the same file
    session = load_session(path)
    assert len(session.turns) == 2
    app = make_app(config, session=session)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        assert app.query_one(DecisionLog).row_count == 2
        assert "(saved)" in screen_text(app)
        await submit(app, pilot, REMINDER)
        assert app.session.path == path
    reopened = load_session(path)
    assert [t.message for t in reopened.turns] == [AGENDA, "what is the weather on mars", REMINDER]
    assert reopened.turns[0].label == "list_events"

    # replay with a high threshold above every recorded confidence: the high turn changes band
    strict = config.model_copy(update={"policy": config.policy.model_copy(update={"high": 1.0, "medium": 0.0})})
    app = make_app(strict, replay=reopened)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        screen = app.screen
        assert type(screen).__name__ == "ReplayScreen"
        report = screen.report
        assert report is not None and len(report.rows) == 3
        first = report.rows[0]
        assert (first.recorded_band, first.new_band, first.band_changed) == ("high", "medium", True)
        assert report.band_changes >= 1 and report.broken == 0
        text = screen_text(app)
        assert report.summary_line() in text
        assert "Decision log" in text and "Distribution" in text and "Candidates" in text
        table = screen.query_one("#replay-table")
        assert "band" in str(table.get_row_at(0)[-1])
        await pilot.press("q")
    assert load_session(path).turns[0].decision.band == "high"  # replay never rewrites the file


async def test_backend_failure_gives_an_unresolved_row_and_a_notification(tmp_path: Path, profile_cache) -> None:
    import socket

    with socket.socket() as probe:  # a loopback port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = make_config(
        tmp_path,
        backend="systemone",
        systemone={"base_url": f"http://127.0.0.1:{port}/v1", "timeout": 2, "max_retries": 0},
    )
    app = make_app(config)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        await submit(app, pilot, AGENDA)
        d = app.session.turns[0].decision
        assert d.band == "unresolved" and d.action == "fallback"
        assert d.error
        assert any(n.startswith("Turn 1 is unresolved:") for n in notifications(app))
        assert row_cells(app, 0)["band"] == "unres"  # the compact log at 120 columns with the Catalog
        assert saved(app)["turns"][0]["decision"]["band"] == "unresolved"
        # the console keeps working
        await submit(app, pilot, REMINDER)
        assert len(app.session.turns) == 2


async def test_a_catalog_that_cannot_load_is_reported_and_turns_end_unresolved(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "bad"\n[[tools]]\nid = "Bad Id"\nwhen_to_use = ""\n', encoding="utf-8")
    config = make_config(tmp_path).model_copy(update={"catalog": str(bad)})
    app = make_app(config)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        assert app.router is None
        assert any("bad.toml" in n for n in notifications(app))
        await submit(app, pilot, AGENDA)
        d = app.session.turns[0].decision
        assert d.band == "unresolved"
        assert d.error.startswith("routing failed:")
        assert "not loaded" in screen_text(app)


async def test_a_100kb_paste_and_non_ascii_text(tmp_path: Path) -> None:
    config = make_config(tmp_path)
    app = make_app(config)
    big = ("Line with [bold]markup[/bold] and $vars {braces} " * 40 + "\n") * 52  # ~100 KB, many lines
    assert len(big) >= 100_000
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        app.set_thresholds(1.0, 1.0)
        box = app.query_one("#message")
        box.focus()
        box.post_message(events.Paste(big))
        await pilot.pause()
        assert len(box.value) > 99_000 and "\n" not in box.value
        await pilot.press("enter")
        await settle(app, pilot)
        turn = app.session.turns[0]
        assert turn.message.startswith("Line with [bold]markup[/bold]")
        assert turn.decision is not None
        assert len(saved(app)["turns"][0]["message"]) == len(turn.message)
        assert row_cells(app, 0)["message"].endswith("…")

        odd = "Réserve une réunion demain 会议 🎉 [red]not markup[/] \\[x] — ñ"
        await submit(app, pilot, odd)
        assert app.session.turns[1].message == odd
        assert saved(app)["turns"][1]["message"] == odd
        text = screen_text(app)
        assert "[red]not markup[/]" in text
        assert "会议" in text
        for line in text.splitlines():
            assert len(line) <= 120 + 4  # wide characters count twice on screen, never overflow


async def test_layout_at_80x24_and_160x50(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # the header shows the session path relative to here
    config = make_config(tmp_path)
    app = make_app(config)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        app.set_thresholds(1.0, 1.0)
        await submit(app, pilot, AGENDA)
        text = screen_text(app)
        for title in ("Candidates", "Distribution", "Decision log"):
            assert title in text
        assert "Catalog" not in text.splitlines()[2]  # collapsed at 80 columns
        assert "list_events" in text and "tiny (7)" in text
        await pilot.press("f2")
        await pilot.pause()
        text = screen_text(app)
        assert "Catalog" in text and "create_reminder" in text
        await pilot.press("f2")
        await pilot.pause()
        assert "Decision log" in screen_text(app)
    app = make_app(config)
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(app, pilot)
        await submit(app, pilot, AGENDA)
        text = screen_text(app)
        for title in ("Catalog", "Candidates", "Distribution", "Decision log"):
            assert title in text
        assert "catalog tiny (7 options)" in text  # the full header fits
        assert "time" in text and "action" in text  # the wide log columns


async def test_help_palette_and_save_as(tmp_path: Path) -> None:
    config = make_config(tmp_path)
    app = make_app(config)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        await pilot.press("f1")
        await pilot.pause()
        assert type(app.screen).__name__ == "HelpScreen"
        assert "label the turn with its choice" in screen_text(app)
        await pilot.press("escape")
        await pilot.pause()

        # typing ? and q in the message box types them (no help, no quit)
        app.query_one("#message").focus()
        await pilot.press("q", "question_mark")
        assert app.query_one("#message").value == "q?"
        app.query_one("#message").value = ""

        app.set_thresholds(1.0, 1.0)
        await submit(app, pilot, AGENDA)
        await run_palette(app, pilot, "session: save as")
        assert type(app.screen).__name__ == "PromptModal"
        prompt = app.screen.query_one("#prompt-input")
        prompt.value = "monday-triage"
        await pilot.press("enter")
        await settle(app, pilot)
        target = tmp_path / "sessions" / "monday-triage.toml"
        assert app.session.path == target and target.exists()
        assert load_session(target).turns[0].message == AGENDA

        # a name that exists is refused, nothing overwritten
        other = tmp_path / "sessions" / "taken.toml"
        other.write_text("# keep me\n", encoding="utf-8")
        assert app.save_as("taken") is None
        assert other.read_text(encoding="utf-8") == "# keep me\n"
        assert app.session.path == target


async def test_every_action_is_in_the_command_palette(tmp_path: Path) -> None:
    app = make_app(make_config(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        titles = [c.title for c in app.get_system_commands(app.screen)]
        for title in (
            "session: save as",
            "session: open file",
            "replay: run file",
            "replay: this session",
            "backend: use local",
            "backend: use bm25",
            "label: accept choice",
            "label: pick",
            "label: clear",
            "turn: send to fallback",
            "turn: cancel fallback",
            "policy: set thresholds",
            "view: help",
        ):
            assert title in titles


async def test_switching_backend_and_thresholds_from_the_console(tmp_path: Path) -> None:
    app = make_app(make_config(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        app.use_backend("bm25")
        await settle(app, pilot)
        assert app.router.backend.name == "bm25"
        assert "bm25" in screen_text(app).splitlines()[0]
        assert not app.set_thresholds_text("0.3 0.9")  # medium above high: refused
        await pilot.pause()
        assert any("must not be above high" in n for n in notifications(app))
        assert app.set_thresholds_text("0.9, 0.3")
        assert (app.config.policy.high, app.config.policy.medium) == (0.9, 0.3)
        await submit(app, pilot, AGENDA)
        d = app.session.turns[0].decision
        assert d.backend == "bm25" and (d.high, d.medium) == (0.9, 0.3)


class SlowBackend:
    """A stand-in decision model that takes its time (the interface, not our code): wraps the real
    local backend and sleeps before answering."""

    def __new__(cls, inner, delays: dict[str, float]):
        from tui_router.decide.base import DecisionBackend

        class _Slow(DecisionBackend):
            name = "slow"
            model = "slow-1"

            def decide(self, question):
                return inner.decide(question)

            async def adecide(self, question):
                import asyncio

                await asyncio.sleep(delays.get(question.message, 0.0))
                return inner.decide(question)

        return _Slow()


async def test_a_slow_backend_shows_loading_keeps_the_input_and_a_newer_turn_supersedes(tmp_path: Path) -> None:
    from tui_router.catalog import load_catalog
    from tui_router.route import Router

    config = make_config(tmp_path)
    catalog = load_catalog(config.catalog_spec())
    local = Router(catalog, config).backend
    router = Router(catalog, config, backend=SlowBackend(local, {AGENDA: 30.0}))  # only the first turn is slow
    app = make_app(config, router=router)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        box = app.query_one("#message")
        box.value = AGENDA
        await pilot.press("enter")
        await pilot.pause(0.25)
        assert app.query_one("#distribution-pane").loading  # the backend is still working
        assert box.has_focus
        await pilot.press(*"rem")  # typing goes on while the turn is routed
        assert box.value == "rem"
        box.value = REMINDER
        await pilot.press("enter")  # a newer turn: the first one's worker is cancelled
        await settle(app, pilot)
        if isinstance(app.screen, ConfirmTurnModal):
            await pilot.press("escape")
            await settle(app, pilot)
        first, second = app.session.turns
        assert first.decision.band == "unresolved"
        assert first.decision.error == "superseded by a newer message before it was decided"
        assert second.decision.choice == "create_reminder" and second.decision.backend == "slow"
        assert not app.query_one("#distribution-pane").loading
        assert [t["decision"]["band"] for t in saved(app)["turns"]][0] == "unresolved"


async def test_a_session_that_cannot_be_saved_is_reported_and_quit_asks_twice(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the sessions folder should be\n", encoding="utf-8")
    config = make_config(tmp_path).model_copy(update={"sessions_dir": str(blocker / "sessions")})
    app = make_app(config)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        app.set_thresholds(1.0, 1.0)
        await submit(app, pilot, AGENDA)
        assert any(n.startswith(f"Could not save {blocker / 'sessions'}/") for n in notifications(app))
        assert "(unsaved)" in screen_text(app)
        app.query_one(DecisionLog).focus()
        await pilot.press("q")
        await pilot.pause()
        assert app.is_running  # the first q only warns
        assert any("Press q again to quit anyway" in n for n in notifications(app))
        await pilot.press("q")
        await pilot.pause()
    assert blocker.read_text(encoding="utf-8") == "a file where the sessions folder should be\n"


async def test_new_session_and_opening_files_from_the_console(tmp_path: Path) -> None:
    config = make_config(tmp_path)
    app = make_app(config)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        app.set_thresholds(1.0, 1.0)
        await submit(app, pilot, AGENDA)
        first = app.session.path
        app.action_new_session()
        await settle(app, pilot)
        assert app.session.path is None and app.session.turns == []
        assert app.query_one(DecisionLog).row_count == 0
        assert len(load_session(first).turns) == 1  # the first session stays on disk

        corrupt = tmp_path / "corrupt.toml"
        corrupt.write_bytes(b"[[turns]\nmessage = ")
        app.open_session_file(str(corrupt))
        await pilot.pause()
        assert any("corrupt session file" in n for n in notifications(app))
        assert corrupt.read_bytes() == b"[[turns]\nmessage = "

        app.open_session_file(str(first))
        await settle(app, pilot)
        assert app.session.path == first and [t.message for t in app.session.turns] == [AGENDA]
        assert row_cells(app, 0)["choice"] == "list_events"
