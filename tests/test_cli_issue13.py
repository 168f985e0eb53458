"""Issue 13, item 16: the CLI's answers to empty, badly encoded and unchanged input (real subprocesses)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SESSIONS = Path(__file__).resolve().parent.parent / "sessions"


def cli(*args: str | bytes, stdin: bytes = b"", cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "TUI_ROUTER_CONFIG"}
    return subprocess.run([sys.executable, "-m", "tui_router", *args], input=stdin, capture_output=True, cwd=cwd, env=env)


@pytest.mark.parametrize(("args", "stdin"), [(("route", ""), b""), (("route", "  \t "), b""), (("route", "-"), b""), (("route", "-"), b" \n\n")])
def test_an_empty_message_exits_2_with_a_sentence(args, stdin) -> None:
    done = cli(*args, "--backend", "local", stdin=stdin)
    assert done.returncode == 2
    assert done.stdout == b""
    assert b"the message is empty" in done.stderr and b"Traceback" not in done.stderr


@pytest.mark.parametrize("backend", ["local", "semantic"])
def test_invalid_utf8_on_stdin_and_argv_is_routed_after_replacing_bad_bytes(backend: str) -> None:
    done = cli("route", "-", "--json", "--backend", backend, stdin=b"text bob \xff\xfe that the deploy finished")
    assert done.returncode == 0, done.stderr
    assert b"not valid UTF-8" in done.stderr and b"Traceback" not in done.stderr
    assert b'"choice"' in done.stdout
    done = cli("route", b"text bob \xff that the deploy finished", "--json", "--backend", backend)
    assert done.returncode == 0, done.stderr
    assert b"not valid UTF-8" in done.stderr and b"Traceback" not in done.stderr


def test_replay_headless_without_changes_prints_one_summary_and_no_table() -> None:
    done = cli("replay", "--headless", str(SESSIONS / "demo-bench.toml"), "--backend", "local")
    out = done.stdout.decode()
    assert done.returncode == 0, done.stderr
    assert out.count("turns replayed") == 1
    # replayj: a hand-written set has no recorded decision to diff; the table lists only the turns
    # wrong against their label now (none of "-"), the summary says so
    assert "│ - " not in out
    rows = [line for line in out.splitlines() if line.startswith("│")]
    assert all(line.rstrip().endswith("│ wrong │") for line in rows)
    assert "30 with no recorded decision to diff" in " ".join(out.split())


def test_replay_headless_numbers_rows_from_1(tmp_path: Path) -> None:
    session = tmp_path / "s.toml"
    session.write_text(
        '[session]\nid = "s"\ncatalog = "demo"\n\n[[turns]]\nmessage = "text jordan that the deploy finished"\nlabel = "send_sms"\n'
        '[turns.decision]\nchoice = "send_email"\nband = "high"\naction = "execute"\nconfidence = 0.9\n',
        encoding="utf-8",
    )
    done = cli("replay", "--headless", str(session), "--backend", "local", "--all")
    lines = [line for line in done.stdout.decode().splitlines() if "text jordan" in line]
    assert len(lines) == 1 and lines[0].split("│")[1].strip() == "1", done.stdout.decode()


def test_catalog_validate_shows_warnings_with_errors_and_a_duplicate_of_an_invalid_entry(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text('name = "x"\ncolour = "blue"\n[[tools]]\nid = "dup"\n[[tools]]\nid = "dup"\nwhen_to_use = "Second copy"\n', encoding="utf-8")
    done = cli("catalog", "validate", str(path))
    err = done.stderr.decode()
    assert done.returncode == 2 and "Traceback" not in err
    assert "tools[0] (id 'dup'): field 'when_to_use' is required" in err
    assert "tools[1] (id 'dup'): field 'id' duplicates tools[0]" in err
    assert "warning:" in err and "unknown top-level key 'colour'" in err


def test_backend_help_names_auto() -> None:
    for args in (("--help",), ("route", "--help")):
        assert b"auto (default" in cli(*args).stdout
