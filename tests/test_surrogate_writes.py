"""Lone surrogates reaching a session (a Python string can hold them: undecodable argv bytes, a
JSON "\\ud800" escape) are written as U+FFFD by every session writer instead of failing the write
with UnicodeEncodeError; a surrogate pair is written as the character it stands for."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from tui_router import tomlio
from tui_router.live import LiveSessionWriter
from tui_router.session import Session, SessionInfo, Turn, atomic_write_text, dumps_session, load_session, save_session
from tui_router.workspace import Workspace

LONE = "bad \ud800 byte and \udc80 escape"  # high alone; a surrogateescape'd 0x80
PAIR = "smile \ud83d\ude00 please"  # a high-low pair: one character (U+1F600)


def _session() -> Session:
    return Session(
        session=SessionInfo(id="s\udcff", created="2026-12-01T00:00:00Z"),
        turns=[Turn(message=LONE, tags=["client:\ud801"], label="send_sms"), Turn(message=PAIR)],
    )


def test_replace_surrogates() -> None:
    assert tomlio.replace_surrogates(LONE) == "bad \ufffd byte and \ufffd escape"
    assert tomlio.replace_surrogates(PAIR) == "smile \U0001f600 please"
    assert tomlio.replace_surrogates("\udc00\ud800") == "\ufffd\ufffd"  # low then high is no pair
    text = "plain ✓ text"
    assert tomlio.replace_surrogates(text) is text  # no copy when there is nothing to replace


def test_save_session_writes_lone_surrogates_as_replacement_characters(tmp_path: Path) -> None:
    path = save_session(_session(), tmp_path / "s.toml")
    back = load_session(path)
    assert back.id == "s\ufffd"
    assert [t.message for t in back.turns] == ["bad \ufffd byte and \ufffd escape", "smile \U0001f600 please"]
    assert back.turns[0].tags == ["client:\ufffd"] and back.turns[0].label == "send_sms"
    assert path.read_bytes().decode("utf-8")  # valid UTF-8 throughout
    dumped = dumps_session(_session())
    assert "\ud800" not in dumped and dumped.encode("utf-8")


def test_atomic_write_text_replaces_them_too(tmp_path: Path) -> None:
    atomic_write_text(tmp_path / "out.txt", LONE + "\n")
    assert (tmp_path / "out.txt").read_text(encoding="utf-8") == "bad \ufffd byte and \ufffd escape\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]  # no temp file left


def test_the_console_workspace_saves_a_turn_holding_one(tmp_path: Path) -> None:
    clock = lambda: datetime(2026, 12, 1, tzinfo=UTC)  # noqa: E731
    workspace = Workspace(None, tmp_path, clock=clock, session_id="console")
    workspace.add_turn(LONE)
    assert workspace.write(workspace.snapshot(0))  # the autosave path (turn texts cached)
    assert [t.message for t in load_session(workspace.path).turns] == ["bad \ufffd byte and \ufffd escape"]
    workspace.add_turn(PAIR)
    workspace.save_now()  # the quit / save-as path
    assert [t.message for t in load_session(workspace.path).turns] == ["bad \ufffd byte and \ufffd escape", "smile \U0001f600 please"]
    workspace.close()


def test_the_live_writer_records_a_turn_holding_one(tmp_path: Path) -> None:
    writer = LiveSessionWriter(tmp_path, catalog="demo", clock=lambda: datetime(2026, 12, 1, tzinfo=UTC))
    path = writer.append(Turn(message=LONE, at="2026-12-01T00:00:00Z", tags=["client:\ud800"]))  # sized as UTF-8: raised before
    # a turn of a message alone: tomli_w writes it inline (`turns = [...]`), which after the
    # [session] header read back as session.turns, so the turn was lost; now a [[turns]] table
    writer.append(Turn(message=PAIR))
    assert writer.write_pending() == 1
    writer.close()
    assert path.name == "mcp-2026-12-01.toml"
    turns = load_session(path).turns
    assert [t.message for t in turns] == ["bad \ufffd byte and \ufffd escape", "smile \U0001f600 please"]
    assert turns[0].tags == ["client:\ufffd"] and turns[0].at == "2026-12-01T00:00:00Z"


def test_an_imported_catalog_holding_one_is_written_as_utf8(tmp_path: Path) -> None:
    from tui_router.catalog import parse_catalog
    from tui_router.mcp_import import ImportResult, check_loads_back

    data = {"name": "srv", "tools": [{"id": "echo", "when_to_use": "says \ud800 back"}]}
    result = ImportResult(catalog=parse_catalog({"name": "srv", "tools": [{"id": "echo", "when_to_use": "says back"}]}), data=data)
    text = result.toml(source="srv \udc80")
    # in a comment it is shown as its escape, as a control character is (textsafe.visible)
    assert 'when_to_use = "says \ufffd back"' in text and "# Server command: srv \\udc80" in text
    check_loads_back(text)
    (tmp_path / "c.toml").write_text(text, encoding="utf-8")  # raised UnicodeEncodeError before
