"""Two-stage routing: when the offered options exceed what one question may carry.

Stage 1 asks for a category: each option is a category of the offered tools and its description
lists those tools; the none option is offered too. Stage 2 asks for the tool within the chosen
category, with the none option and the escalation options. Both answers are checked as strictly as a
single-stage answer; the decision records path "two-stage" and the stage-1 category.

The router owns the calls (sync or async); this module only builds the questions and combines the
answers, so both paths share it.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from .catalog import Catalog
from .decide.base import Answer, Question, check_answer

UNCATEGORISED = "uncategorised"
MAX_CATEGORY_TEXT = 1200  # characters of tool names listed in one category option

CATEGORY_INSTRUCTIONS = (
    "Choose the one category whose tools best fit the user's message in state.message; each option "
    "lists the tools in that category. Choose the none option when no category has a tool that does "
    "what the message asks, or the message is not a tool request. Selecting a category is routing "
    "evidence only; it is not authorization to run anything."
)


class TwoStageError(ValueError):
    """The offered options cannot be split to fit the limit (said in one sentence)."""


class Staged(BaseModel):
    """The question whose answer decides the turn, that answer, and how it was reached."""

    question: Question
    answer: Answer
    path: Literal["single", "two-stage"] = "single"
    stage_category: str | None = None


class TwoStagePlan(BaseModel):
    """The category question and, per category option, the tools it stands for."""

    category_question: Question
    groups: dict[str, list[str]]
    escalation: list[str]
    source: Question

    def tool_question(self, category: str) -> Question:
        options = {tool: self.source.options[tool] for tool in self.groups[category]}
        for option in self.escalation:
            options[option] = self.source.options[option]
        options[self.source.none_option] = self.source.options[self.source.none_option]
        return self.source.model_copy(update={"options": options, "retrieved_tools": list(self.groups[category])})

    def after_category(self, first: Answer) -> Staged | Question:
        """The decided turn when stage 1 ends it (invalid answer or none), else the stage-2 question."""
        problem = check_answer(first, list(self.category_question.options))
        if problem:
            failed = first.model_copy(update={"error": f"stage 1 (category question): {problem}"})
            return Staged(question=self.category_question, answer=failed, path="two-stage")
        if first.choice == self.source.none_option:
            return Staged(question=self.category_question, answer=first, path="two-stage")
        return self.tool_question(first.choice or "")

    def finish(self, first: Answer, question: Question, second: Answer) -> Staged:
        usage = dict(first.usage)
        for key, value in second.usage.items():
            usage[key] = usage.get(key, 0) + value
        update: dict = {"latency_ms": first.latency_ms + second.latency_ms, "usage": usage}
        if second.error:
            update["error"] = f"stage 2 (tools in {first.choice!r}): {second.error}"
        return Staged(question=question, answer=second.model_copy(update=update), path="two-stage", stage_category=first.choice)


def needs_two_stage(question: Question, limit: int) -> bool:
    return len(question.options) > limit


def _category_text(name: str, tools: list[str]) -> str:
    listed: list[str] = []
    used = 0
    for index, tool in enumerate(tools):
        if used + len(tool) + 2 > MAX_CATEGORY_TEXT:
            listed.append(f"and {len(tools) - index} more")
            break
        listed.append(tool)
        used += len(tool) + 2
    return f"Tools for {name}: " + ", ".join(listed)


def plan_two_stage(question: Question, catalog: Catalog, limit: int) -> TwoStagePlan:
    """Group the offered tools by category so that both questions fit within `limit` options."""
    none = question.none_option
    escalation = [o for o in question.options if o != none and (tool := catalog.get(o)) is not None and tool.is_escalation]
    tools = [o for o in question.options if o != none and o not in escalation]
    capacity = limit - 1 - len(escalation)  # stage 2: the group + escalation options + none
    if capacity < 1:
        raise TwoStageError(
            f"a limit of {limit} options leaves no room for tools beside the none option and "
            f"{len(escalation)} escalation options; raise [systemone] max_options"
        )
    by_category: dict[str, list[str]] = {}
    for option in tools:  # offered order (best retrieval score first) is kept within each group
        tool = catalog.get(option)
        by_category.setdefault((tool.category if tool else None) or UNCATEGORISED, []).append(option)

    groups: dict[str, list[str]] = {}
    taken = {none, *escalation}
    for category, members in by_category.items():
        chunks = [members[i : i + capacity] for i in range(0, len(members), capacity)]
        for number, chunk in enumerate(chunks, start=1):
            name = category if len(chunks) == 1 else f"{category} (part {number} of {len(chunks)})"
            while name in taken:  # a category named like the none option or an escalation id
                name = f"{name} (category)"
            taken.add(name)
            groups[name] = chunk
    if len(groups) + 1 > limit:
        raise TwoStageError(
            f"{len(tools)} offered tools make {len(groups)} categories, more than one question of at most "
            f"{limit} options can hold; lower retrieval.top_k or retrieval.direct_max"
        )
    options = {name: _category_text(name, members) for name, members in groups.items()}
    options[none] = question.options[none]
    category_question = question.model_copy(
        update={"options": options, "instructions": CATEGORY_INSTRUCTIONS, "retrieved_tools": list(question.retrieved_tools)}
    )
    return TwoStagePlan(category_question=category_question, groups=groups, escalation=escalation, source=question)
