"""`catalog diff OLD NEW` and `catalog import-mcp --update CATALOG`: what changed when a server was
upgraded, and the labelled turns it orphans. Nothing is written without --write; with it the catalog
is replaced atomically and only the turns of renamed tools are relabelled (never a guess, never a
live file). The --update tests run real MCP servers (tests/servers/mcp_team_server.py) over stdio.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from lock_probe import holding_elsewhere
from test_mcp_host_import import SECRET, run, stdio

from tui_router.catalog import load_catalog, parse_catalog
from tui_router.catalog_diff import diff_catalogs, orphaned_turns, relabel
from tui_router.errors import SessionError
from tui_router.session import load_session

SCHEMA = {"type": "object", "required": ["owner", "repo", "title"], "properties": {"owner": {"type": "string"}, "repo": {"type": "string"}, "title": {"type": "string"}}}
OLD = {
    "name": "gh",
    "tools": [
        {"id": "gh.create_issue", "when_to_use": "Create a new issue in a GitHub repository.", "risk": "outbound", "schema": SCHEMA},
        {"id": "gh.get_file_contents", "when_to_use": "Get the contents of a file or directory from a GitHub repository.", "risk": "read"},
        {"id": "gh.search_repositories", "when_to_use": "Search for GitHub repositories.", "risk": "read"},
        {"id": "gh.fork_repository", "when_to_use": "Fork a GitHub repository to your account.", "risk": "outbound"},
    ],
}
NEW = {
    "name": "gh",
    "tools": [
        {"id": "gh.open_issue", "when_to_use": "Open a new issue in a GitHub repository.", "risk": "outbound", "schema": SCHEMA},
        {"id": "gh.read_file", "when_to_use": "Read the contents of a file from a GitHub repository.", "risk": "read", "schema": {"type": "object"}},
        {"id": "gh.search_repositories", "when_to_use": "Search GitHub repositories by name, topic or language.", "risk": "read"},
        {"id": "gh.create_gist", "when_to_use": "Create a gist.", "risk": "outbound"},
    ],
}
SESSION = """[session]
id = "labels"
catalog = "gh"

# a hand-written eval file: its comments are kept in labels.toml.bak at the first write
[[turns]]
message = "File a bug in acme/web: the login page is blank"
label = "gh.create_issue"

[[turns]]
message = "Show me README.md in acme/web"
label = "gh.get_file_contents"
acceptable = ["gh.create_issue"]

[[turns]]
message = "Fork acme/web"
label = "gh.fork_repository"

[[turns]]
message = "find repos about rust parsers"
label = "gh.search_repositories"
"""


def catalogs(tmp_path: Path) -> tuple[Path, Path]:
    import tomli_w

    old, new = tmp_path / "old.toml", tmp_path / "new.toml"
    old.write_text(tomli_w.dumps(OLD), encoding="utf-8")
    new.write_text(tomli_w.dumps(NEW), encoding="utf-8")
    return old, new


def test_added_removed_renamed_changed_and_a_guess():
    diff = diff_catalogs(parse_catalog(OLD, "old"), parse_catalog(NEW, "new"))
    assert [(r.old, r.new) for r in diff.renamed] == [("gh.create_issue", "gh.open_issue")]  # same schema, words alike
    assert diff.removed == ["gh.get_file_contents", "gh.fork_repository"]  # read_file's schema differs: not a rename
    assert diff.added == ["gh.read_file", "gh.create_gist"]
    assert [(c.id, list(c.fields)) for c in diff.changed] == [("gh.search_repositories", ["when_to_use"])]
    assert diff.successor("gh.get_file_contents") == ("gh.read_file", "guess")
    assert diff.successor("gh.fork_repository") == (None, "")  # nothing near enough
    assert diff.successor("gh.create_issue") == ("gh.open_issue", "renamed")


def test_a_catalog_against_itself_has_no_difference(tmp_path: Path):
    old, _ = catalogs(tmp_path)
    code, stdout, _ = run("catalog", "diff", str(old), str(old))
    assert code == 0 and stdout.strip() == f"{old} -> {old}: no tool added, removed, renamed or changed"


def test_diff_lists_orphaned_turns_and_writes_nothing_without_write(tmp_path: Path):
    old, new = catalogs(tmp_path)
    session = tmp_path / "labels.toml"
    session.write_text(SESSION, encoding="utf-8")
    code, stdout, stderr = run("catalog", "diff", str(old), str(new), "--sessions", str(tmp_path))
    assert code == 1, stderr
    lines = stdout.splitlines()
    assert lines[0] == f"{old} -> {new}: 2 added, 2 removed, 1 renamed, 1 changed"
    assert "  ~ gh.create_issue -> gh.open_issue  (renamed: same schema, text 0.82 alike)" in lines
    assert "  - gh.get_file_contents  (perhaps gh.read_file: similar text)" in lines
    assert "  * gh.search_repositories  when_to_use: Search for GitHub repositories. -> Search GitHub repositories by name, topic or language." in lines
    assert "labelled turns naming a tool that is gone: 4 in 1 file" in lines
    assert f'  {session} turn 1 "File a bug in acme/web: the login page is blank": label gh.create_issue -> gh.open_issue (renamed)' in lines
    assert f'  {session} turn 2 "Show me README.md in acme/web": label gh.get_file_contents -> perhaps gh.read_file (a guess: similar text; relabel by hand)' in lines
    assert f'  {session} turn 2 "Show me README.md in acme/web": acceptable gh.create_issue -> gh.open_issue (renamed)' in lines
    assert f'  {session} turn 3 "Fork acme/web": label gh.fork_repository: removed, no likely successor' in lines
    assert lines[-1] == "nothing was written; rerun with --write to relabel the renamed tools' turns"
    assert session.read_text(encoding="utf-8") == SESSION


def test_write_relabels_renamed_tools_only_and_keeps_the_comments(tmp_path: Path):
    old, new = catalogs(tmp_path)
    session = tmp_path / "labels.toml"
    session.write_text(SESSION, encoding="utf-8")
    code, stdout, _ = run("catalog", "diff", str(old), str(new), "--sessions", str(session), "--write")
    assert code == 1 and stdout.splitlines()[-1] == f"relabelled 2 turns in {session}"
    turns = load_session(session).turns
    assert [t.label for t in turns] == ["gh.open_issue", "gh.get_file_contents", "gh.fork_repository", "gh.search_repositories"]  # guesses left
    assert turns[1].acceptable == ["gh.open_issue"]
    assert (tmp_path / "labels.toml.bak").read_text(encoding="utf-8") == SESSION
    assert not list(tmp_path.glob(".*.lock"))  # the lock was let go
    # done: a second run finds nothing renamed left to write
    code, stdout, _ = run("catalog", "diff", str(old), str(new), "--sessions", str(session), "--write")
    assert "relabelled" not in stdout


def test_json_output(tmp_path: Path):
    old, new = catalogs(tmp_path)
    (tmp_path / "labels.toml").write_text(SESSION, encoding="utf-8")
    code, stdout, _ = run("catalog", "diff", str(old), str(new), "--sessions", str(tmp_path / "labels.toml"), "--json")
    out = json.loads(stdout)
    assert code == 1 and out["renamed"] == [{"old": "gh.create_issue", "new": "gh.open_issue", "similarity": 0.818}]
    assert out["removed"] == [{"id": "gh.get_file_contents", "likely": "gh.read_file"}, {"id": "gh.fork_repository", "likely": None}]
    assert out["changed"][0]["fields"]["when_to_use"]["new"] == "Search GitHub repositories by name, topic or language."
    assert [(t["index"], t["field"], t["how"]) for t in out["orphaned_turns"]] == [(1, "label", "renamed"), (2, "label", "guess"), (2, "acceptable", "renamed"), (3, "label", "")]
    assert out["relabelled"] == []


def test_a_live_file_is_listed_never_written(tmp_path: Path):
    from tui_router.live import LiveSessionWriter
    from tui_router.session import Turn

    old, new = catalogs(tmp_path)
    writer = LiveSessionWriter(tmp_path / "live", catalog="gh")
    writer.append(Turn(message="open an issue", label="gh.create_issue"))
    writer.write_pending()
    writer.close()
    [live] = writer.files
    before = live.read_text(encoding="utf-8")
    code, stdout, _ = run("catalog", "diff", str(old), str(new), "--sessions", str(live), "--write")
    assert "(renamed)  [live file: never written]" in stdout and "relabelled" not in stdout
    assert live.read_text(encoding="utf-8") == before


def test_a_session_another_process_writes_is_not_touched(tmp_path: Path):
    old, new = catalogs(tmp_path)
    session = tmp_path / "labels.toml"
    session.write_text(SESSION, encoding="utf-8")
    diff = diff_catalogs(load_catalog(old), load_catalog(new))
    orphans = orphaned_turns(diff, [session])
    with holding_elsewhere(session), pytest.raises(SessionError, match="pid"):
        relabel(orphans)
    assert session.read_text(encoding="utf-8") == SESSION


def test_diff_refuses_write_without_sessions_and_a_bad_catalog(tmp_path: Path):
    old, new = catalogs(tmp_path)
    code, _, stderr = run("catalog", "diff", str(old), str(new), "--write")
    assert code == 2 and "--write relabels turns in --sessions" in stderr
    bad = tmp_path / "bad.toml"
    bad.write_text("name = 1\n", encoding="utf-8")
    code, stdout, stderr = run("catalog", "diff", str(old), str(bad))
    assert code == 2 and stdout == "" and "Traceback" not in stderr


# ---------------------------------------------------------------- import-mcp --update on real servers


def host(tmp_path: Path, github_role: str, gitlab: dict | None = None) -> Path:
    config = tmp_path / "host.json"
    env = {"TEAM_TOKEN": "${env:TEAM_SECRET}"}
    servers = {"github": stdio(github_role, env=env), "gitlab": gitlab or stdio("gitlab", env=env)}
    config.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    return config


def test_update_after_an_upgrade_then_write(tmp_path: Path):
    env = {"TEAM_SECRET": SECRET}
    catalog = tmp_path / "team.toml"
    code, _, stderr = run("catalog", "import-mcp", "--config", str(host(tmp_path, "github")), "--prefix", "github=gh", "--name", "team", "--out", str(catalog), env=env)
    assert code == 0, stderr
    # a person adds keywords to an imported tool; the eval set labels a tool
    text = catalog.read_text(encoding="utf-8").replace('id = "gh.create_issue"\n', 'id = "gh.create_issue"\nkeywords = ["bug report"]\n')
    catalog.write_text(text, encoding="utf-8")
    session = tmp_path / "labels.toml"
    session.write_text(SESSION, encoding="utf-8")

    config = host(tmp_path, "github2")  # the GitHub server was upgraded
    code, stdout, stderr = run("catalog", "import-mcp", "--config", str(config), "--update", str(catalog), "--sessions", str(session), env=env)
    assert code == 1, stderr
    lines = stdout.splitlines()
    assert lines[0] == f"{catalog} -> imported now: 1 added, 1 removed, 1 renamed, 1 changed"
    assert "  + gh.create_gist" in lines and "  - gh.get_file_contents" in lines  # the prefix gh kept without --prefix
    assert any(line.startswith("  ~ gh.create_issue -> gh.open_issue  (renamed: same schema") for line in lines)
    assert any(line.startswith("  * gh.search_repositories  when_to_use:") for line in lines)
    assert f'  {session} turn 1 "File a bug in acme/web: the login page is blank": label gh.create_issue -> gh.open_issue (renamed)' in lines
    assert lines[-1] == f"nothing was written; rerun with --write to replace {catalog} and relabel the renamed tools' turns"
    assert catalog.read_text(encoding="utf-8") == text and session.read_text(encoding="utf-8") == SESSION

    code, stdout, stderr = run("catalog", "import-mcp", "--config", str(config), "--update", str(catalog), "--sessions", str(session), "--write", env=env)
    assert code == 0, stderr
    assert f"wrote {catalog}: 8 options" in stdout and f"relabelled 2 turns in {session}" in stdout
    updated = load_catalog(catalog)
    assert updated.name == "team"
    assert [t.id for t in updated.tools] == ["gh.open_issue", "gh.search_repositories", "gh.create_gist", "gitlab.create_issue", "gitlab.search_repositories", "gitlab.create_merge_request", "ask_user", "human_review"]
    assert updated.get("gh.open_issue").keywords == ("bug report",)  # what the person added survives the rename
    assert load_session(session).turns[0].label == "gh.open_issue"
    # in step now
    code, stdout, _ = run("catalog", "import-mcp", "--config", str(config), "--update", str(catalog), env=env)
    assert code == 0 and stdout.strip() == f"{catalog} -> imported now: no tool added, removed, renamed or changed"


def test_update_keeps_the_tools_of_a_server_that_did_not_start(tmp_path: Path):
    env = {"TEAM_SECRET": SECRET}
    catalog = tmp_path / "team.toml"
    assert run("catalog", "import-mcp", "--config", str(host(tmp_path, "github")), "--out", str(catalog), env=env)[0] == 0
    broken = {"command": sys.executable, "args": ["-c", "import sys; sys.exit(5)"]}
    code, stdout, stderr = run("catalog", "import-mcp", "--config", str(host(tmp_path, "github", gitlab=broken)), "--update", str(catalog), "--write", env=env)
    assert "tui-router: server not imported: gitlab: stopped or failed before listing its tools" in stderr
    assert "  (kept) gitlab: did not start; its 3 tools are kept as they were" in stdout
    assert "  - gitlab" not in stdout  # not read as removed
    assert code == 0 and [t.id for t in load_catalog(catalog).tools][3:6] == ["gitlab.create_issue", "gitlab.search_repositories", "gitlab.create_merge_request"]


def test_update_of_a_single_server_catalog(tmp_path: Path):
    # a server command gets the SDK's minimal environment: what it needs goes on the command line
    server = ["env", f"TEAM_TOKEN={SECRET}", sys.executable, str(Path(__file__).parent / "servers" / "mcp_team_server.py")]
    catalog = tmp_path / "gh.toml"
    code, _, stderr = run("catalog", "import-mcp", "--out", str(catalog), "--", *server, "github")
    assert code == 0, stderr
    server.append("github2")
    code, stdout, _ = run("catalog", "import-mcp", "--update", str(catalog), "--", *server)
    assert code == 1 and "  ~ create_issue -> open_issue  (renamed: same schema, text" in stdout
    code, stdout, _ = run("catalog", "import-mcp", "--update", str(catalog), "--write", "--", *server)
    assert code == 0 and [t.id for t in load_catalog(catalog).tools] == ["open_issue", "search_repositories", "create_gist"]


def test_update_refusals(tmp_path: Path):
    catalog = tmp_path / "gh.toml"
    catalog.write_text('name = "x"\n[[tools]]\nid = "a"\nwhen_to_use = "A."\n', encoding="utf-8")
    for argv, expected in (
        (["--update", str(catalog)], "--update CATALOG needs where to import from"),
        (["--update", str(catalog), "--out", "x.toml", "--", "srv"], "leave out --out"),
        (["--update", str(catalog), "--name", "y", "--", "srv"], "keeps CATALOG's name"),
        (["--sessions", "s.toml", "--", "srv"], "--sessions goes with --update CATALOG"),
    ):
        code, _, stderr = run("catalog", "import-mcp", *argv)
        assert code == 2 and expected in stderr, (argv, stderr)


def test_update_ignores_the_prefix_of_a_tool_no_server_gives(tmp_path: Path):
    """Found: a tool a person added (category "handmade", id "handmade.note") made --update look for
    a server 'handmade' in the host configuration and stop."""
    env = {"TEAM_SECRET": SECRET}
    catalog = tmp_path / "team.toml"
    config = host(tmp_path, "github")
    assert run("catalog", "import-mcp", "--config", str(config), "--server", "github", "--out", str(catalog), env=env)[0] == 0
    text = catalog.read_text(encoding="utf-8")
    catalog.write_text(text + '\n[[tools]]\nid = "handmade.note"\nwhen_to_use = "Write a note by hand."\ncategory = "handmade"\n', encoding="utf-8")
    code, stdout, stderr = run("catalog", "import-mcp", "--config", str(config), "--server", "github", "--update", str(catalog), env=env)
    assert code == 1 and "Traceback" not in stderr, stderr
    assert stdout.splitlines()[:2] == [f"{catalog} -> imported now: 0 added, 1 removed, 0 renamed, 0 changed", "  - handmade.note"]
