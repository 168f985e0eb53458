"""Property tests: `tui-router catalog import-mcp` against a real MCP server process answering generated tools.

The server (tests/servers/mcp_scripted_server.py, raw JSON-RPC over stdio, no SDK) reads a JSON script
the test rewrites for each example: hostile tool names (empty, 10,000 characters, control and ESC
sequences, Rich markup, bidi and zero-width marks, case and NFC/NFD twins, the none and escalation
ids), hostile descriptions (huge, markup, NUL), schemas that are not objects, deeply nested, with
$ref loops, huge enums, NaN/Infinity/1e400 numbers; junk on stdout, an answer cut off mid-line, a
JSON-RPC error, an exit after the handshake, a server name with newlines.

Invariants: exit 0 with a catalog `catalog validate` accepts, one catalog tool per valid MCP tool
and one `skipped MCP tool` warning per invalid one (a schema that is not an object, a description
that is not a string), or exit 2 with one `tui-router:` sentence on stderr (a server that fails, or
lists no valid tool); never a traceback; an existing --out file is never overwritten (and none is
created on failure); nothing on stdout or stderr carries a control character a terminal would act on.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import re
import subprocess
import sys
import tomllib
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from fuzz_json import Raw, encode
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tui_router.catalog import ID_PATTERN, load_catalog, parse_catalog
from tui_router.cli import main
from tui_router.mcp_import import MCPImportError, list_mcp_tools
from tui_router.textsafe import is_safe

SERVER = Path(__file__).parent / "servers" / "mcp_scripted_server.py"
TIMEOUT = 10.0  # seconds; no example here waits for it (the named cases time out on purpose)

pytest.importorskip("mcp", reason="the mcp extra is not installed: pip install 'tui-router[mcp]'")


HOSTILE = [
    "", " ", "\x00", "\x1b[2J", "\x1b]0;PWNED\x07", "\x9b31m", "\x7f", "\r", "\n", "\t", "a\nb", "x\n[[tools]]\nid = \"evil\"",
    "[bold]x[/]", "[/]", "[link=file:///etc/passwd]y[/link]", "\u202e", "\u200f", "\u2066", "\u200b", "\ufeff", "\u2028",
    "café", "cafe\u0301", "Tool", "tool", "TOOL", "İ", "ß", "\U0001f600", "中文", "العربية",
    "defer_to_llm", "ask_user", "human_review", "Defer_To_LLM", "ask-user", "get_weather", "get_weather",
    "a" * 10_000, "-", "_", "1", "x" * 65,
]
text_piece = st.one_of(st.sampled_from(HOSTILE), st.text(max_size=12))
hostile_text = st.lists(text_piece, max_size=4).map("".join)
names = st.one_of(st.sampled_from(HOSTILE), hostile_text, st.from_regex(r"[a-z][a-z0-9_]{0,10}", fullmatch=True))
descriptions = st.one_of(
    st.none(), hostile_text, st.just("x" * 200_000), st.just("\x00" * 1000), st.just("Para one.\n\nPara two [red]x[/]"), st.integers()
)

OK_NUMBERS = [Raw("NaN"), Raw("Infinity"), Raw("-Infinity"), Raw("1e400"), Raw("-0"), Raw("1e-400"), Raw("123456789012345678901234567890")]
leaves = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False), hostile_text, st.sampled_from(OK_NUMBERS))
json_values = st.recursive(
    leaves,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(hostile_text, inner, max_size=4)),
    max_leaves=12,
)


def nested(depth: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(depth):
        schema = {"type": "object", "properties": {"p": schema}}
    return schema


# What the SDK's client accepts (its InputSchema): type "object", properties of objects or booleans,
# required a list of strings, any other key with any value.
SDK_KEYS = {"type", "properties", "required", "$schema"}
extra_keys = hostile_text.filter(lambda k: k not in SDK_KEYS)
properties = st.dictionaries(hostile_text, st.one_of(st.booleans(), st.dictionaries(hostile_text, json_values, max_size=4)), max_size=4)
object_schemas = st.one_of(
    st.just({"type": "object"}),
    st.dictionaries(extra_keys, json_values, max_size=4).map(lambda d: {"type": "object", **d}),
    st.builds(lambda props, req: {"type": "object", "properties": props, "required": req}, properties, st.lists(hostile_text, max_size=3)),
    st.just({"type": "object", "$ref": "#", "properties": {"x": {"$ref": "#/properties/x"}, "y": {"$ref": "#/properties/x"}}}),
    st.just({"type": "object", "properties": {"e": {"enum": list(range(20_000))}}}),
    st.just({"type": "object", "properties": {"e": {"enum": ["\x1b[2J", None, "[b]x[/b]", "\x00", 1.5, True]}}}),
    st.integers(1, 60).map(nested),
)
BAD_SCHEMAS = ["not an object", [1, 2], 42, True]  # the SDK's Tool model refuses these: the tool is skipped


def is_bad(tool: dict[str, Any]) -> bool:
    """Whether the SDK's Tool model refuses this tool (the import skips it and names it)."""
    return not isinstance(tool["inputSchema"], dict) or not isinstance(tool.get("description", ""), str)


@st.composite
def tools(draw: st.DrawFn) -> dict[str, Any]:
    tool: dict[str, Any] = {"name": draw(names)}
    description = draw(descriptions)
    if description is not None:
        tool["description"] = description
    tool["inputSchema"] = draw(st.sampled_from(BAD_SCHEMAS)) if draw(st.integers(0, 7)) == 0 else draw(object_schemas)
    if draw(st.booleans()):
        tool["annotations"] = draw(st.fixed_dictionaries({}, optional={"readOnlyHint": st.booleans(), "openWorldHint": st.booleans(), "title": hostile_text}))
    return tool


@st.composite
def scripts(draw: st.DrawFn) -> tuple[dict[str, Any], bool]:
    """(the server's script, whether the import must fail)."""
    listed = draw(st.lists(tools(), min_size=1, max_size=6))
    script: dict[str, Any] = {"server_name": draw(st.one_of(hostile_text, st.sampled_from(["", "x\n# y\n[z]", "\x1b]0;t\x07", "n" * 5000])))}
    if draw(st.integers(0, 9)) == 0:  # every tool invalid: nothing to import
        listed = [{**t, "inputSchema": draw(st.sampled_from(BAD_SCHEMAS))} for t in listed]
    good = [t for t in listed if not is_bad(t)]
    if draw(st.integers(0, 1)) == 0 and len(listed) > 1:  # two pages
        script["pages"] = [encode(listed[:1]), encode(listed[1:])]
    else:
        script["tools_json"] = encode(listed)
    mode = draw(st.sampled_from(["ok"] * 6 + ["cut_list", "error_list", "exit_after_init"]))
    script["mode"] = mode
    fails = mode != "ok" or not good
    if mode == "error_list":
        script["error"] = draw(hostile_text)
    if draw(st.integers(0, 4)) == 0:
        script["stdout_junk"] = draw(st.sampled_from(["hello\n", "\x1b[31mred\x1b[0m\n", "{not json}\n", '{"jsonrpc":"2.0","id":999,"result":{}}\n', "\n\n"]))
    if draw(st.booleans()):
        script["stderr"] = draw(hostile_text) + "\n"
    script["count"] = len(good)
    script["names"] = [t["name"] for t in good]
    script["skipped"] = len(listed) - len(good)
    return script, fails


def run(argv: list[str]) -> tuple[int, str, str]:
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = main(argv)
    return code, stdout.getvalue(), stderr.getvalue()


def import_argv(script_path: Path, out: Path | None, timeout: float = TIMEOUT) -> list[str]:
    argv = ["catalog", "import-mcp", "--timeout", str(timeout)]
    if out is not None:
        argv += ["--out", str(out)]
    return [*argv, "--", sys.executable, str(SERVER), str(script_path)]


def check_shown(stdout: str, stderr: str) -> None:
    for text in (stdout, stderr):
        assert is_safe(text), repr(text[:500])
        assert "Traceback" not in text


def check_catalog(catalog_text: str, script: dict[str, Any]) -> None:
    catalog = parse_catalog(tomllib.loads(catalog_text), "imported.toml")
    ids = [t.id for t in catalog.tools]
    assert len(ids) == script["count"] == len(set(ids))
    assert catalog.none_option not in ids
    assert all(ID_PATTERN.fullmatch(i) and len(i) <= 64 for i in ids)
    for name, tool in zip(script["names"], catalog.tools, strict=True):
        if name and ID_PATTERN.fullmatch(name) and tool.id != name:  # a valid name changes only to avoid a taken id
            assert name == catalog.none_option or name in ids[: ids.index(tool.id)]
    assert catalog.name and is_safe(catalog.name) and "\n" not in catalog.name and len(catalog.name) <= 64


FUZZ = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large])


@FUZZ
@given(drawn=scripts(), to_file=st.booleans(), existing=st.booleans())
def test_import_of_any_tools_list(tmp_path_factory: pytest.TempPathFactory, drawn: tuple[dict[str, Any], bool], to_file: bool, existing: bool) -> None:
    script, fails = drawn
    folder = tmp_path_factory.mktemp("fz")
    script_path = folder / "script.json"
    script_path.write_text(json.dumps(script), encoding="utf-8")
    out = folder / "out.toml" if to_file else None
    before = "# the operator's own catalog\n"
    if out is not None and existing:
        out.write_text(before, encoding="utf-8")
    code, stdout, stderr = run(import_argv(script_path, out))
    check_shown(stdout, stderr)
    if out is not None and existing:
        assert code == 2 and "already exists" in stderr
        assert out.read_text(encoding="utf-8") == before
        return
    assert code in (0, 2), stderr
    if code == 2:
        assert fails, stderr  # a server that answers well is imported
        lines = stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("tui-router: ") and len(lines[0]) < 1500, stderr
        assert stdout == ""
        assert out is None or not out.exists()
        return
    assert not fails, stderr
    skipped = [line for line in stderr.splitlines() if line.startswith("tui-router: warning: skipped MCP tool ")]
    assert len(skipped) == script["skipped"], stderr  # each invalid tool named once, on one line
    if out is None:
        check_catalog(stdout, script)
    else:
        assert stdout == ""
        check_catalog(out.read_text(encoding="utf-8"), script)
        assert run(["catalog", "validate", str(out)])[0] == 0


# ---------------------------------------------------------------- named cases (what the properties found)


def scripted(tmp_path: Path, **script: Any) -> Path:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(script), encoding="utf-8")
    return path


def test_names_with_newlines_and_escapes_cannot_write_toml_lines_of_their_own(tmp_path: Path) -> None:
    """Found: an MCP name went raw into the file's header comments; a newline in it started TOML
    lines of its own (here a whole extra tool) and an ESC made the file unreadable."""
    evil = 'x\n[[tools]]\nid = "evil"\nwhen_to_use = "x"\n# '
    listed = [{"name": evil, "inputSchema": {"type": "object"}}, {"name": "t\x1b[2J\x00", "description": "d", "inputSchema": {"type": "object"}}]
    out = tmp_path / "out.toml"
    code, stdout, stderr = run(import_argv(scripted(tmp_path, tools_json=json.dumps(listed)), out))
    assert code == 0, stderr
    check_shown(stdout, stderr)
    catalog = load_catalog(out)
    assert [t.id for t in catalog.tools] == ["x_tools_id_evil_when_to_use_x", "t_2_j"]
    assert catalog.get("x_tools_id_evil_when_to_use_x").title == evil  # the name is kept whole as data
    header = out.read_text(encoding="utf-8").split("\n\n", 1)[0]
    assert all(line.startswith("#") for line in header.splitlines())
    assert '#   t_2_j <- t\\x1b[2J\\x00' in header


def test_a_name_that_is_an_id_but_for_a_trailing_newline_gets_a_derived_id(tmp_path: Path) -> None:
    """Found by the property: `ID_PATTERN.match` takes "defer_to_llm\\n" (`$` matches before a final
    newline), so the name was kept as the id and the catalog refused it: exit 2, nothing imported."""
    listed = [{"name": name, "description": "d", "inputSchema": {"type": "object"}} for name in ("defer_to_llm\n", "get_weather\n")]
    code, stdout, stderr = run(import_argv(scripted(tmp_path, tools_json=json.dumps(listed)), None))
    assert code == 0, stderr
    assert [t.id for t in parse_catalog(tomllib.loads(stdout), "x").tools] == ["defer_to_llm_2", "get_weather"]
    assert "MCP tool 'get_weather\\n' is not a valid id; its catalog id is 'get_weather'" in stderr


def test_a_ten_thousand_character_name_is_quoted_short(tmp_path: Path) -> None:
    listed = [{"name": "a" * 10_000, "description": "d", "inputSchema": {"type": "object"}}]
    code, stdout, stderr = run(import_argv(scripted(tmp_path, tools_json=json.dumps(listed)), None))
    assert code == 0, stderr
    assert "'" + "a" * 80 + "… (10,000 characters)'" in stderr and len(stderr) < 1000
    assert len(stdout.split("\n\n", 1)[0]) < 1000  # the header comment too; the title keeps it whole
    assert parse_catalog(tomllib.loads(stdout), "x").tools[0].title == "a" * 10_000


def test_a_server_name_is_one_printable_line(tmp_path: Path) -> None:
    listed = [{"name": "a", "description": "d", "inputSchema": {"type": "object"}}]
    out = tmp_path / "out.toml"
    code, _, stderr = run(import_argv(scripted(tmp_path, server_name="x\n# y\x1b[2J\n[z]" + "n" * 100, tools_json=json.dumps(listed)), out))
    assert code == 0, stderr
    assert load_catalog(out).name == "x # y [2J [z]" + "n" * 51


def test_junk_on_stdout_is_no_traceback_and_does_not_stop_the_import(tmp_path: Path) -> None:
    """Found: a non-JSON-RPC line from the server made the SDK log its traceback on stderr."""
    listed = [{"name": "a", "description": "d", "inputSchema": {"type": "object"}}]
    script = scripted(tmp_path, stdout_junk="starting up \x1b[31mred\x1b[0m\n", tools_json=json.dumps(listed))
    done = subprocess.run([sys.executable, "-m", "tui_router", *import_argv(script, None)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stderr == "" and "Traceback" not in done.stdout
    assert [t.id for t in parse_catalog(tomllib.loads(done.stdout), "x").tools] == ["a"]


def test_an_answer_the_client_cannot_read_is_named_in_the_error(tmp_path: Path) -> None:
    """Found: a 5,000-digit number (or nesting past the parser) lost the answer with a traceback on
    stderr, then a bare timeout; the error now says why."""
    tools_json = '[{"name":"a","inputSchema":{"type":"object","maximum":' + "9" * 5000 + "}}]"
    out = tmp_path / "out.toml"
    done = subprocess.run([sys.executable, "-m", "tui_router", *import_argv(scripted(tmp_path, tools_json=tools_json), out, timeout=1.5)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert "did not list its tools within 1.5 s; it wrote a line the MCP client could not read (first: Invalid JSON: number out of range" in done.stderr
    assert not out.exists()


def test_bad_tools_are_skipped_and_named_the_good_ones_imported(tmp_path: Path) -> None:
    """Found: one tool with a non-object schema or a non-string description made the SDK's client
    refuse the whole tools/list (exit 2, nothing imported); now each tool is checked on its own."""
    good = [{"name": n, "description": f"Tool {n}.", "inputSchema": {"type": "object"}} for n in ("alpha", "beta", "gamma")]
    bad = [{"name": "broken\x1b[2J", "description": "d", "inputSchema": "not an object"}, {"name": "wordless", "description": 42, "inputSchema": {"type": "object"}}]
    pages = [json.dumps([good[0], bad[0], good[1]]), json.dumps([bad[1], good[2]])]  # across two pages (nextCursor)
    out = tmp_path / "out.toml"
    done = subprocess.run([sys.executable, "-m", "tui_router", *import_argv(scripted(tmp_path, pages=pages), out)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    check_shown(done.stdout, done.stderr)
    assert [t.id for t in load_catalog(out).tools] == ["alpha", "beta", "gamma"]
    lines = done.stderr.splitlines()
    assert lines[:2] == [
        "tui-router: warning: skipped MCP tool 'broken\\x1b[2J': inputSchema: Input should be a valid dictionary or instance of InputSchema",
        "tui-router: warning: skipped MCP tool 'wordless': description: Input should be a valid string",
    ]
    assert lines[2] == f"wrote {out}: catalog 'scripted', 3 tools (0 renamed, 0 notes, 2 skipped)" and len(lines) == 3
    header = out.read_text(encoding="utf-8").split("\n\n", 1)[0]
    assert "#   skipped MCP tool 'wordless': description: Input should be a valid string" in header
    assert run(["catalog", "validate", str(out)])[0] == 0


def test_when_every_tool_is_bad_nothing_is_written(tmp_path: Path) -> None:
    listed = [{"name": "a", "inputSchema": [1]}, {"description": "no name", "inputSchema": {"type": "object"}}, 7]
    out = tmp_path / "out.toml"
    code, stdout, stderr = run(import_argv(scripted(tmp_path, tools_json=json.dumps(listed)), out))
    assert code == 2 and stdout == "" and not out.exists()
    assert stderr == (
        "tui-router: none of the 3 tools the MCP server lists can be imported: MCP tool 'a': inputSchema: Input should be a valid "
        "dictionary or instance of InputSchema; MCP tool 2 (no name): name: Field required; MCP tool 3 (no name): Input should "
        "be a valid dictionary or instance of Tool; nothing was written\n"
    )


@pytest.mark.parametrize("tools_json", ['{"a": 1}', '"tools"', "null"])
def test_a_tools_field_that_is_not_a_list_fails_whole(tmp_path: Path, tools_json: str) -> None:
    code, stdout, stderr = run(import_argv(scripted(tmp_path, tools_json=tools_json), None))
    assert code == 2 and stdout == ""
    assert stderr.startswith("tui-router: the MCP server `") and stderr.endswith("answered tools/list with no list of tools (tools: Input should be a valid list); nothing was written\n")


async def test_a_hanging_server_times_out_with_its_stderr_escaped_later(tmp_path: Path) -> None:
    with pytest.raises(MCPImportError) as info:
        await list_mcp_tools([sys.executable, str(SERVER), str(scripted(tmp_path, mode="hang_list", stderr="loading\x1b[2J\n"))], timeout=1)
    assert "did not list its tools within 1 s; its stderr ends: loading\x1b[2J" in str(info.value)


def test_ten_thousand_tools_import(tmp_path: Path) -> None:
    listed = [{"name": f"tool{i}", "description": f"Tool number {i}.", "inputSchema": {"type": "object"}} for i in range(10_000)]
    out = tmp_path / "out.toml"
    code, stdout, stderr = run(import_argv(scripted(tmp_path, tools_json=json.dumps(listed)), out, timeout=60))
    assert code == 0, stderr
    assert len(load_catalog(out).tools) == 10_000


def test_nan_and_infinity_in_a_schema_are_dropped_and_reported(tmp_path: Path) -> None:
    tools_json = '[{"name":"a","description":"d","inputSchema":{"type":"object","properties":{"x":{"type":"number","maximum":NaN,"minimum":-Infinity,"default":1e400,"multipleOf":0.5}}}}]'
    code, stdout, stderr = run(import_argv(scripted(tmp_path, tools_json=tools_json), None))
    assert code == 0, stderr
    schema = parse_catalog(tomllib.loads(stdout), "x").tools[0].input_schema
    assert schema == {"type": "object", "properties": {"x": {"type": "number", "multipleOf": 0.5}}}
    assert all(not isinstance(v, float) or math.isfinite(v) for v in schema["properties"]["x"].values())
    assert "dropped schema.properties.x.maximum" in stderr


def test_case_and_normalisation_twins_get_distinct_ids(tmp_path: Path) -> None:
    names = ["Tool", "tool", "TOOL", "café", "cafe\u0301", unicodedata.normalize("NFD", "café"), "defer_to_llm", "ask_user", "Ask_User"]
    listed = [{"name": n, "description": "d", "inputSchema": {"type": "object"}} for n in names]
    code, stdout, stderr = run(import_argv(scripted(tmp_path, tools_json=json.dumps(listed)), None))
    assert code == 0, stderr
    ids = [t.id for t in parse_catalog(tomllib.loads(stdout), "x").tools]
    assert ids == ["tool", "tool_2", "tool_3", "cafe", "cafe_2", "cafe_3", "defer_to_llm_2", "ask_user", "ask_user_2"]
    assert not re.search(r"[\x00-\x08\x0b-\x1f]", stderr)


def test_a_schema_too_deep_for_a_catalog_file_is_left_out_not_written_unreadable(tmp_path: Path) -> None:
    """Found: a schema nested 25 objects deep (50 levels with its `properties`) was written into a
    file that the catalog reader then refused (nesting past tomlio.MAX_DEPTH)."""
    listed = [{"name": "deep", "description": "d", "inputSchema": nested(25)}, {"name": "ok", "description": "d", "inputSchema": nested(22)}]
    out = tmp_path / "out.toml"
    code, _, stderr = run(import_argv(scripted(tmp_path, tools_json=json.dumps(listed)), out))
    assert code == 0, stderr
    assert "deep: its schema nests 50 levels deep, past the 45 a catalog file holds; it was left out" in stderr
    catalog = load_catalog(out)
    assert catalog.get("deep").input_schema is None and catalog.get("ok").input_schema == nested(22)
    assert run(["catalog", "validate", str(out)])[0] == 0


def test_what_would_not_load_back_is_never_written(tmp_path: Path) -> None:
    from tui_router.mcp_import import check_loads_back

    with pytest.raises(MCPImportError, match=r"would not load back \(arrays or tables nested more than 48 levels deep\); nothing was written"):
        check_loads_back('name = "x"\n[[tools]]\nid = "a"\nwhen_to_use = "b"\nschema = ' + "[" * 60 + "]" * 60 + "\n")
    with pytest.raises(MCPImportError, match="would not load back"):
        check_loads_back('name = "x"\n')  # no tools
    check_loads_back('name = "x"\n[[tools]]\nid = "a"\nwhen_to_use = "b"\n')


def test_a_schema_that_is_not_valid_json_schema_is_left_out_and_named(tmp_path: Path) -> None:
    """`catalog validate` refuses a tool schema that is not valid JSON Schema, so the import must not
    write one: such a schema is left out with a note, and the file it writes validates."""
    listed = [
        {"name": "bad", "description": "d", "inputSchema": {"type": "object", "properties": {"n": {"type": "integer", "minimum": "zero"}}}},
        {"name": "good", "description": "d", "inputSchema": {"type": "object", "required": ["n"], "properties": {"n": {"type": "integer"}}}},
    ]
    out = tmp_path / "out.toml"
    code, stdout, stderr = run(import_argv(scripted(tmp_path, tools_json=json.dumps(listed)), out))
    assert code == 0, stderr
    assert "bad: its schema is not valid JSON Schema ('zero' is not of type 'number'); it was left out" in stderr
    catalog = load_catalog(out)
    assert catalog.get("bad").input_schema is None
    assert catalog.get("good").input_schema == listed[1]["inputSchema"]
    assert run(["catalog", "validate", str(out)])[0] == 0
