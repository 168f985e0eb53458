"""A System One server for the tests, run in a thread on a loopback port, that answers from a script.

Each POST takes the next scripted Step (status, headers, body, delay); with the script empty it gives a
valid answer to the question it got (the first option most likely). Every request is recorded, so tests
can count attempts and inspect headers and bodies.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Body = bytes | str | dict | Callable[[dict], Any]


@dataclass
class Step:
    status: int = 200
    body: Body | None = None  # None: a valid answer to the request
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def valid_reply(request: dict, model: str = "scripted-model-1") -> dict:
    """A consistent answer for every question: the first option gets most of the mass."""
    answers = {}
    for qid, question in request.get("questions", {}).items():
        names = list(question["criteria"])
        rest = 0.1 / (len(names) - 1) if len(names) > 1 else 0.0
        probs = {n: (0.9 if i == 0 else rest) for i, n in enumerate(names)} if len(names) > 1 else {names[0]: 1.0}
        n = len(names)
        confidence = (0.9 - 1 / n) / (1 - 1 / n) if n > 1 else 1.0
        answers[qid] = {"type": "choice", "choice": names[0], "probabilities": probs, "confidence": confidence}
    return {"model": model, "answers": answers, "usage": {"input_tokens": 10, "output_tokens": 2}}


class QuietHandler(BaseHTTPRequestHandler):
    """A loopback test server's request handler: keep-alive HTTP/1.1, nothing logged to stderr."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        pass


class ScriptedServer:
    def __init__(self) -> None:
        self.script: deque[Step] = deque()
        self.requests: list[Recorded] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.lock = threading.Lock()
        owner = self

        class Handler(QuietHandler):
            def do_GET(self) -> None:  # noqa: N802
                owner._record(self, b"")
                self._send(Step(200, {"models": [{"name": "jev-latest", "description": "scripted"}]}), {})

            def do_POST(self) -> None:  # noqa: N802
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                owner._record(self, raw)
                with owner.lock:
                    step = owner.script.popleft() if owner.script else Step()
                    owner.in_flight += 1
                    owner.max_in_flight = max(owner.max_in_flight, owner.in_flight)
                try:
                    if step.delay:
                        time.sleep(step.delay)
                finally:
                    # counted as done before the reply is written: once the client has the reply it
                    # may send its next request before this thread would get back to a later line
                    with owner.lock:
                        owner.in_flight -= 1
                try:
                    request = json.loads(raw)
                except ValueError:
                    request = {}
                self._send(step, request)

            def _send(self, step: Step, request: dict) -> None:
                body: Any = step.body
                if body is None:
                    body = valid_reply(request)
                elif callable(body):
                    body = body(request | {"_headers": dict(self.headers)})
                if isinstance(body, (dict, list)):
                    raw = json.dumps(body).encode()
                    ctype = "application/json"
                elif isinstance(body, str):
                    raw = body.encode()
                    ctype = "text/html" if body.lstrip().startswith("<") else "text/plain"
                else:
                    raw = body
                    ctype = "application/json"
                try:
                    self.send_response(step.status)
                    headers = {"Content-Type": ctype, **step.headers}
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(raw)))
                    self.end_headers()
                    self.wfile.write(raw)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.server.handle_error = lambda request, address: None  # type: ignore[method-assign]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def _record(self, handler: BaseHTTPRequestHandler, raw: bytes) -> None:
        with self.lock:
            self.requests.append(Recorded(handler.command, handler.path, {k.lower(): v for k, v in handler.headers.items()}, raw))

    @property
    def base_url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}/v1"

    @property
    def posts(self) -> list[Recorded]:
        return [r for r in self.requests if r.method == "POST"]

    def push(self, *steps: Step) -> None:
        self.script.extend(steps)

    def reset(self) -> None:
        # A previous test may have left a request sleeping (a client that timed out): let it
        # finish, or it would count as in flight for the next test.
        deadline = time.monotonic() + 10
        while self.in_flight and time.monotonic() < deadline:
            time.sleep(0.02)
        with self.lock:
            self.script.clear()
            self.requests.clear()
            self.max_in_flight = 0

    def __enter__(self) -> ScriptedServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()
