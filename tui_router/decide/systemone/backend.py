"""The `systemone` backend: a choice question per turn to a System One server (client.py), sized by
the server profile (profile.py)."""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from ..base import Answer, DecisionBackend, Question, check_answer, shown
from .client import BACKOFF_BASE, SystemOneClient, list_models
from .profile import ProfileCache, ServerProfile, probe_server
from .wire import ModelInfo, answer_from_reply, question_body

if TYPE_CHECKING:
    from ...catalog import Catalog
    from ...config import Config, SystemOneConfig
    from ...retrieve import Retriever


class SystemOneBackend(DecisionBackend):
    """A choice question per turn to a System One server."""

    name = "systemone"

    def __init__(self, catalog: Catalog, cfg: SystemOneConfig, *, backoff_base: float = BACKOFF_BASE) -> None:
        self.catalog = catalog
        self.cfg = cfg
        self.model = cfg.model
        self.max_options = cfg.max_options
        self.client = SystemOneClient(cfg, backoff_base=backoff_base)
        self.profile: ServerProfile | None = None
        self._limit: int | None = None

    @classmethod
    def from_config(cls, catalog: Catalog, config: Config, retriever: Retriever | None = None) -> SystemOneBackend:
        return cls(catalog, config.systemone)  # the server decides from the options: no retriever of its own

    # -- deciding

    def decide(self, question: Question) -> Answer:
        return self.client.run_sync(self.adecide(question))

    async def adecide(self, question: Question) -> Answer:
        started = time.perf_counter()
        reply = await self.client.post_json("/systemone", question_body(question, self.cfg.model))
        latency = (time.perf_counter() - started) * 1000
        if not reply.ok:
            return Answer(error=reply.error, model=self.cfg.model, latency_ms=latency)
        answer = answer_from_reply(reply.data, question).model_copy(update={"latency_ms": latency})
        answer.model = answer.model or self.cfg.model
        problem = check_answer(answer, list(question.options))
        if problem:
            answer.error = self.client.redact(f"{self.client.shown_url}: the answer of model {shown(answer.model)} was rejected: {problem}")
        return answer

    # -- sizing (the server profile)

    def waiting_note(self, questions: int = 1) -> str:
        probing = self._limit is None and self.cfg.probe  # the first turn probes the server, one budget more
        limit = self.cfg.question_budget * (questions + (1 if probing else 0))  # each question its own budget
        why = f"; two-stage routing asks {questions} questions" if questions > 1 else ""
        why += "; the first turn probes the server" if probing else ""
        return f"server {self.client.shown_url}, gives up after {limit:g} s ([systemone] timeout, total_timeout{why})"

    def option_limit(self) -> int:
        if self._limit is not None:
            return self._limit
        return self.client.run_sync(self.aoption_limit())

    async def aoption_limit(self) -> int:
        if self._limit is not None:
            return self._limit
        async with self.client.loop_lock():
            if self._limit is None:
                self._limit = await self._sized_limit()
        return self._limit

    async def _sized_limit(self) -> int:
        if not self.cfg.probe:
            return self.cfg.max_options
        cache = ProfileCache.default()
        profile = cache.load(self.client.shown_url, self.cfg.model)
        if profile is None:
            try:  # the probe runs inside a turn: it gets one question's budget in all
                async with asyncio.timeout(self.cfg.question_budget):
                    profile = await probe_server(self.client, self.cfg.model)
            except TimeoutError:
                return self.cfg.max_options  # unknown cap: the configured one; probed again next start
            if profile.complete:
                cache.save(profile)
        self.profile = profile
        return profile.option_limit(self.cfg.max_options)

    # -- models

    async def amodels(self) -> list[ModelInfo]:
        return await list_models(self.client)

    async def aclose(self) -> None:
        await self.client.aclose()

    def close(self) -> None:
        """Stop the private loop of the synchronous path; async callers use `await aclose()`."""
        self.client.close()
