"""QA pass 5 (an operator pointing the console and CLI at a real decision model over HTTP): one test per
defect found, against real loopback servers, real subprocesses and the real app (Pilot)."""

from __future__ import annotations

import contextlib
import json

import pytest
from cli_harness import tui_router
from servers.scripted import ScriptedServer

MESSAGE = "Text Jordan that the deploy finished."
SECRET = "sk-qa5-key-7c1e9b3f5a"


@pytest.fixture()
def scripted():
    server = ScriptedServer()
    server.thread.start()
    try:
        yield server
    finally:
        server.server.shutdown()
        server.server.server_close()


@contextlib.asynccontextmanager
async def asked(scripted, tmp_path, *, delay: float, pause: float, size=(80, 24), **systemone):
    """The console with MESSAGE sent to a loopback server that takes `delay` s to answer: (app, pilot,
    message box), `pause` s after Enter."""
    from app_harness import make_app, make_config, settle
    from servers.scripted import Step

    scripted.script.append(Step(delay=delay))
    settings = {"base_url": scripted.base_url, "timeout": 10, "max_retries": 0, "probe": False, **systemone}
    app = make_app(make_config(tmp_path, backend="systemone", systemone=settings))
    async with app.run_test(size=size) as pilot:
        await settle(app, pilot)
        box = app.query_one("#message")
        box.value = MESSAGE
        await pilot.press("enter")
        await pilot.pause(pause)
        yield app, pilot, box


def _env(tmp_path, url: str, key: str) -> dict[str, str]:
    config = tmp_path / "tui-router.toml"
    config.write_text(f'backend = "systemone"\n[systemone]\nbase_url = "{url}"\napi_key_env = "QA5_KEY"\ntimeout = 5\nprobe = false\n')
    return {"TUI_ROUTER_CONFIG": str(config), "XDG_CACHE_HOME": str(tmp_path / "cache"), "QA5_KEY": key}


@pytest.mark.parametrize(
    ("key", "what"),
    [
        (f"{SECRET}\nsecond-line", "a line break"),  # a key file pasted with its trailing comment line
        (f"{SECRET}\rx", "a line break"),
        (f"{SECRET}\x01x", "a control character"),
        (f"{SECRET}Ü", "a non-ASCII character"),
    ],
)
def test_a_key_an_http_header_cannot_carry_is_one_sentence_never_quoted_and_never_sent(scripted, tmp_path, key, what):
    # httpx refused the header with its value in the message, which (escaped, so the scrubber missed
    # it) reached stderr and the decision as "cannot connect (Illegal header value b'Bearer sk-...')",
    # after three pointless retries; a non-ASCII key was "the systemone backend failed: 'ascii' codec ..."
    env = _env(tmp_path, scripted.base_url, key)
    routed = tui_router("route", "--json", MESSAGE, env=env)
    assert routed.returncode == 1, routed.stderr
    decision = json.loads(routed.stdout)
    assert decision["band"] == "unresolved" and decision["action"] == "fallback"
    assert decision["error"] == (
        f"{scripted.base_url}/systemone: the API key in $QA5_KEY holds {what}, which an HTTP header cannot carry; "
        "it was not sent: set $QA5_KEY to the key alone (one line, as issued)"
    )
    doctor = tui_router("doctor", env=env)
    assert doctor.returncode == 2 and "holds " + what in doctor.stderr
    assert scripted.requests == []  # nothing went out: no retries against a header that cannot be sent
    for text in (routed.stdout, routed.stderr, doctor.stdout, doctor.stderr):
        assert SECRET not in text and "Illegal header" not in text and "codec" not in text


def test_a_key_with_only_a_trailing_newline_is_still_sent(scripted, tmp_path):
    env = _env(tmp_path, scripted.base_url, SECRET + "\n")  # `export KEY=$(cat keyfile)` keeps none, `read` may
    routed = tui_router("route", "--json", MESSAGE, env=env)
    assert routed.returncode == 0, routed.stderr
    assert scripted.posts[0].headers["authorization"] == f"Bearer {SECRET}"


def _candidates_pane(screen: str) -> str:
    """The Candidates pane's text (top left, bordered) as one line, the way a person reads it."""
    rows = [line.split("│")[1].strip() for line in screen.splitlines()[2:11] if line.count("│") >= 2]
    return " ".join(row for row in rows if row)


async def test_a_slow_server_turn_says_what_it_waits_for_and_keeps_counting(scripted, tmp_path):
    # it said "Retrieving…" for the whole wait: retrieval was long done, and nothing named the server,
    # how long it had waited or when it would give up
    from app_harness import screen_text, settle

    async with asked(scripted, tmp_path, delay=3.0, pause=0.3, timeout=2) as (app, pilot, box):
        first = _candidates_pane(screen_text(app))
        assert "Retrieving" not in first
        assert "waiting for the decision" in first and "127.0.0.1" in first and "0 s so far" in first
        assert "gives up after 2 s" in first
        await pilot.pause(1.2)  # the note counts on while the server is silent; the input stays usable
        assert "1 s so far" in _candidates_pane(screen_text(app))
        assert box.has_focus
        await pilot.press(*"next")
        assert box.value == "next"
        await settle(app, pilot)
        decision = app.session.turns[0].decision
        assert decision.band == "unresolved" and "no complete reply within 2 s" in decision.error
        assert "so far" not in screen_text(app)  # the note leaves with the answer
        await app.router.aclose()


async def test_the_confirm_dialog_scrolls_to_the_arguments_with_the_keyboard_at_80x24(tmp_path):
    # At 80x24 the details scroll so the buttons stay on screen, but the focus sits on the buttons and
    # no key scrolled: the arguments of the tool about to be approved (below the fold) could not be read
    import sys

    from app_harness import confidence_of, make_app, make_config, screen_text, settle, submit, thresholds_for

    body = "the deploy finished " * 30 + "END-OF-ARGUMENTS"
    builder = f"import json, sys; json.load(sys.stdin); print(json.dumps({{'to': '+15550100', 'body': {body!r}}}))"
    config = make_config(tmp_path, arguments={"command": [sys.executable, "-c", builder], "timeout": 20})
    message = "text 555-0100 that the deploy finished"
    choice, confidence = confidence_of(config, message)
    assert choice == "send_sms"
    app = make_app(config)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        app.set_thresholds(*thresholds_for("medium", confidence))
        await submit(app, pilot, message)
        assert type(app.screen).__name__ == "ConfirmTurnModal"
        assert "arguments" in screen_text(app) and "a person decides" not in screen_text(app)  # the rest below the fold
        for _ in range(8):
            await pilot.press("down")
        await pilot.pause()
        assert "a person decides" in screen_text(app)
        assert app.screen.query_one("#confirm-body").scroll_y > 0
        await pilot.press("pageup")
        await pilot.pause()
        assert app.screen.query_one("#confirm-body").scroll_y == 0
        assert app.screen.focused is not None and app.screen.focused.id == "approve"  # y/n/enter still answer
        await pilot.press("n")
        await settle(app, pilot)
        assert app.session.turns[0].decision.outcome == "declined"


async def test_switching_backend_while_a_turn_waits_on_the_server_lets_that_turn_finish(scripted, tmp_path):
    # `backend: use local` closed the System One client under the request in flight: the turn ended
    # unresolved with "the server broke off its reply (ReadError) ... check the server", blaming a
    # server that was about to answer
    from app_harness import notifications, settle

    async with asked(scripted, tmp_path, delay=1.5, pause=0.4, size=(120, 40)) as (app, pilot, _):
        assert scripted.posts  # the question is at the server
        app.use_backend("local")
        await settle(app, pilot)
        if type(app.screen).__name__ == "ConfirmTurnModal":
            await pilot.press("escape")
            await settle(app, pilot)
        assert app.router.backend.name == "local"
        decision = app.session.turns[0].decision
        assert decision.error == "" and "broke off" not in " ".join(notifications(app))
        assert decision.backend == "systemone" and decision.model == "scripted-model-1"  # answered where it was asked


async def test_enter_on_a_turn_whose_fallback_is_running_does_not_say_to_send_it(tmp_path):
    # Enter on the row while its fallback ran said "This turn waits for the fallback LLM: press f to send it."
    from app_harness import fallback_section, make_app, make_config, notifications, settle, submit

    from tui_router.app.widgets.decision_log import DecisionLog

    pidfile = tmp_path / "pid"
    app = make_app(make_config(tmp_path, fallback=fallback_section("sleepy.py", "30", str(pidfile))))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        app.set_thresholds(1.0, 1.0)  # every turn low: fallback pending
        await submit(app, pilot, "what is the capital of Mars")
        await pilot.press("escape", "f")
        for _ in range(200):
            await pilot.pause(0.02)
            if pidfile.exists() and pidfile.read_text():
                break
        assert app.query_one(DecisionLog).row_cells(0)["outcome"].startswith("llm ")
        await pilot.press("enter")
        await pilot.pause()
        said = notifications(app)[-1]
        assert "press f to send it" not in said and "running" in said
        await pilot.press("c")
        await settle(app, pilot)
        assert app.session.turns[0].fallback is None


async def test_save_screenshot_without_a_downloads_folder_saves_beside_the_sessions(tmp_path, monkeypatch):
    # the palette's "Save screenshot" said only "Failed to save screenshot" on a machine with no
    # ~/Downloads (this one: root on a server); the operator could not capture what they saw
    from app_harness import make_app, make_config, notifications, run_palette, settle

    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # no Downloads folder in it
    monkeypatch.setenv("XDG_DOWNLOAD_DIR", str(tmp_path / "home" / "Downloads"))
    config = make_config(tmp_path)
    app = make_app(config)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await run_palette(app, pilot, "Screenshot")
        for _ in range(100):
            await pilot.pause(0.05)
            if any("screenshot" in n.lower() for n in notifications(app)):
                break
        assert not any("Failed" in n for n in notifications(app)), notifications(app)
    shots = list((tmp_path / "sessions").glob("*.svg"))
    assert len(shots) == 1 and "<svg" in shots[0].read_text(encoding="utf-8")
    assert not (tmp_path / "home").exists()  # no folder made up in the home


async def test_the_first_turn_s_note_counts_the_server_probe_in_when_it_gives_up(scripted, tmp_path, monkeypatch):
    # the first turn probes the server (one question budget) before asking: the note said "gives up
    # after 8 s" while the turn went on for 16
    from app_harness import screen_text, settle
    from servers.scripted import Step

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # no cached profile: the first turn probes
    async with asked(scripted, tmp_path, delay=1.5, pause=0.5, timeout=2, probe=True) as (app, pilot, box):
        note = _candidates_pane(screen_text(app))
        assert "gives up after 4 s" in note and "the first turn probes the server" in note
        await settle(app, pilot)
        if type(app.screen).__name__ == "ConfirmTurnModal":
            await pilot.press("escape")
        box.focus()
        box.value = "remind me to call the dentist tomorrow"
        scripted.script.append(Step(delay=1.5))
        await pilot.press("enter")
        await pilot.pause(0.5)
        note = _candidates_pane(screen_text(app))
        assert "gives up after 2 s" in note and "probes" not in note
        await settle(app, pilot)
        await app.router.aclose()


@pytest.mark.parametrize(
    ("headers", "said"),
    [
        ('{ "X-Tenant" = "acme\\nInjected: 1" }', "the value of header 'X-Tenant' holds a line break"),
        ('{ "X Tenant" = "acme" }', "header name 'X Tenant' is not a valid HTTP header name"),
        ('{ "X-Tenant" = "acmé" }', "which an HTTP header cannot carry"),
    ],
)
def test_a_header_http_cannot_carry_is_refused_when_the_config_loads(scripted, tmp_path, headers, said):
    # it loaded, then every request failed "cannot connect (Illegal header value b'acme\\nInjected: 1')
    # after 3 attempts; is the server running and [systemone] base_url right?"
    config = tmp_path / "tui-router.toml"
    config.write_text(f'backend = "systemone"\n[systemone]\nbase_url = "{scripted.base_url}"\nprobe = false\nheaders = {headers}\n', encoding="utf-8")
    env = {"TUI_ROUTER_CONFIG": str(config), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    for args in (("route", MESSAGE), ("doctor",)):
        done = tui_router(*args, env=env)
        assert done.returncode == 2, done.stderr
        assert said in done.stderr and "cannot connect" not in done.stderr and "Traceback" not in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1
    assert scripted.requests == []


def test_plain_headers_still_go_out(scripted, tmp_path):
    config = tmp_path / "tui-router.toml"
    config.write_text(
        f'backend = "systemone"\n[systemone]\nbase_url = "{scripted.base_url}"\nprobe = false\n'
        'headers = { "X-Tenant" = "acme corp", "X-Trace_ID" = "a\\tb" }\n',
        encoding="utf-8",
    )
    done = tui_router("route", "--json", MESSAGE, env={"TUI_ROUTER_CONFIG": str(config), "XDG_CACHE_HOME": str(tmp_path / "cache")})
    assert done.returncode == 0, done.stderr
    assert scripted.posts[0].headers["x-tenant"] == "acme corp"


async def test_a_turn_waiting_on_its_arguments_command_says_so_not_the_decision_model(tmp_path):
    # a hanging [arguments] command kept the decided turn "Retrieving…" (then, "waiting for the decision
    # model local") until the arguments timeout: the model had answered long before
    import sys

    from app_harness import COMMANDS, confidence_of, make_app, make_config, screen_text, settle, thresholds_for

    pidfile = tmp_path / "pid"
    hang = [sys.executable, str(COMMANDS / "args_maker.py"), "sleep", str(pidfile)]
    config = make_config(tmp_path, arguments={"command": hang, "timeout": 2})
    message = "text 555-0100 that the deploy finished"
    _, confidence = confidence_of(config, message)
    app = make_app(config)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        app.set_thresholds(*thresholds_for("medium", confidence))
        box = app.query_one("#message")
        box.value = message
        await pilot.press("enter")
        for _ in range(100):
            await pilot.pause(0.05)
            if pidfile.exists() and pidfile.read_text():
                break
        await pilot.pause(0.2)
        note = _candidates_pane(screen_text(app))
        assert "building its arguments" in note and "[arguments] command" in note and "stopped after 2 s" in note
        assert "decision model" not in note
        await settle(app, pilot)
        assert type(app.screen).__name__ == "ConfirmTurnModal"  # then the dialog, with the arguments' error
        await pilot.press("escape")
        await settle(app, pilot)
        assert app.session.turns[0].arguments is not None and "timed out" in app.session.turns[0].arguments.error


async def test_replay_against_a_slow_server_says_what_its_first_turn_waits_for(scripted, tmp_path):
    # the summary said "Waiting for the router…" for as long as the server took over the first turn
    from app_harness import make_app, make_config, screen_text, settle
    from servers.scripted import Step

    from tui_router.session import Turn, load_session, new_session, save_session

    session = new_session("tiny")
    session.turns = [Turn(message=MESSAGE, label="send_sms"), Turn(message="remind me to call the dentist", label="create_reminder")]
    path = save_session(session, tmp_path / "monday.toml")
    scripted.script.append(Step(delay=2.0))
    systemone = {"base_url": scripted.base_url, "timeout": 10, "max_retries": 0, "probe": False}
    app = make_app(make_config(tmp_path, backend="systemone", systemone=systemone), replay=load_session(path))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause(0.8)
        shown = " ".join(line.strip("│ ") for line in screen_text(app).splitlines())
        assert "Waiting for the router" not in shown
        assert "Replaying 1/2: waiting for the decision model systemone" in shown and scripted.base_url in shown.replace(" ", "")
        await settle(app, pilot)
        assert "2 turns replayed" in screen_text(app)
        await app.router.aclose()


def test_doctor_on_a_server_that_lists_models_but_answers_too_slowly_prints_its_table(scripted, tmp_path):
    # GET /models answered at once, the question timed out: doctor called the server unreachable (exit 2)
    # and printed only the timeout, dropping the table that showed the server and its model list answering
    from servers.scripted import Step

    scripted.script.append(Step(delay=3.0))
    config = tmp_path / "tui-router.toml"
    config.write_text(f'backend = "systemone"\n[systemone]\nbase_url = "{scripted.base_url}"\ntimeout = 1\nmax_retries = 0\n', encoding="utf-8")
    done = tui_router("doctor", env={"TUI_ROUTER_CONFIG": str(config), "XDG_CACHE_HOME": str(tmp_path / "cache")})
    assert done.returncode == 1, done.stdout + done.stderr
    rows = {line.split("  ")[0]: line for line in done.stdout.splitlines()}
    assert "reachable" in rows["server"] and "unreachable" not in rows["server"]
    assert "answers" in rows["GET /models"] and "jev-latest" in rows["GET /models"]
    assert "unknown" in rows["model 'jev-latest'"] and "no complete reply within 1 s" in rows["model 'jev-latest'"]
    assert not list((tmp_path / "cache").rglob("*.json"))  # an unanswered probe is not cached


async def test_quitting_while_a_turn_waits_on_the_server_saves_it_unresolved_with_why(scripted, tmp_path):
    # it was saved as a message with no decision at all: nothing in the file said it was never decided
    import tomllib

    async with asked(scripted, tmp_path, delay=3.0, pause=0.4, size=(120, 40)) as (app, pilot, _):
        assert scripted.posts  # the question is at the server
        await app.action_quit()
        await pilot.pause()
    path = app.session.path
    saved = tomllib.loads(path.read_text(encoding="utf-8"))["turns"]
    assert [t["message"] for t in saved] == [MESSAGE]
    decision = saved[0]["decision"]
    assert decision["band"] == "unresolved" and decision["outcome"] == "pending"
    assert decision["error"] == "the console quit before the decision arrived"


async def test_a_two_stage_turn_s_note_counts_both_questions_in_when_it_gives_up(scripted, tmp_path):
    # with more options than the server takes, a turn asks twice (category, then tool), each question
    # with its own budget; the note said "gives up after 2 s" while the turn could go on for 4
    from app_harness import screen_text, settle

    # 7 options (4 tools, 2 escalation, none) > 5: two stages (3 categories + none, then <= 5); the
    # server is slow on the category question
    async with asked(scripted, tmp_path, delay=1.5, pause=0.5, timeout=2, max_options=5) as (app, pilot, _):
        note = _candidates_pane(screen_text(app))
        assert "gives up after 4 s" in note and "two-stage routing asks 2 questions" in note, note
        await settle(app, pilot)
        assert app.session.turns[0].decision.path == "two-stage"
        assert len(scripted.posts) == 2
        await app.router.aclose()
