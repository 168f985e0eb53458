"""Property tests: the System One backend against a loopback server that answers with generated replies.

One server for every example; each example sets the next reply: a status (any from 200 to 599), a
content type and encoding, and a body that is a mutated valid answer (choice outside the offered
set, negative or non-finite probabilities, NaN/Infinity tokens, huge numbers, wrong types, sums far
from 1), random JSON, an error document, or bytes; whole, cut short, or shorter than it declared.

Invariants: `Router.route` returns a Decision and the backend itself never raises (the Router's
safety net is not what keeps the turn alive); an invalid reply is unresolved with action fallback;
whatever is acted on was offered; the error is one line, bounded, shows no long run of the body
and no part of the API key.
"""

from __future__ import annotations

import math
import socket
import threading
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from typing import Any

import pytest
from fuzz_json import Raw, as_number, encode
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from servers.scripted import QuietHandler

from tui_router.catalog import load_catalog
from tui_router.config import config_from_dict
from tui_router.decide.systemone import SystemOneBackend
from tui_router.decide.systemone.profile import ProfileCache, probe_server
from tui_router.policy import Action, Band
from tui_router.route import Decision, Router

KEY_ENV = "TR_FUZZ_SYSTEMONE_KEY"
KEY = "sk-fz-9Qm2Vx7Lr4Tt8Kp1Zb6Nc3Hd5Jw0Ye"
CATALOG = load_catalog("demo")
MESSAGE = "Text Jordan that the deploy finished."
MAX_ERROR = 800  # the longest error a turn may carry: url + status + a 200-char message + a hint


@dataclass
class Reply:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    declared: int | None = None  # a Content-Length other than the body's (then the socket is closed)


class FuzzServer:
    """Answers every request (GET or POST) with `reply`, whatever it asks."""

    def __init__(self) -> None:
        self.reply = Reply()
        self.lock = threading.Lock()
        owner = self

        class Handler(QuietHandler):
            def do_GET(self) -> None:  # noqa: N802
                self.do_POST()

            def do_POST(self) -> None:  # noqa: N802
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with owner.lock:
                    reply = owner.reply
                try:
                    self.send_response(reply.status)
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(reply.body.__len__() if reply.declared is None else reply.declared))
                    if reply.declared is not None:
                        self.send_header("Connection", "close")
                    self.end_headers()
                    self.wfile.write(reply.body)
                    self.wfile.flush()
                    if reply.declared is not None:
                        self.close_connection = True
                        self.connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.server.handle_error = lambda request, address: None  # type: ignore[method-assign]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}/v1"


# ---------------------------------------------------------------- generated replies

BIG_TEXT = "ENDLESS-" * 40  # 320 chars: must never reach an error whole
NUMBERS = [
    Raw("NaN"), Raw("Infinity"), Raw("-Infinity"), Raw("1e400"), Raw("-1e400"), Raw("1" * 5000), Raw("9" * 400),
    Raw("1e-400"), Raw("-0"), Raw("0.1e1"), -1, -0.5, 0, 1, 2, 1.005, 0.999, 1e308, 10**30, 0.5, True, None,
    "0.9", [], {}, [0.9], {"p": 0.9}, BIG_TEXT, KEY, f"Bearer {KEY}",
]
OPTIONS_HINT = ["send_sms", "send_email", "defer_to_llm", "delete_all_files", "SEND_SMS", "send_sms ", "", BIG_TEXT, KEY]

json_leaf = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False),
                      st.text(max_size=20), st.sampled_from(NUMBERS[:10]))
junk = st.recursive(json_leaf, lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)),
                    max_leaves=12)


def probabilities_invalid(probs: Any, offered: list[str]) -> bool:
    """What check_answer must refuse in a distribution whose choice is offered[0]: keys other than the
    offered options, a value that is not a finite number in [0, 1], a sum off 1 by more than 0.01,
    or offered[0] not the most probable (no stricter than the product, so a refusal is never missed)."""
    if not isinstance(probs, dict) or set(probs) != set(offered):
        return True
    values = {k: as_number(v) for k, v in probs.items()}
    if any(v is None or v < 0 or v > 1 + 1e-6 for v in values.values()):
        return True
    if abs(sum(values.values()) - 1.0) > 0.01:  # type: ignore[arg-type]
        return True
    return values[offered[0]] < max(values.values()) - 1e-9  # type: ignore[operator,type-var]


@st.composite
def answer_body(draw: st.DrawFn) -> tuple[Any, bool]:
    """A reply shaped like an answer, one or more parts broken; (body, surely invalid)."""
    offered = list(OFFERED)
    invalid = False
    probs: dict[str, Any] = {name: 0.9 if i == 0 else 0.1 / (len(offered) - 1) for i, name in enumerate(offered)}
    choice: Any = offered[0]
    confidence: Any = 0.87
    kind: Any = "choice"
    junk_probs = False
    for _ in range(draw(st.integers(0, 3))):
        mutation = draw(st.sampled_from(["choice", "prob", "drop", "extra", "scale", "confidence", "type", "junk-prob"]))
        if mutation == "choice":
            choice = draw(st.one_of(st.sampled_from(OPTIONS_HINT + offered), junk))
        elif mutation == "prob":
            key = draw(st.sampled_from(offered))
            probs[key] = draw(st.sampled_from(NUMBERS))
        elif mutation == "drop":
            probs.pop(draw(st.sampled_from(offered)), None)
        elif mutation == "extra":
            probs[draw(st.sampled_from(OPTIONS_HINT[3:]))] = draw(st.sampled_from([0.0, 0.5, Raw("NaN")]))
        elif mutation == "scale":
            factor = draw(st.sampled_from([0.0, 0.5, 2.0, -1.0, 100.0]))
            probs = {k: (v * factor if isinstance(v, float) else v) for k, v in probs.items()}
        elif mutation == "confidence":
            confidence = draw(st.sampled_from(NUMBERS))
        elif mutation == "type":
            kind = draw(st.one_of(st.sampled_from(["text", "Choice", "", None, BIG_TEXT]), junk))
        else:
            junk_probs = True
    if junk_probs:  # last, so the mutations above always work on a dict
        probs = draw(junk)
    # judged on the final values: a later mutation may undo an earlier one (two scalings by 0.5 and
    # 2; junk text may even draw "choice")
    value = as_number(confidence)
    invalid |= probabilities_invalid(probs, offered)
    invalid |= choice != offered[0] or kind != "choice" or (confidence is not None and not (value is not None and 0 <= value <= 1))
    answer = {"type": kind, "choice": choice, "probabilities": probs, "confidence": confidence}
    answers: Any = {"tool": answer}
    shape = draw(st.sampled_from(["ok", "ok", "ok", "no-answers", "other-question", "answers-list", "model-junk"]))
    body: dict[str, Any] = {"model": "fuzz-model", "answers": answers, "usage": {"input_tokens": draw(st.sampled_from([10, Raw("1e400"), Raw("9" * 400), "x"]))}}
    if shape == "no-answers":
        body.pop("answers")
        invalid = True
    elif shape == "other-question":
        body["answers"] = {BIG_TEXT: answer, "x" * 300: 1}
        invalid = True
    elif shape == "answers-list":
        body["answers"] = [answer]
        invalid = True
    elif shape == "model-junk":
        body["model"] = draw(st.one_of(junk, st.sampled_from([BIG_TEXT, KEY])))
    return body, invalid


ERROR_BODIES = st.one_of(
    st.fixed_dictionaries({"detail": st.fixed_dictionaries({"error_type": st.sampled_from(["rate_limit", BIG_TEXT, "a\nb\x1b[2J", KEY]),
                                                            "message": st.sampled_from(["no", BIG_TEXT, "x" * 180 + KEY, "\n".join(["line"] * 50)])})}),
    st.fixed_dictionaries({"detail": st.lists(st.fixed_dictionaries({"loc": st.lists(st.sampled_from(["body", BIG_TEXT, "q"]), max_size=3),
                                                                     "msg": st.sampled_from(["bad", BIG_TEXT])}), max_size=6)}),
    st.fixed_dictionaries({"detail": st.sampled_from([BIG_TEXT, KEY, ""]), "error_type": st.sampled_from(["x", BIG_TEXT])}),
    st.fixed_dictionaries({"error": junk}),
)


@st.composite
def replies(draw: st.DrawFn) -> tuple[Reply, bool]:
    """A whole reply and whether it surely cannot be acted on."""
    status = draw(st.one_of(st.just(200), st.just(200), st.integers(200, 599)))
    source = draw(st.sampled_from(["answer", "answer", "junk", "error", "bytes"]))
    invalid = status != 200
    if source == "answer":
        body, broken = draw(answer_body())
        invalid |= broken
        raw = encode(body).encode()
    elif source == "junk":
        raw = encode(draw(junk)).encode()
        invalid = True
    elif source == "error":
        raw = encode(draw(ERROR_BODIES)).encode()
        invalid = True
    else:
        raw = draw(st.one_of(st.binary(max_size=300), st.sampled_from([b"\xff\xfe{", b"[" * 100_000, b'{"a":' * 50_000, BIG_TEXT.encode(),
                                                                     b"<html><title>" + BIG_TEXT.encode() + b"</title></html>", KEY.encode()])))
        invalid = True
    cut = draw(st.sampled_from(["whole", "whole", "whole", "truncated", "short-declared"]))
    declared = None
    if cut == "truncated" and raw:
        raw = raw[: draw(st.integers(0, len(raw) - 1))]
        invalid = True
    elif cut == "short-declared":
        declared = len(raw) + draw(st.integers(1, 5000))
        invalid = True
    headers = {"Content-Type": draw(st.sampled_from(["application/json", "text/html", "text/plain", "application/octet-stream", "", "application/json; charset=latin-1"]))}
    encoding = draw(st.sampled_from([None, None, None, "gzip", "deflate", "br", "zstd", "identity", "bogus"]))
    if encoding:
        headers["Content-Encoding"] = encoding
        invalid |= encoding in ("gzip", "deflate")  # the body was never compressed (br and zstd decode only with their extras installed)
    if 300 <= status < 400:
        headers["Location"] = draw(st.sampled_from([f"http://user:{KEY}@evil.example/v1?key={KEY}", "/elsewhere", BIG_TEXT]))
    if draw(st.booleans()):
        headers["Retry-After"] = draw(st.sampled_from(["0", "-1", "nan", "1e400", "abc", "Wed, 21 Oct 2015 07:28:00 GMT", "3600", BIG_TEXT]))
    if draw(st.booleans()):
        headers["X-Request-Id"] = draw(st.sampled_from(["req-1", BIG_TEXT, KEY]))
    return Reply(status=status, body=raw, headers=headers, declared=declared), invalid


OFFERED: list[str] = []  # set from the router's first question (the options BM25 offers for MESSAGE)


@pytest.fixture(scope="module")
def server():
    running = FuzzServer()
    running.thread.start()
    yield running
    running.server.shutdown()
    running.server.server_close()


@pytest.fixture(scope="module")
def router(server: FuzzServer):
    patch = pytest.MonkeyPatch()
    patch.setenv(KEY_ENV, KEY)  # sent as the bearer token; it must never come back in an error
    settings_ = {"base_url": server.base_url, "probe": False, "api_key_env": KEY_ENV, "timeout": 3.0, "total_timeout": 3.0, "max_retries": 1}
    config = config_from_dict({"backend": "systemone", "retrieval": {"direct_max": 0, "top_k": 3}, "systemone": settings_})
    built = Router(CATALOG, config)
    assert isinstance(built.backend, SystemOneBackend)
    built.backend.client.backoff_base = 0.001
    OFFERED[:] = built.question_for(MESSAGE, built.retrieve(MESSAGE)).options
    yield built
    built.backend.close()
    patch.undo()


def check_error(error: str, reply: Reply) -> None:
    assert "\n" not in error and "\r" not in error, error
    assert len(error) <= MAX_ERROR, len(error)
    assert not error.startswith(f"the {'systemone'} backend failed"), f"the backend raised: {error}"
    # no part of the key (any 10 characters of it; only the whole key when the server itself sent
    # pieces of it) and no long run of what the server sent
    assert KEY not in error
    windows = [KEY[i : i + 10] for i in range(len(KEY) - 9)]
    rest = reply.body.decode("utf-8", errors="replace").replace(KEY, "")
    if not any(window in rest for window in windows):
        assert not any(window in error for window in windows), error
    assert BIG_TEXT[:201] not in error
    text = reply.body.decode("utf-8", errors="replace")
    for start in range(0, max(0, len(text) - 200), 50):
        assert text[start : start + 201] not in error


FUZZ = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def answer_json(**changes: Any) -> bytes:
    """The valid answer to the fuzzed question with some fields replaced (raw JSON text allowed via Raw)."""
    probs: dict[str, Any] = {name: 0.9 if i == 0 else 0.1 / (len(OFFERED) - 1) for i, name in enumerate(OFFERED)}
    answer = {"type": "choice", "choice": OFFERED[0], "probabilities": probs, "confidence": 0.87}
    body: dict[str, Any] = {"model": "fuzz-model", "answers": {"tool": answer}, "usage": {"input_tokens": 10}}
    for name, value in changes.items():
        if name in ("model", "usage", "answers"):
            body[name] = value
        elif name == "first_probability":
            probs[OFFERED[0]] = value
        else:
            answer[name] = value
    return encode(body).encode()


JSON = {"Content-Type": "application/json"}


# The bugs the property found (on the code before its fixes), kept as cases every run tries;
# lambdas because OFFERED is filled by the router fixture.
FOUND = [
    ("gzip-header-plain-body", lambda: (Reply(200, answer_json(), {**JSON, "Content-Encoding": "gzip"}), True), "httpx.DecodingError escaped"),
    ("int-5000-digits", lambda: (Reply(200, answer_json(first_probability=Raw("9" * 5000))), True), "int digit cap: ValueError escaped"),
    ("int-400-digits-probability", lambda: (Reply(200, answer_json(first_probability=Raw("9" * 400))), True), "math.isfinite overflowed"),
    ("int-400-digits-usage", lambda: (Reply(200, answer_json(usage={"input_tokens": Raw("9" * 400)})), False), "the same in usage"),
    ("nested-100k", lambda: (Reply(200, b"[" * 100_000, JSON), True), "RecursionError escaped"),
    ("nested-900", lambda: (Reply(200, b"[" * 900 + b"]" * 900, JSON), True), "parsed, then the key's redaction walk overflowed"),
    ("nested-900-error", lambda: (Reply(400, b'{"detail":' + b"[" * 900 + b"]" * 900 + b"}", JSON), True), "the same in an error body"),
    ("long-answer-key", lambda: (Reply(200, answer_json(answers={BIG_TEXT: 1})), True), "answer keys dumped whole"),
    ("long-model-name", lambda: (Reply(200, answer_json(model=BIG_TEXT, choice="fetch_url")), True), "model name dumped whole"),
    ("long-choice", lambda: (Reply(200, answer_json(choice=BIG_TEXT)), True), "choice dumped whole"),
    ("long-error-type", lambda: (Reply(429, encode({"detail": {"error_type": BIG_TEXT, "message": "no"}}).encode(), JSON), True), "error_type dumped whole"),
    ("long-validation-msg", lambda: (Reply(422, encode({"detail": [{"loc": ["body"], "msg": BIG_TEXT}]}).encode(), JSON), True), "validation text cut at 300"),
    ("key-cut-in-message", lambda: (Reply(400, encode({"detail": {"message": "x" * 180 + KEY}}).encode(), JSON), True), "key cut into a fragment at 200"),
    ("probability-above-one", lambda: (Reply(200, answer_json(probabilities={n: 1.005 if i == 0 else 0.0 for i, n in enumerate(OFFERED)})), True),
     "accepted within the sum's 0.01 tolerance: confidence above 1"),
    ("key-cut-in-request-id", lambda: (Reply(503, b"", {"X-Request-Id": "r" * 40 + KEY, "Retry-After": "3600"}), True), "the same in the request id"),
]


@pytest.mark.parametrize("make", [pytest.param(make, id=name) for name, make, _ in FOUND])
def test_replies_that_broke_the_backend(server: FuzzServer, router: Router, make: Any) -> None:
    reply, surely_invalid = make()
    route_and_check(server, router, reply, surely_invalid)


@FUZZ
@given(case=replies())
def test_any_reply_gives_a_decision_that_acts_only_on_a_valid_offered_answer(server: FuzzServer, router: Router, case: tuple[Reply, bool]) -> None:
    route_and_check(server, router, *case)


def route_and_check(server: FuzzServer, router: Router, reply: Reply, surely_invalid: bool) -> None:
    with server.lock:
        server.reply = reply
    decision = router.route(MESSAGE)
    assert isinstance(decision, Decision)
    assert decision.band in set(Band) and decision.action in set(Action)
    assert decision.options == OFFERED and CATALOG.none_option in decision.options
    if decision.action is not Action.fallback:
        assert decision.choice in decision.options
    if decision.band is Band.unresolved:
        assert decision.action is Action.fallback and decision.error and decision.probabilities == {}
        check_error(decision.error, reply)
        return
    assert not surely_invalid, f"an invalid reply was acted on: {decision.to_json()}"
    assert decision.error == ""
    probs = decision.probabilities
    assert set(probs) == set(decision.options)
    assert all(math.isfinite(p) and p >= 0 for p in probs.values())
    assert abs(sum(probs.values()) - 1.0) <= 0.01
    assert decision.confidence is not None and 0.0 <= decision.confidence <= 1.0
    assert decision.model not in (KEY,) and KEY not in decision.model


# ---------------------------------------------------------------- the server profile probe


@settings(FUZZ, max_examples=40)
@given(case=replies())
def test_the_profile_probe_survives_any_reply(server: FuzzServer, router: Router, tmp_path_factory: pytest.TempPathFactory, case: tuple[Reply, bool]) -> None:
    """`tui-router doctor` and a backend's first use probe the server with some 15 requests; whatever
    comes back, the probe ends in a profile that sizes routing sanely and caches cleanly."""
    reply, _ = case
    with server.lock:
        server.reply = reply
    backend = router.backend
    assert isinstance(backend, SystemOneBackend)
    profile = backend.client.run_sync(probe_server(backend.client, backend.cfg.model))
    assert 2 <= profile.option_limit(255) <= 255
    for row in profile.rows(255):
        assert all(isinstance(cell, str) and KEY not in cell for cell in row)
    assert KEY not in profile.model_dump_json()
    cache = ProfileCache(tmp_path_factory.mktemp("profiles"))
    if cache.save(profile) is not None:
        assert cache.load(profile.base_url, profile.model) == profile
