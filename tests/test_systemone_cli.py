"""`tui-router route --backend systemone` as a real subprocess against the mock."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tui_router.cli import main

KEY = "sk-cli-leak-check-5d1e8f27a4c3b9"
MESSAGE = "Text Jordan that the deploy finished."


def tui_router(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    script = Path(sys.executable).parent / "tui-router"
    argv = [str(script)] if script.is_file() else [sys.executable, "-m", "tui_router.cli"]
    return subprocess.run([*argv, *args], capture_output=True, text=True, timeout=60, env={**os.environ, **(env or {})}, cwd=cwd)


@pytest.fixture()
def clean_env(tmp_path):
    """No user config, no key, profiles cached in a temporary folder."""
    config = tmp_path / "empty.toml"
    config.write_text("")
    return {"TUI_ROUTER_CONFIG": str(config), "XDG_CACHE_HOME": str(tmp_path / "cache"), "TYPESAFE_API_KEY": ""}


def test_route_json_with_base_url_flag(jev_mocks, clean_env):
    result = tui_router("route", "--backend", "systemone", "--base-url", jev_mocks.url(), "--json", MESSAGE, env=clean_env)
    assert result.returncode == 0, result.stderr
    decision = json.loads(result.stdout)
    assert decision["backend"] == "systemone" and decision["model"] == "jevcompat-mock-0.1"
    assert decision["error"] == "" and decision["path"] == "single"
    assert set(decision["probabilities"]) == {c["id"] for c in decision["candidates"]} | {"defer_to_llm"}


def test_route_with_base_url_in_config_and_a_wrong_key_never_shows_the_key(jev_mocks, clean_env, tmp_path, monkeypatch, capsys):
    config = tmp_path / "tui-router.toml"
    config.write_text(f'backend = "systemone"\n[systemone]\nbase_url = "{jev_mocks.url(key="the-right-key")}"\napi_key_env = "TR_CLI_KEY"\n')
    env = clean_env | {"TUI_ROUTER_CONFIG": str(config), "TR_CLI_KEY": KEY}
    result = tui_router("route", "--json", MESSAGE, env=env)
    assert result.returncode == 1, result.stderr  # unresolved: the decision is printed, the exit code says so
    assert result.stderr.startswith("tui-router: unresolved: ") and "HTTP 401" in result.stderr
    decision = json.loads(result.stdout)
    assert decision["band"] == "unresolved" and decision["action"] == "fallback"
    assert "HTTP 401 authentication_error" in decision["error"] and "$TR_CLI_KEY" in decision["error"]
    for name, value in env.items():  # the summary view, in-process
        monkeypatch.setenv(name, value)
    assert main(["route", MESSAGE]) == 1
    summary = capsys.readouterr()
    assert "error       " in summary.out and "HTTP 401" in summary.out
    for text in (result.stdout, result.stderr, summary.out, summary.err):
        assert KEY not in text
    for cached in (tmp_path / "cache").rglob("*"):
        if cached.is_file():
            assert KEY not in cached.read_text()


def test_route_without_a_server_is_one_clear_line(clean_env, monkeypatch, capsys):
    for name, value in clean_env.items():
        monkeypatch.setenv(name, value)
    assert main(["route", "--backend", "systemone", MESSAGE]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1
    assert "the systemone backend needs a server: set [systemone] base_url" in lines[0]


def test_bad_base_url_flag(capsys):
    assert main(["route", "--backend", "systemone", "--base-url", "localhost:8787", MESSAGE]) == 2
    assert "--base-url 'localhost:8787' is not an http:// or https:// URL" in capsys.readouterr().err
