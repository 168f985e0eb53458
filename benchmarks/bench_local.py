"""Routing core figures: demo-bench accuracy (local vs bm25), routing latency at 40 and 10,000 tools,
and catalog load time at 10,000 tools.

    python benchmarks/bench_local.py            # prints a markdown table
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from synthetic import make_catalog  # noqa: E402

from tui_router.catalog import load_catalog  # noqa: E402
from tui_router.config import Config  # noqa: E402
from tui_router.resources import bundled_session  # noqa: E402
from tui_router.route import Router, build_router  # noqa: E402
from tui_router.session import load_session  # noqa: E402

MESSAGES = [
    "Text Jordan that the deploy finished.",
    "export the march orders as csv",
    "remind me to call the bank tomorrow at 9",
    "is the status page down?",
    "Write a haiku about rain",
    "create a zendesk ticket for the broken badge reader",
    "search salesforce for the Acme contract renewal",
    "reformat src/app.py please",
    "schedule a sync with the platform team on Monday",
    "what's the weather like on Mars?",
]


def bench_accuracy() -> list[str]:
    turns = load_session(bundled_session("demo-bench")).turns
    rows = []
    for backend in ("local", "bm25"):
        router = build_router(Config(), backend_name=backend)
        tools = [t for t in turns if t.label != "defer_to_llm"]
        nones = [t for t in turns if t.label == "defer_to_llm"]
        right = sum(router.route(t.message).choice in [t.label, *t.acceptable] for t in tools)
        none_right = sum(router.route(t.message).choice == "defer_to_llm" for t in nones)
        rows.append(f"| {backend} | {right}/{len(tools)} | {none_right}/{len(nones)} |")
    return rows


def latency(router: Router, rounds: int) -> tuple[float, float]:
    samples = []
    for _ in range(rounds):
        for message in MESSAGES:
            started = time.perf_counter()
            router.route(message)
            samples.append((time.perf_counter() - started) * 1000)
    samples.sort()
    return statistics.median(samples), samples[int(len(samples) * 0.95) - 1]


def main() -> None:
    print("## demo-bench (sessions/demo-bench.toml), zero-shot\n")
    print("| backend | tool tasks top-1 | none tasks |\n|---|---|---|")
    print("\n".join(bench_accuracy()))

    demo = Router(load_catalog("demo"))
    latency(demo, 2)  # warm caches (typo index, lexicon)
    p50_40, p95_40 = latency(demo, 30)

    with tempfile.TemporaryDirectory() as tmp:
        path = make_catalog(10_000, Path(tmp) / "big.toml")
        loads = []
        for _ in range(5):
            started = time.perf_counter()
            big = load_catalog(path)
            loads.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        router = Router(big)
        build_ms = (time.perf_counter() - started) * 1000
        latency(router, 1)
        p50_10k, p95_10k = latency(router, 10)

    print("\n## latency (local backend, retrieve + decide + band, per turn)\n")
    print("| catalog | p50 ms | p95 ms |\n|---|---|---|")
    print(f"| demo, 40 tools | {p50_40:.2f} | {p95_40:.2f} |")
    print(f"| synthetic, 10,000 tools | {p50_10k:.2f} | {p95_10k:.2f} |")
    print("\n## catalog at 10,000 tools\n")
    print(f"- load + validate: median {statistics.median(loads):.0f} ms over 5 loads")
    print(f"- build the router (BM25 index + local model): {build_ms:.0f} ms")


if __name__ == "__main__":
    main()
