"""The server profile: probes against the mock (clean and faulty), the on-disk cache, `doctor` and `models`."""

from __future__ import annotations

import asyncio
import json

import pytest
from servers.scripted import ScriptedServer

from tui_router.catalog import load_catalog
from tui_router.cli import main
from tui_router.config import config_from_dict
from tui_router.decide.systemone import ProfileCache, ServerProfile, SystemOneBackend, SystemOneClient, probe_server
from tui_router.decide.systemone.profile import cap_note

pytestmark = pytest.mark.usefixtures("profile_cache")


@pytest.fixture(scope="module", autouse=True)
def _warm_mocks(jev_mocks):
    jev_mocks.warm((), ("cap-64",), ("first-question-only",), ("choice-second",), ("confidence-margin",), ("reject-jev-latest",))


def probe(url: str, model: str = "jev-latest") -> ServerProfile:
    client = SystemOneClient(config_from_dict({"systemone": {"base_url": url, "timeout": 10}}).systemone)

    async def run():
        try:
            return await probe_server(client, model)
        finally:
            await client.aclose()

    return asyncio.run(run())


def test_profile_of_the_clean_mock(jev_mocks):
    profile = probe(jev_mocks.url())
    assert profile.reachable and not profile.auth_failed
    assert profile.models_listed is True and profile.models == ["jev-latest", "mock"]
    assert profile.alias_accepted is True and profile.resolved_model == "jevcompat-mock-0.1"
    assert profile.max_options == 255
    assert profile.consistent is True
    assert profile.answers_every_question is True
    assert profile.confidence_definition == "reference"
    assert profile.complete and profile.usable


def test_profile_finds_the_cap_of_64(jev_mocks):
    profile = probe(jev_mocks.url("cap-64"))
    assert profile.max_options == 64
    assert "65 options rejected" in profile.max_options_note
    assert profile.option_limit(255) == 64 and profile.option_limit(40) == 40


def test_cap_note_cuts_a_long_rejection_at_a_grapheme_with_an_ellipsis(jev_mocks):
    # the mock's 422 text is longer than the note keeps: `doctor` showed "... (the server reject;
    # routing uses 64", cut mid-word with nothing to say so (the README: a cut ends in …)
    note = probe(jev_mocks.url("cap-64")).max_options_note
    assert note.startswith("65 options rejected: ") and note.endswith("…")
    assert len(note) <= len("65 options rejected: ") + 200
    family = "\U0001F469\u200d\U0001F469\u200d\U0001F467"  # one grapheme (five code points, two cells)
    assert cap_note(65, "x" * 198 + family + " and more") == "65 options rejected: " + "x" * 198 + "…"
    assert cap_note(65, "HTTP 422: too many") == "65 options rejected: HTTP 422: too many"


@pytest.mark.parametrize(
    ("fault", "field", "value", "note"),
    [
        ("first-question-only", "answers_every_question", False, "got answers to 1"),
        ("choice-second", "consistent", False, "not the most probable option"),
        ("confidence-margin", "confidence_definition", "margin", "top-1 minus top-2"),
    ],
)
def test_profile_notices_server_quirks(jev_mocks, fault, field, value, note):
    profile = probe(jev_mocks.url(fault))
    assert getattr(profile, field) == value
    assert note in (profile.multi_note + profile.consistency_note + profile.confidence_note)


def test_rejected_alias_is_reported_and_not_cached(jev_mocks, profile_cache):
    profile = probe(jev_mocks.url("reject-jev-latest"))
    assert profile.alias_accepted is False
    assert "Model not served: jev-latest" in profile.alias_note
    assert not profile.complete
    assert probe(jev_mocks.url("reject-jev-latest"), model="jev-1.13.0").alias_accepted is True


def test_first_use_probes_once_and_caches(profile_cache):
    catalog = load_catalog("demo")
    with ScriptedServer() as server:
        config = config_from_dict({"systemone": {"base_url": server.base_url}})
        first = SystemOneBackend(catalog, config.systemone)
        try:
            assert first.option_limit() == 255
        finally:
            first.close()
        probes = len(server.requests)
        assert probes >= 5  # /models, consistency, multi-question and size probes
        assert len(list(profile_cache.glob("*.json"))) == 1
        second = SystemOneBackend(catalog, config.systemone)
        try:
            assert second.option_limit() == 255
            assert second.profile is not None and second.profile.resolved_model == "scripted-model-1"
        finally:
            second.close()
        assert len(server.requests) == probes  # the cached profile was used: no new requests


def test_corrupt_or_foreign_cache_files_are_ignored(tmp_path):
    cache = ProfileCache(tmp_path)
    profile = ServerProfile(base_url="http://127.0.0.1:1/v1", model="m", checked_at="2020-01-01T00:00:00Z", alias_accepted=True)
    cache.save(profile)
    assert cache.load("http://127.0.0.1:1/v1", "m") is None  # stale
    fresh = profile.model_copy(update={"checked_at": "2999-01-01T00:00:00Z"})
    assert cache.save(fresh) is not None
    assert cache.load("http://127.0.0.1:1/v1", "m") == fresh
    cache.path_for("http://127.0.0.1:1/v1", "m").write_text("{not json")
    assert cache.load("http://127.0.0.1:1/v1", "m") is None


def test_probe_disabled_uses_the_configured_limit(jev_mocks):
    config = config_from_dict({"systemone": {"base_url": jev_mocks.url("cap-64"), "probe": False, "max_options": 100}})
    backend = SystemOneBackend(load_catalog("demo"), config.systemone)
    try:
        assert backend.option_limit() == 100 and backend.profile is None
    finally:
        backend.close()


# ---------------------------------------------------------------- the commands (in-process; one real subprocess below)


def test_doctor_prints_the_table_and_caches(jev_mocks, capsys, profile_cache):
    assert main(["doctor", "--base-url", jev_mocks.url("cap-64")]) == 0
    out = capsys.readouterr().out
    assert "largest option count    64" in out
    assert "routing uses 64 (two stages above that)" in out
    assert "model 'jev-latest'      accepted" in out
    assert "confidence definition   reference" in out
    assert "$TYPESAFE_API_KEY" in out
    assert f"cached in {profile_cache}" in out


def test_doctor_exit_codes(jev_mocks, capsys, unused_url):
    assert main(["doctor", "--base-url", jev_mocks.url("choice-second")]) == 1
    assert "answers consistent      no" in capsys.readouterr().out
    assert main(["doctor", "--json", "--base-url", jev_mocks.url("first-question-only")]) == 0
    assert json.loads(capsys.readouterr().out)["answers_every_question"] is False
    assert main(["doctor", "--base-url", unused_url]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cannot connect" in err[0]


def test_models_lists_the_server_models(jev_mocks, capsys, unused_url):
    assert main(["models", "--base-url", jev_mocks.url()]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("jev-latest  2026-09-24  jevcompat reference mock")
    assert main(["models", "--json", "--base-url", jev_mocks.url()]) == 0
    assert [m["name"] for m in json.loads(capsys.readouterr().out)] == ["jev-latest", "mock"]
    assert main(["models", "--base-url", unused_url]) == 2
    assert "cannot connect" in capsys.readouterr().err


def test_models_without_a_base_url_says_how_to_set_it(capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TUI_ROUTER_CONFIG", str(tmp_path / "none.toml"))
    (tmp_path / "none.toml").write_text("")
    assert main(["models"]) == 2
    err = capsys.readouterr().err
    assert "set [systemone] base_url in the config" in err and "--base-url" in err


@pytest.fixture()
def unused_url():
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"
