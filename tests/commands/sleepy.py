"""Fallback stand-in that hangs: prints a line, then sleeps far past any test timeout.

Usage: sleepy.py [SECONDS] [PIDFILE]  (the pid file lets a test check the process was killed)
"""

import os
import sys
import time

if len(sys.argv) > 2:
    with open(sys.argv[2], "w") as handle:
        handle.write(str(os.getpid()))
print("thinking...", flush=True)
time.sleep(float(sys.argv[1]) if len(sys.argv) > 1 else 60)
print("too late")
