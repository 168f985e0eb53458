"""Run the installed `tui-router` command (or `python -m tui_router.cli`) as a real subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def tui_router(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    script = Path(sys.executable).parent / "tui-router"
    argv = [str(script)] if script.is_file() else [sys.executable, "-m", "tui_router.cli"]
    return subprocess.run([*argv, *args], capture_output=True, text=True, timeout=90, env={**os.environ, **env}, stdin=subprocess.DEVNULL)
