"""The console's review queue (Pilot): five queued turns from two files labelled by key; confirm
outcomes that become labels; the palette entry over the sessions folder."""

from __future__ import annotations

import tomllib
from pathlib import Path

from app_harness import (
    AGENDA,
    REMINDER,
    confidence_of,
    make_app,
    make_config,
    notifications,
    screen_text,
    settle,
    submit,
    thresholds_for,
)

from tui_router.app.screens.review import ReviewScreen
from tui_router.review import Review
from tui_router.session import Session, SessionInfo, Turn, TurnDecision, save_session


def decided(message: str, probabilities: dict[str, float], label: str | None = None) -> Turn:
    choice = max(probabilities, key=probabilities.get)
    return Turn(
        message=message,
        label=label,
        decision=TurnDecision(candidates=list(probabilities), choice=choice, probabilities=probabilities, confidence=0.5, band="medium", action="confirm", outcome="pending"),
    )


def write(path: Path, turns: list[Turn]) -> Path:
    save_session(Session(session=SessionInfo(id=path.stem, catalog="tiny"), turns=turns), path)
    return path


async def keys(app, pilot, *names: str) -> None:
    """Press keys and wait: each review key is a step a worker runs in order (file writes off the UI thread)."""
    await pilot.press(*names)
    await settle(app, pilot)


def labels(path: Path) -> list[tuple[str | None, str | None, str | None]]:
    return [(t.get("label"), t.get("label_source"), t.get("reviewer")) for t in tomllib.loads(path.read_text())["turns"]]


def two_files(folder: Path) -> tuple[Path, Path]:
    a = write(
        folder / "a.toml",
        [
            decided("a1 show my agenda", {"list_events": 0.75, "defer_to_llm": 0.15, "search_docs": 0.10}),  # margin 0.60
            decided("a2 remind me or text me", {"create_reminder": 0.5, "send_sms": 0.4, "defer_to_llm": 0.1}),  # 0.10
            decided("a3 labelled already", {"search_docs": 0.5, "defer_to_llm": 0.5}, label="search_docs"),
        ],
    )
    b = write(
        folder / "b.toml",
        [
            Turn(message="b1 the server timed out", decision=TurnDecision(band="unresolved", error="timeout")),
            decided("b2 how do I export", {"search_docs": 0.6, "defer_to_llm": 0.3, "list_events": 0.1}),  # 0.30
            decided("b3 text or remind", {"send_sms": 0.45, "create_reminder": 0.4, "defer_to_llm": 0.15}),  # 0.05
        ],
    )
    return a, b


async def test_review_five_turns_from_two_files_with_1_a_s_u_x(tmp_path: Path) -> None:
    config = make_config(tmp_path)
    a, b = two_files(tmp_path)
    a_before = labels(a)
    review = Review.of_files([a, b], reviewer="dana")
    assert [(e.file.name, e.turn_number) for e in review.entries] == [("b.toml", 1), ("b.toml", 3), ("a.toml", 2), ("b.toml", 2), ("a.toml", 1)]
    app = make_app(config, review=review)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        assert isinstance(app.screen, ReviewScreen)
        text = screen_text(app)
        assert "0 reviewed · 5 remaining" in text and "b1 the server timed out" in text

        await keys(app, pilot, "s")  # b1 is unresolved: skip it
        assert (review.current.file, review.current.index) == (b, 2)
        assert "b.toml turn 3" in screen_text(app)  # the Candidates / Distribution panes show it
        await keys(app, pilot, "1")  # b3: its most probable option
        assert labels(b)[2] == ("send_sms", "review", "dana")
        assert (review.current.file, review.current.index) == (a, 1)
        await keys(app, pilot, "a")  # a2: accept the choice
        assert labels(a)[1] == ("create_reminder", "review", "dana")
        await keys(app, pilot, "u")  # undo a2, in the other file than the label before it
        assert labels(a) == a_before
        assert (review.current.file, review.current.index) == (a, 1)
        await keys(app, pilot, "p")  # back to b3
        await keys(app, pilot, "x")  # clear its label
        assert labels(b)[2] == (None, None, None)
        await keys(app, pilot, "n", "n")  # b2
        await keys(app, pilot, "2")  # the second most probable option: the none option
        await keys(app, pilot, "a")  # a1
        await pilot.pause()
        assert "2 reviewed · 3 remaining" in screen_text(app)
        await keys(app, pilot, "u", "u", "u")  # a1, b2, then the clear of b3: its label is back
        assert labels(b) == [(None, None, None), (None, None, None), ("send_sms", "review", "dana")]
        await keys(app, pilot, "a")  # b3 again: accept
        await keys(app, pilot, "q")
    assert labels(a) == a_before  # a3's own label untouched, a1 and a2 unlabelled after the undos
    assert labels(b) == [(None, None, None), (None, None, None), ("send_sms", "review", "dana")]


async def test_review_keys_on_turns_without_options_notify_and_change_nothing(tmp_path: Path) -> None:
    config = make_config(tmp_path)
    a, b = two_files(tmp_path)
    before = (a.read_text(), b.read_text())
    app = make_app(config, review=Review.of_files([a, b], reviewer="dana"))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        await keys(app, pilot, "1", "a", "x", "u")  # b1 is unresolved: no options, no choice, no label, no history
        await pilot.pause()
        said = notifications(app)
        assert "This turn has no option 1." in said
        assert "This turn has no usable choice to accept: press a number or l." in said
        assert "This turn has no label." in said and "Nothing to undo." in said
        await keys(app, pilot, "q")
    assert (a.read_text(), b.read_text()) == before


async def test_a_file_changed_under_the_review_is_a_notification_not_a_lost_turn(tmp_path: Path) -> None:
    config = make_config(tmp_path)
    a, b = two_files(tmp_path)
    app = make_app(config, review=Review.of_files([a, b], reviewer="dana"))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        await keys(app, pilot, "s")  # b3
        b.write_text(b.read_text().replace("b3 text or remind", "b3 edited by someone"))
        changed = b.read_text()
        await keys(app, pilot, "1")
        await pilot.pause()
        assert any("no longer the queued message" in n for n in notifications(app))
        assert isinstance(app.screen, ReviewScreen)
        await keys(app, pilot, "q")
    assert b.read_text() == changed


async def test_approved_and_rerouted_confirms_become_labels_a_decline_is_not_this(tmp_path: Path) -> None:
    config = make_config(tmp_path, reviewer="sam")
    _, conf = confidence_of(config, REMINDER)
    app = make_app(config)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        app.set_thresholds(*thresholds_for("medium", conf))
        await submit(app, pilot, REMINDER)
        await keys(app, pilot, "y")
        await settle(app, pilot)
        # the approval is a label the backend learnt: the same message comes back more confident
        app.set_thresholds(*thresholds_for("medium", app.router.route(REMINDER).confidence))
        await submit(app, pilot, REMINDER)
        await keys(app, pilot, "n")
        await settle(app, pilot)
        saved = tomllib.loads(app.session.path.read_text())["turns"]
        assert (saved[0]["label"], saved[0]["label_source"], saved[0]["reviewer"]) == ("create_reminder", "confirm", "sam")
        assert "label" not in saved[1] and saved[1]["not_this"] == ["create_reminder"]


async def test_palette_review_queue_covers_the_sessions_folder_and_this_session(tmp_path: Path) -> None:
    config = make_config(tmp_path)
    folder = tmp_path / "sessions"
    _, b = two_files(folder)
    (folder / "a.toml").unlink()
    _, conf = confidence_of(config, AGENDA)
    app = make_app(config)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        app.set_thresholds(*thresholds_for("low", conf))
        await submit(app, pilot, AGENDA)
        assert "view: review queue" in [c.title for c in app.get_system_commands(app.screen)]
        app.action_review_queue()
        await settle(app, pilot)  # the folder is read in a worker
        screen = app.screen
        assert isinstance(screen, ReviewScreen)
        files = {e.file.name for e in screen.review.entries}
        assert files == {"b.toml", "test-session.toml"}
        while screen.review.current.file.name != "test-session.toml":
            await keys(app, pilot, "n")
        await keys(app, pilot, "1")
        await settle(app, pilot)
        await keys(app, pilot, "escape")
        await settle(app, pilot)
        top = screen.review.entries[[e.file.name for e in screen.review.entries].index("test-session.toml")].ranked[0]
        assert app.session.turns[0].label == top  # the console's own copy has it, so its next save keeps it
        await submit(app, pilot, AGENDA)
    saved = tomllib.loads((folder / "test-session.toml").read_text())["turns"]
    assert saved[0]["label"] == top and saved[0]["label_source"] == "review" and len(saved) == 2


async def test_what_if_dialog_lists_the_turns_that_would_move_and_writes_nothing(tmp_path: Path) -> None:
    config = make_config(tmp_path)
    turns = [decided("a1 show my agenda", {"list_events": 0.9, "defer_to_llm": 0.1}, label="list_events") for _ in range(2)]
    turns[0].decision.confidence, turns[0].decision.band, turns[0].decision.action = 0.9, "high", "execute"
    turns[1].decision.confidence, turns[1].decision.band, turns[1].decision.action = 0.78, "high", "execute"
    for t in turns:
        t.decision.reported_confidence = t.decision.confidence
    path = write(tmp_path / "s.toml", turns)
    before = path.read_text()
    from tui_router.session import load_session

    reported = config.model_copy(update={"policy": config.policy.model_copy(update={"confidence": "reported"})})
    app = make_app(reported, session=load_session(path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        assert "policy: what if" in [c.title for c in app.get_system_commands(app.screen)]
        assert not app.show_what_if("0.3 0.5")
        await pilot.pause()
        assert "Medium (0.5) must not be above high (0.3)." in notifications(app)
        assert app.show_what_if("0.8 0.5")
        await pilot.pause()
        text = screen_text(app)
        assert "what-if: 1 of 2 routed turns would change band or action" in text
        assert "s.toml:2  high/execute -> medium/confirm" in text
        assert "high       2/2 (100%) -> 1/1 (100%)" in text
        await keys(app, pilot, "escape")
        await keys(app, pilot, "q")
    assert path.read_text() == before


async def test_keys_pressed_faster_than_the_files_are_written_apply_in_order(tmp_path: Path) -> None:
    config = make_config(tmp_path)
    a, b = two_files(tmp_path)
    a_before = labels(a)
    app = make_app(config, review=Review.of_files([a, b], reviewer="dana"))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        # skip b1; b3 option 1; a2 accept; undo a2; next to b2; b2 option 1 — in one burst
        await pilot.press("s", "1", "a", "u", "n", "1")
        await settle(app, pilot)
        assert "2 reviewed · 3 remaining" in screen_text(app)
        await pilot.press("q")
    assert labels(a) == a_before
    assert labels(b) == [(None, None, None), ("search_docs", "review", "dana"), ("send_sms", "review", "dana")]


async def test_console_labels_record_hand_and_the_reviewer(tmp_path: Path) -> None:
    config = make_config(tmp_path, reviewer="sam")
    app = make_app(config)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        await submit(app, pilot, AGENDA)
        app.action_focus_log()
        await keys(app, pilot, "a")
        saved = tomllib.loads(app.session.path.read_text())["turns"][0]
        assert (saved["label"], saved["label_source"], saved["reviewer"]) == (app.session.turns[0].decision.choice, "hand", "sam")
        await keys(app, pilot, "x")
        saved = tomllib.loads(app.session.path.read_text())["turns"][0]
        assert not {"label", "label_source", "reviewer"} & set(saved)


async def test_a_copied_session_is_queued_once_and_the_console_says_which_files(tmp_path: Path) -> None:
    # a.toml's turns have no `at`: its copy put each unlabelled turn in the queue twice
    config = make_config(tmp_path)
    a, b = two_files(tmp_path)
    copy = tmp_path / "a-copy.toml"
    copy.write_bytes(a.read_bytes())
    app = make_app(config, review=Review.of_files([tmp_path], reviewer="dana"))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        screen = app.screen
        assert isinstance(screen, ReviewScreen)
        assert len(screen.review.entries) == 5  # a1 and a2 once (from the copy, read first), b1, b2, b3: not 7
        assert {e.file.name for e in screen.review.entries} == {"a-copy.toml", "b.toml"}
        assert [n for n in notifications(app) if "holds the same turns" in n] == [
            f"{a} holds the same turns as {copy} (the same messages and labels, in the same order): they count once, from {copy}."
        ]
