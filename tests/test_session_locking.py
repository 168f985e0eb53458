"""Two writers on one session file (issue 14, item 2): real processes, real files.

A console holds an OS lock on the file it writes; a second one is refused with a sentence and
nothing is lost. New sessions never collide, even with the same id in the same second. A file
changed on disk since it was read is not overwritten.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from app_harness import make_app, make_config, notifications, settle, submit, write_catalog
from lock_probe import contend

from tui_router.errors import SessionError
from tui_router.session import Session, SessionInfo, Turn, TurnDecision, load_session, new_session_id, save_session
from tui_router.storage import (
    SessionBusy,
    claim_session_file,
    create_session_file,
    lock_path_for,
    release_session_file,
)

WRITER = Path(__file__).parent / "console_writer.py"


def writer(folder: Path, tag: str, n: int, *extra: str, wait: bool = False) -> subprocess.Popen:
    args = [sys.executable, str(WRITER), str(folder), tag, str(n), *extra] + (["--wait"] if wait else [])
    return subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def recorded(folder: Path) -> Path:
    path = folder / "shared.toml"
    # a turn with a decision: written as [[turns]] (a bare short turn is inlined by tomli-w, which the
    # console's per-turn autosave mishandled before issue 13 fixed it)
    first = Turn(message="the first turn", label="list_events", decision=TurnDecision(choice="list_events"))
    save_session(Session(session=SessionInfo(id="shared", catalog="tiny"), turns=[first]), path)
    return path


def test_two_consoles_on_one_file_the_second_is_refused_and_no_turn_is_lost(tmp_path):
    write_catalog(tmp_path)
    path = recorded(tmp_path)
    first = writer(tmp_path, "A", 4, "--file", str(path), wait=True)
    assert first.stdout.readline().strip() == "ready"  # A holds the lock now
    second = writer(tmp_path, "B", 4, "--file", str(path))
    out, err = second.communicate(timeout=120)
    assert second.returncode == 2 and "Traceback" not in err
    assert err.strip().splitlines() == [
        f"tui-router: {path}: another tui-router console (pid {first.pid}) is writing this session; "
        "close it first, or open a copy of the file"
    ]
    out, err = first.communicate("\n", timeout=120)
    assert first.returncode == 0, err
    again = writer(tmp_path, "B", 4, "--file", str(path))  # A has quit: B may write now
    out, err = again.communicate(timeout=120)
    assert again.returncode == 0, err
    messages = [t.message for t in load_session(path).turns]
    assert messages == ["the first turn"] + [f"remind me to call the dentist tomorrow (A {i})" for i in range(4)] + [
        f"remind me to call the dentist tomorrow (B {i})" for i in range(4)
    ]


def test_the_cli_open_command_refuses_a_file_another_process_writes(tmp_path):
    write_catalog(tmp_path)
    path = recorded(tmp_path)
    holder = writer(tmp_path, "A", 0, "--file", str(path), wait=True)
    try:
        assert holder.stdout.readline().strip() == "ready"
        env = dict(os.environ, TUI_ROUTER_CONFIG="", XDG_CONFIG_HOME=str(tmp_path / "xdg"))
        done = subprocess.run(
            [sys.executable, "-c", "import sys; from tui_router.cli import main; sys.exit(main())", "open", str(path), "--catalog", str(tmp_path / "tiny.toml")],
            capture_output=True, text=True, timeout=60, env=env, stdin=subprocess.DEVNULL,
        )
        assert done.returncode == 2 and "Traceback" not in done.stderr
        assert done.stderr.strip() == (
            f"tui-router: {path}: another tui-router console (pid {holder.pid}) is writing this session; "
            "close it first, or open a copy of the file"
        )
    finally:
        holder.communicate("\n", timeout=60)


def test_a_killed_holder_leaves_no_stale_lock(tmp_path):
    write_catalog(tmp_path)
    path = recorded(tmp_path)
    holder = writer(tmp_path, "A", 1, "--file", str(path), wait=True)
    assert holder.stdout.readline().strip() == "ready"
    with pytest.raises(SessionBusy):
        claim_session_file(path)
    holder.send_signal(signal.SIGKILL)
    holder.wait(timeout=30)
    claimed = claim_session_file(path)  # the OS dropped the lock with the process
    try:
        assert claimed.locked and lock_path_for(path).read_text() == f"{os.getpid()} console\n"
    finally:
        release_session_file(path)


def test_consoles_started_together_with_the_same_id_write_separate_files(tmp_path):
    """The time-based id collided for consoles started in the same second (2 of 8 runs lost a turn)."""
    write_catalog(tmp_path)
    procs = [writer(tmp_path, f"P{k}", 2, "--session-id", "same-second", wait=True) for k in range(4)]
    for proc in procs:
        assert proc.stdout.readline().strip() == "ready"
    results = [proc.communicate("\n", timeout=180) for proc in procs]
    assert [p.returncode for p in procs] == [0, 0, 0, 0], [r[1] for r in results]
    files = sorted((tmp_path / "sessions").glob("*.toml"))
    assert [f.name for f in files] == ["same-second-2.toml", "same-second-3.toml", "same-second-4.toml", "same-second.toml"]
    by_tag = {}
    for f in files:
        turns = load_session(f).turns
        tags = {t.message.rsplit("(", 1)[1].split()[0] for t in turns}
        assert len(turns) == 2 and len(tags) == 1
        by_tag[tags.pop()] = f
    assert sorted(by_tag) == ["P0", "P1", "P2", "P3"]


def test_session_ids_differ_within_one_second():
    ids = {new_session_id("ops") for _ in range(200)}
    assert len(ids) == 200
    assert all(i.split("-ops-")[1].isalnum() and len(i.split("-ops-")[1]) == 6 for i in ids)


def test_create_session_file_is_exclusive(tmp_path):
    first = create_session_file(tmp_path, "s")
    (tmp_path / "s-2.toml").write_text("someone else's file\n")
    second = create_session_file(tmp_path, "s")
    try:
        assert (first.name, second.name) == ("s.toml", "s-3.toml")
        assert (tmp_path / "s-2.toml").read_text() == "someone else's file\n"
    finally:
        release_session_file(first)
        release_session_file(second)


async def test_a_file_changed_on_disk_is_not_overwritten(tmp_path):
    config = make_config(tmp_path)
    path = recorded(tmp_path)
    claim_session_file(path)
    app = make_app(config, session=load_session(path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        app.set_thresholds(1.0, 1.0)
        await submit(app, pilot, "remind me to call the dentist tomorrow")
        assert len(load_session(path).turns) == 2
        # another program (an editor, a tool that ignores the lock) rewrites the file
        edited = '[session]\nid = "shared"\n\n[[turns]]\nmessage = "edited elsewhere"\n'
        subprocess.run([sys.executable, "-c", f"open({str(path)!r}, 'w').write({edited!r})"], check=True, timeout=30)
        await submit(app, pilot, "show my calendar agenda for monday")
        assert path.read_text() == edited
        assert any("changed on disk since this console read or wrote it; it was not overwritten" in n for n in notifications(app))
        assert app.save_as("rescued") is not None  # nothing is lost: save under another name
        rescued = load_session(tmp_path / "sessions" / "rescued.toml")
        assert [t.message for t in rescued.turns][1:] == ["remind me to call the dentist tomorrow", "show my calendar agenda for monday"]
    assert path.read_text() == edited


def test_a_lock_that_cannot_be_made_is_one_sentence(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text("")
    lock_path_for(path).mkdir()  # something that is not a lock file sits where the lock goes
    with pytest.raises(SessionError) as caught:
        claim_session_file(path)
    assert caught.value.lines() == [f"{path}: cannot lock the session file (Is a directory)"]
    assert path.read_text() == ""


async def test_the_console_open_command_refuses_a_file_another_process_writes(tmp_path):
    config = make_config(tmp_path)
    path = recorded(tmp_path)
    holder = writer(tmp_path, "A", 0, "--file", str(path), wait=True)
    try:
        assert holder.stdout.readline().strip() == "ready"
        app = make_app(config)
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(app, pilot)
            app.open_session_file(str(path))
            await pilot.pause()
            assert app.session.path != path and app.session.turns == []  # still the new, empty session
            assert any(f"another tui-router console (pid {holder.pid}) is writing this session" in n for n in notifications(app))
    finally:
        holder.communicate("\n", timeout=60)
    assert len(load_session(path).turns) == 1


HAND_WRITTEN = """# cases for the billing desk, written by hand
[session]
id = "hand"
catalog = "tiny"

# the reminder case: keep it, it caught a regression once
[[turns]]
message = "remind me to call the dentist tomorrow"
label = "create_reminder"
"""


def test_the_first_write_over_a_commented_file_keeps_it_once_in_a_backup(tmp_path):
    from tui_router.session import dumps_session, iter_session_files
    from tui_router.storage import backup_path_for

    path = tmp_path / "hand.toml"
    path.write_text(HAND_WRITTEN, encoding="utf-8")
    session = load_session(path)
    session.turns[0].label = "list_events"
    backup = claim_session_file(path).write(dumps_session(session))
    assert backup == backup_path_for(path) == tmp_path / "hand.toml.bak"
    assert backup.read_text(encoding="utf-8") == HAND_WRITTEN  # the file as it was, comments and all
    assert "#" not in path.read_text(encoding="utf-8") and load_session(path).turns[0].label == "list_events"
    # later writes make no new backup, and the backup is not a session file for eval or the queue
    assert claim_session_file(path).write(dumps_session(session)) is None
    assert iter_session_files([tmp_path]) == [path]
    release_session_file(path)
    # a backup already there is never replaced; a file without comments needs none
    other = tmp_path / "plain.toml"
    other.write_text(HAND_WRITTEN.replace("# the reminder case: keep it, it caught a regression once\n", "").replace("# cases for the billing desk, written by hand\n", ""), encoding="utf-8")
    assert claim_session_file(other).write(dumps_session(load_session(other))) is None
    assert not backup_path_for(other).exists()
    release_session_file(other)
    again = tmp_path / "again.toml"
    again.write_text(HAND_WRITTEN, encoding="utf-8")
    backup_path_for(again).write_text("an older backup", encoding="utf-8")
    assert claim_session_file(again).write(dumps_session(load_session(again))) is None
    assert backup_path_for(again).read_text(encoding="utf-8") == "an older backup"
    release_session_file(again)


async def test_the_console_says_where_a_commented_files_original_went(tmp_path):
    config = make_config(tmp_path)
    path = tmp_path / "hand.toml"
    path.write_text(HAND_WRITTEN, encoding="utf-8")
    app = make_app(config, session=load_session(path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        await submit(app, pilot, "show my calendar agenda for monday")
        await settle(app, pilot)
        said = [n for n in notifications(app) if "had comments" in n]
        assert len(said) == 1 and "hand.toml.bak" in said[0]
        await submit(app, pilot, "remind me to water the plants")
        assert len([n for n in notifications(app) if "had comments" in n]) == 1  # said once
    assert (tmp_path / "hand.toml.bak").read_text(encoding="utf-8") == HAND_WRITTEN
    assert [t.message for t in load_session(path).turns] == [
        "remind me to call the dentist tomorrow", "show my calendar agenda for monday", "remind me to water the plants",
    ]


def test_holders_that_remove_their_sidecar_still_hold_the_lock_one_at_a_time(tmp_path):
    """Live files remove their `.lock` when done (storage.py): three processes claiming and letting go
    of one file thousands of times, removing the sidecar each time, are never inside together (a
    claim that locked a just-removed sidecar must start over; without that check this fails)."""
    path = tmp_path / "s.toml"
    results = contend(path, processes=3, rounds=2000)
    assert sum(held for held, _ in results) >= 100  # they did take turns
    assert [overlaps for _, overlaps in results] == [0, 0, 0]
    assert not lock_path_for(path).exists()
