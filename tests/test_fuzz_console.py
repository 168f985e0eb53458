"""Property test: random keyboard sessions against the real console (Textual app, Pilot).

A "monkey" presses keys the console binds (message box, decision log, confirm dialog, pickers,
help, palette, review queue...), pastes hostile text into whatever has focus, and submits messages,
at 80x24 and 120x40, with the local backend and a real fallback subprocess. After each session:
- the app did not crash (run_test re-raises what made it panic);
- the session file on disk loads with load_session and holds exactly the turns the log shows, and
  every submitted message once, in order (none lost, none duplicated);
- every label in it is a catalog option (or defer_to_llm);
- nothing was written outside the example's own folder (an audit hook watches every open-for-write,
  rename, remove and mkdir of this process);
- the terminal output never carries a raw control sequence from the typed text.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import sys
import tempfile
from pathlib import Path

import pytest
from app_harness import (
    AGENDA,
    REMINDER,
    Recorder,
    fallback_section,
    make_app,
    make_config,
    notifications,
    settle,
    submit,
)
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from servers.hostile import ESCAPES
from test_terminal_escapes import RAW, terminal_output
from textual import events

from tui_router.app.messages import TurnSubmitted
from tui_router.session import load_session
from tui_router.textsafe import is_safe

TOOLS = {"create_reminder", "list_events", "send_sms", "search_docs", "ask_user", "human_review", "defer_to_llm"}

# Every key the console binds somewhere (app.py, the widgets' and screens' BINDINGS, help.py), plus
# the ones a person hits anyway. q / ctrl+q quit: the session then ends early, which is a case too.
KEYS = [
    "enter", "escape", "tab", "shift+tab", "f1", "question_mark", "f2", "ctrl+p", "ctrl+s",
    "up", "down", "left", "right", "pageup", "pagedown", "home", "end", "backspace", "space",
    "a", "l", "x", "f", "c", "g", "i", "y", "n", "h", "r", "s", "u", "p", "1", "2", "3", "q", "ctrl+q",
]
HOSTILE = [
    ESCAPES,
    "remind me [bold]now[/bold] [link=file:///etc/passwd]x[/link] [/] [red",
    "ذكرني بالاتصال \u202eabc\u2067 עברית",
    "bell\x07 nul\x00 del\x7f c1\x85\x9b2J cr\rlf\n tab\t",
    "remind me to call the dentist " * 170,  # ~5k characters
    "~no-such-user-here/s",
    "../outside-session",  # a path relative to the working folder: a session file one level up, still in the example folder
    "show my calendar agenda for monday",
    "how do I export a report, check the documentation",
    "text 555-0100 that I am late",
]
text = st.one_of(st.sampled_from(HOSTILE), st.text(max_size=30), st.lists(st.sampled_from(HOSTILE), min_size=2, max_size=3).map(" ".join))
KEY = st.tuples(st.just("key"), st.sampled_from(KEYS))
SUBMIT = st.tuples(st.just("submit"), text)  # focus the message box, set the text, Enter
step = st.one_of(
    KEY, KEY, KEY,  # keys three times as likely as the rest
    st.tuples(st.just("paste"), text),  # into whatever has focus (the message box, a prompt, a filter)
    SUBMIT, SUBMIT,
    # escape first: from the message box to the decision log, where a, l, x, f, g, enter act on a turn
    st.tuples(st.just("log"), st.sampled_from(["a", "l", "x", "f", "c", "g", "enter", "up", "home", "pageup"])),
    st.tuples(st.just("settle"), st.none()),
)
# thresholds that send the tiny catalog's turns to execute, to the confirm dialog, or to the fallback
POLICY = st.sampled_from([{"high": 0.0, "medium": 0.0}, {"high": 1.0, "medium": 0.0}, {"high": 1.0, "medium": 1.0}])

# -- the writes this process makes, while an example runs ------------------------------------
_WATCH: list[str] | None = None
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC


def _audit(event: str, args: tuple) -> None:
    if _WATCH is None:
        return
    if event == "open":
        path, mode, flags = args
        writes = any(c in mode for c in "wax+") if isinstance(mode, str) else bool((flags or 0) & _WRITE_FLAGS)
        targets = [path] if writes else []
    elif event in ("os.rename", "os.replace", "os.link", "os.symlink"):
        targets = [args[1]]
    elif event in ("os.remove", "os.rmdir", "os.mkdir", "os.truncate", "os.chmod"):
        targets = [args[0]]
    else:
        return
    for target in targets:
        if isinstance(target, (str, bytes, os.PathLike)):
            _WATCH.append(os.path.abspath(os.fsdecode(target)))


sys.addaudithook(_audit)  # cannot be removed: it does nothing unless _WATCH is set


def outside(paths: list[str], root: Path) -> list[str]:
    root_s = str(root.resolve())
    allowed = (root_s, "/dev/")
    # lazy imports compile bytecode into __pycache__; that is Python's, not the console's
    return [p for p in paths if not p.startswith(allowed) and "__pycache__" not in p and not p.endswith(".pyc")]


async def monkey(folder: Path, size: tuple[int, int], policy: dict, steps: list[tuple[str, object]]) -> None:
    config = make_config(folder, policy=policy, fallback=fallback_section("upper.py"))
    app = make_app(config)
    recorder = Recorder()
    submitted: list[tuple[int, str]] = []  # (id of the session it went to, message)
    first_seen: dict[int, int] = {}  # session object -> turns it had before our first message

    def hook(message) -> None:
        recorder(message)
        if isinstance(message, TurnSubmitted) and (message.message, id(message)) not in seen:
            seen.add((message.message, id(message)))
            first_seen.setdefault(id(app.session), len(app.session.turns))
            submitted.append((id(app.session), message.message))

    seen: set[tuple[str, int]] = set()
    async with app.run_test(size=size, message_hook=hook) as pilot:
        await settle(app, pilot)
        for kind, value in steps:
            if not app.is_running:
                break  # q quit it
            if kind == "key":
                await pilot.press(str(value))
            elif kind == "log":
                await pilot.press("escape", str(value))
            elif kind == "paste":
                if app.focused is not None:
                    app.focused.post_message(events.Paste(str(value)))
                await pilot.pause()
            elif kind == "submit":
                if app.screen is app.screen_stack[0]:  # submit() types into the main screen's box
                    await submit(app, pilot, str(value))
            else:
                await settle(app, pilot)
            if app.is_running:
                out = terminal_output(app)
                for raw in RAW:
                    assert raw not in out, f"{raw!r} reached the terminal after {kind} {value!r:.60}"
        if app.is_running:
            await settle(app, pilot)
        for note in notifications(app):
            assert "Traceback" not in note and is_safe(note), repr(note)
        session = app.session
        log_turns = list(app.log_table.turns) if app.is_running else list(session.turns)
    # the app has quit and saved; what is on disk is what the log showed
    mine = [m for sid, m in submitted if sid == id(session)]
    if session.path is None:  # no turn yet: no file is written (an empty session is not kept)
        assert not session.turns and not mine
        return
    on_disk = load_session(Path(session.path))
    assert on_disk.turns == session.turns
    assert [t.message for t in log_turns] == [t.message for t in session.turns]
    before = first_seen.get(id(session), len(session.turns) - len(mine))
    assert [t.message for t in on_disk.turns[before:]] == mine, "a submitted turn was lost or duplicated"
    for turn in on_disk.turns:
        assert turn.label is None or turn.label in TOOLS, turn.label


_counter = itertools.count()


# derandomize: the same 20 sessions on every run, so CI does not fail on a draw nobody can reproduce;
# no shrinking: each example is a whole console session (seconds), and a shrink took minutes.
@settings(max_examples=20, deadline=None, derandomize=True, phases=[Phase.explicit, Phase.generate], suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(size=st.sampled_from([(80, 24), (120, 40)]), policy=POLICY, steps=st.tuples(SUBMIT, st.lists(step, min_size=8, max_size=20)).map(lambda t: [t[0], *t[1]]))
def test_random_keyboard_sessions_keep_every_turn_and_write_nowhere_else(tmp_path: Path, size, policy, steps) -> None:
    global _WATCH
    folder = Path(tempfile.mkdtemp(dir=tmp_path, prefix=f"ex{next(_counter)}-"))
    cwd, env = os.getcwd(), dict(os.environ)
    (folder / "cwd").mkdir()
    os.chdir(folder / "cwd")  # a relative path typed in a prompt ("../x") lands in the example's folder, not the repo
    # the palette's "Save screenshot" (Textual's) writes to the Downloads folder, as asked: ~ and the
    # XDG folders point into the example's folder for that (and for "~/x" typed in a prompt)
    os.environ.update(HOME=str(folder / "home"), XDG_CONFIG_HOME=str(folder / "home" / ".config"), XDG_DOWNLOAD_DIR=str(folder / "downloads"))
    _WATCH = []
    try:
        asyncio.run(monkey(folder, size, policy, steps))
        written = outside(_WATCH, folder)
    finally:
        _WATCH = None
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(env)
    assert not written, f"wrote outside the example's folder: {written}"


# -- what the monkey found (one regular test each) ---------------------------------------------


async def _refusal_then_cancel(app, pilot) -> str:
    """The sentence a path prompt shows when it refuses the text (it stays open, the text as
    typed), then escape."""
    assert type(app.screen).__name__ == "PromptModal"
    said = str(app.screen.query_one("#prompt-refusal").render())
    await pilot.press("escape")
    await pilot.pause()
    return said


async def test_save_as_a_pasted_name_with_a_nul_byte_is_refused_in_a_sentence(tmp_path: Path) -> None:
    # ctrl+s, then a paste holding NUL and ESC into the name box, Enter: os.open raised ValueError
    # ("embedded null byte") in the prompt's callback and the console died with a traceback.
    app = make_app(make_config(tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await submit(app, pilot, AGENDA)
        path = app.session.path
        await pilot.press("ctrl+s")
        await pilot.pause()
        app.focused.post_message(events.Paste("nul\x00 esc\x1b[2J"))
        await pilot.pause()
        await pilot.press("enter")
        await settle(app, pilot)
        assert app.session.path == path  # still saving to the old file
        assert await _refusal_then_cancel(app, pilot) == "A path or name cannot hold control characters: nul\\x00 esc\\x1b[2J; nothing changed."
        await submit(app, pilot, REMINDER)
    assert [t.message for t in load_session(path).turns] == [AGENDA, REMINDER]
    assert sorted(p.name for p in (tmp_path / "sessions").iterdir() if p.suffix == ".toml") == [path.name]


# Every prompt that takes a path: NUL -> ValueError, an unknown ~user -> RuntimeError, a 5,000-char
# name -> OSError ENAMETOOLONG, each raised in the prompt's callback and fatal to the console.
PATH_PROMPTS = ["action_save_as", "action_open_file", "action_follow_file", "action_replay_file", "action_open_catalog", "action_open_config"]
BAD_PATHS = [
    ("a\x00b.toml", "A path or name cannot hold control characters: a\\x00b.toml; nothing changed."),
    ("~no-such-user-here/x.toml", "~no-such-user-here/x.toml: not a usable path (Could not determine home directory.); nothing changed."),
    ("x" * 5000, "x" * 80 + ": not a usable path (File name too long); nothing changed."),
]


@pytest.mark.parametrize("action", PATH_PROMPTS)
async def test_a_path_prompt_refuses_an_unusable_path_in_a_sentence_and_keeps_the_session(tmp_path: Path, action: str) -> None:
    app = make_app(make_config(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        await submit(app, pilot, AGENDA)
        path, catalog = app.session.path, app.router.catalog.name
        for typed, said in BAD_PATHS:
            getattr(app, action)()
            await pilot.pause()
            app.focused.post_message(events.Paste(typed))
            await pilot.pause()
            await pilot.press("enter")
            await settle(app, pilot)
            assert await _refusal_then_cancel(app, pilot) == said
            assert app.screen is app.screen_stack[0] and app.session.path == path and app.router.catalog.name == catalog
        await submit(app, pilot, REMINDER)
    assert [t.message for t in load_session(path).turns] == [AGENDA, REMINDER]
    assert sorted(p.name for p in tmp_path.rglob("*") if p.suffix == ".toml") == sorted(["tiny.toml", path.name])
