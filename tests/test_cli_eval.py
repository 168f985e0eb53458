"""`tui-router eval / replay --headless / calibrate`: output, JSON, gates and exit codes.

A few runs are real subprocesses (the installed console script); the rest call the same `main()`
in-process to keep the suite fast.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from test_evaluate_support import write_session

from tui_router.cli import main
from tui_router.embed import semantic_available
from tui_router.session import Session, SessionInfo, Turn, save_session

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "sessions" / "demo-bench.toml"
_SCRIPT = Path(sys.executable).parent / "tui-router"
CLI = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-c", "import sys; from tui_router.cli import main; sys.exit(main())"]


# the embedding caches (messages are cached since issue 30) go to a temporary folder: HOME is the
# source tree when cwd is ROOT
CACHE = Path(tempfile.mkdtemp(prefix="cli-eval-cache-"))


def run_cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(cwd), "TUI_ROUTER_CONFIG": "", "XDG_CONFIG_HOME": str(cwd / ".xdg"),
           "XDG_CACHE_HOME": str(CACHE)}
    return subprocess.run([*CLI, *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=120)


@pytest.fixture(autouse=True)
def hermetic(monkeypatch, tmp_path):
    monkeypatch.delenv("TUI_ROUTER_CONFIG", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.chdir(tmp_path)


def test_eval_json_subprocess(tmp_path):
    done = run_cli("eval", str(BENCH), "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert (data["n"], data["tool_cases"], data["none_cases"]) == (30, 25, 5)
    # the default backend: semantic when its extra is installed, local otherwise
    assert data["backend"] == ("semantic" if semantic_available() else "local")
    assert data["learning"].startswith("leave-one-out")
    assert len(data["turns"]) == 30 and set(data["recall_at_k"]) == {str(k) for k in range(1, 11)}
    assert 0.0 <= data["top1"] <= 1.0 and data["context_bytes"]["all_schemas"] > data["context_bytes"]["snippets_only"]


def test_gate_exit_codes_subprocess(tmp_path):
    ok = run_cli("eval", str(BENCH), "--gate", "n>=30,retrieval_recall>=0.5", cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    lines = ok.stdout.strip().splitlines()
    assert lines[-3:] == ["PASS n 30 >= 30", lines[-2], "2 passed, 0 failed"]
    assert lines[-2].startswith("PASS retrieval_recall ")
    bad = run_cli("eval", str(BENCH), "--gate", "top1>=1.01,n>=1", cwd=tmp_path)
    assert bad.returncode == 1
    assert bad.stdout.strip().splitlines()[-1] == "1 passed, 1 failed"
    assert any(line.startswith("FAIL top1 ") and line.endswith(">= 1.01") for line in bad.stdout.splitlines())


def test_gate_unknown_metric(capsys):
    assert main(["eval", str(BENCH), "--gate", "top1>=0.8,eec<=0.1"]) == 2
    err = capsys.readouterr().err
    assert "unknown metric 'eec' (did you mean 'ece'?)" in err and "Traceback" not in err


def test_gate_with_json_keeps_stdout_json(capsys):
    assert main(["eval", str(BENCH), "--json", "--gate", "n>=31"]) == 1
    out, err = capsys.readouterr()
    data = json.loads(out)
    assert data["gate"] == [{"line": "FAIL n 30 >= 31", "passed": False}]
    assert err.strip().splitlines() == ["FAIL n 30 >= 31", "0 passed, 1 failed"]


def test_eval_tables_and_markdown(tmp_path, capsys):
    md = tmp_path / "out" / "eval.md"
    assert main(["eval", str(BENCH), "--backend", "local", "--compare", "bm25", "--markdown", str(md)]) == 0
    out = capsys.readouterr().out
    assert "learning: leave-one-out" in out and "Per category: local" in out and "Per category: bm25" in out
    assert "Context bytes (mean per turn)" in out and "Reliability: local" in out
    text = md.read_text()
    assert text.startswith("## Eval: demo-bench.toml on catalog `demo`")
    assert "| Metric | local (local-lexical-1) | bm25 (bm25-baseline-1) |" in text
    assert "| Category | Turns | Top-1 |" in text and "Snippets + bm25 top-1 schema" in text


def test_eval_compare_json(capsys):
    assert main(["eval", str(BENCH), "--backend", "local", "--compare", "bm25", "--json", "--no-learn"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["backend"] == "local" and data["compare"]["backend"] == "bm25"
    assert data["learning"].startswith("off") and data["compare"]["learning"].startswith("none")


def test_eval_errors(tmp_path, capsys):
    empty = write_session(tmp_path / "empty.toml", [{"message": "hi"}], catalog="demo")
    assert main(["eval", str(empty)]) == 2
    assert "no labelled turns" in capsys.readouterr().err
    assert main(["eval", str(tmp_path / "missing.toml")]) == 2
    assert "no such session file or folder" in capsys.readouterr().err
    other = write_session(tmp_path / "other.toml", [{"message": "hi", "label": "x"}], catalog="metatool-toole")
    assert main(["eval", str(other)]) == 2
    assert "pass --catalog" in capsys.readouterr().err
    assert main(["eval", str(BENCH), "--compare", "bm52"]) == 2
    assert "did you mean 'bm25'" in capsys.readouterr().err
    (tmp_path / "folder").mkdir()
    assert main(["eval", str(tmp_path / "folder")]) == 2
    assert "no session files" in capsys.readouterr().err


def _recorded(tmp_path: Path, broken: bool) -> Path:
    """A session recorded by routing with the current router, optionally with one turn it now gets wrong."""
    from tui_router.config import Config
    from tui_router.route import build_router

    router = build_router(Config())
    session = Session(session=SessionInfo(id="rec", catalog="demo"), path=tmp_path / "rec.toml")
    for message in ["Text Jordan that the deploy finished.", "what is the capital of peru"]:
        decision = router.route(message, holdout=message)
        session.turns.append(Turn(message=message, label=decision.choice, decision=decision.to_turn_decision()))
    if broken:  # recorded as right with high confidence; the router has no evidence for it now
        session.turns.append(
            Turn(
                message="zorblax wibble plonk",
                label="read_file",
                decision={"choice": "read_file", "band": "high", "action": "execute", "probabilities": {"read_file": 0.95, "defer_to_llm": 0.05}},
            )
        )
    return save_session(session)


def test_replay_headless_clean_and_broken(tmp_path, capsys):
    clean = _recorded(tmp_path, broken=False)
    assert main(["replay", str(clean), "--headless"]) == 0
    assert "2 turns replayed: 0 changed (0 flips, 0 band changes), 0 fixed, 0 broken against labels" in capsys.readouterr().out
    broken = _recorded(tmp_path, broken=True)
    assert main(["replay", str(broken), "--headless", "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["broken"] == 1 and data["flips"] == 1 and data["rows"][2]["new_choice"] == "defer_to_llm"
    assert main(["replay", str(broken), "--headless", "--gate", "flips<=5,top1>=0.5"]) == 1  # still broken
    out = capsys.readouterr().out
    assert "PASS flips 1 <= 5" in out and "2 passed, 0 failed" in out and "1 broken against labels" in out


def test_replay_flag_errors(tmp_path, capsys):
    assert main(["replay", str(BENCH), "--json"]) == 2
    assert "need --headless" in capsys.readouterr().err
    assert main(["replay", str(BENCH), str(BENCH)]) == 2
    assert "one session at a time" in capsys.readouterr().err
    assert main(["replay", str(BENCH), "--headless", "--gate", "flipz<=0"]) == 2
    assert "did you mean 'flips'" in capsys.readouterr().err


def test_calibrate_refuses_small_sets(capsys):
    assert main(["calibrate", str(BENCH)]) == 2
    err = capsys.readouterr().err
    assert "at least 50 labelled turns" in err and "found 30" in err


def test_calibrate_writes_config(tmp_path, capsys):
    from tui_router.catalog import load_catalog

    catalog = load_catalog("demo")
    turns = [{"message": ex, "label": t.id} for t in catalog.tools for ex in t.examples]
    cases = write_session(tmp_path / "cases.toml", turns, catalog="demo")
    target = tmp_path / "cfg.toml"
    args = ["calibrate", str(cases), "--backend", "local", "--write-config", str(target), "--target-precision", "0.75"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "Suggested thresholds" in out and "Held-out NLL" in out and f"to {target}" in out
    assert main(["route", "--config", str(target), "--json", "read the file notes.md"]) == 0
    assert json.loads(capsys.readouterr().out)["thresholds"]["high"] == pytest.approx(
        __import__("tomllib").loads(target.read_text())["policy"]["high"]
    )


def test_eval_replay_calibrate_never_import_textual(tmp_path):
    code = (
        "import sys; from tui_router.cli import main; import tui_router.calibrate, tui_router.report; "
        f"rc = main(['eval', {str(BENCH)!r}, '--compare', 'bm25', '--errors', '0']); "
        f"rc2 = main(['replay', {str(BENCH)!r}, '--headless']); "
        "assert 'textual' not in sys.modules, 'textual imported'; print('ok', rc, rc2)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("ok 0 0")


def test_a_case_file_copied_under_another_name_counts_once_with_one_note(tmp_path, capsys):
    # demo-bench's turns have no `at`: a copy of it in the same folder doubled n (60) in eval and
    # replay; now the copy counts once and one stderr line names both files.
    cases = tmp_path / "cases"
    cases.mkdir()
    text = BENCH.read_text(encoding="utf-8")
    (cases / "bench.toml").write_text(text, encoding="utf-8")
    (cases / "bench-backup.toml").write_text(text, encoding="utf-8")
    original, copy = cases / "bench-backup.toml", cases / "bench.toml"  # read in name order
    note = f"tui-router: note: {copy} holds the same turns as {original} (the same messages and labels, in the same order): they count once, from {original}"

    assert main(["eval", str(cases), "--backend", "local", "--json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["n"] == 30
    assert [line for line in err.splitlines() if "note:" in line] == [note]

    assert main(["replay", "--headless", str(cases), "--backend", "local", "--json", "--catalog", "demo"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["turns"] == 30
    assert [line for line in err.splitlines() if "note:" in line] == [note]

    # calibrate counts them once too: 30, not the 60 it would have fitted thresholds on
    assert main(["calibrate", str(cases), "--backend", "local", "--json", "--no-learn"]) == 2
    assert "needs at least 50 labelled turns to suggest thresholds; found 30 in" in capsys.readouterr().err
    head, *turns = text.split("\n[[turns]]\n")
    again = [t.replace('message = "', 'message = "Again: ', 1) for t in turns]
    doubled = "\n[[turns]]\n".join([head, *turns, *again]) + "\n"
    (cases / "bench.toml").write_text(doubled, encoding="utf-8")
    (cases / "bench-backup.toml").write_text(doubled, encoding="utf-8")
    assert main(["calibrate", str(cases), "--backend", "local", "--json", "--no-learn"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["n"] == 60
    assert [line for line in err.splitlines() if "note:" in line] == [note]


def test_a_file_sharing_some_turns_of_another_keeps_counting_them(tmp_path, capsys):
    cases = tmp_path / "cases"
    cases.mkdir()
    text = BENCH.read_text(encoding="utf-8")
    (cases / "bench.toml").write_text(text, encoding="utf-8")
    first_turns = text.split("\n[[turns]]\n")[:6]  # the header and five of its turns
    (cases / "part.toml").write_text("\n[[turns]]\n".join(first_turns) + "\n", encoding="utf-8")
    assert main(["eval", str(cases), "--backend", "local", "--json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["n"] == 35
    assert "note:" not in err
