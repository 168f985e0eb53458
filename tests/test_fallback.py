"""The fallback command runner, with real subprocesses from tests/commands/."""

from __future__ import annotations

import asyncio
import os
import sys
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
    result = await run_fallback("hello", cmd("sleepy.py", "30", str(pidfile), timeout=1.0))
    assert result.error == "fallback command timed out after 1 s and was stopped"
    assert result.exit_code is None
    assert result.output == "thinking...\n"
    with pytest.raises(ProcessLookupError):
        os.kill(int(pidfile.read_text()), 0)


async def test_output_cap_truncates_and_never_blocks() -> None:
    result = await run_fallback("hello", cmd("flood.py", "500000", cap=1000))
    assert result.ok
    assert len(result.output) == 1000
    assert result.truncated
    assert "(truncated)" in result.summary()


async def test_cap_never_splits_a_character() -> None:
    result = await run_fallback("ü" * 100, cmd("upper.py", cap=10))
    assert result.output == "LLM: ÜÜ"  # 5 + 2*2 bytes; the half of the third Ü is dropped
    assert result.truncated


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
    assert ok.summary() == "exit 0 in 12 ms, 3 characters"


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
