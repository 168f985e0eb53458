"""One policy for every front end (issue 31): the console, `route --args` and `mcp-serve` give the same
action for the same turn, because all three call `Router.aroute_turn` (the route, then the arguments
step whose missing or invalid arguments demote an execute to confirm).

Found: mcp-serve routed but never built arguments, so "search the web" was "Call web_search" there
and a confirm (its `query` missing) in the console and in `route --args`; "delete the file please"
was a proposal to run delete_file with no path.

Each front end runs for real: `route` and `mcp-serve` as subprocesses (mcp-serve over stdio with the
`mcp` SDK's client), the console through Pilot; the bundled demo catalog, the local backend.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from app_harness import close_confirms, make_app, submit
from mcp import Client, StdioServerParameters
from mcp.types import Implementation

from tui_router.config import config_from_dict

# (message, choice, action): two demoted for a missing required argument, one whose arguments are whole
TURNS = [
    ("search the web", "web_search", "confirm"),
    ("delete the file please", "delete_file", "confirm"),
    ("lint utils.js please", "lint_code", "execute"),
]


def _env(tmp_path: Path) -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "TUI_ROUTER_CONFIG"} | {"XDG_CONFIG_HOME": str(tmp_path / "xdg")}


def _cli(tmp_path: Path, message: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "tui_router", "route", "--catalog", "demo", "--backend", "local", "--args", "--json", message],
        capture_output=True, text=True, cwd=tmp_path, env=_env(tmp_path), timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


async def _mcp(tmp_path: Path, messages: list[str]) -> list[dict]:
    args = ["-m", "tui_router", "mcp-serve", "--catalog", "demo", "--backend", "local", "--sessions", str(tmp_path / "live")]
    params = StdioServerParameters(command=sys.executable, args=args, cwd=str(tmp_path), env=_env(tmp_path))
    async with Client(params, client_info=Implementation(name="policy-test", version="1"), mode="legacy") as client:
        return [(await client.call_tool("route_request", {"message": m})).structured_content for m in messages]


async def _console(tmp_path: Path, messages: list[str]) -> list[tuple[str | None, str]]:
    config = config_from_dict({"catalog": "demo", "backend": "local", "sessions_dir": str(tmp_path / "sessions")}, tmp_path / "tui-router.toml")
    app = make_app(config)
    async with app.run_test(size=(120, 40)) as pilot:
        await app._router_ready.wait()
        for message in messages:
            await submit(app, pilot, message)
            await close_confirms(app, pilot)
        turns = app.session.turns
    return [(t.decision.choice, t.decision.action) for t in turns]


async def test_the_console_route_args_and_mcp_serve_give_the_same_action(tmp_path: Path) -> None:
    messages = [m for m, _, _ in TURNS]
    expected = [(choice, action) for _, choice, action in TURNS]
    cli = [_cli(tmp_path, m) for m in messages]
    assert [(d["choice"], d["action"]) for d in cli] == expected
    assert [d["demoted"] for d in cli] == [True, True, False]

    served = await _mcp(tmp_path, messages)
    assert [(a["choice"], a["action"]) for a in served] == expected
    assert [a["demoted"] for a in served] == [True, True, False]
    assert served[0]["arguments"] == {"values": {}, "valid": False, "problems": ["/query: required argument is missing"]}
    assert served[0]["advice"] == (
        "Ask your user to confirm before calling web_search "
        "(its arguments are incomplete or invalid: /query: required argument is missing)."
    )
    assert served[1]["advice"].startswith("Ask your user to confirm before calling delete_file (its arguments are incomplete")
    assert served[2]["advice"].startswith("Call lint_code: it fits with high confidence.")
    assert served[2]["arguments"]["values"] == {"path": "utils.js"}

    console = await _console(tmp_path, messages)
    assert console == expected


async def test_mcp_serve_records_the_arguments_step_in_its_live_file(tmp_path: Path) -> None:
    from tui_router.session import load_session

    await _mcp(tmp_path, ["search the web"])
    [path] = sorted((tmp_path / "live").glob("*.toml"))
    [turn] = load_session(path).turns
    assert (turn.decision.choice, turn.decision.action) == ("web_search", "confirm")
    assert turn.arguments is not None and turn.arguments.demoted is True
    assert turn.arguments.errors == ["/query: required argument is missing"]


@pytest.mark.parametrize("auto", [True, False])
def test_arguments_auto_off_routes_only_in_every_front_end(tmp_path: Path, auto: bool) -> None:
    """`[arguments] auto = false` turns the step off for the console and mcp-serve alike (the core
    decides, not each front end); `route` without --args never builds them."""
    from tui_router.route import build_router

    config = config_from_dict({"catalog": "demo", "backend": "local", "arguments": {"auto": auto}}, tmp_path / "c.toml")
    router = build_router(config)
    decision = router.route_turn("search the web", arguments=config.arguments.auto)
    assert decision.action.value == ("confirm" if auto else "execute")
    assert (decision.arguments is not None) is auto
