"""Run one external command for us: the fallback LLM (fallback.py) and the arguments builder (arguments.py).

`run_command` starts an argument list with `asyncio.create_subprocess_exec` (never a shell, so
nothing in a message is interpreted), writes `stdin` to it, reads stdout and stderr up to their caps
(the rest is read and dropped so the child never blocks on a full pipe) and bounds the run by
`timeout`. A missing, unstartable, failing or slow command ends in a CommandRun that says so, never
an exception; only cancellation propagates.

The command runs in a process group of its own (a new session). It is done when the command itself
exits, not when its pipes close: a `sleep 1000 &` it started may hold them, so after the exit the
pipes get EXIT_GRACE seconds, then the whole group is killed. On timeout and on cancel the group is
killed too, so nothing it started outlives the run.
"""

from __future__ import annotations

import asyncio
import codecs
import os
import signal
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

from pydantic import BaseModel

STDERR_CAP = 8_192
_READ_CHUNK = 65_536
# After the command exits, how long its pipes may stay open (a background child holding them)
# before the rest of its group is killed.
EXIT_GRACE = 0.5
# How often to look whether the command itself has exited (see _exited).
_POLL = 0.05


class CommandRun(BaseModel):
    """What one run of a command did. `start_error` set: it never ran; `timed_out`: it was stopped."""

    exit_code: int | None = None
    output: str = ""
    stderr: str = ""
    output_bytes: int = 0  # the stdout bytes kept (at most the cap; the cap is in bytes, not characters)
    output_truncated: bool = False
    stderr_truncated: bool = False
    duration_ms: float = 0.0
    timed_out: bool = False
    timeout: float = 0.0  # the bound it ran under, for the sentence
    start_error: str = ""  # why it could not start, a sentence after the command's name

    def error(self, what: str) -> str:
        """One sentence on what went wrong, naming the command as `what` ("fallback command");
        empty when it ran and exited 0."""
        if self.start_error:
            return f"{what} {self.start_error}"
        if self.timed_out:
            return f"{what} timed out after {self.timeout:g} s and was stopped"
        if self.exit_code != 0:
            last = self.stderr.strip().splitlines()[-1] if self.stderr.strip() else ""
            return f"{what} exited with code {self.exit_code}" + (f": {last[:200]}" if last else "")
        return ""


def _looks_like_credential(name: str) -> bool:
    from .config import SECRET_HEADER_WORDS

    upper = name.upper()
    words = [w.upper().replace("-", "_") for w in SECRET_HEADER_WORDS] + ["KEY", "PASSWD", "CREDENTIAL"]
    return any(w in upper for w in words)


def child_env(secret_env: Iterable[str] = (), *, drop_credential_like: bool = False) -> dict[str, str]:
    """Our environment without the variables config names as secrets (Config.secret_env_names()),
    and with `drop_credential_like` also without any whose name looks like a credential."""
    drop = set(secret_env)
    return {
        name: value
        for name, value in os.environ.items()
        if name not in drop and not (drop_credential_like and _looks_like_credential(name))
    }


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


async def _exited(process: asyncio.subprocess.Process) -> None:
    """Until the command itself has exited. `process.wait()` also waits for its pipes to close,
    which a background child holding them would delay until the timeout."""
    while process.returncode is None:
        await asyncio.sleep(_POLL)


async def _stop(process: asyncio.subprocess.Process, tasks: list[asyncio.Future]) -> None:
    """Kill the command's group, give the pipes a moment to reach EOF, then drop whatever still waits.

    Shielded so that a cancellation in progress still reaps the child (no zombie left behind).
    """
    _kill(process)

    async def settle() -> None:
        await asyncio.wait(tasks, timeout=1.0)
        for task in tasks:
            task.cancel()
        await process.wait()

    await asyncio.shield(settle())


async def run_command(
    argv: Sequence[str],
    stdin: bytes,
    *,
    timeout: float,
    output_cap: int,
    stderr_cap: int = STDERR_CAP,
    env: Mapping[str, str] | None = None,
    cwd: str | Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> CommandRun:
    """Run `argv` with `stdin` on its standard input. Never raises for a command problem.

    `env` is the child's whole environment (None: ours; build it with `child_env`). `progress` gets
    the output so far after each chunk read (until the cap). Cancelling the
    task that awaits this kills the command's group and re-raises CancelledError.
    """
    started = time.perf_counter()

    def done(**fields) -> CommandRun:
        return CommandRun(duration_ms=(time.perf_counter() - started) * 1000, timeout=timeout, **fields)

    if not argv:
        return done(start_error="is not configured")
    name = argv[0]
    try:
        process = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=dict(env) if env is not None else None,
            cwd=str(cwd) if cwd else None,
            start_new_session=True,  # its own process group, so the group can be ended
        )
    except FileNotFoundError:
        return done(start_error=f"not found: {name!r} (is it installed and on PATH?)")
    except PermissionError:
        return done(start_error=f"is not executable: {name!r}")
    except (OSError, ValueError) as exc:  # ValueError: an empty argv or a NUL in an argument
        detail = getattr(exc, "strerror", None) or exc
        return done(start_error=f"{name!r} could not start: {detail}")

    assert process.stdin and process.stdout and process.stderr
    out, err = _Capture(output_cap, progress), _Capture(stderr_cap)
    tasks = [
        asyncio.ensure_future(_feed(process.stdin, stdin)),
        asyncio.ensure_future(out.drain(process.stdout)),
        asyncio.ensure_future(err.drain(process.stderr)),
        asyncio.ensure_future(process.wait()),
    ]
    deadline = time.monotonic() + timeout
    exited = asyncio.ensure_future(_exited(process))
    try:
        await asyncio.wait([exited], timeout=timeout)
        if exited.done():
            # It exited: its pipes reach EOF at once unless something it started still holds them.
            await asyncio.wait(tasks, timeout=max(0.0, min(EXIT_GRACE, deadline - time.monotonic())))
    except asyncio.CancelledError:
        exited.cancel()
        await _stop(process, tasks)
        raise
    timed_out = not exited.done()
    exited.cancel()
    await _stop(process, tasks)  # on exit too: whatever it left running in its group ends with it
    return done(
        exit_code=None if timed_out else process.returncode,
        output=out.text(),
        stderr=err.text(),
        output_bytes=len(out.data),
        output_truncated=out.truncated,
        stderr_truncated=err.truncated,
        timed_out=timed_out,
    )
