"""The console (real Textual app, Pilot) routing through the systemone backend against the mock."""

from __future__ import annotations

import pytest
from app_harness import make_app, make_config, notifications, screen_text, settle, submit

pytestmark = pytest.mark.usefixtures("profile_cache")

KEY = "sk-console-leak-check-93be0c41d7"


async def test_console_routes_through_the_mock(jev_mocks, tmp_path):
    config = make_config(tmp_path, backend="systemone", systemone={"base_url": jev_mocks.url(), "timeout": 10})
    app = make_app(config)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        await submit(app, pilot, "text Jordan that the deploy finished")
        await submit(app, pilot, "remind me to call the dentist tomorrow")
        decisions = [turn.decision for turn in app.session.turns]
        assert all(d is not None and d.error == "" and d.band != "unresolved" for d in decisions)
        assert {d.backend for d in decisions} == {"systemone"}
        assert {d.model for d in decisions} == {"jevcompat-mock-0.1"}
        await app.router.aclose()


async def test_console_with_a_wrong_key_is_unresolved_and_never_shows_it(jev_mocks, tmp_path, monkeypatch):
    monkeypatch.setenv("TR_CONSOLE_KEY", KEY)
    systemone = {"base_url": jev_mocks.url(key="the-right-key"), "api_key_env": "TR_CONSOLE_KEY", "timeout": 10}
    app = make_app(make_config(tmp_path, backend="systemone", systemone=systemone))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        await submit(app, pilot, "text Jordan that the deploy finished")
        decision = app.session.turns[-1].decision
        assert decision.band == "unresolved" and decision.action == "fallback"
        assert "HTTP 401 authentication_error" in decision.error
        shown = "\n".join(notifications(app)) + screen_text(app)
        assert "HTTP 401" in "\n".join(notifications(app))
        assert KEY not in shown
        await app.router.aclose()
    for saved in (tmp_path / "sessions").rglob("*.toml"):
        assert KEY not in saved.read_text()
