"""Writes that really fail, for root too (the CI runs as root, so chmod does not block a write).

RLIMIT_FSIZE: a process may not write a file past N bytes; a write beyond gets EFBIG (SIGXFSZ
ignored, else it kills the process). A subprocess gets it from `preexec_fn`; the console tests lower
the soft limit of the test process around one turn and raise it back (the hard limit is untouched).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

try:
    import resource
    import signal

    HAVE_FSIZE = hasattr(resource, "RLIMIT_FSIZE") and hasattr(signal, "SIGXFSZ")
except ImportError:  # pragma: no cover - Windows
    HAVE_FSIZE = False

needs_fsize = pytest.mark.skipif(not HAVE_FSIZE, reason="no RLIMIT_FSIZE/SIGXFSZ on this platform")


def limit_file_size(size: int):
    """A preexec_fn: the child may write no file past `size` bytes."""
    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))

    return apply


def run_limited(args: list[str], size: int, *, env: dict[str, str] | None = None, input: str | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """`tui-router ARGS` (as `python -m tui_router`) where no file may grow past `size` bytes."""
    return subprocess.run(
        [sys.executable, "-m", "tui_router", *args],
        capture_output=True, text=True, timeout=180, env={**os.environ, **(env or {})}, cwd=cwd,
        input=input, stdin=None if input is not None else subprocess.DEVNULL, preexec_fn=limit_file_size(size),
    )


@contextlib.contextmanager
def file_size_limit(size: int) -> Iterator[None]:
    """In this process: no file written past `size` bytes until the block ends."""
    before = resource.getrlimit(resource.RLIMIT_FSIZE)
    handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (size, before[1]))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, before)
        signal.signal(signal.SIGXFSZ, handler)


def strays(folder: Path) -> list[str]:
    """Temp files a failed atomic write left behind."""
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp") or p.name.startswith(".tmp-"))
