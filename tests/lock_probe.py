"""Ask another process to claim a session file for writing: what storage.py tells it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PROBE = (
    "import sys\n"
    "from tui_router.storage import SessionBusy, claim_session_file\n"
    "try:\n    claim_session_file(sys.argv[1])\nexcept SessionBusy as exc:\n    print(exc)\nelse:\n    print('free')\n"
)


def claim_elsewhere(path: Path) -> str:
    """'free' when another process could claim the file (it lets go at once), else its refusal."""
    done = subprocess.run([sys.executable, "-c", PROBE, str(path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def held_elsewhere(path: Path) -> bool:
    """Whether another process is refused the file's lock (that is, someone else holds it)."""
    return claim_elsewhere(path) != "free"
