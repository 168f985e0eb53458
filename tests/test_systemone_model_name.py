"""A System One server's model name is untrusted text: it reaches every saved turn, the route output
and the status bar. A 100k-character or control-character name is stored bounded and clean, and a
session holding one (written now, or by a version that stored it whole) loads back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from servers.scripted import ScriptedServer, Step, valid_reply

from tui_router.catalog import load_catalog
from tui_router.cli import main
from tui_router.config import config_from_dict
from tui_router.route import Router
from tui_router.session import Turn, TurnDecision, load_session, new_session, save_session
from tui_router.textsafe import NAME_MAX

MESSAGE = "Text Jordan that the deploy finished."
HUGE = "jev-" + "x" * 100_000
HOSTILE = "jev\x1b]0;PWNED\x07-\x1b[2J\r\n\u202e-7b\x9b31m"
CLEANED = "jev ]0;PWNED - [2J -7b 31m"  # each run of control characters and spaces: one space
KEY = "sk-model-name-splice-3e9b1f7c5a2d"


@pytest.fixture(scope="module")
def server():
    with ScriptedServer() as running:
        yield running


@pytest.fixture()
def scripted(server):
    server.reset()
    return server


def route_with_model(url: str, model: str):
    """One turn routed by a server that names itself `model`."""
    config = config_from_dict({"backend": "systemone", "systemone": {"base_url": url, "timeout": 5, "probe": False}})
    router = Router(load_catalog("demo"), config)
    try:
        return router.route(MESSAGE)
    finally:
        router.backend.close()


def saved_and_loaded(tmp_path: Path, decision) -> tuple[str, object]:
    session = new_session("demo", "systemone", "jev-latest")
    session.turns.append(Turn(message=MESSAGE, decision=decision.to_turn_decision()))
    path = save_session(session, tmp_path / "s.toml")
    return path.read_text(encoding="utf-8"), load_session(path)


def test_a_100k_character_model_name_is_stored_cut_and_the_session_loads_back(scripted, tmp_path):
    scripted.push(Step(200, lambda request: valid_reply(request, model=HUGE)))
    decision = route_with_model(scripted.base_url, HUGE)
    assert decision.error == "" and decision.choice == "send_sms"  # the name never costs the answer
    assert decision.model == HUGE[: NAME_MAX - 1] + "…"  # a visible cut
    assert decision.to_json()["model"] == decision.model
    text, loaded = saved_and_loaded(tmp_path, decision)
    assert len(text) < 4000  # was 100 kB per turn
    assert loaded.turns[0].decision.model == decision.model
    assert loaded.turns[0].decision.choice == "send_sms"


def test_control_characters_in_the_model_name_are_stripped(scripted, tmp_path):
    scripted.push(Step(200, lambda request: valid_reply(request, model=HOSTILE)))
    decision = route_with_model(scripted.base_url, HOSTILE)
    assert decision.error == ""
    assert decision.model == CLEANED
    text, loaded = saved_and_loaded(tmp_path, decision)
    assert "\\u001b" not in text and "\\u0007" not in text and "\\r" not in text
    assert loaded.turns[0].decision.model == CLEANED


def test_a_name_of_nothing_but_control_characters_falls_back_to_the_configured_model(scripted):
    scripted.push(Step(200, lambda request: valid_reply(request, model="\x1b\x07\r\n")))
    decision = route_with_model(scripted.base_url, "")
    assert decision.error == "" and decision.model == "jev-latest"


def test_a_rejected_answer_quotes_the_bounded_name(scripted):
    bad = lambda request: valid_reply(request, model=HUGE) | {"answers": {}}  # noqa: E731
    scripted.push(Step(200, bad))
    decision = route_with_model(scripted.base_url, HUGE)
    assert decision.band.value == "unresolved" and "no answer to question 'tool'" in decision.error
    assert len(decision.model) == NAME_MAX and "x" * 200 not in decision.error


def test_a_session_an_older_version_wrote_with_the_whole_name_loads_and_saves_bounded(tmp_path):
    """Files written before the cut hold the name whole (and TOML-escaped controls): they load, and
    the next save stores the bounded name."""
    path = tmp_path / "old.toml"
    header = json.dumps(HUGE)
    turn_model = json.dumps(HOSTILE)  # JSON string escapes are valid TOML basic-string escapes
    path.write_text(
        f'[session]\nid = "old"\ncatalog = "demo"\nmodel = {header}\n\n'
        f'[[turns]]\nmessage = "{MESSAGE}"\nlabel = "send_sms"\n\n[turns.decision]\nchoice = "send_sms"\nmodel = {turn_model}\n',
        encoding="utf-8",
    )
    session = load_session(path)
    assert session.session.model == HUGE[: NAME_MAX - 1] + "…"
    assert session.turns[0].decision.model == CLEANED
    assert session.turns[0].label == "send_sms"  # nothing else changed
    save_session(session)
    assert path.stat().st_size < 2000
    assert load_session(path).session.model == session.session.model


def test_a_key_echoed_with_control_characters_in_it_is_never_spliced_whole(scripted, tmp_path, monkeypatch):
    """The key's redaction runs over the reply as it came; a BEL inside the echoed key hides it
    from that, so taking the BEL out must not put the key back together."""
    monkeypatch.setenv("TR_NAME_KEY", KEY)
    echo = lambda request: valid_reply(request, model=request["_headers"]["Authorization"].replace("sk-model", "sk-\x07model"))  # noqa: E731
    scripted.push(Step(200, echo))
    config = config_from_dict(
        {"backend": "systemone", "systemone": {"base_url": scripted.base_url, "timeout": 5, "probe": False, "api_key_env": "TR_NAME_KEY"}}
    )
    router = Router(load_catalog("demo"), config)
    try:
        decision = router.route(MESSAGE)
    finally:
        router.backend.close()
    assert scripted.posts[0].headers["authorization"] == f"Bearer {KEY}"  # the key was sent, and echoed
    assert decision.error == "" and decision.model == "Bearer sk- " + KEY.removeprefix("sk-")
    text, loaded = saved_and_loaded(tmp_path, decision)
    assert KEY not in decision.model and KEY not in text and KEY not in json.dumps(decision.to_json())


def test_route_prints_the_bounded_name(scripted, monkeypatch, capsys, tmp_path):
    config = tmp_path / "empty.toml"
    config.write_text(f'backend = "systemone"\n[systemone]\nbase_url = "{scripted.base_url}"\nprobe = false\n')
    monkeypatch.setenv("TUI_ROUTER_CONFIG", str(config))
    scripted.push(Step(200, lambda request: valid_reply(request, model=HUGE + HOSTILE)))
    assert main(["route", MESSAGE]) == 0
    out = capsys.readouterr().out
    (line,) = [row for row in out.splitlines() if row.startswith("model ")]
    assert "x" * 200 not in line and "…" in line and "\\x1b" not in line and len(line) < NAME_MAX + 60


def test_a_name_of_control_characters_alone_is_no_name_and_reads_back_so(tmp_path):
    session = new_session("demo", "systemone", "\x1b\x07")
    session.turns.append(Turn(message=MESSAGE, decision=TurnDecision(choice="send_sms", model="\r\n\x9b")))
    assert session.session.model is None and session.turns[0].decision.model is None
    loaded = load_session(save_session(session, tmp_path / "s.toml"))
    assert loaded.session.model is None and loaded.turns[0].decision.model is None
    assert loaded.turns == session.turns
