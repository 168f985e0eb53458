"""The MCP server's throughput and the latency it adds over a direct `Router.route` call.

    python benchmarks/bench_mcp.py [--passes 10] [--backend local] [--clients 4] [--no-record]

Data: the 30 messages of sessions/demo-bench.toml on the bundled demo catalog (40 tools), sent
`--passes` times in order. Each mode is one run:

- direct: `Router.route(message)` in this process (the floor: retrieve + decide + band).
- stdio: `tui-router mcp-serve` as a subprocess, the `mcp` SDK's Client (legacy handshake)
  calling `route_request` one call after another over its stdin/stdout; then the same with raw
  JSON-RPC lines and no SDK on the client side (what the server itself costs).
- http: the same server with `--http 0` on 127.0.0.1: the SDK's streamable HTTP client calling
  sequentially; raw JSON-RPC POSTs over one httpx keep-alive connection; then `--clients` SDK
  clients at once (each sequential; they share this process and the machine's 2 cores).

Per-call latency is the client's wall time from `call_tool` to its result (medians quoted, p95
beside them); calls/second is calls / wall time of the whole loop. Server CPU ms/call is the server
process's own CPU time (Linux /proc) over the calls: unlike wall time it does not grow when other
jobs hold the cores, so 1000 / it is the calls per second one free core could serve. "Added" is the median call
latency minus the median direct route. The server records every call in its live session file
(as in use) unless --no-record. The machine is shared: run it with `nice` and quote the medians.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

import anyio

LOAD = 0.0
ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "sessions" / "demo-bench.toml"


def messages() -> list[str]:
    data = tomllib.loads(DATA.read_text(encoding="utf-8"))
    return [t["message"] for t in data["turns"]]


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (Linux /proc), to separate its cost from the machine's load."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def p95(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[max(0, int(len(ordered) * 0.95) - 1)]


def direct(backend: str, texts: list[str], passes: int) -> tuple[list[float], float]:
    from tui_router.catalog import load_catalog
    from tui_router.config import Config
    from tui_router.route import Router

    router = Router(load_catalog("demo"), Config(backend=backend))
    for text in texts:  # warm caches
        router.route(text)
    samples = []
    cpu0 = time.process_time()
    for _ in range(passes):
        for text in texts:
            started = time.perf_counter()
            router.route(text)
            samples.append((time.perf_counter() - started) * 1000)
    return samples, time.process_time() - cpu0


def server_args(backend: str, folder: str, record: bool) -> list[str]:
    args = ["-m", "tui_router", "mcp-serve", "--catalog", "demo", "--backend", backend, "--sessions", folder]
    return args if record else [*args, "--no-record"]


async def drive(client_factory, texts: list[str], passes: int) -> tuple[list[float], float]:
    """(per-call ms, wall seconds) for one client calling route_request sequentially."""
    async with client_factory() as client:
        for text in texts[:5]:  # warm-up, not timed
            await client.call_tool("route_request", {"message": text})
        samples = []
        started = time.perf_counter()
        for _ in range(passes):
            for text in texts:
                t0 = time.perf_counter()
                result = await client.call_tool("route_request", {"message": text})
                samples.append((time.perf_counter() - t0) * 1000)
                assert not result.is_error
        return samples, time.perf_counter() - started


async def stdio_mode(backend: str, texts: list[str], passes: int, folder: str, record: bool) -> tuple[list[float], float]:
    from mcp import Client, StdioServerParameters
    from mcp.types import Implementation

    params = StdioServerParameters(command=sys.executable, args=server_args(backend, folder, record), cwd=str(ROOT))
    return await drive(lambda: Client(params, client_info=Implementation(name="bench-stdio", version="1"), mode="legacy"), texts, passes)


async def http_mode(url: str, texts: list[str], passes: int, clients: int) -> tuple[list[float], float]:
    from mcp import Client
    from mcp.types import Implementation

    if clients == 1:
        return await drive(lambda: Client(url, client_info=Implementation(name="bench-http", version="1")), texts, passes)
    samples: list[float] = []
    started = time.perf_counter()

    async def one(n: int) -> None:
        got, _ = await drive(lambda: Client(url, client_info=Implementation(name=f"bench-http-{n}", version="1")), texts, passes)
        samples.extend(got)

    async with anyio.create_task_group() as tg:
        for n in range(clients):
            tg.start_soon(one, n)
    return samples, time.perf_counter() - started


HELLO = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench-raw", "version": "1"}}}


def call(n: int, text: str) -> dict:
    return {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": "route_request", "arguments": {"message": text}}}


def raw_stdio(backend: str, texts: list[str], passes: int, folder: str, record: bool) -> tuple[list[float], float, float]:
    """JSON-RPC lines on the server's stdin/stdout, no SDK on the client side: what the server itself costs."""
    proc = subprocess.Popen([sys.executable, *server_args(backend, folder, record)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=ROOT)
    try:

        def rpc(obj: dict) -> dict | None:
            proc.stdin.write((json.dumps(obj) + "\n").encode())
            proc.stdin.flush()
            return json.loads(proc.stdout.readline()) if "id" in obj else None

        rpc(HELLO)
        rpc({"jsonrpc": "2.0", "method": "notifications/initialized"})
        for n, text in enumerate(texts[:5], 1):
            rpc(call(n, text))
        samples = []
        cpu0, started = cpu_seconds(proc.pid), time.perf_counter()
        for _ in range(passes):
            for n, text in enumerate(texts, 100):
                t0 = time.perf_counter()
                reply = rpc(call(n, text))
                samples.append((time.perf_counter() - t0) * 1000)
                assert "result" in reply, reply
        return samples, time.perf_counter() - started, cpu_seconds(proc.pid) - cpu0
    finally:
        proc.stdin.close()
        proc.wait(timeout=15)


def raw_http(url: str, texts: list[str], passes: int) -> tuple[list[float], float]:
    """JSON-RPC POSTs over one keep-alive httpx connection, no SDK on the client side."""
    import httpx

    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    with httpx.Client(timeout=30) as client:
        reply = client.post(url, headers=headers, json=HELLO)
        headers |= {"mcp-session-id": reply.headers["mcp-session-id"], "mcp-protocol-version": "2025-06-18"}
        client.post(url, headers=headers, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
        for n, text in enumerate(texts[:5], 1):
            client.post(url, headers=headers, json=call(n, text))
        samples = []
        started = time.perf_counter()
        for _ in range(passes):
            for n, text in enumerate(texts, 100):
                t0 = time.perf_counter()
                reply = client.post(url, headers=headers, json=call(n, text))
                samples.append((time.perf_counter() - t0) * 1000)
                assert reply.status_code == 200 and '"result"' in reply.text, reply.text[:200]
        return samples, time.perf_counter() - started


def start_http(backend: str, folder: str, record: bool) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, *server_args(backend, folder, record), "--http", "0"], stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    line = proc.stderr.readline()
    found = re.search(r"on (http://127\.0\.0\.1:\d+/mcp) ", line)
    if not found:
        proc.kill()
        raise SystemExit(f"the HTTP server did not start: {line}")
    return proc, found.group(1)


def row(name: str, samples: list[float], wall: float | None, floor: float, cpu: float | None = None) -> str:
    median = statistics.median(samples)
    rate = f"{len(samples) / wall:.0f}" if wall else "-"
    added = f"{median - floor:+.2f}" if wall else "-"
    per_call = f"{cpu * 1000 / len(samples):.2f}" if cpu is not None else "-"
    return f"| {name} | {len(samples)} | {median:.2f} | {p95(samples):.2f} | {added} | {rate} | {per_call} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--passes", type=int, default=10)
    parser.add_argument("--backend", default="local")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args()
    texts = messages()
    record = not args.no_record
    global LOAD
    LOAD = os.getloadavg()[0]

    floor_samples, floor_cpu = direct(args.backend, texts, args.passes)
    floor = statistics.median(floor_samples)
    rows = [row("direct Router.route (CPU: this process)", floor_samples, None, floor, floor_cpu)]
    with tempfile.TemporaryDirectory(prefix="bench-mcp-") as folder:
        samples, wall = anyio.run(stdio_mode, args.backend, texts, args.passes, folder, record)
        rows.append(row("stdio, SDK client", samples, wall, floor))
        samples, wall, cpu = raw_stdio(args.backend, texts, args.passes, folder, record)
        rows.append(row("stdio, raw JSON-RPC lines", samples, wall, floor, cpu))
        proc, url = start_http(args.backend, folder, record)
        try:
            cpu0 = cpu_seconds(proc.pid)
            samples, wall = anyio.run(http_mode, url, texts, args.passes, 1)
            rows.append(row("http, SDK client", samples, wall, floor, cpu_seconds(proc.pid) - cpu0))
            cpu0 = cpu_seconds(proc.pid)
            samples, wall = raw_http(url, texts, args.passes)
            rows.append(row("http, raw JSON-RPC over httpx keep-alive", samples, wall, floor, cpu_seconds(proc.pid) - cpu0))
            if args.clients > 1:
                cpu0 = cpu_seconds(proc.pid)
                samples, wall = anyio.run(http_mode, url, texts, args.passes, args.clients)
                rows.append(row(f"http, {args.clients} SDK clients at once", samples, wall, floor, cpu_seconds(proc.pid) - cpu0))
        finally:
            proc.terminate()
            proc.wait(timeout=15)
        turns = sum(sum(1 for line in p.read_text(encoding="utf-8").splitlines() if line == "[[turns]]") for p in Path(folder).glob("*.toml"))

    print(f"## MCP server, backend {args.backend}, demo catalog, {len(texts)} demo-bench messages x {args.passes} passes\n")
    print(f"recording: {'on' if record else 'off'} ({turns} turns in the live files)\n")
    print(f"load average at the start: {LOAD:.1f} (2 cores); server CPU ms/call is the server process's own CPU time per call\n")
    print("| mode | calls | median ms | p95 ms | added vs direct (median) | calls/s | server CPU ms/call |\n|---|---|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
