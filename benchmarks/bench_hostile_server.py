"""How long a turn waits, and how much memory it takes, against hostile System One servers (issue 14).

    python benchmarks/bench_hostile_server.py [--runs 3]

Each case routes one question with the systemone backend against the loopback server of the tests
(tests/servers/hostile.py), each run in a fresh interpreter so peak memory (ru_maxrss) is its own:

- drip: a valid ~300-byte answer sent one byte every 0.5 s, `timeout = 2` (httpx alone: per read);
- retry-after: 503 with `Retry-After: 29`, `timeout = 2`, `max_retries = 2`;
- huge: a 328 MB chunked reply, default `max_reply_bytes` (4 MiB).

Prints the median wall time of the turn and the median peak RSS of the process, and the error.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import json, resource, sys, time
sys.path.insert(0, sys.argv[1])
from servers.hostile import HostileServer
from tui_router.catalog import load_catalog
from tui_router.config import config_from_dict
from tui_router.decide.base import Question
from tui_router.decide.systemone import SystemOneBackend

case = sys.argv[2]
question = Question(message="Text Jordan that the deploy finished.",
                    options={"send_sms": "Send a text.", "send_email": "Send an email.", "defer_to_llm": "None fits."},
                    none_option="defer_to_llm", retrieved_tools=["send_sms", "send_email"])
with HostileServer() as server:
    settings = {"base_url": server.base_url, "probe": False, "timeout": 2, "max_retries": 2}
    if case == "drip":
        server.mode, server.drip_interval = "drip", 0.5
    elif case == "retry-after":
        server.mode, server.status, server.retry_after = "retry-after", 503, "29"
    else:
        server.mode, server.huge_bytes = "huge", 328 * 1000 * 1000
        settings["timeout"] = 60
    backend = SystemOneBackend(load_catalog("demo"), config_from_dict({"systemone": settings}).systemone)
    started = time.perf_counter()
    answer = backend.decide(question)
    took = time.perf_counter() - started
    backend.close()
    print(json.dumps({"seconds": took, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                      "requests": server.requests, "error": answer.error}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    for case in ("drip", "retry-after", "huge"):
        results = []
        for _ in range(args.runs):
            done = subprocess.run([sys.executable, "-c", CHILD, str(ROOT / "tests"), case], capture_output=True, text=True, cwd=ROOT, timeout=600)
            if done.returncode != 0:
                sys.exit(f"{case}: {done.stderr.strip()}")
            results.append(json.loads(done.stdout))
        seconds = statistics.median(r["seconds"] for r in results)
        rss = statistics.median(r["rss_mb"] for r in results)
        print(f"{case:12} median {seconds:6.2f} s  peak RSS {rss:6.0f} MB  requests {results[0]['requests']}  ({args.runs} runs)")
        print(f"{'':12} {results[0]['error'][:160]}")


if __name__ == "__main__":
    main()
