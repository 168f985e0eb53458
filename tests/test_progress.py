"""Issue 14 item 9: a first start that embeds a large catalog shows progress on stderr when stderr
is a terminal (a real pseudo-terminal), and prints nothing extra to a pipe."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
from pathlib import Path

import pytest

from tui_router.embed import semantic_available

pytestmark = pytest.mark.skipif(not semantic_available(), reason="needs the semantic extra")

TOPICS = ["invoice", "weather", "ticket", "calendar", "playlist", "recipe", "parcel", "flight", "budget", "garden"]


def big_catalog(folder: Path) -> Path:
    lines = ['name = "progress-test"']
    for i, topic in enumerate(TOPICS * 4):
        lines += [
            "[[tools]]",
            f'id = "tool_{i:02d}_{topic}"',
            f'when_to_use = "Handle a {topic} request of kind {i}: look up, change or report the {topic}."',
            f'examples = ["Please sort out my {topic} number {i}."]',
        ]
    path = folder / "big.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def cli() -> list[str]:
    script = Path(sys.executable).parent / "tui-router"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "tui_router.cli"]


def run_with_tty_stderr(args: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    """Run the CLI with stderr on a pseudo-terminal; (exit code, stdout, what the terminal got)."""
    master, slave = pty.openpty()
    try:
        process = subprocess.Popen([*cli(), *args], stdout=subprocess.PIPE, stderr=slave, stdin=subprocess.DEVNULL, env=env)
    finally:
        os.close(slave)
    got = bytearray()
    while True:
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed its end
                break
            if not chunk:
                break
            got += chunk
        elif process.poll() is not None:
            break
    os.close(master)
    stdout = process.stdout.read().decode() if process.stdout else ""
    return process.wait(timeout=120), stdout, got.decode(errors="replace")


def test_first_start_embedding_shows_progress_on_a_terminal_only(tmp_path):
    catalog = big_catalog(tmp_path)
    config = tmp_path / "empty.toml"
    config.write_text("")
    env = {**os.environ, "TUI_ROUTER_CONFIG": str(config), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    args = ["route", "--backend", "semantic", "--catalog", str(catalog), "--json", "what is the weather tomorrow"]

    code, stdout, terminal = run_with_tty_stderr(args, env)
    assert code == 0, terminal
    assert '"backend": "semantic"' in stdout
    assert "tui-router: embedding " in terminal
    assert "(a first start; cached afterwards)" in terminal
    assert "(100%) in " in terminal  # the line is finished, not left half drawn

    # the same first start with stderr on a pipe: nothing drawn
    fresh = {**env, "XDG_CACHE_HOME": str(tmp_path / "cache-2")}
    piped = subprocess.run([*cli(), *args], capture_output=True, text=True, env=fresh, timeout=300, stdin=subprocess.DEVNULL)
    assert piped.returncode == 0, piped.stderr
    assert "embedding" not in piped.stderr

    # a second start reads the cache: no long work, no progress
    code, _, terminal = run_with_tty_stderr(args, env)
    assert code == 0
    assert "embedding" not in terminal
