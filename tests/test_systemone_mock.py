"""The systemone backend against `jevcompat mock` (real subprocesses on loopback), clean and with faults.

Every fault ends in the behaviour issue 4 asks for: a usable answer where the fault does not touch
what routing relies on, otherwise band unresolved, action fallback and an error a person can act on.
"""

from __future__ import annotations

import asyncio
import math
from contextlib import contextmanager

import pytest

from tui_router.config import config_from_dict
from tui_router.decide.base import Question
from tui_router.decide.systemone import SystemOneBackend
from tui_router.policy import Action, Band
from tui_router.route import Router, build_router

pytestmark = pytest.mark.usefixtures("profile_cache")

FAULTS = ["choice-second", "choice-sum", "confidence-over", "nan", "xssi-200", "wrong-route", "reject-jev-latest",
          "text-errors", "choice-key-case", "choice-no-confidence", "first-question-only", "validation-400"]


@pytest.fixture(scope="module", autouse=True)
def _warm_mocks(jev_mocks):
    jev_mocks.warm((), *[(fault,) for fault in FAULTS])

MESSAGE = "Text Jordan that the deploy finished."


def config_for(url: str, *, policy: dict | None = None, retrieval: dict | None = None, **systemone):
    data: dict = {"backend": "systemone", "systemone": {"base_url": url, "timeout": 10, **systemone}}
    if policy:
        data["policy"] = policy
    if retrieval:
        data["retrieval"] = retrieval
    return config_from_dict(data)


@contextmanager
def router(url: str, **kwargs):
    built = build_router(config_for(url, **kwargs))
    try:
        yield built
    finally:
        built.backend.close()


def route(url: str, message: str = MESSAGE, **kwargs):
    with router(url, **kwargs) as r:
        return r.route(message)


def assert_unresolved(decision, *fragments: str):
    assert decision.band is Band.unresolved
    assert decision.action is Action.fallback
    assert decision.probabilities == {}
    for fragment in fragments:
        assert fragment in decision.error, decision.error


def assert_valid(decision):
    assert decision.error == ""
    assert decision.band is not Band.unresolved
    assert set(decision.probabilities) == set(decision.options)
    assert math.isclose(sum(decision.probabilities.values()), 1.0, abs_tol=0.01)
    assert decision.choice == max(decision.probabilities, key=decision.probabilities.get)


# ---------------------------------------------------------------- the clean server


def test_clean_mock_routes_and_records_the_resolved_model(jev_mocks):
    decision = route(jev_mocks.url())
    assert_valid(decision)
    assert decision.backend == "systemone"
    assert decision.model == "jevcompat-mock-0.1"  # what the server says answered, not the alias we sent
    assert decision.path == "single"
    assert decision.options == [c.id for c in decision.candidates] + ["defer_to_llm"]
    assert "send_sms" in decision.options
    turn = decision.to_turn_decision()
    assert turn.model == "jevcompat-mock-0.1" and turn.backend == "systemone"
    # the mock is deterministic: the reported confidence is the reference formula
    assert math.isclose(decision.confidence, decision.reported_confidence, abs_tol=1e-9)


def test_sync_and_concurrent_async_agree(jev_mocks):
    url = jev_mocks.url()
    messages = [MESSAGE, "Create a calendar event tomorrow at 10", "Export the sales table as CSV", "what is the meaning of life"] * 5
    with router(url) as r:
        expected = [r.route(m) for m in messages[:4]]

    async def many():
        concurrent = Router(r.catalog, r.config)
        try:
            return await asyncio.gather(*(concurrent.aroute(m) for m in messages))
        finally:
            await concurrent.aclose()

    got = asyncio.run(many())
    for index, decision in enumerate(got):
        assert_valid(decision)
        assert decision.choice == expected[index % 4].choice
        assert decision.probabilities == expected[index % 4].probabilities


def test_one_backend_serves_several_event_loops(jev_mocks):
    """The console's loop, an eval's loop and the CLI's private loop each get their own client."""
    with router(jev_mocks.url()) as r:
        first = asyncio.run(r.aroute(MESSAGE))
        second = asyncio.run(r.aroute(MESSAGE))
        third = r.route(MESSAGE)
    assert first.probabilities == second.probabilities == third.probabilities


# ---------------------------------------------------------------- faults that must fail closed


@pytest.mark.parametrize(
    ("fault", "fragments"),
    [
        ("choice-second", ["was rejected", "is not the most probable option"]),
        ("choice-sum", ["was rejected", "probabilities sum to"]),
        ("confidence-over", ["was rejected", "reported confidence 1.5 is outside [0, 1]"]),
        ("nan", ["HTTP 200 but the body is not JSON", "NaN"]),
        ("xssi-200", ["HTTP 200 but the body is not JSON", ")]}'"]),
        ("wrong-route", ["HTTP 404 not_found", "No route /v1/systemone", "check [systemone] base_url"]),
        ("reject-jev-latest", ["HTTP 404 not_found", "Model not served: jev-latest", "set [systemone] model"]),
    ],
)
def test_faults_end_unresolved(jev_mocks, fault, fragments):
    decision = route(jev_mocks.url(fault))
    assert_unresolved(decision, *fragments)
    assert decision.action is not Action.execute


def test_reject_jev_latest_works_with_a_pinned_model(jev_mocks):
    assert_valid(route(jev_mocks.url("reject-jev-latest"), model="jev-1.13.0"))


def test_text_errors_are_reported_verbatim(jev_mocks):
    decision = route(jev_mocks.url("text-errors"), model="no-such-model")
    assert_unresolved(decision, "HTTP 400: Unknown model: no-such-model", "check [systemone] model")


def test_choice_key_case(jev_mocks):
    """Catalog ids are lower case, so routing is untouched; a mixed-case option set fails closed."""
    url = jev_mocks.url("choice-key-case")
    assert_valid(route(url))
    backend = SystemOneBackend(build_router(config_for(url, probe=False)).catalog, config_for(url, probe=False).systemone)
    try:
        question = Question(
            message="Book a room for Friday",
            options={"Calendar": "Tools for calendar: create_event", "Email": "Tools for email: send_email", "defer_to_llm": "None fits."},
            none_option="defer_to_llm",
        )
        answer = backend.decide(question)
    finally:
        backend.close()
    assert "not one of the offered options" in answer.error or "probability keys do not match" in answer.error


def test_choice_without_confidence(jev_mocks):
    """No reported confidence: the recomputed one bands the turn; a policy that needs it is unresolved."""
    url = jev_mocks.url("choice-no-confidence")
    decision = route(url)
    assert_valid(decision)
    assert decision.reported_confidence is None and decision.confidence is not None
    needs_reported = route(url, policy={"confidence": "reported"})
    assert needs_reported.band is Band.unresolved and "no confidence" in needs_reported.error


def test_first_question_only_does_not_touch_routing(jev_mocks):
    """Routing asks one question per request, so a server answering only the first is fine."""
    assert_valid(route(jev_mocks.url("first-question-only")))


def test_validation_400_is_reported_and_not_retried(jev_mocks):
    url = jev_mocks.url("validation-400")
    config = config_for(url, probe=False)
    backend = SystemOneBackend(build_router(config).catalog, config.systemone)
    options = {f"option_{i:03d}": f"Option {i}." for i in range(300)} | {"defer_to_llm": "None fits."}
    try:
        answer = backend.decide(Question(message="pick one", options=options, none_option="defer_to_llm"))
    finally:
        backend.close()
    assert "HTTP 400: Dictionary should have at most 255 items" in answer.error
    assert "the server rejected the request" in answer.error


# ---------------------------------------------------------------- keys


KEY = "sk-tui-router-test-0123456789abcdef"


def test_right_key_is_sent_as_bearer(jev_mocks, monkeypatch):
    monkeypatch.setenv("TR_TEST_KEY", KEY)
    decision = route(jev_mocks.url(key=KEY), api_key_env="TR_TEST_KEY")
    assert_valid(decision)


def test_wrong_and_missing_key_fail_closed_without_leaking(jev_mocks, monkeypatch, tmp_path, caplog):
    from tui_router.session import Turn, new_session, save_session

    url = jev_mocks.url(key="the-right-key")
    monkeypatch.setenv("TR_TEST_KEY", KEY)
    wrong = route(url, api_key_env="TR_TEST_KEY")
    assert_unresolved(wrong, "HTTP 401 authentication_error", "refused the API key in $TR_TEST_KEY")
    monkeypatch.delenv("TR_TEST_KEY")
    missing = route(url, api_key_env="TR_TEST_KEY")
    assert_unresolved(missing, "HTTP 403 authentication_error", "no API key was sent: set $TR_TEST_KEY")

    with router(url) as r:
        session = new_session(r.catalog.name, "systemone", "jev-latest")
    session.turns.append(Turn(message=MESSAGE, decision=wrong.to_turn_decision()))
    path = save_session(session, tmp_path / "s.toml")
    for text in (str(wrong.to_json()), wrong.model_dump_json(), path.read_text(), caplog.text):
        assert KEY not in text
