"""The pipeline for one turn: message -> retrieve -> decide -> band -> Decision.

Plain Python with no UI: the console, the CLI and the eval all call `Router.route`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Literal

from pydantic import BaseModel

from .arguments import ArgumentsResult, abuild_arguments, build_arguments, demote_action
from .authority import AuthorityCheck
from .catalog import Catalog, Risk, Tool
from .confidence import margin_of
from .config import Config, PolicyConfig, Thresholds
from .decide import make_backend
from .decide.base import Answer, DecisionBackend, Question
from .policy import Action, Band, band_answer
from .retrieve import Candidate, Retrieval, RetrievalMode, Retriever
from .session import ArgumentsRecord, TurnDecision
from .twostage import Staged, TwoStageError, plan_two_stage

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
    # Set when the message claims authority, names a tool id or tells the router what to choose
    # (authority.py); such a decision is never executed without a person.
    caution: str = ""
    path: Literal["single", "two-stage"] = "single"
    stage_category: str | None = None
    ranked: list[str] = []
    arguments: ArgumentsResult | None = None  # after the arguments step (Router.build_arguments)
    demoted: bool = False  # an execute became a confirm because the arguments are invalid

    def with_arguments(self, result: ArgumentsResult) -> Decision:
        """This decision with its arguments, an execute demoted to confirm when they are invalid."""
        action = Action(demote_action(self.action.value, result))
        return self.model_copy(update={"arguments": result, "action": action, "demoted": action is not self.action})

    def arguments_record(self) -> ArgumentsRecord | None:
        """The session record of the arguments step (None when it did not run)."""
        if self.arguments is None:
            return None
        record = self.arguments.to_record()
        record.demoted = self.demoted
        return record

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
            "caution": self.caution or None,
            "path": self.path,
            "stage_category": self.stage_category,
            **({"arguments": self.arguments.to_json(), "demoted": self.demoted} if self.arguments else {}),
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
            caution=self.caution or None,
            latency_ms=round(self.latency_ms, 3),
            model=self.model or None,
            backend=self.backend,
            retrieval=self.retrieval.value,
            path=self.path if self.path != "single" else None,
            stage_category=self.stage_category,
            high=self.thresholds.high,
            medium=self.thresholds.medium,
        )


def with_backend_thresholds(config: Config, backend: DecisionBackend | type[DecisionBackend]) -> Config:
    """The config with the backend's fitted thresholds when it sets none of its own ("calibrated by
    default"); thresholds in the config file or written by `calibrate` always win.

    The thresholds put here stay unset in the config's eyes, so a router built later from this
    config for another backend takes that backend's defaults (or the seeds' 0.75 / 0.45), not these.
    Only the class attribute `default_thresholds` is read, so the backend's class will do where
    nothing is routed (`replay --what-if`).
    """
    policy = config.policy
    if {"high", "medium"} & policy.model_fields_set or policy.fitted_for:
        return config
    defaults = PolicyConfig.model_fields["high"].default, PolicyConfig.model_fields["medium"].default
    high, medium = backend.default_thresholds or defaults
    if (policy.high, policy.medium) == (high, min(medium, high)):
        return config
    updated = policy.model_copy(update={"high": high, "medium": min(medium, high)})
    updated.__pydantic_fields_set__ = set(policy.model_fields_set)
    return config.model_copy(update={"policy": updated})


class Router:
    """Catalog + retriever + backend + policy. Build once, route many messages."""

    def __init__(self, catalog: Catalog, config: Config | None = None, backend: DecisionBackend | None = None) -> None:
        self.catalog = catalog
        self.config = config or Config()
        self.retriever = Retriever(catalog, self.config.retrieval)
        self.backend = backend or make_backend(self.config.backend, catalog, self.config, retriever=self.retriever)
        # A backend may bring its own retriever (the semantic backend: BM25 fused with embeddings).
        own = self.backend.make_retriever(catalog, self.config.retrieval)
        if own is not None:
            self.retriever = own
        self.config = with_backend_thresholds(self.config, self.backend)
        self.authority = AuthorityCheck(catalog)

    def retrieve(self, message: str, holdout: str | None = None) -> Retrieval:
        """Layer 1 for one message: BM25 candidates plus what the backend suggests."""
        # Backends that learned from labelled turns may know tools BM25 misses (hybrid retrieval).
        extra: list[str] = []
        if self.backend.supplies_candidates:
            try:
                extra = self.backend.suggest_candidates(message, holdout)
            except Exception:
                extra = []
        return self.retriever.retrieve(message, extra=extra)

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

    def _finish(self, message: str, retrieval: Retrieval, staged: Staged, started: float) -> Decision:
        question, answer = staged.question, staged.answer
        options = list(question.options)
        risk = self.catalog.risk_of(answer.choice) if answer.choice else None
        banding = band_answer(answer, options, self.catalog.none_option, risk, self.config.policy)
        valid = not banding.error
        caution = self.authority.caution(message) or ""
        band, action = banding.band, banding.action
        if caution and action is Action.execute:  # a claim in the text never raises confidence: a person decides
            band, action = (Band.medium if band is Band.high else band), Action.confirm
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
            band=band,
            action=action,
            thresholds=banding.thresholds,
            risk=risk if valid else None,
            model=answer.model or self.backend.model,
            backend=self.backend.name,
            latency_ms=(time.perf_counter() - started) * 1000,
            decide_ms=answer.latency_ms,
            error=banding.error,
            caution=caution,
            path=staged.path,
            stage_category=staged.stage_category,
            ranked=retrieval.ranked,
        )

    def arguments_tool(self, decision: Decision) -> Tool | None:
        """The tool the arguments step builds for: a resolved choice of a real tool (not none, not escalation)."""
        if decision.band is Band.unresolved or not decision.choice:
            return None
        tool = self.catalog.get(decision.choice)
        return None if tool is None or tool.is_escalation else tool

    def build_arguments(self, decision: Decision) -> Decision:
        """Layer 3: build and validate the chosen tool's arguments (config [arguments]); demote when invalid."""
        tool = self.arguments_tool(decision)
        if tool is None:
            return decision
        return decision.with_arguments(build_arguments(tool, decision.message, self.config.arguments, secret_env=self.config.secret_env_names()))

    async def abuild_arguments(self, decision: Decision) -> Decision:
        tool = self.arguments_tool(decision)
        if tool is None:
            return decision
        return decision.with_arguments(await abuild_arguments(tool, decision.message, self.config.arguments, secret_env=self.config.secret_env_names()))

    def wants_arguments(self, decision: Decision) -> bool:
        """Whether the arguments step runs after this route: a proposal (execute) or a confirm of a
        real tool. A fallback or an escalation calls no tool, so nothing is built for it."""
        return decision.action in (Action.execute, Action.confirm) and self.arguments_tool(decision) is not None

    def route_turn(self, message: str, *, arguments: bool) -> Decision:
        """One turn as a front end acts on it: `aroute_turn` for scripts and the CLI (never inside a
        running loop)."""
        decision = self.route(message)
        return self.build_arguments(decision) if arguments and self.wants_arguments(decision) else decision

    async def aroute_turn(
        self,
        message: str,
        *,
        arguments: bool,
        questions: Callable[[int], None] | None = None,
        building: Callable[[], None] | None = None,
    ) -> Decision:
        """One turn as every front end acts on it (the console, `route --args`, `mcp-serve`): the
        route (bands, risk policy, the authority caution), then, with `arguments` on, the arguments
        step for an execute or a confirm, where invalid or missing arguments demote an execute to a
        confirm. One policy, so the same message gets the same action wherever it is typed.
        `building` is called just before the arguments step (the console shows the command)."""
        decision = await self.aroute(message, questions=questions)
        if not arguments or not self.wants_arguments(decision):
            return decision
        if building is not None:
            building()
        return await self.abuild_arguments(decision)

    def route(self, message: str, *, holdout: str | None = None) -> Decision:
        started = time.perf_counter()
        retrieval = self.retrieve(message, holdout)
        question = self.question_for(message, retrieval, holdout)
        return self._finish(message, retrieval, self._decide(question), started)

    async def aroute(self, message: str, *, holdout: str | None = None, questions: Callable[[int], None] | None = None) -> Decision:
        """`questions` is told how many questions the turn asks the backend once that is known (2:
        two stages), for a waiting note whose time limit counts them all."""
        started = time.perf_counter()
        retrieval = self.retrieve(message, holdout)
        question = self.question_for(message, retrieval, holdout)
        return self._finish(message, retrieval, await self._adecide(question, questions), started)

    # One question, or two stages when the options exceed what the backend takes in one (twostage.py).

    def _failed(self, exc: Exception) -> Answer:
        # a backend bug must end in an unresolved turn, not a crash
        return Answer(error=f"the {self.backend.name} backend failed: {exc}", model=self.backend.model)

    def _ask(self, question: Question) -> Answer:
        try:
            return self.backend.decide(question)
        except Exception as exc:
            return self._failed(exc)

    async def _aask(self, question: Question) -> Answer:
        try:
            return await self.backend.adecide(question)
        except Exception as exc:
            return self._failed(exc)

    def _decide(self, question: Question) -> Staged:
        try:
            limit = self.backend.option_limit()
        except Exception as exc:
            return Staged(question=question, answer=self._failed(exc))
        if len(question.options) <= limit:
            return Staged(question=question, answer=self._ask(question))
        try:
            plan = plan_two_stage(question, self.catalog, limit)
        except TwoStageError as exc:
            return Staged(question=question, answer=Answer(error=str(exc), model=self.backend.model), path="two-stage")
        first = self._ask(plan.category_question)
        step = plan.after_category(first)
        if isinstance(step, Staged):
            return step
        return plan.finish(first, step, self._ask(step))

    async def _adecide(self, question: Question, questions: Callable[[int], None] | None = None) -> Staged:
        try:
            limit = await self.backend.aoption_limit()
        except Exception as exc:
            return Staged(question=question, answer=self._failed(exc))
        if len(question.options) <= limit:
            return Staged(question=question, answer=await self._aask(question))
        try:
            plan = plan_two_stage(question, self.catalog, limit)
        except TwoStageError as exc:
            return Staged(question=question, answer=Answer(error=str(exc), model=self.backend.model), path="two-stage")
        if questions is not None:
            questions(2)
        first = await self._aask(plan.category_question)
        step = plan.after_category(first)
        if isinstance(step, Staged):
            return step
        return plan.finish(first, step, await self._aask(step))

    async def aclose(self) -> None:
        await self.backend.aclose()


def build_router(config: Config, catalog: Catalog | None = None, backend_name: str | None = None) -> Router:
    from .catalog import load_catalog

    catalog = catalog or load_catalog(config.catalog_spec())
    if backend_name and backend_name != config.backend:
        config = config.model_copy(update={"backend": backend_name})
    return Router(catalog, config)
