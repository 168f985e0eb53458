"""Pure parts of the systemone backend: retry delays, strict JSON, error texts, answer translation, config."""

from __future__ import annotations

import unicodedata
from datetime import UTC, datetime

import pytest

from tui_router.config import config_from_dict
from tui_router.decide.base import Answer, Question, check_answer
from tui_router.decide.systemone import (
    BACKOFF_CAP,
    NotJSON,
    answer_from_reply,
    describe_error_body,
    models_from_reply,
    parse_json_strict,
    public_url,
    question_body,
    retry_delay,
)
from tui_router.errors import ConfigError

QUESTION = Question(
    message="Text Jordan that the deploy finished.",
    options={"send_sms": "Send a text.", "send_email": "Send an email.", "defer_to_llm": "None fits."},
    none_option="defer_to_llm",
    retrieved_tools=["send_sms", "send_email"],
)


def reply(choice="send_sms", probabilities=None, confidence=0.7, **extra):
    answer = {"type": "choice", "choice": choice, "probabilities": probabilities or {"send_sms": 0.8, "send_email": 0.15, "defer_to_llm": 0.05}}
    if confidence is not None:
        answer["confidence"] = confidence
    return {"model": "jev-1.13.0", "answers": {"tool": answer}, "usage": {"input_tokens": 12, "output_tokens": 2}, **extra}


# ---------------------------------------------------------------- retry delays


def test_retry_after_ms_wins_over_retry_after():
    assert retry_delay({"Retry-After": "7", "retry-after-ms": "250"}, 0) == 0.25


def test_retry_after_seconds_and_http_date():
    assert retry_delay({"Retry-After": "3"}, 0) == 3.0
    now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
    assert retry_delay({"Retry-After": "Thu, 01 Jan 2026 12:00:05 GMT"}, 0, now=now) == 5.0
    # a date in the past means "now"
    assert retry_delay({"Retry-After": "Thu, 01 Jan 2026 11:00:00 GMT"}, 0, now=now) == 0.0


def test_backoff_without_header_grows_and_is_capped():
    for attempt in range(8):
        step = min(BACKOFF_CAP, 0.25 * 2**attempt)
        delay = retry_delay({}, attempt, base=0.25)
        assert step / 2 <= delay <= step
    # garbage headers fall back to the backoff instead of failing
    assert 0.125 <= retry_delay({"Retry-After": "soon", "retry-after-ms": "x"}, 0, base=0.25) <= 0.25


# ---------------------------------------------------------------- strict JSON and error bodies


@pytest.mark.parametrize("raw", [b'{"x": NaN}', b'{"x": Infinity}', b'{"x": -Infinity}', b")]}'\n{}", b"\xff\xfe", b""])
def test_parse_json_strict_rejects_non_json(raw):
    with pytest.raises(NotJSON):
        parse_json_strict(raw)


def test_parse_json_strict_accepts_json():
    assert parse_json_strict(b'{"a": [1, 2.5, null]}') == {"a": [1, 2.5, None]}


def test_describe_error_bodies():
    assert describe_error_body(b'{"detail": {"error_type": "not_found", "message": "Model not served: jev-latest"}}') == (
        "not_found",
        "Model not served: jev-latest",
    )
    kind, message = describe_error_body(
        b'{"detail": [{"loc": ["body", "questions", "tool", "choice", "criteria"], "msg": "Dictionary should have at most 64 items", "type": "too_long"}]}'
    )
    assert kind == "validation_error"
    assert message == "questions.tool.choice.criteria: Dictionary should have at most 64 items"
    assert describe_error_body(b'{"error": "bad key"}') == ("", "bad key")
    assert describe_error_body(b"Unknown model: nope\n") == ("", "Unknown model: nope")
    html = b"<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head><body><h1>Bad</h1>" + b"x" * 5000 + b"</body></html>"
    assert describe_error_body(html, "text/html") == ("", "an HTML page (502 Bad Gateway)")
    assert describe_error_body(b"") == ("", "empty body")


def test_public_url_drops_credentials_and_query():
    assert public_url("https://user:secret@api.example.com:8443/v1?token=abc") == "https://api.example.com:8443/v1"


def test_models_from_reply_shapes():
    assert [m.name for m in models_from_reply({"models": [{"name": "jev-latest"}, {"name": "mock"}]})] == ["jev-latest", "mock"]
    assert [m.name for m in models_from_reply({"data": [{"id": "gpt-x"}]})] == ["gpt-x"]
    assert models_from_reply({"status": "ok", "model": "sparrow"}) is None


# ---------------------------------------------------------------- the request


def test_question_body_is_one_choice_question():
    body = question_body(QUESTION, "jev-latest")
    assert body == {
        "model": "jev-latest",
        "state": {"message": QUESTION.message, "retrieved_tools": ["send_sms", "send_email"]},
        "questions": {"tool": {"type": "choice", "instructions": QUESTION.instructions, "criteria": QUESTION.options}},
    }


# ---------------------------------------------------------------- the answer


def test_valid_reply_becomes_answer():
    answer = answer_from_reply(reply(), QUESTION)
    assert answer.choice == "send_sms"
    assert answer.probabilities == {"send_sms": 0.8, "send_email": 0.15, "defer_to_llm": 0.05}
    assert answer.reported_confidence == 0.7
    assert answer.model == "jev-1.13.0"
    assert answer.usage == {"input_tokens": 12, "output_tokens": 2}
    assert check_answer(answer, list(QUESTION.options)) == ""


def test_nfd_keys_are_matched_after_nfc():
    options = {"café_search": "Search cafés.", "send_sms": "Send a text.", "defer_to_llm": "None fits."}
    question = QUESTION.model_copy(update={"options": options})
    nfd = unicodedata.normalize("NFD", "café_search")
    assert nfd != "café_search"
    data = reply(choice=nfd, probabilities={nfd: 0.7, "send_sms": 0.2, "defer_to_llm": 0.1})
    answer = answer_from_reply(data, question)
    assert answer.choice == "café_search"
    assert set(answer.probabilities) == set(options)
    assert check_answer(answer, list(options)) == ""


def test_key_case_mismatch_is_rejected():
    options = {"Calendar": "Tools for calendar.", "Email": "Tools for email.", "defer_to_llm": "None fits."}
    question = QUESTION.model_copy(update={"options": options})
    answer = answer_from_reply(reply(choice="calendar", probabilities={"calendar": 0.7, "email": 0.2, "defer_to_llm": 0.1}), question)
    problem = check_answer(answer, list(options))
    assert "not one of the offered options" in problem


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"model": "m", "answers": {}}, "no answer to question 'tool'"),
        ({"model": "m"}, "no 'answers' object"),
        ([1, 2], "a JSON list, not an object"),
        ({"answers": {"tool": {"type": "noul", "noul": 0.5}}}, "of type 'noul', not 'choice'"),
        ({"answers": {"tool": {"type": "choice", "choice": 3, "probabilities": {}}}}, "choice is 3"),
        (reply(probabilities={"send_sms": "0.8", "send_email": 0.1, "defer_to_llm": 0.1}), "probability of 'send_sms' is \"0.8\""),
        (reply(probabilities={"send_sms": True, "send_email": 0.1, "defer_to_llm": 0.1}), "probability of 'send_sms' is true"),
        (reply(probabilities={"send_sms": 1e999, "send_email": 0.1, "defer_to_llm": 0.1}), "not a finite number"),
        (reply(confidence="high"), 'reported confidence is "high"'),
    ],
)
def test_malformed_replies_become_errors(data, expected):
    answer = answer_from_reply(data, QUESTION)
    assert answer.choice is None
    assert expected in answer.error


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (Answer(choice="send_email", probabilities={"send_sms": 0.8, "send_email": 0.15, "defer_to_llm": 0.05}), "not the most probable option ('send_sms' is)"),
        (Answer(choice="send_sms", probabilities={"send_sms": 0.9, "send_email": 0.25, "defer_to_llm": 0.05}), "sum to 1.2000"),
        (Answer(choice="send_sms", probabilities={"send_sms": 1.1, "send_email": -0.15, "defer_to_llm": 0.05}), "negative"),
        (Answer(choice="delete_all", probabilities={"send_sms": 0.8, "send_email": 0.15, "defer_to_llm": 0.05}), "not one of the offered options"),
        (Answer(choice="send_sms", probabilities={"send_sms": 0.8, "send_email": 0.2}), "missing 'defer_to_llm'"),
        (Answer(choice="send_sms", probabilities={"send_sms": 0.8, "send_email": 0.15, "defer_to_llm": 0.05}, reported_confidence=1.5), "outside [0, 1]"),
        (Answer(choice="send_sms", probabilities={"send_sms": 0.8, "send_email": 0.15, "defer_to_llm": 0.05}, reported_confidence=float("nan")), "outside [0, 1]"),
    ],
)
def test_check_answer_fails_closed(answer, expected):
    assert expected in check_answer(answer, list(QUESTION.options))


def test_sum_within_tolerance_is_accepted():
    answer = Answer(choice="send_sms", probabilities={"send_sms": 0.80, "send_email": 0.15, "defer_to_llm": 0.059})
    assert check_answer(answer, list(QUESTION.options)) == ""


# ---------------------------------------------------------------- config


@pytest.mark.parametrize("name", ["Authorization", "X-API-Key", "api-key", "X-Auth-Token", "Cookie", "x-client-secret"])
def test_secret_headers_are_refused(name):
    with pytest.raises(ConfigError) as info:
        config_from_dict({"systemone": {"headers": {name: "sk-do-not-store"}}})
    text = str(info.value)
    assert "api_key_env" in text and name in text
    assert "sk-do-not-store" not in text


def test_plain_headers_and_url_are_accepted():
    config = config_from_dict({"systemone": {"base_url": "http://127.0.0.1:8787/v1/", "headers": {"X-Tenant": "acme"}}})
    assert config.systemone.base_url == "http://127.0.0.1:8787/v1"
    assert config.systemone.headers == {"X-Tenant": "acme"}


def test_base_url_must_be_http():
    with pytest.raises(ConfigError) as info:
        config_from_dict({"systemone": {"base_url": "127.0.0.1:8787"}})
    assert "not an http:// or https:// URL" in str(info.value)
