"""The console following a live session file that a real `mcp-serve` process appends to (Pilot)."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

from app_harness import AGENDA, REMINDER, make_app, make_config, notifications, settle
from mcp import Client, StdioServerParameters
from mcp.types import Implementation

from tui_router.app.widgets.decision_log import DecisionLog
from tui_router.session import load_session


def server(tmp_path: Path, config) -> Client:
    args = ["-m", "tui_router", "mcp-serve", "--catalog", str(config.catalog), "--backend", "local", "--sessions", str(tmp_path / "live")]
    params = StdioServerParameters(command=sys.executable, args=args, cwd=str(tmp_path))
    return Client(params, client_info=Implementation(name="follow-agent", version="1"), mode="legacy")


async def wait_until(pilot, condition, timeout: float = 15.0) -> None:
    waited = 0.0
    while not condition():
        assert waited < timeout, "the console did not show the new turn in time"
        await pilot.pause(0.05)
        waited += 0.05


async def test_the_console_shows_turns_another_process_appends(tmp_path: Path) -> None:
    config = make_config(tmp_path)
    async with server(tmp_path, config) as agent:
        await agent.call_tool("route_request", {"message": REMINDER})
        live = tmp_path / "live"
        [path] = sorted(live.glob("*.toml"))
        for _ in range(200):  # the server writes right after it answers
            if path.stat().st_size:
                break
            await anyio_sleep(0.05)

        app = make_app(config, session_id="follow-copy", follow=path)
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(app, pilot)
            await wait_until(pilot, lambda: len(app.session.turns) == 1)
            assert app.follow_path == path and app.follow_seen == {path: 1}
            app.follow_file(path, interval=0.05)  # poll faster than the default for the test
            await wait_until(pilot, lambda: len(app.session.turns) == 1 and app.follow_seen == {path: 1})

            await agent.call_tool("route_request", {"message": AGENDA})  # another process appends
            await wait_until(pilot, lambda: len(app.session.turns) == 2)
            log = app.query_one(DecisionLog)
            assert log.row_count == 2 and log.selected_index == 1  # the newest turn, selected
            assert log.row_cells(1)["message"].startswith("show my calendar")
            assert log.row_cells(1)["choice"] == "list_events"
            assert app.session.turns[1].tags == ["mcp:route_request", "client:follow-agent"]

            # opening the live file it follows is not a second writer: it says so and following goes on
            app.open_session_file(str(path))
            await settle(app, pilot)
            assert notifications(app)[-1] == f"Already following {path}: its turns are copied into this session."
            assert app.session.path != path and app.follow_path == path

            await agent.call_tool("search_tools", {"query": "documentation"})
            await wait_until(pilot, lambda: len(app.session.turns) == 3)
            assert log.row_cells(2)["choice"] == "search"  # a search is shown as such, not as routing

            # the operator labels a followed turn: saved in the console's own file, never in the live one
            log.focus()
            log.select(1)
            await pilot.press("a")
            await settle(app, pilot)
            assert app.session.turns[1].label == "list_events"
            own = app.session.path
            assert own is not None and own != path and own.parent == config.sessions_path
            on_disk = tomllib.loads(own.read_text(encoding="utf-8"))
            assert [t["message"] for t in on_disk["turns"]] == [REMINDER, AGENDA, "documentation"]
            assert on_disk["turns"][1]["label"] == "list_events"
            assert all(t.label is None for t in load_session(path).turns)

    # the server has exited and written everything; the live file has the three turns, unlabelled
    assert [t.message for t in load_session(path).turns] == [REMINDER, AGENDA, "documentation"]
    # eval and replay read both files unchanged
    cli = [sys.executable, "-m", "tui_router"]
    common = ["--catalog", str(config.catalog), "--backend", "local"]
    replay = subprocess.run([*cli, "replay", "--headless", *common, str(path)], capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert replay.returncode == 0, replay.stderr
    assert "3 turns replayed" in replay.stdout
    evaluated = subprocess.run([*cli, "eval", "--json", *common, str(own)], capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert evaluated.returncode == 0, evaluated.stderr
    report = json.loads(evaluated.stdout)
    assert (report["n"], report["tool_cases"], report["top1"]) == (1, 1, 1.0)  # the one labelled turn


async def test_following_a_file_that_breaks_is_a_notification_not_a_crash(tmp_path: Path) -> None:
    config = make_config(tmp_path)
    path = tmp_path / "live.toml"
    path.write_text('[session]\nid = "live"\n\n[[turns]]\nmessage = "first"\n', encoding="utf-8")
    app = make_app(config)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        assert app.follow_file(path, interval=0.05)
        await wait_until(pilot, lambda: len(app.session.turns) == 1)
        path.write_text('[session]\nid = "live"\n[[turns]\nmessage = "half', encoding="utf-8")
        await wait_until(pilot, lambda: any("not valid TOML" in n for n in notifications(app)))
        assert [t.message for t in app.session.turns] == ["first"]  # nothing lost
        count = len(notifications(app))
        await pilot.pause(0.3)
        assert len(notifications(app)) == count  # said once, not every poll
        path.write_text('[session]\nid = "live"\n\n[[turns]]\nmessage = "first"\n\n[[turns]]\nmessage = "second"\n', encoding="utf-8")
        await wait_until(pilot, lambda: len(app.session.turns) == 2)
        assert app.session.turns[1].message == "second"
        assert not app.follow_file(tmp_path / "missing.toml")
        await pilot.pause()
        assert app.follow_path == path  # still following the file it had
        assert any("no such file or folder to follow" in n for n in notifications(app))


async def anyio_sleep(seconds: float) -> None:
    import anyio

    await anyio.sleep(seconds)


def test_live_files_in_a_folder_come_in_the_order_the_server_started_them(tmp_path: Path) -> None:
    from tui_router.app.follow import live_files_in

    names = ["mcp-2026-12-01.toml", "mcp-2026-11-30-10.toml", "mcp-2026-11-30.toml", "mcp-2026-11-30-2.toml", "notes.toml", "mcp-x.toml", ".mcp-2026-11-30.toml.abc.tmp"]
    for name in names:
        (tmp_path / name).write_text("", encoding="utf-8")
    assert [p.name for p in live_files_in(tmp_path)] == ["mcp-2026-11-30.toml", "mcp-2026-11-30-2.toml", "mcp-2026-11-30-10.toml", "mcp-2026-12-01.toml"]


async def test_following_a_folder_carries_on_across_rotations(tmp_path: Path) -> None:
    config = make_config(tmp_path)
    live = tmp_path / "live"
    live.mkdir()
    args = ["-m", "tui_router", "mcp-serve", "--catalog", str(config.catalog), "--backend", "local", "--sessions", str(live), "--max-bytes", "1000"]
    params = StdioServerParameters(command=sys.executable, args=args, cwd=str(tmp_path))
    app = make_app(config)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        assert app.follow_file(live, interval=0.05)
        async with Client(params, client_info=Implementation(name="rotating-agent", version="1"), mode="legacy") as agent:
            for message in (REMINDER, AGENDA, "send a text sms to 555-0100"):
                await agent.call_tool("route_request", {"message": message})
            await wait_until(pilot, lambda: len(app.session.turns) == 3)
        files = sorted(live.glob("*.toml"))
        assert len(files) == 3  # 1,000 bytes hold one routed turn: every call started a new file
        assert [t.message for t in app.session.turns] == [REMINDER, AGENDA, "send a text sms to 555-0100"]
        assert app.follow_seen == {f: 1 for f in files}
