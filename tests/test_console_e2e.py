"""End to end: the real `tui-router` in a pseudo-terminal, driven by the bytes a terminal sends.

Types a message right after launch (before the app has drawn or put the terminal in raw mode),
pastes with bracketed paste, routes, replays from the palette, labels and quits; then checks the
session file: every message exactly as submitted, nothing doubled or lost (issue 13).
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios
import threading
import time
import tomllib
from pathlib import Path

import pytest
from app_harness import write_catalog

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pseudo-terminal")

ESC = "\x1b"
PASTE = "first pasted line\n  second pasted line [with brackets]\n\nthird: 'quotes' & more"
PASTED = "first pasted line second pasted line [with brackets] third: 'quotes' & more"
TYPED = "remind me to call the dentist tomorrow"


class Terminal:
    """A child process on a pty of a fixed size, its output collected by a reader thread."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path, size: tuple[int, int] = (120, 40)) -> None:
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", size[1], size[0], 0, 0))
        self.process = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env, cwd=cwd, start_new_session=True, close_fds=True)
        os.close(slave)
        self.master = master
        self.output = bytearray()
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:
                return
            if not chunk:
                return
            with self._lock:
                self.output += chunk

    def send(self, text: str) -> None:
        os.write(self.master, text.encode("utf-8"))

    def text(self) -> str:
        """Everything drawn so far, escape sequences removed (style changes split words otherwise)."""
        with self._lock:
            raw = bytes(self.output).decode("utf-8", "replace")
        return re.sub(r"\x1b\[[0-9;?<>=]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z]|\x1b[=>78]", "", raw)

    def wait_for(self, needle: str, timeout: float = 15.0) -> None:
        deadline = time.monotonic() + timeout
        mark = len(self.text())
        while time.monotonic() < deadline:
            if needle in self.text()[max(0, mark - 2000) :]:
                return
            time.sleep(0.05)
        raise AssertionError(f"{needle!r} never appeared; screen tail:\n{self.text()[-3000:]}")

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(5)
        os.close(self.master)


def session_turns(folder: Path) -> list[dict]:
    files = sorted(folder.glob("*.toml"))
    if not files:
        return []
    try:
        return tomllib.loads(files[-1].read_text(encoding="utf-8")).get("turns", [])
    except (tomllib.TOMLDecodeError, OSError):
        return []  # caught between the writer's rename and our read: try again


def wait_for_turns(folder: Path, count: int, timeout: float = 20.0) -> list[dict]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        turns = session_turns(folder)
        if len(turns) >= count and all("decision" in t for t in turns):
            return turns
        time.sleep(0.05)
    raise AssertionError(f"the session file never held {count} decided turns: {session_turns(folder)}")


def test_the_real_console_in_a_pty(tmp_path: Path) -> None:
    catalog = write_catalog(tmp_path)
    sessions = tmp_path / "sessions"
    # thresholds at 1.0: every turn is low band, so no confirm dialog takes keys meant for the box
    (tmp_path / "tui-router.toml").write_text(
        f'catalog = "{catalog}"\nbackend = "local"\nsessions_dir = "sessions"\n[policy]\nhigh = 1.0\nmedium = 1.0\n', encoding="utf-8"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("TUI_ROUTER_CONFIG", "TEXTUAL", "NO_COLOR")}
    env.update(TERM="xterm-256color", COLUMNS="120", LINES="40", TUI_ROUTER_CONFIG=str(tmp_path / "tui-router.toml"))
    term = Terminal([sys.executable, "-m", "tui_router"], env, tmp_path)
    try:
        term.send(TYPED + "\r")  # typed at once: the tty may still be in cooked mode (CR -> LF)
        turns = wait_for_turns(sessions, 1)
        assert [t["message"] for t in turns] == [TYPED]

        term.send(f"{ESC}[200~{PASTE}{ESC}[201~")  # bracketed paste, then Enter
        term.send("\r")
        turns = wait_for_turns(sessions, 2)
        assert [t["message"] for t in turns] == [TYPED, PASTED]

        term.send("\x10")  # ctrl+p: the command palette
        term.wait_for("Search for commands")
        term.send("replay: this session")
        term.wait_for("Re-route every turn")
        term.send("\r")
        term.wait_for("turns replayed")
        term.send(ESC)  # leave the replay
        term.wait_for("Type a user message")

        term.send(ESC)  # from the message box to the Decision log
        time.sleep(0.3)
        term.send("a")  # label the selected (last) turn with its choice
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not session_turns(sessions)[-1].get("label"):
            time.sleep(0.05)
        term.send("q")
        assert term.process.wait(15) == 0
    finally:
        term.close()
    turns = session_turns(sessions)
    assert [t["message"] for t in turns] == [TYPED, PASTED]  # exactly as submitted, once each
    assert turns[1]["label"] == turns[1]["decision"]["choice"]
    assert "label" not in turns[0]
    assert len(list(sessions.glob("*.toml"))) == 1
