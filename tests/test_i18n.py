"""Text from everywhere, at any width: an operator whose users, catalogs and tools speak other
languages and scripts (CJK, Arabic, Hebrew, Thai, Devanagari, emoji sequences, combining marks,
zero-width characters), on terminals of every size and encoding. One test per defect found."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest
from app_harness import make_app, make_config, settle, submit
from cli_harness import tui_router
from rich.cells import cell_len

from tui_router.app.format import shorten, shorten_start
from tui_router.session import Session, SessionInfo, Turn, TurnDecision, save_session
from tui_router.textnorm import tokenize, words

CJK = "请给乔丹发短信说部署完成了"
FAMILY = "👨\u200d👩\u200d👧\u200d👦"  # one grapheme, two cells
FLAGS = "🇯🇵🇰🇷🇮🇳🇮🇱🇹🇭🇸🇦"  # six flags: twelve regional indicators
HINDI = "जॉर्डन को संदेश भेजो"  # Devanagari: vowel signs are combining marks (Mn, Mc)
MIXED = f"{CJK} {FAMILY} {FLAGS} Café résumé שלום مرحبا ส่งข้อความ {HINDI}"


def lone_regional_indicator(text: str) -> bool:
    """A flag cut in half: an odd run of regional indicators."""
    run = 0
    for char in text + " ":
        if "\U0001f1e6" <= char <= "\U0001f1ff":
            run += 1
        elif run % 2:
            return True
        else:
            run = 0
    return False


# ---------------------------------------------------------------- cutting text to a width


@pytest.mark.parametrize("width", range(2, 16))
def test_shorten_never_cuts_a_flag_or_an_emoji_sequence_in_half(width: int) -> None:
    for text in (f"xy{FLAGS}", f"ab {FAMILY}{FAMILY} cd ef", f"{FAMILY}x{FLAGS}", "e\u0301" * 20):
        out = shorten(text, width)
        assert cell_len(out) <= width
        if cell_len(text) <= width:
            assert out == text
            continue
        assert out.endswith("…")  # cut: the ellipsis says so
        assert not lone_regional_indicator(out), out
        assert "\u200d…" not in out and not out.startswith("\u0301")  # no dangling joiner or mark
        kept = out[:-1]
        assert text.startswith(kept)


def test_shorten_keeps_a_whole_emoji_sequence_that_fits() -> None:
    # per code point, the family (👨 2 cells, ZWJ, 👩 2 cells, ...) looked 8 cells wide and was dropped
    assert shorten(f"ab {FAMILY} cd", 6) == f"ab {FAMILY}…"


@pytest.mark.parametrize("width", range(7, 16))
def test_shorten_start_never_cuts_a_flag_in_half(width: int) -> None:
    out = shorten_start(f"{FLAGS}.toml", width)
    assert cell_len(out) <= width and out.startswith("…") and out.endswith(".toml")
    assert not lone_regional_indicator(out), out


def test_report_cells_are_cut_by_terminal_cells() -> None:
    # eval's Errors and replay's tables cut messages by characters: a CJK message was 120 cells wide
    from tui_router.report import shorten as report_shorten

    out = report_shorten(CJK * 10, 60)
    assert cell_len(out) <= 60 and out.endswith("…") and out.startswith(CJK)


# ---------------------------------------------------------------- tokenisation (retrieval)


def test_devanagari_words_are_kept_whole() -> None:
    # `\w` leaves out vowel signs: जॉर्डन was split into ज and रडन, संदेश into स, द, श
    assert words(HINDI) == ["जॉरडन", "को", "संदेश", "भेजो"]  # the virama (a combining accent) is folded away


def test_zero_width_characters_inside_a_word_do_not_split_it() -> None:
    message = "te\u200bxt jor\u200cdan\u200d dep\ufeffloy ha\u00adndover no\u2060w"
    assert words(message) == ["text", "jordan", "deploy", "handover", "now"]
    assert words("رسـالة نصـية") == words("رسالة نصية")  # the Arabic tatweel only stretches the line


def test_an_emoji_variation_selector_is_no_word_and_thai_vowel_signs_stay_with_their_letter() -> None:
    assert words("ship it ✈\ufe0f 🏳\ufe0f\u200d🌈") == ["ship", "it"]
    # ถึง: the vowel sign U+0E36 split the word and was lost (tokens ถ, ง); now it stays on its letter
    assert tokenize("ถึง") == ["ถึ", "ง", "ถึง"]


def test_retrieval_finds_a_tool_through_hindi_words_and_through_zero_width_characters() -> None:
    from tui_router.catalog import parse_catalog
    from tui_router.config import RetrievalConfig
    from tui_router.retrieve import Retriever

    catalog = parse_catalog(
        {
            "name": "i18n",
            "tools": [
                {"id": "notify_customer", "when_to_use": "ग्राहक को संदेश भेजें", "keywords": ["संदेश"]},
                {"id": "send_sms", "when_to_use": "Send a short text message to a phone number.", "keywords": ["text", "sms"]},
                {"id": "book_room", "when_to_use": "Book a meeting room.", "keywords": ["room"]},
                {"id": "open_ticket", "when_to_use": "Open a support ticket.", "keywords": ["ticket"]},
            ],
        }
    )
    retriever = Retriever(catalog, RetrievalConfig(direct_max=0, top_k=1, include_escalation=False))
    assert retriever.retrieve("कृपया संदेश भेजो").ranked[0] == "notify_customer"
    assert retriever.retrieve("t\u200bext Jordan").ranked == ["send_sms"]


# ---------------------------------------------------------------- the CLI, any encoding


def i18n_session(path: Path, suffix: str = "") -> Path:
    # suffix: two files with the same turns count once (a copied file), so a second file differs
    turns = [
        Turn(
            message=message,
            label=label,
            tags=["中文"] if label else [],
            decision=TurnDecision(
                candidates=["send_sms", "create_reminder"],
                choice="send_sms",
                probabilities={"send_sms": 0.5, "create_reminder": 0.3, "defer_to_llm": 0.2},
                confidence=0.3,
                band="low",
                action="fallback",
                outcome="pending",
            ),
        )
        for message, label in ((CJK + suffix, "send_sms"), (MIXED + suffix, None), (f"{FAMILY} {FLAGS}{suffix}", None))
    ]
    save_session(Session(session=SessionInfo(id="i18n"), turns=turns), path)
    return path


@pytest.fixture()
def ascii_env(tmp_path: Path) -> dict[str, str]:
    config = tmp_path / "tui-router.toml"
    config.write_text(f'catalog = "{make_config(tmp_path).catalog}"\nbackend = "local"\n', encoding="utf-8")
    return {"PYTHONIOENCODING": "ascii", "PYTHONUTF8": "0", "LC_ALL": "C", "TUI_ROUTER_CONFIG": str(config)}


def test_route_json_under_an_ascii_stdout_is_valid_and_carries_the_same_text(ascii_env) -> None:
    # UnicodeEncodeError traceback: json.dumps(ensure_ascii=False) met an ASCII stdout
    done = tui_router("route", "--json", MIXED, env=ascii_env)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and done.stdout.isascii()
    assert json.loads(done.stdout)["message"] == MIXED  # astral characters as surrogate pairs: the same text back


def test_queue_eval_and_replay_under_an_ascii_stdout_show_escapes(tmp_path: Path, ascii_env) -> None:
    session = i18n_session(tmp_path / "i18n.toml")
    runs = [
        (("queue", str(session)), "\\u8bf7"),  # 请, shown as its escape
        (("eval", str(session)), "\\u4e2d\\u6587"),  # the tag 中文 in the per-tag table
        (("replay", "--headless", "--all", str(session)), "\\u8bf7"),
        (("queue", "--json", str(session)), "\\u8bf7"),
    ]
    for argv, shown in runs:
        done = tui_router(*argv, env=ascii_env)
        assert done.returncode in (0, 1), (argv, done.stderr)
        assert "Traceback" not in done.stderr and "UnicodeEncodeError" not in done.stderr, argv
        assert shown in done.stdout and done.stdout.isascii(), argv
    assert json.loads(done.stdout)["queue"][0]["message"] in (MIXED, f"{FAMILY} {FLAGS}", CJK)


def test_encodable_writes_toml_escapes_for_a_toml_document() -> None:
    import tomllib

    from tui_router.textsafe import encodable

    text = f'message = "{CJK}{FAMILY}"\n'
    shown = encodable(text, "ascii", data="toml")
    assert shown.isascii() and tomllib.loads(shown)["message"] == CJK + FAMILY
    assert encodable(text, "utf-8") == text


def test_queue_columns_line_up_with_wide_file_names(tmp_path: Path) -> None:
    # widths by len(): a folder named in CJK made the column too narrow and cut the path, piped too
    folder = tmp_path / "会话记录"
    folder.mkdir()
    i18n_session(folder / "セッション.toml")
    i18n_session(folder / "b.toml", suffix=" 2")
    done = tui_router("queue", str(folder), env={})
    assert done.returncode == 0, done.stderr
    rows = done.stdout.splitlines()[1:]
    assert len(rows) == 5
    assert all("…" not in row.split("  ")[0] for row in rows)  # piped: nothing to cut
    starts = {cell_len(row[: row.index("  ") + 2].rstrip()) + len(row[row.index("  ") :]) - len(row[row.index("  ") :].lstrip()) for row in rows}
    assert len(starts) == 1, rows  # the turn column starts at the same cell on every row


def test_doctor_and_models_tables_line_up_with_wide_text() -> None:
    from tui_router.cli.server_cmd import format_table

    rows = [("模型", "可用 ✓", "服务器说：好"), ("API key", "set", "ok"), ("🇯🇵 model", "ok", "-")]
    lines = format_table(("check", "result", "detail"), rows).splitlines()
    for column in (1, 2):
        starts = {cell_len(line[: line.rindex(cells[column])]) for line, cells in zip(lines, [("check", "result", "detail"), *rows], strict=True)}
        assert len(starts) == 1, lines


# ---------------------------------------------------------------- the console


async def test_console_log_rows_fit_the_terminal_and_keep_flags_whole(tmp_path: Path) -> None:
    session = i18n_session(tmp_path / "i18n.toml")
    from tui_router.session import load_session

    app = make_app(make_config(tmp_path), session=load_session(session))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await submit(app, pilot, f"x {FLAGS * 4} {FAMILY} remind me {CJK}")  # the cut lands among the flags
        for width in range(80, 90):
            await pilot.resize_terminal(width, 24)
            await pilot.pause()
            for index in range(app.log_table.row_count):
                cells = app.log_table.row_cells(index)
                assert not lone_regional_indicator(cells["message"]), (width, cells["message"])
            for y in range(app.log_table.size.height):
                assert app.log_table.render_line(y).cell_length == app.log_table.scrollable_content_region.width


@pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pseudo-terminal")
@pytest.mark.parametrize(
    ("env", "says"),
    [({"PYTHONIOENCODING": "ascii"}, "output encoding is ascii"), ({"LC_ALL": "C", "PYTHONUTF8": "0"}, "output encoding is ascii"), ({"TERM": "dumb"}, "TERM=dumb")],
)
def test_the_console_refuses_a_terminal_it_cannot_draw_on_in_one_sentence(tmp_path: Path, env: dict[str, str], says: str) -> None:
    # an ASCII terminal got every border as \u2502 escapes; TERM=dumb got the drawing codes as text
    from test_console_e2e import Terminal

    config = tmp_path / "tui-router.toml"
    config.write_text(f'catalog = "{make_config(tmp_path).catalog}"\nbackend = "local"\nsessions_dir = "sessions"\n', encoding="utf-8")
    full = {k: v for k, v in os.environ.items() if k not in ("TUI_ROUTER_CONFIG", "TEXTUAL", "NO_COLOR", "LANG", "LC_ALL", "PYTHONIOENCODING")}
    full.update({"TERM": "xterm-256color", "TUI_ROUTER_CONFIG": str(config), **env})
    term = Terminal([sys.executable, "-m", "tui_router"], full, tmp_path, size=(200, 24))
    try:
        assert term.process.wait(30) == 2
        time.sleep(0.2)
    finally:
        term.close()
    shown = term.text().strip()
    assert shown.startswith("tui-router: ") and says in shown and shown.count("\n") == 0, shown
    assert "\x1b[?1049h" not in term.text()  # never entered the alternate screen
    assert not (tmp_path / "sessions").exists() or not any((tmp_path / "sessions").iterdir())


# ---------------------------------------------------------------- a System One server that speaks other scripts

SERVER_ERROR = "服务器繁忙 — الخادم مشغول — השרת עסוק \u202eevil\u202c " + FAMILY


@pytest.fixture(scope="module")
def polyglot_server():
    import threading
    from http.server import ThreadingHTTPServer

    from servers.scripted import QuietHandler

    class Handler(QuietHandler):
        def _json(self, status: int, body: dict) -> None:
            raw = json.dumps(body, ensure_ascii=False).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def do_GET(self) -> None:  # noqa: N802
            names = [("jev-latest", "最新模型"), ("模型-二", "第二"), ("🇯🇵-model", "日本語"), ("עברית", "שלום")]
            self._json(200, {"models": [{"name": n, "description": d} for n, d in names]})

        def do_POST(self) -> None:  # noqa: N802
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self._json(400, {"detail": {"error_type": "bad_request", "message": SERVER_ERROR}})

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    host, port = server.server_address[:2]
    yield f"http://{host}:{port}/v1"
    server.shutdown()


@pytest.fixture()
def polyglot_env(tmp_path: Path, polyglot_server: str) -> dict[str, str]:
    config = tmp_path / "tui-router.toml"
    config.write_text(f'backend = "systemone"\n[systemone]\nbase_url = "{polyglot_server}"\nprobe = false\ntimeout = 10\n', encoding="utf-8")
    return {"TUI_ROUTER_CONFIG": str(config), "XDG_CACHE_HOME": str(tmp_path / "cache")}


@pytest.mark.parametrize("encoding", ["utf-8", "ascii"])
def test_models_lines_up_names_in_other_scripts_in_any_encoding(polyglot_env, encoding: str) -> None:
    # names padded by len(): 模型-二 took 7 cells of a 4-character column; in ASCII, \u6a21 escapes
    # were measured as one character each
    done = tui_router("models", env={**polyglot_env, "PYTHONIOENCODING": encoding})
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 4
    descriptions = ("最新模型", "第二", "日本語", "שלום") if encoding == "utf-8" else ("\\u6700", "\\u7b2c", "\\u65e5", "\\u05e9")
    starts = {cell_len(line[: line.index(d)]) for line, d in zip(lines, descriptions, strict=True)}
    assert len(starts) == 1, lines
    assert encoding == "utf-8" or done.stdout.isascii()


def test_a_server_error_in_other_scripts_reaches_stderr_whole_and_its_controls_escaped(polyglot_env) -> None:
    done = tui_router("route", "--json", CJK, env={**polyglot_env, "PYTHONIOENCODING": "ascii"})
    assert done.returncode == 1 and "Traceback" not in done.stderr
    decision = json.loads(done.stdout)
    assert SERVER_ERROR in decision["error"] and decision["message"] == CJK
    assert "\\u202eevil\\u202c" in done.stderr and "\u202e" not in done.stderr  # stderr: escapes, never the override


async def test_the_message_box_cursor_steps_over_whole_flags_emoji_and_accented_letters(tmp_path: Path) -> None:
    # per code point the cursor stood between a flag's two regional indicators (drawn mid-glyph) and
    # typing there split the flag; backspace left half an emoji family (a dangling joiner)
    from tui_router.app.widgets.message_input import MessageInput

    app = make_app(make_config(tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        box = app.query_one("#message", MessageInput)
        box.focus()
        box.value = f"a🇯🇵{FAMILY}e\u0301b"
        box.cursor_position = len(box.value)
        stops = []
        for _ in range(5):
            await pilot.press("left")
            stops.append(box.cursor_position)
        assert stops == [len(box.value) - 1, len(box.value) - 3, 3, 1, 0]
        await pilot.press("right", "right", "X")
        assert box.value == f"a🇯🇵X{FAMILY}e\u0301b"  # after the flag, not inside it
        await pilot.press("delete")
        assert box.value == "a🇯🇵Xe\u0301b"  # the whole family
        await pilot.press("end", "left", "backspace")
        assert box.value == "a🇯🇵Xeb"  # a letter with its accent loses the accent first
        await pilot.press("home", "right", "right", "backspace")
        assert box.value == "aXeb"  # the flag goes whole
        # a click lands by grapheme too: after a family (two cells, four emoji) the next cell is the next character
        box.value = f"{FAMILY}zq"
        region = box.content_region
        await pilot.click(box, offset=(region.x - box.region.x + 2, region.y - box.region.y))
        assert box.cursor_position == len(FAMILY)


async def test_the_catalog_filter_folds_case_accents_width_and_composition(tmp_path: Path) -> None:
    # the filter compared .lower() text: "cafe" missed "Café", fullwidth ｓｍｓ missed sms, and an é
    # typed as e + U+0301 missed the precomposed é of the catalog
    from textual.widgets import Input, OptionList

    catalog = tmp_path / "cafe.toml"
    catalog.write_text(
        'name = "cafe"\n'
        '[[tools]]\nid = "order_coffee"\nwhen_to_use = "Order a coffee at the Café Größe."\n'
        '[[tools]]\nid = "send_sms"\nwhen_to_use = "Send a short text message."\nkeywords = ["SMS"]\n'
        '[[tools]]\nid = "book_room"\nwhen_to_use = "Book a meeting room."\n',
        encoding="utf-8",
    )
    app = make_app(make_config(tmp_path, catalog=str(catalog)))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        await pilot.press("f2")
        await pilot.pause()
        box = app.query_one("#catalog-filter", Input)
        listed = app.query_one("#catalog-list", OptionList)
        for query, expected in (("cafe", "order_coffee"), ("CAFE\u0301", "order_coffee"), ("grosse", "order_coffee"), ("ｓｍｓ", "send_sms"), ("me\u200bssage", "send_sms")):
            box.value = query
            await pilot.pause()
            ids = [listed.get_option_at_index(i).id for i in range(listed.option_count) if listed.get_option_at_index(i).id]
            assert ids == [expected], (query, ids)


async def test_the_review_header_stays_one_line_with_a_file_and_reviewer_named_in_cjk(tmp_path: Path) -> None:
    # the header measured the file name and reviewer with len(): at 110 to 120 columns a CJK reviewer
    # name pushed the line past the edge and it wrapped over the message line
    from textual.widgets import Static

    from tui_router.app.screens.review import ReviewScreen
    from tui_router.review import Review

    folder = tmp_path / "会话"
    folder.mkdir()
    session = i18n_session(folder / "二〇二六年十二月一日の会話セッション.toml")
    app = make_app(make_config(tmp_path), review=Review.of_files([session], reviewer="佐藤花子さん"))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        assert isinstance(app.screen, ReviewScreen)
        for width in range(80, 140, 3):
            await pilot.resize_terminal(width, 30)
            await pilot.pause()
            status = app.screen.query_one("#review-status", Static)
            first = str(status.render()).split("\n")[0]
            assert cell_len(first) <= width - 2, (width, first)
            assert first.rstrip().endswith(("turn 2", "佐藤花子さん")), (width, first)


async def test_the_replay_header_stays_one_line_with_a_catalog_named_in_cjk(tmp_path: Path) -> None:
    # the header measured the catalog name with len(): a CJK name took twice the room it was given
    from app_harness import CATALOG
    from textual.widgets import Static

    from tui_router.session import load_session

    catalog = tmp_path / "cjk.toml"
    catalog.write_text(CATALOG.replace('name = "tiny"', 'name = "多语言客户支持工具目录第二版"'), encoding="utf-8")
    session = i18n_session(tmp_path / "会话记录.toml")
    app = make_app(make_config(tmp_path, catalog=str(catalog)), replay=load_session(session))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        for width in range(80, 150, 4):
            await pilot.resize_terminal(width, 30)
            await pilot.pause()
            status = app.screen.query_one("#replay-status", Static)
            first = str(status.render()).split("\n")[0]
            assert cell_len(first) <= width - 2 and "\n" not in str(status.render()), (width, first)


async def test_the_status_line_stays_one_line_with_a_catalog_and_session_path_in_cjk(tmp_path: Path) -> None:
    # the session path was cut by characters and the catalog name never: a CJK path or name wrapped
    # the header onto a second line
    from app_harness import CATALOG

    catalog = tmp_path / "cjk.toml"
    catalog.write_text(CATALOG.replace('name = "tiny"', 'name = "多语言客户支持工具目录"'), encoding="utf-8")
    sessions = tmp_path / "会话记录的文件夹" / "二〇二六年十二月"
    app = make_app(make_config(tmp_path, catalog=str(catalog), sessions_dir=str(sessions)), session_id="第一次会话的记录")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        for width in range(56, 160, 4):  # narrower, even an ASCII catalog and path take two lines
            await pilot.resize_terminal(width, 30)
            await pilot.pause()
            shown = app.query_one("#status").status.render(width)
            assert "\n" not in shown.plain and cell_len(shown.plain) <= width - 2, (width, shown.plain)


def test_a_session_file_holds_bidi_and_c1_controls_as_escapes_and_reads_them_back(tmp_path: Path) -> None:
    # tomli_w wrote U+202E raw: `cat` or `git diff` of the session file showed the rest of the line
    # reversed (the file is meant to be read and diffed)
    from tui_router.session import load_session

    message = f"pay \u202eevil\u202c now \u2067{CJK}\u2069 \x85 line\u2028sep \u200fשלום {FAMILY}"
    path = tmp_path / "s.toml"
    save_session(Session(session=SessionInfo(id="bidi"), turns=[Turn(message=message, tags=["\u202etag"])]), path)
    raw = path.read_text(encoding="utf-8")
    for control in ("\u202e", "\u202c", "\u2067", "\u2069", "\x85", "\u2028", "\u200f"):
        assert control not in raw
    assert "\\u202e" in raw and CJK in raw and FAMILY in raw and "שלום" in raw  # scripts stay readable
    turn = load_session(path).turns[0]
    assert turn.message == message and turn.tags == ["\u202etag"]


def test_khmer_lao_and_myanmar_are_split_like_thai() -> None:
    # written without spaces like Thai but missing from the no-space scripts: a whole Khmer sentence
    # was one token, and a tool's Khmer keyword inside it never matched
    from tui_router.catalog import parse_catalog
    from tui_router.config import RetrievalConfig
    from tui_router.retrieve import Retriever

    assert "សារ" in tokenize("សូមផ្ញើសារទៅគាត់")  # "message" inside "please send him a message"
    assert "ຫາ" in tokenize("ສົ່ງຂໍ້ຄວາມຫາລາວ") and "ပါ" in tokenize("ကျေးဇူးပြု၍စာပို့ပါ")
    catalog = parse_catalog(
        {
            "name": "km",
            "tools": [
                {"id": "send_message", "when_to_use": "Send a message.", "keywords": ["ផ្ញើសារ"]},
                {"id": "book_room", "when_to_use": "Book a meeting room.", "keywords": ["room"]},
                {"id": "open_ticket", "when_to_use": "Open a support ticket.", "keywords": ["ticket"]},
                {"id": "pay_bill", "when_to_use": "Pay a bill.", "keywords": ["bill"]},
            ],
        }
    )
    retriever = Retriever(catalog, RetrievalConfig(direct_max=0, top_k=1, include_escalation=False))
    assert retriever.retrieve("សូមផ្ញើសារទៅគាត់").ranked == ["send_message"]


INVISIBLE = "\u200b\u2060\ufeff \u202e\u200f\u3164\u00ad"  # draws nothing


def test_route_refuses_a_message_of_invisible_characters_as_empty(tmp_path: Path) -> None:
    # U+200B alone passed `not message.strip()` and was routed (to open_pull_request, on the demo catalog)
    done = tui_router("route", "--backend", "local", INVISIBLE, env={})
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip() == "tui-router: the message is empty: give the text to route (or '-' with text on stdin)"
    assert tui_router("route", "--backend", "local", "remind me\u200b", env={}).returncode == 0  # a visible word is enough


async def test_the_console_does_not_route_a_message_of_invisible_characters(tmp_path: Path) -> None:
    from tui_router.app.widgets.message_input import MessageInput

    app = make_app(make_config(tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await submit(app, pilot, INVISIBLE)
        assert app.session.turns == [] and app.query_one("#message", MessageInput).value == INVISIBLE
        await submit(app, pilot, "remind me\u200b")
        assert [t.message for t in app.session.turns] == ["remind me\u200b"]


def test_mcp_arguments_of_invisible_characters_are_empty() -> None:
    from tui_router.mcp_server import BadArguments, RouteArgs, parse_arguments

    with pytest.raises(BadArguments, match="'message' is empty"):
        parse_arguments(RouteArgs, "route_request", {"message": INVISIBLE})


def test_the_markdown_report_holds_control_characters_as_escapes(tmp_path: Path) -> None:
    # tags, file and catalog names went into the .md file raw: ESC acted on a terminal that showed
    # it, U+202E reordered the line in a viewer
    from app_harness import CATALOG

    catalog = tmp_path / "cat.toml"
    catalog.write_text(CATALOG.replace('name = "tiny"', 'name = "tiny\\u202e目录"'), encoding="utf-8")
    turns = [Turn(message=CJK, label="send_sms", tags=["\x1b[31mred\u202etag", "中文"]), Turn(message="remind me at 6", label="create_reminder")]
    session = tmp_path / "s.toml"
    save_session(Session(session=SessionInfo(id="md", catalog="tiny\u202e目录"), turns=turns), session)
    report = tmp_path / "report.md"
    done = tui_router("eval", str(session), "--catalog", str(catalog), "--backend", "local", "--markdown", str(report), env={})
    assert done.returncode == 0, done.stderr
    text = report.read_text(encoding="utf-8")
    assert "\x1b" not in text and "\u202e" not in text
    assert "\\\\x1b[31mred\\\\u202etag" in text and "中文" in text and "tiny\\u202e目录" in text


def test_the_option_picker_folds_its_filter_like_retrieval() -> None:
    # the label picker compared .lower() text: "cafe" missed a description with "Café", ｓｍｓ missed send_sms
    from tui_router.app.screens.picker import PickerItem, rank_items

    items = [
        PickerItem("order_coffee", "Order a coffee at the Café Größe."),
        PickerItem("send_sms", "Send a short text message."),
        PickerItem("book_room", "Book a meeting room."),
    ]
    for query, expected in (("cafe", "order_coffee"), ("grosse", "order_coffee"), ("CAFE\u0301", "order_coffee"), ("ｓｍｓ", "send_sms")):
        assert [item.id for item, _ in rank_items(items, query)] == [expected], query
