"""Vectors of single texts (messages, labelled exemplars) kept on disk, one SQLite file per encoder.

The catalog's texts are cached per catalog (embed.EmbeddingStore, .npz files); a message is cached
here by the hash of its text, so a second eval of the same set and a restart of the console embed
nothing again. The file sits in the encoder's own cache folder, whose name is the encoder's model id
(which carries a digest of the model files): a changed model never reads another model's vectors.

Why SQLite (the standard library's): two processes (the console and an eval) may read and write the
same file; its transactions make every write whole or absent and its locks serialise writers, which
a folder of .npz files would have to rebuild by hand. WAL journal with synchronous=NORMAL: a crash
may lose the last few vectors (they are embedded again), never damage the file.

Bounded: at most `max_bytes` of vectors per encoder (default 256 MB: about 170,000 vectors of 384
floats); beyond it the least recently used tenth is dropped. A damaged file is replaced; a folder
that cannot be written leaves the vectors in memory and `problem` says why in one sentence.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

FILE_NAME = "texts.sqlite"
SCHEMA = 1
BUSY_TIMEOUT_MS = 5000  # another process writing: wait for it rather than fail
TOUCH_AFTER_S = 3600  # a hit refreshes its last-use time at most once an hour (a read stays a read)
PRUNE_TO = 0.9  # over the bound: keep the most recently used 90%
ROW_OVERHEAD = 64  # bytes per row besides the vector (key, time, b-tree), for the bound


class TextVectorCache:
    """key (20-byte text hash) -> float32 vector of one encoder, in `folder`/texts.sqlite."""

    def __init__(
        self, folder: Path, model_id: str, dim: int, max_bytes: int = 256 * 2**20, clock: Callable[[], float] = time.time
    ) -> None:
        self.folder = folder
        self.path = folder / FILE_NAME
        self.model_id = model_id
        self.dim = dim
        self.max_rows = max(1, max_bytes // (4 * dim + ROW_OVERHEAD))
        self.clock = clock  # seconds; last-use times order what the bound drops
        self.problem = ""
        self.hits = 0
        self.stored = 0
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self._rows = 0  # this process's estimate of the row count (re-read before pruning)
        self._opened = False

    # -- opening ------------------------------------------------------------------------------
    def _connection(self) -> sqlite3.Connection | None:
        if self._opened:
            return self._db
        self._opened = True
        existed = self.path.exists()
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            self._db = self._open()
        except sqlite3.OperationalError as exc:  # cannot open or write (disk full, file-size limit, locked)
            self._fail(exc, created=not existed)
        except sqlite3.DatabaseError:  # not a database, damaged: replace it
            self._discard()
            try:
                self._db = self._open()
            except (OSError, sqlite3.Error) as exc:
                self._fail(exc, created=True)
        except OSError as exc:
            self._fail(exc, created=not existed)
        return self._db

    def _open(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000, check_same_thread=False, isolation_level=None)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute("CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)")
            db.execute("CREATE TABLE IF NOT EXISTS vectors (key BLOB PRIMARY KEY, vector BLOB NOT NULL, used INTEGER NOT NULL) WITHOUT ROWID")
            db.execute("CREATE INDEX IF NOT EXISTS vectors_used ON vectors (used)")
            meta = dict(db.execute("SELECT name, value FROM meta").fetchall())
            want = {"schema": str(SCHEMA), "model_id": self.model_id, "dim": str(self.dim)}
            if meta != want:  # another layout or model in this file: start it afresh
                with db:
                    db.execute("BEGIN IMMEDIATE")
                    db.execute("DELETE FROM vectors")
                    db.execute("DELETE FROM meta")
                    db.executemany("INSERT INTO meta VALUES (?, ?)", list(want.items()))
            self._rows = int(db.execute("SELECT count(*) FROM vectors").fetchone()[0])
        except BaseException:
            db.close()
            raise
        return db

    def _discard(self) -> None:
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(OSError):
                os.unlink(f"{self.path}{suffix}")

    def _fail(self, exc: BaseException, created: bool = False) -> None:
        """Memory only from now on, in one sentence; a file this process began and could not finish
        is removed (nothing half-written is left behind)."""
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        self.problem = f"cannot write the embedding cache in {self.folder} ({reason}); kept in memory"
        if self._db is not None:
            with contextlib.suppress(sqlite3.Error):
                self._db.close()
        self._db = None
        if created:
            self._discard()

    # -- reading and writing ------------------------------------------------------------------
    def get(self, keys: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        """The vectors stored for `keys` (missing keys are absent from the result)."""
        if not keys:
            return {}
        with self._lock:
            db = self._connection()
            if db is None:
                return {}
            found: dict[bytes, np.ndarray] = {}
            stale: list[bytes] = []
            now = int(self.clock())
            try:
                unique = list(dict.fromkeys(keys))
                for start in range(0, len(unique), 500):  # SQLite's bound-parameter limit
                    part = unique[start : start + 500]
                    marks = ",".join("?" * len(part))
                    for key, blob, used in db.execute(f"SELECT key, vector, used FROM vectors WHERE key IN ({marks})", part):
                        vector = np.frombuffer(blob, dtype=np.float32)
                        if vector.shape != (self.dim,) or not np.isfinite(vector).all():
                            continue  # a damaged row: embedded again and overwritten
                        found[bytes(key)] = vector.copy()
                        if used < now - TOUCH_AFTER_S:
                            stale.append(bytes(key))
                if stale:
                    with db:
                        db.executemany("UPDATE vectors SET used = ? WHERE key = ?", [(now, k) for k in stale])
            except sqlite3.Error as exc:
                self._fail(exc)
                return found
        self.hits += len(found)
        return found

    def put(self, keys: Sequence[bytes], vectors: np.ndarray) -> None:
        if not len(keys):
            return
        rows = [(k, np.ascontiguousarray(v, dtype=np.float32).tobytes()) for k, v in zip(keys, vectors, strict=True)]
        with self._lock:
            db = self._connection()
            if db is None:
                return
            now = int(self.clock())
            try:
                with db:
                    db.execute("BEGIN IMMEDIATE")
                    db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)", [(k, b, now) for k, b in rows])
                self._rows += len(rows)
                self.stored += len(rows)
                if self._rows > self.max_rows:
                    self._prune(db)
            except sqlite3.Error as exc:
                self._fail(exc)

    def _prune(self, db: sqlite3.Connection) -> None:
        with db:
            db.execute("BEGIN IMMEDIATE")
            rows = int(db.execute("SELECT count(*) FROM vectors").fetchone()[0])
            keep = int(self.max_rows * PRUNE_TO)
            if rows > self.max_rows:
                db.execute(
                    "DELETE FROM vectors WHERE key IN (SELECT key FROM vectors ORDER BY used, key LIMIT ?)", (rows - keep,)
                )
                rows = keep
        self._rows = rows

    def count(self) -> int:
        with self._lock:
            db = self._connection()
            if db is None:
                return 0
            try:
                return int(db.execute("SELECT count(*) FROM vectors").fetchone()[0])
            except sqlite3.Error:
                return 0

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                with contextlib.suppress(sqlite3.Error):
                    self._db.close()
            self._db = None
            self._opened = False
