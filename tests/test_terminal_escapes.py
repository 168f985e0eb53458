"""Issue 14 item 1: control characters from untrusted text never reach the terminal.

Catalog texts, session messages and errors, fallback output and stderr, server error texts: the
console (real app, Pilot) and the CLI (real subprocesses, stdout and stderr) show them as `\\x1b`
style escapes."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest
from app_harness import make_app, make_config, notifications, settle
from cli_harness import tui_router
from rich.console import Console
from servers.hostile import ESCAPES, HostileServer

from tui_router.session import Session, SessionInfo, Turn, TurnDecision, save_session
from tui_router.textsafe import VisibleStream, escape_for_data, is_safe, visible

# What ESCAPES must look like once made visible.
SHOWN = "\\x1b]0;PWNED\\x07\\x1b[2J\\x1b[31mred\\x9b31m\\u202eevil"
RAW = ("\x1b]", "\x07", "\x1b[2J", "\x1b[31mred", "\x9b", "\u202e")


# ---------------------------------------------------------------- the function


def test_visible_shows_every_kind_of_control_character():
    assert visible(ESCAPES) == SHOWN
    assert visible("a\r\nb\tc\x00\x7f\x85\u2028\u2066\u200f") == "a\\x0d\nb\tc\\x00\\x7f\\x85\\u2028\\u2066\\u200f"
    assert visible("line one\nline two\ttab") == "line one\nline two\ttab"  # layout kept
    assert visible("two\nlines\t!", single_line=True) == "two\\x0alines\\x09!"
    assert visible("café 東京 [bold]x[/] 🙂") == "café 東京 [bold]x[/] 🙂"  # ordinary text untouched
    assert visible(visible(ESCAPES)) == visible(ESCAPES)
    assert is_safe(visible(ESCAPES)) and not is_safe(ESCAPES)


def test_data_escaping_keeps_a_json_document_valid_and_equal():
    document = json.dumps({"error": ESCAPES, "del": "\x7f"}, ensure_ascii=False)
    assert "\x9b" in document and "\u202e" in document  # json.dumps leaves C1 and bidi raw
    safe = escape_for_data(document)
    assert is_safe(safe)
    assert json.loads(safe) == {"error": ESCAPES, "del": "\x7f"}


def test_the_stream_wrapper_escapes_whatever_is_written():
    out = io.StringIO()
    stream = VisibleStream(out)
    print("err:", ESCAPES, file=stream)  # type: ignore[arg-type]
    assert out.getvalue() == f"err: {SHOWN}\n"


# ---------------------------------------------------------------- the console


def terminal_output(app) -> str:
    """What the console would write to the terminal for a full repaint: the real escape stream."""
    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), force_terminal=True, color_system="truecolor", legacy_windows=False)
    update = app.screen._compositor.render_update(full=True, screen_stack=app._background_screens, simplify=True)
    return update.render_segments(console)


def plain_text(app) -> str:
    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), force_terminal=True, record=True, legacy_windows=False)
    console.print(app.screen._compositor.render_update(full=True, screen_stack=app._background_screens, simplify=True))
    return console.export_text()


def assert_no_raw_escapes(app) -> str:
    out = terminal_output(app)
    for raw in RAW:
        assert raw not in out, f"{raw!r} reached the terminal"
    return out


async def test_console_shows_hostile_catalog_session_and_fallback_text_escaped(tmp_path: Path):
    catalog = tmp_path / "hostile.toml"
    catalog.write_text(
        'name = "hostile"\n'
        "[[tools]]\n"
        'id = "a_tool"\n'
        f"when_to_use = {json.dumps('Use it. ' + ESCAPES)}\n"
        f"examples = [{json.dumps('ex ' + ESCAPES)}]\n"
        "[[tools]]\n"
        'id = "b_tool"\n'
        'when_to_use = "Another tool."\n',
        encoding="utf-8",
    )
    script = tmp_path / "hostile_llm.py"
    script.write_text(
        "import sys\n"
        f"sys.stdout.write('answer ' + {ESCAPES!r} + '\\n')\n"
        f"sys.stderr.write('trouble ' + {ESCAPES!r} + '\\n')\n"
        "sys.exit(1)\n",
        encoding="utf-8",
    )
    config = make_config(tmp_path, fallback={"command": [sys.executable, str(script)], "timeout": 10.0})
    config = config.model_copy(update={"catalog": str(catalog)})
    session = Session(
        session=SessionInfo(id="hostile", catalog="hostile"),
        turns=[
            Turn(
                message="hello " + ESCAPES,
                label="a_tool",
                decision=TurnDecision(candidates=["a_tool"], band="unresolved", action="fallback", outcome="pending", error="server said " + ESCAPES),
            )
        ],
    )
    path = save_session(session, tmp_path / "hostile-session.toml")
    from tui_router.session import load_session

    app = make_app(config, session=load_session(path))
    async with app.run_test(size=(140, 45)) as pilot:
        await settle(app, pilot)
        assert app.session.turns[0].message == "hello " + ESCAPES  # kept as it came: only the display escapes
        assert_no_raw_escapes(app)
        text = plain_text(app)
        assert "message hello \\x1b]0;PWNED\\x07" in text  # the turn detail
        assert "error server said \\x1b]0;PWNED" in text
        assert "hello \\x1b]0;PWNED\\x07\\x1b[2J" in text  # the decision log's row
        assert "│ Use it. " in text  # the catalog pane's detail of the first tool
        # the catalog detail (when_to_use and an example), the distribution's error, log and detail
        assert text.count("\\x1b]0;PWNED\\x07") >= 6

        await pilot.press("escape", "f")  # the fallback: output and stderr carry escapes, exit 1
        await settle(app, pilot)
        record = app.session.turns[0].fallback
        assert record is not None and record.output == f"answer {ESCAPES}\n"
        assert any("trouble \\x1b]0;PWNED" in n for n in notifications(app))
        assert_no_raw_escapes(app)
        assert "exited with code 1: trouble \\x1b]0;PWNED\\x07" in plain_text(app)

        await pilot.press("enter")  # the whole output, on its own screen
        await pilot.pause()
        assert type(app.screen).__name__ == "FallbackOutputScreen"
        assert_no_raw_escapes(app)
        shown = plain_text(app)
        assert "answer \\x1b]0;PWNED\\x07\\x1b[2J" in shown and "trouble \\x1b]0;PWNED" in shown


# ---------------------------------------------------------------- the CLI


@pytest.fixture(scope="module")
def escaping_server():
    with HostileServer("escapes") as server:
        server.status = 400
        yield server


@pytest.fixture()
def cli_env(tmp_path, escaping_server):
    config = tmp_path / "tui-router.toml"
    config.write_text(f'backend = "systemone"\n[systemone]\nbase_url = "{escaping_server.base_url}"\nprobe = false\ntimeout = 10\n')
    return {"TUI_ROUTER_CONFIG": str(config), "XDG_CACHE_HOME": str(tmp_path / "cache")}


def test_cli_route_shows_a_server_error_with_escapes_made_visible(cli_env):
    done = tui_router("route", "hello " + ESCAPES, env=cli_env)
    assert done.returncode == 1
    assert "busy " + SHOWN + " now" in done.stderr  # the unresolved line on stderr
    assert "busy " + SHOWN in done.stdout  # the summary's error line
    for raw in RAW:
        assert raw not in done.stdout and raw not in done.stderr


def test_cli_route_json_stays_valid_and_carries_the_text_escaped(cli_env):
    done = tui_router("route", "--json", "hello " + ESCAPES, env=cli_env)
    assert done.returncode == 1
    for raw in RAW:
        assert raw not in done.stdout and raw not in done.stderr
    decision = json.loads(done.stdout)
    assert f"busy {ESCAPES} now" in decision["error"]  # the JSON value is the real text


def test_cli_models_shows_hostile_model_names_escaped(cli_env):
    done = tui_router("models", env=cli_env)
    assert done.returncode == 0, done.stderr
    assert "jev" + SHOWN in done.stdout
    for raw in RAW:
        assert raw not in done.stdout


def test_cli_text_from_a_hostile_catalog_is_shown_escaped(tmp_path):
    catalog = tmp_path / "hostile.toml"
    catalog.write_text(f'name = {json.dumps("cat" + ESCAPES)}\n[[tools]]\nid = "a_tool"\nwhen_to_use = "Do a thing."\n', encoding="utf-8")
    done = tui_router("catalog", "validate", str(catalog), env={})
    assert done.returncode == 0, done.stderr
    assert f"catalog 'cat{SHOWN}'" in done.stdout
    for raw in RAW:
        assert raw not in done.stdout and raw not in done.stderr
