"""CLI defects found by a QA pass that used the commands as a new user would."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest
from cli_harness import tui_router


def test_route_summary_of_an_unresolved_turn_says_there_is_no_answer(tmp_path: Path) -> None:
    # The summary printed "top options " and nothing after it when the server could not be reached.
    with socket.socket() as probe:  # a loopback port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = tmp_path / "tui-router.toml"
    config.write_text(
        f'backend = "systemone"\n[systemone]\nbase_url = "http://127.0.0.1:{port}/v1"\ntimeout = 2\nmax_retries = 0\nprobe = false\n',
        encoding="utf-8",
    )
    result = tui_router("route", "Text Jordan that the deploy finished.", env={"TUI_ROUTER_CONFIG": str(config), "XDG_CACHE_HOME": str(tmp_path / "cache")})
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    assert "band unresolved" in lines[0]
    assert "top options - (no answer)" in lines
    assert any(line.startswith("error       ") and "cannot connect" in line for line in lines)
    assert result.stderr.startswith("tui-router: unresolved: ")


def test_models_on_a_server_without_a_model_list_does_not_send_the_user_back_to_models(jev_mocks, tmp_path: Path) -> None:
    # A 404 on GET /models ("No route /v1/models") was read as "model not served" and the hint said
    # to pick a model from `tui-router models`, the very command that failed.
    env = {"TUI_ROUTER_CONFIG": str(tmp_path / "none.toml"), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    (tmp_path / "none.toml").write_text("", encoding="utf-8")
    result = tui_router("models", "--base-url", jev_mocks.url("models-404"), env=env)
    assert result.returncode == 2, result.stdout
    assert "HTTP 404" in result.stderr and "/models" in result.stderr
    assert "tui-router models" not in result.stderr
    assert "no model list there: check [systemone] base_url" in result.stderr
    # a model the server does not serve keeps its own hint
    routed = tui_router("route", "--backend", "systemone", "--base-url", jev_mocks.url("reject-jev-latest"), "Text Jordan.", env=env)
    assert routed.returncode == 1
    assert "does not serve model 'jev-latest'; pick one from `tui-router models`" in routed.stderr


def _in_a_terminal(args: Sequence[str], env: dict[str, str], columns: int = 80) -> tuple[int, str]:
    """Run tui-router with stdout and stderr on a pseudo-terminal `columns` wide: (exit code, output)."""
    import pty

    script = Path(sys.executable).parent / "tui-router"
    argv = [str(script)] if script.is_file() else [sys.executable, "-m", "tui_router.cli"]
    master, slave = pty.openpty()
    full = {**os.environ, "TERM": "xterm-256color", "COLUMNS": str(columns), "LINES": "50", **env}
    full.pop("NO_COLOR", None)
    process = subprocess.Popen([*argv, *args], stdout=slave, stderr=slave, stdin=subprocess.DEVNULL, env=full)
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    return process.wait(60), b"".join(chunks).decode("utf-8", "replace")


@pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pseudo-terminal")
def test_eval_tables_on_a_terminal_are_styled_not_printed_as_escapes(tmp_path: Path) -> None:
    # qa2: on a terminal rich's styling codes went through the CLI's control-character guard, so
    # `tui-router eval` showed "\x1b[1mSummary" and headers three lines tall at 80 columns.
    session = tmp_path / "s.toml"
    session.write_text(
        '[session]\nid = "s"\ncatalog = "demo"\n'
        '[[turns]]\nmessage = "Text Jordan \\u001b[31mthat the deploy finished."\nlabel = "delete_file"\n'
        '[[turns]]\nmessage = "Run the unit tests on the main branch"\nlabel = "run_tests"\n',
        encoding="utf-8",
    )
    (tmp_path / "none.toml").write_text("", encoding="utf-8")
    code, out = _in_a_terminal(["eval", str(session), "--backend", "bm25", "--errors", "5"], {"TUI_ROUTER_CONFIG": str(tmp_path / "none.toml")})
    assert code == 0
    assert "\\x1b[1m" not in out and "\\x1b[0m" not in out  # rich's codes are not shown as text
    assert "\x1b[1m" in out  # they style the titles
    assert "\x1b[31m" not in out  # the message's own escape never reaches the terminal
    assert "Text Jordan \\x1b[31mthat" in out  # it is shown, made visible


def test_replay_against_a_failing_server_says_why_the_turns_are_unresolved(jev_mocks, tmp_path: Path) -> None:
    # qa2: replay against a server that breaks the answer contract listed every turn as
    # "- (unresolved)" and "broken" with no reason anywhere, text or JSON.
    session = tmp_path / "s.toml"
    session.write_text(
        '[session]\nid = "s"\ncatalog = "demo"\n'
        '[[turns]]\nmessage = "Run the unit tests on the main branch"\nlabel = "run_tests"\n'
        '[turns.decision]\nchoice = "run_tests"\nband = "high"\naction = "execute"\noutcome = "proposed"\n'
        "[turns.decision.probabilities]\nrun_tests = 0.9\ndefer_to_llm = 0.1\n",
        encoding="utf-8",
    )
    config = tmp_path / "tui-router.toml"
    config.write_text(f'backend = "systemone"\n[systemone]\nbase_url = "{jev_mocks.url("choice-second")}"\nmax_retries = 0\nprobe = false\n', encoding="utf-8")
    env = {"TUI_ROUTER_CONFIG": str(config), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    text = tui_router("replay", "--headless", str(session), env=env)
    assert text.returncode == 1, text.stderr
    assert "- (unresolved)" in text.stdout
    flat = " ".join(text.stdout.split())  # the note folds at the table's width
    assert "1 turns unresolved now; the first, turn 1: " in flat
    assert "is not the most probable option" in flat
    data = tui_router("replay", "--headless", "--json", str(session), env=env)
    row = json.loads(data.stdout)["rows"][0]
    assert row["new_band"] == "unresolved" and "is not the most probable option" in row["new_error"]


def test_calibrate_that_refuses_to_write_still_shows_its_tables_in_order(tmp_path: Path) -> None:
    # qa2: with --write-config, a refusal (too few auto-executed turns to certify the target) printed
    # only "what-if: 0 of 0 routed turns ..." and an empty "band accuracy" heading above everything,
    # never the sweep that explains the refusal.
    data = Path(__file__).resolve().parent.parent / "benchmarks" / "data"
    config = tmp_path / "cfg.toml"
    original = 'backend = "local"\n# a comment the user keeps\n[policy]\nhigh = 0.8\n'
    config.write_text(original, encoding="utf-8")
    env = {"TUI_ROUTER_CONFIG": str(config)}
    args = ["calibrate", str(data / "opsdesk-cases.toml"), "--catalog", str(data / "opsdesk.toml"), "--write-config", str(config)]
    result = tui_router(*args, env=env)
    assert result.returncode == 2, result.stdout
    assert config.read_text(encoding="utf-8") == original  # nothing written
    assert "nothing was written" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    lines = result.stdout.splitlines()
    assert lines[0].startswith("calibrate: 155 labelled turns")
    assert any(line.startswith("Sweep: ") for line in lines) and any(line.startswith("Suggested thresholds") for line in lines)
    assert lines[-1] == "what-if: no turn has a recorded decision to re-band (hand-written cases); route them in the console or replay them first"
    assert not any("0 of 0" in line or line.strip().startswith("band accuracy") for line in lines)


def test_calibrate_says_where_the_comments_of_the_config_it_rewrote_went(tmp_path: Path) -> None:
    # qa2: --write-config dropped the config's comments (tomli-w cannot keep them) and kept them in
    # PATH.bak, but said nothing: the user saw only "wrote [policy] thresholds ... to PATH".
    import tomli_w

    from tui_router.catalog import load_catalog

    catalog = load_catalog("demo")
    turns = [{"message": ex, "label": t.id} for t in catalog.tools for ex in t.examples]
    cases = tmp_path / "cases.toml"
    cases.write_text(tomli_w.dumps({"session": {"id": "c", "catalog": "demo"}, "turns": turns}), encoding="utf-8")
    config = tmp_path / "cfg.toml"
    original = 'backend = "local"\n# why 0.8: agreed with the team\n[policy]\nhigh = 0.8\n'
    config.write_text(original, encoding="utf-8")
    env = {"TUI_ROUTER_CONFIG": str(config)}
    args = ["calibrate", str(cases), "--target-precision", "0.75", "--write-config", str(config)]
    result = tui_router(*args, env=env)
    assert result.returncode == 0, result.stderr
    backup = tmp_path / "cfg.toml.bak"
    assert backup.read_text(encoding="utf-8") == original
    assert f"its comments are not kept (the TOML writer drops them): the previous file, comments included, is {backup}" in result.stdout
    again = tui_router(*args, "--json", env=env)  # no comment left: no backup written, none named
    assert json.loads(again.stdout)["backup"] is None


@pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pseudo-terminal")
def test_queue_on_an_80_column_terminal_keeps_one_line_per_turn(tmp_path: Path) -> None:
    # qa2: `tui-router queue sessions/` printed rows of ~110 columns: at 80 every turn took two lines.
    from test_review import decided, write

    from tui_router.app.format import shorten_start

    folder = tmp_path / "sessions"
    folder.mkdir()
    long = "Find a slot when Ana and Li are both free next week for the quarterly planning review"
    path = write(folder / "2026-12-01T00-34-30-2a0baf.toml", [decided(long, {"find_free_time": 0.6, "list_events": 0.4}), decided("Tell me a joke", {"defer_to_llm": 0.9, "create_event": 0.1})])
    (tmp_path / "none.toml").write_text("", encoding="utf-8")
    code, out = _in_a_terminal(["queue", str(folder)], {"TUI_ROUTER_CONFIG": str(tmp_path / "none.toml")})
    assert code == 0, out
    lines = out.replace("\r\n", "\n").strip().splitlines()
    assert lines[0] == "queue: 2 unlabelled turns in 1 file, least certain first"
    assert len(lines) == 4 and all(len(line) <= 80 for line in lines), lines
    assert lines[2].startswith(shorten_start(str(path), 16) + "  1 ")  # the end of the name, where files differ
    assert "Find a slot when" in lines[2] and lines[2].endswith("…")
    assert lines[3].endswith("Tell me a joke")
    piped = tui_router("queue", str(folder), env={"TUI_ROUTER_CONFIG": str(tmp_path / "none.toml")})
    assert str(path) in piped.stdout  # piped to a program: whole file names, as before


def test_replay_on_a_catalog_where_a_labelled_tool_was_renamed_says_what_to_do(tmp_path: Path) -> None:
    # qa2: after renaming run_tests, replay said only "label 'run_tests' is not an option ...
    # (did you mean 'run_test_suite'?)", which reads like a typo in the session.
    import tomllib

    import tomli_w

    from tui_router.resources import bundled_catalogs

    data = tomllib.loads(bundled_catalogs()["demo"].read_text(encoding="utf-8"))
    data["tools"] = [dict(t, id="run_test_suite") if t["id"] == "run_tests" else t for t in data["tools"]]
    catalog = tmp_path / "renamed.toml"
    catalog.write_text(tomli_w.dumps(data), encoding="utf-8")
    session = tmp_path / "s.toml"
    text = '[session]\nid = "s"\ncatalog = "demo"\n[[turns]]\nmessage = "Run the unit tests on the main branch"\nlabel = "run_tests"\n'
    session.write_text(text, encoding="utf-8")
    (tmp_path / "none.toml").write_text("", encoding="utf-8")
    env = {"TUI_ROUTER_CONFIG": str(tmp_path / "none.toml")}
    # replayj: replay runs and names the rename; eval has nothing left to score (exit 2, one sentence)
    replayed = tui_router("replay", "--headless", str(session), "--catalog", str(catalog), "--backend", "bm25", env=env)
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stderr.strip().splitlines() == [
        "tui-router: note: 1 labelled turn replayed but not scored: its label is not an option of catalog 'demo': "
        "run_tests (1) (did you mean 'run_test_suite'?) (--strict refuses instead)"
    ]
    scored = tui_router("eval", str(session), "--catalog", str(catalog), "--backend", "bm25", env=env)
    assert scored.returncode == 2 and scored.stderr.strip().splitlines() == [
        f"tui-router: no labelled turn in {session} has a label that is an option of catalog 'demo' (run_tests (1)); "
        "pass --catalog with the catalog they were labelled for"
    ]
    for command in (("replay", "--headless", "--strict"), ("eval", "--strict")):
        result = tui_router(*command, str(session), "--catalog", str(catalog), "--backend", "bm25", env=env)
        assert result.returncode == 2 and "Traceback" not in result.stderr
        lines = result.stderr.strip().splitlines()
        assert lines[0].endswith("label 'run_tests' is not an option of catalog 'demo' (did you mean 'run_test_suite'?)")
        assert lines[1] == (
            "tui-router: if the catalog changed since these turns were labelled, relabel them in the console "
            "(tui-router open SESSION, then l on each) or pass --catalog with the catalog they were labelled for"
        )
    assert session.read_text(encoding="utf-8") == text


def test_eval_markdown_never_overwrites_the_session_it_measures(tmp_path: Path) -> None:
    # qa2: `tui-router eval s1.toml --markdown s1.toml` replaced the labelled session with the report.
    session = tmp_path / "s1.toml"
    text = '[session]\nid = "s"\ncatalog = "demo"\n[[turns]]\nmessage = "Run the unit tests on the main branch"\nlabel = "run_tests"\n'
    session.write_text(text, encoding="utf-8")
    config = tmp_path / "tui-router.toml"
    config.write_text('backend = "bm25"\n', encoding="utf-8")
    env = {"TUI_ROUTER_CONFIG": str(config)}
    for target in (session, tmp_path / "sub" / ".." / "s1.toml", config):
        (tmp_path / "sub").mkdir(exist_ok=True)
        result = tui_router("eval", str(session), "--markdown", str(target), env=env)
        assert result.returncode == 2 and result.stdout == ""
        assert result.stderr.strip() == (
            f"tui-router: --markdown {target}: that is a TOML file (a session or config), not a report; nothing was written. Name a .md file"
        )
    assert session.read_text(encoding="utf-8") == text and config.read_text(encoding="utf-8") == 'backend = "bm25"\n'
    report = tmp_path / "report.md"
    assert tui_router("eval", str(session), "--markdown", str(report), env=env).returncode == 0
    assert report.read_text(encoding="utf-8").startswith("## Eval: s1.toml on catalog `demo`")


def test_replay_diff_says_whether_the_choice_or_only_the_band_changed(tmp_path: Path) -> None:
    # qa2: the Diff column said "changed" for a new choice and for the same choice in another band.
    session = tmp_path / "s.toml"
    session.write_text(
        '[session]\nid = "s"\ncatalog = "demo"\n'
        '[[turns]]\nmessage = "Run the unit tests on the main branch"\n'
        '[turns.decision]\nchoice = "run_tests"\nband = "high"\naction = "execute"\noutcome = "proposed"\n'
        "[turns.decision.probabilities]\nrun_tests = 0.9\ndefer_to_llm = 0.1\n"
        '[[turns]]\nmessage = "Export the sales table to CSV"\n'
        '[turns.decision]\nchoice = "import_csv"\nband = "low"\naction = "fallback"\noutcome = "pending"\n'
        "[turns.decision.probabilities]\nimport_csv = 0.4\ndefer_to_llm = 0.6\n",
        encoding="utf-8",
    )
    config = tmp_path / "tui-router.toml"
    config.write_text('backend = "local"\n[policy]\nhigh = 1.0\nmedium = 0.0\n', encoding="utf-8")  # every turn: medium
    result = tui_router("replay", "--headless", str(session), env={"TUI_ROUTER_CONFIG": str(config)})
    assert result.returncode == 0, result.stderr
    rows = [line for line in result.stdout.splitlines() if line.startswith("│ ")]
    assert "run_tests (high)" in rows[0] and "run_tests (medium)" in rows[0] and rows[0].rstrip(" │").endswith("│ band")
    assert "export_csv (medium)" in rows[1] and rows[1].rstrip(" │").endswith("│ flip band")
    assert "changed │" not in result.stdout
