"""Issue 14 item 3: `timeout` is the deadline of the whole request, the question (retries and
Retry-After waits included) is bounded by `question_budget`, and the reply size is capped.

Against real loopback servers written for these tests (tests/servers/hostile.py)."""

from __future__ import annotations

import time

import pytest
from servers.hostile import HostileServer
from test_systemone_loopback import CATALOG, QUESTION

from tui_router.config import SystemOneConfig, config_from_dict
from tui_router.decide.systemone import SystemOneBackend


@pytest.fixture()
def hostile():
    with HostileServer() as server:
        yield server


def decide(url: str, **systemone):
    settings = {"base_url": url, "probe": False, "api_key_env": "TR_DEADLINE_KEY", **systemone}
    config = config_from_dict({"backend": "systemone", "systemone": settings})
    backend = SystemOneBackend(CATALOG, config.systemone, backoff_base=0.01)
    started = time.monotonic()
    try:
        return backend.decide(QUESTION), time.monotonic() - started
    finally:
        backend.close()


def test_a_byte_dripping_server_fails_at_the_deadline_not_per_read(hostile):
    hostile.mode, hostile.drip_interval = "drip", 0.1  # ~300 bytes at 10 bytes/s: 30 s in all
    answer, took = decide(hostile.base_url, timeout=1)
    assert "no complete reply within 1 s ([systemone] timeout bounds the whole request)" in answer.error
    assert answer.choice is None
    assert hostile.requests == 1  # a slow server is not asked again
    # httpx's per-read timeout (1 s) never fires at 0.1 s a byte: only the whole-request deadline ends it
    assert took < 10, took
    time.sleep(0.3)
    assert hostile.sent[0] < 100  # the client hung up long before the ~300-byte body was out


def test_retry_after_longer_than_the_question_budget_is_an_error_at_once(hostile):
    hostile.mode, hostile.status, hostile.retry_after = "retry-after", 503, "29"
    answer, took = decide(hostile.base_url, timeout=2, max_retries=2)  # budget 2 × 3 = 6 s
    assert "HTTP 503 overloaded: busy" in answer.error
    assert "the server asked to wait 29 s, more than the" in answer.error
    assert "of the question's 6 s ([systemone] total_timeout)" in answer.error
    assert hostile.requests == 1
    assert took < 5, took


def test_retries_stop_when_the_budget_has_no_room_for_the_wait(hostile):
    hostile.mode, hostile.status, hostile.retry_after = "retry-after", 429, "1"
    answer, _ = decide(hostile.base_url, timeout=1, max_retries=5, total_timeout=1.6)
    # first 429 -> wait 1 s (fits in 1.6), second 429 -> 1 s no longer fits: error, 2 requests not 6
    assert hostile.requests == 2
    assert "HTTP 429 overloaded: busy" in answer.error
    assert "asked to wait 1 s, more than the 0." in answer.error


def test_a_huge_chunked_reply_is_refused_without_reading_it_all(hostile):
    hostile.mode, hostile.huge_bytes = "huge", 64 * 1024 * 1024
    answer, _ = decide(hostile.base_url, timeout=20, max_reply_bytes=1024 * 1024)
    assert "the reply is larger than 1048576 bytes (over 1048576 bytes read); refused unread" in answer.error
    assert answer.choice is None
    time.sleep(0.3)
    assert hostile.sent[0] < 32 * 1024 * 1024  # the server could not push the whole 64 MiB


def test_a_declared_huge_reply_is_refused_before_reading(hostile):
    hostile.mode, hostile.huge_bytes = "declared", 300_000_000
    answer, _ = decide(hostile.base_url, timeout=5)
    assert "the reply is larger than 4194304 bytes (Content-Length 300000000)" in answer.error


def test_a_compressed_bomb_counts_at_its_decoded_size(hostile):
    hostile.mode, hostile.huge_bytes = "gzip-bomb", 16 * 1024 * 1024  # ~16 KB on the wire
    answer, _ = decide(hostile.base_url, timeout=10, max_reply_bytes=1024 * 1024)
    assert "the reply is larger than 1048576 bytes" in answer.error


def test_the_question_budget_defaults_to_every_attempt_at_full_timeout():
    assert SystemOneConfig(timeout=2, max_retries=2).question_budget == 6
    assert SystemOneConfig(timeout=2, max_retries=2, total_timeout=3.5).question_budget == 3.5
    assert SystemOneConfig().question_budget == 90


def test_total_timeout_and_reply_cap_are_validated():
    from tui_router.errors import ConfigError

    for bad in ({"total_timeout": 0}, {"total_timeout": float("nan")}, {"max_reply_bytes": 10}):
        with pytest.raises(ConfigError):
            config_from_dict({"systemone": bad})


def test_the_first_use_probe_is_bounded_by_one_question_budget(hostile, monkeypatch, tmp_path):
    """A server that lists models and answers the first probe at once, then drips every answer: the
    probe inside the first turn stops at the budget instead of running its other four requests at
    `timeout` each."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    hostile.mode, hostile.drip_interval, hostile.fast_posts = "drip", 0.1, 1
    from tui_router.route import Router

    settings = {"base_url": hostile.base_url, "timeout": 1, "max_retries": 0, "probe": True, "api_key_env": "TR_DEADLINE_KEY"}
    router = Router(CATALOG, config_from_dict({"backend": "systemone", "systemone": settings}))
    try:
        decision = router.route("Text Jordan that the deploy finished.")
    finally:
        router.backend.close()
    assert decision.band.value == "unresolved"
    assert "no complete reply within 1 s" in decision.error
    # GET /models, the first probe question (fast), the second (cut by the budget), the turn's own
    # question; without the bound: two more consistency probes, the multi-question and the cap probe
    assert hostile.requests == 4
    assert not list((tmp_path / "cache").rglob("*.json"))  # an unfinished probe is not cached
