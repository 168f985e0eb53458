"""`mcp-serve --serve-catalog NAME=PATH ...`: per-team allowlists behind one server.

Real server processes and the `mcp` SDK's own client: over HTTP each catalog at /mcp/NAME, over
stdio the one --use names; each catalog's turns in its own live files (<sessions>/NAME/).
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from app_harness import REMINDER, write_catalog
from mcp import Client, StdioServerParameters
from mcp.types import Implementation

from tui_router.session import load_session

SERVE = [sys.executable, "-m", "tui_router", "mcp-serve", "--backend", "local"]
OPS = """
name = "ops"
description = "The operations team's allowlist"

[[tools]]
id = "restart_service"
when_to_use = "Restart a running service or daemon on a server."
risk = "write"
keywords = ["restart", "bounce", "service"]

[[tools]]
id = "page_oncall"
when_to_use = "Page the on-call engineer about an outage."
risk = "outbound"
keywords = ["page", "oncall", "outage"]

[[tools]]
id = "show_dashboard"
when_to_use = "Show the metrics dashboard of a service: latency, errors, traffic."
keywords = ["dashboard", "metrics", "graphs"]

[[tools]]
id = "rotate_logs"
when_to_use = "Rotate and compress the log files of a service."
risk = "write"
keywords = ["logs", "rotate", "compress"]
"""
RESTART = "restart the nginx service on web-3"


def catalogs(tmp_path: Path) -> list[str]:
    ops = tmp_path / "ops.toml"
    ops.write_text(OPS, encoding="utf-8")
    return ["--serve-catalog", f"tiny={write_catalog(tmp_path)}", "--serve-catalog", f"ops={ops}", "--sessions", str(tmp_path / "live")]


def turns_in(folder: Path, count: int, timeout: float = 15.0) -> list:
    deadline = time.monotonic() + timeout
    turns: list = []
    while time.monotonic() < deadline:
        files = sorted(folder.glob("*.toml"))
        if files and files[0].stat().st_size:
            turns = load_session(files[0]).turns
            if len(turns) >= count:
                return turns
        time.sleep(0.05)
    raise AssertionError(f"{len(turns)} of {count} turns in {folder}")


async def test_http_serves_each_catalog_at_its_path_with_its_own_live_file(tmp_path: Path) -> None:
    proc = subprocess.Popen([*SERVE, *catalogs(tmp_path), "--http", "0"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path, text=True)
    try:
        line = proc.stderr.readline()
        found = re.search(r"(http://127\.0\.0\.1:\d+)/mcp/tiny \(catalog tiny, 6 options\); http://127\.0\.0\.1:\d+/mcp/ops \(catalog ops, 4 options\)", line)
        assert found, line + proc.stderr.read() if proc.poll() is not None else line
        base = found.group(1)
        async with Client(f"{base}/mcp/tiny", client_info=Implementation(name="team-a", version="1")) as tiny:
            answer = (await tiny.call_tool("route_request", {"message": REMINDER})).structured_content
            assert answer["choice"] == "create_reminder"
            other = (await tiny.call_tool("route_request", {"message": RESTART})).structured_content
            assert other["choice"] not in ("restart_service", "page_oncall")  # not in team a's allowlist
        async with Client(f"{base}/mcp/ops", client_info=Implementation(name="team-b", version="1")) as ops:
            answer = (await ops.call_tool("route_request", {"message": RESTART})).structured_content
            assert (answer["choice"], answer["candidates"][0]["id"]) == ("restart_service", "restart_service")
            found_tools = (await ops.call_tool("search_tools", {"query": "page the oncall about the outage"})).structured_content
            assert [t["id"] for t in found_tools["tools"]][:1] == ["page_oncall"]
        # a path that names no catalog is refused, naming those served
        with httpx.Client() as http:
            for path in ("/mcp", "/mcp/sales"):
                reply = http.post(f"{base}{path}", json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}, headers={"accept": "application/json, text/event-stream"})
                assert reply.status_code == 404
                assert reply.json()["error"]["message"] == f"no catalog is served at {path}; this server has /mcp/tiny, /mcp/ops"
        tiny_turns = turns_in(tmp_path / "live" / "tiny", 2)
        ops_turns = turns_in(tmp_path / "live" / "ops", 2)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
    err = proc.stderr.read()
    assert proc.returncode == 0 and "Traceback" not in err, err
    assert [t.message for t in tiny_turns] == [REMINDER, RESTART] and all("client:team-a" in t.tags for t in tiny_turns)
    assert [t.message for t in ops_turns] == [RESTART, "page the oncall about the outage"] and all("client:team-b" in t.tags for t in ops_turns)
    assert load_session(sorted((tmp_path / "live" / "ops").glob("*.toml"))[0]).session.catalog == "ops"
    assert "turn(s) in" in err and str(tmp_path / "live" / "ops") in err and str(tmp_path / "live" / "tiny") in err


async def test_stdio_serves_the_catalog_use_names(tmp_path: Path) -> None:
    params = StdioServerParameters(command=sys.executable, args=[*SERVE[1:], *catalogs(tmp_path), "--use", "ops"], cwd=str(tmp_path))
    async with Client(params, client_info=Implementation(name="ops-agent", version="1"), mode="legacy") as client:
        answer = (await client.call_tool("route_request", {"message": RESTART})).structured_content
        assert answer["choice"] == "restart_service"
        missing = (await client.call_tool("route_request", {"message": REMINDER})).structured_content
        assert missing["choice"] != "create_reminder"
    [path] = sorted((tmp_path / "live" / "ops").glob("*.toml"))
    session = load_session(path)
    assert session.session.catalog == "ops" and [t.message for t in session.turns] == [RESTART, REMINDER]
    assert not (tmp_path / "live" / "tiny").exists()


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ([], "over stdio one catalog is served: pick it with --use NAME (one of tiny, ops), or serve them all with --http PORT"),
        (["--use", "opz"], "--use opz: no --serve-catalog has that name (did you mean 'ops'?); the names are tiny, ops"),
        (["--use", "ops", "--http", "0"], "--use is for stdio; over HTTP every catalog is served, each at /mcp/NAME"),
        (["--catalog", "demo"], "give the catalogs with --serve-catalog NAME=PATH only (leave out --catalog)"),
        (["--serve-catalog", "Bad Name=x.toml"], "a name is lowercase letters, digits, _ and -"),
        (["--serve-catalog", "ops=x.toml"], "--serve-catalog: the name 'ops' is given twice"),
    ],
)
def test_refusals_are_one_sentence(tmp_path: Path, extra: list[str], expected: str) -> None:
    done = subprocess.run([*SERVE, *catalogs(tmp_path), *extra], capture_output=True, text=True, cwd=tmp_path, timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("tui-router: ") and expected in line


def test_a_catalog_that_does_not_load_stops_the_server_before_it_serves(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("name = 'bad'\n[[tools]]\nid = 'Not An Id'\nwhen_to_use = 'x'\n", encoding="utf-8")
    done = subprocess.run([*SERVE, "--serve-catalog", f"bad={bad}", "--http", "0"], capture_output=True, text=True, cwd=tmp_path, timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 2 and "Traceback" not in done.stderr and str(bad) in done.stderr
    assert "ready" not in done.stderr
