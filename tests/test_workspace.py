"""The session controller on its own: no Textual, no terminal."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from datetime import UTC, datetime
from pathlib import Path

import pytest
from lock_probe import held_elsewhere

from tui_router.errors import UserError
from tui_router.session import FallbackRecord, TurnDecision, dumps_session, load_session
from tui_router.workspace import NO_FALLBACK_COMMAND, Workspace, outcome_trail, waits_for_fallback

NOW = datetime(2026, 11, 30, 10, 4, 12, tzinfo=UTC)


def workspace(tmp_path: Path) -> Workspace:
    return Workspace(None, tmp_path / "sessions", clock=lambda: NOW, session_id="ws")


def confirm_decision() -> TurnDecision:
    return TurnDecision(candidates=["send_sms"], choice="send_sms", probabilities={"send_sms": 0.6, "defer_to_llm": 0.4}, confidence=0.2, band="medium", action="confirm")


def test_the_workspace_imports_no_textual() -> None:
    code = "import sys, tui_router.workspace, tui_router.session; assert 'textual' not in sys.modules, sorted(m for m in sys.modules if m.startswith('textual'))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_a_decline_then_the_fallback_keeps_both_outcomes_in_the_file(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    index = ws.add_turn("text jordan the deploy is done")
    assert ws.set_decision(index, confirm_decision())
    assert ws.record_outcome(index, "declined")
    assert waits_for_fallback(ws.decision(index))
    assert ws.fallback_refusal(index, command_configured=True) is None
    ws.start_fallback(index)
    assert "running for turn 1" in (ws.fallback_refusal(index, True) or "")
    assert ws.end_fallback() == index
    ws.finish_fallback(index, FallbackRecord(command=["llm"], exit_code=0, output="ok"), ok=True)
    d = ws.decision(index)
    assert d is not None and d.outcome == "fallback_done"
    assert [s.outcome for s in d.history] == ["declined"]
    assert outcome_trail(d) == "declined → llm done"
    ws.save_now()
    data = tomllib.loads(ws.path.read_text(encoding="utf-8"))
    assert data["turns"][0]["decision"]["outcome"] == "fallback_done"
    assert data["turns"][0]["decision"]["history"] == [{"outcome": "declined"}]
    again = load_session(ws.path)  # the new field round-trips
    assert again.turns[0].decision.history[0].outcome == "declined"


def test_a_failed_fallback_keeps_the_outcome_and_records_the_output(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    index = ws.add_turn("hello")
    ws.set_decision(index, TurnDecision(band="low", action="fallback", outcome="pending"))
    ws.finish_fallback(index, FallbackRecord(command=["llm"], exit_code=3, error="exit 3"), ok=False)
    d = ws.decision(index)
    assert d.outcome == "pending" and d.history == [] and ws.turn(index).fallback.exit_code == 3


def test_fallback_refusals(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    index = ws.add_turn("hello")
    assert ws.fallback_refusal(index, True) == "This turn is still being routed."
    ws.set_decision(index, TurnDecision(choice="x", band="high", action="execute", outcome="proposed", confidence=0.9))
    assert "not waiting for the fallback" in ws.fallback_refusal(index, True)
    other = ws.add_turn("hi")
    ws.set_decision(other, TurnDecision(band="low", action="fallback"))
    assert ws.fallback_refusal(other, False) == NO_FALLBACK_COMMAND


def test_an_answer_for_a_switched_session_is_dropped(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    index = ws.add_turn("hello")
    turn = ws.turn(index)
    ws.switch(ws.new_session("tiny"))
    assert not ws.set_decision(index, TurnDecision(), turn)
    assert ws.turns == []


def test_unresolved_only_fills_an_undecided_turn(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    index = ws.add_turn("hello")
    assert ws.unresolved(index, "routing failed: boom", backend="local", high=0.75, medium=0.45)
    d = ws.decision(index)
    assert (d.band, d.action, d.outcome, d.error, d.backend) == ("unresolved", "fallback", "pending", "routing failed: boom", "local")
    assert not ws.unresolved(index, "again", backend="local", high=0.75, medium=0.45)
    assert ws.decision(index).error == "routing failed: boom"


def test_autosave_snapshots_equal_dumps_session_and_stale_writes_are_skipped(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    assert ws.saved is None  # nothing to save yet
    first = ws.add_turn("one")
    ws.set_label(first, "a")
    old = ws.snapshot(first)
    second = ws.add_turn("two 'quoted' [brackets]\nand a line")
    new = ws.snapshot(second)
    assert tomllib.loads(new.text) == tomllib.loads(dumps_session(ws.session))
    assert ws.saved is False
    assert ws.write(new)
    assert not ws.write(old)  # an older snapshot never overwrites a newer file
    assert ws.saved is True
    assert [t.message for t in load_session(ws.path).turns] == ["one", "two 'quoted' [brackets]\nand a line"]
    assert ws.path == tmp_path / "sessions" / "ws.toml"


def test_save_as_names_and_never_overwrites(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    ws.add_turn("one")
    target = ws.save_as("monday")
    assert target == tmp_path / "sessions" / "monday.toml" and target.exists()
    taken = tmp_path / "sessions" / "taken.toml"
    taken.write_text("# keep me\n", encoding="utf-8")
    with pytest.raises(UserError, match="already exists"):
        ws.save_as("taken")
    assert taken.read_text(encoding="utf-8") == "# keep me\n" and ws.path == target
    with pytest.raises(UserError):
        ws.save_as("   ")
    elsewhere = ws.save_as(str(tmp_path / "out" / "x.toml"))
    assert elsewhere == tmp_path / "out" / "x.toml" and ws.path == elsewhere
    assert ws.save_as("x2") == tmp_path / "sessions" / "x2.toml"


def test_save_as_into_an_unwritable_place_keeps_the_old_path(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    ws.add_turn("one")
    blocker = tmp_path / "file"
    blocker.write_text("", encoding="utf-8")
    with pytest.raises(OSError):
        ws.save_as(str(blocker / "inside.toml"))  # a file is not a folder
    assert ws.path is None


def test_switching_while_a_fallback_runs_is_refused(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    index = ws.add_turn("one")
    ws.start_fallback(index)
    with pytest.raises(UserError, match="fallback command is running"):
        ws.switch(ws.new_session())
    assert ws.turns[0].message == "one"


def test_accept_choice(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    index = ws.add_turn("one")
    assert ws.accept_choice(index) is None
    ws.set_decision(index, confirm_decision())
    ws.record_outcome(index, "rerouted", "send_email")
    assert ws.accept_choice(index) == "send_email"
    ws.record_outcome(index, "approved")
    assert [(s.outcome, s.rerouted_to) for s in ws.decision(index).history] == [("rerouted", "send_email")]


# -- one writer per file (issue 14 item 2, storage.py), as the workspace uses it ----------------------

def test_the_workspace_holds_its_file_and_lets_go_on_save_as_and_switch(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    ws.add_turn("one")
    ws.write(ws.snapshot(0))
    first = ws.path
    assert first == tmp_path / "sessions" / "ws.toml" and held_elsewhere(first)
    moved = ws.save_as("moved")
    assert ws.path == moved and held_elsewhere(moved) and not held_elsewhere(first)
    ws.switch(ws.new_session())
    assert not held_elsewhere(moved)  # the session left behind is free for another console


def test_an_autosave_still_in_flight_after_a_switch_or_close_is_dropped(tmp_path: Path) -> None:
    """A write worker that ran late wrote the older text over the file saved on quit/switch, and
    claimed the released file again: its lock and lock file stayed until the process ended."""
    folder = tmp_path / "sessions"
    ws = workspace(tmp_path)
    ws.add_turn("one")
    late = ws.snapshot(0)  # taken for an autosave whose thread has not run yet
    ws.add_turn("two")
    ws.save_now()  # the quit / switch save: both turns
    first = ws.path
    ws.switch(ws.new_session())
    assert ws.write(late) is False  # stale: not written, not claimed
    assert [t.message for t in load_session(first).turns] == ["one", "two"]
    assert sorted(p.name for p in folder.iterdir()) == ["ws.toml"] and not held_elsewhere(first)
    ws.add_turn("three")
    pending = ws.snapshot(0)
    assert pending.seq > late.seq
    ws.save_now()
    second = ws.path
    assert second != first and held_elsewhere(second)
    ws.close()  # the console unmounted
    assert ws.write(pending) is False
    assert sorted(p.name for p in folder.iterdir()) == sorted(["ws.toml", second.name])  # no .lock left
    assert not held_elsewhere(second) and [t.message for t in load_session(second).turns] == ["three"]


def test_save_as_onto_a_file_another_process_claims_keeps_the_old_path_and_lock(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    ws.add_turn("one")
    ws.save_now()
    first = ws.path
    target = tmp_path / "sessions" / "theirs.toml"
    hold = "import sys; from tui_router.storage import claim_session_file; claim_session_file(sys.argv[1]); print('ready', flush=True); sys.stdin.readline()"
    holder = subprocess.Popen([sys.executable, "-c", hold, str(target)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ready"
        with pytest.raises(UserError, match="another tui-router console .* is writing this session"):
            ws.save_as("theirs")
        assert ws.path == first and held_elsewhere(first) and not target.exists()
    finally:
        holder.communicate("\n", timeout=60)
    ws.add_turn("two")
    ws.save_now()  # still writing the old file
    assert [t.message for t in load_session(first).turns] == ["one", "two"]


def test_a_write_over_a_file_changed_on_disk_is_refused(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    ws.add_turn("one")
    ws.save_now()
    ws.path.write_text("# edited elsewhere\n", encoding="utf-8")
    ws.add_turn("two")
    with pytest.raises(UserError, match="changed on disk"):
        ws.write(ws.snapshot(1))
    with pytest.raises(UserError, match="changed on disk"):
        ws.save_now()
    assert ws.path.read_text(encoding="utf-8") == "# edited elsewhere\n"
    assert ws.saved is False  # the turns are still due to be written


# -- writing the file (mutation target `session`, scripts/mutation.py) ---------------------------


def test_snapshots_read_back_as_dumps_session_and_cache_each_turn(tmp_path: Path) -> None:
    ws = Workspace(None, tmp_path / "sessions", clock=lambda: NOW, session_id="ws")
    ws.session.session.catalog = "two\nlines"  # multi-line strings in the head and in a turn
    first = ws.add_turn("line one\nline two")
    ws.set_decision(first, confirm_decision())  # a turn with sub-tables
    ws.add_turn("short")  # a turn with no sub-table
    snap = ws.snapshot()
    assert snap.text == dumps_session(ws.session)
    assert '"""' in snap.text and "[turns.decision]" in snap.text
    assert [t.message for t in load_session_text(tmp_path, snap.text).turns] == ["line one\nline two", "short"]
    ws.set_label(1, "send_sms")  # a change through the workspace drops that turn's cached text
    assert 'label = "send_sms"' in ws.snapshot().text
    ws.turns[0].label = "send_email"  # a change made elsewhere: the caller names the turn
    assert 'label = "send_email"' not in ws.snapshot().text  # cached until told
    assert ws.snapshot(changed=0).text == dumps_session(ws.session)


def load_session_text(tmp_path: Path, text: str):
    path = tmp_path / "read-back.toml"
    path.write_text(text, encoding="utf-8")
    return load_session(path)


def test_only_a_newer_snapshot_is_written(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    ws.add_turn("one")
    older = ws.snapshot()
    assert ws.write(older) is True
    assert ws.write(older) is False  # the same snapshot again: already on disk
    ws.add_turn("two")
    newer = ws.snapshot()
    assert newer.seq == older.seq + 1
    assert ws.write(newer) is True and ws.saved is True
    assert [t.message for t in load_session(ws.path).turns] == ["one", "two"]
    stale = Workspace(None, tmp_path / "other", session_id="x")
    assert stale.saved is None


def test_an_empty_new_session_writes_nothing(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    ws.save_now()
    assert ws.path is None and not (tmp_path / "sessions").exists()


def test_a_sessions_folder_that_is_a_file_still_gives_a_path_and_the_write_says_why(tmp_path: Path) -> None:
    (tmp_path / "sessions").write_text("", encoding="utf-8")
    ws = workspace(tmp_path)
    ws.add_turn("one")
    assert ws.ensure_path() == tmp_path / "sessions" / "ws.toml"
    with pytest.raises(OSError):
        ws.save_now()


def test_save_as_targets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    ws = workspace(tmp_path)
    with pytest.raises(UserError) as info:
        ws.save_as_target("  ")
    assert str(info.value) == "Give a name or a path ending in .toml."
    assert ws.save_as_target("monday") == tmp_path / "sessions" / "monday.toml"  # a bare name: the sessions folder
    assert ws.save_as_target("sub/monday") == Path("sub/monday.toml")  # a relative path: from here
    ws.add_turn("one")
    ws.save_now()
    assert ws.save_as_target("ws") == ws.path  # its own file is not "another existing file"
    (tmp_path / "sessions" / "taken.toml").write_text("", encoding="utf-8")
    with pytest.raises(UserError, match="already exists"):
        ws.save_as_target("taken")


def test_save_as_its_own_name_keeps_the_lock(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    ws.add_turn("one")
    ws.save_now()
    path = ws.path
    assert ws.save_as("ws") == path
    assert held_elsewhere(path)


def test_a_save_as_that_fails_to_write_lets_the_new_name_go(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    ws.add_turn("one")
    ws.save_now()
    old = ws.path
    # 245 characters: the lock file's name (+6) fits the 255-byte limit, the temp file's (+14) does not
    name = "n" * (245 - len(".toml"))
    with pytest.raises(OSError):
        ws.save_as(name)
    target = tmp_path / "sessions" / f"{name}.toml"
    assert ws.path == old and held_elsewhere(old)
    assert not held_elsewhere(target)  # released when the write failed...
    # ...with the lock file its claim made (the probe's own claim removed its own at exit)
    assert sorted(p.name for p in (tmp_path / "sessions").glob(".*.lock")) == [f".{old.name}.lock"]


def test_a_snapshot_taken_before_a_switch_is_not_written_to_the_file_left(tmp_path: Path) -> None:
    # The review queue's worker writes the snapshot taken at the key; a session opened meanwhile
    # saved the old one and released its file: the late snapshot must not claim it again.
    ws = Workspace(None, tmp_path)
    ws.add_turn("first")
    snap = ws.snapshot()
    ws.save_now()
    written = snap.path.read_text(encoding="utf-8")
    ws.switch(ws.new_session())
    ws.write_now(snap)
    assert snap.path.read_text(encoding="utf-8") == written
    from tui_router.storage import lock_path_for

    assert not lock_path_for(snap.path).exists()  # released at the switch, not claimed again
