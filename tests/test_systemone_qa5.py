"""QA pass 5 (an operator on a real decision model over HTTP): one test per defect found, each against a
real loopback server and the real CLI in a subprocess."""

from __future__ import annotations

import json

import pytest
from cli_harness import tui_router
from servers.scripted import ScriptedServer

MESSAGE = "Text Jordan that the deploy finished."
SECRET = "sk-qa5-key-7c1e9b3f5a"


@pytest.fixture()
def scripted():
    server = ScriptedServer()
    server.thread.start()
    try:
        yield server
    finally:
        server.server.shutdown()
        server.server.server_close()


def _env(tmp_path, url: str, key: str) -> dict[str, str]:
    config = tmp_path / "tui-router.toml"
    config.write_text(f'backend = "systemone"\n[systemone]\nbase_url = "{url}"\napi_key_env = "QA5_KEY"\ntimeout = 5\nprobe = false\n')
    return {"TUI_ROUTER_CONFIG": str(config), "XDG_CACHE_HOME": str(tmp_path / "cache"), "QA5_KEY": key}


@pytest.mark.parametrize(
    ("key", "what"),
    [
        (f"{SECRET}\nsecond-line", "a line break"),  # a key file pasted with its trailing comment line
        (f"{SECRET}\rx", "a line break"),
        (f"{SECRET}\x01x", "a control character"),
        (f"{SECRET}Ü", "a non-ASCII character"),
    ],
)
def test_a_key_an_http_header_cannot_carry_is_one_sentence_never_quoted_and_never_sent(scripted, tmp_path, key, what):
    # httpx refused the header with its value in the message, which (escaped, so the scrubber missed
    # it) reached stderr and the decision as "cannot connect (Illegal header value b'Bearer sk-...')",
    # after three pointless retries; a non-ASCII key was "the systemone backend failed: 'ascii' codec ..."
    env = _env(tmp_path, scripted.base_url, key)
    routed = tui_router("route", "--json", MESSAGE, env=env)
    assert routed.returncode == 1, routed.stderr
    decision = json.loads(routed.stdout)
    assert decision["band"] == "unresolved" and decision["action"] == "fallback"
    assert decision["error"] == (
        f"{scripted.base_url}/systemone: the API key in $QA5_KEY holds {what}, which an HTTP header cannot carry; "
        "it was not sent: set $QA5_KEY to the key alone (one line, as issued)"
    )
    doctor = tui_router("doctor", env=env)
    assert doctor.returncode == 2 and "holds " + what in doctor.stderr
    assert scripted.requests == []  # nothing went out: no retries against a header that cannot be sent
    for text in (routed.stdout, routed.stderr, doctor.stdout, doctor.stderr):
        assert SECRET not in text and "Illegal header" not in text and "codec" not in text


def test_a_key_with_only_a_trailing_newline_is_still_sent(scripted, tmp_path):
    env = _env(tmp_path, scripted.base_url, SECRET + "\n")  # `export KEY=$(cat keyfile)` keeps none, `read` may
    routed = tui_router("route", "--json", MESSAGE, env=env)
    assert routed.returncode == 0, routed.stderr
    assert scripted.posts[0].headers["authorization"] == f"Bearer {SECRET}"
