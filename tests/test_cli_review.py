"""`tui-router queue`, `replay --headless --what-if`, `eval --label-source` and calibrate's what-if."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import tomli_w
from test_cli_eval import run_cli
from test_review import decided, write

from tui_router.cli import main
from tui_router.session import Turn, TurnDecision

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "sessions" / "demo-bench.toml"


@pytest.fixture(autouse=True)
def hermetic(monkeypatch, tmp_path):
    monkeypatch.delenv("TUI_ROUTER_CONFIG", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    sessions = tmp_path / "sessions"
    write(
        sessions / "one.toml",
        [
            decided("wide margin", {"send_sms": 0.9, "defer_to_llm": 0.1}),
            decided("already labelled", {"send_sms": 0.5, "send_email": 0.5}, label="send_sms"),
            decided("narrow margin", {"send_email": 0.5, "send_sms": 0.45, "defer_to_llm": 0.05}),
        ],
    )
    write(sessions / "two.toml", [Turn(message="timed out", decision=TurnDecision(band="unresolved", error="timeout"))])
    return sessions


def test_queue_json_lists_turns_least_certain_first(folder, capsys):
    assert main(["queue", str(folder), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["total"] == 3
    assert [(Path(e["file"]).name, e["turn"], e["band"]) for e in data["queue"]] == [
        ("two.toml", 1, "unresolved"),
        ("one.toml", 3, "low"),
        ("one.toml", 1, "high"),
    ]
    assert data["queue"][1]["margin"] == pytest.approx(0.05)
    assert data["queue"][1]["choice"] == "send_email" and data["queue"][0]["margin"] is None


def test_a_file_named_twice_is_queued_once(folder, capsys):
    assert main(["queue", str(folder), str(folder / "one.toml"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["total"] == 3


def test_queue_table_with_limit(folder, capsys):
    assert main(["queue", str(folder), "--limit", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "queue: 3 unlabelled turns in 2 files, least certain first (first 2)"
    assert lines[1].split()[:5] == ["file", "turn", "margin", "band", "choice"]
    assert lines[2].split()[1:5] == ["1", "-", "unresolved", "-"] and lines[2].endswith("timed out")
    assert lines[3].split()[1:5] == ["3", "0.050", "low", "send_email"]
    assert len(lines) == 4


def test_queue_bad_input_is_one_sentence_and_exit_2(tmp_path):
    done = run_cli("queue", str(tmp_path / "missing.toml"), cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip() == f"tui-router: {tmp_path / 'missing.toml'}: no such session file or folder"
    bad = run_cli("queue", str(BENCH), "--limit", "0", cwd=tmp_path)
    assert bad.returncode == 2 and "must be at least 1" in bad.stderr and "Traceback" not in bad.stderr


def test_queue_with_nothing_to_label(capsys):
    assert main(["queue", str(BENCH)]) == 0
    assert capsys.readouterr().out == "queue: no unlabelled turns in 1 file\n"


def _recorded(path: Path) -> Path:
    # confidences as recorded, re-banded with the "reported" formula so the moves are known exactly
    turns = [
        decided("read the notes", {"read_file": 0.95, "defer_to_llm": 0.05}, confidence=0.9, label="read_file"),
        decided("list the files", {"read_file": 0.9, "defer_to_llm": 0.1}, confidence=0.78, label="search_files"),
        decided("open the readme", {"read_file": 0.7, "defer_to_llm": 0.3}, confidence=0.47, label="read_file"),
    ]
    for t in turns:
        t.decision.reported_confidence = t.decision.confidence
    return write(path, turns)


def test_replay_what_if_lists_the_turns_that_move_and_writes_nothing(tmp_path, capsys):
    session = _recorded(tmp_path / "rec.toml")
    config = tmp_path / "cfg.toml"
    config.write_text('backend = "local"\n[policy]\nconfidence = "reported"\n')
    before = session.read_bytes()
    assert main(["replay", str(session), "--headless", "--what-if", "high=0.8,medium=0.5", "--config", str(config), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [(c["turn"], c["before"]["action"], c["after"]["action"]) for c in data["changed"]] == [(2, "execute", "confirm"), (3, "confirm", "fallback")]
    assert data["band_accuracy"]["before"]["high"] == {"correct": 1, "labelled": 2, "accuracy": 0.5}
    assert data["band_accuracy"]["after"]["high"] == {"correct": 1, "labelled": 1, "accuracy": 1.0}
    assert data["actions"]["after"] == {"execute": 1, "confirm": 1, "escalate": 0, "fallback": 1}
    assert session.read_bytes() == before
    assert main(["replay", str(session), "--headless", "--what-if", "high=0.8", "--config", str(config)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "thresholds now: high >= 0.75, medium >= 0.45; what-if: high >= 0.8, medium >= 0.45"
    assert out[1] == "what-if: 1 of 3 routed turns would change band or action"
    assert out[2].startswith("  rec.toml:2  high/execute -> medium/confirm  conf 0.78  read_file (wrong)")


def test_what_if_refuses_bad_flags(tmp_path, capsys):
    session = _recorded(tmp_path / "rec.toml")
    assert main(["replay", str(session), "--what-if", "high=0.8"]) == 2
    assert "need --headless" in capsys.readouterr().err
    assert main(["replay", str(session), "--headless", "--what-if", "high=0.8", "--gate", "flips<=0"]) == 2
    assert "--gate and --all belong to a replay" in capsys.readouterr().err
    # the local backend keeps the seeds' high 0.75 (the default semantic one starts from its fitted 0.90)
    assert main(["replay", str(session), "--headless", "--what-if", "medium=0.9", "--backend", "local"]) == 2
    assert capsys.readouterr().err.strip() == "tui-router: --what-if: medium (0.9) must not be above high (0.75)"
    assert main(["replay", str(session), "--headless", "--what-if", "medium=0.95"]) == 2
    assert "--what-if: medium (0.95) must not be above high" in capsys.readouterr().err


def _sourced_bench(tmp_path: Path) -> Path:
    data = tomllib.loads(BENCH.read_text())
    for turn in data["turns"][:3]:
        turn["label_source"], turn["reviewer"] = "confirm", "dana"
    data["turns"][3]["label_source"] = "review"
    path = tmp_path / "bench.toml"
    path.write_text(tomli_w.dumps(data))
    return path


@pytest.mark.parametrize(("sources", "n"), [("confirm", 3), ("-confirm", 27), ("review,hand", 27), ("hand", 26), ("-confirm,-hand", 1)])
def test_eval_label_source_includes_or_excludes(tmp_path, capsys, sources, n):
    bench = _sourced_bench(tmp_path)
    assert main(["eval", str(bench), "--backend", "bm25", "--json", f"--label-source={sources}"]) == 0
    assert json.loads(capsys.readouterr().out)["n"] == n


def test_eval_label_source_errors(tmp_path, capsys):
    for bad in ("robot", "review,-hand"):
        with pytest.raises(SystemExit) as exc:
            main(["eval", str(BENCH), "--backend", "bm25", f"--label-source={bad}"])
        assert exc.value.code == 2
        assert "among confirm, review, hand" in capsys.readouterr().err
    assert main(["eval", str(BENCH), "--backend", "bm25", "--label-source", "confirm"]) == 2
    assert "no labelled turns with label_source confirm in" in capsys.readouterr().err


def test_calibrate_shows_the_what_if_before_writing(tmp_path, capsys):
    from tui_router.catalog import load_catalog

    catalog = load_catalog("demo")
    turns = [decided(ex, {t.id: 0.97, "defer_to_llm": 0.03}, confidence=0.5, label=t.id) for t in catalog.tools for ex in t.examples]
    cases = write(tmp_path / "cases.toml", turns)
    target = tmp_path / "cfg.toml"
    assert main(["calibrate", str(cases), "--backend", "local", "--write-config", str(target), "--target-precision", "0.75"]) == 0
    out = capsys.readouterr().out.splitlines()
    what_if = next(i for i, line in enumerate(out) if line.startswith("what-if: "))
    wrote = next(i for i, line in enumerate(out) if line.startswith("wrote [policy]"))
    assert what_if < wrote
    assert out[what_if].endswith(f"of {len(turns)} routed turns would change band or action")


def test_queue_never_imports_textual(folder):
    code = (
        "import sys; from tui_router.cli import main; "
        f"rc = main(['queue', {str(folder)!r}, '--json']); "
        "assert 'textual' not in sys.modules, 'textual imported'; print('ok', rc)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("ok 0")


def test_eval_counts_a_declined_option_chosen_again(tmp_path, capsys):
    from tui_router.cli import main as cli

    data = tomllib.loads(BENCH.read_text())
    assert cli(["route", "--backend", "bm25", "--json", data["turns"][0]["message"]]) == 0
    first_choice = json.loads(capsys.readouterr().out)["choice"]
    # labelled with another option, and the declined option is chosen again (a label equal to the
    # declined option overrules the decline: the next test)
    data["turns"][0]["label"] = next(t for t in ("create_reminder", "list_events") if t != first_choice)
    data["turns"][0].pop("expected_arguments", None)  # they were create_event's
    data["turns"][0]["not_this"] = [first_choice]
    data["turns"].append({"message": data["turns"][0]["message"], "not_this": [first_choice]})  # unlabelled: counted too
    data["turns"].append({"message": data["turns"][1]["message"], "not_this": ["defer_to_llm_never_chosen"]})
    path = tmp_path / "declined.toml"
    path.write_text(tomli_w.dumps(data))
    assert cli(["eval", str(path), "--backend", "bm25", "--json", "--gate", "not_this_repeats<=0"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["n"] == 30 and out["not_this"] == {"turns": 3, "repeats": 2}
    assert cli(["eval", str(path), "--backend", "bm25", "--errors", "0"]) == 0
    assert "not this: 2 of 3 turns with declined options routed again to one of them" in capsys.readouterr().out


def test_review_command_needs_files_and_a_terminal(tmp_path, folder):
    missing = run_cli("review", str(tmp_path / "nope.toml"), cwd=tmp_path)
    assert missing.returncode == 2 and missing.stderr.strip() == f"tui-router: {tmp_path / 'nope.toml'}: no such session file or folder"
    no_tty = run_cli("review", str(folder), cwd=tmp_path)  # captured output: not a terminal
    assert no_tty.returncode == 2 and "the console needs an interactive terminal" in no_tty.stderr
    assert "Traceback" not in no_tty.stderr


def test_what_if_on_sessions_made_for_another_catalog_notes_it_and_strict_refuses(tmp_path, capsys):
    # replayj: a session recorded for another catalog name is a note (what-if re-bands the recorded
    # decisions with this catalog's risks); --strict refuses as before
    session = _recorded(tmp_path / "rec.toml")
    text = session.read_text().replace('catalog = "demo"', 'catalog = "support"')
    session.write_text(text)
    assert main(["replay", str(session), "--headless", "--what-if", "high=0.8"]) == 0
    out, err = capsys.readouterr()
    assert f"tui-router: note: {session}: recorded for catalog 'support'; routed with catalog 'demo'" in err
    assert "what-if:" in out
    assert main(["replay", str(session), "--headless", "--what-if", "high=0.8", "--strict"]) == 2
    assert "labelled for catalog 'support'" in capsys.readouterr().err
    assert session.read_text() == text


def test_eval_does_not_count_a_declined_option_that_was_labelled_afterwards(tmp_path, capsys):
    # QA: a confirm declined by mistake (not_this = [send_sms]) and then labelled send_sms with `a`
    # was reported both as a top-1 hit and as "1 of 1 turns with declined options routed again".
    from tui_router.cli import main as cli

    data = tomllib.loads(BENCH.read_text())
    assert cli(["route", "--backend", "bm25", "--json", data["turns"][0]["message"]]) == 0
    first_choice = json.loads(capsys.readouterr().out)["choice"]
    data["turns"] = data["turns"][:2]
    data["turns"][0].update(label=first_choice, not_this=[first_choice])  # declined, then labelled with it
    data["turns"][1]["not_this"] = [data["turns"][1]["label"], "send_sms"]  # the label overrules; send_sms still counts
    path = tmp_path / "relabelled.toml"
    path.write_text(tomli_w.dumps(data))
    assert cli(["eval", str(path), "--backend", "bm25", "--no-learn", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["turns"][0]["correct"] is True
    assert out["not_this"] == {"turns": 1, "repeats": 0}


def test_a_session_copied_under_another_name_is_queued_once_with_a_note(folder, capsys):
    # one.toml's turns have no `at`: its copy queued each unlabelled turn twice
    copy = folder / "one-copy.toml"
    copy.write_bytes((folder / "one.toml").read_bytes())
    assert main(["queue", str(folder), "--json"]) == 0
    out, err = capsys.readouterr()
    data = json.loads(out)
    assert data["total"] == 3
    assert {Path(e["file"]).name for e in data["queue"]} == {"one-copy.toml", "two.toml"}  # the first read counts
    assert err.splitlines() == [
        f"tui-router: note: {folder / 'one.toml'} holds the same turns as {copy} (the same messages and labels, in the same order): "
        f"they count once, from {copy}"
    ]
    assert main(["replay", "--headless", str(folder), "--what-if", "high=0.5,medium=0.2", "--json", "--catalog", "demo"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["turns"] == 4  # three decided turns in one.toml, one in two.toml: not seven
    assert err.count("tui-router: note:") == 1
