"""A live file (`mcp-YYYY-MM-DD[-N].toml`, the MCP server's recording) is never written by the
console: `tui-router open LIVE`, the open-file dialog and "save as" follow it into a session of the
console's own or refuse, instead of making the console a second writer of the server's file."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest
from app_harness import make_app, make_config, notifications, run_palette, settle, write_catalog
from textual.widgets import Input

from tui_router.errors import SessionError
from tui_router.session import load_session
from tui_router.storage import write_session_text

CLI = [sys.executable, "-m", "tui_router"]
LIVE_TEXT = (
    '[session]\nid = "mcp-2026-11-30"\nlive = true\n\n'
    '[[turns]]\nmessage = "show my calendar for monday"\nat = "2026-11-30T10:00:01Z"\n\n'
    '[turns.decision]\ncandidates = ["list_events", "send_sms"]\nchoice = "list_events"\n'
    'probabilities = { list_events = 0.6, send_sms = 0.3, defer_to_llm = 0.1 }\n'
    'confidence = 0.2\nband = "low"\naction = "escalate"\nbackend = "bm25"\n\n'
    '[[turns]]\nmessage = "text Jordan that the deploy finished"\nat = "2026-11-30T10:05:00Z"\n'
)
MESSAGES = ["show my calendar for monday", "text Jordan that the deploy finished"]


def live_file(folder: Path, name: str = "mcp-2026-11-30.toml") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(LIVE_TEXT, encoding="utf-8")
    return path


def config_file(tmp_path: Path) -> Path:
    catalog = write_catalog(tmp_path)
    path = tmp_path / "tui-router.toml"
    path.write_text(f'catalog = "{catalog}"\nbackend = "local"\nsessions_dir = "sessions"\n', encoding="utf-8")
    return path


def locks(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.glob(".*.lock"))


def test_open_a_live_file_with_another_follow_is_refused_in_one_sentence(tmp_path: Path) -> None:
    config = config_file(tmp_path)
    live = live_file(tmp_path / "live")
    other = live_file(tmp_path / "live", "mcp-2026-11-30-2.toml")
    before = live.read_bytes()
    env = {**os.environ, "TUI_ROUTER_CONFIG": str(config)}
    done = subprocess.run([*CLI, "open", str(live), "--follow", str(other)], capture_output=True, text=True, timeout=60,
                          env=env, stdin=subprocess.DEVNULL, cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip() == (
        f"tui-router: {live} is a live file the MCP server records, so the console never writes it; follow it with "
        f"tui-router open --follow {live} (its turns are copied into a session of the console's own)"
    )
    assert live.read_bytes() == before and locks(tmp_path / "live") == []


def test_tui_router_open_on_a_live_file_follows_it_into_a_session_of_its_own(tmp_path: Path) -> None:
    from test_console_e2e import Terminal

    config = config_file(tmp_path)
    live = live_file(tmp_path / "sessions" / "live")
    before = live.read_bytes()
    env = {k: v for k, v in os.environ.items() if k not in ("TUI_ROUTER_CONFIG", "TEXTUAL", "NO_COLOR")}
    env.update(TERM="xterm-256color", TUI_ROUTER_CONFIG=str(config))
    term = Terminal([*CLI, "open", str(live)], env, tmp_path, size=(200, 50))
    try:
        # the notification says why (wrapped in its toast: compared on letters alone)
        said = "isalivefilethemcpserverrecordssotheconsoleneverwritesititisfollowedinstead"
        own: list[Path] = []
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not (own and said in re.sub(r"[^a-z]", "", term.text().lower())):
            own = [p for p in (tmp_path / "sessions").glob("*-follow-mcp-2026-11-30-*.toml")]  # the copies, autosaved
            time.sleep(0.05)
        assert len(own) == 1 and said in re.sub(r"[^a-z]", "", term.text().lower()), term.text()[-2000:]
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and len(load_session(own[0]).turns) < 2:
            time.sleep(0.05)
        assert locks(live.parent) == []  # the live file was never claimed
        term.send("\x1b")  # from the message box to the Decision log, where q quits
        time.sleep(0.3)
        term.send("q")
        assert term.process.wait(15) == 0
    finally:
        term.close()
    assert live.read_bytes() == before
    assert [t.message for t in load_session(own[0]).turns] == MESSAGES
    assert locks(live.parent) == [] and locks(tmp_path / "sessions") == []


async def test_the_open_dialog_follows_a_live_file_into_a_new_session(tmp_path: Path) -> None:
    config = make_config(tmp_path)
    live = live_file(tmp_path / "live")
    before = live.read_bytes()
    app = make_app(config)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        await run_palette(app, pilot, "session: open file")
        app.screen.query_one(Input).value = str(live)
        await pilot.press("enter")
        for _ in range(200):
            await pilot.pause(0.05)
            if len(app.session.turns) == 2:
                break
        await settle(app, pilot)
        assert [t.message for t in app.session.turns] == MESSAGES
        assert app.follow_path == live and app.session.path != live
        assert "-follow-mcp-2026-11-30-" in app.session.id
        assert any(n.startswith(f"{live} is a live file the MCP server records, so the console never writes it") for n in notifications(app))
        # a label goes to the console's own file, never into the live one
        app.log_table.focus()
        app.log_table.select(0)
        await pilot.press("a")
        await settle(app, pilot)
        assert app.session.turns[0].label == "list_events"
        own = app.session.path
        assert own is not None and own.parent == config.sessions_path
        assert tomllib.loads(own.read_text(encoding="utf-8"))["turns"][0]["label"] == app.session.turns[0].label
        # opening it again while following it: said, nothing switched or copied twice
        app.open_session_file(str(live))
        await settle(app, pilot)
        assert app.session.path == own and len(app.session.turns) == 2
        assert notifications(app)[-1] == f"Already following {live}: its turns are copied into this session."
        # "save as" onto a live file is refused
        assert app.save_as(str(live)) is None
        await pilot.pause()
        assert "is the name of a live file the MCP server records" in notifications(app)[-1]
        assert live.read_bytes() == before and app.session.path == own
        await pilot.press("q")
    assert live.read_bytes() == before and locks(live.parent) == []


async def test_opening_a_missing_live_file_is_a_notification(tmp_path: Path) -> None:
    config = make_config(tmp_path)
    app = make_app(config)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        app.open_session_file(str(tmp_path / "mcp-2026-11-30.toml"))
        await settle(app, pilot)
        # a missing file is no live file (nothing says the server's): the reader's sentence
        assert notifications(app)[-1] == f"{tmp_path / 'mcp-2026-11-30.toml'}: session file not found"
        assert app.follow_path is None and app.session.id == "test-session"


def test_the_console_writer_refuses_a_live_file(tmp_path: Path) -> None:
    live = live_file(tmp_path)
    before = live.read_bytes()
    with pytest.raises(SessionError, match="is a live file the MCP server records; the console never writes it"):
        write_session_text(live, '[session]\nid = "x"\n')
    assert live.read_bytes() == before and locks(tmp_path) == []
