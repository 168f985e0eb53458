"""Run the fallback LLM command for a turn no tool should take.

The command is an argument list from config `[fallback] command = [...]`, started with
`asyncio.create_subprocess_exec` (never a shell, so nothing in the message is ever interpreted).
The message goes to the command on stdin and in the environment variable TUI_ROUTER_MESSAGE.
Output is capped at `output_cap` bytes (the rest is read and dropped so the child never blocks on a
full pipe); the run is bounded by `timeout`. A missing, failing or slow command ends in a
FallbackResult with `error` set, never an exception.

The command runs in a process group of its own (a new session): on timeout, on cancel and when it
ends, the whole group is killed, so a `sleep 1000 &` it started is not left behind. Its environment
is ours without the variables config names as secrets (the API key is not the fallback's business).
"""

from __future__ import annotations

import asyncio
import codecs
import os
import signal
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from pydantic import BaseModel

from .config import FallbackConfig
from .session import FallbackRecord, now_iso

MESSAGE_ENV = "TUI_ROUTER_MESSAGE"
# Linux refuses a single environment string over 128 KiB (MAX_ARG_STRLEN); stdin always has it all.
ENV_MESSAGE_CAP = 100_000
STDERR_CAP = 8_192
_READ_CHUNK = 65_536
# After the command exits, how long its pipes may stay open (a background child holding them)
# before the rest of its group is killed.
EXIT_GRACE = 0.5

NOT_CONFIGURED = (
    "no fallback command is configured; add [fallback] command = [\"your-llm\", \"--flag\"] "
    "to the config file ({where})"
)


class FallbackResult(BaseModel):
    """What one fallback run did."""

    command: list[str]
    exit_code: int | None = None
    output: str = ""
    stderr: str = ""
    error: str = ""
    duration_ms: float = 0.0
    truncated: bool = False
    at: str | None = None

    @property
    def ok(self) -> bool:
        return not self.error and self.exit_code == 0

    def to_record(self) -> FallbackRecord:
        return FallbackRecord(
            command=self.command,
            exit_code=self.exit_code,
            output=self.output,
            stderr=self.stderr,
            error=self.error,
            duration_ms=round(self.duration_ms, 1),
            truncated=self.truncated,
            at=self.at,
        )

    def summary(self) -> str:
        """One line a person reads in a notification."""
        if self.error:
            return self.error
        size = f"{len(self.output)} characters" + (" (truncated)" if self.truncated else "")
        return f"exit {self.exit_code} in {self.duration_ms:.0f} ms, {size}"


def message_env(message: str, secret_env: Iterable[str] = ()) -> dict[str, str]:
    """The child's environment: ours without the secret variables, plus the message (NULs dropped,
    cut to fit the OS limit)."""
    value = message.replace("\x00", "")
    drop = set(secret_env)
    env = {name: val for name, val in os.environ.items() if name not in drop}
    encoded = value.encode("utf-8")
    if len(encoded) > ENV_MESSAGE_CAP:
        value = encoded[:ENV_MESSAGE_CAP].decode("utf-8", errors="ignore")
        env[MESSAGE_ENV + "_TRUNCATED"] = "1"
    env[MESSAGE_ENV] = value
    return env


class _Capture:
    """Bytes read from one pipe: the first `cap` kept, the rest counted and dropped."""

    def __init__(self, cap: int, progress: Callable[[str], None] | None = None) -> None:
        self.cap = cap
        self.progress = progress  # called with the text so far after each chunk (the console streams it)
        self.data = bytearray()
        self.truncated = False

    async def drain(self, stream: asyncio.StreamReader) -> None:
        # Keep reading past the cap so the child never blocks on a full pipe.
        while chunk := await stream.read(_READ_CHUNK):
            room = self.cap - len(self.data)
            if room > 0:
                self.data += chunk[:room]
            if len(chunk) > max(room, 0):
                self.truncated = True
            if self.progress is not None and room > 0:
                self.progress(codecs.getincrementaldecoder("utf-8")("replace").decode(bytes(self.data)))

    def text(self) -> str:
        # final=False: a character cut in half by the cap is dropped instead of shown as U+FFFD
        return codecs.getincrementaldecoder("utf-8")("replace").decode(bytes(self.data), final=not self.truncated)


async def _feed(stdin: asyncio.StreamWriter, data: bytes) -> None:
    try:
        stdin.write(data)
        await stdin.drain()
    except (BrokenPipeError, ConnectionResetError):
        pass  # the command did not read its stdin: that is its business
    finally:
        try:
            stdin.close()
        except (BrokenPipeError, ConnectionResetError):
            pass


def _kill(process: asyncio.subprocess.Process) -> None:
    """Kill the command's whole process group (it leads its own session), or the command alone
    where process groups do not exist."""
    if hasattr(os, "killpg"):
        try:
            # The group id is the command's pid; it cannot be reused while the group has members.
            os.killpg(process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass  # nothing left in the group
    if process.returncode is None:
        try:
            process.kill()
        except ProcessLookupError:
            pass


async def run_fallback(
    message: str,
    config: FallbackConfig,
    *,
    cwd: str | Path | None = None,
    config_location: str = "see `tui-router locate config`",
    secret_env: Iterable[str] = (),
    progress: Callable[[str], None] | None = None,
) -> FallbackResult:
    """Run the configured command on `message`. Never raises for a command problem.

    `secret_env` names environment variables the command must not see (Config.secret_env_names()).
    Cancelling the task that awaits this kills the command's group and re-raises CancelledError.
    """
    command = list(config.command)
    started = time.perf_counter()
    at = now_iso()

    def result(**fields) -> FallbackResult:
        return FallbackResult(command=command, duration_ms=(time.perf_counter() - started) * 1000, at=at, **fields)

    if not command or not command[0].strip():
        return result(error=NOT_CONFIGURED.format(where=config_location))
    try:
        process = await asyncio.create_subprocess_exec(
            *command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=message_env(message, secret_env),
            cwd=str(cwd) if cwd else None,
            start_new_session=True,  # its own process group, so the group can be ended
        )
    except FileNotFoundError:
        return result(error=f"fallback command not found: {command[0]!r} (is it installed and on PATH?)")
    except PermissionError:
        return result(error=f"fallback command is not executable: {command[0]!r}")
    except OSError as exc:
        return result(error=f"fallback command {command[0]!r} could not start: {exc.strerror or exc}")

    assert process.stdin and process.stdout and process.stderr
    out, err = _Capture(config.output_cap, progress), _Capture(STDERR_CAP)
    tasks = [
        asyncio.ensure_future(_feed(process.stdin, message.encode("utf-8"))),
        asyncio.ensure_future(out.drain(process.stdout)),
        asyncio.ensure_future(err.drain(process.stderr)),
        asyncio.ensure_future(process.wait()),
    ]
    deadline = time.monotonic() + config.timeout
    exited = asyncio.ensure_future(_exited(process))
    try:
        await asyncio.wait([exited], timeout=config.timeout)
        if exited.done():
            # It exited: its pipes reach EOF at once unless something it started still holds them.
            await asyncio.wait(tasks, timeout=max(0.0, min(EXIT_GRACE, deadline - time.monotonic())))
    except asyncio.CancelledError:
        exited.cancel()
        await _stop(process, tasks)
        raise
    if not exited.done():
        exited.cancel()
        await _stop(process, tasks)
        return result(
            output=out.text(),
            stderr=err.text(),
            error=f"fallback command timed out after {config.timeout:g} s and was stopped",
            truncated=out.truncated,
        )
    await _stop(process, tasks)  # whatever it left running in its group ends with it
    code = process.returncode
    stderr = err.text()
    error = ""
    if code != 0:
        last = stderr.strip().splitlines()[-1] if stderr.strip() else ""
        error = f"fallback command exited with code {code}" + (f": {last[:200]}" if last else "")
    return result(exit_code=code, output=out.text(), stderr=stderr, error=error, truncated=out.truncated)


async def _exited(process: asyncio.subprocess.Process) -> None:
    """Until the command itself has exited. `process.wait()` also waits for its pipes to close,
    which a background child holding them would delay until the timeout."""
    while process.returncode is None:
        await asyncio.sleep(0.05)


async def _stop(process: asyncio.subprocess.Process, tasks: list[asyncio.Future]) -> None:
    """Kill the command, give the pipes a moment to reach EOF, then drop whatever still waits.

    Shielded so that a cancellation in progress still reaps the child (no zombie left behind).
    """
    _kill(process)

    async def settle() -> None:
        await asyncio.wait(tasks, timeout=1.0)
        for task in tasks:
            task.cancel()
        await process.wait()

    await asyncio.shield(settle())
