"""`mcp-serve` over stdio: a client that writes its last requests and closes stdin gets every answer.

The MCP SDK ends its loop at the end of the read stream and cancels the requests still in their
handlers, so their answers were never written (and their turns not recorded). The end of stdin now
waits for the requests in flight (mcp_server._AnsweredReads / _TrackedWrites)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from app_harness import write_systemone_config
from servers.scripted import ScriptedServer, Step

from tui_router.session import load_session

pytest.importorskip("mcp", reason="the mcp extra is not installed: pip install 'tui-router[mcp]'")

KEY_ENV = "TR_EOF_KEY"
INITIALIZE = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "eof", "version": "1"}}}


def call(ident: int, message: str) -> dict:
    return {"jsonrpc": "2.0", "id": ident, "method": "tools/call", "params": {"name": "route_request", "arguments": {"message": message}}}


def serve_until_eof(tmp_path: Path, config: Path, lines: list[dict]) -> tuple[dict, subprocess.CompletedProcess]:
    argv = [sys.executable, "-m", "tui_router", "mcp-serve", "--config", str(config), "--sessions", str(tmp_path / "live")]
    env = {**os.environ, KEY_ENV: "sk-eof", "XDG_CACHE_HOME": str(tmp_path / "cache")}
    stdin = "".join(json.dumps(line) + "\n" for line in lines)  # written at once, then stdin closes
    done = subprocess.run(argv, input=stdin, capture_output=True, text=True, env=env, timeout=120)
    answers = {reply.get("id"): reply for reply in map(json.loads, done.stdout.splitlines())}
    return answers, done


@pytest.fixture()
def slow_server():
    scripted = ScriptedServer()
    scripted.script.extend(Step(delay=0.4) for _ in range(200))  # each answer takes 0.4 s: still in flight at EOF
    scripted.thread.start()
    yield scripted
    scripted.server.shutdown()
    scripted.server.server_close()


def test_requests_in_flight_when_stdin_closes_are_answered_and_recorded(tmp_path: Path, slow_server: ScriptedServer) -> None:
    config = write_systemone_config(tmp_path, slow_server.base_url, KEY_ENV)
    messages = [f"remind me to water the plants {n}" for n in range(1, 5)]
    lines = [INITIALIZE, {"jsonrpc": "2.0", "method": "notifications/initialized"}, *(call(n, m) for n, m in enumerate(messages, 1))]
    answers, done = serve_until_eof(tmp_path, config, lines)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert sorted(answers) == [0, 1, 2, 3, 4], done.stdout[-2000:]
    for n in range(1, 5):
        routed = json.loads(answers[n]["result"]["content"][0]["text"])
        assert routed.get("error", "") == "" and routed["band"] != "unresolved", routed
    [live] = (tmp_path / "live").glob("mcp-*.toml")
    assert sorted(t.message for t in load_session(live).turns) == messages


def test_a_request_the_client_cancelled_does_not_hold_the_end_of_stdin(tmp_path: Path, slow_server: ScriptedServer) -> None:
    config = write_systemone_config(tmp_path, slow_server.base_url, KEY_ENV)
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1, "reason": "the user left"}}
    lines = [INITIALIZE, {"jsonrpc": "2.0", "method": "notifications/initialized"}, call(1, "remind me to call mom"), cancel, call(2, "text Jordan that the deploy finished")]
    answers, done = serve_until_eof(tmp_path, config, lines)
    assert done.returncode == 0, done.stderr[-2000:]
    assert 2 in answers and json.loads(answers[2]["result"]["content"][0]["text"]).get("error", "") == ""
