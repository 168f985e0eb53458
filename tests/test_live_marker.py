"""A live file is the MCP server's recording by what the server writes into it (`live = true` in
[session], or an older server's own header), not by its name alone: a person's session saved as
`mcp-2026-11-30.toml` is an ordinary session (written by the console, labelled, counted in scans)."""

from __future__ import annotations

import json
import tomllib
from datetime import UTC, datetime
from pathlib import Path

import pytest
from app_harness import make_app, make_config, notifications, settle
from cli_harness import tui_router

from tui_router.live import LiveSessionWriter
from tui_router.review import Review
from tui_router.session import Turn, is_live_file, load_session
from tui_router.storage import release_session_file, write_session_text

TURN = '\n[[turns]]\nmessage = "text Jordan that the deploy finished"\nat = "2026-11-30T10:05:00Z"\n'
LABELLED = TURN + 'label = "send_sms"\n'
MINE = '[session]\nid = "my-labels"\ncatalog = "demo"\ncreated = "2026-11-30T09:00:00Z"\n'


@pytest.mark.parametrize(
    ("name", "text", "live"),
    [
        ("mcp-2026-11-30.toml", '[session]\nid = "mcp-2026-11-30"\nlive = true\n' + TURN, True),  # this server
        ("mcp-2026-11-30-2.toml", '[session]\nid = "x"\nlive = true\n', True),  # moved or renamed: still marked
        ("mcp-2026-11-30.toml", '[session]\nid = "mcp-2026-11-30"\ncatalog = "demo"\ncreated = "2026-11-30T10:00:00Z"\n' + TURN, True),  # an older server's header
        ("mcp-2026-11-30.toml", '[session]\nid = "mcp-2026-11-30"\ncreated = 2026-11-30T10:00:00Z\n', True),  # TOML date-time
        ("mcp-2026-11-30.toml", "", True),  # reserved by the server, nothing written yet
        ("mcp-2026-11-30.toml", MINE + TURN, False),  # a person's session saved under that name
        ("mcp-2026-11-30.toml", TURN, False),  # a hand-written eval file
        ("mcp-2026-11-30.toml", '[session]\nid = "mcp-2026-11-30"\n' + TURN, False),  # id = name, nothing of the server's
        ("mcp-2026-11-30.toml", '[session]\nid = "mcp-2026-11-30"\ncreated = "2026-12-01T00:00:01Z"\n', False),  # another day
        ("mcp-2026-11-30.toml", '[session]\nid = "mcp-2026-11-30"\nlive = false\ncreated = "2026-11-30T10:00:00Z"\n', False),
        ("mcp-2026-11-30.toml", "[session\nlive = true\n", False),  # broken: the reader says why
        ("my-labels.toml", '[session]\nid = "my-labels"\nlive = true\n', False),  # not a live file's name
    ],
)
def test_a_live_file_is_known_by_its_name_and_what_the_server_wrote(tmp_path: Path, name: str, text: str, live: bool) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    assert is_live_file(path) is live


def test_a_missing_file_is_not_live(tmp_path: Path) -> None:
    assert not is_live_file(tmp_path / "mcp-2026-11-30.toml")


def test_the_server_marks_its_files_and_they_read_back_as_live(tmp_path: Path) -> None:
    clock = lambda: datetime(2026, 11, 30, 10, 0, tzinfo=UTC)  # noqa: E731
    writer = LiveSessionWriter(tmp_path, catalog="demo", backend="bm25", clock=clock)
    path = writer.append(Turn(message="hello", at="2026-11-30T10:00:00Z"))
    assert writer.write_pending() == 1
    writer.close()
    assert path.name == "mcp-2026-11-30.toml"
    assert tomllib.loads(path.read_text(encoding="utf-8"))["session"]["live"] is True
    assert is_live_file(path) and load_session(path).session.live is True
    # a live file is still refused by the console's writer
    with pytest.raises(Exception, match="is a live file the MCP server records"):
        write_session_text(path, '[session]\nid = "x"\n')


def test_a_session_named_like_a_live_file_is_written_and_labelled_like_any_other(tmp_path: Path) -> None:
    mine = tmp_path / "mcp-2026-11-30.toml"
    mine.write_text(MINE + TURN, encoding="utf-8")
    write_session_text(mine, MINE + LABELLED)  # was: "the console never writes a live file"
    assert load_session(mine).turns[0].label == "send_sms"
    release_session_file(mine)  # as a console does when it closes
    mine.write_text(MINE + TURN, encoding="utf-8")
    review = Review.of_files([mine], reviewer="ana")
    assert [e.file for e in review.entries] == [mine]
    review.set_label("send_sms")  # was refused: "a live file ... nothing was written to it"
    assert load_session(mine).turns[0].label == "send_sms"


def test_a_folder_scan_counts_the_turns_of_a_file_merely_named_like_a_live_one(tmp_path: Path) -> None:
    # the same turn in two of a person's files is one turn (a copy), counted from the first file that
    # is not live; the mcp-named one is a person's, so it is that file (before, it was dropped as the
    # live original of a followed copy)
    (tmp_path / "none.toml").write_text("", encoding="utf-8")
    env = {"TUI_ROUTER_CONFIG": str(tmp_path / "none.toml"), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    folder = tmp_path / "sessions"
    folder.mkdir()
    (folder / "mcp-2026-11-30.toml").write_text(MINE + LABELLED, encoding="utf-8")
    (folder / "other.toml").write_text(MINE.replace("my-labels", "other") + LABELLED, encoding="utf-8")
    evaluated = tui_router("eval", str(folder), "--backend", "bm25", "--json", env=env)
    assert evaluated.returncode == 0, evaluated.stderr
    report = json.loads(evaluated.stdout)
    assert report["n"] == 1 and Path(report["turns"][0]["source"]).name == "mcp-2026-11-30.toml"
    # marked as the server's, the same file is the live original: its turn counts once, from the copy
    (folder / "mcp-2026-11-30.toml").write_text('[session]\nid = "mcp-2026-11-30"\nlive = true\n' + LABELLED, encoding="utf-8")
    again = tui_router("eval", str(folder), "--backend", "bm25", "--json", env=env)
    assert again.returncode == 0, again.stderr
    report = json.loads(again.stdout)
    assert report["n"] == 1 and Path(report["turns"][0]["source"]).name == "other.toml"


async def test_the_console_opens_saves_and_does_not_follow_a_file_merely_named_like_a_live_one(tmp_path: Path) -> None:
    from tui_router.app.follow import live_files_in

    config = make_config(tmp_path)
    mine = tmp_path / "mcp-2026-11-30.toml"
    mine.write_text(MINE + LABELLED, encoding="utf-8")
    app = make_app(config)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        app.open_session_file(str(mine))  # was: followed into a new session, as a live file
        await settle(app, pilot)
        assert app.follow_path is None and app.session.path == mine and len(app.session.turns) == 1
        assert notifications(app)[-1].startswith("Opened ") and notifications(app)[-1].endswith("(1 turns).")
        # "save as" a live file's name (no such file yet) makes an ordinary session file
        target = app.save_as("mcp-2026-12-01")
        await settle(app, pilot)
        assert target == config.sessions_path / "mcp-2026-12-01.toml" and app.session.path == target
        assert load_session(target).turns[0].label == "send_sms" and not is_live_file(target)
        await pilot.press("q")
    # a folder followed for live files leaves it out
    (config.sessions_path / "mcp-2026-11-30.toml").write_text("", encoding="utf-8")  # the server's, reserved
    assert [p.name for p in live_files_in(config.sessions_path)] == ["mcp-2026-11-30.toml"]
