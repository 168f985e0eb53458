"""Every eval metric on small hand-made cases with known answers."""

from __future__ import annotations

import json

import pytest
from test_evaluate_support import (
    NONE,
    TOOLS,
    direct_config,
    reference_confidence,
    scripted_router,
    small_catalog,
    write_session,
)

from tui_router.config import config_from_dict
from tui_router.evaluate import (
    EvalError,
    LabelledCase,
    build_report,
    evaluate_router,
    percentile,
    run_eval,
    top3_of,
)
from tui_router.session import Turn

N_OPTIONS = len(TOOLS) + 1  # direct mode: every tool plus the none option
HIGH_P = reference_confidence(0.9, N_OPTIONS)  # 0.8833
MED_P = reference_confidence(0.6, N_OPTIONS)  # 0.5333
LOW_P = reference_confidence(0.3, N_OPTIONS)  # 0.1833

# message, label, acceptable, tags, script
KNOWN = [
    ("alpha", "read_file", [], ["easy"], {"read_file": 0.9}),  # high, read -> execute, right
    ("bravo", "send_sms", ["send_email"], ["easy", "acceptable"], {"send_email": 0.9}),  # high outbound -> confirm, acceptable
    ("charlie", "delete_file", [], ["hard"], {"read_file": 0.9}),  # high, execute, wrong: the costly error
    ("delta", NONE, [], ["none"], {NONE: 0.9}),  # none, right
    ("echo", "read_file", [], ["hard"], {NONE: 0.6}),  # none, wrong
    ("foxtrot", "human_review", [], ["review"], {"refund_payment": 0.6}),  # missed review (payment -> confirm)
    ("golf", "read_file", [], ["hard"], "the backend timed out"),  # unresolved
    ("hotel", "delete_file", [], ["hard"], {"delete_file": 0.3}),  # right but low band: dropped (policy)
]


def cases_of(rows) -> list[LabelledCase]:
    return [
        LabelledCase(source="known.toml", index=i, turn=Turn(message=m, label=label, acceptable=acc, tags=tags))
        for i, (m, label, acc, tags, _) in enumerate(rows)
    ]


def report_of(rows, **policy):
    router = scripted_router({m: script for m, _, _, _, script in rows}, direct_config(**policy))
    return evaluate_router(router, cases_of(rows))


@pytest.fixture(scope="module")
def known():
    return report_of(KNOWN)


def test_counts_and_accuracy(known):
    r = known
    assert (r.n, r.tool_cases, r.none_cases) == (8, 7, 1)
    o = r.overall
    assert (o.retrieval_recall.hits, o.retrieval_recall.total) == (8, 8)
    assert (o.top1.hits, o.top1.total) == (2, 7)  # alpha, hotel
    assert (o.top1_acceptable.hits, o.top1_acceptable.total) == (3, 7)  # + bravo via acceptable
    assert (o.top3.hits, o.top3.total) == (4, 7)  # alpha, charlie, echo, hotel
    assert (o.accuracy_given_retrieved.hits, o.accuracy_given_retrieved.total) == (3, 7)
    assert (o.none_precision.hits, o.none_precision.total) == (1, 2)  # delta right, echo wrong
    assert (o.none_recall.hits, o.none_recall.total) == (1, 1)
    assert (r.missed_review_rate.hits, r.missed_review_rate.total) == (1, 1)
    assert (r.wrong_execute_rate.hits, r.wrong_execute_rate.total) == (1, 8)
    assert (r.execute_precision.hits, r.execute_precision.total) == (1, 2)
    assert (o.fallback_rate.hits, o.fallback_rate.total) == (4, 8)  # delta, echo, golf, hotel
    assert o.unresolved == 1
    assert o.stages == {"retrieval": 0, "unresolved": 1, "decision": 3, "policy": 1}


def test_per_turn_stage_and_top3(known):
    by_message = {t.message: t for t in known.turns}
    assert by_message["alpha"].stage is None and by_message["alpha"].correct
    assert by_message["bravo"].correct and not by_message["bravo"].exact
    assert by_message["bravo"].top3 == ["send_email", "read_file", "delete_file"]
    assert by_message["charlie"].stage == "decision" and by_message["charlie"].action == "execute"
    assert by_message["echo"].top3 == ["read_file", "delete_file", "send_sms"]  # none excluded, ties in option order
    assert by_message["golf"].stage == "unresolved" and by_message["golf"].choice is None and by_message["golf"].top3 == []
    assert by_message["golf"].error == "the backend timed out"
    assert by_message["hotel"].stage == "policy" and by_message["hotel"].correct and by_message["hotel"].band == "low"
    assert by_message["foxtrot"].category == "escalation" and by_message["delta"].category == "none"


def test_bands_coverage_and_accuracy(known):
    b = known.bands
    assert {k: v.count for k, v in b.items()} == {"high": 4, "medium": 2, "low": 1, "unresolved": 1}
    assert b["high"].coverage == pytest.approx(0.5)
    assert (b["high"].accuracy.hits, b["high"].accuracy.total) == (3, 4)
    assert b["medium"].accuracy.value == 0.0
    assert b["low"].accuracy.value == 1.0
    assert b["unresolved"].accuracy.value == 0.0


def test_ece_brier_and_reliability(known):
    pairs = [(HIGH_P, 1), (HIGH_P, 1), (HIGH_P, 0), (HIGH_P, 1), (MED_P, 0), (MED_P, 0), (LOW_P, 1)]
    brier = sum((c - y) ** 2 for c, y in pairs) / 7
    ece = (4 * abs(0.75 - HIGH_P) + 2 * abs(0.0 - MED_P) + 1 * abs(1.0 - LOW_P)) / 7
    assert known.ece == pytest.approx(ece)
    assert known.ece == pytest.approx(0.345238, abs=1e-6)
    assert known.brier == pytest.approx(brier)
    bins = {round(b.low, 1): b for b in known.reliability}
    assert len(known.reliability) == 10
    assert bins[0.8].count == 4 and bins[0.8].accuracy == 0.75
    assert bins[0.5].count == 2 and bins[0.1].count == 1
    assert sum(b.count for b in known.reliability) == 7  # the unresolved turn has no confidence


def test_per_tag_and_category(known):
    assert known.per_tag["easy"].n == 2 and known.per_tag["easy"].top1_acceptable.value == 1.0
    assert known.per_tag["hard"].n == 4
    assert known.per_tag["hard"].stages == {"retrieval": 0, "unresolved": 1, "decision": 2, "policy": 1}
    files = known.per_category["files"]
    assert files.n == 5 and (files.top1.hits, files.top1.total) == (2, 5)
    assert list(known.per_category)[-1] == "none"  # none last, as in the seed tables
    assert known.per_category["none"].none_recall.value == 1.0


def test_context_bytes(known):
    def size(obj):
        return len(json.dumps(obj, separators=(",", ":")).encode())

    entries = {t["id"]: {"name": t["id"], "schema": t.get("schema", {})} for t in TOOLS}
    all_schemas = size(list(entries.values()))
    snippets = size([{"name": t["id"], "snippet": t["when_to_use"]} for t in TOOLS])
    # alpha read_file, bravo send_email, charlie read_file, delta none (0), echo none (0),
    # foxtrot refund_payment, golf unresolved (every schema), hotel delete_file
    extra = [size(entries["read_file"]), size(entries["send_email"]), size(entries["read_file"]), 0, 0,
             size(entries["refund_payment"]), all_schemas, size(entries["delete_file"])]
    cb = known.context_bytes
    assert cb.all_schemas == all_schemas and cb.snippets_only == snippets
    assert cb.snippets_top1 == pytest.approx(snippets + sum(extra) / 8)
    assert cb.snippets_top3 > cb.snippets_top1


def test_json_has_the_documented_keys(known):
    data = known.to_json()
    for key in ("n", "tool_cases", "none_cases", "retrieval_recall", "recall_at_k", "top1", "top1_acceptable", "top3",
                "accuracy_given_retrieved", "none_precision", "none_recall", "missed_review_rate", "wrong_execute_rate",
                "fallback_rate", "unresolved", "ece", "brier", "bands", "per_tag", "per_category", "latency_ms",
                "context_bytes", "turns"):
        assert key in data, key
    assert data["top1"] == pytest.approx(2 / 7, abs=1e-6)
    turn = data["turns"][0]
    for key in ("message", "label", "candidates", "choice", "probabilities", "confidence", "band", "action", "correct", "stage"):
        assert key in turn
    json.dumps(data)  # serialisable as is


def test_no_none_cases():
    rows = [r for r in KNOWN if r[1] != NONE and r[4] != {NONE: 0.6}]
    r = report_of(rows)
    assert r.none_cases == 0
    assert r.overall.none_recall.value is None and r.overall.none_precision.value is None
    assert r.to_json()["none_recall"] is None


def test_all_unresolved():
    rows = [(m, label, acc, tags, "server said 503") for m, label, acc, tags, _ in KNOWN]
    r = report_of(rows)
    assert r.overall.unresolved == 8
    assert r.overall.top1.value == 0.0 and r.overall.none_recall.value == 0.0
    assert r.ece is None and r.brier is None
    assert r.bands["unresolved"].coverage == 1.0
    assert r.overall.fallback_rate.value == 1.0
    assert r.overall.stages["unresolved"] == 8
    assert r.context_bytes.snippets_top1 == r.context_bytes.snippets_only + r.context_bytes.all_schemas


def test_empty_report():
    r = build_report([], small_catalog())
    assert r.n == 0 and r.overall.top1.value is None and r.ece is None and r.context_bytes is None
    assert r.latency_ms["p50"] is None
    assert r.to_json()["top1"] is None


def test_empty_input_is_a_clear_error(tmp_path):
    path = write_session(tmp_path / "unlabelled.toml", [{"message": "hello there"}], catalog="demo")
    with pytest.raises(EvalError, match="no labelled turns"):
        run_eval([path], config_from_dict({}))


def test_unknown_label_and_catalog_mismatch(tmp_path):
    bad = write_session(tmp_path / "bad.toml", [{"message": "x", "label": "send_smss"}], catalog="demo")
    with pytest.raises(Exception) as info:
        run_eval([bad], config_from_dict({}))
    assert "send_smss" in str(info.value) and "did you mean 'send_sms'" in str(info.value)
    other = write_session(tmp_path / "other.toml", [{"message": "x", "label": "send_sms"}], catalog="metatool-toole")
    with pytest.raises(EvalError, match="labelled for catalog 'metatool-toole'"):
        run_eval([other], config_from_dict({}))


def test_thresholds_change_bands_not_choices():
    strict = report_of(KNOWN, high=0.95, medium=0.6)
    assert strict.bands["high"].count == 0
    assert strict.overall.top1.hits == 2  # same choices
    assert strict.execute_precision.total == 0 and strict.execute_precision.value is None


def test_recall_at_k_and_retrieval_stage():
    catalog = small_catalog()
    config = config_from_dict({"retrieval": {"direct_max": 0, "top_k": 1}})
    messages = {
        "send a short text message to this phone number": "send_sms",
        "refund the card payment please": "send_email",  # never ranked: a retrieval miss
        "a dispute needs a person": "human_review",  # escalation options are always offered
    }
    router = scripted_router({}, config, catalog)
    ranked = {m: router.route(m).ranked for m in messages}
    cases = [LabelledCase(source="r", index=i, turn=Turn(message=m, label=label)) for i, (m, label) in enumerate(messages.items())]
    r = evaluate_router(scripted_router({}, config, catalog), cases)
    turns = {t.message: t for t in r.turns}
    assert ranked["send a short text message to this phone number"][0] == "send_sms"
    assert turns["send a short text message to this phone number"].rank == 1
    assert "send_email" not in ranked["refund the card payment please"]
    assert turns["refund the card payment please"].stage == "retrieval"
    assert turns["refund the card payment please"].rank is None
    assert turns["a dispute needs a person"].rank == 0 and turns["a dispute needs a person"].retrieved
    assert r.recall_at_k[1].hits == 2 and r.recall_at_k[10].hits == 2 and r.recall_at_k[1].total == 3
    assert r.overall.retrieval_recall.hits == 2


def test_local_backend_never_learns_from_the_scored_case():
    from tui_router.route import Router

    catalog = small_catalog()
    config = direct_config()
    one = [LabelledCase(source="s", index=0, turn=Turn(message="zorblax wibble plonk", label="read_file"))]
    alone = evaluate_router(Router(catalog, config), one)
    assert alone.turns[0].choice == NONE  # no evidence at all: its own label is held out
    assert alone.learning.startswith("leave-one-out")
    pair = one + [LabelledCase(source="s", index=1, turn=Turn(message="zorblax wibble snark", label="read_file"))]
    learned = evaluate_router(Router(catalog, config), pair)
    assert [t.choice for t in learned.turns] == ["read_file", "read_file"]  # each learns from the other
    plain = evaluate_router(Router(catalog, config), pair, learn=False)
    assert [t.choice for t in plain.turns] == [NONE, NONE]
    assert plain.learning.startswith("off")


def test_concurrency_gives_the_same_results(known):
    router = scripted_router({m: s for m, _, _, _, s in KNOWN})
    again = evaluate_router(router, cases_of(KNOWN), concurrency=4)
    assert [t.choice for t in again.turns] == [t.choice for t in known.turns]
    assert again.to_json(with_turns=False)["top1"] == known.to_json(with_turns=False)["top1"]


def test_helpers():
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.5
    assert percentile([5.0], 95) == 5.0 and percentile([], 50) is None
    assert top3_of({"a": 0.2, "b": 0.5, NONE: 0.3}, NONE, NONE) == ["b", "a"]
    assert top3_of({"a": 0.2, "b": 0.5, "c": 0.1, "d": 0.2}, "a", NONE) == ["a", "b", "d"]
