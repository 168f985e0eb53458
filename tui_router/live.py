"""Live session files: turns that arrive from outside the console (the MCP server), one writer.

`LiveSessionWriter` keeps the current file's turns in memory and writes the whole file with the
session module's `atomic_write_text` (temp file + fsync + rename), so a reader (the console
following the file, `eval`, `replay`) never sees half a file. The text is exactly what
`dumps_session` writes: each turn's TOML is made once and array-of-tables entries concatenate.

Appending is in memory and cheap; writing is batched: whatever arrived while the previous write
ran goes into the next one (group commit), so a burst of calls costs one fsync, not one each.
A crash can lose only the turns of the write in progress (milliseconds). One process owns each
file: a new file name is reserved with O_EXCL, so two servers never write the same file.

Rotation: a new file when the UTC day changes or when the next turn would take the file past
`max_bytes`. Files are `<folder>/mcp-YYYY-MM-DD.toml`, then `-2`, `-3`, ... for the same day.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import tomli_w

from .errors import SessionError
from .session import Session, SessionInfo, Turn, atomic_write_text, session_to_dict

DEFAULT_MAX_BYTES = 1_000_000  # about 1,500 routed turns; keeps each rewrite around a few ms
FILE_PREFIX = "mcp"


def turn_toml(info: SessionInfo, turn: Turn) -> str:
    """One `[[turns]]` entry exactly as `dumps_session` writes it."""
    one = session_to_dict(Session(session=info, turns=[turn]))
    return tomli_w.dumps({"turns": one["turns"]}, multiline_strings=True)


def head_toml(info: SessionInfo) -> str:
    return tomli_w.dumps({"session": session_to_dict(Session(session=info))["session"]}, multiline_strings=True)


def reserve_path(folder: Path, stem: str) -> Path:
    """<folder>/<stem>.toml or <stem>-N.toml, created empty with O_EXCL so no other process takes it."""
    folder.mkdir(parents=True, exist_ok=True)
    n = 1
    while True:
        candidate = folder / (f"{stem}.toml" if n == 1 else f"{stem}-{n}.toml")
        try:
            fd = os.open(candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            n += 1
            continue
        os.close(fd)
        return candidate


class _LiveFile:
    def __init__(self, path: Path, info: SessionInfo, day: str) -> None:
        self.path = path
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
        self._pending: dict[Path, _LiveFile] = {}  # files with turns not yet on disk
        self._lock = threading.Lock()  # append (loop) vs take (writer thread)
        self._write_lock = threading.Lock()  # one write at a time, in order
        self.last_error = ""
        self.on_append: Callable[[], None] | None = None  # e.g. wake the writer task

    def _start_file(self, now: datetime) -> _LiveFile:
        day = now.strftime("%Y-%m-%d")
        path = reserve_path(self.folder, f"{FILE_PREFIX}-{day}")
        info = SessionInfo(
            id=path.stem,
            catalog=self.catalog,
            created=now.strftime("%Y-%m-%dT%H:%M:%SZ"),
            backend=self.backend,
            model=self.model,
        )
        live = _LiveFile(path, info, day)
        self._files.append(live)
        return live

    @property
    def files(self) -> list[Path]:
        return [live.path for live in self._files]

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
                live = self.current = self._start_file(now)
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
        is reported in `last_error`; nothing already on disk is touched.
        """
        with self._write_lock:
            with self._lock:  # the texts are made here, not per append: a burst costs one join
                jobs = [(live, live.text(), len(live.turns)) for live in self._pending.values()]
                self._pending = {}
            done = 0
            for live, text, count in jobs:
                try:
                    # The one place a live file is written: the session-file lock (issue 14b) wraps this call.
                    atomic_write_text(live.path, text)
                except OSError as exc:
                    self.last_error = f"{live.path}: cannot write the live session ({exc.strerror or exc})"
                    with self._lock:
                        self._pending.setdefault(live.path, live)
                    continue
                live.on_disk = count
                done += 1
            return done


def open_live(path: Path) -> Session:
    """Read a live file for following; an empty file (reserved, nothing written yet) has no turns."""
    from .session import load_session

    try:
        if path.stat().st_size == 0:
            return Session(session=SessionInfo(id=path.stem), path=path)
    except OSError as exc:
        raise SessionError(f"{path}: cannot read the live session ({exc.strerror or exc})") from None
    return load_session(path)
