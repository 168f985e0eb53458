"""Following a live session file (one the MCP server writes): new turns appear as they arrive.

A timer polls the file's mtime and size; only when they change does a thread worker read and parse
it, so the UI never waits on the disk. The live file has one writer (the server): the console
copies the new turns into its own session, where the operator's labels are autosaved as usual, so
the two processes never write the same file. The copy is an ordinary session: eval and replay read
it unchanged.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from textual import work
from textual.message import Message

from ..errors import UserError
from ..live import open_live
from ..session import Turn

if TYPE_CHECKING:
    from .app import RouterConsole

FOLLOW_INTERVAL = 0.5  # seconds between mtime checks; a stat costs microseconds


class LiveTurnsRead(Message):
    """The followed file changed and was read: all its turns, in file order."""

    def __init__(self, path: Path, stamp: tuple[int, int], turns: list[Turn]) -> None:
        super().__init__()
        self.path = path
        self.stamp = stamp
        self.turns = turns


class LiveReadFailed(Message):
    def __init__(self, path: Path, stamp: tuple[int, int] | None, error: str) -> None:
        super().__init__()
        self.path = path
        self.stamp = stamp
        self.error = error


class LiveFollow:
    """Mixed into RouterConsole: `follow_file(path)` starts following; one file at a time."""

    follow_path: Path | None = None
    follow_seen: int = 0  # turns of the followed file already copied into the session
    _follow_stamp: tuple[int, int] | None = None
    _follow_error: str = ""
    _follow_timer = None

    def follow_file(self: RouterConsole, path: Path, interval: float = FOLLOW_INTERVAL) -> bool:
        path = Path(path).expanduser()
        if self.session.path is not None and path.resolve() == self.session.path.resolve():
            self.notify("This console saves to that file; follow a live file the MCP server writes instead.", severity="error", markup=False)
            return False
        if not path.is_file():
            self.notify(f"{path}: no such file to follow.", severity="error", markup=False)
            return False
        if self._follow_timer is not None:
            self._follow_timer.stop()
        again = self.follow_path is not None and path.resolve() == self.follow_path.resolve()
        if not again:  # a different file: all its turns are new here
            self.follow_path, self.follow_seen, self._follow_stamp, self._follow_error = path, 0, None, ""
        self._follow_timer = self.set_interval(interval, self._check_live_file)
        self._check_live_file()
        if not again:
            self.notify(f"Following {path}: its new turns are added here as they arrive.", markup=False)
        return True

    def _check_live_file(self: RouterConsole) -> None:
        path = self.follow_path
        if path is None:
            return
        try:
            info = path.stat()
        except OSError as exc:
            self._live_problem(path, f"{path}: cannot read it ({exc.strerror or exc})")
            return
        stamp = (info.st_mtime_ns, info.st_size)
        if stamp != self._follow_stamp:
            self._read_live_file(path, stamp)

    @work(thread=True, exclusive=True, group="follow", exit_on_error=False)
    def _read_live_file(self: RouterConsole, path: Path, stamp: tuple[int, int]) -> None:
        try:
            session = open_live(path)
        except UserError as exc:
            self.post_message(LiveReadFailed(path, stamp, "; ".join(exc.lines()[:3])))
            return
        self.post_message(LiveTurnsRead(path, stamp, session.turns))

    def on_live_read_failed(self: RouterConsole, message: LiveReadFailed) -> None:
        if message.path == self.follow_path:
            self._follow_stamp = message.stamp  # retried when the file changes again
            self._live_problem(message.path, message.error)

    def _live_problem(self: RouterConsole, path: Path, error: str) -> None:
        if error != self._follow_error:  # once per distinct problem, not every poll
            self._follow_error = error
            self.notify(error, title="Live file", severity="warning", timeout=10, markup=False)

    def on_live_turns_read(self: RouterConsole, message: LiveTurnsRead) -> None:
        if message.path != self.follow_path:
            return  # a read of a file no longer followed
        self._follow_stamp, self._follow_error = message.stamp, ""
        fresh = message.turns[self.follow_seen :]
        if not fresh:
            return
        log = self.log_table
        at_end = log.selected_index is None or log.selected_index == len(self.session.turns) - 1
        with self.batch_update():
            for turn in fresh:
                self.session.turns.append(turn)
                log.upsert(len(self.session.turns) - 1)
            self.follow_seen = len(message.turns)
            if at_end:  # keep the operator's place unless they were watching the newest turn
                log.select(len(self.session.turns) - 1)
        self.autosave()
