"""What a run's first pass over the session files keeps on disk, so no pass holds them all in memory.

- `Spool`: the turns a run routes, one JSON line each in run order, with a byte offset every
  CHECKPOINT lines; shards read their slice [lo, hi) of it.
- `RepeatIndex`: the turns that are the same turn in two files (session.repeated_turns: a followed
  live file copied into a console's session, a backup), found with SQLite on disk instead of a
  dict of every timed turn of the archive.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

CHECKPOINT = 256


class Spool:
    """Written through a buffer; when the disk refuses (full, a file-size limit) the spool goes on in
    memory, so a run never fails for want of scratch space (it only holds more)."""

    FLUSH = 4 << 20

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offsets: list[int] = []
        self.count = 0
        self.size = 0
        self._buffer = bytearray()
        self._memory: bytearray | None = None
        self._flushed = 0
        self._closed = False

    def write(self, item: dict[str, Any]) -> int:
        """Append one item; returns its position."""
        if self.count % CHECKPOINT == 0:
            self.offsets.append(self.size)
        line = json.dumps(item, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
        self.size += len(line)
        if self._memory is not None:
            self._memory += line
        else:
            self._buffer += line
            if len(self._buffer) >= self.FLUSH:
                self._flush()
        self.count += 1
        return self.count - 1

    def _flush(self) -> None:
        if self._memory is not None or not self._buffer:
            return
        try:
            with self.path.open("ab") as handle:
                handle.write(self._buffer)
            self._flushed += len(self._buffer)
            self._buffer = bytearray()
        except OSError:
            try:
                kept = self.path.read_bytes()[: self._flushed] if self._flushed else b""
                self.path.unlink(missing_ok=True)
            except OSError:
                kept = b""
            if len(kept) != self._flushed:  # cannot even read back what was written
                raise
            self._memory = bytearray(kept) + self._buffer
            self._buffer = bytearray()

    @classmethod
    def on_disk(cls, path: Path, offsets: list[int], count: int) -> Spool:
        """A closed spool on disk, to read (another process's view of the run's spool)."""
        spool = cls(path)
        spool.offsets, spool.count, spool._closed = offsets, count, True
        return spool

    def close(self) -> None:
        if not self._closed:
            self._flush()
            self._closed = True

    @property
    def in_memory(self) -> bool:
        return self._memory is not None

    def read(self, lo: int, hi: int) -> bytes:
        """The lines of items lo..hi-1, as they were written."""
        if hi <= lo:
            return b""
        start = self.offsets[lo // CHECKPOINT]
        if self._memory is not None:
            return _slice_lines(self._memory, start, lo % CHECKPOINT, hi - lo)
        with self.path.open("rb") as handle:
            handle.seek(start)
            for _ in range(lo % CHECKPOINT):
                handle.readline()
            return b"".join(handle.readline() for _ in range(hi - lo))

    def items(self, lo: int = 0, hi: int | None = None) -> Iterator[dict[str, Any]]:
        hi = self.count if hi is None else hi
        for line in self.read(lo, hi).splitlines():
            yield json.loads(line)


def _slice_lines(data: bytearray, start: int, skip: int, take: int) -> bytes:
    for _ in range(skip):
        start = data.index(b"\n", start) + 1
    end = start
    for _ in range(take):
        end = data.index(b"\n", end) + 1
    return bytes(data[start:end])


def lines_of(chunk: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in chunk.splitlines() if line]


class RepeatIndex:
    """The timed turns of every file (key: message, time, n-th such turn of its file), to tell which
    are held by two files and which copy counts (session.repeated_turns' rule)."""

    def __init__(self, path: Path) -> None:
        self.problem = ""
        try:
            self.db = self._open(str(path))
        except sqlite3.Error as exc:  # the disk refuses: in memory (it only holds more)
            self.problem = str(exc)
            self.db = self._open(":memory:")
        self._rows: list[tuple] = []

    @staticmethod
    def _open(where: str) -> sqlite3.Connection:
        db = sqlite3.connect(where)
        db.execute("PRAGMA journal_mode=OFF")
        db.execute("PRAGMA synchronous=OFF")
        db.execute("CREATE TABLE IF NOT EXISTS timed (key BLOB, file INTEGER, labelled INTEGER, live INTEGER, turn INTEGER, tag INTEGER)")
        return db

    def add_file(self, file: int, turns: list[Any], live: bool, tags: dict[int, int]) -> None:
        """`tags`: turn index -> the caller's id for that turn (a case); -1 for the others."""
        seen: dict[tuple[str, str], int] = {}
        for index, turn in enumerate(turns):
            if turn.at is None:
                continue  # no time: nothing tells a copy from another turn with the same words
            nth = seen[(turn.message, repr(turn.at))] = seen.get((turn.message, repr(turn.at)), 0) + 1
            key = hashlib.sha256(json.dumps([turn.message, repr(turn.at), nth], ensure_ascii=False).encode("utf-8")).digest()[:16]
            self._rows.append((key, file, bool(turn.label), live, index, tags.get(index, -1)))
        if len(self._rows) > 10_000:
            self._flush()

    def _flush(self) -> None:
        try:
            self.db.executemany("INSERT INTO timed VALUES (?, ?, ?, ?, ?, ?)", self._rows)
        except sqlite3.Error as exc:  # the disk filled up: carry on in memory with what is there
            self.problem = str(exc)
            memory = self._open(":memory:")
            self.db.backup(memory)
            self.db.close()
            self.db = memory
            self.db.executemany("INSERT INTO timed VALUES (?, ?, ?, ?, ?, ?)", self._rows)
        self._rows = []

    def repeated(self) -> Iterator[tuple[int, int, int]]:
        """(file, turn, tag) of each turn to leave out: of each group of turns two or more files
        hold, all but one: the first labelled, else the first not live, else the first."""
        self._flush()
        self.db.execute("CREATE INDEX by_key ON timed (key)")
        keys = [k for (k,) in self.db.execute("SELECT key FROM timed GROUP BY key HAVING COUNT(DISTINCT file) > 1")]
        for key in keys:
            members = list(self.db.execute("SELECT file, turn, labelled, live, tag FROM timed WHERE key = ? ORDER BY rowid", (key,)))
            keep = sorted(members, key=lambda m: (not m[2], bool(m[3])))[0]  # stable: file order among equals
            for file, turn, _, _, tag in members:
                if (file, turn) != (keep[0], keep[1]):
                    yield file, turn, tag

    def close(self) -> None:
        self.db.close()
