"""Replay and eval against a changed catalog (replayj): a tool removed or renamed, the none option
renamed, a session recorded for another catalog name, hand-written turns, an 80-column terminal."""

from __future__ import annotations

import io
import json
import tomllib
from pathlib import Path

import pytest
import tomli_w
from cli_harness import tui_router
from test_evaluate_support import NONE, TOOLS, scripted_router

from tui_router.catalog import parse_catalog
from tui_router.config import config_from_dict
from tui_router.evaluate import replay_session, run_eval
from tui_router.report import print_sections, replay_sections
from tui_router.resources import bundled_catalogs
from tui_router.session import Session, SessionInfo, Turn, TurnDecision

BENCH = Path(__file__).resolve().parents[1] / "sessions" / "demo-bench.toml"


@pytest.fixture(scope="module")
def without_reminder(tmp_path_factory) -> tuple[Path, dict]:
    """The demo catalog with the create_reminder tool block deleted (the brief's reproduction)."""
    folder = tmp_path_factory.mktemp("c2")
    data = tomllib.loads(bundled_catalogs()["demo"].read_text(encoding="utf-8"))
    data["tools"] = [t for t in data["tools"] if t["id"] != "create_reminder"]
    path = folder / "c2.toml"
    path.write_text(tomli_w.dumps(data), encoding="utf-8")
    (folder / "none.toml").write_text("", encoding="utf-8")
    return path, {"TUI_ROUTER_CONFIG": str(folder / "none.toml")}


def test_replay_headless_runs_when_a_labelled_tool_was_removed(without_reminder):
    # was: exit 2, "label 'create_reminder' is not an option of catalog 'demo'"
    catalog, env = without_reminder
    done = tui_router("--catalog", str(catalog), "--backend", "local", "replay", "--headless", "--json", str(BENCH), env=env)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["turns"] == 30 and data["broken"] == 0
    assert data["not_in_catalog"] == {"turns": 1, "labels": {"create_reminder": 1}}
    gone = [r for r in data["rows"] if not r["label_in_catalog"]]
    assert [(r["index"], r["label"], r["now_right"], r["broken"]) for r in gone] == [(1, "create_reminder", None, False)]
    assert gone[0]["new_choice"] != "create_reminder"  # where the request goes now: what the developer replays for
    assert "1 turn labelled with an id not in this catalog: create_reminder (1), not scored" in data["summary"]
    assert done.stderr.splitlines() == [
        "tui-router: note: 1 labelled turn replayed but not scored: its label is not an option of catalog 'demo': "
        "create_reminder (1) (did you mean 'create_event'?) (--strict refuses instead)"
    ]
    strict = tui_router("--catalog", str(catalog), "replay", "--headless", "--strict", str(BENCH), env=env)
    assert strict.returncode == 2 and "label 'create_reminder' is not an option of catalog 'demo'" in strict.stderr


def test_eval_skips_turns_whose_label_left_the_catalog_and_strict_refuses(without_reminder):
    catalog, env = without_reminder
    done = tui_router("--catalog", str(catalog), "--backend", "bm25", "eval", "--json", str(BENCH), env=env)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["n"] == 29 and data["skipped"] == 1
    assert data["not_in_catalog"] == {
        "turns": 1,
        "labels": {"create_reminder": 1},
        "cases": [{"source": str(BENCH), "index": 1, "label": "create_reminder"}],
    }
    assert all(t["label"] != "create_reminder" for t in data["turns"])
    assert done.stderr.splitlines() == [
        "tui-router: warning: 1 labelled turn skipped: its label is not an option of catalog 'demo': "
        "create_reminder (1) (did you mean 'create_event'?) (--strict refuses instead)"
    ]
    text = tui_router("--catalog", str(catalog), "--backend", "bm25", "eval", str(BENCH), env=env)
    assert text.stdout.startswith("eval: 29 labelled turns (24 tool, 5 none; 1 more skipped, their label not in the catalog) from ")
    strict = tui_router("--catalog", str(catalog), "--backend", "bm25", "eval", "--strict", str(BENCH), env=env)
    assert strict.returncode == 2 and "label 'create_reminder' is not an option of catalog 'demo'" in strict.stderr
    assert strict.stdout == ""


def _recorded(choice: str, probabilities: dict[str, float], band: str = "high") -> TurnDecision:
    # the none option is offered in every question but never retrieved: not among the candidates
    return TurnDecision(choice=choice, probabilities=probabilities, band=band, candidates=[k for k in probabilities if k != NONE])


def test_replay_reads_a_renamed_none_option_as_the_current_one():
    catalog = parse_catalog({"name": "small", "none_option": "no_tool", "tools": TOOLS}, "small.toml")
    session = Session(
        session=SessionInfo(id="rec", catalog="small"),
        turns=[
            Turn(message="poem", label=NONE, decision=_recorded(NONE, {"read_file": 0.1, NONE: 0.9})),
            Turn(message="read", label="read_file", decision=_recorded("read_file", {"read_file": 0.9, NONE: 0.1})),
        ],
    )
    script = {"poem": {"no_tool": 0.9}, "read": {"read_file": 0.9}}
    report = replay_session(scripted_router(script, catalog=catalog), session)
    poem = report.rows[0]
    assert (poem.label, poem.recorded_choice, poem.new_choice) == ("no_tool", "no_tool", "no_tool")
    assert not poem.choice_flipped and poem.label_in_catalog and poem.now_right is True
    assert report.flips == 0 and report.not_in_catalog == {}


def test_eval_reads_a_renamed_none_option_and_notes_it(tmp_path):
    catalog = parse_catalog({"name": "small", "none_option": "no_tool", "tools": TOOLS}, "small.toml")
    path = tmp_path / "rec.toml"
    turns = [
        {"message": "write me a poem", "label": NONE, "decision": _recorded(NONE, {"read_file": 0.1, NONE: 0.9}).model_dump(exclude_none=True)},
        {"message": "read the notes file", "label": "read_file"},
    ]
    path.write_text(tomli_w.dumps({"session": {"id": "rec", "catalog": "small"}, "turns": turns}), encoding="utf-8")
    config = config_from_dict({"backend": "bm25", "retrieval": {"direct_max": 10}})
    report = run_eval([path], config, catalog=catalog, strict=False)
    assert report.n == 2 and report.none_cases == 1 and report.skipped == []
    assert report.catalog_lines == [f"{path}: its recorded decisions name '{NONE}' as the none option; read as this catalog's 'no_tool'"]
    with pytest.raises(Exception, match=f"label '{NONE}' is not an option of catalog 'small'"):
        run_eval([path], config, catalog=catalog)  # strict (the library's default, the benchmarks'): as before


def test_eval_with_no_label_left_in_the_catalog_is_one_sentence(tmp_path):
    catalog = parse_catalog({"name": "small", "tools": TOOLS}, "small.toml")
    path = tmp_path / "s.toml"
    path.write_text(tomli_w.dumps({"session": {"id": "s", "catalog": "other"}, "turns": [{"message": "x", "label": "gone_tool"}]}), encoding="utf-8")
    with pytest.raises(Exception) as info:
        run_eval([path], config_from_dict({"backend": "bm25"}), catalog=catalog, strict=False)
    assert str(info.value) == (
        f"no labelled turn in {path} has a label that is an option of catalog 'small' (gone_tool (1)); "
        "pass --catalog with the catalog they were labelled for"
    )


def test_hand_written_turns_say_there_was_nothing_to_diff_and_list_the_wrong_ones():
    # was: "2 turns replayed: 0 changed ..., 0 fixed, 0 broken" and no table, for a set routed wrong
    session = Session(session=SessionInfo(id="hand", catalog="small"), turns=[
        Turn(message="alpha", label="read_file"),
        Turn(message="bravo", label="send_sms"),
    ])
    report = replay_session(scripted_router({"alpha": {"read_file": 0.9}, "bravo": {"read_file": 0.9}}), session)
    assert report.summary_line() == (
        "2 turns replayed: 0 changed (0 flips, 0 band changes), 0 fixed, 0 broken against labels; "
        "2 with no recorded decision to diff (1 of 2 labelled right now)"
    )
    [section] = replay_sections(report)
    assert [(row[0], row[2], row[3], row[-1]) for row in section.rows] == [("2", "send_sms", "not recorded", "wrong")]
    assert report.gate_metrics()["wrong_not_recorded"] == 1.0


def test_the_replay_table_keeps_ids_whole_at_80_columns():
    session = Session(session=SessionInfo(id="rec", catalog="small"), turns=[
        Turn(
            message="please could you go and refund the payment for order 1234 that was charged twice yesterday",
            label="refund_payment",
            decision=_recorded("refund_payment", {"refund_payment": 0.9, NONE: 0.1}),
        ),
    ])
    report = replay_session(scripted_router({}), session)  # now: the none option
    out = io.StringIO()
    print_sections(replay_sections(report, title="Replay"), file=out, width=80)
    lines = out.getvalue().splitlines()
    assert max(len(line) for line in lines) <= 80
    text = out.getvalue()
    assert "refund_payment" in text and "defer_to_llm" in text  # not "refund_paym" / "ent"
    assert "TV" not in lines[2]  # the TV column gives its room to the ids under 100 columns


def test_replay_json_has_one_shape_for_one_file_or_several_and_names_the_setup(tmp_path):
    # was: "files" a list of paths for one file, a list of objects for several; the thresholds a
    # config file changed were nowhere in the output
    a = tmp_path / "a.toml"
    b = tmp_path / "b.toml"
    for path, message in ((a, "Text Jordan that the deploy finished"), (b, "remind me at 4 to call the dentist")):
        path.write_text(tomli_w.dumps({"session": {"id": path.stem, "catalog": "demo"}, "turns": [{"message": message}]}), encoding="utf-8")
    config = tmp_path / "cfg.toml"
    config.write_text('backend = "bm25"\n[policy]\nhigh = 0.9\nmedium = 0.3\n', encoding="utf-8")
    env = {"TUI_ROUTER_CONFIG": str(config)}
    one = json.loads(tui_router("replay", "--headless", "--json", str(a), env=env).stdout)
    two = json.loads(tui_router("replay", "--headless", "--json", str(a), str(b), env=env).stdout)
    assert set(one) == set(two) and set(one["files"][0]) == set(two["files"][1])
    assert [f["file"] for f in two["files"]] == [str(a), str(b)] and [r["file"] for r in two["rows"]] == [str(a), str(b)]
    assert one["thresholds"] == {"high": 0.9, "medium": 0.3} and one["catalog"] == "demo" and one["backend"] == "bm25"
    text = tui_router("replay", "--headless", "--all", str(a), env=env)
    assert "catalog 'demo'; high >= 0.9, medium >= 0.3" in " ".join(text.stdout.split())


def test_replay_and_eval_with_systemone_on_loopback_and_a_removed_tool(without_reminder, jev_mocks, tmp_path):
    # the journey with an HTTP backend: the bundled jevcompat mock on loopback
    catalog, _ = without_reminder
    config = tmp_path / "empty.toml"
    config.write_text("", encoding="utf-8")
    env = {"TUI_ROUTER_CONFIG": str(config), "XDG_CACHE_HOME": str(tmp_path / "cache"), "TYPESAFE_API_KEY": ""}
    # --base-url before the command, like --backend (it was "invalid choice: 'http://...'"), and after it
    common = ("--catalog", str(catalog), "--backend", "systemone", "--base-url", jev_mocks.url())
    url = ("--base-url", jev_mocks.url())
    replayed = tui_router(*common, "replay", "--headless", "--json", str(BENCH), env=env)
    assert replayed.returncode == 0, replayed.stderr
    data = json.loads(replayed.stdout)
    assert data["backend"] == "systemone" and data["turns"] == 30 and data["not_in_catalog"]["labels"] == {"create_reminder": 1}
    assert all(r["new_error"] == "" for r in data["rows"])
    scored = tui_router(*common[:4], "eval", *url, "--json", "--concurrency", "4", str(BENCH), env=env)
    assert scored.returncode == 0, scored.stderr
    result = json.loads(scored.stdout)
    assert result["n"] == 29 and result["skipped"] == 1 and result["unresolved"] == 0


def test_base_url_before_a_command_that_talks_to_no_server_is_refused(tmp_path):
    (tmp_path / "none.toml").write_text("", encoding="utf-8")
    done = tui_router("--base-url", "http://127.0.0.1:9/v1", "queue", str(tmp_path), env={"TUI_ROUTER_CONFIG": str(tmp_path / "none.toml")})
    assert done.returncode == 2 and "--base-url does nothing for `tui-router queue`" in done.stderr


def test_replay_gate_on_eval_metrics_leaves_out_labels_gone_from_the_catalog(without_reminder):
    # was: a gone label scored as a wrong "uncategorised" turn in `replay --gate top1>=...`
    catalog, env = without_reminder
    done = tui_router(
        "--catalog", str(catalog), "--backend", "bm25", "replay", "--headless", "--json", "--gate", "n>=0,labels_not_in_catalog<=1", str(BENCH),
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert "PASS n 29 >= 0" in done.stderr and "PASS labels_not_in_catalog 1 <= 1" in done.stderr


def test_a_hand_written_none_label_points_at_a_renamed_none_option(tmp_path):
    catalog = parse_catalog({"name": "small", "none_option": "no_tool", "tools": TOOLS}, "small.toml")
    path = tmp_path / "hand.toml"
    turns = [{"message": "write me a poem", "label": NONE}, {"message": "read the notes file", "label": "read_file"}]
    path.write_text(tomli_w.dumps({"session": {"id": "hand", "catalog": "small"}, "turns": turns}), encoding="utf-8")
    report = run_eval([path], config_from_dict({"backend": "bm25", "retrieval": {"direct_max": 10}}), catalog=catalog, strict=False)
    assert report.n == 1 and [c.label for c in report.skipped] == [NONE]
    assert report.catalog_lines == [
        "1 labelled turn skipped: its label is not an option of catalog 'small': "
        f"{NONE} (1) (did you mean the none option 'no_tool'?) (--strict refuses instead)"
    ]


def test_the_console_replay_marks_match_the_headless_diff():
    from tui_router.app.screens.replay import change_text

    session = Session(session=SessionInfo(id="hand", catalog="small"), turns=[
        Turn(message="alpha", label="read_file"),
        Turn(message="bravo", label="send_sms"),
        Turn(message="charlie", label="gone_tool", decision=_recorded("read_file", {"read_file": 0.9, NONE: 0.1})),
    ])
    catalog_router = scripted_router({"alpha": {"read_file": 0.9}, "bravo": {"read_file": 0.9}, "charlie": {"send_sms": 0.9}})
    report = replay_session(catalog_router, session)
    [section] = replay_sections(report)
    headless = {row[0]: row[-1] for row in section.rows}
    assert headless == {"2": "wrong", "3": "unscored flip"}
    assert [change_text(r) for r in report.rows] == ["", "wrong", "unscored flip"]


def test_eval_names_the_thresholds_a_config_file_set(tmp_path):
    # was: nothing in eval's output said which thresholds decided the bands
    config = tmp_path / "cfg.toml"
    config.write_text('backend = "bm25"\n[policy]\nhigh = 0.9\nmedium = 0.3\n', encoding="utf-8")
    env = {"TUI_ROUTER_CONFIG": str(config)}
    data = json.loads(tui_router("eval", "--json", str(BENCH), env=env).stdout)
    assert data["thresholds"] == {"high": 0.9, "medium": 0.3}
    text = tui_router("eval", str(BENCH), env=env).stdout.splitlines()[0]
    assert "backend bm25 (bm25-baseline-1); high >= 0.9, medium >= 0.3; learning: " in text


def test_a_schema_property_renamed_leaves_expected_arguments_unscored_instead_of_refusing(tmp_path):
    # was: eval and replay refused the whole file ("expected_arguments key 'duration_minutes' is not an
    # argument of 'create_event'") once a tool's schema renamed a property
    data = tomllib.loads(bundled_catalogs()["demo"].read_text(encoding="utf-8"))
    for tool in data["tools"]:
        if tool["id"] == "create_event":
            props = tool["schema"]["properties"]
            props["minutes"] = props.pop("duration_minutes")
            tool["schema"]["required"] = [("minutes" if r == "duration_minutes" else r) for r in tool["schema"].get("required", [])]
    catalog = tmp_path / "c3.toml"
    catalog.write_text(tomli_w.dumps(data), encoding="utf-8")
    (tmp_path / "none.toml").write_text("", encoding="utf-8")
    env = {"TUI_ROUTER_CONFIG": str(tmp_path / "none.toml")}
    line = (
        f"tui-router: warning: {BENCH}: turns[0]: expected_arguments key 'duration_minutes' is not an argument of 'create_event' "
        "(did you mean 'minutes'?): argument match not scored for that turn (--strict refuses instead)"
    )
    scored = tui_router("--catalog", str(catalog), "--backend", "bm25", "eval", "--json", str(BENCH), env=env)
    assert scored.returncode == 0, scored.stderr
    assert json.loads(scored.stdout)["n"] == 30 and line in scored.stderr.splitlines()
    replayed = tui_router("--catalog", str(catalog), "--backend", "bm25", "replay", "--headless", "--json", str(BENCH), env=env)
    assert replayed.returncode == 0, replayed.stderr
    assert json.loads(replayed.stdout)["turns"] == 30
    strict = tui_router("--catalog", str(catalog), "--backend", "bm25", "eval", "--strict", str(BENCH), env=env)
    assert strict.returncode == 2 and "expected_arguments key 'duration_minutes' is not an argument of 'create_event'" in strict.stderr


def test_what_if_keeps_a_recorded_none_choice_a_fallback_after_the_none_option_was_renamed():
    # was: the recorded "defer_to_llm" read as a tool on a catalog whose none option is "no_tool",
    # so a high one showed as an execute
    from tui_router.config import PolicyConfig
    from tui_router.review import what_if

    catalog = parse_catalog({"name": "small", "none_option": "no_tool", "tools": TOOLS}, "small.toml")
    decision = _recorded(NONE, {"read_file": 0.05, NONE: 0.95})
    decision.confidence = decision.reported_confidence = 0.95
    session = Session(session=SessionInfo(id="rec", catalog="small"), turns=[Turn(message="poem", decision=decision)])
    report = what_if([session], PolicyConfig(confidence="reported"), PolicyConfig(confidence="reported", high=0.99), catalog)
    [row] = report.rows
    assert (row.before_band, row.before_action, row.after_band, row.after_action) == ("high", "fallback", "medium", "fallback")
