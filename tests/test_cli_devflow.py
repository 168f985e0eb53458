"""A developer measuring the router through the CLI: every number `eval --json` reports is recomputed
by hand from its own per-turn rows (and the docs' definitions), and each bad input is one sentence,
exit 2, nothing written. Real subprocesses; the jevcompat mock for a failing server."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from cli_harness import tui_router

from tui_router.evaluate import EVAL_GATE_METRICS

DOC = Path(__file__).resolve().parents[1] / "docs" / "eval-metrics.md"

# Labels put at known places of the demo catalog's BM25 ranking (checked with `tui-router route --json`):
# search_inbox 2nd, archive_email 3rd, query_sql 3rd (after refund_payment and human_review),
# run_tests 1st, grant_access never ranked (no word in common).
RANKED = [
    ("email Sam the quarterly numbers", "search_inbox", []),
    ("email Sam the quarterly numbers", "archive_email", []),
    ("refund order 1234, the customer was charged twice", "query_sql", []),
    ("run the unit tests on the api package", "run_tests", []),
    ("run the unit tests on the api package", "grant_access", []),
]
MIXED = [
    ("Text Jordan that the deploy finished", "send_sms", [], ["notify"]),
    ("what's on my calendar tomorrow", "list_events", [], ["calendar"]),
    ("refund order 1234, the customer was charged twice", "refund_payment", [], ["payment"]),
    ("write me a haiku about autumn", "defer_to_llm", [], ["none"]),
    ("this customer is threatening legal action, someone senior must look", "human_review", [], ["review"]),
    ("email Sam the quarterly numbers", "send_email", ["draft_email"], ["notify", "acceptable"]),
    ("run the unit tests on the api package", "run_tests", [], ["code"]),
    ("what is the capital of Peru", "defer_to_llm", [], ["none"]),
]


def _session(path: Path, rows, catalog: str = "demo") -> Path:
    lines = ["[session]", f'id = "{path.stem}"', f'catalog = "{catalog}"']
    for message, label, acceptable, *tags in rows:
        lines += ["[[turns]]", f"message = {json.dumps(message)}", f'label = "{label}"', f"acceptable = {json.dumps(acceptable)}"]
        if tags:
            lines.append(f"tags = {json.dumps(tags[0])}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture()
def env(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "empty.toml").write_text("", encoding="utf-8")
    return {"TUI_ROUTER_CONFIG": str(tmp_path / "empty.toml"), "XDG_CACHE_HOME": str(tmp_path / "cache")}


def _rate(flags) -> float | None:
    flags = list(flags)
    return round(sum(flags) / len(flags), 6) if flags else None


def _by_hand(data: dict, none: str = "defer_to_llm") -> dict:
    """Every rate of docs/eval-metrics.md, from the per-turn rows alone."""
    turns = data["turns"]
    tools = [t for t in turns if t["label"] != none]
    nones = [t for t in turns if t["label"] == none]
    said_none = [t for t in turns if t["choice"] == none]
    review = [t for t in turns if t["category"] == "escalation"]
    executed = [t for t in turns if t["action"] == "execute"]
    return {
        "n": len(turns),
        "tool_cases": len(tools),
        "none_cases": len(nones),
        "retrieval_recall": _rate(t["retrieved"] for t in turns),
        "top1": _rate(t["choice"] == t["label"] and t["band"] != "unresolved" for t in tools),
        "top1_acceptable": _rate(t["correct"] for t in tools),
        "top3": _rate(t["label"] in t["top3"] for t in tools),
        "accuracy_given_retrieved": _rate(t["correct"] for t in tools if t["retrieved"]),
        "none_precision": _rate(t["label"] == none for t in said_none),
        "none_recall": _rate(t["choice"] == none for t in nones),
        "missed_review_rate": _rate(not (t["correct"] and t["action"] == "escalate") for t in review),
        "wrong_execute_rate": _rate(t["action"] == "execute" and t["band"] == "high" and not t["correct"] for t in turns),
        "execute_precision": _rate(t["correct"] for t in executed),
        "automation_rate": _rate(t["action"] == "execute" for t in turns),
        "fallback_rate": _rate(t["action"] == "fallback" for t in turns),
        "unresolved": sum(t["band"] == "unresolved" for t in turns),
        "argument_validity": _rate(t["arguments_valid"] for t in turns if t["arguments_valid"] is not None),
    }


def _stage(t: dict, none: str = "defer_to_llm") -> str | None:
    if not t["retrieved"]:
        return "retrieval"
    if t["band"] == "unresolved":
        return "unresolved"
    if not t["correct"]:
        return "decision"
    if t["label"] != none and t["action"] == "fallback" and t["choice"] != none:
        return "policy"
    return None


def _calibration(turns: list[dict]) -> tuple[float | None, float | None, list[int]]:
    scored = [(t["confidence"], 1.0 if t["correct"] else 0.0) for t in turns if t["confidence"] is not None]
    bins: list[list[tuple[float, float]]] = [[] for _ in range(10)]
    for conf, hit in scored:
        bins[min(int(conf * 10), 9)].append((conf, hit))
    if not scored:  # every turn unresolved: no confidence to calibrate
        return None, None, [0] * 10
    ece = sum(len(b) / len(scored) * abs(sum(h for _, h in b) / len(b) - sum(c for c, _ in b) / len(b)) for b in bins if b)
    brier = sum((c - h) ** 2 for c, h in scored) / len(scored)
    return ece, brier, [len(b) for b in bins]


def _check_report(data: dict) -> None:
    expected = _by_hand(data)
    for key, value in expected.items():
        assert data[key] == pytest.approx(value, abs=1e-6) if value is not None else data[key] is None, key
    for key, (hits, total) in data["counts"].items():
        assert data[key] == (pytest.approx(hits / total, abs=1e-6) if total else None), key
    stages = {"retrieval": 0, "unresolved": 0, "decision": 0, "policy": 0}
    for t in data["turns"]:
        assert t["stage"] == _stage(t), t["message"]
        if t["stage"]:
            stages[t["stage"]] += 1
    assert data["stages"] == stages
    for band in ("high", "medium", "low", "unresolved"):
        members = [t for t in data["turns"] if t["band"] == band]
        assert data["bands"][band]["count"] == len(members)
        assert data["bands"][band]["coverage"] == pytest.approx(len(members) / len(data["turns"]), abs=1e-6)
        assert data["bands"][band]["accuracy"] == (pytest.approx(_rate(t["correct"] for t in members), abs=1e-6) if members else None)
    ece, brier, counts = _calibration(data["turns"])
    # the turns' confidences are rounded to 6 places in the JSON: the sums agree to that
    if ece is None:
        assert data["ece"] is None and data["brier"] is None
    else:
        assert data["ece"] == pytest.approx(ece, abs=1e-5) and data["brier"] == pytest.approx(brier, abs=1e-5)
    assert [b["count"] for b in data["reliability"]] == counts
    for tag, group in data["per_tag"].items():
        sub = _by_hand({"turns": [t for t in data["turns"] if tag in t["tags"]]})
        for key in ("n", "tool_cases", "none_cases", "top1", "top1_acceptable", "top3", "none_precision", "none_recall", "fallback_rate"):
            assert group[key] == (pytest.approx(sub[key], abs=1e-6) if sub[key] is not None else None), (tag, key)
    for category, group in data["per_category"].items():
        sub = _by_hand({"turns": [t for t in data["turns"] if t["category"] == category]})
        assert (group["n"], group["top1"], group["retrieval_recall"]) == (sub["n"], sub["top1"], sub["retrieval_recall"]), category


def test_every_eval_number_agrees_with_a_hand_computation_from_its_turns(tmp_path: Path, env) -> None:
    ranked = _session(tmp_path / "ranked.toml", RANKED)
    mixed = _session(tmp_path / "mixed.toml", MIXED)
    result = tui_router("eval", str(ranked), str(mixed), "--backend", "local", "--compare", "bm25", "--json", env=env)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert (data["n"], data["tool_cases"], data["none_cases"]) == (13, 11, 2)
    # ranks by hand: 1st, 2nd, 3rd, 3rd, never (ranked.toml); every mixed.toml label is BM25's first
    # or always offered (the none option, human_review)
    recall = {"1": 9 / 13, "2": 10 / 13, "3": 12 / 13, "10": 12 / 13}
    for report in (data, data["compare"]):
        for k, value in recall.items():
            assert report["recall_at_k"][k] == pytest.approx(value, abs=1e-6), (report["backend"], k)
        assert report["counts"]["retrieval_recall"] == [12, 13]
        grant = [t for t in report["turns"] if t["label"] == "grant_access"]
        assert grant[0]["retrieved"] is False and grant[0]["stage"] == "retrieval"
        _check_report(report)
    # the acceptable id counts for top-1 (acceptable) only: mixed.toml's send_email turn
    email = next(t for t in data["turns"] if t["label"] == "send_email")
    assert email["correct"] == (email["choice"] in ("send_email", "draft_email") and email["band"] != "unresolved")


def test_eval_of_only_none_turns_measures_none_and_leaves_tool_rates_null(tmp_path: Path, env) -> None:
    nones = _session(tmp_path / "nones.toml", [r for r in MIXED if r[1] == "defer_to_llm"])
    data = json.loads(tui_router("eval", str(nones), "--backend", "local", "--json", env=env).stdout)
    assert (data["n"], data["tool_cases"], data["none_cases"]) == (2, 0, 2)
    for key in ("top1", "top1_acceptable", "top3", "accuracy_given_retrieved", "missed_review_rate", "argument_validity"):
        assert data[key] is None, key
    _check_report(data)
    gated = tui_router("eval", str(nones), "--backend", "local", "--gate", "top1>=0.5", env=env)
    assert gated.returncode == 1 and "n/a (nothing to measure)" in gated.stdout  # never a vacuous pass


@pytest.mark.parametrize(
    "args",
    [
        ("eval", "CASES", "--gate", ""),
        ("replay", "CASES", "--headless", "--gate", ""),
        ("replay", "CASES", "--headless", "--what-if", ""),
    ],
)
def test_an_empty_gate_or_what_if_is_refused_not_a_silent_pass(tmp_path: Path, env, args) -> None:
    # `--gate "$GATE"` with the variable unset gated nothing and exited 0; `--what-if ""` routed a
    # whole replay instead of re-banding (while " , " was refused).
    cases = _session(tmp_path / "cases.toml", MIXED[:2])
    before = cases.read_bytes()
    result = tui_router(*(str(cases) if a == "CASES" else a for a in args), "--backend", "local", env=env)
    assert result.returncode == 2, result.stdout
    assert result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    assert "--gate: no conditions given" in result.stderr or "--what-if needs at least one threshold" in result.stderr
    assert cases.read_bytes() == before


def test_calibrate_with_too_few_labels_says_how_many_more(tmp_path: Path, env) -> None:
    cases = _session(tmp_path / "cases.toml", MIXED)
    config = tmp_path / "policy.toml"
    config.write_text("# mine\n[policy]\nhigh = 0.8\n", encoding="utf-8")
    result = tui_router("calibrate", str(cases), "--backend", "local", "--write-config", str(config), env=env)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "found 8 in" in result.stderr
    assert "label 42 more" in result.stderr  # 50 - 8
    assert config.read_text(encoding="utf-8") == "# mine\n[policy]\nhigh = 0.8\n" and not (tmp_path / "policy.toml.bak").exists()
    many = [_session(tmp_path / f"s{i}.toml", MIXED[i : i + 1]) for i in range(5)]
    result = tui_router("calibrate", *map(str, many), "--backend", "local", env=env)
    assert result.returncode == 2 and "found 5 in 5 files (label 45 more" in result.stderr


def test_eval_against_a_failing_server_says_why_the_turns_are_unresolved(jev_mocks, tmp_path: Path) -> None:
    # Every turn unresolved, exit 0, and the reason only inside the JSON rows: a developer saw
    # "unresolved 8" and a table of "-" with no cause.
    cases = _session(tmp_path / "cases.toml", MIXED[:3])
    config = tmp_path / "tui-router.toml"
    config.write_text(f'backend = "systemone"\n[systemone]\nbase_url = "{jev_mocks.url("choice-second")}"\nmax_retries = 0\nprobe = false\n', encoding="utf-8")
    env = {"TUI_ROUTER_CONFIG": str(config), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    for extra in ((), ("--json",)):
        result = tui_router("eval", str(cases), *extra, env=env)
        assert result.returncode == 0, result.stderr
        warning = [line for line in result.stderr.splitlines() if "unresolved" in line]
        assert len(warning) == 1, result.stderr
        assert warning[0].startswith(f"tui-router: warning: 3 of 3 turns unresolved (systemone); the first, {cases} turn 1: ")
        assert "is not the most probable option" in warning[0]
    data = json.loads(result.stdout)  # stdout stays one JSON object
    assert data["unresolved"] == 3 and data["stages"]["unresolved"] == 3
    _check_report(data)
    quiet = tui_router("eval", str(cases), "--backend", "local", "--json", env=env)
    assert quiet.returncode == 0 and "unresolved" not in quiet.stderr


def _doc_keys() -> tuple[set[str], set[str], set[str]]:
    text = DOC.read_text(encoding="utf-8")
    metrics = text.split("## Metrics", 1)[1].split("## Gates", 1)[0]
    keys: set[str] = set()
    turn_fields: set[str] = set()
    for line in metrics.splitlines():
        if not line.startswith("| `"):
            continue
        first, rest = line.split("|")[1], "|".join(line.split("|")[2:])
        keys |= set(re.findall(r"`([a-z_0-9]+)`", first))
        if "`turns`" in first:
            turn_fields = {w.strip() for w in re.sub(r"\([^)]*\)", "", rest.split(":", 1)[1]).strip(" |\n").split(",")}
    gates = text.split("Eval metrics: `", 1)[1].split("`", 1)[0].split()
    expanded = set()
    for i, name in enumerate(gates):
        if name == "..":
            lo, hi = int(gates[i - 1].split("@")[1]), int(gates[i + 1].split("@")[1])
            expanded |= {f"recall@{k}" for k in range(lo, hi + 1)}
        else:
            expanded.add(name)
    return keys, turn_fields, expanded


def test_the_metrics_doc_lists_exactly_the_json_keys_and_gate_metrics(tmp_path: Path, env) -> None:
    # docs/eval-metrics.md left out counts, argument_validity/argument_match, per_tool_arguments,
    # the turns' source/index/argument fields, and two gate metrics.
    cases = _session(tmp_path / "cases.toml", MIXED)
    data = json.loads(tui_router("eval", str(cases), "--backend", "local", "--compare", "bm25", "--gate", "top1>=0", "--json", env=env).stdout)
    keys, turn_fields, gates = _doc_keys()
    assert set(data) == keys
    assert set(data["turns"][0]) == turn_fields
    assert set(data["context_bytes"]) <= {"all_schemas", "snippets_only", "snippets_top1", "snippets_top3", "tools", "tools_with_schema"}
    assert gates == set(EVAL_GATE_METRICS) | {f"recall@{k}" for k in range(1, 11)} | {f"{s}_errors" for s in data["stages"]}


def test_a_file_named_twice_is_measured_once(tmp_path: Path, env) -> None:
    # `eval sessions/ sessions/monday.toml` counted every turn of monday.toml twice (n = 16 for 8
    # turns), and leave-one-out then learned each case from its own copy.
    folder = tmp_path / "sessions"
    folder.mkdir()
    cases = _session(folder / "monday.toml", MIXED)
    once = json.loads(tui_router("eval", str(cases), "--backend", "local", "--json", env=env).stdout)
    for args in ((str(folder), str(cases)), (str(cases), str(cases)), (str(cases), str(tmp_path / "sessions" / ".." / "sessions"))):
        twice = json.loads(tui_router("eval", *args, "--backend", "local", "--json", env=env).stdout)
        assert twice["n"] == 8 and len(twice["files"]) == 1, args
        assert twice["learning"] == once["learning"] == "leave-one-out (exemplars from the other 7 labelled turns)"
        assert [t["confidence"] for t in twice["turns"]] == [t["confidence"] for t in once["turns"]]
    refused = tui_router("calibrate", str(folder), str(cases), "--backend", "local", env=env)
    assert refused.returncode == 2 and "found 8 in" in refused.stderr


def test_a_retyped_duplicate_is_held_out_with_its_copy(tmp_path: Path, env) -> None:
    # "Text jordan the deploy is done!" was a different case from "text Jordan the deploy is done"
    # (only whitespace and case were normalised), so leave-one-out learned each from the other:
    # confidence 0.9995 instead of the 0.81 the catalog alone gives.
    lima = ("what is the weather like in Lima", "web_search", [])
    single = _session(tmp_path / "single.toml", [("text Jordan the deploy is done", "send_sms", []), lima])
    retyped = _session(tmp_path / "retyped.toml", [("text Jordan the deploy is done", "send_sms", []), ("Text jordan, the deploy is done!", "send_sms", []), lima])
    alone = json.loads(tui_router("eval", str(single), "--backend", "local", "--json", env=env).stdout)
    both = json.loads(tui_router("eval", str(retyped), "--backend", "local", "--json", env=env).stdout)
    unlearned = json.loads(tui_router("eval", str(single), "--backend", "local", "--no-learn", "--json", env=env).stdout)
    sms = alone["turns"][0]["confidence"]
    assert sms == unlearned["turns"][0]["confidence"]  # nothing else in the set speaks for send_sms
    assert [t["confidence"] for t in both["turns"][:2]] == [sms, sms]


def test_a_labelled_turn_without_a_message_is_skipped_not_scored(tmp_path: Path, env) -> None:
    # A blank labelled message was routed and counted as a retrieval miss (recall 50% for one
    # real turn of two); then eval refused the whole file for it, so one hand-written slip kept a
    # set from being measured. eval now leaves it out with one stderr line naming it (JSON "blank"),
    # like a label gone from the catalog; --strict and calibrate (which writes thresholds) refuse.
    cases = _session(tmp_path / "cases.toml", [("   ", "send_sms", []), *MIXED[:1]])
    done = tui_router("eval", str(cases), "--backend", "local", "--json", env=env)
    assert done.returncode == 0
    data = json.loads(done.stdout)
    assert data["n"] == 1 and data["counts"]["top1"] == [1, 1] and data["retrieval_recall"] == 1.0
    assert data["blank"] == {"turns": 1, "cases": [{"source": str(cases), "index": 0, "label": "send_sms"}]}
    assert done.stderr == (
        "tui-router: warning: 1 labelled turn skipped: its message is empty or only characters that draw nothing "
        "(cases.toml turns[0]; --strict refuses instead)\n"
    )
    refused = f"tui-router: {cases}: turns[0]: the labelled turn has an empty message; write the user message it stands for, or remove its label\n"
    for command in (("eval", "--strict"), ("calibrate",)):
        result = tui_router(*command, str(cases), "--backend", "local", env=env)
        assert result.returncode == 2 and result.stdout == ""
        assert result.stderr == refused
    only_blank = _session(tmp_path / "blank.toml", [("   ", "send_sms", [])])
    result = tui_router("eval", str(only_blank), "--backend", "local", env=env)
    assert result.returncode == 2 and result.stdout == ""
    assert "every labelled turn in" in result.stderr and "has an empty message" in result.stderr


def test_an_acceptable_none_choice_is_right_not_a_policy_error(tmp_path: Path, env) -> None:
    # label a tool, acceptable the none option, the router answers none: correct, yet its stage read
    # "policy" (a right tool dropped by a low band), which nothing was.
    cases = _session(tmp_path / "cases.toml", [("write me a haiku about autumn", "draft_email", ["defer_to_llm"]), *MIXED[:2]])
    data = json.loads(tui_router("eval", str(cases), "--backend", "local", "--json", env=env).stdout)
    haiku = data["turns"][0]
    assert (haiku["choice"], haiku["action"], haiku["correct"]) == ("defer_to_llm", "fallback", True)
    assert haiku["stage"] is None and data["stages"]["policy"] == 0
    assert data["counts"]["top1_acceptable"] == [3, 3] and data["counts"]["top1"] == [2, 3]
