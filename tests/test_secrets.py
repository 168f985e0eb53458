"""Issue 14 item 4: a server that echoes the API key never gets it stored or shown, and a base_url
with user:password@ is refused. Real CLI subprocesses against a key-echoing loopback server."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from cli_harness import tui_router
from servers.hostile import HostileServer

from tui_router.catalog import load_catalog
from tui_router.config import config_from_dict
from tui_router.route import Router
from tui_router.session import Session, Turn, load_session, new_session, save_session

KEY = "sk-echo-secret-4b7e1d9a0c2f"
MESSAGE = "Text Jordan that the deploy finished."


@pytest.fixture(scope="module")
def echo():
    with HostileServer("echo-key") as server:
        yield server


@pytest.fixture()
def env(tmp_path, echo):
    config = tmp_path / "tui-router.toml"
    config.write_text(f'backend = "systemone"\n[systemone]\nbase_url = "{echo.base_url}"\napi_key_env = "TR_ECHO_KEY"\ntimeout = 10\n')
    return {"TUI_ROUTER_CONFIG": str(config), "XDG_CACHE_HOME": str(tmp_path / "cache"), "TR_ECHO_KEY": KEY}


def _cached_texts(tmp_path: Path) -> list[str]:
    return [p.read_text() for p in (tmp_path / "cache").rglob("*.json")]


def test_route_json_and_the_cached_profile_never_hold_an_echoed_key(env, tmp_path):
    result = tui_router("route", "--json", MESSAGE, env=env)
    assert result.returncode == 0, result.stderr
    decision = json.loads(result.stdout)
    assert decision["model"] == "jev served to Bearer [redacted]"  # the echo arrived, redacted
    cached = _cached_texts(tmp_path)
    assert cached, "the first use probes the server and caches its profile"
    assert "[redacted]" in cached[0]
    for text in (result.stdout, result.stderr, *cached):
        assert KEY not in text


def test_doctor_and_models_never_print_an_echoed_key(env, tmp_path):
    doctor = tui_router("doctor", env=env)
    doctor_json = tui_router("doctor", "--json", env=env)
    models = tui_router("models", env=env)
    models_json = tui_router("models", "--json", env=env)
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    assert "answered by jev served to Bearer [redacted]" in doctor.stdout
    assert models.returncode == 0 and "echo Bearer [redacted]" in models.stdout
    assert json.loads(models_json.stdout)[0]["description"] == "served to Bearer [redacted]"
    for done in (doctor, doctor_json, models, models_json):
        assert KEY not in done.stdout + done.stderr
    for text in _cached_texts(tmp_path):
        assert KEY not in text


def test_a_session_saved_from_an_echoing_server_never_holds_the_key(echo, tmp_path, monkeypatch):
    monkeypatch.setenv("TR_ECHO_KEY", KEY)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    config = config_from_dict({"backend": "systemone", "systemone": {"base_url": echo.base_url, "api_key_env": "TR_ECHO_KEY", "probe": False}})
    catalog = load_catalog("demo")
    router = Router(catalog, config)
    try:
        decision = router.route(MESSAGE)
    finally:
        router.backend.close()
    session: Session = new_session(catalog.name, backend="systemone", model=decision.model)
    session.turns.append(Turn(message=MESSAGE, decision=decision.to_turn_decision()))
    path = save_session(session, tmp_path / "s.toml")
    text = path.read_text()
    assert "[redacted]" in text
    assert KEY not in text
    assert load_session(path).turns[0].decision.model == "jev served to Bearer [redacted]"


@pytest.mark.parametrize("url", ["http://alice:hunter2pass@127.0.0.1:9/v1", "https://hunter2pass@api.example.com/v1"])
def test_a_base_url_with_credentials_is_refused_without_echoing_them(url, tmp_path):
    config = tmp_path / "tui-router.toml"
    config.write_text(f'[systemone]\nbase_url = "{url}"\n')
    from_file = tui_router("route", "--backend", "systemone", MESSAGE, env={"TUI_ROUTER_CONFIG": str(config)})
    empty = tmp_path / "empty.toml"
    empty.write_text("")
    from_flag = tui_router("route", "--backend", "systemone", "--base-url", url, MESSAGE, env={"TUI_ROUTER_CONFIG": str(empty)})
    for done in (from_file, from_flag):
        assert done.returncode == 2
        assert done.stdout == ""
        assert "must not carry a user name or password (user:password@host)" in done.stderr
        assert "hunter2pass" not in done.stderr
        assert "Traceback" not in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1


async def test_the_consoles_fallback_command_does_not_see_the_api_key(tmp_path, monkeypatch):
    from app_harness import make_app, make_config, settle, submit

    monkeypatch.setenv("TR_CONSOLE_KEY", KEY)
    monkeypatch.setenv("TR_CONSOLE_PLAIN", "kept")
    show = "import os; print(os.environ.get('TR_CONSOLE_KEY', 'absent'), os.environ.get('TR_CONSOLE_PLAIN', 'absent'))"
    config = make_config(tmp_path, fallback={"command": [sys.executable, "-c", show], "timeout": 10.0}, systemone={"api_key_env": "TR_CONSOLE_KEY"})
    app = make_app(config)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        app.set_thresholds(1.0, 1.0)  # low band: the turn waits for the fallback
        await submit(app, pilot, "what is the weather on mars")
        await pilot.press("escape", "f")
        await settle(app, pilot)
        record = app.session.turns[0].fallback
        assert record is not None and record.exit_code == 0, record
        assert record.output == "absent kept\n"
