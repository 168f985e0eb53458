"""Ask another process to claim a session file for writing: what storage.py tells it."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
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


HOLD = (
    "import sys\n"
    "from tui_router.storage import claim_session_file\n"
    "claim_session_file(sys.argv[1])\n"
    "print('held', flush=True)\n"
    "sys.stdin.read()\n"  # held until the test closes our stdin
)


@contextmanager
def holding_elsewhere(path: Path) -> Iterator[subprocess.Popen]:
    """Another process that claims the file and holds it until the block ends."""
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        yield holder
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=60)


CONTEND = (
    "import os, sys, time\n"
    "from pathlib import Path\n"
    "from tui_router.storage import SessionBusy, SessionFile\n"
    "path, inside, go, rounds = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4])\n"
    "while not go.exists():\n    time.sleep(0.001)\n"
    "held = overlaps = 0\n"
    "for _ in range(rounds):\n"
    "    try:\n        claimed = SessionFile.claim(path)\n    except SessionBusy:\n        continue\n"
    "    held += 1\n"
    "    try:\n        os.close(os.open(inside, os.O_CREAT | os.O_EXCL | os.O_WRONLY))\n"
    "    except FileExistsError:\n        overlaps += 1  # another process holds the lock too\n"
    "    else:\n        os.unlink(inside)\n"
    "    claimed.release()\n"
    "print(held, overlaps)\n"
)


def contend(path: Path, processes: int, rounds: int) -> list[tuple[int, int]]:
    """`processes` processes, started together, each claiming `path` `rounds` times and letting it go
    with its sidecar removed; (times held, times another process was inside too) per process."""
    inside, go = path.with_name("inside"), path.with_name("go")
    running = [
        subprocess.Popen([sys.executable, "-c", CONTEND, str(path), str(inside), str(go), str(rounds)], stdout=subprocess.PIPE, text=True)
        for _ in range(processes)
    ]
    go.touch()
    results = []
    for process in running:
        out, _ = process.communicate(timeout=120)
        assert process.returncode == 0
        held, overlaps = out.split()
        results.append((int(held), int(overlaps)))
    return results
