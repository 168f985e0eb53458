"""The server profile: what a System One server actually accepts and how it answers.

Servers of the wire format disagree in details (option caps, model aliases, confidence formulas),
so `tui-router doctor` and the backend's first use probe the server with a few small questions and
keep the result on disk per base_url and model. Two-stage routing sizes itself from `max_options`.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from ...confidence import confidence_of
from ...tomlio import replace_surrogates
from ..base import Question, check_answer
from .wire import Reply, answer_from_reply, models_from_reply, question_body

if TYPE_CHECKING:
    from .client import SystemOneClient

PROFILE_VERSION = 1
PROTOCOL_MAX_OPTIONS = 255
CACHE_MAX_AGE = timedelta(days=7)
CONFIDENCE_TOLERANCE = 0.02  # servers round probabilities (0.01 steps are common)

# Small questions with an obvious answer: enough to see whether answers are self-consistent.
CONSISTENCY_PROBES: list[tuple[str, dict[str, str]]] = [
    (
        "Schedule a meeting with Dana next Tuesday at 10am.",
        {
            "create_event": "Create a calendar event at a date and time.",
            "send_email": "Send an email to one or more recipients.",
            "get_weather": "Get the weather forecast for a place.",
        },
    ),
    (
        "What will the weather be in Oslo tomorrow?",
        {
            "get_weather": "Get the weather forecast for a place.",
            "convert_currency": "Convert an amount between two currencies.",
            "search_files": "Find files in the workspace by name.",
            "translate_text": "Translate text into another language.",
        },
    ),
    (
        "Email Priya the quarterly report.",
        {
            "send_email": "Send an email to one or more recipients.",
            "send_sms": "Send a short text message to a phone number.",
            "create_ticket": "Open a ticket in the issue tracker.",
            "read_file": "Read the full text of one file.",
            "fetch_url": "Download the contents of a web page.",
        },
    ),
]
PROBE_NONE = "none_of_these"
PROBE_NONE_TEXT = "None of the options fits."


class ServerProfile(BaseModel):
    """What the probes found. None means "not known" (the probe could not tell)."""

    version: int = PROFILE_VERSION
    base_url: str
    model: str
    checked_at: str
    reachable: bool = True
    auth_failed: bool = False
    models_listed: bool | None = None
    models: list[str] = []
    models_note: str = ""
    alias_accepted: bool | None = None
    alias_note: str = ""
    resolved_model: str = ""
    max_options: int | None = None
    max_options_note: str = ""
    consistent: bool | None = None
    consistency_note: str = ""
    answers_every_question: bool | None = None
    multi_note: str = ""
    confidence_definition: str = "unknown"
    confidence_note: str = ""

    @property
    def complete(self) -> bool:
        """Worth caching: the server answered a question with this model."""
        return self.reachable and not self.auth_failed and self.alias_accepted is True

    @property
    def usable(self) -> bool:
        return self.complete and self.consistent is True

    def option_limit(self, configured: int) -> int:
        return min(configured, self.max_options) if self.max_options else configured

    def rows(self, configured_max: int | None = None) -> list[tuple[str, str, str]]:
        """(check, result, detail) for the doctor's table."""

        def yes_no(value: bool | None, yes: str = "yes", no: str = "no") -> str:
            return "unknown" if value is None else (yes if value else no)

        rows = [("server", "reachable" if self.reachable else "unreachable", self.base_url)]
        if self.auth_failed:
            rows.append(("API key", "refused", self.alias_note))
        models_detail = self.models_note or (", ".join(self.models[:8]) + (f" (+{len(self.models) - 8})" if len(self.models) > 8 else ""))
        rows.append(("GET /models", yes_no(self.models_listed, "answers", "no list"), models_detail))
        alias_detail = self.alias_note or (f"answered by {self.resolved_model}" if self.resolved_model else "")
        rows.append((f"model {self.model!r}", yes_no(self.alias_accepted, "accepted", "rejected"), alias_detail))
        cap = "unknown" if self.max_options is None else str(self.max_options)
        cap_detail = self.max_options_note
        if configured_max is not None:
            used = self.option_limit(configured_max)
            cap_detail = (cap_detail + "; " if cap_detail else "") + f"routing uses {used} (two stages above that)"
        rows.append(("largest option count", cap, cap_detail))
        rows.append(("answers consistent", yes_no(self.consistent), self.consistency_note or "argmax, keys and sum checked"))
        rows.append(("answers every question", yes_no(self.answers_every_question), self.multi_note or "routing asks one question per request"))
        rows.append(("confidence definition", self.confidence_definition, self.confidence_note))
        return rows


def now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# ---------------------------------------------------------------- cache


class ProfileCache:
    """One JSON file per (base_url, model) under $XDG_CACHE_HOME/tui-router/profiles/."""

    def __init__(self, folder: Path, max_age: timedelta = CACHE_MAX_AGE) -> None:
        self.folder = folder
        self.max_age = max_age

    @classmethod
    def default(cls) -> ProfileCache:
        root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        return cls(Path(root) / "tui-router" / "profiles")

    def path_for(self, base_url: str, model: str) -> Path:
        digest = hashlib.sha256(f"{base_url}\n{model}".encode("utf-8", "surrogatepass")).hexdigest()[:20]
        return self.folder / f"{digest}.json"

    def load(self, base_url: str, model: str) -> ServerProfile | None:
        path = self.path_for(base_url, model)
        try:
            profile = ServerProfile.model_validate_json(path.read_bytes())
        except (OSError, ValidationError, ValueError):
            return None  # absent or unreadable: probe again
        if profile.version != PROFILE_VERSION or profile.base_url != base_url or profile.model != model:
            return None
        try:
            checked = datetime.strptime(profile.checked_at, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
        except ValueError:
            return None
        return profile if datetime.now(UTC) - checked <= self.max_age else None

    def save(self, profile: ServerProfile) -> Path | None:
        """Write atomically; a cache that cannot be written only costs a probe next time."""
        path = self.path_for(profile.base_url, profile.model)
        # a server's names may hold a lone surrogate, which model_dump_json refuses: U+FFFD instead
        text = replace_surrogates(json.dumps(profile.model_dump(mode="json"), indent=1, ensure_ascii=False))
        tmp = None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".profile-", suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
            os.replace(tmp, path)
        except OSError:
            if tmp is not None:  # a write that failed half-way (disk full) leaves no temp file
                Path(tmp).unlink(missing_ok=True)
            return None
        return path


# ---------------------------------------------------------------- probes


def _probe_question(message: str, options: dict[str, str]) -> Question:
    return Question(message=message, options={**options, PROBE_NONE: PROBE_NONE_TEXT}, none_option=PROBE_NONE, retrieved_tools=list(options))


def _size_question(count: int) -> Question:
    options = {f"option_{i:03d}": f"Probe option number {i}." for i in range(1, count)}
    return _probe_question("Pick option_001.", options)


def _cap_hint(error: str) -> int | None:
    """A limit the rejection names ("at most 64 items"), to try before bisecting."""
    match = re.search(r"(?:at most|maximum(?: of)?|max(?:imum)?|up to|limit(?: is| of)?)\D{0,12}(\d{1,4})", error, re.IGNORECASE)
    return int(match.group(1)) if match else None


def _confidence_definition(samples: list[tuple[dict[str, float], float]]) -> tuple[str, str]:
    if not samples:
        return "not reported", "no answer carried a confidence"
    best, best_gap = "", 1.0
    for formula in ("reference", "top", "margin", "entropy"):
        gap = max(abs((confidence_of(probs, formula) or 0.0) - reported) for probs, reported in samples)
        if gap < best_gap:
            best, best_gap = formula, gap
    if best_gap <= CONFIDENCE_TOLERANCE:
        labels = {
            "reference": "(max p - 1/n) / (1 - 1/n), the reference",
            "top": "the top probability",
            "margin": "top-1 minus top-2 probability",
            "entropy": "1 - normalised entropy",
        }
        return best, f"reported values match {labels[best]} within {best_gap:.3f}; tui-router recomputes its own"
    probs, reported = samples[0]
    reference = confidence_of(probs, "reference") or 0.0
    return "unknown", f"reported {reported:.3f} where the reference formula gives {reference:.3f}; tui-router recomputes its own"


async def probe_server(client: SystemOneClient, model: str) -> ServerProfile:
    """Ask the server a handful of small questions; never raises for a misbehaving server."""
    profile = ServerProfile(base_url=client.shown_url, model=model, checked_at=now_iso())

    listed = await client.get_json("/models")
    if listed.status is None:
        profile.reachable = False
        profile.models_note = listed.error
        return profile
    if listed.ok:
        names = models_from_reply(listed.data)
        profile.models_listed = names is not None
        profile.models = [m.name for m in names or []]
        if names is None:
            profile.models_note = "answers, but not with a model list"
        elif model not in profile.models:
            profile.models_note = f"{model!r} is not listed (listed: {', '.join(profile.models[:6]) or 'none'})"
    else:
        profile.models_listed = False
        profile.models_note = listed.error

    # Consistency probes; the first one also tells whether the model name is accepted.
    problems: list[str] = []
    samples: list[tuple[dict[str, float], float]] = []
    for index, (message, options) in enumerate(CONSISTENCY_PROBES):
        question = _probe_question(message, options)
        reply = await client.post_json("/systemone", question_body(question, model))
        if not reply.ok:
            if index == 0:
                _first_probe_failed(profile, reply)
                return profile
            problems.append(reply.error)
            continue
        answer = answer_from_reply(reply.data, question)
        if index == 0:
            profile.alias_accepted = True
            profile.resolved_model = answer.model
        problem = check_answer(answer, list(question.options))
        if problem:
            problems.append(problem)
        elif answer.reported_confidence is not None:
            samples.append((answer.probabilities, answer.reported_confidence))
    profile.consistent = not problems
    profile.consistency_note = problems[0] if problems else ""
    profile.confidence_definition, profile.confidence_note = _confidence_definition(samples)

    await _probe_multi(client, model, profile)
    await _probe_cap(client, model, profile, known_good=max(len(o) + 1 for _, o in CONSISTENCY_PROBES))
    return profile


def _first_probe_failed(profile: ServerProfile, reply: Reply) -> None:
    # GET /models got an HTTP answer, so the server is reachable: a question that timed out is a failed
    # check (doctor's table, exit 1), not "cannot be reached" (one line, exit 2, the table dropped)
    if reply.status in (401, 403):
        profile.auth_failed = True
    elif reply.status in (400, 404, 422) and "model" in reply.error.lower():
        profile.alias_accepted = False
    profile.alias_note = reply.error


async def _probe_multi(client: SystemOneClient, model: str, profile: ServerProfile) -> None:
    first = _probe_question(*CONSISTENCY_PROBES[0])
    second = _probe_question(*CONSISTENCY_PROBES[1])
    body: dict[str, Any] = question_body(first, model, "first")
    body["questions"].update(question_body(second, model, "second")["questions"])
    reply = await client.post_json("/systemone", body)
    if not reply.ok:
        profile.multi_note = reply.error
        return
    answers = reply.data.get("answers") if isinstance(reply.data, dict) else None
    got = set(answers) if isinstance(answers, dict) else set()
    profile.answers_every_question = {"first", "second"} <= got
    if not profile.answers_every_question:
        profile.multi_note = f"asked 2 questions, got answers to {len(got & {'first', 'second'})}; routing asks one question per request"


async def _probe_cap(client: SystemOneClient, model: str, profile: ServerProfile, known_good: int) -> None:
    """Largest option count accepted: try the protocol maximum, then the limit the error names, then bisect."""
    last_error = ""

    async def accepts(count: int) -> bool | None:
        nonlocal last_error
        reply = await client.post_json("/systemone", question_body(_size_question(count), model))
        if reply.status is None:
            return None  # transport trouble says nothing about the cap
        if not reply.ok:
            last_error = reply.error
        return reply.ok

    result = await accepts(PROTOCOL_MAX_OPTIONS)
    if result is None:
        profile.max_options_note = "the probe did not get through; routing uses the configured limit"
        return
    if result:
        profile.max_options = PROTOCOL_MAX_OPTIONS
        profile.max_options_note = "the protocol maximum"
        return
    lo, hi = known_good, PROTOCOL_MAX_OPTIONS  # lo accepted, hi rejected
    hint = _cap_hint(last_error)
    if hint is not None and lo < hint < hi:
        ok = await accepts(hint)
        if ok:
            lo = hint
            if hint + 1 < hi:
                if await accepts(hint + 1):
                    lo = hint + 1
                else:
                    hi = hint + 1
        elif ok is False:
            hi = hint
    while hi - lo > 1:
        mid = (lo + hi) // 2
        ok = await accepts(mid)
        if ok is None:
            break
        lo, hi = (mid, hi) if ok else (lo, mid)
    profile.max_options = lo
    profile.max_options_note = cap_note(hi, last_error)


def cap_note(rejected: int, error: str) -> str:
    """The largest-option-count detail: the server's rejection, at most 200 cells of it, cut at a
    grapheme and ending in … when cut (`[:200]` left "(the server reject" with nothing to say so)."""
    from ...app.format import shorten

    return f"{rejected} options rejected: {shorten(error, 200)}"
