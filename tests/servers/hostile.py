"""A hostile System One server for the hardening tests (issue 14), run in a thread on a loopback port.

`HostileServer.mode` picks what every request gets:
- "drip": a valid answer sent one byte every `drip_interval` seconds (a per-read timeout never fires),
  after `fast_posts` POSTs answered at once;
- "huge": a chunked reply (no Content-Length) of `huge_bytes` bytes, 64 KiB at a time;
- "declared": Content-Length says `huge_bytes`, then a few bytes;
- "gzip-bomb": a small gzip body that decodes to `huge_bytes` bytes;
- "echo-key": a valid answer whose `model` (and GET /models names) carry the Authorization header;
- "escapes": an error (status `status`) whose text carries terminal escapes, and model names with them;
- "retry-after": status `status` with `Retry-After: retry_after`.
`sent` counts the body bytes written before the client went away, per request.
"""

from __future__ import annotations

import gzip
import json
import threading
import time
from http.server import ThreadingHTTPServer
from typing import Any

from .scripted import QuietHandler, valid_reply

ESCAPES = "\x1b]0;PWNED\x07\x1b[2J\x1b[31mred\x9b31m\u202eevil"


class HostileServer:
    def __init__(self, mode: str = "drip") -> None:
        self.mode = mode
        self.drip_interval = 0.1
        self.fast_posts = 0  # in "drip" mode, this many POSTs are answered at once first
        self.huge_bytes = 64 * 1024 * 1024
        self.status = 503
        self.retry_after = "29"
        self.sent: list[int] = []
        self.requests = 0
        self.lock = threading.Lock()
        owner = self

        class Handler(QuietHandler):
            def do_GET(self) -> None:  # noqa: N802
                owner._count()
                auth = self.headers.get("Authorization", "")
                if owner.mode == "echo-key":
                    self._json(200, {"models": [{"name": f"echo {auth}", "description": f"served to {auth}"}]})
                elif owner.mode == "escapes":
                    self._json(200, {"models": [{"name": f"jev{ESCAPES}", "description": ESCAPES}]})
                else:
                    self._json(200, {"models": [{"name": "jev-latest"}]})

            def do_POST(self) -> None:  # noqa: N802
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                owner._count()
                try:
                    request = json.loads(raw)
                except ValueError:
                    request = {}
                mode = owner.mode
                with owner.lock:
                    fast = owner.fast_posts > 0
                    owner.fast_posts -= 1 if fast else 0
                if mode == "drip" and fast:
                    self._json(200, valid_reply(request))
                elif mode == "drip":
                    body = json.dumps(valid_reply(request)).encode()
                    self._head(200, {"Content-Length": str(len(body))})
                    self._drip(body)
                elif mode == "huge":
                    self._head(200, {"Transfer-Encoding": "chunked"})
                    self._chunked(owner.huge_bytes)
                elif mode == "declared":
                    self._head(200, {"Content-Length": str(owner.huge_bytes)})
                    self._write(b'{"model": "')
                elif mode == "gzip-bomb":
                    body = gzip.compress(b'{"model": "' + b" " * owner.huge_bytes + b'"}', compresslevel=9)
                    self._head(200, {"Content-Length": str(len(body)), "Content-Encoding": "gzip"})
                    self._write(body)
                elif mode == "echo-key":
                    auth = self.headers.get("Authorization", "")
                    reply = valid_reply(request, model=f"jev served to {auth}")
                    self._json(200, reply)
                elif mode == "escapes":
                    self._json(owner.status, {"detail": {"error_type": "overloaded", "message": f"busy {ESCAPES} now"}})
                elif mode == "retry-after":
                    self._json(owner.status, {"detail": {"error_type": "overloaded", "message": "busy"}}, {"Retry-After": owner.retry_after})
                else:
                    self._json(500, {"detail": {"error_type": "test", "message": f"unknown mode {mode}"}})

            # -- writing

            def _head(self, status: int, headers: dict[str, str]) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                owner.sent.append(0)

            def _write(self, data: bytes) -> bool:
                try:
                    self.wfile.write(data)
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    return False
                owner.sent[-1] += len(data)
                return True

            def _json(self, status: int, data: Any, headers: dict[str, str] | None = None) -> None:
                body = json.dumps(data, ensure_ascii=False).encode()
                self._head(status, {"Content-Length": str(len(body)), **(headers or {})})
                self._write(body)

            def _drip(self, body: bytes) -> None:
                for i in range(len(body)):
                    if not self._write(body[i : i + 1]):
                        return
                    time.sleep(owner.drip_interval)

            def _chunked(self, total: int) -> None:
                piece = b'{"model": "' + b"a" * (65536 - 11)
                left = total
                while left > 0:
                    data = piece[: min(left, len(piece))]
                    if not self._write(f"{len(data):x}\r\n".encode() + data + b"\r\n"):
                        return
                    left -= len(data)
                    piece = b"a" * 65536
                self._write(b"0\r\n\r\n")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.server.handle_error = lambda request, address: None  # type: ignore[method-assign]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def _count(self) -> None:
        with self.lock:
            self.requests += 1

    @property
    def base_url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> HostileServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()
