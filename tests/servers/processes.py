"""Start `jevcompat mock` and `sparrow-decider serve` as real subprocesses on free loopback ports."""

from __future__ import annotations

import os
import queue
import re
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

START_TIMEOUT = 30.0  # imports are slow on a busy 2-core machine


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def console_script(name: str, module: str) -> list[str]:
    """The installed console script next to this Python, else the module's main via -c."""
    script = Path(sys.executable).parent / name
    if script.is_file():
        return [str(script)]
    return [sys.executable, "-c", f"import sys; from {module} import main; sys.exit(main())"]


class ServerProcess:
    """A server subprocess whose stderr is drained by a thread (so its pipe never fills)."""

    def __init__(self, argv: list[str], env: dict[str, str] | None = None) -> None:
        self.argv = argv
        self.lines: queue.Queue[str] = queue.Queue()
        self.stderr: list[str] = []
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **(env or {})},
        )
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()
        self.base_url = ""

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr.append(line)
            self.lines.put(line)

    def wait_for_line(self, pattern: str, timeout: float = START_TIMEOUT) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None and self.lines.empty():
                raise RuntimeError(f"{self.argv[0]} exited with {self.proc.returncode}: {''.join(self.stderr)[-500:]}")
            try:
                line = self.lines.get(timeout=0.1)
            except queue.Empty:
                continue
            match = re.search(pattern, line)
            if match:
                return match
        raise RuntimeError(f"{self.argv} did not start within {timeout} s: {''.join(self.stderr)[-500:]}")

    def wait_until_ready(self, url: str, timeout: float = START_TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.argv[0]} exited with {self.proc.returncode}: {''.join(self.stderr)[-500:]}")
            try:
                httpx.get(url, timeout=1.0)
                return
            except httpx.TransportError:
                time.sleep(0.05)
        raise RuntimeError(f"{self.argv} was not ready within {timeout} s")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        if self.proc.stderr:
            self.proc.stderr.close()


def spawn_jev_mock(faults: tuple[str, ...] = (), key: str | None = None) -> ServerProcess:
    """`jevcompat mock --port 0`: the port comes from its start-up line, so there is no race for it."""
    argv = [*console_script("jevcompat", "jevcompat.cli"), "mock", "--host", "127.0.0.1", "--port", "0"]
    for fault in faults:
        argv += ["--fault", fault]
    if key is not None:
        argv += ["--key", key]
    return ServerProcess(argv)


def await_jev_mock(server: ServerProcess) -> ServerProcess:
    match = server.wait_for_line(r"on (http://127\.0\.0\.1:\d+)/v1/systemone")
    server.base_url = f"{match.group(1)}/v1"
    return server


def start_jev_mock(faults: tuple[str, ...] = (), key: str | None = None) -> ServerProcess:
    return await_jev_mock(spawn_jev_mock(faults, key))


def start_sparrow() -> ServerProcess:
    port = free_port()
    argv = [*console_script("sparrow-decider", "sparrow_decider.cli"), "serve", "--host", "127.0.0.1", "--port", str(port)]
    server = ServerProcess(argv)
    server.wait_until_ready(f"http://127.0.0.1:{port}/")
    server.base_url = f"http://127.0.0.1:{port}/v1"
    return server


def start_slow_jev_mock(latency_ms: float) -> ServerProcess:
    """The mock with a fixed model time per request (to measure client concurrency, as a real model would need)."""
    script = Path(__file__).with_name("slow_mock.py")
    server = ServerProcess([sys.executable, str(script), str(latency_ms)])
    match = server.wait_for_line(r"on (http://127\.0\.0\.1:\d+)/v1/systemone")
    server.base_url = f"{match.group(1)}/v1"
    return server


class MockPool:
    """One mock per (faults, key), started on first use and stopped at the end of the session."""

    def __init__(self) -> None:
        self.running: dict[tuple[tuple[str, ...], str | None], ServerProcess] = {}
        self._lock = threading.Lock()

    def url(self, *faults: str, key: str | None = None) -> str:
        ident = (tuple(sorted(faults)), key)
        with self._lock:
            if ident not in self.running:
                self.running[ident] = start_jev_mock(ident[0], key)
            server = self.running[ident]
            return server.base_url or await_jev_mock(server).base_url

    def warm(self, *specs: tuple[str, ...]) -> None:
        """Start several mocks at once (each start is mostly waiting on imports)."""
        with self._lock:
            for faults in specs:
                ident = (tuple(sorted(faults)), None)
                if ident not in self.running:
                    self.running[ident] = spawn_jev_mock(ident[0])

    def stop(self) -> None:
        for server in self.running.values():
            server.stop()
        self.running.clear()
