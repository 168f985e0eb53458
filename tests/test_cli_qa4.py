"""CLI defects left by the third QA pass: live files counted twice by folder scans, labels written
into a live file, global options a command does not use accepted before it."""

from __future__ import annotations

from pathlib import Path

from cli_harness import tui_router


def _env(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "none.toml").write_text("", encoding="utf-8")
    return {"TUI_ROUTER_CONFIG": str(tmp_path / "none.toml"), "XDG_CACHE_HOME": str(tmp_path / "cache")}


def test_a_global_option_a_command_does_not_use_is_refused_before_it_too(tmp_path: Path) -> None:
    # `tui-router --backend x queue FOLDER` listed the queue as if nothing was given: --backend does
    # nothing for queue (the last pass refused it after the command, not before).
    env = _env(tmp_path)
    (tmp_path / "s.toml").write_text('[session]\nid = "s"\n\n[[turns]]\nmessage = "hello"\n', encoding="utf-8")
    for argv, option, prog in [
        (["--backend", "bm25", "queue", str(tmp_path / "s.toml")], "--backend", "tui-router queue"),
        (["--catalog", "demo", "queue", str(tmp_path / "s.toml")], "--catalog", "tui-router queue"),
        (["--backend", "bm25", "models"], "--backend", "tui-router models"),
        (["--catalog", "demo", "doctor"], "--catalog", "tui-router doctor"),
        (["--catalog", "demo", "catalog", "validate", "demo"], "--catalog", "tui-router catalog validate"),
        (["--config", str(tmp_path / "none.toml"), "catalog", "validate", "demo"], "--config", "tui-router catalog validate"),
    ]:
        done = tui_router(*argv, env=env)
        assert done.returncode == 2, (argv, done.stdout)
        assert done.stderr.splitlines()[-1] == f"{prog}: error: {option} does nothing for `{prog}`; leave it out (see `{prog} --help`)"
        assert "Traceback" not in done.stderr and done.stdout == ""
    # options a command takes still work before it, and --config before queue still applies
    queued = tui_router("--config", str(tmp_path / "none.toml"), "queue", str(tmp_path / "s.toml"), env=env)
    assert queued.returncode == 0 and queued.stdout.startswith("queue: 1 unlabelled turn in 1 file"), queued.stderr
    bad = tui_router("--config", str(tmp_path / "missing.toml"), "queue", str(tmp_path / "s.toml"), env=env)
    assert bad.returncode == 2 and "missing.toml" in bad.stderr
    routed = tui_router("--backend", "bm25", "route", "show my calendar", "--json", env=env)
    assert routed.returncode == 0 and '"backend": "bm25"' in routed.stdout


def _turn(message: str, at: str, choice: str | None = None, label: str | None = None) -> str:
    text = f'\n[[turns]]\nmessage = "{message}"\nat = "{at}"\ntags = ["mcp:route_request", "client:probe"]\n'
    if label:
        text += f'label = "{label}"\nlabel_source = "review"\n'
    if choice:
        other = "send_email"
        text += (
            f'\n[turns.decision]\ncandidates = ["{choice}", "{other}"]\nchoice = "{choice}"\n'
            f'probabilities = {{ {choice} = 0.6, {other} = 0.3, defer_to_llm = 0.1 }}\n'
            'confidence = 0.2\nband = "low"\naction = "escalate"\nbackend = "bm25"\n'
        )
    return text


SESSION_HEAD = '[session]\nid = "{id}"\ncatalog = "demo"\n'
# the header an older mcp-serve wrote (no `live = true` yet): still a live file
LIVE_HEAD = SESSION_HEAD.format(id="mcp-2026-11-30") + 'created = "2026-11-30T10:00:00Z"\n'
AGENDA = ("show my calendar for monday", "2026-11-30T10:00:01Z", "list_events")
WEATHER = ("what is the weather in Oslo", "2026-11-30T10:00:02Z", "web_search")
LATER = ("text Jordan that the deploy finished", "2026-11-30T10:05:00Z", "send_sms")


def _folder(tmp_path: Path) -> Path:
    """sessions/ as the README runs it: `mcp-serve` records into live/, a console following the
    live file copied its first two turns into its own session (and labelled one); the third
    arrived after the console closed."""
    sessions = tmp_path / "sessions"
    (sessions / "live").mkdir(parents=True)
    (sessions / "live" / "mcp-2026-11-30.toml").write_text(
        LIVE_HEAD + _turn(*AGENDA) + _turn(*WEATHER) + _turn(*LATER), encoding="utf-8"
    )
    (sessions / "console.toml").write_text(
        SESSION_HEAD.format(id="console") + _turn(*AGENDA, label="list_events") + _turn(*WEATHER), encoding="utf-8"
    )
    return sessions


def test_a_folder_scan_counts_a_followed_live_turn_once(tmp_path: Path) -> None:
    # `tui-router queue sessions` listed every followed turn twice (from live/ and from the console's
    # copy), and eval, replay and what-if counted them twice too.
    import json

    env = _env(tmp_path)
    sessions = _folder(tmp_path)
    queued = tui_router("queue", str(sessions), "--json", env=env)
    assert queued.returncode == 0, queued.stderr
    listed = json.loads(queued.stdout)
    rows = sorted((Path(e["file"]).name, e["turn"], e["message"]) for e in listed["queue"])
    assert listed["total"] == 2 and rows == [("console.toml", 2, WEATHER[0]), ("mcp-2026-11-30.toml", 3, LATER[0])]
    # the live file alone (nobody's copy in the scan) still lists all its unlabelled turns
    alone = json.loads(tui_router("queue", str(sessions / "live"), "--json", env=env).stdout)
    assert alone["total"] == 3
    evaluated = tui_router("eval", str(sessions), "--backend", "bm25", "--json", env=env)
    assert evaluated.returncode == 0, evaluated.stderr
    assert json.loads(evaluated.stdout)["n"] == 1  # the labelled copy, not also its live original
    what_if = tui_router("replay", str(sessions), "--headless", "--what-if", "high=0.5,medium=0.1", "--json", env=env)
    assert what_if.returncode == 0, what_if.stderr
    assert json.loads(what_if.stdout)["turns"] == 3  # three routed turns, not five
    replayed = tui_router("replay", str(sessions), "--headless", "--backend", "bm25", "--json", env=env)
    assert replayed.returncode == 0, replayed.stderr
    assert json.loads(replayed.stdout)["turns"] == 3


def test_a_label_written_into_a_live_file_by_an_older_version_is_not_hidden(tmp_path: Path) -> None:
    # the live turn keeps its label when its copy has none: the copy is the one left out
    import json

    env = _env(tmp_path)
    sessions = _folder(tmp_path)
    live = sessions / "live" / "mcp-2026-11-30.toml"
    live.write_text(LIVE_HEAD + _turn(*AGENDA) + _turn(*WEATHER, label="web_search") + _turn(*LATER), encoding="utf-8")
    listed = json.loads(tui_router("queue", str(sessions), "--json", env=env).stdout)
    assert [(Path(e["file"]).name, e["turn"]) for e in listed["queue"]] == [("mcp-2026-11-30.toml", 3)]
    evaluated = json.loads(tui_router("eval", str(sessions), "--backend", "bm25", "--json", env=env).stdout)
    assert evaluated["n"] == 2


def test_a_review_label_is_never_written_into_a_live_file(tmp_path: Path) -> None:
    # With no server holding its lock (stopped, or rotated to the next file), a review label went
    # into the live file: the server's recording, and hidden by its followed copy in folder scans.
    from tui_router.errors import SessionError
    from tui_router.review import Review

    sessions = _folder(tmp_path)
    live = sessions / "live" / "mcp-2026-11-30.toml"
    before = live.read_bytes()
    review = Review.of_files([sessions], reviewer="ana")
    assert [(e.file.name, e.turn_number) for e in review.entries] == [("console.toml", 2), ("mcp-2026-11-30.toml", 3)]
    review.set_label("web_search")  # the followed turn: labelled in the console's copy
    assert 'label = "web_search"' in (sessions / "console.toml").read_text(encoding="utf-8")
    review.next()
    try:
        review.set_label("send_sms")
    except SessionError as exc:
        assert exc.lines()[0] == (
            f"{live} is a live file the MCP server records, so nothing was written to it; label its turns in a "
            f"console that follows it (tui-router open --follow {live}), which copies them into its own session"
        )
    else:
        raise AssertionError("a label was written into a live file")
    assert live.read_bytes() == before and review.turn().label is None and len(review.history) == 1
    assert not (sessions / "live" / ".mcp-2026-11-30.toml.lock").exists()  # not even claimed
    # `tui-router review` on live files alone: every label would be refused, so it says so at once
    env = _env(tmp_path)
    done = tui_router("review", str(sessions / "live"), "--backend", "bm25", env=env)
    assert done.returncode == 2 and done.stderr.startswith(f"tui-router: {live} is a live file the MCP server records")
    assert live.read_bytes() == before
