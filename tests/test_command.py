"""The one subprocess runner (tui_router/command.py) that the fallback and the arguments command
share: real subprocesses, no mocks."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

import pytest
from test_fallback import _background_pid, _end_pidfile, _ended, _written

from tui_router.command import EXIT_GRACE, CommandRun, child_env, run_command

COMMANDS = Path(__file__).parent / "commands"
PY = sys.executable


async def test_stdin_in_output_out_and_exit_code() -> None:
    echo = "import sys; data = sys.stdin.read(); print(data.upper()); print('warn', file=sys.stderr)"
    run = await run_command([PY, "-c", echo], "héllo $(id)".encode(), timeout=10, output_cap=1000)
    assert run.exit_code == 0
    assert run.output == "HÉLLO $(ID)\n"
    assert run.stderr == "warn\n"
    assert not run.timed_out and not run.start_error
    assert not run.output_truncated and not run.stderr_truncated
    assert run.duration_ms > 0
    assert run.error("test command") == ""


async def test_a_failing_command_names_its_code_and_last_stderr_line() -> None:
    fail = "import sys; print('first', file=sys.stderr); print('model offline', file=sys.stderr); sys.exit(3)"
    run = await run_command([PY, "-c", fail], b"", timeout=10, output_cap=100)
    assert run.exit_code == 3
    assert run.error("test command") == "test command exited with code 3: model offline"
    quiet = await run_command([PY, "-c", "raise SystemExit(5)"], b"", timeout=10, output_cap=100)
    assert quiet.error("test command") == "test command exited with code 5"


async def test_output_and_stderr_are_capped_and_the_rest_drained() -> None:
    # 2 MB on each pipe: far past a pipe buffer, so an undrained pipe would hang until the timeout.
    flood = "import sys; sys.stdout.write('x' * 2_000_000); sys.stderr.write('e' * 2_000_000)"
    run = await run_command([PY, "-c", flood], b"", timeout=20, output_cap=1000, stderr_cap=10)
    assert run.exit_code == 0 and not run.timed_out
    assert run.output == "x" * 1000 and run.output_truncated
    assert run.stderr == "e" * 10 and run.stderr_truncated


async def test_a_character_cut_by_the_cap_is_dropped_not_garbled() -> None:
    run = await run_command([PY, "-c", "print('ü' * 10)"], b"", timeout=10, output_cap=5)
    assert run.output == "üü"  # 4 bytes; the half of the third is dropped
    assert run.output_truncated


async def test_a_command_that_never_reads_stdin_does_not_break_the_run() -> None:
    run = await run_command([PY, "-c", "print('ok')"], b"y" * 5_000_000, timeout=10, output_cap=100)
    assert run.exit_code == 0 and run.output == "ok\n"


async def test_timeout_kills_the_command_and_its_background_child(tmp_path: Path) -> None:
    pidfile = tmp_path / "pids"
    started = time.monotonic()
    run = await run_command([PY, str(COMMANDS / "forks.py"), str(pidfile), "hang"], b"", timeout=1.0, output_cap=1000)
    assert run.timed_out
    assert run.exit_code is None
    assert run.output == "started a background job\n"  # what it printed before the timeout is kept
    assert run.error("test command") == "test command timed out after 1 s and was stopped"
    assert time.monotonic() - started < 8
    assert _ended(_background_pid(pidfile))


async def test_exit_ends_a_background_child_that_holds_the_pipes(tmp_path: Path) -> None:
    pidfile = tmp_path / "pids"
    run = await run_command([PY, str(COMMANDS / "forks.py"), str(pidfile), "exit"], b"", timeout=30, output_cap=1000)
    assert run.exit_code == 0 and not run.timed_out
    assert run.output == "started a background job\n"
    # done by the exit grace, not by the 30 s timeout
    assert run.duration_ms < (EXIT_GRACE + 8) * 1000
    assert _ended(_background_pid(pidfile))


async def test_cancel_kills_the_group_and_propagates(tmp_path: Path) -> None:
    pidfile = tmp_path / "pids"
    argv = [PY, str(COMMANDS / "forks.py"), str(pidfile), "hang"]
    task = asyncio.create_task(run_command(argv, b"", timeout=60, output_cap=1000))
    await _written(pidfile)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert _ended(_background_pid(pidfile))


async def test_commands_that_cannot_start(tmp_path: Path) -> None:
    missing = await run_command(["no-such-command-xyz"], b"", timeout=5, output_cap=10)
    assert missing.start_error and missing.exit_code is None
    assert missing.error("fallback command") == "fallback command not found: 'no-such-command-xyz' (is it installed and on PATH?)"
    plain = tmp_path / "not-executable.sh"
    plain.write_text("#!/bin/sh\necho hi\n")
    plain.chmod(0o644)
    refused = await run_command([str(plain)], b"", timeout=5, output_cap=10)
    assert refused.error("arguments command") == f"arguments command is not executable: {str(plain)!r}"
    empty = await run_command([], b"", timeout=5, output_cap=10)
    assert empty.error("arguments command") == "arguments command is not configured"
    nul = await run_command([PY, "-c", "print(1)\x00"], b"", timeout=5, output_cap=10)
    assert nul.error("x command").startswith(f"x command {PY!r} could not start: ")


async def test_env_is_the_whole_environment_and_cwd_is_used(tmp_path: Path) -> None:
    show = "import os; print(sorted(k for k in os.environ if k.startswith('RUNNER_')), os.getcwd())"
    run = await run_command([PY, "-c", show], b"", timeout=10, output_cap=1000, env={"RUNNER_ONLY": "1"}, cwd=tmp_path)
    assert run.output == f"['RUNNER_ONLY'] {tmp_path.resolve()}\n"


def test_child_env_drops_named_secrets_and_optionally_credential_like_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RUNNER_NAMED", "a")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-real")
    monkeypatch.setenv("MY_SERVICE_TOKEN", "t")
    monkeypatch.setenv("RUNNER_PLAIN", "visible")
    named_only = child_env(["RUNNER_NAMED"])
    assert "RUNNER_NAMED" not in named_only
    assert named_only["OPENAI_API_KEY"] == "sk-not-real" and named_only["RUNNER_PLAIN"] == "visible"
    for name in ("DEPLOY_KEY", "DB_PASSWD", "GCP_CREDENTIALS_FILE"):  # the words beyond the header list
        monkeypatch.setenv(name, "x")
    strict = child_env(["RUNNER_NAMED"], drop_credential_like=True)
    assert not {"RUNNER_NAMED", "OPENAI_API_KEY", "MY_SERVICE_TOKEN", "DEPLOY_KEY", "DB_PASSWD", "GCP_CREDENTIALS_FILE"} & set(strict)
    assert strict["RUNNER_PLAIN"] == "visible"
    assert child_env()["RUNNER_NAMED"] == "a"


def test_error_sentence_for_each_outcome() -> None:
    assert CommandRun(exit_code=0).error("c") == ""
    assert CommandRun(timed_out=True, timeout=2.5).error("c") == "c timed out after 2.5 s and was stopped"
    assert CommandRun(exit_code=1, stderr="\n  \n").error("c") == "c exited with code 1"
    assert CommandRun(exit_code=-9, stderr="x" * 300).error("c") == "c exited with code -9: " + "x" * 200


# ------------------------------------------------------- the arguments command now runs by the same rules


async def test_arguments_command_drops_config_named_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    from test_arguments import EMAIL_TOOL, maker

    from tui_router.arguments import run_arguments_command

    monkeypatch.setenv("JEV_CRED_HOLDER", "not-a-credential-looking-name")  # only config can name it
    monkeypatch.setenv("RUNNER_PLAIN", "visible")
    named = await run_arguments_command(EMAIL_TOOL, "x", maker("env"), secret_env=["JEV_CRED_HOLDER"])
    assert "JEV_CRED_HOLDER" not in named.values["names"] and "RUNNER_PLAIN" in named.values["names"]
    unnamed = await run_arguments_command(EMAIL_TOOL, "x", maker("env"))
    assert "JEV_CRED_HOLDER" in unnamed.values["names"]  # the name alone would not have dropped it


async def test_arguments_command_done_at_its_exit_despite_a_background_child(tmp_path: Path) -> None:
    from test_arguments import EMAIL_TOOL

    from tui_router.arguments import run_arguments_command
    from tui_router.config import ArgumentsConfig

    pidfile = tmp_path / "pids"
    # Leaves a child holding stdout, prints its JSON and exits: waiting for the pipes would take the 30 s.
    script = (
        "import json, subprocess, sys; sys.stdin.read();"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(1000)']);"
        f"open({str(pidfile)!r}, 'w').write(str(child.pid));"
        "print(json.dumps({'to': 'a@b.io'}), flush=True)"
    )
    config = ArgumentsConfig(command=[PY, "-c", script], timeout=30)
    started = time.monotonic()
    result = await run_arguments_command(EMAIL_TOOL, "x", config)
    assert result.error == "" and result.valid and result.values == {"to": "a@b.io"}
    assert time.monotonic() - started < 10
    assert _ended(_background_pid(pidfile))


async def test_duration_is_in_milliseconds() -> None:
    run = await run_command([PY, "-c", "import time; time.sleep(0.3)"], b"", timeout=20, output_cap=10)
    assert run.exit_code == 0 and run.duration_ms >= 300


async def test_progress_gets_the_decoded_output_so_far_until_the_cap() -> None:
    seen: list[str] = []
    write = "import sys, time; sys.stdout.buffer.write(b'ok \\xff'); sys.stdout.flush(); time.sleep(0.2); print(' more')"
    run = await run_command([PY, "-c", write], b"", timeout=20, output_cap=1000, progress=seen.append)
    assert run.output == "ok \ufffd more\n"
    assert seen[0] == "ok \ufffd" and seen[-1] == run.output
    flood: list[str] = []
    many = "import sys, time\nfor _ in range(20):\n    sys.stdout.write('x' * 600); sys.stdout.flush(); time.sleep(0.01)"
    capped = await run_command([PY, "-c", many], b"", timeout=20, output_cap=1000, progress=flood.append)
    assert capped.output == "x" * 1000 and capped.output_truncated
    assert flood[-1] == "x" * 1000
    assert len(flood) == len(set(flood))  # nothing more once the cap is reached


async def test_output_of_a_background_child_within_the_exit_grace_is_kept() -> None:
    # The command exits at once; a child it started writes 0.1 s later and exits (well within EXIT_GRACE).
    late = "import subprocess, sys; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(0.1); print(\"late\")']); print('early', flush=True)"
    run = await run_command([PY, "-c", late], b"", timeout=30, output_cap=1000)
    assert run.exit_code == 0 and run.output == "early\nlate\n"


async def test_a_grandchild_in_its_own_session_holding_the_pipes_does_not_hold_the_run(tmp_path: Path) -> None:
    # It escaped the command's process group, so the kill misses it and the pipes stay open:
    # the runner gives them a moment and returns anyway.
    pidfile = tmp_path / "escaped"
    code = (
        "import subprocess, sys, time;"
        "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)'], start_new_session=True);"
        f"open({str(pidfile)!r}, 'w').write(str(p.pid));"
        "print('started', flush=True); time.sleep(30)"
    )
    started = time.monotonic()
    try:
        run = await run_command([PY, "-c", code], b"", timeout=1.0, output_cap=1000)
        assert run.timed_out and run.output == "started\n"
        assert time.monotonic() - started < 10
    finally:
        await _end_pidfile(pidfile)
