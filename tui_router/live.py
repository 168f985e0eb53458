"""Live session files: turns that arrive from outside the console (the MCP server), one writer.

`LiveSessionWriter` keeps the current file's turns in memory and writes the whole file atomically
(temp file + fsync + rename), so a reader (the console following the file, `eval`, `replay`) never
sees half a file. The text is exactly what `dumps_session` writes: each turn's TOML is made once
and array-of-tables entries concatenate.

Appending is in memory and cheap; writing is batched: whatever arrived while the previous write
ran goes into the next one (group commit), so a burst of calls costs one fsync, not one each.
A crash can lose only the turns of the write in progress (milliseconds).

One process writes each file, with the session-file lock (storage.py): a new file is made with
O_EXCL and claimed, and the lock is held until the file's last turn is written (after rotation)
or the server stops; then its `.lock` sidecar is removed as the lock is let go (storage.py says
why that is safe). A second server picks the next free name; a console asked to open the file
for writing is refused with a sentence (`open --follow` only reads, and takes no lock). A file
changed on disk by someone else is not overwritten: its unwritten turns move to a new file.

Rotation: a new file when the UTC day changes or when the next turn would take the file past
`max_bytes`. Files are `<folder>/mcp-YYYY-MM-DD.toml`, then `-2`, `-3`, ... for the same day, with
`live = true` in their [session]: a file a person names so is not taken for one.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from . import tomlio
from .errors import SessionError
from .session import Session, SessionInfo, Turn, session_to_dict
from .storage import SERVER, SessionBusy, SessionChangedOnDisk, SessionFile, create_claimed

DEFAULT_MAX_BYTES = 1_000_000  # about 1,500 routed turns; keeps each rewrite around a few ms
FILE_PREFIX = "mcp"


def turn_toml(info: SessionInfo, turn: Turn) -> str:
    """One `[[turns]]` entry exactly as `dumps_session` writes it."""
    one = session_to_dict(Session(session=info, turns=[turn]))
    text = tomlio.dumps({"turns": one["turns"]})
    if not text.startswith("[[turns]]"):  # a short turn is written inline, read back as session.turns
        text = "[[turns]]\n" + tomlio.dumps(one["turns"][0])  # (as workspace._turn_toml does)
    return text


def head_toml(info: SessionInfo) -> str:
    return tomlio.dumps({"session": session_to_dict(Session(session=info))["session"]})


class _LiveFile:
    def __init__(self, claimed: SessionFile, info: SessionInfo, day: str) -> None:
        self.claimed = claimed  # the lock, held until the file's last turn is written
        self.path = claimed.path
        self.info = info
        self.day = day
        self.head = head_toml(info)
        self.turns: list[str] = []
        self.size = len(self.head.encode())
        self.on_disk = 0  # turns written so far

    def text(self) -> str:
        return self.head + "\n" + "\n".join(self.turns)


class LiveSessionWriter:
    """The single writer of live session files; `append` from the event loop, `write_pending` from a thread."""

    def __init__(
        self,
        folder: Path,
        *,
        catalog: str,
        backend: str | None = None,
        model: str | None = None,
        max_bytes: int = DEFAULT_MAX_BYTES,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self.folder = folder
        self.catalog = catalog
        self.backend = backend
        self.model = model
        self.max_bytes = max_bytes
        self.clock = clock or (lambda: datetime.now(UTC))
        self.current: _LiveFile | None = None
        self._files: list[_LiveFile] = []  # every file this writer started, oldest first
        self.appended = 0
        self.refused = 0  # turns no file could be started for (folder gone, disk full): never recorded
        self._pending: dict[Path, _LiveFile] = {}  # files with turns not yet on disk
        self._lock = threading.Lock()  # append (loop) vs take (writer thread)
        self._write_lock = threading.Lock()  # one write at a time, in order
        self.last_error = ""
        self.on_append: Callable[[], None] | None = None  # e.g. wake the writer task

    def _start_file(self, now: datetime) -> _LiveFile:
        day = now.strftime("%Y-%m-%d")
        claimed = create_claimed(self.folder, f"{FILE_PREFIX}-{day}", role=SERVER)
        info = SessionInfo(
            id=claimed.path.stem,
            catalog=self.catalog,
            created=now.strftime("%Y-%m-%dT%H:%M:%SZ"),
            backend=self.backend,
            model=self.model,
            live=True,  # what marks it as the server's (session.is_live_file), not its name alone
        )
        live = _LiveFile(claimed, info, day)
        self._files.append(live)
        return live

    def _release_if_done(self, live: _LiveFile) -> None:
        """Drop the lock of a file that gets no more turns (rotated away, all written), and its
        sidecar: a day of rotations would otherwise leave a `.lock` beside every file. Caller holds _lock."""
        if live is not self.current and live.path not in self._pending:
            live.claimed.release()

    def _move_unwritten(self, live: _LiveFile) -> _LiveFile:
        """The file changed on disk: its unwritten turns start a new file. Caller holds _lock."""
        moved = self._start_file(self.clock().astimezone(UTC))
        for text in live.turns[live.on_disk :]:
            moved.turns.append(text)  # a turn's TOML does not depend on its file's header
            moved.size += len(text.encode()) + 1
        del live.turns[live.on_disk :]
        self._pending.pop(live.path, None)
        if moved.turns:
            self._pending[moved.path] = moved
        if self.current is live:
            self.current = moved
        self._release_if_done(live)
        return moved

    @property
    def files(self) -> list[Path]:
        return [live.path for live in self._files]

    @property
    def unwritten(self) -> int:
        """Turns not on disk: appended but not written yet (a failed write keeps them for the next
        attempt), and those no file could be started for."""
        return self.refused + sum(len(live.turns) - live.on_disk for live in self._files)

    @property
    def written(self) -> int:
        """Turns on disk, over every file."""
        return sum(live.on_disk for live in self._files)

    def append(self, turn: Turn) -> Path:
        """Add a turn to the current file (rotating first when due); it is written by the next write."""
        now = self.clock().astimezone(UTC)
        with self._lock:
            live = self.current
            day = now.strftime("%Y-%m-%d")
            if live is None:
                live = self.current = self._start_file(now)
            text = turn_toml(live.info, turn)
            size = len(text.encode()) + 1
            if live.day != day or (live.turns and live.size + size > self.max_bytes):
                old, live = live, self._start_file(now)
                self.current = live
                self._release_if_done(old)  # else released once its pending turns are written
                text = turn_toml(live.info, turn)
            live.turns.append(text)
            live.size += size
            self.appended += 1
            self._pending[live.path] = live
        if self.on_append is not None:
            self.on_append()
        return live.path

    def has_pending(self) -> bool:
        with self._lock:
            return bool(self._pending)

    def write_pending(self) -> int:
        """Write every file with unwritten turns (blocking: call it from a thread). Returns files written.

        A failed write (disk full, folder removed) keeps the turns pending for the next attempt and
        is reported in `last_error`; nothing already on disk is touched. A file that changed on disk
        (an editor, a tool that ignores the lock), or one another process claimed after its sidecar
        was removed, is left as it is and its unwritten turns go to a new file with the next write.
        """
        with self._write_lock:
            with self._lock:  # the texts are made here, not per append: a burst costs one join
                jobs = [(live, live.text(), len(live.turns)) for live in self._pending.values()]
                self._pending = {}
            done = 0
            for live, text, count in jobs:
                try:
                    live.claimed.write(text)  # atomic, under this server's lock, refused if changed on disk
                except (SessionChangedOnDisk, SessionBusy) as exc:
                    # busy: its sidecar was removed and another process claimed the file meanwhile
                    what = "changed on disk" if isinstance(exc, SessionChangedOnDisk) else "is claimed by another process"
                    changed = f"{live.path}: the live file {what}, so it was not overwritten"
                    try:
                        with self._lock:
                            moved = self._move_unwritten(live)
                    except (OSError, SessionError) as exc:
                        self.last_error = f"{changed}; no new file could be started ({_reason(exc)})"
                        with self._lock:
                            self._pending.setdefault(live.path, live)  # the next write tries again
                        continue
                    self.last_error = f"{changed}; its unwritten turns go to {moved.path}"
                    continue
                except (OSError, SessionError) as exc:
                    self.last_error = f"{live.path}: cannot write the live session ({_reason(exc)})"
                    with self._lock:
                        self._pending.setdefault(live.path, live)
                    continue
                live.on_disk = count
                done += 1
                with self._lock:
                    self._release_if_done(live)
            return done

    def close(self) -> None:
        """Release every file's lock and remove its sidecar (the server is stopping; call after the
        last `write_pending`)."""
        with self._lock:
            for live in self._files:
                if live.on_disk == 0:
                    live.claimed.discard_if_empty()  # never written (disk full): no empty file left as litter
                live.claimed.release()


def _reason(exc: Exception) -> str:
    return str(exc.strerror or exc) if isinstance(exc, OSError) else str(exc)


def open_live(path: Path) -> Session:
    """Read a live file for following; an empty file (reserved, nothing written yet) has no turns."""
    from .session import load_session

    try:
        if path.stat().st_size == 0:
            return Session(session=SessionInfo(id=path.stem), path=path)
    except OSError as exc:
        raise SessionError(f"{path}: cannot read the live session ({exc.strerror or exc})") from None
    return load_session(path)
