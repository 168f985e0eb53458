"""Shared helpers for the eval / replay / calibrate tests (no tests here).

`ScriptedBackend` is a real DecisionBackend whose answers are written per message, so every metric
can be checked on hand-made cases with known answers while the real Router, retrieval, answer
checks and policy do everything else.
"""

from __future__ import annotations

from pathlib import Path

import tomli_w

from tui_router.catalog import Catalog, parse_catalog
from tui_router.config import Config, config_from_dict
from tui_router.decide.base import Answer, DecisionBackend, Question
from tui_router.route import Router

NONE = "defer_to_llm"

# Catalog order matters for ties; messages in the tests share no words with it unless stated.
TOOLS = [
    {"id": "read_file", "when_to_use": "Read the full text of one file.", "category": "files", "risk": "read",
     "schema": {"type": "object", "required": ["path"], "properties": {"path": {"type": "string"}}}},
    {"id": "delete_file", "when_to_use": "Delete one file from the workspace.", "category": "files", "risk": "write"},
    {"id": "send_sms", "when_to_use": "Send a short text message to a phone number.", "category": "notify", "risk": "outbound",
     "schema": {"type": "object", "properties": {"to": {"type": "string"}, "body": {"type": "string"}}}},
    {"id": "send_email", "when_to_use": "Send an email to one or more recipients.", "category": "notify", "risk": "outbound"},
    {"id": "refund_payment", "when_to_use": "Refund a card payment to the customer.", "category": "billing", "risk": "payment"},
    {"id": "human_review", "when_to_use": "A dispute or legal issue needs a person.", "category": "escalation", "risk": "escalation"},
]


def small_catalog() -> Catalog:
    return parse_catalog({"name": "small", "tools": TOOLS}, "small.toml")


def direct_config(**policy) -> Config:
    """Every tool offered (direct mode): retrieval never misses."""
    return config_from_dict({"catalog": "small", "retrieval": {"direct_max": 10}, "policy": policy})


class ScriptedBackend(DecisionBackend):
    """Answers from a script: message -> {option: p} (the rest of the mass shared equally), or an error.

    The choice is the most probable option; a script entry "error" makes the answer an error.
    """

    name = "scripted"
    model = "scripted-1"

    def __init__(self, script: dict[str, dict[str, float] | str]) -> None:
        self.script = script

    def decide(self, question: Question) -> Answer:
        entry = self.script.get(question.message, {question.none_option: 1.0})
        if isinstance(entry, str):
            return Answer(error=entry, model=self.model)
        options = list(question.options)
        rest = [o for o in options if o not in entry]
        left = max(0.0, 1.0 - sum(entry.values()))
        probabilities = {o: entry.get(o, left / len(rest) if rest else 0.0) for o in options}
        choice = max(options, key=lambda o: (probabilities[o], -options.index(o)))
        return Answer(choice=choice, probabilities=probabilities, model=self.model)


def scripted_router(script: dict[str, dict[str, float] | str], config: Config | None = None, catalog: Catalog | None = None) -> Router:
    return Router(catalog or small_catalog(), config or direct_config(), backend=ScriptedBackend(script))


def write_session(path: Path, turns: list[dict], catalog: str = "small") -> Path:
    path.write_text(tomli_w.dumps({"session": {"id": path.stem, "catalog": catalog}, "turns": turns}), encoding="utf-8")
    return path


def write_catalog(path: Path) -> Path:
    path.write_text(tomli_w.dumps({"name": "small", "tools": TOOLS}), encoding="utf-8")
    return path


def reference_confidence(p: float, n: int) -> float:
    return max(0.0, (p - 1 / n) / (1 - 1 / n))
