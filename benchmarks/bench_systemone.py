"""Throughput and client overhead of the systemone backend against the loopback `jevcompat mock`.

    python benchmarks/bench_systemone.py [--turns 500] [--concurrency 16] [--latency-ms 100]

1. Throughput: TURNS full turns (retrieve + decide + band, Router.aroute) over the bundled demo
   bench messages, one at a time and then CONCURRENCY at a time. The mock answers in microseconds,
   so it is started with a fixed model time per answer (--latency-ms, default 100 ms, below the
   280 ms the seeds measured for a hosted model): client concurrency exists to overlap that wait.
2. Overhead: p50 of one backend.adecide against the plain mock (no added latency) minus p50 of a raw
   httpx.AsyncClient POST of the same body plus json.loads, interleaved; that difference is what our
   client adds per request (request building, semaphore, strict JSON, answer checks).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from servers.processes import start_slow_jev_mock  # noqa: E402

from tui_router.catalog import load_catalog  # noqa: E402
from tui_router.config import config_from_dict  # noqa: E402
from tui_router.decide.systemone import SystemOneBackend, question_body  # noqa: E402
from tui_router.resources import bundled_session  # noqa: E402
from tui_router.route import Router  # noqa: E402
from tui_router.session import load_session  # noqa: E402


def messages(count: int) -> list[str]:
    base = [turn.message for turn in load_session(bundled_session("demo-bench")).turns]
    return [base[i % len(base)] for i in range(count)]


def router_for(url: str, concurrency: int) -> Router:
    config = config_from_dict({"backend": "systemone", "systemone": {"base_url": url, "concurrency": concurrency, "probe": False}})
    return Router(load_catalog("demo"), config)


async def throughput(url: str, turns: int, concurrency: int) -> dict:
    texts = messages(turns)
    router = router_for(url, concurrency)
    try:
        await router.aroute(texts[0])  # connect once before timing
        started = time.perf_counter()
        sequential = [await router.aroute(m) for m in texts]
        seq_s = time.perf_counter() - started
        started = time.perf_counter()
        concurrent = await asyncio.gather(*(router.aroute(m) for m in texts))
        con_s = time.perf_counter() - started
    finally:
        await router.aclose()
    errors = sum(1 for d in [*sequential, *concurrent] if d.error)
    same = sum(1 for a, b in zip(sequential, concurrent, strict=True) if a.choice == b.choice)
    return {
        "turns": turns,
        "sequential_s": round(seq_s, 3),
        "concurrent_s": round(con_s, 3),
        "sequential_turns_per_s": round(turns / seq_s, 1),
        "concurrent_turns_per_s": round(turns / con_s, 1),
        "ratio": round(seq_s / con_s, 2),
        "errors": errors,
        "same_choice": same,
        "backend": router.backend.name,
        "model": sequential[0].model,  # what the server says answered
    }


async def overhead(url: str, requests: int) -> dict:
    catalog = load_catalog("demo")
    router = router_for(url, 1)
    question = router.question_for(messages(1)[0], router.retriever.retrieve(messages(1)[0]))
    await router.aclose()
    config = config_from_dict({"systemone": {"base_url": url, "probe": False}})
    backend = SystemOneBackend(catalog, config.systemone)
    body = json.dumps(question_body(question, "jev-latest"), ensure_ascii=False, separators=(",", ":")).encode()
    ours: list[float] = []
    raw: list[float] = []
    async with httpx.AsyncClient(timeout=30) as client:
        for _ in range(10):  # warm both
            await backend.adecide(question)
            await client.post(f"{url}/systemone", content=body, headers={"Content-Type": "application/json"})
        for _ in range(requests):
            started = time.perf_counter()
            response = await client.post(f"{url}/systemone", content=body, headers={"Content-Type": "application/json"})
            json.loads(response.content)
            raw.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            answer = await backend.adecide(question)
            ours.append((time.perf_counter() - started) * 1000)
            assert not answer.error, answer.error
    await backend.aclose()
    return {
        "requests": requests,
        "options": len(question.options),
        "raw_httpx_p50_ms": round(statistics.median(raw), 3),
        "systemone_p50_ms": round(statistics.median(ours), 3),
        "overhead_p50_ms": round(statistics.median(ours) - statistics.median(raw), 3),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=500)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--latency-ms", type=float, default=100.0, help="model time the mock adds per answer (throughput part)")
    parser.add_argument("--overhead-requests", type=int, default=300)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--readme", action="store_true", help="also refresh the table in README.md (always written to docs/figures/systemone.md)")
    args = parser.parse_args()

    os.environ.setdefault("XDG_CACHE_HOME", tempfile.mkdtemp(prefix="bench-systemone-"))
    slow = start_slow_jev_mock(args.latency_ms)
    fast = start_slow_jev_mock(0)
    try:
        result = {
            "throughput": asyncio.run(throughput(slow.base_url, args.turns, args.concurrency)) | {"latency_ms": args.latency_ms, "concurrency": args.concurrency},
            "overhead": asyncio.run(overhead(fast.base_url, args.overhead_requests)),
            "cpus": os.cpu_count(),
        }
    finally:
        slow.stop()
        fast.stop()
    if args.json:
        print(json.dumps(result))
        return 0
    t, o = result["throughput"], result["overhead"]
    print(f"backend: {t['backend']}, model: {t['model']} (jevcompat mock on loopback)")
    print(f"throughput: {t['turns']} turns, mock model time {t['latency_ms']:g} ms, {result['cpus']} CPUs")
    print(f"  sequential      {t['sequential_s']:7.2f} s  {t['sequential_turns_per_s']:7.1f} turns/s")
    print(f"  concurrency {t['concurrency']:<3} {t['concurrent_s']:7.2f} s  {t['concurrent_turns_per_s']:7.1f} turns/s")
    print(f"  ratio           {t['ratio']:.1f}x   (errors {t['errors']}, same choice {t['same_choice']}/{t['turns']})")
    print(f"overhead per request over raw httpx ({o['requests']} requests, {o['options']} options, plain mock):")
    print(f"  raw httpx p50 {o['raw_httpx_p50_ms']:.2f} ms, systemone backend p50 {o['systemone_p50_ms']:.2f} ms, overhead p50 {o['overhead_p50_ms']:.2f} ms")

    from figures import machine_line, publish

    body = "\n".join(
        [
            f"Backend `{t['backend']}`, model `{t['model']}` (the `jevcompat mock` on loopback, keep-alive), {t['turns']} turns, {machine_line()}:",
            "",
            "| model time per answer | sequential | concurrency " + str(t["concurrency"]) + " | ratio | client overhead p50 over raw httpx |",
            "| --- | --- | --- | --- | --- |",
            f"| {t['latency_ms']:g} ms | {t['sequential_s']:.2f} s ({t['sequential_turns_per_s']:.1f} turns/s) "
            f"| {t['concurrent_s']:.2f} s ({t['concurrent_turns_per_s']:.1f} turns/s) | {t['ratio']:.1f}x "
            f"({t['errors']} errors, {t['same_choice']}/{t['turns']} same choices) "
            f"| {o['overhead_p50_ms']:.2f} ms (raw httpx {o['raw_httpx_p50_ms']:.2f} ms, ours {o['systemone_p50_ms']:.2f} ms) |",
        ]
    )
    flags = "".join(
        f" --{name} {value:g}" if isinstance(value, float) else f" --{name} {value}"
        for name, value, default in (("turns", args.turns, 500), ("concurrency", args.concurrency, 16), ("latency-ms", args.latency_ms, 100.0))
        if value != default
    )
    publish("systemone", f"python benchmarks/bench_systemone.py{flags}", body, readme=args.readme)
    return 0


if __name__ == "__main__":
    sys.exit(main())
