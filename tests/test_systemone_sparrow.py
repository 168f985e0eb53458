"""Routing through a small real decision model: `sparrow-decider serve` on loopback.

It is a weak 2 MB model, so these tests assert protocol properties and only clear-cut cases.
"""

from __future__ import annotations

import asyncio
import math

import pytest
from test_twostage import CATALOG_300, whole_catalog_config

from tui_router.config import config_from_dict
from tui_router.decide.systemone import SystemOneClient, probe_server
from tui_router.policy import Band
from tui_router.route import Router, build_router

pytestmark = pytest.mark.usefixtures("profile_cache")

MESSAGES = [
    "Export the sales table as CSV",
    "Take a screenshot of example.com",
    "Text Jordan that the deploy finished.",
    "Create a calendar event tomorrow at 10am",
    "What is the weather in Oslo?",
    "Write a haiku about autumn",
]


def test_routes_through_a_real_model(sparrow_url):
    router = build_router(config_from_dict({"backend": "systemone", "systemone": {"base_url": sparrow_url, "timeout": 20}}))

    async def route_all():
        try:
            return await asyncio.gather(*(router.aroute(m) for m in MESSAGES))
        finally:
            await router.aclose()

    decisions = asyncio.run(route_all())
    router.backend.close()
    for decision in decisions:
        assert decision.error == "", decision.error
        assert decision.model == "sparrow-nano-general-v1.1"
        assert decision.band is not Band.unresolved
        assert set(decision.probabilities) == set(decision.options)
        assert math.isclose(sum(decision.probabilities.values()), 1.0, abs_tol=0.01)
        assert decision.choice == max(decision.probabilities, key=decision.probabilities.get)
        assert decision.options[-1] == "defer_to_llm"
    by_message = dict(zip(MESSAGES, decisions, strict=True))
    # the clear-cut cases
    assert by_message["Export the sales table as CSV"].choice == "export_csv"
    assert by_message["Take a screenshot of example.com"].choice == "screenshot_page"


def test_two_stage_through_a_real_model(sparrow_url):
    router = Router(CATALOG_300, whole_catalog_config(sparrow_url, timeout=20))
    try:
        decision = router.route("Export the billing records")
    finally:
        router.backend.close()
    assert decision.path == "two-stage" and decision.error == ""
    assert decision.model == "sparrow-nano-general-v1.1"
    # clear-cut at stage 1: the message names the category; stage 2 then offers only its tools
    assert decision.stage_category == "billing"
    tools, rest = decision.options[:30], decision.options[30:]
    assert all(t.startswith("billing_") for t in tools)
    assert rest == ["ask_user", "human_review", "defer_to_llm"]
    assert decision.choice in decision.options


def test_profile_of_a_real_model(sparrow_url):
    client = SystemOneClient(config_from_dict({"systemone": {"base_url": sparrow_url, "timeout": 20}}).systemone)

    async def run():
        try:
            return await probe_server(client, "jev-latest")
        finally:
            await client.aclose()

    profile = asyncio.run(run())
    assert profile.models_listed is False and "not with a model list" in profile.models_note
    assert profile.alias_accepted is True and profile.resolved_model == "sparrow-nano-general-v1.1"
    assert profile.consistent is True
    assert profile.max_options == 255
    assert profile.confidence_definition == "reference"
