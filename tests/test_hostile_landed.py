"""Hostile input against what landed on 2026-12-01: catalog validate's advice on a hostile catalog,
the short-API-key scrubber, copied-file detection, invisible-only messages and BOMs.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import threading
from pathlib import Path

from cli_harness import tui_router
from hypothesis import given, settings
from hypothesis import strategies as st

from tui_router.catalog import authoring_warnings, load_catalog


def env(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "empty.toml").write_text("", encoding="utf-8")
    return {"TUI_ROUTER_CONFIG": str(tmp_path / "empty.toml"), "XDG_CACHE_HOME": str(tmp_path / "cache")}


def _catalog(tmp_path: Path, texts: list[str], name: str = "hostile.toml") -> Path:
    lines = ['name = "hostile"', ""]
    for i, text in enumerate(texts):
        lines += ["[[tools]]", f'id = "tool_{i}"', f"when_to_use = {json.dumps(text)}", 'risk = "read"', ""]
    path = tmp_path / name
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


# -- catalog validate's advice ----------------------------------------------------------------------


def test_many_copies_of_one_tool_text_are_one_near_duplicate_line_each(tmp_path: Path) -> None:
    # 10,000 copies of one when_to_use were 640,000 lines (each tool paired with up to 64 earlier
    # ones) and 11 s; one line per tool naming the first, and saying there are others
    path = _catalog(tmp_path, ["Send a message to the team about the project report"] * 300)
    warnings = [w for w in authoring_warnings(load_catalog(str(path))) if "have the same when_to_use" in w]
    assert len(warnings) == 299
    assert all("and tools[0] (id 'tool_0')" in w for w in warnings), warnings[:3]
    assert "tools[1] (id 'tool_1') and tools[0] (id 'tool_0') have the same when_to_use: the router" in warnings[0]
    assert "tools[2] (id 'tool_2') and tools[0] (id 'tool_0') have the same when_to_use (and other earlier tools like it)" in warnings[1]


def test_the_closest_earlier_tool_is_the_one_named(tmp_path: Path) -> None:
    base = "alpha beta gamma delta epsilon zeta eta theta iota kappa"
    path = _catalog(tmp_path, [base + " lambda mu", base + " omicron", base])
    warnings = [w for w in authoring_warnings(load_catalog(str(path))) if w.count("tools[") == 2 and "tools[2]" in w]
    # tools[2] shares 10 of 11 words with tools[1] and 10 of 12 with tools[0]: tools[1] is the closer
    assert len(warnings) == 1 and "tools[2] (id 'tool_2') and tools[1] (id 'tool_1')" in warnings[0], warnings


def test_advice_lines_hold_control_characters_as_escapes(tmp_path: Path) -> None:
    path = tmp_path / "ctl.toml"
    text = "Send \\u001b[31mred\\u001b[0m text \\u202e now to the team"
    example = "ring \\u0007 bell \\u202e x"
    path.write_text(
        'name = "ctl"\n'
        f'[[tools]]\nid = "a_tool"\nwhen_to_use = "{text}"\nrisk = "read"\nexamples = ["{example}"]\n'
        f'[[tools]]\nid = "b_tool"\nwhen_to_use = "{text}"\nrisk = "read"\nexamples = ["{example}"]\n',
        encoding="utf-8",
    )
    done = tui_router("catalog", "validate", str(path), env=env(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "the example 'ring \\x07 bell \\u202e x' is also one of tools[0]" in done.stderr
    assert not any(ch in done.stderr + done.stdout for ch in "\x1b\x07\u202e")


# -- the API-key scrubber ---------------------------------------------------------------------------

# texts made of the characters keys, markers and error texts share, so the search meets the edges
_TEXT = st.text(alphabet="[redactd]-_ .=aeQ1\n\u00e9", max_size=60)
_KEY = st.text(alphabet="[redactd]-_ .=aeQ1\u00e9", min_size=1, max_size=24).map(str.strip).filter(bool)


def _whole_word(key: str, text: str) -> bool:
    return re.search(r"(?<![\w-])" + re.escape(key) + r"(?![\w-])", text) is not None


@settings(max_examples=400, deadline=None)
@given(key=_KEY, before=_TEXT, after=_TEXT, echoes=st.integers(0, 3))
def test_the_scrubbed_text_never_shows_a_long_key_nor_a_short_one_as_a_word(key: str, before: str, after: str, echoes: int) -> None:
    from tui_router.decide.systemone.client import WHOLE_WORD_KEY_CHARS, redactor

    text = before + f" {key} " * echoes + after
    scrubbed = redactor(key)(text)
    if len(key) >= WHOLE_WORD_KEY_CHARS:
        assert key not in scrubbed
    else:
        assert not _whole_word(key, scrubbed)


def test_a_key_that_the_marker_or_the_marker_and_its_neighbours_spell_is_still_scrubbed() -> None:
    from tui_router.decide.systemone.client import redactor

    # "[redacted]" put for the key "redacted" showed the key; a long key "[redacted]" + tail came
    # back whole from "[redacted]" + tail + tail
    assert redactor("redacted")("key redacted refused") == "key [hidden] refused"
    key = "[redacted]abcdefgh"
    assert key not in redactor(key)(f"x {key}abcdefgh")
    # regex metacharacters, option ids and unicode are literal words
    assert redactor("a+b(")("a+b( aab(") == "[redacted] aab("
    assert redactor("send_sms")("choice send_sms, not send_sms_now") == "choice [redacted], not send_sms_now"
    assert redactor("clé")("la clé, clés") == "la [redacted], clés"


def test_a_key_an_error_text_is_cut_at_is_scrubbed_before_the_cut(tmp_path: Path) -> None:
    # httpx quotes a bad status line; the reason was cut at 160 characters, then scrubbed: the cut
    # left the key's first 18 characters, which the scrubber no longer matched
    from tui_router.config import config_from_dict
    from tui_router.decide.systemone.client import SystemOneClient

    key = "sk-" + "Q7" * 15
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()

    def serve() -> None:
        with contextlib.suppress(OSError):
            conn, _ = listener.accept()
            with conn:
                conn.recv(65536)
                conn.sendall(b"HTTP/1.1 2x0 " + b"y" * 95 + key.encode() + b"\r\nContent-Length: 0\r\n\r\n")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    os.environ["TR_HOSTILE_KEY"] = key
    try:
        port = listener.getsockname()[1]
        cfg = config_from_dict({"systemone": {"base_url": f"http://127.0.0.1:{port}/v1", "api_key_env": "TR_HOSTILE_KEY", "max_retries": 0}})
        client = SystemOneClient(cfg.systemone)
        try:
            reply = client.run_sync(client.get_json("/models"))
        finally:
            client.close()
    finally:
        del os.environ["TR_HOSTILE_KEY"]
        listener.close()
        thread.join(5)
    assert "the server broke off its reply (illegal status line" in reply.error
    assert "[redacted]" in reply.error
    assert key[:6] not in reply.error, reply.error


# -- the console's catalog watch ----------------------------------------------------------------------

PETSHOP = """\
name = "petshop"

[[tools]]
id = "book_grooming"
when_to_use = "Book a grooming appointment (bath, haircut, nails) for a pet."
risk = "write"
examples = ["Book a bath for my dog on Saturday"]

[[tools]]
id = "order_food"
when_to_use = "Order pet food or treats for home delivery."
risk = "payment"
"""
TRACK = '\n[[tools]]\nid = "track_order"\nwhen_to_use = "Say where a placed order is."\nrisk = "read"\n'


async def _settle_failing(app, pilot) -> None:  # noqa: ANN001 (the Textual app and its pilot)
    """settle, for a reload that fails in its worker (as it should: the notification says why)."""
    from textual.worker import WorkerFailed

    for _ in range(2):
        with contextlib.suppress(WorkerFailed):
            await app.workers.wait_for_complete()
        await pilot.pause()


def _petshop_console(tmp_path: Path):  # noqa: ANN202 ((catalog path, RouterConsole), imported lazily)
    """The petshop catalog written to a file the console watches, and a console (local backend) on it."""
    from app_harness import make_app

    from tui_router.config import config_from_dict

    catalog = tmp_path / "petshop.toml"
    catalog.write_text(PETSHOP, encoding="utf-8")
    config = config_from_dict({"catalog": str(catalog), "backend": "local", "sessions_dir": str(tmp_path / "sessions")}, tmp_path / "tui-router.toml")
    return catalog, make_app(config)


async def test_a_catalog_saved_in_two_steps_reloads_once_and_says_no_error(tmp_path: Path) -> None:
    from app_harness import notifications, settle

    catalog, app = _petshop_console(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        first, said = app.router, len(notifications(app))
        catalog.write_text("", encoding="utf-8")  # the editor's first step: the file emptied
        app._check_catalog_file()
        await settle(app, pilot)
        # the emptied file is not loaded: before, "the catalog has no tools" flashed, then a second reload
        assert app.router is first and notifications(app)[said:] == []
        catalog.write_text(PETSHOP + TRACK, encoding="utf-8")  # then filled
        app._check_catalog_file()
        await settle(app, pilot)
        app._check_catalog_file()
        await settle(app, pilot)
        assert "track_order" in app.router.catalog
        new = notifications(app)[said:]
        assert len(new) == 1 and "changed on disk: reloaded. Catalog petshop" in new[0], new


async def test_a_catalog_deleted_or_replaced_by_a_folder_fifo_or_broken_link_keeps_the_loaded_one(tmp_path: Path) -> None:
    from app_harness import notifications, settle, submit

    from tui_router.app.app import CATALOG_GONE_POLLS

    catalog, app = _petshop_console(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        first, said = app.router, len(notifications(app))

        catalog.unlink()  # deleted: said once, however long it stays gone
        for _ in range(CATALOG_GONE_POLLS * 3):
            app._check_catalog_file()
        await settle(app, pilot)
        new = notifications(app)[said:]
        assert new == [f"{catalog} is gone from disk (deleted, moved or a broken link): the catalog as loaded stays in use; saving the file there again loads it."]
        await submit(app, pilot, "book a bath for my dog")
        assert app.router is first and app.session.turns[-1].decision is not None and app.session.turns[-1].decision.choice == "book_grooming"

        catalog.mkdir()  # a folder in its place: one error, the loaded catalog stays
        for _ in range(3):
            app._check_catalog_file()
            await _settle_failing(app, pilot)
        new = notifications(app)[said + 1 :]
        assert len(new) == 1 and f"{catalog}: is a folder, not a catalog file" in new[0], new
        catalog.rmdir()

        os.mkfifo(catalog)  # a pipe: refused unread (no read waiting for a writer), said once
        for _ in range(3):
            app._check_catalog_file()
            await _settle_failing(app, pilot)
        new = notifications(app)[said + 2 :]
        assert len(new) == 1 and "not a regular file (a pipe, device or socket)" in new[0], new
        catalog.unlink()

        catalog.symlink_to(tmp_path / "nowhere.toml")  # a broken link: gone, said once more
        for _ in range(CATALOG_GONE_POLLS + 1):
            app._check_catalog_file()
        await settle(app, pilot)
        assert len(notifications(app)) == said + 4 and "is gone from disk" in notifications(app)[-1]
        catalog.unlink()

        catalog.write_text(PETSHOP + TRACK, encoding="utf-8")  # saved there again: loaded
        app._check_catalog_file()
        await settle(app, pilot)
        assert "track_order" in app.router.catalog and app.router is not first
        await submit(app, pilot, "where is my order")
        saved = app.session.path.read_text(encoding="utf-8")
        assert "book a bath for my dog" in saved and "where is my order" in saved  # no turn lost


async def test_a_confirm_open_while_the_catalog_loses_its_tool_does_not_label_with_the_gone_id(tmp_path: Path) -> None:
    from app_harness import notifications, settle, submit

    from tui_router.app.screens.confirm import ConfirmTurnModal

    catalog, app = _petshop_console(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        await submit(app, pilot, "order pet food treats for home delivery")  # payment: a person confirms
        await settle(app, pilot)
        assert isinstance(app.screen, ConfirmTurnModal) and app.session.turns[0].decision.choice == "order_food"
        catalog.write_text(PETSHOP.replace("order_food", "order_feed"), encoding="utf-8")  # renamed meanwhile
        app._check_catalog_file()
        await settle(app, pilot)
        assert "order_food" not in app.router.catalog
        await pilot.press("y")  # approved in the dialog opened before the reload
        await settle(app, pilot)
        turn = app.session.turns[0]
        assert (turn.label, turn.decision.outcome) == (None, "pending")
        assert "Turn 1: 'order_food' is not in catalog 'petshop' any more" in notifications(app)[-1]
        await submit(app, pilot, "order pet food treats for home delivery")  # the console goes on
        await settle(app, pilot)
        assert app.session.turns[1].decision.choice == "order_feed"


async def test_accepting_a_choice_the_reloaded_catalog_lost_sets_no_label(tmp_path: Path) -> None:
    from app_harness import notifications, settle, submit

    catalog, app = _petshop_console(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        await submit(app, pilot, "book a bath for my dog on saturday")
        await settle(app, pilot)
        assert app.session.turns[0].decision.choice == "book_grooming"
        catalog.write_text(PETSHOP.replace("book_grooming", "book_spa"), encoding="utf-8")
        app._check_catalog_file()
        await settle(app, pilot)
        app.action_label_accept()  # a: the turn's choice as its label
        await settle(app, pilot)
        assert app.session.turns[0].label is None
        assert notifications(app)[-1] == "Turn 1: 'book_grooming' is not in catalog 'petshop' any more: no label set. Pick one with l."


# -- invisible-only messages and BOMs ----------------------------------------------------------------

# bidi marks alone were refused already; variation selectors and lone combining marks were routed
# (retrieval folds them away: an empty query, sent to escalation) and counted in eval as misses
MARKS_ONLY = {
    "bidi marks": "\u200e\u200f\u202a\u202c",
    "variation selectors": "\ufe0f\ufe0e\U000e0100",
    "combining marks": "\u0301\u0308\u0327",
    "a Thai vowel sign alone": "\u0e31",
}


def test_route_refuses_messages_of_only_marks_or_selectors_as_empty(tmp_path: Path) -> None:
    for what, message in MARKS_ONLY.items():
        done = tui_router("route", "--backend", "local", "--json", message, env=env(tmp_path))
        assert done.returncode == 2 and done.stdout == "", what
        assert done.stderr.strip() == "tui-router: the message is empty: give the text to route (or '-' with text on stdin)", what
    done = tui_router("route", "--backend", "local", "--json", "cafe\u0301 \ufe0f", env=env(tmp_path))  # a letter carries them
    assert done.returncode == 0 and json.loads(done.stdout)["message"] == "cafe\u0301 \ufe0f"


def test_mcp_arguments_of_only_selectors_or_marks_are_empty() -> None:
    import pytest

    from tui_router.mcp_server import BadArguments, RouteArgs, parse_arguments

    for message in MARKS_ONLY.values():
        with pytest.raises(BadArguments, match="'message' is empty"):
            parse_arguments(RouteArgs, "route_request", {"message": message})


def _session_text(messages: list[str]) -> str:
    def escaped(text: str) -> str:
        return "".join(f"\\U{ord(c):08x}" if not c.isascii() else c for c in text)

    turns = "".join(f'\n[[turns]]\nmessage = "{escaped(m)}"\nlabel = "send_sms"\n' for m in messages)
    return '[session]\nid = "cases"\ncatalog = "demo"\nversion = 1\n' + turns


def test_eval_json_skips_labelled_turns_of_only_invisible_characters(tmp_path: Path) -> None:
    cases = tmp_path / "cases.toml"
    cases.write_text(_session_text([MARKS_ONLY["variation selectors"], MARKS_ONLY["bidi marks"], "text Bob that I am late"]), encoding="utf-8")
    done = tui_router("eval", "--backend", "local", "--json", str(cases), env=env(tmp_path))
    assert done.returncode == 0
    data = json.loads(done.stdout)
    assert data["n"] == 1 and [c["index"] for c in data["blank"]["cases"]] == [0, 1]
    assert "2 labelled turns skipped: their messages are empty or only characters that draw nothing" in done.stderr
    strict = tui_router("eval", "--backend", "local", "--json", "--strict", str(cases), env=env(tmp_path))
    assert strict.returncode == 2 and strict.stdout == ""
    assert strict.stderr.strip() == (
        f"tui-router: {cases}: turns[0]: the labelled turn has a message of only characters that draw nothing (and 1 more); "
        "write the user message it stands for, or remove its label"
    )


def test_a_bom_at_the_start_of_a_catalog_or_session_file_is_read(tmp_path: Path) -> None:
    catalog = _catalog(tmp_path, ["Send a text message to a phone number."])
    catalog.write_bytes(b"\xef\xbb\xbf" + catalog.read_bytes())
    done = tui_router("catalog", "validate", str(catalog), env=env(tmp_path))
    assert done.returncode == 0 and f"{catalog}: ok - catalog 'hostile', 1 tool" in done.stdout, done.stderr
    cases = tmp_path / "cases.toml"
    cases.write_bytes(b"\xef\xbb\xbf" + _session_text(["text Bob that I am late", "send an sms to Ann"]).encode())
    done = tui_router("eval", "--backend", "local", "--json", str(cases), env=env(tmp_path))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["n"] == 2


# -- copied session files --------------------------------------------------------------------------


def test_three_copies_empty_files_a_file_named_twice_and_its_folder_count_once(tmp_path: Path) -> None:
    folder = tmp_path / "cases"
    folder.mkdir()
    text = _session_text(["text Bob that I am late", "send an sms to Ann"])
    for name in ("a", "b", "c"):
        (folder / f"{name}.toml").write_text(text, encoding="utf-8")
    empty = '[session]\nid = "e"\ncatalog = "demo"\nversion = 1\n'
    (folder / "e1.toml").write_text(empty, encoding="utf-8")
    (folder / "e2.toml").write_text(empty, encoding="utf-8")
    a = folder / "a.toml"
    done = tui_router("eval", "--backend", "local", "--json", str(a), str(folder), str(a), str(folder / ".." / "cases" / "a.toml"), env=env(tmp_path))
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["n"] == 2  # two turns, though held by three files and a.toml named four times
    assert done.stderr.splitlines() == [
        f"tui-router: note: {folder / name}.toml holds the same turns as {a} (the same messages and labels, in the same order): they count once, from {a}"
        for name in ("b", "c")
    ]
    (folder / "bad.toml").write_text("garbage [[", encoding="utf-8")  # a corrupt one: one sentence, exit 2
    done = tui_router("eval", "--backend", "local", "--json", str(folder), env=env(tmp_path))
    assert done.returncode == 2 and done.stdout == "" and done.stderr.startswith(f"tui-router: {folder / 'bad.toml'}:1: ")
    assert len(done.stderr.splitlines()) == 1
