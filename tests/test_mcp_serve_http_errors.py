"""`mcp-serve --http`: the MCP SDK answers a batch or a malformed message with HTTP 400 and
pydantic's whole validation text (about 1 KB, several lines, up to a hundred characters of the
request echoed, control characters included as escapes). A client now gets one short JSON-RPC error
sentence that echoes nothing (mcp_server.BoundedErrors); parse errors stay short and clean."""

from __future__ import annotations

import json
import re
import signal
import sys

import httpx
import pytest
from servers.processes import ServerProcess

from tui_router.mcp_server import BATCH_REFUSED, NOT_JSON_RPC
from tui_router.textsafe import is_safe

pytest.importorskip("mcp", reason="the mcp extra is not installed: pip install 'tui-router[mcp]'")

PROTOCOL = "2025-06-18"
ECHO = "Q" * 300 + "\x1b[2J"  # what an echo of the request would show


@pytest.fixture(scope="module")
def endpoint(tmp_path_factory: pytest.TempPathFactory):
    folder = tmp_path_factory.mktemp("mcp-http-errors")
    (folder / "none.toml").write_text("", encoding="utf-8")
    argv = [sys.executable, "-m", "tui_router", "--backend", "bm25", "mcp-serve", "--http", "0", "--no-record"]
    proc = ServerProcess(argv, env={"TUI_ROUTER_CONFIG": str(folder / "none.toml")})
    try:
        url = proc.wait_for_line(r"on (http://127\.0\.0\.1:\d+/mcp) ").group(1)
        with httpx.Client(timeout=30) as client:
            headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
            init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
            opened = client.post(url, headers=headers, json=init)
            assert opened.status_code == 200, opened.text
            headers |= {"mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": PROTOCOL}
            assert client.post(url, headers=headers, json={"jsonrpc": "2.0", "method": "notifications/initialized"}).status_code == 202
            yield client, url, headers
    finally:
        if proc.proc.poll() is None:
            proc.proc.send_signal(signal.SIGINT)
            proc.proc.wait(timeout=20)
        proc.stop()
    assert "Traceback" not in "".join(proc.stderr)


def post(endpoint, body: bytes) -> httpx.Response:
    client, url, headers = endpoint
    return client.post(url, headers=headers, content=body)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ([{"jsonrpc": "2.0", "id": 3, "method": "ping"}], BATCH_REFUSED),
        ([{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": ECHO}}, {"jsonrpc": "2.0", "method": "x"}], BATCH_REFUSED),
        ({"jsonrpc": "2.0", "id": 5, "method": "initialize", "params": ECHO}, NOT_JSON_RPC),
        ({"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": [ECHO]}, NOT_JSON_RPC),
        ({"jsonrpc": "2.0", "id": 7, "meth": ECHO}, NOT_JSON_RPC),
        ({"jsonrpc": "1.0", "id": 8, "method": "ping"}, NOT_JSON_RPC),
    ],
)
def test_a_batch_or_a_malformed_message_gets_one_short_sentence(endpoint, body, message: str) -> None:
    answer = post(endpoint, json.dumps(body).encode())
    assert answer.status_code == 400 and answer.headers["content-type"].startswith("application/json")
    assert answer.json() == {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": message}}
    assert int(answer.headers["content-length"]) == len(answer.content) < 300
    assert "QQQQ" not in answer.text and "validation" not in answer.text.lower()


@pytest.mark.parametrize("body", [b"\xff\xfe", b"", b"[" * 1000, b'{"a\x1b[2J":1', b"not json " + ECHO.encode()])
def test_a_body_that_is_not_json_gets_a_short_parse_error(endpoint, body: bytes) -> None:
    answer = post(endpoint, body)
    assert answer.status_code == 400
    reply = answer.json()
    assert reply["id"] is None and reply["error"]["code"] == -32700
    assert re.fullmatch(r"Parse error: [^\n]{1,100}", reply["error"]["message"]) and is_safe(reply["error"]["message"])
    assert "QQQQ" not in answer.text and len(answer.content) < 300


def test_good_calls_and_other_errors_are_untouched(endpoint) -> None:
    routed = post(endpoint, json.dumps({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "route_request", "arguments": {"message": "text Jordan the deploy finished"}}}).encode())
    assert routed.status_code == 200 and json.loads(routed.json()["result"]["content"][0]["text"])["choice"] == "send_sms"
    wrong = post(endpoint, json.dumps({"jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": {"name": 5}}).encode())
    assert wrong.status_code == 200 and wrong.json()["id"] == 10 and wrong.json()["error"]["code"] == -32602
    client, url, headers = endpoint
    gone = client.post(url, headers={**headers, "mcp-session-id": "0" * 32}, content=b'{"jsonrpc":"2.0","id":1,"method":"ping"}')
    assert gone.status_code == 404 and gone.json()["error"]["message"] == "Session not found"
