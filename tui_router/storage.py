"""Session files on disk with one writer each: an OS lock, names that cannot collide, no blind overwrite.

* **One writer.** A process that writes a session file holds an exclusive `flock` on a sidecar
  file `.<name>.lock` beside it. A second console or process that wants to write the same file
  is refused with a sentence naming the holder's pid. The OS drops the lock when the holder
  exits, even after kill -9, so a stale lock never blocks anyone. Readers (eval, replay, route)
  take no lock: every write is atomic, so they see a whole old file or a whole new one.
* **No sidecar left behind.** Every holder removes its sidecar when it lets the lock go (`release`:
  the console on quit, SIGTERM/SIGHUP, switching or saving under another name; `review` after each
  label; the live writer once a rotated file is done), and whatever this process still holds is let
  go at interpreter exit, so a clean exit leaves no `.lock` files. Only a killed process leaves
  one, which blocks no one (the OS dropped its lock). Removing is safe because of two rules. Only
  the holder removes it, while it still holds the flock, and only when the path still names the
  file it locked; and whoever takes a flock checks afterwards that the path still names the file
  it locked, and starts over when it does not (it opened the sidecar just before the holder
  removed it, and locked a file no one else will ever see). So at any moment at most one process
  holds the lock of the file at the path. Without the second rule, removing lock files races (two
  holders); a process refused the lock never touches the sidecar.
* **New files never collide.** Session ids carry a random suffix (`session.new_session_id`) and
  a new file is made with O_EXCL: when two consoles pick the same name, the second moves on to
  `<stem>-2.toml`.
* **Changed on disk.** The file's identity (inode, size, mtime) is noted when it is claimed and
  after every write; a write that finds something else there (an editor, a tool that ignores the
  lock) is refused instead of overwriting it.

Locking needs `fcntl` (POSIX); where it is missing, files are written without the lock and the
changed-on-disk check still applies.
"""

from __future__ import annotations

import atexit
import errno
import os
import threading
from pathlib import Path

from .errors import SessionError
from .session import atomic_write_text, is_live_file

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]


class SessionBusy(SessionError):
    """Another process holds the session file's lock."""


class SessionChangedOnDisk(SessionError):
    """The file is not what this process last read or wrote."""


CONSOLE = "console"
SERVER = "mcp-serve"  # the MCP server writing a live session file (live.py)

Stamp = tuple[int, int, int] | None  # (inode, size, mtime_ns); None: no file


def stamp_of(path: Path) -> Stamp:
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return None
    return (info.st_ino, info.st_size, info.st_mtime_ns)


def lock_path_for(path: Path) -> Path:
    return path.with_name(f".{path.name}.lock")


class SessionFile:
    """A session file this process writes: the lock is held until `release`."""

    def __init__(self, path: Path, lock_fd: int | None, stamp: Stamp, role: str = CONSOLE) -> None:
        self.path = path
        self._lock_fd = lock_fd
        self._role = role
        self._stamp = stamp
        self._write_lock = threading.Lock()
        self._first_write = True
        self.created = False  # claim(create=True) made the file (empty)

    @classmethod
    def claim(cls, path: Path, *, create: bool = False, role: str = CONSOLE) -> SessionFile:
        """Lock `path` for writing; `create`: it must not exist yet and is made empty (O_EXCL).

        `role` (CONSOLE or SERVER) is noted in the lock file so a refused process is told who writes.
        Raises SessionBusy when another process holds the lock and FileExistsError (create) when
        the name is taken.
        """
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = _lock(path, role)
        try:
            if create:
                os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o644))
            claimed = cls(path, fd, stamp_of(path), role)
            claimed.created = create
            return claimed
        except BaseException:
            if fd is not None:
                _unlock(path, fd)  # we hold it: the sidecar we made (or found) goes too
            raise

    def write(self, text: str) -> Path | None:
        """Atomic write, refused when the file changed on disk since it was claimed or last written.

        Returns the backup this write made (see `keep_comments`), else None."""
        with self._write_lock:
            found = stamp_of(self.path)  # first: a folder now a file fails here, "Not a directory"
            if self._retake_lock():
                found = stamp_of(self.path)  # read again under the new lock
            if found is not None and found != self._stamp:
                raise SessionChangedOnDisk(
                    f"{self.path}: the file changed on disk since this console read or wrote it; it was not "
                    "overwritten (save under another name with ctrl+s)"
                )
            backup = keep_comments(self.path) if self._first_write and found is not None else None
            atomic_write_text(self.path, text)
            self._first_write = False
            self._stamp = stamp_of(self.path)
            return backup

    def _retake_lock(self) -> bool:
        """Lock the path again when our sidecar is gone (its folder was removed, and the write below
        would make the folder again with no lock in it): else a second console could claim the file
        meanwhile. Raises SessionBusy when one already has; nothing is written then. True: retaken."""
        held = self._lock_fd
        if held is None or _names_locked_file(lock_path_for(self.path), held):
            return False
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock_fd = _lock(self.path, self._role)
        os.close(held)  # the old flock was on a file no one can open any more
        return True

    def discard_if_empty(self) -> None:
        """Remove the file `claim(create=True)` made, while still holding its lock, when nothing was
        ever written to it and it is still the empty file claimed (a write that failed left it)."""
        with self._write_lock:
            empty = self._stamp is not None and self._stamp[1] == 0 and stamp_of(self.path) == self._stamp
            if self.created and self._lock_fd is not None and self._first_write and empty:
                try:
                    os.unlink(self.path)
                except OSError:
                    pass

    def release(self) -> None:
        """Let the lock go, removing the sidecar first while still holding it (see the module's
        note), so a folder of finished files is not littered with `.lock` files."""
        if self._lock_fd is None:
            return
        fd, self._lock_fd = self._lock_fd, None
        _unlock(self.path, fd)

    @property
    def locked(self) -> bool:
        return self._lock_fd is not None


def backup_path_for(path: Path) -> Path:
    return path.with_name(path.name + ".bak")  # not *.toml: eval and the queue do not read it as a session


def keep_comments(path: Path) -> Path | None:
    """Before the first write over a hand-written session file: the writer (tomli-w) cannot keep its
    comments, so a file with comment lines is copied once to `<name>.bak` (an existing backup is
    never replaced). Returns the backup made now, else None."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    if not any(line.lstrip().startswith("#") for line in text.splitlines()):
        return None
    backup = backup_path_for(path)
    if backup.exists() or backup.is_symlink():
        return None
    try:
        atomic_write_text(backup, text)
    except OSError as exc:
        raise SessionError(f"{path}: its comments cannot be kept in {backup.name} ({exc.strerror or exc}); nothing was overwritten") from None
    return backup


def _unlock(path: Path, fd: int) -> None:
    """Remove `path`'s sidecar if it is still the file this process locked as `fd`, then drop the lock."""
    try:
        if _names_locked_file(lock_path_for(path), fd):
            os.unlink(lock_path_for(path))
    except OSError:
        pass  # a sidecar left behind is only litter; the lock is dropped below either way
    finally:
        os.close(fd)  # closing the descriptor drops the flock


def _names_locked_file(lock: Path, fd: int) -> bool:
    """Whether the sidecar path still names the file open as `fd` (not removed, not replaced)."""
    try:
        at_path, held = os.lstat(lock), os.fstat(fd)
    except OSError:
        return False
    return (at_path.st_dev, at_path.st_ino) == (held.st_dev, held.st_ino)


# A holder removing its sidecar between our open and our flock sends us round again; each round
# needs another holder to come and go in that window, so a handful is plenty.
LOCK_ROUNDS = 50


def _lock(path: Path, role: str = CONSOLE) -> int | None:
    if fcntl is None:  # pragma: no cover
        return None
    for _ in range(LOCK_ROUNDS):
        fd = _lock_once(path, role)
        if fd is not None:
            return fd
    raise SessionError(f"{path}: cannot lock the session file (its lock file kept being replaced)")


def _lock_once(path: Path, role: str) -> int | None:
    """The lock's descriptor; None when the sidecar locked was removed meanwhile (try again)."""
    lock = lock_path_for(path)
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0), 0o644)
    except OSError as exc:
        raise SessionError(f"{path}: cannot lock the session file ({exc.strerror or exc})") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        holder, held_by = _holder(fd)
        os.close(fd)
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            if held_by == SERVER:
                raise SessionBusy(
                    f"{path}: a tui-router mcp-serve{holder} is writing this live session; follow it "
                    f"read-only with tui-router open --follow {path}, or open a copy of the file"
                ) from None
            raise SessionBusy(
                f"{path}: another tui-router console{holder} is writing this session; close it first, "
                "or open a copy of the file"
            ) from None
        raise SessionError(f"{path}: cannot lock the session file ({exc.strerror or exc})") from None
    if not _names_locked_file(lock, fd):  # its holder removed it between our open and our flock
        os.close(fd)
        return None
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()} {role}\n".encode(), 0)
    except OSError:
        pass  # a full disk: the note only names the holder for a refusal; the flock is what locks
    return fd


def _holder(fd: int) -> tuple[str, str]:
    """(" (pid N)" or "", the holder's role) from the lock file's "<pid> <role>" line."""
    try:
        words = os.pread(fd, 64, 0).decode("ascii").split()
    except (OSError, UnicodeDecodeError):
        return "", CONSOLE
    pid = f" (pid {words[0]})" if words and words[0].isdigit() else ""
    return pid, SERVER if words[1:] == [SERVER] else CONSOLE


# -- the files this process holds, by absolute path -----------------------------------------------

_held: dict[str, SessionFile] = {}
_held_lock = threading.Lock()


def _key(path: Path) -> str:
    return os.path.abspath(path)


def claim_session_file(path: str | Path) -> SessionFile:
    """Claim an existing (or not yet existing) file for writing; held until `release_session_file`."""
    path = Path(path)
    with _held_lock:
        held = _held.get(_key(path))
        if held is None:
            held = _held[_key(path)] = SessionFile.claim(path)
        return held


def create_claimed(folder: Path, stem: str, role: str = CONSOLE) -> SessionFile:
    """A new file `<stem>.toml` (or `<stem>-2.toml` ...) made with O_EXCL and claimed; never one in use.

    Raises OSError when the folder cannot be made (it is a file, no permission).
    """
    folder.mkdir(parents=True, exist_ok=True)  # here, not in claim: a folder that is a file must not loop
    n = 1
    while True:
        candidate = folder / (f"{stem}.toml" if n == 1 else f"{stem}-{n}.toml")
        n += 1
        if candidate.exists() or candidate.is_symlink():
            continue
        try:
            return SessionFile.claim(candidate, create=True, role=role)
        except (SessionBusy, FileExistsError):
            continue  # another process took this name a moment ago


def create_session_file(folder: Path, stem: str) -> Path:
    """`create_claimed` for a console: held until `release_session_file`."""
    claimed = create_claimed(folder, stem)
    with _held_lock:
        _held[_key(claimed.path)] = claimed
    return claimed.path


def write_session_text(path: str | Path, text: str) -> Path | None:
    """Write a session file this process writes (claiming it first if needed); the comment backup
    this write made, if any. A live file (the MCP server's recording, session.is_live_file) is refused:
    it has one writer, the server (live.py writes it through SessionFile, not through here)."""
    if is_live_file(path):
        raise SessionError(f"{path} is a live file the MCP server records; the console never writes it (nothing was written)")
    return claim_session_file(path).write(text)


def release_session_file(path: str | Path | None) -> None:
    if path is None:
        return
    with _held_lock:
        held = _held.pop(_key(Path(path)), None)
    if held is not None:
        held.discard_if_empty()  # made for a session whose first save failed (disk full): no empty file left
        held.release()


def release_all() -> None:
    """Let go of every file this process still holds (at interpreter exit: a console that stopped
    before its own release, e.g. on an error before it drew, leaves no sidecar)."""
    with _held_lock:
        held = list(_held.values())
        _held.clear()
    for claimed in held:
        claimed.release()


atexit.register(release_all)
