"""Lone surrogates outside the session writers: a System One server's JSON ("\\ud800" in the model
name, the choice, a probability's key) or a message that holds one reaches the
fallback command, the arguments command, the request body, the profile cache and the CLI's output.
Each replaces it (U+FFFD, or an escape where the text is shown) instead of failing with
UnicodeEncodeError."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from servers.scripted import ScriptedServer, Step, valid_reply

from tui_router.arguments import run_arguments_command
from tui_router.catalog import Tool
from tui_router.config import ArgumentsConfig, FallbackConfig
from tui_router.decide.systemone.profile import ProfileCache
from tui_router.fallback import run_fallback
from tui_router.textsafe import bounded_name, escape_for_data, visible

COMMANDS = Path(__file__).parent / "commands"
MESSAGE = "text Jordan the deploy finished"


@pytest.fixture()
def server():
    scripted = ScriptedServer()
    scripted.thread.start()
    yield scripted
    scripted.server.shutdown()
    scripted.server.server_close()


def route(server: ScriptedServer, tmp_path: Path, *args: str, message: str = MESSAGE) -> subprocess.CompletedProcess:
    config = tmp_path / "empty.toml"
    config.write_text("", encoding="utf-8")
    env = {**os.environ, "TUI_ROUTER_CONFIG": str(config), "XDG_CACHE_HOME": str(tmp_path / "cache"), "TYPESAFE_API_KEY": ""}
    argv = [sys.executable, "-m", "tui_router", "route", "--backend", "systemone", "--base-url", server.base_url, *args, message]
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60)


def odd_model(request: dict) -> dict:
    return valid_reply(request, model="jev\ud800-model")  # json.dumps sends it as the escape "\ud800"


def odd_choice(request: dict) -> dict:
    reply = odd_model(request)
    (answer,) = reply["answers"].values()
    answer["choice"] = next(iter(answer["probabilities"])) + "\ud800"
    answer["probabilities"] = {f"{key}\udc80": p for key, p in answer["probabilities"].items()}
    return reply


def test_a_model_name_with_a_lone_surrogate_routes_and_is_cached(server: ScriptedServer, tmp_path: Path) -> None:
    # was: unresolved, "Error serializing to JSON: UnicodeEncodeError" (the profile cache's write),
    # and a stray .profile-*.tmp file left in the cache
    server.script.extend([Step(body=odd_model)] * 60)
    done = route(server, tmp_path, "--json")
    assert done.returncode == 0, done.stderr
    decision = json.loads(done.stdout)
    assert decision["error"] == "" and decision["choice"] == "send_sms" and decision["model"] == "jev\ufffd-model"
    profiles = tmp_path / "cache" / "tui-router" / "profiles"
    cached = list(profiles.iterdir())
    assert len(cached) == 1 and cached[0].suffix == ".json"
    assert json.loads(cached[0].read_text(encoding="utf-8"))["resolved_model"] == "jev\ufffd-model"
    text = route(server, tmp_path)  # the text output, from the cached profile
    assert text.returncode == 0, text.stderr
    assert "model       jev\ufffd-model (systemone)" in text.stdout and "Traceback" not in text.stderr


def test_a_choice_with_a_lone_surrogate_is_an_unresolved_turn_in_a_sentence(server: ScriptedServer, tmp_path: Path) -> None:
    server.script.extend([Step(body=odd_choice)] * 60)
    done = route(server, tmp_path, "--json")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    decision = json.loads(done.stdout)
    assert decision["band"] == "unresolved" and decision["choice"] is None
    assert decision["error"].endswith("the choice 'send_sms\ufffd' is not one of the offered options")
    assert done.stderr.startswith("tui-router: unresolved: ") and "UnicodeEncodeError" not in done.stderr


async def test_the_request_body_takes_a_lone_surrogate_in_the_message(server: ScriptedServer) -> None:
    from tui_router.config import SystemOneConfig
    from tui_router.decide.systemone.client import SystemOneClient

    client = SystemOneClient(SystemOneConfig(base_url=server.base_url))
    try:
        reply = await client.post_json("/systemone", {"model": "m", "state": {"message": "bad \ud800 byte"}, "questions": {}})
    finally:
        await client.aclose()
    assert reply.error == ""
    assert server.posts[-1].json()["state"]["message"] == "bad \ufffd byte"


async def test_the_fallback_command_gets_a_lone_surrogate_as_a_replacement_character() -> None:
    config = FallbackConfig(command=[sys.executable, str(COMMANDS / "upper.py")], timeout=30)
    result = await run_fallback("bad \ud800 byte", config)
    assert result.error == "" and result.exit_code == 0
    assert result.output == "LLM: BAD \ufffd BYTE\nenv chars: 10\n"


async def test_the_arguments_command_gets_a_lone_surrogate_as_a_replacement_character() -> None:
    tool = Tool(id="send_email", when_to_use="Send an e-mail.", schema={"type": "object"})
    config = ArgumentsConfig(command=[sys.executable, str(COMMANDS / "args_maker.py"), "good"], timeout=30)
    result = await run_arguments_command(tool, "mail ana\ud800@example.com the notes", config)
    assert result.error == "" and result.values["to"] == "ana\ufffd@example.com" and result.values["tool"] == "send_email"


async def test_the_arguments_commands_json_with_a_lone_surrogate_escape_reads_as_a_replacement_character() -> None:
    tool = Tool(id="send_email", when_to_use="Send an e-mail.", schema={"type": "object", "properties": {"to": {"type": "string"}}})
    printer = [sys.executable, "-c", "print(r'{\"to\": \"ana\\ud800@example.com\", \"note\": \"\\ud83d\\ude00\"}')"]
    result = await run_arguments_command(tool, "mail ana the notes", ArgumentsConfig(command=printer, timeout=30))
    assert result.error == "" and result.valid
    assert result.values == {"to": "ana\ufffd@example.com", "note": "\U0001f600"}  # a pair stays the character
    json.dumps(result.values, ensure_ascii=False).encode("utf-8")  # raised UnicodeEncodeError before


def test_the_profile_cache_writes_a_server_name_with_a_lone_surrogate(tmp_path: Path) -> None:
    from tui_router.decide.systemone.profile import PROFILE_VERSION, ServerProfile

    cache = ProfileCache(tmp_path)
    profile = ServerProfile(version=PROFILE_VERSION, base_url="http://127.0.0.1:1/v1", model="m", checked_at="2026-12-01T00:00:00Z",
                            resolved_model="x\ud800", models=["y\udc80"])
    path = cache.save(profile)
    assert path is not None and [p.name for p in tmp_path.iterdir()] == [path.name]
    assert json.loads(path.read_text(encoding="utf-8"))["models"] == ["y\ufffd"]


def test_shown_text_escapes_a_lone_surrogate() -> None:
    assert visible("a\ud800b") == "a\\ud800b"
    assert json.loads(escape_for_data(json.dumps({"m": "a\ud800"}, ensure_ascii=False))) == {"m": "a\ud800"}  # reads back the same
    assert bounded_name("jev\ud800 model") == "jev model"
