"""`tui-router` (the console) and `tui-router open FILE` as a person runs them: real processes."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time
import tomllib
from pathlib import Path

from app_harness import write_catalog

from tui_router.embed import semantic_available

# the console script's entry point, without depending on where the venv put the script
CLI = [sys.executable, "-c", "import sys; from tui_router.cli import main; sys.exit(main())"]


def run(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, cwd=cwd, timeout=60, env={**os.environ, **(env or {})}, stdin=subprocess.DEVNULL)


def test_open_a_corrupt_file_is_one_clear_line_and_exit_2(tmp_path: Path) -> None:
    corrupt = tmp_path / "broken.toml"
    original = b'[session]\nid = "x"\n[[turns]\nmessage = "half'
    corrupt.write_bytes(original)
    result = run("open", str(corrupt), cwd=tmp_path)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"tui-router: {corrupt}:3: corrupt session file, not valid TOML: Expected ']]' at the end of an array declaration")
    assert "left untouched" in lines[0]
    assert "Traceback" not in result.stderr
    assert corrupt.read_bytes() == original


def test_open_a_catalog_file_is_refused_and_the_catalog_is_untouched(tmp_path: Path) -> None:
    """Read as a session, a catalog was an empty one, and the first turn saved replaced it."""
    catalog = write_catalog(tmp_path)
    original = catalog.read_bytes()
    result = run("open", str(catalog), cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip() == f"tui-router: {catalog}: this is a catalog file ([[tools]]), not a session file; pass it with --catalog"
    assert catalog.read_bytes() == original
    assert not (tmp_path / f".{catalog.name}.lock").exists()  # nothing left beside it
    for command in (["eval"], ["queue"], ["replay", "--headless"]):
        other = run(*command, str(catalog), cwd=tmp_path)
        assert other.returncode == 2 and "this is a catalog file ([[tools]]), not a session file" in other.stderr, (command, other.stderr)


def test_a_folder_of_cases_leaves_the_catalogs_kept_beside_them_out(tmp_path: Path) -> None:
    from tui_router.session import iter_session_files

    catalog = write_catalog(tmp_path)
    cases = tmp_path / "tiny-cases.toml"
    cases.write_text('[session]\nid = "c"\ncatalog = "tiny"\n\n[[turns]]\nmessage = "remind me at 9"\nlabel = "create_reminder"\n', encoding="utf-8")
    hand = tmp_path / "only-turns.toml"  # a session with no [session] table and a tool id in a message
    hand.write_text('turns = [{ message = "[[tools]] is how a catalog starts", label = "defer_to_llm" }]\n', encoding="utf-8")
    assert iter_session_files([tmp_path]) == [hand, cases]
    from tui_router.decide.local import load_exemplars

    assert load_exemplars(["*.toml"], tmp_path) == [("defer_to_llm", "[[tools]] is how a catalog starts"), ("create_reminder", "remind me at 9")]
    result = run("eval", str(tmp_path), "--catalog", str(catalog), "--backend", "bm25", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    import json

    assert json.loads(result.stdout)["n"] == 2


def test_open_a_missing_file(tmp_path: Path) -> None:
    result = run("open", "nope.toml", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip() == "tui-router: nope.toml: session file not found"


def test_a_missing_catalog_fails_before_the_console_opens(tmp_path: Path) -> None:
    result = run("--catalog", "no-such-catalog", cwd=tmp_path)
    assert result.returncode == 2
    assert "no-such-catalog" in result.stderr and "Traceback" not in result.stderr


def test_without_a_terminal_the_console_says_so(tmp_path: Path) -> None:
    result = run(cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip() == (
        "tui-router: the console needs an interactive terminal; for scripts use `tui-router route`, `eval` or `replay --headless`"
    )


def test_the_cli_and_core_never_import_textual(tmp_path: Path) -> None:
    code = (
        "import sys, tui_router.cli, tui_router.route, tui_router.session, tui_router.evaluate, tui_router.fallback,"
        " tui_router.app, tui_router.app.format, tui_router.app.view;"
        "tui_router.cli.build_parser();"
        "print('textual' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


def test_the_console_runs_in_a_real_terminal_and_quits_with_ctrl_q(tmp_path: Path) -> None:
    """A pseudo-terminal at 80x24, default config: the panes are drawn, a message is routed and saved."""
    catalog = write_catalog(tmp_path)
    (tmp_path / "tui-router.toml").write_text(f'catalog = "{catalog}"\nsessions_dir = "sessions"\n', encoding="utf-8")
    pid, fd = pty.fork()
    if pid == 0:  # child: the console, exactly as a person starts it
        os.chdir(tmp_path)
        os.environ.update(
            {
                "TERM": "xterm-256color",
                "COLUMNS": "80",
                "LINES": "24",
                "TUI_ROUTER_CONFIG": "",
                "XDG_CACHE_HOME": str(tmp_path / "cache"),
            }
        )
        os.execv(sys.executable, [*CLI])
    import fcntl
    import struct
    import termios

    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    seen = b""

    def read_until(marker: bytes, timeout: float = 30.0) -> bool:
        nonlocal seen
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 0.2)
            if ready:
                try:
                    seen += os.read(fd, 65536)
                except OSError:
                    return marker in seen
            if marker in seen:
                return True
        return False

    try:
        assert read_until(b"Decision log"), seen[-2000:]
        assert b"Candidates" in seen and b"Distribution" in seen
        # the default backend (auto): semantic when its extra is installed, local otherwise
        model = b"semantic-e5" if semantic_available() else b"local-lexical"
        assert read_until(model, timeout=90.0), "the router never loaded"
        os.write(fd, b"show my calendar agenda for monday\r")
        # The Catalog pane lists list_events before anything is routed, so the screen cannot tell
        # that the turn was routed; the autosaved turn can (the terminal is read meanwhile, so the
        # child never blocks on a full pty).
        deadline = time.monotonic() + 60.0
        while time.monotonic() < deadline and saved_choice(tmp_path) is None:
            read_until(b"\x00never\x00", timeout=0.2)
        assert saved_choice(tmp_path) == "list_events", seen[-2000:]
        os.write(fd, b"\x11")  # ctrl+q
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
    finally:
        try:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
        os.close(fd)
    files = list((tmp_path / "sessions").glob("*.toml"))
    assert len(files) == 1
    turns = tomllib.loads(files[0].read_text(encoding="utf-8"))["turns"]
    assert [(t["message"], t["decision"]["choice"]) for t in turns] == [("show my calendar agenda for monday", "list_events")]


def saved_choice(folder: Path) -> str | None:
    """The routed choice of the first turn autosaved under folder/sessions, once there is one."""
    for path in (folder / "sessions").glob("*.toml"):
        try:
            turns = tomllib.loads(path.read_text(encoding="utf-8")).get("turns", [])
        except (OSError, tomllib.TOMLDecodeError):
            continue
        if turns and "decision" in turns[0]:
            return turns[0]["decision"].get("choice")
    return None
