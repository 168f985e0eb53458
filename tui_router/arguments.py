"""After the route: build a tool's arguments, validate them against its JSON Schema, demote on failure.

The seeds' third layer ("act"): the router picks a tool, then the application builds the arguments
and validates them before any call. Two sources:

- `[arguments] command = [...]`: an argument list run by command.py's `run_command`, as the fallback
  is (no shell, timeout, output cap, own process group, no secrets in its environment), given one JSON object on stdin
  (message, tool id, when_to_use, schema); it prints one JSON object of arguments.
- With no command, `extract_arguments`: a deterministic extractor that fills only what the message
  states plainly (e-mail, URL, phone, ISO date/time, numbers next to a unit the field name names,
  enum values named in the message, ids after their noun, file paths). It never invents a value:
  a field it cannot fill is left out and, when required, reported as missing by validation.

An invalid or incomplete set of arguments demotes an execute to confirm (`demote_action`).
Plain Python, no Textual.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Iterable
from typing import Any, Literal

from pydantic import BaseModel

from .catalog import Tool
from .command import STDERR_CAP, child_env, run_command
from .config import ArgumentsConfig
from .session import ArgumentsRecord, now_iso
from .tomlio import loads_json, replace_surrogates

Source = Literal["command", "extractor"]


class ArgumentError(BaseModel):
    """One validation problem: where in the arguments (a JSON pointer-ish path) and why."""

    path: str
    reason: str

    def line(self) -> str:
        return f"{self.path}: {self.reason}"


class ArgumentsResult(BaseModel):
    """The arguments built for one routed tool, and whether they fit its schema."""

    tool: str
    values: dict[str, Any] = {}
    valid: bool = False
    errors: list[ArgumentError] = []
    source: Source = "extractor"
    error: str = ""  # why the command gave no arguments (then valid is False)
    duration_ms: float = 0.0
    has_schema: bool = True
    at: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "tool": self.tool,
            "values": self.values,
            "valid": self.valid,
            "errors": [e.model_dump() for e in self.errors],
            "source": self.source,
            "error": self.error,
            "duration_ms": round(self.duration_ms, 3),
        }

    def to_record(self) -> ArgumentsRecord:
        return ArgumentsRecord(
            tool=self.tool,
            values=self.values,
            valid=self.valid,
            errors=[e.line() for e in self.errors],
            source=self.source,
            error=self.error,
            duration_ms=round(self.duration_ms, 3),
            at=self.at,
        )

    def summary(self) -> str:
        """One line a person reads: valid, or the first problems."""
        if self.error:
            return self.error
        if self.valid:
            return f"valid ({len(self.values)} argument{'s' if len(self.values) != 1 else ''}, {self.source})"
        shown = "; ".join(e.line() for e in self.errors[:3])
        more = f" (+{len(self.errors) - 3} more)" if len(self.errors) > 3 else ""
        return f"invalid: {shown}{more}"


# ---------------------------------------------------------------------------------------------
# Validation
# ---------------------------------------------------------------------------------------------


def _pointer(path: Any) -> str:
    parts = [str(p) for p in path]
    return "/" + "/".join(parts) if parts else "(root)"


def _schema_validator(schema: dict[str, Any]) -> tuple[Any, str]:
    """The validator class for `schema` and why the schema is not valid JSON Schema ("" when it is)."""
    from jsonschema.exceptions import SchemaError
    from jsonschema.validators import Draft202012Validator, validator_for

    dialect = schema.get("$schema")
    if dialect is not None and not isinstance(dialect, str):
        # jsonschema's validator_for raised a TypeError/AttributeError on it: a traceback, not a sentence
        return Draft202012Validator, f"'$schema' must be a URI string, not {type(dialect).__name__}"
    # an unknown dialect URI: the latest draft, as jsonschema does (without its deprecation warning)
    cls = validator_for(schema, default=Draft202012Validator)
    try:
        cls.check_schema(schema)
    except SchemaError as exc:
        return cls, exc.message
    return cls, ""


def _iter_errors(validator: Any, values: Any) -> tuple[list[Any], str]:
    """The validation errors, or why the schema cannot be applied: a `$ref` to nowhere (or to another
    document, which is never fetched) or a `$ref` loop raised out of jsonschema as a traceback."""
    from referencing.exceptions import Unresolvable  # jsonschema's own resolver (a dependency of jsonschema >= 4.18)

    try:
        return list(validator.iter_errors(values)), ""
    except Unresolvable as exc:
        return [], f"a $ref cannot be resolved ({str(exc)[:200]}; other documents are never fetched)"
    except RecursionError:
        return [], "a $ref loop: the schema refers to itself without end"


def schema_problem(schema: dict[str, Any]) -> str:
    """Why a tool's `schema` is not valid JSON Schema ("" when it is); `catalog validate` lists these.
    Beyond the meta-schema, an empty object is validated to find `$ref`s that cannot be followed
    from the top (one under a property is met only when an argument reaches it)."""
    cls, problem = _schema_validator(schema)
    return problem or _iter_errors(cls(schema), {})[1]


def validate_arguments(schema: dict[str, Any] | None, values: Any) -> list[ArgumentError]:
    """Every problem of `values` against `schema` (jsonschema, with format checks), sorted by path."""
    if not schema:
        return [] if isinstance(values, dict) else [ArgumentError(path="(root)", reason="arguments must be a JSON object")]
    from jsonschema import FormatChecker

    cls, problem = _schema_validator(schema)
    if problem:
        return [ArgumentError(path="(schema)", reason=f"the tool's schema is not valid JSON Schema: {problem}")]
    validator = cls(schema, format_checker=FormatChecker())
    found, unusable = _iter_errors(validator, values)
    if unusable:
        return [ArgumentError(path="(schema)", reason=f"the tool's schema cannot be used: {unusable}")]
    problems = []
    for e in found:
        path = list(e.absolute_path)
        missing = re.match(r"^'([^']*)' is a required property$", e.message) if e.validator == "required" else None
        if missing:  # name the missing field in the path, as a person reads it
            problems.append(ArgumentError(path=_pointer([*path, missing.group(1)]), reason="required argument is missing"))
        else:
            problems.append(ArgumentError(path=_pointer(path), reason=e.message))
    return sorted(problems, key=lambda p: (p.path, p.reason))


def check(tool: Tool, values: dict[str, Any], source: Source, started: float, error: str = "") -> ArgumentsResult:
    errors = [] if error else validate_arguments(tool.input_schema, values)
    return ArgumentsResult(
        tool=tool.id,
        values=values,
        valid=not error and not errors,
        errors=errors,
        source=source,
        error=error,
        duration_ms=(time.perf_counter() - started) * 1000,
        has_schema=bool(tool.input_schema),
        at=now_iso(),
    )


def demote_action(action: str, result: ArgumentsResult | None) -> str:
    """The seed's "permission check plus arguments": invalid or missing arguments never auto-execute."""
    if action == "execute" and result is not None and not result.valid:
        return "confirm"
    return action


# ---------------------------------------------------------------------------------------------
# The built-in extractor
# ---------------------------------------------------------------------------------------------

# An e-mail starts only where a run of its characters starts, and a path has at most 64 folders of
# at most 255 characters (NAME_MAX): tried at every position of a long run ("1-1-1-..." or
# "././..." of 50k characters), an unbounded pattern rescans the rest of the run each time, seconds
# to minutes per field (quadratic).
_EMAIL = re.compile(r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")
_URL = re.compile(r"\bhttps?://[^\s<>\"'`]+", re.IGNORECASE)
_PHONE = re.compile(r"(?<![\w+])\+?\d[\d ().-]{6,}\d(?!\w)")
_DATETIME = re.compile(r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:\d{2})?")
_DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")
_TIME = re.compile(r"\b\d{2}:\d{2}(?::\d{2})?(?:Z|[+-]\d{2}:\d{2})?\b")
_NUMBER = re.compile(r"(?<![\w.])([$€£])?\s?(-?\d+(?:\.\d+)?)\s?([A-Za-z%]+)?")
_PATH = re.compile(r"(?<![\w@/])(?:~?/)?(?:[\w.-]{1,255}/){0,64}[\w-]{1,255}\.[A-Za-z][A-Za-z0-9]{0,5}\b(?!@)")
_WORD = re.compile(r"[a-z0-9]+")

# Units a message may use for a field whose name says the same thing.
_UNIT_WORDS = {
    "s": {"s", "sec", "secs", "second", "seconds"},
    "seconds": {"s", "sec", "secs", "second", "seconds"},
    "minutes": {"m", "min", "mins", "minute", "minutes"},
    "hours": {"h", "hr", "hrs", "hour", "hours"},
    "days": {"d", "day", "days"},
}
_MONEY_NAMES = {"amount", "price", "cost", "total", "sum"}


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _field_says(name: str, prop: dict[str, Any], *words: str) -> bool:
    """The field's name or description names one of `words`."""
    text = f"{name} {prop.get('description', '')}".lower().replace("-", " ").replace("_", " ")
    return any(re.search(rf"\b{re.escape(w)}", text) for w in words)


def _name_parts(name: str) -> list[str]:
    return [p for p in re.split(r"[_\W]+", name.lower()) if p]


def _unit_matches(unit: str, parts: list[str]) -> bool:
    unit = unit.lower()
    for part in parts:
        if unit in _UNIT_WORDS.get(part, ()):
            return True
        if len(unit) >= 3 and len(part) >= 3 and (part.startswith(unit) or unit.startswith(part)):
            return True
    return False


def _number_for(name: str, prop: dict[str, Any], message: str) -> int | float | None:
    """A number the message ties to this field: by currency for money fields, else by a unit the name names."""
    integer = prop.get("type") == "integer"
    parts = _name_parts(name)
    hits: list[float] = []
    for match in _NUMBER.finditer(message):
        currency, raw, unit = match.group(1), match.group(2), match.group(3)
        if currency and set(parts) & _MONEY_NAMES:
            hits.append(float(raw))
        elif unit and _unit_matches(unit, parts):
            hits.append(float(raw))
    if len(set(hits)) != 1:  # none, or two different candidates: leave it to a person
        return None
    value = hits[0]
    if integer:
        return int(value) if value.is_integer() else None
    return int(value) if value.is_integer() else value


def _enum_for(prop: dict[str, Any], message: str) -> Any:
    values = prop.get("enum") or []
    words = " " + " ".join(_words(message)) + " "
    found = [v for v in values if isinstance(v, str) and v and f" {' '.join(_words(v))} " in words]
    return found[0] if len(found) == 1 else None  # two named: ambiguous, never a guess


def _id_for(name: str, message: str) -> str | None:
    """`order_id` <- "order 4412" / "order #4412"; any `*_id` <- a lone "#4821"."""
    parts = _name_parts(name)
    if not parts or parts[-1] != "id":
        return None
    noun = parts[-2] if len(parts) >= 2 else None
    found: list[str] = []
    if noun:
        found += re.findall(rf"\b{re.escape(noun)}s?\s*(?:id|number|no\.?)?\s*#?\s*([A-Za-z]*-?\d[\w-]*)", message, re.IGNORECASE)
    found += re.findall(r"(?<!\w)#(\d[\w-]*)", message)
    unique = list(dict.fromkeys(found))
    return unique[0] if len(unique) == 1 else None


def _one(found: list[str]) -> str | None:
    unique = list(dict.fromkeys(found))
    return unique[0] if len(unique) == 1 else None


def _string_for(name: str, prop: dict[str, Any], message: str) -> str | None:
    fmt = str(prop.get("format", "")).lower()
    if fmt == "email" or _field_says(name, {}, "email", "e mail"):
        return _one(_EMAIL.findall(message))
    if fmt in {"uri", "url", "iri"} or _field_says(name, {}, "url", "uri", "link"):
        return _one([u.rstrip(".,;:!?)]}") for u in _URL.findall(message)])
    if fmt == "date-time":
        return _one([m.replace(" ", "T", 1) for m in _DATETIME.findall(message)])
    if fmt == "date":
        return _one(_DATE.findall(_DATETIME.sub(" ", message)))
    if fmt == "time":
        return _one(_TIME.findall(_DATETIME.sub(" ", message)))
    if fmt == "phone" or _field_says(name, prop, "phone", "mobile number"):
        undated = _DATE.sub(" ", _DATETIME.sub(" ", message))  # 2026-12-01 is not a phone number
        return _one([re.sub(r"[ ().-]", "", p) for p in _PHONE.findall(undated)])
    if _field_says(name, {}, "path", "file", "filename"):
        return _one([p for p in _PATH.findall(message) if not _EMAIL.fullmatch(p) and "://" not in p])
    return _id_for(name, message)


def extract_arguments(tool: Tool, message: str) -> dict[str, Any]:
    """Fill the fields the message states plainly; leave every other field out."""
    schema = tool.input_schema or {}
    properties = schema.get("properties") or {}
    values: dict[str, Any] = {}
    if not isinstance(properties, dict):
        return values
    for name, prop in properties.items():
        if not isinstance(prop, dict):
            continue
        kind = prop.get("type")
        value: Any = None
        if prop.get("enum"):
            value = _enum_for(prop, message)
        elif kind in ("integer", "number"):
            value = _number_for(name, prop, message)
        elif kind == "string":
            value = _string_for(name, prop, message)
        elif kind == "array" and isinstance(prop.get("items"), dict) and prop["items"].get("type") == "string":
            items = prop["items"]
            if str(items.get("format", "")).lower() == "email" or _field_says(name, prop, "email", "e mail"):
                found = list(dict.fromkeys(_EMAIL.findall(message)))
                value = found or None
        if value is not None:
            values[name] = value
    return values


# ---------------------------------------------------------------------------------------------
# The configured command
# ---------------------------------------------------------------------------------------------


def command_env(config: ArgumentsConfig, secret_env: Iterable[str] = ()) -> dict[str, str]:
    """Our environment less the config-named secrets and anything that looks like a credential.

    The name heuristic stays here (not for the fallback): this command only turns a message and a
    schema into JSON and needs none of our keys, and since issue 15 it has been promised an
    environment without them; the fallback is an LLM client that must get its own provider key.
    """
    return child_env(secret_env, drop_credential_like=True)


def request_payload(tool: Tool, message: str) -> dict[str, Any]:
    return {"message": message, "tool": tool.id, "when_to_use": tool.when_to_use, "schema": tool.input_schema or {}}


async def run_arguments_command(
    tool: Tool, message: str, config: ArgumentsConfig, *, secret_env: Iterable[str] = ()
) -> ArgumentsResult:
    """Run `[arguments] command` for one routed tool. Never raises for a command problem.

    `secret_env` names environment variables the command must not see (Config.secret_env_names()).
    Cancelling the task that awaits this kills the command's group and re-raises CancelledError.
    """
    started = time.perf_counter()

    def failed(error: str) -> ArgumentsResult:
        return check(tool, {}, "command", started, error=error)

    # a lone surrogate in the message or a catalog text cannot be encoded: U+FFFD (tomlio.replace_surrogates)
    payload = replace_surrogates(json.dumps(request_payload(tool, message), ensure_ascii=False)).encode("utf-8")
    run = await run_command(
        list(config.command),
        payload,
        timeout=config.timeout,
        output_cap=config.output_cap,
        stderr_cap=STDERR_CAP,
        env=command_env(config, secret_env),
    )
    if error := run.error("arguments command"):
        return failed(error)
    if run.output_truncated:
        return failed(f"arguments command printed more than {config.output_cap} bytes; nothing was used")
    try:
        values = loads_json(run.output)  # a lone "\\ud800" in the command's JSON reads as U+FFFD
    except ValueError:
        return failed("arguments command did not print a JSON object")
    if not isinstance(values, dict):
        return failed(f"arguments command printed JSON {type(values).__name__}, not an object")
    return check(tool, values, "command", started)


async def abuild_arguments(
    tool: Tool, message: str, config: ArgumentsConfig, *, secret_env: Iterable[str] = ()
) -> ArgumentsResult:
    """The configured command when there is one, else the built-in extractor; always validated."""
    if config.command:
        return await run_arguments_command(tool, message, config, secret_env=secret_env)
    started = time.perf_counter()
    return check(tool, extract_arguments(tool, message), "extractor", started)


def build_arguments(
    tool: Tool, message: str, config: ArgumentsConfig | None = None, *, secret_env: Iterable[str] = ()
) -> ArgumentsResult:
    """Synchronous `abuild_arguments` (for scripts and the CLI; never call it inside a running loop)."""
    config = config or ArgumentsConfig()
    if not config.command:
        started = time.perf_counter()
        return check(tool, extract_arguments(tool, message), "extractor", started)
    return asyncio.run(run_arguments_command(tool, message, config, secret_env=secret_env))


def with_label(result: ArgumentsResult, expected: dict[str, Any] | None) -> bool | None:
    """Every expected key equal (None when there is no label to compare with)."""
    if not expected:
        return None
    return all(key in result.values and result.values[key] == value for key, value in expected.items())
