"""`catalog import-mcp --config FILE`: every server of an MCP host configuration in one catalog.

Real MCP servers written with the official SDK (tests/servers/mcp_team_server.py) run as stdio
subprocesses and one over streamable HTTP; GitHub- and GitLab-like servers share tool names; one
server fails to start, one hangs, one lacks the variable it needs. The merged catalog is loaded,
validated and routed as any catalog is.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tui_router.catalog import load_catalog
from tui_router.cli import main
from tui_router.config import Config
from tui_router.mcp_hosts import HostConfigError, parse_inputs, read_host_config
from tui_router.mcp_import import MCPImportError
from tui_router.mcp_merge import ServerTools, default_prefix, merge_servers, parse_prefixes, prefixes_of
from tui_router.route import Router

SERVER = Path(__file__).parent / "servers" / "mcp_team_server.py"
SECRET = "sup3r-s3cret-team-token"
LITERAL = "literal-s3cret-in-the-file"


def run(*argv: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    saved = dict(os.environ)
    try:
        os.environ.update(env or {})
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(list(argv))
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return code, out.getvalue(), err.getvalue()


def stdio(role: str, **extra) -> dict:
    return {"command": sys.executable, "args": [str(SERVER), role], **extra}


@pytest.fixture(scope="module")
def http_notes(tmp_path_factory):
    """The notes server over streamable HTTP, answering 401 without the bearer token."""
    folder = tmp_path_factory.mktemp("http")
    portfile = folder / "port"
    proc = subprocess.Popen(
        [sys.executable, str(SERVER), "notes", "--http", str(portfile)],
        env=os.environ | {"TEAM_TOKEN": SECRET}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 60
    while not portfile.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(f"the HTTP server did not start: {proc.stderr.read()}")
        time.sleep(0.05)
    yield f"http://127.0.0.1:{portfile.read_text()}/mcp"
    proc.terminate()
    proc.wait(timeout=15)


@pytest.fixture(scope="module")
def team(tmp_path_factory, http_notes):
    """One run of the command on a host configuration of six servers."""
    folder = tmp_path_factory.mktemp("team")
    config = folder / "claude_desktop_config.json"
    servers = {
        "github": stdio("github", env={"TEAM_TOKEN": "${env:TEAM_SECRET}"}),  # passed through by name
        "gitlab": stdio("gitlab", env={"TEAM_TOKEN": LITERAL}),  # a value written in the file
        "notes": {"type": "http", "url": http_notes, "headers": {"Authorization": "Bearer ${env:TEAM_SECRET}"}},
        "broken": {"command": sys.executable, "args": ["-c", f"import sys; sys.stderr.write('auth failed for token {SECRET}\\n'); sys.exit(3)"], "env": {"TEAM_TOKEN": "${env:TEAM_SECRET}"}},
        "hangs": {"command": sys.executable, "args": ["-c", "import sys; sys.stdin.read()"]},
        "no-token": stdio("github"),  # TEAM_TOKEN not given: it refuses to start
        "off": {**stdio("github"), "disabled": True},
    }
    config.write_text(json.dumps({"mcpServers": servers}, indent=1), encoding="utf-8")
    out = folder / "team.toml"
    code, stdout, stderr = run("catalog", "import-mcp", "--config", str(config), "--timeout", "8", "--out", str(out), env={"TEAM_SECRET": SECRET})
    return code, out, stdout, stderr, config


def test_the_servers_are_merged_with_namespaced_ids(team):
    code, out, stdout, stderr, _ = team
    assert code == 1, stderr  # written, but not every server could be imported
    catalog = load_catalog(out)
    ids = [t.id for t in catalog.tools]
    assert ids == [
        "github.create_issue", "github.get_file_contents", "github.search_repositories",
        "gitlab.create_issue", "gitlab.search_repositories", "gitlab.create_merge_request",
        "notes.add_note", "notes.search_notes",
        "ask_user", "human_review",
    ]
    assert catalog.name == "claude_desktop_config" and catalog.none_option == "defer_to_llm"
    by_id = {t.id: t for t in catalog.tools}
    # the clashing names keep each server's own text, schema and category
    assert by_id["github.create_issue"].when_to_use == "Create a new issue in a GitHub repository."
    assert by_id["gitlab.create_issue"].when_to_use == "Create a new issue in a GitLab project."
    assert by_id["github.create_issue"].input_schema["required"] == ["owner", "repo", "title"]
    assert by_id["gitlab.create_issue"].input_schema["required"] == ["project_id", "title"]
    assert {t.category for t in catalog.tools} == {"github", "gitlab", "notes", "escalation"}
    # risk from the annotations: read-only -> read, default (open world) -> outbound, local write -> write
    assert (by_id["github.search_repositories"].risk.value, by_id["github.create_issue"].risk.value, by_id["notes.add_note"].risk.value) == ("read", "outbound", "write")
    assert by_id["human_review"].risk.value == "escalation" and by_id["ask_user"].risk.value == "escalation"
    assert f"wrote {out}: catalog 'claude_desktop_config': 8 tools from 3 servers; 3 servers not imported" in stderr


def test_each_failed_server_is_one_line_and_secrets_go_nowhere(team):
    code, out, stdout, stderr, _ = team
    failed = [line for line in stderr.splitlines() if line.startswith("tui-router: server not imported: ")]
    assert len(failed) == 3
    broken, hangs, no_token = failed
    assert broken.startswith("tui-router: server not imported: broken: stopped or failed before listing its tools")
    assert broken.endswith("its stderr ends: auth failed for token ***")  # the server echoed the secret: blanked
    assert hangs == "tui-router: server not imported: hangs: did not list its tools within 8 s"
    assert no_token.endswith("its stderr ends: TEAM_TOKEN is not set; refusing to start")
    assert "tui-router: note: off: disabled in the host configuration; left out" in stderr
    text = out.read_text(encoding="utf-8")
    for secret in (SECRET, LITERAL):
        assert secret not in text and secret not in stderr and secret not in stdout
    assert "#   broken: stopped or failed" in text and "#   notes (notes.*): http: http://127.0.0.1:" in text
    assert str(SERVER) not in text  # arguments are not written (a connection string or a key may sit there)


def test_the_merged_catalog_validates_and_routes(team, capsys):
    _, out, _, _, _ = team
    assert main(["catalog", "validate", str(out)]) == 0
    assert ": ok - catalog 'claude_desktop_config', 8 tools + 2 escalation options in 4 categories" in capsys.readouterr().out
    router = Router(load_catalog(out), Config(backend="local"))
    assert router.route("open an issue in our GitLab project about the login bug").choice == "gitlab.create_issue"
    assert router.route("open a new issue in the GitHub repository for the crash").choice == "github.create_issue"
    assert router.route("add a note to the team notebook: standup moved to 10").choice == "notes.add_note"


def test_server_selection_prefixes_and_vs_code_inputs(tmp_path: Path):
    config = tmp_path / "mcp.json"
    config.write_text(
        "// VS Code writes comments and trailing commas\n"
        + json.dumps({"inputs": [{"type": "promptString", "id": "team-token", "password": True}],
                      "servers": {"gh": stdio("github", env={"TEAM_TOKEN": "${input:team-token}"}), "gl": stdio("gitlab", env={"TEAM_TOKEN": "${input:team-token}"})}})[:-2]
        + ",},}\n",
        encoding="utf-8",
    )
    code, stdout, stderr = run("catalog", "import-mcp", "--config", str(config), "--server", "gl", "--server", "gh", "--prefix", "gl=lab",
                               "--input", "team-token=TEAM_SECRET", "--no-escalation", "--name", "dev", env={"TEAM_SECRET": SECRET})
    assert code == 0, stderr
    assert stdout.startswith("# Catalog imported from 2 MCP servers")
    ids = [line.split('"')[1] for line in stdout.splitlines() if line.startswith("id = ")]
    assert ids == ["lab.create_issue", "lab.search_repositories", "lab.create_merge_request", "gh.create_issue", "gh.get_file_contents", "gh.search_repositories"]
    assert SECRET not in stdout + stderr
    # without --input the server is not started, and the line says how to give it
    code, stdout, stderr = run("catalog", "import-mcp", "--config", str(config), "--server", "gh")
    assert code == 2 and stdout == ""
    assert "tui-router: gh: not started: it needs the input 'team-token' (declared in the file's \"inputs\"; VS Code prompts for it): give it with --input team-token=ENV_VAR" in stderr
    assert stderr.strip().endswith("no server could be imported; nothing was written")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("not json at all", "is not valid JSON"),
        ("[1, 2]", "the file holds JSON an array, not an object with \"mcpServers\""),
        ('{"mcp": {"other": 1}}', "no MCP servers in it: expected an \"mcpServers\" object"),
        ('{"mcpServers": []}', "\"mcpServers\" is JSON an array, not an object of servers by name"),
        ('{"mcpServers": {}}', "\"mcpServers\" names no server"),
    ],
)
def test_a_bad_configuration_is_one_sentence_and_nothing_is_written(tmp_path: Path, text: str, expected: str):
    config = tmp_path / "host.json"
    config.write_text(text, encoding="utf-8")
    out = tmp_path / "out.toml"
    code, stdout, stderr = run("catalog", "import-mcp", "--config", str(config), "--out", str(out))
    assert code == 2 and not out.exists() and stdout == ""
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0] and "Traceback" not in stderr


def test_options_that_do_not_go_together_are_refused(tmp_path: Path):
    config = tmp_path / "host.json"
    config.write_text(json.dumps({"mcpServers": {"a": stdio("notes")}}), encoding="utf-8")
    cases = [
        (["--config", str(config), "--", "python", "x.py"], "give either --config FILE or a server command after --, not both"),
        (["--prefix", "a=b", "--", "python", "x.py"], "--prefix goes with --config FILE"),
        (["--config", str(config), "--write"], "--write goes with --update CATALOG"),
        (["--config", str(config), "--server", "zz"], "has no server 'zz'; it has a"),
        (["--config", str(config), "--prefix", "a=Bad.Prefix"], "a prefix is a lowercase letter"),
        (["--config", str(config), "--input", "tok=not a name"], "give an input id and the name of an environment variable"),
    ]
    for argv, expected in cases:
        code, _, stderr = run("catalog", "import-mcp", *argv)
        assert code == 2 and expected in stderr, (argv, stderr)


# ---------------------------------------------------------------- reading host configurations (no server started)


def test_variables_are_filled_in_as_hosts_do_and_never_shown(tmp_path: Path):
    config = tmp_path / "host.json"
    config.write_text(json.dumps({"mcpServers": {
        "a": {"command": "${userHome}/bin/srv", "args": ["--db", "${DB_URL:-sqlite:///x.db}", "--key", "${API_KEY}"], "env": {"T": "${env:TOKEN}", "N": 5, "B": True}},
        "b": {"url": "https://user:pw@mcp.example.invalid/v1?key=abc", "headers": {"Authorization": "Bearer ${TOKEN}"}},
        "c": {"command": "x", "env": {"T": "${env:MISSING_VAR}"}},
        "d": {"type": "websocket", "url": "ws://x"},
        "e": {"args": ["no command"]},
        "f": "not an object",
    }}), encoding="utf-8")
    host = read_host_config(config, environ={"TOKEN": "tok-12345", "API_KEY": "key-67890"})
    a, b, c, d, e, f = host.servers
    assert a.command == [f"{Path.home()}/bin/srv", "--db", "sqlite:///x.db", "--key", "key-67890"]
    assert a.env == {"T": "tok-12345", "N": "5", "B": "true"}
    assert a.shown() == "stdio: srv" and a.redact("bad key key-67890 and tok-12345") == "bad key *** and ***"
    assert (b.transport, b.headers) == ("http", {"Authorization": "Bearer tok-12345"})
    assert b.shown() == "http: https://mcp.example.invalid/v1"  # no user, password or query
    assert c.problem == "it needs the environment variable MISSING_VAR, which is not set"
    assert d.problem.startswith("its type 'websocket' is not one of stdio, http, streamable-http, sse")
    assert e.problem == "it has neither a \"command\" (a stdio server) nor a \"url\" (a remote one)"
    assert f.problem == "its entry is JSON a string, not an object"


def test_vs_code_settings_and_input_problems(tmp_path: Path):
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps({"editor.fontSize": 12, "mcp": {"servers": {"s": {"type": "sse", "url": "http://127.0.0.1:9/sse", "headers": {"X-Key": "${input:key}"}}}}}), encoding="utf-8")
    [server] = read_host_config(settings, environ={}).servers
    assert server.problem.startswith("it needs the input 'key' (not declared in the file; VS Code prompts for it)")
    [server] = read_host_config(settings, inputs={"key": "KEY_VAR"}, environ={}).servers
    assert server.problem == "its input 'key' comes from the environment variable KEY_VAR (--input), which is not set"
    [server] = read_host_config(settings, inputs={"key": "KEY_VAR"}, environ={"KEY_VAR": "value-1"}).servers
    assert (server.transport, server.headers, server.problem) == ("sse", {"X-Key": "value-1"}, "")
    assert parse_inputs(["key=KEY_VAR"]) == {"key": "KEY_VAR"}
    with pytest.raises(HostConfigError):
        parse_inputs(["key=secret-value!"])


def test_an_unreachable_http_server_is_one_line(tmp_path: Path):
    import socket

    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    config = tmp_path / "host.json"
    config.write_text(json.dumps({"mcpServers": {"remote": {"url": f"http://127.0.0.1:{port}/mcp"}, "notes": {"url": f"http://127.0.0.1:{port}/sse", "type": "sse"}}}), encoding="utf-8")
    code, stdout, stderr = run("catalog", "import-mcp", "--config", str(config), "--timeout", "10")
    assert code == 2 and stdout == ""
    lines = stderr.strip().splitlines()
    assert lines[0].startswith("tui-router: remote: stopped or failed before listing its tools (") and "Traceback" not in stderr
    assert lines[1].startswith("tui-router: notes: stopped or failed before listing its tools (")


def test_a_wrong_bearer_token_is_refused_without_showing_it(tmp_path: Path, http_notes):
    config = tmp_path / "host.json"
    config.write_text(json.dumps({"mcpServers": {"notes": {"url": http_notes, "headers": {"Authorization": "Bearer wrong-token-value"}}}}), encoding="utf-8")
    code, stdout, stderr = run("catalog", "import-mcp", "--config", str(config), "--timeout", "10")
    assert code == 2 and "wrong-token-value" not in stderr
    assert stderr.splitlines()[0].endswith("; it answered HTTP 401 Unauthorized: check the headers (a key or token) the configuration gives it")


# ---------------------------------------------------------------- merging (no server started)


def test_merge_namespaces_clashing_names_and_refuses_a_shared_prefix():
    tool = {"id": "create_issue", "when_to_use": "Create an issue.", "risk": "outbound"}
    merged = merge_servers([ServerTools(server="github", prefix="github", tools=[tool]), ServerTools(server="gitlab", prefix="gitlab", tools=[tool])], name="x", description="d")
    assert [t.id for t in merged.catalog.tools] == ["github.create_issue", "gitlab.create_issue", "ask_user", "human_review"]
    assert prefixes_of(merged.catalog) == {"github": "github", "gitlab": "gitlab"}
    with pytest.raises(MCPImportError, match="would share the id prefix 'git'"):
        merge_servers([ServerTools(server="github", prefix="git", tools=[tool]), ServerTools(server="gitlab", prefix="git", tools=[tool])], name="x", description="d")
    long = {"id": "a" * 60, "when_to_use": "Long.", "risk": "read"}
    cut = merge_servers([ServerTools(server="s", prefix="server", tools=[long, {**long, "id": "a" * 61}])], name="x", description="d", escalation={})
    assert [len(t.id) for t in cut.catalog.tools] == [64, 64] and cut.catalog.tools[1].id.endswith("_2")
    assert "longer than 64 characters" in cut.notes[0]


def test_prefixes_from_names_and_flags():
    assert [default_prefix(n) for n in ("google-maps", "GitHub Enterprise", "a.b:c", "---")] == ["google-maps", "github_enterprise", "a-b-c", "tool"]
    assert parse_prefixes(["filesystem=fs", "google-maps=gmaps"]) == {"filesystem": "fs", "google-maps": "gmaps"}
    for bad in ("fs", "=fs", "a=", "a=9x", "a=x.y"):
        with pytest.raises(MCPImportError):
            parse_prefixes([bad])


# ---------------------------------------------------------------- any JSON a host file may hold


def _json_values():
    from hypothesis import strategies as st

    scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20) | st.sampled_from(["${env:TOK}", "${input:x}", "${TOK}", "${TOK:-d}", "${userHome}", "stdio", "http", "sse"])
    keys = st.sampled_from(["command", "args", "env", "url", "type", "headers", "cwd", "disabled", "envFile", "x"]) | st.text(max_size=8)
    return st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=6), max_leaves=25)


def test_any_json_is_read_into_servers_or_one_sentence(tmp_path: Path):
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    secret = "tok-secret-42"

    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(st.dictionaries(st.text(min_size=1, max_size=10), _json_values(), min_size=1, max_size=4), st.sampled_from(["mcpServers", "servers"]))
    def check(entries, form):
        config = tmp_path / "host.json"
        config.write_text(json.dumps({form: entries}), encoding="utf-8")
        try:
            host = read_host_config(config, environ={"TOK": secret}, inputs={"x": "TOK"})
        except HostConfigError as exc:
            assert "\n" not in str(exc)
            return
        for server in host.servers:
            assert isinstance(server.problem, str)
            if not server.problem:
                assert server.command or server.url
            said = [server.shown(), server.problem] + ([server.redact(f"echo {secret}")] if secret in server.secrets else [])
            for text in said:  # what a variable gave is never shown, whatever the entry looks like
                assert secret not in text and "\n" not in text

    check()
