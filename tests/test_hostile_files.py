"""Hostile files (issue 14, items 5 and 6): files made by the tests, read by the real CLI.

Each case ends in one sentence on stderr and exit 2, with no traceback, and leaves the file as it
was; nothing here hangs (FIFO) or fills memory (/dev/zero).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_cli_eval import run_cli

from tui_router import tomlio
from tui_router.cli import main
from tui_router.errors import CatalogError, SessionError

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "sessions" / "demo-bench.toml"
TOOL = '[[tools]]\nid = "a"\nwhen_to_use = "Do a."\n'


@pytest.fixture(autouse=True)
def hermetic(monkeypatch, tmp_path):
    monkeypatch.delenv("TUI_ROUTER_CONFIG", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.chdir(tmp_path)


def one_sentence(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


@pytest.fixture()
def hostile(tmp_path: Path) -> dict[str, Path]:
    """One file (or non-file) per hostile shape of issue 14 item 5."""
    made = {
        "nested_array": tmp_path / "nested-array.toml",
        "nested_table": tmp_path / "nested-table.toml",
        "nested_dotted": tmp_path / "nested-dotted.toml",
        "loop": tmp_path / "loop.toml",
        "fifo": tmp_path / "fifo.toml",
        "oversized": tmp_path / "oversized.toml",
        "nan": tmp_path / "nan.toml",
        "inf": tmp_path / "inf.toml",
    }
    made["nested_array"].write_text('name = "n"\n' + TOOL + "x = " + "[" * 340 + "]" * 340 + "\n")
    made["nested_table"].write_text('name = "n"\nx = ' + "{a = " * 340 + "1" + "}" * 340 + "\n")
    made["nested_dotted"].write_text('name = "n"\n[' + ".".join(["k"] * 2000) + "]\nx = 1\n")
    made["loop"].symlink_to(made["loop"])
    os.mkfifo(made["fifo"])
    with made["oversized"].open("wb") as handle:  # sparse: big on paper, nothing written
        handle.truncate(tomlio.MAX_FILE_BYTES + 1)
    made["nan"].write_text('name = "n"\n' + TOOL + '[tools.schema]\ntype = "object"\nmaximum = nan\n')
    made["inf"].write_text('name = "n"\n' + TOOL + '[tools.schema]\ntype = "integer"\nminimum = -inf\n')
    return made


EXPECTED = {
    "nested_array": "nested more than 48 levels deep",
    "nested_table": "nested more than 48 levels deep",
    "nested_dotted": "nested more than 48 levels deep",
    "loop": "a symbolic link loop",
    "fifo": "not a regular file",
    "oversized": "the limit is 32 MiB",
    "nan": "'tools[0].schema.maximum' is nan; numbers must be finite",
    "inf": "'tools[0].schema.minimum' is -inf; numbers must be finite",
}


@pytest.mark.parametrize("shape", sorted(EXPECTED))
def test_hostile_catalog_config_and_session(shape, hostile, capsys):
    path = hostile[shape]
    before = path.lstat()
    assert main(["catalog", "validate", str(path)]) == 2
    assert EXPECTED[shape] in one_sentence(capsys)
    assert main(["--config", str(path), "route", "hello"]) == 2
    line = one_sentence(capsys)
    assert EXPECTED[shape] in line and "config" in line
    assert main(["replay", "--headless", str(path)]) == 2
    line = one_sentence(capsys)
    assert EXPECTED[shape] in line and "session" in line
    after = path.lstat()
    assert (after.st_mtime_ns, after.st_size, after.st_mode) == (before.st_mtime_ns, before.st_size, before.st_mode)


def test_dev_zero_is_refused_without_reading(capsys):
    assert main(["catalog", "validate", "/dev/zero"]) == 2
    assert one_sentence(capsys) == (
        "tui-router: /dev/zero: not a regular file (a pipe, device or socket), so it is not read as a catalog file"
    )


def test_fifo_as_catalog_in_a_real_process_does_not_hang(tmp_path):
    fifo = tmp_path / "cat.toml"
    os.mkfifo(fifo)
    done = run_cli("route", "--catalog", str(fifo), "hello", cwd=tmp_path)  # would block forever on open()
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip() == f"tui-router: {fifo}: not a regular file (a pipe, device or socket), so it is not read as a catalog file"


def test_symlink_loop_as_catalog_flag(tmp_path, capsys):
    loop = tmp_path / "loop.toml"
    loop.symlink_to(loop)
    assert main(["route", "--catalog", str(loop), "hello"]) == 2
    assert one_sentence(capsys) == f"tui-router: {loop}: a symbolic link loop, not a catalog file"


@pytest.mark.parametrize("padding", [0, tomlio.FAST_FROM_BYTES])
def test_bom_means_the_same_below_and_above_the_fast_parser_size(tmp_path, padding):
    """Both parsers see the same text: a UTF-8 BOM is dropped, small file or large."""
    path = tmp_path / "bom.toml"
    path.write_bytes(b'\xef\xbb\xbfname = "bom"\n' + TOOL.encode() + b"#" * padding + b"\n")
    from tui_router.catalog import load_catalog

    catalog = load_catalog(path)
    assert catalog.name == "bom" and [t.id for t in catalog.tools] == ["a"]


@pytest.mark.parametrize("padding", [0, tomlio.FAST_FROM_BYTES])
def test_nesting_limit_is_the_same_for_both_parsers(padding):
    deep = "x = " + "[" * 60 + "]" * 60 + "\n" + "#" * padding + "\n"
    with pytest.raises(tomlio.TOMLLimitError, match="48 levels"):
        tomlio.loads(deep)
    shallow = "x = " + "[" * 40 + "]" * 40 + "\n" + "#" * padding + "\n"
    value = tomlio.loads(shallow)["x"]
    for _ in range(39):
        value = value[0]
    assert value == []


def test_non_string_description_is_an_error_not_a_string(tmp_path):
    path = tmp_path / "desc.toml"
    path.write_text('name = "d"\ndescription = {a = 1}\n' + TOOL)
    from tui_router.catalog import load_catalog

    with pytest.raises(CatalogError) as caught:
        load_catalog(path)
    assert caught.value.lines() == [f"{path}:2: 'description' must be a string"]


@pytest.mark.parametrize(
    ("toml", "expected"),
    [
        ("[policy]\nhigh = nan\n", "'policy.high' is nan; numbers must be finite"),
        ("[systemone]\ntimeout = inf\n", "'systemone.timeout' is inf; numbers must be finite"),
        ("[fallback]\ntimeout = -inf\n", "'fallback.timeout' is -inf; numbers must be finite"),
    ],
)
def test_non_finite_config_numbers(tmp_path, capsys, toml, expected):
    path = tmp_path / "cfg.toml"
    path.write_text(toml)
    assert main(["--config", str(path), "route", "hello"]) == 2
    assert expected in one_sentence(capsys)


def test_config_built_in_code_refuses_nan_too():
    from pydantic import ValidationError

    from tui_router.config import Config

    with pytest.raises(ValidationError, match="finite number"):
        Config.model_validate({"policy": {"high": float("nan")}})


def test_nan_probability_in_a_session_is_refused(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text('[session]\nid = "s"\n[[turns]]\nmessage = "hi"\n[turns.decision]\nprobabilities = { a = nan }\n')
    from tui_router.session import load_session

    with pytest.raises(SessionError, match=r"'turns\[0\]\.decision\.probabilities\.a' is nan"):
        load_session(path)


def test_deep_nesting_in_a_real_process_has_no_traceback(tmp_path):
    """The original report: ~330 levels gave a 3,000-line RecursionError traceback."""
    path = tmp_path / "deep.toml"
    path.write_text("x = " + "{a = " * 400 + "1" + "}" * 400 + "\n")
    done = subprocess.run(
        [sys.executable, "-c", "import sys; from tui_router.cli import main; sys.exit(main())", "catalog", "validate", str(path)],
        capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == [f"tui-router: {path}: not a usable catalog file (arrays or tables nested more than 48 levels deep)"]


# -- item 6: replay checks the sessions like eval does -------------------------------------------


def _session(path: Path, catalog: str, label: str) -> Path:
    path.write_text(f'[session]\nid = "{path.stem}"\ncatalog = "{catalog}"\n\n[[turns]]\nmessage = "Text Jordan."\nlabel = "{label}"\n')
    return path


def test_replay_of_a_session_made_for_another_catalog_notes_it_and_strict_refuses(tmp_path, capsys):
    # replayj: replaying a session against another catalog is what replay is for; --strict refuses as before
    other = _session(tmp_path / "other.toml", "metatool-toole", "send_sms")
    before = other.read_bytes()
    assert main(["replay", "--headless", str(other), "--backend", "local"]) == 0
    captured = capsys.readouterr()
    assert f"tui-router: note: {other}: recorded for catalog 'metatool-toole'; routed with catalog 'demo'" in captured.err
    assert "1 turns replayed" in captured.out
    assert main(["replay", "--headless", "--strict", str(other)]) == 2
    line = one_sentence(capsys)
    assert "labelled for catalog 'metatool-toole' but the catalog in use is 'demo'" in line and "pass --catalog" in line
    assert main(["replay", "--strict", str(other)]) == 2  # the console replay checks before it opens
    assert "pass --catalog" in one_sentence(capsys)
    assert other.read_bytes() == before


def test_replay_shows_labels_that_are_not_options_and_strict_refuses(tmp_path, capsys):
    bad = _session(tmp_path / "bad.toml", "demo", "send_smss")
    assert main(["replay", "--headless", str(bad), "--backend", "local"]) == 0
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    assert (
        "tui-router: note: 1 labelled turn replayed but not scored: its label is not an option of catalog 'demo': "
        "send_smss (1) (did you mean 'send_sms'?) (--strict refuses instead)"
    ) in captured.err
    out = " ".join(captured.out.split())  # the table folds at the terminal's width
    assert "send_smss (gone)" in out and "1 turn labelled with an id not in this catalog: send_smss (1), not scored" in out
    assert main(["replay", "--headless", "--strict", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "label 'send_smss' is not an option of catalog 'demo' (did you mean 'send_sms'?)" in err


def test_replay_still_runs_a_matching_session(tmp_path, capsys):
    good = _session(tmp_path / "good.toml", "demo", "send_sms")
    assert main(["replay", "--headless", str(good), "--backend", "local"]) == 0
    assert "1 turns replayed" in capsys.readouterr().out


async def test_the_console_replay_file_shows_a_label_gone_from_the_catalog_like_headless_replay(tmp_path):
    # replayj: `replay: run file` refused a session whose label is no option of the catalog (a tool
    # removed since); it replays it now, the label marked "(gone)" and "unscored", the summary counting it
    from app_harness import make_app, make_config, notifications, settle

    from tui_router.app.screens.replay import ReplayScreen, ReplayTable

    app = make_app(make_config(tmp_path))  # the tiny catalog
    bad = _session(tmp_path / "bad.toml", "tiny", "send_smss")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        app.replay_file(str(bad))
        await pilot.pause()
        shown = notifications(app)
        assert any(
            "1 labelled turn replayed but not scored: its label is not an option of catalog 'tiny': send_smss (1) (did you mean 'send_sms'?)" in n
            for n in shown
        )
        assert isinstance(app.screen, ReplayScreen)
        await settle(app, pilot)
        for _ in range(50):
            if app.screen.report is not None:
                break
            await pilot.pause(0.05)
        table = app.screen.query_one(ReplayTable)
        cells = [c.plain for c in table.cells(0)]
        assert "send_s… (gone)" in cells and cells[-1] == "unscored"  # the 14-cell label column keeps the mark
        summary = str(app.screen.query_one("#replay-summary").render())
        assert "1 turn labelled with an id not in this catalog: send_smss (1), not scored" in summary
        assert app.screen.report.not_in_catalog == {"send_smss": 1} and app.screen.report.broken == 0
        # the Candidates pane called it a retrieval miss, which no retrieval could have avoided
        from tui_router.app.widgets.candidates import render_candidates

        pane = app.screen.query_one("#replay-candidates")
        shown = render_candidates(pane.view, pane.catalog, 80).plain
        assert "not in catalog: the label send_smss is not an option of catalog tiny" in shown and "retrieval miss" not in shown


async def test_the_console_replay_file_action_notes_another_catalog_and_opens(tmp_path):
    from app_harness import make_app, make_config, notifications, settle

    from tui_router.app.screens.replay import ReplayScreen

    app = make_app(make_config(tmp_path))  # the tiny catalog
    other = _session(tmp_path / "other.toml", "demo", "send_sms")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        app.replay_file(str(other))
        await pilot.pause()
        assert any(f"{other}: recorded for catalog 'demo'; routed with catalog 'tiny'" in n for n in notifications(app))
        assert isinstance(app.screen, ReplayScreen)
