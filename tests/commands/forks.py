"""Fallback stand-in that leaves a grandchild behind: starts `sleep`-like child in the background
(as `sleep 1000 &` in a shell would), writes both pids, prints a line, then exits or hangs.

Usage: forks.py PIDFILE [exit|hang]
"""

import subprocess
import sys
import time

child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1000)"])
with open(sys.argv[1], "w") as handle:
    handle.write(f"{child.pid}\n")
print("started a background job", flush=True)
if len(sys.argv) > 2 and sys.argv[2] == "hang":
    time.sleep(1000)
