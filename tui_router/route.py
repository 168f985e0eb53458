"""The pipeline for one turn: message -> retrieve -> decide -> band -> Decision.

Plain Python with no UI: the console, the CLI and the eval all call `Router.route`.
"""

from __future__ import annotations

import time
from typing import Literal

from pydantic import BaseModel

from .catalog import Catalog, Risk
from .config import Config, Thresholds
from .decide import make_backend
from .decide.base import Answer, DecisionBackend, Question
from .policy import Action, Band, band_answer, margin_of
from .retrieve import Candidate, Retrieval, Retriever, RetrievalMode
from .session import TurnDecision

# Far larger messages are cut for the decision model (the full text stays in the session).
MAX_MESSAGE_CHARS = 20_000


class Decision(BaseModel):
    """Everything the router did for one message."""

    message: str
    candidates: list[Candidate]
    retrieval: RetrievalMode
    options: list[str]
    none_option: str
    choice: str | None
    probabilities: dict[str, float]
    confidence: float | None
    reported_confidence: float | None
    formula: str
    margin: float | None
    band: Band
    action: Action
    thresholds: Thresholds
    risk: Risk | None
    model: str
    backend: str
    latency_ms: float
    decide_ms: float
    error: str = ""
    path: Literal["single", "two-stage"] = "single"
    stage_category: str | None = None
    ranked: list[str] = []

    def to_json(self) -> dict:
        """The `route --json` contract."""
        return {
            "message": self.message,
            "candidates": [{"id": c.id, "score": c.score, "risk": c.risk.value} for c in self.candidates],
            "retrieval": self.retrieval.value,
            "choice": self.choice,
            "probabilities": self.probabilities,
            "confidence": self.confidence,
            "reported_confidence": self.reported_confidence,
            "confidence_formula": self.formula,
            "margin": self.margin,
            "band": self.band.value,
            "action": self.action.value,
            "risk": self.risk.value if self.risk else None,
            "thresholds": {"high": self.thresholds.high, "medium": self.thresholds.medium},
            "model": self.model,
            "backend": self.backend,
            "latency_ms": round(self.latency_ms, 3),
            "error": self.error,
            "path": self.path,
            "stage_category": self.stage_category,
        }

    def to_turn_decision(self) -> TurnDecision:
        if self.action is Action.escalate:
            outcome = "escalated"
        elif self.action is Action.execute:
            outcome = "proposed"
        else:
            outcome = "pending"
        return TurnDecision(
            candidates=[c.id for c in self.candidates],
            scores={c.id: round(c.score, 4) for c in self.candidates},
            choice=self.choice,
            probabilities={k: round(v, 6) for k, v in self.probabilities.items()},
            confidence=None if self.confidence is None else round(self.confidence, 6),
            reported_confidence=None if self.reported_confidence is None else round(self.reported_confidence, 6),
            band=self.band.value,
            action=self.action.value,
            outcome=outcome,
            error=self.error,
            latency_ms=round(self.latency_ms, 3),
            model=self.model or None,
            backend=self.backend,
            retrieval=self.retrieval.value,
            path=self.path if self.path != "single" else None,
            stage_category=self.stage_category,
            high=self.thresholds.high,
            medium=self.thresholds.medium,
        )


class Router:
    """Catalog + retriever + backend + policy. Build once, route many messages."""

    def __init__(self, catalog: Catalog, config: Config | None = None, backend: DecisionBackend | None = None) -> None:
        self.catalog = catalog
        self.config = config or Config()
        self.retriever = Retriever(catalog, self.config.retrieval)
        self.backend = backend or make_backend(self.config.backend, catalog, self.config, retriever=self.retriever)

    def question_for(self, message: str, retrieval: Retrieval, holdout: str | None = None) -> Question:
        options = {c.id: self.catalog.description_of(c.id) for c in retrieval.candidates}
        options[self.catalog.none_option] = self.catalog.description_of(self.catalog.none_option)
        return Question(
            message=message[:MAX_MESSAGE_CHARS],
            options=options,
            none_option=self.catalog.none_option,
            retrieved_tools=[c.id for c in retrieval.candidates],
            holdout=holdout,
        )

    def _finish(self, message: str, retrieval: Retrieval, question: Question, answer: Answer, started: float) -> Decision:
        options = list(question.options)
        risk = self.catalog.risk_of(answer.choice) if answer.choice else None
        banding = band_answer(answer, options, self.catalog.none_option, risk, self.config.policy)
        valid = not banding.error
        return Decision(
            message=message,
            candidates=retrieval.candidates,
            retrieval=retrieval.mode,
            options=options,
            none_option=self.catalog.none_option,
            choice=answer.choice if valid else (answer.choice if answer.choice in options else None),
            probabilities=answer.probabilities if valid else {},
            confidence=banding.confidence,
            reported_confidence=banding.reported_confidence,
            formula=self.config.policy.confidence,
            margin=margin_of(answer.probabilities) if valid else None,
            band=banding.band,
            action=banding.action,
            thresholds=banding.thresholds,
            risk=risk if valid else None,
            model=answer.model or self.backend.model,
            backend=self.backend.name,
            latency_ms=(time.perf_counter() - started) * 1000,
            decide_ms=answer.latency_ms,
            error=banding.error,
            path=getattr(answer, "path", "single"),
            stage_category=getattr(answer, "stage_category", None),
            ranked=retrieval.ranked,
        )

    def route(self, message: str, *, holdout: str | None = None) -> Decision:
        started = time.perf_counter()
        retrieval = self.retriever.retrieve(message)
        question = self.question_for(message, retrieval, holdout)
        try:
            answer = self.backend.decide(question)
        except Exception as exc:  # a backend bug must end in an unresolved turn, not a crash
            answer = Answer(error=f"the {self.backend.name} backend failed: {exc}", model=self.backend.model)
        return self._finish(message, retrieval, question, answer, started)

    async def aroute(self, message: str, *, holdout: str | None = None) -> Decision:
        started = time.perf_counter()
        retrieval = self.retriever.retrieve(message)
        question = self.question_for(message, retrieval, holdout)
        try:
            answer = await self.backend.adecide(question)
        except Exception as exc:
            answer = Answer(error=f"the {self.backend.name} backend failed: {exc}", model=self.backend.model)
        return self._finish(message, retrieval, question, answer, started)

    async def aclose(self) -> None:
        await self.backend.aclose()


def build_router(config: Config, catalog: Catalog | None = None, backend_name: str | None = None) -> Router:
    from .catalog import load_catalog

    catalog = catalog or load_catalog(config.catalog_spec())
    if backend_name and backend_name != config.backend:
        config = config.model_copy(update={"backend": backend_name})
    return Router(catalog, config)
