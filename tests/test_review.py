"""The review queue, labels with undo across files, label sources and what-if thresholds (no Textual)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from tui_router.catalog import load_catalog
from tui_router.config import PolicyConfig
from tui_router.errors import SessionError, UserError
from tui_router.review import Review, build_queue, label_from_outcome, parse_what_if, what_if
from tui_router.session import Session, SessionInfo, Turn, TurnDecision, load_session, save_session


def decided(message: str, probabilities: dict[str, float], *, label: str | None = None, band: str | None = None, confidence: float | None = None, acceptable=()) -> Turn:
    choice = max(probabilities, key=probabilities.get) if probabilities else None
    values = sorted(probabilities.values(), reverse=True)
    n = len(values)
    conf = confidence if confidence is not None else ((values[0] - 1 / n) / (1 - 1 / n) if n > 1 else None)
    if band is None:
        band = "high" if conf >= 0.75 else "medium" if conf >= 0.45 else "low"
    return Turn(
        message=message,
        label=label,
        acceptable=list(acceptable),
        decision=TurnDecision(candidates=list(probabilities), choice=choice, probabilities=probabilities, confidence=conf, band=band, action="confirm"),
    )


def write(path: Path, turns: list[Turn]) -> Path:
    save_session(Session(session=SessionInfo(id=path.stem, catalog="demo"), turns=turns), path)
    return path


@pytest.fixture
def two_files(tmp_path: Path) -> tuple[Path, Path]:
    a = write(
        tmp_path / "a.toml",
        [
            decided("a1 margin 0.5", {"send_sms": 0.7, "send_email": 0.2, "defer_to_llm": 0.1}),
            decided("a2 labelled", {"send_sms": 0.5, "send_email": 0.5}, label="send_sms"),
            decided("a3 margin 0.1", {"send_email": 0.45, "defer_to_llm": 0.35, "send_sms": 0.2}),
            Turn(message="a4 unresolved", decision=TurnDecision(band="unresolved", error="timeout")),
        ],
    )
    b = write(
        tmp_path / "b.toml",
        [
            decided("b1 margin 0.1 (tie with a3)", {"defer_to_llm": 0.5, "send_sms": 0.4, "send_email": 0.1}),
            decided("b2 margin 0.3", {"send_email": 0.6, "send_sms": 0.3, "defer_to_llm": 0.1}),
            Turn(message="b3 never routed"),
        ],
    )
    return a, b


def test_queue_puts_unresolved_first_then_smallest_margin_with_ties_by_file_and_turn(two_files):
    a, b = two_files
    # the files given in reverse order: the order comes from the turns, not the arguments
    queue = build_queue([load_session(b), load_session(a)])
    assert [(e.file.name, e.turn_number) for e in queue] == [
        ("a.toml", 4),  # unresolved
        ("b.toml", 3),  # never routed: unresolved too, after a.toml
        ("a.toml", 3),  # margin 0.10, tie with b1 broken by file
        ("b.toml", 1),  # margin 0.10; the none option counts as one of the top two
        ("b.toml", 2),  # margin 0.30
        ("a.toml", 1),  # margin 0.50
    ]
    assert [e.margin for e in queue][:2] == [None, None]
    assert queue[2].margin == pytest.approx(0.10)
    assert queue[4].margin == pytest.approx(0.30)
    assert all(e.message != "a2 labelled" for e in queue)
    assert queue[3].ranked == ["defer_to_llm", "send_sms", "send_email"]
    assert queue[0].to_json() == {"file": str(a), "turn": 4, "message": "a4 unresolved", "choice": None, "band": "unresolved", "margin": None}
    assert [e.turn_number for e in build_queue([load_session(a)], limit=2)] == [4, 3]


def test_labels_undo_across_files_and_each_label_is_saved_in_its_own_file(two_files):
    a, b = two_files
    review = Review.of_files([a, b], reviewer="dana")
    assert (review.reviewed, review.remaining) == (0, 6)
    review.position = 2  # a.toml turn 3
    assert review.option(1) == "send_email" and review.option(2) == "defer_to_llm" and review.option(9) is None
    review.set_label(review.option(2))
    review.next_unlabelled()
    assert review.current.file == b and review.current.index == 0
    review.accept()  # b1's choice: the none option
    review.next_unlabelled()
    review.accept()  # b2: send_email
    assert (review.reviewed, review.remaining) == (3, 3)
    a_turn = load_session(a).turns[2]
    assert (a_turn.label, a_turn.label_source, a_turn.reviewer) == ("defer_to_llm", "review", "dana")
    assert [t.label for t in load_session(b).turns] == ["defer_to_llm", "send_email", None]

    review.undo()  # b2
    review.undo()  # b1
    assert [t.label for t in load_session(b).turns] == [None, None, None]
    assert load_session(a).turns[2].label == "defer_to_llm"  # the older label in the other file stays
    review.undo()  # a3, in the other file
    assert load_session(a).turns[2].label is None and load_session(a).turns[2].label_source is None
    assert review.position == 2 and review.undo() is None
    assert load_session(a).turns[1].label == "send_sms"  # a labelled turn outside the queue is untouched


def test_undo_puts_back_a_cleared_label_with_its_source(two_files):
    a, _ = two_files
    review = Review.of_files([a], reviewer="dana")
    review.set_label("send_sms")
    review.set_label(None)  # x: clear
    turn = load_session(a).turns[3]
    assert turn.label is None and turn.reviewer is None
    review.undo()
    turn = load_session(a).turns[3]
    assert (turn.label, turn.label_source, turn.reviewer) == ("send_sms", "review", "dana")


def test_accept_refuses_an_unresolved_turn(two_files):
    a, _ = two_files
    review = Review.of_files([a])
    assert review.current.band == "unresolved"
    assert review.accept() is None and review.history == []


def test_a_label_is_not_written_when_the_turn_moved_in_the_file(two_files):
    a, _ = two_files
    review = Review.of_files([a])
    before = a.read_text()
    session = load_session(a)
    session.turns.insert(0, Turn(message="someone inserted a turn"))
    save_session(session)
    changed = a.read_text()
    with pytest.raises(SessionError, match="no longer the queued message"):
        review.set_label("send_sms")
    assert a.read_text() == changed != before
    assert review.history == [] and review.turn().label is None


def test_a_label_is_written_without_losing_turns_appended_meanwhile(two_files):
    a, _ = two_files
    review = Review.of_files([a])
    session = load_session(a)
    session.turns.append(Turn(message="appended by the console"))
    save_session(session)
    review.set_label("send_sms")
    turns = load_session(a).turns
    assert [t.message for t in turns][-1] == "appended by the console"
    assert turns[3].label == "send_sms"


def test_label_source_reviewer_and_not_this_round_trip(tmp_path):
    path = tmp_path / "s.toml"
    turn = decided("pay the invoice", {"pay_invoice": 0.6, "defer_to_llm": 0.4})
    assert label_from_outcome(turn, "declined", None, "dana")
    assert not label_from_outcome(turn, "declined", None, "dana")  # already recorded
    assert label_from_outcome(turn, "rerouted", "send_email", "dana")
    assert not label_from_outcome(turn, "approved", None, "sam")  # a label is never overwritten
    write(path, [turn, Turn(message="old style", label="send_sms")])
    raw = tomllib.loads(path.read_text())
    assert raw["turns"][0]["label"] == "send_email"
    assert raw["turns"][0]["label_source"] == "confirm"
    assert raw["turns"][0]["reviewer"] == "dana"
    assert raw["turns"][0]["not_this"] == ["pay_invoice"]
    assert "label_source" not in raw["turns"][1]  # old files stay as they were
    loaded = load_session(path)
    assert (loaded.turns[0].label_source, loaded.turns[0].reviewer, loaded.turns[0].not_this) == ("confirm", "dana", ["pay_invoice"])
    assert loaded.turns[1].label_source is None


def test_an_unknown_label_source_is_one_clear_problem(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text('[[turns]]\nmessage = "x"\nlabel = "send_sms"\nlabel_source = "robot"\n')
    with pytest.raises(SessionError) as exc:
        load_session(path)
    assert any("label_source" in line and "confirm" in line for line in exc.value.lines())


def test_what_if_lists_exactly_the_turns_that_move_with_band_accuracy(tmp_path):
    catalog = load_catalog("demo")
    tools = [t.id for t in catalog.tools]
    read_tool = next(t.id for t in catalog.tools if t.risk.value == "read")
    pay = next(t.id for t in catalog.tools if t.risk.value == "payment")
    path = write(
        tmp_path / "w.toml",
        [
            decided("stays high", {read_tool: 0.95, "defer_to_llm": 0.05}, confidence=0.9, label=read_tool),
            decided("high to medium", {read_tool: 0.9, "defer_to_llm": 0.1}, confidence=0.78, label=tools[-1]),
            decided("medium to low", {read_tool: 0.7, "defer_to_llm": 0.3}, confidence=0.47, label=read_tool),
            decided("payment stays confirm", {pay: 0.9, "defer_to_llm": 0.1}, confidence=0.78),
            Turn(message="unresolved stays", decision=TurnDecision(band="unresolved")),
        ],
    )
    # confidences as recorded: the "reported" formula re-bands exactly the numbers above
    before = PolicyConfig(confidence="reported")
    for turn in (s := load_session(path)).turns:
        if turn.decision:
            turn.decision.reported_confidence = turn.decision.confidence
    after = parse_what_if("high=0.8,medium=0.5", before)
    report = what_if([s], before, after, catalog)
    moved = [(r.index + 1, r.before_band, r.before_action, r.after_band, r.after_action) for r in report.changed]
    assert moved == [
        (2, "high", "execute", "medium", "confirm"),
        (3, "medium", "confirm", "low", "fallback"),
        (4, "high", "confirm", "medium", "confirm"),  # band moves, the payment action does not
    ]
    assert report.accuracy("before")["high"] == (1, 2)
    assert report.accuracy("after")["high"] == (1, 1)
    assert report.accuracy("after")["medium"] == (0, 1)
    assert report.accuracy("after")["low"] == (1, 1)
    assert report.counts("before") == {"execute": 2, "confirm": 2, "escalate": 0, "fallback": 1}
    assert report.counts("after") == {"execute": 1, "confirm": 2, "escalate": 0, "fallback": 2}
    text = "\n".join(report.lines())
    assert "3 of 5 routed turns" in text and "w.toml:2  high/execute -> medium/confirm" in text
    assert path.read_text() == (tmp_path / "w.toml").read_text()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("high=0.4,medium=0.5", "must not be above"),
        ("high=lots", "'lots' is not a number"),
        ("low=0.2", "'low=0.2' is not high=<number>"),
        ("", "needs at least one threshold"),
        ("high=1.5", "less than or equal to 1"),
    ],
)
def test_bad_what_if_text_is_one_sentence(text, message):
    with pytest.raises(UserError, match=message):
        parse_what_if(text, PolicyConfig())


def test_a_file_another_process_writes_is_refused_in_one_sentence_and_left_alone(two_files):
    import subprocess
    import sys

    a, _ = two_files
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys; from pathlib import Path; from tui_router.storage import SessionFile; "
         "f = SessionFile.claim(Path(sys.argv[1])); print('ready', flush=True); sys.stdin.readline()", str(a)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "ready"
        review = Review.of_files([a], reviewer="dana")
        before = a.read_bytes()
        with pytest.raises(SessionError, match=rf"another tui-router console \(pid {holder.pid}\) is writing this session"):
            review.set_label("send_sms")
        assert a.read_bytes() == before and review.history == [] and review.turn().label is None
    finally:
        holder.communicate("\n", timeout=30)
    review.set_label("send_sms")  # the holder left: the label goes in
    assert load_session(a).turns[3].label == "send_sms"


def test_the_workspace_records_label_sources_and_not_this(tmp_path):
    from tui_router.workspace import Workspace

    turns = [decided(m, {"send_sms": 0.6, "send_email": 0.3, "defer_to_llm": 0.1}) for m in ("one", "two", "three", "four")]
    work = Workspace(Session(session=SessionInfo(id="w"), turns=turns), tmp_path, reviewer="dana")
    work.set_label(0, "send_email")
    assert (turns[0].label, turns[0].label_source, turns[0].reviewer) == ("send_email", "hand", "dana")
    work.record_outcome(0, "approved")  # already labelled by hand: kept
    assert (turns[0].label, turns[0].label_source) == ("send_email", "hand")
    work.record_outcome(1, "approved")
    work.record_outcome(2, "rerouted", "send_email")
    work.record_outcome(3, "declined")
    assert [(t.label, t.label_source) for t in turns[1:]] == [("send_sms", "confirm"), ("send_email", "confirm"), (None, None)]
    assert turns[3].not_this == ["send_sms"] and turns[1].reviewer == "dana"
    work.set_label(0, None)
    assert (turns[0].label, turns[0].label_source, turns[0].reviewer) == (None, None, None)
    work.save_now()
    saved = load_session(work.path)
    assert [(t.label, t.label_source, t.not_this) for t in saved.turns] == [
        (None, None, []),
        ("send_sms", "confirm", []),
        ("send_email", "confirm", []),
        (None, None, ["send_sms"]),
    ]


def test_labelling_a_commented_file_keeps_its_original_in_a_backup_once(tmp_path: Path) -> None:
    path = tmp_path / "hand.toml"
    text = '# hand-written cases\n[session]\nid = "hand"\n\n[[turns]]\nmessage = "remind me at 9"\n'
    path.write_text(text, encoding="utf-8")
    review = Review.of_files([path], reviewer="dana")
    first = review.set_label("create_reminder")
    assert first.backup == tmp_path / "hand.toml.bak" and first.backup.read_text(encoding="utf-8") == text
    assert load_session(path).turns[0].label == "create_reminder"
    assert review.undo() is not None and load_session(path).turns[0].label is None
    assert review.set_label("list_events").backup is None  # the file has no comments now; the backup stays as it was
    assert (tmp_path / "hand.toml.bak").read_text(encoding="utf-8") == text
