"""The bare lexical baseline: BM25 scores turned into a distribution, for side-by-side reports.

Deliberately naive: the probability of an option is its share of the BM25 score mass, and the
none option gets all the mass only when no option shares a word with the message.
"""

from __future__ import annotations

import time

from ..catalog import Catalog
from ..retrieve import Retriever
from .base import Answer, DecisionBackend, Question, argmax


class BM25Backend(DecisionBackend):
    name = "bm25"
    model = "bm25-baseline-1"

    def __init__(self, catalog: Catalog, retriever: Retriever | None = None) -> None:
        self.catalog = catalog
        self.retriever = retriever or Retriever(catalog)

    def decide(self, question: Question) -> Answer:
        start = time.perf_counter()
        options = list(question.options)
        scored = self.retriever.scores(question.message)
        by_id = {self.retriever.tools[i].id: s for i, s in scored.items()}
        raw = {o: by_id.get(o, 0.0) for o in options if o != question.none_option}
        total = sum(raw.values())
        if total <= 0:
            probabilities = {o: 0.0 for o in options}
            probabilities[question.none_option] = 1.0
        else:
            probabilities = {o: raw.get(o, 0.0) / total for o in options}
        choice = argmax(probabilities, options)
        return Answer(
            choice=choice,
            probabilities=probabilities,
            model=self.model,
            latency_ms=(time.perf_counter() - start) * 1000,
        )
