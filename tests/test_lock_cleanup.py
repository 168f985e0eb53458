"""No `.lock` files left after a clean exit (storage.py): the console, `review`, switching, saving
under another name, quitting by key, palette, SIGTERM or SIGHUP; and a lock another process holds
is never removed (one writer stays one writer).

Real parts: the real RouterConsole under Pilot, real holder processes (lock_probe), the real CLI in
a pseudo-terminal for the signal paths.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from app_harness import (
    AGENDA,
    REMINDER,
    make_app,
    make_config,
    notifications,
    run_palette,
    settle,
    submit,
    write_catalog,
)
from lock_probe import claim_elsewhere, holding_elsewhere

from tui_router.errors import SessionError
from tui_router.review import Review
from tui_router.session import Session, SessionInfo, Turn, TurnDecision, load_session, save_session
from tui_router.storage import claim_session_file, lock_path_for

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="flock is POSIX")

CLI = [sys.executable, "-c", "import sys; from tui_router.cli import main; sys.exit(main())"]


def sidecars(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.glob(".*.lock"))


def recorded(path: Path, *messages: str, label: str | None = "list_events") -> Path:
    turns = [Turn(message=m, label=label, decision=TurnDecision(choice="list_events")) for m in messages]
    save_session(Session(session=SessionInfo(id=path.stem, catalog="tiny"), turns=turns), path)
    return path


def opened(path: Path) -> Session:
    """A session file continued as `tui-router open FILE` does: claimed, then read."""
    claim_session_file(path)
    return load_session(path)


async def quit_by_key(app, pilot) -> None:
    await pilot.press("escape")  # from the message box to the Decision log, where q quits
    await pilot.pause()
    await pilot.press("q")
    await pilot.pause()


async def test_a_continued_session_leaves_no_lock_file_after_q(tmp_path: Path) -> None:
    path = recorded(tmp_path / "kept.toml", "the first turn")
    app = make_app(make_config(tmp_path), session=opened(path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        app.set_thresholds(1.0, 1.0)  # every turn low: no confirm dialog
        await submit(app, pilot, REMINDER)
        assert sidecars(tmp_path) == [lock_path_for(path).name]  # held while the console runs
        assert claim_elsewhere(path) != "free"
        await quit_by_key(app, pilot)
    assert app.return_code == 0
    assert sidecars(tmp_path) == []
    assert [t.message for t in load_session(path).turns] == ["the first turn", REMINDER]
    assert load_session(path).turns[1].decision is not None
    assert claim_elsewhere(path) == "free"


async def test_a_new_session_quit_from_the_palette_leaves_only_its_file(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    app = make_app(make_config(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        app.set_thresholds(1.0, 1.0)
        await submit(app, pilot, AGENDA)
        await settle(app, pilot)
        path = app.session.path
        assert path is not None and sidecars(sessions) == [lock_path_for(path).name]
        await run_palette(app, pilot, "app: quit")
        await pilot.pause()
    assert app.return_code == 0
    assert sorted(p.name for p in sessions.iterdir()) == [path.name]  # no .lock, no temp file
    assert [t["message"] for t in tomllib.loads(path.read_text(encoding="utf-8"))["turns"]] == [AGENDA]


async def test_switching_and_saving_as_let_each_file_go_with_its_lock_file(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    other = recorded(tmp_path / "other.toml", "another session's turn")
    app = make_app(make_config(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        app.set_thresholds(1.0, 1.0)
        await submit(app, pilot, AGENDA)
        first = app.session.path
        assert first is not None
        app.save_as("renamed")  # further turns go to renamed.toml; the first file is let go
        renamed = sessions / "renamed.toml"
        assert app.session.path == renamed
        assert sidecars(sessions) == [lock_path_for(renamed).name]
        assert claim_elsewhere(first) == "free"
        app.open_session_file(str(other))  # switch: renamed.toml is let go, other.toml held
        await settle(app, pilot)
        assert app.session.path == other
        assert sidecars(sessions) == [] and sidecars(tmp_path) == [lock_path_for(other).name]
        await submit(app, pilot, REMINDER)
        app.action_new_session()  # and away again: a new session has no file until its first turn
        await settle(app, pilot)
        assert sidecars(tmp_path) == [] and sidecars(sessions) == []
        await submit(app, pilot, AGENDA)
        newest = app.session.path
        assert newest is not None and sidecars(sessions) == [lock_path_for(newest).name]
        await quit_by_key(app, pilot)
    assert sidecars(tmp_path) == [] and sidecars(sessions) == []
    assert [t.message for t in load_session(renamed).turns] == [AGENDA]
    assert [t.message for t in load_session(other).turns] == ["another session's turn", REMINDER]
    assert [t.message for t in load_session(newest).turns] == [AGENDA]


async def test_a_file_another_process_holds_is_refused_and_its_lock_file_kept(tmp_path: Path) -> None:
    path = recorded(tmp_path / "theirs.toml", "their turn")
    before = path.read_bytes()
    with holding_elsewhere(path) as holder:
        lock = lock_path_for(path)
        ident = (os.stat(lock).st_ino, lock.read_text(encoding="ascii"))
        assert ident[1] == f"{holder.pid} console\n"
        app = make_app(make_config(tmp_path))
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(app, pilot)
            app.set_thresholds(1.0, 1.0)
            app.open_session_file(str(path))
            await settle(app, pilot)
            said = [n for n in notifications(app) if f"(pid {holder.pid}) is writing this session" in n]
            assert len(said) == 1
            assert app.session.path is None  # still the console's own new session
            await submit(app, pilot, REMINDER)
            mine = app.session.path
            await quit_by_key(app, pilot)
        # the console left: its own lock file went, the holder's is there, the same file, still held
        assert sidecars(tmp_path) == [lock.name] and sidecars(mine.parent) == []
        assert (os.stat(lock).st_ino, lock.read_text(encoding="ascii")) == ident
        assert claim_elsewhere(path).startswith(f"{path}: another tui-router console (pid {holder.pid})")
        # the CLI refuses it too, before drawing, and leaves the holder's lock alone
        done = subprocess.run([*CLI, "open", str(path), "--catalog", str(tmp_path / "tiny.toml")], capture_output=True, text=True,
                              timeout=60, env={**os.environ, "TUI_ROUTER_CONFIG": "", "XDG_CONFIG_HOME": str(tmp_path / "xdg")},
                              stdin=subprocess.DEVNULL, cwd=tmp_path)
        assert done.returncode == 2 and "is writing this session" in done.stderr
        assert (os.stat(lock).st_ino, lock.read_text(encoding="ascii")) == ident
        assert claim_elsewhere(path) != "free"
    assert path.read_bytes() == before
    assert sidecars(tmp_path) == []  # the holder let go at its own exit, and removed its lock file
    assert claim_elsewhere(path) == "free"


def test_open_refused_before_drawing_leaves_no_lock_file(tmp_path: Path) -> None:
    """`tui-router open FILE` claims the file first; a refusal after that (no terminal here) let the
    lock go with the process but left the lock file."""
    write_catalog(tmp_path)
    path = recorded(tmp_path / "s.toml", "one turn")
    before = path.read_bytes()
    done = subprocess.run([*CLI, "open", str(path), "--catalog", str(tmp_path / "tiny.toml")], capture_output=True, text=True,
                          timeout=60, env={**os.environ, "TUI_ROUTER_CONFIG": "", "XDG_CONFIG_HOME": str(tmp_path / "xdg")},
                          stdin=subprocess.DEVNULL, cwd=tmp_path)
    assert done.returncode == 2 and "needs an interactive terminal" in done.stderr
    assert sidecars(tmp_path) == [] and path.read_bytes() == before
    broken = tmp_path / "broken.toml"
    broken.write_text('[session]\nid = "x"\n[[turns]\nmessage = "half', encoding="utf-8")
    done = subprocess.run([*CLI, "open", str(broken)], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL, cwd=tmp_path)
    assert done.returncode == 2 and "corrupt session file" in done.stderr
    assert sidecars(tmp_path) == []


def test_review_labels_leave_no_lock_file_and_refuse_a_held_one(tmp_path: Path) -> None:
    a = recorded(tmp_path / "a.toml", "a1", "a2", label=None)
    review = Review.of_files([a], reviewer="dana")
    review.set_label("send_sms")
    assert load_session(a).turns[0].label == "send_sms" and sidecars(tmp_path) == []
    review.next()
    with holding_elsewhere(a) as holder:
        with pytest.raises(SessionError, match=rf"\(pid {holder.pid}\) is writing this session"):
            review.set_label("list_events")
        assert sidecars(tmp_path) == [lock_path_for(a).name] and claim_elsewhere(a) != "free"
    review.set_label("list_events")  # the holder left: the label goes in
    assert [t.label for t in load_session(a).turns] == ["send_sms", "list_events"] and sidecars(tmp_path) == []


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_console_ended_by_a_signal_leaves_no_lock_file(tmp_path: Path, sig: signal.Signals) -> None:
    from test_console_e2e import Terminal, wait_for_turns

    catalog = write_catalog(tmp_path)
    (tmp_path / "tui-router.toml").write_text(
        f'catalog = "{catalog}"\nbackend = "local"\nsessions_dir = "sessions"\n[policy]\nhigh = 1.0\nmedium = 1.0\n', encoding="utf-8"
    )
    path = recorded(tmp_path / "sessions" / "kept.toml", "the first turn")
    env = {k: v for k, v in os.environ.items() if k not in ("TUI_ROUTER_CONFIG", "TEXTUAL", "NO_COLOR")}
    env.update(TERM="xterm-256color", TUI_ROUTER_CONFIG=str(tmp_path / "tui-router.toml"))
    term = Terminal([*CLI, "open", str(path)], env, tmp_path)
    try:
        term.wait_for("Type a user message")
        term.send(AGENDA + "\r")
        wait_for_turns(tmp_path / "sessions", 2)
        assert sidecars(tmp_path / "sessions") == [lock_path_for(path).name]
        term.process.send_signal(sig)
        assert term.process.wait(15) == 128 + sig
    finally:
        term.close()
    assert sidecars(tmp_path / "sessions") == []
    assert [t.message for t in load_session(path).turns] == ["the first turn", AGENDA]
