"""Session files: round trip, atomic writes, corrupt files left untouched."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

import pytest

from tui_router.errors import SessionError
from tui_router.session import (
    FallbackRecord,
    Session,
    SessionInfo,
    Turn,
    TurnDecision,
    atomic_write_text,
    dumps_session,
    load_session,
    save_session,
    unused_path,
)


def sample() -> Session:
    return Session(
        session=SessionInfo(id="2026-11-30T10-04-12-ops", catalog="demo", created="2026-11-30T10:04:12Z", backend="local", model="local-lexical-1"),
        turns=[
            Turn(
                message="Text Jordan that the deploy finished.",
                label="send_sms",
                tags=["notify", "distractor"],
                at="2026-11-30T10:04:20Z",
                decision=TurnDecision(
                    candidates=["send_sms", "send_push_notification"],
                    choice="send_sms",
                    probabilities={"send_sms": 0.91, "send_push_notification": 0.05, "defer_to_llm": 0.04},
                    confidence=0.865,
                    band="high",
                    action="confirm",
                    outcome="approved",
                    latency_ms=3.2,
                ),
            ),
            Turn(
                message='multi\nline "quoted" [brackets] 中文 ✓',
                decision=TurnDecision(choice="defer_to_llm", band="low", action="fallback", outcome="fallback_done"),
                fallback=FallbackRecord(command=["llm", "-m", "local"], exit_code=0, output="hello\nworld", duration_ms=12.5),
            ),
        ],
    )


def test_round_trip(tmp_path: Path) -> None:
    path = save_session(sample(), tmp_path / "s.toml")
    loaded = load_session(path)
    assert loaded.session == sample().session
    assert loaded.turns == sample().turns


def test_file_is_diff_friendly(tmp_path: Path) -> None:
    text = dumps_session(sample())
    data = tomllib.loads(text)
    first = data["turns"][0]
    assert list(first)[:2] == ["message", "label"]
    assert "acceptable" not in first  # empty values are left out
    assert "error" not in first["decision"]
    assert data["session"]["version"] == 1
    assert "reported_confidence" not in first["decision"]


def test_hand_written_eval_file(tmp_path: Path) -> None:
    path = tmp_path / "cases.toml"
    path.write_text('[session]\nid = "cases"\ncatalog = "demo"\n\n[[turns]]\nmessage = "hi"\nlabel = "defer_to_llm"\nacceptable = ["ask_user"]\n')
    session = load_session(path)
    assert session.labelled()[0].acceptable == ["ask_user"]
    assert session.turns[0].decision is None


def test_unknown_keys_survive_but_typos_are_errors(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text('[session]\nid = "x"\n[[turns]]\nmessage = "hi"\nreviewer = "ana"\n')
    session = load_session(path)
    save_session(session, path)
    assert 'reviewer = "ana"' in path.read_text()
    path.write_text('[session]\nid = "x"\n[[turns]]\nmessage = "hi"\nlable = "send_sms"\n')
    with pytest.raises(SessionError) as info:
        load_session(path)
    assert info.value.lines() == [f"{path}: turns[0]: unknown key 'lable' (did you mean 'label'?)"]


def test_corrupt_file_is_reported_and_untouched(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text("[session\nid = broken")
    before = path.read_bytes()
    with pytest.raises(SessionError, match="corrupt session file.*left untouched"):
        load_session(path)
    assert path.read_bytes() == before


def test_invalid_turn_reports_index(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text('[session]\nid = "x"\n[[turns]]\nlabel = "a"\n')
    with pytest.raises(SessionError) as info:
        load_session(path)
    assert info.value.lines() == [f"{path}: turns[0]: field 'message' is required"]


def test_atomic_write_keeps_old_file_when_writing_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s.toml"
    path.write_text("old content")

    def boom(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        atomic_write_text(path, "new content")
    assert path.read_text() == "old content"
    assert [p.name for p in tmp_path.iterdir()] == ["s.toml"]  # no temp file left behind


def test_atomic_write_syncs_the_whole_temp_file_before_replacing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Without the fsync a crash just after os.replace can leave an empty file under the old name.
    # The real os calls run; they are only watched, in the order they happen.
    path = tmp_path / "s.toml"
    path.write_text("old content")
    text = "new content é\n" * 1000
    events: list[tuple[str, object]] = []
    names: list[str] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        events.append(("fsync", os.fstat(fd).st_size))
        names.append(Path(os.readlink(f"/proc/self/fd/{fd}")).name)
        real_fsync(fd)

    def replace(src, dst) -> None:
        events.append(("replace", (Path(src).parent, Path(dst))))
        real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    atomic_write_text(path, text)
    size = len(text.encode("utf-8"))
    assert events == [("fsync", size), ("replace", (tmp_path, path))]
    # a temp file a crash leaves behind is hidden and never matches *.toml (never read as a session)
    assert names[0].startswith(".s.toml.") and names[0].endswith(".tmp")
    assert path.read_text(encoding="utf-8") == text
    assert [p.name for p in tmp_path.iterdir()] == ["s.toml"]


def test_save_session_writes_through_the_atomic_path_and_remembers_it(tmp_path: Path) -> None:
    session = sample()
    target = tmp_path / "a" / "b" / "s.toml"  # missing folders are created
    assert save_session(session, target) == target
    assert session.path == target
    assert load_session(target).turns[0].message == session.turns[0].message
    assert save_session(session) == target  # later saves go to the remembered file
    with pytest.raises(SessionError) as info:
        save_session(Session(session=SessionInfo(id="x", catalog="demo", created="2026-11-30T10:04:12Z")))
    assert str(info.value) == "the session has no file name yet"


def test_save_into_unwritable_folder_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(SessionError) as info:
        save_session(sample(), blocker / "s.toml")
    assert str(info.value) == f"{blocker / 's.toml'}: cannot save the session (File exists); nothing was overwritten"


def test_unused_path(tmp_path: Path) -> None:
    (tmp_path / "a.toml").write_text("")
    assert unused_path(tmp_path, "a") == tmp_path / "a-2.toml"
    assert unused_path(tmp_path, "b") == tmp_path / "b.toml"
    (tmp_path / "a-2.toml").write_text("")
    assert unused_path(tmp_path, "a") == tmp_path / "a-3.toml"


def test_bundled_bench_loads() -> None:
    from tui_router.resources import bundled_session

    session = load_session(bundled_session("demo-bench"))
    labels = [t.label for t in session.turns]
    assert len(labels) == 30 and labels.count("defer_to_llm") == 5


def _copy_files(tmp_path: Path, texts: dict[str, str]) -> list:
    from tui_router.session import load_session

    for name, text in texts.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    return [load_session(tmp_path / name) for name in sorted(texts)]


_HEAD = '[session]\nid = "{id}"\ncatalog = "demo"\n'
_AT = '\n[[turns]]\nmessage = "{m}"\nat = "2026-11-30T10:05:00Z"\n'


def test_a_session_copied_under_another_name_counts_each_turn_once_from_the_labelled_copy(tmp_path: Path) -> None:
    from tui_router.session import repeated_turns

    turns = _AT.format(m="text Jordan") + _AT.format(m="page the on-call")
    sessions = _copy_files(
        tmp_path,
        {
            "a.toml": _HEAD.format(id="a") + turns,  # the original, unlabelled
            "b.toml": _HEAD.format(id="a") + turns.replace('"page the on-call"\n', '"page the on-call"\nlabel = "page_oncall"\n'),
        },
    )
    left_out = repeated_turns(sessions)
    # turn 0: neither labelled, the first file's counts; turn 1: the labelled copy counts
    assert left_out == {(tmp_path / "b.toml", 0), (tmp_path / "a.toml", 1)}


def test_alike_turns_of_one_file_and_turns_without_a_time_are_never_copies(tmp_path: Path) -> None:
    from tui_router.session import repeated_turns

    twice = _AT.format(m="text Jordan") * 2  # the same message sent twice in one second: two turns
    untimed = '\n[[turns]]\nmessage = "text Jordan"\nlabel = "send_sms"\n'
    sessions = _copy_files(
        tmp_path,
        {"a.toml": _HEAD.format(id="a") + twice + untimed, "b.toml": _HEAD.format(id="b") + _AT.format(m="text Jordan") + untimed},
    )
    # b holds the first of a's two alike turns (left out in b, which comes second), not the second;
    # the hand-written, untimed turns both count
    assert repeated_turns(sessions) == {(tmp_path / "b.toml", 0)}


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o600])
def test_a_rewrite_keeps_the_files_mode(tmp_path: Path, mode: int) -> None:
    # mkstemp makes its temp file 0600: a 0644 config rewritten by calibrate, or a session, became 0600
    import stat

    from tui_router.session import atomic_write_text

    path = tmp_path / "tui-router.toml"
    path.write_text("high = 0.8\n", encoding="utf-8")
    path.chmod(mode)
    atomic_write_text(path, "high = 0.9\n")
    assert stat.S_IMODE(path.stat().st_mode) == mode and path.read_text(encoding="utf-8") == "high = 0.9\n"


_UNTIMED = '\n[[turns]]\nmessage = "{m}"\nlabel = "{label}"\n'
_BENCH = _UNTIMED.format(m="text Jordan", label="send_sms") + _UNTIMED.format(m="page the on-call", label="page_oncall")


def test_a_hand_written_file_copied_under_another_name_counts_once(tmp_path: Path) -> None:
    # Hand-written turns have no `at`, so no turn of a copy was matched and eval, queue, review and
    # replay counted every one twice. A file whose whole turn list is another's now counts once.
    from tui_router.session import copied_files, copy_notes, repeated_turns

    sessions = _copy_files(tmp_path, {"cases.toml": _HEAD.format(id="c") + _BENCH, "cases-copy.toml": _HEAD.format(id="c2") + _BENCH})
    copy, original = tmp_path / "cases.toml", tmp_path / "cases-copy.toml"  # sorted: cases-copy.toml is read first
    assert copied_files(sessions) == [(copy, original)]
    assert repeated_turns(sessions) == {(copy, 0), (copy, 1)}
    assert copy_notes(sessions) == [
        f"{copy} holds the same turns as {original} (the same messages and labels, in the same order): they count once, from {original}"
    ]


@pytest.mark.parametrize(
    "other",
    [
        _UNTIMED.format(m="text Jordan", label="send_sms"),  # a share of the turns: both count (a bench may repeat)
        _UNTIMED.format(m="text Jordan", label="send_email") + _UNTIMED.format(m="page the on-call", label="page_oncall"),  # a label differs
        _UNTIMED.format(m="page the on-call", label="page_oncall") + _UNTIMED.format(m="text Jordan", label="send_sms"),  # another order
        _BENCH + _UNTIMED.format(m="text Jordan", label="send_sms"),  # one turn more
    ],
)
def test_files_that_merely_share_turns_keep_counting_them(tmp_path: Path, other: str) -> None:
    from tui_router.session import copied_files, copy_notes, repeated_turns

    sessions = _copy_files(tmp_path, {"a.toml": _HEAD.format(id="a") + _BENCH, "b.toml": _HEAD.format(id="b") + other})
    assert copied_files(sessions) == [] and copy_notes(sessions) == []
    assert repeated_turns(sessions) == set()
