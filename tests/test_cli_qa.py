"""CLI defects found by a QA pass that used the commands as a new user would."""

from __future__ import annotations

import socket
from pathlib import Path

from cli_harness import tui_router


def test_route_summary_of_an_unresolved_turn_says_there_is_no_answer(tmp_path: Path) -> None:
    # The summary printed "top options " and nothing after it when the server could not be reached.
    with socket.socket() as probe:  # a loopback port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = tmp_path / "tui-router.toml"
    config.write_text(
        f'backend = "systemone"\n[systemone]\nbase_url = "http://127.0.0.1:{port}/v1"\ntimeout = 2\nmax_retries = 0\nprobe = false\n',
        encoding="utf-8",
    )
    result = tui_router("route", "Text Jordan that the deploy finished.", env={"TUI_ROUTER_CONFIG": str(config), "XDG_CACHE_HOME": str(tmp_path / "cache")})
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    assert "band unresolved" in lines[0]
    assert "top options - (no answer)" in lines
    assert any(line.startswith("error       ") and "cannot connect" in line for line in lines)
    assert result.stderr.startswith("tui-router: unresolved: ")
