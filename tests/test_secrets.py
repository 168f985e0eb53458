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


# -- a short key (a placeholder for a local server) is redacted as a whole word ---------------------


@pytest.mark.parametrize("key", ["e", "sk", "dev1", KEY])
def test_short_and_normal_keys_are_redacted_and_the_rest_stays_readable(key, echo, tmp_path):
    # A one-character key "e" was replaced everywhere: the model name read "j[redacted]v s[redacted]..."
    # and the option ids in the reply's probabilities were rewritten too, so every answer was a
    # choice outside the offered set (unresolved). Now a short key goes as a whole word only.
    config = tmp_path / "tui-router.toml"
    config.write_text(f'backend = "systemone"\n[systemone]\nbase_url = "{echo.base_url}"\napi_key_env = "TR_ECHO_KEY"\ntimeout = 10\n')
    env = {"TUI_ROUTER_CONFIG": str(config), "XDG_CACHE_HOME": str(tmp_path / "cache"), "TR_ECHO_KEY": key}
    routed = tui_router("route", "--json", MESSAGE, env=env)
    assert routed.returncode == 0, routed.stderr
    decision = json.loads(routed.stdout)
    assert decision["model"] == "jev served to Bearer [redacted]"
    assert decision["band"] != "unresolved" and decision["choice"] in decision["probabilities"], decision
    assert set(decision["probabilities"]) == {c["id"] for c in decision["candidates"]} | {"defer_to_llm"}
    models = tui_router("models", "--json", env=env)
    assert models.returncode == 0, models.stderr
    [listed] = json.loads(models.stdout)
    assert (listed["name"], listed["description"]) == ("echo Bearer [redacted]", "served to Bearer [redacted]")
    for done in (routed, models):
        assert f"Bearer {key}" not in done.stdout + done.stderr
    if len(key) > 4:
        assert key not in routed.stdout + models.stdout


def test_the_redactor_replaces_a_short_key_as_a_word_and_a_long_one_everywhere() -> None:
    from tui_router.decide.systemone.client import WHOLE_WORD_KEY_CHARS, redactor

    short = redactor("e")
    assert short("the server sent Bearer e.") == "the server sent Bearer [redacted]."
    assert short('{"key": "e"} e') == '{"key": "[redacted]"} [redacted]'
    assert short("send_sms e-mail e_1 been") == "send_sms e-mail e_1 been"  # part of a word: kept
    assert redactor("dev1")("token=dev1&x=dev12") == "token=[redacted]&x=dev12"
    long_key = "k" * WHOLE_WORD_KEY_CHARS
    assert redactor(long_key)(f"x{long_key}y and {long_key}") == "x[redacted]y and [redacted]"  # a long key: every occurrence
    assert redactor("")("unchanged") == "unchanged"
    assert redactor("a.b")("a.b axb") == "[redacted] axb"  # the key is literal text, not a pattern


def test_an_error_text_under_a_one_character_key_stays_readable(tmp_path):
    from servers.scripted import ScriptedServer, Step

    server = ScriptedServer()
    server.script.extend(Step(401, {"detail": {"error_type": "unauthorized", "message": "key e is not valid"}}) for _ in range(5))
    server.thread.start()
    try:
        config = tmp_path / "tui-router.toml"
        config.write_text(f'backend = "systemone"\n[systemone]\nbase_url = "{server.base_url}"\napi_key_env = "TR_SHORT_KEY"\nprobe = false\n')
        done = tui_router("route", MESSAGE, env={"TUI_ROUTER_CONFIG": str(config), "TR_SHORT_KEY": "e"})
    finally:
        server.server.shutdown()
        server.server.server_close()
    assert done.returncode == 1, done.stderr
    [line] = [x for x in done.stderr.splitlines() if x.startswith("tui-router: unresolved:")]
    assert "the server refused the API key in $TR_SHORT_KEY; check it" in line, line
    assert "HTTP 401 unauthorized: key [redacted] is not valid" in line, line  # the echoed key, a word, is caught
