"""Eval over sharded session archives (issue 34): shards, processes, Ray, resume, mergeable state.

The oracle is the single run: `tui-router eval --json` in one process. A run cut into shards, run
in other processes (--jobs), on Ray, or split across separate commands (--shard I/N) and merged,
must print the same JSON, every metric (ECE included) and every turn; only the wall-clock latency
fields differ between any two runs and are left out of the comparison.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import tomli_w

from tui_router.cli import main
from tui_router.evalrun import cover, split
from tui_router.evalstate import ExactSum, state_of

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "sessions" / "demo-bench.toml"


@pytest.fixture(autouse=True)
def hermetic(monkeypatch, tmp_path):
    monkeypatch.delenv("TUI_ROUTER_CONFIG", raising=False)
    monkeypatch.delenv("TUI_ROUTER_SHARD_FAULT", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)


def archive(folder: Path) -> Path:
    """demo-bench, plus files that exercise what crosses files: the same timed turns in two files
    (a followed live file's copy: counted once), a declined unlabelled turn ("not this"), a label
    the catalog lacks (skipped), tags and acceptable ids."""
    folder.mkdir()
    shutil.copy(BENCH, folder / "a-bench.toml")
    timed = [
        {"message": "Text Jordan that the deploy finished.", "label": "send_sms", "at": "2026-11-30T10:04:20Z", "tags": ["copy"]},
        {"message": "refund order 1234 please", "at": "2026-11-30T10:05:00Z"},
        {"message": "what is the capital of peru", "label": "defer_to_llm", "at": "2026-11-30T10:06:00Z"},
    ]
    for name, turns in (("b-console.toml", timed), ("c-backup.toml", [dict(t, label=t.get("label") or "refund_payment") for t in timed])):
        (folder / name).write_text(tomli_w.dumps({"session": {"id": name[:-5], "catalog": "demo"}, "turns": turns}))
    extra = [
        {"message": "email the quarterly report to finance", "label": "send_email", "acceptable": ["send_sms"], "tags": ["notify"]},
        {"message": "ping the on-call engineer", "not_this": ["page_oncall"]},
        {"message": "make me a coffee", "label": "make_coffee"},
        {"message": "remind me to stretch at 3pm", "label": "create_reminder", "tags": ["notify", "time"]},
    ]
    (folder / "d-more.toml").write_text(tomli_w.dumps({"session": {"id": "d-more", "catalog": "demo"}, "turns": extra}))
    return folder


def eval_json(capsys, *args: str) -> tuple[int, dict, str]:
    code = main(["eval", *args, "--backend", "local", "--json"])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out.strip() else {}), err


def without_clock(data: dict) -> dict:
    """The JSON less the wall-clock latency fields (never equal between two runs of anything)."""
    data = json.loads(json.dumps(data))
    data.pop("latency_ms", None)
    for turn in data.get("turns", []):
        turn.pop("latency_ms", None)
    return data


@pytest.fixture
def cases(tmp_path) -> Path:
    return archive(tmp_path / "cases")


def test_sharded_runs_print_the_single_runs_json(capsys, cases, tmp_path):
    code, single, err = eval_json(capsys, str(cases))
    assert code == 0, err
    assert single["n"] == 30 + 3 + 2  # demo-bench, the three timed turns once (of two files), two of d-more (one skipped)
    assert single["not_this"] == {"turns": 1, "repeats": single["not_this"]["repeats"]}
    assert single["skipped"] == 1 and single["ece"] is not None
    # processes, cut finer than the jobs
    code, jobs, err = eval_json(capsys, str(cases), "--jobs", "2")
    assert code == 0, err
    assert without_clock(jobs) == without_clock(single)
    # three separate commands (CI jobs), then one that finds their parts and only merges
    parts = []
    for i in (1, 2, 3):
        code, part, err = eval_json(capsys, str(cases), "--shard", f"{i}/3", "--work-dir", str(tmp_path / "parts"))
        assert code == 0, err
        assert f"shard {i} of 3" in err
        parts.append(part)
    assert sum(p["n"] for p in parts) == single["n"]
    code, merged, err = eval_json(capsys, str(cases), "--work-dir", str(tmp_path / "parts"), "--jobs", "2", "--errors", "10")
    assert code == 0, err
    assert without_clock(merged) == without_clock(single)
    assert [t["message"] for t in merged["turns"]] == [t["message"] for p in parts for t in p["turns"]]


def test_shard_partitions_are_disjoint_and_cover_the_set(capsys, cases, tmp_path):
    _, single, _ = eval_json(capsys, str(cases))
    everything = [(t["source"], t["index"]) for t in single["turns"]]
    for count in (1, 2, 5, 40):  # 40: more shards than turns, some empty
        seen = []
        for i in range(1, count + 1):
            code, part, err = eval_json(capsys, str(cases), "--shard", f"{i}/{count}", "--work-dir", str(tmp_path / f"w{count}"))
            assert code == 0, err
            seen += [(t["source"], t["index"]) for t in part["turns"]]
        assert len(seen) == len(set(seen)) == len(everything)
        assert seen == everything  # contiguous slices, in run order


def test_split_and_cover():
    assert split(10, 3) == [(0, 3), (3, 6), (6, 10)]
    assert split(2, 4) == [(0, 0), (0, 1), (1, 1), (1, 2)]
    # stored parts of another cut are used where they start; the gaps are cut anew
    assert cover(10, {0: 3, 6: 10}, 2) == [(0, 3), (3, 4), (4, 6), (6, 10)]
    assert cover(5, {}, 10) == [(0, 5)]


def test_a_failing_shard_is_named_and_a_rerun_resumes(capsys, cases, tmp_path, monkeypatch):
    _, single, _ = eval_json(capsys, str(cases))
    work = tmp_path / "work"
    monkeypatch.setenv("TUI_ROUTER_SHARD_FAULT", "3")
    code, _, err = eval_json(capsys, str(cases), "--shard", "1/3", "--work-dir", str(work))
    assert code == 0, err
    code, _, err = eval_json(capsys, str(cases), "--shard", "2/3", "--work-dir", str(work))
    assert code == 0, err
    code, out, err = eval_json(capsys, str(cases), "--work-dir", str(work))
    assert code == 3 and out == {}
    line = err.strip().splitlines()[-1]
    assert line.startswith("tui-router: shard 3 of 3 (turns 26-38) failed: RuntimeError: fault injected")
    assert "the 2 finished shards are kept in" in line and "Traceback" not in err
    # the rerun routes only shard 3: a fault in shard 1 now cannot happen, since it is read back
    monkeypatch.setenv("TUI_ROUTER_SHARD_FAULT", "1")
    code, resumed, err = eval_json(capsys, str(cases), "--work-dir", str(work))
    assert code == 0, err
    assert without_clock(resumed) == without_clock(single)


def test_a_worker_that_dies_is_named(capsys, cases, monkeypatch):
    monkeypatch.setenv("TUI_ROUTER_SHARD_FAULT", "2:exit")
    code, _, err = eval_json(capsys, str(cases), "--jobs", "2")
    assert code == 3
    assert "its worker process died (killed, or out of memory)" in err.strip().splitlines()[-1]
    assert "Traceback" not in err
    # the default store (the user cache) keeps what finished for the rerun, which then completes
    monkeypatch.delenv("TUI_ROUTER_SHARD_FAULT")
    code, out, err = eval_json(capsys, str(cases), "--jobs", "2")
    assert code == 0 and out["n"] == 35, err


def test_a_completed_run_leaves_nothing_in_the_cache(capsys, cases, tmp_path):
    code, _, err = eval_json(capsys, str(cases), "--jobs", "2")
    assert code == 0, err
    runs = tmp_path / "cache" / "tui-router" / "runs"
    assert not runs.exists() or list(runs.iterdir()) == []


def test_bad_shard_flags_are_one_sentence(capsys, cases):
    with pytest.raises(SystemExit) as exit_info:
        main(["eval", str(cases), "--shard", "4/3"])
    assert exit_info.value.code == 2
    assert "write I/N with 1 <= I <= N" in capsys.readouterr().err
    assert main(["eval", str(cases), "--ray-address", "auto"]) == 2
    assert capsys.readouterr().err.strip() == "tui-router: --ray-address needs --engine ray"


def test_exact_sums_do_not_depend_on_order_or_cut():
    rng = random.Random(34)
    values = [rng.random() * 10 ** rng.randint(-8, 3) for _ in range(2000)]
    whole = ExactSum()
    for v in values:
        whole.add(v)
    halves = [ExactSum(), ExactSum()]
    for i, v in enumerate(reversed(values)):
        halves[i % 2].add(v)
    halves[0].merge(halves[1])
    assert halves[0].value == whole.value
    import math

    assert whole.value == math.fsum(values)  # correctly rounded, as fsum


def test_state_merge_equals_the_state_of_all_turns():
    """Scored turns cut anywhere: the merged report equals the report of all of them."""
    from test_evaluate_support import ScriptedBackend, direct_config, small_catalog

    from tui_router.evaluate import LabelledCase, evaluate_router
    from tui_router.route import Router
    from tui_router.session import Turn

    catalog = small_catalog()
    labels = ["read_file", "send_sms", "defer_to_llm", "human_review", "refund_payment"]
    answers, cases = {}, []
    rng = random.Random(7)
    for i in range(60):
        label, pick = rng.choice(labels), rng.choice(labels)
        top = rng.random()
        rest = [o for o in labels if o != pick]
        probs = {pick: 0.3 + 0.7 * top, **{o: (0.7 - 0.7 * top) / len(rest) for o in rest}}
        answers[f"message {i}"] = (pick, probs)
        cases.append(LabelledCase(source="s.toml", index=i, turn=Turn(message=f"message {i}", label=label, tags=[f"t{i % 3}"])))
    router = Router(catalog, direct_config(), backend=ScriptedBackend(answers))
    report = evaluate_router(router, cases, arguments=False)
    whole = report.to_json()
    for cut in (1, 17, 59):
        left, right = state_of(report.turns[:cut], catalog), state_of(report.turns[cut:], catalog, start=cut)
        merged = left.merge(right).report(catalog, backend=report.backend, model=report.model, learning=report.learning, turns=report.turns)
        merged.not_this = report.not_this
        merged.thresholds = report.thresholds
        assert without_clock(merged.to_json()) == without_clock(whole)
        assert merged.latency_ms["mean"] == pytest.approx(report.latency_ms["mean"])


def test_repeated_turns_count_once_as_before(cases):
    """The streaming first pass leaves out what session.repeated_turns leaves out (the in-memory rule)."""
    from tui_router.catalog import load_catalog
    from tui_router.evalplan import plan_eval
    from tui_router.evaluate import check_cases, load_cases

    catalog = load_catalog("demo")
    old_cases, sessions = load_cases([cases], lenient=True)
    gaps = check_cases(sessions, old_cases, catalog, strict=False, skip_blank=True)
    expected = [(c.source, c.index) for c in gaps.keep(old_cases)]
    plan = plan_eval([cases], catalog, cases.parent / "plan", strict=False)
    got = [(i["s"], i["i"]) for i in plan.spool.items() if i["k"] == "c" and i["c"] not in plan.excluded]
    assert got == expected and plan.kept == len(expected)


def test_the_disk_refusing_the_spool_keeps_it_in_memory(tmp_path):
    from tui_router.spool import Spool

    spool = Spool(tmp_path / "gone" / "turns.jsonl")  # its folder does not exist: every flush fails
    spool.FLUSH = 10
    for i in range(600):
        spool.write({"k": "c", "c": i, "t": {"message": f"m{i}"}})
    spool.close()
    assert spool.in_memory
    assert [item["c"] for item in spool.items(255, 260)] == [255, 256, 257, 258, 259]


ray = pytest.importorskip("ray", reason="the ray extra (pip install '.[ray]'); .ci/run installs it")


def test_ray_runs_the_same_shards_end_to_end(capsys, cases, tmp_path):
    """A local Ray started by the run: two actors, each loading the model once, the label set
    shipped through the object store; the JSON is the single run's."""
    _, single, _ = eval_json(capsys, str(cases))
    env = {
        "PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache"), "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
        "RAY_USAGE_STATS_ENABLED": "0",
    }
    cmd = [sys.executable, "-m", "tui_router", "eval", str(cases), "--backend", "local", "--json", "--engine", "ray", "--jobs", "2"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert without_clock(json.loads(done.stdout)) == without_clock(single)
    failed = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=tmp_path, env={**env, "TUI_ROUTER_SHARD_FAULT": "1"})
    assert failed.returncode == 3
    assert "shard 1 of 2 (turns 1-19) failed: RuntimeError: fault injected" in failed.stderr.strip().splitlines()[-1]


def test_progress_line_says_turns_rate_and_time_left_and_covers_a_longer_line():
    import io
    import time

    from tui_router.evalrun import RunProgress

    out = io.StringIO()
    progress = RunProgress(out)
    progress(0, 1000)
    time.sleep(0.3)
    progress(500, 1000)
    time.sleep(0.3)
    progress(1000, 1000)
    lines = out.getvalue().split("\r")[1:]
    assert lines[0] == "tui-router: eval: 0 of 1,000 turns (0%)"
    assert lines[1].startswith("tui-router: eval: 500 of 1,000 turns (50%), ") and " turns/s, " in lines[1] and lines[1].endswith(" s left")
    assert lines[2].startswith("tui-router: eval: 1,000 of 1,000 turns (100%), ") and lines[2].endswith("\n")
    assert len(lines[2].rstrip("\n")) >= len(lines[1])  # the shorter last line blanks the rest of the longer one
