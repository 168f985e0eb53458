"""The arguments step after a route: extractor, validation, demotion, the command, labels, eval metrics."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from test_evaluate_support import direct_config, scripted_router

from tui_router.arguments import (
    ArgumentsResult,
    abuild_arguments,
    build_arguments,
    command_env,
    demote_action,
    extract_arguments,
    run_arguments_command,
    validate_arguments,
    with_label,
)
from tui_router.catalog import Tool, load_catalog, parse_catalog
from tui_router.config import ArgumentsConfig, config_from_dict
from tui_router.errors import ConfigError
from tui_router.evaluate import EVAL_GATE_METRICS, LabelledCase, check_gate, evaluate_router, parse_gate
from tui_router.session import ArgumentsRecord, Session, SessionInfo, Turn, dumps_session, load_session, save_session

COMMANDS = Path(__file__).parent / "commands"


def tool(properties: dict, required: list[str] | None = None, tool_id: str = "t") -> Tool:
    schema = {"type": "object", "properties": properties, "required": required or []}
    return Tool.model_validate({"id": tool_id, "when_to_use": "A test tool.", "schema": schema})


def maker(mode: str, *extra: str, timeout: float = 10.0, cap: int = 65536) -> ArgumentsConfig:
    return ArgumentsConfig(command=[sys.executable, str(COMMANDS / "args_maker.py"), mode, *extra], timeout=timeout, output_cap=cap)


EMAIL_TOOL = tool({"to": {"type": "string", "format": "email"}}, ["to"])

# ---------------------------------------------------------------------------------------------
# The extractor: each format, and never a value the message does not state
# ---------------------------------------------------------------------------------------------


def test_extractor_email_by_format_and_by_name() -> None:
    t = tool({"to": {"type": "string", "format": "email"}, "owner_email": {"type": "string"}})
    assert extract_arguments(t, "Mail ops@acme.io about it") == {"to": "ops@acme.io", "owner_email": "ops@acme.io"}
    recipients = tool({"attendees": {"type": "array", "items": {"type": "string"}, "description": "Email addresses"}})
    assert extract_arguments(recipients, "invite a@x.org, b@y.org and a@x.org") == {"attendees": ["a@x.org", "b@y.org"]}


def test_extractor_url_strips_trailing_punctuation() -> None:
    t = tool({"url": {"type": "string", "format": "uri"}})
    assert extract_arguments(t, "is https://example.com/a?b=1, down?") == {"url": "https://example.com/a?b=1"}
    # a bare host name is not a URL the message stated: no scheme is made up
    assert extract_arguments(t, "is status.acme.io down?") == {}


def test_extractor_phone_dates_and_times() -> None:
    t = tool(
        {
            "to": {"type": "string", "description": "Phone number in E.164"},
            "day": {"type": "string", "format": "date"},
            "at": {"type": "string", "format": "date-time"},
            "clock": {"type": "string", "format": "time"},
        }
    )
    got = extract_arguments(t, "text +1 (415) 555-0134 on 2026-12-01 and at 2026-12-02 09:30, alarm 07:15")
    assert got == {"to": "+14155550134", "day": "2026-12-01", "at": "2026-12-02T09:30", "clock": "07:15"}


def test_extractor_numbers_need_a_unit_or_currency_the_field_names() -> None:
    t = tool(
        {
            "duration_minutes": {"type": "integer"},
            "older_than_days": {"type": "integer"},
            "amount": {"type": "number"},
            "max_rows": {"type": "integer"},
        }
    )
    got = extract_arguments(t, "a 45 min slot, mail older than 30 days, refund $12.50 on order 7781")
    assert got == {"duration_minutes": 45, "older_than_days": 30, "amount": 12.5}
    # two different candidates for one field: ambiguous, left out
    assert "duration_minutes" not in extract_arguments(t, "either 30 min or 45 min")


def test_extractor_enums_ids_and_paths() -> None:
    t = tool(
        {
            "priority": {"type": "string", "enum": ["low", "normal", "high", "urgent"]},
            "ticket_id": {"type": "string"},
            "path": {"type": "string"},
        }
    )
    assert extract_arguments(t, "bump ticket 4821 to urgent, see logs/app.log") == {
        "priority": "urgent",
        "ticket_id": "4821",
        "path": "logs/app.log",
    }
    assert extract_arguments(t, "#77 is high, no wait, low") == {"ticket_id": "77"}  # two enum values named: none taken


def test_extractor_never_invents() -> None:
    t = tool(
        {
            "title": {"type": "string"},
            "to": {"type": "string", "format": "email"},
            "start": {"type": "string", "format": "date-time"},
            "notify": {"type": "boolean"},
            "repeat": {"type": "string", "enum": ["daily", "weekly"]},
            "count": {"type": "integer"},
        },
        ["title", "to", "start"],
    )
    message = "set up the kickoff with Priya on Thursday at 2pm, 3 people"
    assert extract_arguments(t, message) == {}
    result = build_arguments(t, message)
    assert not result.valid
    assert [e.path for e in result.errors] == ["/start", "/title", "/to"]
    assert {e.reason for e in result.errors} == {"required argument is missing"}
    assert result.source == "extractor"


def test_demo_catalog_extraction_is_plain() -> None:
    demo = load_catalog("demo")
    fetch = build_arguments(demo.get("fetch_url"), "grab https://example.com/pricing now")
    assert fetch.valid and fetch.values == {"url": "https://example.com/pricing"}
    sms = build_arguments(demo.get("send_sms"), "text +1 415 555 0134 that I'm late")
    assert sms.values == {"to": "+14155550134"}
    assert [e.line() for e in sms.errors] == ["/body: required argument is missing"]


# ---------------------------------------------------------------------------------------------
# Validation and the demotion rule
# ---------------------------------------------------------------------------------------------


def test_validation_errors_name_path_and_reason() -> None:
    schema = {
        "type": "object",
        "required": ["to", "n"],
        "properties": {
            "to": {"type": "string", "format": "email"},
            "n": {"type": "integer", "minimum": 1},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
        "additionalProperties": False,
    }
    errors = validate_arguments(schema, {"to": "not-an-address", "n": 0, "tags": ["a", 3], "x": 1})
    lines = [e.line() for e in errors]
    assert "/n: 0 is less than the minimum of 1" in lines
    assert "/tags/1: 3 is not of type 'string'" in lines
    assert "/to: 'not-an-address' is not a 'email'" in lines
    assert any(e.path == "(root)" and "'x' was unexpected" in e.reason for e in errors)
    assert validate_arguments(schema, {"to": "a@b.io", "n": 2}) == []


def test_broken_schema_is_one_error_not_a_crash() -> None:
    errors = validate_arguments({"type": "objekt"}, {})
    assert len(errors) == 1 and errors[0].path == "(schema)"
    assert "not valid JSON Schema" in errors[0].reason


def test_demotion_rule() -> None:
    good = ArgumentsResult(tool="t", values={"to": "a@b.io"}, valid=True)
    bad = ArgumentsResult(tool="t", valid=False)
    assert demote_action("execute", bad) == "confirm"
    assert demote_action("execute", good) == "execute"
    assert demote_action("execute", None) == "execute"
    for action in ("confirm", "escalate", "fallback"):
        assert demote_action(action, bad) == action


def test_labels_compare_every_expected_key() -> None:
    made = ArgumentsResult(tool="t", values={"a": 1, "b": "x", "c": [1]}, valid=True)
    assert with_label(made, {"a": 1, "c": [1]}) is True
    assert with_label(made, {"a": 1, "b": "y"}) is False
    assert with_label(made, {"d": None}) is False
    assert with_label(made, None) is None


# ---------------------------------------------------------------------------------------------
# The command: real subprocesses
# ---------------------------------------------------------------------------------------------


async def test_command_good_json_is_validated() -> None:
    result = await run_arguments_command(EMAIL_TOOL, "reply to ana@acme.io", maker("good"))
    assert result.source == "command"
    assert result.error == ""
    assert result.values == {"to": "ana@acme.io", "tool": "t", "schema_keys": ["properties", "required", "type"]}
    assert result.valid
    invalid = await abuild_arguments(EMAIL_TOOL, "reply to nobody", maker("good"))
    assert not invalid.valid
    assert [e.line() for e in invalid.errors] == ["/to: '' is not a 'email'"]


@pytest.mark.parametrize(
    ("mode", "error"),
    [
        ("text", "arguments command did not print a JSON object"),
        ("list", "arguments command printed JSON list, not an object"),
        ("fail", "arguments command exited with code 4: cannot build arguments: model offline"),
    ],
)
async def test_command_failures_say_why(mode: str, error: str) -> None:
    result = await run_arguments_command(EMAIL_TOOL, "to a@b.io", maker(mode))
    assert result.error == error
    assert not result.valid and result.values == {}
    assert result.summary() == error


async def test_command_timeout_kills_it(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    result = await run_arguments_command(EMAIL_TOOL, "x", maker("sleep", str(pidfile), timeout=0.5))
    assert result.error == "arguments command timed out after 0.5 s and was stopped"
    pid = int(pidfile.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


async def test_command_missing_and_oversized() -> None:
    missing = await run_arguments_command(EMAIL_TOOL, "x", ArgumentsConfig(command=["no-such-args-command-xyz"]))
    assert missing.error == "arguments command not found: 'no-such-args-command-xyz' (is it installed and on PATH?)"
    big = await run_arguments_command(EMAIL_TOOL, "x", maker("env", cap=8))
    assert big.error == "arguments command printed more than 8 bytes; nothing was used"


async def test_command_gets_no_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TYPESAFE_API_KEY", "sk-test-not-real")
    monkeypatch.setenv("MY_SERVICE_TOKEN", "t")
    monkeypatch.setenv("HARMLESS_SETTING", "1")
    assert "TYPESAFE_API_KEY" not in command_env(ArgumentsConfig())
    result = await run_arguments_command(EMAIL_TOOL, "x", maker("env"))
    names = result.values["names"]
    assert "HARMLESS_SETTING" in names
    assert "TYPESAFE_API_KEY" not in names and "MY_SERVICE_TOKEN" not in names


def test_config_section() -> None:
    config = config_from_dict({"arguments": {"command": ["my-args"], "timeout": 3}})
    assert config.arguments.command == ["my-args"] and config.arguments.timeout == 3
    with pytest.raises(ConfigError) as caught:
        config_from_dict({"arguments": {"comand": ["x"]}})
    assert "did you mean 'command'" in "\n".join(caught.value.lines())


# ---------------------------------------------------------------------------------------------
# Session records and labels
# ---------------------------------------------------------------------------------------------


def test_arguments_and_labels_round_trip(tmp_path: Path) -> None:
    made = build_arguments(EMAIL_TOOL, "ping bo@acme.io")
    record = made.to_record()
    record.demoted = False
    turn = Turn(
        message="ping bo@acme.io",
        label="t",
        arguments=record,
        expected_arguments={"to": "bo@acme.io", "n": 2, "flags": ["a"], "deep": {"k": True}},
    )
    invalid = Turn(message="ping nobody", label="t", arguments=ArgumentsRecord(tool="t", errors=["/to: required argument is missing"], demoted=True))
    session = Session(session=SessionInfo(id="args", catalog="small"), turns=[turn, invalid])
    path = save_session(session, tmp_path / "args.toml")
    text = path.read_text()
    assert "[turns.arguments]" in text and "expected_arguments" in text
    assert "valid = false" in text  # an invalid record says so even though false is the default
    back = load_session(path)
    assert back.turns[0].expected_arguments == {"to": "bo@acme.io", "n": 2, "flags": ["a"], "deep": {"k": True}}
    assert back.turns[0].arguments.values == {"to": "bo@acme.io"}
    assert back.turns[0].arguments.valid is True
    assert back.turns[0].arguments.source == "extractor"
    assert back.turns[1].arguments.valid is False and back.turns[1].arguments.demoted is True
    assert dumps_session(back) == text


def test_misspelt_arguments_key_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text('[[turns]]\nmessage = "x"\n[turns.arguments]\nvalus = {a = 1}\n', encoding="utf-8")
    from tui_router.errors import SessionError

    with pytest.raises(SessionError) as caught:
        load_session(path)
    assert "unknown key 'valus'" in "\n".join(caught.value.lines())


# ---------------------------------------------------------------------------------------------
# Eval: argument_validity and argument_match on hand-made cases
# ---------------------------------------------------------------------------------------------

ARG_TOOLS = [
    {"id": "notify", "when_to_use": "Notify someone by e-mail.", "risk": "read",
     "schema": {"type": "object", "required": ["to"], "properties": {"to": {"type": "string", "format": "email"},
                                                                      "level": {"type": "string", "enum": ["low", "high"]}}}},
    {"id": "lookup", "when_to_use": "Look a thing up.", "risk": "read"},  # no schema: not counted
    {"id": "human_review", "when_to_use": "A person decides.", "risk": "escalation",
     "schema": {"type": "object", "required": ["reason"], "properties": {"reason": {"type": "string"}}}},
]


def test_eval_argument_metrics_known_answers() -> None:
    catalog = parse_catalog({"name": "args", "tools": ARG_TOOLS}, "args.toml")
    rows = [
        # message, label, expected, script
        ("tell a@b.io it is high", "notify", {"to": "a@b.io", "level": "high"}, {"notify": 0.9}),  # valid, match
        ("tell c@d.io now", "notify", {"to": "c@d.io", "level": "low"}, {"notify": 0.9}),  # valid, no match
        ("tell the team", "notify", {"to": "team@x.io"}, {"notify": 0.9}),  # missing required: invalid, no match
        ("tell e@f.io", "notify", None, {"notify": 0.9}),  # valid, no label: not in match
        ("tell g@h.io", "notify", {"to": "g@h.io"}, {"lookup": 0.9}),  # routed wrong: not counted at all
        ("look it up", "lookup", {"q": "x"}, {"lookup": 0.9}),  # no schema: not counted
        ("a dispute", "human_review", None, {"human_review": 0.9}),  # escalation: not counted
    ]
    router = scripted_router({m: s for m, _, _, s in rows}, direct_config(), catalog)
    cases = [
        LabelledCase(source="k.toml", index=i, turn=Turn(message=m, label=label, expected_arguments=exp))
        for i, (m, label, exp, _) in enumerate(rows)
    ]
    report = evaluate_router(router, cases)
    assert (report.arguments.validity.hits, report.arguments.validity.total) == (3, 4)
    assert (report.arguments.match.hits, report.arguments.match.total) == (1, 3)
    assert list(report.per_tool_arguments) == ["notify"]
    metrics = report.gate_metrics()
    assert metrics["argument_validity"] == pytest.approx(0.75)
    assert metrics["argument_match"] == pytest.approx(1 / 3)
    out = report.to_json()
    assert out["per_tool_arguments"]["notify"]["counts"] == {"argument_validity": [3, 4], "argument_match": [1, 3]}
    assert out["turns"][2]["argument_errors"] == ["/to: required argument is missing"]
    assert out["turns"][4]["arguments_valid"] is None
    conditions = parse_gate("argument_validity>=0.75,argument_match>=0.5", EVAL_GATE_METRICS)
    passed = [r.passed for r in check_gate(conditions, metrics)]
    assert passed == [True, False]
    json.dumps(out)  # the --json contract stays serialisable


# ---------------------------------------------------------------------------------------------
# CLI: route --args (real subprocesses)
# ---------------------------------------------------------------------------------------------


def _route(tmp_path: Path, *args: str) -> dict:
    import subprocess

    env = {k: v for k, v in os.environ.items() if k != "TUI_ROUTER_CONFIG"} | {"XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    done = subprocess.run(
        [sys.executable, "-m", "tui_router", "route", "--backend", "local", "--json", *args],
        capture_output=True, text=True, cwd=tmp_path, env=env,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_route_args_valid_and_demoted(tmp_path: Path) -> None:
    valid = _route(tmp_path, "--args", "lint utils.js please")
    assert (valid["choice"], valid["band"], valid["action"]) == ("lint_code", "high", "execute")
    assert valid["arguments"]["values"] == {"path": "utils.js"} and valid["arguments"]["valid"] is True
    assert valid["demoted"] is False
    demoted = _route(tmp_path, "--args", "run the unit tests on main")
    assert (demoted["choice"], demoted["band"], demoted["action"], demoted["demoted"]) == ("run_tests", "high", "confirm", True)
    assert demoted["arguments"]["errors"] == [{"path": "/target", "reason": "required argument is missing"}]
    plain = _route(tmp_path, "run the unit tests on main")
    assert "arguments" not in plain and plain["action"] == "execute"
    none = _route(tmp_path, "--args", "write me a haiku about rain")
    assert none["choice"] == "defer_to_llm" and none["arguments"] is None


def test_route_args_with_a_command(tmp_path: Path) -> None:
    config = tmp_path / "tui-router.toml"
    command = [sys.executable, str(COMMANDS / "args_maker.py"), "fail"]
    config.write_text(f"[arguments]\ncommand = {json.dumps(command)}\n", encoding="utf-8")
    out = _route(tmp_path, "--args", "lint utils.js please")
    assert out["arguments"]["source"] == "command"
    assert out["arguments"]["error"] == "arguments command exited with code 4: cannot build arguments: model offline"
    assert out["action"] == "confirm" and out["demoted"] is True


def test_expected_arguments_are_checked_against_the_label() -> None:
    from tui_router.errors import SessionError
    from tui_router.evaluate import check_cases

    catalog = parse_catalog({"name": "args", "tools": ARG_TOOLS}, "args.toml")
    turns = [
        Turn(message="a", label="notify", expected_arguments={"to": "a@b.io", "levle": "high"}),
        Turn(message="b", label="human_review", expected_arguments={"reason": "x"}),
        Turn(message="c", label="lookup", expected_arguments={"anything": 1}),  # no schema: nothing to check
        Turn(message="d", label="notify", expected_arguments={"to": "d@e.io"}),
    ]
    cases = [LabelledCase(source="k.toml", index=i, turn=t) for i, t in enumerate(turns)]
    with pytest.raises(SessionError) as caught:
        check_cases([], cases, catalog)
    assert caught.value.lines() == [
        "k.toml: turns[0]: expected_arguments key 'levle' is not an argument of 'notify' (did you mean 'level'?)",
        "k.toml: turns[1]: expected_arguments need a tool label, not 'human_review'",
    ]
    check_cases([], cases[2:], catalog)  # fine
