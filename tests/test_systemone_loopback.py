"""The systemone transport against a scripted loopback server: timeouts, retries, odd bodies, headers."""

from __future__ import annotations

import asyncio
import socket

import pytest
from servers.scripted import ScriptedServer, Step, valid_reply

from tui_router.catalog import load_catalog
from tui_router.config import config_from_dict
from tui_router.decide.base import Question
from tui_router.decide.systemone import SystemOneBackend
from tui_router.policy import Action, Band
from tui_router.route import Router

KEY = "sk-loopback-test-key-7f3a9c0e5b"
CATALOG = load_catalog("demo")
QUESTION = Question(
    message="Text Jordan that the deploy finished.",
    options={"send_sms": "Send a text.", "send_email": "Send an email.", "defer_to_llm": "None fits."},
    none_option="defer_to_llm",
    retrieved_tools=["send_sms", "send_email"],
)


@pytest.fixture(scope="module")
def server():
    with ScriptedServer() as running:
        yield running


@pytest.fixture()
def scripted(server):
    server.reset()
    return server


def backend_for(url: str, **systemone) -> SystemOneBackend:
    settings = {"base_url": url, "timeout": 5, "probe": False, "api_key_env": "TR_LOOPBACK_KEY", **systemone}
    config = config_from_dict({"backend": "systemone", "systemone": settings})
    # a short first backoff keeps the retry tests quick; the schedule itself is unit-tested
    return SystemOneBackend(CATALOG, config.systemone, backoff_base=0.01)


def decide(url: str, question: Question = QUESTION, **systemone):
    backend = backend_for(url, **systemone)
    try:
        return backend.decide(question)
    finally:
        backend.close()


# ---------------------------------------------------------------- the request


def test_request_shape_headers_and_no_key_when_unset(scripted, monkeypatch):
    monkeypatch.delenv("TR_LOOPBACK_KEY", raising=False)
    answer = decide(scripted.base_url, headers={"X-Tenant": "acme"})
    assert answer.error == "" and answer.choice == "send_sms" and answer.model == "scripted-model-1"
    (request,) = scripted.posts
    assert request.path == "/v1/systemone"
    assert request.headers["content-type"] == "application/json"
    assert "content-encoding" not in request.headers  # bodies go uncompressed
    assert "authorization" not in request.headers
    assert request.headers["x-tenant"] == "acme"
    body = request.json()
    assert body["model"] == "jev-latest"
    assert body["state"] == {"message": QUESTION.message, "retrieved_tools": ["send_sms", "send_email"]}
    assert body["questions"] == {"tool": {"type": "choice", "instructions": QUESTION.instructions, "criteria": QUESTION.options}}


def test_key_is_sent_as_bearer_when_set(scripted, monkeypatch):
    monkeypatch.setenv("TR_LOOPBACK_KEY", KEY)
    assert decide(scripted.base_url).error == ""
    assert scripted.posts[0].headers["authorization"] == f"Bearer {KEY}"


def test_a_server_echoing_the_key_never_gets_it_into_the_error(scripted, monkeypatch):
    monkeypatch.setenv("TR_LOOPBACK_KEY", KEY)
    scripted.push(Step(400, lambda req: {"detail": {"error_type": "bad_request", "message": f"bad header {req['_headers'].get('Authorization')}"}}))
    answer = decide(scripted.base_url)
    assert "HTTP 400 bad_request" in answer.error
    assert "[redacted]" in answer.error
    assert KEY not in answer.error


# ---------------------------------------------------------------- timeouts and retries


def test_slow_reply_past_the_timeout_is_unresolved_without_retry(scripted):
    scripted.push(Step(delay=2.0))
    answer = decide(scripted.base_url, timeout=0.3)
    assert "no complete reply within 0.3 s ([systemone] timeout bounds the whole request)" in answer.error
    assert "raise [systemone] timeout" in answer.error
    assert len(scripted.posts) == 1


def test_429_with_retry_after_then_success(scripted):
    scripted.push(Step(429, {"detail": {"error_type": "rate_limit_error", "message": "slow down"}}, {"Retry-After": "0"}))
    answer = decide(scripted.base_url)
    assert answer.error == "" and answer.choice == "send_sms"
    assert len(scripted.posts) == 2


def test_429_with_retry_after_ms_then_success(scripted):
    scripted.push(Step(429, {"detail": {"error_type": "rate_limit_error", "message": "slow down"}}, {"retry-after-ms": "20", "Retry-After": "600"}))
    assert decide(scripted.base_url).error == ""
    assert len(scripted.posts) == 2


def test_503_then_success(scripted):
    scripted.push(Step(503, {"detail": {"error_type": "overloaded", "message": "try later"}}))
    assert decide(scripted.base_url).error == ""
    assert len(scripted.posts) == 2


def test_html_502_page_every_time_gives_up_after_max_retries(scripted):
    page = "<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway</h1></center><hr>nginx</body></html>"
    scripted.push(*[Step(502, page)] * 5)
    answer = decide(scripted.base_url, max_retries=2)
    assert "HTTP 502: an HTML page (502 Bad Gateway)" in answer.error
    assert "gave up after 3 attempts" in answer.error
    assert "<html" not in answer.error.lower()
    assert len(scripted.posts) == 3


def test_a_retry_after_longer_than_we_wait_is_an_error_now(scripted):
    scripted.push(Step(429, {"detail": {"error_type": "rate_limit_error", "message": "quota"}}, {"Retry-After": "3600"}))
    answer = decide(scripted.base_url)
    assert "HTTP 429 rate_limit_error: quota" in answer.error
    assert "asked to wait 3600 s" in answer.error
    assert len(scripted.posts) == 1


@pytest.mark.parametrize("status", [400, 401, 403, 404, 413, 422])
def test_client_errors_are_never_retried(scripted, status):
    scripted.push(Step(status, {"detail": {"error_type": "some_error", "message": "no"}}))
    answer = decide(scripted.base_url)
    assert f"HTTP {status} some_error: no" in answer.error
    assert len(scripted.posts) == 1


def test_refused_connection_is_retried_then_reported():
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    answer = decide(f"http://127.0.0.1:{port}/v1", max_retries=1)
    assert "cannot connect" in answer.error and "after 2 attempts" in answer.error
    assert "is the server running and [systemone] base_url right?" in answer.error


def test_a_reply_broken_off_mid_body_is_not_called_a_connection_failure():
    """The server answers, promises 1,000 bytes, sends 10 and closes: a different fault from a
    refused connection, and the error says so (after the retries)."""
    import threading

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    port = listener.getsockname()[1]
    served = []

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                request = b""
                while b"\r\n\r\n" not in request:  # read the whole request: unread bytes would reset the socket
                    request += conn.recv(65536)
                head, _, body = request.partition(b"\r\n\r\n")
                length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")), 0)
                while len(body) < length:
                    body += conn.recv(65536)
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"choice\":")
                served.append(1)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        answer = decide(f"http://127.0.0.1:{port}/v1", max_retries=1)
    finally:
        listener.close()
    assert "the server broke off its reply" in answer.error and "after 2 attempts" in answer.error
    assert "cannot connect" not in answer.error
    assert answer.choice is None or answer.error  # never an answer to act on
    assert len(served) == 2


# ---------------------------------------------------------------- answers


def test_invented_option_is_unresolved_through_the_router(scripted):
    def invented(request):
        names = list(request["questions"]["tool"]["criteria"])
        probs = {n: 0.5 / len(names) for n in names}
        probs["delete_all_files"] = 0.5
        return {"model": "m", "answers": {"tool": {"type": "choice", "choice": "delete_all_files", "probabilities": probs, "confidence": 0.9}}}

    scripted.push(Step(200, invented))
    config = config_from_dict({"backend": "systemone", "systemone": {"base_url": scripted.base_url, "probe": False}})
    router = Router(CATALOG, config)
    try:
        decision = router.route("Text Jordan that the deploy finished.")
    finally:
        router.backend.close()
    assert decision.band is Band.unresolved and decision.action is Action.fallback
    assert decision.choice is None
    assert "'delete_all_files' is not one of the offered options" in decision.error


def test_missing_answer_is_unresolved(scripted):
    scripted.push(Step(200, {"model": "m", "answers": {}, "usage": {}}))
    assert "no answer to question 'tool'" in decide(scripted.base_url).error


# ---------------------------------------------------------------- concurrency and event loops


async def test_concurrency_is_bounded_and_adecide_runs_in_the_callers_loop(scripted):
    scripted.push(*[Step(delay=0.1) for _ in range(8)])
    backend = backend_for(scripted.base_url, concurrency=2)
    try:
        answers = await asyncio.gather(*(backend.adecide(QUESTION) for _ in range(8)))
    finally:
        await backend.aclose()
    assert all(a.error == "" for a in answers)
    # 8 requests of 0.1 s with room for 2: exactly 2 at a time (1 would mean no concurrency at all)
    assert scripted.max_in_flight == 2
    assert len(scripted.posts) == 8


def test_valid_reply_helper_is_consistent():
    """The scripted server's default answer must itself pass our checks (or the tests above prove nothing)."""
    from tui_router.decide.base import check_answer
    from tui_router.decide.systemone import answer_from_reply, question_body

    answer = answer_from_reply(valid_reply(question_body(QUESTION, "m")), QUESTION)
    assert check_answer(answer, list(QUESTION.options)) == ""
