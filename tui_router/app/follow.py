"""Following live session files (the MCP server writes them): new turns appear as they arrive.

Follow one file, or a folder: then every live file in it (`mcp-YYYY-MM-DD[-N].toml`, in the order
the server starts them), so a rotation by day or size carries on without the operator. A timer
stats the files; only a file whose mtime or size changed is read and parsed, in a thread worker,
so the UI never waits on the disk. The live files have one writer (the server): the console copies
their new turns into its own session, where the operator's labels are autosaved as usual, so the
two processes never write the same file. The copy is an ordinary session: eval and replay read it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from textual import work
from textual.message import Message

from ..errors import UserError
from ..live import FILE_PREFIX, open_live
from ..session import LIVE_FILE_NAME, Turn, is_live_file

if TYPE_CHECKING:
    from .app import RouterConsole

FOLLOW_INTERVAL = 0.5  # seconds between checks; a stat costs microseconds

Stamp = tuple[int, int]


def live_files_in(folder: Path) -> list[Path]:
    """The live files of a folder in the order the server started them (day, then -2, -3, ...)."""
    found = []
    for path in folder.glob(f"{FILE_PREFIX}-*.toml"):
        match = LIVE_FILE_NAME.match(path.name)
        if match and is_live_file(path):  # a person's own file so named is not followed
            found.append(((match.group(1), int(match.group(2) or 1)), path))
    return [path for _, path in sorted(found)]


class LiveTurnsRead(Message):
    """Followed files changed and were read: each file's turns, in file order."""

    def __init__(self, reads: list[tuple[Path, Stamp, list[Turn]]]) -> None:
        super().__init__()
        self.reads = reads


class LiveReadFailed(Message):
    def __init__(self, path: Path, stamp: Stamp | None, error: str) -> None:
        super().__init__()
        self.path = path
        self.stamp = stamp
        self.error = error


class LiveFollow:
    """Mixed into RouterConsole: `follow_file(path)` follows a live file or a folder of them."""

    follow_path: Path | None = None
    _follow_seen: dict[Path, int]  # turns of each followed file already copied into the session
    _follow_stamps: dict[Path, Stamp]
    _follow_error: str = ""
    _follow_timer = None

    @property
    def follow_seen(self) -> dict[Path, int]:
        return dict(getattr(self, "_follow_seen", {}))

    def follow_file(self: RouterConsole, path: Path, interval: float = FOLLOW_INTERVAL) -> bool:
        path = Path(path).expanduser()
        if self.session.path is not None and path.resolve() == self.session.path.resolve():
            self.notify("This console saves to that file; follow a live file the MCP server writes instead.", severity="error", markup=False)
            return False
        if not path.exists():
            self.notify(f"{path}: no such file or folder to follow.", severity="error", markup=False)
            return False
        if self._follow_timer is not None:
            self._follow_timer.stop()
        again = self.follow_path is not None and path.resolve() == self.follow_path.resolve()
        if not again:  # something else: all its turns are new here
            self.follow_path, self._follow_error = path, ""
            self._follow_seen, self._follow_stamps = {}, {}
        self._follow_timer = self.set_interval(interval, self._check_live_files)
        self._check_live_files()
        if not again:
            what = f"the live files in {path}" if path.is_dir() else str(path)
            self.notify(f"Following {what}: new turns are added here as they arrive.", markup=False)
        return True

    def _check_live_files(self: RouterConsole) -> None:
        target = self.follow_path
        if target is None:
            return
        files = live_files_in(target) if target.is_dir() else [target]
        changed: list[tuple[Path, Stamp]] = []
        for path in files:
            try:
                info = path.stat()
            except OSError as exc:
                self._live_problem(f"{path}: cannot read it ({exc.strerror or exc})")
                continue
            stamp = (info.st_mtime_ns, info.st_size)
            if stamp != self._follow_stamps.get(path):
                changed.append((path, stamp))
        if changed:
            self._read_live_files(changed)

    @work(thread=True, exclusive=True, group="follow", exit_on_error=False)
    def _read_live_files(self: RouterConsole, changed: list[tuple[Path, Stamp]]) -> None:
        reads = []
        for path, stamp in changed:
            try:
                reads.append((path, stamp, open_live(path).turns))
            except UserError as exc:
                self.post_message(LiveReadFailed(path, stamp, "; ".join(exc.lines()[:3])))
        if reads:
            self.post_message(LiveTurnsRead(reads))

    def on_live_read_failed(self: RouterConsole, message: LiveReadFailed) -> None:
        if message.stamp is not None:
            self._follow_stamps[message.path] = message.stamp  # read again when it changes, not every check
        self._live_problem(message.error)

    def _live_problem(self: RouterConsole, error: str) -> None:
        if error != self._follow_error:  # once per distinct problem, not every check
            self._follow_error = error
            self.notify(error, title="Live file", severity="warning", timeout=10, markup=False)

    def on_live_turns_read(self: RouterConsole, message: LiveTurnsRead) -> None:
        fresh: list[Turn] = []
        for path, stamp, turns in message.reads:
            if self.follow_path is None or (path != self.follow_path and path.parent != self.follow_path):
                continue  # a read of something no longer followed
            seen = self._follow_seen.get(path, 0)
            fresh += turns[seen:]
            self._follow_seen[path] = max(seen, len(turns))
            self._follow_stamps[path] = stamp
            self._follow_error = ""
        if not fresh:
            return
        log = self.log_table
        at_end = log.selected_index is None or log.selected_index == len(self.session.turns) - 1
        with self.batch_update():
            for turn in fresh:
                log.upsert(self.workspace.append_turn(turn))
            if at_end:  # keep the operator's place unless they were watching the newest turn
                log.select(len(self.session.turns) - 1)
        self.autosave()
