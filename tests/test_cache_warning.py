"""An embedding cache that cannot be written is said by every command that builds a router, and by
the console, in the same one sentence `route` prints.

The cache fails soft (vectors kept in memory, the results stand); only `route` said so, so an eval,
a replay, a calibration or an MCP server embedded the catalog again at every start with no word why.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import tomli_w
from app_harness import AGENDA, DOCS, REMINDER, make_app, make_config, notifications, settle, write_catalog
from cli_harness import tui_router

from tui_router.embed import semantic_available

pytestmark = pytest.mark.skipif(not semantic_available(), reason="the semantic extra is not installed")

MESSAGES = [(REMINDER, "create_reminder"), (AGENDA, "list_events"), (DOCS, "search_docs"), ("text 555 0100 that I am late", "send_sms")]


def unwritable_config(tmp_path: Path) -> tuple[Path, Path]:
    """A config whose embedding cache sits under a regular file (cannot be a folder), and the file."""
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file\n", encoding="utf-8")
    config = tmp_path / "tui-router.toml"
    data = {"catalog": str(write_catalog(tmp_path)), "backend": "semantic", "semantic": {"cache_dir": str(blocker / "vectors")}}
    config.write_text(tomli_w.dumps(data), encoding="utf-8")
    return config, blocker


def cases_file(tmp_path: Path, copies: int = 1) -> Path:
    turns = [{"message": f"{m} ({n})" if n else m, "label": label} for n in range(copies) for m, label in MESSAGES]
    path = tmp_path / "cases.toml"
    path.write_text(tomli_w.dumps({"session": {"id": "cases", "catalog": "tiny"}, "turns": turns}), encoding="utf-8")
    return path


def route_warning(config: Path, tmp_path: Path) -> str:
    """The sentence `route` prints (the reference the other commands must repeat)."""
    done = tui_router("route", "--config", str(config), "--json", REMINDER, env={})
    assert done.returncode == 0, done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith(f"tui-router: warning: cannot write the embedding cache in {tmp_path}/not-a-folder/vectors/")
    assert line.endswith("(Not a directory); kept in memory")
    return line


def warnings_in(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "embedding cache" in line]


def test_eval_replay_and_calibrate_say_it_once_in_routes_sentence(tmp_path: Path) -> None:
    config, _ = unwritable_config(tmp_path)
    sentence = route_warning(config, tmp_path)
    cases = cases_file(tmp_path)

    evaluated = tui_router("eval", str(cases), "--config", str(config), "--json", env={})
    assert evaluated.returncode == 0, evaluated.stderr
    assert warnings_in(evaluated.stderr) == [sentence]
    assert "cache" not in evaluated.stdout  # the JSON is unchanged: the warning is on stderr

    compared = tui_router("eval", str(cases), "--config", str(config), "--compare", "semantic", env={})
    assert compared.returncode == 0, compared.stderr
    assert warnings_in(compared.stderr) == [sentence]  # two routers, one problem: one line

    replayed = tui_router("replay", "--headless", str(cases), "--config", str(config), env={})
    assert replayed.returncode == 0, replayed.stderr
    assert warnings_in(replayed.stderr) == [sentence]

    many = cases_file(tmp_path, copies=13)  # calibrate needs 50 labelled turns
    calibrated = tui_router("calibrate", str(many), "--config", str(config), env={})
    assert calibrated.returncode == 0, calibrated.stderr
    assert warnings_in(calibrated.stderr) == [sentence]


def test_a_writable_cache_is_not_warned_about(tmp_path: Path) -> None:
    config = tmp_path / "tui-router.toml"
    data = {"catalog": str(write_catalog(tmp_path)), "backend": "semantic", "semantic": {"cache_dir": str(tmp_path / "vectors")}}
    config.write_text(tomli_w.dumps(data), encoding="utf-8")
    evaluated = tui_router("eval", str(cases_file(tmp_path)), "--config", str(config), env={})
    assert evaluated.returncode == 0 and evaluated.stderr == "", evaluated.stderr
    assert list((tmp_path / "vectors").rglob("*.npz"))  # written, so nothing to say


def test_mcp_serve_says_it_before_its_ready_line(tmp_path: Path) -> None:
    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    config, _ = unwritable_config(tmp_path)
    sentence = route_warning(config, tmp_path)
    argv = [sys.executable, "-m", "tui_router", "mcp-serve", "--config", str(config), "--no-record"]
    done = subprocess.run(argv, input="", capture_output=True, text=True, env=dict(os.environ), timeout=120)  # stdin at EOF: it stops
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert warnings_in(done.stderr) == [sentence]
    ready = next(i for i, line in enumerate(lines) if "MCP server ready" in line)
    assert lines.index(sentence) < ready


async def test_the_console_notifies_it_once_per_run(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file\n", encoding="utf-8")
    config = make_config(tmp_path, backend="semantic", semantic={"cache_dir": str(blocker / "vectors")})
    app = make_app(config)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        assert app.router is not None
        problem = app.router.backend.cache_problem()
        assert problem.startswith(f"cannot write the embedding cache in {blocker}/vectors/") and problem.endswith("kept in memory")
        assert [n for n in notifications(app) if "embedding cache" in n] == [problem]
        app.load_router(config)  # a reload (config: reload, backend switch) meets the same problem
        await settle(app, pilot)
        assert [n for n in notifications(app) if "embedding cache" in n] == [problem]


async def test_the_console_says_nothing_when_the_cache_is_written(tmp_path: Path) -> None:
    config = make_config(tmp_path, backend="semantic", semantic={"cache_dir": str(tmp_path / "vectors")})
    app = make_app(config)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        assert app.router is not None and app.router.backend.cache_problem() == ""
        assert not [n for n in notifications(app) if "embedding cache" in n]
