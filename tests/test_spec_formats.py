"""Statements of the shared FORMATS.md / DESIGN.md that had no test of their own, checked on real files
(and the CLI as a subprocess where the statement is about the CLI)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import tomli_w
from cli_harness import tui_router
from servers.scripted import ScriptedServer

from tui_router.catalog import NONE_DESCRIPTION, Risk, load_catalog
from tui_router.config import config_from_dict
from tui_router.errors import CatalogError, SessionError
from tui_router.route import Router
from tui_router.session import FallbackRecord, OutcomeStep, Turn, TurnDecision, load_session, save_session


def hermetic(tmp_path: Path) -> dict[str, str]:
    config = tmp_path / "config.toml"
    config.write_text('backend = "local"\n')
    return {"TUI_ROUTER_CONFIG": str(config), "XDG_DATA_HOME": str(tmp_path / "data"), "XDG_CACHE_HOME": str(tmp_path / "cache")}


def write_catalog(path: Path, tools: list[dict], **head: object) -> Path:
    path.write_text(tomli_w.dumps({"name": "spec", **head, "tools": tools}))
    return path


# ---------------------------------------------------------------- catalog


def test_an_id_of_64_characters_is_valid_and_65_is_refused_by_catalog_validate(tmp_path: Path) -> None:
    ok = write_catalog(tmp_path / "ok.toml", [{"id": "a" + "b" * 63, "when_to_use": "Do a thing."}])
    result = tui_router("catalog", "validate", str(ok), env=hermetic(tmp_path))
    assert result.returncode == 0 and ": ok - catalog 'spec', 1 tool " in result.stdout
    long_id = "a" + "b" * 64
    bad = write_catalog(tmp_path / "bad.toml", [{"id": "send_sms", "when_to_use": "Text."}, {"id": long_id, "when_to_use": "Do a thing."}])
    result = tui_router("catalog", "validate", str(bad), env=hermetic(tmp_path))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    # file, index and id, field: one line for the one problem
    assert f"bad.toml:8: tools[1] (id '{long_id}'): field 'id'" in result.stderr
    assert "at most 64 characters" in result.stderr


@pytest.mark.parametrize("tool_id", ["send_sms", "a", "crm.contacts:search-v2", "z9"])
def test_ids_of_the_pattern_are_accepted(tmp_path: Path, tool_id: str) -> None:
    catalog = load_catalog(write_catalog(tmp_path / "c.toml", [{"id": tool_id, "when_to_use": "Do."}]))
    assert catalog.get(tool_id) is not None


@pytest.mark.parametrize("tool_id", ["Send_sms", "9lives", "_x", "send sms", "envoyer_été", "a\tb", ""])
def test_ids_outside_the_pattern_are_refused(tmp_path: Path, tool_id: str) -> None:
    with pytest.raises(CatalogError) as caught:
        load_catalog(write_catalog(tmp_path / "c.toml", [{"id": tool_id, "when_to_use": "Do."}]))
    assert any("tools[0]" in line and "field 'id'" in line for line in caught.value.problems)


def test_a_tool_needs_only_id_and_when_to_use_and_risk_defaults_to_read(tmp_path: Path) -> None:
    catalog = load_catalog(write_catalog(tmp_path / "c.toml", [{"id": "look_up", "when_to_use": "Look a thing up."}]))
    (tool,) = catalog.tools
    assert tool.risk is Risk.read
    assert (tool.category, tool.keywords, tool.examples, tool.input_schema) == (None, (), (), None)
    assert catalog.none_option == "defer_to_llm" and catalog.option_ids == ["look_up", "defer_to_llm"]


def test_a_custom_none_option_is_offered_in_the_question_with_the_fixed_description(tmp_path: Path) -> None:
    path = write_catalog(
        tmp_path / "c.toml",
        [
            {"id": "send_sms", "when_to_use": "Send a short text message to a phone number.", "risk": "outbound"},
            {"id": "human_review", "when_to_use": "Hand the request to a person.", "risk": "escalation"},
        ],
        none_option="nothing_fits",
    )
    catalog = load_catalog(path)
    assert "nothing_fits" not in [t.id for t in catalog.tools]  # not listed under [[tools]]
    with ScriptedServer() as server:
        router = Router(catalog, config_from_dict({"backend": "systemone", "systemone": {"base_url": server.base_url, "probe": False}}))
        try:
            router.route("Text Jordan that the deploy finished.")
        finally:
            router.backend.close()
        (request,) = server.posts
    criteria = request.json()["questions"]["tool"]["criteria"]
    assert criteria["nothing_fits"] == NONE_DESCRIPTION == "None of the allowlisted tools fits; continue with the main application LLM"
    assert criteria["send_sms"] == "Send a short text message to a phone number."
    assert "defer_to_llm" not in criteria


def test_a_catalog_with_a_byte_order_mark_and_crlf_line_ends_validates(tmp_path: Path) -> None:
    text = 'name = "crlf"\n\n[[tools]]\nid = "send_sms"\nwhen_to_use = "Send a text."\nkeywords = ["text", "sms"]\n'
    path = tmp_path / "crlf.toml"
    path.write_bytes(b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode())
    result = tui_router("catalog", "validate", str(path), env=hermetic(tmp_path))
    assert result.returncode == 0, result.stderr
    assert load_catalog(path).get("send_sms").keywords == ("text", "sms")


# ---------------------------------------------------------------- session


def test_toml_date_time_literals_in_a_hand_written_session_are_read_as_text(tmp_path: Path) -> None:
    """Found: `at = 2026-11-30T10:04:20Z` (TOML's own date-time, unquoted) refused the whole file with
    "must be a valid string"; a person writing cases by hand uses it, and the spec shows the same value."""
    path = tmp_path / "cases.toml"
    path.write_text(
        '[session]\nid = "cases"\ncatalog = "demo"\ncreated = 2026-11-30T10:04:12Z\n\n'
        '[[turns]]\nmessage = "Text Jordan that the deploy finished."\nlabel = "send_sms"\nat = 2026-11-30T10:04:20Z\n\n'
        '[[turns]]\nmessage = "hello"\nlabel = "defer_to_llm"\nat = 2026-11-30T12:04:20+02:00\n'
        '[turns.decision]\noutcome = "fallback_done"\n[[turns.decision.history]]\noutcome = "declined"\nat = 2026-11-30T10:05:00Z\n'
        '[turns.fallback]\ncommand = ["llm"]\nat = 2026-11-30\n'
    )
    session = load_session(path)
    assert session.session.created == "2026-11-30T10:04:12Z"
    assert [t.at for t in session.turns] == ["2026-11-30T10:04:20Z", "2026-11-30T12:04:20+02:00"]
    assert session.turns[1].decision.history[0].at == "2026-11-30T10:05:00Z"
    assert session.turns[1].fallback.at == "2026-11-30"
    saved = tomllib.loads(save_session(session, tmp_path / "out.toml").read_text())
    assert saved["turns"][0]["at"] == "2026-11-30T10:04:20Z" and saved["session"]["created"] == "2026-11-30T10:04:12Z"
    result = tui_router("eval", str(path), "--catalog", "demo", env=hermetic(tmp_path))
    assert result.returncode == 0, result.stderr


def test_a_bad_session_head_is_reported_like_a_bad_turn(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text('[session]\nid = 3\ncatalog = ["demo"]\n\n[[turns]]\nmessage = 4\n')
    with pytest.raises(SessionError) as caught:
        load_session(path)
    lines = caught.value.problems
    assert f"{path}: [session] field 'id' must be a valid string" in lines
    assert f"{path}: [session] field 'catalog' must be a valid string" in lines
    assert f"{path}: turns[0]: field 'message' must be a valid string" in lines
    assert not any("Input should be" in line for line in lines)


def test_a_file_of_turns_only_is_an_eval_set_named_by_its_file(tmp_path: Path) -> None:
    path = tmp_path / "ops-cases.toml"
    path.write_text('[[turns]]\nmessage = "Text Jordan that the deploy finished."\nlabel = "send_sms"\ntags = ["notify"]\n\n[[turns]]\nmessage = "unlabelled"\n')
    session = load_session(path)
    assert session.id == "ops-cases" and session.session.catalog is None
    assert [t.message for t in session.labelled()] == ["Text Jordan that the deploy finished."]
    result = tui_router("eval", str(path), "--catalog", "demo", env=hermetic(tmp_path))
    assert result.returncode == 0, result.stderr


def test_a_newer_format_version_and_its_keys_survive_a_load_and_save(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text('[session]\nid = "s"\nversion = 2\nowner = "dana"\n\n[[turns]]\nmessage = "m"\nmood = "calm"\n')
    session = load_session(path)
    assert session.session.version == 2
    saved = tomllib.loads(save_session(session).read_text())
    assert saved["session"] == {"id": "s", "version": 2, "owner": "dana"}
    assert saved["turns"] == [{"message": "m", "mood": "calm"}]


def test_the_writer_leaves_out_empty_values_keeps_key_order_and_writes_a_version(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text('[session]\nid = "s"\ncatalog = "demo"\n\n[[turns]]\nmessage = "Text Jordan."\nlabel = "send_sms"\nacceptable = []\ntags = []\n')
    session = load_session(path)
    session.turns.append(
        Turn(
            message="Pay it",
            decision=TurnDecision(
                candidates=["pay_invoice"],
                choice="pay_invoice",
                probabilities={"pay_invoice": 0.9, "defer_to_llm": 0.1},
                confidence=0.8,
                band="high",
                action="confirm",
                outcome="declined",
                history=[OutcomeStep(outcome="proposed")],
            ),
            fallback=FallbackRecord(command=["llm"], exit_code=0, output="ok"),
        )
    )
    text = save_session(session).read_text()
    data = tomllib.loads(text)
    assert text.startswith("[session]\n")
    assert data["session"] == {"id": "s", "catalog": "demo", "version": 1}
    assert data["turns"][0] == {"message": "Text Jordan.", "label": "send_sms"}  # empty lists left out
    second = data["turns"][1]
    assert list(second) == ["message", "decision", "fallback"]
    assert "error" not in second["decision"] and "reported_confidence" not in second["decision"]
    assert list(second["decision"])[:2] == ["candidates", "choice"]  # (TOML puts sub-tables last)
    assert second["fallback"] == {"command": ["llm"], "exit_code": 0, "output": "ok"}
    assert load_session(path).turns[1].decision.outcome == "declined"  # what was written reads back


@pytest.mark.parametrize(
    ("table", "key", "value"),
    [("decision", "band", "great"), ("decision", "action", "run"), ("decision", "outcome", "done"), ("arguments", "source", "model")],
)
def test_values_outside_the_listed_ones_are_refused_with_turn_and_field(tmp_path: Path, table: str, key: str, value: str) -> None:
    path = tmp_path / "s.toml"
    path.write_text(f'[[turns]]\nmessage = "ok"\n\n[[turns]]\nmessage = "m"\n[turns.{table}]\n{key} = "{value}"\n')
    before = path.read_bytes()
    result = tui_router("eval", str(path), "--catalog", "demo", env=hermetic(tmp_path))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert f"turns[1]: field '{table}.{key}' must be" in result.stderr
    assert path.read_bytes() == before


# ---------------------------------------------------------------- tool schemas (JSON Schema)


def test_catalog_validate_lists_each_schema_that_is_not_json_schema(tmp_path: Path) -> None:
    """Found: `schema = {type = "objekt"}` passed `catalog validate`; the spec calls the table a JSON
    Schema, so a person checking the file is told, one line per tool (file, index and id, field)."""
    path = write_catalog(
        tmp_path / "c.toml",
        [
            {"id": "a", "when_to_use": "A.", "schema": {"type": "objekt"}, "owner": "ops"},
            {"id": "b", "when_to_use": "B.", "schema": {"type": "object", "required": "to"}},
            {"id": "c", "when_to_use": "C.", "schema": {"type": "object", "required": ["to"], "properties": {"to": {"type": "string"}}}},
            # an unknown dialect URI is validated as the latest draft, as jsonschema does
            {"id": "d", "when_to_use": "D.", "schema": {"$schema": "https://example.com/my-dialect", "type": "object"}},
        ],
    )
    before = path.read_bytes()
    result = tui_router("catalog", "validate", str(path), env=hermetic(tmp_path))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    # file:line first (the line of each tool's [tools.schema] table), as compilers write it
    assert lines[0] == f"tui-router: {path}:8: tools[0] (id 'a'): field 'schema' is not valid JSON Schema: 'objekt' is not valid under any of the given schemas"
    assert lines[1] == f"tui-router: {path}:15: tools[1] (id 'b'): field 'schema' is not valid JSON Schema: 'to' is not of type 'array'"
    assert lines[2] == f"tui-router: warning: {path}:6: tools[0] (id 'a'): unknown field 'owner'"
    # and the author's advice, which never blocks: this catalog has no escalation option
    assert len(lines) == 4 and lines[3].startswith(f"tui-router: warning: {path}: no escalation option") and path.read_bytes() == before
    fixed = write_catalog(tmp_path / "fixed.toml", [{"id": "c", "when_to_use": "C.", "schema": {"type": "object"}}])
    assert tui_router("catalog", "validate", str(fixed), env=hermetic(tmp_path)).returncode == 0


def sms_catalog(path: Path, schema: dict) -> Path:
    """A one-tool catalog whose send_sms has `schema` (the route --args cases below)."""
    tool = {
        "id": "send_sms",
        "when_to_use": "Send a short text message to a phone number.",
        "keywords": ["text", "jordan"],
        "examples": ["Text Jordan that the deploy finished"],
        "schema": schema,
    }
    return write_catalog(path, [tool])


def test_a_schema_whose_dialect_is_not_a_string_is_a_sentence_not_a_traceback(tmp_path: Path) -> None:
    """Found: `"$schema" = 5` in a tool's schema crashed `route --args` inside jsonschema's validator_for."""
    path = sms_catalog(tmp_path / "c.toml", {"$schema": 5, "type": "object"})
    env = hermetic(tmp_path)
    result = tui_router("--catalog", str(path), "route", "--args", "--json", "Text Jordan that the deploy finished", env=env)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    arguments = json.loads(result.stdout)["arguments"]
    assert arguments["valid"] is False
    assert arguments["errors"] == [{"path": "(schema)", "reason": "the tool's schema is not valid JSON Schema: '$schema' must be a URI string, not int"}]
    result = tui_router("catalog", "validate", str(path), env=env)
    assert result.returncode == 2 and "field 'schema' is not valid JSON Schema: '$schema' must be a URI string, not int" in result.stderr


def test_a_session_file_given_as_the_catalog_is_named_as_such(tmp_path: Path) -> None:
    """The mirror of the session reader refusing a catalog: one sentence instead of "no tools" and two
    unknown-key warnings."""
    session = tmp_path / "cases.toml"
    session.write_text('[session]\nid = "cases"\n\n[[turns]]\nmessage = "Text Jordan."\nlabel = "send_sms"\n')
    for argv in (["catalog", "validate", str(session)], ["--catalog", str(session), "route", "Text Jordan."]):
        result = tui_router(*argv, env=hermetic(tmp_path))
        assert result.returncode == 2
        assert result.stderr.splitlines() == [f"tui-router: {session.resolve() if argv[0] == '--catalog' else session}: this is a session file ([session], [[turns]]), not a catalog file ([[tools]])"]
    turns_only = tmp_path / "turns.toml"
    turns_only.write_text('[[turns]]\nmessage = "m"\n')
    with pytest.raises(CatalogError, match="this is a session file"):
        load_catalog(turns_only)


# ---------------------------------------------------------------- DESIGN.md conventions


def test_every_binding_has_an_id_and_a_tooltip_and_the_footer_shows_at_most_six() -> None:
    """DESIGN.md, Bindings: every `Binding` has an `id` and a `tooltip`; at most ~6 in the footer."""
    import importlib
    import inspect
    import pkgutil

    from textual.binding import Binding

    import tui_router.app as app_package

    owners = []
    for info in pkgutil.walk_packages(app_package.__path__, prefix="tui_router.app."):
        module = importlib.import_module(info.name)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == module.__name__ and "BINDINGS" in vars(cls):
                owners.append(cls)
    assert len(owners) >= 8  # the app, its screens and widgets
    for cls in owners:
        bindings = vars(cls)["BINDINGS"]
        assert all(isinstance(b, Binding) for b in bindings), f"{cls.__name__}: a tuple binding has no id or tooltip"
        for binding in bindings:
            assert binding.id and binding.tooltip, f"{cls.__name__}: {binding.key} -> {binding.action}"
        ids = [b.id for b in bindings]
        assert len(ids) == len(set(ids)), f"{cls.__name__}: a binding id used twice"
    from tui_router.app.app import RouterConsole

    assert sum(1 for b in RouterConsole.BINDINGS if isinstance(b, Binding) and b.show) <= 6


def test_locate_names_the_platformdirs_folders(tmp_path: Path) -> None:
    """DESIGN.md, storage: paths come from platformdirs (the same from any directory); `locate config`
    with no file found names where one would be read, `locate sessions` the user data folder."""
    env = {k: v for k, v in os.environ.items() if k != "TUI_ROUTER_CONFIG"}
    env |= {"XDG_CONFIG_HOME": str(tmp_path / "conf"), "XDG_DATA_HOME": str(tmp_path / "data"), "HOME": str(tmp_path / "home")}
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()

    def locate(what: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "tui_router.cli", "locate", what], capture_output=True, text=True, env=env, cwd=elsewhere, timeout=60)

    config = tmp_path / "conf" / "tui-router" / "config.toml"
    assert locate("config").stdout == f"{config} (not present; built-in defaults in use)\n"
    assert locate("sessions").stdout == f"{tmp_path / 'data' / 'tui-router' / 'sessions'}\n"
    config.parent.mkdir(parents=True)
    config.write_text('sessions_dir = "kept"\n')
    assert locate("config").stdout == f"{config}\n"
    assert locate("sessions").stdout == f"{config.parent / 'kept'}\n"  # relative to the config file
    # an empty XDG_CONFIG_HOME means the default, as the XDG spec says
    env["XDG_CONFIG_HOME"] = "  "
    assert locate("config").stdout == f"{tmp_path / 'home' / '.config' / 'tui-router' / 'config.toml'} (not present; built-in defaults in use)\n"


@pytest.mark.parametrize(("where", "key"), [("turn", "notes"), ("turn", "date"), ("turn", "source"), ("turn", "expected"), ("turn", "label_notes"), ("session", "tool_catalog"), ("session", "version_note"), ("decision", "confidence_formula")])
def test_keys_a_person_adds_on_purpose_are_kept_not_called_typos(tmp_path: Path, where: str, key: str) -> None:
    """Found: unknown keys are promised to be kept (a newer version's keys load in this one), but
    `notes` on a turn refused the whole file ("did you mean 'not_this'?"), as did `date`, `source`..."""
    extra = f'{key} = "x"\n'
    head = '[session]\nid = "s"\n' + (extra if where == "session" else "")
    turn = '[[turns]]\nmessage = "m"\nlabel = "send_sms"\n' + (extra if where == "turn" else "")
    decision = '[turns.decision]\nchoice = "send_sms"\n' + extra if where == "decision" else ""
    path = tmp_path / "s.toml"
    path.write_text(head + turn + decision)
    session = load_session(path)
    saved = tomllib.loads(save_session(session).read_text())
    kept = {"session": saved["session"], "turn": saved["turns"][0], "decision": saved["turns"][0].get("decision", {})}[where]
    assert kept[key] == "x"


@pytest.mark.parametrize(("key", "hint"), [("lable", "label"), ("tgas", "tags"), ("mesage", "message"), ("acceptible", "acceptable"), ("reviwer", "reviewer")])
def test_typos_of_known_keys_are_still_errors(tmp_path: Path, key: str, hint: str) -> None:
    path = tmp_path / "s.toml"
    path.write_text(f'[[turns]]\nmessage = "m"\n{key} = "x"\n')
    with pytest.raises(SessionError) as caught:
        load_session(path)
    assert f"turns[0]: unknown key '{key}' (did you mean '{hint}'?)" in caught.value.problems[0]


@pytest.mark.parametrize(
    ("ref", "reason"),
    [
        ("#/nope", "a $ref cannot be resolved (PointerToNowhere: '/nope' does not exist within"),
        ("#", "a $ref loop: the schema refers to itself without end"),
        ("https://example.com/tool.json", "a $ref cannot be resolved (Unresolvable: https://example.com/tool.json; other documents are never fetched)"),
    ],
)
def test_a_schema_whose_ref_cannot_be_followed_is_a_sentence_not_a_traceback(tmp_path: Path, ref: str, reason: str) -> None:
    """Found: `"$ref" = "#/nope"` (or a loop, or another document) in a tool's schema crashed
    `route --args` with jsonschema's traceback; `catalog validate` passed the file."""
    path = sms_catalog(tmp_path / "c.toml", {"type": "object", "$ref": ref})
    env = hermetic(tmp_path)
    result = tui_router("--catalog", str(path), "route", "--args", "--json", "Text Jordan that the deploy finished", env=env)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    (error,) = json.loads(result.stdout)["arguments"]["errors"]
    assert error["path"] == "(schema)" and error["reason"].startswith(f"the tool's schema cannot be used: {reason}")
    result = tui_router("catalog", "validate", str(path), env=env)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert f"tools[0] (id 'send_sms'): field 'schema' is not valid JSON Schema: {reason}" in result.stderr


def test_a_ref_loop_met_only_under_an_argument_is_reported_when_met() -> None:
    from tui_router.arguments import validate_arguments

    schema = {"type": "object", "properties": {"to": {"$ref": "#/properties/to"}}}
    assert validate_arguments(schema, {}) == []
    (error,) = validate_arguments(schema, {"to": "+14155550134"})
    assert (error.path, error.reason) == ("(schema)", "the tool's schema cannot be used: a $ref loop: the schema refers to itself without end")


@pytest.mark.parametrize(("key", "hint"), [("keywrds", "keywords"), ("rsik", "risk"), ("shcema", "schema"), ("input_schema", "schema"), ("inputSchema", "schema")])
def test_a_misspelt_tool_field_is_an_error_with_a_hint(tmp_path: Path, key: str, hint: str) -> None:
    path = write_catalog(tmp_path / "c.toml", [{"id": "a", "when_to_use": "A.", key: {"type": "object"} if "chema" in key else "x"}])
    with pytest.raises(CatalogError) as caught:
        load_catalog(path)
    assert caught.value.problems == [f"{path}: tools[0] (id 'a'): unknown field '{key}' (did you mean '{hint}'?)"]


@pytest.mark.parametrize("key", ["output_schema", "kind", "notes", "owner"])
def test_an_unrelated_tool_field_is_a_warning_not_a_typo(tmp_path: Path, key: str) -> None:
    """Found: `output_schema` (MCP tools have one) refused the catalog with "did you mean 'schema'?",
    `kind` with 'id'; the README promises an unrelated extra field is a warning."""
    path = write_catalog(tmp_path / "c.toml", [{"id": "a", "when_to_use": "A.", key: "x"}], options="x")
    catalog = load_catalog(path)
    assert catalog.get("a").input_schema is None
    assert catalog.warnings == (f"{path}:2: unknown top-level key 'options'", f"{path}: tools[0] (id 'a'): unknown field '{key}'")  # inline tools: no line
