"""The fallback command runner, with real subprocesses from tests/commands/."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

import pytest

from tui_router.config import FallbackConfig
from tui_router.fallback import ENV_MESSAGE_CAP, FallbackResult, message_env, run_fallback

COMMANDS = Path(__file__).parent / "commands"


def cmd(name: str, *args: str, timeout: float = 10.0, cap: int = 65536) -> FallbackConfig:
    return FallbackConfig(command=[sys.executable, str(COMMANDS / name), *args], timeout=timeout, output_cap=cap)


async def test_message_goes_to_stdin_and_env() -> None:
    message = "café [bold]naïve[/] $(rm -rf /) `id` ; echo hi"
    result = await run_fallback(message, cmd("upper.py"))
    assert result.ok
    assert result.exit_code == 0
    assert result.output == f"LLM: {message.upper()}\nenv chars: {len(message)}\n"
    assert result.error == ""
    assert result.duration_ms > 0
    record = result.to_record()
    assert record.output == result.output
    assert record.exit_code == 0
    assert record.command[-1].endswith("upper.py")


async def test_progress_gets_the_output_so_far() -> None:
    """The console streams the fallback's output through `progress` (issue 13): it must reach the runner."""
    seen: list[str] = []
    result = await run_fallback("hello", cmd("upper.py"), progress=seen.append)
    assert result.output == "LLM: HELLO\nenv chars: 5\n"
    assert seen and seen[-1] == result.output
    assert all(result.output.startswith(part) for part in seen)


async def test_failing_command_keeps_output_and_says_why() -> None:
    result = await run_fallback("hello", cmd("fail.py"))
    assert not result.ok
    assert result.exit_code == 3
    assert result.output == "partial answer\n"
    assert "model overloaded" in result.stderr
    assert result.error == "fallback command exited with code 3: model overloaded, try later"


async def test_missing_command_is_an_error_not_an_exception() -> None:
    config = FallbackConfig(command=["no-such-llm-command-xyz", "-m", "x"])
    result = await run_fallback("hello", config)
    assert result.exit_code is None
    assert result.error == "fallback command not found: 'no-such-llm-command-xyz' (is it installed and on PATH?)"


async def test_not_executable(tmp_path: Path) -> None:
    script = tmp_path / "llm.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(0o644)
    result = await run_fallback("hello", FallbackConfig(command=[str(script)]))
    assert result.error == f"fallback command is not executable: {str(script)!r}"


async def test_no_command_configured_says_how_to_configure() -> None:
    result = await run_fallback("hello", FallbackConfig(), config_location="/home/x/.config/tui-router/config.toml")
    assert result.error.startswith("no fallback command is configured; add [fallback] command = [")
    assert "/home/x/.config/tui-router/config.toml" in result.error


async def test_timeout_stops_the_command_and_keeps_partial_output(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    started = time.perf_counter()
    result = await run_fallback("hello", cmd("sleepy.py", "30", str(pidfile), timeout=1.0))
    elapsed = time.perf_counter() - started
    assert result.error == "fallback command timed out after 1 s and was stopped"
    # Stopped at the timeout, not long after it: the bound leaves room for a loaded machine (the
    # kill and pipe settling take milliseconds) but fails a run that waits several times its timeout.
    assert 1.0 <= elapsed < 3.5, elapsed
    assert 1000.0 <= result.duration_ms < 3500.0
    assert result.exit_code is None
    assert result.output == "thinking...\n"
    with pytest.raises(ProcessLookupError):
        os.kill(int(pidfile.read_text()), 0)


async def test_output_cap_truncates_and_never_blocks() -> None:
    result = await run_fallback("hello", cmd("flood.py", "500000", cap=1000))
    assert result.ok
    assert len(result.output) == 1000
    assert result.truncated
    assert result.summary().endswith(" ms, 1,000 bytes of output, cut at the 1,000-byte output_cap")


async def test_cap_never_splits_a_character() -> None:
    result = await run_fallback("ü" * 100, cmd("upper.py", cap=10))
    assert result.output == "LLM: ÜÜ"  # 5 + 2*2 bytes; the half of the third Ü is dropped
    assert result.truncated
    # the cap counts bytes, and so does the summary: 7 characters shown, 10 bytes read (was "7 characters")
    assert result.summary().endswith(" ms, 10 bytes of output, cut at the 10-byte output_cap")
    assert result.to_record().output_cap == 10 and result.to_record().cut_note() == "output cut at the 10-byte output_cap"


async def test_cancel_kills_the_command(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    task = asyncio.create_task(run_fallback("hello", cmd("sleepy.py", "30", str(pidfile))))
    for _ in range(200):
        if pidfile.exists() and pidfile.read_text():
            break
        await asyncio.sleep(0.02)
    pid = int(pidfile.read_text())
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


async def test_large_message_on_stdin_and_env_is_capped() -> None:
    message = "ü" * 80_000  # 160 KB of UTF-8: over the per-variable OS limit
    result = await run_fallback(message, cmd("upper.py", cap=400_000))
    assert result.ok, result.error
    assert result.output.startswith("LLM: " + "Ü" * 80_000 + "\n")
    assert f"env chars: {ENV_MESSAGE_CAP // 2}\n" in result.output
    env = message_env(message)
    assert env["TUI_ROUTER_MESSAGE_TRUNCATED"] == "1"
    assert message_env("a\x00b")["TUI_ROUTER_MESSAGE"] == "ab"


def test_summary_line() -> None:
    ok = FallbackResult(command=["x"], exit_code=0, output="abc", duration_ms=12.4)
    assert ok.summary() == "exit 0 in 12 ms, 3 bytes of output"
    wide = FallbackResult(command=["x"], exit_code=0, output="日本", output_bytes=6, duration_ms=12.4)
    assert wide.summary() == "exit 0 in 12 ms, 6 bytes of output"  # two characters, six bytes: the cap's unit
    one = FallbackResult(command=["x"], exit_code=0, output="a", duration_ms=1)
    assert one.summary() == "exit 0 in 1 ms, 1 byte of output"


# -------------------------------------------------------------- process group and environment (issue 14)


def _ended(pid: int, wait: float = 5.0) -> bool:
    """True once `pid` no longer runs (gone, or a zombie waiting for a reaper that may not come)."""
    import time

    stop = time.monotonic() + wait
    while time.monotonic() < stop:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        except OSError:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return True
            state = "R"
        if state in ("Z", "X"):
            return True
        time.sleep(0.05)
    return False


def _background_pid(pidfile: Path) -> int:
    return int(pidfile.read_text().split()[0])


async def _end_pidfile(pidfile: Path) -> None:
    """Kill the process whose pid the command wrote (one the runner could not reach), then let its pipes close."""
    if pidfile.exists():
        try:
            os.kill(int(pidfile.read_text()), 9)
        except ProcessLookupError:
            pass
    await asyncio.sleep(0.3)  # while this test's event loop still runs


async def _written(pidfile: Path) -> None:
    """Until the command has written its background child's pid (at most 5 s)."""
    for _ in range(250):
        if pidfile.exists() and pidfile.read_text().strip():
            return
        await asyncio.sleep(0.02)


async def test_timeout_ends_what_the_command_started_in_the_background(tmp_path: Path) -> None:
    pidfile = tmp_path / "pids"
    result = await run_fallback("hello", cmd("forks.py", str(pidfile), "hang", timeout=1.0))
    assert result.error == "fallback command timed out after 1 s and was stopped"
    assert result.output == "started a background job\n"
    assert _ended(_background_pid(pidfile))


async def test_a_command_that_exits_leaves_no_background_job(tmp_path: Path) -> None:
    pidfile = tmp_path / "pids"
    result = await run_fallback("hello", cmd("forks.py", str(pidfile), "exit", timeout=20.0))
    assert result.ok, result.error
    assert result.exit_code == 0
    assert result.output == "started a background job\n"
    assert result.duration_ms < 10_000  # ended by the exit grace, not by the 20 s timeout
    assert _ended(_background_pid(pidfile))


async def test_cancel_ends_the_whole_group(tmp_path: Path) -> None:
    pidfile = tmp_path / "pids"
    task = asyncio.create_task(run_fallback("hello", cmd("forks.py", str(pidfile), "hang", timeout=30.0)))
    await _written(pidfile)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert _ended(_background_pid(pidfile))


async def test_secret_variables_are_not_passed_to_the_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROUTER_TEST_KEY", "sk-test-secret-123")
    monkeypatch.setenv("ROUTER_TEST_PLAIN", "visible")
    show = "import os; print(os.environ.get('ROUTER_TEST_KEY', 'absent'), os.environ.get('ROUTER_TEST_PLAIN', 'absent'))"
    config = FallbackConfig(command=[sys.executable, "-c", show], timeout=10.0)
    result = await run_fallback("hello", config, secret_env=["ROUTER_TEST_KEY"])
    assert result.output == "absent visible\n"
    # without the names, the variable would have been inherited: the test can fail
    inherited = await run_fallback("hello", config)
    assert inherited.output == "sk-test-secret-123 visible\n"


# The limits one by one, with small real commands (python -c) so each boundary is exact.


def py(code: str, *, timeout: float = 10.0, cap: int = 65536) -> FallbackConfig:
    return FallbackConfig(command=[sys.executable, "-c", code], timeout=timeout, output_cap=cap)


async def test_output_exactly_at_the_cap_is_whole_and_one_byte_more_is_truncated() -> None:
    exact = await run_fallback("", py("import sys; sys.stdout.write('x' * 1000)", cap=1000))
    assert (exact.output, exact.truncated) == ("x" * 1000, False)
    assert exact.summary().endswith(" ms, 1,000 bytes of output")
    assert exact.to_record().output_cap is None  # not cut: the cap is not recorded
    # the extra byte arrives alone, after the cap is full: it still marks the output truncated
    late = await run_fallback(
        "", py("import sys, time; sys.stdout.write('x' * 1000); sys.stdout.flush(); time.sleep(0.3); sys.stdout.write('y')", cap=1000)
    )
    assert (late.output, late.truncated) == ("x" * 1000, True)
    one = await run_fallback("", py("import sys; sys.stdout.write('abc')", cap=1))
    assert (one.output, one.truncated) == ("a", True)


async def test_an_incomplete_character_at_the_end_of_whole_output_shows_as_a_replacement() -> None:
    # not truncated: the stray byte is the command's own, shown as U+FFFD rather than hidden
    result = await run_fallback("", py("import sys; sys.stdout.buffer.write(b'ok\\xc3')"))
    assert (result.output, result.truncated) == ("ok\ufffd", False)


async def test_exit_code_without_stderr_and_a_long_stderr_line() -> None:
    quiet = await run_fallback("", py("import sys; sys.exit(4)"))
    assert quiet.error == "fallback command exited with code 4"
    long_line = "e" * 300
    loud = await run_fallback("", py(f"import sys; print('first', file=sys.stderr); print('{long_line}', file=sys.stderr); sys.exit(5)"))
    assert loud.error == "fallback command exited with code 5: " + "e" * 200


async def test_the_timeout_keeps_stderr_and_the_truncation_mark() -> None:
    code = "import sys, time; sys.stdout.write('z' * 100); sys.stdout.flush(); print('warming up', file=sys.stderr, flush=True); time.sleep(30)"
    result = await run_fallback("", py(code, timeout=1.0, cap=10))
    assert result.error == "fallback command timed out after 1 s and was stopped"
    assert (result.output, result.truncated, result.stderr) == ("z" * 10, True, "warming up\n")


async def test_a_grandchild_holding_the_pipes_does_not_hold_the_turn(tmp_path: Path) -> None:
    # The command starts a background process that inherits stdout and outlives it: after the kill
    # the pipes never reach EOF, and the runner must still return soon after the timeout.
    pidfile = tmp_path / "grandchild"
    code = (
        "import subprocess, sys, time;"
        f"p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)']);"
        f"open({str(pidfile)!r}, 'w').write(str(p.pid));"
        "print('started', flush=True); time.sleep(30)"
    )
    started = time.perf_counter()
    try:
        result = await run_fallback("", py(code, timeout=1.0))
        elapsed = time.perf_counter() - started
        assert result.error == "fallback command timed out after 1 s and was stopped"
        assert elapsed < 5.0, elapsed  # timeout + at most a second for the pipes + a loaded machine
    finally:
        await _end_pidfile(pidfile)


async def test_the_command_runs_in_the_given_folder_and_records_when(tmp_path: Path) -> None:
    result = await run_fallback("", py("import os; print(os.getcwd())"), cwd=tmp_path)
    assert result.output == f"{tmp_path.resolve()}\n"
    assert result.at is not None and result.at.startswith("20") and result.at.endswith("Z")
    here = await run_fallback("", py("import os; print(os.getcwd())"))
    assert here.output == f"{os.getcwd()}\n"


async def test_a_command_the_system_cannot_start(tmp_path: Path) -> None:
    garbage = tmp_path / "llm"
    garbage.write_bytes(b"\x00\x01\x02 not a program")
    garbage.chmod(0o755)
    result = await run_fallback("hello", FallbackConfig(command=[str(garbage)]))
    assert result.error == f"fallback command {str(garbage)!r} could not start: Exec format error"


async def test_not_configured_without_a_location_points_at_locate() -> None:
    result = await run_fallback("hello", FallbackConfig())
    assert result.error.endswith("to the config file (see `tui-router locate config`)")


def test_env_message_cap_boundary_and_a_character_cut_in_half() -> None:
    exact = "a" * ENV_MESSAGE_CAP
    env = message_env(exact)
    assert env["TUI_ROUTER_MESSAGE"] == exact and "TUI_ROUTER_MESSAGE_TRUNCATED" not in env
    # byte 100,000 falls inside a two-byte character: the half is dropped, never an error
    cut = message_env("a" + "ü" * 60_000)
    assert cut["TUI_ROUTER_MESSAGE"] == "a" + "ü" * 49_999
    assert cut["TUI_ROUTER_MESSAGE_TRUNCATED"] == "1"


def test_record_keeps_every_field() -> None:
    result = FallbackResult(
        command=["llm"], exit_code=1, output="o", stderr="e", error="boom", duration_ms=12.345, truncated=True, output_cap=1,
        at="2026-11-30T10:04:20Z",
    )
    record = result.to_record()
    assert record.model_dump() == {
        "command": ["llm"], "exit_code": 1, "output": "o", "stderr": "e", "error": "boom",
        "duration_ms": 12.3, "truncated": True, "output_cap": 1, "at": "2026-11-30T10:04:20Z",
    }
    truncated = FallbackResult(command=["x"], exit_code=0, output="abc", duration_ms=12.4, truncated=True, output_cap=3)
    assert truncated.summary() == "exit 0 in 12 ms, 3 bytes of output, cut at the 3-byte output_cap"
    assert truncated.to_record().output_cap == 3
