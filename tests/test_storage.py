"""storage.py on its own, fast (the mutation target `storage`): the lock, exclusive create, the
changed-on-disk check, and the per-process registry.

flock locks belong to an open file description, so a second claim in this same process is refused
exactly as another process would be; tests/test_session_locking.py does it with real consoles.
"""

from __future__ import annotations

import fcntl
import os
import stat
from pathlib import Path

import pytest

from tui_router.errors import SessionError
from tui_router.storage import (
    CONSOLE,
    SERVER,
    SessionBusy,
    SessionChangedOnDisk,
    SessionFile,
    claim_session_file,
    create_claimed,
    create_session_file,
    lock_path_for,
    release_all,
    release_session_file,
    stamp_of,
    write_session_text,
)

PID = os.getpid()


def umasked(mode: int) -> int:
    old = os.umask(0)
    os.umask(old)
    return mode & ~old


def busy_message(path: Path) -> str:
    with pytest.raises(SessionBusy) as info:
        SessionFile.claim(path)
    return str(info.value)


def test_the_lock_file_names_the_holder_and_a_second_claim_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    lock = lock_path_for(path)
    assert lock == tmp_path / ".s.toml.lock"
    lock.write_text("123456789012 leftover from an older holder\n", encoding="ascii")
    held = SessionFile.claim(path)
    assert held.locked and held.path == path
    assert lock.read_text(encoding="ascii") == f"{PID} {CONSOLE}\n"  # truncated, not overwritten in place
    assert busy_message(path) == (
        f"{path}: another tui-router console (pid {PID}) is writing this session; close it first, or open a copy of the file"
    )
    flags = fcntl.fcntl(held._lock_fd, fcntl.F_GETFD)
    assert flags & fcntl.FD_CLOEXEC  # a fallback command started meanwhile does not inherit the lock
    held.release()
    assert not held.locked
    held.release()  # twice is harmless
    again = SessionFile.claim(path)
    assert again.locked
    again.release()


def test_a_server_holder_is_named_as_such(tmp_path: Path) -> None:
    path = tmp_path / "mcp.toml"
    held = SessionFile.claim(path, role=SERVER)
    try:
        assert lock_path_for(path).read_text(encoding="ascii") == f"{PID} {SERVER}\n"
        assert busy_message(path) == (
            f"{path}: a tui-router mcp-serve (pid {PID}) is writing this live session; follow it read-only "
            f"with tui-router open --follow {path}, or open a copy of the file"
        )
    finally:
        held.release()


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"4242\n", "another tui-router console (pid 4242) is writing"),  # the format before roles
        (b"4242 console\n", "another tui-router console (pid 4242) is writing"),
        (b"4242 mcp-serve\n", "a tui-router mcp-serve (pid 4242) is writing this live session"),
        (b"4242 mcp-serve extra\n", "another tui-router console (pid 4242) is writing"),
        (b"x42 mcp-serve\n", "a tui-router mcp-serve is writing this live session"),
        (b"", "another tui-router console is writing"),
        (b"\xff\xfe 1\n", "another tui-router console is writing"),
    ],
)
def test_whatever_the_lock_file_says_the_refusal_is_one_sentence(tmp_path: Path, content: bytes, expected: str) -> None:
    path = tmp_path / "s.toml"
    fd = os.open(lock_path_for(path), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # a holder that wrote something odd
        os.write(fd, content)
        message = busy_message(path)
    finally:
        os.close(fd)
    assert message.startswith(f"{path}: {expected}")
    assert "\n" not in message


def test_a_long_pid_line_is_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    fd = os.open(lock_path_for(path), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.write(fd, b"4194304000000000000000000000000 mcp-serve\n")  # 41 characters: past 32, within 64
        message = busy_message(path)
    finally:
        os.close(fd)
    assert "a tui-router mcp-serve (pid 4194304000000000000000000000000)" in message


def test_a_lock_file_that_cannot_be_opened_is_a_sentence_and_follows_no_link(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    target = tmp_path / "elsewhere"
    target.write_text("keep me", encoding="utf-8")
    lock_path_for(path).symlink_to(target)
    with pytest.raises(SessionError) as info:
        SessionFile.claim(path)
    assert not isinstance(info.value, SessionBusy)
    assert str(info.value).startswith(f"{path}: cannot lock the session file (")
    assert target.read_text(encoding="utf-8") == "keep me"
    other = tmp_path / "d.toml"
    lock_path_for(other).mkdir()
    with pytest.raises(SessionError, match=r"d\.toml: cannot lock the session file \(Is a directory\)$"):
        SessionFile.claim(other)


def test_claim_makes_the_folder_and_create_is_exclusive(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "s.toml"
    made = SessionFile.claim(path, create=True)
    assert path.read_bytes() == b"" and stat.S_IMODE(path.stat().st_mode) == umasked(0o644)
    assert stat.S_IMODE(lock_path_for(path).stat().st_mode) == umasked(0o644)
    assert made._stamp == stamp_of(path) is not None
    made.release()
    assert not lock_path_for(path).exists()  # released: its lock file went with it
    with pytest.raises(FileExistsError):
        SessionFile.claim(path, create=True)
    assert not lock_path_for(path).exists()  # the failed create removed the sidecar it made
    SessionFile.claim(path).release()  # and let its lock go


def test_stamps(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    assert stamp_of(path) is None
    path.write_text("abc", encoding="utf-8")
    info = path.stat()
    assert stamp_of(path) == (info.st_ino, 3, info.st_mtime_ns)


def test_writes_are_refused_once_the_file_changed_on_disk(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text("old\n", encoding="utf-8")
    held = SessionFile.claim(path)
    try:
        held.write("first\n")
        held.write("second\n")  # its own write is not a change on disk
        assert path.read_text(encoding="utf-8") == "second\n"
        path.write_text("an editor\n", encoding="utf-8")
        with pytest.raises(SessionChangedOnDisk) as info:
            held.write("third\n")
        assert str(info.value) == (
            f"{path}: the file changed on disk since this console read or wrote it; it was not overwritten "
            "(save under another name with ctrl+s)"
        )
        assert path.read_text(encoding="utf-8") == "an editor\n"
        path.unlink()  # a file removed meanwhile is written again (nothing to lose)
        held.write("fourth\n")
        assert path.read_text(encoding="utf-8") == "fourth\n"
    finally:
        held.release()


def test_a_file_edited_between_claim_and_first_write_is_not_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text("read by the console\n", encoding="utf-8")
    held = SessionFile.claim(path)
    try:
        path.write_text("changed after\n", encoding="utf-8")
        with pytest.raises(SessionChangedOnDisk):
            held.write("mine\n")
    finally:
        held.release()


def test_create_claimed_takes_the_next_free_name(tmp_path: Path) -> None:
    folder = tmp_path / "new" / "folder"
    first = create_claimed(folder, "s")
    assert first.path == folder / "s.toml" and first.locked
    (folder / "s-2.toml").symlink_to(tmp_path / "nowhere")  # a dangling link is a taken name
    taken = SessionFile.claim(folder / "s-3.toml")  # locked by someone, not made yet
    fourth = create_claimed(folder, "s", role=SERVER)
    assert fourth.path == folder / "s-4.toml"
    assert lock_path_for(fourth.path).read_text(encoding="ascii") == f"{PID} {SERVER}\n"
    assert not (folder / "s-3.toml").exists() and not (tmp_path / "nowhere").exists()
    for held in (first, taken, fourth):
        held.release()


def test_create_claimed_in_a_folder_that_is_a_file_fails_at_once(tmp_path: Path) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("", encoding="utf-8")
    with pytest.raises(OSError):
        create_claimed(blocker, "s")
    with pytest.raises(OSError):
        create_claimed(blocker / "below", "s")


def test_the_registry_holds_one_claim_per_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    made = create_session_file(tmp_path, "r")
    assert made == tmp_path / "r.toml"
    try:
        held = claim_session_file(made)
        assert claim_session_file("r.toml") is held  # the same file by a relative name
        assert held.locked
        busy_message(made)
        write_session_text("r.toml", "one\n")
        assert made.read_text(encoding="utf-8") == "one\n"
    finally:
        release_session_file("r.toml")
    assert not held.locked
    release_session_file(made)  # not held any more: nothing to do
    release_session_file(None)
    fresh = claim_session_file(made)
    assert fresh is not held and fresh.locked
    release_session_file(made)


def test_write_session_text_claims_a_file_it_does_not_hold(tmp_path: Path) -> None:
    path = tmp_path / "w.toml"
    write_session_text(path, "x\n")
    try:
        assert path.read_text(encoding="utf-8") == "x\n"
        busy_message(path)
        write_session_text(path, "y\n")
        assert path.read_text(encoding="utf-8") == "y\n"
    finally:
        release_session_file(path)
    SessionFile.claim(path).release()


# ---------------------------------------------------------------- removing the sidecar


def test_release_removes_the_sidecar_and_only_its_own(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    held = SessionFile.claim(path)
    assert lock_path_for(path).exists()
    held.release()
    assert not lock_path_for(path).exists() and not held.locked
    held.release()  # a second release does nothing
    mine = SessionFile.claim(path)
    lock_path_for(path).unlink()  # removed behind its back, and another claim made a new sidecar
    other = SessionFile.claim(path)
    mine.release()
    assert lock_path_for(path).exists()  # not the sidecar it locked: left to its holder
    assert "another tui-router console" in busy_message(path)
    other.release()
    assert not lock_path_for(path).exists()


def test_a_refused_claim_leaves_the_holders_sidecar_alone(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    held = SessionFile.claim(path, role=SERVER)
    try:
        before = os.stat(lock_path_for(path))
        assert "mcp-serve" in busy_message(path)
        made = create_claimed(tmp_path, "s")  # s.toml is locked: it moves on to s-2.toml
        assert made.path.name == "s-2.toml"
        made.release()
        assert not lock_path_for(made.path).exists()
        after = os.stat(lock_path_for(path))
        assert (after.st_ino, after.st_size) == (before.st_ino, before.st_size)
        assert lock_path_for(path).read_text(encoding="ascii") == f"{PID} {SERVER}\n"
    finally:
        held.release()


def test_release_all_lets_go_of_every_held_file_and_its_sidecar(tmp_path: Path) -> None:
    made = create_session_file(tmp_path, "a")
    other = tmp_path / "b.toml"
    write_session_text(other, "x\n")
    assert lock_path_for(made).exists() and lock_path_for(other).exists()
    release_all()  # what runs at interpreter exit
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.toml", "b.toml"]
    assert other.read_text(encoding="utf-8") == "x\n"
    SessionFile.claim(made).release()  # both free again
    SessionFile.claim(other).release()
    release_all()  # nothing held: nothing to do
