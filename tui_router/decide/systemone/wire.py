"""The System One wire format: the request body for one choice question, and the checks that turn a
reply into an Answer (or an Answer with an error). No transport here; the client sends these."""

from __future__ import annotations

import json
import math
import unicodedata
from typing import Any

from pydantic import BaseModel

from ...textsafe import bounded_name
from ...tomlio import loads_json
from ..base import Answer, Question, shown

QUESTION_ID = "tool"


class NotJSON(ValueError):
    pass


def parse_json_strict(raw: bytes) -> Any:
    """JSON as RFC 8259 defines it: NaN and Infinity (which Python's json accepts) are rejected."""

    def reject(name: str) -> Any:
        raise NotJSON(f"it contains {name}, which is not JSON")

    try:
        return loads_json(raw.decode("utf-8"), parse_constant=reject)  # a lone "\\ud800" reads as U+FFFD
    except NotJSON:
        raise
    except UnicodeDecodeError:
        raise NotJSON("it is not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise NotJSON(f"{exc.msg} at position {exc.pos}") from None
    except ValueError:  # Python's cap on integer digits (sys.get_int_max_str_digits)
        raise NotJSON("it holds a number with too many digits") from None
    except RecursionError:
        raise NotJSON("it is nested too deeply") from None



class ModelInfo(BaseModel):
    name: str
    description: str = ""
    release_date: str = ""


def models_from_reply(data: Any) -> list[ModelInfo] | None:
    """The model list of GET /models in the System One shape ({"models": [...]}) or OpenAI's ({"data": [...]})."""
    if not isinstance(data, dict):
        return None
    items = data.get("models", data.get("data"))
    if not isinstance(items, list):
        return None
    found = []
    for item in items:
        if isinstance(item, str):
            found.append(ModelInfo(name=item))
        elif isinstance(item, dict) and isinstance(item.get("name", item.get("id")), str):
            found.append(
                ModelInfo(
                    name=item.get("name", item.get("id")),
                    description=str(item.get("description") or ""),
                    release_date=str(item.get("release_date") or ""),
                )
            )
    return found


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_finite(value: Any) -> bool:
    """A JSON number that is a finite float (an integer of 400 digits is not: float() overflows)."""
    if not _is_number(value):
        return False
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False


def _nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


def answer_from_reply(data: Any, question: Question, question_id: str = QUESTION_ID) -> Answer:
    """Turn a 200 reply into an Answer; anything malformed becomes Answer(error=...).

    Option names are matched byte for byte after NFC (a server may return NFD keys); a key or choice
    that matches no option stays as it came, so check_answer reports it.
    """
    if not isinstance(data, dict):
        return Answer(error=f"the reply is a JSON {type(data).__name__}, not an object")
    # the name goes into every turn of the session and onto the status bar: a server's 100k-character
    # or control-character "name" is bounded and cleaned here, once, for every caller
    model = bounded_name(data["model"]) if isinstance(data.get("model"), str) else ""
    raw_usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
    usage = {str(k): int(v) for k, v in raw_usage.items() if _is_finite(v)}
    answers = data.get("answers")
    if not isinstance(answers, dict):
        return Answer(error="the reply has no 'answers' object", model=model)
    raw = answers.get(question_id)
    if raw is None:
        got = ", ".join(shown(k) for k in list(answers)[:5]) or "none"
        return Answer(error=f"the reply has no answer to question {question_id!r} (answers: {got})", model=model)
    if not isinstance(raw, dict) or raw.get("type") != "choice":
        kind = raw.get("type") if isinstance(raw, dict) else type(raw).__name__
        return Answer(error=f"the answer is of type {shown(kind)}, not 'choice'", model=model)
    by_nfc = {_nfc(option): option for option in question.options}
    choice = raw.get("choice")
    if not isinstance(choice, str):
        return Answer(error=f"the answer's choice is {shown(choice, as_json=True)}, not an option name", model=model)
    probs_raw = raw.get("probabilities")
    if not isinstance(probs_raw, dict):
        return Answer(error="the answer has no probabilities object", model=model)
    probabilities: dict[str, float] = {}
    for key, value in probs_raw.items():
        if not _is_finite(value):
            return Answer(error=f"the probability of {shown(key)} is {shown(value, as_json=True)}, not a finite number", model=model)
        name = by_nfc.get(_nfc(key), key)
        if name in probabilities:
            return Answer(error=f"two probability keys name the option {shown(name)}", model=model)
        probabilities[name] = float(value)
    reported = raw.get("confidence")
    if reported is not None and not _is_finite(reported):
        return Answer(error=f"the reported confidence is {shown(reported, as_json=True)}, not a number", model=model)
    return Answer(
        choice=by_nfc.get(_nfc(choice), choice),
        probabilities=probabilities,
        reported_confidence=None if reported is None else float(reported),
        model=model,
        usage=usage,
    )


def question_body(question: Question, model: str, question_id: str = QUESTION_ID) -> dict[str, Any]:
    return {
        "model": model,
        "state": {"message": question.message, "retrieved_tools": question.retrieved_tools},
        "questions": {question_id: {"type": "choice", "instructions": question.instructions, "criteria": dict(question.options)}},
    }


# ---------------------------------------------------------------- transport


class Reply(BaseModel):
    """One POST or GET after retries: the parsed JSON of a 200, or an error a person can act on."""

    status: int | None = None
    data: Any = None
    error: str = ""
    attempts: int = 0

    @property
    def ok(self) -> bool:
        return not self.error
