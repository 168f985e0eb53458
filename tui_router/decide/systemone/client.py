"""The System One client: HTTP to any server of the System One wire format (wire.py), over httpx.

Every failure ends in a Reply with an error sentence a person can act on, never an exception.
Transport: one httpx.AsyncClient per event loop (the console's loop, an eval's loop, and a private
loop thread that serves the synchronous `decide` used by the CLI), bounded by a semaphore of
`concurrency`. Retries only where a retry can help (408/429/502/503/504/529 and connection errors),
honouring Retry-After / retry-after-ms. The API key is read from the environment variable named in
config and scrubbed from every error text.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import math
import os
import random
import re
import sys
import threading
import weakref
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

import httpx

from ...errors import UserError
from ...tomlio import replace_surrogates
from .wire import ModelInfo, NotJSON, Reply, models_from_reply, parse_json_strict

if TYPE_CHECKING:
    from ...config import SystemOneConfig

T = TypeVar("T")


def _remember_missing_sniffio() -> None:
    """httpcore retries `import sniffio` on every async lock when it is not installed (anyio >= 4.11
    no longer pulls it in; encode/httpcore#1103), and Python does not cache failed imports: a full
    sys.path scan per request. Recording the absence once makes that import fail fast, as it would."""
    try:
        import sniffio  # noqa: F401
    except ImportError:
        sys.modules.setdefault("sniffio", None)  # type: ignore[arg-type]


_remember_missing_sniffio()

RETRY_STATUSES = frozenset({408, 429, 502, 503, 504, 529})
BACKOFF_BASE = 0.25  # seconds before the first retry when the server gives no Retry-After
BACKOFF_CAP = 8.0
MAX_RETRY_WAIT = 30.0  # a server asking us to wait longer gets an error now, not a stalled turn


class _TooLarge(Exception):
    """A reply past max_reply_bytes (raised inside the exchange, so its connection is dropped)."""

    def __init__(self, status: int, seen: str) -> None:
        super().__init__(seen)
        self.status = status
        self.seen = seen


class ServerError(UserError):
    """A System One server could not be used (for the CLI: one sentence, exit 2)."""


def public_url(url: str) -> str:
    """The URL without user:password@ and query string, safe to show and to store."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


# ---------------------------------------------------------------- pure helpers (unit-tested)


def retry_delay(headers: Mapping[str, str], attempt: int, *, base: float = BACKOFF_BASE, now: datetime | None = None) -> float:
    """Seconds to wait before retry number `attempt` (0-based).

    retry-after-ms (milliseconds) wins, then Retry-After (seconds or an HTTP date), else exponential
    backoff with jitter, capped at BACKOFF_CAP. The caller refuses waits above MAX_RETRY_WAIT.
    """
    lower = {k.lower(): v for k, v in headers.items()}
    raw_ms = lower.get("retry-after-ms")
    if raw_ms is not None:
        try:
            value = float(raw_ms)
            if math.isfinite(value) and value >= 0:
                return value / 1000.0
        except ValueError:
            pass
    raw = lower.get("retry-after")
    if raw is not None:
        raw = raw.strip()
        try:
            value = float(raw)
            if math.isfinite(value) and value >= 0:
                return value
        except ValueError:
            try:
                when = email.utils.parsedate_to_datetime(raw)
            except (TypeError, ValueError):
                when = None
            if when is not None:
                if when.tzinfo is None:
                    when = when.replace(tzinfo=UTC)
                return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())
    step = min(BACKOFF_CAP, base * (2**attempt))
    return step * (0.5 + random.random() / 2)


def _first_line(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def describe_error_body(body: bytes, content_type: str = "", clean: Callable[[Any], Any] = lambda value: value) -> tuple[str, str]:
    """(error_type, message) from an error body in whatever shape the server used, each cut short.

    `clean` (the client's redaction) sees the text and the parsed document before anything is cut,
    so a secret the server echoes cannot survive as a fragment at the cut."""
    text = clean(body.decode("utf-8", errors="replace").strip())
    if not text:
        return "", "empty body"
    try:
        data = clean(parse_json_strict(body))
    except (NotJSON, RecursionError):  # the redaction walk can overflow where the C parser did not
        data = None
    if isinstance(data, dict):
        detail = data.get("detail", data.get("error"))
        if isinstance(detail, dict):
            kind = _first_line(str(detail.get("error_type") or detail.get("type") or ""), 60)
            message = detail.get("message") or detail.get("msg") or json.dumps(detail, ensure_ascii=False)
            return kind, _first_line(str(message))
        if isinstance(detail, list) and detail:
            parts = []
            for item in detail[:3]:
                if isinstance(item, dict):
                    loc = ".".join(str(p) for p in item.get("loc", []) if p != "body")
                    parts.append(f"{loc}: {item.get('msg', '')}" if loc else str(item.get("msg", item)))
                else:
                    parts.append(str(item))
            more = f" (+{len(detail) - 3} more)" if len(detail) > 3 else ""
            return "validation_error", _first_line("; ".join(parts) + more)
        if isinstance(detail, str):
            return _first_line(str(data.get("error_type") or data.get("type") or ""), 60), _first_line(detail)
        return "", _first_line(text)
    if "html" in content_type.lower() or text.lstrip().lower().startswith(("<!doctype", "<html")):
        title = re.search(r"<title[^>]*>(.*?)</title>", text, re.IGNORECASE | re.DOTALL)
        heading = re.search(r"<h1[^>]*>(.*?)</h1>", text, re.IGNORECASE | re.DOTALL)
        found = title or heading
        shown = re.sub(r"<[^>]+>", "", found.group(1)) if found else "no title"
        return "", f"an HTML page ({_first_line(shown, 120)})"
    return "", _first_line(text)


# Keys shorter than this are redacted as whole words only. A real API key is far longer; a short one
# is a placeholder for a local server ("x", "test", "dev1"). Replacing every occurrence of it made
# every error text and model name unreadable ("th[redacted] s[redacted]rv[redacted]r ...") and, for
# a key that is part of an option id, turned valid answers into choices outside the offered set.
# As a whole word (not next to a letter, digit, "_" or "-") an echoed "Bearer x" is still caught.
# Refusing short keys was the other choice; it would break the local servers that accept any key.
WHOLE_WORD_KEY_CHARS = 16


def redactor(key: str) -> Callable[[str], str]:
    """A function that replaces `key` in a text by "[redacted]": every occurrence of a long key, and
    whole-word occurrences of a short one (WHOLE_WORD_KEY_CHARS)."""
    if not key:
        return lambda text: text
    if len(key) >= WHOLE_WORD_KEY_CHARS:

        def long(text: str) -> str:
            # again until gone: the marker and what follows can spell the key anew ("[redacted]abc..."
            # as a key); each pass shortens the text (the key is longer than the marker), so it ends
            while key in text:
                text = text.replace(key, "[redacted]")
            return text

        return long
    pattern = re.compile(r"(?<![\w-])" + re.escape(key) + r"(?![\w-])")
    # a short key the marker itself would show ("redacted") gets another marker
    marker = next(m for m in ("[redacted]", "[hidden]", "") if not pattern.search(f" {m} "))

    def short(text: str) -> str:
        if key not in text:
            return text
        # a key that ends in punctuation, echoed twice ("1=1="), stands as a word only once the
        # second is replaced: again until none stands; past a few passes, cut them out (that ends)
        for _ in range(4):
            text = pattern.sub(marker, text)
            if not pattern.search(text):
                return text
        while pattern.search(text):
            text = pattern.sub("", text)
        return text

    return short


def key_problem(key: str, env: str) -> str:
    """The one sentence for a key an HTTP header cannot carry (never quoting the key), or ""."""
    if all(" " <= ch <= "~" or ch == "\t" for ch in key):
        return ""
    what = "a line break" if ("\n" in key or "\r" in key) else "a control character" if any(ch < " " or ch == "\x7f" for ch in key) else "a non-ASCII character"
    return (
        f"the API key in ${env} holds {what}, which an HTTP header cannot carry; it was not sent: "
        f"set ${env} to the key alone (one line, as issued)"
    )


@dataclass
class _LoopState:
    client: httpx.AsyncClient
    semaphore: asyncio.Semaphore
    lock: asyncio.Lock


class SystemOneClient:
    """HTTP for one server: headers, retries, error texts. Safe to share across event loops."""

    def __init__(self, cfg: SystemOneConfig, *, backoff_base: float = BACKOFF_BASE) -> None:
        if not cfg.base_url:
            raise ServerError(
                "the systemone backend needs a server: set [systemone] base_url in the config "
                "(e.g. https://api.example.com/v1) or pass --base-url"
            )
        self.cfg = cfg
        self.base_url = cfg.base_url.rstrip("/")
        self.shown_url = public_url(self.base_url)
        self.backoff_base = backoff_base
        self._loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopState] = weakref.WeakKeyDictionary()
        self._sync_loop: asyncio.AbstractEventLoop | None = None
        self._sync_thread: threading.Thread | None = None
        self._sync_guard = threading.Lock()

    # -- secrets

    def _key(self) -> str:
        return os.environ.get(self.cfg.api_key_env, "").strip()

    def key_problem(self) -> str:
        """Why the key cannot be sent, or "": an HTTP header cannot carry a line break, another control
        character or a non-ASCII character, and httpx's refusal quotes the header (the key) in its error."""
        return key_problem(self._key(), self.cfg.api_key_env)

    def redact(self, text: str) -> str:
        return redactor(self._key())(text)

    def redact_data(self, data: Any) -> Any:
        """Every string (keys included) of a parsed reply with the key redacted: a server that
        echoes the Authorization header must not get the key into a model name, a session file,
        the cached profile or doctor's output."""
        key = self._key()
        if not key:
            return data
        redact = redactor(key)

        def walk(value: Any) -> Any:
            if isinstance(value, str):
                return redact(value)
            if isinstance(value, list):
                return [walk(item) for item in value]
            if isinstance(value, dict):
                return {walk(k): walk(v) for k, v in value.items()}
            return value

        return walk(data)

    def _headers(self) -> dict[str, str]:
        from ... import __version__

        headers = {"User-Agent": f"tui-router/{__version__}", "Accept": "application/json", **self.cfg.headers}
        key = self._key()
        if key and not self.key_problem():  # an unsendable key: _request answers with key_problem()
            headers["Authorization"] = f"Bearer {key}"
        return headers

    # -- per-loop state

    def _state(self) -> _LoopState:
        loop = asyncio.get_running_loop()
        state = self._loops.get(loop)
        if state is None:
            limit = self.cfg.concurrency
            client = httpx.AsyncClient(
                headers=self._headers(),
                timeout=httpx.Timeout(self.cfg.timeout),
                limits=httpx.Limits(max_connections=limit, max_keepalive_connections=limit),
                follow_redirects=False,
            )
            state = _LoopState(client=client, semaphore=asyncio.Semaphore(limit), lock=asyncio.Lock())
            self._loops[loop] = state
        return state

    def loop_lock(self) -> asyncio.Lock:
        return self._state().lock

    async def aclose(self) -> None:
        """Close the client of the running loop (others belong to loops that close their own)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        state = self._loops.pop(loop, None)
        if state is not None:
            await state.client.aclose()

    # -- the synchronous face: a private loop thread, so sequential CLI calls reuse one connection

    def run_sync(self, coro: Coroutine[Any, Any, T]) -> T:
        with self._sync_guard:
            if self._sync_loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, name="systemone-sync", daemon=True)
                thread.start()
                self._sync_loop, self._sync_thread = loop, thread
            loop = self._sync_loop
        return asyncio.run_coroutine_threadsafe(coro, loop).result()

    def close(self) -> None:
        with self._sync_guard:
            loop, thread = self._sync_loop, self._sync_thread
            self._sync_loop = self._sync_thread = None
        if loop is None or thread is None:
            return
        try:
            asyncio.run_coroutine_threadsafe(self.aclose(), loop).result(timeout=5)
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout=5)
            loop.close()

    # -- requests

    async def post_json(self, path: str, body: dict[str, Any]) -> Reply:
        # replace_surrogates: a catalog's or an earlier answer's lone surrogate must not sink the request
        content = replace_surrogates(json.dumps(body, ensure_ascii=False, separators=(",", ":"))).encode("utf-8")
        return await self._request("POST", path, content)

    async def get_json(self, path: str) -> Reply:
        return await self._request("GET", path, None)

    async def _request(self, method: str, path: str, content: bytes | None) -> Reply:
        """One request with its retries, bounded twice: each attempt by `timeout` (the whole exchange,
        not per read as httpx counts it) and all of it, waits included, by `question_budget`."""
        shown = f"{self.shown_url}{path}"
        problem = self.key_problem()
        if problem:  # before any client exists: its headers would raise with the key in the message
            return Reply(error=f"{shown}: {problem}", attempts=0)
        state = self._state()
        loop = asyncio.get_running_loop()
        url = f"{self.base_url}{path}"
        retries = self.cfg.max_retries
        budget = self.cfg.question_budget
        headers = {"Content-Type": "application/json"} if content is not None else None
        attempt = 0
        ends: float | None = None  # the question's deadline, from its first attempt (not its queueing)
        while True:
            attempt += 1
            try:
                async with state.semaphore:
                    if ends is None:
                        ends = loop.time() + budget
                    left = ends - loop.time()
                    # the budget cuts this attempt short only when it leaves noticeably less than timeout
                    cut = left < self.cfg.timeout - 0.05
                    limit = left if cut else self.cfg.timeout
                    if limit <= 0:
                        return Reply(error=self._out_of_budget(shown, attempt - 1), attempts=attempt - 1)
                    try:
                        async with asyncio.timeout(limit):
                            response, body = await self._exchange(state.client, method, url, content, headers)
                    except TimeoutError:
                        why = (
                            f"what was left of the question's {budget:g} s ([systemone] total_timeout)"
                            if cut
                            else "[systemone] timeout bounds the whole request"
                        )
                        return Reply(
                            error=f"{shown}: no complete reply within {limit:.3g} s ({why}); the server is slow or "
                            "unreachable: raise [systemone] timeout or check the server",
                            attempts=attempt,
                        )
            except _TooLarge as exc:
                return Reply(
                    status=exc.status,
                    error=f"{shown}: the reply is larger than {self.cfg.max_reply_bytes} bytes ({exc.seen}); refused "
                    "unread: raise [systemone] max_reply_bytes if the server really sends that much",
                    attempts=attempt,
                )
            except httpx.DecodingError as exc:  # not a TransportError: a body that is not what its Content-Encoding says
                reason = self.redact(_first_line(self.redact(str(exc) or type(exc).__name__), 120))  # before the cut (no half key), after the join
                return Reply(
                    error=f"{shown}: the reply cannot be decoded ({reason}); the server's Content-Encoding does not match its body",
                    attempts=attempt,
                )
            except httpx.TimeoutException as exc:
                wait = retry_delay({}, attempt - 1, base=self.backoff_base)
                if isinstance(exc, httpx.ConnectTimeout) and attempt <= retries and self._can_wait(ends, loop, wait):
                    await asyncio.sleep(wait)
                    continue
                what = "connecting" if isinstance(exc, httpx.ConnectTimeout) else "waiting for the reply"
                return Reply(
                    error=f"{shown}: no reply within {self.cfg.timeout:g} s ({what}); the server is slow or "
                    "unreachable: raise [systemone] timeout or check the server",
                    attempts=attempt,
                )
            except (httpx.TransportError, OSError) as exc:  # refused, reset, DNS, protocol
                wait = retry_delay({}, attempt - 1, base=self.backoff_base)
                if attempt <= retries and self._can_wait(ends, loop, wait):
                    await asyncio.sleep(wait)
                    continue
                reason = self.redact(_first_line(self.redact(str(exc) or type(exc).__name__), 160))  # before the cut (no half key), after the join
                tries = f"{attempt} attempt{'s' if attempt > 1 else ''}"
                if isinstance(exc, (httpx.RemoteProtocolError, httpx.ReadError)):  # connected, then broke off or spoke bad HTTP
                    return Reply(
                        error=f"{shown}: the server broke off its reply ({reason}) after {tries}; "
                        "it is failing mid-reply or is not an HTTP server: check the server",
                        attempts=attempt,
                    )
                return Reply(
                    error=f"{shown}: cannot connect ({reason}) after {tries}; is the server running and [systemone] base_url right?",
                    attempts=attempt,
                )
            status = response.status_code
            if status == 200:
                try:
                    data = parse_json_strict(body)
                except NotJSON as exc:
                    start = _first_line(self.redact(body.decode("utf-8", errors="replace"))[:40], 40)
                    return Reply(
                        status=status,
                        error=self.redact(f"{shown}: HTTP 200 but the body is not JSON ({exc}; it starts with: {start})"),
                        attempts=attempt,
                    )
                try:
                    data = self.redact_data(data)
                except RecursionError:  # parsed by C, too deep for the walk: fail closed
                    return Reply(status=status, error=f"{shown}: HTTP 200 but the reply is nested too deeply to read", attempts=attempt)
                return Reply(status=status, data=data, attempts=attempt)
            if status in RETRY_STATUSES and attempt <= retries:
                wait = retry_delay(response.headers, attempt - 1, base=self.backoff_base)
                if wait <= MAX_RETRY_WAIT and self._can_wait(ends, loop, wait):
                    await asyncio.sleep(wait)
                    continue
            left = None if ends is None else max(0.0, ends - loop.time())
            return Reply(status=status, error=self._http_error(shown, response, body, attempt, left), attempts=attempt)

    async def _exchange(
        self, client: httpx.AsyncClient, method: str, url: str, content: bytes | None, headers: dict[str, str] | None
    ) -> tuple[httpx.Response, bytes]:
        """Send, then read the body up to max_reply_bytes; past that, _TooLarge without reading on."""
        cap = self.cfg.max_reply_bytes
        async with client.stream(method, url, content=content, headers=headers) as response:
            declared = response.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > cap:
                raise _TooLarge(response.status_code, f"Content-Length {declared}")
            body = bytearray()
            async for chunk in response.aiter_bytes():  # decoded: a compressed bomb counts at full size
                body += chunk
                if len(body) > cap:
                    raise _TooLarge(response.status_code, f"over {cap} bytes read")
        return response, bytes(body)

    def _can_wait(self, ends: float | None, loop: asyncio.AbstractEventLoop, wait: float) -> bool:
        """A retry is worth waiting for only when the question's budget has room for the wait."""
        return ends is None or loop.time() + wait < ends

    def _out_of_budget(self, shown: str, attempts: int) -> str:
        return (
            f"{shown}: no answer within the question's {self.cfg.question_budget:g} s after {attempts} attempt"
            f"{'s' if attempts != 1 else ''} ([systemone] total_timeout); the server is slow or failing"
        )

    def _http_error(self, shown: str, response: httpx.Response, body: bytes, attempts: int, left: float | None = None) -> str:
        status = response.status_code
        kind, message = describe_error_body(body, response.headers.get("content-type", ""), self.redact_data)
        head = f"{shown}: HTTP {status}" + (f" {kind}" if kind else "") + f": {message}"
        request_id = response.headers.get("x-typesafe-request-id") or response.headers.get("x-request-id")
        if request_id:
            head += f" (request id {_first_line(self.redact(request_id), 60)})"
        env = self.cfg.api_key_env
        if status in (401, 403):
            hint = (
                f"the server refused the API key in ${env}; check it" if self._key() else f"no API key was sent: set ${env} (named by [systemone] api_key_env)"
            )
        elif status == 404 and shown.endswith("/models"):
            # "No route /v1/models" names models too: the list is missing, not the configured model
            hint = "the server has no model list there: check [systemone] base_url (it usually ends in /v1); routing itself does not need the list"
        elif status == 404 and ("model" in message.lower() or "model" in kind.lower()):
            hint = f"the server does not serve model {self.cfg.model!r}; pick one from `tui-router models` and set [systemone] model"
        elif status == 404:
            hint = "no such endpoint: check [systemone] base_url (it usually ends in /v1)"
        elif status == 400 and "model" in message.lower():
            hint = f"check [systemone] model ({self.cfg.model!r}); `tui-router models` lists what the server serves"
        elif status in (400, 422):
            hint = "the server rejected the request"
        elif status == 413:
            hint = "the request is too large for the server: offer fewer options (lower retrieval.top_k)"
        elif status in RETRY_STATUSES:
            retry_after = response.headers.get("retry-after")
            tried = f"gave up after {attempts} attempt{'s' if attempts > 1 else ''}"
            if retry_after and attempts <= self.cfg.max_retries:
                room = "" if left is None else f", more than the {left:.3g} s left of the question's {self.cfg.question_budget:g} s ([systemone] total_timeout)"
                hint = f"{tried}; the server asked to wait {_first_line(self.redact(retry_after), 40)} s{room}"
            else:
                hint = f"{tried}; the server is busy or failing, try again later"
        elif 300 <= status < 400:
            where = _first_line(self.redact(public_url(response.headers.get("location", ""))) or "elsewhere", 120)
            hint = f"the server redirects to {where}; set [systemone] base_url to the final address"
        elif status >= 500:
            hint = "the server failed; try again later or report it to its operator"
        else:
            hint = "unexpected status"
        return self.redact(f"{head} ({hint})")


# ---------------------------------------------------------------- the backend


async def list_models(client: SystemOneClient) -> list[ModelInfo]:
    """GET {base_url}/models, or ServerError with a sentence a person can act on."""
    reply = await client.get_json("/models")
    if not reply.ok:
        raise ServerError(reply.error)
    models = models_from_reply(reply.data)
    if models is None:
        raise ServerError(f"{client.shown_url}/models answered, but not with a model list (expected {{\"models\": [...]}})")
    return models
