"""`catalog import-mcp`: the conversion (pure) and a real MCP server (official SDK) over stdio."""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tui_router.catalog import load_catalog, parse_catalog
from tui_router.cli import main
from tui_router.config import Config, config_from_dict
from tui_router.mcp_import import MCPImportError, catalog_from_tools, derive_id, list_mcp_tools
from tui_router.route import Router

SERVER = Path(__file__).parent / "servers" / "mcp_tools_server.py"


# ---------------------------------------------------------------- conversion


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("Send Email", "send_email"),
        ("searchDocs", "search_docs"),
        ("getHTTPStatus", "get_httpstatus"),
        ("weather/get-forecast", "weather_get-forecast"),
        ("2fa_reset", "tool_2fa_reset"),
        ("Crème brûlée", "creme_brulee"),
        ("!!!", "tool"),
        ("x" * 100, "x" * 64),
    ],
)
def test_derive_id(name, expected):
    assert derive_id(name) == expected


def test_catalog_from_tools_reports_every_adjustment():
    tools = [
        {"name": "get_weather", "description": "Get the forecast.", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": True}},
        {"name": "Get Weather", "description": "Same name once cleaned.", "inputSchema": {"type": "object"}},
        {"name": "defer_to_llm", "description": "Named like the none option.", "inputSchema": {"type": "object"}},
        {"name": "quiet", "inputSchema": {"type": "object", "properties": {"a": {"type": "string", "default": None}}}},
        {"name": "local_write", "description": "Write a local note.", "annotations": {"readOnlyHint": False, "openWorldHint": False}},
        {"name": "long", "description": "First paragraph. " * 40 + "\n\nSecond paragraph."},
    ]
    result = catalog_from_tools(tools, "demo-mcp")
    ids = [t.id for t in result.catalog.tools]
    assert ids == ["get_weather", "get_weather_2", "defer_to_llm_2", "quiet", "local_write", "long"]
    assert result.renamed == {"Get Weather": "get_weather_2", "defer_to_llm": "defer_to_llm_2"}
    tools_by_id = {t.id: t for t in result.catalog.tools}
    assert tools_by_id["get_weather_2"].title == "Get Weather"
    assert tools_by_id["get_weather"].risk.value == "read"
    assert tools_by_id["get_weather_2"].risk.value == "outbound"  # MCP defaults: not read-only, open world
    assert tools_by_id["local_write"].risk.value == "write"
    assert tools_by_id["quiet"].when_to_use.startswith("No description from the MCP server for 'quiet'")
    assert tools_by_id["quiet"].input_schema == {"type": "object", "properties": {"a": {"type": "string"}}}
    assert len(tools_by_id["long"].when_to_use) <= 300 and tools_by_id["long"].when_to_use.endswith("…")
    notes = "\n".join(result.notes)
    for fragment in ("'Get Weather' is not a valid id", "'defer_to_llm' collides", "quiet: the MCP server gives no description",
                     "dropped schema.properties.a.default", "long: when_to_use is the first"):
        assert fragment in notes
    # what is written parses back into the same catalog, with the renames in its header
    text = result.toml(source="python server.py")
    assert "#   get_weather_2 <- Get Weather" in text
    again = parse_catalog(tomllib.loads(text), "again.toml")
    assert [t.id for t in again.tools] == ids


def test_no_tools_is_an_error():
    with pytest.raises(MCPImportError, match="lists no tools"):
        catalog_from_tools([], "x")


# ---------------------------------------------------------------- a real MCP server over stdio


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    """Run the command once: `catalog import-mcp --out FILE -- python tests/servers/mcp_tools_server.py`."""
    out = tmp_path_factory.mktemp("mcp") / "helpdesk.toml"
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = main(["catalog", "import-mcp", "--out", str(out), "--", sys.executable, str(SERVER)])
    return code, out, stderr.getvalue()


def test_import_writes_a_catalog_and_reports_renames(imported):
    code, out, stderr = imported
    assert code == 0, stderr
    catalog = load_catalog(out)
    assert catalog.name == "helpdesk-tools"
    assert sorted(t.id for t in catalog.tools) == ["create_ticket", "get_weather", "lookup_order", "no_docs", "search_docs", "send_email"]
    weather = catalog.get("get_weather")
    assert weather.when_to_use == "Get the weather forecast for a city for the next few days."
    assert weather.input_schema["required"] == ["city"] and weather.risk.value == "read"
    assert catalog.get("create_ticket").when_to_use == "Open a support ticket in the helpdesk tracker."
    assert catalog.get("create_ticket").risk.value == "write"
    assert catalog.get("send_email").title == "Send Email"
    assert "MCP tool 'Send Email' is not a valid id; its catalog id is 'send_email'" in stderr
    assert "MCP tool 'searchDocs' is not a valid id; its catalog id is 'search_docs'" in stderr
    assert "no_docs: the MCP server gives no description" in stderr
    assert "lookup_order: TOML cannot hold null" in stderr
    assert f"wrote {out}: catalog 'helpdesk-tools', 6 tools (2 renamed" in stderr


def test_imported_catalog_routes(imported, jev_mocks, profile_cache):
    _, out, _ = imported
    catalog = load_catalog(out)
    local = Router(catalog, Config())
    decision = local.route("What's the weather forecast in Paris this week?")
    assert decision.choice == "get_weather" and decision.retrieval.value == "direct"
    remote = Router(catalog, config_from_dict({"backend": "systemone", "systemone": {"base_url": jev_mocks.url()}}))
    try:
        answer = remote.route("Open a support ticket: the printer is on fire")
    finally:
        remote.backend.close()
    assert answer.error == "" and set(answer.options) == {t.id for t in catalog.tools} | {"defer_to_llm"}


def test_an_existing_out_file_is_never_overwritten(imported, capsys):
    _, out, _ = imported
    before = out.read_text()
    assert main(["catalog", "import-mcp", "--out", str(out), "--", sys.executable, str(SERVER)]) == 2
    assert "already exists" in capsys.readouterr().err
    assert out.read_text() == before


# ---------------------------------------------------------------- servers that do not work


async def test_a_missing_command_is_a_clear_error():
    with pytest.raises(MCPImportError, match="cannot start the MCP server `no-such-mcp-server-xyz`: No such file or directory"):
        await list_mcp_tools(["no-such-mcp-server-xyz"], timeout=10)


async def test_a_server_that_exits_shows_its_stderr():
    command = [sys.executable, "-c", "import sys; sys.stderr.write('boom: missing config\\n'); sys.exit(3)"]
    with pytest.raises(MCPImportError) as info:
        await list_mcp_tools(command, timeout=20)
    assert "stopped or failed before listing its tools" in str(info.value)
    assert "its stderr ends: boom: missing config" in str(info.value)


async def test_a_silent_server_times_out():
    command = [sys.executable, "-c", "import sys; sys.stdin.read()"]  # never answers, exits when stdin closes
    with pytest.raises(MCPImportError, match=r"did not list its tools within 0.5 s"):
        await list_mcp_tools(command, timeout=0.5)


def test_without_the_extra_it_says_how_to_install():
    code = "import sys; sys.modules['mcp'] = None\nfrom tui_router.cli import main\nsys.exit(main(['catalog', 'import-mcp', '--', 'server']))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert result.stderr.strip() == "tui-router: catalog import-mcp needs the MCP SDK, an optional extra: install it with pip install 'tui-router[mcp]'"
