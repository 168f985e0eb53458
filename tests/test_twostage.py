"""Two-stage routing: planning (pure), the exact request flow (scripted server) and real servers (jevcompat mock)."""

from __future__ import annotations

import asyncio

import pytest
from servers.scripted import ScriptedServer, Step

from tui_router.catalog import Catalog, parse_catalog
from tui_router.config import config_from_dict
from tui_router.decide.base import Question
from tui_router.policy import Band
from tui_router.route import Router
from tui_router.twostage import CATEGORY_INSTRUCTIONS, TwoStageError, plan_two_stage

CATEGORIES = ["billing", "calendar", "code", "data", "email", "files", "notify", "search", "tickets", "web"]
VERBS = ["create", "delete", "list", "update", "export", "import", "search", "archive", "share", "sync",
         "lock", "unlock", "tag", "untag", "move", "copy", "rename", "merge", "split", "review",
         "approve", "reject", "publish", "draft", "schedule", "cancel", "restore", "validate", "compare", "count"]


def synthetic_catalog(tools_per_category: int = 30, categories: list[str] = CATEGORIES) -> Catalog:
    tools = []
    for category in categories:
        for verb in VERBS[:tools_per_category]:
            tools.append({
                "id": f"{category}_{verb}",
                "when_to_use": f"{verb.capitalize()} {category} records for the user.",
                "category": category,
                "keywords": [category, verb],
            })
    tools.append({"id": "ask_user", "when_to_use": "Ask the user a clarifying question.", "risk": "escalation"})
    tools.append({"id": "human_review", "when_to_use": "Hand the request to a human reviewer.", "risk": "escalation"})
    return parse_catalog({"name": f"synthetic-{len(tools)}", "tools": tools})


CATALOG_300 = synthetic_catalog()


def question_over(catalog: Catalog) -> Question:
    options = {t.id: t.when_to_use for t in catalog.tools} | {catalog.none_option: "None fits."}
    return Question(message="Export the billing records", options=options, none_option=catalog.none_option)


def whole_catalog_config(url: str, **systemone):
    """Offer every tool (direct mode), as the seed benchmark did, so the option count is the catalog's."""
    return config_from_dict({
        "backend": "systemone",
        "retrieval": {"direct_max": 100_000},
        "systemone": {"base_url": url, "timeout": 10, **systemone},
    })


# ---------------------------------------------------------------- planning


def test_plan_for_300_tools_under_a_cap_of_64():
    assert len(CATALOG_300.tools) == 302
    plan = plan_two_stage(question_over(CATALOG_300), CATALOG_300, limit=64)
    first = plan.category_question
    assert list(first.options) == [*CATEGORIES, "defer_to_llm"]
    assert first.instructions == CATEGORY_INSTRUCTIONS
    assert first.options["billing"].startswith("Tools for billing: billing_create, billing_delete, billing_list")
    assert "ask_user" not in first.options  # escalation options are offered in stage 2
    second = plan.tool_question("email")
    assert list(second.options) == [f"email_{v}" for v in VERBS] + ["ask_user", "human_review", "defer_to_llm"]
    assert second.options["email_create"] == "Create email records for the user."
    assert len(second.options) <= 64


def test_big_categories_are_split_into_parts():
    catalog = synthetic_catalog(30, ["alpha", "beta", "gamma", "delta", "omega"])
    # 150 tools; a cap of 20 leaves 17 tools per stage-2 question
    plan = plan_two_stage(question_over(catalog), catalog, limit=20)
    assert list(plan.groups)[:2] == ["alpha (part 1 of 2)", "alpha (part 2 of 2)"]
    assert all(len(members) <= 17 for members in plan.groups.values())
    assert sum(len(members) for members in plan.groups.values()) == 150
    assert len(plan.category_question.options) == 11


def test_a_category_named_like_the_none_option_is_renamed():
    catalog = parse_catalog({"name": "c", "tools": [
        {"id": "a_one", "when_to_use": "First.", "category": "defer_to_llm"},
        {"id": "b_one", "when_to_use": "Second.", "category": "other"},
        {"id": "b_two", "when_to_use": "Third.", "category": "other"},
    ]})
    plan = plan_two_stage(question_over(catalog), catalog, limit=3)
    assert list(plan.category_question.options) == ["defer_to_llm (category)", "other", "defer_to_llm"]
    assert plan.groups == {"defer_to_llm (category)": ["a_one"], "other": ["b_one", "b_two"]}


def test_too_many_categories_for_the_limit_is_a_clear_error():
    catalog = synthetic_catalog(1, [f"c{i:03d}" for i in range(100)])
    with pytest.raises(TwoStageError, match="make 100 categories, more than one question of at most 64 options can hold"):
        plan_two_stage(question_over(catalog), catalog, limit=64)
    with pytest.raises(TwoStageError, match="leaves no room for tools"):
        plan_two_stage(question_over(catalog), catalog, limit=3)


# ---------------------------------------------------------------- the exact flow (scripted server)


@pytest.fixture(scope="module")
def scripted():
    with ScriptedServer() as server:
        yield server


def test_two_stage_flow_asks_category_then_tool(scripted):
    scripted.reset()
    router = Router(CATALOG_300, whole_catalog_config(scripted.base_url, probe=False))
    try:
        decision = router.route("Export the billing records")
    finally:
        router.backend.close()
    # the scripted server picks the first option: the category of the best-scoring tool, then that tool
    assert decision.path == "two-stage"
    assert decision.stage_category == "billing"
    assert decision.choice == "billing_export"
    assert decision.error == "" and decision.band is not Band.unresolved
    first, second = (request.json()["questions"]["tool"] for request in scripted.posts)
    assert list(first["criteria"])[0] == "billing" and list(first["criteria"])[-1] == "defer_to_llm"
    assert sorted(first["criteria"]) == sorted([*CATEGORIES, "defer_to_llm"])  # ordered by best tool score
    assert first["instructions"] == CATEGORY_INSTRUCTIONS
    assert list(second["criteria"])[-3:] == ["ask_user", "human_review", "defer_to_llm"]
    assert all(option.startswith("billing_") for option in list(second["criteria"])[:-3])
    assert decision.options == list(second["criteria"])
    json_view = decision.to_json()
    assert json_view["path"] == "two-stage" and json_view["stage_category"] == "billing"
    turn = decision.to_turn_decision()
    assert turn.path == "two-stage" and turn.stage_category == "billing"


def test_none_at_stage_one_ends_the_turn(scripted):
    scripted.reset()

    def pick_none(request):
        names = list(request["questions"]["tool"]["criteria"])
        probs = {n: 0.02 for n in names}
        probs["defer_to_llm"] = 1 - 0.02 * (len(names) - 1)
        return {"model": "m", "answers": {"tool": {"type": "choice", "choice": "defer_to_llm", "probabilities": probs}}}

    scripted.push(Step(200, pick_none))
    router = Router(CATALOG_300, whole_catalog_config(scripted.base_url, probe=False))
    try:
        decision = asyncio.run(router.aroute("What is the meaning of life?"))
    finally:
        router.backend.close()
    assert decision.path == "two-stage" and decision.stage_category is None
    assert decision.choice == "defer_to_llm" and decision.action.value == "fallback"
    assert len(scripted.posts) == 1


def test_a_bad_stage_one_answer_fails_closed(scripted):
    scripted.reset()
    scripted.push(Step(200, {"model": "m", "answers": {"tool": {"type": "choice", "choice": "billing", "probabilities": {"billing": 1.0}}}}))
    router = Router(CATALOG_300, whole_catalog_config(scripted.base_url, probe=False))
    try:
        decision = router.route("Export the billing records")
    finally:
        router.backend.close()
    assert decision.band is Band.unresolved and decision.path == "two-stage"
    assert decision.error.startswith("stage 1 (category question): ")
    assert "probability keys do not match" in decision.error
    assert len(scripted.posts) == 1


# ---------------------------------------------------------------- real servers


@pytest.mark.usefixtures("profile_cache")
def test_300_tools_go_two_stage_against_the_mock(jev_mocks):
    router = Router(CATALOG_300, whole_catalog_config(jev_mocks.url()))
    small = Router(synthetic_catalog(20), whole_catalog_config(jev_mocks.url()))
    try:
        decisions = [router.route(m) for m in ("Export the billing records", "Share the calendar", "Lock the files")]
        single = small.route("Export the billing records")
    finally:
        router.backend.close()
        small.backend.close()
    for decision in decisions:
        assert decision.path == "two-stage"
        assert decision.error == ""
        if decision.stage_category is not None:  # stage 1 may pick the none option; then stage 2 is not asked
            assert all(o.startswith(decision.stage_category) or o in ("ask_user", "human_review", "defer_to_llm") for o in decision.options)
    assert any(d.stage_category for d in decisions)
    assert single.path == "single" and len(single.options) == 203  # 200 tools + 2 escalation + none fit in 255


@pytest.mark.usefixtures("profile_cache")
def test_cap_64_sizes_two_stage_from_the_profile(jev_mocks):
    url = jev_mocks.url("cap-64")
    config = config_from_dict({
        "backend": "systemone",
        "retrieval": {"top_k": 100},
        "systemone": {"base_url": url, "timeout": 10},
    })
    catalog = synthetic_catalog(20)
    router = Router(catalog, config)
    whole = Router(CATALOG_300, whole_catalog_config(url))
    try:
        assert router.backend.option_limit() == 64
        assert router.backend.profile is not None and router.backend.profile.max_options == 64
        decision = router.route("create billing calendar code data email files notify search tickets web records")
        big = asyncio.run(whole.aroute("Export the billing records"))
    finally:
        router.backend.close()
        whole.backend.close()
    assert len(decision.candidates) > 64
    assert decision.path == "two-stage" and decision.error == ""
    assert big.path == "two-stage" and big.error == ""
    assert len(big.options) <= 64


@pytest.mark.usefixtures("profile_cache")
def test_stage_one_fault_is_reported_as_stage_one(jev_mocks):
    router = Router(CATALOG_300, whole_catalog_config(jev_mocks.url("choice-second")))
    try:
        decision = router.route("Export the billing records")
    finally:
        router.backend.close()
    assert decision.band is Band.unresolved and decision.path == "two-stage"
    assert "stage 1 (category question)" in decision.error and "not the most probable option" in decision.error
