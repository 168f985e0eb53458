"""Catalogs and labelled sets written independently of this project, as `eval` meets them: a file
an author could reasonably write is measured (what it holds of a slip is left out with one stderr
line, --strict refuses), never refused whole or crashed on. Real subprocesses of the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_harness import tui_router

CATALOG = """\
name = "mine"
description = "an independently written catalog"
none_option = "no_tool"

[[tools]]
id = "send.sms"
when_to_use = "Send a short text message to a phone number."
risk = "outbound"
keywords = ["text", "sms"]

[[tools]]
id = "weather:get"
when_to_use = "Get the weather forecast for a city."
keywords = ["weather", "forecast"]

[[tools]]
id = "human_review"
when_to_use = "A person should look at this request."
risk = "escalation"
"""

GOOD = """\
[[turns]]
message = "What is the weather in Paris?"
label = "weather:get"

[[turns]]
message = "Tell me a joke"
label = "no_tool"
"""


@pytest.fixture()
def env(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "empty.toml").write_text("", encoding="utf-8")
    return {"TUI_ROUTER_CONFIG": str(tmp_path / "empty.toml"), "XDG_CACHE_HOME": str(tmp_path / "cache")}


@pytest.fixture()
def catalog(tmp_path: Path) -> Path:
    path = tmp_path / "mine.toml"
    path.write_text(CATALOG, encoding="utf-8")
    return path


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _eval(env, *args: str) -> tuple[int, dict | None, str]:
    done = tui_router("eval", *args, "--backend", "local", "--json", env=env)
    return done.returncode, (json.loads(done.stdout) if done.returncode == 0 else None), done.stderr


def test_local_examples_may_name_one_session_as_a_string(tmp_path: Path, env, catalog: Path) -> None:
    # `[local] examples = "teach.toml"` (one labelled session, not a list of globs) was refused:
    # "'local.examples' must be a valid list", exit 2, the eval lost. It is the one-pattern list.
    _write(tmp_path / "ex" / "teach.toml", '[[turns]]\nmessage = "ping my mum about dinner"\nlabel = "send.sms"\n')
    cases = _write(tmp_path / "cases.toml", '[[turns]]\nmessage = "ping my dad about lunch"\nlabel = "send.sms"\n' + GOOD)
    as_string = _write(tmp_path / "cfg" / "string.toml", '[local]\nexamples = "../ex/teach.toml"\n')
    as_list = _write(tmp_path / "cfg" / "list.toml", '[local]\nexamples = ["../ex/teach.toml"]\n')
    absolute = _write(tmp_path / "abs.toml", f"[local]\nexamples = {json.dumps(str(tmp_path / 'ex' / 'teach.toml'))}\n")
    rc, plain, _ = _eval(env, str(cases), "--catalog", str(catalog), "--no-learn")
    assert rc == 0
    runs = {}
    for config in (as_string, as_list, absolute):
        rc, data, err = _eval(env, str(cases), "--catalog", str(catalog), "--no-learn", "--config", str(config))
        assert rc == 0, err
        runs[config.name] = [(t["choice"], t["confidence"]) for t in data["turns"]]
    assert runs["string.toml"] == runs["list.toml"] == runs["abs.toml"]
    assert runs["string.toml"][0][0] == "send.sms"
    # the exemplar was read: "ping" is no word of the catalog, the taught turn is what speaks for send.sms
    assert runs["string.toml"][0] != (plain["turns"][0]["choice"], plain["turns"][0]["confidence"])


def test_a_tag_or_acceptable_id_given_alone_is_a_list_of_one(tmp_path: Path, env, catalog: Path) -> None:
    # `tags = "notify"`, `acceptable = "no_tool"` (one value, not a list) and `tags = [2024]` (a
    # number) refused the whole file: "turns[0]: field 'tags' must be a valid list", exit 2.
    cases = _write(
        tmp_path / "cases.toml",
        '[[turns]]\nmessage = "Text Jordan that the deploy finished"\nlabel = "send.sms"\ntags = "notify"\n'
        'acceptable = "human_review"\n'
        '[[turns]]\nmessage = "Get the weather forecast for Rome"\nlabel = "weather:get"\ntags = [2024, "city", 1.5, true]\n' + GOOD,
    )
    rc, data, err = _eval(env, str(cases), "--catalog", str(catalog))
    assert rc == 0, err
    assert data["n"] == 4
    assert data["turns"][0]["tags"] == ["notify"] and data["turns"][0]["acceptable"] == ["human_review"]
    assert data["turns"][1]["tags"] == ["2024", "city", "1.5", "true"]
    assert sorted(data["per_tag"]) == ["1.5", "2024", "city", "notify", "true"]
    assert data["per_tag"]["notify"]["n"] == 1
    assert err == ""


def test_a_label_spelt_with_other_case_or_spaces_is_scored_as_the_option(tmp_path: Path, env, catalog: Path) -> None:
    # `label = "Send.SMS"` / `" weather:get "` (ids are lower case; a hand-written slip) were skipped
    # as labels gone from the catalog, with no did-you-mean for the case: those turns unmeasured.
    cases = _write(
        tmp_path / "cases.toml",
        '[[turns]]\nmessage = "Text Jordan that the deploy finished"\nlabel = "Send.SMS"\n'
        '[[turns]]\nmessage = "Get the weather forecast for Rome"\nlabel = " weather:get "\nacceptable = ["NO_TOOL"]\n' + GOOD,
    )
    rc, data, err = _eval(env, str(cases), "--catalog", str(catalog))
    assert rc == 0, err
    assert (data["n"], data["tool_cases"], data["none_cases"], data["skipped"]) == (4, 3, 1, 0)
    assert [t["label"] for t in data["turns"]] == ["send.sms", "weather:get", "weather:get", "no_tool"]
    assert data["turns"][1]["acceptable"] == ["no_tool"]
    assert data["counts"]["top1"] == [3, 3]
    assert err == (
        f"tui-router: warning: {cases}: labels spelt with other case or spaces read as the catalog's ids: "
        "'Send.SMS' as 'send.sms', ' weather:get ' as 'weather:get', 'NO_TOOL' as 'no_tool' (--strict refuses instead)\n"
    )
    strict = tui_router("eval", str(cases), "--catalog", str(catalog), "--backend", "local", "--strict", env=env)
    assert strict.returncode == 2 and strict.stdout == ""
    assert f"{cases}: turns[0]: label 'Send.SMS' is not an option of catalog 'mine' (did you mean 'send.sms'?)" in strict.stderr
    # replay scores them too (a hand-written file: nothing recorded, the wrong ones listed)
    replay = tui_router("replay", str(cases), "--catalog", str(catalog), "--backend", "local", "--headless", "--json", env=env)
    assert replay.returncode == 0, replay.stderr
    rows = json.loads(replay.stdout)["rows"]
    assert [(r["label"], r["label_in_catalog"], r["now_right"]) for r in rows] == [
        ("send.sms", True, True), ("weather:get", True, True), ("weather:get", True, True), ("no_tool", True, True)
    ]


def test_a_none_label_written_as_none_points_at_the_none_option(tmp_path: Path, env, catalog: Path) -> None:
    cases = _write(tmp_path / "cases.toml", '[[turns]]\nmessage = "Write me a poem"\nlabel = "none"\n' + GOOD)
    rc, data, err = _eval(env, str(cases), "--catalog", str(catalog))
    assert rc == 0 and data["skipped"] == 1 and data["n"] == 2
    assert "none (1) (did you mean the none option 'no_tool'?)" in err


def test_one_turn_that_does_not_read_is_left_out_not_the_whole_file(tmp_path: Path, env, catalog: Path) -> None:
    # A label that is a number, a turn without a message, a misspelt key (`lable`) or a [session]
    # field of the wrong type refused the whole file (exit 2): one slip, and nothing measured. eval
    # now leaves out only those turns, one stderr line naming them, JSON "invalid"; --strict refuses.
    cases = _write(
        tmp_path / "cases.toml",
        '[session]\nversion = "1.0.0"\n'
        '[[turns]]\nmessage = "Text Jordan that the deploy finished"\nlabel = 3\n'
        '[[turns]]\nlabel = "send.sms"\n'
        '[[turns]]\nmessage = "Text Sam hello"\nlable = "send.sms"\n' + GOOD,
    )
    done = tui_router("eval", str(cases), "--catalog", str(catalog), "--backend", "local", "--json", env=env)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert (data["n"], data["tool_cases"], data["none_cases"]) == (2, 1, 1)
    assert [(t["index"], t["label"]) for t in data["turns"]] == [(3, "weather:get"), (4, "no_tool")]
    assert data["invalid"] == {
        "turns": 3,
        "cases": [
            {"source": str(cases), "index": 0, "problems": [f"{cases}: turns[0]: field 'label' must be a valid string"]},
            {"source": str(cases), "index": 1, "problems": [f"{cases}: turns[1]: field 'message' is required"]},
            {"source": str(cases), "index": 2, "problems": [f"{cases}: turns[2]: unknown key 'lable' (did you mean 'label'?)"]},
        ],
        "fields_ignored": [],
    }
    assert done.stderr.splitlines() == [
        f"tui-router: warning: {cases}: [session] field 'version' must be a valid integer, unable to parse string as an integer; "
        "read without it (--strict refuses instead)",
        f"tui-router: warning: 3 turns left out, not a valid session turn: {cases}: turns[0]: field 'label' must be a valid string; "
        f"{cases}: turns[1]: field 'message' is required; {cases}: turns[2]: unknown key 'lable' (did you mean 'label'?) (--strict refuses instead)",
    ]
    text = tui_router("eval", str(cases), "--catalog", str(catalog), "--backend", "local", env=env)
    assert text.returncode == 0 and "2 labelled turns (1 tool, 1 none; 3 turns left out, not valid)" in text.stdout.splitlines()[0]
    for command in (("eval", "--strict"), ("calibrate",), ("replay", "--headless")):
        refused = tui_router(*command, str(cases), "--catalog", str(catalog), "--backend", "local", env=env)
        assert refused.returncode == 2 and refused.stdout == "", command
        assert f"{cases}: turns[0]: field 'label' must be a valid string" in refused.stderr and "Traceback" not in refused.stderr
    only_bad = _write(tmp_path / "bad.toml", '[[turns]]\nmessage = "Text Jordan"\nlabel = 3\n')
    refused = tui_router("eval", str(only_bad), "--catalog", str(catalog), "--backend", "local", env=env)
    assert refused.returncode == 2 and refused.stdout == ""
    assert refused.stderr.splitlines()[-1] == (
        f"tui-router: no labelled turn in {only_bad} reads: 1 turn not valid, the first {only_bad}: turns[0]: field 'label' must be a valid string"
    )


def test_a_turn_whose_notes_alone_do_not_read_is_measured_without_them(tmp_path: Path, env, catalog: Path) -> None:
    # label_source = "manual", reviewer = 5, not_this = "x", expected_arguments = "to=bob": the
    # message and label are sound, yet the whole file was refused; the turn is measured without them.
    cases = _write(
        tmp_path / "cases.toml",
        '[[turns]]\nmessage = "Text Jordan that the deploy finished"\nlabel = "send.sms"\nlabel_source = "manual"\nreviewer = 5\n'
        '[[turns]]\nmessage = "Text Sam hello"\nlabel = "send.sms"\nexpected_arguments = "to=sam"\n' + GOOD,
    )
    rc, data, err = _eval(env, str(cases), "--catalog", str(catalog))
    assert rc == 0, err
    assert data["n"] == 4 and data["counts"]["top1"] == [3, 3] and data["invalid"]["turns"] == 0
    assert data["invalid"]["fields_ignored"] == [
        {
            "source": str(cases),
            "index": 0,
            "problems": [
                f"{cases}: turns[0]: field 'label_source' must be 'confirm', 'review' or 'hand'",
                f"{cases}: turns[0]: field 'reviewer' must be a valid string",
            ],
        },
        {"source": str(cases), "index": 1, "problems": [f"{cases}: turns[1]: field 'expected_arguments' must be a valid dictionary"]},
    ]
    assert err == (
        f"tui-router: warning: 2 turns measured without a field that does not validate: {cases}: turns[0]: field 'label_source' "
        f"must be 'confirm', 'review' or 'hand'; {cases}: turns[1]: field 'expected_arguments' must be a valid dictionary "
        "(--strict refuses instead)\n"
    )
    strict = tui_router("eval", str(cases), "--catalog", str(catalog), "--backend", "local", "--strict", env=env)
    assert strict.returncode == 2 and "field 'label_source' must be" in strict.stderr


def test_local_examples_that_name_no_file_or_a_broken_one_are_said(tmp_path: Path, env, catalog: Path) -> None:
    # A relative [local] examples path resolves against the config's folder: written as from the
    # working folder it matched nothing and the eval silently ran without the exemplars. And a
    # broken examples file refused the eval naming only the file, not why it was read.
    cases = _write(tmp_path / "cases.toml", GOOD)
    _write(tmp_path / "teach.toml", '[[turns]]\nmessage = "ping my mum"\nlabel = 3\n')
    missing = _write(tmp_path / "cfg" / "missing.toml", '[local]\nexamples = ["teach-me.toml", "../teach.toml"]\n')
    done = tui_router("eval", str(cases), "--catalog", str(catalog), "--backend", "local", "--config", str(missing), env=env)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == [
        f"tui-router: warning: [local] examples 'teach-me.toml' names no file (looked for {tmp_path / 'cfg' / 'teach-me.toml'}; "
        "relative paths start at the config file's folder)",
        f"tui-router: {tmp_path / 'teach.toml'}: turns[0]: field 'label' must be a valid string",
        f"tui-router: {tmp_path / 'teach.toml'} is a file [local] examples names ('../teach.toml'); fix it or leave it out of examples",
    ]


def test_a_risk_in_another_case_or_with_spaces_is_that_risk(tmp_path: Path, env) -> None:
    # `risk = "Payment"` / `"Escalation "` refused the whole catalog (unknown risk, exit 2), so no
    # eval, route or console ran on it; a misspelt risk is still an error with a did-you-mean.
    catalog = _write(
        tmp_path / "cased.toml",
        CATALOG.replace('risk = "outbound"', 'risk = "Payment"').replace('risk = "escalation"', 'risk = "Escalation "'),
    )
    route = tui_router("route", "--catalog", str(catalog), "--backend", "local", "--json", "text Jordan by sms that it is done", env=env)
    assert route.returncode == 0, route.stderr
    decision = json.loads(route.stdout)
    assert (decision["choice"], decision["risk"]) == ("send.sms", "payment")
    assert decision["action"] != "execute"  # payment never auto-executes
    cases = _write(tmp_path / "cases.toml", '[[turns]]\nmessage = "A person should look at this request"\nlabel = "human_review"\n' + GOOD)
    rc, data, err = _eval(env, str(cases), "--catalog", str(catalog))
    assert rc == 0, err
    assert (data["turns"][0]["choice"], data["turns"][0]["action"]) == ("human_review", "escalate")
    assert data["counts"]["missed_review_rate"] == [0, 1]
    typo = _write(tmp_path / "typo.toml", CATALOG.replace('risk = "outbound"', 'risk = "Paymnt"'))
    refused = tui_router("catalog", "validate", str(typo), env=env)
    assert refused.returncode == 2 and "unknown risk 'Paymnt' (did you mean 'payment'?)" in refused.stderr


def test_turns_under_a_misspelt_top_level_key_are_not_lost_silently(tmp_path: Path, env, catalog: Path) -> None:
    # `[[turn]]` (or `[[Turns]]`) for `[[turns]]`: the turns under it were read as nothing, and eval
    # measured the file without them (here 2 of 3 labelled turns) with no word said.
    for key in ("turn", "Turns"):
        cases = _write(tmp_path / f"{key}.toml", GOOD + f'[[{key}]]\nmessage = "Text Jordan that the deploy finished"\nlabel = "send.sms"\n')
        for command in (("eval",), ("eval", "--strict"), ("replay", "--headless"), ("calibrate",)):
            done = tui_router(*command, str(cases), "--catalog", str(catalog), "--backend", "local", env=env)
            assert done.returncode == 2 and done.stdout == "", (key, command)
            assert done.stderr == (
                f"tui-router: {cases}: unknown top-level key '{key}' (did you mean 'turns'?); nothing under it would be read\n"
            ), (key, command)
    # a key a person adds on purpose is kept, as before
    notes = _write(tmp_path / "notes.toml", 'author = "me"\n[meta]\nsource = "hand"\n' + GOOD)
    rc, data, err = _eval(env, str(notes), "--catalog", str(catalog))
    assert rc == 0 and data["n"] == 2, err


def test_no_labelled_turn_names_the_keys_the_turns_carry_instead(tmp_path: Path, env, catalog: Path) -> None:
    cases = _write(tmp_path / "cases.toml", '[[turns]]\nmessage = "Text Jordan"\nexpected_tool = "send.sms"\nnote = "x"\n')
    done = tui_router("eval", str(cases), "--catalog", str(catalog), "--backend", "local", env=env)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (
        f"tui-router: no labelled turns in {cases} (a labelled turn has label = \"<option id>\"); "
        "the turns carry 'expected_tool', 'note', which eval does not read as a label\n"
    )


def test_an_empty_label_is_said_not_dropped_unseen(tmp_path: Path, env, catalog: Path) -> None:
    # `label = ""` read as no label: the turn left the count (n 2 for 3 turns written as labelled)
    # with nothing said, unlike every other slip eval leaves out
    cases = _write(tmp_path / "cases.toml", GOOD + '\n[[turns]]\nmessage = "Text Jordan I am late"\nlabel = ""\n')
    rc, data, err = _eval(env, str(cases), "--catalog", str(catalog))
    assert rc == 0 and data["n"] == 2
    assert err.splitlines() == ['tui-router: warning: 1 turn with label = "" read as unlabelled, not scored: cases.toml turns[2]']


def test_a_session_table_with_a_slip_keeps_the_rest_of_it(tmp_path: Path, env, catalog: Path) -> None:
    # `catalogue = "..."` (a near miss) beside a sound `catalog` and `id`: the whole [session] was
    # read as the defaults, so the catalog it names was forgotten (no note that it is another one)
    cases = _write(tmp_path / "cases.toml", '[session]\nid = "mine-set"\ncatalog = "demo"\ncatalogue = "demo"\n' + GOOD)
    rc, data, err = _eval(env, str(cases), "--catalog", str(catalog))
    assert rc == 0 and data["n"] == 2
    assert err.splitlines() == [
        f"tui-router: warning: {cases}: [session]: unknown key 'catalogue' (did you mean 'catalog'?); read without it (--strict refuses instead)",
        f"tui-router: warning: {cases}: recorded for catalog 'demo'; routed with catalog 'mine'",
    ]
