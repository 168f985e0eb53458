"""Run the fallback LLM command for a turn no tool should take.

The command is an argument list from config `[fallback] command = [...]`, run by command.py's
`run_command` (no shell, output cap, timeout, own process group killed on timeout, cancel and exit).
The message goes to the command on stdin and in the environment variable TUI_ROUTER_MESSAGE.
A missing, failing or slow command ends in a FallbackResult with `error` set, never an exception.
Its environment is ours without the variables config names as secrets (the API key is not the
fallback's business).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from pathlib import Path

from pydantic import BaseModel

from .command import STDERR_CAP, child_env, run_command
from .config import FallbackConfig
from .session import FallbackRecord, now_iso
from .tomlio import replace_surrogates

MESSAGE_ENV = "TUI_ROUTER_MESSAGE"
# Linux refuses a single environment string over 128 KiB (MAX_ARG_STRLEN); stdin always has it all.
ENV_MESSAGE_CAP = 100_000

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
    output_bytes: int = 0  # stdout bytes kept: `output_cap` counts bytes, so the summary does too
    truncated: bool = False
    output_cap: int | None = None  # the cap in bytes, set when the output was cut at it
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
            output_cap=self.output_cap if self.truncated else None,
            at=self.at,
        )

    def summary(self) -> str:
        """One line a person reads in a notification."""
        if self.error:
            return self.error
        kept = self.output_bytes or len(self.output.encode("utf-8", "replace"))  # a result made by hand: its text
        return f"exit {self.exit_code} in {self.duration_ms:.0f} ms, {output_size(kept, self.truncated, self.output_cap)}"


def output_size(kept: int, truncated: bool, cap: int | None) -> str:
    """The output's size in the cap's unit (bytes: `[fallback] output_cap`), and where it was cut."""
    size = f"{kept:,} byte{'' if kept == 1 else 's'} of output"
    if truncated:
        size += f", cut at the {cap:,}-byte output_cap" if cap else ", cut at the output_cap"
    return size



def message_env(message: str, secret_env: Iterable[str] = ()) -> dict[str, str]:
    """The child's environment: ours without the secret variables, plus the message (NULs dropped,
    cut to fit the OS limit)."""
    value = replace_surrogates(message.replace("\x00", ""))  # the OS takes no lone surrogate in an env value
    # Only the config-named secrets go, not every name that looks like a credential: the fallback is
    # an LLM client, and its own provider key (OPENAI_API_KEY, ANTHROPIC_API_KEY...) comes from here.
    env = child_env(secret_env)
    encoded = value.encode("utf-8")
    if len(encoded) > ENV_MESSAGE_CAP:
        value = encoded[:ENV_MESSAGE_CAP].decode("utf-8", errors="ignore")
        env[MESSAGE_ENV + "_TRUNCATED"] = "1"
    env[MESSAGE_ENV] = value
    return env


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
    message = replace_surrogates(message)  # a lone surrogate (a server's or a catalog's JSON) cannot be encoded: U+FFFD

    def result(**fields) -> FallbackResult:
        return FallbackResult(command=command, duration_ms=(time.perf_counter() - started) * 1000, at=at, **fields)

    if not command or not command[0].strip():
        return result(error=NOT_CONFIGURED.format(where=config_location))
    run = await run_command(
        command,
        message.encode("utf-8"),
        timeout=config.timeout,
        output_cap=config.output_cap,
        stderr_cap=STDERR_CAP,
        env=message_env(message, secret_env),
        cwd=cwd,
        progress=progress,
    )
    return result(
        exit_code=run.exit_code,
        output=run.output,
        stderr=run.stderr,
        error=run.error("fallback command"),
        output_bytes=run.output_bytes,
        truncated=run.output_truncated,
        output_cap=config.output_cap if run.output_truncated else None,
    )
