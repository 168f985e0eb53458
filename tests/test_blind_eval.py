"""benchmarks/blind_eval.py: aggregates only, never a turn's text; bad input is one sentence and exit 2."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "blind_eval.py"
BLIND = ROOT / "benchmarks" / "data" / "blind"


# the embedding caches (messages are cached since issue 30) go to a temporary folder, not HOME/.cache,
# which is the source tree here
CACHE = Path(tempfile.mkdtemp(prefix="blind-eval-cache-"))


def run(*args: str) -> subprocess.CompletedProcess[str]:
    # an empty config dir: the user's own config must not change what the test sees
    env = {"PATH": "/usr/bin:/bin", "XDG_CONFIG_HOME": str(ROOT / "tests" / "no-such-config-dir"), "HOME": str(ROOT),
           "XDG_CACHE_HOME": str(CACHE)}
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=120, cwd=ROOT / "tests", env=env)


def messages() -> list[str]:
    out = []
    for name in ("labdesk", "citydesk"):
        data = tomllib.loads((BLIND / f"{name}-cases.toml").read_text(encoding="utf-8"))
        out += [t["message"] for t in data["turns"]]
    return out


def test_table_has_one_row_per_set_and_no_turn_text() -> None:
    proc = run("--backend", "bm25")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("backend: bm25 (--backend)")
    rows = [line for line in lines if line.startswith("| labdesk |") or line.startswith("| citydesk |")]
    assert len(rows) == 2
    assert all(len(row.split("|")) == 13 for row in rows)  # set, turns and the nine metrics
    assert "| labdesk | 168 |" in proc.stdout and "| citydesk | 168 |" in proc.stdout
    everything = proc.stdout + proc.stderr
    leaked = [m for m in messages() if m in everything]
    assert leaked == []
    assert len(everything.splitlines()) == 7  # two header lines, a blank, the table head (2 lines), two rows


def test_json_is_aggregates_only() -> None:
    proc = run("--backend", "bm25", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert set(data["sets"]) == {"labdesk", "citydesk"}
    assert set(data["sets"]["labdesk"]) == {
        "turns", "top1", "top1_acceptable", "retrieval_recall", "none_precision", "none_recall",
        "missed_review_rate", "wrong_execute_rate", "fallback_rate", "ece",
    }
    assert data["sets"]["citydesk"]["turns"] == 168
    assert data["condition"] == "catalog only"
    assert not any(m in proc.stdout for m in messages())


def test_by_tag_rows_count_the_tags_and_show_no_turn_text() -> None:
    proc = run("--backend", "bm25", "--by-tag")
    assert proc.returncode == 0, proc.stderr
    rows = {line.split("|")[1].strip(): line.split("|") for line in proc.stdout.splitlines() if " / " in line and line.startswith("| ") and not line.startswith("| set / tag")}
    expected: dict[str, int] = {}
    for name in ("labdesk", "citydesk"):
        data = tomllib.loads((BLIND / f"{name}-cases.toml").read_text(encoding="utf-8"))
        for turn in data["turns"]:
            for tag in turn.get("tags", []):
                expected[f"{name} / {tag}"] = expected.get(f"{name} / {tag}", 0) + 1
    assert {k: int(v[2]) for k, v in rows.items()} == expected
    assert rows["labdesk / escalation"][2].strip() == "17" and rows["citydesk / injection"][2].strip() == "8"
    assert not any(m in proc.stdout + proc.stderr for m in messages())
    as_json = json.loads(run("--backend", "bm25", "--by-tag", "--json").stdout)
    assert {k: v["turns"] for k, v in as_json["tags"].items()} == expected


def test_unknown_backend_is_one_sentence_and_exit_2() -> None:
    proc = run("--backend", "bm26")
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.startswith("blind_eval: unknown backend 'bm26'") and "bm25" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_missing_sets_are_one_sentence_and_exit_2(tmp_path: Path) -> None:
    proc = run("--backend", "bm25", "--sets", str(tmp_path))
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert "labdesk.toml" in proc.stderr and "missing" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_bad_catalog_is_reported_without_a_traceback(tmp_path: Path) -> None:
    (tmp_path / "labdesk.toml").write_text('name = "labdesk"\n[[tools]]\nid = "Bad Id"\n', encoding="utf-8")
    (tmp_path / "labdesk-cases.toml").write_text((BLIND / "labdesk-cases.toml").read_text(encoding="utf-8"), encoding="utf-8")
    proc = run("--backend", "bm25", "--sets", str(tmp_path))
    assert proc.returncode == 2
    assert proc.stderr.startswith("blind_eval: ")
    assert "Traceback" not in proc.stderr
    assert not any(m in proc.stderr for m in messages())
