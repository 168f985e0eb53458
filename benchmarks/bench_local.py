"""Routing core figures: demo-bench accuracy (the named backend vs bm25), routing latency at 40 and
10,000 tools, and catalog load time at 10,000 tools.

    nice python benchmarks/bench_local.py --backend local            # prints the markdown table
    nice python benchmarks/bench_local.py --backend local --readme   # and refreshes the README's table

The backend is always named (default `local`): the config default `auto` would pick `semantic`
whenever its extra is installed, and 10,000 tools would then be embedded first (minutes). The
table says which backend and model ran; it is also written to docs/figures/routing-core.md.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from figures import machine_line, publish  # noqa: E402
from synthetic import make_catalog  # noqa: E402

from tui_router.catalog import load_catalog  # noqa: E402
from tui_router.config import config_from_dict  # noqa: E402
from tui_router.resources import bundled_session  # noqa: E402
from tui_router.route import Router  # noqa: E402
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


def bench_accuracy(backend: str) -> list[tuple[str, str, int, int, int, int]]:
    """(backend, model, tool tasks right, tool tasks, none tasks right, none tasks), zero-shot."""
    turns = load_session(bundled_session("demo-bench")).turns
    demo = load_catalog("demo")
    rows = []
    for name in dict.fromkeys((backend, "bm25")):
        router = Router(demo, config_from_dict({"backend": name}))
        tools = [t for t in turns if t.label != "defer_to_llm"]
        nones = [t for t in turns if t.label == "defer_to_llm"]
        right = sum(router.route(t.message).choice in [t.label, *t.acceptable] for t in tools)
        none_right = sum(router.route(t.message).choice == "defer_to_llm" for t in nones)
        rows.append((router.backend.name, router.backend.model, right, len(tools), none_right, len(nones)))
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="local", help="the backend measured (default local; bm25 is always the baseline row)")
    parser.add_argument("--tools", type=int, default=10_000, help="size of the synthetic catalog")
    parser.add_argument("--readme", action="store_true", help="also refresh the table in README.md")
    args = parser.parse_args()
    config = config_from_dict({"backend": args.backend})

    accuracy = bench_accuracy(args.backend)
    demo = Router(load_catalog("demo"), config)
    backend, model = demo.backend.name, demo.backend.model
    print(f"backend: {backend}, model: {model}", flush=True)
    latency(demo, 2)  # warm caches (typo index, lexicon)
    p50_40, p95_40 = latency(demo, 30)

    with tempfile.TemporaryDirectory() as tmp:
        path = make_catalog(args.tools, Path(tmp) / "big.toml")
        loads = []
        for _ in range(5):
            started = time.perf_counter()
            big = load_catalog(path)
            loads.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        router = Router(big, config)
        build_ms = (time.perf_counter() - started) * 1000
        latency(router, 1)
        p50_10k, p95_10k = latency(router, 10)

    lines = [
        f"Backend `{backend}` (model `{model}`), zero-shot (no labelled turns), {machine_line()}:",
        "",
        "| measure | figure | goal |",
        "| --- | --- | --- |",
    ]
    for name, mod, right, tools, none_right, nones in accuracy:
        goal = ">= 23/25 and >= 4/5, and above bm25" if name == backend and name != "bm25" else ""
        role = "baseline" if name == "bm25" else "backend"
        lines.append(f"| demo-bench, {role} `{name}` ({mod}), zero-shot; the demo catalog was tuned on this bench | {right}/{tools} tool tasks top-1, {none_right}/{nones} none tasks | {goal} |")
    lines += [
        f"| routing latency p50 / p95, demo catalog (40 tools), `{backend}` | {p50_40:.2f} / {p95_40:.2f} ms | p50 <= 5 ms |",
        f"| routing latency p50 / p95, synthetic {args.tools:,}-tool catalog, `{backend}` | {p50_10k:.2f} / {p95_10k:.2f} ms | p50 <= 50 ms |",
        f"| loading + validating the {args.tools:,}-tool catalog | {statistics.median(loads):.0f} ms median of 5 | well under 1 s |",
        f"| building the router for {args.tools:,} tools (BM25 index + `{backend}` model) | {build_ms / 1000:.2f} s (the console does it in a worker) | |",
    ]
    body = "\n".join(lines)
    print(body)
    command = f"python benchmarks/bench_local.py --backend {args.backend}" + (f" --tools {args.tools}" if args.tools != 10_000 else "")
    publish("routing-core", command, body, readme=args.readme)
    return 0


if __name__ == "__main__":
    sys.exit(main())
